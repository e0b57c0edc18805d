/* Tests for workloads/: readers on the shared traces (expected values read from the files with
 * python3's json/csv/datetime modules, independently of this code), agentic sessions, bad lines,
 * generators (determinism and statistics) and streaming memory. */
#include "tests/test_util.h"
#include "workloads/workloads.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Keep ASan's freed-memory quarantine small so the RSS check measures this code, not the
 * sanitizer's 256 MB default quarantine (ignored when ASan is not linked). */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "quarantine_size_mb=8";
}

#define WL SV_SHARED "/reference/llmservingsim/workloads/"
#define TR SV_SHARED "/traces/"

/* Summary of a whole source, computed by pulling it to the end. */
typedef struct {
    uint64_t items, reqs;
    int64_t sum_in, sum_out, sum_in_ids, sum_out_ids, sum_hash;
    int64_t first_in, first_out, first_arr, last_in, last_out, last_arr;
    uint64_t last_line;
    int rc;
} summary;

static summary drain(sv_wl_source *src)
{
    summary s = {0};
    sv_wl_item it = SV_WL_ITEM_INIT;
    g_autoptr(GError) err = NULL;
    int r;
    while ((r = sv_wl_next(src, &it, &err)) == 1) {
        for (size_t j = 0; j < it.n_reqs; j++) {
            s.sum_in += it.reqs[j].input_tokens;
            s.sum_out += it.reqs[j].output_tokens;
            s.sum_in_ids += (int64_t)it.reqs[j].n_input_tok_ids;
            s.sum_out_ids += (int64_t)it.reqs[j].n_output_tok_ids;
            s.sum_hash += (int64_t)it.reqs[j].n_hash_ids;
        }
        if (s.items == 0) {
            s.first_in = it.reqs[0].input_tokens;
            s.first_out = it.reqs[0].output_tokens;
            s.first_arr = it.arrival_ns;
        }
        s.last_in = it.reqs[0].input_tokens;
        s.last_out = it.reqs[0].output_tokens;
        s.last_arr = it.arrival_ns;
        s.last_line = it.line;
        s.items++;
        s.reqs += it.n_reqs;
    }
    if (r < 0)
        fprintf(stderr, "drain error: %s\n", err ? err->message : "?");
    s.rc = r;
    sv_wl_item_clear(&it);
    return s;
}

