/* Ring (astraccl/native_collectives/collective_algorithm/Ring.cc), and the Ring packet
 * machinery that AllToAll ("direct") and HalvingDoubling reuse with rotating peers
 * (astra-sim HEAD 518bd51). */
#include "system/system_internal.h"

#include <string.h>

/* ---- Ring (astraccl/native_collectives/collective_algorithm/Ring.cc) ---------------------- */

static void ring_release_packets(coll_stream *s)
{
    coll_npu *npu = s->owner;
    uint64_t arg = bundle_arg(s->ring.msg_size, s->ring.processed);
    /* MemBus::send_from_NPU_to_MA / send_from_MA_to_NPU without the shared bus model: both
     * directions cost the same fixed delay. */
    sv_time delay = s->cur.fast ? FAST_TRANSMISSION_DELAY : npu->sys->comm_delay;
    sv_sys__register_event(npu, sv_sys__bundle_call, s, arg, delay);
}

static void ring_process_max_count(coll_stream *s)
{
    struct ring_state *r = &s->ring;
    if (r->remained_per_max_count > 0)
        r->remained_per_max_count--;
    if (r->remained_per_max_count == 0) {
        r->max_count--;
        ring_release_packets(s);
        r->remained_per_max_count = 1;
    }
}

static void ring_insert_packet(coll_stream *s)
{
    struct ring_state *r = &s->ring;
    if (r->zero_latency == 0 && r->non_zero_latency == 0) {
        r->zero_latency = r->parallel_reduce;
        r->non_zero_latency = (s->cur.nodes - 1) * r->parallel_reduce;
        r->toggle = !r->toggle;
    }
    if (r->zero_latency > 0) {
        r->packets++;
        r->processed = FALSE;
        r->npu_to_ma = TRUE;
        ring_process_max_count(s);
        r->zero_latency--;
        return;
    }
    SV_ASSERT(r->non_zero_latency > 0); /* "should not inject nothing!" */
    r->packets++;
    r->processed = s->cur.comm_type == SV_SYS_REDUCE_SCATTER ||
                   (s->cur.comm_type == SV_SYS_ALL_REDUCE && r->toggle);
    r->npu_to_ma = FALSE;
    ring_process_max_count(s);
    r->non_zero_latency--;
}

static void ring_packet_received(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)eng;
    (void)arg;
    coll_stream *s = ctx;
    /* StreamBaseline::consume -> Ring::run(PacketReceived) */
    ring_insert_packet(s);
}

static void ring_process_stream_count(coll_stream *s)
{
    struct ring_state *r = &s->ring;
    if (r->remained_per_message > 0)
        r->remained_per_message--;
    if (r->remained_per_message == 0 && r->stream_count > 0) {
        r->stream_count--;
        if (r->stream_count > 0)
            r->remained_per_message = 1;
    }
}

static void ring_ready(coll_stream *s)
{
    struct ring_state *r = &s->ring;
    if (r->packets == 0 || r->stream_count == 0 || r->free_packets == 0)
        return;
    sv_sys *sys = s->owner->sys;
    int self = s->owner->id;
    /* Collective sends carry Sys::handleEvent with no data: nothing runs at arrival. */
    sv_sys__net_send(sys, self, s->cur.receiver, s->stream_id, r->msg_size,
                     sv_sys__coll_label(s->cur.comm_type), NULL, NULL, 0, &s->send_chan);
    sv_sys__net_recv(sys, self, s->cur.sender, s->stream_id, r->msg_size, ring_packet_received, s,
                     0, &s->recv_chan);
    ring_process_stream_count(s);
    r->packets--;
    r->free_packets--;
}

void sv_sys__ring_run_init(coll_stream *s)
{
    struct ring_state *r = &s->ring;
    const struct coll_phase *ph = &s->cur;
    int n = ph->nodes;
    memset(r, 0, sizeof *r);
    r->parallel_reduce = 1; /* InjectionPolicy::Normal */
    switch (ph->comm_type) {
    case SV_SYS_ALL_REDUCE:
        r->stream_count = 2 * (n - 1);
        r->msg_size = ph->initial_size / (uint64_t)n;
        break;
    case SV_SYS_ALL_TO_ALL:
        r->stream_count = ((n - 1) * n) / 2;
        r->msg_size = ph->initial_size / (uint64_t)n;
        break;
    case SV_SYS_ALL_GATHER:
        r->stream_count = n - 1;
        r->msg_size = ph->initial_size;
        break;
    default: /* reduce-scatter */
        r->stream_count = n - 1;
        r->msg_size = ph->initial_size / (uint64_t)n;
        break;
    }
    r->max_count =
        (ph->comm_type == SV_SYS_ALL_TO_ALL || ph->comm_type == SV_SYS_ALL_GATHER) ? 0 : n - 1;
    r->remained_per_message = 1;
    r->remained_per_max_count = 1;
    for (int i = 0; i < r->parallel_reduce; i++)
        ring_insert_packet(s);
}

