/* The run loop: instances (one serving group each), the global router, the workload pump and
 * agentic sessions.
 *
 * The workload is pulled one item at a time: the next item's arrival is the only future arrival
 * the engine holds, so a million-request trace needs O(1) memory beyond what is in flight.
 * Sessions (LLMServingSim's agentic format): a call is released when the previous one finished
 * plus its tool time, then routed like any arrival. */
#include "planner/planner_internal.h"

#include <string.h>

/* Arrivals run before executor and step events of the same instant (msg.c). */
#define PRIO_ARRIVAL (-4)

/* The router when the run names none: LLMServingSim's default (LOAD). */
#define DEFAULT_ROUTER "least_load"

/* ---- run state ------------------------------------------------------------------------------ */

typedef struct {
    sv_wl_req *reqs; /* stolen from the workload item */
    size_t n_reqs;
    size_t next; /* index of the next call to release */
    char *model; /* stolen from the item (NULL: any instance) */
} run_session;

typedef struct {
    const struct sv_planner_run_cfg *cfg;
    sv_engine *eng;
    int32_t n_inst;
    sv_msg **msgs;
    sv_memtier_kv_manager **kvs;
    sv_compute_latency **lats;
    sv_planner__stages *stages; /* heterogeneous pipeline stages (stages.c) */
    sv_planner__spec *spec;     /* speculative decoding (spec.c) */
    sv_planner__afd *afd;       /* attention/FFN disaggregation (afd.c) */
    struct sv_planner_router_inst *inst_scratch;
    sv_rng *router_rng;
    /* Policies from the registry (plugin.c, router.c). */
    sv_registry *own_registry; /* the built-ins, when the caller gave no registry */
    const struct sv_planner_router_ops *router;
    void *router_state;
    const struct sv_msg_sched_ops *sched;
    const char *sched_param;
    const struct sv_memtier_kv_evict_ops *evict;
    const char *evict_param;
    /* Cluster network and parallelism (cluster_net.c; docs/parallelism.md). */
    sv_planner_cluster_net *cnet;
    sv_msg_dp **dps;
    const struct sv_msg_expert_route_ops *eroute;
    const char *eroute_param;
    sv_msg_moe_comm moe_comm;
    /* Disaggregation and model-aware routing (pd.c, router_policies.c). */
    sv_planner_pd *pd;
    void *decode_router_state; /* the router's own state for decode choices */
    struct sv_compute_model_cfg *models;
    int32_t **npus;   /* per instance: its NPU ids, rank order (PD) */
    int32_t *cand;    /* scratch: candidate instance ids */
    double *pf_tput;  /* recent prefill throughput, prompt tokens per ns */
    sv_time *iter_ns; /* recent iteration time */
    sv_wl_item item;  /* the next arrival, already read */
    gboolean have_item;
    GError *error;
    GHashTable *sessions; /* live sessions (owned), only to free them on an early stop */
    uint64_t submitted, finished;
    uint64_t arrived; /* submit() calls: submitted + refused at arrival */
    struct sv_planner_run_result *res;
    struct sv_planner_tier_run tier_run; /* memory-tier flags, resolved once */
    sv_planner_tiers *tiers;             /* NULL when the run uses no tier */
    sv_planner_power *power;             /* NULL without a power model */
    sv_planner_pim *pim;                 /* NULL without PIM offload or local weight loads */
    sv_planner_et *et;                   /* NULL without --emit-et */
    sv_planner_trace *trace;             /* NULL without --trace (planner/trace.c) */
    gboolean *tp_fold;                   /* per instance: TP iterations may be folded (tp_fold.c) */
    GArray *pending; /* power: finished requests (sv_wl_outcome) waiting for their energy */
    /* Per instance: context length (0: none) and KV cache in tokens, for the requests vLLM
     * would reject (planner/admit.c). */
    int64_t *max_model_len;
    uint64_t *kv_tokens;
    struct sv_planner__admit admit;
} run_state;

static void run_fail(run_state *st, GError *e)
{
    if (!st->error)
        st->error = e;
    else
        g_error_free(e);
    sv_engine_stop(st->eng);
}

/* Requests refused at their arrival that the run went on without (docs/serving.md "Rejected
 * requests"), for the conservation of requests (planner/conserve.c): they are not among the
 * submitted ones. */
static uint64_t requests_rejected(const run_state *st)
{
    return st->res->rejected;
}

/* Requests still inside the cluster: in an instance, or finished prefilling and waiting for
 * decode memory. */
static uint64_t requests_held(const run_state *st)
{
    uint64_t n = sv_planner_pd_num_waiting(st->pd);
    for (int32_t i = 0; i < st->n_inst; i++)
        n += st->msgs[i] ? sv_msg_num_held(st->msgs[i]) : 0;
    return n;
}

/* The progress watchdog's diagnosis (sv_engine_set_watchdog): what each instance holds and
 * whether it is stepping, and the hand-offs between them. */
static char *watchdog_diag(void *ctx)
{
    const run_state *st = ctx;
    GString *g = g_string_new(NULL);
    for (int32_t i = 0; i < st->n_inst; i++) {
        const sv_msg *m = st->msgs[i];
        if (!m)
            continue;
        sv_time since = sv_msg_busy_since(m);
        g_string_append_printf(g, "%sinstance %d: %u running, %u waiting, ", i ? "; " : "", i,
                               sv_msg_num_running(m), sv_msg_num_waiting(m));
        if (since >= 0)
            g_string_append_printf(g, "a step in flight since %.9f s", (double)since / 1e9);
        else
            g_string_append(g, "no step in flight");
        g_string_append_printf(g, ", %" G_GUINT64_FORMAT " preemptions", sv_msg_num_preemptions(m));
    }
    if (st->pd)
        g_string_append_printf(g, "; %u prefilled requests waiting for decode memory",
                               sv_planner_pd_num_waiting(st->pd));
    g_string_append_printf(g, "; %zu events pending", sv_engine_pending(st->eng));
    return g_string_free(g, FALSE);
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
    g_free(s->model);
    g_free(s);
}

/* Does instance i serve `model`? Names compare case-insensitively, whole or by the part after
 * the last '/' (a trace may say "Llama-3.1-8B" for "meta-llama/Llama-3.1-8B"). */
static gboolean serves(const run_state *st, int32_t i, const char *model)
{
    if (!model || !*model)
        return TRUE;
    const char *name = st->cfg->cluster->instances[i].model_name;
    if (g_ascii_strcasecmp(name, model) == 0)
        return TRUE;
    const char *a = strrchr(name, '/'), *b = strrchr(model, '/');
    return g_ascii_strcasecmp(a ? a + 1 : name, b ? b + 1 : model) == 0;
}

