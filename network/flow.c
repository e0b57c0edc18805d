/* flow timing model: flow-level contention with max-min fair rates.
 *
 * Devices, links and routes are fifo's (sv_net_geom). A message is one flow over its whole route
 * at once (no store-and-forward): it transmits at its max-min fair rate; when its last byte has
 * left the source it arrives after the route's total latency. Alone on its path a flow takes
 * trunc(sum L + bytes / B_min), i.e. analytical's time for 1-D Ring, FullyConnected and Switch.
 *
 * Rates come from progressive filling (the water-filling definition of max-min fairness),
 * re-solved only over the flows connected to a change (flows linked through shared links).
 * Bookkeeping is lazy: a flow stores (bytes remaining at t_upd, rate since t_upd); it is brought
 * up to date only when its rate is re-solved, so flows untouched by a change cost nothing. The
 * whole model has ONE engine event, rescheduled to the earliest finish; starts are batched into
 * it too (a start moves the event to now), so flows starting in the same tick share one solve.
 *
 * Finish time of a flow = t_upd + floor(rem / rate + SV_NET_FLOW_TOL_NS): the tolerance absorbs
 * the floating-point error of rem (updated by rem -= rate * dt), so a quotient that should be an
 * integer k but comes out as k - 1e-12 still finishes at k. At completion the bytes left at the
 * event time must be within one nanosecond's worth of transmission (|rem_now| <= rate * 1 ns +
 * tolerance), otherwise the model lost or invented bytes (asserted: byte conservation).
 *
 * The same machinery is a resource for other modules (sv_net_solver, network.h): a growable
 * link table (a network's topology links keep ids 0..nlinks-1, others are appended) and flows
 * over explicit link lists. Network messages are delivered and counted through the sv_net
 * (sv_net__schedule_delivery); other flows through the solver's own pooled records and one
 * engine event each, in the same way, so adding links changes no message's timing. */
#include "network/network_internal.h"

#include <math.h>
#include <string.h>

/* Byte tolerance of the conservation check: relative to the flow size plus an absolute term. */
#define SV_NET_FLOW_TOL_REL 1e-9
#define SV_NET_FLOW_TOL_BYTES 1e-3

struct flow {
    uint64_t seq; /* start order: tie-break and test handle */
    uint64_t bytes;
    double rem;  /* bytes remaining at t_upd */
    double rate; /* bytes/ns since t_upd; 0 before the first solve */
    sv_time t_upd;
    sv_time fin; /* floor of the finish time at the current rate */
    double lat_sum_ns;
    sv_net_done_fn done;
    void *ctx;
    uint64_t arg;
    int src, dst;
    gboolean via_net; /* a network message: delivered and counted by the sv_net */
    int nlinks;
    int route_cap;
    int *links;   /* route_cap: link ids of the route */
    int *pos;     /* route_cap: index of this flow in each link's flow list */
    int heap_pos; /* in the finish heap, -1 when not in it */
    int next_free;
    gboolean active;
    /* solve scratch */
    uint32_t mark;
    gboolean frozen;
    double new_rate;
};

/* A finish-heap entry: the flow's keys, copied so that sifts do not touch the flows. */
struct fin_entry {
    sv_time fin;
    uint64_t seq;
    int id;
};

/* A flow crossing a link: which flow, and which hop of its route this link is. */
struct flink_entry {
    int flow;
    int hop;
};

struct flink {
    struct flink_entry *flows; /* active flows crossing this link */
    int n;
    int cap;
    /* solve scratch */
    uint32_t mark;
    uint32_t version;
    int unfrozen;
    double cap_rem;
    gboolean dirty;
};

struct share_entry {
    double share;
    int link;
    uint32_t version;
};

/* A delivery of a flow that is not a network message (standalone and added-link flows). */
struct delivery {
    struct delivery *next; /* free list */
    sv_net_solver *s;
    sv_net_done_fn done;
    void *ctx;
    uint64_t arg;
};
#define SOLVER_DELIVERY_SLAB 256

