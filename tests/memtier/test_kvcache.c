/* Tests of the paged KV block manager (memory-tier/kvcache.c). Expected values are worked out by
 * hand in the comments, from vLLM v1 / LLMServingSim's rules (block_pool.py, kv_cache_manager.py
 * and their self-tests), with small blocks (4 tokens) so the arithmetic stays visible. */
#include "memory-tier/memtier.h"
#include "tests/test_util.h"

#include <string.h>

#define B 4 /* tokens per block in most tests */

/* A sequence keyed by token ids [first, first + n) (prompt only). */
static sv_memtier_kv_seq *seq_range(sv_memtier_kv_manager *m, uint32_t first, uint32_t n)
{
    uint32_t *ids = g_new(uint32_t, n ? n : 1);
    for (uint32_t i = 0; i < n; i++)
        ids[i] = first + i;
    struct sv_memtier_kv_seq_cfg cfg = {.prompt_tokens = n, .prompt_ids = ids, .num_prompt_ids = n};
    sv_memtier_kv_seq *s = sv_memtier_kv_seq_new(m, &cfg, NULL);
    g_free(ids);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    return s;
}

static sv_memtier_kv_seq *seq_ids(sv_memtier_kv_manager *m, const uint32_t *ids, uint32_t n)
{
    struct sv_memtier_kv_seq_cfg cfg = {.prompt_tokens = n, .prompt_ids = ids, .num_prompt_ids = n};
    sv_memtier_kv_seq *s = sv_memtier_kv_seq_new(m, &cfg, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    return s;
}

static void check_queue(sv_memtier_kv_manager *m, const uint32_t *expect, uint32_t n)
{
    uint32_t got[64];
    uint32_t k = sv_memtier_kv_manager_free_queue(m, got, 64);
    SV_ASSERT_EQ_I64(k, n);
    for (uint32_t i = 0; i < n && i < k; i++)
        SV_ASSERT_EQ_I64(got[i], expect[i]);
}

/* Admit a fresh sequence of `n` prompt tokens with whatever prefix it hits. */
static gboolean admit(sv_memtier_kv_manager *m, sv_memtier_kv_seq *s, uint64_t n, uint64_t *hit)
{
    uint64_t h = sv_memtier_kv_manager_get_computed_blocks(m, s, n);
    if (hit)
        *hit = h;
    return sv_memtier_kv_manager_allocate_slots(m, s, 0, n - h, h, n);
}

static void test_capacity(void)
{
    /* floor(1000 / (10 x 16)) = 6 */
    SV_ASSERT_EQ_I64(sv_memtier_kv_blocks_from_bytes(1000, 10, 16), 6);
    SV_ASSERT_EQ_I64(sv_memtier_kv_blocks_from_bytes(159, 10, 16), 0);

    /* Llama-3.1-8B on a 24 GiB RTX 4090, LLMServingSim kv-cache-and-memory.md: vLLM measured 2588
     * blocks, reproduced at mem_util 0.833919; 0.9 gives 3400 blocks (54,400 tokens).
     * Per-token KV: 2 (K,V) x 8 kv heads x 128 head_dim x 32 layers x 2 bytes = 131072.
     * Weights (memory_model.get_weight, bf16): embedding and lm_head 128256 x 4096 x 2 each =
     * 1,050,673,152; per layer qkv 4096 x 6144 x 2 = 50,331,648, o 4096^2 x 2 = 33,554,432,
     * gate_up 4096 x 28672 x 2 = 234,881,024, down 14336 x 4096 x 2 = 117,440,512, two norms
     * 16,384: 436,224,000 x 32 = 13,959,168,000; final norm 8,192. Total 16,060,522,496. */
    const uint64_t gib24 = UINT64_C(24) << 30, weight = UINT64_C(16060522496);
    uint64_t n = 0;
    g_autoptr(GError) err = NULL;
    CU_ASSERT_TRUE(sv_memtier_kv_capacity_blocks(gib24, 0.833919, weight, 131072, 16, &n, &err));
    SV_ASSERT_EQ_I64(n, 2588);
    CU_ASSERT_TRUE(sv_memtier_kv_capacity_blocks(gib24, 0.9, weight, 131072, 16, &n, &err));
    SV_ASSERT_EQ_I64(n, 3400);
    /* 16 GiB x 0.9 < 16.06 GB of weights */
    CU_ASSERT_FALSE(
        sv_memtier_kv_capacity_blocks(UINT64_C(16) << 30, 0.9, weight, 131072, 16, &n, &err));
    CU_ASSERT_TRUE(g_error_matches(err, SV_MEMTIER_KV_ERROR, SV_MEMTIER_KV_ERROR_CAPACITY));
}

static void test_hash_value(void)
{
    /* Computed independently (Python, the formula in memtier.h): FNV-1a 64 over the seed's 8
     * bytes and tokens 1, 2, 3 as 4 little-endian bytes each, then splitmix64's finalizer. */
    uint32_t t[3] = {1, 2, 3};
    CU_ASSERT_EQUAL(sv_memtier_kv_hash_tokens(SV_MEMTIER_KV_HASH_SEED, t, 3),
                    UINT64_C(0xb253c7fa058312b5));
    CU_ASSERT_EQUAL(sv_memtier_kv_hash_tokens(0, NULL, 0), UINT64_C(0x813f0174a2367c13));
}

static void test_allocate_and_failure(void)
{
    sv_memtier_kv_manager *m = sv_memtier_kv_manager_new(4, B, TRUE);
    sv_memtier_kv_seq *a = seq_range(m, 0, 10), *b = seq_range(m, 100, 8);

    /* ceil(10 / 4) = 3 blocks, popped from the head in id order */
    CU_ASSERT_TRUE(sv_memtier_kv_manager_allocate_slots(m, a, 0, 10, 0, 10));
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_num_blocks(a), 3);
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_block_ids(a)[0], 0);
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_block_ids(a)[2], 2);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_free_blocks(m), 1);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_used_blocks(m), 3);
    CU_ASSERT_DOUBLE_EQUAL(sv_memtier_kv_manager_usage(m), 0.75, 1e-12);
    /* 10 ids: 2 full blocks indexed at allocation */
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_num_cached(a), 2);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_cached_blocks(m), 2);

    /* b needs 2 blocks, 1 is free: refused, nothing changed */
    CU_ASSERT_FALSE(sv_memtier_kv_manager_can_fit_full_sequence(m, b, 0, 0, 8));
    CU_ASSERT_FALSE(sv_memtier_kv_manager_allocate_slots(m, b, 0, 8, 0, 8));
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_num_blocks(b), 0);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_free_blocks(m), 1);
    check_queue(m, (uint32_t[]){3}, 1);
    struct sv_memtier_kv_stats st;
    sv_memtier_kv_manager_get_stats(m, &st);
    SV_ASSERT_EQ_I64(st.requests, 1); /* only a was admitted */
    /* but a chunk of 4 fits, while the whole 8 does not (reserve-full-ISL gate) */
    CU_ASSERT_TRUE(sv_memtier_kv_manager_can_fit_full_sequence(m, b, 0, 0, 4));

    /* a decodes: 11 tokens still fit in 3 blocks, 13 need a 4th (block 3) */
    CU_ASSERT_TRUE(sv_memtier_kv_manager_allocate_slots(m, a, 10, 1, 0, 11));
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_num_blocks(a), 3);
    CU_ASSERT_TRUE(sv_memtier_kv_manager_allocate_slots(m, a, 11, 2, 0, 13));
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_num_blocks(a), 4);
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_block_ids(a)[3], 3);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_free_blocks(m), 0);
    CU_ASSERT_DOUBLE_EQUAL(sv_memtier_kv_manager_usage(m), 1.0, 1e-12);
    CU_ASSERT_FALSE(sv_memtier_kv_manager_allocate_slots(m, a, 13, 4, 0, 17));
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_num_blocks(a), 4);

    sv_memtier_kv_seq_free(a); /* releases its blocks */
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_free_blocks(m), 4);
    CU_ASSERT_DOUBLE_EQUAL(sv_memtier_kv_manager_usage(m), 0.0, 1e-12);
    sv_memtier_kv_seq_free(b);
    sv_memtier_kv_manager_free(m);
}

