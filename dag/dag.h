/* servesim dag: the operator DAG, its dynamic API, the executor, and DAG <-> Chakra ET.
 *
 * A DAG holds nodes (compute, collective, send/recv, memory load/store, metadata, and servesim's
 * PIM and LOGICAL kinds) joined by parent -> child edges of two kinds, data and control (Chakra's
 * data_deps / ctrl_deps, ../shared/interop/CHAKRA_ET.md 1.4). The graph may grow and be rewired
 * while an executor runs it (add node, add edge, pop edges, splice), as Simthesizer's dynamic DAG
 * does (DESIGN.md).
 *
 * The executor releases ready nodes in ascending id and books them on per-device resources through
 * a policy (default: ASTRA-sim's HardwareResource rule, CHAKRA_ET.md 1.5). It does not know what a
 * node does: a handler per kind starts the node and later calls sv_dag_exec_node_done().
 *
 * Memory: nodes live in fixed-size pages (stable pointers, one allocation per page), edges in one
 * array with free-list reuse, names in a string chunk: no allocation per node or edge.
 *
 * docs/dag.md describes the model, the policy and the diagnosis output. */
#ifndef SV_DAG_H
#define SV_DAG_H

#include <glib.h>
#include <stdint.h>

#include "core/core.h"
#include "proto/proto.h"

G_BEGIN_DECLS

/* ---- errors ----------------------------------------------------------------------------- */

#define SV_DAG_ERROR (sv_dag_error_quark())
GQuark sv_dag_error_quark(void);
typedef enum {
    SV_DAG_ERROR_DUPLICATE_ID, /* a node id already in the graph */
    SV_DAG_ERROR_NOT_FOUND,    /* a node id absent from the graph (incl. dangling ET deps) */
    SV_DAG_ERROR_CYCLE,        /* dependency cycle (the message prints one) */
    SV_DAG_ERROR_STATE,        /* edit not allowed in the node's run state (e.g. issued child) */
    SV_DAG_ERROR_INVALID,      /* bad value (kind out of range, self edge, ...) */
    SV_DAG_ERROR_STALL,        /* the executor cannot finish (message = diagnosis) */
} sv_dag_error_code;

/* ---- node kinds ------------------------------------------------------------------------- */

/* Values 0..7 equal ChakraProtoMsg.NodeType (CHAKRA_ET.md 1.1); PIM and LOGICAL are servesim's
 * and are exported as COMP_NODE / METADATA_NODE with attribute sv_kind = "pim" / "logical". */
typedef enum {
    SV_DAG_KIND_INVALID = 0,
    SV_DAG_KIND_METADATA = 1,
    SV_DAG_KIND_MEM_LOAD = 2,
    SV_DAG_KIND_MEM_STORE = 3,
    SV_DAG_KIND_COMP = 4,
    SV_DAG_KIND_COMM_SEND = 5,
    SV_DAG_KIND_COMM_RECV = 6,
    SV_DAG_KIND_COMM_COLL = 7,
    SV_DAG_KIND_PIM = 8,     /* compute on PIM channels */
    SV_DAG_KIND_LOGICAL = 9, /* routing / batching / breakpoint decision */
    SV_DAG_KIND_COUNT = 10,
} sv_dag_kind;

/* "INVALID", "METADATA", "MEM_LOAD", "MEM_STORE", "COMP", "COMM_SEND", "COMM_RECV", "COMM_COLL",
 * "PIM", "LOGICAL"; NULL when out of range. */
const char *sv_dag_kind_name(sv_dag_kind kind);

/* Chakra CollectiveCommType values (CHAKRA_ET.md 1.1). */
typedef enum {
    SV_DAG_COLL_ALL_REDUCE = 0,
    SV_DAG_COLL_REDUCE = 1,
    SV_DAG_COLL_ALL_GATHER = 2,
    SV_DAG_COLL_GATHER = 3,
    SV_DAG_COLL_SCATTER = 4,
    SV_DAG_COLL_BROADCAST = 5,
    SV_DAG_COLL_ALL_TO_ALL = 6,
    SV_DAG_COLL_REDUCE_SCATTER = 7,
    SV_DAG_COLL_REDUCE_SCATTER_BLOCK = 8,
    SV_DAG_COLL_BARRIER = 9,
} sv_dag_coll;

