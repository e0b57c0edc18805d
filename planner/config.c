/* LLMServingSim's cluster config, read as it is (docs/reference/cluster-config.md of the reference
 * copy in ../shared/reference/llmservingsim). Unknown keys warn with their path; bad values fail
 * with it. */
#include "planner/planner_internal.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

GQuark sv_planner_error_quark(void)
{
    return g_quark_from_static_string("servesim-planner-error-quark");
}

#define DEFAULT_MEM_UTIL SV_PLANNER__DEFAULT_MEM_UTIL

static const char *const top_keys[] = {"num_nodes",
                                       "link_bw",
                                       "link_latency",
                                       "nodes",
                                       "cxl_mem",
                                       "fabric",
                                       "network_model",
                                       "kv_transfer",
                                       "slo_ttft_ms",
                                       "preemption_mode",
                                       "prefix_storage",
                                       "enable_prefix_sharing",
                                       "prefix_pool",
                                       "prefix_write",
                                       "prefix_evict",
                                       "offload_overlap",
                                       "kv_load_overlap",
                                       "memory_model",
                                       "prefix_chunk_tokens",
                                       "engine",
                                       NULL};
static const char *const node_keys[] = {"num_instances", "cpu_mem",  "instances",
                                        "power",         "topology", "cxl_mem",
                                        "pcie",          "storage",  NULL};
static const char *const mem_keys[] = {"mem_size",   "mem_bw",      "mem_latency", "mem_util",
                                       "pim_config", "num_devices", NULL};
static const char *const cpu_keys[] = {"mem_size",   "mem_bw",      "mem_latency", "mem_util",
                                       "pim_config", "num_devices", "ideal",       NULL};
static const char *const inst_keys[] = {"model_name",
                                        "hardware",
                                        "npu_mem",
                                        "num_npus",
                                        "tp_size",
                                        "pp_size",
                                        "ep_size",
                                        "dp_group",
                                        "pd_type",
                                        "tp_dim",
                                        "ep_dim",
                                        "placement",
                                        "max_num_seqs",
                                        "max_num_batched_tokens",
                                        "long_prefill_token_threshold",
                                        "block_size",
                                        "dtype",
                                        "kv_cache_dtype",
                                        "enable_chunked_prefill",
                                        "enable_prefix_caching",
                                        "reserve_full_isl",
                                        "enable_local_offloading",
                                        "enable_attn_offloading",
                                        "enable_sub_batch_interleaving",
                                        "enable_block_copy",
                                        "instance_id",
                                        "npu_num",
                                        "npu_group",
                                        "expert_offload",
                                        "gpu_clock",
                                        "max_model_len",
                                        "stages",
                                        "speculative",
                                        "afd", /* planner/afd.c (docs/afd.md) */
                                        NULL};

void sv_planner__warn_unknown(JsonObject *obj, const char *const *known, const char *where)
{
    g_autoptr(GList) members = json_object_get_members(obj);
    members = g_list_sort(members, (GCompareFunc)strcmp); /* deterministic order */
    for (GList *l = members; l; l = l->next) {
        gboolean ok = FALSE;
        for (int i = 0; known[i]; i++)
            ok = ok || strcmp(known[i], l->data) == 0;
        if (!ok)
            g_warning("%s.%s: unknown key, ignored", where, (const char *)l->data);
    }
}

static gboolean bad(GError **error, const char *where, const char *key, const char *what)
{
    g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID, "%s.%s: %s", where, key, what);
    return FALSE;
}

/* A range check (core's, docs/reliability.md "Numeric ranges") reported in the planner's domain. */
static gboolean in_range_d(const char *where, const char *key, double v, struct sv_range_double r,
                           GError **error)
{
    g_autofree char *path = g_strdup_printf("%s.%s", where, key);
    GError *e = NULL;
    if (sv_range_check_double(path, v, r, &e))
        return TRUE;
    g_set_error_literal(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID, e->message);
    g_error_free(e);
    return FALSE;
}

static gboolean in_range_i(const char *where, const char *key, int64_t v, struct sv_range_int r,
                           GError **error)
{
    g_autofree char *path = g_strdup_printf("%s.%s", where, key);
    GError *e = NULL;
    if (sv_range_check_int(path, v, r, &e))
        return TRUE;
    g_set_error_literal(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID, e->message);
    g_error_free(e);
    return FALSE;
}

/* Ranges of the cluster config's own keys (the shared ones are core's SV_RANGE_*). */
#define RANGE_NODES SV_RANGE_I(1, 1 << 16, NULL)
#define RANGE_CXL_DEVICES SV_RANGE_I(1, 64, NULL)
#define RANGE_SEQS SV_RANGE_I(0, 1 << 20, NULL)
#define RANGE_BUDGET SV_RANGE_I(0, SV_RANGE_TOKENS_MAX, "tokens")
#define RANGE_BLOCK SV_RANGE_I(1, 1 << 16, "tokens")
#define RANGE_QUEUE_DEPTH SV_RANGE_I(0, 1 << 16, NULL)
#define RANGE_EXPERTS SV_RANGE_I(0, 1 << 16, NULL)
#define RANGE_SLO_MS SV_RANGE_D(0, 1e9, "ms")
/* An NPU's memory: up to 16 TiB (55x a B300's 288 GB). The KV block manager keeps state per
 * block, so the bound is on time and memory rather than on arithmetic: 16 TiB of 2 MiB blocks is
 * 8 M blocks (about 160 MB, 0.6 s to set up); 1 PiB took 9 GB and over a minute. */
#define RANGE_NPU_GIB SV_RANGE_D_OPEN(0, 16384, "GiB")

/* FALSE, with "; <h>" after the message of the error just set. */
static gboolean hint(GError **error, const char *h)
{
    if (error && *error) {
        char *m = g_strdup_printf("%s; %s", (*error)->message, h);
        g_free((*error)->message);
        (*error)->message = m;
    }
    return FALSE;
}

/* A number, or the first element of an array of numbers (per-dimension link values), in `r`. */
static gboolean get_num(JsonObject *o, const char *key, const char *where, gboolean required,
                        double dflt, struct sv_range_double r, double *out, GError **error)
{
    JsonNode *n = json_object_get_member(o, key);
    if (!n || JSON_NODE_HOLDS_NULL(n)) {
        if (required)
            return bad(error, where, key, "missing");
        *out = dflt;
        return TRUE;
    }
    if (JSON_NODE_HOLDS_ARRAY(n) && json_array_get_length(json_node_get_array(n)) > 0)
        n = json_array_get_element(json_node_get_array(n), 0);
    double v;
    if (!sv_cfg_node_double(n, &v))
        return bad(error, where, key, "must be a number");
    if (!in_range_d(where, key, v, r, error))
        return FALSE;
    *out = v;
    return TRUE;
}

static gboolean get_int(JsonObject *o, const char *key, const char *where, int64_t dflt,
                        struct sv_range_int r, int64_t *out, GError **error)
{
    JsonNode *n = json_object_get_member(o, key);
    if (!n || JSON_NODE_HOLDS_NULL(n)) {
        *out = dflt;
        return TRUE;
    }
    int64_t v;
    if (!sv_cfg_node_int(n, &v))
        return bad(error, where, key, "must be an integer");
    if (!in_range_i(where, key, v, r, error))
        return FALSE;
    *out = v;
    return TRUE;
}

