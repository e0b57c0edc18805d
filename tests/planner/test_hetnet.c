/* planner: a topology per node (docs/cluster-network.md, "A topology per node"). An NVLink node
 * beside a PCIe node behind one spine switch; every expected time is the flow model's closed form
 * worked by hand: a lone flow's last byte leaves at bytes / (its bottleneck's rate) and it
 * arrives the sum of its links' latencies later (docs/network.md).
 *
 * Rates are chosen as whole bytes per ns: bw_gbps = B x 10^9 / 2^30 converts back to exactly B
 * (sv_bw_gbps_to_bytes_per_ns multiplies by 2^30 and divides by 10^9, both exact here).
 *   node 0: nvlink, 8 B/ns, 500 ns per link    NPUs 0, 1 (+ its NVSwitch)
 *   node 1: pcie,   2 B/ns, 1000 ns per link   NPUs 2, 3 (+ its PCIe switch)
 *   fabric: switch (the spine), 4 B/ns, 2000 ns per link
 * Routes are dimension-ordered: inside the source's node first, then across the spine. */
#include "network/network_internal.h"
#include "planner/planner.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <string.h>

#define GBPS(b) ((b)*1e9 / 1073741824.0)
#define MSG UINT64_C(1000000)

static struct sv_planner_cluster_cfg *parse(const char *text, GError **e)
{
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, text, -1, NULL));
    return sv_planner_cluster_from_json(json_parser_get_root(p), "t.json", e);
}

#define INST(hw)                                                                                   \
    "{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"" hw "\", \"npu_mem\": "        \
    "{\"mem_size\": 80}, \"num_npus\": 2, \"tp_size\": 2}"

static char *cluster_json(const char *kind1)
{
    return g_strdup_printf(
        "{\"num_nodes\": 2, \"link_bw\": 50, \"link_latency\": 100,"
        " \"fabric\": {\"kind\": \"switch\", \"bw_gbps\": %.17g, \"latency_ns\": 2000},"
        " \"nodes\": ["
        "{\"topology\": {\"kind\": \"nvlink\", \"bw_gbps\": %.17g, \"latency_ns\": 500},"
        " \"instances\": [" INST(
            "H100") "]},"
                    "{\"topology\": {\"kind\": \"%s\", \"bw_gbps\": %.17g, \"latency_ns\": 1000},"
                    " \"instances\": [" INST("A100") "]}]}",
        GBPS(4.0), GBPS(8.0), kind1, GBPS(2.0));
}

struct rec {
    sv_time at[4];
};

static void record(sv_engine *eng, void *ctx, uint64_t arg)
{
    ((struct rec *)ctx)->at[arg] = sv_engine_now(eng);
}

static sv_planner_cluster_net *build(sv_engine *eng, struct sv_planner_cluster_cfg **c,
                                     sv_net_model model)
{
    g_autofree char *json = cluster_json("pcie");
    GError *e = NULL;
    *c = parse(json, &e);
    if (!*c)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(*c != NULL);
    sv_planner_cluster_net *cn = sv_planner_cluster_net_new(eng, *c, model, &e);
    if (!cn)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(cn != NULL);
    return cn;
}

/* The links each node's devices get: node 0 its NVLink, node 1 its PCIe, the spine its own. */
static void test_links_per_node(void)
{
    sv_engine *eng = sv_engine_new(1);
    struct sv_planner_cluster_cfg *c;
    sv_planner_cluster_net *cn = build(eng, &c, SV_NET_MODEL_FLOW);
    sv_net *net = sv_planner_cluster_net_net(cn);
    SV_ASSERT_EQ_I64(sv_planner_cluster_net_first_device(cn, 1), 2);
    int links[8];
    double lat = 0;
    /* 2 -> 3 inside node 1: up and down the PCIe switch. */
    CU_ASSERT_EQUAL(sv_net_route_links(net, 2, 3, links, &lat), 2);
    CU_ASSERT_DOUBLE_EQUAL(lat, 2000, 0);
    for (int k = 0; k < 2; k++) {
        CU_ASSERT_DOUBLE_EQUAL(net->geom.links[links[k]].bw_bpns, 2.0, 0);
        CU_ASSERT_DOUBLE_EQUAL(net->geom.links[links[k]].lat_ns, 1000, 0);
    }
    /* 0 -> 1 inside node 0: NVLink. */
    CU_ASSERT_EQUAL(sv_net_route_links(net, 0, 1, links, &lat), 2);
    CU_ASSERT_DOUBLE_EQUAL(lat, 1000, 0);
    CU_ASSERT_DOUBLE_EQUAL(net->geom.links[links[0]].bw_bpns, 8.0, 0);
    /* 1 -> 2: NVLink up, down to NPU 0, then the spine: 2 x 500 + 2 x 2000. */
    CU_ASSERT_EQUAL(sv_net_route_links(net, 1, 2, links, &lat), 4);
    CU_ASSERT_DOUBLE_EQUAL(lat, 5000, 0);
    CU_ASSERT_DOUBLE_EQUAL(net->geom.links[links[3]].bw_bpns, 4.0, 0);
    sv_planner_cluster_net_free(cn);
    sv_planner_cluster_free(c);
    sv_engine_free(eng);
}

