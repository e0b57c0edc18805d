/* Memory tiers: stubs of the parts not implemented yet. */
#include "memory-tier/memtier_internal.h"

#include <string.h>

static gboolean stub_error(GError **error)
{
    g_set_error(error, SV_MEMTIER_ERROR, SV_MEMTIER_ERROR_UNSUPPORTED,
                "memory tiers: not yet implemented");
    return FALSE;
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
