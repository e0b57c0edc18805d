/* The analytic latency model: one model per operator class, calibrated on operator profiles.
 *
 * Classes (docs/compute.md "Analytic model" gives the equations and their sources):
 *  - GEMM (qkv/o/gate_up/down/lm_head, MoE experts and router): compute time on 128 x 128 output
 *    tiles (tile rows shrink to 16 for small M, as cuBLAS's small-M kernels do) quantised to
 *    whole waves over the device's SMs (split-K when there are fewer tiles than SMs), weight and
 *    activation bytes over the bandwidth, the two joined by a soft maximum.
 *  - attention: FlashAttention-2 on the paged KV cache as vLLM runs it. A batch with a prefill
 *    runs every sequence through the tiled kernel (one query head of one sequence and 64 query
 *    rows per CTA, no split over the KV): a tile computes 4 x 64 x head_dim FLOPs per key it sees
 *    under the causal mask, CTAs run in waves over the SMs, decodes in such a batch are one-row
 *    tiles; a mixed batch is the sum of its prefill and decode CTAs. A decode-only batch packs
 *    the query heads of a KV group and splits the KV to fill the device: K and V stream once at
 *    the bandwidth, a lone sequence at a share of it; a fixed time per CTA.
 *  - elementwise (norms, rotary, activation, embedding, sampler): bytes moved over bandwidth
 *    (faster while they fit in the L2, where the kernel before left them).
 *  - every kernel costs the device's launch time (x a ratio per class: the fixed time of a GEMM,
 *    an attention layer and an elementwise kernel differ); inside a CUDA graph less (compute.h,
 *    sv_compute_latency_set_cudagraph).
 * Collectives are not here: the serving core times the TP all-reduces (allreduce_bytes) and MoE
 * exchanges on its network, so nothing is counted twice. */
#include "compute/compute_internal.h"

#include <math.h>
#include <string.h>

/* The committed calibration (tools/fit_analytic): an_fit_gpu, an_fit_tpu, an_fit_devices[]. */
#include "compute/analytic_fit.inc"

/* Launch time a kernel saves inside a CUDA graph: NVIDIA Technical Blog, "Getting Started with
 * CUDA Graphs" (A. Gray, 2019): back-to-back launches of a ~2.9 us kernel cost 3.8 us per kernel
 * from a stream and 3.4 us inside a graph. The rest of a profiled launch time (the kernel's own
 * ramp and tail) stays. */
#define GRAPH_LAUNCH_SAVING_NS 400.0

/* FlashAttention-2 split-KV kernel (the one vLLM's paged varlen calls use): 64 query rows per CTA
 * (flash-attention csrc/flash_attn/src/flash_fwd_launch_template.h, run_mha_fwd_splitkv_dispatch:
 * kBlockM = 64 for every head dimension). */
#define ATTN_TILE_ROWS 64.0

const struct sv_compute_analytic_params *sv_compute_analytic_fit(gboolean tpu)
{
    return tpu ? &an_fit_tpu : &an_fit_gpu;
}

gboolean sv_compute__an_is_tpu(const struct sv_compute_hw_cfg *hw)
{
    return g_ascii_strncasecmp(hw->name, "TPU", 3) == 0;
}

const struct sv_compute__an_device_fit *sv_compute__an_device_fit(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(an_fit_devices); i++)
        if (!strcmp(an_fit_devices[i].name, name))
            return &an_fit_devices[i];
    return NULL;
}

void sv_compute__an_dev_init(struct sv_compute__an_dev *d, const struct sv_compute_hw_cfg *hw,
                             int dtype_bytes, const struct sv_compute_analytic_params *p,
                             double clock)
{
    memset(d, 0, sizeof *d);
    d->tpu = sv_compute__an_is_tpu(hw);
    d->p = p ? p : sv_compute_analytic_fit(d->tpu);
    d->peak_flops = sv_compute_hw_peak_flops(hw, dtype_bytes) * clock;
    d->wgemm_peak = d->peak_flops;
    d->bw = hw->mem_bw_gbps * 1e9;
    /* SMs / CUs; a TPU's TensorCores are not CTA slots (its own calibration has no waves). */
    d->sms = !d->tpu && hw->compute_units > 0 ? hw->compute_units : 0;
    d->l2_bytes = hw->l2_mib * 1048576.0;
    d->compute_scale = d->memory_scale = 1;
    d->launch_ns = d->p->launch_ns;
    const struct sv_compute__an_device_fit *f = p ? NULL : sv_compute__an_device_fit(hw->name);
    if (f) {
        d->compute_scale = f->compute_scale;
        d->memory_scale = f->memory_scale;
        d->launch_ns = f->launch_ns;
    }
}

/* ---- GEMM ------------------------------------------------------------------------------- */

