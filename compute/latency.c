/* The latency interface: constructors, per-operator dispatch, whole iterations, and the
 * per-operator FLOPs and bytes. */
#include "compute/compute_internal.h"

#include <math.h>
#include <string.h>

void sv_compute_batch_shape_init(struct sv_compute_batch_shape *s, const int64_t *prefill_chunk,
                                 const int64_t *prefill_hist, int64_t n_prefill,
                                 const int64_t *decode_kv, int64_t n_decode)
{
    memset(s, 0, sizeof *s);
    for (int64_t i = 0; i < n_prefill; i++) {
        s->n_prefill_tokens += prefill_chunk[i];
        s->prefill_kv += prefill_hist[i];
    }
    s->n_prefill_seqs = n_prefill;
    s->n_decode = n_decode;
    for (int64_t i = 0; i < n_decode; i++) {
        s->decode_kv_sum += decode_kv[i];
        if (i == 0 || decode_kv[i] > s->decode_kv_max)
            s->decode_kv_max = decode_kv[i];
        if (i == 0 || decode_kv[i] < s->decode_kv_min)
            s->decode_kv_min = decode_kv[i];
    }
    s->decode_kv_mean = n_decode > 0 ? s->decode_kv_sum / n_decode : 0;
    s->n_seqs = n_prefill + n_decode;
    s->tokens = s->n_prefill_tokens + n_decode;
}

static sv_compute_latency *latency_alloc(sv_compute_latency_backend b,
                                         const struct sv_compute_model_cfg *m, int tp,
                                         GError **error)
{
    if (tp < 1 || m->num_heads % tp != 0) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                    "tp %d does not divide %" G_GINT64_FORMAT " attention heads of %s", tp,
                    m->num_heads, m->name);
        return NULL;
    }
    sv_compute_latency *lat = g_new0(sv_compute_latency, 1);
    lat->backend = b;
    lat->model = *m;
    lat->tp = tp;
    lat->seq = sv_compute_layer_seq(m->arch);
    lat->clock = 1.0;
    return lat;
}

void sv_compute_latency_free(sv_compute_latency *lat)
{
    if (!lat)
        return;
    if (lat->t_1 && lat->t_1 != lat->t_tp) {
        sv_compute__tp_tables_clear(lat->t_1);
        g_free(lat->t_1);
    }
    if (lat->t_tp) {
        sv_compute__tp_tables_clear(lat->t_tp);
        g_free(lat->t_tp);
    }
    sv_compute__skew_fit_clear(&lat->skew);
    sv_compute__legacy_free(lat->legacy);
    sv_compute__vidur_free(lat->vidur);
    g_free(lat->dir);
    g_free(lat);
}

sv_compute_latency *sv_compute_latency_new_profile(const char *variant_dir,
                                                   const struct sv_compute_model_cfg *m, int tp,
                                                   GError **error)
{
    g_autoptr(sv_compute_latency) lat = latency_alloc(SV_COMPUTE_LATENCY_PROFILE, m, tp, error);
    if (!lat || !sv_compute__profile_load(lat, variant_dir, error))
        return NULL;
    g_debug("latency: profile bundle %s (tp %d)", variant_dir, tp);
    return g_steal_pointer(&lat);
}

sv_compute_latency *sv_compute_latency_new_legacy(const char *tp_dir,
                                                  const struct sv_compute_model_cfg *m, int tp,
                                                  GError **error)
{
    g_autoptr(sv_compute_latency) lat = latency_alloc(SV_COMPUTE_LATENCY_LEGACY, m, tp, error);
    if (!lat || !sv_compute__legacy_load(lat, tp_dir, error))
        return NULL;
    g_debug("latency: legacy layer profiles %s (tp %d)", tp_dir, tp);
    return g_steal_pointer(&lat);
}

sv_compute_latency *sv_compute_latency_new_vidur(const char *model_dir,
                                                 const struct sv_compute_model_cfg *m, int tp,
                                                 const struct sv_compute_hw_cfg *hw, GError **error)
{
    g_autoptr(sv_compute_latency) lat = latency_alloc(SV_COMPUTE_LATENCY_VIDUR, m, tp, error);
    if (!lat || !sv_compute__vidur_load(lat, model_dir, hw, error))
        return NULL;
    g_debug("latency: Vidur profiles %s (tp %d)", model_dir, tp);
    return g_steal_pointer(&lat);
}

