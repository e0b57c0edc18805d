/* Memory tiers, the planner's side (docs/memory-tiers.md): weight
 * placement resolved against the model (which bytes stay in HBM, which live on a host / CXL / SSD
 * tier) and the KV pool that HBM then holds. */
#include "planner/planner_internal.h"

#include <math.h>
#include <string.h>

/* A decoder block's pipeline stage: layers split evenly over pp stages, the remainder to the
 * earlier stages (vLLM's get_pp_indices, as planner/pd.c). */
static int32_t stage_of(int32_t layer, int32_t num_layers, int32_t pp)
{
    int32_t base = num_layers / pp, rem = num_layers % pp, first = 0;
    for (int32_t s = 0; s < pp; s++) {
        int32_t n = base + (s < rem ? 1 : 0);
        if (layer < first + n)
            return s;
        first += n;
    }
    return pp - 1;
}

/* One expert's weights on one rank: gate_proj, up_proj and down_proj, each hidden x
 * moe_intermediate, split by tp (the expert part of compute/model.c's layer_params). */
static uint64_t expert_bytes(const struct sv_compute_model_cfg *m, int32_t tp)
{
    return (uint64_t)llround(3.0 * (double)m->hidden_size * (double)m->moe_intermediate_size /
                             MAX(tp, 1) * sv_compute_model_weight_param_bytes(m));
}

/* Experts cached per MoE layer per rank when expert_offload applies, else -1 (every expert in
 * HBM: a dense model, or cache_experts absent / -1 / >= num_experts). */
static int64_t expert_slots(const struct sv_planner_instance_cfg *ic,
                            const struct sv_compute_model_cfg *m)
{
    if (!ic->expert_offload || !sv_compute_model_is_moe(m) || ic->cache_experts < 0 ||
        ic->cache_experts >= m->num_experts)
        return -1;
    return ic->cache_experts;
}

static void add_off(struct sv_planner_weight_split *w, const struct sv_planner_loc *loc,
                    uint64_t bytes)
{
    switch (loc->kind) {
    case SV_PLANNER_LOC_NPU:
        break;
    case SV_PLANNER_LOC_CPU:
        w->cpu_bytes += bytes;
        break;
    case SV_PLANNER_LOC_SSD:
        w->ssd_bytes += bytes;
        break;
    case SV_PLANNER_LOC_CXL:
        if (loc->device >= 0 && loc->device < SV_PLANNER_MAX_CXL)
            w->cxl_bytes[loc->device] += bytes;
        break;
    default:
        break;
    }
}

void sv_planner_weight_split(const struct sv_compute_model_cfg *m, int32_t tp, int32_t pp,
                             const struct sv_planner_placement_map *map,
                             struct sv_planner_weight_split *out)
{
    memset(out, 0, sizeof *out);
    tp = MAX(tp, 1);
    pp = MAX(pp, 1);
    uint64_t layer = sv_compute_model_layer_weight_bytes(m, tp);
    uint64_t emb = sv_compute_model_embedding_bytes(m, tp);
    uint64_t head = sv_compute_model_head_bytes(m, tp);
    uint64_t norm = sv_compute_model_final_norm_bytes(m);
    int32_t L = (int32_t)m->num_layers;
    uint64_t stage_npu[64] = {0}; /* pp <= 64 in practice; larger pp folds into the last slot */
    int32_t ns = MIN(pp, 64);
    /* Every rank of a stage holds the same share; a tier holds the shares of all tp ranks. */
    for (int32_t l = 0; l < L; l++) {
        const struct sv_planner_loc *loc = &map->layer_weights[l];
        if (loc->kind == SV_PLANNER_LOC_NPU)
            stage_npu[MIN(stage_of(l, L, pp), ns - 1)] += layer;
        else
            add_off(out, loc, layer * (uint64_t)tp);
    }
    const struct {
        const struct sv_planner_loc *loc;
        uint64_t bytes;
        int32_t stage;
    } parts[] = {
        {&map->embedding, emb, 0},
        {&map->final_norm, norm, ns - 1},
        {&map->lm_head, head, ns - 1},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(parts); i++) {
        if (parts[i].loc->kind == SV_PLANNER_LOC_NPU)
            stage_npu[parts[i].stage] += parts[i].bytes;
        else
            add_off(out, parts[i].loc, parts[i].bytes * (uint64_t)tp);
    }
    for (int32_t s = 0; s < ns; s++)
        out->npu_bytes = MAX(out->npu_bytes, stage_npu[s]);
    out->off_bytes = out->cpu_bytes + out->ssd_bytes;
    for (int32_t d = 0; d < SV_PLANNER_MAX_CXL; d++)
        out->off_bytes += out->cxl_bytes[d];
}

gboolean sv_planner_instance_kv_blocks(const struct sv_planner_instance_cfg *ic,
                                       const struct sv_compute_model_cfg *m,
                                       const struct sv_planner_placement_map *map,
                                       uint32_t block_size, uint64_t *blocks, GError **error)
{
    uint64_t mem_bytes = (uint64_t)(ic->npu_mem_gib * 1073741824.0);
    uint64_t weights;
    if (map && map->any_offload) {
        struct sv_planner_weight_split w;
        sv_planner_weight_split(m, ic->tp_size, ic->pp_size, map, &w);
        weights = w.npu_bytes; /* only what stays in HBM (the fullest stage) */
    } else {
        /* Unchanged without placement: one rank's weights / pp (LLMServingSim
         * memory_model.py). */
        weights = sv_compute_model_weight_bytes(m, ic->tp_size) / (uint64_t)ic->pp_size;
    }
    int64_t slots = expert_slots(ic, m);
    if (slots >= 0) {
        /* Expert offloading: HBM keeps `slots` experts per MoE layer of the stage, not all. */
        uint64_t stage_layers = (uint64_t)((m->num_layers + ic->pp_size - 1) / ic->pp_size);
        uint64_t gone =
            (uint64_t)(m->num_experts - slots) * stage_layers * expert_bytes(m, ic->tp_size);
        weights = weights > gone ? weights - gone : 0;
    }
    uint64_t kv_layers = (uint64_t)((m->num_layers + ic->pp_size - 1) / ic->pp_size);
    if (map && map->any_offload) {
        /* Live KV off the device (kv_loc): HBM holds the KV of the fullest stage's layers whose
         * KV stays there; the tiers cap the pool in sv_planner_tiers_instance. */
        int32_t L = (int32_t)m->num_layers, pp = MAX(ic->pp_size, 1);
        uint64_t per_stage[64] = {0};
        for (int32_t l = 0; l < L; l++)
            if (map->layer_kv[l].kind == SV_PLANNER_LOC_NPU)
                per_stage[MIN(stage_of(l, L, pp), 63)]++;
        kv_layers = 0;
        for (int32_t st = 0; st < MIN(pp, 64); st++)
            kv_layers = MAX(kv_layers, per_stage[st]);
        if (kv_layers == 0) {
            /* No KV in HBM: only the tiers limit the pool (the weights must still fit). */
            kv_layers = 1;
            uint64_t one = 0;
            if (!sv_memtier_kv_capacity_blocks(mem_bytes, ic->mem_util, weights, 1, 1, &one, error))
                return FALSE;
            *blocks = UINT32_MAX;
            return TRUE;
        }
    }
    uint64_t kv_tok = sv_compute_model_kv_bytes_per_token_layer(m, ic->tp_size) * kv_layers;
    return sv_memtier_kv_capacity_blocks(mem_bytes, ic->mem_util, weights, kv_tok, block_size,
                                         blocks, error);
}

