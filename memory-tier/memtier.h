/* servesim memory-tier: memory resources the DAG executor books.
 *
 * This header holds ASTRA-sim's remote memory model (`--remote-memory-configuration MEM.json`,
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

G_END_DECLS

#include "memory-tier/kvcache.h"

#endif
