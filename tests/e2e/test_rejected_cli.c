/* Requests vLLM would reject, and configurations it refuses (issue 13, docs/serving.md "Rejected
 * requests", docs/reliability.md), through `servesim run`:
 *   - a request over the model's context length, or whose whole sequence no instance's KV cache
 *     can ever hold (on a disaggregated cluster: no decode instance's), is recorded as rejected
 *     (requests.csv status and reject_reason, summary.json counts) and the run goes on;
 *   - --strict ends the run on such a request instead (exit 1, no outputs);
 *   - chunked prefill off with a token budget below max_model_len is refused at start with vLLM's
 *     reason; max_model_len (config key or --max-model-len) is vLLM's way out.
 * Expected counts follow from the workloads written here: which requests exceed 4,096 tokens
 * (Llama-2-7B's max_position_embeddings) or ~25,000 tokens (the KV cache of Llama-3.1-8B on
 * 20 GiB at mem_util 0.9: 19.3 GB - 16.1 GB of weights at 128 KiB per token). */
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <json-glib/json-glib.h>
#include <string.h>

static char *write_file(const char *dir, const char *name, const char *text)
{
    char *path = g_build_filename(dir, name, NULL);
    CU_ASSERT_FATAL(g_file_set_contents(path, text, -1, NULL));
    return path;
}

/* One node; each instance "MODEL|GiB|pd_type" (pd_type null, "prefill" or "decode"); `extra`
 * is added to every instance's keys (may be ""). */
static char *cluster(const char *dir, const char *const *inst, int n, const char *extra)
{
    GString *s = g_string_new(NULL);
    g_string_append_printf(s,
                           "{\"num_nodes\": 1, \"link_bw\": 50, \"link_latency\": 500, \"nodes\": "
                           "[{\"num_instances\": %d, \"cpu_mem\": {\"mem_size\": 64, "
                           "\"mem_bw\": 50, \"mem_latency\": 0}, \"instances\": [",
                           n);
    for (int i = 0; i < n; i++) {
        g_auto(GStrv) f = g_strsplit(inst[i], "|", 3);
        g_string_append_printf(s,
                               "%s{\"model_name\": \"%s\", \"hardware\": \"H100\", \"npu_mem\": "
                               "{\"mem_size\": %s, \"mem_bw\": 2000, \"mem_latency\": 0, "
                               "\"mem_util\": 0.9}, \"num_npus\": 1, \"tp_size\": 1, "
                               "\"pd_type\": %s%s}",
                               i ? ", " : "", f[0], f[1], f[2], extra);
    }
    g_string_append(s, "]}]}\n");
    char *path = write_file(dir, "cluster.json", s->str);
    g_string_free(s, TRUE);
    return path;
}

/* requests (input, output) arriving 1 ms apart. */
static char *workload(const char *dir, const int64_t (*req)[2], int n)
{
    GString *s = g_string_new(NULL);
    for (int i = 0; i < n; i++)
        g_string_append_printf(s,
                               "{\"input_toks\": %" G_GINT64_FORMAT
                               ", \"output_toks\": %" G_GINT64_FORMAT
                               ", \"arrival_time_ns\": %d}\n",
                               req[i][0], req[i][1], i * 1000000);
    char *path = write_file(dir, "workload.jsonl", s->str);
    g_string_free(s, TRUE);
    return path;
}

static int run(const char *cl, const char *wl, const char *out, const char *extra, char **err)
{
    const char *argv[] = {
        SV_SERVESIM_BIN, "run",          "--cluster", cl,        "--workload", wl,  "--latency",
        "roofline",      "--output-dir", out,         "--quiet", extra,        NULL};
    char *so = NULL;
    int status = -1;
    CU_ASSERT_FATAL(sv_test_spawn(argv, &so, err, &status));
    g_free(so);
    return status;
}

/* requests.csv as rows of fields (header first). */
static GPtrArray *read_csv(const char *dir)
{
    g_autofree char *path = g_build_filename(dir, "requests.csv", NULL);
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return NULL;
    GPtrArray *rows = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (int i = 0; lines[i] && *lines[i]; i++)
        g_ptr_array_add(rows, g_strsplit(lines[i], ",", -1));
    return rows;
}

static int col(GPtrArray *rows, const char *name)
{
    char **h = rows->pdata[0];
    for (int i = 0; h[i]; i++)
        if (strcmp(h[i], name) == 0)
            return i;
    return -1;
}

