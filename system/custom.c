/* CustomAlgorithm (astraccl/custom_collectives/CustomAlgorithm.cc, astra-sim HEAD 518bd51): a
 * collective run as a per-rank plan of SEND / RECV / COMP operations. */
#include "system/system_internal.h"

/* ---- CustomAlgorithm (astraccl/custom_collectives/CustomAlgorithm.cc) ------------------- */

static void custom_issue_free(coll_stream *s);

static int custom_real_rank(const struct coll_phase *ph, int rank)
{
    return ph->members != NULL ? ph->members[rank] : rank;
}

static void custom_finish(coll_stream *s, int op)
{
    struct custom_state *c = &s->custom;
    SV_ASSERT(c->state[op] == OP_ONGOING);
    c->state[op] = OP_DONE;
    c->ongoing--;
    GArray *ch = c->children[op];
    for (guint i = 0; i < ch->len; i++) {
        int k = g_array_index(ch, int, i);
        if (--c->pending_deps[k] == 0 && c->state[k] == OP_WAIT) {
            c->state[k] = OP_FREE;
            /* keep the free list sorted by node id */
            uint64_t id = g_array_index(c->pr->ops, struct sv_sys__plan_node, k).id;
            guint pos = 0;
            while (pos < c->free_ops->len && g_array_index(c->pr->ops, struct sv_sys__plan_node,
                                                           g_array_index(c->free_ops, int, pos))
                                                     .id < id)
                pos++;
            g_array_insert_val(c->free_ops, pos, k);
        }
    }
    custom_issue_free(s);
    if (c->ongoing == 0 && c->free_ops->len == 0)
        sv_sys__proceed_to_next_vnet(s->owner, s); /* Algorithm::exit */
}

static void custom_net_done(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)eng;
    (void)arg;
    struct op_ref *ref = ctx;
    coll_stream *s = ref->stream;
    int op = ref->op;
    sv_sys__live_free(s->owner->sys, ref, sizeof *ref);
    custom_finish(s, op);
}

static void custom_comp_done(sv_sys *sys, void *obj, uint64_t arg)
{
    (void)sys;
    custom_finish(obj, (int)arg);
}

static void custom_issue_free(coll_stream *s)
{
    struct custom_state *c = &s->custom;
    coll_npu *npu = s->owner;
    sv_sys *sys = npu->sys;
    g_autoptr(GArray) batch = g_array_copy(c->free_ops);
    g_array_set_size(c->free_ops, 0);
    for (guint i = 0; i < batch->len; i++) {
        int k = g_array_index(batch, int, i);
        const struct sv_sys__plan_node *n = &g_array_index(c->pr->ops, struct sv_sys__plan_node, k);
        c->state[k] = OP_ONGOING;
        c->ongoing++;
        if (n->kind == SV_SYS_OP_COMP) {
            /* COMP: runtime in ns, 0 -> 1 cycle */
            sv_sys__register_event(npu, custom_comp_done, s, (uint64_t)k,
                                   n->duration_ns > 0 ? n->duration_ns : 1);
            continue;
        }
        struct op_ref *ref = sv_sys__live_new(sys, sizeof *ref);
        ref->stream = s;
        ref->op = k;
        int peer = custom_real_rank(&s->cur, n->peer);
        if (n->kind == SV_SYS_OP_SEND)
            sv_sys__net_send(sys, npu->id, peer, n->tag, n->bytes,
                             sv_sys__coll_label(s->cur.comm_type), custom_net_done, ref, 0, NULL);
        else
            sv_sys__net_recv(sys, npu->id, peer, n->tag, n->bytes, custom_net_done, ref, 0, NULL);
    }
}

int sv_sys__custom_find(const struct sv_sys__plan_rank *pr, uint64_t id)
{
    for (guint i = 0; i < pr->ops->len; i++)
        if (g_array_index(pr->ops, struct sv_sys__plan_node, i).id == id)
            return (int)i;
    return -1;
}

void sv_sys__custom_run_init(coll_stream *s)
{
    struct custom_state *c = &s->custom;
    sv_sys__custom_clear(s);
    c->pr = &s->cur.plan->rank[s->cur.pos];
    c->nops = (int)c->pr->ops->len;
    c->pending_deps = g_new0(int, c->nops > 0 ? c->nops : 1);
    c->state = g_new0(guint8, c->nops > 0 ? c->nops : 1);
    c->children = g_new0(GArray *, c->nops > 0 ? c->nops : 1);
    c->free_ops = g_array_new(FALSE, FALSE, sizeof(int));
    c->ongoing = 0;
    for (int i = 0; i < c->nops; i++)
        c->children[i] = g_array_new(FALSE, FALSE, sizeof(int));
    for (int i = 0; i < c->nops; i++) {
        const struct sv_sys__plan_node *n = &g_array_index(c->pr->ops, struct sv_sys__plan_node, i);
        for (int d = 0; d < n->ndeps; d++) {
            int p = sv_sys__custom_find(c->pr, n->deps[d]);
            if (p < 0)
                continue; /* checked by sv_sys_set_custom_plan */
            g_array_append_val(c->children[p], i);
            c->pending_deps[i]++;
        }
    }
    for (int i = 0; i < c->nops; i++) {
        if (c->pending_deps[i] == 0) {
            c->state[i] = OP_FREE;
            uint64_t id = g_array_index(c->pr->ops, struct sv_sys__plan_node, i).id;
            guint pos = 0;
            while (pos < c->free_ops->len && g_array_index(c->pr->ops, struct sv_sys__plan_node,
                                                           g_array_index(c->free_ops, int, pos))
                                                     .id < id)
                pos++;
            g_array_insert_val(c->free_ops, pos, i);
        }
    }
    custom_issue_free(s);
}
