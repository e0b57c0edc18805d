/* Several attention instances sharing one FFN group: MegaScale-Infer's M:N (Zhu et al., arXiv
 * 2504.02263: M attention nodes, data-parallel replicas each with its own KV cache, and N expert
 * nodes; every micro-batch goes from all M attention nodes to the N expert nodes (M2N) and back
 * (N2M), so the FFN side sees the attention replicas' micro-batches as one batch). docs/afd.md
 * "Several attention instances sharing an FFN group".
 *
 * The members (cfg.afd.group, one per instance naming the same "ffn_group") step in lock-step
 * waves as a data-parallel group does (msg/parallel.c: a member that has scheduled waits until
 * every member has; idle members are woken and join with nothing). A wave is one DAG, held by
 * member 0 (the owner, whose config places the FFN devices), built as afd_run.c builds one
 * instance's iteration but with every member's micro-batches in it:
 *
 *   nmb = min(micro_batches, the largest member's sequences); member k cuts its own batch into
 *   nmb micro-batches of whole sequences (n_k / nmb, the first n_k mod nmb one more; a member
 *   with fewer sequences has empty ones), each timed by the member's own latency model;
 *   per layer l and micro-batch i: member k's attention ops on its ranks; a dispatch from
 *   member k's rank j mod tp_k to FFN rank j of its micro-batch's tokens x hidden x dtype bytes
 *   (M2N); the MLP ops of (l, i) on every FFN rank once every member's dispatch has arrived,
 *   timed at the concatenation of all members' micro-batch i (the FFN side's batch); a combine
 *   from FFN rank r mod ffn_npus to each member's rank r (N2M), in member order on the FFN
 *   device's send slot.
 *
 * A member with no sequence in micro-batch i runs and sends nothing for it; a member with no
 * work at all is not in the wave's DAG (it joins with empty micro-batches: nothing to run, unlike
 * a DP dummy forward, since no collective needs it). Each member's iteration ends with its own
 * head; the next wave starts when every member has committed and scheduled again. */
#include "msg/msg_internal.h"

#include <string.h>

struct sv_msg_afd_group {
    struct sv_sys_exec sx; /* first: the system layer's handler context */
    int32_t size;
    sv_msg **members; /* by group_rank; NULL until joined */
    gboolean *ready;  /* scheduled for the next wave, waiting for the others */
    int64_t *tokens;  /* its scheduled tokens */
    int32_t n_ready;
    sv_dag_node **final; /* per member: the end of its iteration in this wave (NULL: not in it) */
    GArray *node_member; /* int32_t per node id of the wave's DAG: its member (-1: FFN side) */
    GArray *chunk, *hist, *kv;    /* int64_t: one member's micro-batch */
    GArray *fchunk, *fhist, *fkv; /* int64_t: micro-batch i of every member (the FFN batch) */
};

sv_msg_afd_group *sv_msg_afd_group_new(int32_t size)
{
    SV_ASSERT(size >= 1);
    sv_msg_afd_group *g = g_new0(sv_msg_afd_group, 1);
    g->size = size;
    g->members = g_new0(sv_msg *, (size_t)size);
    g->ready = g_new0(gboolean, (size_t)size);
    g->tokens = g_new0(int64_t, (size_t)size);
    g->final = g_new0(sv_dag_node *, (size_t)size);
    g->node_member = g_array_new(FALSE, FALSE, sizeof(int32_t));
    GArray **arrs[] = {&g->chunk, &g->hist, &g->kv, &g->fchunk, &g->fhist, &g->fkv};
    for (size_t i = 0; i < G_N_ELEMENTS(arrs); i++)
        *arrs[i] = g_array_new(FALSE, FALSE, sizeof(int64_t));
    return g;
}

void sv_msg_afd_group_free(sv_msg_afd_group *g)
{
    if (!g)
        return;
    g_free(g->members);
    g_free(g->ready);
    g_free(g->tokens);
    g_free(g->final);
    g_array_free(g->node_member, TRUE);
    GArray *arrs[] = {g->chunk, g->hist, g->kv, g->fchunk, g->fhist, g->fkv};
    for (size_t i = 0; i < G_N_ELEMENTS(arrs); i++)
        g_array_free(arrs[i], TRUE);
    g_free(g);
}

