/* ASTRA-sim's system layer, event by event (astra-sim HEAD 518bd51, astra-sim/system/):
 *   Sys::generate_collective / determine_chunk_size / get_priority / insert_stream /
 *   schedule / proceed_to_next_vnet_baseline, Sys::SchedulerUnit, QueueLevels(Handler),
 *   StreamBaseline, DataSet, PacketBundle, MemBus (model-shared-bus 0), Ring,
 *   CustomAlgorithm, CommunicatorGroup, and the analytical frontend's send/recv matching
 *   (network_frontend/analytical/common/CommonNetworkApi.cc, CallbackTracker.cc).
 * Same-tick ordering follows Sys::try_register_event / call_events: one engine event per
 * (NPU, tick), whose callbacks run in registration order, including those registered with
 * delay 0 while the batch runs. See docs/collectives.md. */
#include "network/coll_internal.h"

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

typedef void (*sys_cb)(sv_coll_sys *sys, void *obj, uint64_t arg);

struct sys_ev {
    sys_cb fn;
    void *obj;
    uint64_t arg;
};

struct ev_batch {
    sv_time tick; /* hash key */
    GArray *evs;  /* struct sys_ev */
    sv_event_id eid;
};

/* ---- logical topology --------------------------------------------------------------------- */

enum algo_kind { ALGO_RING, ALGO_CUSTOM };

struct ldim {
    sv_coll_impl_kind kind;
    int size;
    int stride; /* NPU id distance between ring neighbours (GeneralComplexTopology offset) */
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
    int queue_id;
    sv_coll_type comm_type;
    uint64_t initial_size;
    uint64_t final_size;
    enum algo_kind algo;
    /* ring */
    int nodes;
    int sender;
    int receiver;
    gboolean fast;
    /* custom */
    int pos;            /* rank in the communicator */
    const int *members; /* rank -> NPU (NULL: identity) */
    const sv_coll_plan *plan;
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

enum op_state { OP_WAIT, OP_FREE, OP_ONGOING, OP_DONE };

struct custom_state {
    const struct sv_coll_plan_rank *pr;
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
    sv_coll_done_fn done;
    void *ctx;
    uint64_t arg;
    coll_npu *npu;
};

struct coll_stream {
    coll_npu *owner;
    coll_dataset *dataset;
    int stream_id;
    int priority;
    GArray *phases; /* struct coll_phase still to go, from index next_phase */
    guint next_phase;
    gboolean has_current;
    struct coll_phase cur;
    int current_queue_id;
    gboolean initialized;
    int steps_finished;
    struct ring_state ring;
    struct custom_state custom;
};

struct coll_npu {
    sv_coll_sys *sys;
    int id;
    GHashTable *batches; /* sv_time* -> struct ev_batch* */
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
    uint64_t active_collectives;
};

/* ---- the analytical frontend's send/recv matching ---------------------------------------- */

struct p2p_key {
    int tag;
    int src;
    int dst;
    uint64_t size;
    int seq; /* chunk id: occurrence of (tag, src, dst, size) */
};

struct p2p_entry {
    struct p2p_key key;
    gboolean has_send, has_recv, finished;
    sv_event_fn send_fn;
    void *send_ctx;
    uint64_t send_arg;
    sv_event_fn recv_fn;
    void *recv_ctx;
    uint64_t recv_arg;
    uint64_t order;
    sv_time posted_at;
};

struct p2p_counts {
    struct p2p_key key; /* seq = 0 */
    int sends;
    int recvs;
};

struct arrival {
    sv_coll_sys *sys;
    struct p2p_key key;
};

struct bundle { /* PacketBundle */
    coll_stream *stream;
    gboolean needs_processing;
    uint64_t size;
};

struct op_ref {
    coll_stream *stream;
    int op;
};

struct sv_coll_sys {
    sv_net *net;
    sv_engine *eng;
    struct sv_coll_sys_cfg cfg;
    sv_coll_groups *groups;
    int npus;
    int net_ndims;
    int physical_dims[SV_NET_MAX_DIMS];
    int64_t comm_delay;     /* endpoint-delay x injection-scale */
    int concurrent_streams; /* SchedulerUnit queue_threshold */
    struct ltopo topo[SV_COLL_TYPE_COUNT];
    sv_coll_plan *custom[SV_COLL_TYPE_COUNT];
    coll_npu *npu;
    GHashTable *entries; /* p2p_key -> p2p_entry (owned) */
    GHashTable *counts;  /* p2p_key -> p2p_counts (owned) */
    GHashTable *live;    /* heap records referenced by pending events: freed at the end */
    uint64_t order;
};

static guint p2p_key_hash(gconstpointer p)
{
    const struct p2p_key *k = p;
    guint h = (guint)k->tag * 2654435761u;
    h ^= (guint)k->src * 40503u + (guint)k->dst * 9973u;
    h ^= (guint)(k->size ^ (k->size >> 32)) * 2246822519u;
    h ^= (guint)k->seq * 3266489917u;
    return h;
}

static gboolean p2p_key_equal(gconstpointer a, gconstpointer b)
{
    const struct p2p_key *x = a, *y = b;
    return x->tag == y->tag && x->src == y->src && x->dst == y->dst && x->size == y->size &&
           x->seq == y->seq;
}

static void *live_new(sv_coll_sys *sys, size_t size)
{
    void *p = g_malloc0(size);
    g_hash_table_add(sys->live, p);
    return p;
}

static void live_free(sv_coll_sys *sys, void *p)
{
    g_hash_table_remove(sys->live, p); /* destroy func frees */
}

/* ---- Sys::register_event / call_events ----------------------------------------------------- */

static void batch_fire(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)eng;
    coll_npu *npu = ctx;
    sv_time tick = (sv_time)arg;
    struct ev_batch *b = g_hash_table_lookup(npu->batches, &tick);
    SV_ASSERT(b != NULL);
    b->eid = SV_EVENT_NONE;
    for (guint i = 0; i < b->evs->len; i++) {
        struct sys_ev ev = g_array_index(b->evs, struct sys_ev, i);
        ev.fn(npu->sys, ev.obj, ev.arg);
    }
    g_hash_table_remove(npu->batches, &tick);
}

