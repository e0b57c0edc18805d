/* Heterogeneous pipeline stages (issue 15 item 5; docs/parallelism.md "Heterogeneous pipeline
 * stages"): an instance's stages on different hardware, each timed by its own device's latency
 * model, the KV pool the smallest of the stages' capacities.
 *
 * Config (a servesim extension of LLMServingSim's instance keys):
 *   "pp_size": 2, "stages": [{"hardware": "H100-SXM"}, {"hardware": "A100-80GB", "layers": 12}]
 * The instance's devices are its stages' devices (LLMServingSim's instances own their NPUs; there
 * is no node-level device list to draw from), so a stage's hardware only has to be a device the
 * hardware catalog knows. */
#include "planner/planner_internal.h"

#include <math.h>
#include <string.h>

#define RANGE_STAGE_GIB SV_RANGE_D_OPEN(0, 16384, "GiB")

static const char *const stage_keys[] = {"hardware", "mem_size", "mem_bw", "layers", NULL};

gboolean sv_planner__stages_parse(JsonObject *o, const char *where,
                                  struct sv_planner_instance_cfg *ic, GError **error)
{
    ic->n_stages = 0;
    g_snprintf(ic->stages_where, sizeof ic->stages_where, "%s.stages", where);
    JsonNode *n = json_object_get_member(o, "stages");
    if (!n || JSON_NODE_HOLDS_NULL(n))
        return TRUE;
    const char *path = ic->stages_where;
    if (!JSON_NODE_HOLDS_ARRAY(n))
        return sv_planner__path_error(error, path,
                                      "must be a list of stages ({\"hardware\": ...})");
    JsonArray *a = json_node_get_array(n);
    guint len = json_array_get_length(a);
    if (ic->pp_size < 2)
        return sv_planner__path_error(error, path,
                                      "needs pp_size 2 or more (one stage: name its device in "
                                      "the instance's \"hardware\")");
    if (len != (guint)ic->pp_size)
        return sv_planner__path_error(error, path, "%u stage(s) but pp_size is %d", len,
                                      ic->pp_size);
    if (len > SV_PLANNER_MAX_STAGES)
        return sv_planner__path_error(error, path, "%u stages: at most %d", len,
                                      SV_PLANNER_MAX_STAGES);
    int with_layers = 0;
    ic->stages = g_new0(struct sv_planner_stage_cfg, len); /* freed with the config */
    for (guint s = 0; s < len; s++) {
        g_autofree char *sw = g_strdup_printf("%s[%u]", path, s);
        JsonNode *e = json_array_get_element(a, s);
        if (!JSON_NODE_HOLDS_OBJECT(e))
            return sv_planner__path_error(error, sw, "must be an object ({\"hardware\": ...})");
        JsonObject *so = json_node_get_object(e);
        g_autoptr(GList) members = json_object_get_members(so);
        members = g_list_sort(members, (GCompareFunc)strcmp);
        for (GList *l = members; l; l = l->next) {
            gboolean ok = FALSE;
            for (int k = 0; stage_keys[k]; k++)
                ok = ok || strcmp(stage_keys[k], l->data) == 0;
            if (!ok)
                g_warning("%s.%s: unknown key, ignored", sw, (const char *)l->data);
        }
        struct sv_planner_stage_cfg *sc = &ic->stages[s];
        const char *hw = NULL;
        int64_t layers = 0;
        GError *ge = NULL;
        if (!sv_cfg_get_string(so, "hardware", sw, FALSE, NULL, &hw, &ge) ||
            !sv_cfg_get_double_range(so, "mem_size", sw, FALSE, 0, RANGE_STAGE_GIB, &sc->mem_gib,
                                     &ge) ||
            !sv_cfg_get_double_range(so, "mem_bw", sw, FALSE, 0, SV_RANGE_BW_GBPS_OR_0,
                                     &sc->mem_bw_gbps, &ge) ||
            !sv_cfg_get_int_range(so, "layers", sw, FALSE, 0, SV_RANGE_I(1, 1 << 20, "layers"),
                                  &layers, &ge)) {
            g_set_error_literal(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID, ge->message);
            g_error_free(ge);
            return FALSE;
        }
        if (!hw || !hw[0])
            return sv_planner__path_error(error, sw,
                                          "no hardware: every stage names its device "
                                          "(\"hardware\": \"H100-SXM\")");
        if (strlen(hw) >= sizeof sc->hardware)
            return sv_planner__path_error(error, sw, "hardware: name longer than %zu characters",
                                          sizeof sc->hardware - 1);
        g_strlcpy(sc->hardware, hw, sizeof sc->hardware);
        sc->layers = layers;
        with_layers += layers > 0;
    }
    if (with_layers != 0 && with_layers != (int)len)
        return sv_planner__path_error(
            error, path, "layers given for %d of %u stages: give all or none", with_layers, len);
    ic->n_stages = (int32_t)len;
    return TRUE;
}

