/* Swap preemption (vLLM v0; msg/offload.c, issue 8 test 8) on the real tier fabric: a
 * standalone solver with NPU 0's PCIe (64 GB/s = 64 B/ns per direction, latency 0) and node 0's
 * host DRAM (1000 GB/s, so PCIe is the bottleneck: [dram, h2d] and [d2h, dram] run at 64 B/ns).
 *
 * Llama-3.1-8B KV (docs/memory-tiers.md): 2 · 8 heads · 128 · 2 B = 4,096 B per token and layer, x
 * 32 layers = 131,072 B per token; a 16-token block 2,097,152 B.
 *
 * Scenario (pool of 14 blocks of 16 tokens, no full-sequence reserve):
 *   step 0: A (112 prompt tokens, 7 blocks) and B (100 prompt tokens, ceil(100/16) = 7 blocks)
 *           are both prefilled; the pool is full.
 *   step 1: A's token 113 needs an 8th block: B, the tail, is preempted holding 7 blocks with
 *           100 computed tokens. Swap: 7 · 2,097,152 = 14,680,064 B to host DRAM at 64 B/ns
 *           = 229,376 ns before the step's forward (A decodes with 112 tokens of history).
 *   A finishes (5 output tokens); B can only come back when 7 blocks are free (A holds 8 of 14).
 *   B's swap-in step: the same 14,680,064 B back = 229,376 ns, then B decodes with history 100
 *           (its computed tokens were kept: nothing is recomputed).
 * Recompute mode (vLLM v1): no transfer; B re-runs its 100 + 1 reached tokens as a prefill. */
#include "msg/msg.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>

#define SWAP_BYTES 14680064ull /* 7 blocks x 2,097,152 B */
#define SWAP_NS 229376         /* 14,680,064 / 64 */

typedef struct {
    uint64_t iteration;
    sv_time start, end;
    uint32_t n_prefill, n_decode;
    int64_t scheduled;
} iter_rec;

typedef struct {
    sv_engine *eng;
    sv_memtier_kv_manager *kv;
    sv_compute_latency *lat;
    sv_memtier_fabric *fab;
    sv_memtier_tier *cpu;
    const sv_memtier_route *out_r[1], *in_r[1];
    sv_msg *msg;
    iter_rec it[64];
    int n_iter;
    struct sv_wl_outcome done[2];
    int n_done;
} fx;

static void on_iter(void *ctx, const struct sv_msg_iter_done *d)
{
    fx *f = ctx;
    if (f->n_iter < 64)
        f->it[f->n_iter++] = (iter_rec){d->iteration, d->start_ns, d->end_ns,
                                        d->n_prefill, d->n_decode, d->scheduled_tokens};
}

static void on_done(void *ctx, const struct sv_wl_outcome *o, void *user)
{
    fx *f = ctx;
    if (f->n_done < 2)
        f->done[f->n_done++] = *o;
}

static void fx_init(fx *f, gboolean swap)
{
    memset(f, 0, sizeof *f);
    GError *e = NULL;
    f->eng = sv_engine_new(1);
    f->kv = sv_memtier_kv_manager_new(14, 16, FALSE);
    struct sv_compute_model_cfg mc;
    struct sv_compute_hw_cfg hw;
    CU_ASSERT_FATAL(sv_compute_model_lookup("meta-llama/Llama-3.1-8B", NULL, &mc, &e));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100", &hw, &e));
    f->lat = sv_compute_latency_new_roofline(&mc, &hw, 1, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->lat);
    f->fab = sv_memtier_fabric_new(f->eng, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->fab);
    sv_memtier_fabric_add_pcie(f->fab, 0, 0, 64, 0, FALSE);
    struct sv_memtier_tier_cfg tc = {
        .kind = SV_MEMTIER_DRAM,
        .capacity_bytes = UINT64_C(1) << 30,
        .read_gbps = 1000,
    };
    g_strlcpy(tc.name, "node0/cpu", sizeof tc.name);
    f->cpu = sv_memtier_tier_new(f->eng, &tc);
    struct sv_memtier_loc cpu = {SV_MEMTIER_DRAM, 0, 0}, npu = {SV_MEMTIER_HBM, 0, 0};
    sv_memtier_fabric_add_tier(f->fab, &cpu, f->cpu);
    f->out_r[0] = sv_memtier_fabric_route(f->fab, &npu, &cpu, &e);
    f->in_r[0] = sv_memtier_fabric_route(f->fab, &cpu, &npu, &e);
    CU_ASSERT_FATAL(f->out_r[0] && f->in_r[0]);
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
                .fabric = f->fab,
                .swap_route = f->out_r,
                .swap_in_route = f->in_r,
                .swap_tier = f->cpu,
                .preemption_swap = swap,
            },
    };
    struct sv_msg_hooks h = {.on_iter_done = on_iter, .on_req_done = on_done, .ctx = f};
    f->msg = sv_msg_new(f->eng, &c, &h, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->msg);
    sv_wl_req a = {.request_id = 0, .input_tokens = 112, .output_tokens = 5};
    sv_wl_req b = {.request_id = 1, .input_tokens = 100, .output_tokens = 2};
    CU_ASSERT_FATAL(sv_msg_submit(f->msg, &a, NULL, NULL));
    CU_ASSERT_FATAL(sv_msg_submit(f->msg, &b, NULL, NULL));
    sv_engine_run(f->eng, SV_TIME_MAX);
    CU_ASSERT_EQUAL_FATAL(f->n_done, 2);
}

