/* ASTRA-sim's system layer, event by event (astra-sim HEAD 518bd51, astra-sim/system/):
 *   Sys::generate_collective / determine_chunk_size / get_priority / insert_stream /
 *   schedule / proceed_to_next_vnet_baseline, Sys::SchedulerUnit, QueueLevels(Handler),
 *   StreamBaseline, DataSet, PacketBundle, MemBus (model-shared-bus 0), Ring, AllToAll
 *   ("direct"), HalvingDoubling, DoubleBinaryTreeAllReduce (BinaryTree topologies),
 *   CustomAlgorithm, CommunicatorGroup, and the analytical frontend's send/recv matching
 *   (network_frontend/analytical/common/CommonNetworkApi.cc, CallbackTracker.cc).
 * Same-tick ordering follows Sys::try_register_event / call_events: one engine event per
 * (NPU, tick), whose callbacks run in registration order, including those registered with
 * delay 0 while the batch runs. See docs/collectives.md. */
#include "system/system_internal.h"

#include <math.h>
#include <string.h>

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
     * base + i x stride, i in [0, nodes); `index` is this NPU's i */
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
    const int *members; /* rank -> NPU (NULL: identity) */
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
};

static guint p2p_key_hash(gconstpointer p)
{
    const struct p2p_key *k = p;
    guint h = (guint)k->tag * 2654435761u;
    h ^= (guint)k->src * 40503u + (guint)k->dst * 9973u;
    h ^= (guint)(k->size ^ (k->size >> 32)) * 2246822519u;
    return h;
}

static gboolean p2p_key_equal(gconstpointer a, gconstpointer b)
{
    const struct p2p_key *x = a, *y = b;
    return x->tag == y->tag && x->src == y->src && x->dst == y->dst && x->size == y->size;
}

static void *live_new(sv_sys *sys, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    int c = 0;
    while (c < sys->nlive_cls && sys->live_cls[c].size != size)
        c++;
    struct live_class *lc = &sys->live_cls[c];
    if (c == sys->nlive_cls) {
        SV_ASSERT(c < LIVE_CLASSES);
        lc->size = size;
        lc->used = LIVE_SLAB_RECORDS;
        lc->slabs = g_ptr_array_new_with_free_func(g_free);
        sys->nlive_cls++;
    }
    void *p = lc->free;
    if (p != NULL) {
        lc->free = *(void **)p;
    } else {
        if (lc->used == LIVE_SLAB_RECORDS) {
            lc->slab = g_malloc(size * LIVE_SLAB_RECORDS);
            g_ptr_array_add(lc->slabs, lc->slab);
            lc->used = 0;
        }
        p = lc->slab + (size_t)lc->used++ * size;
    }
    memset(p, 0, size);
    return p;
}

static void live_free(sv_sys *sys, void *p, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    int c = 0;
    while (sys->live_cls[c].size != size)
        c++;
    *(void **)p = sys->live_cls[c].free;
    sys->live_cls[c].free = p;
}

/* ---- Sys::register_event / call_events ----------------------------------------------------- */

static void batch_fire(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)eng;
    (void)arg;
    struct ev_batch *b = ctx;
    coll_npu *npu = b->npu;
    b->eid = SV_EVENT_NONE;
    /* callbacks may append to this batch (delay 0): re-read the length each time */
    for (guint i = 0; i < b->nev; i++) {
        struct sys_ev ev = i < G_N_ELEMENTS(b->ev)
                               ? b->ev[i]
                               : g_array_index(b->more, struct sys_ev, i - G_N_ELEMENTS(b->ev));
        ev.fn(npu->sys, ev.obj, ev.arg);
    }
    /* close it: swap-remove from the open list, recycle */
    guint pos = b->pos;
    if (pos != --npu->nopen) {
        npu->open[pos] = npu->open[npu->nopen];
        npu->open[pos].b->pos = pos;
    }
    b->nev = 0;
    if (b->more != NULL)
        g_array_set_size(b->more, 0);
    b->next_free = npu->sys->batch_free;
    npu->sys->batch_free = b;
}

static void batch_free(struct ev_batch *b)
{
    if (b->more != NULL)
        g_array_free(b->more, TRUE);
    g_free(b);
}

static void register_event(coll_npu *npu, sys_cb fn, void *obj, uint64_t arg, sv_time delta)
{
    sv_sys *sys = npu->sys;
    sv_time tick = sv_engine_now(sys->eng) + delta;
    /* An NPU has few open ticks (its pending delays); the newest is the likeliest match. */
    struct ev_batch *b = NULL;
    const struct open_batch *open = npu->open;
    for (guint i = npu->nopen; i > 0; i--) {
        if (open[i - 1].tick == tick) {
            b = open[i - 1].b;
            break;
        }
    }
    if (b == NULL) {
        b = sys->batch_free;
        if (b != NULL) {
            sys->batch_free = b->next_free;
            /* the free list is LIFO but long (one record per open (NPU, tick)): fetch the next
             * one's first line now, it is likely cold by the time it is taken (a hint only) */
            if (b->next_free != NULL)
                __builtin_prefetch(b->next_free);
        } else {
            b = g_new0(struct ev_batch, 1);
        }
        b->tick = tick;
        b->npu = npu;
        if (npu->nopen == npu->open_cap) {
            struct open_batch *grown = g_new(struct open_batch, 2 * npu->open_cap);
            memcpy(grown, npu->open, npu->nopen * sizeof *grown);
            if (npu->open != npu->open_inline)
                g_free(npu->open);
            npu->open = grown;
            npu->open_cap *= 2;
        }
        b->pos = npu->nopen;
        npu->open[npu->nopen++] = (struct open_batch){tick, b};
        b->eid = sv_engine_schedule(sys->eng, tick, SV_PRIO_DEFAULT, batch_fire, b, 0);
    }
    struct sys_ev ev = {fn, obj, arg};
    if (b->nev < G_N_ELEMENTS(b->ev)) {
        b->ev[b->nev] = ev;
    } else {
        if (b->more == NULL)
            b->more = g_array_new(FALSE, FALSE, sizeof(struct sys_ev));
        g_array_append_val(b->more, ev);
    }
    b->nev++;
}

/* ---- send / recv with the frontend's tracker ------------------------------------------------ */

static void chan_free(gpointer p);

/* Frees `c` once nothing is pending on it and no stream caches it. */
static void chan_maybe_free(sv_sys *sys, struct p2p_chan *c)
{
    if (c->count != 0 || c->refs != 0)
        return;
    SV_ASSERT(c->sends == c->recvs);
    g_hash_table_remove(sys->chans, &c->key);
    guint pos = c->list_pos;
    SV_ASSERT(g_ptr_array_index(sys->chan_list, pos) == c);
    g_ptr_array_steal_index_fast(sys->chan_list, pos);
    if (pos < sys->chan_list->len) {
        struct p2p_chan *moved = g_ptr_array_index(sys->chan_list, pos);
        moved->list_pos = pos;
    }
    chan_free(c);
}

/* Drops a stream's cached channel reference. */
static void chan_release(sv_sys *sys, struct p2p_chan **cache)
{
    struct p2p_chan *c = *cache;
    if (c == NULL)
        return;
    *cache = NULL;
    SV_ASSERT(c->refs > 0);
    c->refs--;
    chan_maybe_free(sys, c);
}

/* The channel of (tag, src, dst, size), created when absent. With a cache the stream keeps a
 * reference to it (dropped when the cache moves on or the stream ends); without one the caller
 * must post an entry on it before returning to the engine, or it leaks until the next use. */
static struct p2p_chan *chan_get(sv_sys *sys, int tag, int src, int dst, uint64_t size,
                                 struct p2p_chan **cache)
{
    struct p2p_key k = {tag, src, dst, size};
    if (cache != NULL && *cache != NULL && p2p_key_equal(&(*cache)->key, &k))
        return *cache;
    struct p2p_chan *c = g_hash_table_lookup(sys->chans, &k);
    if (c == NULL) {
        c = g_new0(struct p2p_chan, 1);
        c->key = k;
        c->cap = (int)G_N_ELEMENTS(c->inline_slot);
        c->slot = c->inline_slot;
        c->list_pos = sys->chan_list->len;
        g_ptr_array_add(sys->chan_list, c);
        g_hash_table_insert(sys->chans, &c->key, c);
    }
    if (cache != NULL) {
        /* take the new reference first: the old channel may be freed by the release */
        c->refs++;
        chan_release(sys, cache);
        *cache = c;
    }
    return c;
}

static void chan_free(gpointer p)
{
    struct p2p_chan *c = p;
    for (int i = 0; i < c->count; i++)
        g_free(c->slot[(c->head + i) & (c->cap - 1)]);
    if (c->slot != c->inline_slot)
        g_free(c->slot);
    g_free(c);
}

/* The entry of chunk id `seq`, or NULL when it is not created yet (seq == base + count). */
static struct p2p_entry *entry_find(const struct p2p_chan *c, int seq)
{
    int idx = seq - c->base;
    SV_ASSERT(idx >= 0 && idx <= c->count);
    if (idx == c->count)
        return NULL;
    return c->slot[(c->head + idx) & (c->cap - 1)];
}

