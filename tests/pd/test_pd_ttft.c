/* Disaggregated TTFT: when the client sees the first token of a request served by a prefill and
 * a decode instance, and what requests.csv reports about it (docs/disaggregation.md,
 * docs/outputs.md).
 *
 * vLLM's disaggregated serving proxy sends the request to the prefill instance with max_tokens=1,
 * waits for that response, then sends it to the decode instance and streams the decode
 * instance's tokens to the client (tests/v1/kv_connector/nixl_integration/toy_proxy_server.py);
 * the decode scheduler, once the KV has been received, sets num_computed_tokens to the prompt
 * length - 1 (Scheduler._update_waiting_for_remote_kv), so its first step recomputes the last
 * prompt token and samples output token 1. Hence
 *
 *     TTFT = prefill done + KV transfer + the decode instance's first (one-token) step
 *
 * on an idle cluster, and the decode instance produces every output token. The expected times
 * below are built from those parts: the transfer in closed form (one FullyConnected hop of the
 * cluster network: latency + bytes / bandwidth; Llama-3.1-8B keeps 4,096 bytes of K and V per
 * token and layer, 32 layers), the steps as the run reports them per instance. */
#include "planner/planner.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <string.h>

#define MODEL "meta-llama/Llama-3.1-8B"
#define KV_TOKEN_BYTES (4096.0 * 32) /* 2 x 8 KV heads x 128 dims x 2 bytes x 32 layers */
#define LINK_GBPS 50.0
#define LINK_LAT_NS 500.0
#define N_REQ 3
#define GAP_NS 2000000000 /* 2 s apart: every request alone on an idle cluster */

typedef struct {
    struct sv_wl_outcome req[N_REQ];
    gboolean seen[N_REQ];
    GArray *iters; /* struct sv_msg_iter_done, in commit order */
    sv_time itl_sum[N_REQ];
    int64_t itl_n[N_REQ];
} obs_t;

static void on_request(void *ctx, const struct sv_wl_outcome *r)
{
    obs_t *o = ctx;
    g_assert(r->request_id < N_REQ);
    o->req[r->request_id] = *r;
    o->seen[r->request_id] = TRUE;
}

static void on_iteration(void *ctx, const struct sv_msg_iter_done *it)
{
    obs_t *o = ctx;
    g_array_append_val(o->iters, *it);
}

static void on_gap(void *ctx, uint64_t id, sv_time t, sv_time gap)
{
    obs_t *o = ctx;
    g_assert(id < N_REQ);
    o->itl_sum[id] += gap;
    o->itl_n[id]++;
}

static char *write_file(const char *dir, const char *name, const char *text)
{
    char *path = g_build_filename(dir, name, NULL);
    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    return path;
}

/* One node, H100s on a 50 GB/s, 500 ns FullyConnected level; `pd`: a prefill and a decode
 * instance, else one combined instance. */
static char *cluster(const char *dir, gboolean pd)
{
    const char *inst = "{\"model_name\": \"" MODEL "\", \"hardware\": \"H100\", \"npu_mem\": "
                       "{\"mem_size\": 80, \"mem_bw\": 2000, \"mem_latency\": 0}, \"num_npus\": "
                       "1, \"tp_size\": 1, \"pd_type\": %s}";
    g_autofree char *p = g_strdup_printf(inst, "\"prefill\"");
    g_autofree char *d = g_strdup_printf(inst, "\"decode\"");
    g_autofree char *b = g_strdup_printf(inst, "null");
    g_autofree char *text = g_strdup_printf(
        "{\"num_nodes\": 1, \"link_bw\": %g, \"link_latency\": %g, \"nodes\": [{"
        "\"num_instances\": %d, \"cpu_mem\": {\"mem_size\": 64, \"mem_bw\": 50, "
        "\"mem_latency\": 0}, \"instances\": [%s%s%s]}]}",
        LINK_GBPS, LINK_LAT_NS, pd ? 2 : 1, pd ? p : b, pd ? ", " : "", pd ? d : "");
    return write_file(dir, pd ? "pd.json" : "solo.json", text);
}

/* Requests k = 0..N_REQ-1: prompts of 1000, 700, 400 tokens, outputs of 6, 1, 3 tokens. */
static const int64_t IN[N_REQ] = {1000, 700, 400}, OUT[N_REQ] = {6, 1, 3};

