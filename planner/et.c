/* The run's Chakra ET output (--emit-et, --et-scope; docs/chakra.md "Emitted sets"): the output
 * object the serving groups write through, the replay unit of each instance (local NPU ids from
 * 0), and the configs that describe each unit's cluster to a replay: system JSON, network YAML,
 * remote-memory JSON and comm-group JSON, in ASTRA-sim's formats.
 *
 * Units. Iteration scope: an instance ("inst<I>"), or a data-parallel group ("dp<D>"), whose
 * members run their batches in waves and share expert-parallel collectives; member k's devices
 * are local NPUs k x devices ... Run scope: the whole cluster ("run"), global NPU ids. */
#include "planner/planner_internal.h"

#include <string.h>

struct sv_planner_et {
    sv_msg_et_out *out;
    const struct sv_planner_cluster_cfg *c;
    const sv_planner_cluster_net *cn;
    char *model; /* the network model a replay uses */
    int32_t n_inst;
    int32_t *first; /* global device of each instance's rank 0 */
    char **unit;    /* per instance */
    int32_t *base;  /* per instance: global = local + base */
    int32_t ppn;    /* NPUs per node of the cluster network */
};

void sv_planner_et_free(sv_planner_et *e)
{
    if (!e)
        return;
    sv_msg_et_out_free(e->out);
    for (int32_t i = 0; i < e->n_inst; i++)
        g_free(e->unit[i]);
    g_free(e->unit);
    g_free(e->base);
    g_free(e->first);
    g_free(e->model);
    g_free(e);
}

sv_msg_et_out *sv_planner_et_out(const sv_planner_et *e)
{
    return e ? e->out : NULL;
}

/* The unit's global NPUs, in local order (members' devices are contiguous local ids). */
static GArray *unit_npus(const sv_planner_et *e, const char *unit)
{
    GArray *a = g_array_new(FALSE, TRUE, sizeof(int32_t));
    for (int32_t i = 0; i < e->n_inst; i++) {
        if (strcmp(e->unit[i], unit) != 0)
            continue;
        for (int32_t k = 0; k < e->c->instances[i].num_npus; k++) {
            int32_t g = e->first[i] + k, l = g - e->base[i];
            if ((guint)l >= a->len)
                g_array_set_size(a, (guint)l + 1);
            g_array_index(a, int32_t, l) = g;
        }
    }
    return a;
}

/* The unit's network: the cluster network's dimensions that its NPUs span (devices of a node,
 * nodes), when they form a full grid of them in local order. Otherwise no smaller network has the
 * run's links: the unit is written as the devices of one node and *note says so. */
static void unit_topo(const sv_planner_et *e, const GArray *npus,
                      const struct sv_net_topo_cfg *full, struct sv_net_topo_cfg *t,
                      const char **note)
{
    memset(t, 0, sizeof *t);
    *note = NULL;
    int32_t n = (int32_t)npus->len;
    int32_t ppn = e->ppn > 0 ? e->ppn : 1;
    int32_t node0 = g_array_index(npus, int32_t, 0) / ppn;
    /* devices per node: the run of NPUs on the first node */
    int32_t k = 0;
    while (k < n && g_array_index(npus, int32_t, k) / ppn == node0)
        k++;
    int32_t nodes = n / k;
    gboolean grid = n % k == 0;
    for (int32_t i = 0; grid && i < n; i++) {
        int32_t g = g_array_index(npus, int32_t, i);
        int32_t want_node = g_array_index(npus, int32_t, (i / k) * k) / ppn;
        grid = g / ppn == want_node &&
               (i % k == 0 || g == g_array_index(npus, int32_t, i - 1) + 1) &&
               (i < k || want_node != g_array_index(npus, int32_t, i - k) / ppn);
    }
    int fd = 0; /* the full network's dimension index: 0 = devices of a node when ppn > 1 */
    int dim_dev = e->ppn > 1 ? fd++ : -1, dim_node = e->c->n_nodes > 1 ? fd++ : -1;
    if (!grid || full->ndims == 0) {
        if (!grid)
            *note = "its NPUs do not form a grid of the cluster network; written as the devices "
                    "of one node";
        nodes = 1;
        k = n;
    }
    if (k > 1 || nodes == 1) {
        int d = dim_dev >= 0 ? dim_dev : (dim_node >= 0 ? dim_node : -1);
        t->kind[t->ndims] = d >= 0 ? full->kind[d] : SV_NET_TOPO_FULLY_CONNECTED;
        t->npus[t->ndims] = k;
        t->bandwidth_gbps[t->ndims] = d >= 0 ? full->bandwidth_gbps[d] : 1;
        t->latency_ns[t->ndims] = d >= 0 ? full->latency_ns[d] : 0;
        t->ndims++;
    }
    if (nodes > 1 && dim_node >= 0) {
        t->kind[t->ndims] = full->kind[dim_node];
        t->npus[t->ndims] = nodes;
        t->bandwidth_gbps[t->ndims] = full->bandwidth_gbps[dim_node];
        t->latency_ns[t->ndims] = full->latency_ns[dim_node];
        t->ndims++;
    }
}