static struct p2p_entry *entry_create(sv_sys *sys, struct p2p_chan *c, int seq)
{
    SV_ASSERT(seq == c->base + c->count);
    if (c->count == c->cap) {
        struct p2p_entry **grown = g_new0(struct p2p_entry *, c->cap * 2);
        for (int i = 0; i < c->count; i++)
            grown[i] = c->slot[(c->head + i) & (c->cap - 1)];
        if (c->slot != c->inline_slot)
            g_free(c->slot);
        c->slot = grown;
        c->head = 0;
        c->cap *= 2;
    }
    struct p2p_entry *e = sys->entry_free;
    if (e != NULL) {
        sys->entry_free = e->next_free;
        if (e->next_free != NULL) /* as for batches (register_event): a hint only */
            __builtin_prefetch(e->next_free);
    } else
        e = g_new(struct p2p_entry, 1);
    memset(e, 0, sizeof *e);
    e->sys = sys;
    e->chan = c;
    e->seq = seq;
    e->order = sys->order++;
    e->posted_at = sv_engine_now(sys->eng);
    c->slot[(c->head + c->count) & (c->cap - 1)] = e;
    c->count++;
    return e;
}

static void entry_remove(sv_sys *sys, struct p2p_entry *e)
{
    struct p2p_chan *c = e->chan;
    int mask = c->cap - 1;
    c->slot[(c->head + (e->seq - c->base)) & mask] = NULL;
    while (c->count > 0 && c->slot[c->head] == NULL) {
        c->head = (c->head + 1) & mask;
        c->base++;
        c->count--;
    }
    e->next_free = sys->entry_free;
    sys->entry_free = e;
    chan_maybe_free(sys, c);
}

static void on_arrival(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)arg;
    struct p2p_entry *e = ctx;
    /* CommonNetworkApi::process_chunk_arrival: the sender is told at arrival; the receiver too
     * if its recv is posted, otherwise the transfer is marked finished for a later recv. The
     * entry stays in place meanwhile: only this arrival or a recv after it removes it. */
    if (e->has_recv) {
        if (e->send_fn != NULL)
            e->send_fn(eng, e->send_ctx, e->send_arg);
        if (e->recv_fn != NULL)
            e->recv_fn(eng, e->recv_ctx, e->recv_arg);
        entry_remove(e->sys, e);
    } else {
        if (e->send_fn != NULL)
            e->send_fn(eng, e->send_ctx, e->send_arg);
        e->finished = TRUE;
    }
}

static void net_send(sv_sys *sys, int src, int dst, int tag, uint64_t bytes, sv_event_fn fn,
                     void *ctx, uint64_t arg, struct p2p_chan **cache)
{
    struct p2p_chan *c = chan_get(sys, tag, src, dst, bytes, cache);
    int seq = c->sends++;
    struct p2p_entry *e = entry_find(c, seq);
    if (e == NULL)
        e = entry_create(sys, c, seq);
    e->has_send = TRUE;
    e->send_fn = fn;
    e->send_ctx = ctx;
    e->send_arg = arg;
    sv_net_send(sys->net, src, dst, bytes, on_arrival, e, 0);
}

static void net_recv(sv_sys *sys, int self, int src, int tag, uint64_t bytes, sv_event_fn fn,
                     void *ctx, uint64_t arg, struct p2p_chan **cache)
{
    struct p2p_chan *c = chan_get(sys, tag, src, self, bytes, cache);
    int seq = c->recvs++;
    struct p2p_entry *e = entry_find(c, seq);
    if (e != NULL && e->finished) {
        /* CommonNetworkApi::sim_recv: transfer over, run the callback after 0 ns. */
        entry_remove(sys, e);
        if (fn != NULL)
            sv_engine_schedule(sys->eng, sv_engine_now(sys->eng), SV_PRIO_DEFAULT, fn, ctx, arg);
        return;
    }
    if (e == NULL)
        e = entry_create(sys, c, seq);
    e->has_recv = TRUE;
    e->recv_fn = fn;
    e->recv_ctx = ctx;
    e->recv_arg = arg;
}

/* ---- memory cost of a reduction (Sys::mem_read / mem_write) ------------------------------- */

static sv_time mem_access(const sv_sys *sys, uint64_t bytes)
{
    /* local-mem-bw is GB/s = bytes/ns; the cycles are truncated per access (README closed
     * form: 3 * floor(m / M)). Without a bandwidth ASTRA-sim charges its fixed 10 cycles. */
    if (sys->cfg.local_mem_bw <= 0)
        return 10;
    return sv_time_from_ns((double)bytes / sys->cfg.local_mem_bw);
}

/* ---- streams, scheduler ---------------------------------------------------------------------- */

static void proceed_to_next_vnet(coll_npu *npu, coll_stream *s);
static void stream_call_general(coll_stream *s);

static GQueue *active_queue(coll_npu *npu, int q)
{
    SV_ASSERT(q >= 0);
    while ((int)npu->active->len <= q) {
        g_ptr_array_add(npu->active, g_queue_new());
        int zero = 0;
        g_array_append_val(npu->running, zero);
    }
    return g_ptr_array_index(npu->active, q);
}

static int *running_of(coll_npu *npu, int q)
{
    active_queue(npu, q);
    return &g_array_index(npu->running, int, q);
}

/* Sys::insert_stream with IntraDimensionScheduling::FIFO (the only one reachable). */
static void insert_stream(GQueue *queue, coll_stream *s)
{
    GList *it = queue->head;
    while (it != NULL) {
        coll_stream *o = it->data;
        if (o->initialized || o->priority >= s->priority) {
            it = it->next;
            continue;
        }
        break;
    }
    if (it == NULL)
        g_queue_push_tail(queue, s);
    else
        g_queue_insert_before(queue, it, s);
}

static void ring_run_init(coll_stream *s);
static void custom_run_init(coll_stream *s);
static void direct_run_init(coll_stream *s);
static void hd_run_init(coll_stream *s);
enum dbt_event { DBT_EV_INIT, DBT_EV_GENERAL, DBT_EV_RECEIVED };
static void dbt_run(coll_stream *s, enum dbt_event ev);

/* StreamBaseline::init */
static void stream_init(coll_stream *s)
{
    s->initialized = TRUE;
    switch (s->cur.algo) {
    case ALGO_RING:
        ring_run_init(s);
        break;
    case ALGO_DIRECT:
        direct_run_init(s);
        break;
    case ALGO_HD:
        hd_run_init(s);
        break;
    case ALGO_DBT:
        dbt_run(s, DBT_EV_INIT);
        break;
    case ALGO_CUSTOM:
        custom_run_init(s);
        break;
    }
}

static void init_waiting(coll_npu *npu, int q)
{
    GQueue *queue = active_queue(npu, q);
    int *running = running_of(npu, q);
    GList *it = g_queue_peek_nth_link(queue, (guint)*running);
    while (it != NULL && *running < npu->sys->concurrent_streams) {
        GList *next = it->next;
        stream_init(it->data);
        (*running)++;
        it = next;
    }
}

static void schedule_ready(coll_npu *npu, int num);

/* SchedulerUnit::notify_stream_added */
static void notify_stream_added(coll_npu *npu, int q)
{
    init_waiting(npu, q);
}

static void maybe_schedule(coll_npu *npu)
{
    if (npu->first_phase_streams < READY_LIST_THRESHOLD &&
        npu->total_running_streams < MAX_RUNNING_STREAMS) {
        int max = READY_LIST_THRESHOLD - npu->first_phase_streams;
        if (max > MAX_RUNNING_STREAMS - npu->total_running_streams)
            max = MAX_RUNNING_STREAMS - npu->total_running_streams;
        schedule_ready(npu, max);
    }
}

/* SchedulerUnit::notify_stream_removed */
static void notify_stream_removed(coll_npu *npu, int q)
{
    (*running_of(npu, q))--;
    maybe_schedule(npu);
    init_waiting(npu, q);
}

/* Sys::schedule */
static void schedule_ready(coll_npu *npu, int num)
{
    int size = (int)npu->ready_list.length;
    int counter = MIN(num, size);
    while (counter > 0) {
        coll_stream *s = g_queue_peek_head(&npu->ready_list);
        proceed_to_next_vnet(npu, s);
        SV_ASSERT(s->current_queue_id != -1);
        g_queue_remove(&npu->ready_list, s);
        counter--;
        npu->first_phase_streams++;
        npu->total_running_streams++;
    }
}

static void dataset_free(coll_npu *npu, coll_dataset *ds)
{
    npu->active_collectives--;
    live_free(npu->sys, ds, sizeof *ds);
}

/* DataSet::notify_stream_finished */
static void dataset_stream_finished(coll_dataset *ds)
{
    ds->finished_streams++;
    if (ds->finished_streams == ds->total_streams) {
        coll_npu *npu = ds->npu;
        sv_sys_done_fn done = ds->done;
        void *ctx = ds->ctx;
        uint64_t arg = ds->arg;
        dataset_free(npu, ds);
        if (done != NULL)
            done(npu->sys->eng, ctx, arg);
    }
}

static void custom_clear(coll_stream *s)
{
    /* also the packet list of the Ring-derived algorithms (one phase's state) */
    if (s->rot.pkts != NULL)
        g_array_free(s->rot.pkts, TRUE);
    s->rot.pkts = NULL;
    struct custom_state *c = &s->custom;
    if (c->children != NULL) {
        for (int i = 0; i < c->nops; i++)
            g_array_free(c->children[i], TRUE);
    }
    g_clear_pointer(&c->children, g_free);
    g_clear_pointer(&c->pending_deps, g_free);
    g_clear_pointer(&c->state, g_free);
    if (c->free_ops != NULL)
        g_array_free(c->free_ops, TRUE);
    c->free_ops = NULL;
}

static void stream_free(sv_sys *sys, coll_stream *s)
{
    chan_release(sys, &s->send_chan);
    chan_release(sys, &s->recv_chan);
    custom_clear(s);
    g_array_free(s->phases, TRUE);
    live_free(sys, s, sizeof *s);
}

