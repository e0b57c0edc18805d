/* LLMServingSim's cluster config, read as it is (docs/reference/cluster-config.md of the reference
 * copy in ../shared/reference/llmservingsim). Unknown keys warn with their path; bad values fail
 * with it. */
#include "planner/planner.h"

#include <math.h>
#include <string.h>

GQuark sv_planner_error_quark(void)
{
    return g_quark_from_static_string("servesim-planner-error-quark");
}

/* vLLM's gpu_memory_utilization default (vllm/config/cache.py) and LLMServingSim's
 * --npu-memory-utilization default. */
#define DEFAULT_MEM_UTIL 0.9

static const char *const top_keys[] = {"num_nodes",   "link_bw", "link_latency",  "nodes",
                                       "cxl_mem",     "fabric",  "network_model", "kv_transfer",
                                       "slo_ttft_ms", NULL};
static const char *const node_keys[] = {"num_instances", "cpu_mem",  "instances",
                                        "power",         "topology", NULL};
static const char *const mem_keys[] = {"mem_size",   "mem_bw",      "mem_latency", "mem_util",
                                       "pim_config", "num_devices", NULL};
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
                                        NULL};

static void warn_unknown(JsonObject *obj, const char *const *known, const char *where)
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

/* A number, or the first element of an array of numbers (per-dimension link values). */
static gboolean get_num(JsonObject *o, const char *key, const char *where, gboolean required,
                        double dflt, gboolean positive, double *out, GError **error)
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
    if (v < 0 || (positive && v <= 0))
        return bad(error, where, key,
                   positive ? "must be a positive number" : "must be a non-negative number");
    *out = v;
    return TRUE;
}

static gboolean get_int(JsonObject *o, const char *key, const char *where, int64_t dflt,
                        int64_t min, int64_t *out, GError **error)
{
    JsonNode *n = json_object_get_member(o, key);
    if (!n || JSON_NODE_HOLDS_NULL(n)) {
        *out = dflt;
        return TRUE;
    }
    int64_t v;
    if (!sv_cfg_node_int(n, &v) || v < min) {
        g_autofree char *msg = g_strdup_printf("must be an integer >= %" G_GINT64_FORMAT, min);
        return bad(error, where, key, msg);
    }
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

/* ---- features of the memory-tier / power / PIM work (not yet modeled) ----------------------
 *
 * Each key is either ignored with one note in cfg->unsupported (what the run models without it
 * is still the deployment the config describes, or the note says how it differs) or an error when
 * ignoring it would leave the timings meaningless (work or weights moved off the NPU).
 * docs/reference-configs.md lists the decisions. */

static void note_ignored(GPtrArray *notes, const char *path, const char *feature)
{
    g_ptr_array_add(notes, g_strdup_printf("%s: %s is not yet supported (ignored)", path, feature));
}

static gboolean unsupported(GError **error, const char *path, const char *feature)
{
    g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID, "%s: %s is not yet supported",
                path, feature);
    return FALSE;
}

/* One placement rule ({"weights", "kv_loc", "kv_evict_loc"}; LLMServingSim's
 * docs/examples/memory-tiers/cxl-memory.mdx). Weights or live KV off the NPU change every
 * iteration's time: an error. KV eviction to host memory only matters on preemption, where the
 * run recomputes instead (vLLM's default): noted once per instance. */
/* A placement location; anything but a string reads as "npu" (nothing to refuse). */
static const char *rule_loc(JsonObject *o, const char *key)
{
    JsonNode *v = json_object_get_member(o, key);
    if (!v || !JSON_NODE_HOLDS_VALUE(v) || json_node_get_value_type(v) != G_TYPE_STRING)
        return "npu";
    return json_node_get_string(v);
}

static gboolean check_rule(JsonNode *n, const char *path, gboolean *evict_noted, GPtrArray *notes,
                           GError **error)
{
    if (!JSON_NODE_HOLDS_OBJECT(n)) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID, "%s: must be an object",
                    path);
        return FALSE;
    }
    JsonObject *o = json_node_get_object(n);
    static const char *const locs[] = {"weights", "kv_loc"};
    for (size_t i = 0; i < G_N_ELEMENTS(locs); i++) {
        const char *v = rule_loc(o, locs[i]);
        if (g_ascii_strcasecmp(v, "npu") != 0 && g_ascii_strcasecmp(v, "local") != 0) {
            g_autofree char *p = g_strdup_printf("%s.%s", path, locs[i]);
            g_autofree char *f = g_strdup_printf("%s in \"%s\" (memory-tier placement)",
                                                 i == 0 ? "weights" : "live KV cache", v);
            return unsupported(error, p, f);
        }
    }
    const char *ev = rule_loc(o, "kv_evict_loc");
    if (!*evict_noted && g_ascii_strcasecmp(ev, "npu") != 0 &&
        g_ascii_strcasecmp(ev, "local") != 0) {
        g_autofree char *p = g_strdup_printf("%s.kv_evict_loc", path);
        g_autofree char *f = g_strdup_printf(
            "KV eviction to \"%s\" (host-memory offloading, preempted requests recompute "
            "instead)",
            ev);
        note_ignored(notes, p, f);
        *evict_noted = TRUE;
    }
    return TRUE;
}

