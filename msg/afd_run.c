/* Attention/FFN disaggregation inside a serving run (MegaScale-Infer, arXiv 2504.02263: attention
 * nodes and FFN / expert nodes, "ping-pong pipeline parallelism" with m micro-batches; docs/afd.md
 * "In servesim run").
 *
 * The instance's own devices (cfg.first_device, cfg.num_devices TP ranks) hold the KV cache and run
 * the attention side of every layer; cfg.afd.ffn_npus devices from cfg.afd.ffn_first_device run its
 * MLP or MoE part. Each iteration the scheduler's batch is cut into micro-batches of whole
 * sequences (n / m each, the first n mod m one more; fewer than m sequences: one per sequence) and
 * built as one DAG, the construction of msg/afd.c on real devices and the cluster network:
 *
 *   prologue (embedding) on every attention rank, for the whole batch
 *   per layer l and micro-batch i:
 *     attention ops of (l, i) on every attention rank (TP all-reduce after o_proj on the
 *       instance's TP group, as the parallel path times it)
 *     dispatch: attention rank j mod a sends FFN rank j the micro-batch's activations
 *       (tokens x hidden x dtype bytes), a send/recv pair on the system layer (sv_sys)
 *     MLP / MoE ops of (l, i) on every FFN rank (TP all-reduce after down_proj on the FFN group)
 *     combine: FFN rank r mod f sends attention rank r the same bytes back
 *   head (final norm, lm_head, sampler) on every attention rank after the last combine.
 *
 * With cfg.afd.ffn_ep (a MoE model; docs/afd.md "MoE: expert parallelism") the FFN ranks hold
 * disjoint expert ranges instead of TP slices: each micro-batch is routed by cfg.expert_route,
 * the dispatch sends each FFN rank only its experts' token-expert pairs (pairs x hidden x dtype
 * bytes, MegaScale-Infer's M2N), each rank runs its expert block for its own load, and the
 * micro-batch's next layer waits for every rank's combine (afd_ep_layer).
 *
 * Ids are layer-major, micro-batch-minor, so under ASTRA-sim's hardware rule (one compute op and
 * one send per device in flight, ready nodes in ascending id) micro-batch 0 goes first where both
 * are ready, and the attention of micro-batch i + 1 overlaps the FFN of micro-batch i: the
 * executor's result, not a formula. Transfers are flows on the cluster network, so they contend
 * with other traffic and count in its bytes. */
#include "msg/msg_internal.h"

#include <string.h>

struct msg_afd {
    struct sv_sys_exec sx; /* first: the system layer's handler context */
    sv_msg *m;
    const struct sv_compute_layer_seq *seq;
    GArray *pf_chunk, *pf_hist, *dec_kv; /* int64_t, one micro-batch's lists */
    sv_dag_node **attn_prev;             /* [rank x m + i]: last node of micro-batch i on rank */
    sv_dag_node **ffn_prev;              /* [rank x m + i] */
    /* Expert parallelism in the FFN group (cfg.afd.ffn_ep), else unused. */
    const struct sv_msg_expert_route_ops *route;
    void *route_state;
    int64_t *counts;               /* 2 x per expert, scratch */
    int64_t *pairs;                /* [(i x tp + r) x ffn_npus + j]: rows attention r -> FFN j */
    struct sv_msg_moe_rank *ranks; /* [i x ffn_npus + j]: FFN rank j's load of micro-batch i */
    sv_dag_node **coll; /* per attention rank, then per FFN rank: its last collective so far */
};

static void afd_fail(void *ctx, GError *err)
{
    sv_msg__fail(ctx, err);
}

/* Expert parallelism in the FFN group (docs/afd.md "MoE: expert parallelism"): a MoE layer whose
 * only FFN-side operator is the expert block (servesim's MoE architectures: qwen3_moe, mixtral,
 * phimoe have no shared experts and no dense layers) and experts split evenly over the FFN ranks
 * (the planner checks both with config paths; here they are invariants of the cfg it builds). The
 * routing policy is the run's (cfg.expert_route), on its own stream, so that random routing is
 * seeded and independent of other instances. */
