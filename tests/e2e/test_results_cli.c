/* Issue 14, through `servesim run`: run.json beside summary.json (argv, seed, version, the
 * cluster file's hash and content), byte-identical for an identical run, mode 0644 under umask
 * 022; summary.json's vLLM keys agree with requests.csv (computed here from its rows) and its
 * instance KV bytes with the model's KV size per token; bad --goodput / --metric-percentiles are
 * usage errors that leave no output. Roofline only: nothing from ../shared. */
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "tests/test_util.h"

#define ASSERT_NEAR(a, b, tol) CU_ASSERT(fabs((double)(a) - (double)(b)) <= (tol))

static int run(const char *const *args, char **err_out)
{
    g_autofree char *out = NULL;
    char *err = NULL;
    int status = -1;
    if (!sv_test_servesim(SV_SERVESIM_BIN, "run", args, &out, &err, &status))
        status = -1;
    if (err_out)
        *err_out = err;
    else
        g_free(err);
    return status;
}

static char *slurp(const char *dir, const char *name, gsize *len)
{
    g_autofree char *p = g_build_filename(dir, name, NULL);
    char *t = NULL;
    if (!g_file_get_contents(p, &t, len, NULL))
        return NULL;
    return t;
}

static JsonObject *parse(JsonParser *p, const char *text)
{
    if (!text || !json_parser_load_from_data(p, text, -1, NULL))
        return NULL;
    return json_node_get_object(json_parser_get_root(p));
}