/* The router's view of instance i (docs/routing.md). */
static struct sv_planner_router_inst router_view(const run_state *st, int32_t i)
{
    sv_time remaining = 0;
    sv_time since = sv_msg_busy_since(st->msgs[i]);
    if (since >= 0)
        remaining = MAX(0, st->iter_ns[i] - (sv_engine_now(st->eng) - since));
    return (struct sv_planner_router_inst){
        .index = i,
        /* Requests whose KV is on its way to a decode instance are queued there already. */
        .waiting = sv_msg_num_waiting(st->msgs[i]) + sv_planner_pd_incoming(st->pd, i),
        .running = sv_msg_num_running(st->msgs[i]),
        .waiting_tokens = sv_msg_waiting_tokens(st->msgs[i]),
        .kv_usage = sv_memtier_kv_manager_usage(st->kvs[i]),
        .kv = st->kvs[i], /* prefix_aware looks up its prefix index */
        .step_remaining_ns = remaining,
        .prefill_tokens_per_ns = st->pf_tput[i],
    };
}

/* The KV transfer mode and the TTFT target: the run's (command line) win over the cluster
 * config's top-level "kv_transfer" / "slo_ttft_ms" (docs/disaggregation.md, docs/routing.md). */
static const char *run_kv_transfer(const struct sv_planner_run_cfg *cfg)
{
    return cfg->kv_transfer               ? cfg->kv_transfer
           : cfg->cluster->kv_transfer[0] ? cfg->cluster->kv_transfer
                                          : NULL;
}

static sv_time run_slo_ttft_ns(const struct sv_planner_run_cfg *cfg)
{
    double ms = cfg->slo_ttft_ms > 0 ? cfg->slo_ttft_ms : cfg->cluster->slo_ttft_ms;
    return ms > 0 ? sv_time_from_ns(ms * 1e6) : 0;
}

static const char *router_label(const run_state *st)
{
    return st->cfg->router_name ? st->cfg->router_name : DEFAULT_ROUTER;
}

/* A request vLLM would answer with an error (planner/admit.c): counted, reported to the observer
 * as a requests.csv row with its reason, and, for a session's call, the end of its session (an
 * agent whose call failed sends no further calls). Under `strict` it ends the run instead. The
 * instances that serve it are cand[0..n-1]. FALSE when the run ends. */
static gboolean reject(run_state *st, const sv_wl_req *q, run_session *s, sv_wl_reject why,
                       int32_t n)
{
    struct sv_planner_run_result *res = st->res;
    char msg[sizeof res->first_rejection];
    sv_planner__reject_message(&st->admit, st->cand, n, q, why, msg, sizeof msg);
    if (res->rejected++ == 0)
        g_strlcpy(res->first_rejection, msg, sizeof res->first_rejection);
    res->rejected_by_reason[why]++;
    if (st->cfg->strict) {
        run_fail(st,
                 why == SV_WL_REJECT_KV_CAPACITY
                     ? g_error_new(SV_MSG_ERROR, SV_MSG_ERROR_NOFIT, "%s (--strict)", msg)
                     : g_error_new(SV_PLANNER_ERROR, SV_PLANNER_ERROR_RUN, "%s (--strict)", msg));
        return FALSE;
    }
    const struct sv_planner_run_observer *obs = st->cfg->observer;
    if (obs && obs->on_request) {
        const struct sv_wl_outcome o = {.request_id = q->request_id,
                                        .instance = -1,
                                        .turn = q->turn,
                                        .arrival_ns = q->arrival_ns,
                                        .first_scheduled_ns = -1,
                                        .first_token_ns = -1,
                                        .last_token_ns = -1,
                                        .input_tokens = q->input_tokens,
                                        .output_tokens = q->output_tokens,
                                        .prefill_instance = -1,
                                        .prefill_done_ns = -1,
                                        .kv_ready_ns = -1,
                                        .reject = why};
        obs->on_request(obs->ctx, &o);
    }
    if (s)
        g_hash_table_remove(st->sessions, s); /* frees it */
    return TRUE;
}

static gboolean submit(run_state *st, const sv_wl_req *q, void *user, const char *model)
{
    st->arrived++;
    /* The global router sees the instances that take new requests (not decode instances: they
     * receive requests from prefill instances, LLMServingSim's router.py) serving the model and
     * able to serve this request (context length, KV cache: planner/admit.c); with none able,
     * the request is rejected. Under `strict` it sees them all, as before issue 13, and a request
     * the chosen instance cannot serve ends the run. */
    gboolean checked = q->input_tokens >= 1 && q->output_tokens >= 1; /* else msg reports it */
    int32_t n_cand = 0, n_serving = 0;
    sv_wl_reject why = SV_WL_REJECT_CONTEXT_LENGTH;
    for (int32_t i = 0; i < st->n_inst; i++) {
        if (st->cfg->cluster->instances[i].role == SV_MSG_ROLE_DECODE || !serves(st, i, model))
            continue;
        n_serving++;
        sv_wl_reject r = checked && !st->cfg->strict ? sv_planner__admissible(&st->admit, i, q)
                                                     : SV_WL_REJECT_NONE;
        if (r == SV_WL_REJECT_KV_CAPACITY)
            why = r;
        if (r != SV_WL_REJECT_NONE)
            continue;
        st->cand[n_cand] = i;
        st->inst_scratch[n_cand++] = router_view(st, i);
    }
    if (n_cand == 0 && n_serving > 0) {
        /* cand[] lists the serving instances for the message. */
        for (int32_t i = 0; i < st->n_inst; i++)
            if (st->cfg->cluster->instances[i].role != SV_MSG_ROLE_DECODE && serves(st, i, model))
                st->cand[n_cand++] = i;
        return reject(st, q, user, why, n_cand);
    }
    if (n_cand == 0) {
        run_fail(st, g_error_new(SV_PLANNER_ERROR, SV_PLANNER_ERROR_RUN,
                                 "request %" G_GUINT64_FORMAT
                                 ": no instance serves model '%s' (the trace names it)",
                                 q->request_id, model));
        return FALSE;
    }
    struct sv_planner_router_req rq = {
        .req = q, .model = model, .slo_ttft_ns = run_slo_ttft_ns(st->cfg)};
    int32_t k = st->router->route(st->router_state, &rq, n_cand, st->inst_scratch);
    if (k < 0 || k >= n_cand) {
        run_fail(st,
                 g_error_new(SV_PLANNER_ERROR, SV_PLANNER_ERROR_RUN,
                             "router '%s' sent request %" G_GUINT64_FORMAT " to candidate %d of %d",
                             router_label(st), q->request_id, k, n_cand));
        return FALSE;
    }
    int32_t inst = st->cand[k];
    sv_wl_reject r = checked && st->cfg->strict ? sv_planner__admissible(&st->admit, inst, q)
                                                : SV_WL_REJECT_NONE;
    if (r != SV_WL_REJECT_NONE) {
        st->cand[0] = inst;
        return reject(st, q, user, r, 1);
    }
    GError *e = NULL;
    if (!sv_msg_submit(st->msgs[inst], q, user, &e)) {
        run_fail(st, e);
        return FALSE;
    }
    st->submitted++;
    sv_engine_progress(st->eng);
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
        s->reqs = it->reqs;
        s->n_reqs = it->n_reqs;
        it->reqs = NULL;
        it->n_reqs = 0;
        st->res->sessions++;
        s->next = 1;
        s->model = it->model;
        it->model = NULL;
        g_hash_table_add(st->sessions, s);
        if (!submit(st, &s->reqs[0], s, s->model))
            return;
    } else {
        if (!submit(st, &it->reqs[0], NULL, it->model))
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
    sv_wl_req *q = &s->reqs[s->next - 1];
    q->arrival_ns = sv_engine_now(eng);
    submit(st, q, s, s->model);
}

