/* Router policies beyond LLMServingSim's three: prefix-aware and SLO-aware (docs/routing.md).
 *
 * Both are registry tables like the built-ins (struct sv_planner_router_ops). They only read the
 * per-instance view the run fills (struct sv_planner_router_inst) and the request; the prefix
 * lookup walks the instance's prefix-cache index without touching it. */
#include "planner/planner_internal.h"

#include <stdlib.h>

/* LLMServingSim's LOAD score (vLLM's DP load balancer): 4 x waiting + running. The tie-break of
 * both policies below. */
static uint64_t load_score(const struct sv_planner_router_inst *in)
{
    return 4 * (uint64_t)in->waiting + in->running;
}

int64_t sv_planner_prefix_match(const sv_memtier_kv_manager *kv_const,
                                const struct sv_planner_router_req *req)
{
    if (!kv_const || !sv_memtier_kv_manager_caching_enabled(kv_const) || req->req->input_tokens < 2)
        return 0;
    if (req->req->n_input_tok_ids == 0 && req->req->n_hash_ids == 0)
        return 0;
    /* A throw-away sequence computes the request's hash chain with this pool's block size, the
     * same keys the pool would use on admission (memory-tier/kvcache.c). Creating and freeing a
     * sequence that never allocates changes no block, no index entry and no statistic. */
    sv_memtier_kv_manager *kv = (sv_memtier_kv_manager *)kv_const;
    size_t n_ids = req->req->n_input_tok_ids;
    if (n_ids > (size_t)req->req->input_tokens)
        n_ids = (size_t)req->req->input_tokens;
    struct sv_memtier_kv_seq_cfg sc = {
        .prompt_tokens = (uint64_t)req->req->input_tokens,
        .prompt_ids = n_ids ? req->req->input_tok_ids : NULL,
        .num_prompt_ids = n_ids,
        .hash_ids = n_ids ? NULL : req->req->hash_ids,
        .num_hash_ids = n_ids ? 0 : req->req->n_hash_ids,
        .hash_block_tokens = req->req->hash_block_tokens,
    };
    sv_memtier_kv_seq *seq = sv_memtier_kv_seq_new(kv, &sc, NULL);
    if (!seq)
        return 0;
    uint32_t bs = sv_memtier_kv_manager_block_size(kv);
    /* vLLM looks up at most floor((num_tokens - 1) / block) blocks: the last prompt token always
     * runs (kv_cache_manager.get_computed_blocks). */
    uint64_t max_blocks = (uint64_t)(req->req->input_tokens - 1) / bs;
    uint32_t nh = sv_memtier_kv_seq_num_hashes(seq);
    uint64_t hit = 0;
    for (uint32_t i = 0; i < nh && i < max_blocks; i++) {
        uint32_t id;
        if (!sv_memtier_kv_manager_lookup(kv, sv_memtier_kv_seq_block_hash(seq, i), &id))
            break;
        hit++;
    }
    sv_memtier_kv_seq_free(seq);
    return (int64_t)(hit * bs);
}

sv_time sv_planner_ttft_estimate(const struct sv_planner_router_inst *inst,
                                 const struct sv_planner_router_req *req)
{
    double tokens = (double)inst->waiting_tokens + (double)req->req->input_tokens;
    if (inst->prefill_tokens_per_ns <= 0)
        return G_MAXINT64;
    double ns = (double)inst->step_remaining_ns + tokens / inst->prefill_tokens_per_ns;
    return ns >= (double)G_MAXINT64 ? G_MAXINT64 : sv_time_from_ns(ns);
}

/* ---- prefix_aware --------------------------------------------------------------------------- */

static void *no_param_create(int32_t n_instances, const char *param, sv_rng *rng, GError **error)
{
    if (param && *param) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                    "prefix_aware takes no parameter (got '%s')", param);
        return NULL;
    }
    return g_new0(int, 1); /* no state; non-NULL means success */
}

/* The longest cached prefix wins; ties (including "no instance has any of it") go to the lowest
 * load score, then the lowest index: with nothing cached it is least_load. */
