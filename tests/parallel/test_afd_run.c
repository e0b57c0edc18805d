/* Attention/FFN disaggregation inside servesim run (planner/afd.c, msg/afd_run.c; docs/afd.md "In
 * servesim run"). Llama-3.1-8B with its attention on one H100 and its MLP on one A100, two
 * micro-batches, on a one-node network whose link moves exactly 8 bytes per ns (bw_gbps = 8 x
 * 10^9 / 2^30, as tests/planner/test_hetnet.c) with 1,000 ns latency. Expected values are worked
 * by hand from the model's shape and from the operator times sv_compute gives each side (the
 * roofline on the catalog devices), never from the run's own output. */
#include "planner/planner.h"
#include "tests/parallel/afd_util.h"
#include "tests/test_util.h"

#include <math.h>
#include <string.h>

#define GBPS8 (8.0 * 1e9 / 1073741824.0)
#define LAT_NS 1000
#define HIDDEN 4096
#define LAYERS 32

static char *cluster_json(const char *afd, const char *extra)
{
    return g_strdup_printf(
        "{\"link_bw\": %.17g, \"link_latency\": %d, \"engine\": \"vllm-0.10\", \"nodes\": "
        "[{\"instances\": [{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100\", "
        "\"npu_mem\": {\"mem_size\": 80}, \"max_num_seqs\": 128, \"max_num_batched_tokens\": "
        "2048%s, \"afd\": %s}]}]}",
        GBPS8, LAT_NS, extra, afd);
}

typedef struct {
    GArray *it; /* struct sv_msg_iter_done */
    uint64_t kv_blocks;
} rec;

static void on_iter(void *ctx, const struct sv_msg_iter_done *s)
{
    g_array_append_val(((rec *)ctx)->it, *s);
}

static void on_kv(void *ctx, int32_t i, const struct sv_planner_instance_cfg *ic, uint64_t blocks,
                  uint32_t bs, uint64_t bytes, const struct sv_planner_instance_limits *lim)
{
    ((rec *)ctx)->kv_blocks = blocks;
}

/* n requests arriving at 0, `in` prompt tokens and 2 output tokens each: a prefill iteration of n
 * chunks, then a decode iteration of n decodes of KV `in`. */
static gboolean run(const char *json, int n, int in, rec *r, struct sv_planner_run_result *res,
                    GError **error)
{
    r->it = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    struct sv_planner_run_observer obs = {
        .on_iteration = on_iter, .on_instance_kv = on_kv, .ctx = r};
    return sv_test_afd_run(json, n, in, NULL, NULL, &obs, res, error);
}

/* Two decodes, two micro-batches of one: the decode iteration lasts the ping-pong makespan. Per
 * layer the attention side takes a (H100), the FFN side f (A100), one transfer x = 1,000 ns +
 * 8,192 bytes / 8 B/ns = 2,024 ns. f >= a + 2x here (the A100 reads the 352 MB of MLP weights per
 * micro-batch), so the FFN side never waits once it started (docs/afd.md "The model"):
 *   iteration = prologue + a + x + L·m·f + x + head,
 * against prologue + L·m·(a + f + 2x) + head without overlap. */
