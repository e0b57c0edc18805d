/* A collective in closed form when nothing else touches it (system.h, sv_sys_coll_alone_ns).
 *
 * When every member of a ring issues the same all-reduce at the same instant, no other collective
 * of theirs runs and no other traffic crosses the ring's links, the event-by-event run of ring.c
 * and sched.c is a fixed sequence per member (docs/collectives.md "How a collective runs"):
 *
 *   issue -> D -> send 1; then for each of the 2(n - 1) messages: arrival after T, the bundle's
 *   D, the reduction R for the first n - 1 (reduce-scatter half), then the next send; after the
 *   last arrival D more and the stream ends (done):
 *
 *       t = D + 2(n - 1)(T + D) + (n - 1) R
 *
 * D the endpoint delay (10 for a communicator group's Local ring, else endpoint-delay x
 * injection-scale), R = 3 x mem_access(m) (sched.c: mem_write + 2 mem_read; 10 each without
 * local-mem-bw), T the time of one message of m = chunk / n bytes alone on its route
 * (sv_net_msg_alone_ns). Every member sends to its ring successor at the same instants, so the
 * recv of each step is posted before its message arrives and all members finish together.
 *
 * Covered, else FALSE (the caller runs the collective): all-reduce; native ring (no custom plan,
 * no direct group exchange); one chunk (one stream: preferred-dataset-splits 1); one phase (a
 * group smaller than the machine, or the machine when one dimension has more than one NPU); every
 * ring step in either direction takes the same T over routes that share no link (so no message of
 * the ring slows another); D > 0 (a message never starts in the tick its predecessor on the same
 * link ends). Whether the links carry other traffic is the caller's to know. */
#include "system/system_internal.h"

#include <stdlib.h>

/* sched.c mem_access: local-mem-bw bytes/ns per access, truncated; 10 cycles without it. */
static sv_time access_ns(const sv_sys *sys, uint64_t bytes)
{
    if (sys->cfg.local_mem_bw <= 0)
        return 10;
    return sv_time_from_ns((double)bytes / sys->cfg.local_mem_bw);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

/* T of the ring members[0..n) sending to their successor (step +1) or predecessor (-1): the
 * common message time, or -1 when the members' times differ or two routes share a link. */
static sv_time ring_step_ns(const sv_sys *sys, const int *members, int n, int step, uint64_t bytes)
{
    int maxl = sv_net_route_max_links(sys->net);
    g_autofree int *links = g_new(int, (size_t)n *(size_t)maxl);
    int nl = 0;
    sv_time t = -1;
    for (int i = 0; i < n; i++) {
        int src = members[i], dst = members[((i + step) % n + n) % n];
        sv_time ti = sv_net_msg_alone_ns(sys->net, src, dst, bytes);
        if (t >= 0 && ti != t)
            return -1;
        t = ti;
        nl += sv_net_route_links(sys->net, src, dst, links + nl, NULL);
    }
    qsort(links, (size_t)nl, sizeof *links, cmp_int);
    for (int k = 1; k < nl; k++)
        if (links[k] == links[k - 1])
            return -1;
    return t;
}

/* The ring of a covered all-reduce: its members in ring order, the endpoint delay D and the
 * message size m; FALSE when not covered (see above; the step times are checked by the caller). */
static gboolean alone_ring(const sv_sys *sys, sv_sys_coll_type type, uint64_t bytes, int group_id,
                           int **ring_out, int *n_out, sv_time *d_out, uint64_t *m_out)
{
    if (type != SV_SYS_ALL_REDUCE || bytes == 0 || sys->custom[type] != NULL ||
        sys->cfg.custom_prefix[type] != NULL)
        return FALSE;
    const struct sv_sys__group *grp = NULL;
    for (guint i = 0; group_id != 0 && i < sys->groups->groups->len; i++)
        if (g_array_index(sys->groups->groups, struct sv_sys__group, i).id == group_id)
            grp = &g_array_index(sys->groups->groups, struct sv_sys__group, i);
    if (group_id != 0 && grp == NULL)
        return FALSE;
    int *ring, n;
    sv_time d;
    if (grp != NULL && grp->n != sys->npus) {
        /* CommunicatorGroup: a Local ring over the members in list order. */
        if (sys->cfg.group_impl[type] != SV_SYS_IMPL_RING || grp->n < 2)
            return FALSE;
        n = grp->n;
        ring = g_memdup2(grp->members, sizeof *ring * (size_t)n);
        d = FAST_TRANSMISSION_DELAY;
    } else {
        /* The whole machine: one phase per dimension with more than one NPU; one is covered. */
        const struct ltopo *lt = &sys->topo[type];
        const struct ldim *dim = NULL;
        for (int k = 0; k < lt->ndims; k++) {
            if (lt->dim[k].size == 1)
                continue;
            if (dim != NULL)
                return FALSE;
            dim = &lt->dim[k];
        }
        if (dim == NULL || (dim->kind != SV_SYS_IMPL_RING && dim->kind != SV_SYS_IMPL_ONE_RING) ||
            dim->size != sys->npus || dim->size < 2)
            return FALSE;
        n = dim->size;
        ring = g_new(int, (size_t)n);
        for (int k = 0; k < n; k++)
            ring[k] = k * dim->stride;
        d = sys->comm_delay;
    }
    /* Sys::determine_chunk_size: one stream only. */
    uint64_t k = (uint64_t)sys->cfg.preferred_dataset_splits;
    uint64_t chunk = bytes / k, size = bytes;
    if ((uint64_t)sys->npus > chunk) {
        chunk = (uint64_t)sys->npus;
        size = k * chunk;
    }
    if (d <= 0 || size > chunk) {
        g_free(ring);
        return FALSE;
    }
    *ring_out = ring;
    *n_out = n;
    *d_out = d;
    *m_out = chunk / (uint64_t)n;
    return TRUE;
}

gboolean sv_sys_coll_alone_ns(const sv_sys *sys, sv_sys_coll_type type, uint64_t bytes,
                              int group_id, sv_time *out_ns)
{
    g_autofree int *ring = NULL;
    int n;
    sv_time d;
    uint64_t m;
    if (!alone_ring(sys, type, bytes, group_id, &ring, &n, &d, &m))
        return FALSE;
    /* Either direction (queues of the upper half run anticlockwise): the same T. */
    sv_time t = ring_step_ns(sys, ring, n, 1, m);
    if (t < 0 || (n > 2 && ring_step_ns(sys, ring, n, -1, m) != t))
        return FALSE;
    sv_time r = 3 * access_ns(sys, m);
    *out_ns = d + 2 * (sv_time)(n - 1) * (t + d) + (sv_time)(n - 1) * r;
    return TRUE;
}

void sv_sys_coll_alone_book(sv_sys *sys, sv_sys_coll_type type, uint64_t bytes, int group_id,
                            uint64_t times)
{
    g_autofree int *ring = NULL;
    int n;
    sv_time d;
    uint64_t m;
    gboolean covered = alone_ring(sys, type, bytes, group_id, &ring, &n, &d, &m);
    SV_ASSERT(covered);
    /* Each member sends 2(n - 1) messages of m bytes to its ring successor (Ring.cc). */
    for (int i = 0; i < n; i++)
        sv_net_book(sys->net, ring[i], ring[(i + 1) % n], m, 2 * (uint64_t)(n - 1) * times);
}