/* Sys::proceed_to_next_vnet_baseline */
static void proceed_to_next_vnet(coll_npu *npu, coll_stream *s)
{
    int previous_vnet = s->current_queue_id;
    if (s->steps_finished == 1)
        npu->first_phase_streams--;
    if (s->has_current)
        custom_clear(s);
    gboolean last = s->next_phase >= s->phases->len;
    if (last)
        dataset_stream_finished(s->dataset); /* may issue new collectives synchronously */
    if (s->current_queue_id >= 0 && s->has_current)
        g_queue_remove(active_queue(npu, s->cur.queue_id), s);
    if (last) {
        npu->total_running_streams--;
        if (previous_vnet >= 0)
            notify_stream_removed(npu, previous_vnet);
        stream_free(npu->sys, s);
        return;
    }
    s->steps_finished++;
    struct coll_phase *ph = &g_array_index(s->phases, struct coll_phase, s->next_phase);
    if (ph->queue_id < 0)
        ph->queue_id = -ph->queue_id; /* upstream "hot fix" for negative queue ids */
    s->current_queue_id = ph->queue_id;
    s->cur = *ph;
    s->has_current = TRUE;
    s->next_phase++;
    s->initialized = FALSE;
    insert_stream(active_queue(npu, s->current_queue_id), s);
    if (previous_vnet >= 0)
        notify_stream_removed(npu, previous_vnet);
    notify_stream_added(npu, s->current_queue_id);
}

/* ---- Ring (astraccl/native_collectives/collective_algorithm/Ring.cc) ---------------------- */

static void bundle_call(sv_sys *sys, void *obj, uint64_t arg);

static void ring_release_packets(coll_stream *s)
{
    coll_npu *npu = s->owner;
    uint64_t arg = bundle_arg(s->ring.msg_size, s->ring.processed);
    /* MemBus::send_from_NPU_to_MA / send_from_MA_to_NPU without the shared bus model: both
     * directions cost the same fixed delay. */
    sv_time delay = s->cur.fast ? FAST_TRANSMISSION_DELAY : npu->sys->comm_delay;
    register_event(npu, bundle_call, s, arg, delay);
}

static void ring_process_max_count(coll_stream *s)
{
    struct ring_state *r = &s->ring;
    if (r->remained_per_max_count > 0)
        r->remained_per_max_count--;
    if (r->remained_per_max_count == 0) {
        r->max_count--;
        ring_release_packets(s);
        r->remained_per_max_count = 1;
    }
}

static void ring_insert_packet(coll_stream *s)
{
    struct ring_state *r = &s->ring;
    if (r->zero_latency == 0 && r->non_zero_latency == 0) {
        r->zero_latency = r->parallel_reduce;
        r->non_zero_latency = (s->cur.nodes - 1) * r->parallel_reduce;
        r->toggle = !r->toggle;
    }
    if (r->zero_latency > 0) {
        r->packets++;
        r->processed = FALSE;
        r->npu_to_ma = TRUE;
        ring_process_max_count(s);
        r->zero_latency--;
        return;
    }
    SV_ASSERT(r->non_zero_latency > 0); /* "should not inject nothing!" */
    r->packets++;
    r->processed = s->cur.comm_type == SV_SYS_REDUCE_SCATTER ||
                   (s->cur.comm_type == SV_SYS_ALL_REDUCE && r->toggle);
    r->npu_to_ma = FALSE;
    ring_process_max_count(s);
    r->non_zero_latency--;
}

static void ring_packet_received(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)eng;
    (void)arg;
    coll_stream *s = ctx;
    /* StreamBaseline::consume -> Ring::run(PacketReceived) */
    ring_insert_packet(s);
}

static void ring_process_stream_count(coll_stream *s)
{
    struct ring_state *r = &s->ring;
    if (r->remained_per_message > 0)
        r->remained_per_message--;
    if (r->remained_per_message == 0 && r->stream_count > 0) {
        r->stream_count--;
        if (r->stream_count > 0)
            r->remained_per_message = 1;
    }
}

static void ring_ready(coll_stream *s)
{
    struct ring_state *r = &s->ring;
    if (r->packets == 0 || r->stream_count == 0 || r->free_packets == 0)
        return;
    sv_sys *sys = s->owner->sys;
    int self = s->owner->id;
    /* Collective sends carry Sys::handleEvent with no data: nothing runs at arrival. */
    net_send(sys, self, s->cur.receiver, s->stream_id, r->msg_size, NULL, NULL, 0, &s->send_chan);
    net_recv(sys, self, s->cur.sender, s->stream_id, r->msg_size, ring_packet_received, s, 0,
             &s->recv_chan);
    ring_process_stream_count(s);
    r->packets--;
    r->free_packets--;
}

static void ring_run_init(coll_stream *s)
{
    struct ring_state *r = &s->ring;
    const struct coll_phase *ph = &s->cur;
    int n = ph->nodes;
    memset(r, 0, sizeof *r);
    r->parallel_reduce = 1; /* InjectionPolicy::Normal */
    switch (ph->comm_type) {
    case SV_SYS_ALL_REDUCE:
        r->stream_count = 2 * (n - 1);
        r->msg_size = ph->initial_size / (uint64_t)n;
        break;
    case SV_SYS_ALL_TO_ALL:
        r->stream_count = ((n - 1) * n) / 2;
        r->msg_size = ph->initial_size / (uint64_t)n;
        break;
    case SV_SYS_ALL_GATHER:
        r->stream_count = n - 1;
        r->msg_size = ph->initial_size;
        break;
    default: /* reduce-scatter */
        r->stream_count = n - 1;
        r->msg_size = ph->initial_size / (uint64_t)n;
        break;
    }
    r->max_count =
        (ph->comm_type == SV_SYS_ALL_TO_ALL || ph->comm_type == SV_SYS_ALL_GATHER) ? 0 : n - 1;
    r->remained_per_message = 1;
    r->remained_per_max_count = 1;
    for (int i = 0; i < r->parallel_reduce; i++)
        ring_insert_packet(s);
}

/* Ring::run(General): returns after the stream may have been freed. */
static void ring_run_general(coll_stream *s)
{
    struct ring_state *r = &s->ring;
    r->free_packets++;
    ring_ready(s);
    if (r->stream_count == 0 && r->free_packets == r->parallel_reduce)
        proceed_to_next_vnet(s->owner, s); /* Ring::exit */
}

static void direct_run_general(coll_stream *s);
static void hd_run_general(coll_stream *s);

static void stream_call_general(coll_stream *s)
{
    switch (s->cur.algo) {
    case ALGO_RING:
        ring_run_general(s);
        break;
    case ALGO_DIRECT:
        direct_run_general(s);
        break;
    case ALGO_HD:
        hd_run_general(s);
        break;
    case ALGO_DBT:
        dbt_run(s, DBT_EV_GENERAL);
        break;
    case ALGO_CUSTOM:
        break;
    }
}

/* PacketBundle::call */
static void bundle_call(sv_sys *sys, void *obj, uint64_t arg)
{
    coll_stream *s = obj;
    if (arg & 1u) { /* needs processing */
        uint64_t size = arg >> 1;
        /* mem_write + 2 x mem_read: the reduction reads two operands and writes one. */
        sv_time delay = mem_access(sys, size) + mem_access(sys, size) + mem_access(sys, size);
        register_event(s->owner, bundle_call, s, bundle_arg(size, FALSE), delay);
        return;
    }
    stream_call_general(s);
}

/* ---- shared by direct / halving-doubling / double binary tree ------------------------------ */

/* PacketBundle::send_to_MA / send_to_NPU over a GeneralComplexTopology dimension
 * (Transmition::Usual): endpoint delay, then the reduction cost when `processed`. */
static void bundle_release(coll_stream *s, gboolean processed, uint64_t size)
{
    coll_npu *npu = s->owner;
    register_event(npu, bundle_call, s, bundle_arg(size, processed), npu->sys->comm_delay);
}

static int member_of(const struct coll_phase *ph, int index)
{
    int n = ph->nodes;
    return ph->base + (((index % n) + n) % n) * ph->stride;
}

static void rot_push(struct rot_state *r, int dst, int src, uint64_t size)
{
    if (r->pkts == NULL)
        r->pkts = g_array_new(FALSE, FALSE, sizeof(struct algo_pkt));
    struct algo_pkt p = {dst, src, size};
    g_array_append_val(r->pkts, p);
}

static guint rot_pending(const struct rot_state *r)
{
    return r->pkts == NULL ? 0 : r->pkts->len - r->pkt_head;
}

static void rot_packet_received(sv_engine *eng, void *ctx, uint64_t arg);

/* Ring::ready (shared by AllToAll and HalvingDoubling): send the oldest packet and post the
 * matching recv; `use_pkt_size` = HalvingDoubling (the packet's own size) vs Ring (msg_size). */
static gboolean rot_ready(coll_stream *s, gboolean use_pkt_size)
{
    struct rot_state *r = &s->rot;
    if (rot_pending(r) == 0 || r->stream_count == 0 || r->free_packets == 0)
        return FALSE;
    struct algo_pkt p = g_array_index(r->pkts, struct algo_pkt, r->pkt_head);
    uint64_t size = use_pkt_size ? p.size : r->msg_size;
    sv_sys *sys = s->owner->sys;
    net_send(sys, s->owner->id, p.dst, s->stream_id, size, NULL, NULL, 0, &s->send_chan);
    net_recv(sys, s->owner->id, p.src, s->stream_id, size, rot_packet_received, s, 0,
             &s->recv_chan);
    r->stream_count--; /* process_stream_count */
    r->pkt_head++;
    r->free_packets--;
    return TRUE;
}

/* Ring::iteratable: the phase ends once every message is out and every slot is back. Returns
 * TRUE when the stream moved on (it may have been freed). */
static gboolean rot_iteratable(coll_stream *s)
{
    struct rot_state *r = &s->rot;
    if (r->stream_count == 0 && r->free_packets == r->parallel_reduce) {
        proceed_to_next_vnet(s->owner, s);
        return TRUE;
    }
    return FALSE;
}

