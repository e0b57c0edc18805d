/* Several attention instances sharing one FFN group (afd.ffn_group: MegaScale-Infer's M:N;
 * planner/afd.c, msg/afd_group.c; docs/afd.md "Several attention instances sharing an FFN
 * group"). Llama-3.1-8B, two attention instances of one H100 each, one A100 FFN device between
 * them, two micro-batches, on a one-node network (FullyConnected: a link per pair of devices)
 * whose links move exactly 8 bytes per ns (bw_gbps = 8 x 10^9 / 2^30, as test_afd_run.c) with
 * 1,000 ns latency. Expected values are worked by hand from the model's shape and the operator
 * times compute/ gives each side (the roofline on the catalog devices), never from the run's own
 * output. */
#include "planner/planner.h"
#include "tests/parallel/afd_util.h"
#include "tests/test_util.h"

#include <string.h>

#define GBPS8 (8.0 * 1e9 / 1073741824.0)
#define LAT_NS 1000
#define HIDDEN 4096
#define LAYERS 32

/* Two instances; afd0 / afd1 their afd objects. */
static char *cluster_json(const char *afd0, const char *afd1, const char *model1)
{
    const char *inst = "{\"model_name\": \"%s\", \"hardware\": \"H100\", \"npu_mem\": "
                       "{\"mem_size\": 80}, \"max_num_seqs\": 128, \"max_num_batched_tokens\": "
                       "2048, \"afd\": %s}";
    g_autofree char *i0 = g_strdup_printf(inst, "meta-llama/Llama-3.1-8B", afd0);
    g_autofree char *i1 = g_strdup_printf(inst, model1 ? model1 : "meta-llama/Llama-3.1-8B", afd1);
    return g_strdup_printf("{\"link_bw\": %.17g, \"link_latency\": %d, \"engine\": \"vllm-0.10\", "
                           "\"nodes\": [{\"instances\": [%s, %s]}]}",
                           GBPS8, LAT_NS, i0, i1);
}

/* Two members of one model, both with afd object `afd`. */
static char *cluster_json_model(const char *model, const char *afd)
{
    const char *inst = "{\"model_name\": \"%s\", \"hardware\": \"H100\", \"npu_mem\": "
                       "{\"mem_size\": 80}, \"max_num_seqs\": 128, \"max_num_batched_tokens\": "
                       "2048, \"afd\": %s}";
    g_autofree char *i0 = g_strdup_printf(inst, model, afd);
    return g_strdup_printf("{\"link_bw\": %.17g, \"link_latency\": %d, \"engine\": \"vllm-0.10\", "
                           "\"nodes\": [{\"instances\": [%s, %s]}]}",
                           GBPS8, LAT_NS, i0, i0);
}

#define GROUPED "{\"ffn_hardware\": \"A100\", \"micro_batches\": 2, \"ffn_group\": \"g\"}"
#define OWN "{\"ffn_hardware\": \"A100\", \"micro_batches\": 2}"

static void on_iter(void *ctx, const struct sv_msg_iter_done *s)
{
    g_array_append_val((GArray *)ctx, *s);
}

/* n requests arriving at 0, 16 prompt tokens and 2 output tokens each (the default least-load
 * router alternates them over the two instances): a prefill wave, then a decode wave. */
static gboolean run(const char *json, int n, GArray *it, struct sv_planner_run_result *res,
                    GError **error)
{
    struct sv_planner_run_observer obs = {.on_iteration = on_iter, .ctx = it};
    return sv_test_afd_run(json, n, 16, NULL, NULL, &obs, res, error);
}

/* The iteration records of instance `inst`, in order. */
static const struct sv_msg_iter_done *iter_of(GArray *it, int32_t inst, int nth)
{
    for (guint i = 0; i < it->len; i++) {
        const struct sv_msg_iter_done *d = &g_array_index(it, struct sv_msg_iter_done, i);
        if (d->instance == inst && nth-- == 0)
            return d;
    }
    return NULL;
}

static int count_of(GArray *it, int32_t inst)
{
    int n = 0;
    for (guint i = 0; i < it->len; i++)
        n += g_array_index(it, struct sv_msg_iter_done, i).instance == inst;
    return n;
}

/* Operator times by hand from compute/: the models the run builds (roofline, catalog devices, TP
 * 1, CUDA-graph sizes 128 / 2048). */
