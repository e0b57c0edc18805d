/* The run loop's observer (planner.h) feeding the output writer. */
#include "planner/planner_internal.h"

#include <string.h>

static void on_request(void *ctx, const struct sv_wl_outcome *rec)
{
    sv_metrics *m = ctx;
    GError **slot = sv_metrics_deferred_error(m);
    if (*slot == NULL)
        sv_metrics_request_add(m, rec, slot);
}

static void on_iteration(void *ctx, const struct sv_msg_iter_done *it)
{
    sv_metrics *m = ctx;
    sv_metrics_tokens(m, it->instance, it->end_ns, it->prompt_tokens, it->gen_tokens);
    sv_metrics_sample(m, it->instance, it->end_ns, (int)it->running, (int)it->waiting,
                      it->kv_usage * 100.0);
}

static void on_token_gap(void *ctx, uint64_t request_id, sv_time t_ns, sv_time gap_ns)
{
    sv_metrics_itl(ctx, gap_ns);
}

static void on_instance(void *ctx, int32_t instance, const char *latency_source)
{
    sv_metrics_set_latency_source(ctx, instance, latency_source);
}

static void on_instance_kv(void *ctx, int32_t instance, const struct sv_planner_instance_cfg *ic,
                           uint64_t kv_blocks, uint32_t kv_block_size, uint64_t kv_bytes,
                           const struct sv_planner_instance_limits *lim)
{
    static const char *const roles[] = {[SV_MSG_ROLE_BOTH] = "both",
                                        [SV_MSG_ROLE_PREFILL] = "prefill",
                                        [SV_MSG_ROLE_DECODE] = "decode"};
    struct sv_metrics_instance_info info = {
        .role = (unsigned)ic->role < G_N_ELEMENTS(roles) ? roles[ic->role] : NULL,
        .model = ic->model_name,
        .hardware = ic->hardware,
        .tp = ic->tp_size,
        .pp = ic->pp_size,
        .kv_blocks = kv_blocks,
        .kv_block_size = kv_block_size,
        .kv_bytes = kv_bytes,
        .has_limits = lim != NULL,
        .ffn_hardware = ic->afd.ffn_hardware,
        .ffn_npus = ic->afd.micro_batches > 0 ? ic->afd.ffn_npus : 0,
        .micro_batches = ic->afd.micro_batches,
        .ffn_ep = lim && lim->afd_ffn_ep,
    };
    if (lim) {
        info.engine = lim->engine;
        info.max_num_seqs = lim->max_num_seqs;
        info.max_num_batched_tokens = lim->max_num_batched_tokens;
        info.long_prefill_token_threshold = lim->long_prefill_token_threshold;
        info.max_model_len = lim->max_model_len;
        info.enable_chunked_prefill = lim->enable_chunked_prefill;
        info.enable_prefix_caching = lim->enable_prefix_caching;
    }
    sv_metrics_set_instance(ctx, instance, &info);
}

static void on_tiers(void *ctx, sv_time t_ns, const struct sv_planner_tier_usage *u)
{
    struct sv_metrics_tier_sample s;
    for (int k = 0; k < SV_METRICS_TIER_KINDS; k++) {
        s.bytes[k] = u->used[k];
        s.hit_pct[k] = u->lookup_tokens[k]
                           ? 100.0 * (double)u->hit_tokens[k] / (double)u->lookup_tokens[k]
                           : 0.0;
    }
    sv_metrics_sample_tiers(ctx, t_ns, &s);
}

static void on_power(void *ctx, const struct sv_planner_power_row *r)
{
    sv_metrics_power_row(ctx, r->t_ns, r->w, r->node_j, r->total_w, r->total_j);
}

