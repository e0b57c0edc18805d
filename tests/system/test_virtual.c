/* Collective phases without messages (system/virtual.c, docs/collectives.md "Closed form")
 * against the same runs with every message sent (sv_sys_cfg.fast_collectives FALSE), the
 * reference: for every topology (Ring, FullyConnected, Switch, several dimensions), every
 * algorithm (ring, direct with and without a window, halving-doubling, double binary tree,
 * communicator-group rings and direct exchanges), every network model and collective type,
 * each NPU's completion times, the network statistics and every arrival the observer sees must
 * be the same to the nanosecond, whether the members start together (closed form), apart by
 * less than an endpoint delay or by much more (replayed alone), one after another in chains,
 * or with several chunks in flight on the same links (switched to messages where they meet).
 * Each case also checks that the fast path was taken (so that equality is not the trivial one
 * of two runs with messages). Under contention (traffic of other transfers on a collective's
 * links while it runs) the two must agree within the bound docs/collectives.md states. */
#include "system/system.h"
#include "tests/test_util.h"

#include <string.h>

#define MAXN 64
#define MAXC 6
#define MAXS 16

struct sc {
    struct sv_net_topo_cfg topo;
    const struct sv_net_graph_cfg *graph; /* set: the network is this graph, not `topo` */
    sv_net_model model;
    struct sv_sys_cfg cfg;
    sv_sys_groups *groups;
    int group;     /* communicator group of every collective (0: all NPUs) */
    int gid[MAXN]; /* per NPU, when set: its group (overrides `group`) */
    int ncoll;     /* collectives per NPU, back to back */
    sv_sys_coll_type type[MAXC];
    uint64_t bytes;
    sv_time start[MAXN]; /* per NPU; -1 = the NPU takes no part */
    int nsend;           /* point-to-point transfers of other traffic */
    struct {
        sv_time at;
        int src, dst;
        uint64_t bytes;
        gboolean late; /* scheduled from an event 1 ns earlier: after that tick's earlier events */
    } send[MAXS];
};

struct deliv {
    sv_time now;
    int src, dst;
    uint64_t bytes;
};

struct outcome {
    sv_time done[MAXN][MAXC];
    sv_time send_done[MAXS], recv_done[MAXS];
    struct sv_net_stats st;
    struct sv_sys_virt_stats v;
    GArray *deliv;
    sv_time end;
    GArray *pending; /* sv_sys_p2p_pending at the end */
    /* with a tap (run_sc_tapped): what it saw */
    GArray *tap_deliv;
    uint64_t tap_starts;
    int tap_bad; /* deliveries before their send, unlabelled messages, empty routes */
};

struct ctx {
    const struct sc *sc;
    struct outcome *o;
    sv_sys *sys;
    int pos[MAXN];
};

static void on_coll_done(sv_engine *eng, void *c, uint64_t arg)
{
    struct ctx *x = c;
    int npu = (int)arg;
    x->o->done[npu][x->pos[npu]] = sv_engine_now(eng);
    int g = x->sc->gid[npu] > 0 ? x->sc->gid[npu] : x->sc->group;
    if (++x->pos[npu] < x->sc->ncoll)
        CU_ASSERT_TRUE(sv_sys_coll_start(x->sys, npu, x->sc->type[x->pos[npu]], x->sc->bytes, NULL,
                                         0, g, 0, on_coll_done, x, arg, NULL));
}

static void on_start(sv_engine *eng, void *c, uint64_t arg)
{
    (void)eng;
    struct ctx *x = c;
    int g = x->sc->gid[arg] > 0 ? x->sc->gid[arg] : x->sc->group;
    CU_ASSERT_TRUE(sv_sys_coll_start(x->sys, (int)arg, x->sc->type[0], x->sc->bytes, NULL, 0, g, 0,
                                     on_coll_done, x, arg, NULL));
}

static void on_send_done(sv_engine *eng, void *c, uint64_t arg)
{
    ((struct ctx *)c)->o->send_done[arg] = sv_engine_now(eng);
}

static void on_recv_done(sv_engine *eng, void *c, uint64_t arg)
{
    ((struct ctx *)c)->o->recv_done[arg] = sv_engine_now(eng);
}

static void on_send(sv_engine *eng, void *c, uint64_t arg)
{
    (void)eng;
    struct ctx *x = c;
    const struct sc *sc = x->sc;
    int k = (int)arg;
    CU_ASSERT_TRUE(sv_sys_send(x->sys, sc->send[k].src, sc->send[k].dst, 7000 + k,
                               sc->send[k].bytes, on_send_done, x, arg, NULL));
}

static void on_send_pre(sv_engine *eng, void *c, uint64_t arg)
{
    sv_engine_schedule(eng, sv_engine_now(eng) + 1, SV_PRIO_DEFAULT, on_send, c, arg);
}

static void observe(void *c, const struct sv_net_delivery *d)
{
    struct deliv x = {d->now, d->src, d->dst, d->bytes};
    g_array_append_val(((struct outcome *)c)->deliv, x);
}

static gint deliv_cmp(gconstpointer a, gconstpointer b)
{
    const struct deliv *x = a, *y = b;
    if (x->now != y->now)
        return x->now < y->now ? -1 : 1;
    if (x->src != y->src)
        return x->src - y->src;
    if (x->dst != y->dst)
        return x->dst - y->dst;
    return x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
}

static void tap_start(void *c, const struct sv_net_tap_msg *m)
{
    struct outcome *o = c;
    o->tap_bad += m->nlinks < 1 || m->id != o->tap_starts;
    o->tap_starts++;
}

static void tap_delivery(void *c, const struct sv_net_tap_msg *m, sv_time now)
{
    struct outcome *o = c;
    o->tap_bad += m->sent_ns > now || m->nlinks < 1 || m->name == NULL ||
                  (m->kind != SV_NET_MSG_COLLECTIVE && m->kind != SV_NET_MSG_SEND);
    struct deliv x = {now, m->src, m->dst, m->bytes};
    g_array_append_val(o->tap_deliv, x);
}

