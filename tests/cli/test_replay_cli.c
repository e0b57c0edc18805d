/* What the `servesim replay` command itself does around the replay library (the vectors and
 * their numbers are tested through the library in tests/replay/test_replay.c): ASTRA-sim's
 * `sys[i] finished, T cycles, exposed communication E cycles.` lines in finish-time order, the
 * summary line, ASTRA-sim's `--workload-configuration=` option names, --help, and the exit status:
 * 0 for a finished run, 1 for a run that fails (after printing the NPUs that finished), 2 for a
 * usage error, never a signal. */
#include "tests/replay/et_fixtures.h"
#include "tests/test_util.h"

#include <stdio.h>
#include <string.h>

#define ASTRA SV_SHARED "/interop/astra-sim"
#define CHAKRA SV_SHARED "/interop/chakra"

struct run {
    int status;
    char *out;
    char *err;
};

static void run_free(struct run *r)
{
    g_free(r->out);
    g_free(r->err);
    g_free(r);
}

/* Spawn servesim replay with the given arguments (NULL-terminated). */
static struct run *replay_v(const char *const *args)
{
    const char *argv[32];
    int k = 0;
    argv[k++] = SV_SERVESIM_BIN;
    argv[k++] = "replay";
    for (; *args != NULL && k < 31; args++)
        argv[k++] = *args;
    argv[k] = NULL;
    struct run *r = g_new0(struct run, 1);
    CU_ASSERT_TRUE_FATAL(sv_test_spawn(argv, &r->out, &r->err, &r->status));
    return r;
}

#define REPLAY(...) replay_v((const char *const[]){__VA_ARGS__, NULL})

static void show(const struct run *r, const char *what)
{
    fprintf(stderr, "\n[%s] status %d\nstdout:\n%s\nstderr:\n%s\n", what, r->status, r->out,
            r->err);
}

static gboolean has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Two NPUs that only compute: NPU 0 for 3 us, NPU 1 for 1 us, in <dir>/two.<npu>.et. */
static char *write_two_computes(const char *dir)
{
    ChakraProtoMsg__Node *n0[] = {et_comp(0, "long", 3)};
    et_write(dir, "two", 0, n0, 1);
    ChakraProtoMsg__Node *n1[] = {et_comp(0, "short", 1)};
    et_write(dir, "two", 1, n1, 1);
    return g_strdup_printf("%s/two", dir);
}

/* NPU 1 finishes first (1000 ns), so it is printed first (ASTRA-sim prints each NPU when its
 * workload ends); no communication, so E = 0; makespan = NPU 0's 3000 ns. The chosen network
 * model is named in the summary. */
#define TWO_LINES                                                                                  \
    "sys[1] finished, 1000 cycles, exposed communication 0 cycles.\n"                              \
    "sys[0] finished, 3000 cycles, exposed communication 0 cycles.\n"

static void test_report_lines(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *prefix = write_two_computes(dir);
    g_autofree char *sys = NULL, *net = NULL;
    et_own_configs(dir, &sys, &net);
    struct run *r = REPLAY("--workload", prefix, "--system", sys, "--network", net);
    if (r->status != 0 || !has_prefix(r->out, TWO_LINES))
        show(r, "report lines");
    CU_ASSERT_EQUAL(r->status, 0);
    CU_ASSERT_TRUE(has_prefix(r->out, TWO_LINES));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(r->out, "\nreplay summary: 2 NPUs, network model analytical, makespan 3000 ns, "));
    CU_ASSERT_STRING_EQUAL(r->err, "");
    run_free(r);
    r = REPLAY("--workload", prefix, "--system", sys, "--network", net, "--network-model", "fifo");
    CU_ASSERT_EQUAL(r->status, 0);
    CU_ASSERT_TRUE(has_prefix(r->out, TWO_LINES));
    CU_ASSERT_PTR_NOT_NULL(strstr(r->out, "network model fifo, makespan 3000 ns"));
    run_free(r);
    sv_test_rmtree(dir);
}

/* --precise-durations: a 1 us COMP node whose sv_duration_ns says 1500 ns on each of 2 NPUs
 * runs 1000 ns by default (duration_micros, as ASTRA-sim reads it) and 1500 ns with the option. */
