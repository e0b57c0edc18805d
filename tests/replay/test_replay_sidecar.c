/* The configs servesim writes for a simulated cluster (system JSON, network YAML, comm-group JSON:
 * sv_sys_cfg_save_json, sv_net_topo_save_yaml, sv_sys_groups_save_json) run in the replay as
 * they are, through the library and through `servesim replay`.
 *
 * The cluster: one TP2 instance on a 16 GB/s, 20 us link (tests/parallel's TP2 case). Its
 * system layer (planner/cluster_net.c: one chunk, a ring per dimension, endpoint delay 10 ns,
 * local-mem-bw = npu_mem.mem_bw 3350 GB/s) and topology are written out, its TP group as group
 * 1's comm-group file, and each NPU's ET is one 1 MiB all-reduce on that group. ASTRA-sim's 2-NPU
 * ring all-reduce (docs/collectives.md): m = S / 2 = 524288 bytes per step, T = floor(L + m / B)
 * with B = 16 x 2^30 / 1e9 bytes/ns: floor(20000 + 30517.578125) = 50517; the reduction reads
 * and writes m three times at M = 3350 bytes/ns: 3 x floor(156.5) = 468; reduce-scatter step
 * (T + 468 + 10) + all-gather step (T + 10) + 10 = 101532 ns, all of it communication. */
#include "planner/planner.h"
#include "replay/replay.h"
#include "tests/replay/et_fixtures.h"
#include "tests/test_util.h"

#include <json-glib/json-glib.h>
#include <string.h>

#define T_AR 101532

static void write_sidecars(const char *dir, char **sys, char **net, char **groups, int *group)
{
    static const char cluster[] =
        "{\"link_bw\": 16, \"link_latency\": 20000, \"nodes\": [{\"instances\": [{\"model_name\": "
        "\"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100\", \"npu_mem\": {\"mem_size\": 80, "
        "\"mem_bw\": 3350}, \"tp_size\": 2}]}]}";
    g_autoptr(GError) e = NULL;
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, cluster, -1, &e));
    struct sv_planner_cluster_cfg *c =
        sv_planner_cluster_from_json(json_parser_get_root(p), "cluster.json", &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    sv_engine *eng = sv_engine_new(1);
    sv_planner_cluster_net *cn = sv_planner_cluster_net_new(eng, c, SV_NET_MODEL_ANALYTICAL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cn);
    const sv_net *n = sv_planner_cluster_net_net(cn);
    const sv_sys *s = sv_planner_cluster_net_coll(cn);
    *group = sv_planner_cluster_net_tp_group(cn, 0, 0);
    CU_ASSERT(*group > 0);
    *sys = g_build_filename(dir, "system.json", NULL);
    *net = g_build_filename(dir, "network.yml", NULL);
    *groups = g_build_filename(dir, "comm_groups.json", NULL);
    CU_ASSERT_TRUE(sv_sys_cfg_save_json(sv_sys_get_cfg(s), sv_net_topo(n)->ndims, *sys, &e));
    CU_ASSERT_TRUE(sv_net_topo_save_yaml(sv_net_topo(n), *net, &e));
    CU_ASSERT_TRUE(sv_sys_groups_save_json(sv_sys_get_groups(s), group, 1, 0, *groups, &e));
    if (e != NULL)
        fprintf(stderr, "%s\n", e->message);
    sv_planner_cluster_net_free(cn);
    sv_engine_free(eng);
    sv_planner_cluster_free(c);

    g_autofree char *pg = g_strdup_printf("%d", *group);
    for (int npu = 0; npu < 2; npu++) {
        ChakraProtoMsg__Node *ar =
            sv_proto_node_new(0, "tp_all_reduce", CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE);
        sv_proto_node_add_attr(ar, sv_proto_attr_new_bool("is_cpu_op", FALSE));
        sv_proto_node_add_attr(ar, sv_proto_attr_new_int64("comm_type", 0));
        sv_proto_node_add_attr(ar, sv_proto_attr_new_int64("comm_size", 1 << 20));
        sv_proto_node_add_attr(ar, sv_proto_attr_new_string("pg_name", pg));
        et_write(dir, "tp", npu, &ar, 1);
    }
}

static void test_library(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *sys = NULL, *net = NULL, *groups = NULL;
    int group = 0;
    write_sidecars(dir, &sys, &net, &groups, &group);
    g_autofree char *prefix = g_build_filename(dir, "tp", NULL);
    struct sv_replay_opts o = {
        .workload = prefix, .system = sys, .network = net, .comm_groups = groups};
    struct sv_replay_result res = {0};
    GError *err = NULL;
    gboolean ok = sv_replay_run(&o, &res, &err);
    if (!ok)
        fprintf(stderr, "%s\n", err->message);
    CU_ASSERT_TRUE_FATAL(ok);
    CU_ASSERT_EQUAL(res.npus, 2);
    CU_ASSERT_EQUAL_FATAL(res.n_finished, 2);
    for (int i = 0; i < 2; i++) {
        SV_ASSERT_EQ_I64(res.finished[i].finish_ns, T_AR);
        SV_ASSERT_EQ_I64(res.finished[i].exposed_comm_ns, T_AR);
    }
    /* 1 MiB each way: half per step, two steps, two NPUs */
    SV_ASSERT_EQ_I64(res.net.bytes_sent, 2 * (1 << 20));
    sv_replay_result_clear(&res);
    sv_test_rmtree(dir);
}

static void test_cli(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *sys = NULL, *net = NULL, *groups = NULL;
    int group = 0;
    write_sidecars(dir, &sys, &net, &groups, &group);
    g_autofree char *prefix = g_build_filename(dir, "tp", NULL);
    const char *argv[] = {SV_SERVESIM_BIN, "replay", "--workload",    prefix, "--system", sys,
                          "--network",     net,      "--comm-groups", groups, NULL};
    g_autofree char *out = NULL, *errs = NULL;
    int status = -1;
    CU_ASSERT_TRUE_FATAL(sv_test_spawn(argv, &out, &errs, &status));
    g_autofree char *want =
        g_strdup_printf("sys[0] finished, %d cycles, exposed communication %d cycles.\n"
                        "sys[1] finished, %d cycles, exposed communication %d cycles.\n",
                        T_AR, T_AR, T_AR, T_AR);
    if (status != 0 || !g_str_has_prefix(out, want))
        fprintf(stderr, "\nstatus %d\nstdout:\n%s\nstderr:\n%s\n", status, out, errs);
    CU_ASSERT_EQUAL(status, 0);
    CU_ASSERT_TRUE(g_str_has_prefix(out, want));
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"written configs, library", test_library},
        {"written configs, servesim replay", test_cli},
        {NULL, NULL},
    };
    sv_test_add_suite("replay_sidecar_configs", cases);
    return sv_test_run();
}
