/* KV free queue: the lru ring's compaction (memory-tier/memtier_internal.h, evict.c), run by the
 * manager inline for the built-in policy and through the "lru" eviction table's callbacks for a
 * copy of the table (the same ring, its slots kept in the table's own array). Expected orders are
 * worked out by hand from vLLM's FreeKVCacheBlockQueue rules: freed blocks go to the tail (a
 * sequence's tail block first), an allocation takes the head, a prefix hit takes a free block out
 * of the middle. */
#include "memory-tier/memtier.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <string.h>

static void check_order(const sv_memtier_kv_manager *m, const uint32_t *want, uint32_t n)
{
    uint32_t got[64];
    uint32_t k = sv_memtier_kv_manager_free_queue(m, got, 64);
    SV_ASSERT_EQ_I64(k, n);
    for (uint32_t i = 0; i < n && i < k; i++)
        SV_ASSERT_EQ_I64(got[i], want[i]);
}

/* The lru table on its own: push/remove/pop/order over block ids. */
static void test_lru_callbacks(void)
{
    const struct sv_memtier_kv_evict_ops *ops = sv_memtier_kv_evict_lru();
    GError *err = NULL;
    CU_ASSERT_PTR_NULL(ops->create(4, "x", &err));
    CU_ASSERT(err && strstr(err->message, "takes no parameter"));
    g_clear_error(&err);
    void *s = ops->create(5, NULL, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    uint32_t ids[8];
    SV_ASSERT_EQ_I64(ops->order(s, ids, 8), 0);
    for (uint32_t i = 0; i < 5; i++)
        ops->push(s, i);
    ops->remove(s, 2);                /* 0 1 3 4 */
    SV_ASSERT_EQ_I64(ops->pop(s), 0); /* 1 3 4 */
    ops->push(s, 0);                  /* 1 3 4 0 */
    ops->remove(s, 4);                /* 1 3 0 (middle) */
    ops->remove(s, 1);                /* 3 0 (head) */
    ops->push(s, 2);                  /* 3 0 2 */
    uint32_t k = ops->order(s, ids, 8);
    SV_ASSERT_EQ_I64(k, 3);
    SV_ASSERT_EQ_I64(ids[0], 3);
    SV_ASSERT_EQ_I64(ids[1], 0);
    SV_ASSERT_EQ_I64(ids[2], 2);
    SV_ASSERT_EQ_I64(ops->order(s, ids, 2), 2); /* bounded by max */
    ops->remove(s, 2);                          /* the tail */
    ops->push(s, 4);                            /* 3 0 4 */
    SV_ASSERT_EQ_I64(ops->pop(s), 3);
    SV_ASSERT_EQ_I64(ops->pop(s), 0);
    SV_ASSERT_EQ_I64(ops->pop(s), 4);
    SV_ASSERT_EQ_I64(ops->order(s, ids, 8), 0);
    ops->destroy(s);
}

/* The same callbacks under another name: the manager does not recognise the table and calls
 * its callbacks instead of running the ring inline. */
static struct sv_memtier_kv_evict_ops lru_copy;

static sv_memtier_kv_manager *new_manager(gboolean via_callbacks, uint32_t blocks, uint32_t bs)
{
    if (!via_callbacks)
        return sv_memtier_kv_manager_new(blocks, bs, TRUE);
    lru_copy = *sv_memtier_kv_evict_lru();
    GError *err = NULL;
    sv_memtier_kv_manager *m =
        sv_memtier_kv_manager_new_with_eviction(blocks, bs, TRUE, &lru_copy, NULL, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    return m;
}

static sv_memtier_kv_seq *seq_ids(sv_memtier_kv_manager *m, const uint32_t *ids, size_t n)
{
    struct sv_memtier_kv_seq_cfg c = {.prompt_tokens = n, .prompt_ids = ids, .num_prompt_ids = n};
    GError *err = NULL;
    sv_memtier_kv_seq *s = sv_memtier_kv_seq_new(m, &c, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    return s;
}

/* 8 blocks of 2 tokens. Each cycle admits the 7-token prompt [1 .. 7] and frees it: 4 blocks,
 * the first three full and indexed, the fourth partial (never indexed).
 *   cycle 1: no hit; pops 0 1 2 3; free appends 3 2 1 0 -> 4 5 6 7 3 | 2 1 0
 *   cycle k >= 2: hits blocks 0 1 2 (6 tokens: the last token always runs), taking them out of
 *   the queue's tail; pops the head h for the fourth block; free appends h 2 1 0 -> the list
 *   before 2 1 0 rotates left by one.
 * So after cycle k the order is [4 5 6 7 3] rotated left by k - 1, then 2 1 0, and cycle k's
 * fourth block is element (k - 2) mod 5 of [4 5 6 7 3]. The ring holds 16 slots: each cycle from
 * 2 on leaves three holes and four new slots while the head moves one, so the ring fills and is
 * compacted (first in cycle 4, then every third cycle: 13 times in 40 cycles). Finally a 16-token
 * prompt of other tokens takes all 8 blocks in queue order, evicting the three cached blocks
 * last. */
static void run_compaction(gboolean via_callbacks)
{
    static const uint32_t rot[5] = {4, 5, 6, 7, 3};
    sv_memtier_kv_manager *m = new_manager(via_callbacks, 8, 2);
    const uint32_t prompt[7] = {1, 2, 3, 4, 5, 6, 7};
    uint64_t h0 = 0;
    for (int k = 1; k <= 40; k++) {
        sv_memtier_kv_seq *s = seq_ids(m, prompt, 7);
        uint64_t hit = sv_memtier_kv_manager_get_computed_blocks(m, s, 7);
        SV_ASSERT_EQ_I64(hit, k == 1 ? 0 : 6);
        CU_ASSERT_TRUE_FATAL(sv_memtier_kv_manager_allocate_slots(m, s, 0, 7 - hit, hit, 7));
        SV_ASSERT_EQ_I64(sv_memtier_kv_seq_num_blocks(s), 4);
        const uint32_t *ids = sv_memtier_kv_seq_block_ids(s);
        SV_ASSERT_EQ_I64(ids[0], 0);
        SV_ASSERT_EQ_I64(ids[1], 1);
        SV_ASSERT_EQ_I64(ids[2], 2);
        SV_ASSERT_EQ_I64(ids[3], k == 1 ? 3 : rot[(k - 2) % 5]);
        if (k == 1)
            h0 = sv_memtier_kv_seq_block_hash(s, 0);
        sv_memtier_kv_manager_free_seq(m, s);
        sv_memtier_kv_seq_free(s);
        uint32_t want[8];
        for (int i = 0; i < 5; i++)
            want[i] = rot[(i + k - 1) % 5];
        want[5] = 2;
        want[6] = 1;
        want[7] = 0;
        check_order(m, want, 8);
    }
    uint32_t id = 99;
    CU_ASSERT_TRUE(sv_memtier_kv_manager_lookup(m, h0, &id));
    SV_ASSERT_EQ_I64(id, 0);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_cached_free_blocks(m), 3);
    /* 40 cycles: the list is rotated left by 39 = 4 (mod 5): 3 4 5 6 7, then 2 1 0 */
    uint32_t big_ids[16];
    for (uint32_t i = 0; i < 16; i++)
        big_ids[i] = 1000 + i;
    sv_memtier_kv_seq *big = seq_ids(m, big_ids, 16);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_get_computed_blocks(m, big, 16), 0);
    CU_ASSERT_TRUE_FATAL(sv_memtier_kv_manager_allocate_slots(m, big, 0, 16, 0, 16));
    const uint32_t victims[8] = {3, 4, 5, 6, 7, 2, 1, 0};
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_num_blocks(big), 8);
    for (int i = 0; i < 8; i++)
        SV_ASSERT_EQ_I64(sv_memtier_kv_seq_block_ids(big)[i], victims[i]);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_free_blocks(m), 0);
    CU_ASSERT_FALSE(sv_memtier_kv_manager_lookup(m, h0, NULL));
    struct sv_memtier_kv_stats st;
    sv_memtier_kv_manager_get_stats(m, &st);
    SV_ASSERT_EQ_I64(st.evictions, 3);
    /* freed in reverse: the big sequence's tail block is the next victim */
    sv_memtier_kv_manager_free_seq(m, big);
    check_order(m, (const uint32_t[]){0, 1, 2, 7, 6, 5, 4, 3}, 8);
    sv_memtier_kv_seq_free(big);
    sv_memtier_kv_manager_free(m);
}

