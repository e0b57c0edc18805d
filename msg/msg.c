/* Serving group lifecycle and the engine-driven iteration loop.
 *
 * Loop (LLMServingSim serving/__main__.py, vLLM's EngineCore busy loop): an idle group schedules a
 * step when a request arrives; a busy one schedules the next step when the host has committed a
 * step (its output processed), after the requests that arrived by then have been queued (arrival
 * events run at a lower priority number than steps and commits). The host commits a step
 * sv_msg_host_step_ns after its GPU part ends, or after the previous commit if that is later (one
 * host thread). Up to queue_cap steps are scheduled and not yet committed (msg/engine.c): with 1
 * (synchronous engines) the GPU waits for the host between steps; with 2 (async scheduling) the
 * next step was scheduled before the previous one ran, and its GPU part starts when the GPU frees
 * while the host commits the previous step. The single-device path keeps its batches here; the
 * parallel path (opmap.c) keeps its own, under the same cap. */
#include "msg/msg_internal.h"

#include <errno.h>
#include <string.h>

/* Same-instant ordering: arrivals (planner, SV_PRIO_MIN..-1) < executor replay events (0) <
 * requests reaching the engine through the frontend < a batch's GPU launch < iteration commit < a
 * step started by an arrival. */
#define MSG_PRIO_ARRIVE 1
#define MSG_PRIO_LAUNCH 2
#define MSG_PRIO_COMMIT 4
#define MSG_PRIO_STEP 8

GQuark sv_msg_error_quark(void)
{
    return g_quark_from_static_string("servesim-msg-error-quark");
}

static const char *const sched_names[] = {"vllm", "static", "dynamic"};

gboolean sv_msg_sched_parse(const char *name, sv_msg_sched_kind *out, GError **error)
{
    for (int i = 0; i < (int)G_N_ELEMENTS(sched_names); i++) {
        if (g_ascii_strcasecmp(name, sched_names[i]) == 0) {
            *out = (sv_msg_sched_kind)i;
            return TRUE;
        }
    }
    g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                "unknown scheduler '%s' (known: vllm, static, dynamic)", name);
    return FALSE;
}

const char *sv_msg_sched_name(sv_msg_sched_kind kind)
{
    return (unsigned)kind < G_N_ELEMENTS(sched_names) ? sched_names[kind] : "?";
}

