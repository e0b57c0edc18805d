/* End-to-end tests of `servesim replay`: the program is spawned on the interop vectors and its
 * `sys[i] finished, T cycles, exposed communication E cycles.` lines are compared with the numbers
 * ASTRA-sim printed for the same inputs (../shared/interop/astra-sim/README.md: the "unaware"
 * column for --network-model analytical, the "aware" column for --network-model fifo). Failure
 * cases must end with a clear message and exit status 1, never a signal. */
#include "proto/proto.h"
#include "tests/test_util.h"

#include <stdio.h>
#include <string.h>

#define ASTRA SV_SHARED "/interop/astra-sim"
#define CHAKRA SV_SHARED "/interop/chakra"
#define SYS_RING4C ASTRA "/configs/Ring_4chunks.json"
#define NET_FC2 ASTRA "/configs/FullyConnected_2npus.yml"
#define MEM_PER_NPU ASTRA "/configs/per_npu_memory_expansion.json"
#define MEM_NONE ASTRA "/configs/no_memory_expansion.json"

struct run {
    int status;
    char *out;
    char *err;
    int n;        /* sys lines parsed */
    int id[1024]; /* in printed order */
    long long t[1024];
    long long e[1024];
};

static void run_free(struct run *r)
{
    g_free(r->out);
    g_free(r->err);
    g_free(r);
}

/* Spawn servesim replay with the given arguments (NULL-terminated) and parse its sys lines. */
static struct run *replay_v(const char *const *args)
{
    const char *argv[32];
    int k = 0;
    argv[k++] = SV_SERVESIM_BIN;
    argv[k++] = "replay";
    for (; *args != NULL && k < 31; args++)
        argv[k++] = *args;
    argv[k] = NULL;
    struct run *r = g_new0(struct run, 1);
    CU_ASSERT_TRUE_FATAL(sv_test_spawn(argv, &r->out, &r->err, &r->status));
    for (const char *p = r->out; (p = strstr(p, "sys[")) != NULL && r->n < 1024; p++) {
        int id;
        long long t, e;
        if (sscanf(p, "sys[%d] finished, %lld cycles, exposed communication %lld cycles.", &id, &t,
                   &e) == 3) {
            r->id[r->n] = id;
            r->t[r->n] = t;
            r->e[r->n] = e;
            r->n++;
        }
    }
    return r;
}

#define REPLAY(...) replay_v((const char *const[]){__VA_ARGS__, NULL})

static void show_failure(const struct run *r, const char *what)
{
    fprintf(stderr, "\n[%s] status %d\nstdout:\n%s\nstderr:\n%s\n", what, r->status, r->out,
            r->err);
}

/* Every one of `npus` NPUs printed once, in id order, with T and E. */
static void expect_all(const struct run *r, const char *what, int npus, long long t, long long e)
{
    gboolean ok = r->status == 0 && r->n == npus;
    for (int i = 0; ok && i < npus; i++)
        ok = r->id[i] == i && r->t[i] == t && r->e[i] == e;
    if (!ok)
        show_failure(r, what);
    CU_ASSERT_EQUAL(r->status, 0);
    CU_ASSERT_EQUAL(r->n, npus);
    for (int i = 0; i < r->n && i < npus; i++) {
        CU_ASSERT_EQUAL(r->id[i], i);
        CU_ASSERT_EQUAL(r->t[i], t);
        CU_ASSERT_EQUAL(r->e[i], e);
    }
}

/* A failure: exit status 1 (not a signal, not a crash) and `needle` in stderr. */
static void expect_error(const struct run *r, const char *what, const char *needle)
{
    gboolean ok = r->status == 1 && strstr(r->err, needle) != NULL &&
                  strstr(r->err, "servesim replay: ") != NULL;
    if (!ok) {
        show_failure(r, what);
        fprintf(stderr, "(wanted status 1 and '%s' in stderr)\n", needle);
    }
    CU_ASSERT_EQUAL(r->status, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r->err, needle));
    CU_ASSERT_PTR_NOT_NULL(strstr(r->err, "servesim replay: "));
}

static const char *const models[] = {"analytical", "fifo"};

/* ---- ASTRA-sim microbenchmarks: README table (aware == unaware for all 12; E = T) -------- */