static JsonObject *summary(const char *dir, JsonParser **p)
{
    g_autofree char *path = g_build_filename(dir, "summary.json", NULL);
    *p = json_parser_new();
    if (!json_parser_load_from_file(*p, path, NULL))
        return NULL;
    return json_node_get_object(json_parser_get_root(*p));
}

static int64_t jint(JsonObject *o, const char *a, const char *b)
{
    return json_object_get_int_member(json_object_get_object_member(o, a), b);
}

/* Rows 0..n-1 in id order; `rejected[i]` the reason of request i ("" when it must finish). */
static void check_rows(const char *dir, const int64_t (*req)[2], const char *const *reason, int n)
{
    GPtrArray *rows = read_csv(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rows);
    CU_ASSERT_EQUAL_FATAL(rows->len, (guint)n + 1);
    int c_id = col(rows, "request_id"), c_inst = col(rows, "instance"),
        c_in = col(rows, "input_tokens"), c_out = col(rows, "output_tokens"),
        c_first = col(rows, "first_token_ns"), c_ttft = col(rows, "ttft_ns"),
        c_status = col(rows, "status"), c_why = col(rows, "reject_reason");
    CU_ASSERT_FATAL(c_status >= 0 && c_why == c_status + 1);
    CU_ASSERT_FATAL(g_strv_length(rows->pdata[0]) == (guint)c_why + 1); /* the last columns */
    for (int i = 0; i < n; i++) {
        char **f = rows->pdata[i + 1];
        SV_ASSERT_EQ_I64(g_ascii_strtoll(f[c_id], NULL, 10), i);
        SV_ASSERT_EQ_I64(g_ascii_strtoll(f[c_in], NULL, 10), req[i][0]);
        SV_ASSERT_EQ_I64(g_ascii_strtoll(f[c_out], NULL, 10), req[i][1]);
        if (*reason[i]) {
            CU_ASSERT_STRING_EQUAL(f[c_status], "rejected");
            CU_ASSERT_STRING_EQUAL(f[c_why], reason[i]);
            CU_ASSERT_STRING_EQUAL(f[c_inst], ""); /* never routed */
            CU_ASSERT_STRING_EQUAL(f[c_first], "");
            CU_ASSERT_STRING_EQUAL(f[c_ttft], "");
        } else {
            CU_ASSERT_STRING_EQUAL(f[c_status], "finished");
            CU_ASSERT_STRING_EQUAL(f[c_why], "");
            CU_ASSERT(g_ascii_strtoll(f[c_ttft], NULL, 10) > 0);
        }
    }
    g_ptr_array_free(rows, TRUE);
}

/* summary.json: the counts, and token totals over the finished requests only. */
static void check_summary(const char *dir, const int64_t (*req)[2], const char *const *reason,
                          int n)
{
    int64_t fin = 0, ctx = 0, kv = 0, in = 0, out = 0;
    for (int i = 0; i < n; i++) {
        ctx += strcmp(reason[i], "context_length") == 0;
        kv += strcmp(reason[i], "kv_capacity") == 0;
        if (!*reason[i]) {
            fin++;
            in += req[i][0];
            out += req[i][1];
        }
    }
    JsonParser *p = NULL;
    JsonObject *o = summary(dir, &p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    SV_ASSERT_EQ_I64(jint(o, "requests", "arrived"), n);
    SV_ASSERT_EQ_I64(jint(o, "requests", "finished"), fin);
    SV_ASSERT_EQ_I64(jint(o, "requests", "rejected"), ctx + kv);
    SV_ASSERT_EQ_I64(jint(o, "requests", "unfinished"), 0);
    JsonObject *by = json_object_get_object_member(json_object_get_object_member(o, "requests"),
                                                   "rejected_by_reason");
    CU_ASSERT_PTR_NOT_NULL_FATAL(by);
    SV_ASSERT_EQ_I64(json_object_get_int_member(by, "context_length"), ctx);
    SV_ASSERT_EQ_I64(json_object_get_int_member(by, "kv_capacity"), kv);
    SV_ASSERT_EQ_I64(jint(o, "tokens", "input"), in);
    SV_ASSERT_EQ_I64(jint(o, "tokens", "output"), out);
    JsonObject *ttft =
        json_object_get_object_member(json_object_get_object_member(o, "latency_ms"), "ttft");
    SV_ASSERT_EQ_I64(json_object_get_int_member(ttft, "count"), fin);
    g_object_unref(p);
}

/* Llama-2-7B (context 4,096) on 80 GiB: requests 1 and 2 are over the context length (4,000 +
 * 200 > 4,096; a 4,096-token prompt leaves no room for its output token: vLLM's first message),
 * all of them fit the KV cache (~116k tokens). */
static void test_context_length(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    const char *inst[] = {"meta-llama/Llama-2-7B|80|null"};
    g_autofree char *cl = cluster(tmp, inst, 1, "");
    const int64_t req[][2] = {{100, 10}, {4000, 200}, {4096, 1}, {200, 20}, {4000, 96}};
    const char *why[] = {"", "context_length", "context_length", "", ""};
    g_autofree char *wl = workload(tmp, req, 5);
    g_autofree char *out = g_build_filename(tmp, "out", NULL);
    g_autofree char *err = NULL;
    int rc = run(cl, wl, out, NULL, &err);
    if (rc != 0)
        fprintf(stderr, "%s", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    check_rows(out, req, why, 5);
    check_summary(out, req, why, 5);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "2 requests rejected (2 over the context length"));
    /* vLLM's API server's words for the first one. */
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "'max_tokens' or 'max_completion_tokens' is too large: 200. "
                                       "This model's maximum context length is 4096 tokens and "
                                       "your request has 4000 input tokens (200 > 4096 - 4000)."));
    sv_test_rmtree(tmp);
}

