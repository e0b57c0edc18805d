/* Speculative decoding (docs/speculative.md): configuration and its validation, the acceptance
 * sampler (Leviathan et al. 2023, "Fast Inference from Transformers via Speculative Decoding",
 * ICML 2023, Sec. 3.1 / Eq. 1: tokens per verify step = accepted drafts + the target's bonus
 * token, expected (1 - a^(k+1)) / (1 - a)), and the time of one speculative decode step on the
 * instance's devices: k draft passes + one verify pass of the target over k + 1 tokens per
 * request. */
#include "compute/compute.h"

#include <math.h>
#include <string.h>

static const char *const method_names[] = {"draft", "eagle", "mtp"};

const char *sv_compute_spec_method_name(sv_compute_spec_method m)
{
    return m >= 0 && m < (int)G_N_ELEMENTS(method_names) ? method_names[m] : "?";
}

gboolean sv_compute_spec_validate(const char *path, const char *method, const char *draft_model,
                                  const char *model_dir, int64_t k, double acceptance,
                                  struct sv_compute_spec_cfg *out, GError **error)
{
    memset(out, 0, sizeof *out);
    int mi = -1;
    for (int i = 0; i < (int)G_N_ELEMENTS(method_names); i++)
        if (method && strcmp(method, method_names[i]) == 0)
            mi = i;
    if (method && strcmp(method, "draft_model") == 0)
        mi = SV_COMPUTE_SPEC_DRAFT; /* vLLM >= 0.10's name (vllm/config/speculative.py) */
    if (mi < 0) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                    "%s.method: '%s' is not a speculative method (draft, draft_model, eagle, mtp)",
                    path, method ? method : "(missing)");
        return FALSE;
    }
    out->method = (sv_compute_spec_method)mi;
    if (k < 1 || k > SV_COMPUTE_SPEC_MAX_K) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                    "%s.num_speculative_tokens: %" G_GINT64_FORMAT " is out of range (1 .. %d)",
                    path, k, SV_COMPUTE_SPEC_MAX_K);
        return FALSE;
    }
    out->k = (int32_t)k;
    if (!(acceptance >= 0.0 && acceptance <= 1.0)) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                    "%s.acceptance_rate: %g is outside [0, 1]", path, acceptance);
        return FALSE;
    }
    out->acceptance = acceptance;
    if (out->method == SV_COMPUTE_SPEC_DRAFT) {
        if (!draft_model || !*draft_model) {
            g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                        "%s.draft_model: required with method \"draft\"", path);
            return FALSE;
        }
        GError *e = NULL;
        if (!sv_compute_model_lookup(draft_model, model_dir, &out->draft, &e)) {
            g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID, "%s.draft_model: %s",
                        path, e ? e->message : "unknown model");
            g_clear_error(&e);
            return FALSE;
        }
        out->has_draft = TRUE;
    } else if (draft_model && *draft_model) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                    "%s.draft_model: only with method \"draft\" (%s heads are part of the "
                    "target)",
                    path, method_names[mi]);
        return FALSE;
    }
    return TRUE;
}

gboolean sv_compute_spec_parse_flag(const char *text, const char *model_dir,
                                    struct sv_compute_spec_cfg *out, GError **error)
{
    /* METHOD:K:A (eagle, mtp) or draft:MODEL:K:A. The model name may hold no ':'. */
    g_auto(GStrv) f = g_strsplit(text ? text : "", ":", -1);
    guint n = g_strv_length(f);
    gboolean draft = n > 0 && (strcmp(f[0], "draft") == 0 || strcmp(f[0], "draft_model") == 0);
    if (n != (draft ? 4u : 3u)) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                    "--speculative: '%s' is not METHOD:K:A or draft:MODEL:K:A", text);
        return FALSE;
    }
    const char *ks = f[draft ? 2 : 1], *as = f[draft ? 3 : 2];
    char *end = NULL;
    gint64 k = g_ascii_strtoll(ks, &end, 10);
    if (!*ks || *end) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                    "--speculative.num_speculative_tokens: '%s' is not an integer", ks);
        return FALSE;
    }
    double a = g_ascii_strtod(as, &end);
    if (!*as || *end) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                    "--speculative.acceptance_rate: '%s' is not a number", as);
        return FALSE;
    }
    return sv_compute_spec_validate("--speculative", f[0], draft ? f[1] : NULL, model_dir, k, a,
                                    out, error);
}