struct sv_net_solver {
    sv_engine *eng;
    sv_net *net;   /* NULL for a standalone solver */
    GArray *flows; /* struct flow pool */
    int flow_free;
    struct flink *links;
    double *link_bw;  /* bytes/ns, per link (apart from the hot per-link records) */
    double *link_lat; /* ns, per link */
    int nlinks;
    int links_cap;
    struct sv_net_solver_stats stats;
    GPtrArray *delivery_slabs;
    struct delivery *delivery_free;
    struct fin_entry *heap; /* ordered by (fin, seq) */
    int heap_n;
    int heap_cap;
    sv_event_id event;
    uint64_t next_seq;
    int active;
    uint32_t epoch;
    /* scratch, reused across solves */
    GArray *dirty;      /* int link ids whose flows changed */
    GArray *queue;      /* int BFS link queue */
    GArray *comp_flows; /* int flows of the touched components */
    GArray *share_heap; /* struct share_entry */
};

static inline struct flow *flow_at(sv_net_solver *fm, int id)
{
    return &g_array_index(fm->flows, struct flow, id);
}

/* ---- finish heap ------------------------------------------------------------------------ */

/* The heap entries carry their keys, so a sift compares entries without loading the flows
 * (thousands of them at 1024 NPUs: a cache miss each); only the moved flow's heap_pos is
 * written. */
static inline gboolean fin_less(const struct fin_entry *a, const struct fin_entry *b)
{
    return a->fin < b->fin || (a->fin == b->fin && a->seq < b->seq);
}

static void heap_set(sv_net_solver *fm, int i, struct fin_entry e)
{
    fm->heap[i] = e;
    flow_at(fm, e.id)->heap_pos = i;
}

static void heap_up(sv_net_solver *fm, int i)
{
    struct fin_entry e = fm->heap[i];
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!fin_less(&e, &fm->heap[p]))
            break;
        heap_set(fm, i, fm->heap[p]);
        i = p;
    }
    heap_set(fm, i, e);
}

static void heap_down(sv_net_solver *fm, int i)
{
    struct fin_entry e = fm->heap[i];
    for (;;) {
        int c = 2 * i + 1;
        if (c >= fm->heap_n)
            break;
        if (c + 1 < fm->heap_n && fin_less(&fm->heap[c + 1], &fm->heap[c]))
            c++;
        if (!fin_less(&fm->heap[c], &e))
            break;
        heap_set(fm, i, fm->heap[c]);
        i = c;
    }
    heap_set(fm, i, e);
}

/* Insert flow `id` or move it after its fin changed. */
static void heap_update(sv_net_solver *fm, int id)
{
    struct flow *f = flow_at(fm, id);
    struct fin_entry e = {f->fin, f->seq, id};
    if (f->heap_pos < 0) {
        if (fm->heap_n == fm->heap_cap) {
            fm->heap_cap = fm->heap_cap > 0 ? 2 * fm->heap_cap : 64;
            fm->heap = g_renew(struct fin_entry, fm->heap, fm->heap_cap);
        }
        fm->heap[fm->heap_n] = e;
        f->heap_pos = fm->heap_n++;
        heap_up(fm, f->heap_pos);
        return;
    }
    fm->heap[f->heap_pos] = e;
    heap_up(fm, f->heap_pos);
    heap_down(fm, flow_at(fm, id)->heap_pos);
}

static void heap_remove(sv_net_solver *fm, int id)
{
    struct flow *f = flow_at(fm, id);
    int i = f->heap_pos;
    SV_ASSERT(i >= 0);
    f->heap_pos = -1;
    fm->heap_n--;
    if (i == fm->heap_n)
        return;
    heap_set(fm, i, fm->heap[fm->heap_n]);
    heap_up(fm, i);
    heap_down(fm, i);
}

/* ---- max-min share heap (lazy deletion by version) --------------------------------------- */

static gboolean share_less(const struct share_entry *a, const struct share_entry *b)
{
    return a->share < b->share || (a->share == b->share && a->link < b->link);
}