sv_msg *sv_msg_new(sv_engine *eng, const struct sv_msg_cfg *cfg, const struct sv_msg_hooks *hooks,
                   GError **error)
{
    if (cfg->max_num_seqs <= 0 || cfg->max_num_batched_tokens <= 0) {
        g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                    "instance %d: max_num_seqs and max_num_batched_tokens must be positive",
                    cfg->instance);
        return NULL;
    }
    if (cfg->long_prefill_token_threshold < 0 || cfg->num_devices < 1 || !cfg->kv ||
        (!cfg->lat && !cfg->manual)) {
        g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                    "instance %d: invalid serving group configuration", cfg->instance);
        return NULL;
    }
    /* The batch scheduler policy: a registry table, or the built-in of cfg->scheduler. */
    const struct sv_msg_sched_ops *sched =
        cfg->sched_ops ? cfg->sched_ops : sv_msg_sched_builtin(cfg->scheduler);
    struct sv_msg_limits limits = {
        .max_num_seqs = cfg->max_num_seqs,
        .max_num_batched_tokens = cfg->max_num_batched_tokens,
        .long_prefill_token_threshold = cfg->long_prefill_token_threshold,
        .enable_chunked_prefill = cfg->enable_chunked_prefill,
        .reserve_full_isl = cfg->reserve_full_isl,
    };
    void *sched_state = NULL;
    if (sched->create) {
        sched_state = sched->create(cfg->instance, &limits, cfg->sched_param, error);
        if (!sched_state) {
            g_prefix_error(error, "instance %d: ", cfg->instance);
            return NULL;
        }
    }
    sv_msg *m = g_new0(sv_msg, 1);
    m->eng = eng;
    m->cfg = *cfg;
    m->cfg.sched_param = NULL; /* borrowed for create only */
    m->sched = sched;
    m->sched_state = sched_state;
    m->limits = limits;
    m->et = cfg->et_out;
    m->et_unit = g_strdup(cfg->et_unit);
    m->cfg.et_unit = m->et_unit;
    g_queue_init(&m->et_pieces);
    if (hooks)
        m->hooks = *hooks;
    g_queue_init(&m->waiting);
    g_queue_init(&m->batches);
    g_queue_init(&m->spare_batches);
    g_queue_init(&m->arriving);
    /* Engine profile (msg/engine.c). Swap preemption is vLLM v0's, which has no async
     * scheduling; the manual test drive commits each step before the next. */
    int32_t pp = cfg->pp_size > 1 ? cfg->pp_size : 1;
    gboolean async =
        sv_msg_engine_async(cfg->engine) && !cfg->manual && !cfg->tiers.preemption_swap;
    if (cfg->afd.group)
        async = FALSE; /* a shared FFN group's members step in waves (afd_group.c) */
    if (cfg->spec && cfg->role != SV_MSG_ROLE_PREFILL)
        async = FALSE; /* speculative decoding schedules synchronously (msg/spec.c); a prefill
                        * instance never speculates */
    m->placeholders = async && pp == 1;
    m->queue_cap = pp > 1 ? pp : async ? 2 : 1;
    m->detached = g_hash_table_new_full(g_direct_hash, g_direct_equal,
                                        (GDestroyNotify)sv_msg__req_free, NULL);
    m->running = g_ptr_array_new();
    m->inflight = g_array_new(FALSE, FALSE, sizeof(msg_slot));
    m->start_entries = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_sched_entry));
    m->pf_chunk = g_array_new(FALSE, FALSE, sizeof(int64_t));
    m->pf_hist = g_array_new(FALSE, FALSE, sizeof(int64_t));
    m->dec_kv = g_array_new(FALSE, FALSE, sizeof(int64_t));
    /* Parallel path (opmap.c) and data-parallel membership (parallel.c). */
    if (!sv_msg__tiers_init(m, error) || !sv_msg__pim_init(m, error) ||
        !(cfg->afd.micro_batches > 0 ? sv_msg__afd_init(m, error) : sv_msg__par_init(m, error)) ||
        (m->cfg.dp && !sv_msg__dp_join(m, error)) || !sv_msg__spec_check(m, error)) {
        sv_msg_free(m);
        return NULL;
    }
    return m;
}

void sv_msg_free(sv_msg *m)
{
    if (!m)
        return;
    sv_msg__dp_leave(m);
    sv_msg__par_free(m);
    sv_msg__afd_free(m);
    sv_dag_exec_free(m->exec);
    sv_dag_free(m->dag);
    /* A request sits in exactly one of waiting / running. */
    msg_req *r;
    while ((r = g_queue_pop_head(&m->waiting)))
        sv_msg__req_free(r);
    while ((r = g_queue_pop_head(&m->arriving)))
        sv_msg__req_free(r);
    msg_batch *b;
    while ((b = g_queue_pop_head(&m->batches)) || (b = g_queue_pop_head(&m->spare_batches))) {
        g_array_free(b->slots, TRUE);
        g_free(b);
    }
    for (guint i = 0; i < m->running->len; i++)
        sv_msg__req_free(g_ptr_array_index(m->running, i));
    g_ptr_array_free(m->running, TRUE);
    if (m->detached)
        g_hash_table_destroy(m->detached); /* frees the held PD handoffs */
    g_array_free(m->inflight, TRUE);
    g_array_free(m->start_entries, TRUE);
    g_array_free(m->pf_chunk, TRUE);
    g_array_free(m->pf_hist, TRUE);
    g_array_free(m->dec_kv, TRUE);
    g_clear_error(&m->error);
    if (m->sched->destroy)
        m->sched->destroy(m->sched_state);
    sv_msg__et_free(m);
    g_free(m->et_unit);
    sv_msg__tiers_free(m);
    sv_msg__pim_free(m);
    g_free(m);
}

