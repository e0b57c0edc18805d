/* Engine profile in the planner (docs/serving.md "Engine profiles"): the cluster config's
 * top-level "engine", and which max_num_seqs / max_num_batched_tokens an instance gets when
 * neither the command line nor the config sets them: `vllm serve`'s for the device where the
 * config names an engine (or in the quick form), LLMServingSim's 128 / 2048 otherwise.
 *
 * The limits are observed through a run: 300 requests of 16 + 16 tokens, all at t ~ 0, on the
 * roofline; the most requests running after any step is the sequence cap wherever the token
 * budget lets that many in (hand counts in each case). */
#include "planner/planner.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <string.h>

static struct sv_planner_cluster_cfg *parse(const char *json, GError **e)
{
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, json, -1, NULL));
    return sv_planner_cluster_from_json(json_parser_get_root(p), "config.json", e);
}

/* One instance of `hw` with `mem` GiB; `top` and `inst` are extra keys (may be ""). */
static char *config(const char *top, const char *hw, int mem, const char *inst)
{
    return g_strdup_printf("{%s\"num_nodes\": 1, \"link_bw\": 16, \"link_latency\": 0, "
                           "\"nodes\": [{\"num_instances\": 1, \"cpu_mem\": {\"mem_size\": 64, "
                           "\"mem_bw\": 64, \"mem_latency\": 0}, \"instances\": [{\"model_name\": "
                           "\"meta-llama/Llama-3.1-8B\", \"hardware\": \"%s\", \"npu_mem\": "
                           "{\"mem_size\": %d, \"mem_bw\": 2000, \"mem_latency\": 0}%s}]}]}",
                           top, hw, mem, inst);
}

static void test_engine_key(void)
{
    g_autoptr(GError) e = NULL;
    g_autofree char *plain = config("", "H100", 80, "");
    struct sv_planner_cluster_cfg *c = parse(plain, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_STRING_EQUAL(c->engine, "");
    CU_ASSERT_FALSE(c->vllm_batch_defaults);
    sv_planner_cluster_free(c);
    g_autofree char *named = config("\"engine\": \"vllm-0.10\", ", "H100", 80, "");
    c = parse(named, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_STRING_EQUAL(c->engine, "vllm-0.10");
    CU_ASSERT(c->vllm_batch_defaults);
    sv_planner_cluster_free(c);
    c = sv_planner_cluster_single("meta-llama/Llama-3.1-8B", "H100-SXM", 1, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT(c->vllm_batch_defaults);
    sv_planner_cluster_free(c);
    const char *bad[] = {"\"engine\": \"sglang\", ", "\"engine\": 3, "};
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *j = config(bad[i], "H100", 80, "");
        GError *err = NULL;
        c = parse(j, &err);
        CU_ASSERT_PTR_NULL(c);
        CU_ASSERT_PTR_NOT_NULL_FATAL(err);
        CU_ASSERT_PTR_NOT_NULL(strstr(err->message, "config.json.engine"));
        g_error_free(err);
        sv_planner_cluster_free(c);
    }
}

static void on_iter(void *ctx, const struct sv_msg_iter_done *it)
{
    uint32_t *most = ctx;
    *most = MAX(*most, it->running);
}

/* Most requests running after a step; run_seqs > 0 plays --max-num-seqs. */
static uint32_t most_running(const char *json, int64_t run_seqs)
{
    g_autoptr(GError) e = NULL;
    struct sv_planner_cluster_cfg *c = parse(json, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    struct sv_wl_gen_cfg g = {0};
    g.count = 300;
    CU_ASSERT_FATAL(sv_wl_arrival_parse("fixed", 1e9, &g.arrival, &e));
    CU_ASSERT_FATAL(sv_wl_len_parse("16", TRUE, &g.input_len, &e));
    CU_ASSERT_FATAL(sv_wl_len_parse("16", FALSE, &g.output_len, &e));
    sv_wl_source *src = sv_wl_generator_new(&g, &e);
    sv_wl_len_clear(&g.input_len);
    sv_wl_len_clear(&g.output_len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(src);
    uint32_t most = 0;
    struct sv_planner_run_observer obs = {.on_iteration = on_iter, .ctx = &most};
    struct sv_planner_run_cfg cfg = {0};
    cfg.cluster = c;
    cfg.workload = src;
    cfg.latency = SV_PLANNER_RUN_LATENCY_ROOFLINE;
    cfg.enable_prefix_caching = -1;
    cfg.enable_chunked_prefill = -1;
    cfg.reserve_full_isl = -1;
    cfg.max_num_seqs = run_seqs;
    cfg.observer = &obs;
    struct sv_planner_run_result res;
    gboolean ok = sv_planner_run(&cfg, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT(ok);
    SV_ASSERT_EQ_I64(res.requests, 300);
    sv_wl_source_free(src);
    sv_planner_cluster_free(c);
    return most;
}

static void test_batch_limits(void)
{
    /* LLMServingSim's format: 128 sequences (the first step already admits 128 x 16 = 2048
     * tokens, the whole budget). */
    g_autofree char *plain = config("", "H100", 80, "");
    SV_ASSERT_EQ_I64(most_running(plain, 0), 128);
    /* An engine named, H100 (80 GiB): 8192 tokens and 1024 sequences: all 300 (4,800 tokens)
     * in the first step. The timing profile does not matter for the limits. */
    for (int k = 0; k < 2; k++) {
        g_autofree char *named = config(
            k ? "\"engine\": \"vllm-0.10\", " : "\"engine\": \"vllm-0.19\", ", "H100", 80, "");
        SV_ASSERT_EQ_I64(most_running(named, 0), 300);
    }
    /* A100 80 GB, engine named: 2048 / 256: 128 in the first step, then decodes leave room in
     * the budget for more until 256 run. */
    g_autofree char *a100 = config("\"engine\": \"vllm-0.19\", ", "A100-80GB", 80, "");
    SV_ASSERT_EQ_I64(most_running(a100, 0), 256);
    /* The instance's and the command line's values win over the defaults. */
    g_autofree char *inst =
        config("\"engine\": \"vllm-0.19\", ", "H100", 80, ", \"max_num_seqs\": 100");
    SV_ASSERT_EQ_I64(most_running(inst, 0), 100);
    SV_ASSERT_EQ_I64(most_running(inst, 64), 64);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"top-level engine key", test_engine_key},
        {"batch limits by config form and device", test_batch_limits},
        {NULL, NULL},
    };
    sv_test_add_suite("planner_engine", cases);
    return sv_test_run();
}
