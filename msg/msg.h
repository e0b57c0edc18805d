/* servesim msg: one model serving group (an instance): request queue, batch scheduler, KV block
 * manager binding, operation mapper and operation scheduler.
 *
 * Each engine step the batch scheduler picks the requests and token counts of the next iteration
 * (vLLM v1 semantics as LLMServingSim's serving/core/scheduler.py implements them, or
 * TokenSim-style static / dynamic batching); the operation mapper turns the batch into an iteration
 * DAG whose node durations come from compute/ (one latency lookup per operator for the whole batch,
 * VALIDATION_NOTES items 1-3); the DAG runs on the dag executor in process, and when it finishes
 * the scheduler commits the iteration (first tokens, decode tokens, finished requests:
 * LLMServingSim's Scheduler.add_done). docs/serving.md describes the model. */
#ifndef SV_MSG_H
#define SV_MSG_H

#include "compute/compute.h"
#include "core/core.h"
#include "memory-tier/memtier.h"
#include "network/network.h"
#include "system/system.h"
#include "workloads/workloads.h"

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

#define SV_MSG_ERROR (sv_msg_error_quark())
GQuark sv_msg_error_quark(void);
typedef enum {
    SV_MSG_ERROR_INVALID, /* bad configuration value */
    SV_MSG_ERROR_NOFIT,   /* a request can never fit in the KV pool (the run cannot finish) */
    SV_MSG_ERROR_IO,      /* --emit-et output cannot be written */
} sv_msg_error_code;

typedef enum {
    SV_MSG_SCHED_VLLM = 0, /* vLLM v1 continuous batching with chunked prefill */
    SV_MSG_SCHED_STATIC,   /* static batching: a batch runs to completion before the next forms */
    SV_MSG_SCHED_DYNAMIC,  /* dynamic (iteration-level) batching, whole prompts, no chunking */
} sv_msg_sched_kind;

/* "vllm", "static", "dynamic". */
gboolean sv_msg_sched_parse(const char *name, sv_msg_sched_kind *out, GError **error);
const char *sv_msg_sched_name(sv_msg_sched_kind kind);

/* Host-side time per engine step (msg/host.c). The zero value is the default: a config that
 * does not set the field gets the fitted model. */
typedef enum {
    SV_MSG_HOST_FITTED = 0, /* C0 + C1 x sequences, tools/fit_host.c (Sarathi-Serve data) */
    SV_MSG_HOST_NONE,       /* GPU time only (LLMServingSim's model) */
} sv_msg_host_model;

/* "fitted", "none". */
gboolean sv_msg_host_parse(const char *name, sv_msg_host_model *out, GError **error);
/* Host time of a step that schedules n_seqs sequences (0 for an empty step): after the step's
 * GPU part, before its tokens are committed. Synchronous engines add it in series; with async
 * scheduling the GPU runs the next step meanwhile (msg/engine.c). */
sv_time sv_msg_host_step_ns(sv_msg_host_model model, uint32_t n_seqs);

/* ---- engine profiles (msg/engine.c; docs/serving.md "Engine profiles") ----------------------
 *
 * Which vLLM release an instance behaves like: whether the engine core schedules asynchronously
 * (vLLM >= 0.14 by default: step n+1 is scheduled before step n's output is processed, so the host
 * work of a step overlaps the GPU's next step and a request that arrives while the engine is busy
 * joins one step later) and which max_num_seqs / max_num_batched_tokens `vllm serve` picks for a
 * device. The zero value is the default. */
typedef enum {
    SV_MSG_ENGINE_VLLM_0_19 = 0, /* async scheduling; the default */
    SV_MSG_ENGINE_VLLM_0_10,     /* synchronous: host time in series with every step */
} sv_msg_engine_kind;

/* "vllm-0.19" (also "vllm"), "vllm-0.10". */
gboolean sv_msg_engine_parse(const char *name, sv_msg_engine_kind *out, GError **error);
const char *sv_msg_engine_name(sv_msg_engine_kind kind);
gboolean sv_msg_engine_async(sv_msg_engine_kind kind);
/* The max_num_seqs / max_num_batched_tokens `vllm serve` (usage context OPENAI_API_SERVER) of
 * that release picks for a device named `hardware` with `mem_gib` GiB of memory when neither is
 * given (vllm/engine/arg_utils.py; docs/serving.md lists the table). */
void sv_msg_engine_batch_defaults(sv_msg_engine_kind kind, const char *hardware, double mem_gib,
                                  int64_t *max_num_seqs, int64_t *max_num_batched_tokens);

/* Optional frontend term (API server, tokenisation, detokenisation, stream return), for
 * comparisons with client-side measurements: a request reaches the engine in_ns after it
 * arrives, and each token reaches the client out_ns after the engine emits it. Zero = off (the
 * default: times are the engine's, as vLLM's own request metrics). */
struct sv_msg_frontend {
    sv_time in_ns;
    sv_time out_ns;
};
/* "off", "on" (the cited defaults, docs/serving.md) or "IN_MS:OUT_MS". */
gboolean sv_msg_frontend_parse(const char *spec, struct sv_msg_frontend *out, GError **error);

/* ---- batch scheduler policies --------------------------------------------------------------
 *
 * A batch scheduler is a callback table registered by name (registry kind SV_REGISTRY_SCHED);
 * the built-ins "vllm", "static" and "dynamic" are tables like any plugin's. Once per engine step
 * the group calls `schedule` with a view of itself (sv_msg_view): the scheduler reads the waiting
 * queue and the running list and decides, through the view's verbs only, which requests compute
 * how many tokens this step. The view keeps every invariant (KV blocks, the order of the lists,
 * token counters); a scheduler never sees a request object. */
typedef struct sv_msg_view sv_msg_view;

/* What a scheduler may know about a request. */
struct sv_msg_req_info {
    uint64_t request_id;
    sv_time arrival_ns;
    int64_t input_tokens;  /* prompt */
    int64_t total_tokens;  /* prompt + output: the request ends when reached == total */
    int64_t num_computed;  /* KV history computed (0 after a preemption) */
    int64_t num_reached;   /* prompt + generated so far; a step needs reached - computed tokens */
    gboolean prefill_done; /* first token produced */
    uint32_t preemptions;
};