static void fail(sv_msg *m, GError *err)
{
    if (!m->error)
        m->error = err;
    else
        g_error_free(err);
    sv_engine_stop(m->eng);
}

/* Batches launched and not yet committed (the NOFIT diagnosis must not fire while one may still
 * free blocks or finish a request). */
static uint32_t in_flight(const sv_msg *m)
{
    return m->par ? sv_msg__par_in_flight(m) : m->batches.length;
}

static void launch_event(sv_engine *eng, void *ctx, uint64_t arg);

/* Single-device path: start the oldest scheduled batch on the GPU (its DAG is built now, when
 * the GPU frees, so hooks and estimates see the real start). */
static void launch_next(sv_msg *m)
{
    msg_batch *b = NULL;
    for (GList *l = m->batches.head; l; l = l->next) {
        msg_batch *x = l->data;
        if (x->launched && !x->gpu_done)
            return; /* the GPU is busy */
        if (!x->launched) {
            b = x;
            break;
        }
    }
    if (!b)
        return;
    GArray *t = m->inflight;
    m->inflight = b->slots;
    b->slots = t;
    b->launched = TRUE;
    b->start_ns = m->iter_start_ns = sv_engine_now(m->eng);
    GError *err = NULL;
    if (!sv_msg__launch(m, &err))
        fail(m, err);
    else if (m->cfg.role == SV_MSG_ROLE_PREFILL && m->hooks.on_prefill_launch)
        sv_msg__pd_launched(m);
    sv_msg__pim_iter_stats(m, &b->pim_busy_ns, &b->pim_xfer_bytes);
    t = m->inflight;
    m->inflight = b->slots;
    b->slots = t;
}

static void launch_event(sv_engine *eng, void *ctx, uint64_t arg)
{
    sv_msg *m = ctx;
    if (!m->error)
        launch_next(m);
}

static void commit_event(sv_engine *eng, void *ctx, uint64_t arg);

/* Single-device path: the host takes the oldest batch once its GPU part is done, one at a time. */
static void maybe_commit(sv_msg *m)
{
    msg_batch *h = g_queue_peek_head(&m->batches);
    if (!h || !h->gpu_done || m->commit_due)
        return;
    m->commit_due = TRUE;
    sv_time host = sv_msg_host_step_ns(m->cfg.host_model, h->slots->len);
    sv_engine_schedule_in(m->eng, host, MSG_PRIO_COMMIT, commit_event, m, 0);
}

static void step(sv_msg *m)
{
    m->step_pending = FALSE;
    if (m->busy || m->error)
        return;
    sv_msg__schedule(m);
    if (m->inflight->len == 0 && m->running->len == 0 && !g_queue_is_empty(&m->waiting) &&
        sv_msg__pd_unpin_waiting(m))
        sv_msg__schedule(m); /* PD: blocks held by queued requests had blocked the head */
    if (m->inflight->len == 0 && m->running->len == 0 && sv_msg_num_swapped(m) > 0)
        sv_msg__schedule(m); /* swap: the step that swapped the last one out cannot swap in */
    if (m->cfg.dp) {
        sv_msg__dp_step(m); /* the wave starts when every member has scheduled */
        return;
    }
    if (m->cfg.afd.group) {
        sv_msg__afd_group_step(m); /* a shared FFN group's wave (afd_group.c) */
        return;
    }
    if (m->inflight->len == 0) {
        /* Blocks held by handed-off requests (PD) come back when their KV has left; a batch in
         * flight (async scheduling) may still free blocks. */
        if (!g_queue_is_empty(&m->waiting) && m->running->len == 0 &&
            g_hash_table_size(m->detached) == 0 && in_flight(m) == 0) {
            msg_req *r = g_queue_peek_head(&m->waiting);
            fail(m, g_error_new(SV_MSG_ERROR, SV_MSG_ERROR_NOFIT,
                                "instance %d: request %" G_GUINT64_FORMAT
                                " cannot be scheduled in an empty engine (%" G_GINT64_FORMAT
                                " tokens, %u KV blocks of %u tokens)",
                                m->cfg.instance, r->out.request_id, r->num_reached,
                                sv_memtier_kv_manager_num_blocks(m->cfg.kv),
                                sv_memtier_kv_manager_block_size(m->cfg.kv)));
        }
        return;
    }
    if (m->par) {
        m->busy = TRUE;
        m->iter_start_ns = sv_engine_now(m->eng);
        GError *err = NULL;
        if (!sv_msg__launch(m, &err)) /* par_launch sets busy by queue_cap */
            fail(m, err);
        else if (m->cfg.role == SV_MSG_ROLE_PREFILL && m->hooks.on_prefill_launch)
            sv_msg__pd_launched(m);
        return;
    }
    sv_msg__single_launch(m);
}