static void test_run_json_and_keys(void)
{
    mode_t old = umask(022);
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *dir = g_build_filename(tmp, "out", NULL);
    g_autofree char *wl = g_build_filename(tmp, "wl.jsonl", NULL);
    /* first arrival at 5 ms: vLLM's duration starts there, the makespan at 0 */
    const char *text = "{\"input_toks\": 100, \"output_toks\": 10, \"arrival_time_ns\": 5000000}\n"
                       "{\"input_toks\": 300, \"output_toks\": 1, \"arrival_time_ns\": 6000000}\n"
                       "{\"input_toks\": 50, \"output_toks\": 40, \"arrival_time_ns\": 9000000}\n";
    CU_ASSERT_FATAL(g_file_set_contents(wl, text, -1, NULL));
    g_autofree char *cl = sv_test_write_cluster(tmp, "meta-llama/Llama-3.1-8B", "H100-SXM", 80);
    const char *args[] = {"--cluster",
                          cl,
                          "--workload",
                          wl,
                          "--latency",
                          "roofline",
                          "--quiet",
                          "--seed",
                          "3",
                          "--goodput",
                          "ttft:1000000",
                          "--metric-percentiles",
                          "50,99",
                          "--output-dir",
                          dir,
                          NULL};
    CU_ASSERT_EQUAL_FATAL(run(args, NULL), 0);
    gsize len1 = 0, slen1 = 0;
    g_autofree char *rj1 = slurp(dir, "run.json", &len1);
    g_autofree char *sum1 = slurp(dir, "summary.json", &slen1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rj1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sum1);
    /* an identical run (same folder, same command) writes the same bytes */
    CU_ASSERT_EQUAL_FATAL(run(args, NULL), 0);
    g_autofree char *rj2 = slurp(dir, "run.json", NULL);
    g_autofree char *sum2 = slurp(dir, "summary.json", NULL);
    CU_ASSERT_STRING_EQUAL(rj1, rj2);
    CU_ASSERT_STRING_EQUAL(sum1, sum2);
    umask(old);
    const char *names[] = {"run.json", "summary.json", "requests.csv", "timeseries.csv"};
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        g_autofree char *p = g_build_filename(dir, names[i], NULL);
        GStatBuf st;
        CU_ASSERT_EQUAL_FATAL(g_stat(p, &st), 0);
        CU_ASSERT_EQUAL(st.st_mode & 0777, 0644);
    }

    g_autoptr(JsonParser) pr = json_parser_new();
    JsonObject *r = parse(pr, rj1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    JsonArray *av = json_object_get_array_member(r, "argv");
    CU_ASSERT_EQUAL_FATAL(json_array_get_length(av), 2 + G_N_ELEMENTS(args) - 1);
    CU_ASSERT_STRING_EQUAL(json_array_get_string_element(av, 0), "servesim");
    CU_ASSERT_STRING_EQUAL(json_array_get_string_element(av, 1), "run");
    for (size_t i = 0; args[i]; i++) /* as given, in order */
        CU_ASSERT_STRING_EQUAL(json_array_get_string_element(av, (guint)i + 2), args[i]);
    SV_ASSERT_EQ_I64(json_object_get_int_member(r, "seed"), 3);
    CU_ASSERT(strlen(json_object_get_string_member(r, "servesim_version")) > 0);
    JsonObject *cf = json_object_get_object_member(r, "cluster_file");
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cf, "path"), cl);
    g_autofree char *ctext = NULL;
    gsize clen = 0;
    CU_ASSERT_FATAL(g_file_get_contents(cl, &ctext, &clen, NULL));
    g_autofree char *sha = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (guchar *)ctext, clen);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(cf, "sha256"), sha);
    SV_ASSERT_EQ_I64(json_object_get_int_member(cf, "bytes"), (gint64)clen);
    CU_ASSERT(json_object_has_member(json_object_get_object_member(cf, "content"), "nodes"));
    JsonObject *wf = json_object_get_object_member(r, "workload_file");
    SV_ASSERT_EQ_I64(json_object_get_int_member(wf, "bytes"), (gint64)strlen(text));
    JsonObject *i0 = json_array_get_object_element(json_object_get_array_member(r, "instances"), 0);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(i0, "latency_source"), "roofline");
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(i0, "role"), "both");

    /* summary.json's vLLM keys from requests.csv's rows, computed here */
    g_autoptr(JsonParser) ps = json_parser_new();
    JsonObject *s = parse(ps, sum1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    g_autofree char *csv = slurp(dir, "requests.csv", NULL);
    g_auto(GStrv) lines = g_strsplit(csv, "\n", -1);
    double ttft[3], e2e[3], first_arr = 1e30, last_done = 0;
    int64_t in = 0, out = 0;
    int n = 0;
    for (int i = 1; lines[i] && *lines[i]; i++, n++) {
        g_auto(GStrv) f = g_strsplit(lines[i], ",", -1);
        /* arrival_ns 2, last_token_ns 5, input 6, output 7, ttft_ns 10, e2e_ns 12 */
        first_arr = MIN(first_arr, g_ascii_strtod(f[2], NULL));
        last_done = MAX(last_done, g_ascii_strtod(f[5], NULL));
        in += g_ascii_strtoll(f[6], NULL, 10);
        out += g_ascii_strtoll(f[7], NULL, 10);
        ttft[n] = g_ascii_strtod(f[10], NULL) / 1e6;
        e2e[n] = g_ascii_strtod(f[12], NULL) / 1e6;
    }
    CU_ASSERT_EQUAL_FATAL(n, 3);
    ASSERT_NEAR(first_arr, 5e6, 0);
    double dur = (last_done - first_arr) / 1e9;
    ASSERT_NEAR(json_object_get_double_member(s, "duration"), dur, 1e-12);
    SV_ASSERT_EQ_I64(json_object_get_int_member(s, "completed"), 3);
    SV_ASSERT_EQ_I64(json_object_get_int_member(s, "total_input_tokens"), 450);
    SV_ASSERT_EQ_I64(json_object_get_int_member(s, "total_output_tokens"), 51);
    SV_ASSERT_EQ_I64(in, 450);
    SV_ASSERT_EQ_I64(out, 51);
    ASSERT_NEAR(json_object_get_double_member(s, "request_throughput"), 3 / dur, 1e-9);
    ASSERT_NEAR(json_object_get_double_member(s, "total_token_throughput"), 501 / dur, 1e-9);
    /* every request meets a 1000 s TTFT */
    ASSERT_NEAR(json_object_get_double_member(s, "request_goodput"), 3 / dur, 1e-9);
    double mt = (ttft[0] + ttft[1] + ttft[2]) / 3, me = (e2e[0] + e2e[1] + e2e[2]) / 3;
    double vt = 0;
    for (int i = 0; i < 3; i++)
        vt += (ttft[i] - mt) * (ttft[i] - mt) / 3;
    ASSERT_NEAR(json_object_get_double_member(s, "mean_ttft_ms"), mt, 1e-9);
    ASSERT_NEAR(json_object_get_double_member(s, "std_ttft_ms"), sqrt(vt), 1e-9);
    ASSERT_NEAR(json_object_get_double_member(s, "mean_e2el_ms"), me, 1e-9);
    /* median of three: the middle one */
    double lo = MIN(MIN(e2e[0], e2e[1]), e2e[2]), hi = MAX(MAX(e2e[0], e2e[1]), e2e[2]);
    ASSERT_NEAR(json_object_get_double_member(s, "median_e2el_ms"),
                e2e[0] + e2e[1] + e2e[2] - lo - hi, 1e-9);
    CU_ASSERT(json_object_has_member(s, "p50_itl_ms") && json_object_has_member(s, "p99_tpot_ms"));
    /* TPOT: one request has a single output token: over the other two only */
    CU_ASSERT(json_object_has_member(s, "mean_tpot_ms"));
    /* the instance's KV pool in bytes: Llama-3.1-8B keeps K and V of 8 KV heads x 128 dims in
     * bf16 in 32 layers: 2 x 8 x 128 x 2 x 32 = 131072 bytes per token */
    JsonObject *si = json_array_get_object_element(json_object_get_array_member(s, "instances"), 0);
    int64_t tokens = json_object_get_int_member(si, "kv_tokens");
    CU_ASSERT(tokens > 0);
    SV_ASSERT_EQ_I64(json_object_get_int_member(si, "kv_bytes"), tokens * 131072);
    SV_ASSERT_EQ_I64(tokens, json_object_get_int_member(si, "kv_blocks") *
                                 json_object_get_int_member(si, "kv_block_size"));
    SV_ASSERT_EQ_I64(json_object_get_int_member(si, "requests_served"), 3);
    SV_ASSERT_EQ_I64(json_object_get_int_member(si, "input_tokens"), 450);
    SV_ASSERT_EQ_I64(json_object_get_int_member(si, "output_tokens"), 51);

    /* a bad flag is a usage error (2) naming it; the earlier outputs stay, none is added */
    const char *bad[][2] = {{"--goodput", "ttft:x"}, {"--metric-percentiles", "200"}};
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        const char *b[] = {"--cluster", cl,        "--workload", wl,        "--latency",
                           "roofline",  "--quiet", bad[i][0],    bad[i][1], "--output-dir",
                           dir,         NULL};
        g_autofree char *err = NULL;
        CU_ASSERT_EQUAL(run(b, &err), 2);
        CU_ASSERT(err && strstr(err, bad[i][0]) != NULL);
        g_autofree char *still = slurp(dir, "run.json", NULL);
        CU_ASSERT_STRING_EQUAL(still, rj1);
    }
    sv_test_rmtree(tmp);
}

