/* Prefix pools and the generic LRU: eviction orders (issue 8 tests 5), matching along a
 * fine-hash chain, admission, shrinking, ledgers. */
#include "memory-tier/memtier_internal.h"
#include "tests/test_util.h"

#include <string.h>

/* One 256-token chunk of Llama-3.1-8B KV: 256 x 131,072 B = 33,554,432 B. */
#define CHUNK_BYTES UINT64_C(33554432)

static sv_memtier_tier *tier_of(sv_engine *eng, const char *name, uint64_t cap)
{
    struct sv_memtier_tier_cfg c = {
        .kind = SV_MEMTIER_DRAM, .capacity_bytes = cap, .read_gbps = 256};
    g_strlcpy(c.name, name, sizeof c.name);
    return sv_memtier_tier_new(eng, &c);
}

static sv_memtier_prefix_pool *pool_of(sv_memtier_tier *t, const char *evict, const char *admit)
{
    struct sv_memtier_prefix_pool_cfg c = {.tier = t,
                                           .chunk_tokens = 256,
                                           .fine_tokens = 16,
                                           .chunk_bytes = CHUNK_BYTES,
                                           .evict = evict,
                                           .admit = admit};
    GError *err = NULL;
    sv_memtier_prefix_pool *p = sv_memtier_prefix_pool_new(&c, &err);
    CU_ASSERT_FATAL(p != NULL);
    return p;
}

struct evlog {
    uint64_t keys[8];
    int n;
};

static void on_evict(void *ctx, uint64_t key)
{
    struct evlog *l = ctx;
    l->keys[l->n++] = key;
}

static void test_lru_basic(void)
{
    sv_memtier_lru *l = sv_memtier_lru_new(2, FALSE);
    uint64_t ev = 0, keys[4];
    CU_ASSERT_FALSE(sv_memtier_lru_insert(l, 10, &ev));
    CU_ASSERT_FALSE(sv_memtier_lru_insert(l, 0, &ev)); /* key 0 is a key like any other */
    CU_ASSERT(sv_memtier_lru_touch(l, 10));
    CU_ASSERT(sv_memtier_lru_insert(l, 30, &ev)); /* full: evicts 0, the least recent */
    SV_ASSERT_EQ_I64(ev, 0);
    CU_ASSERT_EQUAL(sv_memtier_lru_order(l, keys, 4), 2);
    SV_ASSERT_EQ_I64(keys[0], 10);
    SV_ASSERT_EQ_I64(keys[1], 30);
    CU_ASSERT(sv_memtier_lru_remove(l, 10));
    CU_ASSERT_FALSE(sv_memtier_lru_contains(l, 10));
    CU_ASSERT_EQUAL(sv_memtier_lru_len(l), 1);
    CU_ASSERT(sv_memtier_lru_pop(l, &ev));
    SV_ASSERT_EQ_I64(ev, 30);
    CU_ASSERT_FALSE(sv_memtier_lru_pop(l, &ev));
    /* many inserts through the free list */
    for (uint64_t k = 100; k < 200; k++)
        sv_memtier_lru_insert(l, k, NULL);
    CU_ASSERT_EQUAL(sv_memtier_lru_order(l, keys, 4), 2);
    SV_ASSERT_EQ_I64(keys[0], 198);
    SV_ASSERT_EQ_I64(keys[1], 199);
    sv_memtier_lru_free(l);
}

/* Test 5: a 3-chunk pool (tier of 3 x 33,554,432 B); insert A, B, C; match A; insert D.
 * lru: A was read after B and C were written, so B is the least recent: evicts B, order C, A, D.
 * fifo (LLMServingSim): hits do not count, A was written first: evicts A, order B, C, D.
 * Both pools at once on two tiers: each keeps its own order. */
