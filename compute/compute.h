/* servesim compute: model and hardware catalogs, decoder layer sequences, and operator latency
 * (LLMServingSim profile bundles, the legacy perf_models layout, and a calibrated analytic model
 * per operator class, the `roofline` backend).
 *
 * One latency interface: the time of one operator (a layer kind of the model's layer sequence)
 * for one batch shape on one device (one TP rank). The serving core asks for a whole iteration
 * with sv_compute_iter_time() and builds its per-layer DAG from the breakdown. */
#ifndef SV_COMPUTE_H
#define SV_COMPUTE_H

#include "core/core.h"

#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdint.h>

G_BEGIN_DECLS

#define SV_COMPUTE_ERROR (sv_compute_error_quark())
GQuark sv_compute_error_quark(void);
typedef enum {
    SV_COMPUTE_ERROR_UNKNOWN, /* unknown model, hardware, layer or architecture */
    SV_COMPUTE_ERROR_MISSING, /* a profile file, column, layer, tp<N> folder or point is absent */
    SV_COMPUTE_ERROR_PARSE,   /* a file is malformed (file, line, column named) */
    SV_COMPUTE_ERROR_INVALID, /* a value is out of range (field path named) */
} sv_compute_error_code;

/* ---- models ----------------------------------------------------------------------------- */

/* Decoder architectures; each has one layer sequence (models/<model_type>.yaml). */
typedef enum {
    SV_COMPUTE_ARCH_LLAMA,     /* llama.yaml (Llama-2 and Llama-3.x) */
    SV_COMPUTE_ARCH_QWEN3,     /* qwen3.yaml */
    SV_COMPUTE_ARCH_QWEN3_MOE, /* qwen3_moe.yaml */
    SV_COMPUTE_ARCH_MIXTRAL,   /* mixtral.yaml */
    SV_COMPUTE_ARCH_PHIMOE,    /* phimoe.yaml */
    SV_COMPUTE_ARCH_COUNT
} sv_compute_model_arch;

/* Hugging Face config.json facts. */
struct sv_compute_model_cfg {
    char name[96];       /* "org/name" when the org is known, else "name" */
    char model_type[24]; /* config.json model_type: llama, qwen3, qwen3_moe, mixtral, phimoe */
    sv_compute_model_arch arch;
    int64_t hidden_size;
    int64_t num_heads;
    int64_t num_kv_heads;
    int64_t head_dim;
    int64_t num_layers;
    int64_t intermediate_size;
    int64_t vocab_size;
    int64_t num_experts;           /* 0 for dense models */
    int64_t experts_per_tok;       /* top-k; 0 for dense */
    int64_t moe_intermediate_size; /* per-expert FFN width (0 for dense) */
    gboolean tie_embeddings;
    gboolean attention_bias;
    int64_t dtype_bytes; /* torch_dtype: 2 for bf16/fp16, 4 for fp32, 1 for fp8 */
    /* Quantisation (compute/quant.c, docs/quantisation.md); 0 = dtype_bytes and its peak. */
    double weight_bytes; /* bytes per parameter of the decoder blocks (linear layers) */
    int64_t kv_bytes;    /* bytes per K or V element of the KV cache */
    int32_t gemm_peak;   /* sv_compute_peak of the decoder's GEMMs */
    /* Context length: config.json max_position_embeddings, vLLM's max_model_len when none is
     * given (none of the built-ins has a rope scaling that vLLM multiplies it by); 0 = unknown,
     * no limit. */
    int64_t max_position_embeddings;
};

/* The tensor-core peak a GEMM runs at (compute/quant.c). */
typedef enum {
    SV_COMPUTE_PEAK_DTYPE = 0, /* by dtype_bytes (sv_compute_hw_peak_flops) */
    SV_COMPUTE_PEAK_BF16,
    SV_COMPUTE_PEAK_FP8,
    SV_COMPUTE_PEAK_INT8,
} sv_compute_peak;

/* Quantisation (docs/quantisation.md). `dtype`: NULL, "" or "auto" keep the model's torch_dtype;
 * else bf16 | fp16 | fp8 | w8a8 | w8a16 | w4a16 or an alias (bfloat16, float16, half, int8,
 * int8-wo, int4, awq, gptq, ...). `kv_cache_dtype`: NULL, "" or "auto" (the activation width)
 * | bf16 | fp16 | fp8 (fp8_e4m3, fp8_e5m2). Unknown words are an error listing the valid ones
 * (the caller prefixes the config path). */
gboolean sv_compute_quant_apply(struct sv_compute_model_cfg *m, const char *dtype,
                                const char *kv_cache_dtype, GError **error);
/* The canonical name of a dtype word (bf16, fp16, fp8, w8a8, w8a16, w4a16; "" for auto), or
 * NULL with the error. */
const char *sv_compute_quant_canonical(const char *dtype, GError **error);
const char *sv_compute_quant_kv_canonical(const char *kv_cache_dtype, GError **error);
/* Bytes per decoder weight parameter and per KV element of `m` after quantisation. */
double sv_compute_model_weight_param_bytes(const struct sv_compute_model_cfg *m);
int64_t sv_compute_model_kv_elem_bytes(const struct sv_compute_model_cfg *m);

/* Built-in catalog or `<model_dir>/<org>/<name>.json` (model_dir may be NULL). Names match with
 * or without the org ("meta-llama/Llama-3.1-8B" or "Llama-3.1-8B"), case-insensitively. A file
 * in model_dir wins over the built-in entry of the same name. */
