/* Memory tiers in the serving group (issue 8; docs/memory-tiers.md): the MEM_LOAD / MEM_STORE
 * nodes of an iteration DAG move bytes over the tier fabric (memory-tier/fabric.c), and weight
 * parts placed off the device are streamed in each iteration (docs/memory-tiers.md use 1).
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
    return m->tiers && (m->tiers->weights_off || m->tiers->kv_off || m->tiers->expert_lru);
}

/* Whether any rank has a non-NULL entry in routes[rank][0..n). */
static gboolean any_route(const struct sv_memtier_route *const *const *routes, int32_t ranks,
                          int64_t n)
{
    if (!routes)
        return FALSE;
    for (int32_t r = 0; r < ranks; r++)
        for (int64_t p = 0; routes[r] && p < n; p++)
            if (routes[r][p])
                return TRUE;
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
    if (!r && n->duration_ns > 0) {
        sv_dag_exec_handler_replay(ex, n, NULL); /* a local weight load (msg/pim.c): timed */
        return;
    }
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

void sv_msg__expert_counts(sv_msg *m, const int64_t *counts)
{
    struct msg_tiers *T = m->tiers;
    if (!T || !T->expert_lru)
        return;
    memcpy(T->expert_counts, counts, sizeof(int64_t) * (size_t)T->n_experts);
}

/* The experts rank `rank` serves: with EP, those its EP rank owns; otherwise all (TP shards). */
static gboolean rank_serves(const sv_msg *m, int32_t rank, int64_t e)
{
    if (m->cfg.ep_size <= 1 || !m->par)
        return TRUE;
    int32_t tp = m->cfg.num_devices / MAX(m->cfg.pp_size, 1);
    int32_t members = m->cfg.dp ? sv_msg_dp_size(m->cfg.dp) : 1;
    int32_t epm = MAX(m->cfg.ep_size / members, 1);
    int32_t ep_k = MAX(tp / epm, 1);
    int32_t ep_rank = m->cfg.ep_rank_base + (rank % tp) / ep_k;
    return sv_msg_expert_owner((int32_t)e, m->cfg.ep_size, (int32_t)m->tiers->n_experts) == ep_rank;
}

/* Look up layer `layer`'s activated experts of rank `rank` in its cache (LRU, in expert order):
 * hits are touched, misses inserted (evicting the least recent). Returns the misses. */
static uint64_t expert_misses(sv_msg *m, int32_t rank, int64_t layer)
{
    struct msg_tiers *T = m->tiers;
    uint64_t miss = 0;
    for (int64_t e = 0; e < T->n_experts; e++) {
        if (T->expert_counts[e] <= 0 || !rank_serves(m, rank, e))
            continue;
        uint64_t key = (uint64_t)layer * (uint64_t)T->n_experts + (uint64_t)e;
        if (sv_memtier_lru_touch(T->expert_lru[rank], key)) {
            T->stats.expert_hits++;
        } else {
            uint64_t ev;
            sv_memtier_lru_insert(T->expert_lru[rank], key, &ev);
            T->stats.expert_misses++;
            miss++;
        }
    }
    return miss;
}

/* This launch's routing for the expert cache (once per step, reused by every layer, as the
 * parallel path routes). */
static void expert_route_step(sv_msg *m)
{
    struct msg_tiers *T = m->tiers;
    const struct sv_compute_model_cfg *mc = sv_compute_latency_model(m->cfg.lat);
    int64_t tokens = 0;
    for (guint i = 0; i < m->inflight->len; i++)
        tokens += g_array_index(m->inflight, msg_slot, i).num_new;
    struct sv_msg_expert_route_req rq = {
        .layer = 0,
        .tokens = tokens > 0 ? tokens : 1, /* a DP dummy step runs one token */
        .n_experts = (int32_t)mc->num_experts,
        .top_k = (int32_t)MIN(mc->experts_per_tok, mc->num_experts),
    };
    T->rt->route(T->rt_state, &rq, T->expert_counts);
}

void sv_msg__stream_begin(sv_msg *m, struct sv_msg__stream *st, int32_t rank)
{
    memset(st, 0, sizeof *st);
    st->rank = rank;
    const struct sv_msg_tier_cfg *t = &m->cfg.tiers;
    if (!m->tiers)
        return;
    st->routes = m->tiers->weights_off ? t->weight_route[rank] : NULL;
    if (m->tiers->kv_off) {
        st->kv_routes = t->kv_route[rank];
        st->kv_store_routes = t->kv_store_route ? t->kv_store_route[rank] : NULL;
    }
    st->serial = t->offload_serial;
}

sv_dag_node *sv_msg__stream_pre(sv_msg *m, struct sv_msg__stream *st, int64_t part, int32_t dev,
                                sv_dag_node **prev)
{
    const struct sv_memtier_route *route = st->routes ? st->routes[part] : NULL;
    struct msg_tiers *T = m->tiers;
    gboolean layer = T && part < T->n_layers;
    st->kv_gate = layer && T->layer_gate ? T->layer_gate[part] : NULL;
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
    /* Live KV off the device (docs/memory-tiers.md use 2): the layer reads the batch's history KV
     * from its tier while it computes (prefetch: layer = max(compute, read)) or before (serial: the
     * sum). */
    st->kv_read = NULL;
    const struct sv_memtier_route *kr = layer && st->kv_routes ? st->kv_routes[part] : NULL;
    if (kr && T->kv_read_bytes > 0) {
        st->kv_read = sv_msg__mem_node(m, SV_DAG_KIND_MEM_LOAD, dev, kr, T->kv_read_bytes, *prev);
        if (st->serial) {
            *prev = st->kv_read;
            st->kv_read = NULL;
        }
    }
    st->kv_store = layer && st->kv_store_routes ? st->kv_store_routes[part] : NULL;
    /* Expert cache: the layer's activated experts missing from this rank's cache are fetched
     * when the router has chosen them, before the layer's expert compute (on demand). */
    if (layer && T->expert_lru) {
        uint64_t miss = expert_misses(m, st->rank, part);
        if (miss > 0) {
            uint64_t bytes = miss * m->cfg.tiers.expert_bytes;
            T->stats.expert_fetch_bytes += bytes;
            *prev = sv_msg__mem_node(m, SV_DAG_KIND_MEM_LOAD, dev,
                                     m->cfg.tiers.expert_route[st->rank], bytes, *prev);
        }
    }
    st->first_id = sv_dag_next_id(m->dag);
    return load;
}

void sv_msg__stream_post(sv_msg *m, struct sv_msg__stream *st, sv_dag_node *load,
                         sv_dag_node **prev)
{
    sv_dag_node *wgate = load && !st->serial ? load : NULL;
    if (wgate || st->kv_gate) {
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
    }
    if (st->kv_read) /* the next layer waits for this layer's read and compute */
        *prev = sv_msg__join(m, st->kv_read->device, *prev, st->kv_read);
    if (st->kv_store && m->tiers->kv_new_bytes > 0 && *prev) {
        /* The new tokens' KV goes down after the layer, off the critical path (the iteration
         * still ends only when it has landed). */
        sv_msg__mem_node(m, SV_DAG_KIND_MEM_STORE, (*prev)->device, st->kv_store,
                         m->tiers->kv_new_bytes, *prev);
    }
    if (wgate) {
        st->c2 = st->c1;
        st->c1 = *prev;
    }
}

/* Live KV off the device: per-layer bytes of this launch's reads (history) and writes (new
 * tokens), one rank's share. */
void sv_msg__kv_live_bytes(sv_msg *m)
{
    struct msg_tiers *T = m->tiers;
    if (!T)
        return;
    /* Expert cache routing: the parallel path with EP hands its own (sv_msg__expert_counts). */
    if (T->expert_lru && !(m->par && m->cfg.ep_size > 1))
        expert_route_step(m);
    if (!T->kv_off)
        return;
    int64_t hist = 0, fresh = 0;
    for (guint i = 0; i < m->inflight->len; i++) {
        const msg_slot *s = &g_array_index(m->inflight, msg_slot, i);
        hist += s->computed_before;
        fresh += s->num_new;
    }
    T->kv_read_bytes = (uint64_t)hist * T->kv_token_layer_bytes;
    T->kv_new_bytes = (uint64_t)fresh * T->kv_token_layer_bytes;
}

/* ---- tier state -------------------------------------------------------------------------- */

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
    T->swaps = g_array_new(FALSE, FALSE, sizeof(msg_swap_xfer));
    g_queue_init(&T->swapped);
    if (m->cfg.lat) {
        const struct sv_compute_model_cfg *mc = sv_compute_latency_model(m->cfg.lat);
        T->n_layers = mc->num_layers;
        /* Whole-instance KV of one token: per layer at tp 1, times the layers. */
        T->token_bytes =
            sv_compute_model_kv_bytes_per_token_layer(mc, 1) * (uint64_t)mc->num_layers;
        T->layer_gate = g_new0(sv_dag_node *, (size_t)MAX(T->n_layers, 1));
        int32_t tp = m->cfg.num_devices / MAX(m->cfg.pp_size, 1);
        T->kv_token_layer_bytes = sv_compute_model_kv_bytes_per_token_layer(mc, MAX(tp, 1));
        T->weights_off = t->layer_weight_bytes &&
                         any_route(t->weight_route, m->cfg.num_devices, mc->num_layers + 2);
        T->kv_off = any_route(t->kv_route, m->cfg.num_devices, mc->num_layers);
    }
    /* Write-back: the block that ends a chunk carries the chunk's key (docs/memory-tiers.md
     * decision 5; the chunk's earlier blocks may already be gone: an approximation). */
    if (t->hier)
        sv_memtier_kv_manager_set_evict_hook(m->cfg.kv, sv_memtier_hier_on_kv_evict, t->hier);
    if (t->expert_cache_slots > 0 && m->cfg.lat &&
        sv_compute_model_is_moe(sv_compute_latency_model(m->cfg.lat))) {
        const struct sv_compute_model_cfg *mc = sv_compute_latency_model(m->cfg.lat);
        if (!t->expert_route) {
            g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                        "instance %d: expert cache without an expert route", m->cfg.instance);
            return FALSE;
        }
        T->n_experts = mc->num_experts;
        T->expert_counts = g_new0(int64_t, (size_t)mc->num_experts);
        T->expert_lru = g_new0(sv_memtier_lru *, (size_t)m->cfg.num_devices);
        for (int32_t r = 0; r < m->cfg.num_devices; r++)
            T->expert_lru[r] = sv_memtier_lru_new(
                (uint32_t)t->expert_cache_slots * (uint32_t)mc->num_layers, FALSE);
        /* Its own routing when the parallel path does not route (no EP): the group's policy,
         * on a stream of its own (the compute's routing, when any, is unaffected). */
        T->rt = m->cfg.expert_route ? m->cfg.expert_route : sv_msg_expert_route_balanced();
        if (T->rt->create) {
            g_autofree char *name = g_strdup_printf("msg/expert_cache/%d", m->cfg.instance);
            T->rt_state =
                T->rt->create(m->cfg.expert_route_param, sv_rng_stream(m->eng, name), error);
            if (!T->rt_state) {
                g_prefix_error(error, "instance %d: ", m->cfg.instance);
                return FALSE;
            }
        }
    }
    return TRUE;
}