/* ---- run flags of the memory tiers ---------------------------------------------------------- */

/* Default chunk of the lower-tier prefix pools: LMCache's chunk_size 256 (LLMServingSim
 * docs/simulator/scheduling/prefix-caching.md). */
#define DEFAULT_PREFIX_CHUNK_TOKENS 256

static const struct {
    const char *key;
    const char *const values[5];
} flag_values[] = {
    {"preemption_mode", {"recompute", "swap", NULL}},
    {"prefix_pool", {"instance", "node", "cluster", NULL}},
    {"prefix_write", {"through", "back", NULL}},
    {"prefix_evict", {"lru", "fifo", NULL}},
    {"offload_overlap", {"prefetch", "serial", NULL}},
    {"kv_load_overlap", {"none", "layer", NULL}},
    {"memory_model", {"finite", "ideal", NULL}},
};

void sv_planner_tier_flags_init(struct sv_planner_tier_flags *f)
{
    memset(f, 0, sizeof *f);
    f->enable_prefix_sharing = -1;
    f->prefix_chunk_tokens = -1;
}

/* "cpu,cxl,ssd" -> kinds in lookup order; "none" -> 0. */
static gboolean parse_storage_list(const char *value, const char *where, sv_planner_loc_kind *kinds,
                                   int32_t *n, GError **error)
{
    *n = 0;
    if (g_ascii_strcasecmp(value, "none") == 0)
        return TRUE;
    g_auto(GStrv) parts = g_strsplit(value, ",", -1);
    for (char **p = parts; *p; p++) {
        g_strstrip(*p);
        sv_planner_loc_kind k;
        if (g_ascii_strcasecmp(*p, "cpu") == 0)
            k = SV_PLANNER_LOC_CPU;
        else if (g_ascii_strcasecmp(*p, "cxl") == 0)
            k = SV_PLANNER_LOC_CXL;
        else if (g_ascii_strcasecmp(*p, "ssd") == 0)
            k = SV_PLANNER_LOC_SSD;
        else
            return sv_planner__path_error(
                error, where,
                "\"%s\": must be none, cpu, cxl, ssd or a comma list of them "
                "(cpu,cxl,ssd)",
                value);
        for (int32_t i = 0; i < *n; i++)
            if (kinds[i] == k)
                return sv_planner__path_error(error, where, "\"%s\": %s named twice", value, *p);
        kinds[(*n)++] = k;
    }
    return TRUE;
}

gboolean sv_planner_tier_flag_check(const char *key, const char *value, const char *where,
                                    GError **error)
{
    if (strcmp(key, "prefix_storage") == 0) {
        sv_planner_loc_kind k[3];
        int32_t n;
        return parse_storage_list(value, where, k, &n, error);
    }
    for (size_t i = 0; i < G_N_ELEMENTS(flag_values); i++) {
        if (strcmp(flag_values[i].key, key) != 0)
            continue;
        GString *known = g_string_new(NULL);
        for (int j = 0; flag_values[i].values[j]; j++) {
            if (g_ascii_strcasecmp(value, flag_values[i].values[j]) == 0) {
                g_string_free(known, TRUE);
                return TRUE;
            }
            g_string_append_printf(known, "%s%s", j ? " or " : "", flag_values[i].values[j]);
        }
        sv_planner__path_error(error, where, "\"%s\": must be %s", value, known->str);
        g_string_free(known, TRUE);
        return FALSE;
    }
    return sv_planner__path_error(error, where, "unknown memory-tier flag %s", key);
}

static const char *pick_flag(const char *run, const char *cluster, const char *dflt)
{
    if (run && run[0])
        return run;
    return cluster[0] ? cluster : dflt;
}

gboolean sv_planner_tier_flags_resolve(const struct sv_planner_tier_flags *run,
                                       const struct sv_planner_tier_flags *cl,
                                       struct sv_planner_tier_run *out, GError **error)
{
    struct sv_planner_tier_flags none;
    sv_planner_tier_flags_init(&none);
    if (!run)
        run = &none;
    memset(out, 0, sizeof *out);
#define PICK(f, d) pick_flag(run->f, cl->f, d)
    out->preempt_swap = g_ascii_strcasecmp(PICK(preemption_mode, "recompute"), "swap") == 0;
    if (!parse_storage_list(PICK(prefix_storage, "none"),
                            run->prefix_storage[0] ? "--prefix-storage" : "prefix_storage",
                            out->prefix_storage, &out->n_prefix_storage, error))
        return FALSE;
    int sharing =
        run->enable_prefix_sharing >= 0 ? run->enable_prefix_sharing : cl->enable_prefix_sharing;
    const char *pool = PICK(prefix_pool, NULL);
    if (!pool)
        out->prefix_pool = sharing == 1 ? SV_PLANNER_POOL_NODE : SV_PLANNER_POOL_INSTANCE;
    else if (g_ascii_strcasecmp(pool, "instance") == 0)
        out->prefix_pool = SV_PLANNER_POOL_INSTANCE;
    else if (g_ascii_strcasecmp(pool, "node") == 0)
        out->prefix_pool = SV_PLANNER_POOL_NODE;
    else
        out->prefix_pool = SV_PLANNER_POOL_CLUSTER;
    if (sharing == 1 && out->prefix_pool == SV_PLANNER_POOL_INSTANCE) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                    "enable_prefix_sharing (--enable-prefix-sharing) with prefix_pool instance "
                    "(--prefix-pool): a shared pool is node or cluster");
        return FALSE;
    }
    out->prefix_write_back = g_ascii_strcasecmp(PICK(prefix_write, "through"), "back") == 0;
    out->prefix_evict_fifo = g_ascii_strcasecmp(PICK(prefix_evict, "lru"), "fifo") == 0;
    out->offload_serial = g_ascii_strcasecmp(PICK(offload_overlap, "prefetch"), "serial") == 0;
    out->kv_load_per_layer = g_ascii_strcasecmp(PICK(kv_load_overlap, "none"), "layer") == 0;
    out->memory_ideal = g_ascii_strcasecmp(PICK(memory_model, "finite"), "ideal") == 0;
