/* The cluster network: one sv_net for every device of the cluster and ASTRA-sim's system layer
 * over it, with the communicator groups of the instances' TP and EP ranks.
 *
 * Layout (docs/cluster-network.md): dim 0 = the devices of a node, dim 1 = the nodes, so NPU id
 * = node x devices_per_node + device (ASTRA-sim numbers NPUs dim 0 fastest). Each level is
 * LLMServingSim's FullyConnected with link_bw / link_latency (config_builder.py writes
 * "FullyConnected" per dimension, scalars broadcast, arrays one value per dimension), unless the
 * config gives a node "topology" or a cluster "fabric". */
#include "planner/planner_internal.h"

#include <string.h>

struct sv_planner_cluster_net {
    sv_net *net;
    sv_sys *coll;
    int32_t n_inst;
    int32_t *first_device;
    int32_t *tp_group_base; /* 0 = none */
    int32_t *ffn_group;     /* afd: the FFN devices' group, 0 = none */
    int32_t *ep_group;
    int32_t *ep_rank_base;
    int32_t *dp_index, *dp_rank;
    int32_t n_dp;
    int32_t *dp_size;
};

static gboolean fill_dim(const struct sv_planner_cluster_cfg *c, int dim, int npus,
                         const struct sv_planner_net_level_cfg *lv, struct sv_net_topo_cfg *t,
                         int at, GError **error)
{
    double bw = c->n_link_bw > 0 ? c->link_bw_dims[MIN(dim, c->n_link_bw - 1)] : c->link_bw_gbps;
    double lat = sv_planner_cluster_link_latency_ns(c, dim);
    t->kind[at] = SV_NET_TOPO_FULLY_CONNECTED;
    if (lv->set) {
        t->kind[at] = lv->kind;
        if (lv->bw_gbps > 0)
            bw = lv->bw_gbps;
        if (lv->latency_ns >= 0)
            lat = lv->latency_ns;
    }
    if (!(bw > 0)) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                    "cluster network: dimension %d (%s) has no bandwidth: set link_bw or the "
                    "%s's bw_gbps",
                    dim, dim == 0 ? "devices of a node" : "nodes",
                    dim == 0 ? "node topology" : "fabric");
        return FALSE;
    }
    t->npus[at] = npus;
    t->bandwidth_gbps[at] = bw;
    t->latency_ns[at] = lat;
    return TRUE;
}

static const char *level_kind_name(sv_net_topo_kind k)
{
    switch (k) {
    case SV_NET_TOPO_RING:
        return "ring";
    case SV_NET_TOPO_FULLY_CONNECTED:
        return "fully_connected";
    case SV_NET_TOPO_SWITCH:
        return "switch";
    }
    return "?";
}

int32_t sv_planner__devices_per_node(const struct sv_planner_cluster_cfg *c)
{
    int32_t ppn = 0;
    for (int32_t n = 0; n < c->n_nodes; n++) {
        int32_t k = 0;
        for (int32_t i = 0; i < c->n_instances; i++)
            if (c->instances[i].node == n)
                k += sv_planner_instance_devices(&c->instances[i]);
        ppn = MAX(ppn, k);
    }
    return ppn;
}