static void micro(const char *coll, int n, long long expected)
{
    g_autofree char *prefix =
        g_strdup_printf(ASTRA "/microbenchmarks/%s/%dnpus_1MB/%s", coll, n, coll);
    g_autofree char *net = g_strdup_printf(ASTRA "/configs/Ring_%dnpus.yml", n);
    for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
        g_autofree char *what = g_strdup_printf("%s %d %s", coll, n, models[m]);
        struct run *r = REPLAY("--workload", prefix, "--system", SYS_RING4C, "--network", net,
                               "--network-model", models[m]);
        expect_all(r, what, n, expected, expected);
        run_free(r);
    }
}

static void test_micro_all_reduce(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim", "ASTRA-sim's microbenchmarks and configs");
    micro("all_reduce", 4, 43000);
    micro("all_reduce", 8, 64440);
    micro("all_reduce", 16, 99640);
}

static void test_micro_all_gather(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim", "ASTRA-sim's microbenchmarks and configs");
    micro("all_gather", 4, 64744);
    micro("all_gather", 8, 151016);
    micro("all_gather", 16, 323560);
}

static void test_micro_reduce_scatter(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim", "ASTRA-sim's microbenchmarks and configs");
    micro("reduce_scatter", 4, 22240);
    micro("reduce_scatter", 8, 33080);
    micro("reduce_scatter", 16, 50740);
}

static void test_micro_all_to_all(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim", "ASTRA-sim's microbenchmarks and configs");
    micro("all_to_all", 4, 41560);
    micro("all_to_all", 8, 125480);
    micro("all_to_all", 16, 391240);
}

/* ASTRA-sim's regression test with its own inputs (refs/stdout.txt: 117780 on every NPU), given
 * with ASTRA-sim's own option names. */
static void test_rt_template(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim", "ASTRA-sim's microbenchmarks and configs");
    for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
        struct run *r = REPLAY(
            "--workload-configuration=" ASTRA "/rt_template/inputs/workload/chakra_trace",
            "--system-configuration=" ASTRA "/rt_template/inputs/system_cfg.json",
            "--network-configuration=" ASTRA "/rt_template/inputs/network_cfg.yml",
            "--remote-memory-configuration=" ASTRA "/rt_template/inputs/remote_memory_cfg.json",
            "--network-model", models[m]);
        expect_all(r, models[m], 8, 117780, 117780);
        run_free(r);
    }
}

/* README: "With active-chunks-per-dimension 2 (AR 8 NPUs Ring) the backends diverge: aware 34680,
 * unaware 32220 (two chunks now share ring links)". Ring_4chunks.json with that one key changed. */
static void test_active_chunks_2(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim", "ASTRA-sim's microbenchmarks and configs");
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *sys = g_build_filename(dir, "ac2.json", NULL);
    g_autofree char *text = NULL;
    CU_ASSERT_TRUE_FATAL(g_file_get_contents(SYS_RING4C, &text, NULL, NULL));
    char *at = strstr(text, "\"active-chunks-per-dimension\": 1");
    CU_ASSERT_PTR_NOT_NULL_FATAL(at);
    at[strlen("\"active-chunks-per-dimension\": ")] = '2';
    CU_ASSERT_TRUE_FATAL(g_file_set_contents(sys, text, -1, NULL));
    const long long expected[] = {32220, 34680}; /* analytical (unaware), fifo (aware) */
    for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
        struct run *r = REPLAY(
            "--workload", ASTRA "/microbenchmarks/all_reduce/8npus_1MB/all_reduce", "--system", sys,
            "--network", ASTRA "/configs/Ring_8npus.yml", "--network-model", models[m]);
        expect_all(r, "active chunks 2", 8, expected[m], expected[m]);
        run_free(r);
    }
    sv_test_rmtree(dir);
}

/* ---- our Chakra vectors ----------------------------------------------------------------- */

static void test_compute_chain(void)
{
    SV_REQUIRE_SHARED("interop/chakra", "the Chakra ET vectors and ASTRA-sim configs");
    for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
        struct run *r =
            REPLAY("--workload", CHAKRA "/vectors/compute_chain/compute_chain", "--system",
                   SYS_RING4C, "--network", NET_FC2, "--network-model", models[m]);
        expect_all(r, "compute_chain", 2, 35000, 0);
        run_free(r);
    }
}

