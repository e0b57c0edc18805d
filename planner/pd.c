/* Prefill/decode disaggregation: the handoff from a prefill instance to a decode instance, as a
 * small dynamic DAG per request (docs/disaggregation.md).
 *
 * TokenSim and Simthesizer model disaggregation as a breakpoint at the end of prefill that hands
 * the request back to the global scheduler, which picks the decode instance and inserts the KV
 * transfer between the prefill and the decode admission. Here each handed-off request gets a DAG
 *
 *     breakpoint (LOGICAL)  ->  admit (LOGICAL)
 *
 * whose breakpoint handler asks the router for a decode instance that can hold the KV now,
 * reserves its blocks there and splices the transfer between the two nodes
 * (sv_dag_splice: breakpoint -> fan-out -> one COMM_SEND per rank pair [x layer] -> join ->
 * admit). A send node is a network message over the cluster network, so the KV shares links with
 * every other flow. The admit handler frees the prefill side's blocks and queues the request on
 * the decode instance, whose first step then yields the client's first token (vLLM's
 * disaggregated proxy: TTFT includes the hand-off). When no decode instance has room the
 * breakpoint stays issued and the request waits in FIFO order (back-pressure, vLLM's NIXL
 * connector semantics: the transfer starts only once the decode side has allocated its blocks);
 * every commit of a decode instance retries.
 *
 * Per-layer transfer (kv_mode per_layer): the breakpoint moves to the start of the iteration
 * that completes the prompt (sv_planner_pd_prefill_launch, as vLLM's layer-wise KV connectors pick
 * the decode side before prefill runs). The transfer is then one message per layer and rank pair,
 * each gated by a timer node at the time its layer finishes (the latency model's estimate), and
 * the admission also waits for a "prefill-done" node completed when the prompt commits. If no
 * decode instance has room at launch, the request waits as above and its layers, all produced by
 * then, leave at once when it is placed. */
#include "dag/dag.h"
#include "planner/planner_internal.h"

#include <string.h>

/* After msg commits (4) and before steps (8) of the same instant: a handoff made at a commit is
 * routed before a decode instance starts its next step. */
#define PD_PRIO 6

/* Node roles, by address (node->user). */
static const char tag_bp[] = "breakpoint", tag_admit[] = "admit", tag_fan[] = "fan-out",
                  tag_join[] = "join", tag_gate[] = "layer-ready", tag_pfdone[] = "prefill-done";

typedef struct pd_req pd_req;

struct sv_planner_pd {
    sv_engine *eng;
    sv_net *net;
    sv_planner_pd_kv_mode kv_mode;
    int32_t n;
    struct sv_planner_pd_instance *inst;
    uint32_t *incoming;
    sv_planner_pd_pick_fn pick;
    void *pick_ctx;
    GQueue waiting;    /* pd_req* whose breakpoint waits for decode memory, FIFO */
    GHashTable *live;  /* every pd_req (set), freed with the pd when a run stops early */
    GHashTable *early; /* sv_msg_handoff* -> pd_req announced at launch (per_layer), lookup only */
    gboolean retry_pending;
    int32_t *cand; /* scratch */
    struct sv_planner_pd_stats stats;
    sv_msg_et_out *et;       /* run-scope ET output, or NULL */
    sv_planner_trace *trace; /* the timeline (planner/trace.c), or NULL */
    GError *error;
};

struct pd_req {
    sv_planner_pd *pd;
    int32_t src, dst;
    sv_msg_handoff *hp, *hd;
    struct sv_wl_outcome out; /* the request so far; the prefill group frees its own copy */
    void *user;
    /* Layer l's KV is ready at t0 + prologue_ns + (l + 1) x layer_ns (per_layer); all zero
     * offsets when the breakpoint is the end of prefill (every layer is ready). */
    sv_time t0, prologue_ns, layer_ns;
    gboolean prefill_finished; /* the prefill side committed the prompt */
    sv_dag *dag;
    sv_dag_exec *ex;
    struct sv_sys_exec sx; /* the KV transfer node's handler context */
    sv_dag_node *bp, *admit, *pf_done;
    sv_time bp_ns, reserved_ns;
    gboolean waited;
    GArray *et_recv; /* ET output: {decode NPU, receive id} of each message sent */
};

