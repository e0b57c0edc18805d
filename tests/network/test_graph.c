/* An explicit network graph (network/graph.c): routes, the four timing models on it and its
 * errors. Expected values are worked out by hand in each test's comment.
 *
 * Bandwidths are given as B * 1e9 / 2^30 "GB/s" so that the links carry exactly B bytes/ns
 * (sv_bw_gbps_to_bytes_per_ns multiplies by 2^30 and divides by 1e9; checked below). */
#include "network/network_internal.h"
#include "tests/test_util.h"

#include <string.h>

#define GBPS(bpns) ((bpns)*1e9 / 1073741824.0)

struct recorder {
    sv_time at[8];
};

static void record(sv_engine *eng, void *ctx, uint64_t arg)
{
    struct recorder *r = ctx;
    r->at[arg] = sv_engine_now(eng);
}

static void link2(struct sv_net_graph_cfg *g, int a, int b, double bpns, double lat)
{
    sv_net_graph_cfg_add_link(g, a, b, GBPS(bpns), lat, FALSE);
}

/* Three nodes on one spine:
 *   node A: npu0, npu1 on an NVSwitch (dev 6), 400 B/ns and 100 ns per link
 *   node B: npu2, npu3 on a PCIe switch (dev 7), 16 B/ns and 500 ns per link
 *   node C: npu4, npu5 on an NVSwitch (dev 8), 400 B/ns and 100 ns per link
 *   each node switch to the spine (dev 9): 50 B/ns and 1000 ns per link
 * npu0 -> npu2 crosses NVLink, the spine (twice) and PCIe: npu0 -> nvA -> spine -> pcieB -> npu2,
 * latencies 100 + 1000 + 1000 + 500 = 2600 ns, bottleneck the PCIe link at 16 B/ns. */
static struct sv_net_graph_cfg *three_nodes(void)
{
    struct sv_net_graph_cfg *g = sv_net_graph_cfg_new(6, 4);
    static const char *const names[] = {"A.npu0", "A.npu1",     "B.npu0", "B.npu1",     "C.npu0",
                                        "C.npu1", "A.nvswitch", "B.pcie", "C.nvswitch", "spine0"};
    for (int d = 0; d < 10; d++)
        sv_net_graph_cfg_set_name(g, d, names[d]);
    link2(g, 0, 6, 400, 100);
    link2(g, 1, 6, 400, 100);
    link2(g, 2, 7, 16, 500);
    link2(g, 3, 7, 16, 500);
    link2(g, 4, 8, 400, 100);
    link2(g, 5, 8, 400, 100);
    link2(g, 6, 9, 50, 1000);
    link2(g, 7, 9, 50, 1000);
    link2(g, 8, 9, 50, 1000);
    return g;
}

static sv_net *graph_net(sv_engine *eng, const struct sv_net_graph_cfg *g, sv_net_model model)
{
    GError *err = NULL;
    sv_net *net = sv_net_new_graph(eng, g, model, &err);
    if (net == NULL)
        fprintf(stderr, "%s\n", err->message);
    CU_ASSERT_FATAL(net != NULL);
    return net;
}

/* The route npu0 -> npu2: 4 links, devices 0 -> 6 -> 9 -> 7 -> 2; route_dims: one dimension,
 * 4 links, 3 switches. */
