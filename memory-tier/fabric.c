/* The fabric: links between memory tiers and NPUs, routes, and transfers booked as flows on the
 * network's max-min solver (network.h sv_net_solver; docs/kvcache.md "Memory tiers").
 *
 * Links (bandwidths in decimal GB/s = bytes/ns, sv_bw_dec_gbps_to_bytes_per_ns):
 *   per NPU:  pcie_h2d, pcie_d2h (one per direction, PCIe is full duplex)
 *   per node: dram (one link for both directions: DRAM bandwidth is shared by reads and writes)
 *   per CXL device: cxl (both directions); cluster scope: + per-node cxl_port
 *   per SSD device: ssd_read, ssd_write
 * Every solver link here has latency 0; a leg's latency (the tiers' and PCIe latencies it
 * touches) is passed as the flow's extra latency, so an ideal link (infinite bandwidth) is simply
 * left out of the flow's path and keeps its latency. A leg with no finite link completes at its
 * latency.
 *
 * Routes (decision 8): DMA between an NPU and host DRAM or CXL is one flow over
 * both ends' links (cut-through); SSD goes through host DRAM store-and-forward, as LMCache's
 * local-disk backend (read into host memory, then copy to the GPU): two legs in sequence.
 *   dram -> npu [dram, h2d]          npu -> dram [d2h, dram]
 *   cxl  -> npu [cxl, h2d]           npu -> cxl  [d2h, cxl]
 *   ssd  -> npu [ssd_read, dram] then [dram, h2d]
 *   npu  -> ssd [d2h, dram] then [dram, ssd_write]
 *   dram -> cxl [dram, cxl]; dram <-> ssd one leg; cxl <-> ssd two legs through dram
 *   remote (another node's dram, cluster pool): [dram(home)] + network route(first NPU of home ->
 *   NPU), RDMA into device memory; needs the network's flow solver.
 * SSD queue depth: at most queue_depth legs touching one SSD device are in service; the others
 * wait in FIFO order. */
#include "memory-tier/memtier_internal.h"

#include <stdio.h>
#include <string.h>

#define LEG_MAX_LINKS 64

struct tier_ent;

struct leg {
    int n;
    int links[LEG_MAX_LINKS];
    double lat;     /* ns, latency of the fabric's own links and tiers (the flow's extra latency) */
    double net_lat; /* ns, latency the network's topology links on the leg carry themselves */
    double min_bw;  /* bytes/ns of the slowest finite link; 0 = none */
    struct tier_ent *qtier; /* the SSD whose queue the leg occupies, or NULL */
    /* The leg's ends and their nodes, for the observer (sv_memtier_fabric_set_observer). */
    struct sv_memtier_loc src, dst;
    int32_t src_node, dst_node;
};

struct sv_memtier_route {
    int nlegs;
    struct leg leg[2];
    sv_memtier_tier *src_tier, *dst_tier; /* for read/write byte counts; may be NULL */
};

struct npu_ent {
    gboolean present;
    int32_t node;
    int h2d, d2h; /* solver links, -1 when ideal */
    double lat, bw;
    sv_memtier_tier *hbm;
};

struct tier_ent {
    struct sv_memtier_loc loc;
    sv_memtier_tier *tier;
    int rd, wr; /* solver links (rd == wr for DRAM/CXL), -1 when ideal */
    double lat, rd_bw, wr_bw;
    int32_t queue_depth;
    int32_t in_service;
    GQueue waiting; /* of struct xfer * */
};

struct port_ent {
    gboolean present;
    int link;
    double lat, bw;
};

struct xfer {
    sv_memtier_fabric *f;
    const sv_memtier_route *r;
    uint64_t bytes;
    int leg;
    sv_time leg_start; /* when the current leg started on its links (the tap's) */
    sv_net_done_fn done;
    void *ctx;
    uint64_t arg;
};

struct sv_memtier_fabric {
    sv_engine *eng;
    sv_net *net;          /* the flow network whose solver is shared, or NULL */
    sv_net_solver *owned; /* a standalone solver, or NULL */
    sv_net_solver *solver;
    GArray *npus;       /* struct npu_ent by NPU id */
    GPtrArray *tiers;   /* struct tier_ent *, in order added */
    GArray *ports;      /* struct port_ent by node */
    GHashTable *routes; /* "src>dst" -> sv_memtier_route * (looked up, never iterated) */
    uint64_t bytes_booked, bytes_done;
    sv_memtier_xfer_observer_fn observer;
    void *observer_ctx;
    sv_memtier_leg_tap_fn tap; /* sv_memtier_fabric_set_tap */
    void *tap_ctx;
};