static sv_wl_source *open_ok(const char *path, const struct sv_wl_open_opts *o)
{
    g_autoptr(GError) err = NULL;
    sv_wl_source *src = sv_wl_open(path, o, &err);
    if (!src)
        fprintf(stderr, "open %s: %s\n", path, err->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(src);
    return src;
}

/* ---- readers on the shared files -------------------------------------------------------- */

static void test_llmservingsim_example(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim/workloads", "LLMServingSim's workload traces");
    sv_wl_source *src = open_ok(WL "example_trace.jsonl", NULL);
    CU_ASSERT_EQUAL(sv_wl_source_format(src), SV_WL_FORMAT_LLMSERVINGSIM);
    sv_wl_item it = SV_WL_ITEM_INIT;
    CU_ASSERT_EQUAL(sv_wl_next(src, &it, NULL), 1);
    CU_ASSERT_EQUAL(it.kind, SV_WL_ITEM_REQUEST);
    SV_ASSERT_EQ_I64(it.n_reqs, 1);
    SV_ASSERT_EQ_I64(it.reqs[0].request_id, 0);
    SV_ASSERT_EQ_I64(it.arrival_ns, 46926808);
    SV_ASSERT_EQ_I64(it.reqs[0].input_tokens, 10);
    SV_ASSERT_EQ_I64(it.reqs[0].output_tokens, 70);
    SV_ASSERT_EQ_I64(it.reqs[0].n_input_tok_ids, 10);
    SV_ASSERT_EQ_I64(it.reqs[0].n_output_tok_ids, 70);
    SV_ASSERT_EQ_I64(it.reqs[0].input_tok_ids[9], 10);
    SV_ASSERT_EQ_I64(it.reqs[0].output_tok_ids[0], 11);
    SV_ASSERT_EQ_I64(it.reqs[0].output_tok_ids[69], 80);
    SV_ASSERT_EQ_I64(it.line, 1);
    CU_ASSERT_EQUAL(sv_wl_next(src, &it, NULL), 1);
    SV_ASSERT_EQ_I64(it.reqs[0].request_id, 1);
    SV_ASSERT_EQ_I64(it.arrival_ns, 347938952);
    SV_ASSERT_EQ_I64(it.reqs[0].input_tokens, 22);
    /* steal an array: the next call must not free it */
    uint32_t *stolen = it.reqs[0].input_tok_ids;
    it.reqs[0].input_tok_ids = NULL;
    summary s = drain(src);
    CU_ASSERT_EQUAL(s.rc, 0);
    SV_ASSERT_EQ_I64(s.items, 8);
    SV_ASSERT_EQ_I64(s.last_in, 5);
    SV_ASSERT_EQ_I64(s.last_out, 26);
    SV_ASSERT_EQ_I64(s.last_arr, 1026970077);
    SV_ASSERT_EQ_I64(s.last_line, 10);
    SV_ASSERT_EQ_I64(stolen[21], 88);
    g_free(stolen);
    SV_ASSERT_EQ_I64(sv_wl_source_requests(src), 10);
    CU_ASSERT_EQUAL(sv_wl_next(src, &it, NULL), 0); /* stays ended */
    sv_wl_item_clear(&it);
    sv_wl_source_free(src);
}

static void test_llmservingsim_sharegpt(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim/workloads", "LLMServingSim's workload traces");
    sv_wl_source *src = open_ok(WL "sharegpt-llama-3.1-8b-300-sps10.jsonl", NULL);
    sv_wl_item it = SV_WL_ITEM_INIT;
    CU_ASSERT_EQUAL_FATAL(sv_wl_next(src, &it, NULL), 1);
    SV_ASSERT_EQ_I64(it.reqs[0].input_tokens, 2358);
    SV_ASSERT_EQ_I64(it.reqs[0].output_tokens, 531);
    SV_ASSERT_EQ_I64(it.arrival_ns, 46926808);
    SV_ASSERT_EQ_I64(it.reqs[0].n_input_tok_ids, 2358);
    SV_ASSERT_EQ_I64(it.reqs[0].input_tok_ids[0], 5971);
    SV_ASSERT_EQ_I64(it.reqs[0].input_tok_ids[1], 2927);
    SV_ASSERT_EQ_I64(it.reqs[0].input_tok_ids[2], 220);
    sv_wl_item_clear(&it);
    summary s = drain(src);
    CU_ASSERT_EQUAL(s.rc, 0);
    SV_ASSERT_EQ_I64(s.items + 1, 300);
    SV_ASSERT_EQ_I64(s.sum_in + 2358, 257239);
    SV_ASSERT_EQ_I64(s.sum_out + 531, 195753);
    SV_ASSERT_EQ_I64(s.sum_in_ids + 2358, 257239);
    SV_ASSERT_EQ_I64(s.sum_out_ids + 531, 195753);
    SV_ASSERT_EQ_I64(s.last_in, 582);
    SV_ASSERT_EQ_I64(s.last_out, 768);
    SV_ASSERT_EQ_I64(s.last_arr, 29183763203);
    sv_wl_source_free(src);

    /* drop_token_ids keeps the counts and drops the arrays */
    struct sv_wl_open_opts o = {.drop_token_ids = TRUE};
    src = open_ok(WL "sharegpt-llama-3.1-8b-300-sps10.jsonl", &o);
    s = drain(src);
    SV_ASSERT_EQ_I64(s.items, 300);
    SV_ASSERT_EQ_I64(s.sum_in, 257239);
    SV_ASSERT_EQ_I64(s.sum_in_ids, 0);
    sv_wl_source_free(src);
}

static void test_llmservingsim_mixed(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim/workloads", "LLMServingSim's workload traces");
    sv_wl_source *src = open_ok(WL "workload_me2_01_mixed.jsonl", NULL);
    summary s = drain(src);
    CU_ASSERT_EQUAL(s.rc, 0);
    SV_ASSERT_EQ_I64(s.items, 608);
    SV_ASSERT_EQ_I64(s.sum_in, 5604402);
    SV_ASSERT_EQ_I64(s.sum_out, 1837003);
    SV_ASSERT_EQ_I64(s.sum_in_ids, 0);
    SV_ASSERT_EQ_I64(s.first_in, 27369);
    SV_ASSERT_EQ_I64(s.first_out, 1626);
    SV_ASSERT_EQ_I64(s.first_arr, 101537000);
    SV_ASSERT_EQ_I64(s.last_in, 1552);
    SV_ASSERT_EQ_I64(s.last_out, 512);
    SV_ASSERT_EQ_I64(s.last_arr, INT64_C(61000000000));
    sv_wl_source_free(src);
}

static void test_mooncake(void)
{
    SV_REQUIRE_SHARED("traces", "the public Mooncake/Azure traces");
    sv_wl_source *src = open_ok(TR "mooncake_fast25/conversation_trace.jsonl", NULL);
    CU_ASSERT_EQUAL(sv_wl_source_format(src), SV_WL_FORMAT_MOONCAKE);
    sv_wl_item it = SV_WL_ITEM_INIT;
    CU_ASSERT_EQUAL_FATAL(sv_wl_next(src, &it, NULL), 1);
    SV_ASSERT_EQ_I64(it.arrival_ns, 0);
    SV_ASSERT_EQ_I64(it.reqs[0].input_tokens, 6758);
    SV_ASSERT_EQ_I64(it.reqs[0].output_tokens, 500);
    SV_ASSERT_EQ_I64(it.reqs[0].n_hash_ids, 14);
    SV_ASSERT_EQ_I64(it.reqs[0].hash_ids[13], 13);
    SV_ASSERT_EQ_I64(it.reqs[0].hash_block_tokens, 512);
    CU_ASSERT_EQUAL_FATAL(sv_wl_next(src, &it, NULL), 1);
    SV_ASSERT_EQ_I64(it.reqs[0].hash_ids[1], 14);
    sv_wl_item_clear(&it);
    summary s = drain(src);
    CU_ASSERT_EQUAL(s.rc, 0);
    SV_ASSERT_EQ_I64(s.items + 2, 12031);
    SV_ASSERT_EQ_I64(s.sum_in + 6758 + 7322, 144793823);
    SV_ASSERT_EQ_I64(s.sum_out + 500 + 490, 4122048);
    SV_ASSERT_EQ_I64(s.sum_hash + 14 + 15, 288500);
    SV_ASSERT_EQ_I64(s.last_arr, INT64_C(3536999) * 1000000); /* timestamp 3536999 ms */
    SV_ASSERT_EQ_I64(s.last_in, 20774);
    SV_ASSERT_EQ_I64(s.last_out, 508);
    sv_wl_source_free(src);

    /* forced format on the synthetic trace */
    struct sv_wl_open_opts o = {.format = SV_WL_FORMAT_MOONCAKE};
    src = open_ok(TR "mooncake_fast25/synthetic_trace.jsonl", &o);
    s = drain(src);
    CU_ASSERT_EQUAL(s.rc, 0);
    SV_ASSERT_EQ_I64(s.items, 3993);
    SV_ASSERT_EQ_I64(s.sum_in, 61194628);
    SV_ASSERT_EQ_I64(s.sum_out, 595432);
    SV_ASSERT_EQ_I64(s.sum_hash, 121877);
    SV_ASSERT_EQ_I64(s.first_in, 40160);
    SV_ASSERT_EQ_I64(s.first_out, 6);
    SV_ASSERT_EQ_I64(s.last_arr, INT64_C(1022025) * 1000000);
    SV_ASSERT_EQ_I64(s.last_in, 18440);
    SV_ASSERT_EQ_I64(s.last_out, 83);
    sv_wl_source_free(src);
}

static void test_azure(void)
{
    SV_REQUIRE_SHARED("traces", "the public Mooncake/Azure traces");
    sv_wl_source *src = open_ok(TR "azure_llm_2023/AzureLLMInferenceTrace_code.csv", NULL);
    CU_ASSERT_EQUAL(sv_wl_source_format(src), SV_WL_FORMAT_AZURE);
    sv_wl_item it = SV_WL_ITEM_INIT;
    CU_ASSERT_EQUAL_FATAL(sv_wl_next(src, &it, NULL), 1);
    SV_ASSERT_EQ_I64(it.arrival_ns, 0);
    SV_ASSERT_EQ_I64(it.reqs[0].input_tokens, 4808);
    SV_ASSERT_EQ_I64(it.reqs[0].output_tokens, 10);
    SV_ASSERT_EQ_I64(it.line, 2);
    CU_ASSERT_EQUAL_FATAL(sv_wl_next(src, &it, NULL), 1);
    /* 18:17:04.0319600 - 18:17:03.9799600 = 52 ms */
    SV_ASSERT_EQ_I64(it.arrival_ns, 52000000);
    sv_wl_item_clear(&it);
    summary s = drain(src);
    CU_ASSERT_EQUAL(s.rc, 0);
    SV_ASSERT_EQ_I64(s.items + 2, 8819);
    SV_ASSERT_EQ_I64(s.sum_in + 4808 + 3180, 18059974);
    /* 19:14:19.9280160 - 18:17:03.9799600 = 3435.948056 s */
    SV_ASSERT_EQ_I64(s.last_arr, INT64_C(3435948056000));
    SV_ASSERT_EQ_I64(s.last_in, 549);
    SV_ASSERT_EQ_I64(s.last_out, 173);
    sv_wl_source_free(src);

    src = open_ok(TR "azure_llm_2023/AzureLLMInferenceTrace_conv.csv", NULL);
    s = drain(src);
    CU_ASSERT_EQUAL(s.rc, 0);
    SV_ASSERT_EQ_I64(s.items, 19366);
    SV_ASSERT_EQ_I64(s.sum_in, 22361870);
    SV_ASSERT_EQ_I64(s.sum_out, 4088665);
    SV_ASSERT_EQ_I64(s.first_in, 374);
    SV_ASSERT_EQ_I64(s.first_out, 44);
    SV_ASSERT_EQ_I64(s.last_arr, INT64_C(3501721937000)); /* 58 min 21.721937 s */
    SV_ASSERT_EQ_I64(s.last_in, 197);
    SV_ASSERT_EQ_I64(s.last_out, 183);
    sv_wl_source_free(src);
}

/* ---- temp files ------------------------------------------------------------------------- */

static char *write_tmp(const char *dir, const char *name, const char *text)
{
    char *p = g_build_filename(dir, name, NULL);
    CU_ASSERT_FATAL(g_file_set_contents(p, text, -1, NULL));
    return p;
}

static void test_agentic(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *p = write_tmp(
        dir, "a.jsonl",
        "{\"input_toks\": 5, \"output_toks\": 6, \"arrival_time_ns\": 10}\n"
        "{\"session_id\": \"task-0\", \"arrival_time_ns\": 4059740, \"sub_requests\": ["
        "{\"input_toks\": 1472, \"output_toks\": 133, \"tool_duration_ns\": 127348767, "
        "\"input_tok_ids\": [7, 8]},"
        "{\"input_toks\": 1582, \"output_toks\": 125, \"tool_duration_ns\": 0}]}\n"
        "\n"
        "{\"arrival_time_ns\": 4059741, \"sub_requests\": []}\n"
        "{\"arrival_time_ns\": 5000000, \"model\": \"m1\", \"sub_requests\": ["
        "{\"input_toks\": 3, \"output_toks\": 4}, {\"input_toks\": 9, \"output_toks\": 2},"
        "{\"input_toks\": 1, \"output_toks\": 1, \"tool_duration_ns\": 5}]}\n"
        "{\"input_toks\": 8, \"output_toks\": 9, \"arrival_time_ns\": 5000000}\n");
    sv_wl_source *src = open_ok(p, NULL);
    sv_wl_item it = SV_WL_ITEM_INIT;
    CU_ASSERT_EQUAL_FATAL(sv_wl_next(src, &it, NULL), 1);
    CU_ASSERT_EQUAL(it.kind, SV_WL_ITEM_REQUEST);
    CU_ASSERT_PTR_NULL(it.session_id);
    CU_ASSERT_EQUAL_FATAL(sv_wl_next(src, &it, NULL), 1);
    CU_ASSERT_EQUAL(it.kind, SV_WL_ITEM_SESSION);
    SV_ASSERT_EQ_I64(it.index, 1);
    CU_ASSERT_STRING_EQUAL(it.session_id, "task-0");
    SV_ASSERT_EQ_I64(it.arrival_ns, 4059740);
    SV_ASSERT_EQ_I64(it.n_reqs, 2);
    SV_ASSERT_EQ_I64(it.reqs[0].request_id, 1);
    SV_ASSERT_EQ_I64(it.reqs[1].request_id, 2);
    SV_ASSERT_EQ_I64(it.reqs[0].input_tokens, 1472);
    SV_ASSERT_EQ_I64(it.reqs[0].tool_duration_ns, 127348767);
    SV_ASSERT_EQ_I64(it.reqs[0].n_input_tok_ids, 2);
    SV_ASSERT_EQ_I64(it.reqs[0].input_tok_ids[1], 8);
    SV_ASSERT_EQ_I64(it.reqs[1].output_tokens, 125);
    /* the empty session on line 4 contributes nothing */
    CU_ASSERT_EQUAL_FATAL(sv_wl_next(src, &it, NULL), 1);
    SV_ASSERT_EQ_I64(it.line, 5);
    SV_ASSERT_EQ_I64(it.index, 2);
    CU_ASSERT_STRING_EQUAL(it.session_id, "session_3"); /* first call is request 3 */
    CU_ASSERT_STRING_EQUAL(it.model, "m1");
    SV_ASSERT_EQ_I64(it.n_reqs, 3);
    SV_ASSERT_EQ_I64(it.reqs[0].request_id, 3);
    SV_ASSERT_EQ_I64(it.reqs[2].request_id, 5);
    SV_ASSERT_EQ_I64(it.reqs[0].tool_duration_ns, 0); /* absent = 0 */
    SV_ASSERT_EQ_I64(it.reqs[2].tool_duration_ns, 5);
    SV_ASSERT_EQ_I64(it.reqs[1].input_tokens, 9);
    CU_ASSERT_EQUAL_FATAL(sv_wl_next(src, &it, NULL), 1);
    SV_ASSERT_EQ_I64(it.reqs[0].request_id, 6); /* equal arrival is in order */
    SV_ASSERT_EQ_I64(it.index, 3);
    CU_ASSERT_EQUAL(sv_wl_next(src, &it, NULL), 0);
    SV_ASSERT_EQ_I64(sv_wl_source_requests(src), 7);
    SV_ASSERT_EQ_I64(sv_wl_source_items(src), 4);
    sv_wl_item_clear(&it);
    sv_wl_source_free(src);
    sv_test_rmtree(dir);
}

/* Open `text` as `name` and expect the first error to be `code` and contain `expect`
 * (after `good` good items). */
static void expect_error(const char *name, const char *text, int good, int code, const char *expect)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *p = write_tmp(dir, name, text);
    sv_wl_source *src = open_ok(p, NULL);
    sv_wl_item it = SV_WL_ITEM_INIT;
    g_autoptr(GError) err = NULL;
    int r, n = 0;
    while ((r = sv_wl_next(src, &it, &err)) == 1)
        n++;
    CU_ASSERT_EQUAL(r, -1);
    CU_ASSERT_EQUAL(n, good);
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT(g_error_matches(err, SV_WL_ERROR, code));
    g_autofree char *full = g_strdup_printf("%s%s", p, expect);
    if (!strstr(err->message, full))
        fprintf(stderr, "\nmessage '%s' lacks '%s'\n", err->message, full);
    CU_ASSERT_PTR_NOT_NULL(strstr(err->message, full));
    /* a failed source keeps failing */
    g_autoptr(GError) err2 = NULL;
    CU_ASSERT_EQUAL(sv_wl_next(src, &it, &err2), -1);
    CU_ASSERT_PTR_NOT_NULL(err2);
    sv_wl_item_clear(&it);
    sv_wl_source_free(src);
    sv_test_rmtree(dir);
}