gboolean sv_planner_pd_kv_mode_parse(const char *name, sv_planner_pd_kv_mode *out, GError **error)
{
    if (g_ascii_strcasecmp(name, "whole") == 0)
        *out = SV_PLANNER_PD_KV_WHOLE;
    else if (g_ascii_strcasecmp(name, "per_layer") == 0 || g_ascii_strcasecmp(name, "layer") == 0)
        *out = SV_PLANNER_PD_KV_PER_LAYER;
    else {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                    "unknown kv_transfer '%s' (known: whole, per_layer)", name);
        return FALSE;
    }
    return TRUE;
}

/* vLLM's pipeline split (get_pp_indices): even, the remainder to the earlier stages. */
static void stage_layers(int64_t layers, int32_t pp, int32_t s, int64_t *lo, int64_t *hi)
{
    int64_t base = layers / pp, rem = layers % pp;
    *lo = s * base + MIN((int64_t)s, rem);
    *hi = *lo + base + (s < rem ? 1 : 0);
}

static int64_t overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
    int64_t lo = MAX(a0, b0), hi = MIN(a1, b1);
    return hi > lo ? hi - lo : 0;
}

/* Layers both ranks hold and the share of KV heads both hold, in units of 1 / (tp_p x tp_d). */
static void pair_overlap(const struct sv_planner_pd_instance *p, int32_t src_rank,
                         const struct sv_planner_pd_instance *d, int32_t dst_rank, int64_t *l_lo,
                         int64_t *l_hi, int64_t *units)
{
    int32_t sp = src_rank / p->tp, rp = src_rank % p->tp;
    int32_t sd = dst_rank / d->tp, rd = dst_rank % d->tp;
    int64_t p0, p1, d0, d1;
    stage_layers(p->num_layers, p->pp, sp, &p0, &p1);
    stage_layers(d->num_layers, d->pp, sd, &d0, &d1);
    *l_lo = MAX(p0, d0);
    *l_hi = MAX(*l_lo, MIN(p1, d1));
    /* Rank r of a TP-t group holds heads [r/t, (r+1)/t) of the whole; scaled by tp_p x tp_d. */
    *units = overlap((int64_t)rp * d->tp, (int64_t)(rp + 1) * d->tp, (int64_t)rd * p->tp,
                     (int64_t)(rd + 1) * p->tp);
}

uint64_t sv_planner_pd_pair_bytes(const struct sv_planner_pd_instance *p, int32_t src_rank,
                                  const struct sv_planner_pd_instance *d, int32_t dst_rank,
                                  int64_t tokens)
{
    int64_t lo, hi, units;
    pair_overlap(p, src_rank, d, dst_rank, &lo, &hi, &units);
    return (uint64_t)tokens * p->kv_bytes_per_token_layer * (uint64_t)(hi - lo) * (uint64_t)units /
           ((uint64_t)p->tp * (uint64_t)d->tp);
}

/* ---- errors and teardown ----------------------------------------------------------------------
 */

static void pd_fail(sv_planner_pd *pd, GError *e)
{
    if (!pd->error)
        pd->error = e;
    else
        g_error_free(e);
    sv_engine_stop(pd->eng);
}

static void req_free(pd_req *r)
{
    if (r->et_recv)
        g_array_unref(r->et_recv);
    sv_dag_exec_free(r->ex);
    sv_dag_free(r->dag);
    g_free(r);
}

static void free_event(sv_engine *eng, void *ctx, uint64_t arg)
{
    pd_req *r = (pd_req *)(uintptr_t)arg;
    g_hash_table_remove(r->pd->live, r);
}

static void all_done(sv_dag_exec *ex, void *ctx)
{
    pd_req *r = ctx;
    /* Inside the executor: free it from a fresh event. */
    sv_engine_schedule_in(r->pd->eng, 0, PD_PRIO, free_event, r->pd, (uint64_t)(uintptr_t)r);
}

/* ---- the transfer -----------------------------------------------------------------------------
 */

static sv_dag_node *add_node(pd_req *r, const char *name, sv_dag_kind kind, int32_t device,
                             sv_time dur, const void *tag)
{
    struct sv_dag_node_cfg nc = {
        .id = sv_dag_next_id(r->dag),
        .name = name,
        .kind = kind,
        .device = device,
        .duration_ns = dur,
        .user = (void *)tag,
    };
    sv_dag_node *n = sv_dag_node_add(r->dag, &nc, NULL);
    SV_ASSERT(n);
    return n;
}

