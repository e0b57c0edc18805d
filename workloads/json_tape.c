/* A JSON scanner for one trace line: the whole line is checked against RFC 8259 and laid out as
 * a flat array of tokens (a "tape", as simdjson calls it) that the JSONL readers walk by index.
 *
 * Why not json-glib, which servesim used before: it builds a GObject tree per line (a JsonNode,
 * a GValue and a slice allocation per token id, a signal per member), which was ~60 ms of the
 * public 300-request case's ~94 ms (Release). jansson (51 ms) and json-c also allocate per node,
 * and jansson's header cannot be included next to json-glib's (both declare
 * json_object_iter_next). yajl's SAX parser needs 15 ms just to visit the integers. A tape reused
 * from line to line allocates nothing per token: the same file reads in ~5 ms with the field
 * checks (docs/workloads.md, "Parse speed").
 *
 * Limits: nesting deeper than SV_WL_TAPE_MAX_DEPTH and lines of 4 GiB or more are errors;
 * strings are checked (escapes, surrogate pairs, UTF-8, no control characters) but decoded only
 * when asked (sv_wl__tape_strdup) or when a key has escapes. */
#include "workloads/workloads_internal.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#define SV_WL_TAPE_MAX_DEPTH 512

struct scan {
    struct sv_wl_tape *tp;
    const char *line;
    const char *s; /* cursor */
    const char *end;
};

void sv_wl__tape_clear(struct sv_wl_tape *tp)
{
    g_free(tp->tok);
    memset(tp, 0, sizeof *tp);
}

