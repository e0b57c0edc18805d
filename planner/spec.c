/* Speculative decoding in `servesim run` (docs/speculative.md).
 *
 * Config: instances[].speculative, vLLM's speculative_config keys (method, draft_model for its
 * "model", num_speculative_tokens) plus the acceptance model: acceptance_rate (one rate for every
 * request) or acceptance {"distribution": "beta", "mean": m, "concentration": c} (a rate per
 * request), validated by compute/specdec.c. The --speculative flag sets the quick form for every
 * instance.
 *
 * Run: per speculative instance, the draft model's latency model (method draft; looked up like
 * the target's: a profile for the draft on the instance's hardware, else the roofline), and the
 * KV pool recomputed with the draft's weights on each rank and its KV per token added to the
 * target's: one block table for both, as vLLM v1 allocates the drafter's attention layers in the
 * same KV cache groups as the target's (its KV cache spec covers every attention layer the
 * worker holds, the drafter's included), so a block of B tokens holds both models' K and V. */
#include "planner/planner_internal.h"

#include <math.h>
#include <string.h>

/* vLLM refuses speculative decoding under pipeline parallelism: MTP drafters do not implement
 * SupportsPP (vllm/config/speculative.py _verify_args -> "Pipeline parallelism is not supported
 * for this model"), and where it starts, the spec-decode token accounting of the non-last PP
 * ranks diverges (RFC vllm-project/vllm#44697; PR #46994 lifted it for MTP on the V2 model
 * runner only, after the 0.19 this model follows). */
#define PP_REFUSED                                                                                 \
    "speculative decoding is not combined with pipeline parallelism (pp_size %" G_GINT64_FORMAT    \
    "): vLLM refuses it (vllm-project/vllm#44697)"

static const char *const spec_keys[] = {"method",          "draft_model", "num_speculative_tokens",
                                        "acceptance_rate", "acceptance",  NULL};
static const char *const accept_keys[] = {"distribution", "mean", "concentration", NULL};

static gboolean check_keys(JsonObject *s, const char *w, const char *const *keys, GError **error)
{
    g_autoptr(GList) members = json_object_get_members(s);
    members = g_list_sort(members, (GCompareFunc)strcmp);
    for (GList *l = members; l; l = l->next) {
        gboolean ok = FALSE;
        for (int i = 0; keys[i]; i++)
            ok = ok || strcmp(keys[i], l->data) == 0;
        if (!ok) {
            g_autofree char *known = g_strjoinv(", ", (char **)keys);
            return sv_planner__path_error(error, w, "unknown key '%s' (%s)", (const char *)l->data,
                                          known);
        }
    }
    return TRUE;
}

static gboolean get_number(JsonObject *s, const char *w, const char *key, double *out,
                           GError **error)
{
    JsonNode *n = json_object_get_member(s, key);
    if (!n || !JSON_NODE_HOLDS_VALUE(n) ||
        (json_node_get_value_type(n) != G_TYPE_DOUBLE &&
         json_node_get_value_type(n) != G_TYPE_INT64)) {
        g_autofree char *p = g_strdup_printf("%s.%s", w, key);
        return sv_planner__path_error(error, p, "expected a number");
    }
    *out = json_node_get_double(n);
    return TRUE;
}

static gboolean compute_error(GError **error, GError *e)
{
    g_set_error_literal(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID, e->message);
    g_clear_error(&e);
    return FALSE;
}

/* The acceptance object: a per-request rate from a Beta distribution. */
static gboolean parse_acceptance(JsonNode *n, const char *w, struct sv_compute_spec_cfg *c,
                                 GError **error)
{
    if (!JSON_NODE_HOLDS_OBJECT(n))
        return sv_planner__path_error(error, w, "expected an object");
    JsonObject *a = json_node_get_object(n);
    if (!check_keys(a, w, accept_keys, error))
        return FALSE;
    JsonNode *d = json_object_get_member(a, "distribution");
    g_autofree char *dp = g_strdup_printf("%s.distribution", w);
    if (!d || !JSON_NODE_HOLDS_VALUE(d) || json_node_get_value_type(d) != G_TYPE_STRING)
        return sv_planner__path_error(error, dp, "expected a string (beta)");
    if (strcmp(json_node_get_string(d), "beta") != 0)
        return sv_planner__path_error(error, dp, "'%s' is not a distribution (beta)",
                                      json_node_get_string(d));
    double mean = NAN, conc = NAN;
    if (!get_number(a, w, "mean", &mean, error) || !get_number(a, w, "concentration", &conc, error))
        return FALSE;
    GError *e = NULL;
    if (!sv_compute_spec_set_beta(w, mean, conc, c, &e))
        return compute_error(error, e);
    return TRUE;
}

