/* Paged KV block manager with prefix caching: vLLM v1's BlockPool / FreeKVCacheBlockQueue /
 * KVCacheManager semantics as LLMServingSim ports them (serving/core/block_pool.py,
 * serving/core/kv_cache_manager.py). See memtier.h for the contract, docs/kvcache.md for the
 * reasoning. */
#include "memory-tier/memtier_internal.h"

#include "core/core.h"

#include <math.h>
#include <string.h>

GQuark sv_memtier_kv_error_quark(void)
{
    return g_quark_from_static_string("servesim-kv-error-quark");
}

/* 12 bytes, so that the per-block work of a step (pop, pin, unpin) touches one cache line:
 * with tens of thousands of blocks per instance and the free queue visiting them in an order
 * unrelated to their ids, that line is a cache miss, and it dominated large runs
 * (docs/outputs.md, scaling). The hash, read only for blocks that have one, lives apart. */
typedef struct {
    uint32_t pos;     /* built-in lru: the block's slot in the queue ring while queued */
    uint32_t ref;     /* sequences holding the block */
    uint8_t queued;   /* in the free queue */
    uint8_t has_hash; /* hashes[id] is valid */
    uint8_t owner;    /* owns the index entry of hashes[id] (== index lookup gives this block) */
    uint8_t pad;
} kv_block;

struct sv_memtier_kv_manager {
    uint32_t num_blocks;
    uint32_t block_size;
    int bs_shift; /* log2(block_size) when it is a power of two (always, in practice), else -1:
                     token -> block conversions run per request and step, a division each */
    gboolean caching;
    kv_block *blocks;
    /* hashes[id] is valid when blocks[id].has_hash; while the block owns an index entry it is
     * the entry's key (the table points at it), so it never changes then. */
    uint64_t *hashes;
    /* The free queue is the eviction policy's (default lru: vLLM's FreeKVCacheBlockQueue, whose
     * O(1) removal from the middle touch() needs); the manager keeps the count. The lru policy
     * is built in (builtin_lru; evict_state NULL; see "free queue" below). */
    const struct sv_memtier_kv_evict_ops *evict;
    void *evict_state;
    gboolean builtin_lru;
    sv_memtier__lru lru; /* built-in lru: the ring, slots in blocks[].pos */
    uint32_t num_free;
    /* hash -> owning block. Keys point at the owner's hashes[] entry. Only looked up, never
     * iterated, so its order cannot influence the simulation. One block per hash: a block
     * indexed later under an existing hash takes the entry over (LLMServingSim's
     * cached_block_hash_to_block; vLLM keeps all of them because its worker needs stable ids). */
    GHashTable *index;
    uint32_t cached_free; /* owners with ref == 0 */
    uint32_t live_seqs;
    struct sv_memtier_kv_stats stats;
    /* Tiers (sv_memtier_kv_manager_set_evict_hook): told when an index entry is dropped, with
     * the block's index in its chain (chain_idx[id], kept only while a hook is set). */
    sv_memtier_kv_evict_hook evict_hook;
    void *evict_hook_ctx;
    uint32_t *chain_idx;
};

/* What every step of a running request reads comes first (within 48 bytes). */
struct sv_memtier_kv_seq {
    sv_memtier_kv_manager *mgr;
    uint32_t *table; /* block ids in sequence order */
    uint32_t num_blocks;
    uint32_t cap_blocks;
    uint32_t num_hashes;
    uint32_t num_hits;
    uint32_t num_cached; /* table[0 .. num_cached) are indexed */
    gboolean admitted;   /* holds an allocation since the last free/preempt */
    gboolean stats_counted;
    uint64_t prompt_tokens;
    uint64_t *hashes; /* chained key of each full block that has one */
    uint32_t *hits;   /* blocks found by the last get_computed_blocks (capacity num_hashes) */
};

/* ---- capacity ---------------------------------------------------------------------------- */

uint64_t sv_memtier_kv_blocks_from_bytes(uint64_t kv_bytes, uint64_t kv_bytes_per_token,
                                         uint32_t block_size)
{
    uint64_t per_block = kv_bytes_per_token * (uint64_t)block_size;
    SV_ASSERT(per_block > 0);
    return kv_bytes / per_block;
}

