/* Heterogeneous pipeline stages (issue 15 item 5; docs/parallelism.md "Heterogeneous pipeline
 * stages"): stages on the same hardware give today's PP run byte for byte; an H100 stage and an
 * A100 stage each take their own device's time for their half of the layers; the KV pool is the
 * smaller stage's, computed by hand from the model's shapes; bad stage lists are errors naming
 * the config path. */
#include "planner/planner.h"
#include "tests/test_util.h"

#include <glib/gstdio.h>
#include <string.h>

static struct sv_planner_cluster_cfg *parse(const char *json, GError **error)
{
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, json, -1, NULL));
    return sv_planner_cluster_from_json(json_parser_get_root(p), "t.json", error);
}

/* Llama-3.1-8B (its config.json) on one instance, PP2; `stages` is the stages key or "". */
#define CLUSTER(stages)                                                                            \
    "{\"link_bw\": 450, \"link_latency\": 500, \"nodes\": [{\"instances\": [{\"model_name\": "     \
    "\"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100\", \"npu_mem\": {\"mem_size\": 80}, "       \
    "\"pp_size\": 2" stages "}]}]}"

typedef struct {
    GArray *it; /* struct sv_msg_iter_done of instance 0 */
} iters;

static void on_iter(void *ctx, const struct sv_msg_iter_done *s)
{
    iters *x = ctx;
    if (s->instance == 0)
        g_array_append_val(x->it, *s);
}

/* One request of 64 prompt tokens and 4 output tokens at t = 0: a prefill, then decodes of KV
 * history 64, 65, 66, one batch in flight at a time. */
