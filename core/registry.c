/* The policy registry: (kind, name) -> callback table, in registration order.
 *
 * Lookups are by linear scan over a short array (a handful of policies per kind), which also
 * keeps every listing in registration order: nothing here iterates a hash table. */
#include "core/core.h"

#include <string.h>

typedef struct {
    char *name;
    char *origin;
    const void *ops;
} reg_entry;

typedef struct {
    GDestroyNotify fn;
    gpointer data;
} reg_cleanup;

struct sv_registry {
    GArray *entries[SV_REGISTRY_N_KINDS]; /* reg_entry */
    GArray *cleanups;                     /* reg_cleanup, run in reverse order */
};

static const char *const kind_names[SV_REGISTRY_N_KINDS] = {"router", "scheduler", "kv_eviction",
                                                            "expert_routing", "pim_placement"};

const char *sv_registry_kind_name(sv_registry_kind kind)
{
    return (unsigned)kind < SV_REGISTRY_N_KINDS ? kind_names[kind] : "?";
}

sv_registry *sv_registry_new(void)
{
    sv_registry *reg = g_new0(sv_registry, 1);
    for (int k = 0; k < SV_REGISTRY_N_KINDS; k++)
        reg->entries[k] = g_array_new(FALSE, FALSE, sizeof(reg_entry));
    reg->cleanups = g_array_new(FALSE, FALSE, sizeof(reg_cleanup));
    return reg;
}

void sv_registry_free(sv_registry *reg)
{
    if (!reg)
        return;
    for (int k = 0; k < SV_REGISTRY_N_KINDS; k++) {
        for (guint i = 0; i < reg->entries[k]->len; i++) {
            reg_entry *e = &g_array_index(reg->entries[k], reg_entry, i);
            g_free(e->name);
            g_free(e->origin);
        }
        g_array_free(reg->entries[k], TRUE);
    }
    for (guint i = reg->cleanups->len; i > 0; i--) {
        reg_cleanup *c = &g_array_index(reg->cleanups, reg_cleanup, i - 1);
        c->fn(c->data);
    }
    g_array_free(reg->cleanups, TRUE);
    g_free(reg);
}

/* Length of the name part of "name:param". */
static size_t base_len(const char *name)
{
    const char *colon = strchr(name, ':');
    return colon ? (size_t)(colon - name) : strlen(name);
}

static const reg_entry *find(const sv_registry *reg, sv_registry_kind kind, const char *name,
                             size_t len)
{
    GArray *a = reg->entries[kind];
    for (guint i = 0; i < a->len; i++) {
        const reg_entry *e = &g_array_index(a, reg_entry, i);
        if (strlen(e->name) == len && g_ascii_strncasecmp(e->name, name, len) == 0)
            return e;
    }
    return NULL;
}

static gboolean valid_name(const char *name)
{
    if (!name || !*name)
        return FALSE;
    for (const char *p = name; *p; p++) {
        if (!g_ascii_isalnum(*p) && *p != '_' && *p != '-' && *p != '.')
            return FALSE;
    }
    return TRUE;
}

gboolean sv_registry_add(sv_registry *reg, sv_registry_kind kind, const char *name, const void *ops,
                         const char *origin, GError **error)
{
    SV_ASSERT((unsigned)kind < SV_REGISTRY_N_KINDS);
    if (!origin)
        origin = "built-in";
    if (!valid_name(name)) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                    "invalid %s name '%s' (letters, digits, '_', '-', '.'): %s", kind_names[kind],
                    name ? name : "(null)", origin);
        return FALSE;
    }
    if (!ops) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                    "%s '%s' has no callback table: %s", kind_names[kind], name, origin);
        return FALSE;
    }
    /* Every table's first member is its api_version (the ABI contract, planner/planner.h). */
    unsigned version = *(const unsigned *)ops;
    if (version != SV_REGISTRY_API_VERSION) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                    "%s '%s' has callback table version %u, this servesim needs %u: %s",
                    kind_names[kind], name, version, SV_REGISTRY_API_VERSION, origin);
        return FALSE;
    }
    const reg_entry *dup = find(reg, kind, name, strlen(name));
    if (dup) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                    "%s '%s' is already registered (by %s): %s", kind_names[kind], name,
                    dup->origin, origin);
        return FALSE;
    }
    reg_entry e = {g_strdup(name), g_strdup(origin), ops};
    g_array_append_val(reg->entries[kind], e);
    return TRUE;
}

const void *sv_registry_lookup(const sv_registry *reg, sv_registry_kind kind, const char *name,
                               GError **error)
{
    SV_ASSERT((unsigned)kind < SV_REGISTRY_N_KINDS);
    const reg_entry *e = name ? find(reg, kind, name, base_len(name)) : NULL;
    if (e)
        return e->ops;
    g_auto(GStrv) names = sv_registry_names(reg, kind);
    g_autofree char *list = g_strjoinv(", ", names);
    g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID, "unknown %s '%s' (registered: %s)",
                kind_names[kind], name ? name : "(null)", *list ? list : "none");
    return NULL;
}

const char *sv_registry_param(const char *name)
{
    const char *colon = name ? strchr(name, ':') : NULL;
    return colon ? colon + 1 : NULL;
}

char **sv_registry_names(const sv_registry *reg, sv_registry_kind kind)
{
    SV_ASSERT((unsigned)kind < SV_REGISTRY_N_KINDS);
    GArray *a = reg->entries[kind];
    char **v = g_new0(char *, a->len + 1);
    for (guint i = 0; i < a->len; i++)
        v[i] = g_strdup(g_array_index(a, reg_entry, i).name);
    return v;
}

const char *sv_registry_origin(const sv_registry *reg, sv_registry_kind kind, const char *name)
{
    SV_ASSERT((unsigned)kind < SV_REGISTRY_N_KINDS);
    const reg_entry *e = name ? find(reg, kind, name, base_len(name)) : NULL;
    return e ? e->origin : NULL;
}

void sv_registry_add_cleanup(sv_registry *reg, GDestroyNotify fn, gpointer data)
{
    reg_cleanup c = {fn, data};
    g_array_append_val(reg->cleanups, c);
}