static gboolean write_text(const char *dir, const char *name, const char *text, GError **error)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);
    return g_file_set_contents(path, text, -1, error);
}

/* The system JSON, network YAML, remote-memory JSON and comm-group JSON of one unit. */
static gboolean write_unit(sv_planner_et *e, const char *unit, const GArray *npus, gboolean tiers,
                           GError **error)
{
    const char *dir = sv_msg_et_out_dir(e->out);
    struct sv_net_topo_cfg full = {0}, t;
    int32_t ppn = 0;
    if (!sv_planner_cluster_topo(e->c, &full, &ppn, error))
        return FALSE;
    if (full.n_line_over > 0) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                    "%s: nodes[].topology: nodes with links unlike nodes[0]'s cannot be written "
                    "as ASTRA-sim's network YAML (one bandwidth and latency per dimension)",
                    e->c->where[0] ? e->c->where : "cluster config");
        return FALSE;
    }
    const char *note = NULL;
    if (strcmp(unit, "run") == 0)
        t = full;
    else
        unit_topo(e, npus, &full, &t, &note);
    if (t.ndims == 0) { /* one NPU */
        t.ndims = 1;
        t.kind[0] = SV_NET_TOPO_FULLY_CONNECTED;
        t.npus[0] = 1;
        t.bandwidth_gbps[0] = full.ndims > 0 ? full.bandwidth_gbps[0] : 1;
        t.latency_ns[0] = full.ndims > 0 ? full.latency_ns[0] : 0;
    }
    /* ASTRA-sim's analytical networks need at least two NPUs per dimension ("npus_count (1)
     * should be larger than 1"): a one-device unit gets an idle partner, a file of one idle node
     * per set (msg/et_out.c). */
    int32_t pad = 0;
    if (sv_net_topo_npus(&t) == 1) {
        t.npus[0] = 2;
        pad = 1;
    }
    g_autofree char *net = g_strdup_printf("%s.network.yml", unit);
    g_autofree char *net_path = g_build_filename(dir, net, NULL);
    if (!sv_net_topo_save_yaml(&t, net_path, error))
        return FALSE;

    /* The collectives' configuration: the cluster network's system layer (cluster_net.c). */
    sv_sys *coll = e->cn ? sv_planner_cluster_net_coll(e->cn) : NULL;
    struct sv_sys_cfg own;
    sv_sys_cfg_init(&own);
    own.preferred_dataset_splits = 1;
    const struct sv_sys_cfg *sc = coll ? sv_sys_get_cfg(coll) : &own;
    g_autofree char *sys = g_strdup_printf("%s.system.json", unit);
    g_autofree char *sys_path = g_build_filename(dir, sys, NULL);
    gboolean ok = sv_sys_cfg_save_json(sc, t.ndims, sys_path, error);
    sv_sys_cfg_clear(&own);
    if (!ok)
        return FALSE;

    /* Groups wholly inside the unit, members in local ids. */
    g_autoptr(GHashTable) local = g_hash_table_new(g_direct_hash, g_direct_equal);
    for (guint i = 0; i < npus->len; i++)
        g_hash_table_insert(local, GINT_TO_POINTER(g_array_index(npus, int32_t, i) + 1),
                            GUINT_TO_POINTER(i + 1));
    sv_sys_groups *g = sv_sys_groups_new();
    const sv_sys_groups *all = coll ? sv_sys_get_groups(coll) : NULL;
    int n_all = all ? sv_sys_groups_count(all) : 0;
    for (int gi = 0; gi < n_all; gi++) {
        int id = sv_sys_groups_id_at(all, gi), n = 0;
        const int *mem = sv_sys_groups_members(all, id, &n);
        g_autofree int *lm = g_new(int, (size_t)MAX(n, 1));
        gboolean inside = TRUE;
        for (int k = 0; k < n && inside; k++) {
            gpointer v = g_hash_table_lookup(local, GINT_TO_POINTER(mem[k] + 1));
            inside = v != NULL;
            lm[k] = inside ? (int)GPOINTER_TO_UINT(v) - 1 : 0;
        }
        if (inside && !sv_sys_groups_add(g, id, lm, n, error)) {
            sv_sys_groups_free(g);
            return FALSE;
        }
    }
    g_autofree char *grp = g_strdup_printf("%s.groups.json", unit);
    g_autofree char *grp_path = g_build_filename(dir, grp, NULL);
    ok = sv_sys_groups_save_json(g, NULL, 0, 0, grp_path, error);
    sv_sys_groups_free(g);
    if (!ok)
        return FALSE;

    /* No remote memory: serving DAGs have MEM_LOAD / MEM_STORE nodes only with memory tiers,
     * whose fabric (PCIe, CXL, SSD legs shared with other traffic) is not ASTRA-sim's remote
     * memory model. */
    g_autofree char *mem = g_strdup_printf("%s.memory.json", unit);
    if (!write_text(dir, mem, "{\n  \"memory-type\": \"NO_MEMORY_EXPANSION\"\n}\n", error))
        return FALSE;
    if (tiers)
        note = note ? note
                    : "memory-tier MEM_LOAD/MEM_STORE nodes need a remote memory; the tier fabric "
                      "is not expressible in ASTRA-sim's remote-memory JSON, none is written";
    sv_msg_et_out_add_unit(e->out, unit, (int32_t)npus->len, note);
    if (pad > 0 && strcmp(unit, "run") != 0)
        sv_msg_et_out_pad_unit(e->out, unit, pad);
    return TRUE;
}