#define GOOD "{\"input_toks\": 5, \"output_toks\": 6, \"arrival_time_ns\": 10}\n"

static void test_bad_lines(void)
{
    expect_error("m.jsonl", GOOD "{\"input_toks\": 5, \"arrival_time_ns\": 20}\n", 1,
                 SV_WL_ERROR_BAD_LINE, ":2: missing field 'output_toks'");
    expect_error("t.jsonl",
                 GOOD "{\"input_toks\": \"5\", \"output_toks\": 1, \"arrival_time_ns\": 20}\n", 1,
                 SV_WL_ERROR_BAD_LINE, ":2: field 'input_toks' must be an integer, not a string");
    expect_error("f.jsonl", "{\"input_toks\": 5.5, \"output_toks\": 1, \"arrival_time_ns\": 20}\n",
                 0, SV_WL_ERROR_BAD_LINE, ":1: field 'input_toks' must be an integer");
    expect_error("n.jsonl",
                 GOOD GOOD "{\"input_toks\": 5, \"output_toks\": -2, \"arrival_time_ns\": 20}\n", 2,
                 SV_WL_ERROR_BAD_LINE, ":3: field 'output_toks' is -2, must be >= 1");
    expect_error("na.jsonl", "{\"input_toks\": 5, \"output_toks\": 2, \"arrival_time_ns\": -1}\n",
                 0, SV_WL_ERROR_BAD_LINE, ":1: field 'arrival_time_ns' is -1");
    expect_error("j.jsonl", GOOD "{\"input_toks\": 5, \"output_toks\": 6,\n", 1,
                 SV_WL_ERROR_BAD_LINE, ":2: bad JSON");
    expect_error("arr.jsonl", "[1, 2]\n", 0, SV_WL_ERROR_BAD_LINE,
                 ":1: expected a JSON object, got an array");
    expect_error("ids.jsonl",
                 "{\"input_toks\": 5, \"output_toks\": 6, \"arrival_time_ns\": 1, "
                 "\"input_tok_ids\": [1, -3]}\n",
                 0, SV_WL_ERROR_BAD_LINE, ":1: field 'input_tok_ids[1]' is -3");
    expect_error("s.jsonl",
                 GOOD "{\"arrival_time_ns\": 11, \"sub_requests\": [{\"input_toks\": 1, "
                      "\"output_toks\": 1}, {\"input_toks\": 2}]}\n",
                 1, SV_WL_ERROR_BAD_LINE, ":2: missing field 'sub_requests[1].output_toks'");
    expect_error("td.jsonl",
                 "{\"arrival_time_ns\": 11, \"sub_requests\": [{\"input_toks\": 1, "
                 "\"output_toks\": 1, \"tool_duration_ns\": -4}]}\n",
                 0, SV_WL_ERROR_BAD_LINE, ":1: field 'sub_requests[0].tool_duration_ns' is -4");
    expect_error("o.jsonl",
                 "{\"input_toks\": 5, \"output_toks\": 6, \"arrival_time_ns\": 30}\n" GOOD, 1,
                 SV_WL_ERROR_ORDER, ":2: arrival 10 ns is earlier than the previous arrival 30 ns");
    expect_error(
        "mc.jsonl",
        "{\"timestamp\": 5, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [0]}\n"
        "{\"timestamp\": 6, \"input_length\": 10, \"hash_ids\": [0]}\n",
        1, SV_WL_ERROR_BAD_LINE, ":2: missing field 'output_length'");
    expect_error(
        "mt.jsonl",
        "{\"timestamp\": 5, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [0]}\n"
        "{\"timestamp\": 4, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [0]}\n",
        1, SV_WL_ERROR_ORDER, ":2: arrival 4000000 ns is earlier");
    expect_error("c.csv",
                 "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                 "2023-11-16 18:17:03.9799600,4808,10\n"
                 "2023-11-16 18:17:04.0319600,3180\n",
                 1, SV_WL_ERROR_BAD_LINE, ":3: 2 fields, the header has 3");
    expect_error("ct.csv",
                 "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                 "2023-11-16 18:17:03,48x,10\n",
                 0, SV_WL_ERROR_BAD_LINE, ":2: column 'ContextTokens' must be an integer");
    expect_error("cd.csv",
                 "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                 "2023/11/16 18:17:03,48,10\n",
                 0, SV_WL_ERROR_BAD_LINE, ":2: column 'TIMESTAMP' must be");
    expect_error("co.csv",
                 "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                 "2023-11-16 18:17:03.5,48,10\n"
                 "2023-11-16 18:17:03.25,48,10\n",
                 1, SV_WL_ERROR_ORDER, ":3: arrival -250000000 ns is earlier");
    expect_error("ch.csv", "time,in,out\n1,2,3\n", 0, SV_WL_ERROR_INVALID,
                 ":1: header must name the columns");

    g_autoptr(GError) err = NULL;
    CU_ASSERT_PTR_NULL(sv_wl_open("/nonexistent/x.jsonl", NULL, &err));
    CU_ASSERT(g_error_matches(err, SV_WL_ERROR, SV_WL_ERROR_IO));
}