static gboolean get_bool(JsonObject *o, const char *key, const char *where, int *out,
                         GError **error)
{
    JsonNode *n = json_object_get_member(o, key);
    *out = -1;
    if (!n || JSON_NODE_HOLDS_NULL(n))
        return TRUE;
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_BOOLEAN)
        return bad(error, where, key, "must be true or false");
    *out = json_node_get_boolean(n) ? 1 : 0;
    return TRUE;
}

static gboolean get_str(JsonObject *o, const char *key, const char *where, gboolean required,
                        char *out, size_t size, GError **error)
{
    JsonNode *n = json_object_get_member(o, key);
    out[0] = '\0';
    if (!n || JSON_NODE_HOLDS_NULL(n))
        return required ? bad(error, where, key, "missing") : TRUE;
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING)
        return bad(error, where, key, "must be a string");
    if (g_strlcpy(out, json_node_get_string(n), size) >= size)
        return bad(error, where, key, "too long");
    if (required && out[0] == '\0')
        return bad(error, where, key, "must not be empty");
    return TRUE;
}

static JsonObject *get_obj(JsonObject *o, const char *key, const char *where, gboolean required,
                           GError **error)
{
    JsonNode *n = json_object_get_member(o, key);
    if (!n || !JSON_NODE_HOLDS_OBJECT(n)) {
        if (n || required)
            bad(error, where, key, n ? "must be an object" : "missing");
        return NULL;
    }
    return json_node_get_object(n);
}

/* ---- memory tiers: locations, placement rules, devices, run flags --------------------------- */

gboolean sv_planner__error(GError **error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error_literal(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID, msg);
    return FALSE;
}

gboolean sv_planner__path_error(GError **error, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID, "%s: %s", path, msg);
    return FALSE;
}

const char *sv_planner_loc_name(const struct sv_planner_loc *loc, char *buf, size_t size)
{
    static const char *const names[] = {"npu", "cpu", "cxl", "ssd"};
    if (loc->kind == SV_PLANNER_LOC_CXL)
        g_snprintf(buf, size, "cxl:%d", loc->device);
    else
        g_strlcpy(buf, names[loc->kind], size);
    return buf;
}

/* What a location string may name. */
enum { LOC_WEIGHTS, LOC_KV, LOC_EVICT, LOC_EXPERTS };

/* A location of LLMServingSim's placement (docs/examples/memory-tiers/cxl-memory.mdx): "npu"
 * (also "local"), "cpu", "cxl:N" with N < the CXL devices the instance reaches, "ssd" (weights
 * only: servesim extension). */
static gboolean parse_loc(JsonObject *o, const char *key, const char *where, int what,
                          int32_t n_cxl, struct sv_planner_loc *out, gboolean *given,
                          GError **error)
{
    char v[32];
    *given = FALSE;
    if (!get_str(o, key, where, FALSE, v, sizeof v, error))
        return FALSE;
    if (!v[0])
        return TRUE;
    *given = TRUE;
    g_autofree char *path = g_strdup_printf("%s.%s", where, key);
    out->device = 0;
    if (g_ascii_strcasecmp(v, "npu") == 0 || g_ascii_strcasecmp(v, "local") == 0) {
        if (what == LOC_EXPERTS)
            return sv_planner__path_error(error, path,
                                          "experts are on the NPU without expert_offload");
        out->kind = SV_PLANNER_LOC_NPU;
        return TRUE;
    }
    if (g_ascii_strcasecmp(v, "cpu") == 0) {
        out->kind = SV_PLANNER_LOC_CPU;
        return TRUE;
    }
    if (g_ascii_strcasecmp(v, "ssd") == 0) {
        if (what != LOC_WEIGHTS)
            return sv_planner__path_error(error, path,
                                          "\"ssd\" holds weights only (use npu, cpu or cxl:N)");
        out->kind = SV_PLANNER_LOC_SSD;
        return TRUE;
    }
    if (g_ascii_strncasecmp(v, "cxl:", 4) == 0) {
        char *end = NULL;
        gint64 d = g_ascii_strtoll(v + 4, &end, 10);
        if (end == v + 4 || *end || d < 0)
            return sv_planner__path_error(error, path,
                                          "\"%s\": a CXL device is \"cxl:N\" (N = 0, 1, ...)", v);
        if (n_cxl == 0)
            return sv_planner__path_error(
                error, path, "cxl:%" G_GINT64_FORMAT " but no cxl_mem is configured", d);
        if (d >= n_cxl)
            return sv_planner__path_error(
                error, path, "cxl:%" G_GINT64_FORMAT " but cxl_mem has %d device%s (0-%d)", d,
                n_cxl, n_cxl == 1 ? "" : "s", n_cxl - 1);
        out->kind = SV_PLANNER_LOC_CXL;
        out->device = (int32_t)d;
        return TRUE;
    }
    return sv_planner__path_error(error, path, "\"%s\": must be \"npu\", \"cpu\", \"cxl:N\"%s", v,
                                  what == LOC_WEIGHTS ? " or \"ssd\"" : "");
}

/* A block list: "0-3", "8,9,10", "11-23, 30" (LLMServingSim cxl-memory.mdx). With n_layers < 0
 * only the syntax is checked; else every block must be < n_layers and `fn` is called per block. */
static gboolean parse_blocks(const char *spec, const char *path, int32_t n_layers,
                             void (*fn)(void *, int32_t), void *ctx, GError **error)
{
    g_auto(GStrv) parts = g_strsplit(spec, ",", -1);
    int n = 0;
    for (char **p = parts; *p; p++) {
        g_strstrip(*p);
        char *dash = strchr(*p, '-');
        char *end = NULL;
        gint64 lo = g_ascii_strtoll(*p, &end, 10), hi = lo;
        gboolean ok = end != *p && (dash ? end == dash : *end == '\0') && lo >= 0;
        if (ok && dash) {
            char *s2 = dash + 1;
            while (*s2 == ' ')
                s2++;
            hi = g_ascii_strtoll(s2, &end, 10);
            ok = end != s2 && *end == '\0' && hi >= lo;
        }
        if (!ok)
            return sv_planner__path_error(
                error, path, "\"%s\": blocks are \"A-B\" ranges or numbers separated by commas",
                spec);
        if (n_layers >= 0 && hi >= n_layers)
            return sv_planner__path_error(error, path,
                                          "block %" G_GINT64_FORMAT " out of range (model has %d)",
                                          hi, n_layers);
        for (gint64 b = lo; n_layers >= 0 && b <= hi; b++)
            fn(ctx, (int32_t)b);
        n++;
    }
    if (n == 0)
        return sv_planner__path_error(error, path, "must name at least one block");
    return TRUE;
}

static const char *const rule_keys[] = {"weights", "kv_loc", "kv_evict_loc", "blocks", NULL};
static const char *const layer_names[] = {"embedding", "final_layernorm", "lm_head", NULL};

