/* Operation mapper and operation scheduler: the iteration in flight becomes a DAG of operators on
 * the instance's devices, with durations from compute/, executed by the dag executor.
 *
 * The batch is one shape for the whole iteration (LLMServingSim trace_generator: dense layers
 * keyed by the batch's tokens, lm_head and sampler by its sequences, attention one 4-D lookup
 * with summed prefill chunks and histories and the floor of the mean decode KV; VALIDATION_NOTES
 * items 1-3). Every layer of a dense model has the same shape, so by default one node stands for
 * the decoder stack on each device (prologue -> layers -> head); with --emit-et, or on several
 * devices (TP all-reduce between operators), the DAG is built per layer and operator, the form
 * LLMServingSim hands to ASTRA-sim. Both run through the executor; their times agree to the
 * nanosecond on one device (sum of the same integer operator times). */
#include "msg/msg_internal.h"

#include <math.h>
#include <string.h>

/* Nodes after which a kept iteration DAG is replaced (bounds memory; see sv_msg__launch). */
#define MSG_DAG_RECYCLE_NODES 3000

sv_dag_node *sv_msg__add_node(sv_msg *m, const char *name, sv_dag_kind kind, int32_t dev,
                              sv_time dur, sv_dag_node *parent)
{
    struct sv_dag_node_cfg nc = {
        .id = sv_dag_next_id(m->dag),
        .name = name,
        .kind = kind,
        .device = dev,
        .duration_ns = dur,
    };
    sv_dag_node *n = sv_dag_node_add(m->dag, &nc, NULL);
    SV_ASSERT(n != NULL);
    if (parent)
        SV_ASSERT(sv_dag_edge_add(m->dag, parent, n, SV_DAG_EDGE_DATA, NULL));
    return n;
}

/* Ring all-reduce of `bytes` over `n` ranks: 2(n-1) steps of bytes/n each, per-step link
 * latency (ASTRA-sim's analytical ring; VALIDATION_NOTES item 6 for the unit convention). */
static sv_time ring_allreduce_ns(const struct sv_msg_cfg *c, uint64_t bytes)
{
    int n = c->num_devices;
    if (n <= 1 || bytes == 0)
        return 0;
    double bpns = sv_bw_gbps_to_bytes_per_ns(c->link_bw_gbps > 0 ? c->link_bw_gbps : 1.0);
    double steps = 2.0 * (n - 1);
    return sv_time_from_ns(steps * ((double)bytes / n / bpns + c->link_latency_ns));
}

/* Node names ("L<layer>.<op>[.<suffix>]") only serve the ET output (--emit-et) and the timeline
 * (--trace, hooks.on_op): without them the per-layer nodes stay unnamed (NULL). Formatting and
 * interning a name for each of the ~2,000 nodes of a TP 2 iteration was ~20 % of a TP serving run's
 * CPU (perf, Qwen3-32B TP 2, 300 requests). Stall diagnostics still give each node's id, kind and
 * device. */
static const char *op_name(const sv_msg *m, char *buf, size_t size, int layer,
                           sv_compute_op_kind op, const char *suffix)
{
    if (!m->et && !m->hooks.on_op)
        return NULL;
    const char *on = sv_compute_op_name(op);
    if (layer >= 0)
        g_snprintf(buf, size, "L%d.%s%s", layer, on, suffix);
    else
        g_snprintf(buf, size, "%s%s", on, suffix);
    return buf;
}

/* A node that stands for several operators: named only for a timeline (sv_msg_hooks.on_op). */
static const char *label(const sv_msg *m, const char *name)
{
    return m->hooks.on_op ? name : NULL;
}

void sv_msg__report_op(sv_msg *m, const sv_dag *dag, const sv_dag_node *n)
{
    if (!m->hooks.on_op || n->kind == SV_DAG_KIND_LOGICAL || n->kind == SV_DAG_KIND_METADATA ||
        n->kind == SV_DAG_KIND_INVALID || n->kind == SV_DAG_KIND_COMM_RECV)
        return;
    struct sv_msg_op op = {
        .instance = m->cfg.instance,
        .device = n->device,
        .kind = n->kind,
        .name = n->name && *n->name ? n->name : sv_dag_kind_name(n->kind),
        .start_ns = sv_dag_node_start_ns(dag, n),
        .end_ns = sv_dag_node_end_ns(dag, n),
        .bytes = (n->p.has & SV_DAG_HAS_COMM_SIZE) ? n->p.comm_size_bytes : 0,
    };
    if (op.end_ns < 0)
        op.end_ns = sv_engine_now(m->eng);
    if (op.start_ns < 0)
        op.start_ns = op.end_ns;
    m->hooks.on_op(m->hooks.op_ctx, &op);
}

/* ET output: the operator's FLOPs and bytes on this rank (sv_compute_op_cost) as num_ops and
 * tensor_size, for tools that time compute nodes by their own roofline (ASTRA-sim's
 * roofline-enabled, CHAKRA_ET.md 3.3). `s` NULL: the batch's shape. */
static void et_cost(const sv_msg *m, sv_dag_node *n, sv_compute_op_kind op,
                    const struct sv_compute_batch_shape *s)
{
    if (!m->et || !m->et_shape)
        return;
    int32_t pp = m->cfg.pp_size > 1 ? m->cfg.pp_size : 1;
    int tp = MAX(1, m->cfg.num_devices / pp);
    double flops = 0, bytes = 0;
    sv_compute_op_cost(sv_compute_latency_model(m->cfg.lat), tp, op, s ? s : m->et_shape, &flops,
                       &bytes);
    n->p.has |= SV_DAG_HAS_NUM_OPS | SV_DAG_HAS_TENSOR_SIZE;
    n->p.num_ops = (int64_t)(flops + 0.5);
    n->p.tensor_size_bytes = (uint64_t)(bytes + 0.5);
}

static sv_dag_node *add_ops(sv_msg *m, const struct sv_compute_iter_op *ops, int n_ops, int32_t dev,
                            int layer, sv_dag_node *prev)
{
    char name[80];
    for (int i = 0; i < n_ops; i++) {
        prev = sv_msg__add_node(m, op_name(m, name, sizeof name, layer, ops[i].op, ""),
                                SV_DAG_KIND_COMP, dev, ops[i].ns, prev);
        et_cost(m, prev, ops[i].op, NULL);
        if (ops[i].allreduce_bytes > 0 && m->cfg.num_devices > 1) {
            sv_dag_node *ar =
                sv_msg__add_node(m, op_name(m, name, sizeof name, layer, ops[i].op, ".allreduce"),
                                 SV_DAG_KIND_COMM_COLL, dev,
                                 ring_allreduce_ns(&m->cfg, ops[i].allreduce_bytes), prev);
            ar->p.has |= SV_DAG_HAS_COMM_TYPE | SV_DAG_HAS_COMM_SIZE;
            ar->p.comm_type = SV_DAG_COLL_ALL_REDUCE;
            ar->p.comm_size_bytes = ops[i].allreduce_bytes;
            prev = ar;
        }
    }
    return prev;
}

/* One rank's chain with weight parts streamed from lower tiers (msg/offload.c): built per layer
 * (per operator when `detailed`), each streamed part preceded by its MEM_LOAD. */
