/* Folded TP iterations (issue 11 item 2; docs/parallelism.md "Folded iterations"): an iteration
 * whose TP ring has its links to itself is one node per rank lasting its operators plus its
 * all-reduces in closed form. The reference is the same run with every iteration built per layer
 * and operator (sv_planner_run_cfg.per_layer_dag), its all-reduces run message by message on
 * the flow network: every iteration's start and end, every request's timestamps and token gaps,
 * and the network's message and byte counts must be equal to the nanosecond and the byte, and
 * the folded run must actually have folded (or, where links are shared, must not have). */
#include "planner/planner.h"
#include "tests/test_util.h"

#include <string.h>

static struct sv_planner_cluster_cfg *cluster_from(const char *json)
{
    g_autoptr(GError) e = NULL;
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, json, -1, &e));
    struct sv_planner_cluster_cfg *c =
        sv_planner_cluster_from_json(json_parser_get_root(p), "t.json", &e);
    if (!c)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    return c;
}

#define INST(model, extra)                                                                         \
    "{\"model_name\": \"" model "\", \"hardware\": \"H100\", \"npu_mem\": "                        \
    "{\"mem_size\": 80, \"mem_bw\": 3350}" extra "}"
#define L8B "meta-llama/Llama-3.1-8B"
#define L70B "meta-llama/Llama-3.1-70B"

/* What a run produced, as text: one line per iteration, request and token gap. */
typedef struct {
    GString *iters, *reqs, *gaps;
} digest;

static void on_iter(void *ctx, const struct sv_msg_iter_done *it)
{
    digest *d = ctx;
    g_string_append_printf(d->iters,
                           "%d %" G_GUINT64_FORMAT " %" G_GINT64_FORMAT " %" G_GINT64_FORMAT
                           " %" G_GINT64_FORMAT " %u %u\n",
                           it->instance, it->iteration, it->start_ns, it->end_ns,
                           it->scheduled_tokens, it->n_prefill, it->n_decode);
}

static void on_request(void *ctx, const struct sv_wl_outcome *o)
{
    digest *d = ctx;
    g_string_append_printf(d->reqs,
                           "%" G_GUINT64_FORMAT " %d %" G_GINT64_FORMAT " %" G_GINT64_FORMAT
                           " %" G_GINT64_FORMAT " %" G_GINT64_FORMAT " %u %d\n",
                           o->request_id, o->instance, o->first_scheduled_ns, o->first_token_ns,
                           o->last_token_ns, o->output_tokens, o->preemptions, o->finished);
}

static void on_gap(void *ctx, uint64_t id, sv_time t, sv_time gap)
{
    digest *d = ctx;
    g_string_append_printf(d->gaps, "%" G_GUINT64_FORMAT " %" G_GINT64_FORMAT "\n", id, gap);
}

/* n requests, arrivals every `gap_ns`, input / output lengths cycling through small tables so
 * that batches mix prefill chunks and decodes of different sizes. */
static char *write_trace(const char *dir, int n, sv_time gap_ns)
{
    static const int in[] = {300, 37, 1500, 128, 777};
    static const int out[] = {20, 5, 13, 40, 2};
    g_autoptr(GString) s = g_string_new(NULL);
    for (int i = 0; i < n; i++)
        g_string_append_printf(s,
                               "{\"input_toks\": %d, \"output_toks\": %d, \"arrival_time_ns\": "
                               "%" G_GINT64_FORMAT "}\n",
                               in[i % 5], out[i % 3], (sv_time)i * gap_ns);
    char *path = g_build_filename(dir, "trace.jsonl", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(path, s->str, -1, NULL));
    return path;
}

