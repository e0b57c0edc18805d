/* fit_roofline: fit the roofline backend's per-operator efficiencies to LLMServingSim profile
 * bundles.
 *
 * For every operator, every profiled point of every bundle gives (FLOPs, bytes) from the model
 * config (sv_compute_op_cost) and the measured time. The model time = max(FLOPs / (peak x
 * compute_eff), bytes / (bandwidth x memory_eff)) + overhead is fitted by grid search on
 * (compute_eff, memory_eff, overhead), minimising the mean squared log error, pooled over all
 * bundles (one set of numbers per operator for every device). Writes the C table compiled into
 * sv_compute and a CSV with the fit error per operator.
 *
 * usage: fit_roofline [--profiles DIR] [--out-c FILE] [--out-csv FILE]
 * (defaults: ../shared/reference/llmservingsim/profiles, compute/roofline_fit.inc,
 * compute/roofline_fit.csv; run from the repository root) */
#include "compute/compute_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bundle {
    const char *hw_dir, *hw, *model;
    int tp;
};

/* Every bundle under reference/llmservingsim/profiles (hardware folder, catalog name). */
static const struct bundle bundles[] = {
    {"RTX4090", "RTX-4090", "meta-llama/Llama-3.1-8B", 1},
    {"RTXPRO6000", "RTX-PRO-6000", "meta-llama/Llama-3.1-8B", 1},
    {"RTXPRO6000", "RTX-PRO-6000", "meta-llama/Llama-3.1-8B", 2},
    {"RTXPRO6000", "RTX-PRO-6000", "Qwen/Qwen3-32B", 1},
    {"RTXPRO6000", "RTX-PRO-6000", "Qwen/Qwen3-32B", 2},
    {"RTXPRO6000", "RTX-PRO-6000", "Qwen/Qwen3-30B-A3B-Instruct-2507", 1},
    {"RTXPRO6000", "RTX-PRO-6000", "Qwen/Qwen3-30B-A3B-Instruct-2507", 2},
};
#define NB ((int)G_N_ELEMENTS(bundles))

struct point {
    double flops, bytes, peak, bw, meas_ns;
    int bundle;
};

static void add_point(GArray *pts, const struct sv_compute_model_cfg *m, int tp,
                      const struct sv_compute_hw_cfg *hw, sv_compute_op_kind op,
                      const struct sv_compute_batch_shape *s, double ns, int b)
{
    struct point p = {.peak = sv_compute_hw_peak_flops(hw, (int)m->dtype_bytes),
                      .bw = hw->mem_bw_gbps * 1e9,
                      .meas_ns = ns,
                      .bundle = b};
    sv_compute_op_cost(m, tp, op, s, &p.flops, &p.bytes);
    g_array_append_val(pts, p);
}

static void collect(sv_compute_latency *lat, const struct sv_compute_hw_cfg *hw, int b,
                    GArray *pts[SV_COMPUTE_OP_COUNT])
{
    const struct sv_compute_model_cfg *m = sv_compute_latency_model(lat);
    int tp = lat->tp;
    const struct sv_compute_tp_tables *t = lat->t_tp;
    for (int op = 0; op < SV_COMPUTE_OP_COUNT; op++) {
        if (!t->has_dense[op] || (tp != 1 && lat->seq->tp_stable[op]))
            continue; /* tp_stable layers are copies of tp1: count them once */
        const struct sv_compute_table1d *d = &t->dense[op];
        for (int i = 0; i < d->n; i++) {
            struct sv_compute_batch_shape s = {0};
            if (sv_compute_op_category(op) == SV_COMPUTE_OP_CAT_PER_SEQUENCE)
                s.n_seqs = d->keys[i];
            else
                s.tokens = d->keys[i];
            add_point(pts[op], m, tp, hw, op, &s, d->vals[i], b);
        }
    }
    if (t->has_attn) {
        const struct sv_compute_attn_table *a = &t->attn;
        guint k = 0;
        for (int i = 0; i < a->n_slices; i++) {
            const struct sv_compute_attn_slice *sl = &a->slices[i];
            for (int j = 0; j < sl->n_kp; j++)
                for (int r = 0; r < sl->rows[j].n; r++) {
                    if (k++ % 7) /* every 7th point keeps the grid search short */
                        continue;
                    struct sv_compute_batch_shape s = {0};
                    s.n_prefill_tokens = sl->pc;
                    s.n_prefill_seqs = sl->pc > 0;
                    s.prefill_kv = sl->kp[j];
                    s.n_decode = sl->nd;
                    s.decode_kv_sum = sl->nd * sl->rows[j].keys[r];
                    s.tokens = sl->pc + sl->nd;
                    if (s.tokens == 0)
                        continue;
                    add_point(pts[SV_COMPUTE_OP_ATTENTION], m, tp, hw, SV_COMPUTE_OP_ATTENTION, &s,
                              sl->rows[j].vals[r], b);
                }
        }
    }
    if (tp == 1 && t->has_moe) {
        for (int i = 0; i < t->moe.n; i++)
            for (int j = 0; j < t->moe.rows[i].n; j++) {
                struct sv_compute_batch_shape s = {0};
                s.moe_activated_experts = t->moe.keys[i];
                s.moe_local_tokens = s.tokens = t->moe.rows[i].keys[j];
                add_point(pts[SV_COMPUTE_OP_MOE], m, tp, hw, SV_COMPUTE_OP_MOE, &s,
                          t->moe.rows[i].vals[j], b);
            }
    }
}

