/* The quick form's cluster (servesim run --model --hardware --tp --pp --instances --pd
 * --decode-hardware --decode-tp): what a hand-written cluster config would say for N identical
 * instances, or P prefill and D decode instances, on DGX/HGX-like nodes (docs/serving.md,
 * "Quick form"). */
#include "planner/planner_internal.h"

#include <string.h>

/* Scale-out NIC per device (the nodes' dimension), decimal GB/s per direction. DGX H100 / H200 /
 * B200: eight ConnectX-7 400 Gb/s ports, one per GPU, on the compute fabric (NVIDIA DGX H100 user
 * guide, "Hardware overview"; DGX B200 likewise) = 50 GB/s; DGX A100: eight ConnectX-6 HDR
 * 200 Gb/s ports (NVIDIA DGX A100 user guide) = 25 GB/s. Other devices get the 400 Gb/s rail. */
#define QUICK_NIC_GBPS 50.0
#define QUICK_NIC_A100_GBPS 25.0

/* Decimal GB/s in the config's unit, ASTRA-sim GB/s (2^30 B per 10^9 ns; VALIDATION_NOTES item
 * 6), as a config's link_bw. */
static double astra_gbps(double gbps)
{
    return gbps * 1e9 / 1073741824.0;
}

static double nic_gbps(const struct sv_compute_hw_cfg *hw)
{
    return g_str_has_prefix(hw->name, "A100") ? QUICK_NIC_A100_GBPS : QUICK_NIC_GBPS;
}

/* One instance as the one-instance quick form always made it: every runtime key unset (the run's
 * defaults apply; vllm_batch_defaults gives `vllm serve`'s batch limits). */
static void instance_init(struct sv_planner_instance_cfg *ic, const char *model,
                          const struct sv_compute_hw_cfg *hw, int32_t tp, int32_t pp,
                          sv_msg_role role)
{
    memset(ic, 0, sizeof *ic);
    g_strlcpy(ic->model_name, model, sizeof ic->model_name);
    g_strlcpy(ic->hardware, hw->name, sizeof ic->hardware);
    /* One unit for capacities: the catalog's mem_gib is GiB, as a config's mem_size. */
    ic->npu_mem_gib = hw->mem_gib;
    ic->npu_mem_bw_gbps = hw->mem_bw_gbps;
    ic->mem_util = SV_PLANNER__DEFAULT_MEM_UTIL;
    ic->num_npus = tp * pp;
    ic->tp_size = tp;
    ic->pp_size = pp;
    ic->ep_size = 1;
    ic->role = role;
    ic->max_num_seqs = ic->max_num_batched_tokens = ic->long_prefill_token_threshold = -1;
    ic->block_size = ic->max_model_len = -1;
    ic->enable_prefix_caching = ic->enable_chunked_prefill = ic->reserve_full_isl = -1;
    ic->enable_attn_offloading = ic->enable_sub_batch_interleaving = -1;
    ic->enable_local_offloading = -1;
    ic->cache_experts = -1;
}

/* Packing onto nodes: instances in order fill a node of SV_PLANNER_QUICK_NODE_DEVICES devices of
 * one hardware kind; one that does not fit in what is left (or is on other hardware) opens the
 * next node, and one larger than a node gets a node of its own size (the cluster network keeps an
 * instance inside its node, docs/cluster-network.md). */
struct packer {
    GArray *insts;
    int32_t node, used; /* current node (-1 before the first) and its devices in use */
    const char *hw;     /* its hardware */
};

static void place(struct packer *k, int32_t n, const char *model,
                  const struct sv_compute_hw_cfg *hw, int32_t tp, int32_t pp, sv_msg_role role)
{
    int32_t devs = tp * pp;
    for (int32_t j = 0; j < n; j++) {
        if (k->node < 0 || strcmp(k->hw, hw->name) != 0 ||
            k->used + devs > SV_PLANNER_QUICK_NODE_DEVICES) {
            k->node++;
            k->used = 0;
            k->hw = hw->name;
        }
        struct sv_planner_instance_cfg ic;
        instance_init(&ic, model, hw, tp, pp, role);
        ic.node = k->node;
        ic.index = (int32_t)k->insts->len;
        g_array_append_val(k->insts, ic);
        k->used += devs;
    }
}

