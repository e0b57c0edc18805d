/* Collective phases without messages (docs/collectives.md "Closed form").
 *
 * A phase instance is one chunk's phase over the NPUs of one ring (a logical dimension's line, or
 * a communicator group): the streams of its members share a tag and a phase index. When its
 * members start it, none of them sends anything at first: the phase waits until every member has
 * started (they normally do so in the same tick) and then computes, for each member, when the
 * phase ends on it. That end is all the rest of the system layer sees of the phase (the stream
 * moves to its next phase, or its DataSet completes, at that time), so the messages are never
 * sent: the network is told their statistics and its observer sees each arrival at its time.
 *
 * What is computed is exactly what sending the messages would give, as long as nothing else uses
 * the phase's links while it runs (and, under fifo and flow, that is checked):
 *  - a ring whose members start together and whose messages each take the same time alone on
 *    their routes, which no two members share: closed form (ring_closed_form below);
 *  - anything else (direct, halving-doubling, double binary tree, members starting at different
 *    ticks, rings over unequal routes, messages of the phase sharing links): the phase is
 *    replayed alone, message by message, on a shadow network and system layer of its own
 *    (shadow_run), and the result is memoised by shape (members, their start offsets and phase
 *    parameters): serving runs repeat the same collectives thousands of times.
 *
 * The phase holds its links (fifo, flow; analytical and ideal have no link state) from the first
 * start until its last member ends. Traffic that comes onto one of them in the meantime (any
 * message, another collective's included, or a memory-tier flow over the network) switches the
 * phase to messages at that instant: the shadow replays it up to and including the current tick,
 * and what is then pending there (bundle events, posted sends and receives, flows with the bytes
 * they have left and their rates, fifo chunks on their links) is moved into the real system and
 * network, which continue from there as if it had run with messages all along. The same happens
 * when the members do not all start within one endpoint delay of the first (before that none of
 * them has sent anything), and when the phase's links are busy when it would begin.
 *
 * What can differ from sending every message: only the order, within one nanosecond, of the
 * phase's events against other components' events of the same nanosecond (docs/collectives.md
 * states the bound and tests/system/test_virtual.c measures it). */
#include "system/system_internal.h"

#include <string.h>

enum vi_state { VI_GATHER, VI_VIRTUAL, VI_REAL };

struct vi_key {
    int tag;
    int phase;
    int base;
    int stride;
    int nodes;
    int type;
    uint64_t size;
    const int *members;
};

struct vi_member {
    coll_stream *s;
    int npu;
    sv_time join;
    gboolean ended;       /* its end has run (virtually) */
    struct coll_phase ph; /* the phase as it started (the stream moves on after its end) */
};

/* Deliveries grouped by tick (offsets from the first start), and what the phase adds to the
 * network's statistics. A uniform ring stores no message list: every member receives one message
 * of `ubytes` from its ring sender at each tick. */
struct vres {
    int refs;
    int n;
    sv_time *end; /* per member, in join order, offset from the first start */
    sv_time span; /* the largest end */
    int nticks;
    sv_time *tick;
    int *tick_first; /* nticks + 1 entries into msgs */
    struct vmsg {
        int src, dst;
        uint64_t bytes;
    } * msgs;
    gboolean uniform;
    uint64_t ubytes;
    struct sv_net_stats stats;
    int nlinks;
    int *links;
    sv_time *link_until; /* per link: held until then (offset, exclusive) */
};

struct vinst {
    sv_sys *sys;
    struct vi_key key;
    enum vi_state state;
    int n;      /* members expected (the phase's nodes) */
    int joined; /* in join order: m[0 .. joined) */
    struct vi_member *m;
    sv_time t0;
    sv_time D; /* the endpoint delay before a member's first send */
    sv_event_id deadline;
    struct vres *res;
    int live; /* members whose end has not run */
    int refs; /* the table, live members, pending report events */
    sv_event_id *report_ev;
    int *held; /* the links it holds (sys->holders) */
    int nheld;
    gboolean in_table;
    /* gathering past the endpoint delay: the members that started run alone (a shadow) while
     * the others are awaited; their links are held until that run would stall, when a watchdog
     * switches the phase to messages */
    gboolean tentative;
    sv_event_id watchdog;
};

/* ---- keys, records -------------------------------------------------------------------------- */

static guint key_hash(gconstpointer p)
{
    const struct vi_key *k = p;
    uint64_t h = sv_hash_mix64((uint64_t)(uint32_t)k->tag << 32 | (uint32_t)k->phase);
    h ^= sv_hash_mix64((uint64_t)(uint32_t)k->base << 32 | (uint32_t)k->stride);
    h ^= sv_hash_mix64(k->size + (uint64_t)k->type * 0x9e37u + (uint64_t)k->nodes);
    h ^= sv_hash_mix64((uint64_t)(uintptr_t)k->members);
    return (guint)(h ^ (h >> 32));
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
    const struct vi_key *x = a, *y = b;
    return x->tag == y->tag && x->phase == y->phase && x->base == y->base &&
           x->stride == y->stride && x->nodes == y->nodes && x->type == y->type &&
           x->size == y->size && x->members == y->members;
}

static void vres_unref(struct vres *r)
{
    if (r == NULL || --r->refs > 0)
        return;
    g_free(r->end);
    g_free(r->tick);
    g_free(r->tick_first);
    g_free(r->msgs);
    g_free(r->links);
    g_free(r->link_until);
    g_free(r);
}

static void vi_unref(struct vinst *vi)
{
    if (--vi->refs > 0)
        return;
    g_hash_table_remove(vi->sys->vi_live, vi);
    vres_unref(vi->res);
    g_free(vi->held);
    g_free(vi->report_ev);
    g_free(vi->m);
    g_free(vi);
}

