/* Tests of the dag module: graph edits, the executor (ready rule, order, ASTRA-sim policy, dynamic
 * splicing, stall diagnosis) and Chakra ET round trips.
 *
 * Expected times are hand computations from the node durations and the booking rule of
 * ../shared/interop/CHAKRA_ET.md 1.5; expected ET contents come from the files themselves (byte
 * equality) and from the decoded .json next to each vector. */
#include <string.h>

#include "dag/dag.h"
#include "tests/test_util.h"

#define US SV_NS_PER_US

static sv_dag_node *add(sv_dag *dag, uint64_t id, sv_dag_kind kind, int32_t dev, sv_time dur)
{
    struct sv_dag_node_cfg c = {.id = id, .kind = kind, .device = dev, .duration_ns = dur};
    char name[32];
    g_snprintf(name, sizeof name, "n%" G_GUINT64_FORMAT, id);
    c.name = name;
    GError *err = NULL;
    sv_dag_node *n = sv_dag_node_add(dag, &c, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(n);
    return n;
}

static void edge(sv_dag *dag, sv_dag_node *p, sv_dag_node *c, sv_dag_edge_kind k)
{
    GError *err = NULL;
    CU_ASSERT_TRUE_FATAL(sv_dag_edge_add(dag, p, c, k, &err));
}

/* Run to completion; assert it finished. */
static void run_ok(sv_dag_exec *ex)
{
    GError *err = NULL;
    gboolean ok = sv_dag_exec_run(ex, &err);
    if (!ok)
        fprintf(stderr, "%s\n", err->message);
    CU_ASSERT_TRUE(ok);
    g_clear_error(&err);
}

static sv_time end_of(sv_dag *dag, sv_dag_node *n)
{
    return sv_dag_node_end_ns(dag, n);
}

static sv_time start_of(sv_dag *dag, sv_dag_node *n)
{
    return sv_dag_node_start_ns(dag, n);
}

/* ---- graph basics ------------------------------------------------------------------------- */

static void test_graph_basics(void)
{
    g_autoptr(sv_dag) dag = sv_dag_new();
    sv_dag_node *a = add(dag, 100, SV_DAG_KIND_COMP, 0, 1);
    sv_dag_node *b = add(dag, 7, SV_DAG_KIND_COMP, 0, 1);
    sv_dag_node *c = add(dag, 1ull << 40, SV_DAG_KIND_COMM_COLL, 1, 1);
    GError *err = NULL;
    struct sv_dag_node_cfg dup = {.id = 7};
    CU_ASSERT_PTR_NULL(sv_dag_node_add(dag, &dup, &err));
    CU_ASSERT_TRUE(g_error_matches(err, SV_DAG_ERROR, SV_DAG_ERROR_DUPLICATE_ID));
    g_clear_error(&err);
    CU_ASSERT_EQUAL(sv_dag_node_count(dag), 3);
    CU_ASSERT_EQUAL(sv_dag_next_id(dag), (1ull << 40) + 1);
    CU_ASSERT_PTR_EQUAL(sv_dag_node_find(dag, 7), b);
    CU_ASSERT_PTR_NULL(sv_dag_node_find(dag, 8));
    CU_ASSERT_PTR_EQUAL(sv_dag_node_at(dag, 2), c);
    edge(dag, a, c, SV_DAG_EDGE_DATA);
    edge(dag, b, c, SV_DAG_EDGE_CTRL);
    CU_ASSERT_FALSE(sv_dag_edge_add(dag, a, a, SV_DAG_EDGE_DATA, &err));
    g_clear_error(&err);
    CU_ASSERT_FALSE(sv_dag_edge_add_id(dag, 100, 55, SV_DAG_EDGE_DATA, &err));
    CU_ASSERT_TRUE(g_error_matches(err, SV_DAG_ERROR, SV_DAG_ERROR_NOT_FOUND));
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, "55"));
    g_clear_error(&err);
    CU_ASSERT_EQUAL(sv_dag_edge_count(dag), 2);
    CU_ASSERT_EQUAL(sv_dag_edge_count_kind(dag, SV_DAG_EDGE_CTRL), 1);
    g_autoptr(GArray) par = g_array_new(FALSE, FALSE, sizeof(sv_dag_link));
    CU_ASSERT_EQUAL(sv_dag_node_parents(dag, c, par), 2);
    CU_ASSERT_PTR_EQUAL(g_array_index(par, sv_dag_link, 0).node, a);
    CU_ASSERT_EQUAL(g_array_index(par, sv_dag_link, 1).kind, SV_DAG_EDGE_CTRL);
    CU_ASSERT_TRUE(sv_dag_check_acyclic(dag, NULL));
    edge(dag, c, a, SV_DAG_EDGE_CTRL);
    CU_ASSERT_FALSE(sv_dag_check_acyclic(dag, &err));
    CU_ASSERT_TRUE(g_error_matches(err, SV_DAG_ERROR, SV_DAG_ERROR_CYCLE));
    /* The cycle is a -> c -> a: 100 -> 1099511627776 -> 100 (starting point may rotate). */
    CU_ASSERT_PTR_NOT_NULL(err && (strstr(err->message, "100 -> 1099511627776 -> 100") ||
                                   strstr(err->message, "1099511627776 -> 100 -> 1099511627776")));
    g_clear_error(&err);
    g_autoptr(GArray) kids = sv_dag_pop_edges(dag, c);
    CU_ASSERT_EQUAL(kids->len, 1);
    CU_ASSERT_EQUAL(sv_dag_edge_count(dag), 2);
    CU_ASSERT_TRUE(sv_dag_check_acyclic(dag, NULL));
}

/* ---- ready rule --------------------------------------------------------------------------- */

/* a (5 us) -data-> c (1 us) <-ctrl- b (10 us), unlimited policy: c waits for both parents
 * (ASTRA-sim): starts at 10 us, ends 11 us; ignoring ctrl deps (feeder v1) it starts at 5 us. */
static void ready_rule_case(gboolean ignore_ctrl, sv_time want_start)
{
    g_autoptr(sv_dag) dag = sv_dag_new();
    sv_dag_node *a = add(dag, 1, SV_DAG_KIND_COMP, 0, 5 * US);
    sv_dag_node *b = add(dag, 2, SV_DAG_KIND_COMP, 1, 10 * US);
    sv_dag_node *c = add(dag, 3, SV_DAG_KIND_COMP, 2, 1 * US);
    edge(dag, a, c, SV_DAG_EDGE_DATA);
    edge(dag, b, c, SV_DAG_EDGE_CTRL);
    sv_engine *eng = sv_engine_new(1);
    struct sv_dag_exec_cfg cfg = {.policy = SV_DAG_POLICY_UNLIMITED,
                                  .ignore_ctrl_deps = ignore_ctrl};
    sv_dag_exec *ex = sv_dag_exec_new(dag, eng, &cfg, NULL);
    run_ok(ex);
    SV_ASSERT_EQ_I64(start_of(dag, c), want_start);
    SV_ASSERT_EQ_I64(end_of(dag, c), want_start + 1 * US);
    SV_ASSERT_EQ_I64(end_of(dag, b), 10 * US);
    sv_dag_exec_free(ex);
    sv_engine_free(eng);
}