static sv_dag_node *build_streamed(sv_msg *m, const struct sv_compute_iter_time *it, int32_t r,
                                   int32_t dev, int64_t lb, int64_t le, gboolean detailed,
                                   sv_dag_node *prev)
{
    int64_t nl = sv_compute_latency_model(m->cfg.lat)->num_layers;
    struct sv_msg__stream st;
    sv_msg__stream_begin(m, &st, r);
    sv_dag_node *ld;
    if (lb == 0) {
        ld = sv_msg__stream_pre(m, &st, nl, dev, &prev);
        if (detailed)
            prev = add_ops(m, it->prologue, it->n_prologue, dev, -1, prev);
        else if (it->prologue_ns > 0)
            prev = sv_msg__add_node(m, label(m, "prologue"), SV_DAG_KIND_COMP, dev, it->prologue_ns,
                                    prev);
        sv_msg__stream_post(m, &st, ld, &prev);
    }
    for (int64_t l = lb; l < le; l++) {
        ld = sv_msg__stream_pre(m, &st, l, dev, &prev);
        if (detailed)
            prev = add_ops(m, it->layer, it->n_layer, dev, (int)l, prev);
        else if (it->layer_ns > 0)
            prev =
                sv_msg__add_node(m, label(m, "layers"), SV_DAG_KIND_COMP, dev, it->layer_ns, prev);
        sv_msg__stream_post(m, &st, ld, &prev);
    }
    if (le == nl) {
        ld = sv_msg__stream_pre(m, &st, nl + 1, dev, &prev);
        if (detailed)
            prev = add_ops(m, it->head, it->n_head, dev, -1, prev);
        else if (it->head_ns > 0 || prev == NULL)
            prev = sv_msg__add_node(m, label(m, "head"), SV_DAG_KIND_COMP, dev, it->head_ns, prev);
        sv_msg__stream_post(m, &st, ld, &prev);
    }
    return prev;
}

static sv_dag_node *emit_ops(sv_msg *m, const struct sv_compute_iter_op *ops, int n_ops,
                             int32_t dev, int layer, void *user, sv_dag_node *prev)
{
    (void)user;
    return add_ops(m, ops, n_ops, dev, layer, prev);
}

static void build_dag(sv_msg *m, const struct sv_compute_iter_time *it)
{
    if (sv_msg__pim_active(m)) {
        /* PIM attention / sub-batches / local weight loads (msg/pim.c): per layer. */
        sv_dag_node *kv_join = sv_msg__kv_loads(m);
        for (int32_t r = 0; r < m->cfg.num_devices; r++) {
            struct sv_msg__chain c = {.dev = m->cfg.first_device + r,
                                      .layer_begin = 0,
                                      .layer_end = it->n_layers,
                                      .emit = emit_ops};
            sv_msg__pim_chain(m, &c, kv_join);
        }
        sv_msg__kv_loads_done(m);
        return;
    }
    gboolean detailed = m->et != NULL || m->cfg.num_devices > 1;
    /* Prefix loads from lower tiers admitted this step (msg/offload.c): before the first layer,
     * or per layer (then the DAG is built per layer). */
    sv_dag_node *kv_join = sv_msg__kv_loads(m);
    gboolean stream = sv_msg__streams(m) || sv_msg__kv_per_layer(m);
    for (int32_t r = 0; r < m->cfg.num_devices; r++) {
        int32_t dev = m->cfg.first_device + r;
        sv_dag_node *prev = sv_msg__spec_draft_node(m, dev, kv_join); /* speculative: drafts */
        if (stream) {
            build_streamed(m, it, r, dev, 0, it->n_layers, detailed, prev);
        } else if (detailed) {
            prev = add_ops(m, it->prologue, it->n_prologue, dev, -1, prev);
            for (int64_t l = 0; l < it->n_layers; l++)
                prev = add_ops(m, it->layer, it->n_layer, dev, (int)l, prev);
            prev = add_ops(m, it->head, it->n_head, dev, -1, prev);
        } else {
            /* Zero-time nodes are left out: ASTRA-sim's replay charges them 1 ns. Unnamed
             * (prologue, layers, head), as this form is never written as ET (see op_name). */
            if (it->prologue_ns > 0)
                prev = sv_msg__add_node(m, label(m, "prologue"), SV_DAG_KIND_COMP, dev,
                                        it->prologue_ns, prev);
            if (it->layer_ns > 0 && it->n_layers > 0)
                prev = sv_msg__add_node(m, label(m, "layers"), SV_DAG_KIND_COMP, dev,
                                        sv_time_mul_sat(it->layer_ns, it->n_layers), prev);
            if (it->head_ns > 0 || prev == NULL)
                prev =
                    sv_msg__add_node(m, label(m, "head"), SV_DAG_KIND_COMP, dev, it->head_ns, prev);
        }
    }
    sv_msg__kv_loads_done(m);
}

static void single_node_done(sv_dag_exec *ex, sv_dag_node *n, void *ctx)
{
    sv_msg *m = ctx;
    if (m->et)
        sv_msg__et_node_done(m, sv_dag_exec_dag(ex), n);
    sv_msg__report_op(m, sv_dag_exec_dag(ex), n);
}

static void on_all_done(sv_dag_exec *ex, void *ctx)
{
    sv_msg *m = ctx;
    sv_msg__iter_finished(m);
}

static gboolean par_launch(sv_msg *m, const struct sv_compute_batch_shape *shape_in,
                           GError **error);