static void share_push(GArray *h, double share, int link, uint32_t version)
{
    struct share_entry e = {share, link, version};
    g_array_append_val(h, e);
    struct share_entry *a = (struct share_entry *)h->data;
    int i = (int)h->len - 1;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!share_less(&e, &a[p]))
            break;
        a[i] = a[p];
        i = p;
    }
    a[i] = e;
}

static struct share_entry share_pop(GArray *h)
{
    struct share_entry *a = (struct share_entry *)h->data;
    struct share_entry top = a[0];
    struct share_entry last = a[h->len - 1];
    g_array_set_size(h, h->len - 1);
    int n = (int)h->len;
    if (n == 0)
        return top;
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && share_less(&a[c + 1], &a[c]))
            c++;
        if (!share_less(&a[c], &last))
            break;
        a[i] = a[c];
        i = c;
    }
    a[i] = last;
    return top;
}

/* ---- model ------------------------------------------------------------------------------ */

static sv_net_solver *solver_new(sv_engine *eng, sv_net *net)
{
    sv_net_solver *fm = g_new0(sv_net_solver, 1);
    fm->eng = eng;
    fm->net = net;
    fm->flows = g_array_new(FALSE, TRUE, sizeof(struct flow));
    fm->flow_free = -1;
    fm->dirty = g_array_new(FALSE, FALSE, sizeof(int));
    fm->queue = g_array_new(FALSE, FALSE, sizeof(int));
    fm->comp_flows = g_array_new(FALSE, FALSE, sizeof(int));
    fm->share_heap = g_array_new(FALSE, FALSE, sizeof(struct share_entry));
    fm->delivery_slabs = g_ptr_array_new_with_free_func(g_free);
    return fm;
}

sv_net_solver *sv_net__flow_model_new(sv_net *net)
{
    sv_net_solver *fm = solver_new(net->eng, net);
    /* Topology links keep their ids 0..nlinks-1. */
    for (int l = 0; l < net->geom.nlinks; l++)
        sv_net_solver_link_add(fm, net->geom.links[l].bw_bpns, net->geom.links[l].lat_ns);
    return fm;
}

sv_net_solver *sv_net_solver_new(sv_engine *eng)
{
    SV_ASSERT(eng != NULL);
    return solver_new(eng, NULL);
}

void sv_net__flow_model_free(sv_net_solver *fm)
{
    if (fm == NULL)
        return;
    if (fm->event != SV_EVENT_NONE)
        sv_engine_cancel(fm->eng, fm->event);
    for (guint i = 0; i < fm->flows->len; i++) {
        g_free(flow_at(fm, (int)i)->links);
        g_free(flow_at(fm, (int)i)->pos);
    }
    g_array_free(fm->flows, TRUE);
    for (int l = 0; l < fm->nlinks; l++)
        g_free(fm->links[l].flows);
    g_free(fm->links);
    g_free(fm->link_bw);
    g_free(fm->link_lat);
    g_free(fm->heap);
    g_array_free(fm->dirty, TRUE);
    g_array_free(fm->queue, TRUE);
    g_array_free(fm->comp_flows, TRUE);
    g_array_free(fm->share_heap, TRUE);
    g_ptr_array_free(fm->delivery_slabs, TRUE);
    g_free(fm);
}

void sv_net_solver_free(sv_net_solver *s)
{
    if (s == NULL)
        return;
    SV_ASSERT(s->net == NULL); /* a network's solver is freed with the network */
    sv_net__flow_model_free(s);
}

sv_net_solver *sv_net_get_solver(sv_net *net)
{
    return net != NULL ? net->flow : NULL;
}

