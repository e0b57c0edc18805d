/* What each timing model gives a message that is alone on its route (network.h,
 * sv_net_msg_alone_ns): the closed forms of the four transports for that case, so that a caller
 * can book a collective whose links carry nothing else without sending its messages (serving
 * iterations fold their TP all-reduces this way: system/alone.c, msg/opmap.c). Each form is the
 * transport's own arithmetic, in the same order, so the result is the one sv_net_send gives to
 * the nanosecond (tests/network/test_net_alone.c checks every model and topology). */
#include "network/network_internal.h"

sv_time sv_net_msg_alone_ns(const sv_net *net, int src, int dst, uint64_t bytes)
{
    struct sv_net_lone lone;
    sv_net_lone_message(net, src, dst, bytes, &lone);
    return lone.delay_ns;
}

void sv_net_book(sv_net *net, int src, int dst, uint64_t bytes, uint64_t count)
{
    /* The links a lone message is counted on (analytical: the hops of the first differing
     * dimension, the others the route). */
    struct sv_net_lone lone;
    sv_net_lone_message(net, src, dst, bytes, &lone);
    struct sv_net_stats add = {
        .messages = count,
        .bytes_sent = bytes * count,
        .bytes_delivered = bytes * count,
        .link_bytes = bytes * (uint64_t)lone.stat_links * count,
        .link_transfers = (uint64_t)lone.stat_links * count,
    };
    sv_net_add_stats(net, &add);
}
