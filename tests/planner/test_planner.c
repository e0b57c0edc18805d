/* Cluster config parsing (good and bad input, error paths) and routers. */
#include "planner/planner.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>

#define CASE_CFG SV_SHARED "/reference/llmservingsim/validation/RTXPRO6000/Llama-3.1-8B/config.json"

static struct sv_planner_cluster_cfg *parse(const char *json, GError **e)
{
    JsonParser *p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, json, -1, NULL));
    struct sv_planner_cluster_cfg *c =
        sv_planner_cluster_from_json(json_parser_get_root(p), "config.json", e);
    g_object_unref(p);
    return c;
}

static void test_case_config(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim/validation/RTXPRO6000/Llama-3.1-8B",
                      "the RTXPRO6000 validation case config");
    GError *e = NULL;
    struct sv_planner_cluster_cfg *c = sv_planner_cluster_load(CASE_CFG, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->n_instances, 1);
    CU_ASSERT_STRING_EQUAL(c->instances[0].model_name, "meta-llama/Llama-3.1-8B");
    CU_ASSERT_STRING_EQUAL(c->instances[0].hardware, "RTXPRO6000");
    CU_ASSERT_DOUBLE_EQUAL(c->instances[0].npu_mem_gib, 96, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(c->instances[0].mem_util, 0.9, 1e-12);
    CU_ASSERT_EQUAL(c->instances[0].tp_size, 1);
    CU_ASSERT_EQUAL(c->instances[0].max_num_seqs, -1); /* not overridden */
    CU_ASSERT_DOUBLE_EQUAL(c->link_bw_gbps, 16, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(c->link_latency_ns, 20000, 1e-9);
    sv_planner_cluster_free(c);
}

static void test_every_reference_config(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim/configs/cluster", "LLMServingSim's cluster configs");
    const char *dir = SV_SHARED "/reference/llmservingsim/configs/cluster";
    GDir *d = g_dir_open(dir, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    const char *name;
    int n = 0;
    while ((name = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(dir, name, NULL);
        GError *e = NULL;
        struct sv_planner_cluster_cfg *c = sv_planner_cluster_load(p, &e);
        /* Every one parses, single_node_cxl_instance's placement included (memory tiers:
         * tests/planner/test_tier_config.c). */
        if (!c)
            fprintf(stderr, "%s: %s\n", name, e->message);
        CU_ASSERT_PTR_NOT_NULL(c);
        /* The power block is read (every node has one: the model is on), nothing ignored; its
         * numbers are checked in tests/power. */
        if (c && strcmp(name, "single_node_power_instance.json") == 0) {
            CU_ASSERT_PTR_NULL(c->unsupported);
            CU_ASSERT(c->power && c->nodes[0].has_power);
            CU_ASSERT_EQUAL(c->nodes[0].power.dram_dimms, 16); /* ceil(512 GB / 32 GB) */
        }
        if (c && strcmp(name, "single_node_single_instance.json") == 0)
            CU_ASSERT_PTR_NULL(c->unsupported);
        g_clear_error(&e);
        sv_planner_cluster_free(c);
        n++;
    }
    g_dir_close(d);
    CU_ASSERT(n >= 20);
}

#define WRAP(inst)                                                                                 \
    "{\"num_nodes\":1,\"link_bw\":16,\"link_latency\":0,\"nodes\":[{\"num_instances\":2,"          \
    "\"cpu_mem\":{\"mem_size\":1,\"mem_bw\":1,\"mem_latency\":0},\"instances\":["                  \
    "{\"model_name\":\"m\",\"hardware\":\"h\",\"npu_mem\":{\"mem_size\":80,\"mem_bw\":1,"          \
    "\"mem_latency\":0}}," inst "]}]}"

static void expect_error(const char *json, const char *needle)
{
    GError *e = NULL;
    struct sv_planner_cluster_cfg *c = parse(json, &e);
    CU_ASSERT_PTR_NULL(c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    if (!strstr(e->message, needle))
        fprintf(stderr, "message '%s' lacks '%s'\n", e->message, needle);
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, needle));
    g_error_free(e);
    sv_planner_cluster_free(c);
}

static void test_bad_values(void)
{
    expect_error(WRAP("{\"model_name\":\"m\",\"hardware\":\"h\",\"tp_size\":0,"
                      "\"npu_mem\":{\"mem_size\":80}}"),
                 "config.json: nodes[0].instances[1].tp_size");
    expect_error(WRAP("{\"model_name\":\"m\",\"hardware\":\"h\",\"npu_mem\":{\"mem_size\":80,"
                      "\"mem_util\":90}}"),
                 "nodes[0].instances[1].npu_mem.mem_util");
    expect_error(WRAP("{\"hardware\":\"h\",\"npu_mem\":{\"mem_size\":80}}"),
                 "nodes[0].instances[1].model_name: missing");
    expect_error(WRAP("{\"model_name\":\"m\",\"hardware\":\"h\",\"npu_mem\":{\"mem_size\":-1}}"),
                 "instances[1].npu_mem.mem_size");
    expect_error(WRAP("{\"model_name\":\"m\",\"hardware\":\"h\",\"pd_type\":\"both\","
                      "\"npu_mem\":{\"mem_size\":8}}"),
                 "instances[1].pd_type");
    expect_error(WRAP("{\"model_name\":\"m\",\"hardware\":\"h\",\"enable_prefix_caching\":1,"
                      "\"npu_mem\":{\"mem_size\":8}}"),
                 "instances[1].enable_prefix_caching");
    expect_error("{\"num_nodes\":2,\"nodes\":[{\"instances\":[{\"model_name\":\"m\","
                 "\"hardware\":\"h\",\"npu_mem\":{\"mem_size\":8}}]}]}",
                 "config.json.num_nodes");
}

static void test_overrides_and_unknown(void)
{
    GError *e = NULL;
    /* The unknown key only warns (g_warning is not fatal in this test). */
    struct sv_planner_cluster_cfg *c =
        parse(WRAP("{\"model_name\":\"m\",\"hardware\":\"h\",\"max_num_seqs\":64,"
                   "\"block_size\":32,\"enable_prefix_caching\":false,\"num_npus\":4,"
                   "\"tp_size\":2,\"pp_size\":2,\"npu_mem\":{\"mem_size\":8}}"),
              &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->n_instances, 2);
    CU_ASSERT_EQUAL(c->instances[1].max_num_seqs, 64);
    CU_ASSERT_EQUAL(c->instances[1].block_size, 32);
    CU_ASSERT_EQUAL(c->instances[1].enable_prefix_caching, 0);
    CU_ASSERT_EQUAL(c->instances[1].num_npus, 4);
    CU_ASSERT_EQUAL(c->instances[1].pp_size, 2);
    CU_ASSERT_EQUAL(c->instances[1].index, 1);
    sv_planner_cluster_free(c);
}

/* A registry router by name with its own state; `rng` the "router/random" stream. */
typedef struct {
    const struct sv_planner_router_ops *ops;
    void *state;
} test_router;

static test_router router_open(const sv_registry *reg, const char *name, sv_rng *rng)
{
    test_router r = {0};
    GError *e = NULL;
    r.ops = sv_registry_lookup(reg, SV_REGISTRY_ROUTER, name, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r.ops);
    if (r.ops->create) {
        r.state = r.ops->create(3, sv_registry_param(name), rng, &e);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r.state);
    }
    return r;
}

static void router_close(test_router *r)
{
    if (r->ops->destroy && r->state)
        r->ops->destroy(r->state);
}

static int32_t route(test_router *r, uint64_t id, const struct sv_planner_router_inst *inst)
{
    sv_wl_req wr = {.request_id = id, .input_tokens = 16, .output_tokens = 4};
    struct sv_planner_router_req q = {.req = &wr};
    return r->ops->route(r->state, &q, 3, inst);
}

/* The built-in routers through the registry, as the run uses them (planner/router.c). */
static void test_routers(void)
{
    GError *e = NULL;
    sv_registry *reg = sv_planner_registry_new(&e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(reg);
    struct sv_planner_router_inst inst[3] = {
        {.index = 0, .waiting = 1, .running = 0},
        {.index = 1, .waiting = 0, .running = 5},
        {.index = 2, .waiting = 0, .running = 3},
    };

    /* least_load: scores 4 x waiting + running = 4, 5, 3: instance 2; then 4, 5, 4: the tie
     * goes to the lowest index. "load" is its alias. */
    const char *ll_names[] = {"least_load", "load"};
    for (size_t k = 0; k < G_N_ELEMENTS(ll_names); k++) {
        test_router ll = router_open(reg, ll_names[k], NULL);
        inst[2].running = 3;
        CU_ASSERT_EQUAL(route(&ll, 0, inst), 2);
        inst[2].running = 4;
        CU_ASSERT_EQUAL(route(&ll, 1, inst), 0);
        router_close(&ll);
    }

    /* round_robin ("rr"): 0, 1, 2, 0, 1, 2 whatever the loads. */
    const char *rr_names[] = {"round_robin", "rr"};
    for (size_t k = 0; k < G_N_ELEMENTS(rr_names); k++) {
        test_router rr = router_open(reg, rr_names[k], NULL);
        for (int i = 0; i < 6; i++)
            CU_ASSERT_EQUAL(route(&rr, (uint64_t)i, inst), i % 3);
        router_close(&rr);
    }

    /* random ("rand"): with one seed, the same choices in two runs; 300 requests spread over
     * the 3 instances, counts summing to 300, each far from 0 (expected 100 each; the chance
     * that a fair draw leaves one at 50 or fewer is below 1e-8). */
    sv_rng *a = sv_rng_new(5, "router/random"), *b = sv_rng_new(5, "router/random");
    test_router ra = router_open(reg, "random", a), rb = router_open(reg, "rand", b);
    int seen[3] = {0};
    gboolean same = TRUE, in_range = TRUE;
    for (int i = 0; i < 300; i++) {
        int32_t x = route(&ra, (uint64_t)i, inst);
        same = same && x == route(&rb, (uint64_t)i, inst);
        in_range = in_range && x >= 0 && x < 3;
        if (x >= 0 && x < 3)
            seen[x]++;
    }
    CU_ASSERT(same);
    CU_ASSERT(in_range);
    CU_ASSERT_EQUAL(seen[0] + seen[1] + seen[2], 300);
    CU_ASSERT(seen[0] > 50 && seen[1] > 50 && seen[2] > 50);
    router_close(&ra);
    router_close(&rb);
    sv_rng_free(a);
    sv_rng_free(b);

    /* The built-ins take no parameter; an unknown name is an error naming it. */
    CU_ASSERT_PTR_NULL(sv_registry_lookup(reg, SV_REGISTRY_ROUTER, "fastest", &e));
    CU_ASSERT_PTR_NOT_NULL(e && strstr(e->message, "fastest"));
    g_clear_error(&e);
    const struct sv_planner_router_ops *ops =
        sv_registry_lookup(reg, SV_REGISTRY_ROUTER, "rr", NULL);
    CU_ASSERT_PTR_NULL(ops->create(3, "x", NULL, &e));
    CU_ASSERT_PTR_NOT_NULL(e);
    g_clear_error(&e);
    sv_registry_free(reg);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"validation case config", test_case_config},
        {"every reference cluster config", test_every_reference_config},
        {"bad values name the field path", test_bad_values},
        {"overrides and unknown keys", test_overrides_and_unknown},
        {"routers", test_routers},
        {NULL, NULL},
    };
    sv_test_add_suite("planner", cases);
    return sv_test_run();
}