static void batch_free(gpointer p)
{
    struct ev_batch *b = p;
    g_array_free(b->evs, TRUE);
    g_free(b);
}

static void register_event(coll_npu *npu, sys_cb fn, void *obj, uint64_t arg, sv_time delta)
{
    sv_coll_sys *sys = npu->sys;
    sv_time tick = sv_engine_now(sys->eng) + delta;
    struct ev_batch *b = g_hash_table_lookup(npu->batches, &tick);
    if (b == NULL) {
        b = g_new0(struct ev_batch, 1);
        b->tick = tick;
        b->evs = g_array_new(FALSE, FALSE, sizeof(struct sys_ev));
        g_hash_table_insert(npu->batches, &b->tick, b);
        b->eid =
            sv_engine_schedule(sys->eng, tick, SV_PRIO_DEFAULT, batch_fire, npu, (uint64_t)tick);
    }
    struct sys_ev ev = {fn, obj, arg};
    g_array_append_val(b->evs, ev);
}

/* ---- send / recv with the frontend's tracker ------------------------------------------------ */

static struct p2p_entry *entry_get(sv_coll_sys *sys, const struct p2p_key *k, gboolean create)
{
    struct p2p_entry *e = g_hash_table_lookup(sys->entries, k);
    if (e == NULL && create) {
        e = g_new0(struct p2p_entry, 1);
        e->key = *k;
        e->order = sys->order++;
        e->posted_at = sv_engine_now(sys->eng);
        g_hash_table_insert(sys->entries, &e->key, e);
    }
    return e;
}

static int next_seq(sv_coll_sys *sys, int tag, int src, int dst, uint64_t size, gboolean send)
{
    struct p2p_key k = {tag, src, dst, size, 0};
    struct p2p_counts *c = g_hash_table_lookup(sys->counts, &k);
    if (c == NULL) {
        c = g_new0(struct p2p_counts, 1);
        c->key = k;
        g_hash_table_insert(sys->counts, &c->key, c);
    }
    return send ? c->sends++ : c->recvs++;
}

