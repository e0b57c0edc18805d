/* A prefix pool: the KV chunks one lower tier (host DRAM, a CXL device, an SSD) holds, in the
 * style of LMCache / LLMServingSim's storage pool (docs/kvcache.md "Memory tiers").
 *
 * A chunk is `chunk_tokens` tokens (256, LMCache's chunk_size as LLMServingSim uses it) of one
 * sequence's KV, keyed by the fine (NPU block) hash that ends it: key(c) = fine[(c+1)N - 1],
 * N = chunk_tokens / fine_tokens, as LLMServingSim keys its coarse blocks, so a key names the
 * whole prefix up to the end of the chunk. Every chunk is charged `chunk_bytes` on the tier as
 * SV_MEMTIER_OWNER_PREFIX; an insertion evicts chunks in the pool's order until it fits:
 * "lru" (default: least recently read or written) or "fifo" (least recently written,
 * LLMServingSim). Admission "second" inserts a chunk only the second time it is offered (a filter
 * against one-off prompts); "all" (default) inserts every chunk. */
#include "memory-tier/memtier_internal.h"

#include <string.h>

struct sv_memtier_prefix_pool {
    sv_memtier_tier *tier;
    uint32_t chunk_tokens, fine_tokens, fine_per_chunk;
    uint64_t chunk_bytes;
    gboolean admit_second;
    sv_memtier_lru *order;
    sv_u64map seen; /* admit "second": keys offered once (mixed key -> 1) */
};

sv_memtier_prefix_pool *sv_memtier_prefix_pool_new(const struct sv_memtier_prefix_pool_cfg *c,
                                                   GError **error)
{
    SV_ASSERT(c != NULL && c->tier != NULL);
    const char *name = sv_memtier_tier_get_cfg(c->tier)->name;
    gboolean fifo = FALSE, second = FALSE;
    if (c->evict != NULL && strcmp(c->evict, "fifo") == 0)
        fifo = TRUE;
    else if (c->evict != NULL && strcmp(c->evict, "lru") != 0) {
        g_set_error(error, SV_MEMTIER_ERROR, SV_MEMTIER_ERROR_CONFIG,
                    "%s: prefix pool eviction \"%s\" (expected lru or fifo)", name, c->evict);
        return NULL;
    }
    if (c->admit != NULL && strcmp(c->admit, "second") == 0)
        second = TRUE;
    else if (c->admit != NULL && strcmp(c->admit, "all") != 0) {
        g_set_error(error, SV_MEMTIER_ERROR, SV_MEMTIER_ERROR_CONFIG,
                    "%s: prefix pool admission \"%s\" (expected all or second)", name, c->admit);
        return NULL;
    }
    if (c->fine_tokens == 0 || c->chunk_tokens == 0 || c->chunk_tokens % c->fine_tokens != 0 ||
        c->chunk_bytes == 0) {
        g_set_error(error, SV_MEMTIER_ERROR, SV_MEMTIER_ERROR_CONFIG,
                    "%s: prefix chunk of %u tokens is not a positive multiple of the %u-token "
                    "block (or has no bytes)",
                    name, c->chunk_tokens, c->fine_tokens);
        return NULL;
    }
    sv_memtier_prefix_pool *p = g_new0(sv_memtier_prefix_pool, 1);
    p->tier = c->tier;
    p->chunk_tokens = c->chunk_tokens;
    p->fine_tokens = c->fine_tokens;
    p->fine_per_chunk = c->chunk_tokens / c->fine_tokens;
    p->chunk_bytes = c->chunk_bytes;
    p->admit_second = second;
    uint64_t slots = sv_memtier_tier_capacity(c->tier) / c->chunk_bytes;
    if (slots == 0)
        slots = 1; /* every insertion will be rejected by the tier */
    if (slots > UINT32_MAX - 1)
        slots = UINT32_MAX - 1;
    p->order = sv_memtier_lru_new((uint32_t)slots, fifo);
    return p;
}

void sv_memtier_prefix_pool_free(sv_memtier_prefix_pool *p)
{
    if (p == NULL)
        return;
    uint64_t held = (uint64_t)sv_memtier_lru_len(p->order) * p->chunk_bytes;
    if (held > 0)
        sv_memtier_tier_charge(p->tier, SV_MEMTIER_OWNER_PREFIX, -(int64_t)held, NULL);
    sv_memtier_lru_free(p->order);
    sv_u64map_clear(&p->seen);
    g_free(p);
}

sv_memtier_tier *sv_memtier_prefix_pool_tier(const sv_memtier_prefix_pool *p)
{
    return p->tier;
}

