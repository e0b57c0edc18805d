/* ASTRA-sim network YAML and the device/link geometry every timing model shares.
 *
 * Semantics follow astra-network-analytical (599a047): common/NetworkParser (keys topology,
 * npus_count, bandwidth, latency, one list entry per dimension), congestion_unaware
 * Ring/Switch/FullyConnected::compute_hops_count and MultiDimTopology::send (first differing
 * dimension), congestion_aware Ring/Switch/FullyConnected constructors and route() (CHAKRA_ET.md
 * 3.4 and 3.6). */
#include "network/network_internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Keep device and link ids comfortably inside int: a 1-D FullyConnected dimension has
 * n(n-1) links, so bound the NPU count and the links per dimension explicitly. */
#define SV_NET_MAX_NPUS (1 << 24)
#define SV_NET_MAX_LINKS (1 << 28)

GQuark sv_net_error_quark(void)
{
    return g_quark_from_static_string("servesim-network-error-quark");
}

int sv_net_topo_npus(const struct sv_net_topo_cfg *cfg)
{
    int64_t n = 1;
    for (int d = 0; d < cfg->ndims; d++)
        n *= cfg->npus[d];
    return n > INT_MAX ? INT_MAX : (int)n;
}

/* A documented range (docs/reliability.md "Numeric ranges"), reported as a config error. */
static gboolean in_range(const char *path, double v, struct sv_range_double r, GError **error)
{
    GError *e = NULL;
    if (sv_range_check_double(path, v, r, &e))
        return TRUE;
    g_set_error_literal(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, e->message);
    g_error_free(e);
    return FALSE;
}

gboolean sv_net__topo_validate(const struct sv_net_topo_cfg *cfg, const char *where, GError **error)
{
    if (cfg->ndims < 1 || cfg->ndims > SV_NET_MAX_DIMS) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, "%s: %d dimensions, expected 1 to %d",
                    where, cfg->ndims, SV_NET_MAX_DIMS);
        return FALSE;
    }
    int64_t total = 1;
    for (int d = 0; d < cfg->ndims; d++) {
        if (cfg->kind[d] != SV_NET_TOPO_RING && cfg->kind[d] != SV_NET_TOPO_FULLY_CONNECTED &&
            cfg->kind[d] != SV_NET_TOPO_SWITCH) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s: topology[%d]: unknown topology kind %d", where, d, cfg->kind[d]);
            return FALSE;
        }
        if (cfg->npus[d] < 2) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s: npus_count[%d]: %d npus, each dimension needs at least 2", where, d,
                        cfg->npus[d]);
            return FALSE;
        }
        total *= cfg->npus[d];
        if (total > SV_NET_MAX_NPUS) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s: npus_count: more than %d npus in total", where, SV_NET_MAX_NPUS);
            return FALSE;
        }
        g_autofree char *bw = g_strdup_printf("%s: bandwidth[%d]", where, d);
        g_autofree char *lat = g_strdup_printf("%s: latency[%d]", where, d);
        if (!in_range(bw, cfg->bandwidth_gbps[d], SV_RANGE_BW_GBPS, error) ||
            !in_range(lat, cfg->latency_ns[d], SV_RANGE_LATENCY_NS, error))
            return FALSE;
    }
    if (cfg->n_line_over < 0 || cfg->n_line_over > SV_NET_MAX_LINE_OVER) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, "%s: %d line overrides (at most %d)",
                    where, cfg->n_line_over, SV_NET_MAX_LINE_OVER);
        return FALSE;
    }
    for (int k = 0; k < cfg->n_line_over; k++) {
        const struct sv_net_line_over *o = &cfg->line_over[k];
        if (o->dim < 0 || o->dim >= cfg->ndims || o->line < 0 ||
            o->line >= total / cfg->npus[o->dim]) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s: line override %d: no line %d in dimension %d", where, k, o->line,
                        o->dim);
            return FALSE;
        }
        g_autofree char *bw = g_strdup_printf("%s: line override %d: bandwidth", where, k);
        g_autofree char *lat = g_strdup_printf("%s: line override %d: latency", where, k);
        if (!in_range(bw, o->bandwidth_gbps, SV_RANGE_BW_GBPS, error) ||
            !in_range(lat, o->latency_ns, SV_RANGE_LATENCY_NS, error))
            return FALSE;
    }
    return TRUE;
}

