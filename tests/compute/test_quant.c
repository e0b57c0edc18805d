/* Quantisation (compute/quant.c, docs/quantisation.md): dtype names and errors, weight and KV
 * bytes of Llama-3.1-8B by hand, and the analytic model's GEMM and attention bytes / peaks under
 * each scheme, on a toy device with round numbers where every term is computed by hand. */
#include "compute/compute.h"
#include "tests/test_util.h"

#include <math.h>
#include <string.h>

static void test_names(void)
{
    const char *pairs[][2] = {{"bfloat16", "bf16"}, {"BF16", "bf16"},     {"float16", "fp16"},
                              {"half", "fp16"},     {"fp8", "fp8"},       {"int8", "w8a8"},
                              {"w8a8", "w8a8"},     {"int8-wo", "w8a16"}, {"awq", "w4a16"},
                              {"gptq", "w4a16"},    {"int4", "w4a16"},    {"auto", ""}};
    for (size_t i = 0; i < G_N_ELEMENTS(pairs); i++)
        CU_ASSERT_STRING_EQUAL(sv_compute_quant_canonical(pairs[i][0], NULL), pairs[i][1]);
    CU_ASSERT_STRING_EQUAL(sv_compute_quant_kv_canonical("fp8_e5m2", NULL), "fp8");
    CU_ASSERT_STRING_EQUAL(sv_compute_quant_kv_canonical("auto", NULL), "");
    GError *e = NULL;
    CU_ASSERT_PTR_NULL(sv_compute_quant_canonical("fp9", &e));
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, "'fp9' is not a dtype (auto, bf16, fp16, fp8, w8a8"));
    g_clear_error(&e);
    CU_ASSERT_PTR_NULL(sv_compute_quant_kv_canonical("int4", &e));
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, "'int4' is not a KV cache dtype (auto, bf16"));
    g_clear_error(&e);
    struct sv_compute_model_cfg m;
    CU_ASSERT_FATAL(sv_compute_model_lookup("Llama-3.1-8B", NULL, &m, NULL));
    CU_ASSERT_FALSE(sv_compute_quant_apply(&m, "bf16", "int8", &e));
    CU_ASSERT_PTR_NOT_NULL(e);
    g_clear_error(&e);
}

/* Llama-3.1-8B (hidden 4096, 32 layers, 32 heads / 8 KV heads of 128, FFN 14336, vocab 128256,
 * untied lm_head). One decoder layer: qkv 4096 x (4096 + 2 x 1024) = 25,165,824; o 16,777,216;
 * gate_up 2 x 4096 x 14336 = 117,440,512; down 58,720,256; two norms 8,192: 218,112,000
 * parameters; 32 layers 6,979,584,000. Embedding and lm_head 2 x 128256 x 4096 =
 * 1,050,673,152, final norm 4,096: 8,030,261,248 in all.
 *   bf16: 2 bytes each = 16,060,522,496 B.
 *   fp8 / w8a8 / w8a16: layers at 1 byte, embedding, lm_head and final norm at 2:
 *     6,979,584,000 + 2 x 1,050,677,248 = 9,080,938,496 B.
 *   w4a16: 3,489,792,000 + 2,101,354,496 = 5,591,146,496 B.
 * KV per token and layer: 2 (K, V) x 8 x 128 x 2 bytes = 4,096 (bf16), 2,048 (fp8). */
static void test_weight_and_kv_bytes(void)
{
    const struct {
        const char *dtype, *kv;
        uint64_t weights, kv_tok;
    } rows[] = {{"auto", "auto", 16060522496ull, 4096}, {"bfloat16", NULL, 16060522496ull, 4096},
                {"fp8", NULL, 9080938496ull, 4096},     {"w8a8", NULL, 9080938496ull, 4096},
                {"w8a16", NULL, 9080938496ull, 4096},   {"w4a16", NULL, 5591146496ull, 4096},
                {"bf16", "fp8", 16060522496ull, 2048},  {"fp8", "fp8_e4m3", 9080938496ull, 2048}};
    for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
        struct sv_compute_model_cfg m;
        CU_ASSERT_FATAL(sv_compute_model_lookup("Llama-3.1-8B", NULL, &m, NULL));
        CU_ASSERT_FATAL(sv_compute_quant_apply(&m, rows[i].dtype, rows[i].kv, NULL));
        SV_ASSERT_EQ_I64(sv_compute_model_weight_bytes(&m, 1), rows[i].weights);
        SV_ASSERT_EQ_I64(sv_compute_model_kv_bytes_per_token_layer(&m, 1), rows[i].kv_tok);
    }
}