static void on_req_done(void *ctx, const struct sv_wl_outcome *d, void *user)
{
    run_state *st = ctx;
    run_session *s = user;
    st->finished++;
    sv_engine_progress(st->eng);
    struct sv_planner_run_result *res = st->res;
    res->requests++;
    res->prompt_tokens += (uint64_t)d->input_tokens;
    res->output_tokens += (uint64_t)d->output_tokens;
    if (d->last_token_ns > res->makespan_ns)
        res->makespan_ns = d->last_token_ns;
    const struct sv_planner_run_observer *obs = st->cfg->observer;
    if (st->power)
        g_array_append_val(st->pending, *d); /* reported when its iteration's energy is in */
    else if (obs && obs->on_request)
        obs->on_request(obs->ctx, d);
    if (st->cfg->progress && st->cfg->progress_every > 0 &&
        st->finished % st->cfg->progress_every == 0 && st->tiers && st->cfg->progress_tiers) {
        struct sv_planner_tier_usage u;
        sv_planner_tiers_sample(st->tiers, sv_engine_now(st->eng), &u);
        st->cfg->progress_tiers(st->cfg->progress_ctx, &u);
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

/* Power: the requests that finished, with the energy attributed to them (their last iteration's
 * included), to the observer. */
static void flush_pending(run_state *st)
{
    const struct sv_planner_run_observer *obs = st->cfg->observer;
    for (guint k = 0; k < st->pending->len; k++) {
        struct sv_wl_outcome *d = &g_array_index(st->pending, struct sv_wl_outcome, k);
        d->energy_j = sv_planner_power_request_take(st->power, d->request_id);
        if (obs && obs->on_request)
            obs->on_request(obs->ctx, d);
    }
    g_array_set_size(st->pending, 0);
}

static void on_iter_start(void *ctx, int32_t instance, sv_time now,
                          const struct sv_msg_sched_entry *e, guint n)
{
    run_state *st = ctx;
    if (st->power)
        sv_planner_power_iter_start(st->power, instance, now, e, n);
    sv_planner__trace_iter_start(st->trace, instance, now, e, n);
}

static void on_iter_done(void *ctx, const struct sv_msg_iter_done *it)
{
    run_state *st = ctx;
    if (st->power) {
        if (it->n_prefill + it->n_decode > 0) { /* launches with requests only (msg.h) */
            if (it->pim_busy_ns > 0)
                sv_planner_power_iter_pim(st->power, it->instance, it->pim_busy_ns);
            sv_planner_power_iter_done(st->power, it->instance, it->end_ns);
        }
        flush_pending(st);
    }
    st->res->iterations++;
    /* A prompt token computed for the first time or an output token: a request moved (a
     * recomputation after a preemption credits nothing, msg/sched.c). */
    if (it->prompt_tokens > 0 || it->gen_tokens > 0)
        sv_engine_progress(st->eng);
    /* Recent iteration time and prefill throughput for the SLO-aware router: exponential
     * averages with weight 1/2 on the newest iteration (a choice: a few steps of memory). */
    sv_time dur = it->end_ns - it->start_ns;
    int32_t ii = it->instance;
    st->iter_ns[ii] = st->iter_ns[ii] > 0 ? (st->iter_ns[ii] + dur) / 2 : dur;
    if (it->prompt_tokens > 0 && dur > 0) {
        double t = (double)it->prompt_tokens / (double)dur;
        st->pf_tput[ii] = st->pf_tput[ii] > 0 ? 0.5 * (st->pf_tput[ii] + t) : t;
    }
    if (st->pd && st->cfg->cluster->instances[ii].role == SV_MSG_ROLE_DECODE)
        sv_planner_pd_decode_progress(st->pd, ii); /* blocks may have been freed */
    const struct sv_planner_run_observer *obs = st->cfg->observer;
    if (obs && obs->on_iteration)
        obs->on_iteration(obs->ctx, it);
    if (st->tiers && obs && obs->on_tiers) {
        struct sv_planner_tier_usage u;
        sv_planner_tiers_sample(st->tiers, it->end_ns, &u);
        obs->on_tiers(obs->ctx, it->end_ns, &u);
    }
}

static void on_prefill_done(void *ctx, int32_t instance, sv_msg_handoff *h)
{
    run_state *st = ctx;
    sv_planner_pd_prefill_done(st->pd, instance, h);
}

static void on_prefill_launch(void *ctx, int32_t instance, sv_msg_handoff *h,
                              const struct sv_msg_prefill_launch *l)
{
    run_state *st = ctx;
    sv_planner_pd_prefill_launch(st->pd, instance, h, l);
}

/* The decode choice of a handed-off request: the run's router policy over the decode candidates
 * (LLMServingSim's transfer_prefill_request uses the same policy), with its own state. */
static int32_t pick_decode(void *ctx, const struct sv_wl_outcome *info, const int32_t *cand,
                           int32_t n)
{
    run_state *st = ctx;
    for (int32_t k = 0; k < n; k++)
        st->inst_scratch[k] = router_view(st, cand[k]);
    /* The prompt's ids are gone by now (msg keeps none): the decode router sees the counts. */
    const sv_wl_req q = {.request_id = info->request_id,
                         .arrival_ns = info->arrival_ns,
                         .turn = info->turn,
                         .input_tokens = info->input_tokens,
                         .output_tokens = info->output_tokens};
    struct sv_planner_router_req rq = {.req = &q, .slo_ttft_ns = run_slo_ttft_ns(st->cfg)};
    return st->router->route(st->decode_router_state ? st->decode_router_state : st->router_state,
                             &rq, n, st->inst_scratch);
}

static void on_token(void *ctx, uint64_t request_id, int32_t instance, sv_time t, sv_time gap)
{
    run_state *st = ctx;
    const struct sv_planner_run_observer *obs = st->cfg->observer;
    if (obs && obs->on_token_gap)
        obs->on_token_gap(obs->ctx, request_id, t, gap);
}

/* ---- setup ---------------------------------------------------------------------------------- */

/* Disaggregation: any pd_type makes every prefill instance hand its requests to a decode
 * instance over the cluster network (pd.c). */
static gboolean setup_pd(run_state *st, GError **error)
{
    const struct sv_planner_cluster_cfg *cl = st->cfg->cluster;
    int n_prefill = 0, n_decode = 0;
    for (int32_t i = 0; i < st->n_inst; i++) {
        n_prefill += cl->instances[i].role == SV_MSG_ROLE_PREFILL;
        n_decode += cl->instances[i].role == SV_MSG_ROLE_DECODE;
    }
    if (n_prefill == 0 && n_decode == 0)
        return TRUE;
    if (n_decode == 0) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                    "pd_type: %d prefill instance(s) but no decode instance", n_prefill);
        return FALSE;
    }
    if (n_decode == st->n_inst) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                    "pd_type: only decode instances: no instance takes new requests");
        return FALSE;
    }
    sv_planner_pd_kv_mode mode = SV_PLANNER_PD_KV_WHOLE;
    const char *kv_transfer = run_kv_transfer(st->cfg);
    if (kv_transfer && !sv_planner_pd_kv_mode_parse(kv_transfer, &mode, error))
        return FALSE;
    sv_net *net = st->cnet ? sv_planner_cluster_net_net(st->cnet) : NULL;
    if (!net) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                    "pd_type: disaggregation needs a cluster network (more than one device)");
        return FALSE;
    }
    struct sv_planner_pd_instance *pi = g_new0(struct sv_planner_pd_instance, st->n_inst);
    for (int32_t i = 0; i < st->n_inst; i++) {
        const struct sv_planner_instance_cfg *ic = &cl->instances[i];
        pi[i] = (struct sv_planner_pd_instance){
            .msg = st->msgs[i],
            .role = ic->role,
            .model = ic->model_name,
            .tp = ic->tp_size,
            .pp = ic->pp_size,
            .num_layers = st->models[i].num_layers,
            /* All KV heads of a layer: the model's per-token KV at TP 1. */
            .kv_bytes_per_token_layer =
                sv_compute_model_kv_bytes_per_token_layer(&st->models[i], 1),
            .npus = st->npus[i],
            .max_model_len = st->max_model_len[i],
        };
    }
    struct sv_planner_pd_cfg pc = {
        .eng = st->eng,
        .net = net,
        .kv_mode = mode,
        .n_instances = st->n_inst,
        .inst = pi,
        .pick = pick_decode,
        .pick_ctx = st,
    };
    st->pd = sv_planner_pd_new(&pc, error);
    g_free(pi);
    if (!st->pd)
        return FALSE;
    if (st->router->create) {
        const char *rname = router_label(st);
        st->decode_router_state =
            st->router->create(st->n_inst, sv_registry_param(rname), st->router_rng, error);
        if (!st->decode_router_state)
            return FALSE;
    }
    return TRUE;
}

