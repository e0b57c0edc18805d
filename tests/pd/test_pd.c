/* Prefill/decode disaggregation (planner/pd.c + the msg handoff API) and the prefix- / SLO-aware
 * routers (planner/router_policies.c).
 *
 * The PD tests drive real serving groups (roofline latency) and a real network (flow model,
 * Switch) through a small harness that wires the hooks as planner/run.c does. Expected numbers are
 * closed forms: Llama-3.1-8B keeps K and V of 8 KV heads x 128 dims in bf16, 4,096 bytes per token
 * per layer (config.json of meta-llama/Llama-3.1-8B: num_key_value_heads 8, head_dim 128), 32
 * layers; a flow of B bytes alone on a Switch takes 2 x latency + B / bandwidth
 * (docs/network-models.md), and two flows sharing one link get half of it each (max-min). */
#include "dag/dag.h"
#include "planner/planner.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <string.h>

#define MODEL "meta-llama/Llama-3.1-8B"
#define KV_TOK_LAYER 4096u /* 2 (K,V) x 8 heads x 128 dims x 2 bytes */
#define LAYERS 32
#define BW_GBPS 50.0
#define LAT_NS 500.0

typedef struct {
    const char *hw;
    int32_t tp;
    sv_msg_role role;
    uint32_t kv_blocks; /* 0 = plenty */
} inst_spec;

typedef struct {
    uint64_t id;
    int32_t instance;
    sv_time arrival, first_token, last_token;
    int64_t output;
    sv_time prefill_done, kv_ready;
} rec;

typedef struct {
    sv_engine *eng;
    sv_net *net;
    gboolean own_net; /* FALSE: the network is a cluster network's (harness_new_on) */
    sv_planner_pd *pd;
    int32_t n;
    sv_msg **msgs;
    sv_memtier_kv_manager **kvs;
    sv_compute_latency **lats;
    int32_t **npus;
    GArray *recs;           /* rec */
    uint64_t *decode_iters; /* per instance */
    uint64_t rr;
    struct sv_compute_model_cfg model;
} harness;

static void on_done(void *ctx, const struct sv_wl_outcome *d, void *user)
{
    harness *h = ctx;
    rec r = {d->request_id,    d->instance,      d->arrival_ns,      d->first_token_ns,
             d->last_token_ns, d->output_tokens, d->prefill_done_ns, d->kv_ready_ns};
    g_array_append_val(h->recs, r);
    sv_planner_pd_decode_progress(h->pd, d->instance);
}

static void on_iter(void *ctx, const struct sv_msg_iter_done *it)
{
    harness *h = ctx;
    h->decode_iters[it->instance]++;
    sv_planner_pd_decode_progress(h->pd, it->instance);
}

static void on_prefill(void *ctx, int32_t instance, sv_msg_handoff *ho)
{
    harness *h = ctx;
    sv_planner_pd_prefill_done(h->pd, instance, ho);
}

static void on_launch(void *ctx, int32_t instance, sv_msg_handoff *ho,
                      const struct sv_msg_prefill_launch *l)
{
    harness *h = ctx;
    sv_planner_pd_prefill_launch(h->pd, instance, ho, l);
}

/* Round robin over the candidates, so a 1:2 split uses both decode instances. */
static int32_t pick_rr(void *ctx, const struct sv_wl_outcome *req, const int32_t *cand, int32_t n)
{
    harness *h = ctx;
    return (int32_t)(h->rr++ % (uint64_t)n);
}

/* The serving groups and the disaggregation layer on `net` (engine `eng`), instance i's devices
 * from first[i]; with net NULL the harness builds its own Switch (instances' devices in order,
 * two spare NPUs for background traffic). */
static harness *harness_new_on(const inst_spec *spec, int32_t n, sv_planner_pd_kv_mode mode,
                               sv_engine *eng, sv_net *net, const int32_t *first)
{
    harness *h = g_new0(harness, 1);
    h->eng = eng ? eng : sv_engine_new(1);
    h->n = n;
    GError *e = NULL;
    if (net) {
        h->net = net;
    } else {
        int npus = 0;
        for (int32_t i = 0; i < n; i++)
            npus += spec[i].tp;
        npus += 2; /* spare NPUs for background traffic */
        struct sv_net_topo_cfg topo = {.ndims = 1};
        topo.kind[0] = SV_NET_TOPO_SWITCH;
        topo.npus[0] = npus;
        topo.bandwidth_gbps[0] = BW_GBPS;
        topo.latency_ns[0] = LAT_NS;
        h->net = sv_net_new(h->eng, &topo, SV_NET_MODEL_FLOW, &e);
        g_assert_no_error(e);
        h->own_net = TRUE;
    }
    g_assert_true(sv_compute_model_lookup(MODEL, NULL, &h->model, &e));
    g_assert_no_error(e);
    h->msgs = g_new0(sv_msg *, n);
    h->kvs = g_new0(sv_memtier_kv_manager *, n);
    h->lats = g_new0(sv_compute_latency *, n);
    h->npus = g_new0(int32_t *, n);
    h->decode_iters = g_new0(uint64_t, n);
    h->recs = g_array_new(FALSE, FALSE, sizeof(rec));
    struct sv_planner_pd_instance *pi = g_new0(struct sv_planner_pd_instance, n);
    int32_t dev = 0;
    for (int32_t i = 0; i < n; i++) {
        struct sv_compute_hw_cfg hw;
        g_assert_true(sv_compute_hw_lookup(spec[i].hw, &hw, &e));
        h->lats[i] = sv_compute_latency_new_roofline(&h->model, &hw, spec[i].tp, NULL, &e);
        g_assert_no_error(e);
        h->kvs[i] =
            sv_memtier_kv_manager_new(spec[i].kv_blocks ? spec[i].kv_blocks : 20000, 16, TRUE);
        if (first)
            dev = first[i];
        h->npus[i] = g_new0(int32_t, spec[i].tp);
        for (int32_t r = 0; r < spec[i].tp; r++)
            h->npus[i][r] = dev + r;
        struct sv_msg_cfg mc = {
            .instance = i,
            .max_num_seqs = 128,
            .max_num_batched_tokens = 2048,
            .enable_chunked_prefill = TRUE,
            .reserve_full_isl = TRUE,
            .kv = h->kvs[i],
            .lat = h->lats[i],
            .first_device = dev,
            .num_devices = spec[i].tp,
            .link_bw_gbps = BW_GBPS,
            .link_latency_ns = LAT_NS,
            .role = spec[i].role,
        };
        struct sv_msg_hooks hk = {.on_req_done = on_done,
                                  .on_iter_done = on_iter,
                                  .on_prefill_done = on_prefill,
                                  .on_prefill_launch = on_launch,
                                  .ctx = h};
        h->msgs[i] = sv_msg_new(h->eng, &mc, &hk, &e);
        g_assert_no_error(e);
        pi[i] = (struct sv_planner_pd_instance){
            .msg = h->msgs[i],
            .role = spec[i].role,
            .model = MODEL,
            .tp = spec[i].tp,
            .pp = 1,
            .num_layers = LAYERS,
            .kv_bytes_per_token_layer = KV_TOK_LAYER,
            .npus = h->npus[i],
        };
        dev += spec[i].tp;
    }
    struct sv_planner_pd_cfg pc = {
        .eng = h->eng,
        .net = h->net,
        .kv_mode = mode,
        .n_instances = n,
        .inst = pi,
        .pick = pick_rr,
        .pick_ctx = h,
    };
    h->pd = sv_planner_pd_new(&pc, &e);
    g_assert_no_error(e);
    g_free(pi);
    return h;
}

