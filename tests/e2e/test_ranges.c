/* Issue 13, class 1 and class 7's JSON numbers, as a user meets them: `servesim run` and
 * `servesim replay` given a number outside its documented range (docs/reliability.md "Numeric
 * ranges") or a JSON number RFC 8259 does not have stop with exit status 1 (2 for a command-line
 * flag), one message naming the file and the field, and no outputs; before, each of these aborted
 * (an assertion, a SIGFPE), ran on with the value silently wrapped or dropped, or read 0x10 as 16.
 * Expected messages are the documented ranges, written out.
 *
 * SV_TEST_SERVESIM=/path/to/servesim runs the same cases against another build (the tree before
 * the fix, to see them fail there). */
#include "tests/replay/et_fixtures.h"
#include "tests/test_util.h"

#include <string.h>

static const char *servesim(void)
{
    const char *bin = g_getenv("SV_TEST_SERVESIM");
    return bin && *bin ? bin : SV_SERVESIM_BIN;
}

/* One LLMServingSim cluster: Llama-3.1-8B on one H100 (run with --latency roofline). */
static const char cluster_text[] =
    "{\"num_nodes\": 1, \"link_bw\": 16, \"link_latency\": 20000, \"nodes\": [{\n"
    "  \"num_instances\": 1,\n"
    "  \"cpu_mem\": {\"mem_size\": 512, \"mem_bw\": 256, \"mem_latency\": 0},\n"
    "  \"instances\": [{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100-SXM\",\n"
    "    \"npu_mem\": {\"mem_size\": 80, \"mem_bw\": 3350, \"mem_latency\": 0, \"mem_util\": "
    "0.9},\n"
    "    \"num_npus\": 1, \"tp_size\": 1, \"pd_type\": null}]}]}\n";
static const char workload_text[] =
    "{\"input_toks\": 100, \"output_toks\": 10, \"arrival_time_ns\": 0}\n";

/* `text` with its one occurrence of `from` replaced by `to`, written to <dir>/<name>. */
static char *write_with(const char *dir, const char *name, const char *text, const char *from,
                        const char *to)
{
    char *path = g_build_filename(dir, name, NULL);
    GString *s = g_string_new(text);
    if (from) {
        const char *at = strstr(text, from);
        CU_ASSERT_PTR_NOT_NULL_FATAL(at);
        g_string_erase(s, at - text, (gssize)strlen(from));
        g_string_insert(s, at - text, to);
    }
    CU_ASSERT_FATAL(g_file_set_contents(path, s->str, (gssize)s->len, NULL));
    g_string_free(s, TRUE);
    return path;
}

/* Run servesim `cmd` with `args` (NULL-terminated); expect status `want` and `msg` on stderr. */
static void expect(const char *cmd, const char *const *args, int want, const char *msg)
{
    const char *argv[40];
    int k = 0;
    argv[k++] = servesim();
    argv[k++] = cmd;
    for (; *args && k < 39; args++)
        argv[k++] = *args;
    argv[k] = NULL;
    g_autofree char *out = NULL, *err = NULL;
    int status = -1;
    CU_ASSERT_TRUE_FATAL(sv_test_spawn(argv, &out, &err, &status));
    gboolean ok = status == want && err && strstr(err, msg);
    if (!ok)
        fprintf(stderr, "\n[%s ... %s] status %d (want %d)\nwanted: %s\nstderr:\n%s\n", cmd,
                argv[k - 1], status, want, msg, err ? err : "");
    CU_ASSERT_EQUAL(status, want);
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err, msg));
}

/* Nothing a run writes is in `dir` (a failed run leaves nothing behind as if complete). */
static void expect_no_outputs(const char *dir)
{
    static const char *const names[] = {"requests.csv", "timeseries.csv", "summary.json", NULL};
    for (int i = 0; names[i]; i++) {
        g_autofree char *p = g_build_filename(dir, names[i], NULL);
        CU_ASSERT_FALSE(g_file_test(p, G_FILE_TEST_EXISTS));
    }
}

/* `servesim run` with the cluster config changed at one place; exit 1 with `msg`, no outputs. */
static void run_cluster(const char *from, const char *to, const char *msg)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cluster = write_with(dir, "cluster.json", cluster_text, from, to);
    g_autofree char *wl = write_with(dir, "w.jsonl", workload_text, NULL, NULL);
    g_autofree char *outdir = g_build_filename(dir, "out", NULL);
    expect("run",
           (const char *const[]){"--cluster", cluster, "--workload", wl, "--latency", "roofline",
                                 "--output-dir", outdir, "--quiet", NULL},
           1, msg);
    expect_no_outputs(outdir);
    sv_test_rmtree(dir);
}

