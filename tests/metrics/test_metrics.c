/* Output writers (requests.csv, timeseries.csv, summary.json), percentiles, and validate.
 * Expected values are hand computed (comments show the arithmetic) or read from LLMServingSim's
 * published validation summary (../shared/reference/llmservingsim/validation/.../summary.txt). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "metrics/metrics.h"
#include "tests/test_util.h"

#define CASE_DIR SV_SHARED "/reference/llmservingsim/validation/RTXPRO6000/Llama-3.1-8B"
#define MS INT64_C(1000000)

#define ASSERT_NEAR(a, b, tol) CU_ASSERT(fabs((double)(a) - (double)(b)) <= (tol))

/* ---- percentiles ---------------------------------------------------------------------------- */

static void test_percentile_sorted(void)
{
    /* numpy.percentile([1,2,3,4], q): h = 3q/100 */
    const double v[] = {1, 2, 3, 4};
    ASSERT_NEAR(sv_metrics_percentile_sorted(v, 4, 0), 1.0, 1e-12);
    ASSERT_NEAR(sv_metrics_percentile_sorted(v, 4, 50), 2.5, 1e-12);  /* h=1.5 */
    ASSERT_NEAR(sv_metrics_percentile_sorted(v, 4, 90), 3.7, 1e-12);  /* h=2.7 */
    ASSERT_NEAR(sv_metrics_percentile_sorted(v, 4, 99), 3.97, 1e-12); /* h=2.97 */
    ASSERT_NEAR(sv_metrics_percentile_sorted(v, 4, 100), 4.0, 1e-12);
    const double one[] = {7};
    ASSERT_NEAR(sv_metrics_percentile_sorted(one, 1, 95), 7.0, 1e-12);
    ASSERT_NEAR(sv_metrics_percentile_sorted(one, 0, 95), 0.0, 1e-12);
}

static void test_quantile_exact_unsorted(void)
{
    g_autoptr(sv_metrics_quantile) q = sv_metrics_quantile_new();
    const double v[] = {10, 0, 40, 20, 30}; /* sorted 0 10 20 30 40, h = 4q/100 */
    for (size_t i = 0; i < G_N_ELEMENTS(v); i++)
        sv_metrics_quantile_add(q, v[i]);
    CU_ASSERT(sv_metrics_quantile_is_exact(q));
    SV_ASSERT_EQ_I64(sv_metrics_quantile_count(q), 5);
    ASSERT_NEAR(sv_metrics_quantile_mean(q), 20.0, 1e-12);
    ASSERT_NEAR(sv_metrics_quantile_get(q, 50), 20.0, 1e-12);
    ASSERT_NEAR(sv_metrics_quantile_get(q, 90), 36.0, 1e-12); /* h=3.6: 30 + 0.6 x 10 */
    ASSERT_NEAR(sv_metrics_quantile_get(q, 95), 38.0, 1e-12); /* h=3.8 */
    sv_metrics_quantile_add(q, 50); /* adding after a query re-sorts: h = 5q/100 */
    ASSERT_NEAR(sv_metrics_quantile_get(q, 50), 25.0, 1e-12);
}

static void test_quantile_sketch_error(void)
{
    /* 1..200000 exceeds the exact buffer; numpy: P_q = 1 + (n-1) q / 100 */
    g_autoptr(sv_metrics_quantile) q = sv_metrics_quantile_new();
    const int n = 200000;
    for (int i = n; i >= 1; i--)
        sv_metrics_quantile_add(q, (double)i);
    CU_ASSERT(!sv_metrics_quantile_is_exact(q));
    ASSERT_NEAR(sv_metrics_quantile_mean(q), (n + 1) / 2.0, 1e-6);
    const double ps[] = {1, 50, 90, 95, 99};
    for (size_t i = 0; i < G_N_ELEMENTS(ps); i++) {
        double want = 1.0 + (n - 1) * ps[i] / 100.0;
        double got = sv_metrics_quantile_get(q, ps[i]);
        CU_ASSERT(fabs(got - want) / want <= SV_METRICS_QUANTILE_REL_ERR * 1.0001);
    }
    /* zeros and tiny values go to the zero bucket */
    g_autoptr(sv_metrics_quantile) z = sv_metrics_quantile_new();
    for (int i = 0; i < SV_METRICS_QUANTILE_EXACT + 10; i++)
        sv_metrics_quantile_add(z, i < SV_METRICS_QUANTILE_EXACT / 2 ? 0.0 : 5.0);
    ASSERT_NEAR(sv_metrics_quantile_get(z, 10), 0.0, 1e-12);
    CU_ASSERT(fabs(sv_metrics_quantile_get(z, 90) - 5.0) <= 5.0 * SV_METRICS_QUANTILE_REL_ERR);
}

