/* PIM attention offload in the serving group (msg/pim.c; docs/pim.md; issue 9): one decode
 * iteration's time with attention on PIM, and sub-batch interleaving's overlap on a two-layer
 * model, against hand-computed PIM times.
 *
 * The PIM device is our own (the tests/compute/test_pim.c device): 64-bit bus, CL 10 x tCK 1 ns
 * = 10 ns read latency; data_rate sets the channel bandwidth. The model is Llama-3.1-8B (32
 * heads, 8 KV heads, head_dim 128, bf16) cut to two layers: K and V of one token in one layer =
 * 2 x 8 x 128 x 2 = 4096 B. Host time is off (SV_MSG_HOST_NONE). */
#include "msg/msg.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <string.h>

#define NL 2
#define XFER_BPNS 64.0 /* NPU <-> PIM link, B/ns */
#define XFER_LAT 100.0 /* per transfer, ns */

static const char *ini = "[dram_structure]\n"
                         "bankgroups = 2\nbanks_per_group = 2\nrows = 1024\ncolumns = 512\n"
                         "device_width = 8\n"
                         "[timing]\ntCK = 1.0\nCL = 10\n"
                         "[system]\nchannel_size = 16\nbus_width = 64\n"
                         "[other]\ndata_rate = %s\nidle_power = 100\npeak_power = 600\n";

typedef struct {
    sv_engine *eng;
    sv_memtier_kv_manager *kv;
    sv_compute_latency *lat;
    struct sv_compute_pim_cfg pim;
    sv_msg *msg;
    sv_time start[8], end[8];
    double busy[8];
    uint64_t xfer[8];
    int n_iter;
} fx;

static void on_iter(void *ctx, const struct sv_msg_iter_done *it)
{
    fx *f = ctx;
    if (f->n_iter < 8) {
        f->start[f->n_iter] = it->start_ns;
        f->end[f->n_iter] = it->end_ns;
        f->busy[f->n_iter] = it->pim_busy_ns;
        f->xfer[f->n_iter] = it->pim_xfer_bytes;
        f->n_iter++;
    }
}

/* data_rate "2000": 8 B x 2000e6 = 16 B/ns per channel; "2": 0.016 B/ns. */
static void fx_init(fx *f, const char *data_rate, gboolean offload, gboolean sub_batch)
{
    memset(f, 0, sizeof *f);
    f->eng = sv_engine_new(1);
    f->kv = sv_memtier_kv_manager_new(1000, 16, FALSE);
    struct sv_compute_model_cfg mc;
    struct sv_compute_hw_cfg hw;
    GError *e = NULL;
    CU_ASSERT_FATAL(sv_compute_model_lookup("meta-llama/Llama-3.1-8B", NULL, &mc, &e));
    mc.num_layers = NL;
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100", &hw, &e));
    f->lat = sv_compute_latency_new_roofline(&mc, &hw, 1, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->lat);
    g_autofree char *text = g_strdup_printf(ini, data_rate);
    CU_ASSERT_FATAL(sv_compute_pim_parse(text, -1, "test.ini", "test", &f->pim, &e));
    struct sv_msg_cfg c = {
        .max_num_seqs = 8,
        .max_num_batched_tokens = 2048,
        .enable_chunked_prefill = TRUE,
        .kv = f->kv,
        .lat = f->lat,
        .num_devices = 1,
        .host_model = SV_MSG_HOST_NONE,
    };
    if (offload) {
        c.pim = (struct sv_msg_pim_cfg){
            .dev = &f->pim,
            .n_channels = 2,
            .split = 1,
            .pack = sv_compute_pim_pack_greedy,
            .sub_batch = sub_batch,
            .xfer_bytes_per_ns = XFER_BPNS,
            .xfer_latency_ns = XFER_LAT,
        };
        CU_ASSERT_FATAL(
            sv_compute_pim_attn_init(&c.pim.attn, &f->pim, SV_COMPUTE_PIM_ATTN_BANDWIDTH, &e));
    }
    struct sv_msg_hooks h = {.on_iter_done = on_iter, .ctx = f};
    f->msg = sv_msg_new(f->eng, &c, &h, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->msg);
}

static void fx_clear(fx *f)
{
    sv_msg_free(f->msg);
    sv_memtier_kv_manager_free(f->kv);
    sv_compute_latency_free(f->lat);
    sv_engine_free(f->eng);
}