gboolean sv_compute_model_lookup(const char *name, const char *model_dir,
                                 struct sv_compute_model_cfg *out, GError **error);
/* Fill from a parsed config.json object; `where` names it in errors. */
gboolean sv_compute_model_from_json(JsonObject *obj, const char *name, const char *where,
                                    struct sv_compute_model_cfg *out, GError **error);

gboolean sv_compute_model_is_moe(const struct sv_compute_model_cfg *m);
/* Total parameter count (embedding, lm_head unless tied, attention, MLP or experts + router,
 * norms). */
double sv_compute_model_params(const struct sv_compute_model_cfg *m);
/* Weight bytes held by one rank under tensor parallelism `tp` (vLLM sharding: vocab, heads and
 * FFN columns split by tp; KV heads replicated when tp > num_kv_heads; norms replicated). */
uint64_t sv_compute_model_weight_bytes(const struct sv_compute_model_cfg *m, int tp);
/* The parts of the above (one rank's share): one decoder block (attention, MLP or experts and
 * router, its two norms), the embedding table, the lm_head (0 when tied to the embedding) and the
 * final norm. Weight placement charges each part on its tier (planner/tiers.c). */
uint64_t sv_compute_model_layer_weight_bytes(const struct sv_compute_model_cfg *m, int tp);
uint64_t sv_compute_model_embedding_bytes(const struct sv_compute_model_cfg *m, int tp);
uint64_t sv_compute_model_head_bytes(const struct sv_compute_model_cfg *m, int tp);
uint64_t sv_compute_model_final_norm_bytes(const struct sv_compute_model_cfg *m);
/* The MLP or MoE (experts and router) weights of every decoder layer on one rank under TP `tp`:
 * what attention/FFN disaggregation holds on the FFN devices (docs/afd.md); the attention side
 * holds sv_compute_model_weight_bytes minus this. */
uint64_t sv_compute_model_mlp_weight_bytes(const struct sv_compute_model_cfg *m, int tp);
/* KV-cache bytes per token per layer on one rank (K and V). */
uint64_t sv_compute_model_kv_bytes_per_token_layer(const struct sv_compute_model_cfg *m, int tp);

/* ---- operators and layer sequences ------------------------------------------------------ */

typedef enum {
    SV_COMPUTE_OP_EMBEDDING,
    SV_COMPUTE_OP_LAYERNORM,
    SV_COMPUTE_OP_QKV_PROJ,
    SV_COMPUTE_OP_QK_NORM,
    SV_COMPUTE_OP_ROTARY_EMB,
    SV_COMPUTE_OP_ATTENTION,
    SV_COMPUTE_OP_O_PROJ,
    SV_COMPUTE_OP_GATE_UP_PROJ,
    SV_COMPUTE_OP_ACT_FN,
    SV_COMPUTE_OP_DOWN_PROJ,
    SV_COMPUTE_OP_MOE,
    SV_COMPUTE_OP_FINAL_LAYERNORM,
    SV_COMPUTE_OP_LM_HEAD,
    SV_COMPUTE_OP_SAMPLER,
    SV_COMPUTE_OP_COUNT
} sv_compute_op_kind;

/* Profile category: which table (and which batch-shape key) an operator uses. */
typedef enum {
    SV_COMPUTE_OP_CAT_DENSE,        /* keyed by tokens this iteration */
    SV_COMPUTE_OP_CAT_PER_SEQUENCE, /* keyed by scheduled sequences */
    SV_COMPUTE_OP_CAT_ATTENTION,    /* 4-D (prefill chunk, prefill KV, decode count, decode KV) */
    SV_COMPUTE_OP_CAT_MOE,          /* 2-D (local tokens, activated experts) */
} sv_compute_op_category_kind;

const char *sv_compute_op_name(sv_compute_op_kind op); /* canonical name: "qkv_proj" */
sv_compute_op_category_kind sv_compute_op_category(sv_compute_op_kind op);

#define SV_COMPUTE_SEQ_MAX 8
/* One iteration = prologue, num_layers x (pre_attn, post_attn, mlp), head. TP all-reduce follows
 * o_proj and down_proj (and moe) when tp > 1; the yaml leaves those to the simulator. */
struct sv_compute_layer_seq {
    sv_compute_op_kind prologue[SV_COMPUTE_SEQ_MAX];
    int n_prologue;
    sv_compute_op_kind pre_attn[SV_COMPUTE_SEQ_MAX];
    int n_pre_attn;
    sv_compute_op_kind post_attn[SV_COMPUTE_SEQ_MAX];
    int n_post_attn;
    sv_compute_op_kind
        mlp[SV_COMPUTE_SEQ_MAX]; /* mlp_dense or mlp_moe, whichever the architecture uses */
    int n_mlp;
    gboolean mlp_is_moe;
    sv_compute_op_kind head[SV_COMPUTE_SEQ_MAX];
    int n_head;
    /* Layers marked tp_stable in the yaml catalog: profiled once at TP=1. */
    gboolean tp_stable[SV_COMPUTE_OP_COUNT];
};
const struct sv_compute_layer_seq *sv_compute_layer_seq(sv_compute_model_arch arch);
const char *sv_compute_arch_name(sv_compute_model_arch arch); /* "llama": the yaml file stem */

/* ---- hardware --------------------------------------------------------------------------- */