static void test_collectives(void)
{
    SV_REQUIRE_SHARED("interop/chakra", "the Chakra ET vectors and ASTRA-sim configs");
    for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
        struct run *r =
            REPLAY("--workload", CHAKRA "/vectors/collectives/collectives", "--system", SYS_RING4C,
                   "--network", ASTRA "/configs/Ring_4npus.yml", "--network-model", models[m]);
        expect_all(r, "collectives", 4, 171544, 171544);
        run_free(r);
    }
}

/* sys[0] 21031 / 20031, sys[1] 23031 / 21031, printed in that (finish-time) order. */
static void test_p2p(void)
{
    SV_REQUIRE_SHARED("interop/chakra", "the Chakra ET vectors and ASTRA-sim configs");
    for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
        struct run *r = REPLAY("--workload", CHAKRA "/vectors/p2p/p2p", "--system", SYS_RING4C,
                               "--network", NET_FC2, "--network-model", models[m]);
        if (r->status != 0 || r->n != 2)
            show_failure(r, "p2p");
        CU_ASSERT_EQUAL(r->status, 0);
        CU_ASSERT_EQUAL_FATAL(r->n, 2);
        CU_ASSERT_EQUAL(r->id[0], 0);
        CU_ASSERT_EQUAL(r->t[0], 21031);
        CU_ASSERT_EQUAL(r->e[0], 20031);
        CU_ASSERT_EQUAL(r->id[1], 1);
        CU_ASSERT_EQUAL(r->t[1], 23031);
        CU_ASSERT_EQUAL(r->e[1], 21031);
        run_free(r);
    }
}

static void test_remote_mem(void)
{
    SV_REQUIRE_SHARED("interop/chakra", "the Chakra ET vectors and ASTRA-sim configs");
    for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
        struct run *r =
            REPLAY("--workload", CHAKRA "/vectors/remote_mem/remote_mem", "--system", SYS_RING4C,
                   "--network", NET_FC2, "--memory", MEM_PER_NPU, "--network-model", models[m]);
        expect_all(r, "remote_mem", 2, 46942, 43942);
        run_free(r);
    }
}

/* ---- Chakra generator output (2 NPUs, FullyConnected_2npus) ------------------------------ */

static void generator(const char *name, const char *mem, long long t, long long e)
{
    g_autofree char *prefix = g_strdup_printf(CHAKRA "/chakra_generator/%s", name);
    for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
        g_autofree char *what = g_strdup_printf("%s %s", name, models[m]);
        struct run *r = mem != NULL
                            ? REPLAY("--workload", prefix, "--system", SYS_RING4C, "--network",
                                     NET_FC2, "--memory", mem, "--network-model", models[m])
                            : REPLAY("--workload", prefix, "--system", SYS_RING4C, "--network",
                                     NET_FC2, "--network-model", models[m]);
        expect_all(r, what, 2, t, e);
        run_free(r);
    }
}

static void test_generator(void)
{
    SV_REQUIRE_SHARED("interop/chakra", "the Chakra ET vectors and ASTRA-sim configs");
    generator("one_comp_node", NULL, 5000, 0);
    generator("two_comp_nodes_dependent", NULL, 10000, 0);
    generator("two_comp_nodes_independent", NULL, 10000, 0);
    generator("ALL_REDUCE", NULL, 5396, 5396);
    generator("BROADCAST", NULL, 1, 1);
    generator("one_remote_mem_load_node", MEM_PER_NPU, 1020, 1020);
}

/* ---- failures ----------------------------------------------------------------------------- */

static void test_fail_no_memory_expansion(void)
{
    SV_REQUIRE_SHARED("interop/chakra", "the Chakra ET vectors and ASTRA-sim configs");
    struct run *r = REPLAY("--workload", CHAKRA "/vectors/remote_mem/remote_mem", "--system",
                           SYS_RING4C, "--network", NET_FC2, "--memory", MEM_NONE);
    expect_error(r, "no_memory_expansion",
                 "remote memory access is not supported in NO_MEMORY_EXPANSION");
    run_free(r);
    /* No --memory at all behaves the same (no remote memory). */
    r = REPLAY("--workload", CHAKRA "/vectors/remote_mem/remote_mem", "--system", SYS_RING4C,
               "--network", NET_FC2);
    expect_error(r, "no --memory", "NO_MEMORY_EXPANSION");
    run_free(r);
}

