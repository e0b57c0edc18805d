/* Issue 14, items 5 and 6: `servesim run` shapes without hand-written JSON and progress on long
 * runs. The quick form's clusters are checked against hand-written cluster configs of the same
 * shape (the config reader is separate code: the same requests.csv byte for byte means the same
 * cluster), which also runs --cluster with generator flags; trace rescaling against arrival times
 * computed by hand; --progress lines parsed; every conflict's message. Roofline only: nothing
 * from ../shared. */
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *tmp;

/* *out and *err hold the last call's output (freed here before the next call). */
static int run(const char *const *args, char **out, char **err)
{
    g_clear_pointer(out, g_free);
    g_clear_pointer(err, g_free);
    int status = -1;
    return sv_test_servesim(SV_SERVESIM_BIN, "run", args, out, err, &status) ? status : -1;
}

static char *dir_of(const char *name)
{
    return g_build_filename(tmp, name, NULL);
}

static char *slurp(const char *dir, const char *file)
{
    g_autofree char *p = g_build_filename(dir, file, NULL);
    char *text = NULL;
    if (!g_file_get_contents(p, &text, NULL, NULL))
        return NULL;
    return text;
}

static char *write_file(const char *name, const char *text)
{
    char *path = g_build_filename(tmp, name, NULL);
    g_assert(g_file_set_contents(path, text, -1, NULL));
    return path;
}

/* The config's link unit is ASTRA-sim GB/s (2^30 B per 10^9 ns): a catalog rate in decimal GB/s
 * written with every digit of the double. */
static char *astra(double gbps)
{
    return g_strdup_printf("%.17g", gbps * 1e9 / 1073741824.0);
}

#define GEN                                                                                        \
    "--requests", "24", "--qps", "20", "--input-len", "uniform:64:512", "--output-len",            \
        "uniform:8:64", "--latency", "roofline", "--seed", "3", "--quiet"

static void same_outputs(const char *a, const char *b)
{
    const char *files[] = {"requests.csv", "summary.json"};
    for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
        g_autofree char *x = slurp(a, files[i]);
        g_autofree char *y = slurp(b, files[i]);
        CU_ASSERT_FATAL(x != NULL && y != NULL);
        CU_ASSERT_STRING_EQUAL(x, y);
    }
}

/* --pd 1:1: one H100 prefill and one H100 decode instance on one node (2 devices), what this
 * config says by hand: the catalog's 80 GiB and 3,350 GB/s, its 450 GB/s NVLink, no latency
 * (the catalog's hop), an "engine" key (vLLM's batch defaults, as the quick form). */
