/* flow timing model: max-min fair sharing, hand-computed rates and completion times.
 *
 * Most cases use a hand-built Ring with B = 3 bytes/ns: bandwidth_gbps = 3e9 / 2^30 converts
 * back to exactly 3 bytes/ns (sv_bw_gbps_to_bytes_per_ns multiplies by 2^30 and divides by 1e9,
 * both exact here), and L = 100 ns per link, so rates and times are small integers. */
#include "network/network_internal.h"
#include "tests/test_util.h"

#include <string.h>

#define MIB (UINT64_C(1) << 20)
#define CFG_DIR SV_SHARED "/interop/astra-sim/configs/"
#define MAX_MSGS 2048

struct recorder {
    sv_time at[MAX_MSGS];
    int n;
};

static void record(sv_engine *eng, void *ctx, uint64_t arg)
{
    struct recorder *r = ctx;
    SV_ASSERT(arg < MAX_MSGS);
    r->at[arg] = sv_engine_now(eng);
    r->n++;
}

static struct recorder *recorder_new(void)
{
    struct recorder *r = g_new0(struct recorder, 1);
    for (int i = 0; i < MAX_MSGS; i++)
        r->at[i] = -1;
    return r;
}

/* Ring of n NPUs, `bpns` bytes/ns per link and direction, `lat` ns per link. */
static sv_net *ring_net(sv_engine *eng, int n, double bpns, double lat)
{
    struct sv_net_topo_cfg cfg = {.ndims = 1,
                                  .kind = {SV_NET_TOPO_RING},
                                  .npus = {n},
                                  .bandwidth_gbps = {bpns * 1e9 / 1073741824.0},
                                  .latency_ns = {lat}};
    GError *err = NULL;
    sv_net *net = sv_net_new(eng, &cfg, SV_NET_MODEL_FLOW, &err);
    CU_ASSERT_FATAL(net != NULL);
    CU_ASSERT_FATAL(net->geom.bw_bpns[0] == bpns);
    return net;
}

static void assert_conserved(sv_net *net)
{
    struct sv_net_stats st;
    sv_net_get_stats(net, &st);
    SV_ASSERT_EQ_I64(st.bytes_delivered, st.bytes_sent);
    CU_ASSERT_EQUAL(sv_net__flow_active(net), 0);
}