static gboolean run(const char *json, iters *x, struct sv_planner_run_result *res, GError **error)
{
    struct sv_planner_cluster_cfg *c = parse(json, error);
    if (!c)
        return FALSE;
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *path = g_build_filename(dir, "trace.jsonl", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(
        path, "{\"input_toks\": 64, \"output_toks\": 4, \"arrival_time_ns\": 0}\n", -1, NULL));
    sv_wl_source *src = sv_wl_open(path, NULL, error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(src);
    x->it = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    struct sv_planner_run_observer obs = {.on_iteration = on_iter, .ctx = x};
    struct sv_planner_run_cfg cfg = {0};
    cfg.cluster = c;
    cfg.workload = src;
    cfg.latency = SV_PLANNER_RUN_LATENCY_ROOFLINE;
    cfg.enable_prefix_caching = -1;
    cfg.enable_chunked_prefill = -1;
    cfg.reserve_full_isl = -1;
    cfg.enable_attn_offloading = -1;
    cfg.enable_sub_batch_interleaving = -1;
    cfg.enable_local_offloading = -1;
    cfg.observer = &obs;
    gboolean ok = sv_planner_run(&cfg, res, error);
    sv_wl_source_free(src);
    sv_planner_cluster_free(c);
    sv_test_rmtree(dir);
    return ok;
}

/* Stages that name the instance's own hardware (in two spellings) and vLLM's split: the same
 * run as the instance without `stages`, iteration for iteration (every field of every record),
 * with the same KV pool and makespan. */
static void test_same_hardware_identical(void)
{
    iters x = {0}, y = {0};
    struct sv_planner_run_result r1, r2;
    g_autoptr(GError) e = NULL;
    CU_ASSERT_FATAL(run(CLUSTER(""), &x, &r1, &e));
    gboolean ok = run(CLUSTER(", \"stages\": [{\"hardware\": \"H100\", \"layers\": 16}, "
                              "{\"hardware\": \"H100-SXM\", \"layers\": 16}]"),
                      &y, &r2, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    SV_ASSERT_EQ_I64(r1.makespan_ns, r2.makespan_ns);
    SV_ASSERT_EQ_I64(r1.kv_blocks, r2.kv_blocks);
    SV_ASSERT_EQ_I64(r1.requests, 1);
    SV_ASSERT_EQ_I64(r1.net_bytes, r2.net_bytes);
    CU_ASSERT_FATAL(x.it->len > 0 && x.it->len == y.it->len);
    CU_ASSERT(memcmp(x.it->data, y.it->data, x.it->len * sizeof(struct sv_msg_iter_done)) == 0);
    g_array_free(x.it, TRUE);
    g_array_free(y.it, TRUE);
}

/* One stage's compute for a decode of KV history `kv`: the roofline of `hw` over layers
 * [lb, le), with the run's CUDA-graph sizes (LLMServingSim's CLI defaults 128 / 2048). */
static sv_time stage_ns(const char *hw_name, int64_t lb, int64_t le, int64_t kv)
{
    struct sv_compute_model_cfg m;
    struct sv_compute_hw_cfg hw;
    CU_ASSERT_FATAL(sv_compute_model_lookup("meta-llama/Llama-3.1-8B", NULL, &m, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_catalog_lookup(NULL, hw_name, &hw, NULL));
    sv_compute_latency *lat = sv_compute_latency_new_roofline(&m, &hw, 1, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lat);
    sv_compute_latency_set_cudagraph(lat, 128, 2048);
    struct sv_compute_batch_shape s;
    sv_compute_batch_shape_init(&s, NULL, NULL, 0, &kv, 1);
    struct sv_compute_iter_time it;
    sv_compute_iter_time(lat, &s, lb, le, &it);
    sv_compute_latency_free(lat);
    return it.total_ns;
}

/* The hidden state of one decode token from stage 0 to stage 1: 4,096 x 2 bytes over one link
 * of 450 ASTRA-sim GB/s (2^30 B per 1e9 ns: core.h) and 500 ns; the flow model finishes at the
 * latency + floor(bytes / rate) = 500 + floor(8192 / 483.18) = 516 ns. */
#define HOP_NS (500 + (8192LL * 1000000000LL) / (450LL * 1073741824LL))

/* Each decode iteration = stage 0's layers [0, split) on its device + the hop + stage 1's layers
 * [split, 32) on its device + the host's step. The same formula holds for H100 + H100 (today's PP)
 * and for H100 + A100. */
static void check_decodes(const char *hw0, const char *hw1, int64_t split, const char *json)
{
    iters x = {0};
    struct sv_planner_run_result r;
    g_autoptr(GError) e = NULL;
    gboolean ok = run(json, &x, &r, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    int64_t kv = 64;
    int n = 0;
    for (guint i = 0; i < x.it->len; i++) {
        const struct sv_msg_iter_done *s = &g_array_index(x.it, struct sv_msg_iter_done, i);
        if (s->n_decode != 1 || s->n_prefill != 0)
            continue;
        /* + the host's step time (msg/host.c: the fitted C0 + C1 x 1 sequence, the run's
         * default, the same on every device) */
        sv_time want = stage_ns(hw0, 0, split, kv) + HOP_NS + stage_ns(hw1, split, 32, kv) +
                       sv_msg_host_step_ns(SV_MSG_HOST_FITTED, 1);
        SV_ASSERT_EQ_I64(s->end_ns - s->start_ns, want);
        kv++;
        n++;
    }
    SV_ASSERT_EQ_I64(n, 3);
    g_array_free(x.it, TRUE);
}

static void test_stage_times(void)
{
    check_decodes("H100-SXM", "H100-SXM", 16, CLUSTER(""));
    check_decodes("H100-SXM", "A100-80GB", 16,
                  CLUSTER(", \"stages\": [{\"hardware\": \"H100\"}, {\"hardware\": "
                          "\"A100-80GB\"}]"));
    /* An explicit split: 20 layers on the H100, 12 on the A100. */
    check_decodes("H100-SXM", "A100-80GB", 20,
                  CLUSTER(", \"stages\": [{\"hardware\": \"H100\", \"layers\": 20}, "
                          "{\"hardware\": \"A100-80GB\", \"layers\": 12}]"));
    /* The A100 stage is slower: its 16 layers read the same weights at 2,039 GB/s, not 3,350. */
    CU_ASSERT(stage_ns("A100-80GB", 16, 32, 64) > stage_ns("H100-SXM", 16, 32, 64));
}

/* KV blocks by hand. Llama-3.1-8B (config.json: hidden 4096, 32 heads, 8 KV heads of 128,
 * intermediate 14336, 32 layers, vocab 128256, untied embeddings, bf16):
 *   per layer: q 4096^2 + k, v 2 x 4096 x 1024 + o 4096^2 + MLP 3 x 4096 x 14336 + 2 norms 4096
 *            = 218,112,000 params
 *   model: 32 x 218,112,000 + embedding and lm_head 2 x 128256 x 4096 + final norm 4096
 *        = 8,030,261,248 params = 16,060,522,496 B.
 * KV per token per layer: 2 (K, V) x 8 x 128 x 2 B = 4,096 B; a block of 16 tokens of a stage's
 * layers: 16 x 4,096 x layers.
 * Stage blocks = (trunc(mem GiB x 2^30 x 0.9) - weights x layers / 32) / block bytes (LLMServingSim
 * memory_model.py); the instance's pool is the smallest (vLLM's PP: the minimum over workers). */
static uint64_t blocks_by_hand(double gib, uint64_t layers)
{
    uint64_t params = 32ull * 218112000ull + 2ull * 128256ull * 4096ull + 4096ull;
    CU_ASSERT_EQUAL(params, 8030261248ull);
    uint64_t weights = params * 2 * layers / 32;
    uint64_t avail = (uint64_t)(gib * 1073741824.0 * 0.9);
    return (avail - weights) / (16ull * 4096ull * layers);
}

static void test_kv_min(void)
{
    /* H100 80 GiB with 20 layers, A100-40GB (the catalog's 40 GiB) with 12 layers. */
    iters x = {0};
    struct sv_planner_run_result r;
    g_autoptr(GError) e = NULL;
    gboolean ok = run(CLUSTER(", \"stages\": [{\"hardware\": \"H100\", \"layers\": 20}, "
                              "{\"hardware\": \"A100-40GB\", \"layers\": 12}]"),
                      &x, &r, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    uint64_t h = blocks_by_hand(80, 20), a = blocks_by_hand(40, 12);
    /* 80 GiB: (77,309,411,328 - 10,037,826,560) / 1,310,720 = 51,324;
     * 40 GiB: (38,654,705,664 - 6,022,695,936) / 786,432 = 41,493 */
    SV_ASSERT_EQ_I64(h, 51324);
    SV_ASSERT_EQ_I64(a, 41493);
    SV_ASSERT_EQ_I64(r.kv_blocks, MIN(h, a));
    g_array_free(x.it, TRUE);
    /* The A100-40GB stage's own mem_size wins over the catalog: 60 GiB, so the H100 stage is
     * the smaller one. */
    x = (iters){0};
    g_clear_error(&e);
    CU_ASSERT_FATAL(run(CLUSTER(", \"stages\": [{\"hardware\": \"H100\", \"layers\": 20}, "
                                "{\"hardware\": \"A100-40GB\", \"layers\": 12, \"mem_size\": 60}]"),
                        &x, &r, &e));
    CU_ASSERT(blocks_by_hand(60, 12) > h);
    SV_ASSERT_EQ_I64(r.kv_blocks, h);
    g_array_free(x.it, TRUE);
    /* The instance's npu_mem (8 GiB: too small for half the weights, an error without stages)
     * does not matter when every stage has its own memory: 80 GiB each, 16 layers each:
     * (77,309,411,328 - 8,030,261,248) / 1,048,576 = 66,069. */
    x = (iters){0};
    g_clear_error(&e);
    const char *small = "{\"link_bw\": 450, \"link_latency\": 500, \"nodes\": [{\"instances\": "
                        "[{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100\", "
                        "\"npu_mem\": {\"mem_size\": 8}, \"pp_size\": 2%s}]}]}";
    g_autofree char *no_stages = g_strdup_printf(small, "");
    g_autofree char *with = g_strdup_printf(
        small, ", \"stages\": [{\"hardware\": \"H100\", \"mem_size\": 80}, {\"hardware\": "
               "\"A100-80GB\"}]");
    CU_ASSERT_FALSE(run(no_stages, &x, &r, &e));
    g_array_free(x.it, TRUE);
    x = (iters){0};
    g_clear_error(&e);
    CU_ASSERT_FATAL(run(with, &x, &r, &e));
    SV_ASSERT_EQ_I64(blocks_by_hand(80, 16), 66069);
    SV_ASSERT_EQ_I64(r.kv_blocks, 66069);
    g_array_free(x.it, TRUE);
}

static void expect_error(const char *json, gboolean at_parse, const char *want)
{
    g_autoptr(GError) e = NULL;
    gboolean ok;
    if (at_parse) {
        struct sv_planner_cluster_cfg *c = parse(json, &e);
        ok = c != NULL;
        sv_planner_cluster_free(c);
    } else {
        iters x = {0};
        struct sv_planner_run_result r;
        ok = run(json, &x, &r, &e);
        if (x.it)
            g_array_free(x.it, TRUE);
    }
    CU_ASSERT_FALSE(ok);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    if (!strstr(e->message, want))
        fprintf(stderr, "want \"%s\" in: %s\n", want, e->message);
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, want));
}

static void test_errors(void)
{
    expect_error(CLUSTER(", \"stages\": [{\"hardware\": \"H100\"}, {\"layers\": 16}]"), TRUE,
                 "t.json: nodes[0].instances[0].stages[1]: no hardware");
    expect_error(CLUSTER(", \"stages\": [{\"hardware\": \"H100\"}]"), TRUE,
                 "t.json: nodes[0].instances[0].stages: 1 stage(s) but pp_size is 2");
    expect_error("{\"nodes\": [{\"instances\": [{\"model_name\": \"meta-llama/Llama-3.1-8B\", "
                 "\"hardware\": \"H100\", \"npu_mem\": {\"mem_size\": 80}, \"stages\": "
                 "[{\"hardware\": \"A100\"}]}]}]}",
                 TRUE, "t.json: nodes[0].instances[0].stages: needs pp_size 2 or more");
    expect_error(CLUSTER(", \"stages\": {\"hardware\": \"H100\"}"), TRUE,
                 "t.json: nodes[0].instances[0].stages: must be a list");
    expect_error(CLUSTER(", \"stages\": [{\"hardware\": \"H100\", \"layers\": 16}, "
                         "{\"hardware\": \"A100\"}]"),
                 TRUE, "t.json: nodes[0].instances[0].stages: layers given for 1 of 2 stages");
    expect_error(CLUSTER(", \"stages\": [{\"hardware\": \"H100\"}, {\"hardware\": \"Z900\"}]"),
                 FALSE, "t.json: nodes[0].instances[0].stages[1].hardware: ");
    expect_error(CLUSTER(", \"stages\": [{\"hardware\": \"H100\", \"layers\": 16}, "
                         "{\"hardware\": \"A100\", \"layers\": 14}]"),
                 FALSE,
                 "t.json: nodes[0].instances[0].stages: layers sum to 30 but "
                 "meta-llama/Llama-3.1-8B has 32 layers");
    expect_error(CLUSTER(", \"stages\": [{\"hardware\": \"H100\", \"layers\": 0}, "
                         "{\"hardware\": \"A100\", \"layers\": 32}]"),
                 TRUE, "t.json: nodes[0].instances[0].stages[0].layers");
    /* 4 GiB x 0.9 cannot hold half of Llama-3.1-8B's 16 GB of weights */
    expect_error(CLUSTER(", \"stages\": [{\"hardware\": \"H100\", \"mem_size\": 4}, "
                         "{\"hardware\": \"A100\"}]"),
                 FALSE, "t.json: nodes[0].instances[0].stages[0] (H100): kv cache: ");
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"same_hardware_identical", test_same_hardware_identical},
        {"stage_times", test_stage_times},
        {"kv_min", test_kv_min},
        {"errors", test_errors},
        {NULL, NULL},
    };
    sv_test_add_suite("hetpp", cases);
    return sv_test_run();
}
