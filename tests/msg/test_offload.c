/* Memory tiers in the serving group (msg/offload.c; issue 8 tests 2 and 13): weight parts
 * streamed from a lower tier before their compute, in prefetch and serial overlap.
 *
 * The tier fabric here is a test-local fake (cfg.tiers.xfer): a route is one link of `bpns`
 * bytes/ns plus a latency, a transfer takes latency + bytes / bpns, with no sharing. That is
 * exactly what the real fabric gives for the streamed loads of one rank, which run one at a time
 * (a data edge chains them and the device's comm slot holds one): route cpu -> npu =
 * [dram 1000 B/ns, pcie h2d 64 B/ns] = min = 64 B/ns (issue 8 test 2). */
#include "msg/msg.h"
#include "planner/planner.h"
#include "tests/test_util.h"

#include <json-glib/json-glib.h>

#include <CUnit/CUnit.h>

/* Llama-3.1-8B decoder layer, bf16 (docs/memory-tiers.md constants): params = 4096·128·(32+8+8+32)
 * + 3·4096·14336 + 2·4096 = 41,943,040 + 176,160,768 + 8,192 = 218,112,000 -> 436,224,000 B. */
#define LAYER_BYTES 436224000ull
/* 436,224,000 B / 64 B/ns = 6,816,000 ns. */
#define LOAD_NS 6816000
#define NL 32

struct fake_route {
    double bpns;
    sv_time lat_ns;
};

typedef struct {
    sv_engine *eng;
    sv_memtier_kv_manager *kv;
    sv_compute_latency *lat;
    sv_msg *msg;
    struct fake_route cpu;
    const struct sv_memtier_route *parts[NL + 2];
    const struct sv_memtier_route *const *ranks[1];
    uint64_t bytes[NL + 2];
    sv_time start[8], end[8];
    int n_iter;
    uint64_t xfers, xfer_bytes;
} fx;

static void fake_xfer(void *xctx, const struct sv_memtier_route *route, uint64_t bytes,
                      sv_net_done_fn done, void *ctx, uint64_t arg)
{
    fx *f = xctx;
    const struct fake_route *r = (const struct fake_route *)route;
    f->xfers++;
    f->xfer_bytes += bytes;
    sv_time d = r->lat_ns + (sv_time)((double)bytes / r->bpns);
    sv_engine_schedule_in(f->eng, d, 0, done, ctx, arg);
}

static void on_iter(void *ctx, const struct sv_msg_iter_done *it)
{
    fx *f = ctx;
    if (f->n_iter < 8) {
        f->start[f->n_iter] = it->start_ns;
        f->end[f->n_iter] = it->end_ns;
        f->n_iter++;
    }
}

/* blocks [b0, b1) of the model on the fake cpu tier; serial or prefetch. */
static void fx_init(fx *f, int b0, int b1, gboolean serial)
{
    memset(f, 0, sizeof *f);
    f->eng = sv_engine_new(1);
    f->kv = sv_memtier_kv_manager_new(1000, 16, FALSE);
    struct sv_compute_model_cfg mc;
    struct sv_compute_hw_cfg hw;
    GError *e = NULL;
    CU_ASSERT_FATAL(sv_compute_model_lookup("meta-llama/Llama-3.1-8B", NULL, &mc, &e));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100", &hw, &e));
    f->lat = sv_compute_latency_new_roofline(&mc, &hw, 1, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->lat);
    f->cpu = (struct fake_route){.bpns = 64.0, .lat_ns = 0};
    for (int p = b0; p < b1; p++) {
        f->parts[p] = (const struct sv_memtier_route *)(const void *)&f->cpu;
        f->bytes[p] = LAYER_BYTES;
    }
    f->ranks[0] = f->parts;
    struct sv_msg_cfg c = {
        .max_num_seqs = 8,
        .max_num_batched_tokens = 2048,
        .enable_chunked_prefill = TRUE,
        .kv = f->kv,
        .lat = f->lat,
        .num_devices = 1,
        .host_model = SV_MSG_HOST_NONE,
        .tiers =
            {
                .weight_route = f->ranks,
                .layer_weight_bytes = f->bytes,
                .offload_serial = serial,
                .xfer = fake_xfer,
                .xfer_ctx = f,
            },
    };
    struct sv_msg_hooks h = {.on_iter_done = on_iter, .ctx = f};
    f->msg = sv_msg_new(f->eng, &c, &h, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->msg);
}

