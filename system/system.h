/* servesim system: ASTRA-sim's system layer (astra-sim/system/ at HEAD 518bd51) on top of the
 * sv_net transport: collectives split into chunks (DataSet / StreamBaseline), phases per network
 * dimension (CollectivePhase), the native algorithms (Ring, Direct = AllToAll, HalvingDoubling,
 * DoubleBinaryTree), the per-dimension queues and scheduler (QueueLevels, SchedulerUnit), endpoint
 * delay and reduction cost (MemBus / local-mem-bw), point-to-point send/recv matching, and custom
 * collectives given as a per-NPU plan of SEND / RECV / COMP operations (ASTRA-sim's
 * CustomAlgorithm over a Chakra ET).
 *
 * Timing is reproduced event by event, so that issuing the same collectives as an ASTRA-sim run
 * yields the cycles ASTRA-sim prints (see docs/collectives.md). */
#ifndef SV_SYSTEM_H
#define SV_SYSTEM_H

#include "memory-tier/memtier.h"
#include "network/network.h"

G_BEGIN_DECLS

/* Collective types numbered as Chakra's CollectiveCommType (et_def.proto), so the ET attr
 * comm_type can be passed through unchanged. Only ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER and
 * ALL_TO_ALL are simulated (as in ASTRA-sim); the others are rejected by sv_sys_coll_start. */
typedef enum {
    SV_SYS_ALL_REDUCE = 0,
    SV_SYS_REDUCE = 1,
    SV_SYS_ALL_GATHER = 2,
    SV_SYS_GATHER = 3,
    SV_SYS_SCATTER = 4,
    SV_SYS_BROADCAST = 5,
    SV_SYS_ALL_TO_ALL = 6,
    SV_SYS_REDUCE_SCATTER = 7,
    SV_SYS_REDUCE_SCATTER_BLOCK = 8,
    SV_SYS_BARRIER = 9,
    SV_SYS_TYPE_COUNT = 10,
} sv_sys_coll_type;

const char *
sv_sys_coll_type_name(sv_sys_coll_type type); /* "all-reduce", ...; "unknown" otherwise */

/* Native algorithms, ASTRA-sim CollectiveImplLookup names: "ring", "oneRing", "direct[N]",
 * "oneDirect[N]", "halvingDoubling", "oneHalvingDoubling", "doubleBinaryTree". */
typedef enum {
    SV_SYS_IMPL_RING,
    SV_SYS_IMPL_ONE_RING,
    SV_SYS_IMPL_DIRECT,
    SV_SYS_IMPL_ONE_DIRECT,
    SV_SYS_IMPL_HALVING_DOUBLING,
    SV_SYS_IMPL_ONE_HALVING_DOUBLING,
    SV_SYS_IMPL_DOUBLE_BINARY_TREE,
} sv_sys_impl_kind;

struct sv_sys_impl {
    sv_sys_impl_kind kind;
    int direct_window; /* "direct8" -> 8; -1 = no window (plain "direct") */
};

typedef enum {
    SV_SYS_SCHED_LIFO,
    SV_SYS_SCHED_FIFO,
    SV_SYS_SCHED_EXPLICIT,
} sv_sys_sched_policy;

typedef enum {
    SV_SYS_OPT_BASELINE,
    SV_SYS_OPT_LOCAL_BW_AWARE,
} sv_sys_opt;

/* The most preferred-dataset-splits a system config may ask for (docs/replay.md, "System config
 * ranges"): the ASTRA-sim configs of the interop vectors use 1 and 4; replay time grows with its
 * square. */
#define SV_SYS_MAX_DATASET_SPLITS 1024

/* ASTRA-sim system JSON (CHAKRA_ET.md 3.3) plus its command-line knobs. Defaults are
 * ASTRA-sim's (Sys::initialize_sys). Clear with sv_sys_cfg_clear (frees the custom paths). */
