/* `servesim sweep` end to end (docs/sweep.md), through the built program on tiny points (20
 * requests, roofline latency, nothing from ../shared):
 *   - --jobs 1 and --jobs 3 give byte-identical sweep.csv and point folders; the cost columns are
 *     the metrics divided by the GPUs of the point (tp);
 *   - --shard I/3 three times, then --merge, gives the local sweep.csv; a missing shard is named;
 *   - a point that fails is a row with status failed and the run's first stderr line;
 *   - a path axis writes the patched cluster into the point's folder and counts its GPUs;
 *   - --goal prunes: a configuration that misses at its lowest load runs no higher load (no
 *     folder), and the winner is the fewest-GPU configuration that passes at the target load.
 * MPI and Slurm have their own programs (test_sweep_mpi, test_sweep_slurm). */
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cli/sweep_test_util.h"

static char *tmp;

static const char small_run[] = "run:\n"
                                "  model: Llama-2-7B\n"
                                "  hardware: A100-80GB\n"
                                "  latency: roofline\n"
                                "  requests: 20\n"
                                "  input-len: 128\n"
                                "  output-len: 16\n";

static void test_jobs_deterministic(void)
{
    g_autofree char *spec = sv_sweep_test_spec(tmp, "grid.yaml", small_run,
                                               "axes:\n"
                                               "  - {name: tp, values: [1, 2]}\n"
                                               "  - {name: qps, values: [2, 8]}\n");
    g_autofree char *o1 = g_build_filename(tmp, "j1", NULL);
    g_autofree char *o3 = g_build_filename(tmp, "j3", NULL);
    int st;
    g_autofree char *out = NULL;
    st = sv_sweep_test_run(spec, o1, "--jobs", "1", &out);
    SV_ASSERT_EQ_I64(st, 0);
    st = sv_sweep_test_run(spec, o3, "--jobs", "3", NULL);
    SV_ASSERT_EQ_I64(st, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "4 points: 4 ok, 0 failed"));
    CU_ASSERT_TRUE(sv_sweep_test_same_tree(o1, o3));
    g_autoptr(GPtrArray) rows = sv_sweep_test_csv(o1);
    CU_ASSERT_EQUAL_FATAL(rows->len, 5); /* header + 4 points in point order */
    for (guint k = 0; k < 4; k++) {
        const char *tp = k < 2 ? "1" : "2", *qps = k % 2 ? "8" : "2";
        g_autofree char *id = g_strdup_printf("%u", k);
        CU_ASSERT_STRING_EQUAL(sv_sweep_test_col(rows, k, "point"), id);
        CU_ASSERT_STRING_EQUAL(sv_sweep_test_col(rows, k, "tp"), tp);
        CU_ASSERT_STRING_EQUAL(sv_sweep_test_col(rows, k, "qps"), qps);
        CU_ASSERT_STRING_EQUAL(sv_sweep_test_col(rows, k, "status"), "ok");
        CU_ASSERT_STRING_EQUAL(sv_sweep_test_col(rows, k, "completed"), "20");
        /* quick form: one instance of tp GPUs */
        CU_ASSERT_STRING_EQUAL(sv_sweep_test_col(rows, k, "gpus"), tp);
        double out_tput = g_ascii_strtod(sv_sweep_test_col(rows, k, "output_throughput"), NULL);
        double per_gpu =
            g_ascii_strtod(sv_sweep_test_col(rows, k, "output_throughput_per_gpu"), NULL);
        CU_ASSERT_DOUBLE_EQUAL(per_gpu, out_tput / atof(tp), 1e-3);
        /* 20 requests x 16 output tokens over the makespan: output = 16 x request throughput */
        double req = g_ascii_strtod(sv_sweep_test_col(rows, k, "request_throughput"), NULL);
        CU_ASSERT_DOUBLE_EQUAL(out_tput, 16 * req, 2e-3 * 16);
        /* cmd.txt: the exact command, paths relative to the sweep folder */
        g_autofree char *cmd = sv_sweep_test_read(o1, k, "cmd.txt");
        g_autofree char *want =
            g_strdup_printf("--tp %s --qps %s --output-dir points/%04u --quiet\n", tp, qps, k);
        CU_ASSERT_TRUE(g_str_has_suffix(cmd, want));
    }
}

