/* instances[].speculative in cluster configs (planner/spec.c, docs/speculative.md): every bad
 * value is one error naming its config path, and a valid object (a fixed rate or a per-request
 * Beta distribution) is read into the instance. */
#include "planner/planner.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <string.h>

#define ONE(inst)                                                                                  \
    "{\"num_nodes\":1,\"link_bw\":16,\"link_latency\":0,\"nodes\":[{\"num_instances\":1,"          \
    "\"cpu_mem\":{\"mem_size\":1,\"mem_bw\":1,\"mem_latency\":0},\"instances\":["                  \
    "{\"model_name\":\"Llama-3.1-8B\",\"hardware\":\"H100\",\"npu_mem\":{\"mem_size\":80,"         \
    "\"mem_bw\":3350,\"mem_latency\":0,\"mem_util\":0.9},\"speculative\":" inst "}]}]}"

static void expect_error(const char *json, const char *needle)
{
    JsonParser *p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, json, -1, NULL));
    GError *e = NULL;
    struct sv_planner_cluster_cfg *c =
        sv_planner_cluster_from_json(json_parser_get_root(p), "cluster.json", &e);
    g_object_unref(p);
    CU_ASSERT_PTR_NULL(c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    if (!strstr(e->message, needle))
        fprintf(stderr, "message '%s' lacks '%s'\n", e->message, needle);
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, needle));
    g_error_free(e);
    sv_planner_cluster_free(c);
}

#define P "nodes[0].instances[0].speculative"

static void test_bad(void)
{
    expect_error(ONE("{\"method\":\"eagle\",\"num_speculative_tokens\":0,\"acceptance_rate\":0.5}"),
                 P ".num_speculative_tokens: 0 is out of range (1 .. 64)");
    expect_error(
        ONE("{\"method\":\"eagle\",\"num_speculative_tokens\":-2,\"acceptance_rate\":0.5}"),
        P ".num_speculative_tokens: -2 is out of range");
    expect_error(
        ONE("{\"method\":\"eagle\",\"num_speculative_tokens\":2.5,\"acceptance_rate\":0.5}"),
        P ".num_speculative_tokens: expected an integer");
    expect_error(ONE("{\"method\":\"mtp\",\"num_speculative_tokens\":3,\"acceptance_rate\":1.2}"),
                 P ".acceptance_rate: 1.2 is outside [0, 1]");
    expect_error(ONE("{\"method\":\"mtp\",\"num_speculative_tokens\":3}"),
                 P ": no acceptance_rate (acceptance_rate: one rate; acceptance: a distribution");
    expect_error(ONE("{\"method\":\"mtp\",\"num_speculative_tokens\":3,\"acceptance_rate\":\"x\"}"),
                 P ".acceptance_rate: expected a number");
    expect_error(ONE("{\"method\":\"ngram\",\"num_speculative_tokens\":3,\"acceptance_rate\":0.5}"),
                 P ".method: 'ngram' is not a speculative method");
    expect_error(ONE("{\"method\":\"draft\",\"draft_model\":\"nobody/tiny\","
                     "\"num_speculative_tokens\":3,\"acceptance_rate\":0.5}"),
                 P ".draft_model: ");
    expect_error(ONE("{\"method\":\"draft\",\"num_speculative_tokens\":3,\"acceptance_rate\":0.5,"
                     "\"k\":3}"),
                 P ": unknown key 'k'");
    expect_error(ONE("3"), P ": expected an object");
    /* The per-request distribution. */
#define BETA(x) "{\"method\":\"eagle\",\"num_speculative_tokens\":3,\"acceptance\":" x "}"
    expect_error(ONE(BETA("{\"distribution\":\"normal\",\"mean\":0.7,\"concentration\":10}")),
                 P ".acceptance.distribution: 'normal' is not a distribution (beta)");
    expect_error(ONE(BETA("{\"mean\":0.7,\"concentration\":10}")),
                 P ".acceptance.distribution: expected a string (beta)");
    expect_error(ONE(BETA("{\"distribution\":\"beta\",\"mean\":1,\"concentration\":10}")),
                 P ".acceptance.mean: 1 is outside (0, 1)");
    expect_error(ONE(BETA("{\"distribution\":\"beta\",\"mean\":0.7,\"concentration\":0}")),
                 P ".acceptance.concentration: 0 is outside (0, 1e6]");
    expect_error(ONE(BETA("{\"distribution\":\"beta\",\"mean\":0.7}")),
                 P ".acceptance.concentration: expected a number");
    expect_error(ONE(BETA("{\"distribution\":\"beta\",\"mean\":0.7,\"concentration\":9,"
                          "\"sd\":1}")),
                 P ".acceptance: unknown key 'sd' (distribution, mean, concentration)");
    expect_error(ONE(BETA("[0.7]")), P ".acceptance: expected an object");
    expect_error(ONE("{\"method\":\"eagle\",\"num_speculative_tokens\":3,\"acceptance_rate\":0.5,"
                     "\"acceptance\":{\"distribution\":\"beta\",\"mean\":0.7,"
                     "\"concentration\":10}}"),
                 P ": acceptance_rate and acceptance both given");
}

static struct sv_planner_cluster_cfg *load(const char *json)
{
    JsonParser *p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, json, -1, NULL));
    GError *e = NULL;
    struct sv_planner_cluster_cfg *c =
        sv_planner_cluster_from_json(json_parser_get_root(p), "cluster.json", &e);
    g_object_unref(p);
    if (e)
        fprintf(stderr, "%s\n", e->message);
    g_clear_error(&e);
    return c;
}

static void test_good(void)
{
    struct sv_planner_cluster_cfg *c = load(ONE("{\"method\":\"draft\",\"draft_model\":"
                                                "\"Llama-3.1-8B\",\"num_speculative_tokens\":4,"
                                                "\"acceptance_rate\":0.7}"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    const struct sv_planner_instance_cfg *ic = &c->instances[0];
    CU_ASSERT_TRUE(ic->has_spec);
    CU_ASSERT_EQUAL(ic->spec.method, SV_COMPUTE_SPEC_DRAFT);
    CU_ASSERT_EQUAL(ic->spec.k, 4);
    CU_ASSERT_DOUBLE_EQUAL(ic->spec.acceptance, 0.7, 0);
    CU_ASSERT_EQUAL(ic->spec.dist, SV_COMPUTE_SPEC_ACCEPT_FIXED);
    CU_ASSERT_EQUAL(ic->spec.draft.num_layers, 32); /* Llama-3.1-8B: 32 layers (config.json) */
    sv_planner_cluster_free(c);
    c = load(ONE(BETA("{\"distribution\":\"beta\",\"mean\":0.7,\"concentration\":10}")));
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    ic = &c->instances[0];
    CU_ASSERT_TRUE(ic->has_spec);
    CU_ASSERT_EQUAL(ic->spec.method, SV_COMPUTE_SPEC_EAGLE);
    CU_ASSERT_EQUAL(ic->spec.dist, SV_COMPUTE_SPEC_ACCEPT_BETA);
    CU_ASSERT_DOUBLE_EQUAL(ic->spec.acceptance, 0.7, 0);
    CU_ASSERT_DOUBLE_EQUAL(ic->spec.concentration, 10, 0);
    sv_planner_cluster_free(c);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"speculative keys: errors name the config path", test_bad},
        {"speculative: a valid object is read into the instance", test_good},
        {NULL, NULL},
    };
    sv_test_add_suite("spec_config", cases);
    return sv_test_run();
}
