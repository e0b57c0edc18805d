/* ASTRA-sim's analytical remote memory (astra-sim/astra-memory-analytical,
 * AnalyticalRemoteMemory.cc): latency + floor(size / bw) per request, requests serialized per
 * node or for the whole pool. */
#include "memory-tier/memtier.h"

#include <string.h>

GQuark sv_memtier_error_quark(void)
{
    return g_quark_from_static_string("servesim-memtier-error-quark");
}

static const char *const type_names[] = {
    [SV_MEMTIER_REMOTE_NONE] = "NO_MEMORY_EXPANSION",
    [SV_MEMTIER_REMOTE_PER_NODE] = "PER_NODE_MEMORY_EXPANSION",
    [SV_MEMTIER_REMOTE_PER_NPU] = "PER_NPU_MEMORY_EXPANSION",
    [SV_MEMTIER_REMOTE_POOL] = "MEMORY_POOL",
    [SV_MEMTIER_REMOTE_IDEAL] = "IDEAL",
};

const char *sv_memtier_remote_type_name(sv_memtier_remote_type type)
{
    if ((size_t)type >= G_N_ELEMENTS(type_names))
        return NULL;
    return type_names[type];
}

gboolean sv_memtier_remote_type_parse(const char *name, sv_memtier_remote_type *out)
{
    for (size_t i = 0; i < G_N_ELEMENTS(type_names); i++) {
        if (name != NULL && strcmp(name, type_names[i]) == 0) {
            *out = (sv_memtier_remote_type)i;
            return TRUE;
        }
    }
    return FALSE;
}

gboolean sv_memtier_remote_cfg_from_json(JsonObject *obj, const char *where,
                                         struct sv_memtier_remote_cfg *cfg, GError **error)
{
    memset(cfg, 0, sizeof(*cfg));
    const char *type_str = NULL;
    if (!sv_cfg_get_string(obj, "memory-type", where, TRUE, NULL, &type_str, error))
        return FALSE;
    if (!sv_memtier_remote_type_parse(type_str, &cfg->type)) {
        g_set_error(error, SV_MEMTIER_ERROR, SV_MEMTIER_ERROR_CONFIG,
                    "unsupported memory type '%s' (expected NO_MEMORY_EXPANSION, "
                    "PER_NODE_MEMORY_EXPANSION, PER_NPU_MEMORY_EXPANSION, MEMORY_POOL or IDEAL): "
                    "%s: memory-type",
                    type_str, where);
        return FALSE;
    }
    /* ASTRA-sim keeps latency and bandwidth in uint64_t members (AnalyticalRemoteMemory.hh), so
     * a fractional value in the file is truncated; we do the same to print the same cycles. */
    /* Ranges (docs/replay.md, docs/reliability.md "Numeric ranges"): a latency of one access, a
     * bandwidth in bytes per ns up to 10^9 (1 EB/s). */
    double latency = 0.0, bw = 0.0;
    if (!sv_cfg_get_double_range(obj, "remote-mem-latency", where, FALSE, 0.0, SV_RANGE_LATENCY_NS,
                                 &latency, error) ||
        !sv_cfg_get_double_range(obj, "remote-mem-bw", where, FALSE, 0.0,
                                 SV_RANGE_D(0, 1e9, "bytes/ns"), &bw, error))
        return FALSE;
    cfg->latency_ns = (sv_time)latency;
    cfg->bw_bytes_per_ns = (uint64_t)bw;
    gboolean uses_bw = cfg->type == SV_MEMTIER_REMOTE_PER_NODE ||
                       cfg->type == SV_MEMTIER_REMOTE_PER_NPU ||
                       cfg->type == SV_MEMTIER_REMOTE_POOL;
    if (uses_bw && cfg->bw_bytes_per_ns == 0) {
        g_set_error(error, SV_MEMTIER_ERROR, SV_MEMTIER_ERROR_CONFIG,
                    "remote memory bandwidth must be at least 1 byte/ns for %s (ASTRA-sim keeps "
                    "it as an integer and divides by it): %s: remote-mem-bw",
                    type_str, where);
        return FALSE;
    }
    if (cfg->type == SV_MEMTIER_REMOTE_PER_NODE) {
        int64_t nodes = 0, per_node = 0;
        if (!sv_cfg_get_int_range(obj, "num-nodes", where, TRUE, 0, SV_RANGE_I(1, 1 << 20, NULL),
                                  &nodes, error) ||
            !sv_cfg_get_int_range(obj, "num-npus-per-node", where, TRUE, 0,
                                  SV_RANGE_I(1, 1 << 20, NULL), &per_node, error))
            return FALSE;
        cfg->num_nodes = (int)nodes;
        cfg->npus_per_node = (int)per_node;
    }
    return TRUE;
}