static void test_skip_bad_lines(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *p =
        write_tmp(dir, "b.jsonl",
                  GOOD "not json\n" GOOD "{\"input_toks\": 1}\n"
                       "{\"input_toks\": 5, \"output_toks\": 0, \"arrival_time_ns\": 20}\n"
                       "{\"input_toks\": 5, \"output_toks\": 7, \"arrival_time_ns\": 20}\n" GOOD);
    struct sv_wl_open_opts o = {.skip_bad_lines = TRUE};
    sv_wl_source *src = open_ok(p, &o);
    sv_wl_item it = SV_WL_ITEM_INIT;
    CU_ASSERT_EQUAL(sv_wl_next(src, &it, NULL), 1);
    CU_ASSERT_EQUAL(sv_wl_next(src, &it, NULL), 1);
    SV_ASSERT_EQ_I64(it.line, 3);
    SV_ASSERT_EQ_I64(it.reqs[0].request_id, 1); /* skipped lines take no number */
    CU_ASSERT_EQUAL(sv_wl_next(src, &it, NULL), 1);
    SV_ASSERT_EQ_I64(it.line, 6);
    SV_ASSERT_EQ_I64(sv_wl_source_bad_lines(src), 3);
    /* the last line (arrival 10 after 20) is out of order: an error even when skipping */
    g_autoptr(GError) err = NULL;
    CU_ASSERT_EQUAL(sv_wl_next(src, &it, &err), -1);
    CU_ASSERT(g_error_matches(err, SV_WL_ERROR, SV_WL_ERROR_ORDER));
    sv_wl_item_clear(&it);
    sv_wl_source_free(src);

    g_autofree char *q = write_tmp(dir, "c.csv",
                                   "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                   "2023-11-16 18:17:03.9799600,4808,10\n"
                                   "2023-11-16 18:17:04,1\n"
                                   "2023-11-16 18:17:05,0,3\n"
                                   "2023-11-16 18:17:06.5,7,9\n");
    src = open_ok(q, &o);
    summary s = drain(src);
    CU_ASSERT_EQUAL(s.rc, 0);
    SV_ASSERT_EQ_I64(s.items, 2);
    SV_ASSERT_EQ_I64(s.last_arr, 2520040000); /* 06.5 - 03.97996 s */
    SV_ASSERT_EQ_I64(sv_wl_source_bad_lines(src), 2);
    sv_wl_source_free(src);
    sv_test_rmtree(dir);
}

