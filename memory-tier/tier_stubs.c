/* Memory tiers: stubs of the parts not implemented yet. */
#include "memory-tier/memtier_internal.h"

#include <string.h>

static gboolean stub_error(GError **error)
{
    g_set_error(error, SV_MEMTIER_ERROR, SV_MEMTIER_ERROR_UNSUPPORTED,
                "memory tiers: not yet implemented");
    return FALSE;
}

sv_memtier_lru *sv_memtier_lru_new(uint32_t slots, gboolean fifo)
{
    (void)slots;
    (void)fifo;
    return NULL;
}
void sv_memtier_lru_free(sv_memtier_lru *l)
{
    (void)l;
}
uint32_t sv_memtier_lru_len(const sv_memtier_lru *l)
{
    (void)l;
    return 0;
}
uint32_t sv_memtier_lru_slots(const sv_memtier_lru *l)
{
    (void)l;
    return 0;
}
gboolean sv_memtier_lru_contains(const sv_memtier_lru *l, uint64_t key)
{
    (void)l;
    (void)key;
    return FALSE;
}
gboolean sv_memtier_lru_touch(sv_memtier_lru *l, uint64_t key)
{
    (void)l;
    (void)key;
    return FALSE;
}
gboolean sv_memtier_lru_insert(sv_memtier_lru *l, uint64_t key, uint64_t *evicted)
{
    (void)l;
    (void)key;
    (void)evicted;
    return FALSE;
}
gboolean sv_memtier_lru_pop(sv_memtier_lru *l, uint64_t *key)
{
    (void)l;
    (void)key;
    return FALSE;
}
gboolean sv_memtier_lru_remove(sv_memtier_lru *l, uint64_t key)
{
    (void)l;
    (void)key;
    return FALSE;
}
uint32_t sv_memtier_lru_order(const sv_memtier_lru *l, uint64_t *keys, uint32_t max)
{
    (void)l;
    (void)keys;
    (void)max;
    return 0;
}

sv_memtier_prefix_pool *sv_memtier_prefix_pool_new(const struct sv_memtier_prefix_pool_cfg *c,
                                                   GError **error)
{
    (void)c;
    stub_error(error);
    return NULL;
}
void sv_memtier_prefix_pool_free(sv_memtier_prefix_pool *p)
{
    (void)p;
}
sv_memtier_tier *sv_memtier_prefix_pool_tier(const sv_memtier_prefix_pool *p)
{
    (void)p;
    return NULL;
}
uint32_t sv_memtier_prefix_pool_chunk_tokens(const sv_memtier_prefix_pool *p)
{
    (void)p;
    return 0;
}
uint64_t sv_memtier_prefix_pool_chunk_bytes(const sv_memtier_prefix_pool *p)
{
    (void)p;
    return 0;
}
uint32_t sv_memtier_prefix_pool_len(const sv_memtier_prefix_pool *p)
{
    (void)p;
    return 0;
}
uint64_t sv_memtier_prefix_pool_chunk_key(const sv_memtier_prefix_pool *p, const uint64_t *h,
                                          uint32_t c)
{
    (void)p;
    (void)h;
    (void)c;
    return 0;
}
uint32_t sv_memtier_prefix_pool_match(sv_memtier_prefix_pool *p, const uint64_t *h, uint32_t n,
                                      uint32_t c0)
{
    (void)p;
    (void)h;
    (void)n;
    (void)c0;
    return 0;
}
gboolean sv_memtier_prefix_pool_contains(const sv_memtier_prefix_pool *p, uint64_t key)
{
    (void)p;
    (void)key;
    return FALSE;
}
gboolean sv_memtier_prefix_pool_touch(sv_memtier_prefix_pool *p, uint64_t key)
{
    (void)p;
    (void)key;
    return FALSE;
}
gboolean sv_memtier_prefix_pool_insert(sv_memtier_prefix_pool *p, uint64_t key,
                                       void (*evicted)(void *, uint64_t), void *ctx)
{
    (void)p;
    (void)key;
    (void)evicted;
    (void)ctx;
    return FALSE;
}
uint64_t sv_memtier_prefix_pool_shrink(sv_memtier_prefix_pool *p, uint64_t bytes)
{
    (void)p;
    (void)bytes;
    return 0;
}
uint32_t sv_memtier_prefix_pool_order(const sv_memtier_prefix_pool *p, uint64_t *keys, uint32_t max)
{
    (void)p;
    (void)keys;
    (void)max;
    return 0;
}

sv_memtier_hier *sv_memtier_hier_new(const struct sv_memtier_hier_cfg *cfg, GError **error)
{
    (void)cfg;
    stub_error(error);
    return NULL;
}
void sv_memtier_hier_free(sv_memtier_hier *h)
{
    (void)h;
}
gboolean sv_memtier_hier_add_pool(sv_memtier_hier *h, sv_memtier_prefix_pool *p,
                                  const struct sv_memtier_loc *loc, GError **error)
{
    (void)h;
    (void)p;
    (void)loc;
    return stub_error(error);
}
gboolean sv_memtier_hier_add_cluster_pool(sv_memtier_hier *h, sv_memtier_prefix_pool **pools,
                                          const struct sv_memtier_loc *locs, int32_t n,
                                          GError **error)
{
    (void)h;
    (void)pools;
    (void)locs;
    (void)n;
    return stub_error(error);
}
int32_t sv_memtier_hier_num_pools(const sv_memtier_hier *h)
{
    (void)h;
    return 0;
}
uint64_t sv_memtier_hier_match(sv_memtier_hier *h, const uint64_t *fine, uint32_t n_fine,
                               uint64_t npu_tokens, uint64_t num_tokens, struct sv_memtier_hit *out)
{
    (void)h;
    (void)fine;
    (void)n_fine;
    (void)num_tokens;
    memset(out, 0, sizeof *out);
    return npu_tokens;
}
void sv_memtier_hier_chunk_done(sv_memtier_hier *h, uint64_t key, int32_t npu)
{
    (void)h;
    (void)key;
    (void)npu;
}
void sv_memtier_hier_npu_evicted(sv_memtier_hier *h, uint64_t key, int32_t npu)
{
    (void)h;
    (void)key;
    (void)npu;
}
uint32_t sv_memtier_hier_writes_in_flight(const sv_memtier_hier *h)
{
    (void)h;
    return 0;
}

void sv_memtier_kv_manager_set_evict_hook(sv_memtier_kv_manager *mgr, sv_memtier_kv_evict_hook fn,
                                          void *ctx)
{
    (void)mgr;
    (void)fn;
    (void)ctx;
}
uint32_t sv_memtier_kv_manager_swap_out_seq(sv_memtier_kv_manager *mgr, sv_memtier_kv_seq *seq)
{
    (void)mgr;
    (void)seq;
    return 0;
}
gboolean sv_memtier_kv_manager_swap_in(sv_memtier_kv_manager *mgr, sv_memtier_kv_seq *seq,
                                       uint64_t num_tokens)
{
    (void)mgr;
    (void)seq;
    (void)num_tokens;
    return FALSE;
}
const uint64_t *sv_memtier_kv_seq_hashes(const sv_memtier_kv_seq *seq, uint32_t *n)
{
    (void)seq;
    *n = 0;
    return NULL;
}