static gboolean afd_ep_init(sv_msg *m, GError **error)
{
    const struct sv_msg_cfg *c = &m->cfg;
    struct msg_afd *A = m->afd;
    const struct sv_compute_model_cfg *mc = sv_compute_latency_model(c->lat);
    int32_t nf = c->afd.ffn_npus;
    if (!sv_compute_model_is_moe(mc) || A->seq->n_mlp != 1 || A->seq->mlp[0] != SV_COMPUTE_OP_MOE ||
        mc->num_experts % nf != 0) {
        g_set_error(
            error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
            "instance %d: expert parallelism in the FFN group needs a MoE model whose FFN "
            "side is its expert block and experts divisible by %d FFN devices (docs/afd.md)",
            c->instance, nf);
        return FALSE;
    }
    A->route = c->expert_route ? c->expert_route : sv_msg_expert_route_balanced();
    if (A->route->create) {
        g_autofree char *stream = g_strdup_printf("msg/afd_expert_route/%d", c->instance);
        A->route_state =
            A->route->create(c->expert_route_param, sv_rng_stream(m->eng, stream), error);
        if (!A->route_state) {
            g_prefix_error(error, "instance %d: ", c->instance);
            return FALSE;
        }
    }
    A->counts = g_new0(int64_t, 2 * (size_t)mc->num_experts);
    A->pairs = g_new0(int64_t, (size_t)nf * (size_t)c->num_devices * (size_t)c->afd.micro_batches);
    A->ranks = g_new0(struct sv_msg_moe_rank, (size_t)nf * (size_t)c->afd.micro_batches);
    return TRUE;
}

gboolean sv_msg__afd_init(sv_msg *m, GError **error)
{
    const struct sv_msg_cfg *c = &m->cfg;
    const struct sv_msg_afd_run *a = &c->afd;
    const char *why = NULL;
    if (!c->coll)
        why = "the cluster network (cfg.coll)";
    else if (!c->lat || !a->ffn_lat || c->manual)
        why = "latency models for both groups and the engine loop";
    else if (a->micro_batches > SV_MSG_AFD_MAX_MB || a->ffn_npus < 1 || a->ffn_first_device < 0)
        why = "1..64 micro-batches and at least one FFN device";
    else if ((c->pp_size > 1) || c->dp || c->ep_size > 1)
        why = "one pipeline stage, no data-parallel group and no expert parallelism";
    else if (sv_msg__tiers_on(m) || c->pim.dev || c->local_load_bytes_per_ns > 0 || c->et_out)
        why = "no memory tiers, PIM offload, local weight loads or ET output";
    if (why) {
        g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                    "instance %d: attention/FFN disaggregation needs %s (docs/afd.md)", c->instance,
                    why);
        return FALSE;
    }
    struct msg_afd *A = g_new0(struct msg_afd, 1);
    m->afd = A;
    A->m = m;
    A->sx = (struct sv_sys_exec){
        .sys = c->coll, .npu = -1, .group_in_comm_tag = TRUE, .fail = afd_fail, .fail_ctx = m};
    A->seq = sv_compute_layer_seq(sv_compute_latency_model(c->lat)->arch);
    A->pf_chunk = g_array_new(FALSE, FALSE, sizeof(int64_t));
    A->pf_hist = g_array_new(FALSE, FALSE, sizeof(int64_t));
    A->dec_kv = g_array_new(FALSE, FALSE, sizeof(int64_t));
    A->attn_prev = g_new0(sv_dag_node *, (size_t)c->num_devices * (size_t)a->micro_batches);
    A->ffn_prev = g_new0(sv_dag_node *, (size_t)a->ffn_npus * (size_t)a->micro_batches);
    A->coll = g_new0(sv_dag_node *, (size_t)c->num_devices + (size_t)a->ffn_npus);
    if (a->ffn_ep && !afd_ep_init(m, error))
        return FALSE;
    /* A shared FFN group (afd_group.c) builds the wave's DAG. */
    return !a->group || sv_msg__afd_group_join(m, error);
}