static gboolean fail(struct scan *sc, const char *at, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static gboolean fail(struct scan *sc, const char *at, const char *fmt, ...)
{
    char what[96];
    va_list ap;
    va_start(ap, fmt);
    g_vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    g_snprintf(sc->tp->err, sizeof sc->tp->err, "column %u: %s", (unsigned)(at - sc->line + 1),
               what);
    return FALSE;
}

/* "'x'" for a printable character, "end of line", or "byte 0xNN". */
static const char *char_desc(const struct scan *sc, const char *at, char *buf, size_t n)
{
    unsigned char c = (unsigned char)*at;
    if (at >= sc->end)
        return "end of line";
    if (c >= 0x20 && c < 0x7f)
        g_snprintf(buf, n, "'%c'", c);
    else
        g_snprintf(buf, n, "byte 0x%02x", c);
    return buf;
}

static gboolean unexpected(struct scan *sc, const char *expected)
{
    char b[16];
    return fail(sc, sc->s, "unexpected %s, expected %s", char_desc(sc, sc->s, b, sizeof b),
                expected);
}

/* A new token of `type` at the cursor; the caller sets what else it needs (next, len, v). */
static inline uint32_t push(struct scan *sc, uint8_t type)
{
    struct sv_wl_tape *tp = sc->tp;
    if (G_UNLIKELY(tp->n == tp->cap)) {
        tp->cap = tp->cap ? tp->cap * 2 : 256;
        tp->tok = g_renew(struct sv_wl_jtok, tp->tok, tp->cap);
    }
    struct sv_wl_jtok *t = &tp->tok[tp->n];
    t->type = type;
    t->escaped = 0;
    t->off = (uint32_t)(sc->s - sc->line);
    t->len = 0;
    t->next = tp->n + 1;
    return tp->n++;
}

static inline gboolean is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static inline void skip_ws(struct scan *sc)
{
    const char *s = sc->s;
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    sc->s = s;
}

static int hex4(const char *s)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int c = (unsigned char)s[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* One \uXXXX escape (the cursor on the backslash), with its low surrogate when it is a high one.
 * Returns the code point, or -1 after fail(). */
static int32_t unicode_escape(struct scan *sc, const char **sp)
{
    const char *s = *sp;
    int u = hex4(s + 2);
    if (u < 0)
        return fail(sc, s, "invalid \\u escape (4 hex digits expected)"), -1;
    s += 6;
    if (u >= 0xdc00 && u <= 0xdfff)
        return fail(sc, s - 6, "invalid \\u escape (a low surrogate without a high one)"), -1;
    if (u >= 0xd800 && u <= 0xdbff) {
        int lo = s[0] == '\\' && s[1] == 'u' ? hex4(s + 2) : -1;
        if (lo < 0xdc00 || lo > 0xdfff)
            return fail(sc, s - 6, "invalid \\u escape (a high surrogate without a low one)"), -1;
        u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
        s += 6;
    }
    if (u == 0)
        return fail(sc, s - 6, "\\u0000 is not allowed in a string"), -1;
    *sp = s;
    return u;
}

static gboolean scan_string(struct scan *sc)
{
    uint32_t i = push(sc, SV_WL_JT_STRING);
    const char *s = sc->s + 1;
    gboolean high = FALSE;
    for (;;) {
        unsigned char c = (unsigned char)*s;
        if (c == '"')
            break;
        if (c == '\\') {
            sc->tp->tok[i].escaped = 1;
            switch (s[1]) {
            case '"':
            case '\\':
            case '/':
            case 'b':
            case 'f':
            case 'n':
            case 'r':
            case 't':
                s += 2;
                continue;
            case 'u':
                if (unicode_escape(sc, &s) < 0)
                    return FALSE;
                continue;
            default:
                return fail(sc, s, "invalid escape in a string");
            }
        }
        if (c < 0x20) {
            if (s >= sc->end)
                return fail(sc, sc->s, "unterminated string");
            return fail(sc, s, "control character (byte 0x%02x) in a string", c);
        }
        high |= c >= 0x80;
        s++;
    }
    struct sv_wl_jtok *t = &sc->tp->tok[i];
    t->off = (uint32_t)(sc->s + 1 - sc->line);
    t->len = (uint32_t)(s - (sc->s + 1));
    if (high && !g_utf8_validate_len(sc->s + 1, t->len, NULL))
        return fail(sc, sc->s, "invalid UTF-8 in a string");
    sc->s = s + 1;
    return TRUE;
}

/* A number. Integers (the token ids: nearly every token of a trace) are read exactly in the same
 * pass that checks them; past int64 they become BIGINT, kept as text. */
static inline gboolean scan_number(struct scan *sc)
{
    const char *start = sc->s, *s = start;
    gboolean neg = *s == '-';
    if (neg)
        s++;
    uint64_t acc = 0;
    gboolean big = FALSE;
    if (*s == '0') {
        s++;
    } else if (*s >= '1' && *s <= '9') {
        /* 19 digits always fit in uint64; the rest are checked one by one */
        const char *fast_end = s + 19;
        while (s < fast_end && is_digit(*s))
            acc = acc * 10 + (uint64_t)(*s++ - '0');
        for (; is_digit(*s); s++) {
            unsigned d = (unsigned)(*s - '0');
            if (big || acc > (UINT64_MAX - d) / 10)
                big = TRUE;
            else
                acc = acc * 10 + d;
        }
    } else {
        return fail(sc, start, "invalid number");
    }
    gboolean frac = FALSE;
    if (*s == '.') {
        s++;
        if (!is_digit(*s))
            return fail(sc, start, "invalid number (a digit must follow '.')");
        while (is_digit(*s))
            s++;
        frac = TRUE;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!is_digit(*s))
            return fail(sc, start, "invalid number (a digit must follow the exponent)");
        while (is_digit(*s))
            s++;
        frac = TRUE;
    }
    uint32_t i = push(sc, SV_WL_JT_INT);
    struct sv_wl_jtok *t = &sc->tp->tok[i];
    t->len = (uint32_t)(s - start);
    sc->s = s;
    if (frac) {
        t->type = SV_WL_JT_DOUBLE;
        t->v.d = g_ascii_strtod(start, NULL); /* the span is a JSON number: strtod reads it all */
    } else if (!big && neg && acc <= (uint64_t)INT64_MAX + 1) {
        t->v.i = acc == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)acc;
    } else if (!big && !neg && acc <= (uint64_t)INT64_MAX) {
        t->v.i = (int64_t)acc;
    } else {
        t->type = SV_WL_JT_BIGINT;
    }
    return TRUE;
}

static gboolean scan_literal(struct scan *sc, const char *word, uint8_t type)
{
    size_t n = strlen(word);
    if (strncmp(sc->s, word, n) != 0 || g_ascii_isalnum(sc->s[n]) || sc->s[n] == '_')
        return unexpected(sc, "a value");
    uint32_t i = push(sc, type);
    sc->tp->tok[i].len = (uint32_t)n;
    sc->s += n;
    return TRUE;
}

