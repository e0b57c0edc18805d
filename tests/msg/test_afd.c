/* Attention/FFN disaggregation (msg/afd.c, docs/afd.md): the ping-pong iteration run by dag/'s
 * executor against schedules worked out by hand, the transfer bytes per layer, the split of a
 * layer's operators between the two device groups, and the validation of the "afd" object.
 *
 * Hand schedules use the executor's rule (ASTRA-sim HardwareResource): per device one compute op
 * and one comm op at a time. Device 0 = attention group (attention ops, dispatch sends), device 1
 * = FFN group (FFN ops, combine sends). a = attention time, f = FFN time, x = one transfer. */
#include "msg/msg.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <string.h>

static struct sv_msg_afd_iter_req req(int64_t layers, int32_t m, int64_t tokens, int64_t hidden,
                                      sv_time a, sv_time f, double gbps, sv_time lat)
{
    struct sv_msg_afd_iter_req q = {.n_layers = layers,
                                    .micro_batches = m,
                                    .tokens = tokens,
                                    .hidden_size = hidden,
                                    .net_gbps = gbps,
                                    .net_latency_ns = lat};
    for (int i = 0; i < m; i++) {
        q.attn_ns[i] = a;
        q.ffn_ns[i] = f;
    }
    return q;
}

/* m = 2, L = 2, a = f = 100, tokens 4 (2 per micro-batch), hidden 4: 2 x 4 x 2 = 16 bytes per
 * transfer at 2 GB/s = 8 ns + 2 ns latency: x = 10. By hand:
 *   dev0 compute: attn l0mb0 0-100, attn l0mb1 100-200, attn l1mb0 220-320, attn l1mb1 320-420
 *   dev0 comm:    dispatch l0mb0 100-110, l0mb1 200-210, l1mb0 320-330, l1mb1 420-430
 *   dev1 compute: ffn l0mb0 110-210, l0mb1 210-310, l1mb0 330-430, l1mb1 430-530
 *   dev1 comm:    combine l0mb0 210-220, l0mb1 310-320, l1mb0 430-440, l1mb1 530-540
 * attn l1mb0 waits for combine l0mb0 (220); attn l1mb1 for combine l0mb1 (320). End 540; the
 * serial sum is 2 x 2 x (100 + 10 + 100 + 10) = 880: attention of one micro-batch overlaps the
 * FFN of the other (ffn l0mb0 110-210 runs beside attn l0mb1 100-200). */
static void test_ping_pong_two_micro_batches(void)
{
    struct sv_msg_afd_iter_req q = req(2, 2, 4, 4, 100, 100, 2.0, 2);
    struct sv_msg_afd_iter r;
    g_autoptr(GError) e = NULL;
    CU_ASSERT_FATAL(sv_msg_afd_iter_run(&q, &r, &e));
    SV_ASSERT_EQ_I64(r.end_ns, 540);
    SV_ASSERT_EQ_I64(r.serial_ns, 880);
    CU_ASSERT(r.end_ns < r.serial_ns);
    SV_ASSERT_EQ_I64(r.a2f_bytes, 2 * 2 * 16);
    SV_ASSERT_EQ_I64(r.f2a_bytes, 2 * 2 * 16);
    SV_ASSERT_EQ_I64(r.n_transfers, 8);
}

/* m = 1: nothing to overlap, each layer is a + x + f + x. Tokens 4, hidden 4: 32 bytes at 2 GB/s
 * = 16 ns + 2 ns: x = 18; a = f = 150; L = 2: 2 x (150 + 18 + 150 + 18) = 672 = the serial sum. */
static void test_one_micro_batch_is_serial(void)
{
    struct sv_msg_afd_iter_req q = req(2, 1, 4, 4, 150, 150, 2.0, 2);
    struct sv_msg_afd_iter r;
    CU_ASSERT_FATAL(sv_msg_afd_iter_run(&q, &r, NULL));
    SV_ASSERT_EQ_I64(r.end_ns, 672);
    SV_ASSERT_EQ_I64(r.serial_ns, 672);
}

/* Attention-bound: a = 300, f = 100, x = 10, m = 2, L = 2. The attention group never idles once
 * started (each combine is back long before the group is free), so the end is L x m x a plus the
 * last micro-batch's dispatch, FFN and combine: 1200 + 10 + 100 + 10 = 1320.
 *   attn l0mb0 0-300, l0mb1 300-600, l1mb0 600-900 (combine l0mb0 back at 420),
 *   l1mb1 900-1200 (combine l0mb1 back at 720); dispatch 1200-1210, ffn 1210-1310, combine
 *   1310-1320. */
