/* Lower-tier prefix hits in the serving group (msg/offload.c + sched.c; docs/memory-tiers.md use 4
 * and the msg half of test 6), on the real fabric, prefix pool and hierarchy.
 *
 * Two groups (instances 0 and 1 on NPUs 0 and 1 of node 0) share one host-DRAM prefix pool
 * (--enable-prefix-sharing): PCIe 64 GB/s per direction per NPU, DRAM 1000 GB/s (PCIe is the
 * bottleneck), latencies 0, chunk 256 tokens, KV block 16 tokens, Llama-3.1-8B (131,072 B of KV
 * per token, a chunk 256 · 131,072 = 33,554,432 B).
 *   Request 1 (513 token ids, 1 output token) runs on instance 0: its prefill completes chunks 0
 *   and 1 (tokens 0-511), written through to the pool (background, 2 · 33,554,432 B).
 *   Request 2 (the same 513 ids) then arrives on instance 1: NPU hit 0 (its own cache is empty),
 *   pool hit min(2 chunks, floor(512 / 256) = 2) · 256 = 512 tokens -> prefix_hit_tokens_cpu 512,
 *   kv_load_bytes 512 · 131,072 = 67,108,864 B, loaded over [dram, h2d(1)] at 64 B/ns =
 *   1,048,576 ns before its 1-token prefill (history 512).
 * Without the hierarchy: cpu hit 0, a 513-token prefill. */
#include "msg/msg.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>

#define CHUNK_BYTES 33554432ull

typedef struct {
    sv_engine *eng;
    sv_compute_latency *lat;
    sv_memtier_fabric *fab;
    sv_memtier_tier *cpu;
    sv_memtier_prefix_pool *pool;
    sv_memtier_hier *hier[2];
    sv_memtier_kv_manager *kv[2];
    sv_msg *msg[2];
    struct sv_wl_outcome done[2];
    int n_done;
    sv_time start[4], end[4];
    int32_t inst[4];
    int n_iter;
} fx;

static void on_done(void *ctx, const struct sv_wl_outcome *o, void *user)
{
    fx *f = ctx;
    if (f->n_done < 2)
        f->done[f->n_done++] = *o;
}

static void on_iter(void *ctx, const struct sv_msg_iter_done *d)
{
    fx *f = ctx;
    if (f->n_iter < 4) {
        f->start[f->n_iter] = d->start_ns;
        f->end[f->n_iter] = d->end_ns;
        f->inst[f->n_iter] = d->instance;
        f->n_iter++;
    }
}

static void fx_init(fx *f, gboolean tiers)
{
    memset(f, 0, sizeof *f);
    GError *e = NULL;
    f->eng = sv_engine_new(1);
    struct sv_compute_model_cfg mc;
    struct sv_compute_hw_cfg hw;
    CU_ASSERT_FATAL(sv_compute_model_lookup("meta-llama/Llama-3.1-8B", NULL, &mc, &e));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100", &hw, &e));
    f->lat = sv_compute_latency_new_roofline(&mc, &hw, 1, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->lat);
    f->fab = sv_memtier_fabric_new(f->eng, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->fab);
    sv_memtier_fabric_add_pcie(f->fab, 0, 0, 64, 0, FALSE);
    sv_memtier_fabric_add_pcie(f->fab, 1, 0, 64, 0, FALSE);
    struct sv_memtier_tier_cfg tc = {
        .kind = SV_MEMTIER_DRAM, .capacity_bytes = UINT64_C(1) << 34, .read_gbps = 1000};
    g_strlcpy(tc.name, "node0/cpu", sizeof tc.name);
    f->cpu = sv_memtier_tier_new(f->eng, &tc);
    struct sv_memtier_loc cpu = {SV_MEMTIER_DRAM, 0, 0};
    sv_memtier_fabric_add_tier(f->fab, &cpu, f->cpu);
    struct sv_memtier_prefix_pool_cfg pc = {
        .tier = f->cpu, .chunk_tokens = 256, .fine_tokens = 16, .chunk_bytes = CHUNK_BYTES};
    f->pool = sv_memtier_prefix_pool_new(&pc, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->pool);
    for (int i = 0; i < 2; i++) {
        f->kv[i] = sv_memtier_kv_manager_new(1000, 16, TRUE);
        struct sv_memtier_hier_cfg hc = {
            .fabric = f->fab, .npu = {SV_MEMTIER_HBM, 0, i}, .chunk_tokens = 256};
        f->hier[i] = sv_memtier_hier_new(&hc, &e);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f->hier[i]);
        CU_ASSERT_FATAL(sv_memtier_hier_add_pool(f->hier[i], f->pool, &cpu, &e));
        struct sv_msg_cfg c = {
            .instance = i,
            .max_num_seqs = 8,
            .max_num_batched_tokens = 2048,
            .enable_chunked_prefill = TRUE,
            .kv = f->kv[i],
            .lat = f->lat,
            .first_device = i,
            .num_devices = 1,
            .host_model = SV_MSG_HOST_NONE,
        };
        if (tiers)
            c.tiers =
                (struct sv_msg_tier_cfg){.fabric = f->fab, .hier = f->hier[i], .chunk_tokens = 256};
        struct sv_msg_hooks h = {.on_req_done = on_done, .on_iter_done = on_iter, .ctx = f};
        f->msg[i] = sv_msg_new(f->eng, &c, &h, &e);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f->msg[i]);
    }
}