/* ---- YAML ------------------------------------------------------------------------------- */

typedef enum { LIST_TOPOLOGY, LIST_NPUS, LIST_BANDWIDTH, LIST_LATENCY, LIST_COUNT } list_key;
static const char *const list_key_name[LIST_COUNT] = {"topology", "npus_count", "bandwidth",
                                                      "latency"};

/* Parse one scalar list entry into cfg; `line` is 1-based. */
static gboolean parse_entry(const char *path, list_key key, int idx, int line, const char *text,
                            struct sv_net_topo_cfg *cfg, GError **error)
{
    const char *kname = list_key_name[key];
    switch (key) {
    case LIST_TOPOLOGY:
        if (strcmp(text, "Ring") == 0)
            cfg->kind[idx] = SV_NET_TOPO_RING;
        else if (strcmp(text, "FullyConnected") == 0)
            cfg->kind[idx] = SV_NET_TOPO_FULLY_CONNECTED;
        else if (strcmp(text, "Switch") == 0)
            cfg->kind[idx] = SV_NET_TOPO_SWITCH;
        else {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s:%d: topology[%d]: unknown topology \"%s\" (expected Ring, "
                        "FullyConnected or Switch)",
                        path, line, idx, text);
            return FALSE;
        }
        return TRUE;
    case LIST_NPUS: {
        int64_t v;
        if (!sv_num_parse_int(text, &v) || v > INT_MAX || v < INT_MIN) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s:%d: %s[%d]: \"%s\" is not an integer", path, line, kname, idx, text);
            return FALSE;
        }
        if (v < 2) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s:%d: %s[%d]: %" G_GINT64_FORMAT " npus, each dimension needs at least 2",
                        path, line, kname, idx, v);
            return FALSE;
        }
        cfg->npus[idx] = (int)v;
        return TRUE;
    }
    case LIST_BANDWIDTH:
    case LIST_LATENCY: {
        /* decimal text (no "0x10", "inf", "nan"), within the documented range */
        double v;
        if (!sv_num_parse_double(text, &v)) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s:%d: %s[%d]: \"%s\" is not a finite number", path, line, kname, idx,
                        text);
            return FALSE;
        }
        g_autofree char *where = g_strdup_printf("%s:%d: %s[%d]", path, line, kname, idx);
        if (!in_range(where, v, key == LIST_BANDWIDTH ? SV_RANGE_BW_GBPS : SV_RANGE_LATENCY_NS,
                      error))
            return FALSE;
        if (key == LIST_BANDWIDTH)
            cfg->bandwidth_gbps[idx] = v;
        else
            cfg->latency_ns[idx] = v;
        return TRUE;
    }
    case LIST_COUNT:
        break;
    }
    g_assert_not_reached();
}