static void fx_clear(fx *f)
{
    sv_msg_free(f->msg);
    sv_memtier_fabric_free(f->fab);
    sv_memtier_tier_free(f->cpu);
    sv_memtier_kv_manager_free(f->kv);
    sv_compute_latency_free(f->lat);
    sv_engine_free(f->eng);
}

static sv_time decode_ns(fx *f, int64_t history)
{
    struct sv_compute_batch_shape s;
    sv_compute_batch_shape_init(&s, NULL, NULL, 0, &history, 1);
    struct sv_compute_iter_time it;
    sv_compute_iter_time(f->lat, &s, 0, 32, &it);
    return it.total_ns;
}

static void test_swap_cost(void)
{
    fx f;
    fx_init(&f, TRUE);
    /* Step 1: the swap-out step, A alone decoding token 113 (history 112). */
    CU_ASSERT_EQUAL(f.it[1].n_decode, 1);
    CU_ASSERT_EQUAL(f.it[1].n_prefill, 0);
    CU_ASSERT_EQUAL(f.it[1].end - f.it[1].start, SWAP_NS + decode_ns(&f, 112));
    /* The step after A's last: B swapped back in, decoding with history 100. */
    int k = -1;
    for (int i = 2; i < f.n_iter; i++)
        if (f.it[i].scheduled == 1 && f.it[i - 1].end == f.it[i].start &&
            f.done[0].request_id == 0 && f.it[i].start == f.done[0].last_token_ns)
            k = i;
    CU_ASSERT_FATAL(k > 0);
    CU_ASSERT_EQUAL(f.it[k].end - f.it[k].start, SWAP_NS + decode_ns(&f, 100));
    /* B's record; the swap tier's EVICTED_KV is back to 0. */
    CU_ASSERT_EQUAL(f.done[1].request_id, 1);
    CU_ASSERT_EQUAL(f.done[1].swap_out_bytes, SWAP_BYTES);
    CU_ASSERT_EQUAL(f.done[1].swap_in_bytes, SWAP_BYTES);
    CU_ASSERT_EQUAL(f.done[1].preemptions, 1);
    CU_ASSERT_EQUAL(sv_memtier_tier_used_by(f.cpu, SV_MEMTIER_OWNER_EVICTED_KV), 0);
    struct sv_msg_tier_stats st;
    sv_msg_get_tier_stats(f.msg, &st);
    CU_ASSERT_EQUAL(st.swap_outs, 1);
    CU_ASSERT_EQUAL(st.swap_ins, 1);
    CU_ASSERT_EQUAL(st.swap_out_bytes, SWAP_BYTES);
    CU_ASSERT_EQUAL(st.swap_in_bytes, SWAP_BYTES);
    CU_ASSERT_EQUAL(st.swap_fallbacks, 0);
    CU_ASSERT_EQUAL(st.tier_bytes, 2 * SWAP_BYTES);
    CU_ASSERT_EQUAL(sv_memtier_fabric_bytes_booked(f.fab), 2 * SWAP_BYTES);
    fx_clear(&f);
}

/* Recompute mode: no transfer; B comes back as a 101-token prefill (100 prompt + its first
 * output token, all recomputed). */
static void test_recompute(void)
{
    fx f;
    fx_init(&f, FALSE);
    CU_ASSERT_EQUAL(f.it[1].end - f.it[1].start, decode_ns(&f, 112));
    gboolean found = FALSE;
    for (int i = 2; i < f.n_iter; i++)
        if (f.it[i].scheduled == 101 && f.it[i].n_prefill == 1)
            found = TRUE;
    CU_ASSERT_TRUE(found);
    CU_ASSERT_EQUAL(f.done[1].swap_out_bytes, 0);
    CU_ASSERT_EQUAL(sv_memtier_fabric_bytes_booked(f.fab), 0);
    fx_clear(&f);
}

/* Swap space short. A 1 MiB tier cannot take 14,680,064 B: recomputed, counted as a fallback.
 * A 64 MiB tier (67,108,864 B) full with two 33,554,432-B prefix chunks: the pool gives one
 * chunk up (33,554,432 B free >= 14,680,064) and the swap goes ahead. */
