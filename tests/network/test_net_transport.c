/* Network transport: YAML topologies, routes, and the analytical / fifo / ideal timing models.
 *
 * Every expected time is computed by hand from ASTRA-sim's formulas (CHAKRA_ET.md 3.4/3.6):
 * B = GB/s * 2^30 / 1e9 bytes/ns, so 1 MiB at 50 GB/s takes 2^20 / (50 * 2^30 / 1e9) =
 * 1e9 / 51200 = 19531.25 ns, at 100 GB/s 9765.625 ns, at 25 GB/s 39062.5 ns and at 400 GB/s
 * 2441.40625 ns; each delay is truncated once to integer ns. */
#include "network/network_internal.h"
#include "tests/test_util.h"

#include <glib/gstdio.h>
#include <string.h>

#define MIB (UINT64_C(1) << 20)
#define CFG_DIR SV_SHARED "/interop/astra-sim/configs/"

/* ---- helpers ------------------------------------------------------------------------------ */

#define MAX_MSGS 64

struct recorder {
    sv_time at[MAX_MSGS];
    int order[MAX_MSGS];
    int n;
};

static void record(sv_engine *eng, void *ctx, uint64_t arg)
{
    struct recorder *r = ctx;
    SV_ASSERT(arg < MAX_MSGS);
    r->at[arg] = sv_engine_now(eng);
    r->order[r->n++] = (int)arg;
}

static void recorder_init(struct recorder *r)
{
    memset(r, 0, sizeof *r);
    for (int i = 0; i < MAX_MSGS; i++)
        r->at[i] = -1;
}

static sv_net *net_from_yaml(sv_engine *eng, const char *path, sv_net_model model)
{
    struct sv_net_topo_cfg cfg;
    GError *err = NULL;
    gboolean ok = sv_net_topo_load_yaml(path, &cfg, &err);
    if (!ok)
        fprintf(stderr, "%s\n", err->message);
    CU_ASSERT_FATAL(ok);
    sv_net *net = sv_net_new(eng, &cfg, model, &err);
    CU_ASSERT_FATAL(net != NULL);
    return net;
}

/* Send one message src->dst of `bytes` at t=0 in a fresh engine and return its arrival time. */
static sv_time one_message(const char *yaml, sv_net_model model, int src, int dst, uint64_t bytes)
{
    sv_engine *eng = sv_engine_new(1);
    sv_net *net = net_from_yaml(eng, yaml, model);
    struct recorder r;
    recorder_init(&r);
    sv_net_send(net, src, dst, bytes, record, &r, 0);
    sv_engine_run(eng, SV_TIME_MAX);
    struct sv_net_stats st;
    sv_net_get_stats(net, &st);
    CU_ASSERT_EQUAL(st.bytes_delivered, bytes);
    sv_net_free(net);
    sv_engine_free(eng);
    return r.at[0];
}

static char *write_file(const char *dir, const char *name, const char *text)
{
    char *path = g_build_filename(dir, name, NULL);
    CU_ASSERT_FATAL(g_file_set_contents(path, text, -1, NULL));
    return path;
}

/* ---- YAML --------------------------------------------------------------------------------- */

