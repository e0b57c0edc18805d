/* Attention/FFN disaggregation of MoE models: expert parallelism in the FFN group and top-k
 * dispatch (msg/afd_run.c, planner/afd.c; docs/afd.md "MoE: expert parallelism"). Attention on one
 * H100, experts sharded over A100s, on a one-node FullyConnected network whose links move exactly
 * 8 bytes per ns (bw_gbps = 8 x 10^9 / 2^30, as tests/parallel/test_afd_run.c) with 1,000 ns
 * latency. Expected bytes, messages and routing splits are worked by hand from the models'
 * config.json values (compute/model.c: Qwen3-30B-A3B hidden 2,048, 48 layers, 128 experts,
 * top-8; Mixtral-8x7B hidden 4,096, 32 layers, 8 experts, top-2) and msg/expert.c's balanced
 * rule; the schedule's makespan by hand from the operator times compute/ gives each side. */
#include "planner/planner.h"
#include "tests/parallel/afd_util.h"
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

static void on_iter(void *ctx, const struct sv_msg_iter_done *s)
{
    g_array_append_val((GArray *)ctx, *s);
}

/* n requests arriving at 0, `in` prompt tokens and 2 output tokens each: a prefill iteration of
 * n chunks, then a decode iteration of n decodes of KV `in`. */
static gboolean run(const char *json, int n, int in, const char *routing, GArray *it,
                    struct sv_planner_run_result *res, GError **error)
{
    struct sv_planner_run_observer obs = {.on_iteration = on_iter, .ctx = it};
    return sv_test_afd_run(json, n, in, routing, NULL, &obs, res, error);
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
    sv_compute_latency *la, *lf;
    sv_test_afd_models(QWEN, &m, &la, &lf);
    int64_t kv2[] = {16, 16}, kv4[] = {16, 16, 16, 16};
    struct sv_compute_batch_shape two, four;
    sv_compute_batch_shape_init(&two, NULL, NULL, 0, kv2, 2);
    sv_compute_batch_shape_init(&four, NULL, NULL, 0, kv4, 4);
    struct sv_compute_iter_time ta, tw;
    sv_compute_iter_time(la, &two, 0, 1, &ta);
    sv_compute_iter_time(la, &four, 0, 48, &tw);
    sv_time a = sv_test_afd_chain_ns(ta.layer, ta.n_layer, sv_compute_layer_seq(m.arch), 0);
    sv_time f = expert_ns(lf, &two, 8, 8, 8);
    sv_time pro = sv_test_afd_chain_ns(tw.prologue, tw.n_prologue, sv_compute_layer_seq(m.arch), 2);
    sv_time head = sv_test_afd_chain_ns(tw.head, tw.n_head, sv_compute_layer_seq(m.arch), 2);
    sv_time x = LAT_NS + 8 * 2048 * 2 / 8;
    SV_ASSERT_EQ_I64(x, 5096);
    CU_ASSERT_FATAL(f >= a + 3 * x); /* the FFN-bound regime */
    sv_time expect = pro + a + 2 * x + (sv_time)48 * 2 * f + x + head;
    SV_ASSERT_EQ_I64(dec->end_ns - dec->start_ns, expect);
    /* No overlap (m = 1 per micro-batch in turn): L·m·(a + 2x + f + x) in the middle. */
    CU_ASSERT(dec->end_ns - dec->start_ns < pro + (sv_time)48 * 2 * (a + 3 * x + f) + head);
    sv_compute_latency_free(la);
    sv_compute_latency_free(lf);
    g_array_free(it, TRUE);
}

/* The decode iteration of `json` (n requests of 16 + 2 tokens) against the FFN-bound closed form
 * with transfers x_first (the first rank the attention rank sends to) and x_last (the last rank
 * to receive, whose combine ends the layer): pro + a + (dispatches up to the last rank) + L·m·f +
 * x_last + head. `f` is the slowest rank's expert block; asserts the regime's condition. */
