/* planner: the hardware catalog in the cluster config. One capacity unit (GiB) for the quick form
 * and a config's npu_mem.mem_size; the catalog's link bandwidth converted to the config's
 * ASTRA-sim GB/s; per-hop link latency from the catalog when the config gives none, the config's
 * value (scalar or per dimension) when it does; user catalogs (hardware files) reach every
 * lookup. Expected numbers are the catalog's cited figures and closed forms. */
#include "planner/planner.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <string.h>

static struct sv_planner_cluster_cfg *parse(const char *text)
{
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, text, -1, NULL));
    GError *e = NULL;
    struct sv_planner_cluster_cfg *c =
        sv_planner_cluster_from_json(json_parser_get_root(p), "t.json", &e);
    if (!c)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(c != NULL);
    return c;
}

#define ONE_NODE(link, hw)                                                                         \
    "{\"num_nodes\": 1, " link " \"nodes\": [{\"num_instances\": 1, \"instances\": [{"             \
    "\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"" hw "\", "                      \
    "\"npu_mem\": {\"mem_size\": 80, \"mem_bw\": 3350}, \"num_npus\": 2, \"tp_size\": 2}]}]}"

/* The quick form: "80 GB H100" is 80 GiB, as in a config; the link in ASTRA-sim GB/s. */
static void test_quick_form_units(void)
{
    GError *e = NULL;
    struct sv_planner_cluster_cfg *c =
        sv_planner_cluster_single_with("meta-llama/Llama-3.1-8B", "H100", 2, NULL, &e);
    CU_ASSERT_FATAL(c != NULL);
    CU_ASSERT_DOUBLE_EQUAL(c->instances[0].npu_mem_gib, 80, 0);
    /* 450 GB/s per direction = 450e9 B/s; the config's unit is 2^30 B per 10^9 ns. */
    CU_ASSERT_DOUBLE_EQUAL(c->link_bw_gbps * 1073741824.0, 450e9, 1);
    CU_ASSERT(!c->link_latency_given);
    /* NCCL's model: 1.9 us per NVLink ring step. */
    CU_ASSERT_DOUBLE_EQUAL(sv_planner_cluster_link_latency_ns(c, 0), 1900, 0);

    /* The same capacity from a config's mem_size 80: the same KV pool, block for block. The
     * closed form: (trunc(80 GiB x 0.9) - weights) / (16 tokens x 32 layers x KV bytes). */
    struct sv_planner_cluster_cfg *cc = parse(ONE_NODE("", "H100"));
    struct sv_compute_model_cfg m;
    CU_ASSERT_FATAL(sv_compute_model_lookup("meta-llama/Llama-3.1-8B", NULL, &m, NULL));
    uint64_t b_quick = 0, b_cfg = 0;
    CU_ASSERT_FATAL(sv_planner_instance_kv_blocks(&c->instances[0], &m, NULL, 16, &b_quick, &e));
    CU_ASSERT_FATAL(sv_planner_instance_kv_blocks(&cc->instances[0], &m, NULL, 16, &b_cfg, &e));
    SV_ASSERT_EQ_I64(b_quick, b_cfg);
    double usable = floor(80.0 * 1073741824.0 * 0.9);
    double weights = (double)sv_compute_model_weight_bytes(&m, 2);
    double per_block = 16.0 * 32 * (double)sv_compute_model_kv_bytes_per_token_layer(&m, 2);
    SV_ASSERT_EQ_I64(b_quick, (int64_t)floor((usable - weights) / per_block));
    sv_planner_cluster_free(cc);
    sv_planner_cluster_free(c);

    /* A user device reaches the quick form through its catalog. */
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *path = g_build_filename(dir, "hw.yaml", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(path,
                                        "hardware:\n  - name: Lab-X\n    bf16_tflops: 100\n"
                                        "    mem_gib: 24\n    mem_bw_gbps: 900\n"
                                        "    link_bw_gbps: 50\n    link_latency_ns: 4000\n"
                                        "    source: lab sheet\n",
                                        -1, NULL));
    g_autoptr(sv_compute_hw_catalog) cat = sv_compute_hw_catalog_new();
    CU_ASSERT_FATAL(sv_compute_hw_catalog_load(cat, path, &e));
    CU_ASSERT(sv_planner_cluster_single("meta-llama/Llama-3.1-8B", "Lab-X", 1, &e) == NULL);
    CU_ASSERT(e && strstr(e->message, "Lab-X"));
    g_clear_error(&e);
    c = sv_planner_cluster_single_with("meta-llama/Llama-3.1-8B", "lab-x", 1, cat, &e);
    CU_ASSERT_FATAL(c != NULL);
    CU_ASSERT_STRING_EQUAL(c->instances[0].hardware, "Lab-X");
    CU_ASSERT_DOUBLE_EQUAL(c->instances[0].npu_mem_gib, 24, 0);
    CU_ASSERT_DOUBLE_EQUAL(c->instances[0].npu_mem_bw_gbps, 900, 0);
    CU_ASSERT_DOUBLE_EQUAL(sv_planner_cluster_link_latency_ns(c, 0), 4000, 0);
    sv_planner_cluster_free(c);
    sv_test_rmtree(dir);
}