gboolean sv_memtier_kv_capacity_blocks(uint64_t mem_bytes, double mem_util, uint64_t weight_bytes,
                                       uint64_t kv_bytes_per_token, uint32_t block_size,
                                       uint64_t *num_blocks, GError **error)
{
    SV_ASSERT(kv_bytes_per_token > 0 && block_size > 0);
    /* int(npu_mem * gpu_memory_utilization) in memory_model.py: a double product, truncated. */
    double requested_d = floor((double)mem_bytes * mem_util);
    uint64_t requested = requested_d <= 0 ? 0 : (uint64_t)requested_d;
    uint64_t per_block = kv_bytes_per_token * (uint64_t)block_size;
    if (requested < weight_bytes || requested - weight_bytes < per_block) {
        g_set_error(error, SV_MEMTIER_KV_ERROR, SV_MEMTIER_KV_ERROR_CAPACITY,
                    "kv cache: mem_util %g of %" G_GUINT64_FORMAT " bytes minus %" G_GUINT64_FORMAT
                    " bytes of weights leaves less than one %u-token block (%" G_GUINT64_FORMAT
                    " bytes)",
                    mem_util, mem_bytes, weight_bytes, block_size, per_block);
        return FALSE;
    }
    *num_blocks = (requested - weight_bytes) / per_block;
    return TRUE;
}

/* ---- hashing ----------------------------------------------------------------------------- */

/* FNV-1a then SplitMix64's finalizer (core.h's sv_hash_*): FNV's low bits mix poorly, and the
 * chain feeds each hash back as the next parent. */
uint64_t sv_memtier_kv_hash_tokens(uint64_t parent, const uint32_t *tokens, size_t n)
{
    uint64_t h = sv_hash_fnv1a(SV_HASH_FNV_OFFSET, parent, 8);
    for (size_t i = 0; i < n; i++)
        h = sv_hash_fnv1a(h, tokens[i], 4);
    return sv_hash_mix64(h);
}

/* A block keyed by Mooncake hash ids: the offset of the block inside the first hash block it
 * overlaps, then the ids of every hash block it overlaps. A domain byte keeps these keys apart
 * from token keys. */
static uint64_t hash_ids_link(uint64_t parent, uint64_t offset, const uint64_t *ids, size_t n)
{
    uint64_t h = sv_hash_fnv1a(SV_HASH_FNV_OFFSET, parent, 8);
    h = sv_hash_fnv1a(h, 0x4du, 1);
    h = sv_hash_fnv1a(h, offset, 8);
    for (size_t i = 0; i < n; i++)
        h = sv_hash_fnv1a(h, ids[i], 8);
    return sv_hash_mix64(h);
}

/* ---- free queue --------------------------------------------------------------------------
 * The built-in lru is evict.c's ring (memtier_internal.h), run inline with each block's ring
 * slot in its record (kv_block.pos, the cache line the step touches anyway); any other policy
 * through its callbacks. */

/* Ring slots ahead whose block records a pop prefetches (~100 ns of memory latency over the
 * ~10 ns of work per block). */
#define QUEUE_PREFETCH 8

static inline void prefetch_ahead(const sv_memtier_kv_manager *mgr, uint32_t k)
{
    uint32_t ahead = sv_memtier__lru_ahead(&mgr->lru, k);
    if (ahead < mgr->num_blocks) /* not a hole, nor a stale slot past the tail */
        __builtin_prefetch(&mgr->blocks[ahead], 1);
}

static void queue_append(sv_memtier_kv_manager *mgr, uint32_t id)
{
    kv_block *b = &mgr->blocks[id];
    SV_ASSERT(!b->queued);
    b->queued = TRUE;
    if (mgr->builtin_lru)
        sv_memtier__lru_push(&mgr->lru, id);
    else
        mgr->evict->push(mgr->evict_state, id);
    mgr->num_free++;
}

static void queue_remove(sv_memtier_kv_manager *mgr, uint32_t id)
{
    kv_block *b = &mgr->blocks[id];
    SV_ASSERT(b->queued);
    b->queued = FALSE;
    if (mgr->builtin_lru)
        sv_memtier__lru_remove(&mgr->lru, id);
    else
        mgr->evict->remove(mgr->evict_state, id);
    mgr->num_free--;
}

