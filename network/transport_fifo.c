/* fifo timing model = ASTRA-sim's congestion-aware analytical backend (astra-network-analytical
 * congestion_aware/Link.cpp, Chunk.cpp, Device.cpp; CHAKRA_ET.md 3.6).
 *
 * A message is one chunk carrying its destination; its route is recomputed hop by hop with
 * sv_net__geom_next_link, which yields the same links as ASTRA-sim's precomputed route (the
 * shorter ring direction never flips along the way). Each directed link is a FIFO with a busy
 * flag. Starting a transmission schedules, in this order, (1) the arrival at the next device at
 * now + trunc(L + bytes/B) and (2) the link becoming free at now + trunc(bytes/B): ASTRA-sim's
 * event queue runs same-tick callbacks in insertion order and our engine orders same-time,
 * same-priority events by insertion sequence, so the interleavings match. Store-and-forward: the
 * whole message must arrive before it is sent on the next link.
 *
 * The link-free event (2) only clears the busy flag unless a chunk is queued by then, which is
 * the rare case (never in a ring collective, where each link carries one message at a time): it
 * is taken as an engine mark (sv_engine_mark) and scheduled at the mark's place only when a
 * chunk finds the link busy. Whether the link is still busy is then exactly whether that event
 * would have run yet (sv_core__engine_mark_passed), so every order and time is as with the event.
 */
#include "network/network_internal.h"

static void link_transmit(sv_net *net, int link, struct sv_net_chunk *c);

void sv_net__fifo_init(sv_net *net)
{
    net->fifo_links = g_new0(struct sv_net_fifo_link, net->geom.nlinks);
    for (int l = 0; l < net->geom.nlinks; l++) {
        net->fifo_links[l].state = SV_NET_FIFO_FREE;
        net->fifo_links[l].head = NULL;
        net->fifo_links[l].tail = NULL;
    }
}

void sv_net__fifo_clear(sv_net *net)
{
    g_clear_pointer(&net->fifo_links, g_free);
}

static void on_link_free(sv_engine *eng, void *ctx, uint64_t arg);

/* ASTRA-sim Link::send: enqueue when busy, transmit at once otherwise. */
static void link_send(sv_net *net, int link, struct sv_net_chunk *c)
{
    sv_net__enter_link(net, link);
    struct sv_net_fifo_link *fl = &net->fifo_links[link];
    if (fl->state == SV_NET_FIFO_BUSY_MARK && sv_core__engine_mark_passed(net->eng, &fl->free_at))
        fl->state = SV_NET_FIFO_FREE; /* its link-free event would have run, with nothing queued */
    if (fl->state == SV_NET_FIFO_FREE) {
        link_transmit(net, link, c);
        return;
    }
    if (fl->state == SV_NET_FIFO_BUSY_MARK) {
        /* the link-free event now has work: schedule it where it would have been */
        fl->free_ev =
            sv_engine_schedule_at_mark(net->eng, &fl->free_at, on_link_free, net, (uint64_t)link);
        fl->state = SV_NET_FIFO_BUSY_EVENT;
    }
    c->next = NULL;
    if (fl->tail != NULL)
        fl->tail->next = c;
    else
        fl->head = c;
    fl->tail = c;
}

/* Chunk::chunk_arrived_next_device: at the destination run the callback, else forward. */
static void on_chunk_arrived(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)eng;
    (void)arg;
    struct sv_net_chunk *c = ctx; /* the record itself: the engine prefetched it */
    if (G_UNLIKELY(c->net->track))
        sv_net__untrack(c->net, c);
    if (c->cur_dev == c->dst) {
        sv_net__chunk_deliver(c);
        return;
    }
    sv_net *net = c->net;
    link_send(net, sv_net__geom_next_link_src(&net->geom, c->src, c->cur_dev, c->dst), c);
}

/* Link::link_become_free: free, then serve the oldest pending chunk. */
static void on_link_free(sv_engine *eng, void *ctx, uint64_t arg)
{
    sv_net *net = ctx;
    struct sv_net_fifo_link *fl = &net->fifo_links[arg];
    fl->state = SV_NET_FIFO_FREE;
    struct sv_net_chunk *c = fl->head;
    if (c == NULL)
        return;
    fl->head = c->next;
    if (fl->head == NULL)
        fl->tail = NULL;
    link_transmit(net, (int)arg, c);
}

