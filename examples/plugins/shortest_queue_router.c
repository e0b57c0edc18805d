/* Example plugin: a router that sends each request to the instance whose waiting queue holds the
 * fewest tokens still to compute (ties: fewer running requests, then the lowest index). Unlike
 * the built-in least_load (a request count), it sees that one long prompt is more work than
 * several short ones. Build: see planner/plugin.h; load: servesim run --plugin
 * libsv_plugin_router.so --router shortest_queue_by_tokens ... */
#include "planner/plugin.h"

static int32_t route(void *state, const struct sv_planner_router_req *req, int32_t n,
                     const struct sv_planner_router_inst *inst)
{
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++) {
        const struct sv_planner_router_inst *a = &inst[i], *b = &inst[best];
        if (a->waiting_tokens < b->waiting_tokens ||
            (a->waiting_tokens == b->waiting_tokens && a->running < b->running))
            best = i;
    }
    return best;
}

static const struct sv_planner_router_ops ops = {
    .api_version = SV_REGISTRY_API_VERSION,
    .route = route,
};

G_MODULE_EXPORT gboolean sv_plugin_register(sv_registry *r, unsigned api_version, GError **error);

G_MODULE_EXPORT gboolean sv_plugin_register(sv_registry *r, unsigned api_version, GError **error)
{
    if (!sv_planner_plugin_check_version(api_version, error))
        return FALSE;
    return sv_registry_add(r, SV_REGISTRY_ROUTER, "shortest_queue_by_tokens", &ops,
                           "examples/plugins/shortest_queue_router.c", error);
}
