/* What `servesim run` and `servesim replay` say when an input is wrong (issue 13, class 7): one
 * message naming the file, the reason a request can never run on a disaggregated cluster, the
 * arrived count after such a failure, a folder given for a file, an empty workload, and option
 * values checked whatever the cluster. Everything runs on configs written here, with the
 * analytic latency model (no ../shared). */
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <glib/gstdio.h>
#include <string.h>

/* servesim CMD ARGS... with the repository root as cwd; returns the exit status. */
static int servesim(const char *cmd, const char *const *args, char **out, char **err)
{
    int status = -1;
    CU_ASSERT_FATAL(sv_test_servesim(SV_SERVESIM_BIN, cmd, args, out, err, &status));
    return status;
}

static char *write_file(const char *dir, const char *name, const char *text)
{
    char *path = g_build_filename(dir, name, NULL);
    CU_ASSERT_FATAL(g_file_set_contents(path, text, -1, NULL));
    return path;
}

/* One node of H100s serving Llama-3.1-8B: a prefill instance with 80 GiB and, when decode_gib
 * is not NULL, a decode instance with that much memory. */
#define PD_INSTANCE(mem, role)                                                                     \
    "  {\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100\",\n"                    \
    "   \"npu_mem\": {\"mem_size\": " mem ", \"mem_bw\": 3352, \"mem_latency\": 0},\n"             \
    "   \"num_npus\": 1, \"tp_size\": 1, \"pd_type\": \"" role "\"}"
static char *write_pd_cluster(const char *dir, gboolean with_decode)
{
    g_autofree char *text = g_strconcat(
        "{\"num_nodes\": 1, \"link_bw\": 112, \"link_latency\": 0,\n \"nodes\": [{",
        with_decode ? "\"num_instances\": 2, \"instances\": [\n" PD_INSTANCE(
                          "80", "prefill") ",\n" PD_INSTANCE("18", "decode")
                    : "\"num_instances\": 1, \"instances\": [\n" PD_INSTANCE("80", "prefill"),
        "]}]}\n", NULL);
    return write_file(dir, "pd.json", text);
}

/* A configuration error found only when the cluster is built (after the file parsed) is one
 * line naming the config file; no "the run cannot finish: 0 of 0 arrived requests" after it. */
static void test_config_error_after_loading(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *wl = write_file(
        tmp, "w.jsonl", "{\"input_toks\": 10, \"output_toks\": 5, \"arrival_time_ns\": 0}\n");
    g_autofree char *out_dir = g_build_filename(tmp, "out", NULL);
    g_autofree char *pd = write_pd_cluster(tmp, FALSE);
    char *out = NULL, *err = NULL;
    /* An earlier run's outputs in the folder stay, as after any config error. */
    CU_ASSERT_FATAL(g_mkdir(out_dir, 0755) == 0);
    g_autofree char *old_summary = write_file(out_dir, "summary.json", "{}\n");
    const char *a1[] = {"--cluster", pd,        "--workload",   wl,      "--latency",
                        "roofline",  "--quiet", "--output-dir", out_dir, NULL};
    CU_ASSERT_EQUAL(servesim("run", a1, &out, &err), 1);
    g_autofree char *want = g_strdup_printf(
        "servesim run: %s: pd_type: 1 prefill instance(s) but no decode instance\n", pd);
    if (!strstr(err, want))
        fprintf(stderr, "\nstderr:\n%s(wanted %s)", err, want);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
    CU_ASSERT_PTR_NULL(strstr(err, "cannot finish"));
    CU_ASSERT_PTR_NULL(strstr(err, "arrived"));
    CU_ASSERT_PTR_NULL(strstr(err, "removed"));
    CU_ASSERT_TRUE(g_file_test(old_summary, G_FILE_TEST_IS_REGULAR));
    g_free(out);
    g_free(err);

    /* A model no catalog has: the instance and the file. */
    g_autofree char *cl = sv_test_write_cluster(tmp, "nobody/No-Such-Model", "H100", 80);
    const char *a2[] = {"--cluster", cl,        "--workload",   wl,      "--latency",
                        "roofline",  "--quiet", "--output-dir", out_dir, NULL};
    CU_ASSERT_EQUAL(servesim("run", a2, &out, &err), 1);
    g_autofree char *want2 =
        g_strdup_printf("servesim run: %s: instance 0: unknown model \"nobody/No-Such-Model\"", cl);
    if (!strstr(err, want2))
        fprintf(stderr, "\nstderr:\n%s(wanted %s)", err, want2);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want2));
    CU_ASSERT_PTR_NULL(strstr(err, "cannot finish"));
    g_free(out);
    g_free(err);
    sv_test_rmtree(tmp);
}