static harness *harness_new(const inst_spec *spec, int32_t n, sv_planner_pd_kv_mode mode)
{
    return harness_new_on(spec, n, mode, NULL, NULL, NULL);
}

static void harness_free(harness *h)
{
    sv_planner_pd_free(h->pd);
    for (int32_t i = 0; i < h->n; i++) {
        sv_msg_free(h->msgs[i]);
        sv_memtier_kv_manager_free(h->kvs[i]);
        sv_compute_latency_free(h->lats[i]);
        g_free(h->npus[i]);
    }
    if (h->own_net) { /* else the cluster network's owner frees it and the engine */
        sv_net_free(h->net);
        sv_engine_free(h->eng);
    }
    g_free(h->msgs);
    g_free(h->kvs);
    g_free(h->lats);
    g_free(h->npus);
    g_free(h->decode_iters);
    g_array_free(h->recs, TRUE);
    g_free(h);
}

typedef struct {
    harness *h;
    int32_t inst;
    sv_wl_req rc;
} arrival;

static void arrive(sv_engine *eng, void *ctx, uint64_t arg)
{
    arrival *a = ctx;
    GError *e = NULL;
    g_assert_true(sv_msg_submit(a->h->msgs[a->inst], &a->rc, NULL, &e));
    g_assert_no_error(e);
}

/* n requests of (in, out) tokens, request k at k x gap ns, to prefill instances round robin. */
static arrival *submit_all(harness *h, const int32_t *prefill, int32_t n_prefill, int n, int64_t in,
                           int64_t out, sv_time gap)
{
    arrival *a = g_new0(arrival, n);
    for (int k = 0; k < n; k++) {
        a[k].h = h;
        a[k].inst = prefill[k % n_prefill];
        a[k].rc = (sv_wl_req){.request_id = (uint64_t)k,
                              .arrival_ns = k * gap,
                              .input_tokens = in,
                              .output_tokens = out};
        sv_engine_schedule(h->eng, k * gap, -4, arrive, &a[k], 0);
    }
    return a;
}

static const rec *find_rec(const harness *h, uint64_t id)
{
    for (guint i = 0; i < h->recs->len; i++) {
        const rec *r = &g_array_index(h->recs, rec, i);
        if (r->id == id)
            return r;
    }
    return NULL;
}

/* Every request finished on a decode instance: prompt done on the prefill side, then its KV
 * arrived, then the decode side produced every token, the first included. */
static void check_all_done(harness *h, int n, int64_t out)
{
    SV_ASSERT_EQ_I64(h->recs->len, n);
    for (int k = 0; k < n; k++) {
        const rec *r = find_rec(h, (uint64_t)k);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        SV_ASSERT_EQ_I64(r->output, out);
        CU_ASSERT(r->prefill_done > r->arrival);
        CU_ASSERT(r->kv_ready >= r->prefill_done); /* equal: per_layer KV all there */
        CU_ASSERT(r->first_token > r->kv_ready);
        CU_ASSERT(r->last_token > r->first_token);
    }
    CU_ASSERT_PTR_NULL(sv_planner_pd_error(h->pd));
}

static void run_split(const inst_spec *spec, int32_t n_inst, const int32_t *prefill,
                      int32_t n_prefill, int n_req, struct sv_planner_pd_stats *st, harness **out)
{
    harness *h = harness_new(spec, n_inst, SV_PLANNER_PD_KV_WHOLE);
    arrival *a = submit_all(h, prefill, n_prefill, n_req, 512, 8, 1000);
    sv_engine_run(h->eng, SV_TIME_MAX);
    check_all_done(h, n_req, 8);
    sv_planner_pd_get_stats(h->pd, st);
    SV_ASSERT_EQ_I64(st->handoffs, n_req);
    /* Each prompt's whole KV moved once: 512 tokens x 4096 B x 32 layers. */
    SV_ASSERT_EQ_I64(st->bytes, (uint64_t)n_req * 512 * KV_TOK_LAYER * LAYERS);
    g_free(a);
    *out = h;
}

static void test_pd_1to1(void)
{
    inst_spec spec[] = {{"H100", 1, SV_MSG_ROLE_PREFILL, 0}, {"H100", 1, SV_MSG_ROLE_DECODE, 0}};
    int32_t pf[] = {0};
    struct sv_planner_pd_stats st;
    harness *h;
    run_split(spec, 2, pf, 1, 6, &st, &h);
    SV_ASSERT_EQ_I64(st.messages, 6); /* one rank pair per request */
    for (int k = 0; k < 6; k++)
        SV_ASSERT_EQ_I64(find_rec(h, (uint64_t)k)->instance, 1); /* decode finishes it */
    CU_ASSERT(h->decode_iters[1] > 0);
    SV_ASSERT_EQ_I64(st.kv_waits, 0);
    harness_free(h);
}

static void test_pd_2to1(void)
{
    inst_spec spec[] = {{"H100", 1, SV_MSG_ROLE_PREFILL, 0},
                        {"H100", 1, SV_MSG_ROLE_PREFILL, 0},
                        {"H100", 1, SV_MSG_ROLE_DECODE, 0}};
    int32_t pf[] = {0, 1};
    struct sv_planner_pd_stats st;
    harness *h;
    run_split(spec, 3, pf, 2, 8, &st, &h);
    for (int k = 0; k < 8; k++)
        SV_ASSERT_EQ_I64(find_rec(h, (uint64_t)k)->instance, 2);
    CU_ASSERT(h->decode_iters[0] > 0 && h->decode_iters[1] > 0); /* both prefilled */
    harness_free(h);
}

static void test_pd_1to2(void)
{
    inst_spec spec[] = {{"H100", 1, SV_MSG_ROLE_PREFILL, 0},
                        {"H100", 1, SV_MSG_ROLE_DECODE, 0},
                        {"H100", 1, SV_MSG_ROLE_DECODE, 0}};
    int32_t pf[] = {0};
    struct sv_planner_pd_stats st;
    harness *h;
    run_split(spec, 3, pf, 1, 8, &st, &h);
    int on1 = 0, on2 = 0;
    for (int k = 0; k < 8; k++) {
        int32_t i = find_rec(h, (uint64_t)k)->instance;
        on1 += i == 1;
        on2 += i == 2;
    }
    SV_ASSERT_EQ_I64(on1, 4); /* round robin over the two decode instances */
    SV_ASSERT_EQ_I64(on2, 4);
    harness_free(h);
}

/* Prefill TP1 on an A100, decode TP2 on H100s: each prompt's KV leaves the one prefill rank as two
 * messages, half of the heads to each decode rank. */
static void test_pd_unequal(void)
{
    inst_spec spec[] = {{"A100", 1, SV_MSG_ROLE_PREFILL, 0}, {"H100", 2, SV_MSG_ROLE_DECODE, 0}};
    int32_t pf[] = {0};
    struct sv_planner_pd_stats st;
    harness *h;
    run_split(spec, 2, pf, 1, 4, &st, &h);
    SV_ASSERT_EQ_I64(st.messages, 8);
    harness_free(h);
}