/* ---- AllToAll ("direct", AllToAll.cc on top of Ring.cc) ------------------------------------ */

static void direct_insert_packet(coll_stream *s)
{
    struct rot_state *r = &s->rot;
    const struct coll_phase *ph = &s->cur;
    if (r->zero_latency == 0 && r->non_zero_latency == 0) {
        /* AllToAll::get_non_zero_latency_packets on a Dimension::NA ring: parallel_reduce */
        r->zero_latency = r->parallel_reduce;
        r->non_zero_latency = r->parallel_reduce;
        r->toggle = !r->toggle;
    }
    rot_push(r, member_of(ph, r->curr_receiver), member_of(ph, r->curr_sender), r->msg_size);
    gboolean processed;
    if (r->zero_latency > 0) {
        processed = FALSE;
        r->zero_latency--;
    } else {
        processed = ph->comm_type == SV_SYS_REDUCE_SCATTER ||
                    (ph->comm_type == SV_SYS_ALL_REDUCE && r->toggle);
        r->non_zero_latency--;
    }
    /* AllToAll::process_max_count: every packet is released at once, then the peers rotate to
     * the next NPU of the ring, skipping this one. */
    bundle_release(s, processed, r->msg_size);
    int n = ph->nodes;
    r->curr_receiver = ((r->curr_receiver + r->step) % n + n) % n;
    if (r->curr_receiver == ph->index)
        r->curr_receiver = ((r->curr_receiver + r->step) % n + n) % n;
    r->curr_sender = ((r->curr_sender - r->step) % n + n) % n;
    if (r->curr_sender == ph->index)
        r->curr_sender = ((r->curr_sender - r->step) % n + n) % n;
}

static void direct_run_init(coll_stream *s)
{
    struct rot_state *r = &s->rot;
    const struct coll_phase *ph = &s->cur;
    int n = ph->nodes;
    custom_clear(s);
    memset(r, 0, sizeof *r);
    /* AllToAll ctor: window -1 -> n - 1 messages in flight, else min(window, n - 1) */
    r->parallel_reduce = ph->window < 0 ? n - 1 : MIN(ph->window, n - 1);
    r->middle_point = n - 1;
    switch (ph->comm_type) { /* Ring ctor stream_count / msg_size; AllToAll's for all-to-all */
    case SV_SYS_ALL_REDUCE:
        r->stream_count = 2 * (n - 1);
        r->msg_size = ph->initial_size / (uint64_t)n;
        break;
    case SV_SYS_ALL_GATHER:
        r->stream_count = n - 1;
        r->msg_size = ph->initial_size;
        break;
    default: /* reduce-scatter, all-to-all */
        r->stream_count = n - 1;
        r->msg_size = ph->initial_size / (uint64_t)n;
        break;
    }
    r->step = ph->step;
    r->curr_receiver = ((ph->index + r->step) % n + n) % n;
    r->curr_sender = ((ph->index - r->step) % n + n) % n;
    for (int i = 0; i < r->parallel_reduce; i++)
        direct_insert_packet(s);
}

static void direct_run_general(coll_stream *s)
{
    struct rot_state *r = &s->rot;
    r->free_packets++;
    if (s->cur.comm_type == SV_SYS_ALL_REDUCE && r->stream_count <= r->middle_point) {
        /* second half of an all-reduce: wait until every first-half message has arrived, then
         * send as many as there are free slots */
        if (r->total_received < r->middle_point)
            return;
        for (int i = 0; i < r->parallel_reduce; i++)
            rot_ready(s, FALSE);
    } else {
        rot_ready(s, FALSE);
    }
    rot_iteratable(s);
}

/* ---- HalvingDoubling (HalvingDoubling.cc) -------------------------------------------------- */

static int hd_log2(int n)
{
    int k = 0;
    while ((1 << (k + 1)) <= n)
        k++;
    return k;
}

/* specify_direction + the walk of rank_offset ring steps: the partner's ring index. */
static int hd_partner(const struct coll_phase *ph, int rank_offset)
{
    if (rank_offset == 0)
        return ph->index;
    int sign = (ph->index / rank_offset) % 2 == 0 ? 1 : -1;
    int n = ph->nodes;
    return ((ph->index + sign * rank_offset) % n + n) % n;
}

static void hd_insert_packet(coll_stream *s)
{
    struct rot_state *r = &s->rot;
    const struct coll_phase *ph = &s->cur;
    if (r->zero_latency == 0 && r->non_zero_latency == 0) {
        /* get_non_zero_latency_packets: log2(n) - parallel_reduce */
        r->zero_latency = r->parallel_reduce;
        r->non_zero_latency = hd_log2(ph->nodes) - r->parallel_reduce;
        r->toggle = !r->toggle;
    }
    int peer = member_of(ph, r->curr_receiver);
    rot_push(r, peer, peer, r->msg_size);
    gboolean processed;
    if (r->zero_latency > 0) {
        processed = FALSE;
        r->zero_latency--;
    } else {
        SV_ASSERT(r->non_zero_latency > 0); /* "should not inject nothing!" */
        processed = ph->comm_type == SV_SYS_REDUCE_SCATTER ||
                    (ph->comm_type == SV_SYS_ALL_REDUCE && r->toggle);
        r->non_zero_latency--;
    }
    /* process_max_count: release, then move to the next distance (x2 halving, x0.5 doubling;
     * an all-reduce turns around once the distance reaches n). Integer truncation as upstream
     * (int rank_offset, uint64 msg_size, double multiplier). */
    bundle_release(s, processed, r->msg_size);
    r->rank_offset = (int)(r->rank_offset * r->offset_multiplier);
    r->msg_size = (uint64_t)((double)r->msg_size / r->offset_multiplier);
    if (r->rank_offset == ph->nodes && ph->comm_type == SV_SYS_ALL_REDUCE) {
        r->offset_multiplier = 0.5;
        r->rank_offset = (int)(r->rank_offset * r->offset_multiplier);
        r->msg_size = (uint64_t)((double)r->msg_size / r->offset_multiplier);
    }
    r->curr_receiver = hd_partner(ph, r->rank_offset);
}

static void hd_run_init(coll_stream *s)
{
    struct rot_state *r = &s->rot;
    const struct coll_phase *ph = &s->cur;
    int n = ph->nodes;
    int lg = hd_log2(n);
    custom_clear(s);
    memset(r, 0, sizeof *r);
    r->parallel_reduce = 1;
    switch (ph->comm_type) {
    case SV_SYS_ALL_REDUCE:
        r->stream_count = 2 * lg;
        r->msg_size = ph->initial_size / 2;
        r->rank_offset = 1;
        r->offset_multiplier = 2;
        break;
    case SV_SYS_ALL_GATHER:
        r->stream_count = lg;
        r->msg_size = ph->initial_size;
        r->rank_offset = n / 2;
        r->offset_multiplier = 0.5;
        break;
    default: /* reduce-scatter (all-to-all is refused by sv_sys_new, as upstream exits) */
        r->stream_count = lg;
        r->msg_size = ph->initial_size / 2;
        r->rank_offset = 1;
        r->offset_multiplier = 2;
        break;
    }
    r->curr_receiver = hd_partner(ph, r->rank_offset);
    hd_insert_packet(s);
}

static void hd_run_general(coll_stream *s)
{
    s->rot.free_packets++;
    rot_ready(s, TRUE);
    rot_iteratable(s);
}

/* Ring::run(PacketReceived) for both: count it and queue the next packet. */
static void rot_packet_received(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)eng;
    (void)arg;
    coll_stream *s = ctx;
    s->rot.total_received++;
    if (s->cur.algo == ALGO_DIRECT)
        direct_insert_packet(s);
    else
        hd_insert_packet(s);
}

/* ---- DoubleBinaryTreeAllReduce (DoubleBinaryTreeAllReduce.cc) ------------------------------ */

static void dbt_received(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)eng;
    (void)arg;
    dbt_run(ctx, DBT_EV_RECEIVED);
}

static void dbt_send(coll_stream *s, int dst)
{
    net_send(s->owner->sys, s->owner->id, dst, s->stream_id, s->cur.initial_size, NULL, NULL, 0,
             &s->send_chan);
}

static void dbt_recv(coll_stream *s, int src)
{
    net_recv(s->owner->sys, s->owner->id, src, s->stream_id, s->cur.initial_size, dbt_received, s,
             0, &s->recv_chan);
}

/* The state machine of upstream's run(), branch for branch (leaf.1-5, int.1-6, root.1-2).
 * Every message carries the whole phase size; each reduction costs the MemBus delay plus
 * 3 memory accesses of that size. */