gboolean sv_net_topo_load_yaml(const char *path, struct sv_net_topo_cfg *cfg, GError **error)
{
    SV_ASSERT(path != NULL && cfg != NULL);
    GError *e = NULL;
    g_autoptr(sv_yaml_node) root = sv_yaml_load(path, &e);
    if (!root) {
        g_set_error_literal(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, e->message);
        g_error_free(e);
        return FALSE;
    }

    struct sv_net_topo_cfg out;
    memset(&out, 0, sizeof out);
    int count[LIST_COUNT];
    int key_line[LIST_COUNT];
    for (int k = 0; k < LIST_COUNT; k++) {
        count[k] = -1;
        key_line[k] = 0;
    }

    if (root->kind != SV_YAML_MAP) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "%s:%d: expected a mapping with keys topology, npus_count, bandwidth, "
                    "latency",
                    path, root->line);
        return FALSE;
    }
    for (guint m = 0; m < root->keys->len; m++) {
        const sv_yaml_node *k = root->keys->pdata[m];
        const sv_yaml_node *v = root->items->pdata[m];
        const char *kname = k->scalar;
        int key = -1;
        for (int i = 0; i < LIST_COUNT; i++)
            if (strcmp(kname, list_key_name[i]) == 0)
                key = i;
        /* Other keys are ignored, as ASTRA-sim's parser only looks up the four it needs. */
        if (key < 0)
            continue;
        int line = k->line;
        if (count[key] >= 0) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, "%s:%d: %s: duplicate key", path,
                        line, kname);
            return FALSE;
        }
        if (v->kind != SV_YAML_SEQ) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s:%d: %s: expected a list with one entry per dimension", path, line,
                        kname);
            return FALSE;
        }
        int n = (int)v->items->len;
        if (n < 1 || n > SV_NET_MAX_DIMS) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s:%d: %s: %d entries, expected 1 to %d dimensions", path, line, kname, n,
                        SV_NET_MAX_DIMS);
            return FALSE;
        }
        for (int i = 0; i < n; i++) {
            const sv_yaml_node *item = v->items->pdata[i];
            if (item->kind != SV_YAML_SCALAR) {
                g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                            "%s:%d: %s[%d]: expected a scalar", path, item->line, kname, i);
                return FALSE;
            }
            if (!parse_entry(path, (list_key)key, i, item->line, item->scalar, &out, error))
                return FALSE;
        }
        count[key] = n;
        key_line[key] = line;
    }
    for (int k = 0; k < LIST_COUNT; k++) {
        if (count[k] < 0) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, "%s: missing key %s", path,
                        list_key_name[k]);
            return FALSE;
        }
    }
    for (int k = 1; k < LIST_COUNT; k++) {
        if (count[k] != count[LIST_TOPOLOGY]) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s:%d: %s: %d entries but topology (line %d) has %d", path, key_line[k],
                        list_key_name[k], count[k], key_line[LIST_TOPOLOGY], count[LIST_TOPOLOGY]);
            return FALSE;
        }
    }
    out.ndims = count[LIST_TOPOLOGY];
    if (!sv_net__topo_validate(&out, path, error))
        return FALSE;
    *cfg = out;
    return TRUE;
}

/* Bandwidth and latency as ASTRA-sim's shipped YAMLs write them ("50.0"): the shortest text
 * that reads back to v, with ".0" when that is an integer. */
static void put_number(GString *out, double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    sv_cfg_format_double(buf, v);
    g_string_append(out, buf);
    if (strpbrk(buf, ".eE") == NULL)
        g_string_append(out, ".0");
}

gboolean sv_net_topo_save_yaml(const struct sv_net_topo_cfg *t, const char *path, GError **error)
{
    static const char *const kinds[] = {[SV_NET_TOPO_RING] = "Ring",
                                        [SV_NET_TOPO_FULLY_CONNECTED] = "FullyConnected",
                                        [SV_NET_TOPO_SWITCH] = "Switch"};
    if (!sv_net__topo_validate(t, path, error))
        return FALSE;
    if (t->n_line_over > 0) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "%s: the topology has links of their own bandwidth or latency per line (a "
                    "node topology of its own), which ASTRA-sim's network YAML cannot express",
                    path);
        return FALSE;
    }
    g_autoptr(GString) out = g_string_new("topology: [ ");
    for (int d = 0; d < t->ndims; d++)
        g_string_append_printf(out, "%s%s", d > 0 ? ", " : "", kinds[t->kind[d]]);
    g_string_append(out, " ]\nnpus_count: [ ");
    for (int d = 0; d < t->ndims; d++)
        g_string_append_printf(out, "%s%d", d > 0 ? ", " : "", t->npus[d]);
    g_string_append(out, " ]\nbandwidth: [ ");
    for (int d = 0; d < t->ndims; d++) {
        g_string_append(out, d > 0 ? ", " : "");
        put_number(out, t->bandwidth_gbps[d]);
    }
    g_string_append(out, " ]  # GB/s\nlatency: [ ");
    for (int d = 0; d < t->ndims; d++) {
        g_string_append(out, d > 0 ? ", " : "");
        put_number(out, t->latency_ns[d]);
    }
    g_string_append(out, " ]  # ns\n");
    GError *e = NULL;
    if (!g_file_set_contents(path, out->str, (gssize)out->len, &e)) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_IO, "%s: %s", path, e->message);
        g_error_free(e);
        return FALSE;
    }
    return TRUE;
}

