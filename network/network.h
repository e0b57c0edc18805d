/* servesim network: topologies and message transport under four timing models. ASTRA-sim's
 * system layer of collectives, built on this transport, is the system/ module (system/system.h).
 *
 * Knows bytes, links and rates; nothing about LLMs or DAG nodes. */
#ifndef SV_NETWORK_H
#define SV_NETWORK_H

#include "core/core.h"

G_BEGIN_DECLS

#define SV_NET_ERROR (sv_net_error_quark())
GQuark sv_net_error_quark(void);
typedef enum {
    SV_NET_ERROR_CONFIG,      /* bad topology / system / group configuration */
    SV_NET_ERROR_UNSUPPORTED, /* valid request this model cannot express */
    SV_NET_ERROR_STALL,       /* a transfer that can never complete */
} sv_net_error_code;

#define SV_NET_MAX_DIMS 8
#define SV_NET_MAX_LINE_OVER 64

typedef enum {
    SV_NET_TOPO_RING,
    SV_NET_TOPO_FULLY_CONNECTED,
    SV_NET_TOPO_SWITCH,
} sv_net_topo_kind;

/* ASTRA-sim's analytical network description: dim 0 varies fastest in NPU ids. */
struct sv_net_topo_cfg {
    int ndims;
    sv_net_topo_kind kind[SV_NET_MAX_DIMS];
    int npus[SV_NET_MAX_DIMS];              /* each > 1 */
    double bandwidth_gbps[SV_NET_MAX_DIMS]; /* per link per direction, ASTRA-sim "GB/s" */
    double latency_ns[SV_NET_MAX_DIMS];     /* per link, >= 0 */
    /* Lines (groups of NPUs that differ only in dimension `dim`; line = the NPU's other
     * coordinates, dims below `dim` fastest) whose links have their own bandwidth and latency,
     * e.g. a PCIe node beside NVLink nodes (docs/cluster-network.md). Not ASTRA-sim's: a
     * topology with overrides cannot be saved as its YAML. */
    int n_line_over;
    struct sv_net_line_over {
        int dim;
        int line;
        double bandwidth_gbps;
        double latency_ns;
    } line_over[SV_NET_MAX_LINE_OVER];
};

/* Read ASTRA-sim's network YAML (topology, npus_count, bandwidth, latency). */
gboolean sv_net_topo_load_yaml(const char *path, struct sv_net_topo_cfg *cfg, GError **error);
/* Write `t` as ASTRA-sim's analytical network YAML, one list entry per dimension (topology names
 * Ring / FullyConnected / Switch; bandwidth and latency in the shortest text that reads back to
 * the same double), what sv_net_topo_load_yaml reads back equal. Written to a temporary file
 * renamed over `path`; an invalid topology is an error and writes nothing. */
gboolean sv_net_topo_save_yaml(const struct sv_net_topo_cfg *t, const char *path, GError **error);
int sv_net_topo_npus(const struct sv_net_topo_cfg *cfg);

typedef enum {
    SV_NET_MODEL_ANALYTICAL, /* ASTRA-sim congestion-unaware analytical backend */
    SV_NET_MODEL_FIFO,       /* ASTRA-sim congestion-aware: per-link FIFO, store-and-forward */
    SV_NET_MODEL_FLOW,       /* flow-level max-min fair sharing */
    SV_NET_MODEL_IDEAL,      /* infinite bandwidth, per-hop latency only (baselines, tests) */
} sv_net_model;

/* Parse "analytical" | "fifo" | "flow" | "ideal". */
gboolean sv_net_model_parse(const char *name, sv_net_model *out, GError **error);
const char *sv_net_model_name(sv_net_model model);

typedef struct sv_net sv_net;