static void dbt_run(coll_stream *s, enum dbt_event ev)
{
    struct dbt_state *t = &s->dbt;
    const struct coll_phase *ph = &s->cur;
    uint64_t size = ph->initial_size;
    if (ev == DBT_EV_INIT) {
        memset(t, 0, sizeof *t);
        t->state = DBT_BEGIN;
        if (ph->dbt_parent < 0)
            t->type = DBT_ROOT;
        else if (ph->dbt_left < 0 && ph->dbt_right < 0)
            t->type = DBT_LEAF;
        else
            t->type = DBT_INTERMEDIATE;
    }
    switch (t->type) {
    case DBT_LEAF:
        if (t->state == DBT_BEGIN) { /* leaf.1 */
            bundle_release(s, FALSE, size);
            t->state = DBT_SENDING_TO_PARENT;
        } else if (t->state == DBT_SENDING_TO_PARENT) { /* leaf.3 */
            dbt_send(s, ph->dbt_parent);
            t->state = DBT_WAITING_FROM_PARENT; /* set before the recv, which may complete */
            dbt_recv(s, ph->dbt_parent);
        } else if (t->state == DBT_WAITING_FROM_PARENT) { /* leaf.4 */
            bundle_release(s, FALSE, size);
            t->state = DBT_END;
        } else if (t->state == DBT_END) { /* leaf.5 */
            proceed_to_next_vnet(s->owner, s);
        }
        return;
    case DBT_INTERMEDIATE:
        if (t->state == DBT_BEGIN) { /* int.1 */
            t->state = DBT_WAITING_TWO_CHILDREN;
            dbt_recv(s, ph->dbt_left);
            dbt_recv(s, ph->dbt_right);
        } else if (t->state == DBT_WAITING_TWO_CHILDREN && ev == DBT_EV_RECEIVED) { /* int.2 */
            bundle_release(s, TRUE, size);
            t->state = DBT_WAITING_ONE_CHILD;
        } else if (t->state == DBT_WAITING_ONE_CHILD && ev == DBT_EV_RECEIVED) { /* int.3 */
            bundle_release(s, TRUE, size);
            t->state = DBT_SENDING_TO_PARENT;
        } else if (t->reductions < 1 && ev == DBT_EV_GENERAL) { /* int.4 */
            t->reductions++;
        } else if (t->state == DBT_SENDING_TO_PARENT) { /* int.5 */
            t->state = DBT_WAITING_FROM_PARENT;
            dbt_send(s, ph->dbt_parent);
            dbt_recv(s, ph->dbt_parent);
        } else if (t->state == DBT_WAITING_FROM_PARENT && ev == DBT_EV_RECEIVED) { /* int.6 */
            bundle_release(s, TRUE, size);
            t->state = DBT_SENDING_TO_CHILDREN;
        } else if (t->state == DBT_SENDING_TO_CHILDREN) {
            dbt_send(s, ph->dbt_left);
            dbt_send(s, ph->dbt_right);
            proceed_to_next_vnet(s->owner, s);
        }
        return;
    case DBT_ROOT: {
        int child = ph->dbt_left >= 0 ? ph->dbt_left : ph->dbt_right;
        if (t->state == DBT_BEGIN) { /* root.1 */
            t->state = DBT_WAITING_ONE_CHILD;
            dbt_recv(s, child);
        } else if (t->state == DBT_WAITING_ONE_CHILD) { /* root.2 */
            bundle_release(s, TRUE, size);
            t->state = DBT_SENDING_TO_CHILDREN;
        } else if (t->state == DBT_SENDING_TO_CHILDREN) {
            dbt_send(s, child);
            proceed_to_next_vnet(s->owner, s);
        }
        return;
    }
    }
}

/* BinaryTree: a dummy root over a complete tree of floor(log2 n) levels, ids given in order
 * (in-order walk); RootMax puts the root last, RootMin first. Fills parent / left / right by
 * ring index (n must be a power of two: checked by sv_sys_new). */
static int dbt_build_sub(int levels, int *next, int *par, int *lc, int *rc)
{
    int l = -1, r = -1;
    if (levels > 1)
        l = dbt_build_sub(levels - 1, next, par, lc, rc);
    int me = (*next)++;
    if (levels > 1)
        r = dbt_build_sub(levels - 1, next, par, lc, rc);
    lc[me] = l;
    rc[me] = r;
    if (l >= 0)
        par[l] = me;
    if (r >= 0)
        par[r] = me;
    return me;
}

static void dbt_tree(int n, gboolean root_min, int index, int *parent, int *left, int *right)
{
    g_autofree int *par = g_new(int, n);
    g_autofree int *lc = g_new(int, n);
    g_autofree int *rc = g_new(int, n);
    int levels = hd_log2(n);
    int next = 0;
    int root, sub;
    if (root_min) {
        root = next++;
        sub = dbt_build_sub(levels, &next, par, lc, rc);
        lc[root] = -1;
        rc[root] = sub;
    } else {
        sub = dbt_build_sub(levels, &next, par, lc, rc);
        root = next++;
        lc[root] = sub;
        rc[root] = -1;
    }
    SV_ASSERT(next == n);
    par[root] = -1;
    par[sub] = root;
    *parent = par[index];
    *left = lc[index];
    *right = rc[index];
}

/* ---- CustomAlgorithm (astraccl/custom_collectives/CustomAlgorithm.cc) ------------------- */

static void custom_issue_free(coll_stream *s);

static int custom_real_rank(const struct coll_phase *ph, int rank)
{
    return ph->members != NULL ? ph->members[rank] : rank;
}

static void custom_finish(coll_stream *s, int op)
{
    struct custom_state *c = &s->custom;
    SV_ASSERT(c->state[op] == OP_ONGOING);
    c->state[op] = OP_DONE;
    c->ongoing--;
    GArray *ch = c->children[op];
    for (guint i = 0; i < ch->len; i++) {
        int k = g_array_index(ch, int, i);
        if (--c->pending_deps[k] == 0 && c->state[k] == OP_WAIT) {
            c->state[k] = OP_FREE;
            /* keep the free list sorted by node id */
            uint64_t id = g_array_index(c->pr->ops, struct sv_sys__plan_node, k).id;
            guint pos = 0;
            while (pos < c->free_ops->len && g_array_index(c->pr->ops, struct sv_sys__plan_node,
                                                           g_array_index(c->free_ops, int, pos))
                                                     .id < id)
                pos++;
            g_array_insert_val(c->free_ops, pos, k);
        }
    }
    custom_issue_free(s);
    if (c->ongoing == 0 && c->free_ops->len == 0)
        proceed_to_next_vnet(s->owner, s); /* Algorithm::exit */
}

static void custom_net_done(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)eng;
    (void)arg;
    struct op_ref *ref = ctx;
    coll_stream *s = ref->stream;
    int op = ref->op;
    live_free(s->owner->sys, ref, sizeof *ref);
    custom_finish(s, op);
}

static void custom_comp_done(sv_sys *sys, void *obj, uint64_t arg)
{
    (void)sys;
    custom_finish(obj, (int)arg);
}

static void custom_issue_free(coll_stream *s)
{
    struct custom_state *c = &s->custom;
    coll_npu *npu = s->owner;
    sv_sys *sys = npu->sys;
    g_autoptr(GArray) batch = g_array_copy(c->free_ops);
    g_array_set_size(c->free_ops, 0);
    for (guint i = 0; i < batch->len; i++) {
        int k = g_array_index(batch, int, i);
        const struct sv_sys__plan_node *n = &g_array_index(c->pr->ops, struct sv_sys__plan_node, k);
        c->state[k] = OP_ONGOING;
        c->ongoing++;
        if (n->kind == SV_SYS_OP_COMP) {
            /* COMP: runtime in ns, 0 -> 1 cycle */
            register_event(npu, custom_comp_done, s, (uint64_t)k,
                           n->duration_ns > 0 ? n->duration_ns : 1);
            continue;
        }
        struct op_ref *ref = live_new(sys, sizeof *ref);
        ref->stream = s;
        ref->op = k;
        int peer = custom_real_rank(&s->cur, n->peer);
        if (n->kind == SV_SYS_OP_SEND)
            net_send(sys, npu->id, peer, n->tag, n->bytes, custom_net_done, ref, 0, NULL);
        else
            net_recv(sys, npu->id, peer, n->tag, n->bytes, custom_net_done, ref, 0, NULL);
    }
}

static int custom_find(const struct sv_sys__plan_rank *pr, uint64_t id)
{
    for (guint i = 0; i < pr->ops->len; i++)
        if (g_array_index(pr->ops, struct sv_sys__plan_node, i).id == id)
            return (int)i;
    return -1;
}

static void custom_run_init(coll_stream *s)
{
    struct custom_state *c = &s->custom;
    custom_clear(s);
    c->pr = &s->cur.plan->rank[s->cur.pos];
    c->nops = (int)c->pr->ops->len;
    c->pending_deps = g_new0(int, c->nops > 0 ? c->nops : 1);
    c->state = g_new0(guint8, c->nops > 0 ? c->nops : 1);
    c->children = g_new0(GArray *, c->nops > 0 ? c->nops : 1);
    c->free_ops = g_array_new(FALSE, FALSE, sizeof(int));
    c->ongoing = 0;
    for (int i = 0; i < c->nops; i++)
        c->children[i] = g_array_new(FALSE, FALSE, sizeof(int));
    for (int i = 0; i < c->nops; i++) {
        const struct sv_sys__plan_node *n = &g_array_index(c->pr->ops, struct sv_sys__plan_node, i);
        for (int d = 0; d < n->ndeps; d++) {
            int p = custom_find(c->pr, n->deps[d]);
            if (p < 0)
                continue; /* checked by sv_sys_set_custom_plan */
            g_array_append_val(c->children[p], i);
            c->pending_deps[i]++;
        }
    }
    for (int i = 0; i < c->nops; i++) {
        if (c->pending_deps[i] == 0) {
            c->state[i] = OP_FREE;
            uint64_t id = g_array_index(c->pr->ops, struct sv_sys__plan_node, i).id;
            guint pos = 0;
            while (pos < c->free_ops->len && g_array_index(c->pr->ops, struct sv_sys__plan_node,
                                                           g_array_index(c->free_ops, int, pos))
                                                     .id < id)
                pos++;
            g_array_insert_val(c->free_ops, pos, i);
        }
    }
    custom_issue_free(s);
}

/* ---- generate_collective ----------------------------------------------------------------------
 */

/* QueueLevelHandler::get_next_queue_id / _first / _last. */
enum qpick { Q_NEXT, Q_FIRST, Q_LAST };

