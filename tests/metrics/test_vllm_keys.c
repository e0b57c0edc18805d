/* Issue 14: summary.json's vLLM benchmark_serving keys, its "instances" and "pools" sections and
 * run.json committed with the outputs, from synthetic records whose every figure is computed by
 * hand below (vLLM's definitions: metrics/vllm.c; numpy's percentile, median and std). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "metrics/metrics.h"
#include "tests/test_util.h"

#define MS INT64_C(1000000)
#define ASSERT_NEAR(a, b, tol) CU_ASSERT(fabs((double)(a) - (double)(b)) <= (tol))

static struct sv_wl_outcome req(uint64_t id, int inst, int64_t arr_ms, int64_t sched_ms,
                                int64_t first_ms, int64_t last_ms, int64_t in, int64_t out)
{
    return (struct sv_wl_outcome){.request_id = id,
                                  .instance = inst,
                                  .prefill_instance = -1,
                                  .arrival_ns = arr_ms * MS,
                                  .first_scheduled_ns = sched_ms * MS,
                                  .first_token_ns = first_ms * MS,
                                  .last_token_ns = last_ms * MS,
                                  .input_tokens = in,
                                  .output_tokens = out,
                                  .finished = TRUE};
}

static JsonParser *load_json(const char *dir, const char *name)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);
    JsonParser *p = json_parser_new();
    if (!json_parser_load_from_file(p, path, NULL)) {
        g_object_unref(p);
        return NULL;
    }
    return p;
}

static double num(JsonObject *o, const char *key)
{
    if (!json_object_has_member(o, key)) {
        fprintf(stderr, "missing key %s\n", key);
        CU_FAIL("missing key");
        return NAN;
    }
    return json_node_get_double(json_object_get_member(o, key));
}

/* Three finished requests and one rejected at arrival on two instances of one pool (same
 * hardware and model), with --goodput ttft:450 tpot:400 e2el:800 and --metric-percentiles
 * 25,99.9. */