/* The table forgets an instance once every member has started (no later start can find it). */
static void vi_untable(struct vinst *vi)
{
    if (!vi->in_table)
        return;
    vi->in_table = FALSE;
    g_hash_table_remove(vi->sys->vinsts, &vi->key);
    vi_unref(vi);
}

static sv_time stream_delay(const sv_sys *sys, const coll_stream *s)
{
    return s->cur.algo == ALGO_RING && s->cur.fast ? FAST_TRANSMISSION_DELAY : sys->comm_delay;
}

/* ---- links held ------------------------------------------------------------------------------ */

static gboolean net_has_links(const sv_sys *sys)
{
    sv_net_model m = sv_net_get_model(sys->net);
    return m == SV_NET_MODEL_FIFO || m == SV_NET_MODEL_FLOW;
}

static void materialize(struct vinst *vi, gboolean inclusive);

/* holders[l]: the phases holding link l, each until when (exclusive). */
struct hold {
    struct vinst *vi;
    sv_time until;
};

static void holders_update_watch(sv_sys *sys, int link)
{
    GArray *h = sys->holders[link];
    sv_time until = 0;
    for (guint i = 0; h != NULL && i < h->len; i++)
        until = MAX(until, g_array_index(h, struct hold, i).until);
    sv_net_watch_link(sys->net, link, until);
}

static void release_links(struct vinst *vi)
{
    sv_sys *sys = vi->sys;
    for (int k = 0; k < vi->nheld; k++) {
        int l = vi->held[k];
        GArray *h = sys->holders[l];
        for (guint i = 0; i < h->len; i++) {
            if (g_array_index(h, struct hold, i).vi == vi) {
                g_array_remove_index(h, i);
                break;
            }
        }
        holders_update_watch(sys, l);
    }
    g_clear_pointer(&vi->held, g_free);
    vi->nheld = 0;
}

static gboolean switchable(const struct vinst *vi)
{
    return vi->state == VI_VIRTUAL || (vi->state == VI_GATHER && vi->tentative);
}

/* Traffic is coming onto `link`: every phase holding it now switches to messages. */
static void on_contend(void *ctx, int link)
{
    sv_sys *sys = ctx;
    GArray *h = sys->holders[link];
    if (h == NULL || h->len == 0)
        return;
    sv_time now = sv_engine_now(sys->eng);
    g_autoptr(GPtrArray) hit = g_ptr_array_new();
    for (guint i = 0; i < h->len; i++) {
        const struct hold *x = &g_array_index(h, struct hold, i);
        if (x->until > now) {
            x->vi->refs++; /* alive until the loop below is done with it */
            g_ptr_array_add(hit, x->vi);
        }
    }
    for (guint i = 0; i < hit->len; i++) {
        struct vinst *vi = g_ptr_array_index(hit, i);
        if (switchable(vi)) {
            sys->vstats.contended++;
            materialize(vi, FALSE);
        }
        vi_unref(vi);
    }
}

/* Hold links[k] until until[k] (absolute, exclusive); FALSE (nothing held) when one of them is
 * busy now or held by another phase now: that one then switches to messages, and so does the
 * caller's. */
static gboolean hold_links(struct vinst *vi, const int *links, const sv_time *until, int nlinks)
{
    sv_sys *sys = vi->sys;
    SV_ASSERT(vi->nheld == 0);
    if (!net_has_links(sys) || nlinks == 0)
        return TRUE;
    sv_time now = sv_engine_now(sys->eng);
    if (sys->holders == NULL)
        sys->holders = g_new0(GArray *, sv_net_num_links(sys->net));
    gboolean ok = TRUE;
    g_autoptr(GPtrArray) clash = g_ptr_array_new();
    for (int k = 0; k < nlinks; k++) {
        int l = links[k];
        if (!sv_net_link_quiet(sys->net, l))
            ok = FALSE;
        GArray *h = sys->holders[l];
        for (guint i = 0; h != NULL && i < h->len; i++) {
            const struct hold *x = &g_array_index(h, struct hold, i);
            if (x->until > now) {
                ok = FALSE;
                if (!g_ptr_array_find(clash, x->vi, NULL)) {
                    x->vi->refs++; /* alive until the loop below is done with it */
                    g_ptr_array_add(clash, x->vi);
                }
            }
        }
    }
    for (guint i = 0; i < clash->len; i++) {
        struct vinst *o = g_ptr_array_index(clash, i);
        if (switchable(o)) {
            sys->vstats.contended++;
            materialize(o, FALSE);
        }
        vi_unref(o);
    }
    if (!ok)
        return FALSE;
    sv_net_set_contend_handler(sys->net, on_contend, sys);
    vi->held = g_new(int, nlinks);
    memcpy(vi->held, links, sizeof(int) * (gsize)(guint)nlinks);
    vi->nheld = nlinks;
    for (int k = 0; k < nlinks; k++) {
        int l = links[k];
        if (sys->holders[l] == NULL)
            sys->holders[l] = g_array_new(FALSE, FALSE, sizeof(struct hold));
        struct hold x = {vi, until[k]};
        g_array_append_val(sys->holders[l], x);
        holders_update_watch(sys, l);
    }
    return TRUE;
}