void sv_msg__afd_free(sv_msg *m)
{
    struct msg_afd *A = m->afd;
    if (!A)
        return;
    sv_msg__afd_group_leave(m);
    g_array_free(A->pf_chunk, TRUE);
    g_array_free(A->pf_hist, TRUE);
    g_array_free(A->dec_kv, TRUE);
    g_free(A->attn_prev);
    g_free(A->ffn_prev);
    g_free(A->coll);
    if (A->route && A->route->destroy && A->route_state)
        A->route->destroy(A->route_state);
    g_free(A->counts);
    g_free(A->pairs);
    g_free(A->ranks);
    g_free(A);
    m->afd = NULL;
}

/* The FFN rank of a compute node's device, or -1 (an attention device). */
static int32_t ffn_rank(const sv_msg *m, const sv_dag_node *n)
{
    const struct sv_msg_afd_run *a = &m->cfg.afd;
    int32_t r = n->device - a->ffn_first_device;
    return n->kind == SV_DAG_KIND_COMP && r >= 0 && r < a->ffn_npus ? r : -1;
}

/* A compute node starts: an FFN rank's to the power model (cfg.afd.on_ffn_op), then the built-in
 * replay (its duration, 0 -> 1 ns). */
static void h_comp(sv_dag_exec *ex, sv_dag_node *n, void *ctx)
{
    const struct msg_afd *A = ctx;
    const struct sv_msg_afd_run *a = &A->m->cfg.afd;
    int32_t r = a->on_ffn_op ? ffn_rank(A->m, n) : -1;
    if (r >= 0)
        a->on_ffn_op(a->ffn_op_ctx, A->m->cfg.instance, r, TRUE, sv_engine_now(A->m->eng));
    sv_dag_exec_handler_replay(ex, n, NULL);
}

/* A finished node: an FFN rank's compute to the power model; each to the timeline hook
 * (sv_msg_hooks.on_op), as opmap.c reports its own. */
static void afd_node_done(sv_dag_exec *ex, sv_dag_node *n, void *ctx)
{
    sv_msg *m = ctx;
    const struct sv_msg_afd_run *a = &m->cfg.afd;
    int32_t r = a->on_ffn_op ? ffn_rank(m, n) : -1;
    if (r >= 0)
        a->on_ffn_op(a->ffn_op_ctx, m->cfg.instance, r, FALSE, sv_engine_now(m->eng));
    sv_msg__report_op(m, sv_dag_exec_dag(ex), n);
}

static void afd_all_done(sv_dag_exec *ex, void *ctx)
{
    sv_msg__iter_finished(ctx);
}

/* Node names only for a timeline (hooks.on_op), as opmap.c's op_name. */
static const char *afd_name(const sv_msg *m, char *buf, size_t size, int64_t layer, int32_t mb,
                            const char *what)
{
    if (!m->hooks.on_op)
        return NULL;
    if (layer < 0)
        g_snprintf(buf, size, "afd.%s", what);
    else
        g_snprintf(buf, size, "L%" G_GINT64_FORMAT ".mb%d.%s", layer, mb, what);
    return buf;
}

static gboolean is_mlp(const struct msg_afd *A, sv_compute_op_kind op)
{
    for (int j = 0; j < A->seq->n_mlp; j++)
        if (A->seq->mlp[j] == op)
            return TRUE;
    return FALSE;
}

/* Collectives in program order (docs/afd.md "Collective order"): n (a collective) after *last,
 * the previous collective of the same device, by a control edge; *last becomes n. The system layer
 * pairs a group's collectives by the order its ranks issue them (as NCCL requires every rank of a
 * communicator to issue the same collectives in the same order, and runs them in that order), so
 * each rank issues its group's collectives in one fixed order, the same on every rank, instead of
 * whichever becomes ready first. No-op for a NULL last or a node that is not a collective. */
