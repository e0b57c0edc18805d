/* `servesim run --emit-et` sets replayed by `servesim replay` with the configs written beside them
 * (issue 12; docs/chakra.md "Emitted sets"): every NPU of every set finishes when the run says it
 * did (iterations.csv), to the nanosecond, for a TP 2 instance, a PP 2 instance, a DP 2 x EP 2 MoE
 * group and a prefill/decode cluster written as one run-scope set; the files hold what ASTRA-sim
 * and Chakra's tools accept (no METADATA node, is_cpu_op on every compute node, num_ops and
 * tensor_size on every operator, pg_name on every collective, the group in the comm-group JSON);
 * and pipeline-parallel output grows linearly with the batches. Roofline latency and built-in
 * models: no ../shared needed. */
#include "tests/test_util.h"

#include "proto/proto.h"

#include <CUnit/CUnit.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>

#define INST(extra)                                                                                \
    "{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100-SXM\", \"npu_mem\": "      \
    "{\"mem_size\": 80, \"mem_util\": 0.9}, " extra "}"
#define CLUSTER(insts)                                                                             \
    "{\"num_nodes\": 1, \"link_bw\": 16, \"link_latency\": 20000, \"nodes\": [{\"instances\": "    \
    "[" insts "]}]}"

static const char *const WL =
    "{\"input_toks\": 100, \"output_toks\": 4, \"arrival_time_ns\": 0}\n"
    "{\"input_toks\": 50, \"output_toks\": 5, \"arrival_time_ns\": 1000}\n"
    "{\"input_toks\": 300, \"output_toks\": 3, \"arrival_time_ns\": 5000000}\n"
    "{\"input_toks\": 70, \"output_toks\": 6, \"arrival_time_ns\": 30000000}\n";

static int run(const char *const *argv, char **out, char **err)
{
    int status = -1;
    CU_ASSERT_FATAL(sv_test_spawn(argv, out, err, &status));
    if (status != 0)
        fprintf(stderr, "%s %s: %s", argv[1], argv[2] ? argv[2] : "", *err);
    return status;
}

static char *put(const char *dir, const char *name, const char *text)
{
    char *path = g_build_filename(dir, name, NULL);
    CU_ASSERT_FATAL(g_file_set_contents(path, text, -1, NULL));
    return path;
}

/* Run the cluster with ET output into <dir>/et; returns that folder. */
static char *emit(const char *dir, const char *cluster, const char *wl, const char *scope)
{
    g_autofree char *cl = put(dir, "cluster.json", cluster);
    g_autofree char *w = put(dir, "wl.jsonl", wl);
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    char *et = g_build_filename(dir, "et", NULL);
    const char *argv[] = {SV_SERVESIM_BIN, "run",      "--cluster", cl,  "--workload", w,
                          "--latency",     "roofline", "--emit-et", et,  "--et-scope", scope,
                          "--output-dir",  out,        "--quiet",   NULL};
    char *so = NULL, *se = NULL;
    CU_ASSERT_EQUAL_FATAL(run(argv, &so, &se), 0);
    g_free(so);
    g_free(se);
    return et;
}

/* Replay every set of iterations.csv with its unit's configs and compare each NPU's finish
 * time with the run's. Returns the number of sets replayed. */
static int replay_all(const char *et)
{
    g_autofree char *csv_path = g_build_filename(et, "iterations.csv", NULL);
    g_autofree char *csv = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(csv_path, &csv, NULL, NULL));
    g_autofree char *manifest_path = g_build_filename(et, "manifest.json", NULL);
    CU_ASSERT_FATAL(g_file_test(manifest_path, G_FILE_TEST_IS_REGULAR));
    g_auto(GStrv) lines = g_strsplit(csv, "\n", -1);
    int sets = 0, checked = 0;
    g_autofree char *last = NULL;
    for (int i = 1; lines[i] && lines[i][0]; i++) {
        g_auto(GStrv) f = g_strsplit(lines[i], ",", -1);
        CU_ASSERT_FATAL(g_strv_length(f) == 8);
        if (last && strcmp(last, f[0]) == 0)
            continue; /* one replay per set */
        g_free(last);
        last = g_strdup(f[0]);
        const char *unit = f[1];
        g_autofree char *wl = g_build_filename(et, f[0], NULL);
        g_autofree char *sys = g_strdup_printf("%s/%s.system.json", et, unit);
        g_autofree char *net = g_strdup_printf("%s/%s.network.yml", et, unit);
        g_autofree char *mem = g_strdup_printf("%s/%s.memory.json", et, unit);
        g_autofree char *grp = g_strdup_printf("%s/%s.groups.json", et, unit);
        const char *argv[] = {SV_SERVESIM_BIN,   "replay", "--workload",          wl,
                              "--system",        sys,      "--network",           net,
                              "--memory",        mem,      "--comm-groups",       grp,
                              "--network-model", "flow",   "--precise-durations", NULL};
        char *so = NULL, *se = NULL;
        CU_ASSERT_EQUAL_FATAL(run(argv, &so, &se), 0);
        sets++;
        /* every row of this set: the NPU's replayed finish = the run's duration */
        for (int k = i; lines[k] && lines[k][0]; k++) {
            g_auto(GStrv) g = g_strsplit(lines[k], ",", -1);
            if (strcmp(g[0], f[0]) != 0)
                break;
            g_autofree char *needle = g_strdup_printf("sys[%s] finished, %s cycles", g[3], g[6]);
            if (!strstr(so, needle))
                fprintf(stderr, "%s: want '%s' in:\n%s", f[0], needle, so);
            CU_ASSERT_PTR_NOT_NULL(strstr(so, needle));
            checked++;
        }
        g_free(so);
        g_free(se);
    }
    CU_ASSERT(checked >= sets);
    return sets;
}