/* Two requests of 16 prompt tokens and 2 output tokens, arriving together: iteration 0 is both
 * prefills, iteration 1 one decode step of each with 16 tokens of history (17 with its own). */
static void run_two(fx *f)
{
    for (uint64_t id = 1; id <= 2; id++) {
        sv_wl_req r = {.request_id = id, .input_tokens = 16, .output_tokens = 2};
        CU_ASSERT_FATAL(sv_msg_submit(f->msg, &r, NULL, NULL));
    }
    sv_engine_run(f->eng, SV_TIME_MAX);
    CU_ASSERT_EQUAL_FATAL(f->n_iter, 2);
}

/* The NPU's part of a decode step of n sequences with 16 tokens of history, attention off. */
static void npu_decode(fx *f, int n, struct sv_compute_iter_time *it, sv_time *pre, sv_time *post)
{
    int64_t kv[2] = {16, 16};
    struct sv_compute_batch_shape s;
    sv_compute_batch_shape_init(&s, NULL, NULL, 0, kv, n);
    s.attn_decode_off = TRUE;
    sv_compute_iter_time(f->lat, &s, 0, NL, it);
    *pre = *post = 0;
    gboolean after = FALSE;
    for (int i = 0; i < it->n_layer; i++) {
        if (after)
            *post += it->layer[i].ns;
        else
            *pre += it->layer[i].ns;
        if (it->layer[i].op == SV_COMPUTE_OP_ATTENTION) {
            after = TRUE;
            CU_ASSERT_EQUAL(it->layer[i].ns, 0); /* decode attention is not on the NPU */
        }
    }
}

/* Two decodes of 17 tokens on 2 channels at 16 B/ns, one sequence per channel:
 *   attention  10 + 17 x 4096 / 16 = 4,362 ns (both channels)
 *   to PIM     Q, K, V: 2 x (32 + 2 x 8) x 128 x 2 = 24,576 B: 100 + 24,576 / 64 = 484 ns
 *   from PIM   outputs: 2 x 32 x 128 x 2 = 16,384 B: 100 + 256 = 356 ns
 * PIM node per layer 5,202 ns; the step = NPU part + 2 x 5,202. Channel busy 2 x 4,362 x 2
 * layers = 17,448 ns; bytes moved (24,576 + 16,384) x 2 layers = 81,920. */
static void test_offload_decode_step(void)
{
    fx f;
    fx_init(&f, "2000", TRUE, FALSE);
    run_two(&f);
    struct sv_compute_iter_time it;
    sv_time pre, post;
    npu_decode(&f, 2, &it, &pre, &post);
    SV_ASSERT_EQ_I64(f.end[1] - f.start[1], it.total_ns + 2 * 5202);
    CU_ASSERT_DOUBLE_EQUAL(f.busy[1], 17448.0, 1e-6);
    SV_ASSERT_EQ_I64(f.xfer[1], 81920);
    /* The prefill step moves the new K, V to PIM (32 tokens x 4096 B = 131,072 B per layer) and
     * computes no attention there. */
    SV_ASSERT_EQ_I64(f.xfer[0], 2 * 131072);
    CU_ASSERT_DOUBLE_EQUAL(f.busy[0], 0.0, 1e-9);
    struct sv_msg_pim_stats ps;
    sv_msg_pim_stats(f.msg, &ps);
    SV_ASSERT_EQ_I64(ps.iterations, 2);
    SV_ASSERT_EQ_I64(ps.decode_tokens, 2);
    fx_clear(&f);

    /* Without offload the NPU's attention covers the decodes: another step time. */
    fx_init(&f, "2000", FALSE, FALSE);
    run_two(&f);
    int64_t kv[2] = {16, 16};
    struct sv_compute_batch_shape s;
    sv_compute_batch_shape_init(&s, NULL, NULL, 0, kv, 2);
    sv_compute_iter_time(f.lat, &s, 0, NL, &it);
    SV_ASSERT_EQ_I64(f.end[1] - f.start[1], it.total_ns);
    fx_clear(&f);
}