/* The links a shadow's messages used, each with when the last one left it (+ 1). */
static void links_used(const sv_sys *sys, const sv_net *shadow_net, sv_time shift, int **links,
                       sv_time **until, int *nlinks)
{
    *links = NULL;
    *until = NULL;
    *nlinks = 0;
    const sv_time *busy = sv_net_busy_until(shadow_net);
    if (!net_has_links(sys) || busy == NULL)
        return;
    int nl = sv_net_num_links(sys->net);
    GArray *lk = g_array_new(FALSE, FALSE, sizeof(int));
    GArray *un = g_array_new(FALSE, FALSE, sizeof(sv_time));
    for (int l = 0; l < nl; l++) {
        if (busy[l] > 0) {
            sv_time u = busy[l] + shift;
            g_array_append_val(lk, l);
            g_array_append_val(un, u);
        }
    }
    *nlinks = (int)lk->len;
    *links = (int *)g_array_free(lk, FALSE);
    *until = (sv_time *)g_array_free(un, FALSE);
}

/* ---- the closed form of a ring ---------------------------------------------------------------
 *
 * Ring.cc step by step (system/ring.c): a member inserts a packet at its start and at every
 * receipt; the k-th insertion (k = 0, 1, ...) releases a bundle after D (+ R = 3 floor(m/M) when
 * it needs reduction: the non-zero-latency packets of reduce-scatter and of the first n - 1 of an
 * all-reduce) whose General event sends message k + 1, or ends the phase after the last receipt.
 * With every member starting at t0 and every message taking T alone on its route, every member
 * sends message k at the same s_k, receives it at s_k + T (its recv is posted at s_k), so
 *   s_1 = t0 + D,  s_{k+1} = s_k + T + D + [k needs reduction] R,  end = s_S + T + D (+ R),
 * S = 2(n - 1) (all-reduce), n - 1 (reduce-scatter, all-gather), n(n - 1)/2 (all-to-all): the
 * README forms. Valid when no two messages share a link at once: members' routes disjoint, and a
 * member's next message entering its route only after the previous one left it. */

static gboolean ring_processed(const struct coll_phase *ph, int64_t k)
{
    int64_t n = ph->nodes;
    if (k % n == 0)
        return FALSE; /* a zero-latency packet */
    gboolean toggle = (k / n) % 2 == 0;
    return ph->comm_type == SV_SYS_REDUCE_SCATTER || (ph->comm_type == SV_SYS_ALL_REDUCE && toggle);
}

static sv_time mem_access_ns(const sv_sys *sys, uint64_t bytes)
{
    /* sched.c's mem_access: local-mem-bw bytes/ns, 10 cycles without one */
    if (sys->cfg.local_mem_bw <= 0)
        return 10;
    return sv_time_from_ns((double)bytes / sys->cfg.local_mem_bw);
}

static struct vres *ring_closed_form(struct vinst *vi)
{
    sv_sys *sys = vi->sys;
    const struct coll_phase *p0 = &vi->m[0].ph;
    int n = vi->n;
    if (p0->algo != ALGO_RING)
        return NULL;
    uint64_t m;
    int64_t S;
    switch (p0->comm_type) {
    case SV_SYS_ALL_REDUCE:
        S = 2 * (int64_t)(n - 1);
        m = p0->initial_size / (uint64_t)n;
        break;
    case SV_SYS_ALL_TO_ALL:
        S = (int64_t)n * (n - 1) / 2;
        m = p0->initial_size / (uint64_t)n;
        break;
    case SV_SYS_ALL_GATHER:
        S = n - 1;
        m = p0->initial_size;
        break;
    default:
        S = n - 1;
        m = p0->initial_size / (uint64_t)n;
        break;
    }
    struct sv_net_lone lone = {0, 0, 0};
    gboolean links = net_has_links(sys);
    int nlinks_total = links ? sv_net_num_links(sys->net) : 0;
    g_autofree guint8 *used = links ? g_new0(guint8, nlinks_total) : NULL;
    g_autoptr(GArray) lk = g_array_new(FALSE, FALSE, sizeof(int));
    int maxr = links ? sv_net_route_max_links(sys->net) : 0;
    g_autofree int *route = links ? g_new(int, maxr) : NULL;
    for (int k = 0; k < n; k++) {
        const struct vi_member *mk = &vi->m[k];
        if (mk->join != vi->t0 || mk->ph.algo != ALGO_RING || mk->ph.fast != p0->fast)
            return NULL;
        struct sv_net_lone l;
        sv_net_lone_message(sys->net, mk->npu, mk->ph.receiver, m, &l);
        if (k == 0)
            lone = l;
        else if (l.delay_ns != lone.delay_ns || l.busy_ns != lone.busy_ns ||
                 l.stat_links != lone.stat_links)
            return NULL;
        if (links) {
            int nl = sv_net_route_links(sys->net, mk->npu, mk->ph.receiver, route, NULL);
            for (int h = 0; h < nl; h++) {
                if (used[route[h]])
                    return NULL; /* two members' routes share a link */
                used[route[h]] = 1;
                g_array_append_val(lk, route[h]);
            }
        }
    }
    sv_time D = vi->D;
    sv_time R = 3 * mem_access_ns(sys, m);
    sv_time T = lone.delay_ns;
    /* a member's messages one after another on its route: each must have left every link
     * (busy) before the next enters (the next send is at least T + D later) */
    if (links && T + D <= lone.busy_ns)
        return NULL;
    struct vres *r = g_new0(struct vres, 1);
    r->refs = 1;
    r->n = n;
    r->uniform = TRUE;
    r->ubytes = m;
    r->nticks = (int)S;
    r->tick = g_new(sv_time, S > 0 ? S : 1);
    sv_time t = D; /* s_1 */
    for (int64_t k = 1; k <= S; k++) {
        r->tick[k - 1] = t + T;
        t += T + D + (ring_processed(p0, k) ? R : 0);
    }
    /* t is now the General after the last receipt: the end */
    r->span = t;
    r->end = g_new(sv_time, n);
    for (int k = 0; k < n; k++)
        r->end[k] = t;
    uint64_t msgs = (uint64_t)S * (uint64_t)n;
    r->stats.messages = msgs;
    r->stats.bytes_sent = msgs * m;
    r->stats.bytes_delivered = msgs * m;
    r->stats.link_transfers = msgs * (uint64_t)lone.stat_links;
    r->stats.link_bytes = msgs * m * (uint64_t)lone.stat_links;
    r->nlinks = (int)lk->len;
    r->links = (int *)g_array_free(g_steal_pointer(&lk), FALSE);
    /* held until every member's last message has left its route: flow, its finish; fifo, by
     * its arrival at the latest */
    sv_time last = S > 0 ? r->tick[S - 1] : 0;
    if (sv_net_get_model(sys->net) == SV_NET_MODEL_FLOW && S > 0)
        last = r->tick[S - 1] - T + lone.busy_ns;
    r->link_until = g_new(sv_time, r->nlinks > 0 ? r->nlinks : 1);
    for (int k = 0; k < r->nlinks; k++)
        r->link_until[k] = last + 1;
    return r;
}

