/* Policy registry and plugins: the example router and batch scheduler loaded from their shared
 * objects change decisions in ways computed by hand below; bad paths, version mismatches,
 * duplicate and unknown names fail with messages naming what is wrong. */
#include "planner/planner.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <string.h>

#define CASE_CFG SV_SHARED "/reference/llmservingsim/validation/RTXPRO6000/Llama-3.1-8B/config.json"

static sv_registry *registry_with_plugins(void)
{
    GError *e = NULL;
    sv_registry *reg = sv_planner_registry_new(&e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(reg);
    CU_ASSERT_TRUE(sv_planner_plugin_load(reg, SV_PLUGIN_ROUTER, &e));
    CU_ASSERT_TRUE(sv_planner_plugin_load(reg, SV_PLUGIN_SCHED, &e));
    if (e)
        fprintf(stderr, "%s\n", e->message);
    g_clear_error(&e);
    return reg;
}

/* ---- router: a 2-instance run ------------------------------------------------------------ */

typedef struct {
    int32_t inst[8];
    int n;
} routed;

static void on_request(void *ctx, const struct sv_wl_outcome *rec)
{
    routed *r = ctx;
    if (rec->request_id < G_N_ELEMENTS(r->inst))
        r->inst[rec->request_id] = rec->instance;
    r->n++;
}

/* Five requests arrive at t = 0 with prompts 1000, 100, 100, 100, 500 tokens; arrivals of one
 * instant are all routed before any step runs (planner PRIO_ARRIVAL < msg steps).
 *   least_load (4 x waiting + running): queue counts 0/0 -> 0, 1/0 -> 1, 1/1 -> 0, 2/1 -> 1,
 *     2/2 -> 0: instances 0 1 0 1 0.
 *   shortest_queue_by_tokens (waiting tokens): 0/0 -> 0; 1000/0 -> 1; 1000/100 -> 1;
 *     1000/200 -> 1; 1000/300 -> 1: instances 0 1 1 1 1. */
static void run_two_instances(const sv_registry *reg, const char *router, routed *out)
{
    GError *e = NULL;
    struct sv_planner_cluster_cfg *c = sv_planner_cluster_load(CASE_CFG, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    c->instances = g_renew(struct sv_planner_instance_cfg, c->instances, 2);
    c->instances[1] = c->instances[0];
    c->instances[1].index = 1;
    c->n_instances = 2;
    char *dir = sv_test_tmpdir();
    char *path = g_build_filename(dir, "w.jsonl", NULL);
    const int in[5] = {1000, 100, 100, 100, 500};
    GString *js = g_string_new(NULL);
    for (int i = 0; i < 5; i++)
        g_string_append_printf(
            js, "{\"input_toks\": %d, \"output_toks\": 2, \"arrival_time_ns\": 0}\n", in[i]);
    CU_ASSERT_FATAL(g_file_set_contents(path, js->str, -1, NULL));
    g_string_free(js, TRUE);
    sv_wl_source *src = sv_wl_open(path, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(src);
    memset(out, 0, sizeof *out);
    struct sv_planner_run_observer obs = {.on_request = on_request, .ctx = out};
    struct sv_planner_run_cfg cfg = {
        .cluster = c,
        .workload = src,
        .latency = SV_PLANNER_RUN_LATENCY_ROOFLINE,
        .registry = reg,
        .router_name = router,
        .enable_prefix_caching = -1,
        .enable_chunked_prefill = -1,
        .reserve_full_isl = -1,
        .observer = &obs,
    };
    struct sv_planner_run_result res;
    gboolean ok = sv_planner_run(&cfg, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_TRUE(ok);
    g_clear_error(&e);
    CU_ASSERT_EQUAL(out->n, 5);
    sv_wl_source_free(src);
    sv_planner_cluster_free(c);
    sv_test_rmtree(dir);
    g_free(path);
    g_free(dir);
}

static void test_router_plugin(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim/validation/RTXPRO6000/Llama-3.1-8B",
                      "the RTXPRO6000 validation case config");
    sv_registry *reg = registry_with_plugins();
    routed a, b;
    run_two_instances(reg, "least_load", &a);
    run_two_instances(reg, "shortest_queue_by_tokens", &b);
    const int32_t want_a[5] = {0, 1, 0, 1, 0}, want_b[5] = {0, 1, 1, 1, 1};
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_EQUAL(a.inst[i], want_a[i]);
        CU_ASSERT_EQUAL(b.inst[i], want_b[i]);
    }
    CU_ASSERT_STRING_EQUAL(sv_registry_origin(reg, SV_REGISTRY_ROUTER, "shortest_queue_by_tokens"),
                           "examples/plugins/shortest_queue_router.c");
    sv_registry_free(reg);
}

/* ---- batch scheduler: manual steps of one group -------------------------------------------- */

/* Two requests (prompts 80 and 60, 3 output tokens) in a group with a 100-token budget and a
 * large pool. vllm chunks: step 1 = r0 80 + r1 20; step 2 = r0 1 (decode) + r1 40.
 * fcfs_no_chunk never splits a prompt: step 1 = r0 80 (r1's 60 > the 20 left); step 2 = r0 1 +
 * r1 60. */
static void steps(const struct sv_msg_sched_ops *ops, int64_t got[2][2][2], guint n[2])
{
    sv_engine *eng = sv_engine_new(1);
    sv_memtier_kv_manager *kv = sv_memtier_kv_manager_new(1000, 16, FALSE);
    struct sv_msg_cfg mc = {
        .sched_ops = ops,
        .max_num_seqs = 8,
        .max_num_batched_tokens = 100,
        .enable_chunked_prefill = TRUE,
        .reserve_full_isl = TRUE,
        .kv = kv,
        .num_devices = 1,
        .manual = TRUE,
    };
    GError *e = NULL;
    sv_msg *m = sv_msg_new(eng, &mc, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    const int64_t in[2] = {80, 60};
    for (int i = 0; i < 2; i++) {
        sv_wl_req rc = {.request_id = (uint64_t)i, .input_tokens = in[i], .output_tokens = 3};
        CU_ASSERT_TRUE(sv_msg_submit(m, &rc, NULL, &e));
    }
    GArray *out = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_sched_entry));
    for (int s = 0; s < 2; s++) {
        g_array_set_size(out, 0);
        CU_ASSERT_EQUAL(sv_msg_schedule_step(m, out), 0);
        n[s] = out->len;
        for (guint k = 0; k < out->len && k < 2; k++) {
            const struct sv_msg_sched_entry *x = &g_array_index(out, struct sv_msg_sched_entry, k);
            got[s][k][0] = (int64_t)x->request_id;
            got[s][k][1] = x->num_new;
        }
        sv_msg_commit(m, (s + 1) * SV_NS_PER_MS);
    }
    g_array_free(out, TRUE);
    sv_msg_free(m);
    sv_memtier_kv_manager_free(kv);
    sv_engine_free(eng);
}

static void test_sched_plugin(void)
{
    sv_registry *reg = registry_with_plugins();
    GError *e = NULL;
    const struct sv_msg_sched_ops *vllm = sv_registry_lookup(reg, SV_REGISTRY_SCHED, "vllm", &e);
    const struct sv_msg_sched_ops *fcfs =
        sv_registry_lookup(reg, SV_REGISTRY_SCHED, "fcfs_no_chunk", &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(vllm);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fcfs);
    CU_ASSERT_PTR_EQUAL(vllm, sv_msg_sched_builtin(SV_MSG_SCHED_VLLM));
    int64_t g[2][2][2] = {{{0}}};
    guint n[2];
    steps(vllm, g, n);
    CU_ASSERT_EQUAL(n[0], 2);
    CU_ASSERT_EQUAL(n[1], 2);
    CU_ASSERT_TRUE(g[0][0][0] == 0 && g[0][0][1] == 80 && g[0][1][0] == 1 && g[0][1][1] == 20);
    CU_ASSERT_TRUE(g[1][0][0] == 0 && g[1][0][1] == 1 && g[1][1][0] == 1 && g[1][1][1] == 40);
    memset(g, 0, sizeof g);
    steps(fcfs, g, n);
    CU_ASSERT_EQUAL(n[0], 1);
    CU_ASSERT_EQUAL(n[1], 2);
    CU_ASSERT_TRUE(g[0][0][0] == 0 && g[0][0][1] == 80);
    CU_ASSERT_TRUE(g[1][0][0] == 0 && g[1][0][1] == 1 && g[1][1][0] == 1 && g[1][1][1] == 60);
    sv_registry_free(reg);
}

/* ---- failures ------------------------------------------------------------------------------ */

static void test_load_errors(void)
{
    g_autoptr(sv_registry) reg = sv_planner_registry_new(NULL);
    GError *e = NULL;
    CU_ASSERT_FALSE(sv_planner_plugin_load(reg, "/nonexistent/dir/libnope.so", &e));
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, "/nonexistent/dir/libnope.so"));
    g_clear_error(&e);

    CU_ASSERT_FALSE(sv_planner_plugin_load(reg, SV_PLUGIN_BADVER, &e));
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, SV_PLUGIN_BADVER));
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, "version 99"));
    g_clear_error(&e);

    /* The same plugin twice: its name is taken by the first load. */
    CU_ASSERT_TRUE(sv_planner_plugin_load(reg, SV_PLUGIN_ROUTER, &e));
    CU_ASSERT_FALSE(sv_planner_plugin_load(reg, SV_PLUGIN_ROUTER, &e));
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, "already registered"));
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, SV_PLUGIN_ROUTER));
    g_clear_error(&e);

    /* A built-in name cannot be taken either, nor a table of another version. */
    static const struct sv_planner_router_ops fake = {SV_REGISTRY_API_VERSION, NULL, NULL, NULL};
    static const struct sv_planner_router_ops old = {SV_REGISTRY_API_VERSION + 1, NULL, NULL, NULL};
    CU_ASSERT_FALSE(sv_registry_add(reg, SV_REGISTRY_ROUTER, "ROUND_ROBIN", &fake, "t", &e));
    g_clear_error(&e);
    CU_ASSERT_FALSE(sv_registry_add(reg, SV_REGISTRY_ROUTER, "other", &old, "t", &e));
    CU_ASSERT_PTR_NOT_NULL(e && strstr(e->message, "version"));
    g_clear_error(&e);
    CU_ASSERT_FALSE(sv_registry_add(reg, SV_REGISTRY_ROUTER, "bad name", &fake, "t", &e));
    g_clear_error(&e);

    /* Unknown names list what is registered, in registration order. */
    CU_ASSERT_PTR_NULL(sv_registry_lookup(reg, SV_REGISTRY_SCHED, "fifo", &e));
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_STRING_EQUAL(e->message,
                           "unknown scheduler 'fifo' (registered: vllm, static, dynamic)");
    g_clear_error(&e);
    CU_ASSERT_PTR_NOT_NULL(sv_registry_lookup(reg, SV_REGISTRY_KV_EVICT, "LRU", NULL));
    CU_ASSERT_STRING_EQUAL(sv_registry_param("zipf:1.5"), "1.5");
    CU_ASSERT_PTR_NULL(sv_registry_param("zipf"));
}