static gboolean setup_instance(run_state *st, int32_t i, int32_t first_device, GError **error)
{
    const struct sv_planner_run_cfg *cfg = st->cfg;
    const struct sv_planner_instance_cfg *ic = &cfg->cluster->instances[i];
    struct sv_compute_model_cfg m;
    if (!sv_planner__instance_model(cfg, ic, &m, error)) { /* with its dtype (quant.c) */
        g_prefix_error(error, "instance %d: ", i);
        return FALSE;
    }
    g_autofree char *latency_source = NULL;
    st->lats[i] = sv_planner__make_latency(cfg, ic, &m, &latency_source, error);
    if (!st->lats[i])
        return FALSE;
    double clock = sv_planner_apply_gpu_clock(cfg, ic, st->lats[i]); /* DVFS (docs/power.md) */
    if (cfg->observer && cfg->observer->on_instance)
        cfg->observer->on_instance(cfg->observer->ctx, i, latency_source);
    int64_t block_size =
        sv_planner__pick(cfg->block_size, ic->block_size, SV_MSG_DEFAULT_BLOCK_SIZE);
    /* KV capacity per rank (LLMServingSim memory_model.py, VALIDATION_NOTES item 5):
     * trunc(mem_size GiB x mem_util) - weights per rank, in blocks; every layer of this rank's
     * pipeline stage holds K and V per token. */
    struct sv_planner_placement_map map;
    if (!sv_planner_placement_resolve(ic, (int32_t)m.num_layers, &map, error))
        return FALSE;
    uint64_t blocks = 0; /* with stages: the stages' own (stages.c, below) */
    gboolean cap_ok =
        ic->n_stages > 0 || ic->afd.micro_batches > 0 || /* stages.c, afd.c */
        sv_planner_instance_kv_blocks(ic, &m, &map, (uint32_t)block_size, &blocks, error);
    if (!cap_ok) {
        sv_planner_placement_map_clear(&map);
        g_prefix_error(error, "instance %d (%s on %s): ", i, ic->model_name, ic->hardware);
        return FALSE;
    }
    if (blocks > UINT32_MAX)
        blocks = UINT32_MAX;
    /* Engine profile, batch limits and context length (planner/admit.c, docs/serving.md). */
    struct sv_planner__limits lim;
    if (!sv_planner__instance_limits(cfg, ic, &m, &lim, error)) {
        sv_planner_placement_map_clear(&map);
        return FALSE;
    }
    st->max_model_len[i] = lim.max_model_len;
    struct sv_msg_cfg mc = {
        .instance = i,
        .scheduler = cfg->scheduler,
        .host_model = cfg->host_model,
        .sched_ops = st->sched,
        .sched_param = st->sched_param,
        .engine = lim.engine,
        .frontend = cfg->frontend,
        .max_num_seqs = lim.max_num_seqs,
        .max_num_batched_tokens = lim.max_num_batched_tokens,
        .long_prefill_token_threshold = cfg->long_prefill_token_threshold < 0
                                            ? 0 /* no cap, whatever the config says */
                                            : sv_planner__pick(cfg->long_prefill_token_threshold,
                                                               ic->long_prefill_token_threshold, 0),
        .enable_chunked_prefill = lim.chunked_prefill,
        .reserve_full_isl = sv_planner__pick_bool(cfg->reserve_full_isl, ic->reserve_full_isl),
        .lat = st->lats[i],
        .first_device = first_device,
        .num_devices = ic->tp_size,
        .link_bw_gbps = cfg->cluster->link_bw_gbps,
        .link_latency_ns = sv_planner_cluster_link_latency_ns(cfg->cluster, 0),
        .tp_fold = st->tp_fold && st->tp_fold[i],
    };
    if (st->cnet) {
        /* Issue 4: collectives and stage transfers on the cluster network. */
        sv_planner_cluster_net *cn = st->cnet;
        int32_t dp_rank = 0;
        int32_t d = sv_planner_cluster_net_dp_index(cn, i, &dp_rank);
        mc.first_device = sv_planner_cluster_net_first_device(cn, i);
        mc.num_devices = ic->tp_size * ic->pp_size;
        mc.coll = sv_planner_cluster_net_coll(cn);
        mc.pp_size = ic->pp_size;
        mc.tp_group_base = sv_planner_cluster_net_tp_group(cn, i, 0);
        mc.ep_group = sv_planner_cluster_net_ep_group(cn, i);
        mc.ep_size = mc.ep_group > 0 ? ic->ep_size : 1;
        mc.ep_rank_base = sv_planner_cluster_net_ep_rank_base(cn, i);
        mc.moe_comm = st->moe_comm;
        mc.expert_route = st->eroute;
        mc.expert_route_param = st->eroute_param;
        mc.dp = d >= 0 ? st->dps[d] : NULL;
        mc.dp_rank = dp_rank;
    }
    if (st->et)
        sv_planner_et_instance(st->et, i, &mc);
    /* Heterogeneous stages (stages.c): a latency model per stage, KV blocks the stages' minimum.
     * Memory tiers (planner/tiers.c): routes, ledgers and the prefix hierarchy of this instance. */
    gboolean tiers_ok = sv_planner__stages_instance(st->stages, cfg, i, &m, &map,
                                                    (uint32_t)block_size, &blocks, &mc, error);
    tiers_ok =
        tiers_ok &&
        (!st->tiers || sv_planner_tiers_instance(st->tiers, i, &m, &map, mc.first_device,
                                                 (uint32_t)block_size, &blocks, &mc.tiers, error));
    sv_planner_placement_map_clear(&map);
    /* Attention/FFN disaggregation (afd.c): the attention devices' KV pool, the FFN side. */
    tiers_ok =
        tiers_ok && sv_planner__afd_instance(st->afd, cfg, i, &m, st->cnet, st->power != NULL,
                                             (uint32_t)block_size, &blocks, &mc, error);
    /* PIM attention offload / local weight loads (planner/pim.c): KV in PIM memory. */
    if (tiers_ok && st->pim)
        tiers_ok =
            sv_planner_pim_instance(st->pim, i, &m, (uint32_t)block_size, &blocks, &mc, error);
    if (tiers_ok) /* speculative decoding (spec.c): the draft's weights and KV in the pool */
        tiers_ok = sv_planner__spec_instance(st->spec, cfg, i, &m, (uint32_t)block_size, &blocks,
                                             &mc, error);
    if (!tiers_ok) {
        g_prefix_error(error, "instance %d: ", i);
        return FALSE;
    }
    gboolean caching = sv_planner__pick_bool(cfg->enable_prefix_caching, ic->enable_prefix_caching);
    st->kvs[i] = sv_memtier_kv_manager_new_with_eviction(
        (uint32_t)blocks, (uint32_t)block_size, caching, st->evict, st->evict_param, error);
    if (!st->kvs[i]) {
        g_prefix_error(error, "instance %d: ", i);
        return FALSE;
    }
    mc.kv = st->kvs[i];
    st->kv_tokens[i] =
        (uint64_t)sv_memtier_kv_manager_num_blocks(st->kvs[i]) * (uint64_t)block_size;
    sv_planner__report_kv(cfg, i, &m, sv_memtier_kv_manager_num_blocks(st->kvs[i]), &mc, &lim,
                          caching);
    if (st->tiers)
        sv_planner_tiers_set_kv(st->tiers, i, st->kvs[i]);
    /* 0 means unlimited in LLMServingSim's config. */
    if (mc.max_num_seqs == 0)
        mc.max_num_seqs = INT64_MAX;
    if (mc.max_num_batched_tokens == 0)
        mc.max_num_batched_tokens = INT64_MAX / 4;
    /* vLLM's CUDA-graph capture sizes follow these two (the analytic latency model's graphs). */
    sv_compute_latency_set_cudagraph(st->lats[i], mc.max_num_seqs, mc.max_num_batched_tokens);
    sv_planner__stages_cudagraph(st->stages, i, mc.max_num_seqs, mc.max_num_batched_tokens);
    sv_planner__spec_cudagraph(st->spec, i, mc.max_num_seqs, mc.max_num_batched_tokens);
    sv_planner__afd_cudagraph(st->afd, i, mc.max_num_seqs, mc.max_num_batched_tokens);
    struct sv_msg_hooks hooks = {
        .on_token = on_token,
        .on_req_done = on_req_done,
        .on_iter_done = on_iter_done,
        .on_prefill_done = on_prefill_done,
        .on_iter_start = st->power || st->trace ? on_iter_start : NULL,
        .ctx = st,
    };
    sv_planner__trace_msg_hooks(st->trace, &hooks); /* on_op: compute slices (trace.c) */
    sv_planner_pd_kv_mode kv_mode = SV_PLANNER_PD_KV_WHOLE;
    if (run_kv_transfer(cfg) && sv_planner_pd_kv_mode_parse(run_kv_transfer(cfg), &kv_mode, NULL) &&
        kv_mode == SV_PLANNER_PD_KV_PER_LAYER)
        hooks.on_prefill_launch = on_prefill_launch; /* setup_pd reports a bad name */
    mc.role = ic->role;
    st->models[i] = m;
    if (st->power) {
        /* DRAM traffic of one iteration: every rank's weights, and K and V of every layer for
         * each request's history (read) and new tokens (written) (docs/power.md). */
        uint64_t kv_tok = sv_compute_model_kv_bytes_per_token_layer(&m, 1) * (uint64_t)m.num_layers;
        sv_planner_power_set_traffic(
            st->power, i, sv_compute_model_weight_bytes(&m, ic->tp_size) * (uint64_t)ic->tp_size,
            kv_tok);
        sv_planner_power_afd(st->power, i, &m, &mc.afd); /* afd: FFN devices (docs/afd.md) */
        if (clock != 1.0)
            sv_planner_power_set_clock(st->power, i, clock);
    }
    st->npus[i] = g_new(int32_t, (size_t)ic->tp_size * (size_t)ic->pp_size);
    for (int32_t r = 0; r < ic->tp_size * ic->pp_size; r++)
        st->npus[i][r] = mc.first_device + r;
    st->pf_tput[i] = sv_planner__prefill_tput_estimate(st->lats[i], mc.max_num_batched_tokens);
    st->msgs[i] = sv_msg_new(st->eng, &mc, &hooks, error);
    return st->msgs[i] != NULL;
}