static void run_sc_tapped(const struct sc *sc, gboolean fast, gboolean observed, gboolean tapped,
                          struct outcome *o)
{
    memset(o, 0, sizeof *o);
    o->tap_deliv = g_array_new(FALSE, FALSE, sizeof(struct deliv));
    o->deliv = g_array_new(FALSE, FALSE, sizeof(struct deliv));
    for (int i = 0; i < MAXN; i++)
        for (int c = 0; c < MAXC; c++)
            o->done[i][c] = -1;
    for (int k = 0; k < MAXS; k++)
        o->send_done[k] = o->recv_done[k] = -1;
    GError *err = NULL;
    sv_engine *eng = sv_engine_new(1);
    sv_net *net = sc->graph != NULL ? sv_net_new_graph(eng, sc->graph, sc->model, &err)
                                    : sv_net_new(eng, &sc->topo, sc->model, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(net);
    struct sv_sys_cfg cfg = sc->cfg;
    cfg.fast_collectives = fast;
    sv_sys *sys = sv_sys_new(net, &cfg, sc->groups, &err);
    if (sys == NULL)
        fprintf(stderr, "sv_sys_new: %s\n", err->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sys);
    if (observed)
        sv_net_set_observer(net, observe, o);
    if (tapped)
        sv_net_tap_add(net, &(struct sv_net_tap){
                                .on_start = tap_start, .on_delivery = tap_delivery, .ctx = o});
    struct ctx x = {.sc = sc, .o = o, .sys = sys};
    int n = sv_net_npus(net);
    for (int i = 0; i < n; i++)
        if (sc->start[i] >= 0)
            sv_engine_schedule(eng, sc->start[i], SV_PRIO_DEFAULT, on_start, &x, (uint64_t)i);
    for (int k = 0; k < sc->nsend; k++) {
        if (sc->send[k].late && sc->send[k].at > 0)
            sv_engine_schedule(eng, sc->send[k].at - 1, SV_PRIO_DEFAULT, on_send_pre, &x,
                               (uint64_t)k);
        else
            sv_engine_schedule(eng, sc->send[k].at, SV_PRIO_DEFAULT, on_send, &x, (uint64_t)k);
        CU_ASSERT_TRUE(sv_sys_recv(sys, sc->send[k].dst, sc->send[k].src, 7000 + k,
                                   sc->send[k].bytes, on_recv_done, &x, (uint64_t)k, NULL));
    }
    sv_engine_run(eng, SV_TIME_MAX);
    o->end = sv_engine_now(eng);
    sv_sys_settle(sys);
    o->pending = sv_sys_p2p_pending(sys);
    sv_net_get_stats(net, &o->st);
    sv_sys_get_virt_stats(sys, &o->v);
    g_array_sort(o->deliv, deliv_cmp);
    g_array_sort(o->tap_deliv, deliv_cmp);
    sv_sys_free(sys);
    sv_net_free(net);
    sv_engine_free(eng);
}

static void run_sc(const struct sc *sc, gboolean fast, gboolean observed, struct outcome *o)
{
    run_sc_tapped(sc, fast, observed, FALSE, o);
    g_array_free(o->tap_deliv, TRUE);
    o->tap_deliv = NULL;
}

/* Largest |fast - message| over every completion; -1 when one run completed something the other
 * did not. */
static sv_time max_diff(const struct sc *sc, const struct outcome *a, const struct outcome *b)
{
    sv_time worst = 0;
    for (int i = 0; i < MAXN; i++) {
        for (int c = 0; c < sc->ncoll; c++) {
            if ((a->done[i][c] < 0) != (b->done[i][c] < 0))
                return -1;
            worst = MAX(worst, ABS(a->done[i][c] - b->done[i][c]));
        }
    }
    for (int k = 0; k < sc->nsend; k++) {
        if ((a->send_done[k] < 0) != (b->send_done[k] < 0) ||
            (a->recv_done[k] < 0) != (b->recv_done[k] < 0))
            return -1;
        worst = MAX(worst, ABS(a->send_done[k] - b->send_done[k]));
        worst = MAX(worst, ABS(a->recv_done[k] - b->recv_done[k]));
    }
    return worst;
}

static int failures;

static void add_stats(struct sv_sys_virt_stats *tot, const struct sv_sys_virt_stats *v)
{
    tot->closed_form += v->closed_form;
    tot->replayed += v->replayed;
    tot->memo_hits += v->memo_hits;
    tot->contended += v->contended;
    tot->gave_up += v->gave_up;
    tot->messages += v->messages;
}

/* fast == message to the nanosecond: every completion, the statistics, every arrival seen by an
 * observer. Returns the fast run's statistics in *v. */
static void same(const char *what, const struct sc *sc, struct sv_sys_virt_stats *v)
{
    struct outcome f, m;
    run_sc(sc, TRUE, TRUE, &f);
    run_sc(sc, FALSE, TRUE, &m);
    gboolean ok = max_diff(sc, &f, &m) == 0 && f.st.messages == m.st.messages &&
                  f.st.bytes_sent == m.st.bytes_sent &&
                  f.st.bytes_delivered == m.st.bytes_delivered &&
                  f.st.link_bytes == m.st.link_bytes &&
                  f.st.link_transfers == m.st.link_transfers && f.deliv->len == m.deliv->len;
    for (guint i = 0; ok && i < f.deliv->len; i++)
        ok = deliv_cmp(&g_array_index(f.deliv, struct deliv, i),
                       &g_array_index(m.deliv, struct deliv, i)) == 0;
    /* without an observer the phases run tentatively past a late start: the same times */
    struct outcome f2;
    run_sc(sc, TRUE, FALSE, &f2);
    ok = ok && max_diff(sc, &f2, &m) == 0;
    if (!ok && failures++ < 10) {
        fprintf(stderr,
                "\n%s: fast and message runs differ (max diff %lld ns; messages %llu / %llu, "
                "arrivals %u / %u)\n",
                what, (long long)max_diff(sc, &f, &m), (unsigned long long)f.st.messages,
                (unsigned long long)m.st.messages, f.deliv->len, m.deliv->len);
        fprintf(
            stderr,
            "  link bytes %llu / %llu, transfers %llu / %llu, without observer: max diff %lld\n",
            (unsigned long long)f.st.link_bytes, (unsigned long long)m.st.link_bytes,
            (unsigned long long)f.st.link_transfers, (unsigned long long)m.st.link_transfers,
            (long long)max_diff(sc, &f2, &m));
        for (int i = 0; i < 8; i++)
            fprintf(stderr, "  npu %d: %lld / %lld (no observer %lld)\n", i,
                    (long long)f.done[i][0], (long long)m.done[i][0], (long long)f2.done[i][0]);
    }
    CU_ASSERT_TRUE(ok);
    /* the message run sent everything; the fast one did not, unless it had to */
    CU_ASSERT_EQUAL(m.v.closed_form + m.v.replayed + m.v.memo_hits, 0);
    if (v != NULL) {
        *v = f.v;
        v->closed_form += f2.v.closed_form;
        v->replayed += f2.v.replayed;
        v->memo_hits += f2.v.memo_hits;
        v->contended += f2.v.contended;
        v->gave_up += f2.v.gave_up;
        v->messages += f2.v.messages;
    }
    g_array_free(f.deliv, TRUE);
    g_array_free(f2.deliv, TRUE);
    g_array_free(m.deliv, TRUE);
    g_array_free(f.pending, TRUE);
    g_array_free(f2.pending, TRUE);
    g_array_free(m.pending, TRUE);
}

static struct sv_net_topo_cfg topo(int ndims, const sv_net_topo_kind *kind, const int *npus)
{
    struct sv_net_topo_cfg t;
    memset(&t, 0, sizeof t);
    t.ndims = ndims;
    for (int d = 0; d < ndims; d++) {
        t.kind[d] = kind[d];
        t.npus[d] = npus[d];
        /* distinct per dimension, so that routes over several dimensions take unequal times */
        t.bandwidth_gbps[d] = d == 0 ? 50.0 : 25.0 / d;
        t.latency_ns[d] = d == 0 ? 500.0 : 1000.0 * d + 7;
    }
    return t;
}

static void sc_init(struct sc *sc, const struct sv_net_topo_cfg *t, sv_net_model model,
                    sv_sys_impl_kind impl, int window, int splits)
{
    memset(sc, 0, sizeof *sc);
    sc->topo = *t;
    sc->model = model;
    sv_sys_cfg_init(&sc->cfg);
    sc->cfg.preferred_dataset_splits = splits;
    sc->cfg.local_mem_bw = 1600;
    sc->cfg.endpoint_delay_ns = 10;
    for (int ty = 0; ty < SV_SYS_TYPE_COUNT; ty++) {
        sc->cfg.n_impl[ty] = t->ndims;
        for (int d = 0; d < t->ndims; d++) {
            sc->cfg.impl[ty][d].kind = impl;
            sc->cfg.impl[ty][d].direct_window = window;
            /* halving-doubling has no all-to-all (upstream exits): a ring there */
            if (ty == SV_SYS_ALL_TO_ALL && impl == SV_SYS_IMPL_HALVING_DOUBLING)
                sc->cfg.impl[ty][d].kind = SV_SYS_IMPL_RING;
            if (ty == SV_SYS_ALL_TO_ALL && impl == SV_SYS_IMPL_ONE_HALVING_DOUBLING)
                sc->cfg.impl[ty][d].kind = SV_SYS_IMPL_ONE_RING;
        }
    }
    sc->ncoll = 1;
    sc->type[0] = SV_SYS_ALL_REDUCE;
    sc->bytes = UINT64_C(1) << 20;
}

/* dimension 0's 50 GB/s (topo()), in bytes per ns (ASTRA-sim's GB = 2^30 bytes) */
#define BPN_DIM0 (50.0 * 1073741824.0 / 1e9)

static const sv_net_model models[] = {SV_NET_MODEL_ANALYTICAL, SV_NET_MODEL_FIFO, SV_NET_MODEL_FLOW,
                                      SV_NET_MODEL_IDEAL};
static const sv_sys_coll_type types[] = {SV_SYS_ALL_REDUCE, SV_SYS_ALL_GATHER,
                                         SV_SYS_REDUCE_SCATTER, SV_SYS_ALL_TO_ALL};
static const sv_net_topo_kind kinds[] = {SV_NET_TOPO_RING, SV_NET_TOPO_FULLY_CONNECTED,
                                         SV_NET_TOPO_SWITCH};

/* Ring on every 1-D topology, every model and type, 1 and 4 chunks, members starting together:
 * the closed form, and nothing else. */
static void test_ring_closed_form(void)
{
    struct sv_sys_virt_stats tot = {0};
    for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++) {
        for (int n = 2; n <= 16; n *= 2) {
            struct sv_net_topo_cfg t = topo(1, &kinds[k], &n);
            for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
                for (size_t ty = 0; ty < G_N_ELEMENTS(types); ty++) {
                    for (int splits = 1; splits <= 4; splits += 3) {
                        struct sc sc;
                        sc_init(&sc, &t, models[m], SV_SYS_IMPL_RING, -1, splits);
                        sc.type[0] = types[ty];
                        g_autofree char *what =
                            g_strdup_printf("ring %s %d, %s, %s, %d chunks",
                                            kinds[k] == SV_NET_TOPO_RING     ? "Ring"
                                            : kinds[k] == SV_NET_TOPO_SWITCH ? "Switch"
                                                                             : "FullyConnected",
                                            n, sv_net_model_name(models[m]),
                                            sv_sys_coll_type_name(types[ty]), splits);
                        struct sv_sys_virt_stats v;
                        same(what, &sc, &v);
                        CU_ASSERT_TRUE(v.closed_form > 0);
                        CU_ASSERT_EQUAL(v.replayed + v.contended + v.gave_up, 0);
                        tot.messages += v.messages;
                    }
                }
            }
        }
    }
    CU_ASSERT_TRUE(tot.messages > 0);
}

