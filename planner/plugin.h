/* servesim plugins: policies from a shared object.
 *
 * A plugin adds routers, batch schedulers, KV eviction policies or expert-routing policies to
 * the registry (core/core.h) that `servesim run` looks names up in. The built-in policies are
 * registered through exactly the same tables.
 *
 * Writing one
 *   #include "planner/plugin.h"
 *   static int32_t my_route(void *state, const struct sv_planner_router_req *req, int32_t n,
 *                           const struct sv_planner_router_inst *inst) { ... return index; }
 *   static const struct sv_planner_router_ops my_router = {
 *       .api_version = SV_REGISTRY_API_VERSION, .route = my_route};
 *   G_MODULE_EXPORT gboolean sv_plugin_register(sv_registry *r, unsigned api_version,
 *                                               GError **error)
 *   {
 *       if (!sv_planner_plugin_check_version(api_version, error))
 *           return FALSE;
 *       return sv_registry_add(r, SV_REGISTRY_ROUTER, "my_router", &my_router, NULL, error);
 *   }
 *   The tables: struct sv_planner_router_ops (planner/planner.h), struct sv_msg_sched_ops with the scheduler
 *   view sv_msg_view_* and struct sv_msg_expert_route_ops (msg/msg.h), struct sv_memtier_kv_evict_ops
 *   (memory-tier/kvcache.h). Tables must be static (they are borrowed until the registry is
 *   freed); per-run or per-instance state comes from the table's `create`.
 *
 * Building one
 *   cc -std=c11 -fPIC -shared -I<servesim source root> $(pkg-config --cflags glib-2.0 \
 *      json-glib-1.0) my_plugin.c -o my_plugin.so
 *   A plugin links against nothing of servesim: the functions it calls (sv_registry_add,
 *   sv_msg_view_*, sv_rng_*) resolve against the servesim executable, which exports its symbols
 *   (CMake ENABLE_EXPORTS). With CMake inside this tree: add_library(x MODULE x.c), as
 *   examples/plugins/CMakeLists.txt does.
 *
 * Loading one
 *   servesim run --plugin ./my_plugin.so --router my_router ...   (--plugin is repeatable)
 *   The loader opens the file with GModule (local symbols), calls sv_plugin_register once with
 *   SV_REGISTRY_API_VERSION and keeps the module open until the registry is freed.
 *
 * ABI and versions
 *   SV_REGISTRY_API_VERSION changes whenever a table, a struct passed to a callback, or the
 *   meaning of a callback changes. sv_plugin_register receives the host's version and must refuse
 *   any other (sv_planner_plugin_check_version); the registry also refuses a table whose api_version
 *   differs. Names are unique per kind: registering a taken name fails and names both origins.
 *   Tables only grow at the end within a version; callbacks marked optional may be NULL. */
#ifndef SV_PLANNER_PLUGIN_H
#define SV_PLANNER_PLUGIN_H

#include "core/core.h"
#include "memory-tier/kvcache.h"
#include "msg/msg.h"
#include "planner/planner.h"

#include <gmodule.h>

G_BEGIN_DECLS

/* The entry point a plugin exports. */
#define SV_PLANNER_PLUGIN_ENTRY "sv_plugin_register"
typedef gboolean (*sv_planner_plugin_register_fn)(sv_registry *r, unsigned api_version, GError **error);

/* For plugins: TRUE when `host_version` is the version this plugin was compiled against. */
static inline gboolean sv_planner_plugin_check_version(unsigned host_version, GError **error)
{
    if (host_version == SV_REGISTRY_API_VERSION)
        return TRUE;
    g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                "plugin built for policy API version %u, servesim has version %u",
                (unsigned)SV_REGISTRY_API_VERSION, host_version);
    return FALSE;
}

/* Load the shared object at `path` and let it register its policies in `reg`. Errors name the
 * file: cannot be opened, no sv_plugin_register symbol, version mismatch, or whatever the plugin
 * reported (a duplicate name). On failure the registry may hold the tables the plugin registered
 * before failing; the module then stays open with it. */
gboolean sv_planner_plugin_load(sv_registry *reg, const char *path, GError **error);

G_END_DECLS

#endif
