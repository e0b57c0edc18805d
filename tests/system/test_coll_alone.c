/* sv_sys_coll_alone_ns (system/alone.c) and sv_net_msg_alone_ns (network/alone.c): the closed
 * form of an uncontended ring all-reduce equals, to the nanosecond, the finish time of the same
 * all-reduce run message by message through the system layer and the network, under every timing
 * model, on FullyConnected, Switch and Ring networks, 1-D and 2-D, for communicator groups and the
 * whole machine, at several sizes, start times, link latencies, endpoint delays and local memory
 * bandwidths. The expected value is the message-level run, an independent computation (events,
 * matching, flows); the closed form never runs them. Cases the form does not cover must say so. */
#include "system/system.h"
#include "tests/test_util.h"

#include <string.h>

static const sv_net_model models[] = {SV_NET_MODEL_ANALYTICAL, SV_NET_MODEL_FIFO, SV_NET_MODEL_FLOW,
                                      SV_NET_MODEL_IDEAL};

struct group {
    int n;
    int members[16];
};

struct start {
    sv_sys *sys;
    const struct group *g;
    int group_id;
    uint64_t bytes;
    sv_time finish[64];
    int done[64];
};

static void on_done(sv_engine *eng, void *ctx, uint64_t arg)
{
    struct start *s = ctx;
    s->finish[arg] = sv_engine_now(eng);
    s->done[arg]++;
}

static void on_issue(sv_engine *eng, void *ctx, uint64_t arg)
{
    struct start *s = ctx;
    GError *err = NULL;
    for (int i = 0; i < s->g->n; i++) {
        int npu = s->g->members[i];
        CU_ASSERT_TRUE(sv_sys_coll_start(s->sys, npu, SV_SYS_ALL_REDUCE, s->bytes, NULL, 0,
                                         s->group_id, 0, on_done, s, (uint64_t)npu, &err));
    }
}

/* Message-level run: group `g` (id 1; or the whole machine when g->n == 0) all-reduces `bytes`
 * starting at t0. Returns finish - t0 (-1 if the members disagree), and the closed form in
 * *alone (-1 when not covered). */
static sv_time run_pair(const struct sv_net_topo_cfg *topo, sv_net_model model,
                        const struct sv_sys_cfg *cfg, const struct group *g, uint64_t bytes,
                        sv_time t0, sv_time *alone)
{
    GError *err = NULL;
    sv_engine *eng = sv_engine_new(1);
    sv_net *net = sv_net_new(eng, topo, model, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(net);
    sv_sys_groups *groups = sv_sys_groups_new();
    struct group all = {.n = sv_net_npus(net)};
    for (int i = 0; i < all.n; i++)
        all.members[i] = i;
    int gid = 0;
    if (g->n > 0) {
        CU_ASSERT_TRUE_FATAL(sv_sys_groups_add(groups, 1, g->members, g->n, &err));
        gid = 1;
    } else {
        g = &all;
    }
    sv_sys *sys = sv_sys_new(net, cfg, groups, &err);
    sv_sys_groups_free(groups);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sys);
    sv_time a;
    *alone = sv_sys_coll_alone_ns(sys, SV_SYS_ALL_REDUCE, bytes, gid, &a) ? a : -1;
    struct start s = {.sys = sys, .g = g, .group_id = gid, .bytes = bytes};
    sv_engine_schedule(eng, t0, SV_PRIO_DEFAULT, on_issue, &s, 0);
    sv_engine_run(eng, SV_TIME_MAX);
    sv_time t = s.finish[g->members[0]] - t0;
    for (int i = 0; i < g->n; i++)
        if (s.done[g->members[i]] != 1 || s.finish[g->members[i]] - t0 != t)
            t = -1;
    sv_sys_free(sys);
    sv_net_free(net);
    sv_engine_free(eng);
    return t;
}

static struct sv_net_topo_cfg topo(int ndims, sv_net_topo_kind k0, int n0, double bw0, double l0,
                                   sv_net_topo_kind k1, int n1, double bw1, double l1)
{
    struct sv_net_topo_cfg t;
    memset(&t, 0, sizeof t);
    t.ndims = ndims;
    t.kind[0] = k0;
    t.npus[0] = n0;
    t.bandwidth_gbps[0] = bw0;
    t.latency_ns[0] = l0;
    t.kind[1] = k1;
    t.npus[1] = n1;
    t.bandwidth_gbps[1] = bw1;
    t.latency_ns[1] = l1;
    return t;
}