static void test_free_queue_order(void)
{
    /* LLMServingSim block_pool self-test: 8 blocks, take 2, free in reverse ->
     * [2 3 4 5 6 7 1 0]. */
    sv_memtier_kv_manager *m = sv_memtier_kv_manager_new(8, B, FALSE);
    sv_memtier_kv_seq *a = seq_range(m, 0, 8), *b = seq_range(m, 0, 16), *c = seq_range(m, 0, 12);
    CU_ASSERT_TRUE(sv_memtier_kv_manager_allocate_slots(m, a, 0, 8, 0, 8));
    sv_memtier_kv_manager_free_seq(m, a);
    check_queue(m, (uint32_t[]){2, 3, 4, 5, 6, 7, 1, 0}, 8);
    /* least recently freed first: b gets 2..5, c gets 6, 7, then 1 (a's tail) */
    CU_ASSERT_TRUE(sv_memtier_kv_manager_allocate_slots(m, b, 0, 16, 0, 16));
    CU_ASSERT_TRUE(sv_memtier_kv_manager_allocate_slots(m, c, 0, 12, 0, 12));
    const uint32_t *ids = sv_memtier_kv_seq_block_ids(c);
    SV_ASSERT_EQ_I64(ids[0], 6);
    SV_ASSERT_EQ_I64(ids[1], 7);
    SV_ASSERT_EQ_I64(ids[2], 1);
    check_queue(m, (uint32_t[]){0}, 1);
    /* caching off: no index, no hit, no query counted */
    sv_memtier_kv_seq *d = seq_range(m, 0, 8);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_get_computed_blocks(m, d, 8), 0);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_cached_blocks(m), 0);
    struct sv_memtier_kv_stats st;
    sv_memtier_kv_manager_get_stats(m, &st);
    SV_ASSERT_EQ_I64(st.queries, 0);
    SV_ASSERT_EQ_I64(st.requests, 0);
    sv_memtier_kv_seq_free(a);
    sv_memtier_kv_seq_free(b);
    sv_memtier_kv_seq_free(c);
    sv_memtier_kv_seq_free(d);
    sv_memtier_kv_manager_free(m);
}