static uint32_t queue_popleft(sv_memtier_kv_manager *mgr)
{
    SV_ASSERT(mgr->num_free > 0);
    uint32_t id;
    if (mgr->builtin_lru) {
        id = sv_memtier__lru_pop(&mgr->lru);
        prefetch_ahead(mgr, QUEUE_PREFETCH);
    } else {
        id = mgr->evict->pop(mgr->evict_state);
    }
    /* A policy that hands out a block that is not free would corrupt the pool. */
    SV_ASSERT(id < mgr->num_blocks && mgr->blocks[id].queued);
    mgr->blocks[id].queued = FALSE;
    mgr->num_free--;
    return id;
}

static uint32_t queue_order(const sv_memtier_kv_manager *mgr, uint32_t *ids, uint32_t max)
{
    if (mgr->builtin_lru)
        return sv_memtier__lru_order(&mgr->lru, ids, max);
    return mgr->evict->order ? mgr->evict->order(mgr->evict_state, ids, max) : 0;
}

/* ---- index ------------------------------------------------------------------------------- */

static kv_block *index_get(const sv_memtier_kv_manager *mgr, uint64_t hash)
{
    return g_hash_table_lookup(mgr->index, &hash);
}

static gboolean is_owner(const sv_memtier_kv_manager *mgr, const kv_block *b)
{
    return b->owner; /* kept in step with the index by get_new_blocks and cache_blocks */
}

/* ---- manager ----------------------------------------------------------------------------- */

sv_memtier_kv_manager *sv_memtier_kv_manager_new_with_eviction(
    uint32_t num_blocks, uint32_t block_size_tokens, gboolean enable_prefix_caching,
    const struct sv_memtier_kv_evict_ops *ops, const char *param, GError **error)
{
    SV_ASSERT(num_blocks > 0 && num_blocks < (uint32_t)INT32_MAX && block_size_tokens > 0);
    if (!ops)
        ops = sv_memtier_kv_evict_lru();
    /* The policy validates its parameter; the built-in lru's own state is then not needed. */
    void *state = ops->create(num_blocks, param, error);
    if (!state)
        return NULL;
    gboolean builtin_lru = ops == sv_memtier_kv_evict_lru();
    if (builtin_lru) {
        ops->destroy(state);
        state = NULL;
    }
    sv_memtier_kv_manager *mgr = g_new0(sv_memtier_kv_manager, 1);
    mgr->num_blocks = num_blocks;
    mgr->block_size = block_size_tokens;
    mgr->bs_shift = -1;
    if ((block_size_tokens & (block_size_tokens - 1)) == 0)
        mgr->bs_shift = g_bit_nth_lsf(block_size_tokens, -1);
    mgr->caching = enable_prefix_caching;
    mgr->blocks = g_new0(kv_block, num_blocks);
    mgr->hashes = g_new0(uint64_t, num_blocks);
    mgr->evict = ops;
    mgr->evict_state = state;
    mgr->builtin_lru = builtin_lru;
    if (builtin_lru)
        sv_memtier__lru_init(&mgr->lru, num_blocks, &mgr->blocks[0].pos, sizeof(kv_block));
    /* Initially in block-id order (vLLM's FreeKVCacheBlockQueue constructor). */
    for (uint32_t i = 0; i < num_blocks; i++)
        queue_append(mgr, i);
    mgr->index = g_hash_table_new(g_int64_hash, g_int64_equal);
    return mgr;
}

sv_memtier_kv_manager *sv_memtier_kv_manager_new(uint32_t num_blocks, uint32_t block_size_tokens,
                                                 gboolean enable_prefix_caching)
{
    sv_memtier_kv_manager *mgr = sv_memtier_kv_manager_new_with_eviction(
        num_blocks, block_size_tokens, enable_prefix_caching, NULL, NULL, NULL);
    SV_ASSERT(mgr); /* lru takes no parameter and cannot fail */
    return mgr;
}

void sv_memtier_kv_manager_free(sv_memtier_kv_manager *mgr)
{
    if (!mgr)
        return;
    SV_ASSERT(mgr->live_seqs == 0);
    g_hash_table_destroy(mgr->index);
    if (mgr->evict_state)
        mgr->evict->destroy(mgr->evict_state);
    g_free(mgr->blocks);
    g_free(mgr->hashes);
    g_free(mgr->chain_idx);
    sv_memtier__lru_clear(&mgr->lru);
    g_free(mgr);
}

uint32_t sv_memtier_kv_manager_num_blocks(const sv_memtier_kv_manager *mgr)
{
    return mgr->num_blocks;
}

