/* servesim memory-tier: memory resources the DAG executor books: ASTRA-sim's remote memory (below)
 * and the paged KV block manager (further down).
 *
 * The first part holds ASTRA-sim's remote memory model (`--remote-memory-configuration MEM.json`,
 * astra-sim/astra-memory-analytical AnalyticalRemoteMemory.cc, CHAKRA_ET.md 3.5): a load or a
 * store of `tensor_size` bytes takes
 *
 *     remote-mem-latency + floor(tensor_size / remote-mem-bw)   ns
 *
 * and, depending on the memory type, requests either proceed independently (one expansion per
 * NPU) or are served one at a time, in arrival order, per node (PER_NODE_MEMORY_EXPANSION) or for
 * the whole machine (MEMORY_POOL). An "ideal" variant (servesim's own, for baselines and tests)
 * takes a fixed latency and never queues.
 *
 * Knows bytes, rates and NPU indices; nothing about DAG nodes or LLMs. */
#ifndef SV_MEMTIER_H
#define SV_MEMTIER_H

#include "core/core.h"

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

#define SV_MEMTIER_ERROR (sv_memtier_error_quark())
GQuark sv_memtier_error_quark(void);
typedef enum {
    SV_MEMTIER_ERROR_CONFIG,      /* bad configuration file or value (file and key named) */
    SV_MEMTIER_ERROR_UNSUPPORTED, /* a request the configured memory cannot serve */
} sv_memtier_error_code;

typedef enum {
    SV_MEMTIER_REMOTE_NONE,     /* "NO_MEMORY_EXPANSION": any access is an error */
    SV_MEMTIER_REMOTE_PER_NODE, /* "PER_NODE_MEMORY_EXPANSION": FIFO per node */
    SV_MEMTIER_REMOTE_PER_NPU,  /* "PER_NPU_MEMORY_EXPANSION": independent requests */
    SV_MEMTIER_REMOTE_POOL,     /* "MEMORY_POOL": one FIFO for the whole machine */
    SV_MEMTIER_REMOTE_IDEAL,    /* "IDEAL" (servesim): fixed latency, no bandwidth, no queueing */
} sv_memtier_remote_type;

/* ASTRA-sim's memory-type string for a type ("IDEAL" for the servesim variant). */
const char *sv_memtier_remote_type_name(sv_memtier_remote_type type);
/* Parse a memory-type string (exact, as ASTRA-sim compares it). */
gboolean sv_memtier_remote_type_parse(const char *name, sv_memtier_remote_type *out);

struct sv_memtier_remote_cfg {
    sv_memtier_remote_type type;
    sv_time latency_ns;       /* "remote-mem-latency" (ns), default 0 */
    uint64_t bw_bytes_per_ns; /* "remote-mem-bw" (bytes/ns = GB/s); integer as in ASTRA-sim */
    int num_nodes;            /* "num-nodes" (PER_NODE only) */
    int npus_per_node;        /* "num-npus-per-node" (PER_NODE only) */
};

/* Fill `cfg` from the members of a JSON object. `where` names the source in errors
 * ("mem.json"). "memory-type" is required; "remote-mem-bw" must be > 0 for every type that uses
 * it (ASTRA-sim divides by it); PER_NODE needs num-nodes and num-npus-per-node > 0. */
gboolean sv_memtier_remote_cfg_from_json(JsonObject *obj, const char *where,
                                         struct sv_memtier_remote_cfg *cfg, GError **error);
/* Read ASTRA-sim's remote memory JSON file. */
gboolean sv_memtier_remote_cfg_load_json(const char *path, struct sv_memtier_remote_cfg *cfg,
                                         GError **error);

typedef struct sv_memtier_remote sv_memtier_remote;

/* A remote memory for `npus` NPUs on engine `eng`. Fails when a PER_NODE configuration does not
 * cover every NPU (num-nodes x num-npus-per-node < npus). */
sv_memtier_remote *sv_memtier_remote_new(sv_engine *eng, const struct sv_memtier_remote_cfg *cfg,
                                         int npus, GError **error);
void sv_memtier_remote_free(sv_memtier_remote *mem); /* accepts NULL */

/* Service time of one request of `bytes`, without queueing: latency + floor(bytes / bw) (IDEAL:
 * latency). */