static gboolean build_topo(const struct sv_planner_cluster_cfg *c, struct sv_net_topo_cfg *out,
                           int32_t *npus_per_node, GError **error)
{
    memset(out, 0, sizeof *out);
    int32_t ppn = sv_planner__devices_per_node(c);
    *npus_per_node = ppn;
    int dims = (ppn > 1 ? 1 : 0) + (c->n_nodes > 1 ? 1 : 0);
    int full_dims = c->n_nodes > 1 ? 2 : 1; /* dimensions LLMServingSim would count */
    if ((c->n_link_bw > 0 && c->n_link_bw != full_dims && c->n_link_bw != dims) ||
        (c->n_link_latency > 0 && c->n_link_latency != full_dims && c->n_link_latency != dims)) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                    "link_bw / link_latency: arrays must have one value per network dimension "
                    "(%d: devices of a node%s)",
                    full_dims, full_dims > 1 ? ", nodes" : "");
        return FALSE;
    }
    int at = 0;
    if (ppn > 1 && !fill_dim(c, 0, ppn, &c->nodes[0].topology, out, at++, error))
        return FALSE;
    /* A topology per node: each node is one line of dimension 0; one whose links differ from
     * node 0's gets its own bandwidth and latency (a PCIe node beside NVLink nodes). The kind
     * must agree: nvlink, pcie and switch are all switch levels. With an explicit fabric graph
     * each node's topology is expanded there instead (planner/fabric_graph.c). */
    for (int32_t n = 1; ppn > 1 && !c->fabric_graph && n < c->n_nodes; n++) {
        struct sv_net_topo_cfg one = {0};
        if (!fill_dim(c, 0, ppn, &c->nodes[n].topology, &one, 0, error))
            return FALSE;
        if (one.kind[0] != out->kind[0]) {
            g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                        "nodes[%d].topology.kind: a %s level beside nodes[0]'s %s level; nodes "
                        "may differ in bw_gbps and latency_ns, not in kind (nvlink, pcie and "
                        "switch are all switch levels; docs/cluster-network.md)",
                        n, level_kind_name(one.kind[0]), level_kind_name(out->kind[0]));
            return FALSE;
        }
        if (one.bandwidth_gbps[0] == out->bandwidth_gbps[0] &&
            one.latency_ns[0] == out->latency_ns[0])
            continue;
        if (out->n_line_over == SV_NET_MAX_LINE_OVER) {
            g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                        "nodes[%d].topology: more than %d nodes with links unlike nodes[0]'s", n,
                        SV_NET_MAX_LINE_OVER);
            return FALSE;
        }
        out->line_over[out->n_line_over++] = (struct sv_net_line_over){
            .dim = 0,
            .line = n,
            .bandwidth_gbps = one.bandwidth_gbps[0],
            .latency_ns = one.latency_ns[0],
        };
    }
    if (c->n_nodes > 1 && !fill_dim(c, 1, c->n_nodes, &c->fabric, out, at++, error))
        return FALSE;
    out->ndims = at;
    return TRUE;
}

/* Errors about the cluster's network are about its config file: they name it first. */
static void prefix_where(const struct sv_planner_cluster_cfg *c, GError **error)
{
    if (c->where[0] && error && *error && !g_str_has_prefix((*error)->message, c->where))
        g_prefix_error(error, "%s: ", c->where);
}

gboolean sv_planner_cluster_topo(const struct sv_planner_cluster_cfg *c,
                                 struct sv_net_topo_cfg *out, int32_t *npus_per_node,
                                 GError **error)
{
    gboolean ok = build_topo(c, out, npus_per_node, error);
    if (!ok)
        prefix_where(c, error);
    return ok;
}

static void cn_free_arrays(sv_planner_cluster_net *cn)
{
    g_free(cn->first_device);
    g_free(cn->tp_group_base);
    g_free(cn->ffn_group);
    g_free(cn->ep_group);
    g_free(cn->ep_rank_base);
    g_free(cn->dp_index);
    g_free(cn->dp_rank);
    g_free(cn->dp_size);
}

void sv_planner_cluster_net_free(sv_planner_cluster_net *cn)
{
    if (!cn)
        return;
    sv_sys_free(cn->coll);
    sv_net_free(cn->net);
    cn_free_arrays(cn);
    g_free(cn);
}

static gboolean add_group(sv_sys_groups *g, int32_t *next, int first, int n, int32_t *id,
                          GError **error)
{
    g_autofree int *members = g_new(int, (size_t)n);
    for (int k = 0; k < n; k++)
        members[k] = first + k;
    *id = (*next)++;
    return sv_sys_groups_add(g, *id, members, n, error);
}