static void test_ready_rule(void)
{
    ready_rule_case(FALSE, 10 * US);
    ready_rule_case(TRUE, 5 * US);
}

/* ---- ascending id release ----------------------------------------------------------------- */

struct order_log {
    GArray *ids;
};

static void log_and_replay(sv_dag_exec *ex, sv_dag_node *n, void *ctx)
{
    struct order_log *l = ctx;
    g_array_append_val(l->ids, n->id);
    sv_dag_exec_handler_replay(ex, n, NULL);
}

static void test_ascending_release(void)
{
    g_autoptr(sv_dag) dag = sv_dag_new();
    /* Inserted out of id order; one GPU slot, 1 us each: issue order 10, 20, 30. */
    sv_dag_node *n30 = add(dag, 30, SV_DAG_KIND_COMP, 0, 1 * US);
    sv_dag_node *n10 = add(dag, 10, SV_DAG_KIND_COMP, 0, 1 * US);
    sv_dag_node *n20 = add(dag, 20, SV_DAG_KIND_COMP, 0, 1 * US);
    struct order_log log = {g_array_new(FALSE, FALSE, sizeof(uint64_t))};
    sv_engine *eng = sv_engine_new(1);
    struct sv_dag_exec_cfg cfg = {.default_handler = log_and_replay, .handler_ctx = &log};
    sv_dag_exec *ex = sv_dag_exec_new(dag, eng, &cfg, NULL);
    run_ok(ex);
    CU_ASSERT_EQUAL_FATAL(log.ids->len, 3);
    SV_ASSERT_EQ_I64(g_array_index(log.ids, uint64_t, 0), 10);
    SV_ASSERT_EQ_I64(g_array_index(log.ids, uint64_t, 1), 20);
    SV_ASSERT_EQ_I64(g_array_index(log.ids, uint64_t, 2), 30);
    SV_ASSERT_EQ_I64(start_of(dag, n10), 0);
    SV_ASSERT_EQ_I64(start_of(dag, n20), 1 * US);
    SV_ASSERT_EQ_I64(start_of(dag, n30), 2 * US);
    SV_ASSERT_EQ_I64(sv_dag_exec_finish_ns(ex), 3 * US);
    sv_dag_exec_free(ex);
    sv_engine_free(eng);
    g_array_unref(log.ids);
}

/* ---- ASTRA-sim policy --------------------------------------------------------------------- */

/* Finish time of a DAG of independent nodes under a policy. */
static sv_time run_independent(const sv_dag_kind *kinds, const gboolean *cpu, const int32_t *dev,
                               const sv_time *dur, int n, sv_dag_policy_kind pol)
{
    g_autoptr(sv_dag) dag = sv_dag_new();
    for (int i = 0; i < n; i++) {
        sv_dag_node *x = add(dag, (uint64_t)i, kinds[i], dev ? dev[i] : 0, dur[i]);
        if (cpu && cpu[i]) {
            x->p.is_cpu_op = TRUE;
            x->p.has |= SV_DAG_HAS_IS_CPU_OP;
        }
    }
    sv_engine *eng = sv_engine_new(1);
    struct sv_dag_exec_cfg cfg = {.policy = pol};
    sv_dag_exec *ex = sv_dag_exec_new(dag, eng, &cfg, NULL);
    run_ok(ex);
    sv_time t = sv_dag_exec_finish_ns(ex);
    sv_dag_exec_free(ex);
    sv_engine_free(eng);
    return t;
}

static void test_astra_policy(void)
{
    const sv_time d5[] = {5 * US, 5 * US};
    const sv_dag_kind comp2[] = {SV_DAG_KIND_COMP, SV_DAG_KIND_COMP};
    /* CHAKRA_ET.md 1.5 (measured on ASTRA-sim): two independent 5 us compute nodes take 10 us. */
    SV_ASSERT_EQ_I64(run_independent(comp2, NULL, NULL, d5, 2, SV_DAG_POLICY_ASTRA), 10 * US);
    SV_ASSERT_EQ_I64(run_independent(comp2, NULL, NULL, d5, 2, SV_DAG_POLICY_UNLIMITED), 5 * US);
    /* On two devices they overlap. */
    const int32_t devs[] = {0, 1};
    SV_ASSERT_EQ_I64(run_independent(comp2, NULL, devs, d5, 2, SV_DAG_POLICY_ASTRA), 5 * US);
    /* One CPU op and one GPU op share a device in parallel. */
    const gboolean cpu1[] = {TRUE, FALSE};
    SV_ASSERT_EQ_I64(run_independent(comp2, cpu1, NULL, d5, 2, SV_DAG_POLICY_ASTRA), 5 * US);
    /* Two collectives serialize on the comm slot: 3 + 3 us. */
    const sv_time d3[] = {3 * US, 3 * US, 3 * US};
    const sv_dag_kind coll2[] = {SV_DAG_KIND_COMM_COLL, SV_DAG_KIND_COMM_COLL};
    SV_ASSERT_EQ_I64(run_independent(coll2, NULL, NULL, d3, 2, SV_DAG_POLICY_ASTRA), 6 * US);
    /* MEM_LOAD, METADATA-free: mem op and send share the comm slot too. */
    const sv_dag_kind memsend[] = {SV_DAG_KIND_MEM_LOAD, SV_DAG_KIND_COMM_SEND,
                                   SV_DAG_KIND_MEM_STORE};
    SV_ASSERT_EQ_I64(run_independent(memsend, NULL, NULL, d3, 3, SV_DAG_POLICY_ASTRA), 9 * US);
    /* Compute and comm overlap: max(5, 3). */
    const sv_dag_kind mix[] = {SV_DAG_KIND_COMP, SV_DAG_KIND_COMM_COLL};
    const sv_time d53[] = {5 * US, 3 * US};
    SV_ASSERT_EQ_I64(run_independent(mix, NULL, NULL, d53, 2, SV_DAG_POLICY_ASTRA), 5 * US);
    /* PIM has its own slot beside the GPU: PIM + COMP overlap, two PIM ops serialize. */
    const sv_dag_kind pimc[] = {SV_DAG_KIND_PIM, SV_DAG_KIND_COMP};
    SV_ASSERT_EQ_I64(run_independent(pimc, NULL, NULL, d5, 2, SV_DAG_POLICY_ASTRA), 5 * US);
    const sv_dag_kind pim2[] = {SV_DAG_KIND_PIM, SV_DAG_KIND_PIM};
    SV_ASSERT_EQ_I64(run_independent(pim2, NULL, NULL, d5, 2, SV_DAG_POLICY_ASTRA), 10 * US);
}

/* A receive posted first (id 1) that completes only at 100 us must not hold the comm slot: the
 * collective (id 2, 3 us) finishes at 3 us. A send in the same position would delay it. */