static void test_precise_durations(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    for (int npu = 0; npu < 2; npu++) {
        ChakraProtoMsg__Node *c = et_comp(0, "compute", 1);
        sv_proto_node_add_attr(c, sv_proto_attr_new_int64("sv_duration_ns", 1500));
        et_write(dir, "dur", npu, &c, 1);
    }
    g_autofree char *prefix = g_strdup_printf("%s/dur", dir);
    g_autofree char *sys = NULL, *net = NULL;
    et_own_configs(dir, &sys, &net);
    struct run *r = REPLAY("--workload", prefix, "--system", sys, "--network", net);
    const char *want = "sys[0] finished, 1000 cycles, exposed communication 0 cycles.\n"
                       "sys[1] finished, 1000 cycles, exposed communication 0 cycles.\n";
    if (r->status != 0 || !has_prefix(r->out, want))
        show(r, "durations as ASTRA-sim reads them");
    CU_ASSERT_EQUAL(r->status, 0);
    CU_ASSERT_TRUE(has_prefix(r->out, want));
    run_free(r);
    r = REPLAY("--workload", prefix, "--system", sys, "--network", net, "--precise-durations");
    want = "sys[0] finished, 1500 cycles, exposed communication 0 cycles.\n"
           "sys[1] finished, 1500 cycles, exposed communication 0 cycles.\n";
    if (r->status != 0 || !has_prefix(r->out, want))
        show(r, "precise durations");
    CU_ASSERT_EQUAL(r->status, 0);
    CU_ASSERT_TRUE(has_prefix(r->out, want));
    run_free(r);
    sv_test_rmtree(dir);
}

/* ASTRA-sim's own option names, `--name=value` as its command lines write them. */
static void test_astra_option_names(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *prefix = write_two_computes(dir);
    g_autofree char *sys = NULL, *net = NULL;
    et_own_configs(dir, &sys, &net);
    g_autofree char *w = g_strdup_printf("--workload-configuration=%s", prefix);
    g_autofree char *s = g_strdup_printf("--system-configuration=%s", sys);
    g_autofree char *n = g_strdup_printf("--network-configuration=%s", net);
    struct run *r = REPLAY(w, s, n);
    if (r->status != 0 || !has_prefix(r->out, TWO_LINES))
        show(r, "astra option names");
    CU_ASSERT_EQUAL(r->status, 0);
    CU_ASSERT_TRUE(has_prefix(r->out, TWO_LINES));
    run_free(r);
    sv_test_rmtree(dir);
}

/* ASTRA-sim's regression test command line (its refs/stdout.txt: 117780 on all 8 NPUs), and
 * --comm-group-configuration= taking effect (without it the comm_groups vector names an
 * undefined group 1). */
static void test_astra_command_lines(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim", "ASTRA-sim's rt_template and configs");
    struct run *r =
        REPLAY("--workload-configuration=" ASTRA "/rt_template/inputs/workload/chakra_trace",
               "--system-configuration=" ASTRA "/rt_template/inputs/system_cfg.json",
               "--network-configuration=" ASTRA "/rt_template/inputs/network_cfg.yml",
               "--remote-memory-configuration=" ASTRA "/rt_template/inputs/remote_memory_cfg.json");
    GString *want = g_string_new(NULL);
    for (int i = 0; i < 8; i++)
        g_string_append_printf(want,
                               "sys[%d] finished, 117780 cycles, exposed communication "
                               "117780 cycles.\n",
                               i);
    if (r->status != 0 || !has_prefix(r->out, want->str))
        show(r, "rt_template");
    CU_ASSERT_EQUAL(r->status, 0);
    CU_ASSERT_TRUE(has_prefix(r->out, want->str));
    g_string_free(want, TRUE);
    run_free(r);

    const char *common[] = {"--workload-configuration=" CHAKRA "/vectors/comm_groups/comm_groups",
                            "--system-configuration=" ASTRA "/configs/Ring_4chunks.json",
                            "--network-configuration=" ASTRA "/configs/Ring_4npus.yml"};
    r = REPLAY(common[0], common[1], common[2],
               "--comm-group-configuration=" CHAKRA "/vectors/comm_groups/comm_group.json");
    CU_ASSERT_EQUAL(r->status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r->out, "sys[3] finished"));
    run_free(r);
    r = REPLAY(common[0], common[1], common[2]);
    CU_ASSERT_EQUAL(r->status, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r->err, "communicator group 1"));
    run_free(r);
}

static void test_help(void)
{
    struct run *r = REPLAY("--help");
    CU_ASSERT_EQUAL(r->status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r->out, "--workload"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r->out, "--network-model"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r->out, "--ignore-ctrl-deps"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r->out, "--precise-durations"));
    /* ASTRA-sim's names are accepted but not listed twice. */
    CU_ASSERT_PTR_NULL(strstr(r->out, "--workload-configuration"));
    run_free(r);
}