/* Two flows on one link get half the bandwidth each: 3000 B at 1.5 B/ns = 2000 ns, + 100. */
static void test_two_flows_share(void)
{
    sv_engine *eng = sv_engine_new(1);
    sv_net *net = ring_net(eng, 8, 3.0, 100);
    struct recorder *r = recorder_new();
    sv_net_send(net, 0, 1, 3000, record, r, 0);
    sv_net_send(net, 0, 1, 3000, record, r, 1);
    sv_engine_run(eng, 0);
    CU_ASSERT_DOUBLE_EQUAL(sv_net__flow_rate(net, 0), 1.5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(sv_net__flow_rate(net, 1), 1.5, 1e-12);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(r->at[0], 2100);
    SV_ASSERT_EQ_I64(r->at[1], 2100);
    struct sv_net_stats st;
    sv_net_get_stats(net, &st);
    SV_ASSERT_EQ_I64(st.rate_solves, 1); /* both starts batched in one solve at t=0 */
    assert_conserved(net);
    g_free(r);
    sv_net_free(net);
    sv_engine_free(eng);
}

/* Clockwise links e_i = i -> i+1 on a Ring of 8, B = 3:
 *   A: 0->2 over e0, e1     B: 1->2 over e1     C: 1->3 over e1, e2     D: 2->3 over e2
 * Progressive filling: e1 has the smallest share 3/3 = 1, so A = B = C = 1; e2 is left with
 * 3 - 1 = 2 for D alone. (An equal split per link would give D 1.5.)
 * Sizes A = B = C = 3000, D = 9000: A, B, C finish sending at 3000; D has sent 6000 by then and
 * the other 3000 at the full 3 B/ns take 1000 more, so D finishes at 4000.
 * Arrivals add the route latency: A 3000 + 200, B 3000 + 100, C 3000 + 200, D 4000 + 100. */
static void test_maxmin_bottlenecks(void)
{
    sv_engine *eng = sv_engine_new(1);
    sv_net *net = ring_net(eng, 8, 3.0, 100);
    struct recorder *r = recorder_new();
    sv_net_send(net, 0, 2, 3000, record, r, 0);
    sv_net_send(net, 1, 2, 3000, record, r, 1);
    sv_net_send(net, 1, 3, 3000, record, r, 2);
    sv_net_send(net, 2, 3, 9000, record, r, 3);
    sv_engine_run(eng, 0);
    CU_ASSERT_DOUBLE_EQUAL(sv_net__flow_rate(net, 0), 1.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(sv_net__flow_rate(net, 1), 1.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(sv_net__flow_rate(net, 2), 1.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(sv_net__flow_rate(net, 3), 2.0, 1e-12);
    sv_engine_run(eng, 3000);
    CU_ASSERT_DOUBLE_EQUAL(sv_net__flow_rate(net, 3), 3.0, 1e-12);
    CU_ASSERT_EQUAL(sv_net__flow_rate(net, 0), -1); /* finished */
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(r->at[0], 3200);
    SV_ASSERT_EQ_I64(r->at[1], 3100);
    SV_ASSERT_EQ_I64(r->at[2], 3200);
    SV_ASSERT_EQ_I64(r->at[3], 4100);
    assert_conserved(net);
    g_free(r);
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

/* Flow 0: 6000 B on 0->1 from t=0, alone at 3 B/ns (would end at 2000). Flow 1: 1500 B on the
 * same link from t=1000. From 1000 both get 1.5: flow 1 ends at 1000 + 1500/1.5 = 2000; flow 0
 * had 3000 left at 1000, 1500 left at 2000, then 3 B/ns again: ends at 2500. Arrivals +100. */
static void test_flow_joins_mid_transfer(void)
{
    sv_engine *eng = sv_engine_new(1);
    sv_net *net = ring_net(eng, 4, 3.0, 100);
    struct recorder *r = recorder_new();
    sv_net_send(net, 0, 1, 6000, record, r, 0);
    struct later_send s = {net, 0, 1, 1500, r, 1};
    sv_engine_schedule(eng, 1000, SV_PRIO_DEFAULT, do_later_send, &s, 0);
    sv_engine_run(eng, 999);
    CU_ASSERT_DOUBLE_EQUAL(sv_net__flow_rate(net, 0), 3.0, 1e-12);
    sv_engine_run(eng, 1000);
    CU_ASSERT_DOUBLE_EQUAL(sv_net__flow_rate(net, 0), 1.5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(sv_net__flow_rate(net, 1), 1.5, 1e-12);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(r->at[1], 2100);
    SV_ASSERT_EQ_I64(r->at[0], 2600);
    assert_conserved(net);
    g_free(r);
    sv_net_free(net);
    sv_engine_free(eng);
}

/* A flow alone on its path takes trunc(sum L + bytes / B): the analytical time. */
static void test_single_flow_is_analytical(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim/configs", "ASTRA-sim's network configs");
    static const struct {
        const char *file;
        int src, dst;
        sv_time expect; /* hand: hops * L + 2^20 / B */
    } cases[] = {
        {CFG_DIR "FullyConnected_2npus.yml", 0, 1, 20031}, /* 500 + 19531.25 */
        {CFG_DIR "Ring_8npus.yml", 0, 3, 21031},           /* 1500 + 19531.25 */
        {CFG_DIR "Ring_8npus.yml", 0, 6, 20531},           /* 1000 + 19531.25 */
        {CFG_DIR "Switch_4npus.yml", 2, 0, 20531},         /* 1000 + 19531.25 */
        {CFG_DIR "HGX-H100-validated.yml", 0, 5, 4313},    /* 1872.5 + 2441.40625 */
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        sv_time got[2];
        for (int m = 0; m < 2; m++) {
            sv_engine *eng = sv_engine_new(1);
            struct sv_net_topo_cfg cfg;
            CU_ASSERT_FATAL(sv_net_topo_load_yaml(cases[i].file, &cfg, NULL));
            sv_net *net =
                sv_net_new(eng, &cfg, m == 0 ? SV_NET_MODEL_FLOW : SV_NET_MODEL_ANALYTICAL, NULL);
            struct recorder *r = recorder_new();
            sv_net_send(net, cases[i].src, cases[i].dst, MIB, record, r, 0);
            sv_engine_run(eng, SV_TIME_MAX);
            got[m] = r->at[0];
            g_free(r);
            sv_net_free(net);
            sv_engine_free(eng);
        }
        SV_ASSERT_EQ_I64(got[0], cases[i].expect);
        SV_ASSERT_EQ_I64(got[1], cases[i].expect);
    }
}

/* Switch 4: 0->2 and 1->2 share only the switch->2 downlink: each gets B/2, so both take
 * 2 * 19531.25 = 39062.5 to send and arrive at trunc(39062.5 + 1000) = 40062 (fifo instead
 * serializes them: 40062 and 59593). */
static void test_switch_downlink_share(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim/configs", "ASTRA-sim's network configs");
    sv_engine *eng = sv_engine_new(1);
    struct sv_net_topo_cfg cfg;
    CU_ASSERT_FATAL(sv_net_topo_load_yaml(CFG_DIR "Switch_4npus.yml", &cfg, NULL));
    sv_net *net = sv_net_new(eng, &cfg, SV_NET_MODEL_FLOW, NULL);
    struct recorder *r = recorder_new();
    sv_net_send(net, 0, 2, MIB, record, r, 0);
    sv_net_send(net, 1, 2, MIB, record, r, 1);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(r->at[0], 40062);
    SV_ASSERT_EQ_I64(r->at[1], 40062);
    assert_conserved(net);
    g_free(r);
    sv_net_free(net);
    sv_engine_free(eng);
}

/* Zero-byte message: only the route latency. */
static void test_zero_bytes(void)
{
    sv_engine *eng = sv_engine_new(1);
    sv_net *net = ring_net(eng, 8, 3.0, 100);
    struct recorder *r = recorder_new();
    sv_net_send(net, 0, 3, 0, record, r, 0);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(r->at[0], 300);
    g_free(r);
    sv_net_free(net);
    sv_engine_free(eng);
}

/* Scaling: a 1024-NPU ring, flow i on link i -> i+1 starting at t = i (1 MiB, 50 GB/s, 500 ns).
 * All 1024 flows overlap in time but share no link, so each start re-solves only its own
 * one-flow component: exactly 1024 solves touching 1024 flows in total (a global re-solve would
 * touch ~1024^2 / 2), and each flow takes the analytical 20031 ns. Then a ring step: every
 * arrival sends on to the next NPU; still one flow per component. */
struct ring_step {
    sv_net *net;
    struct recorder *r;
    int n;
    int steps_left[1024];
};

static void ring_arrived(sv_engine *eng, void *ctx, uint64_t arg)
{
    struct ring_step *rs = ctx;
    int i = (int)(arg % 1024);
    rs->r->at[arg] = sv_engine_now(eng);
    if (rs->steps_left[i]-- > 0)
        sv_net_send(rs->net, (i + 1) % rs->n, (i + 2) % rs->n, MIB, ring_arrived, rs, arg + 1024);
}

static void ring_start(sv_engine *eng, void *ctx, uint64_t arg)
{
    struct ring_step *rs = ctx;
    sv_net_send(rs->net, (int)arg, (int)(arg + 1) % rs->n, MIB, ring_arrived, rs, arg);
}

static void test_scaling_disjoint(void)
{
    sv_engine *eng = sv_engine_new(1);
    struct sv_net_topo_cfg cfg = {.ndims = 1,
                                  .kind = {SV_NET_TOPO_RING},
                                  .npus = {1024},
                                  .bandwidth_gbps = {50},
                                  .latency_ns = {500}};
    sv_net *net = sv_net_new(eng, &cfg, SV_NET_MODEL_FLOW, NULL);
    struct ring_step *rs = g_new0(struct ring_step, 1);
    rs->net = net;
    rs->r = recorder_new();
    rs->n = 1024;
    for (int i = 0; i < 1024; i++) {
        rs->steps_left[i] = 1;
        sv_engine_schedule(eng, i, SV_PRIO_DEFAULT, ring_start, rs, (uint64_t)i);
    }
    sv_engine_run(eng, SV_TIME_MAX);
    for (int i = 0; i < 1024; i++) {
        SV_ASSERT_EQ_I64(rs->r->at[i], i + 20031);
        SV_ASSERT_EQ_I64(rs->r->at[1024 + i], i + 2 * 20031);
    }
    struct sv_net_stats st;
    sv_net_get_stats(net, &st);
    SV_ASSERT_EQ_I64(st.messages, 2048);
    SV_ASSERT_EQ_I64(st.rate_solves, 2048);
    SV_ASSERT_EQ_I64(st.solve_flow_visits, 2048);
    CU_ASSERT(st.max_active_flows >= 1024);
    assert_conserved(net);
    g_free(rs->r);
    g_free(rs);
    sv_net_free(net);
    sv_engine_free(eng);
}

/* Many flows with mixed sizes on a few shared links: whatever the interleaving, every byte is
 * delivered exactly once and each flow takes at least its alone time. */
static void test_conservation_mixed(void)
{
    sv_engine *eng = sv_engine_new(7);
    sv_net *net = ring_net(eng, 6, 3.0, 10);
    struct recorder *r = recorder_new();
    sv_rng *rng = sv_rng_new(42, "test/flow");
    uint64_t sizes[200];
    int hops[200];
    for (int i = 0; i < 200; i++) {
        int src = (int)sv_rng_below(rng, 6);
        int dst = (src + 1 + (int)sv_rng_below(rng, 5)) % 6;
        sizes[i] = 1 + sv_rng_below(rng, 100000);
        int cw = (dst - src + 6) % 6;
        hops[i] = cw < 6 - cw ? cw : 6 - cw;
        sv_net_send(net, src, dst, sizes[i], record, r, (uint64_t)i);
    }
    sv_engine_run(eng, SV_TIME_MAX);
    for (int i = 0; i < 200; i++)
        CU_ASSERT(r->at[i] >= (sv_time)((double)sizes[i] / 3.0 + 10.0 * hops[i]));
    CU_ASSERT_EQUAL(r->n, 200);
    assert_conserved(net);
    sv_rng_free(rng);
    g_free(r);
    sv_net_free(net);
    sv_engine_free(eng);
}

int main(void)
{
    static const sv_test_case flow[] = {
        {"two flows share a link", test_two_flows_share},
        {"max-min with different bottlenecks", test_maxmin_bottlenecks},
        {"flow joining mid-transfer", test_flow_joins_mid_transfer},
        {"single flow = analytical", test_single_flow_is_analytical},
        {"switch downlink shared", test_switch_downlink_share},
        {"zero bytes", test_zero_bytes},
        {"1024 disjoint flows, local solves", test_scaling_disjoint},
        {"byte conservation, mixed", test_conservation_mixed},
        {NULL, NULL},
    };
    sv_test_add_suite("net flow", flow);
    return sv_test_run();
}
