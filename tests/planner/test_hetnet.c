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

/* End to end: the KV of one 512-token Llama-3.1-8B prompt, prefilled on a PCIe node (A100,
 * TP2, 16 GB/s, 2,500 ns per link) and decoded on an NVLink node (H100, TP1), over a 50 GB/s
 * switch fabric (2,000 ns per link). KV = 512 x 32 layers x 2 x 8 heads x 128 x 2 B = 67,108,864 B,
 * 33,554,432 B per prefill rank. Rank 1 crosses its node's PCIe switch, then the fabric link it
 * shares with rank 0 (which gets the rest of it): PCIe is its bottleneck throughout,
 * 33,554,432 / (16 x 2^30 / 10^9) = 1,953,125 ns, + 2 x 2,500 + 2 x 2,000 = 1,962,125 ns from
 * the end of prefill to the KV on the decode instance. The flow model truncates once at the end
 * and the rate change when rank 0 finishes leaves the last byte a rounding error early: 1 ns
 * below is accepted, nothing else. (docs/cluster-network.md, the worked example.) */
static void test_kv_transfer_e2e(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cluster = g_build_filename(dir, "c.json", NULL);
    g_autofree char *trace = g_build_filename(dir, "t.jsonl", NULL);
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(
        cluster,
        "{\"num_nodes\": 2, \"link_bw\": 50, \"link_latency\": 2000,"
        " \"fabric\": {\"kind\": \"switch\", \"bw_gbps\": 50, \"latency_ns\": 2000},"
        " \"nodes\": [{\"topology\": {\"kind\": \"nvlink\", \"bw_gbps\": 450, \"latency_ns\": 500},"
        " \"instances\": [{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100\","
        " \"npu_mem\": {\"mem_size\": 80}, \"num_npus\": 1, \"tp_size\": 1, \"pd_type\": "
        "\"decode\"}]},"
        " {\"topology\": {\"kind\": \"pcie\", \"bw_gbps\": 16, \"latency_ns\": 2500},"
        " \"instances\": [{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"A100\","
        " \"npu_mem\": {\"mem_size\": 80}, \"num_npus\": 2, \"tp_size\": 2, \"pd_type\": "
        "\"prefill\"}]}]}",
        -1, NULL));
    CU_ASSERT_FATAL(g_file_set_contents(
        trace, "{\"input_toks\": 512, \"output_toks\": 4, \"arrival_time_ns\": 0}\n", -1, NULL));
    const char *args[] = {"--cluster", cluster, "--workload", trace, "--output-dir", out, NULL};
    char *sout = NULL, *serr = NULL;
    int status = -1;
    CU_ASSERT_FATAL(sv_test_servesim(SV_SERVESIM_BIN, "run", args, &sout, &serr, &status));
    if (status != 0)
        fprintf(stderr, "%s\n", serr);
    CU_ASSERT_EQUAL_FATAL(status, 0);
    g_free(sout);
    g_free(serr);
    g_autofree char *csv_path = g_build_filename(out, "requests.csv", NULL);
    int64_t done = sv_test_csv_int(csv_path, 1, "prefill_done_ns");
    int64_t ready = sv_test_csv_int(csv_path, 1, "kv_ready_ns");
    CU_ASSERT_FATAL(done > 0 && ready > 0);
    CU_ASSERT(ready - done == 1962125 || ready - done == 1962124);
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
        {"kv_transfer_e2e", test_kv_transfer_e2e},
        {NULL, NULL},
    };
    sv_test_add_suite("hetnet", cases);
    return sv_test_run();
}
