/* PIM attention offload in a run (docs/pim.md): each node with an offloading instance loads its
 * PIM device (cpu_mem.pim_config, a DRAMSim3-style INI), derives its channels from the node's
 * cpu_mem size (LLMServingSim: num_ch = mem_size / channel capacity) and shares them equally among
 * its offloading instances; an instance's KV pool is its channels' capacity (the KV lives in PIM
 * memory: LLMServingSim pim-offload.md "KV cache in PIM memory"), and its msg gets the channels,
 * the latency model and the NPU <-> PIM link (the node's PCIe). The node's DRAM power becomes the
 * PIM channels' (pim-config.md "Where this is used": idle_power per channel, and
 * (peak - idle) x busy time while computing). */
#include "planner/planner_internal.h"

#include <math.h>
#include <string.h>

typedef struct {
    struct sv_compute_pim_cfg dev;
    int64_t channels;  /* of the node */
    int32_t n_offload; /* offloading instances on the node */
    gboolean used;
} pim_node;

struct sv_planner_pim {
    const struct sv_planner_cluster_cfg *c;
    pim_node *nodes;
    int32_t n_nodes;
    gboolean *attn, *sub, *local; /* per instance, resolved */
    sv_compute_pim_attn_kind kind;
    gboolean kind_set;
    double flops;
    sv_compute_pim_pack_fn pack;
    void *pack_user;
};

static gboolean pick(int run, int inst)
{
    return run >= 0 ? run == 1 : inst == 1;
}

static gboolean find_ini(const struct sv_planner_run_cfg *cfg, const char *name, const char *where,
                         char **out, GError **error)
{
    g_autoptr(GString) tried = g_string_new(NULL);
    for (int k = 0; cfg->pim_dirs && cfg->pim_dirs[k]; k++) {
        g_autofree char *file = g_strdup_printf("%s.ini", name);
        char *p = g_build_filename(cfg->pim_dirs[k], file, NULL);
        if (g_file_test(p, G_FILE_TEST_IS_REGULAR)) {
            *out = p;
            return TRUE;
        }
        g_string_append_printf(tried, "%s%s", tried->len ? ", " : "", p);
        g_free(p);
    }
    return sv_planner__path_error(error, where,
                                  "PIM device '%s' not found (looked for %s); give its folder with "
                                  "--pim-dir",
                                  name, tried->len ? tried->str : "no folder given");
}

