/* The memory fabric: routes between tiers and NPUs, transfers as flows, SSD store-and-forward
 * and queue depth, ideal links (issue 8 tests 3, 4, 9; hand-computed). */
#include "memory-tier/memtier_internal.h"
#include "tests/test_util.h"

#include <string.h>

/* One Llama-3.1-8B decoder layer in bf16: 218,112,000 params x 2 B (issue 8 tests). */
#define LAYER_BYTES UINT64_C(436224000)
/* One 256-token chunk of Llama-3.1-8B KV: 256 x 131,072 B. */
#define CHUNK_BYTES UINT64_C(33554432)

#define MAX_DONE 8
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

static sv_memtier_tier *tier(sv_engine *eng, sv_memtier_kind kind, const char *name, double rd,
                             double wr, double lat, int32_t qd, gboolean ideal)
{
    struct sv_memtier_tier_cfg c = {.kind = kind,
                                    .capacity_bytes = UINT64_C(1) << 40,
                                    .read_gbps = rd,
                                    .write_gbps = wr,
                                    .latency_ns = lat,
                                    .queue_depth = qd,
                                    .ideal = ideal};
    g_strlcpy(c.name, name, sizeof c.name);
    return sv_memtier_tier_new(eng, &c);
}

static const sv_memtier_route *route(sv_memtier_fabric *f, struct sv_memtier_loc s,
                                     struct sv_memtier_loc d)
{
    GError *err = NULL;
    const sv_memtier_route *r = sv_memtier_fabric_route(f, &s, &d, &err);
    if (r == NULL)
        fprintf(stderr, "route: %s\n", err->message);
    g_clear_error(&err);
    CU_ASSERT_FATAL(r != NULL);
    return r;
}

#define NPU(i) ((struct sv_memtier_loc){SV_MEMTIER_HBM, 0, (i)})
#define LOC(k, d) ((struct sv_memtier_loc){(k), 0, (d)})

/* Test 3: a CXL device of 64 GB/s (latency 250 ns) feeding two NPUs (PCIe 64 GB/s each): the two
 * 436,224,000-B flows share the CXL link, 32 B/ns each: 436,224,000 / 32 = 13,632,000 + 250 =
 * 13,632,250 ns each. One alone: / 64 = 6,816,000 + 250 = 6,816,250. */
static void test_cxl_half_each(void)
{
    for (int both = 0; both < 2; both++) {
        sv_engine *eng = sv_engine_new(1);
        sv_memtier_fabric *f = sv_memtier_fabric_new(eng, NULL, NULL);
        sv_memtier_fabric_add_pcie(f, 0, 0, 64, 0, FALSE);
        sv_memtier_fabric_add_pcie(f, 1, 0, 64, 0, FALSE);
        sv_memtier_tier *cxl = tier(eng, SV_MEMTIER_CXL, "node0/cxl:0", 64, 0, 250, 0, FALSE);
        sv_memtier_fabric_add_tier(f, &LOC(SV_MEMTIER_CXL, 0), cxl);
        const sv_memtier_route *r0 = route(f, LOC(SV_MEMTIER_CXL, 0), NPU(0));
        const sv_memtier_route *r1 = route(f, LOC(SV_MEMTIER_CXL, 0), NPU(1));
        CU_ASSERT_EQUAL(sv_memtier_route_legs(r0), 1);
        CU_ASSERT_PTR_EQUAL(r0, route(f, LOC(SV_MEMTIER_CXL, 0), NPU(0))); /* cached */
        SV_ASSERT_EQ_I64(sv_memtier_route_alone_ns(r0, LAYER_BYTES), 6816250);
        struct recorder rec = {{0}, 0};
        sv_memtier_fabric_xfer(f, r0, LAYER_BYTES, record, &rec, 0);
        if (both)
            sv_memtier_fabric_xfer(f, r1, LAYER_BYTES, record, &rec, 1);
        sv_engine_run(eng, SV_TIME_MAX);
        if (both) {
            SV_ASSERT_EQ_I64(rec.at[0], 13632250);
            SV_ASSERT_EQ_I64(rec.at[1], 13632250);
        } else {
            SV_ASSERT_EQ_I64(rec.at[0], 6816250);
        }
        struct sv_memtier_tier_stats st;
        sv_memtier_tier_get_stats(cxl, sv_engine_now(eng), &st);
        SV_ASSERT_EQ_I64(st.read_bytes, (both ? 2 : 1) * LAYER_BYTES);
        SV_ASSERT_EQ_I64(sv_memtier_fabric_bytes_booked(f), (both ? 2 : 1) * LAYER_BYTES);
        sv_memtier_fabric_free(f);
        sv_memtier_tier_free(cxl);
        sv_engine_free(eng);
    }
}

