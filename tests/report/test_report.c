/* servesim report (report/, cli/cmd_report.c): reading run folders, the plots a page has, the
 * summary table against hand-written summary.json values, errors, determinism. Every input is
 * written here or made by `servesim run`'s quick form; nothing from ../shared is needed. */
#include "report/report.h"
#include "report/report_internal.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

static char *tmp;

static void put(const char *dir, const char *name, const char *text)
{
    g_mkdir_with_parents(dir, 0777);
    g_autofree char *p = g_build_filename(dir, name, NULL);
    if (!g_file_set_contents(p, text, -1, NULL)) {
        fprintf(stderr, "cannot write %s\n", p);
        exit(2);
    }
}

static guint count(const char *hay, const char *needle)
{
    guint n = 0;
    for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* The <tr> of the summary table whose first cell is `metric` (caller frees), NULL if none. */
static char *table_row(const char *html, const char *metric)
{
    g_autofree char *start = g_strdup_printf("<tr><th>%s</th>", metric);
    const char *p = strstr(html, start);
    if (p == NULL)
        return NULL;
    const char *e = strstr(p, "</tr>");
    return g_strndup(p, (gsize)(e - p));
}

/* The figure with id plot-<id> (caller frees), NULL if none. */
static char *figure(const char *html, const char *id)
{
    g_autofree char *start = g_strdup_printf("<figure class=\"plot\" id=\"plot-%s\"", id);
    g_autofree char *start_absent =
        g_strdup_printf("<figure class=\"plot absent\" id=\"plot-%s\"", id);
    const char *p = strstr(html, start);
    if (p == NULL)
        p = strstr(html, start_absent);
    if (p == NULL)
        return NULL;
    const char *e = strstr(p, "</figure>");
    return g_strndup(p, (gsize)(e - p));
}

/* Run A: 4 requests (one rejected, one with a single output token: no TPOT), 3 ticks, no power,
 * no memory tier. Its summary values are chosen by hand, not computed from the CSV: the report
 * prints summary.json, it does not recompute it. */
static char *make_run_a(void)
{
    char *dir = g_build_filename(tmp, "run-a", NULL);
    put(dir, "summary.json",
        "{\"requests\": {\"arrived\": 4, \"finished\": 3, \"rejected\": 1, \"unfinished\": 0},\n"
        " \"makespan_s\": 2.5,\n"
        " \"throughput\": {\"requests_per_s\": 1.2, \"input_tokens_per_s\": 400.0,"
        " \"output_tokens_per_s\": 50.25},\n"
        " \"latency_ms\": {\"ttft\": {\"count\": 3, \"mean\": 12.5, \"p50\": 11.0, \"p90\": 14.0,"
        " \"p95\": 14.5, \"p99\": 14.9},\n"
        "   \"tpot\": {\"count\": 2, \"mean\": 4.0, \"p50\": 4.0, \"p90\": 5.0, \"p95\": 5.0,"
        " \"p99\": 5.0},\n"
        "   \"itl\": {\"count\": 10, \"mean\": 4.1, \"p50\": 3.0, \"p90\": 6.0, \"p95\": 7.0,"
        " \"p99\": 9.0},\n"
        "   \"e2e\": {\"count\": 3, \"mean\": 40.0, \"p50\": 41.0, \"p90\": 50.0, \"p95\": 51.0,"
        " \"p99\": 52.0}}}\n");
    put(dir, "requests.csv",
        "request_id,instance,arrival_ns,first_scheduled_ns,first_token_ns,last_token_ns,"
        "input_tokens,output_tokens,prefix_hit_tokens,preemptions,ttft_ns,tpot_ns,e2e_ns,queue_ns,"
        "status,reject_reason\n"
        "0,0,0,0,3000000,9000000,100,4,0,0,3000000,2000000,9000000,0,finished,\n"
        "1,,5,,,,9000,10,0,0,,,,,rejected,context_length\n"
        "2,0,10,10,1000010,1000010,100,1,0,0,1000000,,1000000,0,finished,\n"
        "3,0,20,20,2000020,8000020,100,3,0,0,2000000,3000000,8000000,0,finished,\n");
    put(dir, "timeseries.csv",
        "t,prompt_throughput,gen_throughput,running,waiting,kv_cache_pct\n"
        "1.000,300.0,5.0,2,1,10.00\n2.000,0.0,3.0,1,0,5.00\n3.000,0.0,0.0,0,0,0.00\n");
    return dir;
}

/* Run B: run A's requests, with memory-tier columns and power.csv on two nodes. */
static char *make_run_b(void)
{
    char *dir = g_build_filename(tmp, "run-b", NULL);
    put(dir, "summary.json",
        "{\"requests\": {\"arrived\": 3, \"finished\": 3, \"rejected\": 0, \"unfinished\": 0},\n"
        " \"makespan_s\": 3.0,\n"
        " \"throughput\": {\"requests_per_s\": 1.0, \"input_tokens_per_s\": 500.0,"
        " \"output_tokens_per_s\": 40.0},\n"
        " \"latency_ms\": {\"ttft\": {\"count\": 3, \"mean\": 20.0, \"p50\": 11.0, \"p90\": 30.0,"
        " \"p95\": 30.0, \"p99\": 30.0},\n"
        "   \"tpot\": {\"count\": 0, \"mean\": 0, \"p50\": 0, \"p90\": 0, \"p95\": 0, \"p99\": "
        "0},\n"
        "   \"itl\": {\"count\": 0, \"mean\": 0, \"p50\": 0, \"p90\": 0, \"p95\": 0, \"p99\": 0},\n"
        "   \"e2e\": {\"count\": 3, \"mean\": 30.0, \"p50\": 30.0, \"p90\": 30.0, \"p95\": 30.0,"
        " \"p99\": 30.0}},\n"
        " \"energy\": {\"total_j\": 900.0, \"j_per_output_token\": 7.5}}\n");
    put(dir, "requests.csv",
        "request_id,instance,arrival_ns,first_scheduled_ns,first_token_ns,last_token_ns,"
        "input_tokens,output_tokens,prefix_hit_tokens,preemptions,ttft_ns,tpot_ns,e2e_ns,queue_ns\n"
        "0,0,0,0,5000000,5000000,100,1,0,0,5000000,,5000000,0\n");
    put(dir, "timeseries.csv",
        "t,prompt_throughput,gen_throughput,running,waiting,kv_cache_pct,npu_mem_bytes,"
        "cpu_mem_bytes,cxl_mem_bytes,ssd_bytes\n"
        "1.000,300.0,5.0,2,1,10.00,2000000000,0,0,0\n2.000,0.0,3.0,1,0,5.00,1000000000,0,0,0\n");
    put(dir, "power.csv",
        "t,node0_npu_w,node0_cpu_w,node0_dram_w,node0_link_w,node0_nic_w,node0_storage_w,"
        "node0_base_w,node0_j,node1_npu_w,node1_cpu_w,node1_dram_w,node1_link_w,node1_nic_w,"
        "node1_storage_w,node1_base_w,node1_j,total_w,total_j\n"
        "1.000,100,10,5,1,2,3,60,181,50,10,5,1,2,3,60,131,312,312\n"
        "2.000,80,10,5,1,2,3,60,161,40,10,5,1,2,3,60,121,282,594\n");
    return dir;
}

static sv_report_run *load(const char *dir, const char *label)
{
    g_autoptr(GError) e = NULL;
    sv_report_run *r = sv_report_run_load(dir, label, &e);
    if (r == NULL)
        fprintf(stderr, "load %s: %s\n", dir, e->message);
    return r;
}

static char *html_of(sv_report_run **runs, guint n)
{
    g_autoptr(GError) e = NULL;
    char *h = sv_report_html(runs, n, NULL, &e);
    if (h == NULL)
        fprintf(stderr, "html: %s\n", e->message);
    return h;
}

/* One run: the plots it has data for (7 <svg>), the two it has not say why. */
static void test_one_run(void)
{
    g_autofree char *a = make_run_a();
    g_autoptr(sv_report_run) r = load(a, NULL);
    CU_ASSERT_FATAL(r != NULL);
    CU_ASSERT_STRING_EQUAL(sv_report_run_label(r), "run-a");
    g_autofree char *h = html_of(&r, 1);
    CU_ASSERT_FATAL(h != NULL);
    /* throughput, running/waiting, TTFT, TPOT, E2EL and ITL CDFs, KV: one <svg> each */
    CU_ASSERT_EQUAL(count(h, "<svg"), 7);
    CU_ASSERT_EQUAL(count(h, "<figure class=\"plot\""), 7);
    const char *ids[] = {"throughput", "running-waiting", "ttft-cdf", "tpot-cdf",
                         "e2el-cdf",   "itl-cdf",         "kv-cache"};
    for (guint i = 0; i < G_N_ELEMENTS(ids); i++) {
        g_autofree char *f = figure(h, ids[i]);
        CU_ASSERT(f != NULL && count(f, "<svg") == 1);
    }
    g_autofree char *tiers = figure(h, "memory-tiers");
    CU_ASSERT(tiers != NULL && strstr(tiers, "absent") &&
              strstr(tiers, "no run used a memory "
                            "tier"));
    g_autofree char *power = figure(h, "power");
    CU_ASSERT(power != NULL && strstr(power, "absent") && strstr(power, "has no power.csv"));
    /* self-contained: no URL to fetch, no script */
    CU_ASSERT(strstr(h, "http://") == NULL || count(h, "http://") == count(h, "xmlns"));
    CU_ASSERT(strstr(h, "https://") == NULL);
    CU_ASSERT(strstr(h, "<script") == NULL);
    CU_ASSERT(strstr(h, "<?xml") == NULL);
    /* one run: nothing marked best */
    CU_ASSERT(strstr(h, "class=\"best\"") == NULL);
    /* SVG text is there (PLplot's svg driver writes <text>): the axis labels */
    CU_ASSERT(count(h, "<text") > 20);
}

/* The CDFs are built from the finished requests only, in ms, sorted. */
static void test_requests_read(void)
{
    g_autofree char *a = make_run_a();
    g_autoptr(sv_report_run) r = load(a, "A");
    CU_ASSERT_FATAL(r != NULL);
    g_autofree char *h = html_of(&r, 1);
    /* TTFT of requests 0, 2, 3: 3, 1, 2 ms -> the CDF polyline goes through (1, 1/3), (2, 2/3),
     * (3, 1): three points, in one polyline of the TTFT figure. PLplot writes plot coordinates;
     * what is checked here is the number of points, i.e. that the rejected row was left out. */
    g_autofree char *f = figure(h, "ttft-cdf");
    CU_ASSERT_FATAL(f != NULL);
    /* The data line is the polyline with the series colour (tab10 blue #1F77B4). */
    const char *col = strstr(f, "stroke=\"#1F77B4\"");
    CU_ASSERT_FATAL(col != NULL);
    const char *pts = strstr(col, "points=\"");
    CU_ASSERT_FATAL(pts != NULL);
    pts += strlen("points=\"");
    const char *end = strchr(pts, '"');
    guint n_pts = 0; /* "x,y x,y ": one comma per point */
    for (const char *c = pts; c < end; c++)
        n_pts += *c == ',';
    CU_ASSERT_EQUAL(n_pts, 3);
    /* TPOT: only requests 0 and 3 have one (request 2 made one token) */
    g_autofree char *tf = figure(h, "tpot-cdf");
    const char *tp = strstr(strstr(tf, "stroke=\"#1F77B4\""), "points=\"") + strlen("points=\"");
    guint n_tp = 0;
    for (const char *c = tp; *c != '"'; c++)
        n_tp += *c == ',';
    CU_ASSERT_EQUAL(n_tp, 2);
}

/* Two runs: one line per run, the table side by side with the best marked, values as
 * summary.json gives them (three decimals). */
static void test_two_runs(void)
{
    g_autofree char *a = make_run_a();
    g_autofree char *b = make_run_b();
    sv_report_run *runs[2] = {load(a, "alpha"), load(b, "beta")};
    CU_ASSERT_FATAL(runs[0] != NULL && runs[1] != NULL);
    g_autofree char *h = html_of(runs, 2);
    CU_ASSERT_FATAL(h != NULL);
    /* 7 as for one run (TPOT and ITL: alpha only), memory tiers (beta), beta's power by
     * component, total power of the runs with power.csv */
    CU_ASSERT_EQUAL(count(h, "<svg"), 10);
    g_autofree char *itl = figure(h, "itl-cdf");
    CU_ASSERT(itl != NULL && strstr(itl, "Left out: beta (summary.json has no ITL percentiles)"));
    g_autofree char *pw = figure(h, "power-1");
    CU_ASSERT(pw != NULL && count(pw, "<svg") == 1);
    g_autofree char *pt = figure(h, "power-total");
    CU_ASSERT(pt != NULL && strstr(pt, "Left out: alpha") != NULL);
    /* header: both labels */
    CU_ASSERT(strstr(h, "<th>alpha</th><th>beta</th>") != NULL);
    /* hand values of the two summary.json files */
    g_autofree char *ttft = table_row(h, "TTFT mean");
    CU_ASSERT(ttft != NULL &&
              strstr(ttft, "<td class=\"best\" title=\"best\">12.500&#x2009;&#x2605;</td>"
                           "<td>20.000</td>"));
    g_autofree char *tput = table_row(h, "output token throughput");
    CU_ASSERT(tput != NULL &&
              strstr(tput, "<td class=\"best\" title=\"best\">50.250&#x2009;&#x2605;</td>"
                           "<td>40.000</td>"));
    /* total = input + output: 450.25 and 540 (beta best) */
    g_autofree char *tot = table_row(h, "total token throughput");
    CU_ASSERT(tot != NULL && strstr(tot, "<td>450.250</td><td class=\"best\" title=\"best\">"
                                         "540.000&#x2009;&#x2605;</td>"));
    /* a tie: TTFT p50 11 and 11, both best */
    g_autofree char *p50 = table_row(h, "TTFT p50");
    CU_ASSERT(p50 != NULL && count(p50, "class=\"best\"") == 2);
    /* energy: beta only, alpha's cell a dash; the only value is the best */
    g_autofree char *en = table_row(h, "energy per output token");
    CU_ASSERT(en != NULL && strstr(en, "<td class=\"none\">&#x2013;</td><td class=\"best\" "
                                       "title=\"best\">7.500"));
    /* neither gives request_goodput: no row */
    CU_ASSERT(table_row(h, "request goodput") == NULL);
    /* makespan: no better or worse, never marked */
    g_autofree char *mk = table_row(h, "makespan");
    CU_ASSERT(mk != NULL && strstr(mk, "best") == NULL && strstr(mk, "<td>2.500</td><td>3.000"));
    g_autofree char *fin = table_row(h, "finished requests");
    CU_ASSERT(fin != NULL && strstr(fin, "<td>3</td><td>3</td>"));
    sv_report_run_free(runs[0]);
    sv_report_run_free(runs[1]);
}

/* power.csv: each component summed over the nodes (node0 100 W + node1 50 W of NPU). */
static void test_power_sum(void)
{
    g_autofree char *b = make_run_b();
    g_autoptr(sv_report_run) r = load(b, NULL);
    CU_ASSERT_FATAL(r != NULL);
    g_autofree char *h = html_of(&r, 1);
    g_autofree char *pw = figure(h, "power-0");
    CU_ASSERT_FATAL(pw != NULL);
    /* legend: the seven components and the total */
    const char *names[] = {"npu", "cpu", "dram", "link", "nic", "storage", "base", "total"};
    for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
        /* PLplot's svg driver writes each character as a numeric reference: "npu" is
         * &#x6e;&#x70;&#x75; */
        GString *enc = g_string_new(NULL);
        for (const char *c = names[i]; *c; c++)
            g_string_append_printf(enc, "&#x%x;", (unsigned)*c);
        CU_ASSERT(strstr(pw, enc->str) != NULL);
        g_string_free(enc, TRUE);
    }
    /* y axis from 0 to at least the largest total (312 W): a tick label "300" */
    CU_ASSERT(strstr(pw, "&#x33;&#x30;&#x30;") != NULL);
}