int32_t sv_compute_spec_sample(sv_rng *rng, int32_t k, double acceptance)
{
    /* Each draft token is accepted with probability a independently of the others (Leviathan et
     * al.'s i.i.d. simplification); the first rejection ends the run. The target's own token at
     * the first rejected position (or after the k-th draft) is always emitted. A draw is taken
     * per draft position examined, so a = 1 and a = 0 consume the stream alike. */
    int32_t accepted = 0;
    while (accepted < k && sv_rng_uniform(rng) < acceptance)
        accepted++;
    return accepted + 1;
}

double sv_compute_spec_expected_tokens(int32_t k, double a)
{
    if (a >= 1.0)
        return (double)k + 1.0;
    return (1.0 - pow(a, k + 1)) / (1.0 - a);
}

/* One forward pass of `lat`'s model over shape `s`, on one rank: prologue, every layer, head
 * (no TP collectives: the verify and draft passes of a TP instance add their all-reduces the
 * way a plain step does, which this standalone timing leaves out; docs/speculative.md). */
static sv_time pass_ns(sv_compute_latency *lat, const struct sv_compute_batch_shape *s,
                       int64_t layers, gboolean ends)
{
    const struct sv_compute_model_cfg *m = sv_compute_latency_model(lat);
    const struct sv_compute_layer_seq *q = sv_compute_layer_seq(m->arch);
    sv_time layer = 0, t = 0;
    for (int i = 0; i < q->n_pre_attn; i++)
        layer += sv_compute_op_time(lat, q->pre_attn[i], s);
    for (int i = 0; i < q->n_post_attn; i++)
        layer += sv_compute_op_time(lat, q->post_attn[i], s);
    for (int i = 0; i < q->n_mlp; i++)
        layer += sv_compute_op_time(lat, q->mlp[i], s);
    t = layer * layers;
    for (int i = 0; i < q->n_head; i++)
        t += sv_compute_op_time(lat, q->head[i], s);
    if (ends)
        for (int i = 0; i < q->n_prologue; i++)
            t += sv_compute_op_time(lat, q->prologue[i], s);
    return t;
}

sv_time sv_compute_spec_decode_pass_ns(sv_compute_latency *lat, int64_t n_seqs, int64_t kv)
{
    int64_t *kvs = g_new(int64_t, n_seqs);
    for (int64_t i = 0; i < n_seqs; i++)
        kvs[i] = kv;
    struct sv_compute_batch_shape s;
    sv_compute_batch_shape_init(&s, NULL, NULL, 0, kvs, n_seqs);
    g_free(kvs);
    return pass_ns(lat, &s, sv_compute_latency_model(lat)->num_layers, TRUE);
}

sv_time sv_compute_spec_verify_pass_ns(sv_compute_latency *lat, int64_t n_seqs, int64_t kv,
                                       int32_t k)
{
    int64_t *chunk = g_new(int64_t, n_seqs), *hist = g_new(int64_t, n_seqs);
    for (int64_t i = 0; i < n_seqs; i++) {
        chunk[i] = k + 1;
        hist[i] = kv;
    }
    struct sv_compute_batch_shape s;
    sv_compute_batch_shape_init(&s, chunk, hist, n_seqs, NULL, 0);
    g_free(chunk);
    g_free(hist);
    return pass_ns(lat, &s, sv_compute_latency_model(lat)->num_layers, TRUE);
}

sv_time sv_compute_spec_draft_ns(const struct sv_compute_spec_cfg *c, sv_compute_latency *target,
                                 sv_compute_latency *draft, int64_t n_seqs, int64_t kv)
{
    int64_t *kvs = g_new(int64_t, n_seqs);
    int32_t *ns = g_new(int32_t, n_seqs);
    for (int64_t j = 0; j < n_seqs; j++) {
        kvs[j] = kv;
        ns[j] = c->k;
    }
    sv_time t = sv_compute_spec_draft_batch_ns(c, target, draft, kvs, ns, n_seqs);
    g_free(kvs);
    g_free(ns);
    return t;
}