/* ---- writers -------------------------------------------------------------------------------- */

static char *read_text(const char *dir, const char *name)
{
    g_autofree char *p = g_build_filename(dir, name, NULL);
    char *text = NULL;
    if (!g_file_get_contents(p, &text, NULL, NULL))
        return NULL;
    return text;
}

static int count_entries(const char *dir)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    int n = 0;
    while (d != NULL && g_dir_read_name(d) != NULL)
        n++;
    return n;
}

static struct sv_wl_outcome req(uint64_t id, int inst, int64_t arr_ms, int64_t sched_ms,
                                int64_t first_ms, int64_t last_ms, int64_t in, int64_t out,
                                int64_t hit, int64_t pre)
{
    struct sv_wl_outcome r = {.request_id = id,
                              .instance = inst,
                              .arrival_ns = arr_ms * MS,
                              .first_scheduled_ns = sched_ms * MS,
                              .first_token_ns = first_ms * MS,
                              .last_token_ns = last_ms * MS,
                              .input_tokens = in,
                              .output_tokens = out,
                              .prefix_hit_tokens = hit,
                              .preemptions = (uint32_t)pre,
                              .finished = TRUE};
    return r;
}

static double jget(JsonObject *o, const char *path)
{
    g_auto(GStrv) parts = g_strsplit(path, ".", -1);
    for (int i = 0; parts[i + 1] != NULL; i++)
        o = json_object_get_object_member(o, parts[i]);
    return json_node_get_double(json_object_get_member(o, parts[g_strv_length(parts) - 1]));
}