typedef enum {
    SV_DAG_EDGE_DATA = 0,
    SV_DAG_EDGE_CTRL = 1,
} sv_dag_edge_kind;

/* ---- nodes ------------------------------------------------------------------------------ */

/* Which typed parameters are set (bits of sv_dag_params.has). A set parameter is exported as the
 * Chakra attribute named in the comment, with the kind CHAKRA_ET.md 1.3 recommends. */
enum {
    SV_DAG_HAS_COMM_TYPE = 1u << 0,     /* comm_type     int64_val */
    SV_DAG_HAS_COMM_SIZE = 1u << 1,     /* comm_size     int64_val */
    SV_DAG_HAS_COMM_SRC = 1u << 2,      /* comm_src      int32_val */
    SV_DAG_HAS_COMM_DST = 1u << 3,      /* comm_dst      int32_val */
    SV_DAG_HAS_COMM_TAG = 1u << 4,      /* comm_tag      int32_val */
    SV_DAG_HAS_COMM_PRIORITY = 1u << 5, /* comm_priority int32_val */
    SV_DAG_HAS_TENSOR_SIZE = 1u << 6,   /* tensor_size   uint64_val */
    SV_DAG_HAS_NUM_OPS = 1u << 7,       /* num_ops       int64_val */
    SV_DAG_HAS_IS_CPU_OP = 1u << 8,     /* is_cpu_op     bool_val */
    SV_DAG_HAS_INVOLVED_DIMS = 1u << 9, /* involved_dim  bool_list */
    SV_DAG_HAS_PG_NAME = 1u << 10,      /* pg_name       string_val */
};

/* Maximum network dimensions in involved_dims. */
#define SV_DAG_MAX_DIMS 32

struct sv_dag_params {
    uint32_t has;      /* SV_DAG_HAS_* bits; a field whose bit is clear is "absent" */
    int32_t comm_type; /* sv_dag_coll */
    int32_t comm_src;
    int32_t comm_dst;
    int32_t comm_tag;
    int32_t comm_priority;
    uint64_t comm_size_bytes;
    uint64_t tensor_size_bytes;
    int64_t num_ops;
    gboolean is_cpu_op;
    uint32_t involved_dims;   /* bit i: dimension i takes part */
    uint32_t n_involved_dims; /* list length (<= SV_DAG_MAX_DIMS) */
    const char *pg_name;      /* owned by the DAG (set with sv_dag_node_set_pg_name) */
};

/* A node. Pointers stay valid for the DAG's lifetime (nodes are never removed). `id`, `kind` and
 * `index` are read-only; the other fields may be edited until the node is issued (pg_name and
 * name through the setters below, as the DAG owns the strings). */
typedef struct sv_dag_node {
    uint64_t id;      /* unique in the DAG, not dense (Chakra node id) */
    const char *name; /* owned by the DAG; never NULL ("" when none) */
    sv_dag_kind kind;
    int32_t device;      /* device / NPU index */
    sv_time duration_ns; /* replay time (Chakra duration_micros * 1000) */
    struct sv_dag_params p;
    void *user;     /* opaque, for the code that built the node */
    uint32_t index; /* dense insertion index (sv_dag_node_at) */
} sv_dag_node;

/* What sv_dag_node_add copies (strings are copied into the DAG). */
struct sv_dag_node_cfg {
    uint64_t id;
    const char *name; /* NULL = "" */
    sv_dag_kind kind;
    int32_t device;
    sv_time duration_ns;
    struct sv_dag_params p; /* p.pg_name copied when SV_DAG_HAS_PG_NAME */
    void *user;
};

/* Run state of a node under an executor (SV_DAG_NODE_WAITING without one). */
typedef enum {
    SV_DAG_NODE_WAITING = 0, /* has unfinished parents (or no executor started) */
    SV_DAG_NODE_READY,       /* all parents finished; not yet issued (maybe blocked) */
    SV_DAG_NODE_ISSUED,      /* handler called, sv_dag_exec_node_done not yet */
    SV_DAG_NODE_DONE,
} sv_dag_node_state;

