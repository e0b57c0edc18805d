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
    struct msg_tiers *T = m->tiers;
    st->kv_gate = T && T->layer_gate && part < T->n_layers ? T->layer_gate[part] : NULL;
    sv_dag_node *load = NULL;
    if (route) {
        uint64_t bytes = m->cfg.tiers.layer_weight_bytes[part];
        if (st->serial) {
            load = sv_msg__mem_node(m, SV_DAG_KIND_MEM_LOAD, dev, route, bytes, *prev);
            *prev = load;
        } else {
            load = sv_msg__mem_node(m, SV_DAG_KIND_MEM_LOAD, dev, route, bytes, st->last_load);
            if (st->c2)
                SV_ASSERT(sv_dag_edge_add(m->dag, st->c2, load, SV_DAG_EDGE_DATA, NULL));
            st->last_load = load;
        }
    }
    st->first_id = sv_dag_next_id(m->dag);
    return load;
}

void sv_msg__stream_post(sv_msg *m, struct sv_msg__stream *st, sv_dag_node *load,
                         sv_dag_node **prev)
{
    sv_dag_node *wgate = load && !st->serial ? load : NULL;
    if (!wgate && !st->kv_gate)
        return;
    if (sv_dag_next_id(m->dag) == st->first_id) {
        /* The part has no compute node: a zero-time join carries the gate. */
        int32_t dev = load ? load->device : st->kv_gate->device;
        *prev = sv_msg__join(m, dev, *prev, NULL);
    }
    sv_dag_node *first = sv_dag_node_find(m->dag, st->first_id);
    SV_ASSERT(first != NULL);
    if (wgate)
        SV_ASSERT(sv_dag_edge_add(m->dag, wgate, first, SV_DAG_EDGE_DATA, NULL));
    if (st->kv_gate)
        SV_ASSERT(sv_dag_edge_add(m->dag, st->kv_gate, first, SV_DAG_EDGE_DATA, NULL));
    if (wgate) {
        st->c2 = st->c1;
        st->c1 = *prev;
    }
}

/* ---- tier state -------------------------------------------------------------------------- */

static void npu_evicted(void *ctx, uint64_t hash, uint32_t chain_index)
{
    sv_msg *m = ctx;
    uint32_t n = m->cfg.tiers.chunk_tokens / sv_memtier_kv_manager_block_size(m->cfg.kv);
    /* Write-back: the block that ends a chunk carries the chunk's key (PLAN decision 5; the
     * chunk's earlier blocks may already be gone: an approximation, docs/memory-tiers.md). */
    if (n > 0 && (chain_index + 1) % n == 0)
        sv_memtier_hier_npu_evicted(m->cfg.tiers.hier, hash, m->cfg.first_device);
}

gboolean sv_msg__tiers_init(sv_msg *m, GError **error)
{
    const struct sv_msg_tier_cfg *t = &m->cfg.tiers;
    if (!sv_msg__tiers_on(m))
        return TRUE;
    uint32_t bs = sv_memtier_kv_manager_block_size(m->cfg.kv);
    if (t->hier && (t->chunk_tokens == 0 || t->chunk_tokens % bs != 0)) {
        g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                    "instance %d: prefix chunk of %u tokens is not a multiple of the KV block "
                    "size %u",
                    m->cfg.instance, t->chunk_tokens, bs);
        return FALSE;
    }
    struct msg_tiers *T = g_new0(struct msg_tiers, 1);
    m->tiers = T;
    T->loads = g_array_new(FALSE, FALSE, sizeof(msg_kv_load));
    if (m->cfg.lat) {
        const struct sv_compute_model_cfg *mc = sv_compute_latency_model(m->cfg.lat);
        T->n_layers = mc->num_layers;
        /* Whole-instance KV of one token: per layer at tp 1, times the layers. */
        T->token_bytes =
            sv_compute_model_kv_bytes_per_token_layer(mc, 1) * (uint64_t)mc->num_layers;
        T->layer_gate = g_new0(sv_dag_node *, (size_t)MAX(T->n_layers, 1));
    }
    if (t->hier)
        sv_memtier_kv_manager_set_evict_hook(m->cfg.kv, npu_evicted, m);
    return TRUE;
}

void sv_msg__tiers_free(sv_msg *m)
{
    struct msg_tiers *T = m->tiers;
    if (!T)
        return;
    if (m->cfg.tiers.hier)
        sv_memtier_kv_manager_set_evict_hook(m->cfg.kv, NULL, NULL);
    g_array_free(T->loads, TRUE);
    g_free(T->layer_gate);
    g_free(T);
    m->tiers = NULL;
}

/* ---- lower-tier prefix hits (PLAN use 4) ------------------------------------------------- */

int64_t sv_msg__hier_match(sv_msg *m, msg_req *r, int64_t npu_hit, struct sv_memtier_hit *out)
{
    memset(out, 0, sizeof *out);
    if (!m->tiers || !m->cfg.tiers.hier)
        return npu_hit;
    uint32_t n = 0;
    const uint64_t *fine = sv_memtier_kv_seq_hashes(r->seq, &n);
    if (!fine || n == 0)
        return npu_hit;
    uint64_t end = sv_memtier_hier_match(m->cfg.tiers.hier, fine, n, (uint64_t)npu_hit,
                                         (uint64_t)r->num_reached, out);
    return end > (uint64_t)npu_hit ? (int64_t)end : npu_hit;
}

static void queue_load(struct msg_tiers *T, const struct sv_memtier_route *route, uint64_t bytes)
{
    if (!route || bytes == 0)
        return;
    for (guint i = 0; i < T->loads->len; i++) {
        msg_kv_load *l = &g_array_index(T->loads, msg_kv_load, i);
        if (l->route == route) {
            l->bytes += bytes;
            return;
        }
    }
    msg_kv_load l = {route, bytes};
    g_array_append_val(T->loads, l);
}

