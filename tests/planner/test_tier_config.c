/* Memory-tier configuration (issue 8 tests 10 and 11): cxl_mem, placement rules, their
 * resolution against the model, the HBM bytes they leave and the KV pool that grows from it;
 * npu_num / npu_group; the run flags and their precedence. Errors name the JSON path.
 *
 * Llama-3.1-8B (H 4096, I 14336, 32 heads, 8 KV heads, head dim 128, 32 layers, vocab 128256,
 * untied, bf16):
 *   decoder block = 4096*128*(32+8+8+32) + 3*4096*14336 + 2*4096 = 41,943,040 + 176,160,768
 *                   + 8,192 = 218,112,000 params = 436,224,000 B
 *   embedding = lm_head = 128256*4096*2 = 1,050,673,152 B; final norm = 4096*2 = 8,192 B
 *   total = 2*1,050,673,152 + 32*436,224,000 + 8,192 = 16,060,522,496 B
 *   KV per token, all layers = 32 * 2*8*128*2 = 131,072 B; 16-token block = 2,097,152 B. */
#include "planner/planner.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <string.h>

#define CXL_CFG SV_SHARED "/reference/llmservingsim/configs/cluster/single_node_cxl_instance.json"
#define FIG7_CFG SV_SHARED "/reference/llmservingsim-ispass26/figure_7/config/SD+PC_config.json"

#define LAYER_B 436224000ULL
#define EMB_B 1050673152ULL

static struct sv_planner_cluster_cfg *parse(const char *json, GError **e)
{
    JsonParser *p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, json, -1, NULL));
    struct sv_planner_cluster_cfg *c =
        sv_planner_cluster_from_json(json_parser_get_root(p), "cluster.json", e);
    g_object_unref(p);
    return c;
}

static void llama(struct sv_compute_model_cfg *m)
{
    GError *e = NULL;
    CU_ASSERT_FATAL(sv_compute_model_lookup("meta-llama/Llama-3.1-8B", NULL, m, &e));
}

static void test_model_parts(void)
{
    struct sv_compute_model_cfg m;
    llama(&m);
    SV_ASSERT_EQ_I64(sv_compute_model_layer_weight_bytes(&m, 1), LAYER_B);
    SV_ASSERT_EQ_I64(sv_compute_model_embedding_bytes(&m, 1), EMB_B);
    SV_ASSERT_EQ_I64(sv_compute_model_head_bytes(&m, 1), EMB_B);
    SV_ASSERT_EQ_I64(sv_compute_model_final_norm_bytes(&m), 8192);
    /* The parts add up to the whole: 2*1,050,673,152 + 32*436,224,000 + 8,192. */
    SV_ASSERT_EQ_I64(sv_compute_model_weight_bytes(&m, 1), 16060522496ULL);
    SV_ASSERT_EQ_I64(2 * EMB_B + 32 * LAYER_B + 8192, 16060522496ULL);
}