/* run.json and summary.json record the limits each instance ran with, resolved once: the flags
 * given (the first run), else what `vllm serve` picks for the device (docs/serving.md: an H100,
 * >= 70 GiB: max_num_seqs 1024, max_num_batched_tokens 8192; chunked prefill and prefix caching
 * on; max_model_len the model's max_position_embeddings, 131072 for Llama-3.1-8B; block 16). */
static void check_resolved(JsonObject *inst, const char *engine, gint64 seqs, gint64 tokens,
                           gint64 threshold, gint64 model_len, gint64 block, gboolean caching)
{
    CU_ASSERT_FATAL(inst != NULL);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(inst, "engine"), engine);
    CU_ASSERT_EQUAL(json_object_get_int_member(inst, "max_num_seqs"), seqs);
    CU_ASSERT_EQUAL(json_object_get_int_member(inst, "max_num_batched_tokens"), tokens);
    CU_ASSERT_EQUAL(json_object_get_int_member(inst, "long_prefill_token_threshold"), threshold);
    CU_ASSERT_EQUAL(json_object_get_int_member(inst, "max_model_len"), model_len);
    if (json_object_has_member(inst, "block_size"))
        CU_ASSERT_EQUAL(json_object_get_int_member(inst, "block_size"), block);
    CU_ASSERT(json_object_get_boolean_member(inst, "enable_chunked_prefill"));
    CU_ASSERT_EQUAL(json_object_get_boolean_member(inst, "enable_prefix_caching"), caching);
}

static void test_resolved_limits(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    for (int k = 0; k < 2; k++) {
        g_autofree char *dir = g_build_filename(tmp, k ? "defaults" : "flags", NULL);
        const char *flags[] = {"--model",
                               "meta-llama/Llama-3.1-8B",
                               "--hardware",
                               "H100-SXM",
                               "--requests",
                               "10",
                               "--quiet",
                               "--output-dir",
                               dir,
                               k ? NULL : "--max-num-seqs",
                               "7",
                               "--max-num-batched-tokens",
                               "300",
                               "--block-size",
                               "32",
                               "--no-prefix-caching",
                               "--max-model-len",
                               "4096",
                               "--long-prefill-token-threshold",
                               "64",
                               "--engine",
                               "vllm-0.10",
                               NULL};
        CU_ASSERT_FATAL(run(flags, NULL) == 0);
        g_autofree char *rj = slurp(dir, "run.json", NULL);
        g_autofree char *sj = slurp(dir, "summary.json", NULL);
        g_autoptr(JsonParser) pr = json_parser_new();
        g_autoptr(JsonParser) ps = json_parser_new();
        JsonObject *r = parse(pr, rj), *s = parse(ps, sj);
        CU_ASSERT_FATAL(r != NULL && s != NULL);
        JsonObject *ri =
            json_array_get_object_element(json_object_get_array_member(r, "instances"), 0);
        JsonObject *res = json_object_get_object_member(ri, "resolved");
        JsonObject *si =
            json_array_get_object_element(json_object_get_array_member(s, "instances"), 0);
        if (k == 0) {
            check_resolved(res, "vllm-0.10", 7, 300, 64, 4096, 32, FALSE);
            check_resolved(si, "vllm-0.10", 7, 300, 64, 4096, 32, FALSE);
        } else {
            check_resolved(res, "vllm-0.19", 1024, 8192, 0, 131072, 16, TRUE);
            check_resolved(si, "vllm-0.19", 1024, 8192, 0, 131072, 16, TRUE);
        }
        /* the pool: kv_blocks agrees between the two files */
        CU_ASSERT_EQUAL(json_object_get_int_member(res, "kv_blocks"),
                        json_object_get_int_member(si, "kv_blocks"));
    }
    sv_test_rmtree(tmp);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"run_json_and_vllm_keys", test_run_json_and_keys},
        {"resolved_limits", test_resolved_limits},
        {NULL, NULL},
    };
    sv_test_add_suite("results_cli", cases);
    return sv_test_run();
}