/* One accelerator (docs/compute.md "Hardware catalog"). Units: TFLOPS / TOPS dense (no
 * sparsity); capacity in GiB (2^30 B: DRAM is binary, a vendor's "80 GB" HBM is 80 GiB, and
 * LLMServingSim's npu_mem.mem_size is read in GiB); bandwidths in decimal GB/s (1e9 B/s); 0 =
 * not published (or, for a timing figure, not applicable). */
struct sv_compute_hw_cfg {
    char name[32];          /* canonical name: "H100-SXM" */
    double bf16_tflops;     /* peak dense tensor BF16 (= FP16), no sparsity */
    double fp8_tflops;      /* peak dense FP8 (0: none) */
    double int8_tops;       /* peak dense INT8 (0: none or not published) */
    double fp32_tflops;     /* peak FP32 (non-tensor; 0: not published) */
    double mem_gib;         /* device memory, GiB (2^30 B) */
    double mem_bw_gbps;     /* peak memory bandwidth, GB/s (1e9 B/s) */
    int32_t compute_units;  /* SMs (NVIDIA), CUs (AMD), TensorCores (TPU); 0: not published */
    double l2_mib;          /* last-level on-chip cache, MiB; 0: not published */
    char interconnect[32];  /* scale-up interconnect: "NVLink4", "PCIe4", "ICI", ... */
    double link_bw_gbps;    /* scale-up interconnect per device, per direction, GB/s */
    double link_latency_ns; /* per hop of that interconnect, collective step (latency_source) */
    double pcie_gbps;       /* host link (PCIe) per device, per direction, GB/s; 0: not published */
    double launch_ns;       /* smallest measured operator time: one kernel launch with no work */
    double tdp_w;      /* board power at full load (TDP / max board power), W; 0: not published */
    double idle_w;     /* board power with nothing to run, W; 0: not published */
    char source[1024]; /* where the peaks, memory and links come from */
    char latency_source[1024]; /* where link_latency_ns and launch_ns come from (or their rule) */
    char power_source[512]; /* where tdp_w and idle_w come from (or the rule that derived them) */
};

/* The built-in catalog (compute/hardware.json) plus devices from hardware files (YAML or JSON,
 * the same schema): a file entry whose name or an alias names a device overrides the fields it
 * gives; any other entry adds a device. No globals: a run owns its catalog. */
typedef struct sv_compute_hw_catalog sv_compute_hw_catalog;
sv_compute_hw_catalog *sv_compute_hw_catalog_new(void); /* the built-in devices */
void sv_compute_hw_catalog_free(sv_compute_hw_catalog *cat);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sv_compute_hw_catalog, sv_compute_hw_catalog_free)
/* Add or override devices from `path` (".json": JSON, anything else: YAML): {"hardware": [entry,
 * ...]}. Errors name the file and the field path ("my.yaml: hardware[1].mem_gib: ..."); on an
 * error the catalog is unchanged. */
gboolean sv_compute_hw_catalog_load(sv_compute_hw_catalog *cat, const char *path, GError **error);
/* Case-insensitive; aliases accepted (H100, A100, RTX4090, RTXPRO6000, A6000, TPUv6e...), with
 * '-', '_' and ' ' ignored. `cat` NULL: the built-in catalog. */
gboolean sv_compute_hw_catalog_lookup(const sv_compute_hw_catalog *cat, const char *name,
                                      struct sv_compute_hw_cfg *out, GError **error);
/* Devices in catalog order (built-ins first, then added ones). */
guint sv_compute_hw_catalog_size(const sv_compute_hw_catalog *cat);
const struct sv_compute_hw_cfg *sv_compute_hw_catalog_get(const sv_compute_hw_catalog *cat,
                                                          guint i);
/* The built-in catalog (sv_compute_hw_catalog_lookup with cat NULL). */
gboolean sv_compute_hw_lookup(const char *name, struct sv_compute_hw_cfg *out, GError **error);
/* Apply overrides from a JSON object with any numeric key of a catalog entry (bf16_tflops,
 * fp8_tflops, int8_tops, fp32_tflops, mem_gib, mem_bw_gbps, compute_units, link_bw_gbps,
 * link_latency_ns, pcie_gbps, launch_ns, tdp_w, idle_w). Unknown keys and negative values
 * (non-positive for bf16_tflops, mem_gib, mem_bw_gbps) are errors naming `where`.key. */
gboolean sv_compute_hw_apply_overrides(struct sv_compute_hw_cfg *hw, JsonObject *obj,
                                       const char *where, GError **error);
/* Peak FLOP/s for a weight dtype size (1: fp8, 2: bf16/fp16, 4: fp32). */
double sv_compute_hw_peak_flops(const struct sv_compute_hw_cfg *hw, int dtype_bytes);
/* Peak FLOP/s (or OP/s) of the decoder's GEMMs of `m` on `hw`: the quantised dtype's peak where
 * the catalog has one, else the bf16 peak (docs/quantisation.md). */
double sv_compute_hw_gemm_peak_flops(const struct sv_compute_hw_cfg *hw,
                                     const struct sv_compute_model_cfg *m);
/* Device memory in bytes (mem_gib x 2^30). */
uint64_t sv_compute_hw_mem_bytes(const struct sv_compute_hw_cfg *hw);

/* ---- batch shape ------------------------------------------------------------------------ */

/* What one iteration computes on one rank. Attention is one lookup for the whole batch
 * (VALIDATION_NOTES item 1): prefill chunks and their histories are summed, decode KV lengths
 * are reduced to floor(mean), max and min. */