/* Sub-batch interleaving on the two-layer model, PIM slow (0.016 B/ns): each half is one decode,
 *   P = 10 + 17 x 4096 / 0.016 = 4,352,010 ns attention + (100 + 12,288 / 64 = 292)
 *       + (100 + 8,192 / 64 = 228) = 4,352,530 ns per layer,
 * far longer than a layer's NPU work (p prologue, a up to attention, q after it, h head, all
 * of one token, each < 1 ms on an H100). The executor runs one NPU and one PIM op at a time:
 *   A: p, a, [PIM 0: p+a .. p+a+P]        B: p, a, [PIM 0 waits: p+a+P .. p+a+2P]
 *   A: q, a during B's PIM 0, [PIM 1: p+a+2P .. p+a+3P]; B: q, a, [PIM 1: .. p+a+4P]
 *   A: q, h during B's PIM 1;  B: q, h after it.
 * The step is p + a + 4P + q + h: the NPU work of one half hides under the other's PIM. Run as
 * one batch it is p + 2(a + P' + q) + h with P' = the two decodes on the two channels at once,
 * 4,352,010 + 484 + 356 = 4,352,850. */
static void test_sub_batch_overlap(void)
{
    fx f;
    fx_init(&f, "2", TRUE, TRUE);
    run_two(&f);
    struct sv_compute_iter_time it;
    sv_time pre, post;
    npu_decode(&f, 1, &it, &pre, &post);
    const sv_time P = 4352530;
    CU_ASSERT_FATAL(it.prologue_ns + pre <= P && pre + post <= P && post + it.head_ns <= P);
    SV_ASSERT_EQ_I64(f.end[1] - f.start[1], it.prologue_ns + pre + 4 * P + post + it.head_ns);
    struct sv_msg_pim_stats ps;
    sv_msg_pim_stats(f.msg, &ps);
    SV_ASSERT_EQ_I64(ps.sub_batched, 2); /* the prefill step split too */
    fx_clear(&f);

    fx_init(&f, "2", TRUE, FALSE);
    run_two(&f);
    npu_decode(&f, 2, &it, &pre, &post);
    SV_ASSERT_EQ_I64(f.end[1] - f.start[1], it.total_ns + 2 * 4352850);
    fx_clear(&f);
}

/* Bad combinations are refused when the group is made. */
static void test_refusals(void)
{
    sv_engine *eng = sv_engine_new(1);
    sv_memtier_kv_manager *kv = sv_memtier_kv_manager_new(100, 16, FALSE);
    struct sv_compute_model_cfg mc;
    struct sv_compute_hw_cfg hw;
    struct sv_compute_pim_cfg pim;
    CU_ASSERT_FATAL(sv_compute_model_lookup("meta-llama/Llama-3.1-8B", NULL, &mc, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100", &hw, NULL));
    sv_compute_latency *lat = sv_compute_latency_new_roofline(&mc, &hw, 1, NULL, NULL);
    g_autofree char *text = g_strdup_printf(ini, "2000");
    CU_ASSERT_FATAL(sv_compute_pim_parse(text, -1, "test.ini", "test", &pim, NULL));
    struct sv_msg_cfg c = {.max_num_seqs = 8,
                           .max_num_batched_tokens = 2048,
                           .kv = kv,
                           .lat = lat,
                           .num_devices = 1,
                           .pim = {.dev = &pim,
                                   .n_channels = 0,
                                   .split = 1,
                                   .pack = sv_compute_pim_pack_greedy,
                                   .xfer_bytes_per_ns = 1}};
    GError *e = NULL;
    CU_ASSERT_PTR_NULL(sv_msg_new(eng, &c, NULL, &e)); /* no channel */
    CU_ASSERT_PTR_NOT_NULL(e);
    g_clear_error(&e);
    c.pim.n_channels = 2;
    c.pp_size = 2;
    c.num_devices = 2;
    CU_ASSERT_PTR_NULL(sv_msg_new(eng, &c, NULL, &e)); /* pipeline stages */
    CU_ASSERT_PTR_NOT_NULL(e);
    g_clear_error(&e);
    sv_compute_latency_free(lat);
    sv_memtier_kv_manager_free(kv);
    sv_engine_free(eng);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"decode step with attention on PIM (hand-computed)", test_offload_decode_step},
        {"sub-batch interleaving overlaps NPU and PIM (two layers)", test_sub_batch_overlap},
        {"refusals", test_refusals},
        {NULL, NULL},
    };
    sv_test_add_suite("msg_pim", cases);
    return sv_test_run();
}
