/* The cluster fabric as an explicit graph (issue 15 item 1; docs/cluster-network.md "An explicit
 * fabric graph"): a servesim extension of LLMServingSim's cluster config, whose `fabric` is
 * otherwise one level (a kind, one bandwidth and latency).
 *
 *   "fabric": {"graph": {
 *       "routing": "shortest" | "ecmp",
 *       "switches": [{"name": "spine0"}, {"name": "node0.nic"}],
 *       "links": [{"a": "node0.switch", "b": "spine0", "bw_gbps": 50, "latency_ns": 1000,
 *                  "directed": false}]}}
 *
 * Devices the links name: node<n>.npu<k> (k < the devices per node), node<n>.switch (the switch
 * of a node whose topology kind is switch, nvlink or pcie) and the graph's own switches. Each
 * node's topology expands into the graph first (its kind's links, its bandwidth and latency);
 * nodes of different kinds may then sit side by side. */
#include "planner/planner_internal.h"

#include <string.h>

struct fg_link {
    char *a, *b;
    double bw_gbps, latency_ns;
    gboolean directed;
};

struct sv_planner_fabric_graph {
    char where[160]; /* "cluster.json: fabric.graph" */
    sv_net_routing routing;
    GPtrArray *switches; /* names (char *) */
    GArray *links;       /* struct fg_link */
};

static const char *const graph_keys[] = {"routing", "switches", "links", NULL};
static const char *const switch_keys[] = {"name", NULL};
static const char *const link_keys[] = {"a", "b", "bw_gbps", "latency_ns", "directed", NULL};

void sv_planner__fabric_graph_free(struct sv_planner_fabric_graph *g)
{
    if (g == NULL)
        return;
    g_ptr_array_free(g->switches, TRUE);
    for (guint k = 0; k < g->links->len; k++) {
        g_free(g_array_index(g->links, struct fg_link, k).a);
        g_free(g_array_index(g->links, struct fg_link, k).b);
    }
    g_array_free(g->links, TRUE);
    g_free(g);
}

/* A string member (required), its path in errors. */
static gboolean get_name(JsonObject *o, const char *key, const char *where, char **out,
                         GError **error)
{
    JsonNode *n = json_object_get_member(o, key);
    if (!n || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING ||
        !json_node_get_string(n)[0])
        return sv_planner__path_error(error, where,
                                      "%s: must be a non-empty string (a device name)", key);
    *out = g_strdup(json_node_get_string(n));
    return TRUE;
}

/* A number member, required, in `r`; errors in the planner's domain. */
static gboolean get_number(JsonObject *o, const char *key, const char *where,
                           struct sv_range_double r, double *out, GError **error)
{
    GError *e = NULL;
    if (sv_cfg_get_double_range(o, key, where, TRUE, 0, r, out, &e))
        return TRUE;
    g_set_error_literal(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID, e->message);
    g_error_free(e);
    return FALSE;
}

