/* The flow solver as a resource (sv_net_solver): standalone solvers, explicit paths, links added
 * to a network's solver, hand-computed times. */
#include "network/network_internal.h"
#include "tests/test_util.h"

#define MAX_DONE 16

struct recorder {
    sv_time at[MAX_DONE];
    int n;
};

static void record(sv_engine *eng, void *ctx, uint64_t arg)
{
    struct recorder *r = ctx;
    SV_ASSERT(arg < MAX_DONE);
    r->at[arg] = sv_engine_now(eng);
    r->n++;
}

/* Test 1 (issue 8 tests): one Llama-3.1-8B decoder layer in bf16 = 436,224,000 B over one
 * 64 B/ns link, no latency: 436,224,000 / 64 = 6,816,000 ns exactly. */
static void test_one_link(void)
{
    sv_engine *eng = sv_engine_new(1);
    sv_net_solver *s = sv_net_solver_new(eng);
    int l = sv_net_solver_link_add(s, 64.0, 0);
    CU_ASSERT_EQUAL(l, 0);
    CU_ASSERT_EQUAL(sv_net_solver_num_links(s), 1);
    struct recorder r = {{0}, 0};
    sv_net_solver_start(s, &l, 1, 0, 436224000, record, &r, 0);
    sv_engine_run(eng, SV_TIME_MAX);
    CU_ASSERT_EQUAL(r.n, 1);
    SV_ASSERT_EQ_I64(r.at[0], 6816000);
    struct sv_net_solver_stats st;
    sv_net_solver_get_stats(s, &st);
    SV_ASSERT_EQ_I64(st.flows, 1);
    SV_ASSERT_EQ_I64(st.bytes, 436224000);
    SV_ASSERT_EQ_I64(st.link_bytes, 436224000);
    sv_net_solver_free(s);
    sv_engine_free(eng);
}

/* Flow 0 over the path [A 100 B/ns lat 250, B 64 B/ns lat 50] + extra 700 ns, 6,400 B; flow 1
 * over A alone, 3,600 B, both at t = 0. Max-min: A's fair share 100/2 = 50 < B's 64, so both
 * get 50 B/ns (A full, B carries 50). Flow 1: 3,600 / 50 = 72 ns + 250 = 322 ns. Then flow 0
 * has 6,400 - 3,600 = 2,800 B left and gets min(100, 64) = 64 B/ns: 2,800 / 64 = 43.75 ns, last
 * byte at 115.75 + latencies 250 + 50 + 700 = 1,115.75 -> 1,115 ns. */
