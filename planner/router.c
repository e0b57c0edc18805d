/* Built-in router policies as registry tables (struct sv_planner_router_ops, planner.h). */
#include "planner/planner.h"

typedef struct {
    uint64_t rr; /* round-robin cursor */
    sv_rng *rng; /* the run's "router/random" stream */
} router_state;

static void *router_create(int32_t n_instances, const char *param, sv_rng *rng, GError **error)
{
    if (param && *param) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                    "built-in routers take no parameter (got '%s')", param);
        return NULL;
    }
    router_state *s = g_new0(router_state, 1);
    s->rng = rng;
    return s;
}

/* LLMServingSim's LOAD policy (vLLM's DP load balancer): score = 4 x waiting + running, the
 * lowest score wins, ties to the lowest index. */
static int32_t least_load_route(void *state, const struct sv_planner_router_req *req, int32_t n,
                                const struct sv_planner_router_inst *inst)
{
    int32_t best = 0;
    uint64_t best_score = UINT64_MAX;
    for (int32_t i = 0; i < n; i++) {
        uint64_t s = 4 * (uint64_t)inst[i].waiting + inst[i].running;
        if (s < best_score) {
            best_score = s;
            best = i;
        }
    }
    return best;
}

static int32_t round_robin_route(void *state, const struct sv_planner_router_req *req, int32_t n,
                                 const struct sv_planner_router_inst *inst)
{
    router_state *s = state;
    int32_t i = (int32_t)(s->rr % (uint64_t)n);
    s->rr++;
    return i;
}

static int32_t random_route(void *state, const struct sv_planner_router_req *req, int32_t n,
                            const struct sv_planner_router_inst *inst)
{
    router_state *s = state;
    return (int32_t)sv_rng_below(s->rng, (uint64_t)n);
}

static const struct sv_planner_router_ops least_load_ops = {SV_REGISTRY_API_VERSION, router_create,
                                                            g_free, least_load_route};
static const struct sv_planner_router_ops round_robin_ops = {SV_REGISTRY_API_VERSION, router_create,
                                                             g_free, round_robin_route};
static const struct sv_planner_router_ops random_ops = {SV_REGISTRY_API_VERSION, router_create,
                                                        g_free, random_route};

gboolean sv_planner_router_register_builtins(sv_registry *reg, GError **error)
{
    /* Names first, then their short aliases. */
    static const struct {
        const char *name;
        const struct sv_planner_router_ops *ops;
    } t[] = {
        {"least_load", &least_load_ops}, {"round_robin", &round_robin_ops}, {"random", &random_ops},
        {"load", &least_load_ops},       {"rr", &round_robin_ops},          {"rand", &random_ops},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
        if (!sv_registry_add(reg, SV_REGISTRY_ROUTER, t[i].name, t[i].ops, "built-in", error))
            return FALSE;
    }
    return sv_planner_router_register_policies(reg, error); /* router_policies.c */
}
