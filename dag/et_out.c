/* ET output of a running simulation: a serving DAG written in pieces into per-device Chakra
 * files that ASTRA-sim and Chakra's tools run (docs/chakra.md "Emitted sets").
 *
 * What ASTRA-sim accepts decides the form (its Workload.cc and feeder_v3): no METADATA nodes (its
 * statistics assert on them), GPU compute only (its statistics throw on CPU ops), durations in
 * duration_micros, collective groups by pg_name. What the run knows beyond the DAG's edges (the
 * time a batch was launched, the time a root node could start) is written as a clock: a chain of
 * "wait" compute nodes while the device's GPU is idle. */
#include "dag/dag_internal.h"

#include <stdlib.h>
#include <string.h>

void sv_dag_et_clock_init(struct sv_dag_et_clock *c, sv_time origin, uint64_t first_id)
{
    c->at = origin;
    c->last_id = SV_DAG_ET_NO_ID;
    c->next_id = first_id;
}

gboolean sv_dag_et_clock_at(struct sv_dag_et_clock *c, sv_proto_writer *w, sv_time t, uint64_t *id,
                            GError **error)
{
    *id = c->last_id;
    if (t == c->at)
        return TRUE;
    if (t < c->at) {
        *id = SV_DAG_ET_NO_ID;
        return FALSE;
    }
    sv_time d = t - c->at;
    uint64_t nid = c->next_id++;
    g_autoptr(ChakraProtoMsg__Node) n =
        sv_proto_node_new(nid, "wait", CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE);
    if (c->last_id != SV_DAG_ET_NO_ID)
        sv_proto_node_add_ctrl_dep(n, c->last_id);
    n->duration_micros = (uint64_t)(d / SV_NS_PER_US);
    /* A GPU op: ASTRA-sim's statistics refuse CPU ops ("Only GPU and COMM types are supported",
     * Statistics.cc), and the device's GPU is idle while its batch waits. No work: a roofline
     * replay skips it (tensor_size 0, Workload::issue_comp). */
    sv_proto_node_add_attr(n, sv_proto_attr_new_bool("is_cpu_op", FALSE));
    sv_proto_node_add_attr(n, sv_proto_attr_new_int64("num_ops", 0));
    sv_proto_node_add_attr(n, sv_proto_attr_new_uint64("tensor_size", 0));
    if (d % SV_NS_PER_US != 0)
        sv_proto_node_add_attr(n, sv_proto_attr_new_int64(SV_DAG_ATTR_DURATION_NS, d));
    if (!sv_proto_writer_put_node(w, n, error))
        return FALSE;
    c->at = t;
    c->last_id = nid;
    *id = nid;
    return TRUE;
}

/* Where a dependency on node `pi` goes in the file: 1 = a node of this piece, 2 = an earlier
 * piece's node (written with prior_deps), 0 = not written (other device, earlier piece without
 * prior_deps, or later). */
static int dep_class(const sv_dag *dag, const struct sv_dag_et_put *o, uint32_t pi)
{
    const sv_dag_node *p = sv_dag__node(dag, pi);
    if (p->device != o->device || pi >= o->end_index)
        return 0;
    if (pi >= o->first_index)
        return 1;
    return o->prior_deps ? 2 : 0;
}

struct dep {
    uint64_t id;
    uint8_t kind;  /* sv_dag_edge_kind */
    uint8_t local; /* a node of this piece */
};

static void dep_push(GArray *deps, uint64_t id, uint8_t kind, uint8_t local)
{
    for (guint i = 0; i < deps->len; i++) {
        struct dep *d = &g_array_index(deps, struct dep, i);
        if (d->id == id && d->kind == kind)
            return;
    }
    struct dep d = {id, kind, local};
    g_array_append_val(deps, d);
}

/* The written dependencies of node idx: LOGICAL parents are walked through to their own parents
 * (the edge keeps the kind of the first edge on the path). Depth is bounded by the DAG's logical
 * chains (a join, a gate, a batch end), so plain recursion. */
static void collect_deps(const sv_dag *dag, const struct sv_dag_et_put *o, uint32_t idx,
                         int first_kind, GArray *deps, int depth)
{
    const struct sv_dag_nrt *r = sv_dag__nrt(dag, idx);
    for (uint32_t e = r->in_head; e != SV_DAG_NONE; e = sv_dag__edge(dag, e)->next_in) {
        const struct sv_dag_edge *ed = sv_dag__edge(dag, e);
        int kind = first_kind >= 0 ? first_kind : ed->kind;
        const sv_dag_node *p = sv_dag__node(dag, ed->parent);
        if (p->kind == SV_DAG_KIND_LOGICAL) {
            if (depth < 64)
                collect_deps(dag, o, ed->parent, kind, deps, depth + 1);
            continue;
        }
        int c = dep_class(dag, o, ed->parent);
        if (c)
            dep_push(deps, o->id_base + p->id, (uint8_t)kind, c == 1);
    }
}

static gboolean has_local(const GArray *deps)
{
    for (guint i = 0; i < deps->len; i++)
        if (g_array_index(deps, struct dep, i).local)
            return TRUE;
    return FALSE;
}