/* A KV-sized transfer from the PCIe node to the NVLink node crosses PCIe (2 B/ns) and the spine
 * (4 B/ns): its rate is the bottleneck's 2 B/ns, 10^6 B / 2 = 500,000 ns, + 2 x 1000 + 2 x 2000
 * = 506,000 ns. The other way, 1 -> 2 crosses NVLink (8) and the spine (4): 250,000 + 2 x 500 +
 * 2 x 2000 = 255,000 ns. Sent one after the other (no sharing). */
static void test_bottleneck_rate(void)
{
    sv_engine *eng = sv_engine_new(1);
    struct sv_planner_cluster_cfg *c;
    sv_planner_cluster_net *cn = build(eng, &c, SV_NET_MODEL_FLOW);
    sv_net *net = sv_planner_cluster_net_net(cn);
    struct rec r = {{-1, -1, -1, -1}};
    sv_net_send(net, 2, 1, MSG, record, &r, 0);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(r.at[0], 506000);
    sv_net_send(net, 1, 2, MSG, record, &r, 1);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(r.at[1] - r.at[0], 255000);
    sv_planner_cluster_net_free(cn);
    sv_planner_cluster_free(c);
    sv_engine_free(eng);
}

/* Two flows that share node 1's PCIe uplink (2 -> 1 and 2 -> 3) get half of it each, 1 B/ns
 * (the spine's 4 B/ns leaves room): both last bytes leave at 10^6 ns; 2 -> 3 arrives 2 x 1000
 * later, 2 -> 1 2 x 1000 + 2 x 2000 later. */
static void test_shared_bottleneck_halves(void)
{
    sv_engine *eng = sv_engine_new(1);
    struct sv_planner_cluster_cfg *c;
    sv_planner_cluster_net *cn = build(eng, &c, SV_NET_MODEL_FLOW);
    sv_net *net = sv_planner_cluster_net_net(cn);
    struct rec r = {{-1, -1, -1, -1}};
    sv_net_send(net, 2, 1, MSG, record, &r, 0);
    sv_net_send(net, 2, 3, MSG, record, &r, 1);
    sv_engine_run(eng, 0);
    CU_ASSERT_DOUBLE_EQUAL(sv_net__flow_rate(net, 0), 1.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(sv_net__flow_rate(net, 1), 1.0, 1e-12);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(r.at[0], 1006000);
    SV_ASSERT_EQ_I64(r.at[1], 1002000);
    sv_planner_cluster_net_free(cn);
    sv_planner_cluster_free(c);
    sv_engine_free(eng);
}

/* The analytical model (ASTRA-sim congestion-unaware) times the first differing dimension with
 * that line's links: 2 -> 1 differs first inside node 1, 2 hops x 1000 + 10^6 / 2 = 502,000. */
static void test_analytical_uses_node_links(void)
{
    sv_engine *eng = sv_engine_new(1);
    struct sv_planner_cluster_cfg *c;
    sv_planner_cluster_net *cn = build(eng, &c, SV_NET_MODEL_ANALYTICAL);
    sv_net *net = sv_planner_cluster_net_net(cn);
    struct rec r = {{-1, -1, -1, -1}};
    sv_net_send(net, 2, 1, MSG, record, &r, 0);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(r.at[0], 502000);
    struct sv_net_lone lone;
    sv_net_lone_message(net, 2, 1, MSG, &lone);
    SV_ASSERT_EQ_I64(lone.delay_ns, 502000);
    sv_planner_cluster_net_free(cn);
    sv_planner_cluster_free(c);
    sv_engine_free(eng);
}

/* Nodes may differ in links, not in kind: a ring node beside an NVLink node is an error naming
 * the node; a topology with per-node links cannot be written as ASTRA-sim YAML. */
static void test_bad_input(void)
{
    g_autofree char *json = cluster_json("ring");
    GError *e = NULL;
    struct sv_planner_cluster_cfg *c = parse(json, &e);
    CU_ASSERT_FATAL(c != NULL);
    struct sv_net_topo_cfg topo;
    int32_t ppn;
    CU_ASSERT_FALSE(sv_planner_cluster_topo(c, &topo, &ppn, &e));
    CU_ASSERT_FATAL(e != NULL);
    CU_ASSERT(g_str_has_prefix(e->message, "t.json: nodes[1].topology.kind: a ring level"));
    g_clear_error(&e);
    sv_planner_cluster_free(c);

    g_autofree char *ok = cluster_json("pcie");
    c = parse(ok, &e);
    CU_ASSERT_FATAL(c != NULL);
    CU_ASSERT_FATAL(sv_planner_cluster_topo(c, &topo, &ppn, &e));
    CU_ASSERT_EQUAL(topo.n_line_over, 1);
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *path = g_build_filename(dir, "net.yml", NULL);
    CU_ASSERT_FALSE(sv_net_topo_save_yaml(&topo, path, &e));
    CU_ASSERT(e != NULL && strstr(e->message, "cannot express") != NULL);
    CU_ASSERT_FALSE(g_file_test(path, G_FILE_TEST_EXISTS));
    g_clear_error(&e);
    sv_planner_cluster_free(c);
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"links_per_node", test_links_per_node},
        {"bottleneck_rate", test_bottleneck_rate},
        {"shared_bottleneck_halves", test_shared_bottleneck_halves},
        {"analytical_uses_node_links", test_analytical_uses_node_links},
        {"bad_input", test_bad_input},
        {NULL, NULL},
    };
    sv_test_add_suite("hetnet", cases);
    return sv_test_run();
}