void sv_msg__hier_admitted(sv_msg *m, msg_req *r, int64_t npu_hit, int64_t lower,
                           const struct sv_memtier_hit *hit)
{
    struct msg_tiers *T = m->tiers;
    if (!T)
        return;
    if (!r->admitted_once) {
        r->out.prefix_hit_tokens_npu = npu_hit;
        r->out.prefix_hit_tokens_cpu = (int64_t)hit->tokens[SV_MEMTIER_DRAM];
        r->out.prefix_hit_tokens_cxl = (int64_t)hit->tokens[SV_MEMTIER_CXL];
        r->out.prefix_hit_tokens_ssd = (int64_t)hit->tokens[SV_MEMTIER_SSD];
        r->out.prefix_hit_tokens_remote = (int64_t)hit->remote_tokens;
    }
    if (lower <= 0)
        return;
    uint64_t total = 0;
    for (int k = SV_MEMTIER_DRAM; k < SV_MEMTIER_KIND_COUNT; k++) {
        queue_load(T, hit->route[k], hit->tokens[k] * T->token_bytes);
        total += hit->tokens[k] * T->token_bytes;
    }
    queue_load(T, hit->route[SV_MEMTIER_KIND_COUNT], hit->remote_tokens * T->token_bytes);
    total += hit->remote_tokens * T->token_bytes;
    r->out.kv_load_bytes += total;
    /* The loaded chunks are in the pools already. */
    r->chunks_written = (uint32_t)((npu_hit + lower) / (int64_t)m->cfg.tiers.chunk_tokens);
}

void sv_msg__hier_computed(sv_msg *m, msg_req *r)
{
    if (!m->tiers || !m->cfg.tiers.hier)
        return;
    uint32_t n = 0;
    const uint64_t *fine = sv_memtier_kv_seq_hashes(r->seq, &n);
    uint32_t per = m->cfg.tiers.chunk_tokens / sv_memtier_kv_manager_block_size(m->cfg.kv);
    if (!fine || per == 0)
        return;
    /* Chunks full within the computed tokens and keyed (the chain covers full blocks only). */
    uint64_t full = (uint64_t)r->num_computed / m->cfg.tiers.chunk_tokens;
    if (full > n / per)
        full = n / per;
    for (uint64_t c = r->chunks_written; c < full; c++)
        sv_memtier_hier_chunk_done(m->cfg.tiers.hier, fine[(c + 1) * per - 1], m->cfg.first_device);
    if (full > r->chunks_written)
        r->chunks_written = (uint32_t)full;
}

sv_dag_node *sv_msg__join(sv_msg *m, int32_t dev, sv_dag_node *a, sv_dag_node *b)
{
    struct sv_dag_node_cfg nc = {
        .id = sv_dag_next_id(m->dag),
        .kind = SV_DAG_KIND_LOGICAL,
        .device = dev,
    };
    sv_dag_node *j = sv_dag_node_add(m->dag, &nc, NULL);
    SV_ASSERT(j != NULL);
    if (a)
        SV_ASSERT(sv_dag_edge_add(m->dag, a, j, SV_DAG_EDGE_DATA, NULL));
    if (b)
        SV_ASSERT(sv_dag_edge_add(m->dag, b, j, SV_DAG_EDGE_DATA, NULL));
    return j;
}

sv_dag_node *sv_msg__kv_loads(sv_msg *m)
{
    struct msg_tiers *T = m->tiers;
    if (!T || T->loads->len == 0)
        return NULL;
    int32_t dev = m->cfg.first_device;
    if (m->cfg.tiers.kv_load_per_layer && T->n_layers > 0) {
        /* L loads of bytes / L per tier (the remainder on the last), chained per tier; layer l
         * waits for its own (PLAN use 4, --kv-load-overlap layer). */
        for (guint i = 0; i < T->loads->len; i++) {
            const msg_kv_load *l = &g_array_index(T->loads, msg_kv_load, i);
            uint64_t per = l->bytes / (uint64_t)T->n_layers;
            sv_dag_node *prev = NULL;
            for (int64_t k = 0; k < T->n_layers; k++) {
                uint64_t b = k + 1 < T->n_layers ? per : l->bytes - per * (uint64_t)k;
                prev = sv_msg__mem_node(m, SV_DAG_KIND_MEM_LOAD, dev, l->route, b, prev);
                T->layer_gate[k] =
                    T->layer_gate[k] ? sv_msg__join(m, dev, T->layer_gate[k], prev) : prev;
            }
        }
        g_array_set_size(T->loads, 0);
        return NULL;
    }
    /* One load per tier before the first layer (LLMServingSim's kv_load row). */
    sv_dag_node *join = NULL;
    for (guint i = 0; i < T->loads->len; i++) {
        const msg_kv_load *l = &g_array_index(T->loads, msg_kv_load, i);
        sv_dag_node *ld = sv_msg__mem_node(m, SV_DAG_KIND_MEM_LOAD, dev, l->route, l->bytes, NULL);
        join = sv_msg__join(m, dev, join, ld);
    }
    g_array_set_size(T->loads, 0);
    return join;
}

gboolean sv_msg__kv_per_layer(const sv_msg *m)
{
    return m->tiers && m->tiers->layer_gate && m->tiers->n_layers > 0 &&
           m->tiers->layer_gate[0] != NULL;
}

void sv_msg__kv_loads_done(sv_msg *m)
{
    if (m->tiers && m->tiers->layer_gate)
        memset(m->tiers->layer_gate, 0, sizeof(sv_dag_node *) * (size_t)m->tiers->n_layers);
}