/* `servesim run` with a workload file `name` holding `text`. */
static void run_workload(const char *name, const char *text, const char *msg)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cluster = write_with(dir, "cluster.json", cluster_text, NULL, NULL);
    g_autofree char *wl = write_with(dir, name, text, NULL, NULL);
    g_autofree char *outdir = g_build_filename(dir, "out", NULL);
    g_autofree char *want = g_strdup_printf("%s%s", wl, msg);
    expect("run",
           (const char *const[]){"--cluster", cluster, "--workload", wl, "--latency", "roofline",
                                 "--output-dir", outdir, "--quiet", NULL},
           1, want);
    expect_no_outputs(outdir);
    sv_test_rmtree(dir);
}

static void test_control(void)
{
    /* the unchanged inputs run: the failures below are the values' */
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cluster = write_with(dir, "cluster.json", cluster_text, NULL, NULL);
    g_autofree char *wl = write_with(dir, "w.jsonl", workload_text, NULL, NULL);
    g_autofree char *outdir = g_build_filename(dir, "out", NULL);
    expect("run",
           (const char *const[]){"--cluster", cluster, "--workload", wl, "--latency", "roofline",
                                 "--output-dir", outdir, "--quiet", NULL},
           0, "");
    g_autofree char *summary = g_build_filename(outdir, "summary.json", NULL);
    CU_ASSERT_TRUE(g_file_test(summary, G_FILE_TEST_EXISTS));
    sv_test_rmtree(dir);
}

static void test_cluster_ranges(void)
{
    /* the examples: an abort (with TP 2) and a latency silently dropped */
    run_cluster("\"link_bw\": 16", "\"link_bw\": 1e-15",
                "cluster.json.link_bw: 1e-15 is below the minimum 1e-06 (range [1e-06, 1e+09] "
                "GB/s)");
    run_cluster("\"link_latency\": 20000", "\"link_latency\": 1e19",
                "cluster.json.link_latency: 1e+19 is above the maximum 1e+12 (range [0, 1e+12] "
                "ns)");
    run_cluster("\"link_latency\": 20000", "\"link_latency\": [20000, -1]",
                "cluster.json.link_latency[1]: -1 is negative");
    /* GiB to bytes overflowed to 0 */
    run_cluster("\"mem_size\": 80", "\"mem_size\": 1e300",
                "cluster.json: nodes[0].instances[0].npu_mem.mem_size: 1e+300 is above the "
                "maximum 16384 (range (0, 16384] GiB)");
    /* 64-bit counts stored in 32 bits: pp_size 2^32 became 0 and divided (SIGFPE); tp_size
     * 2^32 + 1 ran as TP 1 */
    run_cluster("\"num_npus\": 1, \"tp_size\": 1", "\"tp_size\": 1, \"pp_size\": 4294967296",
                "cluster.json: nodes[0].instances[0].pp_size: 4294967296 is above the maximum "
                "65536 (range [1, 65536])");
    run_cluster("\"num_npus\": 1, \"tp_size\": 1", "\"tp_size\": 4294967297",
                "cluster.json: nodes[0].instances[0].tp_size: 4294967297 is above the maximum "
                "65536");
    run_cluster("\"num_npus\": 1, \"tp_size\": 1", "\"tp_size\": 65536, \"pp_size\": 65536",
                "cluster.json: nodes[0].instances[0].tp_size x pp_size: 4294967296 is above the "
                "maximum 65536");
    run_cluster("\"mem_util\": 0.9", "\"mem_util\": 90",
                "npu_mem.mem_util: 90 is above the "
                "maximum 1 (range (0, 1])");
    run_cluster("\"mem_bw\": 256", "\"mem_bw\": 1e-300",
                "cluster.json: nodes[0].cpu_mem.mem_bw: 1e-300 is below the minimum 1e-06 (range "
                "0 or [1e-06, 1e+09] GB/s)");
}

/* Values in range whose combination passes the horizon: the engine refuses the event and says
 * when. A clock of 10^-300 makes each operator's time clamp past the horizon; the sums of a
 * layer's operators and of the layers wrapped before and the run ended with exit status 0 and
 * made-up times. */
