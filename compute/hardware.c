/* Hardware catalog: peak FLOP/s, memory and interconnect of each accelerator, with sources.
 *
 * The catalog is data, compute/hardware.json (its "about" names the sources of the numbers: the
 * rows of ../shared/traces/hardware/hardware_specs.csv and vendors' datasheets), compiled into
 * the program as a string (compute/embed.cmake), so a result never depends on where the program
 * runs. It is parsed at each lookup: lookups happen once per instance at setup. */
#include "compute/compute_internal.h"

#include <string.h>

static const char hardware_json[] =
#include "compute/hardware_json.inc"
    ;
#define CATALOG "compute/hardware.json"

/* Lowercase with '-', '_' and ' ' removed, so "RTX PRO 6000" == "rtxpro6000". */
static char *squash(const char *s, size_t n)
{
    GString *g = g_string_new(NULL);
    for (size_t i = 0; i < n && s[i]; i++)
        if (s[i] != '-' && s[i] != '_' && s[i] != ' ')
            g_string_append_c(g, g_ascii_tolower(s[i]));
    return g_string_free(g, FALSE);
}

/* TRUE when `want` (squashed) is the entry's name or one of its aliases. */
static gboolean entry_matches(JsonObject *e, const char *want)
{
    const char *name = json_object_get_string_member_with_default(e, "name", "");
    g_autofree char *n = squash(name, strlen(name));
    if (!strcmp(n, want))
        return TRUE;
    JsonArray *al = json_object_get_array_member(e, "aliases");
    for (guint i = 0; al != NULL && i < json_array_get_length(al); i++) {
        const char *a = json_array_get_string_element(al, i);
        g_autofree char *cand = a ? squash(a, strlen(a)) : NULL;
        if (cand != NULL && !strcmp(cand, want))
            return TRUE;
    }
    return FALSE;
}

static gboolean entry_read(JsonObject *e, guint i, struct sv_compute_hw_cfg *out, GError **error)
{
    g_autofree char *where = g_strdup_printf(CATALOG ": hardware[%u]", i);
    const char *name = NULL, *source = NULL, *power_source = NULL;
    memset(out, 0, sizeof *out);
    if (!sv_cfg_get_string(e, "name", where, TRUE, NULL, &name, error) ||
        !sv_cfg_get_string(e, "source", where, TRUE, NULL, &source, error) ||
        !sv_cfg_get_double(e, "bf16_tflops", where, TRUE, 0, &out->bf16_tflops, error) ||
        !sv_cfg_get_double(e, "fp8_tflops", where, TRUE, 0, &out->fp8_tflops, error) ||
        !sv_cfg_get_double(e, "fp32_tflops", where, TRUE, 0, &out->fp32_tflops, error) ||
        !sv_cfg_get_double(e, "mem_gb", where, TRUE, 0, &out->mem_gb, error) ||
        !sv_cfg_get_double(e, "mem_bw_gbps", where, TRUE, 0, &out->mem_bw_gbps, error) ||
        !sv_cfg_get_double(e, "link_bw_gbps", where, TRUE, 0, &out->link_bw_gbps, error) ||
        !sv_cfg_get_double(e, "pcie_gbps", where, TRUE, 0, &out->pcie_gbps, error) ||
        !sv_cfg_get_double(e, "tdp_w", where, TRUE, 0, &out->tdp_w, error) ||
        !sv_cfg_get_double(e, "idle_w", where, TRUE, 0, &out->idle_w, error) ||
        !sv_cfg_get_string(e, "power_source", where, TRUE, NULL, &power_source, error))
        return FALSE;
    int64_t units = 0; /* optional: the analytic model quantises tiles and waves on them */
    if (!sv_cfg_get_int(e, "compute_units", where, FALSE, 0, &units, error))
        return FALSE;
    out->compute_units = (int32_t)units;
    if (!sv_cfg_get_double(e, "l2_mib", where, FALSE, 0, &out->l2_mib, error))
        return FALSE;
    g_strlcpy(out->name, name, sizeof out->name);
    g_strlcpy(out->source, source, sizeof out->source);
    g_strlcpy(out->power_source, power_source, sizeof out->power_source);
    return TRUE;
}

gboolean sv_compute_hw_lookup(const char *name, struct sv_compute_hw_cfg *out, GError **error)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) perr = NULL;
    /* The catalog is part of the program: failing to read it is a build defect, not bad input. */
    if (!json_parser_load_from_data(parser, hardware_json, -1, &perr))
        g_error(CATALOG ": %s", perr->message);
    JsonNode *root = json_parser_get_root(parser);
    SV_ASSERT(root != NULL && JSON_NODE_HOLDS_OBJECT(root));
    JsonArray *list = json_object_get_array_member(json_node_get_object(root), "hardware");
    SV_ASSERT(list != NULL);
    g_autofree char *want = squash(name, strlen(name));
    g_autoptr(GString) known = g_string_new(NULL);
    for (guint i = 0; i < json_array_get_length(list); i++) {
        JsonObject *e = json_array_get_object_element(list, i);
        SV_ASSERT(e != NULL);
        if (entry_matches(e, want))
            return entry_read(e, i, out, error);
        g_string_append_printf(known, "%s%s", i ? ", " : "",
                               json_object_get_string_member_with_default(e, "name", "?"));
    }
    g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_UNKNOWN,
                "unknown hardware \"%s\" (built in: %s)", name, known->str);
    return FALSE;
}

gboolean sv_compute_hw_apply_overrides(struct sv_compute_hw_cfg *hw, JsonObject *obj,
                                       const char *where, GError **error)
{
    static const struct {
        const char *key;
        size_t off;
    } fields[] = {
        {"bf16_tflops", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, bf16_tflops)},
        {"fp8_tflops", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, fp8_tflops)},
        {"fp32_tflops", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, fp32_tflops)},
        {"mem_gb", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, mem_gb)},
        {"mem_bw_gbps", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, mem_bw_gbps)},
        {"link_bw_gbps", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, link_bw_gbps)},
    };
    /* Check every key first (sorted, so the first error is deterministic). */
    g_autoptr(GList) members = json_object_get_members(obj);
    members = g_list_sort(members, (GCompareFunc)g_strcmp0);
    for (GList *l = members; l; l = l->next) {
        const char *key = l->data;
        size_t f;
        for (f = 0; f < G_N_ELEMENTS(fields); f++)
            if (!strcmp(key, fields[f].key))
                break;
        if (f == G_N_ELEMENTS(fields)) {
            g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                        "unknown hardware field (expected bf16_tflops, fp8_tflops, fp32_tflops, "
                        "mem_gb, mem_bw_gbps or link_bw_gbps): %s.%s",
                        where, key);
            return FALSE;
        }
        double v;
        if (!sv_cfg_get_double(obj, key, where, TRUE, 0, &v, error))
            return FALSE;
        if (!(v > 0)) {
            g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                        "must be positive, got %g: %s.%s", v, where, key);
            return FALSE;
        }
        *(double *)((char *)hw + fields[f].off) = v;
    }
    return TRUE;
}

double sv_compute_hw_peak_flops(const struct sv_compute_hw_cfg *hw, int dtype_bytes)
{
    double tf = hw->bf16_tflops;
    if (dtype_bytes == 1 && hw->fp8_tflops > 0)
        tf = hw->fp8_tflops;
    else if (dtype_bytes == 4 && hw->fp32_tflops > 0)
        tf = hw->fp32_tflops;
    return tf * 1e12;
}