static void test_decode_makespan(void)
{
    g_autofree char *json =
        cluster_json("{\"ffn_hardware\": \"A100\", \"ffn_npus\": 1, \"micro_batches\": 2}", "");
    rec r = {0};
    struct sv_planner_run_result res;
    g_autoptr(GError) e = NULL;
    gboolean ok = run(json, 2, 16, &r, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    CU_ASSERT_EQUAL_FATAL(r.it->len, 2);
    const struct sv_msg_iter_done *dec = &g_array_index(r.it, struct sv_msg_iter_done, 1);
    SV_ASSERT_EQ_I64(dec->n_decode, 2);

    /* Operator times by hand from compute/: the same models the run builds (roofline, catalog
     * devices, TP 1, its CUDA-graph sizes 128 / 2048). */
    struct sv_compute_model_cfg m;
    sv_compute_latency *la, *lf;
    sv_test_afd_models("meta-llama/Llama-3.1-8B", &m, &la, &lf);
    const struct sv_compute_layer_seq *seq = sv_compute_layer_seq(m.arch);
    int64_t kv1[] = {16}, kv2[] = {16, 16};
    struct sv_compute_batch_shape one, two;
    sv_compute_batch_shape_init(&one, NULL, NULL, 0, kv1, 1);
    sv_compute_batch_shape_init(&two, NULL, NULL, 0, kv2, 2);
    struct sv_compute_iter_time ta, tf, tw;
    sv_compute_iter_time(la, &one, 0, 1, &ta);
    sv_compute_iter_time(lf, &one, 0, 1, &tf);
    sv_compute_iter_time(la, &two, 0, LAYERS, &tw);
    sv_time a = sv_test_afd_chain_ns(ta.layer, ta.n_layer, seq, 0);
    sv_time f = sv_test_afd_chain_ns(tf.layer, tf.n_layer, seq, 1);
    sv_time pro = sv_test_afd_chain_ns(tw.prologue, tw.n_prologue, seq, 2);
    sv_time head = sv_test_afd_chain_ns(tw.head, tw.n_head, seq, 2);
    sv_time x = LAT_NS + 1 * HIDDEN * 2 / 8;
    SV_ASSERT_EQ_I64(x, 2024);
    CU_ASSERT_FATAL(f >= a + 2 * x); /* the FFN-bound regime */
    sv_time expect = pro + a + x + (sv_time)LAYERS * 2 * f + x + head;
    sv_time serial = pro + (sv_time)LAYERS * 2 * (a + f + 2 * x) + head;
    SV_ASSERT_EQ_I64(dec->end_ns - dec->start_ns, expect);
    CU_ASSERT(dec->end_ns - dec->start_ns < serial); /* the overlap is visible */

    /* Transfer bytes: per layer, micro-batch and direction tokens x hidden x 2; the prefill
     * iteration moves 16 tokens per micro-batch, the decode one 1: 32 layers x 2 directions x
     * (2 x 16 + 2 x 1) tokens x 8,192 bytes, in 32 x 2 x 2 x 2 messages. */
    SV_ASSERT_EQ_I64(res.net_bytes, (uint64_t)LAYERS * 2 * 34 * HIDDEN * 2);
    SV_ASSERT_EQ_I64(res.net_bytes, 17825792);
    SV_ASSERT_EQ_I64(res.net_messages, LAYERS * 2 * 2 * 2);

    /* KV pool of the attention H100: trunc(80 GiB x 0.9) = 77,309,411,328 bytes minus the
     * attention side's weights: per layer q, o 4096 x 4096, k, v 4096 x 1024, two norms 4096:
     * 41,951,232 params x 32, embedding and lm_head 2 x 128,256 x 4,096, final norm 4,096:
     * 2,393,116,672 params = 4,786,233,344 bytes (bf16); blocks of 16 tokens x 32 layers x
     * 4,096 bytes (K and V of 8 heads x 128 x 2 bytes) = 2,097,152 bytes:
     * (77,309,411,328 - 4,786,233,344) / 2,097,152 = 34,581 (29,205 with the MLP weights). */
    SV_ASSERT_EQ_I64(r.kv_blocks, 34581);
    sv_compute_latency_free(la);
    sv_compute_latency_free(lf);
    g_array_free(r.it, TRUE);
}

/* Same seed, same outputs (the run result's times and bytes); a lone micro-batch (m = 1) is
 * slower than two on the same batch (no overlap). */
static void test_same_seed_and_m1(void)
{
    g_autofree char *j2 = cluster_json("{\"ffn_hardware\": \"A100\"}", "");
    g_autofree char *j1 = cluster_json("{\"ffn_hardware\": \"A100\", \"micro_batches\": 1}", "");
    rec r1 = {0}, r2 = {0}, r3 = {0};
    struct sv_planner_run_result a, b, c;
    g_autoptr(GError) e = NULL;
    CU_ASSERT_FATAL(run(j2, 8, 64, &r1, &a, &e));
    CU_ASSERT_FATAL(run(j2, 8, 64, &r2, &b, &e));
    CU_ASSERT_FATAL(run(j1, 8, 64, &r3, &c, &e));
    SV_ASSERT_EQ_I64(a.end_ns, b.end_ns);
    SV_ASSERT_EQ_I64(a.net_bytes, b.net_bytes);
    SV_ASSERT_EQ_I64(r1.it->len, r2.it->len);
    for (guint i = 0; i < r1.it->len && i < r2.it->len; i++)
        SV_ASSERT_EQ_I64(g_array_index(r1.it, struct sv_msg_iter_done, i).end_ns,
                         g_array_index(r2.it, struct sv_msg_iter_done, i).end_ns);
    /* m = 1 moves the same bytes in half the messages. */
    SV_ASSERT_EQ_I64(c.net_bytes, a.net_bytes);
    SV_ASSERT_EQ_I64(c.net_messages * 2, a.net_messages);
    g_array_free(r1.it, TRUE);
    g_array_free(r2.it, TRUE);
    g_array_free(r3.it, TRUE);
}

/* TP 2 on both sides (ffn_npus 2), one request of 100 + 2 tokens (a prefill of 100, a decode of
 * 1; one sequence: one micro-batch whatever micro_batches says). Per layer and iteration of T
 * tokens: FFN rank j gets the activations from attention rank j, attention rank r gets them back
 * from FFN rank r: 4 messages of T x 8,192 bytes; and two TP all-reduces (o_proj on the attention
 * pair, down_proj on the FFN pair), each 2 messages of S/2 per rank on a 2-rank ring: 2 S bytes
 * with S = T x 8,192 (as tests/parallel/test_parallel.c's tp_sizes). Over T = 100 + 1:
 * 32 x (4 + 2 x 2) x 101 x 8,192 bytes; messages 32 x 4 x 2 + 2 x 32 x 2 x 2 x 2. */
static void test_tp2_both_sides(void)
{
    g_autofree char *json = cluster_json("{\"ffn_hardware\": \"A100\", \"ffn_npus\": 2}",
                                         ", \"num_npus\": 2, \"tp_size\": 2");
    rec r = {0};
    struct sv_planner_run_result res;
    g_autoptr(GError) e = NULL;
    gboolean ok = run(json, 1, 100, &r, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    SV_ASSERT_EQ_I64(r.it->len, 2);
    SV_ASSERT_EQ_I64(res.net_bytes, (uint64_t)LAYERS * 8 * 101 * HIDDEN * 2);
    SV_ASSERT_EQ_I64(res.net_messages, LAYERS * 4 * 2 + 2 * 32 * 2 * 2 * 2);
    g_array_free(r.it, TRUE);
}

static void expect_error(const char *afd, const char *extra, gboolean at_parse, const char *what)
{
    g_autofree char *json = cluster_json(afd, extra);
    g_autoptr(GError) e = NULL;
    if (at_parse) {
        struct sv_planner_cluster_cfg *c = sv_test_afd_parse(json, &e);
        CU_ASSERT_PTR_NULL(c);
        sv_planner_cluster_free(c);
    } else {
        rec r = {0};
        struct sv_planner_run_result res;
        CU_ASSERT_FALSE(run(json, 1, 16, &r, &res, &e));
        if (r.it)
            g_array_free(r.it, TRUE);
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    if (!strstr(e->message, what))
        fprintf(stderr, "got: %s\nwant: %s\n", e->message, what);
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, what));
}

static char *big_json(int ffn_npus)
{
    return g_strdup_printf(
        "{\"link_bw\": 100, \"link_latency\": 1000, \"nodes\": [{\"instances\": "
        "[{\"model_name\": \"meta-llama/Llama-3.1-70B\", \"hardware\": \"H100\", "
        "\"npu_mem\": {\"mem_size\": 80}, \"afd\": {\"ffn_hardware\": \"A100\", "
        "\"ffn_npus\": %d}}]}]}",
        ffn_npus);
}

static void test_errors(void)
{
    expect_error("{\"ffn_hardware\": \"A100\"}", ", \"pp_size\": 2, \"num_npus\": 2", TRUE,
                 "t.json: nodes[0].instances[0].afd: attention/FFN disaggregation with pp_size 2 "
                 "is not supported");
    expect_error("{\"ffn_hardware\": \"A100\", \"micro_batches\": 0}", "", TRUE,
                 "t.json: nodes[0].instances[0].afd.micro_batches: 0 out of range [1, 64]");
    expect_error("{\"ffn_hardware\": \"B999\"}", "", TRUE,
                 "t.json: nodes[0].instances[0].afd.ffn_hardware: unknown hardware");
    expect_error("{\"ffn_hardwar\": \"A100\"}", "", TRUE,
                 "t.json: nodes[0].instances[0].afd.ffn_hardwar: unknown key");
    expect_error("[1]", "", TRUE, "t.json: nodes[0].instances[0].afd: must be an object");
    expect_error("{\"ffn_hardware\": \"A100\"}", ", \"ep_size\": 2", TRUE,
                 "t.json: nodes[0].instances[0].afd: with ep_size > 1 is not supported");
    /* Llama-3.1-70B's MLP: 80 layers x 3 x 8,192 x 28,672 x 2 bytes = 112,742,891,520 bytes (105
     * GiB) on one A100 of 80 GiB x 0.9: no; on two (52.5 GiB each) it fits. */
    g_autofree char *big = big_json(1);
    g_autofree char *big2 = big_json(2);
    rec r = {0};
    struct sv_planner_run_result res;
    g_autoptr(GError) e = NULL;
    CU_ASSERT_FALSE(run(big, 1, 16, &r, &res, &e));
    CU_ASSERT(e && strstr(e->message, "t.json: nodes[0].instances[0].afd.ffn_npus: 1 x "
                                      "A100-80GB: the MLP weights need 105.00 GiB per FFN "
                                      "device"));
    if (e && !strstr(e->message, "105.00"))
        fprintf(stderr, "%s\n", e->message);
    if (r.it)
        g_array_free(r.it, TRUE);
    g_clear_error(&e);
    rec r2 = {0};
    gboolean ok = run(big2, 1, 16, &r2, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT(ok);
    if (r2.it)
        g_array_free(r2.it, TRUE);
}

/* What afd does not combine with at run level, refused by sv_planner_run_check (before any output
 * is opened), naming the instance's afd path: --emit-et. A node with a power block is accepted
 * (tests/parallel/test_afd_power.c). */
static void test_run_level_errors(void)
{
    g_autofree char *json = cluster_json("{\"ffn_hardware\": \"A100\"}", "");
    g_autoptr(GError) e = NULL;
    struct sv_planner_cluster_cfg *c = sv_test_afd_parse(json, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    struct sv_planner_run_cfg cfg = {0};
    cfg.cluster = c;
    cfg.enable_prefix_caching = -1;
    cfg.enable_chunked_prefill = -1;
    cfg.reserve_full_isl = -1;
    CU_ASSERT_TRUE(sv_planner_run_check(&cfg, &e));
    cfg.emit_et_dir = "et";
    CU_ASSERT_FALSE(sv_planner_run_check(&cfg, &e));
    CU_ASSERT(e &&
              strstr(e->message,
                     "t.json: nodes[0].instances[0].afd: --emit-et is not supported with afd"));
    g_clear_error(&e);
    cfg.emit_et_dir = NULL;
    sv_planner_cluster_free(c);
    const char *power =
        "{\"link_bw\": 100, \"link_latency\": 1000, \"nodes\": [{\"cpu_mem\": {\"mem_size\": 512, "
        "\"mem_bw\": 256, \"mem_latency\": 0}, \"instances\": [{\"model_name\": "
        "\"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100\", \"npu_mem\": {\"mem_size\": 80}, "
        "\"afd\": {\"ffn_hardware\": \"A100\"}}], \"power\": {\"base_node_power\": 100, "
        "\"cpu\": {\"idle_power\": 10, \"active_power\": 10, \"util\": 0.5}, "
        "\"dram\": {\"dimm_size\": 512, \"idle_power\": 10, \"energy_per_bit\": 0}, "
        "\"link\": {\"num_links\": 1, \"idle_power\": 10, \"energy_per_bit\": 0}, "
        "\"nic\": {\"num_nics\": 1, \"idle_power\": 10}, "
        "\"storage\": {\"num_devices\": 1, \"idle_power\": 10}}}]}";
    c = sv_test_afd_parse(power, &e);
    if (!c)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    cfg.cluster = c;
    CU_ASSERT_TRUE(sv_planner_run_check(&cfg, &e));
    sv_planner_cluster_free(c);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"decode_makespan", test_decode_makespan},   {"same_seed_and_m1", test_same_seed_and_m1},
        {"tp2_both_sides", test_tp2_both_sides},     {"errors", test_errors},
        {"run_level_errors", test_run_level_errors}, {NULL, NULL},
    };
    sv_test_add_suite("afd_run", cases);
    return sv_test_run();
}
