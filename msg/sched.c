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
 */
#include "msg/msg_internal.h"

void sv_msg__req_free(msg_req *r)
{
    if (!r)
        return;
    sv_kv_seq_free(r->seq);
    g_free(r);
}

static void preempt(sv_msg *m, msg_req *victim)
{
    sv_kv_manager_preempt_seq(m->cfg.kv, victim->seq);
    victim->num_computed = 0;
    victim->preemptions++;
    m->preemptions++;
    g_queue_push_head(&m->waiting, victim);
}

static void add_slot(sv_msg *m, msg_req *r, int64_t num_new, int64_t before)
{
    msg_slot s = {r, num_new, before};
    g_array_append_val(m->inflight, s);
    if (r->first_sched_ns < 0)
        r->first_sched_ns = sv_engine_now(m->eng);
    /* vLLM advances num_computed_tokens at schedule time (_update_after_schedule). */
    r->num_computed = before + num_new;
}

static int64_t schedule_running(sv_msg *m, int64_t budget, uint32_t *n_preempted)
{
    const struct sv_msg_cfg *c = &m->cfg;
    guint i = 0;
    while (i < m->running->len && budget > 0) {
        msg_req *r = g_ptr_array_index(m->running, i);
        int64_t want = r->num_reached - r->num_computed;
        int64_t num_new = want;
        if (c->scheduler == SV_MSG_SCHED_VLLM) {
            if (c->long_prefill_token_threshold > 0 && num_new > c->long_prefill_token_threshold)
                num_new = c->long_prefill_token_threshold;
            if (num_new > budget)
                num_new = budget;
        } else if (want > budget && m->inflight->len > 0) {
            break; /* static / dynamic never split a recomputation: it waits for a step */
        }
        if (num_new <= 0) {
            i++;
            continue;
        }
        gboolean ok = FALSE;
        for (;;) {
            if (sv_kv_manager_allocate_slots(c->kv, r->seq, (uint64_t)r->num_computed,
                                             (uint64_t)num_new, 0, (uint64_t)r->num_reached)) {
                ok = TRUE;
                break;
            }
            /* Preempt the lowest-priority running request: under FCFS the tail. */
            msg_req *victim = g_ptr_array_steal_index(m->running, m->running->len - 1);
            preempt(m, victim);
            (*n_preempted)++;
            if (victim == r)
                break;
        }
        if (!ok)
            break;
        add_slot(m, r, num_new, r->num_computed);
        budget -= num_new;
        i++;
    }
    return budget;
}

static int64_t schedule_waiting(sv_msg *m, int64_t budget)
{
    const struct sv_msg_cfg *c = &m->cfg;
    sv_time now = sv_engine_now(m->eng);
    gboolean chunked = c->scheduler == SV_MSG_SCHED_VLLM && c->enable_chunked_prefill;
    while (!g_queue_is_empty(&m->waiting) && budget > 0) {
        if ((int64_t)m->running->len >= c->max_num_seqs)
            break;
        msg_req *r = g_queue_peek_head(&m->waiting);
        if (r->arrival_ns > now)
            break;
        int64_t computed = r->num_computed;
        int64_t hit = 0;
        if (computed == 0) {
            hit =
                (int64_t)sv_kv_manager_get_computed_blocks(c->kv, r->seq, (uint64_t)r->num_reached);
            r->prefix_hit = hit;
            computed = hit;
        }
        int64_t num_new = r->num_reached - computed;
        if (chunked && c->long_prefill_token_threshold > 0 &&
            num_new > c->long_prefill_token_threshold)
            num_new = c->long_prefill_token_threshold;
        if (!chunked && num_new > budget) {
            /* An unsplittable prompt that does not fit stops admission (FCFS). One larger than
             * the whole budget runs alone, or it could never run. */
            if (!(m->inflight->len == 0 && budget == c->max_num_batched_tokens))
                break;
        } else if (num_new > budget) {
            num_new = budget;
        }
        if (num_new <= 0)
            break;
        if (c->reserve_full_isl && !sv_kv_manager_can_fit_full_sequence(
                                       c->kv, r->seq, 0, (uint64_t)hit, (uint64_t)r->num_reached))
            break;
        if (!sv_kv_manager_allocate_slots(c->kv, r->seq, 0, (uint64_t)num_new, (uint64_t)hit,
                                          (uint64_t)r->num_reached))
            break; /* a waiting request never causes a preemption */
        g_queue_pop_head(&m->waiting);
        if (!r->admitted_once) {
            r->admitted_once = TRUE;
            r->prefix_hit_first = hit;
        }
        g_ptr_array_add(m->running, r);
        add_slot(m, r, num_new, computed);
        budget -= num_new;
    }
    return budget;
}

