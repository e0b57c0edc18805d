/* instances[].speculative (docs/speculative.md): vLLM's speculative_config keys (method,
 * draft_model for its "model", num_speculative_tokens) plus acceptance_rate, validated by
 * compute/specdec.c. The serving engine does not simulate speculative steps yet, so a valid object
 * is refused with an error saying so, rather than ignored: a run never reports plain-decode
 * results for a speculative configuration. */
#include "planner/planner_internal.h"

#include <math.h>
#include <string.h>

static const char *const spec_keys[] = {"method", "draft_model", "num_speculative_tokens",
                                        "acceptance_rate", NULL};

gboolean sv_planner__spec_check(JsonObject *o, const char *where, GError **error)
{
    if (!json_object_has_member(o, "speculative"))
        return TRUE;
    g_autofree char *w = g_strdup_printf("%s.speculative", where);
    JsonNode *n = json_object_get_member(o, "speculative");
    if (!JSON_NODE_HOLDS_OBJECT(n))
        return sv_planner__path_error(error, w, "expected an object");
    JsonObject *s = json_node_get_object(n);
    g_autoptr(GList) members = json_object_get_members(s);
    members = g_list_sort(members, (GCompareFunc)strcmp);
    for (GList *l = members; l; l = l->next) {
        gboolean ok = FALSE;
        for (int i = 0; spec_keys[i]; i++)
            ok = ok || strcmp(spec_keys[i], l->data) == 0;
        if (!ok)
            return sv_planner__path_error(error, w, "unknown key '%s' (%s, %s, %s, %s)",
                                          (const char *)l->data, spec_keys[0], spec_keys[1],
                                          spec_keys[2], spec_keys[3]);
    }
    const char *str_keys[2] = {"method", "draft_model"};
    const char *str_val[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        if (!json_object_has_member(s, str_keys[i]))
            continue;
        JsonNode *v = json_object_get_member(s, str_keys[i]);
        if (!JSON_NODE_HOLDS_VALUE(v) || json_node_get_value_type(v) != G_TYPE_STRING) {
            g_autofree char *p = g_strdup_printf("%s.%s", w, str_keys[i]);
            return sv_planner__path_error(error, p, "expected a string");
        }
        str_val[i] = json_node_get_string(v);
    }
    int64_t k = 0;
    double a = NAN;
    JsonNode *kn = json_object_get_member(s, "num_speculative_tokens");
    if (!kn || !JSON_NODE_HOLDS_VALUE(kn) || json_node_get_value_type(kn) != G_TYPE_INT64) {
        g_autofree char *p = g_strdup_printf("%s.num_speculative_tokens", w);
        return sv_planner__path_error(error, p, "expected an integer");
    }
    k = json_node_get_int(kn);
    JsonNode *an = json_object_get_member(s, "acceptance_rate");
    if (!an || !JSON_NODE_HOLDS_VALUE(an) ||
        (json_node_get_value_type(an) != G_TYPE_DOUBLE &&
         json_node_get_value_type(an) != G_TYPE_INT64)) {
        g_autofree char *p = g_strdup_printf("%s.acceptance_rate", w);
        return sv_planner__path_error(error, p, "expected a number");
    }
    a = json_node_get_double(an);
    struct sv_compute_spec_cfg c;
    GError *e = NULL;
    if (!sv_compute_spec_validate(w, str_val[0], str_val[1], NULL, k, a, &c, &e)) {
        g_set_error_literal(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID, e->message);
        g_clear_error(&e);
        return FALSE;
    }
    return sv_planner__path_error(error, w,
                                  "speculative decoding (%s, k %d) is validated but not simulated "
                                  "by the serving engine yet (docs/speculative.md)",
                                  sv_compute_spec_method_name(c.method), c.k);
}