static void test_ring_compaction(void)
{
    run_compaction(FALSE);
}

static void test_compaction_via_callbacks(void)
{
    run_compaction(TRUE);
}

/* LRU over cached blocks: three 4-token prompts (2 full blocks each, all indexed) freed in the
 * order a, b, c leave [unused 6 7] then a's blocks tail first (1 0), b's (3 2), c's (5 4). A new
 * 8-token prompt needs 4 blocks: 6, 7, then 1 and 0 (a's entries go first); then a hit on b's
 * head block 2 takes it out of the middle, and the next 2-block allocation evicts 3 and 5. */
static void run_lru_victims(gboolean via_callbacks)
{
    sv_memtier_kv_manager *m = new_manager(via_callbacks, 8, 2);
    uint32_t pa[4] = {10, 11, 12, 13}, pb[4] = {20, 21, 22, 23}, pc[4] = {30, 31, 32, 33};
    sv_memtier_kv_seq *a = seq_ids(m, pa, 4), *b = seq_ids(m, pb, 4), *c = seq_ids(m, pc, 4);
    CU_ASSERT_TRUE_FATAL(sv_memtier_kv_manager_allocate_slots(m, a, 0, 4, 0, 4)); /* 0 1 */
    CU_ASSERT_TRUE_FATAL(sv_memtier_kv_manager_allocate_slots(m, b, 0, 4, 0, 4)); /* 2 3 */
    CU_ASSERT_TRUE_FATAL(sv_memtier_kv_manager_allocate_slots(m, c, 0, 4, 0, 4)); /* 4 5 */
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_cached_blocks(m), 6);
    uint64_t ha0 = sv_memtier_kv_seq_block_hash(a, 0), hb0 = sv_memtier_kv_seq_block_hash(b, 0),
             hb1 = sv_memtier_kv_seq_block_hash(b, 1), hc0 = sv_memtier_kv_seq_block_hash(c, 0),
             hc1 = sv_memtier_kv_seq_block_hash(c, 1);
    sv_memtier_kv_manager_free_seq(m, a);
    sv_memtier_kv_manager_free_seq(m, b);
    sv_memtier_kv_manager_free_seq(m, c);
    check_order(m, (const uint32_t[]){6, 7, 1, 0, 3, 2, 5, 4}, 8);
    uint32_t pd[8] = {40, 41, 42, 43, 44, 45, 46, 47};
    sv_memtier_kv_seq *d = seq_ids(m, pd, 8);
    CU_ASSERT_TRUE_FATAL(sv_memtier_kv_manager_allocate_slots(m, d, 0, 8, 0, 8));
    const uint32_t dv[4] = {6, 7, 1, 0};
    for (int i = 0; i < 4; i++)
        SV_ASSERT_EQ_I64(sv_memtier_kv_seq_block_ids(d)[i], dv[i]);
    CU_ASSERT_FALSE(sv_memtier_kv_manager_lookup(m, ha0, NULL));
    struct sv_memtier_kv_stats st;
    sv_memtier_kv_manager_get_stats(m, &st);
    SV_ASSERT_EQ_I64(st.evictions, 2);
    check_order(m, (const uint32_t[]){3, 2, 5, 4}, 4);
    /* b's prompt again: its first block (2) is hit (the last token always runs, so only
     * floor(3 / 2) = 1 block may hit); block 2 leaves the middle of the queue */
    sv_memtier_kv_seq *b2 = seq_ids(m, pb, 4);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_get_computed_blocks(m, b2, 4), 2);
    CU_ASSERT_TRUE_FATAL(sv_memtier_kv_manager_allocate_slots(m, b2, 0, 2, 2, 4));
    /* it needs one new block: the head, 3, which holds b's second entry */
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_block_ids(b2)[0], 2);
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_block_ids(b2)[1], 3);
    check_order(m, (const uint32_t[]){5, 4}, 2);
    uint32_t id = 99;
    CU_ASSERT_TRUE(sv_memtier_kv_manager_lookup(m, hb0, &id));
    SV_ASSERT_EQ_I64(id, 2);
    /* block 3 now holds b2's second block, whose key equals b's: re-indexed at allocation */
    CU_ASSERT_TRUE(sv_memtier_kv_manager_lookup(m, hb1, &id));
    SV_ASSERT_EQ_I64(id, 3);
    /* c's entries are the only free ones left, tail block (5) first */
    uint32_t pe[4] = {50, 51, 52, 53};
    sv_memtier_kv_seq *e = seq_ids(m, pe, 4);
    CU_ASSERT_TRUE_FATAL(sv_memtier_kv_manager_allocate_slots(m, e, 0, 4, 0, 4));
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_block_ids(e)[0], 5);
    SV_ASSERT_EQ_I64(sv_memtier_kv_seq_block_ids(e)[1], 4);
    CU_ASSERT_FALSE(sv_memtier_kv_manager_lookup(m, hc0, NULL));
    CU_ASSERT_FALSE(sv_memtier_kv_manager_lookup(m, hc1, NULL));
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_free_blocks(m), 0);
    sv_memtier_kv_seq *seqs[] = {a, b, c, d, b2, e};
    for (size_t i = 0; i < G_N_ELEMENTS(seqs); i++)
        sv_memtier_kv_seq_free(seqs[i]); /* returns the blocks d, b2 and e still hold */
    sv_memtier_kv_manager_free(m);
}

static void test_lru_victims(void)
{
    run_lru_victims(FALSE);
}

static void test_lru_victims_via_callbacks(void)
{
    run_lru_victims(TRUE);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"lru callbacks", test_lru_callbacks},
        {"ring compaction keeps the order", test_ring_compaction},
        {"compaction sequence through the callbacks", test_compaction_via_callbacks},
        {"lru victims", test_lru_victims},
        {"lru victims through the callbacks", test_lru_victims_via_callbacks},
        {NULL, NULL},
    };
    sv_test_add_suite("kv_evict", cases);
    return sv_test_run();
}