/* ---- shadows: the phase alone, message by message ----------------------------------------- */

struct shadow {
    struct vinst *vi;
    sv_engine *eng;
    sv_net *net;
    sv_sys *sys;
    coll_stream **sb; /* per member (join order); NULL before its start and after its end */
    sv_time *end;     /* per member, -1 until it ends */
    sv_event_id *join_ev;
    GArray *deliv; /* struct shadow_deliv, when recording */
};

struct shadow_deliv {
    sv_time at;
    struct vmsg msg;
};

static void sh_observe(void *ctx, const struct sv_net_delivery *d)
{
    struct shadow *sh = ctx;
    struct shadow_deliv x = {d->now, {d->src, d->dst, d->bytes}};
    g_array_append_val(sh->deliv, x);
}

static void sh_done(sv_engine *eng, void *ctx, uint64_t arg)
{
    struct shadow *sh = ctx;
    sh->end[arg] = sv_engine_now(eng);
    sh->sb[arg] = NULL;
}

static void sh_join(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)eng;
    struct shadow *sh = ctx;
    const struct vi_member *mk = &sh->vi->m[arg];
    sh->sb[arg] =
        sv_sys__stream_start(&sh->sys->npu[mk->npu], &mk->ph, sh->vi->key.tag, sh_done, sh, arg);
}

static void shadow_free(struct shadow *sh)
{
    if (sh == NULL)
        return;
    sv_sys_free(sh->sys);
    sv_net_free(sh->net);
    sv_engine_free(sh->eng);
    if (sh->deliv != NULL)
        g_array_free(sh->deliv, TRUE);
    g_free(sh->sb);
    g_free(sh->end);
    g_free(sh->join_ev);
    g_free(sh);
}

/* A shadow of the phase's members (those that have started), on an engine whose time 0 is the
 * first start. `track`: its network records what is in flight (for materialize); `record`:
 * every delivery is kept (for a result). */
static struct shadow *shadow_new(struct vinst *vi, gboolean track, gboolean record)
{
    sv_sys *sys = vi->sys;
    struct shadow *sh = g_new0(struct shadow, 1);
    sh->vi = vi;
    sh->eng = sv_engine_new(0);
    sh->net = sv_net_new_shadow(sh->eng, sys->net, track);
    struct sv_sys_cfg cfg = sys->cfg;
    cfg.fast_collectives = FALSE;
    sh->sys = sv_sys__new_shadow(sh->net, &cfg);
    if (record) {
        sh->deliv = g_array_new(FALSE, FALSE, sizeof(struct shadow_deliv));
        sv_net_set_observer(sh->net, sh_observe, sh);
        sv_net_record_busy(sh->net);
    }
    sh->sb = g_new0(coll_stream *, vi->n);
    sh->end = g_new(sv_time, vi->n);
    for (int k = 0; k < vi->n; k++)
        sh->end[k] = -1;
    sh->join_ev = g_new0(sv_event_id, vi->n);
    for (int k = 0; k < vi->joined; k++)
        sh->join_ev[k] = sv_engine_schedule(sh->eng, vi->m[k].join - vi->t0, SV_PRIO_DEFAULT,
                                            sh_join, sh, (uint64_t)k);
    return sh;
}

/* The whole phase alone: when each member ends, every delivery, the statistics. NULL if a
 * member never ends (a phase that cannot finish alone: it then runs with messages). */
static struct vres *shadow_result(struct vinst *vi)
{
    sv_sys *sys = vi->sys;
    struct shadow *sh = shadow_new(vi, FALSE, TRUE);
    sv_engine_run(sh->eng, SV_TIME_MAX);
    for (int k = 0; k < vi->n; k++) {
        if (sh->end[k] < 0) {
            shadow_free(sh);
            return NULL;
        }
    }
    struct vres *r = g_new0(struct vres, 1);
    r->refs = 1;
    r->n = vi->n;
    r->end = g_new(sv_time, vi->n);
    for (int k = 0; k < vi->n; k++) {
        r->end[k] = sh->end[k];
        r->span = MAX(r->span, sh->end[k]);
    }
    GArray *dv = sh->deliv;
    r->msgs = g_new(struct vmsg, dv->len > 0 ? dv->len : 1);
    r->tick = g_new(sv_time, dv->len > 0 ? dv->len : 1);
    r->tick_first = g_new(int, dv->len + 1);
    for (guint i = 0; i < dv->len; i++) {
        const struct shadow_deliv *x = &g_array_index(dv, struct shadow_deliv, i);
        if (r->nticks == 0 || r->tick[r->nticks - 1] != x->at) {
            SV_ASSERT(r->nticks == 0 || r->tick[r->nticks - 1] < x->at);
            r->tick[r->nticks] = x->at;
            r->tick_first[r->nticks++] = (int)i;
        }
        r->msgs[i] = x->msg;
    }
    r->tick_first[r->nticks] = (int)dv->len;
    sv_net_get_stats(sh->net, &r->stats);
    links_used(sys, sh->net, 0, &r->links, &r->link_until, &r->nlinks);
    shadow_free(sh);
    return r;
}

