/* Tests of ASTRA-sim's direct (AllToAll.cc), halvingDoubling (HalvingDoubling.cc) and
 * doubleBinaryTree (DoubleBinaryTreeAllReduce.cc) implementations in network/coll_sys.c.
 * Expected cycles are derived by hand from each algorithm's step structure (docs/collectives.md),
 * written out as closed forms below: D = endpoint delay, R(x) = 3 floor(x / M) the reduction of
 * x bytes at local-mem-bw M, and the network terms
 *   a(x) = floor(L + x/B)      one hop (fifo: per hop, store-and-forward)
 *   s(x) = floor(x/B)          serialisation on one link (fifo queueing)
 *   h(k, x) = floor(kL + x/B)  analytical k-hop transfer. */
#include "system/system.h"
#include "tests/test_util.h"

#include <math.h>
#include <string.h>

#define MIB (UINT64_C(1) << 20)
#define GBPS 50.0
#define LAT 500.0
#define MEMBW 1600.0
#define D 10

static const double BPN = GBPS * 1073741824.0 / 1e9; /* bytes per ns */

static int64_t a_(uint64_t x)
{
    return (int64_t)floor(LAT + (double)x / BPN);
}

static int64_t s_(uint64_t x)
{
    return (int64_t)floor((double)x / BPN);
}

static int64_t h_(int k, uint64_t x)
{
    return (int64_t)floor(k * LAT + (double)x / BPN);
}

static int64_t R_(uint64_t x)
{
    return 3 * (int64_t)floor((double)x / MEMBW);
}

struct run {
    sv_time finish[64];
    int done_count[64];
};

static void on_done(sv_engine *eng, void *ctx, uint64_t arg)
{
    struct run *r = ctx;
    r->finish[arg] = sv_engine_now(eng);
    r->done_count[arg]++;
}

static struct sv_net_topo_cfg topo1(sv_net_topo_kind kind, int n)
{
    struct sv_net_topo_cfg t;
    memset(&t, 0, sizeof t);
    t.ndims = 1;
    t.kind[0] = kind;
    t.npus[0] = n;
    t.bandwidth_gbps[0] = GBPS;
    t.latency_ns[0] = LAT;
    return t;
}

static void cfg_set(struct sv_sys_cfg *cfg, int ndims, const sv_sys_impl_kind *kinds, int window,
                    int splits)
{
    sv_sys_cfg_init(cfg);
    cfg->preferred_dataset_splits = splits;
    cfg->local_mem_bw = MEMBW;
    cfg->endpoint_delay_ns = D;
    for (int t = 0; t < SV_SYS_TYPE_COUNT; t++) {
        cfg->n_impl[t] = ndims;
        for (int d = 0; d < ndims; d++) {
            cfg->impl[t][d].kind = kinds[d];
            cfg->impl[t][d].direct_window = window;
            if (t == SV_SYS_ALL_TO_ALL && kinds[d] == SV_SYS_IMPL_HALVING_DOUBLING)
                cfg->impl[t][d].kind = SV_SYS_IMPL_RING; /* HD has no all-to-all */
        }
    }
}