/* Llama-3.1-8B (context 131,072) on 20 GiB (~25k tokens of KV): request 1's 60,010 tokens never
 * fit; the others are served. */
static void test_kv_capacity(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    const char *inst[] = {"meta-llama/Llama-3.1-8B|20|null"};
    g_autofree char *cl = cluster(tmp, inst, 1, "");
    const int64_t req[][2] = {{300, 30}, {60000, 10}, {500, 5}};
    const char *why[] = {"", "kv_capacity", ""};
    g_autofree char *wl = workload(tmp, req, 3);
    g_autofree char *out = g_build_filename(tmp, "out", NULL);
    g_autofree char *err = NULL;
    int rc = run(cl, wl, out, NULL, &err);
    if (rc != 0)
        fprintf(stderr, "%s", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    check_rows(out, req, why, 3);
    check_summary(out, req, why, 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "request 1 rejected (kv_capacity)"));

    /* --strict: the same request ends the run, as before issue 13; nothing is written. */
    g_autofree char *out2 = g_build_filename(tmp, "strict", NULL);
    g_autofree char *err2 = NULL;
    CU_ASSERT_EQUAL(run(cl, wl, out2, "--strict", &err2), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err2, "request 1 rejected (kv_capacity)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err2, "--strict"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err2, "cannot finish"));
    g_autofree char *sum2 = g_build_filename(out2, "summary.json", NULL);
    CU_ASSERT_FALSE(g_file_test(sum2, G_FILE_TEST_EXISTS));
    sv_test_rmtree(tmp);
}

/* Disaggregated: the prefill instance (80 GiB) could hold request 1, the only decode instance
 * (20 GiB) never could: rejected at arrival instead of waiting forever for decode memory. */
static void test_pd_decode_too_small(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    const char *inst[] = {"meta-llama/Llama-3.1-8B|80|\"prefill\"",
                          "meta-llama/Llama-3.1-8B|20|\"decode\""};
    g_autofree char *cl = cluster(tmp, inst, 2, "");
    const int64_t req[][2] = {{300, 30}, {60000, 10}, {500, 5}};
    const char *why[] = {"", "kv_capacity", ""};
    g_autofree char *wl = workload(tmp, req, 3);
    g_autofree char *out = g_build_filename(tmp, "out", NULL);
    g_autofree char *err = NULL;
    int rc = run(cl, wl, out, NULL, &err);
    if (rc != 0)
        fprintf(stderr, "%s", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    check_rows(out, req, why, 3);
    check_summary(out, req, why, 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "a prefill instance and a decode instance"));
    sv_test_rmtree(tmp);
}

/* Two decode instances, the first (20 GiB, ~25k tokens) too small for request 1's 30,000 tokens
 * but with room for its 20,000-token prompt, the second (80 GiB) large enough: the request goes to
 * the second and every request is served (the router's least_load tie went to the first, whose
 * reservation then failed and ended the run). */
static void test_pd_two_decode(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    const char *inst[] = {"meta-llama/Llama-3.1-8B|80|\"prefill\"",
                          "meta-llama/Llama-3.1-8B|20|\"decode\"",
                          "meta-llama/Llama-3.1-8B|80|\"decode\""};
    g_autofree char *cl = cluster(tmp, inst, 3, "");
    const int64_t req[][2] = {{300, 30}, {20000, 10000}, {500, 5}};
    const char *why[] = {"", "", ""};
    g_autofree char *wl = workload(tmp, req, 3);
    g_autofree char *out = g_build_filename(tmp, "out", NULL);
    g_autofree char *err = NULL;
    int rc = run(cl, wl, out, NULL, &err);
    if (rc != 0)
        fprintf(stderr, "%s", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    check_rows(out, req, why, 3);
    check_summary(out, req, why, 3);
    GPtrArray *rows = read_csv(out);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rows);
    CU_ASSERT_STRING_EQUAL(((char **)rows->pdata[2])[col(rows, "instance")], "2");
    g_ptr_array_free(rows, TRUE);
    sv_test_rmtree(tmp);
}

/* Chunked prefill off with a budget of 2,048 tokens on Llama-3.1-8B (131,072): vLLM refuses to
 * start; max_model_len 2,048 (key or flag) is accepted, and a longer request is then rejected. */
static void test_chunked_prefill_off(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    const char *inst[] = {"meta-llama/Llama-3.1-8B|80|null"};
    const int64_t req[][2] = {{1000, 10}, {2000, 100}, {500, 5}};
    const char *why[] = {"", "context_length", ""};
    g_autofree char *wl = workload(tmp, req, 3);
    g_autofree char *out = g_build_filename(tmp, "out", NULL);
    {
        g_autofree char *cl = cluster(
            tmp, inst, 1, ", \"enable_chunked_prefill\": false, \"max_num_batched_tokens\": 2048");
        g_autofree char *err = NULL;
        CU_ASSERT_EQUAL(run(cl, wl, out, NULL, &err), 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "instance 0"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "max_num_batched_tokens (2048) is smaller than "
                                           "max_model_len (131072). This effectively limits"));
        CU_ASSERT_FALSE(g_file_test(out, G_FILE_TEST_EXISTS)); /* refused before any output */
        /* --max-model-len 2048 makes it a configuration vLLM accepts. */
        g_autofree char *err2 = NULL;
        const char *argv[] = {SV_SERVESIM_BIN, "run", "--cluster", cl,
                              "--workload",    wl,    "--latency", "roofline",
                              "--output-dir",  out,   "--quiet",   "--max-model-len",
                              "2048",          NULL};
        char *so = NULL;
        int status = -1;
        CU_ASSERT_FATAL(sv_test_spawn(argv, &so, &err2, &status));
        g_free(so);
        CU_ASSERT_EQUAL(status, 0);
        check_rows(out, req, why, 3);
        check_summary(out, req, why, 3);
    }
    {
        /* The same with the instance's max_model_len key. */
        g_autofree char *cl = cluster(tmp, inst, 1,
                                      ", \"enable_chunked_prefill\": false, "
                                      "\"max_num_batched_tokens\": 2048, \"max_model_len\": 2048");
        g_autofree char *err = NULL;
        CU_ASSERT_EQUAL(run(cl, wl, out, NULL, &err), 0);
        check_rows(out, req, why, 3);
    }
    {
        /* Without a budget vLLM takes max_model_len as the budget: accepted, all served. */
        g_autofree char *cl = cluster(tmp, inst, 1, ", \"enable_chunked_prefill\": false");
        g_autofree char *err = NULL;
        CU_ASSERT_EQUAL(run(cl, wl, out, NULL, &err), 0);
        const char *none[] = {"", "", ""};
        check_rows(out, req, none, 3);
    }
    {
        /* A max_model_len above the model's is refused, as vLLM does. */
        g_autofree char *cl = cluster(tmp, inst, 1, ", \"max_model_len\": 200000");
        g_autofree char *err = NULL;
        CU_ASSERT_EQUAL(run(cl, wl, out, NULL, &err), 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "max_position_embeddings (131072)"));
    }
    sv_test_rmtree(tmp);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"context_length", test_context_length},           {"kv_capacity", test_kv_capacity},
        {"pd_decode_too_small", test_pd_decode_too_small}, {"pd_two_decode", test_pd_two_decode},
        {"chunked_prefill_off", test_chunked_prefill_off}, {NULL, NULL},
    };
    sv_test_add_suite("rejected_cli", cases);
    return sv_test_run();
}