static void edge(pd_req *r, sv_dag_node *a, sv_dag_node *b)
{
    SV_ASSERT(sv_dag_edge_add(r->dag, a, b, SV_DAG_EDGE_DATA, NULL));
}

static sv_dag_node *add_send(pd_req *r, int32_t src_npu, int32_t dst_npu, uint64_t bytes,
                             int64_t layer)
{
    char name[64];
    if (layer >= 0)
        g_snprintf(name, sizeof name, "kv.L%" G_GINT64_FORMAT ".%d->%d", layer, src_npu, dst_npu);
    else
        g_snprintf(name, sizeof name, "kv.%d->%d", src_npu, dst_npu);
    sv_dag_node *s = add_node(r, name, SV_DAG_KIND_COMM_SEND, src_npu, 0, NULL);
    s->p.has |=
        SV_DAG_HAS_COMM_SRC | SV_DAG_HAS_COMM_DST | SV_DAG_HAS_COMM_SIZE | SV_DAG_HAS_COMM_TAG;
    s->p.comm_src = src_npu;
    s->p.comm_dst = dst_npu;
    s->p.comm_size_bytes = bytes;
    s->p.comm_tag = (int32_t)(r->out.request_id & 0x7fffffff);
    return s;
}

/* Build fan-out -> sends -> join and splice it between the breakpoint and the admission. */
static void splice_transfer(pd_req *r)
{
    sv_planner_pd *pd = r->pd;
    const struct sv_planner_pd_instance *p = &pd->inst[r->src], *d = &pd->inst[r->dst];
    int64_t tokens = r->out.input_tokens;
    sv_dag_node *fan = add_node(r, "kv.fan-out", SV_DAG_KIND_LOGICAL, p->npus[0], 0, tag_fan);
    sv_dag_node *join = add_node(r, "kv.join", SV_DAG_KIND_LOGICAL, d->npus[0], 0, tag_join);
    sv_time now = sv_engine_now(pd->eng);
    int32_t n_src = p->tp * p->pp, n_dst = d->tp * d->pp;
    uint64_t messages = 0, bytes = 0;
    for (int32_t rs = 0; rs < n_src; rs++) {
        for (int32_t rd = 0; rd < n_dst; rd++) {
            int64_t lo, hi, units;
            pair_overlap(p, rs, d, rd, &lo, &hi, &units);
            if (hi <= lo || units == 0)
                continue;
            if (pd->kv_mode == SV_PLANNER_PD_KV_WHOLE) {
                uint64_t b = sv_planner_pd_pair_bytes(p, rs, d, rd, tokens);
                sv_dag_node *s = add_send(r, p->npus[rs], d->npus[rd], b, -1);
                edge(r, fan, s);
                edge(r, s, join);
                messages++;
                bytes += b;
                continue;
            }
            uint64_t per_layer = (uint64_t)tokens * p->kv_bytes_per_token_layer * (uint64_t)units /
                                 ((uint64_t)p->tp * (uint64_t)d->tp);
            sv_dag_node *prev = fan;
            for (int64_t l = lo; l < hi; l++) {
                /* The stages run their layers one after the other (pipeline order). */
                sv_time ready =
                    r->t0 + sv_time_add_sat(r->prologue_ns, sv_time_mul_sat(r->layer_ns, l + 1));
                sv_dag_node *s = add_send(r, p->npus[rs], d->npus[rd], per_layer, l);
                if (ready > now) {
                    sv_dag_node *g = add_node(r, "kv.layer-ready", SV_DAG_KIND_LOGICAL, p->npus[rs],
                                              ready - now, tag_gate);
                    edge(r, fan, g);
                    edge(r, g, s);
                }
                edge(r, prev, s); /* a rank sends its layers in order */
                prev = s;
                messages++;
                bytes += per_layer;
            }
            edge(r, prev, join);
        }
    }
    if (messages == 0)
        edge(r, fan, join);
    pd->stats.messages += messages;
    pd->stats.bytes += bytes;
    GError *e = NULL;
    if (!sv_dag_splice(r->dag, r->bp, fan, join, &e))
        pd_fail(pd, e);
}