/* ---- geometry --------------------------------------------------------------------------- */

static int ring_links_per_line(int n)
{
    /* With 2 NPUs both ring directions join the same pair: one link each way. ASTRA-sim's
     * congestion-aware Ring aborts there (duplicate link, CHAKRA_ET.md 3.4); we keep the pair. */
    return n == 2 ? 2 : 2 * n;
}

gboolean sv_net__geom_init(struct sv_net_geom *g, const struct sv_net_topo_cfg *cfg, GError **error)
{
    memset(g, 0, sizeof *g);
    if (!sv_net__topo_validate(cfg, "network topology", error))
        return FALSE;
    g->cfg = *cfg;
    g->npus = sv_net_topo_npus(cfg);
    int64_t nlinks = 0;
    int nswitches = 0;
    int stride = 1;
    for (int d = 0; d < cfg->ndims; d++) {
        int n = cfg->npus[d];
        g->stride[d] = stride;
        stride *= n;
        g->lines[d] = g->npus / n;
        switch (cfg->kind[d]) {
        case SV_NET_TOPO_RING:
            g->links_per_line[d] = ring_links_per_line(n);
            g->max_route_links += n / 2;
            break;
        case SV_NET_TOPO_FULLY_CONNECTED:
            g->links_per_line[d] = n * (n - 1);
            g->max_route_links += 1;
            break;
        case SV_NET_TOPO_SWITCH:
            g->links_per_line[d] = 2 * n;
            g->max_route_links += 2;
            break;
        }
        g->link_base[d] = (int)nlinks;
        nlinks += (int64_t)g->links_per_line[d] * g->lines[d];
        if (nlinks > SV_NET_MAX_LINKS) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "network topology: more than %d links", SV_NET_MAX_LINKS);
            return FALSE;
        }
        g->switch_base[d] = -1;
        if (cfg->kind[d] == SV_NET_TOPO_SWITCH) {
            g->switch_base[d] = g->npus + nswitches;
            nswitches += g->lines[d];
        }
        g->bw_bpns[d] = sv_bw_gbps_to_bytes_per_ns(cfg->bandwidth_gbps[d]);
    }
    g->nlinks = (int)nlinks;
    g->ndevs = g->npus + nswitches;
    g->links = g_new0(struct sv_net_link, g->nlinks);
    g->switch_dim = g_new0(int, nswitches > 0 ? nswitches : 1);
    g->switch_line = g_new0(int, nswitches > 0 ? nswitches : 1);

    for (int d = 0; d < cfg->ndims; d++) {
        int n = cfg->npus[d];
        for (int line = 0; line < g->lines[d]; line++) {
            /* NPU id of local coordinate i on this line: the other coordinates come from the
             * line index (dims below d from its low part, dims above from its high part). */
            int lo = line % g->stride[d];
            int hi = line / g->stride[d];
            int base_npu = lo + hi * g->stride[d] * n;
            struct sv_net_link *L = g->links + g->link_base[d] + line * g->links_per_line[d];
            double bw = g->bw_bpns[d], lat = cfg->latency_ns[d];
            for (int o = 0; o < cfg->n_line_over; o++) {
                if (cfg->line_over[o].dim == d && cfg->line_over[o].line == line) {
                    bw = sv_bw_gbps_to_bytes_per_ns(cfg->line_over[o].bandwidth_gbps);
                    lat = cfg->line_over[o].latency_ns;
                }
            }
            for (int k = 0; k < g->links_per_line[d]; k++) {
                L[k].bw_bpns = bw;
                L[k].lat_ns = lat;
            }
            for (int i = 0; i < n; i++) {
                int npu_i = base_npu + i * g->stride[d];
                switch (cfg->kind[d]) {
                case SV_NET_TOPO_RING: {
                    int next = base_npu + ((i + 1) % n) * g->stride[d];
                    int prev = base_npu + ((i + n - 1) % n) * g->stride[d];
                    if (n == 2) {
                        L[i].src_dev = npu_i;
                        L[i].dst_dev = next;
                    } else {
                        L[2 * i].src_dev = npu_i;
                        L[2 * i].dst_dev = next;
                        L[2 * i + 1].src_dev = npu_i;
                        L[2 * i + 1].dst_dev = prev;
                    }
                    break;
                }
                case SV_NET_TOPO_FULLY_CONNECTED:
                    for (int j = 0; j < n; j++) {
                        if (j == i)
                            continue;
                        int k = i * (n - 1) + (j < i ? j : j - 1);
                        L[k].src_dev = npu_i;
                        L[k].dst_dev = base_npu + j * g->stride[d];
                    }
                    break;
                case SV_NET_TOPO_SWITCH: {
                    int sw = g->switch_base[d] + line;
                    L[2 * i].src_dev = npu_i;
                    L[2 * i].dst_dev = sw;
                    L[2 * i + 1].src_dev = sw;
                    L[2 * i + 1].dst_dev = npu_i;
                    g->switch_dim[sw - g->npus] = d;
                    g->switch_line[sw - g->npus] = line;
                    break;
                }
                }
            }
        }
    }
    return TRUE;
}