static void recv_late(sv_engine *eng, void *ctx, uint64_t arg)
{
    sv_dag_exec *ex = ctx;
    sv_dag_exec_node_done(ex, sv_dag_node_find(sv_dag_exec_dag(ex), arg));
}

static void recv_handler(sv_dag_exec *ex, sv_dag_node *n, void *ctx)
{
    sv_engine_schedule_in(sv_dag_exec_engine(ex), 100 * US, 0, recv_late, ex, n->id);
}

static sv_time recv_case(sv_dag_kind first_kind)
{
    g_autoptr(sv_dag) dag = sv_dag_new();
    add(dag, 1, first_kind, 0, 0);
    sv_dag_node *coll = add(dag, 2, SV_DAG_KIND_COMM_COLL, 0, 3 * US);
    sv_engine *eng = sv_engine_new(1);
    struct sv_dag_exec_cfg cfg = {0};
    cfg.handlers[first_kind] = recv_handler;
    sv_dag_exec *ex = sv_dag_exec_new(dag, eng, &cfg, NULL);
    run_ok(ex);
    sv_time t = end_of(dag, coll);
    SV_ASSERT_EQ_I64(sv_dag_exec_finish_ns(ex),
                     100 * US + (first_kind == SV_DAG_KIND_COMM_SEND ? 3 * US : 0));
    sv_dag_exec_free(ex);
    sv_engine_free(eng);
    return t;
}

static void test_recv_bypasses_comm_slot(void)
{
    SV_ASSERT_EQ_I64(recv_case(SV_DAG_KIND_COMM_RECV), 3 * US);
    SV_ASSERT_EQ_I64(recv_case(SV_DAG_KIND_COMM_SEND), 103 * US);
}

/* Custom policy: at most one node in flight overall. */
struct one_state {
    int busy;
};
static void *one_new(void *ctx)
{
    return g_new0(struct one_state, 1);
}
static gboolean one_avail(void *s, const sv_dag_node *n)
{
    return ((struct one_state *)s)->busy == 0;
}
static void one_occupy(void *s, const sv_dag_node *n)
{
    ((struct one_state *)s)->busy++;
}
static void one_release(void *s, const sv_dag_node *n)
{
    ((struct one_state *)s)->busy--;
}

static void test_custom_policy(void)
{
    g_autoptr(sv_dag) dag = sv_dag_new();
    /* Three independent nodes on three devices, 2 us each: serialized = 6 us. */
    for (int i = 0; i < 3; i++)
        add(dag, (uint64_t)i, SV_DAG_KIND_COMP, i, 2 * US);
    struct sv_dag_policy pol = {.name = "one",
                                .state_new = one_new,
                                .state_free = g_free,
                                .available = one_avail,
                                .occupy = one_occupy,
                                .release = one_release};
    sv_engine *eng = sv_engine_new(1);
    struct sv_dag_exec_cfg cfg = {.policy = SV_DAG_POLICY_CUSTOM, .custom_policy = &pol};
    sv_dag_exec *ex = sv_dag_exec_new(dag, eng, &cfg, NULL);
    run_ok(ex);
    SV_ASSERT_EQ_I64(sv_dag_exec_finish_ns(ex), 6 * US);
    sv_dag_exec_free(ex);
    sv_engine_free(eng);
}

/* ---- dynamic edits while running ---------------------------------------------------------- */

struct dyn {
    sv_dag *dag;
    sv_dag_node *prefill, *decode;
    int splices;
    int all_done;
    uint64_t late_id;
};

/* When the prefill finishes, splice a 2 us KV transfer (MEM_STORE) and a 1 us COMP between it
 * and the decode; also hang a new node off the finished prefill (an edge from a finished parent
 * is satisfied at once). */
static void on_done_splice(sv_dag_exec *ex, sv_dag_node *n, void *ctx)
{
    struct dyn *d = ctx;
    if (n != d->prefill)
        return;
    GError *err = NULL;
    sv_dag_node *kv = add(d->dag, 100, SV_DAG_KIND_MEM_STORE, 1, 2 * US);
    sv_dag_node *fix = add(d->dag, 101, SV_DAG_KIND_COMP, 1, 1 * US);
    edge(d->dag, kv, fix, SV_DAG_EDGE_DATA);
    CU_ASSERT_TRUE(sv_dag_splice(d->dag, n, kv, fix, &err));
    d->splices++;
    sv_dag_node *late = add(d->dag, 200, SV_DAG_KIND_COMP, 2, 4 * US);
    edge(d->dag, n, late, SV_DAG_EDGE_DATA);
    d->late_id = late->id;
    /* The prefill is done: it cannot gain a parent. */
    CU_ASSERT_FALSE(sv_dag_edge_add(d->dag, late, n, SV_DAG_EDGE_DATA, &err));
    CU_ASSERT_TRUE(g_error_matches(err, SV_DAG_ERROR, SV_DAG_ERROR_STATE));
    g_clear_error(&err);
}

static void on_all(sv_dag_exec *ex, void *ctx)
{
    ((struct dyn *)ctx)->all_done++;
}

static void test_dynamic_splice_running(void)
{
    g_autoptr(sv_dag) dag = sv_dag_new();
    struct dyn d = {.dag = dag};
    d.prefill = add(dag, 1, SV_DAG_KIND_COMP, 0, 10 * US);
    d.decode = add(dag, 2, SV_DAG_KIND_COMP, 1, 3 * US);
    edge(dag, d.prefill, d.decode, SV_DAG_EDGE_DATA);
    sv_engine *eng = sv_engine_new(1);
    struct sv_dag_exec_cfg cfg = {
        .on_node_done = on_done_splice, .on_all_done = on_all, .cb_ctx = &d};
    sv_dag_exec *ex = sv_dag_exec_new(dag, eng, &cfg, NULL);
    run_ok(ex);
    CU_ASSERT_EQUAL(d.splices, 1);
    CU_ASSERT_EQUAL(d.all_done, 1);
    /* prefill 0-10, kv 10-12, fix 12-13, decode 13-16 us; late node 10-14 on device 2. */
    sv_dag_node *kv = sv_dag_node_find(dag, 100), *fix = sv_dag_node_find(dag, 101);
    SV_ASSERT_EQ_I64(start_of(dag, kv), 10 * US);
    SV_ASSERT_EQ_I64(end_of(dag, fix), 13 * US);
    SV_ASSERT_EQ_I64(start_of(dag, d.decode), 13 * US);
    SV_ASSERT_EQ_I64(end_of(dag, d.decode), 16 * US);
    SV_ASSERT_EQ_I64(end_of(dag, sv_dag_node_find(dag, d.late_id)), 14 * US);
    SV_ASSERT_EQ_I64(sv_dag_exec_n_done(ex), 5);
    g_autoptr(GArray) par = g_array_new(FALSE, FALSE, sizeof(sv_dag_link));
    CU_ASSERT_EQUAL(sv_dag_node_parents(dag, d.decode, par), 1);
    CU_ASSERT_PTR_EQUAL(g_array_index(par, sv_dag_link, 0).node, fix);

    /* After the run: add a node without parents; a kick issues it and all_done fires again. */
    sv_dag_node *extra = add(dag, 300, SV_DAG_KIND_COMP, 0, 2 * US);
    CU_ASSERT_EQUAL(sv_dag_node_get_state(dag, extra), SV_DAG_NODE_READY);
    run_ok(ex);
    CU_ASSERT_EQUAL(d.all_done, 2);
    SV_ASSERT_EQ_I64(start_of(dag, extra), 16 * US);
    sv_dag_exec_free(ex);
    sv_engine_free(eng);
}