/* ---- an explicit graph (network/graph.c; docs/cluster-network.md "An explicit fabric graph") --
 *
 * Devices 0..npus-1 are the NPUs, npus..npus+nswitches-1 switches (NICs, PCIe switches, spines:
 * anything that forwards but neither sends nor receives). Each link has its own bandwidth and
 * latency; an undirected link is full duplex: two directed links (a -> b, then b -> a) of that
 * bandwidth each. Routes are computed once, when the network is built: the fewest links, then
 * the lowest latency sum; among the equal-cost routes that remain, `SV_NET_ROUTE_SHORTEST` takes
 * the lowest link id at each device and `SV_NET_ROUTE_ECMP` hashes (src, dst, device) to pick
 * one (flow-level ECMP, RFC 2992). For the system layer a graph is one dimension of all NPUs. */
typedef enum {
    SV_NET_ROUTE_SHORTEST,
    SV_NET_ROUTE_ECMP,
} sv_net_routing;

struct sv_net_graph_link {
    int a, b;              /* device ids */
    double bandwidth_gbps; /* per direction, ASTRA-sim GB/s (2^30 B per 10^9 ns) */
    double latency_ns;     /* >= 0 */
    gboolean directed;     /* a -> b only */
};

struct sv_net_graph_cfg {
    int npus;
    int nswitches;
    sv_net_routing routing;
    GArray *links;   /* struct sv_net_graph_link */
    char **names;    /* npus + nswitches device names for messages (owned), or NULL */
    char where[160]; /* prefix of error messages ("" = "network graph") */
};

#define SV_NET_GRAPH_MAX_NPUS 2048

struct sv_net_graph_cfg *sv_net_graph_cfg_new(int npus, int nswitches);
void sv_net_graph_cfg_free(struct sv_net_graph_cfg *g); /* accepts NULL */
/* Name device `dev` for error messages (copied). */
void sv_net_graph_cfg_set_name(struct sv_net_graph_cfg *g, int dev, const char *name);
void sv_net_graph_cfg_add_link(struct sv_net_graph_cfg *g, int a, int b, double bandwidth_gbps,
                               double latency_ns, gboolean directed);
/* The name of device `dev` ("npu 3" / "switch 1" without names); valid while g lives. */
const char *sv_net_graph_cfg_name(const struct sv_net_graph_cfg *g, int dev, char *buf, size_t len);
/* A network over graph `g` (copied): the same sv_net as sv_net_new's for every timing model.
 * Errors: a link to itself, an unknown device, bandwidth or latency out of range ("links[k]"),
 * an NPU that cannot reach another ("<a> cannot reach <b>"), more than SV_NET_GRAPH_MAX_NPUS. */
/* The errors sv_net_new_graph would give, without building a network. */
gboolean sv_net_graph_cfg_check(const struct sv_net_graph_cfg *g, GError **error);
sv_net *sv_net_new_graph(sv_engine *eng, const struct sv_net_graph_cfg *g, sv_net_model model,
                         GError **error);
/* The network's graph (its copy), or NULL for a dimensional topology. sv_net_topo of a graph
 * network is one FullyConnected-like dimension of all NPUs (kind and rates not meaningful). */
const struct sv_net_graph_cfg *sv_net_graph(const sv_net *net);

sv_net *sv_net_new(sv_engine *eng, const struct sv_net_topo_cfg *cfg, sv_net_model model,
                   GError **error);
void sv_net_free(sv_net *net); /* accepts NULL; call before freeing the engine */
int sv_net_npus(const sv_net *net);
sv_net_model sv_net_get_model(const sv_net *net);
const struct sv_net_topo_cfg *sv_net_topo(const sv_net *net);
sv_engine *sv_net_engine(const sv_net *net);

/* Called once the last byte of a message has arrived at its destination. */
typedef void (*sv_net_done_fn)(sv_engine *eng, void *ctx, uint64_t arg);

/* Send `bytes` from NPU `src` to NPU `dst` (src != dst). `on_arrival(eng, ctx, arg)` fires when
 * the whole message has arrived. Never fails for valid src/dst (asserted). */
void sv_net_send(sv_net *net, int src, int dst, uint64_t bytes, sv_net_done_fn on_arrival,
                 void *ctx, uint64_t arg);

