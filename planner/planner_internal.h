/* Shared between planner's files, not part of its API (planner/planner.h). */
#ifndef SV_PLANNER_INTERNAL_H
#define SV_PLANNER_INTERNAL_H

#include "planner/planner.h"

G_BEGIN_DECLS

/* vLLM's gpu_memory_utilization default (vllm/config/cache.py) and LLMServingSim's
 * --npu-memory-utilization default. */
#define SV_PLANNER__DEFAULT_MEM_UTIL 0.9

/* The latency model of instance `ic` (planner/latency.c): its profile bundle when profiles are
 * given and one matches (unless roofline is asked for), else the roofline; *source says which. */
sv_compute_latency *sv_planner__make_latency(const struct sv_planner_run_cfg *cfg,
                                             const struct sv_planner_instance_cfg *ic,
                                             const struct sv_compute_model_cfg *m, char **source,
                                             GError **error);

/* instances[].speculative (planner/spec.c, docs/speculative.md): TRUE when absent; otherwise the
 * object is validated (errors name its path) and, valid, refused: the engine does not simulate it
 * yet. */
/* Speculative decoding (planner/spec.c, docs/speculative.md). parse: instances[].speculative
 * into ic (has_spec); every bad key one error with its path. The run's side: the --speculative
 * flag (flag_check, also from sv_planner_run_check), per instance the draft model's latency model,
 * the KV pool with the draft's weights and KV, and the msg's spec fields; report: the counters to
 * the observer at the end. */
gboolean sv_planner__spec_parse(JsonObject *o, const char *where,
                                struct sv_planner_instance_cfg *ic, GError **error);
gboolean sv_planner__spec_flag_check(const struct sv_planner_run_cfg *cfg, GError **error);
typedef struct sv_planner__spec sv_planner__spec;
sv_planner__spec *sv_planner__spec_new(int32_t n_inst);
void sv_planner__spec_free(sv_planner__spec *s); /* accepts NULL */
gboolean sv_planner__spec_instance(sv_planner__spec *s, const struct sv_planner_run_cfg *cfg,
                                   int32_t i, const struct sv_compute_model_cfg *m,
                                   uint32_t block_size, uint64_t *blocks, struct sv_msg_cfg *mc,
                                   GError **error);
/* The draft model's CUDA graphs follow the instance's limits (its passes are decode batches). */
void sv_planner__spec_cudagraph(sv_planner__spec *s, int32_t i, int64_t max_num_seqs,
                                int64_t max_num_batched_tokens);
void sv_planner__spec_report(const sv_planner__spec *s, sv_msg *const *msgs,
                             const struct sv_planner_run_observer *obs);

/* Attention/FFN disaggregation (planner/afd.c, docs/afd.md "In servesim run"). parse: reads
 * instances[].afd once tp, pp, ep, dp_group, stages and the offload switches are known (errors
 * name `where`.afd). The run's side: per instance, the FFN latency model (owned here), the KV
 * blocks of the attention devices (*blocks), the FFN weights' fit, and mc->afd. */
gboolean sv_planner__afd_parse(JsonObject *o, const char *where, struct sv_planner_instance_cfg *ic,
                               GError **error);
gboolean sv_planner__afd_any(const struct sv_planner_cluster_cfg *c);
/* Shared FFN groups (afd.ffn_group): members found, numbered and checked to agree, once every
 * instance is parsed. */
gboolean sv_planner__afd_groups(struct sv_planner_cluster_cfg *c, GError **error);
/* What afd does not combine with at run level (the power model, --emit-et): before any output. */
gboolean sv_planner__afd_check(const struct sv_planner_run_cfg *cfg, GError **error);
typedef struct sv_planner__afd sv_planner__afd;
sv_planner__afd *sv_planner__afd_new(int32_t n_inst);
void sv_planner__afd_free(sv_planner__afd *a);
gboolean sv_planner__afd_instance(sv_planner__afd *a, const struct sv_planner_run_cfg *cfg,
                                  int32_t i, const struct sv_compute_model_cfg *m,
                                  sv_planner_cluster_net *cn, gboolean power, uint32_t block_size,
                                  uint64_t *blocks, struct sv_msg_cfg *mc, GError **error);
