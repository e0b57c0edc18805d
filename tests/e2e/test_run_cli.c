/* `servesim run` as a user calls it: the built-in default, the quick form, option errors,
 * determinism, option effects, bad workload lines, and a run that cannot finish. Expected numbers
 * are closed forms of the inputs (token totals, gap counts), not outputs of an earlier run. */
#include "tests/test_util.h"
#include "workloads/workloads.h"

#include <CUnit/CUnit.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#define CLUSTER SV_SHARED "/reference/llmservingsim/validation/RTXPRO6000/Llama-3.1-8B/config.json"
#define PROFILES SV_SHARED "/reference/llmservingsim/profiles"

/* Run servesim with `argv` (after "servesim run") in `cwd` (NULL: the repo root) with the
 * environment `envp` (NULL: this process's). */
static int run_env(const char *cwd, char **envp, const char *const *args, char **out, char **err)
{
    GPtrArray *argv = g_ptr_array_new();
    g_autofree char *bin = g_canonicalize_filename(SV_SERVESIM_BIN, NULL);
    g_ptr_array_add(argv, bin);
    g_ptr_array_add(argv, (char *)"run");
    for (int i = 0; args[i]; i++)
        g_ptr_array_add(argv, (char *)args[i]);
    g_ptr_array_add(argv, NULL);
    int status = -1;
    GError *e = NULL;
    gboolean ok = g_spawn_sync(cwd, (char **)argv->pdata, envp, G_SPAWN_DEFAULT, NULL, NULL, out,
                               err, &status, &e);
    g_ptr_array_free(argv, TRUE);
    if (!ok) {
        fprintf(stderr, "spawn: %s\n", e->message);
        g_error_free(e);
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int run_in(const char *cwd, const char *const *args, char **out, char **err)
{
    return run_env(cwd, NULL, args, out, err);
}

static JsonObject *load_json(const char *path, JsonParser **parser)
{
    *parser = json_parser_new();
    if (!json_parser_load_from_file(*parser, path, NULL))
        return NULL;
    return json_node_get_object(json_parser_get_root(*parser));
}

static int64_t jpath_int(JsonObject *o, const char *a, const char *b)
{
    return json_object_get_int_member(json_object_get_object_member(o, a), b);
}

static double jstat(JsonObject *o, const char *metric, const char *what)
{
    JsonObject *lat = json_object_get_object_member(o, "latency_ms");
    return json_object_get_double_member(json_object_get_object_member(lat, metric), what);
}

static gchar **read_lines(const char *path)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return NULL;
    return g_strsplit(text, "\n", -1);
}

/* requests.csv rows are in id order 0..n-1, and ttft/e2e/queue agree with the timestamps. */
static void check_requests_csv(const char *dir, int64_t n)
{
    g_autofree char *path = g_build_filename(dir, "requests.csv", NULL);
    g_auto(GStrv) lines = read_lines(path);
    CU_ASSERT_FATAL(lines != NULL);
    CU_ASSERT_STRING_EQUAL(lines[0], "request_id,instance,arrival_ns,first_scheduled_ns,"
                                     "first_token_ns,last_token_ns,input_tokens,output_tokens,"
                                     "prefix_hit_tokens,preemptions,ttft_ns,tpot_ns,e2e_ns,"
                                     "queue_ns,status,reject_reason");
    int64_t rows = 0;
    for (int i = 1; lines[i] && *lines[i]; i++, rows++) {
        g_auto(GStrv) f = g_strsplit(lines[i], ",", -1);
        CU_ASSERT_FATAL(g_strv_length(f) == 16);
        CU_ASSERT_STRING_EQUAL(f[14], "finished");
        CU_ASSERT_STRING_EQUAL(f[15], "");
        SV_ASSERT_EQ_I64(g_ascii_strtoll(f[0], NULL, 10), rows);
        int64_t arr = g_ascii_strtoll(f[2], NULL, 10), sched = g_ascii_strtoll(f[3], NULL, 10),
                first = g_ascii_strtoll(f[4], NULL, 10), last = g_ascii_strtoll(f[5], NULL, 10);
        CU_ASSERT(arr <= sched && sched < first && first <= last);
        SV_ASSERT_EQ_I64(g_ascii_strtoll(f[10], NULL, 10), first - arr);
        SV_ASSERT_EQ_I64(g_ascii_strtoll(f[12], NULL, 10), last - arr);
        SV_ASSERT_EQ_I64(g_ascii_strtoll(f[13], NULL, 10), sched - arr);
    }
    SV_ASSERT_EQ_I64(rows, n);
}

static gboolean same_file(const char *a, const char *b);

/* Mean and standard deviation of a `sharegpt` length: the piecewise-linear inverse CDF through
 * the table's percentiles is uniform on each of its 100 segments [a, b], whose first and second
 * moments are (a + b) / 2 and (a^2 + ab + b^2) / 3. */
static void table_moments(const struct sv_wl_len *l, double *mean, double *sd)
{
    const double *q = l->quantiles;
    double m1 = 0, m2 = 0;
    for (int i = 0; i + 1 < l->n_quantiles; i++) {
        m1 += 0.5 * (q[i] + q[i + 1]);
        m2 += (q[i] * q[i] + q[i] * q[i + 1] + q[i + 1] * q[i + 1]) / 3.0;
    }
    m1 /= l->n_quantiles - 1;
    m2 /= l->n_quantiles - 1;
    *mean = m1;
    *sd = sqrt(m2 - m1 * m1);
}

static void test_default_run(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    char *out = NULL, *err = NULL;
    const char *args[] = {NULL};
    int rc = run_in(tmp, args, &out, &err);
    if (rc != 0)
        fprintf(stderr, "%s", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    /* The same bytes from a second run in another directory (the lengths are built in). */
    g_autofree char *tmp2 = sv_test_tmpdir();
    char *out2 = NULL, *err2 = NULL;
    CU_ASSERT_EQUAL_FATAL(run_in(tmp2, args, &out2, &err2), 0);
    CU_ASSERT_STRING_EQUAL(out, out2);
    const char *files[] = {"requests.csv", "timeseries.csv", "summary.json"};
    for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
        g_autofree char *a = g_build_filename(tmp, "servesim-out", files[i], NULL);
        g_autofree char *b = g_build_filename(tmp2, "servesim-out", files[i], NULL);
        CU_ASSERT(same_file(a, b));
    }
    g_free(out2);
    g_free(err2);
    sv_test_rmtree(tmp2);
    /* The printed summary names the counts of the built-in 1,000-request workload. */
    CU_ASSERT(strstr(out, "requests: 1000 finished, 0 unfinished") != NULL);
    CU_ASSERT(strstr(out, "TTFT") && strstr(out, "ITL") && strstr(out, "E2E"));
    g_autofree char *dir = g_build_filename(tmp, "servesim-out", NULL);
    g_autofree char *ts = g_build_filename(dir, "timeseries.csv", NULL);
    g_autofree char *sum = g_build_filename(dir, "summary.json", NULL);
    CU_ASSERT(g_file_test(ts, G_FILE_TEST_IS_REGULAR));
    check_requests_csv(dir, 1000);
    JsonParser *p = NULL;
    JsonObject *o = load_json(sum, &p);
    CU_ASSERT_FATAL(o != NULL);
    SV_ASSERT_EQ_I64(jpath_int(o, "requests", "arrived"), 1000);
    SV_ASSERT_EQ_I64(jpath_int(o, "requests", "finished"), 1000);
    SV_ASSERT_EQ_I64(jpath_int(o, "requests", "unfinished"), 0);
    /* Lengths from vLLM's ShareGPT sampler: the mean of 1,000 draws within 4 standard errors of
     * the table's mean, on both sides. */
    struct sv_wl_len lens[2] = {{0}, {0}};
    sv_wl_len_sharegpt(&lens[0], &lens[1]);
    const char *side[2] = {"input", "output"};
    for (int k = 0; k < 2; k++) {
        CU_ASSERT_FATAL(lens[k].kind == SV_WL_LEN_QUANTILES && lens[k].n_quantiles >= 2);
        double mean, sd;
        table_moments(&lens[k], &mean, &sd);
        double got = (double)jpath_int(o, "tokens", side[k]) / 1000.0;
        if (fabs(got - mean) > 4 * sd / sqrt(1000.0))
            fprintf(stderr, "%s tokens per request %.1f, table %.1f (sd %.1f)\n", side[k], got,
                    mean, sd);
        CU_ASSERT(fabs(got - mean) <= 4 * sd / sqrt(1000.0));
    }
    /* Unsaturated: every request is admitted within a second of its arrival (a saturated
     * engine's queue grows through the run, as the default study's did with Vidur's long
     * prompts: 62 s of mean TTFT). */
    CU_ASSERT(jstat(o, "queue", "p99") < 1000.0);
    g_object_unref(p);
    g_free(out);
    g_free(err);
    sv_test_rmtree(tmp);
}

/* The peer study: 1,000 requests of 512 + 128 tokens, Poisson 5 req/s. */
static void test_quick_form(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    char *out = NULL, *err = NULL;
    const char *args[] = {
        "--model",      "Llama-2-7B", "--hardware",  "A100-80GB", "--requests",   "1000",
        "--qps",        "5",          "--input-len", "512",       "--output-len", "128",
        "--output-dir", tmp,          NULL};
    int rc = run_in(NULL, args, &out, &err);
    if (rc != 0)
        fprintf(stderr, "%s", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    check_requests_csv(tmp, 1000);
    g_autofree char *sum = g_build_filename(tmp, "summary.json", NULL);
    JsonParser *p = NULL;
    JsonObject *o = load_json(sum, &p);
    CU_ASSERT_FATAL(o != NULL);
    SV_ASSERT_EQ_I64(jpath_int(o, "requests", "finished"), 1000);
    /* Closed forms: 1000 x 512 input tokens, 1000 x 128 output tokens, 127 gaps each. */
    SV_ASSERT_EQ_I64(jpath_int(o, "tokens", "input"), 512000);
    SV_ASSERT_EQ_I64(jpath_int(o, "tokens", "output"), 128000);
    JsonObject *lat = json_object_get_object_member(o, "latency_ms");
    SV_ASSERT_EQ_I64(jpath_int(lat, "itl", "count"), 127000);
    SV_ASSERT_EQ_I64(jpath_int(lat, "tpot", "count"), 1000);
    /* Every request has the same 127 gaps, so the mean gap equals the mean TPOT. */
    double itl = jstat(o, "itl", "mean"), tpot = jstat(o, "tpot", "mean");
    CU_ASSERT(tpot > 0 && fabs(itl - tpot) <= 1e-6 * tpot);
    g_object_unref(p);
    g_free(out);
    g_free(err);
    sv_test_rmtree(tmp);
}

static void expect_usage_error(const char *flag, const char *value)
{
    char *out = NULL, *err = NULL;
    const char *args[] = {flag, value, "--quiet", NULL};
    int rc = run_in(NULL, args, &out, &err);
    CU_ASSERT_EQUAL(rc, 2);
    CU_ASSERT(strstr(err, flag) != NULL);
    if (rc != 2 || !strstr(err, flag))
        fprintf(stderr, "%s %s: rc %d, stderr: %s\n", flag, value ? value : "", rc, err);
    g_free(out);
    g_free(err);
}

static void test_bad_values(void)
{
    expect_usage_error("--qps", "abc");
    expect_usage_error("--qps", "-1");
    expect_usage_error("--block-size", "0");
    expect_usage_error("--host-overhead", "some");
    expect_usage_error("--engine", "sglang");
    expect_usage_error("--frontend", "1:");
    expect_usage_error("--network-model", "telepathy");
    expect_usage_error("--moe-comm", "broadcast");
    expect_usage_error("--max-num-seqs", "-3");
    expect_usage_error("--max-num-batched-tokens", "12x");
    expect_usage_error("--long-prefill-token-threshold", "-1");
    expect_usage_error("--seed", "seven");
    expect_usage_error("--router", "fastest");
    expect_usage_error("--scheduler", "fifo");
    expect_usage_error("--latency", "magic");
    expect_usage_error("--input-len", "uniform:9:1");
    expect_usage_error("--requests", NULL); /* missing value */
    expect_usage_error("--no-such-flag", NULL);
}

static void test_help_lists_options(void)
{
    char *out = NULL, *err = NULL;
    const char *args[] = {"--help", NULL};
    CU_ASSERT_EQUAL(run_in(NULL, args, &out, &err), 0);
    const char *flags[] = {"--cluster",
                           "--workload",
                           "--skip-bad-lines",
                           "--model",
                           "--hardware",
                           "--tp",
                           "--requests",
                           "--qps",
                           "--input-len",
                           "--output-len",
                           "--arrival",
                           "--profiles",
                           "--latency",
                           "--model-dir",
                           "--scheduler",
                           "--router",
                           "--max-num-seqs",
                           "--max-num-batched-tokens",
                           "--long-prefill-token-threshold",
                           "--block-size",
                           "--no-prefix-caching",
                           "--seed",
                           "--output-dir",
                           "--emit-et",
                           "--quiet"};
    for (size_t i = 0; i < G_N_ELEMENTS(flags); i++) {
        if (!strstr(out, flags[i]))
            fprintf(stderr, "--help lacks %s\n", flags[i]);
        CU_ASSERT(strstr(out, flags[i]) != NULL);
    }
    CU_ASSERT(strstr(out, "default") != NULL);
    g_free(out);
    g_free(err);
}

static gboolean same_file(const char *a, const char *b)
{
    g_autofree char *x = NULL, *y = NULL;
    gsize nx = 0, ny = 0;
    if (!g_file_get_contents(a, &x, &nx, NULL) || !g_file_get_contents(b, &y, &ny, NULL))
        return FALSE;
    return nx == ny && memcmp(x, y, nx) == 0;
}

static void test_determinism(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *d1 = g_build_filename(tmp, "a", NULL);
    g_autofree char *d2 = g_build_filename(tmp, "b", NULL);
    const char *dirs[] = {d1, d2};
    for (int k = 0; k < 2; k++) {
        char *out = NULL, *err = NULL;
        const char *args[] = {"--requests",   "300",
                              "--qps",        "8",
                              "--input-len",  "uniform:64:2048",
                              "--output-len", "uniform:8:512",
                              "--arrival",    "gamma:2",
                              "--seed",       "7",
                              "--quiet",      "--output-dir",
                              dirs[k],        NULL};
        CU_ASSERT_EQUAL(run_in(NULL, args, &out, &err), 0);
        g_free(out);
        g_free(err);
    }
    const char *files[] = {"requests.csv", "timeseries.csv", "summary.json"};
    for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
        g_autofree char *a = g_build_filename(d1, files[i], NULL);
        g_autofree char *b = g_build_filename(d2, files[i], NULL);
        CU_ASSERT(same_file(a, b));
    }
    sv_test_rmtree(tmp);
}

/* --max-num-seqs 1: the running column never exceeds 1; --block-size and
 * --no-prefix-caching / --long-prefill-token-threshold are accepted and the run finishes. */
static void test_options_take_effect(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    char *out = NULL, *err = NULL;
    const char *args[] = {"--requests",
                          "40",
                          "--qps",
                          "20",
                          "--input-len",
                          "300",
                          "--output-len",
                          "20",
                          "--max-num-seqs",
                          "1",
                          "--block-size",
                          "32",
                          "--no-prefix-caching",
                          "--long-prefill-token-threshold",
                          "128",
                          "--quiet",
                          "--output-dir",
                          tmp,
                          NULL};
    int rc = run_in(NULL, args, &out, &err);
    if (rc != 0)
        fprintf(stderr, "%s", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    g_autofree char *ts = g_build_filename(tmp, "timeseries.csv", NULL);
    g_auto(GStrv) lines = read_lines(ts);
    CU_ASSERT_FATAL(lines != NULL);
    int64_t max_running = 0, max_waiting = 0;
    for (int i = 1; lines[i] && *lines[i]; i++) {
        g_auto(GStrv) f = g_strsplit(lines[i], ",", -1);
        max_running = MAX(max_running, g_ascii_strtoll(f[3], NULL, 10));
        max_waiting = MAX(max_waiting, g_ascii_strtoll(f[4], NULL, 10));
    }
    SV_ASSERT_EQ_I64(max_running, 1);
    CU_ASSERT(max_waiting > 0); /* 20 req/s against one sequence at a time queues */
    check_requests_csv(tmp, 40);
    g_free(out);
    g_free(err);
    sv_test_rmtree(tmp);
}

static void test_skip_bad_lines(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *wl = g_build_filename(tmp, "wl.jsonl", NULL);
    const char *text = "{\"input_toks\": 100, \"output_toks\": 10, \"arrival_time_ns\": 0}\n"
                       "{\"input_toks\": oops}\n"
                       "{\"input_toks\": 200, \"output_toks\": 5, \"arrival_time_ns\": 1000}\n";
    CU_ASSERT_FATAL(g_file_set_contents(wl, text, -1, NULL));
    g_autofree char *dir = g_build_filename(tmp, "out", NULL);
    char *out = NULL, *err = NULL;
    /* Without the flag: an error naming the line. */
    /* A cluster config of its own and roofline latency: nothing from ../shared. */
    g_autofree char *cl = sv_test_write_cluster(tmp, "meta-llama/Llama-3.1-8B", "H100-SXM", 80);
    const char *a1[] = {"--cluster", cl,        "--workload",   wl,  "--latency",
                        "roofline",  "--quiet", "--output-dir", dir, NULL};
    CU_ASSERT_NOT_EQUAL(run_in(NULL, a1, &out, &err), 0);
    CU_ASSERT(strstr(err, ":2") != NULL || strstr(err, "line 2") != NULL);
    g_free(out);
    g_free(err);
    const char *a2[] = {"--cluster", cl,        "--workload",   wl,  "--latency",
                        "roofline",  "--quiet", "--output-dir", dir, "--skip-bad-lines",
                        NULL};
    int rc = run_in(NULL, a2, &out, &err);
    if (rc != 0)
        fprintf(stderr, "%s", err);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT(strstr(err, "skipped 1 bad workload line") != NULL);
    check_requests_csv(dir, 2);
    g_free(out);
    g_free(err);
    sv_test_rmtree(tmp);
}

/* summary.json's latency_source as one string ("a|b" for two instances). */
static char *latency_sources(const char *dir)
{
    g_autofree char *path = g_build_filename(dir, "summary.json", NULL);
    JsonParser *p = NULL;
    JsonObject *o = load_json(path, &p);
    if (!o || !json_object_has_member(o, "latency_source")) {
        if (p)
            g_object_unref(p);
        return g_strdup("(none)");
    }
    JsonArray *a = json_object_get_array_member(o, "latency_source");
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < json_array_get_length(a); i++)
        g_string_append_printf(s, "%s%s", i ? "|" : "", json_array_get_string_element(a, i));
    g_object_unref(p);
    return g_string_free(s, FALSE);
}

/* Issue 7 item 8: profiles come only from --profiles or SERVESIM_PROFILES, never from a path
 * relative to the working directory; summary.json and stderr say which source each instance
 * used; --latency profile without a bundle is an error naming what was looked for. */
static void test_latency_source_not_cwd(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim/profiles", "the measured RTX PRO 6000 bundle");
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *wl = g_build_filename(tmp, "wl.jsonl", NULL);
    const char *text = "{\"input_toks\": 100, \"output_toks\": 10, \"arrival_time_ns\": 0}\n"
                       "{\"input_toks\": 200, \"output_toks\": 5, \"arrival_time_ns\": 1000}\n";
    CU_ASSERT_FATAL(g_file_set_contents(wl, text, -1, NULL));
    g_autofree char *cluster = g_canonicalize_filename(CLUSTER, NULL);
    g_autofree char *profiles = g_canonicalize_filename(PROFILES, NULL);
    g_autofree char *d_root = g_build_filename(tmp, "root", NULL);
    g_autofree char *d_tmp = g_build_filename(tmp, "tmp", NULL);
    g_autofree char *d_env = g_build_filename(tmp, "env", NULL);
    char **env = g_environ_unsetenv(g_get_environ(), "SERVESIM_PROFILES");
    char *out = NULL, *err = NULL;

    /* From the repository root (where ../shared exists) and from elsewhere: both roofline. */
    const char *a1[] = {"--cluster", cluster,        "--workload", wl,
                        "--quiet",   "--output-dir", d_root,       NULL};
    CU_ASSERT_EQUAL(run_env(NULL, env, a1, &out, &err), 0);
    CU_ASSERT(strstr(err, "instance 0 (meta-llama/Llama-3.1-8B on RTXPRO6000): latency roofline "
                          "(no profiles") != NULL);
    g_free(out);
    g_free(err);
    const char *a2[] = {"--cluster", cluster,        "--workload", wl,
                        "--quiet",   "--output-dir", d_tmp,        NULL};
    CU_ASSERT_EQUAL(run_env(tmp, env, a2, &out, &err), 0);
    g_free(out);
    g_free(err);
    g_autofree char *s_root = latency_sources(d_root);
    g_autofree char *s_tmp = latency_sources(d_tmp);
    CU_ASSERT_STRING_EQUAL(s_root, "roofline");
    CU_ASSERT_STRING_EQUAL(s_tmp, "roofline");
    g_autofree char *r1 = g_build_filename(d_root, "requests.csv", NULL);
    g_autofree char *r2 = g_build_filename(d_tmp, "requests.csv", NULL);
    g_autofree char *t1 = NULL, *t2 = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(r1, &t1, NULL, NULL));
    CU_ASSERT_FATAL(g_file_get_contents(r2, &t2, NULL, NULL));
    CU_ASSERT_STRING_EQUAL(t1, t2);

    /* SERVESIM_PROFILES names the bundles: the bundle appears relative to the folder. */
    char **env2 = g_environ_setenv(g_strdupv(env), "SERVESIM_PROFILES", profiles, TRUE);
    const char *a3[] = {"--cluster", cluster,        "--workload", wl,
                        "--quiet",   "--output-dir", d_env,        NULL};
    CU_ASSERT_EQUAL(run_env(tmp, env2, a3, &out, &err), 0);
    CU_ASSERT(strstr(err, "latency profile:RTXPRO6000/meta-llama/Llama-3.1-8B/bf16") != NULL);
    g_free(out);
    g_free(err);
    g_autofree char *s_env = latency_sources(d_env);
    CU_ASSERT_STRING_EQUAL(s_env, "profile:RTXPRO6000/meta-llama/Llama-3.1-8B/bf16");

    /* --latency profile with no folder, and with a folder holding no bundle. */
    const char *a4[] = {"--cluster", cluster,   "--workload",   wl,    "--quiet",
                        "--latency", "profile", "--output-dir", d_env, NULL};
    CU_ASSERT_NOT_EQUAL(run_env(tmp, env, a4, &out, &err), 0);
    CU_ASSERT(strstr(err, "instance 0 (meta-llama/Llama-3.1-8B on RTXPRO6000)") != NULL);
    CU_ASSERT(strstr(err, "--profiles DIR or SERVESIM_PROFILES") != NULL);
    g_free(out);
    g_free(err);
    const char *a5[] = {"--cluster", cluster,        "--workload", wl,
                        "--quiet",   "--latency",    "profile",    "--profiles",
                        tmp,         "--output-dir", d_env,        NULL};
    CU_ASSERT_NOT_EQUAL(run_env(tmp, env, a5, &out, &err), 0);
    CU_ASSERT(strstr(err, "instance 0 (meta-llama/Llama-3.1-8B on RTXPRO6000)") != NULL);
    CU_ASSERT(strstr(err, tmp) != NULL); /* the folder searched */
    g_free(out);
    g_free(err);
    g_strfreev(env);
    g_strfreev(env2);
    sv_test_rmtree(tmp);
}