/* Pick a decode instance with room and reserve the KV there; FALSE when none has room now. */
static gboolean try_place(pd_req *r)
{
    sv_planner_pd *pd = r->pd;
    const struct sv_planner_pd_instance *p = &pd->inst[r->src];
    int32_t n_cand = 0, n_serve = 0, largest = -1;
    uint32_t largest_blocks = 0;
    gboolean any = FALSE;
    uint64_t total = (uint64_t)r->out.input_tokens + (uint64_t)r->out.output_tokens;
    for (int32_t i = 0; i < pd->n; i++) {
        const struct sv_planner_pd_instance *d = &pd->inst[i];
        if (d->role != SV_MSG_ROLE_DECODE || g_strcmp0(d->model, p->model) != 0)
            continue;
        n_serve++;
        sv_memtier_kv_manager *kv = sv_msg_kv(d->msg);
        uint32_t blocks = sv_memtier_kv_manager_num_blocks(kv);
        if (largest < 0 || blocks > largest_blocks)
            largest = i, largest_blocks = blocks;
        /* Only a decode instance that can ever hold the whole sequence is a candidate, now or
         * later (sv_msg_pd_reserve refuses the others; the run rejects a request none can hold
         * at its arrival: docs/serving.md "Rejected requests"). */
        if ((d->max_model_len > 0 && total > (uint64_t)d->max_model_len) ||
            sv_msg_pd_blocks_needed(d->msg, (int64_t)total) > blocks)
            continue;
        any = TRUE;
        /* Room now, and no preempted request of its own waiting for those blocks: vLLM's decode
         * scheduler allocates a remote request's blocks when it admits it, in queue order. */
        if (sv_memtier_kv_manager_num_free_blocks(kv) >=
                sv_msg_pd_blocks_needed(d->msg, r->out.input_tokens) &&
            sv_msg_pd_num_waiting_unpinned(d->msg) == 0)
            pd->cand[n_cand++] = i;
    }
    if (n_serve == 0) {
        pd_fail(pd, g_error_new(SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                                "request %" G_GUINT64_FORMAT
                                ": no decode instance serves model '%s' (prefill instance %d)",
                                r->out.request_id, p->model, r->src));
        return TRUE; /* nothing to wait for */
    }
    if (!any) {
        /* It would wait for decode memory forever: say why, as the combined path does. */
        g_autofree char *which =
            n_serve > 1
                ? g_strdup_printf(" (the largest of %d serving model '%s')", n_serve, p->model)
                : g_strdup("");
        pd_fail(pd, g_error_new(SV_MSG_ERROR, SV_MSG_ERROR_NOFIT,
                                "request %" G_GUINT64_FORMAT ": %" G_GINT64_FORMAT
                                " tokens need more than the %u KV blocks of decode instance %d%s",
                                r->out.request_id, total, largest_blocks, largest, which));
        return TRUE;
    }
    if (n_cand == 0)
        return FALSE;
    int32_t k = pd->pick ? pd->pick(pd->pick_ctx, &r->out, pd->cand, n_cand) : 0;
    if (k < 0 || k >= n_cand) {
        pd_fail(pd, g_error_new(SV_PLANNER_ERROR, SV_PLANNER_ERROR_RUN,
                                "request %" G_GUINT64_FORMAT
                                ": the router picked decode candidate %d of %d",
                                r->out.request_id, k, n_cand));
        return TRUE;
    }
    int32_t dst = pd->cand[k];
    GError *e = NULL;
    sv_msg_handoff *hd = sv_msg_pd_reserve(pd->inst[dst].msg, &r->out, r->user, &e);
    if (!hd) {
        if (e) {
            pd_fail(pd, e);
            return TRUE;
        }
        return FALSE;
    }
    sv_time now = sv_engine_now(pd->eng);
    r->dst = dst;
    r->hd = hd;
    r->reserved_ns = now;
    pd->incoming[dst]++;
    if (r->waited)
        pd->stats.kv_wait_ns += now - r->bp_ns;
    splice_transfer(r);
    sv_dag_exec_node_done(r->ex, r->bp);
    return TRUE;
}