/* The group's limits (resolved configuration). */
struct sv_msg_limits {
    int64_t max_num_seqs;
    int64_t max_num_batched_tokens;
    int64_t long_prefill_token_threshold; /* 0 = none */
    gboolean enable_chunked_prefill;
    gboolean reserve_full_isl;
};

struct sv_msg_sched_ops {
    unsigned api_version; /* SV_REGISTRY_API_VERSION */
    /* Optional per-group state; `param` is the text after "name:" (NULL when none). */
    void *(*create)(int32_t instance, const struct sv_msg_limits *lim, const char *param,
                    GError **error);
    void (*destroy)(void *state);
    /* Pick this step's batch through the view. An empty batch while requests wait and nothing
     * runs means no request can ever be scheduled: the run stops with a diagnosis. */
    void (*schedule)(void *state, sv_msg_view *view);
};

sv_time sv_msg_view_now(const sv_msg_view *v);
const struct sv_msg_limits *sv_msg_view_limits(const sv_msg_view *v);
int32_t sv_msg_view_instance(const sv_msg_view *v);
/* Running requests in admission order (index i < num_running). */
uint32_t sv_msg_view_num_running(const sv_msg_view *v);
void sv_msg_view_running(const sv_msg_view *v, uint32_t i, struct sv_msg_req_info *out);
/* Whether running request i already has a share of this step. */
gboolean sv_msg_view_is_scheduled(const sv_msg_view *v, uint32_t i);
/* Waiting requests in queue order (arrival order; preempted requests at the head). Index 0 is
 * O(1), index i costs O(i). */
uint32_t sv_msg_view_num_waiting(const sv_msg_view *v);
void sv_msg_view_waiting(const sv_msg_view *v, uint32_t i, struct sv_msg_req_info *out);
/* Requests given a share of this step so far, and their tokens. */
uint32_t sv_msg_view_num_scheduled(const sv_msg_view *v);
int64_t sv_msg_view_scheduled_tokens(const sv_msg_view *v);
uint32_t sv_msg_view_num_preempted(const sv_msg_view *v);

/* Give running request i (not yet scheduled this step) `num_new` tokens (1 <= num_new <=
 * reached - computed): allocates their KV slots. FALSE, changing nothing, when the pool lacks
 * the blocks. */
gboolean sv_msg_view_schedule_running(sv_msg_view *v, uint32_t i, int64_t num_new);
/* Preempt running request i (recompute: blocks freed with hashes kept, computed reset to 0); it
 * moves to the head of the waiting queue. A request scheduled this step cannot be preempted. */
void sv_msg_view_preempt(sv_msg_view *v, uint32_t i);
/* Tokens the head of the waiting queue has already computed: its prefix-cache hit (looked up
 * once per step and counted in the cache statistics) or its computed history. */
int64_t sv_msg_view_waiting_computed(sv_msg_view *v);
/* Whether the head's whole sequence would fit in the pool (vLLM's can_fit_full_sequence). */
gboolean sv_msg_view_waiting_fits_full(sv_msg_view *v);
/* Admit the head of the waiting queue with `num_new` tokens after its computed ones
 * (sv_msg_view_waiting_computed): allocates KV slots, moves it to the tail of the running list
 * and schedules it. FALSE, changing nothing, when the pool lacks the blocks. */
gboolean sv_msg_view_admit_waiting(sv_msg_view *v, int64_t num_new);

/* Swap preemption (cfg.tiers.preemption_swap, vLLM v0): a preempted request whose KV fits the
 * swap tier is swapped out instead of recomputed, keeping its computed tokens; it waits in the
 * swapped queue (FIFO), which v0 serves after the running requests and before the waiting
 * queue (waiting requests are admitted only when it is empty). swap_in gives the head
 * `num_new` tokens (1 <= num_new <= reached - computed) and moves it to the tail of the running
 * list; FALSE, changing nothing, when the pool lacks the blocks. */
uint32_t sv_msg_view_num_swapped(const sv_msg_view *v);
void sv_msg_view_swapped_head(const sv_msg_view *v, struct sv_msg_req_info *out);
gboolean sv_msg_view_swap_in(sv_msg_view *v, int64_t num_new);

/* The built-in tables, and their registration ("vllm", "static", "dynamic"). */
const struct sv_msg_sched_ops *sv_msg_sched_builtin(sv_msg_sched_kind kind);
gboolean sv_msg_sched_register_builtins(sv_registry *reg, GError **error);

/* ---- expert routing policies (MoE) --------------------------------------------------------
 *
 * How a batch's tokens spread over the experts of one MoE layer (registry kind
 * SV_REGISTRY_EXPERT_ROUTE). Built-ins: "balanced" (even split, the remainder one pair each to
 * experts spread evenly over the expert range, msg/expert.c),
 * "round_robin" (token t of the step to expert (cursor + t) mod n for each of its top_k choices,
 * the cursor carried across calls), "random" (uniform choices, distinct per token), "zipf:S"
 * (expert rank r chosen with weight 1 / r^S, distinct per token). Counts sum to tokens x top_k.
 */
struct sv_msg_expert_route_req {
    int32_t layer;
    int64_t tokens;
    int32_t n_experts;
    int32_t top_k; /* 1 <= top_k <= n_experts */
};

struct sv_msg_expert_route_ops {
    unsigned api_version; /* SV_REGISTRY_API_VERSION */
    /* Per-use state; `rng` is a stream owned by the caller (random policies draw from it only). */
    void *(*create)(const char *param, sv_rng *rng, GError **error);
    void (*destroy)(void *state);
    /* Fill counts[0 .. n_experts) with the tokens routed to each expert. */
    void (*route)(void *state, const struct sv_msg_expert_route_req *req, int64_t *counts);
};
gboolean sv_msg_expert_route_register_builtins(sv_registry *reg, GError **error);

/* LLMServingSim's CLI defaults (main.py --max-num-seqs / --max-num-batched-tokens), which are also
 * vLLM's SchedulerConfig class defaults (vllm/config/scheduler.py). `vllm serve` does not use
 * them: it picks per device (sv_msg_engine_batch_defaults). */
