/* The `sharegpt` lengths (docs/workloads.md): vLLM's ShareGPT sampler as a percentile table built
 * into the program (workloads/sharegpt_lengths.inc, tools/sharegpt_lengths.c), seen through
 * sv_wl_len_sharegpt.
 *
 * Expected values come from the table itself in closed form: a draw is the inverse of the
 * piecewise-linear CDF through the 101 percentiles q[0..100], so its mean is
 * sum_i (q[i] + q[i+1]) / 2 / 100 and P(X <= q[p]) = p / 100 before the rounding to whole
 * tokens. */
#include "tests/test_util.h"
#include "workloads/workloads.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define N 200000

static double table_mean(const struct sv_wl_len *l)
{
    double s = 0;
    for (int i = 0; i + 1 < l->n_quantiles; i++)
        s += 0.5 * (l->quantiles[i] + l->quantiles[i + 1]);
    return s / (l->n_quantiles - 1);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The q-th percentile (numpy linear) of sorted v. */
static double pct(const int64_t *v, int n, double q)
{
    double h = (n - 1) * q / 100.0;
    int lo = (int)h;
    return lo + 1 >= n ? (double)v[n - 1] : v[lo] + (h - lo) * (double)(v[lo + 1] - v[lo]);
}

static void check_side(int64_t *v, const struct sv_wl_len *l, const char *name)
{
    const double *q = l->quantiles;
    int nq = l->n_quantiles;
    double sum = 0;
    int64_t lo = INT64_MAX, hi = 0;
    for (int i = 0; i < N; i++) {
        sum += (double)v[i];
        lo = MIN(lo, v[i]);
        hi = MAX(hi, v[i]);
    }
    double mean = sum / N, want = table_mean(l);
    /* Standard error of the mean: sd / sqrt(N) < 300 / 447 = 0.7 tokens for either side; 1 %
     * is more than 1.3 tokens. */
    if (fabs(mean - want) > 0.01 * want)
        fprintf(stderr, "%s: mean %.2f, table %.2f\n", name, mean, want);
    CU_ASSERT(fabs(mean - want) <= 0.01 * want);
    /* Whole tokens inside the table's range (q[0] and q[100] are the sample's min and max). */
    CU_ASSERT(lo >= (int64_t)floor(q[0]) && hi <= (int64_t)ceil(q[nq - 1]));
    qsort(v, N, sizeof *v, cmp_i64);
    static const int ps[] = {5, 10, 25, 50, 75, 90, 95, 99};
    for (size_t k = 0; k < G_N_ELEMENTS(ps); k++) {
        double got = pct(v, N, ps[k]), exp = q[ps[k] * (nq - 1) / 100];
        /* Rounding moves a draw by at most half a token; sampling error at 2 x 10^5 draws is a
         * fraction of a percentile step: within 1 token or 3 %. */
        gboolean ok = fabs(got - exp) <= MAX(1.0, 0.03 * exp);
        if (!ok)
            fprintf(stderr, "%s: p%d %.2f, table %.2f\n", name, ps[k], got, exp);
        CU_ASSERT(ok);
    }
}

static void test_sampler_follows_table(void)
{
    struct sv_wl_gen_cfg cfg = {.seed = 11, .count = N};
    cfg.arrival = (struct sv_wl_arrival){.kind = SV_WL_ARRIVAL_POISSON, .rate_per_s = 10, .cv = 1};
    g_autoptr(GError) e = NULL;
    CU_ASSERT_TRUE_FATAL(sv_wl_len_parse("sharegpt", TRUE, &cfg.input_len, &e));
    CU_ASSERT_TRUE_FATAL(sv_wl_len_parse("sharegpt", FALSE, &cfg.output_len, &e));
    sv_wl_source *src = sv_wl_generator_new(&cfg, &e);
    g_assert_no_error(e);
    int64_t *in = g_new(int64_t, N), *out = g_new(int64_t, N);
    sv_wl_item it = SV_WL_ITEM_INIT;
    int n = 0;
    while (sv_wl_next(src, &it, &e) == 1 && n < N) {
        in[n] = it.reqs[0].input_tokens;
        out[n] = it.reqs[0].output_tokens;
        n++;
    }
    g_assert_no_error(e);
    SV_ASSERT_EQ_I64(n, N);
    check_side(in, &cfg.input_len, "input");
    check_side(out, &cfg.output_len, "output");
    sv_wl_item_clear(&it);
    sv_wl_source_free(src);
    g_free(in);
    g_free(out);
}

/* The sample means the tool recorded in the table's header (#define lines of the .inc). */
static double recorded_mean(const char *name)
{
    g_autofree char *text = NULL;
    CU_ASSERT_FATAL(g_file_get_contents("workloads/sharegpt_lengths.inc", &text, NULL, NULL));
    g_autofree char *key = g_strdup_printf("#define %s ", name);
    const char *at = strstr(text, key);
    CU_ASSERT_FATAL(at != NULL);
    return g_ascii_strtod(at + strlen(key), NULL);
}

/* What the table says about itself: 101 percentiles, vLLM's filter holds at its ends (prompts
 * of 4..1024 tokens, outputs >= 4), and its interpolated means stay within 3 % of the sample
 * means the tool recorded. Both means are a few hundred tokens, where Vidur's table
 * (`vidur-sharegpt`) has 2,340 prompt tokens on average. The table is built in: the same with
 * or without the reference data. */
static void test_table_shape(void)
{
    struct sv_wl_len il = {0}, ol = {0};
    sv_wl_len_sharegpt(&il, &ol);
    CU_ASSERT_FATAL(il.kind == SV_WL_LEN_QUANTILES && il.n_quantiles == 101);
    CU_ASSERT_FATAL(ol.kind == SV_WL_LEN_QUANTILES && ol.n_quantiles == 101);
    CU_ASSERT(il.quantiles[0] >= 4 && il.quantiles[100] <= 1024 && ol.quantiles[0] >= 4);
    double mi = recorded_mean("SV_WL_SHAREGPT_SAMPLE_INPUT_MEAN");
    double mo = recorded_mean("SV_WL_SHAREGPT_SAMPLE_OUTPUT_MEAN");
    CU_ASSERT(fabs(table_mean(&il) - mi) <= 0.03 * mi);
    CU_ASSERT(fabs(table_mean(&ol) - mo) <= 0.03 * mo);
    CU_ASSERT(mi > 50 && mi < 500 && mo > 50 && mo < 500);
}

/* tools/sharegpt_lengths run on the reference data writes exactly the table checked in. */
static void test_tool_regenerates_table(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim-ispass26/dataset",
                      "the ShareGPT requests the sharegpt table is derived from");
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *out = g_build_filename(dir, "t.inc", NULL);
    const char *argv[] = {SV_BUILD_DIR "/tools/sharegpt_lengths", "--out", out, NULL};
    char *so = NULL, *se = NULL;
    int status = -1;
    CU_ASSERT_TRUE_FATAL(sv_test_spawn(argv, &so, &se, &status));
    if (status != 0)
        fprintf(stderr, "%s", se);
    SV_ASSERT_EQ_I64(status, 0);
    g_autofree char *want = NULL, *got = NULL;
    gsize nw = 0, ng = 0;
    CU_ASSERT_TRUE_FATAL(g_file_get_contents("workloads/sharegpt_lengths.inc", &want, &nw, NULL));
    CU_ASSERT_TRUE_FATAL(g_file_get_contents(out, &got, &ng, NULL));
    CU_ASSERT(nw == ng && memcmp(want, got, nw) == 0);
    g_free(so);
    g_free(se);
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"sampler_follows_table", test_sampler_follows_table},
        {"table_shape", test_table_shape},
        {"tool_regenerates_table", test_tool_regenerates_table},
        {NULL, NULL},
    };
    sv_test_add_suite("sharegpt", cases);
    return sv_test_run();
}
