/* Azure LLM inference trace 2023 (Splitwise, ISCA'24) CSV reader: TIMESTAMP, ContextTokens,
 * GeneratedTokens (../shared/traces/azure_llm_2023/README.md). Arrivals are offsets from the
 * first row's timestamp. */
#include "workloads/workloads_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define AZURE_MAX_COLS 16

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static gboolean read_digits(const char **p, int n, int64_t *out)
{
    int64_t v = 0;
    for (int i = 0; i < n; i++) {
        if (!g_ascii_isdigit((*p)[i]))
            return FALSE;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return TRUE;
}

/* "YYYY-MM-DD HH:MM:SS[.f{1,9}]" (no time zone: all rows share one clock, only differences
 * matter) to seconds since the epoch and nanoseconds past that second. Kept apart: ns since the
 * epoch leave int64 after the year 2262, and four-digit years go to 9999. */
static gboolean parse_timestamp(const char *s, int64_t *s_out, int64_t *frac_out)
{
    const char *p = s;
    int64_t y, mo, d, h, mi, se, frac = 0;
    if (!read_digits(&p, 4, &y) || *p++ != '-' || !read_digits(&p, 2, &mo) || *p++ != '-' ||
        !read_digits(&p, 2, &d) || (*p != ' ' && *p != 'T'))
        return FALSE;
    p++;
    if (!read_digits(&p, 2, &h) || *p++ != ':' || !read_digits(&p, 2, &mi) || *p++ != ':' ||
        !read_digits(&p, 2, &se))
        return FALSE;
    if (*p == '.') {
        p++;
        int nd = 0;
        while (g_ascii_isdigit(*p) && nd < 9) {
            frac = frac * 10 + (*p - '0');
            p++;
            nd++;
        }
        if (nd == 0 || g_ascii_isdigit(*p))
            return FALSE;
        for (; nd < 9; nd++)
            frac *= 10;
    }
    if (*p != '\0' || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
        return FALSE;
    *s_out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
    *frac_out = frac;
    return TRUE;
}

static gboolean parse_count(sv_wl_source *src, const char *field, const char *name, int64_t *out,
                            GError **error)
{
    int64_t v;
    if (!sv_num_parse_int(field, &v)) {
        sv_wl__bad_line(src, error, "column '%s' must be an integer, not '%s'", name, field);
        return FALSE;
    }
    if (v < 1) {
        sv_wl__bad_line(src, error, "column '%s' is %" G_GINT64_FORMAT ", must be >= 1", name, v);
        return FALSE;
    }
    g_autofree char *col = g_strdup_printf("column '%s'", name);
    GError *e = NULL;
    if (!sv_range_check_int(col, v, SV_RANGE_TOKENS, &e)) {
        sv_wl__bad_line(src, error, "%s", e->message);
        g_error_free(e);
        return FALSE;
    }
    *out = v;
    return TRUE;
}

int sv_wl__azure_parse_line(sv_wl_source *src, char *line, size_t len, sv_wl_item *out,
                            GError **error)
{
    char *f[AZURE_MAX_COLS];
    int n = (int)sv_csv_split(line, f, AZURE_MAX_COLS);
    if (!src->have_header) {
        src->col_ts = src->col_in = src->col_out = -1;
        for (int i = 0; i < n && i < AZURE_MAX_COLS; i++) {
            if (strcmp(f[i], "TIMESTAMP") == 0)
                src->col_ts = i;
            else if (strcmp(f[i], "ContextTokens") == 0)
                src->col_in = i;
            else if (strcmp(f[i], "GeneratedTokens") == 0)
                src->col_out = i;
        }
        if (n > AZURE_MAX_COLS || src->col_ts < 0 || src->col_in < 0 || src->col_out < 0) {
            /* Not skippable: without the header no row can be read. */
            g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_INVALID,
                        "%s:%" G_GUINT64_FORMAT ": header must name the columns TIMESTAMP, "
                        "ContextTokens and GeneratedTokens",
                        src->path, src->lineno);
            return -1;
        }
        src->csv_ncols = n;
        src->have_header = TRUE;
        return 0;
    }
    if (n != src->csv_ncols) {
        sv_wl__bad_line(src, error, "%d fields, the header has %d", n, src->csv_ncols);
        return -1;
    }
    int64_t t_s, t_frac;
    if (!parse_timestamp(f[src->col_ts], &t_s, &t_frac)) {
        sv_wl__bad_line(src, error,
                        "column 'TIMESTAMP' must be 'YYYY-MM-DD HH:MM:SS[.fraction]', not '%s'",
                        f[src->col_ts]);
        return -1;
    }
    out->kind = SV_WL_ITEM_REQUEST;
    out->line = src->lineno;
    sv_wl__item_alloc_reqs(out, 1);
    if (!parse_count(src, f[src->col_in], "ContextTokens", &out->reqs[0].input_tokens, error) ||
        !parse_count(src, f[src->col_out], "GeneratedTokens", &out->reqs[0].output_tokens, error))
        return -1;
    if (!src->have_t0) {
        src->have_t0 = TRUE;
        src->t0_s = t_s;
        src->t0_frac_ns = t_frac;
    }
    /* The offset from the first row is an arrival: within the engine's horizon (about 9.1
     * years; docs/workloads.md). Seconds first, so that the product cannot overflow. A row
     * before the first one gives a negative offset: reported by the order check. */
    int64_t ds = t_s - src->t0_s, horizon_s = SV_ENGINE_HORIZON / SV_NS_PER_S;
    if (ds > horizon_s + 1 || ds < -(horizon_s + 1)) {
        sv_wl__bad_line(src, error,
                        "column 'TIMESTAMP' '%s' is %" G_GINT64_FORMAT
                        " s from the first row's; arrivals are offsets from it within the "
                        "engine's horizon of %" G_GINT64_FORMAT " s (about 9.1 years)",
                        f[src->col_ts], ds, horizon_s);
        return -1;
    }
    out->arrival_ns = ds * SV_NS_PER_S + (t_frac - src->t0_frac_ns);
    GError *e = NULL;
    if (out->arrival_ns > SV_ENGINE_HORIZON &&
        !sv_range_check_int("column 'TIMESTAMP' (ns after the first row)", out->arrival_ns,
                            SV_RANGE_TIME_NS, &e)) {
        sv_wl__bad_line(src, error, "%s", e->message);
        g_error_free(e);
        return -1;
    }
    return 1;
}
