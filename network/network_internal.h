/* servesim network internals shared by topology.c, transport*.c and flow.c (not by the
 * collectives layer, which only uses network/network.h). */
#ifndef SV_NETWORK_INTERNAL_H
#define SV_NETWORK_INTERNAL_H

#include "network/network.h"

/* ---- geometry: devices, directed links, dimension-ordered routes ------------------------- */

/* One directed link. Bandwidth in bytes/ns (sv_bw_gbps_to_bytes_per_ns), latency in ns. */
struct sv_net_link {
    int src_dev;
    int dst_dev;
    double bw_bpns;
    double lat_ns;
};

/* The device/link graph derived from a topology cfg. Devices 0..npus-1 are the NPUs; every
 * Switch dimension adds one switch device per group of NPUs that differ only in that dimension
 * (ASTRA-sim congestion_aware/Switch.cpp: switch id = npus_count in 1-D). Links are laid out
 * per dimension, per group ("line"), in closed-form order so routing needs no lookup table:
 *   Ring (n > 2):  cw(i) = i -> i+1 at 2i, ccw(i) = i -> i-1 at 2i+1 (2n links per line)
 *   Ring (n == 2): cw(i) = i -> 1-i at i (2 links; both directions coincide, ccw unused)
 *   FullyConnected: i -> j at i*(n-1) + (j < i ? j : j-1)
 *   Switch:        up(i) = i -> switch at 2i, down(i) = switch -> i at 2i+1 */
struct sv_net_geom {
    struct sv_net_topo_cfg cfg;
    int npus;
    int ndevs;
    int nlinks;
    int stride[SV_NET_MAX_DIMS]; /* product of npus[0..d-1] */
    int lines[SV_NET_MAX_DIMS];  /* npus / npus[d] */
    int links_per_line[SV_NET_MAX_DIMS];
    int link_base[SV_NET_MAX_DIMS];   /* first link index of dimension d */
    int switch_base[SV_NET_MAX_DIMS]; /* first switch device of dim d, -1 if not Switch */
    double bw_bpns[SV_NET_MAX_DIMS];
    int max_route_links;       /* longest dimension-ordered route */
    struct sv_net_link *links; /* nlinks */
    int *switch_dim;           /* per switch device (index dev - npus): its dim */
    int *switch_line;          /* per switch device: its line within that dim */
    /* An explicit graph (network/graph.c): its own copy, and every NPU pair's route precomputed
     * (shared with the network's shadows). */
    struct sv_net_graph_cfg *graph;
    struct sv_net__graph_routes *routes;
};

/* Route (s, d) = link[start[s * npus + d] .. start[s * npus + d + 1]). Reference-counted: a
 * shadow of a graph network shares its routes. */
struct sv_net__graph_routes {
    int ref;
    int *start;
    int *link;
    int max_links;
};

/* Validate a cfg (also one built by hand, not from YAML). */
gboolean sv_net__topo_validate(const struct sv_net_topo_cfg *cfg, const char *where,
                               GError **error);
gboolean sv_net__geom_init(struct sv_net_geom *g, const struct sv_net_topo_cfg *cfg,
                           GError **error);
void sv_net__geom_clear(struct sv_net_geom *g);
/* The geometry of an explicit graph: links, routes (network/graph.c); with `like` (a geometry of
 * the same graph) its routes are shared instead of computed again. */
gboolean sv_net__geom_init_graph(struct sv_net_geom *g, const struct sv_net_graph_cfg *gc,
                                 const struct sv_net_geom *like, GError **error);
void sv_net__geom_clear_graph(struct sv_net_geom *g);
/* Graph geometry: the route of (src, dst) and its length. */
static inline const int *sv_net__graph_route(const struct sv_net_geom *g, int src, int dst, int *n)
{
    size_t k = (size_t)src * (size_t)g->npus + (size_t)dst;
    *n = g->routes->start[k + 1] - g->routes->start[k];
    return g->routes->link + g->routes->start[k];
}
/* The bottleneck (lowest bandwidth, bytes/ns) of a graph route and its latency sum. */
double sv_net__graph_route_min_bw(const struct sv_net_geom *g, int src, int dst, double *lat_ns);

/* Coordinate of NPU `npu` in dimension d (dim 0 varies fastest). */
static inline int sv_net__geom_coord(const struct sv_net_geom *g, int npu, int d)
{
    /* 1-D networks (and dim 0 of an NPU inside it): no division on the per-hop path */
    if (g->stride[d] == 1 && npu < g->cfg.npus[d])
        return npu;
    return (npu / g->stride[d]) % g->cfg.npus[d];
}

/* Clockwise distance from coordinate i to j in a ring of n: ((j - i) mod n), without a division
 * when both are coordinates (in [0, n)). */
static inline int sv_net__ring_cw(int i, int j, int n)
{
    int cw = j - i;
    if (cw < 0)
        cw += n;
    if (cw < 0 || cw >= n)
        cw = ((j - i) % n + n) % n;
    return cw;
}