static void test_pair_bytes(void)
{
    int32_t np[4] = {0, 1, 2, 3}, nd[4] = {4, 5, 6, 7};
    /* Prefill TP2 x PP1, decode TP1 x PP2, 32 layers. Decode stage 0 = layers 0-15, stage 1 =
     * 16-31; prefill rank r holds half the heads of every layer. */
    struct sv_planner_pd_instance p = {
        .tp = 2, .pp = 1, .num_layers = 32, .kv_bytes_per_token_layer = 4096, .npus = np};
    struct sv_planner_pd_instance d = {
        .tp = 1, .pp = 2, .num_layers = 32, .kv_bytes_per_token_layer = 4096, .npus = nd};
    SV_ASSERT_EQ_I64(sv_planner_pd_pair_bytes(&p, 0, &d, 0, 100), 100ull * 4096 * 16 / 2);
    SV_ASSERT_EQ_I64(sv_planner_pd_pair_bytes(&p, 1, &d, 1, 100), 100ull * 4096 * 16 / 2);
    uint64_t sum = 0;
    for (int s = 0; s < 2; s++)
        for (int t = 0; t < 2; t++)
            sum += sv_planner_pd_pair_bytes(&p, s, &d, t, 100);
    SV_ASSERT_EQ_I64(sum, 100ull * 4096 * 32);
    /* Uneven split: 31 layers over PP 2 -> 16 + 15 (remainder to the earlier stage). */
    struct sv_planner_pd_instance p1 = {
        .tp = 1, .pp = 1, .num_layers = 31, .kv_bytes_per_token_layer = 10, .npus = np};
    struct sv_planner_pd_instance d2 = {
        .tp = 1, .pp = 2, .num_layers = 31, .kv_bytes_per_token_layer = 10, .npus = nd};
    SV_ASSERT_EQ_I64(sv_planner_pd_pair_bytes(&p1, 0, &d2, 0, 1), 160);
    SV_ASSERT_EQ_I64(sv_planner_pd_pair_bytes(&p1, 0, &d2, 1, 1), 150);
    /* TP2 -> TP4: rank 1 of the prefill holds heads [1/2, 1), decode rank 1 [1/4, 1/2): none. */
    struct sv_planner_pd_instance d4 = {
        .tp = 4, .pp = 1, .num_layers = 32, .kv_bytes_per_token_layer = 4096, .npus = nd};
    SV_ASSERT_EQ_I64(sv_planner_pd_pair_bytes(&p, 1, &d4, 1, 100), 0);
    SV_ASSERT_EQ_I64(sv_planner_pd_pair_bytes(&p, 1, &d4, 2, 100), 100ull * 4096 * 32 / 4);
}

/* The decode pool holds 40 blocks (640 tokens); each request needs ceil(300/16) = 19 blocks for
 * its prompt and ceil(399/16) = 25 at its end: two prompts fit (38 blocks), a third must wait
 * (back-pressure) until blocks free up, and the two admitted ones grow past the pool and preempt
 * each other on the decode side. */
static void test_pd_decode_full_waits(void)
{
    inst_spec spec[] = {{"H100", 1, SV_MSG_ROLE_PREFILL, 0}, {"H100", 1, SV_MSG_ROLE_DECODE, 40}};
    harness *h = harness_new(spec, 2, SV_PLANNER_PD_KV_WHOLE);
    int32_t pf[] = {0};
    arrival *a = submit_all(h, pf, 1, 3, 300, 100, 0);
    sv_engine_run(h->eng, SV_TIME_MAX);
    check_all_done(h, 3, 100);
    struct sv_planner_pd_stats st;
    sv_planner_pd_get_stats(h->pd, &st);
    CU_ASSERT(st.kv_waits >= 1);
    CU_ASSERT(st.kv_wait_ns > 0);
    SV_ASSERT_EQ_I64(st.handoffs, 3);
    /* Prefill batches all three prompts into one iteration (900 tokens <= 2048): same
     * prefill-done time. Two KV transfers share the link and arrive together, so those two see
     * their first token in the same decode step; the third waits for decode memory, and its first
     * token (after its own hand-off) comes later. The decode side can hold one at a time at its
     * peak (2 x 25 > 40), so the requests finish one after the other and a waiting one starts
     * decoding only after a finish. */
    const rec *r0 = find_rec(h, 0), *r1 = find_rec(h, 1), *r2 = find_rec(h, 2);
    SV_ASSERT_EQ_I64(r0->prefill_done, r1->prefill_done);
    SV_ASSERT_EQ_I64(r1->prefill_done, r2->prefill_done);
    SV_ASSERT_EQ_I64(r0->first_token, r1->first_token);
    CU_ASSERT(r2->kv_ready > r1->first_token);
    CU_ASSERT(r2->first_token > r1->first_token);
    sv_time ends[3] = {r0->last_token, r1->last_token, r2->last_token};
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            CU_ASSERT(ends[i] != ends[j]);
    CU_ASSERT(sv_memtier_kv_manager_num_used_blocks(h->kvs[1]) == 0);
    CU_ASSERT(sv_planner_pd_num_waiting(h->pd) == 0);
    g_free(a);
    harness_free(h);
}

/* Back-pressure reaches the prefill side: both pools hold 40 blocks, so handed-off prompts (19
 * blocks each) keep the prefill pool full while they wait for the decode side; the prefill
 * instance then waits (no "cannot be scheduled" error) and every request finishes. */
static void test_pd_prefill_backpressure(void)
{
    inst_spec spec[] = {{"H100", 1, SV_MSG_ROLE_PREFILL, 40}, {"H100", 1, SV_MSG_ROLE_DECODE, 40}};
    harness *h = harness_new(spec, 2, SV_PLANNER_PD_KV_WHOLE);
    int32_t pf[] = {0};
    arrival *a = submit_all(h, pf, 1, 5, 300, 100, 0);
    sv_engine_run(h->eng, SV_TIME_MAX);
    check_all_done(h, 5, 100);
    for (int i = 0; i < 2; i++)
        CU_ASSERT_PTR_NULL(sv_msg_error(h->msgs[i]));
    struct sv_planner_pd_stats st;
    sv_planner_pd_get_stats(h->pd, &st);
    CU_ASSERT(st.kv_waits >= 1);
    SV_ASSERT_EQ_I64(st.handoffs, 5);
    g_free(a);
    harness_free(h);
}

static void bg_done(sv_engine *eng, void *ctx, uint64_t arg)
{
}

static void bg_start(sv_engine *eng, void *ctx, uint64_t arg)
{
    harness *h = ctx;
    sv_net_send(h->net, 0, (int)arg, UINT64_C(1) << 36, bg_done, NULL, 0);
}

/* One request's KV (1000 tokens x 4096 x 32 = 131,072,000 B) from NPU 0 to NPU 1. Alone it takes
 * 2L + B/bw; with a long background flow out of NPU 0 (to spare NPU 2) sharing NPU 0's uplink,
 * max-min gives each flow half the link, so it takes exactly B/bw longer. */