gboolean sv_msg__launch(sv_msg *m, GError **error)
{
    /* Sized for the worst case and filled in place (per-element appends showed in profiles). */
    guint n_slots = m->inflight->len, n_pf = 0, n_dec = 0;
    if (m->hooks.on_iter_start && n_slots > 0) {
        g_array_set_size(m->start_entries, n_slots);
        for (guint i = 0; i < n_slots; i++) {
            const msg_slot *s = &g_array_index(m->inflight, msg_slot, i);
            g_array_index(m->start_entries, struct sv_msg_sched_entry, i) =
                (struct sv_msg_sched_entry){s->req->out.request_id, s->num_new, s->computed_before};
        }
        m->hooks.on_iter_start(m->hooks.ctx, m->cfg.instance, sv_engine_now(m->eng),
                               (const struct sv_msg_sched_entry *)(void *)m->start_entries->data,
                               n_slots);
    }
    g_array_set_size(m->pf_chunk, n_slots);
    g_array_set_size(m->pf_hist, n_slots);
    g_array_set_size(m->dec_kv, n_slots);
    int64_t *pf_chunk = (int64_t *)(void *)m->pf_chunk->data;
    int64_t *pf_hist = (int64_t *)(void *)m->pf_hist->data;
    int64_t *dec_kv = (int64_t *)(void *)m->dec_kv->data;
    for (guint i = 0; i < n_slots; i++) {
        const msg_slot *s = &g_array_index(m->inflight, msg_slot, i);
        /* Classified by the scheduled count, as LLMServingSim's _build_batch: more than one
         * token is a chunk (also a resumed request's recomputation), exactly one a decode. */
        if (s->num_new > 1) {
            pf_chunk[n_pf] = s->num_new;
            pf_hist[n_pf++] = s->computed_before;
        } else {
            dec_kv[n_dec++] = s->computed_before;
        }
    }
    g_array_set_size(m->pf_chunk, n_pf);
    g_array_set_size(m->pf_hist, n_pf);
    g_array_set_size(m->dec_kv, n_dec);
    struct sv_compute_batch_shape shape;
    sv_compute_batch_shape_init(&shape, (const int64_t *)(void *)m->pf_chunk->data,
                                (const int64_t *)(void *)m->pf_hist->data, m->pf_chunk->len,
                                (const int64_t *)(void *)m->dec_kv->data, m->dec_kv->len);
    sv_msg__kv_live_bytes(m);      /* live KV off the device: this batch's per-layer traffic */
    sv_msg__pim_launch(m, &shape); /* PIM attention: decode attention off the NPU (msg/pim.c) */
    if (m->afd)                    /* attention/FFN disaggregation (msg/afd_run.c) */
        return sv_msg__afd_launch(m, &shape, error);
    if (m->par)
        return par_launch(m, &shape, error);
    struct sv_compute_iter_time it;
    const struct sv_compute_model_cfg *mc = sv_compute_latency_model(m->cfg.lat);
    sv_compute_iter_time(m->cfg.lat, &shape, 0, mc->num_layers, &it);

    /* Without ET output the DAG and its executor are kept across iterations and recycled every
     * MSG_DAG_RECYCLE_NODES nodes: a fresh DAG per step would cost more than the step itself
     * (page allocation), and memory stays bounded. The executor picks up the appended nodes. */
    if (m->dag && (m->et || sv_dag_node_count(m->dag) >= MSG_DAG_RECYCLE_NODES)) {
        if (m->et && !sv_msg__et_dag_retire(m, m->dag, error))
            return FALSE;
        g_clear_pointer(&m->exec, sv_dag_exec_free);
        g_clear_pointer(&m->dag, sv_dag_free);
    }
    gboolean fresh = m->dag == NULL;
    if (fresh) /* ET output: ids unique over the run (one file per device in run scope) */
        m->dag = m->et ? sv_dag_new_from(m->et_next_id) : sv_dag_new();
    m->et_first = (uint32_t)sv_dag_node_count(m->dag);
    m->et_shape = &shape;
    build_dag(m, &it);
    m->et_shape = NULL;
    if (m->et && !sv_msg__et_launched(m, m->et_first, sv_engine_now(m->eng), error)) {
        g_clear_pointer(&m->dag, sv_dag_free);
        return FALSE;
    }
    if (!fresh)
        return TRUE; /* appended nodes are issued by the running executor */
    struct sv_dag_exec_cfg ec = {
        .policy = SV_DAG_POLICY_ASTRA,
        .on_node_done = m->et || m->hooks.on_op ? single_node_done : NULL,
        .on_all_done = on_all_done,
        .cb_ctx = m,
    };
    if (sv_msg__tiers_on(m)) {
        ec.handler_ctx = m;
        ec.handlers[SV_DAG_KIND_MEM_LOAD] = sv_msg__mem_handler;
        ec.handlers[SV_DAG_KIND_MEM_STORE] = sv_msg__mem_handler;
    }
    m->exec = sv_dag_exec_new(m->dag, m->eng, &ec, error);
    if (!m->exec) {
        g_clear_pointer(&m->dag, sv_dag_free);
        return FALSE;
    }
    sv_dag_exec_start(m->exec);
    return TRUE;
}

/* ---- the parallel path (issue 4; docs/parallelism.md) -----------------------------------------
 *
 * Taken when the instance has a cluster network (cfg.coll) and more than one device, expert
 * parallelism or a data-parallel group. The iteration is built per stage, rank, layer and
 * operator: TP all-reduces after o_proj and down_proj as collectives of the stage's TP group,
 * the MoE block as dispatch -> expert compute (per rank, from its routed load) -> combine on the
 * EP group, hidden states sent stage to stage (point-to-point, sized tokens x hidden x bytes),
 * and a LOGICAL join node that completes the batch. Up to pp_size batches are in flight
 * (LLMServingSim scheduler.py keeps an inflight list capped at pp_size, vLLM's batch_queue);
 * they commit in launch order. */

typedef struct {
    GArray *slots; /* msg_slot of this batch (taken from m->inflight) */
    sv_time start_ns;
    sv_dag_node *final;
    gboolean done;
    gboolean dummy;     /* DP idle member's dummy step: no request, no record */
    double pim_busy_ns; /* PIM statistics of its launch */
    uint64_t pim_xfer_bytes;
} par_batch;

/* One DAG of the parallel path with its executor. The executor's handler context: the system
 * layer's handler context first (sv_sys_exec keeps the executor that issued its nodes, so each
 * executor needs its own), then the msg. */
typedef struct {
    struct sv_sys_exec sx;
    sv_msg *m;
    sv_dag *dag; /* owned only while retiring (the current one is m->dag / m->exec) */
    sv_dag_exec *exec;
} par_gen;

/* A device's last node in a retired DAG, still running, and the gate of the new DAG that the
 * next batch's first node there waits for: `relay`, a LOGICAL child of that node in the old DAG,
 * completes `gate` when issued (par_logical_handler). */
typedef struct {
    sv_dag_node *relay;
    par_gen *to;
    sv_dag_node *gate;
    gboolean released; /* the relay ran before the new executor issued the gate */
} par_relay;

struct msg_par {
    struct sv_sys_exec sx; /* comm nodes: the system layer's handlers (template of par_gen.sx) */
    int32_t tp, pp;
    GQueue batches;              /* par_batch*, launch order */
    gboolean commit_due;         /* a commit event is scheduled for the head batch */
    int64_t comm_tokens;         /* DP wave: tokens sizing the MoE exchange (0 = own) */
    gboolean moe;                /* model has MoE layers and ep_size > 1 */
    struct sv_msg_moe_xchg xchg; /* the batch being built: its MoE exchange */
    int32_t ep_members;          /* instances sharing the experts (the DP group's size, else 1) */
    int32_t ep_k;                /* TP ranks per EP rank (tp / (ep_size / ep_members)) */
    const struct sv_msg_expert_route_ops *route;
    void *route_state;
    int64_t *counts;               /* per expert */
    struct sv_msg_moe_rank *ranks; /* per EP rank */
    sv_dag_node **last;            /* per rank of a stage, scratch */
    sv_dag_node **tail;            /* per device: the last batch's last node there */
    uint64_t tag;                  /* point-to-point tag base (instance) */
    par_gen *cur;                  /* m->dag's executor context */
    GPtrArray *retiring;           /* par_gen*: DAGs replaced with batches still on them */
    GArray *relays;                /* par_relay, pending */
    GPtrArray *spare_slots;        /* emptied slot arrays (GArray of msg_slot) for new batches */
    GPtrArray *spare_batches;      /* par_batch records to reuse */
    gboolean fold;                 /* iterations may be folded (par_fold_ns) */
    uint64_t folded;               /* iterations launched folded */
    uint64_t ar_bytes[4];          /* closed-form TP all-reduce times by size, 0 = unused */
    sv_time ar_ns[4];              /* -1: no closed form for that size */
    uint64_t ar_booked[4];         /* folded all-reduces of that size not yet booked */
    int ar_next;
};

static gboolean par_wanted(const struct sv_msg_cfg *c)
{
    int32_t pp = c->pp_size > 1 ? c->pp_size : 1;
    return c->coll != NULL && (c->num_devices > 1 || pp > 1 || c->dp != NULL || c->ep_size > 1);
}

static void par_fail(void *ctx, GError *err);