int sv_net_solver_link_add(sv_net_solver *s, double bytes_per_ns, double latency_ns)
{
    SV_ASSERT(s != NULL && bytes_per_ns > 0 && latency_ns >= 0);
    if (s->nlinks == s->links_cap) {
        s->links_cap = s->links_cap > 0 ? 2 * s->links_cap : 16;
        s->links = g_renew(struct flink, s->links, s->links_cap);
        memset(&s->links[s->nlinks], 0, sizeof(struct flink) * (size_t)(s->links_cap - s->nlinks));
        s->link_bw = g_renew(double, s->link_bw, s->links_cap);
        s->link_lat = g_renew(double, s->link_lat, s->links_cap);
    }
    s->link_bw[s->nlinks] = bytes_per_ns;
    s->link_lat[s->nlinks] = latency_ns;
    return s->nlinks++;
}

int sv_net_solver_num_links(const sv_net_solver *s)
{
    return s->nlinks;
}

static void mark_dirty(sv_net_solver *fm, int link)
{
    if (!fm->links[link].dirty) {
        fm->links[link].dirty = TRUE;
        g_array_append_val(fm->dirty, link);
    }
}

static void on_tick(sv_engine *eng, void *ctx, uint64_t arg);

/* Point the model's single event at `at` (creating it if none is pending). */
static void set_tick(sv_net_solver *fm, sv_time at)
{
    sv_engine *eng = fm->eng;
    if (fm->event != SV_EVENT_NONE && sv_engine_pending_event(eng, fm->event)) {
        if (sv_engine_event_time(eng, fm->event) != at)
            sv_engine_reschedule(eng, fm->event, at);
        return;
    }
    fm->event = sv_engine_schedule(eng, at, SV_PRIO_DEFAULT, on_tick, fm, 0);
}

static sv_time finish_floor(const struct flow *f)
{
    return f->t_upd + sv_time_from_ns(f->rem / f->rate + SV_NET_FLOW_TOL_NS);
}

/* Bring a flow's lazy state to `now` at its old rate. */
static void flow_advance(struct flow *f, sv_time now)
{
    if (f->rate > 0 && now > f->t_upd) {
        f->rem -= f->rate * (double)(now - f->t_upd);
        if (f->rem < 0)
            f->rem = 0;
    }
    f->t_upd = now;
}

/* Progressive filling over every flow reachable from the dirty links. */
static void solve(sv_net_solver *fm)
{
    sv_time now = sv_engine_now(fm->eng);
    uint32_t epoch = ++fm->epoch;
    GArray *queue = fm->queue, *comp = fm->comp_flows, *sh = fm->share_heap;
    g_array_set_size(queue, 0);
    g_array_set_size(comp, 0);
    g_array_set_size(sh, 0);

    /* 1. Connected components touched by the change (BFS over links and flows). */
    for (guint i = 0; i < fm->dirty->len; i++) {
        int l = g_array_index(fm->dirty, int, i);
        fm->links[l].dirty = FALSE;
        if (fm->links[l].mark != epoch) {
            fm->links[l].mark = epoch;
            g_array_append_val(queue, l);
        }
    }
    g_array_set_size(fm->dirty, 0);
    for (guint qi = 0; qi < queue->len; qi++) {
        struct flink *L = &fm->links[g_array_index(queue, int, qi)];
        for (int k = 0; k < L->n; k++) {
            int id = L->flows[k].flow;
            struct flow *f = flow_at(fm, id);
            if (f->mark == epoch)
                continue;
            f->mark = epoch;
            f->frozen = FALSE;
            g_array_append_val(comp, id);
            for (int h = 0; h < f->nlinks; h++) {
                int m = f->links[h];
                if (fm->links[m].mark != epoch) {
                    fm->links[m].mark = epoch;
                    g_array_append_val(queue, m);
                }
            }
        }
    }
    if (comp->len == 0)
        return;
    fm->stats.rate_solves++;
    if (fm->net != NULL) {
        fm->net->stats.rate_solves++;
        fm->net->stats.solve_flow_visits += comp->len;
    }

    /* 2. Water-filling: repeatedly saturate the link with the smallest fair share. */
    for (guint qi = 0; qi < queue->len; qi++) {
        int l = g_array_index(queue, int, qi);
        struct flink *L = &fm->links[l];
        L->cap_rem = fm->link_bw[l];
        L->unfrozen = L->n;
        L->version++;
        if (L->n > 0)
            share_push(sh, L->cap_rem / L->n, l, L->version);
    }
    double last_share = 0;
    while (sh->len > 0) {
        struct share_entry e = share_pop(sh);
        struct flink *L = &fm->links[e.link];
        if (e.version != L->version || L->unfrozen == 0)
            continue;
        /* Shares only grow during water-filling; clamp rounding noise so no flow gets less. */
        double share = e.share > last_share ? e.share : last_share;
        last_share = share;
        for (int k = 0; k < L->n; k++) {
            struct flow *f = flow_at(fm, L->flows[k].flow);
            if (f->frozen)
                continue;
            f->frozen = TRUE;
            f->new_rate = share;
            for (int h = 0; h < f->nlinks; h++) {
                struct flink *M = &fm->links[f->links[h]];
                M->cap_rem -= share;
                M->unfrozen--;
                if (M != L && M->unfrozen > 0) {
                    M->version++;
                    double s = M->cap_rem > 0 ? M->cap_rem / M->unfrozen : 0;
                    share_push(sh, s, f->links[h], M->version);
                }
            }
        }
        SV_ASSERT(L->unfrozen == 0);
    }

    /* 3. Apply the new rates lazily: only a flow whose rate changed is brought up to date. */
    for (guint i = 0; i < comp->len; i++) {
        int id = g_array_index(comp, int, i);
        struct flow *f = flow_at(fm, id);
        SV_ASSERT(f->frozen && f->new_rate > 0);
        if (f->new_rate == f->rate)
            continue;
        flow_advance(f, now);
        f->rate = f->new_rate;
        f->fin = finish_floor(f);
        heap_update(fm, id);
    }
}

