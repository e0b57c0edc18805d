/* fit_analytic's data: every operator profile in ../shared as measured points.
 *
 *  - LLMServingSim bundles (reference/llmservingsim/profiles: RTX 4090, RTX PRO 6000; vLLM 0.19
 *    kernels, eager): every dense and per-sequence layer, the 4-D attention grid (prefill,
 *    decode and mixed), the MoE table. tp_stable layers of a tp2 folder repeat tp1 and are taken
 *    once.
 *  - LLMServingSim's legacy perf models (reference/llmservingsim-ispass26/perf_models: A6000,
 *    H100, RTX 3090, TPU v6e): the GEMMs of layers.csv (q, k, v, o, gate, up, down, lm_head and
 *    the experts' w1, w2, w3, each its own GEMM) and the measured attention.csv (Vidur's
 *    layout: the FlashAttention kernel alone). Their elementwise rows are Hugging Face eager
 *    modules (an RMSNorm is six unfused kernels plus casts), not vLLM's kernels, and their
 *    router rows include the routing code: neither is taken (docs/compute.md).
 *  - Vidur's measured operator profiles (reference/vidur/profiling/compute: A100 and H100 mlp.csv
 *    for 8 and 6 models at TP 1-8; reference/vidur/attention_subsample: an A100 attention sample).
 * Shapes are per rank. Points are thinned evenly to `cap` per sweep (one operator of one file). */
#include "tools/fit_analytic.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *const fa_devices[FA_N_DEV] = {"RTX-4090", "RTX-PRO-6000", "RTX-A6000", "H100-SXM",
                                          "RTX-3090", "A100-80GB",    "TPU-v6e"};

static int dev_index(const char *name)
{
    for (int i = 0; i < FA_N_DEV; i++)
        if (!strcmp(fa_devices[i], name))
            return i;
    g_error("fit_analytic: unknown device %s", name);
    return -1;
}

static int add_source(struct fa_data *d, const char *dev, const char *rel)
{
    g_ptr_array_add(d->sources, g_strdup_printf("%s: %s", dev, rel));
    return (int)d->sources->len - 1;
}

static int add_model(struct fa_data *d, const struct sv_compute_model_cfg *m)
{
    g_array_append_val(d->models, *m);
    return (int)d->models->len - 1;
}

/* Keep point i of n so that at most `cap` remain, evenly spaced (always the first). */
static gboolean keep(int i, int n, int cap)
{
    if (cap <= 0 || n <= cap)
        return TRUE;
    int stride = (n + cap - 1) / cap;
    return i % stride == 0;
}

static void add_op(struct fa_data *d, int dev, int src, int model, int tp, int cls, int sub,
                   sv_compute_op_kind op, const struct sv_compute_batch_shape *s, int kernels,
                   double ns)
{
    if (!(ns > 0))
        return;
    struct fa_point p = {.type = FA_PT_OP,
                         .cls = (uint8_t)cls,
                         .sub = (uint8_t)sub,
                         .kernels = (int8_t)kernels,
                         .dev = (int16_t)dev,
                         .src = (int16_t)src,
                         .model = (int16_t)model,
                         .tp = (int16_t)tp,
                         .op = (int16_t)op,
                         .meas_ns = ns,
                         .s = *s};
    g_array_append_val(d->pts, p);
}

static void add_gemm(struct fa_data *d, int dev, int src, double m, double n, double k, double ns)
{
    if (!(ns > 0 && m > 0 && n > 0 && k > 0))
        return;
    struct fa_point p = {.type = FA_PT_GEMM,
                         .cls = FA_GEMM,
                         .kernels = 1,
                         .dev = (int16_t)dev,
                         .src = (int16_t)src,
                         .model = -1,
                         .meas_ns = ns,
                         .g = {1, m, n, k, 2}};
    g_array_append_val(d->pts, p);
}

static void add_ew(struct fa_data *d, int dev, int src, double bytes, double ns)
{
    if (!(ns > 0 && bytes > 0))
        return;
    struct fa_point p = {.type = FA_PT_EW,
                         .cls = FA_EW,
                         .kernels = 1,
                         .dev = (int16_t)dev,
                         .src = (int16_t)src,
                         .model = -1,
                         .meas_ns = ns,
                         .g = {bytes}};
    g_array_append_val(d->pts, p);
}

