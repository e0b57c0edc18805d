/* Hardware catalog: peak FLOP/s, memory, interconnect, launch cost and power of each accelerator,
 * with sources.
 *
 * The built-in catalog is data, compute/hardware.json (its "about" names the sources of the
 * numbers: the rows of ../shared/traces/hardware/hardware_specs.csv, vendors' datasheets, measured
 * profiles), compiled into the program as a string (compute/embed.cmake), so a result never
 * depends on where the program runs. A run may add or override devices from hardware files of
 * the same schema (YAML or JSON; docs/compute.md "Hardware files"); the catalog object holds
 * both, so two runs in one process never share state. */
#include "compute/compute_internal.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

static const char hardware_json[] =
#include "compute/hardware_json.inc"
    ;
#define CATALOG "compute/hardware.json"

/* Numeric fields of an entry, in hardware.json's order. `required_new`: a device a hardware file
 * adds must give it (and it must be positive); the others default to 0 (not published). Each has
 * a documented range (docs/compute.md, docs/reliability.md "Numeric ranges"), 0 or [lo, hi]: peak
 * rates from 1 MFLOP/s to 10 EFLOP/s, bandwidths in SV_RANGE_BW_GBPS, capacities up to 1 PiB,
 * latencies up to SV_RANGE_LATENCY_NS_MAX, powers up to 10 MW; a time computed from any of them
 * either fits under the engine's horizon or is refused there. */
#define TFLOPS SV_RANGE_D_OR_0(1e-6, 1e7, "TFLOP/s")
#define GBPS SV_RANGE_BW_GBPS_OR_0
#define NS SV_RANGE_D(0, SV_RANGE_LATENCY_NS_MAX, "ns")
#define SIZE SV_RANGE_D(0, SV_RANGE_GIB_MAX, NULL)
#define WATTS SV_RANGE_POWER_W
static const struct hw_field {
    const char *key;
    size_t off;
    gboolean integer;
    gboolean required_new;
    struct sv_range_double range;
} hw_fields[] = {
    {"bf16_tflops", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, bf16_tflops), FALSE, TRUE, TFLOPS},
    {"fp8_tflops", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, fp8_tflops), FALSE, FALSE, TFLOPS},
    {"int8_tops", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, int8_tops), FALSE, FALSE, TFLOPS},
    {"fp32_tflops", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, fp32_tflops), FALSE, FALSE, TFLOPS},
    /* device memory up to 16 TiB, as a cluster config's npu_mem.mem_size (the KV block manager
     * keeps state per block: docs/reliability.md) */
    {"mem_gib", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, mem_gib), FALSE, TRUE,
     SV_RANGE_D(0, 16384, "GiB")},
    {"mem_bw_gbps", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, mem_bw_gbps), FALSE, TRUE, GBPS},
    {"compute_units", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, compute_units), TRUE, FALSE, SIZE},
    {"l2_mib", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, l2_mib), FALSE, FALSE, SIZE},
    {"link_bw_gbps", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, link_bw_gbps), FALSE, FALSE, GBPS},
    {"link_latency_ns", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, link_latency_ns), FALSE, FALSE,
     NS},
    {"pcie_gbps", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, pcie_gbps), FALSE, FALSE, GBPS},
    {"launch_ns", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, launch_ns), FALSE, FALSE, NS},
    {"tdp_w", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, tdp_w), FALSE, FALSE, WATTS},
    {"idle_w", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, idle_w), FALSE, FALSE, WATTS},
};
#undef TFLOPS
#undef GBPS
#undef NS
#undef SIZE
#undef WATTS
/* String fields (name and aliases are read apart). */
static const struct {
    const char *key;
    size_t off, size;
} hw_strings[] = {
    {"interconnect", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, interconnect),
     sizeof(((struct sv_compute_hw_cfg *)0)->interconnect)},
    {"source", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, source),
     sizeof(((struct sv_compute_hw_cfg *)0)->source)},
    {"latency_source", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, latency_source),
     sizeof(((struct sv_compute_hw_cfg *)0)->latency_source)},
    {"power_source", G_STRUCT_OFFSET(struct sv_compute_hw_cfg, power_source),
     sizeof(((struct sv_compute_hw_cfg *)0)->power_source)},
};