sv_time sv_memtier_remote_runtime(const sv_memtier_remote *mem, uint64_t bytes);

/* Load or store `bytes` for NPU `npu` (0 <= npu < npus). `done(eng, ctx, arg)` fires when the
 * access completes. In a serialized type (PER_NODE, POOL) a request waits behind the one being
 * served (FIFO); the next one starts at the instant the previous completes, after `done` of the
 * previous has run (ASTRA-sim registers the workload callback before the memory's own). Fails
 * with SV_MEMTIER_ERROR_UNSUPPORTED for NO_MEMORY_EXPANSION (ASTRA-sim exits there). */
gboolean sv_memtier_remote_access(sv_memtier_remote *mem, int npu, uint64_t bytes,
                                  gboolean is_store, sv_event_fn done, void *ctx, uint64_t arg,
                                  GError **error);

struct sv_memtier_remote_stats {
    uint64_t loads, stores;
    uint64_t bytes_loaded, bytes_stored;
    uint64_t queued;        /* requests that had to wait behind another */
    sv_time queue_wait_ns;  /* total time requests waited before service */
    size_t max_queue_depth; /* longest waiting line seen (any queue) */
};
void sv_memtier_remote_get_stats(const sv_memtier_remote *mem, struct sv_memtier_remote_stats *out);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(sv_memtier_remote, sv_memtier_remote_free)

/* ---- The paged KV block manager with prefix caching (kvcache.c, evict.c) -------------------
 *
 *
 * Semantics of vLLM v1's KVCacheManager / BlockPool / FreeKVCacheBlockQueue (v0.19.0) as
 * LLMServingSim ports them (serving/core/block_pool.py, serving/core/kv_cache_manager.py; docs
 * simulator/scheduling/kv-cache-and-memory.md and prefix-caching.md). docs/kvcache.md has the
 * details; in short:
 *
 * - A fixed pool of `num_blocks` blocks of `block_size` tokens. Free blocks sit in one queue,
 *   initially in block-id order; allocation pops from the head, a freed block goes to the tail.
 * - With prefix caching, a block that becomes full is indexed under a chained 64-bit hash
 *   h(i) = H(h(i-1), tokens of block i), and keeps that entry when freed, so it is reusable and
 *   findable at once. Eviction is a side effect of allocation: a popped block loses its entry.
 * - Allocation is all-or-nothing: sv_memtier_kv_manager_allocate_slots() either hands out every
 * block needed or returns FALSE having changed nothing.
 *
 * A "sequence" (sv_memtier_kv_seq) is one request's block table and hash chain; the request itself
 * (its counters: computed tokens, reached length) belongs to the caller, which passes the counters
 * in. One manager per instance (pool per instance, as vLLM and LLMServingSim); nothing here knows
 * about time, batches or models. */
/* Seed of the hash chain, the parent hash of block 0. LLMServingSim's NONE_HASH
 * (serving/core/block_pool.py): vLLM draws it from os.urandom, a simulator must be reproducible. */
#define SV_MEMTIER_KV_HASH_SEED UINT64_C(0x9E3779B97F4A7C15)
/* Tokens per Mooncake `hash_ids` block (Mooncake trace format, FAST'25 traces README). */
#define SV_MEMTIER_KV_MOONCAKE_BLOCK_TOKENS 512

/* ---- capacity ---------------------------------------------------------------------------- */

/* Blocks that fit in `kv_bytes` (floor), with `kv_bytes_per_token` bytes of KV per token per
 * rank and `block_size` tokens per block: floor(kv_bytes / (kv_bytes_per_token * block_size)).
 * vLLM floors the same way (num_blocks = available_memory // page_size // num_layers). */
uint64_t sv_memtier_kv_blocks_from_bytes(uint64_t kv_bytes, uint64_t kv_bytes_per_token,
                                         uint32_t block_size);

/* KV capacity of one rank as vLLM / LLMServingSim size it (memory_model.py):
 *   requested = trunc(mem_bytes * mem_util); kv = requested - weight_bytes;
 *   blocks = floor(kv / (kv_bytes_per_token * block_size)).
 * Fails with SV_MEMTIER_KV_ERROR_CAPACITY when the weights leave less than one block (LLMServingSim
 * refuses to start there). `mem_bytes` is mem_size GiB x 2^30. */