static ChakraProtoMsg__Node *put_node(const sv_dag *dag, const struct sv_dag_et_put *o,
                                      const sv_dag_node *n, const GArray *deps)
{
    ChakraProtoMsg__NodeType type = n->kind == SV_DAG_KIND_PIM
                                        ? CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE
                                        : (ChakraProtoMsg__NodeType)n->kind;
    ChakraProtoMsg__Node *et = sv_proto_node_new(o->id_base + n->id, n->name, type);
    for (int k = 0; k < 2; k++)
        for (guint i = 0; i < deps->len; i++) {
            const struct dep *d = &g_array_index(deps, struct dep, i);
            if (d->kind != k)
                continue;
            if (k == SV_DAG_EDGE_DATA)
                sv_proto_node_add_data_dep(et, d->id);
            else
                sv_proto_node_add_ctrl_dep(et, d->id);
        }
    et->duration_micros = (uint64_t)(n->duration_ns / SV_NS_PER_US);
    struct sv_dag_params p = n->p;
    if (p.has & SV_DAG_HAS_COMM_SRC)
        p.comm_src -= o->npu_base;
    if (p.has & SV_DAG_HAS_COMM_DST)
        p.comm_dst -= o->npu_base;
    char pg[16];
    if (o->pg_from_tag && n->kind == SV_DAG_KIND_COMM_COLL && (p.has & SV_DAG_HAS_COMM_TAG) &&
        !(p.has & SV_DAG_HAS_PG_NAME)) {
        g_snprintf(pg, sizeof pg, "%d", p.comm_tag);
        p.pg_name = pg;
        p.has = (p.has & ~(uint32_t)SV_DAG_HAS_COMM_TAG) | SV_DAG_HAS_PG_NAME;
    }
    if (n->kind == SV_DAG_KIND_COMP || n->kind == SV_DAG_KIND_PIM)
        p.has |= SV_DAG_HAS_IS_CPU_OP; /* false unless the node says otherwise */
    for (int bit = 0; bit < 11; bit++)
        if (p.has & (1u << bit))
            sv_proto_node_add_attr(et, sv_dag__et_param_new(bit, &p));
    if (n->kind == SV_DAG_KIND_PIM)
        sv_proto_node_add_attr(et, sv_proto_attr_new_string(SV_DAG_ATTR_KIND, "pim"));
    if (n->duration_ns % SV_NS_PER_US != 0)
        sv_proto_node_add_attr(et,
                               sv_proto_attr_new_int64(SV_DAG_ATTR_DURATION_NS, n->duration_ns));
    return et;
}

struct root {
    uint32_t index;
    sv_time t;
    uint64_t wait; /* the clock node it depends on, or SV_DAG_ET_NO_ID */
};

static int root_by_time(const void *a, const void *b)
{
    const struct root *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int root_by_index(const void *a, const void *b)
{
    const struct root *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The written dependencies of node i (into deps, emptied first); TRUE when one is a node of this
 * piece (the node is not a root). */
static gboolean node_deps(const sv_dag *dag, const struct sv_dag_et_put *o, uint32_t i,
                          GArray *deps)
{
    g_array_set_size(deps, 0);
    collect_deps(dag, o, i, -1, deps, 0);
    return has_local(deps);
}

gboolean sv_dag_et_put(const sv_dag *dag, sv_proto_writer *w, const struct sv_dag_et_put *o,
                       GError **error)
{
    uint32_t end = MIN(o->end_index, (uint32_t)dag->n_nodes);
    struct sv_dag_et_put oo = *o;
    oo.end_index = end;
    g_autoptr(GArray) deps = g_array_new(FALSE, FALSE, sizeof(struct dep));
    /* Roots and the clock node each waits for: chained in time order first, so every wait node
     * precedes the nodes that depend on it in the file; then back in index order, for the walk
     * below. */
    g_autoptr(GArray) roots = g_array_new(FALSE, FALSE, sizeof(struct root));
    if (o->root_time) {
        for (uint32_t i = o->first_index; i < end; i++) {
            const sv_dag_node *n = sv_dag__node(dag, i);
            if (n->device != o->device || n->kind == SV_DAG_KIND_LOGICAL ||
                node_deps(dag, &oo, i, deps))
                continue;
            struct root rt = {i, o->root_time(o->root_ctx, n), SV_DAG_ET_NO_ID};
            g_array_append_val(roots, rt);
        }
        g_array_sort(roots, root_by_time);
        for (guint k = 0; k < roots->len; k++) {
            struct root *rt = &g_array_index(roots, struct root, k);
            GError *err = NULL;
            if (!sv_dag_et_clock_at(o->clock, w, rt->t, &rt->wait, &err) && err) {
                g_propagate_error(error, err);
                return FALSE;
            }
        }
        g_array_sort(roots, root_by_index);
    }
    guint next_root = 0;
    for (uint32_t i = o->first_index; i < end; i++) {
        const sv_dag_node *n = sv_dag__node(dag, i);
        if (n->device != o->device || n->kind == SV_DAG_KIND_LOGICAL)
            continue;
        if (!node_deps(dag, &oo, i, deps)) {
            for (size_t k = 0; k < o->n_root_deps; k++)
                dep_push(deps, o->root_deps[k], SV_DAG_EDGE_CTRL, 0);
            if (next_root < roots->len && g_array_index(roots, struct root, next_root).index == i) {
                uint64_t wait = g_array_index(roots, struct root, next_root++).wait;
                if (wait != SV_DAG_ET_NO_ID)
                    dep_push(deps, wait, SV_DAG_EDGE_CTRL, 0);
            }
        }
        g_autoptr(ChakraProtoMsg__Node) et = put_node(dag, o, n, deps);
        if (!sv_proto_writer_put_node(w, et, error)) {
            g_prefix_error(error, "node %" G_GUINT64_FORMAT ": ", n->id);
            return FALSE;
        }
    }
    return TRUE;
}