/* Test 4: an SSD hit is two store-and-forward legs. SSD read 8 GB/s, latency 100,000 ns; DRAM
 * 256 GB/s; PCIe 64 GB/s, latency 0; one chunk of 33,554,432 B.
 *   leg 1 [ssd_read, dram]: 100,000 + 33,554,432 / 8 = 100,000 + 4,194,304 = 4,294,304
 *   leg 2 [dram, h2d]:      33,554,432 / 64 = 524,288            -> 4,818,592 ns.
 * Queue depth 1, two chunks at t = 0: the second's leg 1 waits for the first's:
 *   first:  4,818,592;  second: leg 1 ends 2 x 4,294,304 = 8,588,608, + 524,288 = 9,112,896. */
static void test_ssd_two_legs(void)
{
    for (int two = 0; two < 2; two++) {
        sv_engine *eng = sv_engine_new(1);
        sv_memtier_fabric *f = sv_memtier_fabric_new(eng, NULL, NULL);
        sv_memtier_fabric_add_pcie(f, 0, 0, 64, 0, FALSE);
        sv_memtier_tier *dram = tier(eng, SV_MEMTIER_DRAM, "node0/cpu", 256, 0, 0, 0, FALSE);
        sv_memtier_tier *ssd = tier(eng, SV_MEMTIER_SSD, "node0/ssd", 8, 4, 100000, 1, FALSE);
        sv_memtier_fabric_add_tier(f, &LOC(SV_MEMTIER_DRAM, 0), dram);
        sv_memtier_fabric_add_tier(f, &LOC(SV_MEMTIER_SSD, 0), ssd);
        const sv_memtier_route *r = route(f, LOC(SV_MEMTIER_SSD, 0), NPU(0));
        CU_ASSERT_EQUAL(sv_memtier_route_legs(r), 2);
        SV_ASSERT_EQ_I64(sv_memtier_route_alone_ns(r, CHUNK_BYTES), 4818592);
        struct recorder rec = {{0}, 0};
        sv_memtier_fabric_xfer(f, r, CHUNK_BYTES, record, &rec, 0);
        if (two)
            sv_memtier_fabric_xfer(f, r, CHUNK_BYTES, record, &rec, 1);
        sv_engine_run(eng, SV_TIME_MAX);
        SV_ASSERT_EQ_I64(rec.at[0], 4818592);
        if (two)
            SV_ASSERT_EQ_I64(rec.at[1], 9112896);
        sv_memtier_fabric_free(f);
        sv_memtier_tier_free(dram);
        sv_memtier_tier_free(ssd);
        sv_engine_free(eng);
    }
}

/* Writes to the SSD: [d2h, dram] then [dram, ssd_write]. PCIe 64, DRAM 256, SSD write 4 GB/s,
 * latency 100,000: 33,554,432 / 64 = 524,288; then 100,000 + 33,554,432 / 4 = 8,488,608;
 * total 9,012,896 ns. DRAM -> SSD directly: one leg, 8,488,608. */
