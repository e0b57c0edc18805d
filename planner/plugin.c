/* The plugin loader (planner/planner.h, section Plugins) and the built-in policies registry. */
#include "planner/planner.h"

static void module_close(gpointer data)
{
    g_module_close(data);
}

gboolean sv_planner_plugin_load(sv_registry *reg, const char *path, GError **error)
{
    if (!g_module_supported()) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                    "plugins are not supported on this platform: %s", path);
        return FALSE;
    }
    /* LOCAL: two plugins may define the same static helpers; LAZY is not used so that a plugin
     * calling a missing servesim function fails here, naming the file, not mid-run. */
    GModule *mod = g_module_open(path, G_MODULE_BIND_LOCAL);
    if (!mod) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_IO, "cannot load plugin %s: %s", path,
                    g_module_error());
        return FALSE;
    }
    gpointer sym = NULL;
    if (!g_module_symbol(mod, SV_PLANNER_PLUGIN_ENTRY, &sym) || !sym) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                    "plugin %s does not export %s()", path, SV_PLANNER_PLUGIN_ENTRY);
        g_module_close(mod);
        return FALSE;
    }
    /* The module stays open as long as the registry: its tables and code are borrowed. */
    sv_registry_add_cleanup(reg, module_close, mod);
    sv_planner_plugin_register_fn fn = (sv_planner_plugin_register_fn)sym;
    GError *err = NULL;
    if (!fn(reg, SV_REGISTRY_API_VERSION, &err)) {
        if (err) {
            g_propagate_prefixed_error(error, err, "plugin %s: ", path);
        } else {
            g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                        "plugin %s: registration failed", path);
        }
        return FALSE;
    }
    return TRUE;
}

sv_registry *sv_planner_registry_new(GError **error)
{
    g_autoptr(sv_registry) reg = sv_registry_new();
    if (!sv_planner_router_register_builtins(reg, error) ||
        !sv_msg_sched_register_builtins(reg, error) ||
        !sv_memtier_kv_evict_register_builtins(reg, error) ||
        !sv_msg_expert_route_register_builtins(reg, error) ||
        !sv_compute_pim_register_builtins(reg, error))
        return NULL;
    return g_steal_pointer(&reg);
}