struct sv_compute_batch_shape {
    int64_t n_prefill_tokens; /* sum of this step's prefill chunks */
    int64_t prefill_kv;       /* sum of those requests' KV history before the chunk */
    int64_t n_prefill_seqs;
    int64_t n_decode;       /* decode requests (one token each) */
    int64_t decode_kv_mean; /* floor(sum of decode KV / n_decode) */
    int64_t decode_kv_max;
    int64_t decode_kv_min;
    int64_t decode_kv_sum; /* sum of decode KV lengths (analytic KV read) */
    int64_t n_seqs;        /* sequences scheduled (lm_head, sampler key) */
    int64_t tokens;        /* n_prefill_tokens + n_decode (dense key) */
    /* MoE, per rank after dispatch (issue 4: EP routing). 0 = derive: all tokens local,
     * activated experts = min(num_experts, tokens x top-k). */
    int64_t moe_local_tokens;
    int64_t moe_activated_experts;
    /* Decode attention runs off the NPU (PIM attention offload, docs/pim.md): the attention
     * operator times the prefill part only (0 without one), as LLMServingSim's _build_batch_ctx
     * zeroes n_decode for the NPU kernel; every other operator still counts the decode tokens. */
    gboolean attn_decode_off;
};
/* Build a shape from per-request lists: prefill chunk and history per prefill request, KV
 * length per decode request. Any list may be NULL when its count is 0. */
void sv_compute_batch_shape_init(struct sv_compute_batch_shape *s, const int64_t *prefill_chunk,
                                 const int64_t *prefill_hist, int64_t n_prefill,
                                 const int64_t *decode_kv, int64_t n_decode);

/* ---- latency ---------------------------------------------------------------------------- */

typedef struct sv_compute_latency sv_compute_latency;

typedef enum {
    SV_COMPUTE_LATENCY_PROFILE,  /* LLMServingSim bundle (<hw>/<org>/<model>/<variant>/) */
    SV_COMPUTE_LATENCY_LEGACY,   /* perf_models/<hw>/<org>/<model>/tp<N>/layers.csv + predictions */
    SV_COMPUTE_LATENCY_ROOFLINE, /* analytic model per operator class (compute/analytic.c) */
    SV_COMPUTE_LATENCY_VIDUR,    /* Vidur: compute/<device>/<org>/<model>/{mlp,attention}.csv */
} sv_compute_latency_backend;

/* Profile bundle: `variant_dir` is <profiles>/<hw>/<org>/<model>/<variant> (holding meta.yaml
 * and tp<N>/). Every operator of the model's layer sequence must be present in tp<tp> (or tp1
 * for tp_stable layers); otherwise the error names the file and the layer. */
sv_compute_latency *sv_compute_latency_new_profile(const char *variant_dir,
                                                   const struct sv_compute_model_cfg *m, int tp,
                                                   GError **error);
/* Find <profiles_root>/<hw>/<org>/<name>/<variant>; returns a newly allocated path or NULL
 * with an error naming the missing folder. `variant` NULL means "bf16". */
char *sv_compute_profile_find(const char *profiles_root, const char *hw, const char *model_name,
                              const char *variant, GError **error);
/* Find the legacy layout's <perf_models_root>/<hw>/<org>/<name>/tp<tp> (holding layers.csv);
 * a newly allocated path, or NULL with an error naming the missing file. */
char *sv_compute_legacy_find(const char *perf_models_root, const char *hw, const char *model_name,
                             int tp, GError **error);
/* Legacy layout: `tp_dir` is perf_models/<hw>/<org>/<model>/tp<N>. */
sv_compute_latency *sv_compute_latency_new_legacy(const char *tp_dir,
                                                  const struct sv_compute_model_cfg *m, int tp,
                                                  GError **error);

/* Vidur's profiling layout (docs/compute.md "Vidur's profiles"): the folder
 * <root>/compute/<device>/<org>/<model> holding mlp.csv for hardware `hw` (its name in the config;
 * `hw_canonical` its catalog name, NULL when not in the catalog: a100 = A100-80GB, h100 = H100-SXM
 * are Vidur's devices, or a folder named like the hardware) and model `model_name` (org/name
 * compared case-insensitively, a trailing -hf ignored). Newly allocated, or NULL with an error
 * naming what is missing. */
char *sv_compute_vidur_find(const char *root, const char *hw, const char *hw_canonical,
                            const char *model_name, GError **error);
/* Vidur's mlp.csv (and attention.csv when the folder has one) for `m` at tp `tp`: rows of the
 * model's shape and TP degree, looked up as compute/vidur.c states; what Vidur does not profile
 * (lm_head, sampler; attention without attention.csv) from the roofline of `hw`. */
sv_compute_latency *sv_compute_latency_new_vidur(const char *model_dir,
                                                 const struct sv_compute_model_cfg *m, int tp,
                                                 const struct sv_compute_hw_cfg *hw,
                                                 GError **error);
/* The operators a Vidur latency takes from the roofline ("lm_head, sampler", or with
 * "attention"); NULL for the other backends. */
const char *sv_compute_latency_fallback_ops(const sv_compute_latency *lat);

/* The analytic model's per-class constants (compute/analytic.c, docs/compute.md "Analytic
 * model"); the committed calibration is compute/analytic_fit.inc, written by tools/fit_analytic. */
