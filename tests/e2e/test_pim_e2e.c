/* PIM attention offload through `servesim run` (docs/pim.md), end to end on the binary.
 *
 * Our own PIM device (the tests/compute/test_pim.c device): a rank of 512 B pages x 1024 rows x
 * 4 banks x 8 devices = 16 MiB = one channel, 16 B/ns, idle 500 mW and peak 2,500 mW per channel.
 * The node's cpu_mem of 1 GiB holds 64 channels. The power block's DRAM has one 512 GB DIMM of
 * 10 W and 0 pJ/bit, so that with offload the node's DRAM energy is exactly
 *   64 x 0.5 W x T + (2.5 - 0.5) W x (channel busy time)
 * (the PIM channels replace the DIMMs; docs/pim.md "Power"), and without it 10 W x T. */
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <json-glib/json-glib.h>
#include <stdarg.h>
#include <string.h>

static const char CLUSTER[] =
    "{\"num_nodes\": 1, \"link_bw\": 16, \"link_latency\": 20000, \"nodes\": [{\n"
    "  \"num_instances\": 1,\n"
    "  \"cpu_mem\": {\"mem_size\": 1, \"mem_bw\": 256, \"mem_latency\": 0%s},\n"
    "  \"instances\": [{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100-SXM\",\n"
    "    \"npu_mem\": {\"mem_size\": 80, \"mem_bw\": 3350, \"mem_latency\": 0},\n"
    "    \"num_npus\": 1, \"tp_size\": 1, \"pd_type\": null}],\n"
    "  \"power\": {\"base_node_power\": 100,\n"
    "    \"npu\": {\"H100-SXM\": {\"idle_power\": 10, \"standby_power\": 20, \"active_power\": "
    "110, \"standby_duration\": 5}},\n"
    "    \"cpu\": {\"idle_power\": 10, \"active_power\": 10, \"util\": 0.5},\n"
    "    \"dram\": {\"dimm_size\": 512, \"idle_power\": 10, \"energy_per_bit\": 0},\n"
    "    \"link\": {\"num_links\": 1, \"idle_power\": 10, \"energy_per_bit\": 0},\n"
    "    \"nic\": {\"num_nics\": 1, \"idle_power\": 10},\n"
    "    \"storage\": {\"num_devices\": 1, \"idle_power\": 10}}}]}\n";

static const char INI[] = "[dram_structure]\nprotocol = DDR4\nbankgroups = 2\nbanks_per_group = 2\n"
                          "rows = 1024\ncolumns = 512\ndevice_width = 8\n"
                          "[timing]\ntCK = 1.0\nCL = 10\n"
                          "[system]\nchannel_size = 16\nbus_width = 64\n"
                          "[other]\ndata_rate = 2000\nidle_power = 500 # mW\npeak_power = 2500\n";

static const char TRACE[] = "{\"input_toks\": 300, \"output_toks\": 40, \"arrival_time_ns\": 0}\n"
                            "{\"input_toks\": 200, \"output_toks\": 60, \"arrival_time_ns\": 0}\n"
                            "{\"input_toks\": 100, \"output_toks\": 20, \"arrival_time_ns\": "
                            "50000000}\n";

typedef struct {
    char *dir, *cluster, *trace, *pim_dir;
} fx;

static void fx_init(fx *f, gboolean with_pim_key)
{
    f->dir = sv_test_tmpdir();
    f->cluster = g_build_filename(f->dir, "cluster.json", NULL);
    f->trace = g_build_filename(f->dir, "trace.jsonl", NULL);
    f->pim_dir = g_build_filename(f->dir, "pim", NULL);
    g_autofree char *c =
        g_strdup_printf(CLUSTER, with_pim_key ? ", \"pim_config\": \"own_pim\"" : "");
    CU_ASSERT_FATAL(g_file_set_contents(f->cluster, c, -1, NULL));
    CU_ASSERT_FATAL(g_file_set_contents(f->trace, TRACE, -1, NULL));
    CU_ASSERT_FATAL(g_mkdir_with_parents(f->pim_dir, 0755) == 0);
    g_autofree char *ini = g_build_filename(f->pim_dir, "own_pim.ini", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(ini, INI, -1, NULL));
}

static void fx_clear(fx *f)
{
    sv_test_rmtree(f->dir);
    g_free(f->dir);
    g_free(f->cluster);
    g_free(f->trace);
    g_free(f->pim_dir);
}

/* Run with extra flags (NULL-terminated); returns the exit status, stderr in *err. */
static int run(fx *f, const char *out, char **err, ...)
{
    g_autofree char *bin = g_canonicalize_filename(SV_SERVESIM_BIN, NULL);
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    const char *fixed[] = {bin,      "run",       "--cluster", f->cluster,     "--workload",
                           f->trace, "--latency", "roofline",  "--output-dir", out,
                           "--quiet"};
    for (size_t i = 0; i < G_N_ELEMENTS(fixed); i++)
        g_ptr_array_add(argv, (gpointer)fixed[i]);
    va_list ap;
    va_start(ap, err);
    for (const char *a; (a = va_arg(ap, const char *));)
        g_ptr_array_add(argv, (gpointer)a);
    va_end(ap);
    g_ptr_array_add(argv, NULL);
    g_autofree char *so = NULL;
    int status = -1;
    CU_ASSERT_FATAL(sv_test_spawn((const char **)argv->pdata, &so, err, &status));
    return status;
}