gboolean sv_msg__par_init(sv_msg *m, GError **error)
{
    const struct sv_msg_cfg *c = &m->cfg;
    int32_t pp = c->pp_size > 1 ? c->pp_size : 1;
    if (!par_wanted(c)) {
        if (pp > 1 || c->dp != NULL || c->ep_size > 1) {
            g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                        "instance %d: pipeline, expert or data parallelism needs the cluster "
                        "network (cfg.coll)",
                        c->instance);
            return FALSE;
        }
        return TRUE;
    }
    if (c->manual || !c->lat) {
        g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                    "instance %d: the parallel path needs a latency model and the engine loop",
                    c->instance);
        return FALSE;
    }
    if (c->num_devices % pp != 0) {
        g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                    "instance %d: %d devices do not split into %d pipeline stages", c->instance,
                    c->num_devices, pp);
        return FALSE;
    }
    const struct sv_compute_model_cfg *mc = sv_compute_latency_model(c->lat);
    if (pp > mc->num_layers) {
        g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                    "instance %d: pp_size %d exceeds the model's %" G_GINT64_FORMAT " layers",
                    c->instance, pp, mc->num_layers);
        return FALSE;
    }
    struct msg_par *P = g_new0(struct msg_par, 1);
    m->par = P;
    P->pp = pp;
    P->tp = c->num_devices / pp;
    P->sx = (struct sv_sys_exec){
        .sys = c->coll,
        .npu = -1, /* each node runs on its own device */
        .group_in_comm_tag = TRUE,
        .fail = par_fail,
        .fail_ctx = m,
    };
    g_queue_init(&P->batches);
    P->last = g_new0(sv_dag_node *, (size_t)P->tp);
    P->tail = g_new0(sv_dag_node *, (size_t)(P->tp * P->pp));
    P->tag = (uint64_t)c->instance;
    P->retiring = g_ptr_array_new();
    P->relays = g_array_new(FALSE, FALSE, sizeof(par_relay));
    P->spare_slots = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    P->spare_batches = g_ptr_array_new_with_free_func(g_free);
    P->moe = sv_compute_model_is_moe(mc) && c->ep_size > 1;
    if (P->moe) {
        /* EP ranks of this member: ep_size over the DP group's members (planner/cluster_net.c);
         * TP rank r is EP rank ep_rank_base + r / ep_k, one EP group per stage and r mod ep_k. */
        int32_t members = c->dp ? sv_msg_dp_size(c->dp) : 1;
        int32_t epm = c->ep_size / members;
        if (c->ep_size > mc->num_experts || c->ep_size % members != 0 || epm < 1 ||
            P->tp % epm != 0 || c->ep_rank_base < 0 || c->ep_rank_base + epm > c->ep_size) {
            g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                        "instance %d: EP ranks %d..%d do not fit ep_size %d (%" G_GINT64_FORMAT
                        " experts, tp %d)",
                        c->instance, c->ep_rank_base, c->ep_rank_base + epm - 1, c->ep_size,
                        mc->num_experts, P->tp);
            return FALSE;
        }
        P->ep_members = members;
        P->ep_k = P->tp / epm;
        P->route = c->expert_route;
        if (!P->route)
            P->route = sv_msg_expert_route_balanced();
        g_autofree char *stream = g_strdup_printf("msg/expert_route/%d", c->instance);
        sv_rng *rng = sv_rng_stream(m->eng, stream);
        if (P->route->create) {
            P->route_state = P->route->create(c->expert_route_param, rng, error);
            if (!P->route_state) {
                g_prefix_error(error, "instance %d: ", c->instance);
                return FALSE;
            }
        }
        P->counts = g_new0(int64_t, (size_t)mc->num_experts);
        P->ranks = g_new0(struct sv_msg_moe_rank, (size_t)c->ep_size);
    }
    m->cfg.expert_route_param = NULL; /* borrowed for create only */
    /* What a folded iteration leaves out must not matter (docs/parallelism.md "Folded
     * iterations"): one stage (no stage transfers), no expert exchange, no DP wave, no ET output
     * (it needs the per-layer nodes), no memory tiers or local weight loads (their MEM nodes hold
     * the device's communication slot, which the all-reduces of a batch in flight would wait
     * for), and links that nothing else uses (c->tp_fold, checked by the planner). */
    P->fold = c->tp_fold && P->tp > 1 && P->pp == 1 && !P->moe && c->dp == NULL && !m->et &&
              !sv_msg__tiers_on(m) && !(c->local_load_bytes_per_ns > 0);
    return TRUE;
}

static void par_ar_flush(sv_msg *m, int k);

void sv_msg__par_free(sv_msg *m)
{
    struct msg_par *P = m->par;
    if (!P)
        return;
    par_batch *b;
    while ((b = g_queue_pop_head(&P->batches))) {
        g_array_free(b->slots, TRUE);
        g_free(b);
    }
    for (int k = 0; k < (int)G_N_ELEMENTS(P->ar_bytes); k++)
        par_ar_flush(m, k);
    if (P->route && P->route->destroy && P->route_state)
        P->route->destroy(P->route_state);
    g_free(P->counts);
    g_free(P->ranks);
    g_free(P->last);
    g_free(P->tail);
    for (guint i = 0; i < P->retiring->len; i++) {
        par_gen *g = g_ptr_array_index(P->retiring, i);
        sv_dag_exec_free(g->exec);
        sv_dag_free(g->dag);
        g_free(g);
    }
    g_ptr_array_free(P->retiring, TRUE);
    g_ptr_array_free(P->spare_slots, TRUE);
    g_ptr_array_free(P->spare_batches, TRUE);
    g_array_free(P->relays, TRUE);
    g_free(P->cur); /* its DAG and executor are m->dag / m->exec (msg.c frees them) */
    g_free(P);
    m->par = NULL;
}

uint32_t sv_msg__par_in_flight(const sv_msg *m)
{
    return m->par ? m->par->batches.length : 0;
}

uint64_t sv_msg_num_folded(const sv_msg *m)
{
    return m->par ? m->par->folded : 0;
}

void sv_msg__par_set_comm_tokens(sv_msg *m, int64_t tokens)
{
    if (m->par)
        m->par->comm_tokens = tokens;
}

static void par_fail(void *ctx, GError *err)
{
    sv_msg__fail(ctx, err);
}

/* COMM_COLL on communicator group p.comm_tag, COMM_SEND / COMM_RECV of hidden states between
 * pipeline stages: the system layer's handlers, on the MSG's context. */
static void par_coll_handler(sv_dag_exec *ex, sv_dag_node *n, void *ctx)
{
    par_gen *g = ctx;
    sv_sys_exec_coll(ex, n, &g->sx);
}

static void par_send_handler(sv_dag_exec *ex, sv_dag_node *n, void *ctx)
{
    par_gen *g = ctx;
    sv_sys_exec_send(ex, n, &g->sx);
}

static void par_recv_handler(sv_dag_exec *ex, sv_dag_node *n, void *ctx)
{
    par_gen *g = ctx;
    sv_sys_exec_recv(ex, n, &g->sx);
}

static void par_mem_handler(sv_dag_exec *ex, sv_dag_node *n, void *ctx)
{
    par_gen *g = ctx;
    sv_msg__mem_handler(ex, n, g->m);
}

static char par_gate_tag; /* node->user of a gate (see par_relay) */

/* LOGICAL nodes complete at once (the executor's built-in), except a gate, which waits for its
 * relay; a relay completes its gate in the new DAG, whose executor issues what waits on it
 * there and then, as the one DAG would have in this pass. */
