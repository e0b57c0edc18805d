/* The run loop: instances (one serving group each), the global router, the workload pump and
 * agentic sessions.
 *
 * The workload is pulled one item at a time: the next item's arrival is the only future arrival
 * the engine holds, so a million-request trace needs O(1) memory beyond what is in flight.
 * Sessions (LLMServingSim's agentic format): a call is released when the previous one finished
 * plus its tool time, then routed like any arrival. */
#include "planner/planner.h"

#include <string.h>

/* Arrivals run before executor and step events of the same instant (msg.c). */
#define PRIO_ARRIVAL (-4)

static const char *const router_names[] = {"least_load", "round_robin", "random"};

gboolean sv_planner_router_parse(const char *name, sv_router_kind *out, GError **error)
{
    static const struct {
        const char *name;
        sv_router_kind kind;
    } aliases[] = {
        {"least_load", SV_ROUTER_LEAST_LOAD},   {"load", SV_ROUTER_LEAST_LOAD},
        {"round_robin", SV_ROUTER_ROUND_ROBIN}, {"rr", SV_ROUTER_ROUND_ROBIN},
        {"random", SV_ROUTER_RANDOM},           {"rand", SV_ROUTER_RANDOM},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(aliases); i++) {
        if (g_ascii_strcasecmp(name, aliases[i].name) == 0) {
            *out = aliases[i].kind;
            return TRUE;
        }
    }
    g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                "unknown router '%s' (known: least_load, round_robin, random)", name);
    return FALSE;
}

const char *sv_planner_router_name(sv_router_kind kind)
{
    return (unsigned)kind < G_N_ELEMENTS(router_names) ? router_names[kind] : "?";
}

int32_t sv_planner_route(sv_router_kind kind, int32_t n, const uint32_t *waiting,
                         const uint32_t *running, uint64_t *rr, sv_rng *rng)
{
    SV_ASSERT(n > 0);
    switch (kind) {
    case SV_ROUTER_ROUND_ROBIN: {
        int32_t i = (int32_t)(*rr % (uint64_t)n);
        (*rr)++;
        return i;
    }
    case SV_ROUTER_RANDOM:
        return (int32_t)sv_rng_below(rng, (uint64_t)n);
    case SV_ROUTER_LEAST_LOAD:
    default: {
        /* LLMServingSim's LOAD policy (vLLM's DP load balancer): score = 4 x waiting + running,
         * the lowest score wins, ties to the lowest index. */
        int32_t best = 0;
        uint64_t best_score = UINT64_MAX;
        for (int32_t i = 0; i < n; i++) {
            uint64_t s = 4 * (uint64_t)waiting[i] + running[i];
            if (s < best_score) {
                best_score = s;
                best = i;
            }
        }
        return best;
    }
    }
}

/* ---- run state ------------------------------------------------------------------------------ */

typedef struct {
    char *session_id;
    sv_wl_req *reqs; /* stolen from the workload item */
    size_t n_reqs;
    size_t next; /* index of the next call to release */
} run_session;

typedef struct {
    const struct sv_run_cfg *cfg;
    sv_engine *eng;
    int32_t n_inst;
    sv_msg **msgs;
    sv_kv_manager **kvs;
    sv_latency **lats;
    uint32_t *waiting_scratch, *running_scratch;
    uint64_t rr;
    sv_rng *router_rng;
    sv_wl_item item; /* the next arrival, already read */
    gboolean have_item;
    GError *error;
    GHashTable *sessions; /* live sessions (owned), only to free them on an early stop */
    uint64_t submitted, finished;
    struct sv_run_result *res;
} run_state;

static void run_fail(run_state *st, GError *e)
{
    if (!st->error)
        st->error = e;
    else
        g_error_free(e);
    sv_engine_stop(st->eng);
}

static void session_free(run_session *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_reqs; i++) {
        g_free(s->reqs[i].input_tok_ids);
        g_free(s->reqs[i].output_tok_ids);
        g_free(s->reqs[i].hash_ids);
    }
    g_free(s->reqs);
    g_free(s->session_id);
    g_free(s);
}