sv_memtier_fabric *sv_memtier_fabric_new(sv_engine *eng, sv_net *net_or_null, GError **error)
{
    (void)error;
    SV_ASSERT(eng != NULL);
    sv_memtier_fabric *f = g_new0(sv_memtier_fabric, 1);
    f->eng = eng;
    sv_net_solver *s = sv_net_get_solver(net_or_null);
    if (s != NULL) {
        f->net = net_or_null;
        f->solver = s;
    } else {
        f->owned = sv_net_solver_new(eng);
        f->solver = f->owned;
    }
    f->npus = g_array_new(FALSE, TRUE, sizeof(struct npu_ent));
    f->tiers = g_ptr_array_new();
    f->ports = g_array_new(FALSE, TRUE, sizeof(struct port_ent));
    f->routes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    return f;
}

void sv_memtier_fabric_free(sv_memtier_fabric *f)
{
    if (f == NULL)
        return;
    for (guint i = 0; i < f->tiers->len; i++) {
        struct tier_ent *te = g_ptr_array_index(f->tiers, i);
        g_queue_clear_full(&te->waiting, g_free);
        g_free(te);
    }
    g_ptr_array_free(f->tiers, TRUE);
    g_array_free(f->npus, TRUE);
    g_array_free(f->ports, TRUE);
    g_hash_table_destroy(f->routes);
    sv_net_solver_free(f->owned);
    g_free(f);
}

sv_net_solver *sv_memtier_fabric_solver(sv_memtier_fabric *f)
{
    return f->solver;
}

uint64_t sv_memtier_fabric_bytes_booked(const sv_memtier_fabric *f)
{
    return f->bytes_booked;
}

uint64_t sv_memtier_fabric_bytes_done(const sv_memtier_fabric *f)
{
    return f->bytes_done;
}

void sv_memtier_fabric_set_tap(sv_memtier_fabric *f, sv_memtier_leg_tap_fn fn, void *ctx)
{
    SV_ASSERT(f != NULL);
    f->tap = fn;
    f->tap_ctx = fn != NULL ? ctx : NULL;
}

/* Tell the tap of a leg that has crossed topology links (ids below the network's link count). */
static void tap_leg(sv_memtier_fabric *f, const struct xfer *x, const struct leg *leg, sv_time now)
{
    if (f->net == NULL || x->bytes == 0)
        return;
    int topo = sv_net_num_links(f->net), links[LEG_MAX_LINKS], n = 0;
    for (int i = 0; i < leg->n; i++)
        if (leg->links[i] >= 0 && leg->links[i] < topo)
            links[n++] = leg->links[i];
    if (n == 0)
        return;
    struct sv_memtier_leg_tap t = {.src = leg->src,
                                   .dst = leg->dst,
                                   .bytes = x->bytes,
                                   .start_ns = x->leg_start,
                                   .net_links = links,
                                   .n_net_links = n};
    f->tap(f->tap_ctx, &t, now);
}

void sv_memtier_fabric_set_observer(sv_memtier_fabric *f, sv_memtier_xfer_observer_fn fn, void *ctx)
{
    SV_ASSERT(f != NULL);
    f->observer = fn;
    f->observer_ctx = fn != NULL ? ctx : NULL;
}

static int add_link(sv_memtier_fabric *f, double gbps, gboolean ideal)
{
    if (ideal)
        return -1;
    SV_ASSERT(gbps > 0);
    return sv_net_solver_link_add(f->solver, sv_bw_dec_gbps_to_bytes_per_ns(gbps), 0);
}