typedef struct {
    sv_time a1;    /* attention side of one decode of KV 16, one layer (H100) */
    sv_time f1;    /* MLP side of one token (A100) */
    sv_time f2;    /* MLP side of two tokens, one from each member (A100) */
    sv_time pro2;  /* prologue of a member's two decodes */
    sv_time head2; /* head of a member's two decodes */
    sv_time pro1, head1;
} op_times;

static void op_times_get(op_times *t)
{
    struct sv_compute_model_cfg m;
    sv_compute_latency *la, *lf;
    sv_test_afd_models("meta-llama/Llama-3.1-8B", &m, &la, &lf);
    const struct sv_compute_layer_seq *seq = sv_compute_layer_seq(m.arch);
    int64_t kv1[] = {16}, kv2[] = {16, 16};
    struct sv_compute_batch_shape one, two;
    sv_compute_batch_shape_init(&one, NULL, NULL, 0, kv1, 1);
    sv_compute_batch_shape_init(&two, NULL, NULL, 0, kv2, 2);
    struct sv_compute_iter_time x;
    sv_compute_iter_time(la, &one, 0, 1, &x);
    t->a1 = sv_test_afd_chain_ns(x.layer, x.n_layer, seq, 0);
    sv_compute_iter_time(lf, &one, 0, 1, &x);
    t->f1 = sv_test_afd_chain_ns(x.layer, x.n_layer, seq, 1);
    sv_compute_iter_time(lf, &two, 0, 1, &x);
    t->f2 = sv_test_afd_chain_ns(x.layer, x.n_layer, seq, 1);
    sv_compute_iter_time(la, &two, 0, LAYERS, &x);
    t->pro2 = sv_test_afd_chain_ns(x.prologue, x.n_prologue, seq, 2);
    t->head2 = sv_test_afd_chain_ns(x.head, x.n_head, seq, 2);
    sv_compute_iter_time(la, &one, 0, LAYERS, &x);
    t->pro1 = sv_test_afd_chain_ns(x.prologue, x.n_prologue, seq, 2);
    t->head1 = sv_test_afd_chain_ns(x.head, x.n_head, seq, 2);
    sv_compute_latency_free(la);
    sv_compute_latency_free(lf);
}

/* Four requests, two per member: in the decode wave each member's micro-batch i is one decode
 * of KV 16, and the FFN op of (l, i) runs both members' tokens at once: f2, the MLP time at two
 * tokens. Per layer a member's attention takes a1 on its H100 and one transfer x = 1,000 +
 * 8,192 / 8 = 2,024 ns (1 token x 4,096 x 2 bytes), on its own link to the A100 (FullyConnected).
 * Both members dispatch at the same time; the A100 sends the combines one at a time, member 0's
 * first, so member 1's rows arrive x later. With f2 >= a1 + 3x the FFN device never waits once
 * it started (member 1's next dispatch arrives at most a1 + 3x after the FFN op it follows), so
 *   member 0: prologue + a1 + x + L·m·f2 + x + head,   member 1: the same + x.
 * Against two separate afd instances (an A100 each): prologue + a1 + x + L·m·f1 + x + head on
 * four devices instead of three. */