static int op_class(sv_compute_op_kind op)
{
    switch (op) {
    case SV_COMPUTE_OP_QKV_PROJ:
    case SV_COMPUTE_OP_O_PROJ:
    case SV_COMPUTE_OP_GATE_UP_PROJ:
    case SV_COMPUTE_OP_DOWN_PROJ:
    case SV_COMPUTE_OP_LM_HEAD:
    case SV_COMPUTE_OP_MOE:
        return FA_GEMM;
    case SV_COMPUTE_OP_ATTENTION:
        return FA_ATTN;
    case SV_COMPUTE_OP_SAMPLER:
        return FA_SAMPLER;
    default:
        return FA_EW;
    }
}

static void attn_shape(struct sv_compute_batch_shape *s, int64_t pc, int64_t kp, int64_t nd,
                       int64_t kd, int *sub)
{
    memset(s, 0, sizeof *s);
    s->n_prefill_tokens = pc;
    s->n_prefill_seqs = pc > 0;
    s->prefill_kv = pc > 0 ? kp : 0;
    s->n_decode = nd;
    s->decode_kv_mean = s->decode_kv_max = s->decode_kv_min = nd > 0 ? kd : 0;
    s->decode_kv_sum = nd * kd;
    s->n_seqs = s->n_prefill_seqs + nd;
    s->tokens = pc + nd;
    *sub = pc > 0 && nd > 0 ? FA_SUB_MIXED : pc > 0 ? FA_SUB_PREFILL : FA_SUB_DECODE;
}

/* ---- LLMServingSim bundles ------------------------------------------------------------------ */

static gboolean load_bundle(struct fa_data *d, const char *shared, const char *hw_dir,
                            const char *dev, const char *model, int tp, int cap, GError **error)
{
    struct sv_compute_model_cfg m;
    if (!sv_compute_model_lookup(model, NULL, &m, error))
        return FALSE;
    g_autofree char *rel =
        g_strdup_printf("reference/llmservingsim/profiles/%s/%s/bf16", hw_dir, model);
    g_autofree char *dir = g_build_filename(shared, rel, NULL);
    g_autoptr(sv_compute_latency) lat = sv_compute_latency_new_profile(dir, &m, tp, error);
    if (!lat)
        return FALSE;
    g_autofree char *srel = g_strdup_printf("%s/tp%d", rel, tp);
    int di = dev_index(dev), src = add_source(d, dev, srel), mi = add_model(d, &m);
    const struct sv_compute_tp_tables *t = lat->t_tp;
    for (int op = 0; op < SV_COMPUTE_OP_COUNT; op++) {
        if (!t->has_dense[op] || (tp != 1 && lat->seq->tp_stable[op]))
            continue;
        const struct sv_compute_table1d *tab = &t->dense[op];
        for (int i = 0; i < tab->n; i++) {
            if (!keep(i, tab->n, cap))
                continue;
            struct sv_compute_batch_shape s = {0};
            if (sv_compute_op_category(op) == SV_COMPUTE_OP_CAT_PER_SEQUENCE)
                s.n_seqs = s.n_decode = s.tokens = tab->keys[i];
            else
                s.tokens = s.n_seqs = tab->keys[i];
            add_op(d, di, src, mi, tp, op_class(op), FA_SUB_NONE, op, &s, 0, tab->vals[i]);
        }
    }
    if (t->has_attn) {
        /* Thinned per kind (prefill only, decode only, mixed): the grid is mostly mixed. */
        const struct sv_compute_attn_table *a = &t->attn;
        int n[4] = {0}, k[4] = {0};
        for (int i = 0; i < a->n_slices; i++)
            for (int j = 0; j < a->slices[i].n_kp; j++) {
                const struct sv_compute_attn_slice *sl = &a->slices[i];
                n[(sl->pc > 0) + 2 * (sl->nd > 0)] += sl->rows[j].n;
            }
        for (int i = 0; i < a->n_slices; i++) {
            const struct sv_compute_attn_slice *sl = &a->slices[i];
            int kind = (sl->pc > 0) + 2 * (sl->nd > 0);
            for (int j = 0; j < sl->n_kp; j++)
                for (int r = 0; r < sl->rows[j].n; r++) {
                    int i_k = k[kind]++;
                    if (kind == 0 || !keep(i_k, n[kind], cap))
                        continue;
                    struct sv_compute_batch_shape s;
                    int sub;
                    attn_shape(&s, sl->pc, sl->kp[j], sl->nd, sl->rows[j].keys[r], &sub);
                    add_op(d, di, src, mi, tp, FA_ATTN, sub, SV_COMPUTE_OP_ATTENTION, &s, 0,
                           sl->rows[j].vals[r]);
                }
        }
    }
    if (tp == 1 && t->has_moe)
        for (int i = 0; i < t->moe.n; i++)
            for (int j = 0; j < t->moe.rows[i].n; j++) {
                struct sv_compute_batch_shape s = {0};
                s.moe_activated_experts = t->moe.keys[i];
                s.moe_local_tokens = s.tokens = s.n_seqs = t->moe.rows[i].keys[j];
                add_op(d, di, src, mi, tp, FA_GEMM, FA_SUB_MOE, SV_COMPUTE_OP_MOE, &s, 0,
                       t->moe.rows[i].vals[j]);
            }
    return TRUE;
}