#define SV_MEMTIER_KV_ERROR (sv_memtier_kv_error_quark())
GQuark sv_memtier_kv_error_quark(void);
typedef enum {
    SV_MEMTIER_KV_ERROR_CAPACITY, /* weights leave no room for a single block */
    SV_MEMTIER_KV_ERROR_INPUT,    /* inconsistent sequence description */
} sv_memtier_kv_error_code;
gboolean sv_memtier_kv_capacity_blocks(uint64_t mem_bytes, double mem_util, uint64_t weight_bytes,
                                       uint64_t kv_bytes_per_token, uint32_t block_size,
                                       uint64_t *num_blocks, GError **error);

/* ---- hashing ----------------------------------------------------------------------------- */

/* One link of the chain over token ids: FNV-1a 64 over the parent's 8 bytes then each token's 4
 * bytes (little-endian), finished with the splitmix64 avalanche. Deterministic on every platform.
 * Collisions are not detected (no token comparison), as in LLMServingSim (Python's 64-bit tuple
 * hash); see docs/kvcache.md for the probability. */
uint64_t sv_memtier_kv_hash_tokens(uint64_t parent, const uint32_t *tokens, size_t n);

/* ---- manager ----------------------------------------------------------------------------- */

typedef struct sv_memtier_kv_manager sv_memtier_kv_manager;
typedef struct sv_memtier_kv_seq sv_memtier_kv_seq;

/* ---- eviction policy --------------------------------------------------------------------- */

/* Which free block an allocation takes next: the free queue as a policy (registry kind
 * SV_REGISTRY_KV_EVICT, name from config; planner/planner.h explains plugins). A freed block that
 * still owns a prefix-cache entry is reusable until it is handed out again, so the order decides
 * what the cache forgets. The manager calls push when a block's ref count drops to 0 (blocks of
 * one sequence tail first), remove when a free block is pinned again by a prefix hit, and pop to
 * hand one out (only when at least one is free); at creation it pushes 0 .. num_blocks-1 in
 * order. Every callback must be O(1) or O(log n): they run per block. */
struct sv_memtier_kv_evict_ops {
    unsigned api_version; /* SV_REGISTRY_API_VERSION */
    /* Per-manager state for `num_blocks` blocks; `param` is the text after "name:" (or NULL).
     * NULL + error on a bad parameter. */
    void *(*create)(uint32_t num_blocks, const char *param, GError **error);
    void (*destroy)(void *state);
    void (*push)(void *state, uint32_t block);
    void (*remove)(void *state, uint32_t block);
    uint32_t (*pop)(void *state);
    /* Optional (diagnostics, tests): up to `max` free blocks in eviction order. */
    uint32_t (*order)(void *state, uint32_t *ids, uint32_t max);
};
/* "lru": vLLM's FreeKVCacheBlockQueue (least recently freed first). The default. */
const struct sv_memtier_kv_evict_ops *sv_memtier_kv_evict_lru(void);
/* Register the built-in policies ("lru") in a registry (core/core.h). */
gboolean sv_memtier_kv_evict_register_builtins(sv_registry *reg, GError **error);

sv_memtier_kv_manager *sv_memtier_kv_manager_new(uint32_t num_blocks, uint32_t block_size_tokens,
                                                 gboolean enable_prefix_caching);
/* The same with an eviction policy (`ops` NULL = lru); `param` as in
 * sv_memtier_kv_evict_ops.create. NULL + error when the policy refuses its parameter. */
sv_memtier_kv_manager *sv_memtier_kv_manager_new_with_eviction(
    uint32_t num_blocks, uint32_t block_size_tokens, gboolean enable_prefix_caching,
    const struct sv_memtier_kv_evict_ops *ops, const char *param, GError **error);
/* Accepts NULL. Every sequence must have been freed (sv_memtier_kv_seq_free) before. */
void sv_memtier_kv_manager_free(sv_memtier_kv_manager *mgr);

uint32_t sv_memtier_kv_manager_num_blocks(const sv_memtier_kv_manager *mgr);
uint32_t sv_memtier_kv_manager_block_size(const sv_memtier_kv_manager *mgr);
gboolean sv_memtier_kv_manager_caching_enabled(const sv_memtier_kv_manager *mgr);
/* Blocks in the free queue (including freed blocks that still carry a hash): exact, so that
 * many blocks can be allocated right now. */