sv_planner_pim *sv_planner_pim_new(const struct sv_planner_run_cfg *cfg, GError **error)
{
    const struct sv_planner_cluster_cfg *c = cfg->cluster;
    g_autofree gboolean *attn = g_new0(gboolean, (size_t)c->n_instances);
    g_autofree gboolean *sub = g_new0(gboolean, (size_t)c->n_instances);
    g_autofree gboolean *local = g_new0(gboolean, (size_t)c->n_instances);
    gboolean any = FALSE;
    for (int32_t i = 0; i < c->n_instances; i++) {
        const struct sv_planner_instance_cfg *ic = &c->instances[i];
        attn[i] = pick(cfg->enable_attn_offloading, ic->enable_attn_offloading);
        sub[i] = pick(cfg->enable_sub_batch_interleaving, ic->enable_sub_batch_interleaving);
        local[i] = pick(cfg->enable_local_offloading, ic->enable_local_offloading);
        g_autofree char *w = g_strdup_printf("%s: instances[%d]", c->where, i);
        /* LLMServingSim __main__.py refuses both combinations at startup. */
        if (sub[i] && !attn[i]) {
            sv_planner__path_error(error, w,
                                   "enable_sub_batch_interleaving needs enable_attn_offloading "
                                   "(it overlaps NPU work with PIM attention)");
            return NULL;
        }
        if (sub[i] && ic->pp_size > 1) {
            sv_planner__path_error(error, w,
                                   "enable_sub_batch_interleaving with pp_size %d: an interleaved "
                                   "iteration leaves both sub-batches inside a layer at a stage "
                                   "edge",
                                   ic->pp_size);
            return NULL;
        }
        if (attn[i] && !c->nodes[ic->node].pim_config[0]) {
            g_autofree char *p =
                g_strdup_printf("%s: nodes[%d].cpu_mem.pim_config", c->where, ic->node);
            sv_planner__path_error(error, p,
                                   "missing: instance %d offloads attention to PIM "
                                   "(enable_attn_offloading)",
                                   i);
            return NULL;
        }
        any = any || attn[i] || local[i];
    }
    for (int32_t n = 0; n < c->n_nodes; n++) {
        /* A power block that leaves the DIMMs to the PIM config needs a node that offloads. */
        gboolean offloads = FALSE;
        for (int32_t i = 0; i < c->n_instances; i++)
            offloads = offloads || (attn[i] && c->instances[i].node == n);
        if (c->power && c->nodes[n].has_power && c->nodes[n].power.dram_from_pim && !offloads) {
            g_autofree char *w = g_strdup_printf("%s: nodes[%d].power.dram.dimm_size", c->where, n);
            sv_planner__path_error(error, w,
                                   "required key is missing (a node takes its DIMMs from its "
                                   "pim_config only when an instance offloads attention)");
            return NULL;
        }
    }
    if (!any)
        return NULL;
    sv_planner_pim *p = g_new0(sv_planner_pim, 1);
    p->c = c;
    p->n_nodes = c->n_nodes;
    p->nodes = g_new0(pim_node, (size_t)c->n_nodes);
    p->attn = g_steal_pointer(&attn);
    p->sub = g_steal_pointer(&sub);
    p->local = g_steal_pointer(&local);
    p->flops = cfg->pim_flops;
    /* The placement policy by name: the run's registry (plugins too), else the built-ins. */
    const char *place = cfg->pim_placement ? cfg->pim_placement : "greedy";
    if (cfg->registry) {
        const struct sv_compute_pim_place_ops *po =
            sv_registry_lookup(cfg->registry, SV_REGISTRY_PIM_PLACE, place, error);
        if (!po)
            goto fail;
        p->pack = po->pack;
        p->pack_user = po->user;
    } else {
        p->pack = sv_compute_pim_pack_lookup(place, error);
        if (!p->pack)
            goto fail;
    }
    if (cfg->pim_model) {
        p->kind_set = TRUE;
        if (strcmp(cfg->pim_model, "linear") == 0) {
            p->kind = SV_COMPUTE_PIM_ATTN_LINEAR;
        } else if (strcmp(cfg->pim_model, "bandwidth") == 0) {
            p->kind = SV_COMPUTE_PIM_ATTN_BANDWIDTH;
        } else {
            g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                        "--pim-model: unknown model '%s' (known: linear, bandwidth)",
                        cfg->pim_model);
            goto fail;
        }
    }
    for (int32_t i = 0; i < c->n_instances; i++)
        if (p->attn[i])
            p->nodes[c->instances[i].node].n_offload++;
    for (int32_t n = 0; n < c->n_nodes; n++) {
        pim_node *pn = &p->nodes[n];
        if (pn->n_offload == 0)
            continue;
        g_autofree char *w = g_strdup_printf("%s: nodes[%d].cpu_mem.pim_config", c->where, n);
        g_autofree char *path = NULL;
        if (!find_ini(cfg, c->nodes[n].pim_config, w, &path, error) ||
            !sv_compute_pim_load(path, &pn->dev, error))
            goto fail;
        uint64_t mem = (uint64_t)(c->nodes[n].cpu_mem_gib * 1073741824.0);
        pn->channels = sv_compute_pim_channels(&pn->dev, mem);
        if (pn->channels < pn->n_offload) {
            g_autofree char *mw = g_strdup_printf("%s: nodes[%d].cpu_mem.mem_size", c->where, n);
            sv_planner__path_error(error, mw,
                                   "%.6g GiB holds %" G_GINT64_FORMAT " channel(s) of %s (%.6g "
                                   "GiB each) for %d offloading instance(s): at least one each",
                                   c->nodes[n].cpu_mem_gib, pn->channels, pn->dev.name,
                                   (double)pn->dev.ch_capacity_bytes / 1073741824.0, pn->n_offload);
            goto fail;
        }
        pn->used = TRUE;
    }
    return p;
fail:
    sv_planner_pim_free(p);
    return NULL;
}

void sv_planner_pim_free(sv_planner_pim *p)
{
    if (!p)
        return;
    g_free(p->nodes);
    g_free(p->attn);
    g_free(p->sub);
    g_free(p->local);
    g_free(p);
}

