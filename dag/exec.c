/* The DAG executor: ready tracking, issue passes in ascending id, resource policies, built-in
 * handlers and the stall diagnosis.
 *
 * Issue semantics follow ASTRA-sim's workload layer (astra-sim/workload/Workload.cc):
 * issue_dep_free_nodes() copies the dependency-free set into an ordered set and, in ascending id,
 * issues each node whose hardware slot is available; a completion releases the slot, marks the node
 * finished (freeing its children) and runs issue_dep_free_nodes() again. Ready nodes blocked on a
 * slot therefore wait for the next completion on any device of the workload.
 *
 * One deliberate difference: a node that completes synchronously inside its handler (ASTRA-sim's
 * skip_invalid for METADATA/INVALID nodes) frees its children during the pass; ASTRA-sim leaves
 * them for the next completion, which never comes when nothing else is in flight (the workload then
 * never reports "finished"). We run another pass at the same time instead, so such a graph
 * finishes. Nodes made ready by dynamic edits outside a pass are picked up by a pass scheduled at
 * the current time (sv_dag_exec_kick). */
#include "dag/dag_internal.h"

#include <string.h>

struct sv_dag_exec {
    sv_dag *dag;
    sv_engine *eng;
    struct sv_dag_exec_cfg cfg;
    struct sv_dag_policy policy;
    void *pstate;
    GArray *ready; /* node indices with in_ready set; sorted by id up to `sorted` */
    gboolean ready_unsorted;
    gboolean started;
    gboolean in_pass;
    gboolean again;   /* a node became ready during the current pass */
    gboolean in_done; /* inside sv_dag_exec_node_done (a pass follows) */
    gboolean all_done_reported;
    sv_event_id kick_ev;
    size_t n_done;
    size_t n_issued;
    sv_time finish_ns;
};

/* ---- ASTRA-sim HardwareResource policy ---------------------------------------------------- */

enum { SLOT_NONE = -1, SLOT_CPU = 0, SLOT_GPU, SLOT_COMM, SLOT_PIM, SLOT_COUNT };
static const char *const slot_names[SLOT_COUNT] = {"cpu", "gpu compute", "comm", "pim"};

/* Which slot a node holds (CHAKRA_ET.md 1.5: one CPU op, one GPU compute op, one comm op per
 * NPU; COMM_RECV bypasses the comm slot; MEM_LOAD/STORE, METADATA and INVALID use it). */
static int astra_slot(const sv_dag_node *n)
{
    switch (n->kind) {
    case SV_DAG_KIND_COMP:
        return n->p.is_cpu_op ? SLOT_CPU : SLOT_GPU;
    case SV_DAG_KIND_PIM:
        return SLOT_PIM;
    case SV_DAG_KIND_COMM_COLL:
    case SV_DAG_KIND_COMM_SEND:
    case SV_DAG_KIND_MEM_LOAD:
    case SV_DAG_KIND_MEM_STORE:
    case SV_DAG_KIND_METADATA:
    case SV_DAG_KIND_INVALID:
        return SLOT_COMM;
    case SV_DAG_KIND_COMM_RECV:
    case SV_DAG_KIND_LOGICAL:
    default:
        return SLOT_NONE;
    }
}

/* Per device, the node holding each slot (NULL = free). Indexed from the lowest device seen: a
 * replay has one executor per NPU, each with one device, and an array from device 0 would make
 * the executors of N NPUs hold N^2 / 2 cells (200 MB at 4,096 NPUs). */
typedef struct {
    GPtrArray *slots; /* (device - base) * SLOT_COUNT + slot -> const sv_dag_node * */
    int base;
} astra_state;

static void *astra_new(void *ctx)
{
    astra_state *s = g_new0(astra_state, 1);
    s->slots = g_ptr_array_new();
    return s;
}

static void astra_free(void *state)
{
    astra_state *s = state;
    g_ptr_array_unref(s->slots);
    g_free(s);
}

