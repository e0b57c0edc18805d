/* Internals shared by the memory-tier module's files (and its tests), not part of the API. */
#ifndef SV_MEMTIER_INTERNAL_H
#define SV_MEMTIER_INTERNAL_H

#include "memory-tier/memtier.h"

/* ---- the lru order ------------------------------------------------------------------------
 * The one implementation of the "lru" eviction order (vLLM's FreeKVCacheBlockQueue,
 * vllm/v1/core/kv_cache_utils.py v0.19.0; LLMServingSim serving/core/block_pool.py: freed
 * blocks appended at the tail, allocation from the head, O(1) removal from the middle when a
 * prefix hit pins a free block). evict.c's "lru" table keeps its state in it, and the KV manager
 * (kvcache.c), recognising that table, runs it directly, inline, with each block's slot kept in
 * its own block record.
 *
 * A ring of block ids instead of a linked list: a removed block leaves a hole (its slot is known
 * from the block's record) that the head skips. Pops then read the ring sequentially and know the
 * next ids in advance (sv_memtier__lru_ahead), so the block records, which a long run visits in an
 * order unrelated to their ids (a cache miss each), can be fetched ahead instead of one pointer
 * chase at a time. When holes fill the ring it is compacted in order: O(num_blocks), at most
 * once per num_blocks removals (capacity >= 2 num_blocks). No operation allocates but that. */
#define SV_MEMTIER_KV_LRU_HOLE UINT32_MAX

typedef struct {
    uint32_t *ring;      /* block ids in queue order, SV_MEMTIER_KV_LRU_HOLE where one left */
    uint32_t mask;       /* capacity - 1 (a power of two >= 2 num_blocks) */
    uint32_t len;        /* queued blocks */
    uint64_t head, tail; /* slots [head, tail) hold the queue (ever increasing) */
    char *pos_base;      /* a queued block's ring slot is the uint32_t at */
    size_t pos_stride;   /* pos_base + id * pos_stride (the caller's block records) */
} sv_memtier__lru;

/* An empty queue for block ids < num_blocks; `pos_base`/`pos_stride` locate the uint32_t where
 * the queue keeps block id's ring slot while the block is queued. */
void sv_memtier__lru_init(sv_memtier__lru *q, uint32_t num_blocks, uint32_t *pos_base,
                          size_t pos_stride);
void sv_memtier__lru_clear(sv_memtier__lru *q);
void sv_memtier__lru_compact(sv_memtier__lru *q);
/* Up to `max` queued ids, head first. */
uint32_t sv_memtier__lru_order(const sv_memtier__lru *q, uint32_t *ids, uint32_t max);

static inline uint32_t *sv_memtier__lru_pos(const sv_memtier__lru *q, uint32_t id)
{
    return (uint32_t *)(q->pos_base + (size_t)id * q->pos_stride);
}

/* Append a block that is not queued at the tail. */
static inline void sv_memtier__lru_push(sv_memtier__lru *q, uint32_t id)
{
    if (q->tail - q->head > q->mask)
        sv_memtier__lru_compact(q);
    uint32_t p = (uint32_t)(q->tail & q->mask);
    *sv_memtier__lru_pos(q, id) = p;
    q->ring[p] = id;
    q->tail++;
    q->len++;
}

/* Take a queued block out, wherever it is. */
static inline void sv_memtier__lru_remove(sv_memtier__lru *q, uint32_t id)
{
    q->ring[*sv_memtier__lru_pos(q, id)] = SV_MEMTIER_KV_LRU_HOLE; /* the head skips it */
    q->len--;
}

/* Take the head; the queue must not be empty. */
static inline uint32_t sv_memtier__lru_pop(sv_memtier__lru *q)
{
    uint32_t id;
    while ((id = q->ring[q->head & q->mask]) == SV_MEMTIER_KV_LRU_HOLE)
        q->head++;
    q->head++;
    q->len--;
    return id;
}

/* What the ring holds `k` slots past the head: a queued block's id, or a hole, or a stale id
 * past the tail; a hint for prefetching only. */
static inline uint32_t sv_memtier__lru_ahead(const sv_memtier__lru *q, uint32_t k)
{
    return q->ring[(q->head + k) & q->mask];
}

/* ---- tiers (tier.c): counters booked by the fabric and the prefix pools ------------------- */

void sv_memtier__tier_count_io(sv_memtier_tier *t, uint64_t read_bytes, uint64_t write_bytes);
void sv_memtier__tier_count_pool(sv_memtier_tier *t, uint64_t evictions, uint64_t rejected);

#endif