static void ring_cfg(struct sv_sys_cfg *c, int ndims)
{
    sv_sys_cfg_init(c);
    c->preferred_dataset_splits = 1;
    for (int d = 0; d < ndims; d++)
        c->impl[SV_SYS_ALL_REDUCE][d] = (struct sv_sys_impl){SV_SYS_IMPL_RING, -1};
    c->n_impl[SV_SYS_ALL_REDUCE] = ndims;
}

static struct group span(int first, int n)
{
    struct group g = {.n = n};
    for (int i = 0; i < n; i++)
        g.members[i] = first + i;
    return g;
}

/* Every covered case: closed form == message level; returns how many were covered. */
static int sweep(const struct sv_net_topo_cfg *t, const struct sv_sys_cfg *cfg,
                 const struct group *gs, int ngs)
{
    static const uint64_t sizes[] = {3, 16384, 1048576, 1234567, 268435456};
    static const sv_time starts[] = {0, 123456789, 2503000000017};
    int covered = 0;
    for (size_t m = 0; m < G_N_ELEMENTS(models); m++)
        for (int g = 0; g < ngs; g++)
            for (size_t s = 0; s < G_N_ELEMENTS(sizes); s++)
                for (size_t k = 0; k < G_N_ELEMENTS(starts); k++) {
                    sv_time alone;
                    sv_time t_msg =
                        run_pair(t, models[m], cfg, &gs[g], sizes[s], starts[k], &alone);
                    if (alone < 0)
                        continue;
                    covered++;
                    CU_ASSERT_TRUE(t_msg > 0);
                    if (alone != t_msg)
                        fprintf(stderr,
                                "model %s group %d size %" G_GUINT64_FORMAT
                                " start %" G_GINT64_FORMAT ": alone %" G_GINT64_FORMAT
                                " message level %" G_GINT64_FORMAT "\n",
                                sv_net_model_name(models[m]), g, sizes[s], starts[k], alone, t_msg);
                    SV_ASSERT_EQ_I64(alone, t_msg);
                }
    return covered;
}

/* TP groups inside one FullyConnected / Switch node, and the whole node (topology path). */
static void test_one_node(void)
{
    const struct group gs[] = {span(0, 2), span(2, 2), span(4, 4), span(0, 8), {.n = 0}};
    int n = (int)G_N_ELEMENTS(gs);
    struct sv_sys_cfg c;
    static const double lats[] = {0, 500, 1900};
    for (size_t l = 0; l < G_N_ELEMENTS(lats); l++) {
        struct sv_net_topo_cfg fc =
            topo(1, SV_NET_TOPO_FULLY_CONNECTED, 8, 450, lats[l], 0, 0, 0, 0);
        struct sv_net_topo_cfg sw = topo(1, SV_NET_TOPO_SWITCH, 8, 900, lats[l], 0, 0, 0, 0);
        ring_cfg(&c, 1);
        /* every case is covered: 4 models x 5 groups x 5 sizes x 3 starts */
        SV_ASSERT_EQ_I64(sweep(&fc, &c, gs, n), 4 * n * 5 * 3);
        SV_ASSERT_EQ_I64(sweep(&sw, &c, gs, n), 4 * n * 5 * 3);
        /* endpoint delay, injection scale and local memory bandwidth */
        c.endpoint_delay_ns = 100;
        c.injection_scale = 1.5;
        c.local_mem_bw = 1600;
        SV_ASSERT_EQ_I64(sweep(&fc, &c, gs, n), 4 * n * 5 * 3);
        sv_sys_cfg_clear(&c);
    }
}

/* A Ring dimension: an adjacent pair and the whole ring (every step one hop) are covered; a
 * 4-member ring in a ring of 8 is not (its closing step crosses 3 links, so its members finish at
 * different times). */
static void test_ring(void)
{
    struct sv_net_topo_cfg rg = topo(1, SV_NET_TOPO_RING, 8, 100, 500, 0, 0, 0, 0);
    struct sv_sys_cfg c;
    ring_cfg(&c, 1);
    const struct group pair[] = {span(2, 2), {.n = 0}};
    SV_ASSERT_EQ_I64(sweep(&rg, &c, pair, 2), 4 * 2 * 5 * 3);
    const struct group four[] = {span(0, 4)};
    SV_ASSERT_EQ_I64(sweep(&rg, &c, four, 1), 0);
    sv_sys_cfg_clear(&c);
}

/* Two dimensions (4 devices per node, 2 nodes): groups inside a node and across the nodes are
 * covered; the whole machine (two phases) is not. */