/* The decode instance has 18 GiB: trunc(18 GiB x 0.9) = 17,394,617,548 bytes minus
 * Llama-3.1-8B's 16,060,522,496 bytes of bf16 weights leaves 1,334,095,052 bytes, 636 blocks of
 * 16 tokens x 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 2 MiB. A request of 30,005
 * tokens can never be held there (it needs 1,876 blocks): the run stops with that reason, as a
 * combined instance's does, rather than waiting for decode memory until it "stalled". */
static void test_pd_decode_too_small(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *pd = write_pd_cluster(tmp, TRUE);
    g_autofree char *wl = write_file(
        tmp, "w.jsonl",
        "{\"input_toks\": 10, \"output_toks\": 5, \"arrival_time_ns\": 0}\n"
        "{\"input_toks\": 30000, \"output_toks\": 5, \"arrival_time_ns\": 1000000000}\n");
    g_autofree char *out_dir = g_build_filename(tmp, "out", NULL);
    char *out = NULL, *err = NULL;
    /* --strict: without it the request is rejected at its arrival and the run goes on
     * (docs/serving.md "Rejected requests"); with it, the run stops with the reason */
    const char *args[] = {"--cluster", pd,         "--workload",   wl,      "--latency", "roofline",
                          "--quiet",   "--strict", "--output-dir", out_dir, NULL};
    CU_ASSERT_EQUAL(servesim("run", args, &out, &err), 1);
    /* the reason (the admission check of docs/serving.md "Rejected requests" finds it at the
     * arrival; the PD hand-off gives the same reason if it ever meets such a request) */
    const char *want = "request 1 rejected (kv_capacity): its 30005 tokens (30000 input + 5 "
                       "output) can never fit in the KV cache of a prefill instance and a decode "
                       "instance";
    if (!strstr(err, want))
        fprintf(stderr, "\nstderr:\n%s(wanted %s)", err, want);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
    CU_ASSERT_PTR_NULL(strstr(err, "stalled"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "1 of 2 arrived requests finished, 1 unfinished"));
    g_free(out);
    g_free(err);
    sv_test_rmtree(tmp);
}

/* The arrived count after a request is refused for want of KV room where it had already been
 * handed to an instance: request 1 (9,000 + 2,000 tokens, 688 blocks of 16) has room for its
 * prompt on the 636-block decode instance but can never complete there. Two requests arrived,
 * one finished (the count used to add the refused request a second time: "1 of 3"). */
static void test_nofit_count(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *pd = write_pd_cluster(tmp, TRUE);
    g_autofree char *wl = write_file(
        tmp, "w.jsonl",
        "{\"input_toks\": 10, \"output_toks\": 5, \"arrival_time_ns\": 0}\n"
        "{\"input_toks\": 9000, \"output_toks\": 2000, \"arrival_time_ns\": 1000000000}\n");
    g_autofree char *out_dir = g_build_filename(tmp, "out", NULL);
    char *out = NULL, *err = NULL;
    /* --strict: without it the request is rejected at its arrival and the run goes on
     * (docs/serving.md "Rejected requests"); with it, the run stops with the reason */
    const char *args[] = {"--cluster", pd,         "--workload",   wl,      "--latency", "roofline",
                          "--quiet",   "--strict", "--output-dir", out_dir, NULL};
    CU_ASSERT_EQUAL(servesim("run", args, &out, &err), 1);
    if (!strstr(err, "1 of 2 arrived requests finished, 1 unfinished"))
        fprintf(stderr, "\nstderr:\n%s", err);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(err, "its 11000 tokens (9000 input + 2000 output) can never fit"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "1 of 2 arrived requests finished, 1 unfinished"));
    g_free(out);
    g_free(err);
    sv_test_rmtree(tmp);
}

/* A folder where a file is read: "<path>: is a directory", not a parser's error or a read error
 * at line 1 (workload, length file, network YAML). */