gboolean sv_planner_pim_instance(sv_planner_pim *p, int32_t i, const struct sv_compute_model_cfg *m,
                                 uint32_t block_size, uint64_t *blocks, struct sv_msg_cfg *mc,
                                 GError **error)
{
    if (!p)
        return TRUE;
    const struct sv_planner_instance_cfg *ic = &p->c->instances[i];
    if (p->local[i]) {
        /* npu_mem bandwidth (decimal GB/s, as LLMServingSim's local_mem takes it) and latency. */
        if (!(ic->npu_mem_bw_gbps > 0)) {
            g_autofree char *w =
                g_strdup_printf("%s: instances[%d].npu_mem.mem_bw", p->c->where, i);
            return sv_planner__path_error(error, w,
                                          "must be > 0 for enable_local_offloading (weights are "
                                          "read at this bandwidth)");
        }
        mc->local_load_bytes_per_ns = ic->npu_mem_bw_gbps;
        mc->local_load_latency_ns = ic->npu_mem_latency_ns;
    }
    if (!p->attn[i])
        return TRUE;
    pim_node *pn = &p->nodes[ic->node];
    struct sv_msg_pim_cfg *pc = &mc->pim;
    pc->dev = &pn->dev;
    sv_compute_pim_attn_kind kind = p->kind;
    if (!p->kind_set) {
        /* Default: LLMServingSim's calibrated fit where it has one, else the bandwidth model. */
        struct sv_compute_pim_attn probe;
        kind = sv_compute_pim_attn_init(&probe, &pn->dev, SV_COMPUTE_PIM_ATTN_LINEAR, NULL)
                   ? SV_COMPUTE_PIM_ATTN_LINEAR
                   : SV_COMPUTE_PIM_ATTN_BANDWIDTH;
    }
    if (!sv_compute_pim_attn_init(&pc->attn, &pn->dev, kind, error))
        return FALSE;
    pc->attn.compute_flops_per_s = p->flops;
    pc->n_channels = (int32_t)MIN(pn->channels / pn->n_offload, (int64_t)INT32_MAX);
    /* LLMServingSim: channel_split = min(pim_channels, kv_heads). */
    pc->split = (int32_t)MIN((int64_t)pc->n_channels, MAX(m->num_kv_heads, (int64_t)1));
    pc->pack = p->pack;
    pc->pack_user = p->pack_user;
    pc->sub_batch = p->sub[i];
    /* NPU <-> PIM: the node's PCIe (nodes[].pcie, else the hardware catalog's host link). */
    const struct sv_planner_node_cfg *nc = &p->c->nodes[ic->node];
    double pcie;
    if (!sv_planner__pcie_gbps(p->c, ic, &pcie, error))
        return FALSE;
    if (!(pcie > 0)) {
        g_autofree char *w = g_strdup_printf("%s: nodes[%d].pcie.bw_gbps", p->c->where, ic->node);
        return sv_planner__path_error(error, w,
                                      "no host-link bandwidth published for %s: give the node's "
                                      "PCIe bandwidth (PIM attention moves Q, K, V over it)",
                                      ic->hardware);
    }
    pc->xfer_bytes_per_ns = pcie; /* decimal GB/s = B/ns */
    pc->xfer_latency_ns = nc->pcie.latency_ns > 0 ? nc->pcie.latency_ns : 0;
    /* The KV pool: the instance's channels' capacity over one token's K and V of every layer
     * and every rank (the whole model's heads live in PIM). */
    uint64_t bytes = (uint64_t)pc->n_channels * pn->dev.ch_capacity_bytes;
    uint64_t per_block = sv_compute_model_kv_bytes_per_token_layer(m, 1) * (uint64_t)m->num_layers *
                         (uint64_t)block_size;
    *blocks = per_block > 0 ? bytes / per_block : 0;
    if (*blocks == 0) {
        g_autofree char *w =
            g_strdup_printf("%s: nodes[%d].cpu_mem.mem_size", p->c->where, ic->node);
        return sv_planner__path_error(error, w, "the PIM channels of instance %d hold no KV block",
                                      i);
    }
    return TRUE;
}

void sv_planner_pim_power(const sv_planner_pim *p, sv_planner_power *pw)
{
    if (!p || !pw)
        return;
    for (int32_t n = 0; n < p->n_nodes; n++) {
        const pim_node *pn = &p->nodes[n];
        if (pn->used)
            sv_planner_power_set_pim(pw, n, pn->channels, pn->dev.idle_power_mw / 1000.0,
                                     pn->dev.peak_power_mw / 1000.0);
    }
}

int64_t sv_planner_pim_channels(const sv_planner_pim *p, int32_t node)
{
    return p && node >= 0 && node < p->n_nodes && p->nodes[node].used ? p->nodes[node].channels : 0;
}