#undef PICK
    int64_t chunk = run->prefix_chunk_tokens > 0  ? run->prefix_chunk_tokens
                    : cl->prefix_chunk_tokens > 0 ? cl->prefix_chunk_tokens
                                                  : DEFAULT_PREFIX_CHUNK_TOKENS;
    if (chunk > UINT32_MAX / 2) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                    "prefix_chunk_tokens: %" G_GINT64_FORMAT " is too large", chunk);
        return FALSE;
    }
    out->prefix_chunk_tokens = (uint32_t)chunk;
    return TRUE;
}

/* ---- the memory tiers of a run (docs/memory-tiers.md) ---------------------
 *
 * Tiers: one HBM tier per instance (all its ranks; a ledger of weights and KV, no link), host
 * DRAM per node, CXL devices per node (scope node) or for the cluster (scope cluster, reached
 * through a port per node), SSD devices per node. The fabric books its transfers on the cluster
 * network's solver when the network model is flow, else on a standalone solver. Prefix pools per
 * instance, node or cluster; a hierarchy per instance when prefix_storage names lower tiers. */

struct tiers_inst {
    gboolean set;
    int32_t node, first_device, ranks;
    sv_memtier_tier *hbm;
    sv_memtier_kv_manager *kv;
    uint64_t block_bytes;                   /* one block, all ranks */
    const sv_memtier_route ***weight_route; /* [rank][part] */
    uint64_t *part_bytes;                   /* [part], one rank */
    const sv_memtier_route **swap_route, **swap_in_route;
    const sv_memtier_route ***kv_route, ***kv_store_route; /* [rank][layer], live KV off HBM */
    const sv_memtier_route **expert_route;                 /* [rank], expert offloading */
    sv_memtier_hier *hier;
    sv_memtier_prefix_pool *pools[SV_PLANNER_LOC_COUNT]; /* instance scope: owned */
};

struct sv_planner_tiers {
    sv_engine *eng;
    const struct sv_planner_cluster_cfg *c;
    struct sv_planner_tier_run run;
    sv_memtier_fabric *fabric;
    GPtrArray *all; /* every tier (owned), creation order */
    int32_t n_nodes;
    sv_memtier_tier **dram;        /* [node], NULL when cpu_mem has no size */
    sv_memtier_tier ***cxl;        /* [node][device] (scope node) */
    sv_memtier_tier **cxl_cluster; /* [device] (scope cluster) */
    int32_t *n_cxl;                /* per node */
    int32_t n_cxl_cluster;
    sv_memtier_tier **ssd;                /* [node] (device 0; more devices unused) */
    sv_memtier_prefix_pool ***node_pools; /* [node][loc kind] (scope node / cluster) */
    int32_t n_inst;
    struct tiers_inst *inst;
};

static gboolean ideal_all(const sv_planner_tiers *t)
{
    return t->run.memory_ideal;
}

static sv_memtier_tier *add_tier(sv_planner_tiers *t, sv_memtier_kind kind, const char *name,
                                 double gib, double rd, double wr, double lat, int32_t qd,
                                 gboolean ideal)
{
    struct sv_memtier_tier_cfg tc = {
        .kind = kind,
        .capacity_bytes = (uint64_t)(gib * 1073741824.0),
        .read_gbps = ideal ? 0 : rd,
        .write_gbps = ideal ? 0 : wr,
        .latency_ns = lat,
        .queue_depth = qd,
        .ideal = ideal,
    };
    g_strlcpy(tc.name, name, sizeof tc.name);
    sv_memtier_tier *tier = sv_memtier_tier_new(t->eng, &tc);
    g_ptr_array_add(t->all, tier);
    return tier;
}

gboolean sv_planner_tiers_wanted(const struct sv_planner_cluster_cfg *c,
                                 const struct sv_planner_tier_run *run)
{
    if (run->n_prefix_storage > 0 || run->preempt_swap)
        return TRUE;
    for (int32_t i = 0; i < c->n_instances; i++) {
        const struct sv_planner_instance_cfg *ic = &c->instances[i];
        if (ic->expert_offload)
            return TRUE;
        for (int32_t k = 0; k < ic->placement.n_rules; k++) {
            const struct sv_planner_place_rule *r = &ic->placement.rules[k];
            if ((r->has_weights && r->weights.kind != SV_PLANNER_LOC_NPU) ||
                (r->has_kv && r->kv.kind != SV_PLANNER_LOC_NPU))
                return TRUE;
        }
    }
    return FALSE;
}