static sv_time pd_transfer_time(gboolean background)
{
    inst_spec spec[] = {{"H100", 1, SV_MSG_ROLE_PREFILL, 0}, {"H100", 1, SV_MSG_ROLE_DECODE, 0}};
    harness *h = harness_new(spec, 2, SV_PLANNER_PD_KV_WHOLE);
    if (background)
        sv_engine_schedule(h->eng, 0, -8, bg_start, h, 2);
    int32_t pf[] = {0};
    arrival *a = submit_all(h, pf, 1, 1, 1000, 4, 0);
    sv_engine_run(h->eng, SV_TIME_MAX);
    check_all_done(h, 1, 4);
    struct sv_planner_pd_stats st;
    sv_planner_pd_get_stats(h->pd, &st);
    SV_ASSERT_EQ_I64(st.bytes, 1000ull * 4096 * 32);
    g_free(a);
    harness_free(h);
    return st.transfer_ns;
}

static void test_pd_shared_link(void)
{
    double bpns = sv_bw_gbps_to_bytes_per_ns(BW_GBPS);
    double bytes = 1000.0 * 4096 * 32;
    sv_time alone = pd_transfer_time(FALSE);
    sv_time shared = pd_transfer_time(TRUE);
    double want_alone = 2 * LAT_NS + bytes / bpns;
    CU_ASSERT(llabs(alone - (sv_time)want_alone) <= 1);
    CU_ASSERT(llabs((shared - alone) - (sv_time)(bytes / bpns)) <= 2);
}

/* ---- a PD transfer sharing links with TP all-reduce traffic, on the cluster network -------
 *
 * One node, its devices on a switch (NVSwitch-like; 50 GB/s per link per direction, 500 ns per
 * link, flow model), built from a cluster config by planner/cluster_net.c exactly as a run builds
 * it. The decode instance is TP2 (NPUs of its TP group from the cluster network) and is running
 * its tensor-parallel all-reduce (the ring on its TP communicator group, sv_sys_coll_start as
 * msg/opmap.c issues it) while a prompt's KV arrives. The all-reduce starts at t = 0 and is large
 * (2^36 bytes: each ring step moves 2^35 bytes per direction, 0.69 s at full rate), so it is
 * still in its first step for the whole KV transfer; the transfer starts at the prefill's end.
 * Flows (docs/network-models.md): a message drains at its max-min fair rate and arrives the
 * route latency (2 links x 500 ns) after its last byte left.
 *
 * Case A, prefill TP2 (NPUs 0,1) -> decode TP2 (NPUs 2,3): 1000 tokens of KV, 1000 x 4096 x 32 =
 * 131,072,000 B, half per rank pair (4 of 8 KV heads each): 0->2 and 1->3 carry Kp = 65,536,000
 * B. Alone each pair flow has its links to itself: Kp / 50 B/ns = 1,310,720 ns + 1,000 ns. With
 * the ring (2->3 and 3->2), the switch->NPU link of NPU 2 carries the KV flow 0->2 and the ring
 * flow 3->2 (NPU 3 likewise): progressive filling gives every flow 25 B/ns (each such link has
 * two flows; every other link one), so the KV drains at half rate: 2 x 1,310,720 ns. Max-min
 * amount: exactly Kp / B = 1,310,720 ns longer.
 *
 * Case B, prefill TP1 (NPU 0) -> decode TP2 (NPUs 1,2): two KV flows 0->1 and 0->2 of Kp each
 * already share NPU 0's uplink (25 B/ns each, 2 x 1,310,720 ns alone). The ring's flows share the
 * downlinks of NPUs 1 and 2 with them, but the fair share there (50 / 2) equals what the uplink
 * already allows: max-min leaves the KV rate at 25 B/ns and the transfer takes exactly as long
 * as alone. (A per-link "halve the rate" model would add 1,310,720 ns here.) */
#define TP_KV_TOKENS 1000
#define TP_AR_BYTES (UINT64_C(1) << 36)
/* H100 SXM: 80 GB HBM3 at 3,350 GB/s (NVIDIA H100 datasheet). */
#define NPU_MEM "\"npu_mem\": {\"mem_size\": 80, \"mem_bw\": 3350, \"mem_latency\": 0}"

static void tp_ar_done(sv_engine *eng, void *ctx, uint64_t arg)
{
    (*(int *)ctx)++;
}

static sv_time pd_tp_transfer(int prefill_tp, gboolean tp_traffic, sv_time *ar_done)
{
    g_autofree char *json =
        g_strdup_printf("{\"num_nodes\": 1, \"link_bw\": %g, \"link_latency\": %g, \"nodes\": [{"
                        "\"topology\": {\"kind\": \"switch\"}, \"instances\": ["
                        "{\"model_name\": \"" MODEL "\", \"hardware\": \"H100\", \"num_npus\": %d, "
                        "\"tp_size\": %d, \"pd_type\": \"prefill\", " NPU_MEM "},"
                        "{\"model_name\": \"" MODEL "\", \"hardware\": \"H100\", \"num_npus\": 2, "
                        "\"tp_size\": 2, \"pd_type\": \"decode\", " NPU_MEM "}]}]}",
                        BW_GBPS, LAT_NS, prefill_tp, prefill_tp);
    GError *e = NULL;
    g_autoptr(JsonNode) root = json_from_string(json, &e);
    g_assert_no_error(e);
    struct sv_planner_cluster_cfg *cc = sv_planner_cluster_from_json(root, "tp_share.json", &e);
    g_assert_no_error(e);
    sv_engine *eng = sv_engine_new(1);
    sv_planner_cluster_net *cn = sv_planner_cluster_net_new(eng, cc, SV_NET_MODEL_FLOW, &e);
    g_assert_no_error(e);
    int32_t first[2] = {sv_planner_cluster_net_first_device(cn, 0),
                        sv_planner_cluster_net_first_device(cn, 1)};
    SV_ASSERT_EQ_I64(first[0], 0);
    SV_ASSERT_EQ_I64(first[1], prefill_tp);
    inst_spec spec[] = {{"H100", prefill_tp, SV_MSG_ROLE_PREFILL, 0},
                        {"H100", 2, SV_MSG_ROLE_DECODE, 0}};
    harness *h =
        harness_new_on(spec, 2, SV_PLANNER_PD_KV_WHOLE, eng, sv_planner_cluster_net_net(cn), first);
    int ar_finished = 0;
    if (tp_traffic) {
        /* The decode instance's TP ring: both members issue the all-reduce at t = 0. */
        int32_t grp = sv_planner_cluster_net_tp_group(cn, 1, 0);
        CU_ASSERT(grp > 0);
        for (int r = 0; r < 2; r++) {
            CU_ASSERT_FATAL(sv_sys_coll_start(sv_planner_cluster_net_coll(cn), first[1] + r,
                                              SV_SYS_ALL_REDUCE, TP_AR_BYTES, NULL, 0, grp, 0,
                                              tp_ar_done, &ar_finished, 0, &e));
            g_assert_no_error(e);
        }
    }
    int32_t pf[] = {0};
    arrival *a = submit_all(h, pf, 1, 1, TP_KV_TOKENS, 4, 0);
    sv_engine_run(eng, SV_TIME_MAX);
    check_all_done(h, 1, 4);
    SV_ASSERT_EQ_I64(ar_finished, tp_traffic ? 2 : 0);
    /* The run's end: with the all-reduce, its completion (it must outlast the request). */
    *ar_done = sv_engine_now(eng);
    struct sv_planner_pd_stats st;
    sv_planner_pd_get_stats(h->pd, &st);
    SV_ASSERT_EQ_I64(st.bytes, (uint64_t)TP_KV_TOKENS * KV_TOK_LAYER * LAYERS);
    SV_ASSERT_EQ_I64(st.messages, 2);
    SV_ASSERT_EQ_I64(st.kv_waits, 0);
    g_free(a);
    harness_free(h);
    sv_planner_cluster_net_free(cn);
    sv_engine_free(eng);
    sv_planner_cluster_free(cc);
    return st.transfer_ns;
}

