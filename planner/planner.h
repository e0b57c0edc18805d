/* servesim planner: the cluster config (LLMServingSim's cluster JSON as it is), one model serving
 * group (msg) per instance, the global router, agentic sessions, and the run loop.
 *
 * Outputs never need the run to keep finished requests: everything a writer needs arrives through
 * struct sv_planner_run_observer (one record per finished request, one sample per iteration, one
 * call per inter-token gap). docs/serving.md describes the model and the options. */
#ifndef SV_PLANNER_H
#define SV_PLANNER_H

#include "compute/compute.h"
#include "core/core.h"
#include "metrics/metrics.h"
#include "msg/msg.h"
#include "network/network.h"
#include "power/power.h"
#include "system/system.h"
#include "workloads/workloads.h"

#include <glib.h>
#include <gmodule.h>
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

/* ---- memory tiers (docs/memory-tiers.md) ---------------------------- */

/* Where a part of an instance lives: the NPU's HBM, the node's host DRAM, CXL device `device`,
 * or the node's SSD (weights only). Same order as memory-tier's tier kinds. */
typedef enum {
    SV_PLANNER_LOC_NPU = 0,
    SV_PLANNER_LOC_CPU,
    SV_PLANNER_LOC_CXL,
    SV_PLANNER_LOC_SSD,
    SV_PLANNER_LOC_COUNT
} sv_planner_loc_kind;

struct sv_planner_loc {
    sv_planner_loc_kind kind;
    int32_t device; /* cxl:N; 0 otherwise */
};
/* "npu", "cpu", "cxl:3", "ssd" (static buffer of the caller, at least 16 bytes). */
const char *sv_planner_loc_name(const struct sv_planner_loc *loc, char *buf, size_t size);

/* One placement rule, kept as parsed: block strings stay unresolved until the model is known
 * (sv_planner_placement_resolve). The default rule has blocks and layer empty. */
struct sv_planner_place_rule {
    char path[192];   /* "cluster.json: nodes[0].instances[0].placement.blocks[2]" */
    char blocks[128]; /* "0-3", "8,9,10" (blocks rules) */
    char layer[32];   /* "embedding", "final_layernorm", "lm_head" (layers rules) */
    struct sv_planner_loc weights, kv, kv_evict;
    gboolean has_weights, has_kv, has_evict;
};

struct sv_planner_placement {
    int32_t n_rules; /* default first (when given), then blocks[], then layers (sorted by name) */
    struct sv_planner_place_rule *rules;
};

/* A memory device of a node or the cluster (cpu_mem, cxl_mem, storage). Sizes in GiB per device,
 * bandwidths in decimal GB/s per device (1 GB/s = 1 byte/ns), latency in ns. */
struct sv_planner_tier_cfg {
    gboolean set; /* given in the config */
    double size_gib, bw_gbps, write_gbps, latency_ns;
    int32_t num_devices, queue_depth; /* queue_depth: SSD only, 0 = unlimited */
    gboolean ideal;                   /* infinite bandwidth, latency only */
};

/* Host <-> NPU link of every NPU of a node, per direction. */
struct sv_planner_pcie_cfg {
    gboolean set;
    double bw_gbps, latency_ns; /* decimal GB/s; 0 = the hardware's default (planner/tiers.c) */
    gboolean ideal;
};

typedef enum { SV_PLANNER_CXL_NODE = 0, SV_PLANNER_CXL_CLUSTER } sv_planner_cxl_scope;

/* Resolved placement of one instance (sv_planner_placement_resolve): where each decoder block's
 * weights and live KV live, the embedding / final norm / lm_head weights, and the one KV
 * eviction target. */
struct sv_planner_placement_map {
    int32_t num_layers;
    struct sv_planner_loc *layer_weights; /* [num_layers] */
    struct sv_planner_loc *layer_kv;      /* [num_layers] */
    struct sv_planner_loc embedding, final_norm, lm_head;
    struct sv_planner_loc kv_evict; /* NPU = none given */
    gboolean any_offload;           /* some weights or live KV off the NPU */
};

/* Run flags of the memory tiers: settable in the cluster config (top level) and on the command
 * line. Strings "" and integers -1 mean unset; run.c resolves command line > cluster config >
 * default once (sv_planner_tier_flags_resolve). */
struct sv_planner_tier_flags {
    char preemption_mode[16];    /* "recompute" | "swap" */
    char prefix_storage[64];     /* "none" | "cpu" | "cxl" | "ssd" | a comma list in lookup order */
    int enable_prefix_sharing;   /* -1, 0, 1 */
    char prefix_pool[16];        /* "instance" | "node" | "cluster" */
    char prefix_write[16];       /* "through" | "back" */
    char prefix_evict[16];       /* "lru" | "fifo" */
    char offload_overlap[16];    /* "prefetch" | "serial" */
    char kv_load_overlap[16];    /* "none" | "layer" */
    char memory_model[16];       /* "finite" | "ideal" (every tier ideal) */
    int64_t prefix_chunk_tokens; /* -1 unset */
};

typedef enum {
    SV_PLANNER_POOL_INSTANCE = 0,
    SV_PLANNER_POOL_NODE,
    SV_PLANNER_POOL_CLUSTER
} sv_planner_pool_scope;

struct sv_planner_tier_run {
    gboolean preempt_swap;
    int32_t n_prefix_storage;              /* 0 = none */
    sv_planner_loc_kind prefix_storage[3]; /* lookup order, each of cpu/cxl/ssd once */
    sv_planner_pool_scope prefix_pool;     /* default: node with sharing, else instance */
    gboolean prefix_write_back, prefix_evict_fifo;
    gboolean offload_serial, kv_load_per_layer, memory_ideal;
    uint32_t prefix_chunk_tokens; /* default 256 */
};

/* Each flag unset with its default marker. */
void sv_planner_tier_flags_init(struct sv_planner_tier_flags *f);
/* Check one flag's value (key = the config key, "preemption_mode"); `where` names it in errors
 * ("cluster.json" or "--preemption-mode"). */
gboolean sv_planner_tier_flag_check(const char *key, const char *value, const char *where,
                                    GError **error);
/* Command line (`run`, may be NULL) > cluster config (`cluster`) > defaults. */
gboolean sv_planner_tier_flags_resolve(const struct sv_planner_tier_flags *run,
                                       const struct sv_planner_tier_flags *cluster,
                                       struct sv_planner_tier_run *out, GError **error);

/* One pipeline stage of an instance whose stages run on different hardware (instances[].stages,
 * a servesim extension: docs/parallelism.md "Heterogeneous pipeline stages"). */
#define SV_PLANNER_MAX_STAGES 32
struct sv_planner_stage_cfg {
    char hardware[64];  /* stages[].hardware (required): a hardware catalog name */
    double mem_gib;     /* stages[].mem_size, GiB; 0: see planner/stages.c stage_instance_cfg */
    double mem_bw_gbps; /* stages[].mem_bw, GB/s; 0: see planner/stages.c stage_instance_cfg */
    int64_t layers;     /* stages[].layers; 0: vLLM's split (sv_msg_pp_split) */
};

/* One instance of LLMServingSim's cluster config (docs/reference/cluster-config.md) with the
 * per-instance runtime overrides resolved against the run's defaults. */
