/* The batch scheduler of a serving group.
 *
 * `vllm` follows vLLM v1's Scheduler.schedule (vllm/v1/core/sched/scheduler.py, v0.19.0) as
 * LLMServingSim ports it (serving/core/scheduler.py): no prefill or decode phase, each request
 * catches its computed tokens up to the length it has reached.
 *   Phase A, running requests in admission order: num_new = min(reached - computed, threshold,
 *   budget left); when the KV pool cannot give the slots, preempt from the tail of the running
 *   list (recompute: blocks freed with their hashes kept, computed reset to 0, the victim goes to
 *   the head of the waiting queue) until it can, or until the request itself was the victim.
 *   Phase B, only in a step that preempted nothing: admit FCFS while the budget lasts and fewer
 *   than max_num_seqs run; a prefix-cache lookup gives the computed tokens; stop at the first
 *   request that does not fit (unsplittable prompt, full-sequence reserve, or slots).
 * Token accounting at completion is LLMServingSim's Scheduler.add_done: the iteration that
 * completes a prompt yields the first token; a request yields a token whenever it has caught up.
 *
 * `static` (TokenSim's static batching): requests are admitted only when nothing runs, as one
 * batch whose prompts are prefilled whole; it then decodes until every member has finished.
 * `dynamic` (TokenSim's dynamic batching): iteration-level admission as vLLM, but prompts are
 * never split: a prompt runs whole in one iteration (one larger than the token budget runs alone).
 *
 * The three are policy tables (struct sv_msg_sched_ops) written against the scheduler's view
 * (sv_msg_view_*), the same narrow API a plugin's scheduler gets.
 */
#include "msg/msg_internal.h"

void sv_msg__req_free(msg_req *r)
{
    if (!r)
        return;
    sv_memtier_kv_seq_free(r->seq);
    sv_rng_free(r->spec_rng);
    g_free(r);
}

/* ---- the scheduler's view (sv_msg_view) ----------------------------------------------------
 * Every change a scheduler makes goes through these verbs, which keep the KV pool, the lists and
 * the counters consistent; the built-in policies below use nothing else. */

/* Async scheduling (msg/engine.c): a request whose scheduled step will sample a token holds an
 * output placeholder until that step commits, so the next step can already compute the token
 * after it (vLLM AsyncScheduler._update_after_schedule). Scheduling stops where the placeholders
 * reach the request's last token (vLLM's "avoid scheduling an extra step" rule: the last token is
 * sampled, never fed back) or, on a PREFILL group, the end of the prompt (the request leaves when
 * its prompt completes). Waiting requests use num_reached: placeholders count for running ones. */
int64_t sv_msg__reach(const sv_msg *m, const msg_req *r)
{
    if (r->ph == 0) /* speculative decoding: 1 + k tokens (no placeholders then, msg/spec.c) */
        return r->num_reached + sv_msg__spec_lookahead(m, r);
    int64_t cap = m->cfg.role == SV_MSG_ROLE_PREFILL ? r->out.input_tokens : r->total - 1;
    return MAX(r->num_reached, MIN(r->num_reached + r->ph, cap));
}

static void req_info(const msg_req *r, int64_t reached, struct sv_msg_req_info *out)
{
    *out = (struct sv_msg_req_info){
        .request_id = r->out.request_id,
        .arrival_ns = r->out.arrival_ns,
        .input_tokens = r->out.input_tokens,
        .total_tokens = r->total,
        .num_computed = r->num_computed,
        .num_reached = reached,
        .prefill_done = !r->is_init,
        .preemptions = r->out.preemptions,
    };
}

sv_time sv_msg_view_now(const sv_msg_view *v)
{
    return sv_engine_now(v->m->eng);
}

const struct sv_msg_limits *sv_msg_view_limits(const sv_msg_view *v)
{
    return &v->m->limits;
}

int32_t sv_msg_view_instance(const sv_msg_view *v)
{
    return v->m->cfg.instance;
}

uint32_t sv_msg_view_num_running(const sv_msg_view *v)
{
    return v->m->running->len;
}

static msg_req *running_at(const sv_msg_view *v, uint32_t i)
{
    SV_ASSERT(i < v->m->running->len);
    return g_ptr_array_index(v->m->running, i);
}