struct sv_sys_cfg {
    sv_sys_sched_policy scheduling_policy; /* "scheduling-policy", default LIFO */
    sv_sys_opt collective_optimization;    /* "collective-optimization", default baseline */
    int64_t endpoint_delay_ns;             /* "endpoint-delay", default 10 */
    int active_chunks_per_dimension;       /* "active-chunks-per-dimension", default 1 */
    int preferred_dataset_splits;          /* "preferred-dataset-splits", required, 1 to
                                            * SV_SYS_MAX_DATASET_SPLITS */
    double local_mem_bw;                   /* "local-mem-bw" GB/s = bytes/ns, default 0 */
    double peak_perf_tflops;               /* "peak-perf", default 0 */
    double local_reduction_delay;          /* "local-reduction-delay", default 1 (LogGP) */
    gboolean roofline_enabled;             /* "roofline-enabled" */
    gboolean replay_only;                  /* "replay-only" */
    gboolean trace_enabled;                /* "trace-enabled" */
    gboolean track_local_mem;              /* "track-local-mem" */
    gboolean model_shared_bus;             /* "model-shared-bus" (only 0 is simulated) */
    /* "<coll>-implementation": one entry per network dimension; n_impl[t] == 0 = key absent. */
    int n_impl[SV_SYS_TYPE_COUNT];
    struct sv_sys_impl impl[SV_SYS_TYPE_COUNT][SV_NET_MAX_DIMS];
    /* "<coll>-implementation-custom": the ET prefix (files <prefix>.<rank>.et), resolved against
     * the JSON file's folder first, then the cwd; NULL = none. Owned by the cfg. */
    char *custom_prefix[SV_SYS_TYPE_COUNT];
    /* Algorithm of a collective on a communicator group smaller than the machine, per type:
     * SV_SYS_IMPL_RING (the default, 0: ASTRA-sim's CommunicatorGroup always builds a ring over
     * the members) or SV_SYS_IMPL_DIRECT (AllToAll.cc over the members: n - 1 messages in flight,
     * one to each member; a servesim extension for a serving exchange whose members reach each
     * other without relaying, as NCCL's all-to-all sends to every peer at once). System JSON key
     * "servesim-group-implementation": {"all-to-all": "direct", ...} (ASTRA-sim ignores it). */
    sv_sys_impl_kind group_impl[SV_SYS_TYPE_COUNT];
    /* Command-line knobs of ASTRA-sim's main (defaults 1, 1.0, 1.0). */
    int queues_per_dim;
    double comm_scale;
    double injection_scale;
    /* servesim: run a collective phase whose links carry nothing else without its messages, in
     * closed form or from a replay of it alone (docs/collectives.md "Closed form"); FALSE: every
     * message goes through the network (default TRUE; never read from a system JSON). */
    gboolean fast_collectives;
};

void sv_sys_cfg_init(struct sv_sys_cfg *cfg); /* ASTRA-sim defaults */
void sv_sys_cfg_clear(struct sv_sys_cfg *cfg);
gboolean sv_sys_cfg_load_json(const char *path, struct sv_sys_cfg *cfg, GError **error);
/* Write `cfg` as an ASTRA-sim system JSON for a network of `ndims` dimensions (1 to
 * SV_NET_MAX_DIMS): every key sv_sys_cfg_load_json reads, in a fixed order, with ASTRA-sim's
 * spelling, plus "boost-mode": 0. An implementation list holds the first min(n_impl, ndims)
 * entries (a list shorter than the network keeps its meaning: collectives over the listed
 * dimensions only); an absent list (n_impl 0) stays absent. group_impl other than ring goes
 * under "servesim-group-implementation"; a custom prefix is written as an absolute path.
 * queues_per_dim, comm_scale and injection_scale are ASTRA-sim command-line options, not keys:
 * when not 1 they are named, as the options that give them, in "servesim-command-line"
 * (read by nobody); fast_collectives (the same cycles either way) is not written. Doubles read
 * back exactly. Written to a temporary file renamed over `path`: never half a file. FALSE +
 * error naming the field on a value the reader would refuse (nothing written). */
gboolean sv_sys_cfg_save_json(const struct sv_sys_cfg *cfg, int ndims, const char *path,
                              GError **error);
/* Parse one implementation name ("ring", "direct8", ...). */
gboolean sv_sys_impl_parse(const char *name, struct sv_sys_impl *out, GError **error);