static void test_pd_equals_config(void)
{
    g_autofree char *bw = astra(450);
    g_autofree char *cfg = g_strdup_printf(
        "{\"num_nodes\": 1, \"link_bw\": %s, \"engine\": \"vllm-0.19\", \"nodes\": [{"
        "\"num_instances\": 2, \"instances\": ["
        "{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100-SXM\", "
        "\"npu_mem\": {\"mem_size\": 80, \"mem_bw\": 3350}, \"num_npus\": 1, \"tp_size\": 1, "
        "\"pd_type\": \"prefill\"},"
        "{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100-SXM\", "
        "\"npu_mem\": {\"mem_size\": 80, \"mem_bw\": 3350}, \"num_npus\": 1, \"tp_size\": 1, "
        "\"pd_type\": \"decode\"}]}]}",
        bw);
    g_autofree char *path = write_file("pd.json", cfg);
    g_autofree char *qa = dir_of("pd-quick"), *ca = dir_of("pd-config");
    g_autofree char *out = NULL, *err = NULL;
    const char *q[] = {"--model",
                       "meta-llama/Llama-3.1-8B",
                       "--hardware",
                       "H100",
                       "--pd",
                       "1:1",
                       "--output-dir",
                       qa,
                       GEN,
                       NULL};
    CU_ASSERT_EQUAL_FATAL(run(q, &out, &err), 0);
    g_clear_pointer(&err, g_free);
    const char *c[] = {"--cluster", path, "--output-dir", ca, GEN, NULL};
    int rc = run(c, &out, &err);
    if (rc != 0)
        fprintf(stderr, "%s\n", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    same_outputs(qa, ca);
    /* and it is disaggregated: the requests name the prefill instance 0, served on 1 */
    g_autofree char *csv = slurp(qa, "requests.csv");
    CU_ASSERT(strstr(csv, "prefill_instance") != NULL);
    CU_ASSERT(strstr(csv, "\n0,1,") != NULL);
}

/* --instances 2 --tp 8: one 8-GPU node per instance, so two nodes joined by the scale-out NIC:
 * 50 GB/s per GPU (DGX H100: a 400 Gb/s ConnectX-7 per GPU) as link_bw's second dimension. */
static void test_two_nodes_equal_config(void)
{
    g_autofree char *up = astra(450), *out_bw = astra(50);
    const char *inst = "{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100-SXM\", "
                       "\"npu_mem\": {\"mem_size\": 80, \"mem_bw\": 3350}, \"num_npus\": 8, "
                       "\"tp_size\": 8}";
    g_autofree char *cfg = g_strdup_printf(
        "{\"num_nodes\": 2, \"link_bw\": [%s, %s], \"engine\": \"vllm-0.19\", \"nodes\": ["
        "{\"num_instances\": 1, \"instances\": [%s]}, {\"num_instances\": 1, \"instances\": "
        "[%s]}]}",
        up, out_bw, inst, inst);
    g_autofree char *path = write_file("two.json", cfg);
    g_autofree char *qa = dir_of("two-quick"), *ca = dir_of("two-config");
    g_autofree char *out = NULL, *err = NULL;
    const char *q[] = {"--model",
                       "meta-llama/Llama-3.1-8B",
                       "--hardware",
                       "H100",
                       "--tp",
                       "8",
                       "--instances",
                       "2",
                       "--output-dir",
                       qa,
                       GEN,
                       NULL};
    CU_ASSERT_EQUAL_FATAL(run(q, &out, &err), 0);
    const char *c[] = {"--cluster", path, "--output-dir", ca, GEN, NULL};
    CU_ASSERT_EQUAL_FATAL(run(c, &out, &err), 0);
    same_outputs(qa, ca);
    /* Both instances served requests (least_load spreads 24 requests over two). */
    g_autofree char *csv = slurp(qa, "requests.csv");
    CU_ASSERT(strstr(csv, "\n0,0,") != NULL || strstr(csv, "\n0,1,") != NULL);
    int served[2] = {0, 0};
    g_auto(GStrv) lines = g_strsplit(csv, "\n", -1);
    for (int i = 1; lines[i] && *lines[i]; i++) {
        g_auto(GStrv) f = g_strsplit(lines[i], ",", 3);
        int k = atoi(f[1]);
        if (k >= 0 && k < 2)
            served[k]++;
    }
    CU_ASSERT(served[0] > 0 && served[1] > 0);
    SV_ASSERT_EQ_I64(served[0] + served[1], 24);
}

/* Mooncake trace, timestamps 0, 1000, 2500, 4000 ms: --time-scale 0.5 gives 0, 0.5, 1.25, 2 s;
 * --qps 3 (the trace's rate is 3 gaps / 4 s = 0.75 req/s, so scale 0.25) gives 0, 0.25, 0.625,
 * 1 s. */
static const char mooncake[] =
    "{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 5, \"hash_ids\": [1]}\n"
    "{\"timestamp\": 1000, \"input_length\": 110, \"output_length\": 6, \"hash_ids\": [2]}\n"
    "{\"timestamp\": 2500, \"input_length\": 120, \"output_length\": 7, \"hash_ids\": [3]}\n"
    "{\"timestamp\": 4000, \"input_length\": 130, \"output_length\": 8, \"hash_ids\": [4]}\n";

static void arrivals(const char *dir, int64_t *t, int n)
{
    g_autofree char *csv = slurp(dir, "requests.csv");
    CU_ASSERT_FATAL(csv != NULL);
    g_auto(GStrv) lines = g_strsplit(csv, "\n", -1);
    for (int i = 0; i < n; i++) {
        CU_ASSERT_FATAL(lines[i + 1] && *lines[i + 1]);
        g_auto(GStrv) f = g_strsplit(lines[i + 1], ",", 4);
        t[i] = g_ascii_strtoll(f[2], NULL, 10);
    }
}

static void test_trace_scaling(void)
{
    g_autofree char *trace = write_file("m.jsonl", mooncake);
    g_autofree char *a = dir_of("ts"), *b = dir_of("tq"), *c0 = dir_of("t1");
    g_autofree char *out = NULL, *err = NULL;
    const char *plain[] = {"--hardware", "H100",    "--workload",   trace, "--latency",
                           "roofline",   "--quiet", "--output-dir", c0,    NULL};
    CU_ASSERT_EQUAL_FATAL(run(plain, &out, &err), 0);
    const char *ts[] = {"--hardware",
                        "H100",
                        "--workload",
                        trace,
                        "--time-scale",
                        "0.5",
                        "--latency",
                        "roofline",
                        "--quiet",
                        "--output-dir",
                        a,
                        NULL};
    CU_ASSERT_EQUAL_FATAL(run(ts, &out, &err), 0);
    g_clear_pointer(&err, g_free);
    const char *tq[] = {"--hardware", "H100",     "--workload", trace,          "--qps", "3",
                        "--latency",  "roofline", "--quiet",    "--output-dir", b,       NULL};
    CU_ASSERT_EQUAL_FATAL(run(tq, &out, &err), 0);
    CU_ASSERT(strstr(err, "time scale 0.25") != NULL);
    int64_t t[4];
    arrivals(c0, t, 4);
    SV_ASSERT_EQ_I64(t[3], 4000000000);
    arrivals(a, t, 4);
    SV_ASSERT_EQ_I64(t[0], 0);
    SV_ASSERT_EQ_I64(t[1], 500000000);
    SV_ASSERT_EQ_I64(t[2], 1250000000);
    SV_ASSERT_EQ_I64(t[3], 2000000000);
    arrivals(b, t, 4);
    SV_ASSERT_EQ_I64(t[1], 250000000);
    SV_ASSERT_EQ_I64(t[2], 625000000);
    SV_ASSERT_EQ_I64(t[3], 1000000000);
}

/* --progress=0.001 on a pipe: lines "progress: simulated S s, D/T requests (P%), ..." with D
 * nondecreasing, the last one 300/300 (100.0%); the outputs are those of a run without it. */
static void test_progress_lines(void)
{
    g_autofree char *a = dir_of("p1"), *b = dir_of("p0");
    g_autofree char *out = NULL, *err = NULL;
    const char *with[] = {
        "--requests",       "300",          "--qps", "200", "--latency", "roofline",
        "--progress=0.001", "--output-dir", a,       NULL};
    CU_ASSERT_EQUAL_FATAL(run(with, &out, &err), 0);
    int lines = 0;
    uint64_t prev = 0, d = 0, total = 0;
    double pct = -1, sim = -1;
    g_auto(GStrv) ls = g_strsplit(err, "\n", -1);
    for (int i = 0; ls[i]; i++) {
        if (!g_str_has_prefix(ls[i], "progress: "))
            continue;
        int n = sscanf(ls[i],
                       "progress: simulated %lf s, %" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT
                       " requests (%lf%%)",
                       &sim, &d, &total, &pct);
        CU_ASSERT_EQUAL(n, 4);
        CU_ASSERT(d >= prev);
        SV_ASSERT_EQ_I64(total, 300);
        CU_ASSERT_DOUBLE_EQUAL(pct, 100.0 * (double)d / 300.0, 0.051);
        prev = d;
        lines++;
    }
    CU_ASSERT(lines >= 1);
    SV_ASSERT_EQ_I64(d, 300);
    CU_ASSERT_DOUBLE_EQUAL(pct, 100.0, 0);
    CU_ASSERT(strstr(err, "ETA") != NULL || lines == 1);
    g_clear_pointer(&err, g_free);
    const char *without[] = {"--requests", "300",          "--qps", "200", "--latency",
                             "roofline",   "--output-dir", b,       NULL};
    CU_ASSERT_EQUAL_FATAL(run(without, &out, &err), 0);
    CU_ASSERT(strstr(err, "progress:") == NULL);
    same_outputs(a, b);
    g_clear_pointer(&err, g_free);
    /* A trace's total comes from a first pass. */
    g_autofree char *trace = write_file("mp.jsonl", mooncake);
    const char *tr[] = {"--hardware", "H100",       "--workload",   trace, "--latency",
                        "roofline",   "--progress", "--output-dir", a,     NULL};
    CU_ASSERT_EQUAL_FATAL(run(tr, &out, &err), 0);
    CU_ASSERT(strstr(err, "progress: simulated ") && strstr(err, "4/4 requests (100.0%)"));
    g_clear_pointer(&err, g_free);
    const char *bad[] = {"--progress=0", NULL};
    CU_ASSERT_EQUAL(run(bad, &out, &err), 2);
    CU_ASSERT(strstr(err, "--progress: '0' is not a period") != NULL);
}

/* The stall line, with its wall time lowered to 1 us through SERVESIM_PROGRESS_STALL_S: Llama-3.1
 * 70B at TP 8 with every all-reduce message by message runs tens of thousands of events between
 * two progress marks (docs/reliability.md: up to 56,721), so two display ticks 4,096 events apart
 * with no mark between them come whatever the machine's speed, and the line says what instance 0
 * holds. Not with --quiet; a bad value is a usage error. */
static void test_stall_line(void)
{
    g_autofree char *o = dir_of("stall");
    g_autofree char *out = NULL, *err = NULL;
    const char *args[] = {"--model",
                          "meta-llama/Llama-3.1-70B",
                          "--hardware",
                          "H100",
                          "--tp",
                          "8",
                          "--per-layer-dag",
                          "--collectives",
                          "messages",
                          "--requests",
                          "1",
                          "--input-len",
                          "16",
                          "--output-len",
                          "2",
                          "--latency",
                          "roofline",
                          "--output-dir",
                          o,
                          NULL};
    g_setenv("SERVESIM_PROGRESS_STALL_S", "0.000001", TRUE);
    CU_ASSERT_EQUAL(run(args, &out, &err), 0);
    CU_ASSERT(strstr(err, "servesim run: no request has moved for ") != NULL);
    CU_ASSERT(strstr(err, "the run may not be able to progress: instance 0: 1 running, 0 "
                          "waiting, ") != NULL);
    const char *quiet[] = {"--model",
                           "meta-llama/Llama-3.1-70B",
                           "--hardware",
                           "H100",
                           "--tp",
                           "8",
                           "--per-layer-dag",
                           "--collectives",
                           "messages",
                           "--requests",
                           "1",
                           "--input-len",
                           "16",
                           "--output-len",
                           "2",
                           "--latency",
                           "roofline",
                           "--output-dir",
                           o,
                           "--quiet",
                           NULL};
    CU_ASSERT_EQUAL(run(quiet, &out, &err), 0);
    CU_ASSERT(strstr(err, "no request has moved") == NULL);
    g_setenv("SERVESIM_PROGRESS_STALL_S", "abc", TRUE);
    CU_ASSERT_EQUAL(run(args, &out, &err), 2);
    CU_ASSERT(strstr(err, "SERVESIM_PROGRESS_STALL_S: 'abc' is not a period") != NULL);
    g_unsetenv("SERVESIM_PROGRESS_STALL_S");
    /* The default (30 s) says nothing on a run of a fraction of a second. */
    CU_ASSERT_EQUAL(run(args, &out, &err), 0);
    CU_ASSERT(strstr(err, "no request has moved") == NULL);
}

/* Each conflict exits 2 (or 1 for a cluster that cannot be built) and names the flags. */
static void expect_error(const char *const *args, int rc, const char *msg)
{
    g_autofree char *out = NULL, *err = NULL;
    int got = run(args, &out, &err);
    CU_ASSERT_EQUAL(got, rc);
    if (!err || !strstr(err, msg)) {
        fprintf(stderr, "expected '%s' in: %s\n", msg, err ? err : "(null)");
        CU_FAIL("message");
    }
}

static void test_errors(void)
{
    g_autofree char *trace = write_file("me.jsonl", mooncake);
    g_autofree char *cl = sv_test_write_cluster(tmp, "meta-llama/Llama-3.1-8B", "H100", 80);
    g_autofree char *o = dir_of("never");
    const char *a1[] = {"--cluster", cl, "--instances", "2", "--tp", "2", "--requests", "5", NULL};
    expect_error(a1, 2, "--cluster cannot be mixed with --tp and --instances");
    const char *a2[] = {"--cluster", cl, NULL};
    expect_error(a2, 2, "--cluster needs a workload");
    const char *a3[] = {"--workload", trace, NULL};
    expect_error(a3, 2, "--workload needs a cluster");
    const char *a4[] = {"--hardware", "H100", "--workload", trace, "--requests", "4", NULL};
    expect_error(a4, 2, "--workload cannot be mixed with --requests");
    const char *a5[] = {"--requests", "4", "--time-scale", "2", NULL};
    expect_error(a5, 2, "--time-scale needs --workload");
    const char *a6[] = {"--hardware", "H100",  "--workload", trace, "--time-scale",
                        "2",          "--qps", "3",          NULL};
    expect_error(a6, 2, "--time-scale and --qps");
    const char *a7[] = {"--pd", "0:2", "--output-dir", o, NULL};
    expect_error(a7, 1, "--pd 0:2: needs at least one prefill and one decode instance");
    const char *a8[] = {"--pd", "1:1", "--instances", "3", "--output-dir", o, NULL};
    expect_error(a8, 1, "--instances 3 does not match --pd 1:1");
    const char *a9[] = {"--pd", "1:1", "--decode-hardware", "H999", "--output-dir", o, NULL};
    expect_error(a9, 1, "--decode-hardware: unknown hardware \"H999\" (known: A100-80GB");
    const char *a10[] = {"--pd", "x", "--output-dir", o, NULL};
    expect_error(a10, 2, "--pd: 'x' is not P:D");
    /* 0:0 was read as "no --pd" (one combined instance): fuzz_flags, regressions/flags/pd-0-0 */
    const char *a10b[] = {"--pd", "0:0", "--output-dir", o, NULL};
    expect_error(a10b, 2, "--pd: '0:0' is not P:D");
    const char *a11[] = {"--decode-hardware", "A100", "--output-dir", o, NULL};
    expect_error(a11, 1, "--decode-hardware needs --pd P:D");
    const char *a12[] = {"--hardware", "H100", "--workload", trace, "--time-scale", "0", NULL};
    expect_error(a12, 2, "--time-scale");
    g_autofree char *one =
        write_file("one.jsonl", "{\"timestamp\": 7, \"input_length\": 9, \"output_length\": 2, "
                                "\"hash_ids\": [1]}\n");
    const char *a13[] = {"--hardware",   "H100", "--workload", one, "--qps", "2",
                         "--output-dir", o,      NULL};
    expect_error(a13, 1, "at least two arrivals");
    CU_ASSERT_FALSE(g_file_test(o, G_FILE_TEST_EXISTS));
}

int main(void)
{
    tmp = sv_test_tmpdir();
    static const sv_test_case cases[] = {
        {"quick --pd 1:1 = the same cluster by hand", test_pd_equals_config},
        {"quick two nodes = the same cluster by hand", test_two_nodes_equal_config},
        {"trace --time-scale and --qps", test_trace_scaling},
        {"--progress lines", test_progress_lines},
        {"the stall line", test_stall_line},
        {"conflicts and bad shapes", test_errors},
        {NULL, NULL},
    };
    sv_test_add_suite("shape", cases);
    int rc = sv_test_run();
    sv_test_rmtree(tmp);
    g_free(tmp);
    return rc;
}
