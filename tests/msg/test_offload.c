/* Memory tiers in the serving group (msg/offload.c; PLAN issue 8 tests 2 and 13): weight parts
 * streamed from a lower tier before their compute, in prefetch and serial overlap.
 *
 * The tier fabric here is a test-local fake (cfg.tiers.xfer): a route is one link of `bpns`
 * bytes/ns plus a latency, a transfer takes latency + bytes / bpns, with no sharing. That is
 * exactly what the real fabric gives for the streamed loads of one rank, which run one at a time
 * (a data edge chains them and the device's comm slot holds one): route cpu -> npu =
 * [dram 1000 B/ns, pcie h2d 64 B/ns] = min = 64 B/ns (PLAN §7 test 2). */
#include "msg/msg.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>

/* Llama-3.1-8B decoder layer, bf16 (PLAN §7 constants): params = 4096·128·(32+8+8+32) +
 * 3·4096·14336 + 2·4096 = 41,943,040 + 176,160,768 + 8,192 = 218,112,000 -> 436,224,000 B. */
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
        {"no part off the device", test_no_stream_unchanged},
        {NULL, NULL},
    };
    sv_test_add_suite("offload", cases);
    return sv_test_run();
}