static void fx_clear(fx *f)
{
    sv_msg_free(f->msg);
    sv_memtier_kv_manager_free(f->kv);
    sv_compute_latency_free(f->lat);
    sv_engine_free(f->eng);
}

/* One request of 16 prompt tokens and 2 output tokens: iteration 0 is its prefill, iteration 1
 * one decode step with 16 tokens of KV history. */
static void run_one(fx *f)
{
    sv_wl_req r = {.request_id = 1, .input_tokens = 16, .output_tokens = 2};
    CU_ASSERT_FATAL(sv_msg_submit(f->msg, &r, NULL, NULL));
    sv_engine_run(f->eng, SV_TIME_MAX);
    CU_ASSERT_EQUAL_FATAL(f->n_iter, 2);
}

static void decode_time(fx *f, struct sv_compute_iter_time *it)
{
    int64_t kv = 16;
    struct sv_compute_batch_shape s;
    sv_compute_batch_shape_init(&s, NULL, NULL, 0, &kv, 1);
    sv_compute_iter_time(f->lat, &s, 0, NL, it);
}

/* Test 2, prefetch: blocks 0-31 on cpu. Load k starts when load k-1 ends (k·6,816,000) and
 * compute k-2 is done (earlier, c < s); layer l computes from max(load l done, layer l-1 done)
 * = (l+1)·s; the last layer ends at 32·s + c, then the head:
 *   step = 32 · 6,816,000 + c + head = 218,112,000 + c + head
 * (the prologue, p < s, overlaps load 0). */
static void test_stream_prefetch(void)
{
    fx f;
    fx_init(&f, 0, NL, FALSE);
    run_one(&f);
    struct sv_compute_iter_time it;
    decode_time(&f, &it);
    CU_ASSERT_TRUE_FATAL(it.layer_ns < LOAD_NS && it.prologue_ns < LOAD_NS);
    CU_ASSERT_EQUAL(f.end[1] - f.start[1], 218112000 + it.layer_ns + it.head_ns);
    CU_ASSERT_EQUAL(f.xfers, 2 * NL); /* both iterations stream every layer */
    CU_ASSERT_EQUAL(f.xfer_bytes, 2ull * NL * LAYER_BYTES);
    fx_clear(&f);
}

/* Test 2, serial (LLMServingSim's load-then-compute): step = p + Σ_l (s + c) + head
 *   = p + 32 · (6,816,000 + c) + head. */
static void test_stream_serial(void)
{
    fx f;
    fx_init(&f, 0, NL, TRUE);
    run_one(&f);
    struct sv_compute_iter_time it;
    decode_time(&f, &it);
    CU_ASSERT_EQUAL(f.end[1] - f.start[1],
                    it.prologue_ns + NL * (LOAD_NS + it.layer_ns) + it.head_ns);
    fx_clear(&f);
}

/* docs/memory-tiers.md worked example, step 2: blocks 28-31 on cpu, prefetch. The loads of
 * 28..31 start at t = 0 (nothing earlier streams) and end at 1..4 · 6,816,000 ns; layers 0-27
 * take p + 28·c < 6,816,000, so layer 28 starts at 6,816,000, layer 31 at 27,264,000 and
 *   step = 27,264,000 + c + head. */
static void test_stream_tail_blocks(void)
{
    fx f;
    fx_init(&f, 28, NL, FALSE);
    run_one(&f);
    struct sv_compute_iter_time it;
    decode_time(&f, &it);
    CU_ASSERT_TRUE_FATAL(it.prologue_ns + 28 * it.layer_ns < LOAD_NS);
    CU_ASSERT_EQUAL(f.end[1] - f.start[1], 27264000 + it.layer_ns + it.head_ns);
    fx_clear(&f);
}

