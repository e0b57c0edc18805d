/* instances[].speculative in cluster configs (planner/spec.c, docs/speculative.md): every bad
 * value is one error naming its config path, and a valid object is refused with a message that
 * says the engine does not simulate it yet (never ignored). */
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
    expect_error(ONE("{\"method\":\"draft\",\"draft_model\":\"Llama-3.1-8B\","
                     "\"num_speculative_tokens\":4,\"acceptance_rate\":0.7}"),
                 P ": speculative decoding (draft, k 4) is validated but not simulated by the "
                   "serving engine yet (docs/speculative.md)");
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"speculative keys: errors name the config path", test_bad},
        {NULL, NULL},
    };
    sv_test_add_suite("spec_config", cases);
    return sv_test_run();
}