/* pop_edges during a run: detach the children of a running node and re-attach them to a new
 * node added from an engine event; an edge into an issued node is refused. */
struct popctx {
    sv_dag_exec *ex;
    sv_dag_node *a, *b, *c;
    guint popped;
};

static void pop_event(sv_engine *eng, void *ctx, uint64_t arg)
{
    struct popctx *p = ctx;
    sv_dag *dag = sv_dag_exec_dag(p->ex);
    CU_ASSERT_EQUAL(sv_dag_node_get_state(dag, p->a), SV_DAG_NODE_ISSUED);
    GError *err = NULL;
    CU_ASSERT_FALSE(sv_dag_edge_add(dag, p->c, p->a, SV_DAG_EDGE_DATA, &err));
    g_clear_error(&err);
    g_autoptr(GArray) kids = sv_dag_pop_edges(dag, p->a);
    p->popped = kids->len;
    /* b and c lost their only parent: they would start now; gate them behind x (4 us). */
    sv_dag_node *x = add(dag, 50, SV_DAG_KIND_COMP, 3, 4 * US);
    for (guint i = 0; i < kids->len; i++)
        edge(dag, x, g_array_index(kids, sv_dag_link, i).node,
             g_array_index(kids, sv_dag_link, i).kind);
}

static void test_dynamic_pop_running(void)
{
    g_autoptr(sv_dag) dag = sv_dag_new();
    struct popctx p = {0};
    p.a = add(dag, 1, SV_DAG_KIND_COMP, 0, 10 * US);
    p.b = add(dag, 2, SV_DAG_KIND_COMP, 1, 1 * US);
    p.c = add(dag, 3, SV_DAG_KIND_COMP, 2, 1 * US);
    edge(dag, p.a, p.b, SV_DAG_EDGE_DATA);
    edge(dag, p.a, p.c, SV_DAG_EDGE_CTRL);
    sv_engine *eng = sv_engine_new(1);
    p.ex = sv_dag_exec_new(dag, eng, NULL, NULL);
    sv_engine_schedule(eng, 2 * US, 0, pop_event, &p, 0);
    run_ok(p.ex);
    CU_ASSERT_EQUAL(p.popped, 2);
    /* x starts at 2 us (kick), ends 6 us; b and c run 6-7 us, before a ends at 10 us. */
    SV_ASSERT_EQ_I64(start_of(dag, sv_dag_node_find(dag, 50)), 2 * US);
    SV_ASSERT_EQ_I64(start_of(dag, p.b), 6 * US);
    SV_ASSERT_EQ_I64(end_of(dag, p.c), 7 * US);
    SV_ASSERT_EQ_I64(sv_dag_exec_finish_ns(p.ex), 10 * US);
    sv_dag_exec_free(p.ex);
    sv_engine_free(eng);
}

/* ---- stall diagnosis ---------------------------------------------------------------------- */

static void never(sv_dag_exec *ex, sv_dag_node *n, void *ctx)
{
}

static void describe_recv(sv_dag_exec *ex, const sv_dag_node *n, GString *out, void *ctx)
{
    g_string_append(out, "no matching send");
}

static void test_diagnosis(void)
{
    g_autoptr(sv_dag) dag = sv_dag_new();
    /* Cycle 2 -> 3 -> 2 behind root 1; 4 waits on the cycle. Only node 1 can finish: 7 of the
     * 8 nodes stay unfinished. */
    sv_dag_node *n1 = add(dag, 1, SV_DAG_KIND_COMP, 0, 1 * US);
    sv_dag_node *n2 = add(dag, 2, SV_DAG_KIND_COMP, 0, 1 * US);
    sv_dag_node *n3 = add(dag, 3, SV_DAG_KIND_COMP, 0, 1 * US);
    sv_dag_node *n4 = add(dag, 4, SV_DAG_KIND_COMP, 0, 1 * US);
    edge(dag, n1, n2, SV_DAG_EDGE_DATA);
    edge(dag, n2, n3, SV_DAG_EDGE_DATA);
    edge(dag, n3, n2, SV_DAG_EDGE_CTRL);
    edge(dag, n3, n4, SV_DAG_EDGE_DATA);
    /* A receive whose handler never completes, and its consumer. */
    sv_dag_node *r5 = add(dag, 5, SV_DAG_KIND_COMM_RECV, 1, 0);
    sv_dag_node *c6 = add(dag, 6, SV_DAG_KIND_COMP, 1, 1 * US);
    edge(dag, r5, c6, SV_DAG_EDGE_DATA);
    /* A collective that never completes and a second one blocked behind it. */
    add(dag, 7, SV_DAG_KIND_COMM_COLL, 2, 0);
    add(dag, 8, SV_DAG_KIND_COMM_COLL, 2, 0);

    sv_engine *eng = sv_engine_new(1);
    struct sv_dag_exec_cfg cfg = {.describe_issued = describe_recv};
    cfg.handlers[SV_DAG_KIND_COMM_RECV] = never;
    cfg.handlers[SV_DAG_KIND_COMM_COLL] = never;
    sv_dag_exec *ex = sv_dag_exec_new(dag, eng, &cfg, NULL);
    GError *err = NULL;
    CU_ASSERT_FALSE(sv_dag_exec_run(ex, &err));
    CU_ASSERT_TRUE_FATAL(g_error_matches(err, SV_DAG_ERROR, SV_DAG_ERROR_STALL));
    const char *m = err->message;
    CU_ASSERT_PTR_NOT_NULL(strstr(m, "7 of 8 nodes unfinished"));
    CU_ASSERT_TRUE(strstr(m, "cycle: 3 -> 2 -> 3") || strstr(m, "cycle: 2 -> 3 -> 2"));
    CU_ASSERT_PTR_NOT_NULL(strstr(m, "issued: device 1 node 5 \"n5\" (COMM_RECV) started at 0 "
                                     "ns and never completed: no matching send"));
    CU_ASSERT_PTR_NOT_NULL(strstr(m, "waiting: device 1 node 6 \"n6\" (COMP) waits for 1 "
                                     "unfinished parent: 5 (issued, device 1)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(m, "blocked: device 2 node 8 \"n8\" (COMM_COLL) ready but its "
                                     "resource is busy: comm slot on device 2 held by node 7"));
    CU_ASSERT_PTR_NOT_NULL(strstr(m, "waiting: device 0 node 4 \"n4\" (COMP) waits for 1 "
                                     "unfinished parent: 3 (waiting, device 0)"));
    /* Node 1 finished: not listed. */
    CU_ASSERT_PTR_NULL(strstr(m, "node 1 \""));
    g_clear_error(&err);
    CU_ASSERT_FALSE(sv_dag_check_acyclic(dag, NULL));
    sv_dag_exec_free(ex);
    sv_engine_free(eng);
}