struct hw_entry {
    struct sv_compute_hw_cfg hw;
    GPtrArray *keys; /* squashed name and aliases (char*) */
};

struct sv_compute_hw_catalog {
    GArray *entries; /* struct hw_entry, catalog order */
};

/* Lowercase with '-', '_' and ' ' removed, so "RTX PRO 6000" == "rtxpro6000". */
static char *squash(const char *s)
{
    GString *g = g_string_new(NULL);
    for (size_t i = 0; s[i]; i++)
        if (s[i] != '-' && s[i] != '_' && s[i] != ' ')
            g_string_append_c(g, g_ascii_tolower(s[i]));
    return g_string_free(g, FALSE);
}

static void entry_clear(struct hw_entry *e)
{
    if (e->keys)
        g_ptr_array_free(e->keys, TRUE);
    e->keys = NULL;
}

static void entry_add_key(struct hw_entry *e, const char *name)
{
    char *k = squash(name);
    for (guint i = 0; i < e->keys->len; i++)
        if (!strcmp(e->keys->pdata[i], k)) {
            g_free(k);
            return;
        }
    g_ptr_array_add(e->keys, k);
}

static gboolean entry_has_key(const struct hw_entry *e, const char *squashed)
{
    for (guint i = 0; i < e->keys->len; i++)
        if (!strcmp(e->keys->pdata[i], squashed))
            return TRUE;
    return FALSE;
}

static gboolean fail(GError **error, const char *where, const char *key, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);
static gboolean fail(GError **error, const char *where, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID, "%s%s%s: %s", where,
                key ? "." : "", key ? key : "", msg);
    return FALSE;
}

/* A number of an entry. YAML scalars arrive as strings: `lenient` parses them (the whole text
 * must be a number). */
static gboolean node_number(JsonNode *n, gboolean lenient, double *out)
{
    if (sv_cfg_node_double(n, out))
        return TRUE;
    if (!lenient || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING)
        return FALSE;
    return sv_num_parse_double(json_node_get_string(n), out); /* decimal, finite */
}

static const char *node_string(JsonNode *n)
{
    if (n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING)
        return json_node_get_string(n);
    return NULL;
}

static const char *const known_keys_msg =
    "name, aliases, bf16_tflops, fp8_tflops, int8_tops, fp32_tflops, mem_gib, mem_bw_gbps, "
    "compute_units, interconnect, link_bw_gbps, link_latency_ns, pcie_gbps, launch_ns, tdp_w, "
    "idle_w, source, latency_source, power_source";

static gboolean known_key(const char *key)
{
    if (!strcmp(key, "name") || !strcmp(key, "aliases"))
        return TRUE;
    for (size_t f = 0; f < G_N_ELEMENTS(hw_fields); f++)
        if (!strcmp(key, hw_fields[f].key))
            return TRUE;
    for (size_t f = 0; f < G_N_ELEMENTS(hw_strings); f++)
        if (!strcmp(key, hw_strings[f].key))
            return TRUE;
    return FALSE;
}

/* Set one numeric field from `n`; checks the value. */
static gboolean set_field(struct sv_compute_hw_cfg *hw, const struct hw_field *f, JsonNode *n,
                          gboolean lenient, const char *where, GError **error)
{
    double v;
    if (!node_number(n, lenient, &v))
        return fail(error, where, f->key, "expected a number");
    if (v < 0)
        return fail(error, where, f->key, "must not be negative, got %g", v);
    if (f->required_new && !(v > 0))
        return fail(error, where, f->key, "must be positive, got %g", v);
    GError *e = NULL;
    g_autofree char *path = g_strdup_printf("%s.%s", where, f->key);
    if (!sv_range_check_double(path, v, f->range, &e)) {
        g_set_error_literal(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID, e->message);
        g_error_free(e);
        return FALSE;
    }
    if (f->integer) {
        if (v != floor(v) || v > G_MAXINT32)
            return fail(error, where, f->key, "expected a whole number, got %g", v);
        *(int32_t *)(void *)((char *)hw + f->off) = (int32_t)v;
    } else {
        *(double *)(void *)((char *)hw + f->off) = v;
    }
    return TRUE;
}