void sv_msg__tiers_free(sv_msg *m)
{
    struct msg_tiers *T = m->tiers;
    if (!T)
        return;
    /* The evict hook stays on the KV manager (it can only be set while nothing is indexed):
     * the manager, borrowed, must not allocate once the msg is gone (it is only freed). */
    g_array_free(T->loads, TRUE);
    g_array_free(T->swaps, TRUE);
    msg_req *r;
    while ((r = g_queue_pop_head(&T->swapped)))
        sv_msg__req_free(r);
    g_free(T->layer_gate);
    if (T->expert_lru)
        for (int32_t k = 0; k < m->cfg.num_devices; k++)
            sv_memtier_lru_free(T->expert_lru[k]);
    g_free(T->expert_lru);
    g_free(T->expert_counts);
    if (T->rt && T->rt->destroy && T->rt_state)
        T->rt->destroy(T->rt_state);
    g_free(T);
    m->tiers = NULL;
}

/* ---- lower-tier prefix hits (docs/memory-tiers.md use 4)
 * ------------------------------------------------- */

int64_t sv_msg__hier_match(sv_msg *m, msg_req *r, int64_t npu_hit, gboolean commit,
                           struct sv_memtier_hit *out)
{
    memset(out, 0, sizeof *out);
    if (!m->tiers || !m->cfg.tiers.hier)
        return npu_hit;
    uint32_t n = 0;
    const uint64_t *fine = sv_memtier_kv_seq_hashes(r->seq, &n);
    if (!fine || n == 0)
        return npu_hit;
    /* A waiting head is looked at every step until it fits: only its admission touches the
     * pools' LRU order and counts as a lookup (sv_memtier_hier_peek vs _match). */
    uint64_t end = (commit ? sv_memtier_hier_match : sv_memtier_hier_peek)(
        m->cfg.tiers.hier, fine, n, (uint64_t)npu_hit, (uint64_t)r->num_reached, out);
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
    if (!T)
        return NULL;
    /* Swap-outs and swap-ins first, on each rank's own link (vLLM v0's cache engine runs
     * blocks_to_swap_out / _in before the forward of the step that decided them). */
    sv_dag_node *join = NULL;
    for (guint i = 0; i < T->swaps->len; i++) {
        const msg_swap_xfer *x = &g_array_index(T->swaps, msg_swap_xfer, i);
        sv_dag_node *n = sv_msg__mem_node(m, x->kind, x->dev, x->route, x->bytes, NULL);
        join = sv_msg__join(m, x->dev, join, n);
    }
    g_array_set_size(T->swaps, 0);
    if (T->loads->len == 0)
        return join;
    int32_t dev = m->cfg.first_device;
    if (m->cfg.tiers.kv_load_per_layer && T->n_layers > 0) {
        /* L loads of bytes / L per tier (the remainder on the last), chained per tier; layer l
         * waits for its own (docs/memory-tiers.md use 4, --kv-load-overlap layer). */
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
        return join;
    }
    /* One load per tier before the first layer (LLMServingSim's kv_load row). */
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

/* ---- swap preemption (vLLM v0; docs/memory-tiers.md use 3)
 * ------------------------------------------------ */

/* Queue one transfer per rank of `bytes` (whole instance) split evenly over the ranks. */
static void queue_swap(sv_msg *m, const struct sv_memtier_route *const *routes, uint64_t bytes,
                       sv_dag_kind kind)
{
    int32_t n = m->cfg.num_devices;
    for (int32_t r = 0; r < n; r++) {
        msg_swap_xfer x = {
            .route = routes ? routes[r] : NULL,
            .bytes = bytes / (uint64_t)n + (r == n - 1 ? bytes % (uint64_t)n : 0),
            .dev = m->cfg.first_device + r,
            .kind = kind,
        };
        g_array_append_val(m->tiers->swaps, x);
    }
}

static uint64_t block_bytes(const sv_msg *m)
{
    return (uint64_t)sv_memtier_kv_manager_block_size(m->cfg.kv) * m->tiers->token_bytes;
}

gboolean sv_msg__swap_out(sv_msg *m, msg_req *r)
{
    struct msg_tiers *T = m->tiers;
    const struct sv_msg_tier_cfg *t = &m->cfg.tiers;
    if (!T || !t->preemption_swap)
        return FALSE;
    /* Blocks held x block bytes (every rank's share) must fit the swap tier's free space. */
    uint64_t bytes = (uint64_t)sv_memtier_kv_seq_num_blocks(r->seq) * block_bytes(m);
    if (t->swap_tier) {
        uint64_t free_b = sv_memtier_tier_free_bytes(t->swap_tier);
        /* Prefix chunks on the swap tier give way first (docs/memory-tiers.md use 3). */
        if (free_b < bytes && t->swap_pool)
            sv_memtier_prefix_pool_shrink(t->swap_pool, bytes - free_b);
        if (!sv_memtier_tier_charge(t->swap_tier, SV_MEMTIER_OWNER_EVICTED_KV, (int64_t)bytes,
                                    NULL)) {
            T->stats.swap_fallbacks++; /* vLLM v0 aborts here; servesim recomputes */
            return FALSE;
        }
    }
    /* The blocks go back to the pool as a preemption's do (full blocks keep their prefix
     * entries, which only matter to other requests), counted as a swap; the computed count is
     * kept. */
    sv_memtier_kv_manager_swap_out_seq(m->cfg.kv, r->seq);
    queue_swap(m, t->swap_route, bytes, SV_DAG_KIND_MEM_STORE);
    r->swap_bytes = bytes;
    r->out.swap_out_bytes += bytes;
    T->stats.swap_outs++;
    T->stats.swap_out_bytes += bytes;
    g_queue_push_tail(&T->swapped, r);
    return TRUE;
}

gboolean sv_msg__swap_in_head(sv_msg *m, int64_t num_new)
{
    struct msg_tiers *T = m->tiers;
    const struct sv_msg_tier_cfg *t = &m->cfg.tiers;
    msg_req *r = g_queue_peek_head(&T->swapped);
    SV_ASSERT(r && num_new >= 1 && num_new <= r->num_reached - r->num_computed);
    /* Fresh blocks for the swapped tokens and the new ones in one all-or-nothing allocation
     * (the sequence holds none while swapped out). */
    if (!sv_memtier_kv_manager_allocate_slots(m->cfg.kv, r->seq, 0,
                                              (uint64_t)(r->num_computed + num_new), 0,
                                              (uint64_t)r->num_reached))
        return FALSE;
    g_queue_pop_head(&T->swapped);
    uint64_t bytes = r->swap_bytes;
    if (t->swap_tier)
        SV_ASSERT(sv_memtier_tier_charge(t->swap_tier, SV_MEMTIER_OWNER_EVICTED_KV, -(int64_t)bytes,
                                         NULL));
    queue_swap(m, t->swap_in_route, bytes, SV_DAG_KIND_MEM_LOAD);
    r->swap_bytes = 0;
    r->out.swap_in_bytes += bytes;
    T->stats.swap_ins++;
    T->stats.swap_in_bytes += bytes;
    return TRUE;
}

uint32_t sv_msg_num_swapped(const sv_msg *m)
{
    return m->tiers ? m->tiers->swapped.length : 0;
}

void sv_msg_get_tier_stats(const sv_msg *m, struct sv_msg_tier_stats *out)
{
    memset(out, 0, sizeof *out);
    if (m->tiers)
        *out = m->tiers->stats;
    out->tier_bytes = m->tier_bytes;
}