static void test_shared_ffn_makespan(void)
{
    op_times t;
    op_times_get(&t);
    sv_time x = LAT_NS + 1 * HIDDEN * 2 / 8;
    SV_ASSERT_EQ_I64(x, 2024);
    CU_ASSERT_FATAL(t.f2 >= t.a1 + 3 * x); /* the FFN-bound regime */
    CU_ASSERT(t.f2 > t.f1);                /* the FFN op covers two tokens, not one */

    g_autofree char *json = cluster_json(GROUPED, GROUPED, NULL);
    GArray *it = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    struct sv_planner_run_result res;
    g_autoptr(GError) e = NULL;
    gboolean ok = run(json, 4, it, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    CU_ASSERT_EQUAL_FATAL(count_of(it, 0), 2);
    CU_ASSERT_EQUAL_FATAL(count_of(it, 1), 2);
    const struct sv_msg_iter_done *d0 = iter_of(it, 0, 1), *d1 = iter_of(it, 1, 1);
    SV_ASSERT_EQ_I64(d0->n_decode, 2);
    SV_ASSERT_EQ_I64(d1->n_decode, 2);
    /* Lock-step: both members' decode iterations start together (the wave). */
    SV_ASSERT_EQ_I64(d0->start_ns, d1->start_ns);
    sv_time expect0 = t.pro2 + t.a1 + x + (sv_time)LAYERS * 2 * t.f2 + x + t.head2;
    SV_ASSERT_EQ_I64(d0->end_ns - d0->start_ns, expect0);
    SV_ASSERT_EQ_I64(d1->end_ns - d1->start_ns, expect0 + x);

    /* Bytes: per layer, micro-batch, member and direction its micro-batch's tokens x 4,096 x 2
     * (prefill: 16 tokens, decode: 1): 32 layers x 2 directions x 2 members x (2 x 16 + 2 x 1)
     * tokens x 8,192 bytes = 35,651,584, in 32 x 2 x 2 x 2 micro-batches x 2 waves = 512
     * messages. */
    SV_ASSERT_EQ_I64(res.net_bytes, (uint64_t)LAYERS * 2 * 2 * 34 * HIDDEN * 2);
    SV_ASSERT_EQ_I64(res.net_bytes, 35651584);
    SV_ASSERT_EQ_I64(res.net_messages, 512);

    /* The same requests on two separate afd instances, an A100 each: the same bytes, and per
     * member an FFN op of one token (f1) on its own device. */
    g_autofree char *sep = cluster_json(OWN, OWN, NULL);
    GArray *it2 = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    struct sv_planner_run_result res2;
    CU_ASSERT_FATAL(run(sep, 4, it2, &res2, &e));
    sv_time expect_sep = t.pro2 + t.a1 + x + (sv_time)LAYERS * 2 * t.f1 + x + t.head2;
    for (int32_t k = 0; k < 2; k++) {
        const struct sv_msg_iter_done *d = iter_of(it2, k, 1);
        CU_ASSERT_FATAL(d != NULL);
        SV_ASSERT_EQ_I64(d->end_ns - d->start_ns, expect_sep);
    }
    SV_ASSERT_EQ_I64(res2.net_bytes, res.net_bytes);
    /* Devices: the group places its A100 once (3 NPUs), separate instances twice (4). */
    struct sv_planner_cluster_cfg *cg = sv_test_afd_parse(json, &e),
                                  *cs = sv_test_afd_parse(sep, &e);
    CU_ASSERT_FATAL(cg && cs);
    SV_ASSERT_EQ_I64(sv_planner_instance_devices(&cg->instances[0]) +
                         sv_planner_instance_devices(&cg->instances[1]),
                     3);
    SV_ASSERT_EQ_I64(sv_planner_instance_devices(&cs->instances[0]) +
                         sv_planner_instance_devices(&cs->instances[1]),
                     4);
    SV_ASSERT_EQ_I64(cg->instances[1].afd_group_rank, 1);
    SV_ASSERT_EQ_I64(cg->instances[1].afd_group_owner, 0);
    sv_planner_cluster_free(cg);
    sv_planner_cluster_free(cs);
    g_array_free(it, TRUE);
    g_array_free(it2, TRUE);
}

/* One request: member 1 has nothing to run and joins every wave empty (no nodes, no records).
 * Member 0's decode is one micro-batch (fewer sequences than m) and nothing overlaps:
 * prologue + L·(a1 + x + f1 + x) + head, as its own afd instance would run it. */
static void test_idle_member(void)
{
    op_times t;
    op_times_get(&t);
    sv_time x = LAT_NS + 1 * HIDDEN * 2 / 8;
    g_autofree char *json = cluster_json(GROUPED, GROUPED, NULL);
    GArray *it = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    struct sv_planner_run_result res;
    g_autoptr(GError) e = NULL;
    CU_ASSERT_FATAL(run(json, 1, it, &res, &e));
    SV_ASSERT_EQ_I64(count_of(it, 1), 0);
    CU_ASSERT_EQUAL_FATAL(count_of(it, 0), 2);
    const struct sv_msg_iter_done *d = iter_of(it, 0, 1);
    SV_ASSERT_EQ_I64(d->n_decode, 1);
    SV_ASSERT_EQ_I64(d->end_ns - d->start_ns,
                     t.pro1 + (sv_time)LAYERS * (t.a1 + x + t.f1 + x) + t.head1);
    /* 32 layers x 2 directions x (16 + 1) tokens x 8,192 bytes, 32 x 2 x 2 messages. */
    SV_ASSERT_EQ_I64(res.net_bytes, (uint64_t)LAYERS * 2 * 17 * HIDDEN * 2);
    SV_ASSERT_EQ_I64(res.net_messages, LAYERS * 2 * 2);
    g_array_free(it, TRUE);
}

/* Expert parallelism in a shared group (a MoE model's default): Qwen3-30B-A3B (hidden 2,048, 48
 * layers, 128 experts, top-8; its config.json), the same two H100 members. Balanced routing puts
 * a one-token micro-batch's 8 pairs on experts 8, 24, ..., 120 (floor((2e + 1) x 128 / 16)), the
 * same for both members. With one A100 holding all 128 experts, its expert block of (l, i) runs
 * both members' rows: 16 pairs on 8 experts, local tokens ceil(16 / 8) = 2 (against 1 for one
 * member's), and each member sends it one message of 8 x 2,048 x 2 = 32,768 bytes, x = 1,000 +
 * 32,768 / 8 = 5,096 ns. FFN-bound as the dense case: member 0 prologue + a + x + L·m·f + x +
 * head, member 1 x later. With two A100s (64 experts each) every member rank sends each FFN rank
 * its 4 pairs: the same bytes in twice the messages. */
static void test_shared_ep(void)
{
    const char *qwen = "Qwen/Qwen3-30B-A3B-Instruct-2507";
    struct sv_compute_model_cfg m;
    struct sv_compute_hw_cfg h100, a100;
    CU_ASSERT_FATAL(sv_compute_model_lookup(qwen, NULL, &m, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100", &h100, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("A100", &a100, NULL));
    SV_ASSERT_EQ_I64(m.hidden_size, 2048);
    SV_ASSERT_EQ_I64(m.num_layers, 48);
    sv_compute_latency *la = sv_compute_latency_new_roofline(&m, &h100, 1, NULL, NULL);
    sv_compute_latency *lf = sv_compute_latency_new_roofline(&m, &a100, 1, NULL, NULL);
    CU_ASSERT_FATAL(la && lf);
    sv_compute_latency_set_cudagraph(la, 128, 2048);
    sv_compute_latency_set_cudagraph(lf, 128, 2048);
    const struct sv_compute_layer_seq *seq = sv_compute_layer_seq(m.arch);
    int64_t kv1[] = {16}, kv2[] = {16, 16};
    struct sv_compute_batch_shape one, two;
    sv_compute_batch_shape_init(&one, NULL, NULL, 0, kv1, 1);
    sv_compute_batch_shape_init(&two, NULL, NULL, 0, kv2, 2);
    struct sv_compute_iter_time ta, tw;
    sv_compute_iter_time(la, &one, 0, 1, &ta);
    sv_compute_iter_time(la, &two, 0, 48, &tw);
    sv_time a = sv_test_afd_chain_ns(ta.layer, ta.n_layer, seq, 0);
    sv_time pro = sv_test_afd_chain_ns(tw.prologue, tw.n_prologue, seq, 2);
    sv_time head = sv_test_afd_chain_ns(tw.head, tw.n_head, seq, 2);
    struct sv_compute_batch_shape t = two; /* the FFN batch: both members' micro-batch i */
    t.moe_local_tokens = 2;
    t.moe_activated_experts = 8;
    sv_time f = sv_compute_op_time(lf, SV_COMPUTE_OP_MOE, &t);
    t = one; /* one member's rows alone */
    t.moe_local_tokens = 1;
    t.moe_activated_experts = 8;
    sv_time f_one = sv_compute_op_time(lf, SV_COMPUTE_OP_MOE, &t);
    CU_ASSERT(f > f_one);
    sv_time x = LAT_NS + 8 * 2048 * 2 / 8;
    SV_ASSERT_EQ_I64(x, 5096);
    CU_ASSERT_FATAL(f >= a + 3 * x);

    const char *ep1 = "{\"ffn_hardware\": \"A100\", \"ffn_group\": \"g\"}";
    g_autofree char *j1 = cluster_json_model(qwen, ep1);
    GArray *it = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    struct sv_planner_run_result res;
    g_autoptr(GError) e = NULL;
    gboolean ok = run(j1, 4, it, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    const struct sv_msg_iter_done *d0 = iter_of(it, 0, 1), *d1 = iter_of(it, 1, 1);
    CU_ASSERT_FATAL(d0 && d1);
    SV_ASSERT_EQ_I64(d0->n_decode, 2);
    sv_time expect0 = pro + a + x + (sv_time)48 * 2 * f + x + head;
    SV_ASSERT_EQ_I64(d0->end_ns - d0->start_ns, expect0);
    SV_ASSERT_EQ_I64(d1->end_ns - d1->start_ns, expect0 + x);
    /* 48 layers x 2 directions x 2 members x (2 x 16 + 2 x 1) tokens x 8 pairs x 4,096 bytes, one
     * message per member, micro-batch, layer and direction in each of the two waves. */
    SV_ASSERT_EQ_I64(res.net_bytes, (uint64_t)48 * 2 * 2 * 34 * 8 * 4096);
    SV_ASSERT_EQ_I64(res.net_bytes, 213909504);
    SV_ASSERT_EQ_I64(res.net_messages, 48 * 2 * 2 * 2 * 2);

    const char *ep2 = "{\"ffn_hardware\": \"A100\", \"ffn_npus\": 2, \"ffn_group\": \"g\"}";
    g_autofree char *j2 = cluster_json_model(qwen, ep2);
    GArray *it2 = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    struct sv_planner_run_result res2;
    CU_ASSERT_FATAL(run(j2, 4, it2, &res2, &e));
    /* prefill: 16 tokens, 128 pairs, one per expert, 64 per rank; decode: 4 pairs per rank */
    SV_ASSERT_EQ_I64(res2.net_bytes, res.net_bytes);
    SV_ASSERT_EQ_I64(res2.net_messages, 2 * res.net_messages);
    sv_compute_latency_free(la);
    sv_compute_latency_free(lf);
    g_array_free(it, TRUE);
    g_array_free(it2, TRUE);
}

/* Members with an attention TP group of two, a TP FFN group of two A100s, one request each (so
 * one micro-batch: fewer sequences than m): the bytes and messages by hand, as
 * test_afd_run.c's tp2_both_sides counts one instance. Per layer and member of T tokens: FFN rank
 * j gets T x 8,192 bytes from the member's rank j, each member rank r gets them back from FFN rank
 * r (4 messages), and the member's o_proj all-reduce on its TP group moves 2 x T x 8,192 bytes in
 * 4 messages (a ring of two: each rank sends its half twice); the FFN group's down_proj
 * all-reduce runs once per layer for both members' 2T tokens (2 x 2T x 8,192 bytes, 4 messages).
 * T = 16 (prefill) and 1 (decode): 32 x 8 x 2 x 17 x 8,192 bytes, and 32 x (4 x 2 + 4 x 2 + 4)
 * x 2 waves = 1,280 messages (two separate instances: 1,536, an FFN all-reduce each). */
static void test_tp2_members(void)
{
    const char *inst = "{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100\", "
                       "\"num_npus\": 2, \"tp_size\": 2, \"npu_mem\": {\"mem_size\": 80}, "
                       "\"afd\": {\"ffn_hardware\": \"A100\", \"ffn_npus\": 2%s}}";
    g_autofree char *ig = g_strdup_printf(inst, ", \"ffn_group\": \"g\"");
    g_autofree char *is = g_strdup_printf(inst, "");
    g_autofree char *jg = g_strdup_printf("{\"link_bw\": %.17g, \"link_latency\": %d, \"engine\": "
                                          "\"vllm-0.10\", \"nodes\": [{\"instances\": [%s, %s]}]}",
                                          GBPS8, LAT_NS, ig, ig);
    g_autofree char *js = g_strdup_printf("{\"link_bw\": %.17g, \"link_latency\": %d, \"engine\": "
                                          "\"vllm-0.10\", \"nodes\": [{\"instances\": [%s, %s]}]}",
                                          GBPS8, LAT_NS, is, is);
    GArray *it = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    struct sv_planner_run_result rg, rs;
    g_autoptr(GError) e = NULL;
    gboolean ok = run(jg, 2, it, &rg, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    SV_ASSERT_EQ_I64(count_of(it, 0), 2);
    SV_ASSERT_EQ_I64(count_of(it, 1), 2);
    SV_ASSERT_EQ_I64(rg.net_bytes, (uint64_t)LAYERS * 8 * 2 * 17 * HIDDEN * 2);
    SV_ASSERT_EQ_I64(rg.net_messages, LAYERS * (4 * 2 + 4 * 2 + 4) * 2);
    SV_ASSERT_EQ_I64(rg.net_messages, 1280);
    CU_ASSERT_FATAL(run(js, 2, it, &rs, &e));
    SV_ASSERT_EQ_I64(rs.net_bytes, rg.net_bytes);
    SV_ASSERT_EQ_I64(rs.net_messages, 1536);
    g_array_free(it, TRUE);
}

/* The stall of test_afd_moe.c's qwen_attention_tp2_sparse in a shared FFN group: two Qwen3-30B-A3B
 * members with an attention TP group of two on two A100 expert ranks, two requests of 16 + 2
 * tokens each (two micro-batches per member: one wave with a micro-batch alone stalls nothing). In
 * the decode wave each member's micro-batches have one token, so each member's rank 1 has no rows;
 * its all-gathers wait for their turn in program order (docs/afd.md "Collective order") and the run
 * completes (before: "the simulation stalled"). By hand per layer, member and micro-batch (as
 * test_afd_moe.c): prefill T = 16, 8 tokens per attention rank, 32 pairs to each FFN rank: M2N /
 * N2M 16 x 8 x 4,096 bytes each way in 4 messages each way, the all-gather 2 x 8 x 4,096 in 2,
 * the o_proj all-reduce 2 x 16 x 4,096 in 4; decode T = 1, rank 0's 8 pairs 4 per FFN rank: 8 x
 * 4,096 each way in 2 messages each way, the all-gather 2 x 4,096 in 2, the all-reduce 2 x 4,096
 * in 4. Two members x two micro-batches: 48 x 4 x (1,245,184 + 81,920) bytes and 48 x 4 x (14 +
 * 10) messages. */
static void test_tp2_members_ep_sparse(void)
{
    const char *inst = "{\"model_name\": \"Qwen/Qwen3-30B-A3B-Instruct-2507\", \"hardware\": "
                       "\"H100\", \"num_npus\": 2, \"tp_size\": 2, \"npu_mem\": {\"mem_size\": "
                       "80}, \"afd\": {\"ffn_hardware\": \"A100\", \"ffn_npus\": 2, \"ffn_group\": "
                       "\"g\"}}";
    g_autofree char *j = g_strdup_printf("{\"link_bw\": %.17g, \"link_latency\": %d, \"engine\": "
                                         "\"vllm-0.10\", \"nodes\": [{\"instances\": [%s, %s]}]}",
                                         GBPS8, LAT_NS, inst, inst);
    GArray *it = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    struct sv_planner_run_result res;
    g_autoptr(GError) e = NULL;
    gboolean ok = run(j, 4, it, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    SV_ASSERT_EQ_I64(count_of(it, 0), 2);
    SV_ASSERT_EQ_I64(count_of(it, 1), 2);
    SV_ASSERT_EQ_I64(iter_of(it, 0, 1)->n_decode, 2);
    SV_ASSERT_EQ_I64(iter_of(it, 1, 1)->n_decode, 2);
    SV_ASSERT_EQ_I64(res.net_bytes, (uint64_t)48 * 4 *
                                        (2 * 16 * 8 * 4096 + 2 * 8 * 4096 + 2 * 16 * 4096 +
                                         2 * 8 * 4096 + 2 * 4096 + 2 * 4096));
    SV_ASSERT_EQ_I64(res.net_bytes, 254803968);
    SV_ASSERT_EQ_I64(res.net_messages, 48 * 4 * (8 + 2 + 4 + 4 + 2 + 4));
    SV_ASSERT_EQ_I64(res.net_messages, 4608);
    g_array_free(it, TRUE);
}

/* Same seed, same iteration records and bytes. */
static void test_same_seed(void)
{
    g_autofree char *json = cluster_json(GROUPED, GROUPED, NULL);
    GArray *a = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    GArray *b = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    struct sv_planner_run_result ra, rb;
    g_autoptr(GError) e = NULL;
    CU_ASSERT_FATAL(run(json, 6, a, &ra, &e));
    CU_ASSERT_FATAL(run(json, 6, b, &rb, &e));
    SV_ASSERT_EQ_I64(ra.end_ns, rb.end_ns);
    SV_ASSERT_EQ_I64(ra.net_bytes, rb.net_bytes);
    CU_ASSERT_EQUAL_FATAL(a->len, b->len);
    for (guint i = 0; i < a->len; i++) {
        const struct sv_msg_iter_done *x = &g_array_index(a, struct sv_msg_iter_done, i);
        const struct sv_msg_iter_done *y = &g_array_index(b, struct sv_msg_iter_done, i);
        SV_ASSERT_EQ_I64(x->instance, y->instance);
        SV_ASSERT_EQ_I64(x->start_ns, y->start_ns);
        SV_ASSERT_EQ_I64(x->end_ns, y->end_ns);
    }
    g_array_free(a, TRUE);
    g_array_free(b, TRUE);
}

static void expect_error(const char *json, const char *what)
{
    g_autoptr(GError) e = NULL;
    GArray *it = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    struct sv_planner_run_result res;
    gboolean ok = run(json, 2, it, &res, &e);
    CU_ASSERT_FALSE(ok);
    if (e && !strstr(e->message, what))
        fprintf(stderr, "expected '%s' in '%s'\n", what, e->message);
    CU_ASSERT(e && strstr(e->message, what));
    g_array_free(it, TRUE);
}

static void test_errors(void)
{
    /* Members disagreeing, each key. */
    g_autofree char *j1 = cluster_json(
        GROUPED, "{\"ffn_hardware\": \"A100\", \"ffn_npus\": 2, \"ffn_group\": \"g\"}", NULL);
    expect_error(j1, "t.json: nodes[0].instances[1].afd.ffn_npus: 2 differs from 1 of ffn_group "
                     "\"g\"'s first member (t.json: nodes[0].instances[0].afd)");
    g_autofree char *j2 =
        cluster_json(GROUPED, "{\"ffn_hardware\": \"H100\", \"ffn_group\": \"g\"}", NULL);
    expect_error(j2, "t.json: nodes[0].instances[1].afd.ffn_hardware: H100");
    g_autofree char *j3 = cluster_json(
        GROUPED, "{\"ffn_hardware\": \"A100\", \"micro_batches\": 3, \"ffn_group\": \"g\"}", NULL);
    expect_error(j3, "t.json: nodes[0].instances[1].afd.micro_batches: 3 differs from 2");
    g_autofree char *j4 = cluster_json(GROUPED, GROUPED, "meta-llama/Llama-3.2-1B");
    expect_error(j4, "t.json: nodes[0].instances[1].afd.ffn_group: model meta-llama/Llama-3.2-1B "
                     "differs from meta-llama/Llama-3.1-8B");
    /* A group of one (a misspelt name): refused, naming the other groups. */
    g_autofree char *j5 = cluster_json(
        GROUPED, "{\"ffn_hardware\": \"A100\", \"micro_batches\": 2, \"ffn_group\": \"G\"}", NULL);
    expect_error(j5, "t.json: nodes[0].instances[0].afd.ffn_group: \"g\" names no other instance: "
                     "a shared FFN group needs at least two attention instances (other groups: "
                     "\"G\"");
    g_autofree char *j6 = cluster_json(GROUPED, "{\"ffn_hardware\": \"A100\"}", NULL);
    expect_error(j6, "t.json: nodes[0].instances[0].afd.ffn_group: \"g\" names no other instance");
    g_autofree char *j7 =
        cluster_json(GROUPED, "{\"ffn_hardware\": \"A100\", \"ffn_group\": \"\"}", NULL);
    expect_error(j7, "t.json: nodes[0].instances[1].afd.ffn_group: must be a group name");
    /* ffn_ep must agree too (given on one member, absent on the other). */
    g_autofree char *j8 = cluster_json(
        GROUPED,
        "{\"ffn_hardware\": \"A100\", \"micro_batches\": 2, \"ffn_ep\": false, \"ffn_group\": "
        "\"g\"}",
        NULL);
    expect_error(j8, "t.json: nodes[0].instances[1].afd.ffn_ep: false differs from absent");
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"shared_ffn_makespan", test_shared_ffn_makespan},
        {"idle_member", test_idle_member},
        {"shared_ep", test_shared_ep},
        {"tp2_members", test_tp2_members},
        {"tp2_members_ep_sparse", test_tp2_members_ep_sparse},
        {"same_seed", test_same_seed},
        {"errors", test_errors},
        {NULL, NULL},
    };
    sv_test_add_suite("afd_group", cases);
    return sv_test_run();
}