static char *workload(const char *dir)
{
    GString *w = g_string_new(NULL);
    for (int k = 0; k < N_REQ; k++)
        g_string_append_printf(w,
                               "{\"input_toks\": %" G_GINT64_FORMAT
                               ", \"output_toks\": %" G_GINT64_FORMAT
                               ", \"arrival_time_ns\": %" G_GINT64_FORMAT "}\n",
                               IN[k], OUT[k], (int64_t)k * GAP_NS);
    char *path = write_file(dir, "w.jsonl", w->str);
    g_string_free(w, TRUE);
    return path;
}

static void run(const char *cp, const char *wp, obs_t *o, struct sv_planner_run_result *res)
{
    g_autoptr(GError) e = NULL;
    struct sv_planner_cluster_cfg *cl = sv_planner_cluster_load(cp, &e);
    g_assert_no_error(e);
    sv_wl_source *wl = sv_wl_open(wp, NULL, &e);
    g_assert_no_error(e);
    memset(o, 0, sizeof *o);
    o->iters = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    struct sv_planner_run_observer ob = {
        .on_request = on_request, .on_iteration = on_iteration, .on_token_gap = on_gap, .ctx = o};
    struct sv_planner_run_cfg rc = {
        .cluster = cl,
        .workload = wl,
        .latency = SV_PLANNER_RUN_LATENCY_ROOFLINE,
        .enable_prefix_caching = -1,
        .enable_chunked_prefill = -1,
        .reserve_full_isl = -1,
        .observer = &ob,
    };
    CU_ASSERT_TRUE(sv_planner_run(&rc, res, &e));
    g_assert_no_error(e);
    sv_wl_source_free(wl);
    sv_planner_cluster_free(cl);
}

/* The iteration of `instance` that starts at `start` (-1: none). */
static const struct sv_msg_iter_done *iter_at(const obs_t *o, int32_t instance, sv_time start)
{
    for (guint i = 0; i < o->iters->len; i++) {
        const struct sv_msg_iter_done *it = &g_array_index(o->iters, struct sv_msg_iter_done, i);
        if (it->instance == instance && it->start_ns == start)
            return it;
    }
    return NULL;
}