sv_compute_latency *sv_compute_latency_new_roofline(const struct sv_compute_model_cfg *m,
                                                    const struct sv_compute_hw_cfg *hw, int tp,
                                                    const struct sv_compute_analytic_params *p,
                                                    GError **error)
{
    if (!(hw->bf16_tflops > 0 && hw->mem_bw_gbps > 0)) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                    "the analytic model needs positive bf16_tflops and mem_bw_gbps: hardware %s",
                    hw->name);
        return NULL;
    }
    sv_compute_latency *lat = latency_alloc(SV_COMPUTE_LATENCY_ROOFLINE, m, tp, error);
    if (!lat)
        return NULL;
    lat->hw = *hw;
    if (p) {
        lat->an_params = *p;
        lat->an_given = TRUE;
    }
    /* vLLM's defaults (max_num_seqs 256 or more, 2,048 batched tokens) until the serving core
     * says otherwise. */
    sv_compute_latency_set_cudagraph(lat, 256, 2048);
    g_debug("latency: analytic on %s (%.1f bf16 TFLOPS, %.0f GB/s, %d SMs, tp %d)%s", hw->name,
            hw->bf16_tflops, hw->mem_bw_gbps, hw->compute_units, tp,
            sv_compute__an_device_fit(hw->name) && !p ? ", device calibration" : "");
    return lat;
}

void sv_compute_latency_set_cudagraph(sv_compute_latency *lat, int64_t max_num_seqs,
                                      int64_t max_num_batched_tokens)
{
    /* vllm/config/vllm.py, VllmConfig._set_cudagraph_sizes: max_graph_size = min(max_num_seqs
     * x 2, 512); sizes [1, 2, 4] + range(8, 256, 8) + range(256, max_graph_size + 1, 16), then
     * those above max_num_batched_tokens dropped. */
    lat->n_graph_sizes = 0;
    if (max_num_seqs <= 0)
        return;
    int64_t top = max_num_seqs > 256 ? 512 : 2 * max_num_seqs;
    for (int64_t v = 1; v <= top && lat->n_graph_sizes < (int)G_N_ELEMENTS(lat->graph_sizes);) {
        if (v <= max_num_batched_tokens)
            lat->graph_sizes[lat->n_graph_sizes++] = v;
        v = v < 4 ? v * 2 : v < 8 ? 8 : v < 256 ? v + 8 : v + 16;
    }
}

int64_t sv_compute_cudagraph_size(const sv_compute_latency *lat, int64_t tokens)
{
    for (int i = 0; i < lat->n_graph_sizes; i++)
        if (lat->graph_sizes[i] >= tokens)
            return lat->graph_sizes[i];
    return tokens;
}

char *sv_compute_profile_find(const char *profiles_root, const char *hw, const char *model_name,
                              const char *variant, GError **error)
{
    char *p =
        g_strdup_printf("%s/%s/%s/%s", profiles_root, hw, model_name, variant ? variant : "bf16");
    if (g_file_test(p, G_FILE_TEST_IS_DIR))
        return p;
    g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING,
                "no profile bundle for hardware %s, model %s, variant %s: %s not found", hw,
                model_name, variant ? variant : "bf16", p);
    g_free(p);
    return NULL;
}

char *sv_compute_legacy_find(const char *perf_models_root, const char *hw, const char *model_name,
                             int tp, GError **error)
{
    char *p = g_strdup_printf("%s/%s/%s/tp%d/layers.csv", perf_models_root, hw, model_name, tp);
    if (g_file_test(p, G_FILE_TEST_IS_REGULAR)) {
        *strrchr(p, '/') = '\0'; /* the tp<N> folder */
        return p;
    }
    g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING,
                "no legacy profile for hardware %s, model %s, tp %d: %s not found", hw, model_name,
                tp, p);
    g_free(p);
    return NULL;
}