struct sv_planner_instance_cfg {
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
    sv_msg_role role;  /* pd_type: null = BOTH, "prefill", "decode" */
    char dp_group[64]; /* "" = none; instances sharing a name form a data-parallel group */
    char dtype[16];    /* canonical (planner/quant.c, docs/quantisation.md); "" = the model's */
    char kv_cache_dtype[16]; /* canonical; "" = auto (the activation width) */
    /* Runtime overrides; -1 / SV_CFG_UNSET = take the run default. */
    int64_t max_num_seqs;
    int64_t max_num_batched_tokens;
    int64_t long_prefill_token_threshold;
    int64_t block_size;
    int enable_prefix_caching;  /* -1 unset, 0, 1 */
    int enable_chunked_prefill; /* -1 unset, 0, 1 */
    int reserve_full_isl;       /* -1 unset, 0, 1 */
    int64_t max_model_len;      /* vLLM's --max-model-len; <= 0 unset: the model's context */
    /* Memory tiers: placement rules (as parsed) and expert offloading. */
    struct sv_planner_placement placement;
    gboolean expert_offload; /* expert_offload given */
    struct sv_planner_loc expert_loc;
    int32_t cache_experts; /* experts cached per MoE layer per rank; -1 = all (no offload) */
    char expert_path[160];
    /* PIM and weight offload switches (docs/pim.md): -1 unset, 0, 1. */
    int enable_attn_offloading;
    int enable_sub_batch_interleaving;
    int enable_local_offloading;
    double gpu_clock; /* DVFS: instances[].gpu_clock in (0, 1]; 0 = unset (nominal) */
    /* instances[].stages: 0 / NULL = every stage on `hardware`, else pp_size entries (owned,
     * freed by sv_planner_cluster_free). */
    int32_t n_stages;
    struct sv_planner_stage_cfg *stages;
    char stages_where[160]; /* "cluster.json: nodes[0].instances[1].stages", for errors */
    /* instances[].speculative (docs/speculative.md), validated; has_spec FALSE = none. */
    gboolean has_spec;
    struct sv_compute_spec_cfg spec;
    /* instances[].afd (planner/afd.c, docs/afd.md): attention/FFN disaggregation; micro_batches
     * 0 = none. Its FFN devices follow the instance's num_npus on its node. */
    struct sv_msg_afd_cfg afd;
    char afd_where[160]; /* "cluster.json: nodes[0].instances[1].afd", for errors */
    /* afd.ffn_group (docs/afd.md "Several attention instances sharing an FFN group"): members
     * in config order; member 0 (instance afd_group_owner) places the FFN devices. size 0 =
     * none. */
    int32_t afd_group_size, afd_group_rank, afd_group_owner;
};

/* Devices instance `ic` occupies on its node: num_npus, plus its FFN devices under afd (those of
 * a shared FFN group on its first member only). */
int32_t sv_planner_instance_devices(const struct sv_planner_instance_cfg *ic);

/* One level of the cluster network (docs/cluster-network.md): a node's device interconnect
 * ("topology") or the inter-node fabric. */
struct sv_planner_net_level_cfg {
    gboolean set;          /* given in the config */
    sv_net_topo_kind kind; /* ring, fully_connected, switch (nvlink / pcie are switches) */
    double bw_gbps;        /* per link per direction, ASTRA-sim GB/s; 0 = link_bw of the dim */
    double latency_ns;     /* per link; < 0 = link_latency of the dim */
};

struct sv_planner_node_cfg {
    struct sv_planner_net_level_cfg topology; /* nodes[].topology */
    double cpu_mem_gib;
    double cpu_mem_bw_gbps;
    double cpu_mem_latency_ns;
    gboolean cpu_mem_ideal;
    struct sv_planner_tier_cfg cxl;     /* the node's cxl_mem when it overrides the top level */
    struct sv_planner_pcie_cfg pcie;    /* nodes[].pcie */
    struct sv_planner_tier_cfg storage; /* nodes[].storage (SSD) */
    char pim_config[64];                /* cpu_mem.pim_config: PIM device name ("" = none) */
    gboolean has_power;                 /* nodes[].power given (and the model is on) */
    struct sv_power_node_cfg power;     /* nodes[].power (docs/power.md) */
};

struct sv_planner_cluster_cfg {
    double link_bw_gbps;    /* top-level link_bw (ASTRA-sim GB/s) */
    double link_latency_ns; /* top-level link_latency (see link_latency_given) */
    /* link_latency given (scalar or array). Without it every dimension takes the per-hop latency
     * of the instances' hardware (sv_planner_cluster_link_latency_ns). */
    gboolean link_latency_given;
    /* link_bw / link_latency given as arrays: one value per network dimension (dim 0 = devices
     * of a node, dim 1 = nodes); n_link_* = 0 when scalars. */
    int32_t n_link_bw, n_link_latency;
    double link_bw_dims[SV_NET_MAX_DIMS];
    double link_latency_dims[SV_NET_MAX_DIMS];
    struct sv_planner_net_level_cfg fabric; /* top-level "fabric" (between nodes) */
    /* top-level "fabric": {"graph": ...} (planner/fabric_graph.c), NULL when not given */
    struct sv_planner_fabric_graph *fabric_graph;
    char network_model[16]; /* top-level "network_model" ("" = the run's, default flow) */
    /* Disaggregation and routing defaults (docs/disaggregation.md, docs/routing.md); the run's
     * kv_transfer / slo_ttft_ms (command line) win over them. */
    char kv_transfer[16]; /* top-level "kv_transfer": "whole" | "per_layer" ("" = whole) */
    double slo_ttft_ms;   /* top-level "slo_ttft_ms" (0 = none) */
    /* Engine profile (docs/serving.md): top-level "engine" ("" = the run's, default vllm-0.19).
     * vllm_batch_defaults: instances that set neither max_num_seqs nor max_num_batched_tokens get
     * the values `vllm serve` picks for their device (a config naming an engine, the quick form)
     * instead of LLMServingSim's CLI defaults 128 / 2048 (a config in LLMServingSim's format). */
    char engine[16];
    gboolean vllm_batch_defaults;
    int32_t n_nodes;
    struct sv_planner_node_cfg *nodes;
    int32_t n_instances;
    struct sv_planner_instance_cfg *instances;
    struct sv_planner_tier_cfg cxl; /* top-level cxl_mem (per device; num_devices per scope) */
    sv_planner_cxl_scope cxl_scope;
    struct sv_planner_tier_flags tier_flags; /* top-level run flags of the memory tiers */
    /* Every node has a power block: the run feeds one power domain per node (planner/power.c).
     * Otherwise no node's block is kept (LLMServingSim's all-or-nothing rule; a note says so). */
    gboolean power;
    /* Keys of the memory-tier / power / PIM features the run ignores, one line each
     * ("<file>: <key path>: <feature> is not yet supported (ignored)"; NULL-terminated, NULL
     * when none); the caller reports them (docs/reference-configs.md lists the decisions). */
    char **unsupported;
    char where[128]; /* the `where` it was parsed with (the file's name): prefixes later errors */
    /* The hardware catalog instances' `hardware` names resolve in (borrowed; NULL = the built-in
     * catalog): the caller sets it (servesim run --hardware-file). */
    const sv_compute_hw_catalog *hw_catalog;
};

/* Parse LLMServingSim's cluster config. `where` prefixes error messages (usually the file's base
 * name). Unknown keys are g_warning'ed with their path; invalid values fail with the path
 * ("config.json: nodes[0].instances[1].tp_size: must be a positive integer"). */
struct sv_planner_cluster_cfg *sv_planner_cluster_from_json(JsonNode *root, const char *where,
                                                            GError **error);
struct sv_planner_cluster_cfg *sv_planner_cluster_load(const char *path, GError **error);
/* A one-node, one-instance cluster (the quick form). mem_size from the hardware catalog. */
struct sv_planner_cluster_cfg *sv_planner_cluster_single(const char *model, const char *hardware,
                                                         int tp, GError **error);
/* The same with the hardware looked up in `catalog` (NULL = built-in), which the cluster keeps
 * (borrowed) as its hw_catalog. Memory: the catalog's mem_gib (GiB, as a config's mem_size);
 * link: its link_bw_gbps (decimal GB/s, converted to the config's ASTRA-sim GB/s) and, as no
 * link_latency is given, its per-hop link_latency_ns. sv_planner_cluster_quick with one
 * instance. */
struct sv_planner_cluster_cfg *sv_planner_cluster_single_with(const char *model,
                                                              const char *hardware, int tp,
                                                              const sv_compute_hw_catalog *catalog,
                                                              GError **error);

/* The quick form's cluster shape (servesim run --model --hardware --tp --pp --instances --pd
 * --decode-hardware --decode-tp; planner/quick.c, docs/serving.md "Quick form"). Zero = default. */
struct sv_planner_quick_cfg {
    const char *model;
    const char *hardware;    /* every instance's, or the prefill instances' with prefill > 0 */
    int32_t tp, pp;          /* per instance; 0 = 1 */
    int32_t instances;       /* without prefill/decode: identical combined instances (0 = 1); with
                                them: must be prefill + decode or 0 */
    int32_t prefill, decode; /* --pd P:D: P prefill and D decode instances (both >= 1), or 0:0 */
    const char *decode_hardware; /* the decode instances' (NULL = hardware) */
    int32_t decode_tp;           /* the decode instances' TP (0 = tp) */
};
/* Devices per node of the quick form: an HGX / DGX board of 8 accelerators (NVIDIA DGX H100 /
 * DGX A100 user guides: 8 GPUs per system). */