static const char *kind_name(sv_net_topo_kind k)
{
    return k == SV_NET_TOPO_RING ? "Ring" : k == SV_NET_TOPO_SWITCH ? "Switch" : "FullyConnected";
}

static const char *impl_name(sv_sys_impl_kind k, int window)
{
    switch (k) {
    case SV_SYS_IMPL_RING:
        return "ring";
    case SV_SYS_IMPL_ONE_RING:
        return "oneRing";
    case SV_SYS_IMPL_DIRECT:
        return window > 0 ? "directN" : "direct";
    case SV_SYS_IMPL_ONE_DIRECT:
        return "oneDirect";
    case SV_SYS_IMPL_HALVING_DOUBLING:
        return "halvingDoubling";
    case SV_SYS_IMPL_ONE_HALVING_DOUBLING:
        return "oneHalvingDoubling";
    default:
        return "doubleBinaryTree";
    }
}

/* direct (all peers at once, and a window of 2), halving-doubling and the double binary tree on
 * every 1-D topology, model and type, 1 and 4 chunks: replayed alone (memoised), never with
 * messages when the members start together. */
static void test_algorithms(void)
{
    struct sv_sys_virt_stats tot = {0};
    static const struct {
        sv_sys_impl_kind kind;
        int window;
    } impls[] = {{SV_SYS_IMPL_DIRECT, -1},
                 {SV_SYS_IMPL_DIRECT, 2},
                 {SV_SYS_IMPL_HALVING_DOUBLING, -1},
                 {SV_SYS_IMPL_DOUBLE_BINARY_TREE, -1}};
    for (size_t a = 0; a < G_N_ELEMENTS(impls); a++) {
        for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++) {
            for (int n = 4; n <= 8; n *= 2) {
                struct sv_net_topo_cfg t = topo(1, &kinds[k], &n);
                for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
                    for (size_t ty = 0; ty < G_N_ELEMENTS(types); ty++) {
                        if (impls[a].kind == SV_SYS_IMPL_HALVING_DOUBLING &&
                            types[ty] == SV_SYS_ALL_TO_ALL)
                            continue; /* upstream has none */
                        for (int splits = 1; splits <= 4; splits += 3) {
                            struct sc sc;
                            sc_init(&sc, &t, models[m], impls[a].kind, impls[a].window, splits);
                            sc.type[0] = types[ty];
                            g_autofree char *what = g_strdup_printf(
                                "%s on %s %d, %s, %s, %d chunks",
                                impl_name(impls[a].kind, impls[a].window), kind_name(kinds[k]), n,
                                sv_net_model_name(models[m]), sv_sys_coll_type_name(types[ty]),
                                splits);
                            struct sv_sys_virt_stats v;
                            same(what, &sc, &v);
                            CU_ASSERT_TRUE(v.replayed + v.memo_hits > 0);
                            add_stats(&tot, &v);
                        }
                    }
                }
            }
        }
    }
    /* phases ran to their end without messages, and others switched to messages */
    CU_ASSERT_TRUE(tot.messages > 0);
    CU_ASSERT_TRUE(tot.contended + tot.gave_up > 0);
}