/* ---- the run's side ------------------------------------------------------------------------- */

struct stage_set {
    int32_t n;
    sv_compute_latency *lat[SV_PLANNER_MAX_STAGES];
    int64_t layers[SV_PLANNER_MAX_STAGES];
};

struct sv_planner__stages {
    int32_t n_inst;
    struct stage_set *inst; /* per instance; n = 0 without stages */
};

sv_planner__stages *sv_planner__stages_new(int32_t n_inst)
{
    sv_planner__stages *s = g_new0(sv_planner__stages, 1);
    s->n_inst = n_inst;
    s->inst = g_new0(struct stage_set, (gsize)MAX(n_inst, 1));
    return s;
}

void sv_planner__stages_free(sv_planner__stages *s)
{
    if (!s)
        return;
    for (int32_t i = 0; i < s->n_inst; i++)
        for (int32_t k = 0; k < s->inst[i].n; k++)
            sv_compute_latency_free(s->inst[i].lat[k]);
    g_free(s->inst);
    g_free(s);
}

/* A stage's memory: its own mem_size / mem_bw, else the instance's npu_mem when the stage runs on
 * the instance's hardware (the config describes that device), else the catalog's figures of the
 * stage's device (compute/hardware.json, sourced per device). */
static void stage_instance_cfg(const struct sv_planner_instance_cfg *ic,
                               const struct sv_planner_stage_cfg *sc,
                               const struct sv_compute_hw_cfg *hw,
                               const struct sv_compute_hw_cfg *inst_hw,
                               struct sv_planner_instance_cfg *out)
{
    *out = *ic;
    g_strlcpy(out->hardware, sc->hardware, sizeof out->hardware);
    gboolean same = inst_hw && strcmp(hw->name, inst_hw->name) == 0;
    out->npu_mem_gib = sc->mem_gib > 0 ? sc->mem_gib : same ? ic->npu_mem_gib : hw->mem_gib;
    out->npu_mem_bw_gbps = sc->mem_bw_gbps > 0 ? sc->mem_bw_gbps
                           : same              ? ic->npu_mem_bw_gbps
                                               : hw->mem_bw_gbps;
    out->n_stages = 0;
    out->stages = NULL; /* borrowed copy: never freed */
}

/* Features whose per-stage model assumes one device kind or vLLM's split (they read the
 * instance's single latency model or layer ranges): refused rather than modelled wrong. */
static gboolean stages_supported(const struct sv_planner_run_cfg *cfg,
                                 const struct sv_planner_instance_cfg *ic,
                                 const struct sv_compute_model_cfg *m,
                                 const struct sv_planner_placement_map *map, GError **error)
{
    const char *what = NULL;
    const char *kvt = cfg->kv_transfer               ? cfg->kv_transfer
                      : cfg->cluster->kv_transfer[0] ? cfg->cluster->kv_transfer
                                                     : "";
    if (map && map->any_offload)
        what = "placement off the NPU (weights or kv_loc)";
    else if (ic->expert_offload)
        what = "expert_offload";
    else if (ic->enable_attn_offloading == 1 || ic->enable_local_offloading == 1 ||
             cfg->enable_attn_offloading == 1 || cfg->enable_local_offloading == 1)
        what = "PIM attention offload / local offloading";
    else if (sv_compute_model_is_moe(m) && ic->ep_size > 1)
        what = "expert parallelism (ep_size > 1)";
    else if (strcmp(kvt, "per_layer") == 0)
        what = "kv_transfer per_layer";
    if (!what)
        return TRUE;
    return sv_planner__path_error(error, ic->stages_where,
                                  "heterogeneous stages with %s are not modelled", what);
}