/* TP all-reduces of one pass over shape `s` of `layers` decoder layers of `lat`'s model: the
 * operators the target's layers all-reduce after (sv_compute_iter_time's allreduce_bytes: o_proj,
 * down_proj or the MoE block, tokens x hidden x dtype bytes each; 0 at TP 1). */
static void pass_allreduces(sv_compute_latency *lat, const struct sv_compute_batch_shape *s,
                            int64_t layers, struct sv_compute_spec_pass *out)
{
    struct sv_compute_iter_time it;
    sv_compute_iter_time(lat, s, 0, 1, &it);
    int32_t per_layer = 0;
    for (int i = 0; i < it.n_layer; i++) {
        if (it.layer[i].allreduce_bytes > 0) {
            per_layer++;
            out->allreduce_bytes = it.layer[i].allreduce_bytes; /* the same for each */
        }
    }
    out->n_allreduce = per_layer * (int32_t)layers;
}

int32_t sv_compute_spec_draft_passes(const struct sv_compute_spec_cfg *c,
                                     sv_compute_latency *target, sv_compute_latency *draft,
                                     const int64_t *kv, const int32_t *n_spec, int64_t n,
                                     struct sv_compute_spec_pass *out)
{
    int32_t passes = 0;
    for (int64_t j = 0; j < n; j++)
        passes = MAX(passes, MIN(n_spec[j], SV_COMPUTE_SPEC_MAX_K));
    int64_t *kvs = g_new(int64_t, MAX(n, 1));
    for (int32_t i = 0; i < passes; i++) {
        int64_t m = 0;
        for (int64_t j = 0; j < n; j++)
            if (n_spec[j] > i)
                kvs[m++] = kv[j] + i;
        struct sv_compute_batch_shape s;
        sv_compute_batch_shape_init(&s, NULL, NULL, 0, kvs, m);
        struct sv_compute_spec_pass *p = &out[i];
        memset(p, 0, sizeof *p);
        if (c->method == SV_COMPUTE_SPEC_DRAFT) {
            int64_t layers = sv_compute_latency_model(draft)->num_layers;
            p->ns = pass_ns(draft, &s, layers, TRUE);
            pass_allreduces(draft, &s, layers, p);
        } else {
            /* EAGLE / MTP head: one decoder layer of the target plus its lm_head and sampler per
             * draft token, decode-shaped (one token per request against its KV). Its fc
             * projection is replicated on every rank (unsharded in vLLM's EAGLE and DeepSeek MTP
             * heads), so it adds no collective. */
            p->ns = pass_ns(target, &s, 1, FALSE);
            pass_allreduces(target, &s, 1, p);
        }
    }
    g_free(kvs);
    return passes;
}

sv_time sv_compute_spec_draft_batch_ns(const struct sv_compute_spec_cfg *c,
                                       sv_compute_latency *target, sv_compute_latency *draft,
                                       const int64_t *kv, const int32_t *n_spec, int64_t n)
{
    struct sv_compute_spec_pass p[SV_COMPUTE_SPEC_MAX_K];
    int32_t passes = sv_compute_spec_draft_passes(c, target, draft, kv, n_spec, n, p);
    sv_time t = 0;
    for (int32_t i = 0; i < passes; i++)
        t += p[i].ns;
    return t;
}

gboolean sv_compute_spec_decode_request(const struct sv_compute_spec_cfg *c, sv_rng *rng,
                                        int64_t output_tokens, sv_time draft_ns, sv_time verify_ns,
                                        struct sv_compute_spec_result *out)
{
    memset(out, 0, sizeof *out);
    if (output_tokens < 1)
        return FALSE;
    sv_time t = 0;
    int64_t produced = 0;
    out->token_ns = g_new(sv_time, output_tokens);
    while (produced < output_tokens) {
        int32_t n = sv_compute_spec_sample(rng, c->k, c->acceptance);
        t += draft_ns + verify_ns;
        out->steps++;
        for (int32_t i = 0; i < n && produced < output_tokens; i++)
            out->token_ns[produced++] = t; /* emitted together at the step's end */
    }
    out->n_tokens = produced;
    out->total_ns = t;
    return TRUE;
}

void sv_compute_spec_result_clear(struct sv_compute_spec_result *r)
{
    g_clear_pointer(&r->token_ns, g_free);
}