sv_planner_et *sv_planner_et_new(const struct sv_planner_run_cfg *cfg,
                                 const sv_planner_cluster_net *cn, gboolean tiers, GError **error)
{
    const struct sv_planner_cluster_cfg *c = cfg->cluster;
    sv_msg_et_scope scope = SV_MSG_ET_ITERATION;
    if (cfg->et_scope && !sv_msg_et_scope_parse(cfg->et_scope, &scope, error))
        return NULL;
    sv_planner_et *e = g_new0(sv_planner_et, 1);
    e->c = c;
    e->cn = cn;
    e->n_inst = c->n_instances;
    e->model = g_strdup(cfg->network_model    ? cfg->network_model
                        : c->network_model[0] ? c->network_model
                                              : "flow");
    e->first = g_new0(int32_t, (size_t)e->n_inst);
    e->unit = g_new0(char *, (size_t)e->n_inst);
    e->base = g_new0(int32_t, (size_t)e->n_inst);
    struct sv_net_topo_cfg topo;
    if (!sv_planner_cluster_topo(c, &topo, &e->ppn, error)) {
        sv_planner_et_free(e);
        return NULL;
    }
    if (c->fabric_graph != NULL) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                    "%s: fabric.graph: an explicit fabric graph cannot be written as ASTRA-sim's "
                    "network YAML (one topology kind, bandwidth and latency per dimension)",
                    c->where[0] ? c->where : "cluster config");
        sv_planner_et_free(e);
        return NULL;
    }
    int32_t n_npus = 0, dev = 0;
    for (int32_t i = 0; i < e->n_inst; i++) {
        const struct sv_planner_instance_cfg *ic = &c->instances[i];
        e->first[i] = cn ? sv_planner_cluster_net_first_device(cn, i) : dev;
        dev += ic->num_npus;
        n_npus = MAX(n_npus, e->first[i] + ic->num_npus);
        int32_t rank = 0, d = cn ? sv_planner_cluster_net_dp_index(cn, i, &rank) : -1;
        if (scope == SV_MSG_ET_RUN) {
            e->unit[i] = g_strdup("run");
            e->base[i] = 0;
        } else if (d >= 0) {
            e->unit[i] = g_strdup_printf("dp%d", d);
            e->base[i] = e->first[i] - rank * ic->num_npus;
        } else {
            e->unit[i] = g_strdup_printf("inst%d", i);
            e->base[i] = e->first[i];
        }
    }
    if (cn && topo.ndims > 0)
        n_npus = MAX(n_npus, sv_net_topo_npus(&topo));
    if (scope == SV_MSG_ET_RUN)
        n_npus = MAX(n_npus, 2); /* a one-device cluster: an idle partner (see write_unit) */
    e->out = sv_msg_et_out_new(cfg->emit_et_dir, scope, n_npus, error);
    if (!e->out) {
        sv_planner_et_free(e);
        return NULL;
    }
    for (int32_t i = 0; i < e->n_inst; i++) {
        gboolean first = TRUE;
        for (int32_t j = 0; j < i && first; j++)
            first = strcmp(e->unit[j], e->unit[i]) != 0;
        if (!first)
            continue;
        g_autoptr(GArray) npus = NULL;
        if (scope == SV_MSG_ET_RUN) {
            npus = g_array_new(FALSE, FALSE, sizeof(int32_t));
            for (int32_t k = 0; k < n_npus; k++)
                g_array_append_val(npus, k);
        } else {
            npus = unit_npus(e, e->unit[i]);
        }
        if (!write_unit(e, e->unit[i], npus, tiers, error)) {
            g_prefix_error(error, "--emit-et %s: ", cfg->emit_et_dir);
            sv_planner_et_free(e);
            return NULL;
        }
    }
    return e;
}

void sv_planner_et_instance(const sv_planner_et *e, int32_t i, struct sv_msg_cfg *mc)
{
    mc->et_out = e->out;
    mc->et_unit = e->unit[i];
    mc->et_npu_base = e->base[i];
}

gboolean sv_planner_et_finish(sv_planner_et *e, GError **error)
{
    return sv_msg_et_out_finish(e->out, e->model, error);
}