/* The memo key of a phase: its members in start order, their start offsets and phase
 * parameters (the network and system configuration are the sys's own). */
static GBytes *memo_key(const struct vinst *vi)
{
    GByteArray *b = g_byte_array_new();
    for (int k = 0; k < vi->joined; k++) {
        const struct vi_member *mk = &vi->m[k];
        const struct coll_phase *ph = &mk->ph;
        int64_t v[] = {mk->npu,       mk->join - vi->t0, ph->algo,
                       ph->comm_type, ph->nodes,         ph->sender,
                       ph->receiver,  ph->fast,          (int64_t)ph->initial_size,
                       ph->base,      ph->stride,        ph->index,
                       ph->window,    ph->step,          ph->dbt_parent,
                       ph->dbt_left,  ph->dbt_right,     (int64_t)(intptr_t)ph->members};
        g_byte_array_append(b, (const guint8 *)v, sizeof v);
    }
    return g_byte_array_free_to_bytes(b);
}

#define MEMO_MAX 4096

static struct vres *compute(struct vinst *vi)
{
    sv_sys *sys = vi->sys;
    struct vres *r = ring_closed_form(vi);
    if (r != NULL) {
        sys->vstats.closed_form++;
        return r;
    }
    if (sys->memo == NULL)
        sys->memo = g_hash_table_new_full(
            g_bytes_hash, g_bytes_equal, (GDestroyNotify)g_bytes_unref, (GDestroyNotify)vres_unref);
    GBytes *key = memo_key(vi);
    r = g_hash_table_lookup(sys->memo, key);
    if (r != NULL) {
        g_bytes_unref(key);
        sys->vstats.memo_hits++;
        r->refs++;
        return r;
    }
    r = shadow_result(vi);
    sys->vstats.replayed++;
    if (r == NULL) {
        g_bytes_unref(key);
        return NULL;
    }
    if (g_hash_table_size(sys->memo) >= MEMO_MAX)
        g_hash_table_remove_all(sys->memo); /* bounded memory; shapes recur, they come back */
    r->refs++;
    g_hash_table_insert(sys->memo, key, r);
    return r;
}

/* ---- switching to messages ------------------------------------------------------------------ */

static void *remap_entry(void *ud, void *ctx)
{
    void *e = g_hash_table_lookup(ud, ctx);
    SV_ASSERT(e != NULL);
    return e;
}

struct pend {
    sv_time at;
    uint64_t order;
    const struct sv_net_pending *net; /* or a shadow batch, or a member's start */
    const struct ev_batch *batch;
    int join;
};

static gint pend_cmp(gconstpointer a, gconstpointer b)
{
    const struct pend *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order ? 1 : 0;
}

/* The algorithms' state of a stream: what their init sets and their events change. */
static void take_state(coll_stream *s, coll_stream *from)
{
    sv_sys__custom_clear(s);
    s->ring = from->ring;
    s->rot = from->rot;
    from->rot.pkts = NULL;
    s->dbt = from->dbt;
}

/* From now on the phase runs with messages, as if it always had: replay it alone up to the
 * current tick, then move what is pending there into the system and network.
 *
 * Where the cut falls within the current tick: after the phase's own events of this tick when
 * some of them already ran here (a member's end, an arrival reported to the observer), else
 * before them, so that the phase's sends of this tick go through the real network, behind the
 * traffic that is coming (and links need not be quiet: before its first send a phase has
 * nothing on them). */