static void on_arrival(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)arg;
    struct arrival *a = ctx;
    sv_coll_sys *sys = a->sys;
    struct p2p_key k = a->key;
    live_free(sys, a);
    struct p2p_entry *e = g_hash_table_lookup(sys->entries, &k);
    SV_ASSERT(e != NULL);
    /* CommonNetworkApi::process_chunk_arrival: the sender is told at arrival; the receiver too
     * if its recv is posted, otherwise the transfer is marked finished for a later recv. */
    if (e->has_recv) {
        if (e->send_fn != NULL)
            e->send_fn(eng, e->send_ctx, e->send_arg);
        sv_event_fn rfn = e->recv_fn;
        void *rctx = e->recv_ctx;
        uint64_t rarg = e->recv_arg;
        if (rfn != NULL)
            rfn(eng, rctx, rarg);
        g_hash_table_remove(sys->entries, &k);
    } else {
        if (e->send_fn != NULL)
            e->send_fn(eng, e->send_ctx, e->send_arg);
        e = g_hash_table_lookup(sys->entries, &k);
        if (e != NULL)
            e->finished = TRUE;
    }
}

static void net_send(sv_coll_sys *sys, int src, int dst, int tag, uint64_t bytes, sv_event_fn fn,
                     void *ctx, uint64_t arg)
{
    struct p2p_key k = {tag, src, dst, bytes, next_seq(sys, tag, src, dst, bytes, TRUE)};
    struct p2p_entry *e = entry_get(sys, &k, TRUE);
    e->has_send = TRUE;
    e->send_fn = fn;
    e->send_ctx = ctx;
    e->send_arg = arg;
    struct arrival *a = live_new(sys, sizeof *a);
    a->sys = sys;
    a->key = k;
    sv_net_send(sys->net, src, dst, bytes, on_arrival, a, 0);
}

static void net_recv(sv_coll_sys *sys, int self, int src, int tag, uint64_t bytes, sv_event_fn fn,
                     void *ctx, uint64_t arg)
{
    struct p2p_key k = {tag, src, self, bytes, next_seq(sys, tag, src, self, bytes, FALSE)};
    struct p2p_entry *e = entry_get(sys, &k, FALSE);
    if (e != NULL && e->finished) {
        /* CommonNetworkApi::sim_recv: transfer over, run the callback after 0 ns. */
        g_hash_table_remove(sys->entries, &k);
        if (fn != NULL)
            sv_engine_schedule(sys->eng, sv_engine_now(sys->eng), SV_PRIO_DEFAULT, fn, ctx, arg);
        return;
    }
    if (e == NULL)
        e = entry_get(sys, &k, TRUE);
    e->has_recv = TRUE;
    e->recv_fn = fn;
    e->recv_ctx = ctx;
    e->recv_arg = arg;
}

/* ---- memory cost of a reduction (Sys::mem_read / mem_write) ------------------------------- */

static sv_time mem_access(const sv_coll_sys *sys, uint64_t bytes)
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

/* StreamBaseline::init */
static void stream_init(coll_stream *s)
{
    s->initialized = TRUE;
    if (s->cur.algo == ALGO_RING)
        ring_run_init(s);
    else
        custom_run_init(s);
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
    live_free(npu->sys, ds);
}

/* DataSet::notify_stream_finished */
static void dataset_stream_finished(coll_dataset *ds)
{
    ds->finished_streams++;
    if (ds->finished_streams == ds->total_streams) {
        coll_npu *npu = ds->npu;
        sv_coll_done_fn done = ds->done;
        void *ctx = ds->ctx;
        uint64_t arg = ds->arg;
        dataset_free(npu, ds);
        if (done != NULL)
            done(npu->sys->eng, ctx, arg);
    }
}

