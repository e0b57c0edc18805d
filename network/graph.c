/* An explicit network graph: NPUs and switches joined by links of their own bandwidth and
 * latency, with every NPU pair's route computed once (docs/cluster-network.md "An explicit
 * fabric graph").
 *
 * Route metric: the fewest links, then the lowest sum of link latencies. Hops first because that
 * is what a Clos fabric's routing counts (BGP's AS-path length, OSPF with unit costs: RFC 7938),
 * and every hop is a store-and-forward or a switch traversal; latency breaks the tie
 * so that a slower of two equally long paths is not taken. Bandwidth is not part of the metric:
 * routing protocols do not see load, the timing model does (flow: max-min over the route).
 *
 * Among the routes of equal (hops, latency) that remain, shortest routing takes at each device
 * the outgoing link with the lowest id (deterministic, config order); ECMP picks among the
 * equal-cost next links by a hash of (source, destination, device), as a switch hashes a flow's
 * 5-tuple to one of its equal-cost next hops (flow-level ECMP: RFC 2992, "hash-threshold"), so a
 * message's whole route is fixed by its ends and every message of a pair takes the same one. */
#include "network/network_internal.h"

#include <limits.h>
#include <math.h>
#include <string.h>

struct sv_net_graph_cfg *sv_net_graph_cfg_new(int npus, int nswitches)
{
    struct sv_net_graph_cfg *g = g_new0(struct sv_net_graph_cfg, 1);
    g->npus = npus;
    g->nswitches = nswitches;
    g->routing = SV_NET_ROUTE_SHORTEST;
    g->links = g_array_new(FALSE, TRUE, sizeof(struct sv_net_graph_link));
    return g;
}

void sv_net_graph_cfg_free(struct sv_net_graph_cfg *g)
{
    if (g == NULL)
        return;
    if (g->names != NULL) {
        for (int d = 0; d < g->npus + g->nswitches; d++)
            g_free(g->names[d]);
        g_free(g->names);
    }
    g_array_free(g->links, TRUE);
    g_free(g);
}

void sv_net_graph_cfg_set_name(struct sv_net_graph_cfg *g, int dev, const char *name)
{
    SV_ASSERT(dev >= 0 && dev < g->npus + g->nswitches);
    if (g->names == NULL)
        g->names = g_new0(char *, (size_t)(g->npus + g->nswitches));
    g_free(g->names[dev]);
    g->names[dev] = g_strdup(name);
}

void sv_net_graph_cfg_add_link(struct sv_net_graph_cfg *g, int a, int b, double bandwidth_gbps,
                               double latency_ns, gboolean directed)
{
    struct sv_net_graph_link l = {.a = a,
                                  .b = b,
                                  .bandwidth_gbps = bandwidth_gbps,
                                  .latency_ns = latency_ns,
                                  .directed = directed};
    g_array_append_val(g->links, l);
}

const char *sv_net_graph_cfg_name(const struct sv_net_graph_cfg *g, int dev, char *buf, size_t len)
{
    if (g->names != NULL && dev >= 0 && dev < g->npus + g->nswitches && g->names[dev] != NULL)
        return g->names[dev];
    if (dev < g->npus)
        g_snprintf(buf, len, "npu %d", dev);
    else
        g_snprintf(buf, len, "switch %d", dev - g->npus);
    return buf;
}

static struct sv_net_graph_cfg *graph_copy(const struct sv_net_graph_cfg *src)
{
    struct sv_net_graph_cfg *g = sv_net_graph_cfg_new(src->npus, src->nswitches);
    g->routing = src->routing;
    memcpy(g->where, src->where, sizeof g->where);
    g_array_append_vals(g->links, src->links->data, src->links->len);
    if (src->names != NULL)
        for (int d = 0; d < src->npus + src->nswitches; d++)
            if (src->names[d] != NULL)
                sv_net_graph_cfg_set_name(g, d, src->names[d]);
    return g;
}

/* The prefix of error messages. */
static const char *W(const struct sv_net_graph_cfg *g)
{
    return g->where[0] ? g->where : "network graph";
}

static gboolean range_ok(const char *path, double v, struct sv_range_double r, GError **error)
{
    GError *e = NULL;
    if (sv_range_check_double(path, v, r, &e))
        return TRUE;
    g_set_error_literal(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, e->message);
    g_error_free(e);
    return FALSE;
}

