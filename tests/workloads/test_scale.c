/* Replay at a scaled rate (workloads/scale.c): arrival times multiplied by a factor, the span of
 * a trace found in one pass, and the factor for a wanted mean rate. Expected times are computed by
 * hand from the small traces written here. */
#include "tests/test_util.h"
#include "workloads/workloads.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static char *tmp;

static char *write_file(const char *name, const char *text)
{
    char *path = g_build_filename(tmp, name, NULL);
    g_assert(g_file_set_contents(path, text, -1, NULL));
    return path;
}

/* Mooncake lines: timestamps 0, 1000, 2500, 4000 ms (gaps 1, 1.5, 1.5 s; mean gap 4/3 s). */
static const char mooncake[] =
    "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 2, \"hash_ids\": [1]}\n"
    "{\"timestamp\": 1000, \"input_length\": 11, \"output_length\": 3, \"hash_ids\": [2]}\n"
    "\n"
    "{\"timestamp\": 2500, \"input_length\": 12, \"output_length\": 4, \"hash_ids\": [3]}\n"
    "{\"timestamp\": 4000, \"input_length\": 13, \"output_length\": 5, \"hash_ids\": [4]}\n";

static void drain_times(sv_wl_source *src, sv_time *t, uint64_t *line, int n_max, int *n)
{
    sv_wl_item it = SV_WL_ITEM_INIT;
    g_autoptr(GError) err = NULL;
    int r;
    *n = 0;
    while ((r = sv_wl_next(src, &it, &err)) == 1) {
        CU_ASSERT_FATAL(*n < n_max);
        CU_ASSERT_EQUAL(it.reqs[0].arrival_ns, it.arrival_ns);
        SV_ASSERT_EQ_I64(it.reqs[0].request_id, *n);
        t[*n] = it.arrival_ns;
        line[*n] = it.line;
        (*n)++;
    }
    CU_ASSERT_EQUAL(r, 0);
    sv_wl_item_clear(&it);
}

static void test_half(void)
{
    g_autofree char *p = write_file("m.jsonl", mooncake);
    g_autoptr(GError) e = NULL;
    sv_wl_source *src = sv_wl_scale_new(sv_wl_open(p, NULL, &e), 0.5, &e);
    CU_ASSERT_FATAL(src != NULL);
    sv_time t[8];
    uint64_t line[8];
    int n;
    drain_times(src, t, line, 8, &n);
    CU_ASSERT_EQUAL(n, 4);
    /* 0, 1000, 2500, 4000 ms x 0.5 */
    SV_ASSERT_EQ_I64(t[0], 0);
    SV_ASSERT_EQ_I64(t[1], 500000000);
    SV_ASSERT_EQ_I64(t[2], 1250000000);
    SV_ASSERT_EQ_I64(t[3], 2000000000);
    /* line numbers are the file's (the blank line 3 is skipped) */
    SV_ASSERT_EQ_I64(line[2], 4);
    SV_ASSERT_EQ_I64(sv_wl_source_requests(src), 4);
    CU_ASSERT_EQUAL(sv_wl_source_format(src), SV_WL_FORMAT_MOONCAKE);
    sv_wl_source_free(src);
}

static void test_rounding(void)
{
    /* LLMServingSim lines in ns: 3 x (1/3) = 1 exactly after rounding; 10 x 1/3 = 3.33 -> 3;
     * 20 x 1/3 = 6.67 -> 7. */
    g_autofree char *p =
        write_file("l.jsonl", "{\"input_toks\": 4, \"output_toks\": 2, \"arrival_time_ns\": 3}\n"
                              "{\"input_toks\": 4, \"output_toks\": 2, \"arrival_time_ns\": 10}\n"
                              "{\"input_toks\": 4, \"output_toks\": 2, \"arrival_time_ns\": 20}\n");
    g_autoptr(GError) e = NULL;
    sv_wl_source *src = sv_wl_scale_new(sv_wl_open(p, NULL, &e), 1.0 / 3.0, &e);
    CU_ASSERT_FATAL(src != NULL);
    sv_time t[4];
    uint64_t line[4];
    int n;
    drain_times(src, t, line, 4, &n);
    CU_ASSERT_EQUAL(n, 3);
    SV_ASSERT_EQ_I64(t[0], 1);
    SV_ASSERT_EQ_I64(t[1], 3);
    SV_ASSERT_EQ_I64(t[2], 7);
    sv_wl_source_free(src);
}