void sv_msg__single_launch(sv_msg *m)
{
    /* Batch records are recycled: no allocation per step. */
    msg_batch *b = g_queue_pop_head(&m->spare_batches);
    if (!b) {
        b = g_new0(msg_batch, 1);
        b->slots = g_array_new(FALSE, FALSE, sizeof(msg_slot));
    }
    GArray *empty = b->slots;
    *b = (msg_batch){.slots = m->inflight};
    m->inflight = empty;
    g_queue_push_tail(&m->batches, b);
    m->busy = (int32_t)m->batches.length >= m->queue_cap;
    launch_next(m);
    /* Room in the queue (async scheduling): vLLM's loop schedules the next batch at once,
     * without waiting for this one's output; running requests continue on placeholders. */
    if (!m->busy)
        sv_msg__kick(m);
}

static void step_event(sv_engine *eng, void *ctx, uint64_t arg)
{
    step(ctx);
}

static void commit_event(sv_engine *eng, void *ctx, uint64_t arg)
{
    sv_msg *m = ctx;
    if (m->par) {
        sv_msg__par_commit(m); /* the oldest finished batch (pipeline: several in flight) */
        step(m);
        return;
    }
    m->commit_due = FALSE;
    msg_batch *b = g_queue_pop_head(&m->batches);
    SV_ASSERT(b && b->gpu_done && m->inflight->len == 0);
    GArray *t = m->inflight;
    m->inflight = b->slots;
    b->slots = t;
    m->iter_start_ns = b->start_ns;
    sv_msg__commit_iter(m, sv_engine_now(eng), b->pim_busy_ns, b->pim_xfer_bytes);
    g_queue_push_tail(&m->spare_batches, b); /* its slots: the emptied array of before */
    m->busy = (int32_t)m->batches.length >= m->queue_cap;
    step(m);
    maybe_commit(m);
}

void sv_msg__iter_finished(sv_msg *m)
{
    /* Called inside the executor: the next batch starts, and the host commits this one, from
     * fresh events (a launch may recycle the DAG and its executor). */
    for (GList *l = m->batches.head; l; l = l->next) {
        msg_batch *x = l->data;
        if (x->launched && !x->gpu_done) {
            x->gpu_done = TRUE;
            if (l->next)
                sv_engine_schedule_in(m->eng, 0, MSG_PRIO_LAUNCH, launch_event, m, 0);
            break;
        }
    }
    maybe_commit(m);
}

void sv_msg__fail(sv_msg *m, GError *err)
{
    fail(m, err);
}

void sv_msg__kick(sv_msg *m)
{
    if (!m->cfg.manual && !m->busy && !m->step_pending && !m->error) {
        m->step_pending = TRUE;
        sv_engine_schedule_in(m->eng, 0, MSG_PRIO_STEP, step_event, m, 0);
    }
}

