/* Memory tiers, the planner's side (docs/memory-tiers.md; PLAN issue 8 sections 4-5): weight
 * placement resolved against the model (which bytes stay in HBM, which live on a host / CXL / SSD
 * tier) and the KV pool that HBM then holds. */
#include "planner/planner.h"

#include <stdarg.h>
#include <string.h>

static gboolean path_error(GError **error, const char *path, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
static gboolean path_error(GError **error, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID, "%s: %s", path, msg);
    return FALSE;
}

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
    uint64_t kv_tok = sv_compute_model_kv_bytes_per_token_layer(m, ic->tp_size) *
                      (uint64_t)((m->num_layers + ic->pp_size - 1) / ic->pp_size);
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
            return path_error(error, where,
                              "\"%s\": must be none, cpu, cxl, ssd or a comma list of them "
                              "(cpu,cxl,ssd)",
                              value);
        for (int32_t i = 0; i < *n; i++)
            if (kinds[i] == k)
                return path_error(error, where, "\"%s\": %s named twice", value, *p);
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
        path_error(error, where, "\"%s\": must be %s", value, known->str);
        g_string_free(known, TRUE);
        return FALSE;
    }
    return path_error(error, where, "unknown memory-tier flag %s", key);
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