static int qlevel_pick(struct qlevel *l, enum qpick how, gboolean *anticlockwise)
{
    int half = l->n / 2;
    int idx;
    switch (how) {
    case Q_NEXT:
        /* analytical backend (not Garnet): anticlockwise for the upper half of the queues */
        *anticlockwise = l->n > 1 && l->allocator >= half;
        idx = l->allocator++;
        if (l->allocator == l->n)
            l->allocator = 0;
        break;
    case Q_FIRST:
        *anticlockwise = FALSE;
        idx = l->first_allocator++;
        if (l->first_allocator == half)
            l->first_allocator = 0;
        break;
    default:
        *anticlockwise = TRUE;
        idx = l->last_allocator++;
        if (l->last_allocator == l->n)
            l->last_allocator = half;
        break;
    }
    /* With one queue per dimension upstream's first allocator never wraps (n/2 == 0) and reads
     * past its one-element vector; the calibration runs (4 chunks in sequence on queue 0) show
     * those reads yield queue 0, which is what we return for any index past the end. */
    if (idx >= l->n)
        return 0;
    return l->start + idx;
}

/* Ring neighbours of `npu` in logical dimension d of `t`, or in the explicit ring `members`. */
static void ring_neighbours(const struct ldim *d, int npu, gboolean anticlockwise, int *sender,
                            int *receiver)
{
    int index = (npu / d->stride) % d->size;
    int base = npu - index * d->stride;
    int next = base + ((index + 1) % d->size) * d->stride;
    int prev = base + ((index + d->size - 1) % d->size) * d->stride;
    *receiver = anticlockwise ? prev : next;
    *sender = anticlockwise ? next : prev;
}

static void list_neighbours(const int *members, int n, int npu, gboolean anticlockwise, int *sender,
                            int *receiver)
{
    int index = 0;
    while (members[index] != npu)
        index++;
    int next = members[(index + 1) % n];
    int prev = members[(index + n - 1) % n];
    *receiver = anticlockwise ? prev : next;
    *sender = anticlockwise ? next : prev;
}

struct coll_target {
    const struct ltopo *topo; /* NULL: explicit ring */
    const int *members;
    int nmembers;
    gboolean involved[SV_NET_MAX_DIMS];
};

static struct coll_phase make_phase(sv_sys *sys, coll_npu *npu, const struct coll_target *tg,
                                    sv_sys_coll_type type, int dim, uint64_t size, int queue,
                                    gboolean anticlockwise)
{
    struct coll_phase ph;
    memset(&ph, 0, sizeof ph);
    ph.queue_id = queue;
    ph.comm_type = type;
    ph.initial_size = size;
    ph.algo = ALGO_RING;
    if (tg->topo == NULL) {
        ph.nodes = tg->nmembers;
        ph.fast = TRUE; /* CommunicatorGroup builds RingTopology::Dimension::Local */
        list_neighbours(tg->members, tg->nmembers, npu->id, anticlockwise, &ph.sender,
                        &ph.receiver);
    } else {
        const struct ldim *d = &tg->topo->dim[dim];
        ph.nodes = d->size;
        ph.fast = FALSE; /* GeneralComplexTopology: Dimension::NA */
        ring_neighbours(d, npu->id, anticlockwise, &ph.sender, &ph.receiver);
        ph.index = (npu->id / d->stride) % d->size;
        ph.base = npu->id - ph.index * d->stride;
        ph.stride = d->stride;
        ph.window = d->direct_window;
        ph.step = anticlockwise ? -1 : 1;
        switch (d->kind) {
        case SV_SYS_IMPL_DIRECT:
        case SV_SYS_IMPL_ONE_DIRECT:
            ph.algo = ALGO_DIRECT;
            break;
        case SV_SYS_IMPL_HALVING_DOUBLING:
        case SV_SYS_IMPL_ONE_HALVING_DOUBLING:
            ph.algo = ALGO_HD;
            break;
        case SV_SYS_IMPL_DOUBLE_BINARY_TREE: {
            /* DoubleBinaryTreeTopology::get_topology alternates RootMax / RootMin per phase
             * built from this collective type's logical topology (one counter per NPU). */
            int t = (int)(tg->topo - sys->topo);
            int c = npu->dbt_counter[t][dim]++;
            int par, l, r;
            dbt_tree(d->size, c % 2 == 1, ph.index, &par, &l, &r);
            ph.dbt_parent = par < 0 ? -1 : member_of(&ph, par);
            ph.dbt_left = l < 0 ? -1 : member_of(&ph, l);
            ph.dbt_right = r < 0 ? -1 : member_of(&ph, r);
            ph.algo = ALGO_DBT;
            break;
        }
        default:
            break;
        }
    }
    uint64_t n = (uint64_t)ph.nodes;
    if (ph.algo == ALGO_DBT) {
        /* DoubleBinaryTreeAllReduce is an all-reduce whatever the phase's type */
        ph.final_size = size;
        return ph;
    }
    switch (type) {
    case SV_SYS_ALL_GATHER:
        ph.final_size = size * n;
        break;
    case SV_SYS_REDUCE_SCATTER:
        ph.final_size = size / n;
        break;
    default:
        ph.final_size = size;
        break;
    }
    return ph;
}

static int tg_ndims(const struct coll_target *tg)
{
    return tg->topo == NULL ? 1 : tg->topo->ndims;
}

static int tg_nodes(const struct coll_target *tg, int dim)
{
    return tg->topo == NULL ? tg->nmembers : tg->topo->dim[dim].size;
}

static void stream_submit(coll_npu *npu, coll_dataset *ds, int stream_id, int pri, GArray *phases)
{
    coll_stream *s = live_new(npu->sys, sizeof *s);
    s->owner = npu;
    s->dataset = ds;
    s->stream_id = stream_id;
    s->priority = pri;
    s->phases = phases;
    s->current_queue_id = -1;
    /* Sys::insert_into_ready_list */
    insert_stream(&npu->ready_list, s);
    maybe_schedule(npu);
}

static int group_index(const sv_sys *sys, int group_id)
{
    for (guint i = 0; i < sys->groups->groups->len; i++)
        if (g_array_index(sys->groups->groups, struct sv_sys__group, i).id == group_id)
            return (int)i;
    return -1;
}

static void inactive_done(sv_engine *eng, void *ctx, uint64_t arg)
{
    coll_dataset *ds = ctx;
    (void)arg;
    coll_npu *npu = ds->npu;
    sv_sys_done_fn done = ds->done;
    void *dctx = ds->ctx;
    uint64_t darg = ds->arg;
    dataset_free(npu, ds);
    if (done != NULL)
        done(eng, dctx, darg);
}

