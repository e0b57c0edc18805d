/* planner: the cluster fabric as an explicit graph (planner/fabric_graph.c,
 * docs/cluster-network.md "An explicit fabric graph"): node topologies expanded into the graph,
 * nodes of different kinds side by side, routes, ECMP, each config error, and the KV hand-off
 * of a PD run across NVLink, PCIe, two NICs and a spine, timed by hand. */
#include "network/network_internal.h"
#include "planner/planner.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <string.h>

static struct sv_planner_cluster_cfg *parse(const char *text, GError **e)
{
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, text, -1, NULL));
    return sv_planner_cluster_from_json(json_parser_get_root(p), "t.json", e);
}

#define INST(hw, n)                                                                                \
    "{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"" hw "\", \"npu_mem\": "        \
    "{\"mem_size\": 80}, \"num_npus\": " #n ", \"tp_size\": " #n "}"

/* node0: NVLink (an NVSwitch), 2 of its 4 device slots used; node1: a ring of 4 (a kind that
 * could not sit beside NVLink without a graph). `graph` is the fabric's JSON. */
static char *cluster_json(const char *graph)
{
    return g_strdup_printf(
        "{\"num_nodes\": 2, \"link_bw\": 50, \"link_latency\": 100, \"fabric\": {\"graph\": %s},"
        " \"nodes\": ["
        "{\"topology\": {\"kind\": \"nvlink\", \"bw_gbps\": 450, \"latency_ns\": 500},"
        " \"instances\": [" INST(
            "H100", 2) "]},"
                       "{\"topology\": {\"kind\": \"ring\", \"bw_gbps\": 100, \"latency_ns\": 700},"
                       " \"instances\": [" INST("H100", 4) "]}]}",
        graph);
}

#define ONE_SPINE                                                                                  \
    "{\"switches\": [{\"name\": \"spine0\"}], \"links\": ["                                        \
    "{\"a\": \"node0.switch\", \"b\": \"spine0\", \"bw_gbps\": 50, \"latency_ns\": 1000},"         \
    "{\"a\": \"node1.npu0\", \"b\": \"spine0\", \"bw_gbps\": 50, \"latency_ns\": 1000}]}"

static sv_planner_cluster_net *build(sv_engine *eng, const char *graph,
                                     struct sv_planner_cluster_cfg **c)
{
    g_autofree char *json = cluster_json(graph);
    GError *e = NULL;
    *c = parse(json, &e);
    if (!*c)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(*c != NULL);
    sv_planner_cluster_net *cn = sv_planner_cluster_net_new(eng, *c, SV_NET_MODEL_FLOW, &e);
    if (!cn)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(cn != NULL);
    return cn;
}

/* `servesim run args...`, which must succeed (its stderr printed otherwise). */
static void run_ok(const char *const *args)
{
    char *sout = NULL, *serr = NULL;
    int status = -1;
    CU_ASSERT_FATAL(sv_test_servesim(SV_SERVESIM_BIN, "run", args, &sout, &serr, &status));
    if (status != 0)
        fprintf(stderr, "%s\n", serr);
    CU_ASSERT_EQUAL_FATAL(status, 0);
    g_free(sout);
    g_free(serr);
}

/* Devices: NPUs node0.npu0..3 = 0..3, node1.npu0..3 = 4..7, node0.switch = 8 (node1 is a ring:
 * no switch), spine0 = 9. Links: node0's 4 NVSwitch links (ids 0..7), node1's ring 0-1, 1-2,
 * 2-3, 3-0 (ids 8..15), then the graph's 2 (16..19): 20 directed links.
 * node1.npu2 -> node0.npu0: two equal ways round the ring to npu0 (via npu1 or npu3, 2 links
 * of 700 ns each); shortest routing takes the lower link id at npu2, 2 -> 1 (id 11) before
 * 2 -> 3 (id 12): 6 -> 5 -> 4 -> 9 -> 8 -> 0, 5 links, 700 + 700 + 1000 + 1000 + 500 ns. */