struct sv_compute_analytic_params {
    /* GEMMs (qkv/o/gate_up/down/lm_head, MoE experts and router) */
    double gemm_compute_eff;    /* fraction of the dtype peak on full tiles and waves */
    double gemm_memory_eff;     /* fraction of the bandwidth in the weight-streaming regime */
    double gemm_blend;          /* p of the soft maximum (tc^p + tm^p)^(1/p), >= 1 */
    double gemm_small_tile_eff; /* throughput of a tile per halving of its area below 128 x 128 */
    /* attention (FlashAttention on the paged KV cache) */
    double attn_prefill_eff;  /* fraction of the dtype peak of a prefill tile */
    double attn_mixed_k;      /* heads per wave per KV-group member for the group to share its
                               * KV read in L2 (decodes in a batch with a prefill) */
    double attn_decode_eff;   /* fraction of the bandwidth on the decode KV read */
    double attn_cta_bw;       /* bandwidth one CTA (query head) draws, in fair shares bw/SMs */
    double attn_cta_ns;       /* fixed time of one CTA (a query head of a sequence) */
    double attn_l2_frac;      /* fraction of the L2 that holds one KV head's K and V for reuse */
    double attn_launch_ratio; /* an attention kernel's fixed time over the device launch time */
    /* elementwise (norms, rotary, activation, embedding) and the sampler */
    double ew_memory_eff;   /* fraction of the bandwidth */
    double ew_l2_gain;      /* speed-up while the bytes fit in the L2 */
    double sampler_passes;  /* fp32 passes over the logits */
    double ew_launch_ratio; /* an elementwise kernel's fixed time over the device launch time */
    /* per kernel launch (eager, as the profiles measure it; a GEMM's fixed time) */
    double launch_ns;
};
/* Analytic (`roofline`) backend. `p`: the constants of both platforms, with every device's own
 * calibration factors at 1 (tests, studies of the model); NULL: the committed calibration
 * (compute/analytic_fit.inc) with the factors fitted for the device when its profiles were part
 * of the fit (docs/compute.md). */
sv_compute_latency *sv_compute_latency_new_roofline(const struct sv_compute_model_cfg *m,
                                                    const struct sv_compute_hw_cfg *hw, int tp,
                                                    const struct sv_compute_analytic_params *p,
                                                    GError **error);
/* The committed calibration of a platform: GPUs (tpu FALSE) or TPUs. */
const struct sv_compute_analytic_params *sv_compute_analytic_fit(gboolean tpu);
/* vLLM's CUDA graphs (compute/analytic.c): batches up to the largest capture size run as a graph,
 * padded to the next capture size (vLLM's VllmConfig._set_cudagraph_sizes: 1, 2, 4, multiples
 * of 8 below 256, of 16 from 256, up to min(2 x max_num_seqs, 512), none above
 * max_num_batched_tokens); decode-only batches as a full graph, others piecewise (attention
 * eager). max_num_seqs 0: eager. Only the analytic backend uses it (profiles are measured). */
void sv_compute_latency_set_cudagraph(sv_compute_latency *lat, int64_t max_num_seqs,
                                      int64_t max_num_batched_tokens);
/* The padded token count a batch of `tokens` runs at (tokens itself when eager or above the
 * largest capture size). */
int64_t sv_compute_cudagraph_size(const sv_compute_latency *lat, int64_t tokens);
/* FLOPs and bytes moved by one operator on one rank for a shape (the minimum: weights,
 * activations in and out, KV read once; diagnostics). */
void sv_compute_op_cost(const struct sv_compute_model_cfg *m, int tp, sv_compute_op_kind op,
                        const struct sv_compute_batch_shape *s, double *flops, double *bytes);

void sv_compute_latency_free(sv_compute_latency *lat);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sv_compute_latency, sv_compute_latency_free)

/* DVFS (docs/power.md "DVFS"): the accelerator runs at `clock` in (0, 1] of its nominal clock
 * (1 until set). Only compute slows down; the memory clock is not the core clock, so a
 * memory-bound operator keeps its time, and launch costs are not scaled. Per operator and batch
 * shape, with a(c) the analytic model's time at clock c (compute peaks x c) on `hw`:
 *   analytic backend: a(clock) on its own hardware;
 *   profile / legacy: the measured time x a(clock) / a(1) on `hw` (the committed calibration).
 * So a compute-bound operator takes about 1/clock as long and a memory-bound one the same. With
 * `hw` NULL (the hardware is not in the catalog) a profile's every operator takes 1/clock as long
 * (the bound for all-compute-bound work). `hw` is copied; the analytic backend ignores it. */
void sv_compute_latency_set_clock(sv_compute_latency *lat, double clock,
                                  const struct sv_compute_hw_cfg *hw);
double sv_compute_latency_clock(const sv_compute_latency *lat);

const struct sv_compute_model_cfg *sv_compute_latency_model(const sv_compute_latency *lat);

/* Time of one operator for a batch shape, ns (>= 0; 0 for attention with no tokens). */
sv_time sv_compute_op_time(sv_compute_latency *lat, sv_compute_op_kind op,
                           const struct sv_compute_batch_shape *s);

/* Attention pieces the profile backend blends (for tests and diagnostics): the plain 4-D
 * lookup at one decode KV value, and the skew alpha that applies to a shape. */
double sv_compute_attention_lookup(sv_compute_latency *lat, int64_t prefill_chunk,
                                   int64_t kv_prefill, int64_t n_decode, int64_t kv_decode);
double sv_compute_skew_alpha(sv_compute_latency *lat, const struct sv_compute_batch_shape *s);

/* One operator of an iteration, in execution order. */
struct sv_compute_iter_op {
    sv_compute_op_kind op;
    sv_time ns;
    /* Bytes of the TP all-reduce that follows this operator (0 when tp == 1 or none). */
    uint64_t allreduce_bytes;
};
/* One iteration on one rank. Layers [layer_begin, layer_end) run (a PP stage); the prologue
 * runs only when layer_begin == 0 and the head only when layer_end == num_layers. */