gboolean sv_sys_coll_start(sv_sys *sys, int npu_id, sv_sys_coll_type type, uint64_t bytes,
                           const gboolean *involved_dims, int ndims, int group_id, int priority,
                           sv_sys_done_fn done, void *ctx, uint64_t arg, GError **error)
{
    if (type != SV_SYS_ALL_REDUCE && type != SV_SYS_ALL_GATHER && type != SV_SYS_REDUCE_SCATTER &&
        type != SV_SYS_ALL_TO_ALL) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_UNSUPPORTED,
                    "unsupported collective comm type %d (%s) on NPU %d", (int)type,
                    sv_sys_coll_type_name(type), npu_id);
        return FALSE;
    }
    if (npu_id < 0 || npu_id >= sys->npus) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, "NPU %d out of range [0, %d)", npu_id,
                    sys->npus);
        return FALSE;
    }
    if (bytes == 0) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "%s on NPU %d: collective data size must be > 0", sv_sys_coll_type_name(type),
                    npu_id);
        return FALSE;
    }
    coll_npu *npu = &sys->npu[npu_id];
    struct coll_target tg;
    memset(&tg, 0, sizeof tg);
    const struct sv_sys__group *grp = NULL;
    int gidx = -1;
    int pos_in_comm = npu_id;
    if (group_id != 0) {
        gidx = group_index(sys, group_id);
        if (gidx < 0) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s on NPU %d: communicator group %d is not defined",
                        sv_sys_coll_type_name(type), npu_id, group_id);
            return FALSE;
        }
        grp = &g_array_index(sys->groups->groups, struct sv_sys__group, gidx);
        pos_in_comm = -1;
        for (int i = 0; i < grp->n; i++)
            if (grp->members[i] == npu_id)
                pos_in_comm = i;
        if (pos_in_comm < 0) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s on NPU %d: the NPU is not a member of communicator group %d",
                        sv_sys_coll_type_name(type), npu_id, group_id);
            return FALSE;
        }
    }
    const sv_sys_plan *plan = sys->custom[type];
    if (plan == NULL && sys->cfg.custom_prefix[type] != NULL) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "%s: %s-implementation-custom is configured but no plan was loaded",
                    sv_sys_coll_type_name(type), sv_sys_coll_type_name(type));
        return FALSE;
    }
    if (plan != NULL) {
        int ranks = grp != NULL ? grp->n : sys->npus;
        if (plan->ranks != ranks) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s: custom plan has %d ranks, the communicator has %d",
                        sv_sys_coll_type_name(type), plan->ranks, ranks);
            return FALSE;
        }
    } else if (grp != NULL && grp->n != sys->npus) {
        /* CommunicatorGroup::get_collective_plan: a 1-D ring over the members */
        tg.topo = NULL;
        tg.members = grp->members;
        tg.nmembers = grp->n;
        tg.involved[0] = TRUE;
    } else {
        if (sys->topo[type].ndims == 0) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "no collective implementation found for %s (set %s-implementation)",
                        sv_sys_coll_type_name(type), sv_sys_coll_type_name(type));
            return FALSE;
        }
        tg.topo = &sys->topo[type];
        for (int d = 0; d < SV_NET_MAX_DIMS; d++)
            tg.involved[d] =
                grp != NULL || involved_dims == NULL || d >= ndims ? TRUE : involved_dims[d];
    }

    /* Sys::determine_chunk_size */
    uint64_t size = bytes;
    uint64_t k = (uint64_t)sys->cfg.preferred_dataset_splits;
    uint64_t chunk = size / k;
    if (type != SV_SYS_ALL_GATHER && (uint64_t)sys->npus > chunk) {
        chunk = (uint64_t)sys->npus;
        size = k * chunk;
    }
    int streams = (int)ceil((double)size / (double)chunk);
    coll_dataset *ds = live_new(sys, sizeof *ds);
    ds->total_streams = streams;
    ds->active = TRUE;
    ds->done = done;
    ds->ctx = ctx;
    ds->arg = arg;
    ds->npu = npu;
    npu->active_collectives++;
    /* Sys::get_priority */
    int pri = priority;
    if (sys->cfg.scheduling_policy == SV_SYS_SCHED_LIFO)
        pri = npu->priority_counter++;
    else if (sys->cfg.scheduling_policy == SV_SYS_SCHED_FIFO)
        pri = npu->priority_counter--;

    if (plan != NULL) {
        /* The custom path: one stream, one phase on queue `pos_in_comm`, whatever the splits
         * (so with splits > 1 the DataSet waits for streams never created, as upstream). */
        GArray *phases = g_array_new(FALSE, TRUE, sizeof(struct coll_phase));
        struct coll_phase ph;
        memset(&ph, 0, sizeof ph);
        ph.queue_id = pos_in_comm;
        ph.comm_type = type;
        ph.initial_size = size;
        ph.final_size = size;
        ph.algo = ALGO_CUSTOM;
        ph.pos = pos_in_comm;
        ph.members = grp != NULL ? grp->members : NULL;
        ph.plan = plan;
        g_array_append_val(phases, ph);
        int stream_id = npu->num_streams++;
        if (grp != NULL)
            stream_id = npu->group_streams[gidx]++;
        stream_submit(npu, ds, stream_id, pri, phases);
        return TRUE;
    }

    int count = 0;
    int nd = tg_ndims(&tg);
    while (size > 0) {
        count++;
        int mapper[SV_NET_MAX_DIMS];
        for (int d = 0; d < nd; d++)
            mapper[d] = type == SV_SYS_ALL_GATHER ? nd - 1 - d : d;
        size = chunk > size ? 0 : size - chunk;
        uint64_t remain = chunk;
        GArray *phases = g_array_new(FALSE, TRUE, sizeof(struct coll_phase));
        gboolean anti = FALSE;
        if (type != SV_SYS_ALL_REDUCE || sys->cfg.collective_optimization == SV_SYS_OPT_BASELINE) {
            for (int d = 0; d < nd; d++) {
                int m = mapper[d];
                if (tg_nodes(&tg, m) == 1 || !tg.involved[m])
                    continue;
                int q = qlevel_pick(&npu->level[m], Q_NEXT, &anti);
                struct coll_phase ph = make_phase(sys, npu, &tg, type, m, remain, q, anti);
                g_array_append_val(phases, ph);
                remain = ph.final_size;
            }
        } else {
            /* localBWAware all-reduce: reduce-scatter up the dimensions, all-reduce in the
             * last active one, all-gather back down (upstream issue #137 queue halves). */
            int last_active = 0;
            for (int d = 0; d < nd; d++)
                if (tg_nodes(&tg, mapper[d]) != 1 && tg.involved[mapper[d]])
                    last_active = d;
            int d = 0;
            for (d = 0; d < last_active; d++) {
                int m = mapper[d];
                if (tg_nodes(&tg, m) == 1 || !tg.involved[m])
                    continue;
                int q = qlevel_pick(&npu->level[m], Q_FIRST, &anti);
                struct coll_phase ph =
                    make_phase(sys, npu, &tg, SV_SYS_REDUCE_SCATTER, m, remain, q, anti);
                g_array_append_val(phases, ph);
                remain = ph.final_size;
            }
            while (d > 0 && (!tg.involved[mapper[d]] || tg_nodes(&tg, mapper[d]) == 1))
                d--;
            if (tg.involved[mapper[d]] && tg_nodes(&tg, mapper[d]) > 1) {
                int m = mapper[d];
                int q = qlevel_pick(&npu->level[m], Q_FIRST, &anti);
                struct coll_phase ph =
                    make_phase(sys, npu, &tg, SV_SYS_ALL_REDUCE, m, remain, q, anti);
                g_array_append_val(phases, ph);
                remain = ph.final_size;
            }
            d--;
            for (; d >= 0; d--) {
                int m = mapper[d];
                if (tg_nodes(&tg, m) == 1 || !tg.involved[m])
                    continue;
                int q = qlevel_pick(&npu->level[m], Q_LAST, &anti);
                struct coll_phase ph =
                    make_phase(sys, npu, &tg, SV_SYS_ALL_GATHER, m, remain, q, anti);
                g_array_append_val(phases, ph);
                remain = ph.final_size;
            }
        }
        if (phases->len > 0) {
            int stream_id = npu->num_streams++;
            if (grp != NULL)
                stream_id = npu->group_streams[gidx]++;
            stream_submit(npu, ds, stream_id, pri, phases);
        } else {
            g_array_free(phases, TRUE);
            ds->active = FALSE;
            break;
        }
    }
    if (ds->active) {
        ds->total_streams = count;
    } else {
        /* Nothing to communicate (no involved dimension): the workload sees it finish now. */
        sv_engine_schedule(sys->eng, sv_engine_now(sys->eng), SV_PRIO_DEFAULT, inactive_done, ds,
                           0);
    }
    return TRUE;
}

/* ---- point-to-point ------------------------------------------------------------------------- */

gboolean sv_sys_send(sv_sys *sys, int src, int dst, int tag, uint64_t bytes, sv_sys_done_fn done,
                     void *ctx, uint64_t arg, GError **error)
{
    if (src < 0 || src >= sys->npus || dst < 0 || dst >= sys->npus || src == dst || tag < 0 ||
        bytes == 0) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "bad send %d -> %d (tag %d, %" G_GUINT64_FORMAT
                    " bytes): NPUs must differ and be in [0, %d), tag >= 0, size > 0",
                    src, dst, tag, bytes, sys->npus);
        return FALSE;
    }
    net_send(sys, src, dst, tag, bytes, done, ctx, arg, NULL);
    return TRUE;
}

gboolean sv_sys_recv(sv_sys *sys, int self, int src, int tag, uint64_t bytes, sv_sys_done_fn done,
                     void *ctx, uint64_t arg, GError **error)
{
    if (src < 0 || src >= sys->npus || self < 0 || self >= sys->npus || src == self || tag < 0 ||
        bytes == 0) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "bad recv on %d from %d (tag %d, %" G_GUINT64_FORMAT
                    " bytes): NPUs must differ and be in [0, %d), tag >= 0, size > 0",
                    self, src, tag, bytes, sys->npus);
        return FALSE;
    }
    net_recv(sys, self, src, tag, bytes, done, ctx, arg, NULL);
    return TRUE;
}

static gint pending_cmp(gconstpointer a, gconstpointer b)
{
    const struct p2p_entry *x = *(struct p2p_entry *const *)a;
    const struct p2p_entry *y = *(struct p2p_entry *const *)b;
    return x->order < y->order ? -1 : x->order > y->order ? 1 : 0;
}

GArray *sv_sys_p2p_pending(const sv_sys *sys)
{
    GArray *out = g_array_new(FALSE, TRUE, sizeof(struct sv_sys_p2p_pending));
    g_autoptr(GPtrArray) all = g_ptr_array_new();
    for (guint i = 0; i < sys->chan_list->len; i++) {
        const struct p2p_chan *c = g_ptr_array_index(sys->chan_list, i);
        for (int k = 0; k < c->count; k++) {
            struct p2p_entry *e = c->slot[(c->head + k) & (c->cap - 1)];
            if (e != NULL)
                g_ptr_array_add(all, e);
        }
    }
    g_ptr_array_sort(all, pending_cmp); /* report in posting order */
    for (guint i = 0; i < all->len; i++) {
        const struct p2p_entry *e = g_ptr_array_index(all, i);
        struct sv_sys_p2p_pending p = {
            .is_send = e->has_send,
            .arrived = e->finished,
            .src = e->chan->key.src,
            .dst = e->chan->key.dst,
            .tag = e->chan->key.tag,
            .bytes = e->chan->key.size,
            .posted_at = e->posted_at,
        };
        g_array_append_val(out, p);
    }
    return out;
}

guint sv_sys_live_channels(const sv_sys *sys)
{
    return sys->chan_list->len;
}

uint64_t sv_sys_coll_active(const sv_sys *sys)
{
    uint64_t n = 0;
    for (int i = 0; i < sys->npus; i++)
        n += sys->npu[i].active_collectives;
    return n;
}

/* ---- construction -----------------------------------------------------------------------------
 */