uint32_t sv_memtier_kv_manager_num_free_blocks(const sv_memtier_kv_manager *mgr);
/* Blocks held by some sequence (ref count > 0). */
uint32_t sv_memtier_kv_manager_num_used_blocks(const sv_memtier_kv_manager *mgr);
/* used / num_blocks: vLLM's kv_cache_usage, the `kv_cache_pct` series (x 100). vLLM subtracts its
 * null block; LLMServingSim has none and neither do we. */
double sv_memtier_kv_manager_usage(const sv_memtier_kv_manager *mgr);
/* Hash entries in the index, and those of them on free blocks (reusable cached data). Used +
 * cached-free blocks is LLMServingSim's `used_bytes` ledger in blocks. */
uint32_t sv_memtier_kv_manager_num_cached_blocks(const sv_memtier_kv_manager *mgr);
uint32_t sv_memtier_kv_manager_num_cached_free_blocks(const sv_memtier_kv_manager *mgr);

/* Free queue in eviction order (head first), up to `max` block ids; returns how many written
 * (0 when the eviction policy has no `order` callback). For tests and diagnostics. */
uint32_t sv_memtier_kv_manager_free_queue(const sv_memtier_kv_manager *mgr, uint32_t *ids,
                                          uint32_t max);
/* Ref count of block `id`. */
uint32_t sv_memtier_kv_manager_block_ref(const sv_memtier_kv_manager *mgr, uint32_t id);
/* The block indexed under `hash`, if any. */
gboolean sv_memtier_kv_manager_lookup(const sv_memtier_kv_manager *mgr, uint64_t hash,
                                      uint32_t *id);

struct sv_memtier_kv_stats {
    /* Per lookup (vLLM's PrefixCacheStats: every get_computed_blocks call). */
    uint64_t queries;
    uint64_t query_tokens;
    uint64_t query_hit_tokens;
    /* Per request, once, at its first successful admission (LLMServingSim's
     * record_prefix_stats: prompt tokens requested, NPU hit tokens). The hit ratio printed as
     * "Prefix Cache Hit ratio x % (hit / requested)" is hit_tokens / requested_tokens. */
    uint64_t requests;
    uint64_t requested_tokens;
    uint64_t hit_tokens;
    /* Index entries dropped because their free block was reallocated. */
    uint64_t evictions;
    /* Preemptions and the blocks they returned to the free queue (ref count reaching 0). */
    uint64_t preemptions;
    uint64_t preempted_blocks;
};
void sv_memtier_kv_manager_get_stats(const sv_memtier_kv_manager *mgr,
                                     struct sv_memtier_kv_stats *stats);
/* hit_tokens / requested_tokens, 0 when nothing was requested. */
double sv_memtier_kv_manager_hit_rate(const sv_memtier_kv_manager *mgr);

/* ---- sequences --------------------------------------------------------------------------- */

/* Where a sequence's block keys come from. Token ids (prompt then output, as LLMServingSim hashes
 * input_tok_ids + output_tok_ids) or Mooncake hash ids; neither means the sequence is never
 * indexed nor hit (allocation is unaffected), which is what LLMServingSim does for a workload
 * without token ids. The arrays are read during sv_memtier_kv_seq_new only. */
struct sv_memtier_kv_seq_cfg {
    uint64_t prompt_tokens; /* prompt length (statistics; bounds Mooncake keys) */
    const uint32_t *prompt_ids;
    size_t num_prompt_ids;
    const uint32_t *output_ids; /* NULL when the trace gives none: output blocks never cached */
    size_t num_output_ids;
    /* Alternative to token ids: one id per `hash_block_tokens`-token block of the prompt
     * (Mooncake `hash_ids`, 512 tokens). Ignored when prompt_ids are given. */
    const uint64_t *hash_ids;
    size_t num_hash_ids;
    uint32_t hash_block_tokens; /* 0 means SV_MEMTIER_KV_MOONCAKE_BLOCK_TOKENS */
};

/* A sequence of manager `mgr`; its hash chain is computed here, once (O(tokens)). */
sv_memtier_kv_seq *sv_memtier_kv_seq_new(sv_memtier_kv_manager *mgr,
                                         const struct sv_memtier_kv_seq_cfg *cfg, GError **error);