static void retry_event(sv_engine *eng, void *ctx, uint64_t arg)
{
    sv_planner_pd *pd = ctx;
    pd->retry_pending = FALSE;
    /* FIFO: a later (maybe smaller) request never overtakes the head, as vLLM's waiting queue. */
    while (!g_queue_is_empty(&pd->waiting) && !pd->error) {
        pd_req *r = g_queue_peek_head(&pd->waiting);
        if (!try_place(r))
            break;
        g_queue_pop_head(&pd->waiting);
    }
}

void sv_planner_pd_decode_progress(sv_planner_pd *pd, int32_t instance)
{
    if (!pd || g_queue_is_empty(&pd->waiting) || pd->retry_pending)
        return;
    pd->retry_pending = TRUE;
    sv_engine_schedule_in(pd->eng, 0, PD_PRIO, retry_event, pd, 0);
}

/* ---- node handlers ----------------------------------------------------------------------------
 */

static void logical_handler(sv_dag_exec *ex, sv_dag_node *node, void *ctx)
{
    pd_req *r = ctx;
    sv_planner_pd *pd = r->pd;
    if (node->user == tag_bp) {
        /* The breakpoint: back to the global router. Waiting requests queue behind each other. */
        if (!g_queue_is_empty(&pd->waiting) || !try_place(r)) {
            r->waited = TRUE;
            pd->stats.kv_waits++;
            g_queue_push_tail(&pd->waiting, r);
            if (pd->waiting.length > pd->stats.max_waiting)
                pd->stats.max_waiting = pd->waiting.length;
        }
        return;
    }
    if (node->user == tag_admit) {
        sv_time now = sv_engine_now(pd->eng);
        sv_time t = now - r->reserved_ns;
        pd->stats.transfer_ns += t;
        if (t > pd->stats.max_transfer_ns)
            pd->stats.max_transfer_ns = t;
        pd->stats.handoffs++;
        pd->incoming[r->dst]--;
        sv_msg_pd_release(pd->inst[r->src].msg, r->hp);
        r->hp = NULL;
        r->out.kv_ready_ns = now;
        sv_planner__trace_kv(pd->trace, r->out.request_id, r->src, r->dst, r->reserved_ns, now);
        for (guint k = 0; r->et_recv && k + 1 < r->et_recv->len; k += 2)
            sv_msg_et_out_received(pd->et, (int32_t)g_array_index(r->et_recv, uint64_t, k),
                                   g_array_index(r->et_recv, uint64_t, k + 1));
        sv_msg_pd_admit(pd->inst[r->dst].msg, r->hd, &r->out);
        r->hd = NULL;
        sv_dag_exec_node_done(ex, node);
        return;
    }
    if (node->user == tag_pfdone) {
        if (r->prefill_finished)
            sv_dag_exec_node_done(ex, node);
        return; /* else completed when the prefill side commits (sv_planner_pd_prefill_done) */
    }
    if (node->user == tag_gate && node->duration_ns > 0) {
        sv_dag_exec_handler_replay(ex, node, NULL); /* finishes after its duration */
        return;
    }
    sv_dag_exec_node_done(ex, node); /* fan-out, join */
}

/* The KV hand-off: a one-sided transfer from the prefill to the decode device. */
static void send_handler(sv_dag_exec *ex, sv_dag_node *node, void *ctx)
{
    pd_req *r = ctx;
    if (r->pd->et) {
        uint64_t recv = 0;
        GError *e = NULL;
        if (!sv_msg_et_out_transfer(r->pd->et, node->device, node->p.comm_dst,
                                    node->p.comm_size_bytes, sv_engine_now(r->pd->eng), &recv,
                                    &e)) {
            pd_fail(r->pd, e);
            return;
        }
        if (!r->et_recv)
            r->et_recv = g_array_new(FALSE, FALSE, sizeof(uint64_t));
        uint64_t rec[2] = {(uint64_t)node->p.comm_dst, recv};
        g_array_append_vals(r->et_recv, rec, 2);
    }
    sv_sys_exec_transfer(ex, node, &r->sx);
}