static void run(const char *json, int n, sv_time gap_ns, const char *net_model, gboolean per_layer,
                digest *d, struct sv_planner_run_result *res)
{
    struct sv_planner_cluster_cfg *c = cluster_from(json);
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *path = write_trace(dir, n, gap_ns);
    g_autoptr(GError) e = NULL;
    sv_wl_source *src = sv_wl_open(path, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(src);
    d->iters = g_string_new(NULL);
    d->reqs = g_string_new(NULL);
    d->gaps = g_string_new(NULL);
    struct sv_planner_run_observer obs = {
        .on_iteration = on_iter, .on_request = on_request, .on_token_gap = on_gap, .ctx = d};
    struct sv_planner_run_cfg cfg = {0};
    cfg.cluster = c;
    cfg.workload = src;
    cfg.latency = SV_PLANNER_RUN_LATENCY_ROOFLINE;
    cfg.enable_prefix_caching = -1;
    cfg.enable_chunked_prefill = -1;
    cfg.reserve_full_isl = -1;
    cfg.max_num_batched_tokens = 1024;
    cfg.network_model = net_model;
    cfg.per_layer_dag = per_layer;
    cfg.observer = &obs;
    gboolean ok = sv_planner_run(&cfg, res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    sv_wl_source_free(src);
    sv_planner_cluster_free(c);
    sv_test_rmtree(dir);
}

static void digest_free(digest *d)
{
    g_string_free(d->iters, TRUE);
    g_string_free(d->reqs, TRUE);
    g_string_free(d->gaps, TRUE);
}

/* Folded and per-layer runs of `json` agree in everything; returns the folded run's count of
 * folded iterations minus its iterations (0: every iteration folded, -iterations: none did), and
 * checks that the per-layer run folded none. */
static int64_t compare(const char *json, int n, sv_time gap_ns, const char *net_model)
{
    digest a, b;
    struct sv_planner_run_result ra, rb;
    run(json, n, gap_ns, net_model, FALSE, &a, &ra);
    run(json, n, gap_ns, net_model, TRUE, &b, &rb);
    SV_ASSERT_EQ_I64(ra.requests, n);
    SV_ASSERT_EQ_I64(rb.requests, n);
    SV_ASSERT_EQ_I64(rb.folded_iterations, 0);
    CU_ASSERT(ra.iterations > 0 && ra.iterations == rb.iterations);
    CU_ASSERT_STRING_EQUAL(a.iters->str, b.iters->str);
    CU_ASSERT_STRING_EQUAL(a.reqs->str, b.reqs->str);
    CU_ASSERT_STRING_EQUAL(a.gaps->str, b.gaps->str);
    SV_ASSERT_EQ_I64(ra.makespan_ns, rb.makespan_ns);
    SV_ASSERT_EQ_I64(ra.net_messages, rb.net_messages);
    SV_ASSERT_EQ_I64(ra.net_bytes, rb.net_bytes);
    CU_ASSERT(rb.net_messages > 0);
    if (strcmp(a.iters->str, b.iters->str) != 0) {
        /* the first differing line, for the log */
        gchar **x = g_strsplit(a.iters->str, "\n", -1), **y = g_strsplit(b.iters->str, "\n", -1);
        for (int i = 0; x[i] && y[i]; i++)
            if (strcmp(x[i], y[i]) != 0) {
                fprintf(stderr, "\nfolded:    %s\nper layer: %s\n", x[i], y[i]);
                break;
            }
        g_strfreev(x);
        g_strfreev(y);
    }
    int64_t folded = (int64_t)ra.folded_iterations - (int64_t)ra.iterations;
    digest_free(&a);
    digest_free(&b);
    return folded;
}

/* TP 2, 4 and 8 on one node of NVLink-like links (FullyConnected and NVSwitch), the flow model:
 * every iteration folds (a busy instance: two batches in flight, mixed prefill and decode). */
static void test_fold_tp(void)
{
    const char *fc[] = {
        "{\"link_bw\": 450, \"link_latency\": 500, \"nodes\": [{\"instances\": [" INST(
            L8B, ", \"num_npus\": 2, \"tp_size\": 2") "]}]}",
        "{\"link_bw\": 450, \"link_latency\": 1900, \"nodes\": [{\"instances\": [" INST(
            L8B, ", \"num_npus\": 4, \"tp_size\": 4") "]}]}",
        "{\"link_bw\": 450, \"link_latency\": 1900, \"nodes\": [{\"instances\": [" INST(
            L70B, ", \"num_npus\": 8, \"tp_size\": 8") "]}]}",
        /* NVSwitch; two TP 4 instances side by side (groups smaller than the machine) */
        "{\"link_bw\": 450, \"link_latency\": 500, \"nodes\": [{\"topology\": {\"kind\": "
        "\"nvlink\"}, \"instances\": [" INST(L8B, ", \"num_npus\": 4, \"tp_size\": 4") "," INST(
            L8B, ", \"num_npus\": 4, \"tp_size\": 4") "]}]}",
    };
    for (size_t k = 0; k < G_N_ELEMENTS(fc); k++)
        SV_ASSERT_EQ_I64(compare(fc[k], 40, 30000000, NULL), 0);
    /* the other timing models too */
    SV_ASSERT_EQ_I64(compare(fc[1], 20, 30000000, "fifo"), 0);
    SV_ASSERT_EQ_I64(compare(fc[1], 20, 30000000, "analytical"), 0);
}

/* Disaggregation: KV transfers run on the same network. On FullyConnected NVLink the prefill
 * rank r -> decode rank r messages take links no TP ring uses, so both instances fold while KV
 * flows run beside their (closed-form) all-reduces; on one NVSwitch every KV message crosses the
 * prefill rank's uplink and the decode rank's downlink, which their rings use: neither folds,
 * and the results are the per-layer ones (the contention is real: docs/disaggregation.md). */
static void test_fold_pd(void)
{
    const char *fc = "{\"link_bw\": 450, \"link_latency\": 500, \"nodes\": [{\"instances\": [" INST(
        L8B, ", \"num_npus\": 2, \"tp_size\": 2, \"pd_type\": \"prefill\"") "," INST(L8B,
                                                                                     ", "
                                                                                     "\"num_"
                                                                                     "npus\": "
                                                                                     "2, "
                                                                                     "\"tp_"
                                                                                     "size\": "
                                                                                     "2, "
                                                                                     "\"pd_"
                                                                                     "type\": "
                                                                                     "\"decode"
                                                                                     "\"") "]}]"
                                                                                           "}";
    SV_ASSERT_EQ_I64(compare(fc, 30, 20000000, NULL), 0);
    const char *sw =
        "{\"link_bw\": 450, \"link_latency\": 500, \"nodes\": [{\"topology\": {\"kind\": "
        "\"nvlink\"}, \"instances\": [" INST(L8B, ", \"num_npus\": 2, \"tp_size\": 2, \"pd_type\": "
                                                  "\"prefill\"") "," INST(L8B, ", \"num_npus\": 2, "
                                                                               "\"tp_size\": 2, "
                                                                               "\"pd_type\": "
                                                                               "\"decode\"") "]}]}";
    CU_ASSERT(compare(sw, 30, 20000000, NULL) < 0);
    struct sv_planner_run_result r;
    digest d;
    run(sw, 30, 20000000, NULL, FALSE, &d, &r);
    SV_ASSERT_EQ_I64(r.folded_iterations, 0);
    digest_free(&d);
}

/* sv_planner_tp_fold_plan on layouts where the answer is known by drawing the routes. */
static gboolean *plan(const char *json, const char *net_model)
{
    struct sv_planner_cluster_cfg *c = cluster_from(json);
    sv_net_model m = SV_NET_MODEL_FLOW;
    if (net_model)
        CU_ASSERT_FATAL(sv_net_model_parse(net_model, &m, NULL));
    sv_engine *eng = sv_engine_new(1);
    g_autoptr(GError) e = NULL;
    sv_planner_cluster_net *cn = sv_planner_cluster_net_new(eng, c, m, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cn);
    gboolean *f = sv_planner_tp_fold_plan(c, cn);
    sv_planner_cluster_net_free(cn);
    sv_engine_free(eng);
    sv_planner_cluster_free(c);
    return f;
}

#define TP2(pd) INST(L8B, ", \"num_npus\": 2, \"tp_size\": 2" pd)
#define TP1(pd) INST(L8B, ", \"num_npus\": 1, \"tp_size\": 1" pd)
#define PRE ", \"pd_type\": \"prefill\""
#define DEC ", \"pd_type\": \"decode\""

static void test_fold_plan(void)
{
    /* four TP 2 instances on FullyConnected: every ring has its two links */
    g_autofree gboolean *a = plan("{\"link_bw\": 450, \"nodes\": [{\"instances\": [" TP2(
                                      "") "," TP2("") "," TP2("") "," TP2("") "]}]}",
                                  NULL);
    for (int i = 0; i < 4; i++)
        CU_ASSERT_TRUE(a[i]);
    /* one NVSwitch, prefill TP 2 -> decode TP 2: KV crosses up(0), up(1), down(2), down(3) */
    g_autofree gboolean *b = plan("{\"link_bw\": 450, \"nodes\": [{\"topology\": {\"kind\": "
                                  "\"nvlink\"}, \"instances\": [" TP2(PRE) "," TP2(DEC) "]}]}",
                                  NULL);
    CU_ASSERT_FALSE(b[0]);
    CU_ASSERT_FALSE(b[1]);
    /* the same under the analytical model, where no message slows another */
    g_autofree gboolean *c = plan("{\"link_bw\": 450, \"nodes\": [{\"topology\": {\"kind\": "
                                  "\"nvlink\"}, \"instances\": [" TP2(PRE) "," TP2(DEC) "]}]}",
                                  "analytical");
    CU_ASSERT_TRUE(c[0]);
    CU_ASSERT_TRUE(c[1]);
    /* two nodes of 4 (FullyConnected in a node): prefill TP 2 on devices 0-1 of node 0 hands
     * to TP 1 decode instances on node 1 (NPUs 4 and 5); rank 1 -> NPU 4 goes 1 -> 0 in node 0
     * first (dimension-ordered routes): the prefill ring's own link. Decode TP 2 on node 1
     * (NPUs 6-7) takes KV from prefill rank r at its rank r: 0 -> 2 and 1 -> 3 in node 0, then
     * the fabric; its own links stay free. */
    g_autofree gboolean *d =
        plan("{\"num_nodes\": 2, \"link_bw\": [450, 50], \"nodes\": [{\"instances\": [" TP2(
                 PRE) "," TP2("") "]}, {\"instances\": [" TP1(DEC) "," TP1(DEC) "," TP2(DEC) "]}]}",
             NULL);
    CU_ASSERT_FALSE(d[0]); /* prefill: its 1 -> 0 link carries KV to NPU 4 */
    CU_ASSERT_TRUE(d[1]);  /* devices 2-3 of node 0: KV to NPUs 6, 7 starts 0 -> 2, 1 -> 3 */
    CU_ASSERT_FALSE(d[2]); /* TP 1: nothing to fold */
    CU_ASSERT_FALSE(d[3]);
    CU_ASSERT_TRUE(d[4]);
    /* a ring of 8: TP 2 pairs sit on their own links; a TP 4 ring's closing step (3 -> 0) runs
     * over the other members' reverse links, its own, so the plan allows it (the closed form
     * then refuses the uneven steps at run time) */
    g_autofree gboolean *e = plan("{\"link_bw\": 100, \"nodes\": [{\"topology\": {\"kind\": "
                                  "\"ring\"}, \"instances\": [" TP2("") "," TP2("") "," INST(
                                      L8B, ", \"num_npus\": 4, \"tp_size\": 4") "]}]}",
                                  NULL);
    CU_ASSERT_TRUE(e[0]);
    CU_ASSERT_TRUE(e[1]);
    CU_ASSERT_TRUE(e[2]);
}

/* The CLI flag: --per-layer-dag gives byte-identical outputs (quick form, TP 4). */
static void test_fold_cli(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *d1 = g_build_filename(dir, "fold", NULL);
    g_autofree char *d2 = g_build_filename(dir, "layer", NULL);
    const char *base[] = {SV_SERVESIM_BIN,
                          "run",
                          "--model",
                          "Llama-3.1-8B",
                          "--hardware",
                          "H100",
                          "--tp",
                          "4",
                          "--requests",
                          "30",
                          "--qps",
                          "8",
                          "--quiet",
                          "--output-dir",
                          d1,
                          NULL,
                          NULL};
    int st;
    g_autofree char *o1 = NULL, *e1 = NULL, *o2 = NULL, *e2 = NULL;
    CU_ASSERT_FATAL(sv_test_spawn(base, &o1, &e1, &st));
    SV_ASSERT_EQ_I64(st, 0);
    base[14] = d2;
    base[15] = "--per-layer-dag";
    CU_ASSERT_FATAL(sv_test_spawn(base, &o2, &e2, &st));
    SV_ASSERT_EQ_I64(st, 0);
    static const char *files[] = {"requests.csv", "timeseries.csv", "summary.json"};
    for (size_t k = 0; k < G_N_ELEMENTS(files); k++) {
        g_autofree char *p1 = g_build_filename(d1, files[k], NULL);
        g_autofree char *p2 = g_build_filename(d2, files[k], NULL);
        g_autofree char *c1 = NULL, *c2 = NULL;
        CU_ASSERT_FATAL(g_file_get_contents(p1, &c1, NULL, NULL));
        CU_ASSERT_FATAL(g_file_get_contents(p2, &c2, NULL, NULL));
        CU_ASSERT_STRING_EQUAL(c1, c2);
    }
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"fold_tp", test_fold_tp},
        {"fold_pd", test_fold_pd},
        {"fold_plan", test_fold_plan},
        {"fold_cli", test_fold_cli},
        {NULL, NULL},
    };
    sv_test_add_suite("fold", cases);
    return sv_test_run();
}