sv_planner_tiers *sv_planner_tiers_new(sv_engine *eng, sv_net *net_or_null,
                                       const struct sv_planner_cluster_cfg *c,
                                       const struct sv_planner_tier_run *run, GError **error)
{
    sv_planner_tiers *t = g_new0(sv_planner_tiers, 1);
    t->eng = eng;
    t->c = c;
    t->run = *run;
    t->all = g_ptr_array_new_with_free_func((GDestroyNotify)sv_memtier_tier_free);
    t->n_nodes = c->n_nodes;
    t->n_inst = c->n_instances;
    t->inst = g_new0(struct tiers_inst, (size_t)MAX(t->n_inst, 1));
    t->dram = g_new0(sv_memtier_tier *, (size_t)MAX(t->n_nodes, 1));
    t->cxl = g_new0(sv_memtier_tier **, (size_t)MAX(t->n_nodes, 1));
    t->n_cxl = g_new0(int32_t, (size_t)MAX(t->n_nodes, 1));
    t->ssd = g_new0(sv_memtier_tier *, (size_t)MAX(t->n_nodes, 1));
    t->node_pools = g_new0(sv_memtier_prefix_pool **, (size_t)MAX(t->n_nodes, 1));
    t->fabric = sv_memtier_fabric_new(eng, net_or_null, error);
    if (!t->fabric) {
        sv_planner_tiers_free(t);
        return NULL;
    }
    gboolean ideal = ideal_all(t);
    char name[48];
    if (c->cxl_scope == SV_PLANNER_CXL_CLUSTER && c->cxl.set) {
        t->n_cxl_cluster = MAX(c->cxl.num_devices, 1);
        t->cxl_cluster = g_new0(sv_memtier_tier *, (size_t)t->n_cxl_cluster);
        for (int32_t d = 0; d < t->n_cxl_cluster; d++) {
            g_snprintf(name, sizeof name, "cluster/cxl:%d", d);
            t->cxl_cluster[d] = add_tier(t, SV_MEMTIER_CXL, name, c->cxl.size_gib, c->cxl.bw_gbps,
                                         0, c->cxl.latency_ns, 0, ideal || c->cxl.ideal);
            struct sv_memtier_loc loc = {SV_MEMTIER_CXL, -1, d};
            sv_memtier_fabric_add_tier(t->fabric, &loc, t->cxl_cluster[d]);
        }
    }
    for (int32_t n = 0; n < t->n_nodes; n++) {
        const struct sv_planner_node_cfg *nc = &c->nodes[n];
        if (nc->cpu_mem_gib > 0) {
            g_snprintf(name, sizeof name, "node%d/cpu", n);
            gboolean id = ideal || nc->cpu_mem_ideal;
            if (!id && !(nc->cpu_mem_bw_gbps > 0)) {
                g_autofree char *p = g_strdup_printf("%s: nodes[%d].cpu_mem.mem_bw", c->where, n);
                sv_planner__path_error(
                    error, p,
                    "host memory is a tier of this run and needs a positive bandwidth in "
                    "GB/s (or cpu_mem.ideal: true), got %g",
                    nc->cpu_mem_bw_gbps);
                sv_planner_tiers_free(t);
                return NULL;
            }
            t->dram[n] = add_tier(t, SV_MEMTIER_DRAM, name, nc->cpu_mem_gib, nc->cpu_mem_bw_gbps, 0,
                                  nc->cpu_mem_latency_ns, 0, id);
            struct sv_memtier_loc loc = {SV_MEMTIER_DRAM, n, 0};
            sv_memtier_fabric_add_tier(t->fabric, &loc, t->dram[n]);
        }
        const struct sv_planner_tier_cfg *cx = sv_planner_cluster_cxl(c, n);
        if (cx && cx->set && t->cxl_cluster) {
            /* Scope cluster: this node's port to the CXL switch at the device bandwidth. */
            sv_memtier_fabric_add_cxl_port(t->fabric, n, cx->bw_gbps, 0, ideal || cx->ideal);
        } else if (cx && cx->set) {
            t->n_cxl[n] = MAX(cx->num_devices, 1);
            t->cxl[n] = g_new0(sv_memtier_tier *, (size_t)t->n_cxl[n]);
            for (int32_t d = 0; d < t->n_cxl[n]; d++) {
                g_snprintf(name, sizeof name, "node%d/cxl:%d", n, d);
                t->cxl[n][d] = add_tier(t, SV_MEMTIER_CXL, name, cx->size_gib, cx->bw_gbps, 0,
                                        cx->latency_ns, 0, ideal || cx->ideal);
                struct sv_memtier_loc loc = {SV_MEMTIER_CXL, n, d};
                sv_memtier_fabric_add_tier(t->fabric, &loc, t->cxl[n][d]);
            }
        }
        const struct sv_planner_tier_cfg *st = &nc->storage;
        g_snprintf(name, sizeof name, "node%d/ssd", n);
        t->ssd[n] = add_tier(t, SV_MEMTIER_SSD, name, st->size_gib, st->bw_gbps, st->write_gbps,
                             st->latency_ns, st->queue_depth, ideal || st->ideal);
        struct sv_memtier_loc loc = {SV_MEMTIER_SSD, n, 0};
        sv_memtier_fabric_add_tier(t->fabric, &loc, t->ssd[n]);
        t->node_pools[n] = g_new0(sv_memtier_prefix_pool *, SV_PLANNER_LOC_COUNT);
    }
    return t;
}

/* The tier and fabric location of a placement location on node `node`. */
static sv_memtier_tier *tier_at(const sv_planner_tiers *t, int32_t node,
                                const struct sv_planner_loc *l, struct sv_memtier_loc *loc)
{
    switch (l->kind) {
    case SV_PLANNER_LOC_CPU:
        *loc = (struct sv_memtier_loc){SV_MEMTIER_DRAM, node, 0};
        return t->dram[node];
    case SV_PLANNER_LOC_CXL:
        if (t->cxl_cluster) {
            *loc = (struct sv_memtier_loc){SV_MEMTIER_CXL, -1, l->device};
            return l->device < t->n_cxl_cluster ? t->cxl_cluster[l->device] : NULL;
        }
        *loc = (struct sv_memtier_loc){SV_MEMTIER_CXL, node, l->device};
        return l->device < t->n_cxl[node] ? t->cxl[node][l->device] : NULL;
    case SV_PLANNER_LOC_SSD:
        *loc = (struct sv_memtier_loc){SV_MEMTIER_SSD, node, 0};
        return t->ssd[node];
    default:
        return NULL;
    }
}

/* The last placement rule that put weights (or, with `kv`, live KV) at `l`: the config path
 * errors about that placement name. */
static const char *rule_path(const struct sv_planner_instance_cfg *ic,
                             const struct sv_planner_loc *l, gboolean kv)
{
    for (int32_t k = ic->placement.n_rules - 1; k >= 0; k--) {
        const struct sv_planner_place_rule *r = &ic->placement.rules[k];
        const struct sv_planner_loc *at = kv ? &r->kv : &r->weights;
        if ((kv ? r->has_kv : r->has_weights) && at->kind == l->kind && at->device == l->device)
            return r->path;
    }
    return "placement";
}

static gboolean charge_weights(sv_planner_tiers *t, const struct sv_planner_instance_cfg *ic,
                               const struct sv_planner_loc *l, uint64_t bytes, GError **error)
{
    if (bytes == 0)
        return TRUE;
    struct sv_memtier_loc loc;
    sv_memtier_tier *tier = tier_at(t, ic->node, l, &loc);
    char b[16];
    if (!tier)
        return sv_planner__path_error(error, rule_path(ic, l, FALSE),
                                      "weights on %s: no such memory on node %d",
                                      sv_planner_loc_name(l, b, sizeof b), ic->node);
    GError *e = NULL;
    if (!sv_memtier_tier_charge(tier, SV_MEMTIER_OWNER_WEIGHTS, (int64_t)bytes, &e)) {
        sv_planner__path_error(error, rule_path(ic, l, FALSE), "weights: %s", e->message);
        g_error_free(e);
        return FALSE;
    }
    return TRUE;
}

