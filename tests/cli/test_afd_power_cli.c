/* servesim run with an afd instance on a node with a power block (docs/afd.md "Worked example
 * (power)"): the worked example's config through the CLI, run twice: byte-identical outputs
 * (requests.csv, timeseries.csv, summary.json, power.csv), and summary.json's traffic bytes as
 * worked by hand there (the energies' hand values are checked in-process by
 * tests/parallel/test_afd_power.c). */
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <string.h>

static const char cluster[] =
    "{\"link_bw\": 7.450580596923828, \"link_latency\": 1000, \"engine\": \"vllm-0.10\",\n"
    " \"nodes\": [{\"cpu_mem\": {\"mem_size\": 512, \"mem_bw\": 256, \"mem_latency\": 0},\n"
    "   \"instances\": [{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100\",\n"
    "   \"npu_mem\": {\"mem_size\": 80}, \"max_num_seqs\": 128, \"max_num_batched_tokens\": 2048,\n"
    "   \"afd\": {\"ffn_hardware\": \"A100\", \"ffn_npus\": 1, \"micro_batches\": 2}}],\n"
    "   \"power\": {\"base_node_power\": 100,\n"
    "     \"npu\": {\"H100\": {\"idle_power\": 100, \"standby_power\": 100, \"active_power\": "
    "100,\n"
    "                      \"standby_duration\": 18}},\n"
    "     \"cpu\": {\"idle_power\": 10, \"active_power\": 10, \"util\": 0.5},\n"
    "     \"dram\": {\"dimm_size\": 512, \"idle_power\": 10, \"energy_per_bit\": 1},\n"
    "     \"link\": {\"num_links\": 1, \"idle_power\": 10, \"energy_per_bit\": 4},\n"
    "     \"nic\": {\"num_nics\": 1, \"idle_power\": 10},\n"
    "     \"storage\": {\"num_devices\": 1, \"idle_power\": 10}}}]}\n";

static int run_cli(const char *dir, const char *out_dir, char **err)
{
    g_autofree char *cl = g_build_filename(dir, "c.json", NULL);
    g_autofree char *wl = g_build_filename(dir, "w.jsonl", NULL);
    const char *argv[] = {SV_SERVESIM_BIN,
                          "run",
                          "--cluster",
                          cl,
                          "--workload",
                          wl,
                          "--latency",
                          "roofline",
                          "--host-overhead",
                          "none",
                          "--output-dir",
                          out_dir,
                          NULL};
    g_autofree char *out = NULL;
    int status = -1;
    CU_ASSERT_FATAL(sv_test_spawn(argv, &out, err, &status));
    return status;
}

static void test_run_afd_power(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cl = g_build_filename(dir, "c.json", NULL);
    g_autofree char *wl = g_build_filename(dir, "w.jsonl", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(cl, cluster, -1, NULL));
    CU_ASSERT_FATAL(
        g_file_set_contents(wl,
                            "{\"input_toks\": 16, \"output_toks\": 2, \"arrival_time_ns\": 0}\n"
                            "{\"input_toks\": 16, \"output_toks\": 2, \"arrival_time_ns\": 0}\n",
                            -1, NULL));
    g_autofree char *o1 = g_build_filename(dir, "o1", NULL);
    g_autofree char *o2 = g_build_filename(dir, "o2", NULL);
    g_autofree char *e1 = NULL, *e2 = NULL;
    SV_ASSERT_EQ_I64(run_cli(dir, o1, &e1), 0);
    SV_ASSERT_EQ_I64(run_cli(dir, o2, &e2), 0);
    static const char *const files[] = {"requests.csv", "timeseries.csv", "summary.json",
                                        "power.csv"};
    for (size_t k = 0; k < G_N_ELEMENTS(files); k++) {
        g_autofree char *a = sv_test_slurp(o1, files[k]), *b = sv_test_slurp(o2, files[k]);
        CU_ASSERT(strlen(a) > 0);
        CU_ASSERT_STRING_EQUAL(a, b);
    }
    /* The A100 FFN group takes the catalog's figures, with a note naming the path. */
    CU_ASSERT_PTR_NOT_NULL(strstr(e1, "nodes[0].power.npu.A100-80GB: not given: the hardware "
                                      "catalog's A100-80GB is used: idle 63 W, active 400 W"));
    /* Traffic by hand (docs/afd.md): link 32 layers x 2 directions x 34 tokens x 8,192 bytes;
     * DRAM 2 x (4,786,233,344 + 2 x 11,274,289,152) + 131,072 x 66. */
    g_autofree char *sm = sv_test_slurp(o1, "summary.json");
    CU_ASSERT_PTR_NOT_NULL(strstr(sm, "\"link_bytes\" : 17825792.0"));
    CU_ASSERT_PTR_NOT_NULL(strstr(sm, "\"dram_bytes\" : 54678274048.0"));
    CU_ASSERT_PTR_NOT_NULL(strstr(sm, "\"nic_bytes\" : 0.0"));
    g_autofree char *rq = sv_test_slurp(o1, "requests.csv");
    CU_ASSERT_PTR_NOT_NULL(strstr(rq, "energy_j"));
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"run_afd_power", test_run_afd_power},
        {NULL, NULL},
    };
    sv_test_add_suite("afd_power_cli", cases);
    return sv_test_run();
}