#define SV_PLANNER_QUICK_NODE_DEVICES 8
/* Build the cluster of a quick form: instances in order (prefill ones first) fill nodes of
 * SV_PLANNER_QUICK_NODE_DEVICES devices of one hardware kind (one that does not fit in what is
 * left, or is on other hardware, opens the next node; one larger than a node gets a node of its
 * own size); the nodes' devices on the hardware's scale-up link (FullyConnected, as
 * the one-instance form and LLMServingSim's config_builder), the nodes joined by a scale-out NIC
 * per device (planner/quick.c cites the rates). Errors name the flags ("--pd: ..."). */
struct sv_planner_cluster_cfg *sv_planner_cluster_quick(const struct sv_planner_quick_cfg *q,
                                                        const sv_compute_hw_catalog *catalog,
                                                        GError **error);
/* Per-hop latency (ns) of network dimension `dim` (0 = the devices of a node, 1 = the nodes):
 * the config's link_latency (its dim-th value when an array), else the largest link_latency_ns
 * the hardware catalog gives the instances' hardware (0 when none is in the catalog). A node's
 * topology or the fabric may still give its own latency_ns (docs/cluster-network.md). */
double sv_planner_cluster_link_latency_ns(const struct sv_planner_cluster_cfg *c, int dim);
void sv_planner_cluster_free(struct sv_planner_cluster_cfg *cfg);

/* The CXL devices instance `inst` reaches: its node's cxl_mem, else the top level's (NULL when
 * none is configured). */
const struct sv_planner_tier_cfg *sv_planner_cluster_cxl(const struct sv_planner_cluster_cfg *c,
                                                         int32_t node);
/* Resolve instance `ic`'s placement for a model of `num_layers` decoder blocks: every rule's
 * block list against the model ("...placement.blocks[2].blocks: block 40 out of range (model has
 * 32)"). Fills `out` (sv_planner_placement_map_clear frees it). */
gboolean sv_planner_placement_resolve(const struct sv_planner_instance_cfg *ic, int32_t num_layers,
                                      struct sv_planner_placement_map *out, GError **error);
void sv_planner_placement_map_clear(struct sv_planner_placement_map *map);

/* planner/tiers.c: where an instance's weight bytes live under its placement. */
#define SV_PLANNER_MAX_CXL 64
struct sv_planner_weight_split {
    uint64_t npu_bytes; /* HBM weights of one rank of the fullest pipeline stage */
    /* Off-device weights, all ranks of the instance together (what each tier holds). */
    uint64_t cpu_bytes, ssd_bytes, cxl_bytes[SV_PLANNER_MAX_CXL];
    uint64_t off_bytes; /* their sum */
};
void sv_planner_weight_split(const struct sv_compute_model_cfg *m, int32_t tp, int32_t pp,
                             const struct sv_planner_placement_map *map,
                             struct sv_planner_weight_split *out);
/* KV blocks per rank of instance `ic` (LLMServingSim memory_model.py): trunc(mem_size GiB x
 * mem_util) - HBM weights, in blocks of block_size tokens of every layer of a stage. HBM weights
 * are the NPU-resident parts only when `map` moves some off the NPU (else the whole model's share,
 * as without tiers). */
gboolean sv_planner_instance_kv_blocks(const struct sv_planner_instance_cfg *ic,
                                       const struct sv_compute_model_cfg *m,
                                       const struct sv_planner_placement_map *map,
                                       uint32_t block_size, uint64_t *blocks, GError **error);

/* The memory tiers of a run (planner/tiers.c): tiers, fabric, prefix pools and hierarchies. */
typedef struct sv_planner_tiers sv_planner_tiers;
/* Does the run use a tier (prefix storage, swap, weights / KV / experts off the NPU)? Without,
 * sv_planner_run builds nothing and its outputs are those of a run without tiers. */
gboolean sv_planner_tiers_wanted(const struct sv_planner_cluster_cfg *c,
                                 const struct sv_planner_tier_run *run);
/* Node and cluster tiers and the fabric (on `net`'s solver when it is a flow network, else a
 * standalone one). `c` is borrowed. */
sv_planner_tiers *sv_planner_tiers_new(sv_engine *eng, sv_net *net_or_null,
                                       const struct sv_planner_cluster_cfg *c,
                                       const struct sv_planner_tier_run *run, GError **error);
/* Instance i's HBM ledger and the PCIe links of its NPUs (first_device..); called by
 * sv_planner_tiers_instance when not before (a cluster pool needs every node's NPUs first). */
gboolean sv_planner_tiers_npus(sv_planner_tiers *t, int32_t i, int32_t first_device,
                               GError **error);
/* Instance i: its HBM ledger, PCIe links of its NPUs (first_device..), weights charged to their
 * tiers, streaming / live KV / swap routes, prefix hierarchy; caps *kv_blocks (the HBM-sized
 * pool) by the free space of the tiers that hold live KV (kv_loc) and charges them; fills `out`
 * (borrowed pointers, valid until sv_planner_tiers_free). Errors name the placement rule or the
 * flag. */
gboolean sv_planner_tiers_instance(sv_planner_tiers *t, int32_t i,
                                   const struct sv_compute_model_cfg *m,
                                   const struct sv_planner_placement_map *map, int32_t first_device,
                                   uint32_t block_size, uint64_t *kv_blocks,
                                   struct sv_msg_tier_cfg *out, GError **error);
/* The KV manager of instance i (created after sv_planner_tiers_instance, which may lower
 * *kv_blocks to what the tiers holding live KV can take), for the HBM usage view. */
void sv_planner_tiers_set_kv(sv_planner_tiers *t, int32_t i, sv_memtier_kv_manager *kv);
/* Sums per tier kind (npu = every instance's HBM: weights + used and cached-free KV). */
struct sv_planner_tier_usage {
    uint64_t used[SV_MEMTIER_KIND_COUNT], capacity[SV_MEMTIER_KIND_COUNT];
    uint64_t hit_tokens[SV_MEMTIER_KIND_COUNT], lookup_tokens[SV_MEMTIER_KIND_COUNT];
};
void sv_planner_tiers_sample(sv_planner_tiers *t, sv_time now, struct sv_planner_tier_usage *out);
struct sv_planner_tier_stats {
    gboolean present[SV_MEMTIER_KIND_COUNT];
    struct sv_memtier_tier_stats kind[SV_MEMTIER_KIND_COUNT]; /* summed over the tiers of a kind */
    uint64_t used[SV_MEMTIER_KIND_COUNT];                     /* at the end */
    uint64_t used_by[SV_MEMTIER_KIND_COUNT][SV_MEMTIER_OWNER_COUNT];
    uint64_t bytes_booked; /* every fabric transfer */
    /* The serving groups' side, summed over instances (sv_msg_get_tier_stats): swap and expert
     * cache figures; `swap` = the run preempts by swapping, `expert_cache` = an instance offloads
     * experts (summary.json's "swap" / "expert_cache" only then). */
    struct sv_msg_tier_stats msg;
    gboolean swap, expert_cache;
};
void sv_planner_tiers_get_stats(sv_planner_tiers *t, sv_time now,
                                struct sv_planner_tier_stats *out);
void sv_planner_tiers_free(sv_planner_tiers *t); /* accepts NULL; after the msgs */
/* The fabric the tiers' transfers run on (owned by t). */
sv_memtier_fabric *sv_planner_tiers_fabric(sv_planner_tiers *t);

/* ---- routers -------------------------------------------------------------------------------- */

/* Router policies as registry tables (kind SV_REGISTRY_ROUTER). The built-ins "least_load"
 * ("load"), "round_robin" ("rr") and "random" ("rand") are such tables; planner/planner.h
 * explains how a plugin adds one. For each arriving request the run calls `route` with every
 * instance's state, in instance order, and sends the request to the index returned. */
struct sv_planner_router_inst {
    int32_t index;
    uint32_t waiting;       /* requests queued */
    uint32_t running;       /* requests admitted */
    int64_t waiting_tokens; /* tokens the queue still has to compute */
    double kv_usage;        /* used / total KV blocks */
    /* For prefix- and SLO-aware policies (planner/router_policies.c, docs/routing.md). */
    const sv_memtier_kv_manager *kv; /* the instance's KV pool: sv_planner_prefix_match() */
    sv_time step_remaining_ns;       /* estimated rest of the iteration in flight (0 when idle) */
    double prefill_tokens_per_ns; /* recent prefill throughput (prompt tokens / iteration time) */
};