static void test_lru_eviction(void)
{
    sv_memtier_kv_manager *m = sv_memtier_kv_manager_new(4, B, TRUE);
    sv_memtier_kv_seq *a = seq_range(m, 0, 8), *b = seq_range(m, 100, 8), *c = seq_range(m, 200, 4);
    CU_ASSERT_TRUE(admit(m, a, 8, NULL)); /* blocks 0, 1, both indexed */
    uint64_t h0 = sv_memtier_kv_seq_block_hash(a, 0), h1 = sv_memtier_kv_seq_block_hash(a, 1);
    sv_memtier_kv_manager_free_seq(m, a);
    check_queue(m, (uint32_t[]){2, 3, 1, 0}, 4);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_cached_blocks(m), 2);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_cached_free_blocks(m), 2);

    /* b takes the never-used blocks 2, 3: nothing evicted */
    CU_ASSERT_TRUE(admit(m, b, 8, NULL));
    struct sv_memtier_kv_stats st;
    sv_memtier_kv_manager_get_stats(m, &st);
    SV_ASSERT_EQ_I64(st.evictions, 0);
    /* c takes block 1, a's tail: its entry goes, the head (block 0) stays */
    CU_ASSERT_TRUE(admit(m, c, 4, NULL));
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_block_ids(c)[0], 1);
    sv_memtier_kv_manager_get_stats(m, &st);
    SV_ASSERT_EQ_I64(st.evictions, 1);
    uint32_t id = 99;
    CU_ASSERT_TRUE(sv_memtier_kv_manager_lookup(m, h0, &id));
    SV_ASSERT_EQ_I64(id, 0);
    CU_ASSERT_FALSE(sv_memtier_kv_manager_lookup(m, h1, NULL));
    /* c's 4 tokens are one full block, indexed: entries = a's head + b's 2 + c's 1 */
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_cached_blocks(m), 4);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_cached_free_blocks(m), 1);
    /* a comes back: only its head block survives -> 4 tokens */
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_get_computed_blocks(m, a, 8), 4);
    sv_memtier_kv_seq_free(a);
    sv_memtier_kv_seq_free(b);
    sv_memtier_kv_seq_free(c);
    sv_memtier_kv_manager_free(m);
}

static void test_prefix_hits(void)
{
    sv_memtier_kv_manager *m = sv_memtier_kv_manager_new(32, B, TRUE);
    sv_memtier_kv_seq *a = seq_range(m, 0, 12);
    CU_ASSERT_TRUE(admit(m, a, 12, NULL)); /* 3 full blocks indexed */
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_cached_blocks(m), 3);

    /* same 12 tokens: capped at 11 -> floor(11/4) = 2 blocks = 8 tokens */
    sv_memtier_kv_seq *s1 = seq_range(m, 0, 12);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_get_computed_blocks(m, s1, 12), 8);
    /* 13 tokens (one more id): cap 12 -> all 3 blocks */
    sv_memtier_kv_seq *s2 = seq_range(m, 0, 13);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_get_computed_blocks(m, s2, 13), 12);
    /* 10 tokens: block 2 would be partial, never keyed -> 2 blocks */
    sv_memtier_kv_seq *s3 = seq_range(m, 0, 10);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_get_computed_blocks(m, s3, 10), 8);
    /* diverges inside block 1 -> only block 0 */
    uint32_t ids[12] = {0, 1, 2, 3, 4, 5, 77, 7, 8, 9, 10, 11};
    sv_memtier_kv_seq *s4 = seq_ids(m, ids, 12);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_get_computed_blocks(m, s4, 12), 4);
    /* a single token can never hit (cap 0) */
    sv_memtier_kv_seq *s5 = seq_range(m, 0, 1);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_get_computed_blocks(m, s5, 1), 0);
    /* 4 tokens: cap 3 -> no whole block */
    sv_memtier_kv_seq *s6 = seq_range(m, 0, 4);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_get_computed_blocks(m, s6, 4), 0);

    struct sv_memtier_kv_stats st;
    sv_memtier_kv_manager_get_stats(m, &st);
    SV_ASSERT_EQ_I64(st.queries, 7); /* a + 6 */
    SV_ASSERT_EQ_I64(st.query_tokens, 12 + 12 + 13 + 10 + 12 + 1 + 4);
    SV_ASSERT_EQ_I64(st.query_hit_tokens, 8 + 12 + 8 + 4);
    /* lookups change no block */
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_free_blocks(m), 29);
    sv_memtier_kv_seq_free(a);
    sv_memtier_kv_seq_free(s1);
    sv_memtier_kv_seq_free(s2);
    sv_memtier_kv_seq_free(s3);
    sv_memtier_kv_seq_free(s4);
    sv_memtier_kv_seq_free(s5);
    sv_memtier_kv_seq_free(s6);
    sv_memtier_kv_manager_free(m);
}

