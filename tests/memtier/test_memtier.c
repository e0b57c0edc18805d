/* Unit tests of ASTRA-sim's remote memory model (memory-tier/memtier.h). Expected times are hand
 * computed from latency + floor(size / bw) (astra-memory-analytical get_remote_mem_runtime) and
 * the FIFO rules of AnalyticalRemoteMemory::issue/call. */
#include "memory-tier/memtier.h"
#include "tests/test_util.h"

#include <glib/gstdio.h>
#include <string.h>

#define MIB (UINT64_C(1) << 20)

/* Records completion times: arg indexes the slot. */
struct log {
    sv_time at[16];
    int order[16];
    int n;
};

static void on_done(sv_engine *eng, void *ctx, uint64_t arg)
{
    struct log *l = ctx;
    l->at[arg] = sv_engine_now(eng);
    if (l->n < (int)G_N_ELEMENTS(l->order))
        l->order[l->n] = (int)arg;
    l->n++;
}

static struct sv_memtier_remote_cfg make_cfg(sv_memtier_remote_type type, sv_time lat, uint64_t bw,
                                             int nodes, int per_node)
{
    struct sv_memtier_remote_cfg c = {.type = type,
                                      .latency_ns = lat,
                                      .bw_bytes_per_ns = bw,
                                      .num_nodes = nodes,
                                      .npus_per_node = per_node};
    return c;
}

/* The shared per-NPU config: latency 1000 ns, bw 50 B/ns; 1 MiB -> 1000 + floor(1048576/50) =
 * 1000 + 20971 = 21971 (closed form in shared/interop/astra-sim/README.md). */
static void test_per_npu_shared_config(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim/configs", "ASTRA-sim's memory configs");
    struct sv_memtier_remote_cfg cfg;
    GError *error = NULL;
    CU_ASSERT_TRUE_FATAL(sv_memtier_remote_cfg_load_json(
        SV_SHARED "/interop/astra-sim/configs/per_npu_memory_expansion.json", &cfg, &error));
    CU_ASSERT_EQUAL(cfg.type, SV_MEMTIER_REMOTE_PER_NPU);
    SV_ASSERT_EQ_I64(cfg.latency_ns, 1000);
    SV_ASSERT_EQ_I64(cfg.bw_bytes_per_ns, 50);

    sv_engine *eng = sv_engine_new(1);
    sv_memtier_remote *mem = sv_memtier_remote_new(eng, &cfg, 2, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mem);
    SV_ASSERT_EQ_I64(sv_memtier_remote_runtime(mem, MIB), 21971);
    /* Two NPUs at once do not wait for each other; 101 bytes -> 1000 + floor(2.02) = 1002. */
    struct log l = {0};
    CU_ASSERT_TRUE(sv_memtier_remote_access(mem, 0, MIB, FALSE, on_done, &l, 0, &error));
    CU_ASSERT_TRUE(sv_memtier_remote_access(mem, 1, MIB, TRUE, on_done, &l, 1, &error));
    CU_ASSERT_TRUE(sv_memtier_remote_access(mem, 1, 101, FALSE, on_done, &l, 2, &error));
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(l.at[0], 21971);
    SV_ASSERT_EQ_I64(l.at[1], 21971);
    SV_ASSERT_EQ_I64(l.at[2], 1002);
    struct sv_memtier_remote_stats st;
    sv_memtier_remote_get_stats(mem, &st);
    SV_ASSERT_EQ_I64(st.loads, 2);
    SV_ASSERT_EQ_I64(st.stores, 1);
    SV_ASSERT_EQ_I64(st.bytes_loaded, MIB + 101);
    SV_ASSERT_EQ_I64(st.queued, 0);
    sv_memtier_remote_free(mem);
    sv_engine_free(eng);
}