/* Run-scope ET output: when each KV message arrived (its send's end on the prefill NPU). */
static void et_node_done(sv_dag_exec *ex, sv_dag_node *node, void *ctx)
{
    pd_req *r = ctx;
    if (node->kind == SV_DAG_KIND_COMM_SEND && r->pd->et)
        sv_msg_et_out_note_end(r->pd->et, node->device, sv_engine_now(r->pd->eng));
    if (node->kind == SV_DAG_KIND_COMM_SEND) /* its links on the timeline */
        sv_planner__trace_kv_message(r->pd->trace, r->pd->net, r->out.request_id, node->p.comm_src,
                                     node->p.comm_dst, node->p.comm_size_bytes,
                                     sv_dag_node_start_ns(sv_dag_exec_dag(ex), node),
                                     sv_engine_now(r->pd->eng));
}

void sv_planner_pd_set_et(sv_planner_pd *pd, sv_msg_et_out *et)
{
    pd->et = et;
}

void sv_planner__pd_set_trace(sv_planner_pd *pd, sv_planner_trace *tr)
{
    if (pd)
        pd->trace = tr;
}

static void start_event(sv_engine *eng, void *ctx, uint64_t arg)
{
    pd_req *r = (pd_req *)(uintptr_t)arg;
    sv_dag_exec_start(r->ex);
}

static pd_req *req_new(sv_planner_pd *pd, int32_t instance, sv_msg_handoff *h, gboolean early)
{
    pd_req *r = g_new0(pd_req, 1);
    r->pd = pd;
    r->src = instance;
    r->dst = -1;
    r->hp = h;
    r->out = *sv_msg_handoff_outcome(h);
    r->user = sv_msg_handoff_user(h);
    r->bp_ns = r->t0 = sv_engine_now(pd->eng);
    r->prefill_finished = !early;
    r->dag = sv_dag_new();
    int32_t dev = pd->inst[instance].npus[0];
    char name[64];
    g_snprintf(name, sizeof name, "req%" G_GUINT64_FORMAT ".%s", r->out.request_id,
               early ? "prefill-launch" : "prefill-done");
    r->bp = add_node(r, name, SV_DAG_KIND_LOGICAL, dev, 0, tag_bp);
    g_snprintf(name, sizeof name, "req%" G_GUINT64_FORMAT ".decode-admit", r->out.request_id);
    r->admit = add_node(r, name, SV_DAG_KIND_LOGICAL, dev, 0, tag_admit);
    edge(r, r->bp, r->admit);
    if (early) {
        /* Admission also waits for the prompt to complete on the prefill side. */
        g_snprintf(name, sizeof name, "req%" G_GUINT64_FORMAT ".prefill-done", r->out.request_id);
        r->pf_done = add_node(r, name, SV_DAG_KIND_LOGICAL, dev, 0, tag_pfdone);
        edge(r, r->pf_done, r->admit);
    }
    struct sv_dag_exec_cfg ec = {
        /* The network shares links among messages; no per-device comm slot. */
        .policy = SV_DAG_POLICY_UNLIMITED,
        .handler_ctx = r,
        .on_node_done = pd->et || pd->trace ? et_node_done : NULL,
        .on_all_done = all_done,
        .cb_ctx = r,
    };
    ec.handlers[SV_DAG_KIND_LOGICAL] = logical_handler;
    ec.handlers[SV_DAG_KIND_COMM_SEND] = send_handler;
    r->ex = sv_dag_exec_new(r->dag, pd->eng, &ec, NULL);
    SV_ASSERT(r->ex);
    r->sx = (struct sv_sys_exec){.net = pd->net, .npu = -1, .ex = r->ex};
    g_hash_table_add(pd->live, r);
    /* Called inside the prefill instance's step or commit: start from a fresh event. */
    sv_engine_schedule_in(pd->eng, 0, PD_PRIO, start_event, pd, (uint64_t)(uintptr_t)r);
    return r;
}

void sv_planner_pd_prefill_launch(sv_planner_pd *pd, int32_t instance, sv_msg_handoff *h,
                                  const struct sv_msg_prefill_launch *l)
{
    if (pd->kv_mode != SV_PLANNER_PD_KV_PER_LAYER)
        return;
    pd_req *r = req_new(pd, instance, h, TRUE);
    r->t0 = l->start_ns;
    r->prologue_ns = l->prologue_ns;
    r->layer_ns = l->layer_ns;
    g_hash_table_insert(pd->early, h, r);
}

static void prefill_finished_event(sv_engine *eng, void *ctx, uint64_t arg)
{
    pd_req *r = (pd_req *)(uintptr_t)arg;
    if (sv_dag_node_get_state(r->dag, r->pf_done) == SV_DAG_NODE_ISSUED)
        sv_dag_exec_node_done(r->ex, r->pf_done);
}