struct sv_compute_iter_time {
    sv_time total_ns;    /* prologue + n_layers x layer + head, compute only */
    sv_time prologue_ns; /* embedding */
    sv_time layer_ns;    /* one decoder layer */
    sv_time head_ns;     /* final norm, lm_head, sampler */
    int64_t n_layers;
    struct sv_compute_iter_op prologue[SV_COMPUTE_SEQ_MAX];
    int n_prologue;
    struct sv_compute_iter_op layer[3 * SV_COMPUTE_SEQ_MAX];
    int n_layer;
    struct sv_compute_iter_op head[SV_COMPUTE_SEQ_MAX];
    int n_head;
};
void sv_compute_iter_time(sv_compute_latency *lat, const struct sv_compute_batch_shape *s,
                          int64_t layer_begin, int64_t layer_end, struct sv_compute_iter_time *out);

/* ---- PIM: device files and attention latency -------------------------------------------- */

/* A PIM device read from a DRAMSim3-style INI file (LLMServingSim configs/pim/<name>.ini; keys
 * as docs/reference/pim-config.md names them). Only what a model reads is kept; the other
 * DRAMSim3 keys (the full timing set, the IDD/VDD rails, queueing) are accepted and inert, as in
 * LLMServingSim. One "channel" is one DIMM-like unit with its own bus and PIM logic. */
struct sv_compute_pim_cfg {
    char name[64];     /* the file stem ("DDR4_8GB_3200_pim"): how a cluster config names it */
    char protocol[16]; /* [dram_structure] protocol (DDR4, HBM, LPDDR4...), informative */
    /* [dram_structure] */
    int64_t bankgroups;      /* bank groups per device */
    int64_t banks_per_group; /* banks per bank group */
    int64_t rows;            /* rows per bank */
    int64_t columns;         /* columns per row */
    int64_t device_width;    /* data bits per device (x4, x8, x16, x128) */
    /* [timing] */
    double tck_ns; /* tCK: clock period, ns */
    int64_t cl;    /* CL: CAS (read) latency, cycles of tCK */
    /* [system] */
    int64_t bus_width;       /* channel data bus, bits */
    int64_t channel_size_mb; /* target capacity of one channel, MB (2^20 B), snapped to ranks */
    /* [other]: LLMServingSim's additions, not DRAMSim3 keys */
    double data_rate_mts; /* transfers per second, millions (MT/s) */
    double idle_power_mw; /* one channel (DIMM) idle, mW */
    double peak_power_mw; /* one channel (DIMM) active (PIM computing), mW */
    /* Derived once at load (pim-config.md, "How the numbers are derived"). */
    int64_t banks;              /* bankgroups x banks_per_group */
    int64_t devices_per_rank;   /* bus_width / device_width */
    int64_t page_bytes;         /* columns x device_width / 8 */
    uint64_t rank_bytes;        /* page_bytes x rows x banks x devices_per_rank */
    int64_t ranks;              /* ranks per channel: channel_size / rank size, at least 1 */
    uint64_t ch_capacity_bytes; /* ranks x rank_bytes */
    double ch_bw_bytes_per_s;   /* bus_width / 8 x data_rate x 1e6 */
    double read_latency_ns;     /* CL x tCK */
};
/* Read `path`; the name is the file's stem. Errors name file:line and the key (or the missing
 * key and its section); values out of range (non-positive, bus_width not a multiple of
 * device_width) are SV_COMPUTE_ERROR_INVALID. */
gboolean sv_compute_pim_load(const char *path, struct sv_compute_pim_cfg *out, GError **error);
/* The same from text in memory; `where` names it in errors, `name` is the device name. */
gboolean sv_compute_pim_parse(const char *text, gssize len, const char *where, const char *name,
                              struct sv_compute_pim_cfg *out, GError **error);
/* Channels a node's PIM memory of `mem_bytes` holds: mem_bytes / ch_capacity_bytes, whole
 * channels (LLMServingSim: num_ch = cpu_mem.mem_size / ch_capacity; pim-config.md). */
int64_t sv_compute_pim_channels(const struct sv_compute_pim_cfg *pim, uint64_t mem_bytes);

/* How the decode attention of one sequence on one channel is timed. */
typedef enum {
    /* Roofline of one channel: CL x tCK + max(KV bytes / channel bandwidth, attention FLOPs /
     * compute rate). servesim's own model; see docs/pim.md. */
    SV_COMPUTE_PIM_ATTN_BANDWIDTH,
    /* LLMServingSim's calibrated linear fit per device (pim_model.py estimate_with_linear,
     * quoted by pim-config.md "PIM attention latency model"); known for its four devices only. */
    SV_COMPUTE_PIM_ATTN_LINEAR,
} sv_compute_pim_attn_kind;

struct sv_compute_pim_attn {
    sv_compute_pim_attn_kind kind;
    /* BANDWIDTH: the PIM compute rate of one channel, FLOP/s; 0 = compute is not a bound. The
     * shipped INI files declare no compute rate, so it is a parameter, not a key. */
    double compute_flops_per_s;
    /* LINEAR: ns per KV token and ns per call at the Llama-3.1-8B head shape (32 heads, 8 KV
     * heads, head dim 128). */
    double slope_ns;
    double intercept_ns;
};
/* Set up the model of `kind` for a device: LINEAR takes the coefficients of the device's name
 * from LLMServingSim's table (an unknown name is SV_COMPUTE_ERROR_UNKNOWN, as in LLMServingSim);
 * BANDWIDTH starts with compute_flops_per_s = 0. */