void sv_msg__afd_coll_seq(sv_msg *m, sv_dag_node **last, sv_dag_node *n)
{
    if (!last || !n || n->kind != SV_DAG_KIND_COMM_COLL || *last == n)
        return;
    if (*last)
        SV_ASSERT(sv_dag_edge_add(m->dag, *last, n, SV_DAG_EDGE_CTRL, NULL));
    *last = n;
}

/* Operators of `ops` on `dev` after prev: those on the FFN side (mlp TRUE) or the attention side,
 * each followed by its TP all-reduce on `group` when the group has more than one rank, sequenced
 * after the device's previous collective (*coll, sv_msg__afd_coll_seq; NULL: not sequenced). */
sv_dag_node *sv_msg__afd_ops(sv_msg *m, const struct sv_compute_iter_op *ops, int n, gboolean mlp,
                             gboolean all, int32_t dev, int32_t tp, int32_t group, const char *name,
                             sv_dag_node *prev, sv_dag_node **coll)
{
    const struct msg_afd *A = m->afd;
    for (int k = 0; k < n; k++) {
        if (!all && is_mlp(A, ops[k].op) != mlp)
            continue;
        prev = sv_msg__add_node(m, name, SV_DAG_KIND_COMP, dev, ops[k].ns, prev);
        if (ops[k].allreduce_bytes > 0 && tp > 1) {
            sv_dag_node *ar = sv_msg__add_node(m, name, SV_DAG_KIND_COMM_COLL, dev, 0, prev);
            ar->p.has |= SV_DAG_HAS_COMM_TYPE | SV_DAG_HAS_COMM_SIZE | SV_DAG_HAS_COMM_TAG;
            ar->p.comm_type = (int32_t)SV_SYS_ALL_REDUCE;
            ar->p.comm_size_bytes = ops[k].allreduce_bytes;
            ar->p.comm_tag = group;
            sv_msg__afd_coll_seq(m, coll, ar);
            prev = ar;
        }
    }
    return prev;
}

/* A send of `bytes` from src to dst after `parent`, and its receive on dst after `rparent`. */
sv_dag_node *sv_msg__afd_xfer(sv_msg *m, const char *name, int32_t src, int32_t dst, uint64_t bytes,
                              int32_t tag, sv_dag_node *parent, sv_dag_node *rparent)
{
    sv_dag_node *s = sv_msg__add_node(m, name, SV_DAG_KIND_COMM_SEND, src, 0, parent);
    s->p.has |= SV_DAG_HAS_COMM_DST | SV_DAG_HAS_COMM_SIZE | SV_DAG_HAS_COMM_TAG;
    s->p.comm_dst = dst;
    s->p.comm_size_bytes = bytes;
    s->p.comm_tag = tag;
    sv_dag_node *r = sv_msg__add_node(m, name, SV_DAG_KIND_COMM_RECV, dst, 0, rparent);
    r->p.has |= SV_DAG_HAS_COMM_SRC | SV_DAG_HAS_COMM_SIZE | SV_DAG_HAS_COMM_TAG;
    r->p.comm_src = src;
    r->p.comm_size_bytes = bytes;
    r->p.comm_tag = tag;
    return r;
}