/* One end of an edge, as returned by the adjacency queries and sv_dag_pop_edges. */
typedef struct {
    sv_dag_node *node;
    sv_dag_edge_kind kind;
} sv_dag_link;

/* ---- the graph -------------------------------------------------------------------------- */

typedef struct sv_dag sv_dag;

sv_dag *sv_dag_new(void);
/* An empty DAG whose sv_dag_next_id starts at first_id (a DAG that continues another's ids: the
 * serving groups' ET output writes ids unique over the run). */
sv_dag *sv_dag_new_from(uint64_t first_id);
void sv_dag_free(sv_dag *dag); /* accepts NULL */

size_t sv_dag_node_count(const sv_dag *dag);
size_t sv_dag_edge_count(const sv_dag *dag); /* data + ctrl */
size_t sv_dag_edge_count_kind(const sv_dag *dag, sv_dag_edge_kind kind);
/* 1 + the largest id ever added (0 for an empty DAG): a fresh id for dynamic additions. */
uint64_t sv_dag_next_id(const sv_dag *dag);

/* Add a node. Fails on a duplicate id or a kind out of range. Allowed while an executor runs: a
 * node without parents becomes ready at once and is issued in the next issue pass (see
 * sv_dag_exec_kick). */
sv_dag_node *sv_dag_node_add(sv_dag *dag, const struct sv_dag_node_cfg *cfg, GError **error);
sv_dag_node *sv_dag_node_find(const sv_dag *dag, uint64_t id); /* NULL if absent */
sv_dag_node *sv_dag_node_at(const sv_dag *dag, size_t index);  /* insertion order */
void sv_dag_node_set_pg_name(sv_dag *dag, sv_dag_node *node, const char *pg_name); /* NULL clears */

sv_dag_node_state sv_dag_node_get_state(const sv_dag *dag, const sv_dag_node *node);
/* Times the executor issued / finished the node; -1 before that. */
sv_time sv_dag_node_start_ns(const sv_dag *dag, const sv_dag_node *node);
sv_time sv_dag_node_end_ns(const sv_dag *dag, const sv_dag_node *node);

/* Adjacency, in edge insertion order (for ET-loaded nodes: the order of data_deps, then ctrl_deps,
 * as in the file). Appends sv_dag_link records to `out` (element size sizeof(sv_dag_link)) and
 * returns how many were appended. */
size_t sv_dag_node_parents(const sv_dag *dag, const sv_dag_node *node, GArray *out);

/* Add parent -> child. Refused (SV_DAG_ERROR_STATE) when the child is already issued or finished;
 * an edge from a finished parent counts as satisfied at once. A ready child that gains an
 * unfinished parent goes back to waiting. Duplicate edges are kept (Chakra allows repeated ids).
 * A self edge is SV_DAG_ERROR_INVALID; other cycles are not checked here (sv_dag_check_acyclic). */
gboolean sv_dag_edge_add(sv_dag *dag, sv_dag_node *parent, sv_dag_node *child,
                         sv_dag_edge_kind kind, GError **error);
/* Same, by id (SV_DAG_ERROR_NOT_FOUND naming the missing id). */
gboolean sv_dag_edge_add_id(sv_dag *dag, uint64_t parent, uint64_t child, sv_dag_edge_kind kind,
                            GError **error);

/* Detach all of node's out-edges and return the old children (a new GArray of sv_dag_link, in
 * edge order; g_array_unref it). A child whose last unfinished parent was `node` becomes ready.
 * Usable while running. */
GArray *sv_dag_pop_edges(sv_dag *dag, sv_dag_node *node);

/* Put the subgraph first..last between `node` and its current children: pops node's out-edges,
 * adds node -> first (data) and last -> each old child (with the old edge's kind). `first` may
 * equal `last`. Refused, changing nothing, if an old child is already issued or finished (it can
 * no longer wait for `last`) or if first/last is issued/finished. Works while running; if `node`
 * has finished, `first` becomes ready as soon as its own other parents have. */
gboolean sv_dag_splice(sv_dag *dag, sv_dag_node *node, sv_dag_node *first, sv_dag_node *last,
                       GError **error);

