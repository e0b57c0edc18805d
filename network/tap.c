/* Passive taps on the messages of sv_net_send (network.h "passive taps"; docs/trace.md).
 *
 * With a tap, a message's arrival callback is wrapped in a pooled record that remembers what the
 * tap reports at delivery (send time, label, id); the model sees the same send, the same events
 * and the same callback at the same time, run right after the taps. Without a tap nothing here
 * runs. Routes are recomputed at delivery (dimension-ordered, so the same links) rather than
 * stored per message. */
#include "network/network_internal.h"

struct sv_net__tapped {
    sv_net *net;
    struct sv_net__tapped *next; /* free list */
    uint64_t id;
    int src, dst;
    uint64_t bytes;
    sv_time sent_ns;
    sv_net_msg_kind kind;
    const char *name;
    sv_net_done_fn done;
    void *ctx;
    uint64_t arg;
};

const char *sv_net_msg_kind_name(sv_net_msg_kind kind)
{
    switch (kind) {
    case SV_NET_MSG_OTHER:
        return "other";
    case SV_NET_MSG_SEND:
        return "send";
    case SV_NET_MSG_COLLECTIVE:
        return "collective";
    case SV_NET_MSG_TRANSFER:
        return "transfer";
    }
    return "other";
}

void sv_net_tap_add(sv_net *net, const struct sv_net_tap *tap)
{
    SV_ASSERT(net != NULL && tap != NULL);
    if (net->taps == NULL) {
        net->taps = g_array_new(FALSE, FALSE, sizeof(struct sv_net_tap));
        net->tap_slabs = g_ptr_array_new_with_free_func(g_free);
        net->tap_slab_used = SV_NET_CHUNK_SLAB;
        net->tap_route = g_new(int, MAX(1, net->geom.max_route_links));
    }
    g_array_append_val(net->taps, *tap);
}

void sv_net__tap_clear(sv_net *net)
{
    if (net->taps == NULL)
        return;
    g_array_free(net->taps, TRUE);
    g_ptr_array_free(net->tap_slabs, TRUE);
    g_free(net->tap_route);
    net->taps = NULL;
}

void sv_net_link_ends(const sv_net *net, int link, int *src_dev, int *dst_dev, int *dim)
{
    const struct sv_net_geom *g = &net->geom;
    SV_ASSERT(link >= 0 && link < g->nlinks);
    if (src_dev != NULL)
        *src_dev = g->links[link].src_dev;
    if (dst_dev != NULL)
        *dst_dev = g->links[link].dst_dev;
    if (dim != NULL) {
        int d = 0;
        while (d + 1 < g->cfg.ndims && link >= g->link_base[d + 1])
            d++;
        *dim = d;
    }
}

static void fill_msg(sv_net *net, const struct sv_net__tapped *t, struct sv_net_tap_msg *m)
{
    double lat = 0;
    *m = (struct sv_net_tap_msg){.id = t->id,
                                 .src = t->src,
                                 .dst = t->dst,
                                 .bytes = t->bytes,
                                 .sent_ns = t->sent_ns,
                                 .kind = t->kind,
                                 .name = t->name,
                                 .links = net->tap_route};
    m->nlinks = sv_net__geom_route(&net->geom, t->src, t->dst, net->tap_route, &lat);
}

static void tapped_arrival(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)arg;
    struct sv_net__tapped *t = ctx;
    sv_net *net = t->net;
    struct sv_net_tap_msg m;
    fill_msg(net, t, &m);
    sv_time now = sv_engine_now(eng);
    for (guint i = 0; i < net->taps->len; i++) {
        const struct sv_net_tap *tap = &g_array_index(net->taps, struct sv_net_tap, i);
        if (tap->on_delivery != NULL)
            tap->on_delivery(tap->ctx, &m, now);
    }
    sv_net_done_fn done = t->done;
    void *dctx = t->ctx;
    uint64_t darg = t->arg;
    t->next = net->tap_free;
    net->tap_free = t;
    if (done != NULL)
        done(eng, dctx, darg);
}

void sv_net__tap_send(sv_net *net, int src, int dst, uint64_t bytes,
                      const struct sv_net_msg_label *label, sv_net_done_fn *done, void **ctx,
                      uint64_t *arg)
{
    struct sv_net__tapped *t = net->tap_free;
    if (t != NULL) {
        net->tap_free = t->next;
    } else {
        if (net->tap_slab_used == SV_NET_CHUNK_SLAB) {
            g_ptr_array_add(net->tap_slabs, g_new(struct sv_net__tapped, SV_NET_CHUNK_SLAB));
            net->tap_slab_used = 0;
        }
        struct sv_net__tapped *slab = g_ptr_array_index(net->tap_slabs, net->tap_slabs->len - 1);
        t = &slab[net->tap_slab_used++];
    }
    *t = (struct sv_net__tapped){.net = net,
                                 .id = net->tap_seq++,
                                 .src = src,
                                 .dst = dst,
                                 .bytes = bytes,
                                 .sent_ns = sv_engine_now(net->eng),
                                 .kind = label != NULL ? label->kind : SV_NET_MSG_OTHER,
                                 .name = label != NULL ? label->name : NULL,
                                 .done = *done,
                                 .ctx = *ctx,
                                 .arg = *arg};
    struct sv_net_tap_msg m;
    fill_msg(net, t, &m);
    for (guint i = 0; i < net->taps->len; i++) {
        const struct sv_net_tap *tap = &g_array_index(net->taps, struct sv_net_tap, i);
        if (tap->on_start != NULL)
            tap->on_start(tap->ctx, &m);
    }
    *done = tapped_arrival;
    *ctx = t;
    *arg = 0;
}