static void materialize(struct vinst *vi, gboolean inclusive)
{
    sv_sys *sys = vi->sys;
    sv_time now = sv_engine_now(sys->eng);
    enum vi_state prev = vi->state;
    SV_ASSERT(prev != VI_REAL);
    vi->state = VI_REAL;
    if (vi->deadline != SV_EVENT_NONE) {
        sv_engine_cancel(sys->eng, vi->deadline);
        vi->deadline = SV_EVENT_NONE;
    }
    if (vi->watchdog != SV_EVENT_NONE) {
        sv_engine_cancel(sys->eng, vi->watchdog);
        vi->watchdog = SV_EVENT_NONE;
    }
    vi->tentative = FALSE;
    release_links(vi);
    if (prev == VI_VIRTUAL) {
        for (int k = 0; k < vi->n; k++)
            if (vi->m[k].ended && vi->t0 + vi->res->end[k] == now)
                inclusive = TRUE;
        for (int j = 0; vi->report_ev != NULL && j < vi->res->nticks; j++)
            if (vi->t0 + vi->res->tick[j] == now && vi->report_ev[j] == SV_EVENT_NONE)
                inclusive = TRUE;
    }
    sv_time cut = inclusive ? now : now - 1;

    if (vi->report_ev != NULL) {
        for (int j = 0; j < vi->res->nticks; j++) {
            if (vi->report_ev[j] != SV_EVENT_NONE && vi->t0 + vi->res->tick[j] > cut) {
                sv_engine_cancel(sys->eng, vi->report_ev[j]);
                vi->report_ev[j] = SV_EVENT_NONE;
                vi_unref(vi);
            }
        }
    }
    vi->refs++; /* until the end of this function */

    struct shadow *sh = shadow_new(vi, TRUE, FALSE);
    if (cut >= vi->t0)
        sv_engine_run(sh->eng, cut - vi->t0);
    g_autoptr(GHashTable) smap = g_hash_table_new(g_direct_hash, g_direct_equal);
    g_autoptr(GHashTable) emap = g_hash_table_new(g_direct_hash, g_direct_equal);
    for (int k = 0; k < vi->joined; k++) {
        struct vi_member *mk = &vi->m[k];
        if (mk->ended)
            continue;
        coll_stream *s = mk->s;
        coll_stream *b = sh->sb[k];
        if (b == NULL && sh->end[k] >= 0) {
            /* ended alone by the cut: its end, due now, runs as scheduled */
            SV_ASSERT(inclusive && vi->t0 + vi->res->end[k] == now && s->vi == vi);
            continue;
        }
        if (prev == VI_VIRTUAL) {
            vi->live--;
            vi_unref(vi); /* its end event is stale from now on */
        }
        s->vi = NULL;
        s->vi_gen = 0;
        if (b != NULL) {
            take_state(s, b);
            g_hash_table_insert(smap, b, s);
        }
    }
    sv_sys__p2p_adopt(sys, sh->sys, vi->t0, smap, emap);
    sv_net_adopt_links(sys->net, sh->net, vi->t0, remap_entry, emap);

    /* every pending event of the shadow, in the order it would have run */
    g_autoptr(GArray) np = sv_net_shadow_pending(sh->net);
    g_autoptr(GArray) all = g_array_new(FALSE, FALSE, sizeof(struct pend));
    for (guint i = 0; i < np->len; i++) {
        const struct sv_net_pending *p = &g_array_index(np, struct sv_net_pending, i);
        struct pend x = {p->at, p->order, p, NULL, -1};
        g_array_append_val(all, x);
    }
    for (int k = 0; k < vi->joined; k++) {
        const coll_npu *sn = &sh->sys->npu[vi->m[k].npu];
        for (guint i = 0; i < sn->nopen; i++) {
            const struct ev_batch *b = sn->open[i].b;
            struct pend x = {b->tick, sv_engine_event_order(sh->eng, b->eid), NULL, b, -1};
            SV_ASSERT(x.order != 0);
            g_array_append_val(all, x);
        }
        if (sv_engine_pending_event(sh->eng, sh->join_ev[k])) {
            struct pend x = {vi->m[k].join - vi->t0, sv_engine_event_order(sh->eng, sh->join_ev[k]),
                             NULL, NULL, k};
            g_array_append_val(all, x);
        }
    }
    SV_ASSERT(sv_engine_pending(sh->eng) <= all->len + 1); /* + flow's solver event */
    g_array_sort(all, pend_cmp);
    for (guint i = 0; i < all->len; i++) {
        const struct pend *x = &g_array_index(all, struct pend, i);
        SV_ASSERT(x->at + vi->t0 >= now);
        if (x->net != NULL) {
            sv_net_adopt_pending(sys->net, sh->net, x->net, vi->t0, remap_entry, emap);
            continue;
        }
        if (x->join >= 0) {
            /* a member that started in this tick, after the cut: it starts as usual */
            sv_sys__stream_algo_init(vi->m[x->join].s);
            continue;
        }
        const struct ev_batch *b = x->batch;
        coll_npu *npu = &sys->npu[b->npu->id];
        for (guint e = 0; e < b->nev; e++) {
            struct sys_ev ev = e < G_N_ELEMENTS(b->ev)
                                   ? b->ev[e]
                                   : g_array_index(b->more, struct sys_ev, e - G_N_ELEMENTS(b->ev));
            SV_ASSERT(ev.fn == sv_sys__bundle_call);
            coll_stream *s = g_hash_table_lookup(smap, ev.obj);
            SV_ASSERT(s != NULL);
            sv_sys__register_event(npu, ev.fn, s, ev.arg, b->tick + vi->t0 - now);
        }
    }
    struct sv_net_stats st;
    sv_net_get_stats(sh->net, &st);
    sv_net_add_stats(sys->net, &st);
    shadow_free(sh);
    if (vi->joined == vi->n)
        vi_untable(vi);
    vi_unref(vi);
}

/* ---- a phase's life ----------------------------------------------------------------------- */

static void finish(struct vinst *vi)
{
    sv_sys *sys = vi->sys;
    sv_net_add_stats(sys->net, &vi->res->stats);
    sys->vstats.messages += vi->res->stats.messages;
    release_links(vi);
}

/* A member's end: what Ring::exit (and the others' last step) does. */
static void virt_end(sv_sys *sys, void *obj, uint64_t arg)
{
    (void)sys;
    coll_stream *s = obj;
    struct vinst *vi = s->vi;
    if (vi == NULL || s->vi_gen != (uint32_t)arg)
        return; /* switched to messages since */
    s->vi = NULL;
    vi->m[s->vi_idx].ended = TRUE;
    if (--vi->live == 0 && vi->state == VI_VIRTUAL)
        finish(vi);
    vi_unref(vi);
    sv_sys__proceed_to_next_vnet(s->owner, s);
}

static void report(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)eng;
    struct vinst *vi = ctx;
    const struct vres *r = vi->res;
    int j = (int)arg;
    vi->report_ev[j] = SV_EVENT_NONE;
    if (r->uniform) {
        for (int k = 0; k < vi->n; k++)
            sv_net_report(vi->sys->net, vi->m[k].ph.sender, vi->m[k].npu, r->ubytes);
    } else {
        for (int i = r->tick_first[j]; i < r->tick_first[j + 1]; i++)
            sv_net_report(vi->sys->net, r->msgs[i].src, r->msgs[i].dst, r->msgs[i].bytes);
    }
    vi_unref(vi);
}