static void test_layout_and_route(void)
{
    sv_engine *eng = sv_engine_new(1);
    struct sv_planner_cluster_cfg *c;
    sv_planner_cluster_net *cn = build(eng, ONE_SPINE, &c);
    sv_net *net = sv_planner_cluster_net_net(cn);
    const struct sv_net_graph_cfg *g = sv_net_graph(net);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(sv_net_npus(net), 8);
    CU_ASSERT_EQUAL(g->nswitches, 2);
    CU_ASSERT_STRING_EQUAL(g->names[6], "node1.npu2");
    CU_ASSERT_STRING_EQUAL(g->names[8], "node0.switch");
    CU_ASSERT_STRING_EQUAL(g->names[9], "spine0");
    CU_ASSERT_EQUAL(sv_net_num_links(net), 20);
    SV_ASSERT_EQ_I64(sv_planner_cluster_net_first_device(cn, 1), 4);
    int links[16];
    double lat = 0;
    int n = sv_net_route_links(net, 6, 0, links, &lat);
    CU_ASSERT_EQUAL_FATAL(n, 5);
    static const int devs[] = {6, 5, 4, 9, 8, 0};
    for (int h = 0; h < n; h++) {
        int a, b;
        sv_net_link_ends(net, links[h], &a, &b, NULL);
        CU_ASSERT_EQUAL(a, devs[h]);
        CU_ASSERT_EQUAL(b, devs[h + 1]);
    }
    CU_ASSERT_DOUBLE_EQUAL(lat, 3900, 1e-9);
    /* the ring's links carry 100 GB/s, the NVSwitch's 450, the spine's 50 */
    CU_ASSERT_DOUBLE_EQUAL(net->geom.links[links[0]].bw_bpns, 100 * 1.073741824, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(net->geom.links[links[3]].bw_bpns, 50 * 1.073741824, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(net->geom.links[links[4]].bw_bpns, 450 * 1.073741824, 1e-9);
    sv_planner_cluster_net_free(cn);
    sv_planner_cluster_free(c);
    sv_engine_free(eng);
}

/* Two spines (devices 9 and 10), each joined to both nodes: every node0 <-> node1 route has two
 * equal-cost ways.
 * Shortest routing puts every pair on spine0 (its links come first); ECMP uses both. */
static void test_ecmp(void)
{
    static const char *const graphs[] = {"shortest", "ecmp"};
    for (int k = 0; k < 2; k++) {
        g_autofree char *graph = g_strdup_printf(
            "{\"routing\": \"%s\", \"switches\": [{\"name\": \"spine0\"}, {\"name\": \"spine1\"}],"
            " \"links\": ["
            "{\"a\": \"node0.switch\", \"b\": \"spine0\", \"bw_gbps\": 50, \"latency_ns\": 1000},"
            "{\"a\": \"node0.switch\", \"b\": \"spine1\", \"bw_gbps\": 50, \"latency_ns\": 1000},"
            "{\"a\": \"node1.npu0\", \"b\": \"spine0\", \"bw_gbps\": 50, \"latency_ns\": 1000},"
            "{\"a\": \"node1.npu0\", \"b\": \"spine1\", \"bw_gbps\": 50, \"latency_ns\": 1000}]}",
            graphs[k]);
        sv_engine *eng = sv_engine_new(1);
        struct sv_planner_cluster_cfg *c;
        sv_planner_cluster_net *cn = build(eng, graph, &c);
        sv_net *net = sv_planner_cluster_net_net(cn);
        int used[2] = {0, 0};
        for (int s = 0; s < 4; s++) {
            for (int d = 4; d < 8; d++) {
                for (int dir = 0; dir < 2; dir++) {
                    int links[16];
                    int n = sv_net_route_links(net, dir ? d : s, dir ? s : d, links, NULL);
                    for (int h = 0; h < n; h++) {
                        int b;
                        sv_net_link_ends(net, links[h], NULL, &b, NULL);
                        if (b == 9 || b == 10)
                            used[b - 9]++;
                    }
                }
            }
        }
        CU_ASSERT_EQUAL(used[0] + used[1], 32);
        if (k == 0) {
            CU_ASSERT_EQUAL(used[1], 0);
        } else {
            CU_ASSERT(used[0] > 0 && used[1] > 0);
        }
        sv_planner_cluster_net_free(cn);
        sv_planner_cluster_free(c);
        sv_engine_free(eng);
    }
}

static void expect_error(const char *graph, const char *want_prefix)
{
    g_autofree char *json = cluster_json(graph);
    GError *e = NULL;
    struct sv_planner_cluster_cfg *c = parse(json, &e);
    CU_ASSERT_PTR_NULL(c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    if (!g_str_has_prefix(e->message, want_prefix))
        fprintf(stderr, "\n  got:  %s\n  want: %s...\n", e->message, want_prefix);
    CU_ASSERT(g_str_has_prefix(e->message, want_prefix));
    g_error_free(e);
    sv_planner_cluster_free(c);
}

#define LINK(a, b, bw, lat)                                                                        \
    "{\"a\": \"" a "\", \"b\": \"" b "\", \"bw_gbps\": " #bw ", \"latency_ns\": " #lat "}"

static void test_errors(void)
{
    expect_error("{\"switches\": [{\"name\": \"spine0\"}], \"links\": [" LINK(
                     "node0.switch", "spine0", 50, 0) "," LINK("node1.npu0", "spine9", 50, 0) "]}",
                 "t.json: fabric.graph.links[1].b: unknown device 'spine9' (devices: "
                 "node<n>.npu<k> for k < 4,");
    expect_error(
        "{\"switches\": [{\"name\": \"spine0\"}, {\"name\": \"spine0\"}], \"links\": [" LINK(
            "node0.switch", "spine0", 50, 0) "]}",
        "t.json: fabric.graph.switches[1].name: duplicate device name 'spine0'");
    expect_error("{\"switches\": [{\"name\": \"node1.npu3\"}], \"links\": [" LINK(
                     "node0.switch", "node1.npu3", 50, 0) "]}",
                 "t.json: fabric.graph.switches[0].name: duplicate device name 'node1.npu3'");
    expect_error("{\"switches\": [{\"name\": \"spine0\"}], \"links\": [" LINK("spine0", "spine0",
                                                                              50, 0) "]}",
                 "t.json: fabric.graph.links[0]: a link from 'spine0' to itself");
    expect_error("{\"switches\": [{\"name\": \"spine0\"}], \"links\": [" LINK("node0.switch",
                                                                              "spine0", 0, 0) "]}",
                 "t.json: fabric.graph.links[0].bw_gbps: 0 is below the minimum");
    expect_error("{\"switches\": [{\"name\": \"spine0\"}], \"links\": [" LINK(
                     "node0.switch", "spine0", 50, -1) "]}",
                 "t.json: fabric.graph.links[0].latency_ns: -1 is negative");
    /* node1 reaches spine0 only one way: nothing leaves spine0 towards it */
    expect_error("{\"switches\": [{\"name\": \"spine0\"}], \"links\": [" LINK(
                     "node0.switch", "spine0", 50, 0) ", {\"a\": \"node1.npu0\", \"b\": "
                                                      "\"spine0\", \"bw_gbps\": 50, "
                                                      "\"latency_ns\": 0, \"directed\": true}]}",
                 "t.json: fabric.graph: 'node0.npu0' cannot reach 'node1.npu0'");
    /* node1 not linked at all */
    expect_error("{\"switches\": [{\"name\": \"spine0\"}], \"links\": [" LINK("node0.switch",
                                                                              "spine0", 50, 0) "]}",
                 "t.json: fabric.graph: 'node1.npu0' cannot reach 'node0.npu0'");
    expect_error(
        "{\"routing\": \"random\", \"links\": [" LINK("node0.switch", "node1.npu0", 50, 0) "]}",
        "t.json: fabric.graph.routing: must be \"shortest\" or \"ecmp\"");
    expect_error("{\"links\": []}", "t.json: fabric.graph.links: must be a non-empty list");
    /* a graph and a one-level fabric at once */
    g_autofree char *both = g_strdup_printf(
        "{\"num_nodes\": 1, \"link_bw\": 50, \"fabric\": {\"kind\": \"switch\", \"graph\": "
        "{\"links\": []}}, \"nodes\": [{\"instances\": [" INST("H100", 2) "]}]}");
    GError *e = NULL;
    CU_ASSERT_PTR_NULL(parse(both, &e));
    CU_ASSERT(e != NULL && strstr(e->message, "fabric: give either \"graph\" or a level") != NULL);
    g_clear_error(&e);
}

/* End to end (examples/hetnet/graph_nic.json): a 512-token Llama-3.1-8B prompt prefilled on a
 * PCIe node (A100, TP2; 16 GB/s and 2,500 ns per PCIe link) and decoded on an NVLink node (H100,
 * TP1; 450 GB/s, 500 ns). Each node's switch reaches its NIC over 16 GB/s / 500 ns, each NIC the
 * spine over 50 GB/s / 1,000 ns. KV = 512 x 32 layers x 2 x 8 heads x 128 x 2 B = 67,108,864 B,
 * 33,554,432 B per prefill rank; both ranks' routes are
 *   npu -> node1.switch -> node1.nic -> spine0 -> node0.nic -> node0.switch -> node0.npu0
 * and share node1.switch -> node1.nic (16 GB/s) and everything after it. Max-min: that link is
 * the bottleneck, 8 GB/s each (their own PCIe links allow 16), for the whole transfer:
 * 33,554,432 / (8 x 2^30 / 10^9) = 3,906,250 ns, + 2,500 + 500 + 1,000 + 1,000 + 500 + 500 =
 * 6,000 ns of latency: 3,912,250 ns from the end of prefill to the KV on the decode instance.
 * The flow model truncates once at the end; 8 x 2^30 / 10^9 is not a binary fraction, so the
 * last byte is a rounding error early and 1 ns below is accepted, nothing else. */
static void test_kv_transfer_e2e(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *trace = g_build_filename(dir, "t.jsonl", NULL);
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(
        trace, "{\"input_toks\": 512, \"output_toks\": 4, \"arrival_time_ns\": 0}\n", -1, NULL));
    g_autofree char *tr = g_build_filename(dir, "trace.json", NULL);
    const char *args[] = {"--cluster",
                          "examples/hetnet/graph_nic.json",
                          "--workload",
                          trace,
                          "--output-dir",
                          out,
                          "--trace",
                          tr,
                          NULL};
    run_ok(args);
    g_autofree char *csv_path = g_build_filename(out, "requests.csv", NULL);
    int64_t done = sv_test_csv_int(csv_path, 1, "prefill_done_ns");
    int64_t ready = sv_test_csv_int(csv_path, 1, "kv_ready_ns");
    CU_ASSERT_FATAL(done > 0 && ready > 0);
    if (ready - done != 3912250 && ready - done != 3912249)
        fprintf(stderr, "\n  kv transfer %" G_GINT64_FORMAT " ns\n", ready - done);
    CU_ASSERT(ready - done == 3912250 || ready - done == 3912249);
    /* the trace names a graph's links by their devices: ids 0-3 node0's NVSwitch links, 4-7
     * node1's PCIe links, then the graph's links in order, each a -> b then b -> a: 10 is the
     * second link's a -> b */
    g_autofree char *tjson = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(tr, &tjson, NULL, NULL));
    CU_ASSERT(strstr(tjson, "\"link 10: node1.switch -> node1.nic\"") != NULL);
    CU_ASSERT(strstr(tjson, "\"link 14: node1.nic -> spine0\"") != NULL);

    /* --emit-et: ASTRA-sim's network YAML cannot hold a graph, an error and no files */
    g_autofree char *et = g_build_filename(dir, "et", NULL);
    const char *args2[] = {"--cluster",
                           "examples/hetnet/graph_nic.json",
                           "--workload",
                           trace,
                           "--output-dir",
                           out,
                           "--emit-et",
                           et,
                           NULL};
    char *sout = NULL, *serr = NULL;
    int status = -1;
    CU_ASSERT_FATAL(sv_test_servesim(SV_SERVESIM_BIN, "run", args2, &sout, &serr, &status));
    CU_ASSERT_NOT_EQUAL(status, 0);
    CU_ASSERT(serr != NULL && strstr(serr, "fabric.graph: an explicit fabric graph cannot be "
                                           "written as ASTRA-sim's network YAML") != NULL);
    g_free(sout);
    g_free(serr);
    sv_test_rmtree(dir);
}

/* ECMP is deterministic across runs: examples/hetnet/graph_nic.json with a second spine and
 * "routing": "ecmp", run twice, the same requests.csv and timeseries.csv byte for byte. */
static void test_ecmp_runs_deterministic(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *text = NULL;
    CU_ASSERT_FATAL(g_file_get_contents("examples/hetnet/graph_nic.json", &text, NULL, NULL));
    GError *e = NULL;
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, text, -1, &e));
    JsonObject *graph = json_object_get_object_member(
        json_object_get_object_member(json_node_get_object(json_parser_get_root(p)), "fabric"),
        "graph");
    json_object_set_string_member(graph, "routing", "ecmp");
    JsonObject *sw = json_object_new();
    json_object_set_string_member(sw, "name", "spine1");
    json_array_add_object_element(json_object_get_array_member(graph, "switches"), sw);
    for (int n = 0; n < 2; n++) {
        JsonObject *l = json_object_new();
        json_object_set_string_member(l, "a", n == 0 ? "node0.nic" : "node1.nic");
        json_object_set_string_member(l, "b", "spine1");
        json_object_set_double_member(l, "bw_gbps", 50);
        json_object_set_double_member(l, "latency_ns", 1000);
        json_array_add_object_element(json_object_get_array_member(graph, "links"), l);
    }
    g_autoptr(JsonGenerator) gen = json_generator_new();
    json_generator_set_root(gen, json_parser_get_root(p));
    g_autofree char *cluster = g_build_filename(dir, "c.json", NULL);
    CU_ASSERT_FATAL(json_generator_to_file(gen, cluster, NULL));
    char *got[2][2] = {{NULL, NULL}, {NULL, NULL}};
    for (int r = 0; r < 2; r++) {
        g_autofree char *out = g_strdup_printf("%s/out%d", dir, r);
        const char *args[] = {"--cluster",    cluster, "--workload", "examples/hetnet/trace.jsonl",
                              "--output-dir", out,     NULL};
        run_ok(args);
        static const char *const files[] = {"requests.csv", "timeseries.csv"};
        for (int f = 0; f < 2; f++) {
            g_autofree char *path = g_build_filename(out, files[f], NULL);
            CU_ASSERT_FATAL(g_file_get_contents(path, &got[r][f], NULL, NULL));
        }
    }
    for (int f = 0; f < 2; f++) {
        CU_ASSERT_STRING_EQUAL(got[0][f], got[1][f]);
        g_free(got[0][f]);
        g_free(got[1][f]);
    }
    sv_test_rmtree(dir);
}