/* Ring::run(General): returns after the stream may have been freed. */
void sv_sys__ring_run_general(coll_stream *s)
{
    struct ring_state *r = &s->ring;
    r->free_packets++;
    ring_ready(s);
    if (r->stream_count == 0 && r->free_packets == r->parallel_reduce)
        sv_sys__proceed_to_next_vnet(s->owner, s); /* Ring::exit */
}

/* ---- shared by direct / halving-doubling / double binary tree ------------------------------ */

/* PacketBundle::send_to_MA / send_to_NPU over a GeneralComplexTopology dimension
 * (Transmition::Usual): endpoint delay, then the reduction cost when `processed`. */
void sv_sys__bundle_release(coll_stream *s, gboolean processed, uint64_t size)
{
    coll_npu *npu = s->owner;
    sv_sys__register_event(npu, sv_sys__bundle_call, s, bundle_arg(size, processed),
                           npu->sys->comm_delay);
}

int sv_sys__member_of(const struct coll_phase *ph, int index)
{
    int n = ph->nodes;
    int i = ((index % n) + n) % n;
    return ph->members != NULL ? ph->members[i] : ph->base + i * ph->stride;
}

void sv_sys__rot_push(struct rot_state *r, int dst, int src, uint64_t size)
{
    if (r->pkts == NULL)
        r->pkts = g_array_new(FALSE, FALSE, sizeof(struct algo_pkt));
    struct algo_pkt p = {dst, src, size};
    g_array_append_val(r->pkts, p);
}

static guint rot_pending(const struct rot_state *r)
{
    return r->pkts == NULL ? 0 : r->pkts->len - r->pkt_head;
}

static void rot_packet_received(sv_engine *eng, void *ctx, uint64_t arg);

/* Ring::ready (shared by AllToAll and HalvingDoubling): send the oldest packet and post the
 * matching recv; `use_pkt_size` = HalvingDoubling (the packet's own size) vs Ring (msg_size). */
gboolean sv_sys__rot_ready(coll_stream *s, gboolean use_pkt_size)
{
    struct rot_state *r = &s->rot;
    if (rot_pending(r) == 0 || r->stream_count == 0 || r->free_packets == 0)
        return FALSE;
    struct algo_pkt p = g_array_index(r->pkts, struct algo_pkt, r->pkt_head);
    uint64_t size = use_pkt_size ? p.size : r->msg_size;
    sv_sys *sys = s->owner->sys;
    sv_sys__net_send(sys, s->owner->id, p.dst, s->stream_id, size,
                     sv_sys__coll_label(s->cur.comm_type), NULL, NULL, 0, &s->send_chan);
    sv_sys__net_recv(sys, s->owner->id, p.src, s->stream_id, size, rot_packet_received, s, 0,
                     &s->recv_chan);
    r->stream_count--; /* process_stream_count */
    r->pkt_head++;
    r->free_packets--;
    return TRUE;
}

/* Ring::iteratable: the phase ends once every message is out and every slot is back. Returns
 * TRUE when the stream moved on (it may have been freed). */
gboolean sv_sys__rot_iteratable(coll_stream *s)
{
    struct rot_state *r = &s->rot;
    if (r->stream_count == 0 && r->free_packets == r->parallel_reduce) {
        sv_sys__proceed_to_next_vnet(s->owner, s);
        return TRUE;
    }
    return FALSE;
}

/* Ring::run(PacketReceived) for both: count it and queue the next packet. */
static void rot_packet_received(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)eng;
    (void)arg;
    coll_stream *s = ctx;
    s->rot.total_received++;
    if (s->cur.algo == ALGO_DIRECT)
        sv_sys__direct_insert_packet(s);
    else
        sv_sys__hd_insert_packet(s);
}