static void test_fail_barrier(void)
{
    SV_REQUIRE_SHARED("interop/chakra", "the Chakra ET vectors and ASTRA-sim configs");
    struct run *r = REPLAY("--workload", CHAKRA "/chakra_generator/BARRIER", "--system", SYS_RING4C,
                           "--network", NET_FC2);
    expect_error(r, "BARRIER", "unsupported collective comm type");
    CU_ASSERT_PTR_NOT_NULL(strstr(r->err, "BARRIER"));
    run_free(r);
}

static void test_fail_send_without_dst(void)
{
    SV_REQUIRE_SHARED("interop/chakra", "the Chakra ET vectors and ASTRA-sim configs");
    struct run *r = REPLAY("--workload", CHAKRA "/chakra_generator/one_comm_send_node", "--system",
                           SYS_RING4C, "--network", NET_FC2);
    expect_error(r, "one_comm_send_node", "attribute comm_dst not found in node 28");
    run_free(r);
}

static void test_fail_missing_file(void)
{
    SV_REQUIRE_SHARED("interop/chakra", "the Chakra ET vectors and ASTRA-sim configs");
    struct run *r = REPLAY("--workload", CHAKRA "/vectors/no_such/trace", "--system", SYS_RING4C,
                           "--network", NET_FC2);
    expect_error(r, "missing prefix", "no_such/trace.0.et");
    run_free(r);
    /* Files for 2 NPUs, network of 4: the first absent one is named. */
    r = REPLAY("--workload", CHAKRA "/vectors/compute_chain/compute_chain", "--system", SYS_RING4C,
               "--network", ASTRA "/configs/Ring_4npus.yml");
    expect_error(r, "too few files", "compute_chain.2.et");
    run_free(r);
}

static void test_fail_bad_options(void)
{
    SV_REQUIRE_SHARED("interop/chakra", "the Chakra ET vectors and ASTRA-sim configs");
    struct run *r = REPLAY("--workload", CHAKRA "/vectors/compute_chain/compute_chain", "--system",
                           SYS_RING4C, "--network", NET_FC2, "--network-model", "telepathy");
    CU_ASSERT_NOT_EQUAL(r->status, 0);
    CU_ASSERT_TRUE(r->status < 128);
    CU_ASSERT_PTR_NOT_NULL(strstr(r->err, "telepathy"));
    run_free(r);
    r = REPLAY("--system", SYS_RING4C, "--network", NET_FC2);
    CU_ASSERT_EQUAL(r->status, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(r->err, "--workload"));
    run_free(r);
    r = REPLAY("--help");
    CU_ASSERT_EQUAL(r->status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r->out, "--network-model"));
    run_free(r);
}

/* A collective naming a group no --comm-groups file defines; a custom collective whose ET files
 * exist nowhere. */
static void test_fail_groups_and_custom(void)
{
    SV_REQUIRE_SHARED("interop/chakra", "the Chakra ET vectors and ASTRA-sim configs");
    struct run *r = REPLAY("--workload", CHAKRA "/vectors/comm_groups/comm_groups", "--system",
                           SYS_RING4C, "--network", ASTRA "/configs/Ring_4npus.yml");
    expect_error(r, "undefined group", "communicator group 1");
    run_free(r);
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *sys = g_build_filename(dir, "custom.json", NULL);
    CU_ASSERT_TRUE_FATAL(g_file_set_contents(
        sys,
        "{\"preferred-dataset-splits\": 1, "
        "\"all-reduce-implementation-custom\": [\"nowhere/at/all/custom_allreduce\"]}",
        -1, NULL));
    r = REPLAY("--workload", ASTRA "/microbenchmarks/all_reduce/8npus_1MB/all_reduce", "--system",
               sys, "--network", ASTRA "/configs/Ring_8npus.yml");
    expect_error(r, "custom files absent", "custom_allreduce.0.et");
    run_free(r);
    sv_test_rmtree(dir);
}