const struct sv_compute_model_cfg *sv_compute_latency_model(const sv_compute_latency *lat)
{
    return &lat->model;
}

/* ---- operator costs ------------------------------------------------------------------------
 * FLOPs count multiply-adds as 2; bytes are what the kernel must move at least once: weights,
 * activations in and out, KV read. Shapes are per TP rank (heads and FFN columns / tp). */
void sv_compute_op_cost(const struct sv_compute_model_cfg *m, int tp, sv_compute_op_kind op,
                        const struct sv_compute_batch_shape *s, double *flops, double *bytes)
{
    double b = (double)m->dtype_bytes, H = (double)m->hidden_size, hd = (double)m->head_dim;
    double wb = sv_compute_model_weight_param_bytes(m);
    double kvb = (double)sv_compute_model_kv_elem_bytes(m);
    double nh = (double)m->num_heads / tp, nkv = (double)sv_compute__kv_heads_per_rank(m, tp);
    double I = (double)m->intermediate_size / tp, V = (double)m->vocab_size / tp;
    double T = (double)(s->tokens > 0 ? s->tokens : 0), S = (double)s->n_seqs;
    double f = 0, by = 0;
    switch (op) {
    case SV_COMPUTE_OP_EMBEDDING:
        by = 2 * T * H * b; /* gather rows, write activations */
        break;
    case SV_COMPUTE_OP_LAYERNORM:
    case SV_COMPUTE_OP_FINAL_LAYERNORM:
        f = 4 * T * H;
        by = 2 * T * H * b + H * b;
        break;
    case SV_COMPUTE_OP_QKV_PROJ: {
        double out = (nh + 2 * nkv) * hd;
        f = 2 * T * H * out;
        by = H * out * wb + T * (H + out) * b;
        break;
    }
    case SV_COMPUTE_OP_QK_NORM:
        f = 4 * T * (nh + nkv) * hd;
        by = 2 * T * (nh + nkv) * hd * b;
        break;
    case SV_COMPUTE_OP_ROTARY_EMB:
        f = 3 * T * (nh + nkv) * hd;
        by = 2 * T * (nh + nkv) * hd * b;
        break;
    case SV_COMPUTE_OP_ATTENTION: {
        /* Prefill: each chunk token attends to its history and (causally) half its chunk;
         * with only sums known, requests are taken as equal (mean chunk, mean history). */
        double P = (double)s->n_prefill_tokens,
               np = s->n_prefill_seqs > 0 ? (double)s->n_prefill_seqs : (P > 0 ? 1 : 0);
        double ctx = np > 0 ? P * ((double)s->prefill_kv / np + P / np / 2) : 0;
        f = 4 * nh * hd * (ctx + (double)s->decode_kv_sum);
        double kv_tokens =
            (double)s->prefill_kv + P + (double)s->decode_kv_sum + (double)s->n_decode;
        by = kv_tokens * 2 * nkv * hd * kvb + 2 * T * nh * hd * b;
        break;
    }
    case SV_COMPUTE_OP_O_PROJ:
        f = 2 * T * nh * hd * H;
        by = nh * hd * H * wb + T * (nh * hd + H) * b;
        break;
    case SV_COMPUTE_OP_GATE_UP_PROJ:
        f = 2 * T * H * 2 * I;
        by = 2 * H * I * wb + T * (H + 2 * I) * b;
        break;
    case SV_COMPUTE_OP_ACT_FN:
        f = 5 * T * I;
        by = 3 * T * I * b;
        break;
    case SV_COMPUTE_OP_DOWN_PROJ:
        f = 2 * T * I * H;
        by = I * H * wb + T * (I + H) * b;
        break;
    case SV_COMPUTE_OP_MOE: {
        double Im = (double)m->moe_intermediate_size / tp, E = (double)m->num_experts;
        double Tl = (double)(s->moe_local_tokens > 0 ? s->moe_local_tokens : s->tokens);
        double A = (double)s->moe_activated_experts;
        if (A <= 0)
            A = fmin(E, Tl * (double)m->experts_per_tok);
        f = 2 * Tl * (double)m->experts_per_tok * 3 * H * Im + 2 * Tl * H * E;
        by = A * 3 * H * Im * wb + H * E * b + 2 * Tl * H * b;
        break;
    }
    case SV_COMPUTE_OP_LM_HEAD:
        f = 2 * S * H * V;
        by = V * H * b + S * (H * b + V * 4); /* logits in fp32 */
        break;
    case SV_COMPUTE_OP_SAMPLER:
        f = 5 * S * V * tp; /* full vocabulary after the gather */
        by = 2 * S * V * tp * 4;
        break;
    case SV_COMPUTE_OP_COUNT:
        break;
    }
    *flops = f;
    *bytes = by;
}