/* The cluster network (when the cluster has more than one device), data-parallel groups, and
 * the MoE policies. */
static gboolean setup_network(run_state *st, GError **error)
{
    const struct sv_planner_run_cfg *cfg = st->cfg;
    sv_net_model model = SV_NET_MODEL_FLOW;
    const char *nm = cfg->network_model               ? cfg->network_model
                     : cfg->cluster->network_model[0] ? cfg->cluster->network_model
                                                      : NULL;
    if (nm && !sv_net_model_parse(nm, &model, error))
        return FALSE;
    st->moe_comm = SV_MSG_MOE_ALLGATHER_RS;
    if (cfg->moe_comm && !sv_msg_moe_comm_parse(cfg->moe_comm, &st->moe_comm, error))
        return FALSE;
    const char *ername = cfg->expert_routing ? cfg->expert_routing : "balanced";
    st->eroute_param = sv_registry_param(ername);
    if (g_ascii_strncasecmp(ername, "hist", 4) == 0 && (ername[4] == ':' || !ername[4])) {
        st->eroute = sv_msg_expert_route_hist();
    } else {
        const sv_registry *reg = cfg->registry ? cfg->registry : st->own_registry;
        st->eroute = sv_registry_lookup(reg, SV_REGISTRY_EXPERT_ROUTE, ername, error);
        if (!st->eroute)
            return FALSE;
    }
    int32_t total = 0;
    for (int32_t i = 0; i < cfg->cluster->n_instances; i++)
        total += sv_planner_instance_devices(&cfg->cluster->instances[i]);
    gboolean any_dp = FALSE;
    for (int32_t i = 0; i < cfg->cluster->n_instances; i++)
        any_dp = any_dp || cfg->cluster->instances[i].dp_group[0] != '\0';
    if (total < 2 && !any_dp)
        return TRUE; /* one device: the single-device path, no network */
    st->cnet = sv_planner_cluster_net_new(st->eng, cfg->cluster, model, error);
    if (!st->cnet)
        return FALSE;
    if (cfg->collectives_with_messages && sv_planner_cluster_net_coll(st->cnet))
        sv_sys_set_fast_collectives(sv_planner_cluster_net_coll(st->cnet), FALSE);
    int32_t nd = sv_planner_cluster_net_num_dp(st->cnet);
    st->dps = g_new0(sv_msg_dp *, (size_t)MAX(nd, 1));
    for (int32_t d = 0; d < nd; d++)
        st->dps[d] = sv_msg_dp_new(sv_planner_cluster_net_dp_size(st->cnet, d));
    return TRUE;
}