/* The same folders give the same bytes (no time stamp, no temporary path). */
static void test_deterministic(void)
{
    g_autofree char *a = make_run_a();
    g_autofree char *b = make_run_b();
    g_autofree char *o1 = g_build_filename(tmp, "r1.html", NULL);
    g_autofree char *o2 = g_build_filename(tmp, "r2.html", NULL);
    const char *argv1[] = {SV_SERVESIM_BIN, "report", a, b, "-o", o1, NULL};
    const char *argv2[] = {SV_SERVESIM_BIN, "report", a, b, "--output", o2, NULL};
    int st1 = -1, st2 = -1;
    g_autofree char *out1 = NULL, *err1 = NULL, *out2 = NULL, *err2 = NULL;
    CU_ASSERT_FATAL(sv_test_spawn(argv1, &out1, &err1, &st1));
    CU_ASSERT_FATAL(sv_test_spawn(argv2, &out2, &err2, &st2));
    CU_ASSERT_EQUAL(st1, 0);
    CU_ASSERT_EQUAL(st2, 0);
    CU_ASSERT_STRING_EQUAL(err1, "");
    g_autofree char *h1 = NULL, *h2 = NULL;
    gsize n1 = 0, n2 = 0;
    CU_ASSERT_FATAL(g_file_get_contents(o1, &h1, &n1, NULL));
    CU_ASSERT_FATAL(g_file_get_contents(o2, &h2, &n2, NULL));
    CU_ASSERT(n1 > 1000 && n1 == n2 && memcmp(h1, h2, n1) == 0);
    CU_ASSERT(strstr(h1, "servesim-report-") == NULL); /* no temporary folder name */
    /* mode: 0666 less the umask (022 set in main) */
    struct stat st;
    CU_ASSERT(g_stat(o1, &st) == 0 && (st.st_mode & 0777) == 0644);
}