static void test_directory_as_file(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *dir = g_build_filename(tmp, "adir", NULL);
    CU_ASSERT_FATAL(g_mkdir(dir, 0755) == 0);
    g_autofree char *cl = sv_test_write_cluster(tmp, "meta-llama/Llama-3.1-8B", "H100", 80);
    g_autofree char *out_dir = g_build_filename(tmp, "out", NULL);
    g_autofree char *want = g_strdup_printf("%s: is a directory", dir);
    char *out = NULL, *err = NULL;

    const char *a1[] = {"--cluster", cl,        "--workload",   dir,     "--latency",
                        "roofline",  "--quiet", "--output-dir", out_dir, NULL};
    CU_ASSERT_EQUAL(servesim("run", a1, &out, &err), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
    CU_ASSERT_PTR_NULL(strstr(err, "read error"));
    CU_ASSERT_PTR_NULL(strstr(err, "cannot finish"));
    g_free(out);
    g_free(err);

    g_autofree char *len = g_strconcat("empirical:", dir, NULL);
    const char *a2[] = {"--model",      "Llama-2-7B", "--hardware",   "A100-80GB",
                        "--requests",   "2",          "--input-len",  len,
                        "--output-len", "8",          "--output-dir", out_dir,
                        "--quiet",      NULL};
    CU_ASSERT_NOT_EQUAL(servesim("run", a2, &out, &err), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
    CU_ASSERT_PTR_NULL(strstr(err, ":1:"));
    g_free(out);
    g_free(err);

    g_autofree char *sys = write_file(tmp, "system.json",
                                      "{\"preferred-dataset-splits\": 1, "
                                      "\"all-reduce-implementation\": [\"ring\"]}\n");
    const char *a3[] = {"--workload", dir, "--system", sys, "--network", dir, NULL};
    CU_ASSERT_NOT_EQUAL(servesim("replay", a3, &out, &err), 0);
    if (!strstr(err, want))
        fprintf(stderr, "\nstderr:\n%s(wanted %s)", err, want);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
    g_free(out);
    g_free(err);
    sv_test_rmtree(tmp);
}

/* A workload with no request (an empty file) is a valid run of nothing, with a warning. */
static void test_empty_workload_warns(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *cl = sv_test_write_cluster(tmp, "meta-llama/Llama-3.1-8B", "H100", 80);
    g_autofree char *wl = write_file(tmp, "empty.jsonl", "");
    g_autofree char *out_dir = g_build_filename(tmp, "out", NULL);
    char *out = NULL, *err = NULL;
    const char *args[] = {"--cluster", cl,        "--workload",   wl,      "--latency",
                          "roofline",  "--quiet", "--output-dir", out_dir, NULL};
    CU_ASSERT_EQUAL(servesim("run", args, &out, &err), 0);
    g_autofree char *want =
        g_strdup_printf("servesim run: warning: workload %s has no requests", wl);
    if (!strstr(err, want))
        fprintf(stderr, "\nstderr:\n%s(wanted %s)", err, want);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
    g_free(out);
    g_free(err);
    sv_test_rmtree(tmp);
}

/* --kv-transfer and --expert-routing are checked whatever the cluster: a cluster without
 * prefill/decode instances (or without MoE) used to run with a misspelt value unseen. */
static void test_option_values_checked(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *cl = sv_test_write_cluster(tmp, "meta-llama/Llama-3.1-8B", "H100", 80);
    g_autofree char *wl = write_file(
        tmp, "w.jsonl", "{\"input_toks\": 10, \"output_toks\": 5, \"arrival_time_ns\": 0}\n");
    g_autofree char *out_dir = g_build_filename(tmp, "out", NULL);
    char *out = NULL, *err = NULL;
    const char *a1[] = {"--cluster", cl,        "--workload",    wl,     "--latency",
                        "roofline",  "--quiet", "--kv-transfer", "nope", "--output-dir",
                        out_dir,     NULL};
    CU_ASSERT_EQUAL(servesim("run", a1, &out, &err), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "--kv-transfer: 'nope' is not whole or per_layer"));
    CU_ASSERT_FALSE(g_file_test(out_dir, G_FILE_TEST_EXISTS)); /* refused before any output */
    g_free(out);
    g_free(err);
    const char *a2[] = {"--cluster", cl,        "--workload",       wl,     "--latency",
                        "roofline",  "--quiet", "--expert-routing", "nope", "--output-dir",
                        out_dir,     NULL};
    CU_ASSERT_EQUAL(servesim("run", a2, &out, &err), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "--expert-routing: unknown expert_routing 'nope'"));
    CU_ASSERT_PTR_NULL(strstr(err, "cannot finish"));
    g_free(out);
    g_free(err);
    sv_test_rmtree(tmp);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"config_error_after_loading", test_config_error_after_loading},
        {"pd_decode_too_small", test_pd_decode_too_small},
        {"nofit_count", test_nofit_count},
        {"directory_as_file", test_directory_as_file},
        {"empty_workload_warns", test_empty_workload_warns},
        {"option_values_checked", test_option_values_checked},
        {NULL, NULL},
    };
    sv_test_add_suite("messages_cli", cases);
    return sv_test_run();
}