/* Static check over both edge kinds: FALSE + SV_DAG_ERROR_CYCLE with a message that prints one
 * cycle ("dependency cycle: 3 -> 4 -> 5 -> 3 (node ids)"). */
gboolean sv_dag_check_acyclic(const sv_dag *dag, GError **error);

/* ---- executor --------------------------------------------------------------------------- */

typedef struct sv_dag_exec sv_dag_exec;

/* Starts a node. It must eventually call sv_dag_exec_node_done(ex, node) (possibly at once,
 * possibly from an engine event). */
typedef void (*sv_dag_handler_fn)(sv_dag_exec *ex, sv_dag_node *node, void *ctx);
typedef void (*sv_dag_exec_done_fn)(sv_dag_exec *ex, void *ctx);
/* Appends a short explanation of why an issued node has not finished ("recv from 3 tag 7 has no
 * matching send"), for the diagnosis. */
typedef void (*sv_dag_describe_fn)(sv_dag_exec *ex, const sv_dag_node *node, GString *out,
                                   void *ctx);

/* A booking rule: whether a ready node may start now on its device. The executor calls
 * available() for each ready node in ascending id, then occupy() before the handler and release()
 * on completion. `state` is per executor (state_new/state_free, both optional). */
struct sv_dag_policy {
    const char *name;
    void *(*state_new)(void *ctx);
    void (*state_free)(void *state);
    gboolean (*available)(void *state, const sv_dag_node *node);
    void (*occupy)(void *state, const sv_dag_node *node);
    void (*release)(void *state, const sv_dag_node *node);
    /* Optional: why `node` is blocked ("comm slot on device 0 held by node 7"). */
    void (*describe_block)(void *state, const sv_dag_node *node, GString *out);
    void *ctx; /* passed to state_new */
};

typedef enum {
    /* ASTRA-sim HardwareResource: per device at most one CPU op (COMP with is_cpu_op), one GPU
     * compute op (COMP) and one comm op (COMM_COLL, COMM_SEND, MEM_LOAD, MEM_STORE, METADATA,
     * INVALID) in flight; COMM_RECV bypasses the slots. servesim's kinds: PIM has its own slot
     * (one PIM op per device; PIM channels run beside the GPU), LOGICAL bypasses. */
    SV_DAG_POLICY_ASTRA = 0,
    SV_DAG_POLICY_UNLIMITED, /* every ready node starts at once */
    SV_DAG_POLICY_CUSTOM,    /* cfg.custom_policy */
} sv_dag_policy_kind;

struct sv_dag_exec_cfg {
    sv_dag_policy_kind policy;
    const struct sv_dag_policy *custom_policy; /* SV_DAG_POLICY_CUSTOM; copied */
    /* Chakra feeder v1 semantics: only data edges gate readiness (default: both, ASTRA-sim). */
    gboolean ignore_ctrl_deps;
    /* Per kind; NULL falls back to default_handler, and a NULL default_handler to the built-ins:
     * sv_dag_exec_handler_skip for INVALID, METADATA and LOGICAL, sv_dag_exec_handler_replay
     * for every other kind. */
    sv_dag_handler_fn handlers[SV_DAG_KIND_COUNT];
    sv_dag_handler_fn default_handler;
    void *handler_ctx;
    /* Called after a node finished and its children were freed, before the next issue pass. */
    sv_dag_handler_fn on_node_done;
    /* Called once each time the executor goes from "nodes remain" to "every node done". */
    sv_dag_exec_done_fn on_all_done;
    sv_dag_describe_fn describe_issued; /* optional, for sv_dag_exec_diagnose */
    void *cb_ctx;                       /* for on_node_done, on_all_done, describe_issued */
};

/* Attach an executor to `dag` (one at a time: SV_DAG_ERROR_STATE otherwise). Nothing runs until
 * sv_dag_exec_start / sv_dag_exec_run. cfg NULL = all defaults (ASTRA policy, replay handlers). */
sv_dag_exec *sv_dag_exec_new(sv_dag *dag, sv_engine *eng, const struct sv_dag_exec_cfg *cfg,
                             GError **error);
