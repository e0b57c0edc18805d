/* Hardware catalog: peak FLOP/s, memory and interconnect of each accelerator, with sources.
 *
 * Unless noted, numbers are rows of ../shared/traces/hardware/hardware_specs.csv (columns
 * mem_GB, mem_bw_GBps, bf16_dense_TFLOPS, fp8_or_int8_dense_TFLOPS, scaleup_link_bw_GBps_bidir;
 * the interconnect is stored per direction = bidir / 2). That CSV cites its own sources (LA =
 * llm-analysis gpu_configs, GZ = GenZ, TPU6 = Google Cloud TPU v6e docs, PG-* = web pages).
 * FP32 (non-tensor) peaks are not in the CSV; they are the vendors' datasheet figures named in
 * each entry. */
#include "compute/compute_internal.h"

#include <string.h>

struct builtin_hw {
    const char *aliases; /* '|'-separated, compared case-insensitively, '-', '_', ' ' ignored */
    struct sv_compute_hw_cfg cfg;
};

static const struct builtin_hw builtin_hw[] = {
    {"A100-80GB|A100|A100-SXM|A100-SXM4-80GB|A100-SXM-80GB",
     {"A100-80GB", 312, 0, 19.5, 80, 2039, 300,
      "hardware_specs.csv row A100-SXM4-80GB (LA a100-sxm-80gb.json: 312 TFLOPS fp16, "
      "2039 GB/s; NVLink3 600 GB/s bidir); fp8: none on Ampere (INT8 624 TOPS); fp32 19.5 "
      "TFLOPS: NVIDIA A100 datasheet"}},
    {"H100-SXM|H100|H100-SXM5|H100-SXM5-80GB|H100-80GB",
     {"H100-SXM", 989, 1979, 67, 80, 3350, 450,
      "hardware_specs.csv row H100-SXM5-80GB (LA h100-sxm-80gb.json; GZ: 989 TFLOPS bf16, "
      "1979 fp8, 3350 GB/s, NVLink4 900 GB/s bidir); fp32 67 TFLOPS: NVIDIA H100 datasheet"}},
    {"H200|H200-SXM|H200-SXM-141GB",
     {"H200", 989, 1979, 67, 141, 4800, 450,
      "hardware_specs.csv row H200-SXM-141GB (PG-H200: 141 GB HBM3e, 4.8 TB/s, NVLink 900 GB/s; "
      "same GH100 die as H100 so 989 bf16 / 1979 fp8 dense); fp32 67 TFLOPS: NVIDIA H200 "
      "datasheet"}},
    {"RTX-A6000|A6000|RTXA6000",
     {"RTX-A6000", 154.8, 0, 38.7, 48, 768, 56.25,
      "hardware_specs.csv row RTX-A6000 (LA a6000-48gb.json: 154.8 TFLOPS fp16 tensor dense, "
      "768 GB/s, NVLink bridge 112.5 GB/s bidir); fp8: none on Ampere; fp32 38.7 TFLOPS: NVIDIA "
      "RTX A6000 datasheet"}},
    {"RTX-4090|RTX4090|4090|GeForce-RTX-4090",
     {"RTX-4090", 165.2, 330.3, 82.6, 24, 1008, 32,
      "hardware_specs.csv row RTX-4090 (LSS: 24 GB, 1008 GB/s); tensor peaks from the NVIDIA Ada "
      "Lovelace architecture whitepaper (BF16 with FP32 accumulate 165.2 dense, FP8 330.3 "
      "dense, FP32 82.6); link: PCIe 4.0 x16, 32 GB/s per direction (no NVLink)"}},
    {"RTX-PRO-6000|RTXPRO6000|RTX-PRO-6000-Blackwell|PRO6000",
     {"RTX-PRO-6000", 500, 1000, 125, 96, 1597, 64,
      "hardware_specs.csv row RTX-PRO-6000 (LSS: 96 GB, 1597 GB/s as LLMServingSim's cluster "
      "config uses; the GDDR7 spec is 1792 GB/s); tensor peaks derived from NVIDIA's GTC 2025 "
      "figure of 4000 AI TOPS FP4 with sparsity: /2 dense, /2 per precision step -> 1000 FP8, "
      "500 BF16 dense; fp32 125 TFLOPS (same announcement); link: PCIe 5.0 x16, 64 GB/s per "
      "direction"}},
    {"TPU-v6e|TPUv6e|TPU-v6e-1|v6e|Trillium",
     {"TPU-v6e", 918, 0, 0, 32, 1638, 400,
      "hardware_specs.csv row TPU-v6e (TPU6: Google Cloud TPU v6e docs: 918 TFLOPS bf16, "
      "1836 TOPS int8, 32 GB HBM, 1638 GB/s, ICI 800 GB/s bidir); no fp8 or fp32 figure "
      "published"}},
    {"MI300X|AMD-MI300X|Instinct-MI300X",
     {"MI300X", 1307.4, 2614.9, 163.4, 192, 5300, 448,
      "hardware_specs.csv row MI300X (GZ, PG-MI300X: 1307.4 TFLOPS bf16 dense, 2614.9 fp8, "
      "192 GB HBM3, 5.3 TB/s, Infinity Fabric 7 x 128 = 896 GB/s bidir); fp32 163.4 TFLOPS: "
      "AMD Instinct MI300X datasheet"}},
};