static void test_scan_and_rate(void)
{
    g_autofree char *p = write_file("m.jsonl", mooncake);
    struct sv_wl_span span;
    g_autoptr(GError) e = NULL;
    CU_ASSERT_FATAL(sv_wl_scan(p, NULL, &span, &e));
    SV_ASSERT_EQ_I64(span.items, 4);
    SV_ASSERT_EQ_I64(span.requests, 4);
    SV_ASSERT_EQ_I64(span.first_ns, 0);
    SV_ASSERT_EQ_I64(span.last_ns, 4000000000);
    /* The trace's mean rate is 3 gaps over 4 s = 0.75 req/s; for 3 req/s the factor is 0.25 and
     * the arrivals 0, 0.25, 0.625, 1 s (mean gap 1/3 s). */
    double f = 0;
    CU_ASSERT_FATAL(sv_wl_span_rate_scale(&span, p, 3.0, &f, &e));
    CU_ASSERT_DOUBLE_EQUAL(f, 0.25, 1e-15);
    sv_wl_source *src = sv_wl_scale_new(sv_wl_open(p, NULL, &e), f, &e);
    sv_time t[8];
    uint64_t line[8];
    int n;
    drain_times(src, t, line, 8, &n);
    CU_ASSERT_EQUAL(n, 4);
    SV_ASSERT_EQ_I64(t[1], 250000000);
    SV_ASSERT_EQ_I64(t[2], 625000000);
    SV_ASSERT_EQ_I64(t[3], 1000000000);
    sv_wl_source_free(src);
}

/* A session (LLMServingSim sub_requests) arriving at 1,000,000 ns and a flat request at
 * 3,000,000 ns, x 2: the session's first call at 2,000,000 ns, its later call still unreleased
 * (-1) with its tool time as recorded (500,000 ns), the flat request at 6,000,000 ns; request ids
 * 0, 1 (the session's calls) and 2. */
static void test_session(void)
{
    g_autofree char *p = write_file(
        "s.jsonl", "{\"session_id\": \"a\", \"arrival_time_ns\": 1000000, \"sub_requests\": ["
                   "{\"input_toks\": 5, \"output_toks\": 2, \"tool_duration_ns\": 500000},"
                   "{\"input_toks\": 6, \"output_toks\": 3}]}\n"
                   "{\"input_toks\": 4, \"output_toks\": 2, \"arrival_time_ns\": 3000000}\n");
    g_autoptr(GError) e = NULL;
    sv_wl_source *src = sv_wl_scale_new(sv_wl_open(p, NULL, &e), 2.0, &e);
    CU_ASSERT_FATAL(src != NULL);
    sv_wl_item it = SV_WL_ITEM_INIT;
    CU_ASSERT_EQUAL_FATAL(sv_wl_next(src, &it, &e), 1);
    CU_ASSERT_EQUAL(it.kind, SV_WL_ITEM_SESSION);
    SV_ASSERT_EQ_I64(it.n_reqs, 2);
    SV_ASSERT_EQ_I64(it.arrival_ns, 2000000);
    SV_ASSERT_EQ_I64(it.reqs[0].arrival_ns, 2000000);
    SV_ASSERT_EQ_I64(it.reqs[1].arrival_ns, -1);
    SV_ASSERT_EQ_I64(it.reqs[0].tool_duration_ns, 500000);
    SV_ASSERT_EQ_I64(it.reqs[1].request_id, 1);
    CU_ASSERT_STRING_EQUAL(it.session_id, "a");
    CU_ASSERT_EQUAL_FATAL(sv_wl_next(src, &it, &e), 1);
    SV_ASSERT_EQ_I64(it.arrival_ns, 6000000);
    SV_ASSERT_EQ_I64(it.reqs[0].request_id, 2);
    SV_ASSERT_EQ_I64(it.index, 1);
    CU_ASSERT_EQUAL(sv_wl_next(src, &it, &e), 0);
    sv_wl_item_clear(&it);
    /* The span counts items (arrivals) and requests (calls) apart. */
    struct sv_wl_span span;
    CU_ASSERT_FATAL(sv_wl_scan(p, NULL, &span, &e));
    SV_ASSERT_EQ_I64(span.items, 2);
    SV_ASSERT_EQ_I64(span.requests, 3);
    sv_wl_source_free(src);
}