/* Accepts NULL; returns any blocks still held (as sv_memtier_kv_manager_free_seq). */
void sv_memtier_kv_seq_free(sv_memtier_kv_seq *seq);

uint32_t sv_memtier_kv_seq_num_blocks(const sv_memtier_kv_seq *seq);       /* blocks held */
const uint32_t *sv_memtier_kv_seq_block_ids(const sv_memtier_kv_seq *seq); /* in sequence order */
uint32_t sv_memtier_kv_seq_num_hashes(const sv_memtier_kv_seq *seq); /* full blocks with a key */
uint64_t sv_memtier_kv_seq_block_hash(const sv_memtier_kv_seq *seq,
                                      uint32_t i); /* i < num_hashes */
uint32_t
sv_memtier_kv_seq_num_cached(const sv_memtier_kv_seq *seq); /* of its blocks, indexed so far */

/* Longest cached prefix of the sequence, for a request whose reached length is `num_tokens`
 * (prompt + generated; vLLM's request.num_tokens). Walks the chain until the first miss, over at
 * most floor((num_tokens - 1) / block_size) blocks: the last token always runs (it produces the
 * logits), and only full blocks are indexed, so the hit is block-aligned. Returns the hit in
 * tokens and remembers the hit blocks for the next sv_memtier_kv_manager_allocate_slots() of this
 * sequence, which must come before any other allocation (an allocation may evict them). 0 when
 * caching is off or the sequence has no keys. Counts one query. Changes no block. */
uint64_t sv_memtier_kv_manager_get_computed_blocks(sv_memtier_kv_manager *mgr,
                                                   sv_memtier_kv_seq *seq, uint64_t num_tokens);

/* Would the whole sequence (`num_tokens`, or the computed count if larger) fit, counting the
 * remembered hit of `num_new_computed_tokens`? vLLM's can_fit_full_sequence
 * (scheduler_reserve_full_isl, on by default). */
gboolean sv_memtier_kv_manager_can_fit_full_sequence(const sv_memtier_kv_manager *mgr,
                                                     const sv_memtier_kv_seq *seq,
                                                     uint64_t num_computed_tokens,
                                                     uint64_t num_new_computed_tokens,
                                                     uint64_t num_tokens);

/* Slots for `num_new_tokens` more tokens after `num_computed_tokens` already computed plus
 * `num_new_computed_tokens` just found by sv_memtier_kv_manager_get_computed_blocks (0 for a
 * running request, which cannot take new hits). Needs ceil((computed + new_computed + new) /
 * block_size) - held - hit blocks new blocks, plus the hit blocks that sit in the free queue
 * (touching takes them out). Returns FALSE and changes nothing when the free queue is shorter;
 * otherwise touches the hits (ref++), pops the new blocks (dropping their stale index entries), and
 * indexes every block now full up to min(computed + new_computed + new, num_tokens) (vLLM caches at
 * allocation). */
gboolean sv_memtier_kv_manager_allocate_slots(sv_memtier_kv_manager *mgr, sv_memtier_kv_seq *seq,
                                              uint64_t num_computed_tokens, uint64_t num_new_tokens,
                                              uint64_t num_new_computed_tokens,
                                              uint64_t num_tokens);

/* Index the sequence's blocks full within its first `num_tokens` computed tokens. Idempotent;
 * call when a chunk or a decode step completes (LLMServingSim's cache_blocks). */
void sv_memtier_kv_manager_cache_blocks(sv_memtier_kv_manager *mgr, sv_memtier_kv_seq *seq,
                                        uint64_t num_tokens);

/* Release a finished request's blocks: ref-- each, in reverse order so the tail is evicted first
 * and the head (the recoverable prefix) survives longest; blocks reaching 0 go to the queue's
 * tail, hashes kept. The sequence can be allocated again (re-admission). */
void sv_memtier_kv_manager_free_seq(sv_memtier_kv_manager *mgr, sv_memtier_kv_seq *seq);
/* The same for a preempted request (vLLM resets num_computed_tokens to 0; on re-admission
 * get_computed_blocks finds what survived); counted in the preemption statistics. */
void sv_memtier_kv_manager_preempt_seq(sv_memtier_kv_manager *mgr, sv_memtier_kv_seq *seq);

G_END_DECLS

#endif