int32_t sv_memtier_fabric_add_pcie(sv_memtier_fabric *f, int32_t npu, int32_t node, double gbps,
                                   double lat_ns, gboolean ideal)
{
    SV_ASSERT(npu >= 0 && node >= 0 && lat_ns >= 0);
    if ((guint)npu >= f->npus->len)
        g_array_set_size(f->npus, (guint)npu + 1);
    struct npu_ent *e = &g_array_index(f->npus, struct npu_ent, npu);
    SV_ASSERT(!e->present);
    e->present = TRUE;
    e->node = node;
    e->lat = lat_ns;
    e->bw = ideal ? 0 : sv_bw_dec_gbps_to_bytes_per_ns(gbps);
    e->h2d = add_link(f, gbps, ideal);
    e->d2h = add_link(f, gbps, ideal);
    return e->h2d;
}

static gboolean loc_eq(const struct sv_memtier_loc *a, const struct sv_memtier_loc *b)
{
    return a->kind == b->kind && a->node == b->node &&
           (a->kind == SV_MEMTIER_DRAM || a->device == b->device);
}

static struct tier_ent *find_tier(const sv_memtier_fabric *f, const struct sv_memtier_loc *loc)
{
    for (guint i = 0; i < f->tiers->len; i++) {
        struct tier_ent *te = g_ptr_array_index(f->tiers, i);
        if (loc_eq(&te->loc, loc))
            return te;
    }
    return NULL;
}

void sv_memtier_fabric_add_tier(sv_memtier_fabric *f, const struct sv_memtier_loc *loc,
                                sv_memtier_tier *t)
{
    SV_ASSERT(loc != NULL && t != NULL);
    const struct sv_memtier_tier_cfg *c = sv_memtier_tier_get_cfg(t);
    if (loc->kind == SV_MEMTIER_HBM) {
        SV_ASSERT(loc->device >= 0 && (guint)loc->device < f->npus->len);
        g_array_index(f->npus, struct npu_ent, loc->device).hbm = t;
        return;
    }
    SV_ASSERT(find_tier(f, loc) == NULL);
    SV_ASSERT(loc->node >= 0 || loc->kind == SV_MEMTIER_CXL);
    struct tier_ent *te = g_new0(struct tier_ent, 1);
    te->loc = *loc;
    te->tier = t;
    te->lat = c->latency_ns;
    double wr_gbps = c->write_gbps > 0 ? c->write_gbps : c->read_gbps;
    te->rd_bw = c->ideal ? 0 : sv_bw_dec_gbps_to_bytes_per_ns(c->read_gbps);
    te->rd = add_link(f, c->read_gbps, c->ideal);
    if (loc->kind == SV_MEMTIER_SSD) {
        te->wr_bw = c->ideal ? 0 : sv_bw_dec_gbps_to_bytes_per_ns(wr_gbps);
        te->wr = add_link(f, wr_gbps, c->ideal);
        te->queue_depth = c->queue_depth;
    } else {
        te->wr_bw = te->rd_bw;
        te->wr = te->rd;
    }
    g_queue_init(&te->waiting);
    g_ptr_array_add(f->tiers, te);
}

void sv_memtier_fabric_add_cxl_port(sv_memtier_fabric *f, int32_t node, double gbps, double lat_ns,
                                    gboolean ideal)
{
    SV_ASSERT(node >= 0);
    if ((guint)node >= f->ports->len)
        g_array_set_size(f->ports, (guint)node + 1);
    struct port_ent *p = &g_array_index(f->ports, struct port_ent, node);
    SV_ASSERT(!p->present);
    p->present = TRUE;
    p->lat = lat_ns;
    p->bw = ideal ? 0 : sv_bw_dec_gbps_to_bytes_per_ns(gbps);
    p->link = add_link(f, gbps, ideal);
}

/* ---- routes ------------------------------------------------------------------------------ */

static void leg_add(struct leg *leg, int link, double bw, double lat)
{
    leg->lat += lat;
    if (link < 0)
        return; /* ideal: latency only */
    SV_ASSERT(leg->n < LEG_MAX_LINKS);
    leg->links[leg->n++] = link;
    if (leg->min_bw == 0 || bw < leg->min_bw)
        leg->min_bw = bw;
}

static const char *loc_str(const struct sv_memtier_loc *l, char *buf, size_t n)
{
    if (l->kind == SV_MEMTIER_HBM)
        snprintf(buf, n, "npu %d", l->device);
    else if (l->kind == SV_MEMTIER_DRAM)
        snprintf(buf, n, "node%d/cpu", l->node);
    else if (l->node < 0)
        snprintf(buf, n, "cluster/%s:%d", sv_memtier_kind_name(l->kind), l->device);
    else
        snprintf(buf, n, "node%d/%s:%d", l->node, sv_memtier_kind_name(l->kind), l->device);
    return buf;
}

