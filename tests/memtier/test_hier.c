/* The prefix hierarchy (lookup split over tiers, write-through, write-back demotion) and the KV
 * manager's tier hooks (evict hook with chain index, swap out / in). Hand-computed. */
#include "memory-tier/memtier_internal.h"
#include "tests/test_util.h"

#include <string.h>

/* One 256-token chunk of Llama-3.1-8B KV: 256 x 131,072 B = 33,554,432 B. */
#define CHUNK_BYTES UINT64_C(33554432)

struct rig {
    sv_engine *eng;
    sv_memtier_fabric *f;
    sv_memtier_tier *cpu, *ssd;
    sv_memtier_prefix_pool *cpu_pool, *ssd_pool;
    sv_memtier_hier *h;
};

#define NPU0 ((struct sv_memtier_loc){SV_MEMTIER_HBM, 0, 0})
#define CPU0 ((struct sv_memtier_loc){SV_MEMTIER_DRAM, 0, 0})
#define SSD0 ((struct sv_memtier_loc){SV_MEMTIER_SSD, 0, 0})

/* NPU 0 (PCIe 64 GB/s, 0 ns); node 0 DRAM 256 GB/s with `cpu_chunks` chunks of room; SSD read 8,
 * write 4 GB/s, 100,000 ns, 64 chunks. Pools of 256-token chunks over 16-token blocks. */
static void rig_init(struct rig *r, uint64_t cpu_chunks, gboolean write_back)
{
    r->eng = sv_engine_new(1);
    r->f = sv_memtier_fabric_new(r->eng, NULL, NULL);
    sv_memtier_fabric_add_pcie(r->f, 0, 0, 64, 0, FALSE);
    struct sv_memtier_tier_cfg c = {
        .kind = SV_MEMTIER_DRAM, .capacity_bytes = cpu_chunks * CHUNK_BYTES, .read_gbps = 256};
    g_strlcpy(c.name, "node0/cpu", sizeof c.name);
    r->cpu = sv_memtier_tier_new(r->eng, &c);
    struct sv_memtier_tier_cfg s = {.kind = SV_MEMTIER_SSD,
                                    .capacity_bytes = 64 * CHUNK_BYTES,
                                    .read_gbps = 8,
                                    .write_gbps = 4,
                                    .latency_ns = 100000};
    g_strlcpy(s.name, "node0/ssd", sizeof s.name);
    r->ssd = sv_memtier_tier_new(r->eng, &s);
    sv_memtier_fabric_add_tier(r->f, &CPU0, r->cpu);
    sv_memtier_fabric_add_tier(r->f, &SSD0, r->ssd);
    struct sv_memtier_prefix_pool_cfg pc = {
        .tier = r->cpu, .chunk_tokens = 256, .fine_tokens = 16, .chunk_bytes = CHUNK_BYTES};
    r->cpu_pool = sv_memtier_prefix_pool_new(&pc, NULL);
    pc.tier = r->ssd;
    r->ssd_pool = sv_memtier_prefix_pool_new(&pc, NULL);
    struct sv_memtier_hier_cfg hc = {
        .fabric = r->f, .npu = NPU0, .chunk_tokens = 256, .write_back = write_back};
    r->h = sv_memtier_hier_new(&hc, NULL);
    CU_ASSERT_FATAL(r->h != NULL);
    CU_ASSERT_FATAL(sv_memtier_hier_add_pool(r->h, r->cpu_pool, &CPU0, NULL));
    CU_ASSERT_FATAL(sv_memtier_hier_add_pool(r->h, r->ssd_pool, &SSD0, NULL));
    CU_ASSERT_EQUAL(sv_memtier_hier_num_pools(r->h), 2);
}

static void rig_clear(struct rig *r)
{
    sv_memtier_hier_free(r->h);
    sv_memtier_prefix_pool_free(r->cpu_pool);
    sv_memtier_prefix_pool_free(r->ssd_pool);
    sv_memtier_fabric_free(r->f);
    sv_memtier_tier_free(r->cpu);
    sv_memtier_tier_free(r->ssd);
    sv_engine_free(r->eng);
}

