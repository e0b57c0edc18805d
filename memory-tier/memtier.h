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
#include "network/network.h"

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

#define SV_MEMTIER_ERROR (sv_memtier_error_quark())
GQuark sv_memtier_error_quark(void);
typedef enum {
    SV_MEMTIER_ERROR_CONFIG,      /* bad configuration file or value (file and key named) */
    SV_MEMTIER_ERROR_UNSUPPORTED, /* a request the configured memory cannot serve */
    SV_MEMTIER_ERROR_CAPACITY,    /* a tier charge that does not fit (sv_memtier_tier_charge) */
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
    /* Swap (sv_memtier_kv_manager_swap_out_seq / _swap_in): sequences and blocks moved. */
    uint64_t swap_outs, swapped_out_blocks;
    uint64_t swap_ins, swapped_in_blocks;
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

/* ==== Memory tiers (tier.c, fabric.c, lru.c, prefix_pool.c, hier.c; docs/kvcache.md) =========
 *
 * Issue 8's multi-tier memory resources: capacity ledgers per tier (HBM, host DRAM, CXL, SSD),
 * the fabric of links between them (PCIe per NPU, DRAM/CXL/SSD per node) booked as flows on the
 * network's max-min solver, lower-tier prefix pools of KV chunks, and a per-instance hierarchy
 * of pools. Units: capacities in bytes, tier bandwidths in decimal GB/s (= bytes/ns, spec sheets
 * are decimal; sv_bw_dec_gbps_to_bytes_per_ns), latencies in ns. */

#define SV_MEMTIER_TIER_ERROR_CAPACITY SV_MEMTIER_ERROR_CAPACITY /* alias */

typedef enum {
    SV_MEMTIER_HBM,  /* "npu": device memory */
    SV_MEMTIER_DRAM, /* "cpu": host memory of a node */
    SV_MEMTIER_CXL,  /* "cxl": CXL memory expander device */
    SV_MEMTIER_SSD,  /* "ssd": NVMe storage */
    SV_MEMTIER_KIND_COUNT
} sv_memtier_kind;
/* "npu", "cpu", "cxl", "ssd" (LLMServingSim's placement names). */
const char *sv_memtier_kind_name(sv_memtier_kind kind);
gboolean sv_memtier_kind_parse(const char *name, sv_memtier_kind *out);

typedef enum {
    SV_MEMTIER_OWNER_WEIGHTS,
    SV_MEMTIER_OWNER_LIVE_KV,
    SV_MEMTIER_OWNER_EVICTED_KV, /* swapped-out KV */
    SV_MEMTIER_OWNER_PREFIX,     /* prefix-pool chunks */
    SV_MEMTIER_OWNER_EXPERTS,
    SV_MEMTIER_OWNER_COUNT
} sv_memtier_owner;
/* "weights", "live_kv", "evicted_kv", "prefix", "experts" (summary.json keys). */
const char *sv_memtier_owner_name(sv_memtier_owner owner);

/* ---- tiers and capacity ledgers (tier.c) ------------------------------------------------ */

struct sv_memtier_tier_cfg {
    sv_memtier_kind kind;
    char name[48];           /* "node0/cpu", "node0/cxl:1", "node0/ssd", "inst0/npu" */
    uint64_t capacity_bytes; /* mem_size GiB x 2^30 */
    double read_gbps;    /* decimal GB/s, > 0 unless ideal or HBM (asserted: the planner checks);
                            DRAM/CXL: the one link shared by both directions */
    double write_gbps;   /* SSD write link (0 = read_gbps); ignored for DRAM/CXL */
    double latency_ns;   /* per access (added once per transfer leg touching the tier) */
    int32_t queue_depth; /* SSD only: transfers in service per device; 0 = unlimited */
    gboolean ideal;      /* infinite bandwidth, latency only */
};

typedef struct sv_memtier_tier sv_memtier_tier;

sv_memtier_tier *sv_memtier_tier_new(sv_engine *eng, const struct sv_memtier_tier_cfg *cfg);
void sv_memtier_tier_free(sv_memtier_tier *t); /* accepts NULL */
const struct sv_memtier_tier_cfg *sv_memtier_tier_get_cfg(const sv_memtier_tier *t);
/* Add `delta` bytes (may be negative) to owner `o`. Fails with SV_MEMTIER_ERROR /
 * SV_MEMTIER_TIER_ERROR_CAPACITY ("<name>: <owner> needs N bytes, M free of C") and changes
 * nothing when used + delta > capacity; a release below 0 is a bug (asserted). */
gboolean sv_memtier_tier_charge(sv_memtier_tier *t, sv_memtier_owner o, int64_t delta,
                                GError **error);
/* Set owner `o` to exactly `bytes` (HBM views of KV kept by the KV manager). Not checked
 * against the capacity (the view is derived from a pool sized to fit). */
void sv_memtier_tier_set(sv_memtier_tier *t, sv_memtier_owner o, uint64_t bytes);
uint64_t sv_memtier_tier_capacity(const sv_memtier_tier *t);
uint64_t sv_memtier_tier_used(const sv_memtier_tier *t);
uint64_t sv_memtier_tier_used_by(const sv_memtier_tier *t, sv_memtier_owner o);
uint64_t sv_memtier_tier_free_bytes(const sv_memtier_tier *t);
/* Prefix statistics booked by the pools and hierarchies on this tier. */
void sv_memtier_tier_count_lookup(sv_memtier_tier *t, uint64_t lookup_tokens, uint64_t hit_tokens,
                                  uint64_t hit_chunks);

struct sv_memtier_tier_stats {
    uint64_t capacity, peak, peak_by_owner[SV_MEMTIER_OWNER_COUNT];
    double mean_bytes;                /* time-weighted over [0, now] */
    uint64_t read_bytes, write_bytes; /* transfers booked from / to this tier */
    uint64_t hit_tokens, lookup_tokens, hit_chunks, evictions, rejected;
};
void sv_memtier_tier_get_stats(const sv_memtier_tier *t, sv_time now,
                               struct sv_memtier_tier_stats *out);

/* ---- fabric: links and routes between tiers (fabric.c) ---------------------------------- */

typedef struct sv_memtier_fabric sv_memtier_fabric;

/* Where a tier sits. node: node index (-1: a cluster-scope CXL device); device: the NPU id
 * (global, the network's) for HBM, the CXL device index, the SSD device index; 0 for DRAM. */
struct sv_memtier_loc {
    sv_memtier_kind kind;
    int32_t node;
    int32_t device;
};

/* The fabric books its flows on `net`'s solver when `net` is a flow network, else on a
 * standalone solver on `eng` (tier traffic then does not contend with network messages). */
sv_memtier_fabric *sv_memtier_fabric_new(sv_engine *eng, sv_net *net_or_null, GError **error);
void sv_memtier_fabric_free(sv_memtier_fabric *f); /* accepts NULL */
/* NPU `npu` (global id) on node `node`: its PCIe host-to-device and device-to-host links of
 * `gbps` decimal GB/s per direction (> 0 unless ideal). Returns the h2d link id (d2h = h2d + 1; -1
 * when ideal). */
int32_t sv_memtier_fabric_add_pcie(sv_memtier_fabric *f, int32_t npu, int32_t node, double gbps,
                                   double lat_ns, gboolean ideal);
/* A tier at `loc` (borrowed; outlives the fabric): DRAM -> one dram link per node; CXL -> one
 * link per device; SSD -> read and write links per device; HBM -> no link (ledger counting). */
void sv_memtier_fabric_add_tier(sv_memtier_fabric *f, const struct sv_memtier_loc *loc,
                                sv_memtier_tier *t);
/* Cluster-scope CXL: node `node`'s port to the CXL switch (every route between that node and a
 * cluster CXL device crosses it). */
void sv_memtier_fabric_add_cxl_port(sv_memtier_fabric *f, int32_t node, double gbps, double lat_ns,
                                    gboolean ideal);
/* A precomputed route of 1 or 2 legs (store-and-forward through host DRAM for SSD), owned by f. */
typedef struct sv_memtier_route sv_memtier_route;
/* The route src -> dst (computed once, then cached); NULL + error when a tier or an NPU on it
 * was never added or the pair is not connected (HBM -> HBM, a remote hop without a network). */
const sv_memtier_route *sv_memtier_fabric_route(sv_memtier_fabric *f,
                                                const struct sv_memtier_loc *src,
                                                const struct sv_memtier_loc *dst, GError **error);
int sv_memtier_route_legs(const sv_memtier_route *r);
/* Time of `bytes` over the route with no other traffic (tests, estimates), ns. */
sv_time sv_memtier_route_alone_ns(const sv_memtier_route *r, uint64_t bytes);
/* Move `bytes` along the route (legs in sequence); `done` fires after the last byte of the last
 * leg plus the latencies. Counts read bytes on the source tier and write bytes on the
 * destination tier. */
void sv_memtier_fabric_xfer(sv_memtier_fabric *f, const sv_memtier_route *r, uint64_t bytes,
                            sv_net_done_fn done, void *ctx, uint64_t arg);
uint64_t sv_memtier_fabric_bytes_booked(const sv_memtier_fabric *f); /* sum of xfer sizes */
/* Sum of the sizes of the transfers whose last leg has ended (= booked once nothing is in
 * flight: the run's conservation check, docs/reliability.md). */
uint64_t sv_memtier_fabric_bytes_done(const sv_memtier_fabric *f);
/* One leg of a transfer done: `bytes` (> 0) moved from `src` to `dst` at `now`. A route's legs
 * are reported one by one as each completes, so a transfer through host DRAM (SSD <-> NPU) is
 * two reports, SSD -> DRAM then DRAM -> NPU. src_node / dst_node: the node of each end (an NPU's
 * node for HBM; -1 for a cluster-scope CXL device); they differ on a remote leg (another node's
 * host DRAM <-> an NPU over the network). */
struct sv_memtier_xfer_report {
    struct sv_memtier_loc src, dst;
    int32_t src_node, dst_node;
    uint64_t bytes;
    sv_time now;
};
typedef void (*sv_memtier_xfer_observer_fn)(void *ctx, const struct sv_memtier_xfer_report *r);
/* One observer per fabric (NULL removes it), for per-node accounting (power: DRAM, storage). */
void sv_memtier_fabric_set_observer(sv_memtier_fabric *f, sv_memtier_xfer_observer_fn fn,
                                    void *ctx);
sv_net_solver *sv_memtier_fabric_solver(sv_memtier_fabric *f);
/* A passive tap (NULL removes it) told at the end of each leg that crosses links of the cluster
 * network's topology (a cluster pool's remote read: DRAM of the home node -> the network route):
 * the leg's ends, bytes, the time it started on its links (after any SSD queue) and those
 * topology link ids (valid during the call). No event, no effect on the transfer (timelines). */
struct sv_memtier_leg_tap {
    struct sv_memtier_loc src, dst;
    uint64_t bytes;
    sv_time start_ns;
    const int *net_links;
    int n_net_links;
};
typedef void (*sv_memtier_leg_tap_fn)(void *ctx, const struct sv_memtier_leg_tap *leg, sv_time now);
void sv_memtier_fabric_set_tap(sv_memtier_fabric *f, sv_memtier_leg_tap_fn fn, void *ctx);

/* ---- generic LRU of uint64 keys (lru.c) ------------------------------------------------- */

/* Fixed number of slots; O(1) lookup, touch, insert and eviction. Order "lru" (a hit moves the
 * key to the most recent end) or "fifo" (by insertion; hits do not move). */
typedef struct sv_memtier_lru sv_memtier_lru;
sv_memtier_lru *sv_memtier_lru_new(uint32_t slots, gboolean fifo);
void sv_memtier_lru_free(sv_memtier_lru *l); /* accepts NULL */
uint32_t sv_memtier_lru_len(const sv_memtier_lru *l);
uint32_t sv_memtier_lru_slots(const sv_memtier_lru *l);
gboolean sv_memtier_lru_contains(const sv_memtier_lru *l, uint64_t key);
/* Present: make it most recent (lru) and return TRUE; absent: FALSE, nothing changes. */
gboolean sv_memtier_lru_touch(sv_memtier_lru *l, uint64_t key);
/* Insert an absent key as most recent. When full, the least recent key is evicted first and
 * returned through `evicted` (TRUE returned); FALSE when nothing was evicted. */
gboolean sv_memtier_lru_insert(sv_memtier_lru *l, uint64_t key, uint64_t *evicted);
/* Remove the least recent key (FALSE when empty). */
gboolean sv_memtier_lru_pop(sv_memtier_lru *l, uint64_t *key);
gboolean sv_memtier_lru_remove(sv_memtier_lru *l, uint64_t key);
/* Up to `max` keys, least recent (next evicted) first. */
uint32_t sv_memtier_lru_order(const sv_memtier_lru *l, uint64_t *keys, uint32_t max);

/* ---- prefix pool: one lower tier's KV chunks (prefix_pool.c) ---------------------------- */

struct sv_memtier_prefix_pool_cfg {
    sv_memtier_tier *tier; /* borrowed; charged SV_MEMTIER_OWNER_PREFIX per chunk */
    uint32_t chunk_tokens; /* 256 (LMCache chunk_size, LLMServingSim) */
    uint32_t fine_tokens;  /* NPU block_size; chunk_tokens must be a multiple */
    uint64_t chunk_bytes;  /* KV bytes of one chunk (all ranks of the instance) */
    const char *evict;     /* "lru" (default, NULL) | "fifo" (LLMServingSim) */
    const char *admit;     /* "all" (default, NULL) | "second" (insert on second sight) */
};
typedef struct sv_memtier_prefix_pool sv_memtier_prefix_pool;
sv_memtier_prefix_pool *sv_memtier_prefix_pool_new(const struct sv_memtier_prefix_pool_cfg *c,
                                                   GError **error);
void sv_memtier_prefix_pool_free(sv_memtier_prefix_pool *p); /* accepts NULL; releases charges */
sv_memtier_tier *sv_memtier_prefix_pool_tier(const sv_memtier_prefix_pool *p);
uint32_t sv_memtier_prefix_pool_chunk_tokens(const sv_memtier_prefix_pool *p);
uint64_t sv_memtier_prefix_pool_chunk_bytes(const sv_memtier_prefix_pool *p);
uint32_t sv_memtier_prefix_pool_len(const sv_memtier_prefix_pool *p); /* chunks held */
/* Key of chunk c of a fine-hash chain: the fine hash at (c+1)*N - 1, N = chunk/fine
 * (LLMServingSim keys coarse blocks by their last fine block). */
uint64_t sv_memtier_prefix_pool_chunk_key(const sv_memtier_prefix_pool *p,
                                          const uint64_t *fine_hashes, uint32_t c);
/* Consecutive chunks present from chunk index c0 of the chain (only whole chunks within
 * n_fine fine hashes); touches them (lru). */
uint32_t sv_memtier_prefix_pool_match(sv_memtier_prefix_pool *p, const uint64_t *fine_hashes,
                                      uint32_t n_fine, uint32_t c0);
gboolean sv_memtier_prefix_pool_contains(const sv_memtier_prefix_pool *p, uint64_t key);
gboolean sv_memtier_prefix_pool_touch(sv_memtier_prefix_pool *p, uint64_t key);
/* Insert `key` (absent: charges the tier PREFIX, evicting lru/fifo chunks until it fits; present:
 * touch). Evicted keys go through `evicted(ctx, key)` (may be NULL) in eviction order. FALSE =
 * rejected (chunk larger than the tier's room even when empty, or admit "second" on first sight),
 * counted in the tier's `rejected`. */
gboolean sv_memtier_prefix_pool_insert(sv_memtier_prefix_pool *p, uint64_t key,
                                       void (*evicted)(void *ctx, uint64_t key), void *ctx);
/* Evict chunks until `bytes` more are free on the tier (swap space pressure); returns bytes
 * freed. */
uint64_t sv_memtier_prefix_pool_shrink(sv_memtier_prefix_pool *p, uint64_t bytes);
/* Keys in eviction order (next evicted first), up to max (tests). */
uint32_t sv_memtier_prefix_pool_order(const sv_memtier_prefix_pool *p, uint64_t *keys,
                                      uint32_t max);

/* ---- hierarchy: an instance's ordered lower tiers (hier.c) ------------------------------ */

struct sv_memtier_hier_cfg {
    sv_memtier_fabric *fabric; /* routes and transfers */
    struct sv_memtier_loc npu; /* the instance's first NPU (HBM loc): loads go there */
    uint32_t chunk_tokens;     /* as the pools' */
    gboolean write_back;       /* FALSE: write-through at chunk completion */
};
typedef struct sv_memtier_hier sv_memtier_hier;
sv_memtier_hier *sv_memtier_hier_new(const struct sv_memtier_hier_cfg *cfg, GError **error);
void sv_memtier_hier_free(sv_memtier_hier *h); /* accepts NULL; the pools are borrowed */
/* Append a pool in lookup order (at most one per kind). `loc` is where its tier sits. */
gboolean sv_memtier_hier_add_pool(sv_memtier_hier *h, sv_memtier_prefix_pool *p,
                                  const struct sv_memtier_loc *loc, GError **error);
/* A cluster pool (Mooncake store): chunk key k lives in pools[k % n] at locs[k % n] (host DRAM
 * of each node); hits from another node than the instance's are remote. */
gboolean sv_memtier_hier_add_cluster_pool(sv_memtier_hier *h, sv_memtier_prefix_pool **pools,
                                          const struct sv_memtier_loc *locs, int32_t n,
                                          GError **error);
int32_t sv_memtier_hier_num_pools(const sv_memtier_hier *h);

struct sv_memtier_hit {
    uint64_t tokens[SV_MEMTIER_KIND_COUNT]; /* tokens hit per tier kind (HBM entry unused) */
    uint64_t remote_tokens;                 /* cluster pool hits on another node */
    /* route[kind]: tier -> the hier's NPU (NULL when no hit there); route[KIND_COUNT]: the
     * remote route of the first remote chunk. */
    const sv_memtier_route *route[SV_MEMTIER_KIND_COUNT + 1];
};
/* After an NPU hit of `npu_tokens`: walk chunks from floor(npu_tokens / chunk); each chunk comes
 * from the first pool holding it; stop at the first chunk none holds, and at
 * floor((num_tokens - 1) / chunk) chunks. Returns the end of the hit in tokens (>= npu_tokens;
 * = npu_tokens when nothing beyond it). Tokens loaded = end - npu_tokens, split per tier in
 * `out` (the first chunk counts only its part beyond npu_tokens). Touches the chunks found (lru)
 * and counts on the tiers: every pool's tier looked up the tokens past the NPU hit (up to the
 * cap), the serving tier hit its tokens and chunks. Call it once per admitted request. */
uint64_t sv_memtier_hier_match(sv_memtier_hier *h, const uint64_t *fine, uint32_t n_fine,
                               uint64_t npu_tokens, uint64_t num_tokens,
                               struct sv_memtier_hit *out);
/* The same walk without side effects (no touch, no statistics): for a request that may not be
 * admitted this step (call sv_memtier_hier_match once, when it is). */
uint64_t sv_memtier_hier_peek(sv_memtier_hier *h, const uint64_t *fine, uint32_t n_fine,
                              uint64_t npu_tokens, uint64_t num_tokens, struct sv_memtier_hit *out);
/* A chunk became full on the NPU `npu`: write-through to every pool not holding it (inclusive),
 * as background transfers; the chunk becomes hit-able when its write completes. No-op in
 * write-back mode. */
void sv_memtier_hier_chunk_done(sv_memtier_hier *h, uint64_t key, int32_t npu);
/* Write-back mode: the NPU block ending chunk `key` was evicted: write it to the first pool;
 * a pool's own evictions are demoted to the next pool. No-op in write-through mode. */
void sv_memtier_hier_npu_evicted(sv_memtier_hier *h, uint64_t key, int32_t npu);
/* An sv_memtier_kv_evict_hook (ctx = the hierarchy) for the instance's KV manager: in write-back
 * mode, an evicted block that ends a chunk (chain index = N - 1 mod N, N = chunk / block tokens)
 * is written down from the hierarchy's NPU (sv_memtier_hier_npu_evicted). */
void sv_memtier_hier_on_kv_evict(void *hier, uint64_t hash, uint32_t chain_index);
/* Writes (and demotions) started and not yet completed. */
uint32_t sv_memtier_hier_writes_in_flight(const sv_memtier_hier *h);

/* ---- KV manager hooks for tiers (kvcache.c) --------------------------------------------- */

/* Called when a block's prefix-cache entry is dropped (its free block was reallocated) with the
 * entry's hash and the block's index in its chain (0-based). */
typedef void (*sv_memtier_kv_evict_hook)(void *ctx, uint64_t hash, uint32_t chain_index);
void sv_memtier_kv_manager_set_evict_hook(sv_memtier_kv_manager *mgr, sv_memtier_kv_evict_hook fn,
                                          void *ctx);

/* Swap a preempted sequence out (vLLM v0 _preempt_by_swap): its blocks are released as by
 * sv_memtier_kv_manager_preempt_seq, except that its partial tail block is not left indexed;
 * counted as a swap-out. Returns the number of blocks it held (the bytes to move). */
uint32_t sv_memtier_kv_manager_swap_out_seq(sv_memtier_kv_manager *mgr, sv_memtier_kv_seq *seq);
/* Swap a sequence back in with `num_tokens` computed tokens: all-or-nothing
 * ceil(num_tokens / block_size) fresh blocks; its full blocks are indexed again. FALSE and
 * nothing changed when the free queue is shorter. */
gboolean sv_memtier_kv_manager_swap_in(sv_memtier_kv_manager *mgr, sv_memtier_kv_seq *seq,
                                       uint64_t num_tokens);
/* The sequence's hash chain (sv_memtier_kv_seq_num_hashes entries), for sv_memtier_hier_match. */
const uint64_t *sv_memtier_kv_seq_hashes(const sv_memtier_kv_seq *seq, uint32_t *n);

G_END_DECLS

#endif