/* Communicator groups ({"<id>": [npu, ...]}, id > 0; group 0 = all NPUs, implicit). */
typedef struct sv_sys_groups sv_sys_groups;
sv_sys_groups *sv_sys_groups_new(void);
void sv_sys_groups_free(sv_sys_groups *groups);
/* Members are copied; ids must be unique and > 0, members distinct and >= 0. */
gboolean sv_sys_groups_add(sv_sys_groups *groups, int id, const int *npus, int n, GError **error);
sv_sys_groups *sv_sys_groups_load_json(const char *path, GError **error);
int sv_sys_groups_count(const sv_sys_groups *groups);
/* Members of group `id` (NULL if absent); *n gets the count. */
const int *sv_sys_groups_members(const sv_sys_groups *groups, int id, int *n);
/* The id of the i-th group in id order (0 <= i < sv_sys_groups_count). */
int sv_sys_groups_id_at(const sv_sys_groups *groups, int i);
/* Write {"<id>": [member - npu_base, ...], ...} (ASTRA-sim's comm-group JSON, what
 * sv_sys_groups_load_json reads) for groups `ids[0..n_ids)` in that order, or every group in id
 * order when ids is NULL (groups may be NULL then: "{}"). Members keep their order. An absent or
 * repeated id, or a member below npu_base, is an error (nothing written). Atomic as above. */
gboolean sv_sys_groups_save_json(const sv_sys_groups *groups, const int *ids, int n_ids,
                                 int npu_base, const char *path, GError **error);

/* Custom collective plan: per rank (position in the communicator), the operations of ASTRA-sim's
 * per-NPU collective ET, executed as CustomAlgorithm does: operations whose dependencies are all
 * done are issued; SEND/RECV move `bytes` (the ET's comm_size; the collective's own size is
 * ignored, as upstream); COMP takes duration_ns (0 -> 1 ns); the rank's part completes when no
 * operation is running or ready. `peer` is a rank in the communicator. */
typedef enum {
    SV_SYS_OP_SEND,
    SV_SYS_OP_RECV,
    SV_SYS_OP_COMP,
} sv_sys_op_kind;

struct sv_sys_plan_op {
    uint64_t id; /* ET node id, unique within the rank */
    sv_sys_op_kind kind;
    int peer;            /* SEND: dst rank, RECV: src rank */
    int tag;             /* SEND/RECV comm_tag */
    uint64_t bytes;      /* SEND/RECV comm_size */
    sv_time duration_ns; /* COMP */
    int ndeps;
    const uint64_t *deps; /* ids of operations of the same rank; copied */
};

typedef struct sv_sys_plan sv_sys_plan;
sv_sys_plan *sv_sys_plan_new(int ranks);
void sv_sys_plan_free(sv_sys_plan *plan);
gboolean sv_sys_plan_add_op(sv_sys_plan *plan, int rank, const struct sv_sys_plan_op *op,
                            GError **error);

/* The system layer of every NPU of `net`. */
typedef struct sv_sys sv_sys;
/* `groups` may be NULL; it is copied. Fails on an invalid configuration (group member out of
 * range, implementation list not matching the network's dimensions, splits 0) and, with
 * SV_NET_ERROR_UNSUPPORTED, on what ASTRA-sim cannot run: halvingDoubling / doubleBinaryTree over
 * a dimension that is not a power of two, halvingDoubling all-to-all, doubleBinaryTree as the
 * last entry of a list shorter than the network's dimensions (docs/collectives.md). */
sv_sys *sv_sys_new(sv_net *net, const struct sv_sys_cfg *cfg, const sv_sys_groups *groups,
                   GError **error);
void sv_sys_free(sv_sys *sys);
/* What the system layer runs with: its copy of the configuration (custom prefixes as resolved;
 * fast_collectives as last set) and of the communicator groups (empty, never NULL, without). */
const struct sv_sys_cfg *sv_sys_get_cfg(const sv_sys *sys);
const sv_sys_groups *sv_sys_get_groups(const sv_sys *sys);
/* Use `plan` (taken over) for every collective of `type` instead of the native algorithms
 * (what "<coll>-implementation-custom" selects). The replay fills it from the ET files. */