static void test_writers_synthetic(void)
{
    /* Outputs get 0666 less the umask, like any file a program writes (not mkstemp's 0600). */
    mode_t old_umask = umask(022);
    g_autofree char *dir = sv_test_tmpdir();
    struct sv_metrics_cfg cfg = {.output_dir = dir, .n_instances = 2, .tick_ns = 0};
    g_autoptr(GError) err = NULL;
    sv_metrics *m = sv_metrics_new(&cfg, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    /* nothing visible under the final names while the run goes on */
    g_autofree char *early = read_text(dir, "requests.csv");
    CU_ASSERT_PTR_NULL(early);

    /* iteration stream (instance, end time, prompt, gen) and states after each */
    sv_metrics_tokens(m, 0, 500 * MS, 100, 1);
    sv_metrics_sample(m, 0, 500 * MS, 1, 0, 10.0);
    sv_metrics_tokens(m, 1, 1200 * MS, 50, 1);
    sv_metrics_sample(m, 1, 1200 * MS, 0, 0, 0.0);
    struct sv_wl_outcome r1 = req(1, 1, 1000, 1000, 1200, 1200, 50, 1, 0, 1);
    CU_ASSERT(sv_metrics_request_add(m, &r1, &err));
    sv_metrics_tokens(m, 0, 1600 * MS, 10, 1);
    sv_metrics_sample(m, 0, 1600 * MS, 2, 0, 20.0);
    struct sv_wl_outcome r2 = req(2, 0, 1500, 1600, 1900, 2300, 10, 4, 0, 0);
    CU_ASSERT(sv_metrics_request_add(m, &r2, &err));
    sv_metrics_tokens(m, 0, 3000 * MS, 0, 3);
    sv_metrics_sample(m, 0, 3000 * MS, 0, 0, 0.0);
    struct sv_wl_outcome r0 = req(0, 0, 0, 100, 500, 2500, 100, 5, 16, 0);
    CU_ASSERT(sv_metrics_request_add(m, &r0, &err));
    /* a duplicate is refused */
    CU_ASSERT(!sv_metrics_request_add(m, &r0, &err));
    CU_ASSERT(g_error_matches(err, SV_METRICS_ERROR, SV_METRICS_ERROR_INPUT));
    g_clear_error(&err);
    const int64_t gaps_ms[] = {500, 500, 500, 500, 100, 100, 200};
    for (size_t i = 0; i < G_N_ELEMENTS(gaps_ms); i++)
        sv_metrics_itl(m, gaps_ms[i] * MS);
    CU_ASSERT_FATAL(sv_metrics_finish(m, 3000 * MS, 0, &err));
    umask(old_umask);
    const char *outputs[] = {"requests.csv", "timeseries.csv", "summary.json"};
    for (size_t i = 0; i < G_N_ELEMENTS(outputs); i++) {
        g_autofree char *path = g_build_filename(dir, outputs[i], NULL);
        GStatBuf st;
        CU_ASSERT_EQUAL_FATAL(g_stat(path, &st), 0);
        CU_ASSERT_EQUAL(st.st_mode & 0777, 0644);
    }

    g_autofree char *reqs = read_text(dir, "requests.csv");
    CU_ASSERT_STRING_EQUAL(
        reqs, "request_id,instance,arrival_ns,first_scheduled_ns,first_token_ns,last_token_ns,"
              "input_tokens,output_tokens,prefix_hit_tokens,preemptions,ttft_ns,tpot_ns,e2e_ns,"
              "queue_ns,status,reject_reason\n"
              /* tpot = 2000 ms / 4 */
              "0,0,0,100000000,500000000,2500000000,100,5,16,0,500000000,500000000,2500000000,"
              "100000000,finished,\n"
              /* one output token: no tpot */
              "1,1,1000000000,1000000000,1200000000,1200000000,50,1,0,1,200000000,,200000000,0,"
              "finished,\n"
              /* tpot = 400 ms / 3 = 133333333.3 ns, floored */
              "2,0,1500000000,1600000000,1900000000,2300000000,10,4,0,0,400000000,133333333,"
              "800000000,100000000,finished,\n");
    /* tick [0,1): 100 prompt, 1 gen, inst0 (1 running, kv 10) + inst1 (0, kv 0): kv mean 5;
     * [1,2): 50+10 prompt, 2 gen, states 2+0 running, kv (20+0)/2; [2,3): nothing;
     * [3,4) holds the iteration ending at exactly 3 s (3 gen, all idle). */
    g_autofree char *ts = read_text(dir, "timeseries.csv");
    CU_ASSERT_STRING_EQUAL(ts, "t,prompt_throughput,gen_throughput,running,waiting,kv_cache_pct\n"
                               "1.000,100.0,1.0,1,0,5.00\n"
                               "2.000,60.0,2.0,2,0,10.00\n"
                               "3.000,0.0,0.0,2,0,10.00\n"
                               "4.000,0.0,3.0,0,0,0.00\n");

    g_autofree char *sum = read_text(dir, "summary.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(sum);
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, sum, -1, NULL));
    JsonObject *o = json_node_get_object(json_parser_get_root(p));
    ASSERT_NEAR(jget(o, "requests.arrived"), 3, 0);
    ASSERT_NEAR(jget(o, "requests.finished"), 3, 0);
    ASSERT_NEAR(jget(o, "requests.unfinished"), 0, 0);
    ASSERT_NEAR(jget(o, "makespan_s"), 3.0, 1e-12);
    ASSERT_NEAR(jget(o, "throughput.requests_per_s"), 1.0, 1e-12);
    ASSERT_NEAR(jget(o, "throughput.input_tokens_per_s"), 160.0 / 3, 1e-9);
    ASSERT_NEAR(jget(o, "throughput.output_tokens_per_s"), 10.0 / 3, 1e-9);
    ASSERT_NEAR(jget(o, "tokens.prefix_hit"), 16, 0);
    ASSERT_NEAR(jget(o, "preemptions"), 1, 0);
    /* TTFT ms {500, 200, 400}: sorted 200 400 500, h = 2q/100 */
    ASSERT_NEAR(jget(o, "latency_ms.ttft.mean"), 1100.0 / 3, 1e-9);
    ASSERT_NEAR(jget(o, "latency_ms.ttft.p50"), 400.0, 1e-9);
    ASSERT_NEAR(jget(o, "latency_ms.ttft.p90"), 480.0, 1e-9); /* h=1.8 */
    ASSERT_NEAR(jget(o, "latency_ms.ttft.p95"), 490.0, 1e-9);
    ASSERT_NEAR(jget(o, "latency_ms.ttft.p99"), 498.0, 1e-9);
    /* TPOT over output > 1: {500, 400/3}; p50 = (500 + 133.33)/2, p90 = 133.33 + 0.9 x 366.67 */
    ASSERT_NEAR(jget(o, "latency_ms.tpot.count"), 2, 0);
    ASSERT_NEAR(jget(o, "latency_ms.tpot.p50"), (500.0 + 400.0 / 3) / 2, 1e-9);
    ASSERT_NEAR(jget(o, "latency_ms.tpot.p90"), 400.0 / 3 + 0.9 * (500.0 - 400.0 / 3), 1e-9);
    /* E2E {2500, 200, 800}; queue {100, 0, 100} */
    ASSERT_NEAR(jget(o, "latency_ms.e2e.mean"), 3500.0 / 3, 1e-9);
    ASSERT_NEAR(jget(o, "latency_ms.e2e.p50"), 800.0, 1e-9);
    ASSERT_NEAR(jget(o, "latency_ms.queue.mean"), 200.0 / 3, 1e-9);
    /* ITL {100,100,200,500,500,500,500}: mean 2400/7, p50 = v[3], p10 h=0.6 not reported */
    ASSERT_NEAR(jget(o, "latency_ms.itl.count"), 7, 0);
    ASSERT_NEAR(jget(o, "latency_ms.itl.mean"), 2400.0 / 7, 1e-9);
    ASSERT_NEAR(jget(o, "latency_ms.itl.p50"), 500.0, 1e-9);
    /* only the three outputs remain: no temporary or spill file */
    CU_ASSERT_EQUAL(count_entries(dir), 3);

    const struct sv_metrics_summary *s = sv_metrics_get_summary(m);
    SV_ASSERT_EQ_I64(s->input_tokens, 160);
    SV_ASSERT_EQ_I64(s->output_tokens, 10);
    sv_metrics_free(m);
    CU_ASSERT_EQUAL(count_entries(dir), 3); /* free after finish keeps them */
    sv_test_rmtree(dir);
}

