/* The sv_net object and the two stateless timing models: analytical (ASTRA-sim
 * congestion-unaware) and ideal (latency only). fifo lives in transport_fifo.c, flow in flow.c. */
#include "network/network_internal.h"

#include <string.h>

static const char *const model_names[] = {
    [SV_NET_MODEL_ANALYTICAL] = "analytical",
    [SV_NET_MODEL_FIFO] = "fifo",
    [SV_NET_MODEL_FLOW] = "flow",
    [SV_NET_MODEL_IDEAL] = "ideal",
};

gboolean sv_net_model_parse(const char *name, sv_net_model *out, GError **error)
{
    for (int m = 0; m < (int)G_N_ELEMENTS(model_names); m++) {
        if (name != NULL && strcmp(name, model_names[m]) == 0) {
            *out = (sv_net_model)m;
            return TRUE;
        }
    }
    g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                "unknown network model \"%s\" (expected analytical, fifo, flow or ideal)",
                name != NULL ? name : "(null)");
    return FALSE;
}

const char *sv_net_model_name(sv_net_model model)
{
    if ((int)model < 0 || (int)model >= (int)G_N_ELEMENTS(model_names))
        return "unknown";
    return model_names[model];
}

sv_net *sv_net_new(sv_engine *eng, const struct sv_net_topo_cfg *cfg, sv_net_model model,
                   GError **error)
{
    return sv_net__new(eng, cfg, model, FALSE, error);
}

sv_net *sv_net__new(sv_engine *eng, const struct sv_net_topo_cfg *cfg, sv_net_model model,
                    gboolean quiet, GError **error)
{
    SV_ASSERT(cfg != NULL);
    return sv_net__new_any(eng, cfg, NULL, NULL, model, quiet, error);
}

sv_net *sv_net__new_any(sv_engine *eng, const struct sv_net_topo_cfg *cfg,
                        const struct sv_net_graph_cfg *graph, const sv_net *like,
                        sv_net_model model, gboolean quiet, GError **error)
{
    SV_ASSERT(eng != NULL && (cfg != NULL) != (graph != NULL));
    if ((int)model < 0 || (int)model >= (int)G_N_ELEMENTS(model_names)) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, "unknown network model %d",
                    (int)model);
        return NULL;
    }
    sv_net *net = g_new0(sv_net, 1);
    net->eng = eng;
    net->model = model;
    net->chunk_slabs = g_ptr_array_new_with_free_func(g_free);
    net->chunk_slab_used = SV_NET_CHUNK_SLAB;
    if (graph != NULL
            ? !sv_net__geom_init_graph(&net->geom, graph, like != NULL ? &like->geom : NULL, error)
            : !sv_net__geom_init(&net->geom, cfg, error)) {
        sv_net_free(net);
        return NULL;
    }
    if (model == SV_NET_MODEL_FIFO)
        sv_net__fifo_init(net);
    if (model == SV_NET_MODEL_FLOW)
        net->flow = sv_net__flow_model_new(net);
    if (!quiet)
        g_debug("network: %d NPUs in %d dimension(s)%s, %s transport", net->geom.npus,
                net->geom.cfg.ndims, graph != NULL ? " (a graph)" : "", sv_net_model_name(model));
    return net;
}

void sv_net_free(sv_net *net)
{
    if (net == NULL)
        return;
    sv_net__fifo_clear(net);
    sv_net__flow_model_free(net->flow);
    sv_net__geom_clear(&net->geom);
    g_free(net->watch_until);
    g_free(net->busy_until);
    if (net->tracked != NULL)
        g_array_free(net->tracked, TRUE);
    sv_u64map_clear(&net->track_idx);
    sv_net__tap_clear(net);
    if (net->chunk_slabs != NULL)
        g_ptr_array_free(net->chunk_slabs, TRUE);
    g_free(net);
}

int sv_net_npus(const sv_net *net)
{
    return net->geom.npus;
}

sv_net_model sv_net_get_model(const sv_net *net)
{
    return net->model;
}

const struct sv_net_topo_cfg *sv_net_topo(const sv_net *net)
{
    return &net->geom.cfg;
}

sv_engine *sv_net_engine(const sv_net *net)
{
    return net->eng;
}