/* Bad input: a clear message naming the folder or file, exit nonzero, nothing written (an
 * older report at the path stays as it was). */
static void expect_error(const char *const *args, int want_status, const char *want_msg)
{
    g_autofree char *out = g_build_filename(tmp, "err.html", NULL);
    put(tmp, "err.html", "old");
    GPtrArray *argv = g_ptr_array_new();
    g_ptr_array_add(argv, (gpointer)SV_SERVESIM_BIN);
    g_ptr_array_add(argv, (gpointer) "report");
    for (guint i = 0; args[i] != NULL; i++)
        g_ptr_array_add(argv, (gpointer)(strcmp(args[i], "OUT") == 0 ? out : args[i]));
    g_ptr_array_add(argv, NULL);
    int st = -1;
    g_autofree char *so = NULL, *se = NULL;
    CU_ASSERT_FATAL(sv_test_spawn((const char *const *)argv->pdata, &so, &se, &st));
    g_ptr_array_free(argv, TRUE);
    CU_ASSERT_EQUAL(st, want_status);
    if (strstr(se, want_msg) == NULL)
        fprintf(stderr, "\nexpected '%s' in: %s\n", want_msg, se);
    CU_ASSERT(strstr(se, want_msg) != NULL);
    g_autofree char *text = NULL;
    CU_ASSERT(g_file_get_contents(out, &text, NULL, NULL) && strcmp(text, "old") == 0);
}