/* Power on a graph (docs/power.md "Traffic", per link): examples/hetnet/graph_nic.json with a
 * power block on each node (link 1 pJ/bit, NIC 2 pJ/bit, every other draw 0) and one request of
 * 512 tokens in, 4 out.
 *   TP2 prefill on node 1 (one iteration of 512 tokens): 2 all-reduces per layer x 32 layers of
 *   512 x 4,096 x 2 B each, a 2-rank ring sending 2 x size: 1,048,576 x 512 = 536,870,912 B,
 *   every message npu -> node1.switch -> npu: 2 node-1 links and 1 node-1 switch each.
 *   KV hand-off: 67,108,864 B over npu -> node1.switch -> node1.nic -> spine0 -> node0.nic ->
 *   node0.switch -> node0.npu0: 2 links of a node (the first and the last), 2 node switches
 *   (node1's, node0's); NIC, spine links: the fabric's; node 1 -> node 0: both NICs.
 * link_bytes = 2 x 536,870,912 + 2 x 67,108,864 = 1,207,959,552; switch_bytes = 536,870,912 +
 * 2 x 67,108,864 = 671,088,640; nic_bytes = 2 x 67,108,864 = 134,217,728; energy: link
 * 1,207,959,552 x 8 x 1e-12 = 0.009663676416 J, nic 134,217,728 x 8 x 2e-12 = 0.002147483648 J. */