void sv_net_get_stats(const sv_net *net, struct sv_net_stats *out)
{
    *out = net->stats;
}

void sv_net_set_observer(sv_net *net, sv_net_observer_fn fn, void *ctx)
{
    SV_ASSERT(net != NULL);
    net->observer = fn;
    net->observer_ctx = fn != NULL ? ctx : NULL;
}

int sv_net_route_dims(const sv_net *net, int src, int dst, int *links_per_dim,
                      int *switches_per_dim)
{
    const struct sv_net_geom *g = &net->geom;
    SV_ASSERT(src >= 0 && src < g->npus && dst >= 0 && dst < g->npus);
    if (g->graph != NULL) {
        /* one dimension: every link of the route, every switch device it passes */
        int n = 0, sw = 0;
        if (src != dst) {
            const int *r = sv_net__graph_route(g, src, dst, &n);
            for (int h = 0; h + 1 < n; h++)
                sw += g->links[r[h]].dst_dev >= g->npus;
        }
        if (links_per_dim != NULL)
            links_per_dim[0] = n;
        if (switches_per_dim != NULL)
            switches_per_dim[0] = sw;
        return n;
    }
    int total = 0;
    for (int d = 0; d < g->cfg.ndims; d++) {
        int i = sv_net__geom_coord(g, src, d), j = sv_net__geom_coord(g, dst, d);
        int hops = i != j ? sv_net__geom_dim_hops(g, d, i, j) : 0;
        if (links_per_dim != NULL)
            links_per_dim[d] = hops;
        if (switches_per_dim != NULL)
            switches_per_dim[d] = i != j && g->cfg.kind[d] == SV_NET_TOPO_SWITCH ? 1 : 0;
        total += hops;
    }
    return total;
}

/* ---- message record pool ------------------------------------------------------------------ */

struct sv_net_chunk *sv_net__chunk_alloc(sv_net *net, int src, int dst, uint64_t bytes,
                                         sv_net_done_fn done, void *ctx, uint64_t arg)
{
    struct sv_net_chunk *c = net->chunk_free;
    if (c != NULL) {
        net->chunk_free = c->next;
    } else {
        if (net->chunk_slab_used == SV_NET_CHUNK_SLAB) {
            net->chunk_slab = g_new(struct sv_net_chunk, SV_NET_CHUNK_SLAB);
            g_ptr_array_add(net->chunk_slabs, net->chunk_slab);
            net->chunk_slab_used = 0;
        }
        c = &net->chunk_slab[net->chunk_slab_used++];
    }
    c->net = net;
    c->cur_dev = src;
    c->src = src;
    c->dst = dst;
    c->next = NULL;
    c->bytes = bytes;
    c->done = done;
    c->ctx = ctx;
    c->arg = arg;
    return c;
}

void sv_net__deliver(sv_net *net, int src, int dst, uint64_t bytes, sv_net_done_fn done, void *ctx,
                     uint64_t arg)
{
    net->stats.bytes_delivered += bytes;
    if (net->observer != NULL && bytes > 0) {
        struct sv_net_delivery d = {
            .src = src, .dst = dst, .bytes = bytes, .now = sv_engine_now(net->eng)};
        net->observer(net->observer_ctx, &d);
    }
    if (done != NULL)
        done(net->eng, ctx, arg);
}

void sv_net__chunk_deliver(struct sv_net_chunk *c)
{
    sv_net *net = c->net;
    if (G_UNLIKELY(net->track))
        sv_net__untrack(net, c);
    struct sv_net_chunk copy = *c;
    c->next = net->chunk_free;
    net->chunk_free = c;
    sv_net__deliver(net, copy.src, copy.dst, copy.bytes, copy.done, copy.ctx, copy.arg);
}

static void on_delivery(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)eng;
    (void)arg;
    sv_net__chunk_deliver(ctx);
}

void sv_net__schedule_delivery(sv_net *net, sv_time at, int src, int dst, uint64_t bytes,
                               sv_net_done_fn done, void *ctx, uint64_t arg)
{
    struct sv_net_chunk *c = sv_net__chunk_alloc(net, src, dst, bytes, done, ctx, arg);
    c->cur_dev = dst;
    sv_event_id eid = sv_engine_schedule(net->eng, at, SV_PRIO_DEFAULT, on_delivery, c, 0);
    if (G_UNLIKELY(net->track))
        sv_net__track(net, c, at, eid, SV_NET__TRACK_DELIVERY);
}