/* Several dimensions: per-dimension implementations (ring, direct, halving-doubling, double
 * binary tree, and the one* variants over all NPUs), baseline and localBWAware phases, 1 and 4
 * chunks. */
static void test_multidim(void)
{
    struct sv_sys_virt_stats tot = {0};
    static const struct {
        int ndims;
        sv_net_topo_kind kind[3];
        int npus[3];
    } nets[] = {
        {2, {SV_NET_TOPO_RING, SV_NET_TOPO_SWITCH}, {4, 2}},
        {2, {SV_NET_TOPO_FULLY_CONNECTED, SV_NET_TOPO_RING}, {2, 4}},
        {2, {SV_NET_TOPO_SWITCH, SV_NET_TOPO_SWITCH}, {2, 2}},
        {3, {SV_NET_TOPO_RING, SV_NET_TOPO_RING, SV_NET_TOPO_RING}, {2, 2, 2}},
    };
    static const sv_sys_impl_kind impls[] = {SV_SYS_IMPL_RING,
                                             SV_SYS_IMPL_DIRECT,
                                             SV_SYS_IMPL_HALVING_DOUBLING,
                                             SV_SYS_IMPL_ONE_RING,
                                             SV_SYS_IMPL_ONE_DIRECT,
                                             SV_SYS_IMPL_ONE_HALVING_DOUBLING,
                                             SV_SYS_IMPL_DOUBLE_BINARY_TREE};
    for (size_t w = 0; w < G_N_ELEMENTS(nets); w++) {
        struct sv_net_topo_cfg t = topo(nets[w].ndims, nets[w].kind, nets[w].npus);
        for (size_t a = 0; a < G_N_ELEMENTS(impls); a++) {
            for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
                for (int opt = 0; opt < 2; opt++) {
                    for (int splits = 1; splits <= 4; splits += 3) {
                        for (size_t ty = 0; ty < G_N_ELEMENTS(types); ty++) {
                            gboolean hd = impls[a] == SV_SYS_IMPL_HALVING_DOUBLING ||
                                          impls[a] == SV_SYS_IMPL_ONE_HALVING_DOUBLING;
                            if (hd && types[ty] == SV_SYS_ALL_TO_ALL)
                                continue;
                            if (opt == 1 && types[ty] != SV_SYS_ALL_REDUCE)
                                continue;
                            struct sc sc;
                            sc_init(&sc, &t, models[m], impls[a], -1, splits);
                            gboolean one = impls[a] == SV_SYS_IMPL_ONE_RING ||
                                           impls[a] == SV_SYS_IMPL_ONE_DIRECT ||
                                           impls[a] == SV_SYS_IMPL_ONE_HALVING_DOUBLING;
                            for (int ty2 = 0; ty2 < SV_SYS_TYPE_COUNT; ty2++)
                                sc.cfg.n_impl[ty2] = one ? 1 : t.ndims;
                            sc.cfg.collective_optimization =
                                opt ? SV_SYS_OPT_LOCAL_BW_AWARE : SV_SYS_OPT_BASELINE;
                            sc.type[0] = types[ty];
                            g_autofree char *what = g_strdup_printf(
                                "%s on net %zu, %s, %s, %s, %d chunks", impl_name(impls[a], -1), w,
                                sv_net_model_name(models[m]), opt ? "localBWAware" : "baseline",
                                sv_sys_coll_type_name(types[ty]), splits);
                            struct sv_sys_virt_stats v;
                            same(what, &sc, &v);
                            CU_ASSERT_TRUE(v.closed_form + v.replayed + v.memo_hits > 0);
                            add_stats(&tot, &v);
                        }
                    }
                }
            }
        }
    }
    /* phases ran to their end without messages, and others switched to messages */
    CU_ASSERT_TRUE(tot.messages > 0);
    CU_ASSERT_TRUE(tot.contended + tot.gave_up > 0);
}

