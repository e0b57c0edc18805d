/* Fuzz target: LLMServingSim cluster configs (planner/config.c and what `servesim run` derives
 * from a config before it simulates: the memory-tier and PIM checks, each instance's model,
 * placement, weight split and KV capacity, and the cluster's network topology).
 *
 * One input is one cluster JSON. Errors must name the file. */
#include "fuzz.h"

#include "compute/compute.h"
#include "planner/planner.h"

#include <stdio.h>
#include <stdlib.h>

static void derive(const struct sv_planner_cluster_cfg *c, const char *path)
{
    GError *e = NULL;
    struct sv_planner_tier_flags flags;
    sv_planner_tier_flags_init(&flags);
    struct sv_planner_run_cfg rc = {.cluster = c, .tier_flags = &flags};
    rc.enable_attn_offloading = rc.enable_sub_batch_interleaving = rc.enable_local_offloading = -1;
    if (!sv_planner_run_check(&rc, &e))
        g_clear_error(&e); /* PIM device files are looked up on disk: absent here */
    for (int32_t i = 0; i < c->n_instances; i++) {
        const struct sv_planner_instance_cfg *ic = &c->instances[i];
        struct sv_compute_model_cfg m;
        if (!sv_compute_model_lookup(ic->model_name, NULL, &m, &e)) {
            g_clear_error(&e);
            continue;
        }
        struct sv_planner_placement_map map;
        if (!sv_planner_placement_resolve(ic, (int32_t)m.num_layers, &map, &e)) {
            sv_fuzz_check(FALSE, e, path);
            g_clear_error(&e);
            continue;
        }
        struct sv_planner_weight_split ws;
        sv_planner_weight_split(&m, ic->tp_size, ic->pp_size, &map, &ws);
        uint64_t blocks = 0;
        if (!sv_planner_instance_kv_blocks(ic, &m, &map, 16, &blocks, &e))
            g_clear_error(&e);
        sv_planner_placement_map_clear(&map);
    }
    for (int d = 0; d < 2; d++)
        (void)sv_planner_cluster_link_latency_ns(c, d);
    struct sv_net_topo_cfg topo;
    int32_t per_node = 0;
    if (!sv_planner_cluster_topo(c, &topo, &per_node, &e)) {
        sv_fuzz_check(FALSE, e, path);
        g_clear_error(&e);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = sv_fuzz_input_file(data, size, "cluster.json");
    GError *e = NULL;
    struct sv_planner_cluster_cfg *c = sv_planner_cluster_load(path, &e);
    sv_fuzz_check(c != NULL, e, path);
    g_clear_error(&e);
    if (c)
        derive(c, path);
    sv_planner_cluster_free(c);
    return 0;
}
