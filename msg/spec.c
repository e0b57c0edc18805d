/* Speculative decoding in the serving group (docs/speculative.md), as vLLM v1 runs it
 * (vllm/v1/core/sched/scheduler.py): a running request that has caught up with its last token
 * is scheduled 1 + k tokens (num_tokens_with_spec - num_computed_tokens; the token budget and the
 * KV slots count all of them); the step's k draft passes (compute/specdec.c: the draft model or
 * an EAGLE / MTP head) run before the target's forward, which times the 1 + k tokens as a chunk
 * with history (the verify pass); at the commit the request draws its accepted drafts from its
 * own stream, emits them and the bonus token together, and rolls back the rejected ones
 * (update_from_output: num_computed_tokens -= num_rejected). vLLM keeps the rejected tokens'
 * blocks with the request (its next step writes them again) rather than returning them to the
 * pool; so does this model.
 *
 * Left out here (sv_msg__spec_check refuses them): pipeline parallelism (vLLM refuses it too:
 * issue vllm-project/vllm#44697, PR #46994 lifted it for MTP in 2026), memory tiers, PIM, local
 * weight loads. Prefill/decode disaggregation runs: a decode instance speculates; a prefill
 * instance never does, as in vLLM, whose proxy sends the prefill max_tokens=1 (the request
 * leaves at its first token, before any step could verify drafts; toy_proxy_server.py in
 * tests/v1/kv_connector/nixl_integration). Data and expert parallelism run: a DP member's draft
 * passes are part of its step, and the group steps in waves (parallel.c), so a wave lasts as
 * long as its slowest member's drafts + verify. Tensor parallelism runs: each draft pass is
 * followed by its TP all-reduces (sv_msg__spec_draft_node). Async scheduling is turned off for a
 * speculating group: vLLM's AsyncScheduler keeps draft tokens as output placeholders, which this
 * model does not. */
#include "msg/msg_internal.h"

#include <math.h>

gboolean sv_msg__spec_check(const sv_msg *m, GError **error)
{
    const struct sv_msg_cfg *c = &m->cfg;
    if (!c->spec)
        return TRUE;
    const char *why = NULL;
    int32_t pp = c->pp_size > 1 ? c->pp_size : 1;
    if (pp > 1)
        why = "pipeline parallelism (nor is it in vLLM: vllm-project/vllm#44697)";
    else if (m->tiers)
        why = "memory tiers";
    else if (m->pim || c->pim.dev || c->local_load_bytes_per_ns > 0)
        why = "PIM attention offload or local weight loads";
    else if (c->spec->method == SV_COMPUTE_SPEC_DRAFT && !c->spec_draft_lat && !c->manual)
        why = "a draft model without its latency model";
    if (!why)
        return TRUE;
    g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                "instance %d: speculative decoding is not combined with %s yet "
                "(docs/speculative.md)",
                c->instance, why);
    return FALSE;
}

int64_t sv_msg__spec_lookahead(const sv_msg *m, const msg_req *r)
{
    if (!m->cfg.spec || r->is_init || r->num_computed != r->num_reached - 1)
        return 0;
    return m->cfg.spec->k;
}

void sv_msg__spec_req_init(sv_msg *m, msg_req *r)
{
    const struct sv_compute_spec_cfg *sc = m->cfg.spec;
    if (!sc)
        return;
    char name[64];
    g_snprintf(name, sizeof name, "spec/%" G_GUINT64_FORMAT, r->out.request_id);
    r->spec_rng = sv_rng_new(m->cfg.spec_seed, name);
    sv_rng *rate = NULL;
    if (sc->dist != SV_COMPUTE_SPEC_ACCEPT_FIXED) {
        /* Drawn once, from a stream of its own: the same request gets the same rate whatever
         * else the run draws. */
        g_snprintf(name, sizeof name, "spec/rate/%" G_GUINT64_FORMAT, r->out.request_id);
        rate = sv_rng_new(m->cfg.spec_seed, name);
    }
    r->spec_rate = sv_compute_spec_request_rate(sc, rate);
    sv_rng_free(rate);
}