static void on_delivery(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)arg;
    struct delivery *d = ctx;
    sv_net_solver *s = d->s;
    sv_net_done_fn done = d->done;
    void *dctx = d->ctx;
    uint64_t darg = d->arg;
    d->next = s->delivery_free; /* released first: the callback may start flows */
    s->delivery_free = d;
    done(eng, dctx, darg);
}

/* The solver's own delivery (flows that are not network messages): one pooled record and one
 * engine event, as sv_net__schedule_delivery does for messages. */
static void schedule_delivery(sv_net_solver *s, sv_time at, sv_net_done_fn done, void *ctx,
                              uint64_t arg)
{
    if (s->delivery_free == NULL) {
        struct delivery *slab = g_new0(struct delivery, SOLVER_DELIVERY_SLAB);
        g_ptr_array_add(s->delivery_slabs, slab);
        for (int i = SOLVER_DELIVERY_SLAB - 1; i >= 0; i--) {
            slab[i].next = s->delivery_free;
            s->delivery_free = &slab[i];
        }
    }
    struct delivery *d = s->delivery_free;
    s->delivery_free = d->next;
    d->s = s;
    d->done = done;
    d->ctx = ctx;
    d->arg = arg;
    sv_engine_schedule(s->eng, at, SV_PRIO_DEFAULT, on_delivery, d, 0);
}

static void flow_finish(sv_net_solver *fm, int id, sv_time now)
{
    struct flow *f = flow_at(fm, id);
    /* Byte conservation: what is left at `now` must be at most one nanosecond of transmission
     * (fin is a floor), and the flow must not have overshot by more than that either. */
    double left = f->rem - f->rate * (double)(now - f->t_upd);
    double tol = f->rate * (1.0 + SV_NET_FLOW_TOL_NS) + SV_NET_FLOW_TOL_REL * (double)f->bytes +
                 SV_NET_FLOW_TOL_BYTES;
    SV_ASSERT(fabs(left) <= tol);
    /* The last byte leaves at t_upd + rem / rate; add the route latency and truncate once. */
    sv_time at = f->t_upd + sv_time_from_ns(f->rem / f->rate + f->lat_sum_ns);
    if (at < now)
        at = now;
    for (int h = 0; h < f->nlinks; h++) {
        if (f->via_net)
            sv_net__note_busy(fm->net, f->links[h], now);
        struct flink *L = &fm->links[f->links[h]];
        int p = f->pos[h];
        SV_ASSERT(p < L->n && L->flows[p].flow == id);
        struct flink_entry last = L->flows[--L->n];
        L->flows[p] = last;
        flow_at(fm, last.flow)->pos[last.hop] = p;
        mark_dirty(fm, f->links[h]);
    }
    f->active = FALSE;
    fm->active--;
    if (f->via_net)
        sv_net__schedule_delivery(fm->net, at, f->src, f->dst, f->bytes, f->done, f->ctx, f->arg);
    else
        schedule_delivery(fm, at, f->done, f->ctx, f->arg);
    f->next_free = fm->flow_free;
    fm->flow_free = id;
}