static void test_ttft_after_handoff(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cp = cluster(dir, TRUE);
    g_autofree char *cs = cluster(dir, FALSE);
    g_autofree char *wp = workload(dir);
    obs_t pd, solo;
    struct sv_planner_run_result rp, rs;
    run(cp, wp, &pd, &rp);
    run(cs, wp, &solo, &rs);
    SV_ASSERT_EQ_I64(rp.kv_handoffs, N_REQ); /* a one-token request is handed off too */
    double bpns = sv_bw_gbps_to_bytes_per_ns(LINK_GBPS);
    sv_time transfer_sum = 0;
    for (int k = 0; k < N_REQ; k++) {
        CU_ASSERT_TRUE_FATAL(pd.seen[k] && solo.seen[k]);
        const struct sv_wl_outcome *r = &pd.req[k], *s = &solo.req[k];
        /* The prefill instance's step completes the prompt, as on a combined instance. */
        SV_ASSERT_EQ_I64(r->prefill_instance, 0);
        SV_ASSERT_EQ_I64(r->instance, 1);
        SV_ASSERT_EQ_I64(r->arrival_ns, (sv_time)k * GAP_NS);
        SV_ASSERT_EQ_I64(r->prefill_done_ns, s->prefill_done_ns);
        SV_ASSERT_EQ_I64(s->prefill_done_ns, s->first_token_ns);
        SV_ASSERT_EQ_I64(s->kv_ready_ns, -1);
        const struct sv_msg_iter_done *pf = iter_at(&pd, 0, r->arrival_ns);
        CU_ASSERT_PTR_NOT_NULL_FATAL(pf);
        SV_ASSERT_EQ_I64(pf->end_ns, r->prefill_done_ns);
        SV_ASSERT_EQ_I64(pf->gen_tokens, 0); /* its sampled token is discarded */
        SV_ASSERT_EQ_I64(pf->prompt_tokens, IN[k]);
        /* Then the whole prompt's KV crosses one hop. */
        sv_time transfer = (sv_time)(LINK_LAT_NS + (double)IN[k] * KV_TOKEN_BYTES / bpns);
        CU_ASSERT(llabs((r->kv_ready_ns - r->prefill_done_ns) - transfer) <= 1);
        transfer_sum += r->kv_ready_ns - r->prefill_done_ns;
        /* Then the idle decode instance's first step: one token (the last prompt token) over
         * input - 1 tokens of KV, yielding output token 1: the first token the client sees. */
        const struct sv_msg_iter_done *d1 = iter_at(&pd, 1, r->kv_ready_ns);
        CU_ASSERT_PTR_NOT_NULL_FATAL(d1);
        SV_ASSERT_EQ_I64(d1->scheduled_tokens, 1);
        SV_ASSERT_EQ_I64(d1->n_decode, 1);
        SV_ASSERT_EQ_I64(d1->n_prefill, 0);
        SV_ASSERT_EQ_I64(d1->gen_tokens, 1);
        SV_ASSERT_EQ_I64(d1->prompt_tokens, 0); /* credited once, on the prefill instance */
        SV_ASSERT_EQ_I64(r->first_token_ns, d1->end_ns);
        /* TTFT = prefill + transfer + one decode step: the combined instance's TTFT plus the
         * hand-off and that step. */
        sv_time ttft = r->first_token_ns - r->arrival_ns;
        SV_ASSERT_EQ_I64(ttft, (s->first_token_ns - s->arrival_ns) +
                                   (r->kv_ready_ns - r->prefill_done_ns) +
                                   (d1->end_ns - d1->start_ns));
        /* The decode instance produces every output token: out steps in all, out - 1 after the
         * first, whose gaps (ITL) add up to last - first, so TPOT = (last - first) / (out - 1)
         * is their mean, as vLLM's benchmark computes it. */
        const struct sv_msg_iter_done *it;
        /* With async scheduling (vLLM 0.19, docs/serving.md) a step starts when the GPU is
         * free, before the previous one commits: count the decode instance's steps between the
         * KV's arrival and the last token (requests are apart: each runs alone). */
        int steps = 0;
        sv_time t = -1;
        for (guint i = 0; i < pd.iters->len; i++) {
            it = &g_array_index(pd.iters, struct sv_msg_iter_done, i);
            if (it->instance != 1 || it->start_ns < r->kv_ready_ns || it->end_ns > r->last_token_ns)
                continue;
            SV_ASSERT_EQ_I64(it->scheduled_tokens, 1);
            steps++;
            t = MAX(t, it->end_ns);
        }
        SV_ASSERT_EQ_I64(steps, OUT[k]);
        SV_ASSERT_EQ_I64(t, r->last_token_ns);
        SV_ASSERT_EQ_I64(pd.itl_n[k], OUT[k] - 1);
        SV_ASSERT_EQ_I64(pd.itl_sum[k], r->last_token_ns - r->first_token_ns);
        if (OUT[k] == 1)
            SV_ASSERT_EQ_I64(r->last_token_ns, r->first_token_ns);
    }
    SV_ASSERT_EQ_I64(rp.kv_transfer_ns, transfer_sum);
    g_array_free(pd.iters, TRUE);
    g_array_free(solo.iters, TRUE);
    sv_test_rmtree(dir);
}

/* Field `name` of every data row of a CSV, as integers (-1 for an empty field). */
static GArray *csv_column(const char *path, const char *name)
{
    g_autoptr(GError) e = NULL;
    g_autoptr(sv_csv) c = sv_csv_open(path, &e);
    g_assert_no_error(e);
    int col = sv_csv_col(c, name);
    GArray *a = g_array_new(FALSE, FALSE, sizeof(int64_t));
    if (col < 0)
        return a;
    while (sv_csv_next(c, &e)) {
        const char *f = sv_csv_field(c, (guint)col);
        int64_t v = f[0] ? g_ascii_strtoll(f, NULL, 10) : -1;
        g_array_append_val(a, v);
    }
    g_assert_no_error(e);
    return a;
}

static char *header_of(const char *path)
{
    g_autofree char *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    return g_strndup(text, strcspn(text, "\n"));
}