static gboolean graph_validate(const struct sv_net_graph_cfg *gc, GError **error)
{
    if (gc->npus < 2 || gc->npus > SV_NET_GRAPH_MAX_NPUS || gc->nswitches < 0 ||
        gc->nswitches > (1 << 20)) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "%s: %d npus and %d switches (2 to %d npus)", W(gc), gc->npus, gc->nswitches,
                    SV_NET_GRAPH_MAX_NPUS);
        return FALSE;
    }
    if (gc->routing != SV_NET_ROUTE_SHORTEST && gc->routing != SV_NET_ROUTE_ECMP) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, "%s: unknown routing %d", W(gc),
                    (int)gc->routing);
        return FALSE;
    }
    int ndevs = gc->npus + gc->nswitches;
    if (gc->links->len > (guint)(INT_MAX / 4)) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, "%s: too many links", W(gc));
        return FALSE;
    }
    for (guint k = 0; k < gc->links->len; k++) {
        const struct sv_net_graph_link *l = &g_array_index(gc->links, struct sv_net_graph_link, k);
        if (l->a < 0 || l->a >= ndevs || l->b < 0 || l->b >= ndevs) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s: links[%u]: device %d or %d out of range [0, %d)", W(gc), k, l->a, l->b,
                        ndevs);
            return FALSE;
        }
        if (l->a == l->b) {
            char buf[32];
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s: links[%u]: a link from '%s' to itself", W(gc), k,
                        sv_net_graph_cfg_name(gc, l->a, buf, sizeof buf));
            return FALSE;
        }
        g_autofree char *bw = g_strdup_printf("%s: links[%u]: bandwidth", W(gc), k);
        g_autofree char *lat = g_strdup_printf("%s: links[%u]: latency", W(gc), k);
        if (!range_ok(bw, l->bandwidth_gbps, SV_RANGE_BW_GBPS, error) ||
            !range_ok(lat, l->latency_ns, SV_RANGE_LATENCY_NS, error))
            return FALSE;
    }
    return TRUE;
}

/* Adjacency in CSR form, links in id order. */
struct adj {
    int *start; /* ndevs + 1 */
    int *link;
};

static void adj_build(struct adj *a, const struct sv_net_geom *g, gboolean reverse)
{
    a->start = g_new0(int, (size_t)g->ndevs + 1);
    a->link = g_new(int, (size_t)MAX(g->nlinks, 1));
    for (int l = 0; l < g->nlinks; l++)
        a->start[(reverse ? g->links[l].dst_dev : g->links[l].src_dev) + 1]++;
    for (int d = 0; d < g->ndevs; d++)
        a->start[d + 1] += a->start[d];
    g_autofree int *fill = g_memdup2(a->start, sizeof(int) * (size_t)g->ndevs);
    for (int l = 0; l < g->nlinks; l++)
        a->link[fill[reverse ? g->links[l].dst_dev : g->links[l].src_dev]++] = l;
}

static void adj_clear(struct adj *a)
{
    g_free(a->start);
    g_free(a->link);
}

/* The ECMP choice among `n` equal-cost next links at device `cur` for the pair (src, dst). */
static int ecmp_pick(int src, int dst, int cur, int n)
{
    uint64_t h = sv_hash_mix64(((uint64_t)(uint32_t)src << 32) | (uint32_t)dst);
    h = sv_hash_mix64(h ^ (uint64_t)(uint32_t)cur);
    return (int)(h % (uint64_t)n);
}

static void routes_unref(struct sv_net__graph_routes *r)
{
    if (r == NULL || --r->ref > 0)
        return;
    g_free(r->start);
    g_free(r->link);
    g_free(r);
}

/* Every NPU pair's route (see the top of this file), built destination by destination: the
 * fewest links to d by a breadth-first search over the reversed links, then the lowest latency
 * sum in breadth-first order (a device's next hops are one link closer, so already final), then
 * per device the outgoing links on a cheapest route (the candidates), among which each source's
 * walk picks. O(NPUs x (devices + links) + NPUs^2 x route length). */