gboolean sv_sys_set_custom_plan(sv_sys *sys, sv_sys_coll_type type, sv_sys_plan *plan,
                                GError **error);

typedef void (*sv_sys_done_fn)(sv_engine *eng, void *ctx, uint64_t arg);

/* Issue NPU `npu`'s part of a collective of `bytes` at the current engine time (ASTRA-sim
 * Sys::generate_collective). `involved_dims` (ndims entries, NULL = all dimensions) selects the
 * network dimensions; `group_id` 0 = all NPUs; `priority` orders streams under EXPLICIT
 * scheduling. `done` fires when this NPU's DataSet completes. Every member must issue its
 * collectives in the same order (streams are matched by issue order). */
gboolean sv_sys_coll_start(sv_sys *sys, int npu, sv_sys_coll_type type, uint64_t bytes,
                           const gboolean *involved_dims, int ndims, int group_id, int priority,
                           sv_sys_done_fn done, void *ctx, uint64_t arg, GError **error);

/* The time from issue to `done` of an all-reduce of `bytes` on communicator group `group_id`
 * (0 = all NPUs) that every member issues at the same instant, with no other collective of its
 * members running and no other traffic on its links: what sv_sys_coll_start would take, to the
 * nanosecond, without running it (system/alone.c gives the form and what it covers: one ring
 * phase of one chunk whose steps are link-disjoint and equally long). FALSE when the collective
 * is not covered; whether its links are free is the caller's to know. */
gboolean sv_sys_coll_alone_ns(const sv_sys *sys, sv_sys_coll_type type, uint64_t bytes,
                              int group_id, sv_time *out_ns);
/* Count `times` such all-reduces (every member's messages, clockwise) in the network's statistics
 * as if they had run (sv_net_book), so that bytes booked stay bytes moved when a caller folds
 * them. Only for a collective sv_sys_coll_alone_ns covers. */
void sv_sys_coll_alone_book(sv_sys *sys, sv_sys_coll_type type, uint64_t bytes, int group_id,
                            uint64_t times);

/* Point-to-point (Sys::front_end_sim_send / sim_recv over the analytical backends): messages are
 * matched by (tag, src, dst, bytes) and the occurrence count of that tuple. The sender's `done`
 * fires when the message has arrived; the receiver's when the message has arrived and the recv is
 * posted (a recv posted after arrival completes 0 ns later). */
gboolean sv_sys_send(sv_sys *sys, int src, int dst, int tag, uint64_t bytes, sv_sys_done_fn done,
                     void *ctx, uint64_t arg, GError **error);
gboolean sv_sys_recv(sv_sys *sys, int self, int src, int tag, uint64_t bytes, sv_sys_done_fn done,
                     void *ctx, uint64_t arg, GError **error);

/* An unfinished point-to-point operation (for "cannot finish" diagnostics). */
struct sv_sys_p2p_pending {
    gboolean is_send; /* TRUE: a send whose message has not arrived or that no recv matched */
    gboolean arrived; /* send: the message is at dst, waiting for a matching recv */
    int src, dst, tag;
    uint64_t bytes;
    sv_time posted_at;
};
/* Unmatched / incomplete p2p operations in posting order (GArray of struct
 * sv_sys_p2p_pending, caller frees). */
GArray *sv_sys_p2p_pending(const sv_sys *sys);
/* How the phases of collectives ran (docs/collectives.md "Closed form"): each phase instance
 * (one chunk's phase over the NPUs of one ring / group) counts once. */
struct sv_sys_virt_stats {
    uint64_t closed_form; /* computed by the closed form of a ring */
    uint64_t replayed;    /* computed by replaying it alone (a shadow run) */
    uint64_t memo_hits;   /* the same shape as one computed before */
    uint64_t contended;   /* switched to messages when other traffic came onto its links */
    uint64_t gave_up;     /* members did not all start within the endpoint delay, or its links
                             were busy when they had: ran with messages from then */
    uint64_t messages;    /* messages not sent (the phases that ran virtually to their end) */
};
void sv_sys_get_virt_stats(const sv_sys *sys, struct sv_sys_virt_stats *out);
/* sv_sys_cfg.fast_collectives of an existing system layer, before its first collective. */
void sv_sys_set_fast_collectives(sv_sys *sys, gboolean fast);
/* A run that stopped with collectives some members never started: let the phases still waiting
 * for members hold their state as messages would (posted sends and recvs, for
 * sv_sys_p2p_pending). Call when no event is left, before diagnosing. */
