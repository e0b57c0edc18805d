/* Quantisation (docs/quantisation.md): the weight and KV-cache dtypes of an instance and what
 * they change in the model: bytes per decoder weight parameter (capacity, bytes a GEMM reads),
 * bytes per KV element (KV capacity, attention's KV read) and the tensor-core peak of the GEMMs.
 *
 * Names are vLLM's: `--quantization fp8` (W8A8 FP8, dynamic activation scales), the
 * compressed-tensors / llm-compressor schemes W8A8 (INT8 weights and activations), W8A16 and
 * W4A16 (weight-only; AWQ and GPTQ checkpoints are W4A16), and `--kv-cache-dtype`
 * {auto, bfloat16, fp8, fp8_e4m3, fp8_e5m2} (vLLM docs, "Quantization" and engine arguments). */
#include "compute.h"

#include <string.h>

struct quant_dtype {
    const char *name;
    const char *const aliases[6];
    double weight_bytes;
    sv_compute_peak peak;
};

/* Weight-only schemes dequantise to bf16 and run the bf16 tensor cores (Marlin / AWQ kernels). */
static const struct quant_dtype dtypes[] = {
    {"bf16", {"bfloat16", NULL}, 2, SV_COMPUTE_PEAK_BF16},
    {"fp16", {"float16", "half", NULL}, 2, SV_COMPUTE_PEAK_BF16},
    {"fp8", {"float8", "float8_e4m3fn", "fp8-w8a8", NULL}, 1, SV_COMPUTE_PEAK_FP8},
    {"w8a8", {"int8", "int8-w8a8", NULL}, 1, SV_COMPUTE_PEAK_INT8},
    {"w8a16", {"int8-wo", NULL}, 1, SV_COMPUTE_PEAK_BF16},
    {"w4a16", {"int4", "int4-wo", "awq", "gptq", NULL}, 0.5, SV_COMPUTE_PEAK_BF16},
};

static const struct {
    const char *name;
    const char *const aliases[4];
    int64_t bytes;
} kv_dtypes[] = {
    {"bf16", {"bfloat16", NULL}, 2},
    {"fp16", {"float16", "half", NULL}, 2},
    {"fp8", {"fp8_e4m3", "fp8_e5m2", NULL}, 1},
};

static gboolean is_auto(const char *s)
{
    return !s || !s[0] || !g_ascii_strcasecmp(s, "auto");
}

static int find_dtype(const char *s)
{
    for (size_t i = 0; i < G_N_ELEMENTS(dtypes); i++) {
        if (!g_ascii_strcasecmp(s, dtypes[i].name))
            return (int)i;
        for (int a = 0; dtypes[i].aliases[a]; a++)
            if (!g_ascii_strcasecmp(s, dtypes[i].aliases[a]))
                return (int)i;
    }
    return -1;
}

static int find_kv(const char *s)
{
    for (size_t i = 0; i < G_N_ELEMENTS(kv_dtypes); i++) {
        if (!g_ascii_strcasecmp(s, kv_dtypes[i].name))
            return (int)i;
        for (int a = 0; kv_dtypes[i].aliases[a]; a++)
            if (!g_ascii_strcasecmp(s, kv_dtypes[i].aliases[a]))
                return (int)i;
    }
    return -1;
}

const char *sv_compute_quant_canonical(const char *dtype, GError **error)
{
    if (is_auto(dtype))
        return "";
    int i = find_dtype(dtype);
    if (i < 0) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                    "'%s' is not a dtype (auto, bf16, fp16, fp8, w8a8, w8a16, w4a16; aliases "
                    "bfloat16, float16, half, int8 = w8a8, int8-wo = w8a16, int4, awq, gptq = "
                    "w4a16)",
                    dtype);
        return NULL;
    }
    return dtypes[i].name;
}

const char *sv_compute_quant_kv_canonical(const char *kv_cache_dtype, GError **error)
{
    if (is_auto(kv_cache_dtype))
        return "";
    int i = find_kv(kv_cache_dtype);
    if (i < 0) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                    "'%s' is not a KV cache dtype (auto, bf16, fp16, fp8, fp8_e4m3, fp8_e5m2)",
                    kv_cache_dtype);
        return NULL;
    }
    return kv_dtypes[i].name;
}

gboolean sv_compute_quant_apply(struct sv_compute_model_cfg *m, const char *dtype,
                                const char *kv_cache_dtype, GError **error)
{
    const char *d = sv_compute_quant_canonical(dtype, error);
    if (!d)
        return FALSE;
    const char *k = sv_compute_quant_kv_canonical(kv_cache_dtype, error);
    if (!k)
        return FALSE;
    if (d[0]) {
        const struct quant_dtype *q = &dtypes[find_dtype(d)];
        /* Every scheme keeps bf16/fp16 activations between layers (vLLM quantises them inside
         * the GEMM only), and embedding, lm_head and norms unquantised. */
        m->dtype_bytes = 2;
        m->weight_bytes = q->weight_bytes;
        m->gemm_peak = q->peak;
    }
    if (k[0])
        m->kv_bytes = kv_dtypes[find_kv(k)].bytes;
    return TRUE;
}

double sv_compute_model_weight_param_bytes(const struct sv_compute_model_cfg *m)
{
    return m->weight_bytes > 0 ? m->weight_bytes : (double)m->dtype_bytes;
}

int64_t sv_compute_model_kv_elem_bytes(const struct sv_compute_model_cfg *m)
{
    return m->kv_bytes > 0 ? m->kv_bytes : m->dtype_bytes;
}

double sv_compute_hw_gemm_peak_flops(const struct sv_compute_hw_cfg *hw,
                                     const struct sv_compute_model_cfg *m)
{
    switch ((sv_compute_peak)m->gemm_peak) {
    case SV_COMPUTE_PEAK_BF16:
        return hw->bf16_tflops * 1e12;
    case SV_COMPUTE_PEAK_FP8:
        return (hw->fp8_tflops > 0 ? hw->fp8_tflops : hw->bf16_tflops) * 1e12;
    case SV_COMPUTE_PEAK_INT8:
        return (hw->int8_tops > 0 ? hw->int8_tops : hw->bf16_tflops) * 1e12;
    case SV_COMPUTE_PEAK_DTYPE:
        break;
    }
    return sv_compute_hw_peak_flops(hw, (int)m->dtype_bytes);
}