static gboolean check_placement(JsonObject *inst, const char *where, GPtrArray *notes,
                                GError **error)
{
    JsonNode *pn = json_object_get_member(inst, "placement");
    if (!pn || JSON_NODE_HOLDS_NULL(pn))
        return TRUE;
    g_autofree char *pw = g_strdup_printf("%s.placement", where);
    if (!JSON_NODE_HOLDS_OBJECT(pn)) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID, "%s: must be an object", pw);
        return FALSE;
    }
    JsonObject *po = json_node_get_object(pn);
    gboolean noted = FALSE;
    JsonNode *d = json_object_get_member(po, "default");
    if (d) {
        g_autofree char *p = g_strdup_printf("%s.default", pw);
        if (!check_rule(d, p, &noted, notes, error))
            return FALSE;
    }
    JsonNode *b = json_object_get_member(po, "blocks");
    if (b && JSON_NODE_HOLDS_ARRAY(b)) {
        JsonArray *a = json_node_get_array(b);
        for (guint i = 0; i < json_array_get_length(a); i++) {
            g_autofree char *p = g_strdup_printf("%s.blocks[%u]", pw, i);
            if (!check_rule(json_array_get_element(a, i), p, &noted, notes, error))
                return FALSE;
        }
    }
    JsonNode *l = json_object_get_member(po, "layers");
    if (l && JSON_NODE_HOLDS_OBJECT(l)) {
        g_autoptr(GList) names = json_object_get_members(json_node_get_object(l));
        names = g_list_sort(names, (GCompareFunc)strcmp); /* deterministic order */
        for (GList *it = names; it; it = it->next) {
            g_autofree char *p = g_strdup_printf("%s.layers.%s", pw, (const char *)it->data);
            if (!check_rule(json_object_get_member(json_node_get_object(l), it->data), p, &noted,
                            notes, error))
                return FALSE;
        }
    }
    return TRUE;
}

/* Per-instance switches of LLMServingSim (docs/reference/cluster-config.md, runtime overrides):
 * each moves work off the NPU (weights offloaded, attention on PIM, sub-batches interleaved
 * with PIM attention), so true is an error; false is what the run models anyway. */
static gboolean check_offload_flags(JsonObject *inst, const char *where, GError **error)
{
    static const struct {
        const char *key, *feature;
    } flags[] = {
        {"enable_local_offloading", "weight offloading to host memory"},
        {"enable_attn_offloading", "attention offloading to PIM"},
        {"enable_sub_batch_interleaving", "sub-batch interleaving with PIM attention"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(flags); i++) {
        int on;
        if (!get_bool(inst, flags[i].key, where, &on, error))
            return FALSE;
        if (on == 1) {
            g_autofree char *p = g_strdup_printf("%s.%s", where, flags[i].key);
            return unsupported(error, p, flags[i].feature);
        }
    }
    return TRUE;
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
    warn_unknown(o, level_keys, w);
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
    if (!get_num(o, "bw_gbps", w, FALSE, 0, TRUE, &out->bw_gbps, error) ||
        !get_num(o, "latency_ns", w, FALSE, -1, FALSE, &out->latency_ns, error))
        return FALSE;
    out->set = TRUE;
    return TRUE;
}

/* link_bw / link_latency as an array: one value per network dimension. */
static gboolean get_dims(JsonObject *o, const char *key, const char *where, gboolean positive,
                         double *vals, int32_t *n_out, GError **error)
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
        if (v < 0 || (positive && v <= 0))
            return bad(error, where, key, "values must be positive numbers");
        vals[i] = v;
    }
    *n_out = (int32_t)len;
    return TRUE;
}

