/* Memory tiers end to end (issue 8 tests 6 and 7; planner/tiers.c): sv_planner_run
 * with lower tiers, weight placement off the NPU and the reference configs that use them.
 *
 * Constants (Llama-3.1-8B, bf16, tp 1; issue 8 tests): decoder block 436,224,000 B; whole model
 * 16,060,522,496 B; KV per token of all 32 layers 2 (K,V) x 8 KV heads x 128 x 2 B x 32 =
 * 131,072 B; a 256-token chunk 33,554,432 B. */
#include "planner/planner.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <string.h>

#define LAYER_BYTES UINT64_C(436224000)
#define MODEL_BYTES UINT64_C(16060522496)
#define TOKEN_KV_BYTES UINT64_C(131072)

#define MAX_REQS 64
struct collect {
    int n;
    struct sv_wl_outcome out[MAX_REQS];
};

static void on_request(void *ctx, const struct sv_wl_outcome *rec)
{
    struct collect *c = ctx;
    if (c->n < MAX_REQS)
        c->out[c->n++] = *rec;
}

static const struct sv_wl_outcome *find_req(const struct collect *c, uint64_t id)
{
    for (int i = 0; i < c->n; i++)
        if (c->out[i].request_id == id)
            return &c->out[i];
    return NULL;
}

/* A trace of `n` requests, each with the prompt token ids 1..prompt and `output` output tokens,
 * arriving `gap_ns` apart (the first at 0). */
static char *write_trace(const char *dir, int n, int prompt, int output, sv_time gap_ns)
{
    char *path = g_build_filename(dir, "trace.jsonl", NULL);
    GString *s = g_string_new(NULL);
    for (int r = 0; r < n; r++) {
        g_string_append_printf(
            s,
            "{\"input_toks\":%d,\"output_toks\":%d,\"arrival_time_ns\":%" G_GINT64_FORMAT
            ",\"input_tok_ids\":[",
            prompt, output, (gint64)(gap_ns * r));
        for (int t = 1; t <= prompt; t++)
            g_string_append_printf(s, "%s%d", t > 1 ? "," : "", t);
        g_string_append(s, "]}\n");
    }
    CU_ASSERT_FATAL(g_file_set_contents(path, s->str, -1, NULL));
    g_string_free(s, TRUE);
    return path;
}

static struct sv_planner_cluster_cfg *parse(const char *json)
{
    JsonParser *p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, json, -1, NULL));
    GError *e = NULL;
    struct sv_planner_cluster_cfg *c =
        sv_planner_cluster_from_json(json_parser_get_root(p), "cluster.json", &e);
    if (!c)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    g_object_unref(p);
    return c;
}

/* Run `c` on `trace` with the roofline; FALSE + error when the run fails. */
static gboolean run(const struct sv_planner_cluster_cfg *c, const char *trace,
                    const struct sv_planner_tier_flags *flags, const char *router,
                    struct collect *col, struct sv_planner_run_result *res, GError **error)
{
    sv_wl_source *src = sv_wl_open(trace, NULL, error);
    if (!src)
        return FALSE;
    struct sv_planner_run_observer obs = {.on_request = on_request, .ctx = col};
    struct sv_planner_run_cfg cfg = {
        .cluster = c,
        .workload = src,
        .latency = SV_PLANNER_RUN_LATENCY_ROOFLINE,
        .scheduler = SV_MSG_SCHED_VLLM,
        .router_name = router,
        .tier_flags = flags,
        .observer = &obs,
        .enable_prefix_caching = -1,
        .enable_chunked_prefill = -1,
        .reserve_full_isl = -1,
    };
    gboolean ok = sv_planner_run(&cfg, res, error);
    sv_wl_source_free(src);
    return ok;
}

/* Every tier kind: owners sum to used, used <= capacity (the ledger invariant, test 7). */
static void check_ledgers(const struct sv_planner_tier_stats *s)
{
    for (int k = 0; k < SV_MEMTIER_KIND_COUNT; k++) {
        uint64_t sum = 0;
        for (int o = 0; o < SV_MEMTIER_OWNER_COUNT; o++)
            sum += s->used_by[k][o];
        CU_ASSERT_EQUAL(sum, s->used[k]);
        CU_ASSERT(s->used[k] <= s->kind[k].capacity);
        CU_ASSERT(s->kind[k].peak <= s->kind[k].capacity);
    }
}

#define TWO_INST                                                                                   \
    "{\"num_nodes\":1,\"link_bw\":112,\"link_latency\":0,\"nodes\":[{\"num_instances\":2,"         \
    "\"cpu_mem\":{\"mem_size\":128,\"mem_bw\":256,\"mem_latency\":0},"                             \
    "\"pcie\":{\"bw_gbps\":64},\"instances\":["                                                    \
    "{\"model_name\":\"meta-llama/Llama-3.1-8B\",\"hardware\":\"H100\",\"npu_mem\":"               \
    "{\"mem_size\":80,\"mem_bw\":3350,\"mem_latency\":0}},"                                        \
    "{\"model_name\":\"meta-llama/Llama-3.1-8B\",\"hardware\":\"H100\",\"npu_mem\":"               \
    "{\"mem_size\":80,\"mem_bw\":3350,\"mem_latency\":0}}]}]}"

/* The hierarchy (memory-tier/hier.c) may still be a stub in this tree: then the run refuses
 * prefix_storage with "not yet implemented" and the test says so. */
static gboolean hier_missing(const GError *e)
{
    return e && e->domain == SV_MEMTIER_ERROR && e->code == SV_MEMTIER_ERROR_UNSUPPORTED;
}

/* Test 6: a node-shared cpu pool serves instance 1 the chunks instance 0 wrote. Two requests of
 * the same 513 token ids, round robin, the second long after the first finished. Hit cap:
 * floor((513 - 1) / 256) = 2 chunks = 512 tokens, all from the cpu pool (instance 1's NPU pool
 * is empty): kv_load_bytes = 512 x 131,072 = 67,108,864 B, over [dram 256, h2d 64] = 64 B/ns:
 * 1,048,576 ns. Without sharing (a pool per instance) instance 1 finds nothing. */