static JsonObject *summary(const char *out, JsonParser **jp)
{
    g_autofree char *p = g_build_filename(out, "summary.json", NULL);
    *jp = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_file(*jp, p, NULL));
    return json_node_get_object(json_parser_get_root(*jp));
}

static double dram_j(JsonObject *root)
{
    JsonObject *e = json_object_get_object_member(root, "energy");
    return json_object_get_double_member(json_object_get_object_member(e, "by_component_j"),
                                         "dram");
}

static void test_offload_power(void)
{
    fx f;
    fx_init(&f, TRUE);
    g_autofree char *out = g_build_filename(f.dir, "on", NULL);
    g_autofree char *err = NULL;
    CU_ASSERT_EQUAL_FATAL(run(&f, out, &err, "--pim-dir", f.pim_dir, "--enable-attn-offloading",
                              "--pim-model", "bandwidth", NULL),
                          0);
    JsonParser *jp = NULL;
    JsonObject *root = summary(out, &jp);
    CU_ASSERT_FATAL(json_object_has_member(root, "pim"));
    JsonObject *pim = json_object_get_object_member(root, "pim");
    CU_ASSERT_EQUAL(json_object_get_int_member(pim, "channels"), 64);
    CU_ASSERT(json_object_get_int_member(pim, "decode_attention") > 0);
    double busy = json_object_get_double_member(pim, "busy_channel_s");
    CU_ASSERT(busy > 0);
    double T = json_object_get_double_member(root, "makespan_s");
    CU_ASSERT_DOUBLE_EQUAL(dram_j(root), 64 * 0.5 * T + 2.0 * busy, 1e-6 * dram_j(root));
    g_object_unref(jp);

    /* The same without offload: no "pim", the DIMM's 10 W. */
    g_autofree char *out2 = g_build_filename(f.dir, "off", NULL);
    g_autofree char *err2 = NULL;
    CU_ASSERT_EQUAL_FATAL(run(&f, out2, &err2, "--pim-dir", f.pim_dir, NULL), 0);
    root = summary(out2, &jp);
    CU_ASSERT_FALSE(json_object_has_member(root, "pim"));
    T = json_object_get_double_member(root, "makespan_s");
    CU_ASSERT_DOUBLE_EQUAL(dram_j(root), 10.0 * T, 1e-6 * dram_j(root));
    g_object_unref(jp);

    /* Sub-batch interleaving runs and reports its split iterations. */
    g_autofree char *out3 = g_build_filename(f.dir, "sub", NULL);
    g_autofree char *err3 = NULL;
    CU_ASSERT_EQUAL_FATAL(run(&f, out3, &err3, "--pim-dir", f.pim_dir, "--enable-attn-offloading",
                              "--enable-sub-batch-interleaving", NULL),
                          0);
    root = summary(out3, &jp);
    pim = json_object_get_object_member(root, "pim");
    CU_ASSERT(json_object_get_int_member(pim, "sub_batched_iterations") > 0);
    g_object_unref(jp);
    fx_clear(&f);
}

/* Same inputs, same bytes (determinism with PIM and sub-batches). */
static void test_deterministic(void)
{
    fx f;
    fx_init(&f, TRUE);
    g_autofree char *a = g_build_filename(f.dir, "a", NULL);
    g_autofree char *b = g_build_filename(f.dir, "b", NULL);
    g_autofree char *e1 = NULL, *e2 = NULL;
    CU_ASSERT_EQUAL_FATAL(run(&f, a, &e1, "--pim-dir", f.pim_dir, "--enable-attn-offloading",
                              "--enable-sub-batch-interleaving", NULL),
                          0);
    CU_ASSERT_EQUAL_FATAL(run(&f, b, &e2, "--pim-dir", f.pim_dir, "--enable-attn-offloading",
                              "--enable-sub-batch-interleaving", NULL),
                          0);
    const char *files[] = {"requests.csv", "summary.json", "power.csv", "timeseries.csv"};
    for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
        g_autofree char *pa = g_build_filename(a, files[i], NULL);
        g_autofree char *pb = g_build_filename(b, files[i], NULL);
        g_autofree char *ta = NULL, *tb = NULL;
        CU_ASSERT_FATAL(g_file_get_contents(pa, &ta, NULL, NULL));
        CU_ASSERT_FATAL(g_file_get_contents(pb, &tb, NULL, NULL));
        CU_ASSERT_STRING_EQUAL(ta, tb);
    }
    fx_clear(&f);
}