/* First dimension in which the two NPUs' coordinates differ; -1 when src == dst. */
int sv_net__geom_first_diff_dim(const struct sv_net_geom *g, int src, int dst);

/* Hops from local coordinate i to j (i != j) inside one dimension d: Ring = shorter way,
 * FullyConnected = 1, Switch = 2 (ASTRA-sim congestion_unaware compute_hops_count). */
int sv_net__geom_dim_hops(const struct sv_net_geom *g, int d, int i, int j);

/* The next directed link a message at device `cur` takes towards NPU `dst` (cur != dst) under
 * dimension-ordered routing: fix the first differing dimension first, inside it take the
 * ASTRA-sim route (Ring shorter way, ties clockwise; FullyConnected direct; Switch via the
 * dimension's switch). In 1-D this is exactly ASTRA-sim's congestion-aware route. */
int sv_net__geom_next_link(const struct sv_net_geom *g, int cur, int dst);
/* The same for a message sent by `src`: on a graph the route depends on the source (ECMP). */
int sv_net__geom_next_link_src(const struct sv_net_geom *g, int src, int cur, int dst);

/* A link of the line of dimension d through NPU `npu`: every link of a line has the same
 * bandwidth and latency (the dimension's, or the line's override). */
const struct sv_net_link *sv_net__geom_line_link(const struct sv_net_geom *g, int d, int npu);

/* Total number of links and the sum of their latencies on the route src -> dst. The latency sum
 * is accumulated as sum over dims of hops_d * L_d, which in 1-D is ASTRA-sim's hops * L. */
int sv_net__geom_route(const struct sv_net_geom *g, int src, int dst, int *links_out,
                       double *lat_sum_ns);

/* ---- the transport object ---------------------------------------------------------------- */

/* fifo model: a message in flight (ASTRA-sim Chunk); analytical/ideal: a pending delivery.
 * Carved from slabs, so a record never moves: the engine event of a message carries the record
 * itself as context, which the engine prefetches before the event runs (sv_engine_step). */
struct sv_net_chunk {
    sv_net *net;
    struct sv_net_chunk *next; /* next chunk in a link queue or in the free list */
    int cur_dev;               /* device the chunk is at (or the tail of the link it is crossing) */
    int src;                   /* source NPU (the delivery observer's) */
    int dst;                   /* destination NPU */
    uint64_t bytes;
    sv_net_done_fn done;
    void *ctx;
    uint64_t arg;
};

enum sv_net_fifo_state {
    SV_NET_FIFO_FREE,
    SV_NET_FIFO_BUSY_MARK,  /* transmitting until `free_at` (no event: see transport_fifo.c) */
    SV_NET_FIFO_BUSY_EVENT, /* transmitting; an engine event frees it */
};

struct sv_net_fifo_link {
    int state;                 /* enum sv_net_fifo_state */
    struct sv_net_chunk *head; /* pending chunk queue (FIFO), NULL = empty */
    struct sv_net_chunk *tail;
    sv_event_mark free_at;
    sv_time free_time;   /* when the transmission in progress ends (both busy states) */
    sv_event_id free_ev; /* SV_NET_FIFO_BUSY_EVENT: the link-free event */
};

struct sv_net {
    sv_engine *eng;
    sv_net_model model;
    struct sv_net_geom geom;
    struct sv_net_stats stats;

    /* fifo */
    struct sv_net_fifo_link *fifo_links; /* nlinks */
    GPtrArray *chunk_slabs;              /* of SV_NET_CHUNK_SLAB records each */
    struct sv_net_chunk *chunk_free;     /* free list */
    struct sv_net_chunk *chunk_slab;     /* current slab */
    guint chunk_slab_used;               /* records taken from it */

    /* flow */
    sv_net_solver *flow;

    /* sv_net_set_observer */
    sv_net_observer_fn observer;
    void *observer_ctx;

    /* sv_net_tap_add (tap.c): NULL until the first tap */
    GArray *taps;         /* struct sv_net_tap */
    GPtrArray *tap_slabs; /* of SV_NET_CHUNK_SLAB struct sv_net__tapped each */
    struct sv_net__tapped *tap_free;
    guint tap_slab_used;
    uint64_t tap_seq;
    int *tap_route;

    /* sv_net_watch_link: traffic entering link l before watch_until[l] calls contend first
     * (NULL until the first watch) */
    sv_time *watch_until;
    sv_net_contend_fn contend;
    void *contend_ctx;

    /* a shadow (sv_net_new_shadow): every scheduled message event is recorded, so that what is
     * still in flight can be moved to another network (sv_net_adopt_*) */
    sv_time *busy_until; /* sv_net_record_busy, per link */
    gboolean track;
    GArray *tracked;     /* struct sv_net__tracked, in scheduling order */
    sv_u64map track_idx; /* mixed chunk address -> index in `tracked` + 1 */
};

enum sv_net__track_kind {
    SV_NET__TRACK_DELIVERY, /* sv_net__schedule_delivery: the arrival of a whole message */
    SV_NET__TRACK_ARRIVAL,  /* fifo: a chunk reaching the next device of its route */
};

