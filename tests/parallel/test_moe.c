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

/* The exact duration (sv_duration_ns, not the truncated duration_micros) of the node named
 * `name` in an ET file of one device (-1 when absent). */
static sv_time et_node_ns(const char *path, const char *name)
{
    g_autoptr(GError) e = NULL;
    const struct sv_dag_et_opts precise = {.precise_durations = TRUE};
    g_autoptr(sv_dag) d = sv_dag_load_et(path, &precise, &e);
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

    /* the DP group's set (docs/chakra.md "Emitted sets"): member k is local NPU k */
    for (int dev = 0; dev < 2; dev++) {
        g_autofree char *name = g_strdup_printf("dp0_iter0.%d.et", dev);
        g_autofree char *path = g_build_filename(et_dir, name, NULL);
        CU_ASSERT_TRUE_FATAL(g_file_test(path, G_FILE_TEST_EXISTS));
        SV_ASSERT_EQ_I64(et_node_ns(path, "L0.moe"), own);
        SV_ASSERT_EQ_I64(et_node_ns(path, "L47.moe"), own);
    }
    sv_test_rmtree(et_dir);
}

/* ---- the exchange: sizes per layout ---------------------------------------------------------- */

static struct sv_msg_moe_xchg plan(int64_t tokens, int32_t dp, int32_t tp, int32_t ep,
                                   sv_msg_moe_comm comm)
{
    struct sv_msg_moe_xchg_req q = {
        .tokens = tokens,
        .dp_size = dp,
        .tp_size = tp,
        .ep_size = ep,
        .hidden_size = 2048,
        .num_experts = 128,
        .top_k = 8,
        .dtype_bytes = 2,
        .comm = comm,
    };
    struct sv_msg_moe_xchg x;
    sv_msg_moe_xchg_plan(&q, &x);
    return x;
}

/* Qwen3-30B-A3B sizes: a token's hidden state is 2048 x 2 = 4,096 B, with its 128 router logits
 * 4,352 B. */
static void test_xchg_plan(void)
{
    /* DP2 x EP2, tp 1, all-gather + reduce-scatter, T = 100: each rank all-gathers its 100
     * tokens' states and logits (comm_size = its chunk, 435,200 B) and reduce-scatters the
     * gathered 200 tokens' outputs (comm_size = the whole buffer, 2 x 409,600 = 819,200 B: each
     * rank sends the other its 100 rows, as physically). Before, both were 409,600 B, which gave
     * the reduce-scatter half its bytes. */
    struct sv_msg_moe_xchg x = plan(100, 2, 1, 2, SV_MSG_MOE_ALLGATHER_RS);
    SV_ASSERT_EQ_I64(x.src_tokens, 100);
    SV_ASSERT_EQ_I64(x.dispatch_type, SV_SYS_ALL_GATHER);
    SV_ASSERT_EQ_I64(x.dispatch_bytes, 435200);
    SV_ASSERT_EQ_I64(x.combine_type, SV_SYS_REDUCE_SCATTER);
    SV_ASSERT_EQ_I64(x.combine_bytes, 819200);
    SV_ASSERT_EQ_I64(x.tp_bytes, 0);

    /* all-to-all: a token reaches the other rank with P = 1 - (1/2)^8 = 255/256, so each rank
     * sends its peer ceil(100 x 255/256) = 100 tokens and keeps as many: comm_size 2 x 100 x
     * 4,096 = 819,200 B each way; T = 1,000: ceil(996.09) = 997 per peer, 8,167,424 B. */
    x = plan(100, 2, 1, 2, SV_MSG_MOE_ALLTOALL);
    SV_ASSERT_EQ_I64(x.dispatch_type, SV_SYS_ALL_TO_ALL);
    SV_ASSERT_EQ_I64(x.dispatch_bytes, 819200);
    SV_ASSERT_EQ_I64(x.combine_type, SV_SYS_ALL_TO_ALL);
    SV_ASSERT_EQ_I64(x.combine_bytes, 819200);
    x = plan(1000, 2, 1, 2, SV_MSG_MOE_ALLTOALL);
    SV_ASSERT_EQ_I64(x.dispatch_bytes, 8167424);
    /* EP4 (DP4), top-8: P = 1 - (3/4)^8 = 0.89989, T = 10: ceil(8.9989) = 9 per peer,
     * 4 x 9 x 4,096 = 147,456 B. */
    x = plan(10, 4, 1, 4, SV_MSG_MOE_ALLTOALL);
    SV_ASSERT_EQ_I64(x.dispatch_bytes, 147456);

    /* No DP (TP2, ep 2: single_node_moe_single_instance): nothing to dispatch, every TP rank
     * holds the batch; the MoE output is all-reduced over TP, 100 x 4,096 = 409,600 B, whatever
     * the exchange named. */
    for (int c = 0; c < 2; c++) {
        x = plan(100, 1, 2, 2, c ? SV_MSG_MOE_ALLTOALL : SV_MSG_MOE_ALLGATHER_RS);
        SV_ASSERT_EQ_I64(x.src_tokens, 0);
        SV_ASSERT_EQ_I64(x.dispatch_bytes, 0);
        SV_ASSERT_EQ_I64(x.combine_bytes, 0);
        SV_ASSERT_EQ_I64(x.tp_type, SV_SYS_ALL_REDUCE);
        SV_ASSERT_EQ_I64(x.tp_bytes, 409600);
    }

    /* DP2 x TP2, ep 4 (dual_node_moe_dp_ep_intra_inter_instance): sequence-parallel MoE, each
     * TP rank dispatches ceil(101 / 2) = 51 tokens: all-gather 51 x 4,352 = 221,952 B on the
     * 4-rank EP group, reduce-scatter of 4 x 51 x 4,096 = 835,584 B, then the TP pair gathers
     * its chunks back, 51 x 4,096 = 208,896 B. */
    x = plan(101, 2, 2, 4, SV_MSG_MOE_ALLGATHER_RS);
    SV_ASSERT_EQ_I64(x.src_tokens, 51);
    SV_ASSERT_EQ_I64(x.dispatch_bytes, 221952);
    SV_ASSERT_EQ_I64(x.combine_bytes, 835584);
    SV_ASSERT_EQ_I64(x.tp_type, SV_SYS_ALL_GATHER);
    SV_ASSERT_EQ_I64(x.tp_bytes, 208896);

    /* DP2 x TP2, ep 2 (single_node_moe_dp_tp_instance: EP on the DP dimension, each EP rank's
     * experts sharded over its 2 TP ranks): all 100 tokens dispatched per TP rank, 435,200 B;
     * reduce-scatter 819,200 B; the TP pair's partial sums all-reduced, 409,600 B. */
    x = plan(100, 2, 2, 2, SV_MSG_MOE_ALLGATHER_RS);
    SV_ASSERT_EQ_I64(x.src_tokens, 100);
    SV_ASSERT_EQ_I64(x.dispatch_bytes, 435200);
    SV_ASSERT_EQ_I64(x.combine_bytes, 819200);
    SV_ASSERT_EQ_I64(x.tp_type, SV_SYS_ALL_REDUCE);
    SV_ASSERT_EQ_I64(x.tp_bytes, 409600);
}