static void test_past_horizon(void)
{
    run_cluster("\"tp_size\": 1, \"pd_type\"", "\"tp_size\": 1, \"gpu_clock\": 1e-300, \"pd_type\"",
                "is past the engine's horizon of 288230376151711744 ns");
}

static void test_cluster_json_numbers(void)
{
    /* json-glib alone read these as 16 (and ran) */
    run_cluster("\"link_bw\": 16", "\"link_bw\": 0x10",
                "cluster.json:1:29: not JSON (RFC 8259): '0x10' is not a number");
    run_cluster("\"link_bw\": 16", "\"link_bw\": $10",
                "cluster.json:1:29: not JSON (RFC 8259): '$10' is not a value");
    run_cluster("\"mem_bw\": 3350", "\"mem_bw\": 03350",
                "cluster.json:5:43: not JSON (RFC 8259): '03350' is not a number");
    run_cluster("\"link_bw\": 16", "\"link_bw\": 99999999999999999999",
                "integer 99999999999999999999 is outside the 64-bit range");
}

static void test_workload_ranges(void)
{
    run_workload("w.jsonl",
                 "{\"input_toks\": 100, \"output_toks\": 10, \"arrival_time_ns\": "
                 "9223372036854775807}\n",
                 ":1: field 'arrival_time_ns': 9223372036854775807 is above the maximum "
                 "288230376151711744 (range [0, 288230376151711744] ns)");
    /* a session's tool call past the horizon aborted the run (at >= now) */
    run_workload("s.jsonl",
                 "{\"arrival_time_ns\": 0, \"sub_requests\": [{\"input_toks\": 100, "
                 "\"output_toks\": 10, \"tool_duration_ns\": 9223372036854775807}, "
                 "{\"input_toks\": 100, \"output_toks\": 10}]}\n",
                 ":1: field 'sub_requests[0].tool_duration_ns': 9223372036854775807 is above the "
                 "maximum 288230376151711744");
    run_workload("w.jsonl",
                 "{\"input_toks\": 4611686018427387904, \"output_toks\": 10, "
                 "\"arrival_time_ns\": 0}\n",
                 ":1: field 'input_toks': 4611686018427387904 is above the maximum 16777216 "
                 "(range [1, 16777216] tokens)");
    run_workload("m.jsonl",
                 "{\"timestamp\": 1e300, \"input_length\": 100, \"output_length\": 10}\n",
                 ":1: field 'timestamp': 1e+300 is above the maximum 288230376151 (range [0, "
                 "288230376151] ms)");
    /* an Azure timestamp after 2262: ns since 1970 overflowed int64 */
    run_workload("a.csv",
                 "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                 "2023-11-16 18:15:46.6805900,100,10\n"
                 "2263-11-16 18:15:46.6805900,100,10\n",
                 ":3: column 'TIMESTAMP' '2263-11-16 18:15:46.6805900' is 7573651200 s from the "
                 "first row's");
}

static void test_run_flags(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *outdir = g_build_filename(dir, "out", NULL);
    /* ran as TP 1 */
    expect("run",
           (const char *const[]){"--tp", "4294967297", "--requests", "2", "--output-dir", outdir,
                                 NULL},
           2, "--tp: 4294967297 is above the maximum 65536 (range [1, 65536])");
    expect("run",
           (const char *const[]){"--qps", "1e-12", "--requests", "2", "--output-dir", outdir, NULL},
           2, "--qps: 1e-12 is below the minimum 1e-06 (range [1e-06, 1e+09] req/s)");
    expect("run", (const char *const[]){"--qps", "0x10", "--output-dir", outdir, NULL}, 2,
           "--qps: '0x10' is not a number");
    expect("run", (const char *const[]){"--qps", "inf", "--output-dir", outdir, NULL}, 2,
           "--qps: 'inf' is not a number");
    expect(
        "run",
        (const char *const[]){"--input-len", "uniform:1:99999999999", "--output-dir", outdir, NULL},
        2, "99999999999 is above the maximum 16777216");
    expect_no_outputs(outdir);
    sv_test_rmtree(dir);
}

/* ---- replay --------------------------------------------------------------------------------- */