static void commit(struct vinst *vi)
{
    sv_sys *sys = vi->sys;
    sv_time now = sv_engine_now(sys->eng);

    if (vi->deadline != SV_EVENT_NONE) {
        sv_engine_cancel(sys->eng, vi->deadline);
        vi->deadline = SV_EVENT_NONE;
    }
    vi->res = compute(vi);
    gboolean held = FALSE;
    if (vi->res != NULL) {
        const struct vres *r = vi->res;
        g_autofree sv_time *until = g_new(sv_time, r->nlinks > 0 ? r->nlinks : 1);
        for (int k = 0; k < r->nlinks; k++)
            until[k] = vi->t0 + r->link_until[k];
        held = hold_links(vi, r->links, until, r->nlinks);
    }
    if (!held) {
        sys->vstats.gave_up++;
        materialize(vi, FALSE);
        return;
    }
    const struct vres *r = vi->res;
    vi->state = VI_VIRTUAL;

    if (sv_net_observed(sys->net) && r->nticks > 0) {
        vi->report_ev = g_new(sv_event_id, r->nticks);
        for (int j = 0; j < r->nticks; j++) {
            vi->report_ev[j] = sv_engine_schedule(sys->eng, vi->t0 + r->tick[j], SV_PRIO_DEFAULT,
                                                  report, vi, (uint64_t)j);
            vi->refs++;
        }
    }
    vi->live = vi->n;
    for (int k = 0; k < vi->n; k++) {
        coll_stream *s = vi->m[k].s;
        sv_time at = vi->t0 + r->end[k];
        SV_ASSERT(at >= now && s->vi == vi);
        s->vi_gen = ++sys->vi_gen;
        if (s->vi_gen == 0)
            s->vi_gen = ++sys->vi_gen;
        vi->refs++;
        sv_sys__register_event(s->owner, virt_end, s, s->vi_gen, at - now);
    }
}

static void on_watchdog(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)eng;
    (void)arg;
    struct vinst *vi = ctx;
    vi->watchdog = SV_EVENT_NONE;
    SV_ASSERT(vi->state == VI_GATHER && vi->tentative);
    /* The members that started have done all they can without the others (the event keeps the
     * run's clock going to here, as their last message would): nothing is on their links any
     * more until another member starts. A run that ends here cannot finish: sv_sys_settle. */
    vi->tentative = FALSE;
    release_links(vi);
}

/* Run the started members alone and hold their links to the stall; FALSE when that is not
 * possible (see tentative). */
static gboolean try_tentative(struct vinst *vi)
{
    sv_sys *sys = vi->sys;
    sv_time now = sv_engine_now(sys->eng);

    if (sv_net_observed(sys->net))
        return FALSE;
    struct shadow *sh = shadow_new(vi, FALSE, TRUE);
    sv_engine_run(sh->eng, SV_TIME_MAX);
    sv_time stall = vi->t0 + sv_engine_now(sh->eng);
    gboolean ended = FALSE;
    for (int k = 0; k < vi->joined; k++)
        ended = ended || sh->end[k] >= 0;
    g_autofree int *links = NULL;
    g_autofree sv_time *until = NULL;
    int nlinks = 0;
    links_used(sys, sh->net, vi->t0, &links, &until, &nlinks);
    shadow_free(sh);
    /* a member that ends without the others: not worth the care */
    if (ended)
        return FALSE;
    if (stall < now)
        return TRUE; /* they wait already (posted receives at most): nothing to hold */
    if (!hold_links(vi, links, until, nlinks))
        return FALSE;
    vi->tentative = TRUE;
    vi->watchdog = sv_engine_schedule(sys->eng, stall, SV_PRIO_DEFAULT, on_watchdog, vi, 0);
    return TRUE;
}

/* Some members have not started by the time the first would send. Those that have run alone
 * (a shadow, to where they stall waiting for the others), holding the links they use until
 * then: a member that starts later re-runs it, the last one commits as usual. With an observer
 * (power) the phase switches to messages instead: its reports would have to be rescheduled at
 * every start. */
static void tentative(struct vinst *vi)
{
    if (try_tentative(vi))
        return;
    vi->sys->vstats.gave_up++;
    materialize(vi, FALSE);
}

static void on_deadline(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)eng;
    (void)arg;
    struct vinst *vi = ctx;
    vi->deadline = SV_EVENT_NONE;
    if (vi->state != VI_GATHER)
        return;
    tentative(vi);
}