/* Completions in reverse order: ids beyond the reorder window go through the spill file. */
static void test_reorder_spill(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    struct sv_metrics_cfg cfg = {.output_dir = dir, .n_instances = 1};
    g_autoptr(GError) err = NULL;
    sv_metrics *m = sv_metrics_new(&cfg, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    const uint64_t n = 3 * SV_METRICS_REORDER_WINDOW + 17;
    gboolean ok = TRUE;
    for (uint64_t k = 0; k < n; k++) {
        uint64_t id = n - 1 - k;
        if (id == 5)
            continue; /* a hole: never reported */
        struct sv_wl_outcome r =
            req(id, 0, (int64_t)id, (int64_t)id, (int64_t)id + 1, (int64_t)id + 2, 1, 2, 0, 0);
        ok = ok && sv_metrics_request_add(m, &r, &err);
    }
    CU_ASSERT(ok);
    /* a duplicate of a spilled id is refused too */
    struct sv_wl_outcome dup = req(n - 1, 0, 0, 0, 1, 2, 1, 2, 0, 0);
    CU_ASSERT(!sv_metrics_request_add(m, &dup, &err));
    g_clear_error(&err);
    CU_ASSERT_FATAL(sv_metrics_finish(m, (sv_time)(n + 2) * MS, n, &err));
    SV_ASSERT_EQ_I64(sv_metrics_get_summary(m)->unfinished, 1);
    sv_metrics_free(m);
    g_autofree char *text = read_text(dir, "requests.csv");
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    /* walk the lines by hand: g_strsplit on 1 MB is quadratic under ASan's strstr */
    gboolean ordered = TRUE;
    uint64_t want = 0;
    const char *line = strchr(text, '\n') + 1;
    for (; *line != '\0'; want++) {
        if (want == 5)
            want++;
        g_autofree char *expect = g_strdup_printf("%" G_GUINT64_FORMAT ",0,%" G_GUINT64_FORMAT ",",
                                                  (guint64)want, (guint64)want * MS);
        if (!g_str_has_prefix(line, expect))
            ordered = FALSE;
        const char *nl = strchr(line, '\n');
        if (nl == NULL)
            break;
        line = nl + 1;
    }
    CU_ASSERT(ordered);
    SV_ASSERT_EQ_I64(want, n);
    CU_ASSERT_EQUAL(count_entries(dir), 3);
    sv_test_rmtree(dir);
}

static void test_atomic_on_error(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    struct sv_metrics_cfg cfg = {.output_dir = dir, .n_instances = 1};
    g_autoptr(GError) err = NULL;

    /* an aborted run (freed without finish) leaves nothing behind */
    sv_metrics *m = sv_metrics_new(&cfg, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    struct sv_wl_outcome r = req(1, 0, 0, 0, 1, 2, 1, 2, 0, 0);
    CU_ASSERT(sv_metrics_request_add(m, &r, &err));
    sv_metrics_tokens(m, 0, 5 * MS, 1, 1);
    CU_ASSERT(count_entries(dir) >= 3); /* the temporary files exist meanwhile */
    sv_metrics_free(m);
    CU_ASSERT_EQUAL(count_entries(dir), 0);

    /* a finish that fails (summary.json cannot be replaced: a non-empty directory has its
     * name) reports the error and leaves no complete-looking output */
    g_autofree char *blocker = g_build_filename(dir, "summary.json", "x", NULL);
    CU_ASSERT_FATAL(g_mkdir_with_parents(blocker, 0755) == 0);
    m = sv_metrics_new(&cfg, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT(sv_metrics_request_add(m, &r, &err));
    CU_ASSERT(!sv_metrics_finish(m, 10 * MS, 0, &err));
    CU_ASSERT(g_error_matches(err, SV_METRICS_ERROR, SV_METRICS_ERROR_IO));
    g_clear_error(&err);
    sv_metrics_free(m);
    g_autofree char *reqs = read_text(dir, "requests.csv");
    CU_ASSERT_PTR_NULL(reqs);
    CU_ASSERT_EQUAL(count_entries(dir), 1); /* just the blocker */

    /* an unwritable output directory fails at creation, with the path in the message */
    g_autofree char *file = g_build_filename(dir, "plainfile", NULL);
    CU_ASSERT(g_file_set_contents(file, "x", -1, NULL));
    struct sv_metrics_cfg bad = {.output_dir = file, .n_instances = 1};
    CU_ASSERT_PTR_NULL(sv_metrics_new(&bad, &err));
    CU_ASSERT(err != NULL && strstr(err->message, "plainfile") != NULL);
    sv_test_rmtree(dir);
}

/* ---- validate ------------------------------------------------------------------------------- */

/* The measured requests.jsonl rewritten as our requests.csv: times relative to the first
 * queued_ts, rounded to ns (the same anchor validate uses for vLLM's mixed clocks). */
static gboolean convert_measured(const char *jsonl, const char *out_csv)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(jsonl, &text, NULL, NULL))
        return FALSE;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    GString *csv = g_string_new("request_id,instance,arrival_ns,first_scheduled_ns,"
                                "first_token_ns,last_token_ns,input_tokens,output_tokens,"
                                "prefix_hit_tokens,preemptions,ttft_ns,tpot_ns,e2e_ns,"
                                "queue_ns\n");
    double t0 = -1;
    g_autoptr(JsonParser) p = json_parser_new();
    for (int i = 0; lines[i] != NULL; i++) {
        if (*g_strstrip(lines[i]) == '\0')
            continue;
        if (!json_parser_load_from_data(p, lines[i], -1, NULL))
            return g_string_free(csv, TRUE), FALSE;
        JsonObject *o = json_node_get_object(json_parser_get_root(p));
        double q = json_object_get_double_member(o, "queued_ts");
        if (t0 < 0)
            t0 = q;
        int64_t a = llround((q - t0) * 1e9);
        int64_t s = llround((json_object_get_double_member(o, "scheduled_ts") - t0) * 1e9);
        int64_t f = llround((json_object_get_double_member(o, "first_token_ts") - t0) * 1e9);
        int64_t l = llround((json_object_get_double_member(o, "last_token_ts") - t0) * 1e9);
        int64_t in = json_object_get_int_member(o, "input_toks");
        int64_t out = json_object_get_int_member(o, "output_toks");
        g_string_append_printf(csv,
                               "%d,0,%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                               ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                               ",0,0,%" G_GINT64_FORMAT ",,%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                               "\n",
                               i, (gint64)a, (gint64)s, (gint64)f, (gint64)l, (gint64)in,
                               (gint64)out, (gint64)(f - a), (gint64)(l - a), (gint64)(s - a));
    }
    gboolean ok = g_file_set_contents(out_csv, csv->str, -1, NULL);
    g_string_free(csv, TRUE);
    return ok;
}

/* One value of the vLLM column of summary.txt, e.g. ("TTFT", "Mean"). */
static double summary_txt_value(const char *text, const char *metric, const char *stat)
{
    g_autofree char *key = g_strdup_printf("\n%s %s ", metric, stat);
    const char *p = strstr(text, key);
    if (p == NULL)
        return NAN;
    return g_ascii_strtod(p + strlen(key), NULL);
}

static void check_metric_vs_summary(const char *txt, const char *name,
                                    const struct sv_metrics_validate_metric *m)
{
    const char *stats[] = {"Mean", "Median", "P90", "P95", "P99"};
    const struct sv_metrics_validate_row *rows[] = {&m->mean, &m->median, &m->p90, &m->p95,
                                                    &m->p99};
    for (size_t i = 0; i < G_N_ELEMENTS(stats); i++) {
        double want = summary_txt_value(txt, name, stats[i]);
        CU_ASSERT(!isnan(want));
        /* summary.txt prints one decimal */
        if (fabs(rows[i]->measured - want) > 0.05 + 1e-9)
            fprintf(stderr, "%s %s: measured %.3f, summary.txt %.1f\n", name, stats[i],
                    rows[i]->measured, want);
        CU_ASSERT(fabs(rows[i]->measured - want) <= 0.05 + 1e-9);
        /* the converted copy of the measured run is the simulated side: no difference */
        CU_ASSERT(fabs(rows[i]->diff_pct) < 1e-4);
    }
}

/* Self-contained: a measured run of two requests in vLLM bench's layout (requests.jsonl with the
 * token timestamps on queued_ts's clock; arrival_time is epoch seconds, another clock) against a
 * simulated pair written in our layout. By hand:
 *   measured  r0: ttft 100.2-100.0 = 200 ms, latency 1200 ms, tpot 1000/10 = 100 ms
 *             r1: ttft 100.9-100.5 = 400 ms, latency  800 ms, tpot  400/4  = 100 ms
 *   simulated r0: ttft 220 ms, e2e 1320 ms, 11 tokens -> tpot 1100/10 = 110 ms
 *             r1: ttft 380 ms, e2e  780 ms,  5 tokens -> tpot  400/4  = 100 ms
 *   means: ttft 300 vs 300 (0 %), tpot 100 vs 105 (+5 %), latency 1000 vs 1050 (+5 %)
 *   gen_throughput per tick: measured 10, 6; simulated 12, 6 -> MAE (2 + 0) / 2 = 1,
 *   MAPE (20 % + 0 %) / 2 = 10 %. */
static void test_validate_tiny_pair(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *mdir = g_build_filename(dir, "measured", NULL);
    g_autofree char *sdir = g_build_filename(dir, "simulated", NULL);
    CU_ASSERT_FATAL(g_mkdir(mdir, 0755) == 0 && g_mkdir(sdir, 0755) == 0);
    const char *ts_head = "t,prompt_throughput,gen_throughput,running,waiting,kv_cache_pct\n";
    struct {
        const char *dir, *name, *text;
    } files[] = {
        {mdir, "requests.jsonl",
         "{\"request_id\": \"bench-0\", \"output_toks\": 11, \"arrival_time\": 1777142838.0, "
         "\"queued_ts\": 100.0, \"first_token_ts\": 100.2, \"last_token_ts\": 101.2}\n"
         "{\"request_id\": \"bench-1\", \"output_toks\": 5, \"arrival_time\": 1777142838.5, "
         "\"queued_ts\": 100.5, \"first_token_ts\": 100.9, \"last_token_ts\": 101.3}\n"},
        {mdir, "timeseries.csv", NULL},
        {sdir, "requests.csv",
         "request_id,ttft_ns,e2e_ns,output_tokens\n0,220000000,1320000000,11\n"
         "1,380000000,780000000,5\n"},
        {sdir, "timeseries.csv", NULL},
    };
    g_autofree char *mts =
        g_strconcat(ts_head, "1.0,100.0,10.0,2,0,0.0\n2.0,50.0,6.0,1,0,0.0\n", NULL);
    g_autofree char *sts =
        g_strconcat(ts_head, "1.0,100.0,12.0,2,0,0.0\n2.0,50.0,6.0,1,0,0.0\n", NULL);
    files[1].text = mts;
    files[3].text = sts;
    for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
        g_autofree char *path = g_build_filename(files[i].dir, files[i].name, NULL);
        CU_ASSERT_FATAL(g_file_set_contents(path, files[i].text, -1, NULL));
    }
    struct sv_metrics_validation v;
    g_autoptr(GError) err = NULL;
    CU_ASSERT_FATAL(sv_metrics_validate(mdir, sdir, &v, &err));
    SV_ASSERT_EQ_I64(v.ttft.n_measured, 2);
    SV_ASSERT_EQ_I64(v.ttft.n_simulated, 2);
    ASSERT_NEAR(v.ttft.mean.measured, 300.0, 1e-6);
    ASSERT_NEAR(v.ttft.mean.simulated, 300.0, 1e-6);
    ASSERT_NEAR(v.tpot.mean.measured, 100.0, 1e-6);
    ASSERT_NEAR(v.tpot.mean.simulated, 105.0, 1e-6);
    ASSERT_NEAR(v.tpot.mean.diff_pct, 5.0, 1e-6);
    ASSERT_NEAR(v.latency.mean.measured, 1000.0, 1e-6);
    ASSERT_NEAR(v.latency.mean.simulated, 1050.0, 1e-6);
    ASSERT_NEAR(v.latency.mean.diff_pct, 5.0, 1e-6);
    SV_ASSERT_EQ_I64(v.gen_throughput.n_ticks, 2);
    ASSERT_NEAR(v.gen_throughput.mae, 1.0, 1e-9);
    ASSERT_NEAR(v.gen_throughput.mape, 10.0, 1e-9);
    ASSERT_NEAR(v.prompt_throughput.mae, 0.0, 0);
    sv_test_rmtree(dir);
}