static double pow2_ceil(double x)
{
    double p = 1;
    while (p < x)
        p *= 2;
    return p;
}

/* Compute time factor over the ideal FLOPs / peak for the best of the tile shapes a GEMM
 * library picks from (rows tm0 or 2 x tm0, columns 64, 128 or 256; tm0 the power of two at or
 * above M between 16 and 128): the padding of the last tile row and column, the idle SMs of the
 * last wave (with fewer tiles than SMs the library splits K instead: one wave, none idle), and
 * a tile smaller than 128 x 128 running at gemm_small_tile_eff per halving of its area. */
static double gemm_quant(const struct sv_compute_analytic_params *p, double groups, double m,
                         double n, int sms)
{
    double tm0 = fmin(128, fmax(16, pow2_ceil(m))), best = INFINITY;
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 3; c++) {
            double tm = tm0 * (r ? 2 : 1), tn = 64 * (c == 0 ? 1 : c == 1 ? 2 : 4);
            double mt = ceil(m / tm), nt = ceil(n / tn);
            double f = (mt * tm * nt * tn) / (m * n);
            if (sms > 0) {
                double tiles = groups * mt * nt;
                f *= tiles >= sms ? ceil(tiles / sms) * sms / tiles : 1;
            }
            double area = tm * tn;
            if (area < 128 * 128)
                f /= pow(fmin(1, p->gemm_small_tile_eff), log2(128 * 128 / area));
            best = fmin(best, f);
        }
    return best;
}

/* wb: bytes per weight element (b when unquantised: the same arithmetic as before). */
static double gemm_ns(const struct sv_compute__an_dev *d, double peak, double groups, double m,
                      double n, double k, double b, double wb)
{
    if (!(m > 0 && n > 0 && k > 0 && groups > 0))
        return 0;
    const struct sv_compute_analytic_params *p = d->p;
    double tc = 2 * groups * m * n * k * gemm_quant(p, groups, m, n, d->sms) /
                (peak * p->gemm_compute_eff * d->compute_scale);
    double by = wb == b ? groups * (n * k + m * k + m * n) * b
                        : groups * (n * k * wb + (m * k + m * n) * b);
    double tm = by / (d->bw * p->gemm_memory_eff * d->memory_scale);
    double e = fmax(1, p->gemm_blend);
    /* Soft maximum, scaled so that the larger term does not overflow. */
    double hi = fmax(tc, tm), lo = fmin(tc, tm);
    return hi * pow(1 + pow(lo / hi, e), 1 / e) * 1e9;
}

double sv_compute__an_gemm_ns(const struct sv_compute__an_dev *d, double groups, double m, double n,
                              double k, double b)
{
    return gemm_ns(d, d->peak_flops, groups, m, n, k, b, b);
}

double sv_compute__an_wgemm_ns(const struct sv_compute__an_dev *d, double groups, double m,
                               double n, double k, double b)
{
    return gemm_ns(d, d->wgemm_peak, groups, m, n, k, b, d->w_bytes > 0 ? d->w_bytes : b);
}

/* ---- attention --------------------------------------------------------------------------- */