static void test_shard_merge(void)
{
    g_autofree char *spec = sv_sweep_test_spec(tmp, "shards.yaml", small_run,
                                               "axes:\n"
                                               "  - {name: qps, values: [1, 2, 4, 8]}\n");
    g_autofree char *local = g_build_filename(tmp, "local", NULL);
    g_autofree char *sh = g_build_filename(tmp, "sh", NULL);
    SV_ASSERT_EQ_I64(sv_sweep_test_run(spec, local, "--jobs", "2", NULL), 0);
    SV_ASSERT_EQ_I64(sv_sweep_test_run(spec, sh, "--shard", "0/3", NULL), 0);
    SV_ASSERT_EQ_I64(sv_sweep_test_run(spec, sh, "--shard", "2/3", NULL), 0);
    g_autofree char *err = NULL;
    /* shard 1 (point 1) missing */
    int st = sv_sweep_test_run_err(spec, sh, "--merge", NULL, &err);
    SV_ASSERT_EQ_I64(st, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "1 of 4 points missing"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, ": 1\n"));
    SV_ASSERT_EQ_I64(sv_sweep_test_run(spec, sh, "--shard", "1/3", NULL), 0);
    SV_ASSERT_EQ_I64(sv_sweep_test_run(spec, sh, "--merge", NULL, NULL), 0);
    CU_ASSERT_TRUE(sv_sweep_test_same_file(local, sh, "sweep.csv"));
    CU_ASSERT_TRUE(sv_sweep_test_same_tree_under(local, sh, "points"));
}