struct sv_net__tracked {
    struct sv_net_chunk *c;
    sv_time at;
    sv_event_id eid;
    int kind;
    gboolean live;
};

static inline void sv_net__note_busy(sv_net *net, int link, sv_time end)
{
    if (G_UNLIKELY(net->busy_until != NULL) && net->busy_until[link] < end + 1)
        net->busy_until[link] = end + 1;
}

void sv_net__track(sv_net *net, struct sv_net_chunk *c, sv_time at, sv_event_id eid, int kind);
void sv_net__untrack(sv_net *net, struct sv_net_chunk *c);

/* Foreign traffic is about to enter `link`: a watched link tells its watcher first (which may
 * move messages into this network: callers re-read any pointer into pools afterwards). */
static inline void sv_net__enter_link(sv_net *net, int link)
{
    if (G_UNLIKELY(net->watch_until != NULL) && net->watch_until[link] > sv_engine_now(net->eng))
        net->contend(net->contend_ctx, link);
}

#define SV_NET_CHUNK_SLAB 1024

/* tap.c: sv_net_send_labeled with taps wraps the arrival callback in this record. */
void sv_net__tap_send(sv_net *net, int src, int dst, uint64_t bytes,
                      const struct sv_net_msg_label *label, sv_net_done_fn *done, void **ctx,
                      uint64_t *arg);
void sv_net__tap_clear(sv_net *net);

/* Floating-point tolerance of a flow's finish-time detection, in ns (network/flow.c, and the lone
 * flow's closed form in network/shadow.c; docs/network.md). */
#define SV_NET_FLOW_TOL_NS 1e-6

/* Message record pool (fifo chunks; analytical/ideal pending deliveries): slabs with a free
 * list, so records stay put and no message calls malloc. The record starts at `src`. */
struct sv_net_chunk *sv_net__chunk_alloc(sv_net *net, int src, int dst, uint64_t bytes,
                                         sv_net_done_fn done, void *ctx, uint64_t arg);
/* Release record `c`, count the delivery and run its callback (in that order, so the
 * callback may send again). */
void sv_net__chunk_deliver(struct sv_net_chunk *c);
/* Count the delivery of a message src -> dst, tell the observer, run the callback. */
void sv_net__deliver(sv_net *net, int src, int dst, uint64_t bytes, sv_net_done_fn done, void *ctx,
                     uint64_t arg);
/* Schedule the arrival of `bytes` sent by `src` at `dst` at absolute time `at` (>= now): a pooled
 * record and one engine event that counts the delivery and runs `done`. */
void sv_net__schedule_delivery(sv_net *net, sv_time at, int src, int dst, uint64_t bytes,
                               sv_net_done_fn done, void *ctx, uint64_t arg);

/* sv_net_new, optionally without its log line (shadows). */
sv_net *sv_net__new(sv_engine *eng, const struct sv_net_topo_cfg *cfg, sv_net_model model,
                    gboolean quiet, GError **error);
/* Either a topology cfg or a graph (exactly one non-NULL); `like`: a network of that graph whose
 * routes to share (or NULL). */
sv_net *sv_net__new_any(sv_engine *eng, const struct sv_net_topo_cfg *cfg,
                        const struct sv_net_graph_cfg *graph, const sv_net *like,
                        sv_net_model model, gboolean quiet, GError **error);

void sv_net__fifo_init(sv_net *net);
void sv_net__fifo_clear(sv_net *net);
void sv_net__fifo_send(sv_net *net, int src, int dst, uint64_t bytes, sv_net_done_fn done,
                       void *ctx, uint64_t arg);
/* sv_net_adopt_*: the fifo and flow parts (transport_fifo.c, flow.c). */
void sv_net__fifo_adopt_links(sv_net *net, sv_net *shadow, sv_time shift, sv_net_remap_fn remap,
                              void *ud);
void sv_net__fifo_adopt_arrival(sv_net *net, const struct sv_net__tracked *t, sv_time shift,
                                sv_net_remap_fn remap, void *ud);
void sv_net__fifo_adopt_link_free(sv_net *net, int link, sv_time at);
gboolean sv_net__fifo_link_quiet(const sv_net *net, int link);
void sv_net__flow_adopt(sv_net *net, sv_net *shadow, sv_time shift, sv_net_remap_fn remap,
                        void *ud);
gboolean sv_net__flow_link_quiet(const sv_net *net, int link);

sv_net_solver *sv_net__flow_model_new(sv_net *net);
void sv_net__flow_model_free(sv_net_solver *fm);
void sv_net__flow_send(sv_net *net, int src, int dst, uint64_t bytes, sv_net_done_fn done,
                       void *ctx, uint64_t arg);
/* Number of flows still transmitting (for tests and the stall diagnosis). */
int sv_net__flow_active(const sv_net *net);
/* The current max-min rate (bytes/ns) of the k-th flow started (0-based sequence number), or
 * -1 when that flow is not transmitting any more. For tests. */
double sv_net__flow_rate(const sv_net *net, uint64_t seq);

#endif