static void test_route_three_nodes(void)
{
    sv_engine *eng = sv_engine_new(1);
    struct sv_net_graph_cfg *g = three_nodes();
    sv_net *net = graph_net(eng, g, SV_NET_MODEL_FLOW);
    CU_ASSERT_EQUAL(net->geom.links[0].bw_bpns, 400.0);
    CU_ASSERT_EQUAL(net->geom.links[4].bw_bpns, 16.0);
    CU_ASSERT_EQUAL(net->geom.links[12].bw_bpns, 50.0);
    CU_ASSERT_EQUAL(sv_net_num_links(net), 18);
    int links[16];
    double lat = 0;
    int n = sv_net_route_links(net, 0, 2, links, &lat);
    CU_ASSERT_EQUAL_FATAL(n, 4);
    static const int devs[] = {0, 6, 9, 7, 2};
    for (int h = 0; h < n; h++) {
        int a, b, dim;
        sv_net_link_ends(net, links[h], &a, &b, &dim);
        CU_ASSERT_EQUAL(a, devs[h]);
        CU_ASSERT_EQUAL(b, devs[h + 1]);
        CU_ASSERT_EQUAL(dim, 0);
    }
    CU_ASSERT_DOUBLE_EQUAL(lat, 2600, 1e-9);
    int lpd[SV_NET_MAX_DIMS], spd[SV_NET_MAX_DIMS];
    CU_ASSERT_EQUAL(sv_net_route_dims(net, 0, 2, lpd, spd), 4);
    CU_ASSERT_EQUAL(lpd[0], 4);
    CU_ASSERT_EQUAL(spd[0], 3);
    /* inside node A: npu0 -> nvswitch -> npu1, 2 links, 1 switch */
    CU_ASSERT_EQUAL(sv_net_route_dims(net, 0, 1, lpd, spd), 2);
    CU_ASSERT_EQUAL(spd[0], 1);
    CU_ASSERT_EQUAL(sv_net_topo(net)->ndims, 1);
    CU_ASSERT_EQUAL(sv_net_topo(net)->npus[0], 6);
    CU_ASSERT_PTR_NOT_NULL(sv_net_graph(net));
    sv_net_free(net);
    sv_net_graph_cfg_free(g);
    sv_engine_free(eng);
}

/* One KV transfer npu0 -> npu2 of 16,000,000 B, alone: 16e6 / 16 = 1,000,000 ns + 2600 ns. */
static void test_flow_bottleneck_alone(void)
{
    sv_engine *eng = sv_engine_new(1);
    struct sv_net_graph_cfg *g = three_nodes();
    sv_net *net = graph_net(eng, g, SV_NET_MODEL_FLOW);
    struct recorder r = {{0}};
    sv_net_send(net, 0, 2, 16000000, record, &r, 0);
    sv_engine_run(eng, 0);
    CU_ASSERT_DOUBLE_EQUAL(sv_net__flow_rate(net, 0), 16.0, 1e-12);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(r.at[0], 1002600);
    struct sv_net_lone lone;
    sv_net_lone_message(net, 0, 2, 16000000, &lone);
    SV_ASSERT_EQ_I64(lone.delay_ns, 1002600);
    sv_net_free(net);
    sv_net_graph_cfg_free(g);
    sv_engine_free(eng);
}

/* npu0 -> npu2 and npu1 -> npu2 share the bottleneck (pcieB -> npu2, 16 B/ns): 8 B/ns each,
 * 16e6 B take 2,000,000 ns, + 2600 ns for both. */