static void custom_clear(coll_stream *s)
{
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

static void stream_free(sv_coll_sys *sys, coll_stream *s)
{
    custom_clear(s);
    g_array_free(s->phases, TRUE);
    live_free(sys, s);
}

/* Sys::proceed_to_next_vnet_baseline */
static void proceed_to_next_vnet(coll_npu *npu, coll_stream *s)
{
    int previous_vnet = s->current_queue_id;
    if (s->steps_finished == 1)
        npu->first_phase_streams--;
    if (s->has_current && s->cur.algo == ALGO_CUSTOM)
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

static void bundle_call(sv_coll_sys *sys, void *obj, uint64_t arg);

static void ring_release_packets(coll_stream *s)
{
    coll_npu *npu = s->owner;
    struct bundle *b = live_new(npu->sys, sizeof *b);
    b->stream = s;
    b->needs_processing = s->ring.processed;
    b->size = s->ring.msg_size;
    /* MemBus::send_from_NPU_to_MA / send_from_MA_to_NPU without the shared bus model: both
     * directions cost the same fixed delay. */
    sv_time delay = s->cur.fast ? FAST_TRANSMISSION_DELAY : npu->sys->comm_delay;
    register_event(npu, bundle_call, b, 0, delay);
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
    r->processed = s->cur.comm_type == SV_COLL_REDUCE_SCATTER ||
                   (s->cur.comm_type == SV_COLL_ALL_REDUCE && r->toggle);
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
    sv_coll_sys *sys = s->owner->sys;
    int self = s->owner->id;
    /* Collective sends carry Sys::handleEvent with no data: nothing runs at arrival. */
    net_send(sys, self, s->cur.receiver, s->stream_id, r->msg_size, NULL, NULL, 0);
    net_recv(sys, self, s->cur.sender, s->stream_id, r->msg_size, ring_packet_received, s, 0);
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
    case SV_COLL_ALL_REDUCE:
        r->stream_count = 2 * (n - 1);
        r->msg_size = ph->initial_size / (uint64_t)n;
        break;
    case SV_COLL_ALL_TO_ALL:
        r->stream_count = ((n - 1) * n) / 2;
        r->msg_size = ph->initial_size / (uint64_t)n;
        break;
    case SV_COLL_ALL_GATHER:
        r->stream_count = n - 1;
        r->msg_size = ph->initial_size;
        break;
    default: /* reduce-scatter */
        r->stream_count = n - 1;
        r->msg_size = ph->initial_size / (uint64_t)n;
        break;
    }
    r->max_count =
        (ph->comm_type == SV_COLL_ALL_TO_ALL || ph->comm_type == SV_COLL_ALL_GATHER) ? 0 : n - 1;
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

static void stream_call_general(coll_stream *s)
{
    if (s->cur.algo == ALGO_RING)
        ring_run_general(s);
}

/* PacketBundle::call */
static void bundle_call(sv_coll_sys *sys, void *obj, uint64_t arg)
{
    (void)arg;
    struct bundle *b = obj;
    if (b->needs_processing) {
        b->needs_processing = FALSE;
        /* mem_write + 2 x mem_read: the reduction reads two operands and writes one. */
        sv_time delay =
            mem_access(sys, b->size) + mem_access(sys, b->size) + mem_access(sys, b->size);
        register_event(b->stream->owner, bundle_call, b, 0, delay);
        return;
    }
    coll_stream *s = b->stream;
    live_free(sys, b);
    stream_call_general(s);
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
            uint64_t id = g_array_index(c->pr->ops, struct sv_coll_plan_node, k).id;
            guint pos = 0;
            while (pos < c->free_ops->len && g_array_index(c->pr->ops, struct sv_coll_plan_node,
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
    live_free(s->owner->sys, ref);
    custom_finish(s, op);
}

static void custom_comp_done(sv_coll_sys *sys, void *obj, uint64_t arg)
{
    (void)sys;
    custom_finish(obj, (int)arg);
}

static void custom_issue_free(coll_stream *s)
{
    struct custom_state *c = &s->custom;
    coll_npu *npu = s->owner;
    sv_coll_sys *sys = npu->sys;
    g_autoptr(GArray) batch = g_array_copy(c->free_ops);
    g_array_set_size(c->free_ops, 0);
    for (guint i = 0; i < batch->len; i++) {
        int k = g_array_index(batch, int, i);
        const struct sv_coll_plan_node *n = &g_array_index(c->pr->ops, struct sv_coll_plan_node, k);
        c->state[k] = OP_ONGOING;
        c->ongoing++;
        if (n->kind == SV_COLL_OP_COMP) {
            /* COMP: runtime in ns, 0 -> 1 cycle */
            register_event(npu, custom_comp_done, s, (uint64_t)k,
                           n->duration_ns > 0 ? n->duration_ns : 1);
            continue;
        }
        struct op_ref *ref = live_new(sys, sizeof *ref);
        ref->stream = s;
        ref->op = k;
        int peer = custom_real_rank(&s->cur, n->peer);
        if (n->kind == SV_COLL_OP_SEND)
            net_send(sys, npu->id, peer, n->tag, n->bytes, custom_net_done, ref, 0);
        else
            net_recv(sys, npu->id, peer, n->tag, n->bytes, custom_net_done, ref, 0);
    }
}

static int custom_find(const struct sv_coll_plan_rank *pr, uint64_t id)
{
    for (guint i = 0; i < pr->ops->len; i++)
        if (g_array_index(pr->ops, struct sv_coll_plan_node, i).id == id)
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
        const struct sv_coll_plan_node *n = &g_array_index(c->pr->ops, struct sv_coll_plan_node, i);
        for (int d = 0; d < n->ndeps; d++) {
            int p = custom_find(c->pr, n->deps[d]);
            if (p < 0)
                continue; /* checked by sv_coll_sys_set_custom_plan */
            g_array_append_val(c->children[p], i);
            c->pending_deps[i]++;
        }
    }
    for (int i = 0; i < c->nops; i++) {
        if (c->pending_deps[i] == 0) {
            c->state[i] = OP_FREE;
            uint64_t id = g_array_index(c->pr->ops, struct sv_coll_plan_node, i).id;
            guint pos = 0;
            while (pos < c->free_ops->len && g_array_index(c->pr->ops, struct sv_coll_plan_node,
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

static struct coll_phase make_phase(sv_coll_sys *sys, coll_npu *npu, const struct coll_target *tg,
                                    sv_coll_type type, int dim, uint64_t size, int queue,
                                    gboolean anticlockwise)
{
    struct coll_phase ph;
    memset(&ph, 0, sizeof ph);
    (void)sys;
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
    }
    uint64_t n = (uint64_t)ph.nodes;
    switch (type) {
    case SV_COLL_ALL_GATHER:
        ph.final_size = size * n;
        break;
    case SV_COLL_REDUCE_SCATTER:
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

static int group_index(const sv_coll_sys *sys, int group_id)
{
    for (guint i = 0; i < sys->groups->groups->len; i++)
        if (g_array_index(sys->groups->groups, struct sv_coll_group, i).id == group_id)
            return (int)i;
    return -1;
}

static void inactive_done(sv_engine *eng, void *ctx, uint64_t arg)
{
    coll_dataset *ds = ctx;
    (void)arg;
    coll_npu *npu = ds->npu;
    sv_coll_done_fn done = ds->done;
    void *dctx = ds->ctx;
    uint64_t darg = ds->arg;
    dataset_free(npu, ds);
    if (done != NULL)
        done(eng, dctx, darg);
}

gboolean sv_coll_start(sv_coll_sys *sys, int npu_id, sv_coll_type type, uint64_t bytes,
                       const gboolean *involved_dims, int ndims, int group_id, int priority,
                       sv_coll_done_fn done, void *ctx, uint64_t arg, GError **error)
{
    if (type != SV_COLL_ALL_REDUCE && type != SV_COLL_ALL_GATHER &&
        type != SV_COLL_REDUCE_SCATTER && type != SV_COLL_ALL_TO_ALL) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_UNSUPPORTED,
                    "unsupported collective comm type %d (%s) on NPU %d", (int)type,
                    sv_coll_type_name(type), npu_id);
        return FALSE;
    }
    if (npu_id < 0 || npu_id >= sys->npus) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, "NPU %d out of range [0, %d)", npu_id,
                    sys->npus);
        return FALSE;
    }
    if (bytes == 0) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "%s on NPU %d: collective data size must be > 0", sv_coll_type_name(type),
                    npu_id);
        return FALSE;
    }
    coll_npu *npu = &sys->npu[npu_id];
    struct coll_target tg;
    memset(&tg, 0, sizeof tg);
    const struct sv_coll_group *grp = NULL;
    int gidx = -1;
    int pos_in_comm = npu_id;
    if (group_id != 0) {
        gidx = group_index(sys, group_id);
        if (gidx < 0) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s on NPU %d: communicator group %d is not defined",
                        sv_coll_type_name(type), npu_id, group_id);
            return FALSE;
        }
        grp = &g_array_index(sys->groups->groups, struct sv_coll_group, gidx);
        pos_in_comm = -1;
        for (int i = 0; i < grp->n; i++)
            if (grp->members[i] == npu_id)
                pos_in_comm = i;
        if (pos_in_comm < 0) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s on NPU %d: the NPU is not a member of communicator group %d",
                        sv_coll_type_name(type), npu_id, group_id);
            return FALSE;
        }
    }
    const sv_coll_plan *plan = sys->custom[type];
    if (plan == NULL && sys->cfg.custom_prefix[type] != NULL) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "%s: %s-implementation-custom is configured but no plan was loaded",
                    sv_coll_type_name(type), sv_coll_type_name(type));
        return FALSE;
    }
    if (plan != NULL) {
        int ranks = grp != NULL ? grp->n : sys->npus;
        if (plan->ranks != ranks) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s: custom plan has %d ranks, the communicator has %d",
                        sv_coll_type_name(type), plan->ranks, ranks);
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
                        sv_coll_type_name(type), sv_coll_type_name(type));
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
    if (type != SV_COLL_ALL_GATHER && (uint64_t)sys->npus > chunk) {
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
    if (sys->cfg.scheduling_policy == SV_COLL_SCHED_LIFO)
        pri = npu->priority_counter++;
    else if (sys->cfg.scheduling_policy == SV_COLL_SCHED_FIFO)
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
            mapper[d] = type == SV_COLL_ALL_GATHER ? nd - 1 - d : d;
        size = chunk > size ? 0 : size - chunk;
        uint64_t remain = chunk;
        GArray *phases = g_array_new(FALSE, TRUE, sizeof(struct coll_phase));
        gboolean anti = FALSE;
        if (type != SV_COLL_ALL_REDUCE ||
            sys->cfg.collective_optimization == SV_COLL_OPT_BASELINE) {
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
                    make_phase(sys, npu, &tg, SV_COLL_REDUCE_SCATTER, m, remain, q, anti);
                g_array_append_val(phases, ph);
                remain = ph.final_size;
            }
            while (d > 0 && (!tg.involved[mapper[d]] || tg_nodes(&tg, mapper[d]) == 1))
                d--;
            if (tg.involved[mapper[d]] && tg_nodes(&tg, mapper[d]) > 1) {
                int m = mapper[d];
                int q = qlevel_pick(&npu->level[m], Q_FIRST, &anti);
                struct coll_phase ph =
                    make_phase(sys, npu, &tg, SV_COLL_ALL_REDUCE, m, remain, q, anti);
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
                    make_phase(sys, npu, &tg, SV_COLL_ALL_GATHER, m, remain, q, anti);
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

gboolean sv_coll_send(sv_coll_sys *sys, int src, int dst, int tag, uint64_t bytes,
                      sv_coll_done_fn done, void *ctx, uint64_t arg, GError **error)
{
    if (src < 0 || src >= sys->npus || dst < 0 || dst >= sys->npus || src == dst || tag < 0 ||
        bytes == 0) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "bad send %d -> %d (tag %d, %" G_GUINT64_FORMAT
                    " bytes): NPUs must differ and be in [0, %d), tag >= 0, size > 0",
                    src, dst, tag, bytes, sys->npus);
        return FALSE;
    }
    net_send(sys, src, dst, tag, bytes, done, ctx, arg);
    return TRUE;
}