struct sv_planner_router_req {
    /* The request record as the workload gave it (ids, token counts, the prompt as the KV cache
     * keys it: token ids or hash ids, either may be absent), borrowed for the call. A decode
     * choice (PD) sees a record with the ids, arrival and token counts only. */
    const sv_wl_req *req;
    const char *model;   /* the model the request names (NULL: any) */
    sv_time slo_ttft_ns; /* --slo-ttft-ms (0 = none) */
};

struct sv_planner_router_ops {
    unsigned api_version; /* SV_REGISTRY_API_VERSION */
    /* Optional per-run state. `param` is the text after "name:" (NULL when none); `rng` the
     * run's stream "router/random" (the only randomness a router may use). */
    void *(*create)(int32_t n_instances, const char *param, sv_rng *rng, GError **error);
    void (*destroy)(void *state);
    /* Return an index in [0, n); anything else stops the run with an error. */
    int32_t (*route)(void *state, const struct sv_planner_router_req *req, int32_t n,
                     const struct sv_planner_router_inst *inst);
};
gboolean sv_planner_router_register_builtins(sv_registry *reg, GError **error);

/* planner/router_policies.c: "prefix_aware" (the instance holding the longest cached prefix of
 * the prompt, ties to least load) and "slo_aware" (param: TTFT target in ms, else the request's
 * slo_ttft_ns: the least-loaded instance whose estimated TTFT meets the target, else the fastest);
 * registered by sv_planner_router_register_builtins. docs/routing.md. */
gboolean sv_planner_router_register_policies(sv_registry *reg, GError **error);
/* Longest prefix of the request's prompt cached in `kv`, in tokens (block-aligned, at most
 * floor((input - 1) / block) blocks as vLLM looks up). Changes nothing in the pool and counts no
 * query. 0 when the request has no token or hash ids or caching is off. */
int64_t sv_planner_prefix_match(const sv_memtier_kv_manager *kv,
                                const struct sv_planner_router_req *req);
/* Estimated TTFT of `req` on `inst`: step remainder + (queued tokens + the prompt) / recent
 * prefill throughput; G_MAXINT64 when the throughput is unknown and work is queued. */
sv_time sv_planner_ttft_estimate(const struct sv_planner_router_inst *inst,
                                 const struct sv_planner_router_req *req);

/* A registry holding every built-in policy: routers, batch schedulers, KV eviction, expert
 * routing. Plugins (planner/planner.h) add to it. */
sv_registry *sv_planner_registry_new(GError **error);

/* ---- prefill/decode disaggregation (planner/pd.c, docs/disaggregation.md) ------------------- */

/* How a request's KV leaves the prefill instance: "whole" after its prefill, or "per_layer": one
 * message per layer, each sent as soon as the final prefill iteration has produced that layer. */
typedef enum {
    SV_PLANNER_PD_KV_WHOLE = 0,
    SV_PLANNER_PD_KV_PER_LAYER,
} sv_planner_pd_kv_mode;
gboolean sv_planner_pd_kv_mode_parse(const char *name, sv_planner_pd_kv_mode *out, GError **error);

/* One instance as the disaggregation layer sees it. */
struct sv_planner_pd_instance {
    sv_msg *msg;
    sv_msg_role role;
    const char *model; /* a decode instance must serve the prefill instance's model */
    int32_t tp, pp;
    int64_t num_layers;
    uint64_t kv_bytes_per_token_layer; /* K and V of one token in one layer, all KV heads */
    const int32_t *npus;   /* tp x pp NPU ids in the network; rank = stage x tp + tp rank */
    int64_t max_model_len; /* context length (0: none): a decode instance takes no longer one */
};

/* The global router's decode choice: `cand` holds the decode instances serving the model whose
 * pool can take the request's KV now (n >= 1); return an index into it. */
typedef int32_t (*sv_planner_pd_pick_fn)(void *ctx, const struct sv_wl_outcome *req,
                                         const int32_t *cand, int32_t n);

struct sv_planner_pd_cfg {
    sv_engine *eng;
    sv_net *net; /* NPU ids as in sv_planner_pd_instance.npus */
    sv_planner_pd_kv_mode kv_mode;
    int32_t n_instances;
    const struct sv_planner_pd_instance *inst; /* copied; npus arrays borrowed */
    sv_planner_pd_pick_fn pick;                /* NULL = the first candidate */
    void *pick_ctx;
};

typedef struct sv_planner_pd sv_planner_pd;
sv_planner_pd *sv_planner_pd_new(const struct sv_planner_pd_cfg *cfg, GError **error);
/* Run-scope ET output (--et-scope run): every KV message is also written as a send on the
 * prefill device's file and a receive on the decode device's, the decode side's next batch
 * waiting for it (borrowed; NULL = none). */
void sv_planner_pd_set_et(sv_planner_pd *pd, sv_msg_et_out *et);
void sv_planner_pd_free(sv_planner_pd *pd); /* accepts NULL; before the msgs and the network */
/* The msg hook (sv_msg_hooks.on_prefill_done) of every prefill instance. */
void sv_planner_pd_prefill_done(sv_planner_pd *pd, int32_t instance, sv_msg_handoff *h);
/* The msg hook on_prefill_launch (per_layer only; ignored otherwise): the breakpoint comes when
 * the iteration completing the prompt starts, so each layer's KV leaves as it is produced. */
void sv_planner_pd_prefill_launch(sv_planner_pd *pd, int32_t instance, sv_msg_handoff *h,
                                  const struct sv_msg_prefill_launch *l);
/* A decode instance may have freed blocks (after its iteration commits): retry the handoffs
 * that wait for decode memory. */
void sv_planner_pd_decode_progress(sv_planner_pd *pd, int32_t instance);
/* Requests whose KV is reserved on / travelling to decode instance `instance`. */
uint32_t sv_planner_pd_incoming(const sv_planner_pd *pd, int32_t instance);
/* Handoffs waiting for decode memory (back-pressure). */
uint32_t sv_planner_pd_num_waiting(const sv_planner_pd *pd);
/* Error raised inside an event (no decode instance for a model, a sequence that never fits). */
const GError *sv_planner_pd_error(const sv_planner_pd *pd);
/* The cluster has a prefill or a decode instance (requests.csv's disaggregation columns). */
gboolean sv_planner_cluster_is_disaggregated(const struct sv_planner_cluster_cfg *cl);

/* Bytes of a `tokens`-token prompt's KV that prefill rank `src_rank` sends to decode rank
 * `dst_rank`: layers split over PP stages (even, remainder to the earlier stages, vLLM), KV heads
 * over TP ranks; the product of the layer and head-range overlaps. */
uint64_t sv_planner_pd_pair_bytes(const struct sv_planner_pd_instance *p, int32_t src_rank,
                                  const struct sv_planner_pd_instance *d, int32_t dst_rank,
                                  int64_t tokens);

struct sv_planner_pd_stats {
    uint64_t handoffs;   /* requests whose KV moved */
    uint64_t messages;   /* network messages (rank pairs x layers) */
    uint64_t bytes;      /* KV bytes moved */
    uint64_t kv_waits;   /* handoffs that waited for decode memory */
    sv_time kv_wait_ns;  /* total wait for decode memory */
    sv_time transfer_ns; /* total reservation -> KV arrived */
    sv_time max_transfer_ns;
    uint32_t max_waiting; /* most handoffs waiting at once */
};
void sv_planner_pd_get_stats(const sv_planner_pd *pd, struct sv_planner_pd_stats *out);

/* ---- power and energy (planner/power.c; docs/power.md) --------------------------------------
 *
 * With a power block on every node (cluster cfg `power`), one sv_power domain per node, fed by
 * the serving groups' iterations: each device of an instance is busy from the launch of an
 * iteration to its commit; each iteration moves weights + KV read + KV written through DRAM; the
 * network's messages and the memory tiers' transfers are charged as they arrive (links,
 * switches, NICs, host DRAM, storage; sv_planner_power_watch). Devices run at their instance's
 * DVFS clock; a node without `npu.<hardware>` takes the hardware catalog's power states.
 * Energy is attributed to requests per interval between state changes of a node: an interval's
 * energy goes to the iterations running on the node then, by their devices, and within an
 * iteration to its requests by their share of its scheduled tokens; an interval with no iteration
 * running (idle, standby) stays unattributed. Per-request energies + unattributed = total. */

/* The progress watchdog's default bound (docs/reliability.md, "Idle time and progress"). */
#define SV_PLANNER_WATCHDOG_EVENTS (UINT64_C(1) << 24)