static gboolean submit(run_state *st, const sv_wl_req *q, sv_time arrival, void *user)
{
    for (int32_t i = 0; i < st->n_inst; i++) {
        st->waiting_scratch[i] = sv_msg_num_waiting(st->msgs[i]);
        st->running_scratch[i] = sv_msg_num_running(st->msgs[i]);
    }
    int32_t inst = sv_planner_route(st->cfg->router, st->n_inst, st->waiting_scratch,
                                    st->running_scratch, &st->rr, st->router_rng);
    struct sv_msg_req_cfg rc = {
        .request_id = q->request_id,
        .arrival_ns = arrival,
        .input_tokens = q->input_tokens,
        .output_tokens = q->output_tokens,
        .input_tok_ids = q->input_tok_ids,
        .n_input_tok_ids = q->n_input_tok_ids,
        .output_tok_ids = q->output_tok_ids,
        .n_output_tok_ids = q->n_output_tok_ids,
        .hash_ids = q->hash_ids,
        .n_hash_ids = q->n_hash_ids,
        .hash_block_tokens = (uint32_t)q->hash_block_tokens,
        .user = user,
    };
    GError *e = NULL;
    if (!sv_msg_submit(st->msgs[inst], &rc, &e)) {
        run_fail(st, e);
        return FALSE;
    }
    st->submitted++;
    return TRUE;
}

static void pump(run_state *st);

static void arrival_event(sv_engine *eng, void *ctx, uint64_t arg)
{
    run_state *st = ctx;
    sv_wl_item *it = &st->item;
    if (st->res->first_arrival_ns < 0)
        st->res->first_arrival_ns = it->arrival_ns;
    if (it->kind == SV_WL_ITEM_SESSION) {
        run_session *s = g_new0(run_session, 1);
        s->session_id = it->session_id;
        it->session_id = NULL;
        s->reqs = it->reqs;
        s->n_reqs = it->n_reqs;
        it->reqs = NULL;
        it->n_reqs = 0;
        st->res->sessions++;
        s->next = 1;
        g_hash_table_add(st->sessions, s);
        if (!submit(st, &s->reqs[0], it->arrival_ns, s))
            return;
    } else {
        if (!submit(st, &it->reqs[0], it->arrival_ns, NULL))
            return;
    }
    pump(st);
}

/* Read the next workload item and schedule its arrival. */
static void pump(run_state *st)
{
    GError *e = NULL;
    int rc = sv_wl_next(st->cfg->workload, &st->item, &e);
    if (rc < 0) {
        run_fail(st, e);
        return;
    }
    st->have_item = rc > 0;
    if (!st->have_item)
        return;
    sv_time at = st->item.arrival_ns;
    if (at < sv_engine_now(st->eng))
        at = sv_engine_now(st->eng);
    sv_engine_schedule(st->eng, at, PRIO_ARRIVAL, arrival_event, st, 0);
}

/* A session's next call: ctx is the run, arg the session. */
static void session_release_event(sv_engine *eng, void *ctx, uint64_t arg)
{
    run_state *st = ctx;
    run_session *s = (run_session *)(uintptr_t)arg;
    submit(st, &s->reqs[s->next - 1], sv_engine_now(eng), s);
}