static void test_pd_shares_link_with_tp(void)
{
    double bpns = sv_bw_gbps_to_bytes_per_ns(BW_GBPS);
    double kp = (double)TP_KV_TOKENS * KV_TOK_LAYER * LAYERS / 2; /* one rank pair */
    sv_time end_alone, end_shared;
    /* A: TP2 -> TP2, the KV shares each decode NPU's downlink with one ring flow. */
    sv_time alone = pd_tp_transfer(2, FALSE, &end_alone);
    sv_time shared = pd_tp_transfer(2, TRUE, &end_shared);
    CU_ASSERT(llabs(alone - (sv_time)(2 * LAT_NS + kp / bpns)) <= 1);
    CU_ASSERT(llabs(shared - (sv_time)(2 * LAT_NS + 2 * kp / bpns)) <= 1);
    CU_ASSERT(llabs((shared - alone) - (sv_time)(kp / bpns)) <= 1);
    CU_ASSERT(end_shared > end_alone); /* the all-reduce ended after the request */
    /* B: TP1 -> TP2, the uplink of the prefill NPU is the KV's bottleneck either way. */
    alone = pd_tp_transfer(1, FALSE, &end_alone);
    shared = pd_tp_transfer(1, TRUE, &end_shared);
    CU_ASSERT(llabs(alone - (sv_time)(2 * LAT_NS + 2 * kp / bpns)) <= 1);
    CU_ASSERT(llabs(shared - alone) <= 1);
}

/* per_layer: 32 messages per rank pair, the same bytes. */
static void test_pd_per_layer(void)
{
    inst_spec spec[] = {{"H100", 1, SV_MSG_ROLE_PREFILL, 0}, {"H100", 2, SV_MSG_ROLE_DECODE, 0}};
    harness *h = harness_new(spec, 2, SV_PLANNER_PD_KV_PER_LAYER);
    int32_t pf[] = {0};
    arrival *a = submit_all(h, pf, 1, 2, 256, 4, 0);
    sv_engine_run(h->eng, SV_TIME_MAX);
    check_all_done(h, 2, 4);
    struct sv_planner_pd_stats st;
    sv_planner_pd_get_stats(h->pd, &st);
    SV_ASSERT_EQ_I64(st.messages, 2 * 2 * 32);
    SV_ASSERT_EQ_I64(st.bytes, 2ull * 256 * 4096 * 32);
    g_free(a);
    harness_free(h);
}

/* One 1000-token prompt, two output tokens, both from the decode instance, whose first step
 * starts when the KV has arrived. With "whole" the transfer (2L + B/bw, B = 1000 x 4096 x 32
 * bytes) starts when the prefill is done; with "per_layer" layer l leaves when the prefill has
 * computed it, so all but the last layer's 1/32 overlaps the prefill, and the rest (77 us) fits
 * in the lm_head and the host step: the decode starts when the prefill is done. The prefill-done
 * times agree; the first and second tokens differ by exactly the whole transfer. */
static void per_layer_vs_whole(sv_planner_pd_kv_mode mode, sv_time *done, sv_time *first,
                               sv_time *second)
{
    inst_spec spec[] = {{"H100", 1, SV_MSG_ROLE_PREFILL, 0}, {"H100", 1, SV_MSG_ROLE_DECODE, 0}};
    harness *h = harness_new(spec, 2, mode);
    int32_t pf[] = {0};
    arrival *a = submit_all(h, pf, 1, 1, 1000, 2, 0);
    sv_engine_run(h->eng, SV_TIME_MAX);
    check_all_done(h, 1, 2);
    *done = find_rec(h, 0)->prefill_done;
    *first = find_rec(h, 0)->first_token;
    *second = find_rec(h, 0)->last_token;
    g_free(a);
    harness_free(h);
}

static void test_pd_per_layer_overlap(void)
{
    sv_time d_whole, f_whole, s_whole, d_layer, f_layer, s_layer;
    per_layer_vs_whole(SV_PLANNER_PD_KV_WHOLE, &d_whole, &f_whole, &s_whole);
    per_layer_vs_whole(SV_PLANNER_PD_KV_PER_LAYER, &d_layer, &f_layer, &s_layer);
    SV_ASSERT_EQ_I64(d_whole, d_layer);
    double bytes = 1000.0 * 4096 * 32;
    sv_time whole = (sv_time)(2 * LAT_NS + bytes / sv_bw_gbps_to_bytes_per_ns(BW_GBPS));
    CU_ASSERT(llabs((f_whole - f_layer) - whole) <= 1);
    CU_ASSERT(llabs((s_whole - s_layer) - whole) <= 1);
}

/* ---- routers ------------------------------------------------------------------------------- */

static const struct sv_planner_router_ops *router(sv_registry *reg, const char *name)
{
    GError *e = NULL;
    const struct sv_planner_router_ops *ops = sv_registry_lookup(reg, SV_REGISTRY_ROUTER, name, &e);
    g_assert_no_error(e);
    return ops;
}

