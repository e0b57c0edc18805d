/* Internal records and functions of the system layer (system/system.h), shared between its files:
 * cfg.c (configuration, groups, plans), sched.c (datasets, streams, queues, scheduler), p2p.c
 * (send/recv matching) and one file per collective algorithm. */
#ifndef SV_SYSTEM_INTERNAL_H
#define SV_SYSTEM_INTERNAL_H

#include "system/system.h"

struct sv_sys__group {
    int id;
    int n;
    int *members; /* in file order: ASTRA-sim keeps the listed order for its ring */
};

struct sv_sys_groups {
    GArray *groups; /* struct sv_sys__group, sorted by id */
};

struct sv_sys__plan_node {
    uint64_t id;
    sv_sys_op_kind kind;
    int peer;
    int tag;
    uint64_t bytes;
    sv_time duration_ns;
    int ndeps;
    uint64_t *deps;
};

struct sv_sys__plan_rank {
    GArray *ops; /* struct sv_sys__plan_node, in insertion order */
};

struct sv_sys_plan {
    int ranks;
    struct sv_sys__plan_rank *rank;
};

/* Sys::Sys: active_first_phase = max_running = 100000000 (scheduler thresholds). */
#define READY_LIST_THRESHOLD 100000000
#define MAX_RUNNING_STREAMS 100000000

/* MemBus::send_from_*: a Transmition::Fast (RingTopology::Dimension::Local) hop costs a fixed
 * 10 cycles instead of endpoint-delay. */
#define FAST_TRANSMISSION_DELAY 10

typedef struct coll_npu coll_npu;
typedef struct coll_stream coll_stream;
typedef struct coll_dataset coll_dataset;

/* ---- per-NPU event batches (Sys::event_queue) --------------------------------------------- */

typedef void (*sys_cb)(sv_sys *sys, void *obj, uint64_t arg);

struct sys_ev {
    sys_cb fn;
    void *obj;
    uint64_t arg;
};

/* One engine event per (NPU, tick); the open ones are listed per NPU with their tick (so the
 * lookup scans one small array, not the records), spent ones recycled. */
struct ev_batch;
struct open_batch {
    sv_time tick;
    struct ev_batch *b;
};

/* What register_event touches first (free-list link, count, first event) is in the first cache
 * line. */
struct ev_batch {
    struct ev_batch *next_free;
    sv_time tick;
    coll_npu *npu;
    guint nev;
    guint pos;           /* index in npu->open while open */
    struct sys_ev ev[4]; /* the first events inline (most batches hold one or two) */
    GArray *more;        /* struct sys_ev beyond those, or NULL */
    sv_event_id eid;
};

/* ---- logical topology --------------------------------------------------------------------- */

/* Ring.cc, AllToAll.cc ("direct"), HalvingDoubling.cc, DoubleBinaryTreeAllReduce.cc,
 * CustomAlgorithm.cc. */
enum algo_kind { ALGO_RING, ALGO_DIRECT, ALGO_HD, ALGO_DBT, ALGO_CUSTOM };

struct ldim {
    sv_sys_impl_kind kind;
    int size;
    int stride;        /* NPU id distance between ring neighbours (GeneralComplexTopology offset) */
    int direct_window; /* direct[N]: N, -1 = none */
};

struct ltopo {
    int ndims;
    struct ldim dim[SV_NET_MAX_DIMS];
};

struct qlevel { /* QueueLevelHandler */
    int start;
    int n;
    int allocator;
    int first_allocator;
    int last_allocator;
    int level;
};

struct coll_phase {
    enum algo_kind algo;
    sv_sys_coll_type comm_type;
    /* ring */
    int nodes;
    int sender;
    int receiver;
    gboolean fast;
    int queue_id;
    uint64_t initial_size;
    uint64_t final_size;
    /* direct / halving-doubling / double binary tree: the dimension's members are
     * base + i x stride, i in [0, nodes), or members[i] when `members` is set (a direct
     * exchange on a communicator group); `index` is this NPU's i */
    int base;
    int stride;
    int index;
    int window;     /* direct: the implementation's window (-1 = none) */
    int step;       /* direct: +1 clockwise, -1 anticlockwise (the queue's direction) */
    int dbt_parent; /* DBT: NPU ids, -1 = none */
    int dbt_left;
    int dbt_right;
    /* custom */
    int pos;            /* rank in the communicator */
    const int *members; /* rank -> NPU (NULL: identity); also a direct group's members */
    const sv_sys_plan *plan;
};

