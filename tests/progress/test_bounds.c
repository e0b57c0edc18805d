/* Loops whose trip count a parameter sets are bounded, and a run that makes no progress stops
 * (docs/reliability.md, "Idle time and progress"): the zipf expert-routing sampler returns for
 * any exponent with the exact distribution, preferred-dataset-splits has a range, and a scheduler
 * that only ever recomputes the same token is stopped by the watchdog with a diagnosis. */
#include "planner/planner.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <string.h>

static const struct sv_msg_expert_route_ops *zipf_ops(sv_registry *reg)
{
    g_autoptr(GError) e = NULL;
    const struct sv_msg_expert_route_ops *ops =
        sv_registry_lookup(reg, SV_REGISTRY_EXPERT_ROUTE, "zipf", &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ops);
    return ops;
}

/* zipf:100 puts all but 2^-100 of the weight on expert 0: the sampler that repeated a draw until
 * it missed the taken experts never returned (issue 13). Top-2 of 128 is experts 0 and 1 for every
 * token (expert 2 instead of 1 has probability (2/3)^100 = 2.5e-18 per token). */
static void test_zipf_extreme_skew(void)
{
    g_autoptr(GError) e = NULL;
    g_autoptr(sv_registry) reg = sv_planner_registry_new(&e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(reg);
    const struct sv_msg_expert_route_ops *ops = zipf_ops(reg);
    sv_rng *rng = sv_rng_new(7, "test/zipf");
    int64_t counts[128];
    void *st = ops->create("100", rng, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    struct sv_msg_expert_route_req rq = {.tokens = 1000, .n_experts = 128, .top_k = 2};
    ops->route(st, &rq, counts);
    SV_ASSERT_EQ_I64(counts[0], 1000);
    SV_ASSERT_EQ_I64(counts[1], 1000);
    ops->destroy(st);

    /* zipf:1000, top-3 of 4: 3^-1000 and 4^-1000 underflow to 0 as doubles, yet the third draw
     * must pick expert 2 over 3 (ratio (4/3)^1000 ~ 1e125): the weights are summed in log space. */
    st = ops->create("1000", rng, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    rq = (struct sv_msg_expert_route_req){.tokens = 100, .n_experts = 4, .top_k = 3};
    ops->route(st, &rq, counts);
    SV_ASSERT_EQ_I64(counts[0], 100);
    SV_ASSERT_EQ_I64(counts[1], 100);
    SV_ASSERT_EQ_I64(counts[2], 100);
    SV_ASSERT_EQ_I64(counts[3], 0);
    ops->destroy(st);
    sv_rng_free(rng);
}

/* The distribution stays exact where the draw among untaken experts takes over: zipf:3 over 3
 * experts, top-2, weights w = (1, 1/8, 1/27), W = their sum. Expert 0 holds 86 % of the weight,
 * so after it is drawn the second draw is made among the untaken ones directly. Sequential
 * draws without replacement: P(e chosen) = w_e / W + sum_{f != e} (w_f / W) w_e / (W - w_f).
 * T = 60000 tokens, each count within 5 binomial sd of T P. */
static void test_zipf_exact_distribution(void)
{
    g_autoptr(GError) e = NULL;
    g_autoptr(sv_registry) reg = sv_planner_registry_new(&e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(reg);
    const struct sv_msg_expert_route_ops *ops = zipf_ops(reg);
    sv_rng *rng = sv_rng_new(11, "test/zipf-exact");
    void *st = ops->create("3", rng, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    const int64_t T = 60000;
    int64_t counts[3];
    struct sv_msg_expert_route_req rq = {.tokens = T, .n_experts = 3, .top_k = 2};
    ops->route(st, &rq, counts);
    const double w[3] = {1.0, 1.0 / 8, 1.0 / 27};
    double W = w[0] + w[1] + w[2];
    for (int x = 0; x < 3; x++) {
        double p = w[x] / W;
        for (int f = 0; f < 3; f++)
            if (f != x)
                p += w[f] / W * w[x] / (W - w[f]);
        double sd = sqrt((double)T * p * (1 - p));
        CU_ASSERT(fabs((double)counts[x] - (double)T * p) < 5 * sd);
    }
    SV_ASSERT_EQ_I64(counts[0] + counts[1] + counts[2], 2 * T);
    ops->destroy(st);
    sv_rng_free(rng);
}

/* preferred-dataset-splits: a replay's time grows with its square (16384 took 5.5 s for one
 * 1 MB all-reduce on 8 NPUs, 65536 over two minutes): 1 to 1024, an error naming the file, the
 * key and the range beyond. */
static void test_dataset_splits_range(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *p = g_build_filename(dir, "sys.json", NULL);
    const char *fmt = "{\"preferred-dataset-splits\": %s, \"all-reduce-implementation\": "
                      "[\"ring\"]}";
    const char *bad[] = {"1025", "1000000", "0", "-1"};
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *text = g_strdup_printf(fmt, bad[i]);
        CU_ASSERT_FATAL(g_file_set_contents(p, text, -1, NULL));
        struct sv_sys_cfg cfg;
        GError *err = NULL;
        CU_ASSERT_FALSE(sv_sys_cfg_load_json(p, &cfg, &err));
        CU_ASSERT_PTR_NOT_NULL_FATAL(err);
        CU_ASSERT_PTR_NOT_NULL(strstr(err->message, "sys.json"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err->message, "preferred-dataset-splits"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err->message, "from 1 to 1024"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err->message, bad[i]));
        g_clear_error(&err);
    }
    g_autofree char *ok = g_strdup_printf(fmt, "1024");
    CU_ASSERT_FATAL(g_file_set_contents(p, ok, -1, NULL));
    struct sv_sys_cfg cfg;
    GError *err = NULL;
    CU_ASSERT_TRUE(sv_sys_cfg_load_json(p, &cfg, &err));
    SV_ASSERT_EQ_I64(cfg.preferred_dataset_splits, 1024);
    sv_sys_cfg_clear(&cfg);
    sv_test_rmtree(dir);
}

/* ---- the progress watchdog ------------------------------------------------------------------
 *
 * A batch scheduler that never lets a request get anywhere: each step it preempts the running
 * request (recompute: its KV is dropped) and admits the head of the queue again with one token.
 * Every step computes one token and the clock advances, but after the first step no prompt token
 * is computed for the first time and none is ever produced: the run would go on until the engine's
 * horizon, 9 years of simulated time in 1-token steps. */
static void thrash_schedule(void *state, sv_msg_view *v)
{
    (void)state;
    if (sv_msg_view_num_running(v) > 0)
        sv_msg_view_preempt(v, 0);
    if (sv_msg_view_num_waiting(v) > 0)
        (void)sv_msg_view_admit_waiting(v, 1);
}

static const struct sv_msg_sched_ops thrash_ops = {
    .api_version = SV_REGISTRY_API_VERSION,
    .schedule = thrash_schedule,
};

static void test_watchdog(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cpath = sv_test_write_cluster(dir, "meta-llama/Llama-3.1-8B", "H100-SXM", 80);
    g_autofree char *wpath = g_build_filename(dir, "w.jsonl", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(
        wpath, "{\"input_toks\": 100, \"output_toks\": 4, \"arrival_time_ns\": 0}\n", -1, NULL));
    GError *e = NULL;
    sv_registry *reg = sv_planner_registry_new(&e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(reg);
    CU_ASSERT_FATAL(
        sv_registry_add(reg, SV_REGISTRY_SCHED, "thrash", &thrash_ops, "test_bounds.c", &e));
    struct sv_planner_cluster_cfg *c = sv_planner_cluster_load(cpath, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    sv_wl_source *src = sv_wl_open(wpath, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(src);
    struct sv_planner_run_cfg cfg = {
        .cluster = c,
        .workload = src,
        .latency = SV_PLANNER_RUN_LATENCY_ROOFLINE,
        .registry = reg,
        .scheduler_name = "thrash",
        .enable_prefix_caching = -1,
        .enable_chunked_prefill = -1,
        .reserve_full_isl = -1,
        .watchdog_events = 5000,
    };
    struct sv_planner_run_result res;
    gboolean ok = sv_planner_run(&cfg, &res, &e);
    CU_ASSERT_FALSE(ok);
    CU_ASSERT_TRUE(g_error_matches(e, SV_CORE_ERROR, SV_CORE_ERROR_STALL));
    if (e) {
        /* what is stuck: the instance, its one running request and the preemptions */
        CU_ASSERT_PTR_NOT_NULL(strstr(e->message, "makes no progress: 5000 events"));
        CU_ASSERT_PTR_NOT_NULL(strstr(e->message, "instance 0: 1 running, 0 waiting"));
        CU_ASSERT_PTR_NOT_NULL(strstr(e->message, "preemptions"));
    }
    g_clear_error(&e);
    SV_ASSERT_EQ_I64(res.submitted, 1);
    SV_ASSERT_EQ_I64(res.requests, 0);
    /* stopped after about 5000 events: a few steps per thousand events, not 9 years of them */
    CU_ASSERT(res.iterations > 100 && res.iterations < 5000);
    CU_ASSERT(res.preemptions + 1 >= res.iterations);
    sv_wl_source_free(src);
    sv_planner_cluster_free(c);
    sv_registry_free(reg);
    sv_test_rmtree(dir);
}

/* The watchdog leaves an ordinary run alone: progress marks come at least every step. */
static void test_watchdog_quiet_on_progress(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cpath = sv_test_write_cluster(dir, "meta-llama/Llama-3.1-8B", "H100-SXM", 80);
    g_autofree char *wpath = g_build_filename(dir, "w.jsonl", NULL);
    GString *w = g_string_new(NULL);
    for (int i = 0; i < 20; i++)
        g_string_append_printf(
            w, "{\"input_toks\": 3000, \"output_toks\": 50, \"arrival_time_ns\": %d}\n",
            i * 1000000);
    CU_ASSERT_FATAL(g_file_set_contents(wpath, w->str, -1, NULL));
    g_string_free(w, TRUE);
    GError *e = NULL;
    struct sv_planner_cluster_cfg *c = sv_planner_cluster_load(cpath, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    sv_wl_source *src = sv_wl_open(wpath, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(src);
    struct sv_planner_run_cfg cfg = {
        .cluster = c,
        .workload = src,
        .latency = SV_PLANNER_RUN_LATENCY_ROOFLINE,
        .enable_prefix_caching = -1,
        .enable_chunked_prefill = -1,
        .reserve_full_isl = -1,
        .watchdog_events = 50, /* a step is a few events: far below this */
    };
    struct sv_planner_run_result res;
    gboolean ok = sv_planner_run(&cfg, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_TRUE(ok);
    g_clear_error(&e);
    SV_ASSERT_EQ_I64(res.requests, 20);
    sv_wl_source_free(src);
    sv_planner_cluster_free(c);
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"zipf: extreme skew returns", test_zipf_extreme_skew},
        {"zipf: exact draw among untaken experts", test_zipf_exact_distribution},
        {"preferred-dataset-splits range", test_dataset_splits_range},
        {"watchdog stops a run that makes no progress", test_watchdog},
        {"watchdog leaves a progressing run alone", test_watchdog_quiet_on_progress},
        {NULL, NULL},
    };
    sv_test_add_suite("bounds", cases);
    return sv_test_run();
}