/* The shape of micro-batch i: its sequences are slots [begin, end) of the batch. */
static void mb_shape(struct msg_afd *A, guint begin, guint end, struct sv_compute_batch_shape *s)
{
    sv_msg *m = A->m;
    g_array_set_size(A->pf_chunk, 0);
    g_array_set_size(A->pf_hist, 0);
    g_array_set_size(A->dec_kv, 0);
    for (guint k = begin; k < end; k++) {
        const msg_slot *sl = &g_array_index(m->inflight, msg_slot, k);
        if (sl->num_new > 1) { /* a chunk, as sv_msg__launch classifies it */
            g_array_append_val(A->pf_chunk, sl->num_new);
            g_array_append_val(A->pf_hist, sl->computed_before);
        } else {
            g_array_append_val(A->dec_kv, sl->computed_before);
        }
    }
    sv_compute_batch_shape_init(s, (const int64_t *)(void *)A->pf_chunk->data,
                                (const int64_t *)(void *)A->pf_hist->data, A->pf_chunk->len,
                                (const int64_t *)(void *)A->dec_kv->data, A->dec_kv->len);
}

/* `tokens` of instance m's micro-batch routed by its policy (on its own stream), split over its
 * attention ranks as below (T / tp each, the first T mod tp one more), each slice in rank order:
 * pairs[r x ffn_npus + j] (set) are the rows attention rank r sends FFN rank j, and each expert's
 * token-expert pairs are added to total[e]. Shared with a shared FFN group (afd_group.c), whose
 * FFN ranks serve the sum of every member's rows. */
void sv_msg__afd_ep_route_member(sv_msg *m, int64_t tokens, int64_t *pairs_out, int64_t *total)
{
    struct msg_afd *A = m->afd;
    const struct sv_msg_cfg *c = &m->cfg;
    const struct sv_compute_model_cfg *mc = sv_compute_latency_model(c->lat);
    int32_t nf = c->afd.ffn_npus, na = c->num_devices, ne = (int32_t)mc->num_experts;
    for (int32_t r = 0; r < na; r++) {
        int64_t *pairs = &pairs_out[(size_t)r * (size_t)nf];
        memset(pairs, 0, sizeof *pairs * (size_t)nf);
        struct sv_msg_expert_route_req rq = {
            .layer = 0,
            .tokens = tokens / na + (r < tokens % na ? 1 : 0),
            .n_experts = ne,
            .top_k = (int32_t)MIN(mc->experts_per_tok, mc->num_experts),
        };
        if (rq.tokens == 0)
            continue;
        A->route->route(A->route_state, &rq, A->counts);
        for (int32_t e = 0; e < ne; e++) {
            pairs[sv_msg_expert_owner(e, nf, ne)] += A->counts[e];
            total[e] += A->counts[e];
        }
    }
}

/* Micro-batch i of shape s under expert parallelism: its tokens routed once for the iteration
 * and reused by every layer (as the EP path, msg/opmap.c, and LLMServingSim's block_copy), each
 * FFN rank's load (its experts' token-expert pairs) and its expert block's time for that load
 * alone, as the EP path times a rank (par_moe_ns): the moe operator with the rank's local tokens
 * (ceil(pairs / top_k)) and activated experts; 0 for a rank no token reaches. With an attention
 * TP group the tokens are split over its ranks (T / tp each, the first T mod tp one more: vLLM's
 * sequence-parallel MoE input) and each rank's slice is routed on its own, in rank order, so that
 * A->pairs[(i x tp + r) x ffn_npus + j] are the rows attention rank r sends FFN rank j. */
static void afd_ep_route(struct msg_afd *A, const struct sv_compute_batch_shape *s, int32_t i,
                         sv_time *ns)
{
    const struct sv_msg_cfg *c = &A->m->cfg;
    const struct sv_compute_model_cfg *mc = sv_compute_latency_model(c->lat);
    int32_t nf = c->afd.ffn_npus, na = c->num_devices, ne = (int32_t)mc->num_experts;
    int64_t *total = &A->counts[ne]; /* per expert, over the attention ranks */
    memset(total, 0, sizeof *total * (size_t)ne);
    sv_msg__afd_ep_route_member(A->m, MAX(s->tokens, 1),
                                &A->pairs[(size_t)i * (size_t)na * (size_t)nf], total);
    struct sv_msg_moe_rank *rk = &A->ranks[(size_t)i * (size_t)nf];
    sv_msg_moe_rank_load(total, ne, nf, (int32_t)MIN(mc->experts_per_tok, mc->num_experts), rk);
    for (int32_t j = 0; j < nf; j++) {
        struct sv_compute_batch_shape t = *s;
        t.moe_local_tokens = rk[j].local_tokens;
        t.moe_activated_experts = rk[j].activated;
        ns[j] = rk[j].pairs > 0 ? sv_compute_op_time(c->afd.ffn_lat, SV_COMPUTE_OP_MOE, &t) : 0;
    }
}