sv_planner_cluster_net *sv_planner_cluster_net_new(sv_engine *eng,
                                                   const struct sv_planner_cluster_cfg *c,
                                                   sv_net_model model, GError **error)
{
    struct sv_net_topo_cfg topo;
    int32_t ppn = 0;
    if (!sv_planner_cluster_topo(c, &topo, &ppn, error))
        return NULL;
    sv_planner_cluster_net *cn = g_new0(sv_planner_cluster_net, 1);
    int32_t ni = c->n_instances;
    cn->n_inst = ni;
    cn->first_device = g_new0(int32_t, (size_t)ni);
    cn->tp_group_base = g_new0(int32_t, (size_t)ni);
    cn->ffn_group = g_new0(int32_t, (size_t)ni);
    cn->ep_group = g_new0(int32_t, (size_t)ni);
    cn->ep_rank_base = g_new0(int32_t, (size_t)ni);
    cn->dp_index = g_new0(int32_t, (size_t)ni);
    cn->dp_rank = g_new0(int32_t, (size_t)ni);
    cn->dp_size = g_new0(int32_t, (size_t)ni);
    g_autofree int32_t *used = g_new0(int32_t, (size_t)c->n_nodes);
    for (int32_t i = 0; i < ni; i++) {
        const struct sv_planner_instance_cfg *ic = &c->instances[i];
        cn->first_device[i] = ic->node * ppn + used[ic->node];
        used[ic->node] += sv_planner_instance_devices(ic);
        cn->dp_index[i] = -1;
    }
    /* Data-parallel groups, in order of first appearance (deterministic). */
    for (int32_t i = 0; i < ni; i++) {
        const struct sv_planner_instance_cfg *ic = &c->instances[i];
        if (!ic->dp_group[0] || cn->dp_index[i] >= 0)
            continue;
        int32_t idx = cn->n_dp++;
        for (int32_t j = i; j < ni; j++) {
            const struct sv_planner_instance_cfg *jc = &c->instances[j];
            if (strcmp(jc->dp_group, ic->dp_group) != 0)
                continue;
            if (jc->tp_size != ic->tp_size || jc->pp_size != ic->pp_size ||
                jc->ep_size != ic->ep_size || strcmp(jc->model_name, ic->model_name) != 0) {
                g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                            "instance %d: dp_group \"%s\" members must agree on model_name, "
                            "tp_size, pp_size and ep_size (LLMServingSim _resolve_dp_groups)",
                            j, ic->dp_group);
                goto fail;
            }
            cn->dp_index[j] = idx;
            cn->dp_rank[j] = cn->dp_size[idx]++;
        }
    }
    int32_t total = 0;
    for (int32_t i = 0; i < ni; i++)
        total = MAX(total, cn->first_device[i] + sv_planner_instance_devices(&c->instances[i]));
    if (total < 2 && topo.ndims == 0)
        return cn; /* one device: nothing to connect */

    struct sv_net_graph_cfg *graph = NULL;
    if (!sv_planner_cluster_graph(c, &graph, error))
        goto fail;
    cn->net = graph != NULL ? sv_net_new_graph(eng, graph, model, error)
                            : sv_net_new(eng, &topo, model, error);
    sv_net_graph_cfg_free(graph);
    if (!cn->net)
        goto fail;
    if (graph != NULL)
        topo = *sv_net_topo(cn->net); /* one dimension of every NPU for the system layer */
    sv_sys_groups *groups = sv_sys_groups_new();
    int32_t next = 1;
    for (int32_t i = 0; i < ni; i++) {
        const struct sv_planner_instance_cfg *ic = &c->instances[i];
        if (ic->tp_size > 1) {
            for (int32_t s = 0; s < ic->pp_size; s++) {
                int32_t id;
                if (!add_group(groups, &next, cn->first_device[i] + s * ic->tp_size, ic->tp_size,
                               &id, error)) {
                    sv_sys_groups_free(groups);
                    goto fail;
                }
                if (s == 0)
                    cn->tp_group_base[i] = id;
            }
        }
        if (ic->afd.micro_batches > 0 && ic->afd.ffn_npus > 1 && ic->afd_group_rank == 0 &&
            !add_group(groups, &next, cn->first_device[i] + ic->num_npus, ic->afd.ffn_npus,
                       &cn->ffn_group[i], error)) {
            sv_sys_groups_free(groups);
            goto fail;
        }
    }
    /* EP groups (MoE). LLMServingSim (docs/simulator/parallelism-mechanics.md): EP runs on the DP
     * dimension, plus the TP dimension when ep_size exceeds the DP group's size, and never on the
     * PP dimension (vLLM's EP group pins the pipeline stage). So each member holds
     * epm = ep_size / dp_size EP ranks (dp_size 1 without a dp_group), which must divide tp_size;
     * TP rank r is EP rank dp_rank x epm + r / k with k = tp_size / epm, and per stage there are k
     * groups, group g holding the TP ranks r = g (mod k) of every member. Group ids are
     * consecutive: ep_group + stage x k + r mod k. */
    for (int32_t i = 0; i < ni; i++) {
        const struct sv_planner_instance_cfg *ic = &c->instances[i];
        if (ic->ep_size <= 1)
            continue;
        int32_t d = cn->dp_index[i];
        int32_t dsz = d < 0 ? 1 : cn->dp_size[d];
        if (ic->ep_size % dsz != 0 || ic->tp_size % (ic->ep_size / dsz) != 0) {
            g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                        "instance %d: ep_size %d must be the dp_group size %d times a divisor of "
                        "tp_size %d",
                        i, ic->ep_size, dsz, ic->tp_size);
            sv_sys_groups_free(groups);
            goto fail;
        }
        int32_t epm = ic->ep_size / dsz;
        int32_t k = ic->tp_size / epm;
        if (d < 0 || cn->dp_rank[i] == 0) {
            int32_t base = next;
            g_autofree int *members = g_new(int, (size_t)(ic->ep_size));
            for (int32_t s = 0; s < ic->pp_size; s++) {
                for (int32_t g = 0; g < k; g++) {
                    int n = 0;
                    for (int32_t j = i; j < ni; j++) {
                        if (j != i && (d < 0 || cn->dp_index[j] != d))
                            continue;
                        for (int32_t r = g; r < ic->tp_size; r += k)
                            members[n++] = cn->first_device[j] + s * ic->tp_size + r;
                    }
                    if (!sv_sys_groups_add(groups, next++, members, n, error)) {
                        sv_sys_groups_free(groups);
                        goto fail;
                    }
                }
            }
            for (int32_t j = i; j < ni; j++)
                if (j == i || (d >= 0 && cn->dp_index[j] == d))
                    cn->ep_group[j] = base;
        }
        cn->ep_rank_base[i] = (d < 0 ? 0 : cn->dp_rank[i]) * epm;
    }
    struct sv_sys_cfg sc;
    sv_sys_cfg_init(&sc);
    /* One chunk per collective and a ring per dimension: LLMServingSim's system.json rewrites
     * every implementation list to ["ring"] x dims (_sync_system_collective_dims). */
    sc.preferred_dataset_splits = 1;
    /* A collective's reductions read and write the device's memory (ASTRA-sim's local-mem-bw,
     * PacketBundle: 3 x size / bandwidth per reduced chunk): the devices' memory bandwidth,
     * npu_mem.mem_bw or the hardware catalog's spec-sheet value, the slowest in the cluster (one
     * value per system layer, as ASTRA-sim has). Left 0 when no instance gives one: ASTRA-sim then
     * divides by zero, servesim charges a fixed 10 cycles per access. */
    sc.local_mem_bw = 0;
    for (int32_t i = 0; i < ni; i++) {
        const struct sv_planner_instance_cfg *ic = &c->instances[i];
        double bw = ic->npu_mem_bw_gbps;
        struct sv_compute_hw_cfg hw;
        if (!(bw > 0) && sv_compute_hw_lookup(ic->hardware, &hw, NULL))
            bw = hw.mem_bw_gbps;
        if (bw > 0 && (sc.local_mem_bw <= 0 || bw < sc.local_mem_bw))
            sc.local_mem_bw = bw;
        /* An afd instance's FFN devices are devices of the cluster too (docs/afd.md). */
        if (ic->afd.micro_batches > 0 && sv_compute_hw_lookup(ic->afd.ffn_hardware, &hw, NULL) &&
            hw.mem_bw_gbps > 0 && (sc.local_mem_bw <= 0 || hw.mem_bw_gbps < sc.local_mem_bw))
            sc.local_mem_bw = hw.mem_bw_gbps;
    }
    int nd = topo.ndims > 0 ? topo.ndims : 1;
    static const sv_sys_coll_type types[] = {SV_SYS_ALL_REDUCE, SV_SYS_ALL_GATHER,
                                             SV_SYS_REDUCE_SCATTER, SV_SYS_ALL_TO_ALL};
    for (size_t t = 0; t < G_N_ELEMENTS(types); t++) {
        sc.n_impl[types[t]] = nd;
        for (int d = 0; d < nd; d++)
            sc.impl[types[t]][d] = (struct sv_sys_impl){SV_SYS_IMPL_RING, -1};
    }
    /* The transport of each collective type (the TP and EP groups' collectives): rings for
     * all-reduce, all-gather and reduce-scatter (NCCL's ring algorithm); the MoE all-to-all
     * sends to every peer at once (NCCL's all-to-all is one send and one receive per peer in a
     * group call; DeepEP writes straight to each peer) wherever no third device relays, i.e. on
     * FullyConnected and switch dimensions, for groups smaller than the machine and for a group
     * that is the whole machine (which runs the per-dimension implementations). On a ring
     * dimension it stays a ring. */
    gboolean switched = TRUE;
    for (int d = 0; d < nd; d++) {
        gboolean direct = d >= topo.ndims || topo.kind[d] != SV_NET_TOPO_RING;
        if (direct)
            sc.impl[SV_SYS_ALL_TO_ALL][d].kind = SV_SYS_IMPL_DIRECT;
        switched = switched && direct;
    }
    if (switched)
        sc.group_impl[SV_SYS_ALL_TO_ALL] = SV_SYS_IMPL_DIRECT;
    cn->coll = sv_sys_new(cn->net, &sc, groups, error);
    sv_sys_cfg_clear(&sc);
    sv_sys_groups_free(groups);
    if (!cn->coll)
        goto fail;
    return cn;