static gboolean parse_instance(JsonObject *o, const char *where, struct sv_planner_instance_cfg *ic,
                               GPtrArray *notes, GError **error)
{
    warn_unknown(o, inst_keys, where);
    if (!check_placement(o, where, notes, error) || !check_offload_flags(o, where, error))
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
    warn_unknown(mem, mem_keys, mw);
    if (!get_num(mem, "mem_size", mw, TRUE, 0, TRUE, &ic->npu_mem_gib, error) ||
        !get_num(mem, "mem_bw", mw, FALSE, 0, FALSE, &ic->npu_mem_bw_gbps, error) ||
        !get_num(mem, "mem_latency", mw, FALSE, 0, FALSE, &ic->npu_mem_latency_ns, error) ||
        !get_num(mem, "mem_util", mw, FALSE, DEFAULT_MEM_UTIL, TRUE, &ic->mem_util, error))
        return FALSE;
    if (ic->mem_util > 1)
        return bad(error, mw, "mem_util",
                   "must be in (0, 1] (a fraction of mem_size: 0.9, not 90)");
    int64_t pp, tp, npus, ep;
    if (!get_int(o, "pp_size", where, 1, 1, &pp, error) ||
        !get_int(o, "tp_size", where, 0, 1, &tp, error) ||
        !get_int(o, "num_npus", where, 0, 1, &npus, error) ||
        !get_int(o, "ep_size", where, 1, 1, &ep, error))
        return FALSE;
    /* Defaults per the docs: num_npus = tp x pp, tp = num_npus / pp. */
    if (tp == 0 && npus == 0)
        tp = npus = pp;
    if (tp == 0) {
        if (npus % pp != 0)
            return bad(error, where, "num_npus", "must be a multiple of pp_size");
        tp = npus / pp;
    }
    if (npus == 0)
        npus = tp * pp;
    if (npus < tp * pp)
        return bad(error, where, "num_npus", "must be at least tp_size x pp_size");
    ic->tp_size = (int32_t)tp;
    ic->pp_size = (int32_t)pp;
    ic->num_npus = (int32_t)npus;
    ic->ep_size = (int32_t)ep;
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
    if (!get_str(o, "dtype", where, FALSE, ic->dtype, sizeof ic->dtype, error))
        return FALSE;
    if (!get_int(o, "max_num_seqs", where, -1, 0, &ic->max_num_seqs, error) ||
        !get_int(o, "max_num_batched_tokens", where, -1, 0, &ic->max_num_batched_tokens, error) ||
        !get_int(o, "long_prefill_token_threshold", where, -1, 0, &ic->long_prefill_token_threshold,
                 error) ||
        !get_int(o, "block_size", where, -1, 1, &ic->block_size, error) ||
        !get_bool(o, "enable_prefix_caching", where, &ic->enable_prefix_caching, error) ||
        !get_bool(o, "enable_chunked_prefill", where, &ic->enable_chunked_prefill, error) ||
        !get_bool(o, "reserve_full_isl", where, &ic->reserve_full_isl, error))
        return FALSE;
    return TRUE;
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
    warn_unknown(top, top_keys, where);
    struct sv_planner_cluster_cfg *c = g_new0(struct sv_planner_cluster_cfg, 1);
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    if (json_object_has_member(top, "cxl_mem")) {
        /* Devices only: what lives there is decided by placement (checked per instance). */
        g_autofree char *p = g_strdup_printf("%s: cxl_mem", where);
        note_ignored(notes, p, "CXL memory expansion");
    }
    int64_t num_nodes;
    if (!get_num(top, "link_bw", where, FALSE, 0, TRUE, &c->link_bw_gbps, error) ||
        !get_num(top, "link_latency", where, FALSE, 0, FALSE, &c->link_latency_ns, error) ||
        !get_int(top, "num_nodes", where, -1, 1, &num_nodes, error) ||
        !get_dims(top, "link_bw", where, TRUE, c->link_bw_dims, &c->n_link_bw, error) ||
        !get_dims(top, "link_latency", where, FALSE, c->link_latency_dims, &c->n_link_latency,
                  error) ||
        !parse_level(top, "fabric", where, &c->fabric, error) ||
        !get_str(top, "network_model", where, FALSE, c->network_model, sizeof c->network_model,
                 error) ||
        !get_str(top, "kv_transfer", where, FALSE, c->kv_transfer, sizeof c->kv_transfer, error) ||
        !get_num(top, "slo_ttft_ms", where, FALSE, 0, FALSE, &c->slo_ttft_ms, error))
        goto fail;
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
        warn_unknown(no, node_keys, nw);
        if (!parse_level(no, "topology", nw, &c->nodes[ni].topology, error))
            goto fail_insts;
        if (json_object_has_member(no, "power")) {
            /* Energy accounting only: no effect on the timeline. */
            g_autofree char *p = g_strdup_printf("%s.power", nw);
            note_ignored(notes, p, "the power model");
        }
        JsonObject *cpu = get_obj(no, "cpu_mem", nw, FALSE, error);
        if (!cpu && error && *error)
            goto fail_insts;
        if (cpu) {
            g_autofree char *cw = g_strdup_printf("%s.cpu_mem", nw);
            warn_unknown(cpu, mem_keys, cw);
            if (json_object_has_member(cpu, "pim_config")) {
                /* The PIM device only runs attention for instances with enable_attn_offloading
                 * (an error, checked per instance); alone it only rewrites cpu_mem's bandwidth
                 * (LLMServingSim docs/reference/pim-config.md), which nothing here uses. */
                g_autofree char *p = g_strdup_printf("%s.pim_config", cw);
                note_ignored(notes, p, "PIM (processing in memory)");
            }
            if (!get_num(cpu, "mem_size", cw, FALSE, 0, FALSE, &c->nodes[ni].cpu_mem_gib, error) ||
                !get_num(cpu, "mem_bw", cw, FALSE, 0, FALSE, &c->nodes[ni].cpu_mem_bw_gbps,
                         error) ||
                !get_num(cpu, "mem_latency", cw, FALSE, 0, FALSE, &c->nodes[ni].cpu_mem_latency_ns,
                         error))
                goto fail_insts;
        }
        JsonNode *in = json_object_get_member(no, "instances");
        if (!in || !JSON_NODE_HOLDS_ARRAY(in) ||
            json_array_get_length(json_node_get_array(in)) == 0) {
            bad(error, nw, "instances", "must be a non-empty array");
            goto fail_insts;
        }
        JsonArray *ia = json_node_get_array(in);
        int64_t num_inst;
        if (!get_int(no, "num_instances", nw, -1, 1, &num_inst, error))
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
            if (!parse_instance(json_node_get_object(inode), iw, &ic, notes, error))
                goto fail_insts;
            g_array_append_val(insts, ic);
        }
    }
    c->n_instances = (int32_t)insts->len;
    c->instances = (struct sv_planner_instance_cfg *)(void *)g_array_free(insts, FALSE);
    if (notes->len > 0) {
        g_ptr_array_add(notes, NULL);
        c->unsupported = (char **)g_ptr_array_steal(notes, NULL);
    }
    return c;