void sv_msg_view_running(const sv_msg_view *v, uint32_t i, struct sv_msg_req_info *out)
{
    const msg_req *r = running_at(v, i);
    req_info(r, sv_msg__reach(v->m, r), out);
}

gboolean sv_msg_view_is_scheduled(const sv_msg_view *v, uint32_t i)
{
    return running_at(v, i)->step_mark == v->m->step_seq;
}

uint32_t sv_msg_view_num_waiting(const sv_msg_view *v)
{
    return v->m->waiting.length;
}

void sv_msg_view_waiting(const sv_msg_view *v, uint32_t i, struct sv_msg_req_info *out)
{
    SV_ASSERT(i < v->m->waiting.length);
    const msg_req *r = g_queue_peek_nth(&v->m->waiting, i);
    req_info(r, r->num_reached, out);
}

uint32_t sv_msg_view_num_scheduled(const sv_msg_view *v)
{
    return v->m->inflight->len;
}

int64_t sv_msg_view_scheduled_tokens(const sv_msg_view *v)
{
    int64_t t = 0;
    for (guint i = 0; i < v->m->inflight->len; i++)
        t += g_array_index(v->m->inflight, msg_slot, i).num_new;
    return t;
}

uint32_t sv_msg_view_num_preempted(const sv_msg_view *v)
{
    return v->m->step_preempted;
}

static void add_slot(sv_msg *m, msg_req *r, int64_t num_new, int64_t before)
{
    /* In place: g_array_append_val's generic copy showed in profiles of large runs. */
    guint n = m->inflight->len;
    g_array_set_size(m->inflight, n + 1);
    /* Speculative decoding: a caught-up decoding request's tokens past its last one are drafts
     * (vLLM's scheduled_spec_decode_tokens). */
    int32_t spec =
        m->cfg.spec && !r->is_init && before == r->num_reached - 1 ? (int32_t)(num_new - 1) : 0;
    g_array_index(m->inflight, msg_slot, n) = (msg_slot){r, num_new, before, spec};
    r->step_mark = m->step_seq;
    if (r->out.first_scheduled_ns < 0)
        r->out.first_scheduled_ns = sv_engine_now(m->eng);
    /* vLLM advances num_computed_tokens at schedule time (_update_after_schedule). */
    r->num_computed = before + num_new;
    if (m->placeholders && r->num_computed >= r->num_reached + r->ph)
        r->ph++; /* this step samples a token (async scheduling: sv_msg__reach) */
}

gboolean sv_msg_view_schedule_running(sv_msg_view *v, uint32_t i, int64_t num_new)
{
    sv_msg *m = v->m;
    msg_req *r = running_at(v, i);
    SV_ASSERT(r->step_mark != m->step_seq);
    SV_ASSERT(num_new >= 1 && num_new <= sv_msg__reach(m, r) - r->num_computed);
    /* Any allocation may evict the blocks a waiting-head lookup found: look up again later. */
    v->head = NULL;
    if (!sv_memtier_kv_manager_allocate_slots(m->cfg.kv, r->seq, (uint64_t)r->num_computed,
                                              (uint64_t)num_new, 0, (uint64_t)r->num_reached))
        return FALSE;
    add_slot(m, r, num_new, r->num_computed);
    return TRUE;
}

void sv_msg_view_preempt(sv_msg_view *v, uint32_t i)
{
    sv_msg *m = v->m;
    msg_req *victim = running_at(v, i);
    SV_ASSERT(victim->step_mark != m->step_seq);
    g_ptr_array_remove_index(m->running, i); /* keeps the order of the others */
    victim->out.preemptions++;
    m->preemptions++;
    m->step_preempted++;
    v->head = NULL;
    /* Swap mode keeps the victim's KV in the swap tier (msg/offload.c). */
    if (m->tiers && sv_msg__swap_out(m, victim))
        return;
    sv_memtier_kv_manager_preempt_seq(m->cfg.kv, victim->seq);
    victim->num_computed = 0;
    g_queue_push_head(&m->waiting, victim);
    m->waiting_tokens += victim->num_reached;
}

uint32_t sv_msg_view_num_swapped(const sv_msg_view *v)
{
    return sv_msg_num_swapped(v->m);
}