static void par_logical_handler(sv_dag_exec *ex, sv_dag_node *n, void *ctx)
{
    par_gen *g = ctx;
    struct msg_par *P = g->m->par;
    if (n->user == &par_gate_tag) {
        for (guint i = 0; i < P->relays->len; i++) {
            par_relay *r = &g_array_index(P->relays, par_relay, i);
            if (r->gate == n && r->released) {
                g_array_remove_index(P->relays, i);
                sv_dag_exec_node_done(ex, n);
                return;
            }
        }
        return; /* its relay completes it */
    }
    sv_dag_exec_node_done(ex, n);
    for (guint i = 0; i < P->relays->len; i++) {
        par_relay *r = &g_array_index(P->relays, par_relay, i);
        if (r->relay != n)
            continue;
        if (r->to && sv_dag_node_get_state(r->to->dag, r->gate) == SV_DAG_NODE_ISSUED) {
            sv_dag_exec *to = r->to->exec;
            sv_dag_node *gate = r->gate;
            g_array_remove_index(P->relays, i);
            sv_dag_exec_node_done(to, gate);
        } else {
            r->released = TRUE; /* the gate completes when its executor issues it */
        }
        return;
    }
}

static void par_maybe_commit(sv_msg *m)
{
    struct msg_par *P = m->par;
    par_batch *head = g_queue_peek_head(&P->batches);
    if (!head || !head->done || P->commit_due)
        return;
    P->commit_due = TRUE;
    /* Host-side part of the step after the device work (msg/host.c), as the single path. */
    sv_msg__schedule_commit(
        m, head->dummy ? 0 : sv_msg_host_step_ns(m->cfg.host_model, head->slots->len));
}

static void par_node_done(sv_dag_exec *ex, sv_dag_node *n, void *ctx)
{
    sv_msg *m = ctx;
    if (m->et)
        sv_msg__et_node_done(m, sv_dag_exec_dag(ex), n);
    sv_msg__report_op(m, sv_dag_exec_dag(ex), n);
    if (n->kind != SV_DAG_KIND_LOGICAL)
        return;
    for (GList *l = m->par->batches.head; l; l = l->next) {
        par_batch *b = l->data;
        if (b->final == n) {
            b->done = TRUE;
            break;
        }
    }
    par_maybe_commit(m);
}

/* Slot arrays and batch records are reused: a fresh array per launch grew by reallocs and
 * showed in profiles of the disaggregated bench (~5 % in malloc). */
static GArray *par_slots_take(struct msg_par *P)
{
    if (P->spare_slots->len == 0)
        return g_array_new(FALSE, FALSE, sizeof(msg_slot));
    GArray *a = g_ptr_array_steal_index_fast(P->spare_slots, P->spare_slots->len - 1);
    g_array_set_size(a, 0);
    return a;
}

static void par_slots_give(struct msg_par *P, GArray *a)
{
    g_ptr_array_add(P->spare_slots, a);
}

void sv_msg__par_commit(sv_msg *m)
{
    struct msg_par *P = m->par;
    P->commit_due = FALSE;
    par_batch *b = g_queue_pop_head(&P->batches);
    /* A DP member with pipeline stages may hold its next batch, scheduled and waiting for the
     * group's wave (msg/parallel.c), while an earlier batch commits: set it aside. */
    GArray *held = NULL;
    if (m->cfg.dp && m->inflight->len > 0) {
        held = m->inflight;
        m->inflight = par_slots_take(P);
    }
    SV_ASSERT(b && b->done && m->inflight->len == 0);
    if (!b->dummy) {
        GArray *spare = m->inflight;
        m->inflight = b->slots;
        b->slots = spare;
        m->iter_start_ns = b->start_ns;
        /* A request may have a later chunk in a batch still in flight: the commit is as of this
         * batch's own end (sv_msg__commit; vLLM discards the sampled token of a partial
         * prefill). */
        sv_msg__commit_iter(m, sv_engine_now(m->eng), b->pim_busy_ns, b->pim_xfer_bytes);
        GArray *t = m->inflight; /* emptied by the commit */
        m->inflight = b->slots;
        b->slots = t;
    }
    par_slots_give(P, b->slots);
    g_ptr_array_add(P->spare_batches, b);
    if (held) {
        par_slots_give(P, m->inflight);
        m->inflight = held;
    }
    /* A held batch keeps the member waiting for its wave. */
    m->busy = (int32_t)P->batches.length >= m->queue_cap || held != NULL;
    par_maybe_commit(m);
}

static sv_dag_node *par_add(sv_msg *m, const char *name, sv_dag_kind kind, int32_t dev, sv_time dur,
                            sv_dag_node *parent)
{
    return sv_msg__add_node(m, name, kind, dev, dur, parent);
}

static sv_dag_node *par_coll(sv_msg *m, const char *name, int32_t dev, sv_sys_coll_type type,
                             uint64_t bytes, int32_t group, sv_dag_node *parent)
{
    sv_dag_node *n = par_add(m, name, SV_DAG_KIND_COMM_COLL, dev, 0, parent);
    n->p.has |= SV_DAG_HAS_COMM_TYPE | SV_DAG_HAS_COMM_SIZE | SV_DAG_HAS_COMM_TAG;
    n->p.comm_type = (int32_t)type;
    n->p.comm_size_bytes = bytes;
    n->p.comm_tag = group;
    return n;
}

/* Expert compute of TP rank r (EP rank ep_rank_base + r / ep_k) for this step's routing.
 *
 * Keyed by the rank's own expert work, whatever the exchange: a moe.csv row of N tokens is one
 * GPU running N tokens x top-k token-expert pairs on its experts (LLMServingSim profiler
 * ExpertCategory / moe_hook: every pair local; output-bundle.md: "local tokens on a single rank
 * after dispatch"), so a rank with P routed pairs is the row N = ceil(P / top-k). With the
 * all-gather backend a rank sees the gathered batch, but vLLM's expert_map skips the pairs of
 * other ranks' experts, so the gathered count is not its work; LLMServingSim's _emit_moe_block
 * looks up GateRouter.route_ep's local_tokens, computed from the rank's own batch (balanced:
 * round(T x (1 - (1 - 1/ep)^k)), about T for Qwen3-30B-A3B's top-8 on EP2), not the gathered 2T. */
static sv_time par_moe_ns(sv_msg *m, const struct sv_compute_batch_shape *shape, int32_t r)
{
    const struct sv_msg_moe_rank *rk = &m->par->ranks[m->cfg.ep_rank_base + r / m->par->ep_k];
    if (rk->pairs == 0)
        return 0; /* no token reaches this rank: no expert kernel */
    struct sv_compute_batch_shape s = *shape;
    s.moe_local_tokens = rk->local_tokens;
    s.moe_activated_experts = rk->activated;
    return sv_compute_op_time(m->cfg.lat, SV_COMPUTE_OP_MOE, &s);
}