static const sv_dag_node **astra_cell(astra_state *s, const sv_dag_node *n, int slot)
{
    if (s->slots->len == 0)
        s->base = n->device;
    if (n->device < s->base) {
        /* a lower device than any so far: move the cells up (rare: once per lower device) */
        guint shift = (guint)(s->base - n->device) * SLOT_COUNT;
        guint len = s->slots->len;
        g_ptr_array_set_size(s->slots, len + shift);
        memmove(&g_ptr_array_index(s->slots, shift), &g_ptr_array_index(s->slots, 0),
                len * sizeof(gpointer));
        for (guint k = 0; k < shift; k++)
            g_ptr_array_index(s->slots, k) = NULL;
        s->base = n->device;
    }
    guint i = (guint)(n->device - s->base) * SLOT_COUNT + (guint)slot;
    if (i >= s->slots->len)
        g_ptr_array_set_size(s->slots, (i / SLOT_COUNT + 1) * SLOT_COUNT);
    return (const sv_dag_node **)&g_ptr_array_index(s->slots, i);
}

static gboolean astra_available(void *state, const sv_dag_node *n)
{
    int slot = astra_slot(n);
    return slot == SLOT_NONE || *astra_cell(state, n, slot) == NULL;
}

static void astra_occupy(void *state, const sv_dag_node *n)
{
    int slot = astra_slot(n);
    if (slot == SLOT_NONE)
        return;
    const sv_dag_node **c = astra_cell(state, n, slot);
    SV_ASSERT(*c == NULL);
    *c = n;
}

static void astra_release(void *state, const sv_dag_node *n)
{
    int slot = astra_slot(n);
    if (slot == SLOT_NONE)
        return;
    const sv_dag_node **c = astra_cell(state, n, slot);
    SV_ASSERT(*c == n);
    *c = NULL;
}

static void astra_describe(void *state, const sv_dag_node *n, GString *out)
{
    int slot = astra_slot(n);
    if (slot == SLOT_NONE)
        return;
    const sv_dag_node *h = *astra_cell(state, n, slot);
    if (h)
        g_string_append_printf(out,
                               "%s slot on device %d held by node %" G_GUINT64_FORMAT " \"%s\"",
                               slot_names[slot], n->device, h->id, h->name);
    else
        g_string_append_printf(out, "%s slot on device %d free (next pass issues it)",
                               slot_names[slot], n->device);
}

static const struct sv_dag_policy astra_policy = {
    .name = "astra",
    .state_new = astra_new,
    .state_free = astra_free,
    .available = astra_available,
    .occupy = astra_occupy,
    .release = astra_release,
    .describe_block = astra_describe,
};

static gboolean unlimited_available(void *state, const sv_dag_node *n)
{
    return TRUE;
}

static const struct sv_dag_policy unlimited_policy = {
    .name = "unlimited",
    .available = unlimited_available,
};

/* ---- built-in handlers -------------------------------------------------------------------- */

static void replay_fire(sv_engine *eng, void *ctx, uint64_t arg)
{
    sv_dag_exec *ex = ctx;
    sv_dag_exec_node_done(ex, sv_dag__node(ex->dag, (uint32_t)arg));
}

void sv_dag_exec_handler_replay(sv_dag_exec *ex, sv_dag_node *node, void *ctx)
{
    /* ASTRA-sim issue_replay: a zero runtime still takes 1 ns. */
    sv_time d = node->duration_ns > 0 ? node->duration_ns : 1;
    sv_engine_schedule_in(ex->eng, d, SV_PRIO_DEFAULT, replay_fire, ex, node->index);
}