/* ---- attention.csv of the TPU perf model: prefill_chunk_size, kv_cache_size, batch_size,
 * is_prefill, mean_ns, p50_ns, p90_ns, max_ns (the median taken) ---- */

static gboolean load_tpu_attention(struct fa_data *d, const sv_compute_table *c, const char *rel,
                                   const char *dev, const char *model, int tp, int cap,
                                   GError **error)
{
    struct sv_compute_model_cfg m;
    if (!sv_compute_model_lookup(model, NULL, &m, error))
        return FALSE;
    const char *cols[] = {"prefill_chunk_size", "kv_cache_size", "batch_size", "p50_ns",
                          "is_prefill"};
    int ci[G_N_ELEMENTS(cols)];
    for (size_t i = 0; i < G_N_ELEMENTS(cols); i++)
        if ((ci[i] = sv_compute__csv_col(c, cols[i], error)) < 0)
            return FALSE;
    int di = dev_index(dev), src = add_source(d, dev, rel), mi = add_model(d, &m);
    int n = (int)c->rows->len;
    for (int r = 0; r < n; r++) {
        if (!keep(r, n, cap))
            continue;
        double v[4];
        for (int k = 0; k < 4; k++)
            if (!sv_compute__csv_double(c, (guint)r, ci[k], &v[k], error))
                return FALSE;
        gboolean prefill = !strcmp(((char **)c->rows->pdata[r])[ci[4]], "True");
        struct sv_compute_batch_shape s;
        int sub;
        if (prefill)
            attn_shape(&s, (int64_t)v[0], (int64_t)v[1], 0, 0, &sub);
        else
            attn_shape(&s, 0, 0, (int64_t)v[2], (int64_t)v[1], &sub);
        add_op(d, di, src, mi, tp, FA_ATTN, sub, SV_COMPUTE_OP_ATTENTION, &s, -1, v[3]);
    }
    return TRUE;
}

/* ---- Vidur-layout attention (legacy attention.csv, Vidur's A100 sample) ------------------------
 */

/* `legacy`: LLMServingSim's v1 profiler wrote this layout with kv_cache_size the KV of the whole
 * decode batch (per request: kv_cache_size / batch_size; its times fall to a few microseconds
 * when that rounds to 0) and timed decode through the tiled varlen kernel (no head packing, no
 * KV split: the time of one request grows with its KV at the tile's FLOP rate, not the
 * bandwidth): its decode rows are evaluated as prefills of one token per request. Vidur's own
 * rows give the KV per request and time the decode kernel. */