static void test_errors(void)
{
    g_autofree char *p = write_file("m.jsonl", mooncake);
    g_autoptr(GError) e = NULL;
    CU_ASSERT(sv_wl_scale_new(sv_wl_open(p, NULL, NULL), 0, &e) == NULL);
    CU_ASSERT(e && strstr(e->message, "must be a finite number > 0"));
    g_clear_error(&e);
    CU_ASSERT(sv_wl_scale_new(sv_wl_open(p, NULL, NULL), -2, &e) == NULL);
    g_clear_error(&e);
    /* One arrival has no rate. */
    g_autofree char *one =
        write_file("one.jsonl", "{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1, "
                                "\"hash_ids\": [1]}\n");
    struct sv_wl_span span;
    CU_ASSERT_FATAL(sv_wl_scan(one, NULL, &span, &e));
    double f;
    CU_ASSERT_FALSE(sv_wl_span_rate_scale(&span, one, 1.0, &f, &e));
    CU_ASSERT(e && strstr(e->message, "one.jsonl") && strstr(e->message, "at least two arrivals"));
    g_clear_error(&e);
    /* A bad line surfaces from the scan with its line number, as the run would meet it. */
    g_autofree char *bad =
        write_file("bad.jsonl", "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, "
                                "\"hash_ids\": [1]}\n{\"timestamp\": 1}\n");
    CU_ASSERT_FALSE(sv_wl_scan(bad, NULL, &span, &e));
    CU_ASSERT(e && strstr(e->message, "bad.jsonl:2"));
    g_clear_error(&e);
    /* ... and is skipped and counted under skip_bad_lines, through the wrapper too. */
    struct sv_wl_open_opts o = {.skip_bad_lines = TRUE};
    CU_ASSERT_FATAL(sv_wl_scan(bad, &o, &span, &e));
    SV_ASSERT_EQ_I64(span.items, 1);
    SV_ASSERT_EQ_I64(span.bad_lines, 1);
    sv_wl_source *src = sv_wl_scale_new(sv_wl_open(bad, &o, &e), 2.0, &e);
    sv_time t[2];
    uint64_t line[2];
    int n;
    drain_times(src, t, line, 2, &n);
    CU_ASSERT_EQUAL(n, 1);
    SV_ASSERT_EQ_I64(sv_wl_source_bad_lines(src), 1);
    sv_wl_source_free(src);
    /* Past the horizon (2^58 ns, about 9.1 years): 10^11 ms (3.2 years) x 10 is. */
    g_autofree char *far = write_file("far.jsonl", "{\"timestamp\": 100000000000, "
                                                   "\"input_length\": 1, \"output_length\": 1, "
                                                   "\"hash_ids\": [1]}\n");
    sv_wl_source *fs = sv_wl_open(far, NULL, &e);
    src = sv_wl_scale_new(fs, 10.0, &e);
    sv_wl_item it = SV_WL_ITEM_INIT;
    CU_ASSERT_EQUAL(sv_wl_next(src, &it, &e), -1);
    CU_ASSERT(e && strstr(e->message, "far.jsonl:1") && strstr(e->message, "horizon"));
    sv_wl_item_clear(&it);
    sv_wl_source_free(src);
}

int main(void)
{
    tmp = sv_test_tmpdir();
    static const sv_test_case cases[] = {
        {"arrivals x 0.5", test_half},
        {"rounding to ns", test_rounding},
        {"scan and rate", test_scan_and_rate},
        {"sessions", test_session},
        {"errors", test_errors},
        {NULL, NULL},
    };
    sv_test_add_suite("scale", cases);
    int rc = sv_test_run();
    sv_test_rmtree(tmp);
    g_free(tmp);
    return rc;
}
