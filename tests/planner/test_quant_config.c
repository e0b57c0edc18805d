/* Quantisation in cluster configs and runs (planner/quant.c, docs/quantisation.md): the
 * instance keys "dtype" / "kv_cache_dtype" (validated with the config path, HF spellings kept),
 * KV capacity in blocks by hand, the --dtype / --kv-cache-dtype flags, and the per-dtype profile
 * folder a run picks (LLMServingSim's <hw>/<org>/<model>/<dtype>/). */
#include "planner/planner.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <string.h>
#include <unistd.h>

#define ONE(inst)                                                                                  \
    "{\"num_nodes\":1,\"link_bw\":16,\"link_latency\":0,\"nodes\":[{\"num_instances\":1,"          \
    "\"cpu_mem\":{\"mem_size\":1,\"mem_bw\":1,\"mem_latency\":0},\"instances\":["                  \
    "{\"model_name\":\"Llama-3.1-8B\",\"hardware\":\"H100\",\"npu_mem\":{\"mem_size\":80,"         \
    "\"mem_bw\":3350,\"mem_latency\":0,\"mem_util\":0.9}" inst "}]}]}"

static struct sv_planner_cluster_cfg *parse(const char *json, GError **e)
{
    JsonParser *p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, json, -1, NULL));
    struct sv_planner_cluster_cfg *c =
        sv_planner_cluster_from_json(json_parser_get_root(p), "cluster.json", e);
    g_object_unref(p);
    return c;
}

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

static void test_bad_dtypes(void)
{
    expect_error(ONE(",\"dtype\":\"fp9\""),
                 "cluster.json: nodes[0].instances[0].dtype: 'fp9' is not a dtype (auto, bf16, "
                 "fp16, fp8, w8a8, w8a16, w4a16");
    expect_error(ONE(",\"kv_cache_dtype\":\"int4\""),
                 "cluster.json: nodes[0].instances[0].kv_cache_dtype: 'int4' is not a KV cache "
                 "dtype (auto, bf16, fp16, fp8");
    expect_error(ONE(",\"dtype\":8"), "nodes[0].instances[0].dtype: must be a string");
}

/* KV blocks of Llama-3.1-8B on one H100 (80 GiB, mem_util 0.9, 16-token blocks):
 * trunc(85,899,345,920 x 0.9) = 77,309,411,328 B less the weights (test_quant: 16,060,522,496 bf16,
 * 9,080,938,496 fp8, 5,591,146,496 w4a16), over 16 x 32 layers x 4,096 B (bf16 KV) = 2,097,152 B
 * or 1,048,576 B (fp8 KV) per block:
 *   bf16            61,248,888,832 / 2,097,152 = 29,205.7 -> 29,205
 *   fp8 weights     68,228,472,832 / 2,097,152 = 32,533.9 -> 32,533
 *   bf16, fp8 KV    61,248,888,832 / 1,048,576 = 58,411.5 -> 58,411 (2 x 29,205 + the rounding)
 *   w4a16           71,718,264,832 / 2,097,152 = 34,197.9 -> 34,197
 *   fp8 + fp8 KV    68,228,472,832 / 1,048,576 = 65,067.7 -> 65,067 */
static void test_kv_blocks(void)
{
    const struct {
        const char *keys;
        const char *dtype, *kv;
        uint64_t blocks;
    } rows[] = {
        {"", "", "", 29205},
        {",\"dtype\":\"bfloat16\",\"kv_cache_dtype\":\"auto\"", "bf16", "", 29205},
        {",\"dtype\":\"fp8\"", "fp8", "", 32533},
        {",\"kv_cache_dtype\":\"fp8\"", "", "fp8", 58411},
        {",\"dtype\":\"awq\"", "w4a16", "", 34197},
        {",\"dtype\":\"fp8\",\"kv_cache_dtype\":\"fp8_e4m3\"", "fp8", "fp8", 65067},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
        g_autofree char *json = g_strdup_printf(
            "{\"num_nodes\":1,\"link_bw\":16,\"link_latency\":0,\"nodes\":[{\"num_instances\":1,"
            "\"cpu_mem\":{\"mem_size\":1,\"mem_bw\":1,\"mem_latency\":0},\"instances\":["
            "{\"model_name\":\"Llama-3.1-8B\",\"hardware\":\"H100\",\"npu_mem\":{\"mem_size\":80,"
            "\"mem_bw\":3350,\"mem_latency\":0,\"mem_util\":0.9}%s}]}]}",
            rows[i].keys);
        GError *e = NULL;
        struct sv_planner_cluster_cfg *c = parse(json, &e);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        const struct sv_planner_instance_cfg *ic = &c->instances[0];
        CU_ASSERT_STRING_EQUAL(ic->dtype, rows[i].dtype);
        CU_ASSERT_STRING_EQUAL(ic->kv_cache_dtype, rows[i].kv);
        struct sv_compute_model_cfg m;
        CU_ASSERT_FATAL(sv_compute_model_lookup(ic->model_name, NULL, &m, NULL));
        CU_ASSERT_FATAL(sv_compute_quant_apply(&m, ic->dtype, ic->kv_cache_dtype, NULL));
        uint64_t blocks = 0;
        CU_ASSERT_FATAL(sv_planner_instance_kv_blocks(ic, &m, NULL, 16, &blocks, NULL));
        SV_ASSERT_EQ_I64(blocks, rows[i].blocks);
        sv_planner_cluster_free(c);
    }
}