static gboolean load_vidur_attention(struct fa_data *d, const char *shared, const char *rel,
                                     const char *dev, const char *model, int tp, gboolean legacy,
                                     int cap, GError **error)
{
    g_autofree char *path = g_build_filename(shared, rel, NULL);
    g_autoptr(sv_compute_table) c = sv_compute__csv_load(path, error);
    if (!c)
        return FALSE;
    GError *e = NULL;
    if (sv_compute__csv_col(c, "p50_ns", &e) >= 0)
        return load_tpu_attention(d, c, rel, dev, model, tp, cap, error);
    g_clear_error(&e);
    const char *cols[] = {"time_stats.attn_prefill.median",
                          "time_stats.attn_decode.median",
                          "n_embd",
                          "n_q_head",
                          "n_kv_head",
                          "num_tensor_parallel_workers",
                          "batch_size",
                          "prefill_chunk_size",
                          "kv_cache_size",
                          "is_prefill"};
    int ci[G_N_ELEMENTS(cols)];
    for (size_t i = 0; i < G_N_ELEMENTS(cols); i++)
        if ((ci[i] = sv_compute__csv_col(c, cols[i], error)) < 0)
            return FALSE;
    int di = dev_index(dev), src = add_source(d, dev, rel);
    int n = (int)c->rows->len, mi = -1;
    for (int r = 0; r < n; r++) {
        if (!keep(r, n, cap))
            continue;
        char **row = c->rows->pdata[r];
        gboolean prefill = !strcmp(row[ci[9]], "True");
        double v[9];
        for (int k = 2; k < 9; k++)
            if (!sv_compute__csv_double(c, (guint)r, ci[k], &v[k], error))
                return FALSE;
        const char *ts = row[ci[prefill ? 0 : 1]];
        if (!*ts)
            continue;
        double ms = g_ascii_strtod(ts, NULL);
        if (mi < 0) {
            /* The attention shape of the file's model (one per file). */
            struct sv_compute_model_cfg m = {0};
            g_strlcpy(m.name, rel, sizeof m.name);
            m.hidden_size = (int64_t)v[2];
            m.num_heads = (int64_t)v[3];
            m.num_kv_heads = (int64_t)v[4];
            m.head_dim = m.hidden_size / m.num_heads;
            m.num_layers = 1;
            m.dtype_bytes = 2;
            mi = add_model(d, &m);
        }
        struct sv_compute_batch_shape s;
        int sub;
        if (prefill) {
            attn_shape(&s, (int64_t)v[7], (int64_t)v[8], 0, 0, &sub);
        } else if (legacy) {
            int64_t b = (int64_t)v[6], kv = (int64_t)v[8] / b;
            if (kv < 1)
                continue;
            attn_shape(&s, b, b * kv, 0, 0, &sub);
            s.n_prefill_seqs = b;
            sub = FA_SUB_DECODE;
        } else {
            attn_shape(&s, 0, 0, (int64_t)v[6], (int64_t)v[8], &sub);
        }
        add_op(d, di, src, mi, (int)v[5], FA_ATTN, sub, SV_COMPUTE_OP_ATTENTION, &s, -1, ms * 1e6);
    }
    return TRUE;
}

/* ---- legacy layers.csv ---------------------------------------------------------------------- */