/* ---- the exchange: bytes on the network ------------------------------------------------------ */

#define H100_MOE(extra)                                                                            \
    "{\"model_name\": \"" QWEN_MOE                                                                 \
    "\", \"hardware\": \"H100\", \"npu_mem\": {\"mem_size\": 80}" extra "}"

/* Two requests of 100 + 2 tokens at t = 0, one per member: two waves, T = 100 (the prefills)
 * and T = 1 (one decode each), 48 MoE layers each. net_bytes counts every message: ASTRA-sim's
 * ring on a 2-rank group sends one message per rank per all-gather (its chunk) and per
 * reduce-scatter or all-to-all (half its comm_size), two of half the size per all-reduce. */
static void run_bytes(const char *json, const char *comm, uint64_t *bytes, uint64_t *msgs)
{
    struct moe_run r = {.json = json, .n = 2, .in = 100, .out = 2, .moe_comm = comm};
    struct sv_planner_run_result res;
    g_autoptr(GError) e = NULL;
    gboolean ok = run_moe(&r, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    SV_ASSERT_EQ_I64(res.requests, 2);
    *bytes = res.net_bytes;
    *msgs = res.net_messages;
}

static void test_xchg_bytes(void)
{
    const char *dp_ep =
        "{\"link_bw\": 16, \"link_latency\": 20000, \"nodes\": [{\"instances\": [" H100_MOE(
            ", \"num_npus\": 1, \"ep_size\": 2, \"dp_group\": \"A\"") "," H100_MOE(", "
                                                                                   "\"num_npus\": "
                                                                                   "1, "
                                                                                   "\"ep_size\": "
                                                                                   "2, "
                                                                                   "\"dp_group\": "
                                                                                   "\"A\"") "]}]}";
    uint64_t bytes, msgs;
    /* DP2 x EP2, all-gather + reduce-scatter: per layer 2 x T x 4,352 + 2 x T x 4,096 / 2 x 2
     * = T x 16,896: 48 x 16,896 x (100 + 1) = 81,911,808 B in 48 x 2 x 4 = 384 messages. */
    run_bytes(dp_ep, NULL, &bytes, &msgs);
    SV_ASSERT_EQ_I64(bytes, UINT64_C(81911808));
    SV_ASSERT_EQ_I64(msgs, 384);
    /* all-to-all: per layer 2 x (2 ranks x comm_size / 2), comm_size = 2 x ceil(T x 255/256) x
     * 4,096: T = 100 -> 1,638,400, T = 1 -> 16,384; x 48 = 79,429,632 B. */
    run_bytes(dp_ep, "alltoall", &bytes, &msgs);
    SV_ASSERT_EQ_I64(bytes, UINT64_C(79429632));
    SV_ASSERT_EQ_I64(msgs, 384);

    /* TP2 with ep 2, no DP, both requests on the one instance (T = 200, then 2): the o_proj
     * all-reduce and the MoE output's, 2 x T x 4,096 B each per layer: 48 x 4 x 4,096 x 202 =
     * 158,859,264 B, 48 x 2 x 2 x 4 = 768 messages. Before: an all-gather and a reduce-scatter
     * on the EP pair instead of the MoE all-reduce. */
    run_bytes("{\"link_bw\": 16, \"link_latency\": 20000, \"nodes\": [{\"instances\": [" H100_MOE(
                  ", \"num_npus\": 2, \"tp_size\": 2, \"ep_size\": 2") "]}]}",
              NULL, &bytes, &msgs);
    SV_ASSERT_EQ_I64(bytes, UINT64_C(158859264));
    SV_ASSERT_EQ_I64(msgs, 768);

    /* DP2 x TP2, ep 4 on one node of 4 devices: per layer and wave, with ts = ceil(T / 2):
     * all-gather on the 4-rank EP ring, 4 ranks x 3 messages of ts x 4,352; reduce-scatter,
     * 4 x 3 of ts x 4,096; the TP pairs' all-gather, 4 x 1 of ts x 4,096; each member's o_proj
     * all-reduce, 2 ranks x 2 of T x 4,096 / 2, so 4 x T x 4,096 for both. T = 100 (ts 50):
     * 7,526,400; T = 1 (ts 1): 134,144; x 48 = 367,706,112 B. Messages per layer and wave:
     * 12 + 12 + 4 + 8 = 36, x 96 = 3,456. */
    run_bytes("{\"link_bw\": 16, \"link_latency\": 20000, \"nodes\": [{\"instances\": [" H100_MOE(
                  ", \"num_npus\": 2, \"tp_size\": 2, \"ep_size\": 4, \"dp_group\": "
                  "\"A\"") "," H100_MOE(", \"num_npus\": 2, \"tp_size\": 2, \"ep_size\": 4, "
                                        "\"dp_group\": \"A\"") "]}]}",
              NULL, &bytes, &msgs);
    SV_ASSERT_EQ_I64(bytes, UINT64_C(367706112));
    SV_ASSERT_EQ_I64(msgs, 3456);
}

/* DP4 x EP4 (4 one-device members on one node, FullyConnected), all-to-all, four requests of
 * 100 + 2 tokens, one per member: the exchange goes straight to each peer (the group's direct
 * transport), 3 messages per rank per all-to-all instead of the ring's 4 x 3 / 2 = 6 relayed
 * steps. Per peer ceil(T x (1 - (3/4)^8)) = ceil(T x 0.89989) tokens: T = 100 -> 90, T = 1 ->
 * 1; a message is comm_size / 4 = that x 4,096 B. Per layer and wave 2 x 4 x 3 = 24 messages
 * (the EP group is the whole machine here, so it runs the dimension's implementation, also
 * direct on FullyConnected):
 * 24 x (368,640 + 4,096) x 48 = 429,391,872 B in 24 x 96 = 2,304 messages. */
static void test_xchg_direct(void)
{
    g_autoptr(GString) json =
        g_string_new("{\"link_bw\": 16, \"link_latency\": 20000, \"nodes\": [{\"instances\": [");
    for (int i = 0; i < 4; i++)
        g_string_append_printf(json,
                               "%s" H100_MOE(", \"num_npus\": 1, \"ep_size\": 4, "
                                             "\"dp_group\": \"A\""),
                               i ? "," : "");
    g_string_append(json, "]}]}");
    struct moe_run r = {.json = json->str, .n = 4, .in = 100, .out = 2, .moe_comm = "alltoall"};
    struct sv_planner_run_result res;
    g_autoptr(GError) e = NULL;
    gboolean ok = run_moe(&r, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    SV_ASSERT_EQ_I64(res.requests, 4);
    SV_ASSERT_EQ_I64(res.net_messages, 2304);
    SV_ASSERT_EQ_I64(res.net_bytes, UINT64_C(429391872));
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"expert_key", test_expert_key},
        {"xchg_plan", test_xchg_plan},
        {"xchg_bytes", test_xchg_bytes},
        {"xchg_direct", test_xchg_direct},
        {NULL, NULL},
    };
    sv_test_add_suite("moe", cases);
    return sv_test_run();
}