static void test_vllm_keys_and_sections(void)
{
    mode_t old_umask = umask(022);
    g_autofree char *dir = sv_test_tmpdir();
    const double pct[] = {25, 99.9};
    struct sv_metrics_cfg cfg = {.output_dir = dir, .n_instances = 2};
    g_autoptr(GError) err = NULL;
    CU_ASSERT_FATAL(sv_metrics_goodput_parse("ttft:450 tpot:400,e2el:800", &cfg, &err));
    cfg.metric_percentiles = pct;
    cfg.n_metric_percentiles = 2;
    sv_metrics *m = sv_metrics_new(&cfg, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    const struct sv_metrics_instance_info i0 = {.role = "both",
                                                .model = "M",
                                                .hardware = "H",
                                                .tp = 2,
                                                .pp = 1,
                                                .kv_blocks = 100,
                                                .kv_block_size = 16,
                                                .kv_bytes = 100 * 16 * 1000};
    struct sv_metrics_instance_info i1 = i0;
    i1.kv_blocks = 300;
    i1.kv_bytes = 300 * 16 * 1000;
    sv_metrics_set_instance(m, 0, &i0);
    sv_metrics_set_instance(m, 1, &i1);

    /* instance 0: state (running, waiting, kv %) 0 before 500 ms, (1, 2, 10) on [500, 1600),
     * (2, 0, 20) on [1600, 3000); instance 1: 0 throughout */
    sv_metrics_tokens(m, 0, 500 * MS, 100, 1);
    sv_metrics_sample(m, 0, 500 * MS, 1, 2, 10.0);
    sv_metrics_tokens(m, 1, 1200 * MS, 50, 1);
    sv_metrics_sample(m, 1, 1200 * MS, 0, 0, 0.0);
    struct sv_wl_outcome r1 = req(1, 1, 1000, 1000, 1200, 1200, 50, 1);
    CU_ASSERT(sv_metrics_request_add(m, &r1, &err));
    sv_metrics_tokens(m, 0, 1600 * MS, 10, 1);
    sv_metrics_sample(m, 0, 1600 * MS, 2, 0, 20.0);
    struct sv_wl_outcome r2 = req(2, 0, 1500, 1600, 1900, 2300, 10, 4);
    CU_ASSERT(sv_metrics_request_add(m, &r2, &err));
    sv_metrics_tokens(m, 0, 3000 * MS, 0, 7);
    sv_metrics_sample(m, 0, 3000 * MS, 0, 0, 0.0);
    struct sv_wl_outcome r0 = req(0, 0, 0, 100, 500, 2500, 100, 5);
    CU_ASSERT(sv_metrics_request_add(m, &r0, &err));
    /* rejected at arrival, 3.2 s: vLLM's client gets its error at once, so the benchmark ends
     * there (duration 0 -> 3.2 s); its tokens count nowhere */
    struct sv_wl_outcome r3 = {.request_id = 3,
                               .instance = -1,
                               .prefill_instance = -1,
                               .arrival_ns = 3200 * MS,
                               .first_scheduled_ns = -1,
                               .first_token_ns = -1,
                               .last_token_ns = -1,
                               .input_tokens = 7,
                               .output_tokens = 3,
                               .reject = SV_WL_REJECT_CONTEXT_LENGTH};
    CU_ASSERT(sv_metrics_request_add(m, &r3, &err));
    const int64_t gaps_ms[] = {500, 500, 500, 500, 100, 100, 200};
    for (size_t i = 0; i < G_N_ELEMENTS(gaps_ms); i++)
        sv_metrics_itl(m, gaps_ms[i] * MS);
    sv_metrics_set_run_json(m, "{\"seed\" : 1}\n");
    CU_ASSERT_FATAL(sv_metrics_finish(m, 3000 * MS, 0, &err));
    umask(old_umask);

    g_autoptr(JsonParser) p = load_json(dir, "summary.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    JsonObject *o = json_node_get_object(json_parser_get_root(p));
    ASSERT_NEAR(num(o, "duration"), 3.2, 1e-12);
    ASSERT_NEAR(num(o, "completed"), 3, 0);
    ASSERT_NEAR(num(o, "total_input_tokens"), 160, 0); /* 100 + 50 + 10 */
    ASSERT_NEAR(num(o, "total_output_tokens"), 10, 0); /* 5 + 1 + 4 */
    ASSERT_NEAR(num(o, "request_throughput"), 3 / 3.2, 1e-12);
    ASSERT_NEAR(num(o, "output_throughput"), 10 / 3.2, 1e-12);
    ASSERT_NEAR(num(o, "total_token_throughput"), 170 / 3.2, 1e-12);
    /* goodput: r0 ttft 500 > 450 misses; r1 (tpot 0 for one token) and r2 (ttft 400, tpot
     * 133.3, e2el exactly 800: an SLO is met at equality, vLLM's s >= r) meet all three */
    ASSERT_NEAR(num(o, "request_goodput"), 2 / 3.2, 1e-12);

    /* TTFT {500, 200, 400} ms: mean 1100/3; deviations 400/3, -500/3, 100/3:
     * var = (160000 + 250000 + 10000) / 9 / 3; sorted 200 400 500, h = 2q/100 */
    ASSERT_NEAR(num(o, "mean_ttft_ms"), 1100.0 / 3, 1e-9);
    ASSERT_NEAR(num(o, "median_ttft_ms"), 400, 1e-9);
    ASSERT_NEAR(num(o, "std_ttft_ms"), sqrt(420000.0 / 27), 1e-9);
    ASSERT_NEAR(num(o, "p25_ttft_ms"), 300, 1e-9);        /* h = 0.5 */
    ASSERT_NEAR(num(o, "p99.9_ttft_ms"), 499.8, 1e-9);    /* h = 1.998: 400 + 0.998 x 100 */
    CU_ASSERT(!json_object_has_member(o, "p99_ttft_ms")); /* only the percentiles asked for */
    /* TPOT over output > 1: {2000/4, 400/3}: mean 950/3, std half the spread 1100/3 / 2 */
    ASSERT_NEAR(num(o, "mean_tpot_ms"), 950.0 / 3, 1e-9);
    ASSERT_NEAR(num(o, "median_tpot_ms"), 950.0 / 3, 1e-9);
    ASSERT_NEAR(num(o, "std_tpot_ms"), 550.0 / 3, 1e-9);
    ASSERT_NEAR(num(o, "p25_tpot_ms"), 400.0 / 3 + 0.25 * 1100.0 / 3, 1e-9);
    ASSERT_NEAR(num(o, "p99.9_tpot_ms"), 400.0 / 3 + 0.999 * 1100.0 / 3, 1e-9);
    /* ITL {100, 100, 200, 500, 500, 500, 500}: mean 2400/7; sum of squares 1060000, var =
     * (7 x 1060000 - 2400^2) / 49 = 1660000 / 49; p25: h = 1.5, 100 + 0.5 x 100 */
    ASSERT_NEAR(num(o, "mean_itl_ms"), 2400.0 / 7, 1e-9);
    ASSERT_NEAR(num(o, "median_itl_ms"), 500, 1e-9);
    ASSERT_NEAR(num(o, "std_itl_ms"), sqrt(1660000.0) / 7, 1e-9);
    ASSERT_NEAR(num(o, "p25_itl_ms"), 150, 1e-9);
    ASSERT_NEAR(num(o, "p99.9_itl_ms"), 500, 1e-9);
    /* E2EL {2500, 200, 800}: mean 3500/3, deviations 4000/3, -2900/3, -1100/3 */
    ASSERT_NEAR(num(o, "mean_e2el_ms"), 3500.0 / 3, 1e-9);
    ASSERT_NEAR(num(o, "median_e2el_ms"), 800, 1e-9);
    ASSERT_NEAR(num(o, "std_e2el_ms"), sqrt((16e6 + 8.41e6 + 1.21e6) / 27), 1e-9);
    ASSERT_NEAR(num(o, "p25_e2el_ms"), 500, 1e-9); /* h = 0.5: 200 + 0.5 x 600 */

    /* instances: time means over [0, 3 s]. Instance 0: running 1 x 1.1 s + 2 x 1.4 s = 3.9,
     * mean 1.3; waiting 2 x 1.1 s, mean 2.2/3; KV 0.10 x 1.1 + 0.20 x 1.4 = 0.39, mean 13 %;
     * served r0 and r2 (queues 100 and 100 ms); tokens of its iterations 110 in, 9 out */
    JsonArray *inst = json_object_get_array_member(o, "instances");
    CU_ASSERT_EQUAL_FATAL(json_array_get_length(inst), 2);
    JsonObject *a = json_array_get_object_element(inst, 0);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(a, "role"), "both");
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(a, "hardware"), "H");
    ASSERT_NEAR(num(a, "tp"), 2, 0);
    ASSERT_NEAR(num(a, "kv_blocks"), 100, 0);
    ASSERT_NEAR(num(a, "kv_tokens"), 1600, 0);
    ASSERT_NEAR(num(a, "kv_bytes"), 1600000, 0);
    ASSERT_NEAR(num(a, "kv_usage_peak_pct"), 20, 1e-9);
    ASSERT_NEAR(num(a, "kv_usage_mean_pct"), 13, 1e-9);
    ASSERT_NEAR(num(a, "running_mean"), 1.3, 1e-12);
    ASSERT_NEAR(num(a, "running_max"), 2, 0);
    ASSERT_NEAR(num(a, "waiting_mean"), 2.2 / 3, 1e-12);
    ASSERT_NEAR(num(a, "waiting_max"), 2, 0);
    ASSERT_NEAR(num(a, "queue_ms_mean"), 100, 1e-9);
    ASSERT_NEAR(num(a, "requests_served"), 2, 0);
    ASSERT_NEAR(num(a, "input_tokens"), 110, 0);
    ASSERT_NEAR(num(a, "output_tokens"), 9, 0);
    ASSERT_NEAR(num(a, "iterations"), 3, 0);
    JsonObject *b = json_array_get_object_element(inst, 1);
    ASSERT_NEAR(num(b, "requests_served"), 1, 0);
    ASSERT_NEAR(num(b, "queue_ms_mean"), 0, 0);
    ASSERT_NEAR(num(b, "kv_usage_mean_pct"), 0, 0);
    /* one pool (same hardware and model): 400 blocks; KV mean (13 % x 100 + 0 x 300) / 400 =
     * 3.25 %; running mean 1.3 + 0; queue mean (100 + 100 + 0) / 3 */
    JsonArray *pools = json_object_get_array_member(o, "pools");
    CU_ASSERT_EQUAL_FATAL(json_array_get_length(pools), 1);
    JsonObject *pl = json_array_get_object_element(pools, 0);
    ASSERT_NEAR(num(pl, "n_instances"), 2, 0);
    ASSERT_NEAR(num(pl, "kv_blocks"), 400, 0);
    ASSERT_NEAR(num(pl, "kv_tokens"), 6400, 0);
    ASSERT_NEAR(num(pl, "kv_usage_mean_pct"), 3.25, 1e-9);
    ASSERT_NEAR(num(pl, "running_mean"), 1.3, 1e-12);
    ASSERT_NEAR(num(pl, "queue_ms_mean"), 200.0 / 3, 1e-9);
    ASSERT_NEAR(num(pl, "requests_served"), 3, 0);

    /* run.json as given, 0666 less the umask like the others */
    g_autofree char *rj_path = g_build_filename(dir, "run.json", NULL);
    g_autofree char *rj = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(rj_path, &rj, NULL, NULL));
    CU_ASSERT_STRING_EQUAL(rj, "{\"seed\" : 1}\n");
    GStatBuf st;
    CU_ASSERT_EQUAL_FATAL(g_stat(rj_path, &st), 0);
    CU_ASSERT_EQUAL(st.st_mode & 0777, 0644);
    /* the human summary says it too */
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    sv_metrics_print_summary(m, mem);
    fclose(mem);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "goodput: 2 of 3 requests met the SLOs, 0.62 req/s over "
                                        "3.200 s"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "summary.json,run.json}"));
    free(text);
    sv_metrics_free(m);
    sv_test_rmtree(dir);
}