gboolean sv_coll_recv(sv_coll_sys *sys, int self, int src, int tag, uint64_t bytes,
                      sv_coll_done_fn done, void *ctx, uint64_t arg, GError **error)
{
    if (src < 0 || src >= sys->npus || self < 0 || self >= sys->npus || src == self || tag < 0 ||
        bytes == 0) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "bad recv on %d from %d (tag %d, %" G_GUINT64_FORMAT
                    " bytes): NPUs must differ and be in [0, %d), tag >= 0, size > 0",
                    self, src, tag, bytes, sys->npus);
        return FALSE;
    }
    net_recv(sys, self, src, tag, bytes, done, ctx, arg);
    return TRUE;
}

static gint pending_cmp(gconstpointer a, gconstpointer b)
{
    const struct p2p_entry *x = *(struct p2p_entry *const *)a;
    const struct p2p_entry *y = *(struct p2p_entry *const *)b;
    return x->order < y->order ? -1 : x->order > y->order ? 1 : 0;
}

GArray *sv_coll_p2p_pending(const sv_coll_sys *sys)
{
    GArray *out = g_array_new(FALSE, TRUE, sizeof(struct sv_coll_p2p_pending));
    g_autoptr(GPtrArray) all = g_ptr_array_new();
    GHashTableIter it;
    gpointer v;
    g_hash_table_iter_init(&it, sys->entries);
    while (g_hash_table_iter_next(&it, NULL, &v))
        g_ptr_array_add(all, v);
    g_ptr_array_sort(all, pending_cmp); /* report in posting order, not hash order */
    for (guint i = 0; i < all->len; i++) {
        const struct p2p_entry *e = g_ptr_array_index(all, i);
        struct sv_coll_p2p_pending p = {
            .is_send = e->has_send,
            .arrived = e->finished,
            .src = e->key.src,
            .dst = e->key.dst,
            .tag = e->key.tag,
            .bytes = e->key.size,
            .posted_at = e->posted_at,
        };
        g_array_append_val(out, p);
    }
    return out;
}