/* Layer l of micro-batch i under expert parallelism (MegaScale-Infer's M2N / N2M): each attention
 * rank sends each FFN rank the rows of its slice's token-expert pairs on that rank's experts
 * (pairs x hidden x dtype bytes; one message per pair of ranks that has any, in FFN rank order on
 * the attention device's send slot), each FFN rank runs its expert block once every message has
 * arrived, sends each attention rank its rows back, and with an attention TP group its ranks
 * all-gather their slices (ceil(T / tp) x hidden x dtype bytes each, vLLM's
 * tensor_model_parallel_all_gather after a sequence-parallel MoE). The micro-batch's next layer
 * waits for all of it: its FFN part ends with the slowest FFN rank. */
static void afd_ep_layer(struct msg_afd *A, int64_t l, int32_t i, int32_t nmb, int32_t tag,
                         int64_t tokens, const sv_time *ns)
{
    sv_msg *m = A->m;
    const struct sv_msg_cfg *c = &m->cfg;
    const struct sv_compute_model_cfg *mc = sv_compute_latency_model(c->lat);
    int32_t nf = c->afd.ffn_npus, na = c->num_devices;
    const struct sv_msg_moe_rank *rk = &A->ranks[(size_t)i * (size_t)nf];
    const int64_t *pairs = &A->pairs[(size_t)i * (size_t)na * (size_t)nf];
    uint64_t row = (uint64_t)mc->hidden_size * (uint64_t)mc->dtype_bytes;
    char name[64];
    for (int32_t j = 0; j < nf; j++) {
        if (rk[j].pairs == 0)
            continue;
        int32_t dev = c->afd.ffn_first_device + j;
        sv_dag_node **p = &A->ffn_prev[j * nmb + i], *in = NULL;
        for (int32_t r = 0; r < na; r++) {
            uint64_t b = (uint64_t)pairs[r * nf + j] * row;
            if (b == 0)
                continue;
            sv_dag_node *x =
                sv_msg__afd_xfer(m, afd_name(m, name, sizeof name, l, i, "dispatch"),
                                 c->first_device + r, dev, b, tag, A->attn_prev[r * nmb + i], *p);
            in = in ? sv_msg__join(m, dev, in, x) : x;
        }
        *p = sv_msg__add_node(m, afd_name(m, name, sizeof name, l, i, "experts"), SV_DAG_KIND_COMP,
                              dev, ns[j], in);
    }
    for (int32_t r = 0; r < na; r++) {
        int32_t att = c->first_device + r;
        sv_dag_node *attn = A->attn_prev[r * nmb + i], *done = attn;
        for (int32_t j = 0; j < nf; j++) {
            uint64_t b = (uint64_t)pairs[r * nf + j] * row;
            if (b == 0)
                continue;
            sv_dag_node *x = sv_msg__afd_xfer(m, afd_name(m, name, sizeof name, l, i, "combine"),
                                              c->afd.ffn_first_device + j, att, b, tag + 1,
                                              A->ffn_prev[j * nmb + i], attn);
            done = done == attn ? x : sv_msg__join(m, att, done, x);
        }
        if (na > 1) {
            sv_dag_node *ag = sv_msg__add_node(m, afd_name(m, name, sizeof name, l, i, "allgather"),
                                               SV_DAG_KIND_COMM_COLL, att, 0, done);
            ag->p.has |= SV_DAG_HAS_COMM_TYPE | SV_DAG_HAS_COMM_SIZE | SV_DAG_HAS_COMM_TAG;
            ag->p.comm_type = (int32_t)SV_SYS_ALL_GATHER;
            ag->p.comm_size_bytes = (uint64_t)((tokens + na - 1) / na) * row;
            ag->p.comm_tag = c->tp_group_base;
            done = ag;
        }
        A->attn_prev[r * nmb + i] = done;
    }
}