static sv_dag_node *par_ops(sv_msg *m, const struct sv_compute_iter_op *ops, int n_ops, int32_t dev,
                            int32_t r, int32_t stage, int layer, sv_time moe_ns, sv_dag_node *prev)
{
    struct msg_par *P = m->par;
    char name[80];
    for (int i = 0; i < n_ops; i++) {
        sv_compute_op_kind op = ops[i].op;
        if (op == SV_COMPUTE_OP_MOE && P->moe) {
            /* Dispatch on the EP group, experts, combine, then the TP group's part (the
             * exchange vLLM runs around the MoE block: sv_msg_moe_xchg_plan). */
            const struct sv_msg_moe_xchg *x = &P->xchg;
            int32_t epg = m->cfg.ep_group + stage * P->ep_k + r % P->ep_k;
            if (x->dispatch_bytes > 0)
                prev = par_coll(m, op_name(m, name, sizeof name, layer, op, ".dispatch"), dev,
                                x->dispatch_type, x->dispatch_bytes, epg, prev);
            if (moe_ns > 0) {
                prev = par_add(m, op_name(m, name, sizeof name, layer, op, ""), SV_DAG_KIND_COMP,
                               dev, moe_ns, prev);
                if (m->et && m->et_shape) {
                    const struct sv_msg_moe_rank *rk = &P->ranks[m->cfg.ep_rank_base + r / P->ep_k];
                    struct sv_compute_batch_shape ls = *m->et_shape;
                    ls.moe_local_tokens = rk->local_tokens;
                    ls.moe_activated_experts = rk->activated;
                    et_cost(m, prev, op, &ls);
                }
            }
            if (x->combine_bytes > 0)
                prev = par_coll(m, op_name(m, name, sizeof name, layer, op, ".combine"), dev,
                                x->combine_type, x->combine_bytes, epg, prev);
            if (x->tp_bytes > 0 && P->tp > 1)
                prev = par_coll(m, op_name(m, name, sizeof name, layer, op, ".tp"), dev, x->tp_type,
                                x->tp_bytes, m->cfg.tp_group_base + stage, prev);
            continue;
        }
        prev = par_add(m, op_name(m, name, sizeof name, layer, op, ""), SV_DAG_KIND_COMP, dev,
                       ops[i].ns, prev);
        et_cost(m, prev, op, NULL);
        if (ops[i].allreduce_bytes > 0 && P->tp > 1) {
            prev = par_coll(m, op_name(m, name, sizeof name, layer, op, ".allreduce"), dev,
                            SV_SYS_ALL_REDUCE, ops[i].allreduce_bytes, m->cfg.tp_group_base + stage,
                            prev);
        }
    }
    return prev;
}

/* ---- folded iterations ----------------------------------------------------------------------
 *
 * On P->fold's conditions an iteration is one COMP node per rank instead of its layers x
 * operators nodes and 2 x layers TP all-reduces: every rank runs the same operators and, its
 * ranks starting together (batches in order, no stage transfer), meets its ring partners at each
 * all-reduce at the same instant, with the ring's links to itself; so each all-reduce takes the
 * system layer's closed form and the rank's chain takes the sum below, which is what the
 * executor gives the per-layer chain (test_parallel fold_* compare both to the ns). */

/* The network statistics count the folded all-reduces' messages as if they had run (bytes
 * booked = bytes moved; the run result's net_messages / net_bytes). A folded iteration adds to a
 * count per size; the count is booked when its cache slot is reused and when the msg is freed,
 * before the run reads the statistics (booking per iteration walked the ring's routes: ~5 % of
 * the disaggregated bench). */
static void par_ar_flush(sv_msg *m, int k)
{
    struct msg_par *P = m->par;
    if (P->ar_booked[k] > 0)
        sv_sys_coll_alone_book(m->cfg.coll, SV_SYS_ALL_REDUCE, P->ar_bytes[k], m->cfg.tp_group_base,
                               P->ar_booked[k]);
    P->ar_booked[k] = 0;
}

/* A TP all-reduce of `bytes` on the instance's ring in closed form (cached per size). */
static gboolean par_ar_ns(sv_msg *m, uint64_t bytes, sv_time *ns)
{
    struct msg_par *P = m->par;
    for (int k = 0; k < (int)G_N_ELEMENTS(P->ar_bytes); k++) {
        if (P->ar_bytes[k] == bytes) {
            *ns = P->ar_ns[k];
            return *ns >= 0;
        }
    }
    sv_time t;
    if (!sv_sys_coll_alone_ns(m->cfg.coll, SV_SYS_ALL_REDUCE, bytes, m->cfg.tp_group_base, &t))
        t = -1;
    par_ar_flush(m, P->ar_next);
    P->ar_bytes[P->ar_next] = bytes;
    P->ar_ns[P->ar_next] = t;
    P->ar_next = (P->ar_next + 1) % (int)G_N_ELEMENTS(P->ar_bytes);
    *ns = t;
    return t >= 0;
}

/* Operators as par_ops chains them: a zero-time node still takes 1 ns (dag/exec.c, ASTRA-sim's
 * issue_replay), each all-reduce its closed form. FALSE when one has none. */
static gboolean fold_ops_ns(sv_msg *m, const struct sv_compute_iter_op *ops, int n, sv_time *ns)
{
    sv_time t = 0; /* saturating (core.h): an op past the horizon keeps the sum there */
    for (int i = 0; i < n; i++) {
        t = sv_time_add_sat(t, ops[i].ns > 0 ? ops[i].ns : 1);
        if (ops[i].allreduce_bytes > 0) {
            sv_time ar;
            if (!par_ar_ns(m, ops[i].allreduce_bytes, &ar))
                return FALSE;
            t = sv_time_add_sat(t, ar);
        }
    }
    *ns = t;
    return TRUE;
}

/* One rank's folded iteration: prologue + layers x layer + head, or FALSE (per-layer DAG). */
static gboolean par_fold_ns(sv_msg *m, const struct sv_compute_iter_time *it, sv_time *ns)
{
    sv_time pro, layer, head;
    if (!fold_ops_ns(m, it->prologue, it->n_prologue, &pro) ||
        !fold_ops_ns(m, it->layer, it->n_layer, &layer) ||
        !fold_ops_ns(m, it->head, it->n_head, &head))
        return FALSE;
    *ns = sv_time_add_sat(sv_time_add_sat(pro, sv_time_mul_sat(layer, it->n_layers)), head);
    return *ns > 0;
}

static void fold_book(sv_msg *m, const struct sv_compute_iter_op *ops, int n, uint64_t times)
{
    struct msg_par *P = m->par;
    for (int i = 0; i < n; i++) {
        if (ops[i].allreduce_bytes == 0)
            continue;
        int k = 0;
        while (k < (int)G_N_ELEMENTS(P->ar_bytes) && P->ar_bytes[k] != ops[i].allreduce_bytes)
            k++;
        if (k < (int)G_N_ELEMENTS(P->ar_bytes))
            P->ar_booked[k] += times;
        else /* more sizes in one iteration than the cache holds */
            sv_sys_coll_alone_book(m->cfg.coll, SV_SYS_ALL_REDUCE, ops[i].allreduce_bytes,
                                   m->cfg.tp_group_base, times);
    }
}

static void par_fold_book(sv_msg *m, const struct sv_compute_iter_time *it)
{
    fold_book(m, it->prologue, it->n_prologue, 1);
    fold_book(m, it->layer, it->n_layer, (uint64_t)it->n_layers);
    fold_book(m, it->head, it->n_head, 1);
}

struct par_emit {
    int32_t r, stage;
    sv_time moe_ns;
};

static sv_dag_node *par_emit_ops(sv_msg *m, const struct sv_compute_iter_op *ops, int n_ops,
                                 int32_t dev, int layer, void *user, sv_dag_node *prev)
{
    const struct par_emit *e = user;
    return par_ops(m, ops, n_ops, dev, e->r, e->stage, layer, e->moe_ns, prev);
}