void sv_net__geom_clear(struct sv_net_geom *g)
{
    if (g->graph != NULL) {
        sv_net__geom_clear_graph(g);
        return;
    }
    g_clear_pointer(&g->links, g_free);
    g_clear_pointer(&g->switch_dim, g_free);
    g_clear_pointer(&g->switch_line, g_free);
}

int sv_net__geom_first_diff_dim(const struct sv_net_geom *g, int src, int dst)
{
    for (int d = 0; d < g->cfg.ndims; d++)
        if (sv_net__geom_coord(g, src, d) != sv_net__geom_coord(g, dst, d))
            return d;
    return -1;
}

int sv_net__geom_dim_hops(const struct sv_net_geom *g, int d, int i, int j)
{
    SV_ASSERT(i != j);
    switch (g->cfg.kind[d]) {
    case SV_NET_TOPO_RING: {
        int n = g->cfg.npus[d];
        int cw = sv_net__ring_cw(i, j, n);
        int acw = n - cw;
        return cw < acw ? cw : acw;
    }
    case SV_NET_TOPO_FULLY_CONNECTED:
        return 1;
    case SV_NET_TOPO_SWITCH:
        return 2;
    }
    g_assert_not_reached();
}

static inline int line_of(const struct sv_net_geom *g, int npu, int d)
{
    if (g->lines[d] == 1)
        return 0; /* one line holds every NPU (1-D) */
    int s = g->stride[d];
    return npu % s + (npu / (s * g->cfg.npus[d])) * s;
}