void sv_dag_exec_handler_skip(sv_dag_exec *ex, sv_dag_node *node, void *ctx)
{
    sv_dag_exec_node_done(ex, node);
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

sv_dag_exec *sv_dag_exec_new(sv_dag *dag, sv_engine *eng, const struct sv_dag_exec_cfg *cfg,
                             GError **error)
{
    if (dag->exec) {
        g_set_error(error, SV_DAG_ERROR, SV_DAG_ERROR_STATE,
                    "the DAG already has an executor attached");
        return NULL;
    }
    struct sv_dag_exec_cfg c = {0};
    if (cfg)
        c = *cfg;
    const struct sv_dag_policy *pol;
    switch (c.policy) {
    case SV_DAG_POLICY_ASTRA:
        pol = &astra_policy;
        break;
    case SV_DAG_POLICY_UNLIMITED:
        pol = &unlimited_policy;
        break;
    case SV_DAG_POLICY_CUSTOM:
        pol = c.custom_policy;
        if (!pol || !pol->available) {
            g_set_error(error, SV_DAG_ERROR, SV_DAG_ERROR_INVALID,
                        "custom policy without an available() callback");
            return NULL;
        }
        break;
    default:
        g_set_error(error, SV_DAG_ERROR, SV_DAG_ERROR_INVALID, "policy %d out of range",
                    (int)c.policy);
        return NULL;
    }
    /* A dag that has already been run keeps DONE states; a second executor would see them. */
    for (size_t i = 0; i < dag->n_nodes; i++) {
        if (sv_dag__nrt(dag, (uint32_t)i)->state != SV_DAG_NODE_WAITING) {
            g_set_error(error, SV_DAG_ERROR, SV_DAG_ERROR_STATE,
                        "the DAG has already been executed (node %" G_GUINT64_FORMAT ")",
                        sv_dag__node(dag, (uint32_t)i)->id);
            return NULL;
        }
    }
    sv_dag_exec *ex = g_new0(sv_dag_exec, 1);
    ex->dag = dag;
    ex->eng = eng;
    ex->cfg = c;
    ex->policy = *pol;
    ex->pstate = ex->policy.state_new ? ex->policy.state_new(ex->policy.ctx) : NULL;
    ex->ready = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    ex->finish_ns = -1;
    dag->exec = ex;
    return ex;
}

void sv_dag__exec_detach(sv_dag_exec *ex)
{
    if (ex->kick_ev != SV_EVENT_NONE && ex->eng)
        sv_engine_cancel(ex->eng, ex->kick_ev);
    ex->kick_ev = SV_EVENT_NONE;
    ex->dag = NULL;
}

void sv_dag_exec_free(sv_dag_exec *ex)
{
    if (!ex)
        return;
    if (ex->kick_ev != SV_EVENT_NONE)
        sv_engine_cancel(ex->eng, ex->kick_ev);
    if (ex->dag)
        ex->dag->exec = NULL;
    if (ex->policy.state_free)
        ex->policy.state_free(ex->pstate);
    g_array_unref(ex->ready);
    g_free(ex);
}

sv_dag *sv_dag_exec_dag(const sv_dag_exec *ex)
{
    return ex->dag;
}

sv_engine *sv_dag_exec_engine(const sv_dag_exec *ex)
{
    return ex->eng;
}

/* ---- ready tracking ----------------------------------------------------------------------- */

static gboolean deps_met(const sv_dag_exec *ex, const struct sv_dag_nrt *r)
{
    return r->pend[SV_DAG_EDGE_DATA] == 0 &&
           (ex->cfg.ignore_ctrl_deps || r->pend[SV_DAG_EDGE_CTRL] == 0);
}

static void kick_fire(sv_engine *eng, void *ctx, uint64_t arg);

void sv_dag__exec_refresh(sv_dag_exec *ex, uint32_t idx)
{
    if (!ex->started)
        return;
    struct sv_dag_nrt *r = sv_dag__nrt(ex->dag, idx);
    if (r->state == SV_DAG_NODE_WAITING && deps_met(ex, r)) {
        r->state = SV_DAG_NODE_READY;
        if (!r->in_ready) {
            r->in_ready = 1;
            /* With dense ids (no id map, dag_internal.h) index order is id order: an append
             * after a smaller index keeps the array sorted, and a sort is rarely needed. */
            guint len = ex->ready->len;
            if (!sv_dag__dense(ex->dag) ||
                (len > 0 && g_array_index(ex->ready, uint32_t, len - 1) > idx))
                ex->ready_unsorted = TRUE;
            g_array_append_val(ex->ready, idx);
        }
        if (ex->in_pass)
            ex->again = TRUE;
        else if (!ex->in_done)
            sv_dag_exec_kick(ex);
    } else if (r->state == SV_DAG_NODE_READY && !deps_met(ex, r)) {
        /* Gained an unfinished parent; its stale ready entry is dropped by the next pass. */
        r->state = SV_DAG_NODE_WAITING;
    }
    /* A node added after everything finished reopens the run. */
    if (r->state != SV_DAG_NODE_DONE)
        ex->all_done_reported = FALSE;
}

static int cmp_by_id(gconstpointer a, gconstpointer b, gpointer data)
{
    const sv_dag *dag = data;
    uint64_t x = sv_dag__node(dag, *(const uint32_t *)a)->id;
    uint64_t y = sv_dag__node(dag, *(const uint32_t *)b)->id;
    return x < y ? -1 : x > y;
}

static int cmp_index(gconstpointer a, gconstpointer b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void check_all_done(sv_dag_exec *ex)
{
    if (ex->n_done == ex->dag->n_nodes && !ex->all_done_reported) {
        ex->all_done_reported = TRUE;
        if (ex->cfg.on_all_done)
            ex->cfg.on_all_done(ex, ex->cfg.cb_ctx);
    }
}

static sv_dag_handler_fn handler_for(const sv_dag_exec *ex, sv_dag_kind kind)
{
    if (ex->cfg.handlers[kind])
        return ex->cfg.handlers[kind];
    if (ex->cfg.default_handler)
        return ex->cfg.default_handler;
    if (kind == SV_DAG_KIND_INVALID || kind == SV_DAG_KIND_METADATA || kind == SV_DAG_KIND_LOGICAL)
        return sv_dag_exec_handler_skip;
    return sv_dag_exec_handler_replay;
}

/* ASTRA-sim issue_dep_free_nodes, repeated while a pass made further nodes ready. */
static void issue_pass(sv_dag_exec *ex)
{
    if (ex->in_pass) {
        ex->again = TRUE;
        return;
    }
    sv_dag *dag = ex->dag;
    ex->in_pass = TRUE;
    do {
        ex->again = FALSE;
        if (ex->ready_unsorted) {
            if (sv_dag__dense(dag)) /* dense ids: id order is index order */
                g_array_sort(ex->ready, cmp_index);
            else
                g_array_sort_with_data(ex->ready, cmp_by_id, dag);
            ex->ready_unsorted = FALSE;
        }
        guint n = ex->ready->len; /* the snapshot: later additions wait for the next pass */
        for (guint i = 0; i < n; i++) {
            uint32_t idx = g_array_index(ex->ready, uint32_t, i);
            struct sv_dag_nrt *r = sv_dag__nrt(dag, idx);
            if (r->state != SV_DAG_NODE_READY)
                continue;
            sv_dag_node *node = sv_dag__node(dag, idx);
            if (!ex->policy.available(ex->pstate, node))
                continue;
            r->state = SV_DAG_NODE_ISSUED;
            r->start_ns = sv_engine_now(ex->eng);
            ex->n_issued++;
            if (ex->policy.occupy)
                ex->policy.occupy(ex->pstate, node);
            handler_for(ex, node->kind)(ex, node, ex->cfg.handler_ctx);
        }
        /* Drop entries that are no longer ready, keeping the order. */
        guint w = 0;
        for (guint i = 0; i < ex->ready->len; i++) {
            uint32_t idx = g_array_index(ex->ready, uint32_t, i);
            struct sv_dag_nrt *r = sv_dag__nrt(dag, idx);
            if (r->state == SV_DAG_NODE_READY)
                g_array_index(ex->ready, uint32_t, w++) = idx;
            else
                r->in_ready = 0;
        }
        g_array_set_size(ex->ready, w);
    } while (ex->again);
    ex->in_pass = FALSE;
    check_all_done(ex);
}

static void kick_fire(sv_engine *eng, void *ctx, uint64_t arg)
{
    sv_dag_exec *ex = ctx;
    ex->kick_ev = SV_EVENT_NONE;
    if (ex->dag)
        issue_pass(ex);
}

void sv_dag_exec_kick(sv_dag_exec *ex)
{
    if (!ex->started || ex->kick_ev != SV_EVENT_NONE || !ex->dag)
        return;
    ex->kick_ev = sv_engine_schedule_in(ex->eng, 0, SV_PRIO_DEFAULT, kick_fire, ex, 0);
}

void sv_dag_exec_start(sv_dag_exec *ex)
{
    if (ex->started || !ex->dag)
        return;
    ex->started = TRUE;
    ex->in_done = TRUE; /* collect without kicking; the pass below issues */
    for (size_t i = 0; i < ex->dag->n_nodes; i++)
        sv_dag__exec_refresh(ex, (uint32_t)i);
    ex->in_done = FALSE;
    issue_pass(ex);
}

void sv_dag_exec_node_done(sv_dag_exec *ex, sv_dag_node *node)
{
    sv_dag *dag = ex->dag;
    SV_ASSERT(dag != NULL);
    struct sv_dag_nrt *r = sv_dag__nrt(dag, node->index);
    SV_ASSERT(r->state == SV_DAG_NODE_ISSUED);
    gboolean outer = !ex->in_done;
    ex->in_done = TRUE;
    if (ex->policy.release)
        ex->policy.release(ex->pstate, node);
    r->state = SV_DAG_NODE_DONE;
    r->end_ns = sv_engine_now(ex->eng);
    ex->finish_ns = r->end_ns;
    ex->n_issued--;
    ex->n_done++;
    for (uint32_t e = r->out_head; e != SV_DAG_NONE; e = sv_dag__edge(dag, e)->next_out) {
        const struct sv_dag_edge *ed = sv_dag__edge(dag, e);
        struct sv_dag_nrt *cr = sv_dag__nrt(dag, ed->child);
        SV_ASSERT(cr->pend[ed->kind] > 0);
        cr->pend[ed->kind]--;
        sv_dag__exec_refresh(ex, ed->child);
    }
    if (ex->cfg.on_node_done)
        ex->cfg.on_node_done(ex, node, ex->cfg.cb_ctx);
    if (outer)
        ex->in_done = FALSE;
    if (ex->in_pass)
        ex->again = TRUE; /* completed inside a handler: the running pass loops again */
    else if (outer)
        issue_pass(ex);
}

/* ---- queries ------------------------------------------------------------------------------ */

gboolean sv_dag_exec_finished(const sv_dag_exec *ex)
{
    return ex->started && ex->dag && ex->n_done == ex->dag->n_nodes;
}

size_t sv_dag_exec_n_done(const sv_dag_exec *ex)
{
    return ex->n_done;
}

sv_time sv_dag_exec_finish_ns(const sv_dag_exec *ex)
{
    return ex->finish_ns;
}

gboolean sv_dag_exec_run(sv_dag_exec *ex, GError **error)
{
    SV_ASSERT(ex->dag != NULL);
    sv_dag_exec_start(ex);
    sv_engine_run(ex->eng, SV_TIME_MAX);
    if (sv_engine_error(ex->eng) != NULL) {
        g_propagate_error(error, g_error_copy(sv_engine_error(ex->eng)));
        return FALSE;
    }
    if (sv_dag_exec_finished(ex)) {
        g_debug("dag: %zu nodes finished at %" G_GINT64_FORMAT " ns", sv_dag_node_count(ex->dag),
                ex->finish_ns);
        return TRUE;
    }
    g_autoptr(GString) diag = g_string_new(NULL);
    if (sv_engine_pending(ex->eng) > 0)
        g_string_append(diag, "the engine was stopped before the DAG finished\n");
    sv_dag_exec_diagnose(ex, diag);
    if (diag->len && diag->str[diag->len - 1] == '\n')
        g_string_truncate(diag, diag->len - 1);
    g_set_error(error, SV_DAG_ERROR, SV_DAG_ERROR_STALL, "%s", diag->str);
    return FALSE;
}

/* ---- diagnosis ---------------------------------------------------------------------------- */

/* Lines per category before "... and N more". */
#define DIAG_CAP 20
/* Parents listed per waiting node. */
#define DIAG_PARENTS 8

static const char *state_word(uint8_t st)
{
    switch (st) {
    case SV_DAG_NODE_WAITING:
        return "waiting";
    case SV_DAG_NODE_READY:
        return "ready";
    case SV_DAG_NODE_ISSUED:
        return "issued";
    default:
        return "done";
    }
}

static int cmp_dev_id(gconstpointer a, gconstpointer b, gpointer data)
{
    const sv_dag *dag = data;
    const sv_dag_node *x = sv_dag__node(dag, *(const uint32_t *)a);
    const sv_dag_node *y = sv_dag__node(dag, *(const uint32_t *)b);
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static void node_head(GString *out, const char *cat, const sv_dag_node *n)
{
    g_string_append_printf(out, "  %s: device %d node %" G_GUINT64_FORMAT " \"%s\" (%s)", cat,
                           n->device, n->id, n->name, sv_dag_kind_name(n->kind));
}

size_t sv_dag_exec_diagnose(const sv_dag_exec *ex, GString *out)
{
    const sv_dag *dag = ex->dag;
    if (!dag)
        return 0;
    size_t n = dag->n_nodes;
    size_t left = n - ex->n_done;
    g_string_append_printf(out,
                           "dag stalled at t=%" G_GINT64_FORMAT " ns: %zu of %zu nodes unfinished"
                           " (%zu issued, policy %s)\n",
                           sv_engine_now(ex->eng), left, n, ex->n_issued,
                           ex->policy.name ? ex->policy.name : "custom");
    if (!ex->started) {
        g_string_append(out, "  the executor was never started\n");
        return left;
    }
    if (left == 0)
        return 0;

    g_autofree guint8 *alive = g_new0(guint8, n);
    GArray *todo = g_array_sized_new(FALSE, FALSE, sizeof(uint32_t), (guint)left);
    for (size_t i = 0; i < n; i++) {
        if (sv_dag__nrt(dag, (uint32_t)i)->state != SV_DAG_NODE_DONE) {
            alive[i] = 1;
            uint32_t idx = (uint32_t)i;
            g_array_append_val(todo, idx);
        }
    }
    g_array_sort_with_data(todo, cmp_dev_id, (gpointer)dag);

    g_autoptr(GString) cyc = g_string_new(NULL);
    if (sv_dag__find_cycle(dag, alive, ex->cfg.ignore_ctrl_deps, cyc))
        g_string_append_printf(out, "  cycle: %s (node ids)\n", cyc->str);

    static const uint8_t order[] = {SV_DAG_NODE_ISSUED, SV_DAG_NODE_READY, SV_DAG_NODE_WAITING};
    static const char *const cat[] = {"issued", "blocked", "waiting"};
    for (int c = 0; c < 3; c++) {
        size_t shown = 0, total = 0;
        for (guint i = 0; i < todo->len; i++) {
            uint32_t idx = g_array_index(todo, uint32_t, i);
            const struct sv_dag_nrt *r = sv_dag__nrt(dag, idx);
            if (r->state != order[c])
                continue;
            total++;
            if (shown == DIAG_CAP)
                continue;
            shown++;
            const sv_dag_node *nd = sv_dag__node(dag, idx);
            node_head(out, cat[c], nd);
            if (order[c] == SV_DAG_NODE_ISSUED) {
                g_string_append_printf(
                    out, " started at %" G_GINT64_FORMAT " ns and never completed", r->start_ns);
                if (ex->cfg.describe_issued) {
                    g_string_append(out, ": ");
                    ex->cfg.describe_issued((sv_dag_exec *)ex, nd, out, ex->cfg.cb_ctx);
                }
            } else if (order[c] == SV_DAG_NODE_READY) {
                g_string_append(out, " ready but its resource is busy");
                if (ex->policy.describe_block) {
                    g_string_append(out, ": ");
                    ex->policy.describe_block(ex->pstate, nd, out);
                }
            } else {
                uint32_t np = r->pend[0] + (ex->cfg.ignore_ctrl_deps ? 0 : r->pend[1]);
                g_string_append_printf(out, " waits for %u unfinished parent%s:", np,
                                       np == 1 ? "" : "s");
                unsigned listed = 0;
                for (uint32_t e = r->in_head; e != SV_DAG_NONE; e = sv_dag__edge(dag, e)->next_in) {
                    const struct sv_dag_edge *ed = sv_dag__edge(dag, e);
                    if (ex->cfg.ignore_ctrl_deps && ed->kind == SV_DAG_EDGE_CTRL)
                        continue;
                    const struct sv_dag_nrt *pr = sv_dag__nrt(dag, ed->parent);
                    if (pr->state == SV_DAG_NODE_DONE)
                        continue;
                    if (listed == DIAG_PARENTS) {
                        g_string_append(out, " ...");
                        break;
                    }
                    const sv_dag_node *p = sv_dag__node(dag, ed->parent);
                    g_string_append_printf(out, " %" G_GUINT64_FORMAT " (%s%s, device %d)", p->id,
                                           state_word(pr->state),
                                           ed->kind == SV_DAG_EDGE_CTRL ? ", ctrl" : "", p->device);
                    listed++;
                }
            }
            g_string_append_c(out, '\n');
        }
        if (total > shown)
            g_string_append_printf(out, "  ... and %zu more %s nodes\n", total - shown, cat[c]);
    }
    g_array_unref(todo);
    return left;
}