/* Test 10: LLMServingSim's single_node_cxl_instance. */
static void test_cxl_instance(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim/configs/cluster/single_node_cxl_instance.json",
                      "LLMServingSim's CXL cluster config");
    GError *e = NULL;
    struct sv_planner_cluster_cfg *c = sv_planner_cluster_load(CXL_CFG, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_PTR_NULL(c->unsupported); /* cxl_mem and kv_evict_loc are read, not noted */
    CU_ASSERT(c->cxl.set);
    CU_ASSERT_EQUAL(c->cxl.num_devices, 4);
    CU_ASSERT_DOUBLE_EQUAL(c->cxl.size_gib, 1024, 0);
    CU_ASSERT_DOUBLE_EQUAL(c->cxl.bw_gbps, 60, 0);
    CU_ASSERT_DOUBLE_EQUAL(c->cxl.latency_ns, 250, 0);
    CU_ASSERT_EQUAL(c->cxl_scope, SV_PLANNER_CXL_NODE);
    CU_ASSERT_PTR_EQUAL(sv_planner_cluster_cxl(c, 0), &c->cxl);
    CU_ASSERT_DOUBLE_EQUAL(c->nodes[0].cpu_mem_bw_gbps, 256, 0);
    const struct sv_planner_instance_cfg *ic = &c->instances[0];
    /* default, 5 blocks rules, 3 layers rules (sorted: embedding, final_layernorm, lm_head). */
    CU_ASSERT_EQUAL_FATAL(ic->placement.n_rules, 9);
    CU_ASSERT_STRING_EQUAL(
        ic->placement.rules[0].path,
        "single_node_cxl_instance.json: nodes[0].instances[0].placement.default");
    CU_ASSERT_STRING_EQUAL(ic->placement.rules[3].blocks, "8,9,10");
    CU_ASSERT_EQUAL(ic->placement.rules[3].weights.kind, SV_PLANNER_LOC_CXL);
    CU_ASSERT_EQUAL(ic->placement.rules[3].weights.device, 2);
    CU_ASSERT_STRING_EQUAL(ic->placement.rules[6].layer, "embedding");
    CU_ASSERT_STRING_EQUAL(ic->placement.rules[8].layer, "lm_head");

    struct sv_compute_model_cfg m;
    llama(&m);
    struct sv_planner_placement_map map;
    CU_ASSERT_FATAL(sv_planner_placement_resolve(ic, 32, &map, &e));
    CU_ASSERT(map.any_offload);
    CU_ASSERT_EQUAL(map.layer_weights[9].device, 2);
    CU_ASSERT_EQUAL(map.layer_weights[23].device, 3);
    CU_ASSERT_EQUAL(map.layer_weights[24].device, 0);
    CU_ASSERT_EQUAL(map.layer_kv[5].kind, SV_PLANNER_LOC_NPU);
    CU_ASSERT_EQUAL(map.kv_evict.kind, SV_PLANNER_LOC_CPU);
    CU_ASSERT_EQUAL(map.embedding.device, 1);
    CU_ASSERT_EQUAL(map.final_norm.device, 2);
    CU_ASSERT_EQUAL(map.lm_head.device, 3);
    struct sv_planner_weight_split w;
    sv_planner_weight_split(&m, 1, 1, &map, &w);
    SV_ASSERT_EQ_I64(w.npu_bytes, 0);
    /* cxl:0 = blocks 0-3, 24-31: 12 x 436,224,000 */
    SV_ASSERT_EQ_I64(w.cxl_bytes[0], 5234688000ULL);
    /* cxl:1 = blocks 4-7 + embedding: 4 x 436,224,000 + 1,050,673,152 */
    SV_ASSERT_EQ_I64(w.cxl_bytes[1], 2795569152ULL);
    /* cxl:2 = blocks 8,9,10 + final norm: 3 x 436,224,000 + 8,192 */
    SV_ASSERT_EQ_I64(w.cxl_bytes[2], 1308680192ULL);
    /* cxl:3 = blocks 11-23 + lm_head: 13 x 436,224,000 + 1,050,673,152 */
    SV_ASSERT_EQ_I64(w.cxl_bytes[3], 6721585152ULL);
    SV_ASSERT_EQ_I64(w.off_bytes, 16060522496ULL);
    SV_ASSERT_EQ_I64(w.cpu_bytes + w.ssd_bytes, 0);
    /* HBM weights 0: trunc(96 x 2^30 x 0.9) = 92,771,293,593 B / 2,097,152 = 44,236.8. */
    uint64_t blocks;
    CU_ASSERT(sv_planner_instance_kv_blocks(ic, &m, &map, 16, &blocks, &e));
    SV_ASSERT_EQ_I64(blocks, 44236);
    sv_planner_placement_map_clear(&map);
    sv_planner_cluster_free(c);
}