static void run_small(uint64_t capacity, int chunks, struct sv_msg_tier_stats *st,
                      uint32_t *pool_len)
{
    fx f;
    memset(&f, 0, sizeof f);
    GError *e = NULL;
    f.eng = sv_engine_new(1);
    f.kv = sv_memtier_kv_manager_new(14, 16, FALSE);
    struct sv_compute_model_cfg mc;
    struct sv_compute_hw_cfg hw;
    CU_ASSERT_FATAL(sv_compute_model_lookup("meta-llama/Llama-3.1-8B", NULL, &mc, &e));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100", &hw, &e));
    f.lat = sv_compute_latency_new_roofline(&mc, &hw, 1, NULL, &e);
    f.fab = sv_memtier_fabric_new(f.eng, NULL, &e);
    sv_memtier_fabric_add_pcie(f.fab, 0, 0, 64, 0, FALSE);
    struct sv_memtier_tier_cfg tc = {
        .kind = SV_MEMTIER_DRAM, .capacity_bytes = capacity, .read_gbps = 1000};
    g_strlcpy(tc.name, "node0/cpu", sizeof tc.name);
    f.cpu = sv_memtier_tier_new(f.eng, &tc);
    struct sv_memtier_loc cpu = {SV_MEMTIER_DRAM, 0, 0}, npu = {SV_MEMTIER_HBM, 0, 0};
    sv_memtier_fabric_add_tier(f.fab, &cpu, f.cpu);
    f.out_r[0] = sv_memtier_fabric_route(f.fab, &npu, &cpu, &e);
    f.in_r[0] = sv_memtier_fabric_route(f.fab, &cpu, &npu, &e);
    sv_memtier_prefix_pool *pool = NULL;
    if (chunks > 0) {
        struct sv_memtier_prefix_pool_cfg pc = {
            .tier = f.cpu, .chunk_tokens = 256, .fine_tokens = 16, .chunk_bytes = 33554432};
        pool = sv_memtier_prefix_pool_new(&pc, &e);
        CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
        for (int i = 0; i < chunks; i++)
            CU_ASSERT_FATAL(sv_memtier_prefix_pool_insert(pool, 100 + (uint64_t)i, NULL, NULL));
    }
    struct sv_msg_cfg c = {
        .max_num_seqs = 8,
        .max_num_batched_tokens = 2048,
        .enable_chunked_prefill = TRUE,
        .kv = f.kv,
        .lat = f.lat,
        .num_devices = 1,
        .host_model = SV_MSG_HOST_NONE,
        .tiers = {.fabric = f.fab,
                  .swap_route = f.out_r,
                  .swap_in_route = f.in_r,
                  .swap_tier = f.cpu,
                  .swap_pool = pool,
                  .preemption_swap = TRUE},
    };
    struct sv_msg_hooks h = {.on_iter_done = on_iter, .on_req_done = on_done, .ctx = &f};
    f.msg = sv_msg_new(f.eng, &c, &h, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f.msg);
    sv_wl_req a = {.request_id = 0, .input_tokens = 112, .output_tokens = 5};
    sv_wl_req b = {.request_id = 1, .input_tokens = 100, .output_tokens = 2};
    CU_ASSERT_FATAL(sv_msg_submit(f.msg, &a, NULL, NULL));
    CU_ASSERT_FATAL(sv_msg_submit(f.msg, &b, NULL, NULL));
    sv_engine_run(f.eng, SV_TIME_MAX);
    CU_ASSERT_EQUAL_FATAL(f.n_done, 2);
    sv_msg_get_tier_stats(f.msg, st);
    *pool_len = pool ? sv_memtier_prefix_pool_len(pool) : 0;
    sv_msg_free(f.msg);
    f.msg = NULL;
    sv_memtier_prefix_pool_free(pool);
    fx_clear(&f);
}

static void test_fallback(void)
{
    struct sv_msg_tier_stats st;
    uint32_t len;
    run_small(UINT64_C(1) << 20, 0, &st, &len);
    CU_ASSERT_EQUAL(st.swap_fallbacks, 1);
    CU_ASSERT_EQUAL(st.swap_outs, 0);
    CU_ASSERT_EQUAL(st.tier_bytes, 0);
    run_small(UINT64_C(67108864), 2, &st, &len);
    CU_ASSERT_EQUAL(st.swap_fallbacks, 0);
    CU_ASSERT_EQUAL(st.swap_outs, 1);
    CU_ASSERT_EQUAL(st.swap_ins, 1);
    CU_ASSERT_EQUAL(len, 1);
}

/* The ledger half of test 7 at the group level: a swap run under pressure (12 requests of 60-200
 * prompt tokens and 20-60 outputs on a 30-block pool). Every byte swapped out comes back
 * (sum out = sum in over the requests = the group's counters), evicted_kv ends at 0, and the
 * fabric booked exactly the group's transfers. */