struct ring_state {
    int stream_count;
    int max_count;
    int remained_per_message;
    int remained_per_max_count;
    int zero_latency;
    int non_zero_latency;
    gboolean toggle;
    int parallel_reduce;
    int free_packets;
    int packets;
    gboolean processed;
    gboolean npu_to_ma;
    uint64_t msg_size;
};

/* A packet of the Ring-derived algorithms (MyPacket): who to send to / receive from, how much. */
struct algo_pkt {
    int dst;
    int src;
    uint64_t size;
};

/* AllToAll ("direct") and HalvingDoubling: Ring's packet machinery with rotating peers. */
struct rot_state {
    int stream_count;
    int parallel_reduce;
    int middle_point; /* direct all-reduce: n - 1 */
    int total_received;
    int free_packets;
    int zero_latency;
    int non_zero_latency;
    gboolean toggle;
    uint64_t msg_size;
    int curr_receiver; /* ring indexes */
    int curr_sender;
    int step;        /* direct: +1 clockwise, -1 anticlockwise */
    int rank_offset; /* halving-doubling */
    double offset_multiplier;
    GArray *pkts; /* struct algo_pkt, from pkt_head */
    guint pkt_head;
};

enum dbt_node { DBT_ROOT, DBT_INTERMEDIATE, DBT_LEAF };
enum dbt_st {
    DBT_BEGIN,
    DBT_SENDING_TO_PARENT,
    DBT_WAITING_FROM_PARENT,
    DBT_END,
    DBT_WAITING_TWO_CHILDREN,
    DBT_WAITING_ONE_CHILD,
    DBT_SENDING_TO_CHILDREN,
};

struct dbt_state {
    enum dbt_node type;
    enum dbt_st state;
    int reductions;
};

enum op_state { OP_WAIT, OP_FREE, OP_ONGOING, OP_DONE };

struct custom_state {
    const struct sv_sys__plan_rank *pr;
    int nops;
    int *pending_deps;
    guint8 *state;
    GArray **children; /* per op: int op indexes */
    GArray *free_ops;  /* op indexes, kept sorted by node id */
    int ongoing;
};

struct coll_dataset {
    int total_streams;
    int finished_streams;
    gboolean active;
    sv_sys_done_fn done;
    void *ctx;
    uint64_t arg;
    coll_npu *npu;
};

/* The fields a ring message touches (owner, id, channel caches, ring state, the head of `cur`)
 * come first, so they share a few cache lines: with thousands of streams these records do not
 * stay in cache between two messages of the same stream. */
struct vinst;

struct coll_stream {
    coll_npu *owner;
    int stream_id;
    int priority;
    struct p2p_chan *send_chan; /* last channels used (chan_get cache) */
    struct p2p_chan *recv_chan;
    struct ring_state ring;
    struct coll_phase cur;
    coll_dataset *dataset;
    GArray *phases; /* struct coll_phase still to go, from index next_phase */
    guint next_phase;
    gboolean has_current;
    int current_queue_id;
    gboolean initialized;
    int steps_finished;
    struct rot_state rot;
    struct dbt_state dbt;
    struct custom_state custom;
    /* virtual.c: the collective phase this stream runs without messages (NULL: it sends them);
     * vi_gen tells its end event whether it is still the one to run */
    struct vinst *vi;
    uint32_t vi_gen;
    int vi_idx; /* its place among the instance's members */
};

struct coll_npu {
    sv_sys *sys;
    int id;
    /* open event batches, unordered (ev_batch.pos is the index): in the record itself while
     * few, so that a lookup costs no extra cache miss */
    guint nopen;
    guint open_cap;
    struct open_batch *open; /* open_inline, or a heap array once more are open */
    struct open_batch open_inline[4];
    int priority_counter;
    int num_streams;
    int first_phase_streams;
    int total_running_streams;
    GQueue ready_list;
    GPtrArray *active; /* queue id -> GQueue* of coll_stream */
    GArray *running;   /* queue id -> int */
    int nlevels;
    struct qlevel level[SV_NET_MAX_DIMS];
    int *group_streams; /* per group index: CommunicatorGroup::num_streams */
    /* DoubleBinaryTreeTopology::counter of each collective type's logical topology and
     * dimension: even -> the RootMax tree, odd -> RootMin (alternates per phase built). */
    int dbt_counter[SV_SYS_TYPE_COUNT][SV_NET_MAX_DIMS];
    uint64_t active_collectives;
};

/* ---- the analytical frontend's send/recv matching ---------------------------------------- */