/* Test 10, figure_7: LLMServingSim 1.0's npu_num / npu_group. */
static void test_figure7_aliases(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim-ispass26/figure_7/config/SD+PC_config.json",
                      "ISPASS'26 figure 7 configs");
    GError *e = NULL;
    struct sv_planner_cluster_cfg *c = sv_planner_cluster_load(FIG7_CFG, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->instances[0].tp_size, 1);
    CU_ASSERT_EQUAL(c->instances[0].pp_size, 1);
    CU_ASSERT_EQUAL(c->instances[0].num_npus, 1);
    sv_planner_cluster_free(c);
}

#define ONE(inst, top)                                                                             \
    "{\"num_nodes\":1,\"link_bw\":16,\"link_latency\":0," top "\"nodes\":[{\"num_instances\":1,"   \
    "\"cpu_mem\":{\"mem_size\":512,\"mem_bw\":256,\"mem_latency\":0},\"instances\":["              \
    "{\"model_name\":\"meta-llama/Llama-3.1-8B\",\"hardware\":\"H100\",\"npu_mem\":"               \
    "{\"mem_size\":80,\"mem_bw\":3350,\"mem_latency\":0}" inst "}]}]}"
#define CXL4 "\"cxl_mem\":{\"mem_size\":1024,\"mem_bw\":60,\"mem_latency\":250,\"num_devices\":4},"
#define RULE(b, w) "{\"blocks\":\"" b "\",\"weights\":\"" w "\"}"

static void expect_error(const char *json, const char *msg)
{
    GError *e = NULL;
    struct sv_planner_cluster_cfg *c = parse(json, &e);
    CU_ASSERT_PTR_NULL(c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    if (!strstr(e->message, msg))
        fprintf(stderr, "\n  got:  %s\n  want: %s\n", e->message, msg);
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, msg));
    g_error_free(e);
    sv_planner_cluster_free(c);
}