uint64_t sv_coll_active(const sv_coll_sys *sys)
{
    uint64_t n = 0;
    for (int i = 0; i < sys->npus; i++)
        n += sys->npu[i].active_collectives;
    return n;
}

/* ---- construction -----------------------------------------------------------------------------
 */

static gboolean build_topo(sv_coll_sys *sys, sv_coll_type t, GError **error)
{
    struct ltopo *lt = &sys->topo[t];
    memset(lt, 0, sizeof *lt);
    int n = sys->cfg.n_impl[t];
    if (n > sys->net_ndims) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "%s-implementation lists %d dimensions, the network has %d",
                    sv_coll_type_name(t), n, sys->net_ndims);
        return FALSE;
    }
    /* GeneralComplexTopology: one logical dimension per listed implementation; a "one*"
     * implementation is a single ring over all NPUs and ends the list. */
    int offset = 1;
    for (int d = 0; d < n; d++) {
        const struct sv_coll_impl *im = &sys->cfg.impl[t][d];
        switch (im->kind) {
        case SV_COLL_IMPL_RING:
            lt->dim[lt->ndims++] =
                (struct ldim){.kind = im->kind, .size = sys->physical_dims[d], .stride = offset};
            break;
        case SV_COLL_IMPL_ONE_RING:
            lt->dim[lt->ndims++] = (struct ldim){.kind = im->kind, .size = sys->npus, .stride = 1};
            return TRUE;
        default:
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_UNSUPPORTED,
                        "%s-implementation[%d]: only ring and oneRing are implemented",
                        sv_coll_type_name(t), d);
            return FALSE;
        }
        offset *= sys->physical_dims[d];
    }
    return TRUE;
}