static void test_attention_bound(void)
{
    struct sv_msg_afd_iter_req q = req(2, 2, 4, 4, 300, 100, 2.0, 2);
    struct sv_msg_afd_iter r;
    CU_ASSERT_FATAL(sv_msg_afd_iter_run(&q, &r, NULL));
    SV_ASSERT_EQ_I64(r.end_ns, 1320);
}

/* FFN-bound, mirror image: a = 100, f = 300, x = 10, m = 2, L = 2. The FFN group is busy from
 * 110 on: ffn l0mb0 110-410, l0mb1 410-710; combine l0mb0 410-420 -> attn l1mb0 420-520,
 * dispatch 520-530, ffn l1mb0 710-1010 (group busy until 710); combine l0mb1 710-720 -> attn
 * l1mb1 720-820, dispatch 820-830, ffn l1mb1 1010-1310, combine 1310-1320. End 1320 =
 * a + x + L x m x f + x. */
static void test_ffn_bound(void)
{
    struct sv_msg_afd_iter_req q = req(2, 2, 4, 4, 100, 300, 2.0, 2);
    struct sv_msg_afd_iter r;
    CU_ASSERT_FATAL(sv_msg_afd_iter_run(&q, &r, NULL));
    SV_ASSERT_EQ_I64(r.end_ns, 1320);
}

/* Transfer bytes per layer = tokens of the micro-batch x hidden x 2, each way. Tokens 5 over
 * m = 2: 3 and 2. Hidden 4096, L = 3: per direction 3 x (3 + 2) x 4096 x 2 = 122,880 bytes,
 * 3 layers x 2 micro-batches x 2 directions = 12 transfers. */
static void test_transfer_bytes(void)
{
    struct sv_msg_afd_iter_req q = req(3, 2, 5, 4096, 1000, 1000, 100.0, 0);
    struct sv_msg_afd_iter r;
    CU_ASSERT_FATAL(sv_msg_afd_iter_run(&q, &r, NULL));
    SV_ASSERT_EQ_I64(r.mb_tokens[0], 3);
    SV_ASSERT_EQ_I64(r.mb_tokens[1], 2);
    SV_ASSERT_EQ_I64(r.a2f_bytes, 122880);
    SV_ASSERT_EQ_I64(r.f2a_bytes, 122880);
    SV_ASSERT_EQ_I64(r.n_transfers, 12);
    /* 3 x 4096 x 2 = 24,576 bytes at 100 GB/s = 245.76 -> 246 ns; 2 tokens: 16,384 -> 164 ns. */
    SV_ASSERT_EQ_I64(r.serial_ns, 3 * (2000 + 2 * 246) + 3 * (2000 + 2 * 164));
}

static void test_bad_iteration(void)
{
    struct sv_msg_afd_iter_req q = req(2, 2, 4, 4, 100, 100, 2.0, 2);
    q.tokens = 1; /* fewer tokens than micro-batches */
    struct sv_msg_afd_iter r;
    g_autoptr(GError) e = NULL;
    CU_ASSERT_FALSE(sv_msg_afd_iter_run(&q, &r, &e));
    CU_ASSERT_PTR_NOT_NULL(e && strstr(e->message, "micro_batches <= tokens"));
    g_clear_error(&e);
    q = req(2, 2, 4, 4, 100, 100, 2.0, 2);
    q.ffn_ns[1] = -1;
    CU_ASSERT_FALSE(sv_msg_afd_iter_run(&q, &r, &e));
    CU_ASSERT_PTR_NOT_NULL(e && strstr(e->message, "micro-batch 1: negative operator time"));
}

/* The layer's operators split by side: Llama's attention side is layernorm, qkv_proj,
 * rotary_emb, attention, o_proj, layernorm; its FFN side gate_up_proj, act_fn, down_proj. The
 * FFN side is timed on the FFN device (A100), the attention side on the attention one (H100). */