/* Look the run's policies up by name (registry.c lists the known names on a miss). */
static gboolean resolve_policies(run_state *st, GError **error)
{
    const struct sv_planner_run_cfg *cfg = st->cfg;
    const sv_registry *reg = cfg->registry;
    if (!reg) {
        st->own_registry = sv_planner_registry_new(error);
        if (!st->own_registry)
            return FALSE;
        reg = st->own_registry;
    }
    const char *rname = cfg->router_name ? cfg->router_name : DEFAULT_ROUTER;
    const char *sname =
        cfg->scheduler_name ? cfg->scheduler_name : sv_msg_sched_name(cfg->scheduler);
    const char *ename = cfg->kv_eviction ? cfg->kv_eviction : "lru";
    st->router = sv_registry_lookup(reg, SV_REGISTRY_ROUTER, rname, error);
    if (!st->router)
        return FALSE;
    st->sched = sv_registry_lookup(reg, SV_REGISTRY_SCHED, sname, error);
    if (!st->sched)
        return FALSE;
    st->sched_param = sv_registry_param(sname);
    st->evict = sv_registry_lookup(reg, SV_REGISTRY_KV_EVICT, ename, error);
    if (!st->evict)
        return FALSE;
    st->evict_param = sv_registry_param(ename);
    if (st->router->create) {
        st->router_state =
            st->router->create(st->n_inst, sv_registry_param(rname), st->router_rng, error);
        if (!st->router_state) {
            g_prefix_error(error, "router '%s': ", rname);
            return FALSE;
        }
    }
    return TRUE;
}

/* What the serving group (msg) can use of the memory tiers: weight streaming (weights off the
 * NPU), lower-tier prefix hits (prefix_storage), swap preemption, live KV off the NPU (kv_loc)
 * and expert offloading: all of them now; what is left is checking the flags. */
gboolean sv_planner_run_check(const struct sv_planner_run_cfg *cfg, GError **error)
{
    struct sv_planner_tier_run t;
    if (!cfg->cluster)
        return TRUE; /* sv_planner_run reports it */
    if (!sv_planner_tier_flags_resolve(cfg->tier_flags, &cfg->cluster->tier_flags, &t, error))
        return FALSE;
    /* PIM offload: the switches' combinations and the device files (planner/pim.c). */
    GError *perr = NULL;
    sv_planner_pim_free(sv_planner_pim_new(cfg, &perr));
    if (perr) {
        g_propagate_error(error, perr);
        return FALSE;
    }
    /* Configurations vLLM refuses to start with (planner/admit.c); --speculative (spec.c);
     * afd's exclusions (afd.c). */
    return sv_planner__check_limits(cfg, error) && sv_planner__spec_flag_check(cfg, error) &&
           sv_planner__afd_check(cfg, error);
}

gboolean sv_planner_run_uses_tiers(const struct sv_planner_run_cfg *cfg)
{
    struct sv_planner_tier_run t;
    if (!cfg->cluster ||
        !sv_planner_tier_flags_resolve(cfg->tier_flags, &cfg->cluster->tier_flags, &t, NULL))
        return FALSE;
    return sv_planner_tiers_wanted(cfg->cluster, &t);
}