uint32_t sv_memtier_kv_manager_block_size(const sv_memtier_kv_manager *mgr)
{
    return mgr->block_size;
}

gboolean sv_memtier_kv_manager_caching_enabled(const sv_memtier_kv_manager *mgr)
{
    return mgr->caching;
}

uint32_t sv_memtier_kv_manager_num_free_blocks(const sv_memtier_kv_manager *mgr)
{
    return mgr->num_free;
}

uint32_t sv_memtier_kv_manager_num_used_blocks(const sv_memtier_kv_manager *mgr)
{
    return mgr->num_blocks - mgr->num_free;
}

double sv_memtier_kv_manager_usage(const sv_memtier_kv_manager *mgr)
{
    return (double)(mgr->num_blocks - mgr->num_free) / (double)mgr->num_blocks;
}

uint32_t sv_memtier_kv_manager_num_cached_blocks(const sv_memtier_kv_manager *mgr)
{
    return g_hash_table_size(mgr->index);
}

uint32_t sv_memtier_kv_manager_num_cached_free_blocks(const sv_memtier_kv_manager *mgr)
{
    return mgr->cached_free;
}

uint32_t sv_memtier_kv_manager_free_queue(const sv_memtier_kv_manager *mgr, uint32_t *ids,
                                          uint32_t max)
{
    return queue_order(mgr, ids, max);
}

uint32_t sv_memtier_kv_manager_block_ref(const sv_memtier_kv_manager *mgr, uint32_t id)
{
    SV_ASSERT(id < mgr->num_blocks);
    return mgr->blocks[id].ref;
}

gboolean sv_memtier_kv_manager_lookup(const sv_memtier_kv_manager *mgr, uint64_t hash, uint32_t *id)
{
    kv_block *b = index_get(mgr, hash);
    if (!b)
        return FALSE;
    if (id)
        *id = (uint32_t)(b - mgr->blocks);
    return TRUE;
}

void sv_memtier_kv_manager_get_stats(const sv_memtier_kv_manager *mgr,
                                     struct sv_memtier_kv_stats *stats)
{
    *stats = mgr->stats;
}

double sv_memtier_kv_manager_hit_rate(const sv_memtier_kv_manager *mgr)
{
    if (mgr->stats.requested_tokens == 0)
        return 0.0;
    return (double)mgr->stats.hit_tokens / (double)mgr->stats.requested_tokens;
}

/* ---- block pool operations --------------------------------------------------------------- */

/* Pop `n` blocks from the head and pin them. Eviction happens here and nowhere else: a popped
 * block that owns an index entry loses it (BlockPool.get_new_blocks). The caller has checked
 * that n blocks are free. */
static void get_new_blocks(sv_memtier_kv_manager *mgr, sv_memtier_kv_seq *seq, uint32_t n)
{
    SV_ASSERT(n <= mgr->num_free);
    if (mgr->builtin_lru) {
        /* A prompt takes dozens at once: start all their (cold) records loading together. */
        for (uint32_t k = 0; k < MIN(n, (uint32_t)QUEUE_PREFETCH); k++)
            prefetch_ahead(mgr, k);
    }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t id = queue_popleft(mgr);
        kv_block *b = &mgr->blocks[id];
        SV_ASSERT(b->ref == 0);
        if (b->has_hash) {
            if (is_owner(mgr, b)) {
                g_hash_table_remove(mgr->index, &mgr->hashes[id]);
                b->owner = FALSE;
                mgr->cached_free--;
                mgr->stats.evictions++;
                if (mgr->evict_hook != NULL)
                    mgr->evict_hook(mgr->evict_hook_ctx, mgr->hashes[id], mgr->chain_idx[id]);
            }
            b->has_hash = FALSE;
        }
        b->ref = 1;
        seq->table[seq->num_blocks++] = id;
    }
}

/* Pin blocks found by a lookup; one sitting in the free queue leaves it (BlockPool.touch). */
static void touch(sv_memtier_kv_manager *mgr, const uint32_t *ids, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++) {
        kv_block *b = &mgr->blocks[ids[k]];
        if (b->ref == 0) {
            queue_remove(mgr, ids[k]);
            if (is_owner(mgr, b))
                mgr->cached_free--;
        }
        b->ref++;
    }
}

/* Blocks ahead that release() prefetches: enough to cover a memory latency (~100 ns) with the
 * ~10 ns of work per block. */
