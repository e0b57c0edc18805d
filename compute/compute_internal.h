/* Internals shared by the compute module's files (and its tests), not part of the API. */
#ifndef SV_COMPUTE_INTERNAL_H
#define SV_COMPUTE_INTERNAL_H

#include "compute/compute.h"

int64_t sv_compute__kv_heads_per_rank(const struct sv_compute_model_cfg *m, int tp);

/* ---- CSV tables: a whole file read through core's CSV reader (sv_csv), kept for random
 * access by row ---- */
typedef struct {
    char *path;
    GPtrArray *header; /* char* */
    GPtrArray *rows;   /* char**: NULL-terminated cells, one block per row (g_free) */
    GArray *lines;     /* uint64_t: the file line of each row, for errors */
} sv_compute_table;
sv_compute_table *sv_compute__csv_load(const char *path, GError **error);
void sv_compute__csv_free(sv_compute_table *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sv_compute_table, sv_compute__csv_free)
/* Column index, or -1 with an error naming the file and column. */
int sv_compute__csv_col(const sv_compute_table *c, const char *name, GError **error);
gboolean sv_compute__csv_double(const sv_compute_table *c, guint row, int col, double *out,
                                GError **error);

/* ---- interpolation tables (values in ns) ---- */
struct sv_compute_table1d {
    int64_t *keys;
    double *vals;
    int n;
};
/* LLMServingSim's _lookup_1d: clamp below, linear inside, extrapolate from the top two above. */
double sv_compute__lookup_1d(const struct sv_compute_table1d *t, double q);

struct sv_compute_attn_slice {
    int64_t pc, nd;
    int n_kp;
    int64_t *kp;
    struct sv_compute_table1d *rows; /* one row per kp: keys = kv_decode */
};
struct sv_compute_attn_table {
    int64_t *pc_vals;
    int n_pc;
    int64_t *nd_vals;
    int n_nd;
    struct sv_compute_attn_slice *slices; /* sorted by (pc, nd) */
    int n_slices;
};
double sv_compute__attn_lookup(const struct sv_compute_attn_table *t, int64_t pc, int64_t kp,
                               int64_t nd, int64_t kd);

/* 2-D: rows by the first key (bracket, clamp below, extrapolate above), 1-D in each row. */
struct sv_compute_table2d {
    int64_t *keys;
    int n;
    struct sv_compute_table1d *rows;
};
double sv_compute__lookup_2d(const struct sv_compute_table2d *t, double q_row, double q_col);

/* Round a CSV time in microseconds to integer ns as LLMServingSim does at load time:
 * round half to even, at least 1 ns. */
double sv_compute__us_to_ns(double us);

/* ---- analytic model (compute/analytic.c) ---- */
/* One device as the analytic model sees it. */
struct sv_compute__an_dev {
    const struct sv_compute_analytic_params *p;
    double peak_flops;    /* dtype peak (x DVFS clock), FLOP/s */
    double wgemm_peak;    /* the decoder GEMMs' peak under quantisation (x clock), FLOP/s */
    double w_bytes;       /* bytes per decoder weight parameter; 0: the GEMM's b */
    double bw;            /* bytes/s */
    int sms;              /* 0: not known (no tile or wave quantisation) */
    double l2_bytes;      /* last-level cache; 0: not known */
    double compute_scale; /* device calibration of the compute efficiencies (1: none) */
    double memory_scale;  /* the same for the memory efficiencies */
    double launch_ns;     /* per kernel, eager */
    gboolean tpu;
};
/* Calibration of one device by tools/fit_analytic (compute/analytic_fit.inc). */
struct sv_compute__an_device_fit {
    const char *name; /* catalog name */
    double compute_scale, memory_scale, launch_ns;
};
/* The device of `hw` for dtype `dtype_bytes` at DVFS `clock`: `p` NULL takes the committed
 * calibration (platform constants and the device's own factors when it has some). */
void sv_compute__an_dev_init(struct sv_compute__an_dev *d, const struct sv_compute_hw_cfg *hw,
                             int dtype_bytes, const struct sv_compute_analytic_params *p,
                             double clock);
gboolean sv_compute__an_is_tpu(const struct sv_compute_hw_cfg *hw);
const struct sv_compute__an_device_fit *sv_compute__an_device_fit(const char *name);
/* Class times in ns, without launch costs. GEMM: `groups` independent (m x k) . (k x n)
 * products (MoE experts; 1 for a dense layer), b bytes per element. */