gboolean sv_sys__virt_join(coll_stream *s)
{
    sv_sys *sys = s->owner->sys;
    const struct coll_phase *ph = &s->cur;
    if (!sys->cfg.fast_collectives || ph->algo == ALGO_CUSTOM || ph->nodes < 2)
        return FALSE;
    struct vi_key key = {
        .tag = s->stream_id,
        .phase = (int)s->next_phase - 1,
        .base = ph->members != NULL ? 0 : ph->base,
        .stride = ph->members != NULL ? 0 : ph->stride,
        .nodes = ph->nodes,
        .type = ph->comm_type,
        .size = ph->initial_size,
        .members = ph->members,
    };
    if (sys->vinsts == NULL) {
        sys->vinsts = g_hash_table_new(key_hash, key_equal);
        sys->vi_live = g_hash_table_new(g_direct_hash, g_direct_equal);
    }
    sv_time now = sv_engine_now(sys->eng);
    struct vinst *vi = g_hash_table_lookup(sys->vinsts, &key);
    if (vi == NULL) {
        vi = g_new0(struct vinst, 1);
        vi->sys = sys;
        vi->key = key;
        vi->state = VI_GATHER;
        vi->n = ph->nodes;
        vi->m = g_new0(struct vi_member, vi->n);
        vi->t0 = now;
        vi->D = stream_delay(sys, s);
        vi->refs = 1; /* the table's */
        vi->in_table = TRUE;
        g_hash_table_insert(sys->vinsts, &vi->key, vi);
        g_hash_table_add(sys->vi_live, vi);
        /* every member must start before the first one would send */
        vi->deadline =
            sv_engine_schedule(sys->eng, now + vi->D, SV_PRIO_DEFAULT, on_deadline, vi, 0);
    }
    SV_ASSERT(vi->joined < vi->n);
    int k = vi->joined++;
    vi->m[k] = (struct vi_member){.s = s, .npu = s->owner->id, .join = now, .ph = *ph};
    if (vi->state == VI_REAL) {
        /* switched to messages before this member started: it starts as usual */
        if (vi->joined == vi->n)
            vi_untable(vi);
        return FALSE;
    }
    s->vi = vi;
    s->vi_idx = k;
    s->vi_gen = 0;
    vi->refs++; /* until the end of this function */
    if (vi->deadline == SV_EVENT_NONE) {
        /* past the first member's first send: the members that started so far ran alone (and
         * may have stalled since); start over with this one, holding the links again */
        if (vi->tentative) {
            sv_engine_cancel(sys->eng, vi->watchdog);
            vi->watchdog = SV_EVENT_NONE;
            vi->tentative = FALSE;
            release_links(vi);
        }
        if (vi->joined < vi->n)
            tentative(vi);
    }
    if (vi->joined == vi->n) {
        if (vi->state == VI_GATHER)
            commit(vi);
        vi_untable(vi);
    }
    vi_unref(vi);
    return TRUE;
}

void sv_sys__virt_free_all(sv_sys *sys)
{
    const struct sv_sys_virt_stats *v = &sys->vstats;
    if (v->closed_form + v->replayed + v->memo_hits + v->gave_up > 0)
        g_debug("system: collective phases without messages: %" G_GUINT64_FORMAT
                " closed form, %" G_GUINT64_FORMAT " replayed alone, %" G_GUINT64_FORMAT
                " memo hits; %" G_GUINT64_FORMAT
                " switched to messages (contention), %" G_GUINT64_FORMAT
                " ran with messages (late start or busy links); %" G_GUINT64_FORMAT
                " messages not sent",
                v->closed_form, v->replayed, v->memo_hits, v->contended, v->gave_up, v->messages);
    if (sys->vi_live != NULL) {
        GHashTableIter it;
        gpointer key;
        g_hash_table_iter_init(&it, sys->vi_live);
        while (g_hash_table_iter_next(&it, &key, NULL)) {
            struct vinst *vi = key;
            if (vi->deadline != SV_EVENT_NONE)
                sv_engine_cancel(sys->eng, vi->deadline);
            if (vi->watchdog != SV_EVENT_NONE)
                sv_engine_cancel(sys->eng, vi->watchdog);
            g_free(vi->held);
            if (vi->report_ev != NULL)
                for (int j = 0; j < vi->res->nticks; j++)
                    if (vi->report_ev[j] != SV_EVENT_NONE)
                        sv_engine_cancel(sys->eng, vi->report_ev[j]);
            vres_unref(vi->res);
            g_free(vi->report_ev);
            g_free(vi->m);
            g_free(vi);
        }
        g_hash_table_destroy(sys->vi_live);
    }
    if (sys->vinsts != NULL)
        g_hash_table_destroy(sys->vinsts);
    if (sys->memo != NULL)
        g_hash_table_destroy(sys->memo);
    if (sys->holders != NULL) {
        int nl = sv_net_num_links(sys->net);
        for (int l = 0; l < nl; l++)
            if (sys->holders[l] != NULL)
                g_array_free(sys->holders[l], TRUE);
        g_free(sys->holders);
    }
}

static gint vi_start_cmp(gconstpointer a, gconstpointer b)
{
    const struct vinst *x = *(struct vinst *const *)a, *y = *(struct vinst *const *)b;
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    const struct vi_key *p = &x->key, *q = &y->key;
    if (p->tag != q->tag)
        return p->tag < q->tag ? -1 : 1;
    if (p->phase != q->phase)
        return p->phase < q->phase ? -1 : 1;
    if (x->m[0].npu != y->m[0].npu)
        return x->m[0].npu < y->m[0].npu ? -1 : 1;
    return 0;
}

void sv_sys_settle(sv_sys *sys)
{
    if (sys->vinsts == NULL)
        return;
    g_autoptr(GPtrArray) wait = g_ptr_array_new();
    GHashTableIter it;
    gpointer key, val;
    g_hash_table_iter_init(&it, sys->vinsts);
    while (g_hash_table_iter_next(&it, &key, &val)) {
        struct vinst *vi = val;
        if (vi->state == VI_GATHER)
            g_ptr_array_add(wait, vi);
    }
    g_ptr_array_sort(wait, vi_start_cmp); /* not the table's order */
    for (guint i = 0; i < wait->len; i++)
        materialize(g_ptr_array_index(wait, i), TRUE);
}

void sv_sys_set_fast_collectives(sv_sys *sys, gboolean fast)
{
    SV_ASSERT(sys->vinsts == NULL || g_hash_table_size(sys->vinsts) == 0);
    sys->cfg.fast_collectives = fast;
}

void sv_sys_get_virt_stats(const sv_sys *sys, struct sv_sys_virt_stats *out)
{
    *out = sys->vstats;
}