void sv_msg__schedule_commit(sv_msg *m, sv_time delay)
{
    sv_engine_schedule_in(m->eng, delay, MSG_PRIO_COMMIT, commit_event, m, 0);
}

uint32_t sv_msg_schedule_step(sv_msg *m, GArray *out)
{
    uint32_t n = sv_msg__schedule(m);
    m->busy = m->inflight->len > 0;
    m->iter_start_ns = sv_engine_now(m->eng);
    if (out) {
        for (guint i = 0; i < m->inflight->len; i++) {
            const msg_slot *s = &g_array_index(m->inflight, msg_slot, i);
            struct sv_msg_sched_entry e = {s->req->out.request_id, s->num_new, s->computed_before};
            g_array_append_val(out, e);
        }
    }
    return n;
}

void sv_msg_commit(sv_msg *m, sv_time finish_ns)
{
    double busy = 0;
    uint64_t xfer = 0;
    sv_msg__pim_iter_stats(m, &busy, &xfer); /* pp 1: one in flight */
    sv_msg__commit_iter(m, finish_ns, busy, xfer);
}

void sv_msg__commit_iter(sv_msg *m, sv_time finish_ns, double pim_busy_ns, uint64_t pim_xfer_bytes)
{
    struct sv_msg_iter_done it = {
        .instance = m->cfg.instance,
        .iteration = m->iterations,
        .start_ns = m->iter_start_ns,
        .end_ns = finish_ns,
    };
    for (guint i = 0; i < m->inflight->len; i++) {
        const msg_slot *s = &g_array_index(m->inflight, msg_slot, i);
        it.scheduled_tokens += s->num_new;
        if (s->num_new > 1)
            it.n_prefill++;
        else
            it.n_decode++;
    }
    sv_msg__commit(m, finish_ns, &it.prompt_tokens, &it.gen_tokens);
    m->busy = FALSE;
    m->iterations++;
    it.running = m->running->len;
    it.waiting = sv_msg_num_waiting(m); /* swapped-out requests wait too */
    it.kv_usage = sv_memtier_kv_manager_usage(m->cfg.kv);
    it.pim_busy_ns = pim_busy_ns;
    it.pim_xfer_bytes = pim_xfer_bytes;
    if (m->hooks.on_iter_done)
        m->hooks.on_iter_done(m->hooks.ctx, &it);
}

/* A request reaches the engine: queued, and seen by the next step the group schedules (now if
 * it is idle, after every event already scheduled for this instant at lower priority, so
 * simultaneous arrivals join the same step). */
static void enqueue(sv_msg *m, msg_req *r)
{
    g_queue_push_tail(&m->waiting, r);
    m->waiting_tokens += r->num_reached;
    if (!m->cfg.manual && !m->busy && !m->step_pending) {
        m->step_pending = TRUE;
        sv_engine_schedule_in(m->eng, 0, MSG_PRIO_STEP, step_event, m, 0);
    }
}

static void arrive_event(sv_engine *eng, void *ctx, uint64_t arg)
{
    sv_msg *m = ctx;
    msg_req *r = g_queue_pop_head(&m->arriving);
    SV_ASSERT(r != NULL);
    enqueue(m, r);
}