/* Write <dir>/<name>.<npu>.et with the given nodes (taken over). */
static void write_et(const char *dir, const char *name, int npu, ChakraProtoMsg__Node **nodes,
                     int n)
{
    g_autofree char *path = g_strdup_printf("%s/%s.%d.et", dir, name, npu);
    GError *error = NULL;
    sv_proto_writer *w = sv_proto_writer_open(path, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    ChakraProtoMsg__GlobalMetadata *md = sv_proto_metadata_new("0.0.4");
    CU_ASSERT_TRUE(sv_proto_writer_put_metadata(w, md, &error));
    sv_proto_metadata_free(md);
    for (int i = 0; i < n; i++) {
        CU_ASSERT_TRUE(sv_proto_writer_put_node(w, nodes[i], &error));
        sv_proto_node_free(nodes[i]);
    }
    CU_ASSERT_TRUE(sv_proto_writer_close(w, &error));
    if (error != NULL) {
        fprintf(stderr, "write_et: %s\n", error->message);
        g_error_free(error);
    }
}

static ChakraProtoMsg__Node *comp(uint64_t id, const char *name, uint64_t dur_us)
{
    ChakraProtoMsg__Node *n = sv_proto_node_new(id, name, CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE);
    n->duration_micros = dur_us;
    sv_proto_node_add_attr(n, sv_proto_attr_new_bool("is_cpu_op", FALSE));
    return n;
}

static ChakraProtoMsg__Node *p2p(uint64_t id, gboolean send, int src, int dst, int tag,
                                 int64_t bytes)
{
    ChakraProtoMsg__Node *n = sv_proto_node_new(id, send ? "send" : "recv",
                                             send ? CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE
                                                  : CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE);
    sv_proto_node_add_attr(n, sv_proto_attr_new_bool("is_cpu_op", FALSE));
    sv_proto_node_add_attr(n, sv_proto_attr_new_int32("comm_src", src));
    sv_proto_node_add_attr(n, sv_proto_attr_new_int32("comm_dst", dst));
    sv_proto_node_add_attr(n, sv_proto_attr_new_int32("comm_tag", tag));
    sv_proto_node_add_attr(n, sv_proto_attr_new_int64("comm_size", bytes));
    return n;
}

/* The system and network configs of the tests that write their own ET: the same values as
 * ASTRA-sim's configs/Ring_4chunks.json and configs/FullyConnected_2npus.yml (2 NPUs, one 50 GB/s,
 * 500 ns link), written into `dir` so that these tests do not need ../shared. */
static void own_configs(const char *dir, char **sys, char **net)
{
    *sys = g_build_filename(dir, "system.json", NULL);
    *net = g_build_filename(dir, "network.yml", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(
        *sys,
        "{\"scheduling-policy\": \"LIFO\", \"endpoint-delay\": 10,\n"
        " \"active-chunks-per-dimension\": 1, \"preferred-dataset-splits\": 4,\n"
        " \"all-reduce-implementation\": [\"ring\"], \"all-gather-implementation\": [\"ring\"],\n"
        " \"reduce-scatter-implementation\": [\"ring\"], \"all-to-all-implementation\": "
        "[\"ring\"],\n"
        " \"collective-optimization\": \"localBWAware\", \"local-mem-bw\": 1600,\n"
        " \"boost-mode\": 0, \"roofline-enabled\": 0, \"peak-perf\": 900}\n",
        -1, NULL));
    CU_ASSERT_FATAL(g_file_set_contents(*net,
                                        "topology: [ FullyConnected ]\nnpus_count: [ 2 ]\n"
                                        "bandwidth: [ 50.0 ]  # GB/s\nlatency: [ 500.0 ]  # ns\n",
                                        -1, NULL));
}

/* NPU 1 waits for a message from NPU 0 with tag 7; NPU 0 sends tag 8. NPU 1 can never finish:
 * the run must end (not hang) with the unmatched operations named. */
static void test_fail_unmatched_recv(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    ChakraProtoMsg__Node *n0[] = {comp(0, "produce", 1), p2p(1, TRUE, 0, 1, 8, 4096)};
    sv_proto_node_add_data_dep(n0[1], 0);
    write_et(dir, "stuck", 0, n0, 2);
    ChakraProtoMsg__Node *n1[] = {p2p(0, FALSE, 0, 1, 7, 4096), comp(1, "consume", 2)};
    sv_proto_node_add_data_dep(n1[1], 0);
    write_et(dir, "stuck", 1, n1, 2);
    g_autofree char *prefix = g_strdup_printf("%s/stuck", dir);
    g_autofree char *sys = NULL, *net = NULL;
    own_configs(dir, &sys, &net);
    for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
        struct run *r = REPLAY("--workload", prefix, "--system", sys, "--network", net,
                               "--network-model", models[m]);
        expect_error(r, "unmatched recv", "cannot finish");
        CU_ASSERT_PTR_NOT_NULL(strstr(r->err, "unmatched recv"));
        CU_ASSERT_PTR_NOT_NULL(strstr(r->err, "tag 7"));
        CU_ASSERT_PTR_NOT_NULL(strstr(r->err, "tag 8"));
        /* The sender finishes once its message has arrived (ASTRA-sim notifies the sender at
         * arrival, matched or not): 1000 ns compute + floor(500 + 4096 / 53.6870912) = 576 ns
         * on the 50 GB/s, 500 ns link, so T = 1576 and E = 576. NPU 1 never finishes. */
        CU_ASSERT_EQUAL_FATAL(r->n, 1);
        CU_ASSERT_EQUAL(r->id[0], 0);
        CU_ASSERT_EQUAL(r->t[0], 1576);
        CU_ASSERT_EQUAL(r->e[0], 576);
        if (m == 0)
            fprintf(stderr, "\n%s", r->err);
        run_free(r);
    }
    sv_test_rmtree(dir);
}