static gboolean load_legacy_layers(struct fa_data *d, const char *shared, const char *hw_dir,
                                   const char *dev, const char *model, int tp, int cap,
                                   GError **error)
{
    struct sv_compute_model_cfg m;
    if (!sv_compute_model_lookup(model, NULL, &m, error))
        return FALSE;
    g_autofree char *rel = g_strdup_printf(
        "reference/llmservingsim-ispass26/perf_models/%s/%s/tp%d/layers.csv", hw_dir, model, tp);
    g_autofree char *path = g_build_filename(shared, rel, NULL);
    g_autoptr(sv_compute_table) c = sv_compute__csv_load(path, error);
    if (!c)
        return FALSE;
    int cn = sv_compute__csv_col(c, "layer_name", error), ci = -1, cl = -1;
    if (cn < 0 || (ci = sv_compute__csv_col(c, "input", error)) < 0 ||
        (cl = sv_compute__csv_col(c, "latency(ns)", error)) < 0)
        return FALSE;
    int di = dev_index(dev), src = add_source(d, dev, rel);
    double H = (double)m.hidden_size, hd = (double)m.head_dim;
    double nh = (double)m.num_heads / tp, nkv = (double)sv_compute__kv_heads_per_rank(&m, tp);
    double I = (double)m.intermediate_size / tp, V = (double)m.vocab_size / tp;
    /* The legacy profiles time every expert unsharded: the same at tp1, tp2 and tp4. */
    double Im = (double)m.moe_intermediate_size;
    gboolean tpu = di == FA_TPU;
    /* name, N, K: per-rank GEMM shapes. The TPU file has no k_proj/v_proj rows: its q_proj is
     * the fused QKV projection (LLMServingSim's fallback reads it so). */
    const struct {
        const char *name;
        double n, k;
    } g[] = {
        {"q_proj", tpu ? (nh + 2 * nkv) * hd : nh * hd, H},
        {"k_proj", nkv * hd, H},
        {"v_proj", nkv * hd, H},
        {"o_proj", H, nh * hd},
        {"gate_proj", I, H},
        {"up_proj", I, H},
        {"down_proj", H, I},
        {"lm_head", V, H},
        {"expert.w1", Im, H},
        {"expert.w3", Im, H},
        {"expert.w2", H, Im},
    };
    for (size_t k = 0; k < G_N_ELEMENTS(g); k++) {
        /* Rows of this layer, in file order. */
        g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(guint));
        for (guint r = 0; r < c->rows->len; r++)
            if (!strcmp(((char **)c->rows->pdata[r])[cn], g[k].name))
                g_array_append_val(rows, r);
        /* Token sweeps 1..2048: every point to 16 tokens, then evenly spaced. */
        int n = (int)rows->len;
        for (int i = 0; i < n; i++) {
            guint r = g_array_index(rows, guint, i);
            double M, ns;
            if (!sv_compute__csv_double(c, r, ci, &M, error) ||
                !sv_compute__csv_double(c, r, cl, &ns, error))
                return FALSE;
            if (M > 16 && !keep(i, n, cap))
                continue;
            add_gemm(d, di, src, M, g[k].n, g[k].k, ns);
        }
    }
    return TRUE;
}

/* ---- Vidur mlp.csv -------------------------------------------------------------------------- */

static gboolean load_vidur_mlp(struct fa_data *d, const char *shared, const char *dev_dir,
                               const char *dev, const char *model, int cap, GError **error)
{
    g_autofree char *rel =
        g_strdup_printf("reference/vidur/profiling/compute/%s/%s/mlp.csv", dev_dir, model);
    g_autofree char *path = g_build_filename(shared, rel, NULL);
    g_autoptr(sv_compute_table) c = sv_compute__csv_load(path, error);
    if (!c)
        return FALSE;
    const char *cols[] = {"n_head",          "n_kv_head",  "n_embd",
                          "n_expanded_embd", "num_tokens", "num_tensor_parallel_workers",
                          "use_gated_mlp"};
    int ci[G_N_ELEMENTS(cols)];
    for (size_t i = 0; i < G_N_ELEMENTS(cols); i++)
        if ((ci[i] = sv_compute__csv_col(c, cols[i], error)) < 0)
            return FALSE;
    static const char *ops[] = {"attn_pre_proj",
                                "attn_post_proj",
                                "mlp_up_proj",
                                "mlp_down_proj",
                                "input_layernorm",
                                "post_attention_layernorm",
                                "attn_rope",
                                "mlp_act",
                                "add",
                                "emb"};
    int oc[G_N_ELEMENTS(ops)];
    for (size_t i = 0; i < G_N_ELEMENTS(ops); i++) {
        /* phi-2 has one LayerNorm per layer: no post_attention_layernorm column. */
        g_autofree char *col = g_strdup_printf("time_stats.%s.median", ops[i]);
        GError *e = NULL;
        oc[i] = sv_compute__csv_col(c, col, i == 5 ? &e : error);
        g_clear_error(&e);
        if (oc[i] < 0 && i != 5)
            return FALSE;
    }
    int di = dev_index(dev), src = add_source(d, dev, rel);
    int n = (int)c->rows->len;
    for (int r = 0; r < n; r++) {
        if (!keep(r, n, cap))
            continue;
        double v[7];
        for (int k = 0; k < 6; k++)
            if (!sv_compute__csv_double(c, (guint)r, ci[k], &v[k], error))
                return FALSE;
        gboolean gated = !strcmp(((char **)c->rows->pdata[r])[ci[6]], "True");
        double nh = v[0], H = v[2], I = v[3], T = v[4], tp = v[5], b = 2;
        double hd = H / nh, nhr = nh / tp, nkvr = fmax(1, v[1] / tp), Ir = I / tp;
        double t[G_N_ELEMENTS(ops)];
        for (size_t k = 0; k < G_N_ELEMENTS(ops); k++) {
            const char *s = oc[k] >= 0 ? ((char **)c->rows->pdata[r])[oc[k]] : "";
            t[k] = *s ? g_ascii_strtod(s, NULL) * 1e6 : 0; /* ms -> ns */
        }
        add_gemm(d, di, src, T, (nhr + 2 * nkvr) * hd, H, t[0]);
        add_gemm(d, di, src, T, H, nhr * hd, t[1]);
        add_gemm(d, di, src, T, (gated ? 2 : 1) * Ir, H, t[2]);
        add_gemm(d, di, src, T, H, Ir, t[3]);
        /* sarathi-serve's kernels: RMSNorm without the residual (the add is its own op), rotary
         * in place on q and k, SiLU x up (or GeLU), the embedding gather (TP1 only: sharded it
         * adds a mask). */
        add_ew(d, di, src, 2 * T * H * b, t[4]);
        add_ew(d, di, src, 2 * T * H * b, t[5]);
        add_ew(d, di, src, 2 * T * (nhr + nkvr) * hd * b, t[6]);
        add_ew(d, di, src, (gated ? 3 : 2) * T * Ir * b, t[7]);
        add_ew(d, di, src, 3 * T * H * b, t[8]);
        if (tp == 1)
            add_ew(d, di, src, 2 * T * H * b, t[9]);
    }
    return TRUE;
}