double sv_compute__an_gemm_ns(const struct sv_compute__an_dev *d, double groups, double m, double n,
                              double k, double b);
/* A decoder GEMM (qkv, o, gate_up, down, MoE experts): as above, at the quantised weights'
 * peak and bytes per weight (docs/quantisation.md); b is the activations'. */
double sv_compute__an_wgemm_ns(const struct sv_compute__an_dev *d, double groups, double m,
                               double n, double k, double b);
/* Attention of one layer on one rank: nh query and nkv KV heads of hd, b bytes; prefill of
 * n_pf_tokens in np requests with kv_prefill tokens of history in all; nd decodes reading
 * kv_sum tokens in all, kv_max the longest. */
double sv_compute__an_attn_ns(const struct sv_compute__an_dev *d, double nh, double nkv, double hd,
                              double b, double n_pf_tokens, double kv_prefill, double np, double nd,
                              double kv_sum, double kv_max);
double sv_compute__an_ew_ns(const struct sv_compute__an_dev *d, double bytes);
/* Kernels vLLM launches for an operator (docs/compute.md "Kernels and fusion"); attention's
 * depend on the shape (NULL: a batch with a prefill). */
int sv_compute__an_kernels(sv_compute_op_kind op, const struct sv_compute_batch_shape *s);
/* Launch time of one kernel of an operator: the device's, x the class's ratio, less inside a
 * graph (`graph` as below). */
double sv_compute__an_launch_ns(const struct sv_compute__an_dev *d, sv_compute_op_kind op,
                                int graph);
/* One operator on one rank, launches included; `graph`: 0 eager, 1 piecewise, 2 full. */
double sv_compute__an_op_ns(const struct sv_compute__an_dev *d,
                            const struct sv_compute_model_cfg *m, int tp, sv_compute_op_kind op,
                            const struct sv_compute_batch_shape *s, int graph);

/* ---- profile tables of one tp<N> folder ---- */
struct sv_compute_tp_tables {
    int tp;
    gboolean has_dense[SV_COMPUTE_OP_COUNT];
    struct sv_compute_table1d dense[SV_COMPUTE_OP_COUNT]; /* dense and per_sequence layers, by op */
    gboolean has_attn;
    struct sv_compute_attn_table attn;
    gboolean has_moe;
    struct sv_compute_table2d moe; /* rows: activated_experts, columns: tokens */
};
void sv_compute__tp_tables_clear(struct sv_compute_tp_tables *t);

/* Skew alpha table of one TP degree (meta.yaml skew_fit + tp<N>/skew_fit.csv). */
struct sv_compute_skew_axis {
    int n;         /* labels */
    double *bins;  /* n + 1 edges */
    char **labels; /* n */
};
struct sv_compute_skew_fit {
    gboolean enabled;
    gboolean have_entry;  /* per_tp has this TP */
    double alpha_default; /* per_tp[tp].alpha_default, or the block's, or 0 */
    struct sv_compute_skew_axis n_ax, sr_ax, kvb_ax, kp_ax;
    GHashTable *alpha; /* bucket key -> double* */
};
void sv_compute__skew_fit_clear(struct sv_compute_skew_fit *f);

/* Legacy perf_models tables. */
#define SV_COMPUTE_LEGACY_MAX_PARTS 3
struct sv_compute_legacy_tables {
    struct sv_compute_table1d
        layer[SV_COMPUTE_OP_COUNT]; /* by input tokens; summed parts (q+k+v ...) */
    gboolean has_layer[SV_COMPUTE_OP_COUNT];
    struct sv_compute_table2d prefill; /* rows: kv_cache_size, columns: prefill_chunk_size */
    struct sv_compute_table2d decode;  /* rows: batch_size, columns: kv_cache_size */
    /* LLMServingSim's TPU rules (a hardware folder named TPU*): each part looked up alone at its
     * nearest profiled input (first row of the file on a tie), a part without rows costing 1 ns,
     * no rotary_emb (the TPU profile's attention includes it). */
    gboolean tpu;
    struct sv_compute_table1d part[SV_COMPUTE_OP_COUNT][SV_COMPUTE_LEGACY_MAX_PARTS];
    int n_parts[SV_COMPUTE_OP_COUNT];
    double part_scale[SV_COMPUTE_OP_COUNT];
    /* MoE models (gate and expert.w1/w2/w3 rows): the router by batch tokens, one expert's
     * w1 + w2 + w3 by the tokens it gets. */
    gboolean moe;
    struct sv_compute_table1d gate, expert;
};