void sv_msg_view_swapped_head(const sv_msg_view *v, struct sv_msg_req_info *out)
{
    SV_ASSERT(sv_msg_num_swapped(v->m) > 0);
    const msg_req *r = g_queue_peek_head(&v->m->tiers->swapped);
    req_info(r, r->num_reached, out);
}

gboolean sv_msg_view_swap_in(sv_msg_view *v, int64_t num_new)
{
    sv_msg *m = v->m;
    SV_ASSERT(sv_msg_num_swapped(m) > 0);
    msg_req *r = g_queue_peek_head(&m->tiers->swapped);
    v->head = NULL; /* an allocation may evict what a waiting-head lookup found */
    int64_t before = r->num_computed;
    if (!sv_msg__swap_in_head(m, num_new))
        return FALSE;
    g_ptr_array_add(m->running, r);
    add_slot(m, r, num_new, before);
    return TRUE;
}

int64_t sv_msg_view_waiting_computed(sv_msg_view *v)
{
    sv_msg *m = v->m;
    msg_req *r = g_queue_peek_head(&m->waiting);
    SV_ASSERT(r);
    if (v->head == r)
        return v->head_computed;
    v->head = r;
    v->head_hit = 0;
    v->head_lower = 0;
    v->head_computed = r->num_computed;
    if (r->num_computed == 0) {
        v->head_hit = (int64_t)sv_memtier_kv_manager_get_computed_blocks(m->cfg.kv, r->seq,
                                                                         (uint64_t)r->num_reached);
        v->head_computed = v->head_hit;
        if (m->tiers) {
            /* Lower tiers continue the NPU hit chunk by chunk (msg/offload.c). */
            v->head_computed = sv_msg__hier_match(m, r, v->head_hit, FALSE, &v->head_tiers);
            v->head_lower = v->head_computed - v->head_hit;
        }
        r->prefix_hit = v->head_computed;
    }
    return v->head_computed;
}

gboolean sv_msg_view_waiting_fits_full(sv_msg_view *v)
{
    sv_msg *m = v->m;
    sv_msg_view_waiting_computed(v);
    msg_req *r = v->head;
    return sv_memtier_kv_manager_can_fit_full_sequence(m->cfg.kv, r->seq, (uint64_t)r->num_computed,
                                                       (uint64_t)v->head_hit,
                                                       (uint64_t)r->num_reached);
}

gboolean sv_msg_view_admit_waiting(sv_msg_view *v, int64_t num_new)
{
    sv_msg *m = v->m;
    int64_t computed = sv_msg_view_waiting_computed(v);
    msg_req *r = v->head;
    SV_ASSERT(num_new >= 1 && num_new <= r->num_reached - computed);
    /* Tokens loaded from lower tiers take fresh slots like the new ones. */
    if (!sv_memtier_kv_manager_allocate_slots(m->cfg.kv, r->seq, (uint64_t)r->num_computed,
                                              (uint64_t)(v->head_lower + num_new),
                                              (uint64_t)v->head_hit, (uint64_t)r->num_reached))
        return FALSE; /* the lookup stays valid: nothing changed */
    g_queue_pop_head(&m->waiting);
    m->waiting_tokens -= r->num_reached - r->num_computed;
    v->head = NULL;
    if (m->tiers) {
        if (r->num_computed == 0) {
            /* Commit the lookup the head is admitted on (only the admission touches the pools'
             * LRU order and counts); nothing since the peek changed a pool. */
            int64_t end = sv_msg__hier_match(m, r, v->head_hit, TRUE, &v->head_tiers);
            SV_ASSERT(end == v->head_hit + v->head_lower);
        }
        sv_msg__hier_admitted(m, r, v->head_hit, v->head_lower, &v->head_tiers);
    }
    if (!r->admitted_once) {
        r->admitted_once = TRUE;
        r->out.prefix_hit_tokens = v->head_hit + v->head_lower;
    }
    g_ptr_array_add(m->running, r);
    add_slot(m, r, num_new, computed);
    return TRUE;
}

/* ---- built-in policies ---------------------------------------------------------------------- */