#define RELEASE_PREFETCH 8

/* Unpin the sequence's blocks in reverse order, so the tail is queued (and evicted) first
 * (KVCacheManager.free). Returns how many reached ref 0. */
static uint32_t release(sv_memtier_kv_manager *mgr, sv_memtier_kv_seq *seq)
{
    uint32_t freed = 0;
    for (uint32_t k = seq->num_blocks; k-- > 0;) {
        /* The records are cold and the ids known: fetch a few ahead. */
        if (k >= RELEASE_PREFETCH)
            __builtin_prefetch(&mgr->blocks[seq->table[k - RELEASE_PREFETCH]], 1);
        kv_block *b = &mgr->blocks[seq->table[k]];
        SV_ASSERT(b->ref > 0);
        if (--b->ref == 0) {
            queue_append(mgr, seq->table[k]);
            if (is_owner(mgr, b))
                mgr->cached_free++;
            freed++;
        }
    }
    seq->num_blocks = 0;
    seq->num_cached = 0;
    seq->num_hits = 0;
    seq->admitted = FALSE;
    return freed;
}

static void ensure_table(sv_memtier_kv_seq *seq, uint32_t need)
{
    if (need <= seq->cap_blocks)
        return;
    uint32_t cap = seq->cap_blocks ? seq->cap_blocks : 8;
    while (cap < need)
        cap = cap > UINT32_MAX / 2 ? need : cap * 2;
    seq->table = g_renew(uint32_t, seq->table, cap);
    seq->cap_blocks = cap;
}

static uint64_t cdiv(uint64_t a, uint64_t b)
{
    return (a + b - 1) / b;
}

/* Whole blocks in `tokens` tokens. */
static uint64_t full_blocks(const sv_memtier_kv_manager *mgr, uint64_t tokens)
{
    return mgr->bs_shift >= 0 ? tokens >> mgr->bs_shift : tokens / mgr->block_size;
}

/* Blocks that hold `tokens` tokens. */
static uint64_t blocks_for(const sv_memtier_kv_manager *mgr, uint64_t tokens)
{
    return full_blocks(mgr, tokens + mgr->block_size - 1);
}

/* ---- sequences --------------------------------------------------------------------------- */