gboolean fa_load(struct fa_data *d, const char *shared, int cap, GError **error)
{
    memset(d, 0, sizeof *d);
    d->pts = g_array_new(FALSE, FALSE, sizeof(struct fa_point));
    d->sources = g_ptr_array_new_with_free_func(g_free);
    d->models = g_array_new(FALSE, FALSE, sizeof(struct sv_compute_model_cfg));
    for (int i = 0; i < FA_N_DEV; i++)
        if (!sv_compute_hw_lookup(fa_devices[i], &d->hw[i], error))
            return FALSE;
    static const struct {
        const char *hw_dir, *dev, *model;
        int tp;
    } bundles[] = {
        {"RTX4090", "RTX-4090", "meta-llama/Llama-3.1-8B", 1},
        {"RTXPRO6000", "RTX-PRO-6000", "meta-llama/Llama-3.1-8B", 1},
        {"RTXPRO6000", "RTX-PRO-6000", "meta-llama/Llama-3.1-8B", 2},
        {"RTXPRO6000", "RTX-PRO-6000", "Qwen/Qwen3-32B", 1},
        {"RTXPRO6000", "RTX-PRO-6000", "Qwen/Qwen3-32B", 2},
        {"RTXPRO6000", "RTX-PRO-6000", "Qwen/Qwen3-30B-A3B-Instruct-2507", 1},
        {"RTXPRO6000", "RTX-PRO-6000", "Qwen/Qwen3-30B-A3B-Instruct-2507", 2},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(bundles); i++)
        if (!load_bundle(d, shared, bundles[i].hw_dir, bundles[i].dev, bundles[i].model,
                         bundles[i].tp, cap, error))
            return FALSE;
    static const struct {
        const char *hw_dir, *dev, *model;
        int tp;
        gboolean attention;
    } legacy[] = {
        {"A6000", "RTX-A6000", "meta-llama/Llama-3.1-8B", 1, TRUE},
        {"A6000", "RTX-A6000", "meta-llama/Llama-3.1-8B", 2, TRUE},
        {"A6000", "RTX-A6000", "microsoft/Phi-mini-MoE-instruct", 1, TRUE},
        {"A6000", "RTX-A6000", "microsoft/Phi-mini-MoE-instruct", 2, TRUE},
        {"H100", "H100-SXM", "meta-llama/Llama-3.1-8B", 1, FALSE},
        {"H100", "H100-SXM", "meta-llama/Llama-3.1-8B", 2, FALSE},
        {"H100", "H100-SXM", "meta-llama/Llama-3.1-70B", 1, FALSE},
        {"H100", "H100-SXM", "meta-llama/Llama-3.1-70B", 2, FALSE},
        {"H100", "H100-SXM", "meta-llama/Llama-3.1-70B", 4, TRUE},
        {"H100", "H100-SXM", "mistralai/Mixtral-8x7B-v0.1", 1, FALSE},
        {"H100", "H100-SXM", "mistralai/Mixtral-8x7B-v0.1", 2, FALSE},
        {"H100", "H100-SXM", "mistralai/Mixtral-8x7B-v0.1", 4, TRUE},
        {"RTX3090", "RTX-3090", "meta-llama/Llama-3.1-8B", 1, FALSE},
        {"RTX3090", "RTX-3090", "meta-llama/Llama-3.1-8B", 2, FALSE},
        {"RTX3090", "RTX-3090", "microsoft/Phi-mini-MoE-instruct", 1, FALSE},
        {"RTX3090", "RTX-3090", "microsoft/Phi-mini-MoE-instruct", 2, FALSE},
        {"TPU-v6e-1", "TPU-v6e", "meta-llama/Llama-3.1-8B", 1, TRUE},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(legacy); i++) {
        if (!load_legacy_layers(d, shared, legacy[i].hw_dir, legacy[i].dev, legacy[i].model,
                                legacy[i].tp, cap, error))
            return FALSE;
        if (!legacy[i].attention)
            continue;
        g_autofree char *rel =
            g_strdup_printf("reference/llmservingsim-ispass26/perf_models/%s/%s/tp%d/attention.csv",
                            legacy[i].hw_dir, legacy[i].model, legacy[i].tp);
        if (!load_vidur_attention(d, shared, rel, legacy[i].dev, legacy[i].model, legacy[i].tp,
                                  TRUE, cap, error))
            return FALSE;
    }
    static const struct {
        const char *dir, *dev, *model;
    } vidur[] = {
        {"a100", "A100-80GB", "Qwen/Qwen-72B"},
        {"a100", "A100-80GB", "codellama/CodeLlama-34b-Instruct-hf"},
        {"a100", "A100-80GB", "internlm/internlm-20b"},
        {"a100", "A100-80GB", "meta-llama/Llama-2-70b-hf"},
        {"a100", "A100-80GB", "meta-llama/Llama-2-7b-hf"},
        {"a100", "A100-80GB", "meta-llama/Meta-Llama-3-70B"},
        {"a100", "A100-80GB", "meta-llama/Meta-Llama-3-8B"},
        {"a100", "A100-80GB", "microsoft/phi-2"},
        {"h100", "H100-SXM", "Qwen/Qwen-72B"},
        {"h100", "H100-SXM", "codellama/CodeLlama-34b-Instruct-hf"},
        {"h100", "H100-SXM", "internlm/internlm-20b"},
        {"h100", "H100-SXM", "meta-llama/Llama-2-70b-hf"},
        {"h100", "H100-SXM", "meta-llama/Llama-2-7b-hf"},
        {"h100", "H100-SXM", "microsoft/phi-2"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(vidur); i++)
        if (!load_vidur_mlp(d, shared, vidur[i].dir, vidur[i].dev, vidur[i].model, cap, error))
            return FALSE;
    return load_vidur_attention(
        d, shared, "reference/vidur/attention_subsample/a100_llama2_7b_tp1_attention_subsample.csv",
        "A100-80GB", NULL, 1, FALSE, cap, error);
}

void fa_data_clear(struct fa_data *d)
{
    if (d->pts)
        g_array_free(d->pts, TRUE);
    if (d->sources)
        g_ptr_array_unref(d->sources);
    if (d->models)
        g_array_free(d->models, TRUE);
    memset(d, 0, sizeof *d);
}