/* Vidur's profiling layout (compute/vidur.c): mlp.csv operators by tokens, attention.csv's
 * decode rows (k0 = KV, points by batch) and prefill rows (k0 = chunk, points by KV history). */
struct sv_compute_vidur_tables {
    struct sv_compute_table1d op[SV_COMPUTE_OP_COUNT]; /* by num_tokens: ns */
    gboolean has[SV_COMPUTE_OP_COUNT];
    struct sv_compute_table1d norm2, add; /* post_attention_layernorm, residual add */
    gboolean has_attn, has_kv_save;
    struct sv_compute_table2d decode, prefill;
    struct sv_compute_table1d kv_save;
    struct sv_compute_latency *fallback; /* roofline: what Vidur does not profile */
    char *fallback_ops;                  /* "lm_head, sampler" (and attention) */
};
void sv_compute__vidur_free(struct sv_compute_vidur_tables *v);

struct sv_compute_latency {
    sv_compute_latency_backend backend;
    struct sv_compute_model_cfg model;
    struct sv_compute_hw_cfg hw;
    int tp;
    const struct sv_compute_layer_seq *seq;
    /* profile */
    char *dir;
    struct sv_compute_tp_tables *t_tp; /* tables of tp<tp> */
    struct sv_compute_tp_tables *t_1;  /* tables of tp1 (tp_stable layers, MoE), may be t_tp */
    struct sv_compute_skew_fit skew;
    /* legacy */
    struct sv_compute_legacy_tables *legacy;
    /* vidur */
    struct sv_compute_vidur_tables *vidur;
    /* analytic (`roofline`) */
    struct sv_compute_analytic_params an_params; /* given to the constructor */
    gboolean an_given;                           /* else the committed calibration */
    int64_t graph_sizes[64]; /* vLLM's CUDA graph capture sizes, ascending; none: eager */
    int n_graph_sizes;
    /* DVFS (sv_compute_latency_set_clock): clock 1 = nominal. clock_hw: peak and bandwidth that
     * split a profiled time into compute and memory (clock_hw_set FALSE: all compute). */
    double clock;
    gboolean clock_hw_set;
    struct sv_compute_hw_cfg clock_hw;
};

gboolean sv_compute__profile_load(sv_compute_latency *lat, const char *variant_dir, GError **error);
gboolean sv_compute__legacy_load(sv_compute_latency *lat, const char *tp_dir, GError **error);
void sv_compute__legacy_free(struct sv_compute_legacy_tables *l);
double sv_compute__profile_op_ns(sv_compute_latency *lat, sv_compute_op_kind op,
                                 const struct sv_compute_batch_shape *s);
double sv_compute__legacy_op_ns(sv_compute_latency *lat, sv_compute_op_kind op,
                                const struct sv_compute_batch_shape *s);
gboolean sv_compute__vidur_load(sv_compute_latency *lat, const char *model_dir,
                                const struct sv_compute_hw_cfg *hw, GError **error);
double sv_compute__vidur_op_ns(sv_compute_latency *lat, sv_compute_op_kind op,
                               const struct sv_compute_batch_shape *s);

/* ---- DRAMSim3-style INI files (compute/ini.c) ---- */
typedef struct {
    char *section; /* "" before the first [section] */
    char *key;
    char *value; /* comment stripped, whitespace trimmed, never empty */
    int line;    /* 1-based, for errors */
} sv_compute_ini_entry;
typedef struct {
    char *where;     /* the file (or the name given to the parser), for errors */
    GArray *entries; /* sv_compute_ini_entry, in file order; keys unique in the file */
} sv_compute_ini;
sv_compute_ini *sv_compute__ini_parse(const char *text, gssize len, const char *where,
                                      GError **error);
sv_compute_ini *sv_compute__ini_load(const char *path, GError **error);
void sv_compute__ini_free(sv_compute_ini *ini);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sv_compute_ini, sv_compute__ini_free)
/* Flat lookup (the section is not part of the key); NULL when absent. */
const sv_compute_ini_entry *sv_compute__ini_find(const sv_compute_ini *ini, const char *key);
/* Required numeric keys: absent, or not a whole number, is an error naming file:line and key
 * (`section` is named when the key is missing). */
gboolean sv_compute__ini_int(const sv_compute_ini *ini, const char *key, const char *section,
                             int64_t *out, GError **error);
gboolean sv_compute__ini_double(const sv_compute_ini *ini, const char *key, const char *section,
                                double *out, GError **error);

#endif