/* Communicator groups (rings over the members in list order, and servesim's direct exchange),
 * several groups running at once on disjoint NPUs, in odd member orders, on one and two
 * dimensions. */
static void test_groups(void)
{
    struct sv_sys_virt_stats tot = {0};
    static const struct {
        int ndims;
        sv_net_topo_kind kind[2];
        int npus[2];
    } nets[] = {
        {1, {SV_NET_TOPO_FULLY_CONNECTED}, {8}},
        {1, {SV_NET_TOPO_RING}, {8}},
        {1, {SV_NET_TOPO_SWITCH}, {8}},
        {2, {SV_NET_TOPO_FULLY_CONNECTED, SV_NET_TOPO_SWITCH}, {4, 2}},
    };
    static const int g1[] = {0, 2, 5, 7}, g2[] = {3, 1}, g3[] = {6, 4};
    for (size_t w = 0; w < G_N_ELEMENTS(nets); w++) {
        struct sv_net_topo_cfg t = topo(nets[w].ndims, nets[w].kind, nets[w].npus);
        for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
            for (size_t ty = 0; ty < G_N_ELEMENTS(types); ty++) {
                for (int direct = 0; direct < 2; direct++) {
                    struct sc sc;
                    sc_init(&sc, &t, models[m], SV_SYS_IMPL_RING, -1, 1);
                    sc.groups = sv_sys_groups_new();
                    CU_ASSERT_TRUE(sv_sys_groups_add(sc.groups, 1, g1, 4, NULL));
                    CU_ASSERT_TRUE(sv_sys_groups_add(sc.groups, 2, g2, 2, NULL));
                    CU_ASSERT_TRUE(sv_sys_groups_add(sc.groups, 3, g3, 2, NULL));
                    for (int i = 0; i < 4; i++)
                        sc.gid[g1[i]] = 1;
                    sc.gid[3] = sc.gid[1] = 2;
                    sc.gid[6] = sc.gid[4] = 3;
                    if (direct)
                        sc.cfg.group_impl[types[ty]] = SV_SYS_IMPL_DIRECT;
                    sc.type[0] = types[ty];
                    sc.ncoll = 2;
                    sc.type[1] = SV_SYS_ALL_REDUCE;
                    g_autofree char *what = g_strdup_printf(
                        "groups %s on net %zu, %s, %s", direct ? "direct" : "ring", w,
                        sv_net_model_name(models[m]), sv_sys_coll_type_name(types[ty]));
                    struct sv_sys_virt_stats v;
                    same(what, &sc, &v);
                    CU_ASSERT_TRUE(v.closed_form + v.replayed + v.memo_hits > 0);
                    add_stats(&tot, &v);
                    sv_sys_groups_free(sc.groups);
                }
            }
        }
    }
    /* phases ran to their end without messages, and others switched to messages */
    CU_ASSERT_TRUE(tot.messages > 0);
    CU_ASSERT_TRUE(tot.contended + tot.gave_up > 0);
}

/* Members starting apart: by less than the endpoint delay (one shadow run with offsets), by more
 * (the first ones run tentatively until the others start), in shuffled orders, with chains of
 * collectives back to back (each NPU issues the next at its own end). */
static void test_staggered(void)
{
    struct sv_sys_virt_stats tot = {0};
    static const sv_time deltas[] = {1, 9, 10, 11, 250, 40000, 3000000};
    static const int perm[8] = {5, 0, 7, 2, 6, 1, 4, 3};
    static const struct {
        sv_sys_impl_kind kind;
        int window;
    } impls[] = {{SV_SYS_IMPL_RING, -1},
                 {SV_SYS_IMPL_DIRECT, -1},
                 {SV_SYS_IMPL_HALVING_DOUBLING, -1},
                 {SV_SYS_IMPL_DOUBLE_BINARY_TREE, -1}};
    int tentative_runs = 0;
    for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++) {
        int n = 8;
        struct sv_net_topo_cfg t = topo(1, &kinds[k], &n);
        for (size_t a = 0; a < G_N_ELEMENTS(impls); a++) {
            for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
                for (size_t d = 0; d < G_N_ELEMENTS(deltas); d++) {
                    for (int shuffled = 0; shuffled < 2; shuffled++) {
                        struct sc sc;
                        sc_init(&sc, &t, models[m], impls[a].kind, impls[a].window,
                                shuffled ? 2 : 1);
                        for (int i = 0; i < n; i++)
                            sc.start[i] = (shuffled ? perm[i] : i) * deltas[d];
                        sc.ncoll = impls[a].kind == SV_SYS_IMPL_HALVING_DOUBLING ? 3 : 4;
                        sc.type[1] = SV_SYS_ALL_GATHER;
                        sc.type[2] = SV_SYS_REDUCE_SCATTER;
                        sc.type[3] = SV_SYS_ALL_TO_ALL;
                        g_autofree char *what = g_strdup_printf(
                            "%s on %s 8, %s, starts %s x %lld", impl_name(impls[a].kind, -1),
                            kind_name(kinds[k]), sv_net_model_name(models[m]),
                            shuffled ? "shuffled" : "i", (long long)deltas[d]);
                        struct sv_sys_virt_stats v;
                        same(what, &sc, &v);
                        CU_ASSERT_TRUE(v.closed_form + v.replayed + v.memo_hits > 0);
                        add_stats(&tot, &v);
                        if (deltas[d] > 10 && v.messages > 0)
                            tentative_runs++;
                    }
                }
            }
        }
    }
    CU_ASSERT_TRUE(tentative_runs > 0);
    /* phases ran to their end without messages, and others switched to messages */
    CU_ASSERT_TRUE(tot.messages > 0);
    CU_ASSERT_TRUE(tot.contended + tot.gave_up > 0);
}