#define COL(name) (&g_array_index(cols[name], int64_t, 0))

/* servesim run on the PD cluster: requests.csv keeps its columns in their order and ends with
 * prefill_instance, prefill_done_ns, kv_ready_ns; ttft_ns and tpot_ns keep vLLM's definitions
 * over the client's first token. A combined cluster's file has no such columns. */
static void test_requests_csv_columns(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cp = cluster(dir, TRUE);
    g_autofree char *cs = cluster(dir, FALSE);
    g_autofree char *wp = workload(dir);
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    const char *argv[] = {SV_SERVESIM_BIN, "run",      "--cluster",    cp,  "--workload", wp,
                          "--latency",     "roofline", "--output-dir", out, "--quiet",    NULL};
    char *so = NULL, *se = NULL;
    int status = -1;
    CU_ASSERT_TRUE_FATAL(sv_test_spawn(argv, &so, &se, &status));
    SV_ASSERT_EQ_I64(status, 0);
    g_free(so);
    g_free(se);
    g_autofree char *csv = g_build_filename(out, "requests.csv", NULL);
    g_autofree char *h = header_of(csv);
    CU_ASSERT_STRING_EQUAL(h, "request_id,instance,arrival_ns,first_scheduled_ns,first_token_ns,"
                              "last_token_ns,input_tokens,output_tokens,prefix_hit_tokens,"
                              "preemptions,ttft_ns,tpot_ns,e2e_ns,queue_ns,prefill_instance,"
                              "prefill_done_ns,kv_ready_ns,status,reject_reason");
    enum { ARR, FIRST, LAST, OUTT, TTFT, TPOT, E2E, PINST, PDONE, KV, INST, NCOL };
    const char *names[NCOL] = {
        "arrival_ns", "first_token_ns",   "last_token_ns",   "output_tokens", "ttft_ns", "tpot_ns",
        "e2e_ns",     "prefill_instance", "prefill_done_ns", "kv_ready_ns",   "instance"};
    GArray *cols[NCOL];
    for (int c = 0; c < NCOL; c++) {
        cols[c] = csv_column(csv, names[c]);
        SV_ASSERT_EQ_I64(cols[c]->len, N_REQ);
    }
    for (int k = 0; k < N_REQ; k++) {
        SV_ASSERT_EQ_I64(COL(INST)[k], 1);
        SV_ASSERT_EQ_I64(COL(PINST)[k], 0);
        SV_ASSERT_EQ_I64(COL(OUTT)[k], OUT[k]);
        CU_ASSERT(COL(ARR)[k] < COL(PDONE)[k]);
        CU_ASSERT(COL(PDONE)[k] < COL(KV)[k]);
        CU_ASSERT(COL(KV)[k] < COL(FIRST)[k]);
        SV_ASSERT_EQ_I64(COL(TTFT)[k], COL(FIRST)[k] - COL(ARR)[k]);
        SV_ASSERT_EQ_I64(COL(E2E)[k], COL(LAST)[k] - COL(ARR)[k]);
        SV_ASSERT_EQ_I64(COL(TPOT)[k],
                         OUT[k] > 1 ? (COL(LAST)[k] - COL(FIRST)[k]) / (OUT[k] - 1) : -1);
    }
    for (int c = 0; c < NCOL; c++)
        g_array_free(cols[c], TRUE);

    argv[3] = cs;
    CU_ASSERT_TRUE_FATAL(sv_test_spawn(argv, &so, &se, &status));
    SV_ASSERT_EQ_I64(status, 0);
    g_free(so);
    g_free(se);
    g_autofree char *h2 = header_of(csv);
    CU_ASSERT_STRING_EQUAL(h2, "request_id,instance,arrival_ns,first_scheduled_ns,first_token_ns,"
                               "last_token_ns,input_tokens,output_tokens,prefix_hit_tokens,"
                               "preemptions,ttft_ns,tpot_ns,e2e_ns,queue_ns,status,reject_reason");
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"ttft_after_kv_handoff", test_ttft_after_handoff},
        {"requests_csv_pd_columns", test_requests_csv_columns},
        {NULL, NULL},
    };
    sv_test_add_suite("pd_ttft", cases);
    return sv_test_run();
}