/* ---- Chakra ET ---------------------------------------------------------------------------- */

static gboolean files_equal(const char *a, const char *b)
{
    g_autofree char *x = NULL, *y = NULL;
    gsize nx = 0, ny = 0;
    if (!g_file_get_contents(a, &x, &nx, NULL) || !g_file_get_contents(b, &y, &ny, NULL))
        return FALSE;
    return nx == ny && memcmp(x, y, nx) == 0;
}

/* Load -> save must give back the same bytes (protobuf-c repacks Chakra's bytes exactly,
 * ../shared/interop/chakra/README.md), so every node, dep and attribute survives. */
static int roundtrip_dir(const char *dir, const char *tmp, const struct sv_dag_et_opts *opts,
                         int *bad)
{
    int n = 0;
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    if (!d)
        return 0;
    const char *name;
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    while ((name = g_dir_read_name(d)))
        g_ptr_array_add(names, g_strdup(name));
    for (guint i = 0; i < names->len; i++) {
        name = g_ptr_array_index(names, i);
        g_autofree char *path = g_build_filename(dir, name, NULL);
        if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
            n += roundtrip_dir(path, tmp, opts, bad);
            continue;
        }
        /* A gzip input is saved uncompressed: compared by content in test_et_semantics. */
        if (!g_str_has_suffix(name, ".et") || strstr(path, "/gzip/"))
            continue;
        GError *err = NULL;
        g_autoptr(sv_dag) dag = sv_dag_load_et(path, opts, &err);
        g_autofree char *out = g_build_filename(tmp, "rt.et", NULL);
        if (!dag || !sv_dag_save_et(dag, out, &err) || !files_equal(path, out)) {
            fprintf(stderr, "round trip differs: %s %s\n", path, err ? err->message : "");
            (*bad)++;
        }
        g_clear_error(&err);
        n++;
    }
    return n;
}

static void test_et_roundtrip_bytes(void)
{
    SV_REQUIRE_SHARED("interop/chakra", "the Chakra/ASTRA-sim ET vectors");
    g_autofree char *tmp = sv_test_tmpdir();
    int bad = 0;
    struct sv_dag_et_opts keep = {.ignore_dangling_ctrl = TRUE, .ignore_dangling_data = TRUE};
    int n1 = roundtrip_dir(SV_SHARED "/interop/chakra/vectors", tmp, &keep, &bad);
    int n2 = roundtrip_dir(SV_SHARED "/interop/chakra/chakra_generator", tmp, NULL, &bad);
    int n3 = roundtrip_dir(SV_SHARED "/interop/astra-sim/microbenchmarks", tmp, NULL, &bad);
    /* File counts from the directory listings: 28 generator files, 112 microbenchmark files;
     * vectors: 2+4+4+2+2+4+1+1 = 20 (plus the gzip one, skipped). */
    CU_ASSERT_EQUAL(n1, 20);
    CU_ASSERT_EQUAL(n2, 28);
    CU_ASSERT_EQUAL(n3, 112);
    CU_ASSERT_EQUAL(bad, 0);
    sv_test_rmtree(tmp);
}

/* Node/dep/attr counts from the decoded .json (an independent decoder: Python protobuf). */
static void json_counts(const char *path, size_t *nodes, size_t *data, size_t *ctrl, size_t *attrs)
{
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_TRUE_FATAL(json_parser_load_from_file(p, path, NULL));
    JsonArray *arr =
        json_object_get_array_member(json_node_get_object(json_parser_get_root(p)), "nodes");
    *nodes = json_array_get_length(arr);
    *data = *ctrl = *attrs = 0;
    for (guint i = 0; i < *nodes; i++) {
        JsonObject *o = json_array_get_object_element(arr, i);
        if (json_object_has_member(o, "data_deps"))
            *data += json_array_get_length(json_object_get_array_member(o, "data_deps"));
        if (json_object_has_member(o, "ctrl_deps"))
            *ctrl += json_array_get_length(json_object_get_array_member(o, "ctrl_deps"));
        if (json_object_has_member(o, "attr"))
            *attrs += json_array_get_length(json_object_get_array_member(o, "attr"));
    }
}

