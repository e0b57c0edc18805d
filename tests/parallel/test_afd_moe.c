/* Attention/FFN disaggregation of MoE models: expert parallelism in the FFN group and top-k
 * dispatch (msg/afd_run.c, planner/afd.c; docs/afd.md "MoE: expert parallelism"). Attention on one
 * H100, experts sharded over A100s, on a one-node FullyConnected network whose links move exactly
 * 8 bytes per ns (bw_gbps = 8 x 10^9 / 2^30, as tests/parallel/test_afd_run.c) with 1,000 ns
 * latency. Expected bytes, messages and routing splits are worked by hand from the models'
 * config.json values (compute/model.c: Qwen3-30B-A3B hidden 2,048, 48 layers, 128 experts,
 * top-8; Mixtral-8x7B hidden 4,096, 32 layers, 8 experts, top-2) and msg/expert.c's balanced
 * rule; the schedule's makespan by hand from the operator times compute/ gives each side. */
#include "planner/planner.h"
#include "tests/test_util.h"

#include <string.h>

#define GBPS8 (8.0 * 1e9 / 1073741824.0)
#define LAT_NS 1000
#define QWEN "Qwen/Qwen3-30B-A3B-Instruct-2507"
#define MIXTRAL "mistralai/Mixtral-8x7B-v0.1"

static char *cluster_json(const char *model, const char *afd, const char *extra)
{
    return g_strdup_printf(
        "{\"link_bw\": %.17g, \"link_latency\": %d, \"engine\": \"vllm-0.10\", \"nodes\": "
        "[{\"instances\": [{\"model_name\": \"%s\", \"hardware\": \"H100\", "
        "\"npu_mem\": {\"mem_size\": 80}, \"max_num_seqs\": 128, \"max_num_batched_tokens\": "
        "2048%s, \"afd\": %s}]}]}",
        GBPS8, LAT_NS, model, extra, afd);
}

static struct sv_planner_cluster_cfg *parse(const char *json, GError **e)
{
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, json, -1, NULL));
    return sv_planner_cluster_from_json(json_parser_get_root(p), "t.json", e);
}

static void on_iter(void *ctx, const struct sv_msg_iter_done *s)
{
    g_array_append_val((GArray *)ctx, *s);
}

/* n requests arriving at 0, `in` prompt tokens and 2 output tokens each: a prefill iteration of
 * n chunks, then a decode iteration of n decodes of KV `in`. */