fail_insts:
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

struct sv_planner_cluster_cfg *sv_planner_cluster_single(const char *model, const char *hardware,
                                                         int tp, GError **error)
{
    struct sv_compute_hw_cfg hw;
    if (!sv_compute_hw_lookup(hardware, &hw, error))
        return NULL;
    if (tp < 1) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID, "--tp must be >= 1");
        return NULL;
    }
    struct sv_planner_cluster_cfg *c = g_new0(struct sv_planner_cluster_cfg, 1);
    c->n_nodes = 1;
    c->nodes = g_new0(struct sv_planner_node_cfg, 1);
    c->n_instances = 1;
    c->instances = g_new0(struct sv_planner_instance_cfg, 1);
    /* NVLink-class scale-up link from the hardware catalog for TP all-reduce. */
    c->link_bw_gbps = hw.link_bw_gbps;
    struct sv_planner_instance_cfg *ic = &c->instances[0];
    g_strlcpy(ic->model_name, model, sizeof ic->model_name);
    g_strlcpy(ic->hardware, hw.name, sizeof ic->hardware);
    /* The catalog gives GB (1e9 B); the cluster config's mem_size is read as GiB. */
    ic->npu_mem_gib = hw.mem_gb * 1e9 / (1024.0 * 1024.0 * 1024.0);
    ic->npu_mem_bw_gbps = hw.mem_bw_gbps;
    ic->mem_util = DEFAULT_MEM_UTIL;
    ic->num_npus = tp;
    ic->tp_size = tp;
    ic->pp_size = 1;
    ic->ep_size = 1;
    ic->max_num_seqs = ic->max_num_batched_tokens = ic->long_prefill_token_threshold = -1;
    ic->block_size = -1;
    ic->enable_prefix_caching = ic->enable_chunked_prefill = ic->reserve_full_isl = -1;
    return c;
}

void sv_planner_cluster_free(struct sv_planner_cluster_cfg *cfg)
{
    if (!cfg)
        return;
    g_free(cfg->nodes);
    g_free(cfg->instances);
    g_strfreev(cfg->unsupported);
    g_free(cfg);
}