/* Disaggregated: pools by role; a request's prompt (and queue) counts on its prefill instance,
 * its output on the decode instance. */
static void test_pd_pools(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    struct sv_metrics_cfg cfg = {.output_dir = dir, .n_instances = 3, .pd = TRUE};
    g_autoptr(GError) err = NULL;
    sv_metrics *m = sv_metrics_new(&cfg, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    const char *roles[] = {"prefill", "decode", "prefill"};
    for (int i = 0; i < 3; i++) {
        struct sv_metrics_instance_info in = {
            .role = roles[i], .model = "M", .hardware = "H", .tp = 1, .pp = 1, .kv_blocks = 10};
        sv_metrics_set_instance(m, i, &in);
    }
    struct sv_wl_outcome r0 = req(0, 1, 0, 10, 100, 200, 8, 2);
    r0.prefill_instance = 2;
    struct sv_wl_outcome r1 = req(1, 1, 0, 30, 150, 250, 8, 2);
    r1.prefill_instance = 0;
    CU_ASSERT(sv_metrics_request_add(m, &r0, &err));
    CU_ASSERT(sv_metrics_request_add(m, &r1, &err));
    CU_ASSERT_FATAL(sv_metrics_finish(m, 250 * MS, 0, &err));
    g_autoptr(JsonParser) p = load_json(dir, "summary.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    JsonObject *o = json_node_get_object(json_parser_get_root(p));
    JsonArray *inst = json_object_get_array_member(o, "instances");
    ASSERT_NEAR(num(json_array_get_object_element(inst, 0), "prefills"), 1, 0);
    ASSERT_NEAR(num(json_array_get_object_element(inst, 0), "queue_ms_mean"), 30, 1e-9);
    ASSERT_NEAR(num(json_array_get_object_element(inst, 1), "requests_served"), 2, 0);
    ASSERT_NEAR(num(json_array_get_object_element(inst, 1), "prefills"), 0, 0);
    ASSERT_NEAR(num(json_array_get_object_element(inst, 2), "queue_ms_mean"), 10, 1e-9);
    JsonArray *pools = json_object_get_array_member(o, "pools");
    CU_ASSERT_EQUAL_FATAL(json_array_get_length(pools), 2);
    JsonObject *pf = json_array_get_object_element(pools, 0);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(pf, "role"), "prefill");
    ASSERT_NEAR(num(pf, "n_instances"), 2, 0);
    ASSERT_NEAR(num(pf, "kv_blocks"), 20, 0);
    ASSERT_NEAR(num(pf, "prefills"), 2, 0);
    ASSERT_NEAR(num(pf, "queue_ms_mean"), 20, 1e-9);
    JsonObject *pd = json_array_get_object_element(pools, 1);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(pd, "role"), "decode");
    ASSERT_NEAR(num(pd, "requests_served"), 2, 0);
    /* no --goodput: no request_goodput key (vLLM writes null); default percentile p99 only */
    CU_ASSERT(!json_object_has_member(o, "request_goodput"));
    CU_ASSERT(json_object_has_member(o, "p99_ttft_ms"));
    CU_ASSERT(!json_object_has_member(o, "p50_ttft_ms"));
    /* duration 0 -> 250 ms: 2 / 0.25 s */
    ASSERT_NEAR(num(o, "request_throughput"), 8, 1e-12);
    sv_metrics_free(m);
    sv_test_rmtree(dir);
}