static int servesim(const char *const *args, char **err)
{
    g_autofree char *bin = g_canonicalize_filename(SV_SERVESIM_BIN, NULL);
    GPtrArray *argv = g_ptr_array_new();
    g_ptr_array_add(argv, bin);
    g_ptr_array_add(argv, (gpointer) "run");
    for (int i = 0; args[i]; i++)
        g_ptr_array_add(argv, (gpointer)args[i]);
    g_ptr_array_add(argv, NULL);
    char *out = NULL;
    int status = -1;
    CU_ASSERT_FATAL(sv_test_spawn((const char *const *)argv->pdata, &out, err, &status));
    g_free(out);
    g_ptr_array_free(argv, TRUE);
    return status;
}

static void test_flags(void)
{
    char *err = NULL;
    const char *bad[] = {"--dtype", "fp9", "--requests", "1", NULL};
    CU_ASSERT_EQUAL(servesim(bad, &err), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "--dtype: 'fp9' is not auto, bf16, fp16, fp8"));
    g_free(err);
    const char *bad_kv[] = {"--kv-cache-dtype", "int8", "--requests", "1", NULL};
    CU_ASSERT_EQUAL(servesim(bad_kv, &err), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "--kv-cache-dtype: 'int8' is not"));
    g_free(err);
}

/* A profile root whose RTX 4090 Llama-3.1-8B bundle exists as bf16 and (a link to the same
 * measurements, standing in for a measured fp8 bundle) fp8: dtype fp8 picks the fp8 folder; w4a16,
 * with no folder, falls back to the roofline and says so on stderr; bf16 keeps the bf16 bundle. */
static void test_profile_variant(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim/profiles/RTX4090/meta-llama/Llama-3.1-8B/bf16",
                      "an LLMServingSim profile bundle to link as a per-dtype folder");
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *mdir =
        g_build_filename(tmp, "prof", "RTX4090", "meta-llama", "Llama-3.1-8B", NULL);
    CU_ASSERT_FATAL(g_mkdir_with_parents(mdir, 0755) == 0);
    g_autofree char *src = g_canonicalize_filename(
        SV_SHARED "/reference/llmservingsim/profiles/RTX4090/meta-llama/Llama-3.1-8B/bf16", NULL);
    g_autofree char *l1 = g_build_filename(mdir, "bf16", NULL);
    g_autofree char *l2 = g_build_filename(mdir, "fp8", NULL);
    CU_ASSERT_FATAL(symlink(src, l1) == 0 && symlink(src, l2) == 0);
    g_autofree char *prof = g_build_filename(tmp, "prof", NULL);
    g_autofree char *cluster = g_build_filename(tmp, "cluster.json", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(
        cluster,
        "{\"num_nodes\":1,\"link_bw\":16,\"link_latency\":0,\"nodes\":[{\"num_instances\":1,"
        "\"cpu_mem\":{\"mem_size\":64,\"mem_bw\":64,\"mem_latency\":0},\"instances\":["
        "{\"model_name\":\"meta-llama/Llama-3.1-8B\",\"hardware\":\"RTX4090\","
        "\"npu_mem\":{\"mem_size\":24,\"mem_bw\":1008,\"mem_latency\":0,\"mem_util\":0.9},"
        "\"num_npus\":1,\"tp_size\":1}]}]}",
        -1, NULL));
    const struct {
        const char *dtype, *want;
    } rows[] = {
        {"bf16", "latency profile:RTX4090/meta-llama/Llama-3.1-8B/bf16"},
        {"fp8", "latency profile:RTX4090/meta-llama/Llama-3.1-8B/fp8"},
        {"w4a16", "latency roofline (no profile bundle under"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
        g_autofree char *out = g_build_filename(tmp, rows[i].dtype, NULL);
        const char *args[] = {"--cluster", cluster,        "--requests", "2",
                              "--dtype",   rows[i].dtype,  "--profiles", prof,
                              "--quiet",   "--output-dir", out,          NULL};
        char *err = NULL;
        CU_ASSERT_EQUAL(servesim(args, &err), 0);
        if (!strstr(err, rows[i].want))
            fprintf(stderr, "stderr '%s' lacks '%s'\n", err, rows[i].want);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, rows[i].want));
        g_free(err);
    }
    sv_test_rmtree(tmp);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"bad dtype / kv_cache_dtype name the config path", test_bad_dtypes},
        {"KV blocks by dtype (Llama-3.1-8B, H100)", test_kv_blocks},
        {"--dtype / --kv-cache-dtype errors", test_flags},
        {"per-dtype profile folder, roofline fallback", test_profile_variant},
        {NULL, NULL},
    };
    sv_test_add_suite("quant_config", cases);
    return sv_test_run();
}