static void outcome_clear(struct outcome *o)
{
    g_array_free(o->deliv, TRUE);
    g_array_free(o->pending, TRUE);
    if (o->tap_deliv)
        g_array_free(o->tap_deliv, TRUE);
}

static gboolean same_deliv(GArray *a, GArray *b)
{
    if (a->len != b->len)
        return FALSE;
    for (guint i = 0; i < a->len; i++)
        if (deliv_cmp(&g_array_index(a, struct deliv, i), &g_array_index(b, struct deliv, i)))
            return FALSE;
    return TRUE;
}

/* A tap (network/tap.c) is passive: with fast collectives a tapped run takes the same paths as
 * an untapped one (closed form, replays, tentative runs past late starts, switches to messages:
 * the same statistics) and ends every collective and transfer at the same nanosecond, where an
 * observer would make late starts give up (virtual.c); with every message sent the tap sees each
 * message once, at the arrivals the observer sees. Staggered starts (as test_staggered) with
 * other traffic in between, on every 1-D topology and model. */
static void test_tap_passive(void)
{
    static const sv_time deltas[] = {0, 11, 40000};
    int tentative = 0, closed = 0;
    for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++) {
        int n = 8;
        struct sv_net_topo_cfg t = topo(1, &kinds[k], &n);
        for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
            for (size_t d = 0; d < G_N_ELEMENTS(deltas); d++) {
                struct sc sc;
                sc_init(&sc, &t, models[m], SV_SYS_IMPL_RING, -1, 2);
                for (int i = 0; i < n; i++)
                    sc.start[i] = i * deltas[d];
                sc.ncoll = 2;
                sc.type[1] = SV_SYS_ALL_GATHER;
                sc.nsend = 1;
                sc.send[0].at = 3 * deltas[d] + 5;
                sc.send[0].src = 0;
                sc.send[0].dst = 4;
                sc.send[0].bytes = 65536;
                struct outcome plain, observed, tapped, msg_obs, msg_tap;
                run_sc_tapped(&sc, TRUE, FALSE, FALSE, &plain);
                run_sc_tapped(&sc, TRUE, TRUE, FALSE, &observed);
                run_sc_tapped(&sc, TRUE, FALSE, TRUE, &tapped);
                run_sc_tapped(&sc, FALSE, TRUE, FALSE, &msg_obs);
                run_sc_tapped(&sc, FALSE, FALSE, TRUE, &msg_tap);
                CU_ASSERT_EQUAL(max_diff(&sc, &plain, &tapped), 0);
                CU_ASSERT(memcmp(&plain.v, &tapped.v, sizeof plain.v) == 0);
                CU_ASSERT(memcmp(&plain.st, &tapped.st, sizeof plain.st) == 0);
                CU_ASSERT_EQUAL(plain.end, tapped.end);
                CU_ASSERT_EQUAL(tapped.tap_bad, 0);
                /* what the fast run sent itself, the tap saw arrive */
                CU_ASSERT(tapped.tap_deliv->len <= tapped.st.messages);
                CU_ASSERT_EQUAL(max_diff(&sc, &msg_obs, &msg_tap), 0);
                SV_ASSERT_EQ_I64(msg_tap.tap_starts, msg_tap.st.messages);
                CU_ASSERT(same_deliv(msg_tap.tap_deliv, msg_obs.deliv));
                CU_ASSERT_EQUAL(msg_tap.tap_bad, 0);
                closed += tapped.v.closed_form > 0;
                /* an observer gives up where the tap does not */
                tentative += observed.v.gave_up > tapped.v.gave_up;
                outcome_clear(&plain);
                outcome_clear(&observed);
                outcome_clear(&tapped);
                outcome_clear(&msg_obs);
                outcome_clear(&msg_tap);
            }
        }
    }
    /* closed forms ran under the tap, and late starts an observer gives up on ran tentatively */
    CU_ASSERT(closed > 0);
    CU_ASSERT(tentative > 0);
    if (tentative == 0)
        fprintf(stderr, "tap_passive: no case where an observer gives up and the tap does not\n");
}

/* Two chunks in flight per dimension (active-chunks-per-dimension 2, as HGX-H100-validated.json):
 * the second chunk's phase meets the first's on the same links, and both switch to messages. */
static void test_active_chunks(void)
{
    for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++) {
        int n = 8;
        struct sv_net_topo_cfg t = topo(1, &kinds[k], &n);
        for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
            struct sc sc;
            sc_init(&sc, &t, models[m], SV_SYS_IMPL_RING, -1, 4);
            sc.cfg.active_chunks_per_dimension = 2;
            g_autofree char *what = g_strdup_printf(
                "2 active chunks on %s 8, %s", kind_name(kinds[k]), sv_net_model_name(models[m]));
            struct sv_sys_virt_stats v;
            same(what, &sc, &v);
            if (models[m] == SV_NET_MODEL_FIFO || models[m] == SV_NET_MODEL_FLOW)
                CU_ASSERT_TRUE(v.contended + v.gave_up > 0);
        }
    }
}

static gint pending_cmp(gconstpointer a, gconstpointer b)
{
    const struct sv_sys_p2p_pending *x = a, *y = b;
    if (x->posted_at != y->posted_at)
        return x->posted_at < y->posted_at ? -1 : 1;
    if (x->src != y->src)
        return x->src - y->src;
    if (x->dst != y->dst)
        return x->dst - y->dst;
    if (x->tag != y->tag)
        return x->tag - y->tag;
    return x->is_send - y->is_send;
}

/* A collective some member never starts (a run that cannot finish): the run ends at the same
 * time, and after sv_sys_settle the system layer holds the same unmatched sends and receives,
 * posted at the same times, as with messages (what `servesim replay` prints). */