/* ---- generators ------------------------------------------------------------------------- */

static sv_wl_source *gen_ok(const struct sv_wl_gen_cfg *cfg)
{
    g_autoptr(GError) err = NULL;
    sv_wl_source *src = sv_wl_generator_new(cfg, &err);
    if (!src)
        fprintf(stderr, "generator: %s\n", err->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(src);
    return src;
}

/* Arrival gaps (s), input and output lengths of n generated requests. */
static void gen_collect(const struct sv_wl_gen_cfg *cfg, double *gaps, int64_t *in, int64_t *out,
                        size_t n)
{
    sv_wl_source *src = gen_ok(cfg);
    sv_wl_item it = SV_WL_ITEM_INIT;
    sv_time prev = cfg->start_ns;
    for (size_t i = 0; i < n; i++) {
        CU_ASSERT_EQUAL_FATAL(sv_wl_next(src, &it, NULL), 1);
        SV_ASSERT_EQ_I64(it.reqs[0].request_id, i);
        if (gaps)
            gaps[i] = (double)(it.arrival_ns - prev) / 1e9;
        prev = it.arrival_ns;
        if (in)
            in[i] = it.reqs[0].input_tokens;
        if (out)
            out[i] = it.reqs[0].output_tokens;
    }
    CU_ASSERT_EQUAL(sv_wl_next(src, &it, NULL), n == cfg->count ? 0 : 1);
    sv_wl_item_clear(&it);
    sv_wl_source_free(src);
}

static void mean_cv(const double *x, size_t n, double *mean, double *cv)
{
    double s = 0, ss = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    *mean = s / (double)n;
    for (size_t i = 0; i < n; i++)
        ss += (x[i] - *mean) * (x[i] - *mean);
    *cv = sqrt(ss / (double)(n - 1)) / *mean;
}

static void test_gen_determinism(void)
{
    enum { N = 500 };
    struct sv_wl_gen_cfg cfg = {.seed = 42,
                                .count = N,
                                .arrival = {SV_WL_ARRIVAL_POISSON, 10.0, 1.0},
                                .input_len = {.kind = SV_WL_LEN_UNIFORM, .lo = 1, .hi = 4096},
                                .output_len = {.kind = SV_WL_LEN_NORMAL, .mean = 300, .sd = 100}};
    double g1[N], g2[N];
    int64_t i1[N], i2[N], o1[N], o2[N];
    gen_collect(&cfg, g1, i1, o1, N);
    gen_collect(&cfg, g2, i2, o2, N);
    CU_ASSERT(memcmp(g1, g2, sizeof g1) == 0);
    CU_ASSERT(memcmp(i1, i2, sizeof i1) == 0);
    CU_ASSERT(memcmp(o1, o2, sizeof o1) == 0);
    cfg.name = "workloads/other";
    gen_collect(&cfg, g2, i2, o2, N);
    CU_ASSERT(memcmp(g1, g2, sizeof g1) != 0);
    CU_ASSERT(memcmp(i1, i2, sizeof i1) != 0);
    CU_ASSERT(memcmp(o1, o2, sizeof o1) != 0);
    cfg.name = NULL;
    cfg.seed = 43;
    gen_collect(&cfg, g2, i2, o2, N);
    CU_ASSERT(memcmp(g1, g2, sizeof g1) != 0);
}

static void test_gen_arrivals(void)
{
    enum { N = 100000 };
    double *g = g_new(double, N);
    double mean, cv;
    /* Poisson at 8 req/s: exponential gaps, mean 0.125 s, CV 1 (standard error of the mean
     * 0.125/sqrt(1e5) = 0.0004 s; 2% tolerance is > 6 standard errors). */
    struct sv_wl_gen_cfg cfg = {.seed = 7,
                                .count = N,
                                .arrival = {SV_WL_ARRIVAL_POISSON, 8.0, 0},
                                .input_len = {.kind = SV_WL_LEN_FIXED, .value = 100},
                                .output_len = {.kind = SV_WL_LEN_FIXED, .value = 10}};
    gen_collect(&cfg, g, NULL, NULL, N);
    mean_cv(g, N, &mean, &cv);
    CU_ASSERT_DOUBLE_EQUAL(mean, 0.125, 0.125 * 0.02);
    CU_ASSERT_DOUBLE_EQUAL(cv, 1.0, 0.03);
    /* Gamma, CV 3 at 2 req/s: mean 0.5 s (heavier tail: 5% tolerance). */
    cfg.arrival = (struct sv_wl_arrival){SV_WL_ARRIVAL_GAMMA, 2.0, 3.0, NULL};
    gen_collect(&cfg, g, NULL, NULL, N);
    mean_cv(g, N, &mean, &cv);
    CU_ASSERT_DOUBLE_EQUAL(mean, 0.5, 0.5 * 0.05);
    CU_ASSERT_DOUBLE_EQUAL(cv, 3.0, 3.0 * 0.07);
    /* Gamma, CV 0.5: smoother than Poisson */
    cfg.arrival = (struct sv_wl_arrival){SV_WL_ARRIVAL_GAMMA, 2.0, 0.5, NULL};
    gen_collect(&cfg, g, NULL, NULL, N);
    mean_cv(g, N, &mean, &cv);
    CU_ASSERT_DOUBLE_EQUAL(mean, 0.5, 0.5 * 0.01);
    CU_ASSERT_DOUBLE_EQUAL(cv, 0.5, 0.5 * 0.03);
    g_free(g);

    /* Fixed at 4 req/s from 1 s: arrivals 1.25, 1.5, 1.75 s ... */
    cfg.arrival = (struct sv_wl_arrival){SV_WL_ARRIVAL_FIXED, 4.0, 0, NULL};
    cfg.count = 3;
    cfg.start_ns = SV_NS_PER_S;
    sv_wl_source *src = gen_ok(&cfg);
    sv_wl_item it = SV_WL_ITEM_INIT;
    const int64_t want[3] = {1250000000, 1500000000, 1750000000};
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(sv_wl_next(src, &it, NULL), 1);
        SV_ASSERT_EQ_I64(it.arrival_ns, want[i]);
        SV_ASSERT_EQ_I64(it.reqs[0].input_tokens, 100);
        SV_ASSERT_EQ_I64(it.reqs[0].output_tokens, 10);
    }
    CU_ASSERT_EQUAL(sv_wl_next(src, &it, NULL), 0);
    sv_wl_item_clear(&it);
    sv_wl_source_free(src);
}

static double mean_i64(const int64_t *x, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)x[i];
    return s / (double)n;
}