/* power.csv's row spacing (the timeseries' default tick). */
#define SV_PLANNER_POWER_TICK_NS ((sv_time)1000000000)

/* One power.csv row: averages over (previous row's t, t]; the last row ends at the run's end. */
struct sv_planner_power_row {
    sv_time t_ns;
    int32_t n_nodes;
    const double *w;      /* [n_nodes x SV_POWER_N_COMPONENTS], W */
    const double *node_j; /* [n_nodes], cumulative J at t */
    double total_w, total_j;
};

/* summary.json's "energy" (sv_planner_run_result.energy). */
struct sv_planner_energy {
    double by_component_j[SV_POWER_N_COMPONENTS];
    double npu_state_j[SV_POWER_N_STATES]; /* the npu component by device state */
    double total_j;
    double attributed_j;   /* given to requests (requests.csv energy_j) */
    double unattributed_j; /* no iteration running on the node: idle and standby */
    /* Traffic charged to each component (docs/power.md "Traffic"): energy = bytes x 8 x the
     * node's pJ/bit. DRAM: iterations' estimate + host DRAM / CXL tier legs; link: bytes x links
     * crossed inside a node; switch: bytes x switches crossed inside a node; nic: bytes x NICs
     * (a message between nodes counts at both ends); storage: SSD tier legs. */
    double dram_bytes;
    double link_bytes, switch_bytes, nic_bytes, storage_bytes;
};

typedef struct sv_planner_power sv_planner_power;
/* Domains for every node of `c` (c->power must be set) with each instance's devices; errors name
 * the node's power block and the hardware with no npu entry. `row` (may be NULL) gets power.csv's
 * rows in time order. */
sv_planner_power *sv_planner_power_new(const struct sv_planner_cluster_cfg *c,
                                       void (*row)(void *ctx, const struct sv_planner_power_row *r),
                                       void *row_ctx, GError **error);
void sv_planner_power_free(sv_planner_power *pw);
/* Traffic from the run (docs/power.md "Traffic"): every message of `net` (its delivery
 * observer) and every transfer leg of `fabric` (its observer) is charged, when it completes, to
 * the components of the nodes it crosses: links and switches inside a node (the node of the
 * sending NPU), the NICs of both ends between nodes, DRAM for host DRAM and CXL ends, storage for
 * SSD ends. Either may be NULL. Call once, before the engine runs; the observers stay set. */
void sv_planner_power_watch(sv_planner_power *pw, sv_net *net, sv_memtier_fabric *fabric);
/* DVFS: instance i's devices run at `clock` in (0, 1] from t = 0 (sv_power_device_set_clock). */
void sv_planner_power_set_clock(sv_planner_power *pw, int32_t i, double clock);
struct sv_planner_run_cfg;
/* DVFS: instance `ic`'s clock (the command line's cfg->gpu_clock when set, else the config's
 * instances[].gpu_clock, else 1), applied to its latency model `lat` with the catalog's figures
 * of its hardware (sv_compute_latency_set_clock; NULL when not in the catalog). Returns it. */
double sv_planner_apply_gpu_clock(const struct sv_planner_run_cfg *cfg,
                                  const struct sv_planner_instance_cfg *ic,
                                  sv_compute_latency *lat);
/* Instance i's DRAM traffic per iteration: weight_bytes (every rank's) + kv_bytes_per_token x
 * (KV history read + tokens written) of each request. */
void sv_planner_power_set_traffic(sv_planner_power *pw, int32_t i, uint64_t weight_bytes,
                                  uint64_t kv_bytes_per_token);
/* An afd instance i (docs/afd.md "Power"): after sv_planner_power_set_traffic, its DRAM
 * estimate reads the FFN group's weights (model m) once per micro-batch, and `afd` (the msg
 * config the planner built) reports its FFN ranks' operators to the power model. */
void sv_planner_power_afd(sv_planner_power *pw, int32_t i, const struct sv_compute_model_cfg *m,
                          struct sv_msg_afd_run *afd);
/* msg's on_iter_start and on_iter_done of instance i (in order per instance). */
void sv_planner_power_iter_start(sv_planner_power *pw, int32_t i, sv_time now,
                                 const struct sv_msg_sched_entry *e, guint n);
void sv_planner_power_iter_done(sv_planner_power *pw, int32_t i, sv_time now);
/* A node whose DRAM is PIM (docs/pim.md): `channels` DIMMs of idle_w each replace the power
 * block's DRAM DIMMs, and each channel computing draws active_w. */
void sv_planner_power_set_pim(sv_planner_power *pw, int32_t node, int64_t channels, double idle_w,
                              double active_w);
/* Instance i's oldest iteration in flight used its PIM channels for busy_ns (summed over
 * channels): (active - idle) x busy_ns is charged to the node's DRAM at its end, its own. */
void sv_planner_power_iter_pim(sv_planner_power *pw, int32_t i, double busy_ns);
/* Energy attributed to a request so far (J), forgotten after the call. */
double sv_planner_power_request_take(sv_planner_power *pw, uint64_t request_id);
/* The end of the run: the last interval (unattributed), the last rows, the totals. */
void sv_planner_power_finish(sv_planner_power *pw, sv_time end_ns, struct sv_planner_energy *out);

/* ---- outputs -------------------------------------------------------------------------------- */

/* Every callback may be NULL. Records are passed by pointer, valid during the call only.
 * on_request: one finished request, its outcome as the serving group filled it (workloads.h:
 * the requests.csv row; a session's call is request request_id - turn's call `turn`).
 * on_iteration: one committed iteration of one instance, as msg reports it (timeseries.csv is
 * aggregated from these; running / waiting / kv_usage are the instance's after the commit). */
/* What an instance runs with once the command line, its config and the built-in defaults are
 * resolved (precedence in struct sv_planner_run_cfg; docs/serving.md): summary.json "instances" and
 * run.json record it. vLLM's names; 0 for max_num_seqs / max_num_batched_tokens is LLMServingSim's
 * "unlimited", 0 for long_prefill_token_threshold "no cap", 0 for max_model_len "none". */
struct sv_planner_instance_limits {
    const char *engine; /* "vllm-0.19", ... */
    int64_t max_num_seqs;
    int64_t max_num_batched_tokens;
    int64_t long_prefill_token_threshold;
    int64_t max_model_len;
    gboolean enable_chunked_prefill;
    gboolean enable_prefix_caching;
    /* Attention/FFN disaggregation: whether the FFN group shards experts (EP) or runs one TP
     * group (docs/afd.md "ffn_ep", resolved from the model when the config leaves it out). */
    gboolean afd_ffn_ep;
};

struct sv_planner_run_observer {
    void (*on_request)(void *ctx, const struct sv_wl_outcome *rec);
    void (*on_iteration)(void *ctx, const struct sv_msg_iter_done *it);
    /* Each output token after the first: its time and the gap since the previous token (ITL). */
    void (*on_token_gap)(void *ctx, uint64_t request_id, sv_time t_ns, sv_time gap_ns);
    /* Once per instance as it is set up (config order, before any request): what computes its
     * operator latency: "roofline", or "profile:" and the bundle relative to profiles_root
     * ("profile:RTXPRO6000/meta-llama/Llama-3.1-8B/bf16"), so that outputs never depend on
     * where the bundles are installed. */
    void (*on_instance)(void *ctx, int32_t instance, const char *latency_source);
    /* Memory tiers (only when the run uses one): usage after each committed iteration. */
    void (*on_tiers)(void *ctx, sv_time t_ns, const struct sv_planner_tier_usage *u);
    /* Power model (only when the cluster config turns it on): power.csv's rows, in time order.
     * on_request's records then carry energy_j and arrive after their iteration's energy is
     * attributed (at the iteration's end instead of inside it). */
    void (*on_power)(void *ctx, const struct sv_planner_power_row *r);
    void *ctx;
    /* Once per instance when its KV pool is built (config order, before any request): the
     * instance's config and its pool, kv_blocks of kv_block_size tokens, kv_bytes in all (every
     * layer and KV head; summary.json "instances"). Appended last: observers that zero their
     * record keep working. */
    void (*on_instance_kv)(void *ctx, int32_t instance, const struct sv_planner_instance_cfg *ic,
                           uint64_t kv_blocks, uint32_t kv_block_size, uint64_t kv_bytes,
                           const struct sv_planner_instance_limits *limits);
    /* At the end of a run, once per speculative instance (config order): its spec-decode
     * counters and method (docs/speculative.md; summary.json "speculative_decoding"). */
    void (*on_spec)(void *ctx, int32_t instance, const char *method,
                    const struct sv_msg_spec_stats *s);
};