/* Two NPUs: NPU 0 sends `bytes` to NPU 1. */
static char *write_send(const char *dir, int64_t bytes)
{
    ChakraProtoMsg__Node *n0[] = {et_p2p(0, TRUE, 0, 1, 7, bytes)};
    et_write(dir, "p", 0, n0, 1);
    ChakraProtoMsg__Node *n1[] = {et_p2p(0, FALSE, 0, 1, 7, bytes)};
    et_write(dir, "p", 1, n1, 1);
    return g_strdup_printf("%s/p", dir);
}

static void replay_case(const char *sys_from, const char *sys_to, const char *net_from,
                        const char *net_to, int64_t bytes, const char *model, const char *msg)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *sys0 = NULL, *net0 = NULL;
    et_own_configs(dir, &sys0, &net0);
    g_autofree char *sys_text = NULL, *net_text = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(sys0, &sys_text, NULL, NULL));
    CU_ASSERT_FATAL(g_file_get_contents(net0, &net_text, NULL, NULL));
    g_autofree char *sys = write_with(dir, "sys.json", sys_text, sys_from, sys_to);
    g_autofree char *net = write_with(dir, "net.yml", net_text, net_from, net_to);
    g_autofree char *prefix = write_send(dir, bytes);
    expect("replay",
           (const char *const[]){"--workload", prefix, "--system", sys, "--network", net,
                                 "--network-model", model, NULL},
           1, msg);
    sv_test_rmtree(dir);
}

static void test_replay_ranges(void)
{
    /* a bandwidth of 1e-15 aborted fifo and flow (at >= now) and ran analytical with the
     * transfer time wrapped */
    static const char *const models[] = {"analytical", "fifo", "flow"};
    for (int m = 0; m < 3; m++) {
        replay_case(NULL, NULL, "bandwidth: [ 50.0 ]", "bandwidth: [ 1e-15 ]", 1 << 20, models[m],
                    "net.yml:3: bandwidth[0]: 1e-15 is below the minimum 1e-06 (range [1e-06, "
                    "1e+09] GB/s)");
        /* 9e18 ns aborted every model; 1e19 was silently dropped by analytical */
        replay_case(NULL, NULL, "latency: [ 500.0 ]", "latency: [ 9e18 ]", 1 << 20, models[m],
                    "net.yml:4: latency[0]: 9e+18 is above the maximum 1e+12 (range [0, 1e+12] "
                    "ns)");
    }
    replay_case(NULL, NULL, "bandwidth: [ 50.0 ]", "bandwidth: [ 0x32 ]", 1 << 20, "analytical",
                "net.yml:3: bandwidth[0]: \"0x32\" is not a finite number");
    replay_case("\"endpoint-delay\": 10", "\"endpoint-delay\": 1e15", NULL, NULL, 1 << 20,
                "analytical",
                "sys.json.endpoint-delay: 1000000000000000 is above the maximum 1000000000000");
    replay_case("\"endpoint-delay\": 10", "\"endpoint-delay\": 0x10", NULL, NULL, 1 << 20,
                "analytical", "sys.json:1:49: not JSON (RFC 8259): '0x10' is not a number");
    /* Each value in range, the combination past the horizon: 2^50 bytes over 10^-6 GB/s take
     * 1.05e21 ns. The engine refuses the event and says when; before, the clamped duration
     * (INT64_MAX) wrapped when added to the time (an assertion in fifo and flow). */
    for (int m = 0; m < 3; m++)
        replay_case(NULL, NULL, "bandwidth: [ 50.0 ]", "bandwidth: [ 1e-6 ]", INT64_C(1) << 50,
                    models[m], "past the engine's horizon of 288230376151711744 ns");
    /* 2^60 bytes: past SV_RANGE_BYTES_MAX = 2^50 */
    replay_case(NULL, NULL, NULL, NULL, INT64_C(1) << 60, "flow",
                "comm_size: 1152921504606846976 is above the maximum 1125899906842624 (range [0, "
                "1125899906842624] bytes)");
}

int main(void)
{
    static const sv_test_case run[] = {
        {"control: the unchanged inputs run", test_control},
        {"cluster config values out of range", test_cluster_ranges},
        {"cluster config numbers that are not JSON", test_cluster_json_numbers},
        {"in range, past the horizon together", test_past_horizon},
        {"workload fields out of range", test_workload_ranges},
        {"run flags out of range or not decimal", test_run_flags},
        {NULL, NULL}};
    static const sv_test_case replay[] = {{"replay inputs out of range", test_replay_ranges},
                                          {NULL, NULL}};
    sv_test_add_suite("run", run);
    sv_test_add_suite("replay", replay);
    return sv_test_run();
}