/* The analytic model on the latency's own device at DVFS clock `clock`. vLLM runs a batch of up
 * to its largest capture size as a CUDA graph padded to the next capture size: a decode-only
 * batch as a full graph, any other piecewise; the logits (lm_head) and the sampler run after the
 * graph, eager and unpadded. */
static double analytic_ns(const sv_compute_latency *lat, const struct sv_compute_hw_cfg *hw,
                          const struct sv_compute_analytic_params *p, sv_compute_op_kind op,
                          const struct sv_compute_batch_shape *s, double clock)
{
    if (op == SV_COMPUTE_OP_ATTENTION && s->n_prefill_tokens == 0 && s->n_decode == 0)
        return 0;
    struct sv_compute__an_dev d;
    sv_compute__an_dev_init(&d, hw, (int)lat->model.dtype_bytes, p, clock);
    d.wgemm_peak = sv_compute_hw_gemm_peak_flops(hw, &lat->model) * clock;
    d.w_bytes = sv_compute_model_weight_param_bytes(&lat->model);
    int graph = 0;
    struct sv_compute_batch_shape g = *s;
    if (!d.tpu && op != SV_COMPUTE_OP_LM_HEAD && op != SV_COMPUTE_OP_SAMPLER &&
        lat->n_graph_sizes > 0 && s->tokens > 0 &&
        s->tokens <= lat->graph_sizes[lat->n_graph_sizes - 1]) {
        graph = s->n_prefill_tokens == 0 ? 2 : 1;
        g.tokens = sv_compute_cudagraph_size(lat, s->tokens);
    }
    return sv_compute__an_op_ns(&d, &lat->model, lat->tp, op, &g, graph);
}

void sv_compute_latency_set_clock(sv_compute_latency *lat, double clock,
                                  const struct sv_compute_hw_cfg *hw)
{
    SV_ASSERT(lat != NULL && clock > 0.0 && clock <= 1.0);
    lat->clock = clock;
    lat->clock_hw_set = hw != NULL && hw->bf16_tflops > 0 && hw->mem_bw_gbps > 0;
    if (lat->clock_hw_set)
        lat->clock_hw = *hw;
}

double sv_compute_latency_clock(const sv_compute_latency *lat)
{
    return lat->clock;
}

/* DVFS factor of a profiled operator time: the analytic model's time at `clock` over its time
 * at the nominal clock on clock_hw (sv_compute_latency_set_clock), 1/clock without hardware. */
static double clock_factor(const sv_compute_latency *lat, sv_compute_op_kind op,
                           const struct sv_compute_batch_shape *s)
{
    if (!lat->clock_hw_set)
        return 1.0 / lat->clock;
    double before = analytic_ns(lat, &lat->clock_hw, NULL, op, s, 1.0);
    if (!(before > 0))
        return 1.0 / lat->clock; /* nothing to split: take it as compute */
    return analytic_ns(lat, &lat->clock_hw, NULL, op, s, lat->clock) / before;
}