gboolean sv_planner__fabric_graph_parse(JsonNode *node, const char *where,
                                        struct sv_planner_fabric_graph **out, GError **error)
{
    *out = NULL;
    if (!JSON_NODE_HOLDS_OBJECT(node))
        return sv_planner__path_error(error, where, "must be an object with \"links\"");
    JsonObject *o = json_node_get_object(node);
    sv_planner__warn_unknown(o, graph_keys, where);
    struct sv_planner_fabric_graph *g = g_new0(struct sv_planner_fabric_graph, 1);
    g_strlcpy(g->where, where, sizeof g->where);
    g->switches = g_ptr_array_new_with_free_func(g_free);
    g->links = g_array_new(FALSE, TRUE, sizeof(struct fg_link));
    JsonNode *rn = json_object_get_member(o, "routing");
    if (rn) {
        const char *r = JSON_NODE_HOLDS_VALUE(rn) && json_node_get_value_type(rn) == G_TYPE_STRING
                            ? json_node_get_string(rn)
                            : "";
        if (strcmp(r, "shortest") == 0)
            g->routing = SV_NET_ROUTE_SHORTEST;
        else if (strcmp(r, "ecmp") == 0)
            g->routing = SV_NET_ROUTE_ECMP;
        else {
            sv_planner__error(error, "%s.routing: must be \"shortest\" or \"ecmp\"", where);
            goto fail;
        }
    }
    JsonNode *sn = json_object_get_member(o, "switches");
    if (sn && !JSON_NODE_HOLDS_ARRAY(sn)) {
        sv_planner__error(error, "%s.switches: must be a list of {\"name\": ...}", where);
        goto fail;
    }
    for (guint i = 0; sn && i < json_array_get_length(json_node_get_array(sn)); i++) {
        g_autofree char *w = g_strdup_printf("%s.switches[%u]", where, i);
        JsonNode *e = json_array_get_element(json_node_get_array(sn), i);
        if (!JSON_NODE_HOLDS_OBJECT(e)) {
            sv_planner__path_error(error, w, "must be an object ({\"name\": ...})");
            goto fail;
        }
        sv_planner__warn_unknown(json_node_get_object(e), switch_keys, w);
        char *name = NULL;
        if (!get_name(json_node_get_object(e), "name", w, &name, error))
            goto fail;
        g_ptr_array_add(g->switches, name);
    }
    JsonNode *ln = json_object_get_member(o, "links");
    if (!ln || !JSON_NODE_HOLDS_ARRAY(ln) || json_array_get_length(json_node_get_array(ln)) == 0) {
        sv_planner__error(error, "%s.links: must be a non-empty list of links", where);
        goto fail;
    }
    for (guint i = 0; i < json_array_get_length(json_node_get_array(ln)); i++) {
        g_autofree char *w = g_strdup_printf("%s.links[%u]", where, i);
        JsonNode *e = json_array_get_element(json_node_get_array(ln), i);
        if (!JSON_NODE_HOLDS_OBJECT(e)) {
            sv_planner__path_error(error, w, "must be an object ({\"a\": ..., \"b\": ...})");
            goto fail;
        }
        JsonObject *lo = json_node_get_object(e);
        sv_planner__warn_unknown(lo, link_keys, w);
        struct fg_link l = {0};
        g_array_append_val(g->links, l); /* freed with g from here on */
        struct fg_link *lp = &g_array_index(g->links, struct fg_link, i);
        int64_t directed = 0;
        GError *e2 = NULL;
        if (!get_name(lo, "a", w, &lp->a, error) || !get_name(lo, "b", w, &lp->b, error) ||
            !get_number(lo, "bw_gbps", w, SV_RANGE_BW_GBPS, &lp->bw_gbps, error) ||
            !get_number(lo, "latency_ns", w, SV_RANGE_LATENCY_NS, &lp->latency_ns, error))
            goto fail;
        if (!sv_cfg_get_int(lo, "directed", w, FALSE, 0, &directed, &e2) || directed < 0 ||
            directed > 1) {
            g_clear_error(&e2);
            sv_planner__error(error, "%s.directed: must be true or false", w);
            goto fail;
        }
        lp->directed = directed != 0;
    }
    *out = g;
    return TRUE;
fail:
    sv_planner__fabric_graph_free(g);
    return FALSE;
}

/* Node n's topology as links among its devices (and its switch, `sw`). */
static gboolean expand_node(const struct sv_planner_cluster_cfg *c, int32_t n, int32_t ppn, int sw,
                            struct sv_net_graph_cfg *g, GError **error)
{
    const struct sv_planner_net_level_cfg *lv = &c->nodes[n].topology;
    double bw = c->n_link_bw > 0 ? c->link_bw_dims[0] : c->link_bw_gbps;
    double lat = sv_planner_cluster_link_latency_ns(c, 0);
    sv_net_topo_kind kind = lv->set ? lv->kind : SV_NET_TOPO_FULLY_CONNECTED;
    if (lv->set && lv->bw_gbps > 0)
        bw = lv->bw_gbps;
    if (lv->set && lv->latency_ns >= 0)
        lat = lv->latency_ns;
    if (ppn < 2)
        return TRUE;
    if (!(bw > 0))
        return sv_planner__path_error(
            error, c->where,
            "nodes[%d].topology: no bandwidth: set link_bw or the node topology's bw_gbps", n);
    int base = n * ppn;
    switch (kind) {
    case SV_NET_TOPO_SWITCH:
        for (int k = 0; k < ppn; k++)
            sv_net_graph_cfg_add_link(g, base + k, sw, bw, lat, FALSE);
        break;
    case SV_NET_TOPO_RING:
        for (int k = 0; k < (ppn == 2 ? 1 : ppn); k++)
            sv_net_graph_cfg_add_link(g, base + k, base + (k + 1) % ppn, bw, lat, FALSE);
        break;
    case SV_NET_TOPO_FULLY_CONNECTED:
        for (int k = 0; k < ppn; k++)
            for (int j = k + 1; j < ppn; j++)
                sv_net_graph_cfg_add_link(g, base + k, base + j, bw, lat, FALSE);
        break;
    }
    return TRUE;
}

