/* Idle time costs nothing (docs/outputs.md, "Quiet ticks"; docs/reliability.md, "Idle time and
 * progress"): a stretch of three or more ticks in which nothing happens is written as its first
 * and last rows, in timeseries.csv and in power.csv, and `servesim validate` counts the rows left
 * out as written. Before issue 13 a request arriving at 10^17 ns wrote a row per simulated
 * second (10^8 rows); here a request at 10^5 s gives 3 rows instead of 100,001. */
#include "metrics/metrics.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

/* One node with a power block of round numbers (tests/e2e/test_power_e2e.c's): 150 W besides
 * the accelerator, which draws 10 W idle, 20 W in standby (5 s), 110 W active. */
static const char POWER_CLUSTER[] =
    "{\"num_nodes\": 1, \"link_bw\": 16, \"link_latency\": 20000, \"nodes\": [{\n"
    "  \"num_instances\": 1,\n"
    "  \"cpu_mem\": {\"mem_size\": 512, \"mem_bw\": 256, \"mem_latency\": 0},\n"
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

/* One request (100 prompt, 10 output tokens: served in well under a second) at 10^5 s. */
#define FAR_S 100000
static const char FAR_TRACE[] =
    "{\"input_toks\": 100, \"output_toks\": 10, \"arrival_time_ns\": 100000000000000}\n";

static int run_servesim(const char *const *args, char **err)
{
    g_autofree char *bin = g_canonicalize_filename(SV_SERVESIM_BIN, NULL);
    GPtrArray *argv = g_ptr_array_new();
    g_ptr_array_add(argv, bin);
    g_ptr_array_add(argv, (char *)"run");
    for (int i = 0; args[i]; i++)
        g_ptr_array_add(argv, (char *)args[i]);
    g_ptr_array_add(argv, NULL);
    g_autofree char *out = NULL;
    int status = -1;
    gboolean ok = sv_test_spawn((const char *const *)argv->pdata, &out, err, &status);
    g_ptr_array_free(argv, TRUE);
    return ok ? status : -1;
}

/* A CSV file as rows of fields, header first; *n counts the rows. */
static char ***read_csv(const char *path, int *n)
{
    g_autofree char *text = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(path, &text, NULL, NULL));
    g_auto(GStrv) lines = g_strsplit(g_strchomp(text), "\n", -1);
    *n = (int)g_strv_length(lines);
    char ***rows = g_new0(char **, (size_t)*n + 1);
    for (int i = 0; i < *n; i++)
        rows[i] = g_strsplit(lines[i], ",", -1);
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

static double num(const char *s)
{
    return g_ascii_strtod(s, NULL);
}

/* timeseries.csv of the far request: row 1 (nothing yet: the first of the quiet stretch), row
 * FAR_S (its last: the tick before the arrival), row FAR_S + 1 (the request's steps, prompt 100
 * and 10 output tokens in it). */
static void test_far_arrival_timeseries(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cluster =
        sv_test_write_cluster(dir, "meta-llama/Llama-3.1-8B", "H100-SXM", 80);
    g_autofree char *trace = g_build_filename(dir, "far.jsonl", NULL);
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(trace, FAR_TRACE, -1, NULL));
    const char *args[] = {"--cluster", cluster,        "--workload", trace,     "--latency",
                          "roofline",  "--output-dir", out,          "--quiet", NULL};
    g_autofree char *err = NULL;
    int rc = run_servesim(args, &err);
    if (rc != 0)
        fprintf(stderr, "%s\n", err ? err : "");
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    g_autofree char *ts = g_build_filename(out, "timeseries.csv", NULL);
    int n = 0;
    char ***rows = read_csv(ts, &n);
    CU_ASSERT_EQUAL_FATAL(n, 4);
    int c_t = col(rows[0], "t"), c_p = col(rows[0], "prompt_throughput"),
        c_g = col(rows[0], "gen_throughput"), c_r = col(rows[0], "running"),
        c_w = col(rows[0], "waiting");
    const char *want_t[] = {"1.000", "100000.000", "100001.000"};
    for (int i = 0; i < 3; i++)
        CU_ASSERT_STRING_EQUAL(rows[i + 1][c_t], want_t[i]);
    for (int i = 1; i <= 2; i++) { /* the quiet rows: nothing computed, nothing held */
        CU_ASSERT_STRING_EQUAL(rows[i][c_p], "0.0");
        CU_ASSERT_STRING_EQUAL(rows[i][c_g], "0.0");
        CU_ASSERT_STRING_EQUAL(rows[i][c_r], "0");
        CU_ASSERT_STRING_EQUAL(rows[i][c_w], "0");
    }
    CU_ASSERT_DOUBLE_EQUAL(num(rows[3][c_p]), 100, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(num(rows[3][c_g]), 10, 1e-9);
    free_csv(rows);
    sv_test_rmtree(dir);
}

