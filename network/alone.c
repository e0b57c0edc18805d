/* What each timing model gives a message that is alone on its route (network.h,
 * sv_net_msg_alone_ns): the closed forms of the four transports for that case, so that a caller
 * can book a collective whose links carry nothing else without sending its messages (serving
 * iterations fold their TP all-reduces this way: system/alone.c, msg/opmap.c). Each form is the
 * transport's own arithmetic, in the same order, so the result is the one sv_net_send gives to
 * the nanosecond (tests/network/test_net_alone.c checks every model and topology). */
#include "network/network_internal.h"

sv_time sv_net_msg_alone_ns(const sv_net *net, int src, int dst, uint64_t bytes)
{
    const struct sv_net_geom *g = &net->geom;
    SV_ASSERT(src >= 0 && src < g->npus && dst >= 0 && dst < g->npus && src != dst);
    switch (net->model) {
    case SV_NET_MODEL_ANALYTICAL: {
        /* analytical_send: the first differing dimension only, hops x L + bytes / B. */
        int d = sv_net__geom_first_diff_dim(g, src, dst);
        int hops = sv_net__geom_dim_hops(g, d, sv_net__geom_coord(g, src, d),
                                         sv_net__geom_coord(g, dst, d));
        double link_delay = hops * g->cfg.latency_ns[d];
        double serialization = (double)bytes / g->bw_bpns[d];
        return sv_time_from_ns(link_delay + serialization);
    }
    case SV_NET_MODEL_IDEAL: {
        double lat = 0;
        sv_net__geom_route(g, src, dst, NULL, &lat);
        return sv_time_from_ns(lat);
    }
    case SV_NET_MODEL_FIFO: {
        /* Store-and-forward over free links: each hop trunc(L + bytes / B) (link_transmit). */
        sv_time t = 0;
        for (int cur = src; cur != dst;) {
            const struct sv_net_link *L = &g->links[sv_net__geom_next_link(g, cur, dst)];
            double serialization = (double)bytes / L->bw_bpns;
            t += sv_time_from_ns(L->lat_ns + serialization);
            cur = L->dst_dev;
        }
        return t;
    }
    case SV_NET_MODEL_FLOW:
        return sv_net__flow_alone_ns(net, src, dst, bytes);
    }
    g_assert_not_reached();
}

void sv_net_book(sv_net *net, int src, int dst, uint64_t bytes, uint64_t count)
{
    const struct sv_net_geom *g = &net->geom;
    SV_ASSERT(src >= 0 && src < g->npus && dst >= 0 && dst < g->npus && src != dst);
    /* analytical_send counts the hops of the first differing dimension, the others the route. */
    int hops;
    if (net->model == SV_NET_MODEL_ANALYTICAL) {
        int d = sv_net__geom_first_diff_dim(g, src, dst);
        hops = sv_net__geom_dim_hops(g, d, sv_net__geom_coord(g, src, d),
                                     sv_net__geom_coord(g, dst, d));
    } else {
        hops = sv_net__geom_route(g, src, dst, NULL, NULL);
    }
    net->stats.messages += count;
    net->stats.bytes_sent += bytes * count;
    net->stats.bytes_delivered += bytes * count;
    net->stats.link_bytes += bytes * (uint64_t)hops * count;
    net->stats.link_transfers += (uint64_t)hops * count;
}