/* Usage errors: exit status 2 with the offending word named, and nothing run. */
static void test_usage_errors(void)
{
    struct run *r =
        REPLAY("--workload", "w", "--system", "s.json", "--network", "n.yml", "--frobnicate");
    if (r->status != 2)
        show(r, "unknown option");
    CU_ASSERT_EQUAL(r->status, 2);
    CU_ASSERT_TRUE(has_prefix(r->err, "servesim replay: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(r->err, "--frobnicate"));
    CU_ASSERT_PTR_NULL(strstr(r->out, "sys["));
    run_free(r);

    r = REPLAY("--system", "s.json", "--network", "n.yml");
    CU_ASSERT_EQUAL(r->status, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(r->err, "servesim replay: missing option --workload"));
    run_free(r);
    r = REPLAY("--workload", "w", "--system", "s.json");
    CU_ASSERT_EQUAL(r->status, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(r->err, "servesim replay: missing option --network"));
    run_free(r);
    r = REPLAY("--workload", "w", "--system", "s.json", "--network", "n.yml", "stray");
    CU_ASSERT_EQUAL(r->status, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(r->err, "unexpected argument 'stray'"));
    run_free(r);

    /* A model name that does not exist is named; the command fails without a signal. */
    r = REPLAY("--workload", "w", "--system", "s.json", "--network", "n.yml", "--network-model",
               "telepathy");
    CU_ASSERT_NOT_EQUAL(r->status, 0);
    CU_ASSERT_TRUE(r->status > 0 && r->status < 128);
    CU_ASSERT_PTR_NOT_NULL(strstr(r->err, "telepathy"));
    run_free(r);
}

/* A run that cannot finish: exit status 1, the NPU that finished is still printed before the
 * diagnosis (NPU 0: 1 us compute + a 4096-byte send arriving after floor(500 + 4096 /
 * 53.6870912) = 576 ns), no summary. A run whose node fails mid-run (a recv from NPU 5 of 2):
 * exit status 1 with the error. */
static void test_run_failures(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *sys = NULL, *net = NULL;
    et_own_configs(dir, &sys, &net);
    ChakraProtoMsg__Node *n0[] = {et_comp(0, "produce", 1), et_p2p(1, TRUE, 0, 1, 8, 4096)};
    sv_proto_node_add_data_dep(n0[1], 0);
    et_write(dir, "stuck", 0, n0, 2);
    ChakraProtoMsg__Node *n1[] = {et_p2p(0, FALSE, 0, 1, 7, 4096)};
    et_write(dir, "stuck", 1, n1, 1);
    g_autofree char *stuck = g_strdup_printf("%s/stuck", dir);
    struct run *r = REPLAY("--workload", stuck, "--system", sys, "--network", net);
    if (r->status != 1)
        show(r, "cannot finish");
    CU_ASSERT_EQUAL(r->status, 1);
    CU_ASSERT_STRING_EQUAL(r->out, "sys[0] finished, 1576 cycles, exposed communication 576 "
                                   "cycles.\n");
    CU_ASSERT_TRUE(has_prefix(r->err, "servesim replay: simulation cannot finish"));
    run_free(r);

    ChakraProtoMsg__Node *m0[] = {et_comp(0, "a", 1)};
    et_write(dir, "badsrc", 0, m0, 1);
    ChakraProtoMsg__Node *m1[] = {et_comp(0, "before", 2), et_p2p(1, FALSE, 5, 1, 3, 4096)};
    sv_proto_node_add_data_dep(m1[1], 0);
    et_write(dir, "badsrc", 1, m1, 2);
    g_autofree char *badsrc = g_strdup_printf("%s/badsrc", dir);
    r = REPLAY("--workload", badsrc, "--system", sys, "--network", net);
    CU_ASSERT_EQUAL(r->status, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r->err, "servesim replay: comm_src 5 is not an NPU"));
    CU_ASSERT_PTR_NULL(strstr(r->out, "replay summary"));
    run_free(r);

    /* Input that cannot be read: status 1, the missing file named. */
    g_autofree char *none = g_strdup_printf("%s/none", dir);
    r = REPLAY("--workload", none, "--system", sys, "--network", net);
    CU_ASSERT_EQUAL(r->status, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r->err, "none.0.et"));
    run_free(r);
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"report_lines", test_report_lines},
        {"precise_durations", test_precise_durations},
        {"astra_option_names", test_astra_option_names},
        {"astra_command_lines", test_astra_command_lines},
        {"help", test_help},
        {"usage_errors", test_usage_errors},
        {"run_failures", test_run_failures},
        {NULL, NULL},
    };
    sv_test_add_suite("replay_cli", cases);
    return sv_test_run();
}