/* power.csv of the far request, then 10^5 s of idle tail (--idle-tail): the node draws 160 W
 * idle until the arrival (rows 1 and FAR_S - 1 stand for the stretch; row FAR_S ends at the
 * arrival), the request's steps, 5 s of standby after them, then 160 W again to the end of the
 * tail. A handful of rows, and they integrate to the summary's energy: the rows left out have the
 * power of the rows around them. */
static void test_far_arrival_power(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cluster = g_build_filename(dir, "cluster.json", NULL);
    g_autofree char *trace = g_build_filename(dir, "far.jsonl", NULL);
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(cluster, POWER_CLUSTER, -1, NULL));
    CU_ASSERT_FATAL(g_file_set_contents(trace, FAR_TRACE, -1, NULL));
    const char *args[] = {"--cluster", cluster,   "--workload",  trace,    "--output-dir",
                          out,         "--quiet", "--idle-tail", "100000", NULL};
    g_autofree char *err = NULL;
    int rc = run_servesim(args, &err);
    if (rc != 0)
        fprintf(stderr, "%s\n", err ? err : "");
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    g_autofree char *pp = g_build_filename(out, "power.csv", NULL);
    int n = 0;
    char ***rows = read_csv(pp, &n);
    CU_ASSERT_FATAL(n >= 8);
    CU_ASSERT(n <= 16); /* 200,001 rows before issue 13 */
    int c_t = col(rows[0], "t"), c_w = col(rows[0], "total_w"), c_j = col(rows[0], "total_j");
    CU_ASSERT_STRING_EQUAL(rows[1][c_t], "1.000");
    CU_ASSERT_STRING_EQUAL(rows[2][c_t], "99999.000");
    CU_ASSERT_STRING_EQUAL(rows[3][c_t], "100000.000");
    for (int i = 1; i <= 3; i++)
        CU_ASSERT_DOUBLE_EQUAL(num(rows[i][c_w]), 160.0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(num(rows[2][c_j]), 160.0 * 99999, 0.0005);
    /* the last row ends the tail at 160 W */
    CU_ASSERT_DOUBLE_EQUAL(num(rows[n - 1][c_w]), 160.0, 1e-9);
    double integral = 0, prev = 0;
    for (int i = 1; i < n; i++) {
        double t = num(rows[i][c_t]);
        integral += num(rows[i][c_w]) * (t - prev);
        prev = t;
    }
    double total = num(rows[n - 1][c_j]);
    CU_ASSERT(prev > 2 * FAR_S);
    /* 3 decimals of W over stretches of 10^5 s: within 2 x 0.0005 W x 10^5 s */
    CU_ASSERT_DOUBLE_EQUAL(integral, total, 100.0);
    free_csv(rows);

    JsonParser *jp = json_parser_new();
    g_autofree char *sp = g_build_filename(out, "summary.json", NULL);
    CU_ASSERT_FATAL(json_parser_load_from_file(jp, sp, NULL));
    JsonObject *root = json_node_get_object(json_parser_get_root(jp));
    double sum_j =
        json_object_get_double_member(json_object_get_object_member(root, "energy"), "total_j");
    CU_ASSERT_DOUBLE_EQUAL(sum_j, total, 0.0005);
    g_object_unref(jp);
    sv_test_rmtree(dir);
}

/* ---- servesim validate over a file with left-out rows ---------------------------------------- */

static void write_file(const char *dir, const char *name, const char *text)
{
    g_autofree char *p = g_build_filename(dir, name, NULL);
    CU_ASSERT_FATAL(g_file_set_contents(p, text, -1, NULL));
}

static const char MEASURED_REQ[] =
    "{\"queued_ts\": 0.0, \"first_token_ts\": 0.5, \"last_token_ts\": 6.5, \"output_toks\": 7}\n";
static const char SIM_REQ[] = "request_id,instance,arrival_ns,first_scheduled_ns,first_token_ns,"
                              "last_token_ns,input_tokens,output_tokens,prefix_hit_tokens,"
                              "preemptions,ttft_ns,tpot_ns,e2e_ns,queue_ns\n"
                              "0,0,0,0,500000000,6500000000,10,7,0,0,500000000,1000000000,"
                              "6500000000,0\n";