/* Test 2 on the real fabric (memory-tier/fabric.c, standalone solver): route cpu -> npu =
 * [dram 1000 GB/s, pcie h2d 64 GB/s], latency 0: one flow at min = 64 B/ns, 6,816,000 ns per
 * layer; step = 218,112,000 + c + head as above. */
static void test_stream_real_fabric(void)
{
    fx f;
    fx_init(&f, 0, 0, FALSE);
    sv_msg_free(f.msg);
    GError *e = NULL;
    sv_memtier_fabric *fab = sv_memtier_fabric_new(f.eng, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
    sv_memtier_fabric_add_pcie(fab, 0, 0, 64, 0, FALSE);
    struct sv_memtier_tier_cfg tc = {
        .kind = SV_MEMTIER_DRAM, .capacity_bytes = UINT64_C(1) << 36, .read_gbps = 1000};
    g_strlcpy(tc.name, "node0/cpu", sizeof tc.name);
    sv_memtier_tier *cpu = sv_memtier_tier_new(f.eng, &tc);
    struct sv_memtier_loc lc = {SV_MEMTIER_DRAM, 0, 0}, ln = {SV_MEMTIER_HBM, 0, 0};
    sv_memtier_fabric_add_tier(fab, &lc, cpu);
    const sv_memtier_route *r = sv_memtier_fabric_route(fab, &lc, &ln, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    for (int p = 0; p < NL; p++) {
        f.parts[p] = r;
        f.bytes[p] = LAYER_BYTES;
    }
    struct sv_msg_cfg c = {
        .max_num_seqs = 8,
        .max_num_batched_tokens = 2048,
        .enable_chunked_prefill = TRUE,
        .kv = f.kv,
        .lat = f.lat,
        .num_devices = 1,
        .host_model = SV_MSG_HOST_NONE,
        .tiers = {.fabric = fab, .weight_route = f.ranks, .layer_weight_bytes = f.bytes},
    };
    struct sv_msg_hooks h = {.on_iter_done = on_iter, .ctx = &f};
    f.msg = sv_msg_new(f.eng, &c, &h, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f.msg);
    run_one(&f);
    struct sv_compute_iter_time it;
    decode_time(&f, &it);
    CU_ASSERT_EQUAL(f.end[1] - f.start[1], 218112000 + it.layer_ns + it.head_ns);
    CU_ASSERT_EQUAL(sv_memtier_fabric_bytes_booked(fab), 2ull * NL * LAYER_BYTES);
    sv_msg_free(f.msg);
    f.msg = NULL;
    sv_memtier_fabric_free(fab);
    sv_memtier_tier_free(cpu);
    fx_clear(&f);
}

/* Live KV off the device (docs/memory-tiers.md use 2), prefetch: every layer's KV on a fake tier of
 * 1 B/ns (both directions). Decode step of a 2,000-token prompt: each layer reads the history,
 * 2,000 tokens x 4,096 B (2 · 8 KV heads · 128 · 2 B) = 8,192,000 B = R = 8,192,000 ns, while it
 * computes (c < R), and writes the new token's KV, 4,096 B = S = 4,096 ns, after it. The device's
 * comm slot holds one transfer at a time (ASTRA policy), and store(l) is issued before read(l+1):
 *   layer 0's read ends at p + R; each later layer adds S + R; the head (h > S) runs beside the
 *   last store: step = p + 32·R + 31·S + h. */
static void test_live_kv_off_device(void)
{
    fx f;
    fx_init(&f, 0, 0, FALSE);
    sv_msg_free(f.msg);
    struct fake_route slow = {.bpns = 1.0, .lat_ns = 0};
    const struct sv_memtier_route *kv[NL];
    for (int l = 0; l < NL; l++)
        kv[l] = (const struct sv_memtier_route *)(const void *)&slow;
    const struct sv_memtier_route *const *kv_ranks[1] = {kv};
    struct sv_msg_cfg c = {
        .max_num_seqs = 8,
        .max_num_batched_tokens = 4096,
        .enable_chunked_prefill = TRUE,
        .kv = f.kv,
        .lat = f.lat,
        .num_devices = 1,
        .host_model = SV_MSG_HOST_NONE,
        .tiers = {.kv_route = kv_ranks,
                  .kv_store_route = kv_ranks,
                  .xfer = fake_xfer,
                  .xfer_ctx = &f},
    };
    struct sv_msg_hooks h = {.on_iter_done = on_iter, .ctx = &f};
    f.msg = sv_msg_new(f.eng, &c, &h, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f.msg);
    sv_wl_req r = {.request_id = 1, .input_tokens = 2000, .output_tokens = 2};
    CU_ASSERT_FATAL(sv_msg_submit(f.msg, &r, NULL, NULL));
    sv_engine_run(f.eng, SV_TIME_MAX);
    CU_ASSERT_EQUAL_FATAL(f.n_iter, 2);
    int64_t kvh = 2000;
    struct sv_compute_batch_shape sh;
    sv_compute_batch_shape_init(&sh, NULL, NULL, 0, &kvh, 1);
    struct sv_compute_iter_time it;
    sv_compute_iter_time(f.lat, &sh, 0, NL, &it);
    CU_ASSERT_TRUE_FATAL(it.layer_ns < 8192000 && it.head_ns > 4096);
    CU_ASSERT_EQUAL(f.end[1] - f.start[1],
                    it.prologue_ns + NL * 8192000 + (NL - 1) * 4096 + it.head_ns);
    fx_clear(&f);
}

/* Test 13, expert cache: Mixtral-8x7B (8 experts, top-2, 32 layers), 2 cached experts per layer
 * (64 slots, LRU over layer·8 + e), routed sets {0,1}, {0,2}, {1,2} in steps 0, 1, 2 (a test
 * router). Per layer: step 0 misses 0 and 1; step 1 hits 0, misses 2 and evicts 1 (the least
 * recent, as 0 was just touched); step 2 misses 1 and evicts 0, hits 2: misses 2, 1, 1.
 * Over 32 layers: misses 64 + 32 + 32 = 128, hits 0 + 32 + 32 = 64. One expert (Mixtral
 * config.json: hidden 4096, intermediate 14336, three matrices, bf16) = 3 · 4096 · 14336 · 2 =
 * 352,321,536 B; at 64 B/ns 5,505,024 ns. A miss is fetched when the layer runs (on demand):
 * decode step 2 = its compute + 32 · 5,505,024 ns. */
#define EXPERT_BYTES 352321536ull

static void *set_create(const char *param, sv_rng *rng, GError **error)
{
    return g_new0(int, 1);
}

static void set_route(void *state, const struct sv_msg_expert_route_req *rq, int64_t *counts)
{
    static const int sets[3][2] = {{0, 1}, {0, 2}, {1, 2}};
    int *step = state;
    memset(counts, 0, sizeof(int64_t) * (size_t)rq->n_experts);
    const int *s = sets[*step % 3];
    counts[s[0]] = rq->tokens;
    counts[s[1]] = rq->tokens * (rq->top_k - 1);
    (*step)++;
}

static const struct sv_msg_expert_route_ops set_ops = {
    .api_version = SV_REGISTRY_API_VERSION,
    .create = set_create,
    .destroy = g_free,
    .route = set_route,
};

static void test_expert_cache(void)
{
    fx f;
    memset(&f, 0, sizeof f);
    GError *e = NULL;
    f.eng = sv_engine_new(1);
    f.kv = sv_memtier_kv_manager_new(1000, 16, FALSE);
    struct sv_compute_model_cfg mc;
    struct sv_compute_hw_cfg hw;
    CU_ASSERT_FATAL(sv_compute_model_lookup("mistralai/Mixtral-8x7B-v0.1", NULL, &mc, &e));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100", &hw, &e));
    f.lat = sv_compute_latency_new_roofline(&mc, &hw, 1, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f.lat);
    f.cpu = (struct fake_route){.bpns = 64.0, .lat_ns = 0};
    const struct sv_memtier_route *er[1] = {(const struct sv_memtier_route *)(const void *)&f.cpu};
    struct sv_msg_cfg c = {
        .max_num_seqs = 8,
        .max_num_batched_tokens = 2048,
        .enable_chunked_prefill = TRUE,
        .kv = f.kv,
        .lat = f.lat,
        .num_devices = 1,
        .host_model = SV_MSG_HOST_NONE,
        .expert_route = &set_ops,
        .tiers = {.expert_cache_slots = 2,
                  .expert_route = er,
                  .expert_bytes = EXPERT_BYTES,
                  .xfer = fake_xfer,
                  .xfer_ctx = &f},
    };
    struct sv_msg_hooks h = {.on_iter_done = on_iter, .ctx = &f};
    f.msg = sv_msg_new(f.eng, &c, &h, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f.msg);
    sv_wl_req r = {.request_id = 1, .input_tokens = 16, .output_tokens = 3};
    CU_ASSERT_FATAL(sv_msg_submit(f.msg, &r, NULL, NULL));
    sv_engine_run(f.eng, SV_TIME_MAX);
    CU_ASSERT_EQUAL_FATAL(f.n_iter, 3);
    struct sv_msg_tier_stats st;
    sv_msg_get_tier_stats(f.msg, &st);
    CU_ASSERT_EQUAL(st.expert_misses, 128);
    CU_ASSERT_EQUAL(st.expert_hits, 64);
    CU_ASSERT_EQUAL(st.expert_fetch_bytes, 128 * EXPERT_BYTES);
    CU_ASSERT_EQUAL(f.xfer_bytes, 128 * EXPERT_BYTES);
    int64_t kvh = 17; /* step 2 decodes with 16 prompt + 1 generated tokens of history */
    struct sv_compute_batch_shape sh;
    sv_compute_batch_shape_init(&sh, NULL, NULL, 0, &kvh, 1);
    struct sv_compute_iter_time it;
    sv_compute_iter_time(f.lat, &sh, 0, 32, &it);
    CU_ASSERT_EQUAL(f.end[2] - f.start[2], it.total_ns + 32 * 5505024);
    sv_msg_free(f.msg);
    sv_memtier_kv_manager_free(f.kv);
    sv_compute_latency_free(f.lat);
    sv_engine_free(f.eng);
}

/* TP 2 (per-operator DAG, closed-form all-reduces on the comm slot): each rank streams its half of
 * every layer, 218,112,000 B = 3,408,000 ns at 64 B/ns, on its own route. Both iterations load
 * 2 ranks x 32 layers; a step cannot be shorter than one rank's 32 loads, 109,056,000 ns. */
static void test_stream_tp2(void)
{
    fx f;
    fx_init(&f, 0, 0, FALSE);
    sv_msg_free(f.msg);
    sv_compute_latency_free(f.lat);
    struct sv_compute_model_cfg mc;
    struct sv_compute_hw_cfg hw;
    CU_ASSERT_FATAL(sv_compute_model_lookup("meta-llama/Llama-3.1-8B", NULL, &mc, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100", &hw, NULL));
    f.lat = sv_compute_latency_new_roofline(&mc, &hw, 2, NULL, NULL);
    struct fake_route r1 = {.bpns = 64.0};
    const struct sv_memtier_route *p1[NL + 2] = {0};
    for (int p = 0; p < NL; p++) {
        f.parts[p] = (const struct sv_memtier_route *)(const void *)&f.cpu;
        p1[p] = (const struct sv_memtier_route *)(const void *)&r1;
        f.bytes[p] = LAYER_BYTES / 2;
    }
    const struct sv_memtier_route *const *ranks[2] = {f.parts, p1};
    struct sv_msg_cfg c = {
        .max_num_seqs = 8,
        .max_num_batched_tokens = 2048,
        .enable_chunked_prefill = TRUE,
        .kv = f.kv,
        .lat = f.lat,
        .num_devices = 2,
        .link_bw_gbps = 450,
        .host_model = SV_MSG_HOST_NONE,
        .tiers = {.weight_route = ranks,
                  .layer_weight_bytes = f.bytes,
                  .xfer = fake_xfer,
                  .xfer_ctx = &f},
    };
    struct sv_msg_hooks h = {.on_iter_done = on_iter, .ctx = &f};
    f.msg = sv_msg_new(f.eng, &c, &h, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f.msg);
    run_one(&f);
    CU_ASSERT_EQUAL(f.xfers, 2 * 2 * NL);
    CU_ASSERT_TRUE(f.end[1] - f.start[1] >= 109056000);
    fx_clear(&f);
}

/* The parallel path (cluster network, PP 2 = one device per stage): every layer streamed from the
 * fake cpu tier (6,816,000 ns each). Stage s streams its 16 layers; both iterations load all 32
 * layers once; a stage's 16 chained loads bound a step from below: 16 · 6,816,000 =
 * 109,056,000 ns. */
static void test_stream_parallel_path(void)
{
    fx f;
    fx_init(&f, 0, NL, FALSE);
    sv_msg_free(f.msg);
    g_autoptr(GError) e = NULL;
    g_autoptr(JsonParser) jp = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(
        jp,
        "{\"link_bw\": 16, \"link_latency\": 20000, \"nodes\": [{\"instances\": [{\"model_name\": "
        "\"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100\", \"npu_mem\": {\"mem_size\": 80, "
        "\"mem_bw\": 3350}, \"pp_size\": 2, \"num_npus\": 2}]}]}",
        -1, &e));
    struct sv_planner_cluster_cfg *cc =
        sv_planner_cluster_from_json(json_parser_get_root(jp), "t.json", &e);
    if (!cc)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cc);
    sv_planner_cluster_net *cn = sv_planner_cluster_net_new(f.eng, cc, SV_NET_MODEL_FLOW, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cn);
    /* Rank = stage here (tp 1): stage 1's routes are the same fake ones. */
    const struct sv_memtier_route *const *ranks[2] = {f.parts, f.parts};
    struct sv_msg_cfg c = {
        .max_num_seqs = 8,
        .max_num_batched_tokens = 2048,
        .enable_chunked_prefill = TRUE,
        .kv = f.kv,
        .lat = f.lat,
        .first_device = sv_planner_cluster_net_first_device(cn, 0),
        .num_devices = 2,
        .host_model = SV_MSG_HOST_NONE,
        .coll = sv_planner_cluster_net_coll(cn),
        .pp_size = 2,
        .tp_group_base = sv_planner_cluster_net_tp_group(cn, 0, 0),
        .tiers = {.weight_route = ranks,
                  .layer_weight_bytes = f.bytes,
                  .xfer = fake_xfer,
                  .xfer_ctx = &f},
    };
    struct sv_msg_hooks h = {.on_iter_done = on_iter, .ctx = &f};
    f.msg = sv_msg_new(f.eng, &c, &h, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f.msg);
    run_one(&f);
    CU_ASSERT_EQUAL(f.xfers, 2 * NL);
    CU_ASSERT_TRUE(f.end[1] - f.start[1] >= 109056000);
    sv_msg_free(f.msg);
    f.msg = NULL;
    sv_planner_cluster_net_free(cn);
    sv_planner_cluster_free(cc);
    fx_clear(&f);
}

/* Nothing off the device: the same step as without a tier cfg (lumped DAG, no transfer). */
static void test_no_stream_unchanged(void)
{
    fx f;
    fx_init(&f, 0, 0, FALSE);
    run_one(&f);
    struct sv_compute_iter_time it;
    decode_time(&f, &it);
    CU_ASSERT_EQUAL(f.end[1] - f.start[1], it.total_ns);
    CU_ASSERT_EQUAL(f.xfers, 0);
    fx_clear(&f);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"weight stream, prefetch", test_stream_prefetch},
        {"weight stream, serial", test_stream_serial},
        {"weight stream, blocks 28-31", test_stream_tail_blocks},
        {"weight stream, real fabric", test_stream_real_fabric},
        {"live KV off the device", test_live_kv_off_device},
        {"expert cache", test_expert_cache},
        {"weight stream, tp 2", test_stream_tp2},
        {"weight stream, parallel path", test_stream_parallel_path},
        {"no part off the device", test_no_stream_unchanged},
        {NULL, NULL},
    };
    sv_test_add_suite("offload", cases);
    return sv_test_run();
}
