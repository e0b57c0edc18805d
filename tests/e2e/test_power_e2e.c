/* The power model fed by `servesim run` (docs/power.md), end to end on the servesim binary.
 *
 * The test's own config: one H100-SXM instance (roofline), a power block of round numbers whose
 * traffic energies are 0 pJ/bit, so that every joule is a power x a time:
 *   base 100 W, cpu 10 W (idle = active), dram 1 DIMM x 10 W, link 10 W, nic 10 W, storage 10 W:
 *   150 W besides the accelerator; npu idle 10 W, standby 20 W for 5 s, active 110 W.
 * Two requests, at 0 s and at 20 s. A request alone is computed without a gap from its first
 * scheduled step to its last token (each iteration launches when the previous one commits), so
 * the device is busy B = last_token - first_scheduled for each, in standby 5 s after the first
 * (the gap is 20 s), idle otherwise, and the run ends at the second's last token T:
 *   total = 150 T + 110 (B0 + B1) + 20 x 5 + 10 (T - B0 - B1 - 5)
 *   request k: (150 + 110) Bk (only it runs while it runs)
 *   unattributed = total - both (the idle tail and the standby window). */
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <json-glib/json-glib.h>
#include <string.h>

static const char CLUSTER[] =
    "{\"num_nodes\": 1, \"link_bw\": 16, \"link_latency\": 20000, \"nodes\": [{\n"
    "  \"num_instances\": 1,\n"
    "  \"cpu_mem\": {\"mem_size\": 512, \"mem_bw\": 256, \"mem_latency\": 0},\n"
    "  \"instances\": [{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100-SXM\",\n"
    "    \"npu_mem\": {\"mem_size\": 80, \"mem_bw\": 3350, \"mem_latency\": 0},\n"
    "    \"num_npus\": 1, \"tp_size\": 1, \"pd_type\": null}],\n"
    "  \"power\": {\"base_node_power\": 100,\n"
    "    \"npu\": {\"H100-SXM\": {\"idle_power\": 10, \"standby_power\": 20, \"active_power\": "
    "110,\n"
    "                          \"standby_duration\": 5}},\n"
    "    \"cpu\": {\"idle_power\": 10, \"active_power\": 10, \"util\": 0.5},\n"
    "    \"dram\": {\"dimm_size\": 512, \"idle_power\": 10, \"energy_per_bit\": 0},\n"
    "    \"link\": {\"num_links\": 1, \"idle_power\": 10, \"energy_per_bit\": 0},\n"
    "    \"nic\": {\"num_nics\": 1, \"idle_power\": 10},\n"
    "    \"storage\": {\"num_devices\": 1, \"idle_power\": 10}}}]}\n";

static const char TRACE[] =
    "{\"input_toks\": 64, \"output_toks\": 8, \"arrival_time_ns\": 0}\n"
    "{\"input_toks\": 64, \"output_toks\": 8, \"arrival_time_ns\": 20000000000}\n";

static gboolean run_servesim(const char *cluster, const char *trace, const char *out,
                             const char *profiles)
{
    g_autofree char *bin = g_canonicalize_filename(SV_SERVESIM_BIN, NULL);
    const char *argv[] = {bin,
                          "run",
                          "--cluster",
                          cluster,
                          "--workload",
                          trace,
                          "--output-dir",
                          out,
                          "--quiet",
                          profiles ? "--profiles" : NULL,
                          profiles,
                          NULL};
    g_autofree char *so = NULL, *se = NULL;
    int status = -1;
    gboolean ok = sv_test_spawn(argv, &so, &se, &status);
    if (!ok || status != 0)
        fprintf(stderr, "servesim run failed (%d): %s\n", status, se ? se : "");
    return ok && status == 0;
}

/* requests.csv as rows of fields (header first). */
static char ***read_csv(const char *path, int *n_rows)
{
    g_autofree char *text = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(path, &text, NULL, NULL));
    char **lines = g_strsplit(g_strchomp(text), "\n", -1);
    int n = (int)g_strv_length(lines);
    char ***rows = g_new0(char **, (size_t)n + 1);
    for (int i = 0; i < n; i++)
        rows[i] = g_strsplit(lines[i], ",", -1);
    g_strfreev(lines);
    *n_rows = n;
    return rows;
}

static void free_csv(char ***rows)
{
    for (int i = 0; rows[i]; i++)
        g_strfreev(rows[i]);
    g_free(rows);
}