gboolean sv_planner__stages_instance(sv_planner__stages *s, const struct sv_planner_run_cfg *cfg,
                                     int32_t i, const struct sv_compute_model_cfg *m,
                                     const struct sv_planner_placement_map *map,
                                     uint32_t block_size, uint64_t *blocks, struct sv_msg_cfg *mc,
                                     GError **error)
{
    const struct sv_planner_instance_cfg *ic = &cfg->cluster->instances[i];
    if (ic->n_stages == 0)
        return TRUE;
    SV_ASSERT(i < s->n_inst && ic->n_stages == ic->pp_size);
    if (!stages_supported(cfg, ic, m, map, error))
        return FALSE;
    struct stage_set *set = &s->inst[i];
    int64_t L = m->num_layers, sum = 0;
    for (int32_t k = 0; k < ic->n_stages; k++) {
        if (ic->stages[k].layers > 0) {
            set->layers[k] = ic->stages[k].layers;
        } else {
            int64_t b, e;
            sv_msg_pp_split(L, ic->pp_size, k, &b, &e);
            set->layers[k] = e - b;
        }
        sum += set->layers[k];
    }
    if (sum != L)
        return sv_planner__path_error(error, ic->stages_where,
                                      "layers sum to %" G_GINT64_FORMAT
                                      " but %s has %" G_GINT64_FORMAT " layers",
                                      sum, ic->model_name, L);
    struct sv_compute_hw_cfg inst_hw;
    gboolean inst_known =
        sv_compute_hw_catalog_lookup(cfg->cluster->hw_catalog, ic->hardware, &inst_hw, NULL);
    /* Weights of one rank spread over the stages by their layer share: LLMServingSim's
     * memory_model.py charges weight / pp to every stage, which this is for an even split. */
    uint64_t w = sv_compute_model_weight_bytes(m, ic->tp_size);
    uint64_t kv_layer = sv_compute_model_kv_bytes_per_token_layer(m, ic->tp_size);
    uint64_t best = UINT64_MAX;
    for (int32_t k = 0; k < ic->n_stages; k++) {
        const struct sv_planner_stage_cfg *sc = &ic->stages[k];
        struct sv_compute_hw_cfg hw;
        GError *e = NULL;
        if (!sv_compute_hw_catalog_lookup(cfg->cluster->hw_catalog, sc->hardware, &hw, &e)) {
            g_autofree char *p = g_strdup_printf("%s[%d].hardware", ic->stages_where, k);
            sv_planner__path_error(error, p, "%s", e->message);
            g_error_free(e);
            return FALSE;
        }
        struct sv_planner_instance_cfg *sic = g_new(struct sv_planner_instance_cfg, 1);
        stage_instance_cfg(ic, sc, &hw, inst_known ? &inst_hw : NULL, sic);
        g_autofree char *source = NULL;
        set->lat[k] = sv_planner__make_latency(cfg, sic, m, &source, error);
        if (set->lat[k]) {
            set->n = k + 1;
            sv_planner_apply_gpu_clock(cfg, sic, set->lat[k]);
        }
        uint64_t n = (uint64_t)set->layers[k], b = 0;
        uint64_t mem = (uint64_t)(sic->npu_mem_gib * 1073741824.0);
        gboolean ok =
            set->lat[k] && sv_memtier_kv_capacity_blocks(mem, ic->mem_util, w * n / (uint64_t)L,
                                                         kv_layer * n, block_size, &b, error);
        g_free(sic);
        if (!ok) {
            g_prefix_error(error, "%s[%d] (%s): ", ic->stages_where, k, sc->hardware);
            return FALSE;
        }
        /* vLLM's PP engine takes the smallest worker's free memory for the KV pool
         * (determine_num_available_blocks: the minimum over workers). */
        best = MIN(best, b);
    }
    *blocks = MIN(best, (uint64_t)UINT32_MAX);
    mc->stage_lat = set->lat;
    mc->stage_layers = set->layers;
    return TRUE;
}

void sv_planner__stages_cudagraph(sv_planner__stages *s, int32_t i, int64_t max_num_seqs,
                                  int64_t max_num_batched_tokens)
{
    for (int32_t k = 0; s && i < s->n_inst && k < s->inst[i].n; k++)
        sv_compute_latency_set_cudagraph(s->inst[i].lat[k], max_num_seqs, max_num_batched_tokens);
}