static void test_errors(void)
{
    g_autofree char *a = make_run_a();
    g_autofree char *missing = g_build_filename(tmp, "nope", NULL);
    g_autofree char *msg_missing = g_strdup_printf("servesim report: %s: no such folder", missing);
    expect_error((const char *[]){a, missing, "-o", "OUT", NULL}, 1, msg_missing);

    g_autofree char *other = g_build_filename(tmp, "other", NULL);
    put(other, "notes.txt", "hello\n");
    g_autofree char *msg_other =
        g_strdup_printf("%s: not a servesim run output folder (no summary.json)", other);
    expect_error((const char *[]){other, "-o", "OUT", NULL}, 1, msg_other);

    g_autofree char *wrong = g_build_filename(tmp, "wrong", NULL);
    put(wrong, "summary.json",
        "{\"requests\": {\"finished\": 1}, \"makespan_s\": 1,"
        " \"throughput\": {\"output_tokens_per_s\": 1}}");
    g_autofree char *msg_wrong =
        g_strdup_printf("%s/summary.json: latency_ms.ttft.mean: required key is missing", wrong);
    expect_error((const char *[]){wrong, "-o", "OUT", NULL}, 1, msg_wrong);

    g_autofree char *bad = g_build_filename(tmp, "bad", NULL);
    g_autofree char *sum = NULL;
    g_autofree char *sum_path = g_build_filename(a, "summary.json", NULL);
    g_file_get_contents(sum_path, &sum, NULL, NULL);
    put(bad, "summary.json", sum);
    put(bad, "requests.csv", "ttft_ns,tpot_ns,e2e_ns\n1,2,3\n1,x2,3\n");
    g_autofree char *msg_bad =
        g_strdup_printf("%s/requests.csv:3: tpot_ns: 'x2' is not a number", bad);
    expect_error((const char *[]){bad, "-o", "OUT", NULL}, 1, msg_bad);

    put(bad, "requests.csv", "ttft_ns,e2e_ns\n1,3\n");
    g_autofree char *msg_col = g_strdup_printf("%s/requests.csv: column tpot_ns is missing", bad);
    expect_error((const char *[]){bad, "-o", "OUT", NULL}, 1, msg_col);

    expect_error((const char *[]){a, NULL}, 2, "servesim report: -o FILE is required");
    expect_error((const char *[]){"-o", "OUT", NULL}, 2, "expected at least one run folder");
    expect_error((const char *[]){a, a, "--label", "x", "-o", "OUT", NULL}, 2,
                 "1 --label for 2 run folders");
    /* -o into a folder that does not exist: the write fails, naming it */
    g_autofree char *nodir = g_build_filename(tmp, "nodir", "r.html", NULL);
    const char *argv[] = {SV_SERVESIM_BIN, "report", a, "-o", nodir, NULL};
    int st = -1;
    g_autofree char *so = NULL, *se = NULL;
    CU_ASSERT_FATAL(sv_test_spawn(argv, &so, &se, &st));
    CU_ASSERT_EQUAL(st, 1);
    CU_ASSERT(strstr(se, "nodir") != NULL);
    CU_ASSERT(!g_file_test(nodir, G_FILE_TEST_EXISTS));
}