gboolean sv_planner_run(const struct sv_planner_run_cfg *cfg, struct sv_planner_run_result *res,
                        GError **error)
{
    memset(res, 0, sizeof *res);
    res->first_arrival_ns = -1;
    if (!cfg->cluster || cfg->cluster->n_instances < 1 || !cfg->workload) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                    "a run needs a cluster with at least one instance and a workload");
        return FALSE;
    }
    run_state st = {.trace = sv_planner__trace_new(cfg)}; /* NULL without cfg->trace */
    cfg = sv_planner__trace_cfg(st.trace, cfg);           /* its observer also feeds the timeline */
    st.cfg = cfg;
    st.res = res;
    st.eng = sv_engine_new(cfg->seed);
    st.n_inst = cfg->cluster->n_instances;
    st.msgs = g_new0(sv_msg *, st.n_inst);
    st.kvs = g_new0(sv_memtier_kv_manager *, st.n_inst);
    st.lats = g_new0(sv_compute_latency *, st.n_inst);
    st.stages = sv_planner__stages_new(st.n_inst);
    st.spec = sv_planner__spec_new(st.n_inst);
    st.afd = sv_planner__afd_new(st.n_inst);
    st.inst_scratch = g_new0(struct sv_planner_router_inst, st.n_inst);
    st.models = g_new0(struct sv_compute_model_cfg, st.n_inst);
    st.npus = g_new0(int32_t *, st.n_inst);
    st.cand = g_new0(int32_t, st.n_inst);
    st.pf_tput = g_new0(double, st.n_inst);
    st.iter_ns = g_new0(sv_time, st.n_inst);
    st.max_model_len = g_new0(int64_t, st.n_inst);
    st.kv_tokens = g_new0(uint64_t, st.n_inst);
    st.admit = (struct sv_planner__admit){.n = st.n_inst,
                                          .inst = cfg->cluster->instances,
                                          .max_model_len = st.max_model_len,
                                          .kv_tokens = st.kv_tokens};
    sv_engine_set_interrupt(st.eng, cfg->interrupt); /* a signal stops the run as an error does */
    st.router_rng = sv_rng_stream(st.eng, "router/random");
    sv_engine_set_watchdog(st.eng,
                           cfg->watchdog_events ? cfg->watchdog_events : SV_PLANNER_WATCHDOG_EVENTS,
                           watchdog_diag, &st);
    sv_engine_set_tick(st.eng, cfg->progress_tick_events, cfg->progress_tick, cfg->progress_ctx);
    st.sessions =
        g_hash_table_new_full(g_direct_hash, g_direct_equal, (GDestroyNotify)session_free, NULL);
    gboolean ok = resolve_policies(&st, error);
    /* Memory-tier flags: command line > cluster config > defaults (the one place). */
    if (ok)
        ok = sv_planner_run_check(cfg, error) &&
             sv_planner_tier_flags_resolve(cfg->tier_flags, &cfg->cluster->tier_flags, &st.tier_run,
                                           error);
    if (ok)
        ok = setup_network(&st, error);
    if (ok && cfg->cluster->power) {
        const struct sv_planner_run_observer *obs = cfg->observer;
        st.power = sv_planner_power_new(cfg->cluster, obs ? obs->on_power : NULL,
                                        obs ? obs->ctx : NULL, error);
        st.pending = g_array_new(FALSE, FALSE, sizeof(struct sv_wl_outcome));
        ok = st.power != NULL;
    }
    if (ok) {
        GError *perr = NULL;
        st.pim = sv_planner_pim_new(cfg, &perr);
        if (perr) {
            g_propagate_error(error, perr);
            ok = FALSE;
        }
        sv_planner_pim_power(st.pim, st.power);
    }
    if (ok && sv_planner_tiers_wanted(cfg->cluster, &st.tier_run)) {
        sv_net *net = st.cnet ? sv_planner_cluster_net_net(st.cnet) : NULL;
        st.tiers = sv_planner_tiers_new(st.eng, net, cfg->cluster, &st.tier_run, error);
        ok = st.tiers != NULL;
    }
    if (ok && st.power) /* link, switch, NIC, DRAM and storage traffic (docs/power.md) */
        sv_planner_power_watch(st.power, st.cnet ? sv_planner_cluster_net_net(st.cnet) : NULL,
                               st.tiers ? sv_planner_tiers_fabric(st.tiers) : NULL);
    if (ok && st.tiers && st.tier_run.prefix_pool == SV_PLANNER_POOL_CLUSTER) {
        /* The cluster pool routes remote hits through an NPU of each home node: every
         * instance's NPUs join the fabric before the first hierarchy is built. */
        int32_t dev = 0;
        for (int32_t i = 0; i < st.n_inst && ok; i++) {
            ok = sv_planner_tiers_npus(
                st.tiers, i, st.cnet ? sv_planner_cluster_net_first_device(st.cnet, i) : dev,
                error);
            dev += sv_planner_instance_devices(&cfg->cluster->instances[i]);
        }
    }
    if (ok && cfg->emit_et_dir) {
        st.et = sv_planner_et_new(cfg, st.cnet, st.tiers != NULL, error);
        ok = st.et != NULL;
    }
    /* Folded TP iterations where no other transfer shares the ring's links (tp_fold.c); not
     * with power (link energy per message) or memory tiers (their network legs). */
    if (ok && st.cnet && !cfg->per_layer_dag && !st.power && !st.tiers &&
        !sv_planner__afd_any(cfg->cluster))
        st.tp_fold = sv_planner_tp_fold_plan(cfg->cluster, st.cnet);
    int32_t device = 0;
    for (int32_t i = 0; i < st.n_inst && ok; i++) {
        ok = setup_instance(&st, i, device, error);
        device += sv_planner_instance_devices(&cfg->cluster->instances[i]);
    }
    if (ok)
        ok = setup_pd(&st, error);
    if (ok && st.pd && st.et)
        sv_planner_pd_set_et(st.pd, sv_planner_et_out(st.et));
    sv_planner__pd_set_trace(st.pd, st.trace); /* KV transfers on the timeline */
    sv_planner__trace_links(st.trace, st.cnet, st.tiers ? sv_planner_tiers_fabric(st.tiers) : NULL);
    if (ok) {
        res->started = TRUE;
        pump(&st);
        sv_engine_run(st.eng, SV_TIME_MAX);
        res->end_ns = sv_engine_now(st.eng);
        if (!st.error && sv_engine_error(st.eng))
            st.error = g_error_copy(sv_engine_error(st.eng));
        for (int32_t i = 0; i < st.n_inst && !st.error; i++) {
            const GError *me = sv_msg_error(st.msgs[i]);
            if (me)
                st.error = g_error_copy(me);
        }
        if (!st.error && sv_planner_pd_error(st.pd))
            st.error = g_error_copy(sv_planner_pd_error(st.pd));
        struct sv_planner__requests rq = {.arrived = st.submitted + requests_rejected(&st),
                                          .finished = st.finished,
                                          .rejected = requests_rejected(&st),
                                          .held = st.error ? 0 : requests_held(&st)};
        if (st.error) {
            g_propagate_error(error, st.error);
            st.error = NULL;
            ok = FALSE;
        } else if (!sv_planner__check_requests(&rq, error)) {
            ok = FALSE;
        } else if (st.finished != st.submitted || st.have_item) {
            g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_RUN,
                        "the simulation stalled: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                        " requests finished",
                        st.finished, st.submitted);
            ok = FALSE;
        } else if (!sv_planner__check_bytes(st.cnet ? sv_planner_cluster_net_net(st.cnet) : NULL,
                                            st.tiers ? sv_planner_tiers_fabric(st.tiers) : NULL,
                                            error)) {
            ok = FALSE;
        } else if (st.et && !sv_planner_et_finish(st.et, error)) {
            ok = FALSE;
        } else if (cfg->idle_tail_ns > 0) {
            /* The cluster idles on after the last event: energy and power.csv run on (standby
             * windows end, idle draw continues); requests and time series are complete. */
            res->end_ns += cfg->idle_tail_ns;
        }
    }
    for (int32_t i = 0; i < st.n_inst; i++) {
        if (st.kvs[i]) {
            struct sv_memtier_kv_stats ks;
            sv_memtier_kv_manager_get_stats(st.kvs[i], &ks);
            res->prefix_requested_tokens += ks.requested_tokens;
            res->prefix_hit_tokens += ks.hit_tokens;
        }
        if (st.msgs[i]) {
            res->preemptions += sv_msg_num_preemptions(st.msgs[i]);
            res->folded_iterations += sv_msg_num_folded(st.msgs[i]);
        }
    }
    res->bad_lines = sv_wl_source_bad_lines(cfg->workload);
    if (st.kvs[0])
        res->kv_blocks = sv_memtier_kv_manager_num_blocks(st.kvs[0]);
    if (st.pd) {
        struct sv_planner_pd_stats ps;
        sv_planner_pd_get_stats(st.pd, &ps);
        res->kv_handoffs = ps.handoffs;
        res->kv_bytes = ps.bytes;
        res->kv_waits = ps.kv_waits;
        res->kv_wait_ns = ps.kv_wait_ns;
        res->kv_transfer_ns = ps.transfer_ns;
    }
    res->submitted = st.submitted;
    res->arrived = st.arrived;
    for (int32_t n = 0; st.pim && n < cfg->cluster->n_nodes; n++)
        res->pim_channels += sv_planner_pim_channels(st.pim, n);
    for (int32_t i = 0; st.pim && res->pim_channels > 0 && i < st.n_inst; i++) {
        if (!st.msgs[i])
            continue;
        struct sv_msg_pim_stats ps;
        sv_msg_pim_stats(st.msgs[i], &ps);
        res->has_pim = TRUE;
        res->pim.iterations += ps.iterations;
        res->pim.sub_batched += ps.sub_batched;
        res->pim.busy_ns += ps.busy_ns;
        res->pim.slowest_ns += ps.slowest_ns;
        res->pim.xfer_bytes += ps.xfer_bytes;
        res->pim.decode_tokens += ps.decode_tokens;
    }
    if (st.power) {
        flush_pending(&st);
        res->has_power = TRUE;
        sv_planner_power_finish(st.power, res->end_ns, &res->energy);
        sv_planner_power_free(st.power);
    }
    if (st.pending)
        g_array_free(st.pending, TRUE);
    if (st.tiers) {
        res->has_tiers = TRUE;
        sv_planner_tiers_get_stats(st.tiers, res->end_ns, &res->tiers);
        res->tiers.swap = st.tier_run.preempt_swap;
        for (int32_t i = 0; i < st.n_inst; i++) {
            if (!st.msgs[i])
                continue;
            struct sv_msg_tier_stats ms;
            sv_msg_get_tier_stats(st.msgs[i], &ms);
            sv_planner__tier_stats_add(&res->tiers.msg, &ms);
            res->tiers.expert_cache |= cfg->cluster->instances[i].expert_offload;
        }
    }
    sv_planner__spec_report(st.spec, st.msgs, cfg->observer);
    sv_planner_pd_free(st.pd); /* before the msgs: their held handoffs go with them */
    for (int32_t i = 0; i < st.n_inst; i++) {
        g_free(st.npus[i]);
        sv_msg_free(st.msgs[i]);
        sv_memtier_kv_manager_free(st.kvs[i]);
        sv_compute_latency_free(st.lats[i]);
    }
    sv_planner__stages_free(st.stages);
    sv_planner__spec_free(st.spec);
    sv_planner__afd_free(st.afd);
    if (st.cnet) {
        for (int32_t d = 0; d < sv_planner_cluster_net_num_dp(st.cnet); d++)
            sv_msg_dp_free(st.dps[d]);
    }
    g_free(st.dps);
    sv_planner_tiers_free(st.tiers); /* after the msgs (they borrow it), before the network */
    sv_planner_pim_free(st.pim);     /* after the msgs (they borrow its devices) */
    sv_planner_et_free(st.et);       /* after the msgs and the PD hand-off (they borrow it) */
    if (st.cnet && sv_planner_cluster_net_net(st.cnet)) {
        struct sv_net_stats ns;
        sv_net_get_stats(sv_planner_cluster_net_net(st.cnet), &ns);
        res->net_messages = ns.messages;
        res->net_bytes = ns.bytes_sent;
    }
    sv_planner_cluster_net_free(st.cnet);
    sv_wl_item_clear(&st.item);
    sv_engine_free(st.eng);
    st.eng = NULL;
    g_hash_table_destroy(st.sessions);
    g_free(st.msgs);
    g_free(st.kvs);
    g_free(st.lats);
    g_free(st.inst_scratch);
    g_free(st.models);
    g_free(st.npus);
    g_free(st.cand);
    g_free(st.pf_tput);
    g_free(st.iter_ns);
    g_free(st.max_model_len);
    g_free(st.kv_tokens);
    g_free(st.tp_fold);
    if (st.router && st.router->destroy && st.router_state)
        st.router->destroy(st.router_state);
    if (st.router && st.router->destroy && st.decode_router_state)
        st.router->destroy(st.decode_router_state);
    sv_registry_free(st.own_registry);
    sv_planner__trace_free(st.trace);
    return ok;
}
