/* The prefix hierarchy of one instance: its ordered lower-tier pools (host DRAM, CXL, SSD, or
 * the cluster pool), looked up after the NPU's own prefix cache (docs/kvcache.md "Memory
 * tiers").
 *
 * Lookup: from the chunk holding the first token past the NPU hit, each chunk comes from the
 * first pool (in lookup order) holding it; the walk stops at the first chunk no pool holds and
 * at floor((num_tokens - 1) / chunk) chunks (the last token always runs). Only tokens beyond the
 * NPU hit are loaded (docs/memory-tiers.md decision 4).
 *
 * Writes: write-through (default) copies every chunk that becomes full on the NPU into every pool
 * not holding it (inclusive hierarchy); write-back writes a chunk into the first pool only when
 * the NPU evicts the block that ends it, and a pool's own evictions are demoted to the next pool.
 * Both are background transfers on the fabric (they contend for links, but nothing waits for
 * them); a chunk is inserted, and becomes hit-able, when its transfer completes (decision 5).
 * A chunk already in flight to a pool is not written there again. */
#include "memory-tier/memtier_internal.h"

#include <string.h>

struct pool_ent {
    sv_memtier_hier *h;
    int32_t index;                  /* in h->pools */
    int32_t n;                      /* 1, or the number of shards of a cluster pool */
    sv_memtier_prefix_pool **pools; /* n */
    struct sv_memtier_loc *locs;    /* n */
    const sv_memtier_route **loads; /* n: shard -> the hier's NPU */
    sv_u64map pending;              /* mixed key -> 1 while a write to this entry is in flight */
};

struct sv_memtier_hier {
    struct sv_memtier_hier_cfg cfg;
    uint32_t fine_per_chunk;
    GPtrArray *pools; /* struct pool_ent *, lookup order */
    uint32_t in_flight;
};

struct write {
    struct pool_ent *pe;
    uint64_t key;
    int32_t shard;
};

sv_memtier_hier *sv_memtier_hier_new(const struct sv_memtier_hier_cfg *cfg, GError **error)
{
    SV_ASSERT(cfg != NULL && cfg->fabric != NULL);
    if (cfg->npu.kind != SV_MEMTIER_HBM || cfg->chunk_tokens == 0) {
        g_set_error(error, SV_MEMTIER_ERROR, SV_MEMTIER_ERROR_CONFIG,
                    "prefix hierarchy: needs an NPU location and a chunk size");
        return NULL;
    }
    sv_memtier_hier *h = g_new0(sv_memtier_hier, 1);
    h->cfg = *cfg;
    h->pools = g_ptr_array_new();
    return h;
}

void sv_memtier_hier_free(sv_memtier_hier *h)
{
    if (h == NULL)
        return;
    for (guint i = 0; i < h->pools->len; i++) {
        struct pool_ent *pe = g_ptr_array_index(h->pools, i);
        sv_u64map_clear(&pe->pending);
        g_free(pe->pools);
        g_free(pe->locs);
        g_free(pe->loads);
        g_free(pe);
    }
    g_ptr_array_free(h->pools, TRUE);
    g_free(h);
}

int32_t sv_memtier_hier_num_pools(const sv_memtier_hier *h)
{
    return (int32_t)h->pools->len;
}

uint32_t sv_memtier_hier_writes_in_flight(const sv_memtier_hier *h)
{
    return h->in_flight;
}

static gboolean add(sv_memtier_hier *h, sv_memtier_prefix_pool **pools,
                    const struct sv_memtier_loc *locs, int32_t n, GError **error)
{
    SV_ASSERT(n >= 1);
    if (h->pools->len == 0)
        h->fine_per_chunk = sv_memtier__prefix_pool_fine_per_chunk(pools[0]);
    for (int32_t i = 0; i < n; i++) {
        if (sv_memtier_prefix_pool_chunk_tokens(pools[i]) != h->cfg.chunk_tokens ||
            sv_memtier__prefix_pool_fine_per_chunk(pools[i]) != h->fine_per_chunk) {
            g_set_error(error, SV_MEMTIER_ERROR, SV_MEMTIER_ERROR_CONFIG,
                        "prefix hierarchy: pool on %s has %u-token chunks (or another block "
                        "size), expected %u",
                        sv_memtier_tier_get_cfg(sv_memtier_prefix_pool_tier(pools[i]))->name,
                        sv_memtier_prefix_pool_chunk_tokens(pools[i]), h->cfg.chunk_tokens);
            return FALSE;
        }
    }
    struct pool_ent *pe = g_new0(struct pool_ent, 1);
    pe->h = h;
    pe->index = (int32_t)h->pools->len;
    pe->n = n;
    pe->pools = g_memdup2(pools, sizeof *pools * (size_t)n);
    pe->locs = g_memdup2(locs, sizeof *locs * (size_t)n);
    pe->loads = g_new0(const sv_memtier_route *, n);
    for (int32_t i = 0; i < n; i++) {
        pe->loads[i] = sv_memtier_fabric_route(h->cfg.fabric, &locs[i], &h->cfg.npu, error);
        if (pe->loads[i] == NULL) {
            g_free(pe->pools);
            g_free(pe->locs);
            g_free(pe->loads);
            g_free(pe);
            return FALSE;
        }
    }
    g_ptr_array_add(h->pools, pe);
    return TRUE;
}