/* Round numbers: 100 TFLOPS bf16, 200 fp8, 400 INT8, 1,000 GB/s; no SM count (no wave
 * quantisation), no L2. */
static struct sv_compute_hw_cfg toy_hw(void)
{
    struct sv_compute_hw_cfg hw;
    memset(&hw, 0, sizeof hw);
    g_strlcpy(hw.name, "TOY", sizeof hw.name);
    hw.bf16_tflops = 100;
    hw.fp8_tflops = 200;
    hw.int8_tops = 400;
    hw.mem_bw_gbps = 1000;
    return hw;
}

static const struct sv_compute_analytic_params toy_p = {
    .gemm_compute_eff = 0.5,
    .gemm_memory_eff = 0.8,
    .gemm_blend = 1000, /* max(tc, tm) to double precision */
    .gemm_small_tile_eff = 1,
    .attn_prefill_eff = 0.5,
    .attn_mixed_k = 1,
    .attn_decode_eff = 0.8,
    .attn_cta_bw = 50,
    .attn_cta_ns = 1000,
    .attn_l2_frac = 0.5,
    .attn_launch_ratio = 1,
    .ew_memory_eff = 0.5,
    .ew_launch_ratio = 1,
    .ew_l2_gain = 2,
    .sampler_passes = 2,
    .launch_ns = 2000,
};

static sv_compute_latency *toy_lat(const char *dtype, const char *kv, const char *hwname)
{
    struct sv_compute_model_cfg m;
    CU_ASSERT_FATAL(sv_compute_model_lookup("Llama-3.1-8B", NULL, &m, NULL));
    CU_ASSERT_FATAL(sv_compute_quant_apply(&m, dtype, kv, NULL));
    struct sv_compute_hw_cfg hw = toy_hw();
    if (hwname && !strcmp(hwname, "no-fp8"))
        hw.fp8_tflops = hw.int8_tops = 0; /* A100-like: the bf16 peak is the fallback */
    sv_compute_latency *lat = sv_compute_latency_new_roofline(&m, &hw, 1, &toy_p, NULL);
    CU_ASSERT_FATAL(lat != NULL);
    sv_compute_latency_set_cudagraph(lat, 0, 0); /* eager: one 2 us launch per GEMM */
    return lat;
}

static sv_time op_ns(const char *dtype, const char *kv, const char *hw, sv_compute_op_kind op,
                     int64_t chunk, int64_t n_decode, int64_t kv_len)
{
    sv_compute_latency *lat = toy_lat(dtype, kv, hw);
    struct sv_compute_batch_shape s;
    int64_t ch[] = {chunk}, hist[] = {0};
    int64_t dk[64];
    for (int i = 0; i < 64; i++)
        dk[i] = kv_len;
    sv_compute_batch_shape_init(&s, ch, hist, chunk > 0 ? 1 : 0, dk, (int)n_decode);
    sv_time t = sv_compute_op_time(lat, op, &s);
    sv_compute_latency_free(lat);
    return t;
}

#define NEAR_NS(t, want) CU_ASSERT(fabs((double)(t) - (want)) <= 1.0)

/* Decode, one token through gate_up (4096 -> 2 x 14336 = 28,672): bandwidth-bound. Bytes =
 * weights 28,672 x 4,096 x wb + input and output rows (4,096 + 28,672) x 2 at 0.8 x 1,000 GB/s:
 *   bf16 234,881,024 + 65,536 = 234,946,560 B -> 293,683.2 ns
 *   fp8  117,440,512 + 65,536 = 117,506,048 B -> 146,882.56 ns (w8a8, w8a16 the same)
 * plus one 2,000 ns launch. The compute term, a 16-row tile at the bf16 peak (weight-only
 * kernels dequantise to bf16): 2 x 16 x 28,672 x 4,096 / 50 TFLOPS = 75,161.93 ns, is under
 * those, but not under w4a16's 58,785,792 B -> 73,482.24 ns: on this slow toy device int4
 * weights make one token compute-bound (75,161.93 ns). */