static gboolean parse_rule(JsonNode *n, const char *path, gboolean is_block, int32_t n_cxl,
                           struct sv_planner_place_rule *r, GError **error)
{
    if (!JSON_NODE_HOLDS_OBJECT(n))
        return sv_planner__path_error(error, path, "must be an object");
    JsonObject *o = json_node_get_object(n);
    sv_planner__warn_unknown(o, rule_keys, path);
    g_strlcpy(r->path, path, sizeof r->path);
    if (!parse_loc(o, "weights", path, LOC_WEIGHTS, n_cxl, &r->weights, &r->has_weights, error) ||
        !parse_loc(o, "kv_loc", path, LOC_KV, n_cxl, &r->kv, &r->has_kv, error) ||
        !parse_loc(o, "kv_evict_loc", path, LOC_EVICT, n_cxl, &r->kv_evict, &r->has_evict, error))
        return FALSE;
    if (is_block) {
        if (!get_str(o, "blocks", path, TRUE, r->blocks, sizeof r->blocks, error))
            return FALSE;
        g_autofree char *bp = g_strdup_printf("%s.blocks", path);
        if (!parse_blocks(r->blocks, bp, -1, NULL, NULL, error))
            return FALSE;
    } else if (json_object_has_member(o, "blocks")) {
        return sv_planner__path_error(error, path,
                                      "\"blocks\" belongs in placement.blocks[] rules");
    }
    return TRUE;
}

/* The instance's placement rules, kept as parsed; block ranges resolve once the model is known
 * (sv_planner_placement_resolve). kv_evict_loc: one target per instance (decision 9). */
static gboolean parse_placement(JsonObject *inst, const char *where, int32_t n_cxl,
                                struct sv_planner_placement *pl, GError **error)
{
    JsonNode *pn = json_object_get_member(inst, "placement");
    if (!pn || JSON_NODE_HOLDS_NULL(pn))
        return TRUE;
    g_autofree char *pw = g_strdup_printf("%s.placement", where);
    if (!JSON_NODE_HOLDS_OBJECT(pn))
        return sv_planner__path_error(error, pw, "must be an object");
    JsonObject *po = json_node_get_object(pn);
    static const char *const keys[] = {"default", "blocks", "layers", NULL};
    sv_planner__warn_unknown(po, keys, pw);
    GArray *rules = g_array_new(FALSE, TRUE, sizeof(struct sv_planner_place_rule));
    gboolean ok = TRUE;
    JsonNode *d = json_object_get_member(po, "default");
    if (d && !JSON_NODE_HOLDS_NULL(d)) {
        struct sv_planner_place_rule r = {0};
        g_autofree char *p = g_strdup_printf("%s.default", pw);
        ok = parse_rule(d, p, FALSE, n_cxl, &r, error);
        if (ok)
            g_array_append_val(rules, r);
    }
    JsonNode *b = json_object_get_member(po, "blocks");
    if (ok && b && !JSON_NODE_HOLDS_NULL(b)) {
        if (!JSON_NODE_HOLDS_ARRAY(b)) {
            ok = sv_planner__path_error(error, pw, "blocks: must be an array of rules");
        } else {
            JsonArray *a = json_node_get_array(b);
            for (guint i = 0; ok && i < json_array_get_length(a); i++) {
                struct sv_planner_place_rule r = {0};
                g_autofree char *p = g_strdup_printf("%s.blocks[%u]", pw, i);
                ok = parse_rule(json_array_get_element(a, i), p, TRUE, n_cxl, &r, error);
                if (ok)
                    g_array_append_val(rules, r);
            }
        }
    }
    JsonNode *l = json_object_get_member(po, "layers");
    if (ok && l && !JSON_NODE_HOLDS_NULL(l)) {
        if (!JSON_NODE_HOLDS_OBJECT(l)) {
            ok = sv_planner__path_error(error, pw, "layers: must be an object of named rules");
        } else {
            g_autoptr(GList) names = json_object_get_members(json_node_get_object(l));
            names = g_list_sort(names, (GCompareFunc)strcmp); /* deterministic order */
            for (GList *it = names; ok && it; it = it->next) {
                const char *name = it->data;
                g_autofree char *p = g_strdup_printf("%s.layers.%s", pw, name);
                gboolean known = FALSE;
                for (int k = 0; layer_names[k]; k++)
                    known = known || strcmp(layer_names[k], name) == 0;
                if (!known) {
                    ok = sv_planner__path_error(
                        error, p, "unknown layer (embedding, final_layernorm or lm_head)");
                    break;
                }
                struct sv_planner_place_rule r = {0};
                g_strlcpy(r.layer, name, sizeof r.layer);
                ok = parse_rule(json_object_get_member(json_node_get_object(l), name), p, FALSE,
                                n_cxl, &r, error);
                if (ok && r.has_kv && r.kv.kind != SV_PLANNER_LOC_NPU)
                    ok = sv_planner__path_error(error, p, "kv_loc: %s holds no KV cache (npu only)",
                                                name);
                if (ok)
                    g_array_append_val(rules, r);
            }
        }
    }
    /* One eviction target per instance (decision 9). */
    const struct sv_planner_place_rule *first = NULL;
    for (guint i = 0; ok && i < rules->len; i++) {
        const struct sv_planner_place_rule *r =
            &g_array_index(rules, struct sv_planner_place_rule, i);
        if (!r->has_evict)
            continue;
        if (!first) {
            first = r;
        } else if (r->kv_evict.kind != first->kv_evict.kind ||
                   r->kv_evict.device != first->kv_evict.device) {
            char a[16], bb[16];
            g_autofree char *p = g_strdup_printf("%s.kv_evict_loc", r->path);
            ok = sv_planner__path_error(
                error, p,
                "\"%s\" but %s.kv_evict_loc is \"%s\" (one eviction target per "
                "instance)",
                sv_planner_loc_name(&r->kv_evict, a, sizeof a), first->path,
                sv_planner_loc_name(&first->kv_evict, bb, sizeof bb));
        }
    }
    pl->n_rules = (int32_t)rules->len;
    pl->rules = (struct sv_planner_place_rule *)(void *)g_array_free(rules, FALSE);
    return ok;
}

static void mark_block(void *ctx, int32_t b)
{
    int32_t *hits = ctx;
    hits[b]++;
}