static void test_shared_refcounts(void)
{
    sv_memtier_kv_manager *m = sv_memtier_kv_manager_new(16, B, TRUE);
    sv_memtier_kv_seq *a = seq_range(m, 0, 12);
    CU_ASSERT_TRUE(admit(m, a, 12, NULL)); /* blocks 0 1 2 */
    uint32_t bids[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 20, 21, 22, 23};
    sv_memtier_kv_seq *b = seq_ids(m, bids, 16);
    /* cap 15 -> 3 blocks, all held by a: 12 tokens */
    uint64_t hit = 0;
    CU_ASSERT_TRUE(admit(m, b, 16, &hit));
    SV_ASSERT_EQ_I64(hit, 12);
    /* required 4, known 3 (hits), none of them free -> 1 new block (3) */
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_free_blocks(m), 12);
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_num_blocks(b), 4);
    const uint32_t *t = sv_memtier_kv_seq_block_ids(b);
    SV_ASSERT_EQ_I64(t[0], 0);
    SV_ASSERT_EQ_I64(t[2], 2);
    SV_ASSERT_EQ_I64(t[3], 3);
    for (uint32_t i = 0; i < 3; i++)
        SV_ASSERT_EQ_I64(sv_memtier_kv_manager_block_ref(m, i), 2);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_block_ref(m, 3), 1);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_cached_blocks(m), 4);

    /* a leaves: shared blocks drop to 1 and stay out of the queue */
    sv_memtier_kv_manager_free_seq(m, a);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_free_blocks(m), 12);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_block_ref(m, 1), 1);
    sv_memtier_kv_manager_free_seq(m, b);
    check_queue(m, (uint32_t[]){4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 3, 2, 1, 0}, 16);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_cached_free_blocks(m), 4);

    /* requested 12 + 16, hit 0 + 12 */
    struct sv_memtier_kv_stats st;
    sv_memtier_kv_manager_get_stats(m, &st);
    SV_ASSERT_EQ_I64(st.requests, 2);
    SV_ASSERT_EQ_I64(st.requested_tokens, 28);
    SV_ASSERT_EQ_I64(st.hit_tokens, 12);
    CU_ASSERT_DOUBLE_EQUAL(sv_memtier_kv_manager_hit_rate(m), 12.0 / 28.0, 1e-12);
    sv_memtier_kv_seq_free(a);
    sv_memtier_kv_seq_free(b);
    sv_memtier_kv_manager_free(m);
}

static void test_free_hits_consume_capacity(void)
{
    /* 3 blocks; a fills them, leaves; the same prompt hits 2 blocks that sit in the free queue:
     * required 3, known 2 -> 1 new + 2 to take out of the queue = 3 <= 3 free. */
    sv_memtier_kv_manager *m = sv_memtier_kv_manager_new(3, B, TRUE);
    sv_memtier_kv_seq *a = seq_range(m, 0, 12), *c = seq_range(m, 0, 12);
    CU_ASSERT_TRUE(admit(m, a, 12, NULL));
    sv_memtier_kv_manager_free_seq(m, a);
    check_queue(m, (uint32_t[]){2, 1, 0}, 3);
    uint64_t hit = sv_memtier_kv_manager_get_computed_blocks(m, c, 12);
    SV_ASSERT_EQ_I64(hit, 8);
    CU_ASSERT_TRUE(sv_memtier_kv_manager_can_fit_full_sequence(m, c, 0, hit, 12));
    CU_ASSERT_TRUE(sv_memtier_kv_manager_allocate_slots(m, c, 0, 4, hit, 12));
    /* the new block is block 2, whose old entry (a's block 2, same key) is evicted and then
     * re-indexed for c */
    const uint32_t *t = sv_memtier_kv_seq_block_ids(c);
    SV_ASSERT_EQ_I64(t[0], 0);
    SV_ASSERT_EQ_I64(t[1], 1);
    SV_ASSERT_EQ_I64(t[2], 2);
    struct sv_memtier_kv_stats st;
    sv_memtier_kv_manager_get_stats(m, &st);
    SV_ASSERT_EQ_I64(st.evictions, 1);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_cached_blocks(m), 3);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_free_blocks(m), 0);
    sv_memtier_kv_seq_free(a);
    sv_memtier_kv_seq_free(c);
    sv_memtier_kv_manager_free(m);
}