#define SV_MSG_DEFAULT_MAX_NUM_SEQS 128
#define SV_MSG_DEFAULT_MAX_NUM_BATCHED_TOKENS 2048
#define SV_MSG_DEFAULT_BLOCK_SIZE 16

/* MoE dispatch / combine exchange: vLLM's default all-gather + reduce-scatter backend, or an
 * all-to-all (DeepEP-style dispatching backend). */
typedef enum {
    SV_MSG_MOE_ALLGATHER_RS = 0,
    SV_MSG_MOE_ALLTOALL,
} sv_msg_moe_comm;
/* "allgather_reducescatter" (or "agrs"), "alltoall". */
gboolean sv_msg_moe_comm_parse(const char *name, sv_msg_moe_comm *out, GError **error);

typedef struct sv_msg_dp sv_msg_dp;
typedef struct sv_msg_afd_group sv_msg_afd_group; /* msg/afd_group.c */

/* An instance's part in prefill/decode disaggregation (LLMServingSim's pd_type). */
typedef enum {
    SV_MSG_ROLE_BOTH = 0, /* pd_type null: prefill and decode */
    SV_MSG_ROLE_PREFILL,  /* pd_type "prefill" */
    SV_MSG_ROLE_DECODE,   /* pd_type "decode" */
} sv_msg_role;

/* A request in transit between a prefill and a decode group (its KV blocks held on one side). */
typedef struct sv_msg_handoff sv_msg_handoff;

/* When the layers of a starting iteration finish, from the latency model (compute only: the
 * iteration's collectives can make it later). Layer l (0-based, whole model) finishes at
 * start_ns + prologue_ns + (l + 1) x layer_ns. */
struct sv_msg_prefill_launch {
    sv_time start_ns;
    sv_time prologue_ns;
    sv_time layer_ns;
    int64_t n_layers;
};

/* ---- memory tiers (issue 8; docs/memory-tiers.md) ------------------------------------------
 *
 * What an instance moves between its HBM and the lower tiers (host DRAM, CXL, SSD) on the tier
 * fabric (memory-tier/fabric.c). The planner (planner/tiers.c) builds the objects and fills this
 * record; msg borrows everything in it (it must outlive the msg). The zero value (fabric NULL) is
 * "no tiers": the group behaves exactly as before issue 8. Routes are the fabric's (owned by it);
 * a NULL route means "on the NPU" (nothing moves). Arrays indexed [rank] have num_devices
 * entries, rank = TP rank + tp x stage as in the DAG. */
struct sv_msg_tier_cfg {
    struct sv_memtier_fabric *fabric; /* NULL: no tiers (today's behaviour) */
    /* Weight streaming (docs/memory-tiers.md use 1): weight_route[rank][i], i = 0..num_layers-1 the
     * decoder layers, num_layers the embedding, num_layers+1 the head; NULL entry = resident on the
     * NPU. layer_weight_bytes[i] (same indexing) = bytes of part i on one rank (already / tp). */
    const struct sv_memtier_route *const *const *weight_route;
    const uint64_t *layer_weight_bytes;
    /* Live KV off the device (use 2): kv_route[rank][layer] tier -> NPU, NULL = KV in HBM;
     * kv_store_route[rank][layer] the reverse (new tokens' KV written down; NULL = not booked). */
    const struct sv_memtier_route *const *const *kv_route;
    const struct sv_memtier_route *const *const *kv_store_route;
    /* Swap (use 3): swap_route[rank] = NPU -> kv_evict_loc tier route (its reverse is looked up
     * as swap_in_route[rank]); swap_tier is charged EVICTED_KV. */
    const struct sv_memtier_route *const *swap_route;
    const struct sv_memtier_route *const *swap_in_route;
    struct sv_memtier_tier *swap_tier;
    /* The prefix pool on swap_tier, if any: its chunks are evicted to make room for swapped KV
     * (swap space pressure) before falling back to recompute. */
    struct sv_memtier_prefix_pool *swap_pool;
    /* Prefix hierarchy below the NPU pool (use 4); NULL: NPU pool only. chunk_tokens: its
     * chunk (prefix_chunk_tokens, 256), a multiple of the KV block size. */
    struct sv_memtier_hier *hier;
    uint32_t chunk_tokens;
    gboolean preemption_swap;   /* --preemption-mode swap (vLLM v0), else recompute (v1) */
    gboolean offload_serial;    /* --offload-overlap serial (load then compute), else prefetch */
    gboolean kv_load_per_layer; /* --kv-load-overlap layer, else one load before layer 0 */
    /* Expert cache (MoE expert_offload): slots per MoE layer per rank (0 = every expert on the
     * NPU), expert_route[rank] = tier -> NPU route, expert_bytes = one expert's weights / tp. */
    int32_t expert_cache_slots;
    const struct sv_memtier_route *const *expert_route;
    uint64_t expert_bytes;
    /* Transfer override (NULL = sv_memtier_fabric_xfer on `fabric`); set, it also turns tiers on
     * without a fabric: unit tests drive msg with a fake fabric whose routes they define. */
    void (*xfer)(void *xfer_ctx, const struct sv_memtier_route *route, uint64_t bytes,
                 sv_net_done_fn done, void *ctx, uint64_t arg);
    void *xfer_ctx;
};

/* ---- Chakra ET output (issue 12; docs/chakra.md "Emitted sets") ------------------------------
 *
 * One per run, shared by the serving groups (and the PD hand-off). Iteration scope: every batch a
 * set of files, one per device of its unit (an instance, or a data-parallel group), local NPU ids
 * from 0, written when the batch has finished: each device's nodes, a clock of "wait" nodes for
 * the time each root started after the launch (a device still busy with the previous batch), and no
 * dependency outside the set. Run scope: one file per NPU of the cluster for the whole run, each
 * batch appended at its launch behind the device's previous batch or a wait until the launch time
 * (docs/chakra.md "Emitted sets"), KV transfers as
 * send/recv pairs. finish() closes the files and writes iterations.csv (per set and NPU: launch
 * and finish time of the run) and manifest.json, last; without it nothing is left but the ET
 * files of complete sets, and no manifest. */
