/* Documented ranges of numeric inputs and the one way numbers written as text are read
 * (docs/reliability.md "Numeric ranges"). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "core/core.h"

/* The shortest decimal that reads back as v: 1048576, 1e+12, 1e-15 (%g alone rounds to 6
 * digits: 1.04858e+06); whole numbers below 10^7 in full (-20, not -2e+01). */
static const char *num(char *buf, size_t size, double v)
{
    if (v == floor(v) && fabs(v) < 1e7) {
        g_snprintf(buf, size, "%.0f", v);
        return buf;
    }
    for (int p = 1; p <= 17; p++) {
        g_snprintf(buf, size, "%.*g", p, v);
        if (g_ascii_strtod(buf, NULL) == v)
            break;
    }
    return buf;
}
#define NUM_BUF 32

/* "range [lo, hi] unit" */
static char *range_text_int(struct sv_range_int r)
{
    return g_strdup_printf("range [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]%s%s", r.lo, r.hi,
                           r.unit ? " " : "", r.unit ? r.unit : "");
}

static char *range_text_double(struct sv_range_double r)
{
    char lo[NUM_BUF], hi[NUM_BUF];
    return g_strdup_printf("range %s%c%s, %s]%s%s", r.zero_ok ? "0 or " : "", r.lo_open ? '(' : '[',
                           num(lo, sizeof lo, r.lo), num(hi, sizeof hi, r.hi), r.unit ? " " : "",
                           r.unit ? r.unit : "");
}

gboolean sv_range_check_int(const char *path, int64_t v, struct sv_range_int r, GError **error)
{
    if (v >= r.lo && v <= r.hi)
        return TRUE;
    g_autofree char *range = range_text_int(r);
    if (v > r.hi)
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                    "%s: %" G_GINT64_FORMAT " is above the maximum %" G_GINT64_FORMAT " (%s)", path,
                    v, r.hi, range);
    else if (r.lo == 0)
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                    "%s: %" G_GINT64_FORMAT " is negative (%s)", path, v, range);
    else
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                    "%s: %" G_GINT64_FORMAT " is below the minimum %" G_GINT64_FORMAT " (%s)", path,
                    v, r.lo, range);
    return FALSE;
}

gboolean sv_range_check_double(const char *path, double v, struct sv_range_double r, GError **error)
{
    gboolean lo_ok = r.lo_open ? v > r.lo : v >= r.lo;
    if ((lo_ok && v <= r.hi) || (r.zero_ok && v == 0)) /* NaN fails all */
        return TRUE;
    g_autofree char *range = range_text_double(r);
    char vs[NUM_BUF], bound[NUM_BUF];
    num(vs, sizeof vs, v);
    if (!isfinite(v))
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                    "%s: %s is not a finite number (%s)", path, vs, range);
    else if (v > r.hi)
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                    "%s: %s is above the maximum %s (%s)", path, vs, num(bound, sizeof bound, r.hi),
                    range);
    else if (r.lo == 0 && v < 0)
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID, "%s: %s is negative (%s)", path,
                    vs, range);
    else if (r.lo == 0)
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID, "%s: %s is not positive (%s)",
                    path, vs, range);
    else
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                    "%s: %s is below the minimum %s (%s)", path, vs, num(bound, sizeof bound, r.lo),
                    range);
    return FALSE;
}

/* ---- numbers as text ---------------------------------------------------------------------- */

gboolean sv_num_parse_int(const char *s, int64_t *out)
{
    if (!s)
        return FALSE;
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (!g_ascii_isdigit(*p))
        return FALSE;
    while (g_ascii_isdigit(*p))
        p++;
    if (*p != '\0')
        return FALSE;
    char *end = NULL;
    errno = 0;
    gint64 v = g_ascii_strtoll(s, &end, 10);
    if (errno || *end != '\0')
        return FALSE; /* past int64 */
    *out = v;
    return TRUE;
}

gboolean sv_num_parse_double(const char *s, double *out)
{
    if (!s)
        return FALSE;
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    int digits = 0;
    while (g_ascii_isdigit(*p))
        p++, digits++;
    if (*p == '.') {
        p++;
        while (g_ascii_isdigit(*p))
            p++, digits++;
    }
    if (digits == 0)
        return FALSE;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!g_ascii_isdigit(*p))
            return FALSE;
        while (g_ascii_isdigit(*p))
            p++;
    }
    if (*p != '\0')
        return FALSE;
    char *end = NULL;
    double v = g_ascii_strtod(s, &end);
    if (*end != '\0' || !isfinite(v))
        return FALSE;
    *out = v;
    return TRUE;
}