static int32_t prefix_aware_route(void *state, const struct sv_planner_router_req *req, int32_t n,
                                  const struct sv_planner_router_inst *inst)
{
    int32_t best = 0;
    int64_t best_hit = -1;
    uint64_t best_load = UINT64_MAX;
    for (int32_t i = 0; i < n; i++) {
        int64_t hit = sv_planner_prefix_match(inst[i].kv, req);
        uint64_t load = load_score(&inst[i]);
        if (hit > best_hit || (hit == best_hit && load < best_load)) {
            best = i;
            best_hit = hit;
            best_load = load;
        }
    }
    return best;
}

/* ---- slo_aware ------------------------------------------------------------------------------ */

typedef struct {
    sv_time target_ns; /* from the parameter; 0 = take the request's */
} slo_state;

static void *slo_create(int32_t n_instances, const char *param, sv_rng *rng, GError **error)
{
    slo_state *s = g_new0(slo_state, 1);
    if (param && *param) {
        /* decimal text, (0, 10^9] ms as --slo-ttft-ms (docs/routing.md) */
        double ms = 0;
        if (!sv_num_parse_double(param, &ms) || !(ms > 0) || ms > 1e9) {
            g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                        "slo_aware: the parameter must be a TTFT target in ms in (0, 1e9] (got "
                        "'%s')",
                        param);
            g_free(s);
            return NULL;
        }
        s->target_ns = sv_time_from_ns(ms * 1e6);
    }
    return s;
}

/* Among the instances whose estimated TTFT meets the target, the least loaded (LOAD score, then
 * the lower estimate, then the lowest index): load stays spread while the target holds. When no
 * instance meets it, or there is no target, the lowest estimate (ties to the lowest index). */
static int32_t slo_aware_route(void *state, const struct sv_planner_router_req *req, int32_t n,
                               const struct sv_planner_router_inst *inst)
{
    const slo_state *s = state;
    sv_time target = s->target_ns > 0 ? s->target_ns : req->slo_ttft_ns;
    int32_t fastest = 0, best = -1;
    sv_time fastest_est = G_MAXINT64, best_est = G_MAXINT64;
    uint64_t best_load = UINT64_MAX;
    for (int32_t i = 0; i < n; i++) {
        sv_time est = sv_planner_ttft_estimate(&inst[i], req);
        if (est < fastest_est) {
            fastest_est = est;
            fastest = i;
        }
        if (target <= 0 || est > target)
            continue;
        uint64_t load = load_score(&inst[i]);
        if (best < 0 || load < best_load || (load == best_load && est < best_est)) {
            best = i;
            best_load = load;
            best_est = est;
        }
    }
    return best >= 0 ? best : fastest;
}

static const struct sv_planner_router_ops prefix_aware_ops = {
    SV_REGISTRY_API_VERSION, no_param_create, g_free, prefix_aware_route};
static const struct sv_planner_router_ops slo_aware_ops = {SV_REGISTRY_API_VERSION, slo_create,
                                                           g_free, slo_aware_route};

gboolean sv_planner_router_register_policies(sv_registry *reg, GError **error)
{
    return sv_registry_add(reg, SV_REGISTRY_ROUTER, "prefix_aware", &prefix_aware_ops, "built-in",
                           error) &&
           sv_registry_add(reg, SV_REGISTRY_ROUTER, "slo_aware", &slo_aware_ops, "built-in", error);
}

double sv_planner__prefill_tput_estimate(sv_compute_latency *lat, int64_t budget)
{
    int64_t chunk = MIN(budget, (int64_t)SV_MSG_DEFAULT_MAX_NUM_BATCHED_TOKENS), hist = 0;
    struct sv_compute_batch_shape shape;
    sv_compute_batch_shape_init(&shape, &chunk, &hist, 1, NULL, 0);
    struct sv_compute_iter_time it;
    sv_compute_iter_time(lat, &shape, 0, sv_compute_latency_model(lat)->num_layers, &it);
    return it.total_ns > 0 ? (double)chunk / (double)it.total_ns : 0;
}