static int64_t schedule_running(sv_msg_view *v, sv_msg_sched_kind kind, int64_t budget)
{
    const struct sv_msg_limits *c = sv_msg_view_limits(v);
    uint32_t i = 0;
    while (i < sv_msg_view_num_running(v) && budget > 0) {
        struct sv_msg_req_info r;
        sv_msg_view_running(v, i, &r);
        int64_t want = r.num_reached - r.num_computed;
        int64_t num_new = want;
        if (kind == SV_MSG_SCHED_VLLM) {
            if (c->long_prefill_token_threshold > 0 && num_new > c->long_prefill_token_threshold)
                num_new = c->long_prefill_token_threshold;
            if (num_new > budget)
                num_new = budget;
        } else if (want > budget && sv_msg_view_num_scheduled(v) > 0) {
            break; /* static / dynamic never split a recomputation: it waits for a step */
        }
        if (num_new <= 0) {
            i++;
            continue;
        }
        gboolean ok = FALSE;
        for (;;) {
            if (sv_msg_view_schedule_running(v, i, num_new)) {
                ok = TRUE;
                break;
            }
            /* Preempt the lowest-priority running request: under FCFS the tail. */
            uint32_t last = sv_msg_view_num_running(v) - 1;
            sv_msg_view_preempt(v, last);
            if (last == i)
                break;
        }
        if (!ok)
            break;
        budget -= num_new;
        i++;
    }
    return budget;
}

static int64_t schedule_waiting(sv_msg_view *v, sv_msg_sched_kind kind, int64_t budget)
{
    const struct sv_msg_limits *c = sv_msg_view_limits(v);
    sv_time now = sv_msg_view_now(v);
    gboolean chunked = kind == SV_MSG_SCHED_VLLM && c->enable_chunked_prefill;
    while (sv_msg_view_num_waiting(v) > 0 && budget > 0) {
        if ((int64_t)sv_msg_view_num_running(v) >= c->max_num_seqs)
            break;
        struct sv_msg_req_info r;
        sv_msg_view_waiting(v, 0, &r);
        if (r.arrival_ns > now)
            break;
        int64_t computed = sv_msg_view_waiting_computed(v);
        int64_t num_new = r.num_reached - computed;
        if (chunked && c->long_prefill_token_threshold > 0 &&
            num_new > c->long_prefill_token_threshold)
            num_new = c->long_prefill_token_threshold;
        if (!chunked && num_new > budget) {
            /* An unsplittable prompt that does not fit stops admission (FCFS). One larger than
             * the whole budget runs alone, or it could never run. */
            if (!(sv_msg_view_num_scheduled(v) == 0 && budget == c->max_num_batched_tokens))
                break;
        } else if (num_new > budget) {
            num_new = budget;
        }
        if (num_new <= 0)
            break;
        if (c->reserve_full_isl && !sv_msg_view_waiting_fits_full(v))
            break;
        if (!sv_msg_view_admit_waiting(v, num_new))
            break; /* a waiting request never causes a preemption */
        budget -= num_new;
    }
    return budget;
}

/* vLLM v0 _schedule_swapped: resume swapped requests FCFS while the budget, max_num_seqs and
 * the pool allow (none in a step that preempted). */
static int64_t schedule_swapped(sv_msg_view *v, int64_t budget)
{
    const struct sv_msg_limits *c = sv_msg_view_limits(v);
    while (sv_msg_view_num_swapped(v) > 0 && budget > 0 &&
           (int64_t)sv_msg_view_num_running(v) < c->max_num_seqs) {
        struct sv_msg_req_info r;
        sv_msg_view_swapped_head(v, &r);
        int64_t num_new = r.num_reached - r.num_computed;
        if (c->long_prefill_token_threshold > 0 && num_new > c->long_prefill_token_threshold)
            num_new = c->long_prefill_token_threshold;
        if (num_new > budget)
            num_new = budget;
        if (!sv_msg_view_swap_in(v, num_new))
            break;
        budget -= num_new;
    }
    return budget;
}