static void test_router_prefix_aware(void)
{
    GError *e = NULL;
    g_autoptr(sv_registry) reg = sv_planner_registry_new(&e);
    g_assert_no_error(e);
    const struct sv_planner_router_ops *ops = router(reg, "prefix_aware");
    sv_memtier_kv_manager *kv[3];
    for (int i = 0; i < 3; i++)
        kv[i] = sv_memtier_kv_manager_new(64, 16, TRUE);
    /* Instance 2 has computed a 100-token prompt: its 6 full blocks are indexed. */
    uint32_t ids[100], other[100];
    for (int t = 0; t < 100; t++) {
        ids[t] = 1000u + (uint32_t)t;
        other[t] = 5000u + (uint32_t)t;
    }
    struct sv_memtier_kv_seq_cfg sc = {
        .prompt_tokens = 100, .prompt_ids = ids, .num_prompt_ids = 100};
    sv_memtier_kv_seq *seq = sv_memtier_kv_seq_new(kv[2], &sc, &e);
    g_assert_no_error(e);
    CU_ASSERT_FATAL(sv_memtier_kv_manager_allocate_slots(kv[2], seq, 0, 100, 0, 100));
    sv_memtier_kv_manager_cache_blocks(kv[2], seq, 100);
    struct sv_memtier_kv_stats before;
    sv_memtier_kv_manager_get_stats(kv[2], &before);
    uint32_t free_before = sv_memtier_kv_manager_num_free_blocks(kv[2]);

    /* A request sharing the first 80 tokens (5 blocks), then diverging. */
    uint32_t q[120];
    memcpy(q, ids, 80 * sizeof *q);
    for (int t = 80; t < 120; t++)
        q[t] = 9000u + (uint32_t)t;
    struct sv_planner_router_inst inst[3];
    for (int i = 0; i < 3; i++)
        inst[i] = (struct sv_planner_router_inst){.index = i, .kv = kv[i]};
    inst[2].running = 50; /* the busiest: the prefix still wins */
    sv_wl_req rq_req = {
        .request_id = 7, .input_tokens = 120, .input_tok_ids = q, .n_input_tok_ids = 120};
    struct sv_planner_router_req rq = {.req = &rq_req};
    SV_ASSERT_EQ_I64(sv_planner_prefix_match(kv[2], &rq), 80);
    SV_ASSERT_EQ_I64(sv_planner_prefix_match(kv[0], &rq), 0);
    void *s = ops->create(3, NULL, NULL, &e);
    g_assert_no_error(e);
    SV_ASSERT_EQ_I64(ops->route(s, &rq, 3, inst), 2);
    /* Looked up without side effects. */
    struct sv_memtier_kv_stats after;
    sv_memtier_kv_manager_get_stats(kv[2], &after);
    SV_ASSERT_EQ_I64(after.queries, before.queries);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_free_blocks(kv[2]), free_before);
    /* No instance holds it: the least-loaded (instance 1 has the lower score). */
    sv_wl_req rq2_req = {
        .request_id = 8, .input_tokens = 100, .input_tok_ids = other, .n_input_tok_ids = 100};
    struct sv_planner_router_req rq2 = {.req = &rq2_req};
    inst[0].waiting = 1;
    SV_ASSERT_EQ_I64(ops->route(s, &rq2, 3, inst), 1);
    /* A prompt of exactly the cached 96 tokens: at most floor(95/16) = 5 blocks may hit. */
    sv_wl_req rq3_req = {.input_tokens = 96, .input_tok_ids = ids, .n_input_tok_ids = 96};
    struct sv_planner_router_req rq3 = {.req = &rq3_req};
    SV_ASSERT_EQ_I64(sv_planner_prefix_match(kv[2], &rq3), 80);
    ops->destroy(s);
    sv_memtier_kv_seq_free(seq);
    for (int i = 0; i < 3; i++)
        sv_memtier_kv_manager_free(kv[i]);
}

static void test_router_slo_aware(void)
{
    GError *e = NULL;
    g_autoptr(sv_registry) reg = sv_planner_registry_new(&e);
    g_assert_no_error(e);
    /* A: 10,000 queued tokens at 1 token/us, idle: (10,000 + 1,000) / 0.001 = 11 ms, load 4.
     * B: nothing queued, 0.5 token/us, 5 ms left in its step: 5 + 1,000 / 0.0005 ns = 7 ms,
     * load 10. */
    struct sv_planner_router_inst inst[2] = {
        {.index = 0, .waiting = 1, .waiting_tokens = 10000, .prefill_tokens_per_ns = 0.001},
        {.index = 1, .running = 10, .step_remaining_ns = 5000000, .prefill_tokens_per_ns = 0.0005},
    };
    sv_wl_req rq_req = {.request_id = 1, .input_tokens = 1000};
    struct sv_planner_router_req rq = {.req = &rq_req};
    SV_ASSERT_EQ_I64(sv_planner_ttft_estimate(&inst[0], &rq), 11000000);
    SV_ASSERT_EQ_I64(sv_planner_ttft_estimate(&inst[1], &rq), 7000000);
    const struct sv_planner_router_ops *ops = router(reg, "slo_aware");
    void *s = ops->create(2, NULL, NULL, &e);
    g_assert_no_error(e);
    rq.slo_ttft_ns = 20000000; /* both meet it: the less loaded, A */
    SV_ASSERT_EQ_I64(ops->route(s, &rq, 2, inst), 0);
    rq.slo_ttft_ns = 8000000; /* only B meets it */
    SV_ASSERT_EQ_I64(ops->route(s, &rq, 2, inst), 1);
    rq.slo_ttft_ns = 1000000; /* none: the fastest, B */
    SV_ASSERT_EQ_I64(ops->route(s, &rq, 2, inst), 1);
    ops->destroy(s);
    /* The target as the policy's parameter wins over the request's. */
    s = ops->create(2, sv_registry_param("slo_aware:30"), NULL, &e);
    g_assert_no_error(e);
    rq.slo_ttft_ns = 1000000;
    SV_ASSERT_EQ_I64(ops->route(s, &rq, 2, inst), 0);
    ops->destroy(s);
    CU_ASSERT_PTR_NULL(ops->create(2, "fast", NULL, &e));
    CU_ASSERT(e != NULL);
    g_clear_error(&e);
}

/* ---- whole runs (planner/run.c) ----------------------------------------------------------- */

typedef struct {
    GArray *inst; /* int32_t per request id */
} run_obs;

static void obs_req(void *ctx, const struct sv_wl_outcome *r)
{
    run_obs *o = ctx;
    if (o->inst->len <= r->request_id)
        g_array_set_size(o->inst, (guint)r->request_id + 1);
    g_array_index(o->inst, int32_t, r->request_id) = r->instance;
}

static char *write_file(const char *dir, const char *name, const char *text)
{
    char *path = g_build_filename(dir, name, NULL);
    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    return path;
}

/* One node; instance i = (model, hardware, tp, pd_type or NULL). */
static char *cluster_json(const char *const (*inst)[4], int n)
{
    GString *s = g_string_new("{\"num_nodes\": 1, \"link_bw\": 50, \"link_latency\": 500, "
                              "\"nodes\": [{\"num_instances\": ");
    g_string_append_printf(s,
                           "%d, \"cpu_mem\": {\"mem_size\": 64, \"mem_bw\": 50, "
                           "\"mem_latency\": 0}, \"instances\": [",
                           n);
    for (int i = 0; i < n; i++) {
        g_string_append_printf(s,
                               "%s{\"model_name\": \"%s\", \"hardware\": \"%s\", "
                               "\"npu_mem\": {\"mem_size\": 80, \"mem_bw\": 2000, "
                               "\"mem_latency\": 0}, \"num_npus\": %s, \"tp_size\": %s, "
                               "\"pd_type\": %s%s%s}",
                               i ? ", " : "", inst[i][0], inst[i][1], inst[i][2], inst[i][2],
                               inst[i][3] ? "\"" : "", inst[i][3] ? inst[i][3] : "null",
                               inst[i][3] ? "\"" : "");
    }
    g_string_append(s, "]}]}");
    return g_string_free(s, FALSE);
}

static gboolean run_case(const char *cluster_path, const char *workload_path, const char *router,
                         run_obs *obs, struct sv_planner_run_result *res, GError **error)
{
    g_autoptr(GError) e = NULL;
    struct sv_planner_cluster_cfg *cl = sv_planner_cluster_load(cluster_path, &e);
    g_assert_no_error(e);
    sv_wl_source *wl = sv_wl_open(workload_path, NULL, &e);
    g_assert_no_error(e);
    struct sv_planner_run_observer ob = {.on_request = obs_req, .ctx = obs};
    struct sv_planner_run_cfg rc = {
        .cluster = cl,
        .workload = wl,
        .latency = SV_PLANNER_RUN_LATENCY_ROOFLINE,
        .router_name = router,
        .enable_prefix_caching = -1,
        .enable_chunked_prefill = -1,
        .reserve_full_isl = -1,
        .observer = obs ? &ob : NULL,
    };
    gboolean ok = sv_planner_run(&rc, res, error);
    sv_wl_source_free(wl);
    sv_planner_cluster_free(cl);
    return ok;
}

