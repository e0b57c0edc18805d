/* A plugin built against another policy API version (test_plugins: the loader must refuse it,
 * naming the file). */
#include "core/core.h"
#undef SV_REGISTRY_API_VERSION
#define SV_REGISTRY_API_VERSION 99u
#include "planner/plugin.h"

G_MODULE_EXPORT gboolean sv_plugin_register(sv_registry *r, unsigned api_version, GError **error);

G_MODULE_EXPORT gboolean sv_plugin_register(sv_registry *r, unsigned api_version, GError **error)
{
    return sv_planner_plugin_check_version(api_version, error);
}