gboolean sv_planner_placement_resolve(const struct sv_planner_instance_cfg *ic, int32_t num_layers,
                                      struct sv_planner_placement_map *out, GError **error)
{
    memset(out, 0, sizeof *out);
    out->num_layers = num_layers;
    out->layer_weights = g_new0(struct sv_planner_loc, (size_t)MAX(num_layers, 1));
    out->layer_kv = g_new0(struct sv_planner_loc, (size_t)MAX(num_layers, 1));
    g_autofree int32_t *owner = g_new(int32_t, (size_t)MAX(num_layers, 1));
    for (int32_t l = 0; l < num_layers; l++)
        owner[l] = -1;
    const struct sv_planner_placement *pl = &ic->placement;
    /* The default rule first: it covers every part no other rule names. */
    for (int32_t k = 0; k < pl->n_rules; k++) {
        const struct sv_planner_place_rule *r = &pl->rules[k];
        if (r->has_evict)
            out->kv_evict = r->kv_evict;
        if (r->blocks[0] || r->layer[0])
            continue;
        for (int32_t l = 0; l < num_layers; l++) {
            if (r->has_weights)
                out->layer_weights[l] = r->weights;
            if (r->has_kv)
                out->layer_kv[l] = r->kv;
        }
        if (r->has_weights)
            out->embedding = out->final_norm = out->lm_head = r->weights;
    }
    for (int32_t k = 0; k < pl->n_rules; k++) {
        const struct sv_planner_place_rule *r = &pl->rules[k];
        if (r->blocks[0]) {
            g_autofree int32_t *hits = g_new0(int32_t, (size_t)MAX(num_layers, 1));
            g_autofree char *bp = g_strdup_printf("%s.blocks", r->path);
            if (!parse_blocks(r->blocks, bp, num_layers, mark_block, hits, error))
                goto fail;
            for (int32_t l = 0; l < num_layers; l++) {
                if (!hits[l])
                    continue;
                if (owner[l] >= 0) {
                    sv_planner__path_error(error, bp, "block %d is also in %s", l,
                                           pl->rules[owner[l]].path);
                    goto fail;
                }
                owner[l] = k;
                if (r->has_weights)
                    out->layer_weights[l] = r->weights;
                if (r->has_kv)
                    out->layer_kv[l] = r->kv;
            }
        } else if (r->layer[0] && r->has_weights) {
            struct sv_planner_loc *dst = strcmp(r->layer, "embedding") == 0 ? &out->embedding
                                         : strcmp(r->layer, "lm_head") == 0 ? &out->lm_head
                                                                            : &out->final_norm;
            *dst = r->weights;
        }
    }
    out->any_offload = out->embedding.kind != SV_PLANNER_LOC_NPU ||
                       out->final_norm.kind != SV_PLANNER_LOC_NPU ||
                       out->lm_head.kind != SV_PLANNER_LOC_NPU;
    for (int32_t l = 0; l < num_layers; l++)
        out->any_offload = out->any_offload || out->layer_weights[l].kind != SV_PLANNER_LOC_NPU ||
                           out->layer_kv[l].kind != SV_PLANNER_LOC_NPU;
    return TRUE;
fail:
    sv_planner_placement_map_clear(out);
    return FALSE;
}

void sv_planner_placement_map_clear(struct sv_planner_placement_map *map)
{
    g_free(map->layer_weights);
    g_free(map->layer_kv);
    memset(map, 0, sizeof *map);
}

/* expert_offload {loc, cache_experts} (servesim extension): MoE experts kept in `loc`, at most
 * cache_experts of them per MoE layer per rank cached in HBM. */
static gboolean parse_expert_offload(JsonObject *o, const char *where, int32_t n_cxl,
                                     struct sv_planner_instance_cfg *ic, GError **error)
{
    ic->cache_experts = -1;
    JsonNode *n = json_object_get_member(o, "expert_offload");
    if (!n || JSON_NODE_HOLDS_NULL(n))
        return TRUE;
    g_autofree char *w = g_strdup_printf("%s.expert_offload", where);
    if (!JSON_NODE_HOLDS_OBJECT(n))
        return sv_planner__path_error(error, w, "must be an object");
    JsonObject *eo = json_node_get_object(n);
    static const char *const keys[] = {"loc", "cache_experts", NULL};
    sv_planner__warn_unknown(eo, keys, w);
    gboolean given;
    int64_t cache;
    if (!parse_loc(eo, "loc", w, LOC_EXPERTS, n_cxl, &ic->expert_loc, &given, error) ||
        !get_int(eo, "cache_experts", w, -1, RANGE_EXPERTS, &cache, error))
        return FALSE;
    if (!given)
        return bad(error, w, "loc", "missing (\"cpu\" or \"cxl:N\")");
    ic->expert_offload = TRUE;
    ic->cache_experts = (int32_t)cache;
    g_strlcpy(ic->expert_path, w, sizeof ic->expert_path);
    return TRUE;
}

/* LLMServingSim's cxl_mem (docs/reference/cluster-config.md): per device mem_size GiB, mem_bw
 * GB/s, mem_latency ns, num_devices (default 1); scope (top level only) and ideal: servesim. */
static const char *const cxl_keys[] = {"mem_size", "mem_bw", "mem_latency", "num_devices",
                                       "scope",    "ideal",  NULL};
static gboolean parse_cxl(JsonObject *parent, const char *where, gboolean top,
                          struct sv_planner_tier_cfg *t, sv_planner_cxl_scope *scope,
                          GError **error)
{
    memset(t, 0, sizeof *t);
    JsonObject *o = get_obj(parent, "cxl_mem", where, FALSE, error);
    if (!o)
        return !(error && *error);
    g_autofree char *w = g_strdup_printf("%s%scxl_mem", where, top ? ": " : ".");
    sv_planner__warn_unknown(o, cxl_keys, w);
    int64_t nd;
    int ideal;
    char sc[16];
    if (!get_num(o, "mem_size", w, TRUE, 0, SV_RANGE_GIB_POS, &t->size_gib, error) ||
        !get_num(o, "mem_bw", w, TRUE, 0, SV_RANGE_BW_GBPS, &t->bw_gbps, error) ||
        !get_num(o, "mem_latency", w, FALSE, 0, SV_RANGE_LATENCY_NS, &t->latency_ns, error) ||
        !get_int(o, "num_devices", w, 1, RANGE_CXL_DEVICES, &nd, error) ||
        !get_bool(o, "ideal", w, &ideal, error) ||
        !get_str(o, "scope", w, FALSE, sc, sizeof sc, error))
        return FALSE;
    t->write_gbps = t->bw_gbps;
    t->num_devices = (int32_t)nd;
    t->ideal = ideal == 1;
    t->set = TRUE;
    if (sc[0] && !top)
        return bad(error, w, "scope", "only the top-level cxl_mem has a scope");
    if (top) {
        if (!sc[0] || strcmp(sc, "node") == 0)
            *scope = SV_PLANNER_CXL_NODE;
        else if (strcmp(sc, "cluster") == 0)
            *scope = SV_PLANNER_CXL_CLUSTER;
        else
            return bad(error, w, "scope", "must be \"node\" or \"cluster\"");
    }
    return TRUE;
}

/* PCIe between host and each NPU (servesim extension). bw 0 = the hardware's default
 * (planner/tiers.c). */
static gboolean parse_pcie(JsonObject *node, const char *where, struct sv_planner_pcie_cfg *p,
                           GError **error)
{
    memset(p, 0, sizeof *p);
    JsonObject *o = get_obj(node, "pcie", where, FALSE, error);
    if (!o)
        return !(error && *error);
    g_autofree char *w = g_strdup_printf("%s.pcie", where);
    static const char *const keys[] = {"bw_gbps", "latency_ns", "ideal", NULL};
    sv_planner__warn_unknown(o, keys, w);
    int ideal;
    if (!get_num(o, "bw_gbps", w, FALSE, 0, SV_RANGE_BW_GBPS, &p->bw_gbps, error) ||
        !get_num(o, "latency_ns", w, FALSE, 0, SV_RANGE_LATENCY_NS, &p->latency_ns, error) ||
        !get_bool(o, "ideal", w, &ideal, error))
        return FALSE;
    p->ideal = ideal == 1;
    p->set = TRUE;
    return TRUE;
}