static void test_flag_parsing(void)
{
    g_autoptr(GError) err = NULL;
    struct sv_metrics_cfg c = {0};
    CU_ASSERT(sv_metrics_goodput_parse("tpot:50", &c, &err));
    CU_ASSERT(c.has_goodput);
    CU_ASSERT(c.goodput_ttft_ms < 0 && c.goodput_e2el_ms < 0);
    ASSERT_NEAR(c.goodput_tpot_ms, 50, 0);
    const char *bad[] = {"ttft", "itl:5", "ttft:-1", "ttft:x", "", "ttft:1e999"};
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        struct sv_metrics_cfg d = {0};
        CU_ASSERT(!sv_metrics_goodput_parse(bad[i], &d, &err));
        CU_ASSERT(err && strstr(err->message, "--goodput") != NULL);
        g_clear_error(&err);
    }
    int n = 0;
    g_autofree double *v = sv_metrics_percentiles_parse("50, 90,99.9,90", &n, &err);
    CU_ASSERT_FATAL(v != NULL);
    CU_ASSERT_EQUAL(n, 3); /* the repeated 90 is one key */
    ASSERT_NEAR(v[2], 99.9, 0);
    const char *badp[] = {"101", "-1", "x", "50,", ""};
    for (size_t i = 0; i < G_N_ELEMENTS(badp); i++) {
        CU_ASSERT(sv_metrics_percentiles_parse(badp[i], &n, &err) == NULL);
        CU_ASSERT(err && strstr(err->message, "--metric-percentiles") != NULL);
        g_clear_error(&err);
    }
}

static void test_std_large_offset(void)
{
    /* shifted sums: values near 1e9 with spread 1 keep their std (naive sum of squares loses
     * it all: 1e18 has no digits left for 1) */
    g_autoptr(sv_metrics_quantile) q = sv_metrics_quantile_new();
    const double v[] = {1e9 + 1, 1e9 + 2, 1e9 + 3, 1e9 + 4};
    for (size_t i = 0; i < G_N_ELEMENTS(v); i++)
        sv_metrics_quantile_add(q, v[i]);
    ASSERT_NEAR(sv_metrics_quantile_std(q), sqrt(1.25), 1e-9); /* var of 1..4 = 5/4 */
    g_autoptr(sv_metrics_quantile) e = sv_metrics_quantile_new();
    ASSERT_NEAR(sv_metrics_quantile_std(e), 0, 0);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"vllm_keys_and_sections", test_vllm_keys_and_sections},
        {"pd_pools", test_pd_pools},
        {"flag_parsing", test_flag_parsing},
        {"std_large_offset", test_std_large_offset},
        {NULL, NULL},
    };
    sv_test_add_suite("metrics_vllm_keys", cases);
    return sv_test_run();
}