static void test_yaml_shared_configs(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim/configs", "ASTRA-sim's network configs");
    struct sv_net_topo_cfg cfg;
    GError *err = NULL;

    CU_ASSERT_FATAL(sv_net_topo_load_yaml(CFG_DIR "Ring_8npus.yml", &cfg, &err));
    CU_ASSERT_EQUAL(cfg.ndims, 1);
    CU_ASSERT_EQUAL(cfg.kind[0], SV_NET_TOPO_RING);
    CU_ASSERT_EQUAL(cfg.npus[0], 8);
    CU_ASSERT_DOUBLE_EQUAL(cfg.bandwidth_gbps[0], 50.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(cfg.latency_ns[0], 500.0, 0);
    CU_ASSERT_EQUAL(sv_net_topo_npus(&cfg), 8);

    CU_ASSERT_FATAL(sv_net_topo_load_yaml(CFG_DIR "Switch2x2_2d.yml", &cfg, &err));
    CU_ASSERT_EQUAL(cfg.ndims, 2);
    CU_ASSERT_EQUAL(cfg.kind[0], SV_NET_TOPO_SWITCH);
    CU_ASSERT_EQUAL(cfg.kind[1], SV_NET_TOPO_SWITCH);
    CU_ASSERT_EQUAL(cfg.npus[1], 2);
    CU_ASSERT_DOUBLE_EQUAL(cfg.bandwidth_gbps[1], 25.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(cfg.latency_ns[1], 1000.0, 0);
    CU_ASSERT_EQUAL(sv_net_topo_npus(&cfg), 4);

    CU_ASSERT_FATAL(sv_net_topo_load_yaml(CFG_DIR "HGX-H100-validated.yml", &cfg, &err));
    CU_ASSERT_DOUBLE_EQUAL(cfg.latency_ns[0], 936.25, 0);
    CU_ASSERT_DOUBLE_EQUAL(cfg.bandwidth_gbps[0], 400.0, 0);

    CU_ASSERT_FATAL(sv_net_topo_load_yaml(CFG_DIR "FullyConnected_2npus.yml", &cfg, &err));
    CU_ASSERT_EQUAL(cfg.kind[0], SV_NET_TOPO_FULLY_CONNECTED);

    CU_ASSERT_FATAL(sv_net_topo_load_yaml(
        SV_SHARED "/interop/astra-sim/rt_template/inputs/network_cfg.yml", &cfg, &err));
    CU_ASSERT_EQUAL(cfg.npus[0], 8);

    const char *all[] = {"FullyConnected_2npus.yml", "HGX-H100-validated.yml", "Ring_16npus.yml",
                         "Ring_4npus.yml",           "Ring_8npus.yml",         "Switch2x2_2d.yml",
                         "Switch_4npus.yml"};
    for (size_t i = 0; i < G_N_ELEMENTS(all); i++) {
        g_autofree char *p = g_strconcat(CFG_DIR, all[i], NULL);
        CU_ASSERT(sv_net_topo_load_yaml(p, &cfg, &err));
        g_clear_error(&err);
    }
}

static void test_yaml_forms(void)
{
    char *dir = sv_test_tmpdir();
    struct sv_net_topo_cfg cfg;
    GError *err = NULL;
    /* Block lists, comments, an unrelated key and dims in a different key order. */
    g_autofree char *p = write_file(dir, "block.yml",
                                    "# three dims\n"
                                    "latency:\n  - 10   # ns\n  - 20.5\n  - 0\n"
                                    "topology: [Ring, FullyConnected, Switch]  # kinds\n"
                                    "extra: ignored\n"
                                    "npus_count: [ 4, 3, 2 ]\n"
                                    "bandwidth: [ 1.5, 2, 3e2 ]\n");
    CU_ASSERT_FATAL(sv_net_topo_load_yaml(p, &cfg, &err));
    CU_ASSERT_EQUAL(cfg.ndims, 3);
    CU_ASSERT_EQUAL(cfg.kind[1], SV_NET_TOPO_FULLY_CONNECTED);
    CU_ASSERT_EQUAL(cfg.kind[2], SV_NET_TOPO_SWITCH);
    CU_ASSERT_EQUAL(sv_net_topo_npus(&cfg), 24);
    CU_ASSERT_DOUBLE_EQUAL(cfg.latency_ns[1], 20.5, 0);
    CU_ASSERT_DOUBLE_EQUAL(cfg.latency_ns[2], 0.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(cfg.bandwidth_gbps[2], 300.0, 0);
    sv_test_rmtree(dir);
    g_free(dir);
}

/* Each bad file must fail with a message naming the file, the key and, where there is one, the
 * line. */
static void test_yaml_errors(void)
{
    static const struct {
        const char *text;
        const char *needles[3];
    } bad[] = {
        {"topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50 ]\n", {"missing key latency"}},
        {"topology: [ Ring, Switch ]\nnpus_count: [ 4 ]\nbandwidth: [ 50, 50 ]\n"
         "latency: [ 1, 1 ]\n",
         {":2:", "npus_count", "1 entries"}},
        {"topology: [ Ring ]\nnpus_count: [ 1 ]\nbandwidth: [ 50 ]\nlatency: [ 1 ]\n",
         {":2:", "npus_count[0]", "at least 2"}},
        {"topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50 ]\nlatency: [ -1 ]\n",
         {":4:", "latency[0]", "-1 is negative (range [0, 1e+12] ns)"}},
        {"topology: [ Ring, Torus ]\nnpus_count: [ 4, 2 ]\nbandwidth: [ 50, 5 ]\n"
         "latency: [ 1, 1 ]\n",
         {":1:", "topology[1]", "Torus"}},
        {"topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 0 ]\nlatency: [ 1 ]\n",
         {":3:", "bandwidth[0]", "0 is below the minimum 1e-06"}},
        {"topology: [ Ring ]\nnpus_count: [ four ]\nbandwidth: [ 5 ]\nlatency: [ 1 ]\n",
         {":2:", "npus_count[0]", "not an integer"}},
        {"topology: Ring\nnpus_count: [ 4 ]\nbandwidth: [ 5 ]\nlatency: [ 1 ]\n",
         {":1:", "topology", "list"}},
        {"topology: [ Ring\nnpus_count: [ 4 ]\n", {"yaml syntax error"}},
        {"- just\n- a list\n", {"mapping"}},
    };
    char *dir = sv_test_tmpdir();
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *name = g_strdup_printf("bad%zu.yml", i);
        g_autofree char *p = write_file(dir, name, bad[i].text);
        struct sv_net_topo_cfg cfg;
        GError *err = NULL;
        CU_ASSERT_FALSE(sv_net_topo_load_yaml(p, &cfg, &err));
        CU_ASSERT_FATAL(err != NULL);
        CU_ASSERT(g_error_matches(err, SV_NET_ERROR, SV_NET_ERROR_CONFIG));
        CU_ASSERT_PTR_NOT_NULL(strstr(err->message, name));
        for (int k = 0; k < 3 && bad[i].needles[k] != NULL; k++) {
            if (strstr(err->message, bad[i].needles[k]) == NULL)
                fprintf(stderr, "\ncase %zu: \"%s\" lacks \"%s\"\n", i, err->message,
                        bad[i].needles[k]);
            CU_ASSERT_PTR_NOT_NULL(strstr(err->message, bad[i].needles[k]));
        }
        g_error_free(err);
    }
    struct sv_net_topo_cfg cfg;
    GError *err = NULL;
    CU_ASSERT_FALSE(sv_net_topo_load_yaml("/nonexistent/net.yml", &cfg, &err));
    CU_ASSERT(err != NULL && strstr(err->message, "/nonexistent/net.yml") != NULL);
    g_clear_error(&err);
    sv_test_rmtree(dir);
    g_free(dir);
}

static void test_model_names(void)
{
    sv_net_model m;
    GError *err = NULL;
    CU_ASSERT(sv_net_model_parse("flow", &m, &err) && m == SV_NET_MODEL_FLOW);
    CU_ASSERT(sv_net_model_parse("fifo", &m, &err) && m == SV_NET_MODEL_FIFO);
    CU_ASSERT(sv_net_model_parse("analytical", &m, &err) && m == SV_NET_MODEL_ANALYTICAL);
    CU_ASSERT(sv_net_model_parse("ideal", &m, &err) && m == SV_NET_MODEL_IDEAL);
    CU_ASSERT_FALSE(sv_net_model_parse("ns3", &m, &err));
    CU_ASSERT(err != NULL && strstr(err->message, "ns3") != NULL);
    g_clear_error(&err);
    CU_ASSERT_STRING_EQUAL(sv_net_model_name(SV_NET_MODEL_FIFO), "fifo");
}

/* A hand-built cfg is validated too. */
static void test_cfg_validation(void)
{
    sv_engine *eng = sv_engine_new(1);
    struct sv_net_topo_cfg cfg = {.ndims = 1,
                                  .kind = {SV_NET_TOPO_RING},
                                  .npus = {4},
                                  .bandwidth_gbps = {0},
                                  .latency_ns = {1}};
    GError *err = NULL;
    CU_ASSERT_PTR_NULL(sv_net_new(eng, &cfg, SV_NET_MODEL_FIFO, &err));
    CU_ASSERT(err != NULL && strstr(err->message, "bandwidth[0]") != NULL);
    g_clear_error(&err);
    sv_engine_free(eng);
}

/* ---- geometry ----------------------------------------------------------------------------- */

static void test_routes(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim/configs", "ASTRA-sim's network configs");
    struct sv_net_topo_cfg cfg;
    CU_ASSERT_FATAL(sv_net_topo_load_yaml(CFG_DIR "Ring_8npus.yml", &cfg, NULL));
    struct sv_net_geom g;
    CU_ASSERT_FATAL(sv_net__geom_init(&g, &cfg, NULL));
    CU_ASSERT_EQUAL(g.nlinks, 16); /* 8 clockwise + 8 anticlockwise */
    int links[8];
    double lat;
    /* 0 -> 6: anticlockwise 0 -> 7 -> 6 (2 hops) */
    CU_ASSERT_EQUAL(sv_net__geom_route(&g, 0, 6, links, &lat), 2);
    CU_ASSERT_EQUAL(g.links[links[0]].dst_dev, 7);
    CU_ASSERT_EQUAL(g.links[links[1]].dst_dev, 6);
    CU_ASSERT_DOUBLE_EQUAL(lat, 1000.0, 0);
    /* 0 -> 4: tie, clockwise 0 -> 1 -> 2 -> 3 -> 4 */
    CU_ASSERT_EQUAL(sv_net__geom_route(&g, 0, 4, links, &lat), 4);
    CU_ASSERT_EQUAL(g.links[links[0]].dst_dev, 1);
    CU_ASSERT_EQUAL(g.links[links[3]].dst_dev, 4);
    /* 5 -> 1: clockwise distance 4 (tie) -> 6, 7, 0, 1 */
    CU_ASSERT_EQUAL(sv_net__geom_route(&g, 5, 1, links, NULL), 4);
    CU_ASSERT_EQUAL(g.links[links[0]].dst_dev, 6);
    sv_net__geom_clear(&g);

    /* 2-D Switch x Switch: devices 4 NPUs + 2 dim-0 switches + 2 dim-1 switches. */
    CU_ASSERT_FATAL(sv_net_topo_load_yaml(CFG_DIR "Switch2x2_2d.yml", &cfg, NULL));
    CU_ASSERT_FATAL(sv_net__geom_init(&g, &cfg, NULL));
    CU_ASSERT_EQUAL(g.ndevs, 8);
    CU_ASSERT_EQUAL(g.nlinks, 16);
    /* 0 (0,0) -> 3 (1,1): dim 0 first via switch 4 to NPU 1, then dim 1 via switch 7 to 3. */
    CU_ASSERT_EQUAL(sv_net__geom_route(&g, 0, 3, links, &lat), 4);
    CU_ASSERT_EQUAL(g.links[links[0]].dst_dev, 4);
    CU_ASSERT_EQUAL(g.links[links[1]].dst_dev, 1);
    CU_ASSERT_EQUAL(g.links[links[2]].dst_dev, 7);
    CU_ASSERT_EQUAL(g.links[links[3]].dst_dev, 3);
    CU_ASSERT_DOUBLE_EQUAL(lat, 3000.0, 0);
    sv_net__geom_clear(&g);

    /* FullyConnected 4: direct links, 12 of them. */
    struct sv_net_topo_cfg fc = {.ndims = 1,
                                 .kind = {SV_NET_TOPO_FULLY_CONNECTED},
                                 .npus = {4},
                                 .bandwidth_gbps = {1},
                                 .latency_ns = {1}};
    CU_ASSERT_FATAL(sv_net__geom_init(&g, &fc, NULL));
    CU_ASSERT_EQUAL(g.nlinks, 12);
    for (int s = 0; s < 4; s++)
        for (int d = 0; d < 4; d++) {
            if (s == d)
                continue;
            CU_ASSERT_EQUAL(sv_net__geom_route(&g, s, d, links, NULL), 1);
            CU_ASSERT_EQUAL(g.links[links[0]].src_dev, s);
            CU_ASSERT_EQUAL(g.links[links[0]].dst_dev, d);
        }
    sv_net__geom_clear(&g);
}

/* ---- analytical --------------------------------------------------------------------------- */

static void test_analytical(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim/configs", "ASTRA-sim's network configs");
    const sv_net_model A = SV_NET_MODEL_ANALYTICAL;
    /* p2p: 500 + 19531.25 (the ASTRA-sim reference, CHAKRA_ET.md / README: 20031) */
    SV_ASSERT_EQ_I64(one_message(CFG_DIR "FullyConnected_2npus.yml", A, 0, 1, MIB), 20031);
    /* Ring 8: 0->1 one hop; 0->6 the shorter way (2 hops, 1000 + 19531.25); 0->4 tie 4 hops */
    SV_ASSERT_EQ_I64(one_message(CFG_DIR "Ring_8npus.yml", A, 0, 1, MIB), 20031);
    SV_ASSERT_EQ_I64(one_message(CFG_DIR "Ring_8npus.yml", A, 0, 6, MIB), 20531);
    SV_ASSERT_EQ_I64(one_message(CFG_DIR "Ring_8npus.yml", A, 0, 4, MIB), 21531);
    SV_ASSERT_EQ_I64(one_message(CFG_DIR "Ring_8npus.yml", A, 6, 1, MIB), 21031);
    /* Switch: 2 hops, one serialization: 1000 + 19531.25 */
    SV_ASSERT_EQ_I64(one_message(CFG_DIR "Switch_4npus.yml", A, 0, 3, MIB), 20531);
    /* HGX: 2 * 936.25 + 2441.40625 = 4313.90625 */
    SV_ASSERT_EQ_I64(one_message(CFG_DIR "HGX-H100-validated.yml", A, 3, 7, MIB), 4313);
    /* 2-D: only the first differing dimension counts. 0->3 differs in dim 0 (100 GB/s,
     * 500 ns): 1000 + 9765.625; 0->2 only in dim 1 (25 GB/s, 1000 ns): 2000 + 39062.5;
     * 1->2 = (1,0)->(0,1): dim 0 again. */
    SV_ASSERT_EQ_I64(one_message(CFG_DIR "Switch2x2_2d.yml", A, 0, 3, MIB), 10765);
    SV_ASSERT_EQ_I64(one_message(CFG_DIR "Switch2x2_2d.yml", A, 0, 2, MIB), 41062);
    SV_ASSERT_EQ_I64(one_message(CFG_DIR "Switch2x2_2d.yml", A, 1, 2, MIB), 10765);
    /* 1000 bytes on Ring 4: 500 + 1000 / 53.687091 = 518.626... */
    SV_ASSERT_EQ_I64(one_message(CFG_DIR "Ring_4npus.yml", A, 0, 1, 1000), 518);
}

/* Analytical has no link state: two messages on the same link do not delay each other. */
static void test_analytical_no_contention(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim/configs", "ASTRA-sim's network configs");
    sv_engine *eng = sv_engine_new(1);
    sv_net *net = net_from_yaml(eng, CFG_DIR "Ring_4npus.yml", SV_NET_MODEL_ANALYTICAL);
    struct recorder r;
    recorder_init(&r);
    sv_net_send(net, 0, 1, MIB, record, &r, 0);
    sv_net_send(net, 0, 1, MIB, record, &r, 1);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(r.at[0], 20031);
    SV_ASSERT_EQ_I64(r.at[1], 20031);
    struct sv_net_stats st;
    sv_net_get_stats(net, &st);
    SV_ASSERT_EQ_I64(st.messages, 2);
    SV_ASSERT_EQ_I64(st.bytes_sent, 2 * MIB);
    SV_ASSERT_EQ_I64(st.bytes_delivered, 2 * MIB);
    sv_net_free(net);
    sv_engine_free(eng);
}

/* ---- fifo --------------------------------------------------------------------------------- */

static void test_fifo_single(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim/configs", "ASTRA-sim's network configs");
    const sv_net_model F = SV_NET_MODEL_FIFO;
    /* One hop: trunc(500 + 19531.25), the ASTRA-sim p2p reference. */
    SV_ASSERT_EQ_I64(one_message(CFG_DIR "FullyConnected_2npus.yml", F, 0, 1, MIB), 20031);
    /* Ring 2-hop route: store-and-forward, 2 * 20031. */
    SV_ASSERT_EQ_I64(one_message(CFG_DIR "Ring_8npus.yml", F, 0, 6, MIB), 40062);
    /* Switch: NPU -> switch -> NPU, two serializations (CHAKRA_ET.md 3.6). */
    SV_ASSERT_EQ_I64(one_message(CFG_DIR "Switch_4npus.yml", F, 0, 1, MIB), 40062);
    /* 2-D dimension-ordered: dim 0 two hops of trunc(500 + 9765.625) = 10265, then dim 1 two
     * hops of trunc(1000 + 39062.5) = 40062. */
    SV_ASSERT_EQ_I64(one_message(CFG_DIR "Switch2x2_2d.yml", F, 0, 3, MIB), 100654);
}

static void test_fifo_serialize(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim/configs", "ASTRA-sim's network configs");
    sv_engine *eng = sv_engine_new(1);
    sv_net *net = net_from_yaml(eng, CFG_DIR "Ring_4npus.yml", SV_NET_MODEL_FIFO);
    struct recorder r;
    recorder_init(&r);
    sv_net_send(net, 0, 1, MIB, record, &r, 0);
    sv_net_send(net, 0, 1, MIB, record, &r, 1);
    sv_engine_run(eng, SV_TIME_MAX);
    /* first: 20031; second waits until the link frees at trunc(19531.25) = 19531 */
    SV_ASSERT_EQ_I64(r.at[0], 20031);
    SV_ASSERT_EQ_I64(r.at[1], 19531 + 20031);
    struct sv_net_stats st;
    sv_net_get_stats(net, &st);
    SV_ASSERT_EQ_I64(st.link_transfers, 2);
    SV_ASSERT_EQ_I64(st.bytes_delivered, 2 * MIB);
    sv_net_free(net);
    sv_engine_free(eng);
}

/* Switch: 0->2 and 1->2 use different uplinks, meet on the switch->2 downlink. Both reach the
 * switch at 20031; 0's arrival event was inserted first, so it goes first (20031 + 20031) and
 * 1's waits until the downlink frees at 20031 + 19531 = 39562, arriving at 39562 + 20031. */
static void test_fifo_switch_contention(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim/configs", "ASTRA-sim's network configs");
    sv_engine *eng = sv_engine_new(1);
    sv_net *net = net_from_yaml(eng, CFG_DIR "Switch_4npus.yml", SV_NET_MODEL_FIFO);
    struct recorder r;
    recorder_init(&r);
    sv_net_send(net, 0, 2, MIB, record, &r, 0);
    sv_net_send(net, 1, 2, MIB, record, &r, 1);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(r.at[0], 40062);
    SV_ASSERT_EQ_I64(r.at[1], 59593);
    struct sv_net_stats st;
    sv_net_get_stats(net, &st);
    SV_ASSERT_EQ_I64(st.link_transfers, 4);
    SV_ASSERT_EQ_I64(st.link_bytes, 4 * MIB);
    sv_net_free(net);
    sv_engine_free(eng);
}

/* Ring 8: 0->6 goes anticlockwise and shares nothing; 0->2 and 0->4 (tie: clockwise) share the
 * link 0->1. 0->4 starts when 0->1 frees at 19531 and then needs four store-and-forward hops of
 * 20031 each (it reaches NPU 1 at 39562, exactly when link 1->2 frees). */
static void test_fifo_ring_directions(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim/configs", "ASTRA-sim's network configs");
    sv_engine *eng = sv_engine_new(1);
    sv_net *net = net_from_yaml(eng, CFG_DIR "Ring_8npus.yml", SV_NET_MODEL_FIFO);
    struct recorder r;
    recorder_init(&r);
    sv_net_send(net, 0, 6, MIB, record, &r, 0);
    sv_net_send(net, 0, 2, MIB, record, &r, 1);
    sv_net_send(net, 0, 4, MIB, record, &r, 2);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(r.at[0], 40062);
    SV_ASSERT_EQ_I64(r.at[1], 40062);
    SV_ASSERT_EQ_I64(r.at[2], 19531 + 4 * 20031);
    sv_net_free(net);
    sv_engine_free(eng);
}

struct later_send {
    sv_net *net;
    int src, dst;
    uint64_t bytes;
    struct recorder *r;
    uint64_t id;
};

static void do_later_send(sv_engine *eng, void *ctx, uint64_t arg)
{
    struct later_send *s = ctx;
    sv_net_send(s->net, s->src, s->dst, s->bytes, record, s->r, s->id);
}

/* A message sent while the link is busy waits for it; one sent after it frees does not. */
static void test_fifo_queue_then_idle(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim/configs", "ASTRA-sim's network configs");
    sv_engine *eng = sv_engine_new(1);
    sv_net *net = net_from_yaml(eng, CFG_DIR "Ring_4npus.yml", SV_NET_MODEL_FIFO);
    struct recorder r;
    recorder_init(&r);
    sv_net_send(net, 0, 1, MIB, record, &r, 0);
    struct later_send s1 = {net, 0, 1, MIB, &r, 1}; /* at 10000: waits until 19531 */
    struct later_send s2 = {net, 0, 1, MIB, &r, 2}; /* at 50000: link idle again */
    sv_engine_schedule(eng, 10000, SV_PRIO_DEFAULT, do_later_send, &s1, 0);
    sv_engine_schedule(eng, 50000, SV_PRIO_DEFAULT, do_later_send, &s2, 0);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(r.at[0], 20031);
    SV_ASSERT_EQ_I64(r.at[1], 19531 + 20031);
    SV_ASSERT_EQ_I64(r.at[2], 50000 + 20031);
    sv_net_free(net);
    sv_engine_free(eng);
}

/* ---- ideal -------------------------------------------------------------------------------- */

static void test_ideal(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim/configs", "ASTRA-sim's network configs");
    const sv_net_model I = SV_NET_MODEL_IDEAL;
    SV_ASSERT_EQ_I64(one_message(CFG_DIR "Ring_8npus.yml", I, 0, 3, MIB), 1500);
    SV_ASSERT_EQ_I64(one_message(CFG_DIR "Ring_8npus.yml", I, 0, 7, MIB), 500);
    SV_ASSERT_EQ_I64(one_message(CFG_DIR "Switch_4npus.yml", I, 0, 1, MIB), 1000);
    SV_ASSERT_EQ_I64(one_message(CFG_DIR "HGX-H100-validated.yml", I, 0, 1, 1), 1872);
    /* 2-D route: two dim-0 hops (500) and two dim-1 hops (1000) */
    SV_ASSERT_EQ_I64(one_message(CFG_DIR "Switch2x2_2d.yml", I, 0, 3, MIB), 3000);
}

/* ---- delivery observer -------------------------------------------------------------------- */

struct seen {
    struct sv_net_delivery d[MAX_MSGS];
    int n;
};

static void observe(void *ctx, const struct sv_net_delivery *d)
{
    struct seen *s = ctx;
    SV_ASSERT(s->n < MAX_MSGS);
    s->d[s->n++] = *d;
}

/* Every model reports each message once, at its arrival, with its ends and size; empty messages
 * are not reported. 2-D: dim 0 a Switch of 2 NPUs, dim 1 FullyConnected of 2 (NPU = x + 2y). */
static void test_observer(void)
{
    const struct sv_net_topo_cfg cfg = {.ndims = 2,
                                        .kind = {SV_NET_TOPO_SWITCH, SV_NET_TOPO_FULLY_CONNECTED},
                                        .npus = {2, 2},
                                        .bandwidth_gbps = {100, 25},
                                        .latency_ns = {500, 1000}};
    const sv_net_model models[] = {SV_NET_MODEL_ANALYTICAL, SV_NET_MODEL_FIFO, SV_NET_MODEL_FLOW,
                                   SV_NET_MODEL_IDEAL};
    for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
        sv_engine *eng = sv_engine_new(1);
        sv_net *net = sv_net_new(eng, &cfg, models[m], NULL);
        CU_ASSERT_FATAL(net != NULL);
        struct recorder r;
        recorder_init(&r);
        struct seen s = {.n = 0};
        sv_net_set_observer(net, observe, &s);
        sv_net_send(net, 0, 3, MIB, record, &r, 0);
        sv_net_send(net, 2, 0, 1000, record, &r, 1);
        sv_net_send(net, 1, 0, 0, record, &r, 2); /* empty: not reported */
        sv_engine_run(eng, SV_TIME_MAX);
        CU_ASSERT_EQUAL_FATAL(s.n, 2);
        for (int k = 0; k < s.n; k++) {
            int msg = s.d[k].src == 0 ? 0 : 1;
            CU_ASSERT_EQUAL(s.d[k].dst, msg == 0 ? 3 : 0);
            SV_ASSERT_EQ_I64(s.d[k].bytes, msg == 0 ? MIB : 1000);
            SV_ASSERT_EQ_I64(s.d[k].now, r.at[msg]);
        }
        sv_net_set_observer(net, NULL, NULL); /* removed: nothing more is reported */
        sv_net_send(net, 0, 1, MIB, record, &r, 3);
        sv_engine_run(eng, SV_TIME_MAX);
        CU_ASSERT_EQUAL(s.n, 2);
        CU_ASSERT(r.at[3] >= 0);
        sv_net_free(net);
        sv_engine_free(eng);
    }
}

/* Links and switches per dimension: 0 (0,0) -> 3 (1,1) crosses dim 0's switch (2 links) and one
 * dim-1 link; 0 -> 2 only dim 1; 1 -> 0 only dim 0; a 5-ring takes the shorter way. */
static void test_route_dims(void)
{
    const struct sv_net_topo_cfg cfg = {.ndims = 2,
                                        .kind = {SV_NET_TOPO_SWITCH, SV_NET_TOPO_FULLY_CONNECTED},
                                        .npus = {2, 2},
                                        .bandwidth_gbps = {100, 25},
                                        .latency_ns = {500, 1000}};
    sv_engine *eng = sv_engine_new(1);
    sv_net *net = sv_net_new(eng, &cfg, SV_NET_MODEL_FLOW, NULL);
    CU_ASSERT_FATAL(net != NULL);
    int l[2], sw[2];
    CU_ASSERT_EQUAL(sv_net_route_dims(net, 0, 3, l, sw), 3);
    CU_ASSERT(l[0] == 2 && l[1] == 1 && sw[0] == 1 && sw[1] == 0);
    CU_ASSERT_EQUAL(sv_net_route_dims(net, 0, 2, l, sw), 1);
    CU_ASSERT(l[0] == 0 && l[1] == 1 && sw[0] == 0 && sw[1] == 0);
    CU_ASSERT_EQUAL(sv_net_route_dims(net, 1, 0, l, NULL), 2);
    CU_ASSERT(l[0] == 2 && l[1] == 0);
    sv_net_free(net);
    const struct sv_net_topo_cfg ring = {.ndims = 1,
                                         .kind = {SV_NET_TOPO_RING},
                                         .npus = {5},
                                         .bandwidth_gbps = {1},
                                         .latency_ns = {1}};
    net = sv_net_new(eng, &ring, SV_NET_MODEL_ANALYTICAL, NULL);
    CU_ASSERT_FATAL(net != NULL);
    CU_ASSERT_EQUAL(sv_net_route_dims(net, 0, 3, l, sw), 2); /* 0 -> 4 -> 3 */
    CU_ASSERT(l[0] == 2 && sw[0] == 0);
    sv_net_free(net);
    sv_engine_free(eng);
}

int main(void)
{
    static const sv_test_case yaml[] = {
        {"shared configs", test_yaml_shared_configs},
        {"block lists and comments", test_yaml_forms},
        {"errors name file, key, line", test_yaml_errors},
        {"model names", test_model_names},
        {"hand-built cfg validated", test_cfg_validation},
        {NULL, NULL},
    };
    static const sv_test_case geom[] = {
        {"routes", test_routes},
        {NULL, NULL},
    };
    static const sv_test_case analytical[] = {
        {"delays", test_analytical},
        {"no contention", test_analytical_no_contention},
        {NULL, NULL},
    };
    static const sv_test_case fifo[] = {
        {"single messages", test_fifo_single},
        {"one link serializes", test_fifo_serialize},
        {"switch downlink contention", test_fifo_switch_contention},
        {"ring directions", test_fifo_ring_directions},
        {"queue then idle", test_fifo_queue_then_idle},
        {NULL, NULL},
    };
    static const sv_test_case ideal[] = {
        {"latency only", test_ideal},
        {NULL, NULL},
    };
    sv_test_add_suite("net yaml", yaml);
    sv_test_add_suite("net geometry", geom);
    sv_test_add_suite("net analytical", analytical);
    sv_test_add_suite("net fifo", fifo);
    static const sv_test_case observer[] = {
        {"every model reports arrivals", test_observer},
        {"links and switches per dimension", test_route_dims},
        {NULL, NULL},
    };
    sv_test_add_suite("net ideal", ideal);
    sv_test_add_suite("net observer", observer);
    return sv_test_run();
}