struct attr_counts {
    uint64_t nodes, comp, cpu_op, cpu_true, num_ops, tensor_size, coll, pg_name, metadata, send,
        recv;
};

/* Decode one file with the project's reader and count what other tools need. */
static void count_attrs(const char *path, struct attr_counts *c)
{
    g_autoptr(GError) e = NULL;
    g_autoptr(sv_proto_reader) rd = sv_proto_reader_open(path, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rd);
    ChakraProtoMsg__Node *n = NULL;
    while (sv_proto_reader_next(rd, &n, &e)) {
        c->nodes++;
        switch (n->type) {
        case CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE: {
            c->comp++;
            gboolean cpu = FALSE;
            const ChakraProtoMsg__AttributeProto *a = sv_proto_attr_find(n, "is_cpu_op");
            if (a && sv_proto_attr_bool(a, &cpu))
                c->cpu_op++;
            c->cpu_true += cpu != FALSE; /* none: ASTRA-sim's statistics refuse CPU ops */
            int64_t v;
            a = sv_proto_attr_find(n, "num_ops");
            if (a && sv_proto_attr_int(a, &v) && v >= 0)
                c->num_ops++;
            uint64_t u;
            a = sv_proto_attr_find(n, "tensor_size");
            if (a && sv_proto_attr_uint(a, &u))
                c->tensor_size++;
            break;
        }
        case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE: {
            c->coll++;
            const char *s = NULL;
            const ChakraProtoMsg__AttributeProto *a = sv_proto_attr_find(n, "pg_name");
            if (a && sv_proto_attr_string(a, &s) && s[0])
                c->pg_name++;
            break;
        }
        case CHAKRA_PROTO_MSG__NODE_TYPE__METADATA_NODE:
            c->metadata++;
            break;
        case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE:
            c->send++;
            break;
        case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE:
            c->recv++;
            break;
        default:
            break;
        }
        sv_proto_node_free(n);
        n = NULL;
    }
    CU_ASSERT_PTR_NULL(e);
}

static void count_dir(const char *et, struct attr_counts *c)
{
    memset(c, 0, sizeof *c);
    g_autoptr(GDir) d = g_dir_open(et, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    const char *name;
    while ((name = g_dir_read_name(d))) {
        if (!g_str_has_suffix(name, ".et"))
            continue;
        g_autofree char *p = g_build_filename(et, name, NULL);
        count_attrs(p, c);
    }
    CU_ASSERT(c->nodes > 0);
    SV_ASSERT_EQ_I64(c->metadata, 0);
    SV_ASSERT_EQ_I64(c->cpu_op, c->comp);
    SV_ASSERT_EQ_I64(c->cpu_true, 0);
    SV_ASSERT_EQ_I64(c->num_ops, c->comp);
    SV_ASSERT_EQ_I64(c->tensor_size, c->comp);
    SV_ASSERT_EQ_I64(c->pg_name, c->coll);
}

static void test_tp2(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *et =
        emit(dir, CLUSTER(INST("\"num_npus\": 2, \"tp_size\": 2")), WL, "iteration");
    CU_ASSERT(replay_all(et) >= 4);
    struct attr_counts c;
    count_dir(et, &c);
    CU_ASSERT(c.coll > 0);
    /* the TP group in the comm-group JSON, local ids */
    g_autofree char *gp = g_build_filename(et, "inst0.groups.json", NULL);
    g_autoptr(JsonParser) jp = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_file(jp, gp, NULL));
    JsonObject *o = json_node_get_object(json_parser_get_root(jp));
    CU_ASSERT_FATAL(json_object_has_member(o, "1"));
    JsonArray *m = json_object_get_array_member(o, "1");
    SV_ASSERT_EQ_I64(json_array_get_length(m), 2);
    SV_ASSERT_EQ_I64(json_array_get_int_element(m, 0), 0);
    SV_ASSERT_EQ_I64(json_array_get_int_element(m, 1), 1);
    sv_test_rmtree(dir);
}

static void test_pp2(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *et = emit(
        dir, CLUSTER(INST("\"num_npus\": 2, \"tp_size\": 1, \"pp_size\": 2")), WL, "iteration");
    CU_ASSERT(replay_all(et) >= 4);
    struct attr_counts c;
    count_dir(et, &c);
    CU_ASSERT(c.send > 0);
    SV_ASSERT_EQ_I64(c.send, c.recv);
    sv_test_rmtree(dir);
}