/* The draft passes on rank `dev` before the target's forward. Without collectives (TP 1, or no
 * cluster network) one node of all k passes, as the passes are sequential on the rank. Under TP
 * on the cluster network each pass is its compute followed by its all-reduces on the instance's
 * TP group, as the target's layers issue theirs (par_ops in opmap.c): a draft model's 2 per
 * layer, an EAGLE / MTP head's 2 (its decoder layer; the fc projection is replicated), each of
 * the pass's tokens x hidden x dtype bytes. They run on the network like the target's, so a
 * draft pass waits for the slowest rank of the group and shares the links with other traffic. */
sv_dag_node *sv_msg__spec_draft_node(sv_msg *m, int32_t dev, sv_dag_node *parent)
{
    const struct sv_compute_spec_cfg *sc = m->cfg.spec;
    if (!sc)
        return parent;
    if (dev == m->cfg.first_device) {
        /* Once per launch (rank 0 comes first): every rank runs the same draft passes. */
        guint n = m->inflight->len;
        int64_t *kv = g_new(int64_t, MAX(n, 1));
        int32_t *ns = g_new(int32_t, MAX(n, 1));
        for (guint i = 0; i < n; i++) {
            const msg_slot *s = &g_array_index(m->inflight, msg_slot, i);
            kv[i] = s->computed_before; /* the last token's history, as a decode's */
            ns[i] = s->spec;
        }
        m->spec_n_pass = sv_compute_spec_draft_passes(sc, m->cfg.lat, m->cfg.spec_draft_lat, kv, ns,
                                                      (int64_t)n, m->spec_pass);
        g_free(kv);
        g_free(ns);
        m->spec_draft_ns = 0;
        for (int32_t i = 0; i < m->spec_n_pass; i++)
            m->spec_draft_ns += m->spec_pass[i].ns;
    }
    gboolean named = m->hooks.on_op || m->et;
    gboolean coll = m->par && m->cfg.coll && m->cfg.num_devices > 1;
    if (!coll) {
        if (m->spec_draft_ns <= 0)
            return parent;
        return sv_msg__add_node(m, named ? "spec_draft" : NULL, SV_DAG_KIND_COMP, dev,
                                m->spec_draft_ns, parent);
    }
    sv_dag_node *prev = parent;
    for (int32_t i = 0; i < m->spec_n_pass; i++) {
        const struct sv_compute_spec_pass *p = &m->spec_pass[i];
        if (p->ns > 0)
            prev = sv_msg__add_node(m, named ? "spec_draft" : NULL, SV_DAG_KIND_COMP, dev, p->ns,
                                    prev);
        for (int32_t a = 0; a < p->n_allreduce && p->allreduce_bytes > 0; a++) {
            prev = sv_msg__add_node(m, named ? "spec_draft.allreduce" : NULL, SV_DAG_KIND_COMM_COLL,
                                    dev, 0, prev);
            prev->p.has |= SV_DAG_HAS_COMM_TYPE | SV_DAG_HAS_COMM_SIZE | SV_DAG_HAS_COMM_TAG;
            prev->p.comm_type = (int32_t)SV_SYS_ALL_REDUCE;
            prev->p.comm_size_bytes = p->allreduce_bytes;
            prev->p.comm_tag = m->cfg.tp_group_base; /* stage 0: PP is refused (spec_check) */
        }
    }
    return prev;
}

int64_t sv_msg__spec_accept(sv_msg *m, msg_req *r, const msg_slot *s)
{
    SV_ASSERT(s->spec > 0 && s->spec <= SV_COMPUTE_SPEC_MAX_K && r->spec_rng);
    int32_t n = sv_compute_spec_sample(r->spec_rng, s->spec, r->spec_rate);
    int32_t accepted = n - 1;
    struct sv_msg_spec_stats *st = &m->spec_stats;
    st->num_drafts++;
    st->num_draft_tokens += (uint64_t)s->spec;
    st->num_accepted_tokens += (uint64_t)accepted;
    for (int32_t i = 0; i < accepted; i++)
        st->accepted_per_pos[i]++;
    /* KV of the last token and the accepted drafts; the bonus token has none yet. */
    r->num_computed = s->computed_before + n;
    return MIN((int64_t)n, r->total - r->num_reached);
}

void sv_msg_get_spec_stats(const sv_msg *m, struct sv_msg_spec_stats *out)
{
    *out = m->spec_stats;
    out->k = m->cfg.spec ? m->cfg.spec->k : 0;
}