/* The time from sv_net_send to arrival of a message of `bytes` from src to dst (src != dst) that
 * is alone on its route from start to arrival, under the network's model: what sv_net_send would
 * take, to the nanosecond, without sending it (network/alone.c). Whether the route is free is
 * the caller's to know (sv_net_route_links lists its links). */
sv_time sv_net_msg_alone_ns(const sv_net *net, int src, int dst, uint64_t bytes);
/* Count `count` messages of `bytes` from src to dst in the statistics (messages, bytes sent and
 * delivered, link bytes and transfers) as the model would have counted them sent and arrived,
 * without sending them: for transfers booked in closed form (sv_sys_coll_alone_book). No
 * observer call: a caller that needs deliveries must send. */
void sv_net_book(sv_net *net, int src, int dst, uint64_t bytes, uint64_t count);

/* Statistics (bytes booked on links, messages). */
struct sv_net_stats {
    uint64_t messages;
    uint64_t bytes_sent;        /* sum of message sizes */
    uint64_t link_bytes;        /* sum over links of bytes carried (bytes x hops) */
    uint64_t link_transfers;    /* per-hop transfers (fifo) or flow-link pairs (flow) */
    uint64_t rate_solves;       /* flow model: max-min solves */
    uint64_t bytes_delivered;   /* sum of sizes of messages that have arrived */
    uint64_t solve_flow_visits; /* flow model: flows touched by max-min solves (cost measure) */
    uint64_t max_active_flows;  /* flow model: most flows transmitting at once */
};
void sv_net_get_stats(const sv_net *net, struct sv_net_stats *out);

/* A message of sv_net_send that has arrived: `bytes` (> 0) from NPU `src` to NPU `dst`, at
 * `now` (the engine time its on_arrival runs, just after the observer). */
struct sv_net_delivery {
    int src, dst;
    uint64_t bytes;
    sv_time now;
};
typedef void (*sv_net_observer_fn)(void *ctx, const struct sv_net_delivery *d);
/* One observer per network (NULL removes it), told of every message that arrives, under every
 * timing model: the system layer's collectives and send/recv and one-sided transfers are such
 * messages. Empty messages are not reported, nor flows started with sv_net_solver_start (the
 * memory-tier fabric reports its own). For per-node accounting (power: link, switch, NIC). */
void sv_net_set_observer(sv_net *net, sv_net_observer_fn fn, void *ctx);
/* ---- passive taps (network/tap.c; docs/trace.md) ------------------------------------------
 *
 * Taps watch the messages of sv_net_send without any effect on the model: no event is added,
 * nothing is reordered, and they are not the observer (sv_net_observed stays keyed on
 * sv_net_set_observer alone, so collectives computed in closed form stay so: their messages are
 * never sent and no tap sees them). What a message is for is the sender's to say with a label. */
typedef enum {
    SV_NET_MSG_OTHER,      /* unlabelled (sv_net_send) */
    SV_NET_MSG_SEND,       /* a point-to-point send of the system layer (pipeline stages) */
    SV_NET_MSG_COLLECTIVE, /* one message of a collective's algorithm (name: its type) */
    SV_NET_MSG_TRANSFER,   /* a one-sided transfer (sv_sys_exec_transfer: the KV hand-off) */
} sv_net_msg_kind;
const char *sv_net_msg_kind_name(sv_net_msg_kind kind); /* "other", "send", ... */
struct sv_net_msg_label {
    sv_net_msg_kind kind;
    const char *name; /* static storage or outliving the network; may be NULL */
};
/* sv_net_send with a label for the taps (NULL: SV_NET_MSG_OTHER). */
void sv_net_send_labeled(sv_net *net, int src, int dst, uint64_t bytes,
                         const struct sv_net_msg_label *label, sv_net_done_fn on_arrival, void *ctx,
                         uint64_t arg);
/* A message as a tap sees it: `id` numbers the network's tapped messages from 0 in send order;
 * `links` is its dimension-ordered route (sv_net_route_links), valid during the call only. */
