/* Small readers shared by the backends: CSV tables (on core's reader), interpolation tables. */
#include "compute/compute_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- CSV ---------------------------------------------------------------------------------- */

void sv_compute__csv_free(sv_compute_table *c)
{
    if (!c)
        return;
    g_free(c->path);
    if (c->header)
        g_ptr_array_unref(c->header);
    if (c->rows)
        g_ptr_array_unref(c->rows);
    if (c->lines)
        g_array_unref(c->lines);
    g_free(c);
}

sv_compute_table *sv_compute__csv_load(const char *path, GError **error)
{
    GError *e = NULL;
    g_autoptr(sv_csv) in = sv_csv_open(path, &e);
    if (!in) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING, "%s", e->message);
        g_error_free(e);
        return NULL;
    }
    if (sv_csv_n_cols(in) == 0) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_PARSE, "empty file: %s", path);
        return NULL;
    }
    g_autoptr(sv_compute_table) c = g_new0(sv_compute_table, 1);
    c->path = g_strdup(path);
    c->header = g_ptr_array_new_with_free_func(g_free);
    c->rows = g_ptr_array_new_with_free_func(g_free);
    c->lines = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    for (guint i = 0; i < sv_csv_n_cols(in); i++)
        g_ptr_array_add(c->header, g_strdup(sv_csv_col_name(in, i)));
    while (sv_csv_next(in, &e)) {
        guint n = sv_csv_n_fields(in);
        uint64_t line = sv_csv_line(in);
        if (n != c->header->len) {
            g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_PARSE,
                        "%s:%" G_GUINT64_FORMAT ": expected %u columns, got %u", path, line,
                        c->header->len, n);
            return NULL;
        }
        /* one block per row: the cell pointers, then their text (a profile has ~10^5 cells) */
        size_t text = 0;
        for (guint i = 0; i < n; i++)
            text += strlen(sv_csv_field(in, i)) + 1;
        char **cells = g_malloc((n + 1) * sizeof(char *) + text);
        char *t = (char *)(cells + n + 1);
        for (guint i = 0; i < n; i++) {
            const char *f = sv_csv_field(in, i);
            size_t len = strlen(f) + 1;
            cells[i] = memcpy(t, f, len);
            t += len;
        }
        cells[n] = NULL;
        g_ptr_array_add(c->rows, cells);
        g_array_append_val(c->lines, line);
    }
    if (e) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_PARSE, "%s", e->message);
        g_error_free(e);
        return NULL;
    }
    return g_steal_pointer(&c);
}

int sv_compute__csv_col(const sv_compute_table *c, const char *name, GError **error)
{
    for (guint i = 0; i < c->header->len; i++)
        if (!strcmp(c->header->pdata[i], name))
            return (int)i;
    g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING, "missing column %s in %s", name,
                c->path);
    return -1;
}

/* Clinger's fast path for the cells profiles hold (integer keys, times like 8.35233): a plain
 * decimal of at most 15 digits is M / 10^f with M < 2^53 and f <= 15, both exact doubles, so one
 * division, correctly rounded by IEEE 754, gives the correctly rounded value: what strtod
 * returns, in a fraction of its time. Anything else (exponents, more digits) goes to strtod. */
static gboolean decimal_fast(const char *s, double *out)
{
    static const double p10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    const char *p = s + (*s == '-');
    uint64_t m = 0;
    int nd = 0, nf = -1;
    for (;; p++) {
        if (*p >= '0' && *p <= '9') {
            if (++nd > 15)
                return FALSE;
            m = m * 10 + (uint64_t)(*p - '0');
            if (nf >= 0)
                nf++;
        } else if (*p == '.' && nf < 0) {
            nf = 0;
        } else {
            break;
        }
    }
    if (*p != '\0' || nd == 0)
        return FALSE;
    double v = (double)m / p10[nf > 0 ? nf : 0];
    *out = *s == '-' ? -v : v;
    return TRUE;
}

gboolean sv_compute__csv_double(const sv_compute_table *c, guint row, int col, double *out,
                                GError **error)
{
    const char *s = ((char **)c->rows->pdata[row])[col];
    if (decimal_fast(s, out))
        return TRUE;
    double v;
    if (!sv_num_parse_double(s, &v)) { /* decimal and finite: no "nan", "inf", "0x10" */
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_PARSE,
                    "%s:%" G_GUINT64_FORMAT ": not a number \"%s\" in column %s", c->path,
                    g_array_index(c->lines, uint64_t, row), s, (char *)c->header->pdata[col]);
        return FALSE;
    }
    *out = v;
    return TRUE;
}

/* ---- interpolation ------------------------------------------------------------------------ */

double sv_compute__us_to_ns(double us)
{
    /* pandas .round() is numpy's round half to even; nearbyint in the default mode is too. */
    double ns = nearbyint(us * 1000.0);
    return ns < 1 ? 1 : ns;
}