static void test_decode_weight_read(void)
{
    NEAR_NS(op_ns("bf16", NULL, NULL, SV_COMPUTE_OP_GATE_UP_PROJ, 0, 1, 100), 293683.2 + 2000);
    NEAR_NS(op_ns("fp8", NULL, NULL, SV_COMPUTE_OP_GATE_UP_PROJ, 0, 1, 100), 146882.56 + 2000);
    NEAR_NS(op_ns("w8a8", NULL, NULL, SV_COMPUTE_OP_GATE_UP_PROJ, 0, 1, 100), 146882.56 + 2000);
    NEAR_NS(op_ns("w8a16", NULL, NULL, SV_COMPUTE_OP_GATE_UP_PROJ, 0, 1, 100), 146882.56 + 2000);
    NEAR_NS(op_ns("w4a16", NULL, NULL, SV_COMPUTE_OP_GATE_UP_PROJ, 0, 1, 100),
            2.0 * 16 * 28672 * 4096 / 50e12 * 1e9 + 2000);
    /* lm_head stays bf16 (vLLM quantises the decoder's linear layers only): 128,256 x 4,096 x 2
     * + (4,096 + 128,256) x 2 = 1,050,937,856 B -> 1,313,672.32 ns whatever the dtype. */
    sv_time lm_bf16 = op_ns("bf16", NULL, NULL, SV_COMPUTE_OP_LM_HEAD, 0, 1, 100);
    NEAR_NS(lm_bf16, 1313672.32 + 2000);
    SV_ASSERT_EQ_I64(op_ns("w4a16", NULL, NULL, SV_COMPUTE_OP_LM_HEAD, 0, 1, 100), lm_bf16);
}

/* Prefill of 4,096 tokens through gate_up: 2 x 4,096 x 28,672 x 4,096 = 962,072,674,304 FLOPs
 * (full 128 x 256 tiles, no padding), at 0.5 x the scheme's peak:
 *   bf16 (and the weight-only w8a16 / w4a16, which dequantise to bf16): 50 TFLOPS ->
 *   19,241,453.49 ns; fp8: 100 -> 9,620,726.74 ns; w8a8 (INT8): 200 -> 4,810,363.37 ns;
 * the bytes (629 us at bf16) are far under. A device without fp8 / INT8 peaks runs fp8 and w8a8
 * at its bf16 peak (the documented fallback). */
static void test_prefill_peak(void)
{
    const double flop = 2.0 * 4096 * 28672 * 4096;
    NEAR_NS(op_ns("bf16", NULL, NULL, SV_COMPUTE_OP_GATE_UP_PROJ, 4096, 0, 0),
            flop / 50e12 * 1e9 + 2000);
    NEAR_NS(op_ns("w4a16", NULL, NULL, SV_COMPUTE_OP_GATE_UP_PROJ, 4096, 0, 0),
            flop / 50e12 * 1e9 + 2000);
    NEAR_NS(op_ns("w8a16", NULL, NULL, SV_COMPUTE_OP_GATE_UP_PROJ, 4096, 0, 0),
            flop / 50e12 * 1e9 + 2000);
    NEAR_NS(op_ns("fp8", NULL, NULL, SV_COMPUTE_OP_GATE_UP_PROJ, 4096, 0, 0),
            flop / 100e12 * 1e9 + 2000);
    NEAR_NS(op_ns("w8a8", NULL, NULL, SV_COMPUTE_OP_GATE_UP_PROJ, 4096, 0, 0),
            flop / 200e12 * 1e9 + 2000);
    NEAR_NS(op_ns("fp8", NULL, "no-fp8", SV_COMPUTE_OP_GATE_UP_PROJ, 4096, 0, 0),
            flop / 50e12 * 1e9 + 2000);
    NEAR_NS(op_ns("w8a8", NULL, "no-fp8", SV_COMPUTE_OP_GATE_UP_PROJ, 4096, 0, 0),
            flop / 50e12 * 1e9 + 2000);
}