static void on_req_done(void *ctx, const struct sv_msg_req_done *d)
{
    run_state *st = ctx;
    run_session *s = d->user;
    st->finished++;
    struct sv_run_result *res = st->res;
    res->requests++;
    res->prompt_tokens += (uint64_t)d->input_tokens;
    res->output_tokens += (uint64_t)d->output_tokens;
    if (d->last_token_ns > res->makespan_ns)
        res->makespan_ns = d->last_token_ns;
    const struct sv_run_observer *obs = st->cfg->observer;
    if (obs && obs->on_request) {
        struct sv_req_record rec = {
            .request_id = d->request_id,
            .instance = d->instance,
            .arrival_ns = d->arrival_ns,
            .first_scheduled_ns = d->first_scheduled_ns,
            .first_token_ns = d->first_token_ns,
            .last_token_ns = d->last_token_ns,
            .input_tokens = d->input_tokens,
            .output_tokens = d->output_tokens,
            .prefix_hit_tokens = d->prefix_hit_tokens,
            .preemptions = d->preemptions,
            .session_id = s ? s->session_id : NULL,
        };
        obs->on_request(obs->ctx, &rec);
    }
    if (st->cfg->progress && st->cfg->progress_every > 0 &&
        st->finished % st->cfg->progress_every == 0)
        st->cfg->progress(st->cfg->progress_ctx, sv_engine_now(st->eng), st->finished,
                          st->submitted);
    if (s) {
        if (s->next < s->n_reqs) {
            /* The next call is released after this one's tool time (sub_requests[j].
             * tool_duration_ns follows call j). */
            sv_time at = d->last_token_ns + s->reqs[s->next - 1].tool_duration_ns;
            s->next++;
            sv_engine_schedule(st->eng, at, PRIO_ARRIVAL, session_release_event, st,
                               (uint64_t)(uintptr_t)s);
        } else {
            g_hash_table_remove(st->sessions, s); /* frees it */
        }
    }
}

static void on_iter_done(void *ctx, const struct sv_msg_iter_done *it)
{
    run_state *st = ctx;
    st->res->iterations++;
    const struct sv_run_observer *obs = st->cfg->observer;
    if (obs && obs->on_iteration) {
        struct sv_iter_sample s = {
            .instance = it->instance,
            .start_ns = it->start_ns,
            .end_ns = it->end_ns,
            .prompt_tokens = it->prompt_tokens,
            .gen_tokens = it->gen_tokens,
            .running = it->running,
            .waiting = it->waiting,
            .kv_usage = it->kv_usage,
        };
        obs->on_iteration(obs->ctx, &s);
    }
}

static void on_token(void *ctx, uint64_t request_id, int32_t instance, sv_time t, sv_time gap)
{
    run_state *st = ctx;
    const struct sv_run_observer *obs = st->cfg->observer;
    if (obs && obs->on_token_gap)
        obs->on_token_gap(obs->ctx, request_id, t, gap);
}

/* ---- setup ---------------------------------------------------------------------------------- */

static int64_t pick(int64_t inst, int64_t run_default, int64_t builtin)
{
    if (inst >= 0)
        return inst;
    return run_default > 0 ? run_default : builtin;
}

static gboolean pick_bool(int inst, int run_default)
{
    if (inst >= 0)
        return inst != 0;
    return run_default != 0; /* -1 (unset) means on: vLLM's defaults for all three */
}

static sv_latency *make_latency(const struct sv_run_cfg *cfg, const struct sv_instance_cfg *ic,
                                const struct sv_model_cfg *m, struct sv_run_result *res,
                                GError **error)
{
    GError *e = NULL;
    if (cfg->latency != SV_RUN_LATENCY_ROOFLINE && cfg->profiles_root) {
        g_autofree char *dir =
            sv_compute_profile_find(cfg->profiles_root, ic->hardware, ic->model_name, NULL, &e);
        if (dir) {
            sv_latency *lat = sv_compute_latency_new_profile(dir, m, ic->tp_size, error);
            if (lat && ic->index == 0) {
                res->latency_used = SV_RUN_LATENCY_PROFILE;
                g_strlcpy(res->latency_source, dir, sizeof res->latency_source);
            }
            return lat;
        }
    }
    if (cfg->latency == SV_RUN_LATENCY_PROFILE) {
        if (e)
            g_propagate_prefixed_error(error, e, "instance %d: no profile bundle: ", ic->index);
        else
            g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                        "instance %d: --latency profile needs --profiles DIR", ic->index);
        return NULL;
    }
    g_clear_error(&e);
    struct sv_hw_cfg hw;
    if (!sv_compute_hw_lookup(ic->hardware, &hw, error))
        return NULL;
    if (ic->npu_mem_bw_gbps > 0)
        hw.mem_bw_gbps = ic->npu_mem_bw_gbps; /* the config's npu_mem.mem_bw wins */
    sv_latency *lat = sv_compute_latency_new_roofline(m, &hw, ic->tp_size, NULL, error);
    if (lat && ic->index == 0) {
        res->latency_used = SV_RUN_LATENCY_ROOFLINE;
        g_strlcpy(res->latency_source, "roofline", sizeof res->latency_source);
    }
    return lat;
}

