/* The analytic latency model (compute/analytic.c): each operator class on shapes computed by hand
 * with given constants (device factors 1), CUDA-graph capture sizes and padding, and the committed
 * calibration against measured profiles. */
#include "compute/compute.h"
#include "compute/compute_internal.h"
#include "tests/test_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Round numbers: a toy device of 100 TFLOPS bf16, 1,000 GB/s, 100 SMs, no L2 known. */
static struct sv_compute_hw_cfg toy_hw(void)
{
    struct sv_compute_hw_cfg hw;
    memset(&hw, 0, sizeof hw);
    g_strlcpy(hw.name, "TOY", sizeof hw.name);
    hw.bf16_tflops = 100;
    hw.mem_bw_gbps = 1000;
    hw.compute_units = 100;
    return hw;
}

static const struct sv_compute_analytic_params toy_p = {
    .gemm_compute_eff = 0.5,
    .gemm_memory_eff = 0.8,
    .gemm_blend = 1000, /* (tc^p + tm^p)^(1/p) = max(tc, tm) to double precision */
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

static void toy_dev(struct sv_compute__an_dev *d, const struct sv_compute_hw_cfg *hw,
                    const struct sv_compute_analytic_params *p)
{
    sv_compute__an_dev_init(d, hw, 2, p, 1.0);
}

#define NEAR(a, b) CU_ASSERT_DOUBLE_EQUAL((a), (double)(b), fabs((double)(b)) * 1e-9 + 1e-6)

/* GEMM, weight-streaming regime: one token through a 4096 x 4096 bf16 weight moves 33,570,816
 * bytes (weights, input row, output row): 41,963.52 ns at 0.8 x 1,000 GB/s; its compute on a
 * 16-row tile is 2 x 16 x 4096 x 4096 / (0.5 x 100 TFLOPS) = 10,737 ns, under it. */
static void test_gemm_memory_bound(void)
{
    struct sv_compute_hw_cfg hw = toy_hw();
    struct sv_compute__an_dev d;
    toy_dev(&d, &hw, &toy_p);
    NEAR(sv_compute__an_gemm_ns(&d, 1, 1, 4096, 4096, 2), 33570816.0 / 800e9 * 1e9);
    /* The soft maximum with p = 2 joins both terms: sqrt(tc^2 + tm^2). */
    struct sv_compute_analytic_params p2 = toy_p;
    p2.gemm_blend = 2;
    toy_dev(&d, &hw, &p2);
    double tm = 33570816.0 / 800e9 * 1e9, tc = 2.0 * 16 * 4096 * 4096 / 50e12 * 1e9;
    NEAR(sv_compute__an_gemm_ns(&d, 1, 1, 4096, 4096, 2), sqrt(tc * tc + tm * tm));
}

/* GEMM, compute regime with wave quantisation on 100 SMs, small tiles at half speed per halving
 * of their area (gemm_small_tile_eff 0.5). M = 128, N = 25,856 = 101 x 256, K = 1,024:
 *   128 x 256 tiles: 101 > 100 SMs -> 2 waves, factor 200/101 = 1.980;
 *   128 x 128 tiles: 202 -> 3 waves, 300/202 = 1.485 (the best);
 *   128 x 64 tiles: 404 -> 5 waves, 500/404 x 2 (half speed) = 2.475;
 *   256-row tiles pad M = 128 to 256: at least 2.
 * tc = 2 x 128 x 25,856 x 1,024 x 300/202 / 50 TFLOPS. Memory: (N K + M K + M N) x 2 bytes /
 * 800 GB/s = 62.0 us, below tc = 201.3 us. */
static void test_gemm_waves(void)
{
    struct sv_compute_hw_cfg hw = toy_hw();
    struct sv_compute_analytic_params p = toy_p;
    p.gemm_small_tile_eff = 0.5;
    struct sv_compute__an_dev d;
    toy_dev(&d, &hw, &p);
    double tc = 2.0 * 128 * 25856 * 1024 * (300.0 / 202) / 50e12 * 1e9;
    NEAR(sv_compute__an_gemm_ns(&d, 1, 128, 25856, 1024, 2), tc);
    CU_ASSERT(tc > (25856.0 * 1024 + 128 * 1024 + 128 * 25856) * 2 / 800e9 * 1e9);
    /* Unknown SM count: no waves, only the tile padding (none here): the ideal. */
    hw.compute_units = 0;
    toy_dev(&d, &hw, &p);
    NEAR(sv_compute__an_gemm_ns(&d, 1, 128, 25856, 1024, 2),
         2.0 * 128 * 25856 * 1024 / 50e12 * 1e9);
    /* Fewer tiles than SMs: split K, one wave, no idle SM counted. 32 experts of 16 tokens,
     * 16 x 128 outputs each: 64 tiles of 16 x 64 on 100 SMs: the ideal compute time. */
    hw.compute_units = 100;
    p.gemm_small_tile_eff = 1;
    toy_dev(&d, &hw, &p);
    NEAR(sv_compute__an_gemm_ns(&d, 32, 16, 128, 1 << 20, 2),
         fmax(2.0 * 32 * 16 * 128 * (1 << 20) / 50e12,
              32.0 * (128.0 * (1 << 20) + 16.0 * (1 << 20) + 16 * 128) * 2 / 800e9) *
             1e9);
}

/* Prefill attention: 32 query heads, 8 KV heads, head_dim 128; one chunk of 128 tokens, no
 * history: 2 tiles of 64 rows per head, 64 CTAs on 100 SMs (one wave); the tiles see 64 and 128
 * keys under the causal mask, 96 on average: 4 x 64 x 128 x 96 FLOPs at 50 TFLOPS / 100 SMs,
 * + 1 us per CTA = 7.291 us. A chunk of 2,048 after 1,000 tokens: 32 x 32 = 1,024 CTAs, 11
 * waves, 1,000 + (2,048 + 64) / 2 = 2,056 keys each. */
static void test_attention_prefill(void)
{
    struct sv_compute_hw_cfg hw = toy_hw();
    struct sv_compute__an_dev d;
    toy_dev(&d, &hw, &toy_p);
    double slot = 50e12 / 100, per_key = 4.0 * 64 * 128;
    NEAR(sv_compute__an_attn_ns(&d, 32, 8, 128, 2, 128, 0, 1, 0, 0, 0),
         (per_key * 96 / slot + 1e-6) * 1e9);
    NEAR(sv_compute__an_attn_ns(&d, 32, 8, 128, 2, 2048, 1000, 1, 0, 0, 0),
         11 * (per_key * 2056 / slot + 1e-6) * 1e9);
}

/* Decode only: 4 sequences of 1,000 tokens: K and V of 8 heads once, 2 x 8 x 128 x 2 x 4,000
 * bytes, and q and out, 2 x 4 x 32 x 128 x 2: 16,449,536 bytes at 0.8 x 1,000 GB/s = 20.56 us;
 * the longest sequence's 4,096,000 bytes at 50 fair shares (50 x 8 GB/s) take 10.24 us, less;
 * 32 CTAs, one wave of 1 us. A lone sequence of 100,000 tokens is bound by its share:
 * 409.6 MB / 400 GB/s = 1,024 us > 512 us at the full bandwidth. */
static void test_attention_decode(void)
{
    struct sv_compute_hw_cfg hw = toy_hw();
    struct sv_compute__an_dev d;
    toy_dev(&d, &hw, &toy_p);
    NEAR(sv_compute__an_attn_ns(&d, 32, 8, 128, 2, 0, 0, 0, 4, 4000, 1000),
         (16449536.0 / 800e9 + 1e-6) * 1e9);
    NEAR(sv_compute__an_attn_ns(&d, 32, 8, 128, 2, 0, 0, 0, 1, 100000, 100000),
         (2.0 * 8 * 128 * 2 * 100000 / (50 * 800e9 / 100) + 1e-6) * 1e9);
}

/* Mixed: a 16-token chunk with 100 decodes of 1,000 tokens. CTAs: 32 for the chunk (one tile
 * each, 16 keys) and 3,200 one-row decode tiles (1,001 keys each, 66.6 us): 3,232 CTAs in 33
 * waves of the mean CTA, 2,172 us. The decodes' per-head KV reads: a wave holds 100 / (3,232 /
 * 32) = 0.99 heads, under attn_mixed_k = 1 per group member, and no L2 is known: no sharing,
 * 2 x 32 x 128 x 2 x 100,000 bytes at 800 GB/s = 2,048 us; the waves decide. Halve the slot
 * rate's work (attn_prefill_eff 1): the waves take 1,104 us and the bandwidth decides; with an
 * L2 of 64 MiB, half of it (attn_l2_frac) holding one KV head's 51.2 MB: share 1 + 3 x 0.655 =
 * 2.966 of the group's 4 heads, 690 us, and the waves decide again. */
static void test_attention_mixed(void)
{
    struct sv_compute_hw_cfg hw = toy_hw();
    struct sv_compute_analytic_params p = toy_p;
    struct sv_compute__an_dev d;
    toy_dev(&d, &hw, &p);
    double per_key = 4.0 * 64 * 128, bw_all = 2.0 * 32 * 128 * 2 * 100000 / 800e9;
    for (int k = 0; k < 3; k++) {
        double slot = (k ? 100e12 : 50e12) / 100;
        double t_p = per_key * 16 / slot + 1e-6, t_d = per_key * 1001 / slot + 1e-6;
        double waves = 33 * (32 * t_p + 3200 * t_d) / 3232;
        double share = k < 2 ? 1 : 1 + 3 * (0.5 * 64 * 1048576.0 / (2.0 * 128 * 2 * 100000));
        CU_ASSERT((k == 1) == (bw_all / share > waves));
        NEAR(sv_compute__an_attn_ns(&d, 32, 8, 128, 2, 16, 0, 1, 100, 100000, 1000),
             fmax(waves, bw_all / share) * 1e9);
        p.attn_prefill_eff = 1;
        if (k == 1)
            hw.l2_mib = 64;
        toy_dev(&d, &hw, &p);
    }
}

/* Elementwise: an RMSNorm of 1,000 tokens of 4,096 (residual fused: x and residual in, both
 * out) moves 4 x 1,000 x 4,096 x 2 = 32,768,000 bytes: 65.536 us at 0.5 x 1,000 GB/s; with a
 * 64 MiB L2 holding them, ew_l2_gain = 2 times faster. */
static void test_elementwise(void)
{
    struct sv_compute_hw_cfg hw = toy_hw();
    struct sv_compute__an_dev d;
    toy_dev(&d, &hw, &toy_p);
    NEAR(sv_compute__an_ew_ns(&d, 32768000), 65536);
    hw.l2_mib = 64;
    toy_dev(&d, &hw, &toy_p);
    NEAR(sv_compute__an_ew_ns(&d, 32768000), 32768);
    NEAR(sv_compute__an_ew_ns(&d, 80e6), 160000); /* 80 MB: over the L2 */
}

/* Operators of Llama-3.1-8B through the latency interface: kernels and launches (2 us each),
 * eager (graphs off) and inside a CUDA graph (400 ns less per kernel). */
static void test_operators(void)
{
    struct sv_compute_model_cfg m;
    CU_ASSERT_FATAL(sv_compute_model_lookup("Llama-3.1-8B", NULL, &m, NULL));
    struct sv_compute_hw_cfg hw = toy_hw();
    g_autoptr(sv_compute_latency) lat = sv_compute_latency_new_roofline(&m, &hw, 1, &toy_p, NULL);
    CU_ASSERT_FATAL(lat != NULL);
    sv_compute_latency_set_cudagraph(lat, 0, 0); /* eager */
    int64_t ch[] = {1000}, hist[] = {0};
    struct sv_compute_batch_shape s;
    sv_compute_batch_shape_init(&s, ch, hist, 1, NULL, 0);
    /* input_layernorm: 4 x 1,000 x 4,096 x 2 bytes, one kernel */
    SV_ASSERT_EQ_I64(sv_compute_op_time(lat, SV_COMPUTE_OP_LAYERNORM, &s), 65536 + 2000);
    /* act_fn: SiLU x up, 3 x 1,000 x 14,336 x 2 bytes at 500 GB/s */
    SV_ASSERT_EQ_I64(sv_compute_op_time(lat, SV_COMPUTE_OP_ACT_FN, &s),
                     (int64_t)(3.0 * 1000 * 14336 * 2 / 500e9 * 1e9 + 2000));
    /* Kernel counts: attention 2 with a prefill, 3 decode-only (split-KV combine); q/k norms 2;
     * the MoE layer 7; the sampler 4. */
    CU_ASSERT_EQUAL(sv_compute__an_kernels(SV_COMPUTE_OP_ATTENTION, &s), 2);
    int64_t kv[] = {100};
    struct sv_compute_batch_shape dec;
    sv_compute_batch_shape_init(&dec, NULL, NULL, 0, kv, 1);
    CU_ASSERT_EQUAL(sv_compute__an_kernels(SV_COMPUTE_OP_ATTENTION, &dec), 3);
    CU_ASSERT_EQUAL(sv_compute__an_kernels(SV_COMPUTE_OP_QK_NORM, &s), 2);
    CU_ASSERT_EQUAL(sv_compute__an_kernels(SV_COMPUTE_OP_MOE, &s), 7);
    CU_ASSERT_EQUAL(sv_compute__an_kernels(SV_COMPUTE_OP_SAMPLER, &s), 4);
    /* The sampler: 2 fp32 passes over 128,256 logits of one sequence, 4 kernels. */
    SV_ASSERT_EQ_I64(sv_compute_op_time(lat, SV_COMPUTE_OP_SAMPLER, &dec),
                     (int64_t)(2.0 * 128256 * 4 / 500e9 * 1e9 + 4 * 2000));
    /* No tokens, no attention. */
    struct sv_compute_batch_shape none = {0};
    SV_ASSERT_EQ_I64(sv_compute_op_time(lat, SV_COMPUTE_OP_ATTENTION, &none), 0);
}

/* vLLM's capture sizes (VllmConfig._set_cudagraph_sizes): max_num_seqs 128 -> up to 256: 1, 2,
 * 4, 8, ..., 248, 256; max_num_seqs 512 -> up to 512 in steps of 16 from 256; none above
 * max_num_batched_tokens. A decode-only batch of 3 runs as a full graph padded to 4: its GEMMs
 * see 4 tokens and every kernel launches 400 ns faster; the lm_head runs after the graph, eager
 * and unpadded. */
static void test_cudagraph(void)
{
    struct sv_compute_model_cfg m;
    CU_ASSERT_FATAL(sv_compute_model_lookup("Llama-3.1-8B", NULL, &m, NULL));
    struct sv_compute_hw_cfg hw = toy_hw();
    g_autoptr(sv_compute_latency) lat = sv_compute_latency_new_roofline(&m, &hw, 1, &toy_p, NULL);
    CU_ASSERT_FATAL(lat != NULL);
    sv_compute_latency_set_cudagraph(lat, 128, 8192);
    SV_ASSERT_EQ_I64(sv_compute_cudagraph_size(lat, 3), 4);
    SV_ASSERT_EQ_I64(sv_compute_cudagraph_size(lat, 9), 16);
    SV_ASSERT_EQ_I64(sv_compute_cudagraph_size(lat, 249), 256);
    SV_ASSERT_EQ_I64(sv_compute_cudagraph_size(lat, 257), 257); /* above: eager */
    sv_compute_latency_set_cudagraph(lat, 512, 8192);
    SV_ASSERT_EQ_I64(sv_compute_cudagraph_size(lat, 257), 272);
    SV_ASSERT_EQ_I64(sv_compute_cudagraph_size(lat, 500), 512);
    sv_compute_latency_set_cudagraph(lat, 512, 300);
    SV_ASSERT_EQ_I64(sv_compute_cudagraph_size(lat, 290), 290); /* 304 > 300 tokens: dropped */

    sv_compute_latency_set_cudagraph(lat, 128, 2048);
    int64_t kv[] = {10, 10, 10};
    struct sv_compute_batch_shape dec;
    sv_compute_batch_shape_init(&dec, NULL, NULL, 0, kv, 3);
    struct sv_compute__an_dev d;
    toy_dev(&d, &hw, &toy_p);
    double gemm4 = sv_compute__an_gemm_ns(&d, 1, 4, 6144, 4096, 2);
    SV_ASSERT_EQ_I64(sv_compute_op_time(lat, SV_COMPUTE_OP_QKV_PROJ, &dec),
                     (int64_t)(gemm4 + 1600));
    double head3 = sv_compute__an_gemm_ns(&d, 1, 3, 128256, 4096, 2);
    SV_ASSERT_EQ_I64(sv_compute_op_time(lat, SV_COMPUTE_OP_LM_HEAD, &dec), (int64_t)(head3 + 2000));
    sv_compute_latency_set_cudagraph(lat, 0, 0); /* eager: unpadded, full launch */
    SV_ASSERT_EQ_I64(sv_compute_op_time(lat, SV_COMPUTE_OP_QKV_PROJ, &dec),
                     (int64_t)(sv_compute__an_gemm_ns(&d, 1, 3, 6144, 4096, 2) + 2000));
}

/* The committed calibration, checked against what it was fitted on (../shared): the measured
 * RTX PRO 6000 bundle's qkv_proj at 2,048 tokens (302.965 us) and its lm_head of one sequence
 * (714.006 us) within 15%; and a physical floor on a catalog device without profiles: the H200's
 * Llama-3.1-8B decode step reads every weight once, so it cannot beat weight bytes / 4.8 TB/s. */
static void test_calibration(void)
{
    struct sv_compute_model_cfg m;
    CU_ASSERT_FATAL(sv_compute_model_lookup("Llama-3.1-8B", NULL, &m, NULL));
    struct sv_compute_hw_cfg hw;
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H200", &hw, NULL));
    g_autoptr(sv_compute_latency) h200 = sv_compute_latency_new_roofline(&m, &hw, 1, NULL, NULL);
    CU_ASSERT_FATAL(h200 != NULL);
    int64_t kv[] = {512};
    struct sv_compute_batch_shape dec;
    sv_compute_batch_shape_init(&dec, NULL, NULL, 0, kv, 1);
    struct sv_compute_iter_time it;
    sv_compute_iter_time(h200, &dec, 0, m.num_layers, &it);
    double floor_ns = (double)sv_compute_model_weight_bytes(&m, 1) / 4.8e12 * 1e9;
    CU_ASSERT((double)it.total_ns > floor_ns);
    CU_ASSERT((double)it.total_ns < 2 * floor_ns);
    CU_ASSERT(sv_compute__an_device_fit("H200") == NULL); /* no profiles: class constants */

    SV_REQUIRE_SHARED("reference/llmservingsim/profiles/RTXPRO6000/meta-llama/Llama-3.1-8B/bf16",
                      "LLMServingSim's measured RTXPRO6000 bundle");
    CU_ASSERT_FATAL(sv_compute_hw_lookup("RTXPRO6000", &hw, NULL));
    CU_ASSERT(sv_compute__an_device_fit(hw.name) != NULL);
    g_autoptr(sv_compute_latency) lat = sv_compute_latency_new_roofline(&m, &hw, 1, NULL, NULL);
    sv_compute_latency_set_cudagraph(lat, 0, 0); /* the profiles are eager */
    struct sv_compute_batch_shape s = {0};
    s.tokens = s.n_seqs = 2048;
    double qkv = (double)sv_compute_op_time(lat, SV_COMPUTE_OP_QKV_PROJ, &s);
    printf("\n  RTX PRO 6000 qkv_proj 2,048 tokens: %.1f us (measured 302.965)\n", qkv / 1e3);
    CU_ASSERT(fabs(qkv / 302965 - 1) < 0.15);
    s.tokens = s.n_seqs = 1;
    double head = (double)sv_compute_op_time(lat, SV_COMPUTE_OP_LM_HEAD, &s);
    printf("  RTX PRO 6000 lm_head 1 sequence: %.1f us (measured 714.006)\n", head / 1e3);
    CU_ASSERT(fabs(head / 714006 - 1) < 0.15);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"GEMM: weight streaming, soft maximum", test_gemm_memory_bound},
        {"GEMM: tiles, waves, split K", test_gemm_waves},
        {"attention: prefill tiles in waves", test_attention_prefill},
        {"attention: decode at the bandwidth", test_attention_decode},
        {"attention: mixed batch, KV sharing in L2", test_attention_mixed},
        {"elementwise: bytes, L2", test_elementwise},
        {"operators: kernels and launches", test_operators},
        {"CUDA graphs: capture sizes, padding, launches", test_cudagraph},
        {"committed calibration", test_calibration},
        {NULL, NULL},
    };
    sv_test_add_suite("analytic", cases);
    return sv_test_run();
}