static void test_failed_point(void)
{
    g_autofree char *spec = sv_sweep_test_spec(tmp, "fail.yaml", small_run,
                                               "axes:\n"
                                               "  - {name: scheduler, values: [vllm, nope]}\n");
    g_autofree char *o = g_build_filename(tmp, "fail", NULL);
    int st = sv_sweep_test_run(spec, o, "--jobs", "2", NULL);
    SV_ASSERT_EQ_I64(st, 1);
    g_autoptr(GPtrArray) rows = sv_sweep_test_csv(o);
    CU_ASSERT_EQUAL_FATAL(rows->len, 3);
    CU_ASSERT_STRING_EQUAL(sv_sweep_test_col(rows, 0, "status"), "ok");
    CU_ASSERT_STRING_EQUAL(sv_sweep_test_col(rows, 1, "status"), "failed");
    const char *e = sv_sweep_test_col(rows, 1, "error");
    CU_ASSERT_TRUE(g_str_has_prefix(e, "exit 2: servesim run:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(e, "nope"));
    CU_ASSERT_STRING_EQUAL(sv_sweep_test_col(rows, 1, "completed"), "");
}

/* A zip of two paths patches tp_size and num_npus together; the GPUs are the patched num_npus. */
static void test_path_axis(void)
{
    g_autofree char *cluster = sv_test_write_cluster(tmp, "meta-llama/Llama-2-7B", "A100-80GB", 80);
    g_autofree char *wl = g_build_filename(tmp, "wl.jsonl", NULL);
    GString *w = g_string_new(NULL);
    for (int i = 0; i < 20; i++)
        g_string_append_printf(w,
                               "{\"arrival_time_ns\": %d, \"input_toks\": 128, "
                               "\"output_toks\": 16}\n",
                               i * 100000000);
    g_assert(g_file_set_contents(wl, w->str, -1, NULL));
    g_string_free(w, TRUE);
    g_autofree char *spec = sv_sweep_test_spec(
        tmp, "path.yaml", "run: {cluster: cluster.json, workload: wl.jsonl, latency: roofline}\n",
        "axes:\n"
        "  - zip:\n"
        "      - {name: tp, path: \"nodes[*].instances[*].tp_size\"}\n"
        "      - {name: npus, path: \"nodes[*].instances[*].num_npus\"}\n"
        "    values: [[1, 1], [2, 2]]\n");
    g_autofree char *o = g_build_filename(tmp, "path", NULL);
    SV_ASSERT_EQ_I64(sv_sweep_test_run(spec, o, "--jobs", "2", NULL), 0);
    g_autoptr(GPtrArray) rows = sv_sweep_test_csv(o);
    CU_ASSERT_EQUAL_FATAL(rows->len, 3);
    CU_ASSERT_STRING_EQUAL(sv_sweep_test_col(rows, 1, "gpus"), "2");
    CU_ASSERT_STRING_EQUAL(sv_sweep_test_col(rows, 1, "completed"), "20");
    g_autofree char *c1 = sv_sweep_test_read(o, 1, "cluster.json");
    CU_ASSERT_PTR_NOT_NULL(strstr(c1, "\"tp_size\" : 2"));
    CU_ASSERT_PTR_NOT_NULL(strstr(c1, "\"num_npus\" : 2"));
    g_autofree char *cmd = sv_sweep_test_read(o, 1, "cmd.txt");
    CU_ASSERT_PTR_NOT_NULL(strstr(cmd, "--cluster points/0001/cluster.json"));
}

/* An instance under attention/FFN disaggregation (docs/afd.md): a point's GPUs are its attention
 * devices plus its FFN devices (1 + 2), whatever the axis (micro_batches) changes. */
static void test_afd_gpus(void)
{
    g_autofree char *dir = g_build_filename(tmp, "afd_in", NULL);
    g_assert(g_mkdir_with_parents(dir, 0755) == 0);
    g_autofree char *cluster = sv_test_write_cluster(dir, "meta-llama/Llama-3.1-8B", "H100", 80);
    g_autofree char *text = NULL;
    g_assert(g_file_get_contents(cluster, &text, NULL, NULL));
    const char *at = strstr(text, "\"tp_size\": 1,");
    g_assert(at);
    g_autofree char *with =
        g_strdup_printf("%.*s\"afd\": {\"ffn_hardware\": \"A100\", \"ffn_npus\": 2}, %s",
                        (int)(at - text), text, at);
    g_assert(g_file_set_contents(cluster, with, -1, NULL));
    g_autofree char *spec = sv_sweep_test_spec(
        dir, "afd.yaml",
        "run: {cluster: cluster.json, latency: roofline, requests: 4, qps: 10, input-len: 32, "
        "output-len: 4}\n",
        "axes:\n"
        "  - {name: mb, path: \"nodes[*].instances[*].afd.micro_batches\", values: [1, 2]}\n");
    g_autofree char *o = g_build_filename(tmp, "afd", NULL);
    SV_ASSERT_EQ_I64(sv_sweep_test_run(spec, o, "--jobs", "1", NULL), 0);
    g_autoptr(GPtrArray) rows = sv_sweep_test_csv(o);
    CU_ASSERT_EQUAL_FATAL(rows->len, 3);
    CU_ASSERT_STRING_EQUAL(sv_sweep_test_col(rows, 0, "gpus"), "3");
    CU_ASSERT_STRING_EQUAL(sv_sweep_test_col(rows, 1, "gpus"), "3");
}

/* Two attention instances sharing one FFN group of two A100s (docs/afd.md "Several attention
 * instances sharing an FFN group"): the FFN devices count once, 1 + 1 + 2 = 4 GPUs, not 6. */
static void test_afd_group_gpus(void)
{
    g_autofree char *dir = g_build_filename(tmp, "afdg_in", NULL);
    g_assert(g_mkdir_with_parents(dir, 0755) == 0);
    const char *inst = "{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100\", "
                       "\"npu_mem\": {\"mem_size\": 80}, \"afd\": {\"ffn_hardware\": \"A100\", "
                       "\"ffn_npus\": 2, \"ffn_group\": \"g\"}}";
    g_autofree char *text = g_strdup_printf(
        "{\"link_bw\": 50, \"link_latency\": 1000, \"nodes\": [{\"instances\": [%s, %s]}]}", inst,
        inst);
    g_autofree char *cluster = g_build_filename(dir, "cluster.json", NULL);
    g_assert(g_file_set_contents(cluster, text, -1, NULL));
    g_autofree char *spec = sv_sweep_test_spec(
        dir, "afdg.yaml",
        "run: {cluster: cluster.json, latency: roofline, requests: 4, qps: 10, input-len: 32, "
        "output-len: 4}\n",
        "axes:\n"
        "  - {name: mb, path: \"nodes[*].instances[*].afd.micro_batches\", values: [2]}\n");
    g_autofree char *o = g_build_filename(tmp, "afdg", NULL);
    SV_ASSERT_EQ_I64(sv_sweep_test_run(spec, o, "--jobs", "1", NULL), 0);
    g_autoptr(GPtrArray) rows = sv_sweep_test_csv(o);
    CU_ASSERT_EQUAL_FATAL(rows->len, 2);
    CU_ASSERT_STRING_EQUAL(sv_sweep_test_col(rows, 0, "gpus"), "4");
}

/* Qwen3-32B on A100-80GB: a decode step at tp 1 reads all 32.8e9 bf16 weights (65.5 GB) at
 * 2,039 GB/s (the catalog's A100 SXM 80GB, NVIDIA datasheet), >= 32 ms: tp 1 misses p99 TPOT
 * <= 30 ms at every load, so its loads above the lowest must never run. Each configuration's
 * pass/miss sequence is then checked for the pruning rule against the TPOT the rows report. */
static void test_goal(void)
{
    g_autofree char *spec =
        sv_sweep_test_spec(tmp, "goal.yaml",
                           "run:\n"
                           "  model: Qwen3-32B\n"
                           "  hardware: A100-80GB\n"
                           "  latency: roofline\n"
                           "  requests: 20\n"
                           "  input-len: 128\n"
                           "  output-len: 16\n",
                           "axes:\n"
                           "  - {name: tp, values: [1, 2, 4]}\n"
                           "  - {name: qps, values: [8, 2, 32]}\n"
                           "goal: {load: qps, at: 2, slo: {p99_tpot_ms: 30}, minimize: gpus}\n");
    g_autofree char *o = g_build_filename(tmp, "goal", NULL);
    g_autofree char *out = NULL;
    SV_ASSERT_EQ_I64(sv_sweep_test_run(spec, o, "--goal", NULL, &out), 0);
    g_autoptr(GPtrArray) rows = sv_sweep_test_csv(o);
    CU_ASSERT_EQUAL_FATAL(rows->len, 10); /* every point listed, pruned ones too */
    /* tp 1 at qps 2 (point 1) ran and missed: the bound above */
    CU_ASSERT_STRING_EQUAL(sv_sweep_test_col(rows, 1, "status"), "ok");
    CU_ASSERT_TRUE(g_ascii_strtod(sv_sweep_test_col(rows, 1, "p99_tpot_ms"), NULL) >=
                   65.5e9 / 2039e9 * 1e3);
    for (guint k = 0; k < 3; k++) /* qps 8 (k=0) and 32 (k=2) of tp 1 pruned, not run */
        if (k != 1) {
            CU_ASSERT_STRING_EQUAL(sv_sweep_test_col(rows, k, "status"), "pruned");
            CU_ASSERT_FALSE(sv_sweep_test_point_exists(o, k));
        }
    /* the rule, per configuration, in load order 2, 8, 32 (value indices 1, 0, 2) */
    int best_gpus = 0;
    for (guint c = 0; c < 3; c++) {
        static const guint order[] = {1, 0, 2};
        gboolean missed = FALSE;
        for (guint i = 0; i < 3; i++) {
            guint k = c * 3 + order[i];
            const char *status = sv_sweep_test_col(rows, k, "status");
            if (missed) {
                CU_ASSERT_STRING_EQUAL(status, "pruned");
                CU_ASSERT_FALSE(sv_sweep_test_point_exists(o, k));
                continue;
            }
            CU_ASSERT_STRING_EQUAL(status, "ok");
            double tpot = g_ascii_strtod(sv_sweep_test_col(rows, k, "p99_tpot_ms"), NULL);
            missed = tpot > 30;
            if (!missed && order[i] == 1 && !best_gpus) /* first passing at qps 2: fewest GPUs */
                best_gpus = 1 << c;
        }
    }
    CU_ASSERT_TRUE_FATAL(best_gpus > 1); /* tp 1 cannot pass */
    g_autofree char *want = g_strdup_printf("goal: tp=%d (point %d): %d GPUs", best_gpus,
                                            (best_gpus == 2 ? 1 : 2) * 3 + 1, best_gpus);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
    g_autofree char *goal_json = g_build_filename(o, "goal.json", NULL);
    CU_ASSERT_TRUE(g_file_test(goal_json, G_FILE_TEST_EXISTS));
}

/* A child starts with the default action for SIGTERM (a runner may pass it on as ignored). */
static void child_default_signals(gpointer data)
{
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
}

/* Whether `dir` holds an entry starting with `prefix`, waiting up to timeout_s. */
static gboolean wait_for_entry(const char *dir, const char *prefix, double timeout_s)
{
    gint64 end = g_get_monotonic_time() + (gint64)(timeout_s * G_USEC_PER_SEC);
    while (g_get_monotonic_time() < end) {
        g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
        for (const char *n; d && (n = g_dir_read_name(d));)
            if (g_str_has_prefix(n, prefix))
                return TRUE;
        g_usleep(5000);
    }
    return FALSE;
}

/* SIGTERM to the sweep while its points run: it passes the signal on, starts no other point,
 * writes no sweep.csv and exits 128 + 15; the interrupted run left no outputs (docs/outputs.md). */
static void test_sigterm(void)
{
    g_autofree char *spec = sv_sweep_test_spec(tmp, "long.yaml",
                                               "run:\n"
                                               "  model: Llama-2-7B\n"
                                               "  hardware: A100-80GB\n"
                                               "  latency: roofline\n"
                                               "  requests: 2000000\n"
                                               "  qps: 1000\n"
                                               "  input-len: 128\n"
                                               "  output-len: 16\n",
                                               "axes: [{name: seed, values: [1, 2, 3]}]\n");
    g_autofree char *o = g_build_filename(tmp, "sig", NULL);
    const char *argv[] = {SV_SERVESIM_BIN, "sweep", spec, "-o", o, "-q", "--jobs", "1", NULL};
    GPid pid = 0;
    CU_ASSERT_TRUE_FATAL(g_spawn_async(NULL, (char **)argv, NULL,
                                       G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL |
                                           G_SPAWN_STDERR_TO_DEV_NULL,
                                       child_default_signals, NULL, &pid, NULL));
    g_autofree char *p0 = g_build_filename(o, "points", "0000", NULL);
    /* the run opened its outputs: it is simulating */
    CU_ASSERT_TRUE(wait_for_entry(p0, ".requests.csv.", 120));
    kill(pid, SIGTERM);
    int st = 0;
    gint64 end = g_get_monotonic_time() + 120 * G_USEC_PER_SEC;
    pid_t r = 0;
    while ((r = waitpid(pid, &st, WNOHANG)) == 0 && g_get_monotonic_time() < end)
        g_usleep(10000);
    if (r != pid) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        CU_FAIL("servesim sweep did not stop within 120 s of SIGTERM");
        return;
    }
    CU_ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGTERM);
    g_autofree char *csv = g_build_filename(o, "sweep.csv", NULL);
    CU_ASSERT_FALSE(g_file_test(csv, G_FILE_TEST_EXISTS));
    CU_ASSERT_FALSE(sv_sweep_test_point_exists(o, 1)); /* --jobs 1: never started */
    g_autofree char *err = sv_sweep_test_read(o, 0, "stderr.txt");
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "interrupted by SIGTERM"));
    g_autofree char *summary = g_build_filename(p0, "summary.json", NULL);
    CU_ASSERT_FALSE(g_file_test(summary, G_FILE_TEST_EXISTS));
}