sv_memtier_kv_seq *sv_memtier_kv_seq_new(sv_memtier_kv_manager *mgr,
                                         const struct sv_memtier_kv_seq_cfg *cfg, GError **error)
{
    const uint64_t bs = mgr->block_size;
    uint64_t *hashes = NULL;
    uint32_t nh = 0;

    if (cfg->num_prompt_ids > 0) {
        SV_ASSERT(cfg->prompt_ids != NULL);
        SV_ASSERT(cfg->num_output_ids == 0 || cfg->output_ids != NULL);
        /* input_tok_ids + output_tok_ids, full blocks only (request_block_hashes). */
        uint64_t total = (uint64_t)cfg->num_prompt_ids + cfg->num_output_ids;
        uint64_t nfull = total / bs;
        if (nfull > UINT32_MAX) {
            g_set_error(error, SV_MEMTIER_KV_ERROR, SV_MEMTIER_KV_ERROR_INPUT,
                        "kv sequence: %" G_GUINT64_FORMAT " token ids exceed the block table",
                        total);
            return NULL;
        }
        nh = (uint32_t)nfull;
        hashes = g_new(uint64_t, nh ? nh : 1);
        /* One block's ids may straddle the prompt/output boundary: gather them in a small
         * buffer instead of concatenating the whole sequence. */
        uint32_t *buf = g_new(uint32_t, bs);
        uint64_t parent = SV_MEMTIER_KV_HASH_SEED;
        for (uint32_t i = 0; i < nh; i++) {
            for (uint64_t t = 0; t < bs; t++) {
                uint64_t pos = (uint64_t)i * bs + t;
                buf[t] = pos < cfg->num_prompt_ids ? cfg->prompt_ids[pos]
                                                   : cfg->output_ids[pos - cfg->num_prompt_ids];
            }
            parent = sv_memtier_kv_hash_tokens(parent, buf, bs);
            hashes[i] = parent;
        }
        g_free(buf);
    } else if (cfg->num_hash_ids > 0) {
        SV_ASSERT(cfg->hash_ids != NULL);
        uint64_t m =
            cfg->hash_block_tokens ? cfg->hash_block_tokens : SV_MEMTIER_KV_MOONCAKE_BLOCK_TOKENS;
        if (cfg->prompt_tokens == 0) {
            g_set_error(error, SV_MEMTIER_KV_ERROR, SV_MEMTIER_KV_ERROR_INPUT,
                        "kv sequence: hash_ids given without a prompt length");
            return NULL;
        }
        /* Keys exist for the full blocks of the prompt that the hash ids cover. */
        uint64_t covered = MIN(cfg->prompt_tokens, (uint64_t)cfg->num_hash_ids * m);
        uint64_t nfull = covered / bs;
        if (nfull > UINT32_MAX) {
            g_set_error(error, SV_MEMTIER_KV_ERROR, SV_MEMTIER_KV_ERROR_INPUT,
                        "kv sequence: %" G_GUINT64_FORMAT " prompt tokens exceed the block table",
                        covered);
            return NULL;
        }
        nh = (uint32_t)nfull;
        hashes = g_new(uint64_t, nh ? nh : 1);
        uint64_t parent = SV_MEMTIER_KV_HASH_SEED;
        for (uint32_t i = 0; i < nh; i++) {
            uint64_t first = (uint64_t)i * bs, last = first + bs - 1;
            uint64_t j0 = first / m, j1 = last / m;
            SV_ASSERT(j1 < cfg->num_hash_ids);
            parent = hash_ids_link(parent, first - j0 * m, cfg->hash_ids + j0, j1 - j0 + 1);
            hashes[i] = parent;
        }
    }

    sv_memtier_kv_seq *seq = g_new0(sv_memtier_kv_seq, 1);
    seq->mgr = mgr;
    seq->prompt_tokens = cfg->prompt_tokens;
    seq->hashes = hashes;
    seq->num_hashes = nh;
    seq->hits = nh ? g_new(uint32_t, nh) : NULL;
    ensure_table(seq, (uint32_t)MIN(cdiv(cfg->prompt_tokens + 1, bs), (uint64_t)1 << 20));
    mgr->live_seqs++;
    return seq;
}

void sv_memtier_kv_seq_free(sv_memtier_kv_seq *seq)
{
    if (!seq)
        return;
    release(seq->mgr, seq);
    seq->mgr->live_seqs--;
    g_free(seq->hashes);
    g_free(seq->hits);
    g_free(seq->table);
    g_free(seq);
}

uint32_t sv_memtier_kv_seq_num_blocks(const sv_memtier_kv_seq *seq)
{
    return seq->num_blocks;
}

const uint32_t *sv_memtier_kv_seq_block_ids(const sv_memtier_kv_seq *seq)
{
    return seq->table;
}

uint32_t sv_memtier_kv_seq_num_hashes(const sv_memtier_kv_seq *seq)
{
    return seq->num_hashes;
}

uint64_t sv_memtier_kv_seq_block_hash(const sv_memtier_kv_seq *seq, uint32_t i)
{
    SV_ASSERT(i < seq->num_hashes);
    return seq->hashes[i];
}

uint32_t sv_memtier_kv_seq_num_cached(const sv_memtier_kv_seq *seq)
{
    return seq->num_cached;
}

/* ---- scheduler-facing operations --------------------------------------------------------- */

uint64_t sv_memtier_kv_manager_get_computed_blocks(sv_memtier_kv_manager *mgr,
                                                   sv_memtier_kv_seq *seq, uint64_t num_tokens)
{
    SV_ASSERT(seq->mgr == mgr);
    seq->num_hits = 0;
    if (!mgr->caching)
        return 0;
    mgr->stats.queries++;
    mgr->stats.query_tokens += num_tokens;
    if (seq->num_hashes == 0 || num_tokens == 0)
        return 0;
    /* At least the last token is recomputed (it produces the logits): cap at num_tokens - 1,
     * floored to whole blocks. */
    uint64_t max_blocks = MIN(full_blocks(mgr, num_tokens - 1), (uint64_t)seq->num_hashes);
    for (uint64_t i = 0; i < max_blocks; i++) {
        kv_block *b = index_get(mgr, seq->hashes[i]);
        if (!b)
            break; /* the chain is cumulative: nothing after a miss can be a prefix hit */
        seq->hits[seq->num_hits++] = (uint32_t)(b - mgr->blocks);
    }
    uint64_t hit = (uint64_t)seq->num_hits * mgr->block_size;
    mgr->stats.query_hit_tokens += hit;
    return hit;
}