static gboolean scan_value(struct scan *sc, int depth);

/* The common case of a token id, taken without the general number scan: 1 to 18 digits (below
 * 10^18, inside int64) not starting with 0 and followed by no fraction or exponent. FALSE leaves
 * the cursor where it was, for scan_value. */
static inline gboolean scan_plain_int(struct scan *sc)
{
    const char *s = sc->s;
    if (*s < '1' || *s > '9')
        return FALSE;
    uint64_t acc = (uint64_t)(*s++ - '0');
    const char *lim = s + 17;
    while (s < lim && is_digit(*s))
        acc = acc * 10 + (uint64_t)(*s++ - '0');
    if (is_digit(*s) || *s == '.' || *s == 'e' || *s == 'E')
        return FALSE;
    uint32_t i = push(sc, SV_WL_JT_INT);
    struct sv_wl_jtok *t = &sc->tp->tok[i];
    t->len = (uint32_t)(s - sc->s);
    t->v.i = (int64_t)acc;
    sc->s = s;
    return TRUE;
}

static gboolean scan_container(struct scan *sc, int depth, gboolean object)
{
    if (depth >= SV_WL_TAPE_MAX_DEPTH)
        return fail(sc, sc->s, "nesting deeper than %d levels", SV_WL_TAPE_MAX_DEPTH);
    uint32_t i = push(sc, object ? SV_WL_JT_OBJECT : SV_WL_JT_ARRAY);
    char close = object ? '}' : ']';
    uint32_t count = 0;
    sc->s++;
    skip_ws(sc);
    if (*sc->s == close) {
        sc->s++;
    } else {
        for (;;) {
            if (object) {
                if (*sc->s != '"')
                    return unexpected(sc, count ? "a string key" : "a string key or '}'");
                if (!scan_string(sc))
                    return FALSE;
                skip_ws(sc);
                if (*sc->s != ':')
                    return unexpected(sc, "':'");
                sc->s++;
                skip_ws(sc);
            }
            if (!scan_plain_int(sc) && !scan_value(sc, depth + 1))
                return FALSE;
            count++;
            skip_ws(sc);
            if (*sc->s == ',') {
                sc->s++;
                skip_ws(sc);
                continue;
            }
            if (*sc->s == close) {
                sc->s++;
                break;
            }
            return unexpected(sc, object ? "',' or '}'" : "',' or ']'");
        }
    }
    struct sv_wl_jtok *t = &sc->tp->tok[i];
    t->v.n = count;
    t->next = sc->tp->n;
    t->len = (uint32_t)(sc->s - sc->line) - t->off;
    return TRUE;
}

static inline gboolean scan_value(struct scan *sc, int depth)
{
    switch (*sc->s) {
    case '{':
        return scan_container(sc, depth, TRUE);
    case '[':
        return scan_container(sc, depth, FALSE);
    case '"':
        return scan_string(sc);
    case 't':
        return scan_literal(sc, "true", SV_WL_JT_TRUE);
    case 'f':
        return scan_literal(sc, "false", SV_WL_JT_FALSE);
    case 'n':
        return scan_literal(sc, "null", SV_WL_JT_NULL);
    case '-':
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
    case '8':
    case '9':
        return scan_number(sc);
    default:
        return unexpected(sc, "a value");
    }
}

gboolean sv_wl__tape_parse(struct sv_wl_tape *tp, const char *line, size_t len)
{
    /* the reader hands NUL-terminated lines without inner NULs: the NUL is the end sentinel */
    SV_ASSERT(line[len] == '\0');
    tp->n = 0;
    tp->err[0] = '\0';
    tp->line = line;
    struct scan sc = {.tp = tp, .line = line, .s = line, .end = line + len};
    if (len >= UINT32_MAX)
        return fail(&sc, line, "line of 4 GiB or more");
    if (len >= 3 && memcmp(line, "\xef\xbb\xbf", 3) == 0)
        sc.s += 3; /* a UTF-8 byte-order mark, which json-glib skipped too */
    skip_ws(&sc);
    if (!scan_value(&sc, 0))
        return FALSE;
    skip_ws(&sc);
    if (sc.s != sc.end) {
        char b[16];
        return fail(&sc, sc.s, "unexpected %s after the value", char_desc(&sc, sc.s, b, sizeof b));
    }
    return TRUE;
}