static struct sv_net__graph_routes *routes_build(const struct sv_net_geom *g,
                                                 const struct sv_net_graph_cfg *gc,
                                                 gboolean check_only, GError **error)
{
    struct adj out, in;
    adj_build(&out, g, FALSE);
    adj_build(&in, g, TRUE);
    int n = g->npus, nd = g->ndevs;
    g_autofree int *hops = g_new(int, (size_t)nd);
    g_autofree double *lat = g_new(double, (size_t)nd);
    g_autofree int *order = g_new(int, (size_t)nd);
    g_autofree int *cstart = g_new(int, (size_t)nd + 1);
    g_autofree int *cand = g_new(int, (size_t)MAX(g->nlinks, 1));
    /* routes are found per destination and stored per source: lengths first, then the links */
    g_autofree int *len = g_new0(int, (size_t)n *(size_t)n);
    GPtrArray *per_dst = g_ptr_array_new_with_free_func(g_free); /* int[]: routes to d */
    struct sv_net__graph_routes *r = NULL;
    int64_t total = 0;
    int max_links = 0;
    for (int d = 0; d < n; d++) {
        for (int v = 0; v < nd; v++)
            hops[v] = -1;
        int head = 0, tail = 0;
        hops[d] = 0;
        lat[d] = 0;
        order[tail++] = d;
        while (head < tail) {
            int v = order[head++];
            for (int k = in.start[v]; k < in.start[v + 1]; k++) {
                int u = g->links[in.link[k]].src_dev;
                if (hops[u] < 0) {
                    hops[u] = hops[v] + 1;
                    order[tail++] = u;
                }
            }
        }
        for (int i = 1; i < tail; i++) {
            int v = order[i];
            double best = INFINITY;
            for (int k = out.start[v]; k < out.start[v + 1]; k++) {
                const struct sv_net_link *L = &g->links[out.link[k]];
                if (hops[L->dst_dev] == hops[v] - 1)
                    best = MIN(best, L->lat_ns + lat[L->dst_dev]);
            }
            lat[v] = best;
        }
        int nc = 0;
        for (int v = 0; v < nd; v++) {
            cstart[v] = nc;
            if (hops[v] <= 0)
                continue;
            for (int k = out.start[v]; k < out.start[v + 1]; k++) {
                const struct sv_net_link *L = &g->links[out.link[k]];
                if (hops[L->dst_dev] == hops[v] - 1 && L->lat_ns + lat[L->dst_dev] == lat[v])
                    cand[nc++] = out.link[k];
            }
            SV_ASSERT(nc > cstart[v]);
        }
        cstart[nd] = nc;
        int64_t dlen = 0;
        for (int s = 0; s < n; s++) {
            if (s != d && hops[s] < 0) {
                char b1[32], b2[32];
                g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, "%s: '%s' cannot reach '%s'",
                            W(gc), sv_net_graph_cfg_name(gc, s, b1, sizeof b1),
                            sv_net_graph_cfg_name(gc, d, b2, sizeof b2));
                goto out;
            }
            len[(size_t)s * n + d] = s == d ? 0 : hops[s];
            dlen += s == d ? 0 : hops[s];
            max_links = MAX(max_links, hops[s]);
        }
        total += dlen;
        if (check_only)
            continue;
        if (total > INT_MAX / 2) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, "%s: routes too long to store",
                        W(gc));
            goto out;
        }
        int *routes = g_new(int, (size_t)MAX(dlen, 1));
        g_ptr_array_add(per_dst, routes);
        int at = 0;
        for (int s = 0; s < n; s++) {
            for (int cur = s; cur != d;) {
                int c0 = cstart[cur], cn = cstart[cur + 1] - c0;
                int pick =
                    gc->routing == SV_NET_ROUTE_ECMP && cn > 1 ? ecmp_pick(s, d, cur, cn) : 0;
                int l = cand[c0 + pick];
                routes[at++] = l;
                cur = g->links[l].dst_dev;
            }
        }
    }
    r = g_new0(struct sv_net__graph_routes, 1);
    r->ref = 1;
    r->max_links = max_links;
    if (check_only)
        goto out; /* every pair reachable: an empty table says so */
    r->start = g_new(int, (size_t)n *(size_t)n + 1);
    r->link = g_new(int, (size_t)MAX(total, 1));
    {
        /* source-major: route (s, d) sits in destination d's block after the routes of the
         * sources before s */
        g_autofree int *off = g_new0(int, (size_t)n); /* per destination: read position */
        int at = 0;
        for (int s = 0; s < n; s++) {
            for (int d = 0; d < n; d++) {
                int k = len[(size_t)s * n + d];
                r->start[(size_t)s * n + d] = at;
                memcpy(r->link + at, (int *)per_dst->pdata[d] + off[d], sizeof(int) * (size_t)k);
                off[d] += k;
                at += k;
            }
        }
        r->start[(size_t)n * n] = at;
    }
out:
    g_ptr_array_free(per_dst, TRUE);
    adj_clear(&out);
    adj_clear(&in);
    return r;
}