/* CallbackTracker keys a transfer by (tag, src, dst, size, chunk id), the chunk id being the
 * occurrence of (tag, src, dst, size) among sends and, separately, among recvs: the k-th send of
 * a channel matches its k-th recv. We keep one record per channel (tag, src, dst, size) with both
 * counters and its unfinished transfers in a ring buffer indexed by chunk id, so matching costs a
 * channel lookup (cached per stream: a ring phase talks to the same two peers throughout) and an
 * array index, instead of hash-table insertions and removals per message. */
struct p2p_key {
    int tag;
    int src;
    int dst;
    uint64_t size;
};

struct p2p_chan {
    struct p2p_key key;
    /* Stream caches (coll_stream.send_chan / recv_chan) pointing here. A channel with no
     * unfinished entry (count == 0, which implies sends == recvs: every chunk id matched) and no
     * reference is freed (chan_release): its next use would start from chunk id 0 on a fresh
     * record, the same pairing as continuing the old counters (the k-th send still meets the
     * k-th recv of the same key). Without this every collective's stream-id tag left its
     * channels behind (~20 KB per TP2 serving iteration). */
    int refs;
    guint list_pos; /* index in sys->chan_list */
    int sends;      /* chunk ids handed out so far */
    int recvs;
    /* Entries are created in chunk-id order (entry k by the first of send k / recv k, and send
     * k-1, recv k-1 come before them), so the ones created so far are ids 0 .. base+count-1; ids
     * below `base` are all finished, holes (finished out of order) are NULL slots. */
    int base;
    int count;
    int head;                /* slot of `base` */
    int cap;                 /* power of two */
    struct p2p_entry **slot; /* inline_slot until more than 4 are unfinished */
    struct p2p_entry *inline_slot[4];
};

struct p2p_entry {
    sv_sys *sys;
    struct p2p_chan *chan;
    int seq; /* chunk id */
    gboolean has_send, has_recv, finished;
    sv_event_fn send_fn;
    void *send_ctx;
    uint64_t send_arg;
    sv_event_fn recv_fn;
    void *recv_ctx;
    uint64_t recv_arg;
    uint64_t order;
    sv_time posted_at;
    struct p2p_entry *next_free;
};

/* A PacketBundle is no record: its event carries the stream as object and (size << 1 |
 * needs_processing) as argument (bundle_arg), so a message allocates nothing for it. */
static inline uint64_t bundle_arg(uint64_t size, gboolean needs_processing)
{
    SV_ASSERT(size < (UINT64_C(1) << 63));
    return (size << 1) | (needs_processing ? 1u : 0u);
}

struct op_ref {
    coll_stream *stream;
    int op;
};

/* Records referenced by pending events (streams, datasets, op refs) are carved from
 * per-size slabs and recycled through per-size free lists; sv_sys_free releases the slabs,
 * and with them the records still in flight. No malloc/free, no hash-table update and no
 * neighbour to unlink (a cache miss each) per message. */
#define LIVE_CLASSES 8
#define LIVE_SLAB_RECORDS 256

struct live_class {
    size_t size; /* record size, rounded up to 16 bytes */
    void *free;  /* free records, linked through their first word */
    char *slab;  /* current slab */
    guint used;  /* records taken from it */
    GPtrArray *slabs;
};

struct sv_sys {
    sv_net *net;
    sv_engine *eng;
    struct sv_sys_cfg cfg;
    sv_sys_groups *groups;
    int npus;
    int net_ndims;
    int physical_dims[SV_NET_MAX_DIMS];
    int64_t comm_delay;     /* endpoint-delay x injection-scale */
    int concurrent_streams; /* SchedulerUnit queue_threshold */
    struct ltopo topo[SV_SYS_TYPE_COUNT];
    sv_sys_plan *custom[SV_SYS_TYPE_COUNT];
    coll_npu *npu;
    GHashTable *chans;    /* p2p_key -> p2p_chan (owned by chan_list) */
    GPtrArray *chan_list; /* every live p2p_chan (unordered: removal swaps in the last) */
    struct p2p_entry *entry_free;
    struct ev_batch *batch_free;
    struct live_class live_cls[LIVE_CLASSES];
    int nlive_cls;
    uint64_t order;
    /* virtual.c: phases run without messages, by key; links they hold (per link, the
     * instances holding it, NULL until the first); results by shape */
    GHashTable *vinsts;
    GHashTable *vi_live; /* every instance not yet freed (to free them with the sys) */
    GArray **holders;
    GHashTable *memo;
    uint32_t vi_gen;
    struct sv_sys_virt_stats vstats;
};
enum dbt_event { DBT_EV_INIT, DBT_EV_GENERAL, DBT_EV_RECEIVED };