static void test_ssd_write(void)
{
    sv_engine *eng = sv_engine_new(1);
    sv_memtier_fabric *f = sv_memtier_fabric_new(eng, NULL, NULL);
    sv_memtier_fabric_add_pcie(f, 0, 0, 64, 0, FALSE);
    sv_memtier_tier *dram = tier(eng, SV_MEMTIER_DRAM, "node0/cpu", 256, 0, 0, 0, FALSE);
    sv_memtier_tier *ssd = tier(eng, SV_MEMTIER_SSD, "node0/ssd", 8, 4, 100000, 0, FALSE);
    sv_memtier_fabric_add_tier(f, &LOC(SV_MEMTIER_DRAM, 0), dram);
    sv_memtier_fabric_add_tier(f, &LOC(SV_MEMTIER_SSD, 0), ssd);
    const sv_memtier_route *w = route(f, NPU(0), LOC(SV_MEMTIER_SSD, 0));
    const sv_memtier_route *dw = route(f, LOC(SV_MEMTIER_DRAM, 0), LOC(SV_MEMTIER_SSD, 0));
    CU_ASSERT_EQUAL(sv_memtier_route_legs(w), 2);
    CU_ASSERT_EQUAL(sv_memtier_route_legs(dw), 1);
    SV_ASSERT_EQ_I64(sv_memtier_route_alone_ns(w, CHUNK_BYTES), 9012896);
    struct recorder rec = {{0}, 0};
    sv_memtier_fabric_xfer(f, w, CHUNK_BYTES, record, &rec, 0);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(rec.at[0], 9012896);
    struct sv_memtier_tier_stats st;
    sv_memtier_tier_get_stats(ssd, sv_engine_now(eng), &st);
    SV_ASSERT_EQ_I64(st.write_bytes, CHUNK_BYTES);
    SV_ASSERT_EQ_I64(st.read_bytes, 0);
    sv_memtier_fabric_free(f);
    sv_memtier_tier_free(dram);
    sv_memtier_tier_free(ssd);
    sv_engine_free(eng);
}

/* Test 9: every link ideal, CXL latency 250: any transfer takes 250 ns, whatever its size. */
static void test_ideal(void)
{
    sv_engine *eng = sv_engine_new(1);
    sv_memtier_fabric *f = sv_memtier_fabric_new(eng, NULL, NULL);
    sv_memtier_fabric_add_pcie(f, 0, 0, 0, 0, TRUE);
    sv_memtier_tier *cxl = tier(eng, SV_MEMTIER_CXL, "node0/cxl:0", 0, 0, 250, 0, TRUE);
    sv_memtier_fabric_add_tier(f, &LOC(SV_MEMTIER_CXL, 0), cxl);
    const sv_memtier_route *r = route(f, LOC(SV_MEMTIER_CXL, 0), NPU(0));
    SV_ASSERT_EQ_I64(sv_memtier_route_alone_ns(r, LAYER_BYTES), 250);
    struct recorder rec = {{0}, 0};
    sv_memtier_fabric_xfer(f, r, LAYER_BYTES, record, &rec, 0);
    sv_memtier_fabric_xfer(f, r, 1, record, &rec, 1);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(rec.at[0], 250);
    SV_ASSERT_EQ_I64(rec.at[1], 250);
    sv_memtier_fabric_free(f);
    sv_memtier_tier_free(cxl);
    sv_engine_free(eng);
}

/* Cluster-scope CXL: node 1's NPU 1 reads cluster cxl:0 through node 1's port. CXL 64 GB/s,
 * port 32 GB/s lat 100, PCIe 64: 436,224,000 / 32 = 13,632,000 + 100 = 13,632,100 ns. */