/* A folder without timeseries.csv beside one with: the time plots draw the one and say why the
 * other is left out; alone, it gets no time plot and the reason. */
static void test_missing_file(void)
{
    g_autofree char *a = make_run_a();
    g_autofree char *c = g_build_filename(tmp, "run-c", NULL);
    g_autofree char *sum = NULL;
    g_autofree char *sum_path = g_build_filename(a, "summary.json", NULL);
    g_file_get_contents(sum_path, &sum, NULL, NULL);
    put(c, "summary.json", sum);
    sv_report_run *runs[2] = {load(a, NULL), load(c, NULL)};
    CU_ASSERT_FATAL(runs[0] != NULL && runs[1] != NULL);
    g_autofree char *h = html_of(runs, 2);
    g_autofree char *f = figure(h, "throughput");
    g_autofree char *why = g_strdup_printf("Left out: run-c (%s has no timeseries.csv)", c);
    CU_ASSERT(f != NULL && count(f, "<svg") == 1 && strstr(f, why) != NULL);
    g_autofree char *h1 = html_of(&runs[1], 1);
    /* only the ITL CDF (from summary.json) is drawn */
    CU_ASSERT_EQUAL(count(h1, "<svg"), 1);
    g_autofree char *f1 = figure(h1, "ttft-cdf");
    g_autofree char *why1 = g_strdup_printf("No plot: run-c (%s has no requests.csv)", c);
    CU_ASSERT(f1 != NULL && strstr(f1, why1) != NULL);
    sv_report_run_free(runs[0]);
    sv_report_run_free(runs[1]);
}

