/* What the system layer needs to run a collective without its messages (system/virtual.c,
 * docs/collectives.md "Closed form"): the time of a message alone on its route, watches on the
 * links a collective holds, statistics and observer reports of messages it did not send, and
 * shadow networks whose messages in flight can be moved into the real one. */
#include "network/network_internal.h"

#include <math.h>

/* ---- a message alone on its route ----------------------------------------------------------
 *
 * Each model's own arithmetic, term for term, so that the result is the one sv_net_send gives
 * the same message when no other traffic shares its links (tests/system/test_virtual.c compares
 * the two for every model and topology). */

void sv_net_lone_message(const sv_net *net, int src, int dst, uint64_t bytes,
                         struct sv_net_lone *out)
{
    const struct sv_net_geom *g = &net->geom;
    SV_ASSERT(src != dst && src >= 0 && dst >= 0 && src < g->npus && dst < g->npus);
    out->busy_ns = 0;
    switch (net->model) {
    case SV_NET_MODEL_ANALYTICAL: {
        if (g->graph != NULL) {
            double lat = 0;
            double bw = sv_net__graph_route_min_bw(g, src, dst, &lat);
            sv_net__graph_route(g, src, dst, &out->stat_links);
            out->delay_ns = sv_time_from_ns(lat + (double)bytes / bw);
            return;
        }
        int d = sv_net__geom_first_diff_dim(g, src, dst);
        int hops = sv_net__geom_dim_hops(g, d, sv_net__geom_coord(g, src, d),
                                         sv_net__geom_coord(g, dst, d));
        const struct sv_net_link *ll = sv_net__geom_line_link(g, d, src);
        out->delay_ns = sv_time_from_ns(hops * ll->lat_ns + (double)bytes / ll->bw_bpns);
        out->stat_links = hops;
        return;
    }
    case SV_NET_MODEL_IDEAL: {
        double lat = 0;
        out->stat_links = sv_net__geom_route(g, src, dst, NULL, &lat);
        out->delay_ns = sv_time_from_ns(lat);
        return;
    }
    case SV_NET_MODEL_FIFO: {
        /* store-and-forward: per hop trunc(L + bytes/B), the link busy trunc(bytes/B) */
        sv_time delay = 0, busy = 0;
        int nl = 0;
        for (int cur = src; cur != dst; nl++) {
            int l = sv_net__geom_next_link_src(g, src, cur, dst);
            const struct sv_net_link *L = &g->links[l];
            double ser = (double)bytes / L->bw_bpns;
            delay += sv_time_from_ns(L->lat_ns + ser);
            busy = MAX(busy, sv_time_from_ns(ser));
            cur = L->dst_dev;
        }
        out->delay_ns = delay;
        out->busy_ns = busy;
        out->stat_links = nl;
        return;
    }
    case SV_NET_MODEL_FLOW: {
        double lat = 0;
        double rate = INFINITY;
        int nl = 0;
        for (int cur = src; cur != dst; nl++) {
            int l = sv_net__geom_next_link_src(g, src, cur, dst);
            rate = MIN(rate, g->links[l].bw_bpns); /* the lone flow's max-min share */
            cur = g->links[l].dst_dev;
        }
        sv_net__geom_route(g, src, dst, NULL, &lat);
        out->stat_links = nl;
        if (bytes == 0) {
            out->delay_ns = sv_time_from_ns(lat);
            return;
        }
        /* flow.c: finish = floor(rem / rate + tol), arrival = trunc(rem / rate + latencies),
         * no earlier than the finish */
        sv_time fin = sv_time_from_ns((double)bytes / rate + SV_NET_FLOW_TOL_NS);
        sv_time at = sv_time_from_ns((double)bytes / rate + lat);
        out->delay_ns = MAX(at, fin);
        out->busy_ns = fin;
        return;
    }
    }
    g_assert_not_reached();
}

int sv_net_num_links(const sv_net *net)
{
    return net->geom.nlinks;
}

gboolean sv_net_link_quiet(const sv_net *net, int link)
{
    SV_ASSERT(link >= 0 && link < net->geom.nlinks);
    switch (net->model) {
    case SV_NET_MODEL_FIFO:
        return sv_net__fifo_link_quiet(net, link);
    case SV_NET_MODEL_FLOW:
        return sv_net__flow_link_quiet(net, link);
    default:
        return TRUE;
    }
}

/* ---- watches ---------------------------------------------------------------------------- */

void sv_net_set_contend_handler(sv_net *net, sv_net_contend_fn fn, void *ctx)
{
    net->contend = fn;
    net->contend_ctx = ctx;
}

void sv_net_watch_link(sv_net *net, int link, sv_time until_ns)
{
    SV_ASSERT(link >= 0 && link < net->geom.nlinks);
    SV_ASSERT(net->contend != NULL || until_ns == 0);
    if (net->watch_until == NULL) {
        if (until_ns == 0)
            return;
        net->watch_until = g_new0(sv_time, net->geom.nlinks);
    }
    net->watch_until[link] = until_ns;
}

/* ---- statistics and observer ------------------------------------------------------------- */

void sv_net_add_stats(sv_net *net, const struct sv_net_stats *add)
{
    net->stats.messages += add->messages;
    net->stats.bytes_sent += add->bytes_sent;
    net->stats.link_bytes += add->link_bytes;
    net->stats.link_transfers += add->link_transfers;
    net->stats.bytes_delivered += add->bytes_delivered;
}