typedef struct sv_msg_et_out sv_msg_et_out;
typedef enum {
    SV_MSG_ET_ITERATION = 0,
    SV_MSG_ET_RUN,
} sv_msg_et_scope;
gboolean sv_msg_et_scope_parse(const char *name, sv_msg_et_scope *out, GError **error);
/* `n_npus`: the NPUs of the cluster (run scope: one file each). Creates `dir`. */
sv_msg_et_out *sv_msg_et_out_new(const char *dir, sv_msg_et_scope scope, int32_t n_npus,
                                 GError **error);
void sv_msg_et_out_free(sv_msg_et_out *o); /* accepts NULL; removes unfinished run-scope files */
const char *sv_msg_et_out_dir(const sv_msg_et_out *o);
/* A replay unit for the manifest: its sets are <name>_iter<N>.<npu>.et (run scope: "run",
 * run.<npu>.et); the caller writes <name>.system.json, <name>.network.yml, <name>.memory.json
 * and <name>.groups.json. `note` (may be NULL) says what the files do not express exactly. */
void sv_msg_et_out_add_unit(sv_msg_et_out *o, const char *name, int32_t n_npus, const char *note);
/* The unit's network has `n` more NPUs than it uses (ASTRA-sim's analytical networks need two
 * NPUs per dimension: a one-device unit gets an idle partner); each set gets a file of one idle
 * node for each of them, local ids after the unit's own. */
void sv_msg_et_out_pad_unit(sv_msg_et_out *o, const char *name, int32_t n);
/* Run scope: a point-to-point transfer of `bytes` from NPU src to dst starting now: a send on
 * src's file (after its clock at `now`) and a receive on dst's. *recv gets the receive's id, to
 * pass to sv_msg_et_out_received when the data has arrived and been used. Iteration scope: no-op
 * (*recv = 0). */
gboolean sv_msg_et_out_transfer(sv_msg_et_out *o, int32_t src, int32_t dst, uint64_t bytes,
                                sv_time now, uint64_t *recv, GError **error);
/* The next batch launched on dst waits for receive `recv` (ctrl dependency of its roots). */
void sv_msg_et_out_received(sv_msg_et_out *o, int32_t dst, uint64_t recv);
/* Run scope: a node written for `npu` finished at t in the run (iterations.csv: the time each
 * NPU's file should finish in a replay). The serving groups' nodes are noted by the msg. */
void sv_msg_et_out_note_end(sv_msg_et_out *o, int32_t npu, sv_time t);
/* Close the files and write iterations.csv and manifest.json. `replay_model`: the network model
 * name a replay should use (the run's). */
gboolean sv_msg_et_out_finish(sv_msg_et_out *o, const char *replay_model, GError **error);

/* ---- PIM attention offload (issue 9; docs/pim.md) ------------------------------------------
 *
 * Decode attention of every layer runs on the PIM channels of the instance's node (LLMServingSim
 * --enable-attn-offloading): the NPU's attention operator keeps the prefill part, and after it a
 * PIM node per layer and rank takes NPU -> PIM transfer (the decodes' Q, K, V; the prefill
 * chunks' new K, V written and their history read) + the slowest channel's attention + PIM ->
 * NPU transfer (the decodes' attention outputs). The channels serve every rank's heads at once,
 * so each rank's PIM node lasts the whole PIM time. The zero value (dev NULL) is "no PIM". */
struct sv_msg_pim_cfg {
    const struct sv_compute_pim_cfg *dev; /* borrowed; NULL = off */
    struct sv_compute_pim_attn attn;
    int32_t n_channels;          /* the instance's channels (>= 1) */
    int32_t split;               /* pieces per sequence: heads over channels (>= 1) */
    sv_compute_pim_pack_fn pack; /* placement of pieces on channels */
    void *pack_user;
    gboolean sub_batch;       /* enable_sub_batch_interleaving (NeuPIMs); needs pp 1 */
    double xfer_bytes_per_ns; /* NPU <-> PIM link of one rank (> 0) */
    double xfer_latency_ns;   /* per transfer */
};

/* Attention/FFN disaggregation of a serving instance (docs/afd.md "In servesim run"): the
 * instance's devices (first_device, num_devices = its attention TP ranks, one stage) hold the KV
 * cache and run each layer's attention side; ffn_npus devices from ffn_first_device run its MLP /
 * MoE part, timed by ffn_lat; each iteration's batch is split into micro_batches that ping-pong
 * between the groups over the cluster network (cfg.coll). micro_batches 0 = off. */
struct sv_msg_afd_run {
    int32_t micro_batches;
    int32_t ffn_first_device;
    int32_t ffn_npus;
    int32_t ffn_tp_group;        /* communicator group of the FFN ranks (ffn_npus > 1) */
    sv_compute_latency *ffn_lat; /* borrowed: the FFN hardware's model at TP ffn_npus (TP 1 with
                                    ffn_ep: each rank holds whole experts) */
    /* Expert parallelism in the FFN group (MoE models; docs/afd.md "MoE: expert parallelism"):
     * FFN rank j holds experts [j E / ffn_npus, (j + 1) E / ffn_npus); each micro-batch's tokens
     * are routed by cfg.expert_route and each rank gets only the rows of its experts. */
    gboolean ffn_ep;
    /* Optional (the power model, planner/power.c): FFN rank `rank` (0 .. ffn_npus - 1) starts
     * (busy TRUE) or ends (FALSE) a compute operator at `now`, in time order, as the iteration's
     * executor runs it. */
    void (*on_ffn_op)(void *ctx, int32_t instance, int32_t rank, gboolean busy, sv_time now);
    void *ffn_op_ctx;
    /* Optional (the power model, with a shared FFN group): a wave of the group starts at `now`;
     * `members` (instance indices, n of them, member order) have an iteration in it and the FFN
     * group runs `passes` micro-batches (each reads its weights once). on_ffn_op then reports the
     * group's FFN ranks under the owner's (member 0's) instance. Both use the owner's cfg. */
    void (*on_ffn_wave)(void *ctx, const int32_t *members, int32_t n, int32_t passes, sv_time now);
    /* A shared FFN group (docs/afd.md "Several attention instances sharing an FFN group"): NULL =
     * this instance's own. Borrowed (the planner owns it); group_rank is the member's index. */
    sv_msg_afd_group *group;
    int32_t group_rank;
};