static int col(char **header, const char *name)
{
    for (int i = 0; header[i]; i++)
        if (strcmp(header[i], name) == 0)
            return i;
    CU_FAIL(name);
    return 0;
}

static JsonObject *load_energy(const char *dir, JsonParser **parser)
{
    g_autofree char *p = g_build_filename(dir, "summary.json", NULL);
    *parser = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_file(*parser, p, NULL));
    JsonObject *root = json_node_get_object(json_parser_get_root(*parser));
    CU_ASSERT_FATAL(json_object_has_member(root, "energy"));
    return json_object_get_object_member(root, "energy");
}

static void test_hand_computed(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cluster = g_build_filename(dir, "cluster.json", NULL);
    g_autofree char *trace = g_build_filename(dir, "trace.jsonl", NULL);
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(cluster, CLUSTER, -1, NULL));
    CU_ASSERT_FATAL(g_file_set_contents(trace, TRACE, -1, NULL));
    CU_ASSERT_FATAL(run_servesim(cluster, trace, out, NULL));

    g_autofree char *rp = g_build_filename(out, "requests.csv", NULL);
    int n = 0;
    char ***rows = read_csv(rp, &n);
    CU_ASSERT_EQUAL_FATAL(n, 3);
    int c_sched = col(rows[0], "first_scheduled_ns"), c_last = col(rows[0], "last_token_ns"),
        c_e = col(rows[0], "energy_j");
    double b[2], req_j[2], last[2], sched[2];
    for (int k = 0; k < 2; k++) {
        sched[k] = g_ascii_strtod(rows[k + 1][c_sched], NULL) / 1e9;
        last[k] = g_ascii_strtod(rows[k + 1][c_last], NULL) / 1e9;
        b[k] = last[k] - sched[k];
        req_j[k] = g_ascii_strtod(rows[k + 1][c_e], NULL);
    }
    free_csv(rows);
    CU_ASSERT(b[0] > 0 && b[0] < 5 && b[1] > 0 && sched[1] - last[0] > 5);
    double t = last[1];
    double total = 150 * t + 110 * (b[0] + b[1]) + 20 * 5 + 10 * (t - b[0] - b[1] - 5);
    double idle = total - 260 * (b[0] + b[1]);

    JsonParser *jp = NULL;
    JsonObject *e = load_energy(out, &jp);
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(e, "total_j"), total, 1e-6);
    for (int k = 0; k < 2; k++)
        CU_ASSERT_DOUBLE_EQUAL(req_j[k], 260 * b[k], 1e-6); /* energy_j has 6 decimals */
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(e, "unattributed_j"), idle, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(req_j[0] + req_j[1] + idle, total, 1e-5);
    JsonObject *bc = json_object_get_object_member(e, "by_component_j");
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(bc, "base"), 100 * t, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(bc, "npu"),
                           110 * (b[0] + b[1]) + 100 + 10 * (t - b[0] - b[1] - 5), 1e-6);
    JsonObject *st = json_object_get_object_member(e, "npu_by_state_j");
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(st, "standby"), 100.0, 1e-9);
    /* 16 output tokens, 2 requests. */
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(e, "j_per_output_token"), total / 16,
                           1e-6);
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(e, "j_per_request"), total / 2, 1e-6);
    g_object_unref(jp);

    /* power.csv. Rows of constant power are left out but the first and last of each stretch
     * (docs/outputs.md, "Quiet ticks"): the first request's steps in row 1 (last0 < 1 s), its
     * standby window to last0 + 5 s in rows 2..5 (3 and 4 left out), the window's end in row 6,
     * idle at 160 W from 6 s to the second arrival at 20 s (rows 7 and 19; row 20 ends at that
     * arrival, written), then the second request and the run's end T. The row at 19 s covers
     * (18 s, 19 s], all idle: 160 W; its cumulative J. */
    CU_ASSERT(last[0] < 1 && sched[1] >= 20);
    g_autofree char *pp = g_build_filename(out, "power.csv", NULL);
    rows = read_csv(pp, &n);
    int c_t = col(rows[0], "t"), c_w = col(rows[0], "total_w"), c_j = col(rows[0], "total_j"),
        c_nw = col(rows[0], "node0_npu_w");
    const char *want_t[] = {"1.000", "2.000", "5.000", "6.000", "7.000", "19.000", "20.000"};
    CU_ASSERT_EQUAL_FATAL(n, 1 + (int)G_N_ELEMENTS(want_t) + 1);
    for (size_t i = 0; i < G_N_ELEMENTS(want_t); i++)
        CU_ASSERT_STRING_EQUAL(rows[i + 1][c_t], want_t[i]);
    CU_ASSERT_DOUBLE_EQUAL(g_ascii_strtod(rows[n - 1][c_t], NULL), t, 0.0005);
    CU_ASSERT_DOUBLE_EQUAL(g_ascii_strtod(rows[6][c_w], NULL), 160.0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(g_ascii_strtod(rows[6][c_nw], NULL), 10.0, 1e-9);
    double j19 = 150 * 19 + 110 * b[0] + 20 * 5 + 10 * (19 - b[0] - 5);
    CU_ASSERT_DOUBLE_EQUAL(g_ascii_strtod(rows[6][c_j], NULL), j19, 0.0005);
    /* Standby rows 2 and 5: 150 + 20 W; a left-out stretch's energy is its power x its length. */
    CU_ASSERT_DOUBLE_EQUAL(g_ascii_strtod(rows[2][c_w], NULL), 170.0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(g_ascii_strtod(rows[3][c_w], NULL), 170.0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(g_ascii_strtod(rows[3][c_j], NULL) - g_ascii_strtod(rows[2][c_j], NULL),
                           170.0 * 3, 0.001);
    CU_ASSERT_DOUBLE_EQUAL(g_ascii_strtod(rows[6][c_j], NULL) - g_ascii_strtod(rows[5][c_j], NULL),
                           160.0 * 12, 0.001);
    /* The last row ends the run with the summary's total. */
    CU_ASSERT_DOUBLE_EQUAL(g_ascii_strtod(rows[n - 1][c_j], NULL), total, 0.0005);
    free_csv(rows);
    sv_test_rmtree(dir);
}

/* Without a power block: no power.csv, no energy_j, no "energy". */
static void test_off_without_blocks(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cluster =
        sv_test_write_cluster(dir, "meta-llama/Llama-3.1-8B", "H100-SXM", 80);
    g_autofree char *trace = g_build_filename(dir, "trace.jsonl", NULL);
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(trace, TRACE, -1, NULL));
    CU_ASSERT_FATAL(run_servesim(cluster, trace, out, NULL));
    g_autofree char *pp = g_build_filename(out, "power.csv", NULL);
    CU_ASSERT_FALSE(g_file_test(pp, G_FILE_TEST_EXISTS));
    g_autofree char *rp = g_build_filename(out, "requests.csv", NULL);
    g_autofree char *text = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(rp, &text, NULL, NULL));
    CU_ASSERT_PTR_NULL(strstr(text, "energy_j"));
    g_autofree char *sp = g_build_filename(out, "summary.json", NULL);
    g_autofree char *sum = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(sp, &sum, NULL, NULL));
    CU_ASSERT_PTR_NULL(strstr(sum, "\"energy\""));
    sv_test_rmtree(dir);
}

