/* ASTRA-sim's system layer, event by event (astra-sim HEAD 518bd51, astra-sim/system/):
 *   Sys::generate_collective / determine_chunk_size / get_priority / insert_stream /
 *   schedule / proceed_to_next_vnet_baseline, Sys::SchedulerUnit, QueueLevels(Handler),
 *   StreamBaseline, DataSet, PacketBundle, MemBus (model-shared-bus 0), Ring, AllToAll
 *   ("direct"), HalvingDoubling, DoubleBinaryTreeAllReduce (BinaryTree topologies),
 *   CustomAlgorithm, CommunicatorGroup, and the analytical frontend's send/recv matching
 *   (network_frontend/analytical/common/CommonNetworkApi.cc, CallbackTracker.cc).
 * Same-tick ordering follows Sys::try_register_event / call_events: one engine event per
 * (NPU, tick), whose callbacks run in registration order, including those registered with
 * delay 0 while the batch runs. See docs/collectives.md.
 *
 * This file: event batches, record pools, streams, datasets, the per-dimension queues and
 * scheduler, generate_collective, and construction. The algorithms, send/recv matching and
 * configuration are in their own files (system_internal.h lists what they share). */
#include "system/system_internal.h"

#include <math.h>
#include <string.h>

void *sv_sys__live_new(sv_sys *sys, size_t size)
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

void sv_sys__live_free(sv_sys *sys, void *p, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    int c = 0;
    while (sys->live_cls[c].size != size)
        c++;
    *(void **)p = sys->live_cls[c].free;
    sys->live_cls[c].free = p;
}

/* ---- Sys::sv_sys__register_event / call_events
 * ----------------------------------------------------- */

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

void sv_sys__register_event(coll_npu *npu, sys_cb fn, void *obj, uint64_t arg, sv_time delta)
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

/* StreamBaseline::init */
static void stream_init(coll_stream *s)
{
    s->initialized = TRUE;
    if (sv_sys__virt_join(s))
        return; /* the phase runs without messages (virtual.c) */
    sv_sys__stream_algo_init(s);
}