/* A 64-block chain (1,024 tokens, 4 chunks keyed by fine[15], [31], [47], [63]). Chunks 0, 1 in
 * the cpu pool, chunk 2 on the SSD. Request of 1,000 tokens, NPU hit 272 tokens (17 blocks):
 *   walk from chunk floor(272/256) = 1, at most floor(999/256) = 3 chunks (0..2);
 *   chunk 1 from cpu: 512 - 272 = 240 tokens; chunk 2 from ssd: 256 tokens; end = 768.
 * Lookups: each tier saw 768 - 272 = 496 tokens asked; cpu served 240 (1 chunk), ssd 256 (1).
 * Without an NPU hit: chunks 0, 1 from cpu (512), chunk 2 from ssd (256); end 768. */
static void test_match_split(void)
{
    struct rig r;
    rig_init(&r, 4, FALSE);
    uint64_t fine[64];
    for (int i = 0; i < 64; i++)
        fine[i] = 5000 + (uint64_t)i;
    CU_ASSERT(sv_memtier_prefix_pool_insert(r.cpu_pool, fine[15], NULL, NULL));
    CU_ASSERT(sv_memtier_prefix_pool_insert(r.cpu_pool, fine[31], NULL, NULL));
    CU_ASSERT(sv_memtier_prefix_pool_insert(r.ssd_pool, fine[47], NULL, NULL));
    CU_ASSERT(sv_memtier_prefix_pool_insert(r.ssd_pool, fine[63], NULL, NULL));
    struct sv_memtier_hit hit;
    SV_ASSERT_EQ_I64(sv_memtier_hier_match(r.h, fine, 64, 272, 1000, &hit), 768);
    SV_ASSERT_EQ_I64(hit.tokens[SV_MEMTIER_DRAM], 240);
    SV_ASSERT_EQ_I64(hit.tokens[SV_MEMTIER_SSD], 256);
    SV_ASSERT_EQ_I64(hit.tokens[SV_MEMTIER_CXL], 0);
    SV_ASSERT_EQ_I64(hit.remote_tokens, 0);
    CU_ASSERT_PTR_NOT_NULL(hit.route[SV_MEMTIER_DRAM]);
    CU_ASSERT_PTR_NOT_NULL(hit.route[SV_MEMTIER_SSD]);
    CU_ASSERT_PTR_NULL(hit.route[SV_MEMTIER_CXL]);
    CU_ASSERT_EQUAL(sv_memtier_route_legs(hit.route[SV_MEMTIER_SSD]), 2);
    struct sv_memtier_tier_stats cs, ss;
    sv_memtier_tier_get_stats(r.cpu, 0, &cs);
    sv_memtier_tier_get_stats(r.ssd, 0, &ss);
    SV_ASSERT_EQ_I64(cs.lookup_tokens, 496);
    SV_ASSERT_EQ_I64(cs.hit_tokens, 240);
    SV_ASSERT_EQ_I64(cs.hit_chunks, 1);
    SV_ASSERT_EQ_I64(ss.lookup_tokens, 496);
    SV_ASSERT_EQ_I64(ss.hit_tokens, 256);
    SV_ASSERT_EQ_I64(ss.hit_chunks, 1);
    SV_ASSERT_EQ_I64(sv_memtier_hier_match(r.h, fine, 64, 0, 1000, &hit), 768);
    SV_ASSERT_EQ_I64(hit.tokens[SV_MEMTIER_DRAM], 512);
    SV_ASSERT_EQ_I64(hit.tokens[SV_MEMTIER_SSD], 256);
    /* 513 tokens: at most floor(512/256) = 2 chunks, both in cpu -> 512; a 512-token request
     * may use only 1 chunk (its last token must run). */
    SV_ASSERT_EQ_I64(sv_memtier_hier_match(r.h, fine, 64, 0, 513, &hit), 512);
    SV_ASSERT_EQ_I64(sv_memtier_hier_match(r.h, fine, 64, 0, 512, &hit), 256);
    /* A gap stops the walk: a chain whose chunk 0 is nowhere hits nothing. */
    fine[15] = 1;
    SV_ASSERT_EQ_I64(sv_memtier_hier_match(r.h, fine, 64, 0, 1000, &hit), 0);
    rig_clear(&r);
}

/* Write-through: chunk K done on NPU 0 goes to cpu and ssd at t = 0.
 *   cpu: [d2h, dram]; ssd leg 1: [d2h, dram] -> both share d2h (64): 32 B/ns each,
 *        33,554,432 / 32 = 1,048,576 ns for both;
 *   ssd leg 2: [dram, ssd_write 4]: 100,000 + 33,554,432 / 4 = 8,388,608 -> 9,537,184 ns.
 * A second chunk_done of K while in flight writes nothing more. */