static void test_validate_measured_against_itself(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim/validation/RTXPRO6000/Llama-3.1-8B",
                      "the measured RTXPRO6000 Llama-3.1-8B case");
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *csv = g_build_filename(dir, "requests.csv", NULL);
    CU_ASSERT_FATAL(convert_measured(CASE_DIR "/vllm/requests.jsonl", csv));
    g_autofree char *ts = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(CASE_DIR "/vllm/timeseries.csv", &ts, NULL, NULL));
    g_autofree char *ts_path = g_build_filename(dir, "timeseries.csv", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(ts_path, ts, -1, NULL));

    struct sv_metrics_validation v;
    g_autoptr(GError) err = NULL;
    CU_ASSERT_FATAL(sv_metrics_validate(CASE_DIR "/vllm", dir, &v, &err));
    g_autofree char *txt = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(CASE_DIR "/validation/summary.txt", &txt, NULL, NULL));
    check_metric_vs_summary(txt, "TTFT", &v.ttft);
    check_metric_vs_summary(txt, "TPOT", &v.tpot);
    check_metric_vs_summary(txt, "Latency", &v.latency);
    SV_ASSERT_EQ_I64(v.ttft.n_measured, 300);
    SV_ASSERT_EQ_I64(v.ttft.n_simulated, 300);
    ASSERT_NEAR(v.gen_throughput.mae, 0.0, 0);
    ASSERT_NEAR(v.prompt_throughput.mape, 0.0, 0);
    ASSERT_NEAR(v.running.mae, 0.0, 0);
    SV_ASSERT_EQ_I64(v.gen_throughput.n_ticks, 67); /* timeseries.csv: 67 rows */

    /* the simulated series one tick longer and with gen doubled at t=1 (166 -> 332):
     * MAE = 166 / 68 ticks (the extra tick has measured 0: counted, not in MAPE);
     * MAPE = 100 % / 67 */
    g_autofree char *ts2 = g_strdup_printf("%s68.0,0.0,0.0,0,0,0.0\n", ts);
    char *row1 = strstr(ts2, "\n1.0,9069.0,166.0,");
    CU_ASSERT_PTR_NOT_NULL_FATAL(row1);
    memcpy(row1 + strlen("\n1.0,9069.0,"), "332.0", 5);
    CU_ASSERT_FATAL(g_file_set_contents(ts_path, ts2, -1, NULL));
    CU_ASSERT_FATAL(sv_metrics_validate(CASE_DIR "/vllm", dir, &v, &err));
    SV_ASSERT_EQ_I64(v.gen_throughput.n_ticks, 68);
    ASSERT_NEAR(v.gen_throughput.mae, 166.0 / 68, 1e-9);
    ASSERT_NEAR(v.gen_throughput.mape, 100.0 / 67, 1e-9);
    ASSERT_NEAR(v.prompt_throughput.mae, 0.0, 0);

    /* JSON output */
    g_autofree char *jpath = g_build_filename(dir, "v.json", NULL);
    CU_ASSERT(sv_metrics_validation_write_json(&v, jpath, &err));
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_file(p, jpath, NULL));
    JsonObject *o = json_node_get_object(json_parser_get_root(p));
    ASSERT_NEAR(jget(o, "ttft.mean.measured_ms"), 7097.2, 0.05);
    ASSERT_NEAR(jget(o, "timeseries.gen_throughput.mae"), 166.0 / 68, 1e-9);

    /* a bad line names the file and line */
    g_autofree char *bad = g_build_filename(dir, "bad", NULL);
    g_mkdir(bad, 0755);
    g_autofree char *bad_req = g_build_filename(bad, "requests.csv", NULL);
    CU_ASSERT(g_file_set_contents(
        bad_req, "request_id,ttft_ns,e2e_ns,output_tokens\n0,5,7,2\n1,x,7,2\n", -1, NULL));
    g_autofree char *bad_ts = g_build_filename(bad, "timeseries.csv", NULL);
    CU_ASSERT(g_file_set_contents(bad_ts, ts, -1, NULL));
    CU_ASSERT(!sv_metrics_validate(CASE_DIR "/vllm", bad, &v, &err));
    CU_ASSERT(err != NULL && strstr(err->message, "requests.csv:3") != NULL);
    g_clear_error(&err);
    sv_test_rmtree(dir);
}

