/* Conservation (docs/reliability.md, "Conservation"): the time series credits each prompt token
 * once, whatever preemptions recompute (before issue 13 msg/sched.c credited every
 * recomputation, and a chunk of one token not at all); the end-of-run checks refuse counts that
 * disagree, as internal errors with the numbers. */
#include "metrics/metrics.h"
#include "msg/msg.h"
#include "planner/planner_internal.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <json-glib/json-glib.h>
#include <string.h>

/* ---- one serving group, stepped by hand ------------------------------------------------------ */

typedef struct {
    int64_t prompt, gen;
    int done;
} sums;

static void on_iter_done(void *ctx, const struct sv_msg_iter_done *it)
{
    sums *s = ctx;
    s->prompt += it->prompt_tokens;
    s->gen += it->gen_tokens;
}

static void on_req_done(void *ctx, const struct sv_wl_outcome *o, void *user)
{
    ((sums *)ctx)->done++;
}

/* Requests (prompt, output) served to the end by vLLM's scheduler on `blocks` KV blocks of 16
 * tokens with a token budget; returns the group's preemptions. */
static uint64_t serve(uint32_t blocks, int64_t budget, const int64_t (*req)[2], int n, sums *s)
{
    memset(s, 0, sizeof *s);
    sv_engine *eng = sv_engine_new(1);
    sv_memtier_kv_manager *kv = sv_memtier_kv_manager_new(blocks, 16, FALSE);
    struct sv_msg_cfg c = {
        .scheduler = SV_MSG_SCHED_VLLM,
        .max_num_seqs = 128,
        .max_num_batched_tokens = budget,
        .enable_chunked_prefill = TRUE,
        .kv = kv,
        .num_devices = 1,
        .manual = TRUE,
    };
    struct sv_msg_hooks h = {.on_iter_done = on_iter_done, .on_req_done = on_req_done, .ctx = s};
    sv_msg *m = sv_msg_new(eng, &c, &h, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    for (int i = 0; i < n; i++) {
        sv_wl_req r = {
            .request_id = (uint64_t)i, .input_tokens = req[i][0], .output_tokens = req[i][1]};
        CU_ASSERT_FATAL(sv_msg_submit(m, &r, NULL, NULL));
    }
    GArray *out = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_sched_entry));
    for (int k = 1; k <= 10000 && s->done < n; k++) {
        g_array_set_size(out, 0);
        sv_msg_schedule_step(m, out);
        sv_msg_commit(m, 10 * k);
    }
    CU_ASSERT_EQUAL(s->done, n);
    uint64_t pre = sv_msg_num_preemptions(m);
    g_array_free(out, TRUE);
    sv_msg_free(m);
    sv_memtier_kv_manager_free(kv);
    sv_engine_free(eng);
    return pre;
}

/* 8 blocks of 16 (tests/msg/test_msg.c's preemption case): A and B (64-token prompts, 20 output
 * tokens) fill 4 blocks each; A's 65th token needs a fifth, B is preempted and recomputed later
 * (65 tokens) after A finished, then C. Prompt tokens credited: 64 + 64 + 15 = 143, not 143 + 65.
 */
static void test_prompt_once_with_preemption(void)
{
    const int64_t req[3][2] = {{64, 20}, {64, 20}, {15, 2}};
    sums s;
    uint64_t pre = serve(8, 2048, req, 3, &s);
    CU_ASSERT(pre >= 1);
    SV_ASSERT_EQ_I64(s.prompt, 143);
    SV_ASSERT_EQ_I64(s.gen, 42);
}

/* Budget 2: step 1 is A's first 2 prompt tokens; step 2 A's last one (its prefill completes) and a
 * one-token chunk of B; then B's prompt one token per step beside A's decodes, two per step once A
 * finished. One-token chunks were not credited before (8 of the 13 prompt tokens). Prompts 3 + 10
 * credited, outputs 5 + 2. */
static void test_prompt_one_token_chunk(void)
{
    const int64_t req[2][2] = {{3, 5}, {10, 2}};
    sums s;
    CU_ASSERT_EQUAL(serve(100, 2, req, 2, &s), 0);
    SV_ASSERT_EQ_I64(s.prompt, 13);
    SV_ASSERT_EQ_I64(s.gen, 7);
}

/* ---- servesim run with preemptions ----------------------------------------------------------- */

/* 40 requests of 1000 + 500 tokens at once on a 20 GiB H100 (Llama-3.1-8B: ~2 GiB of KV for
 * ~16k tokens of the 60k they reach): many preemptions. The time series' prompt tokens are the
 * 40,000 of the prompts, the output tokens 20,000; before issue 13 the recomputations added tens
 * of thousands of prompt tokens. */