static void test_failure_with_hits_no_side_effects(void)
{
    sv_memtier_kv_manager *m = sv_memtier_kv_manager_new(3, B, TRUE);
    sv_memtier_kv_seq *a = seq_range(m, 0, 8), *x = seq_range(m, 500, 4);
    CU_ASSERT_TRUE(admit(m, a, 8, NULL)); /* 0 1 */
    sv_memtier_kv_manager_free_seq(m, a); /* queue 2 1 0 */
    CU_ASSERT_TRUE(admit(m, x, 4, NULL)); /* takes 2 */
    uint32_t ids[16] = {0, 1, 2, 3, 4, 5, 6, 7, 50, 51, 52, 53, 54, 55, 56, 57};
    sv_memtier_kv_seq *c = seq_ids(m, ids, 16);
    uint64_t hit = sv_memtier_kv_manager_get_computed_blocks(m, c, 16);
    SV_ASSERT_EQ_I64(hit, 8); /* blocks 0 1, then a miss */
    /* required 4, known 2 -> 2 new + 2 queued hits = 4 > 2 free */
    CU_ASSERT_FALSE(sv_memtier_kv_manager_can_fit_full_sequence(m, c, 0, hit, 16));
    CU_ASSERT_FALSE(sv_memtier_kv_manager_allocate_slots(m, c, 0, 8, hit, 16));
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_num_blocks(c), 0);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_block_ref(m, 0), 0);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_block_ref(m, 1), 0);
    check_queue(m, (uint32_t[]){1, 0}, 2);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_cached_blocks(m), 3);
    struct sv_memtier_kv_stats st;
    sv_memtier_kv_manager_get_stats(m, &st);
    SV_ASSERT_EQ_I64(st.requests, 2); /* a and x */
    SV_ASSERT_EQ_I64(st.evictions, 0);
    sv_memtier_kv_seq_free(a);
    sv_memtier_kv_seq_free(x);
    sv_memtier_kv_seq_free(c);
    sv_memtier_kv_manager_free(m);
}

static void test_preemption_keeps_hashes(void)
{
    sv_memtier_kv_manager *m = sv_memtier_kv_manager_new(8, B, TRUE);
    sv_memtier_kv_seq *a = seq_range(m, 0, 16), *b = seq_range(m, 100, 12);
    CU_ASSERT_TRUE(admit(m, a, 16, NULL)); /* blocks 0..3, 4 indexed */
    sv_memtier_kv_manager_preempt_seq(m, a);
    struct sv_memtier_kv_stats st;
    sv_memtier_kv_manager_get_stats(m, &st);
    SV_ASSERT_EQ_I64(st.preemptions, 1);
    SV_ASSERT_EQ_I64(st.preempted_blocks, 4);
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_num_blocks(a), 0);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_cached_blocks(m), 4); /* hashes kept */
    check_queue(m, (uint32_t[]){4, 5, 6, 7, 3, 2, 1, 0}, 8);

    CU_ASSERT_TRUE(admit(m, b, 12, NULL)); /* 4 5 6: no eviction */
    /* a re-admitted: cap 15 -> 3 blocks hit (12 tokens), 4 to recompute */
    uint64_t hit = 0;
    CU_ASSERT_TRUE(admit(m, a, 16, &hit));
    SV_ASSERT_EQ_I64(hit, 12);
    /* touched 0 1 2 out of [7 3 2 1 0], then popped 7 */
    const uint32_t *t = sv_memtier_kv_seq_block_ids(a);
    SV_ASSERT_EQ_I64(t[0], 0);
    SV_ASSERT_EQ_I64(t[2], 2);
    SV_ASSERT_EQ_I64(t[3], 7);
    check_queue(m, (uint32_t[]){3}, 1);
    /* block 7 took over block 3's key (one block per key, LLMServingSim): 3 is plain free */
    uint32_t id = 0;
    CU_ASSERT_TRUE(sv_memtier_kv_manager_lookup(m, sv_memtier_kv_seq_block_hash(a, 3), &id));
    SV_ASSERT_EQ_I64(id, 7);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_cached_free_blocks(m), 0);
    sv_memtier_kv_manager_get_stats(m, &st);
    SV_ASSERT_EQ_I64(st.requests, 2);          /* a counted once, at first admission */
    SV_ASSERT_EQ_I64(st.hit_tokens, 0);        /* a's first admission hit nothing */
    SV_ASSERT_EQ_I64(st.query_hit_tokens, 12); /* the re-admission lookup */
    /* popping block 3 now drops nothing from the index (its key moved) */
    sv_memtier_kv_seq *d = seq_range(m, 900, 4);
    CU_ASSERT_TRUE(admit(m, d, 4, NULL));
    sv_memtier_kv_manager_get_stats(m, &st);
    SV_ASSERT_EQ_I64(st.evictions, 0);
    CU_ASSERT_TRUE(sv_memtier_kv_manager_lookup(m, sv_memtier_kv_seq_block_hash(a, 3), &id));
    SV_ASSERT_EQ_I64(id, 7);
    sv_memtier_kv_seq_free(a);
    sv_memtier_kv_seq_free(b);
    sv_memtier_kv_seq_free(d);
    sv_memtier_kv_manager_free(m);
}

