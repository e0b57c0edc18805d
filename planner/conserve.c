/* Conservation at the end of a run (docs/reliability.md, "Conservation"): counts kept in
 * different places of the model must agree. A difference is a bug, not bad input: it is reported
 * with the numbers as SV_CORE_ERROR_INTERNAL (`servesim run` exits 3), never let through. */
#include "planner/planner_internal.h"

gboolean sv_planner__check_requests(const struct sv_planner__requests *r, GError **error)
{
    if (r->arrived == r->finished + r->rejected + r->held)
        return TRUE;
    return sv_internal_error(
        error,
        "requests are not conserved: %" G_GUINT64_FORMAT " arrived, but %" G_GUINT64_FORMAT
        " finished + %" G_GUINT64_FORMAT " rejected + %" G_GUINT64_FORMAT
        " still held by the instances = %" G_GUINT64_FORMAT,
        r->arrived, r->finished, r->rejected, r->held, r->finished + r->rejected + r->held);
}

gboolean sv_planner__check_bytes(const sv_net *net, const sv_memtier_fabric *fabric, GError **error)
{
    if (net) {
        struct sv_net_stats ns;
        sv_net_get_stats(net, &ns);
        if (ns.bytes_sent != ns.bytes_delivered)
            return sv_internal_error(error,
                                     "network bytes are not conserved: %" G_GUINT64_FORMAT
                                     " bytes sent in %" G_GUINT64_FORMAT
                                     " messages, %" G_GUINT64_FORMAT
                                     " delivered, with nothing left in flight",
                                     ns.bytes_sent, ns.messages, ns.bytes_delivered);
    }
    if (fabric) {
        uint64_t booked = sv_memtier_fabric_bytes_booked(fabric);
        uint64_t done = sv_memtier_fabric_bytes_done(fabric);
        if (booked != done)
            return sv_internal_error(error,
                                     "memory-tier bytes are not conserved: %" G_GUINT64_FORMAT
                                     " bytes booked on the tier fabric, %" G_GUINT64_FORMAT
                                     " moved, with nothing left in flight",
                                     booked, done);
    }
    return TRUE;
}