struct sv_msg_cfg {
    int32_t instance; /* instance index (records, ET file names) */
    sv_msg_sched_kind scheduler;
    /* A scheduler table (from the registry) wins over `scheduler` when set; borrowed, must
     * outlive the msg. `sched_param` is its parameter (the text after "name:", or NULL). */
    const struct sv_msg_sched_ops *sched_ops;
    const char *sched_param;
    int64_t max_num_seqs;                 /* > 0 */
    int64_t max_num_batched_tokens;       /* > 0 */
    int64_t long_prefill_token_threshold; /* 0 = no per-request chunk cap */
    gboolean enable_chunked_prefill;
    gboolean reserve_full_isl; /* admit only when the whole sequence fits (vLLM default on) */
    /* Borrowed, must outlive the msg. */
    sv_memtier_kv_manager *kv;
    sv_compute_latency *lat;
    int32_t first_device; /* device id of rank 0 (DAG nodes, ET files) */
    int32_t num_devices;  /* TP ranks of this instance (>= 1) */
    /* TP all-reduce after o_proj / down_proj when num_devices > 1: a ring over this link
     * (ASTRA-sim units: GB/s = 2^30 B per 1e9 ns; latency per hop in ns). VALIDATION_NOTES 6. */
    double link_bw_gbps;
    double link_latency_ns;
    /* Chakra ET output (--emit-et; docs/chakra.md "Emitted sets"): borrowed, NULL = none. The
     * DAG is then built per layer and operator. Iteration scope writes each batch as the set
     * <dir>/<et_unit>_iter<N>.<device - et_npu_base>.et; run scope appends it to the run's
     * per-device files. */
    sv_msg_et_out *et_out;
    const char *et_unit; /* copied; NULL = "inst<instance>" */
    int32_t et_npu_base;
    sv_msg_host_model host_model;    /* host-side per-step time (default: fitted) */
    sv_msg_engine_kind engine;       /* engine profile (default: vllm-0.19, async scheduling) */
    struct sv_msg_frontend frontend; /* zero = off */
    /* ---- parallelism on the cluster network (issue 4; docs/parallelism.md) ----
     * coll NULL: no network (TP all-reduce by the closed form above). With coll set and more
     * than one device, EP or DP, every collective and stage transfer is a network operation of
     * this system layer (borrowed, must outlive the msg). */
    sv_sys *coll;
    int32_t pp_size;       /* pipeline stages (0 = 1); num_devices = tp x pp, tp fastest */
    int32_t tp_group_base; /* communicator group of stage s's TP ranks: tp_group_base + s */
    /* Heterogeneous stages (docs/parallelism.md): stage s's layers are timed by stage_lat[s] and
     * are stage_layers[s] of the model's (the counts sum to its layers); NULL: `lat` for every
     * stage / vLLM's split (sv_msg_pp_split). Borrowed, pp_size entries each. */
    sv_compute_latency *const *stage_lat;
    const int64_t *stage_layers;
    /* Expert parallelism (MoE models, ep_size > 1): EP rank of this instance's TP rank r is
     * ep_rank_base + r, the EP ranks form communicator group ep_group. */
    int32_t ep_size;
    int32_t ep_group;
    int32_t ep_rank_base;
    sv_msg_moe_comm moe_comm;
    const struct sv_msg_expert_route_ops *expert_route; /* NULL = built-in "balanced" */
    const char *expert_route_param;                     /* copied */
    /* The links of this instance's TP ring carry no other traffic (the planner has checked every
     * route that any transfer of the run can take: planner/tp_fold.c). An iteration may then be
     * folded into one node per rank lasting its operators plus its TP all-reduces in closed form
     * (sv_sys_coll_alone_ns): the times of the per-layer DAG, to the nanosecond, without running
     * 2 x layers collectives (docs/parallelism.md "Folded iterations" says when it is taken). */
    gboolean tp_fold;
    /* Data parallel group (vLLM DP: members step in waves, idle ones run dummy steps). */
    sv_msg_dp *dp;
    int32_t dp_rank;
    /* Tests: never start iterations from the engine; drive with sv_msg_schedule_step/commit. */
    gboolean manual;
    /* Prefill/decode disaggregation (docs/disaggregation.md): a PREFILL group hands each request
     * off (hooks.on_prefill_done) when its prompt completes instead of decoding it; a DECODE group
     * receives requests through sv_msg_pd_reserve / sv_msg_pd_admit. BOTH (0) does everything. */
    sv_msg_role role;
    /* Memory tiers (issue 8): zero = none. */
    struct sv_msg_tier_cfg tiers;
    /* PIM attention offload: zero = none. */
    struct sv_msg_pim_cfg pim;
    /* enable_local_offloading (LLMServingSim: weights read from the NPU's own memory as timed
     * loads, --enable-local-offloading): before each part's compute (embedding, each layer,
     * head) a MEM_LOAD of its weights on one rank at this bandwidth (B/ns) plus latency (ns).
     * 0 = off. Not combined with weight streaming from lower tiers. */
    double local_load_bytes_per_ns;
    double local_load_latency_ns;
    /* Speculative decoding (msg/spec.c; docs/speculative.md): NULL = off. Borrowed. A decoding
     * request is scheduled 1 + k tokens per step, the step runs k draft passes before the
     * target's forward, and its commit emits the accepted drafts and one more token together.
     * spec_draft_lat times the draft model (method draft); spec_seed roots the per-request
     * streams "spec/<id>" (acceptance) and "spec/rate/<id>" (the request's rate). Single-device
     * path or TP, synchronous scheduling (sv_msg_new refuses the rest). */
    const struct sv_compute_spec_cfg *spec;
    sv_compute_latency *spec_draft_lat;
    uint64_t spec_seed;
    /* Attention/FFN disaggregation (msg/afd_run.c): zero = off. */
    struct sv_msg_afd_run afd;
};