static void test_hash_chaining(void)
{
    sv_memtier_kv_manager *m = sv_memtier_kv_manager_new(16, B, TRUE);
    uint32_t a_ids[9] = {1, 2, 3, 4, 5, 6, 7, 8, 0};
    uint32_t b_ids[9] = {9, 9, 9, 9, 5, 6, 7, 8, 0}; /* same block 1, other prefix */
    sv_memtier_kv_seq *a = seq_ids(m, a_ids, 9), *b = seq_ids(m, b_ids, 9),
                      *c = seq_ids(m, a_ids, 9);
    CU_ASSERT_NOT_EQUAL(sv_memtier_kv_seq_block_hash(a, 1), sv_memtier_kv_seq_block_hash(b, 1));
    CU_ASSERT_EQUAL(sv_memtier_kv_seq_block_hash(a, 1), sv_memtier_kv_seq_block_hash(c, 1));
    CU_ASSERT_TRUE(admit(m, a, 9, NULL));
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_get_computed_blocks(m, b, 9), 0);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_get_computed_blocks(m, c, 9), 8);
    sv_memtier_kv_seq_free(a);
    sv_memtier_kv_seq_free(b);
    sv_memtier_kv_seq_free(c);
    sv_memtier_kv_manager_free(m);
}

static void test_output_ids(void)
{
    sv_memtier_kv_manager *m = sv_memtier_kv_manager_new(16, B, TRUE);
    uint32_t p[6] = {1, 2, 3, 4, 5, 6}, o[6] = {7, 8, 9, 10, 11, 12};
    struct sv_memtier_kv_seq_cfg with = {.prompt_tokens = 6,
                                         .prompt_ids = p,
                                         .num_prompt_ids = 6,
                                         .output_ids = o,
                                         .num_output_ids = 6};
    struct sv_memtier_kv_seq_cfg without = {
        .prompt_tokens = 6, .prompt_ids = p, .num_prompt_ids = 6};
    sv_memtier_kv_seq *a = sv_memtier_kv_seq_new(m, &with, NULL),
                      *n = sv_memtier_kv_seq_new(m, &without, NULL);
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_num_hashes(a), 3); /* floor(12 / 4) */
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_num_hashes(n), 1); /* floor(6 / 4) */
    /* prompt of 6: 2 blocks, 1 full; output tokens become known one by one */
    CU_ASSERT_TRUE(admit(m, a, 6, NULL));
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_num_cached(a), 1);
    CU_ASSERT_TRUE(sv_memtier_kv_manager_allocate_slots(m, a, 6, 1, 0, 7));
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_num_cached(a), 1); /* 7 tokens: still 1 full block */
    CU_ASSERT_TRUE(sv_memtier_kv_manager_allocate_slots(m, a, 7, 1, 0, 8));
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_num_cached(a), 2); /* tokens 4..7: second block full */
    /* cache_blocks is capped by the keys the sequence has: n has one */
    CU_ASSERT_TRUE(admit(m, n, 6, NULL));
    CU_ASSERT_TRUE(sv_memtier_kv_manager_allocate_slots(m, n, 6, 3, 0, 9));
    sv_memtier_kv_manager_cache_blocks(m, n, 9);
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_num_cached(n), 1);
    /* a later request with the same prompt and output, reached 9 tokens: hits the output
     * block too (cap 8 -> 2 blocks) */
    sv_memtier_kv_seq *r = sv_memtier_kv_seq_new(m, &with, NULL);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_get_computed_blocks(m, r, 9), 8);
    sv_memtier_kv_seq_free(a);
    sv_memtier_kv_seq_free(n);
    sv_memtier_kv_seq_free(r);
    sv_memtier_kv_manager_free(m);
}

static void test_no_ids(void)
{
    /* A workload without token ids: allocation works, nothing is keyed or hit; the request still
     * counts its prompt in the statistics (LLMServingSim records it with hit 0). */
    sv_memtier_kv_manager *m = sv_memtier_kv_manager_new(8, B, TRUE);
    struct sv_memtier_kv_seq_cfg cfg = {.prompt_tokens = 10};
    sv_memtier_kv_seq *a = sv_memtier_kv_seq_new(m, &cfg, NULL),
                      *b = sv_memtier_kv_seq_new(m, &cfg, NULL);
    CU_ASSERT_TRUE(admit(m, a, 10, NULL));
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_num_blocks(a), 3);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_cached_blocks(m), 0);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_get_computed_blocks(m, b, 10), 0);
    struct sv_memtier_kv_stats st;
    sv_memtier_kv_manager_get_stats(m, &st);
    SV_ASSERT_EQ_I64(st.requested_tokens, 10);
    sv_memtier_kv_seq_free(a);
    sv_memtier_kv_seq_free(b);
    sv_memtier_kv_manager_free(m);
}