static void schedule_builtin(sv_msg_view *v, sv_msg_sched_kind kind)
{
    int64_t budget = sv_msg_view_limits(v)->max_num_batched_tokens;
    budget = schedule_running(v, kind, budget);
    if (sv_msg_view_num_swapped(v) > 0) {
        /* Swap mode (vLLM v0 order): swapped before waiting, and waiting only when none is
         * left swapped; no swap-in in a step that preempted. */
        if (sv_msg_view_num_preempted(v) == 0)
            budget = schedule_swapped(v, budget);
        if (sv_msg_view_num_swapped(v) > 0)
            return;
    }
    /* vLLM skips admission in a step that preempted (`if not preempted_reqs:`), which keeps the
     * running set from oscillating. Static batching admits only into an empty engine. */
    gboolean admit = sv_msg_view_num_preempted(v) == 0;
    if (kind == SV_MSG_SCHED_STATIC && sv_msg_view_num_running(v) > 0)
        admit = FALSE;
    if (admit)
        schedule_waiting(v, kind, budget);
}

static void schedule_vllm(void *state, sv_msg_view *v)
{
    schedule_builtin(v, SV_MSG_SCHED_VLLM);
}

static void schedule_static(void *state, sv_msg_view *v)
{
    schedule_builtin(v, SV_MSG_SCHED_STATIC);
}

static void schedule_dynamic(void *state, sv_msg_view *v)
{
    schedule_builtin(v, SV_MSG_SCHED_DYNAMIC);
}

static const struct sv_msg_sched_ops builtin_ops[] = {
    [SV_MSG_SCHED_VLLM] = {.api_version = SV_REGISTRY_API_VERSION, .schedule = schedule_vllm},
    [SV_MSG_SCHED_STATIC] = {.api_version = SV_REGISTRY_API_VERSION, .schedule = schedule_static},
    [SV_MSG_SCHED_DYNAMIC] = {.api_version = SV_REGISTRY_API_VERSION, .schedule = schedule_dynamic},
};

const struct sv_msg_sched_ops *sv_msg_sched_builtin(sv_msg_sched_kind kind)
{
    SV_ASSERT((unsigned)kind < G_N_ELEMENTS(builtin_ops));
    return &builtin_ops[kind];
}

gboolean sv_msg_sched_register_builtins(sv_registry *reg, GError **error)
{
    for (int k = 0; k < (int)G_N_ELEMENTS(builtin_ops); k++) {
        if (!sv_registry_add(reg, SV_REGISTRY_SCHED, sv_msg_sched_name((sv_msg_sched_kind)k),
                             &builtin_ops[k], "built-in", error))
            return FALSE;
    }
    return TRUE;
}

uint32_t sv_msg__schedule(sv_msg *m)
{
    g_array_set_size(m->inflight, 0);
    m->step_seq++;
    m->step_preempted = 0;
    m->view = (struct sv_msg_view){.m = m};
    m->sched->schedule(m->sched_state, &m->view);
    m->view.head = NULL;
    return m->step_preempted;
}

static void retire(sv_msg *m, msg_req *r)
{
    r->out.finished = TRUE;
    g_ptr_array_remove(m->running, r); /* keeps the order of the others */
}