/* NO_MEMORY_EXPANSION: any access fails with ASTRA-sim's message. */
static void test_no_expansion(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim/configs", "ASTRA-sim's memory configs");
    struct sv_memtier_remote_cfg cfg;
    GError *error = NULL;
    CU_ASSERT_TRUE_FATAL(sv_memtier_remote_cfg_load_json(
        SV_SHARED "/interop/astra-sim/configs/no_memory_expansion.json", &cfg, &error));
    CU_ASSERT_EQUAL(cfg.type, SV_MEMTIER_REMOTE_NONE);
    sv_engine *eng = sv_engine_new(1);
    sv_memtier_remote *mem = sv_memtier_remote_new(eng, &cfg, 2, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mem);
    struct log l = {0};
    CU_ASSERT_FALSE(sv_memtier_remote_access(mem, 1, 64, FALSE, on_done, &l, 0, &error));
    CU_ASSERT_PTR_NOT_NULL_FATAL(error);
    CU_ASSERT_TRUE(g_error_matches(error, SV_MEMTIER_ERROR, SV_MEMTIER_ERROR_UNSUPPORTED));
    CU_ASSERT_PTR_NOT_NULL(strstr(error->message, "remote memory access is not supported in "
                                                  "NO_MEMORY_EXPANSION"));
    g_clear_error(&error);
    SV_ASSERT_EQ_I64(sv_engine_pending(eng), 0);
    sv_memtier_remote_free(mem);
    sv_engine_free(eng);
}

/* PER_NODE, 2 nodes x 2 NPUs, latency 100, bw 10, 1000 bytes -> R = 100 + 100 = 200 ns.
 * NPUs 0 and 1 share node 0: served at [0,200] and [200,400]; NPU 2 (node 1) in parallel at
 * [0,200]; NPU 3 (node 1) issued at 50 waits for NPU 2: [200,400]. */
static void issue_npu3(sv_engine *eng, void *ctx, uint64_t arg)
{
    void **p = ctx;
    CU_ASSERT_TRUE(sv_memtier_remote_access(p[0], 3, 1000, FALSE, on_done, p[1], 3, NULL));
}

static void test_per_node_fifo(void)
{
    struct sv_memtier_remote_cfg cfg = make_cfg(SV_MEMTIER_REMOTE_PER_NODE, 100, 10, 2, 2);
    sv_engine *eng = sv_engine_new(1);
    GError *error = NULL;
    sv_memtier_remote *mem = sv_memtier_remote_new(eng, &cfg, 4, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mem);
    struct log l = {0};
    void *ctx[2] = {mem, &l};
    CU_ASSERT_TRUE(sv_memtier_remote_access(mem, 0, 1000, FALSE, on_done, &l, 0, &error));
    CU_ASSERT_TRUE(sv_memtier_remote_access(mem, 1, 1000, TRUE, on_done, &l, 1, &error));
    CU_ASSERT_TRUE(sv_memtier_remote_access(mem, 2, 1000, FALSE, on_done, &l, 2, &error));
    sv_engine_schedule(eng, 50, SV_PRIO_DEFAULT, issue_npu3, ctx, 0);
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(l.at[0], 200);
    SV_ASSERT_EQ_I64(l.at[1], 400);
    SV_ASSERT_EQ_I64(l.at[2], 200);
    SV_ASSERT_EQ_I64(l.at[3], 400);
    struct sv_memtier_remote_stats st;
    sv_memtier_remote_get_stats(mem, &st);
    SV_ASSERT_EQ_I64(st.queued, 2);
    SV_ASSERT_EQ_I64(st.queue_wait_ns, 200 + 150);
    SV_ASSERT_EQ_I64(st.max_queue_depth, 1);
    sv_memtier_remote_free(mem);
    sv_engine_free(eng);
}

/* A request issued from a completion callback queues behind those already waiting (ASTRA-sim
 * runs the workload's callback before the memory's own `call`). POOL, R = 10 + 0 = 10 ns for 5
 * bytes at 10 B/ns: A [0,10], B [10,20], C issued at 10 by A's callback: [20,30]. */
struct chain {
    sv_memtier_remote *mem;
    struct log *l;
};

static void on_done_then_issue(sv_engine *eng, void *ctx, uint64_t arg)
{
    struct chain *c = ctx;
    on_done(eng, c->l, arg);
    CU_ASSERT_TRUE(sv_memtier_remote_access(c->mem, 1, 5, FALSE, on_done, c->l, 2, NULL));
}

static void test_pool_reissue_order(void)
{
    struct sv_memtier_remote_cfg cfg = make_cfg(SV_MEMTIER_REMOTE_POOL, 10, 10, 0, 0);
    sv_engine *eng = sv_engine_new(1);
    sv_memtier_remote *mem = sv_memtier_remote_new(eng, &cfg, 3, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mem);
    struct log l = {0};
    struct chain c = {mem, &l};
    CU_ASSERT_TRUE(sv_memtier_remote_access(mem, 0, 5, FALSE, on_done_then_issue, &c, 0, NULL));
    CU_ASSERT_TRUE(sv_memtier_remote_access(mem, 2, 5, TRUE, on_done, &l, 1, NULL));
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(l.at[0], 10);
    SV_ASSERT_EQ_I64(l.at[1], 20);
    SV_ASSERT_EQ_I64(l.at[2], 30);
    CU_ASSERT_EQUAL(l.order[0], 0);
    CU_ASSERT_EQUAL(l.order[1], 1);
    CU_ASSERT_EQUAL(l.order[2], 2);
    sv_memtier_remote_free(mem);
    sv_engine_free(eng);
}