static double loss(const GArray *pts, const struct sv_compute_roofline_eff *e)
{
    double sum = 0;
    for (guint i = 0; i < pts->len; i++) {
        const struct point *p = &g_array_index(pts, struct point, i);
        double pred = sv_compute__roofline_ns(e, p->flops, p->bytes, p->peak, p->bw);
        double l = log(pred / p->meas_ns);
        sum += l * l;
    }
    return sum / pts->len;
}

static struct sv_compute_roofline_eff fit(const GArray *pts)
{
    struct sv_compute_roofline_eff best = {1, 1, 0};
    double best_l = INFINITY;
    /* Coarse log grid, then two refinements around the best point. */
    double ce_lo = log(0.005), ce_hi = log(1.0), me_lo = log(0.02), me_hi = log(1.0);
    double oh_lo = log(100.0), oh_hi = log(1e6);
    for (int round = 0; round < 3; round++) {
        const int N = 28;
        for (int a = 0; a < N; a++)
            for (int c = 0; c < N; c++)
                for (int o = -1; o < N; o++) {
                    struct sv_compute_roofline_eff e = {
                        exp(ce_lo + (ce_hi - ce_lo) * a / (N - 1)),
                        exp(me_lo + (me_hi - me_lo) * c / (N - 1)),
                        o < 0 ? 0 : exp(oh_lo + (oh_hi - oh_lo) * o / (N - 1))};
                    double l = loss(pts, &e);
                    if (l < best_l) {
                        best_l = l;
                        best = e;
                    }
                }
        double w = 0.25 / (round + 1);
        ce_lo = log(best.compute_eff) - w * 4, ce_hi = fmin(0, log(best.compute_eff) + w * 4);
        me_lo = log(best.memory_eff) - w * 4, me_hi = fmin(0, log(best.memory_eff) + w * 4);
        double oc = best.overhead_ns > 0 ? log(best.overhead_ns) : log(100.0);
        oh_lo = oc - w * 4, oh_hi = oc + w * 4;
    }
    return best;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Mean and p90 of |pred / meas - 1| over the points of one bundle (-1: all). */
static void errors(const GArray *pts, const struct sv_compute_roofline_eff *e, int b, double *mean,
                   double *p90, int *n)
{
    g_autoptr(GArray) v = g_array_new(FALSE, FALSE, sizeof(double));
    for (guint i = 0; i < pts->len; i++) {
        const struct point *p = &g_array_index(pts, struct point, i);
        if (b >= 0 && p->bundle != b)
            continue;
        double r =
            fabs(sv_compute__roofline_ns(e, p->flops, p->bytes, p->peak, p->bw) / p->meas_ns - 1);
        g_array_append_val(v, r);
    }
    *n = (int)v->len;
    *mean = *p90 = 0;
    if (!v->len)
        return;
    qsort(v->data, v->len, sizeof(double), cmp_d);
    for (guint i = 0; i < v->len; i++)
        *mean += g_array_index(v, double, i);
    *mean /= v->len;
    *p90 = g_array_index(v, double, (guint)(0.9 * (v->len - 1)));
}

int main(int argc, char **argv)
{
    const char *root = "../shared/reference/llmservingsim/profiles";
    const char *out_c = "compute/roofline_fit.inc", *out_csv = "compute/roofline_fit.csv";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--profiles") && i + 1 < argc)
            root = argv[++i];
        else if (!strcmp(argv[i], "--out-c") && i + 1 < argc)
            out_c = argv[++i];
        else if (!strcmp(argv[i], "--out-csv") && i + 1 < argc)
            out_csv = argv[++i];
        else {
            fprintf(stderr, "usage: fit_roofline [--profiles DIR] [--out-c FILE] "
                            "[--out-csv FILE]\n");
            return 2;
        }
    }
    GArray *pts[SV_COMPUTE_OP_COUNT];
    for (int op = 0; op < SV_COMPUTE_OP_COUNT; op++)
        pts[op] = g_array_new(FALSE, FALSE, sizeof(struct point));
    for (int b = 0; b < NB; b++) {
        GError *err = NULL;
        struct sv_compute_model_cfg m;
        struct sv_compute_hw_cfg hw;
        if (!sv_compute_model_lookup(bundles[b].model, NULL, &m, &err) ||
            !sv_compute_hw_lookup(bundles[b].hw, &hw, &err)) {
            fprintf(stderr, "fit_roofline: %s\n", err->message);
            return 1;
        }
        g_autofree char *dir =
            g_strdup_printf("%s/%s/%s/bf16", root, bundles[b].hw_dir, bundles[b].model);
        sv_compute_latency *lat = sv_compute_latency_new_profile(dir, &m, bundles[b].tp, &err);
        if (!lat) {
            fprintf(stderr, "fit_roofline: %s\n", err->message);
            return 1;
        }
        collect(lat, &hw, b, pts);
        sv_compute_latency_free(lat);
    }
    FILE *fc = fopen(out_c, "w"), *fv = fopen(out_csv, "w");
    if (!fc || !fv) {
        fprintf(stderr, "fit_roofline: cannot write %s or %s\n", out_c, out_csv);
        return 1;
    }
    fprintf(fc, "/* Generated by tools/fit_roofline from the LLMServingSim profile bundles; "
                "do not edit.\n * {compute_eff, memory_eff, overhead_ns} per operator. */\n");
    fprintf(fv, "op,compute_eff,memory_eff,overhead_ns,n_points,mean_abs_rel_err,"
                "p90_abs_rel_err\n");
    printf("| op | compute_eff | memory_eff | overhead (us) | points | mean err | p90 err |");
    for (int b = 0; b < NB; b++)
        printf(" %s %s tp%d |", bundles[b].hw_dir, strrchr(bundles[b].model, '/') + 1,
               bundles[b].tp);
    printf("\n");
    for (int op = 0; op < SV_COMPUTE_OP_COUNT; op++) {
        struct sv_compute_roofline_eff e = {1, 1, 0};
        double mean = 0, p90 = 0;
        int n = 0;
        if (pts[op]->len) {
            e = fit(pts[op]);
            errors(pts[op], &e, -1, &mean, &p90, &n);
        }
        fprintf(fc, "[SV_OP_%s] = {%.4g, %.4g, %.4g},\n", g_ascii_strup(sv_compute_op_name(op), -1),
                e.compute_eff, e.memory_eff, e.overhead_ns);
        fprintf(fv, "%s,%.4g,%.4g,%.4g,%d,%.4f,%.4f\n", sv_compute_op_name(op), e.compute_eff,
                e.memory_eff, e.overhead_ns, n, mean, p90);
        printf("| %s | %.3g | %.3g | %.2f | %d | %.1f%% | %.1f%% |", sv_compute_op_name(op),
               e.compute_eff, e.memory_eff, e.overhead_ns / 1000, n, 100 * mean, 100 * p90);
        for (int b = 0; b < NB; b++) {
            double bm, bp;
            int bn;
            errors(pts[op], &e, b, &bm, &bp, &bn);
            if (bn)
                printf(" %.1f%% |", 100 * bm);
            else
                printf(" - |");
        }
        printf("\n");
        g_array_free(pts[op], TRUE);
    }
    fclose(fc);
    fclose(fv);
    return 0;
}