uint32_t sv_memtier_prefix_pool_chunk_tokens(const sv_memtier_prefix_pool *p)
{
    return p->chunk_tokens;
}

uint64_t sv_memtier_prefix_pool_chunk_bytes(const sv_memtier_prefix_pool *p)
{
    return p->chunk_bytes;
}

uint32_t sv_memtier_prefix_pool_len(const sv_memtier_prefix_pool *p)
{
    return sv_memtier_lru_len(p->order);
}

uint64_t sv_memtier_prefix_pool_chunk_key(const sv_memtier_prefix_pool *p,
                                          const uint64_t *fine_hashes, uint32_t c)
{
    return fine_hashes[(uint64_t)(c + 1) * p->fine_per_chunk - 1];
}

gboolean sv_memtier_prefix_pool_contains(const sv_memtier_prefix_pool *p, uint64_t key)
{
    return sv_memtier_lru_contains(p->order, key);
}

gboolean sv_memtier_prefix_pool_touch(sv_memtier_prefix_pool *p, uint64_t key)
{
    return sv_memtier_lru_touch(p->order, key);
}

uint32_t sv_memtier_prefix_pool_match(sv_memtier_prefix_pool *p, const uint64_t *fine_hashes,
                                      uint32_t n_fine, uint32_t c0)
{
    uint32_t whole = n_fine / p->fine_per_chunk;
    uint32_t n = 0;
    for (uint32_t c = c0; c < whole; c++) {
        if (!sv_memtier_lru_touch(p->order, sv_memtier_prefix_pool_chunk_key(p, fine_hashes, c)))
            break;
        n++;
    }
    return n;
}

/* Evict the next chunk in the pool's order; FALSE when empty. */
static gboolean evict_one(sv_memtier_prefix_pool *p, void (*evicted)(void *, uint64_t), void *ctx)
{
    uint64_t key;
    if (!sv_memtier_lru_pop(p->order, &key))
        return FALSE;
    gboolean ok =
        sv_memtier_tier_charge(p->tier, SV_MEMTIER_OWNER_PREFIX, -(int64_t)p->chunk_bytes, NULL);
    SV_ASSERT(ok);
    sv_memtier__tier_count_pool(p->tier, 1, 0);
    if (evicted != NULL)
        evicted(ctx, key);
    return TRUE;
}

gboolean sv_memtier_prefix_pool_insert(sv_memtier_prefix_pool *p, uint64_t key,
                                       void (*evicted)(void *ctx, uint64_t key), void *ctx)
{
    if (sv_memtier_lru_touch(p->order, key))
        return TRUE;
    if (p->admit_second) {
        uint64_t mk = sv_hash_mix64(key);
        if (sv_u64map_get(&p->seen, mk, 0) == 0) {
            sv_u64map_put(&p->seen, mk, 1);
            sv_memtier__tier_count_pool(p->tier, 0, 1);
            return FALSE;
        }
        sv_u64map_remove(&p->seen, mk);
    }
    /* Room on the tier: other owners (weights, swapped KV) may hold part of it. */
    if (sv_memtier_tier_free_bytes(p->tier) +
            (uint64_t)sv_memtier_lru_len(p->order) * p->chunk_bytes <
        p->chunk_bytes) {
        sv_memtier__tier_count_pool(p->tier, 0, 1);
        return FALSE;
    }
    while (sv_memtier_tier_free_bytes(p->tier) < p->chunk_bytes ||
           sv_memtier_lru_len(p->order) == sv_memtier_lru_slots(p->order))
        if (!evict_one(p, evicted, ctx))
            break;
    if (!sv_memtier_tier_charge(p->tier, SV_MEMTIER_OWNER_PREFIX, (int64_t)p->chunk_bytes, NULL)) {
        sv_memtier__tier_count_pool(p->tier, 0, 1);
        return FALSE;
    }
    uint64_t none;
    gboolean ev = sv_memtier_lru_insert(p->order, key, &none);
    SV_ASSERT(!ev);
    return TRUE;
}

uint64_t sv_memtier_prefix_pool_shrink(sv_memtier_prefix_pool *p, uint64_t bytes)
{
    uint64_t freed = 0;
    while (sv_memtier_tier_free_bytes(p->tier) < bytes && evict_one(p, NULL, NULL))
        freed += p->chunk_bytes;
    return freed;
}

uint32_t sv_memtier_prefix_pool_order(const sv_memtier_prefix_pool *p, uint64_t *keys, uint32_t max)
{
    return sv_memtier_lru_order(p->order, keys, max);
}