uint32_t sv_msg__schedule(sv_msg *m)
{
    const struct sv_msg_cfg *c = &m->cfg;
    g_array_set_size(m->inflight, 0);
    uint32_t n_preempted = 0;
    int64_t budget = c->max_num_batched_tokens;
    budget = schedule_running(m, budget, &n_preempted);
    /* vLLM skips admission in a step that preempted (`if not preempted_reqs:`), which keeps the
     * running set from oscillating. Static batching admits only into an empty engine. */
    gboolean admit = n_preempted == 0;
    if (c->scheduler == SV_MSG_SCHED_STATIC && m->running->len > 0)
        admit = FALSE;
    if (admit)
        schedule_waiting(m, budget);
    m->step_preempted = n_preempted;
    return n_preempted;
}

static void retire(sv_msg *m, msg_req *r)
{
    r->finished = TRUE;
    g_ptr_array_remove(m->running, r); /* keeps the order of the others */
}

void sv_msg__commit(sv_msg *m, sv_time finish, int64_t *prompt_t, int64_t *gen_t)
{
    const struct sv_msg_cfg *c = &m->cfg;
    gboolean caching = sv_kv_manager_caching_enabled(c->kv);
    *prompt_t = 0;
    *gen_t = 0;
    for (guint i = 0; i < m->inflight->len; i++) {
        msg_slot *s = &g_array_index(m->inflight, msg_slot, i);
        msg_req *r = s->req;
        gboolean prefill_done_now = r->is_init && r->num_computed >= r->input;
        if (prefill_done_now) {
            r->is_init = FALSE;
            r->first_token_ns = finish;
            r->recent_end_ns = finish;
            /* LLMServingSim counts the prompt's cached prefix as prompt throughput here. */
            *prompt_t += s->num_new + r->prefix_hit;
            if (caching)
                sv_kv_manager_cache_blocks(c->kv, r->seq, (uint64_t)r->num_computed);
        } else if (s->num_new > 1) {
            *prompt_t += s->num_new; /* a chunk, or a resumed request catching up */
            if (caching)
                sv_kv_manager_cache_blocks(c->kv, r->seq, (uint64_t)r->num_computed);
        }
        /* A token is produced when the request has caught up with the length it reached. */
        if (r->num_computed >= r->num_reached) {
            r->num_reached++;
            (*gen_t)++;
            if (!prefill_done_now) {
                sv_time gap = finish - r->recent_end_ns;
                r->recent_end_ns = finish;
                if (m->hooks.on_token)
                    m->hooks.on_token(m->hooks.ctx, r->id, c->instance, finish, gap);
            }
            if (caching)
                sv_kv_manager_cache_blocks(c->kv, r->seq, (uint64_t)r->num_computed);
        }
        if (r->num_reached >= r->total) {
            sv_kv_manager_free_seq(c->kv, r->seq);
            retire(m, r);
            if (m->hooks.on_req_done) {
                struct sv_msg_req_done d = {
                    .request_id = r->id,
                    .instance = c->instance,
                    .arrival_ns = r->arrival_ns,
                    .first_scheduled_ns = r->first_sched_ns,
                    .first_token_ns = r->first_token_ns,
                    .last_token_ns = finish,
                    .input_tokens = r->input,
                    .output_tokens = r->total - r->input,
                    .prefix_hit_tokens = r->prefix_hit_first,
                    .preemptions = r->preemptions,
                    .user = r->user,
                };
                m->hooks.on_req_done(m->hooks.ctx, &d);
            }
        }
    }
    /* Free finished requests only now: a request appears once per iteration, but keep the
     * pointers valid through the loop above. */
    for (guint i = 0; i < m->inflight->len; i++) {
        msg_slot *s = &g_array_index(m->inflight, msg_slot, i);
        if (s->req->finished)
            sv_msg__req_free(s->req);
    }
    g_array_set_size(m->inflight, 0);
}