static void test_mooncake_hash_ids(void)
{
    g_autoptr(GError) err = NULL;
    /* 16-token blocks under 512-token hash blocks: 32 fine blocks per hash id. A 1000-token
     * prompt has floor(1000/16) = 62 full blocks, all covered by 2 ids. */
    sv_memtier_kv_manager *m = sv_memtier_kv_manager_new(256, 16, TRUE);
    uint64_t h1[2] = {7, 8}, h2[2] = {7, 9};
    struct sv_memtier_kv_seq_cfg c1 = {.prompt_tokens = 1000, .hash_ids = h1, .num_hash_ids = 2};
    struct sv_memtier_kv_seq_cfg c2 = {.prompt_tokens = 1000, .hash_ids = h2, .num_hash_ids = 2};
    sv_memtier_kv_seq *a = sv_memtier_kv_seq_new(m, &c1, &err),
                      *b = sv_memtier_kv_seq_new(m, &c2, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_num_hashes(a), 62);
    CU_ASSERT_EQUAL(sv_memtier_kv_seq_block_hash(a, 31), sv_memtier_kv_seq_block_hash(b, 31));
    CU_ASSERT_NOT_EQUAL(sv_memtier_kv_seq_block_hash(a, 32), sv_memtier_kv_seq_block_hash(b, 32));
    /* fine blocks inside one hash block differ (the offset is part of the key) */
    CU_ASSERT_NOT_EQUAL(sv_memtier_kv_seq_block_hash(a, 0), sv_memtier_kv_seq_block_hash(a, 1));
    CU_ASSERT_TRUE(admit(m, a, 1000, NULL));
    /* b shares the first 512 tokens: 32 blocks = 512 tokens */
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_get_computed_blocks(m, b, 1000), 512);
    sv_memtier_kv_seq_free(a);
    sv_memtier_kv_seq_free(b);
    sv_memtier_kv_manager_free(m);

    /* 1024-token blocks over 512-token ids: each block covers two ids */
    m = sv_memtier_kv_manager_new(8, 1024, TRUE);
    uint64_t g1[4] = {7, 8, 10, 12}, g2[4] = {7, 8, 11, 12};
    struct sv_memtier_kv_seq_cfg d1 = {.prompt_tokens = 2048, .hash_ids = g1, .num_hash_ids = 4};
    struct sv_memtier_kv_seq_cfg d2 = {.prompt_tokens = 2048, .hash_ids = g2, .num_hash_ids = 4};
    a = sv_memtier_kv_seq_new(m, &d1, &err);
    b = sv_memtier_kv_seq_new(m, &d2, &err);
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_num_hashes(a), 2);
    CU_ASSERT_EQUAL(sv_memtier_kv_seq_block_hash(a, 0), sv_memtier_kv_seq_block_hash(b, 0));
    CU_ASSERT_NOT_EQUAL(sv_memtier_kv_seq_block_hash(a, 1), sv_memtier_kv_seq_block_hash(b, 1));
    sv_memtier_kv_seq_free(a);
    sv_memtier_kv_seq_free(b);

    /* hash ids without a prompt length: refused */
    struct sv_memtier_kv_seq_cfg bad = {.hash_ids = g1, .num_hash_ids = 4};
    CU_ASSERT_PTR_NULL(sv_memtier_kv_seq_new(m, &bad, &err));
    CU_ASSERT_TRUE(g_error_matches(err, SV_MEMTIER_KV_ERROR, SV_MEMTIER_KV_ERROR_INPUT));
    sv_memtier_kv_manager_free(m);
}