/* One committed iteration. */
struct sv_msg_iter_done {
    int32_t instance;
    uint64_t iteration;
    sv_time start_ns;
    sv_time end_ns;
    int64_t prompt_tokens; /* prompt tokens completed (incl. prefix hits at prefill completion) */
    int64_t gen_tokens;    /* output tokens produced */
    int64_t scheduled_tokens;
    uint32_t n_prefill;
    uint32_t n_decode;
    uint32_t running; /* after the commit */
    uint32_t waiting;
    double kv_usage; /* used blocks / blocks, after the commit */
    /* PIM attention offload: channel busy time of the iteration, summed over channels, layers
     * and sub-batches (ns; the PIM power model's active time), and bytes moved NPU <-> PIM. */
    double pim_busy_ns;
    uint64_t pim_xfer_bytes;
};

/* One request's share of a scheduled iteration. */
struct sv_msg_sched_entry {
    uint64_t request_id;
    int64_t num_new;         /* tokens computed this step */
    int64_t computed_before; /* KV history before the step */
};

/* One finished node of an iteration DAG (sv_msg_hooks.on_op), valid during the call. */
struct sv_msg_op {
    int32_t instance;
    int32_t device;   /* NPU id */
    int kind;         /* sv_dag_kind (dag/dag.h) */
    const char *name; /* never NULL */
    sv_time start_ns, end_ns;
    uint64_t bytes; /* comm_size of a collective or send, else 0 */
};

/* Callbacks (any may be NULL). on_token is called for each output token after the first, with
 * the gap since the previous one (ITL); on_req_done after a request's last token, with the
 * request's outcome (valid during the call only: the request is freed after it) and the `user`
 * tag given to sv_msg_submit / sv_msg_pd_reserve. */
struct sv_msg_hooks {
    void (*on_token)(void *ctx, uint64_t request_id, int32_t instance, sv_time t_ns,
                     sv_time gap_ns);
    void (*on_req_done)(void *ctx, const struct sv_wl_outcome *out, void *user);
    void (*on_iter_done)(void *ctx, const struct sv_msg_iter_done *it);
    /* PREFILL groups: the request's prompt completed at `now` (outcome.prefill_done_ns; the token
     * this step samples is discarded, as vLLM's disaggregated proxy does: the client's first
     * token comes from the decode instance) and it has left the running list; its KV blocks
     * stay held until sv_msg_pd_release(). Called inside the commit: defer work to an event. */
    void (*on_prefill_done)(void *ctx, int32_t instance, sv_msg_handoff *h);
    /* PREFILL groups, optional: an iteration that completes the prompt of `h` (a request that
     * will be handed off) has just started; `l` estimates when each of its layers finishes
     * (per-layer KV transfer). on_prefill_done follows for the same handle when it commits. */
    void (*on_prefill_launch)(void *ctx, int32_t instance, sv_msg_handoff *h,
                              const struct sv_msg_prefill_launch *l);
    /* Optional: an iteration of `instance` with at least one request was launched at `now`; `e`
     * lists its requests (id, tokens this step, KV history before it), valid during the call.
     * Every such launch commits later with on_iter_done, in launch order per group (DP dummy
     * steps, with no request, are not reported). The power model's feed (planner/power.c). */
    void (*on_iter_start)(void *ctx, int32_t instance, sv_time now,
                          const struct sv_msg_sched_entry *e, guint n);
    void *ctx;
    /* Optional, for a timeline (docs/trace.md), with its own context: each compute, PIM,
     * collective, send and memory node of the group's iteration DAGs when it finishes (receives
     * and logical nodes are not reported). With it set, nodes carry names: the operator's
     * ("L3.attn", "lm_head") where the DAG is built per operator, else "prologue", "layers",
     * "head" or "folded iteration" (docs/parallelism.md "Folded iterations"). The model's
     * times are the same with or without it. */
    void (*on_op)(void *op_ctx, const struct sv_msg_op *op);
    void *op_ctx;
};

typedef struct sv_msg sv_msg;

/* ---- parallelism helpers (msg/parallel.c; docs/parallelism.md) --------------------------- */

/* vLLM's get_pp_indices (vllm/distributed/utils.py): layers // pp per stage, the remainder one
 * each to the stages before the last, starting from the second to last. Stage `stage` runs
 * layers [*begin, *end). */
void sv_msg_pp_split(int64_t num_layers, int32_t pp_size, int32_t stage, int64_t *begin,
                     int64_t *end);

/* LLMServingSim GateFunction.expert_owner: min(e x ep / n_experts, ep - 1). */
int32_t sv_msg_expert_owner(int32_t expert, int32_t ep_size, int32_t n_experts);

/* Per EP rank load of one MoE layer from per-expert token counts: `pairs` token-expert pairs,
 * `activated` distinct experts with tokens, `local_tokens` = ceil(pairs / top_k) (the tokens of
 * a top-k=1-equivalent batch with the same expert work, the key of moe.csv). */
struct sv_msg_moe_rank {
    int64_t pairs;
    int64_t local_tokens;
    int64_t activated;
};
void sv_msg_moe_rank_load(const int64_t *counts, int32_t n_experts, int32_t ep_size, int32_t top_k,
                          struct sv_msg_moe_rank *out);

/* The MoE block's exchange on one rank (docs/parallelism.md, "The MoE exchange"): what vLLM
 * moves per MoE layer, as ASTRA-sim collectives whose comm_size follows ASTRA-sim's convention
 * (all-gather: the rank's input chunk; reduce-scatter and all-reduce: the whole buffer;
 * all-to-all: the rank's send buffer, 1/n of it to each of the n members). Pure function of the
 * step's size and the layout, so every member of a group issues the same sizes. */
struct sv_msg_moe_xchg_req {
    int64_t tokens;  /* the member's batch (a DP wave: its largest member's), >= 1 */
    int32_t dp_size; /* members sharing the experts (1 without a dp_group) */
    int32_t tp_size; /* TP ranks of a member (per stage) */
    int32_t ep_size; /* ranks of an EP group */
    int64_t hidden_size;
    int64_t num_experts;
    int32_t top_k;
    int64_t dtype_bytes;
    sv_msg_moe_comm comm;
};
struct sv_msg_moe_xchg {
    int64_t src_tokens; /* the tokens this rank dispatches (0: no dispatch) */
    /* On the EP group; bytes 0 = none. */
    sv_sys_coll_type dispatch_type;
    uint64_t dispatch_bytes;
    sv_sys_coll_type combine_type;
    uint64_t combine_bytes;
    /* After the combine, on the stage's TP group (tp_size > 1); bytes 0 = none. */
    sv_sys_coll_type tp_type;
    uint64_t tp_bytes;
};
void sv_msg_moe_xchg_plan(const struct sv_msg_moe_xchg_req *q, struct sv_msg_moe_xchg *out);