gboolean sv_msg_submit(sv_msg *m, const sv_wl_req *q, void *user, GError **error)
{
    uint32_t bs = sv_memtier_kv_manager_block_size(m->cfg.kv);
    int64_t total = q->input_tokens + q->output_tokens;
    if (q->input_tokens < 1 || q->output_tokens < 1) {
        g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                    "request %" G_GUINT64_FORMAT ": input and output tokens must be >= 1",
                    q->request_id);
        return FALSE;
    }
    /* A request whose whole sequence exceeds the pool could never finish, even alone. */
    if ((uint64_t)((total + bs - 1) / bs) > sv_memtier_kv_manager_num_blocks(m->cfg.kv)) {
        g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_NOFIT,
                    "request %" G_GUINT64_FORMAT ": %" G_GINT64_FORMAT
                    " tokens need more than the %u KV blocks of instance %d",
                    q->request_id, total, sv_memtier_kv_manager_num_blocks(m->cfg.kv),
                    m->cfg.instance);
        return FALSE;
    }
    struct sv_memtier_kv_seq_cfg sc = {
        .prompt_tokens = (uint64_t)q->input_tokens,
        .prompt_ids = q->input_tok_ids,
        .num_prompt_ids = q->n_input_tok_ids,
        .output_ids = q->output_tok_ids,
        .num_output_ids = q->n_output_tok_ids,
        .hash_ids = q->hash_ids,
        .num_hash_ids = q->n_hash_ids,
        .hash_block_tokens = (uint32_t)q->hash_block_tokens,
    };
    sv_memtier_kv_seq *seq = sv_memtier_kv_seq_new(m->cfg.kv, &sc, error);
    if (!seq)
        return FALSE;
    msg_req *r = g_new0(msg_req, 1);
    r->out = (struct sv_wl_outcome){
        .request_id = q->request_id,
        .instance = m->cfg.instance,
        .turn = q->turn,
        .arrival_ns = q->arrival_ns,
        .first_scheduled_ns = -1,
        .first_token_ns = -1,
        .last_token_ns = -1,
        .prefill_instance = -1,
        .prefill_done_ns = -1,
        .kv_ready_ns = -1,
        .input_tokens = q->input_tokens,
        .output_tokens = q->output_tokens,
    };
    r->total = total;
    r->num_reached = q->input_tokens;
    r->is_init = TRUE;
    r->seq = seq;
    r->user = user;
    sv_msg__spec_req_init(m, r);
    if (m->cfg.frontend.in_ns > 0 && !m->cfg.manual) {
        /* Through the API server first (a constant delay: the queue stays in arrival order). */
        g_queue_push_tail(&m->arriving, r);
        sv_engine_schedule_in(m->eng, m->cfg.frontend.in_ns, MSG_PRIO_ARRIVE, arrive_event, m, 0);
        return TRUE;
    }
    enqueue(m, r);
    return TRUE;
}

uint32_t sv_msg_num_running(const sv_msg *m)
{
    return m->running->len;
}

uint32_t sv_msg_num_waiting(const sv_msg *m)
{
    return m->waiting.length + sv_msg_num_swapped(m);
}

uint32_t sv_msg_num_held(const sv_msg *m)
{
    uint32_t n = m->arriving.length + m->waiting.length + sv_msg_num_swapped(m) + m->running->len;
    if (m->cfg.role == SV_MSG_ROLE_DECODE)
        n += g_hash_table_size(m->detached);
    return n;
}

gboolean sv_msg_idle(const sv_msg *m)
{
    return !m->busy && m->running->len == 0 && m->waiting.length == 0 &&
           sv_msg_num_swapped(m) == 0 && m->batches.length == 0 && m->arriving.length == 0;
}

int64_t sv_msg_waiting_tokens(const sv_msg *m)
{
    return m->waiting_tokens;
}

uint64_t sv_msg_num_preemptions(const sv_msg *m)
{
    return m->preemptions;
}

sv_memtier_kv_manager *sv_msg_kv(const sv_msg *m)
{
    return m->cfg.kv;
}

const GError *sv_msg_error(const sv_msg *m)
{
    return m->error;
}

/* ---- prefill/decode disaggregation (docs/disaggregation.md) --------------------------------- */

/* A DECODE group queues requests whose transferred KV holds blocks. When nothing runs and the
 * head cannot be admitted (a preempted request needing more blocks than are free), those queued
 * holders would wait forever behind it: drop their KV (recompute, as a preemption does). */