/* The geometry's devices and links from a validated graph (no routes yet). */
static void geom_links(struct sv_net_geom *g, const struct sv_net_graph_cfg *gc)
{
    memset(g, 0, sizeof *g);
    g->graph = graph_copy(gc);
    g->npus = gc->npus;
    g->ndevs = gc->npus + gc->nswitches;
    int nl = 0;
    for (guint k = 0; k < gc->links->len; k++)
        nl += g_array_index(gc->links, struct sv_net_graph_link, k).directed ? 1 : 2;
    g->nlinks = nl;
    g->links = g_new0(struct sv_net_link, (size_t)MAX(nl, 1));
    double min_bw = INFINITY;
    nl = 0;
    for (guint k = 0; k < gc->links->len; k++) {
        const struct sv_net_graph_link *l = &g_array_index(gc->links, struct sv_net_graph_link, k);
        double bw = sv_bw_gbps_to_bytes_per_ns(l->bandwidth_gbps);
        min_bw = MIN(min_bw, l->bandwidth_gbps);
        g->links[nl++] = (struct sv_net_link){l->a, l->b, bw, l->latency_ns};
        if (!l->directed)
            g->links[nl++] = (struct sv_net_link){l->b, l->a, bw, l->latency_ns};
    }
    /* For the system layer: one dimension of every NPU (docs/collectives.md). */
    g->cfg.ndims = 1;
    g->cfg.kind[0] = SV_NET_TOPO_SWITCH;
    g->cfg.npus[0] = g->npus;
    g->cfg.bandwidth_gbps[0] = isfinite(min_bw) ? min_bw : 1;
    g->cfg.latency_ns[0] = 0;
    g->stride[0] = 1;
    g->lines[0] = 1;
    g->links_per_line[0] = g->nlinks;
    g->switch_base[0] = -1;
    g->bw_bpns[0] = sv_bw_gbps_to_bytes_per_ns(g->cfg.bandwidth_gbps[0]);
    g->switch_dim = g_new0(int, 1);
    g->switch_line = g_new0(int, 1);
}

gboolean sv_net__geom_init_graph(struct sv_net_geom *g, const struct sv_net_graph_cfg *gc,
                                 const struct sv_net_geom *like, GError **error)
{
    memset(g, 0, sizeof *g);
    if (!graph_validate(gc, error))
        return FALSE;
    geom_links(g, gc);
    if (like != NULL) {
        SV_ASSERT(like->graph != NULL && like->npus == g->npus && like->nlinks == g->nlinks);
        g->routes = like->routes;
        g->routes->ref++;
    } else {
        g->routes = routes_build(g, gc, FALSE, error);
    }
    if (g->routes == NULL) {
        sv_net__geom_clear_graph(g);
        return FALSE;
    }
    g->max_route_links = g->routes->max_links;
    return TRUE;
}

void sv_net__geom_clear_graph(struct sv_net_geom *g)
{
    sv_net_graph_cfg_free(g->graph);
    g->graph = NULL;
    routes_unref(g->routes);
    g->routes = NULL;
    g_clear_pointer(&g->links, g_free);
    g_clear_pointer(&g->switch_dim, g_free);
    g_clear_pointer(&g->switch_line, g_free);
}

double sv_net__graph_route_min_bw(const struct sv_net_geom *g, int src, int dst, double *lat_ns)
{
    int n;
    const int *r = sv_net__graph_route(g, src, dst, &n);
    double bw = INFINITY, lat = 0;
    for (int h = 0; h < n; h++) {
        bw = MIN(bw, g->links[r[h]].bw_bpns);
        lat += g->links[r[h]].lat_ns;
    }
    if (lat_ns != NULL)
        *lat_ns = lat;
    return bw;
}

gboolean sv_net_graph_cfg_check(const struct sv_net_graph_cfg *g, GError **error)
{
    /* the links, and every pair's reachability without storing the routes */
    if (!graph_validate(g, error))
        return FALSE;
    struct sv_net_geom geom;
    geom_links(&geom, g);
    struct sv_net__graph_routes *r = routes_build(&geom, g, TRUE, error);
    gboolean ok = r != NULL;
    routes_unref(r);
    sv_net__geom_clear_graph(&geom);
    return ok;
}

sv_net *sv_net_new_graph(sv_engine *eng, const struct sv_net_graph_cfg *g, sv_net_model model,
                         GError **error)
{
    SV_ASSERT(g != NULL);
    return sv_net__new_any(eng, NULL, g, NULL, model, FALSE, error);
}

const struct sv_net_graph_cfg *sv_net_graph(const sv_net *net)
{
    return net->geom.graph;
}
