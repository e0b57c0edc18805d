/* What an instance accepts (docs/serving.md "Batch limits", "Rejected requests"): its batch limits
 * and context length as the run resolves them, the configurations vLLM refuses to start with, and
 * the requests it answers with an error instead of serving them.
 *
 * vLLM checks a request against the model's context length (max_model_len) in its API server,
 * before the engine sees it, and answers HTTP 400; the engine never meets such a request. A
 * request whose whole sequence is larger than an instance's KV cache cannot happen in vLLM (it
 * refuses to start unless one max_model_len sequence fits); servesim's instances can be smaller
 * than that, so such a request is answered the same way: rejected at arrival, the run goes on. */
#include "planner/planner_internal.h"

#include <string.h>

int64_t sv_planner__pick(int64_t run, int64_t inst, int64_t builtin)
{
    if (run > 0)
        return run;
    return inst >= 0 ? inst : builtin;
}

gboolean sv_planner__pick_bool(int run, int inst)
{
    if (run >= 0)
        return run != 0;
    if (inst >= 0)
        return inst != 0;
    return TRUE; /* vLLM's default for all three */
}

/* Is the run's batch scheduler vLLM's (the only one with chunked prefill to turn off)? */
static gboolean vllm_scheduler(const struct sv_planner_run_cfg *cfg)
{
    const char *name =
        cfg->scheduler_name ? cfg->scheduler_name : sv_msg_sched_name(cfg->scheduler);
    return g_ascii_strcasecmp(name, "vllm") == 0;
}

gboolean sv_planner__instance_limits(const struct sv_planner_run_cfg *cfg,
                                     const struct sv_planner_instance_cfg *ic,
                                     const struct sv_compute_model_cfg *m,
                                     struct sv_planner__limits *out, GError **error)
{
    *out = (struct sv_planner__limits){.engine = SV_MSG_ENGINE_VLLM_0_19};
    /* Engine profile (docs/serving.md): --engine, else the config's "engine", else vllm-0.19.
     * Batch limits not given: `vllm serve`'s for the device where the config describes a vLLM
     * deployment, else LLMServingSim's CLI defaults. */
    const char *en = cfg->engine               ? cfg->engine
                     : cfg->cluster->engine[0] ? cfg->cluster->engine
                                               : NULL;
    if (en && !sv_msg_engine_parse(en, &out->engine, error))
        return FALSE;
    /* Context length: --max-model-len, else the instance's max_model_len, else the model's
     * max_position_embeddings (vLLM's derived max_model_len). vLLM refuses a larger one than the
     * model's unless VLLM_ALLOW_LONG_MAX_MODEL_LEN is set (vllm/config/model.py,
     * _get_and_verify_max_len). */
    int64_t derived = m->max_position_embeddings;
    out->max_model_len = sv_planner__pick(cfg->max_model_len,
                                          ic->max_model_len > 0 ? ic->max_model_len : -1, derived);
    if (derived > 0 && out->max_model_len > derived) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                    "instance %d (%s on %s): max_model_len: %" G_GINT64_FORMAT
                    " is greater than the model's max_position_embeddings (%" G_GINT64_FORMAT
                    "); vLLM refuses it (\"User-specified max_model_len (%" G_GINT64_FORMAT
                    ") is greater than the derived max_model_len\")",
                    ic->index, ic->model_name, ic->hardware, out->max_model_len, derived,
                    out->max_model_len);
        return FALSE;
    }
    out->chunked_prefill =
        sv_planner__pick_bool(cfg->enable_chunked_prefill, ic->enable_chunked_prefill);
    int64_t def_seqs = SV_MSG_DEFAULT_MAX_NUM_SEQS,
            def_tokens = SV_MSG_DEFAULT_MAX_NUM_BATCHED_TOKENS;
    if (cfg->cluster->vllm_batch_defaults)
        sv_msg_engine_batch_defaults(out->engine, ic->hardware, ic->npu_mem_gib, &def_seqs,
                                     &def_tokens);
    /* Without chunked prefill a whole prompt must fit one step: vLLM's EngineArgs then defaults
     * the token budget to max_model_len (vllm/engine/arg_utils.py, "if not
     * self.enable_chunked_prefill: self.max_num_batched_tokens = model_config.max_model_len"). */
    if (!out->chunked_prefill && out->max_model_len > 0 && vllm_scheduler(cfg))
        def_tokens = out->max_model_len;
    out->max_num_batched_tokens =
        sv_planner__pick(cfg->max_num_batched_tokens, ic->max_num_batched_tokens, def_tokens);
    if (cfg->cluster->vllm_batch_defaults && out->max_num_batched_tokens > 0)
        def_seqs = MIN(def_seqs, out->max_num_batched_tokens); /* vLLM caps the default */
    out->max_num_seqs = sv_planner__pick(cfg->max_num_seqs, ic->max_num_seqs, def_seqs);
    /* vLLM's SchedulerConfig.verify_max_model_len (vllm/config/scheduler.py), word for word. A
     * budget of 0 is LLMServingSim's "unlimited". */
    int64_t budget = out->max_num_batched_tokens;
    if (!out->chunked_prefill && vllm_scheduler(cfg) && budget > 0 && out->max_model_len > 0 &&
        budget < out->max_model_len) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                    "instance %d (%s on %s): chunked prefill is off and vLLM refuses the "
                    "configuration: \"max_num_batched_tokens (%" G_GINT64_FORMAT
                    ") is smaller than max_model_len (%" G_GINT64_FORMAT
                    "). This effectively limits the maximum sequence length to "
                    "max_num_batched_tokens and makes vLLM reject longer sequences. Please "
                    "increase max_num_batched_tokens or decrease max_model_len.\"",
                    ic->index, ic->model_name, ic->hardware, budget, out->max_model_len);
        return FALSE;
    }
    return TRUE;
}