gboolean sv_compute_pim_attn_init(struct sv_compute_pim_attn *a,
                                  const struct sv_compute_pim_cfg *pim,
                                  sv_compute_pim_attn_kind kind, GError **error);
/* KV bytes one decode step of one layer reads for a sequence of `kv_tokens` tokens on one rank
 * of tensor parallelism `tp`: 2 (K and V) x kv_tokens x KV heads x head_dim x dtype bytes. */
uint64_t sv_compute_pim_kv_bytes(const struct sv_compute_model_cfg *m, int tp, int64_t kv_tokens);
/* Decode attention of one sequence, one layer, on one channel, ns (not rounded: a channel sums
 * its sequences and rounds once). 0 for kv_tokens <= 0. */
double sv_compute_pim_attn_seq_ns(const struct sv_compute_pim_cfg *pim,
                                  const struct sv_compute_pim_attn *a,
                                  const struct sv_compute_model_cfg *m, int tp, int64_t kv_tokens);
/* One of `split` equal pieces of that work: the sequence's heads divided over `split` channels
 * (LLMServingSim's channel_split). LINEAR: the whole time / split (pim_model.py); BANDWIDTH: one
 * read latency + the piece's bytes (and FLOPs) / split. split = 1 is sv_compute_pim_attn_seq_ns. */
double sv_compute_pim_piece_ns(const struct sv_compute_pim_cfg *pim,
                               const struct sv_compute_pim_attn *a,
                               const struct sv_compute_model_cfg *m, int tp, int64_t kv_tokens,
                               int split);

/* A placement policy: put sequence i (of KV size size[i], any unit proportional to bytes) on
 * channel channel_of[i] in [0, n_channels). Must be deterministic. */
typedef void (*sv_compute_pim_pack_fn)(const int64_t *size, int n_seqs, int n_channels,
                                       int *channel_of, void *user);
/* "greedy": largest KV first onto the least-loaded channel (longest-processing-time first);
 * equal sizes keep their input order, equal loads take the lowest channel. */
void sv_compute_pim_pack_greedy(const int64_t *size, int n_seqs, int n_channels, int *channel_of,
                                void *user);
/* A built-in policy by name ("greedy"); NULL with an error listing the names when unknown. */
sv_compute_pim_pack_fn sv_compute_pim_pack_lookup(const char *name, GError **error);
/* A placement policy as a registry table (kind SV_REGISTRY_PIM_PLACE, docs/plugins.md): runs
 * choose it by name (--pim-placement), plugins add their own. `user` is passed to pack. */
struct sv_compute_pim_place_ops {
    unsigned api_version; /* SV_REGISTRY_API_VERSION */
    sv_compute_pim_pack_fn pack;
    void *user;
};
/* Register the built-ins ("greedy"). */
gboolean sv_compute_pim_register_builtins(sv_registry *reg, GError **error);

/* One layer of one decode iteration on PIM: each sequence (KV lengths kv_tokens[0..n_seqs)) is cut
 * into `split` (>= 1) pieces of equal heads, piece k of sequence i being item i x split + k; the
 * items are packed by `pack` (by KV size) onto n_channels channels; a channel runs its pieces one
 * after another; the iteration waits for the slowest channel. Fills channel_of[n_seqs x split]
 * and, when not NULL, channel_ns[n_channels] (unrounded) and *slowest (the lowest-numbered
 * slowest channel, -1 when n_seqs == 0). Returns the slowest channel's time, rounded once. */
sv_time sv_compute_pim_iter_time(const struct sv_compute_pim_cfg *pim,
                                 const struct sv_compute_pim_attn *a,
                                 const struct sv_compute_model_cfg *m, int tp,
                                 const int64_t *kv_tokens, int n_seqs, int split, int n_channels,
                                 sv_compute_pim_pack_fn pack, void *pack_user, int *channel_of,
                                 double *channel_ns, int *slowest);

/* ---- speculative decoding (compute/specdec.c, docs/speculative.md) ----------------------- */

/* vLLM's --speculative-config "method": a separate draft model, or a head of the target. */
typedef enum {
    SV_COMPUTE_SPEC_DRAFT = 0,
    SV_COMPUTE_SPEC_EAGLE,
    SV_COMPUTE_SPEC_MTP,
} sv_compute_spec_method;
#define SV_COMPUTE_SPEC_MAX_K 64
/* How a request's acceptance rate is chosen: the configured rate for every request, or one rate
 * per request drawn once from Beta(mean x c, (1 - mean) x c) (mean `acceptance`, concentration
 * c: variance mean (1 - mean) / (c + 1)). */
typedef enum {
    SV_COMPUTE_SPEC_ACCEPT_FIXED = 0,
    SV_COMPUTE_SPEC_ACCEPT_BETA,
} sv_compute_spec_accept_dist;
struct sv_compute_spec_cfg {
    sv_compute_spec_method method;
    int32_t k;         /* num_speculative_tokens, 1 .. SV_COMPUTE_SPEC_MAX_K */
    double acceptance; /* per draft token, i.i.d., [0, 1]; the mean with a distribution */
    gboolean has_draft;
    struct sv_compute_model_cfg draft; /* method draft: the draft model */
    sv_compute_spec_accept_dist dist;
    double concentration; /* beta: c > 0 */
};
const char *sv_compute_spec_method_name(sv_compute_spec_method m);
/* Validate the keys of a "speculative" object; errors name `path`.<key>. `draft_model` is looked
 * up like a target model (model_dir may be NULL); it is required with "draft", refused
 * otherwise. */