/* LLMServingSim's single_node_power_instance.json on its ShareGPT trace: energy reported,
 * components sum to the total, requests + unattributed = total. */
static void test_reference_config(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim/configs/cluster/single_node_power_instance.json",
                      "LLMServingSim's power config");
    const char *ref = SV_SHARED "/reference/llmservingsim";
    g_autofree char *cluster =
        g_strconcat(ref, "/configs/cluster/single_node_power_instance.json", NULL);
    g_autofree char *trace =
        g_strconcat(ref, "/workloads/sharegpt-llama-3.1-8b-300-sps10.jsonl", NULL);
    g_autofree char *profiles = g_strconcat(ref, "/profiles", NULL);
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    CU_ASSERT_FATAL(run_servesim(cluster, trace, out, profiles));
    JsonParser *jp = NULL;
    JsonObject *e = load_energy(out, &jp);
    double total = json_object_get_double_member(e, "total_j");
    CU_ASSERT(total > 0);
    JsonObject *bc = json_object_get_object_member(e, "by_component_j");
    double sum = 0;
    GList *names = json_object_get_members(bc);
    CU_ASSERT_EQUAL(g_list_length(names), 7);
    for (GList *l = names; l; l = l->next)
        sum += json_object_get_double_member(bc, l->data);
    g_list_free(names);
    CU_ASSERT_DOUBLE_EQUAL(sum, total, 1e-6 * total);
    double att = json_object_get_double_member(e, "attributed_j");
    CU_ASSERT_DOUBLE_EQUAL(att + json_object_get_double_member(e, "unattributed_j"), total,
                           1e-6 * total);
    g_object_unref(jp);
    g_autofree char *rp = g_build_filename(out, "requests.csv", NULL);
    int n = 0;
    char ***rows = read_csv(rp, &n);
    CU_ASSERT_EQUAL(n, 301);
    int c_e = col(rows[0], "energy_j");
    double req = 0;
    for (int i = 1; i < n; i++)
        req += g_ascii_strtod(rows[i][c_e], NULL);
    free_csv(rows);
    CU_ASSERT_DOUBLE_EQUAL(req, att, 1e-6 * (n - 1)); /* each printed to 1e-6 J */
    sv_test_rmtree(dir);
}