static void test_power_traffic(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *text = NULL;
    CU_ASSERT_FATAL(g_file_get_contents("examples/hetnet/graph_nic.json", &text, NULL, NULL));
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, text, -1, NULL));
    JsonArray *nodes =
        json_object_get_array_member(json_node_get_object(json_parser_get_root(p)), "nodes");
    static const char power[] =
        "{\"base_node_power\": 0, \"npu\": {"
        "\"H100\": {\"idle_power\": 0, \"standby_power\": 0, \"active_power\": 0, "
        "\"standby_duration\": 5},"
        "\"A100\": {\"idle_power\": 0, \"standby_power\": 0, \"active_power\": 0, "
        "\"standby_duration\": 5}},"
        "\"cpu\": {\"idle_power\": 0, \"active_power\": 0, \"util\": 0},"
        "\"dram\": {\"dimm_size\": 512, \"idle_power\": 0, \"energy_per_bit\": 0},"
        "\"link\": {\"num_links\": 1, \"idle_power\": 0, \"energy_per_bit\": 1},"
        "\"nic\": {\"num_nics\": 1, \"idle_power\": 0, \"energy_per_bit\": 2},"
        "\"storage\": {\"num_devices\": 1, \"idle_power\": 0}}";
    static const char cpu_mem[] = "{\"mem_size\": 512, \"mem_bw\": 256, \"mem_latency\": 0}";
    for (guint n = 0; n < 2; n++) {
        JsonObject *no = json_array_get_object_element(nodes, n);
        json_object_set_member(no, "power", json_from_string(power, NULL));
        json_object_set_member(no, "cpu_mem", json_from_string(cpu_mem, NULL));
    }
    g_autoptr(JsonGenerator) gen = json_generator_new();
    json_generator_set_root(gen, json_parser_get_root(p));
    g_autofree char *cluster = g_build_filename(dir, "c.json", NULL);
    g_autofree char *trace = g_build_filename(dir, "t.jsonl", NULL);
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    CU_ASSERT_FATAL(json_generator_to_file(gen, cluster, NULL));
    CU_ASSERT_FATAL(g_file_set_contents(
        trace, "{\"input_toks\": 512, \"output_toks\": 4, \"arrival_time_ns\": 0}\n", -1, NULL));
    const char *args[] = {"--cluster",    cluster, "--workload",          trace, "--quiet",
                          "--output-dir", out,     "--no-prefix-caching", NULL};
    run_ok(args);
    g_autofree char *sum = g_build_filename(out, "summary.json", NULL);
    g_autoptr(JsonParser) sp = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_file(sp, sum, NULL));
    JsonObject *e =
        json_object_get_object_member(json_node_get_object(json_parser_get_root(sp)), "energy");
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(e, "link_bytes"), 1207959552.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(e, "switch_bytes"), 671088640.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(e, "nic_bytes"), 134217728.0, 0);
    JsonObject *bc = json_object_get_object_member(e, "by_component_j");
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(bc, "link"), 0.009663676416, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(bc, "nic"), 0.002147483648, 1e-15);
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"layout_and_route", test_layout_and_route},
        {"ecmp", test_ecmp},
        {"errors", test_errors},
        {"kv_transfer_e2e", test_kv_transfer_e2e},
        {"ecmp_runs_deterministic", test_ecmp_runs_deterministic},
        {"power_traffic", test_power_traffic},
        {NULL, NULL},
    };
    sv_test_add_suite("fabric graph", cases);
    return sv_test_run();
}