/* Many queued requests (exercises queue compaction): 200 requests of R = 1 + 1 = 2 ns on one
 * pool finish at 2, 4, ..., 400. */
static void test_pool_long_queue(void)
{
    struct sv_memtier_remote_cfg cfg = make_cfg(SV_MEMTIER_REMOTE_POOL, 1, 1, 0, 0);
    sv_engine *eng = sv_engine_new(1);
    sv_memtier_remote *mem = sv_memtier_remote_new(eng, &cfg, 1, NULL);
    struct log l = {0};
    for (int i = 0; i < 200; i++)
        CU_ASSERT_TRUE(sv_memtier_remote_access(mem, 0, 1, FALSE, on_done, &l, 0, NULL));
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(l.n, 200);
    SV_ASSERT_EQ_I64(l.at[0], 400);
    SV_ASSERT_EQ_I64(sv_engine_now(eng), 400);
    struct sv_memtier_remote_stats st;
    sv_memtier_remote_get_stats(mem, &st);
    SV_ASSERT_EQ_I64(st.max_queue_depth, 199);
    /* Waits: request i waits 2i ns: sum 2 * (199 * 200 / 2) = 39800. */
    SV_ASSERT_EQ_I64(st.queue_wait_ns, 39800);
    sv_memtier_remote_free(mem);
    sv_engine_free(eng);
}

/* IDEAL: fixed latency whatever the size, no queueing. */
static void test_ideal(void)
{
    struct sv_memtier_remote_cfg cfg = make_cfg(SV_MEMTIER_REMOTE_IDEAL, 7, 0, 0, 0);
    sv_engine *eng = sv_engine_new(1);
    sv_memtier_remote *mem = sv_memtier_remote_new(eng, &cfg, 2, NULL);
    struct log l = {0};
    CU_ASSERT_TRUE(sv_memtier_remote_access(mem, 0, 1 << 30, FALSE, on_done, &l, 0, NULL));
    CU_ASSERT_TRUE(sv_memtier_remote_access(mem, 0, 1, FALSE, on_done, &l, 1, NULL));
    sv_engine_run(eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(l.at[0], 7);
    SV_ASSERT_EQ_I64(l.at[1], 7);
    sv_memtier_remote_free(mem);
    sv_engine_free(eng);
}

/* Config errors name the file and the key. */
static void expect_cfg_error(const char *json, const char *needle)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *path = g_build_filename(dir, "mem.json", NULL);
    CU_ASSERT_TRUE_FATAL(g_file_set_contents(path, json, -1, NULL));
    struct sv_memtier_remote_cfg cfg;
    GError *error = NULL;
    CU_ASSERT_FALSE(sv_memtier_remote_cfg_load_json(path, &cfg, &error));
    CU_ASSERT_PTR_NOT_NULL_FATAL(error);
    if (strstr(error->message, needle) == NULL || strstr(error->message, path) == NULL)
        fprintf(stderr, "\nunexpected message: %s (wanted %s)\n", error->message, needle);
    CU_ASSERT_PTR_NOT_NULL(strstr(error->message, needle));
    CU_ASSERT_PTR_NOT_NULL(strstr(error->message, path));
    g_clear_error(&error);
    sv_test_rmtree(dir);
}