/* Every NPU issues `type` of `bytes` at t = 0; fills r; returns TRUE if all finished once. */
static gboolean run_all(const struct sv_net_topo_cfg *topo, sv_net_model model,
                        const struct sv_sys_cfg *cfg, sv_sys_coll_type type, uint64_t bytes,
                        struct run *r)
{
    memset(r, 0, sizeof *r);
    GError *err = NULL;
    sv_engine *eng = sv_engine_new(1);
    sv_net *net = sv_net_new(eng, topo, model, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(net);
    sv_sys *sys = sv_sys_new(net, cfg, NULL, &err);
    if (sys == NULL)
        fprintf(stderr, "sv_sys_new: %s\n", err->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sys);
    int n = sv_net_npus(net);
    for (int i = 0; i < n; i++)
        CU_ASSERT_TRUE(
            sv_sys_coll_start(sys, i, type, bytes, NULL, 0, 0, 0, on_done, r, (uint64_t)i, &err));
    sv_engine_run(eng, SV_TIME_MAX);
    gboolean ok = sv_sys_coll_active(sys) == 0;
    for (int i = 0; i < n; i++)
        ok = ok && r->done_count[i] == 1;
    sv_sys_free(sys);
    sv_net_free(net);
    sv_engine_free(eng);
    return ok;
}

/* Common finish time, -1 if NPUs disagree or one never finishes. */
static sv_time run_same(const struct sv_net_topo_cfg *topo, sv_net_model model,
                        const struct sv_sys_cfg *cfg, sv_sys_coll_type type, uint64_t bytes)
{
    struct run r;
    if (!run_all(topo, model, cfg, type, bytes, &r))
        return -1;
    int n = sv_net_topo_npus(topo);
    for (int i = 1; i < n; i++)
        if (r.finish[i] != r.finish[0])
            return -1;
    return r.finish[0];
}

/* ---- direct ----------------------------------------------------------------------------------
 * All n-1 messages leave at once (window = n-1) after D; T = when the last of them has arrived.
 *   all-to-all, all-gather: D + T + D           (arrivals queue a packet: D, then exit)
 *   reduce-scatter:         D + T + D + R(m)     (received packets are reduced)
 *   all-reduce:             D + T + D + R(m) + T + D  (second half waits for all n-1 arrivals)
 * m = S/n (all-gather: S). T for n = 4 with every NPU i sending to i+1, i+2, i+3 in that order:
 *   FullyConnected: a(m) (own link per pair, both models)
 *   Switch: analytical h(2, m); fifo: the uplink serialises: 2 s(m) + 2 a(m)
 *   Ring: analytical h(2, m) (i+2 is two hops); fifo: i+2 queues behind i+1 on the clockwise
 *         link and is forwarded: s(m) + 2 a(m). */
static int64_t direct_T(sv_net_topo_kind kind, sv_net_model model, uint64_t m)
{
    switch (kind) {
    case SV_NET_TOPO_FULLY_CONNECTED:
        return a_(m);
    case SV_NET_TOPO_SWITCH:
        return model == SV_NET_MODEL_ANALYTICAL ? h_(2, m) : 2 * s_(m) + 2 * a_(m);
    default:
        return model == SV_NET_MODEL_ANALYTICAL ? h_(2, m) : s_(m) + 2 * a_(m);
    }
}

static void test_direct_1d(void)
{
    const sv_sys_impl_kind k[] = {SV_SYS_IMPL_DIRECT};
    struct sv_sys_cfg cfg;
    cfg_set(&cfg, 1, k, -1, 1);
    const sv_net_topo_kind kinds[] = {SV_NET_TOPO_FULLY_CONNECTED, SV_NET_TOPO_SWITCH,
                                      SV_NET_TOPO_RING};
    const sv_net_model models[] = {SV_NET_MODEL_ANALYTICAL, SV_NET_MODEL_FIFO};
    uint64_t S = MIB, m = S / 4;
    for (size_t i = 0; i < G_N_ELEMENTS(kinds); i++) {
        struct sv_net_topo_cfg t = topo1(kinds[i], 4);
        for (size_t j = 0; j < G_N_ELEMENTS(models); j++) {
            int64_t T = direct_T(kinds[i], models[j], m);
            SV_ASSERT_EQ_I64(run_same(&t, models[j], &cfg, SV_SYS_ALL_TO_ALL, S), 2 * D + T);
            SV_ASSERT_EQ_I64(run_same(&t, models[j], &cfg, SV_SYS_REDUCE_SCATTER, S),
                             2 * D + T + R_(m));
            SV_ASSERT_EQ_I64(run_same(&t, models[j], &cfg, SV_SYS_ALL_REDUCE, S),
                             3 * D + 2 * T + R_(m));
            /* all-gather sends the whole chunk to everyone */
            SV_ASSERT_EQ_I64(run_same(&t, models[j], &cfg, SV_SYS_ALL_GATHER, S),
                             2 * D + direct_T(kinds[i], models[j], S));
        }
    }
    /* The printed example values (analytical FullyConnected, 1 MiB, n = 4): a(262144) = 5382,
     * R = 489: AR = 30 + 10764 + 489. */
    struct sv_net_topo_cfg fc = topo1(SV_NET_TOPO_FULLY_CONNECTED, 4);
    SV_ASSERT_EQ_I64(run_same(&fc, SV_NET_MODEL_ANALYTICAL, &cfg, SV_SYS_ALL_REDUCE, MIB), 11283);
    sv_sys_cfg_clear(&cfg);
}

/* direct2 on 8 NPUs, all-to-all: windows of 2 messages, 7 messages -> rounds of 2, 2, 2, 1.
 * Round r+1 leaves D after round r arrives; FullyConnected: every message takes a(m). The last
 * round has one message, and the phase ends when both slots are back: one D after the last
 * arrival. Total = D + 4 (a(m) + D). */
static void test_direct_window(void)
{
    const sv_sys_impl_kind k[] = {SV_SYS_IMPL_DIRECT};
    struct sv_sys_cfg cfg;
    cfg_set(&cfg, 1, k, 2, 1);
    struct sv_net_topo_cfg t = topo1(SV_NET_TOPO_FULLY_CONNECTED, 8);
    uint64_t m = MIB / 8;
    SV_ASSERT_EQ_I64(run_same(&t, SV_NET_MODEL_ANALYTICAL, &cfg, SV_SYS_ALL_TO_ALL, MIB),
                     D + 4 * (a_(m) + D));
    SV_ASSERT_EQ_I64(run_same(&t, SV_NET_MODEL_FIFO, &cfg, SV_SYS_ALL_TO_ALL, MIB),
                     D + 4 * (a_(m) + D));
    sv_sys_cfg_clear(&cfg);
}

/* ---- halvingDoubling ---------------------------------------------------------------------------
 * n = 4 (log2 n = 2), partner = index XOR distance. One message in flight; every step is
 * D (+ R) + transfer. Sizes: all-reduce S/2 (d 1), S/4 (d 2), S/4 (d 2), S/2 (d 1);
 * reduce-scatter S/2 (d 1), S/4 (d 2); all-gather S (d 2), 2S (d 1). Only the second packet of
 * each log2(n) block is reduced (zero-latency packet first), at its own size S/4.
 *   AR = 5D + R(S/4) + 2 T1(S/2) + 2 T2(S/4)
 *   RS = 3D + R(S/4) + T1(S/2) + T2(S/4)
 *   AG = 3D + T2(S) + T1(2S)
 * Td(x): FullyConnected a(x); Switch analytical h(2,x), fifo 2 a(x) (pairs never share a link);
 * Ring d=1 a(x) both models, d=2 analytical h(2,x), fifo 2 a(x) (the clockwise links carry
 * one message each when it arrives). */
static int64_t hd_T(sv_net_topo_kind kind, sv_net_model model, int d, uint64_t x)
{
    gboolean two = kind == SV_NET_TOPO_SWITCH || (kind == SV_NET_TOPO_RING && d == 2);
    if (!two)
        return a_(x);
    return model == SV_NET_MODEL_ANALYTICAL ? h_(2, x) : 2 * a_(x);
}

static void test_hd_1d(void)
{
    const sv_sys_impl_kind k[] = {SV_SYS_IMPL_HALVING_DOUBLING};
    struct sv_sys_cfg cfg;
    cfg_set(&cfg, 1, k, -1, 1);
    const sv_net_topo_kind kinds[] = {SV_NET_TOPO_FULLY_CONNECTED, SV_NET_TOPO_SWITCH,
                                      SV_NET_TOPO_RING};
    const sv_net_model models[] = {SV_NET_MODEL_ANALYTICAL, SV_NET_MODEL_FIFO};
    uint64_t S = MIB;
    for (size_t i = 0; i < G_N_ELEMENTS(kinds); i++) {
        struct sv_net_topo_cfg t = topo1(kinds[i], 4);
        for (size_t j = 0; j < G_N_ELEMENTS(models); j++) {
            sv_net_topo_kind kd = kinds[i];
            sv_net_model md = models[j];
            SV_ASSERT_EQ_I64(run_same(&t, md, &cfg, SV_SYS_ALL_REDUCE, S),
                             5 * D + R_(S / 4) + 2 * hd_T(kd, md, 1, S / 2) +
                                 2 * hd_T(kd, md, 2, S / 4));
            SV_ASSERT_EQ_I64(run_same(&t, md, &cfg, SV_SYS_REDUCE_SCATTER, S),
                             3 * D + R_(S / 4) + hd_T(kd, md, 1, S / 2) + hd_T(kd, md, 2, S / 4));
            SV_ASSERT_EQ_I64(run_same(&t, md, &cfg, SV_SYS_ALL_GATHER, S),
                             3 * D + hd_T(kd, md, 2, S) + hd_T(kd, md, 1, 2 * S));
        }
    }
    /* n = 2: no packet is ever reduced (log2 n - 1 = 0 non-zero-latency packets):
     * AR = 3D + 2 a(S/2). */
    struct sv_net_topo_cfg t2 = topo1(SV_NET_TOPO_FULLY_CONNECTED, 2);
    SV_ASSERT_EQ_I64(run_same(&t2, SV_NET_MODEL_ANALYTICAL, &cfg, SV_SYS_ALL_REDUCE, MIB),
                     3 * D + 2 * a_(MIB / 2));
    sv_sys_cfg_clear(&cfg);
}

/* ---- doubleBinaryTree ------------------------------------------------------------------------
 * n = 4, chunk 1 uses the RootMax tree: in-order ids 0 (leaf), 1 (intermediate), 2 (leaf),
 * 3 (root, only child 1). Every message is the whole chunk S; every reduction costs D + R(S).
 * Analytical FullyConnected (T = a(S)):
 *   leaves send at D; 1 gets both at D+T, sends up at 2D+T+R; root 3 receives at 2D+2T+R and
 *   sends down at 3D+2T+2R (done); 1 receives at 3D+3T+2R, sends to both at 4D+3T+3R (done);
 *   leaves receive at 4D+4T+3R and finish D later.
 * Switch fifo (a = a(S), s = s(S)): the two leaf messages queue on 1's downlink (+s), as do
 *   1's two messages on its uplink (+s for the right child, NPU 2):
 *   3: 3D+4a+s+2R; 1: 4D+6a+s+3R; 0: 5D+8a+s+3R; 2: 5D+8a+2s+3R. */
static void test_dbt_1d(void)
{
    const sv_sys_impl_kind k[] = {SV_SYS_IMPL_DOUBLE_BINARY_TREE};
    struct sv_sys_cfg cfg;
    cfg_set(&cfg, 1, k, -1, 1);
    uint64_t S = MIB;
    int64_t R = R_(S), a = a_(S), s = s_(S);
    struct run r;
    const sv_net_topo_kind fcs[] = {SV_NET_TOPO_FULLY_CONNECTED};
    for (size_t i = 0; i < G_N_ELEMENTS(fcs); i++) {
        struct sv_net_topo_cfg t = topo1(fcs[i], 4);
        const sv_net_model models[] = {SV_NET_MODEL_ANALYTICAL, SV_NET_MODEL_FIFO};
        for (size_t j = 0; j < G_N_ELEMENTS(models); j++) {
            CU_ASSERT_TRUE(run_all(&t, models[j], &cfg, SV_SYS_ALL_REDUCE, S, &r));
            SV_ASSERT_EQ_I64(r.finish[3], 3 * D + 2 * a + 2 * R);
            SV_ASSERT_EQ_I64(r.finish[1], 4 * D + 3 * a + 3 * R);
            SV_ASSERT_EQ_I64(r.finish[0], 5 * D + 4 * a + 3 * R);
            SV_ASSERT_EQ_I64(r.finish[2], 5 * D + 4 * a + 3 * R);
        }
    }
    struct sv_net_topo_cfg sw = topo1(SV_NET_TOPO_SWITCH, 4);
    CU_ASSERT_TRUE(run_all(&sw, SV_NET_MODEL_ANALYTICAL, &cfg, SV_SYS_ALL_REDUCE, S, &r));
    int64_t T2 = h_(2, S);
    SV_ASSERT_EQ_I64(r.finish[3], 3 * D + 2 * T2 + 2 * R);
    SV_ASSERT_EQ_I64(r.finish[0], 5 * D + 4 * T2 + 3 * R);
    CU_ASSERT_TRUE(run_all(&sw, SV_NET_MODEL_FIFO, &cfg, SV_SYS_ALL_REDUCE, S, &r));
    SV_ASSERT_EQ_I64(r.finish[3], 3 * D + 4 * a + s + 2 * R);
    SV_ASSERT_EQ_I64(r.finish[1], 4 * D + 6 * a + s + 3 * R);
    SV_ASSERT_EQ_I64(r.finish[0], 5 * D + 8 * a + s + 3 * R);
    SV_ASSERT_EQ_I64(r.finish[2], 5 * D + 8 * a + 2 * s + 3 * R);
    /* Ring analytical: 0->1, 2->1 one hop, 1<->3 two hops (T2 = h(2,S)):
     *   3: D + a + D + R + T2 + D + R = 3D + a + T2 + 2R; 1: + T2 + D + R; leaves: + a + D. */
    struct sv_net_topo_cfg rg = topo1(SV_NET_TOPO_RING, 4);
    CU_ASSERT_TRUE(run_all(&rg, SV_NET_MODEL_ANALYTICAL, &cfg, SV_SYS_ALL_REDUCE, S, &r));
    SV_ASSERT_EQ_I64(r.finish[3], 3 * D + a + T2 + 2 * R);
    SV_ASSERT_EQ_I64(r.finish[1], 4 * D + a + 2 * T2 + 3 * R);
    SV_ASSERT_EQ_I64(r.finish[0], 5 * D + 2 * a + 2 * T2 + 3 * R);
    sv_sys_cfg_clear(&cfg);
}

/* Two chunks: the second uses the RootMin tree (root 0, intermediate 2, leaves 1, 3), and each
 * NPU starts it when its first chunk ends (F3 = 3D+2a+2R, F1 = 4D+3a+3R, F0 = F2 = 5D+4a+3R,
 * a = a(S/2), R = R(S/2)). Leaf 1's message reaches 2 exactly at F0, leaf 3's earlier; 2 sends
 * up at F0+D+R; root 0 sends down at F0+2D+2R+a (done); 2 sends to its children at
 * F0+3D+3R+2a (done); leaves 1, 3 finish at F0+4D+3R+3a. */
static void test_dbt_alternating_trees(void)
{
    const sv_sys_impl_kind k[] = {SV_SYS_IMPL_DOUBLE_BINARY_TREE};
    struct sv_sys_cfg cfg;
    cfg_set(&cfg, 1, k, -1, 2);
    struct sv_net_topo_cfg t = topo1(SV_NET_TOPO_FULLY_CONNECTED, 4);
    int64_t a = a_(MIB / 2), R = R_(MIB / 2);
    int64_t F0 = 5 * D + 4 * a + 3 * R;
    struct run r;
    CU_ASSERT_TRUE(run_all(&t, SV_NET_MODEL_ANALYTICAL, &cfg, SV_SYS_ALL_REDUCE, MIB, &r));
    SV_ASSERT_EQ_I64(r.finish[0], F0 + 2 * D + 2 * R + a);
    SV_ASSERT_EQ_I64(r.finish[2], F0 + 3 * D + 3 * R + 2 * a);
    SV_ASSERT_EQ_I64(r.finish[1], F0 + 4 * D + 3 * R + 3 * a);
    SV_ASSERT_EQ_I64(r.finish[3], F0 + 4 * D + 3 * R + 3 * a);
    sv_sys_cfg_clear(&cfg);
}

/* ---- 2-D mixes ---------------------------------------------------------------------------------
 * FullyConnected 4 (50 GB/s, 500 ns) x FullyConnected 2 (25 GB/s, 1000 ns), baseline, 1 chunk,
 * all-reduce of S: ring all-reduce over dim 0 then direct all-reduce over dim 1 (all-reduce
 * keeps the size):
 *   ring: 3 (a(S/4) + R(S/4) + D) + 3 (a(S/4) + D) + D
 *   direct (n = 2): 3D + R(S/2) + 2 floor(1000 + (S/2)/B1). */
static void test_2d_mixed(void)
{
    struct sv_net_topo_cfg t;
    memset(&t, 0, sizeof t);
    t.ndims = 2;
    t.kind[0] = t.kind[1] = SV_NET_TOPO_FULLY_CONNECTED;
    t.npus[0] = 4;
    t.npus[1] = 2;
    t.bandwidth_gbps[0] = GBPS;
    t.bandwidth_gbps[1] = 25;
    t.latency_ns[0] = LAT;
    t.latency_ns[1] = 1000;
    uint64_t S = MIB;
    const sv_sys_impl_kind rd[] = {SV_SYS_IMPL_RING, SV_SYS_IMPL_DIRECT};
    struct sv_sys_cfg cfg;
    cfg_set(&cfg, 2, rd, -1, 1);
    cfg.collective_optimization = SV_SYS_OPT_BASELINE;
    int64_t ring = 3 * (a_(S / 4) + R_(S / 4) + D) + 3 * (a_(S / 4) + D) + D;
    int64_t direct =
        3 * D + R_(S / 2) + 2 * (int64_t)floor(1000 + (double)(S / 2) / (25 * 1073741824.0 / 1e9));
    SV_ASSERT_EQ_I64(run_same(&t, SV_NET_MODEL_ANALYTICAL, &cfg, SV_SYS_ALL_REDUCE, S),
                     ring + direct);
    /* Other mixes and localBWAware, several chunks: every NPU must finish at the same time. */
    const sv_sys_impl_kind mixes[][2] = {
        {SV_SYS_IMPL_DIRECT, SV_SYS_IMPL_RING},
        {SV_SYS_IMPL_HALVING_DOUBLING, SV_SYS_IMPL_DIRECT},
        {SV_SYS_IMPL_RING, SV_SYS_IMPL_HALVING_DOUBLING},
    };
    const sv_net_model models[] = {SV_NET_MODEL_ANALYTICAL, SV_NET_MODEL_FIFO};
    const sv_sys_coll_type types[] = {SV_SYS_ALL_REDUCE, SV_SYS_ALL_GATHER, SV_SYS_REDUCE_SCATTER};
    for (size_t i = 0; i < G_N_ELEMENTS(mixes); i++) {
        for (int opt = 0; opt < 2; opt++) {
            sv_sys_cfg_clear(&cfg);
            cfg_set(&cfg, 2, mixes[i], -1, 4);
            cfg.collective_optimization = opt ? SV_SYS_OPT_LOCAL_BW_AWARE : SV_SYS_OPT_BASELINE;
            for (size_t j = 0; j < G_N_ELEMENTS(models); j++)
                for (size_t y = 0; y < G_N_ELEMENTS(types); y++)
                    CU_ASSERT_TRUE(run_same(&t, models[j], &cfg, types[y], S) > 0);
        }
    }
    /* oneDirect: a single ring of all 8 NPUs; all-to-all on FullyConnected x FullyConnected
     * finishes everywhere at once. */
    const sv_sys_impl_kind od[] = {SV_SYS_IMPL_ONE_DIRECT};
    sv_sys_cfg_clear(&cfg);
    cfg_set(&cfg, 1, od, -1, 1);
    CU_ASSERT_TRUE(run_same(&t, SV_NET_MODEL_ANALYTICAL, &cfg, SV_SYS_ALL_TO_ALL, S) > 0);
    sv_sys_cfg_clear(&cfg);
}

/* servesim's direct exchange on a communicator group (cfg.group_impl, the serving MoE
 * all-to-all): 8 NPUs, groups {0, 2, 4, 6} and {1, 3, 5, 7} each all-to-all S = 1 MiB at once.
 * Every member sends m = S/4 to its 3 peers together, as direct_1d over 4 NPUs: D + T + D with
 * FullyConnected T = a(m) (a link per pair; the groups share none), Switch analytical h(2, m).
 * The default group ring (ASTRA-sim's CommunicatorGroup) relays instead: n(n - 1)/2 = 6
 * sequential steps of a(m) + D, then D. Other kinds than ring and direct are refused for
 * groups. */
static sv_time run_groups(sv_net_topo_kind kind, sv_net_model model, const struct sv_sys_cfg *cfg)
{
    struct sv_net_topo_cfg t = topo1(kind, 8);
    struct run r;
    memset(&r, 0, sizeof r);
    GError *err = NULL;
    sv_engine *eng = sv_engine_new(1);
    sv_net *net = sv_net_new(eng, &t, model, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(net);
    sv_sys_groups *g = sv_sys_groups_new();
    const int even[] = {0, 2, 4, 6}, odd[] = {1, 3, 5, 7};
    CU_ASSERT_TRUE(sv_sys_groups_add(g, 1, even, 4, NULL));
    CU_ASSERT_TRUE(sv_sys_groups_add(g, 2, odd, 4, NULL));
    sv_sys *sys = sv_sys_new(net, cfg, g, &err);
    sv_sys_groups_free(g);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sys);
    for (int i = 0; i < 8; i++)
        CU_ASSERT_TRUE(sv_sys_coll_start(sys, i, SV_SYS_ALL_TO_ALL, MIB, NULL, 0, 1 + i % 2, 0,
                                         on_done, &r, (uint64_t)i, &err));
    sv_engine_run(eng, SV_TIME_MAX);
    sv_time t0 = r.done_count[0] == 1 ? r.finish[0] : -1;
    for (int i = 1; i < 8; i++)
        if (r.done_count[i] != 1 || r.finish[i] != t0)
            t0 = -1;
    CU_ASSERT_EQUAL(sv_sys_coll_active(sys), 0);
    sv_sys_free(sys);
    sv_net_free(net);
    sv_engine_free(eng);
    return t0;
}

static void test_direct_group(void)
{
    const sv_sys_impl_kind k[] = {SV_SYS_IMPL_RING};
    struct sv_sys_cfg cfg;
    cfg_set(&cfg, 1, k, -1, 1);
    sv_time ring = run_groups(SV_NET_TOPO_FULLY_CONNECTED, SV_NET_MODEL_ANALYTICAL, &cfg);
    cfg.group_impl[SV_SYS_ALL_TO_ALL] = SV_SYS_IMPL_DIRECT;
    uint64_t m = MIB / 4;
    SV_ASSERT_EQ_I64(run_groups(SV_NET_TOPO_FULLY_CONNECTED, SV_NET_MODEL_ANALYTICAL, &cfg),
                     2 * D + a_(m));
    SV_ASSERT_EQ_I64(run_groups(SV_NET_TOPO_FULLY_CONNECTED, SV_NET_MODEL_FIFO, &cfg),
                     2 * D + a_(m));
    SV_ASSERT_EQ_I64(run_groups(SV_NET_TOPO_SWITCH, SV_NET_MODEL_ANALYTICAL, &cfg),
                     2 * D + h_(2, m));
    SV_ASSERT_EQ_I64(ring, 6 * (a_(m) + D) + D);
    cfg.group_impl[SV_SYS_ALL_TO_ALL] = SV_SYS_IMPL_HALVING_DOUBLING;
    GError *err = NULL;
    sv_engine *eng = sv_engine_new(1);
    struct sv_net_topo_cfg t = topo1(SV_NET_TOPO_FULLY_CONNECTED, 8);
    sv_net *net = sv_net_new(eng, &t, SV_NET_MODEL_ANALYTICAL, &err);
    CU_ASSERT_PTR_NULL(sv_sys_new(net, &cfg, NULL, &err));
    CU_ASSERT_TRUE(err != NULL && strstr(err->message, "communicator group") != NULL);
    g_clear_error(&err);
    sv_net_free(net);
    sv_engine_free(eng);
    sv_sys_cfg_clear(&cfg);
}

/* Combinations ASTRA-sim cannot run are refused with a GError. */
static void test_refused(void)
{
    GError *err = NULL;
    sv_engine *eng = sv_engine_new(1);
    struct sv_sys_cfg cfg;
    /* halvingDoubling / doubleBinaryTree over 3 NPUs */
    struct sv_net_topo_cfg t3 = topo1(SV_NET_TOPO_RING, 3);
    sv_net *net = sv_net_new(eng, &t3, SV_NET_MODEL_ANALYTICAL, &err);
    const sv_sys_impl_kind hd[] = {SV_SYS_IMPL_HALVING_DOUBLING};
    cfg_set(&cfg, 1, hd, -1, 1);
    CU_ASSERT_PTR_NULL(sv_sys_new(net, &cfg, NULL, &err));
    CU_ASSERT_TRUE(err != NULL && strstr(err->message, "power-of-two") != NULL);
    g_clear_error(&err);
    sv_sys_cfg_clear(&cfg);
    const sv_sys_impl_kind dbt[] = {SV_SYS_IMPL_DOUBLE_BINARY_TREE};
    cfg_set(&cfg, 1, dbt, -1, 1);
    CU_ASSERT_PTR_NULL(sv_sys_new(net, &cfg, NULL, &err));
    CU_ASSERT_TRUE(err != NULL && strstr(err->message, "power-of-two") != NULL);
    g_clear_error(&err);
    sv_sys_cfg_clear(&cfg);
    sv_net_free(net);
    /* halvingDoubling all-to-all */
    struct sv_net_topo_cfg t4 = topo1(SV_NET_TOPO_RING, 4);
    net = sv_net_new(eng, &t4, SV_NET_MODEL_ANALYTICAL, &err);
    cfg_set(&cfg, 1, hd, -1, 1);
    cfg.impl[SV_SYS_ALL_TO_ALL][0].kind = SV_SYS_IMPL_HALVING_DOUBLING;
    CU_ASSERT_PTR_NULL(sv_sys_new(net, &cfg, NULL, &err));
    CU_ASSERT_TRUE(err != NULL && strstr(err->message, "all-to-all") != NULL);
    g_clear_error(&err);
    sv_sys_cfg_clear(&cfg);
    sv_net_free(net);
    /* doubleBinaryTree as the only entry of a 2-D network */
    struct sv_net_topo_cfg t22 = topo1(SV_NET_TOPO_RING, 4);
    t22.ndims = 2;
    t22.kind[1] = SV_NET_TOPO_SWITCH;
    t22.npus[1] = 2;
    t22.bandwidth_gbps[1] = GBPS;
    t22.latency_ns[1] = LAT;
    net = sv_net_new(eng, &t22, SV_NET_MODEL_ANALYTICAL, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(net);
    cfg_set(&cfg, 1, dbt, -1, 1);
    CU_ASSERT_PTR_NULL(sv_sys_new(net, &cfg, NULL, &err));
    CU_ASSERT_TRUE(err != NULL && strstr(err->message, "last listed") != NULL);
    g_clear_error(&err);
    sv_sys_cfg_clear(&cfg);
    sv_net_free(net);
    sv_engine_free(eng);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"direct_1d", test_direct_1d},
        {"direct_window", test_direct_window},
        {"halving_doubling_1d", test_hd_1d},
        {"double_binary_tree_1d", test_dbt_1d},
        {"double_binary_tree_alternating", test_dbt_alternating_trees},
        {"mixed_2d", test_2d_mixed},
        {"direct_group", test_direct_group},
        {"refused", test_refused},
        {NULL, NULL},
    };
    sv_test_add_suite("collective_algos", cases);
    return sv_test_run();
}