/* Node SSD (servesim extension). Defaults: Samsung PM9A3 U.2 3.84 TB datasheet: 3.84e12 B =
 * 3576 GiB, sequential read 6,900 MB/s, sequential write 4,100 MB/s. Latency 80,000 ns: a typical
 * datacenter NVMe 4 KiB QD1 random read (70-90 us); the PM9A3 sheet states no QD1 latency, so this
 * one is an assumption. queue_depth 32: transfers in service per device (NVMe queue). */
#define SSD_DEFAULT_GIB 3576.0
#define SSD_DEFAULT_READ_GBPS 6.9
#define SSD_DEFAULT_WRITE_GBPS 4.1
#define SSD_DEFAULT_LATENCY_NS 80000.0
#define SSD_DEFAULT_QUEUE_DEPTH 32
static gboolean parse_storage(JsonObject *node, const char *where, struct sv_planner_tier_cfg *t,
                              GError **error)
{
    *t = (struct sv_planner_tier_cfg){.size_gib = SSD_DEFAULT_GIB,
                                      .bw_gbps = SSD_DEFAULT_READ_GBPS,
                                      .write_gbps = SSD_DEFAULT_WRITE_GBPS,
                                      .latency_ns = SSD_DEFAULT_LATENCY_NS,
                                      .num_devices = 1,
                                      .queue_depth = SSD_DEFAULT_QUEUE_DEPTH};
    if (!node)
        return TRUE;
    JsonObject *o = get_obj(node, "storage", where, FALSE, error);
    if (!o)
        return !(error && *error);
    g_autofree char *w = g_strdup_printf("%s.storage", where);
    static const char *const keys[] = {"mem_size",    "read_bw",     "write_bw", "mem_latency",
                                       "queue_depth", "num_devices", "ideal",    NULL};
    sv_planner__warn_unknown(o, keys, w);
    int64_t qd, nd;
    int ideal;
    if (!get_num(o, "mem_size", w, FALSE, SSD_DEFAULT_GIB, SV_RANGE_GIB_POS, &t->size_gib, error) ||
        !get_num(o, "read_bw", w, FALSE, SSD_DEFAULT_READ_GBPS, SV_RANGE_BW_GBPS, &t->bw_gbps,
                 error) ||
        !get_num(o, "write_bw", w, FALSE, SSD_DEFAULT_WRITE_GBPS, SV_RANGE_BW_GBPS, &t->write_gbps,
                 error) ||
        !get_num(o, "mem_latency", w, FALSE, SSD_DEFAULT_LATENCY_NS, SV_RANGE_LATENCY_NS,
                 &t->latency_ns, error) ||
        !get_int(o, "queue_depth", w, SSD_DEFAULT_QUEUE_DEPTH, RANGE_QUEUE_DEPTH, &qd, error) ||
        !get_int(o, "num_devices", w, 1, RANGE_CXL_DEVICES, &nd, error) ||
        !get_bool(o, "ideal", w, &ideal, error))
        return FALSE;
    t->queue_depth = (int32_t)qd;
    t->num_devices = (int32_t)nd;
    t->ideal = ideal == 1;
    t->set = TRUE;
    return TRUE;
}

const struct sv_planner_tier_cfg *sv_planner_cluster_cxl(const struct sv_planner_cluster_cfg *c,
                                                         int32_t node)
{
    if (node >= 0 && node < c->n_nodes && c->nodes[node].cxl.set)
        return &c->nodes[node].cxl;
    return c->cxl.set ? &c->cxl : NULL;
}

/* The top-level run flags (same names as the command line's, with '_'). */
static gboolean parse_tier_flags(JsonObject *top, const char *where,
                                 struct sv_planner_tier_flags *f, GError **error)
{
    sv_planner_tier_flags_init(f);
    static const struct {
        const char *key;
        size_t off, size;
    } strs[] = {
#define F(k)                                                                                       \
    {#k, G_STRUCT_OFFSET(struct sv_planner_tier_flags, k),                                         \
     sizeof(((struct sv_planner_tier_flags *)0)->k)}
        F(preemption_mode), F(prefix_storage),  F(prefix_pool),     F(prefix_write),
        F(prefix_evict),    F(offload_overlap), F(kv_load_overlap), F(memory_model),
#undef F
    };
    for (size_t i = 0; i < G_N_ELEMENTS(strs); i++) {
        char *dst = (char *)f + strs[i].off;
        if (!get_str(top, strs[i].key, where, FALSE, dst, strs[i].size, error))
            return FALSE;
        if (dst[0]) {
            g_autofree char *p = g_strdup_printf("%s: %s", where, strs[i].key);
            if (!sv_planner_tier_flag_check(strs[i].key, dst, p, error))
                return FALSE;
        }
    }
    return get_bool(top, "enable_prefix_sharing", where, &f->enable_prefix_sharing, error) &&
           get_int(top, "prefix_chunk_tokens", where, -1, SV_RANGE_TOKENS, &f->prefix_chunk_tokens,
                   error);
}

/* Per-instance switches of LLMServingSim (docs/reference/cluster-config.md, runtime overrides;
 * docs/pim.md): attention on PIM, interleaved sub-batches, local weight loads. Unset = -1. */
static gboolean read_offload_flags(JsonObject *inst, const char *where,
                                   struct sv_planner_instance_cfg *ic, GError **error)
{
    return get_bool(inst, "enable_attn_offloading", where, &ic->enable_attn_offloading, error) &&
           get_bool(inst, "enable_sub_batch_interleaving", where,
                    &ic->enable_sub_batch_interleaving, error) &&
           get_bool(inst, "enable_local_offloading", where, &ic->enable_local_offloading, error);
}

static const char *const level_keys[] = {"kind", "bw_gbps", "latency_ns", NULL};

/* A network level (node "topology", cluster "fabric"; docs/cluster-network.md). "nvlink"
 * (NVSwitch) and "pcie" (a PCIe switch) are switch levels under other names. */
static gboolean parse_level(JsonObject *parent, const char *key, const char *where,
                            struct sv_planner_net_level_cfg *out, GError **error)
{
    out->set = FALSE;
    out->latency_ns = -1;
    JsonNode *n = json_object_get_member(parent, key);
    if (!n || JSON_NODE_HOLDS_NULL(n))
        return TRUE;
    g_autofree char *w = g_strdup_printf("%s.%s", where, key);
    if (!JSON_NODE_HOLDS_OBJECT(n)) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID, "%s: must be an object", w);
        return FALSE;
    }
    JsonObject *o = json_node_get_object(n);
    sv_planner__warn_unknown(o, level_keys, w);
    char kind[32];
    if (!get_str(o, "kind", w, TRUE, kind, sizeof kind, error))
        return FALSE;
    static const struct {
        const char *name;
        sv_net_topo_kind kind;
    } kinds[] = {
        {"ring", SV_NET_TOPO_RING},     {"fully_connected", SV_NET_TOPO_FULLY_CONNECTED},
        {"switch", SV_NET_TOPO_SWITCH}, {"nvlink", SV_NET_TOPO_SWITCH},
        {"pcie", SV_NET_TOPO_SWITCH},   {"fullyconnected", SV_NET_TOPO_FULLY_CONNECTED},
    };
    gboolean found = FALSE;
    for (size_t i = 0; i < G_N_ELEMENTS(kinds); i++) {
        if (g_ascii_strcasecmp(kind, kinds[i].name) == 0) {
            out->kind = kinds[i].kind;
            found = TRUE;
        }
    }
    if (!found)
        return bad(error, w, "kind",
                   "must be \"ring\", \"fully_connected\", \"switch\", \"nvlink\" or \"pcie\"");
    if (!get_num(o, "bw_gbps", w, FALSE, 0, SV_RANGE_BW_GBPS, &out->bw_gbps, error) ||
        !get_num(o, "latency_ns", w, FALSE, -1, SV_RANGE_LATENCY_NS, &out->latency_ns, error))
        return FALSE;
    out->set = TRUE;
    return TRUE;
}