/* A real run (quick form, 40 requests): the report's table holds summary.json's values. */
static void test_real_run(void)
{
    g_autofree char *dir = g_build_filename(tmp, "real", NULL);
    const char *argv[] = {
        SV_SERVESIM_BIN, "run", "--model",      "Llama-2-7B", "--hardware",  "A100-80GB",
        "--requests",    "40",  "--qps",        "10",         "--input-len", "128",
        "--output-len",  "16",  "--output-dir", dir,          "--quiet",     NULL};
    int st = -1;
    g_autofree char *so = NULL, *se = NULL;
    CU_ASSERT_FATAL(sv_test_spawn(argv, &so, &se, &st));
    CU_ASSERT_EQUAL_FATAL(st, 0);
    g_autoptr(sv_report_run) r = load(dir, NULL);
    CU_ASSERT_FATAL(r != NULL);
    g_autofree char *h = html_of(&r, 1);
    CU_ASSERT_EQUAL(count(h, "<svg"), 7);
    g_autoptr(JsonParser) p = json_parser_new();
    g_autofree char *sp = g_build_filename(dir, "summary.json", NULL);
    CU_ASSERT_FATAL(json_parser_load_from_file(p, sp, NULL));
    JsonObject *lat =
        json_object_get_object_member(json_node_get_object(json_parser_get_root(p)), "latency_ms");
    const char *m[] = {"ttft", "tpot", "e2e"};
    const char *rows[] = {"TTFT p99", "TPOT p99", "E2EL p99"};
    for (guint i = 0; i < 3; i++) {
        double v = json_object_get_double_member(json_object_get_object_member(lat, m[i]), "p99");
        char buf[G_ASCII_DTOSTR_BUF_SIZE];
        g_autofree char *cell =
            g_strdup_printf("<td>%s</td>", g_ascii_formatd(buf, sizeof buf, "%.3f", v));
        g_autofree char *row = table_row(h, rows[i]);
        CU_ASSERT(row != NULL && strstr(row, cell) != NULL);
    }
}

/* run.json's argv (written by runs since issue 14) is shown in the runs table, escaped. */
static void test_run_json(void)
{
    g_autofree char *a = make_run_a();
    g_autofree char *d = g_build_filename(tmp, "with-run-json", NULL);
    g_autofree char *sum = NULL;
    g_autofree char *sum_path = g_build_filename(a, "summary.json", NULL);
    g_file_get_contents(sum_path, &sum, NULL, NULL);
    put(d, "summary.json", sum);
    put(d, "run.json", "{\"argv\": [\"servesim\", \"run\", \"--label\", \"a<b\"], \"seed\": 7}");
    g_autoptr(sv_report_run) r = load(d, NULL);
    CU_ASSERT_FATAL(r != NULL);
    g_autofree char *h = html_of(&r, 1);
    CU_ASSERT(strstr(h, "<code>servesim run --label a&lt;b</code>") != NULL);
    g_autoptr(sv_report_run) r2 = load(a, NULL);
    g_autofree char *h2 = html_of(&r2, 1);
    CU_ASSERT(strstr(h2, "no run.json") != NULL);
    put(d, "run.json", "{\"seed\": 7}");
    g_autoptr(sv_report_run) r3 = load(d, NULL);
    g_autofree char *h3 = html_of(&r3, 1);
    CU_ASSERT(strstr(h3, "run.json has no argv") != NULL);
}

/* Every id="..." of the page is unique (PLplot gives each file the same clip-path id). */
static gboolean ids_unique(const char *html)
{
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    guint n = 0;
    for (const char *p = strstr(html, " id=\""); p != NULL; p = strstr(p + 1, " id=\"")) {
        const char *v = p + 5;
        char *id = g_strndup(v, (gsize)(strchr(v, '"') - v));
        if (g_hash_table_contains(seen, id)) {
            fprintf(stderr, "\nduplicate id %s\n", id);
            g_free(id);
            return FALSE;
        }
        g_hash_table_add(seen, id);
        n++;
    }
    return n > 10;
}