gboolean sv_compute_spec_validate(const char *path, const char *method, const char *draft_model,
                                  const char *model_dir, int64_t k, double acceptance,
                                  struct sv_compute_spec_cfg *out, GError **error);
/* The quick form: "eagle:K:A", "mtp:K:A" or "draft:MODEL:K:A". */
gboolean sv_compute_spec_parse_flag(const char *text, const char *model_dir,
                                    struct sv_compute_spec_cfg *out, GError **error);
/* Tokens one verify step emits (1 .. k + 1): the run of accepted drafts before the first
 * rejection, plus the target's bonus token. */
int32_t sv_compute_spec_sample(sv_rng *rng, int32_t k, double acceptance);
/* Its expectation, (1 - a^(k+1)) / (1 - a) (Leviathan et al. 2023, Eq. 1); k + 1 at a = 1. */
double sv_compute_spec_expected_tokens(int32_t k, double a);
/* One rank's forward pass (prologue, layers, head; no TP collectives): a decode step of n_seqs
 * requests with KV kv each, and the verify pass (a chunk of k + 1 tokens per request after kv
 * of history). */
sv_time sv_compute_spec_decode_pass_ns(sv_compute_latency *lat, int64_t n_seqs, int64_t kv);
sv_time sv_compute_spec_verify_pass_ns(sv_compute_latency *lat, int64_t n_seqs, int64_t kv,
                                       int32_t k);
/* The k sequential draft passes of one step: the draft model's decode passes (method draft,
 * `draft` its latency model) or one target decoder layer plus the head per draft token (EAGLE,
 * MTP; `draft` unused). */
sv_time sv_compute_spec_draft_ns(const struct sv_compute_spec_cfg *c, sv_compute_latency *target,
                                 sv_compute_latency *draft, int64_t n_seqs, int64_t kv);
/* Decode of one request's output tokens by speculative steps of draft_ns + verify_ns each; the
 * tokens of a step are emitted together at its end (token_ns[i], from the start of decode). */
struct sv_compute_spec_result {
    int64_t steps;
    int64_t n_tokens;
    sv_time total_ns;
    sv_time *token_ns; /* n_tokens entries, owned */
};
gboolean sv_compute_spec_decode_request(const struct sv_compute_spec_cfg *c, sv_rng *rng,
                                        int64_t output_tokens, sv_time draft_ns, sv_time verify_ns,
                                        struct sv_compute_spec_result *out);
void sv_compute_spec_result_clear(struct sv_compute_spec_result *r);
/* Weight bytes of the speculator on one rank: the draft model, or an EAGLE / MTP head's one
 * decoder layer of the target (sharded over tp) plus its 2H x H projection (replicated). */
uint64_t sv_compute_spec_draft_weight_bytes(const struct sv_compute_spec_cfg *c,
                                            const struct sv_compute_model_cfg *target, int tp);
/* Per-request acceptance "acceptance": {"distribution": "beta", "mean": m, "concentration": c}:
 * 0 < m < 1, 0 < c <= 1e6; errors name path.mean / path.concentration. */
gboolean sv_compute_spec_set_beta(const char *path, double mean, double concentration,
                                  struct sv_compute_spec_cfg *c, GError **error);
/* A request's acceptance rate: the configured one (fixed: `rng` unused, may be NULL) or one draw
 * of the distribution from `rng` (the request's own stream). */
double sv_compute_spec_request_rate(const struct sv_compute_spec_cfg *c, sv_rng *rng);
/* One draw of Beta(a, b), a, b > 0 (two gamma draws, Marsaglia and Tsang 2000). */
double sv_compute_spec_beta_draw(sv_rng *rng, double a, double b);
/* The draft passes of one step over a batch: request j proposes n_spec[j] tokens (0: none) with
 * kv[j] tokens of history; pass i (0-based) runs over the requests with n_spec[j] > i at KV
 * kv[j] + i, as sv_compute_spec_draft_ns times one pass. */
sv_time sv_compute_spec_draft_batch_ns(const struct sv_compute_spec_cfg *c,
                                       sv_compute_latency *target, sv_compute_latency *draft,
                                       const int64_t *kv, const int32_t *n_spec, int64_t n);
/* The same passes one by one (at most SV_COMPUTE_SPEC_MAX_K; returns their count): each pass's
 * compute on one rank and, under TP, the all-reduces its layers issue as the target's layers do
 * (n_allreduce of allreduce_bytes each: 2 per layer, tokens x hidden x dtype bytes; none at
 * TP 1). */
struct sv_compute_spec_pass {
    sv_time ns;
    uint64_t allreduce_bytes;
    int32_t n_allreduce;
};
int32_t sv_compute_spec_draft_passes(const struct sv_compute_spec_cfg *c,
                                     sv_compute_latency *target, sv_compute_latency *draft,
                                     const int64_t *kv, const int32_t *n_spec, int64_t n,
                                     struct sv_compute_spec_pass *out);
/* KV bytes the speculator adds per token on one rank: the draft model's (every layer), or one
 * layer of the target's for an EAGLE / MTP head. */
uint64_t sv_compute_spec_kv_bytes_per_token(const struct sv_compute_spec_cfg *c,
                                            const struct sv_compute_model_cfg *target, int tp);

G_END_DECLS

#endif