void sv_planner_pd_prefill_done(sv_planner_pd *pd, int32_t instance, sv_msg_handoff *h)
{
    pd_req *r = g_hash_table_lookup(pd->early, h);
    if (!r) {
        req_new(pd, instance, h, FALSE);
        return;
    }
    g_hash_table_remove(pd->early, h);
    r->out = *sv_msg_handoff_outcome(h); /* now with its prefill-done time */
    r->prefill_finished = TRUE;
    /* Inside the commit, which still walks this request: admit from a fresh event. */
    sv_engine_schedule_in(pd->eng, 0, PD_PRIO, prefill_finished_event, pd, (uint64_t)(uintptr_t)r);
}

/* ---- lifecycle ------------------------------------------------------------------------------ */

sv_planner_pd *sv_planner_pd_new(const struct sv_planner_pd_cfg *cfg, GError **error)
{
    if (!cfg->eng || !cfg->net || cfg->n_instances < 1 || !cfg->inst) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                    "disaggregation needs an engine, a network and instances");
        return NULL;
    }
    int npus = sv_net_npus(cfg->net);
    for (int32_t i = 0; i < cfg->n_instances; i++) {
        const struct sv_planner_pd_instance *in = &cfg->inst[i];
        if (in->role == SV_MSG_ROLE_BOTH)
            continue;
        if (!in->msg || in->tp < 1 || in->pp < 1 || in->num_layers < in->pp || !in->npus ||
            in->kv_bytes_per_token_layer == 0) {
            g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                        "instance %d: incomplete disaggregation description", i);
            return NULL;
        }
        for (int32_t k = 0; k < in->tp * in->pp; k++) {
            if (in->npus[k] < 0 || in->npus[k] >= npus) {
                g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                            "instance %d: rank %d on NPU %d, outside the %d-NPU network", i, k,
                            in->npus[k], npus);
                return NULL;
            }
        }
    }
    sv_planner_pd *pd = g_new0(sv_planner_pd, 1);
    pd->eng = cfg->eng;
    pd->net = cfg->net;
    pd->kv_mode = cfg->kv_mode;
    pd->n = cfg->n_instances;
    pd->inst = g_memdup2(cfg->inst, sizeof *cfg->inst * (gsize)cfg->n_instances);
    pd->incoming = g_new0(uint32_t, cfg->n_instances);
    pd->cand = g_new0(int32_t, cfg->n_instances);
    pd->pick = cfg->pick;
    pd->pick_ctx = cfg->pick_ctx;
    g_queue_init(&pd->waiting);
    pd->live = g_hash_table_new_full(g_direct_hash, g_direct_equal, (GDestroyNotify)req_free, NULL);
    pd->early = g_hash_table_new(g_direct_hash, g_direct_equal);
    return pd;
}

void sv_planner_pd_free(sv_planner_pd *pd)
{
    if (!pd)
        return;
    g_queue_clear(&pd->waiting);
    g_hash_table_destroy(pd->early);
    g_hash_table_destroy(pd->live); /* handoffs still held are freed with their msgs */
    g_clear_error(&pd->error);
    g_free(pd->inst);
    g_free(pd->incoming);
    g_free(pd->cand);
    g_free(pd);
}

uint32_t sv_planner_pd_incoming(const sv_planner_pd *pd, int32_t instance)
{
    return pd && instance >= 0 && instance < pd->n ? pd->incoming[instance] : 0;
}

uint32_t sv_planner_pd_num_waiting(const sv_planner_pd *pd)
{
    return pd ? pd->waiting.length : 0;
}

gboolean sv_planner_cluster_is_disaggregated(const struct sv_planner_cluster_cfg *cl)
{
    for (int32_t i = 0; i < cl->n_instances; i++)
        if (cl->instances[i].role != SV_MSG_ROLE_BOTH)
            return TRUE;
    return FALSE;
}

const GError *sv_planner_pd_error(const sv_planner_pd *pd)
{
    return pd ? pd->error : NULL;
}

void sv_planner_pd_get_stats(const sv_planner_pd *pd, struct sv_planner_pd_stats *out)
{
    *out = pd->stats;
}