/* With a power model (LLMServingSim's single_node_power_instance.json) the energy columns are
 * summary.json's energy.total_j and that over the output tokens: 20 requests x 16 tokens. */
static void test_energy(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim/configs/cluster/single_node_power_instance.json",
                      "a cluster config with a power block");
    g_autofree char *wl = g_build_filename(tmp, "wl20.jsonl", NULL);
    GString *w = g_string_new(NULL);
    for (int i = 0; i < 20; i++)
        g_string_append_printf(w,
                               "{\"arrival_time_ns\": %d, \"input_toks\": 128, "
                               "\"output_toks\": 16}\n",
                               i * 100000000);
    g_assert(g_file_set_contents(wl, w->str, -1, NULL));
    g_string_free(w, TRUE);
    g_autofree char *cwd = g_get_current_dir();
    g_autofree char *run = g_strdup_printf(
        "run:\n  cluster: %s/" SV_SHARED "/reference/llmservingsim/configs/cluster/"
        "single_node_power_instance.json\n  workload: wl20.jsonl\n  latency: roofline\n",
        cwd);
    g_autofree char *spec = sv_sweep_test_spec(tmp, "power.yaml", run,
                                               "axes: [{name: max-num-seqs, values: [4, 16]}]\n");
    g_autofree char *o = g_build_filename(tmp, "power", NULL);
    SV_ASSERT_EQ_I64(sv_sweep_test_run(spec, o, "--jobs", "2", NULL), 0);
    g_autoptr(GPtrArray) rows = sv_sweep_test_csv(o);
    CU_ASSERT_EQUAL_FATAL(rows->len, 3);
    for (guint k = 0; k < 2; k++) {
        double e = g_ascii_strtod(sv_sweep_test_col(rows, k, "energy_j"), NULL);
        double per = g_ascii_strtod(sv_sweep_test_col(rows, k, "energy_per_output_token_j"), NULL);
        CU_ASSERT_TRUE(e > 0);
        CU_ASSERT_DOUBLE_EQUAL(per, e / (20 * 16), 1e-5);
    }
}