static void test_shared_pool_serves_b(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *trace = write_trace(dir, 2, 513, 1, 10 * G_GINT64_CONSTANT(1000000000));
    struct sv_planner_cluster_cfg *c = parse(TWO_INST);
    for (int sharing = 1; sharing >= 0; sharing--) {
        struct sv_planner_tier_flags f;
        sv_planner_tier_flags_init(&f);
        g_strlcpy(f.prefix_storage, "cpu", sizeof f.prefix_storage);
        f.enable_prefix_sharing = sharing;
        struct collect col = {0};
        struct sv_planner_run_result res;
        GError *e = NULL;
        gboolean ok = run(c, trace, &f, "round_robin", &col, &res, &e);
        if (!ok && hier_missing(e)) {
            printf("\nSKIP: shared pool: %s (memory-tier/hier.c not merged yet)\n", e->message);
            g_error_free(e);
            break;
        }
        if (!ok)
            fprintf(stderr, "%s\n", e->message);
        CU_ASSERT_FATAL(ok);
        CU_ASSERT_EQUAL_FATAL(col.n, 2);
        const struct sv_wl_outcome *a = find_req(&col, 0), *b = find_req(&col, 1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        CU_ASSERT_PTR_NOT_NULL_FATAL(b);
        SV_ASSERT_EQ_I64(a->instance, 0);
        SV_ASSERT_EQ_I64(b->instance, 1);
        SV_ASSERT_EQ_I64(b->prefix_hit_tokens_npu, 0);
        SV_ASSERT_EQ_I64(b->prefix_hit_tokens_cpu, sharing ? 512 : 0);
        SV_ASSERT_EQ_I64(b->kv_load_bytes, sharing ? UINT64_C(67108864) : 0);
        SV_ASSERT_EQ_I64(a->prefix_hit_tokens_cpu, 0);
        CU_ASSERT(res.has_tiers);
        check_ledgers(&res.tiers);
        /* Two chunks written through (instance 0) + one load (instance 1 with sharing; without,
         * instance 1 writes its own two chunks): 2 x 33,554,432 + 67,108,864 either way. */
        SV_ASSERT_EQ_I64(res.tiers.bytes_booked, UINT64_C(134217728));
        SV_ASSERT_EQ_I64(res.tiers.used_by[SV_MEMTIER_DRAM][SV_MEMTIER_OWNER_PREFIX],
                         (sharing ? 2 : 4) * UINT64_C(33554432));
    }
    /* The load is on B's critical path: with every tier ideal (latency 0) B's first token comes
     * exactly 67,108,864 / 64 = 1,048,576 ns earlier (A's writes ended long before B). */
    sv_time ttft[2] = {-1, -1};
    for (int ideal = 0; ideal <= 1; ideal++) {
        struct sv_planner_tier_flags f;
        sv_planner_tier_flags_init(&f);
        g_strlcpy(f.prefix_storage, "cpu", sizeof f.prefix_storage);
        f.enable_prefix_sharing = 1;
        if (ideal)
            g_strlcpy(f.memory_model, "ideal", sizeof f.memory_model);
        struct collect col = {0};
        struct sv_planner_run_result res;
        GError *e = NULL;
        if (!run(c, trace, &f, "round_robin", &col, &res, &e)) {
            CU_ASSERT(hier_missing(e));
            g_error_free(e);
            break;
        }
        const struct sv_wl_outcome *b = find_req(&col, 1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(b);
        ttft[ideal] = b->first_token_ns - b->arrival_ns;
    }
    if (ttft[0] >= 0 && ttft[1] >= 0)
        SV_ASSERT_EQ_I64(ttft[0] - ttft[1], 1048576);
    sv_planner_cluster_free(c);
    sv_test_rmtree(dir);
}

/* Test 7 (weights): blocks 28-31 on the host (docs/memory-tiers.md's worked example on an H100).
 * Ledgers at the end: cpu WEIGHTS = 4 x 436,224,000 = 1,744,896,000 B and nothing else (no live
 * or evicted KV left on a host tier); HBM weights 16,060,522,496 - 1,744,896,000 =
 * 14,315,626,496 B; every iteration streams the 4 blocks once: fabric bytes = iterations x
 * 1,744,896,000, all read from the cpu tier. */
/* Host memory with no bandwidth is an error naming the key once the run uses it as a tier (here
 * for streamed weights); cpu_mem.ideal: true makes it a latency-only tier instead. */
static void test_zero_bandwidth(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *trace = write_trace(dir, 1, 100, 4, 0);
    const char *fmt =
        "{\"num_nodes\":1,\"link_bw\":112,\"link_latency\":0,\"nodes\":[{\"num_instances\":1,"
        "\"cpu_mem\":{\"mem_size\":512,\"mem_bw\":0,\"mem_latency\":0%s},"
        "\"instances\":[{\"model_name\":\"meta-llama/Llama-3.1-8B\",\"hardware\":\"H100\","
        "\"npu_mem\":{\"mem_size\":80,\"mem_bw\":3350,\"mem_latency\":0},"
        "\"placement\":{\"blocks\":[{\"blocks\":\"31\",\"weights\":\"cpu\"}]}}]}]}";
    g_autofree char *bad = g_strdup_printf(fmt, "");
    struct sv_planner_cluster_cfg *c = parse(bad);
    struct collect col = {0};
    struct sv_planner_run_result res;
    GError *e = NULL;
    CU_ASSERT_FALSE(run(c, trace, NULL, NULL, &col, &res, &e));
    CU_ASSERT(e != NULL && strstr(e->message, "nodes[0].cpu_mem.mem_bw: host memory is a tier") &&
              strstr(e->message, "got 0"));
    g_clear_error(&e);
    sv_planner_cluster_free(c);
    g_autofree char *ok_cfg = g_strdup_printf(fmt, ",\"ideal\":true");
    c = parse(ok_cfg);
    memset(&col, 0, sizeof col);
    CU_ASSERT(run(c, trace, NULL, NULL, &col, &res, &e));
    g_clear_error(&e);
    sv_planner_cluster_free(c);
    sv_test_rmtree(dir);
}

static void test_weight_ledgers(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *trace = write_trace(dir, 3, 100, 4, 0);
    struct sv_planner_cluster_cfg *c =
        parse("{\"num_nodes\":1,\"link_bw\":112,\"link_latency\":0,\"nodes\":[{\"num_instances\":1,"
              "\"cpu_mem\":{\"mem_size\":512,\"mem_bw\":256,\"mem_latency\":0},"
              "\"pcie\":{\"bw_gbps\":64},\"instances\":["
              "{\"model_name\":\"meta-llama/Llama-3.1-8B\",\"hardware\":\"H100\",\"npu_mem\":"
              "{\"mem_size\":80,\"mem_bw\":3350,\"mem_latency\":0},"
              "\"placement\":{\"blocks\":[{\"blocks\":\"28-31\",\"weights\":\"cpu\"}]}}]}]}");
    struct collect col = {0};
    struct sv_planner_run_result res;
    GError *e = NULL;
    gboolean ok = run(c, trace, NULL, NULL, &col, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    CU_ASSERT_EQUAL(col.n, 3);
    CU_ASSERT_FATAL(res.has_tiers);
    const struct sv_planner_tier_stats *s = &res.tiers;
    check_ledgers(s);
    SV_ASSERT_EQ_I64(s->used_by[SV_MEMTIER_DRAM][SV_MEMTIER_OWNER_WEIGHTS], UINT64_C(1744896000));
    SV_ASSERT_EQ_I64(s->used[SV_MEMTIER_DRAM], UINT64_C(1744896000));
    SV_ASSERT_EQ_I64(s->used_by[SV_MEMTIER_DRAM][SV_MEMTIER_OWNER_LIVE_KV], 0);
    SV_ASSERT_EQ_I64(s->used_by[SV_MEMTIER_DRAM][SV_MEMTIER_OWNER_EVICTED_KV], 0);
    SV_ASSERT_EQ_I64(s->used_by[SV_MEMTIER_HBM][SV_MEMTIER_OWNER_WEIGHTS], UINT64_C(14315626496));
    /* KV pool of issue 8 test 11: 30,037 blocks (29,205 with every weight in HBM). */
    SV_ASSERT_EQ_I64(res.kv_blocks, 30037);
    CU_ASSERT(res.iterations > 0);
    SV_ASSERT_EQ_I64(s->bytes_booked, res.iterations * UINT64_C(1744896000));
    SV_ASSERT_EQ_I64(s->kind[SV_MEMTIER_DRAM].read_bytes, s->bytes_booked);
    sv_planner_cluster_free(c);
    sv_test_rmtree(dir);
}

/* The shipped configs that use tiers run. single_node_cxl_instance: every weight part on one of
 * 4 CXL devices (issue 8 test 10: cxl sum = 16,060,522,496 B, HBM weights 0); each iteration
 * streams every part except the 8,192-B final norm, which sits on cxl:2 apart from the head on
 * cxl:3 and is not streamed (planner/tiers.c): 16,060,514,304 B per iteration.
 * single_node_memory_instance: everything on the NPU, no tier. */
static void test_reference_configs(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim/configs/cluster", "LLMServingSim's cluster configs");
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *trace = write_trace(dir, 4, 64, 4, 1000000);
    GError *e = NULL;
    struct sv_planner_cluster_cfg *c = sv_planner_cluster_load(
        SV_SHARED "/reference/llmservingsim/configs/cluster/single_node_cxl_instance.json", &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    struct collect col = {0};
    struct sv_planner_run_result res;
    gboolean ok = run(c, trace, NULL, NULL, &col, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    CU_ASSERT_EQUAL(col.n, 4);
    CU_ASSERT_FATAL(res.has_tiers);
    check_ledgers(&res.tiers);
    SV_ASSERT_EQ_I64(res.tiers.used_by[SV_MEMTIER_CXL][SV_MEMTIER_OWNER_WEIGHTS], MODEL_BYTES);
    SV_ASSERT_EQ_I64(res.tiers.used_by[SV_MEMTIER_HBM][SV_MEMTIER_OWNER_WEIGHTS], 0);
    SV_ASSERT_EQ_I64(res.kv_blocks, 44236);
    SV_ASSERT_EQ_I64(res.tiers.bytes_booked, res.iterations * (MODEL_BYTES - 8192));
    sv_planner_cluster_free(c);

    c = sv_planner_cluster_load(
        SV_SHARED "/reference/llmservingsim/configs/cluster/single_node_memory_instance.json", &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    struct collect col2 = {0};
    ok = run(c, trace, NULL, NULL, &col2, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    CU_ASSERT_EQUAL(col2.n, 4);
    CU_ASSERT(!res.has_tiers);
    sv_planner_cluster_free(c);
    sv_test_rmtree(dir);
}

/* Two requests of distinct token ids (request r: ids r*10000 + 1..prompt) arriving at 0. */
static char *write_trace_distinct(const char *dir, int n, int prompt, int output)
{
    char *path = g_build_filename(dir, "distinct.jsonl", NULL);
    GString *s = g_string_new(NULL);
    for (int r = 0; r < n; r++) {
        g_string_append_printf(s,
                               "{\"input_toks\":%d,\"output_toks\":%d,\"arrival_time_ns\":0,"
                               "\"input_tok_ids\":[",
                               prompt, output);
        for (int t = 1; t <= prompt; t++)
            g_string_append_printf(s, "%s%d", t > 1 ? "," : "", r * 10000 + t);
        g_string_append(s, "]}\n");
    }
    CU_ASSERT_FATAL(g_file_set_contents(path, s->str, -1, NULL));
    g_string_free(s, TRUE);
    return path;
}

/* One H100 whose KV pool holds only 42 blocks: mem_size 15.04 GiB at mem_util 1 =
 * trunc(15.04 x 2^30) = 16,149,077,032 B; minus the weights 16,060,522,496 = 88,554,536 B;
 * / 2,097,152 B per 16-token block = 42 blocks. */
#define TINY_KV                                                                                    \
    "{\"num_nodes\":1,\"link_bw\":112,\"link_latency\":0,\"nodes\":[{\"num_instances\":1,"         \
    "\"cpu_mem\":{\"mem_size\":128,\"mem_bw\":256,\"mem_latency\":0},"                             \
    "\"pcie\":{\"bw_gbps\":64},\"instances\":["                                                    \
    "{\"model_name\":\"meta-llama/Llama-3.1-8B\",\"hardware\":\"H100\",\"npu_mem\":"               \
    "{\"mem_size\":15.04,\"mem_bw\":3350,\"mem_latency\":0,\"mem_util\":1}}]}]}"

/* Swap preemption end to end (docs/memory-tiers.md use 3, test 7's swap run): two requests of 200
 * prompt and 200 output tokens on the 42-block pool. Each prompt takes ceil(200/16) = 13 blocks;
 * both decode together until each holds 21 blocks (336 tokens, the pool full); request 0's next
 * token needs a 22nd block, so request 1 (the last running) is swapped out with 21 x 2,097,152 =
 * 44,040,192 B to the host over [d2h 64, dram 256] (64 B/ns: 688,128 ns) and swapped back in
 * (same bytes and time) when request 0 (25 blocks at the end) has finished. */
#define VICTIM_BYTES UINT64_C(44040192)
static void test_swap(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *trace = write_trace_distinct(dir, 2, 200, 200);
    struct sv_planner_cluster_cfg *c = parse(TINY_KV);
    sv_time makespan[2] = {0, 0};
    for (int ideal = 0; ideal <= 1; ideal++) {
        struct sv_planner_tier_flags f;
        sv_planner_tier_flags_init(&f);
        g_strlcpy(f.preemption_mode, "swap", sizeof f.preemption_mode);
        if (ideal)
            g_strlcpy(f.memory_model, "ideal", sizeof f.memory_model);
        struct collect col = {0};
        struct sv_planner_run_result res;
        GError *e = NULL;
        gboolean ok = run(c, trace, &f, NULL, &col, &res, &e);
        if (!ok)
            fprintf(stderr, "%s\n", e->message);
        CU_ASSERT_FATAL(ok);
        SV_ASSERT_EQ_I64(res.kv_blocks, 42);
        CU_ASSERT_EQUAL_FATAL(col.n, 2);
        CU_ASSERT_FATAL(res.has_tiers);
        const struct sv_planner_tier_stats *s = &res.tiers;
        check_ledgers(s);
        uint64_t out_sum = 0, in_sum = 0;
        for (int i = 0; i < col.n; i++) {
            SV_ASSERT_EQ_I64(col.out[i].swap_out_bytes, col.out[i].swap_in_bytes);
            out_sum += col.out[i].swap_out_bytes;
            in_sum += col.out[i].swap_in_bytes;
        }
        /* The victim: request 1 (vLLM v0 preempts the last running one), 21 blocks. */
        const struct sv_wl_outcome *b = find_req(&col, 1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(b);
        SV_ASSERT_EQ_I64(b->swap_out_bytes, VICTIM_BYTES);
        SV_ASSERT_EQ_I64(find_req(&col, 0)->swap_out_bytes, 0);
        SV_ASSERT_EQ_I64(s->msg.swap_outs, 1);
        SV_ASSERT_EQ_I64(s->msg.swap_ins, 1);
        SV_ASSERT_EQ_I64(s->msg.swap_fallbacks, 0);
        CU_ASSERT(s->swap);
        SV_ASSERT_EQ_I64(s->kind[SV_MEMTIER_DRAM].peak_by_owner[SV_MEMTIER_OWNER_EVICTED_KV],
                         VICTIM_BYTES);
        SV_ASSERT_EQ_I64(out_sum, in_sum);
        SV_ASSERT_EQ_I64(s->msg.swap_out_bytes, out_sum);
        SV_ASSERT_EQ_I64(s->msg.swap_in_bytes, in_sum);
        SV_ASSERT_EQ_I64(s->used_by[SV_MEMTIER_DRAM][SV_MEMTIER_OWNER_EVICTED_KV], 0);
        makespan[ideal] = res.end_ns;
    }
    /* Nothing but the swap moves over the fabric and both requests arrive at 0, so both runs
     * take the same decisions; the finite run is longer by the swap-out and the swap-in, each on
     * the critical path of its step: 2 x 44,040,192 / 64 B/ns = 2 x 688,128 = 1,376,256 ns. */
    SV_ASSERT_EQ_I64(makespan[0] - makespan[1], 2 * 688128);
    /* summary.json's "swap" (servesim run --preemption-mode swap). */
    g_autofree char *cluster = g_build_filename(dir, "cluster.json", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(cluster, TINY_KV, -1, NULL));
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    const char *argv[] = {SV_SERVESIM_BIN,     "run",  "--cluster",    cluster,
                          "--workload",        trace,  "--latency",    "roofline",
                          "--preemption-mode", "swap", "--output-dir", out,
                          "--quiet",           NULL};
    char *so = NULL, *se = NULL;
    int status = -1;
    CU_ASSERT_FATAL(sv_test_spawn(argv, &so, &se, &status));
    if (status != 0)
        fprintf(stderr, "%s\n", se);
    CU_ASSERT_EQUAL_FATAL(status, 0);
    g_free(so);
    g_free(se);
    g_autofree char *sum_path = g_build_filename(out, "summary.json", NULL);
    JsonParser *p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_file(p, sum_path, NULL));
    JsonObject *sw =
        json_object_get_object_member(json_node_get_object(json_parser_get_root(p)), "swap");
    CU_ASSERT_PTR_NOT_NULL_FATAL(sw);
    SV_ASSERT_EQ_I64(json_object_get_int_member(sw, "swap_outs"), 1);
    SV_ASSERT_EQ_I64(json_object_get_int_member(sw, "swap_ins"), 1);
    SV_ASSERT_EQ_I64(json_object_get_int_member(sw, "out_bytes"), (int64_t)VICTIM_BYTES);
    SV_ASSERT_EQ_I64(json_object_get_int_member(sw, "in_bytes"), (int64_t)VICTIM_BYTES);
    SV_ASSERT_EQ_I64(json_object_get_int_member(sw, "fallbacks"), 0);
    g_object_unref(p);
    sv_planner_cluster_free(c);
    sv_test_rmtree(dir);
}

/* Live KV on the host (placement default kv_loc cpu; docs/memory-tiers.md use 2). One request of
 * 1,024 prompt tokens and 2 output tokens on an H100 with cpu_mem 128 GiB: HBM holds no KV, so the
 * host caps the pool: 137,438,953,472 B / (32 layers x 4,096 B x 16 tokens = 2,097,152 B) = 65,536
 * blocks, all charged LIVE_KV on the host at setup. The decode step reads the 1,024 tokens of
 * history of every layer from the host: 1,024 x 4,096 = 4,194,304 B over [dram 256, h2d 64] = 64
 * B/ns: 65,536 ns per layer. With --offload-overlap serial each layer waits for its read, so the
 * decode step (the gap between the two tokens) is 32 x 65,536 = 2,097,152 ns longer than with every
 * tier ideal (latency 0: reads take no time). The new token's KV (4,096 B per layer, 64 ns) is
 * stored after each layer; the store is not a predecessor of the next layer, but under the
 * ASTRA-sim issue policy (dag/dag.h: one comm op in flight per device; MEM_LOAD and MEM_STORE
 * are comm ops) the next layer's read waits for it: + 64 ns for layers 0..30, while the last
 * store runs beside the head's compute. Total 2,097,152 + 31 x 64 = 2,099,136 ns. */
static void test_live_kv_cpu(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *trace = write_trace_distinct(dir, 1, 1024, 2);
    struct sv_planner_cluster_cfg *c =
        parse("{\"num_nodes\":1,\"link_bw\":112,\"link_latency\":0,\"nodes\":[{\"num_instances\":1,"
              "\"cpu_mem\":{\"mem_size\":128,\"mem_bw\":256,\"mem_latency\":0},"
              "\"pcie\":{\"bw_gbps\":64},\"instances\":["
              "{\"model_name\":\"meta-llama/Llama-3.1-8B\",\"hardware\":\"H100\",\"npu_mem\":"
              "{\"mem_size\":80,\"mem_bw\":3350,\"mem_latency\":0},"
              "\"placement\":{\"default\":{\"kv_loc\":\"cpu\"}}}]}]}");
    sv_time itl[2] = {0, 0};
    for (int ideal = 0; ideal <= 1; ideal++) {
        struct sv_planner_tier_flags f;
        sv_planner_tier_flags_init(&f);
        g_strlcpy(f.offload_overlap, "serial", sizeof f.offload_overlap);
        if (ideal)
            g_strlcpy(f.memory_model, "ideal", sizeof f.memory_model);
        struct collect col = {0};
        struct sv_planner_run_result res;
        GError *e = NULL;
        gboolean ok = run(c, trace, &f, NULL, &col, &res, &e);
        if (!ok)
            fprintf(stderr, "%s\n", e->message);
        CU_ASSERT_FATAL(ok);
        CU_ASSERT_EQUAL_FATAL(col.n, 1);
        SV_ASSERT_EQ_I64(res.kv_blocks, 65536);
        CU_ASSERT_FATAL(res.has_tiers);
        check_ledgers(&res.tiers);
        SV_ASSERT_EQ_I64(res.tiers.used_by[SV_MEMTIER_DRAM][SV_MEMTIER_OWNER_LIVE_KV],
                         UINT64_C(137438953472));
        SV_ASSERT_EQ_I64(res.tiers.used_by[SV_MEMTIER_HBM][SV_MEMTIER_OWNER_LIVE_KV], 0);
        itl[ideal] = col.out[0].last_token_ns - col.out[0].first_token_ns;
    }
    SV_ASSERT_EQ_I64(itl[0] - itl[1], 32 * 65536 + 31 * 64);
    sv_planner_cluster_free(c);
    sv_test_rmtree(dir);
}

/* Live KV split over HBM and two CXL devices (256 GiB each): blocks 0-15 on cxl:0, 16-23 on
 * cxl:1, 24-31 in HBM. A 16-token block of one layer = 16 x 4,096 = 65,536 B. HBM: (77,309,411,328
 * - 16,060,522,496) / (8 x 65,536) = 116,822 blocks; cxl:0: 2^38 / (16 x 65,536) = 262,144;
 * cxl:1: 2^38 / (8 x 65,536) = 524,288. The pool is the smallest, 116,822 blocks, and the CXL
 * devices hold 116,822 x 24 x 65,536 = 183,745,118,208 B of live KV. */
static void test_live_kv_cxl(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *trace = write_trace_distinct(dir, 2, 300, 3);
    struct sv_planner_cluster_cfg *c =
        parse("{\"num_nodes\":1,\"link_bw\":112,\"link_latency\":0,"
              "\"cxl_mem\":{\"mem_size\":256,\"mem_bw\":60,\"mem_latency\":250,\"num_devices\":2},"
              "\"nodes\":[{\"num_instances\":1,"
              "\"cpu_mem\":{\"mem_size\":512,\"mem_bw\":256,\"mem_latency\":0},\"instances\":["
              "{\"model_name\":\"meta-llama/Llama-3.1-8B\",\"hardware\":\"H100\",\"npu_mem\":"
              "{\"mem_size\":80,\"mem_bw\":3350,\"mem_latency\":0},"
              "\"placement\":{\"blocks\":[{\"blocks\":\"0-15\",\"kv_loc\":\"cxl:0\"},"
              "{\"blocks\":\"16-23\",\"kv_loc\":\"cxl:1\"}]}}]}]}");
    struct collect col = {0};
    struct sv_planner_run_result res;
    GError *e = NULL;
    gboolean ok = run(c, trace, NULL, NULL, &col, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    CU_ASSERT_EQUAL(col.n, 2);
    SV_ASSERT_EQ_I64(res.kv_blocks, 116822);
    check_ledgers(&res.tiers);
    SV_ASSERT_EQ_I64(res.tiers.used_by[SV_MEMTIER_CXL][SV_MEMTIER_OWNER_LIVE_KV],
                     UINT64_C(183745118208));
    CU_ASSERT(res.tiers.kind[SV_MEMTIER_CXL].read_bytes > 0);
    sv_planner_cluster_free(c);
    sv_test_rmtree(dir);
}

/* Expert offloading on Qwen3-30B-A3B (catalog: hidden 2048, 48 MoE layers, 128 experts, top-8,
 * experts 768 wide), TP 1 on an H100, experts on the host, 16 cached per layer. One expert =
 * gate, up, down = 3 x 2048 x 768 x 2 B = 9,437,184 B. Ledgers: host WEIGHTS = 128 x 48 x
 * 9,437,184 = 57,982,058,496 B; HBM EXPERTS = 16 x 48 x 9,437,184 = 7,247,757,312 B. Every miss
 * fetches one expert: fetch_bytes = misses x 9,437,184. */
#define QWEN_EXPERT_BYTES UINT64_C(9437184)
#define QWEN_MOE                                                                                   \
    "{\"num_nodes\":1,\"link_bw\":112,\"link_latency\":0,\"nodes\":[{\"num_instances\":1,"         \
    "\"cpu_mem\":{\"mem_size\":512,\"mem_bw\":256,\"mem_latency\":0},"                             \
    "\"pcie\":{\"bw_gbps\":64},\"instances\":["                                                    \
    "{\"model_name\":\"Qwen/Qwen3-30B-A3B-Instruct-2507\",\"hardware\":\"H100\",\"npu_mem\":"      \
    "{\"mem_size\":80,\"mem_bw\":3350,\"mem_latency\":0},"                                         \
    "\"expert_offload\":{\"loc\":\"cpu\",\"cache_experts\":16}}]}]}"
static void test_expert_cache(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *trace = write_trace_distinct(dir, 2, 8, 4);
    struct sv_planner_cluster_cfg *c = parse(QWEN_MOE);
    struct collect col = {0};
    struct sv_planner_run_result res;
    GError *e = NULL;
    gboolean ok = run(c, trace, NULL, NULL, &col, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    CU_ASSERT_EQUAL(col.n, 2);
    CU_ASSERT_FATAL(res.has_tiers);
    const struct sv_planner_tier_stats *s = &res.tiers;
    check_ledgers(s);
    CU_ASSERT(s->expert_cache);
    SV_ASSERT_EQ_I64(s->used_by[SV_MEMTIER_DRAM][SV_MEMTIER_OWNER_WEIGHTS], UINT64_C(57982058496));
    SV_ASSERT_EQ_I64(s->used_by[SV_MEMTIER_HBM][SV_MEMTIER_OWNER_EXPERTS], UINT64_C(7247757312));
    /* Lookups per layer: the prefill step of both prompts (16 tokens x top-8 = 128 activations,
     * the balanced router spreads them over all 128 experts) then 3 decode steps of 2 tokens x 8 =
     * 16: 48 x (128 + 3 x 16) = 8,448 in all; the prefill misses all 128 of a layer (the cache
     * holds 16). */
    SV_ASSERT_EQ_I64(res.iterations, 4);
    SV_ASSERT_EQ_I64(s->msg.expert_hits + s->msg.expert_misses, 8448);
    CU_ASSERT(s->msg.expert_misses >= 48 * 128);
    SV_ASSERT_EQ_I64(s->msg.expert_fetch_bytes, s->msg.expert_misses * QWEN_EXPERT_BYTES);
    /* Every fetch goes host -> NPU. */
    SV_ASSERT_EQ_I64(s->kind[SV_MEMTIER_DRAM].read_bytes, s->msg.expert_fetch_bytes);

    /* summary.json's "expert_cache". */
    g_autofree char *cluster = g_build_filename(dir, "cluster.json", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(cluster, QWEN_MOE, -1, NULL));
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    const char *argv[] = {SV_SERVESIM_BIN, "run",      "--cluster",    cluster, "--workload", trace,
                          "--latency",     "roofline", "--output-dir", out,     "--quiet",    NULL};
    char *so = NULL, *se = NULL;
    int status = -1;
    CU_ASSERT_FATAL(sv_test_spawn(argv, &so, &se, &status));
    if (status != 0)
        fprintf(stderr, "%s\n", se);
    CU_ASSERT_EQUAL_FATAL(status, 0);
    g_free(so);
    g_free(se);
    g_autofree char *sum_path = g_build_filename(out, "summary.json", NULL);
    JsonParser *p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_file(p, sum_path, NULL));
    JsonObject *ec = json_object_get_object_member(json_node_get_object(json_parser_get_root(p)),
                                                   "expert_cache");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ec);
    SV_ASSERT_EQ_I64(json_object_get_int_member(ec, "hits"), (int64_t)s->msg.expert_hits);
    SV_ASSERT_EQ_I64(json_object_get_int_member(ec, "misses"), (int64_t)s->msg.expert_misses);
    SV_ASSERT_EQ_I64(json_object_get_int_member(ec, "fetch_bytes"),
                     (int64_t)(s->msg.expert_misses * QWEN_EXPERT_BYTES));
    g_object_unref(p);
    sv_planner_cluster_free(c);
    sv_test_rmtree(dir);
}

/* The cluster pool (Mooncake store, --prefix-pool cluster) on 2 nodes x 1 H100, flow network:
 * instance 0 (node 0) writes the four chunks of a 1,025-token prompt through to the store,
 * sharded by key % 2 over both nodes' DRAM; the same prompt on instance 1 (node 1, round robin)
 * finds all four (cap floor(1024 / 256) = 4): 1,024 tokens split between its own node's DRAM
 * (cpu) and node 0's (remote), 1,024 x 131,072 = 134,217,728 B loaded. Every instance's NPUs join
 * the fabric before the first hierarchy is built (a remote route crosses the network from an NPU of
 * the home node). */
static void test_cluster_pool(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *trace = write_trace(dir, 2, 1025, 1, 10 * G_GINT64_CONSTANT(1000000000));
    GString *js = g_string_new("{\"num_nodes\":2,\"link_bw\":50,\"link_latency\":0,"
                               "\"network_model\":\"flow\",\"nodes\":[");
    for (int n = 0; n < 2; n++)
        g_string_append_printf(
            js,
            "%s{\"num_instances\":1,\"cpu_mem\":{\"mem_size\":128,\"mem_bw\":256,"
            "\"mem_latency\":0},\"pcie\":{\"bw_gbps\":64},\"instances\":[{\"model_name\":"
            "\"meta-llama/Llama-3.1-8B\",\"hardware\":\"H100\",\"npu_mem\":{\"mem_size\":80,"
            "\"mem_bw\":3350,\"mem_latency\":0}}]}",
            n ? "," : "");
    g_string_append(js, "]}");
    struct sv_planner_cluster_cfg *c = parse(js->str);
    g_string_free(js, TRUE);
    struct sv_planner_tier_flags f;
    sv_planner_tier_flags_init(&f);
    g_strlcpy(f.prefix_storage, "cpu", sizeof f.prefix_storage);
    g_strlcpy(f.prefix_pool, "cluster", sizeof f.prefix_pool);
    struct collect col = {0};
    struct sv_planner_run_result res;
    GError *e = NULL;
    gboolean ok = run(c, trace, &f, "round_robin", &col, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    CU_ASSERT_EQUAL_FATAL(col.n, 2);
    const struct sv_wl_outcome *b = find_req(&col, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    SV_ASSERT_EQ_I64(b->instance, 1);
    SV_ASSERT_EQ_I64(b->prefix_hit_tokens_npu, 0);
    SV_ASSERT_EQ_I64(b->prefix_hit_tokens_cpu + b->prefix_hit_tokens_remote, 1024);
    /* The shard of each chunk is its key % 2: with these token ids 3 chunks live on node 1 and
     * one on node 0, so the remote path carries a chunk. */
    SV_ASSERT_EQ_I64(b->prefix_hit_tokens_remote, 256);
    SV_ASSERT_EQ_I64(b->kv_load_bytes, UINT64_C(134217728));
    check_ledgers(&res.tiers);
    SV_ASSERT_EQ_I64(res.tiers.used_by[SV_MEMTIER_DRAM][SV_MEMTIER_OWNER_PREFIX],
                     4 * UINT64_C(33554432));
    sv_planner_cluster_free(c);
    sv_test_rmtree(dir);
}

/* The outputs of a tier run (servesim run, docs/outputs.md): the tier columns appended to
 * requests.csv and timeseries.csv, "memory_tiers" in summary.json (cpu weights peak
 * 4 x 436,224,000 = 1,744,896,000 B); a run without tiers keeps the old headers. */
static void test_outputs(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *trace = write_trace(dir, 2, 100, 3, 0);
    g_autofree char *cluster = g_build_filename(dir, "cluster.json", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(
        cluster,
        "{\"num_nodes\":1,\"link_bw\":112,\"link_latency\":0,\"nodes\":[{\"num_instances\":1,"
        "\"cpu_mem\":{\"mem_size\":512,\"mem_bw\":256,\"mem_latency\":0},\"instances\":["
        "{\"model_name\":\"meta-llama/Llama-3.1-8B\",\"hardware\":\"H100\",\"npu_mem\":"
        "{\"mem_size\":80,\"mem_bw\":3350,\"mem_latency\":0},"
        "\"placement\":{\"blocks\":[{\"blocks\":\"28-31\",\"weights\":\"cpu\"}]}}]}]}",
        -1, NULL));
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    const char *argv[] = {SV_SERVESIM_BIN, "run",      "--cluster",    cluster, "--workload", trace,
                          "--latency",     "roofline", "--output-dir", out,     "--quiet",    NULL};
    char *so = NULL, *se = NULL;
    int status = -1;
    CU_ASSERT_FATAL(sv_test_spawn(argv, &so, &se, &status));
    if (status != 0)
        fprintf(stderr, "%s\n", se);
    CU_ASSERT_EQUAL_FATAL(status, 0);
    g_free(so);
    g_free(se);
    g_autofree char *req_path = g_build_filename(out, "requests.csv", NULL);
    g_autofree char *ts_path = g_build_filename(out, "timeseries.csv", NULL);
    g_autofree char *sum_path = g_build_filename(out, "summary.json", NULL);
    g_autofree char *req = NULL, *ts = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(req_path, &req, NULL, NULL));
    CU_ASSERT_FATAL(g_file_get_contents(ts_path, &ts, NULL, NULL));
    CU_ASSERT(g_str_has_prefix(strstr(req, "queue_ns,"),
                               "queue_ns,prefix_hit_tokens_npu,prefix_hit_tokens_cpu,"
                               "prefix_hit_tokens_cxl,prefix_hit_tokens_ssd,"
                               "prefix_hit_tokens_remote,kv_load_bytes,swap_out_bytes,"
                               "swap_in_bytes,status,reject_reason\n"));
    CU_ASSERT(g_str_has_prefix(strstr(ts, "kv_cache_pct,"),
                               "kv_cache_pct,npu_mem_bytes,cpu_mem_bytes,cxl_mem_bytes,ssd_bytes,"
                               "prefix_hit_pct_npu,prefix_hit_pct_cpu,prefix_hit_pct_cxl,"
                               "prefix_hit_pct_ssd\n"));
    JsonParser *p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_file(p, sum_path, NULL));
    JsonObject *root = json_node_get_object(json_parser_get_root(p));
    JsonObject *mt = json_object_get_object_member(root, "memory_tiers");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mt);
    JsonObject *cpu = json_object_get_object_member(mt, "cpu");
    CU_ASSERT_PTR_NOT_NULL_FATAL(cpu);
    SV_ASSERT_EQ_I64(
        json_object_get_int_member(json_object_get_object_member(cpu, "peak_by_owner"), "weights"),
        INT64_C(1744896000));
    CU_ASSERT(json_object_get_int_member(root, "tier_bytes_booked") > 0);
    SV_ASSERT_EQ_I64(json_object_get_int_member(root, "tier_bytes_booked") % INT64_C(1744896000),
                     0);
    g_object_unref(p);

    /* Without tiers: the headers of before. */
    g_autofree char *plain = sv_test_write_cluster(dir, "meta-llama/Llama-3.1-8B", "H100", 80);
    g_autofree char *out2 = g_build_filename(dir, "out2", NULL);
    const char *argv2[] = {SV_SERVESIM_BIN, "run",      "--cluster",    plain, "--workload", trace,
                           "--latency",     "roofline", "--output-dir", out2,  "--quiet",    NULL};
    CU_ASSERT_FATAL(sv_test_spawn(argv2, &so, &se, &status));
    CU_ASSERT_EQUAL(status, 0);
    g_free(so);
    g_free(se);
    g_autofree char *req2_path = g_build_filename(out2, "requests.csv", NULL);
    g_autofree char *sum2_path = g_build_filename(out2, "summary.json", NULL);
    g_autofree char *req2 = NULL, *sum2 = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(req2_path, &req2, NULL, NULL));
    CU_ASSERT_FATAL(g_file_get_contents(sum2_path, &sum2, NULL, NULL));
    CU_ASSERT(g_str_has_prefix(strstr(req2, "queue_ns"), "queue_ns,status,reject_reason\n"));
    CU_ASSERT_PTR_NULL(strstr(sum2, "memory_tiers"));
    sv_test_rmtree(dir);
}

/* The power model charges tier traffic (docs/power.md "Traffic"): test 6's two requests with a
 * node-shared pool on the SSD. Instance 0 writes 2 chunks through (NPU -> host DRAM -> SSD) and
 * instance 1 reads them (SSD -> host DRAM -> NPU): 2 x 33,554,432 B each way, so storage_bytes
 * = the SSD's read + write bytes = 134,217,728 B and storage energy (idle 0, 2 pJ/bit) =
 * 134,217,728 x 8 x 2e-12 = 0.002147483648 J. Each SSD transfer crosses host DRAM twice (written,
 * then read): at least 2 x 134,217,728 B of DRAM traffic besides the iterations' own. */
static void test_power_tier_traffic(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *trace = write_trace(dir, 2, 513, 1, 10 * G_GINT64_CONSTANT(1000000000));
    static const char *const power =
        ",\"power\":{\"base_node_power\":0,"
        "\"npu\":{\"H100\":{\"idle_power\":0,\"standby_power\":0,\"active_power\":0,"
        "\"standby_duration\":0}},\"cpu\":{\"idle_power\":0,\"active_power\":0,\"util\":0},"
        "\"dram\":{\"dimm_size\":128,\"idle_power\":0,\"energy_per_bit\":0},"
        "\"link\":{\"num_links\":1,\"idle_power\":0,\"energy_per_bit\":0},"
        "\"nic\":{\"num_nics\":1,\"idle_power\":0},"
        "\"storage\":{\"num_devices\":1,\"idle_power\":0,\"energy_per_bit\":2}}}]}";
    g_autofree char *json = g_strconcat(TWO_INST, NULL);
    json[strlen(json) - 3] = '\0'; /* drop the node's closing "}]}" */
    g_autofree char *with_power = g_strconcat(json, power, NULL);
    struct sv_planner_cluster_cfg *c = parse(with_power);
    CU_ASSERT_FATAL(c->power);
    struct sv_planner_tier_flags f;
    sv_planner_tier_flags_init(&f);
    g_strlcpy(f.prefix_storage, "ssd", sizeof f.prefix_storage);
    f.enable_prefix_sharing = 1;
    struct collect col = {0};
    struct sv_planner_run_result res;
    GError *e = NULL;
    gboolean ok = run(c, trace, &f, "round_robin", &col, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    CU_ASSERT_FATAL(res.has_power && res.has_tiers);
    const struct sv_memtier_tier_stats *ssd = &res.tiers.kind[SV_MEMTIER_SSD];
    SV_ASSERT_EQ_I64(ssd->write_bytes, UINT64_C(67108864));
    SV_ASSERT_EQ_I64(ssd->read_bytes, UINT64_C(67108864));
    CU_ASSERT_DOUBLE_EQUAL(res.energy.storage_bytes, 134217728.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(res.energy.by_component_j[SV_POWER_STORAGE], 0.002147483648, 1e-15);
    CU_ASSERT(res.energy.dram_bytes >= 2 * 134217728.0);
    CU_ASSERT_DOUBLE_EQUAL(res.energy.nic_bytes + res.energy.link_bytes, 0, 0);
    sv_planner_cluster_free(c);
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"shared cpu pool serves instance B (test 6)", test_shared_pool_serves_b},
        {"weight ledgers balance (test 7)", test_weight_ledgers},
        {"reference configs with tiers run", test_reference_configs},
        {"swap preemption end to end", test_swap},
        {"live KV on the host (kv_loc cpu)", test_live_kv_cpu},
        {"live KV over HBM and two CXL devices", test_live_kv_cxl},
        {"expert cache (expert_offload) on Qwen3-30B-A3B", test_expert_cache},
        {"cluster pool on two nodes", test_cluster_pool},
        {"tier columns and memory_tiers in the outputs", test_outputs},
        {"host memory without bandwidth", test_zero_bandwidth},
        {"power: SSD and host DRAM traffic of the tiers", test_power_tier_traffic},
        {NULL, NULL},
    };
    sv_test_add_suite("tiers_e2e", cases);
    return sv_test_run();
}