int sv_net__geom_next_link(const struct sv_net_geom *g, int cur, int dst)
{
    SV_ASSERT(g->graph == NULL);
    SV_ASSERT(cur != dst && dst >= 0 && dst < g->npus && cur >= 0 && cur < g->ndevs);
    if (cur >= g->npus) {
        /* At a switch: go down to the NPU of this line whose coordinate in the switch's
         * dimension is the destination's. */
        int d = g->switch_dim[cur - g->npus];
        int line = g->switch_line[cur - g->npus];
        int j = sv_net__geom_coord(g, dst, d);
        return g->link_base[d] + line * g->links_per_line[d] + 2 * j + 1;
    }
    int d = sv_net__geom_first_diff_dim(g, cur, dst);
    SV_ASSERT(d >= 0);
    int n = g->cfg.npus[d];
    int i = sv_net__geom_coord(g, cur, d);
    int j = sv_net__geom_coord(g, dst, d);
    int base = g->link_base[d] + line_of(g, cur, d) * g->links_per_line[d];
    switch (g->cfg.kind[d]) {
    case SV_NET_TOPO_RING: {
        if (n == 2)
            return base + i;
        /* ASTRA-sim congestion_aware Ring::route: anticlockwise only when strictly shorter. */
        int cw = sv_net__ring_cw(i, j, n);
        int acw = n - cw;
        return base + 2 * i + (acw < cw ? 1 : 0);
    }
    case SV_NET_TOPO_FULLY_CONNECTED:
        return base + i * (n - 1) + (j < i ? j : j - 1);
    case SV_NET_TOPO_SWITCH:
        return base + 2 * i;
    }
    g_assert_not_reached();
}

const struct sv_net_link *sv_net__geom_line_link(const struct sv_net_geom *g, int d, int npu)
{
    int lo = npu % g->stride[d];
    int hi = npu / (g->stride[d] * g->cfg.npus[d]);
    int line = lo + hi * g->stride[d];
    return &g->links[g->link_base[d] + line * g->links_per_line[d]];
}

int sv_net__geom_next_link_src(const struct sv_net_geom *g, int src, int cur, int dst)
{
    if (g->graph == NULL)
        return sv_net__geom_next_link(g, cur, dst);
    int n;
    const int *r = sv_net__graph_route(g, src, dst, &n);
    for (int h = 0; h < n; h++)
        if (g->links[r[h]].src_dev == cur)
            return r[h];
    g_assert_not_reached();
}

int sv_net__geom_route(const struct sv_net_geom *g, int src, int dst, int *links_out,
                       double *lat_sum_ns)
{
    if (g->graph != NULL) {
        int n;
        const int *r = sv_net__graph_route(g, src, dst, &n);
        double lat = 0;
        for (int h = 0; h < n; h++) {
            if (links_out != NULL)
                links_out[h] = r[h];
            lat += g->links[r[h]].lat_ns;
        }
        if (lat_sum_ns != NULL)
            *lat_sum_ns = lat;
        return n;
    }
    int nl = 0;
    for (int cur = src; cur != dst;) {
        int l = sv_net__geom_next_link(g, cur, dst);
        if (links_out != NULL)
            links_out[nl] = l;
        nl++;
        SV_ASSERT(nl <= g->max_route_links);
        cur = g->links[l].dst_dev;
    }
    if (lat_sum_ns != NULL && g->cfg.n_line_over > 0) {
        /* lines of their own latency: the links' sum (without overrides, the closed form below,
         * which outputs have always used) */
        double lat = 0;
        for (int cur = src; cur != dst;) {
            int l = sv_net__geom_next_link(g, cur, dst);
            lat += g->links[l].lat_ns;
            cur = g->links[l].dst_dev;
        }
        *lat_sum_ns = lat;
    } else if (lat_sum_ns != NULL) {
        double lat = 0;
        for (int d = 0; d < g->cfg.ndims; d++) {
            int i = sv_net__geom_coord(g, src, d), j = sv_net__geom_coord(g, dst, d);
            if (i != j)
                lat += sv_net__geom_dim_hops(g, d, i, j) * g->cfg.latency_ns[d];
        }
        *lat_sum_ns = lat;
    }
    return nl;
}