static void test_cxl_cluster_port(void)
{
    sv_engine *eng = sv_engine_new(1);
    sv_memtier_fabric *f = sv_memtier_fabric_new(eng, NULL, NULL);
    sv_memtier_fabric_add_pcie(f, 0, 0, 64, 0, FALSE);
    sv_memtier_fabric_add_pcie(f, 1, 1, 64, 0, FALSE);
    sv_memtier_tier *cxl = tier(eng, SV_MEMTIER_CXL, "cluster/cxl:0", 64, 0, 0, 0, FALSE);
    struct sv_memtier_loc cl = {SV_MEMTIER_CXL, -1, 0};
    sv_memtier_fabric_add_tier(f, &cl, cxl);
    GError *err = NULL;
    struct sv_memtier_loc n1 = {SV_MEMTIER_HBM, 1, 1};
    CU_ASSERT_PTR_NULL(sv_memtier_fabric_route(f, &cl, &n1, &err)); /* no port yet */
    CU_ASSERT_STRING_EQUAL(err->message,
                           "memory fabric: node 1 has no port to the cluster CXL pool");
    g_clear_error(&err);
    sv_memtier_fabric_add_cxl_port(f, 1, 32, 100, FALSE);
    const sv_memtier_route *r = route(f, cl, n1);
    struct recorder rec = {{0}, 0};
    sv_memtier_fabric_xfer(f, r, LAYER_BYTES, record, &rec, 0);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(rec.at[0], 13632100);
    sv_memtier_fabric_free(f);
    sv_memtier_tier_free(cxl);
    sv_engine_free(eng);
}

/* Route errors name the ends. */
static void test_route_errors(void)
{
    sv_engine *eng = sv_engine_new(1);
    sv_memtier_fabric *f = sv_memtier_fabric_new(eng, NULL, NULL);
    sv_memtier_fabric_add_pcie(f, 0, 0, 64, 0, FALSE);
    sv_memtier_fabric_add_pcie(f, 1, 1, 64, 0, FALSE);
    sv_memtier_tier *dram = tier(eng, SV_MEMTIER_DRAM, "node0/cpu", 256, 0, 0, 0, FALSE);
    sv_memtier_fabric_add_tier(f, &LOC(SV_MEMTIER_DRAM, 0), dram);
    GError *err = NULL;
    struct sv_memtier_loc cxl = LOC(SV_MEMTIER_CXL, 3), npu0 = NPU(0), npu7 = NPU(7);
    struct sv_memtier_loc npu1 = {SV_MEMTIER_HBM, 1, 1}, d0 = LOC(SV_MEMTIER_DRAM, 0);
    CU_ASSERT_PTR_NULL(sv_memtier_fabric_route(f, &cxl, &npu0, &err));
    CU_ASSERT_STRING_EQUAL(err->message, "memory fabric: no tier at node0/cxl:3");
    g_clear_error(&err);
    CU_ASSERT_PTR_NULL(sv_memtier_fabric_route(f, &d0, &npu7, &err));
    CU_ASSERT_STRING_EQUAL(err->message, "memory fabric: npu 7 has no PCIe link");
    g_clear_error(&err);
    CU_ASSERT_PTR_NULL(sv_memtier_fabric_route(f, &npu0, &npu0, &err));
    g_clear_error(&err);
    CU_ASSERT_PTR_NULL(sv_memtier_fabric_route(f, &d0, &npu1, &err)); /* remote, no network */
    CU_ASSERT_STRING_EQUAL(
        err->message, "memory fabric: no route from node0/cpu to npu 1 (needs network_model flow)");
    g_clear_error(&err);
    sv_memtier_fabric_free(f);
    sv_memtier_tier_free(dram);
    sv_engine_free(eng);
}

/* Remote (cluster pool): node 0's DRAM to NPU 1 on node 1 over a flow network Ring of 2 NPUs at
 * 50 GB/s ASTRA-sim units (50 x 2^30 / 1e9 = 53.687091 B/ns), latency 500; DRAM 256 GB/s.
 * [dram(node0)] + route(NPU 0 -> NPU 1): bottleneck 53.687091 B/ns:
 * 33,554,432 / 53.687091 = 625,000 ns (= 2^25 x 1e9 / (50 x 2^30)) + 500 = 625,500 ns. The same
 * transfer contends with messages on the ring (shared solver). */
