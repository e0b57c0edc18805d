/* Shared inside workloads/: the source vtable and line helpers. */
#ifndef SV_WORKLOADS_INTERNAL_H
#define SV_WORKLOADS_INTERNAL_H

#include "workloads/workloads.h"

#include <stdio.h>

/* ---- json_tape.c: one JSON line checked and laid out as a flat token array ------------------ */

typedef enum {
    SV_WL_JT_NULL,
    SV_WL_JT_FALSE,
    SV_WL_JT_TRUE,
    SV_WL_JT_INT,    /* v.i */
    SV_WL_JT_BIGINT, /* an integer outside int64: only its text (off, len) */
    SV_WL_JT_DOUBLE, /* a number with a fraction or an exponent: v.d */
    SV_WL_JT_STRING, /* off, len: the bytes between the quotes, escapes not decoded */
    SV_WL_JT_ARRAY,  /* v.n elements follow */
    SV_WL_JT_OBJECT, /* v.n members follow, each a STRING key then its value */
} sv_wl_jtok_type;

struct sv_wl_jtok {
    uint8_t type;      /* sv_wl_jtok_type */
    uint8_t escaped;   /* a string with backslash escapes */
    uint32_t next;     /* index of the token after this value and everything inside it */
    uint32_t off, len; /* the value's bytes in the line */
    union {
        int64_t i;
        double d;
        uint32_t n;
    } v;
};

/* Reused from line to line: parsing a line allocates nothing once `tok` is large enough. */
struct sv_wl_tape {
    struct sv_wl_jtok *tok; /* tok[0] is the root value */
    uint32_t n, cap;
    const char *line; /* the line parsed last (borrowed) */
    char err[160];    /* "column C: what is wrong" after a failed parse */
};

/* Parse line[0..len) (line[len] must be NUL, with no NUL before it). FALSE: tp->err says why. */
gboolean sv_wl__tape_parse(struct sv_wl_tape *tp, const char *line, size_t len);
void sv_wl__tape_clear(struct sv_wl_tape *tp);
/* Index of the value of member `key` of object token `obj` (the last one if repeated), 0 when
 * absent (token 0 is the root, never a member). */
uint32_t sv_wl__tape_member(const struct sv_wl_tape *tp, uint32_t obj, const char *key);
/* "a number", "a string", "an array", ... for messages (the names json-glib's types had). */
const char *sv_wl__tape_type_name(const struct sv_wl_jtok *t);
/* An integer, or an integral double inside int64, as sv_cfg_node_int. */
gboolean sv_wl__tape_int(const struct sv_wl_jtok *t, int64_t *out);
/* A string token's value, escapes decoded (g_free). */
char *sv_wl__tape_strdup(const struct sv_wl_tape *tp, uint32_t i);

/* Parse one line into *out. Returns 1 = item, 0 = line contributes nothing (blank, empty
 * session), -1 = error (SV_WL_ERROR_BAD_LINE errors may be skipped by the caller). */
typedef int (*sv_wl_parse_line_fn)(sv_wl_source *src, char *line, size_t len, sv_wl_item *out,
                                   GError **error);
/* Generators: produce the next item; 1 / 0 / -1 as sv_wl_next. */
typedef int (*sv_wl_gen_next_fn)(sv_wl_source *src, sv_wl_item *out, GError **error);

struct sv_wl_source {
    char *path; /* display name for errors */
    sv_wl_format format;
    struct sv_wl_open_opts opts;

    /* file readers */
    FILE *fp;
    char *buf; /* getline buffer: the one line held */
    size_t buf_cap;
    uint64_t lineno;
    sv_wl_parse_line_fn parse_line;
    struct sv_wl_tape tape; /* reused for every JSON line */

    /* azure CSV */
    int csv_ncols, col_ts, col_in, col_out;
    gboolean have_header;
    gboolean have_t0;
    int64_t t0_s, t0_frac_ns; /* the first row's time: seconds since 1970 and the fraction */

    /* generators */
    sv_wl_gen_next_fn gen_next;
    void *gen;
    void (*gen_free)(void *gen);

    /* state */
    int done;       /* 0 running, 1 ended, -1 failed */
    GError *sticky; /* the error that ended the source */
    gboolean have_prev;
    sv_time prev_arrival;
    uint64_t prev_line;
    uint64_t next_request_id;
    uint64_t items;
    uint64_t bad_lines;
};

sv_wl_source *sv_wl__source_alloc(const char *path);
/* Set a BAD_LINE error "PATH:LINE: <msg>". */
void sv_wl__bad_line(sv_wl_source *src, GError **error, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

/* Allocate the item's request array (n zeroed records). */
void sv_wl__item_alloc_reqs(sv_wl_item *out, size_t n);

int sv_wl__jsonl_parse_llmservingsim(sv_wl_source *src, char *line, size_t len, sv_wl_item *out,
                                     GError **error);
int sv_wl__jsonl_parse_mooncake(sv_wl_source *src, char *line, size_t len, sv_wl_item *out,
                                GError **error);
int sv_wl__azure_parse_line(sv_wl_source *src, char *line, size_t len, sv_wl_item *out,
                            GError **error);

#endif