static void test_cfg_errors(void)
{
    expect_cfg_error("{\"remote-mem-bw\": 5}", "memory-type");
    expect_cfg_error("{\"memory-type\": \"HBM\"}", "memory-type");
    expect_cfg_error("{\"memory-type\": \"PER_NPU_MEMORY_EXPANSION\", \"remote-mem-latency\": 5}",
                     "remote-mem-bw");
    expect_cfg_error("{\"memory-type\": \"MEMORY_POOL\", \"remote-mem-bw\": 0.5}", "remote-mem-bw");
    expect_cfg_error("{\"memory-type\": \"PER_NPU_MEMORY_EXPANSION\", \"remote-mem-bw\": 5, "
                     "\"remote-mem-latency\": -1}",
                     "remote-mem-latency");
    expect_cfg_error("{\"memory-type\": \"PER_NODE_MEMORY_EXPANSION\", \"remote-mem-bw\": 5, "
                     "\"num-npus-per-node\": 2}",
                     "num-nodes");
    expect_cfg_error("{\"memory-type\": \"PER_NODE_MEMORY_EXPANSION\", \"remote-mem-bw\": 5, "
                     "\"num-nodes\": 2, \"num-npus-per-node\": 0}",
                     "num-npus-per-node");
    expect_cfg_error("[1, 2]", "not a JSON object");
    expect_cfg_error("{\"memory-type\": ", "mem.json");

    struct sv_memtier_remote_cfg cfg;
    GError *error = NULL;
    CU_ASSERT_FALSE(sv_memtier_remote_cfg_load_json("no/such/mem.json", &cfg, &error));
    CU_ASSERT_PTR_NOT_NULL_FATAL(error);
    CU_ASSERT_PTR_NOT_NULL(strstr(error->message, "no/such/mem.json"));
    g_clear_error(&error);

    /* A PER_NODE layout that does not cover the machine. */
    struct sv_memtier_remote_cfg small = make_cfg(SV_MEMTIER_REMOTE_PER_NODE, 0, 1, 2, 2);
    sv_engine *eng = sv_engine_new(1);
    CU_ASSERT_PTR_NULL(sv_memtier_remote_new(eng, &small, 5, &error));
    CU_ASSERT_PTR_NOT_NULL_FATAL(error);
    CU_ASSERT_PTR_NOT_NULL(strstr(error->message, "num-nodes"));
    g_clear_error(&error);
    sv_engine_free(eng);
}

/* Fractional values are truncated as ASTRA-sim's uint64_t members do: bw 2.9 -> 2, latency
 * 10.7 -> 10; 9 bytes -> 10 + floor(9 / 2) = 14. */
static void test_cfg_truncation(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *path = g_build_filename(dir, "mem.json", NULL);
    CU_ASSERT_TRUE_FATAL(g_file_set_contents(
        path,
        "{\"memory-type\": \"PER_NODE_MEMORY_EXPANSION\", \"remote-mem-latency\": 10.7, "
        "\"remote-mem-bw\": 2.9, \"num-nodes\": 3, \"num-npus-per-node\": 4}",
        -1, NULL));
    struct sv_memtier_remote_cfg cfg;
    GError *error = NULL;
    CU_ASSERT_TRUE_FATAL(sv_memtier_remote_cfg_load_json(path, &cfg, &error));
    CU_ASSERT_EQUAL(cfg.type, SV_MEMTIER_REMOTE_PER_NODE);
    SV_ASSERT_EQ_I64(cfg.num_nodes, 3);
    SV_ASSERT_EQ_I64(cfg.npus_per_node, 4);
    sv_engine *eng = sv_engine_new(1);
    sv_memtier_remote *mem = sv_memtier_remote_new(eng, &cfg, 12, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mem);
    SV_ASSERT_EQ_I64(sv_memtier_remote_runtime(mem, 9), 14);
    sv_memtier_remote_free(mem);
    sv_engine_free(eng);
    sv_test_rmtree(dir);
}

static void test_type_names(void)
{
    sv_memtier_remote_type t;
    CU_ASSERT_TRUE(sv_memtier_remote_type_parse("MEMORY_POOL", &t));
    CU_ASSERT_EQUAL(t, SV_MEMTIER_REMOTE_POOL);
    CU_ASSERT_FALSE(sv_memtier_remote_type_parse("memory_pool", &t));
    CU_ASSERT_STRING_EQUAL(sv_memtier_remote_type_name(SV_MEMTIER_REMOTE_PER_NODE),
                           "PER_NODE_MEMORY_EXPANSION");
    CU_ASSERT_PTR_NULL(sv_memtier_remote_type_name((sv_memtier_remote_type)99));
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"per_npu_shared_config", test_per_npu_shared_config},
        {"no_expansion", test_no_expansion},
        {"per_node_fifo", test_per_node_fifo},
        {"pool_reissue_order", test_pool_reissue_order},
        {"pool_long_queue", test_pool_long_queue},
        {"ideal", test_ideal},
        {"cfg_errors", test_cfg_errors},
        {"cfg_truncation", test_cfg_truncation},
        {"type_names", test_type_names},
        {NULL, NULL},
    };
    sv_test_add_suite("memtier_remote", cases);
    return sv_test_run();
}