/* link_latency: absent -> the hardware's per-hop latency on every dimension; given (0 included)
 * -> as given; an array -> per dimension. */
static void test_link_latency_default(void)
{
    struct sv_planner_cluster_cfg *c = parse(ONE_NODE("\"link_bw\": 450,", "H100"));
    CU_ASSERT(!c->link_latency_given);
    CU_ASSERT_DOUBLE_EQUAL(sv_planner_cluster_link_latency_ns(c, 0), 1900, 0);
    CU_ASSERT_DOUBLE_EQUAL(sv_planner_cluster_link_latency_ns(c, 1), 1900, 0);
    struct sv_net_topo_cfg topo;
    int32_t ppn = 0;
    CU_ASSERT_FATAL(sv_planner_cluster_topo(c, &topo, &ppn, NULL));
    SV_ASSERT_EQ_I64(topo.ndims, 1);
    CU_ASSERT_DOUBLE_EQUAL(topo.latency_ns[0], 1900, 0);
    sv_planner_cluster_free(c);

    c = parse(ONE_NODE("\"link_bw\": 16, \"link_latency\": 0,", "RTX4090"));
    CU_ASSERT(c->link_latency_given);
    CU_ASSERT_DOUBLE_EQUAL(sv_planner_cluster_link_latency_ns(c, 0), 0, 0);
    sv_planner_cluster_free(c);

    c = parse(ONE_NODE("\"link_bw\": 16, \"link_latency\": [700, 9000],", "RTX4090"));
    CU_ASSERT_DOUBLE_EQUAL(sv_planner_cluster_link_latency_ns(c, 0), 700, 0);
    CU_ASSERT_DOUBLE_EQUAL(sv_planner_cluster_link_latency_ns(c, 1), 9000, 0);
    sv_planner_cluster_free(c);

    /* PCIe cards: NCCL's 2.5 us PCIe ring step. A device not in the catalog adds nothing. */
    c = parse(ONE_NODE("\"link_bw\": 16,", "RTX4090"));
    CU_ASSERT_DOUBLE_EQUAL(sv_planner_cluster_link_latency_ns(c, 0), 2500, 0);
    sv_planner_cluster_free(c);
    c = parse(ONE_NODE("\"link_bw\": 16,", "NoSuchNPU"));
    CU_ASSERT_DOUBLE_EQUAL(sv_planner_cluster_link_latency_ns(c, 0), 0, 0);
    sv_planner_cluster_free(c);

    /* A node topology's own latency_ns still wins on its dimension. */
    c = parse("{\"num_nodes\": 1, \"link_bw\": 450, \"nodes\": [{\"topology\": {\"kind\": "
              "\"nvlink\", \"latency_ns\": 300}, \"instances\": [{\"model_name\": "
              "\"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100\", \"npu_mem\": {\"mem_size\": "
              "80}, \"num_npus\": 2, \"tp_size\": 2}]}]}");
    CU_ASSERT_FATAL(sv_planner_cluster_topo(c, &topo, &ppn, NULL));
    CU_ASSERT_DOUBLE_EQUAL(topo.latency_ns[0], 300, 0);
    sv_planner_cluster_free(c);

    /* A mixed cluster takes its slowest hop: an H100 and an RTX 4090 instance -> 2.5 us. */
    c = parse("{\"num_nodes\": 1, \"link_bw\": 16, \"nodes\": [{\"instances\": ["
              "{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100\", "
              "\"npu_mem\": {\"mem_size\": 80}},"
              "{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"RTX4090\", "
              "\"npu_mem\": {\"mem_size\": 24}}]}]}");
    CU_ASSERT_DOUBLE_EQUAL(sv_planner_cluster_link_latency_ns(c, 0), 2500, 0);
    /* ... unless a hardware file says otherwise: the config resolves in the run's catalog. */
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *path = g_build_filename(dir, "hw.json", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(
        path, "{\"hardware\": [{\"name\": \"RTX4090\", \"link_latency_ns\": 1000}]}", -1, NULL));
    g_autoptr(sv_compute_hw_catalog) cat = sv_compute_hw_catalog_new();
    CU_ASSERT_FATAL(sv_compute_hw_catalog_load(cat, path, NULL));
    c->hw_catalog = cat;
    CU_ASSERT_DOUBLE_EQUAL(sv_planner_cluster_link_latency_ns(c, 0), 1900, 0);
    sv_planner_cluster_free(c);
    sv_test_rmtree(dir);
}