/* Two models on one cluster: requests naming a model only reach instances serving it; one that
 * names a model nobody serves stops the run with an error naming the request. */
static void test_model_aware_routing(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    const char *const inst[3][4] = {{"meta-llama/Llama-3.1-8B", "H100", "1", NULL},
                                    {"Qwen/Qwen3-32B", "H100", "1", NULL},
                                    {"meta-llama/Llama-3.1-8B", "H100", "1", NULL}};
    g_autofree char *cj = cluster_json(inst, 3);
    g_autofree char *cp = write_file(dir, "cluster.json", cj);
    GString *w = g_string_new(NULL);
    for (int k = 0; k < 12; k++)
        g_string_append_printf(w,
                               "{\"input_toks\": 64, \"output_toks\": 4, \"arrival_time_ns\": %d, "
                               "\"model\": \"%s\"}\n",
                               k * 1000, k % 3 == 1 ? "Qwen/Qwen3-32B" : "Llama-3.1-8B");
    g_autofree char *wp = write_file(dir, "w.jsonl", w->str);
    g_string_free(w, TRUE);
    run_obs o = {g_array_new(FALSE, TRUE, sizeof(int32_t))};
    struct sv_planner_run_result res;
    GError *e = NULL;
    CU_ASSERT_TRUE(run_case(cp, wp, "round_robin", &o, &res, &e));
    g_assert_no_error(e);
    SV_ASSERT_EQ_I64(res.requests, 12);
    int on0 = 0, on2 = 0;
    for (int k = 0; k < 12; k++) {
        int32_t i = g_array_index(o.inst, int32_t, k);
        if (k % 3 == 1) {
            SV_ASSERT_EQ_I64(i, 1);
        } else {
            CU_ASSERT(i == 0 || i == 2);
            on0 += i == 0;
            on2 += i == 2;
        }
    }
    SV_ASSERT_EQ_I64(on0, 4); /* round robin over the two Llama instances */
    SV_ASSERT_EQ_I64(on2, 4);
    g_array_free(o.inst, TRUE);

    g_autofree char *bad =
        write_file(dir, "bad.jsonl",
                   "{\"input_toks\": 8, \"output_toks\": 2, \"arrival_time_ns\": "
                   "0, \"model\": \"mistralai/Mistral-7B\"}\n");
    CU_ASSERT_FALSE(run_case(cp, bad, NULL, NULL, &res, &e));
    CU_ASSERT(e && strstr(e->message, "request 0") && strstr(e->message, "Mistral-7B"));
    g_clear_error(&e);
    sv_test_rmtree(dir);
}

/* A whole run with prefill TP1 on an A100 and decode TP2 on H100s (unequal sizes, different
 * hardware) plus a second prefill: every request's prompt KV crosses the cluster network once. */
static void test_run_pd_heterogeneous(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    const char *const inst[3][4] = {{MODEL, "A100", "1", "prefill"},
                                    {MODEL, "H100", "1", "prefill"},
                                    {MODEL, "H100", "2", "decode"}};
    g_autofree char *cj = cluster_json(inst, 3);
    g_autofree char *cp = write_file(dir, "cluster.json", cj);
    GString *w = g_string_new(NULL);
    int64_t in_sum = 0;
    for (int k = 0; k < 20; k++) {
        int in = 100 + 37 * k;
        in_sum += in;
        g_string_append_printf(w,
                               "{\"input_toks\": %d, \"output_toks\": 16, \"arrival_time_ns\": "
                               "%d}\n",
                               in, k * 2000000);
    }
    g_autofree char *wp = write_file(dir, "w.jsonl", w->str);
    g_string_free(w, TRUE);
    run_obs o = {g_array_new(FALSE, TRUE, sizeof(int32_t))};
    struct sv_planner_run_result res;
    GError *e = NULL;
    CU_ASSERT_TRUE(run_case(cp, wp, NULL, &o, &res, &e));
    g_assert_no_error(e);
    SV_ASSERT_EQ_I64(res.requests, 20);
    SV_ASSERT_EQ_I64(res.kv_handoffs, 20);
    SV_ASSERT_EQ_I64(res.kv_bytes, (uint64_t)in_sum * KV_TOK_LAYER * LAYERS);
    for (int k = 0; k < 20; k++)
        SV_ASSERT_EQ_I64(g_array_index(o.inst, int32_t, k), 2);
    g_array_free(o.inst, TRUE);
    sv_test_rmtree(dir);
}

/* Top-level "kv_transfer" / "slo_ttft_ms" of the cluster config (the run's values win), and the
 * "disaggregation" object of summary.json (only for clusters with prefill/decode instances). */
static char *with_top_keys(const char *cj, const char *keys)
{
    g_assert(cj[0] == '{');
    return g_strdup_printf("{%s, %s", keys, cj + 1);
}

static struct sv_planner_run_result run_kv(const char *cluster_path, const char *wp, const char *kv)
{
    g_autoptr(GError) e = NULL;
    struct sv_planner_cluster_cfg *cl = sv_planner_cluster_load(cluster_path, &e);
    g_assert_no_error(e);
    sv_wl_source *wl = sv_wl_open(wp, NULL, &e);
    g_assert_no_error(e);
    struct sv_planner_run_cfg rc = {
        .cluster = cl,
        .workload = wl,
        .latency = SV_PLANNER_RUN_LATENCY_ROOFLINE,
        .kv_transfer = kv,
        .enable_prefix_caching = -1,
        .enable_chunked_prefill = -1,
        .reserve_full_isl = -1,
    };
    struct sv_planner_run_result res;
    CU_ASSERT_TRUE(sv_planner_run(&rc, &res, &e));
    g_assert_no_error(e);
    sv_wl_source_free(wl);
    sv_planner_cluster_free(cl);
    return res;
}

static JsonObject *summary_object(JsonParser *p, const char *dir)
{
    g_autofree char *path = g_build_filename(dir, "summary.json", NULL);
    GError *e = NULL;
    CU_ASSERT_TRUE_FATAL(json_parser_load_from_file(p, path, &e));
    g_assert_no_error(e);
    return json_node_get_object(json_parser_get_root(p));
}