/* A dependency cycle (node 0 <- 1 <- 0) on NPU 1 while NPU 0 finishes: sys[0] is printed, then
 * the diagnosis names the cycle. */
static void test_fail_cycle(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    ChakraProtoMsg__Node *n0[] = {comp(0, "a", 1)};
    write_et(dir, "cyc", 0, n0, 1);
    ChakraProtoMsg__Node *n1[] = {comp(0, "a", 1), comp(1, "b", 1)};
    sv_proto_node_add_data_dep(n1[0], 1);
    sv_proto_node_add_data_dep(n1[1], 0);
    write_et(dir, "cyc", 1, n1, 2);
    g_autofree char *prefix = g_strdup_printf("%s/cyc", dir);
    g_autofree char *sys = NULL, *net = NULL;
    own_configs(dir, &sys, &net);
    struct run *r = REPLAY("--workload", prefix, "--system", sys, "--network", net);
    expect_error(r, "cycle", "cannot finish");
    CU_ASSERT_PTR_NOT_NULL(strstr(r->err, "cycle"));
    CU_ASSERT_EQUAL(r->n, 1);
    CU_ASSERT_EQUAL(r->t[0], 1000);
    run_free(r);
    sv_test_rmtree(dir);
}

/* --ignore-ctrl-deps: node 0 a 10 us BROADCAST (replayed, comm slot), node 1 a 5 us COMP with
 * ctrl_deps [0]. Honouring ctrl deps: 10000 + 5000 = 15000, E = 15000 - 5000 = 10000. Ignoring
 * them both start at 0 on different slots: T = 10000, E = 5000. */
static void test_ignore_ctrl_deps(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    for (int npu = 0; npu < 2; npu++) {
        ChakraProtoMsg__Node *b =
            sv_proto_node_new(0, "bcast", CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE);
        b->duration_micros = 10;
        sv_proto_node_add_attr(b, sv_proto_attr_new_bool("is_cpu_op", FALSE));
        sv_proto_node_add_attr(b, sv_proto_attr_new_int64("comm_type", 5));
        sv_proto_node_add_attr(b, sv_proto_attr_new_int64("comm_size", 1024));
        ChakraProtoMsg__Node *c = comp(1, "compute", 5);
        sv_proto_node_add_ctrl_dep(c, 0);
        ChakraProtoMsg__Node *nodes[] = {b, c};
        write_et(dir, "ctrl", npu, nodes, 2);
    }
    g_autofree char *prefix = g_strdup_printf("%s/ctrl", dir);
    g_autofree char *sys = NULL, *net = NULL;
    own_configs(dir, &sys, &net);
    struct run *r = REPLAY("--workload", prefix, "--system", sys, "--network", net);
    expect_all(r, "ctrl deps honoured", 2, 15000, 10000);
    run_free(r);
    r = REPLAY("--workload", prefix, "--system", sys, "--network", net, "--ignore-ctrl-deps");
    expect_all(r, "ctrl deps ignored", 2, 10000, 5000);
    run_free(r);
    sv_test_rmtree(dir);
}