/* LLMServingSim 1.0's keys in the ISPASS'26 figure 5/8/9 configs: npu_num = devices, npu_group
 * = pipeline stages, TP = npu_num / npu_group (its trace_generator's npus_per_group). Their
 * explicit link_latency 0 stays 0; their hardware names resolve in the catalog. */
static void test_ispass_1_0_keys(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim-ispass26/figure_5", "the ISPASS'26 configs");
    static const struct {
        const char *path, *hw_canonical;
        int32_t tp, pp, npus, n_inst;
    } want[] = {
        {"figure_5/H100/config/SD_config.json", "H100-SXM", 4, 1, 4, 1},
        {"figure_5/H100/config/MD_config.json", "H100-SXM", 4, 1, 4, 2},
        {"figure_5/A6000/config/SM_config.json", "RTX-A6000", 1, 1, 1, 1},
        {"figure_8/config/SM_config.json", "H100-SXM", 4, 1, 4, 1},
        {"figure_9/config/SD_config.json", "TPU-v6e", 1, 1, 1, 1},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(want); i++) {
        g_autofree char *p =
            g_strdup_printf(SV_SHARED "/reference/llmservingsim-ispass26/%s", want[i].path);
        GError *e = NULL;
        struct sv_planner_cluster_cfg *c = sv_planner_cluster_load(p, &e);
        CU_ASSERT_FATAL(c != NULL);
        SV_ASSERT_EQ_I64(c->n_instances, want[i].n_inst);
        SV_ASSERT_EQ_I64(c->instances[0].tp_size, want[i].tp);
        SV_ASSERT_EQ_I64(c->instances[0].pp_size, want[i].pp);
        SV_ASSERT_EQ_I64(c->instances[0].num_npus, want[i].npus);
        CU_ASSERT(c->link_latency_given);
        CU_ASSERT_DOUBLE_EQUAL(sv_planner_cluster_link_latency_ns(c, 0), 0, 0);
        struct sv_compute_hw_cfg hw;
        CU_ASSERT_FATAL(sv_compute_hw_lookup(c->instances[0].hardware, &hw, NULL));
        CU_ASSERT_STRING_EQUAL(hw.name, want[i].hw_canonical);
        sv_planner_cluster_free(c);
    }
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"quick_form_units", test_quick_form_units},
        {"link_latency_default", test_link_latency_default},
        {"ispass_1_0_keys", test_ispass_1_0_keys},
        {NULL, NULL},
    };
    sv_test_add_suite("hw_catalog", cases);
    return sv_test_run();
}