/* ISPASS'26 figure 6 (A6000, TP1) with a 30 s idle tail (--idle-tail): power.csv has the shape of
 * a server's measured power, load -> plateau -> standby step -> idle floor, with the levels of
 * its power block: idle = base 219 + npu 33 + cpu 10 + (185 - 10) x 0.5 + dram ceil(128 / 32) x
 * 4 + link 5 + nic 11.2 + storage 5.9 = 387.6 W; standby adds 89 - 33 = 56 W: 443.6 W for 18 s
 * after the last compute. */
static void test_figure6_shape(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim-ispass26/figure_6/config/power_config_tp1.json",
                      "the ISPASS'26 figure 6 power config");
    const char *ref = SV_SHARED "/reference/llmservingsim-ispass26";
    g_autofree char *bin = g_canonicalize_filename(SV_SERVESIM_BIN, NULL);
    g_autofree char *cluster = g_strconcat(ref, "/figure_6/config/power_config_tp1.json", NULL);
    g_autofree char *trace = g_strconcat(ref, "/dataset/sharegpt_req300_rate10_llama.jsonl", NULL);
    g_autofree char *profiles = g_strconcat(ref, "/perf_models", NULL);
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    const char *argv[] = {
        bin,      "run",          "--cluster", cluster,   "--workload",  trace, "--profiles",
        profiles, "--output-dir", out,         "--quiet", "--idle-tail", "30",  NULL};
    g_autofree char *so = NULL, *se = NULL;
    int status = -1;
    CU_ASSERT_FATAL(sv_test_spawn(argv, &so, &se, &status) && status == 0);
    g_autofree char *pp = g_build_filename(out, "power.csv", NULL);
    int n = 0;
    char ***rows = read_csv(pp, &n);
    int c_t = col(rows[0], "t"), c_w = col(rows[0], "total_w");
    /* The end of the run's last request (the makespan) from summary.json. */
    JsonParser *jp = NULL;
    (void)load_energy(out, &jp);
    double mk =
        json_object_get_double_member(json_node_get_object(json_parser_get_root(jp)), "makespan_s");
    g_object_unref(jp);
    /* Seconds each level covers: a row stands for its own second and, after left-out rows of
     * constant power (docs/outputs.md, "Quiet ticks"), for theirs. */
    double loaded = 0, standby = 0, idle = 0, prev = 0;
    for (int i = 1; i < n; i++) {
        double t = g_ascii_strtod(rows[i][c_t], NULL), w = g_ascii_strtod(rows[i][c_w], NULL);
        if (t <= mk - 1e-9) {
            CU_ASSERT(w > 443.6 + 100); /* serving: well above standby */
            loaded += t - prev;
        } else if (t >= mk + 1.0 && t <= mk + 18.0) {
            CU_ASSERT_DOUBLE_EQUAL(w, 443.6, 1e-3); /* whole ticks in the standby window */
            standby += t - prev;
        } else if (t >= mk + 19.0) {
            CU_ASSERT_DOUBLE_EQUAL(w, 387.6, 1e-3); /* the idle floor */
            idle += t - prev;
        }
        prev = t;
    }
    free_csv(rows);
    CU_ASSERT(loaded >= 50 && standby >= 16 && idle >= 10);
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"hand-computed idle tail, standby and per-request energy", test_hand_computed},
        {"power off without power blocks", test_off_without_blocks},
        {"reference single_node_power_instance", test_reference_config},
        {"ISPASS'26 figure 6: load, standby, idle tail", test_figure6_shape},
        {NULL, NULL},
    };
    sv_test_add_suite("power_e2e", cases);
    return sv_test_run();
}