gboolean sv_memtier_hier_add_pool(sv_memtier_hier *h, sv_memtier_prefix_pool *p,
                                  const struct sv_memtier_loc *loc, GError **error)
{
    return add(h, &p, loc, 1, error);
}

gboolean sv_memtier_hier_add_cluster_pool(sv_memtier_hier *h, sv_memtier_prefix_pool **pools,
                                          const struct sv_memtier_loc *locs, int32_t n,
                                          GError **error)
{
    return add(h, pools, locs, n, error);
}

static int32_t shard_of(const struct pool_ent *pe, uint64_t key)
{
    return pe->n == 1 ? 0 : (int32_t)(key % (uint64_t)pe->n);
}

/* The pool entry's shard holding `key` (touching it when `commit`); -1 when none. */
static int32_t holds(struct pool_ent *pe, uint64_t key, gboolean commit)
{
    int32_t s = shard_of(pe, key);
    gboolean in = commit ? sv_memtier_prefix_pool_touch(pe->pools[s], key)
                         : sv_memtier_prefix_pool_contains(pe->pools[s], key);
    return in ? s : -1;
}

/* The shard whose tier counts an entry's lookups: the one on the hierarchy's node, else 0. */
static int32_t home_shard(const sv_memtier_hier *h, const struct pool_ent *pe)
{
    for (int32_t i = 0; i < pe->n; i++)
        if (pe->locs[i].node == h->cfg.npu.node)
            return i;
    return 0;
}

/* The lookup walk; `commit`: touch the chunks found and count the statistics. */
static uint64_t walk(sv_memtier_hier *h, const uint64_t *fine, uint32_t n_fine, uint64_t npu_tokens,
                     uint64_t num_tokens, struct sv_memtier_hit *out, gboolean commit)
{
    memset(out, 0, sizeof *out);
    if (h->pools->len == 0 || num_tokens == 0)
        return npu_tokens;
    const uint64_t chunk = h->cfg.chunk_tokens;
    uint64_t max_chunks = (num_tokens - 1) / chunk;
    uint64_t end = npu_tokens;
    for (uint64_t c = npu_tokens / chunk; c < max_chunks; c++) {
        /* The chunk's key is its last fine hash, which must be within the chain. */
        uint64_t last_fine = (c + 1) * h->fine_per_chunk - 1;
        if (last_fine >= n_fine)
            break;
        uint64_t key = fine[last_fine];
        int32_t found = -1, shard = -1;
        for (guint i = 0; i < h->pools->len && found < 0; i++) {
            struct pool_ent *pe = g_ptr_array_index(h->pools, i);
            shard = holds(pe, key, commit);
            if (shard >= 0)
                found = (int32_t)i;
        }
        if (found < 0)
            break;
        struct pool_ent *pe = g_ptr_array_index(h->pools, (guint)found);
        const struct sv_memtier_loc *loc = &pe->locs[shard];
        uint64_t gain = (c + 1) * chunk - MAX(end, c * chunk);
        gboolean remote = pe->n > 1 && loc->node != h->cfg.npu.node;
        int slot = remote ? SV_MEMTIER_KIND_COUNT : (int)loc->kind;
        if (remote)
            out->remote_tokens += gain;
        else
            out->tokens[loc->kind] += gain;
        if (out->route[slot] == NULL)
            out->route[slot] = pe->loads[shard];
        /* hit statistics go to the tier that served */
        if (commit)
            sv_memtier_tier_count_lookup(sv_memtier_prefix_pool_tier(pe->pools[shard]), 0, gain, 1);
        end = (c + 1) * chunk;
    }
    if (!commit)
        return end;
    /* Every pool's tier saw the lookup of the tokens past the NPU hit. */
    uint64_t asked = max_chunks * chunk > npu_tokens ? max_chunks * chunk - npu_tokens : 0;
    for (guint i = 0; i < h->pools->len; i++) {
        struct pool_ent *pe = g_ptr_array_index(h->pools, i);
        sv_memtier_tier_count_lookup(sv_memtier_prefix_pool_tier(pe->pools[home_shard(h, pe)]),
                                     asked, 0, 0);
    }
    return end;
}