/* ---- expert routing built-ins ------------------------------------------------------------- */

static void route_once(sv_registry *reg, const char *name, sv_rng *rng,
                       const struct sv_msg_expert_route_req *q, int64_t *counts, int calls)
{
    const struct sv_msg_expert_route_ops *ops =
        sv_registry_lookup(reg, SV_REGISTRY_EXPERT_ROUTE, name, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ops);
    void *st = ops->create(sv_registry_param(name), rng, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    for (int i = 0; i < calls; i++)
        ops->route(st, q, counts);
    ops->destroy(st);
}

static void test_expert_routing(void)
{
    g_autoptr(sv_registry) reg = sv_planner_registry_new(NULL);
    sv_rng *rng = sv_rng_new(7, "test/experts");
    int64_t c[8];
    /* 10 tokens x top-2 = 20 choices over 8 experts: 2 each, the 4 left over to the midpoints
     * of 4 slices of 2 experts, floor((2i + 1) 8 / 8) = 1, 3, 5, 7: 2 3 2 3 2 3 2 3. */
    struct sv_msg_expert_route_req q = {.layer = 0, .tokens = 10, .n_experts = 8, .top_k = 2};
    route_once(reg, "balanced", rng, &q, c, 1);
    const int64_t bal[8] = {2, 3, 2, 3, 2, 3, 2, 3};
    for (int e = 0; e < 8; e++)
        CU_ASSERT_EQUAL(c[e], bal[e]);
    /* round_robin twice: the second call starts at (0 + 20) mod 8 = 4, so its 4 extra choices go
     * to experts 4..7: 2 2 2 2 3 3 3 3. */
    route_once(reg, "round_robin", rng, &q, c, 2);
    const int64_t rr[8] = {2, 2, 2, 2, 3, 3, 3, 3};
    for (int e = 0; e < 8; e++)
        CU_ASSERT_EQUAL(c[e], rr[e]);
    /* random and zipf: every token picks top_k distinct experts, so counts sum to 2 x tokens and
     * none exceeds tokens. Zipf with S = 2 over 8 experts gives expert 0 weight 1 / H(8,2) =
     * 1 / 1.527 = 0.655 of one draw; with top-1 and 20000 tokens, 13,094 (sd 67; the test allows
     * +-200, 3 sd). */
    struct sv_msg_expert_route_req big = {.layer = 1, .tokens = 1000, .n_experts = 8, .top_k = 2};
    const char *names[2] = {"random", "zipf:1.0"};
    for (int p = 0; p < 2; p++) {
        route_once(reg, names[p], rng, &big, c, 1);
        int64_t sum = 0;
        for (int e = 0; e < 8; e++) {
            sum += c[e];
            CU_ASSERT_TRUE(c[e] <= 1000);
        }
        CU_ASSERT_EQUAL(sum, 2000);
    }
    struct sv_msg_expert_route_req top1 = {.layer = 1, .tokens = 20000, .n_experts = 8, .top_k = 1};
    route_once(reg, "zipf:2", rng, &top1, c, 1);
    CU_ASSERT_TRUE(c[0] > 13100 - 200 && c[0] < 13100 + 200);
    CU_ASSERT_TRUE(c[0] > c[1] && c[1] > c[7]);
    GError *e = NULL;
    const struct sv_msg_expert_route_ops *z =
        sv_registry_lookup(reg, SV_REGISTRY_EXPERT_ROUTE, "zipf", &e);
    CU_ASSERT_PTR_NULL(z->create(NULL, rng, &e)); /* zipf needs its exponent */
    CU_ASSERT_PTR_NOT_NULL(e);
    g_clear_error(&e);
    sv_rng_free(rng);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"router_plugin", test_router_plugin},
        {"sched_plugin", test_sched_plugin},
        {"load_errors", test_load_errors},
        {"expert_routing", test_expert_routing},
        {NULL, NULL},
    };
    sv_test_add_suite("plugins", cases);
    return sv_test_run();
}