/* The catalog's peaks: H100 SXM fp8 1,979 vs bf16 989 TFLOPS dense (NVIDIA H100 datasheet, via
 * compute/hardware.json); the A100 has no fp8 (bf16 fallback) but INT8 624 TOPS. */
static void test_catalog_peaks(void)
{
    struct sv_compute_hw_cfg h100, a100;
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100", &h100, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("A100", &a100, NULL));
    struct sv_compute_model_cfg m;
    CU_ASSERT_FATAL(sv_compute_model_lookup("Llama-3.1-8B", NULL, &m, NULL));
    CU_ASSERT_DOUBLE_EQUAL(sv_compute_hw_gemm_peak_flops(&h100, &m), 989e12, 1);
    struct sv_compute_model_cfg q = m;
    CU_ASSERT_FATAL(sv_compute_quant_apply(&q, "fp8", NULL, NULL));
    CU_ASSERT_DOUBLE_EQUAL(sv_compute_hw_gemm_peak_flops(&h100, &q), 1979e12, 1);
    CU_ASSERT_DOUBLE_EQUAL(sv_compute_hw_gemm_peak_flops(&a100, &q), 312e12, 1);
    q = m;
    CU_ASSERT_FATAL(sv_compute_quant_apply(&q, "w8a8", NULL, NULL));
    CU_ASSERT_DOUBLE_EQUAL(sv_compute_hw_gemm_peak_flops(&a100, &q), 624e12, 1);
    q = m;
    CU_ASSERT_FATAL(sv_compute_quant_apply(&q, "awq", NULL, NULL));
    CU_ASSERT_DOUBLE_EQUAL(sv_compute_hw_gemm_peak_flops(&h100, &q), 989e12, 1);
}

/* Decode attention's KV read (sv_compute_op_cost): kv_tokens x 2 x 8 x 128 x kv bytes plus q and
 * o rows 2 x T x 32 x 128 x 2: 8 decodes of 1,000 tokens of history and their new one (8,008 KV
 * tokens, T = 8) read 32,800,768 + 131,072 B with a bf16 cache and 16,400,384 + 131,072 with
 * fp8. */
static void test_kv_read_bytes(void)
{
    struct sv_compute_model_cfg m, q;
    CU_ASSERT_FATAL(sv_compute_model_lookup("Llama-3.1-8B", NULL, &m, NULL));
    q = m;
    CU_ASSERT_FATAL(sv_compute_quant_apply(&q, NULL, "fp8", NULL));
    int64_t dk[8] = {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000};
    struct sv_compute_batch_shape s;
    sv_compute_batch_shape_init(&s, NULL, NULL, 0, dk, 8);
    double f, by;
    sv_compute_op_cost(&m, 1, SV_COMPUTE_OP_ATTENTION, &s, &f, &by);
    CU_ASSERT_DOUBLE_EQUAL(by, 32800768.0 + 131072.0, 1e-6);
    sv_compute_op_cost(&q, 1, SV_COMPUTE_OP_ATTENTION, &s, &f, &by);
    CU_ASSERT_DOUBLE_EQUAL(by, 16400384.0 + 131072.0, 1e-6);
    /* and the analytic decode attention is faster with the fp8 cache (its bandwidth term) */
    CU_ASSERT(op_ns("bf16", "fp8", NULL, SV_COMPUTE_OP_ATTENTION, 0, 8, 1000) <
              op_ns("bf16", "auto", NULL, SV_COMPUTE_OP_ATTENTION, 0, 8, 1000));
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"names, aliases and errors", test_names},
        {"Llama-3.1-8B weight and KV bytes by dtype", test_weight_and_kv_bytes},
        {"decode GEMM reads the quantised weights", test_decode_weight_read},
        {"prefill GEMM at the scheme's peak, fallback", test_prefill_peak},
        {"catalog peaks (H100 fp8, A100 INT8)", test_catalog_peaks},
        {"attention KV bytes with an fp8 cache", test_kv_read_bytes},
        {NULL, NULL},
    };
    sv_test_add_suite("quant", cases);
    return sv_test_run();
}