/* Decode the string token's escapes into dst (room for t->len + 1 bytes: decoding never grows
 * a string). Returns the decoded length. The scan has validated every escape. */
static size_t decode(const struct sv_wl_tape *tp, const struct sv_wl_jtok *t, char *dst)
{
    const char *s = tp->line + t->off, *e = s + t->len;
    char *d = dst;
    while (s < e) {
        if (*s != '\\') {
            *d++ = *s++;
            continue;
        }
        char c = s[1];
        if (c == 'u') {
            int u = hex4(s + 2);
            s += 6;
            if (u >= 0xd800 && u <= 0xdbff) {
                u = 0x10000 + ((u - 0xd800) << 10) + (hex4(s + 2) - 0xdc00);
                s += 6;
            }
            d += g_unichar_to_utf8((gunichar)u, d);
            continue;
        }
        *d++ = c == 'b'   ? '\b'
               : c == 'f' ? '\f'
               : c == 'n' ? '\n'
               : c == 'r' ? '\r'
               : c == 't' ? '\t'
                          : c;
        s += 2;
    }
    *d = '\0';
    return (size_t)(d - dst);
}

char *sv_wl__tape_strdup(const struct sv_wl_tape *tp, uint32_t i)
{
    const struct sv_wl_jtok *t = &tp->tok[i];
    SV_ASSERT(t->type == SV_WL_JT_STRING);
    if (!t->escaped)
        return g_strndup(tp->line + t->off, t->len);
    char *d = g_malloc(t->len + 1);
    decode(tp, t, d);
    return d;
}

static gboolean key_is(const struct sv_wl_tape *tp, const struct sv_wl_jtok *k, const char *key,
                       size_t klen)
{
    if (!k->escaped)
        return k->len == klen && memcmp(tp->line + k->off, key, klen) == 0;
    if (k->len < klen)
        return FALSE; /* escapes only make a key shorter */
    g_autofree char *d = g_malloc(k->len + 1);
    return decode(tp, k, d) == klen && memcmp(d, key, klen) == 0;
}

uint32_t sv_wl__tape_member(const struct sv_wl_tape *tp, uint32_t obj, const char *key)
{
    const struct sv_wl_jtok *o = &tp->tok[obj];
    SV_ASSERT(o->type == SV_WL_JT_OBJECT);
    size_t klen = strlen(key);
    uint32_t found = 0, i = obj + 1;
    for (uint32_t m = 0; m < o->v.n; m++) {
        if (key_is(tp, &tp->tok[i], key, klen))
            found = i + 1; /* the last of duplicate keys wins, as in json-glib */
        i = tp->tok[i + 1].next;
    }
    return found;
}

const char *sv_wl__tape_type_name(const struct sv_wl_jtok *t)
{
    switch ((sv_wl_jtok_type)t->type) {
    case SV_WL_JT_NULL:
        return "null";
    case SV_WL_JT_TRUE:
    case SV_WL_JT_FALSE:
        return "a boolean";
    case SV_WL_JT_INT:
    case SV_WL_JT_BIGINT:
        return "a number";
    case SV_WL_JT_DOUBLE:
        return "a fractional number";
    case SV_WL_JT_STRING:
        return "a string";
    case SV_WL_JT_ARRAY:
        return "an array";
    case SV_WL_JT_OBJECT:
        return "an object";
    }
    return "a value";
}

gboolean sv_wl__tape_int(const struct sv_wl_jtok *t, int64_t *out)
{
    if (t->type == SV_WL_JT_INT) {
        *out = t->v.i;
        return TRUE;
    }
    if (t->type == SV_WL_JT_DOUBLE) {
        /* an integral double counts, as sv_cfg_node_int reads config numbers; 2^63 is the first
         * double past INT64_MAX */
        double d = t->v.d;
        if (d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
            *out = (int64_t)d;
            return TRUE;
        }
    }
    return FALSE;
}