gboolean sv_planner_cluster_graph(const struct sv_planner_cluster_cfg *c,
                                  struct sv_net_graph_cfg **out, GError **error)
{
    *out = NULL;
    const struct sv_planner_fabric_graph *fg = c->fabric_graph;
    if (fg == NULL)
        return TRUE;
    int32_t ppn = sv_planner__devices_per_node(c);
    int npus = c->n_nodes * ppn;
    if (npus < 2)
        return sv_planner__path_error(
            error, fg->where, "the cluster has %d device(s): a graph needs 2 or more", npus);
    if (npus > SV_NET_GRAPH_MAX_NPUS)
        return sv_planner__path_error(error, fg->where,
                                      "%d devices (%d nodes x %d): at most %d in a graph", npus,
                                      c->n_nodes, ppn, SV_NET_GRAPH_MAX_NPUS);
    g_autoptr(GHashTable) ids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    int node_sw = 0;
    for (int32_t n = 0; n < c->n_nodes; n++)
        node_sw +=
            ppn > 1 && c->nodes[n].topology.set && c->nodes[n].topology.kind == SV_NET_TOPO_SWITCH;
    int nsw = node_sw + (int)fg->switches->len;
    struct sv_net_graph_cfg *g = sv_net_graph_cfg_new(npus, nsw);
    g->routing = fg->routing;
    g_strlcpy(g->where, fg->where, sizeof g->where);
    for (int32_t n = 0; n < c->n_nodes; n++) {
        for (int32_t k = 0; k < ppn; k++) {
            g_autofree char *name = g_strdup_printf("node%d.npu%d", n, k);
            sv_net_graph_cfg_set_name(g, n * ppn + k, name);
            g_hash_table_insert(ids, g_steal_pointer(&name), GINT_TO_POINTER(n * ppn + k + 1));
        }
    }
    int sw = npus;
    for (int32_t n = 0; n < c->n_nodes; n++) {
        int this_sw = -1;
        if (ppn > 1 && c->nodes[n].topology.set &&
            c->nodes[n].topology.kind == SV_NET_TOPO_SWITCH) {
            this_sw = sw++;
            g_autofree char *name = g_strdup_printf("node%d.switch", n);
            sv_net_graph_cfg_set_name(g, this_sw, name);
            g_hash_table_insert(ids, g_steal_pointer(&name), GINT_TO_POINTER(this_sw + 1));
        }
        if (!expand_node(c, n, ppn, this_sw, g, error))
            goto fail;
    }
    for (guint i = 0; i < fg->switches->len; i++) {
        const char *name = fg->switches->pdata[i];
        if (g_hash_table_contains(ids, name)) {
            sv_planner__error(error, "%s.switches[%u].name: duplicate device name '%s'", fg->where,
                              i, name);
            goto fail;
        }
        sv_net_graph_cfg_set_name(g, sw, name);
        g_hash_table_insert(ids, g_strdup(name), GINT_TO_POINTER(sw + 1));
        sw++;
    }
    for (guint k = 0; k < fg->links->len; k++) {
        const struct fg_link *l = &g_array_index(fg->links, struct fg_link, k);
        int a = GPOINTER_TO_INT(g_hash_table_lookup(ids, l->a)) - 1;
        int b = GPOINTER_TO_INT(g_hash_table_lookup(ids, l->b)) - 1;
        if (a < 0 || b < 0) {
            sv_planner__error(
                error,
                "%s.links[%u].%s: unknown device '%s' (devices: node<n>.npu<k> for k < %d, "
                "node<n>.switch of a switch, nvlink or pcie node, the names in switches)",
                fg->where, k, a < 0 ? "a" : "b", a < 0 ? l->a : l->b, ppn);
            goto fail;
        }
        if (a == b) {
            sv_planner__error(error, "%s.links[%u]: a link from '%s' to itself", fg->where, k,
                              l->a);
            goto fail;
        }
        sv_net_graph_cfg_add_link(g, a, b, l->bw_gbps, l->latency_ns, l->directed);
    }
    *out = g;
    return TRUE;
fail:
    sv_net_graph_cfg_free(g);
    return FALSE;
}

gboolean sv_planner__fabric_graph_check(const struct sv_planner_cluster_cfg *c, GError **error)
{
    struct sv_net_graph_cfg *g = NULL;
    if (!sv_planner_cluster_graph(c, &g, error))
        return FALSE;
    if (g == NULL)
        return TRUE;
    GError *e = NULL;
    gboolean ok = sv_net_graph_cfg_check(g, &e);
    if (!ok) {
        g_set_error_literal(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID, e->message);
        g_error_free(e);
    }
    sv_net_graph_cfg_free(g);
    return ok;
}