static void test_flow_bottleneck_shared(void)
{
    sv_engine *eng = sv_engine_new(1);
    struct sv_net_graph_cfg *g = three_nodes();
    sv_net *net = graph_net(eng, g, SV_NET_MODEL_FLOW);
    struct recorder r = {{0}};
    sv_net_send(net, 0, 2, 16000000, record, &r, 0);
    sv_net_send(net, 1, 2, 16000000, record, &r, 1);
    sv_engine_run(eng, 0);
    CU_ASSERT_DOUBLE_EQUAL(sv_net__flow_rate(net, 0), 8.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(sv_net__flow_rate(net, 1), 8.0, 1e-12);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(r.at[0], 2002600);
    SV_ASSERT_EQ_I64(r.at[1], 2002600);
    sv_net_free(net);
    sv_net_graph_cfg_free(g);
    sv_engine_free(eng);
}

/* npu0 -> npu2 (16e6 B) beside npu1 -> npu4 (17e6 B): they share only nvA -> spine (50 B/ns),
 * which is not the first flow's bottleneck. Max-min: the first keeps its PCIe rate 16, the second
 * gets the rest of the shared link, 50 - 16 = 34 B/ns: 17e6 / 34 = 500,000 ns + its latencies
 * 100 + 1000 + 1000 + 100 = 502,200 ns. The first: 1,002,600 ns as if alone. */
static void test_flow_non_bottleneck_shared(void)
{
    sv_engine *eng = sv_engine_new(1);
    struct sv_net_graph_cfg *g = three_nodes();
    sv_net *net = graph_net(eng, g, SV_NET_MODEL_FLOW);
    struct recorder r = {{0}};
    sv_net_send(net, 0, 2, 16000000, record, &r, 0);
    sv_net_send(net, 1, 4, 17000000, record, &r, 1);
    sv_engine_run(eng, 0);
    CU_ASSERT_DOUBLE_EQUAL(sv_net__flow_rate(net, 0), 16.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(sv_net__flow_rate(net, 1), 34.0, 1e-12);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(r.at[0], 1002600);
    SV_ASSERT_EQ_I64(r.at[1], 502200);
    struct sv_net_stats st;
    sv_net_get_stats(net, &st);
    SV_ASSERT_EQ_I64(st.bytes_delivered, 33000000);
    SV_ASSERT_EQ_I64(st.link_bytes, 4 * UINT64_C(33000000));
    sv_net_free(net);
    sv_net_graph_cfg_free(g);
    sv_engine_free(eng);
}

/* The other models on npu0 -> npu2, 16e6 B alone:
 *   analytical: latency sum + bytes at the bottleneck = 2600 + 1e6 = 1,002,600
 *   ideal:      latency sum = 2600
 *   fifo:       store and forward, per link trunc(L + bytes/B):
 *               (100 + 40,000) + (1000 + 320,000) + (1000 + 320,000) + (500 + 1,000,000)
 *               = 1,682,600
 * and sv_net_lone_message agrees with each. */
static void test_other_models(void)
{
    static const struct {
        sv_net_model model;
        sv_time want;
    } cases[] = {{SV_NET_MODEL_ANALYTICAL, 1002600},
                 {SV_NET_MODEL_IDEAL, 2600},
                 {SV_NET_MODEL_FIFO, 1682600},
                 {SV_NET_MODEL_FLOW, 1002600}};
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        sv_engine *eng = sv_engine_new(1);
        struct sv_net_graph_cfg *g = three_nodes();
        sv_net *net = graph_net(eng, g, cases[i].model);
        struct recorder r = {{0}};
        sv_net_send(net, 0, 2, 16000000, record, &r, 0);
        sv_engine_run(eng, SV_TIME_MAX);
        SV_ASSERT_EQ_I64(r.at[0], cases[i].want);
        struct sv_net_lone lone;
        sv_net_lone_message(net, 0, 2, 16000000, &lone);
        SV_ASSERT_EQ_I64(lone.delay_ns, cases[i].want);
        CU_ASSERT_EQUAL(lone.stat_links, 4);
        sv_net_free(net);
        sv_net_graph_cfg_free(g);
        sv_engine_free(eng);
    }
}

/* fifo: two messages npu0 -> npu2 and npu1 -> npu2 of 1,600,000 B queue at the spine uplink
 * nvA -> spine. First hops in parallel: 100 + 4,000 = 4,100 each (own links). Then the first
 * (sent first) holds nvA -> spine 32,000 ns (free at 36,100) and arrives at the spine at
 * 37,100; the second starts at 36,100 and arrives at 69,100. spine -> pcieB: 1000 + 32,000:
 * 70,100 and 102,100; pcieB -> npu2: 500 + 100,000: 170,600 and (the link is free from 170,100)
 * 170,100 + 100,500 = 270,600. */
static void test_fifo_queueing(void)
{
    sv_engine *eng = sv_engine_new(1);
    struct sv_net_graph_cfg *g = three_nodes();
    sv_net *net = graph_net(eng, g, SV_NET_MODEL_FIFO);
    struct recorder r = {{0}};
    sv_net_send(net, 0, 2, 1600000, record, &r, 0);
    sv_net_send(net, 1, 2, 1600000, record, &r, 1);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(r.at[0], 170600);
    SV_ASSERT_EQ_I64(r.at[1], 270600);
    sv_net_free(net);
    sv_net_graph_cfg_free(g);
    sv_engine_free(eng);
}

/* Fewest links first: npu0 -> npu1 directly through s0 (2 links of 1000 ns) or through s1, s2
 * (3 links of 10 ns): the 2-link route wins though its latency is higher (ideal: 2000 ns). Then
 * latency breaks a tie of hop counts: a second 2-link route through s3 at 300 ns per link beats
 * s0's (ideal: 600 ns). */
static void test_shortest_path(void)
{
    sv_engine *eng = sv_engine_new(1);
    /* devices: npu0, npu1, s0 = 2, s1 = 3, s2 = 4, s3 = 5 */
    struct sv_net_graph_cfg *g = sv_net_graph_cfg_new(2, 4);
    link2(g, 0, 3, 100, 10);
    link2(g, 3, 4, 100, 10);
    link2(g, 4, 1, 100, 10);
    link2(g, 0, 2, 100, 1000);
    link2(g, 2, 1, 100, 1000);
    sv_net *net = graph_net(eng, g, SV_NET_MODEL_IDEAL);
    int links[8];
    double lat = 0;
    CU_ASSERT_EQUAL(sv_net_route_links(net, 0, 1, links, &lat), 2);
    CU_ASSERT_DOUBLE_EQUAL(lat, 2000, 1e-9);
    int a, b;
    sv_net_link_ends(net, links[0], &a, &b, NULL);
    CU_ASSERT_EQUAL(b, 2);
    struct recorder r = {{0}};
    sv_net_send(net, 0, 1, 1000, record, &r, 0);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(r.at[0], 2000);
    sv_net_free(net);

    link2(g, 0, 5, 100, 300);
    link2(g, 5, 1, 100, 300);
    net = graph_net(eng, g, SV_NET_MODEL_IDEAL);
    CU_ASSERT_EQUAL(sv_net_route_links(net, 0, 1, links, &lat), 2);
    CU_ASSERT_DOUBLE_EQUAL(lat, 600, 1e-9);
    sv_net_link_ends(net, links[0], &a, &b, NULL);
    CU_ASSERT_EQUAL(b, 5);
    sv_net_free(net);
    sv_net_graph_cfg_free(g);
    sv_engine_free(eng);
}

/* Leaf-spine: 8 NPUs, npu0..3 on leaf0 (dev 8), npu4..7 on leaf1 (dev 9), spines 10 and 11, both
 * linked to both leaves (equal bandwidth and latency). A cross-leaf route has 4 links and two
 * equal-cost choices at the source leaf. */
static struct sv_net_graph_cfg *leaf_spine(sv_net_routing routing)
{
    struct sv_net_graph_cfg *g = sv_net_graph_cfg_new(8, 4);
    g->routing = routing;
    for (int i = 0; i < 8; i++)
        link2(g, i, i < 4 ? 8 : 9, 100, 100);
    link2(g, 8, 10, 10, 1000);
    link2(g, 8, 11, 10, 1000);
    link2(g, 9, 10, 10, 1000);
    link2(g, 9, 11, 10, 1000);
    return g;
}

static int spine_of(const sv_net *net, int src, int dst)
{
    int links[8];
    int n = sv_net_route_links(net, src, dst, links, NULL);
    CU_ASSERT_EQUAL(n, 4);
    int a, b;
    sv_net_link_ends(net, links[1], &a, &b, NULL);
    return b;
}

/* Shortest routing takes the lowest link id at the leaf: spine 10 for every cross pair. ECMP
 * spreads the 32 cross-leaf pairs over both spines, each route still 4 links, and the choice is
 * the same in a second network built from the same graph. Two flows that ECMP put on different
 * spines do not share a link: each runs at the spine link's 10 B/ns (100,000 B: 10,000 ns +
 * 100 + 1000 + 1000 + 100 = 12,200 ns), where shortest routing puts both on spine 10, whose
 * link from the leaf they then split (20,000 + 2200 = 22,200 ns each). */
static void test_ecmp(void)
{
    sv_engine *eng = sv_engine_new(1);
    struct sv_net_graph_cfg *gs = leaf_spine(SV_NET_ROUTE_SHORTEST);
    struct sv_net_graph_cfg *ge = leaf_spine(SV_NET_ROUTE_ECMP);
    sv_net *ns = graph_net(eng, gs, SV_NET_MODEL_FLOW);
    sv_net *ne = graph_net(eng, ge, SV_NET_MODEL_FLOW);
    sv_net *ne2 = graph_net(eng, ge, SV_NET_MODEL_FLOW);
    CU_ASSERT_TRUE(sv_net_graph_cfg_check(ge, NULL));
    int used[2] = {0, 0};
    int p0[2] = {-1, -1}, p1[2] = {-1, -1}; /* a pair from leaf0 on each spine */
    for (int s = 0; s < 8; s++) {
        for (int d = 0; d < 8; d++) {
            if ((s < 4) == (d < 4))
                continue;
            CU_ASSERT_EQUAL(spine_of(ns, s, d), 10);
            int sp = spine_of(ne, s, d);
            CU_ASSERT(sp == 10 || sp == 11);
            CU_ASSERT_EQUAL(spine_of(ne2, s, d), sp);
            used[sp - 10]++;
        }
    }
    /* two pairs leaf0 -> leaf1, on different spines, with no NPU in common */
    for (int s0 = 0; s0 < 4 && p0[0] < 0; s0++)
        for (int d0 = 4; d0 < 8 && p0[0] < 0; d0++)
            for (int s1 = 0; s1 < 4 && p0[0] < 0; s1++)
                for (int d1 = 4; d1 < 8 && p0[0] < 0; d1++)
                    if (s0 != s1 && d0 != d1 && spine_of(ne, s0, d0) == 10 &&
                        spine_of(ne, s1, d1) == 11) {
                        p0[0] = s0, p0[1] = d0;
                        p1[0] = s1, p1[1] = d1;
                    }
    CU_ASSERT(used[0] > 0 && used[1] > 0);
    CU_ASSERT_EQUAL(used[0] + used[1], 32);
    sv_net_free(ne2);
    if (p0[0] >= 0 && p1[0] >= 0 && p0[0] != p1[0] && p0[1] != p1[1]) {
        struct recorder r = {{0}};
        sv_net_send(ne, p0[0], p0[1], 100000, record, &r, 0);
        sv_net_send(ne, p1[0], p1[1], 100000, record, &r, 1);
        sv_engine_run(eng, SV_TIME_MAX);
        SV_ASSERT_EQ_I64(r.at[0], 12200);
        SV_ASSERT_EQ_I64(r.at[1], 12200);
        sv_time t0 = sv_engine_now(eng);
        sv_net_send(ns, p0[0], p0[1], 100000, record, &r, 2);
        sv_net_send(ns, p1[0], p1[1], 100000, record, &r, 3);
        sv_engine_run(eng, SV_TIME_MAX);
        SV_ASSERT_EQ_I64(r.at[2] - t0, 22200);
        SV_ASSERT_EQ_I64(r.at[3] - t0, 22200);
    } else {
        CU_FAIL("no two disjoint pairs on different spines");
    }
    sv_net_free(ns);
    sv_net_free(ne);
    sv_net_graph_cfg_free(gs);
    sv_net_graph_cfg_free(ge);
    sv_engine_free(eng);
}

static void expect_error(struct sv_net_graph_cfg *g, const char *want)
{
    sv_engine *eng = sv_engine_new(1);
    GError *err = NULL;
    sv_net *net = sv_net_new_graph(eng, g, SV_NET_MODEL_FLOW, &err);
    CU_ASSERT_PTR_NULL(net);
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    if (strcmp(err->message, want) != 0)
        fprintf(stderr, "\n  got:  %s\n  want: %s\n", err->message, want);
    CU_ASSERT_STRING_EQUAL(err->message, want);
    g_clear_error(&err);
    /* the check without building gives the same error */
    CU_ASSERT_FALSE(sv_net_graph_cfg_check(g, &err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT_STRING_EQUAL(err->message, want);
    g_error_free(err);
    sv_net_free(net);
    sv_net_graph_cfg_free(g);
    sv_engine_free(eng);
}

static void test_errors(void)
{
    /* directed: npu0 -> s -> npu1 only, so npu1 cannot reach npu0 */
    struct sv_net_graph_cfg *g = sv_net_graph_cfg_new(2, 1);
    sv_net_graph_cfg_add_link(g, 0, 2, 1, 0, TRUE);
    sv_net_graph_cfg_add_link(g, 2, 1, 1, 0, TRUE);
    expect_error(g, "network graph: 'npu 1' cannot reach 'npu 0'");
    /* disconnected, with names */
    g = sv_net_graph_cfg_new(3, 0);
    sv_net_graph_cfg_set_name(g, 2, "node1.npu0");
    sv_net_graph_cfg_set_name(g, 0, "node0.npu0");
    sv_net_graph_cfg_add_link(g, 0, 1, 1, 0, FALSE);
    expect_error(g, "network graph: 'node1.npu0' cannot reach 'node0.npu0'");
    g = sv_net_graph_cfg_new(2, 0);
    sv_net_graph_cfg_add_link(g, 1, 1, 1, 0, FALSE);
    expect_error(g, "network graph: links[0]: a link from 'npu 1' to itself");
    g = sv_net_graph_cfg_new(2, 0);
    sv_net_graph_cfg_add_link(g, 0, 2, 1, 0, FALSE);
    expect_error(g, "network graph: links[0]: device 0 or 2 out of range [0, 2)");
    g = sv_net_graph_cfg_new(2, 0);
    sv_net_graph_cfg_add_link(g, 0, 1, 0, 0, FALSE);
    expect_error(g,
                 "network graph: links[0]: bandwidth: 0 is below the minimum 1e-06 (range [1e-06, "
                 "1e+09] GB/s)");
    g = sv_net_graph_cfg_new(2, 0);
    sv_net_graph_cfg_add_link(g, 0, 1, 1, 0, FALSE);
    sv_net_graph_cfg_add_link(g, 0, 1, 1, -1, FALSE);
    expect_error(g, "network graph: links[1]: latency: -1 is negative (range [0, 1e+12] ns)");
}

/* A shadow of a graph network (system/virtual.c replays collectives on one) routes alike. */
static void test_shadow(void)
{
    sv_engine *eng = sv_engine_new(1);
    struct sv_net_graph_cfg *g = leaf_spine(SV_NET_ROUTE_ECMP);
    sv_net *net = graph_net(eng, g, SV_NET_MODEL_FLOW);
    sv_net_graph_cfg_free(g);
    sv_engine *eng2 = sv_engine_new(1);
    sv_net *sh = sv_net_new_shadow(eng2, net, TRUE);
    for (int s = 0; s < 8; s++)
        for (int d = 0; d < 8; d++)
            if ((s < 4) != (d < 4))
                CU_ASSERT_EQUAL(spine_of(sh, s, d), spine_of(net, s, d));
    sv_net_free(sh);
    sv_net_free(net);
    sv_engine_free(eng2);
    sv_engine_free(eng);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"route across three nodes", test_route_three_nodes},
        {"flow: bottleneck alone", test_flow_bottleneck_alone},
        {"flow: bottleneck shared", test_flow_bottleneck_shared},
        {"flow: non-bottleneck link shared", test_flow_non_bottleneck_shared},
        {"analytical, ideal, fifo on a graph", test_other_models},
        {"fifo queueing on a graph", test_fifo_queueing},
        {"shortest path: hops, then latency", test_shortest_path},
        {"ecmp spreads over equal-cost spines", test_ecmp},
        {"errors", test_errors},
        {"shadow of a graph network", test_shadow},
        {NULL, NULL},
    };
    sv_test_add_suite("net graph", cases);
    return sv_test_run();
}