gboolean sv_msg__afd_launch(sv_msg *m, const struct sv_compute_batch_shape *shape, GError **error)
{
    struct msg_afd *A = m->afd;
    const struct sv_msg_cfg *c = &m->cfg;
    const struct sv_msg_afd_run *a = &c->afd;
    const struct sv_compute_model_cfg *mc = sv_compute_latency_model(c->lat);
    int32_t na = c->num_devices, nf = a->ffn_npus;
    guint n_seq = m->inflight->len;
    int32_t nmb = (int32_t)MIN((guint)a->micro_batches, MAX(n_seq, 1u));
    if (a->group) /* its part of the wave's DAG is built and run by the group (afd_group.c) */
        return TRUE;
    /* The previous iteration's DAG has finished (the single path launches one at a time). */
    g_clear_pointer(&m->exec, sv_dag_exec_free);
    g_clear_pointer(&m->dag, sv_dag_free);
    m->dag = sv_dag_new();
    char name[64];
    struct sv_compute_iter_time whole;
    sv_compute_iter_time(c->lat, shape, 0, mc->num_layers, &whole);
    memset(A->coll, 0, sizeof *A->coll * ((size_t)na + (size_t)nf));
    for (int32_t r = 0; r < na; r++) {
        sv_dag_node *p = sv_msg__afd_ops(
            m, whole.prologue, whole.n_prologue, FALSE, TRUE, c->first_device + r, na,
            c->tp_group_base, afd_name(m, name, sizeof name, -1, 0, "prologue"), NULL, &A->coll[r]);
        for (int32_t i = 0; i < nmb; i++)
            A->attn_prev[r * nmb + i] = p;
    }
    memset(A->ffn_prev, 0, sizeof *A->ffn_prev * (size_t)nf * (size_t)a->micro_batches);
    /* Per micro-batch: its operator times on each side and its transfer size. */
    struct sv_compute_iter_time *at = g_new(struct sv_compute_iter_time, (size_t)nmb);
    struct sv_compute_iter_time *ft = g_new(struct sv_compute_iter_time, (size_t)nmb);
    uint64_t bytes[SV_MSG_AFD_MAX_MB];
    int64_t ep_tokens[SV_MSG_AFD_MAX_MB];
    sv_time *ep_ns = a->ffn_ep ? g_new(sv_time, (size_t)nmb * (size_t)nf) : NULL;
    guint begin = 0;
    for (int32_t i = 0; i < nmb; i++) {
        guint cnt = n_seq / (guint)nmb + ((guint)i < n_seq % (guint)nmb ? 1u : 0u);
        struct sv_compute_batch_shape s;
        if (n_seq == 0) /* not reached: an empty batch is never launched */
            s = *shape;
        else
            mb_shape(A, begin, begin + cnt, &s);
        begin += cnt;
        sv_compute_iter_time(c->lat, &s, 0, 1, &at[i]);
        sv_compute_iter_time(a->ffn_lat, &s, 0, 1, &ft[i]);
        bytes[i] =
            (uint64_t)MAX(s.tokens, 1) * (uint64_t)mc->hidden_size * (uint64_t)mc->dtype_bytes;
        ep_tokens[i] = MAX(s.tokens, 1);
        if (ep_ns)
            afd_ep_route(A, &s, i, &ep_ns[(size_t)i * (size_t)nf]);
    }
    for (int64_t l = 0; l < mc->num_layers; l++) {
        for (int32_t i = 0; i < nmb; i++) {
            int32_t tag = (int32_t)((l * nmb + i) * 2);
            for (int32_t r = 0; r < na; r++) {
                sv_dag_node **p = &A->attn_prev[r * nmb + i];
                /* Program order: the all-gather of (l - 1, i), if any, then (l, i)'s all-reduces.
                 */
                sv_msg__afd_coll_seq(m, &A->coll[r], *p);
                *p = sv_msg__afd_ops(m, at[i].layer, at[i].n_layer, FALSE, FALSE,
                                     c->first_device + r, na, c->tp_group_base,
                                     afd_name(m, name, sizeof name, l, i, "attn"), *p, &A->coll[r]);
            }
            if (ep_ns) {
                afd_ep_layer(A, l, i, nmb, tag, ep_tokens[i], &ep_ns[(size_t)i * (size_t)nf]);
                continue;
            }
            for (int32_t j = 0; j < nf; j++) {
                int32_t src = c->first_device + j % na, dev = a->ffn_first_device + j;
                sv_dag_node **p = &A->ffn_prev[j * nmb + i];
                *p = sv_msg__afd_xfer(m, afd_name(m, name, sizeof name, l, i, "dispatch"), src, dev,
                                      bytes[i], tag, A->attn_prev[(j % na) * nmb + i], *p);
                *p = sv_msg__afd_ops(m, ft[i].layer, ft[i].n_layer, TRUE, FALSE, dev, nf,
                                     a->ffn_tp_group, afd_name(m, name, sizeof name, l, i, "ffn"),
                                     *p, &A->coll[na + j]);
            }
            for (int32_t r = 0; r < na; r++) {
                int32_t src = a->ffn_first_device + r % nf, dev = c->first_device + r;
                sv_dag_node **p = &A->attn_prev[r * nmb + i];
                *p = sv_msg__afd_xfer(m, afd_name(m, name, sizeof name, l, i, "combine"), src, dev,
                                      bytes[i], tag + 1, A->ffn_prev[(r % nf) * nmb + i], *p);
            }
        }
    }
    g_free(at);
    g_free(ft);
    g_free(ep_ns);
    sv_dag_node *final = sv_msg__add_node(m, NULL, SV_DAG_KIND_LOGICAL, c->first_device, 0, NULL);
    for (int32_t r = 0; r < na; r++) {
        sv_dag_node *p = NULL;
        for (int32_t i = 0; i < nmb; i++) {
            sv_msg__afd_coll_seq(m, &A->coll[r], A->attn_prev[r * nmb + i]); /* last all-gathers */
            p = sv_msg__join(m, c->first_device + r, p, A->attn_prev[r * nmb + i]);
        }
        p = sv_msg__afd_ops(m, whole.head, whole.n_head, FALSE, TRUE, c->first_device + r, na,
                            c->tp_group_base, afd_name(m, name, sizeof name, -1, 0, "head"), p,
                            &A->coll[r]);
        SV_ASSERT(sv_dag_edge_add(m->dag, p, final, SV_DAG_EDGE_DATA, NULL));
    }
    struct sv_dag_exec_cfg ec = {
        .policy = SV_DAG_POLICY_ASTRA,
        .handler_ctx = A,
        .on_node_done = afd_node_done,
        .on_all_done = afd_all_done,
        .cb_ctx = m,
    };
    if (a->on_ffn_op)
        ec.handlers[SV_DAG_KIND_COMP] = h_comp;
    ec.handlers[SV_DAG_KIND_COMM_COLL] = sv_sys_exec_coll;
    ec.handlers[SV_DAG_KIND_COMM_SEND] = sv_sys_exec_send;
    ec.handlers[SV_DAG_KIND_COMM_RECV] = sv_sys_exec_recv;
    m->exec = sv_dag_exec_new(m->dag, m->eng, &ec, error);
    if (!m->exec) {
        g_clear_pointer(&m->dag, sv_dag_free);
        return FALSE;
    }
    sv_dag_exec_start(m->exec);
    return TRUE;
}