/* Accepts NULL; detaches from the DAG. Events the built-in replay handler scheduled hold the
 * executor: free it once the engine has run dry (or free the engine first). */
void sv_dag_exec_free(sv_dag_exec *ex);

sv_dag *sv_dag_exec_dag(const sv_dag_exec *ex);
sv_engine *sv_dag_exec_engine(const sv_dag_exec *ex);

/* First issue pass, now (ASTRA-sim Workload::fire). Idempotent. */
void sv_dag_exec_start(sv_dag_exec *ex);
/* Node finished: release its resource, free its children, call on_node_done, then issue ready
 * nodes in ascending id (ASTRA-sim Workload::call). May be called from within a handler. */
void sv_dag_exec_node_done(sv_dag_exec *ex, sv_dag_node *node);
/* Schedule an issue pass at the current time (after dynamic edits made outside a handler or
 * completion; the DAG edits do this themselves when they make a node ready). */
void sv_dag_exec_kick(sv_dag_exec *ex);

gboolean sv_dag_exec_finished(const sv_dag_exec *ex); /* started and every node done */
size_t sv_dag_exec_n_done(const sv_dag_exec *ex);
sv_time sv_dag_exec_finish_ns(const sv_dag_exec *ex); /* time the last node finished, or -1 */

/* Start if needed and run the engine until it has no event left. TRUE when every node finished;
 * otherwise FALSE + SV_DAG_ERROR_STALL whose message is the diagnosis. */
gboolean sv_dag_exec_run(sv_dag_exec *ex, GError **error);

/* Why unfinished nodes are not done (appended to `out`, one line each, grouped and capped):
 *   cycle: a dependency cycle among unfinished nodes ("cycle: 3 -> 4 -> 3")
 *   issued: started but the handler never completed (+ describe_issued detail)
 *   blocked: ready but the resource is held (+ policy describe_block)
 *   waiting: unfinished parents, listed with their states
 * Returns the number of unfinished nodes. */
size_t sv_dag_exec_diagnose(const sv_dag_exec *ex, GString *out);

/* Built-in handlers. replay: finish after duration_ns, 0 -> 1 ns (ASTRA-sim issue_replay).
 * skip: finish at once (ASTRA-sim skip_invalid). */
void sv_dag_exec_handler_replay(sv_dag_exec *ex, sv_dag_node *node, void *ctx);
void sv_dag_exec_handler_skip(sv_dag_exec *ex, sv_dag_node *node, void *ctx);

/* ---- Chakra ET ---------------------------------------------------------------------------- */

struct sv_dag_et_opts {
    int32_t device;                /* device of every loaded node */
    gboolean ignore_dangling_ctrl; /* drop ctrl deps on absent ids (PyTorch traces have them) */
    gboolean ignore_dangling_data; /* same for data deps */
    /* Durations from servesim's attribute sv_duration_ns (the exact nanoseconds, written when
     * not a whole microsecond) where it agrees with duration_micros; FALSE (default): from
     * duration_micros x 1000 alone, what ASTRA-sim and Chakra read. */
    gboolean precise_durations;
};

/* Stream one .et / .et.gz file into a new DAG (opts NULL = device 0, dangling deps are errors).
 * Types map one to one (sv_kind = "pim"/"logical" read back as PIM/LOGICAL); known attributes
 * (CHAKRA_ET.md 1.3, first match wins, any integer kind) fill sv_dag_params; duration_ns =
 * duration_micros * 1000, or with opts->precise_durations the first sv_duration_ns whose whole
 * microseconds equal duration_micros. Every original attribute (sv_duration_ns too, unless
 * precise_durations took it), start_time_micros, inputs and outputs are kept for export. Errors
 * name the file and the node ("dependency on absent node 42: x.et: node 7 (message 8)"). */
sv_dag *sv_dag_load_et(const char *path, const struct sv_dag_et_opts *opts, GError **error);

/* Write every node (sv_dag_save_et) or those of one device (sv_dag_save_et_device; edges to
 * other devices' nodes are not representable in a per-NPU file and are left out) in insertion
 * order. The GlobalMetadata is the loaded file's, else version "0.0.4". ".gz" compresses. */