static void test_stall(void)
{
    static const sv_sys_impl_kind impls[] = {SV_SYS_IMPL_RING, SV_SYS_IMPL_DIRECT,
                                             SV_SYS_IMPL_HALVING_DOUBLING,
                                             SV_SYS_IMPL_DOUBLE_BINARY_TREE};
    for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++) {
        int n = 8;
        struct sv_net_topo_cfg t = topo(1, &kinds[k], &n);
        for (size_t a = 0; a < G_N_ELEMENTS(impls); a++) {
            for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
                for (int late = 0; late < 2; late++) {
                    struct sc sc;
                    sc_init(&sc, &t, models[m], impls[a], -1, 2);
                    for (int i = 0; i < n; i++)
                        sc.start[i] = late ? 1000 * i : 0;
                    sc.start[5] = -1; /* never starts */
                    for (int obs = 0; obs < 2; obs++) {
                        struct outcome f, mm;
                        run_sc(&sc, TRUE, obs, &f);
                        run_sc(&sc, FALSE, obs, &mm);
                        CU_ASSERT_EQUAL(max_diff(&sc, &f, &mm), 0);
                        SV_ASSERT_EQ_I64(f.end, mm.end);
                        CU_ASSERT_EQUAL(f.pending->len, mm.pending->len);
                        CU_ASSERT_TRUE(mm.pending->len > 0);
                        g_array_sort(f.pending, pending_cmp);
                        g_array_sort(mm.pending, pending_cmp);
                        for (guint i = 0; i < MIN(f.pending->len, mm.pending->len); i++) {
                            const struct sv_sys_p2p_pending *x =
                                &g_array_index(f.pending, struct sv_sys_p2p_pending, i);
                            const struct sv_sys_p2p_pending *y =
                                &g_array_index(mm.pending, struct sv_sys_p2p_pending, i);
                            CU_ASSERT_TRUE(pending_cmp(x, y) == 0 && x->arrived == y->arrived &&
                                           x->bytes == y->bytes);
                        }
                        CU_ASSERT_EQUAL(f.st.messages, mm.st.messages);
                        g_array_free(f.deliv, TRUE);
                        g_array_free(mm.deliv, TRUE);
                        g_array_free(f.pending, TRUE);
                        g_array_free(mm.pending, TRUE);
                    }
                }
            }
        }
    }
}

/* Other traffic on a collective's links while it runs: point-to-point transfers sent at many
 * instants through the collective (on a link it uses, from a member or a third NPU), under
 * fifo and flow, ring / direct / halving-doubling / double binary tree. The phase switches to
 * messages at that instant; the result must equal the run with messages within the bound. */
static void test_contention(void)
{
    static const struct {
        sv_sys_impl_kind kind;
        int window;
    } impls[] = {{SV_SYS_IMPL_RING, -1},
                 {SV_SYS_IMPL_DIRECT, -1},
                 {SV_SYS_IMPL_HALVING_DOUBLING, -1},
                 {SV_SYS_IMPL_DOUBLE_BINARY_TREE, -1}};
    static const sv_net_model lmodels[] = {SV_NET_MODEL_FIFO, SV_NET_MODEL_FLOW};
    sv_time worst = 0;
    int cases = 0, differ = 0;
    uint64_t contended = 0;
    for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++) {
        int n = 8;
        struct sv_net_topo_cfg t = topo(1, &kinds[k], &n);
        for (size_t a = 0; a < G_N_ELEMENTS(impls); a++) {
            for (size_t m = 0; m < G_N_ELEMENTS(lmodels); m++) {
                /* the instants of the collective's own events (arrivals, and the sends an
                 * endpoint delay later), where same-nanosecond order matters, and a sweep */
                GArray *ats = g_array_new(FALSE, FALSE, sizeof(sv_time));
                {
                    struct sc sc0;
                    sc_init(&sc0, &t, lmodels[m], impls[a].kind, impls[a].window, 1);
                    sc0.ncoll = 2;
                    sc0.type[1] = SV_SYS_ALL_GATHER;
                    struct outcome o0;
                    run_sc(&sc0, FALSE, TRUE, &o0);
                    g_array_free(o0.pending, TRUE);
                    for (guint i = 0; i < o0.deliv->len; i += 3) {
                        sv_time x = g_array_index(o0.deliv, struct deliv, i).now;
                        for (int dx = -1; dx <= 11; dx++) {
                            sv_time y = x + dx;
                            if (dx == -1 || dx == 0 || dx == 1 || dx == 9 || dx == 10 || dx == 11)
                                g_array_append_val(ats, y);
                        }
                    }
                    g_array_free(o0.deliv, TRUE);
                    for (sv_time y = 0; y < 90000; y += 997)
                        g_array_append_val(ats, y);
                }
                for (guint ai = 0; ai < 2 * ats->len; ai++) {
                    int at = (int)g_array_index(ats, sv_time, ai % ats->len);
                    struct sc sc;
                    sc_init(&sc, &t, lmodels[m], impls[a].kind, impls[a].window, 1);
                    sc.ncoll = 2;
                    sc.type[1] = SV_SYS_ALL_GATHER;
                    sc.nsend = 2;
                    sc.send[0].at = at;
                    sc.send[0].src = 0;
                    sc.send[0].dst = 1;
                    sc.send[0].bytes = 65536 + (uint64_t)at;
                    sc.send[1].at = at / 2 + 13;
                    sc.send[1].src = 3;
                    sc.send[1].dst = 2;
                    sc.send[1].bytes = 300000;
                    sc.send[0].late = sc.send[1].late = ai >= ats->len;
                    struct outcome f, mm;
                    run_sc(&sc, TRUE, TRUE, &f);
                    run_sc(&sc, FALSE, TRUE, &mm);
                    sv_time d = max_diff(&sc, &f, &mm);
                    CU_ASSERT_TRUE(d >= 0);
                    /* every message is sent and counted either way */
                    CU_ASSERT_EQUAL(f.st.messages, mm.st.messages);
                    CU_ASSERT_EQUAL(f.st.bytes_delivered, mm.st.bytes_delivered);
                    CU_ASSERT_EQUAL(f.st.link_bytes, mm.st.link_bytes);
                    CU_ASSERT_EQUAL(f.deliv->len, mm.deliv->len);
                    /* the bound (docs/collectives.md): flow exact; fifo, a message entering a
                     * link in the same nanosecond as one of the collective's may take the other
                     * place in its queue: each of the two moves by at most the other's
                     * serialisation, per foreign message */
                    uint64_t biggest = MAX(sc.bytes, MAX(sc.send[0].bytes, sc.send[1].bytes));
                    sv_time bound = lmodels[m] == SV_NET_MODEL_FLOW
                                        ? 0
                                        : sc.nsend * (sv_time)(biggest / BPN_DIM0 + 1);
                    CU_ASSERT_TRUE(d <= bound);
                    cases++;
                    if (d != 0) {
                        differ++;
                        if (differ < 20)
                            fprintf(stderr, "\n%s on %s, %s, send at %d%s: max diff %lld",
                                    impl_name(impls[a].kind, -1), kind_name(kinds[k]),
                                    sv_net_model_name(lmodels[m]), at,
                                    sc.send[0].late ? " (late)" : "", (long long)d);
                    } else {
                        for (guint i = 0; i < f.deliv->len; i++)
                            CU_ASSERT_EQUAL(deliv_cmp(&g_array_index(f.deliv, struct deliv, i),
                                                      &g_array_index(mm.deliv, struct deliv, i)),
                                            0);
                    }
                    worst = MAX(worst, d);
                    contended += f.v.contended;
                    g_array_free(f.deliv, TRUE);
                    g_array_free(mm.deliv, TRUE);
                    g_array_free(f.pending, TRUE);
                    g_array_free(mm.pending, TRUE);
                }
                g_array_free(ats, TRUE);
            }
        }
    }
    fprintf(stderr, "\n[%d cases, %d differ, worst %lld ns, %llu switched] ", cases, differ,
            (long long)worst, (unsigned long long)contended);
    CU_ASSERT_TRUE(contended > 0);
}