/* Prefix pool of kind `k` for instance `i` (created on first use for node/cluster scope). */
static sv_memtier_prefix_pool *pool_for(sv_planner_tiers *t, int32_t i, int32_t node,
                                        sv_planner_loc_kind k, uint32_t block_size,
                                        uint64_t chunk_bytes, GError **error)
{
    gboolean shared = t->run.prefix_pool != SV_PLANNER_POOL_INSTANCE;
    sv_memtier_prefix_pool **slot = shared ? &t->node_pools[node][k] : &t->inst[i].pools[k];
    if (*slot) {
        if (sv_memtier_prefix_pool_chunk_bytes(*slot) != chunk_bytes) {
            g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                        "instance %d: a shared prefix pool (--enable-prefix-sharing / "
                        "--prefix-pool) needs the same KV bytes per chunk on every instance of "
                        "node %d (%" G_GUINT64_FORMAT " vs %" G_GUINT64_FORMAT ")",
                        i, node, chunk_bytes, sv_memtier_prefix_pool_chunk_bytes(*slot));
            return NULL;
        }
        return *slot;
    }
    struct sv_planner_loc l = {k, 0};
    struct sv_memtier_loc loc;
    sv_memtier_tier *tier = tier_at(t, node, &l, &loc);
    char b[16];
    if (!tier) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                    "prefix_storage (--prefix-storage) %s: node %d has no %s memory configured "
                    "(nodes[%d].%s)",
                    sv_planner_loc_name(&l, b, sizeof b), node, b, node,
                    k == SV_PLANNER_LOC_CPU ? "cpu_mem.mem_size" : "cxl_mem");
        return NULL;
    }
    struct sv_memtier_prefix_pool_cfg pc = {
        .tier = tier,
        .chunk_tokens = t->run.prefix_chunk_tokens,
        .fine_tokens = block_size,
        .chunk_bytes = chunk_bytes,
        .evict = t->run.prefix_evict_fifo ? "fifo" : "lru",
    };
    *slot = sv_memtier_prefix_pool_new(&pc, error);
    if (!*slot)
        g_prefix_error(error, "prefix_storage (--prefix-storage): ");
    return *slot;
}

static gboolean build_hier(sv_planner_tiers *t, int32_t i, const struct sv_compute_model_cfg *m,
                           uint32_t block_size, GError **error)
{
    struct tiers_inst *ti = &t->inst[i];
    if (t->run.n_prefix_storage == 0)
        return TRUE;
    /* A chunk holds the KV of every layer and every rank (msg loads the whole instance's KV). */
    uint64_t chunk_bytes = (uint64_t)t->run.prefix_chunk_tokens *
                           sv_compute_model_kv_bytes_per_token_layer(m, 1) *
                           (uint64_t)m->num_layers;
    struct sv_memtier_hier_cfg hc = {
        .fabric = t->fabric,
        .npu = {SV_MEMTIER_HBM, ti->node, ti->first_device},
        .chunk_tokens = t->run.prefix_chunk_tokens,
        .write_back = t->run.prefix_write_back,
    };
    ti->hier = sv_memtier_hier_new(&hc, error);
    if (!ti->hier) {
        g_prefix_error(error, "prefix_storage (--prefix-storage): ");
        return FALSE;
    }
    if (t->run.prefix_pool == SV_PLANNER_POOL_CLUSTER) {
        /* Mooncake store: chunks sharded over every node's host DRAM (docs/memory-tiers.md decision
         * 11). */
        g_autofree sv_memtier_prefix_pool **pools =
            g_new0(sv_memtier_prefix_pool *, (size_t)t->n_nodes);
        g_autofree struct sv_memtier_loc *locs = g_new0(struct sv_memtier_loc, (size_t)t->n_nodes);
        for (int32_t n = 0; n < t->n_nodes; n++) {
            pools[n] = pool_for(t, i, n, SV_PLANNER_LOC_CPU, block_size, chunk_bytes, error);
            if (!pools[n])
                return FALSE;
            locs[n] = (struct sv_memtier_loc){SV_MEMTIER_DRAM, n, 0};
        }
        return sv_memtier_hier_add_cluster_pool(ti->hier, pools, locs, t->n_nodes, error);
    }
    for (int32_t k = 0; k < t->run.n_prefix_storage; k++) {
        sv_planner_loc_kind kind = t->run.prefix_storage[k];
        sv_memtier_prefix_pool *p = pool_for(t, i, ti->node, kind, block_size, chunk_bytes, error);
        if (!p)
            return FALSE;
        struct sv_planner_loc l = {kind, 0};
        struct sv_memtier_loc loc;
        tier_at(t, ti->node, &l, &loc);
        if (!sv_memtier_hier_add_pool(ti->hier, p, &loc, error))
            return FALSE;
    }
    return TRUE;
}

gboolean sv_planner_tiers_npus(sv_planner_tiers *t, int32_t i, int32_t first_device, GError **error)
{
    const struct sv_planner_instance_cfg *ic = &t->c->instances[i];
    struct tiers_inst *ti = &t->inst[i];
    SV_ASSERT(!ti->set);
    ti->set = TRUE;
    ti->node = ic->node;
    ti->first_device = first_device;
    ti->ranks = ic->tp_size * ic->pp_size;
    /* HBM: one ledger for all the instance's ranks. */
    char name[48];
    g_snprintf(name, sizeof name, "inst%d/npu", i);
    ti->hbm = add_tier(t, SV_MEMTIER_HBM, name, ic->npu_mem_gib * ti->ranks, ic->npu_mem_bw_gbps, 0,
                       ic->npu_mem_latency_ns, 0, TRUE);
    const struct sv_planner_node_cfg *nc = &t->c->nodes[ic->node];
    double pcie;
    if (!sv_planner__pcie_gbps(t->c, ic, &pcie, error))
        return FALSE;
    if (!(pcie > 0) && !ideal_all(t) && !nc->pcie.ideal) {
        g_autofree char *p = g_strdup_printf("%s: nodes[%d].pcie.bw_gbps", t->c->where, ic->node);
        return sv_planner__path_error(error, p,
                                      "no host-link bandwidth published for %s: give the node's "
                                      "PCIe bandwidth",
                                      ic->hardware);
    }
    for (int32_t r = 0; r < ti->ranks; r++) {
        sv_memtier_fabric_add_pcie(t->fabric, first_device + r, ic->node, pcie, nc->pcie.latency_ns,
                                   ideal_all(t) || nc->pcie.ideal);
        struct sv_memtier_loc hl = {SV_MEMTIER_HBM, ic->node, first_device + r};
        sv_memtier_fabric_add_tier(t->fabric, &hl, ti->hbm);
    }
    return TRUE;
}