static gboolean setup_instance(run_state *st, int32_t i, int32_t first_device, GError **error)
{
    const struct sv_run_cfg *cfg = st->cfg;
    const struct sv_instance_cfg *ic = &cfg->cluster->instances[i];
    struct sv_model_cfg m;
    if (!sv_compute_model_lookup(ic->model_name, cfg->model_dir, &m, error)) {
        g_prefix_error(error, "instance %d: ", i);
        return FALSE;
    }
    st->lats[i] = make_latency(cfg, ic, &m, st->res, error);
    if (!st->lats[i])
        return FALSE;
    int64_t block_size = pick(ic->block_size, cfg->block_size, SV_MSG_DEFAULT_BLOCK_SIZE);
    /* KV capacity per rank (LLMServingSim memory_model.py, VALIDATION_NOTES item 5):
     * trunc(mem_size GiB x mem_util) - weights per rank, in blocks; every layer of this rank's
     * pipeline stage holds K and V per token. */
    uint64_t mem_bytes = (uint64_t)(ic->npu_mem_gib * 1073741824.0);
    uint64_t weights = sv_compute_model_weight_bytes(&m, ic->tp_size) / (uint64_t)ic->pp_size;
    uint64_t kv_tok = sv_compute_model_kv_bytes_per_token_layer(&m, ic->tp_size) *
                      (uint64_t)((m.num_layers + ic->pp_size - 1) / ic->pp_size);
    uint64_t blocks;
    if (!sv_kv_capacity_blocks(mem_bytes, ic->mem_util, weights, kv_tok, (uint32_t)block_size,
                               &blocks, error)) {
        g_prefix_error(error, "instance %d (%s on %s): ", i, ic->model_name, ic->hardware);
        return FALSE;
    }
    if (blocks > UINT32_MAX)
        blocks = UINT32_MAX;
    gboolean caching = pick_bool(ic->enable_prefix_caching, cfg->enable_prefix_caching);
    st->kvs[i] = sv_kv_manager_new((uint32_t)blocks, (uint32_t)block_size, caching);
    struct sv_msg_cfg mc = {
        .instance = i,
        .scheduler = cfg->scheduler,
        .max_num_seqs = cfg->force_max_num_seqs > 0 ? cfg->force_max_num_seqs
                                                    : pick(ic->max_num_seqs, cfg->max_num_seqs,
                                                           SV_MSG_DEFAULT_MAX_NUM_SEQS),
        .max_num_batched_tokens =
            cfg->force_max_num_batched_tokens > 0
                ? cfg->force_max_num_batched_tokens
                : pick(ic->max_num_batched_tokens, cfg->max_num_batched_tokens,
                       SV_MSG_DEFAULT_MAX_NUM_BATCHED_TOKENS),
        .long_prefill_token_threshold =
            pick(ic->long_prefill_token_threshold, cfg->long_prefill_token_threshold, 0),
        .enable_chunked_prefill =
            pick_bool(ic->enable_chunked_prefill, cfg->enable_chunked_prefill),
        .reserve_full_isl = pick_bool(ic->reserve_full_isl, cfg->reserve_full_isl),
        .kv = st->kvs[i],
        .lat = st->lats[i],
        .first_device = first_device,
        .num_devices = ic->tp_size,
        .link_bw_gbps = cfg->cluster->link_bw_gbps,
        .link_latency_ns = cfg->cluster->link_latency_ns,
        .emit_et_dir = cfg->emit_et_dir,
    };
    /* 0 means unlimited in LLMServingSim's config. */
    if (mc.max_num_seqs == 0)
        mc.max_num_seqs = INT64_MAX;
    if (mc.max_num_batched_tokens == 0)
        mc.max_num_batched_tokens = INT64_MAX / 4;
    struct sv_msg_hooks hooks = {
        .on_token = on_token,
        .on_req_done = on_req_done,
        .on_iter_done = on_iter_done,
        .ctx = st,
    };
    st->msgs[i] = sv_msg_new(st->eng, &mc, &hooks, error);
    return st->msgs[i] != NULL;
}