uint64_t sv_compute_spec_draft_weight_bytes(const struct sv_compute_spec_cfg *c,
                                            const struct sv_compute_model_cfg *target, int tp)
{
    if (c->method == SV_COMPUTE_SPEC_DRAFT)
        return sv_compute_model_weight_bytes(&c->draft, tp);
    /* EAGLE (Li et al., "EAGLE: Speculative Sampling Requires Rethinking Feature Uncertainty",
     * ICML 2024, Sec. 4.1): the draft head is one decoder layer after an FC layer that reduces
     * the concatenated feature and token embedding, 2H -> H; embedding and LM head are the
     * target's. DeepSeek-V3's MTP module (DeepSeek-V3 Technical Report, Sec. 2.2) likewise: one
     * Transformer block and a projection matrix of H x 2H, embedding and output head shared.
     * The layer is sharded like the target's; the projection is replicated on every rank
     * (vLLM's llama_eagle.py `fc` and deepseek_mtp.py `eh_proj` are plain, unsharded nn.Linear).
     * Its norms (2 to 3 x H) are left out. */
    uint64_t h = (uint64_t)target->hidden_size;
    return sv_compute_model_layer_weight_bytes(target, tp) +
           2 * h * h * (uint64_t)target->dtype_bytes;
}

gboolean sv_compute_spec_set_beta(const char *path, double mean, double concentration,
                                  struct sv_compute_spec_cfg *c, GError **error)
{
    /* Beta(m c, (1 - m) c) needs both shapes positive: a mean of exactly 0 or 1 is a fixed rate
     * (acceptance_rate), not a distribution. */
    if (!(mean > 0.0 && mean < 1.0)) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                    "%s.mean: %g is outside (0, 1) (a fixed rate is acceptance_rate)", path, mean);
        return FALSE;
    }
    if (!(concentration > 0.0 && concentration <= 1e6)) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                    "%s.concentration: %g is outside (0, 1e6]", path, concentration);
        return FALSE;
    }
    c->dist = SV_COMPUTE_SPEC_ACCEPT_BETA;
    c->acceptance = mean;
    c->concentration = concentration;
    return TRUE;
}

/* Gamma(shape, 1) by Marsaglia and Tsang, "A Simple Method for Generating Gamma Variables", ACM
 * TOMS 26(3), 2000: shape >= 1 directly, shape < 1 as Gamma(shape + 1) x U^(1 / shape). */
static double gamma_draw(sv_rng *rng, double shape)
{
    if (shape < 1.0) {
        double u = sv_rng_uniform(rng);
        return gamma_draw(rng, shape + 1.0) * pow(u > 0 ? u : 1e-300, 1.0 / shape);
    }
    double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x = sv_rng_normal(rng, 0.0, 1.0), v = 1.0 + c * x;
        if (v <= 0.0)
            continue;
        v = v * v * v;
        double u = sv_rng_uniform(rng);
        if (u < 1.0 - 0.0331 * x * x * x * x ||
            (u > 0 && log(u) < 0.5 * x * x + d * (1.0 - v + log(v))))
            return d * v;
    }
}

double sv_compute_spec_beta_draw(sv_rng *rng, double a, double b)
{
    double x = gamma_draw(rng, a), y = gamma_draw(rng, b);
    return x + y > 0 ? x / (x + y) : 0.5;
}

double sv_compute_spec_request_rate(const struct sv_compute_spec_cfg *c, sv_rng *rng)
{
    if (c->dist == SV_COMPUTE_SPEC_ACCEPT_BETA)
        return sv_compute_spec_beta_draw(rng, c->acceptance * c->concentration,
                                         (1.0 - c->acceptance) * c->concentration);
    return c->acceptance;
}

uint64_t sv_compute_spec_kv_bytes_per_token(const struct sv_compute_spec_cfg *c,
                                            const struct sv_compute_model_cfg *target, int tp)
{
    if (c->method == SV_COMPUTE_SPEC_DRAFT)
        return sv_compute_model_kv_bytes_per_token_layer(&c->draft, tp) *
               (uint64_t)c->draft.num_layers;
    /* EAGLE's head is one decoder layer with its own KV; DeepSeek-V3's MTP module likewise. */
    return sv_compute_model_kv_bytes_per_token_layer(target, tp);
}