gboolean sv_planner_tiers_instance(sv_planner_tiers *t, int32_t i,
                                   const struct sv_compute_model_cfg *m,
                                   const struct sv_planner_placement_map *map, int32_t first_device,
                                   uint32_t block_size, uint64_t *kv_blocks,
                                   struct sv_msg_tier_cfg *out, GError **error)
{
    const struct sv_planner_instance_cfg *ic = &t->c->instances[i];
    struct tiers_inst *ti = &t->inst[i];
    memset(out, 0, sizeof *out);
    if (!ti->set && !sv_planner_tiers_npus(t, i, first_device, error))
        return FALSE;
    SV_ASSERT(ti->first_device == first_device);
    int32_t tp = MAX(ic->tp_size, 1), pp = MAX(ic->pp_size, 1);
    int32_t L = (int32_t)m->num_layers;
    char name[48];
    /* Weights: HBM holds the NPU-resident parts, the tiers the rest (all ranks). */
    struct sv_planner_weight_split w;
    sv_planner_weight_split(m, tp, pp, map, &w);
    if (!sv_memtier_tier_charge(ti->hbm, SV_MEMTIER_OWNER_WEIGHTS,
                                (int64_t)(w.npu_bytes * (uint64_t)ti->ranks), error))
        return FALSE;
    struct sv_planner_loc cpu = {SV_PLANNER_LOC_CPU, 0}, ssd = {SV_PLANNER_LOC_SSD, 0};
    if (!charge_weights(t, ic, &cpu, w.cpu_bytes, error) ||
        !charge_weights(t, ic, &ssd, w.ssd_bytes, error))
        return FALSE;
    for (int32_t d = 0; d < SV_PLANNER_MAX_CXL; d++) {
        struct sv_planner_loc cx = {SV_PLANNER_LOC_CXL, d};
        if (!charge_weights(t, ic, &cx, w.cxl_bytes[d], error))
            return FALSE;
    }
    /* Expert offloading (expert_offload {loc, cache_experts}): every expert of every MoE layer
     * lives on `loc` (all ranks' shares, WEIGHTS there); HBM keeps the non-expert weights and
     * `cache_experts` slots per MoE layer per rank (EXPERTS); misses are fetched over
     * expert_route (msg/offload.c). */
    int64_t slots = expert_slots(ic, m);
    if (slots == 0)
        return sv_planner__path_error(
            error, ic->expert_path,
            "cache_experts 0: the expert cache needs at least one slot per layer");
    if (slots > 0) {
        for (int32_t l = 0; l < L; l++)
            if (map->layer_weights[l].kind != SV_PLANNER_LOC_NPU)
                return sv_planner__path_error(
                    error, ic->expert_path,
                    "expert offloading together with decoder blocks' weights off "
                    "the NPU (placement) is not supported");
        uint64_t eb = expert_bytes(m, tp);
        uint64_t stage_layers = (uint64_t)((L + pp - 1) / pp);
        uint64_t all = (uint64_t)m->num_experts * eb;
        uint64_t hbm_gone =
            ((uint64_t)m->num_experts - (uint64_t)slots) * eb * stage_layers * (uint64_t)ti->ranks;
        uint64_t hbm_cache = (uint64_t)slots * eb * stage_layers * (uint64_t)ti->ranks;
        /* The experts moved out of WEIGHTS: the cached ones are EXPERTS, the rest leave HBM. */
        if (!sv_memtier_tier_charge(ti->hbm, SV_MEMTIER_OWNER_WEIGHTS,
                                    -(int64_t)(hbm_gone + hbm_cache), error) ||
            !sv_memtier_tier_charge(ti->hbm, SV_MEMTIER_OWNER_EXPERTS, (int64_t)hbm_cache, error))
            return FALSE;
        struct sv_memtier_loc eloc;
        sv_memtier_tier *et = tier_at(t, ic->node, &ic->expert_loc, &eloc);
        if (!et)
            return sv_planner__path_error(
                error, ic->expert_path, "loc %s: no such memory on node %d",
                sv_planner_loc_name(&ic->expert_loc, name, sizeof name), ic->node);
        GError *e = NULL;
        if (!sv_memtier_tier_charge(et, SV_MEMTIER_OWNER_WEIGHTS,
                                    (int64_t)(all * (uint64_t)L * (uint64_t)tp), &e)) {
            sv_planner__path_error(error, ic->expert_path, "experts: %s", e->message);
            g_error_free(e);
            return FALSE;
        }
        ti->expert_route = g_new0(const sv_memtier_route *, (size_t)ti->ranks);
        for (int32_t r = 0; r < ti->ranks; r++) {
            struct sv_memtier_loc hl = {SV_MEMTIER_HBM, ic->node, first_device + r};
            ti->expert_route[r] = sv_memtier_fabric_route(t->fabric, &eloc, &hl, error);
            if (!ti->expert_route[r]) {
                g_prefix_error(error, "%s: ", ic->expert_path);
                return FALSE;
            }
        }
        out->expert_cache_slots = (int32_t)slots;
        out->expert_route = ti->expert_route;
        out->expert_bytes = eb;
    }
    uint64_t kv_tok =
        sv_compute_model_kv_bytes_per_token_layer(m, tp) * (uint64_t)((L + pp - 1) / pp);
    ti->block_bytes = kv_tok * block_size * (uint64_t)ti->ranks;
    /* Weight streaming routes: parts 0..L-1 decoder blocks, L embedding, L+1 head (the final
     * norm, 8 KiB on Llama-3.1-8B, travels with the head when it sits on the same tier). */
    ti->part_bytes = g_new0(uint64_t, (size_t)L + 2);
    for (int32_t l = 0; l < L; l++)
        ti->part_bytes[l] = sv_compute_model_layer_weight_bytes(m, tp);
    ti->part_bytes[L] = sv_compute_model_embedding_bytes(m, tp);
    ti->part_bytes[L + 1] = sv_compute_model_head_bytes(m, tp);
    if (map->final_norm.kind == map->lm_head.kind && map->final_norm.device == map->lm_head.device)
        ti->part_bytes[L + 1] += sv_compute_model_final_norm_bytes(m);
    gboolean streams = FALSE;
    ti->weight_route = g_new0(const sv_memtier_route **, (size_t)ti->ranks);
    for (int32_t r = 0; r < ti->ranks; r++) {
        ti->weight_route[r] = g_new0(const sv_memtier_route *, (size_t)L + 2);
        struct sv_memtier_loc dst = {SV_MEMTIER_HBM, ic->node, first_device + r};
        for (int32_t p = 0; p < L + 2; p++) {
            const struct sv_planner_loc *l = p < L    ? &map->layer_weights[p]
                                             : p == L ? &map->embedding
                                                      : &map->lm_head;
            if (l->kind == SV_PLANNER_LOC_NPU)
                continue;
            struct sv_memtier_loc src;
            if (!tier_at(t, ic->node, l, &src))
                return sv_planner__path_error(error, rule_path(ic, l, FALSE),
                                              "no such memory on node %d", ic->node);
            ti->weight_route[r][p] = sv_memtier_fabric_route(t->fabric, &src, &dst, error);
            if (!ti->weight_route[r][p]) {
                g_prefix_error(error, "%s: ", rule_path(ic, l, FALSE));
                return FALSE;
            }
            streams = TRUE;
        }
    }
    /* Live KV off the device (kv_loc cpu / cxl:N; docs/memory-tiers.md use 2): the pool's blocks
     * hold, for the layers whose KV sits on a tier, tp x (KV bytes per token and layer / tp) x
     * block_size bytes per layer there. The pool is capped by each such tier's free space (after
     * the weights) and charged LIVE_KV for all its blocks at setup, as HBM reserves its KV. */
    if (map->any_offload) {
        uint64_t blk_layer =
            sv_compute_model_kv_bytes_per_token_layer(m, tp) * (uint64_t)tp * (uint64_t)block_size;
        struct {
            struct sv_planner_loc l;
            sv_memtier_tier *tier;
            uint64_t per_block;
        } at[SV_PLANNER_MAX_CXL + 2];
        int32_t n_at = 0;
        for (int32_t l = 0; l < L; l++) {
            const struct sv_planner_loc *kl = &map->layer_kv[l];
            if (kl->kind == SV_PLANNER_LOC_NPU)
                continue;
            int32_t k = 0;
            while (k < n_at && !(at[k].l.kind == kl->kind && at[k].l.device == kl->device))
                k++;
            if (k == n_at) {
                struct sv_memtier_loc src;
                at[k].l = *kl;
                at[k].tier = tier_at(t, ic->node, kl, &src);
                at[k].per_block = 0;
                if (!at[k].tier)
                    return sv_planner__path_error(
                        error, rule_path(ic, kl, TRUE), "no %s memory on node %d",
                        sv_planner_loc_name(kl, name, sizeof name), ic->node);
                n_at++;
            }
            at[k].per_block += blk_layer;
        }
        for (int32_t k = 0; k < n_at; k++) {
            uint64_t cap = sv_memtier_tier_free_bytes(at[k].tier) / at[k].per_block;
            if (cap < 1)
                return sv_planner__path_error(
                    error, rule_path(ic, &at[k].l, TRUE),
                    "live KV on %s: not one %u-token block (%" G_GUINT64_FORMAT " B) free",
                    sv_planner_loc_name(&at[k].l, name, sizeof name), block_size, at[k].per_block);
            *kv_blocks = MIN(*kv_blocks, cap);
        }
        for (int32_t k = 0; k < n_at; k++)
            if (!sv_memtier_tier_charge(at[k].tier, SV_MEMTIER_OWNER_LIVE_KV,
                                        (int64_t)(*kv_blocks * at[k].per_block), error))
                return FALSE;
        if (n_at > 0) {
            uint64_t npu_layers = 0;
            for (int32_t l = 0; l < L; l++)
                npu_layers += map->layer_kv[l].kind == SV_PLANNER_LOC_NPU;
            ti->block_bytes = blk_layer * npu_layers; /* the HBM view: KV layers in HBM only */
            ti->kv_route = g_new0(const sv_memtier_route **, (size_t)ti->ranks);
            ti->kv_store_route = g_new0(const sv_memtier_route **, (size_t)ti->ranks);
            for (int32_t r = 0; r < ti->ranks; r++) {
                ti->kv_route[r] = g_new0(const sv_memtier_route *, (size_t)L);
                ti->kv_store_route[r] = g_new0(const sv_memtier_route *, (size_t)L);
                struct sv_memtier_loc hl = {SV_MEMTIER_HBM, ic->node, first_device + r};
                for (int32_t l = 0; l < L; l++) {
                    const struct sv_planner_loc *kl = &map->layer_kv[l];
                    if (kl->kind == SV_PLANNER_LOC_NPU)
                        continue;
                    struct sv_memtier_loc src;
                    tier_at(t, ic->node, kl, &src);
                    ti->kv_route[r][l] = sv_memtier_fabric_route(t->fabric, &src, &hl, error);
                    ti->kv_store_route[r][l] =
                        ti->kv_route[r][l] ? sv_memtier_fabric_route(t->fabric, &hl, &src, error)
                                           : NULL;
                    if (!ti->kv_store_route[r][l]) {
                        g_prefix_error(error, "%s: ", rule_path(ic, kl, TRUE));
                        return FALSE;
                    }
                }
            }
            out->kv_route = (const sv_memtier_route *const *const *)ti->kv_route;
            out->kv_store_route = (const sv_memtier_route *const *const *)ti->kv_store_route;
        }
    }
    /* Swap target (kv_evict_loc, default cpu). */
    if (t->run.preempt_swap) {
        struct sv_planner_loc el = map->kv_evict.kind == SV_PLANNER_LOC_NPU ? cpu : map->kv_evict;
        struct sv_memtier_loc eloc;
        sv_memtier_tier *et = tier_at(t, ic->node, &el, &eloc);
        if (!et)
            return sv_planner__path_error(error, "preemption_mode swap (--preemption-mode)",
                                          "instance %d: no %s memory on node %d for swapped KV", i,
                                          sv_planner_loc_name(&el, name, sizeof name), ic->node);
        ti->swap_route = g_new0(const sv_memtier_route *, (size_t)ti->ranks);
        ti->swap_in_route = g_new0(const sv_memtier_route *, (size_t)ti->ranks);
        for (int32_t r = 0; r < ti->ranks; r++) {
            struct sv_memtier_loc hl = {SV_MEMTIER_HBM, ic->node, first_device + r};
            ti->swap_route[r] = sv_memtier_fabric_route(t->fabric, &hl, &eloc, error);
            ti->swap_in_route[r] =
                ti->swap_route[r] ? sv_memtier_fabric_route(t->fabric, &eloc, &hl, error) : NULL;
            if (!ti->swap_in_route[r])
                return FALSE;
        }
        out->swap_route = ti->swap_route;
        out->swap_in_route = ti->swap_in_route;
        out->swap_tier = et;
        out->preemption_swap = TRUE;
    }
    if (!build_hier(t, i, m, block_size, error))
        return FALSE;
    if (t->run.preempt_swap) {
        /* Prefix chunks on the swap tier give way to swapped KV (docs/memory-tiers.md use 3). */
        struct sv_planner_loc el = map->kv_evict.kind == SV_PLANNER_LOC_NPU ? cpu : map->kv_evict;
        if (el.device == 0 && t->run.prefix_pool == SV_PLANNER_POOL_INSTANCE)
            out->swap_pool = ti->pools[el.kind];
        else if (el.device == 0 && t->node_pools[ic->node])
            out->swap_pool = t->node_pools[ic->node][el.kind];
    }
    out->fabric = t->fabric;
    out->weight_route = streams ? (const sv_memtier_route *const *const *)ti->weight_route : NULL;
    out->layer_weight_bytes = ti->part_bytes;
    out->hier = ti->hier;
    out->chunk_tokens = t->run.prefix_chunk_tokens;
    out->offload_serial = t->run.offload_serial;
    out->kv_load_per_layer = t->run.kv_load_per_layer;
    return TRUE;
}