static void test_run_with_preemptions(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cluster =
        sv_test_write_cluster(dir, "meta-llama/Llama-3.1-8B", "H100-SXM", 20);
    g_autofree char *trace = g_build_filename(dir, "w.jsonl", NULL);
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    GString *w = g_string_new(NULL);
    for (int i = 0; i < 40; i++)
        g_string_append_printf(
            w, "{\"input_toks\": 1000, \"output_toks\": 500, \"arrival_time_ns\": %d}\n", i * 1000);
    CU_ASSERT_FATAL(g_file_set_contents(trace, w->str, -1, NULL));
    g_string_free(w, TRUE);
    g_autofree char *bin = g_canonicalize_filename(SV_SERVESIM_BIN, NULL);
    const char *argv[] = {bin,         "run",      "--cluster",    cluster, "--workload", trace,
                          "--latency", "roofline", "--output-dir", out,     "--quiet",    NULL};
    g_autofree char *so = NULL, *se = NULL;
    int status = -1;
    CU_ASSERT_FATAL(sv_test_spawn(argv, &so, &se, &status));
    if (status != 0)
        fprintf(stderr, "%s\n", se ? se : "");
    CU_ASSERT_EQUAL_FATAL(status, 0);

    g_autofree char *sp = g_build_filename(out, "summary.json", NULL);
    JsonParser *jp = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_file(jp, sp, NULL));
    JsonObject *root = json_node_get_object(json_parser_get_root(jp));
    CU_ASSERT(json_object_get_int_member(root, "preemptions") >= 10);
    g_object_unref(jp);

    g_autofree char *tp = g_build_filename(out, "timeseries.csv", NULL);
    g_autofree char *text = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(tp, &text, NULL, NULL));
    g_auto(GStrv) lines = g_strsplit(g_strchomp(text), "\n", -1);
    CU_ASSERT_STRING_EQUAL(lines[0], "t,prompt_throughput,gen_throughput,running,waiting,"
                                     "kv_cache_pct");
    double prompt = 0, gen = 0; /* 1 s ticks: tokens per s = tokens */
    for (int i = 1; lines[i]; i++) {
        g_auto(GStrv) f = g_strsplit(lines[i], ",", -1);
        prompt += g_ascii_strtod(f[1], NULL);
        gen += g_ascii_strtod(f[2], NULL);
    }
    CU_ASSERT_DOUBLE_EQUAL(prompt, 40000, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(gen, 20000, 1e-6);
    sv_test_rmtree(dir);
}

/* ---- the output writer's end-of-run checks --------------------------------------------------- */

static struct sv_wl_outcome finished(uint64_t id, int64_t in, int64_t out)
{
    return (struct sv_wl_outcome){.request_id = id,
                                  .arrival_ns = 0,
                                  .first_scheduled_ns = 0,
                                  .first_token_ns = 100,
                                  .last_token_ns = 200,
                                  .prefill_instance = -1,
                                  .prefill_done_ns = -1,
                                  .kv_ready_ns = -1,
                                  .input_tokens = in,
                                  .output_tokens = out,
                                  .finished = TRUE};
}

static int count_entries(const char *dir)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    int n = 0;
    while (d && g_dir_read_name(d))
        n++;
    if (d)
        g_dir_close(d);
    return n;
}