/* Expert routing "hist:W0,W1,...": each token's top_k distinct experts drawn by the given
 * per-expert weights (a load histogram from a trace; repeated cyclically over the experts). For
 * the planner to register beside msg/expert.c's built-ins. */
const struct sv_msg_expert_route_ops *sv_msg_expert_route_hist(void);
/* The built-in "balanced" table (the default of cfg.expert_route). */
const struct sv_msg_expert_route_ops *sv_msg_expert_route_balanced(void);

/* A data-parallel group of `size` members (vLLM DP): a member that wants to step waits until
 * every member has scheduled; then all run together, idle members a dummy batch of one decode
 * token, and the MoE exchange is sized by the largest member's tokens (LLMServingSim
 * dp_pending). A group where no member has work stays idle. Members join by sv_msg_new
 * (cfg.dp, cfg.dp_rank); free the group after its members. */
sv_msg_dp *sv_msg_dp_new(int32_t size);
void sv_msg_dp_free(sv_msg_dp *dp); /* accepts NULL */
int32_t sv_msg_dp_size(const sv_msg_dp *dp);

sv_msg *sv_msg_new(sv_engine *eng, const struct sv_msg_cfg *cfg, const struct sv_msg_hooks *hooks,
                   GError **error);
void sv_msg_free(sv_msg *msg); /* accepts NULL */

/* Queue an arrived request (req->arrival_ns <= now). The group reads the request's token and
 * hash ids during this call only (into its KV sequence) and keeps none of `req`; `user` is the
 * caller's tag, handed back with the outcome. The group starts an iteration at the current time
 * if it is idle (after every event already scheduled for this instant at lower priority, so
 * simultaneous arrivals join the same step). Fails when the request can never fit in the pool. */
gboolean sv_msg_submit(sv_msg *msg, const sv_wl_req *req, void *user, GError **error);

uint32_t sv_msg_num_running(const sv_msg *msg);
uint32_t sv_msg_num_waiting(const sv_msg *msg);
gboolean sv_msg_idle(const sv_msg *msg); /* no request queued, running, or in flight */
/* Requests the group holds that have neither finished nor left it: arriving through the
 * frontend, waiting, swapped out, running, and in a DECODE group those reserved whose KV is on
 * its way (a PREFILL group's handed-off requests are counted where they went). */
uint32_t sv_msg_num_held(const sv_msg *msg);
/* Tokens the waiting queue still has to compute (sum of reached - computed): a router's load. */
int64_t sv_msg_waiting_tokens(const sv_msg *msg);
uint64_t sv_msg_num_preemptions(const sv_msg *msg);
/* Iterations launched folded (sv_msg_cfg.tp_fold; docs/parallelism.md "Folded iterations"). */
uint64_t sv_msg_num_folded(const sv_msg *msg);
/* PIM attention offload counters of the group (zero without PIM). */
struct sv_msg_pim_stats {
    uint64_t iterations;    /* iterations with PIM attention */
    uint64_t sub_batched;   /* of them, split in two interleaved sub-batches */
    double busy_ns;         /* channel busy time, summed over channels */
    double slowest_ns;      /* sum over layers of the slowest channel's time (attention only) */
    uint64_t xfer_bytes;    /* NPU <-> PIM bytes */
    uint64_t decode_tokens; /* decode attention computed on PIM (sequence-layers / layers) */
};
void sv_msg_pim_stats(const sv_msg *msg, struct sv_msg_pim_stats *out);
sv_memtier_kv_manager *sv_msg_kv(const sv_msg *msg);
/* Memory-tier counters of the group (zero without tiers; docs/memory-tiers.md). */
struct sv_msg_tier_stats {
    uint64_t swap_outs, swap_ins;           /* requests swapped out / back in */
    uint64_t swap_out_bytes, swap_in_bytes; /* KV bytes moved by them */
    uint64_t swap_fallbacks;                /* swap wanted, swap space short: recomputed */
    uint64_t expert_hits, expert_misses;    /* expert cache lookups (per rank, layer, expert) */
    uint64_t expert_fetch_bytes;
    /* Bytes of this group's MEM_LOAD / MEM_STORE transfers on the tier fabric (weight streaming,
     * live KV, prefix loads, swap, expert fetches); the hierarchy's write-through flows are
     * counted by the fabric (sv_memtier_fabric_bytes_booked), not here. */
    uint64_t tier_bytes;
};
void sv_msg_get_tier_stats(const sv_msg *msg, struct sv_msg_tier_stats *out);
/* Speculative decoding counters of the group (vLLM's SpecDecodingStats,
 * vllm/v1/spec_decode/metrics.py): a draft is one request's proposal in one step. */
struct sv_msg_spec_stats {
    uint64_t num_drafts;
    uint64_t num_draft_tokens;
    uint64_t num_accepted_tokens;
    uint64_t accepted_per_pos[SV_COMPUTE_SPEC_MAX_K]; /* drafts whose position i was accepted */
    int32_t k;                                        /* positions in use (0: no speculation) */
};
void sv_msg_get_spec_stats(const sv_msg *msg, struct sv_msg_spec_stats *out);
/* Requests swapped out and not yet back (also counted in sv_msg_num_waiting). */
uint32_t sv_msg_num_swapped(const sv_msg *msg);
/* Error raised inside an event (ET write failure); NULL when none. Owned by the msg. */
const GError *sv_msg_error(const sv_msg *msg);

/* ---- prefill/decode disaggregation -------------------------------------------------------- */

/* What travels with a handed-off request: its outcome so far (times, tokens, prefix hit and
 * preemptions on the prefill group; instance = the prefill group) and the caller's tag. Valid
 * until sv_msg_pd_release. */