struct endpoint {
    struct sv_memtier_loc loc;
    int32_t node; /* node of the endpoint (HBM: the NPU's) */
    struct npu_ent *npu;
    struct tier_ent *te;
};

static gboolean resolve(sv_memtier_fabric *f, const struct sv_memtier_loc *loc, struct endpoint *ep,
                        GError **error)
{
    char b[64];
    memset(ep, 0, sizeof *ep);
    ep->loc = *loc;
    if (loc->kind == SV_MEMTIER_HBM) {
        if (loc->device < 0 || (guint)loc->device >= f->npus->len ||
            !g_array_index(f->npus, struct npu_ent, loc->device).present) {
            g_set_error(error, SV_MEMTIER_ERROR, SV_MEMTIER_ERROR_CONFIG,
                        "memory fabric: %s has no PCIe link", loc_str(loc, b, sizeof b));
            return FALSE;
        }
        ep->npu = &g_array_index(f->npus, struct npu_ent, loc->device);
        ep->node = ep->npu->node;
        return TRUE;
    }
    ep->te = find_tier(f, loc);
    if (ep->te == NULL) {
        g_set_error(error, SV_MEMTIER_ERROR, SV_MEMTIER_ERROR_CONFIG,
                    "memory fabric: no tier at %s", loc_str(loc, b, sizeof b));
        return FALSE;
    }
    ep->node = loc->node;
    return TRUE;
}

/* The links of one end of a leg (source side when `read`), `other_node` is the node of the other
 * end (the CXL switch port of a cluster-scope device). */
static gboolean side(sv_memtier_fabric *f, const struct endpoint *ep, gboolean read,
                     int32_t other_node, struct leg *leg, GError **error)
{
    if (ep->npu != NULL) {
        leg_add(leg, read ? ep->npu->d2h : ep->npu->h2d, ep->npu->bw, ep->npu->lat);
        return TRUE;
    }
    const struct tier_ent *te = ep->te;
    if (te->loc.kind == SV_MEMTIER_SSD)
        leg_add(leg, read ? te->rd : te->wr, read ? te->rd_bw : te->wr_bw, te->lat);
    else
        leg_add(leg, te->rd, te->rd_bw, te->lat);
    if (te->loc.kind == SV_MEMTIER_CXL && te->loc.node < 0) {
        if (other_node < 0 || (guint)other_node >= f->ports->len ||
            !g_array_index(f->ports, struct port_ent, other_node).present) {
            g_set_error(error, SV_MEMTIER_ERROR, SV_MEMTIER_ERROR_CONFIG,
                        "memory fabric: node %d has no port to the cluster CXL pool", other_node);
            return FALSE;
        }
        const struct port_ent *p = &g_array_index(f->ports, struct port_ent, other_node);
        leg_add(leg, p->link, p->bw, p->lat);
    }
    return TRUE;
}

/* First NPU (lowest id) with a PCIe link on `node`, -1 if none. */
static int first_npu(const sv_memtier_fabric *f, int32_t node)
{
    for (guint i = 0; i < f->npus->len; i++) {
        const struct npu_ent *e = &g_array_index(f->npus, struct npu_ent, i);
        if (e->present && e->node == node)
            return (int)i;
    }
    return -1;
}

static void leg_ends(struct leg *leg, const struct endpoint *a, const struct endpoint *b)
{
    leg->src = a->loc;
    leg->dst = b->loc;
    leg->src_node = a->node;
    leg->dst_node = b->node;
}