/* A prompt of 10^6 tokens exceeds the context length of Llama-2-7B (4,096) and the KV pool of
 * one A100-80GB (80 GiB x 0.9 - 13.5 GB of weights at 512 KiB per token is about 116k tokens).
 * With --strict such a request ends the run (by default it is rejected and the run goes on:
 * tests/e2e/test_rejected_cli.c). */
static void test_never_fits(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *dir = g_build_filename(tmp, "out", NULL);
    char *out = NULL, *err = NULL;
    const char *args[] = {"--model",      "Llama-2-7B", "--hardware",   "A100-80GB",
                          "--requests",   "3",          "--qps",        "5",
                          "--input-len",  "1000000",    "--output-len", "10",
                          "--output-dir", dir,          "--strict",     NULL};
    int rc = run_in(NULL, args, &out, &err);
    CU_ASSERT_NOT_EQUAL(rc, 0);
    CU_ASSERT(rc != 2); /* not a usage error: the run itself cannot finish */
    CU_ASSERT(strstr(err, "maximum context length is 4096 tokens") != NULL);
    CU_ASSERT(strstr(err, "cannot finish") != NULL);
    CU_ASSERT(strstr(err, "1 unfinished") != NULL);
    CU_ASSERT(strstr(out, "requests:") == NULL); /* no summary printed */
    /* No output of its own: neither final files nor temporaries remain. */
    GDir *d = g_dir_open(dir, 0, NULL);
    if (d) {
        const char *name = g_dir_read_name(d);
        if (name)
            fprintf(stderr, "left behind: %s\n", name);
        CU_ASSERT(name == NULL);
        g_dir_close(d);
    }
    g_free(out);
    g_free(err);
    sv_test_rmtree(tmp);
}