/* "fabric": a level, or an explicit graph (planner/fabric_graph.c), not both. */
static gboolean parse_fabric(JsonObject *top, const char *where, struct sv_planner_cluster_cfg *c,
                             GError **error)
{
    JsonNode *n = json_object_get_member(top, "fabric");
    if (!n || !JSON_NODE_HOLDS_OBJECT(n) ||
        !json_object_has_member(json_node_get_object(n), "graph"))
        return parse_level(top, "fabric", where, &c->fabric, error);
    JsonObject *o = json_node_get_object(n);
    if (json_object_get_size(o) > 1)
        return bad(error, where, "fabric",
                   "give either \"graph\" or a level (kind, bw_gbps, "
                   "latency_ns), not both");
    g_autofree char *w = g_strdup_printf("%s: fabric.graph", where);
    return sv_planner__fabric_graph_parse(json_object_get_member(o, "graph"), w, &c->fabric_graph,
                                          error);
}

/* link_bw / link_latency as an array: one value per network dimension, each in `r`. */
static gboolean get_dims(JsonObject *o, const char *key, const char *where,
                         struct sv_range_double r, double *vals, int32_t *n_out, GError **error)
{
    JsonNode *n = json_object_get_member(o, key);
    *n_out = 0;
    if (!n || !JSON_NODE_HOLDS_ARRAY(n))
        return TRUE;
    JsonArray *a = json_node_get_array(n);
    guint len = json_array_get_length(a);
    if (len > SV_NET_MAX_DIMS)
        return bad(error, where, key, "has more values than network dimensions (8)");
    for (guint i = 0; i < len; i++) {
        JsonNode *e = json_array_get_element(a, i);
        double v;
        if (!sv_cfg_node_double(e, &v))
            return bad(error, where, key, "must be a number or an array of numbers");
        g_autofree char *k = g_strdup_printf("%s[%u]", key, i);
        if (!in_range_d(where, k, v, r, error))
            return FALSE;
        vals[i] = v;
    }
    *n_out = (int32_t)len;
    return TRUE;
}

/* LLMServingSim 1.0 keys (decision 10): npu_num = num_npus, npu_group = pp_size (its trace
 * header model_parallel_NPU_group); both spellings with different values is an error. */
static gboolean alias_int(JsonObject *o, const char *alias, const char *key, const char *where,
                          int64_t unset, int64_t *val, GError **error)
{
    int64_t a;
    if (!get_int(o, alias, where, -1, SV_RANGE_DEVICES, &a, error))
        return FALSE;
    if (a < 0)
        return TRUE;
    if (json_object_has_member(o, key) && *val != a) {
        g_autofree char *p = g_strdup_printf("%s.%s", where, alias);
        return sv_planner__path_error(
            error, p, "%" G_GINT64_FORMAT " but %s.%s is %" G_GINT64_FORMAT, a, where, key, *val);
    }
    (void)unset;
    *val = a;
    return TRUE;
}

static gboolean parse_instance(JsonObject *o, const char *where, struct sv_planner_instance_cfg *ic,
                               int32_t n_cxl, GError **error)
{
    sv_planner__warn_unknown(o, inst_keys, where);
    if (!sv_planner__spec_parse(o, where, ic, error))
        return FALSE;
    if (!parse_placement(o, where, n_cxl, &ic->placement, error) ||
        !parse_expert_offload(o, where, n_cxl, ic, error) ||
        !read_offload_flags(o, where, ic, error))
        return FALSE;
    if (!get_str(o, "model_name", where, TRUE, ic->model_name, sizeof ic->model_name, error) ||
        !get_str(o, "hardware", where, TRUE, ic->hardware, sizeof ic->hardware, error))
        return FALSE;
    GError *e = NULL;
    JsonObject *mem = get_obj(o, "npu_mem", where, TRUE, &e);
    if (!mem) {
        g_propagate_error(error, e);
        return FALSE;
    }
    g_autofree char *mw = g_strdup_printf("%s.npu_mem", where);
    sv_planner__warn_unknown(mem, mem_keys, mw);
    if (!get_num(mem, "mem_size", mw, TRUE, 0, RANGE_NPU_GIB, &ic->npu_mem_gib, error) ||
        !get_num(mem, "mem_bw", mw, FALSE, 0, SV_RANGE_BW_GBPS_OR_0, &ic->npu_mem_bw_gbps, error) ||
        !get_num(mem, "mem_latency", mw, FALSE, 0, SV_RANGE_LATENCY_NS, &ic->npu_mem_latency_ns,
                 error))
        return FALSE;
    if (!get_num(mem, "mem_util", mw, FALSE, DEFAULT_MEM_UTIL, SV_RANGE_FRACTION, &ic->mem_util,
                 error))
        return hint(error, "a fraction of mem_size: 0.9, not 90");
    int64_t pp, tp, npus, ep;
    if (!get_int(o, "pp_size", where, 1, SV_RANGE_DEVICES, &pp, error) ||
        !get_int(o, "tp_size", where, 0, SV_RANGE_DEVICES, &tp, error) ||
        !get_int(o, "num_npus", where, 0, SV_RANGE_DEVICES, &npus, error) ||
        !get_int(o, "ep_size", where, 1, SV_RANGE_DEVICES, &ep, error) ||
        !alias_int(o, "npu_num", "num_npus", where, 0, &npus, error) ||
        !alias_int(o, "npu_group", "pp_size", where, 1, &pp, error))
        return FALSE;
    /* Defaults per the docs: num_npus = tp x pp, tp = num_npus / pp; neither given: tp 1. */
    if (tp == 0 && npus == 0)
        tp = 1;
    if (tp == 0) {
        if (npus % pp != 0)
            return bad(error, where, "num_npus", "must be a multiple of pp_size");
        tp = npus / pp;
    }
    if (npus == 0) {
        /* tp x pp <= 2^32: in int64; its range is the instance's NPUs' */
        npus = tp * pp;
        if (!in_range_i(where, "tp_size x pp_size", npus, SV_RANGE_DEVICES, error))
            return FALSE;
    }
    if (npus < tp * pp)
        return bad(error, where, "num_npus", "must be at least tp_size x pp_size");
    ic->tp_size = (int32_t)tp;
    ic->pp_size = (int32_t)pp;
    ic->num_npus = (int32_t)npus;
    ic->ep_size = (int32_t)ep;
    if (!sv_planner__stages_parse(o, where, ic, error)) /* heterogeneous stages (stages.c) */
        return FALSE;
    if (!get_str(o, "dp_group", where, FALSE, ic->dp_group, sizeof ic->dp_group, error))
        return FALSE;
    char pd_type[16];
    if (!get_str(o, "pd_type", where, FALSE, pd_type, sizeof pd_type, error))
        return FALSE;
    if (!pd_type[0])
        ic->role = SV_MSG_ROLE_BOTH;
    else if (strcmp(pd_type, "prefill") == 0)
        ic->role = SV_MSG_ROLE_PREFILL;
    else if (strcmp(pd_type, "decode") == 0)
        ic->role = SV_MSG_ROLE_DECODE;
    else
        return bad(error, where, "pd_type", "must be \"prefill\", \"decode\" or null");
    if (!sv_planner__read_quant(o, where, ic, error)) /* dtype, kv_cache_dtype */
        return FALSE;
    if (!get_int(o, "max_num_seqs", where, -1, RANGE_SEQS, &ic->max_num_seqs, error) ||
        !get_int(o, "max_num_batched_tokens", where, -1, RANGE_BUDGET, &ic->max_num_batched_tokens,
                 error) ||
        !get_int(o, "long_prefill_token_threshold", where, -1, RANGE_BUDGET,
                 &ic->long_prefill_token_threshold, error) ||
        !get_int(o, "block_size", where, -1, RANGE_BLOCK, &ic->block_size, error) ||
        !get_bool(o, "enable_prefix_caching", where, &ic->enable_prefix_caching, error) ||
        !get_bool(o, "enable_chunked_prefill", where, &ic->enable_chunked_prefill, error) ||
        !get_bool(o, "reserve_full_isl", where, &ic->reserve_full_isl, error) ||
        !get_int(o, "max_model_len", where, -1, SV_RANGE_TOKENS, &ic->max_model_len, error))
        return FALSE;
    /* DVFS (docs/power.md): a fraction of the nominal clock. */
    if (!get_num(o, "gpu_clock", where, FALSE, 0, SV_RANGE_FRACTION, &ic->gpu_clock, error))
        return hint(error, "a fraction of the clock: 0.7");
    return sv_planner__afd_parse(o, where, ic, error); /* attention/FFN disaggregation (afd.c) */
}