static gboolean build_route(sv_memtier_fabric *f, const struct endpoint *s,
                            const struct endpoint *d, sv_memtier_route *r, GError **error)
{
    char b1[64], b2[64];
    r->src_tier = s->npu != NULL ? s->npu->hbm : s->te->tier;
    r->dst_tier = d->npu != NULL ? d->npu->hbm : d->te->tier;
    sv_memtier_kind sk = s->loc.kind, dk = d->loc.kind;
    if ((sk == SV_MEMTIER_HBM && dk == SV_MEMTIER_HBM) || loc_eq(&s->loc, &d->loc) ||
        (sk == SV_MEMTIER_SSD && dk == SV_MEMTIER_SSD)) {
        g_set_error(error, SV_MEMTIER_ERROR, SV_MEMTIER_ERROR_UNSUPPORTED,
                    "memory fabric: no route from %s to %s", loc_str(&s->loc, b1, sizeof b1),
                    loc_str(&d->loc, b2, sizeof b2));
        return FALSE;
    }
    gboolean s_cluster = s->node < 0, d_cluster = d->node < 0;
    if (!s_cluster && !d_cluster && s->node != d->node) {
        /* Remote: another node's host DRAM <-> an NPU, over the network (cluster pool). */
        gboolean ok = (sk == SV_MEMTIER_DRAM && dk == SV_MEMTIER_HBM) ||
                      (sk == SV_MEMTIER_HBM && dk == SV_MEMTIER_DRAM);
        int home = first_npu(f, sk == SV_MEMTIER_DRAM ? s->node : d->node);
        if (!ok || f->net == NULL || home < 0) {
            g_set_error(error, SV_MEMTIER_ERROR, SV_MEMTIER_ERROR_UNSUPPORTED,
                        "memory fabric: no route from %s to %s (%s)",
                        loc_str(&s->loc, b1, sizeof b1), loc_str(&d->loc, b2, sizeof b2),
                        !ok              ? "across nodes only host DRAM <-> NPU"
                        : f->net == NULL ? "needs network_model flow"
                                         : "no NPU on the home node");
            return FALSE;
        }
        int npu = sk == SV_MEMTIER_HBM ? s->loc.device : d->loc.device;
        const struct tier_ent *dram = sk == SV_MEMTIER_DRAM ? s->te : d->te;
        struct leg *leg = &r->leg[0];
        r->nlegs = 1;
        leg_ends(leg, s, d);
        int tmp[LEG_MAX_LINKS];
        double lat = 0;
        SV_ASSERT(sv_net_route_max_links(f->net) <= LEG_MAX_LINKS - 1);
        int n = sk == SV_MEMTIER_DRAM ? sv_net_route_links(f->net, home, npu, tmp, &lat)
                                      : sv_net_route_links(f->net, npu, home, tmp, &lat);
        leg_add(leg, dram->rd, dram->rd_bw, dram->lat);
        leg->net_lat = lat;
        /* Topology links: bandwidth from the network; min_bw is an estimate here. */
        for (int i = 0; i < n; i++)
            leg->links[leg->n++] = tmp[i];
        return TRUE;
    }
    int32_t node = s_cluster ? d->node : s->node; /* the node the transfer happens on */
    struct endpoint dram = {0};
    gboolean need_dram = (sk == SV_MEMTIER_SSD && dk != SV_MEMTIER_DRAM) ||
                         (dk == SV_MEMTIER_SSD && sk != SV_MEMTIER_DRAM);
    if (need_dram) {
        struct sv_memtier_loc dl = {SV_MEMTIER_DRAM, node, 0};
        if (!resolve(f, &dl, &dram, error))
            return FALSE;
    }
    if (need_dram) {
        /* store-and-forward through host DRAM: [src, dram] then [dram, dst] */
        r->nlegs = 2;
        leg_ends(&r->leg[0], s, &dram);
        leg_ends(&r->leg[1], &dram, d);
        if (!side(f, s, TRUE, node, &r->leg[0], error) ||
            !side(f, &dram, FALSE, node, &r->leg[0], error) ||
            !side(f, &dram, TRUE, node, &r->leg[1], error) ||
            !side(f, d, FALSE, node, &r->leg[1], error))
            return FALSE;
    } else {
        r->nlegs = 1;
        leg_ends(&r->leg[0], s, d);
        if (!side(f, s, TRUE, node, &r->leg[0], error) ||
            !side(f, d, FALSE, node, &r->leg[0], error))
            return FALSE;
    }
    /* The leg touching an SSD occupies its queue: the first when reading, the last when
     * writing. */
    if (sk == SV_MEMTIER_SSD)
        r->leg[0].qtier = s->te;
    else if (dk == SV_MEMTIER_SSD)
        r->leg[r->nlegs - 1].qtier = d->te;
    return TRUE;
}