static void test_ids(void)
{
    g_autofree char *a = make_run_a();
    g_autofree char *b = make_run_b();
    sv_report_run *runs[2] = {load(a, NULL), load(b, NULL)};
    CU_ASSERT_FATAL(runs[0] != NULL && runs[1] != NULL);
    g_autofree char *h = html_of(runs, 2);
    CU_ASSERT(ids_unique(h));
    /* and the clip paths are still referred to by their (renamed) ids */
    CU_ASSERT(strstr(h, "id=\"plot-ttft-cdf-text-clipping0\"") != NULL);
    CU_ASSERT(strstr(h, "url(#plot-ttft-cdf-text-clipping0)") != NULL);
    sv_report_run_free(runs[0]);
    sv_report_run_free(runs[1]);
}

/* --svg-dir: one standalone SVG file per plot drawn, named after its figure. */
static void test_svg_dir(void)
{
    g_autofree char *a = make_run_a();
    g_autofree char *out = g_build_filename(tmp, "svg.html", NULL);
    g_autofree char *dir = g_build_filename(tmp, "svgs", "sub", NULL);
    const char *argv[] = {SV_SERVESIM_BIN, "report", a, "-o", out, "--svg-dir", dir, NULL};
    int st = -1;
    g_autofree char *so = NULL, *se = NULL;
    CU_ASSERT_FATAL(sv_test_spawn(argv, &so, &se, &st));
    CU_ASSERT_EQUAL(st, 0);
    const char *ids[] = {"throughput", "running-waiting", "ttft-cdf", "tpot-cdf",
                         "e2el-cdf",   "itl-cdf",         "kv-cache"};
    guint files = 0;
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    CU_ASSERT_FATAL(d != NULL);
    while (g_dir_read_name(d) != NULL)
        files++;
    CU_ASSERT_EQUAL(files, G_N_ELEMENTS(ids));
    for (guint i = 0; i < G_N_ELEMENTS(ids); i++) {
        g_autofree char *f = g_strdup_printf("%s/plot-%s.svg", dir, ids[i]);
        g_autofree char *text = NULL;
        CU_ASSERT(g_file_get_contents(f, &text, NULL, NULL) && g_str_has_prefix(text, "<?xml") &&
                  strstr(text, "<svg") != NULL && g_str_has_suffix(text, "</svg>\n"));
    }
}

/* Two folders with the same base name are labelled by their paths. */
static void test_same_base_name(void)
{
    g_autofree char *a = make_run_a();
    g_autofree char *sum = NULL;
    g_autofree char *sum_path = g_build_filename(a, "summary.json", NULL);
    g_file_get_contents(sum_path, &sum, NULL, NULL);
    g_autofree char *x = g_build_filename(tmp, "x", "run", NULL);
    g_autofree char *y = g_build_filename(tmp, "y", "run", NULL);
    put(x, "summary.json", sum);
    put(y, "summary.json", sum);
    g_autofree char *out = g_build_filename(tmp, "same.html", NULL);
    const char *argv[] = {SV_SERVESIM_BIN, "report", x, y, "-o", out, NULL};
    int st = -1;
    g_autofree char *so = NULL, *se = NULL;
    CU_ASSERT_FATAL(sv_test_spawn(argv, &so, &se, &st));
    CU_ASSERT_EQUAL(st, 0);
    g_autofree char *h = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(out, &h, NULL, NULL));
    g_autofree char *head = g_strdup_printf("<th>%s</th><th>%s</th>", x, y);
    CU_ASSERT(strstr(h, head) != NULL);
}