gboolean sv_msg__afd_group_join(sv_msg *m, GError **error)
{
    sv_msg_afd_group *g = m->cfg.afd.group;
    int32_t r = m->cfg.afd.group_rank;
    if (r < 0 || r >= g->size || g->members[r]) {
        g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                    "instance %d: shared FFN group rank %d is out of range or taken",
                    m->cfg.instance, r);
        return FALSE;
    }
    g->members[r] = m;
    return TRUE;
}

void sv_msg__afd_group_leave(sv_msg *m)
{
    sv_msg_afd_group *g = m->cfg.afd.group;
    int32_t r = m->cfg.afd.group_rank;
    if (g && r >= 0 && r < g->size && g->members[r] == m)
        g->members[r] = NULL;
}

/* A failure inside the wave's DAG stops every member (they share it). */
static void group_fail(void *ctx, GError *err)
{
    sv_msg_afd_group *g = ctx;
    for (int32_t k = 0; k < g->size; k++)
        if (g->members[k] && !g->members[k]->error)
            sv_msg__fail(g->members[k], g_error_copy(err));
    g_error_free(err);
}

/* The FFN rank of a compute node on the group's FFN devices (the owner's cfg), or -1. */
static int32_t group_ffn_rank(const sv_msg_afd_group *g, const sv_dag_node *n)
{
    const struct sv_msg_afd_run *a = &g->members[0]->cfg.afd;
    int32_t r = n->device - a->ffn_first_device;
    return n->kind == SV_DAG_KIND_COMP && r >= 0 && r < a->ffn_npus ? r : -1;
}

/* A compute node starts: an FFN rank's to the power model (on_ffn_op under the owner's instance,
 * as afd_run.c reports an instance's own), then the built-in replay (0 -> 1 ns). */
static void h_comp(sv_dag_exec *ex, sv_dag_node *n, void *ctx)
{
    const sv_msg_afd_group *g = ctx;
    const sv_msg *own = g->members[0];
    int32_t r = group_ffn_rank(g, n);
    if (r >= 0)
        own->cfg.afd.on_ffn_op(own->cfg.afd.ffn_op_ctx, own->cfg.instance, r, TRUE,
                               sv_engine_now(own->eng));
    sv_dag_exec_handler_replay(ex, n, NULL);
}

/* The nodes added since the last call belong to member k (-1: the FFN side, reported under the
 * owner's instance on a timeline). */
static void mark(sv_msg_afd_group *g, const sv_dag *dag, int32_t k)
{
    while (g->node_member->len < sv_dag_next_id(dag))
        g_array_append_val(g->node_member, k);
}

/* A finished node: to its member's timeline hook (as afd_run.c reports its own), and a member's
 * final node ends that member's iteration. */
static void group_node_done(sv_dag_exec *ex, sv_dag_node *n, void *ctx)
{
    sv_msg_afd_group *g = ctx;
    int32_t k = n->id < (uint64_t)g->node_member->len
                    ? g_array_index(g->node_member, int32_t, (guint)n->id)
                    : -1;
    sv_msg *m = g->members[k >= 0 ? k : 0];
    const struct sv_msg_afd_run *a = &g->members[0]->cfg.afd;
    int32_t r = a->on_ffn_op ? group_ffn_rank(g, n) : -1;
    if (r >= 0)
        a->on_ffn_op(a->ffn_op_ctx, g->members[0]->cfg.instance, r, FALSE,
                     sv_engine_now(g->members[0]->eng));
    if (k >= 0 && n == g->final[k]) {
        g->final[k] = NULL;
        sv_msg__iter_finished(m);
        return;
    }
    if (m)
        sv_msg__report_op(m, sv_dag_exec_dag(ex), n);
}

/* Sequences [begin, end) of member x's scheduled batch appended to the given lists, classified as
 * sv_msg__launch classifies them (more than one new token: a chunk). */
static void add_seqs(const sv_msg *x, guint begin, guint end, GArray *chunk, GArray *hist,
                     GArray *kv)
{
    for (guint s = begin; s < end; s++) {
        const msg_slot *sl = &g_array_index(x->inflight, msg_slot, s);
        if (sl->num_new > 1) {
            g_array_append_val(chunk, sl->num_new);
            g_array_append_val(hist, sl->computed_before);
        } else {
            g_array_append_val(kv, sl->computed_before);
        }
    }
}