static void test_write_through(void)
{
    struct rig r;
    rig_init(&r, 4, FALSE);
    uint64_t K = 777;
    sv_memtier_hier_chunk_done(r.h, K, 0);
    sv_memtier_hier_chunk_done(r.h, K, 0);
    CU_ASSERT_EQUAL(sv_memtier_hier_writes_in_flight(r.h), 2);
    SV_ASSERT_EQ_I64(sv_memtier_fabric_bytes_booked(r.f), 2 * CHUNK_BYTES);
    sv_engine_run(r.eng, 1048575);
    CU_ASSERT_FALSE(sv_memtier_prefix_pool_contains(r.cpu_pool, K));
    sv_engine_run(r.eng, 1048576);
    CU_ASSERT(sv_memtier_prefix_pool_contains(r.cpu_pool, K));
    CU_ASSERT_FALSE(sv_memtier_prefix_pool_contains(r.ssd_pool, K));
    sv_engine_run(r.eng, 9537183);
    CU_ASSERT_FALSE(sv_memtier_prefix_pool_contains(r.ssd_pool, K));
    sv_engine_run(r.eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(sv_engine_now(r.eng), 9537184);
    CU_ASSERT(sv_memtier_prefix_pool_contains(r.ssd_pool, K));
    CU_ASSERT_EQUAL(sv_memtier_hier_writes_in_flight(r.h), 0);
    /* present everywhere: nothing to write */
    sv_memtier_hier_chunk_done(r.h, K, 0);
    CU_ASSERT_EQUAL(sv_memtier_hier_writes_in_flight(r.h), 0);
    /* write-back calls are no-ops in write-through mode */
    sv_memtier_hier_npu_evicted(r.h, 888, 0);
    CU_ASSERT_EQUAL(sv_memtier_hier_writes_in_flight(r.h), 0);
    /* ledgers: one chunk on each tier, the writes counted */
    struct sv_memtier_tier_stats ss;
    sv_memtier_tier_get_stats(r.ssd, sv_engine_now(r.eng), &ss);
    SV_ASSERT_EQ_I64(ss.write_bytes, CHUNK_BYTES);
    SV_ASSERT_EQ_I64(sv_memtier_tier_used_by(r.cpu, SV_MEMTIER_OWNER_PREFIX), CHUNK_BYTES);
    rig_clear(&r);
}

/* Write-back, cpu pool of 1 chunk: NPU evicts A -> cpu (33,554,432 / 64 = 524,288 ns); NPU
 * evicts B at t = 524,288 -> cpu at 1,048,576, which evicts A from cpu and demotes it to the SSD
 * in one leg [dram, ssd_write]: 100,000 + 8,388,608 -> 9,537,184 ns. */
static void test_write_back(void)
{
    struct rig r;
    rig_init(&r, 1, TRUE);
    uint64_t A = 1, B = 2;
    sv_memtier_hier_chunk_done(r.h, A, 0); /* no-op in write-back mode */
    CU_ASSERT_EQUAL(sv_memtier_hier_writes_in_flight(r.h), 0);
    sv_memtier_hier_npu_evicted(r.h, A, 0);
    sv_engine_run(r.eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(sv_engine_now(r.eng), 524288);
    CU_ASSERT(sv_memtier_prefix_pool_contains(r.cpu_pool, A));
    CU_ASSERT_FALSE(sv_memtier_prefix_pool_contains(r.ssd_pool, A));
    sv_memtier_hier_npu_evicted(r.h, B, 0);
    sv_engine_run(r.eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(sv_engine_now(r.eng), 524288 + 524288 + 8488608);
    CU_ASSERT(sv_memtier_prefix_pool_contains(r.cpu_pool, B));
    CU_ASSERT_FALSE(sv_memtier_prefix_pool_contains(r.cpu_pool, A));
    CU_ASSERT(sv_memtier_prefix_pool_contains(r.ssd_pool, A));
    rig_clear(&r);
}

/* Cluster pool (Mooncake store) over 2 nodes, one NPU each, Ring of 2 at 50 GB/s ASTRA-sim units
 * (50 x 2^30 / 1e9 B/ns), 500 ns; DRAM 256 GB/s per node. Key k lives on node k % 2. The
 * instance is NPU 0 on node 0. Chain: chunk 0 key 10 (node 0, local), chunk 1 key 11 (node 1,
 * remote). 600 tokens: floor(599/256) = 2 chunks: 256 local DRAM + 256 remote; end 512.
 * Write-through of key 13 from NPU 0 goes to node 1 over the ring: 33,554,432 B at
 * 53.687091 B/ns = 625,000 ns + 500 = 625,500 ns. */
static void test_cluster_pool(void)
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
    sv_memtier_fabric_add_pcie(f, 0, 0, 64, 0, FALSE);
    sv_memtier_fabric_add_pcie(f, 1, 1, 64, 0, FALSE);
    sv_memtier_tier *tiers[2];
    sv_memtier_prefix_pool *pools[2];
    struct sv_memtier_loc locs[2];
    for (int n = 0; n < 2; n++) {
        struct sv_memtier_tier_cfg c = {
            .kind = SV_MEMTIER_DRAM, .capacity_bytes = 8 * CHUNK_BYTES, .read_gbps = 256};
        g_snprintf(c.name, sizeof c.name, "node%d/cpu", n);
        tiers[n] = sv_memtier_tier_new(eng, &c);
        locs[n] = (struct sv_memtier_loc){SV_MEMTIER_DRAM, n, 0};
        sv_memtier_fabric_add_tier(f, &locs[n], tiers[n]);
        struct sv_memtier_prefix_pool_cfg pc = {
            .tier = tiers[n], .chunk_tokens = 256, .fine_tokens = 16, .chunk_bytes = CHUNK_BYTES};
        pools[n] = sv_memtier_prefix_pool_new(&pc, NULL);
    }
    struct sv_memtier_hier_cfg hc = {.fabric = f, .npu = NPU0, .chunk_tokens = 256};
    sv_memtier_hier *h = sv_memtier_hier_new(&hc, NULL);
    GError *err = NULL;
    CU_ASSERT_FATAL(sv_memtier_hier_add_cluster_pool(h, pools, locs, 2, &err));
    uint64_t fine[32] = {0};
    fine[15] = 10;
    fine[31] = 11;
    sv_memtier_prefix_pool_insert(pools[0], 10, NULL, NULL);
    sv_memtier_prefix_pool_insert(pools[1], 11, NULL, NULL);
    struct sv_memtier_hit hit;
    SV_ASSERT_EQ_I64(sv_memtier_hier_match(h, fine, 32, 0, 600, &hit), 512);
    SV_ASSERT_EQ_I64(hit.tokens[SV_MEMTIER_DRAM], 256);
    SV_ASSERT_EQ_I64(hit.remote_tokens, 256);
    CU_ASSERT_PTR_NOT_NULL(hit.route[SV_MEMTIER_KIND_COUNT]);
    sv_memtier_hier_chunk_done(h, 13, 0);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(sv_engine_now(eng), 625500);
    CU_ASSERT(sv_memtier_prefix_pool_contains(pools[1], 13));
    CU_ASSERT_FALSE(sv_memtier_prefix_pool_contains(pools[0], 13));
    sv_memtier_hier_free(h);
    for (int n = 0; n < 2; n++) {
        sv_memtier_prefix_pool_free(pools[n]);
        sv_memtier_tier_free(tiers[n]);
    }
    sv_memtier_fabric_free(f);
    sv_net_free(net);
    sv_engine_free(eng);
}

/* ---- KV manager hooks ------------------------------------------------------------------ */

struct hooklog {
    uint64_t hash[8];
    uint32_t idx[8];
    int n;
};

static void on_kv_evict(void *ctx, uint64_t hash, uint32_t chain_index)
{
    struct hooklog *l = ctx;
    l->hash[l->n] = hash;
    l->idx[l->n] = chain_index;
    l->n++;
}

static sv_memtier_kv_seq *seq_of(sv_memtier_kv_manager *m, uint32_t base, size_t n)
{
    uint32_t ids[128];
    for (size_t i = 0; i < n; i++)
        ids[i] = base + (uint32_t)i;
    struct sv_memtier_kv_seq_cfg c = {.prompt_tokens = n, .prompt_ids = ids, .num_prompt_ids = n};
    sv_memtier_kv_seq *s = sv_memtier_kv_seq_new(m, &c, NULL);
    CU_ASSERT_FATAL(s != NULL);
    return s;
}

/* 4 blocks of 16 tokens. Sequence 1 (64 tokens) fills and indexes blocks with chain indices
 * 0..3 and is freed (tail first: the free queue is chain 3, 2, 1, 0). Sequence 2 (64 other
 * tokens) takes all 4: the hook sees the entries dropped in that order, with their hashes. */
static void test_evict_hook(void)
{
    sv_memtier_kv_manager *m = sv_memtier_kv_manager_new(4, 16, TRUE);
    struct hooklog log = {{0}, {0}, 0};
    sv_memtier_kv_manager_set_evict_hook(m, on_kv_evict, &log);
    sv_memtier_kv_seq *s1 = seq_of(m, 0, 64);
    uint32_t n = 0;
    const uint64_t *h1 = sv_memtier_kv_seq_hashes(s1, &n);
    CU_ASSERT_EQUAL(n, 4);
    CU_ASSERT(sv_memtier_kv_manager_allocate_slots(m, s1, 0, 64, 0, 64));
    sv_memtier_kv_manager_free_seq(m, s1);
    sv_memtier_kv_seq *s2 = seq_of(m, 1000, 64);
    CU_ASSERT(sv_memtier_kv_manager_allocate_slots(m, s2, 0, 64, 0, 64));
    CU_ASSERT_EQUAL(log.n, 4);
    for (int k = 0; k < 4; k++) {
        CU_ASSERT_EQUAL(log.idx[k], (uint32_t)(3 - k));
        CU_ASSERT_EQUAL(log.hash[k], h1[3 - k]);
    }
    sv_memtier_kv_seq_free(s1);
    sv_memtier_kv_seq_free(s2);
    sv_memtier_kv_manager_free(m);
}

/* Swap: 4 blocks of 16. A 40-token sequence holds ceil(40/16) = 3 blocks; swap-out returns 3
 * and frees them; another sequence takes 2 blocks (32 tokens), leaving 2 free < 3: swap-in
 * refuses and changes nothing; once it is freed, swap-in takes 3 fresh blocks and re-indexes
 * the 2 full ones. */
static void test_swap(void)
{
    sv_memtier_kv_manager *m = sv_memtier_kv_manager_new(4, 16, TRUE);
    sv_memtier_kv_seq *s = seq_of(m, 0, 40);
    CU_ASSERT(sv_memtier_kv_manager_allocate_slots(m, s, 0, 40, 0, 40));
    CU_ASSERT_EQUAL(sv_memtier_kv_manager_swap_out_seq(m, s), 3);
    CU_ASSERT_EQUAL(sv_memtier_kv_manager_num_free_blocks(m), 4);
    sv_memtier_kv_seq *o = seq_of(m, 500, 32);
    CU_ASSERT(sv_memtier_kv_manager_allocate_slots(m, o, 0, 32, 0, 32));
    CU_ASSERT_FALSE(sv_memtier_kv_manager_swap_in(m, s, 40));
    CU_ASSERT_EQUAL(sv_memtier_kv_seq_num_blocks(s), 0);
    CU_ASSERT_EQUAL(sv_memtier_kv_manager_num_free_blocks(m), 2);
    sv_memtier_kv_manager_free_seq(m, o);
    CU_ASSERT(sv_memtier_kv_manager_swap_in(m, s, 40));
    CU_ASSERT_EQUAL(sv_memtier_kv_seq_num_blocks(s), 3);
    CU_ASSERT_EQUAL(sv_memtier_kv_seq_num_cached(s), 2);
    struct sv_memtier_kv_stats st;
    sv_memtier_kv_manager_get_stats(m, &st);
    SV_ASSERT_EQ_I64(st.swap_outs, 1);
    SV_ASSERT_EQ_I64(st.swapped_out_blocks, 3);
    SV_ASSERT_EQ_I64(st.swap_ins, 1);
    SV_ASSERT_EQ_I64(st.swapped_in_blocks, 3);
    SV_ASSERT_EQ_I64(st.preemptions, 0);
    sv_memtier_kv_seq_free(s);
    sv_memtier_kv_seq_free(o);
    sv_memtier_kv_manager_free(m);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"lookup split over tiers", test_match_split},
        {"write-through", test_write_through},
        {"write-back with demotion", test_write_back},
        {"cluster pool: local and remote shards", test_cluster_pool},
        {"kv evict hook with chain index", test_evict_hook},
        {"kv swap out and in", test_swap},
        {NULL, NULL},
    };
    sv_test_add_suite("memtier hierarchy", cases);
    return sv_test_run();
}