/* summary.json's instances and pools sections (issue 14) as tables; runs without them say so. */
static void test_instances(void)
{
    g_autofree char *a = make_run_a();
    g_autofree char *d = g_build_filename(tmp, "with-instances", NULL);
    put(d, "summary.json",
        "{\"requests\": {\"finished\": 3}, \"makespan_s\": 2.0,"
        " \"throughput\": {\"output_tokens_per_s\": 10.0},"
        " \"latency_ms\": {\"ttft\": {\"mean\": 1.0}},\n"
        " \"instances\": [{\"id\": 0, \"role\": \"prefill\", \"model\": \"m<1>\","
        " \"hardware\": \"H100-SXM\", \"tp\": 1, \"pp\": 1, \"max_num_seqs\": 7, \"kv_blocks\": "
        "1000,"
        " \"kv_usage_mean_pct\": 12.3456, \"requests_served\": 0, \"prefills\": 3},\n"
        "   {\"id\": 1, \"role\": \"decode\", \"model\": \"m<1>\", \"hardware\": \"A100-80GB\","
        " \"tp\": 2, \"pp\": 1, \"kv_blocks\": 2000, \"kv_usage_mean_pct\": 50,"
        " \"requests_served\": 3}],\n"
        " \"pools\": [{\"role\": \"prefill\", \"instances\": [0], \"kv_blocks\": 1000},"
        " {\"role\": \"decode\", \"instances\": [1, 2], \"kv_blocks\": 2000}]}\n");
    g_autoptr(sv_report_run) r = load(d, "pd");
    g_autoptr(sv_report_run) ra = load(a, "plain");
    CU_ASSERT_FATAL(r != NULL && ra != NULL);
    sv_report_run *runs[2] = {r, ra};
    g_autofree char *h = html_of(runs, 2);
    CU_ASSERT_FATAL(h != NULL);
    CU_ASSERT(strstr(h, "<h2>Instances and pools</h2>") != NULL);
    CU_ASSERT(strstr(h, "<tr><th>id</th><th>role</th><th>model</th><th>hardware</th><th>TP</th>"
                        "<th>PP</th><th>max seqs</th><th>KV blocks</th><th>KV mean %</th>"
                        "<th>served</th>"
                        "<th>prefills</th></tr>") != NULL);
    CU_ASSERT(strstr(h, "<tr><td>0</td><td>prefill</td><td>m&lt;1&gt;</td><td>H100-SXM</td>"
                        "<td>1</td><td>1</td><td>7</td><td>1000</td><td>12.346</td><td>0</td>"
                        "<td>3</td>"
                        "</tr>") != NULL);
    /* instance 1 has no max_num_seqs (a run before issue 14's limits) and no prefills key */
    CU_ASSERT(strstr(h, "<td>2</td><td>1</td><td>&#x2013;</td><td>2000</td>") != NULL);
    CU_ASSERT(strstr(h, "<td>2000</td><td>50</td><td>3</td><td>&#x2013;</td></tr>") != NULL);
    CU_ASSERT(strstr(h, "<tr><td>decode</td><td>1, 2</td><td>2000</td></tr>") != NULL);
    CU_ASSERT(strstr(h, "<h3>plain</h3>\n<p class=\"none\">summary.json has no instances or "
                        "pools section") != NULL);
    /* no run with the sections: no heading */
    g_autofree char *h1 = html_of(&ra, 1);
    CU_ASSERT(strstr(h1, "Instances and pools") == NULL);
}

/* Thinning keeps the first and last points and every peak and trough, in time order. */
static void test_thin(void)
{
    enum { N = 10000 };
    g_autofree double *x = g_new(double, N), *y = g_new(double, N);
    for (guint i = 0; i < N; i++) {
        x[i] = i + 1;
        y[i] = i % 2; /* a comb: every bucket has a 0 and a 1 */
    }
    y[5000] = 100;
    y[7777] = -5;
    g_autofree double *ox = g_new(double, SV_REPORT_MAX_POINTS + 2);
    g_autofree double *oy = g_new(double, SV_REPORT_MAX_POINTS + 2);
    guint m = sv_report__thin(x, y, N, ox, oy);
    CU_ASSERT(m <= SV_REPORT_MAX_POINTS + 2 && m >= SV_REPORT_MAX_POINTS);
    CU_ASSERT(ox[0] == 1 && ox[m - 1] == N);
    gboolean peak = FALSE, trough = FALSE, ordered = TRUE;
    for (guint i = 0; i < m; i++) {
        peak |= ox[i] == 5001 && oy[i] == 100;
        trough |= ox[i] == 7778 && oy[i] == -5;
        if (i > 0)
            ordered &= ox[i] > ox[i - 1];
    }
    CU_ASSERT(peak && trough && ordered);
    /* short lines are copied */
    CU_ASSERT_EQUAL(sv_report__thin(x, y, 3, ox, oy), 3);
    CU_ASSERT(ox[2] == 3 && oy[2] == 0);
}

int main(void)
{
    umask(022);
    tmp = sv_test_tmpdir();
    static const sv_test_case cases[] = {
        {"one run: plots present and absent", test_one_run},
        {"requests.csv: finished requests only", test_requests_read},
        {"two runs: overlay and table", test_two_runs},
        {"power.csv summed over nodes", test_power_sum},
        {"same folders, same bytes", test_deterministic},
        {"errors write nothing", test_errors},
        {"a folder missing a file", test_missing_file},
        {"a real run's summary in the table", test_real_run},
        {"long lines thinned, peaks kept", test_thin},
        {"run.json's command line", test_run_json},
        {"ids unique in the page", test_ids},
        {"instances and pools tables", test_instances},
        {"--svg-dir writes each plot", test_svg_dir},
        {"same base names: labelled by path", test_same_base_name},
        {NULL, NULL},
    };
    sv_test_add_suite("report", cases);
    int rc = sv_test_run();
    sv_test_rmtree(tmp);
    g_free(tmp);
    return rc;
}