/* Fill `obs` so that a run feeds the output writer `m` (planner/metrics_observer.c): on_request
 * -> sv_metrics_request_add (the first error is kept and returned by sv_metrics_finish),
 * on_iteration -> sv_metrics_tokens + sv_metrics_sample at the iteration's end, on_token_gap ->
 * sv_metrics_itl. */
void sv_planner_metrics_observer_init(sv_metrics *m, struct sv_planner_run_observer *obs);

/* ---- run ------------------------------------------------------------------------------------ */

typedef enum {
    SV_PLANNER_RUN_LATENCY_AUTO =
        0, /* profile when a bundle matches under profiles_root, else roofline */
    SV_PLANNER_RUN_LATENCY_PROFILE,
    SV_PLANNER_RUN_LATENCY_ROOFLINE,
} sv_planner_run_latency;

#define SV_PLANNER_MAX_IDLE_TAIL_NS ((sv_time)1000000 * 1000000000) /* 10^6 s */

struct sv_planner_run_cfg {
    const struct sv_planner_cluster_cfg *cluster;
    sv_wl_source *workload; /* pulled lazily */
    /* LLMServingSim profiles/ folder; NULL = none: every instance uses the roofline. The caller
     * names it (the CLI: --profiles or SERVESIM_PROFILES); the run never guesses one from the
     * working directory, so results do not depend on where it is started. */
    const char *profiles_root;
    const char *model_dir; /* extra model configs (NULL) */
    sv_planner_run_latency latency;
    sv_msg_sched_kind scheduler;
    /* Policies by name, looked up in `registry` (NULL: the built-ins only). A scheduler name wins
     * over the enum above; NULL names take "least_load" (router), the enum's (scheduler) or "lru"
     * (kv_eviction). Routers exist only as registry tables (planner/router*.c). */
    const sv_registry *registry;
    const char *router_name;
    const char *scheduler_name;
    const char *kv_eviction;
    /* Parallelism (docs/parallelism.md): network timing model ("flow" when NULL), expert routing
     * policy name (registry kind expert_routing, or "hist:W0,..."; "balanced" when NULL), MoE
     * exchange ("allgather_reducescatter" when NULL, or "alltoall"). */
    const char *network_model;
    const char *expert_routing;
    const char *moe_comm;
    /* Every collective message through the network (FALSE: docs/collectives.md "Closed form"). */
    gboolean collectives_with_messages;
    /* Disaggregation and routing (docs/disaggregation.md, docs/routing.md): how KV moves from a
     * prefill to a decode instance ("whole" when NULL, or "per_layer"), and the TTFT target the
     * slo_aware router aims at (ms, <= 0 = none). */
    const char *kv_transfer;
    double slo_ttft_ms;
    /* Host-side per-step time of every instance (msg/host.c; default: the fitted model). */
    sv_msg_host_model host_model;
    /* Engine profile by name (--engine; NULL: the config's "engine", else vllm-0.19) and the
     * optional frontend term (zero = off); msg/engine.c, docs/serving.md. */
    const char *engine;
    struct sv_msg_frontend frontend;
    /* DVFS (--gpu-clock; docs/power.md): every instance's accelerators at this fraction of their
     * nominal clock, in (0, 1]; 0 = unset (instances[].gpu_clock, else 1). */
    double gpu_clock;
    uint64_t seed;
    const char *emit_et_dir; /* NULL = none */
    /* "iteration" (default: a set of files per batch) or "run" (one file per NPU for the run,
     * KV transfers included); docs/chakra.md "Emitted sets". */
    const char *et_scope;
    /* Build every iteration per layer and operator, never folded (docs/parallelism.md "Folded
     * iterations"): the same results, slower; for checking the folded form (--per-layer-dag). */
    gboolean per_layer_dag;
    /* Idle time simulated after the last event of a finished run (0 = none, at most
     * SV_PLANNER_MAX_IDLE_TAIL_NS): the energy and power.csv cover it (docs/power.md). */
    sv_time idle_tail_ns;
    /* Progress watchdog (docs/reliability.md, "Idle time and progress"): the run stops with a
     * diagnosis when this many engine events run without a request moving (an arrival, a prompt
     * token computed for the first time, an output token, a request finishing). 0 =
     * SV_PLANNER_WATCHDOG_EVENTS; tests lower it. */
    uint64_t watchdog_events;
    /* PIM attention offload (docs/pim.md): where cpu_mem.pim_config names are looked up
     * (<dir>/<name>.ini, first match; NULL-terminated, NULL = none), the attention model
     * ("linear" | "bandwidth"; NULL = linear where the device has LLMServingSim's coefficients,
     * else bandwidth), the bandwidth model's PIM compute rate per channel (FLOP/s, 0 = not a
     * bound) and the placement policy ("greedy" when NULL). */
    const char *const *pim_dirs;
    const char *pim_model;
    double pim_flops;
    const char *pim_placement;
    /* Command-line values. Precedence, resolved once per instance by the run: these, then the
     * cluster config's per-instance values, then the built-in defaults (vLLM's). The cluster
     * config is never modified. Integers: > 0 = set, 0 = unset; long_prefill_token_threshold
     * also -1 = no cap (overriding the config's). Booleans: -1 = unset, 0 or 1 = set. */
    int64_t max_num_seqs;
    int64_t max_num_batched_tokens;
    int64_t long_prefill_token_threshold;
    int64_t block_size;
    int64_t max_model_len; /* > 0 set (--max-model-len) */
    int enable_prefix_caching;
    int enable_chunked_prefill;
    int reserve_full_isl;
    int enable_attn_offloading; /* PIM and weight offload switches (docs/pim.md) */
    int enable_sub_batch_interleaving;
    int enable_local_offloading;
    /* --speculative METHOD:K:A / draft:MODEL:K:A (NULL = none): every instance speculates so,
     * whatever its config's `speculative` says (docs/speculative.md). */
    const char *speculative;
    /* Memory-tier run flags from the command line (NULL = none given); same precedence. */
    const struct sv_planner_tier_flags *tier_flags;
    const struct sv_planner_run_observer *observer;
    /* Progress, for a display only: called about every `progress_every` finished requests
     * (0 = never). The final counts are in struct sv_planner_run_result. */
    void (*progress)(void *ctx, sv_time now_ns, uint64_t done, uint64_t submitted);
    /* With memory tiers only: their usage, called just before each `progress` (same ctx). */
    void (*progress_tiers)(void *ctx, const struct sv_planner_tier_usage *u);
    uint64_t progress_every;
    void *progress_ctx;
    /* Display tick (sv_engine_set_tick): called every `progress_tick_events` engine events (0 =
     * never) with the run's engine and progress_ctx, to redraw on time and to say when nothing
     * moves (sv_engine_events_since_progress, sv_engine_diagnose: what each instance holds). */
    sv_engine_tick_fn progress_tick;
    uint64_t progress_tick_events;
    /* A request vLLM would answer with an error (over the context length, or a sequence no
     * instance's KV cache can ever hold) is recorded as rejected and the run goes on (docs/
     * serving.md "Rejected requests"); strict: it ends the run with that error instead. */
    gboolean strict;
    /* Read before every event (NULL: none): once nonzero the run stops with
     * SV_CORE_ERROR_INTERRUPTED and frees what it built, as on any error (sv_engine_set_interrupt;
     * the CLI's signal handler sets it). */
    const volatile sig_atomic_t *interrupt;
    /* A timeline (--trace; docs/trace.md): the run writes its events there as they happen
     * (planner/trace.c; NULL = none). Nothing of the model depends on it. */
    sv_metrics_trace *trace;
};

/* Every option unset (zero, and -1 for the tri-state switches), as `servesim run` passes the
 * flags it was not given. An embedder starts from this, then sets cluster, workload and what
 * else it wants (docs/embedding.md). */
static inline void sv_planner_run_cfg_init(struct sv_planner_run_cfg *cfg)
{
    *cfg = (struct sv_planner_run_cfg){
        .enable_prefix_caching = -1,
        .enable_chunked_prefill = -1,
        .reserve_full_isl = -1,
        .enable_attn_offloading = -1,
        .enable_sub_batch_interleaving = -1,
        .enable_local_offloading = -1,
    };
}