static void test_gen_lengths(void)
{
    enum { N = 50000 };
    int64_t *in = g_new(int64_t, N), *out = g_new(int64_t, N);
    struct sv_wl_gen_cfg cfg = {.seed = 3,
                                .count = N,
                                .arrival = {SV_WL_ARRIVAL_POISSON, 5, 0},
                                .input_len = {.kind = SV_WL_LEN_UNIFORM, .lo = 64, .hi = 1024},
                                .output_len = {.kind = SV_WL_LEN_NORMAL, .mean = 2, .sd = 5},
                                .max_input_tokens = 1000};
    gen_collect(&cfg, NULL, in, out, N);
    int64_t lo = INT64_MAX, hi = 0, olo = INT64_MAX, n1000 = 0;
    for (int i = 0; i < N; i++) {
        lo = MIN(lo, in[i]);
        hi = MAX(hi, in[i]);
        olo = MIN(olo, out[i]);
        n1000 += in[i] == 1000;
    }
    SV_ASSERT_EQ_I64(lo, 64);
    SV_ASSERT_EQ_I64(hi, 1000); /* clamped */
    /* P(x >= 1000) = 25/961 on [64, 1024]: expect 1301 of 50000 at the clamp */
    CU_ASSERT(n1000 > 1100 && n1000 < 1500);
    SV_ASSERT_EQ_I64(olo, 1); /* normal clamped to >= 1 */

    /* normal(512, 128): mean within 1% (standard error 128/sqrt(5e4) = 0.6) */
    cfg.max_input_tokens = 0;
    cfg.input_len = (struct sv_wl_len){.kind = SV_WL_LEN_NORMAL, .mean = 512, .sd = 128};
    gen_collect(&cfg, NULL, in, out, N);
    CU_ASSERT_DOUBLE_EQUAL(mean_i64(in, N), 512, 3);

    /* Without Vidur's ShareGPT length file "vidur-sharegpt" falls back to normal distributions.
     */
    if (!g_file_test(SV_SHARED, G_FILE_TEST_IS_DIR)) {
        struct sv_wl_len il = {0}, ol = {0};
        sv_wl_len_vidur_sharegpt(&il, &ol);
        CU_ASSERT_EQUAL(il.kind, SV_WL_LEN_NORMAL);
        CU_ASSERT_EQUAL(ol.kind, SV_WL_LEN_NORMAL);
        CU_ASSERT(il.mean > 0 && il.sd > 0 && ol.mean > 0 && ol.sd > 0);
    }
    if (sv_test_shared("traces/length_distributions", "the ShareGPT length file")) {
        /* ShareGPT empirical, joint: means 2340.03 / 438.71 (python3 statistics.mean over the
         * file); standard errors 2088.8/sqrt(5e4) = 9.3 and 265.6/sqrt(5e4) = 1.2 */
        struct sv_wl_len il = {0}, ol = {0};
        sv_wl_len_vidur_sharegpt(&il, &ol);
        CU_ASSERT_EQUAL(il.kind, SV_WL_LEN_EMPIRICAL);
        cfg.input_len = il;
        cfg.output_len = ol;
        gen_collect(&cfg, NULL, in, out, N);
        CU_ASSERT_DOUBLE_EQUAL(mean_i64(in, N), 2340.03, 40);
        CU_ASSERT_DOUBLE_EQUAL(mean_i64(out, N), 438.71, 5);
        /* joint: every (input, output) pair is a row of the file (read here independently) */
        g_autofree char *text = NULL;
        CU_ASSERT_FATAL(g_file_get_contents(SV_WL_VIDUR_SHAREGPT_LENGTHS, &text, NULL, NULL));
        g_autoptr(GHashTable) rows = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
        for (guint i = 1; lines[i]; i++) {
            g_auto(GStrv) f = g_strsplit(lines[i], ",", 3);
            if (g_strv_length(f) >= 2)
                g_hash_table_add(rows, g_strdup_printf("%s,%s", f[0], f[1]));
        }
        SV_ASSERT_EQ_I64(g_hash_table_size(rows) > 1000, 1);
        int missing = 0;
        for (int i = 0; i < N; i++) {
            char key[64];
            g_snprintf(key, sizeof key, "%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT, in[i], out[i]);
            missing += !g_hash_table_contains(rows, key);
        }
        SV_ASSERT_EQ_I64(missing, 0);
        sv_wl_len_clear(&il);
        sv_wl_len_clear(&ol);

        /* a named column: num_total_tokens mean = 2340.03 + 438.71 */
        g_autoptr(GError) err = NULL;
        CU_ASSERT_FATAL(sv_wl_len_parse(
            "empirical:" SV_WL_VIDUR_SHAREGPT_LENGTHS ":num_total_tokens", TRUE, &il, &err));
        CU_ASSERT_STRING_EQUAL(il.column, "num_total_tokens");
        cfg.input_len = il;
        cfg.output_len = (struct sv_wl_len){.kind = SV_WL_LEN_FIXED, .value = 1};
        gen_collect(&cfg, NULL, in, out, N);
        CU_ASSERT_DOUBLE_EQUAL(mean_i64(in, N), 2778.74, 45);
        sv_wl_len_clear(&il);

        /* a missing column is an error naming it */
        CU_ASSERT_FATAL(
            sv_wl_len_parse("empirical:" SV_WL_VIDUR_SHAREGPT_LENGTHS ":nope", TRUE, &il, NULL));
        cfg.input_len = il;
        CU_ASSERT_PTR_NULL(sv_wl_generator_new(&cfg, &err));
        CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, "no column 'nope'"));
        sv_wl_len_clear(&il);
    }
    g_free(in);
    g_free(out);
}

/* trace:PATH arrivals. A 4-row Azure CSV has gaps 1 s, 1 s, 4 s (mean 2 s); at 1 req/s every
 * gap is scaled by (1 / 1) / 2 = 0.5, so each generated gap is 0.5 s (probability 2/3) or 2 s
 * (1/3), the trace's shape at half its spacing. 3000 draws: the count of 2 s gaps is binomial
 * (n 3000, p 1/3), sd sqrt(3000 x 2/9) = 25.8; 5 sd = 129. */
