/* Agentic sessions (LLMServingSim JSONL "sub_requests", read by workloads/jsonl.c) through the
 * run loop end to end: `servesim run` on a tiny trace written here. A session's call j + 1 is
 * released when call j has produced its last token plus call j's tool_duration_ns, so in
 * requests.csv arrival(j + 1) = last_token(j) + tool(j), exactly; the first call arrives at the
 * line's arrival time. */
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <string.h>

/* One requests.csv row, found by its (distinct) input token count. */
struct row {
    long long arrival, first_sched, first_token, last_token, out_tokens;
};

static gboolean find_row(char **lines, long long input_tokens, struct row *r)
{
    for (int i = 1; lines[i] && *lines[i]; i++) {
        g_auto(GStrv) f = g_strsplit(lines[i], ",", -1);
        if (g_strv_length(f) < 8 || g_ascii_strtoll(f[6], NULL, 10) != input_tokens)
            continue;
        r->arrival = g_ascii_strtoll(f[2], NULL, 10);
        r->first_sched = g_ascii_strtoll(f[3], NULL, 10);
        r->first_token = g_ascii_strtoll(f[4], NULL, 10);
        r->last_token = g_ascii_strtoll(f[5], NULL, 10);
        r->out_tokens = g_ascii_strtoll(f[7], NULL, 10);
        return TRUE;
    }
    return FALSE;
}

static void test_session_turns(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *wl = g_build_filename(dir, "wl.jsonl", NULL);
    /* a 3-call session (tools 1 ms, then 2 ms) and a flat request that overlaps it */
    CU_ASSERT_FATAL(g_file_set_contents(
        wl,
        "{\"arrival_time_ns\": 0, \"session_id\": \"s1\", \"sub_requests\": ["
        "{\"input_toks\": 100, \"output_toks\": 4, \"tool_duration_ns\": 1000000}, "
        "{\"input_toks\": 200, \"output_toks\": 3, \"tool_duration_ns\": 2000000}, "
        "{\"input_toks\": 300, \"output_toks\": 2}]}\n"
        "{\"input_toks\": 50, \"output_toks\": 5, \"arrival_time_ns\": 1000}\n",
        -1, NULL));
    g_autofree char *cl = sv_test_write_cluster(dir, "meta-llama/Llama-3.1-8B", "H100-SXM", 80);
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    const char *argv[] = {SV_SERVESIM_BIN, "run",      "--cluster",    cl,  "--workload", wl,
                          "--latency",     "roofline", "--output-dir", out, "--quiet",    NULL};
    char *so = NULL, *se = NULL;
    int status = -1;
    CU_ASSERT_FATAL(sv_test_spawn(argv, &so, &se, &status));
    if (status != 0)
        fprintf(stderr, "%s", se);
    CU_ASSERT_EQUAL_FATAL(status, 0);
    g_autofree char *csv = g_build_filename(out, "requests.csv", NULL);
    g_autofree char *text = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(csv, &text, NULL, NULL));
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    int rows = 0;
    for (int i = 1; lines[i] && *lines[i]; i++)
        rows++;
    SV_ASSERT_EQ_I64(rows, 4); /* 3 calls + 1 flat request */
    struct row t0, t1, t2, flat;
    CU_ASSERT_FATAL(find_row(lines, 100, &t0));
    CU_ASSERT_FATAL(find_row(lines, 200, &t1));
    CU_ASSERT_FATAL(find_row(lines, 300, &t2));
    CU_ASSERT_FATAL(find_row(lines, 50, &flat));
    SV_ASSERT_EQ_I64(t0.arrival, 0);
    SV_ASSERT_EQ_I64(flat.arrival, 1000);
    /* the follow-up calls: previous call's last token + its tool time, not earlier */
    SV_ASSERT_EQ_I64(t1.arrival, t0.last_token + 1000000);
    SV_ASSERT_EQ_I64(t2.arrival, t1.last_token + 2000000);
    CU_ASSERT(t1.first_sched >= t1.arrival && t2.first_sched >= t2.arrival);
    CU_ASSERT(t0.last_token > t0.first_token && t1.last_token > t1.first_token);
    SV_ASSERT_EQ_I64(t0.out_tokens, 4);
    SV_ASSERT_EQ_I64(t1.out_tokens, 3);
    SV_ASSERT_EQ_I64(t2.out_tokens, 2);
    g_free(so);
    g_free(se);
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"session follow-up turns wait for the previous turn + tool time", test_session_turns},
        {NULL, NULL},
    };
    sv_test_add_suite("agentic", cases);
    return sv_test_run();
}