struct sv_net_tap_msg {
    uint64_t id;
    int src, dst;
    uint64_t bytes;
    sv_time sent_ns;
    sv_net_msg_kind kind;
    const char *name;
    const int *links;
    int nlinks;
};
struct sv_net_tap {
    void (*on_start)(void *ctx, const struct sv_net_tap_msg *m);                 /* may be NULL */
    void (*on_delivery)(void *ctx, const struct sv_net_tap_msg *m, sv_time now); /* may be NULL */
    void *ctx;
};
/* Add a tap (copied) to the messages sent from now on; the network keeps them until freed.
 * Messages a collective switched from closed form to messages had in flight at that instant
 * (sv_net_adopt_*) were never sent here and are not tapped. */
void sv_net_tap_add(sv_net *net, const struct sv_net_tap *tap);
/* The devices a topology link joins (NPUs 0..npus-1, switches from npus) and its dimension. */
void sv_net_link_ends(const sv_net *net, int link, int *src_dev, int *dst_dev, int *dim);

/* What the route src -> dst crosses in each dimension d (ndims entries each; either array may be
 * NULL): links_per_dim[d] links (Ring: the shorter way, FullyConnected 1, Switch 2; 0 where the
 * coordinates agree) and switches_per_dim[d] switches (1 in a Switch dimension the route
 * changes, else 0). Routes are dimension-ordered: dimension 0 is crossed first, so its hops are
 * among the devices that share every other coordinate with `src`. Returns the total links. */
int sv_net_route_dims(const sv_net *net, int src, int dst, int *links_per_dim,
                      int *switches_per_dim);

/* ---- the flow solver as a resource (docs/network.md "The solver") --------------------------
 *
 * The flow model's max-min solver with a growable link table and explicit paths, usable by
 * other modules (memory tiers book their PCIe/DRAM/CXL/SSD transfers as flows on it). A flow
 * over links l1..ln transmits at its max-min fair rate and is delivered at
 * trunc(t_last_byte + sum of the links' latencies + extra latency). Link ids 0..nlinks-1 of a
 * network's solver are its topology links; sv_net_solver_link_add appends more. */
typedef struct sv_net_solver sv_net_solver;

/* A standalone solver on `eng` with no links (runs without a flow network). */
sv_net_solver *sv_net_solver_new(sv_engine *eng);
void sv_net_solver_free(sv_net_solver *s); /* accepts NULL; only for standalone solvers */
/* The flow model's own solver (shared by its messages and anything added), else NULL. */
sv_net_solver *sv_net_get_solver(sv_net *net);
/* Append a link of `bytes_per_ns` (> 0) and `latency_ns` (>= 0); returns its id. */
int sv_net_solver_link_add(sv_net_solver *s, double bytes_per_ns, double latency_ns);
int sv_net_solver_num_links(const sv_net_solver *s);
/* Start a flow of `bytes` over the `n` links (n >= 0; no link twice). `done(eng, ctx, arg)`
 * fires at trunc(last byte + sum latencies + extra_latency_ns); with n == 0 or bytes == 0 that
 * is trunc(now + latencies). */
void sv_net_solver_start(sv_net_solver *s, const int *links, int n, double extra_latency_ns,
                         uint64_t bytes, sv_net_done_fn done, void *ctx, uint64_t arg);
/* The topology path src -> dst (src != dst): writes up to the route length link ids into
 * `links` (room for sv_net_route_max_links) and the latency sum; returns the number of links. */
int sv_net_route_links(const sv_net *net, int src, int dst, int *links, double *lat_ns);
int sv_net_route_max_links(const sv_net *net);
struct sv_net_solver_stats {
    uint64_t flows;       /* flows started on it (messages and others) */
    uint64_t bytes;       /* their sizes */
    uint64_t link_bytes;  /* sum of bytes x links crossed */
    uint64_t rate_solves; /* max-min solves */
};
void sv_net_solver_get_stats(const sv_net_solver *s, struct sv_net_solver_stats *out);
/* Sum of the current rates (bytes/ns) of the flows crossing `link` (tests). */
double sv_net_solver_link_rate_sum(const sv_net_solver *s, int link);