gboolean sv_memtier_remote_cfg_load_json(const char *path, struct sv_memtier_remote_cfg *cfg,
                                         GError **error)
{
    g_autoptr(JsonNode) root = sv_cfg_load_json(path, error);
    if (root == NULL)
        return FALSE;
    if (!JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, SV_MEMTIER_ERROR, SV_MEMTIER_ERROR_CONFIG,
                    "remote memory configuration is not a JSON object: %s", path);
        return FALSE;
    }
    return sv_memtier_remote_cfg_from_json(json_node_get_object(root), path, cfg, error);
}

/* One waiting or in-service request. */
struct request {
    uint64_t bytes;
    sv_time issued;
    sv_event_fn done;
    void *ctx;
    uint64_t arg;
};

/* A FIFO of requests served one at a time: `reqs[head]` is in service while `busy`. A flat array
 * with a moving head (compacted when half is dead) avoids one allocation per request. */
struct fifo {
    GArray *reqs;
    guint head;
    gboolean busy;
};

struct sv_memtier_remote {
    sv_engine *eng;
    struct sv_memtier_remote_cfg cfg;
    int npus;
    struct fifo *queues; /* num_nodes (PER_NODE), 1 (POOL), none otherwise */
    int nqueues;
    struct sv_memtier_remote_stats stats;
};

sv_memtier_remote *sv_memtier_remote_new(sv_engine *eng, const struct sv_memtier_remote_cfg *cfg,
                                         int npus, GError **error)
{
    SV_ASSERT(eng != NULL && cfg != NULL && npus > 0);
    if (cfg->type == SV_MEMTIER_REMOTE_PER_NODE &&
        (int64_t)cfg->num_nodes * cfg->npus_per_node < npus) {
        g_set_error(error, SV_MEMTIER_ERROR, SV_MEMTIER_ERROR_CONFIG,
                    "per-node memory expansion covers %d nodes x %d NPUs, fewer than the %d NPUs "
                    "of the system: num-nodes",
                    cfg->num_nodes, cfg->npus_per_node, npus);
        return NULL;
    }
    sv_memtier_remote *mem = g_new0(sv_memtier_remote, 1);
    mem->eng = eng;
    mem->cfg = *cfg;
    mem->npus = npus;
    if (cfg->type == SV_MEMTIER_REMOTE_PER_NODE)
        mem->nqueues = cfg->num_nodes;
    else if (cfg->type == SV_MEMTIER_REMOTE_POOL)
        mem->nqueues = 1;
    if (mem->nqueues > 0) {
        mem->queues = g_new0(struct fifo, mem->nqueues);
        for (int i = 0; i < mem->nqueues; i++)
            mem->queues[i].reqs = g_array_new(FALSE, FALSE, sizeof(struct request));
    }
    return mem;
}

void sv_memtier_remote_free(sv_memtier_remote *mem)
{
    if (mem == NULL)
        return;
    for (int i = 0; i < mem->nqueues; i++)
        g_array_free(mem->queues[i].reqs, TRUE);
    g_free(mem->queues);
    g_free(mem);
}