/* Each node written once: bytes per set do not grow with the run (they grew with the batches in
 * flight, quadratically in all, before). */
static void test_pp_linear(void)
{
    double per_set[2];
    for (int k = 0; k < 2; k++) {
        g_autofree char *dir = sv_test_tmpdir();
        GString *wl = g_string_new(NULL);
        int n = k == 0 ? 4 : 16;
        for (int i = 0; i < n; i++)
            g_string_append_printf(wl,
                                   "{\"input_toks\": 64, \"output_toks\": 8, "
                                   "\"arrival_time_ns\": %d}\n",
                                   i * 1000);
        g_autofree char *et =
            emit(dir, CLUSTER(INST("\"num_npus\": 2, \"tp_size\": 1, \"pp_size\": 2")), wl->str,
                 "iteration");
        g_string_free(wl, TRUE);
        uint64_t bytes = 0, files = 0;
        g_autoptr(GDir) d = g_dir_open(et, 0, NULL);
        const char *name;
        while ((name = g_dir_read_name(d))) {
            if (!g_str_has_suffix(name, ".et"))
                continue;
            g_autofree char *p = g_build_filename(et, name, NULL);
            GStatBuf st;
            CU_ASSERT_FATAL(g_stat(p, &st) == 0);
            bytes += (uint64_t)st.st_size;
            files++;
        }
        CU_ASSERT_FATAL(files > 0);
        per_set[k] = (double)bytes / (double)files;
        sv_test_rmtree(dir);
    }
    /* the same batch shapes' nodes; only the clock's waits and attribute values vary */
    CU_ASSERT(per_set[1] < per_set[0] * 1.2 && per_set[1] > per_set[0] * 0.8);
    if (!(per_set[1] < per_set[0] * 1.2))
        fprintf(stderr, "bytes per file: %.0f (4 requests) vs %.0f (16)\n", per_set[0], per_set[1]);
}

static void test_dp_ep(void)
{
#define MOE                                                                                        \
    "{\"model_name\": \"Qwen/Qwen3-30B-A3B\", \"hardware\": \"H100-SXM\", \"npu_mem\": "           \
    "{\"mem_size\": 80, \"mem_util\": 0.9}, \"num_npus\": 1, \"tp_size\": 1, \"ep_size\": 2, "     \
    "\"dp_group\": \"A\"}"
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *et = emit(dir, CLUSTER(MOE "," MOE), WL, "iteration");
#undef MOE
    CU_ASSERT(replay_all(et) >= 4);
    struct attr_counts c;
    count_dir(et, &c);
    CU_ASSERT(c.coll > 0); /* the EP group's dispatch and combine */
    /* one set per wave, both members' files */
    g_autofree char *f1 = g_build_filename(et, "dp0_iter0.1.et", NULL);
    CU_ASSERT(g_file_test(f1, G_FILE_TEST_IS_REGULAR));
    sv_test_rmtree(dir);
}

static void test_pd_run_scope(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *et =
        emit(dir,
             CLUSTER(INST("\"num_npus\": 1, \"tp_size\": 1, \"pd_type\": \"prefill\"") "," INST(
                 "\"num_npus\": 1, \"tp_size\": 1, \"pd_type\": \"decode\"")),
             WL, "run");
    SV_ASSERT_EQ_I64(replay_all(et), 1);
    struct attr_counts c;
    count_dir(et, &c);
    SV_ASSERT_EQ_I64(c.send, 4); /* each request's KV, prefill NPU -> decode NPU */
    SV_ASSERT_EQ_I64(c.recv, 4);
    sv_test_rmtree(dir);
}

/* One device (the default study's shape): ASTRA-sim's networks need two NPUs, so each set has an
 * idle partner, an empty file (docs/chakra.md); both scopes replay. */
static void test_single_device(void)
{
    const char *scopes[] = {"iteration", "run"};
    for (int k = 0; k < 2; k++) {
        g_autofree char *dir = sv_test_tmpdir();
        g_autofree char *et =
            emit(dir, CLUSTER(INST("\"num_npus\": 1, \"tp_size\": 1")), WL, scopes[k]);
        CU_ASSERT(replay_all(et) >= 1);
        struct attr_counts c;
        count_dir(et, &c);
        g_autofree char *idle =
            g_build_filename(et, k == 0 ? "inst0_iter0.1.et" : "run.1.et", NULL);
        CU_ASSERT(g_file_test(idle, G_FILE_TEST_IS_REGULAR));
        sv_test_rmtree(dir);
    }
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"TP 2 sets replay to the run's times", test_tp2},
        {"PP 2 sets replay to the run's times", test_pp2},
        {"PP output grows linearly", test_pp_linear},
        {"DP 2 x EP 2 sets replay to the run's times", test_dp_ep},
        {"PD run scope replays to the run's times", test_pd_run_scope},
        {"one device: both scopes replay, with an idle partner", test_single_device},
        {NULL, NULL},
    };
    sv_test_add_suite("et_sets", cases);
    return sv_test_run();
}