double sv_compute__an_attn_ns(const struct sv_compute__an_dev *d, double nh, double nkv, double hd,
                              double b, double n_pf_tokens, double kv_prefill, double np, double nd,
                              double kv_sum, double kv_max)
{
    const struct sv_compute_analytic_params *p = d->p;
    double sms = d->sms, cta = p->attn_cta_ns * 1e-9;
    double bw = d->bw * p->attn_decode_eff * d->memory_scale;
    double group = nkv > 0 ? fmax(1, nh / nkv) : 1; /* query heads per KV head */
    if (n_pf_tokens > 0) {
        /* A batch with a prefill: every sequence, decodes included, runs through the tiled
         * kernel, one CTA per query head and 64 query rows, no split over the KV. Requests of
         * the step taken as equal: chunk c after h tokens of history each. */
        np = np > 0 ? np : 1;
        double c = n_pf_tokens / np, h = kv_prefill / np;
        double peak = d->peak_flops * p->attn_prefill_eff * d->compute_scale;
        double slot = sms > 0 ? peak / sms : peak; /* FLOP/s of one CTA slot */
        double per_key = 4 * ATTN_TILE_ROWS * hd;  /* QK^T and PV of a tile, per key */
        /* Keys a prefill tile sees under the causal mask, averaged over the chunk's tiles. */
        double n_p = np * nh * ceil(c / ATTN_TILE_ROWS);
        double t_p = per_key * (h + (c + fmin(c, ATTN_TILE_ROWS)) / 2) / slot + cta;
        double n_d = nd * nh, kd = nd > 0 ? kv_sum / nd : 0;
        double t_d = per_key * (kd + 1) / slot + cta;
        double t_dmax = nd > 0 ? per_key * (kv_max + 1) / slot + cta : 0;
        double n = n_p + n_d, mean = (n_p * t_p + n_d * t_d) / n;
        /* A decode's one-row tile reads its K and V for its own query head; the heads of a KV
         * group share the read in L2 while they run in the same wave (the grid walks the heads
         * slowest: a wave holds sms / (CTAs per head) heads, attn_mixed_k of them per group
         * member to share) or while one KV head's K and V of the whole batch fit in the L2. */
        double share = group;
        if (sms > 0) {
            share = fmin(group, fmax(1, sms / (n / nh) / p->attn_mixed_k));
            double w = 2 * hd * b * kv_sum; /* one KV head, every decode of the batch */
            if (d->l2_bytes > 0 && w > 0)
                share = fmax(share, 1 + (group - 1) * fmin(1, p->attn_l2_frac * d->l2_bytes / w));
        }
        double t_bw = 2 * nh * hd * b * kv_sum / share / bw;
        if (sms <= 0)
            return fmax(n * mean, t_bw) * 1e9; /* no CTA slots known: the whole device */
        return fmax(fmax(ceil(n / sms) * mean, fmax(t_p, t_dmax)), t_bw) * 1e9;
    }
    if (nd <= 0)
        return 0;
    /* Decode only: the query heads of a KV group share one CTA and the KV is split over CTAs to
     * fill the device, so K and V stream once at the bandwidth; one sequence alone draws at most
     * attn_cta_bw fair shares (bw / SMs) of it. */
    double bytes = 2 * nkv * hd * b * kv_sum + 2 * nd * nh * hd * b;
    double t = bytes / bw;
    if (sms > 0) {
        t = fmax(t, 2 * nkv * hd * b * kv_max / (p->attn_cta_bw * bw / sms));
        t += ceil(nd * nkv / sms) * cta;
    } else {
        t += nd * nkv * cta;
    }
    return t * 1e9;
}

/* ---- elementwise ------------------------------------------------------------------------- */

double sv_compute__an_ew_ns(const struct sv_compute__an_dev *d, double bytes)
{
    if (!(bytes > 0))
        return 0;
    /* The activations an elementwise kernel reads were written by the kernel before it: while
     * they fit in the L2 they come from there, ew_l2_gain times faster. */
    double gain = d->l2_bytes > 0 && bytes <= d->l2_bytes ? d->p->ew_l2_gain : 1;
    return bytes / (d->bw * d->p->ew_memory_eff * d->memory_scale * gain) * 1e9;
}

/* ---- operators --------------------------------------------------------------------------- */

int sv_compute__an_kernels(sv_compute_op_kind op, const struct sv_compute_batch_shape *s)
{
    switch (op) {
    case SV_COMPUTE_OP_QK_NORM:
        return 2; /* q_norm and k_norm, one RMSNorm each */
    case SV_COMPUTE_OP_ATTENTION:
        /* reshape_and_cache_flash (the KV write) and the attention kernel, and for a
         * decode-only batch split over the KV the combine kernel */
        return s && s->n_prefill_tokens == 0 ? 3 : 2;
    case SV_COMPUTE_OP_MOE:
        return 7; /* router GEMM, topk_softmax, moe_align_block_size, fused_moe w13,
                   * silu_and_mul, fused_moe w2, moe_sum */
    case SV_COMPUTE_OP_SAMPLER:
        return 4; /* logits to fp32, temperature, softmax, sample (argmax of probs / q) */
    default:
        return 1; /* each other layer is one kernel: residual add fused into the RMSNorm
                   * (fused_add_rms_norm), QKV and gate/up one GEMM each, SiLU x up fused
                   * (silu_and_mul), rotary in place on q and k */
    }
}

double sv_compute__an_launch_ns(const struct sv_compute__an_dev *d, sv_compute_op_kind op,
                                int graph)
{
    const struct sv_compute_analytic_params *p = d->p;
    double ratio = 1; /* GEMMs (and the MoE layer's kernels) */
    switch (op) {
    case SV_COMPUTE_OP_ATTENTION:
        ratio = p->attn_launch_ratio;
        break;
    case SV_COMPUTE_OP_EMBEDDING:
    case SV_COMPUTE_OP_LAYERNORM:
    case SV_COMPUTE_OP_FINAL_LAYERNORM:
    case SV_COMPUTE_OP_QK_NORM:
    case SV_COMPUTE_OP_ROTARY_EMB:
    case SV_COMPUTE_OP_ACT_FN:
    case SV_COMPUTE_OP_SAMPLER:
        ratio = p->ew_launch_ratio;
        break;
    default:
        break;
    }
    double launch = d->launch_ns * ratio;
    /* Inside a graph a kernel launches for less; attention stays eager in a piecewise graph. */
    if (graph == 2 || (graph == 1 && op != SV_COMPUTE_OP_ATTENTION))
        launch = fmax(0, launch - GRAPH_LAUNCH_SAVING_NS);
    return launch;
}