static void test_random_invariants(void)
{
    /* Random admissions, decode steps, finishes and preemptions over a small pool, with shared
     * prefixes (ids drawn from 3 prompt families). After every operation: the blocks with ref > 0
     * are exactly the used ones, refs add up to the blocks held by sequences, and the free queue
     * holds exactly the ref-0 blocks. A fixed-seed GRand (test only). */
    enum { NSEQ = 12, NBLK = 24, MAXT = 40 };
    sv_memtier_kv_manager *m = sv_memtier_kv_manager_new(NBLK, B, TRUE);
    g_autoptr(GRand) rng = g_rand_new_with_seed(12345);
    sv_memtier_kv_seq *seqs[NSEQ];
    uint64_t len[NSEQ], done[NSEQ];
    gboolean running[NSEQ];
    for (int i = 0; i < NSEQ; i++) {
        uint32_t ids[MAXT];
        uint32_t fam = (uint32_t)(i % 3);
        for (uint32_t t = 0; t < MAXT; t++)
            ids[t] = t < 16 ? fam * 1000 + t : (uint32_t)i * 1000 + t;
        struct sv_memtier_kv_seq_cfg cfg = {.prompt_tokens = 20,
                                            .prompt_ids = ids,
                                            .num_prompt_ids = 20,
                                            .output_ids = ids + 20,
                                            .num_output_ids = MAXT - 20};
        seqs[i] = sv_memtier_kv_seq_new(m, &cfg, NULL);
        len[i] = 20;
        done[i] = 0;
        running[i] = FALSE;
    }
    for (int step = 0; step < 3000; step++) {
        int i = g_rand_int_range(rng, 0, NSEQ);
        int op = g_rand_int_range(rng, 0, 4);
        if (!running[i]) {
            uint64_t hit = sv_memtier_kv_manager_get_computed_blocks(m, seqs[i], len[i]);
            CU_ASSERT_EQUAL(hit % B, 0);
            CU_ASSERT_TRUE(hit < len[i]);
            if (sv_memtier_kv_manager_allocate_slots(m, seqs[i], 0, len[i] - hit, hit, len[i])) {
                running[i] = TRUE;
                done[i] = len[i];
            }
        } else if (op == 0) {
            sv_memtier_kv_manager_preempt_seq(m, seqs[i]);
            running[i] = FALSE;
        } else if (op == 1 || len[i] >= MAXT) {
            sv_memtier_kv_manager_free_seq(m, seqs[i]);
            running[i] = FALSE;
            len[i] = 20;
        } else if (sv_memtier_kv_manager_allocate_slots(m, seqs[i], done[i], 1, 0, len[i] + 1)) {
            len[i]++;
            done[i]++;
            sv_memtier_kv_manager_cache_blocks(m, seqs[i], done[i]);
        }
        uint64_t held = 0, refs = 0, used = 0;
        for (int k = 0; k < NSEQ; k++) {
            held += sv_memtier_kv_seq_num_blocks(seqs[k]);
            CU_ASSERT_TRUE(sv_memtier_kv_seq_num_cached(seqs[k]) <=
                           sv_memtier_kv_seq_num_blocks(seqs[k]));
        }
        for (uint32_t b = 0; b < NBLK; b++) {
            refs += sv_memtier_kv_manager_block_ref(m, b);
            used += sv_memtier_kv_manager_block_ref(m, b) > 0;
        }
        SV_ASSERT_EQ_I64(refs, held);
        SV_ASSERT_EQ_I64(used, sv_memtier_kv_manager_num_used_blocks(m));
        uint32_t q[NBLK];
        uint32_t nq = sv_memtier_kv_manager_free_queue(m, q, NBLK);
        SV_ASSERT_EQ_I64(nq, sv_memtier_kv_manager_num_free_blocks(m));
        for (uint32_t k = 0; k < nq; k++)
            SV_ASSERT_EQ_I64(sv_memtier_kv_manager_block_ref(m, q[k]), 0);
        CU_ASSERT_TRUE(sv_memtier_kv_manager_num_cached_free_blocks(m) <= nq);
        CU_ASSERT_TRUE(sv_memtier_kv_manager_num_cached_blocks(m) <= NBLK);
    }
    struct sv_memtier_kv_stats st;
    sv_memtier_kv_manager_get_stats(m, &st);
    CU_ASSERT_TRUE(st.query_hit_tokens > 0); /* the shared families did hit */
    CU_ASSERT_TRUE(st.evictions > 0);        /* and the pool was under pressure */
    for (int i = 0; i < NSEQ; i++)
        sv_memtier_kv_seq_free(seqs[i]);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_free_blocks(m), NBLK);
    sv_memtier_kv_manager_free(m);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"capacity", test_capacity},
        {"hash_value", test_hash_value},
        {"allocate_and_failure", test_allocate_and_failure},
        {"free_queue_order", test_free_queue_order},
        {"lru_eviction", test_lru_eviction},
        {"prefix_hits", test_prefix_hits},
        {"shared_refcounts", test_shared_refcounts},
        {"free_hits_consume_capacity", test_free_hits_consume_capacity},
        {"failure_with_hits_no_side_effects", test_failure_with_hits_no_side_effects},
        {"preemption_keeps_hashes", test_preemption_keeps_hashes},
        {"hash_chaining", test_hash_chaining},
        {"output_ids", test_output_ids},
        {"no_ids", test_no_ids},
        {"mooncake_hash_ids", test_mooncake_hash_ids},
        {"random_invariants", test_random_invariants},
        {NULL, NULL},
    };
    sv_test_add_suite("kvcache", cases);
    return sv_test_run();
}
