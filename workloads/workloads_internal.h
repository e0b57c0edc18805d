/* Shared inside workloads/: the source vtable and line helpers. */
#ifndef SV_WORKLOADS_INTERNAL_H
#define SV_WORKLOADS_INTERNAL_H

#include "workloads/workloads.h"

#include <json-glib/json-glib.h>
#include <stdio.h>

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
    JsonParser *parser; /* reused for every JSON line */

    /* azure CSV */
    int csv_ncols, col_ts, col_in, col_out;
    gboolean have_header;
    gboolean have_t0;
    int64_t t0_ns;

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