static void on_tick(sv_engine *eng, void *ctx, uint64_t arg)
{
    sv_net_solver *fm = ctx;
    sv_time now = sv_engine_now(eng);
    fm->event = SV_EVENT_NONE;
    /* Completions first: their rates held until now. Same-tick completions in start order. */
    while (fm->heap_n > 0 && fm->heap[0].fin <= now) {
        int id = fm->heap[0].id;
        heap_remove(fm, id);
        flow_finish(fm, id, now);
    }
    if (fm->dirty->len > 0)
        solve(fm);
    if (fm->heap_n > 0)
        set_tick(fm, fm->heap[0].fin);
}

/* Take a flow record with room for `nlinks` links. */
static int flow_alloc(sv_net_solver *fm, int nlinks)
{
    int id = fm->flow_free;
    if (id >= 0) {
        fm->flow_free = flow_at(fm, id)->next_free;
    } else {
        id = (int)fm->flows->len;
        g_array_set_size(fm->flows, fm->flows->len + 1); /* zero-filled */
    }
    struct flow *f = flow_at(fm, id);
    if (f->route_cap < nlinks) {
        f->route_cap = nlinks;
        f->links = g_renew(int, f->links, f->route_cap);
        f->pos = g_renew(int, f->pos, f->route_cap);
    }
    return id;
}

/* Start flow `id` whose links (f->nlinks of f->links) are set. */
static void flow_start(sv_net_solver *fm, int id, uint64_t bytes, double lat, int src, int dst,
                       gboolean via_net, sv_net_done_fn done, void *ctx, uint64_t arg)
{
    sv_time now = sv_engine_now(fm->eng);
    struct flow *f = flow_at(fm, id);
    f->seq = fm->next_seq++;
    f->bytes = bytes;
    f->rem = (double)bytes;
    f->rate = 0;
    f->t_upd = now;
    f->fin = SV_TIME_MAX;
    f->lat_sum_ns = lat;
    f->done = done;
    f->ctx = ctx;
    f->arg = arg;
    f->src = src;
    f->dst = dst;
    f->via_net = via_net;
    f->heap_pos = -1;
    f->next_free = -1;
    f->active = TRUE;
    f->frozen = FALSE;
    for (int h = 0; h < f->nlinks; h++) {
        struct flink *L = &fm->links[f->links[h]];
        if (L->n == L->cap) {
            L->cap = L->cap > 0 ? 2 * L->cap : 4;
            L->flows = g_renew(struct flink_entry, L->flows, L->cap);
        }
        f->pos[h] = L->n;
        L->flows[L->n].flow = id;
        L->flows[L->n].hop = h;
        L->n++;
        mark_dirty(fm, f->links[h]);
    }
    fm->active++;
    fm->stats.flows++;
    fm->stats.bytes += bytes;
    fm->stats.link_bytes += bytes * (uint64_t)f->nlinks;
    if (fm->net != NULL && (uint64_t)fm->active > fm->net->stats.max_active_flows)
        fm->net->stats.max_active_flows = (uint64_t)fm->active;
    /* Solve in the model's event at this tick, together with other same-tick starts. */
    set_tick(fm, now);
}