static uint64_t sum_out, sum_in;
static int n_fin;
static void on_done_sum(void *ctx, const struct sv_wl_outcome *o, void *user)
{
    sum_out += o->swap_out_bytes;
    sum_in += o->swap_in_bytes;
    n_fin++;
}

static void test_ledgers_balance(void)
{
    GError *e = NULL;
    sv_engine *eng = sv_engine_new(1);
    sv_memtier_kv_manager *kv = sv_memtier_kv_manager_new(30, 16, TRUE);
    struct sv_compute_model_cfg mc;
    struct sv_compute_hw_cfg hw;
    CU_ASSERT_FATAL(sv_compute_model_lookup("meta-llama/Llama-3.1-8B", NULL, &mc, &e));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100", &hw, &e));
    sv_compute_latency *lat = sv_compute_latency_new_roofline(&mc, &hw, 1, NULL, &e);
    sv_memtier_fabric *fab = sv_memtier_fabric_new(eng, NULL, &e);
    sv_memtier_fabric_add_pcie(fab, 0, 0, 64, 0, FALSE);
    struct sv_memtier_tier_cfg tc = {
        .kind = SV_MEMTIER_DRAM, .capacity_bytes = UINT64_C(1) << 30, .read_gbps = 256};
    g_strlcpy(tc.name, "node0/cpu", sizeof tc.name);
    sv_memtier_tier *cpu = sv_memtier_tier_new(eng, &tc);
    struct sv_memtier_loc lc = {SV_MEMTIER_DRAM, 0, 0}, ln = {SV_MEMTIER_HBM, 0, 0};
    sv_memtier_fabric_add_tier(fab, &lc, cpu);
    const sv_memtier_route *out_r[1] = {sv_memtier_fabric_route(fab, &ln, &lc, &e)};
    const sv_memtier_route *in_r[1] = {sv_memtier_fabric_route(fab, &lc, &ln, &e)};
    struct sv_msg_cfg c = {
        .max_num_seqs = 16,
        .max_num_batched_tokens = 512,
        .enable_chunked_prefill = TRUE,
        .kv = kv,
        .lat = lat,
        .num_devices = 1,
        .tiers = {.fabric = fab,
                  .swap_route = out_r,
                  .swap_in_route = in_r,
                  .swap_tier = cpu,
                  .preemption_swap = TRUE},
    };
    struct sv_msg_hooks h = {.on_req_done = on_done_sum};
    sv_msg *msg = sv_msg_new(eng, &c, &h, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(msg);
    sum_out = sum_in = 0;
    n_fin = 0;
    for (int i = 0; i < 12; i++) {
        sv_wl_req r = {.request_id = (uint64_t)i,
                       .input_tokens = 60 + (i * 37) % 141,
                       .output_tokens = 20 + (i * 13) % 41};
        CU_ASSERT_FATAL(sv_msg_submit(msg, &r, NULL, NULL));
    }
    sv_engine_run(eng, SV_TIME_MAX);
    CU_ASSERT_EQUAL_FATAL(n_fin, 12);
    struct sv_msg_tier_stats st;
    sv_msg_get_tier_stats(msg, &st);
    CU_ASSERT_TRUE(st.swap_outs > 0);
    CU_ASSERT_EQUAL(st.swap_outs, st.swap_ins);
    CU_ASSERT_EQUAL(sum_out, sum_in);
    CU_ASSERT_EQUAL(sum_out, st.swap_out_bytes);
    CU_ASSERT_EQUAL(st.swap_out_bytes, st.swap_in_bytes);
    CU_ASSERT_EQUAL(sv_memtier_tier_used_by(cpu, SV_MEMTIER_OWNER_EVICTED_KV), 0);
    CU_ASSERT_EQUAL(sv_memtier_tier_used(cpu), 0);
    CU_ASSERT_EQUAL(sv_memtier_fabric_bytes_booked(fab), st.swap_out_bytes + st.swap_in_bytes);
    CU_ASSERT_EQUAL(st.tier_bytes, st.swap_out_bytes + st.swap_in_bytes);
    CU_ASSERT_EQUAL(sv_msg_num_swapped(msg), 0);
    sv_msg_free(msg);
    sv_memtier_fabric_free(fab);
    sv_memtier_tier_free(cpu);
    sv_memtier_kv_manager_free(kv);
    sv_compute_latency_free(lat);
    sv_engine_free(eng);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"swap-out and swap-in cost", test_swap_cost},
        {"recompute mode", test_recompute},
        {"swap space short: prefix gives way, else recompute", test_fallback},
        {"ledgers balance under swap pressure", test_ledgers_balance},
        {NULL, NULL},
    };
    sv_test_add_suite("swap", cases);
    return sv_test_run();
}