static void test_errors(void)
{
    fx f;
    fx_init(&f, FALSE);
    g_autofree char *out = g_build_filename(f.dir, "x", NULL);
    g_autofree char *err = NULL;
    /* Offload without a PIM device on the node. */
    CU_ASSERT_NOT_EQUAL(run(&f, out, &err, "--enable-attn-offloading", NULL), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "nodes[0].cpu_mem.pim_config"));
    CU_ASSERT_FALSE(g_file_test(out, G_FILE_TEST_EXISTS));
    g_clear_pointer(&err, g_free);
    /* Sub-batches need attention offload. */
    CU_ASSERT_NOT_EQUAL(run(&f, out, &err, "--enable-sub-batch-interleaving", NULL), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "enable_attn_offloading"));
    g_clear_pointer(&err, g_free);
    fx_clear(&f);
    /* A device file that is not there names the key and the places looked at. */
    fx_init(&f, TRUE);
    CU_ASSERT_NOT_EQUAL(run(&f, out, &err, "--enable-attn-offloading", NULL), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "pim_config"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "--pim-dir"));
    g_clear_pointer(&err, g_free);
    /* An unknown placement policy lists the registered ones (registry kind pim_placement). */
    CU_ASSERT_NOT_EQUAL(run(&f, out, &err, "--pim-dir", f.pim_dir, "--enable-attn-offloading",
                            "--pim-placement", "nope", NULL),
                        0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "pim_placement"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "greedy"));
    g_clear_pointer(&err, g_free);
    fx_clear(&f);
}

/* A power block may leave the DIMMs to the PIM config (LLMServingSim: dimm_size and idle_power
 * are not required with attention offload): the same energy as above with offload, an error
 * naming the key without it. */
static void test_dimms_from_pim(void)
{
    fx f;
    fx_init(&f, TRUE);
    g_autofree char *text = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(f.cluster, &text, NULL, NULL));
    const char *drop = "\"dimm_size\": 512, \"idle_power\": 10, ";
    char *at = strstr(text, drop);
    CU_ASSERT_PTR_NOT_NULL_FATAL(at);
    memmove(at, at + strlen(drop), strlen(at + strlen(drop)) + 1);
    CU_ASSERT_FATAL(g_file_set_contents(f.cluster, text, -1, NULL));
    g_autofree char *out = g_build_filename(f.dir, "on", NULL);
    g_autofree char *err = NULL;
    CU_ASSERT_EQUAL_FATAL(run(&f, out, &err, "--pim-dir", f.pim_dir, "--enable-attn-offloading",
                              "--pim-model", "bandwidth", NULL),
                          0);
    JsonParser *jp = NULL;
    JsonObject *root = summary(out, &jp);
    double busy =
        json_object_get_double_member(json_object_get_object_member(root, "pim"), "busy_channel_s");
    double T = json_object_get_double_member(root, "makespan_s");
    CU_ASSERT_DOUBLE_EQUAL(dram_j(root), 64 * 0.5 * T + 2.0 * busy, 1e-6 * dram_j(root));
    g_object_unref(jp);
    g_autofree char *out2 = g_build_filename(f.dir, "off", NULL);
    g_autofree char *err2 = NULL;
    CU_ASSERT_NOT_EQUAL(run(&f, out2, &err2, "--pim-dir", f.pim_dir, NULL), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err2, "nodes[0].power.dram.dimm_size"));
    fx_clear(&f);
}

/* LLMServingSim's single_node_pim_instance.json with --enable-attn-offloading (its pim folder is
 * beside configs/cluster): DDR4_8GB_3200_pim on 512 GB = 64 channels. */
static void test_reference(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim/configs/cluster/single_node_pim_instance.json",
                      "LLMServingSim's PIM config");
    const char *ref = SV_SHARED "/reference/llmservingsim";
    g_autofree char *bin = g_canonicalize_filename(SV_SERVESIM_BIN, NULL);
    g_autofree char *cluster =
        g_strconcat(ref, "/configs/cluster/single_node_pim_instance.json", NULL);
    g_autofree char *trace = g_strconcat(ref, "/workloads/example_trace.jsonl", NULL);
    g_autofree char *profiles = g_strconcat(ref, "/profiles", NULL);
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    const char *argv[] = {
        bin,          "run",    "--cluster",    cluster, "--workload", trace,
        "--profiles", profiles, "--output-dir", out,     "--quiet",    "--enable-attn-offloading",
        NULL};
    g_autofree char *so = NULL, *se = NULL;
    int status = -1;
    CU_ASSERT_FATAL(sv_test_spawn(argv, &so, &se, &status));
    CU_ASSERT_EQUAL_FATAL(status, 0);
    JsonParser *jp = NULL;
    JsonObject *root = summary(out, &jp);
    JsonObject *pim = json_object_get_object_member(root, "pim");
    CU_ASSERT_EQUAL(json_object_get_int_member(pim, "channels"), 64);
    CU_ASSERT_EQUAL(
        json_object_get_int_member(json_object_get_object_member(root, "requests"), "finished"),
        10);
    g_object_unref(jp);
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"offload: PIM channels' power replaces the DIMMs (hand-computed)", test_offload_power},
        {"byte-identical outputs with PIM and sub-batches", test_deterministic},
        {"DIMMs from the PIM config", test_dimms_from_pim},
        {"errors name the key", test_errors},
        {"reference single_node_pim_instance with offload", test_reference},
        {NULL, NULL},
    };
    sv_test_add_suite("pim_e2e", cases);
    return sv_test_run();
}