/* One request of 100 + 4 tokens; the steps reported `prompt` and `gen` tokens. */
static gboolean finish_tokens(int64_t prompt, int64_t gen, gboolean check, GError **error,
                              int *files)
{
    g_autofree char *dir = sv_test_tmpdir();
    struct sv_metrics_cfg cfg = {.output_dir = dir, .n_instances = 1, .check_conservation = check};
    sv_metrics *m = sv_metrics_new(&cfg, error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    sv_metrics_tokens(m, 0, 100, prompt, 1);
    sv_metrics_sample(m, 0, 100, 1, 0, 1.0);
    sv_metrics_tokens(m, 0, 200, 0, gen - 1);
    sv_metrics_sample(m, 0, 200, 0, 0, 0.0);
    struct sv_wl_outcome r = finished(0, 100, 4);
    CU_ASSERT_FATAL(sv_metrics_request_add(m, &r, error));
    gboolean ok = sv_metrics_finish(m, 200, 1, error);
    sv_metrics_free(m);
    *files = count_entries(dir);
    sv_test_rmtree(dir);
    return ok;
}

static void test_writer_tokens(void)
{
    GError *e = NULL;
    int files = 0;
    CU_ASSERT_TRUE(finish_tokens(100, 4, TRUE, &e, &files));
    CU_ASSERT_EQUAL(files, 3);
    /* a recomputation credited again: 160 prompt tokens for a 100-token prompt */
    CU_ASSERT_FALSE(finish_tokens(160, 4, TRUE, &e, &files));
    CU_ASSERT_TRUE(g_error_matches(e, SV_CORE_ERROR, SV_CORE_ERROR_INTERNAL));
    CU_ASSERT_PTR_NOT_NULL(e && strstr(e->message, "prompt tokens are not conserved: the time "
                                                   "series credits 160, the 1 finished requests "
                                                   "have 100"));
    CU_ASSERT_EQUAL(files, 0); /* nothing written */
    g_clear_error(&e);
    /* a token lost */
    CU_ASSERT_FALSE(finish_tokens(100, 3, TRUE, &e, &files));
    CU_ASSERT_PTR_NOT_NULL(e && strstr(e->message, "output tokens are not conserved: the steps "
                                                   "produced 3, the 1 finished requests asked "
                                                   "for 4"));
    g_clear_error(&e);
    /* a writer fed by hand (no check asked) takes it */
    CU_ASSERT_TRUE(finish_tokens(160, 3, FALSE, &e, &files));
}

/* Power rows at 1 s and 3 s (the row at 3 s stands for the left-out row at 2 s too): 100 W
 * throughout integrates to 300 J. */
static gboolean finish_energy(double summary_j, double last_row_j, GError **error)
{
    static const char *const names[] = {"npu"};
    struct sv_metrics_cfg cfg = {.n_instances = 1,
                                 .power_nodes = 1,
                                 .power_components = names,
                                 .n_power_components = 1,
                                 .check_conservation = TRUE};
    sv_metrics *m = sv_metrics_new(&cfg, error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    double w = 100, j1 = 100;
    sv_metrics_power_row(m, 1000000000, &w, &j1, 100, 100);
    sv_metrics_power_row(m, 3000000000, &w, &last_row_j, 100, last_row_j);
    struct sv_metrics_energy me = {.n_components = 1, .total_j = summary_j};
    me.component_names[0] = "npu";
    me.by_component_j[0] = summary_j;
    sv_metrics_set_energy(m, &me);
    gboolean ok = sv_metrics_finish(m, 3000000000, 0, error);
    sv_metrics_free(m);
    return ok;
}

static void test_writer_energy(void)
{
    GError *e = NULL;
    CU_ASSERT_TRUE(finish_energy(300, 300, &e));
    g_clear_error(&e);
    /* the summary counts the left-out second twice */
    CU_ASSERT_FALSE(finish_energy(400, 400, &e));
    CU_ASSERT_TRUE(g_error_matches(e, SV_CORE_ERROR, SV_CORE_ERROR_INTERNAL));
    CU_ASSERT_PTR_NOT_NULL(e && strstr(e->message, "energy is not conserved: the summary has 400 "
                                                   "J, the 2 power rows integrate to 300 J"));
    g_clear_error(&e);
    /* the rows end elsewhere than the summary */
    CU_ASSERT_FALSE(finish_energy(300, 310, &e));
    CU_ASSERT_PTR_NOT_NULL(e && strstr(e->message, "end at 310 J"));
    g_clear_error(&e);
}

/* ---- the planner's end-of-run checks ----------------------------------------------------------
 */

static void test_planner_checks(void)
{
    GError *e = NULL;
    struct sv_planner__requests r = {.arrived = 10, .finished = 7, .rejected = 0, .held = 3};
    CU_ASSERT_TRUE(sv_planner__check_requests(&r, &e));
    r.held = 2; /* a request lost without a trace */
    CU_ASSERT_FALSE(sv_planner__check_requests(&r, &e));
    CU_ASSERT_TRUE(g_error_matches(e, SV_CORE_ERROR, SV_CORE_ERROR_INTERNAL));
    CU_ASSERT_PTR_NOT_NULL(e && strstr(e->message, "10 arrived, but 7 finished + 0 rejected + 2 "
                                                   "still held by the instances = 9"));
    g_clear_error(&e);
    CU_ASSERT_TRUE(sv_planner__check_bytes(NULL, NULL, &e));
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"prompt tokens once with a preemption", test_prompt_once_with_preemption},
        {"prompt tokens of a one-token chunk", test_prompt_one_token_chunk},
        {"servesim run with preemptions", test_run_with_preemptions},
        {"writer: tokens", test_writer_tokens},
        {"writer: energy", test_writer_energy},
        {"planner: requests", test_planner_checks},
        {NULL, NULL},
    };
    sv_test_add_suite("conserve", cases);
    return sv_test_run();
}