struct sv_planner_cluster_cfg *sv_planner_cluster_from_json(JsonNode *root, const char *where,
                                                            GError **error)
{
    if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                    "%s: the cluster config must be a JSON object", where);
        return NULL;
    }
    JsonObject *top = json_node_get_object(root);
    sv_planner__warn_unknown(top, top_keys, where);
    struct sv_planner_cluster_cfg *c = g_new0(struct sv_planner_cluster_cfg, 1);
    g_strlcpy(c->where, where, sizeof c->where);
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    /* Devices only: what lives there is decided by placement (per instance). */
    if (!parse_cxl(top, where, TRUE, &c->cxl, &c->cxl_scope, error) ||
        !parse_tier_flags(top, where, &c->tier_flags, error))
        goto fail;
    int64_t num_nodes;
    if (!get_num(top, "link_bw", where, FALSE, 0, SV_RANGE_BW_GBPS, &c->link_bw_gbps, error) ||
        !get_num(top, "link_latency", where, FALSE, 0, SV_RANGE_LATENCY_NS, &c->link_latency_ns,
                 error) ||
        !get_int(top, "num_nodes", where, -1, RANGE_NODES, &num_nodes, error) ||
        !get_dims(top, "link_bw", where, SV_RANGE_BW_GBPS, c->link_bw_dims, &c->n_link_bw, error) ||
        !get_dims(top, "link_latency", where, SV_RANGE_LATENCY_NS, c->link_latency_dims,
                  &c->n_link_latency, error) ||
        !parse_fabric(top, where, c, error) ||
        !get_str(top, "network_model", where, FALSE, c->network_model, sizeof c->network_model,
                 error) ||
        !get_str(top, "kv_transfer", where, FALSE, c->kv_transfer, sizeof c->kv_transfer, error) ||
        !get_num(top, "slo_ttft_ms", where, FALSE, 0, RANGE_SLO_MS, &c->slo_ttft_ms, error) ||
        !get_str(top, "engine", where, FALSE, c->engine, sizeof c->engine, error))
        goto fail;
    c->link_latency_given = json_object_has_member(top, "link_latency");
    sv_msg_engine_kind engine;
    if (c->engine[0] && !sv_msg_engine_parse(c->engine, &engine, NULL)) {
        bad(error, where, "engine", "must be \"vllm-0.19\" or \"vllm-0.10\"");
        goto fail;
    }
    /* A config naming an engine describes that engine's deployment: its batch defaults apply
     * (docs/serving.md "Engine profiles"); without the key it is LLMServingSim's. */
    c->vllm_batch_defaults = c->engine[0] != '\0';
    sv_planner_pd_kv_mode kv_mode;
    if (c->kv_transfer[0] && !sv_planner_pd_kv_mode_parse(c->kv_transfer, &kv_mode, NULL)) {
        bad(error, where, "kv_transfer", "must be \"whole\" or \"per_layer\"");
        goto fail;
    }
    JsonNode *nn = json_object_get_member(top, "nodes");
    if (!nn || !JSON_NODE_HOLDS_ARRAY(nn) || json_array_get_length(json_node_get_array(nn)) == 0) {
        bad(error, where, "nodes", "must be a non-empty array");
        goto fail;
    }
    JsonArray *nodes = json_node_get_array(nn);
    guint n_nodes = json_array_get_length(nodes);
    if (num_nodes >= 0 && (guint)num_nodes != n_nodes) {
        g_autofree char *msg =
            g_strdup_printf("is %" G_GINT64_FORMAT " but nodes has %u entries", num_nodes, n_nodes);
        bad(error, where, "num_nodes", msg);
        goto fail;
    }
    c->n_nodes = (int32_t)n_nodes;
    c->nodes = g_new0(struct sv_planner_node_cfg, n_nodes);
    GArray *insts = g_array_new(FALSE, TRUE, sizeof(struct sv_planner_instance_cfg));
    for (guint ni = 0; ni < n_nodes; ni++) {
        g_autofree char *nw = g_strdup_printf("%s: nodes[%u]", where, ni);
        JsonNode *node = json_array_get_element(nodes, ni);
        if (!JSON_NODE_HOLDS_OBJECT(node)) {
            g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID, "%s: must be an object",
                        nw);
            goto fail_insts;
        }
        JsonObject *no = json_node_get_object(node);
        sv_planner__warn_unknown(no, node_keys, nw);
        if (!parse_level(no, "topology", nw, &c->nodes[ni].topology, error))
            goto fail_insts;
        if (json_object_has_member(no, "power")) {
            /* Energy accounting only: no effect on the timeline (docs/power.md). */
            if (!sv_power_node_cfg_read(&c->nodes[ni].power, no, nw, error))
                goto fail_insts;
            c->nodes[ni].has_power = TRUE;
        }
        JsonObject *cpu = get_obj(no, "cpu_mem", nw, FALSE, error);
        if (!cpu && error && *error)
            goto fail_insts;
        if (cpu) {
            g_autofree char *cw = g_strdup_printf("%s.cpu_mem", nw);
            sv_planner__warn_unknown(cpu, cpu_keys, cw);
            int ideal;
            if (!get_bool(cpu, "ideal", cw, &ideal, error))
                goto fail_insts;
            c->nodes[ni].cpu_mem_ideal = ideal == 1;
            /* The node's PIM device (docs/pim.md): used by instances with attention offload;
             * alone it changes nothing (LLMServingSim only rewrites cpu_mem's bandwidth, which
             * the run does not use without it). */
            if (!get_str(cpu, "pim_config", cw, FALSE, c->nodes[ni].pim_config,
                         sizeof c->nodes[ni].pim_config, error))
                goto fail_insts;
            if (!get_num(cpu, "mem_size", cw, FALSE, 0, SV_RANGE_GIB, &c->nodes[ni].cpu_mem_gib,
                         error) ||
                !get_num(cpu, "mem_bw", cw, FALSE, 0, SV_RANGE_BW_GBPS_OR_0,
                         &c->nodes[ni].cpu_mem_bw_gbps, error) ||
                !get_num(cpu, "mem_latency", cw, FALSE, 0, SV_RANGE_LATENCY_NS,
                         &c->nodes[ni].cpu_mem_latency_ns, error))
                goto fail_insts;
        }
        if (!parse_cxl(no, nw, FALSE, &c->nodes[ni].cxl, NULL, error) ||
            !parse_pcie(no, nw, &c->nodes[ni].pcie, error) ||
            !parse_storage(no, nw, &c->nodes[ni].storage, error))
            goto fail_insts;
        const struct sv_planner_tier_cfg *cxl = sv_planner_cluster_cxl(c, (int32_t)ni);
        int32_t n_cxl = cxl ? cxl->num_devices : 0;
        JsonNode *in = json_object_get_member(no, "instances");
        if (!in || !JSON_NODE_HOLDS_ARRAY(in) ||
            json_array_get_length(json_node_get_array(in)) == 0) {
            bad(error, nw, "instances", "must be a non-empty array");
            goto fail_insts;
        }
        JsonArray *ia = json_node_get_array(in);
        int64_t num_inst;
        if (!get_int(no, "num_instances", nw, -1, RANGE_NODES, &num_inst, error))
            goto fail_insts;
        if (num_inst >= 0 && (guint)num_inst != json_array_get_length(ia)) {
            bad(error, nw, "num_instances", "does not match the length of instances");
            goto fail_insts;
        }
        for (guint ii = 0; ii < json_array_get_length(ia); ii++) {
            g_autofree char *iw = g_strdup_printf("%s.instances[%u]", nw, ii);
            JsonNode *inode = json_array_get_element(ia, ii);
            if (!JSON_NODE_HOLDS_OBJECT(inode)) {
                g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                            "%s: must be an object", iw);
                goto fail_insts;
            }
            struct sv_planner_instance_cfg ic = {0};
            ic.node = (int32_t)ni;
            ic.index = (int32_t)insts->len;
            gboolean ok = parse_instance(json_node_get_object(inode), iw, &ic, n_cxl, error);
            g_array_append_val(insts, ic); /* freed with the config, also on failure */
            if (!ok)
                goto fail_insts;
        }
    }
    c->n_instances = (int32_t)insts->len;
    c->instances = (struct sv_planner_instance_cfg *)(void *)g_array_free(insts, FALSE);
    /* LLMServingSim's config_builder turns the power model off unless every node has a power
     * block; servesim does the same, and says so. */
    int32_t n_power = 0, first_without = -1;
    for (int32_t ni = 0; ni < c->n_nodes; ni++) {
        n_power += c->nodes[ni].has_power;
        if (!c->nodes[ni].has_power && first_without < 0)
            first_without = ni;
    }
    c->power = n_power == c->n_nodes;
    if (!sv_planner__fabric_graph_check(c, error) || !sv_planner__afd_groups(c, error))
        goto fail;
    if (n_power > 0 && !c->power) {
        g_ptr_array_add(notes, g_strdup_printf("%s: nodes[%d]: no power block: the power model "
                                               "needs one on every node (it is off)",
                                               where, first_without));
        for (int32_t ni = 0; ni < c->n_nodes; ni++) {
            sv_power_node_cfg_clear(&c->nodes[ni].power);
            c->nodes[ni].has_power = FALSE;
        }
    }
    if (notes->len > 0) {
        g_ptr_array_add(notes, NULL);
        c->unsupported = (char **)g_ptr_array_steal(notes, NULL);
    }
    return c;