fail:
    prefix_where(c, error);
    sv_planner_cluster_net_free(cn);
    return NULL;
}

sv_net *sv_planner_cluster_net_net(const sv_planner_cluster_net *cn)
{
    return cn->net;
}

sv_sys *sv_planner_cluster_net_coll(const sv_planner_cluster_net *cn)
{
    return cn->coll;
}

int32_t sv_planner_cluster_net_first_device(const sv_planner_cluster_net *cn, int32_t i)
{
    SV_ASSERT(i >= 0 && i < cn->n_inst);
    return cn->first_device[i];
}

int32_t sv_planner_cluster_net_tp_group(const sv_planner_cluster_net *cn, int32_t i, int32_t stage)
{
    SV_ASSERT(i >= 0 && i < cn->n_inst);
    return cn->tp_group_base[i] > 0 ? cn->tp_group_base[i] + stage : 0;
}

int32_t sv_planner_cluster_net_ffn_group(const sv_planner_cluster_net *cn, int32_t i)
{
    SV_ASSERT(i >= 0 && i < cn->n_inst);
    return cn->ffn_group[i];
}

int32_t sv_planner_cluster_net_ep_group(const sv_planner_cluster_net *cn, int32_t i)
{
    SV_ASSERT(i >= 0 && i < cn->n_inst);
    return cn->ep_group[i];
}

int32_t sv_planner_cluster_net_ep_rank_base(const sv_planner_cluster_net *cn, int32_t i)
{
    SV_ASSERT(i >= 0 && i < cn->n_inst);
    return cn->ep_rank_base[i];
}

int32_t sv_planner_cluster_net_dp_index(const sv_planner_cluster_net *cn, int32_t i, int32_t *rank)
{
    SV_ASSERT(i >= 0 && i < cn->n_inst);
    if (rank)
        *rank = cn->dp_rank[i];
    return cn->dp_index[i];
}

int32_t sv_planner_cluster_net_num_dp(const sv_planner_cluster_net *cn)
{
    return cn->n_dp;
}

int32_t sv_planner_cluster_net_dp_size(const sv_planner_cluster_net *cn, int32_t d)
{
    SV_ASSERT(d >= 0 && d < cn->n_dp);
    return cn->dp_size[d];
}