/* An explicit graph (network/graph.c): two switches of 4 NPUs at 50 GB/s, joined through a
 * spine at 25 GB/s, one NPU of each also on a direct 10 GB/s link; the system layer sees one
 * dimension of 8 NPUs. Every algorithm, model and type as on the 1-D topologies: the fast path
 * equals the messages to the nanosecond. Then other traffic on the collective's links (flow:
 * exact, docs/collectives.md). */
static struct sv_net_graph_cfg *two_switch_graph(void)
{
    struct sv_net_graph_cfg *g = sv_net_graph_cfg_new(8, 3);
    for (int i = 0; i < 8; i++)
        sv_net_graph_cfg_add_link(g, i, i < 4 ? 8 : 9, 50, 500, FALSE);
    sv_net_graph_cfg_add_link(g, 8, 10, 25, 1007, FALSE);
    sv_net_graph_cfg_add_link(g, 9, 10, 25, 1007, FALSE);
    sv_net_graph_cfg_add_link(g, 3, 4, 10, 300, FALSE);
    return g;
}

static void test_graph(void)
{
    struct sv_net_graph_cfg *g = two_switch_graph();
    int n = 8;
    sv_net_topo_kind sw = SV_NET_TOPO_SWITCH;
    struct sv_net_topo_cfg t = topo(1, &sw, &n);
    static const sv_sys_impl_kind impls[] = {SV_SYS_IMPL_RING, SV_SYS_IMPL_DIRECT,
                                             SV_SYS_IMPL_HALVING_DOUBLING,
                                             SV_SYS_IMPL_DOUBLE_BINARY_TREE};
    struct sv_sys_virt_stats tot = {0};
    for (size_t a = 0; a < G_N_ELEMENTS(impls); a++) {
        for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
            for (size_t ty = 0; ty < G_N_ELEMENTS(types); ty++) {
                if (impls[a] == SV_SYS_IMPL_HALVING_DOUBLING && types[ty] == SV_SYS_ALL_TO_ALL)
                    continue;
                struct sc sc;
                sc_init(&sc, &t, models[m], impls[a], -1, 1);
                sc.graph = g;
                sc.type[0] = types[ty];
                g_autofree char *what =
                    g_strdup_printf("%s on a graph, %s, %s", impl_name(impls[a], -1),
                                    sv_net_model_name(models[m]), sv_sys_coll_type_name(types[ty]));
                struct sv_sys_virt_stats v;
                same(what, &sc, &v);
                add_stats(&tot, &v);
            }
        }
    }
    CU_ASSERT_TRUE(tot.closed_form + tot.replayed + tot.memo_hits > 0);
    /* foreign traffic on the spine and on the direct link while a ring all-reduce runs */
    for (int at = 0; at < 60000; at += 3001) {
        struct sc sc;
        sc_init(&sc, &t, SV_NET_MODEL_FLOW, SV_SYS_IMPL_RING, -1, 1);
        sc.graph = g;
        sc.nsend = 2;
        sc.send[0].at = at;
        sc.send[0].src = 0;
        sc.send[0].dst = 5;
        sc.send[0].bytes = 200000;
        sc.send[1].at = at / 2 + 13;
        sc.send[1].src = 3;
        sc.send[1].dst = 4;
        sc.send[1].bytes = 70000;
        struct outcome f, mm;
        run_sc(&sc, TRUE, TRUE, &f);
        run_sc(&sc, FALSE, TRUE, &mm);
        CU_ASSERT_EQUAL(max_diff(&sc, &f, &mm), 0);
        CU_ASSERT_EQUAL(f.st.link_bytes, mm.st.link_bytes);
        g_array_free(f.deliv, TRUE);
        g_array_free(mm.deliv, TRUE);
        g_array_free(f.pending, TRUE);
        g_array_free(mm.pending, TRUE);
    }
    sv_net_graph_cfg_free(g);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"ring_closed_form", test_ring_closed_form},
        {"tap_passive", test_tap_passive},
        {"algorithms", test_algorithms},
        {"multidim", test_multidim},
        {"groups", test_groups},
        {"staggered", test_staggered},
        {"active_chunks", test_active_chunks},
        {"contention", test_contention},
        {"stall", test_stall},
        {"graph", test_graph},
        {NULL, NULL},
    };
    sv_test_add_suite("virtual", cases);
    return sv_test_run();
}