static void test_gen_trace_arrivals(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *path = write_tmp(dir, "t.csv",
                                      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                      "2023-11-16 18:15:46.0000000,10,2\n"
                                      "2023-11-16 18:15:47.0000000,10,2\n"
                                      "2023-11-16 18:15:48.0000000,10,2\n"
                                      "2023-11-16 18:15:52.0000000,10,2\n");
    g_autofree char *spec = g_strconcat("trace:", path, NULL);
    struct sv_wl_gen_cfg cfg = {.seed = 3,
                                .count = 3000,
                                .input_len = {.kind = SV_WL_LEN_FIXED, .value = 8},
                                .output_len = {.kind = SV_WL_LEN_FIXED, .value = 4}};
    CU_ASSERT_FATAL(sv_wl_arrival_parse(spec, 1.0, &cfg.arrival, NULL));
    CU_ASSERT_EQUAL(cfg.arrival.kind, SV_WL_ARRIVAL_TRACE);
    CU_ASSERT_STRING_EQUAL(cfg.arrival.trace_path, path);
    double *gaps = g_new(double, 3000);
    gen_collect(&cfg, gaps, NULL, NULL, 3000);
    int longg = 0, other = 0;
    for (int i = 0; i < 3000; i++) {
        if (fabs(gaps[i] - 2.0) <= 2e-9)
            longg++;
        else if (fabs(gaps[i] - 0.5) > 2e-9)
            other++;
    }
    SV_ASSERT_EQ_I64(other, 0);
    CU_ASSERT(longg >= 1000 - 129 && longg <= 1000 + 129);
    /* Same seed, same gaps; rate 4 req/s divides every gap by 4. */
    double *g4 = g_new(double, 3000);
    cfg.arrival.rate_per_s = 4.0;
    gen_collect(&cfg, g4, NULL, NULL, 3000);
    for (int i = 0; i < 3000; i++)
        CU_ASSERT(fabs(g4[i] * 4 - gaps[i]) <= 1e-8);
    g_free(gaps);
    g_free(g4);
    /* A trace with one arrival has no gap; a missing file fails with its name. */
    g_autofree char *one = write_tmp(dir, "one.csv",
                                     "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                     "2023-11-16 18:15:46.0000000,10,2\n");
    g_autoptr(GError) err = NULL;
    cfg.arrival.trace_path = one;
    CU_ASSERT_PTR_NULL(sv_wl_generator_new(&cfg, &err));
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, "at least two arrivals"));
    g_clear_error(&err);
    cfg.arrival.trace_path = "/nonexistent/trace.csv";
    CU_ASSERT_PTR_NULL(sv_wl_generator_new(&cfg, &err));
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, "/nonexistent/trace.csv"));
    g_clear_error(&err);
    CU_ASSERT_FALSE(sv_wl_arrival_parse("trace:", 1.0, &cfg.arrival, NULL));
    sv_test_rmtree(dir);
}

static void test_spec_parse(void)
{
    struct sv_wl_arrival a;
    struct sv_wl_len l = {0};
    CU_ASSERT(sv_wl_arrival_parse("poisson", 3, &a, NULL));
    CU_ASSERT_EQUAL(a.kind, SV_WL_ARRIVAL_POISSON);
    CU_ASSERT(sv_wl_arrival_parse("gamma:2.5", 3, &a, NULL));
    CU_ASSERT_EQUAL(a.kind, SV_WL_ARRIVAL_GAMMA);
    CU_ASSERT_DOUBLE_EQUAL(a.cv, 2.5, 0);
    CU_ASSERT(sv_wl_arrival_parse("fixed", 3, &a, NULL));
    CU_ASSERT_FALSE(sv_wl_arrival_parse("gamma:0", 3, &a, NULL));
    CU_ASSERT_FALSE(sv_wl_arrival_parse("gamma:x", 3, &a, NULL));
    CU_ASSERT_FALSE(sv_wl_arrival_parse("weibull", 3, &a, NULL));
    CU_ASSERT_FALSE(sv_wl_arrival_parse("poisson", 0, &a, NULL));

    CU_ASSERT(sv_wl_len_parse("512", TRUE, &l, NULL));
    CU_ASSERT(l.kind == SV_WL_LEN_FIXED && l.value == 512);
    CU_ASSERT(sv_wl_len_parse("fixed:7", TRUE, &l, NULL));
    CU_ASSERT(l.kind == SV_WL_LEN_FIXED && l.value == 7);
    CU_ASSERT(sv_wl_len_parse("uniform:64:1024", TRUE, &l, NULL));
    CU_ASSERT(l.kind == SV_WL_LEN_UNIFORM && l.lo == 64 && l.hi == 1024);
    CU_ASSERT(sv_wl_len_parse("normal:512:128", TRUE, &l, NULL));
    CU_ASSERT(l.kind == SV_WL_LEN_NORMAL && l.mean == 512 && l.sd == 128);
    CU_ASSERT(sv_wl_len_parse("empirical:/a:b/x.csv", TRUE, &l, NULL));
    CU_ASSERT_STRING_EQUAL(l.path, "/a:b/x.csv");
    CU_ASSERT_PTR_NULL(l.column);
    CU_ASSERT(sv_wl_len_parse("empirical:x.csv:num_decode_tokens", FALSE, &l, NULL));
    CU_ASSERT_STRING_EQUAL(l.path, "x.csv");
    CU_ASSERT_STRING_EQUAL(l.column, "num_decode_tokens");
    CU_ASSERT(sv_wl_len_parse("sharegpt", FALSE, &l, NULL));
    /* built in: the same with or without the reference data */
    CU_ASSERT(l.kind == SV_WL_LEN_QUANTILES && l.n_quantiles == 101 && l.quantiles);
    CU_ASSERT(sv_wl_len_parse("vidur-sharegpt", FALSE, &l, NULL));
    /* empirical from the ShareGPT length file, normal with its moments where it is absent */
    CU_ASSERT_EQUAL(l.kind, g_file_test(SV_WL_VIDUR_SHAREGPT_LENGTHS, G_FILE_TEST_IS_REGULAR)
                                ? SV_WL_LEN_EMPIRICAL
                                : SV_WL_LEN_NORMAL);
    g_autoptr(GError) err = NULL;
    CU_ASSERT_FALSE(sv_wl_len_parse("uniform:10:5", TRUE, &l, &err));
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, "length 'uniform:10:5'"));
    CU_ASSERT_FALSE(sv_wl_len_parse("0", TRUE, &l, NULL));
    CU_ASSERT_FALSE(sv_wl_len_parse("normal:5:-1", TRUE, &l, NULL));
    CU_ASSERT_FALSE(sv_wl_len_parse("lognormal:5:1", TRUE, &l, NULL));
    CU_ASSERT_FALSE(sv_wl_len_parse("empirical:", TRUE, &l, NULL));
    sv_wl_len_clear(&l);

    sv_wl_format f;
    CU_ASSERT(sv_wl_format_parse("mooncake", &f, NULL) && f == SV_WL_FORMAT_MOONCAKE);
    CU_ASSERT(sv_wl_format_parse("azure", &f, NULL) && f == SV_WL_FORMAT_AZURE);
    CU_ASSERT_FALSE(sv_wl_format_parse("csv2", &f, NULL));
}

/* ---- documented ranges (docs/workloads.md, docs/reliability.md) -------------------------- */