gboolean sv_msg__pd_unpin_waiting(sv_msg *m)
{
    gboolean any = FALSE;
    for (GList *l = m->waiting.head; l; l = l->next) {
        msg_req *r = l->data;
        if (r->num_computed == 0)
            continue;
        sv_memtier_kv_manager_preempt_seq(m->cfg.kv, r->seq);
        m->waiting_tokens += r->num_computed;
        r->num_computed = 0;
        r->out.preemptions++;
        m->preemptions++;
        any = TRUE;
    }
    return any;
}

/* The iteration just launched: announce the prompts it completes (per-layer KV transfer starts
 * while it runs). The batch shape is the one sv_msg__launch built (m->pf_chunk, pf_hist,
 * dec_kv); the estimate is the latency model's, as opmap.c prices the iteration. */
void sv_msg__pd_launched(sv_msg *m)
{
    struct sv_msg_prefill_launch l = {.start_ns = m->iter_start_ns};
    gboolean have = FALSE;
    for (guint i = 0; i < m->inflight->len; i++) {
        msg_req *r = g_array_index(m->inflight, msg_slot, i).req;
        /* Handed off at commit: the prompt completes here (every request, a one-token one
         * included: the decode instance produces the client's tokens). */
        if (!r->is_init || r->num_computed < r->out.input_tokens)
            continue;
        if (!have) {
            struct sv_compute_batch_shape shape;
            sv_compute_batch_shape_init(&shape, (const int64_t *)(void *)m->pf_chunk->data,
                                        (const int64_t *)(void *)m->pf_hist->data, m->pf_chunk->len,
                                        (const int64_t *)(void *)m->dec_kv->data, m->dec_kv->len);
            struct sv_compute_iter_time it;
            const struct sv_compute_model_cfg *mc = sv_compute_latency_model(m->cfg.lat);
            sv_compute_iter_time(m->cfg.lat, &shape, 0, mc->num_layers, &it);
            l.prologue_ns = it.prologue_ns;
            l.layer_ns = it.layer_ns;
            l.n_layers = it.n_layers;
            have = TRUE;
        }
        m->hooks.on_prefill_launch(m->hooks.ctx, m->cfg.instance, (sv_msg_handoff *)r, &l);
    }
}

void sv_msg__pd_detach(sv_msg *m, msg_req *r)
{
    g_ptr_array_remove(m->running, r); /* keeps the order of the others */
    r->detached = TRUE;
    g_hash_table_add(m->detached, r);
    if (m->hooks.on_prefill_done)
        m->hooks.on_prefill_done(m->hooks.ctx, m->cfg.instance, (sv_msg_handoff *)r);
}

const struct sv_wl_outcome *sv_msg_handoff_outcome(const sv_msg_handoff *h)
{
    return &((const msg_req *)h)->out;
}

void *sv_msg_handoff_user(const sv_msg_handoff *h)
{
    return ((const msg_req *)h)->user;
}

uint32_t sv_msg_pd_blocks_needed(const sv_msg *m, int64_t tokens)
{
    uint32_t bs = sv_memtier_kv_manager_block_size(m->cfg.kv);
    return (uint32_t)((tokens + bs - 1) / bs);
}