void sv_planner_tiers_set_kv(sv_planner_tiers *t, int32_t i, sv_memtier_kv_manager *kv)
{
    t->inst[i].kv = kv;
}

/* The HBM KV view of instance i: used + cached-free blocks (LLMServingSim's npu_used). */
static void hbm_view(struct tiers_inst *ti)
{
    if (!ti->set || !ti->kv)
        return;
    uint64_t blocks = (uint64_t)sv_memtier_kv_manager_num_used_blocks(ti->kv) +
                      sv_memtier_kv_manager_num_cached_free_blocks(ti->kv);
    sv_memtier_tier_set(ti->hbm, SV_MEMTIER_OWNER_LIVE_KV, blocks * ti->block_bytes);
}

void sv_planner_tiers_sample(sv_planner_tiers *t, sv_time now, struct sv_planner_tier_usage *out)
{
    memset(out, 0, sizeof *out);
    for (int32_t i = 0; i < t->n_inst; i++)
        hbm_view(&t->inst[i]);
    for (guint k = 0; k < t->all->len; k++) {
        sv_memtier_tier *tier = g_ptr_array_index(t->all, k);
        struct sv_memtier_tier_stats s;
        sv_memtier_tier_get_stats(tier, now, &s);
        sv_memtier_kind kind = sv_memtier_tier_get_cfg(tier)->kind;
        out->used[kind] += sv_memtier_tier_used(tier);
        out->capacity[kind] += s.capacity;
        out->hit_tokens[kind] += s.hit_tokens;
        out->lookup_tokens[kind] += s.lookup_tokens;
    }
    for (int32_t i = 0; i < t->n_inst; i++) {
        if (!t->inst[i].set || !t->inst[i].kv)
            continue;
        struct sv_memtier_kv_stats ks;
        sv_memtier_kv_manager_get_stats(t->inst[i].kv, &ks);
        out->hit_tokens[SV_MEMTIER_HBM] += ks.hit_tokens;
        out->lookup_tokens[SV_MEMTIER_HBM] += ks.requested_tokens;
    }
}