static void test_order(void)
{
    sv_engine *eng = sv_engine_new(1);
    sv_memtier_tier *t1 = tier_of(eng, "node0/cpu", 3 * CHUNK_BYTES);
    sv_memtier_tier *t2 = tier_of(eng, "node1/cpu", 3 * CHUNK_BYTES);
    sv_memtier_prefix_pool *lru = pool_of(t1, "lru", NULL);
    sv_memtier_prefix_pool *fifo = pool_of(t2, "fifo", "all");
    enum { A = 0xA, B = 0xB, C = 0xC, D = 0xD };
    struct evlog e1 = {{0}, 0}, e2 = {{0}, 0};
    sv_memtier_prefix_pool *pools[2] = {lru, fifo};
    struct evlog *logs[2] = {&e1, &e2};
    for (int i = 0; i < 2; i++) {
        CU_ASSERT(sv_memtier_prefix_pool_insert(pools[i], A, on_evict, logs[i]));
        CU_ASSERT(sv_memtier_prefix_pool_insert(pools[i], B, on_evict, logs[i]));
        CU_ASSERT(sv_memtier_prefix_pool_insert(pools[i], C, on_evict, logs[i]));
    }
    /* "match A": a chain of 16 fine hashes whose last one (index 15) is A: one chunk. */
    uint64_t fine[16] = {0};
    fine[15] = A;
    CU_ASSERT_EQUAL(sv_memtier_prefix_pool_match(lru, fine, 16, 0), 1);
    CU_ASSERT_EQUAL(sv_memtier_prefix_pool_match(fifo, fine, 16, 0), 1);
    CU_ASSERT_EQUAL(sv_memtier_prefix_pool_match(lru, fine, 15, 0), 0); /* not a whole chunk */
    for (int i = 0; i < 2; i++)
        CU_ASSERT(sv_memtier_prefix_pool_insert(pools[i], D, on_evict, logs[i]));
    uint64_t o[4];
    CU_ASSERT_EQUAL(e1.n, 1);
    SV_ASSERT_EQ_I64(e1.keys[0], B);
    CU_ASSERT_EQUAL(sv_memtier_prefix_pool_order(lru, o, 4), 3);
    SV_ASSERT_EQ_I64(o[0], C);
    SV_ASSERT_EQ_I64(o[1], A);
    SV_ASSERT_EQ_I64(o[2], D);
    CU_ASSERT_EQUAL(e2.n, 1);
    SV_ASSERT_EQ_I64(e2.keys[0], A);
    CU_ASSERT_EQUAL(sv_memtier_prefix_pool_order(fifo, o, 4), 3);
    SV_ASSERT_EQ_I64(o[0], B);
    SV_ASSERT_EQ_I64(o[1], C);
    SV_ASSERT_EQ_I64(o[2], D);
    /* Ledgers: 3 chunks each, one eviction each. */
    struct sv_memtier_tier_stats st;
    sv_memtier_tier_get_stats(t1, 0, &st);
    SV_ASSERT_EQ_I64(sv_memtier_tier_used_by(t1, SV_MEMTIER_OWNER_PREFIX), 3 * CHUNK_BYTES);
    SV_ASSERT_EQ_I64(st.evictions, 1);
    SV_ASSERT_EQ_I64(st.peak_by_owner[SV_MEMTIER_OWNER_PREFIX], 3 * CHUNK_BYTES);
    sv_memtier_prefix_pool_free(lru);
    sv_memtier_prefix_pool_free(fifo);
    SV_ASSERT_EQ_I64(sv_memtier_tier_used(t1), 0);
    SV_ASSERT_EQ_I64(sv_memtier_tier_used(t2), 0);
    sv_memtier_tier_free(t1);
    sv_memtier_tier_free(t2);
    sv_engine_free(eng);
}

/* Matching along a chain: chunks 0..2 keyed by fine hashes 15, 31, 47 (N = 256/16 = 16). Pool
 * holds chunks 0 and 2: from c0 = 0 one chunk (stops at the missing chunk 1); from c0 = 2 one. */
static void test_match_chain(void)
{
    sv_engine *eng = sv_engine_new(1);
    sv_memtier_tier *t = tier_of(eng, "node0/cpu", 8 * CHUNK_BYTES);
    sv_memtier_prefix_pool *p = pool_of(t, NULL, NULL);
    uint64_t fine[48];
    for (int i = 0; i < 48; i++)
        fine[i] = 1000 + (uint64_t)i;
    SV_ASSERT_EQ_I64(sv_memtier_prefix_pool_chunk_key(p, fine, 1), 1031);
    sv_memtier_prefix_pool_insert(p, 1015, NULL, NULL);
    sv_memtier_prefix_pool_insert(p, 1047, NULL, NULL);
    CU_ASSERT_EQUAL(sv_memtier_prefix_pool_match(p, fine, 48, 0), 1);
    CU_ASSERT_EQUAL(sv_memtier_prefix_pool_match(p, fine, 48, 1), 0);
    CU_ASSERT_EQUAL(sv_memtier_prefix_pool_match(p, fine, 48, 2), 1);
    sv_memtier_prefix_pool_insert(p, 1031, NULL, NULL);
    CU_ASSERT_EQUAL(sv_memtier_prefix_pool_match(p, fine, 48, 0), 3);
    CU_ASSERT_EQUAL(sv_memtier_prefix_pool_match(p, fine, 47, 0), 2);
    sv_memtier_prefix_pool_free(p);
    sv_memtier_tier_free(t);
    sv_engine_free(eng);
}