void sv_net__flow_send(sv_net *net, int src, int dst, uint64_t bytes, sv_net_done_fn done,
                       void *ctx, uint64_t arg)
{
    sv_net_solver *fm = net->flow;
    const struct sv_net_geom *g = &net->geom;
    sv_time now = sv_engine_now(net->eng);
    double lat = 0;
    if (bytes == 0) {
        /* Nothing to transmit: the (empty) last byte leaves at once. */
        sv_net__geom_route(g, src, dst, NULL, &lat);
        sv_net__schedule_delivery(net, now + sv_time_from_ns(lat), src, dst, 0, done, ctx, arg);
        return;
    }
    int id = flow_alloc(fm, g->max_route_links);
    struct flow *f = flow_at(fm, id);
    f->nlinks = sv_net__geom_route(g, src, dst, f->links, &lat);
    int nl = f->nlinks;
    if (G_UNLIKELY(net->watch_until != NULL)) {
        /* the watcher may adopt flows (growing the pool): re-read f afterwards */
        for (int h = 0; h < nl; h++)
            sv_net__enter_link(net, flow_at(fm, id)->links[h]);
    }
    net->stats.link_bytes += bytes * (uint64_t)nl;
    net->stats.link_transfers += (uint64_t)nl;
    flow_start(fm, id, bytes, lat, src, dst, TRUE, done, ctx, arg);
}

void sv_net_solver_start(sv_net_solver *s, const int *links, int n, double extra_latency_ns,
                         uint64_t bytes, sv_net_done_fn done, void *ctx, uint64_t arg)
{
    SV_ASSERT(s != NULL && n >= 0 && extra_latency_ns >= 0);
    double lat = extra_latency_ns;
    for (int h = 0; h < n; h++) {
        SV_ASSERT(links[h] >= 0 && links[h] < s->nlinks);
        lat += s->link_lat[links[h]];
    }
    if (bytes == 0 || n == 0) {
        /* Nothing to transmit, or no finite link: latency only. */
        s->stats.flows++;
        s->stats.bytes += bytes;
        schedule_delivery(s, sv_engine_now(s->eng) + sv_time_from_ns(lat), done, ctx, arg);
        return;
    }
    if (s->net != NULL && G_UNLIKELY(s->net->watch_until != NULL)) {
        for (int h = 0; h < n; h++)
            if (links[h] < s->net->geom.nlinks)
                sv_net__enter_link(s->net, links[h]);
    }
    int id = flow_alloc(s, n);
    struct flow *f = flow_at(s, id);
    f->nlinks = n;
    memcpy(f->links, links, sizeof(int) * (size_t)n);
    flow_start(s, id, bytes, lat, -1, -1, FALSE, done, ctx, arg);
}

void sv_net_solver_get_stats(const sv_net_solver *s, struct sv_net_solver_stats *out)
{
    *out = s->stats;
}

double sv_net_solver_link_rate_sum(const sv_net_solver *s, int link)
{
    SV_ASSERT(link >= 0 && link < s->nlinks);
    const struct flink *L = &s->links[link];
    double sum = 0;
    for (int k = 0; k < L->n; k++)
        sum += g_array_index(s->flows, struct flow, L->flows[k].flow).rate;
    return sum;
}

int sv_net_route_links(const sv_net *net, int src, int dst, int *links, double *lat_ns)
{
    SV_ASSERT(src != dst && src >= 0 && dst >= 0 && src < net->geom.npus && dst < net->geom.npus);
    double lat = 0;
    int n = sv_net__geom_route(&net->geom, src, dst, links, &lat);
    if (lat_ns != NULL)
        *lat_ns = lat;
    return n;
}

int sv_net_route_max_links(const sv_net *net)
{
    return net->geom.max_route_links;
}

int sv_net__flow_active(const sv_net *net)
{
    return net->flow != NULL ? net->flow->active : 0;
}