/* Link::schedule_chunk_transmission. */
static void link_transmit(sv_net *net, int link, struct sv_net_chunk *c)
{
    struct sv_net_fifo_link *fl = &net->fifo_links[link];
    const struct sv_net_link *L = &net->geom.links[link];
    SV_ASSERT(fl->state == SV_NET_FIFO_FREE);
    double serialization = (double)c->bytes / L->bw_bpns;
    sv_time comm = sv_time_from_ns(L->lat_ns + serialization);
    sv_time ser = sv_time_from_ns(serialization);
    c->cur_dev = L->dst_dev; /* the device it will be at when the arrival event fires */
    c->next = NULL;
    net->stats.link_bytes += c->bytes;
    net->stats.link_transfers++;
    sv_event_id arr =
        sv_engine_schedule_in(net->eng, comm, SV_PRIO_DEFAULT, on_chunk_arrived, c, 0);
    if (G_UNLIKELY(net->track))
        sv_net__track(net, c, sv_engine_now(net->eng) + comm, arr, SV_NET__TRACK_ARRIVAL);
    sv_time free_at = sv_engine_now(net->eng) + ser;
    fl->free_time = free_at;
    sv_net__note_busy(net, link, free_at);
    /* with chunks still queued the link-free event has work: schedule it for real */
    if (fl->head == NULL && sv_engine_mark(net->eng, free_at, SV_PRIO_DEFAULT, &fl->free_at)) {
        fl->state = SV_NET_FIFO_BUSY_MARK;
    } else {
        fl->free_ev = sv_engine_schedule(net->eng, free_at, SV_PRIO_DEFAULT, on_link_free, net,
                                         (uint64_t)link);
        fl->state = SV_NET_FIFO_BUSY_EVENT;
    }
}

void sv_net__fifo_send(sv_net *net, int src, int dst, uint64_t bytes, sv_net_done_fn done,
                       void *ctx, uint64_t arg)
{
    struct sv_net_chunk *c = sv_net__chunk_alloc(net, src, dst, bytes, done, ctx, arg);
    link_send(net, sv_net__geom_next_link_src(&net->geom, src, src, dst), c);
}

/* ---- adoption from a shadow (network/shadow.c) ---------------------------------------------- */

gboolean sv_net__fifo_link_quiet(const sv_net *net, int link)
{
    const struct sv_net_fifo_link *fl = &net->fifo_links[link];
    if (fl->head != NULL)
        return FALSE;
    return fl->state == SV_NET_FIFO_FREE || (fl->state == SV_NET_FIFO_BUSY_MARK &&
                                             sv_core__engine_mark_passed(net->eng, &fl->free_at));
}

static struct sv_net_chunk *adopt_chunk(sv_net *net, const struct sv_net_chunk *o,
                                        sv_net_remap_fn remap, void *ud)
{
    struct sv_net_chunk *c = sv_net__chunk_alloc(net, o->src, o->dst, o->bytes, o->done,
                                                 o->ctx != NULL ? remap(ud, o->ctx) : NULL, o->arg);
    c->cur_dev = o->cur_dev;
    return c;
}

/* A shadow link busy past the shadow's present stays busy until then here: with chunks queued
 * its link-free event follows among the pending events (sv_net__fifo_adopt_link_free), else a
 * mark stands for it. */
void sv_net__fifo_adopt_links(sv_net *net, sv_net *shadow, sv_time shift, sv_net_remap_fn remap,
                              void *ud)
{
    sv_time now = sv_engine_now(net->eng);
    for (int l = 0; l < shadow->geom.nlinks; l++) {
        const struct sv_net_fifo_link *sl = &shadow->fifo_links[l];
        struct sv_net_fifo_link *fl = &net->fifo_links[l];
        if (sl->state == SV_NET_FIFO_FREE)
            continue;
        if (sl->state == SV_NET_FIFO_BUSY_MARK && sl->free_time + shift <= now) {
            SV_ASSERT(sl->head == NULL);
            continue;
        }
        SV_ASSERT(sv_net__fifo_link_quiet(net, l));
        fl->free_time = sl->free_time + shift;
        if (sl->state == SV_NET_FIFO_BUSY_EVENT) {
            fl->state = SV_NET_FIFO_BUSY_EVENT; /* its event comes with the pending ones */
            fl->free_ev = SV_EVENT_NONE;
            for (const struct sv_net_chunk *q = sl->head; q != NULL; q = q->next) {
                struct sv_net_chunk *c = adopt_chunk(net, q, remap, ud);
                c->next = NULL;
                if (fl->tail != NULL)
                    fl->tail->next = c;
                else
                    fl->head = c;
                fl->tail = c;
            }
        } else {
            SV_ASSERT(fl->free_time > now);
            gboolean ok = sv_engine_mark(net->eng, fl->free_time, SV_PRIO_DEFAULT, &fl->free_at);
            SV_ASSERT(ok);
            fl->state = SV_NET_FIFO_BUSY_MARK;
        }
    }
}

void sv_net__fifo_adopt_arrival(sv_net *net, const struct sv_net__tracked *t, sv_time shift,
                                sv_net_remap_fn remap, void *ud)
{
    struct sv_net_chunk *c = adopt_chunk(net, t->c, remap, ud);
    sv_engine_schedule(net->eng, t->at + shift, SV_PRIO_DEFAULT, on_chunk_arrived, c, 0);
}

void sv_net__fifo_adopt_link_free(sv_net *net, int link, sv_time at)
{
    struct sv_net_fifo_link *fl = &net->fifo_links[link];
    SV_ASSERT(fl->state == SV_NET_FIFO_BUSY_EVENT && fl->free_ev == SV_EVENT_NONE &&
              fl->free_time == at);
    fl->free_ev =
        sv_engine_schedule(net->eng, at, SV_PRIO_DEFAULT, on_link_free, net, (uint64_t)link);
}