struct sv_planner_run_result {
    uint64_t requests;  /* finished */
    uint64_t submitted; /* arrived and handed to an instance */
    /* Arrived and rejected (never handed to an instance; arrived = submitted + rejected), by
     * sv_wl_reject ([0] unused), and the first one's message ("" when none). Under `strict` the
     * one rejection that ended the run is counted. */
    uint64_t rejected;
    uint64_t rejected_by_reason[SV_WL_REJECT_N];
    char first_rejection[512];
    uint64_t arrived; /* arrived: submitted, and those refused at arrival (routing, NOFIT) */
    /* The cluster was built and the simulation ran. FALSE after a failure: the error is about the
     * configuration (a cluster that cannot be built: pd_type without decode instances, an unknown
     * model, no room for one KV block), found before any request arrived. */
    gboolean started;
    sv_time end_ns; /* simulated time when the run stopped (finished or not) */
    uint64_t sessions;
    sv_time first_arrival_ns;
    sv_time makespan_ns;    /* last token of the last request (from time 0) */
    uint64_t prompt_tokens; /* input tokens of finished requests */
    uint64_t output_tokens;
    uint64_t prefix_requested_tokens;
    uint64_t prefix_hit_tokens;
    uint64_t preemptions;
    uint64_t iterations;
    uint64_t folded_iterations; /* of them, launched folded (docs/parallelism.md) */
    uint64_t bad_lines;
    /* Cluster network (0 without one): messages and bytes sent, incl. collective steps. */
    uint64_t net_messages;
    uint64_t net_bytes;
    /* Prefill/decode disaggregation (0 without): requests handed off, KV bytes moved, handoffs
     * that waited for decode memory, total time waited and total reservation -> KV arrival. */
    uint64_t kv_handoffs;
    uint32_t kv_blocks; /* KV blocks of instance 0 (its pool size, in blocks of its block size) */
    uint64_t kv_bytes;
    uint64_t kv_waits;
    sv_time kv_wait_ns;
    sv_time kv_transfer_ns;
    /* Memory tiers (only when the run uses one): per-kind ledgers and statistics at the end. */
    gboolean has_tiers;
    struct sv_planner_tier_stats tiers;
    /* PIM attention offload (docs/pim.md): counters summed over instances. */
    gboolean has_pim;
    int64_t pim_channels;
    struct sv_msg_pim_stats pim;
    /* Power model (cluster cfg `power`): energy over [0, end_ns]. */
    gboolean has_power;
    struct sv_planner_energy energy;
};

gboolean sv_planner_run(const struct sv_planner_run_cfg *cfg, struct sv_planner_run_result *result,
                        GError **error);
/* What sv_planner_run refuses before it starts (the memory-tier flags and placements the serving
 * group cannot use yet; bad flag combinations), so that a caller can check before it opens its
 * outputs. sv_planner_run calls it too. */
gboolean sv_planner_run_check(const struct sv_planner_run_cfg *cfg, GError **error);
/* Does the run use a memory tier (sv_planner_tiers_wanted after the flags are resolved)? The
 * caller then asks the output writer for the tier columns (sv_metrics_cfg.tiers). FALSE on bad
 * flags (sv_planner_run_check reports them). */
gboolean sv_planner_run_uses_tiers(const struct sv_planner_run_cfg *cfg);
/* summary.json's "memory_tiers" from a run's result (has_tiers). */
void sv_planner_tier_stats_to_metrics(const struct sv_planner_tier_stats *s,
                                      struct sv_metrics_tiers *out);

/* ---- cluster network (planner/cluster_net.c; docs/cluster-network.md) ----------------------
 *
 * One sv_net for the whole cluster: NPU id = node x devices_per_node + device in the node
 * (dim 0 = devices of a node, dim 1 = nodes; ASTRA-sim's dim-0-fastest numbering), instances'
 * devices contiguous in config order within their node. An sv_sys runs over it with one
 * communicator group per TP group (per pipeline stage) and per EP group. Other traffic (KV
 * transfers) can use sv_net_send / sv_sys_send on the same network and contends with it. */
typedef struct sv_planner_cluster_net sv_planner_cluster_net;

/* The topology the cluster builds (dims with one NPU are left out). *npus_per_node gets the
 * devices per node (the largest node; smaller nodes leave ids unused). FALSE + error on
 * disagreeing per-node topologies or array lengths that do not match the dimensions. */
gboolean sv_planner_cluster_topo(const struct sv_planner_cluster_cfg *cfg,
                                 struct sv_net_topo_cfg *out, int32_t *npus_per_node,
                                 GError **error);
/* The cluster's explicit fabric graph (docs/cluster-network.md "An explicit fabric graph"): its
 * nodes' topologies expanded into links, then the graph's switches and links; *out = NULL (and
 * TRUE) when the config gives none. Caller frees with sv_net_graph_cfg_free. NPU ids are those
 * of sv_planner_cluster_topo (node x devices per node + device). */
gboolean sv_planner_cluster_graph(const struct sv_planner_cluster_cfg *cfg,
                                  struct sv_net_graph_cfg **out, GError **error);
/* Build the network and system layer. A cluster with a single device gets no network
 * (sv_planner_cluster_net_net returns NULL). */
sv_planner_cluster_net *sv_planner_cluster_net_new(sv_engine *eng,
                                                   const struct sv_planner_cluster_cfg *cfg,
                                                   sv_net_model model, GError **error);
void sv_planner_cluster_net_free(
    sv_planner_cluster_net *cn); /* accepts NULL; after the engine ran */
sv_net *sv_planner_cluster_net_net(const sv_planner_cluster_net *cn);
sv_sys *sv_planner_cluster_net_coll(const sv_planner_cluster_net *cn);
/* NPU id of instance i's rank 0 (its devices are first .. first + num_npus - 1, tp fastest,
 * then pipeline stage). */
int32_t sv_planner_cluster_net_first_device(const sv_planner_cluster_net *cn, int32_t instance);
/* Communicator group of instance i's TP ranks of stage s (0 when tp_size == 1). */
int32_t sv_planner_cluster_net_tp_group(const sv_planner_cluster_net *cn, int32_t instance,
                                        int32_t stage);
/* Communicator group of instance i's FFN devices under afd (0 when ffn_npus == 1 or no afd); they
 * are NPUs first + num_npus .. first + num_npus + ffn_npus - 1. */
int32_t sv_planner_cluster_net_ffn_group(const sv_planner_cluster_net *cn, int32_t instance);
/* EP group of instance i (0 = none), and the EP rank of its TP rank 0. */
int32_t sv_planner_cluster_net_ep_group(const sv_planner_cluster_net *cn, int32_t instance);
int32_t sv_planner_cluster_net_ep_rank_base(const sv_planner_cluster_net *cn, int32_t instance);
/* Data-parallel groups: index of instance i's group (-1 = none) and its rank in it. */
int32_t sv_planner_cluster_net_dp_index(const sv_planner_cluster_net *cn, int32_t instance,
                                        int32_t *rank);
int32_t sv_planner_cluster_net_num_dp(const sv_planner_cluster_net *cn);
int32_t sv_planner_cluster_net_dp_size(const sv_planner_cluster_net *cn, int32_t dp_index);
/* Per instance (g_free the array): whether its TP ring's links carry no other transfer of the
 * run, so that its iterations may be folded (sv_msg_cfg.tp_fold; planner/tp_fold.c lists the
 * transfers checked). All FALSE without a network. Runs with memory tiers or a power model do
 * not fold: the caller does not ask. */
gboolean *sv_planner_tp_fold_plan(const struct sv_planner_cluster_cfg *c,
                                  const sv_planner_cluster_net *cn);