#ifdef SV_TEST_CLI
static void test_validate_cli(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim/validation/RTXPRO6000/Llama-3.1-8B",
                      "the measured RTXPRO6000 Llama-3.1-8B case");
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *csv = g_build_filename(dir, "requests.csv", NULL);
    CU_ASSERT_FATAL(convert_measured(CASE_DIR "/vllm/requests.jsonl", csv));
    g_autofree char *ts = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(CASE_DIR "/vllm/timeseries.csv", &ts, NULL, NULL));
    g_autofree char *ts_path = g_build_filename(dir, "timeseries.csv", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(ts_path, ts, -1, NULL));
    const char *argv[] = {SV_SERVESIM_BIN, "validate", "--measured", CASE_DIR "/vllm",
                          "--simulated",   dir,        NULL};
    g_autofree char *out = NULL, *errs = NULL;
    int status = -1;
    CU_ASSERT_FATAL(sv_test_spawn(argv, &out, &errs, &status));
    CU_ASSERT_EQUAL(status, 0);
    /* summary.txt's layout: label, vLLM, Sim, diff */
    CU_ASSERT(strstr(out, "TTFT Mean                      7097.2      7097.2     +0.0%") != NULL ||
              strstr(out, "TTFT Mean                      7097.2      7097.2     -0.0%") != NULL);
    g_autofree char *vj = g_build_filename(dir, "validation.json", NULL);
    CU_ASSERT(g_file_test(vj, G_FILE_TEST_IS_REGULAR));
    const char *argv2[] = {SV_SERVESIM_BIN, "validate", "--measured", CASE_DIR "/vllm", NULL};
    g_free(out);
    g_free(errs);
    out = errs = NULL;
    CU_ASSERT_FATAL(sv_test_spawn(argv2, &out, &errs, &status));
    CU_ASSERT(status != 0);
    CU_ASSERT(strstr(errs, "servesim validate:") != NULL);
    sv_test_rmtree(dir);
}
#endif

int main(void)
{
    static const sv_test_case pct_cases[] = {
        {"percentile_sorted", test_percentile_sorted},
        {"quantile_exact_unsorted", test_quantile_exact_unsorted},
        {"quantile_sketch_error", test_quantile_sketch_error},
        {NULL, NULL},
    };
    static const sv_test_case writer_cases[] = {
        {"synthetic_stream", test_writers_synthetic},
        {"reorder_spill", test_reorder_spill},
        {"atomic_on_error", test_atomic_on_error},
        {NULL, NULL},
    };
    static const sv_test_case validate_cases[] = {
        {"tiny_pair", test_validate_tiny_pair},
        {"measured_against_itself", test_validate_measured_against_itself},
#ifdef SV_TEST_CLI
        {"cli", test_validate_cli},
#endif
        {NULL, NULL},
    };
    sv_test_add_suite("metrics_percentiles", pct_cases);
    sv_test_add_suite("metrics_writers", writer_cases);
    sv_test_add_suite("metrics_validate", validate_cases);
    return sv_test_run();
}