void sv_sys__stream_algo_init(coll_stream *s)
{
    switch (s->cur.algo) {
    case ALGO_RING:
        sv_sys__ring_run_init(s);
        break;
    case ALGO_DIRECT:
        sv_sys__direct_run_init(s);
        break;
    case ALGO_HD:
        sv_sys__hd_run_init(s);
        break;
    case ALGO_DBT:
        sv_sys__dbt_run(s, DBT_EV_INIT);
        break;
    case ALGO_CUSTOM:
        sv_sys__custom_run_init(s);
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
        sv_sys__proceed_to_next_vnet(npu, s);
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
    sv_sys__live_free(npu->sys, ds, sizeof *ds);
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

void sv_sys__custom_clear(coll_stream *s)
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
    sv_sys__chan_release(sys, &s->send_chan);
    sv_sys__chan_release(sys, &s->recv_chan);
    sv_sys__custom_clear(s);
    g_array_free(s->phases, TRUE);
    sv_sys__live_free(sys, s, sizeof *s);
}

/* Sys::proceed_to_next_vnet_baseline */
void sv_sys__proceed_to_next_vnet(coll_npu *npu, coll_stream *s)
{
    int previous_vnet = s->current_queue_id;
    if (s->steps_finished == 1)
        npu->first_phase_streams--;
    if (s->has_current)
        sv_sys__custom_clear(s);
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

static void stream_call_general(coll_stream *s)
{
    switch (s->cur.algo) {
    case ALGO_RING:
        sv_sys__ring_run_general(s);
        break;
    case ALGO_DIRECT:
        sv_sys__direct_run_general(s);
        break;
    case ALGO_HD:
        sv_sys__hd_run_general(s);
        break;
    case ALGO_DBT:
        sv_sys__dbt_run(s, DBT_EV_GENERAL);
        break;
    case ALGO_CUSTOM:
        break;
    }
}

/* PacketBundle::call */
void sv_sys__bundle_call(sv_sys *sys, void *obj, uint64_t arg)
{
    coll_stream *s = obj;
    if (arg & 1u) { /* needs processing */
        uint64_t size = arg >> 1;
        /* mem_write + 2 x mem_read: the reduction reads two operands and writes one. */
        sv_time delay = mem_access(sys, size) + mem_access(sys, size) + mem_access(sys, size);
        sv_sys__register_event(s->owner, sv_sys__bundle_call, s, bundle_arg(size, FALSE), delay);
        return;
    }
    stream_call_general(s);
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
        /* the members and this NPU's place among them (Ring reads neither; they name the
         * ring a virtual phase runs on) */
        ph.members = tg->members;
        for (ph.index = 0; tg->members[ph.index] != npu->id; ph.index++)
            ;
        if (sys->cfg.group_impl[type] == SV_SYS_IMPL_DIRECT) {
            /* servesim's direct exchange on a group: AllToAll over the members in list order */
            ph.algo = ALGO_DIRECT;
            ph.window = -1;
            ph.step = anticlockwise ? -1 : 1;
        }
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
            sv_sys__dbt_tree(d->size, c % 2 == 1, ph.index, &par, &l, &r);
            ph.dbt_parent = par < 0 ? -1 : sv_sys__member_of(&ph, par);
            ph.dbt_left = l < 0 ? -1 : sv_sys__member_of(&ph, l);
            ph.dbt_right = r < 0 ? -1 : sv_sys__member_of(&ph, r);
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

static coll_stream *stream_submit(coll_npu *npu, coll_dataset *ds, int stream_id, int pri,
                                  GArray *phases)
{
    coll_stream *s = sv_sys__live_new(npu->sys, sizeof *s);
    s->owner = npu;
    s->dataset = ds;
    s->stream_id = stream_id;
    s->priority = pri;
    s->phases = phases;
    s->current_queue_id = -1;
    /* Sys::insert_into_ready_list */
    insert_stream(&npu->ready_list, s);
    maybe_schedule(npu);
    return s;
}

coll_stream *sv_sys__stream_start(coll_npu *npu, const struct coll_phase *ph, int stream_id,
                                  sv_sys_done_fn done, void *ctx, uint64_t arg)
{
    coll_dataset *ds = sv_sys__live_new(npu->sys, sizeof *ds);
    ds->total_streams = 1;
    ds->active = TRUE;
    ds->done = done;
    ds->ctx = ctx;
    ds->arg = arg;
    ds->npu = npu;
    npu->active_collectives++;
    GArray *phases = g_array_new(FALSE, TRUE, sizeof(struct coll_phase));
    g_array_append_val(phases, *ph);
    return stream_submit(npu, ds, stream_id, 0, phases);
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
    coll_dataset *ds = sv_sys__live_new(sys, sizeof *ds);
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

static sv_sys *sys_new(sv_net *net, const struct sv_sys_cfg *cfg, const sv_sys_groups *groups,
                       gboolean shadow, GError **error);

sv_sys *sv_sys_new(sv_net *net, const struct sv_sys_cfg *cfg, const sv_sys_groups *groups,
                   GError **error)
{
    return sys_new(net, cfg, groups, FALSE, error);
}

sv_sys *sv_sys__new_shadow(sv_net *net, const struct sv_sys_cfg *cfg)
{
    GError *error = NULL;
    sv_sys *sys = sys_new(net, cfg, NULL, TRUE, &error);
    SV_ASSERT(sys != NULL); /* the configuration of a system layer that exists */
    return sys;
}

static sv_sys *sys_new(sv_net *net, const struct sv_sys_cfg *cfg, const sv_sys_groups *groups,
                       gboolean shadow, GError **error)
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
    for (int t = 0; t < SV_SYS_TYPE_COUNT; t++) {
        if (cfg->group_impl[t] != SV_SYS_IMPL_RING && cfg->group_impl[t] != SV_SYS_IMPL_DIRECT) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_UNSUPPORTED,
                        "system config: %s on a communicator group runs a ring or direct only",
                        sv_sys_coll_type_name((sv_sys_coll_type)t));
            return NULL;
        }
    }
    sv_sys *sys = g_new0(sv_sys, 1);
    sys->net = net;
    sys->eng = sv_net_engine(net);
    sys->cfg = *cfg;
    for (int t = 0; t < SV_SYS_TYPE_COUNT; t++)
        sys->cfg.custom_prefix[t] = g_strdup(cfg->custom_prefix[t]);
    sys->groups = sv_sys_groups_new();
    sys->chans = g_hash_table_new(sv_sys__p2p_key_hash, sv_sys__p2p_key_equal);
    sys->chan_list = g_ptr_array_new_with_free_func(sv_sys__chan_free);
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
    if (!shadow)
        g_debug("system: %d NPUs, %d dataset splits, %d active chunks per dimension, %d comm "
                "groups",
                sys->npus, cfg->preferred_dataset_splits, cfg->active_chunks_per_dimension,
                (int)sys->groups->groups->len);
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
                if (sv_sys__custom_find(pr, n->deps[d]) < 0) {
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
                    sv_sys__custom_clear(s);
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
    sv_sys__virt_free_all(sys);
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

const struct sv_sys_cfg *sv_sys_get_cfg(const sv_sys *sys)
{
    return &sys->cfg;
}

const sv_sys_groups *sv_sys_get_groups(const sv_sys *sys)
{
    return sys->groups;
}