static void check_decode(const char *model, int64_t layers, int n,
                         const struct sv_msg_iter_done *dec, sv_time dispatch_ns, sv_time f,
                         sv_time x_last)
{
    struct sv_compute_model_cfg m;
    struct sv_compute_hw_cfg h100;
    CU_ASSERT_FATAL(sv_compute_model_lookup(model, NULL, &m, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100", &h100, NULL));
    sv_compute_latency *la = sv_compute_latency_new_roofline(&m, &h100, 1, NULL, NULL);
    CU_ASSERT_FATAL(la != NULL);
    sv_compute_latency_set_cudagraph(la, 128, 2048);
    int64_t kv[8] = {16, 16, 16, 16, 16, 16, 16, 16};
    struct sv_compute_batch_shape mb, all;
    sv_compute_batch_shape_init(&mb, NULL, NULL, 0, kv, n / 2);
    sv_compute_batch_shape_init(&all, NULL, NULL, 0, kv, n);
    struct sv_compute_iter_time ta, tw;
    sv_compute_iter_time(la, &mb, 0, 1, &ta);
    sv_compute_iter_time(la, &all, 0, layers, &tw);
    sv_time a = sv_test_afd_chain_ns(ta.layer, ta.n_layer, sv_compute_layer_seq(m.arch), 0);
    sv_time pro = sv_test_afd_chain_ns(tw.prologue, tw.n_prologue, sv_compute_layer_seq(m.arch), 2);
    sv_time head = sv_test_afd_chain_ns(tw.head, tw.n_head, sv_compute_layer_seq(m.arch), 2);
    CU_ASSERT_FATAL(f >= a + dispatch_ns + x_last); /* the FFN-bound regime */
    SV_ASSERT_EQ_I64(dec->end_ns - dec->start_ns,
                     pro + a + dispatch_ns + layers * 2 * f + x_last + head);
    sv_compute_latency_free(la);
}

/* Mixtral-8x7B, ffn_npus 4 (2 experts each: rank of expert e = e / 2), balanced routing, two
 * requests of 16 + 2 tokens, one per micro-batch. A prefill micro-batch of 16 tokens has 32
 * pairs, 4 per expert, 8 per rank: 4 messages each way. A decode micro-batch of 1 token has 2
 * pairs, on experts floor((2i + 1) x 8 / 4) = 2 and 6, i.e. ranks 1 and 3 only: ranks 0 and 2
 * get no message and run nothing. Bytes: 32 layers x 2 directions x (2 x 16 + 2 x 1) tokens x 2 x
 * 8,192 = 35,651,584; messages 32 x 2 micro-batches x 2 directions x (4 + 2) = 768 (1,024 if
 * every rank were sent every micro-batch). Decode: rank 1's rows go first, then rank 3's, one
 * row each, x = 1,000 + 8,192 / 8 = 2,024 ns; both run one token on one expert (f). */
static void test_mixtral_ep4_sparse(void)
{
    g_autofree char *json =
        cluster_json(MIXTRAL, "{\"ffn_hardware\": \"A100\", \"ffn_npus\": 4}", "");
    GArray *it = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    struct sv_planner_run_result res;
    g_autoptr(GError) e = NULL;
    gboolean ok = run(json, 2, 16, "balanced", it, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    CU_ASSERT_EQUAL_FATAL(it->len, 2);
    SV_ASSERT_EQ_I64(res.net_bytes, (uint64_t)32 * 2 * 34 * 2 * 8192);
    SV_ASSERT_EQ_I64(res.net_bytes, 35651584);
    SV_ASSERT_EQ_I64(res.net_messages, 768);
    struct sv_compute_model_cfg m;
    struct sv_compute_hw_cfg a100;
    CU_ASSERT_FATAL(sv_compute_model_lookup(MIXTRAL, NULL, &m, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("A100", &a100, NULL));
    sv_compute_latency *lf = sv_compute_latency_new_roofline(&m, &a100, 1, NULL, NULL);
    sv_compute_latency_set_cudagraph(lf, 128, 2048);
    int64_t kv1[] = {16};
    struct sv_compute_batch_shape one;
    sv_compute_batch_shape_init(&one, NULL, NULL, 0, kv1, 1);
    sv_time x = LAT_NS + 8192 / 8;
    check_decode(MIXTRAL, 32, 2, &g_array_index(it, struct sv_msg_iter_done, 1), 2 * x,
                 expert_ns(lf, &one, 1, 2, 1), x);
    sv_compute_latency_free(lf);
    g_array_free(it, TRUE);
}

/* Round-robin routing puts a whole decode micro-batch on one rank: the cursor starts at expert 0,
 * each prefill micro-batch (32 tokens x 8 = 256 pairs, twice round the 128 experts) leaves it at
 * 0, then decode micro-batch 0 takes experts 0-15 and micro-batch 1 experts 16-31: all on FFN
 * rank 0 (experts 0-63), 16 pairs on 16 experts, one message of 16 x 4,096 bytes each way; rank 1
 * idles. The layer waits for that one loaded rank (x = 1,000 + 65,536 / 8 = 9,192 ns), so the
 * decode iteration is pro + a + x + L·m·f + x + head with f its 16-pair block: slower than the
 * balanced split of test_qwen_ep2, where each rank has 8. Messages: prefill 48 x 2 x 2 ranks x 2,
 * decode 48 x 2 x 1 x 2 = 576; bytes as balanced (tokens x top_k x hidden x 2 whatever the
 * split): 213,909,504. */
static void test_qwen_round_robin_skew(void)
{
    g_autofree char *json = cluster_json(QWEN, "{\"ffn_hardware\": \"A100\", \"ffn_npus\": 2}", "");
    GArray *it = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    GArray *bal = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    struct sv_planner_run_result res, rb;
    g_autoptr(GError) e = NULL;
    CU_ASSERT_FATAL(run(json, 4, 16, "round_robin", it, &res, &e));
    CU_ASSERT_FATAL(run(json, 4, 16, "balanced", bal, &rb, &e));
    CU_ASSERT_EQUAL_FATAL(it->len, 2);
    SV_ASSERT_EQ_I64(res.net_bytes, 213909504);
    SV_ASSERT_EQ_I64(res.net_messages, 576);
    struct sv_compute_model_cfg m;
    struct sv_compute_hw_cfg a100;
    CU_ASSERT_FATAL(sv_compute_model_lookup(QWEN, NULL, &m, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("A100", &a100, NULL));
    sv_compute_latency *lf = sv_compute_latency_new_roofline(&m, &a100, 1, NULL, NULL);
    sv_compute_latency_set_cudagraph(lf, 128, 2048);
    int64_t kv2[] = {16, 16};
    struct sv_compute_batch_shape two;
    sv_compute_batch_shape_init(&two, NULL, NULL, 0, kv2, 2);
    sv_time x = LAT_NS + 16 * 2048 * 2 / 8;
    SV_ASSERT_EQ_I64(x, 9192);
    const struct sv_msg_iter_done *dec = &g_array_index(it, struct sv_msg_iter_done, 1);
    check_decode(QWEN, 48, 4, dec, x, expert_ns(lf, &two, 16, 8, 16), x);
    const struct sv_msg_iter_done *bd = &g_array_index(bal, struct sv_msg_iter_done, 1);
    CU_ASSERT(dec->end_ns - dec->start_ns > bd->end_ns - bd->start_ns);
    sv_compute_latency_free(lf);
    g_array_free(it, TRUE);
    g_array_free(bal, TRUE);
}

/* "ffn_ep": false keeps the TP FFN group of a MoE model: each FFN rank gets every token once,
 * tokens x hidden x 2 bytes; EP (the default) sends each token once per selected expert, top_k =
 * 8 times as much. With one FFN device (no all-reduce, all 128 experts on it) over 48 layers, 2
 * directions and 2 x 32 + 2 x 2 tokens: TP 48 x 2 x 68 x 4,096 = 26,738,688 bytes, EP 8 x that
 * = 213,909,504, both in 48 x 2 micro-batches x 2 directions x 2 iterations = 384 messages. */
static void test_qwen_tp_ffn(void)
{
    g_autofree char *tp = cluster_json(QWEN, "{\"ffn_hardware\": \"A100\", \"ffn_ep\": false}", "");
    g_autofree char *ep = cluster_json(QWEN, "{\"ffn_hardware\": \"A100\"}", "");
    GArray *it = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    struct sv_planner_run_result rt, re;
    g_autoptr(GError) e = NULL;
    gboolean ok = run(tp, 4, 16, NULL, it, &rt, &e) && run(ep, 4, 16, NULL, it, &re, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    SV_ASSERT_EQ_I64(rt.net_bytes, 26738688);
    SV_ASSERT_EQ_I64(rt.net_messages, 384);
    SV_ASSERT_EQ_I64(re.net_bytes, 213909504);
    SV_ASSERT_EQ_I64(re.net_messages, 384);
    g_array_free(it, TRUE);
}

/* Same seed, same run with seeded random routing; the bytes are tokens x top_k x hidden x 2
 * whatever the draw (top_k distinct experts per token). */
static void test_random_same_seed(void)
{
    g_autofree char *json = cluster_json(QWEN, "{\"ffn_hardware\": \"A100\", \"ffn_npus\": 4}", "");
    GArray *i1 = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    GArray *i2 = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    struct sv_planner_run_result a, b;
    g_autoptr(GError) e = NULL;
    CU_ASSERT_FATAL(run(json, 4, 16, "random", i1, &a, &e));
    CU_ASSERT_FATAL(run(json, 4, 16, "random", i2, &b, &e));
    SV_ASSERT_EQ_I64(a.net_bytes, 213909504);
    SV_ASSERT_EQ_I64(b.net_bytes, a.net_bytes);
    SV_ASSERT_EQ_I64(b.net_messages, a.net_messages);
    SV_ASSERT_EQ_I64(b.end_ns, a.end_ns);
    CU_ASSERT_EQUAL_FATAL(i1->len, i2->len);
    for (guint k = 0; k < i1->len; k++)
        SV_ASSERT_EQ_I64(g_array_index(i1, struct sv_msg_iter_done, k).end_ns,
                         g_array_index(i2, struct sv_msg_iter_done, k).end_ns);
    g_array_free(i1, TRUE);
    g_array_free(i2, TRUE);
}

/* An attention TP group of 2 (tp_size 2) with 2 expert ranks: each attention rank dispatches its
 * half of the micro-batch's tokens (sequence-parallel: T / 2 each), routed on its own, and after
 * the combine the two attention ranks all-gather their halves. Balanced routing per half: a
 * prefill half of 16 tokens has 128 pairs, one per expert, 64 to each FFN rank; a decode half of
 * 1 token 8 pairs, 4 to each. Per layer and micro-batch of T tokens:
 * - M2N / N2M: T x 8 x 4,096 bytes each way, in 2 x 2 messages each way;
 * - the all-gather of the halves: each rank sends its chunk ceil(T / 2) x 4,096 to the other,
 *   2 messages, T x 4,096 bytes (T even here);
 * - the o_proj all-reduce on the attention pair: 2 S bytes in 4 messages, S = T x 4,096
 *   (tests/parallel/test_afd_run.c's TP 2).
 * Over 48 layers and 2 x 32 + 2 x 2 = 68 tokens: 213,909,504 + 13,369,344 + 26,738,688 =
 * 254,017,536 bytes; messages 48 x 4 micro-batches x (8 + 2 + 4) = 2,688. */
static void test_qwen_attention_tp2(void)
{
    g_autofree char *json = cluster_json(QWEN, "{\"ffn_hardware\": \"A100\", \"ffn_npus\": 2}",
                                         ", \"num_npus\": 2, \"tp_size\": 2");
    GArray *it = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    struct sv_planner_run_result res;
    g_autoptr(GError) e = NULL;
    gboolean ok = run(json, 4, 16, NULL, it, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    SV_ASSERT_EQ_I64(res.net_bytes, (uint64_t)48 * 68 * 4096 * (2 * 8 + 1 + 2));
    SV_ASSERT_EQ_I64(res.net_bytes, 254017536);
    SV_ASSERT_EQ_I64(res.net_messages, 2688);
    g_array_free(it, TRUE);
}

/* The attention TP group of 2 with fewer tokens than ranks (two requests of 16 + 2 tokens: the
 * decode micro-batches have one token each, so attention rank 1 has no rows to dispatch). Before
 * the collectives were issued in program order (docs/afd.md "Collective order") rank 1 issued its
 * all-gather ahead of its next all-reduce, the system layer paired the ranks' collectives wrongly
 * and the run stalled. Now it completes, and by hand per layer:
 * - prefill, 2 micro-batches of T = 16 (a 16-token chunk each), 8 tokens per attention rank:
 *   balanced routing of 8 tokens gives 64 pairs, one each on experts 1, 3, ..., 127, 32 per FFN
 *   rank; M2N / N2M 16 x 8 x 4,096 bytes each way in 2 x 2 messages each way; the all-gather
 *   2 x ceil(16 / 2) x 4,096 bytes in 2 messages; the o_proj all-reduce 2 x 16 x 4,096 in 4;
 * - decode, 2 micro-batches of T = 1: rank 0 has the token, rank 1 none; its 8 pairs land on
 *   experts 8, 24, ..., 120, 4 per FFN rank: M2N / N2M 8 x 4,096 bytes each way in 2 messages
 *   each way (rank 0 only); the all-gather still runs on both ranks with ceil(1 / 2) = 1 row
 *   each: 2 x 4,096 bytes in 2 messages; the all-reduce 2 x 4,096 in 4.
 * Per layer: 2 x (2 x 16 x 32,768 + 65,536 + 131,072) + 2 x (2 x 32,768 + 8,192 + 8,192) =
 * 2,654,208 bytes in 2 x (8 + 2 + 4) + 2 x (4 + 2 + 4) = 48 messages; x 48 layers. */
static void test_qwen_attention_tp2_sparse(void)
{
    g_autofree char *json = cluster_json(QWEN, "{\"ffn_hardware\": \"A100\", \"ffn_npus\": 2}",
                                         ", \"num_npus\": 2, \"tp_size\": 2");
    GArray *it = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    struct sv_planner_run_result res;
    g_autoptr(GError) e = NULL;
    gboolean ok = run(json, 2, 16, NULL, it, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    CU_ASSERT_EQUAL_FATAL(it->len, 2); /* the prefill, then the decode of both */
    SV_ASSERT_EQ_I64(g_array_index(it, struct sv_msg_iter_done, 1).n_decode, 2);
    SV_ASSERT_EQ_I64(res.net_bytes,
                     (uint64_t)48 * (2 * (2 * 16 * 8 * 4096 + 2 * 8 * 4096 + 2 * 16 * 4096) +
                                     2 * (2 * 8 * 4096 + 2 * 4096 + 2 * 4096)));
    SV_ASSERT_EQ_I64(res.net_bytes, 127401984);
    SV_ASSERT_EQ_I64(res.net_messages, 48 * (2 * (8 + 2 + 4) + 2 * (4 + 2 + 4)));
    SV_ASSERT_EQ_I64(res.net_messages, 2304);
    g_array_free(it, TRUE);
}

static void expect_error(const char *model, const char *afd, const char *extra, gboolean at_parse,
                         const char *what)
{
    g_autofree char *json = cluster_json(model, afd, extra);
    g_autoptr(GError) e = NULL;
    if (at_parse) {
        struct sv_planner_cluster_cfg *c = sv_test_afd_parse(json, &e);
        CU_ASSERT_PTR_NULL(c);
        sv_planner_cluster_free(c);
    } else {
        GArray *it = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
        struct sv_planner_run_result res;
        CU_ASSERT_FALSE(run(json, 1, 16, NULL, it, &res, &e));
        CU_ASSERT_EQUAL(it->len, 0); /* refused before anything ran */
        g_array_free(it, TRUE);
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    if (!strstr(e->message, what))
        fprintf(stderr, "got: %s\nwant: %s\n", e->message, what);
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, what));
}

static void test_errors(void)
{
    expect_error(QWEN, "{\"ffn_hardware\": \"A100\", \"ffn_npus\": 3}", "", FALSE,
                 "t.json: nodes[0].instances[0].afd.ffn_npus: 3 does not divide the 128 experts "
                 "of " QWEN);
    expect_error(MIXTRAL, "{\"ffn_hardware\": \"A100\", \"ffn_npus\": 16}", "", FALSE,
                 "t.json: nodes[0].instances[0].afd.ffn_npus: 16 does not divide the 8 experts");
    expect_error("meta-llama/Llama-3.1-8B", "{\"ffn_hardware\": \"A100\", \"ffn_ep\": true}", "",
                 FALSE,
                 "t.json: nodes[0].instances[0].afd.ffn_ep: meta-llama/Llama-3.1-8B has no "
                 "experts");
    expect_error(QWEN, "{\"ffn_hardware\": \"A100\", \"ffn_ep\": 1}", "", TRUE,
                 "t.json: nodes[0].instances[0].afd.ffn_ep: must be true or false");
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"qwen_ep2", test_qwen_ep2},
        {"mixtral_ep4_sparse", test_mixtral_ep4_sparse},
        {"qwen_round_robin_skew", test_qwen_round_robin_skew},
        {"qwen_tp_ffn", test_qwen_tp_ffn},
        {"random_same_seed", test_random_same_seed},
        {"qwen_attention_tp2", test_qwen_attention_tp2},
        {"qwen_attention_tp2_sparse", test_qwen_attention_tp2_sparse},
        {"errors", test_errors},
        {NULL, NULL},
    };
    sv_test_add_suite("afd_moe", cases);
    return sv_test_run();
}