void sv_sys_settle(sv_sys *sys);

/* Collectives issued and not yet done, summed over NPUs. */
uint64_t sv_sys_coll_active(const sv_sys *sys);
/* Point-to-point matching channels, one per (tag, src, dst, size), now held: a channel is freed
 * once every send on it met its recv and no running stream uses it, so this stays bounded by
 * what is in flight (memory in long runs; tests/system/test_collective.c). */
guint sv_sys_live_channels(const sv_sys *sys);

/* ---- DAG executor handlers ----------------------------------------------------------------
 *
 * What a DAG comm or memory node does, written once for replay, serving (msg) and PD: each is a
 * sv_dag_handler_fn whose ctx is a struct sv_sys_exec. A caller whose executor has other handlers
 * (compute, logical) puts the struct first in its handler context, or calls these from its own
 * handler. The node completes (sv_dag_exec_node_done) when the operation does, with no other
 * delay, so timing is the system layer's alone.
 *
 * Attributes are checked as ASTRA-sim's Workload::issue_comm / issue_remote_mem check them, with
 * its words ("attribute comm_size not found in node 7"); an error goes to `fail` with the NPU
 * and node appended, and the node never completes. */
/* dag/dag.h's types, declared here so that headers above (msg.h, which plugins include) need not
 * pull in the DAG and its generated protobuf header; system/exec.c includes dag/dag.h. */
typedef struct sv_dag_exec sv_dag_exec;
struct sv_dag_node;

struct sv_sys_exec {
    sv_sys *sys;            /* collectives and matched send/recv (coll, send, recv) */
    sv_net *net;            /* one-sided transfers (sv_sys_exec_transfer) */
    sv_memtier_remote *mem; /* remote memory nodes (sv_sys_exec_mem) */
    int npu;                /* the NPU issuing every node; -1 = each node's device */
    /* Serving DAGs name a collective's communicator group by comm_tag; Chakra ETs by pg_name
     * ("" or "0" = all NPUs, else a decimal group id). */
    gboolean group_in_comm_tag;
    /* Takes the error. NULL: the error is logged as critical and dropped. */
    void (*fail)(void *fail_ctx, GError *error);
    void *fail_ctx;
    sv_dag_exec *ex; /* set by the handlers: the executor that issued the nodes */
};

/* COMM_COLL: the node's collective (comm_type, comm_size, involved_dims, comm_priority; group as
 * above) from its NPU. BROADCAST is not simulated (as upstream): it finishes after its duration
 * (0 -> 1 ns). Other types than all-reduce, all-gather, reduce-scatter and all-to-all fail. */
void sv_sys_exec_coll(sv_dag_exec *ex, struct sv_dag_node *node, void *ctx);
/* COMM_SEND / COMM_RECV: a send to comm_dst / recv from comm_src, matched by (comm_tag, src,
 * dst, comm_size) through sv_sys_send / sv_sys_recv. comm_src of a send and comm_dst of a recv
 * default to, and must be, the own NPU. */
void sv_sys_exec_send(sv_dag_exec *ex, struct sv_dag_node *node, void *ctx);
void sv_sys_exec_recv(sv_dag_exec *ex, struct sv_dag_node *node, void *ctx);
/* COMM_SEND with no recv: comm_size bytes from comm_src to comm_dst straight on the network,
 * done when they have arrived (the KV hand-off between PD instances). */
void sv_sys_exec_transfer(sv_dag_exec *ex, struct sv_dag_node *node, void *ctx);
/* MEM_LOAD / MEM_STORE: tensor_size bytes through the remote memory model. */
void sv_sys_exec_mem(sv_dag_exec *ex, struct sv_dag_node *node, void *ctx);
/* For sv_dag_exec_cfg.describe_issued: what an issued comm node waits for. */
void sv_sys_exec_describe(sv_dag_exec *ex, const struct sv_dag_node *node, GString *out, void *ctx);

G_END_DECLS

#endif