sv_msg_handoff *sv_msg_pd_reserve(sv_msg *m, const struct sv_wl_outcome *o, void *user,
                                  GError **error)
{
    uint32_t bs = sv_memtier_kv_manager_block_size(m->cfg.kv);
    int64_t total = o->input_tokens + o->output_tokens;
    if ((uint64_t)((total + bs - 1) / bs) > sv_memtier_kv_manager_num_blocks(m->cfg.kv)) {
        g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_NOFIT,
                    "request %" G_GUINT64_FORMAT ": %" G_GINT64_FORMAT
                    " tokens need more than the %u KV blocks of decode instance %d",
                    o->request_id, total, sv_memtier_kv_manager_num_blocks(m->cfg.kv),
                    m->cfg.instance);
        return NULL;
    }
    /* The sequence carries no token ids: transferred KV is not indexed in the decode group's
     * prefix cache (vLLM's NIXL connector writes it into fresh blocks). */
    struct sv_memtier_kv_seq_cfg sc = {.prompt_tokens = (uint64_t)o->input_tokens};
    sv_memtier_kv_seq *seq = sv_memtier_kv_seq_new(m->cfg.kv, &sc, error);
    if (!seq)
        return NULL;
    if (!sv_memtier_kv_manager_allocate_slots(m->cfg.kv, seq, 0, (uint64_t)o->input_tokens, 0,
                                              (uint64_t)o->input_tokens)) {
        sv_memtier_kv_seq_free(seq);
        return NULL; /* back-pressure: the caller retries when blocks free up */
    }
    msg_req *r = g_new0(msg_req, 1);
    r->out = *o;
    r->out.instance = m->cfg.instance; /* the record names the instance that finishes it */
    r->recent_end_ns = -1;
    r->total = total;
    /* The prompt's KV arrives whole, but as vLLM's scheduler does once a remote prefill's KV has
     * been received (Scheduler._update_waiting_for_remote_kv: num_computed_tokens = the prompt's
     * tokens - 1), the decode instance recomputes the last prompt token: its first step is a
     * one-token step over input - 1 tokens of KV that samples output token 1, the first one the
     * client sees (the prefill instance's token is discarded by the proxy). */
    r->num_computed = o->input_tokens - 1;
    r->num_reached = o->input_tokens;
    r->prompt_hwm = r->prompt_credited = o->input_tokens; /* the prefill instance's */
    r->prefix_hit = o->prefix_hit_tokens;
    r->admitted_once = TRUE;
    r->is_init = TRUE;
    r->seq = seq;
    r->user = user;
    r->detached = TRUE;
    sv_msg__spec_req_init(m, r); /* a decode instance speculates (msg/spec.c) */
    g_hash_table_add(m->detached, r);
    return (sv_msg_handoff *)r;
}

void sv_msg_pd_admit(sv_msg *m, sv_msg_handoff *h, const struct sv_wl_outcome *o)
{
    msg_req *r = (msg_req *)h;
    SV_ASSERT(r->detached);
    if (o) {
        r->out = *o;
        r->out.instance = m->cfg.instance;
        r->prefix_hit = o->prefix_hit_tokens;
    }
    g_hash_table_steal(m->detached, r);
    r->detached = FALSE;
    g_queue_push_tail(&m->waiting, r);
    m->waiting_tokens += r->num_reached - r->num_computed;
    if (!m->cfg.manual && !m->busy && !m->step_pending) {
        m->step_pending = TRUE;
        sv_engine_schedule_in(m->eng, 0, MSG_PRIO_STEP, step_event, m, 0);
    }
}

void sv_msg_pd_release(sv_msg *m, sv_msg_handoff *h)
{
    msg_req *r = (msg_req *)h;
    SV_ASSERT(r->detached);
    g_hash_table_remove(m->detached, r); /* frees the request and its blocks */
    /* A group stalled on those blocks (back-pressure from the decode side) steps again. */
    if (!m->cfg.manual && !m->busy && !m->step_pending && !g_queue_is_empty(&m->waiting)) {
        m->step_pending = TRUE;
        sv_engine_schedule_in(m->eng, 0, MSG_PRIO_STEP, step_event, m, 0);
    }
}

uint32_t sv_msg_pd_num_waiting_unpinned(const sv_msg *m)
{
    uint32_t n = 0;
    for (GList *l = m->waiting.head; l; l = l->next)
        n += ((const msg_req *)l->data)->num_computed == 0;
    return n;
}

sv_time sv_msg_busy_since(const sv_msg *m)
{
    if (m->par || m->cfg.manual)
        return m->busy ? m->iter_start_ns : -1;
    /* The oldest batch not yet committed that has started on the GPU. */
    const msg_batch *h = m->batches.head ? m->batches.head->data : NULL;
    return h && h->launched ? h->start_ns : -1;
}