static const char *const builtin_hw_names[] = {
    "A100-80GB",    "H100-SXM", "H200",   "RTX-A6000", "RTX-4090",
    "RTX-PRO-6000", "TPU-v6e",  "MI300X", NULL,
};

/* Lowercase with '-', '_' and ' ' removed, so "RTX PRO 6000" == "rtxpro6000". */
static char *squash(const char *s, size_t n)
{
    GString *g = g_string_new(NULL);
    for (size_t i = 0; i < n && s[i]; i++)
        if (s[i] != '-' && s[i] != '_' && s[i] != ' ')
            g_string_append_c(g, g_ascii_tolower(s[i]));
    return g_string_free(g, FALSE);
}

gboolean sv_compute_hw_lookup(const char *name, struct sv_compute_hw_cfg *out, GError **error)
{
    g_autofree char *want = squash(name, strlen(name));
    for (size_t i = 0; i < G_N_ELEMENTS(builtin_hw); i++) {
        const char *a = builtin_hw[i].aliases;
        while (*a) {
            const char *bar = strchr(a, '|');
            size_t n = bar ? (size_t)(bar - a) : strlen(a);
            g_autofree char *cand = squash(a, n);
            if (!strcmp(cand, want)) {
                *out = builtin_hw[i].cfg;
                return TRUE;
            }
            a += n + (bar ? 1 : 0);
        }
    }
    g_autofree char *known = g_strjoinv(", ", (char **)builtin_hw_names);
    g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_UNKNOWN,
                "unknown hardware \"%s\" (built in: %s)", name, known);
    return FALSE;
}

gboolean sv_compute_hw_apply_overrides(struct sv_compute_hw_cfg *hw, JsonObject *obj,
                                       const char *where, GError **error)
{
    static const struct {
        const char *key;
        size_t off;
    } fields[] = {
        {"bf16_tflops", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, bf16_tflops)},
        {"fp8_tflops", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, fp8_tflops)},
        {"fp32_tflops", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, fp32_tflops)},
        {"mem_gb", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, mem_gb)},
        {"mem_bw_gbps", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, mem_bw_gbps)},
        {"link_bw_gbps", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, link_bw_gbps)},
    };
    /* Check every key first (sorted, so the first error is deterministic). */
    g_autoptr(GList) members = json_object_get_members(obj);
    members = g_list_sort(members, (GCompareFunc)g_strcmp0);
    for (GList *l = members; l; l = l->next) {
        const char *key = l->data;
        size_t f;
        for (f = 0; f < G_N_ELEMENTS(fields); f++)
            if (!strcmp(key, fields[f].key))
                break;
        if (f == G_N_ELEMENTS(fields)) {
            g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                        "unknown hardware field (expected bf16_tflops, fp8_tflops, fp32_tflops, "
                        "mem_gb, mem_bw_gbps or link_bw_gbps): %s.%s",
                        where, key);
            return FALSE;
        }
        double v;
        if (!sv_cfg_get_double(obj, key, where, TRUE, 0, &v, error))
            return FALSE;
        if (!(v > 0)) {
            g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                        "must be positive, got %g: %s.%s", v, where, key);
            return FALSE;
        }
        *(double *)((char *)hw + fields[f].off) = v;
    }
    return TRUE;
}

double sv_compute_hw_peak_flops(const struct sv_compute_hw_cfg *hw, int dtype_bytes)
{
    double tf = hw->bf16_tflops;
    if (dtype_bytes == 1 && hw->fp8_tflops > 0)
        tf = hw->fp8_tflops;
    else if (dtype_bytes == 4 && hw->fp32_tflops > 0)
        tf = hw->fp32_tflops;
    return tf * 1e12;
}