static int count_entries(const char *dir)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    if (d == NULL)
        return -1;
    int n = 0;
    for (const char *name; (name = g_dir_read_name(d)) != NULL; n++)
        g_debug("%s: %s", dir, name);
    g_dir_close(d);
    return n;
}

/* A run that fails after it started, in a directory that holds the outputs of an earlier complete
 * run: the workload's 4th line is malformed and is read only when request 3 arrives at 10 s, after
 * requests 1 and 2 (arriving at 0 and 1 us, ~0.1 s of work) finished. The failed run has no
 * outputs, so none may be there afterwards: the earlier run's requests.csv / timeseries.csv /
 * summary.json would otherwise read as this run's complete results. */
static void test_mid_run_failure_over_earlier_outputs(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *dir = g_build_filename(tmp, "out", NULL);
    g_autofree char *cl = sv_test_write_cluster(tmp, "meta-llama/Llama-3.1-8B", "H100-SXM", 80);
    const char *two = "{\"input_toks\": 100, \"output_toks\": 10, \"arrival_time_ns\": 0}\n"
                      "{\"input_toks\": 200, \"output_toks\": 5, \"arrival_time_ns\": 1000}\n";
    g_autofree char *good = g_build_filename(tmp, "good.jsonl", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(good, two, -1, NULL));
    g_autofree char *bad_text = g_strconcat(
        two, "{\"input_toks\": 50, \"output_toks\": 4, \"arrival_time_ns\": 10000000000}\n",
        "{\"input_toks\": oops}\n", NULL);
    g_autofree char *bad = g_build_filename(tmp, "late_bad.jsonl", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(bad, bad_text, -1, NULL));

    /* The earlier, complete run: 2 requests, so requests.csv is a header and 2 rows. */
    char *out = NULL, *err = NULL;
    const char *a1[] = {"--cluster", cl,        "--workload",   good, "--latency",
                        "roofline",  "--quiet", "--output-dir", dir,  NULL};
    CU_ASSERT_EQUAL_FATAL(run_in(NULL, a1, &out, &err), 0);
    g_free(out);
    g_free(err);
    g_autofree char *sum = g_build_filename(dir, "summary.json", NULL);
    CU_ASSERT_FATAL(g_file_test(sum, G_FILE_TEST_IS_REGULAR));
    check_requests_csv(dir, 2);
    CU_ASSERT_EQUAL(count_entries(dir), 4); /* and run.json (issue 14) */

    /* The failing run, same directory. */
    const char *a2[] = {"--cluster", cl,        "--workload",   bad, "--latency",
                        "roofline",  "--quiet", "--output-dir", dir, NULL};
    int rc = run_in(NULL, a2, &out, &err);
    if (rc != 1)
        fprintf(stderr, "status %d\n%s", rc, err);
    CU_ASSERT_EQUAL(rc, 1); /* a failed run, not a usage error (2) or a signal */
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "late_bad.jsonl:4"));
    /* It failed mid-run: requests 1 and 2 finished, request 3 had arrived, at 10 s. */
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "2 of 3 arrived requests finished, 1 unfinished"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "at simulated 10.000 s"));
    CU_ASSERT_PTR_NULL(strstr(out, "requests:")); /* no summary printed */
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "removed the outputs of an earlier run"));
    /* Nothing left that looks like outputs: neither the earlier run's files nor temporaries. */
    CU_ASSERT_FALSE(g_file_test(sum, G_FILE_TEST_EXISTS));
    g_autofree char *reqs = g_build_filename(dir, "requests.csv", NULL);
    CU_ASSERT_FALSE(g_file_test(reqs, G_FILE_TEST_EXISTS));
    int left = count_entries(dir);
    if (left != 0)
        fprintf(stderr, "%d files left in %s; stderr:\n%s", left, dir, err);
    CU_ASSERT_EQUAL(left, 0);
    g_free(out);
    g_free(err);
    sv_test_rmtree(tmp);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"default_run", test_default_run},
        {"quick_form", test_quick_form},
        {"bad_values", test_bad_values},
        {"help_lists_options", test_help_lists_options},
        {"determinism", test_determinism},
        {"options_take_effect", test_options_take_effect},
        {"skip_bad_lines", test_skip_bad_lines},
        {"latency_source_not_cwd", test_latency_source_not_cwd},
        {"never_fits", test_never_fits},
        {"mid_run_failure_over_earlier_outputs", test_mid_run_failure_over_earlier_outputs},
        {NULL, NULL},
    };
    sv_test_add_suite("run_cli", cases);
    return sv_test_run();
}
