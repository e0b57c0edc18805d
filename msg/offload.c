/* Memory tiers in the serving group (issue 8; docs/memory-tiers.md): the MEM_LOAD / MEM_STORE
 * nodes of an iteration DAG move bytes over the tier fabric (memory-tier/fabric.c), and weight
 * parts placed off the device are streamed in each iteration (PLAN use 1).
 *
 * Weight streaming, per rank, over the parts of the model in execution order (embedding, the
 * decoder layers, the head; msg_tiers weight_route):
 *   - serial (LLMServingSim: ASTRA-sim issues the layer's weight load as part of the layer):
 *     load(p) -> compute(p) -> load(next) ...; a streamed part costs load + compute.
 *   - prefetch (default; double buffering as FlexGen and DeepSpeed ZeRO-Inference): the k-th
 *     streamed load may start when load k-1 is done and the compute of streamed part k-2 is done
 *     (two buffers); compute(p) waits for load(p) and compute(p-1). In steady state a streamed
 *     layer takes max(compute, bytes / bandwidth).
 * Loads occupy the device's comm slot (ASTRA policy: one comm op per device), as ASTRA-sim's
 * MEM_LOAD nodes do. */
#include "msg/msg_internal.h"

#include <string.h>

gboolean sv_msg__tiers_on(const sv_msg *m)
{
    return m->cfg.tiers.fabric != NULL || m->cfg.tiers.xfer != NULL;
}

gboolean sv_msg__streams(const sv_msg *m)
{
    const struct sv_msg_tier_cfg *t = &m->cfg.tiers;
    if (!sv_msg__tiers_on(m) || !t->weight_route || !m->cfg.lat)
        return FALSE;
    const struct sv_compute_model_cfg *mc = sv_compute_latency_model(m->cfg.lat);
    for (int32_t r = 0; r < m->cfg.num_devices; r++) {
        if (!t->weight_route[r])
            continue;
        for (int64_t p = 0; p < mc->num_layers + 2; p++)
            if (t->weight_route[r][p])
                return TRUE;
    }
    return FALSE;
}

void sv_msg__xfer(sv_msg *m, const struct sv_memtier_route *r, uint64_t bytes, sv_net_done_fn done,
                  void *ctx, uint64_t arg)
{
    const struct sv_msg_tier_cfg *t = &m->cfg.tiers;
    m->tier_bytes += bytes;
    if (t->xfer)
        t->xfer(t->xfer_ctx, r, bytes, done, ctx, arg);
    else
        sv_memtier_fabric_xfer(t->fabric, r, bytes, done, ctx, arg);
}

static void mem_done(sv_engine *eng, void *ctx, uint64_t arg)
{
    sv_dag_exec_node_done(ctx, (sv_dag_node *)(uintptr_t)arg);
}

/* MEM_LOAD / MEM_STORE: tensor_size bytes over the route in node->user (tier fabric). */
void sv_msg__mem_handler(sv_dag_exec *ex, sv_dag_node *n, void *ctx)
{
    sv_msg *m = ctx;
    const struct sv_memtier_route *r = n->user;
    uint64_t bytes = n->p.tensor_size_bytes;
    if (!r || bytes == 0 || !sv_msg__tiers_on(m)) {
        sv_dag_exec_node_done(ex, n);
        return;
    }
    sv_msg__xfer(m, r, bytes, mem_done, ex, (uint64_t)(uintptr_t)n);
}

sv_dag_node *sv_msg__mem_node(sv_msg *m, sv_dag_kind kind, int32_t dev,
                              const struct sv_memtier_route *route, uint64_t bytes,
                              sv_dag_node *parent)
{
    struct sv_dag_node_cfg nc = {
        .id = sv_dag_next_id(m->dag),
        .name = NULL,
        .kind = kind,
        .device = dev,
        .p = {.has = SV_DAG_HAS_TENSOR_SIZE, .tensor_size_bytes = bytes},
        .user = (void *)route,
    };
    sv_dag_node *n = sv_dag_node_add(m->dag, &nc, NULL);
    SV_ASSERT(n != NULL);
    if (parent)
        SV_ASSERT(sv_dag_edge_add(m->dag, parent, n, SV_DAG_EDGE_DATA, NULL));
    return n;
}

void sv_msg__stream_begin(sv_msg *m, struct sv_msg__stream *st, int32_t rank)
{
    memset(st, 0, sizeof *st);
    const struct sv_msg_tier_cfg *t = &m->cfg.tiers;
    st->routes = sv_msg__tiers_on(m) && t->weight_route ? t->weight_route[rank] : NULL;
    st->serial = t->offload_serial;
}

sv_dag_node *sv_msg__stream_pre(sv_msg *m, struct sv_msg__stream *st, int64_t part, int32_t dev,
                                sv_dag_node **prev)
{
    const struct sv_memtier_route *route = st->routes ? st->routes[part] : NULL;
    if (!route)
        return NULL;
    uint64_t bytes = m->cfg.tiers.layer_weight_bytes[part];
    sv_dag_node *load;
    if (st->serial) {
        load = sv_msg__mem_node(m, SV_DAG_KIND_MEM_LOAD, dev, route, bytes, *prev);
        *prev = load;
    } else {
        load = sv_msg__mem_node(m, SV_DAG_KIND_MEM_LOAD, dev, route, bytes, st->last_load);
        if (st->c2)
            SV_ASSERT(sv_dag_edge_add(m->dag, st->c2, load, SV_DAG_EDGE_DATA, NULL));
        st->last_load = load;
    }
    st->first_id = sv_dag_next_id(m->dag);
    return load;
}

void sv_msg__stream_post(sv_msg *m, struct sv_msg__stream *st, sv_dag_node *load,
                         sv_dag_node **prev)
{
    if (!load || st->serial)
        return;
    if (sv_dag_next_id(m->dag) == st->first_id) {
        /* The part has no compute node: a zero-time join carries the gate. */
        struct sv_dag_node_cfg nc = {
            .id = sv_dag_next_id(m->dag),
            .kind = SV_DAG_KIND_LOGICAL,
            .device = load->device,
        };
        sv_dag_node *j = sv_dag_node_add(m->dag, &nc, NULL);
        SV_ASSERT(j != NULL);
        if (*prev)
            SV_ASSERT(sv_dag_edge_add(m->dag, *prev, j, SV_DAG_EDGE_DATA, NULL));
        *prev = j;
    }
    sv_dag_node *first = sv_dag_node_find(m->dag, st->first_id);
    SV_ASSERT(first != NULL);
    SV_ASSERT(sv_dag_edge_add(m->dag, load, first, SV_DAG_EDGE_DATA, NULL));
    st->c2 = st->c1;
    st->c1 = *prev;
}