/* ---- DAG rotation -------------------------------------------------------------------------
 *
 * The DAG and its executor are kept across iterations and replaced every MSG_DAG_RECYCLE_NODES
 * nodes. With no batch in flight the old one is freed at once. With batches in flight (always,
 * under async scheduling or pipeline stages, so the DAG used to grow for the whole run: 2 GB for
 * 1,000 requests of the disaggregated bench), the old one retires: it runs its batches to the
 * end and is freed at a later launch, and the new batches start in a new DAG where each device's
 * first node waits for a gate that a relay, the last node's child in the old DAG, completes.
 * The relay is issued in the pass where the one DAG would have issued that first node, after the
 * same nodes (ids are in creation order in both), so every node starts at the same time and in
 * the same order. Not with nodes off a device's chain (memory tiers' stores, PIM, local loads:
 * they could hold a device slot across the two executors): those keep one DAG. With ET output the
 * new DAG continues the old one's ids, and the files take the cross-DAG order from the device's
 * last node (msg/et_out.c). */
static gboolean par_can_rotate(const sv_msg *m)
{
    return !sv_msg__tiers_on(m) && m->cfg.pim.dev == NULL && !(m->cfg.local_load_bytes_per_ns > 0);
}

static void par_retire_finished(sv_msg *m)
{
    GPtrArray *r = m->par->retiring;
    for (guint i = 0; i < r->len;) {
        par_gen *g = g_ptr_array_index(r, i);
        if (!sv_dag_exec_finished(g->exec)) {
            i++;
            continue;
        }
        if (m->et) { /* its sets are written (every node has finished); nothing may be left */
            GError *e = NULL;
            if (!sv_msg__et_dag_retire(m, g->dag, &e))
                sv_msg__fail(m, e);
        }
        sv_dag_exec_free(g->exec);
        sv_dag_free(g->dag);
        g_free(g);
        g_ptr_array_remove_index(r, i); /* keeps the order */
    }
}

static void par_rotate(sv_msg *m)
{
    struct msg_par *P = m->par;
    m->et_next_id = sv_dag_next_id(m->dag);
    SV_ASSERT(P->cur && P->cur->dag == m->dag && P->cur->exec == m->exec);
    g_ptr_array_add(P->retiring, P->cur);
    P->cur = NULL;
    m->dag = NULL;
    m->exec = NULL;
}

/* In the new DAG (m->dag), a gate per device whose last node (in the DAG just retired) is still
 * to finish; the device's tail becomes the gate. */
static void par_gates(sv_msg *m)
{
    struct msg_par *P = m->par;
    par_gen *old = g_ptr_array_index(P->retiring, P->retiring->len - 1);
    for (int32_t k = 0; k < P->tp * P->pp; k++) {
        sv_dag_node *t = P->tail[k];
        if (!t)
            continue;
        if (sv_dag_node_get_state(old->dag, t) == SV_DAG_NODE_DONE) {
            P->tail[k] = NULL;
            continue;
        }
        struct sv_dag_node_cfg gc = {.id = sv_dag_next_id(m->dag),
                                     .kind = SV_DAG_KIND_LOGICAL,
                                     .device = t->device,
                                     .user = &par_gate_tag};
        sv_dag_node *gate = sv_dag_node_add(m->dag, &gc, NULL);
        struct sv_dag_node_cfg rc = {
            .id = sv_dag_next_id(old->dag), .kind = SV_DAG_KIND_LOGICAL, .device = t->device};
        sv_dag_node *relay = sv_dag_node_add(old->dag, &rc, NULL);
        SV_ASSERT(gate && relay && sv_dag_edge_add(old->dag, t, relay, SV_DAG_EDGE_DATA, NULL));
        par_relay r = {.relay = relay, .to = NULL, .gate = gate};
        g_array_append_val(P->relays, r);
        P->tail[k] = gate;
    }
}

static void par_gen_start(sv_engine *eng, void *ctx, uint64_t arg)
{
    par_gen *g = ctx;
    sv_dag_exec_start(g->exec);
}