static void test_config_keys_and_summary(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    const char *const inst[2][4] = {{MODEL, "H100", "1", "prefill"},
                                    {MODEL, "H100", "1", "decode"}};
    g_autofree char *cj = cluster_json(inst, 2);
    g_autofree char *cj_pl =
        with_top_keys(cj, "\"kv_transfer\": \"per_layer\", \"slo_ttft_ms\": 250");
    g_autofree char *cj_bad = with_top_keys(cj, "\"kv_transfer\": \"bogus\"");
    g_autofree char *cp = write_file(dir, "whole.json", cj);
    g_autofree char *cp_pl = write_file(dir, "per_layer.json", cj_pl);
    g_autofree char *cp_bad = write_file(dir, "bad.json", cj_bad);
    GString *w = g_string_new(NULL);
    int64_t in_sum = 0;
    for (int k = 0; k < 10; k++) {
        in_sum += 300 + 50 * k;
        g_string_append_printf(
            w, "{\"input_toks\": %d, \"output_toks\": 8, \"arrival_time_ns\": %d}\n", 300 + 50 * k,
            k * 3000000);
    }
    g_autofree char *wp = write_file(dir, "w.jsonl", w->str);
    g_string_free(w, TRUE);

    GError *e = NULL;
    struct sv_planner_cluster_cfg *cl = sv_planner_cluster_load(cp_pl, &e);
    g_assert_no_error(e);
    CU_ASSERT_STRING_EQUAL(cl->kv_transfer, "per_layer");
    CU_ASSERT_DOUBLE_EQUAL(cl->slo_ttft_ms, 250.0, 0);
    sv_planner_cluster_free(cl);
    CU_ASSERT_PTR_NULL(sv_planner_cluster_load(cp_bad, &e));
    CU_ASSERT_PTR_NOT_NULL(e && strstr(e->message, "bad.json.kv_transfer: must be \"whole\""));
    g_clear_error(&e);

    /* The config's per_layer changes the run; the run's "whole" wins over it and gives exactly
     * the run of the config without the key. */
    struct sv_planner_run_result whole = run_kv(cp, wp, NULL);
    struct sv_planner_run_result pl = run_kv(cp_pl, wp, NULL);
    struct sv_planner_run_result pl_over = run_kv(cp_pl, wp, "whole");
    SV_ASSERT_EQ_I64(whole.kv_handoffs, 10);
    SV_ASSERT_EQ_I64(pl.kv_bytes, whole.kv_bytes);
    CU_ASSERT(pl.kv_transfer_ns != whole.kv_transfer_ns);
    SV_ASSERT_EQ_I64(pl_over.kv_transfer_ns, whole.kv_transfer_ns);
    SV_ASSERT_EQ_I64(pl_over.makespan_ns, whole.makespan_ns);

    /* servesim run: summary.json's "disaggregation" carries the run's figures. */
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    const char *argv[] = {SV_SERVESIM_BIN, "run",      "--cluster",    cp,  "--workload", wp,
                          "--latency",     "roofline", "--output-dir", out, "--quiet",    NULL};
    char *so = NULL, *se = NULL;
    int status = -1;
    CU_ASSERT_TRUE_FATAL(sv_test_spawn(argv, &so, &se, &status));
    SV_ASSERT_EQ_I64(status, 0);
    g_free(so);
    g_free(se);
    g_autoptr(JsonParser) jp = json_parser_new();
    JsonObject *sum = summary_object(jp, out);
    CU_ASSERT_TRUE_FATAL(json_object_has_member(sum, "disaggregation"));
    JsonObject *d = json_object_get_object_member(sum, "disaggregation");
    SV_ASSERT_EQ_I64(json_object_get_int_member(d, "handoffs"), 10);
    SV_ASSERT_EQ_I64(json_object_get_int_member(d, "kv_bytes"), in_sum * KV_TOK_LAYER * LAYERS);
    SV_ASSERT_EQ_I64(json_object_get_int_member(d, "kv_waits"), 0);
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(d, "kv_transfer_ms_total"),
                           (double)whole.kv_transfer_ns / 1e6, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(d, "kv_transfer_ms_mean"),
                           (double)whole.kv_transfer_ns / 1e6 / 10, 1e-9);
    CU_ASSERT(json_object_get_int_member(d, "kv_blocks") > 0);

    /* Without prefill/decode instances there is no such object. */
    const char *const solo[1][4] = {{MODEL, "H100", "1", NULL}};
    g_autofree char *cs = cluster_json(solo, 1);
    g_autofree char *csp = write_file(dir, "solo.json", cs);
    argv[3] = csp;
    CU_ASSERT_TRUE_FATAL(sv_test_spawn(argv, &so, &se, &status));
    SV_ASSERT_EQ_I64(status, 0);
    g_free(so);
    g_free(se);
    g_autoptr(JsonParser) jp2 = json_parser_new();
    CU_ASSERT_FALSE(json_object_has_member(summary_object(jp2, out), "disaggregation"));
    sv_test_rmtree(dir);
}

/* LLMServingSim's RTX 4090 case: vLLM measured 2,588 KV blocks of 16 tokens on that card
 * (issue 4); the 300 ShareGPT requests at 10/s overflow them, so requests are preempted. */
static void test_rtx4090_case(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim/cases/RTX4090/Llama-3.1-8B",
                      "the RTX4090 Llama-3.1-8B reference case");
    const char *cfg = SV_SHARED "/reference/llmservingsim/cases/RTX4090/Llama-3.1-8B/config.json";
    const char *wl = SV_SHARED "/reference/llmservingsim/workloads/"
                               "sharegpt-llama-3.1-8b-300-sps10.jsonl";
    const char *prof = SV_SHARED "/reference/llmservingsim/profiles";
    if (!g_file_test(cfg, G_FILE_TEST_EXISTS) || !g_file_test(prof, G_FILE_TEST_IS_DIR)) {
        CU_FAIL("reference data missing");
        return;
    }
    GError *e = NULL;
    struct sv_planner_cluster_cfg *cl = sv_planner_cluster_load(cfg, &e);
    g_assert_no_error(e);
    sv_wl_source *src = sv_wl_open(wl, NULL, &e);
    g_assert_no_error(e);
    struct sv_planner_run_cfg rc = {
        .cluster = cl,
        .workload = src,
        .profiles_root = prof,
        .latency = SV_PLANNER_RUN_LATENCY_PROFILE,
        .enable_prefix_caching = -1,
        .enable_chunked_prefill = -1,
        .reserve_full_isl = -1,
    };
    struct sv_planner_run_result res;
    CU_ASSERT_TRUE(sv_planner_run(&rc, &res, &e));
    g_assert_no_error(e);
    SV_ASSERT_EQ_I64(res.kv_blocks, 2588);
    SV_ASSERT_EQ_I64(res.requests, 300);
    CU_ASSERT(res.preemptions > 0);
    sv_wl_source_free(src);
    sv_planner_cluster_free(cl);
}

int main(void)
{
    static const sv_test_case pd[] = {
        {"pair_bytes", test_pair_bytes},
        {"pd_1to1", test_pd_1to1},
        {"pd_2to1", test_pd_2to1},
        {"pd_1to2", test_pd_1to2},
        {"pd_unequal_tp1_a100_to_tp2_h100", test_pd_unequal},
        {"pd_decode_full_waits", test_pd_decode_full_waits},
        {"pd_prefill_backpressure", test_pd_prefill_backpressure},
        {"pd_shared_link_maxmin", test_pd_shared_link},
        {"pd_shares_link_with_tp_allreduce", test_pd_shares_link_with_tp},
        {"pd_per_layer", test_pd_per_layer},
        {"pd_per_layer_overlaps_prefill", test_pd_per_layer_overlap},
        {NULL, NULL},
    };
    static const sv_test_case routers[] = {
        {"prefix_aware", test_router_prefix_aware},
        {"slo_aware", test_router_slo_aware},
        {NULL, NULL},
    };
    static const sv_test_case runs[] = {
        {"model_aware_routing", test_model_aware_routing},
        {"run_pd_heterogeneous", test_run_pd_heterogeneous},
        {"config_keys_and_summary", test_config_keys_and_summary},
        {"rtx4090_case_kv_blocks", test_rtx4090_case},
        {NULL, NULL},
    };
    sv_test_add_suite("pd", pd);
    sv_test_add_suite("runs", runs);
    sv_test_add_suite("routers", routers);
    return sv_test_run();
}
