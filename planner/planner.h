/* servesim planner: the cluster config (LLMServingSim's cluster JSON as it is), one model serving
 * group (msg) per instance, the global router, agentic sessions, and the run loop.
 *
 * Outputs never need the run to keep finished requests: everything a writer needs arrives through
 * struct sv_run_observer (one record per finished request, one sample per iteration, one call per
 * inter-token gap). docs/serving.md describes the model and the options. */
#ifndef SV_PLANNER_H
#define SV_PLANNER_H

#include "compute/compute.h"
#include "core/core.h"
#include "msg/msg.h"
#include "workloads/workloads.h"

#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdint.h>

G_BEGIN_DECLS

#define SV_PLANNER_ERROR (sv_planner_error_quark())
GQuark sv_planner_error_quark(void);
typedef enum {
    SV_PLANNER_ERROR_IO,      /* config file unreadable */
    SV_PLANNER_ERROR_INVALID, /* bad config value (field path in the message) */
    SV_PLANNER_ERROR_RUN,     /* the simulation could not complete */
} sv_planner_error_code;

/* ---- cluster config ------------------------------------------------------------------------ */

/* One instance of LLMServingSim's cluster config (docs/reference/cluster-config.md) with the
 * per-instance runtime overrides resolved against the run's defaults. */
struct sv_instance_cfg {
    int32_t node;  /* index in nodes[] */
    int32_t index; /* global instance index, in config order */
    char model_name[128];
    char hardware[64];
    double npu_mem_gib;     /* npu_mem.mem_size, GiB */
    double npu_mem_bw_gbps; /* npu_mem.mem_bw */
    double npu_mem_latency_ns;
    double mem_util; /* npu_mem.mem_util, (0, 1]; default 0.9 (vLLM gpu_memory_utilization) */
    int32_t num_npus;
    int32_t tp_size;
    int32_t pp_size;
    int32_t ep_size;
    char pd_type[16]; /* "" (null), "prefill", "decode" */
    char dtype[16];   /* "" = the model's */
    /* Runtime overrides; -1 / SV_CFG_UNSET = take the run default. */
    int64_t max_num_seqs;
    int64_t max_num_batched_tokens;
    int64_t long_prefill_token_threshold;
    int64_t block_size;
    int enable_prefix_caching;  /* -1 unset, 0, 1 */
    int enable_chunked_prefill; /* -1 unset, 0, 1 */
    int reserve_full_isl;       /* -1 unset, 0, 1 */
};

struct sv_node_cfg {
    double cpu_mem_gib;
    double cpu_mem_bw_gbps;
    double cpu_mem_latency_ns;
};

struct sv_cluster_cfg {
    double link_bw_gbps;    /* top-level link_bw (ASTRA-sim GB/s) */
    double link_latency_ns; /* top-level link_latency */
    int32_t n_nodes;
    struct sv_node_cfg *nodes;
    int32_t n_instances;
    struct sv_instance_cfg *instances;
};

/* Parse LLMServingSim's cluster config. `where` prefixes error messages (usually the file's base
 * name). Unknown keys are g_warning'ed with their path; invalid values fail with the path
 * ("config.json: nodes[0].instances[1].tp_size: must be a positive integer"). */
struct sv_cluster_cfg *sv_planner_cluster_from_json(JsonNode *root, const char *where,
                                                    GError **error);
struct sv_cluster_cfg *sv_planner_cluster_load(const char *path, GError **error);
/* A one-node, one-instance cluster (the quick form). mem_size from the hardware catalog. */
struct sv_cluster_cfg *sv_planner_cluster_single(const char *model, const char *hardware, int tp,
                                                 GError **error);
void sv_planner_cluster_free(struct sv_cluster_cfg *cfg);

/* ---- routers -------------------------------------------------------------------------------- */

typedef enum {
    SV_ROUTER_LEAST_LOAD = 0, /* LLMServingSim LOAD: min(4 x waiting + running), lowest index */
    SV_ROUTER_ROUND_ROBIN,
    SV_ROUTER_RANDOM, /* uniform, stream "router/random" */
} sv_router_kind;
/* "least_load" (or "load"), "round_robin" (or "rr"), "random" (or "rand"). */
gboolean sv_planner_router_parse(const char *name, sv_router_kind *out, GError **error);
const char *sv_planner_router_name(sv_router_kind kind);