/* ---- held-back references: must finish with identical T on symmetric NPUs ---------------- */

static void expect_symmetric(const struct run *r, const char *what, int npus)
{
    gboolean ok = r->status == 0 && r->n == npus;
    for (int i = 1; ok && i < r->n; i++)
        ok = r->t[i] == r->t[0];
    if (!ok)
        show_failure(r, what);
    else
        printf("\n    %s: T = %lld, E = %lld", what, r->t[0], r->e[0]);
    CU_ASSERT_EQUAL(r->status, 0);
    CU_ASSERT_EQUAL(r->n, npus);
    CU_ASSERT_TRUE(r->n > 0 && r->t[0] > 0);
    for (int i = 1; i < r->n; i++)
        CU_ASSERT_EQUAL(r->t[i], r->t[0]);
}

static void test_symmetric_runs(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim", "ASTRA-sim's microbenchmarks and configs");
    for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
        g_autofree char *w1 = g_strdup_printf("dp_overlap Switch_4npus %s", models[m]);
        struct run *r =
            REPLAY("--workload", CHAKRA "/vectors/dp_overlap/dp_overlap", "--system", SYS_RING4C,
                   "--network", ASTRA "/configs/Switch_4npus.yml", "--network-model", models[m]);
        expect_symmetric(r, w1, 4);
        /* CHAKRA_ET.md 3.6 quotes this run measured on ASTRA-sim: congestion-aware 448,764 ns
         * (two serializations per message through the switch), unaware 302,316 ns. */
        CU_ASSERT_EQUAL(r->n > 0 ? r->t[0] : -1, m == 0 ? 302316 : 448764);
        run_free(r);

        g_autofree char *w2 = g_strdup_printf("comm_groups Ring_4npus %s", models[m]);
        r = REPLAY("--workload", CHAKRA "/vectors/comm_groups/comm_groups", "--system", SYS_RING4C,
                   "--network", ASTRA "/configs/Ring_4npus.yml", "--comm-groups",
                   CHAKRA "/vectors/comm_groups/comm_group.json", "--network-model", models[m]);
        expect_symmetric(r, w2, 4);
        run_free(r);

        g_autofree char *w3 = g_strdup_printf("all_reduce 8 HGX-H100-validated %s", models[m]);
        r = REPLAY("--workload", ASTRA "/microbenchmarks/all_reduce/8npus_1MB/all_reduce",
                   "--system", ASTRA "/configs/HGX-H100-validated.json", "--network",
                   ASTRA "/configs/HGX-H100-validated.yml", "--network-model", models[m]);
        expect_symmetric(r, w3, 8);
        run_free(r);

        g_autofree char *w4 = g_strdup_printf("all_reduce 4 Switch_4npus %s", models[m]);
        r = REPLAY("--workload", ASTRA "/microbenchmarks/all_reduce/4npus_1MB/all_reduce",
                   "--system", SYS_RING4C, "--network", ASTRA "/configs/Switch_4npus.yml",
                   "--network-model", models[m]);
        expect_symmetric(r, w4, 4);
        run_free(r);
    }
    /* Two dimensions (ASTRA-sim's congestion-aware backend accepts only one; ours takes any). */
    const char *all3[] = {"analytical", "fifo", "flow"};
    for (size_t m = 0; m < G_N_ELEMENTS(all3); m++) {
        g_autofree char *what = g_strdup_printf("all_reduce 4 Switch2x2_2d %s", all3[m]);
        struct run *r = REPLAY(
            "--workload", ASTRA "/microbenchmarks/all_reduce/4npus_1MB/all_reduce", "--system",
            SYS_RING4C, "--network", ASTRA "/configs/Switch2x2_2d.yml", "--network-model", all3[m]);
        expect_symmetric(r, what, 4);
        run_free(r);
    }
}