/* ---- Plugins: policies from a shared object ----------------------------------------------------
 *
 *
 * A plugin adds routers, batch schedulers, KV eviction policies or expert-routing policies to
 * the registry (core/core.h) that `servesim run` looks names up in. The built-in policies are
 * registered through exactly the same tables.
 *
 * Writing one
 *   #include "planner/planner.h"
 *   static int32_t my_route(void *state, const struct sv_planner_router_req *req, int32_t n,
 *                           const struct sv_planner_router_inst *inst) { ... return index; }
 *   static const struct sv_planner_router_ops my_router = {
 *       .api_version = SV_REGISTRY_API_VERSION, .route = my_route};
 *   G_MODULE_EXPORT gboolean sv_plugin_register(sv_registry *r, unsigned api_version,
 *                                               GError **error)
 *   {
 *       if (!sv_planner_plugin_check_version(api_version, error))
 *           return FALSE;
 *       return sv_registry_add(r, SV_REGISTRY_ROUTER, "my_router", &my_router, NULL, error);
 *   }
 *   The tables: struct sv_planner_router_ops (planner/planner.h), struct sv_msg_sched_ops with the
 * scheduler view sv_msg_view_* and struct sv_msg_expert_route_ops (msg/msg.h), struct
 * sv_memtier_kv_evict_ops (memory-tier/memtier.h). Tables must be static (they are borrowed until
 * the registry is freed); per-run or per-instance state comes from the table's `create`.
 *
 * Building one
 *   cc -std=c11 -fPIC -shared -I<servesim source root> $(pkg-config --cflags glib-2.0 \
 *      json-glib-1.0) my_plugin.c -o my_plugin.so
 *   A plugin links against nothing of servesim: the functions it calls (sv_registry_add,
 *   sv_msg_view_*, sv_rng_*) resolve against the servesim executable, which exports its symbols
 *   (CMake ENABLE_EXPORTS). With CMake inside this tree: add_library(x MODULE x.c), as
 *   examples/plugins/CMakeLists.txt does.
 *
 * Loading one
 *   servesim run --plugin ./my_plugin.so --router my_router ...   (--plugin is repeatable)
 *   The loader opens the file with GModule (local symbols), calls sv_plugin_register once with
 *   SV_REGISTRY_API_VERSION and keeps the module open until the registry is freed.
 *
 * ABI and versions
 *   SV_REGISTRY_API_VERSION changes whenever a table, a struct passed to a callback, or the
 *   meaning of a callback changes. sv_plugin_register receives the host's version and must refuse
 *   any other (sv_planner_plugin_check_version); the registry also refuses a table whose
 * api_version differs. Names are unique per kind: registering a taken name fails and names both
 * origins. Tables only grow at the end within a version; callbacks marked optional may be NULL. */
/* The entry point a plugin exports. */
#define SV_PLANNER_PLUGIN_ENTRY "sv_plugin_register"
typedef gboolean (*sv_planner_plugin_register_fn)(sv_registry *r, unsigned api_version,
                                                  GError **error);

/* For plugins: TRUE when `host_version` is the version this plugin was compiled against. */
static inline gboolean sv_planner_plugin_check_version(unsigned host_version, GError **error)
{
    if (host_version == SV_REGISTRY_API_VERSION)
        return TRUE;
    g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                "plugin built for policy API version %u, servesim has version %u",
                (unsigned)SV_REGISTRY_API_VERSION, host_version);
    return FALSE;
}

/* Load the shared object at `path` and let it register its policies in `reg`. Errors name the
 * file: cannot be opened, no sv_plugin_register symbol, version mismatch, or whatever the plugin
 * reported (a duplicate name). On failure the registry may hold the tables the plugin registered
 * before failing; the module then stays open with it. */
gboolean sv_planner_plugin_load(sv_registry *reg, const char *path, GError **error);

/* ---- sweeps: `servesim sweep SPEC` (planner/sweep.c, sweep_row.c, sweep_sched.c; docs/sweep.md)
 * A spec (YAML) names a base run (`run:`, every key a `servesim run` long flag) and axes; the grid
 * is the cartesian product of the axes in spec order (the first axis varies slowest). Point k runs
 * as `servesim run <base> <axis flags> --output-dir points/<k> --quiet` in the sweep's output
 * folder; the planner parses, expands, reads a point's outputs back and decides the order (goal
 * search); the command spawns the runs. */
typedef struct sv_sweep_spec sv_sweep_spec;
/* Errors name the spec file, the line and the key path ("sweep.yaml:7: axes[1].values: ..."). */
sv_sweep_spec *sv_planner_sweep_load(const char *path, GError **error);
void sv_planner_sweep_free(sv_sweep_spec *s); /* accepts NULL */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sv_sweep_spec, sv_planner_sweep_free)
guint sv_planner_sweep_n_points(const sv_sweep_spec *s);
gboolean sv_planner_sweep_has_goal(const sv_sweep_spec *s);
/* Point k's folder name under points/: k zero-padded to at least 4 digits (caller frees). */
char *sv_planner_sweep_point_name(const sv_sweep_spec *s, guint k);
/* Point k's cluster config when an axis patches it (`path:` axes): *json = the patched JSON text
 * (caller frees), else *json = NULL. FALSE with an error naming the path when it cannot apply. */
gboolean sv_planner_sweep_point_cluster(const sv_sweep_spec *s, guint k, char **json,
                                        GError **error);
/* The arguments after `servesim run` for point k (owned strings): the base flags (those an axis
 * sets left out), then each axis's flags; `cluster` replaces the base's --cluster (a patched
 * copy), NULL keeps it. --output-dir and --quiet are the caller's. */
GPtrArray *sv_planner_sweep_point_args(const sv_sweep_spec *s, guint k, const char *cluster);

/* One point's outcome, read from its folder (sv_planner_sweep_read). */
typedef enum {
    SV_SWEEP_NOT_RUN = 0, /* shards: another shard's point */
    SV_SWEEP_OK,
    SV_SWEEP_FAILED, /* nonzero exit, signal, or unreadable outputs: `error` says which */
    SV_SWEEP_PRUNED, /* goal search: a lower load of its configuration missed the SLOs */
} sv_sweep_status;
enum {
    SV_SWEEP_M_COMPLETED,
    SV_SWEEP_M_REQ_TPUT,
    SV_SWEEP_M_OUT_TPUT,
    SV_SWEEP_M_TOTAL_TPUT,
    SV_SWEEP_M_LAT0, /* mean, median, p99 of ttft, tpot, itl, e2el (ms): 12 columns */
    SV_SWEEP_M_GOODPUT = SV_SWEEP_M_LAT0 + 12,
    SV_SWEEP_M_GPUS,
    SV_SWEEP_M_OUT_TPUT_GPU,
    SV_SWEEP_M_TOTAL_TPUT_GPU,
    SV_SWEEP_M_ENERGY_J,
    SV_SWEEP_M_ENERGY_J_TOKEN,
    SV_SWEEP_N_METRICS
};
struct sv_sweep_result {
    sv_sweep_status status;
    char *error; /* FAILED: why (exit status and the run's first stderr line) */
    double m[SV_SWEEP_N_METRICS];
    guint64 have; /* bit i: m[i] is known */
};
void sv_planner_sweep_result_clear(struct sv_sweep_result *r);
/* Fill r from point k's folder `dir` after its run exited with `wait_status` (waitpid's); the
 * first line of `stderr_text` goes into a failure's error. */
void sv_planner_sweep_read(const sv_sweep_spec *s, guint k, const char *dir, int wait_status,
                           const char *stderr_text, struct sv_sweep_result *r);
/* sweep.csv: the header line and point k's row, each ending in '\n' (caller frees). */
char *sv_planner_sweep_csv_header(const sv_sweep_spec *s);
char *sv_planner_sweep_csv_row(const sv_sweep_spec *s, guint k, const struct sv_sweep_result *r);

/* Which point runs next: the grid in point order (points k with k % shard_n == shard_i), or the
 * goal search (each configuration's loads in increasing order, stopping at its first miss). */
typedef struct sv_sweep_sched sv_sweep_sched;
sv_sweep_sched *sv_planner_sweep_sched_new(const sv_sweep_spec *s, gboolean goal, guint shard_i,
                                           guint shard_n);
void sv_planner_sweep_sched_free(sv_sweep_sched *q); /* accepts NULL */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sv_sweep_sched, sv_planner_sweep_sched_free)
#define SV_SWEEP_WAIT (-1) /* nothing to start until a running point finishes */
#define SV_SWEEP_DONE (-2) /* nothing left */
int sv_planner_sweep_sched_next(sv_sweep_sched *q);
/* Point k finished with r; the scheduler keeps a copy of the metrics (r stays the caller's). */
void sv_planner_sweep_sched_done(sv_sweep_sched *q, guint k, const struct sv_sweep_result *r);
/* After SV_SWEEP_DONE: whether point k belongs in sweep.csv (run, or pruned in a goal search) and
 * with which status. */
sv_sweep_status sv_planner_sweep_sched_status(const sv_sweep_sched *q, guint k);
/* Goal search: goal.json's text and the one-line verdict (caller frees). */
char *sv_planner_sweep_goal_json(const sv_sweep_sched *q);
char *sv_planner_sweep_goal_line(const sv_sweep_sched *q);

G_END_DECLS

#endif