#define TS_HEAD "t,prompt_throughput,gen_throughput,running,waiting,kv_cache_pct\n"
/* vLLM's rows: a step in every second, one request running (its long steps end at 1.5 and 5.5 s:
 * no tokens in ticks 3 to 5). */
static const char MEASURED_TS[] = TS_HEAD "1.000,10.0,1.0,1,0,1.00\n"
                                          "2.000,0.0,0.0,1,0,1.00\n"
                                          "3.000,0.0,0.0,1,0,1.00\n"
                                          "4.000,0.0,0.0,1,0,1.00\n"
                                          "5.000,0.0,0.0,1,0,1.00\n"
                                          "6.000,0.0,6.0,0,0,0.00\n";
/* Ours, written in full and with the quiet ticks 2 to 5 as their first and last rows. */
static const char SIM_FULL[] = TS_HEAD "1.000,10.0,1.0,1,0,1.00\n"
                                       "2.000,0.0,0.0,1,0,1.00\n"
                                       "3.000,0.0,0.0,1,0,1.00\n"
                                       "4.000,0.0,0.0,1,0,1.00\n"
                                       "5.000,0.0,0.0,1,0,1.00\n"
                                       "6.000,0.0,5.0,0,0,0.00\n"
                                       "7.000,0.0,1.0,0,0,0.00\n";
static const char SIM_GAP[] = TS_HEAD "1.000,10.0,1.0,1,0,1.00\n"
                                      "2.000,0.0,0.0,1,0,1.00\n"
                                      "5.000,0.0,0.0,1,0,1.00\n"
                                      "6.000,0.0,5.0,0,0,0.00\n"
                                      "7.000,0.0,1.0,0,0,0.00\n";

static void test_validate_gap(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *meas = g_build_filename(dir, "meas", NULL);
    g_autofree char *full = g_build_filename(dir, "full", NULL);
    g_autofree char *gap = g_build_filename(dir, "gap", NULL);
    const char *dirs[] = {meas, full, gap};
    for (int i = 0; i < 3; i++)
        CU_ASSERT_FATAL(g_mkdir(dirs[i], 0755) == 0);
    write_file(meas, "requests.jsonl", MEASURED_REQ);
    write_file(meas, "timeseries.csv", MEASURED_TS);
    write_file(full, "requests.csv", SIM_REQ);
    write_file(full, "timeseries.csv", SIM_FULL);
    write_file(gap, "requests.csv", SIM_REQ);
    write_file(gap, "timeseries.csv", SIM_GAP);
    struct sv_metrics_validation a, b;
    GError *e = NULL;
    CU_ASSERT_FATAL(sv_metrics_validate(meas, full, &a, &e));
    CU_ASSERT_FATAL(sv_metrics_validate(meas, gap, &b, &e));
    /* By hand, over the 7 ticks: gen |1-1| + |6-5| + |0-1| = 2, MAE 2/7; running and waiting
     * agree everywhere: MAE 0 (the left-out ticks 3 and 4 ran one request, as row 5 says). */
    const struct sv_metrics_validate_series *sa[] = {&a.prompt_throughput, &a.gen_throughput,
                                                     &a.running, &a.waiting};
    const struct sv_metrics_validate_series *sb[] = {&b.prompt_throughput, &b.gen_throughput,
                                                     &b.running, &b.waiting};
    for (int k = 0; k < 4; k++) {
        SV_ASSERT_EQ_I64(sb[k]->n_ticks, 7);
        SV_ASSERT_EQ_I64(sb[k]->n_ticks, sa[k]->n_ticks);
        SV_ASSERT_EQ_I64(sb[k]->n_mape_ticks, sa[k]->n_mape_ticks);
        CU_ASSERT_DOUBLE_EQUAL(sb[k]->mae, sa[k]->mae, 1e-12);
        CU_ASSERT_DOUBLE_EQUAL(sb[k]->mape, sa[k]->mape, 1e-12);
    }
    CU_ASSERT_DOUBLE_EQUAL(b.gen_throughput.mae, 2.0 / 7, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(b.running.mae, 0.0, 1e-12);
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"far arrival: timeseries.csv rows", test_far_arrival_timeseries},
        {"far arrival and idle tail: power.csv rows and energy", test_far_arrival_power},
        {"validate counts left-out rows", test_validate_gap},
        {NULL, NULL},
    };
    sv_test_add_suite("idle_rows", cases);
    return sv_test_run();
}