static void test_op_times_split(void)
{
    struct sv_compute_model_cfg m;
    struct sv_compute_hw_cfg h100, a100;
    CU_ASSERT_FATAL(sv_compute_model_lookup("meta-llama/Llama-3.1-8B", NULL, &m, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100", &h100, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("A100", &a100, NULL));
    g_autoptr(sv_compute_latency) la = sv_compute_latency_new_roofline(&m, &h100, 1, NULL, NULL);
    g_autoptr(sv_compute_latency) lf = sv_compute_latency_new_roofline(&m, &a100, 1, NULL, NULL);
    CU_ASSERT_FATAL(la && lf);
    int64_t kv[8] = {100, 200, 300, 400, 500, 600, 700, 800};
    struct sv_compute_batch_shape s;
    sv_compute_batch_shape_init(&s, NULL, NULL, 0, kv, 8);
    sv_time a = 0, f = 0;
    sv_msg_afd_op_times(la, lf, &s, &a, &f);
    static const sv_compute_op_kind attn_ops[] = {
        SV_COMPUTE_OP_LAYERNORM, SV_COMPUTE_OP_QKV_PROJ, SV_COMPUTE_OP_ROTARY_EMB,
        SV_COMPUTE_OP_ATTENTION, SV_COMPUTE_OP_O_PROJ,   SV_COMPUTE_OP_LAYERNORM};
    static const sv_compute_op_kind ffn_ops[] = {SV_COMPUTE_OP_GATE_UP_PROJ, SV_COMPUTE_OP_ACT_FN,
                                                 SV_COMPUTE_OP_DOWN_PROJ};
    sv_time ea = 0, ef = 0;
    for (size_t i = 0; i < G_N_ELEMENTS(attn_ops); i++)
        ea += sv_compute_op_time(la, attn_ops[i], &s);
    for (size_t i = 0; i < G_N_ELEMENTS(ffn_ops); i++)
        ef += sv_compute_op_time(lf, ffn_ops[i], &s);
    SV_ASSERT_EQ_I64(a, ea);
    SV_ASSERT_EQ_I64(f, ef);
    CU_ASSERT(a > 0 && f > 0);
}

static gboolean parse(const char *json, int32_t pp, struct sv_msg_afd_cfg *out, GError **e)
{
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, json, -1, NULL));
    return sv_msg_afd_parse(json_node_get_object(json_parser_get_root(p)), "instances[0].afd", NULL,
                            pp, out, e);
}

static void test_parse(void)
{
    struct sv_msg_afd_cfg c;
    CU_ASSERT_FATAL(
        parse("{\"ffn_hardware\": \"a100\", \"ffn_npus\": 4, \"micro_batches\": 3}", 1, &c, NULL));
    CU_ASSERT_STRING_EQUAL(c.ffn_hardware, "A100-80GB");
    SV_ASSERT_EQ_I64(c.ffn_npus, 4);
    SV_ASSERT_EQ_I64(c.micro_batches, 3);
    CU_ASSERT_FATAL(parse("{\"ffn_hardware\": \"H100\"}", 1, &c, NULL));
    SV_ASSERT_EQ_I64(c.ffn_npus, 1);
    SV_ASSERT_EQ_I64(c.micro_batches, 2);
    static const struct {
        const char *json;
        int32_t pp;
        const char *msg;
    } bad[] = {
        {"{\"ffn_hardware\": \"H100\", \"micro_batches\": 0}", 1,
         "instances[0].afd.micro_batches: 0 out of range"},
        {"{\"ffn_hardware\": \"H100\", \"micro_batches\": 1.5}", 1,
         "instances[0].afd.micro_batches: must be an integer"},
        {"{\"ffn_hardware\": \"H100\", \"ffn_npus\": -1}", 1,
         "instances[0].afd.ffn_npus: -1 out of range"},
        {"{\"ffn_hardware\": \"Z9000\"}", 1, "instances[0].afd.ffn_hardware: "},
        {"{\"micro_batches\": 2}", 1, "instances[0].afd.ffn_hardware: required"},
        {"{\"ffn_hardware\": \"H100\", \"microbatches\": 2}", 1,
         "instances[0].afd.microbatches: unknown key"},
        {"{\"ffn_hardware\": \"H100\"}", 2,
         "instances[0].afd: attention/FFN disaggregation with "
         "pp_size 2 is not supported"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GError) e = NULL;
        CU_ASSERT_FALSE(parse(bad[i].json, bad[i].pp, &c, &e));
        CU_ASSERT_PTR_NOT_NULL(e);
        if (e && !strstr(e->message, bad[i].msg)) {
            fprintf(stderr, "case %zu: %s\n", i, e->message);
            CU_FAIL("error message");
        }
    }
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"two micro-batches ping-pong (hand schedule)", test_ping_pong_two_micro_batches},
        {"one micro-batch is serial", test_one_micro_batch_is_serial},
        {"attention-bound makespan", test_attention_bound},
        {"FFN-bound makespan", test_ffn_bound},
        {"transfer bytes per layer", test_transfer_bytes},
        {"bad iteration request", test_bad_iteration},
        {"layer ops split between the groups", test_op_times_split},
        {"afd object: parse and errors", test_parse},
        {NULL, NULL},
    };
    sv_test_add_suite("afd", cases);
    return sv_test_run();
}