void sv_planner_tiers_get_stats(sv_planner_tiers *t, sv_time now, struct sv_planner_tier_stats *out)
{
    memset(out, 0, sizeof *out);
    for (int32_t i = 0; i < t->n_inst; i++)
        hbm_view(&t->inst[i]);
    for (guint k = 0; k < t->all->len; k++) {
        sv_memtier_tier *tier = g_ptr_array_index(t->all, k);
        struct sv_memtier_tier_stats s;
        sv_memtier_tier_get_stats(tier, now, &s);
        sv_memtier_kind kind = sv_memtier_tier_get_cfg(tier)->kind;
        struct sv_memtier_tier_stats *o = &out->kind[kind];
        o->capacity += s.capacity;
        o->peak += s.peak;
        for (int w = 0; w < SV_MEMTIER_OWNER_COUNT; w++)
            o->peak_by_owner[w] += s.peak_by_owner[w];
        o->mean_bytes += s.mean_bytes;
        o->read_bytes += s.read_bytes;
        o->write_bytes += s.write_bytes;
        o->hit_tokens += s.hit_tokens;
        o->lookup_tokens += s.lookup_tokens;
        o->hit_chunks += s.hit_chunks;
        o->evictions += s.evictions;
        o->rejected += s.rejected;
        for (int w = 0; w < SV_MEMTIER_OWNER_COUNT; w++)
            out->used_by[kind][w] += sv_memtier_tier_used_by(tier, (sv_memtier_owner)w);
        out->used[kind] += sv_memtier_tier_used(tier);
        out->present[kind] = TRUE;
    }
    out->bytes_booked = sv_memtier_fabric_bytes_booked(t->fabric);
}

sv_memtier_fabric *sv_planner_tiers_fabric(sv_planner_tiers *t)
{
    return t->fabric;
}

void sv_planner_tiers_free(sv_planner_tiers *t)
{
    if (!t)
        return;
    for (int32_t i = 0; i < t->n_inst; i++) {
        struct tiers_inst *ti = &t->inst[i];
        sv_memtier_hier_free(ti->hier);
        for (int k = 0; k < SV_PLANNER_LOC_COUNT; k++)
            sv_memtier_prefix_pool_free(ti->pools[k]);
        for (int32_t r = 0; ti->weight_route && r < ti->ranks; r++)
            g_free(ti->weight_route[r]);
        g_free(ti->weight_route);
        g_free(ti->part_bytes);
        g_free(ti->swap_route);
        g_free(ti->swap_in_route);
        for (int32_t r = 0; ti->kv_route && r < ti->ranks; r++) {
            g_free(ti->kv_route[r]);
            g_free(ti->kv_store_route[r]);
        }
        g_free(ti->kv_route);
        g_free(ti->kv_store_route);
        g_free(ti->expert_route);
    }
    for (int32_t n = 0; n < t->n_nodes; n++) {
        for (int k = 0; t->node_pools[n] && k < SV_PLANNER_LOC_COUNT; k++)
            sv_memtier_prefix_pool_free(t->node_pools[n][k]);
        g_free(t->node_pools[n]);
        g_free(t->cxl[n]);
    }
    sv_memtier_fabric_free(t->fabric);
    g_ptr_array_free(t->all, TRUE);
    g_free(t->inst);
    g_free(t->dram);
    g_free(t->cxl);
    g_free(t->n_cxl);
    g_free(t->ssd);
    g_free(t->node_pools);
    g_free(t->cxl_cluster);
    g_free(t);
}

gboolean sv_planner__pcie_gbps(const struct sv_planner_cluster_cfg *c,
                               const struct sv_planner_instance_cfg *ic, double *out,
                               GError **error)
{
    /* PCIe per direction per NPU: the node's `pcie`, else the hardware catalog's host link. */
    *out = c->nodes[ic->node].pcie.bw_gbps;
    if (*out > 0)
        return TRUE;
    struct sv_compute_hw_cfg hw;
    if (!sv_compute_hw_catalog_lookup(c->hw_catalog, ic->hardware, &hw, error))
        return FALSE;
    *out = hw.pcie_gbps;
    return TRUE;
}

void sv_planner__tier_stats_add(struct sv_msg_tier_stats *o, const struct sv_msg_tier_stats *ms)
{
    o->swap_outs += ms->swap_outs;
    o->swap_ins += ms->swap_ins;
    o->swap_out_bytes += ms->swap_out_bytes;
    o->swap_in_bytes += ms->swap_in_bytes;
    o->swap_fallbacks += ms->swap_fallbacks;
    o->expert_hits += ms->expert_hits;
    o->expert_misses += ms->expert_misses;
    o->expert_fetch_bytes += ms->expert_fetch_bytes;
    o->tier_bytes += ms->tier_bytes;
}