/* Stateless part of the router, for tests: pick among n instances given their loads. `rr` is the
 * round-robin cursor (in/out), `rng` the random stream (RANDOM only). */
int32_t sv_planner_route(sv_router_kind kind, int32_t n, const uint32_t *waiting,
                         const uint32_t *running, uint64_t *rr, sv_rng *rng);

/* ---- outputs -------------------------------------------------------------------------------- */

/* One finished request (requests.csv row). ttft = first_token - arrival, tpot = (last - first) /
 * (output_tokens - 1), e2e = last - arrival, queue = first_scheduled - arrival (vLLM's metric
 * definitions). */
struct sv_req_record {
    uint64_t request_id; /* 0-based position in the workload */
    int32_t instance;
    sv_time arrival_ns;
    sv_time first_scheduled_ns;
    sv_time first_token_ns;
    sv_time last_token_ns;
    int64_t input_tokens;
    int64_t output_tokens;
    int64_t prefix_hit_tokens;
    uint32_t preemptions;
    const char *session_id; /* NULL for flat requests; valid during the callback only */
};

/* One committed iteration of one instance (timeseries.csv is aggregated from these). */
struct sv_iter_sample {
    int32_t instance;
    sv_time start_ns;
    sv_time end_ns;
    int64_t prompt_tokens; /* prompt tokens completed this iteration */
    int64_t gen_tokens;    /* output tokens produced this iteration */
    uint32_t running;      /* this instance, after the iteration */
    uint32_t waiting;
    double kv_usage; /* fraction of this instance's KV blocks in use */
};

/* Every callback may be NULL. Records are passed by pointer, valid during the call only. */
struct sv_run_observer {
    void (*on_request)(void *ctx, const struct sv_req_record *rec);
    void (*on_iteration)(void *ctx, const struct sv_iter_sample *s);
    /* Each output token after the first: its time and the gap since the previous token (ITL). */
    void (*on_token_gap)(void *ctx, uint64_t request_id, sv_time t_ns, sv_time gap_ns);
    void *ctx;
};

/* ---- run ------------------------------------------------------------------------------------ */

typedef enum {
    SV_RUN_LATENCY_AUTO = 0, /* profile when a bundle matches under profiles_root, else roofline */
    SV_RUN_LATENCY_PROFILE,
    SV_RUN_LATENCY_ROOFLINE,
} sv_run_latency;

struct sv_run_cfg {
    const struct sv_cluster_cfg *cluster;
    sv_wl_source *workload;    /* pulled lazily */
    const char *profiles_root; /* LLMServingSim profiles/ folder; NULL = none */
    const char *model_dir;     /* extra model configs (NULL) */
    sv_run_latency latency;
    sv_router_kind router;
    sv_msg_sched_kind scheduler;
    uint64_t seed;
    const char *emit_et_dir; /* NULL = none */
    /* Run defaults for the per-instance overrides (<= 0: vLLM's). */
    int64_t max_num_seqs;
    int64_t max_num_batched_tokens;
    int64_t long_prefill_token_threshold;
    int64_t block_size;
    int enable_prefix_caching;  /* -1 = default on */
    int enable_chunked_prefill; /* -1 = default on */
    int reserve_full_isl;       /* -1 = default on */
    /* Forced overrides from the command line (win over the config when > 0). */
    int64_t force_max_num_seqs;
    int64_t force_max_num_batched_tokens;
    const struct sv_run_observer *observer;
    /* Progress: called about every `progress_every` finished requests (0 = never). */
    void (*progress)(void *ctx, sv_time now_ns, uint64_t done, uint64_t submitted);
    uint64_t progress_every;
    void *progress_ctx;
};

struct sv_run_result {
    uint64_t requests; /* finished */
    uint64_t sessions;
    sv_time first_arrival_ns;
    sv_time makespan_ns;    /* last token of the last request (from time 0) */
    uint64_t prompt_tokens; /* input tokens of finished requests */
    uint64_t output_tokens;
    uint64_t prefix_requested_tokens;
    uint64_t prefix_hit_tokens;
    uint64_t preemptions;
    uint64_t iterations;
    uint64_t bad_lines;
    sv_run_latency latency_used; /* of instance 0 */
    char latency_source[512];    /* profile folder or "roofline" (instance 0) */
};

gboolean sv_planner_run(const struct sv_run_cfg *cfg, struct sv_run_result *result, GError **error);

G_END_DECLS

#include "planner/metrics.h"

#endif