typedef enum {
    ENTRY_BUILTIN, /* hardware.json: every field required */
    ENTRY_NEW,     /* a hardware file adds a device */
    ENTRY_OVERRIDE /* a hardware file changes a device: `out` holds it already */
} entry_mode;

/* Read entry `e` into `out` (for ENTRY_OVERRIDE `out` already holds the device). `where` names
 * the entry ("my.yaml: hardware[2]"). */
static gboolean entry_read(JsonObject *e, const char *where, entry_mode mode, gboolean lenient,
                           struct hw_entry *out, GError **error)
{
    /* Keys first, sorted, so the first error is deterministic. */
    g_autoptr(GList) members = json_object_get_members(e);
    members = g_list_sort(members, (GCompareFunc)g_strcmp0);
    for (GList *l = members; l; l = l->next) {
        const char *key = l->data;
        if (!strcmp(key, "mem_gb"))
            return fail(error, where, key,
                        "capacities are GiB (2^30 B) in the catalog: write mem_gib "
                        "(docs/compute.md)");
        if (!known_key(key))
            return fail(error, where, key, "unknown hardware field (expected %s)", known_keys_msg);
    }
    const char *name = node_string(json_object_get_member(e, "name"));
    if (!name || !*name)
        return fail(error, where, "name",
                    json_object_has_member(e, "name") ? "expected a non-empty string" : "missing");
    if (mode != ENTRY_OVERRIDE) {
        memset(&out->hw, 0, sizeof out->hw);
        if (strlen(name) >= sizeof out->hw.name)
            return fail(error, where, "name", "longer than %zu characters",
                        sizeof out->hw.name - 1);
        g_strlcpy(out->hw.name, name, sizeof out->hw.name);
        out->keys = g_ptr_array_new_with_free_func(g_free);
        entry_add_key(out, name);
    }
    JsonNode *an = json_object_get_member(e, "aliases");
    if (an) {
        if (!JSON_NODE_HOLDS_ARRAY(an))
            return fail(error, where, "aliases", "expected an array of strings");
        JsonArray *al = json_node_get_array(an);
        for (guint i = 0; i < json_array_get_length(al); i++) {
            const char *a = node_string(json_array_get_element(al, i));
            if (!a || !*a) {
                g_autofree char *k = g_strdup_printf("aliases[%u]", i);
                return fail(error, where, k, "expected a non-empty string");
            }
            entry_add_key(out, a);
        }
    }
    g_autoptr(GString) changed = g_string_new(NULL);
    for (size_t f = 0; f < G_N_ELEMENTS(hw_fields); f++) {
        JsonNode *n = json_object_get_member(e, hw_fields[f].key);
        if (!n) {
            if (mode == ENTRY_BUILTIN || (mode == ENTRY_NEW && hw_fields[f].required_new))
                return fail(error, where, hw_fields[f].key, "missing");
            continue;
        }
        if (!set_field(&out->hw, &hw_fields[f], n, lenient, where, error))
            return FALSE;
        g_string_append_printf(changed, "%s%s", changed->len ? ", " : "", hw_fields[f].key);
    }
    for (size_t f = 0; f < G_N_ELEMENTS(hw_strings); f++) {
        JsonNode *n = json_object_get_member(e, hw_strings[f].key);
        if (!n) {
            gboolean needed = mode == ENTRY_BUILTIN ||
                              (mode == ENTRY_NEW && !strcmp(hw_strings[f].key, "source"));
            if (needed)
                return fail(error, where, hw_strings[f].key,
                            "missing (every number names its source)");
            continue;
        }
        const char *v = node_string(n);
        if (!v)
            return fail(error, where, hw_strings[f].key, "expected a string");
        g_strlcpy((char *)&out->hw + hw_strings[f].off, v, hw_strings[f].size);
    }
    /* An override that changes numbers without naming a source keeps the catalog's, prefixed with
     * what the file changed, so summary readers still see where each number comes from. */
    if (mode == ENTRY_OVERRIDE && changed->len && !json_object_has_member(e, "source")) {
        g_autofree char *s =
            g_strdup_printf("%s: %s (hardware file); %s", where, changed->str, out->hw.source);
        g_strlcpy(out->hw.source, s, sizeof out->hw.source);
    }
    return TRUE;
}