static void test_ranges(void)
{
    /* An Azure row 240 years after the first: ns since the epoch would overflow int64 (the year
     * 2262); the offset is past the engine's horizon and says so. */
    expect_error("y.csv",
                 "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                 "2023-11-16 18:15:46.6805900,100,10\n"
                 "2263-11-16 18:15:46.6805900,100,10\n",
                 1, SV_WL_ERROR_BAD_LINE,
                 ":3: column 'TIMESTAMP' '2263-11-16 18:15:46.6805900' is 7573651200 s from the "
                 "first row's; arrivals are offsets from it within the engine's horizon of "
                 "288230376 s");
    /* a year-9999 first row alone is fine: only offsets matter */
    expect_error("y1.csv",
                 "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                 "9999-12-31 23:59:59.999999999,100,10\n"
                 "9999-12-31 23:59:59.999999999,100,0x10\n",
                 1, SV_WL_ERROR_BAD_LINE, ":3: column 'GeneratedTokens' must be an integer");
    expect_error("t.csv",
                 "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                 "2023-11-16 18:15:46,16777217,10\n",
                 0, SV_WL_ERROR_BAD_LINE,
                 ":2: column 'ContextTokens': 16777217 is above the maximum 16777216");

    /* Specs: decimal numbers within the ranges. */
    struct sv_wl_len l = {0};
    struct sv_wl_arrival a;
    g_autoptr(GError) err = NULL;
    CU_ASSERT_FALSE(sv_wl_len_parse("uniform:1:99999999999", TRUE, &l, &err));
    CU_ASSERT_PTR_NOT_NULL(err &&
                           strstr(err->message, "99999999999 is above the maximum 16777216"));
    g_clear_error(&err);
    CU_ASSERT_FALSE(sv_wl_len_parse("0x10", TRUE, &l, NULL));
    CU_ASSERT_FALSE(sv_wl_len_parse("normal:1e300:1", TRUE, &l, NULL));
    CU_ASSERT_TRUE(sv_wl_len_parse("16777216", TRUE, &l, NULL));
    sv_wl_len_clear(&l);
    CU_ASSERT_FALSE(sv_wl_arrival_parse("poisson", 1e-12, &a, &err));
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, "1e-12 is below the minimum 1e-06"));
    g_clear_error(&err);
    CU_ASSERT_FALSE(sv_wl_arrival_parse("gamma:inf", 1, &a, NULL));
    CU_ASSERT_FALSE(sv_wl_arrival_parse("gamma:1e9", 1, &a, NULL));

    /* A rate in range, too low for the count: the request that would arrive past the horizon
     * (2^58 ns = 288230376 s) is an error naming it, not an event the engine refuses. At a
     * fixed 1e-6 req/s the k-th request (from 0) arrives at (k + 1) x 10^6 s: request 288 at
     * 2.89e8 s is the first past it. */
    struct sv_wl_gen_cfg cfg = {.seed = 1,
                                .count = 1000,
                                .arrival = {SV_WL_ARRIVAL_FIXED, 1e-6, 0, NULL},
                                .input_len = {.kind = SV_WL_LEN_FIXED, .value = 10},
                                .output_len = {.kind = SV_WL_LEN_FIXED, .value = 1}};
    sv_wl_source *src = sv_wl_generator_new(&cfg, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(src);
    sv_wl_item it = SV_WL_ITEM_INIT;
    int r, n = 0;
    while ((r = sv_wl_next(src, &it, &err)) == 1) {
        CU_ASSERT(it.arrival_ns <= SV_ENGINE_HORIZON);
        n++;
    }
    CU_ASSERT_EQUAL(r, -1);
    CU_ASSERT_EQUAL(n, 288);
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, "generated request 288 of 1000 would arrive "
                                                       "at 2.89e+08 s, past the engine's horizon"));
    sv_wl_item_clear(&it);
    sv_wl_source_free(src);
}

/* ---- streaming memory ------------------------------------------------------------------- */

static int64_t rss_kb(void)
{
    g_autofree char *s = NULL;
    if (!g_file_get_contents("/proc/self/status", &s, NULL, NULL))
        return -1;
    const char *p = strstr(s, "VmRSS:");
    return p ? g_ascii_strtoll(p + 6, NULL, 10) : -1;
}

static void test_streaming_memory(void)
{
    enum { LINES = 1000000, IDS = 16 };
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *p = g_build_filename(dir, "big.jsonl", NULL);
    FILE *fp = fopen(p, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    for (int i = 0; i < LINES; i++) {
        fprintf(fp,
                "{\"input_toks\":%d,\"output_toks\":%d,\"arrival_time_ns\":%d,"
                "\"input_tok_ids\":[",
                100 + i % 50, 1 + i % 7, i * 10);
        for (int k = 0; k < IDS; k++)
            fprintf(fp, "%s%d", k ? "," : "", (i + k) % 32000);
        fputs("]}\n", fp);
    }
    CU_ASSERT_EQUAL_FATAL(fclose(fp), 0);
    sv_wl_source *src = open_ok(p, NULL);
    sv_wl_item it = SV_WL_ITEM_INIT;
    int64_t base = 0, peak = 0, sum_ids = 0, last_arr = -1;
    int n = 0, r;
    while ((r = sv_wl_next(src, &it, NULL)) == 1) {
        sum_ids += (int64_t)it.reqs[0].n_input_tok_ids;
        last_arr = it.arrival_ns;
        if (++n == 10000)
            base = rss_kb();
        if (n % 100000 == 0)
            peak = MAX(peak, rss_kb());
    }
    CU_ASSERT_EQUAL(r, 0);
    SV_ASSERT_EQ_I64(n, LINES);
    SV_ASSERT_EQ_I64(sum_ids, (int64_t)LINES * IDS);
    SV_ASSERT_EQ_I64(last_arr, (int64_t)(LINES - 1) * 10);
    SV_ASSERT_EQ_I64(it.n_reqs, 0); /* the end clears the item */
    /* The file is ~110 MB and its token ids alone are 64 MB in memory; streaming must stay
     * flat after warm-up. 16 MB leaves room for allocator and sanitizer bookkeeping. */
    fprintf(stderr,
            "\n  streaming 1e6 lines: RSS %" G_GINT64_FORMAT
            " kB after 1e4 lines, peak %" G_GINT64_FORMAT " kB ",
            base, peak);
    CU_ASSERT(base > 0 && peak - base < 16 * 1024);
    sv_wl_item_clear(&it);
    sv_wl_source_free(src);
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case readers[] = {
        {"llmservingsim example", test_llmservingsim_example},
        {"llmservingsim sharegpt 300", test_llmservingsim_sharegpt},
        {"llmservingsim mixed 608", test_llmservingsim_mixed},
        {"mooncake", test_mooncake},
        {"azure", test_azure},
        {"agentic sessions", test_agentic},
        {"bad lines", test_bad_lines},
        {"skip bad lines", test_skip_bad_lines},
        {"streaming memory", test_streaming_memory},
        {"documented ranges", test_ranges},
        {NULL, NULL},
    };
    static const sv_test_case gens[] = {
        {"determinism", test_gen_determinism},
        {"arrivals", test_gen_arrivals},
        {"lengths", test_gen_lengths},
        {"spec strings", test_spec_parse},
        {"trace arrivals", test_gen_trace_arrivals},
        {NULL, NULL},
    };
    sv_test_add_suite("workloads readers", readers);
    sv_test_add_suite("workloads generators", gens);
    return sv_test_run();
}