/* Blocks the free queue must give up for the sequence to hold `num_tokens` tokens, with
 * `num_hits` remembered hit blocks (single_type_kv_cache_manager.get_num_blocks_to_allocate). */
static uint64_t blocks_to_allocate(const sv_memtier_kv_manager *mgr, const sv_memtier_kv_seq *seq,
                                   uint64_t num_tokens, uint32_t num_hits)
{
    uint64_t required = blocks_for(mgr, num_tokens);
    uint64_t known = (uint64_t)seq->num_blocks + num_hits;
    uint64_t n = required > known ? required - known : 0;
    /* A hit block sitting in the free queue leaves it when touched: it consumes free capacity
     * as much as a new block does. */
    for (uint32_t k = 0; k < num_hits; k++)
        if (mgr->blocks[seq->hits[k]].ref == 0)
            n++;
    return n;
}

static uint32_t hits_for(const sv_memtier_kv_manager *mgr, const sv_memtier_kv_seq *seq,
                         uint64_t num_new_computed_tokens)
{
    if (num_new_computed_tokens == 0)
        return 0;
    /* The hit must be the one the last lookup found, and nothing may have evicted it since. */
    SV_ASSERT(num_new_computed_tokens == (uint64_t)seq->num_hits * mgr->block_size);
    SV_ASSERT(!seq->admitted);
    for (uint32_t k = 0; k < seq->num_hits; k++)
        SV_ASSERT(index_get(mgr, seq->hashes[k]) == &mgr->blocks[seq->hits[k]]);
    return seq->num_hits;
}

gboolean sv_memtier_kv_manager_can_fit_full_sequence(const sv_memtier_kv_manager *mgr,
                                                     const sv_memtier_kv_seq *seq,
                                                     uint64_t num_computed_tokens,
                                                     uint64_t num_new_computed_tokens,
                                                     uint64_t num_tokens)
{
    SV_ASSERT(seq->mgr == mgr);
    uint32_t nh = hits_for(mgr, seq, num_new_computed_tokens);
    uint64_t total = num_computed_tokens + num_new_computed_tokens;
    uint64_t full = MAX(num_tokens, total);
    return blocks_to_allocate(mgr, seq, full, nh) <= mgr->num_free;
}

gboolean sv_memtier_kv_manager_allocate_slots(sv_memtier_kv_manager *mgr, sv_memtier_kv_seq *seq,
                                              uint64_t num_computed_tokens, uint64_t num_new_tokens,
                                              uint64_t num_new_computed_tokens, uint64_t num_tokens)
{
    SV_ASSERT(seq->mgr == mgr);
    uint32_t nh = hits_for(mgr, seq, num_new_computed_tokens);
    uint64_t total_computed = num_computed_tokens + num_new_computed_tokens;
    uint64_t need_tokens = total_computed + num_new_tokens;
    if (blocks_to_allocate(mgr, seq, need_tokens, nh) > mgr->num_free)
        return FALSE; /* nothing mutated: the caller preempts or stops admitting */

    /* Past this point the allocation succeeds. */
    uint64_t required = blocks_for(mgr, need_tokens);
    SV_ASSERT(required <= UINT32_MAX);
    ensure_table(seq, (uint32_t)MAX(required, (uint64_t)seq->num_blocks + nh));
    if (nh > 0) {
        touch(mgr, seq->hits, nh);
        memcpy(seq->table + seq->num_blocks, seq->hits, nh * sizeof(uint32_t));
        seq->num_blocks += nh;
        seq->num_cached = seq->num_blocks;
    }
    seq->num_hits = 0;
    if (required > seq->num_blocks)
        get_new_blocks(mgr, seq, (uint32_t)(required - seq->num_blocks));
    seq->admitted = TRUE;

    if (mgr->caching && !seq->stats_counted) {
        /* Once per request, at its first admission (record_prefix_stats). */
        mgr->stats.requests++;
        mgr->stats.requested_tokens += seq->prompt_tokens;
        mgr->stats.hit_tokens += num_new_computed_tokens;
        seq->stats_counted = TRUE;
    }
    /* vLLM indexes at allocation, capped at the reached length: only known tokens. */
    sv_memtier_kv_manager_cache_blocks(mgr, seq, MIN(need_tokens, num_tokens));
    return TRUE;
}