static gboolean run(const char *json, int n, int in, const char *routing, GArray *it,
                    struct sv_planner_run_result *res, GError **error)
{
    struct sv_planner_cluster_cfg *c = parse(json, error);
    if (!c)
        return FALSE;
    g_autofree char *dir = sv_test_tmpdir();
    g_autoptr(GString) s = g_string_new(NULL);
    for (int i = 0; i < n; i++)
        g_string_append_printf(
            s, "{\"input_toks\": %d, \"output_toks\": 2, \"arrival_time_ns\": 0}\n", in);
    g_autofree char *path = g_build_filename(dir, "trace.jsonl", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(path, s->str, -1, NULL));
    sv_wl_source *src = sv_wl_open(path, NULL, error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(src);
    struct sv_planner_run_observer obs = {.on_iteration = on_iter, .ctx = it};
    struct sv_planner_run_cfg cfg = {0};
    cfg.cluster = c;
    cfg.workload = src;
    cfg.latency = SV_PLANNER_RUN_LATENCY_ROOFLINE;
    cfg.host_model = SV_MSG_HOST_NONE;
    cfg.enable_prefix_caching = -1;
    cfg.enable_chunked_prefill = -1;
    cfg.reserve_full_isl = -1;
    cfg.expert_routing = routing;
    cfg.seed = 7;
    cfg.observer = &obs;
    gboolean ok = sv_planner_run(&cfg, res, error);
    sv_wl_source_free(src);
    sv_planner_cluster_free(c);
    sv_test_rmtree(dir);
    return ok;
}

/* A chain of operators as the executor runs it (a zero-time node still takes 1 ns); side 0: the
 * attention side (every layer op but the MoE block), 2: all. */
static sv_time chain_ns(const struct sv_compute_iter_op *ops, int n, int side)
{
    sv_time t = 0;
    for (int k = 0; k < n; k++)
        if (side == 2 || ops[k].op != SV_COMPUTE_OP_MOE)
            t += ops[k].ns > 0 ? ops[k].ns : 1;
    return t;
}

/* The expert block of one FFN rank with `pairs` token-expert pairs on `activated` of its experts,
 * as the EP path times a rank: the moe operator on the FFN device at TP 1 (a rank holds whole
 * experts) keyed by local tokens ceil(pairs / top_k). */
static sv_time expert_ns(sv_compute_latency *lf, const struct sv_compute_batch_shape *s,
                         int64_t pairs, int64_t top_k, int64_t activated)
{
    struct sv_compute_batch_shape t = *s;
    t.moe_local_tokens = (pairs + top_k - 1) / top_k;
    t.moe_activated_experts = activated;
    return sv_compute_op_time(lf, SV_COMPUTE_OP_MOE, &t);
}

/* Qwen3-30B-A3B, ffn_npus 2 (64 experts each, the default EP of a MoE model), two micro-batches,
 * balanced routing, four requests of 16 + 2 tokens (two sequences per micro-batch).
 *
 * Routing (msg/expert.c balanced: floor(T x 8 / 128) pairs per expert, the remainder one each to
 * experts floor((2i + 1) x 128 / (2 rem))): a prefill micro-batch of 2 x 16 tokens has 256 pairs,
 * two per expert, 128 per FFN rank; a decode micro-batch of 2 tokens has 16 pairs, one each on
 * experts 4, 12, ..., 60 (rank 0: experts 0-63) and 68, ..., 124 (rank 1): 8 per rank, 8
 * activated experts each.
 *
 * Bytes: per layer, micro-batch and direction tokens x top_k x hidden x 2 = T x 8 x 4,096, half
 * to each rank; over both iterations 48 layers x 2 directions x (2 x 32 + 2 x 2) tokens x 8 x
 * 4,096 = 213,909,504 bytes (the TP FFN group moves tokens x hidden x 2 to each rank: a quarter
 * of that with 2 ranks), in 48 x 2 micro-batches x 2 ranks x 2 directions x 2 iterations = 768
 * messages.
 *
 * Decode makespan: per layer the attention side a (H100, two decodes of KV 16), each rank's
 * expert block f (A100, 8 pairs on 8 experts: equal on both ranks), a transfer to or from one
 * rank x = 1,000 + 8 x 4,096 / 8 = 5,096 ns. The attention rank sends rank 0's rows, then rank 1's
 * (one send at a time), so rank 1 starts x after rank 0; with f >= a + 3x (asserted) neither rank
 * waits once it started, rank 1 finishes the last micro-batch at pro + a + 2x + L·m·f and its
 * combine arrives x later: iteration = prologue + a + 2x + L·m·f + x + head. */
static void test_qwen_ep2(void)
{
    g_autofree char *json = cluster_json(
        QWEN, "{\"ffn_hardware\": \"A100\", \"ffn_npus\": 2, \"micro_batches\": 2}", "");
    GArray *it = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    struct sv_planner_run_result res;
    g_autoptr(GError) e = NULL;
    gboolean ok = run(json, 4, 16, NULL, it, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    CU_ASSERT_EQUAL_FATAL(it->len, 2);
    SV_ASSERT_EQ_I64(res.net_bytes, (uint64_t)48 * 2 * 68 * 8 * 2048 * 2);
    SV_ASSERT_EQ_I64(res.net_bytes, 213909504);
    SV_ASSERT_EQ_I64(res.net_messages, 768);

    const struct sv_msg_iter_done *dec = &g_array_index(it, struct sv_msg_iter_done, 1);
    SV_ASSERT_EQ_I64(dec->n_decode, 4);
    struct sv_compute_model_cfg m;
    struct sv_compute_hw_cfg h100, a100;
    CU_ASSERT_FATAL(sv_compute_model_lookup(QWEN, NULL, &m, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100", &h100, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("A100", &a100, NULL));
    sv_compute_latency *la = sv_compute_latency_new_roofline(&m, &h100, 1, NULL, NULL);
    sv_compute_latency *lf = sv_compute_latency_new_roofline(&m, &a100, 1, NULL, NULL);
    CU_ASSERT_FATAL(la && lf);
    sv_compute_latency_set_cudagraph(la, 128, 2048);
    sv_compute_latency_set_cudagraph(lf, 128, 2048);
    int64_t kv2[] = {16, 16}, kv4[] = {16, 16, 16, 16};
    struct sv_compute_batch_shape two, four;
    sv_compute_batch_shape_init(&two, NULL, NULL, 0, kv2, 2);
    sv_compute_batch_shape_init(&four, NULL, NULL, 0, kv4, 4);
    struct sv_compute_iter_time ta, tw;
    sv_compute_iter_time(la, &two, 0, 1, &ta);
    sv_compute_iter_time(la, &four, 0, 48, &tw);
    sv_time a = chain_ns(ta.layer, ta.n_layer, 0);
    sv_time f = expert_ns(lf, &two, 8, 8, 8);
    sv_time pro = chain_ns(tw.prologue, tw.n_prologue, 2);
    sv_time head = chain_ns(tw.head, tw.n_head, 2);
    sv_time x = LAT_NS + 8 * 2048 * 2 / 8;
    SV_ASSERT_EQ_I64(x, 5096);
    fprintf(stderr, "qwen ep2: a %" G_GINT64_FORMAT " f %" G_GINT64_FORMAT "\n", a, f);
    CU_ASSERT_FATAL(f >= a + 3 * x); /* the FFN-bound regime */
    sv_time expect = pro + a + 2 * x + (sv_time)48 * 2 * f + x + head;
    SV_ASSERT_EQ_I64(dec->end_ns - dec->start_ns, expect);
    /* No overlap (m = 1 per micro-batch in turn): L·m·(a + 2x + f + x) in the middle. */
    CU_ASSERT(dec->end_ns - dec->start_ns < pro + (sv_time)48 * 2 * (a + 3 * x + f) + head);
    sv_compute_latency_free(la);
    sv_compute_latency_free(lf);
    g_array_free(it, TRUE);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"qwen_ep2", test_qwen_ep2},
        {NULL, NULL},
    };
    sv_test_add_suite("afd_moe", cases);
    return sv_test_run();
}