const sv_memtier_route *sv_memtier_fabric_route(sv_memtier_fabric *f,
                                                const struct sv_memtier_loc *src,
                                                const struct sv_memtier_loc *dst, GError **error)
{
    SV_ASSERT(f != NULL && src != NULL && dst != NULL);
    char key[96];
    snprintf(key, sizeof key, "%d:%d:%d>%d:%d:%d", (int)src->kind, src->node,
             src->kind == SV_MEMTIER_DRAM ? 0 : src->device, (int)dst->kind, dst->node,
             dst->kind == SV_MEMTIER_DRAM ? 0 : dst->device);
    sv_memtier_route *r = g_hash_table_lookup(f->routes, key);
    if (r != NULL)
        return r;
    struct endpoint s, d;
    if (!resolve(f, src, &s, error) || !resolve(f, dst, &d, error))
        return NULL;
    r = g_new0(sv_memtier_route, 1);
    if (!build_route(f, &s, &d, r, error)) {
        g_free(r);
        return NULL;
    }
    g_hash_table_insert(f->routes, g_strdup(key), r);
    return r;
}

int sv_memtier_route_legs(const sv_memtier_route *r)
{
    return r->nlegs;
}

sv_time sv_memtier_route_alone_ns(const sv_memtier_route *r, uint64_t bytes)
{
    sv_time t = 0;
    for (int i = 0; i < r->nlegs; i++) {
        const struct leg *leg = &r->leg[i];
        double ser = leg->n > 0 && leg->min_bw > 0 && bytes > 0 ? (double)bytes / leg->min_bw : 0;
        t += sv_time_from_ns(ser + leg->lat + leg->net_lat);
    }
    return t;
}

/* ---- transfers ----------------------------------------------------------------------------- */

static void start_leg(struct xfer *x);

static void on_leg_done(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)arg;
    struct xfer *x = ctx;
    const struct leg *leg = &x->r->leg[x->leg];
    if (leg->qtier != NULL) {
        struct tier_ent *te = leg->qtier;
        te->in_service--;
        struct xfer *next = g_queue_pop_head(&te->waiting);
        if (next != NULL)
            start_leg(next);
    }
    sv_memtier_fabric *f = x->f;
    if (f->observer != NULL && x->bytes > 0) {
        struct sv_memtier_xfer_report rep = {.src = leg->src,
                                             .dst = leg->dst,
                                             .src_node = leg->src_node,
                                             .dst_node = leg->dst_node,
                                             .bytes = x->bytes,
                                             .now = sv_engine_now(eng)};
        f->observer(f->observer_ctx, &rep);
    }
    if (f->tap != NULL)
        tap_leg(f, x, leg, sv_engine_now(eng));
    if (++x->leg < x->r->nlegs) {
        start_leg(x);
        return;
    }
    f->bytes_done += x->bytes;
    sv_net_done_fn done = x->done;
    void *dctx = x->ctx;
    uint64_t darg = x->arg;
    g_free(x);
    done(eng, dctx, darg);
}

static void start_leg(struct xfer *x)
{
    sv_memtier_fabric *f = x->f;
    const struct leg *leg = &x->r->leg[x->leg];
    if (leg->qtier != NULL) {
        struct tier_ent *te = leg->qtier;
        if (te->queue_depth > 0 && te->in_service >= te->queue_depth) {
            g_queue_push_tail(&te->waiting, x);
            return;
        }
        te->in_service++;
    }
    x->leg_start = sv_engine_now(f->eng);
    sv_net_solver_start(f->solver, leg->links, leg->n, leg->lat, x->bytes, on_leg_done, x, 0);
}

void sv_memtier_fabric_xfer(sv_memtier_fabric *f, const sv_memtier_route *r, uint64_t bytes,
                            sv_net_done_fn done, void *ctx, uint64_t arg)
{
    SV_ASSERT(f != NULL && r != NULL && done != NULL);
    f->bytes_booked += bytes;
    if (r->src_tier != NULL)
        sv_memtier__tier_count_io(r->src_tier, bytes, 0);
    if (r->dst_tier != NULL)
        sv_memtier__tier_count_io(r->dst_tier, 0, bytes);
    struct xfer *x = g_new0(struct xfer, 1);
    x->f = f;
    x->r = r;
    x->bytes = bytes;
    x->done = done;
    x->ctx = ctx;
    x->arg = arg;
    start_leg(x);
}