/* sched.c: event batches, record pools, scheduler */
void *sv_sys__live_new(sv_sys *sys, size_t size);
void sv_sys__live_free(sv_sys *sys, void *p, size_t size);
void sv_sys__register_event(coll_npu *npu, sys_cb fn, void *obj, uint64_t arg, sv_time delta);
void sv_sys__proceed_to_next_vnet(coll_npu *npu, coll_stream *s);
void sv_sys__custom_clear(coll_stream *s);
void sv_sys__bundle_call(sv_sys *sys, void *obj, uint64_t arg);

/* p2p.c: send/recv matching */
guint sv_sys__p2p_key_hash(gconstpointer p);
gboolean sv_sys__p2p_key_equal(gconstpointer a, gconstpointer b);
void sv_sys__chan_free(gpointer p);
void sv_sys__chan_release(sv_sys *sys, struct p2p_chan **cache);
/* `label`: what the message is, for the network's taps (NULL: a point-to-point send). */
void sv_sys__net_send(sv_sys *sys, int src, int dst, int tag, uint64_t bytes,
                      const struct sv_net_msg_label *label, sv_event_fn fn, void *ctx, uint64_t arg,
                      struct p2p_chan **cache);
/* The label of a collective phase's messages (kind collective, named by its type). */
const struct sv_net_msg_label *sv_sys__coll_label(sv_sys_coll_type type);
void sv_sys__net_recv(sv_sys *sys, int self, int src, int tag, uint64_t bytes, sv_event_fn fn,
                      void *ctx, uint64_t arg, struct p2p_chan **cache);

/* ring.c: Ring and the packet machinery shared with direct / halving-doubling */
void sv_sys__ring_run_init(coll_stream *s);
void sv_sys__ring_run_general(coll_stream *s);
void sv_sys__bundle_release(coll_stream *s, gboolean processed, uint64_t size);
int sv_sys__member_of(const struct coll_phase *ph, int index);
void sv_sys__rot_push(struct rot_state *r, int dst, int src, uint64_t size);
gboolean sv_sys__rot_ready(coll_stream *s, gboolean use_pkt_size);
gboolean sv_sys__rot_iteratable(coll_stream *s);

/* direct.c */
void sv_sys__direct_insert_packet(coll_stream *s);
void sv_sys__direct_run_init(coll_stream *s);
void sv_sys__direct_run_general(coll_stream *s);

/* halving_doubling.c */
int sv_sys__hd_log2(int n);
void sv_sys__hd_insert_packet(coll_stream *s);
void sv_sys__hd_run_init(coll_stream *s);
void sv_sys__hd_run_general(coll_stream *s);

/* double_binary_tree.c */
void sv_sys__dbt_run(coll_stream *s, enum dbt_event ev);
void sv_sys__dbt_tree(int n, gboolean root_min, int index, int *parent, int *left, int *right);

/* virtual.c: phases without messages */
gboolean sv_sys__virt_join(coll_stream *s);
void sv_sys__virt_free_all(sv_sys *sys);
/* sched.c: a system layer for virtual.c's replays of one phase (no log line; the caller's
 * configuration is valid: asserted) */
sv_sys *sv_sys__new_shadow(sv_net *net, const struct sv_sys_cfg *cfg);
/* sched.c: the algorithm's start of the stream's current phase (StreamBaseline::init) */
void sv_sys__stream_algo_init(coll_stream *s);
/* sched.c, for virtual.c's shadows: a stream of the single phase `ph` (a copy) on `npu`,
 * submitted now; `done` fires when it ends */
coll_stream *sv_sys__stream_start(coll_npu *npu, const struct coll_phase *ph, int stream_id,
                                  sv_sys_done_fn done, void *ctx, uint64_t arg);
/* p2p.c, for virtual.c: post on `sys` the unfinished transfers of `shadow` (every channel), in
 * the order they were posted there, their callbacks' contexts mapped by `stream_map` (shadow
 * stream -> stream) and their times by + shift; `entry_map` receives shadow entry -> entry */
void sv_sys__p2p_adopt(sv_sys *sys, const sv_sys *shadow, sv_time shift, GHashTable *stream_map,
                       GHashTable *entry_map);

/* custom.c */
int sv_sys__custom_find(const struct sv_sys__plan_rank *pr, uint64_t id);
void sv_sys__custom_run_init(coll_stream *s);

#endif
