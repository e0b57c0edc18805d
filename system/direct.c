/* AllToAll, ASTRA-sim's "direct" implementation (AllToAll.cc on top of Ring.cc, astra-sim HEAD
 * 518bd51). */
#include "system/system_internal.h"

#include <string.h>

/* ---- AllToAll ("direct", AllToAll.cc on top of Ring.cc) ------------------------------------ */

void sv_sys__direct_insert_packet(coll_stream *s)
{
    struct rot_state *r = &s->rot;
    const struct coll_phase *ph = &s->cur;
    if (r->zero_latency == 0 && r->non_zero_latency == 0) {
        /* AllToAll::get_non_zero_latency_packets on a Dimension::NA ring: parallel_reduce */
        r->zero_latency = r->parallel_reduce;
        r->non_zero_latency = r->parallel_reduce;
        r->toggle = !r->toggle;
    }
    sv_sys__rot_push(r, sv_sys__member_of(ph, r->curr_receiver),
                     sv_sys__member_of(ph, r->curr_sender), r->msg_size);
    gboolean processed;
    if (r->zero_latency > 0) {
        processed = FALSE;
        r->zero_latency--;
    } else {
        processed = ph->comm_type == SV_SYS_REDUCE_SCATTER ||
                    (ph->comm_type == SV_SYS_ALL_REDUCE && r->toggle);
        r->non_zero_latency--;
    }
    /* AllToAll::process_max_count: every packet is released at once, then the peers rotate to
     * the next NPU of the ring, skipping this one. */
    sv_sys__bundle_release(s, processed, r->msg_size);
    int n = ph->nodes;
    r->curr_receiver = ((r->curr_receiver + r->step) % n + n) % n;
    if (r->curr_receiver == ph->index)
        r->curr_receiver = ((r->curr_receiver + r->step) % n + n) % n;
    r->curr_sender = ((r->curr_sender - r->step) % n + n) % n;
    if (r->curr_sender == ph->index)
        r->curr_sender = ((r->curr_sender - r->step) % n + n) % n;
}

void sv_sys__direct_run_init(coll_stream *s)
{
    struct rot_state *r = &s->rot;
    const struct coll_phase *ph = &s->cur;
    int n = ph->nodes;
    sv_sys__custom_clear(s);
    memset(r, 0, sizeof *r);
    /* AllToAll ctor: window -1 -> n - 1 messages in flight, else min(window, n - 1) */
    r->parallel_reduce = ph->window < 0 ? n - 1 : MIN(ph->window, n - 1);
    r->middle_point = n - 1;
    switch (ph->comm_type) { /* Ring ctor stream_count / msg_size; AllToAll's for all-to-all */
    case SV_SYS_ALL_REDUCE:
        r->stream_count = 2 * (n - 1);
        r->msg_size = ph->initial_size / (uint64_t)n;
        break;
    case SV_SYS_ALL_GATHER:
        r->stream_count = n - 1;
        r->msg_size = ph->initial_size;
        break;
    default: /* reduce-scatter, all-to-all */
        r->stream_count = n - 1;
        r->msg_size = ph->initial_size / (uint64_t)n;
        break;
    }
    r->step = ph->step;
    r->curr_receiver = ((ph->index + r->step) % n + n) % n;
    r->curr_sender = ((ph->index - r->step) % n + n) % n;
    for (int i = 0; i < r->parallel_reduce; i++)
        sv_sys__direct_insert_packet(s);
}

void sv_sys__direct_run_general(coll_stream *s)
{
    struct rot_state *r = &s->rot;
    r->free_packets++;
    if (s->cur.comm_type == SV_SYS_ALL_REDUCE && r->stream_count <= r->middle_point) {
        /* second half of an all-reduce: wait until every first-half message has arrived, then
         * send as many as there are free slots */
        if (r->total_received < r->middle_point)
            return;
        for (int i = 0; i < r->parallel_reduce; i++)
            sv_sys__rot_ready(s, FALSE);
    } else {
        sv_sys__rot_ready(s, FALSE);
    }
    sv_sys__rot_iteratable(s);
}