const struct sv_wl_outcome *sv_msg_handoff_outcome(const sv_msg_handoff *h);
void *sv_msg_handoff_user(const sv_msg_handoff *h);
/* KV blocks a request of `tokens` prompt tokens needs on `msg` (ceil(tokens / block_size)). */
uint32_t sv_msg_pd_blocks_needed(const sv_msg *msg, int64_t tokens);
/* DECODE side, back-pressure: allocate the blocks for the request's prompt KV now. NULL without
 * an error when the pool cannot give them now (nothing changed: retry later); NULL with
 * SV_MSG_ERROR_NOFIT when the whole sequence can never fit in this group's pool. */
sv_msg_handoff *sv_msg_pd_reserve(sv_msg *msg, const struct sv_wl_outcome *out, void *user,
                                  GError **error);
/* DECODE side: the KV has arrived; the request joins the waiting queue with all but its last
 * prompt token computed (vLLM recomputes that one: its next step is a one-token step that yields
 * output token 1, the client's first) and the group steps if idle. `out` (may be NULL) refreshes
 * what the prefill side learnt after the reservation (prefill-done time, kv_ready_ns,
 * preemptions). */
void sv_msg_pd_admit(sv_msg *msg, sv_msg_handoff *h, const struct sv_wl_outcome *out);
/* Free a held handoff's blocks and the request (PREFILL side once its KV has left; DECODE side
 * to cancel a reservation). */
void sv_msg_pd_release(sv_msg *msg, sv_msg_handoff *h);
/* Queued requests that hold no KV (preempted ones, to be recomputed): a DECODE group with such a
 * request gives it the free blocks first (FCFS), so no new KV is reserved there meanwhile. */
uint32_t sv_msg_pd_num_waiting_unpinned(const sv_msg *msg);
/* Start of the iteration in flight, or -1 when the group is idle (routers' step remainder). */
sv_time sv_msg_busy_since(const sv_msg *msg);

/* ---- scheduler core, exposed for unit tests and the operation mapper ---------------------- */

/* Run the batch scheduler once at the current time without executing the iteration: fills
 * `out` (caller-allocated GArray of sv_msg_sched_entry) and returns how many requests were
 * preempted in this step. The iteration is left in flight; sv_msg_commit() completes it at
 * `finish_ns` as if it had taken that long. For tests only: never mixed with the engine-driven
 * loop on one msg (set cfg.manual). */
uint32_t sv_msg_schedule_step(sv_msg *msg, GArray *out);
void sv_msg_commit(sv_msg *msg, sv_time finish_ns);

/* ---- attention/FFN disaggregation (msg/afd.c; docs/afd.md) ---------------------------------- */

#define SV_MSG_AFD_MAX_MB 64
/* Several attention instances sharing one FFN group (msg/afd_group.c; docs/afd.md "Several
 * attention instances sharing an FFN group"): members 0..size-1 step in lock-step waves and
 * their micro-batches meet on the FFN devices. The owner frees it after the members. */
sv_msg_afd_group *sv_msg_afd_group_new(int32_t size);
void sv_msg_afd_group_free(sv_msg_afd_group *g);
/* An instance's "afd" object: {"ffn_hardware": name, "ffn_npus": N (1), "micro_batches": m (2)}. */
struct sv_msg_afd_cfg {
    char ffn_hardware[32]; /* canonical catalog name of the FFN devices */
    int32_t ffn_npus;      /* FFN devices (1..4096) */
    int32_t micro_batches; /* m (1..SV_MSG_AFD_MAX_MB) */
    int32_t ffn_ep;        /* "ffn_ep": 1 true, 0 false, -1 absent (EP for a MoE model) */
    /* "ffn_group": instances naming the same group share one FFN group (MegaScale-Infer's M:N;
     * docs/afd.md "Several attention instances sharing an FFN group"); "" = their own. */
    char ffn_group[64];
};
/* Parse and validate `obj` (found at config path `where`); errors name where.key: an unknown key,
 * an ffn_hardware not in `cat` (NULL: built-ins), a count out of range, or pp_size > 1. */
gboolean sv_msg_afd_parse(JsonObject *obj, const char *where, const sv_compute_hw_catalog *cat,
                          int32_t pp_size, struct sv_msg_afd_cfg *out, GError **error);
/* Tokens of each of m micro-batches: tokens / m, the first tokens % m one more. */
void sv_msg_afd_split(int64_t tokens, int32_t m, int64_t *mb_tokens);
/* One iteration of n_layers, its tokens split into micro_batches; per layer and micro-batch i the
 * attention side takes attn_ns[i], the FFN side ffn_ns[i], and each way a transfer of
 * mb_tokens[i] x hidden_size x 2 bytes takes net_latency_ns + ceil(bytes / net_gbps) ns. */
struct sv_msg_afd_iter_req {
    int64_t n_layers;
    int32_t micro_batches;
    int64_t tokens;
    int64_t hidden_size;
    sv_time attn_ns[SV_MSG_AFD_MAX_MB];
    sv_time ffn_ns[SV_MSG_AFD_MAX_MB];
    double net_gbps; /* GB/s (1e9 B/s = bytes per ns) */
    sv_time net_latency_ns;
};
struct sv_msg_afd_iter {
    sv_time end_ns;     /* when the last micro-batch's last combine arrives (iteration start 0) */
    sv_time serial_ns;  /* the same work without overlap (sum of every op and transfer) */
    uint64_t a2f_bytes; /* dispatch bytes, all layers and micro-batches */
    uint64_t f2a_bytes; /* combine bytes */
    uint64_t n_transfers;
    int64_t mb_tokens[SV_MSG_AFD_MAX_MB];
};
/* Build the ping-pong DAG and run it with dag/'s executor (ASTRA-sim hardware rule). */
gboolean sv_msg_afd_iter_run(const struct sv_msg_afd_iter_req *q, struct sv_msg_afd_iter *out,
                             GError **error);
/* Per-layer times of one micro-batch of shape `s`: the attention side (every layer op but the
 * MLP/MoE ones) from attn_lat, the MLP/MoE ops from ffn_lat (same model). */
void sv_msg_afd_op_times(sv_compute_latency *attn_lat, sv_compute_latency *ffn_lat,
                         const struct sv_compute_batch_shape *s, sv_time *attn_ns, sv_time *ffn_ns);

G_END_DECLS

#endif