static gboolean build_topo(sv_sys *sys, sv_sys_coll_type t, GError **error)
{
    struct ltopo *lt = &sys->topo[t];
    memset(lt, 0, sizeof *lt);
    int n = sys->cfg.n_impl[t];
    if (n > sys->net_ndims) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "%s-implementation lists %d dimensions, the network has %d",
                    sv_sys_coll_type_name(t), n, sys->net_ndims);
        return FALSE;
    }
    /* GeneralComplexTopology: one logical dimension per listed implementation; a "one*"
     * implementation is a single ring over all NPUs and ends the list. */
    int offset = 1;
    for (int d = 0; d < n; d++) {
        const struct sv_sys_impl *im = &sys->cfg.impl[t][d];
        int size = sys->physical_dims[d];
        gboolean one = im->kind == SV_SYS_IMPL_ONE_RING || im->kind == SV_SYS_IMPL_ONE_DIRECT ||
                       im->kind == SV_SYS_IMPL_ONE_HALVING_DOUBLING;
        if (one)
            size = sys->npus;
        gboolean hd = im->kind == SV_SYS_IMPL_HALVING_DOUBLING ||
                      im->kind == SV_SYS_IMPL_ONE_HALVING_DOUBLING;
        gboolean dbt = im->kind == SV_SYS_IMPL_DOUBLE_BINARY_TREE;
        if ((hd || dbt) && (size & (size - 1)) != 0) {
            /* HalvingDoubling pairs index i with i +- 2^j (no partner otherwise: messages
             * never match); BinaryTree places only 2^floor(log2 n) nodes (the others crash). */
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_UNSUPPORTED,
                        "%s-implementation[%d]: %s needs a power-of-two number of NPUs in the "
                        "dimension, got %d",
                        sv_sys_coll_type_name(t), d, hd ? "halvingDoubling" : "doubleBinaryTree",
                        size);
            return FALSE;
        }
        if (hd && t == SV_SYS_ALL_TO_ALL) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_UNSUPPORTED,
                        "all-to-all-implementation[%d]: halvingDoubling has no all-to-all "
                        "(ASTRA-sim exits: unknown communication type)",
                        d);
            return FALSE;
        }
        if (dbt && d == n - 1 && n < sys->net_ndims) {
            /* GeneralComplexTopology: the last listed DBT dimension starts at id % offset,
             * which leaves the NPUs of higher dimensions out of the tree (upstream crashes). */
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_UNSUPPORTED,
                        "%s-implementation[%d]: doubleBinaryTree as the last listed dimension "
                        "needs an entry for every network dimension (%d listed, %d in the "
                        "network)",
                        sv_sys_coll_type_name(t), d, n, sys->net_ndims);
            return FALSE;
        }
        lt->dim[lt->ndims++] = (struct ldim){.kind = im->kind,
                                             .size = size,
                                             .stride = one ? 1 : offset,
                                             .direct_window = im->direct_window};
        if (one)
            return TRUE;
        offset *= sys->physical_dims[d];
    }
    return TRUE;
}

sv_sys *sv_sys_new(sv_net *net, const struct sv_sys_cfg *cfg, const sv_sys_groups *groups,
                   GError **error)
{
    if (cfg->preferred_dataset_splits < 1) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "system config: preferred-dataset-splits must be >= 1");
        return NULL;
    }
    if (cfg->active_chunks_per_dimension < 1 || cfg->queues_per_dim < 1) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "system config: active-chunks-per-dimension and queues-per-dim must be >= 1");
        return NULL;
    }
    if (cfg->model_shared_bus) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_UNSUPPORTED,
                    "system config: model-shared-bus 1 (LogGP bus) is not supported");
        return NULL;
    }
    sv_sys *sys = g_new0(sv_sys, 1);
    sys->net = net;
    sys->eng = sv_net_engine(net);
    sys->cfg = *cfg;
    for (int t = 0; t < SV_SYS_TYPE_COUNT; t++)
        sys->cfg.custom_prefix[t] = g_strdup(cfg->custom_prefix[t]);
    sys->groups = sv_sys_groups_new();
    sys->chans = g_hash_table_new(p2p_key_hash, p2p_key_equal);
    sys->chan_list = g_ptr_array_new_with_free_func(chan_free);
    const struct sv_net_topo_cfg *tc = sv_net_topo(net);
    sys->npus = sv_net_npus(net);
    sys->net_ndims = tc->ndims;
    for (int d = 0; d < tc->ndims; d++)
        sys->physical_dims[d] = tc->npus[d];
    /* Sys::initialize_sys: endpoint-delay x injection-scale, stored as an int. */
    sys->comm_delay = (int64_t)((double)cfg->endpoint_delay_ns * cfg->injection_scale);
    /* Sys::Sys: concurrent_streams = ceil(active_chunks_per_dimension / queues_per_dim[0]) */
    sys->concurrent_streams =
        (int)ceil((double)cfg->active_chunks_per_dimension / (double)cfg->queues_per_dim);
    if (groups != NULL) {
        for (guint i = 0; i < groups->groups->len; i++) {
            const struct sv_sys__group *g = &g_array_index(groups->groups, struct sv_sys__group, i);
            for (int m = 0; m < g->n; m++) {
                if (g->members[m] >= sys->npus) {
                    g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                                "communicator group %d: NPU %d out of range [0, %d)", g->id,
                                g->members[m], sys->npus);
                    goto fail;
                }
            }
            if (!sv_sys_groups_add(sys->groups, g->id, g->members, g->n, error))
                goto fail;
        }
    }
    static const sv_sys_coll_type types[] = {SV_SYS_ALL_REDUCE, SV_SYS_ALL_GATHER,
                                             SV_SYS_REDUCE_SCATTER, SV_SYS_ALL_TO_ALL};
    for (size_t i = 0; i < G_N_ELEMENTS(types); i++)
        if (!build_topo(sys, types[i], error))
            goto fail;
    sys->npu = g_new0(coll_npu, sys->npus);
    for (int i = 0; i < sys->npus; i++) {
        coll_npu *n = &sys->npu[i];
        n->sys = sys;
        n->id = i;
        n->open = n->open_inline;
        n->open_cap = G_N_ELEMENTS(n->open_inline);
        g_queue_init(&n->ready_list);
        n->active = g_ptr_array_new();
        n->running = g_array_new(FALSE, TRUE, sizeof(int));
        /* QueueLevels: queues-per-dim queues per physical dimension, numbered consecutively */
        n->nlevels = sys->net_ndims;
        for (int d = 0; d < n->nlevels; d++) {
            n->level[d] = (struct qlevel){.start = d * cfg->queues_per_dim,
                                          .n = cfg->queues_per_dim,
                                          .last_allocator = cfg->queues_per_dim / 2,
                                          .level = d};
        }
        int ng = (int)sys->groups->groups->len;
        n->group_streams = g_new0(int, ng > 0 ? ng : 1);
        for (int g = 0; g < ng; g++) /* CommunicatorGroup::set_id: num_streams = id x 1e6 */
            n->group_streams[g] =
                g_array_index(sys->groups->groups, struct sv_sys__group, g).id * 1000000;
    }
    return sys;
fail:
    sv_sys_free(sys);
    return NULL;
}

gboolean sv_sys_set_custom_plan(sv_sys *sys, sv_sys_coll_type type, sv_sys_plan *plan,
                                GError **error)
{
    if (type != SV_SYS_ALL_REDUCE && type != SV_SYS_ALL_GATHER && type != SV_SYS_REDUCE_SCATTER &&
        type != SV_SYS_ALL_TO_ALL) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_UNSUPPORTED,
                    "custom plan for unsupported collective comm type %d", (int)type);
        sv_sys_plan_free(plan);
        return FALSE;
    }
    for (int r = 0; r < plan->ranks; r++) {
        const struct sv_sys__plan_rank *pr = &plan->rank[r];
        for (guint i = 0; i < pr->ops->len; i++) {
            const struct sv_sys__plan_node *n =
                &g_array_index(pr->ops, struct sv_sys__plan_node, i);
            for (int d = 0; d < n->ndeps; d++) {
                if (custom_find(pr, n->deps[d]) < 0) {
                    g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                                "custom %s plan: rank %d node %" G_GUINT64_FORMAT
                                " depends on unknown node %" G_GUINT64_FORMAT,
                                sv_sys_coll_type_name(type), r, n->id, n->deps[d]);
                    sv_sys_plan_free(plan);
                    return FALSE;
                }
            }
        }
    }
    sv_sys_plan_free(sys->custom[type]);
    sys->custom[type] = plan;
    return TRUE;
}

void sv_sys_free(sv_sys *sys)
{
    if (sys == NULL)
        return;
    if (sys->npu != NULL) {
        for (int i = 0; i < sys->npus; i++) {
            coll_npu *n = &sys->npu[i];
            for (guint k = 0; k < n->nopen; k++) {
                struct ev_batch *b = n->open[k].b;
                if (b->eid != SV_EVENT_NONE)
                    sv_engine_cancel(sys->eng, b->eid);
                batch_free(b);
            }
            if (n->open != n->open_inline)
                g_free(n->open);
            /* streams still queued: free their phase lists (the records are in `live`) */
            for (guint q = 0; q < n->active->len; q++) {
                GQueue *queue = g_ptr_array_index(n->active, q);
                for (GList *l = queue->head; l != NULL; l = l->next) {
                    coll_stream *s = l->data;
                    custom_clear(s);
                    g_array_free(s->phases, TRUE);
                }
                g_queue_free(queue);
            }
            g_ptr_array_free(n->active, TRUE);
            g_array_free(n->running, TRUE);
            g_queue_clear(&n->ready_list);
            g_free(n->group_streams);
        }
        g_free(sys->npu);
    }
    for (int t = 0; t < SV_SYS_TYPE_COUNT; t++)
        sv_sys_plan_free(sys->custom[t]);
    sv_sys_cfg_clear(&sys->cfg);
    sv_sys_groups_free(sys->groups);
    while (sys->batch_free != NULL) {
        struct ev_batch *b = sys->batch_free;
        sys->batch_free = b->next_free;
        batch_free(b);
    }
    if (sys->chans != NULL)
        g_hash_table_destroy(sys->chans);
    if (sys->chan_list != NULL)
        g_ptr_array_free(sys->chan_list, TRUE);
    while (sys->entry_free != NULL) {
        struct p2p_entry *e = sys->entry_free;
        sys->entry_free = e->next_free;
        g_free(e);
    }
    for (int c = 0; c < sys->nlive_cls; c++)
        g_ptr_array_free(sys->live_cls[c].slabs, TRUE);
    g_free(sys);
}