struct sv_planner_cluster_cfg *sv_planner_cluster_quick(const struct sv_planner_quick_cfg *q,
                                                        const sv_compute_hw_catalog *catalog,
                                                        GError **error)
{
    struct sv_compute_hw_cfg hw, dhw;
    if (!sv_compute_hw_catalog_lookup(catalog, q->hardware, &hw, error)) {
        g_prefix_error(error, "--hardware: ");
        return NULL;
    }
    gboolean pd = q->prefill > 0 || q->decode > 0;
    const char *dname = q->decode_hardware ? q->decode_hardware : q->hardware;
    if (!pd && q->decode_hardware) {
        sv_planner__error(error,
                          "--decode-hardware needs --pd P:D (decode instances to put on it)");
        return NULL;
    }
    if (!pd && q->decode_tp) {
        sv_planner__error(error, "--decode-tp needs --pd P:D (decode instances to give it)");
        return NULL;
    }
    if (!sv_compute_hw_catalog_lookup(catalog, dname, &dhw, error)) {
        g_prefix_error(error, "--decode-hardware: ");
        return NULL;
    }
    int32_t tp = q->tp ? q->tp : 1, pp = q->pp ? q->pp : 1;
    int32_t dtp = q->decode_tp ? q->decode_tp : tp;
    if (tp < 1 || pp < 1 || dtp < 1) {
        sv_planner__error(error, "%s must be >= 1",
                          tp < 1   ? "--tp"
                          : pp < 1 ? "--pp"
                                   : "--decode-tp");
        return NULL;
    }
    if ((int64_t)MAX(tp, dtp) * pp > SV_RANGE_DEVICES_MAX) {
        sv_planner__error(error,
                          "--tp %d x --pp %d: %" G_GINT64_FORMAT " devices per instance, above %d",
                          MAX(tp, dtp), pp, (int64_t)MAX(tp, dtp) * pp, SV_RANGE_DEVICES_MAX);
        return NULL;
    }
    if (pd && (q->prefill < 1 || q->decode < 1)) {
        sv_planner__error(
            error,
            "--pd %d:%d: needs at least one prefill and one decode instance (P >= 1, D >= 1)",
            q->prefill, q->decode);
        return NULL;
    }
    if (pd && q->instances && q->instances != q->prefill + q->decode) {
        sv_planner__error(
            error, "--instances %d does not match --pd %d:%d (P + D = %d instances; give one)",
            q->instances, q->prefill, q->decode, q->prefill + q->decode);
        return NULL;
    }
    if (q->instances < 0) {
        sv_planner__error(error, "--instances must be >= 1");
        return NULL;
    }
    struct sv_planner_cluster_cfg *c = g_new0(struct sv_planner_cluster_cfg, 1);
    c->hw_catalog = catalog;
    c->vllm_batch_defaults = TRUE; /* a `vllm serve` deployment (docs/serving.md) */
    sv_planner_tier_flags_init(&c->tier_flags);
    struct packer k = {.insts = g_array_new(FALSE, FALSE, sizeof(struct sv_planner_instance_cfg)),
                       .node = -1};
    if (pd) {
        place(&k, q->prefill, q->model, &hw, tp, pp, SV_MSG_ROLE_PREFILL);
        place(&k, q->decode, q->model, &dhw, dtp, pp, SV_MSG_ROLE_DECODE);
    } else {
        place(&k, q->instances ? q->instances : 1, q->model, &hw, tp, pp, SV_MSG_ROLE_BOTH);
    }
    GArray *insts = k.insts;
    int32_t nodes = k.node + 1;
    c->n_instances = (int32_t)insts->len;
    c->instances = (struct sv_planner_instance_cfg *)(void *)g_array_free(insts, FALSE);
    c->n_nodes = nodes;
    c->nodes = g_new0(struct sv_planner_node_cfg, nodes);
    for (int32_t n = 0; n < nodes; n++)
        sv_planner__storage_defaults(&c->nodes[n].storage);
    /* Devices of a node: the hardware's scale-up link for TP all-reduces and PP hand-offs (the
     * slower of the two kinds under --decode-hardware: the cluster network has one rate per
     * dimension, docs/cluster-network.md "Limits"). No link_latency is given: the catalog's
     * per-hop latency applies (sv_planner_cluster_link_latency_ns), on the nodes' dimension too,
     * a lower bound for a real fabric. */
    c->link_bw_gbps = astra_gbps(MIN(hw.link_bw_gbps, dhw.link_bw_gbps));
    if (nodes > 1) {
        c->n_link_bw = 2;
        c->link_bw_dims[0] = c->link_bw_gbps;
        c->link_bw_dims[1] = astra_gbps(MIN(nic_gbps(&hw), nic_gbps(&dhw)));
    }
    return c;
}

struct sv_planner_cluster_cfg *sv_planner_cluster_single(const char *model, const char *hardware,
                                                         int tp, GError **error)
{
    return sv_planner_cluster_single_with(model, hardware, tp, NULL, error);
}

struct sv_planner_cluster_cfg *sv_planner_cluster_single_with(const char *model,
                                                              const char *hardware, int tp,
                                                              const sv_compute_hw_catalog *catalog,
                                                              GError **error)
{
    struct sv_compute_hw_cfg hw;
    if (!sv_compute_hw_catalog_lookup(catalog, hardware, &hw, error))
        return NULL;
    if (tp < 1) {
        sv_planner__error(error, "--tp must be >= 1");
        return NULL;
    }
    struct sv_planner_quick_cfg q = {.model = model, .hardware = hardware, .tp = tp};
    return sv_planner_cluster_quick(&q, catalog, error);
}