void sv_memtier_kv_manager_cache_blocks(sv_memtier_kv_manager *mgr, sv_memtier_kv_seq *seq,
                                        uint64_t num_tokens)
{
    SV_ASSERT(seq->mgr == mgr);
    if (!mgr->caching || seq->num_hashes == 0)
        return;
    uint64_t num_full = MIN(full_blocks(mgr, num_tokens), (uint64_t)seq->num_hashes);
    if (seq->num_cached >= num_full)
        return;
    SV_ASSERT(num_full <= seq->num_blocks);
    for (uint32_t i = seq->num_cached; i < num_full; i++) {
        kv_block *b = &mgr->blocks[seq->table[i]];
        if (b->has_hash)
            continue; /* already indexed (a hit block): LLMServingSim skips it too */
        kv_block *old = index_get(mgr, seq->hashes[i]);
        if (old) {
            old->owner = FALSE;
            if (old->ref == 0)
                mgr->cached_free--; /* the old owner stays queued but is plain free data now */
        }
        uint32_t id = seq->table[i];
        mgr->hashes[id] = seq->hashes[i];
        if (mgr->chain_idx != NULL)
            mgr->chain_idx[id] = i;
        b->has_hash = TRUE;
        b->owner = TRUE;
        /* replace, not insert: the key must point at the new owner's field. */
        g_hash_table_replace(mgr->index, &mgr->hashes[id], b);
    }
    seq->num_cached = (uint32_t)num_full;
}

void sv_memtier_kv_manager_free_seq(sv_memtier_kv_manager *mgr, sv_memtier_kv_seq *seq)
{
    SV_ASSERT(seq->mgr == mgr);
    release(mgr, seq);
}

void sv_memtier_kv_manager_preempt_seq(sv_memtier_kv_manager *mgr, sv_memtier_kv_seq *seq)
{
    SV_ASSERT(seq->mgr == mgr);
    mgr->stats.preemptions++;
    mgr->stats.preempted_blocks += release(mgr, seq);
}

/* ---- tier hooks -------------------------------------------------------------------------- */

void sv_memtier_kv_manager_set_evict_hook(sv_memtier_kv_manager *mgr, sv_memtier_kv_evict_hook fn,
                                          void *ctx)
{
    /* Set before any block is indexed: chain indices are recorded from then on. */
    SV_ASSERT(g_hash_table_size(mgr->index) == 0);
    mgr->evict_hook = fn;
    mgr->evict_hook_ctx = ctx;
    if (fn != NULL && mgr->chain_idx == NULL)
        mgr->chain_idx = g_new0(uint32_t, mgr->num_blocks);
}

uint32_t sv_memtier_kv_manager_swap_out_seq(sv_memtier_kv_manager *mgr, sv_memtier_kv_seq *seq)
{
    SV_ASSERT(seq->mgr == mgr && seq->admitted);
    /* Only full blocks are ever indexed, so the partial tail leaves nothing findable; the full
     * ones keep their entries (cached free data, as after a preemption). */
    uint32_t held = seq->num_blocks;
    mgr->stats.swap_outs++;
    mgr->stats.swapped_out_blocks += held;
    release(mgr, seq);
    return held;
}

gboolean sv_memtier_kv_manager_swap_in(sv_memtier_kv_manager *mgr, sv_memtier_kv_seq *seq,
                                       uint64_t num_tokens)
{
    SV_ASSERT(seq->mgr == mgr && !seq->admitted && seq->num_blocks == 0);
    uint64_t need = blocks_for(mgr, num_tokens);
    if (need > mgr->num_free)
        return FALSE;
    SV_ASSERT(need <= UINT32_MAX);
    ensure_table(seq, (uint32_t)need);
    seq->num_hits = 0;
    if (need > 0)
        get_new_blocks(mgr, seq, (uint32_t)need);
    seq->admitted = TRUE;
    mgr->stats.swap_ins++;
    mgr->stats.swapped_in_blocks += need;
    sv_memtier_kv_manager_cache_blocks(mgr, seq, num_tokens);
    return TRUE;
}

const uint64_t *sv_memtier_kv_seq_hashes(const sv_memtier_kv_seq *seq, uint32_t *n)
{
    *n = seq->num_hashes;
    return seq->hashes;
}