/* bisect.bisect_right on sorted int64 keys. */
static int bisect_right(const int64_t *k, int n, double q)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (q < (double)k[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* _lookup_bounds: (0,0) below the min, the top pair above the max, else the bracket. */
static void lookup_bounds(const int64_t *k, int n, double q, int *lo, int *hi)
{
    int idx = bisect_right(k, n, q);
    if (idx == 0) {
        *lo = *hi = 0;
    } else if (idx >= n) {
        if (n < 2)
            *lo = *hi = 0;
        else
            *lo = n - 2, *hi = n - 1;
    } else {
        *lo = idx - 1, *hi = idx;
    }
}

static double lin(double x0, double y0, double x1, double y1, double q)
{
    if (x1 == x0)
        return y0;
    return y0 + (q - x0) / (x1 - x0) * (y1 - y0);
}

double sv_compute__lookup_1d(const struct sv_compute_table1d *t, double q)
{
    if (t->n == 0)
        return 0;
    if (t->n == 1)
        return t->vals[0];
    int lo, hi;
    lookup_bounds(t->keys, t->n, q, &lo, &hi);
    if (lo == hi)
        return t->vals[lo];
    return lin((double)t->keys[lo], t->vals[lo], (double)t->keys[hi], t->vals[hi], q);
}

double sv_compute__lookup_2d(const struct sv_compute_table2d *t, double q_row, double q_col)
{
    int lo, hi;
    lookup_bounds(t->keys, t->n, q_row, &lo, &hi);
    double v_lo = sv_compute__lookup_1d(&t->rows[lo], q_col);
    if (lo == hi)
        return v_lo;
    double v_hi = sv_compute__lookup_1d(&t->rows[hi], q_col);
    return lin((double)t->keys[lo], v_lo, (double)t->keys[hi], v_hi, q_row);
}

/* _axis_bracket: below or at the first value clamp to it; above the last extrapolate from the
 * top two; the fraction is on a linear scale (LLMServingSim's trace_generator explains why:
 * leave-one-out error 2-4% linear against 12-14% in log space). */
static void axis_bracket(const int64_t *v, int n, int64_t q, int *lo, int *hi, double *t)
{
    if (n == 1 || q <= v[0]) {
        *lo = *hi = 0;
        *t = 0;
        return;
    }
    int idx = bisect_right(v, n, (double)q);
    if (idx >= n)
        *lo = n - 2, *hi = n - 1;
    else
        *lo = idx - 1, *hi = idx;
    double x0 = (double)v[*lo], x1 = (double)v[*hi];
    *t = x1 == x0 ? 0 : ((double)q - x0) / (x1 - x0);
}

static const struct sv_compute_attn_slice *find_slice(const struct sv_compute_attn_table *t,
                                                      int64_t pc, int64_t nd)
{
    int lo = 0, hi = t->n_slices;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        const struct sv_compute_attn_slice *s = &t->slices[mid];
        if (s->pc < pc || (s->pc == pc && s->nd < nd))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < t->n_slices && t->slices[lo].pc == pc && t->slices[lo].nd == nd)
        return &t->slices[lo];
    return NULL;
}

static double row_lookup(const struct sv_compute_table1d *r, int64_t kd)
{
    if (r->n == 1)
        return r->vals[0];
    int lo, hi;
    double t;
    axis_bracket(r->keys, r->n, kd, &lo, &hi, &t);
    return r->vals[lo] + t * (r->vals[hi] - r->vals[lo]);
}

/* Bilinear inside one (prefill_chunk, n_decode) slice: row by row over kv_decode, then across
 * the two bracketing kv_prefill rows. */
static double slice_lookup(const struct sv_compute_attn_slice *s, int64_t kp, int64_t kd)
{
    int lo, hi;
    double t;
    axis_bracket(s->kp, s->n_kp, kp < 0 ? 0 : kp, &lo, &hi, &t);
    kd = kd < 0 ? 0 : kd;
    double v_lo = row_lookup(&s->rows[lo], kd);
    if (lo == hi)
        return v_lo;
    double v_hi = row_lookup(&s->rows[hi], kd);
    return v_lo + t * (v_hi - v_lo);
}

/* A corner whose slice was not profiled takes the nearest profiled (pc, nd) slice (squared
 * distance, first in sorted order on ties), as LLMServingSim's _corner does. */
static double corner(const struct sv_compute_attn_table *t, int64_t pc, int64_t nd, int64_t kp,
                     int64_t kd)
{
    const struct sv_compute_attn_slice *s = find_slice(t, pc, nd);
    if (!s) {
        int64_t best = INT64_MAX;
        for (int i = 0; i < t->n_slices; i++) {
            int64_t dp = t->slices[i].pc - pc, dn = t->slices[i].nd - nd;
            int64_t d = dp * dp + dn * dn;
            if (d < best) {
                best = d;
                s = &t->slices[i];
            }
        }
    }
    return slice_lookup(s, kp, kd);
}

double sv_compute__attn_lookup(const struct sv_compute_attn_table *t, int64_t pc, int64_t kp,
                               int64_t nd, int64_t kd)
{
    pc = pc < 0 ? 0 : pc;
    nd = nd < 0 ? 0 : nd;
    int lo_pc, hi_pc, lo_nd, hi_nd;
    double t_pc, t_nd;
    axis_bracket(t->pc_vals, t->n_pc, pc, &lo_pc, &hi_pc, &t_pc);
    axis_bracket(t->nd_vals, t->n_nd, nd, &lo_nd, &hi_nd, &t_nd);
    double c00 = corner(t, t->pc_vals[lo_pc], t->nd_vals[lo_nd], kp, kd);
    double c01 = corner(t, t->pc_vals[lo_pc], t->nd_vals[hi_nd], kp, kd);
    double c10 = corner(t, t->pc_vals[hi_pc], t->nd_vals[lo_nd], kp, kd);
    double c11 = corner(t, t->pc_vals[hi_pc], t->nd_vals[hi_nd], kp, kd);
    double v0 = c00 + t_nd * (c01 - c00);
    double v1 = c10 + t_nd * (c11 - c10);
    double out = v0 + t_pc * (v1 - v0);
    /* int() truncates toward zero; at least 1 ns. */
    out = trunc(out);
    return out < 1 ? 1 : out;
}