/* Other owners share the tier: capacity 3 chunks, weights take 1.5 chunks: the pool holds one
 * chunk; a second insertion evicts the first. With weights at 2.5 chunks nothing fits: rejected
 * (counted). shrink frees whole chunks until the room asked for is free. */
static void test_shared_tier_shrink_admit(void)
{
    sv_engine *eng = sv_engine_new(1);
    sv_memtier_tier *t = tier_of(eng, "node0/cpu", 3 * CHUNK_BYTES);
    sv_memtier_prefix_pool *p = pool_of(t, NULL, NULL);
    CU_ASSERT(sv_memtier_tier_charge(t, SV_MEMTIER_OWNER_WEIGHTS, 3 * CHUNK_BYTES / 2, NULL));
    CU_ASSERT(sv_memtier_prefix_pool_insert(p, 1, NULL, NULL));
    CU_ASSERT(sv_memtier_prefix_pool_insert(p, 2, NULL, NULL));
    CU_ASSERT_EQUAL(sv_memtier_prefix_pool_len(p), 1);
    CU_ASSERT(sv_memtier_prefix_pool_contains(p, 2));
    /* swap pressure: 1.5 chunks free wanted -> the one chunk goes */
    SV_ASSERT_EQ_I64(sv_memtier_prefix_pool_shrink(p, 3 * CHUNK_BYTES / 2), CHUNK_BYTES);
    CU_ASSERT_EQUAL(sv_memtier_prefix_pool_len(p), 0);
    CU_ASSERT(sv_memtier_tier_charge(t, SV_MEMTIER_OWNER_WEIGHTS, CHUNK_BYTES, NULL));
    CU_ASSERT_FALSE(sv_memtier_prefix_pool_insert(p, 3, NULL, NULL));
    struct sv_memtier_tier_stats st;
    sv_memtier_tier_get_stats(t, 0, &st);
    SV_ASSERT_EQ_I64(st.rejected, 1);
    SV_ASSERT_EQ_I64(st.evictions, 2);
    sv_memtier_prefix_pool_free(p);
    /* admit "second": the first offer is refused, the second inserts */
    sv_memtier_tier_charge(t, SV_MEMTIER_OWNER_WEIGHTS, -(int64_t)(5 * CHUNK_BYTES / 2), NULL);
    p = pool_of(t, "lru", "second");
    CU_ASSERT_FALSE(sv_memtier_prefix_pool_insert(p, 7, NULL, NULL));
    CU_ASSERT(sv_memtier_prefix_pool_insert(p, 7, NULL, NULL));
    CU_ASSERT(sv_memtier_prefix_pool_contains(p, 7));
    sv_memtier_prefix_pool_free(p);
    sv_memtier_tier_free(t);
    sv_engine_free(eng);
}

static void test_bad_cfg(void)
{
    sv_engine *eng = sv_engine_new(1);
    sv_memtier_tier *t = tier_of(eng, "node0/cpu", 3 * CHUNK_BYTES);
    struct sv_memtier_prefix_pool_cfg c = {
        .tier = t, .chunk_tokens = 256, .fine_tokens = 16, .chunk_bytes = 1, .evict = "mru"};
    GError *err = NULL;
    CU_ASSERT_PTR_NULL(sv_memtier_prefix_pool_new(&c, &err));
    CU_ASSERT_STRING_EQUAL(err->message,
                           "node0/cpu: prefix pool eviction \"mru\" (expected lru or fifo)");
    g_clear_error(&err);
    c.evict = NULL;
    c.fine_tokens = 100;
    CU_ASSERT_PTR_NULL(sv_memtier_prefix_pool_new(&c, &err));
    g_clear_error(&err);
    sv_memtier_tier_free(t);
    sv_engine_free(eng);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"generic lru", test_lru_basic},
        {"lru vs fifo eviction order (test 5)", test_order},
        {"match along a fine-hash chain", test_match_chain},
        {"shared tier, shrink, admit second", test_shared_tier_shrink_admit},
        {"bad configuration", test_bad_cfg},
        {NULL, NULL},
    };
    sv_test_add_suite("memtier prefix pool", cases);
    return sv_test_run();
}