/* ---- analytical and ideal ----------------------------------------------------------------- */

/* ASTRA-sim congestion_unaware MultiDimTopology::send + BasicTopology::
 * compute_communication_delay: only the first dimension in which the coordinates differ is used;
 * delay = (hops * L) + bytes / B, truncated once. */
static void analytical_send(sv_net *net, int src, int dst, uint64_t bytes, sv_net_done_fn done,
                            void *ctx, uint64_t arg)
{
    const struct sv_net_geom *g = &net->geom;
    int hops;
    sv_time delay;
    if (g->graph != NULL) {
        /* a graph: the route's latency sum + bytes at its bottleneck (docs/cluster-network.md) */
        double lat = 0;
        double bw = sv_net__graph_route_min_bw(g, src, dst, &lat);
        sv_net__graph_route(g, src, dst, &hops);
        delay = sv_time_from_ns(lat + (double)bytes / bw);
    } else {
        int d = sv_net__geom_first_diff_dim(g, src, dst);
        hops = sv_net__geom_dim_hops(g, d, sv_net__geom_coord(g, src, d),
                                     sv_net__geom_coord(g, dst, d));
        const struct sv_net_link *ll = sv_net__geom_line_link(g, d, src);
        double link_delay = hops * ll->lat_ns;
        double serialization = (double)bytes / ll->bw_bpns;
        delay = sv_time_from_ns(link_delay + serialization);
    }
    net->stats.link_bytes += bytes * (uint64_t)hops;
    net->stats.link_transfers += (uint64_t)hops;
    sv_net__schedule_delivery(net, sv_engine_now(net->eng) + delay, src, dst, bytes, done, ctx,
                              arg);
}

/* Infinite bandwidth: the latency of the dimension-ordered route only (the route fifo and flow
 * use; in 1-D it is analytical's hops * L). */
static void ideal_send(sv_net *net, int src, int dst, uint64_t bytes, sv_net_done_fn done,
                       void *ctx, uint64_t arg)
{
    double lat = 0;
    int hops = sv_net__geom_route(&net->geom, src, dst, NULL, &lat);
    net->stats.link_bytes += bytes * (uint64_t)hops;
    net->stats.link_transfers += (uint64_t)hops;
    sv_net__schedule_delivery(net, sv_engine_now(net->eng) + sv_time_from_ns(lat), src, dst, bytes,
                              done, ctx, arg);
}

void sv_net_send(sv_net *net, int src, int dst, uint64_t bytes, sv_net_done_fn on_arrival,
                 void *ctx, uint64_t arg)
{
    sv_net_send_labeled(net, src, dst, bytes, NULL, on_arrival, ctx, arg);
}

void sv_net_send_labeled(sv_net *net, int src, int dst, uint64_t bytes,
                         const struct sv_net_msg_label *label, sv_net_done_fn on_arrival, void *ctx,
                         uint64_t arg)
{
    SV_ASSERT(net != NULL);
    SV_ASSERT(src >= 0 && src < net->geom.npus && dst >= 0 && dst < net->geom.npus);
    SV_ASSERT(src != dst);
    if (G_UNLIKELY(net->taps != NULL))
        sv_net__tap_send(net, src, dst, bytes, label, &on_arrival, &ctx, &arg);
    net->stats.messages++;
    net->stats.bytes_sent += bytes;
    switch (net->model) {
    case SV_NET_MODEL_ANALYTICAL:
        analytical_send(net, src, dst, bytes, on_arrival, ctx, arg);
        return;
    case SV_NET_MODEL_FIFO:
        sv_net__fifo_send(net, src, dst, bytes, on_arrival, ctx, arg);
        return;
    case SV_NET_MODEL_FLOW:
        sv_net__flow_send(net, src, dst, bytes, on_arrival, ctx, arg);
        return;
    case SV_NET_MODEL_IDEAL:
        ideal_send(net, src, dst, bytes, on_arrival, ctx, arg);
        return;
    }
    g_assert_not_reached();
}
