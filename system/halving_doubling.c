/* HalvingDoubling (HalvingDoubling.cc, astra-sim HEAD 518bd51). */
#include "system/system_internal.h"

#include <math.h>
#include <string.h>

/* ---- HalvingDoubling (HalvingDoubling.cc) -------------------------------------------------- */

int sv_sys__hd_log2(int n)
{
    int k = 0;
    while ((1 << (k + 1)) <= n)
        k++;
    return k;
}

/* specify_direction + the walk of rank_offset ring steps: the partner's ring index. */
static int hd_partner(const struct coll_phase *ph, int rank_offset)
{
    if (rank_offset == 0)
        return ph->index;
    int sign = (ph->index / rank_offset) % 2 == 0 ? 1 : -1;
    int n = ph->nodes;
    return ((ph->index + sign * rank_offset) % n + n) % n;
}

void sv_sys__hd_insert_packet(coll_stream *s)
{
    struct rot_state *r = &s->rot;
    const struct coll_phase *ph = &s->cur;
    if (r->zero_latency == 0 && r->non_zero_latency == 0) {
        /* get_non_zero_latency_packets: log2(n) - parallel_reduce */
        r->zero_latency = r->parallel_reduce;
        r->non_zero_latency = sv_sys__hd_log2(ph->nodes) - r->parallel_reduce;
        r->toggle = !r->toggle;
    }
    int peer = sv_sys__member_of(ph, r->curr_receiver);
    sv_sys__rot_push(r, peer, peer, r->msg_size);
    gboolean processed;
    if (r->zero_latency > 0) {
        processed = FALSE;
        r->zero_latency--;
    } else {
        SV_ASSERT(r->non_zero_latency > 0); /* "should not inject nothing!" */
        processed = ph->comm_type == SV_SYS_REDUCE_SCATTER ||
                    (ph->comm_type == SV_SYS_ALL_REDUCE && r->toggle);
        r->non_zero_latency--;
    }
    /* process_max_count: release, then move to the next distance (x2 halving, x0.5 doubling;
     * an all-reduce turns around once the distance reaches n). Integer truncation as upstream
     * (int rank_offset, uint64 msg_size, double multiplier). */
    sv_sys__bundle_release(s, processed, r->msg_size);
    r->rank_offset = (int)(r->rank_offset * r->offset_multiplier);
    r->msg_size = (uint64_t)((double)r->msg_size / r->offset_multiplier);
    if (r->rank_offset == ph->nodes && ph->comm_type == SV_SYS_ALL_REDUCE) {
        r->offset_multiplier = 0.5;
        r->rank_offset = (int)(r->rank_offset * r->offset_multiplier);
        r->msg_size = (uint64_t)((double)r->msg_size / r->offset_multiplier);
    }
    r->curr_receiver = hd_partner(ph, r->rank_offset);
}

void sv_sys__hd_run_init(coll_stream *s)
{
    struct rot_state *r = &s->rot;
    const struct coll_phase *ph = &s->cur;
    int n = ph->nodes;
    int lg = sv_sys__hd_log2(n);
    sv_sys__custom_clear(s);
    memset(r, 0, sizeof *r);
    r->parallel_reduce = 1;
    switch (ph->comm_type) {
    case SV_SYS_ALL_REDUCE:
        r->stream_count = 2 * lg;
        r->msg_size = ph->initial_size / 2;
        r->rank_offset = 1;
        r->offset_multiplier = 2;
        break;
    case SV_SYS_ALL_GATHER:
        r->stream_count = lg;
        r->msg_size = ph->initial_size;
        r->rank_offset = n / 2;
        r->offset_multiplier = 0.5;
        break;
    default: /* reduce-scatter (all-to-all is refused by sv_sys_new, as upstream exits) */
        r->stream_count = lg;
        r->msg_size = ph->initial_size / 2;
        r->rank_offset = 1;
        r->offset_multiplier = 2;
        break;
    }
    r->curr_receiver = hd_partner(ph, r->rank_offset);
    sv_sys__hd_insert_packet(s);
}

void sv_sys__hd_run_general(coll_stream *s)
{
    s->rot.free_packets++;
    sv_sys__rot_ready(s, TRUE);
    sv_sys__rot_iteratable(s);
}