/* The top-level object of a catalog document: {"hardware": [...]} (and "about"). */
static JsonArray *doc_list(JsonNode *root, const char *where, GError **error)
{
    if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
        fail(error, where, NULL, "expected an object with a \"hardware\" list");
        return NULL;
    }
    JsonObject *top = json_node_get_object(root);
    g_autoptr(GList) members = json_object_get_members(top);
    members = g_list_sort(members, (GCompareFunc)g_strcmp0);
    for (GList *l = members; l; l = l->next)
        if (strcmp(l->data, "hardware") && strcmp(l->data, "about")) {
            fail(error, where, l->data, "unknown key (expected hardware, about)");
            return NULL;
        }
    JsonNode *hn = json_object_get_member(top, "hardware");
    if (!hn || !JSON_NODE_HOLDS_ARRAY(hn)) {
        fail(error, where, "hardware", hn ? "expected a list of devices" : "missing");
        return NULL;
    }
    return json_node_get_array(hn);
}

static void entries_free(GArray *a)
{
    if (!a)
        return;
    for (guint i = 0; i < a->len; i++)
        entry_clear(&g_array_index(a, struct hw_entry, i));
    g_array_free(a, TRUE);
}

sv_compute_hw_catalog *sv_compute_hw_catalog_new(void)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) err = NULL;
    /* The catalog is part of the program: failing to read it is a build defect, not bad input. */
    if (!json_parser_load_from_data(parser, hardware_json, -1, &err))
        g_error(CATALOG ": %s", err->message);
    JsonArray *list = doc_list(json_parser_get_root(parser), CATALOG, &err);
    if (!list)
        g_error("%s", err->message);
    sv_compute_hw_catalog *cat = g_new0(sv_compute_hw_catalog, 1);
    cat->entries = g_array_new(FALSE, TRUE, sizeof(struct hw_entry));
    for (guint i = 0; i < json_array_get_length(list); i++) {
        g_autofree char *where = g_strdup_printf(CATALOG ": hardware[%u]", i);
        JsonNode *n = json_array_get_element(list, i);
        struct hw_entry e = {0};
        if (!JSON_NODE_HOLDS_OBJECT(n) ||
            !entry_read(json_node_get_object(n), where, ENTRY_BUILTIN, FALSE, &e, &err))
            g_error("%s", err ? err->message : where);
        g_array_append_val(cat->entries, e);
    }
    return cat;
}

void sv_compute_hw_catalog_free(sv_compute_hw_catalog *cat)
{
    if (!cat)
        return;
    entries_free(cat->entries);
    g_free(cat);
}

/* YAML tree -> JSON tree; scalars become strings (entry_read parses numbers leniently). */
static JsonNode *yaml_to_json(const sv_yaml_node *y)
{
    JsonNode *n;
    switch (y->kind) {
    case SV_YAML_MAP: {
        JsonObject *o = json_object_new();
        for (guint i = 0; i < y->keys->len; i++) {
            const sv_yaml_node *k = y->keys->pdata[i];
            if (k->kind == SV_YAML_SCALAR && !json_object_has_member(o, k->scalar))
                json_object_set_member(o, k->scalar, yaml_to_json(y->items->pdata[i]));
        }
        n = json_node_new(JSON_NODE_OBJECT);
        json_node_take_object(n, o);
        return n;
    }
    case SV_YAML_SEQ: {
        JsonArray *a = json_array_new();
        for (guint i = 0; i < y->items->len; i++)
            json_array_add_element(a, yaml_to_json(y->items->pdata[i]));
        n = json_node_new(JSON_NODE_ARRAY);
        json_node_take_array(n, a);
        return n;
    }
    case SV_YAML_SCALAR:
        break;
    }
    n = json_node_new(JSON_NODE_VALUE);
    json_node_set_string(n, y->scalar ? y->scalar : "");
    return n;
}

