/* Percentiles: numpy's linear interpolation, exact up to SV_METRICS_QUANTILE_EXACT values, a
 * logarithmic histogram with bounded relative error past that (DDSketch, Masson et al., VLDB
 * 2019: bucket i = (gamma^(i-1), gamma^i], gamma = (1 + a) / (1 - a)). A 10^6-request run has
 * ~10^8 inter-token gaps: storing them would cost 800 MB, the histogram a few hundred KB. */
#include <math.h>
#include <stdlib.h>

#include "metrics/metrics.h"

/* Values at or below this are counted in the zero bucket (reported as 0). Inputs are ms or ns,
 * so 1e-9 of either unit is far below anything the simulator resolves. */
#define SKETCH_MIN 1e-9

struct sv_metrics_quantile {
    uint64_t n;
    double sum;
    /* Variance by shifted sums (Chan, Golub and LeVeque 1983; the first value is the shift):
     * two adds and a multiply per value, and no cancellation while values stay near the first. */
    double shift, sum_d, sum_d2;
    GArray *exact; /* double; NULL once the sketch took over */
    gboolean sorted;
    /* sketch */
    double log_gamma;
    uint64_t zero_count;
    GArray *buckets; /* uint64_t counts for indices [idx_lo, idx_lo + len) */
    int idx_lo;
    /* The last value's bucket: one iteration gives every request in its batch the same gap,
     * so a run's ITL stream repeats values in long runs and log() is skipped for them. */
    double memo_v;
    int memo_idx;
};

GQuark sv_metrics_error_quark(void)
{
    return g_quark_from_static_string("servesim-metrics-error-quark");
}

double sv_metrics_percentile_sorted(const double *sorted, size_t n, double q)
{
    if (n == 0)
        return 0.0;
    if (q <= 0.0)
        return sorted[0];
    if (q >= 100.0)
        return sorted[n - 1];
    double h = (double)(n - 1) * q / 100.0;
    size_t lo = (size_t)floor(h);
    size_t hi = lo + 1 < n ? lo + 1 : n - 1;
    return sorted[lo] + (h - (double)lo) * (sorted[hi] - sorted[lo]);
}

sv_metrics_quantile *sv_metrics_quantile_new(void)
{
    sv_metrics_quantile *q = g_new0(sv_metrics_quantile, 1);
    q->exact = g_array_new(FALSE, FALSE, sizeof(double));
    q->sorted = TRUE;
    double a = SV_METRICS_QUANTILE_REL_ERR;
    q->log_gamma = log((1.0 + a) / (1.0 - a));
    return q;
}

void sv_metrics_quantile_free(sv_metrics_quantile *q)
{
    if (q == NULL)
        return;
    if (q->exact != NULL)
        g_array_free(q->exact, TRUE);
    if (q->buckets != NULL)
        g_array_free(q->buckets, TRUE);
    g_free(q);
}

static void sketch_insert(sv_metrics_quantile *q, double v)
{
    if (v <= SKETCH_MIN) {
        q->zero_count++;
        return;
    }
    int idx;
    if (v == q->memo_v) {
        idx = q->memo_idx;
    } else {
        idx = (int)ceil(log(v) / q->log_gamma);
        q->memo_v = v;
        q->memo_idx = idx;
    }
    if (q->buckets == NULL) {
        q->buckets = g_array_new(FALSE, TRUE, sizeof(uint64_t));
        q->idx_lo = idx;
    }
    if (idx < q->idx_lo) {
        /* grow downward by at least the current length (amortised O(1) per bucket) */
        guint add = (guint)(q->idx_lo - idx);
        if (add < q->buckets->len)
            add = q->buckets->len;
        idx = q->idx_lo - (int)add;
        GArray *grown = g_array_sized_new(FALSE, TRUE, sizeof(uint64_t), q->buckets->len + add);
        g_array_set_size(grown, add);
        g_array_append_vals(grown, q->buckets->data, q->buckets->len);
        g_array_free(q->buckets, TRUE);
        q->buckets = grown;
        q->idx_lo = idx;
        idx = q->memo_idx;
    }
    guint pos = (guint)(idx - q->idx_lo);
    if (pos >= q->buckets->len)
        g_array_set_size(q->buckets, pos + 1);
    g_array_index(q->buckets, uint64_t, pos)++;
}

void sv_metrics_quantile_add(sv_metrics_quantile *q, double value)
{
    if (!(value > 0.0)) /* negative durations cannot occur; NaN neither: count as 0 */
        value = 0.0;
    if (q->n == 0)
        q->shift = value;
    q->n++;
    q->sum += value;
    double d = value - q->shift;
    q->sum_d += d;
    q->sum_d2 += d * d;
    /* Hot path (10^8 ITL gaps in a 10^6-request run): the value repeats the last one, whose
     * bucket exists. */
    if (value == q->memo_v && q->exact == NULL && value > SKETCH_MIN) {
        g_array_index(q->buckets, uint64_t, (guint)(q->memo_idx - q->idx_lo))++;
        return;
    }
    if (q->exact != NULL) {
        if (q->exact->len < SV_METRICS_QUANTILE_EXACT) {
            g_array_append_val(q->exact, value);
            q->sorted = FALSE;
            return;
        }
        for (guint i = 0; i < q->exact->len; i++)
            sketch_insert(q, g_array_index(q->exact, double, i));
        g_array_free(q->exact, TRUE);
        q->exact = NULL;
    }
    sketch_insert(q, value);
}

uint64_t sv_metrics_quantile_count(const sv_metrics_quantile *q)
{
    return q->n;
}

double sv_metrics_quantile_mean(const sv_metrics_quantile *q)
{
    return q->n ? q->sum / (double)q->n : 0.0;
}

double sv_metrics_quantile_std(const sv_metrics_quantile *q)
{
    if (q->n == 0)
        return 0.0;
    double n = (double)q->n, var = (q->sum_d2 - q->sum_d * q->sum_d / n) / n;
    return var > 0.0 ? sqrt(var) : 0.0;
}

gboolean sv_metrics_quantile_is_exact(const sv_metrics_quantile *q)
{
    return q->exact != NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Value of the k-th smallest (0-based) sample from the sketch. */
static double sketch_rank(const sv_metrics_quantile *q, uint64_t k)
{
    if (k < q->zero_count)
        return 0.0;
    uint64_t seen = q->zero_count;
    for (guint i = 0; q->buckets != NULL && i < q->buckets->len; i++) {
        seen += g_array_index(q->buckets, uint64_t, i);
        if (k < seen) {
            double gamma = exp(q->log_gamma);
            return 2.0 * exp((double)(q->idx_lo + (int)i) * q->log_gamma) / (gamma + 1.0);
        }
    }
    g_assert_not_reached();
}

double sv_metrics_quantile_get(sv_metrics_quantile *q, double p)
{
    if (q->n == 0)
        return 0.0;
    if (q->exact != NULL) {
        if (!q->sorted) {
            qsort(q->exact->data, q->exact->len, sizeof(double), cmp_double);
            q->sorted = TRUE;
        }
        return sv_metrics_percentile_sorted((const double *)q->exact->data, q->exact->len, p);
    }
    if (p <= 0.0)
        p = 0.0;
    if (p >= 100.0)
        p = 100.0;
    double h = (double)(q->n - 1) * p / 100.0;
    uint64_t lo = (uint64_t)floor(h);
    uint64_t hi = lo + 1 < q->n ? lo + 1 : q->n - 1;
    double vlo = sketch_rank(q, lo), vhi = sketch_rank(q, hi);
    return vlo + (h - (double)lo) * (vhi - vlo);
}