static void test_path_and_share(void)
{
    sv_engine *eng = sv_engine_new(1);
    sv_net_solver *s = sv_net_solver_new(eng);
    int a = sv_net_solver_link_add(s, 100.0, 250);
    int b = sv_net_solver_link_add(s, 64.0, 50);
    int path[2] = {a, b};
    struct recorder r = {{0}, 0};
    sv_net_solver_start(s, path, 2, 700, 6400, record, &r, 0);
    sv_net_solver_start(s, &a, 1, 0, 3600, record, &r, 1);
    sv_engine_run(eng, 1); /* the solve runs at t = 0 */
    CU_ASSERT_DOUBLE_EQUAL(sv_net_solver_link_rate_sum(s, a), 100.0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(sv_net_solver_link_rate_sum(s, b), 50.0, 1e-9);
    sv_engine_run(eng, 100);
    CU_ASSERT_DOUBLE_EQUAL(sv_net_solver_link_rate_sum(s, b), 64.0, 1e-9);
    sv_engine_run(eng, SV_TIME_MAX);
    CU_ASSERT_EQUAL(r.n, 2);
    SV_ASSERT_EQ_I64(r.at[0], 1115);
    SV_ASSERT_EQ_I64(r.at[1], 322);
    sv_net_solver_free(s);
    sv_engine_free(eng);
}

/* No link (every link ideal) or no byte: latency only. 0 links + 250 ns -> 250. */
static void test_latency_only(void)
{
    sv_engine *eng = sv_engine_new(1);
    sv_net_solver *s = sv_net_solver_new(eng);
    int l = sv_net_solver_link_add(s, 1.0, 40);
    struct recorder r = {{0}, 0};
    sv_net_solver_start(s, NULL, 0, 250, 1000000, record, &r, 0);
    sv_net_solver_start(s, &l, 1, 10, 0, record, &r, 1); /* 40 + 10 */
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(r.at[0], 250);
    SV_ASSERT_EQ_I64(r.at[1], 50);
    sv_net_solver_free(s);
    sv_engine_free(eng);
}

/* A network's solver: topology links keep ids 0..nlinks-1, added links come after; a flow over
 * an added link plus a topology route contends with messages, and sv_net's message statistics
 * count only messages. Ring of 2 NPUs, 3 B/ns, L = 100 (as test_net_flow.c): message 0->1 of
 * 3,000 B alone = 1,000 + 100 = 1,100 ns. With a solver flow over [added 6 B/ns, route 0->1] of
 * 3,000 B started at the same time: the ring link is shared, 1.5 B/ns each: 2,000 + 100 = 2,100 ns
 * for the message, 2,000 + 100 (+ 0 for the added link) = 2,100 ns for the flow. */
static void test_net_solver_shared(void)
{
    sv_engine *eng = sv_engine_new(1);
    struct sv_net_topo_cfg cfg = {.ndims = 1,
                                  .kind = {SV_NET_TOPO_RING},
                                  .npus = {2},
                                  .bandwidth_gbps = {3.0 * 1e9 / 1073741824.0},
                                  .latency_ns = {100}};
    GError *err = NULL;
    sv_net *net = sv_net_new(eng, &cfg, SV_NET_MODEL_FLOW, &err);
    CU_ASSERT_FATAL(net != NULL);
    sv_net_solver *s = sv_net_get_solver(net);
    CU_ASSERT_FATAL(s != NULL);
    int ntopo = sv_net_solver_num_links(s);
    CU_ASSERT_EQUAL(ntopo, net->geom.nlinks);
    int extra = sv_net_solver_link_add(s, 6.0, 0);
    CU_ASSERT_EQUAL(extra, ntopo);
    int path[8];
    double lat = 0;
    CU_ASSERT_FATAL(sv_net_route_max_links(net) <= 7);
    int n = sv_net_route_links(net, 0, 1, path + 1, &lat);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_DOUBLE_EQUAL(lat, 100.0, 1e-12);
    path[0] = extra;
    struct recorder r = {{0}, 0};
    sv_net_send(net, 0, 1, 3000, record, &r, 0);
    sv_net_solver_start(s, path, n + 1, 0, 3000, record, &r, 1);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(r.at[0], 2100);
    SV_ASSERT_EQ_I64(r.at[1], 2100);
    struct sv_net_stats st;
    sv_net_get_stats(net, &st);
    SV_ASSERT_EQ_I64(st.messages, 1);
    SV_ASSERT_EQ_I64(st.bytes_sent, 3000);
    SV_ASSERT_EQ_I64(st.bytes_delivered, 3000);
    SV_ASSERT_EQ_I64(st.link_bytes, 3000);
    struct sv_net_solver_stats ss;
    sv_net_solver_get_stats(s, &ss);
    SV_ASSERT_EQ_I64(ss.flows, 2);
    SV_ASSERT_EQ_I64(ss.link_bytes, 3000 + 6000);
    sv_net_free(net);
    sv_engine_free(eng);
}

/* Non-flow models have no solver. */
static void test_no_solver(void)
{
    sv_engine *eng = sv_engine_new(1);
    struct sv_net_topo_cfg cfg = {.ndims = 1,
                                  .kind = {SV_NET_TOPO_RING},
                                  .npus = {4},
                                  .bandwidth_gbps = {50},
                                  .latency_ns = {1}};
    sv_net *net = sv_net_new(eng, &cfg, SV_NET_MODEL_ANALYTICAL, NULL);
    CU_ASSERT_FATAL(net != NULL);
    CU_ASSERT_PTR_NULL(sv_net_get_solver(net));
    CU_ASSERT_PTR_NULL(sv_net_get_solver(NULL));
    sv_net_free(net);
    sv_engine_free(eng);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"one link: 436,224,000 B at 64 B/ns = 6,816,000 ns", test_one_link},
        {"explicit path, max-min share", test_path_and_share},
        {"no link or no byte: latency only", test_latency_only},
        {"network solver shared with added links", test_net_solver_shared},
        {"non-flow models have no solver", test_no_solver},
        {NULL, NULL},
    };
    sv_test_add_suite("net solver", cases);
    return sv_test_run();
}