static void test_remote(void)
{
    sv_engine *eng = sv_engine_new(1);
    struct sv_net_topo_cfg cfg = {.ndims = 1,
                                  .kind = {SV_NET_TOPO_RING},
                                  .npus = {2},
                                  .bandwidth_gbps = {50},
                                  .latency_ns = {500}};
    sv_net *net = sv_net_new(eng, &cfg, SV_NET_MODEL_FLOW, NULL);
    CU_ASSERT_FATAL(net != NULL);
    sv_memtier_fabric *f = sv_memtier_fabric_new(eng, net, NULL);
    CU_ASSERT_PTR_EQUAL(sv_memtier_fabric_solver(f), sv_net_get_solver(net));
    sv_memtier_fabric_add_pcie(f, 0, 0, 64, 0, FALSE);
    sv_memtier_fabric_add_pcie(f, 1, 1, 64, 0, FALSE);
    sv_memtier_tier *dram = tier(eng, SV_MEMTIER_DRAM, "node0/cpu", 256, 0, 0, 0, FALSE);
    sv_memtier_fabric_add_tier(f, &LOC(SV_MEMTIER_DRAM, 0), dram);
    struct sv_memtier_loc npu1 = {SV_MEMTIER_HBM, 1, 1};
    const sv_memtier_route *r = route(f, LOC(SV_MEMTIER_DRAM, 0), npu1);
    struct recorder rec = {{0}, 0};
    sv_memtier_fabric_xfer(f, r, CHUNK_BYTES, record, &rec, 0);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(rec.at[0], 625500);
    sv_memtier_fabric_free(f);
    sv_net_free(net);
    sv_memtier_tier_free(dram);
    sv_engine_free(eng);
}

/* The observer: one report per leg as it completes, with the leg's ends and nodes. The SSD hit
 * of test 4 is two reports (ssd -> cpu at 4,294,304 ns, cpu -> npu at 4,818,592); a remote DRAM
 * read (test_remote's) one report whose ends are on nodes 0 and 1. */
#define MAX_REPORTS 4
struct reports {
    struct sv_memtier_xfer_report r[MAX_REPORTS];
    int n;
};

static void observe(void *ctx, const struct sv_memtier_xfer_report *r)
{
    struct reports *rs = ctx;
    SV_ASSERT(rs->n < MAX_REPORTS);
    rs->r[rs->n++] = *r;
}