gboolean sv_dag_save_et(const sv_dag *dag, const char *path, GError **error);
gboolean sv_dag_save_et_device(const sv_dag *dag, int32_t device, const char *path, GError **error);

/* ---- ET output of a running simulation (servesim run --emit-et; docs/chakra.md "Emitted sets")
 *
 * A serving DAG is written in pieces (a batch's nodes when it is launched or has finished) into
 * per-device files that Chakra's tools and ASTRA-sim read: */

#define SV_DAG_ET_NO_ID UINT64_MAX

/* A file's clock: a chain of compute nodes ("wait": GPU ops without work, num_ops and
 * tensor_size 0) that makes a node start no earlier than a time of the run, written where the
 * device's GPU is idle in the run until that time (a wait holds the GPU slot of ASTRA-sim's
 * hardware rule). `at` is the time the chain has reached and `last_id` the node it ends with (a
 * wait, or any node of the file that ends at `at`). */
struct sv_dag_et_clock {
    sv_time at;       /* the time the chain has reached */
    uint64_t last_id; /* its last node, SV_DAG_ET_NO_ID (set by init) for none */
    uint64_t next_id; /* id of the next node written outside the DAG (waits, transfers) */
};
void sv_dag_et_clock_init(struct sv_dag_et_clock *c, sv_time origin, uint64_t first_id);
/* The chain node that ends at `t`: writes one more wait of t - at when t > at. *id is
 * SV_DAG_ET_NO_ID when nothing needs waiting for (t at or before the origin of an empty chain). A
 * t before the chain's end cannot be expressed by this chain: *id is SV_DAG_ET_NO_ID and the
 * function returns FALSE without an error set (callers keep chains monotone). */
gboolean sv_dag_et_clock_at(struct sv_dag_et_clock *c, sv_proto_writer *w, sv_time t, uint64_t *id,
                            GError **error);

struct sv_dag_et_put {
    int32_t device;                  /* the file's device */
    uint32_t first_index, end_index; /* the nodes written: insertion indexes [first, end) */
    uint64_t id_base;                /* written id = id_base + node id */
    int32_t npu_base;                /* written comm_src / comm_dst = value - npu_base */
    /* Dependencies on this device's nodes before first_index are written (the file holds them:
     * run scope); FALSE leaves them out, as dependencies on other devices' nodes always are. */
    gboolean prior_deps;
    /* Serving DAGs name a collective's group by comm_tag (sv_sys_exec.group_in_comm_tag):
     * written as pg_name (ASTRA-sim's and Chakra's field), comm_tag left out. */
    gboolean pg_from_tag;
    /* Optional: the time of the run at which a root (a node with no written parent in [first,
     * end)) may start; it then gets a ctrl dependency on `clock` at that time. Roots are put on
     * the chain in time order. */
    sv_time (*root_time)(void *ctx, const sv_dag_node *node);
    void *root_ctx;
    struct sv_dag_et_clock *clock; /* required with root_time */
    const uint64_t *root_deps;     /* more ctrl dependencies of every root (written ids) */
    size_t n_root_deps;
};
/* Write the nodes of o->device in [first, end) to `w` (the metadata already written):
 *  - LOGICAL nodes are not written (ASTRA-sim aborts on METADATA nodes); a dependency on one
 *    becomes dependencies on its nearest written ancestors;
 *  - COMP and PIM nodes carry is_cpu_op (false unless set), PIM nodes sv_kind "pim";
 *  - duration_micros = floor(duration_ns / 1000), and sv_duration_ns the exact value when it is
 *    not a whole microsecond. */
gboolean sv_dag_et_put(const sv_dag *dag, sv_proto_writer *w, const struct sv_dag_et_put *o,
                       GError **error);

/* The Chakra node that would be written for `node` (all deps; free with sv_proto_node_free).
 * Original attributes keep their order and value kind with current parameter values; parameters
 * set since are appended. Readers of attributes the DAG does not model (inputs.values of a
 * metadata node, PyTorch provenance) use this. */
ChakraProtoMsg__Node *sv_dag_node_to_et(const sv_dag *dag, const sv_dag_node *node);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(sv_dag, sv_dag_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sv_dag_exec, sv_dag_exec_free)

G_END_DECLS

#endif