uint64_t sv_memtier_hier_match(sv_memtier_hier *h, const uint64_t *fine, uint32_t n_fine,
                               uint64_t npu_tokens, uint64_t num_tokens, struct sv_memtier_hit *out)
{
    return walk(h, fine, n_fine, npu_tokens, num_tokens, out, TRUE);
}

uint64_t sv_memtier_hier_peek(sv_memtier_hier *h, const uint64_t *fine, uint32_t n_fine,
                              uint64_t npu_tokens, uint64_t num_tokens, struct sv_memtier_hit *out)
{
    return walk(h, fine, n_fine, npu_tokens, num_tokens, out, FALSE);
}

/* ---- writes ------------------------------------------------------------------------------ */

static void write_to(struct pool_ent *pe, uint64_t key, const struct sv_memtier_loc *src);

/* A pool's own eviction, write-back mode: demote the chunk to the next pool. */
static void on_pool_evict(void *ctx, uint64_t key)
{
    struct pool_ent *pe = ctx;
    sv_memtier_hier *h = pe->h;
    if (!h->cfg.write_back || (guint)pe->index + 1 >= h->pools->len)
        return;
    struct pool_ent *next = g_ptr_array_index(h->pools, (guint)pe->index + 1);
    write_to(next, key, &pe->locs[shard_of(pe, key)]);
}

static void on_write_done(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)eng;
    (void)arg;
    struct write *w = ctx;
    struct pool_ent *pe = w->pe;
    pe->h->in_flight--;
    sv_u64map_remove(&pe->pending, sv_hash_mix64(w->key));
    sv_memtier_prefix_pool_insert(pe->pools[w->shard], w->key, on_pool_evict, pe);
    g_free(w);
}

/* Start writing chunk `key` from `src` into the pool entry (its shard), unless it is there or in
 * flight already. */
static void write_to(struct pool_ent *pe, uint64_t key, const struct sv_memtier_loc *src)
{
    int32_t s = shard_of(pe, key);
    if (sv_memtier_prefix_pool_contains(pe->pools[s], key) ||
        sv_u64map_get(&pe->pending, sv_hash_mix64(key), 0) != 0)
        return;
    sv_memtier_hier *h = pe->h;
    const sv_memtier_route *r = sv_memtier_fabric_route(h->cfg.fabric, src, &pe->locs[s], NULL);
    if (r == NULL)
        return; /* not connected (checked by the planner when it builds the hierarchy) */
    sv_u64map_put(&pe->pending, sv_hash_mix64(key), 1);
    struct write *w = g_new0(struct write, 1);
    w->pe = pe;
    w->key = key;
    w->shard = s;
    h->in_flight++;
    sv_memtier_fabric_xfer(h->cfg.fabric, r, sv_memtier_prefix_pool_chunk_bytes(pe->pools[s]),
                           on_write_done, w, 0);
}

static struct sv_memtier_loc npu_loc(const sv_memtier_hier *h, int32_t npu)
{
    struct sv_memtier_loc l = h->cfg.npu;
    l.device = npu;
    return l;
}

void sv_memtier_hier_chunk_done(sv_memtier_hier *h, uint64_t key, int32_t npu)
{
    if (h->cfg.write_back)
        return;
    struct sv_memtier_loc src = npu_loc(h, npu);
    for (guint i = 0; i < h->pools->len; i++)
        write_to(g_ptr_array_index(h->pools, i), key, &src);
}

void sv_memtier_hier_npu_evicted(sv_memtier_hier *h, uint64_t key, int32_t npu)
{
    if (!h->cfg.write_back || h->pools->len == 0)
        return;
    struct sv_memtier_loc src = npu_loc(h, npu);
    write_to(g_ptr_array_index(h->pools, 0), key, &src);
}

void sv_memtier_hier_on_kv_evict(void *hier, uint64_t hash, uint32_t chain_index)
{
    sv_memtier_hier *h = hier;
    /* Only the block that ends a chunk carries the chunk's key. */
    if (h->cfg.write_back && h->pools->len > 0 &&
        chain_index % h->fine_per_chunk == h->fine_per_chunk - 1)
        sv_memtier_hier_npu_evicted(h, hash, h->cfg.npu.device);
}