static GArray *entries_copy(const GArray *src)
{
    GArray *a = g_array_new(FALSE, TRUE, sizeof(struct hw_entry));
    for (guint i = 0; i < src->len; i++) {
        const struct hw_entry *s = &g_array_index(src, struct hw_entry, i);
        struct hw_entry e = {.hw = s->hw, .keys = g_ptr_array_new_with_free_func(g_free)};
        for (guint k = 0; k < s->keys->len; k++)
            g_ptr_array_add(e.keys, g_strdup(s->keys->pdata[k]));
        g_array_append_val(a, e);
    }
    return a;
}

/* The entries of `work` that one of `e`'s name and aliases names. */
static GArray *matches(GArray *work, JsonObject *e)
{
    GArray *m = g_array_new(FALSE, FALSE, sizeof(guint));
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    const char *name = node_string(json_object_get_member(e, "name"));
    if (name)
        g_ptr_array_add(names, squash(name));
    JsonNode *an = json_object_get_member(e, "aliases");
    if (an && JSON_NODE_HOLDS_ARRAY(an)) {
        JsonArray *al = json_node_get_array(an);
        for (guint i = 0; i < json_array_get_length(al); i++) {
            const char *a = node_string(json_array_get_element(al, i));
            if (a)
                g_ptr_array_add(names, squash(a));
        }
    }
    for (guint i = 0; i < work->len; i++) {
        const struct hw_entry *w = &g_array_index(work, struct hw_entry, i);
        for (guint k = 0; k < names->len; k++)
            if (entry_has_key(w, names->pdata[k])) {
                g_array_append_val(m, i);
                break;
            }
    }
    return m;
}

gboolean sv_compute_hw_catalog_load(sv_compute_hw_catalog *cat, const char *path, GError **error)
{
    g_return_val_if_fail(cat != NULL && path != NULL, FALSE);
    g_autofree char *base = g_path_get_basename(path);
    gboolean yaml = !g_str_has_suffix(path, ".json");
    GError *e = NULL;
    JsonNode *root = NULL;
    if (yaml) {
        g_autoptr(sv_yaml_node) y = sv_yaml_load(path, &e);
        if (y)
            root = yaml_to_json(y);
    } else {
        root = sv_cfg_load_json(path, &e);
    }
    if (!root) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_PARSE, "hardware file: %s",
                    e->message);
        g_error_free(e);
        return FALSE;
    }
    gboolean ok = FALSE;
    GArray *work = entries_copy(cat->entries);
    /* Which file entry last set each device: two entries of one file naming one device is an
     * error, not a silent last-wins. */
    g_autoptr(GArray) set_by = g_array_new(FALSE, TRUE, sizeof(gint));
    g_array_set_size(set_by, work->len);
    for (guint i = 0; i < set_by->len; i++)
        g_array_index(set_by, gint, i) = -1;
    JsonArray *list = doc_list(root, base, error);
    if (!list)
        goto out;
    for (guint i = 0; i < json_array_get_length(list); i++) {
        g_autofree char *where = g_strdup_printf("%s: hardware[%u]", base, i);
        JsonNode *n = json_array_get_element(list, i);
        if (!JSON_NODE_HOLDS_OBJECT(n)) {
            fail(error, where, NULL, "expected an object (a device)");
            goto out;
        }
        JsonObject *o = json_node_get_object(n);
        g_autoptr(GArray) m = matches(work, o);
        if (m->len > 1) {
            fail(error, where, NULL, "its name and aliases name two devices, %s and %s",
                 g_array_index(work, struct hw_entry, g_array_index(m, guint, 0)).hw.name,
                 g_array_index(work, struct hw_entry, g_array_index(m, guint, 1)).hw.name);
            goto out;
        }
        if (m->len == 1) {
            guint w = g_array_index(m, guint, 0);
            gint prev = g_array_index(set_by, gint, w);
            if (prev >= 0) {
                fail(error, where, NULL, "%s is already given by hardware[%d] of this file",
                     g_array_index(work, struct hw_entry, w).hw.name, prev);
                goto out;
            }
            if (!entry_read(o, where, ENTRY_OVERRIDE, yaml,
                            &g_array_index(work, struct hw_entry, w), error))
                goto out;
            g_array_index(set_by, gint, w) = (gint)i;
            continue;
        }
        struct hw_entry ne = {0};
        if (!entry_read(o, where, ENTRY_NEW, yaml, &ne, error)) {
            entry_clear(&ne);
            goto out;
        }
        g_array_append_val(work, ne);
        gint idx = (gint)i;
        g_array_append_val(set_by, idx);
    }
    ok = TRUE;