double sv_net__flow_rate(const sv_net *net, uint64_t seq)
{
    sv_net_solver *fm = net->flow;
    if (fm == NULL)
        return -1;
    for (guint i = 0; i < fm->flows->len; i++) {
        struct flow *f = flow_at(fm, (int)i);
        if (f->active && f->seq == seq)
            return f->rate;
    }
    return -1;
}

/* ---- adoption from a shadow (network/shadow.c) ---------------------------------------------- */

gboolean sv_net__flow_link_quiet(const sv_net *net, int link)
{
    return net->flow->links[link].n == 0;
}

/* The shadow's flows transmitting now, moved with their lazy state (bytes left at t_upd, rate),
 * in start order, and every link's flow list in the shadow's order, so that the solves that
 * follow see exactly the state the same flows would have had here (their links carried nothing
 * else: the caller checked they are quiet). The links are re-solved in this tick's event. */
void sv_net__flow_adopt(sv_net *net, sv_net *shadow, sv_time shift, sv_net_remap_fn remap, void *ud)
{
    sv_net_solver *fm = net->flow, *sh = shadow->flow;
    sv_time now = sv_engine_now(net->eng);
    g_autoptr(GArray) order = g_array_new(FALSE, FALSE, sizeof(int));
    for (guint i = 0; i < sh->flows->len; i++)
        if (flow_at(sh, (int)i)->active)
            g_array_append_val(order, i);
    if (order->len == 0)
        return;
    /* start order (the heap tie-break): insertion sort on seq, the list is short */
    for (guint i = 1; i < order->len; i++) {
        int v = g_array_index(order, int, i);
        guint j = i;
        while (j > 0 && flow_at(sh, g_array_index(order, int, j - 1))->seq > flow_at(sh, v)->seq) {
            g_array_index(order, int, j) = g_array_index(order, int, j - 1);
            j--;
        }
        g_array_index(order, int, j) = v;
    }
    g_autofree int *map = g_new(int, sh->flows->len);
    for (guint k = 0; k < order->len; k++) {
        int sid = g_array_index(order, int, k);
        const struct flow *o = flow_at(sh, sid);
        SV_ASSERT(o->via_net && o->fin + shift >= now);
        int id = flow_alloc(fm, o->nlinks);
        struct flow *f = flow_at(fm, id);
        o = flow_at(sh, sid);
        f->seq = fm->next_seq++;
        f->bytes = o->bytes;
        f->rem = o->rem;
        f->rate = o->rate;
        f->t_upd = o->t_upd + shift;
        f->fin = o->fin + shift;
        f->lat_sum_ns = o->lat_sum_ns;
        f->done = o->done;
        f->ctx = o->ctx != NULL ? remap(ud, o->ctx) : NULL;
        f->arg = o->arg;
        f->src = o->src;
        f->dst = o->dst;
        f->via_net = TRUE;
        f->nlinks = o->nlinks;
        memcpy(f->links, o->links, sizeof(int) * (size_t)o->nlinks);
        f->heap_pos = -1;
        f->next_free = -1;
        f->active = TRUE;
        f->frozen = FALSE;
        map[sid] = id;
        heap_update(fm, id);
        fm->active++;
    }
    for (int l = 0; l < sh->nlinks; l++) {
        const struct flink *SL = &sh->links[l];
        if (SL->n == 0)
            continue;
        struct flink *L = &fm->links[l];
        SV_ASSERT(L->n == 0); /* the caller's links carry nothing else */
        if (L->cap < SL->n) {
            L->cap = SL->n;
            L->flows = g_renew(struct flink_entry, L->flows, L->cap);
        }
        for (int k = 0; k < SL->n; k++) {
            int id = map[SL->flows[k].flow];
            int hop = SL->flows[k].hop;
            L->flows[k].flow = id;
            L->flows[k].hop = hop;
            flow_at(fm, id)->pos[hop] = k;
        }
        L->n = SL->n;
        mark_dirty(fm, l);
    }
    if (net != NULL && (uint64_t)fm->active > net->stats.max_active_flows)
        net->stats.max_active_flows = (uint64_t)fm->active;
    set_tick(fm, now);
}