static void test_observer(void)
{
    sv_engine *eng = sv_engine_new(1);
    sv_memtier_fabric *f = sv_memtier_fabric_new(eng, NULL, NULL);
    sv_memtier_fabric_add_pcie(f, 0, 0, 64, 0, FALSE);
    sv_memtier_tier *dram = tier(eng, SV_MEMTIER_DRAM, "node0/cpu", 256, 0, 0, 0, FALSE);
    sv_memtier_tier *ssd = tier(eng, SV_MEMTIER_SSD, "node0/ssd", 8, 4, 100000, 1, FALSE);
    sv_memtier_fabric_add_tier(f, &LOC(SV_MEMTIER_DRAM, 0), dram);
    sv_memtier_fabric_add_tier(f, &LOC(SV_MEMTIER_SSD, 0), ssd);
    struct reports rs = {.n = 0};
    sv_memtier_fabric_set_observer(f, observe, &rs);
    struct recorder rec = {{0}, 0};
    sv_memtier_fabric_xfer(f, route(f, LOC(SV_MEMTIER_SSD, 0), NPU(0)), CHUNK_BYTES, record, &rec,
                           0);
    sv_engine_run(eng, SV_TIME_MAX);
    CU_ASSERT_EQUAL_FATAL(rs.n, 2);
    CU_ASSERT(rs.r[0].src.kind == SV_MEMTIER_SSD && rs.r[0].dst.kind == SV_MEMTIER_DRAM);
    CU_ASSERT(rs.r[1].src.kind == SV_MEMTIER_DRAM && rs.r[1].dst.kind == SV_MEMTIER_HBM);
    CU_ASSERT_EQUAL(rs.r[1].dst.device, 0);
    for (int k = 0; k < 2; k++) {
        SV_ASSERT_EQ_I64(rs.r[k].bytes, CHUNK_BYTES);
        CU_ASSERT(rs.r[k].src_node == 0 && rs.r[k].dst_node == 0);
    }
    SV_ASSERT_EQ_I64(rs.r[0].now, 4294304);
    SV_ASSERT_EQ_I64(rs.r[1].now, 4818592);
    SV_ASSERT_EQ_I64(rec.at[0], 4818592);
    sv_memtier_fabric_set_observer(f, NULL, NULL);
    sv_memtier_fabric_xfer(f, route(f, NPU(0), LOC(SV_MEMTIER_DRAM, 0)), CHUNK_BYTES, record, &rec,
                           1);
    sv_engine_run(eng, SV_TIME_MAX);
    CU_ASSERT_EQUAL(rs.n, 2); /* removed */
    sv_memtier_fabric_free(f);
    sv_memtier_tier_free(dram);
    sv_memtier_tier_free(ssd);
    sv_engine_free(eng);

    eng = sv_engine_new(1);
    struct sv_net_topo_cfg cfg = {.ndims = 1,
                                  .kind = {SV_NET_TOPO_RING},
                                  .npus = {2},
                                  .bandwidth_gbps = {50},
                                  .latency_ns = {500}};
    sv_net *net = sv_net_new(eng, &cfg, SV_NET_MODEL_FLOW, NULL);
    CU_ASSERT_FATAL(net != NULL);
    f = sv_memtier_fabric_new(eng, net, NULL);
    sv_memtier_fabric_add_pcie(f, 0, 0, 64, 0, FALSE);
    sv_memtier_fabric_add_pcie(f, 1, 1, 64, 0, FALSE);
    dram = tier(eng, SV_MEMTIER_DRAM, "node0/cpu", 256, 0, 0, 0, FALSE);
    sv_memtier_fabric_add_tier(f, &LOC(SV_MEMTIER_DRAM, 0), dram);
    rs.n = 0;
    sv_memtier_fabric_set_observer(f, observe, &rs);
    struct sv_memtier_loc npu1 = {SV_MEMTIER_HBM, 1, 1};
    sv_memtier_fabric_xfer(f, route(f, LOC(SV_MEMTIER_DRAM, 0), npu1), CHUNK_BYTES, record, &rec,
                           2);
    sv_engine_run(eng, SV_TIME_MAX);
    CU_ASSERT_EQUAL_FATAL(rs.n, 1);
    CU_ASSERT(rs.r[0].src.kind == SV_MEMTIER_DRAM && rs.r[0].src_node == 0);
    CU_ASSERT(rs.r[0].dst.kind == SV_MEMTIER_HBM && rs.r[0].dst_node == 1);
    SV_ASSERT_EQ_I64(rs.r[0].now, 625500);
    sv_memtier_fabric_free(f);
    sv_net_free(net);
    sv_memtier_tier_free(dram);
    sv_engine_free(eng);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"CXL shared by two NPUs: half each (test 3)", test_cxl_half_each},
        {"SSD hit: two legs, queue depth (test 4)", test_ssd_two_legs},
        {"SSD write: two legs", test_ssd_write},
        {"ideal links: latency only (test 9)", test_ideal},
        {"cluster CXL through the node's port", test_cxl_cluster_port},
        {"route errors", test_route_errors},
        {"remote DRAM over the network", test_remote},
        {"observer: one report per leg", test_observer},
        {NULL, NULL},
    };
    sv_test_add_suite("memtier fabric", cases);
    return sv_test_run();
}