static gboolean par_launch(sv_msg *m, const struct sv_compute_batch_shape *shape_in, GError **error)
{
    struct msg_par *P = m->par;
    const struct sv_msg_cfg *c = &m->cfg;
    const struct sv_compute_model_cfg *mc = sv_compute_latency_model(c->lat);
    struct sv_compute_batch_shape shape = *shape_in;
    gboolean dummy = m->inflight->len == 0;
    if (dummy) {
        /* LLMServingSim's DP dummy batch: one decode token (vLLM's execute_dummy_batch). */
        int64_t kv = 1;
        sv_compute_batch_shape_init(&shape, NULL, NULL, 0, &kv, 1);
    }
    int64_t comm_tokens = P->comm_tokens > 0 ? P->comm_tokens : shape.tokens;
    P->comm_tokens = 0;
    uint64_t hid_bytes =
        (uint64_t)shape.tokens * (uint64_t)mc->hidden_size * (uint64_t)mc->dtype_bytes;
    if (P->moe) {
        /* The EP group's tokens: every member's (padded) batch, routed once per step and
         * reused by every layer (LLMServingSim's block_copy). */
        int64_t route_tokens = comm_tokens * P->ep_members;
        struct sv_msg_expert_route_req rq = {
            .layer = 0,
            .tokens = route_tokens,
            .n_experts = (int32_t)mc->num_experts,
            .top_k = (int32_t)MIN(mc->experts_per_tok, mc->num_experts),
        };
        P->route->route(P->route_state, &rq, P->counts);
        sv_msg_moe_rank_load(P->counts, rq.n_experts, c->ep_size, rq.top_k, P->ranks);
        sv_msg__expert_counts(m, P->counts); /* the expert cache sees the same routing */
        struct sv_msg_moe_xchg_req xq = {
            .tokens = comm_tokens > 0 ? comm_tokens : 1,
            .dp_size = P->ep_members,
            .tp_size = P->tp,
            .ep_size = c->ep_size,
            .hidden_size = mc->hidden_size,
            .num_experts = mc->num_experts,
            .top_k = rq.top_k,
            .dtype_bytes = mc->dtype_bytes,
            .comm = c->moe_comm,
        };
        sv_msg_moe_xchg_plan(&xq, &P->xchg);
    }

    par_retire_finished(m);
    gboolean rotated = FALSE;
    if (m->dag && (m->et || sv_dag_node_count(m->dag) >= MSG_DAG_RECYCLE_NODES)) {
        if (g_queue_is_empty(&P->batches)) {
            if (m->et && !sv_msg__et_dag_retire(m, m->dag, error))
                return FALSE;
            g_clear_pointer(&m->exec, sv_dag_exec_free);
            g_clear_pointer(&m->dag, sv_dag_free);
            g_clear_pointer(&P->cur, g_free);
            memset(P->tail, 0, sizeof *P->tail * (size_t)(P->tp * P->pp));
        } else if (par_can_rotate(m) && sv_dag_node_count(m->dag) >= MSG_DAG_RECYCLE_NODES) {
            par_rotate(m);
            rotated = TRUE;
        }
    }
    gboolean fresh = m->dag == NULL;
    if (fresh) /* ET output: ids unique over the run (one file per device in run scope) */
        m->dag = m->et ? sv_dag_new_from(m->et_next_id) : sv_dag_new();
    m->et_first = (uint32_t)sv_dag_node_count(m->dag);
    m->et_shape = &shape;
    if (rotated)
        par_gates(m);

    struct sv_compute_iter_time it;
    sv_dag_node *final = NULL;
    sv_dag_node *kv_join = sv_msg__kv_loads(m); /* prefix loads (msg/offload.c) */
    for (int32_t s = 0; s < P->pp; s++) {
        int64_t lb, le;
        sv_msg__stage_range(c, mc->num_layers, s, &lb, &le);
        sv_compute_iter_time(c->stage_lat ? c->stage_lat[s] : c->lat, &shape, lb, le, &it);
        sv_time fold_ns = 0;
        gboolean fold =
            P->fold && !dummy && !sv_msg__pim_active(m) && par_fold_ns(m, &it, &fold_ns);
        if (fold) {
            par_fold_book(m, &it);
            P->folded++;
        }
        for (int32_t r = 0; r < P->tp; r++) {
            int32_t dev = c->first_device + s * P->tp + r;
            sv_time moe_ns = P->moe ? par_moe_ns(m, &shape, r) : 0;
            /* A stage runs its batches in launch order (one stream per device): the previous
             * batch's work on this device comes first. Without it, batches in flight interleave
             * per operator, and ranks whose expert loads differ would issue the EP group's
             * collectives of different batches in different orders. */
            sv_dag_node *prev = P->tail[s * P->tp + r];
            prev = s == 0 ? sv_msg__spec_draft_node(m, dev, prev) : prev; /* speculative */
            if (s == 0 && kv_join)
                prev = sv_msg__join(m, dev, prev, kv_join);
            if (s > 0) {
                prev = par_add(m, "pp.recv", SV_DAG_KIND_COMM_RECV, dev, 0, prev);
                prev->p.has |= SV_DAG_HAS_COMM_SRC | SV_DAG_HAS_COMM_SIZE | SV_DAG_HAS_COMM_TAG;
                prev->p.comm_src = dev - P->tp;
                prev->p.comm_size_bytes = hid_bytes > 0 ? hid_bytes : 1;
                prev->p.comm_tag = (int32_t)P->tag;
            }
            /* Weight parts off the device stream in before their compute (msg/offload.c). */
            if (fold) {
                prev =
                    par_add(m, label(m, "folded iteration"), SV_DAG_KIND_COMP, dev, fold_ns, prev);
            } else if (sv_msg__pim_active(m) && !dummy) {
                /* PIM attention / sub-batches / local weight loads (msg/pim.c). */
                struct par_emit pe = {r, s, moe_ns};
                struct sv_msg__chain ch = {.dev = dev,
                                           .layer_begin = lb,
                                           .layer_end = le,
                                           .emit = par_emit_ops,
                                           .user = &pe};
                prev = sv_msg__pim_chain(m, &ch, prev);
            } else {
                struct sv_msg__stream st;
                sv_msg__stream_begin(m, &st, s * P->tp + r);
                sv_dag_node *ld = NULL;
                if (lb == 0)
                    ld = sv_msg__stream_pre(m, &st, mc->num_layers, dev, &prev);
                prev = par_ops(m, it.prologue, it.n_prologue, dev, r, s, -1, moe_ns, prev);
                sv_msg__stream_post(m, &st, ld, &prev);
                for (int64_t l = lb; l < le; l++) {
                    ld = sv_msg__stream_pre(m, &st, l, dev, &prev);
                    prev = par_ops(m, it.layer, it.n_layer, dev, r, s, (int)l, moe_ns, prev);
                    sv_msg__stream_post(m, &st, ld, &prev);
                }
                ld = le == mc->num_layers
                         ? sv_msg__stream_pre(m, &st, mc->num_layers + 1, dev, &prev)
                         : NULL;
                prev = par_ops(m, it.head, it.n_head, dev, r, s, -1, moe_ns, prev);
                sv_msg__stream_post(m, &st, ld, &prev);
            }
            if (s + 1 < P->pp) {
                prev = par_add(m, "pp.send", SV_DAG_KIND_COMM_SEND, dev, 0, prev);
                prev->p.has |= SV_DAG_HAS_COMM_DST | SV_DAG_HAS_COMM_SIZE | SV_DAG_HAS_COMM_TAG;
                prev->p.comm_dst = dev + P->tp;
                prev->p.comm_size_bytes = hid_bytes > 0 ? hid_bytes : 1;
                prev->p.comm_tag = (int32_t)P->tag;
            }
            P->last[r] = prev;
            P->tail[s * P->tp + r] = prev;
        }
    }
    sv_msg__kv_loads_done(m);
    /* Named for the ET files only, as the per-layer nodes (op_name). */
    final = par_add(m, m->et ? "batch.done" : NULL, SV_DAG_KIND_LOGICAL, c->first_device, 0, NULL);
    for (int32_t r = 0; r < P->tp; r++)
        if (P->last[r])
            SV_ASSERT(sv_dag_edge_add(m->dag, P->last[r], final, SV_DAG_EDGE_DATA, NULL));
    m->et_shape = NULL;
    if (m->et && !sv_msg__et_launched(m, m->et_first, sv_engine_now(m->eng), error))
        return FALSE;

    par_batch *b = P->spare_batches->len > 0
                       ? g_ptr_array_steal_index_fast(P->spare_batches, P->spare_batches->len - 1)
                       : g_new(par_batch, 1);
    memset(b, 0, sizeof *b);
    b->slots = m->inflight;
    m->inflight = par_slots_take(P);
    b->start_ns = sv_engine_now(m->eng);
    b->final = final;
    b->dummy = dummy;
    sv_msg__pim_iter_stats(m, &b->pim_busy_ns, &b->pim_xfer_bytes);
    g_queue_push_tail(&P->batches, b);
    m->busy = (int32_t)P->batches.length >= m->queue_cap;
    /* Room in the queue: schedule the next batch now (vLLM step_with_batch_queue schedules
     * whenever the batch queue is not full: pipeline stages, or async scheduling, where running
     * requests continue on output placeholders; without them they have nothing new). */
    if (!m->busy)
        sv_msg__kick(m);

    if (!fresh)
        return TRUE; /* the running executor issues the appended nodes */
    par_gen *g = g_new0(par_gen, 1);
    g->sx = P->sx;
    g->m = m;
    g->dag = m->dag;
    struct sv_dag_exec_cfg ec = {
        .policy = SV_DAG_POLICY_ASTRA,
        .handler_ctx = g,
        .on_node_done = par_node_done,
        .cb_ctx = m,
    };
    ec.handlers[SV_DAG_KIND_COMM_COLL] = par_coll_handler;
    ec.handlers[SV_DAG_KIND_COMM_SEND] = par_send_handler;
    ec.handlers[SV_DAG_KIND_COMM_RECV] = par_recv_handler;
    ec.handlers[SV_DAG_KIND_LOGICAL] = par_logical_handler;
    if (sv_msg__tiers_on(m)) {
        ec.handlers[SV_DAG_KIND_MEM_LOAD] = par_mem_handler;
        ec.handlers[SV_DAG_KIND_MEM_STORE] = par_mem_handler;
    }
    m->exec = sv_dag_exec_new(m->dag, m->eng, &ec, error);
    if (!m->exec) {
        g_free(g);
        return FALSE;
    }
    g->exec = m->exec;
    g_free(P->cur);
    P->cur = g;
    for (guint i = 0; i < P->relays->len; i++) {
        par_relay *r = &g_array_index(P->relays, par_relay, i);
        if (!r->to)
            r->to = g;
    }
    if (rotated) /* where the one DAG's executor would have issued the appended nodes */
        sv_engine_schedule_in(m->eng, 0, SV_PRIO_DEFAULT, par_gen_start, g, 0);
    else
        sv_dag_exec_start(m->exec);
    return TRUE;
}
