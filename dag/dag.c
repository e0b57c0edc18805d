/* The operator DAG: node pages, the id map, edges and the dynamic edits (add, pop, splice). */
#include "dag/dag_internal.h"

#include <string.h>

GQuark sv_dag_error_quark(void)
{
    return g_quark_from_static_string("servesim-dag-error-quark");
}

static const char *const kind_names[SV_DAG_KIND_COUNT] = {
    "INVALID",   "METADATA",  "MEM_LOAD",  "MEM_STORE", "COMP",
    "COMM_SEND", "COMM_RECV", "COMM_COLL", "PIM",       "LOGICAL",
};

const char *sv_dag_kind_name(sv_dag_kind kind)
{
    if ((int)kind < 0 || kind >= SV_DAG_KIND_COUNT)
        return NULL;
    return kind_names[kind];
}

/* ---- id map ------------------------------------------------------------------------------- */

uint32_t sv_dag__lookup(const sv_dag *dag, uint64_t id)
{
    if (sv_dag__dense(dag))
        return id >= dag->dense_base && id - dag->dense_base < dag->n_nodes
                   ? (uint32_t)(id - dag->dense_base)
                   : SV_DAG_NONE;
    return (uint32_t)sv_u64map_get(&dag->ids, sv_hash_mix64(id), SV_DAG_NONE);
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

sv_dag *sv_dag_new(void)
{
    return sv_dag_new_from(0);
}

sv_dag *sv_dag_new_from(uint64_t first_id)
{
    sv_dag *dag = g_new0(sv_dag, 1);
    dag->next_id = first_id;
    dag->pages = g_ptr_array_new_with_free_func(g_free);
    dag->nrt = g_array_new(FALSE, FALSE, sizeof(struct sv_dag_nrt));
    dag->edges = g_array_new(FALSE, FALSE, sizeof(struct sv_dag_edge));
    dag->edge_free = SV_DAG_NONE;
    dag->strings = g_string_chunk_new(64 * 1024);
    return dag;
}

void sv_dag_free(sv_dag *dag)
{
    if (!dag)
        return;
    if (dag->exec)
        sv_dag__exec_detach(dag->exec);
    g_ptr_array_unref(dag->pages);
    g_array_unref(dag->nrt);
    g_array_unref(dag->edges);
    g_string_chunk_free(dag->strings);
    sv_u64map_clear(&dag->ids);
    g_free(dag->et_metadata);
    g_free(dag);
}

size_t sv_dag_node_count(const sv_dag *dag)
{
    return dag->n_nodes;
}

size_t sv_dag_edge_count(const sv_dag *dag)
{
    return dag->n_edges[0] + dag->n_edges[1];
}

size_t sv_dag_edge_count_kind(const sv_dag *dag, sv_dag_edge_kind kind)
{
    return kind == SV_DAG_EDGE_CTRL ? dag->n_edges[1] : dag->n_edges[0];
}

uint64_t sv_dag_next_id(const sv_dag *dag)
{
    return dag->next_id;
}

/* ---- nodes -------------------------------------------------------------------------------- */

sv_dag_node *sv_dag_node_add(sv_dag *dag, const struct sv_dag_node_cfg *cfg, GError **error)
{
    if ((int)cfg->kind < 0 || cfg->kind >= SV_DAG_KIND_COUNT) {
        g_set_error(error, SV_DAG_ERROR, SV_DAG_ERROR_INVALID,
                    "node kind %d out of range: node %" G_GUINT64_FORMAT, (int)cfg->kind, cfg->id);
        return NULL;
    }
    if (cfg->device < 0) {
        g_set_error(error, SV_DAG_ERROR, SV_DAG_ERROR_INVALID,
                    "negative device %d: node %" G_GUINT64_FORMAT, cfg->device, cfg->id);
        return NULL;
    }
    if (cfg->duration_ns < 0) {
        g_set_error(error, SV_DAG_ERROR, SV_DAG_ERROR_INVALID,
                    "negative duration %" G_GINT64_FORMAT " ns: node %" G_GUINT64_FORMAT,
                    cfg->duration_ns, cfg->id);
        return NULL;
    }
    if ((cfg->p.has & SV_DAG_HAS_INVOLVED_DIMS) && cfg->p.n_involved_dims > SV_DAG_MAX_DIMS) {
        g_set_error(error, SV_DAG_ERROR, SV_DAG_ERROR_INVALID,
                    "%u involved dimensions exceed %d: node %" G_GUINT64_FORMAT,
                    cfg->p.n_involved_dims, SV_DAG_MAX_DIMS, cfg->id);
        return NULL;
    }
    if (sv_dag__lookup(dag, cfg->id) != SV_DAG_NONE) {
        g_set_error(error, SV_DAG_ERROR, SV_DAG_ERROR_DUPLICATE_ID,
                    "duplicate node id %" G_GUINT64_FORMAT, cfg->id);
        return NULL;
    }
    SV_ASSERT(dag->n_nodes < SV_DAG_NONE - 1);
    uint32_t idx = (uint32_t)dag->n_nodes;
    /* A page is not zeroed up front: calloc would clear (and so make resident) the whole
     * page, about 120 KiB per DAG, even when the DAG has one node, as a replay's one-collective
     * ETs do; each node is cleared below as it is taken instead. */
    if ((idx & (SV_DAG_PAGE_SIZE - 1)) == 0)
        g_ptr_array_add(dag->pages, g_new(sv_dag_node, SV_DAG_PAGE_SIZE));
    if (sv_dag__dense(dag) && (idx == 0 || cfg->id == dag->dense_base + idx)) {
        /* still dense: no map (a hash insertion per node showed in serving profiles) */
        if (idx == 0)
            dag->dense_base = cfg->id;
        dag->n_nodes++;
    } else {
        if (sv_dag__dense(dag)) {
            /* leaving the dense form: map the nodes so far (the reservation ends the form) */
            sv_u64map_reserve(&dag->ids, dag->n_nodes + 1);
            for (uint32_t i = 0; i < idx; i++)
                sv_u64map_put(&dag->ids, sv_hash_mix64(dag->dense_base + i), i);
        }
        dag->n_nodes++;
        sv_u64map_put(&dag->ids, sv_hash_mix64(cfg->id), idx);
    }
    if (cfg->id >= dag->next_id)
        dag->next_id = cfg->id + 1;

    /* Every field is written once (a memset first cost as much again, the page being cold). */
    sv_dag_node *n = sv_dag__node(dag, idx);
    *n = (sv_dag_node){
        .id = cfg->id,
        /* an unnamed node costs no string-chunk lookup (msg/ names nodes only for ET output) */
        .name =
            cfg->name && cfg->name[0] ? g_string_chunk_insert_const(dag->strings, cfg->name) : "",
        .kind = cfg->kind,
        .device = cfg->device,
        .duration_ns = cfg->duration_ns,
        .p = cfg->p,
        .user = cfg->user,
        .index = idx,
    };
    n->p.pg_name = NULL;
    if ((cfg->p.has & SV_DAG_HAS_PG_NAME) && cfg->p.pg_name)
        n->p.pg_name = g_string_chunk_insert_const(dag->strings, cfg->p.pg_name);
    else
        n->p.has &= ~(uint32_t)SV_DAG_HAS_PG_NAME;

    struct sv_dag_nrt r = {
        .out_head = SV_DAG_NONE,
        .out_tail = SV_DAG_NONE,
        .in_head = SV_DAG_NONE,
        .in_tail = SV_DAG_NONE,
        .state = SV_DAG_NODE_WAITING,
        .start_ns = -1,
        .end_ns = -1,
    };
    g_array_append_val(dag->nrt, r);
    if (dag->exec)
        sv_dag__exec_refresh(dag->exec, idx);
    return n;
}

sv_dag_node *sv_dag_node_find(const sv_dag *dag, uint64_t id)
{
    uint32_t idx = sv_dag__lookup(dag, id);
    return idx == SV_DAG_NONE ? NULL : sv_dag__node(dag, idx);
}

sv_dag_node *sv_dag_node_at(const sv_dag *dag, size_t index)
{
    return index < dag->n_nodes ? sv_dag__node(dag, (uint32_t)index) : NULL;
}

void sv_dag_node_set_pg_name(sv_dag *dag, sv_dag_node *node, const char *pg_name)
{
    if (pg_name) {
        node->p.pg_name = g_string_chunk_insert_const(dag->strings, pg_name);
        node->p.has |= SV_DAG_HAS_PG_NAME;
    } else {
        node->p.pg_name = NULL;
        node->p.has &= ~(uint32_t)SV_DAG_HAS_PG_NAME;
    }
}

sv_dag_node_state sv_dag_node_get_state(const sv_dag *dag, const sv_dag_node *node)
{
    return (sv_dag_node_state)sv_dag__nrt(dag, node->index)->state;
}

sv_time sv_dag_node_start_ns(const sv_dag *dag, const sv_dag_node *node)
{
    return sv_dag__nrt(dag, node->index)->start_ns;
}

sv_time sv_dag_node_end_ns(const sv_dag *dag, const sv_dag_node *node)
{
    return sv_dag__nrt(dag, node->index)->end_ns;
}

/* ---- adjacency ---------------------------------------------------------------------------- */

size_t sv_dag_node_parents(const sv_dag *dag, const sv_dag_node *node, GArray *out)
{
    size_t n = 0;
    for (uint32_t e = sv_dag__nrt(dag, node->index)->in_head; e != SV_DAG_NONE;
         e = sv_dag__edge(dag, e)->next_in) {
        const struct sv_dag_edge *ed = sv_dag__edge(dag, e);
        sv_dag_link l = {sv_dag__node(dag, ed->parent), (sv_dag_edge_kind)ed->kind};
        g_array_append_val(out, l);
        n++;
    }
    return n;
}

/* ---- edges -------------------------------------------------------------------------------- */

void sv_dag__edge_link(sv_dag *dag, uint32_t parent, uint32_t child, sv_dag_edge_kind kind)
{
    uint32_t e;
    if (dag->edge_free != SV_DAG_NONE) {
        e = dag->edge_free;
        dag->edge_free = sv_dag__edge(dag, e)->next_out;
    } else {
        SV_ASSERT(dag->edges->len < SV_DAG_NONE - 1);
        e = dag->edges->len;
        g_array_set_size(dag->edges, e + 1);
    }
    struct sv_dag_nrt *pr = sv_dag__nrt(dag, parent);
    struct sv_dag_nrt *cr = sv_dag__nrt(dag, child);
    struct sv_dag_edge *ed = sv_dag__edge(dag, e);
    ed->parent = parent;
    ed->child = child;
    ed->kind = (uint8_t)kind;
    ed->live = 1;
    ed->next_out = SV_DAG_NONE;
    ed->prev_out = pr->out_tail;
    if (pr->out_tail != SV_DAG_NONE)
        sv_dag__edge(dag, pr->out_tail)->next_out = e;
    else
        pr->out_head = e;
    pr->out_tail = e;
    pr->n_out++;
    ed->next_in = SV_DAG_NONE;
    ed->prev_in = cr->in_tail;
    if (cr->in_tail != SV_DAG_NONE)
        sv_dag__edge(dag, cr->in_tail)->next_in = e;
    else
        cr->in_head = e;
    cr->in_tail = e;
    cr->n_in++;
    dag->n_edges[kind == SV_DAG_EDGE_CTRL]++;
    /* An edge from a finished parent is satisfied from the start. */
    if (pr->state != SV_DAG_NODE_DONE)
        cr->pend[kind == SV_DAG_EDGE_CTRL]++;
}

/* Unlink edge e from both lists and put it on the free list. */
static void edge_unlink(sv_dag *dag, uint32_t e)
{
    struct sv_dag_edge *ed = sv_dag__edge(dag, e);
    struct sv_dag_nrt *pr = sv_dag__nrt(dag, ed->parent);
    struct sv_dag_nrt *cr = sv_dag__nrt(dag, ed->child);
    if (ed->prev_out != SV_DAG_NONE)
        sv_dag__edge(dag, ed->prev_out)->next_out = ed->next_out;
    else
        pr->out_head = ed->next_out;
    if (ed->next_out != SV_DAG_NONE)
        sv_dag__edge(dag, ed->next_out)->prev_out = ed->prev_out;
    else
        pr->out_tail = ed->prev_out;
    pr->n_out--;
    if (ed->prev_in != SV_DAG_NONE)
        sv_dag__edge(dag, ed->prev_in)->next_in = ed->next_in;
    else
        cr->in_head = ed->next_in;
    if (ed->next_in != SV_DAG_NONE)
        sv_dag__edge(dag, ed->next_in)->prev_in = ed->prev_in;
    else
        cr->in_tail = ed->prev_in;
    cr->n_in--;
    int k = ed->kind == SV_DAG_EDGE_CTRL;
    dag->n_edges[k]--;
    if (pr->state != SV_DAG_NODE_DONE) {
        SV_ASSERT(cr->pend[k] > 0);
        cr->pend[k]--;
    }
    ed->live = 0;
    ed->next_out = dag->edge_free;
    dag->edge_free = e;
}

/* Whether an edge may still be added into `child`. */
static gboolean child_editable(const sv_dag *dag, const sv_dag_node *child, GError **error)
{
    uint8_t st = sv_dag__nrt(dag, child->index)->state;
    if (st == SV_DAG_NODE_ISSUED || st == SV_DAG_NODE_DONE) {
        g_set_error(error, SV_DAG_ERROR, SV_DAG_ERROR_STATE,
                    "node %" G_GUINT64_FORMAT " \"%s\" is already %s: it cannot gain a parent",
                    child->id, child->name, st == SV_DAG_NODE_DONE ? "finished" : "issued");
        return FALSE;
    }
    return TRUE;
}

gboolean sv_dag_edge_add(sv_dag *dag, sv_dag_node *parent, sv_dag_node *child,
                         sv_dag_edge_kind kind, GError **error)
{
    if (parent == child) {
        g_set_error(error, SV_DAG_ERROR, SV_DAG_ERROR_INVALID,
                    "self dependency on node %" G_GUINT64_FORMAT, parent->id);
        return FALSE;
    }
    if (kind != SV_DAG_EDGE_DATA && kind != SV_DAG_EDGE_CTRL) {
        g_set_error(error, SV_DAG_ERROR, SV_DAG_ERROR_INVALID,
                    "edge kind %d out of range: %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT,
                    (int)kind, parent->id, child->id);
        return FALSE;
    }
    if (!child_editable(dag, child, error))
        return FALSE;
    sv_dag__edge_link(dag, parent->index, child->index, kind);
    if (dag->exec)
        sv_dag__exec_refresh(dag->exec, child->index);
    return TRUE;
}

gboolean sv_dag_edge_add_id(sv_dag *dag, uint64_t parent, uint64_t child, sv_dag_edge_kind kind,
                            GError **error)
{
    sv_dag_node *p = sv_dag_node_find(dag, parent);
    sv_dag_node *c = sv_dag_node_find(dag, child);
    if (!p || !c) {
        g_set_error(error, SV_DAG_ERROR, SV_DAG_ERROR_NOT_FOUND,
                    "edge %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT
                    ": no node with id %" G_GUINT64_FORMAT,
                    parent, child, p ? child : parent);
        return FALSE;
    }
    return sv_dag_edge_add(dag, p, c, kind, error);
}

GArray *sv_dag_pop_edges(sv_dag *dag, sv_dag_node *node)
{
    struct sv_dag_nrt *r = sv_dag__nrt(dag, node->index);
    GArray *out = g_array_sized_new(FALSE, FALSE, sizeof(sv_dag_link), r->n_out);
    while (r->out_head != SV_DAG_NONE) {
        uint32_t e = r->out_head;
        const struct sv_dag_edge *ed = sv_dag__edge(dag, e);
        uint32_t child = ed->child;
        sv_dag_link l = {sv_dag__node(dag, child), (sv_dag_edge_kind)ed->kind};
        g_array_append_val(out, l);
        edge_unlink(dag, e);
        r = sv_dag__nrt(dag, node->index);
        if (dag->exec)
            sv_dag__exec_refresh(dag->exec, child);
    }
    return out;
}

gboolean sv_dag_splice(sv_dag *dag, sv_dag_node *node, sv_dag_node *first, sv_dag_node *last,
                       GError **error)
{
    if (!child_editable(dag, first, error))
        return FALSE;
    if (first == node || last == node) {
        g_set_error(error, SV_DAG_ERROR, SV_DAG_ERROR_INVALID,
                    "splice into node %" G_GUINT64_FORMAT " uses the node itself", node->id);
        return FALSE;
    }
    uint8_t lst = sv_dag__nrt(dag, last->index)->state;
    if (lst == SV_DAG_NODE_DONE) {
        g_set_error(error, SV_DAG_ERROR, SV_DAG_ERROR_STATE,
                    "splice after node %" G_GUINT64_FORMAT ": last node %" G_GUINT64_FORMAT
                    " has already finished",
                    node->id, last->id);
        return FALSE;
    }
    /* Validate every old child before changing anything. */
    for (uint32_t e = sv_dag__nrt(dag, node->index)->out_head; e != SV_DAG_NONE;
         e = sv_dag__edge(dag, e)->next_out) {
        sv_dag_node *c = sv_dag__node(dag, sv_dag__edge(dag, e)->child);
        if (c == last || c == first) {
            g_set_error(error, SV_DAG_ERROR, SV_DAG_ERROR_INVALID,
                        "splice after node %" G_GUINT64_FORMAT ": node %" G_GUINT64_FORMAT
                        " is already one of its children",
                        node->id, c->id);
            return FALSE;
        }
        if (!child_editable(dag, c, error)) {
            g_prefix_error(error, "splice after node %" G_GUINT64_FORMAT ": ", node->id);
            return FALSE;
        }
    }
    g_autoptr(GArray) old = sv_dag_pop_edges(dag, node);
    sv_dag__edge_link(dag, node->index, first->index, SV_DAG_EDGE_DATA);
    for (guint i = 0; i < old->len; i++) {
        sv_dag_link *l = &g_array_index(old, sv_dag_link, i);
        sv_dag__edge_link(dag, last->index, l->node->index, l->kind);
    }
    if (dag->exec) {
        sv_dag__exec_refresh(dag->exec, first->index);
        for (guint i = 0; i < old->len; i++)
            sv_dag__exec_refresh(dag->exec, g_array_index(old, sv_dag_link, i).node->index);
    }
    return TRUE;
}

/* ---- cycles ------------------------------------------------------------------------------- */

gboolean sv_dag__find_cycle(const sv_dag *dag, const guint8 *alive, gboolean data_only,
                            GString *out)
{
    size_t n = dag->n_nodes;
    /* Kahn's algorithm peels every node not on or behind a cycle; in what remains each node has
     * a remaining parent, so walking parent links from any remaining node must revisit one. */
    g_autofree uint32_t *indeg = g_new0(uint32_t, n);
    g_autofree uint32_t *queue = g_new(uint32_t, n);
    size_t qh = 0, qt = 0;
    for (size_t i = 0; i < n; i++) {
        if (!alive[i])
            continue;
        for (uint32_t e = sv_dag__nrt(dag, (uint32_t)i)->in_head; e != SV_DAG_NONE;
             e = sv_dag__edge(dag, e)->next_in) {
            const struct sv_dag_edge *ed = sv_dag__edge(dag, e);
            if ((data_only && ed->kind == SV_DAG_EDGE_CTRL) || !alive[ed->parent])
                continue;
            indeg[i]++;
        }
        if (indeg[i] == 0)
            queue[qt++] = (uint32_t)i;
    }
    g_autofree guint8 *peeled = g_new0(guint8, n);
    while (qh < qt) {
        uint32_t v = queue[qh++];
        peeled[v] = 1;
        for (uint32_t e = sv_dag__nrt(dag, v)->out_head; e != SV_DAG_NONE;
             e = sv_dag__edge(dag, e)->next_out) {
            const struct sv_dag_edge *ed = sv_dag__edge(dag, e);
            if ((data_only && ed->kind == SV_DAG_EDGE_CTRL) || !alive[ed->child])
                continue;
            if (--indeg[ed->child] == 0)
                queue[qt++] = ed->child;
        }
    }
    uint32_t start = SV_DAG_NONE;
    for (size_t i = 0; i < n && start == SV_DAG_NONE; i++)
        if (alive[i] && !peeled[i])
            start = (uint32_t)i;
    if (start == SV_DAG_NONE)
        return FALSE;
    /* Walk to remaining parents; seen[] holds the 1-based position in the walk. */
    g_autofree uint32_t *seen = g_new0(uint32_t, n);
    GArray *walk = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    uint32_t v = start;
    while (!seen[v]) {
        g_array_append_val(walk, v);
        seen[v] = walk->len;
        uint32_t next = SV_DAG_NONE;
        for (uint32_t e = sv_dag__nrt(dag, v)->in_head; e != SV_DAG_NONE;
             e = sv_dag__edge(dag, e)->next_in) {
            const struct sv_dag_edge *ed = sv_dag__edge(dag, e);
            if ((data_only && ed->kind == SV_DAG_EDGE_CTRL) || !alive[ed->parent] ||
                peeled[ed->parent])
                continue;
            next = ed->parent;
            break;
        }
        SV_ASSERT(next != SV_DAG_NONE);
        v = next;
    }
    /* walk[seen[v]-1 ..] is the cycle, child -> parent; print it parent -> child. */
    guint from = seen[v] - 1;
    for (guint i = walk->len; i > from; i--) {
        uint32_t w = g_array_index(walk, uint32_t, i - 1);
        g_string_append_printf(out, "%" G_GUINT64_FORMAT " -> ", sv_dag__node(dag, w)->id);
    }
    g_string_append_printf(out, "%" G_GUINT64_FORMAT,
                           sv_dag__node(dag, g_array_index(walk, uint32_t, walk->len - 1))->id);
    g_array_unref(walk);
    return TRUE;
}

gboolean sv_dag_check_acyclic(const sv_dag *dag, GError **error)
{
    g_autofree guint8 *alive = g_malloc(dag->n_nodes ? dag->n_nodes : 1);
    memset(alive, 1, dag->n_nodes);
    g_autoptr(GString) cyc = g_string_new(NULL);
    if (!sv_dag__find_cycle(dag, alive, FALSE, cyc))
        return TRUE;
    g_set_error(error, SV_DAG_ERROR, SV_DAG_ERROR_CYCLE, "dependency cycle: %s (node ids)",
                cyc->str);
    return FALSE;
}