/* ---- collectives without messages (system/virtual.c; docs/collectives.md "Closed form") -----
 *
 * The system layer computes a collective whose links carry nothing else without sending its
 * messages. It needs to know what a message alone on its route does, to be told when other
 * traffic comes onto the links it would use, and, when that happens, to replay the collective
 * on a shadow network up to that instant and move what is then in flight into this one. */

/* What sv_net_send does with one message of `bytes` src -> dst when nothing else uses its
 * links: it arrives `delay_ns` after the send; it holds each link of its route at most `busy_ns`
 * from the time it enters it (flow: every link until the last byte has left; fifo: the longest
 * hop's serialisation; analytical / ideal: 0, no link state); it adds `stat_links` to
 * link_transfers and bytes x stat_links to link_bytes. */
struct sv_net_lone {
    sv_time delay_ns;
    sv_time busy_ns;
    int stat_links;
};
void sv_net_lone_message(const sv_net *net, int src, int dst, uint64_t bytes,
                         struct sv_net_lone *out);
int sv_net_num_links(const sv_net *net); /* directed topology links (ids of sv_net_route_links) */
/* No message is on `link` or waiting for it now (analytical / ideal: always TRUE). */
gboolean sv_net_link_quiet(const sv_net *net, int link);

/* Told, before it enters, of traffic coming onto a watched link (a message of sv_net_send under
 * fifo at each hop, under flow at its start; a solver flow over topology links). The handler may
 * move messages into the network (sv_net_adopt_*) before that traffic proceeds. */
typedef void (*sv_net_contend_fn)(void *ctx, int link);
void sv_net_set_contend_handler(sv_net *net, sv_net_contend_fn fn, void *ctx);
/* Watch `link` until `until_ns` (exclusive); a later call replaces the value (0: not watched). */
void sv_net_watch_link(sv_net *net, int link, sv_time until_ns);

/* Count messages that were not sent through this network as if they had been (messages,
 * bytes_sent, link_bytes, link_transfers, bytes_delivered of `add`). */
void sv_net_add_stats(sv_net *net, const struct sv_net_stats *add);
/* Whether an observer is set, and tell it of a message that arrives now. */
gboolean sv_net_observed(const sv_net *net);
void sv_net_report(sv_net *net, int src, int dst, uint64_t bytes);

/* From now on remember, per link, when the last message that crossed it left it (flow: its
 * finish; fifo: the end of its serialisation): sv_net_busy_until gives that time + 1 (0 for a
 * link never used), or NULL before this call. For a replay of one collective alone. */
void sv_net_record_busy(sv_net *net);
const sv_time *sv_net_busy_until(const sv_net *net);

/* A network of the same topology and timing model as `like`, on engine `eng` (no log line);
 * with `track`, it records every message event it schedules so that what is in flight can be
 * adopted. */
sv_net *sv_net_new_shadow(sv_engine *eng, const sv_net *like, gboolean track);
/* The message events still pending in a shadow, each with its time and its order among the
 * events of that time (sv_engine_event_order): GArray of struct sv_net_pending, caller frees. */
struct sv_net_pending {
    sv_time at;
    uint64_t order;
    int kind; /* internal */
    int idx;  /* internal */
};
GArray *sv_net_shadow_pending(sv_net *shadow);
/* Callback and context of an adopted message: the shadow's ctx -> this network's. */
typedef void *(*sv_net_remap_fn)(void *ud, void *ctx);
/* Move a shadow's link state into `net` (whose links involved must be quiet), its time + `shift`
 * being net's now: flows transmitting (with their bytes left and rates), fifo links busy and
 * their queues. Call once, before the pending events, which then follow in their order. */
void sv_net_adopt_links(sv_net *net, sv_net *shadow, sv_time shift, sv_net_remap_fn remap,
                        void *ud);
void sv_net_adopt_pending(sv_net *net, sv_net *shadow, const struct sv_net_pending *p,
                          sv_time shift, sv_net_remap_fn remap, void *ud);

G_END_DECLS

#endif