static void test_bad_spec(void)
{
    g_autofree char *spec =
        sv_sweep_test_spec(tmp, "bad.yaml", small_run, "axes:\n  - {name: qps, values: []}\n");
    g_autofree char *o = g_build_filename(tmp, "bad", NULL);
    g_autofree char *err = NULL;
    SV_ASSERT_EQ_I64(sv_sweep_test_run_err(spec, o, NULL, NULL, &err), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "bad.yaml:9: axes[0].values: expected a non-empty list"));
    CU_ASSERT_FALSE(g_file_test(o, G_FILE_TEST_EXISTS)); /* nothing written */
}

int main(void)
{
    tmp = sv_test_tmpdir();
    static const sv_test_case cases[] = {
        {"jobs_deterministic", test_jobs_deterministic},
        {"shard_merge", test_shard_merge},
        {"failed_point", test_failed_point},
        {"path_axis", test_path_axis},
        {"afd_gpus", test_afd_gpus},
        {"afd_group_gpus", test_afd_group_gpus},
        {"goal", test_goal},
        {"bad_spec", test_bad_spec},
        {"sigterm", test_sigterm},
        {"energy", test_energy},
        {NULL, NULL},
    };
    sv_test_add_suite("sweep_cli", cases);
    int rc = sv_test_run();
    sv_test_rmtree(tmp);
    g_free(tmp);
    return rc;
}