void sv_planner_tier_stats_to_metrics(const struct sv_planner_tier_stats *s,
                                      struct sv_metrics_tiers *out)
{
    memset(out, 0, sizeof *out);
    G_STATIC_ASSERT(SV_METRICS_TIER_KINDS == SV_MEMTIER_KIND_COUNT);
    G_STATIC_ASSERT(SV_MEMTIER_OWNER_COUNT == 5);
    for (int k = 0; k < SV_METRICS_TIER_KINDS; k++) {
        const struct sv_memtier_tier_stats *t = &s->kind[k];
        struct sv_metrics_tier *o = &out->kind[k];
        o->present = s->present[k];
        o->capacity_bytes = t->capacity;
        o->peak_bytes = t->peak;
        for (int w = 0; w < 5; w++)
            o->peak_by_owner[w] = t->peak_by_owner[w];
        o->mean_bytes = t->mean_bytes;
        o->read_bytes = t->read_bytes;
        o->write_bytes = t->write_bytes;
        o->prefix_hit_tokens = t->hit_tokens;
        o->prefix_lookup_tokens = t->lookup_tokens;
        o->prefix_hit_chunks = t->hit_chunks;
        o->evictions = t->evictions;
        o->rejected = t->rejected;
    }
    out->bytes_booked = s->bytes_booked;
    out->has_swap = s->swap;
    out->swap_outs = s->msg.swap_outs;
    out->swap_ins = s->msg.swap_ins;
    out->swap_out_bytes = s->msg.swap_out_bytes;
    out->swap_in_bytes = s->msg.swap_in_bytes;
    out->swap_fallbacks = s->msg.swap_fallbacks;
    out->has_expert_cache = s->expert_cache;
    out->expert_hits = s->msg.expert_hits;
    out->expert_misses = s->msg.expert_misses;
    out->expert_fetch_bytes = s->msg.expert_fetch_bytes;
}

static void on_spec(void *ctx, int32_t instance, const char *method,
                    const struct sv_msg_spec_stats *st)
{
    struct sv_metrics_spec s = {.instance = instance,
                                .k = st->k,
                                .num_drafts = st->num_drafts,
                                .num_draft_tokens = st->num_draft_tokens,
                                .num_accepted_tokens = st->num_accepted_tokens};
    g_strlcpy(s.method, method, sizeof s.method);
    G_STATIC_ASSERT(SV_METRICS_SPEC_MAX_K == SV_COMPUTE_SPEC_MAX_K);
    memcpy(s.accepted_per_pos, st->accepted_per_pos, sizeof s.accepted_per_pos);
    sv_metrics_add_spec(ctx, &s);
}

void sv_planner_metrics_observer_init(sv_metrics *m, struct sv_planner_run_observer *obs)
{
    obs->on_request = on_request;
    obs->on_iteration = on_iteration;
    obs->on_token_gap = on_token_gap;
    obs->on_instance = on_instance;
    obs->on_tiers = on_tiers;
    obs->on_power = on_power;
    obs->on_instance_kv = on_instance_kv;
    obs->on_spec = on_spec;
    obs->ctx = m;
}

void sv_planner__report_kv(const struct sv_planner_run_cfg *cfg, int32_t i,
                           const struct sv_compute_model_cfg *m, uint64_t blocks,
                           const struct sv_msg_cfg *mc, const struct sv_planner__limits *lim,
                           gboolean prefix_caching)
{
    const struct sv_planner_run_observer *obs = cfg->observer;
    if (!obs || !obs->on_instance_kv)
        return;
    int64_t block_size = sv_memtier_kv_manager_block_size(mc->kv);
    struct sv_planner_instance_limits limits = {
        .engine = sv_msg_engine_name(lim->engine),
        .max_num_seqs = mc->max_num_seqs,
        .max_num_batched_tokens = mc->max_num_batched_tokens,
        .long_prefill_token_threshold = mc->long_prefill_token_threshold,
        .max_model_len = lim->max_model_len,
        .enable_chunked_prefill = lim->chunked_prefill,
        .enable_prefix_caching = prefix_caching,
        .afd_ffn_ep = mc->afd.micro_batches > 0 && mc->afd.ffn_ep};
    /* K and V of every layer and every KV head (the TP ranks' shares together) */
    uint64_t per_token = sv_compute_model_kv_bytes_per_token_layer(m, 1) * (uint64_t)m->num_layers;
    if (mc->spec) /* the speculator's KV shares the blocks (planner/spec.c) */
        per_token += sv_compute_spec_kv_bytes_per_token(mc->spec, m, 1);
    obs->on_instance_kv(obs->ctx, i, &cfg->cluster->instances[i], blocks, (uint32_t)block_size,
                        blocks * (uint64_t)block_size * per_token, &limits);
}