out:
    json_node_unref(root);
    if (ok) {
        entries_free(cat->entries);
        cat->entries = work;
    } else {
        entries_free(work);
    }
    return ok;
}

gboolean sv_compute_hw_catalog_lookup(const sv_compute_hw_catalog *cat, const char *name,
                                      struct sv_compute_hw_cfg *out, GError **error)
{
    g_autoptr(sv_compute_hw_catalog) builtin = NULL;
    if (!cat)
        cat = builtin = sv_compute_hw_catalog_new();
    g_autofree char *want = squash(name);
    for (guint i = 0; i < cat->entries->len; i++) {
        const struct hw_entry *e = &g_array_index(cat->entries, struct hw_entry, i);
        if (entry_has_key(e, want)) {
            *out = e->hw;
            return TRUE;
        }
    }
    g_autoptr(GString) known = g_string_new(NULL);
    for (guint i = 0; i < cat->entries->len; i++)
        g_string_append_printf(known, "%s%s", i ? ", " : "",
                               g_array_index(cat->entries, struct hw_entry, i).hw.name);
    g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_UNKNOWN,
                "unknown hardware \"%s\" (known: %s; --hardware-file adds devices)", name,
                known->str);
    return FALSE;
}

guint sv_compute_hw_catalog_size(const sv_compute_hw_catalog *cat)
{
    return cat->entries->len;
}

const struct sv_compute_hw_cfg *sv_compute_hw_catalog_get(const sv_compute_hw_catalog *cat, guint i)
{
    g_return_val_if_fail(i < cat->entries->len, NULL);
    return &g_array_index(cat->entries, struct hw_entry, i).hw;
}

gboolean sv_compute_hw_lookup(const char *name, struct sv_compute_hw_cfg *out, GError **error)
{
    return sv_compute_hw_catalog_lookup(NULL, name, out, error);
}

gboolean sv_compute_hw_apply_overrides(struct sv_compute_hw_cfg *hw, JsonObject *obj,
                                       const char *where, GError **error)
{
    /* Check every key first (sorted, so the first error is deterministic), then apply: nothing
     * changes on an error. */
    struct sv_compute_hw_cfg tmp = *hw;
    g_autoptr(GList) members = json_object_get_members(obj);
    members = g_list_sort(members, (GCompareFunc)g_strcmp0);
    for (GList *l = members; l; l = l->next) {
        const char *key = l->data;
        size_t f;
        for (f = 0; f < G_N_ELEMENTS(hw_fields); f++)
            if (!strcmp(key, hw_fields[f].key))
                break;
        if (f == G_N_ELEMENTS(hw_fields))
            return fail(error, where, key,
                        !strcmp(key, "mem_gb")
                            ? "capacities are GiB (2^30 B) in the catalog: write mem_gib"
                            : "unknown hardware field (expected a numeric field of a catalog "
                              "entry: bf16_tflops, mem_gib, mem_bw_gbps, link_bw_gbps, ...)");
        if (!set_field(&tmp, &hw_fields[f], json_object_get_member(obj, key), FALSE, where, error))
            return FALSE;
    }
    *hw = tmp;
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

uint64_t sv_compute_hw_mem_bytes(const struct sv_compute_hw_cfg *hw)
{
    return (uint64_t)(hw->mem_gib * 1073741824.0);
}
