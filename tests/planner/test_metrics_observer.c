/* The planner's observer feeding the output writer (planner/metrics_observer.c) on a real run. */
#include <math.h>
#include <string.h>

#include "metrics/metrics.h"
#include "planner/planner.h"
#include "tests/test_util.h"

#define ASSERT_NEAR(a, b, tol) CU_ASSERT(fabs((double)(a) - (double)(b)) <= (tol))

static char *read_text(const char *dir, const char *name)
{
    g_autofree char *p = g_build_filename(dir, name, NULL);
    char *text = NULL;
    if (!g_file_get_contents(p, &text, NULL, NULL))
        return NULL;
    return text;
}

/* The observer on a real run (Llama-3.1-8B on one H100, roofline, 200 requests of 256 + 32
 * tokens): conservation laws that hold whatever the latency model says. */
static void test_observer_run(void)
{
    g_autoptr(GError) err = NULL;
    struct sv_planner_cluster_cfg *cluster =
        sv_planner_cluster_single("meta-llama/Llama-3.1-8B", "H100-SXM", 1, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cluster);
    struct sv_wl_gen_cfg g = {0};
    g.seed = 7;
    g.count = 200;
    CU_ASSERT_FATAL(sv_wl_arrival_parse("poisson", 20.0, &g.arrival, &err));
    CU_ASSERT_FATAL(sv_wl_len_parse("256", TRUE, &g.input_len, &err));
    CU_ASSERT_FATAL(sv_wl_len_parse("32", FALSE, &g.output_len, &err));
    sv_wl_source *src = sv_wl_generator_new(&g, &err);
    sv_wl_len_clear(&g.input_len);
    sv_wl_len_clear(&g.output_len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(src);

    g_autofree char *dir = sv_test_tmpdir();
    struct sv_metrics_cfg mc = {.output_dir = dir, .n_instances = cluster->n_instances};
    sv_metrics *m = sv_metrics_new(&mc, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    struct sv_planner_run_observer obs;
    sv_planner_metrics_observer_init(m, &obs);
    struct sv_planner_run_cfg cfg = {0};
    cfg.cluster = cluster;
    cfg.workload = src;
    cfg.latency = SV_PLANNER_RUN_LATENCY_ROOFLINE;
    cfg.enable_prefix_caching = -1;
    cfg.enable_chunked_prefill = -1;
    cfg.reserve_full_isl = -1;
    cfg.observer = &obs;
    struct sv_planner_run_result res;
    CU_ASSERT_FATAL(sv_planner_run(&cfg, &res, &err));
    CU_ASSERT_FATAL(sv_metrics_finish(m, res.makespan_ns, res.requests, &err));
    const struct sv_metrics_summary *s = sv_metrics_get_summary(m);
    SV_ASSERT_EQ_I64(s->finished, 200);
    SV_ASSERT_EQ_I64(s->output_tokens, 200 * 32);
    SV_ASSERT_EQ_I64(s->itl.count, 200 * 31); /* 31 gaps per request */
    SV_ASSERT_EQ_I64(s->tpot.count, 200);

    /* requests.csv: ids 0..199 in order; TTFT mean from the rows = the summary's */
    g_autofree char *text = read_text(dir, "requests.csv");
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    SV_ASSERT_EQ_I64(g_strv_length(lines), 202);
    double ttft_sum = 0;
    gboolean ok = TRUE;
    for (int i = 1; i <= 200 && lines[i] != NULL; i++) {
        g_auto(GStrv) f = g_strsplit(lines[i], ",", -1);
        ok = ok && g_strv_length(f) == 16 && g_ascii_strtoll(f[0], NULL, 10) == i - 1 &&
             g_ascii_strtoll(f[6], NULL, 10) == 256 && g_ascii_strtoll(f[7], NULL, 10) == 32 &&
             g_ascii_strtoll(f[10], NULL, 10) ==
                 g_ascii_strtoll(f[4], NULL, 10) - g_ascii_strtoll(f[2], NULL, 10);
        ttft_sum += (double)g_ascii_strtoll(f[10], NULL, 10);
    }
    CU_ASSERT(ok);
    ASSERT_NEAR(ttft_sum / 200 / 1e6, s->ttft.mean, 1e-6);

    /* timeseries: every token counted once (tick = 1 s) */
    g_autofree char *ts = read_text(dir, "timeseries.csv");
    g_auto(GStrv) rows = g_strsplit(ts, "\n", -1);
    double prompt = 0, gen = 0;
    for (int i = 1; rows[i] != NULL && rows[i][0] != '\0'; i++) {
        g_auto(GStrv) f = g_strsplit(rows[i], ",", -1);
        prompt += g_ascii_strtod(f[1], NULL);
        gen += g_ascii_strtod(f[2], NULL);
    }
    ASSERT_NEAR(prompt, 200 * 256, 1e-6);
    ASSERT_NEAR(gen, 200 * 32, 1e-6);
    sv_metrics_free(m);
    sv_wl_source_free(src);
    sv_planner_cluster_free(cluster);
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"observer_run", test_observer_run},
        {NULL, NULL},
    };
    sv_test_add_suite("planner_metrics_observer", cases);
    return sv_test_run();
}