void sv_planner__afd_cudagraph(sv_planner__afd *a, int32_t i, int64_t max_num_seqs,
                               int64_t max_num_batched_tokens);

/* Heterogeneous pipeline stages (planner/stages.c, docs/parallelism.md). parse: reads
 * instances[].stages once pp_size is known. The run's side: per instance, a latency model per
 * stage (owned here) for mc->stage_lat, the layer split for mc->stage_layers, and *blocks the
 * minimum of the stages' KV capacities. Instances without stages are left alone. */
gboolean sv_planner__stages_parse(JsonObject *o, const char *where,
                                  struct sv_planner_instance_cfg *ic, GError **error);
typedef struct sv_planner__stages sv_planner__stages;
sv_planner__stages *sv_planner__stages_new(int32_t n_inst);
void sv_planner__stages_free(sv_planner__stages *s);
gboolean sv_planner__stages_instance(sv_planner__stages *s, const struct sv_planner_run_cfg *cfg,
                                     int32_t i, const struct sv_compute_model_cfg *m,
                                     const struct sv_planner_placement_map *map,
                                     uint32_t block_size, uint64_t *blocks, struct sv_msg_cfg *mc,
                                     GError **error);
/* vLLM's CUDA-graph sizes on every stage's latency model (sv_compute_latency_set_cudagraph). */
void sv_planner__stages_cudagraph(sv_planner__stages *s, int32_t i, int64_t max_num_seqs,
                                  int64_t max_num_batched_tokens);

/* A node SSD with the defaults of an absent nodes[].storage (planner/config.c). */
void sv_planner__storage_defaults(struct sv_planner_tier_cfg *t);

/* The cluster network's devices per node: the largest node's devices (sv_planner_instance_devices
 * summed over its instances; docs/cluster-network.md "Layout"). planner/cluster_net.c. */