void sv_msg__commit(sv_msg *m, sv_time finish, int64_t *prompt_t, int64_t *gen_t)
{
    const struct sv_msg_cfg *c = &m->cfg;
    gboolean caching = sv_memtier_kv_manager_caching_enabled(c->kv);
    /* Token times as the client sees them: the engine's, plus the frontend's return path. */
    sv_time stamp = finish + c->frontend.out_ns;
    *prompt_t = 0;
    *gen_t = 0;
    for (guint i = 0; i < m->inflight->len; i++) {
        msg_slot *s = &g_array_index(m->inflight, msg_slot, i);
        msg_req *r = s->req;
        /* KV computed as of this step. A later step may have scheduled the request again (its
         * count is further on) or preempted it (reset to 0: it waits, its blocks are gone); the
         * token this step sampled is kept either way (vLLM's update_from_output appends it
         * whatever the request's status, and removes a preempted one that is finished from the
         * waiting queue). */
        int64_t end = s->computed_before + s->num_new;
        gboolean parked = r->num_computed < end;
        gboolean prefill_done_now = r->is_init && end >= r->out.input_tokens;
        if (parked && c->role == SV_MSG_ROLE_PREFILL && prefill_done_now)
            continue; /* its KV is gone before the hand-off: the prompt is recomputed */
        gboolean cache = caching && !parked;
        /* Prompt tokens computed for the first time count as they are computed; a prompt
         * recomputed after a preemption (recompute mode, on either side of a PD hand-off)
         * counts nothing again (docs/outputs.md). */
        int64_t from = MAX(s->computed_before, r->prompt_hwm);
        int64_t to = MIN(end, r->out.input_tokens);
        if (to > from) {
            *prompt_t += to - from;
            r->prompt_credited += to - from;
            r->prompt_hwm = to;
        }
        if (prefill_done_now) {
            r->is_init = FALSE;
            if (r->out.prefill_done_ns < 0) {
                r->out.prefill_done_ns = finish;
                r->out.prefill_instance = c->instance;
                /* LLMServingSim counts the prompt's cached prefix as prompt throughput here: the
                 * part never computed. A DECODE group's requests come with their prompt
                 * credited by the prefill instance (sv_msg_pd_reserve). */
                *prompt_t += r->out.input_tokens - r->prompt_credited;
                r->prompt_credited = r->out.input_tokens;
            }
            if (cache)
                sv_memtier_kv_manager_cache_blocks(c->kv, r->seq, (uint64_t)end);
            if (c->role == SV_MSG_ROLE_PREFILL) {
                /* vLLM's disaggregated proxy runs the prefill with max_tokens=1 and discards
                 * that token; the client's tokens, the first included, come from the decode
                 * instance after the KV hand-off (docs/disaggregation.md). */
                if (m->tiers) {
                    int64_t later = r->num_computed;
                    r->num_computed = end;
                    sv_msg__hier_computed(m, r); /* write-through of newly full chunks */
                    r->num_computed = later;
                }
                sv_msg__pd_detach(m, r);
                continue;
            }
            r->out.first_token_ns = stamp;
            r->recent_end_ns = finish;
        } else if (s->num_new > 1) {
            /* a chunk, or a resumed request catching up */
            if (cache)
                sv_memtier_kv_manager_cache_blocks(c->kv, r->seq, (uint64_t)end);
        }
        /* A token is produced when the request has caught up with the length it reached. */
        if (end >= r->num_reached) {
            /* Speculative decoding: the accepted drafts and the bonus token, emitted together
             * (the step's later tokens have a gap of 0); rejected drafts roll num_computed back,
             * so only accepted KV is cached. Otherwise one token. */
            int64_t n_tok = s->spec > 0 ? sv_msg__spec_accept(m, r, s) : 1;
            r->num_reached += n_tok;
            if (r->ph > 0)
                r->ph--;
            if (parked)
                m->waiting_tokens++;
            *gen_t += n_tok;
            if (!prefill_done_now) {
                sv_time gap = finish - r->recent_end_ns;
                r->recent_end_ns = finish;
                for (int64_t t = 0; t < n_tok && m->hooks.on_token; t++)
                    m->hooks.on_token(m->hooks.ctx, r->out.request_id, c->instance, finish,
                                      t == 0 ? gap : 0);
            }
            if (cache)
                sv_memtier_kv_manager_cache_blocks(c->kv, r->seq,
                                                   (uint64_t)MIN(end, r->num_computed));
        }
        if (m->tiers && !parked) {
            int64_t later = r->num_computed;
            r->num_computed = end;
            sv_msg__hier_computed(m, r); /* write-through of newly full chunks */
            r->num_computed = later;
        }
        if (r->num_reached >= r->total) {
            if (parked) {
                g_queue_remove(&m->waiting, r);
                m->waiting_tokens -= r->num_reached - r->num_computed;
            }
            sv_memtier_kv_manager_free_seq(c->kv, r->seq);
            retire(m, r);
            r->out.last_token_ns = stamp;
            if (m->hooks.on_req_done)
                m->hooks.on_req_done(m->hooks.ctx, &r->out, r->user);
        }
    }
    /* Free finished requests only now: a request appears once per iteration, but keep the
     * pointers valid through the loop above. */
    for (guint i = 0; i < m->inflight->len; i++) {
        msg_slot *s = &g_array_index(m->inflight, msg_slot, i);
        if (s->req->out.finished)
            sv_msg__req_free(s->req);
    }
    g_array_set_size(m->inflight, 0);
}