gboolean sv_planner__check_limits(const struct sv_planner_run_cfg *cfg, GError **error)
{
    const struct sv_planner_cluster_cfg *cl = cfg->cluster;
    for (int32_t i = 0; i < cl->n_instances; i++) {
        struct sv_compute_model_cfg m;
        struct sv_planner__limits lim;
        /* An unknown model is reported by the run, with its own message. */
        if (sv_planner__instance_model(cfg, &cl->instances[i], &m, NULL) &&
            !sv_planner__instance_limits(cfg, &cl->instances[i], &m, &lim, error))
            return FALSE;
    }
    return TRUE;
}

/* ---- requests ------------------------------------------------------------------------------- */

/* Can instance i alone take a sequence of `total` tokens (context length, then KV cache)? */
static sv_wl_reject fits_one(const struct sv_planner__admit *a, int32_t i, uint64_t total)
{
    if (a->max_model_len[i] > 0 && total > (uint64_t)a->max_model_len[i])
        return SV_WL_REJECT_CONTEXT_LENGTH;
    if (total > a->kv_tokens[i])
        return SV_WL_REJECT_KV_CAPACITY;
    return SV_WL_REJECT_NONE;
}

static uint64_t total_tokens(const sv_wl_req *q)
{
    /* Both >= 1 here (sv_msg_submit reports others); uint64 holds the sum of two int64. */
    return (uint64_t)q->input_tokens + (uint64_t)q->output_tokens;
}

sv_wl_reject sv_planner__admissible(const struct sv_planner__admit *a, int32_t i,
                                    const sv_wl_req *q)
{
    uint64_t total = total_tokens(q);
    sv_wl_reject r = fits_one(a, i, total);
    if (r != SV_WL_REJECT_NONE || a->inst[i].role != SV_MSG_ROLE_PREFILL)
        return r;
    /* A prefill instance hands the request to a decode instance of its model, which must hold
     * the whole sequence too (planner/pd.c picks only such instances). */
    r = SV_WL_REJECT_CONTEXT_LENGTH;
    for (int32_t d = 0; d < a->n; d++) {
        if (a->inst[d].role != SV_MSG_ROLE_DECODE ||
            strcmp(a->inst[d].model_name, a->inst[i].model_name) != 0)
            continue;
        sv_wl_reject rd = fits_one(a, d, total);
        if (rd == SV_WL_REJECT_NONE)
            return rd;
        if (rd == SV_WL_REJECT_KV_CAPACITY)
            r = rd;
    }
    return r;
}

void sv_planner__reject_message(const struct sv_planner__admit *a, const int32_t *inst, int32_t n,
                                const sv_wl_req *q, sv_wl_reject why, char *buf, size_t size)
{
    uint64_t total = total_tokens(q);
    int64_t in = q->input_tokens, out = q->output_tokens;
    if (why == SV_WL_REJECT_CONTEXT_LENGTH) {
        int64_t c = 0; /* the largest context length among the instances (all equal, usually) */
        for (int32_t k = 0; k < n; k++)
            c = MAX(c, a->max_model_len[inst[k]]);
        /* vLLM's API server's two answers (vllm/entrypoints/openai/serving_engine.py,
         * _validate_input, v0.11). */
        if (in >= c)
            g_snprintf(buf, size,
                       "request %" G_GUINT64_FORMAT
                       " rejected (context_length): \"This model's maximum context length is "
                       "%" G_GINT64_FORMAT " tokens. However, your request has %" G_GINT64_FORMAT
                       " input tokens. Please reduce the length of the input messages.\"",
                       q->request_id, c, in);
        else
            g_snprintf(buf, size,
                       "request %" G_GUINT64_FORMAT
                       " rejected (context_length): \"'max_tokens' or 'max_completion_tokens' is "
                       "too large: %" G_GINT64_FORMAT ". This model's maximum context length is "
                       "%" G_GINT64_FORMAT " tokens and your request has %" G_GINT64_FORMAT
                       " input tokens (%" G_GINT64_FORMAT " > %" G_GINT64_FORMAT
                       " - %" G_GINT64_FORMAT ").\"",
                       q->request_id, out, c, in, out, c, in);
        return;
    }
    /* The largest KV cache, in tokens, a sequence could use among the instances: a prefill
     * instance's counts up to its best decode instance's. */
    uint64_t most = 0;
    gboolean pd = FALSE;
    for (int32_t k = 0; k < n; k++) {
        int32_t i = inst[k];
        uint64_t cap = a->kv_tokens[i];
        if (a->inst[i].role == SV_MSG_ROLE_PREFILL) {
            uint64_t dec = 0;
            for (int32_t d = 0; d < a->n; d++)
                if (a->inst[d].role == SV_MSG_ROLE_DECODE &&
                    strcmp(a->inst[d].model_name, a->inst[i].model_name) == 0)
                    dec = MAX(dec, a->kv_tokens[d]);
            cap = MIN(cap, dec);
            pd = TRUE;
        }
        most = MAX(most, cap);
    }
    g_snprintf(buf, size,
               "request %" G_GUINT64_FORMAT " rejected (kv_capacity): its %" G_GUINT64_FORMAT
               " tokens (%" G_GINT64_FORMAT " input + %" G_GINT64_FORMAT
               " output) can never fit in the KV cache of %s (at most %" G_GUINT64_FORMAT
               " tokens)",
               q->request_id, total, in, out,
               pd ? "a prefill instance and a decode instance that serve it"
                  : "an instance that serves it",
               most);
}