static void test_two_dims(void)
{
    struct sv_net_topo_cfg t =
        topo(2, SV_NET_TOPO_FULLY_CONNECTED, 4, 450, 500, SV_NET_TOPO_SWITCH, 2, 50, 2000);
    struct sv_sys_cfg c;
    ring_cfg(&c, 2);
    const struct group in_node[] = {span(0, 2), span(4, 4)};
    SV_ASSERT_EQ_I64(sweep(&t, &c, in_node, 2), 4 * 2 * 5 * 3);
    /* {3, 4}: both ways cross one device hop and one node hop */
    const struct group across[] = {span(3, 2)};
    SV_ASSERT_EQ_I64(sweep(&t, &c, across, 1), 4 * 1 * 5 * 3);
    const struct group whole[] = {{.n = 0}};
    SV_ASSERT_EQ_I64(sweep(&t, &c, whole, 1), 0);
    sv_sys_cfg_clear(&c);
}

/* By hand: the quick form's TP 8 on one H100 node (FullyConnected, 450 GB/s = 483.18 B/ns per
 * link, 1,900 ns per hop; the TP group is the machine: D = endpoint-delay 10, R = 3 x 10), a
 * decode batch of 32 tokens of Llama-3.1-70B: 32 x 8192 x 2 = 524,288 B, m = 65,536 B,
 * T = trunc(65,536 / 483.18 + 1,900) = trunc(2,035.63) = 2,035, so
 * t = 10 + 14 (2,035 + 10) + 7 x 30 = 28,850 ns; the message-level run agrees. */
static void test_hand(void)
{
    struct sv_net_topo_cfg fc = topo(1, SV_NET_TOPO_FULLY_CONNECTED, 8, 450, 1900, 0, 0, 0, 0);
    struct sv_sys_cfg c;
    ring_cfg(&c, 1);
    const struct group whole = {.n = 0};
    sv_time alone;
    SV_ASSERT_EQ_I64(run_pair(&fc, SV_NET_MODEL_FLOW, &c, &whole, 524288, 0, &alone), 28850);
    SV_ASSERT_EQ_I64(alone, 28850);
    sv_sys_cfg_clear(&c);
}

/* Not covered: several chunks, other collective types, a direct group exchange. */
static void test_not_covered(void)
{
    GError *err = NULL;
    sv_engine *eng = sv_engine_new(1);
    struct sv_net_topo_cfg t = topo(1, SV_NET_TOPO_FULLY_CONNECTED, 4, 100, 10, 0, 0, 0, 0);
    sv_net *net = sv_net_new(eng, &t, SV_NET_MODEL_FLOW, &err);
    sv_sys_groups *groups = sv_sys_groups_new();
    int m[2] = {0, 1};
    CU_ASSERT_TRUE(sv_sys_groups_add(groups, 1, m, 2, &err));
    struct sv_sys_cfg c;
    ring_cfg(&c, 1);
    for (int k = 0; k < SV_SYS_TYPE_COUNT; k++) {
        c.n_impl[k] = 1;
        c.impl[k][0] = (struct sv_sys_impl){SV_SYS_IMPL_RING, -1};
    }
    sv_time ns;
    c.preferred_dataset_splits = 4;
    sv_sys *sys = sv_sys_new(net, &c, groups, &err);
    CU_ASSERT_FALSE(sv_sys_coll_alone_ns(sys, SV_SYS_ALL_REDUCE, 1 << 20, 1, &ns));
    sv_sys_free(sys);
    c.preferred_dataset_splits = 1;
    c.group_impl[SV_SYS_ALL_REDUCE] = SV_SYS_IMPL_DIRECT;
    sys = sv_sys_new(net, &c, groups, &err);
    CU_ASSERT_FALSE(sv_sys_coll_alone_ns(sys, SV_SYS_ALL_REDUCE, 1 << 20, 1, &ns));
    CU_ASSERT_FALSE(sv_sys_coll_alone_ns(sys, SV_SYS_ALL_GATHER, 1 << 20, 0, &ns));
    CU_ASSERT_TRUE(sv_sys_coll_alone_ns(sys, SV_SYS_ALL_REDUCE, 1 << 20, 0, &ns));
    CU_ASSERT_FALSE(sv_sys_coll_alone_ns(sys, SV_SYS_ALL_REDUCE, 1 << 20, 7, &ns)); /* no group */
    sv_sys_free(sys);
    sv_sys_cfg_clear(&c);
    sv_sys_groups_free(groups);
    sv_net_free(net);
    sv_engine_free(eng);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"one_node", test_one_node},       {"ring", test_ring},
        {"two_dims", test_two_dims},       {"hand", test_hand},
        {"not_covered", test_not_covered}, {NULL, NULL},
    };
    sv_test_add_suite("coll_alone", cases);
    return sv_test_run();
}
