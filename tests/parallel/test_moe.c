/* MoE and expert parallelism on the cluster network (issue 10, item 4): the expert-compute key
 * of an EP rank, the dispatch / combine sizes of each exchange and layout, and their bytes on the
 * network. Expected values are hand computations from the model's shapes (Qwen3-30B-A3B: hidden
 * 2048, 128 experts, top-8, 48 layers, bf16) and ASTRA-sim's ring (docs/collectives.md), or the
 * profile bundle's own moe.csv row. */
#include "dag/dag.h"
#include "planner/planner.h"
#include "tests/test_util.h"

#include <math.h>
#include <string.h>

#define QWEN_MOE "Qwen/Qwen3-30B-A3B-Instruct-2507"
#define MOE_PROFILES "reference/llmservingsim/profiles"
#define MOE_BUNDLE MOE_PROFILES "/RTXPRO6000/Qwen/Qwen3-30B-A3B-Instruct-2507/bf16"

static struct sv_planner_cluster_cfg *cluster_from(const char *json)
{
    g_autoptr(GError) e = NULL;
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, json, -1, &e));
    struct sv_planner_cluster_cfg *c =
        sv_planner_cluster_from_json(json_parser_get_root(p), "t.json", &e);
    if (!c)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    return c;
}

/* n requests of `in` prompt and `out` output tokens, all arriving at t = 0. */
static char *write_trace(const char *dir, int n, int in, int out)
{
    g_autoptr(GString) s = g_string_new(NULL);
    for (int i = 0; i < n; i++)
        g_string_append_printf(s,
                               "{\"input_toks\": %d, \"output_toks\": %d, \"arrival_time_ns\": "
                               "0}\n",
                               in, out);
    char *path = g_build_filename(dir, "trace.jsonl", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(path, s->str, -1, NULL));
    return path;
}

struct moe_run {
    const char *json;
    int n, in, out;
    const char *moe_comm; /* NULL = allgather_reducescatter */
    const char *profiles; /* NULL = roofline */
    const char *emit_et;  /* NULL = none */
};

static gboolean run_moe(const struct moe_run *r, struct sv_planner_run_result *res, GError **error)
{
    struct sv_planner_cluster_cfg *c = cluster_from(r->json);
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *path = write_trace(dir, r->n, r->in, r->out);
    sv_wl_source *src = sv_wl_open(path, NULL, error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(src);
    struct sv_planner_run_cfg cfg = {0};
    cfg.cluster = c;
    cfg.workload = src;
    cfg.latency = r->profiles ? SV_PLANNER_RUN_LATENCY_PROFILE : SV_PLANNER_RUN_LATENCY_ROOFLINE;
    cfg.profiles_root = r->profiles;
    cfg.router_name = "round_robin";
    cfg.enable_prefix_caching = -1;
    cfg.enable_chunked_prefill = -1;
    cfg.reserve_full_isl = -1;
    cfg.moe_comm = r->moe_comm;
    cfg.emit_et_dir = r->emit_et;
    gboolean ok = sv_planner_run(&cfg, res, error);
    sv_wl_source_free(src);
    sv_planner_cluster_free(c);
    sv_test_rmtree(dir);
    return ok;
}

/* ---- the expert-compute key ----------------------------------------------------------------- */

/* The node named `name` in an ET file of one device (NULL when absent). */
static sv_time et_node_ns(const char *path, const char *name)
{
    g_autoptr(GError) e = NULL;
    g_autoptr(sv_dag) d = sv_dag_load_et(path, NULL, &e);
    if (!d) {
        fprintf(stderr, "%s\n", e->message);
        return -1;
    }
    for (size_t i = 0; i < sv_dag_node_count(d); i++) {
        const sv_dag_node *n = sv_dag_node_at(d, i);
        if (n->name && strcmp(n->name, name) == 0)
            return n->duration_ns;
    }
    return -1;
}

/* DP2 x EP2 (the Qwen3-30B-A3B case's layout) with its measured bundle: a first wave of two
 * 512-token prefills, one per member. Routed over the group, 1,024 tokens x top-8 = 8,192 pairs,
 * 4,096 on each rank's 64 experts: the rank's work is the moe.csv row of 4,096 / 8 = 512 tokens
 * on 64 experts (the profiler runs N tokens x top-8 pairs on one GPU), 499.914 us, not the
 * gathered 1,024 tokens' row (550.528 us) that the all-gather backend used to look up. */
static void test_expert_key(void)
{
    SV_REQUIRE_SHARED(MOE_BUNDLE, "the RTX PRO 6000 Qwen3-30B-A3B profile bundle");
#define MOE_INST                                                                                   \
    "{\"model_name\": \"" QWEN_MOE "\", \"hardware\": \"RTXPRO6000\", \"npu_mem\": "               \
    "{\"mem_size\": 96, \"mem_util\": 0.9}, \"num_npus\": 1, \"tp_size\": 1, \"ep_size\": 2, "     \
    "\"dp_group\": \"A\"}"
    g_autofree char *et_dir = sv_test_tmpdir();
    struct moe_run r = {
        .json = "{\"link_bw\": 16, \"link_latency\": 20000, \"nodes\": [{\"instances\": [" MOE_INST
                "," MOE_INST "]}]}",
        .n = 2,
        .in = 512,
        .out = 2,
        .profiles = SV_SHARED "/" MOE_PROFILES,
        .emit_et = et_dir,
    };
#undef MOE_INST
    struct sv_planner_run_result res;
    g_autoptr(GError) e = NULL;
    gboolean ok = run_moe(&r, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    SV_ASSERT_EQ_I64(res.requests, 2);

    struct sv_compute_model_cfg m;
    CU_ASSERT_FATAL(sv_compute_model_lookup(QWEN_MOE, NULL, &m, &e));
    g_autoptr(sv_compute_latency) lat =
        sv_compute_latency_new_profile(SV_SHARED "/" MOE_BUNDLE, &m, 1, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lat);
    int64_t chunk = 512, hist = 0;
    struct sv_compute_batch_shape s;
    sv_compute_batch_shape_init(&s, &chunk, &hist, 1, NULL, 0);
    s.moe_activated_experts = 64;
    s.moe_local_tokens = 512;
    sv_time own = sv_compute_op_time(lat, SV_COMPUTE_OP_MOE, &s);
    s.moe_local_tokens = 1024;
    sv_time gathered = sv_compute_op_time(lat, SV_COMPUTE_OP_MOE, &s);
    SV_ASSERT_EQ_I64(own, 499914);      /* moe.csv 512,64,499.914 */
    SV_ASSERT_EQ_I64(gathered, 550528); /* moe.csv 1024,64,550.528 */

    for (int dev = 0; dev < 2; dev++) {
        g_autofree char *name = g_strdup_printf("inst%d_iter0.%d.et", dev, dev);
        g_autofree char *path = g_build_filename(et_dir, name, NULL);
        CU_ASSERT_TRUE_FATAL(g_file_test(path, G_FILE_TEST_EXISTS));
        SV_ASSERT_EQ_I64(et_node_ns(path, "L0.moe"), own);
        SV_ASSERT_EQ_I64(et_node_ns(path, "L47.moe"), own);
    }
    sv_test_rmtree(et_dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"expert_key", test_expert_key},
        {NULL, NULL},
    };
    sv_test_add_suite("moe", cases);
    return sv_test_run();
}