static void test_errors(void)
{
    expect_error(ONE(",\"placement\":{\"blocks\":[" RULE("0-3", "cxl:0") "," RULE(
                         "4-7", "cxl:1") "," RULE("8", "cxl:2") "," RULE("9", "cxl:4") "]}",
                     CXL4),
                 "cluster.json: nodes[0].instances[0].placement.blocks[3].weights: cxl:4 but "
                 "cxl_mem has 4 devices (0-3)");
    expect_error(ONE(",\"placement\":{\"default\":{\"weights\":\"cxl:0\"}}", ""),
                 "nodes[0].instances[0].placement.default.weights: cxl:0 but no cxl_mem is "
                 "configured");
    expect_error(ONE(",\"placement\":{\"default\":{\"kv_loc\":\"ssd\"}}", ""),
                 "placement.default.kv_loc: \"ssd\" holds weights only");
    expect_error(ONE(",\"placement\":{\"blocks\":[" RULE("3-1", "cpu") "]}", ""),
                 "placement.blocks[0].blocks: \"3-1\": blocks are");
    expect_error(ONE(",\"placement\":{\"default\":{\"kv_evict_loc\":\"cpu\"},\"blocks\":[{"
                     "\"blocks\":\"0\",\"kv_evict_loc\":\"cxl:0\"}]}",
                     CXL4),
                 "placement.blocks[0].kv_evict_loc: \"cxl:0\" but cluster.json: "
                 "nodes[0].instances[0].placement.default.kv_evict_loc is \"cpu\"");
    expect_error(ONE(",\"placement\":{\"layers\":{\"lm_heads\":{\"weights\":\"cpu\"}}}", ""),
                 "placement.layers.lm_heads: unknown layer");
    expect_error(ONE(",\"npu_num\":2,\"num_npus\":4", ""),
                 "nodes[0].instances[0].npu_num: 2 but cluster.json: nodes[0].instances[0]."
                 "num_npus is 4");
    expect_error(ONE("", "\"preemption_mode\":\"swapp\","),
                 "cluster.json: preemption_mode: \"swapp\": must be recompute or swap");
    expect_error(ONE("", "\"prefix_storage\":\"cpu,tape\","), "prefix_storage: \"cpu,tape\"");
    expect_error(ONE("", "\"cxl_mem\":{\"mem_size\":1,\"mem_bw\":1,\"scope\":\"rack\"},"),
                 "cluster.json: cxl_mem.scope: must be \"node\" or \"cluster\"");
    expect_error(ONE(",\"expert_offload\":{\"cache_experts\":2}", ""),
                 "nodes[0].instances[0].expert_offload.loc: missing");

    /* Out of range only once the model is known. */
    GError *e = NULL;
    struct sv_planner_cluster_cfg *c = parse(
        ONE(",\"placement\":{\"blocks\":[" RULE("0-3", "cpu") "," RULE("40", "cpu") "]}", ""), &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    struct sv_planner_placement_map map;
    CU_ASSERT_FALSE(sv_planner_placement_resolve(&c->instances[0], 32, &map, &e));
    CU_ASSERT(e && strcmp(e->message, "cluster.json: nodes[0].instances[0].placement.blocks[1]."
                                      "blocks: block 40 out of range (model has 32)") == 0);
    g_clear_error(&e);
    sv_planner_cluster_free(c);
    c = parse(ONE(",\"placement\":{\"blocks\":[" RULE("0-3", "cpu") "," RULE("3", "cpu") "]}", ""),
              &e);
    CU_ASSERT_FALSE(sv_planner_placement_resolve(&c->instances[0], 32, &map, &e));
    CU_ASSERT(e && strstr(e->message, "placement.blocks[1].blocks: block 3 is also in "
                                      "cluster.json: nodes[0].instances[0].placement.blocks[0]"));
    g_clear_error(&e);
    sv_planner_cluster_free(c);
}

static void test_aliases(void)
{
    GError *e = NULL;
    struct sv_planner_cluster_cfg *c = parse(ONE(",\"npu_num\":4,\"npu_group\":2", ""), &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->instances[0].num_npus, 4);
    CU_ASSERT_EQUAL(c->instances[0].pp_size, 2);
    CU_ASSERT_EQUAL(c->instances[0].tp_size, 2); /* npu_num / npu_group */
    sv_planner_cluster_free(c);
    /* pp_size alone: tp 1, num_npus = 1 x 2 (once tp = pp, then refused as too few NPUs). */
    c = parse(ONE(",\"pp_size\":2", ""), &e);
    g_assert_no_error(e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->instances[0].tp_size, 1);
    CU_ASSERT_EQUAL(c->instances[0].pp_size, 2);
    CU_ASSERT_EQUAL(c->instances[0].num_npus, 2);
    sv_planner_cluster_free(c);
}

/* Test 11: H100 80 GiB at 0.9, blocks 28-31 on cpu. */
static void test_capacity(void)
{
    GError *e = NULL;
    struct sv_planner_cluster_cfg *c =
        parse(ONE(",\"placement\":{\"blocks\":[" RULE("28-31", "cpu") "]}", ""), &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    struct sv_compute_model_cfg m;
    llama(&m);
    struct sv_planner_placement_map map;
    CU_ASSERT_FATAL(sv_planner_placement_resolve(&c->instances[0], 32, &map, &e));
    struct sv_planner_weight_split w;
    sv_planner_weight_split(&m, 1, 1, &map, &w);
    /* 16,060,522,496 - 4 x 436,224,000 */
    SV_ASSERT_EQ_I64(w.npu_bytes, 14315626496ULL);
    SV_ASSERT_EQ_I64(w.cpu_bytes, 1744896000ULL);
    uint64_t blocks;
    /* trunc(80 x 2^30 x 0.9) = 77,309,411,328; (77,309,411,328 - 14,315,626,496) / 2,097,152
     * = 30,037.8 */
    CU_ASSERT(sv_planner_instance_kv_blocks(&c->instances[0], &m, &map, 16, &blocks, &e));
    SV_ASSERT_EQ_I64(blocks, 30037);
    /* Without placement: (77,309,411,328 - 16,060,522,496) / 2,097,152 = 29,205.6 */
    CU_ASSERT(sv_planner_instance_kv_blocks(&c->instances[0], &m, NULL, 16, &blocks, &e));
    SV_ASSERT_EQ_I64(blocks, 29205);
    sv_planner_placement_map_clear(&map);
    sv_planner_cluster_free(c);

    /* PP 2: stage 0 holds blocks 0-15 + embedding, stage 1 blocks 16-27 + norm + lm_head; the
     * fuller stage 0 = 16 x 436,224,000 + 1,050,673,152 = 8,030,257,152 B. */
    c = parse(
        ONE(",\"tp_size\":1,\"pp_size\":2,\"placement\":{\"blocks\":[" RULE("28-31", "cpu") "]}",
            ""),
        &e);
    if (!c)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_FATAL(sv_planner_placement_resolve(&c->instances[0], 32, &map, &e));
    sv_planner_weight_split(&m, 1, 2, &map, &w);
    SV_ASSERT_EQ_I64(w.npu_bytes, 8030257152ULL);
    sv_planner_placement_map_clear(&map);
    sv_planner_cluster_free(c);
}

static void test_flags(void)
{
    GError *e = NULL;
    struct sv_planner_cluster_cfg *c =
        parse(ONE("", "\"preemption_mode\":\"swap\",\"prefix_storage\":\"cpu,ssd\","
                      "\"enable_prefix_sharing\":true,\"prefix_chunk_tokens\":512,"),
              &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    struct sv_planner_tier_run t;
    CU_ASSERT(sv_planner_tier_flags_resolve(NULL, &c->tier_flags, &t, &e));
    CU_ASSERT(t.preempt_swap);
    CU_ASSERT_EQUAL(t.n_prefix_storage, 2);
    CU_ASSERT_EQUAL(t.prefix_storage[0], SV_PLANNER_LOC_CPU);
    CU_ASSERT_EQUAL(t.prefix_storage[1], SV_PLANNER_LOC_SSD);
    CU_ASSERT_EQUAL(t.prefix_pool, SV_PLANNER_POOL_NODE); /* sharing */
    CU_ASSERT_EQUAL(t.prefix_chunk_tokens, 512);
    CU_ASSERT_FALSE(t.prefix_evict_fifo);
    /* The command line wins. */
    struct sv_planner_tier_flags run;
    sv_planner_tier_flags_init(&run);
    g_strlcpy(run.preemption_mode, "recompute", sizeof run.preemption_mode);
    g_strlcpy(run.prefix_storage, "none", sizeof run.prefix_storage);
    g_strlcpy(run.prefix_evict, "fifo", sizeof run.prefix_evict);
    run.prefix_chunk_tokens = 64;
    CU_ASSERT(sv_planner_tier_flags_resolve(&run, &c->tier_flags, &t, &e));
    CU_ASSERT_FALSE(t.preempt_swap);
    CU_ASSERT_EQUAL(t.n_prefix_storage, 0);
    CU_ASSERT(t.prefix_evict_fifo);
    CU_ASSERT_EQUAL(t.prefix_chunk_tokens, 64);
    /* Sharing with a per-instance pool contradicts. */
    g_strlcpy(run.prefix_pool, "instance", sizeof run.prefix_pool);
    CU_ASSERT_FALSE(sv_planner_tier_flags_resolve(&run, &c->tier_flags, &t, &e));
    CU_ASSERT(e && strstr(e->message, "enable_prefix_sharing"));
    g_clear_error(&e);
    sv_planner_cluster_free(c);
    /* Defaults. */
    c = parse(ONE("", ""), &e);
    CU_ASSERT(sv_planner_tier_flags_resolve(NULL, &c->tier_flags, &t, &e));
    CU_ASSERT_FALSE(t.preempt_swap);
    CU_ASSERT_EQUAL(t.n_prefix_storage, 0);
    CU_ASSERT_EQUAL(t.prefix_pool, SV_PLANNER_POOL_INSTANCE);
    CU_ASSERT_EQUAL(t.prefix_chunk_tokens, 256);
    CU_ASSERT_FALSE(t.offload_serial);
    CU_ASSERT_FALSE(t.kv_load_per_layer);
    /* The SSD defaults (PM9A3). */
    CU_ASSERT_FALSE(c->nodes[0].storage.set);
    CU_ASSERT_DOUBLE_EQUAL(c->nodes[0].storage.bw_gbps, 6.9, 0);
    CU_ASSERT_EQUAL(c->nodes[0].storage.queue_depth, 32);
    sv_planner_cluster_free(c);
}

/* Test 12: the ISPASS'26 artifact's perf_models (legacy layout) under --profiles, figure_7's
 * SD+PC config: the instance takes legacy:<rel> and the run finishes. */
#define PERF_MODELS SV_SHARED "/reference/llmservingsim-ispass26/perf_models"
static void test_legacy_profiles(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim-ispass26/perf_models", "ISPASS'26 perf_models");
    GError *e = NULL;
    g_autofree char *dir =
        sv_compute_legacy_find(PERF_MODELS, "A6000", "meta-llama/Llama-3.1-8B", 1, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    CU_ASSERT(g_str_has_suffix(dir, "/A6000/meta-llama/Llama-3.1-8B/tp1"));
    CU_ASSERT_PTR_NULL(
        sv_compute_legacy_find(PERF_MODELS, "A6000", "meta-llama/Llama-3.1-8B", 8, &e));
    CU_ASSERT(e && strstr(e->message, "tp8/layers.csv not found"));
    g_clear_error(&e);

    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *out = g_build_filename(tmp, "out", NULL);
    const char *argv[] = {SV_SERVESIM_BIN,
                          "run",
                          "--quiet",
                          "--profiles",
                          PERF_MODELS,
                          "--cluster",
                          FIG7_CFG,
                          "--workload",
                          SV_SHARED "/reference/llmservingsim-ispass26/dataset/"
                                    "sharegpt_req100_rate10_llama.jsonl",
                          "--output-dir",
                          out,
                          NULL};
    char *so = NULL, *se = NULL;
    int status = -1;
    CU_ASSERT_FATAL(sv_test_spawn(argv, &so, &se, &status));
    if (status != 0)
        fprintf(stderr, "%s\n", se);
    CU_ASSERT_EQUAL(status, 0);
    CU_ASSERT(se && strstr(se, "latency legacy:A6000/meta-llama/Llama-3.1-8B/tp1"));
    g_autofree char *sum_path = g_build_filename(out, "summary.json", NULL);
    g_autofree char *sum = NULL;
    CU_ASSERT(g_file_get_contents(sum_path, &sum, NULL, NULL));
    CU_ASSERT(sum && strstr(sum, "\"legacy:A6000/meta-llama/Llama-3.1-8B/tp1\""));
    g_free(so);
    g_free(se);
    sv_test_rmtree(tmp);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"model weight parts", test_model_parts},
        {"single_node_cxl_instance (test 10)", test_cxl_instance},
        {"figure_7 npu_num/npu_group (test 10)", test_figure7_aliases},
        {"errors name the JSON path", test_errors},
        {"npu_num/npu_group aliases", test_aliases},
        {"HBM capacity (test 11)", test_capacity},
        {"run flags and precedence", test_flags},
        {"legacy perf_models, figure_7 SD+PC (test 12)", test_legacy_profiles},
        {NULL, NULL},
    };
    sv_test_add_suite("tier_config", cases);
    return sv_test_run();
}