int32_t sv_planner__devices_per_node(const struct sv_planner_cluster_cfg *c);
/* SV_PLANNER_ERROR_INVALID with the message as formatted; returns FALSE. */
gboolean sv_planner__error(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* Warn (g_warning "<where>.<key>: unknown key, ignored") of each key of `obj` not in the
 * NULL-terminated `known`, in sorted order (planner/config.c). */
void sv_planner__warn_unknown(JsonObject *obj, const char *const *known, const char *where);
/* SV_PLANNER_ERROR_INVALID with "<path>: <message>" (a config path, STYLE.md); returns FALSE. */
gboolean sv_planner__path_error(GError **error, const char *path, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

/* fabric.graph (planner/fabric_graph.c): parse `node` (its path `where`), free, and check the
 * graph a whole config gives (names, links, every NPU reaching every other). */
struct sv_planner_fabric_graph;
gboolean sv_planner__fabric_graph_parse(JsonNode *node, const char *where,
                                        struct sv_planner_fabric_graph **out, GError **error);
void sv_planner__fabric_graph_free(struct sv_planner_fabric_graph *g);
gboolean sv_planner__fabric_graph_check(const struct sv_planner_cluster_cfg *c, GError **error);

/* An instance's host link (PCIe) per direction, decimal GB/s: its node's `pcie.bw_gbps`, else the
 * hardware catalog's `pcie_gbps` (0: not published; the caller decides whether that is an
 * error). FALSE only when the hardware is not in the catalog. */
gboolean sv_planner__pcie_gbps(const struct sv_planner_cluster_cfg *c,
                               const struct sv_planner_instance_cfg *ic, double *out,
                               GError **error);

/* PIM attention offload and local weight loads of a run (planner/pim.c; docs/pim.md). new:
 * NULL when no instance offloads (error unset) or on an error (set). instance: fills the msg's
 * pim / local-load fields and, with attention offload, replaces *blocks by the KV blocks its PIM
 * channels hold. power: the PIM nodes' DRAM power. */
typedef struct sv_planner_pim sv_planner_pim;
sv_planner_pim *sv_planner_pim_new(const struct sv_planner_run_cfg *cfg, GError **error);
void sv_planner_pim_free(sv_planner_pim *p);
gboolean sv_planner_pim_instance(sv_planner_pim *p, int32_t i, const struct sv_compute_model_cfg *m,
                                 uint32_t block_size, uint64_t *blocks, struct sv_msg_cfg *mc,
                                 GError **error);
void sv_planner_pim_power(const sv_planner_pim *p, sv_planner_power *pw);
int64_t sv_planner_pim_channels(const sv_planner_pim *p, int32_t node); /* 0: no PIM */

/* The run's Chakra ET output (planner/et.c; docs/chakra.md "Emitted sets"): new creates the
 * output and writes each replay unit's system JSON, network YAML, remote-memory JSON and
 * comm-group JSON (`tiers`: the run has memory tiers, noted as not expressible); instance sets a
 * msg's ET fields; finish writes iterations.csv and manifest.json. */
typedef struct sv_planner_et sv_planner_et;
sv_planner_et *sv_planner_et_new(const struct sv_planner_run_cfg *cfg,
                                 const sv_planner_cluster_net *cn, gboolean tiers, GError **error);
void sv_planner_et_free(sv_planner_et *e);
sv_msg_et_out *sv_planner_et_out(const sv_planner_et *e);
void sv_planner_et_instance(const sv_planner_et *e, int32_t i, struct sv_msg_cfg *mc);
gboolean sv_planner_et_finish(sv_planner_et *e, GError **error);

/* Configuration precedence, the one place it is decided (planner/admit.c): the run's
 * (command line) value when > 0 (run >= 0 for booleans), then the instance's when >= 0, then the
 * built-in default (TRUE for the booleans: vLLM's default for all three). */
int64_t sv_planner__pick(int64_t run, int64_t inst, int64_t builtin);
gboolean sv_planner__pick_bool(int run, int inst);

/* An instance's engine profile, batch limits and context length as the run resolves them
 * (planner/admit.c; docs/serving.md "Batch limits"). max_num_seqs / max_num_batched_tokens 0:
 * unlimited (LLMServingSim); max_model_len 0: no limit (the model gives none). FALSE with vLLM's
 * reason for a configuration vLLM refuses (max_model_len over the model's, chunked prefill off
 * with a token budget below max_model_len). */
struct sv_planner__limits {
    sv_msg_engine_kind engine;
    int64_t max_num_seqs;
    int64_t max_num_batched_tokens;
    gboolean chunked_prefill;
    int64_t max_model_len;
};
/* Quantisation (planner/quant.c, docs/quantisation.md): read and validate an instance's "dtype"
 * and "kv_cache_dtype" (errors name `where`.key and list the valid words); the instance's model
 * with them applied; the profile variant folder of its dtype (NULL: the default, bf16). */
gboolean sv_planner__read_quant(JsonObject *o, const char *where,
                                struct sv_planner_instance_cfg *ic, GError **error);
gboolean sv_planner__instance_model(const struct sv_planner_run_cfg *cfg,
                                    const struct sv_planner_instance_cfg *ic,
                                    struct sv_compute_model_cfg *m, GError **error);
const char *sv_planner__profile_variant(const struct sv_planner_instance_cfg *ic);
gboolean sv_planner__instance_limits(const struct sv_planner_run_cfg *cfg,
                                     const struct sv_planner_instance_cfg *ic,
                                     const struct sv_compute_model_cfg *m,
                                     struct sv_planner__limits *out, GError **error);
/* sv_planner__instance_limits of every instance (sv_planner_run_check: before outputs open). */
gboolean sv_planner__check_limits(const struct sv_planner_run_cfg *cfg, GError **error);

/* What the run knows of each of its n instances to decide whether it could ever serve a request
 * (docs/serving.md "Rejected requests"): its config, context length (0: none) and KV cache in
 * tokens (blocks x block size). */
struct sv_planner__admit {
    int32_t n;
    const struct sv_planner_instance_cfg *inst;
    const int64_t *max_model_len;
    const uint64_t *kv_tokens;
};
/* Why instance i (not a decode instance) could never serve q: over its context length, or a
 * whole sequence larger than its KV cache or, for a prefill instance, than that of every decode
 * instance of its model; NONE when it can. */
sv_wl_reject sv_planner__admissible(const struct sv_planner__admit *a, int32_t i,
                                    const sv_wl_req *q);
/* The message of a rejection by the instances inst[0..n-1] that serve q (vLLM's words for the
 * context length). */
void sv_planner__reject_message(const struct sv_planner__admit *a, const int32_t *inst, int32_t n,
                                const sv_wl_req *q, sv_wl_reject why, char *buf, size_t size);

/* Conservation checks of a run's end (planner/conserve.c; docs/reliability.md): FALSE with
 * SV_CORE_ERROR_INTERNAL and the numbers when counts kept in different places disagree.
 * Requests: arrived = finished + rejected + held (held: still in an instance or between two,
 * sv_msg_num_held and the PD queue), whether the run finished or stalled. Bytes, once nothing is
 * in flight: the network's sent = delivered, the tier fabric's booked = moved (either may be
 * NULL). */
struct sv_planner__requests {
    uint64_t arrived, finished, rejected, held;
};
gboolean sv_planner__check_requests(const struct sv_planner__requests *r, GError **error);
gboolean sv_planner__check_bytes(const sv_net *net, const sv_memtier_fabric *fabric,
                                 GError **error);

/* planner/tiers.c: one serving group's tier counters added to the run's (the result's sums). */
void sv_planner__tier_stats_add(struct sv_msg_tier_stats *o, const struct sv_msg_tier_stats *ms);

/* The run's timeline (planner/trace.c; docs/trace.md). new: NULL without cfg->trace. cfg: the
 * run's configuration with its observer wrapped (every record still reaches the caller's), or
 * `cfg` itself without a timeline. The rest accept NULL: msg_hooks sets the serving group's
 * on_op, iter_start takes its on_iter_start, kv a finished KV transfer of disaggregation. */
typedef struct sv_planner_trace sv_planner_trace;
sv_planner_trace *sv_planner__trace_new(const struct sv_planner_run_cfg *cfg);
const struct sv_planner_run_cfg *sv_planner__trace_cfg(sv_planner_trace *tr,
                                                       const struct sv_planner_run_cfg *cfg);
void sv_planner__trace_free(sv_planner_trace *tr);
void sv_planner__trace_msg_hooks(sv_planner_trace *tr, struct sv_msg_hooks *hooks);
void sv_planner__trace_iter_start(sv_planner_trace *tr, int32_t instance, sv_time now,
                                  const struct sv_msg_sched_entry *e, guint n);
void sv_planner__trace_kv(sv_planner_trace *tr, uint64_t request_id, int32_t src, int32_t dst,
                          sv_time begin_ns, sv_time end_ns);
/* One KV message of disaggregation (src -> dst NPU of `net`), sent at begin_ns, arrived at
 * end_ns: a slice on each link of its route. */
void sv_planner__trace_kv_message(sv_planner_trace *tr, sv_net *net, uint64_t request_id,
                                  int32_t src, int32_t dst, uint64_t bytes, sv_time begin_ns,
                                  sv_time end_ns);
/* Every message of the cluster network (`cn` may be NULL) on the links it crosses (a tap), and
 * the memory-tier legs that cross them (`fabric` may be NULL). */
void sv_planner__trace_links(sv_planner_trace *tr, const sv_planner_cluster_net *cn,
                             sv_memtier_fabric *fabric);
void sv_planner__pd_set_trace(sv_planner_pd *pd, sv_planner_trace *tr); /* pd may be NULL */

/* Before an instance has run a prefill: its latency model's time for one full prefill chunk
 * (up to max_num_batched_tokens, at most 2048 tokens: LLMServingSim's default budget) from an
 * empty cache, as prompt tokens per ns (planner/router_policies.c). */
double sv_planner__prefill_tput_estimate(sv_compute_latency *lat, int64_t budget);

G_END_DECLS

/* The observer's on_instance_kv for instance i (planner/metrics_observer.c): its KV pool of
 * `blocks` blocks of the block size, in bytes over every layer and KV head of model m, and the
 * limits it runs with (its msg config mc before "0 = unlimited" is applied, the resolved lim). */
void sv_planner__report_kv(const struct sv_planner_run_cfg *cfg, int32_t i,
                           const struct sv_compute_model_cfg *m, uint64_t blocks,
                           const struct sv_msg_cfg *mc, const struct sv_planner__limits *lim,
                           gboolean prefix_caching);

#endif