static void test_et_counts(void)
{
    SV_REQUIRE_SHARED("interop/chakra/vectors", "the Chakra ET vectors and their JSON");
    static const char *const files[] = {
        "vectors/compute_chain/compute_chain.0",
        "vectors/dp_overlap/dp_overlap.0",
        "vectors/p2p/p2p.1",
        "vectors/remote_mem/remote_mem.0",
        "chakra_generator/two_comp_nodes_dependent.0",
        "chakra_generator/ALL_REDUCE.0",
    };
    for (size_t f = 0; f < G_N_ELEMENTS(files); f++) {
        g_autofree char *et = g_strdup_printf(SV_SHARED "/interop/chakra/%s.et", files[f]);
        g_autofree char *js = g_strdup_printf(SV_SHARED "/interop/chakra/%s.json", files[f]);
        size_t nodes, data, ctrl, attrs;
        json_counts(js, &nodes, &data, &ctrl, &attrs);
        GError *err = NULL;
        g_autoptr(sv_dag) dag = sv_dag_load_et(et, NULL, &err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(dag);
        CU_ASSERT_EQUAL(sv_dag_node_count(dag), nodes);
        CU_ASSERT_EQUAL(sv_dag_edge_count_kind(dag, SV_DAG_EDGE_DATA), data);
        CU_ASSERT_EQUAL(sv_dag_edge_count_kind(dag, SV_DAG_EDGE_CTRL), ctrl);
        size_t a = 0;
        for (size_t i = 0; i < sv_dag_node_count(dag); i++) {
            g_autoptr(ChakraProtoMsg__Node) x = sv_dag_node_to_et(dag, sv_dag_node_at(dag, i));
            a += x->n_attr;
        }
        CU_ASSERT_EQUAL(a, attrs);
    }
}

static void test_et_semantics(void)
{
    SV_REQUIRE_SHARED("interop/chakra/vectors", "the Chakra ET vectors");
    GError *err = NULL;
    g_autoptr(sv_dag) dag =
        sv_dag_load_et(SV_SHARED "/interop/chakra/vectors/compute_chain/compute_chain.0.et",
                       &(struct sv_dag_et_opts){.device = 3}, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dag);
    /* README: 0 fwd COMP dur 10, num_ops 1e6, tensor_size 4096; 1 bwd dur 20 dd[0]; 2 opt dur 5
     * ctrl_deps[1]. */
    sv_dag_node *fwd = sv_dag_node_find(dag, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fwd);
    CU_ASSERT_STRING_EQUAL(fwd->name, "fwd");
    CU_ASSERT_EQUAL(fwd->kind, SV_DAG_KIND_COMP);
    CU_ASSERT_EQUAL(fwd->device, 3);
    SV_ASSERT_EQ_I64(fwd->duration_ns, 10 * US);
    SV_ASSERT_EQ_I64(fwd->p.num_ops, 1000000);
    SV_ASSERT_EQ_I64(fwd->p.tensor_size_bytes, 4096);
    CU_ASSERT_TRUE(fwd->p.has & SV_DAG_HAS_IS_CPU_OP);
    CU_ASSERT_FALSE(fwd->p.is_cpu_op);
    sv_dag_node *opt = sv_dag_node_find(dag, 2);
    g_autoptr(GArray) par = g_array_new(FALSE, FALSE, sizeof(sv_dag_link));
    CU_ASSERT_EQUAL(sv_dag_node_parents(dag, opt, par), 1);
    CU_ASSERT_EQUAL(g_array_index(par, sv_dag_link, 0).kind, SV_DAG_EDGE_CTRL);
    /* ASTRA replay: 10 + 20 + 5 us in a chain. */
    sv_engine *eng = sv_engine_new(1);
    sv_dag_exec *ex = sv_dag_exec_new(dag, eng, NULL, NULL);
    run_ok(ex);
    SV_ASSERT_EQ_I64(sv_dag_exec_finish_ns(ex), 35 * US);
    sv_dag_exec_free(ex);
    sv_engine_free(eng);

    /* p2p.0: send_to_1 comm_src 0, comm_dst 1, comm_size 1048576, comm_tag 7. */
    g_autoptr(sv_dag) p2p =
        sv_dag_load_et(SV_SHARED "/interop/chakra/vectors/p2p/p2p.0.et", NULL, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p2p);
    sv_dag_node *snd = sv_dag_node_find(p2p, 1);
    CU_ASSERT_EQUAL(snd->kind, SV_DAG_KIND_COMM_SEND);
    CU_ASSERT_EQUAL(snd->p.comm_src, 0);
    CU_ASSERT_EQUAL(snd->p.comm_dst, 1);
    CU_ASSERT_EQUAL(snd->p.comm_tag, 7);
    SV_ASSERT_EQ_I64(snd->p.comm_size_bytes, 1048576);
    /* Edit a parameter: the attribute keeps its place and kind (int64_val) with the new value. */
    snd->p.comm_size_bytes = 2048;
    snd->p.comm_priority = 3;
    snd->p.has |= SV_DAG_HAS_COMM_PRIORITY;
    g_autoptr(ChakraProtoMsg__Node) x = sv_dag_node_to_et(p2p, snd);
    const ChakraProtoMsg__AttributeProto *cs = sv_proto_attr_find(x, "comm_size");
    CU_ASSERT_PTR_NOT_NULL_FATAL(cs);
    CU_ASSERT_EQUAL(cs->value_case, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL);
    SV_ASSERT_EQ_I64(cs->int64_val, 2048);
    const ChakraProtoMsg__AttributeProto *pr = sv_proto_attr_find(x, "comm_priority");
    CU_ASSERT_PTR_NOT_NULL_FATAL(pr);
    CU_ASSERT_EQUAL(pr->value_case, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL);
    CU_ASSERT_EQUAL(pr->int32_val, 3);
    CU_ASSERT_EQUAL(x->n_data_deps, 1);
    CU_ASSERT_EQUAL(x->data_deps[0], 0);

    /* gzip input. */
    g_autoptr(sv_dag) gz =
        sv_dag_load_et(SV_SHARED "/interop/chakra/vectors/gzip/compute_chain_gz.0.et", NULL, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(gz);
    CU_ASSERT_EQUAL(sv_dag_node_count(gz), 3);
}

static void test_et_dangling(void)
{
    SV_REQUIRE_SHARED("interop/chakra/vectors/all_fields", "the Chakra all_fields vector");
    GError *err = NULL;
    const char *af = SV_SHARED "/interop/chakra/vectors/all_fields/all_fields.0.et";
    CU_ASSERT_PTR_NULL(sv_dag_load_et(af, NULL, &err));
    CU_ASSERT_TRUE(g_error_matches(err, SV_DAG_ERROR, SV_DAG_ERROR_NOT_FOUND));
    /* README: the node has id 2^64-1; its first data dep is 5 (absent). */
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, "node 18446744073709551615"));
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, "absent node 5"));
    g_clear_error(&err);

    /* The PyTorch trace: 1,277 of its 3,664 ctrl deps point at absent ids (README). */
    const char *rt = SV_SHARED "/interop/chakra/real_trace/pytorch_resnet_like.0.et.gz";
    CU_ASSERT_PTR_NULL(sv_dag_load_et(rt, NULL, &err));
    CU_ASSERT_TRUE(g_error_matches(err, SV_DAG_ERROR, SV_DAG_ERROR_NOT_FOUND));
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, "ctrl dependency on absent node"));
    g_clear_error(&err);
    struct sv_dag_et_opts o = {.ignore_dangling_ctrl = TRUE};
    g_autoptr(sv_dag) dag = sv_dag_load_et(rt, &o, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dag);
    CU_ASSERT_EQUAL(sv_dag_node_count(dag), 3664);
    CU_ASSERT_EQUAL(sv_dag_edge_count_kind(dag, SV_DAG_EDGE_DATA), 181878);
    CU_ASSERT_EQUAL(sv_dag_edge_count_kind(dag, SV_DAG_EDGE_CTRL), 3664 - 1277);
    /* Its ctrl deps form cycles (checked with an independent decoder: node 3317 has ctrl_deps
     * [3318] while 3318 has 3317 in data_deps; 3322 has ctrl_deps [3322]), so under ASTRA-sim's
     * rule (both kinds) the replay stalls with a cycle in the diagnosis... */
    CU_ASSERT_FALSE(sv_dag_check_acyclic(dag, NULL));
    sv_engine *eng = sv_engine_new(1);
    sv_dag_exec *ex = sv_dag_exec_new(dag, eng, NULL, NULL);
    CU_ASSERT_FALSE(sv_dag_exec_run(ex, &err));
    CU_ASSERT_TRUE(g_error_matches(err, SV_DAG_ERROR, SV_DAG_ERROR_STALL));
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, "\n  cycle: "));
    g_clear_error(&err);
    sv_dag_exec_free(ex);
    sv_engine_free(eng);
    /* ...while with data deps only (Chakra feeder v1) every node runs. */
    g_autoptr(sv_dag) dag2 = sv_dag_load_et(rt, &o, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dag2);
    eng = sv_engine_new(1);
    struct sv_dag_exec_cfg cfg = {.ignore_ctrl_deps = TRUE};
    ex = sv_dag_exec_new(dag2, eng, &cfg, NULL);
    run_ok(ex);
    CU_ASSERT_EQUAL(sv_dag_exec_n_done(ex), 3664);
    sv_dag_exec_free(ex);
    sv_engine_free(eng);
}