static void fx_clear(fx *f)
{
    for (int i = 0; i < 2; i++) {
        sv_msg_free(f->msg[i]);
        sv_memtier_hier_free(f->hier[i]);
        sv_memtier_kv_manager_free(f->kv[i]);
    }
    sv_memtier_prefix_pool_free(f->pool);
    sv_memtier_fabric_free(f->fab);
    sv_memtier_tier_free(f->cpu);
    sv_compute_latency_free(f->lat);
    sv_engine_free(f->eng);
}

static void run_two(fx *f)
{
    uint32_t ids[513];
    for (int i = 0; i < 513; i++)
        ids[i] = (uint32_t)(1000 + i);
    sv_wl_req r = {.request_id = 1,
                   .input_tokens = 513,
                   .output_tokens = 1,
                   .input_tok_ids = ids,
                   .n_input_tok_ids = 513};
    CU_ASSERT_FATAL(sv_msg_submit(f->msg[0], &r, NULL, NULL));
    sv_engine_run(f->eng, SV_TIME_MAX); /* request 1 and its write-through finish */
    r.request_id = 2;
    r.arrival_ns = sv_engine_now(f->eng);
    CU_ASSERT_FATAL(sv_msg_submit(f->msg[1], &r, NULL, NULL));
    sv_engine_run(f->eng, SV_TIME_MAX);
    CU_ASSERT_EQUAL_FATAL(f->n_done, 2);
    CU_ASSERT_EQUAL_FATAL(f->n_iter, 2);
}

static sv_time prefill_ns(fx *f, int64_t chunk, int64_t hist)
{
    struct sv_compute_batch_shape s;
    sv_compute_batch_shape_init(&s, &chunk, &hist, 1, NULL, 0);
    struct sv_compute_iter_time it;
    sv_compute_iter_time(f->lat, &s, 0, 32, &it);
    return it.total_ns;
}

/* One scheduled token is a decode for the batch shape (msg/opmap.c, as LLMServingSim's
 * _build_batch), whatever the request's phase. */
static sv_time decode_ns(fx *f, int64_t kv)
{
    struct sv_compute_batch_shape s;
    sv_compute_batch_shape_init(&s, NULL, NULL, 0, &kv, 1);
    struct sv_compute_iter_time it;
    sv_compute_iter_time(f->lat, &s, 0, 32, &it);
    return it.total_ns;
}

static void test_shared_pool_hit(void)
{
    fx f;
    fx_init(&f, TRUE);
    run_two(&f);
    const struct sv_wl_outcome *o = &f.done[1];
    CU_ASSERT_EQUAL(o->request_id, 2);
    CU_ASSERT_EQUAL(o->instance, 1);
    CU_ASSERT_EQUAL(o->prefix_hit_tokens_npu, 0);
    CU_ASSERT_EQUAL(o->prefix_hit_tokens_cpu, 512);
    CU_ASSERT_EQUAL(o->prefix_hit_tokens, 512);
    CU_ASSERT_EQUAL(o->kv_load_bytes, 67108864);
    /* Instance 1's step: the 1,048,576-ns load, then the last prompt token over 512 of history
     * (one scheduled token: timed as a decode). */
    CU_ASSERT_EQUAL(f.inst[1], 1);
    CU_ASSERT_EQUAL(f.end[1] - f.start[1], 1048576 + decode_ns(&f, 512));
    /* Request 1 wrote its two chunks through to the pool. */
    CU_ASSERT_EQUAL(sv_memtier_prefix_pool_len(f.pool), 2);
    CU_ASSERT_EQUAL(f.done[0].prefix_hit_tokens_cpu, 0);
    fx_clear(&f);
}

static void test_no_hierarchy(void)
{
    fx f;
    fx_init(&f, FALSE);
    run_two(&f);
    CU_ASSERT_EQUAL(f.done[1].prefix_hit_tokens_cpu, 0);
    CU_ASSERT_EQUAL(f.done[1].prefix_hit_tokens, 0);
    CU_ASSERT_EQUAL(f.end[1] - f.start[1], prefill_ns(&f, 513, 0));
    CU_ASSERT_EQUAL(sv_memtier_fabric_bytes_booked(f.fab), 0);
    fx_clear(&f);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"shared cpu pool serves the other instance", test_shared_pool_hit},
        {"without the hierarchy", test_no_hierarchy},
        {NULL, NULL},
    };
    sv_test_add_suite("prefix_tiers", cases);
    return sv_test_run();
}
