/* Quantisation of an instance (docs/quantisation.md): its "dtype" and "kv_cache_dtype" keys,
 * validated at load, applied to the model the run and the admission checks use, and the
 * profile bundle variant (LLMServingSim's <hw>/<org>/<model>/<dtype>/ folders) they select. */
#include "planner/planner_internal.h"

#include <string.h>

static gboolean read_one(JsonObject *o, const char *key, const char *where,
                         const char *(*canon)(const char *, GError **), char *out, size_t size,
                         GError **error)
{
    out[0] = '\0';
    JsonNode *n = json_object_get_member(o, key);
    if (!n || JSON_NODE_HOLDS_NULL(n))
        return TRUE;
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID, "%s.%s: must be a string",
                    where, key);
        return FALSE;
    }
    GError *e = NULL;
    const char *c = canon(json_node_get_string(n), &e);
    if (!c) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID, "%s.%s: %s", where, key,
                    e->message);
        g_error_free(e);
        return FALSE;
    }
    g_strlcpy(out, c, size);
    return TRUE;
}

gboolean sv_planner__read_quant(JsonObject *o, const char *where,
                                struct sv_planner_instance_cfg *ic, GError **error)
{
    return read_one(o, "dtype", where, sv_compute_quant_canonical, ic->dtype, sizeof ic->dtype,
                    error) &&
           read_one(o, "kv_cache_dtype", where, sv_compute_quant_kv_canonical, ic->kv_cache_dtype,
                    sizeof ic->kv_cache_dtype, error);
}

gboolean sv_planner__instance_model(const struct sv_planner_run_cfg *cfg,
                                    const struct sv_planner_instance_cfg *ic,
                                    struct sv_compute_model_cfg *m, GError **error)
{
    if (!sv_compute_model_lookup(ic->model_name, cfg->model_dir, m, error))
        return FALSE;
    /* The names were validated at load (canonical or ""), so this cannot fail on a loaded
     * config; a programmatic one is checked here all the same. */
    if (!sv_compute_quant_apply(m, ic->dtype, ic->kv_cache_dtype, error)) {
        g_prefix_error(error, "dtype: ");
        return FALSE;
    }
    return TRUE;
}

const char *sv_planner__profile_variant(const struct sv_planner_instance_cfg *ic)
{
    /* fp16 runs the same tensor cores at the same peak as bf16: the bf16 bundle stands in. */
    if (!ic->dtype[0] || !strcmp(ic->dtype, "bf16") || !strcmp(ic->dtype, "fp16"))
        return NULL;
    return ic->dtype;
}