static void shape_of(GArray *chunk, GArray *hist, GArray *kv, struct sv_compute_batch_shape *s)
{
    sv_compute_batch_shape_init(s, (const int64_t *)(void *)chunk->data,
                                (const int64_t *)(void *)hist->data, chunk->len,
                                (const int64_t *)(void *)kv->data, kv->len);
}

static void clear3(GArray *a, GArray *b, GArray *c)
{
    g_array_set_size(a, 0);
    g_array_set_size(b, 0);
    g_array_set_size(c, 0);
}

static const char *node_name(const sv_msg *m, char *buf, size_t size, int64_t layer, int32_t mb,
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

/* Per member of a wave: its sequences' split and operator times. */
typedef struct {
    sv_msg *x;
    guint n_seq;
    guint *begin;                    /* [nmb + 1]: micro-batch i is slots [begin[i], begin[i+1]) */
    struct sv_compute_iter_time *at; /* [nmb]: one layer's attention-side operators */
    struct sv_compute_iter_time whole; /* prologue and head, whole batch */
    uint64_t *bytes;                   /* [nmb]: one transfer of micro-batch i */
    sv_dag_node **prev;                /* [rank x nmb + i]: last node of micro-batch i on rank */
    int64_t *tokens;                   /* [nmb]: tokens of micro-batch i */
    int64_t *pairs;     /* expert parallelism: [(i x tp + r) x ffn_npus + j] rows rank r -> FFN j */
    sv_dag_node **coll; /* [rank]: its last collective so far (program order, afd_run.c) */
} wave_member;

/* Layer l of micro-batch i under expert parallelism (afd_run.c's afd_ep_layer with every member
 * in it): FFN rank j receives each member rank's rows of its experts (one message per pair of
 * ranks that has any, in FFN rank order on each attention device's send slot), runs its expert
 * block for the sum of every member's rows (ns[j]) once all have arrived, and sends each member
 * rank its rows back, members in order; a member with an attention TP group all-gathers its
 * slices. */
static void ep_layer(sv_msg_afd_group *g, wave_member *w, int64_t l, int32_t i, int32_t nmb,
                     int32_t tag, const struct sv_msg_moe_rank *rk, const sv_time *ns,
                     sv_dag_node **ffn_prev)
{
    sv_msg *own = g->members[0];
    const struct sv_msg_afd_run *a = &own->cfg.afd;
    const struct sv_compute_model_cfg *mc = sv_compute_latency_model(own->cfg.lat);
    int32_t nf = a->ffn_npus;
    uint64_t row = (uint64_t)mc->hidden_size * (uint64_t)mc->dtype_bytes;
    char name[64];
    for (int32_t j = 0; j < nf; j++) {
        if (rk[j].pairs == 0)
            continue;
        int32_t dev = a->ffn_first_device + j;
        sv_dag_node *in = NULL;
        for (int32_t k = 0; k < g->size; k++) {
            if (!w[k].x || w[k].bytes[i] == 0)
                continue;
            const struct sv_msg_cfg *xc = &w[k].x->cfg;
            int32_t na = xc->num_devices;
            for (int32_t r = 0; r < na; r++) {
                uint64_t b =
                    (uint64_t)w[k]
                        .pairs[((size_t)i * (size_t)na + (size_t)r) * (size_t)nf + (size_t)j] *
                    row;
                if (b == 0)
                    continue;
                sv_dag_node *rx =
                    sv_msg__afd_xfer(own, node_name(w[k].x, name, sizeof name, l, i, "dispatch"),
                                     xc->first_device + r, dev, b, tag, w[k].prev[r * nmb + i],
                                     ffn_prev[j * nmb + i]);
                in = in ? sv_msg__join(own, dev, in, rx) : rx;
            }
            mark(g, own->dag, k);
        }
        ffn_prev[j * nmb + i] =
            sv_msg__add_node(own, node_name(own, name, sizeof name, l, i, "experts"),
                             SV_DAG_KIND_COMP, dev, ns[j], in);
        mark(g, own->dag, -1);
    }
    for (int32_t k = 0; k < g->size; k++) {
        if (!w[k].x || w[k].bytes[i] == 0)
            continue;
        const struct sv_msg_cfg *xc = &w[k].x->cfg;
        int32_t na = xc->num_devices;
        for (int32_t r = 0; r < na; r++) {
            int32_t att = xc->first_device + r;
            sv_dag_node *attn = w[k].prev[r * nmb + i], *done = attn;
            for (int32_t j = 0; j < nf; j++) {
                uint64_t b =
                    (uint64_t)w[k]
                        .pairs[((size_t)i * (size_t)na + (size_t)r) * (size_t)nf + (size_t)j] *
                    row;
                if (b == 0)
                    continue;
                sv_dag_node *x = sv_msg__afd_xfer(
                    own, node_name(w[k].x, name, sizeof name, l, i, "combine"),
                    a->ffn_first_device + j, att, b, tag + 1, ffn_prev[j * nmb + i], attn);
                done = done == attn ? x : sv_msg__join(own, att, done, x);
            }
            if (na > 1) {
                sv_dag_node *ag =
                    sv_msg__add_node(own, node_name(w[k].x, name, sizeof name, l, i, "allgather"),
                                     SV_DAG_KIND_COMM_COLL, att, 0, done);
                ag->p.has |= SV_DAG_HAS_COMM_TYPE | SV_DAG_HAS_COMM_SIZE | SV_DAG_HAS_COMM_TAG;
                ag->p.comm_type = (int32_t)SV_SYS_ALL_GATHER;
                ag->p.comm_size_bytes = (uint64_t)((w[k].tokens[i] + na - 1) / na) * row;
                ag->p.comm_tag = xc->tp_group_base;
                done = ag;
            }
            w[k].prev[r * nmb + i] = done;
        }
        mark(g, own->dag, k);
    }
}

/* Build and start the wave's DAG (members with scheduled tokens only: tokens[k] > 0). */
static gboolean group_wave(sv_msg_afd_group *g, GError **error)
{
    sv_msg *own = g->members[0];
    const struct sv_msg_afd_run *a = &own->cfg.afd;
    const struct sv_compute_model_cfg *mc = sv_compute_latency_model(own->cfg.lat);
    int32_t nf = a->ffn_npus;
    guint max_seq = 0;
    for (int32_t k = 0; k < g->size; k++)
        if (g->tokens[k] > 0)
            max_seq = MAX(max_seq, g->members[k]->inflight->len);
    int32_t nmb = (int32_t)MIN((guint)a->micro_batches, MAX(max_seq, 1u));
    /* The previous wave's DAG has finished: every member has committed since. */
    g_clear_pointer(&own->exec, sv_dag_exec_free);
    g_clear_pointer(&own->dag, sv_dag_free);
    own->dag = sv_dag_new();
    g_array_set_size(g->node_member, 0);
    memset(g->final, 0, sizeof *g->final * (size_t)g->size);
    wave_member *w = g_new0(wave_member, (size_t)g->size);
    char name[64];
    for (int32_t k = 0; k < g->size; k++) {
        if (g->tokens[k] <= 0)
            continue;
        sv_msg *x = w[k].x = g->members[k];
        int32_t na = x->cfg.num_devices;
        w[k].n_seq = x->inflight->len;
        w[k].begin = g_new0(guint, (size_t)nmb + 1);
        w[k].at = g_new(struct sv_compute_iter_time, (size_t)nmb);
        w[k].bytes = g_new0(uint64_t, (size_t)nmb);
        w[k].prev = g_new0(sv_dag_node *, (size_t)na * (size_t)nmb);
        w[k].tokens = g_new0(int64_t, (size_t)nmb);
        w[k].coll = g_new0(sv_dag_node *, (size_t)na);
        if (a->ffn_ep)
            w[k].pairs = g_new0(int64_t, (size_t)nmb * (size_t)na * (size_t)nf);
        clear3(g->chunk, g->hist, g->kv);
        add_seqs(x, 0, w[k].n_seq, g->chunk, g->hist, g->kv);
        struct sv_compute_batch_shape s;
        shape_of(g->chunk, g->hist, g->kv, &s);
        sv_compute_iter_time(x->cfg.lat, &s, 0, mc->num_layers, &w[k].whole);
        for (int32_t i = 0; i < nmb; i++) {
            guint cnt = w[k].n_seq / (guint)nmb + ((guint)i < w[k].n_seq % (guint)nmb ? 1u : 0u);
            w[k].begin[i + 1] = w[k].begin[i] + cnt;
            clear3(g->chunk, g->hist, g->kv);
            add_seqs(x, w[k].begin[i], w[k].begin[i + 1], g->chunk, g->hist, g->kv);
            shape_of(g->chunk, g->hist, g->kv, &s);
            sv_compute_iter_time(x->cfg.lat, &s, 0, 1, &w[k].at[i]);
            w[k].tokens[i] = s.tokens;
            w[k].bytes[i] = cnt == 0 ? 0
                                     : (uint64_t)s.tokens * (uint64_t)mc->hidden_size *
                                           (uint64_t)mc->dtype_bytes;
        }
        for (int32_t r = 0; r < na; r++) {
            sv_dag_node *p = sv_msg__afd_ops(
                own, w[k].whole.prologue, w[k].whole.n_prologue, FALSE, TRUE,
                x->cfg.first_device + r, na, x->cfg.tp_group_base,
                node_name(x, name, sizeof name, -1, 0, "prologue"), NULL, &w[k].coll[r]);
            for (int32_t i = 0; i < nmb; i++)
                w[k].prev[r * nmb + i] = p;
        }
        mark(g, own->dag, k);
    }
    /* The FFN side's operator times per micro-batch: every member's micro-batch i as one batch. */
    struct sv_compute_iter_time *ft = g_new(struct sv_compute_iter_time, (size_t)nmb);
    /* Expert parallelism: each member's micro-batch i routed by its own policy and stream (in
     * member order), FFN rank j's load the sum of every member's pairs on its experts, timed as
     * afd_run.c times a rank (the moe operator at its local tokens and activated experts). */
    int32_t ne = a->ffn_ep ? (int32_t)mc->num_experts : 0;
    int32_t top_k = (int32_t)MIN(mc->experts_per_tok, mc->num_experts);
    int64_t *total = a->ffn_ep ? g_new0(int64_t, (size_t)ne) : NULL;
    struct sv_msg_moe_rank *rk =
        a->ffn_ep ? g_new0(struct sv_msg_moe_rank, (size_t)nmb * (size_t)nf) : NULL;
    sv_time *ep_ns = a->ffn_ep ? g_new0(sv_time, (size_t)nmb * (size_t)nf) : NULL;
    for (int32_t i = 0; i < nmb; i++) {
        clear3(g->fchunk, g->fhist, g->fkv);
        for (int32_t k = 0; k < g->size; k++)
            if (w[k].x)
                add_seqs(w[k].x, w[k].begin[i], w[k].begin[i + 1], g->fchunk, g->fhist, g->fkv);
        struct sv_compute_batch_shape s;
        shape_of(g->fchunk, g->fhist, g->fkv, &s);
        sv_compute_iter_time(a->ffn_lat, &s, 0, 1, &ft[i]);
        if (!a->ffn_ep)
            continue;
        memset(total, 0, sizeof *total * (size_t)ne);
        for (int32_t k = 0; k < g->size; k++) {
            if (!w[k].x || w[k].bytes[i] == 0)
                continue;
            int32_t na = w[k].x->cfg.num_devices;
            sv_msg__afd_ep_route_member(w[k].x, w[k].tokens[i],
                                        &w[k].pairs[(size_t)i * (size_t)na * (size_t)nf], total);
        }
        struct sv_msg_moe_rank *ri = &rk[(size_t)i * (size_t)nf];
        sv_msg_moe_rank_load(total, ne, nf, top_k, ri);
        for (int32_t j = 0; j < nf; j++) {
            struct sv_compute_batch_shape t = s;
            t.moe_local_tokens = ri[j].local_tokens;
            t.moe_activated_experts = ri[j].activated;
            ep_ns[(size_t)i * (size_t)nf + (size_t)j] =
                ri[j].pairs > 0 ? sv_compute_op_time(a->ffn_lat, SV_COMPUTE_OP_MOE, &t) : 0;
        }
    }
    sv_dag_node **ffn_prev = g_new0(sv_dag_node *, (size_t)nf * (size_t)nmb);
    sv_dag_node **ffn_coll = g_new0(sv_dag_node *, (size_t)nf); /* per FFN rank, as coll */
    for (int64_t l = 0; l < mc->num_layers; l++) {
        for (int32_t i = 0; i < nmb; i++) {
            int32_t tag = (int32_t)((l * nmb + i) * 2);
            for (int32_t k = 0; k < g->size; k++) {
                if (!w[k].x || w[k].bytes[i] == 0)
                    continue;
                const struct sv_msg_cfg *xc = &w[k].x->cfg;
                for (int32_t r = 0; r < xc->num_devices; r++) {
                    sv_dag_node **p = &w[k].prev[r * nmb + i];
                    /* Program order: (l - 1, i)'s all-gather, if any, then (l, i)'s. */
                    sv_msg__afd_coll_seq(own, &w[k].coll[r], *p);
                    *p = sv_msg__afd_ops(own, w[k].at[i].layer, w[k].at[i].n_layer, FALSE, FALSE,
                                         xc->first_device + r, xc->num_devices, xc->tp_group_base,
                                         node_name(w[k].x, name, sizeof name, l, i, "attn"), *p,
                                         &w[k].coll[r]);
                }
                mark(g, own->dag, k);
            }
            if (a->ffn_ep) {
                ep_layer(g, w, l, i, nmb, tag, &rk[(size_t)i * (size_t)nf],
                         &ep_ns[(size_t)i * (size_t)nf], ffn_prev);
                continue;
            }
            /* M2N: every member's dispatch reaches FFN rank j before its MLP ops start. */
            for (int32_t j = 0; j < nf; j++) {
                int32_t dev = a->ffn_first_device + j;
                sv_dag_node *in = NULL;
                for (int32_t k = 0; k < g->size; k++) {
                    if (!w[k].x || w[k].bytes[i] == 0)
                        continue;
                    const struct sv_msg_cfg *xc = &w[k].x->cfg;
                    int32_t r = j % xc->num_devices;
                    sv_dag_node *rx = sv_msg__afd_xfer(
                        own, node_name(w[k].x, name, sizeof name, l, i, "dispatch"),
                        xc->first_device + r, dev, w[k].bytes[i], tag, w[k].prev[r * nmb + i],
                        ffn_prev[j * nmb + i]);
                    in = in ? sv_msg__join(own, dev, in, rx) : rx;
                    mark(g, own->dag, k);
                }
                ffn_prev[j * nmb + i] = sv_msg__afd_ops(
                    own, ft[i].layer, ft[i].n_layer, TRUE, FALSE, dev, nf, a->ffn_tp_group,
                    node_name(own, name, sizeof name, l, i, "ffn"), in, &ffn_coll[j]);
                mark(g, own->dag, -1);
            }
            /* N2M: each member's rank r gets its rows back from FFN rank r mod ffn_npus. */
            for (int32_t k = 0; k < g->size; k++) {
                if (!w[k].x || w[k].bytes[i] == 0)
                    continue;
                const struct sv_msg_cfg *xc = &w[k].x->cfg;
                for (int32_t r = 0; r < xc->num_devices; r++) {
                    sv_dag_node **p = &w[k].prev[r * nmb + i];
                    *p =
                        sv_msg__afd_xfer(own, node_name(w[k].x, name, sizeof name, l, i, "combine"),
                                         a->ffn_first_device + r % nf, xc->first_device + r,
                                         w[k].bytes[i], tag + 1, ffn_prev[(r % nf) * nmb + i], *p);
                }
                mark(g, own->dag, k);
            }
        }
    }
    for (int32_t k = 0; k < g->size; k++) {
        if (!w[k].x)
            continue;
        const struct sv_msg_cfg *xc = &w[k].x->cfg;
        sv_dag_node *fin =
            sv_msg__add_node(own, NULL, SV_DAG_KIND_LOGICAL, xc->first_device, 0, NULL);
        for (int32_t r = 0; r < xc->num_devices; r++) {
            sv_dag_node *p = NULL;
            for (int32_t i = 0; i < nmb; i++) {
                sv_msg__afd_coll_seq(own, &w[k].coll[r], w[k].prev[r * nmb + i]);
                p = sv_msg__join(own, xc->first_device + r, p, w[k].prev[r * nmb + i]);
            }
            p = sv_msg__afd_ops(own, w[k].whole.head, w[k].whole.n_head, FALSE, TRUE,
                                xc->first_device + r, xc->num_devices, xc->tp_group_base,
                                node_name(w[k].x, name, sizeof name, -1, 0, "head"), p,
                                &w[k].coll[r]);
            SV_ASSERT(sv_dag_edge_add(own->dag, p, fin, SV_DAG_EDGE_DATA, NULL));
        }
        g->final[k] = fin;
        mark(g, own->dag, k);
        g_free(w[k].begin);
        g_free(w[k].at);
        g_free(w[k].bytes);
        g_free(w[k].prev);
        g_free(w[k].tokens);
        g_free(w[k].pairs);
        g_free(w[k].coll);
    }
    g_free(total);
    g_free(rk);
    g_free(ep_ns);
    g_free(w);
    g_free(ft);
    g_free(ffn_prev);
    g_free(ffn_coll);
    g->sx = (struct sv_sys_exec){.sys = own->cfg.coll,
                                 .npu = -1,
                                 .group_in_comm_tag = TRUE,
                                 .fail = group_fail,
                                 .fail_ctx = g};
    struct sv_dag_exec_cfg ec = {
        .policy = SV_DAG_POLICY_ASTRA,
        .handler_ctx = &g->sx,
        .on_node_done = group_node_done,
        .cb_ctx = g,
    };
    if (a->on_ffn_op)
        ec.handlers[SV_DAG_KIND_COMP] = h_comp;
    ec.handlers[SV_DAG_KIND_COMM_COLL] = sv_sys_exec_coll;
    ec.handlers[SV_DAG_KIND_COMM_SEND] = sv_sys_exec_send;
    ec.handlers[SV_DAG_KIND_COMM_RECV] = sv_sys_exec_recv;
    own->exec = sv_dag_exec_new(own->dag, own->eng, &ec, error);
    if (!own->exec) {
        g_clear_pointer(&own->dag, sv_dag_free);
        return FALSE;
    }
    if (a->on_ffn_wave) { /* the power model: who is in the wave, and the FFN group's passes */
        int32_t *in = g_new(int32_t, (size_t)g->size), n_in = 0;
        for (int32_t k = 0; k < g->size; k++)
            if (g->tokens[k] > 0)
                in[n_in++] = g->members[k]->cfg.instance;
        a->on_ffn_wave(a->ffn_op_ctx, in, n_in, nmb, sv_engine_now(own->eng));
        g_free(in);
    }
    return TRUE;
}

void sv_msg__afd_group_step(sv_msg *m)
{
    sv_msg_afd_group *g = m->cfg.afd.group;
    /* The DP group's lock-step rule (parallel.c): idle members join with empty micro-batches. */
    if (!sv_msg__wave_join(m, m->cfg.afd.group_rank, g->size, g->members, g->ready, &g->n_ready,
                           g->tokens))
        return;
    int64_t max_tok = 0;
    for (int32_t j = 0; j < g->size; j++) {
        if (g->members[j]->error)
            g->tokens[j] = 0;
        max_tok = MAX(max_tok, g->tokens[j]);
    }
    for (int32_t j = 0; j < g->size; j++) {
        g->ready[j] = FALSE;
        g->members[j]->busy = FALSE;
    }
    g->n_ready = 0;
    if (max_tok == 0)
        return; /* nobody has work: the group goes idle */
    GError *err = NULL;
    if (!group_wave(g, &err)) {
        group_fail(g, err);
        return;
    }
    /* Each member with work queues and launches its batch (its iteration record starts now); its
     * part of the DAG is built, so sv_msg__afd_launch does nothing more for it. */
    for (int32_t j = 0; j < g->size; j++)
        if (g->tokens[j] > 0)
            sv_msg__single_launch(g->members[j]);
    sv_dag_exec_start(g->members[0]->exec);
}