/* servesim kinds export as the closest Chakra type plus sv_kind, and read back as themselves. */
static void test_et_servesim_kinds(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *path = g_build_filename(tmp, "own.0.et", NULL);
    g_autofree char *path1 = g_build_filename(tmp, "own.1.et", NULL);
    {
        g_autoptr(sv_dag) dag = sv_dag_new();
        sv_dag_node *pim = add(dag, 5, SV_DAG_KIND_PIM, 0, 1500);
        sv_dag_node *lg = add(dag, 6, SV_DAG_KIND_LOGICAL, 0, 0);
        sv_dag_node *ar = add(dag, 7, SV_DAG_KIND_COMM_COLL, 0, 0);
        sv_dag_node *other = add(dag, 8, SV_DAG_KIND_COMP, 1, 2 * US);
        ar->p.has = SV_DAG_HAS_COMM_TYPE | SV_DAG_HAS_COMM_SIZE | SV_DAG_HAS_INVOLVED_DIMS;
        ar->p.comm_type = SV_DAG_COLL_ALL_GATHER;
        ar->p.comm_size_bytes = 65536;
        ar->p.involved_dims = 0x5;
        ar->p.n_involved_dims = 3;
        sv_dag_node_set_pg_name(dag, ar, "2");
        edge(dag, pim, lg, SV_DAG_EDGE_DATA);
        edge(dag, lg, ar, SV_DAG_EDGE_CTRL);
        edge(dag, other, ar, SV_DAG_EDGE_DATA);
        GError *err = NULL;
        CU_ASSERT_TRUE(sv_dag_save_et_device(dag, 0, path, &err));
        CU_ASSERT_TRUE(sv_dag_save_et_device(dag, 1, path1, &err));
    }
    /* Read with the proto reader: what Chakra tools would see. */
    GError *err = NULL;
    g_autoptr(sv_proto_reader) rd = sv_proto_reader_open(path, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rd);
    ChakraProtoMsg__Node *n = NULL;
    CU_ASSERT_TRUE_FATAL(sv_proto_reader_next(rd, &n, &err));
    CU_ASSERT_EQUAL(n->type, CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE);
    const char *s = NULL;
    CU_ASSERT_TRUE(sv_proto_attr_string(sv_proto_attr_find(n, "sv_kind"), &s) && !strcmp(s, "pim"));
    CU_ASSERT_EQUAL(n->duration_micros, 1); /* 1500 ns truncated; exact value in sv_duration_ns */
    sv_proto_node_free(n);
    CU_ASSERT_TRUE_FATAL(sv_proto_reader_next(rd, &n, &err));
    CU_ASSERT_EQUAL(n->type, CHAKRA_PROTO_MSG__NODE_TYPE__METADATA_NODE);
    sv_proto_node_free(n);
    CU_ASSERT_TRUE_FATAL(sv_proto_reader_next(rd, &n, &err));
    /* The cross-device edge 8 -> 7 is left out of device 0's file. */
    CU_ASSERT_EQUAL(n->n_data_deps, 0);
    CU_ASSERT_EQUAL(n->n_ctrl_deps, 1);
    int64_t v = -1;
    CU_ASSERT_TRUE(sv_proto_attr_int(sv_proto_attr_find(n, "comm_type"), &v) && v == 2);
    sv_proto_node_free(n);
    CU_ASSERT_FALSE(sv_proto_reader_next(rd, &n, &err));
    CU_ASSERT_PTR_NULL(err);

    /* Read as ASTRA-sim reads it by default (whole microseconds), exactly on request. */
    const struct sv_dag_et_opts precise = {.precise_durations = TRUE};
    g_autoptr(sv_dag) exact = sv_dag_load_et(path, &precise, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(exact);
    SV_ASSERT_EQ_I64(sv_dag_node_find(exact, 5)->duration_ns, 1500);
    g_autoptr(sv_dag) back = sv_dag_load_et(path, NULL, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    CU_ASSERT_EQUAL(sv_dag_node_count(back), 3);
    CU_ASSERT_EQUAL(sv_dag_node_find(back, 5)->kind, SV_DAG_KIND_PIM);
    SV_ASSERT_EQ_I64(sv_dag_node_find(back, 5)->duration_ns, 1000);
    CU_ASSERT_EQUAL(sv_dag_node_find(back, 6)->kind, SV_DAG_KIND_LOGICAL);
    sv_dag_node *ar = sv_dag_node_find(back, 7);
    CU_ASSERT_EQUAL(ar->p.comm_type, SV_DAG_COLL_ALL_GATHER);
    SV_ASSERT_EQ_I64(ar->p.comm_size_bytes, 65536);
    CU_ASSERT_EQUAL(ar->p.n_involved_dims, 3);
    CU_ASSERT_EQUAL(ar->p.involved_dims, 0x5);
    CU_ASSERT_STRING_EQUAL(ar->p.pg_name, "2");
    /* Saving the reloaded graph gives the same bytes, whichever way it was read. */
    g_autofree char *again = g_build_filename(tmp, "again.et", NULL);
    CU_ASSERT_TRUE(sv_dag_save_et(back, again, &err));
    CU_ASSERT_TRUE(files_equal(path, again));
    CU_ASSERT_TRUE(sv_dag_save_et(exact, again, &err));
    CU_ASSERT_TRUE(files_equal(path, again));
    sv_test_rmtree(tmp);
}

/* The sv_duration_ns attributes of a Chakra node, in order (up to 4). */
static int dur_attrs(const ChakraProtoMsg__Node *n, int64_t *vals)
{
    int k = 0;
    for (size_t i = 0; i < n->n_attr && k < 4; i++)
        if (strcmp(n->attr[i]->name, "sv_duration_ns") == 0)
            CU_ASSERT_TRUE(sv_proto_attr_int(n->attr[i], &vals[k++]));
    return k;
}

/* Durations: duration_micros x 1000 by default (what ASTRA-sim and Chakra read), servesim's
 * sv_duration_ns with precise_durations where it agrees with duration_micros. A hand-written
 * file: node 1 lasts 1 us with sv_duration_ns 1500 (agrees: 1500 / 1000 = 1), node 2 2 us with
 * 3500 (does not agree: 3 != 2, ignored), node 3 3 us with none. */
static void test_et_durations(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *path = g_build_filename(tmp, "dur.0.et", NULL);
    {
        GError *err = NULL;
        sv_proto_writer *w = sv_proto_writer_open(path, &err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(w);
        g_autoptr(ChakraProtoMsg__GlobalMetadata) md = sv_proto_metadata_new("0.0.4");
        CU_ASSERT_TRUE(sv_proto_writer_put_metadata(w, md, &err));
        const uint64_t micros[] = {1, 2, 3};
        const int64_t ns[] = {1500, 3500, -1};
        for (int i = 0; i < 3; i++) {
            g_autoptr(ChakraProtoMsg__Node) n =
                sv_proto_node_new((uint64_t)i + 1, "c", CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE);
            n->duration_micros = micros[i];
            sv_proto_node_add_attr(n, sv_proto_attr_new_bool("is_cpu_op", FALSE));
            if (ns[i] >= 0)
                sv_proto_node_add_attr(n, sv_proto_attr_new_int64("sv_duration_ns", ns[i]));
            if (i > 0)
                sv_proto_node_add_data_dep(n, (uint64_t)i);
            CU_ASSERT_TRUE(sv_proto_writer_put_node(w, n, &err));
        }
        CU_ASSERT_TRUE_FATAL(sv_proto_writer_close(w, &err));
    }
    GError *err = NULL;
    g_autofree char *out = g_build_filename(tmp, "out.0.et", NULL);
    const struct sv_dag_et_opts precise = {.precise_durations = TRUE};
    const struct {
        const struct sv_dag_et_opts *opts;
        sv_time want[3];
    } cases[] = {{NULL, {1000, 2000, 3000}}, {&precise, {1500, 2000, 3000}}};
    for (size_t c = 0; c < G_N_ELEMENTS(cases); c++) {
        g_autoptr(sv_dag) dag = sv_dag_load_et(path, cases[c].opts, &err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(dag);
        for (uint64_t id = 1; id <= 3; id++)
            SV_ASSERT_EQ_I64(sv_dag_node_find(dag, id)->duration_ns, cases[c].want[id - 1]);
        /* The chain runs 6000 ns as ASTRA-sim replays it, 6500 ns with the exact value. */
        sv_engine *eng = sv_engine_new(1);
        sv_dag_exec *ex = sv_dag_exec_new(dag, eng, NULL, NULL);
        run_ok(ex);
        SV_ASSERT_EQ_I64(sv_dag_exec_finish_ns(ex), c == 0 ? 6000 : 6500);
        sv_dag_exec_free(ex);
        sv_engine_free(eng);
        /* Either way the attribute survives a load -> save byte for byte. */
        CU_ASSERT_TRUE(sv_dag_save_et(dag, out, &err));
        CU_ASSERT_TRUE(files_equal(path, out));
    }

    /* A node changed after a default load: a duration that is not a whole microsecond replaces
     * the file's sv_duration_ns (no stale agreeing value stays in front of it); a whole one
     * keeps it where it agrees. */
    const struct {
        sv_time set_ns;
        uint64_t micros;
        int n_dur;
        int64_t dur0;
        sv_time precise_ns;
    } edits[] = {
        {1700, 1, 1, 1700, 1700}, /* replaces 1500 */
        {1000, 1, 1, 1500, 1500}, /* unchanged: the file's exact value stays */
        {2000, 2, 1, 1500, 2000}, /* 1500 no longer agrees: kept verbatim, ignored on reading */
    };
    for (size_t k = 0; k < G_N_ELEMENTS(edits); k++) {
        g_autoptr(sv_dag) dag = sv_dag_load_et(path, NULL, &err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(dag);
        sv_dag_node_find(dag, 1)->duration_ns = edits[k].set_ns;
        CU_ASSERT_TRUE(sv_dag_save_et(dag, out, &err));
        g_autoptr(sv_proto_reader) rd = sv_proto_reader_open(out, &err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(rd);
        ChakraProtoMsg__Node *n = NULL;
        CU_ASSERT_TRUE_FATAL(sv_proto_reader_next(rd, &n, &err));
        CU_ASSERT_EQUAL(n->duration_micros, edits[k].micros);
        int64_t vals[4] = {-1, -1, -1, -1};
        CU_ASSERT_EQUAL(dur_attrs(n, vals), edits[k].n_dur);
        SV_ASSERT_EQ_I64(vals[0], edits[k].dur0);
        sv_proto_node_free(n);
        g_autoptr(sv_dag) again = sv_dag_load_et(out, &precise, &err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(again);
        SV_ASSERT_EQ_I64(sv_dag_node_find(again, 1)->duration_ns, edits[k].precise_ns);
    }
    CU_ASSERT_PTR_NULL(err);
    sv_test_rmtree(tmp);
}

/* ---- scale -------------------------------------------------------------------------------- */

/* A 10^6-node chain of 1 ns compute nodes: finishes at 10^6 ns. Sanity of memory and time (the
 * DAG uses pages and arrays, the ready set stays tiny), not a timed test. */
static void test_million_chain(void)
{
    const uint64_t n = 1000000;
    g_autoptr(sv_dag) dag = sv_dag_new();
    sv_dag_node *prev = NULL;
    for (uint64_t i = 0; i < n; i++) {
        struct sv_dag_node_cfg c = {.id = i * 3, .kind = SV_DAG_KIND_COMP, .duration_ns = 1};
        sv_dag_node *x = sv_dag_node_add(dag, &c, NULL);
        if (prev)
            sv_dag_edge_add(dag, prev, x, SV_DAG_EDGE_DATA, NULL);
        prev = x;
    }
    CU_ASSERT_EQUAL(sv_dag_edge_count(dag), n - 1);
    CU_ASSERT_TRUE(sv_dag_check_acyclic(dag, NULL));
    sv_engine *eng = sv_engine_new(1);
    sv_dag_exec *ex = sv_dag_exec_new(dag, eng, NULL, NULL);
    run_ok(ex);
    SV_ASSERT_EQ_I64(sv_dag_exec_finish_ns(ex), (sv_time)n);
    SV_ASSERT_EQ_I64(sv_dag_exec_n_done(ex), n);
    sv_dag_exec_free(ex);
    sv_engine_free(eng);
}

int main(void)
{
    static const sv_test_case graph[] = {
        {"basics", test_graph_basics},
        {NULL, NULL},
    };
    static const sv_test_case exec[] = {
        {"ready rule data+ctrl / ignore ctrl", test_ready_rule},
        {"ascending id release", test_ascending_release},
        {"astra policy", test_astra_policy},
        {"recv bypasses comm slot", test_recv_bypasses_comm_slot},
        {"custom policy", test_custom_policy},
        {"splice while running", test_dynamic_splice_running},
        {"pop edges while running", test_dynamic_pop_running},
        {"stall diagnosis", test_diagnosis},
        {"million-node chain", test_million_chain},
        {NULL, NULL},
    };
    static const sv_test_case et[] = {
        {"round trip bytes", test_et_roundtrip_bytes},
        {"counts vs json", test_et_counts},
        {"semantics", test_et_semantics},
        {"dangling deps", test_et_dangling},
        {"servesim kinds", test_et_servesim_kinds},
        {"durations", test_et_durations},
        {NULL, NULL},
    };
    sv_test_add_suite("dag graph", graph);
    sv_test_add_suite("dag exec", exec);
    sv_test_add_suite("dag et", et);
    return sv_test_run();
}