gboolean sv_planner__spec_parse(JsonObject *o, const char *where,
                                struct sv_planner_instance_cfg *ic, GError **error)
{
    ic->has_spec = FALSE;
    if (!json_object_has_member(o, "speculative"))
        return TRUE;
    g_autofree char *w = g_strdup_printf("%s.speculative", where);
    JsonNode *n = json_object_get_member(o, "speculative");
    if (!JSON_NODE_HOLDS_OBJECT(n))
        return sv_planner__path_error(error, w, "expected an object");
    JsonObject *s = json_node_get_object(n);
    if (!check_keys(s, w, spec_keys, error))
        return FALSE;
    const char *str_keys[2] = {"method", "draft_model"};
    const char *str_val[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        if (!json_object_has_member(s, str_keys[i]))
            continue;
        JsonNode *v = json_object_get_member(s, str_keys[i]);
        if (!JSON_NODE_HOLDS_VALUE(v) || json_node_get_value_type(v) != G_TYPE_STRING) {
            g_autofree char *p = g_strdup_printf("%s.%s", w, str_keys[i]);
            return sv_planner__path_error(error, p, "expected a string");
        }
        str_val[i] = json_node_get_string(v);
    }
    JsonNode *kn = json_object_get_member(s, "num_speculative_tokens");
    if (!kn || !JSON_NODE_HOLDS_VALUE(kn) || json_node_get_value_type(kn) != G_TYPE_INT64) {
        g_autofree char *p = g_strdup_printf("%s.num_speculative_tokens", w);
        return sv_planner__path_error(error, p, "expected an integer");
    }
    int64_t k = json_node_get_int(kn);
    gboolean has_rate = json_object_has_member(s, "acceptance_rate");
    gboolean has_dist = json_object_has_member(s, "acceptance");
    if (has_rate == has_dist)
        return sv_planner__path_error(
            error, w, "%s (acceptance_rate: one rate; acceptance: a distribution per request)",
            has_rate ? "acceptance_rate and acceptance both given" : "no acceptance_rate");
    double a = 0.5; /* validated below; the distribution's mean replaces it */
    if (has_rate && !get_number(s, w, "acceptance_rate", &a, error))
        return FALSE;
    GError *e = NULL;
    if (!sv_compute_spec_validate(w, str_val[0], str_val[1], NULL, k, a, &ic->spec, &e))
        return compute_error(error, e);
    if (has_dist) {
        g_autofree char *aw = g_strdup_printf("%s.acceptance", w);
        if (!parse_acceptance(json_object_get_member(s, "acceptance"), aw, &ic->spec, error))
            return FALSE;
    }
    /* Pipeline parallelism: refused here, where the path is known (and again at the run, for
     * --speculative and --pp: sv_planner__spec_instance). */
    int64_t pp = 1;
    for (int i = 0; i < 2; i++) {
        const char *key = i == 0 ? "pp_size" : "npu_group";
        JsonNode *pn = json_object_get_member(o, key);
        if (pn && JSON_NODE_HOLDS_VALUE(pn) && json_node_get_value_type(pn) == G_TYPE_INT64)
            pp = MAX(pp, json_node_get_int(pn));
    }
    if (pp > 1)
        return sv_planner__path_error(error, w, PP_REFUSED, pp);
    ic->has_spec = TRUE;
    return TRUE;
}

gboolean sv_planner__spec_flag_check(const struct sv_planner_run_cfg *cfg, GError **error)
{
    struct sv_compute_spec_cfg c;
    GError *e = NULL;
    if (cfg->speculative && !sv_compute_spec_parse_flag(cfg->speculative, cfg->model_dir, &c, &e))
        return compute_error(error, e);
    return TRUE;
}

/* ---- the run's side -------------------------------------------------------------------------- */

struct sv_planner__spec {
    int32_t n;
    struct sv_compute_spec_cfg *cfg; /* per instance: what its msg borrows */
    gboolean *on;
    sv_compute_latency **draft_lat;
};

sv_planner__spec *sv_planner__spec_new(int32_t n_inst)
{
    sv_planner__spec *s = g_new0(sv_planner__spec, 1);
    s->n = n_inst;
    s->cfg = g_new0(struct sv_compute_spec_cfg, (size_t)MAX(n_inst, 1));
    s->on = g_new0(gboolean, (size_t)MAX(n_inst, 1));
    s->draft_lat = g_new0(sv_compute_latency *, (size_t)MAX(n_inst, 1));
    return s;
}