gboolean sv_net_observed(const sv_net *net)
{
    return net->observer != NULL;
}

void sv_net_report(sv_net *net, int src, int dst, uint64_t bytes)
{
    if (net->observer == NULL || bytes == 0)
        return;
    struct sv_net_delivery d = {
        .src = src, .dst = dst, .bytes = bytes, .now = sv_engine_now(net->eng)};
    net->observer(net->observer_ctx, &d);
}

/* ---- shadows -------------------------------------------------------------------------------- */

void sv_net_record_busy(sv_net *net)
{
    if (net->busy_until == NULL)
        net->busy_until = g_new0(sv_time, net->geom.nlinks);
}

const sv_time *sv_net_busy_until(const sv_net *net)
{
    return net->busy_until;
}

sv_net *sv_net_new_shadow(sv_engine *eng, const sv_net *like, gboolean track)
{
    GError *error = NULL;
    sv_net *net =
        like->geom.graph != NULL
            ? sv_net__new_any(eng, NULL, like->geom.graph, like, like->model, TRUE, &error)
            : sv_net__new(eng, &like->geom.cfg, like->model, TRUE, &error);
    SV_ASSERT(net != NULL); /* the topology of a network that exists */
    if (track) {
        net->track = TRUE;
        net->tracked = g_array_new(FALSE, FALSE, sizeof(struct sv_net__tracked));
    }
    return net;
}

static uint64_t track_key(const struct sv_net_chunk *c)
{
    return sv_hash_mix64((uint64_t)(uintptr_t)c);
}

void sv_net__track(sv_net *net, struct sv_net_chunk *c, sv_time at, sv_event_id eid, int kind)
{
    struct sv_net__tracked t = {.c = c, .at = at, .eid = eid, .kind = kind, .live = TRUE};
    g_array_append_val(net->tracked, t);
    sv_u64map_put(&net->track_idx, track_key(c), net->tracked->len);
}

void sv_net__untrack(sv_net *net, struct sv_net_chunk *c)
{
    uint64_t k = track_key(c);
    uint64_t i = sv_u64map_get(&net->track_idx, k, 0);
    if (i == 0)
        return;
    g_array_index(net->tracked, struct sv_net__tracked, i - 1).live = FALSE;
    sv_u64map_remove(&net->track_idx, k);
}

enum { PENDING_TRACKED, PENDING_LINK_FREE };

GArray *sv_net_shadow_pending(sv_net *shadow)
{
    SV_ASSERT(shadow->track);
    GArray *out = g_array_new(FALSE, FALSE, sizeof(struct sv_net_pending));
    for (guint i = 0; i < shadow->tracked->len; i++) {
        const struct sv_net__tracked *t =
            &g_array_index(shadow->tracked, struct sv_net__tracked, i);
        if (!t->live)
            continue;
        struct sv_net_pending p = {.at = t->at,
                                   .order = sv_engine_event_order(shadow->eng, t->eid),
                                   .kind = PENDING_TRACKED,
                                   .idx = (int)i};
        SV_ASSERT(p.order != 0);
        g_array_append_val(out, p);
    }
    if (shadow->model == SV_NET_MODEL_FIFO) {
        for (int l = 0; l < shadow->geom.nlinks; l++) {
            const struct sv_net_fifo_link *fl = &shadow->fifo_links[l];
            if (fl->state != SV_NET_FIFO_BUSY_EVENT)
                continue;
            struct sv_net_pending p = {.at = fl->free_time,
                                       .order = sv_engine_event_order(shadow->eng, fl->free_ev),
                                       .kind = PENDING_LINK_FREE,
                                       .idx = l};
            SV_ASSERT(p.order != 0);
            g_array_append_val(out, p);
        }
    }
    return out;
}

void sv_net_adopt_links(sv_net *net, sv_net *shadow, sv_time shift, sv_net_remap_fn remap, void *ud)
{
    SV_ASSERT(shadow->track && shadow->model == net->model &&
              shadow->geom.nlinks == net->geom.nlinks);
    if (net->model == SV_NET_MODEL_FIFO)
        sv_net__fifo_adopt_links(net, shadow, shift, remap, ud);
    else if (net->model == SV_NET_MODEL_FLOW)
        sv_net__flow_adopt(net, shadow, shift, remap, ud);
}

void sv_net_adopt_pending(sv_net *net, sv_net *shadow, const struct sv_net_pending *p,
                          sv_time shift, sv_net_remap_fn remap, void *ud)
{
    if (p->kind == PENDING_LINK_FREE) {
        sv_net__fifo_adopt_link_free(net, p->idx, p->at + shift);
        return;
    }
    const struct sv_net__tracked *t =
        &g_array_index(shadow->tracked, struct sv_net__tracked, p->idx);
    SV_ASSERT(t->live);
    const struct sv_net_chunk *c = t->c;
    if (t->kind == SV_NET__TRACK_ARRIVAL) {
        sv_net__fifo_adopt_arrival(net, t, shift, remap, ud);
        return;
    }
    sv_net__schedule_delivery(net, t->at + shift, c->src, c->dst, c->bytes, c->done,
                              c->ctx != NULL ? remap(ud, c->ctx) : NULL, c->arg);
}