static void live_destroy(gpointer p)
{
    g_free(p);
}

sv_coll_sys *sv_coll_sys_new(sv_net *net, const struct sv_coll_sys_cfg *cfg,
                             const sv_coll_groups *groups, GError **error)
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
    sv_coll_sys *sys = g_new0(sv_coll_sys, 1);
    sys->net = net;
    sys->eng = sv_net_engine(net);
    sys->cfg = *cfg;
    for (int t = 0; t < SV_COLL_TYPE_COUNT; t++)
        sys->cfg.custom_prefix[t] = g_strdup(cfg->custom_prefix[t]);
    sys->groups = sv_coll_groups_new();
    sys->entries = g_hash_table_new_full(p2p_key_hash, p2p_key_equal, NULL, g_free);
    sys->counts = g_hash_table_new_full(p2p_key_hash, p2p_key_equal, NULL, g_free);
    sys->live = g_hash_table_new_full(g_direct_hash, g_direct_equal, live_destroy, NULL);
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
            const struct sv_coll_group *g = &g_array_index(groups->groups, struct sv_coll_group, i);
            for (int m = 0; m < g->n; m++) {
                if (g->members[m] >= sys->npus) {
                    g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                                "communicator group %d: NPU %d out of range [0, %d)", g->id,
                                g->members[m], sys->npus);
                    goto fail;
                }
            }
            if (!sv_coll_groups_add(sys->groups, g->id, g->members, g->n, error))
                goto fail;
        }
    }
    static const sv_coll_type types[] = {SV_COLL_ALL_REDUCE, SV_COLL_ALL_GATHER,
                                         SV_COLL_REDUCE_SCATTER, SV_COLL_ALL_TO_ALL};
    for (size_t i = 0; i < G_N_ELEMENTS(types); i++)
        if (!build_topo(sys, types[i], error))
            goto fail;
    sys->npu = g_new0(coll_npu, sys->npus);
    for (int i = 0; i < sys->npus; i++) {
        coll_npu *n = &sys->npu[i];
        n->sys = sys;
        n->id = i;
        n->batches = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, batch_free);
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
                g_array_index(sys->groups->groups, struct sv_coll_group, g).id * 1000000;
    }
    return sys;
