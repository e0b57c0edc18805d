/* `servesim run --hardware-file`: a device defined in a YAML or JSON file runs without rebuilding
 * (quick form and cluster config), an override reaches the run, and a bad file stops the run
 * before any output with the file and field named. Expectations are mechanisms (half the memory
 * bandwidth makes memory-bound decode steps slower; 16 GiB cannot hold 16 GB of weights), not
 * numbers of an earlier run. */
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <json-glib/json-glib.h>
#include <string.h>

static int run_servesim(const char *const *args, char **err)
{
    GPtrArray *argv = g_ptr_array_new();
    g_autofree char *bin = g_canonicalize_filename(SV_SERVESIM_BIN, NULL);
    g_ptr_array_add(argv, bin);
    g_ptr_array_add(argv, (char *)"run");
    for (int i = 0; args[i]; i++)
        g_ptr_array_add(argv, (char *)args[i]);
    g_ptr_array_add(argv, NULL);
    int status = -1;
    gboolean ok = g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL,
                               err, &status, NULL);
    g_ptr_array_free(argv, TRUE);
    if (!ok)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static double mean_tpot(const char *dir)
{
    g_autofree char *p = g_build_filename(dir, "summary.json", NULL);
    g_autoptr(JsonParser) jp = json_parser_new();
    if (!json_parser_load_from_file(jp, p, NULL))
        return -1;
    JsonObject *o = json_node_get_object(json_parser_get_root(jp));
    JsonObject *lat = json_object_get_object_member(o, "latency_ms");
    return json_object_get_double_member(json_object_get_object_member(lat, "tpot"), "mean");
}

static char *put(const char *dir, const char *name, const char *text)
{
    char *p = g_build_filename(dir, name, NULL);
    CU_ASSERT_FATAL(g_file_set_contents(p, text, -1, NULL));
    return p;
}

/* An H100 with half its memory bandwidth, defined in YAML: decode steps (memory bound at small
 * batches) take markedly longer than on the built-in H100. */
static void test_quick_form_user_device(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *hw = put(dir, "half.yaml",
                              "hardware:\n"
                              "  - name: Half-H100\n"
                              "    bf16_tflops: 989\n"
                              "    fp8_tflops: 1979\n"
                              "    mem_gib: 80\n"
                              "    mem_bw_gbps: 1675\n"
                              "    link_bw_gbps: 450\n"
                              "    source: the H100-SXM entry with half its HBM bandwidth\n");
    g_autofree char *a = g_build_filename(dir, "h100", NULL);
    g_autofree char *b = g_build_filename(dir, "half", NULL);
    const char *common[] = {"--model",
                            "Llama-3.1-8B",
                            "--requests",
                            "40",
                            "--qps",
                            "1",
                            "--input-len",
                            "128",
                            "--output-len",
                            "64",
                            "--latency",
                            "roofline",
                            "--quiet",
                            "--hardware-file",
                            hw};
    for (int k = 0; k < 2; k++) {
        const char *args[32];
        int n = 0;
        for (size_t i = 0; i < G_N_ELEMENTS(common); i++)
            args[n++] = common[i];
        args[n++] = "--hardware";
        args[n++] = k ? "half-h100" : "H100";
        args[n++] = "--output-dir";
        args[n++] = k ? b : a;
        args[n] = NULL;
        char *err = NULL;
        int rc = run_servesim(args, &err);
        if (rc != 0)
            fprintf(stderr, "%s", err);
        CU_ASSERT_EQUAL(rc, 0);
        g_free(err);
    }
    double ta = mean_tpot(a), tb = mean_tpot(b);
    CU_ASSERT(ta > 0 && tb > 1.25 * ta);
    sv_test_rmtree(dir);
}

/* An override reaches the capacity: an "H100" of 16 GiB cannot hold Llama-3.1-8B's weights
 * (16.06e9 B = 14.96 GiB > 16 GiB x 0.9). */
static void test_override_reaches_run(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *hw =
        put(dir, "small.json", "{\"hardware\": [{\"name\": \"H100\", \"mem_gib\": 16}]}");
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    const char *args[] = {"--model",         "Llama-3.1-8B",
                          "--hardware",      "H100",
                          "--requests",      "5",
                          "--latency",       "roofline",
                          "--output-dir",    out,
                          "--hardware-file", hw,
                          "--quiet",         NULL};
    char *err = NULL;
    CU_ASSERT_EQUAL(run_servesim(args, &err), 1);
    CU_ASSERT(err && (strstr(err, "weights") || strstr(err, "fit")));
    g_free(err);
    sv_test_rmtree(dir);
}

/* A cluster config naming a device only a hardware file knows. */
static void test_config_user_device(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cluster = sv_test_write_cluster(dir, "meta-llama/Llama-3.1-8B", "Lab-NPU", 48);
    g_autofree char *wl = put(dir, "wl.jsonl",
                              "{\"input_toks\": 64, \"output_toks\": 8, \"arrival_time_ns\": 0}\n"
                              "{\"input_toks\": 32, \"output_toks\": 4, "
                              "\"arrival_time_ns\": 1000000}\n");
    g_autofree char *hw = put(dir, "lab.yaml",
                              "hardware:\n  - name: Lab-NPU\n    bf16_tflops: 300\n"
                              "    mem_gib: 48\n    mem_bw_gbps: 1000\n    source: lab\n");
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    const char *without[] = {"--cluster", cluster,        "--workload", wl,        "--latency",
                             "roofline",  "--output-dir", out,          "--quiet", NULL};
    char *err = NULL;
    CU_ASSERT_EQUAL(run_servesim(without, &err), 1);
    CU_ASSERT(err && strstr(err, "unknown hardware \"Lab-NPU\""));
    g_free(err);
    const char *with[] = {"--cluster",    cluster, "--workload",      wl, "--latency", "roofline",
                          "--output-dir", out,     "--hardware-file", hw, "--quiet",   NULL};
    err = NULL;
    int rc = run_servesim(with, &err);
    if (rc != 0)
        fprintf(stderr, "%s", err);
    CU_ASSERT_EQUAL(rc, 0);
    g_free(err);
    g_autofree char *csv = g_build_filename(out, "requests.csv", NULL);
    CU_ASSERT(g_file_test(csv, G_FILE_TEST_EXISTS));
    sv_test_rmtree(dir);
}

/* A bad file: exit 2, the file and the field path on stderr, nothing written. */
static void test_bad_file(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *hw =
        put(dir, "bad.yaml", "hardware:\n  - name: X\n    bf16_tflops: 1\n    source: s\n");
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    const char *args[] = {
        "--model", "Llama-3.1-8B", "--hardware",      "X", "--requests", "5", "--output-dir",
        out,       "--quiet",      "--hardware-file", hw,  NULL};
    char *err = NULL;
    CU_ASSERT_EQUAL(run_servesim(args, &err), 2);
    CU_ASSERT(err && strstr(err, "--hardware-file: bad.yaml: hardware[0].mem_gib: missing"));
    g_free(err);
    CU_ASSERT(!g_file_test(out, G_FILE_TEST_EXISTS));
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"quick_form_user_device", test_quick_form_user_device},
        {"override_reaches_run", test_override_reaches_run},
        {"config_user_device", test_config_user_device},
        {"bad_file", test_bad_file},
        {NULL, NULL},
    };
    sv_test_add_suite("hardware_cli", cases);
    return sv_test_run();
}