double sv_compute__an_op_ns(const struct sv_compute__an_dev *d,
                            const struct sv_compute_model_cfg *m, int tp, sv_compute_op_kind op,
                            const struct sv_compute_batch_shape *s, int graph)
{
    double b = (double)m->dtype_bytes, H = (double)m->hidden_size, hd = (double)m->head_dim;
    double nh = (double)m->num_heads / tp, nkv = (double)sv_compute__kv_heads_per_rank(m, tp);
    double I = (double)m->intermediate_size / tp, V = (double)m->vocab_size / tp;
    double T = (double)(s->tokens > 0 ? s->tokens : 0), S = (double)s->n_seqs;
    double t = 0, kvb = (double)sv_compute_model_kv_elem_bytes(m);
    switch (op) {
    case SV_COMPUTE_OP_EMBEDDING:
        t = sv_compute__an_ew_ns(d, 2 * T * H * b); /* gather the rows, write them */
        break;
    case SV_COMPUTE_OP_LAYERNORM:
    case SV_COMPUTE_OP_FINAL_LAYERNORM:
        t = sv_compute__an_ew_ns(d, 4 * T * H * b); /* x, residual in; both out */
        break;
    case SV_COMPUTE_OP_QKV_PROJ:
        t = sv_compute__an_wgemm_ns(d, 1, T, (nh + 2 * nkv) * hd, H, b);
        break;
    case SV_COMPUTE_OP_QK_NORM:
    case SV_COMPUTE_OP_ROTARY_EMB:
        t = sv_compute__an_ew_ns(d, 2 * T * (nh + nkv) * hd * b); /* q and k in place */
        break;
    case SV_COMPUTE_OP_ATTENTION:
        if (s->n_prefill_tokens == 0 && s->n_decode == 0)
            return 0;
        t = sv_compute__an_attn_ns(d, nh, nkv, hd, kvb, (double)s->n_prefill_tokens,
                                   (double)s->prefill_kv, (double)s->n_prefill_seqs,
                                   (double)s->n_decode, (double)s->decode_kv_sum,
                                   (double)s->decode_kv_max);
        break;
    case SV_COMPUTE_OP_O_PROJ:
        t = sv_compute__an_wgemm_ns(d, 1, T, H, nh * hd, b);
        break;
    case SV_COMPUTE_OP_GATE_UP_PROJ:
        t = sv_compute__an_wgemm_ns(d, 1, T, 2 * I, H, b);
        break;
    case SV_COMPUTE_OP_ACT_FN:
        t = sv_compute__an_ew_ns(d, 3 * T * I * b); /* gate and up in, one out */
        break;
    case SV_COMPUTE_OP_DOWN_PROJ:
        t = sv_compute__an_wgemm_ns(d, 1, T, H, I, b);
        break;
    case SV_COMPUTE_OP_MOE: {
        double Im = (double)m->moe_intermediate_size / tp, E = (double)m->num_experts;
        double k = (double)m->experts_per_tok;
        double Tl = s->moe_local_tokens > 0 ? (double)s->moe_local_tokens : T;
        double A = (double)s->moe_activated_experts;
        if (A <= 0)
            A = fmin(E, Tl * k);
        if (Tl <= 0 || A <= 0)
            break;
        double per = Tl * k / A; /* tokens per activated expert, taken as equal */
        t = sv_compute__an_gemm_ns(d, 1, Tl, E, H, b);             /* router */
        t += sv_compute__an_ew_ns(d, Tl * E * 4 * 2);              /* top-k softmax */
        t += sv_compute__an_wgemm_ns(d, A, per, 2 * Im, H, b);     /* w13 */
        t += sv_compute__an_ew_ns(d, 3 * Tl * k * Im * b);         /* silu_and_mul */
        t += sv_compute__an_wgemm_ns(d, A, per, H, Im, b);         /* w2 */
        t += sv_compute__an_ew_ns(d, Tl * k * H * b + Tl * H * b); /* weighted sum */
        break;
    }
    case SV_COMPUTE_OP_LM_HEAD:
        t = sv_compute__an_gemm_ns(d, 1, S, V, H, b); /* logits of the sampled positions */
        break;
    case SV_COMPUTE_OP_SAMPLER:
        t = sv_compute__an_ew_ns(d, d->p->sampler_passes * S * V * tp * 4); /* fp32 logits */
        break;
    case SV_COMPUTE_OP_COUNT:
        break;
    }
    return t + sv_compute__an_kernels(op, s) * sv_compute__an_launch_ns(d, op, graph);
}