fail:
    sv_coll_sys_free(sys);
    return NULL;
}

gboolean sv_coll_sys_set_custom_plan(sv_coll_sys *sys, sv_coll_type type, sv_coll_plan *plan,
                                     GError **error)
{
    if (type != SV_COLL_ALL_REDUCE && type != SV_COLL_ALL_GATHER &&
        type != SV_COLL_REDUCE_SCATTER && type != SV_COLL_ALL_TO_ALL) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_UNSUPPORTED,
                    "custom plan for unsupported collective comm type %d", (int)type);
        sv_coll_plan_free(plan);
        return FALSE;
    }
    for (int r = 0; r < plan->ranks; r++) {
        const struct sv_coll_plan_rank *pr = &plan->rank[r];
        for (guint i = 0; i < pr->ops->len; i++) {
            const struct sv_coll_plan_node *n =
                &g_array_index(pr->ops, struct sv_coll_plan_node, i);
            for (int d = 0; d < n->ndeps; d++) {
                if (custom_find(pr, n->deps[d]) < 0) {
                    g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                                "custom %s plan: rank %d node %" G_GUINT64_FORMAT
                                " depends on unknown node %" G_GUINT64_FORMAT,
                                sv_coll_type_name(type), r, n->id, n->deps[d]);
                    sv_coll_plan_free(plan);
                    return FALSE;
                }
            }
        }
    }
    sv_coll_plan_free(sys->custom[type]);
    sys->custom[type] = plan;
    return TRUE;
}

void sv_coll_sys_free(sv_coll_sys *sys)
{
    if (sys == NULL)
        return;
    if (sys->npu != NULL) {
        for (int i = 0; i < sys->npus; i++) {
            coll_npu *n = &sys->npu[i];
            GHashTableIter it;
            gpointer v;
            g_hash_table_iter_init(&it, n->batches);
            while (g_hash_table_iter_next(&it, NULL, &v)) {
                struct ev_batch *b = v;
                if (b->eid != SV_EVENT_NONE)
                    sv_engine_cancel(sys->eng, b->eid);
            }
            g_hash_table_destroy(n->batches);
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
    for (int t = 0; t < SV_COLL_TYPE_COUNT; t++)
        sv_coll_plan_free(sys->custom[t]);
    sv_coll_sys_cfg_clear(&sys->cfg);
    sv_coll_groups_free(sys->groups);
    g_hash_table_destroy(sys->entries);
    g_hash_table_destroy(sys->counts);
    g_hash_table_destroy(sys->live);
    g_free(sys);
}