sv_time sv_memtier_remote_runtime(const sv_memtier_remote *mem, uint64_t bytes)
{
    if (mem->cfg.type == SV_MEMTIER_REMOTE_IDEAL)
        return mem->cfg.latency_ns;
    SV_ASSERT(mem->cfg.bw_bytes_per_ns > 0);
    /* AnalyticalRemoteMemory::get_remote_mem_runtime: latency + (uint64)((double)size / bw). */
    return mem->cfg.latency_ns + sv_time_from_ns((double)bytes / (double)mem->cfg.bw_bytes_per_ns);
}

static void fifo_start_head(sv_memtier_remote *mem, int q);

/* The request at the head of queue `q` completed: tell its owner first (who may issue another
 * request, which then queues behind those already waiting, as in ASTRA-sim), then serve the
 * next. */
static void fifo_on_done(sv_engine *eng, void *ctx, uint64_t q)
{
    sv_memtier_remote *mem = ctx;
    struct fifo *f = &mem->queues[q];
    SV_ASSERT(f->busy && f->head < f->reqs->len);
    struct request r = g_array_index(f->reqs, struct request, f->head);
    f->head++;
    r.done(eng, r.ctx, r.arg);
    f->busy = FALSE;
    if (f->head == f->reqs->len) {
        g_array_set_size(f->reqs, 0);
        f->head = 0;
    } else if (f->head > 64 && f->head * 2 > f->reqs->len) {
        g_array_remove_range(f->reqs, 0, f->head);
        f->head = 0;
    }
    if (f->head < f->reqs->len)
        fifo_start_head(mem, (int)q);
}

static void fifo_start_head(sv_memtier_remote *mem, int q)
{
    struct fifo *f = &mem->queues[q];
    const struct request *r = &g_array_index(f->reqs, struct request, f->head);
    sv_time now = sv_engine_now(mem->eng);
    if (now > r->issued) {
        mem->stats.queued++;
        mem->stats.queue_wait_ns += now - r->issued;
    }
    f->busy = TRUE;
    sv_engine_schedule_in(mem->eng, sv_memtier_remote_runtime(mem, r->bytes), SV_PRIO_DEFAULT,
                          fifo_on_done, mem, (uint64_t)q);
}

gboolean sv_memtier_remote_access(sv_memtier_remote *mem, int npu, uint64_t bytes,
                                  gboolean is_store, sv_event_fn done, void *ctx, uint64_t arg,
                                  GError **error)
{
    SV_ASSERT(npu >= 0 && npu < mem->npus);
    SV_ASSERT(done != NULL);
    if (mem->cfg.type == SV_MEMTIER_REMOTE_NONE) {
        g_set_error(error, SV_MEMTIER_ERROR, SV_MEMTIER_ERROR_UNSUPPORTED,
                    "remote memory access is not supported in NO_MEMORY_EXPANSION (NPU %d, "
                    "%" G_GUINT64_FORMAT " bytes)",
                    npu, bytes);
        return FALSE;
    }
    if (is_store) {
        mem->stats.stores++;
        mem->stats.bytes_stored += bytes;
    } else {
        mem->stats.loads++;
        mem->stats.bytes_loaded += bytes;
    }
    if (mem->nqueues == 0) {
        sv_engine_schedule_in(mem->eng, sv_memtier_remote_runtime(mem, bytes), SV_PRIO_DEFAULT,
                              done, ctx, arg);
        return TRUE;
    }
    int q = mem->cfg.type == SV_MEMTIER_REMOTE_PER_NODE ? npu / mem->cfg.npus_per_node : 0;
    struct fifo *f = &mem->queues[q];
    struct request r = {
        .bytes = bytes, .issued = sv_engine_now(mem->eng), .done = done, .ctx = ctx, .arg = arg};
    g_array_append_val(f->reqs, r);
    if (!f->busy)
        fifo_start_head(mem, q);
    size_t waiting = f->reqs->len - f->head - 1; /* the head is in service */
    if (waiting > mem->stats.max_queue_depth)
        mem->stats.max_queue_depth = waiting;
    return TRUE;
}

void sv_memtier_remote_get_stats(const sv_memtier_remote *mem, struct sv_memtier_remote_stats *out)
{
    *out = mem->stats;
}