void sv_planner__spec_free(sv_planner__spec *s)
{
    if (!s)
        return;
    for (int32_t i = 0; i < s->n; i++)
        sv_compute_latency_free(s->draft_lat[i]);
    g_free(s->draft_lat);
    g_free(s->on);
    g_free(s->cfg);
    g_free(s);
}

gboolean sv_planner__spec_instance(sv_planner__spec *s, const struct sv_planner_run_cfg *cfg,
                                   int32_t i, const struct sv_compute_model_cfg *m,
                                   uint32_t block_size, uint64_t *blocks, struct sv_msg_cfg *mc,
                                   GError **error)
{
    const struct sv_planner_instance_cfg *ic = &cfg->cluster->instances[i];
    const char *path = "--speculative";
    g_autofree char *ipath = NULL;
    if (cfg->speculative) {
        GError *e = NULL;
        if (!sv_compute_spec_parse_flag(cfg->speculative, cfg->model_dir, &s->cfg[i], &e))
            return compute_error(error, e);
    } else if (ic->has_spec) {
        s->cfg[i] = ic->spec;
        path = ipath = g_strdup_printf("instance %d: speculative", i);
    } else {
        return TRUE;
    }
    if (ic->pp_size > 1 || ic->n_stages > 1) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID, "%s: " PP_REFUSED, path,
                    (int64_t)MAX(ic->pp_size, ic->n_stages));
        return FALSE;
    }
    struct sv_compute_spec_cfg *c = &s->cfg[i];
    s->on[i] = TRUE;
    if (c->method == SV_COMPUTE_SPEC_DRAFT) {
        /* The draft model on the instance's devices, timed like the target. */
        struct sv_planner_instance_cfg dic = *ic;
        g_strlcpy(dic.model_name, c->draft.name, sizeof dic.model_name);
        dic.dtype[0] = '\0';
        dic.kv_cache_dtype[0] = '\0';
        g_autofree char *src = NULL;
        s->draft_lat[i] = sv_planner__make_latency(cfg, &dic, &c->draft, &src, error);
        if (!s->draft_lat[i]) {
            g_prefix_error(error, "%s.draft_model: ", path);
            return FALSE;
        }
    }
    /* The KV pool (sv_planner_instance_kv_blocks without offload or stages, which a speculative
     * instance does not combine with): the draft's weights on each rank come off the budget and
     * each token's KV holds the draft's too. */
    if (ic->pp_size <= 1 && ic->n_stages == 0) {
        uint64_t mem_bytes = (uint64_t)(ic->npu_mem_gib * 1073741824.0);
        uint64_t weights = sv_compute_model_weight_bytes(m, ic->tp_size) +
                           sv_compute_spec_draft_weight_bytes(c, m, ic->tp_size);
        uint64_t kv_tok =
            sv_compute_model_kv_bytes_per_token_layer(m, ic->tp_size) * (uint64_t)m->num_layers +
            sv_compute_spec_kv_bytes_per_token(c, m, ic->tp_size);
        if (!sv_memtier_kv_capacity_blocks(mem_bytes, ic->mem_util, weights, kv_tok, block_size,
                                           blocks, error)) {
            g_prefix_error(error, "%s: target and draft: ", path);
            return FALSE;
        }
    }
    mc->spec = c;
    mc->spec_draft_lat = s->draft_lat[i];
    mc->spec_seed = cfg->seed;
    return TRUE;
}

void sv_planner__spec_cudagraph(sv_planner__spec *s, int32_t i, int64_t max_num_seqs,
                                int64_t max_num_batched_tokens)
{
    if (s->draft_lat[i])
        sv_compute_latency_set_cudagraph(s->draft_lat[i], max_num_seqs, max_num_batched_tokens);
}

void sv_planner__spec_report(const sv_planner__spec *s, sv_msg *const *msgs,
                             const struct sv_planner_run_observer *obs)
{
    if (!s || !obs || !obs->on_spec)
        return;
    for (int32_t i = 0; i < s->n; i++) {
        if (!s->on[i] || !msgs[i])
            continue;
        struct sv_msg_spec_stats st;
        sv_msg_get_spec_stats(msgs[i], &st);
        obs->on_spec(obs->ctx, i, sv_compute_spec_method_name(s->cfg[i].method), &st);
    }
}