gboolean sv_planner_run(const struct sv_run_cfg *cfg, struct sv_run_result *res, GError **error)
{
    memset(res, 0, sizeof *res);
    res->first_arrival_ns = -1;
    if (!cfg->cluster || cfg->cluster->n_instances < 1 || !cfg->workload) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                    "a run needs a cluster with at least one instance and a workload");
        return FALSE;
    }
    run_state st = {0};
    st.cfg = cfg;
    st.res = res;
    st.eng = sv_engine_new(cfg->seed);
    st.n_inst = cfg->cluster->n_instances;
    st.msgs = g_new0(sv_msg *, st.n_inst);
    st.kvs = g_new0(sv_kv_manager *, st.n_inst);
    st.lats = g_new0(sv_latency *, st.n_inst);
    st.waiting_scratch = g_new0(uint32_t, st.n_inst);
    st.running_scratch = g_new0(uint32_t, st.n_inst);
    st.router_rng = sv_rng_stream(st.eng, "router/random");
    st.sessions =
        g_hash_table_new_full(g_direct_hash, g_direct_equal, (GDestroyNotify)session_free, NULL);
    gboolean ok = TRUE;
    int32_t device = 0;
    for (int32_t i = 0; i < st.n_inst && ok; i++) {
        ok = setup_instance(&st, i, device, error);
        device += cfg->cluster->instances[i].num_npus;
    }
    if (ok) {
        pump(&st);
        sv_engine_run(st.eng, SV_TIME_MAX);
        for (int32_t i = 0; i < st.n_inst && !st.error; i++) {
            const GError *me = sv_msg_error(st.msgs[i]);
            if (me)
                st.error = g_error_copy(me);
        }
        if (st.error) {
            g_propagate_error(error, st.error);
            st.error = NULL;
            ok = FALSE;
        } else if (st.finished != st.submitted || st.have_item) {
            g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_RUN,
                        "the simulation stalled: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                        " requests finished",
                        st.finished, st.submitted);
            ok = FALSE;
        }
    }
    for (int32_t i = 0; i < st.n_inst; i++) {
        if (st.kvs[i]) {
            struct sv_kv_stats ks;
            sv_kv_manager_get_stats(st.kvs[i], &ks);
            res->prefix_requested_tokens += ks.requested_tokens;
            res->prefix_hit_tokens += ks.hit_tokens;
        }
        if (st.msgs[i])
            res->preemptions += sv_msg_num_preemptions(st.msgs[i]);
    }
    res->bad_lines = sv_wl_source_bad_lines(cfg->workload);
    for (int32_t i = 0; i < st.n_inst; i++) {
        sv_msg_free(st.msgs[i]);
        sv_kv_manager_free(st.kvs[i]);
        sv_latency_free(st.lats[i]);
    }
    sv_wl_item_clear(&st.item);
    sv_engine_free(st.eng);
    st.eng = NULL;
    g_hash_table_destroy(st.sessions);
    g_free(st.msgs);
    g_free(st.kvs);
    g_free(st.lats);
    g_free(st.waiting_scratch);
    g_free(st.running_scratch);
    return ok;
}