sv_time sv_compute_op_time(sv_compute_latency *lat, sv_compute_op_kind op,
                           const struct sv_compute_batch_shape *s)
{
    double ns = 0;
    struct sv_compute_batch_shape npu;
    if (op == SV_COMPUTE_OP_ATTENTION && s->attn_decode_off) {
        /* Decode attention runs on PIM: the NPU kernel sees the prefill part only. */
        if (s->n_prefill_tokens == 0)
            return 0;
        npu = *s;
        npu.n_decode = npu.decode_kv_mean = npu.decode_kv_max = npu.decode_kv_min = 0;
        npu.decode_kv_sum = 0;
        s = &npu;
    }
    switch (lat->backend) {
    case SV_COMPUTE_LATENCY_PROFILE:
        ns = sv_compute__profile_op_ns(lat, op, s);
        break;
    case SV_COMPUTE_LATENCY_LEGACY:
        ns = sv_compute__legacy_op_ns(lat, op, s);
        break;
    case SV_COMPUTE_LATENCY_VIDUR:
        ns = sv_compute__vidur_op_ns(lat, op, s);
        break;
    case SV_COMPUTE_LATENCY_ROOFLINE:
        ns = analytic_ns(lat, &lat->hw, lat->an_given ? &lat->an_params : NULL, op, s, lat->clock);
        break;
    }
    if (lat->clock != 1.0 && lat->backend != SV_COMPUTE_LATENCY_ROOFLINE && ns > 0)
        ns *= clock_factor(lat, op, s);
    return sv_time_from_ns(ns);
}

/* ---- iterations ------------------------------------------------------------------------------ */

static sv_time fill_ops(sv_compute_latency *lat, const struct sv_compute_batch_shape *s,
                        const sv_compute_op_kind *ops, int n, struct sv_compute_iter_op *out,
                        int *nout)
{
    sv_time sum = 0;
    /* TP all-reduce of the activations after the row-parallel layers and the MoE block
     * (trace_generator._TP_ALLREDUCE_AFTER; its size is the layer output, tokens x hidden). */
    uint64_t ar = lat->tp > 1
                      ? (uint64_t)(s->tokens > 0 ? s->tokens : 0) *
                            (uint64_t)lat->model.hidden_size * (uint64_t)lat->model.dtype_bytes
                      : 0;
    for (int i = 0; i < n; i++) {
        struct sv_compute_iter_op *o = &out[(*nout)++];
        o->op = ops[i];
        o->ns = sv_compute_op_time(lat, ops[i], s);
        o->allreduce_bytes = (ops[i] == SV_COMPUTE_OP_O_PROJ || ops[i] == SV_COMPUTE_OP_DOWN_PROJ ||
                              ops[i] == SV_COMPUTE_OP_MOE)
                                 ? ar
                                 : 0;
        sum = sv_time_add_sat(sum, o->ns); /* each op is at most SV_TIME_BEYOND */
    }
    return sum;
}

void sv_compute_iter_time(sv_compute_latency *lat, const struct sv_compute_batch_shape *s,
                          int64_t layer_begin, int64_t layer_end, struct sv_compute_iter_time *out)
{
    const struct sv_compute_layer_seq *q = lat->seq;
    SV_ASSERT(layer_begin >= 0 && layer_begin <= layer_end && layer_end <= lat->model.num_layers);
    memset(out, 0, sizeof *out);
    out->n_layers = layer_end - layer_begin;
    if (layer_begin == 0)
        out->prologue_ns =
            fill_ops(lat, s, q->prologue, q->n_prologue, out->prologue, &out->n_prologue);
    if (out->n_layers > 0) {
        out->layer_ns = fill_ops(lat, s, q->pre_attn, q->n_pre_attn, out->layer, &out->n_layer);
        out->layer_ns =
            sv_time_add_sat(out->layer_ns, fill_ops(lat, s, q->post_attn, q->n_post_attn,
                                                    out->layer, &out->n_layer));
        out->layer_ns = sv_time_add_sat(
            out->layer_ns, fill_ops(lat, s, q->mlp, q->n_mlp, out->layer, &out->n_layer));
    }
    if (layer_end == lat->model.num_layers)
        out->head_ns = fill_ops(lat, s, q->head, q->n_head, out->head, &out->n_head);
    /* saturating: an op too long to represent keeps the iteration past the horizon (core.h) */
    out->total_ns = sv_time_add_sat(
        sv_time_add_sat(out->prologue_ns, sv_time_mul_sat(out->layer_ns, out->n_layers)),
        out->head_ns);
}