/* The custom ring all-reduce (MSCCL-IR converted to 8 per-NPU ETs), run with the shipped system
 * JSON as it is: its path is relative to ASTRA-sim's checkout, and the loader finds the files by
 * the tail of that path next to the JSON. Each rank's ET chains 14 sends of 131072 bytes (one per
 * ring step) with 7 reduce computations of 7 us; the sends bypass the MemBus, so each step costs
 * floor(500 + 131072 / (50 * 2^30 / 1e9)) = floor(2941.40625) = 2941 ns, and the critical path is
 * 14 x 2941 + 7 x 7000 = 90174 ns. The computations belong to the collective, not to the
 * workload, so exposed communication = T. */
static void test_custom_collective(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim", "ASTRA-sim's microbenchmarks and configs");
    for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
        g_autofree char *what = g_strdup_printf("custom all_reduce 8 %s", models[m]);
        struct run *r =
            REPLAY("--workload", ASTRA "/microbenchmarks/all_reduce/8npus_1MB/all_reduce",
                   "--system", ASTRA "/custom_collectives/custom_collective.json", "--network",
                   ASTRA "/configs/Ring_8npus.yml", "--network-model", models[m]);
        expect_all(r, what, 8, 14 * 2941 + 7 * 7000, 14 * 2941 + 7 * 7000);
        run_free(r);
    }
}

/* The other transport models run the same vectors to completion (flow: max-min sharing;
 * ideal: latency only) with a symmetric result. */
static void test_other_models(void)
{
    SV_REQUIRE_SHARED("interop/astra-sim", "ASTRA-sim's microbenchmarks and configs");
    const char *other[] = {"flow", "ideal"};
    for (size_t m = 0; m < G_N_ELEMENTS(other); m++) {
        g_autofree char *what = g_strdup_printf("all_reduce 8 Ring %s", other[m]);
        struct run *r = REPLAY(
            "--workload", ASTRA "/microbenchmarks/all_reduce/8npus_1MB/all_reduce", "--system",
            SYS_RING4C, "--network", ASTRA "/configs/Ring_8npus.yml", "--network-model", other[m]);
        expect_symmetric(r, what, 8);
        run_free(r);
        /* Compute-only work does not depend on the network model. */
        r = REPLAY("--workload", CHAKRA "/vectors/compute_chain/compute_chain", "--system",
                   SYS_RING4C, "--network", NET_FC2, "--network-model", other[m]);
        expect_all(r, "compute_chain", 2, 35000, 0);
        run_free(r);
    }
}

int main(void)
{
    static const sv_test_case micro_cases[] = {
        {"all_reduce", test_micro_all_reduce},
        {"all_gather", test_micro_all_gather},
        {"reduce_scatter", test_micro_reduce_scatter},
        {"all_to_all", test_micro_all_to_all},
        {"rt_template", test_rt_template},
        {"active_chunks_2", test_active_chunks_2},
        {NULL, NULL},
    };
    static const sv_test_case vector_cases[] = {
        {"compute_chain", test_compute_chain},
        {"collectives", test_collectives},
        {"p2p", test_p2p},
        {"remote_mem", test_remote_mem},
        {"chakra_generator", test_generator},
        {"ignore_ctrl_deps", test_ignore_ctrl_deps},
        {NULL, NULL},
    };
    static const sv_test_case failure_cases[] = {
        {"no_memory_expansion", test_fail_no_memory_expansion},
        {"barrier", test_fail_barrier},
        {"send_without_dst", test_fail_send_without_dst},
        {"missing_file", test_fail_missing_file},
        {"bad_options", test_fail_bad_options},
        {"unmatched_recv", test_fail_unmatched_recv},
        {"cycle", test_fail_cycle},
        {"groups_and_custom", test_fail_groups_and_custom},
        {NULL, NULL},
    };
    static const sv_test_case symmetric_cases[] = {
        {"held_back_configs", test_symmetric_runs},
        {"custom_collective", test_custom_collective},
        {"flow_and_ideal", test_other_models},
        {NULL, NULL},
    };
    sv_test_add_suite("replay_astra_microbenchmarks", micro_cases);
    sv_test_add_suite("replay_vectors", vector_cases);
    sv_test_add_suite("replay_failures", failure_cases);
    sv_test_add_suite("replay_symmetric", symmetric_cases);
    return sv_test_run();
}