fail_insts:
    for (guint i = 0; i < insts->len; i++) {
        g_free(g_array_index(insts, struct sv_planner_instance_cfg, i).placement.rules);
        g_free(g_array_index(insts, struct sv_planner_instance_cfg, i).stages);
    }
    g_array_free(insts, TRUE);
fail:
    sv_planner_cluster_free(c);
    return NULL;
}

struct sv_planner_cluster_cfg *sv_planner_cluster_load(const char *path, GError **error)
{
    GError *e = NULL;
    JsonNode *root = sv_cfg_load_json(path, &e);
    if (!root) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_IO, "%s", e->message);
        g_error_free(e);
        return NULL;
    }
    g_autofree char *base = g_path_get_basename(path);
    struct sv_planner_cluster_cfg *c = sv_planner_cluster_from_json(root, base, error);
    json_node_unref(root);
    return c;
}

void sv_planner__storage_defaults(struct sv_planner_tier_cfg *t)
{
    parse_storage(NULL, NULL, t, NULL);
}

double sv_planner_cluster_link_latency_ns(const struct sv_planner_cluster_cfg *c, int dim)
{
    if (c->n_link_latency > 0)
        return c->link_latency_dims[MIN(dim, c->n_link_latency - 1)];
    if (c->link_latency_given)
        return c->link_latency_ns;
    /* Not given: the hardware's scale-up hop (compute/hardware.json link_latency_ns), the largest
     * over the instances, so a mixed cluster never gets a hop faster than its slowest device. */
    double lat = 0;
    /* One catalog for the loop (the built-in one is parsed once, not per instance). */
    g_autoptr(sv_compute_hw_catalog) builtin = NULL;
    const sv_compute_hw_catalog *cat = c->hw_catalog;
    if (!cat)
        cat = builtin = sv_compute_hw_catalog_new();
    for (int32_t i = 0; i < c->n_instances; i++) {
        struct sv_compute_hw_cfg hw;
        if (sv_compute_hw_catalog_lookup(cat, c->instances[i].hardware, &hw, NULL))
            lat = MAX(lat, hw.link_latency_ns);
    }
    return lat;
}

void sv_planner_cluster_free(struct sv_planner_cluster_cfg *cfg)
{
    if (!cfg)
        return;
    for (int32_t ni = 0; cfg->nodes && ni < cfg->n_nodes; ni++)
        sv_power_node_cfg_clear(&cfg->nodes[ni].power);
    g_free(cfg->nodes);
    for (int32_t i = 0; cfg->instances && i < cfg->n_instances; i++) {
        g_free(cfg->instances[i].placement.rules);
        g_free(cfg->instances[i].stages);
    }
    g_free(cfg->instances);
    g_strfreev(cfg->unsupported);
    sv_planner__fabric_graph_free(cfg->fabric_graph);
    g_free(cfg);
}
