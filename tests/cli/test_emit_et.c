/* `servesim run --emit-et DIR` end to end: a tiny TP=2 study writes one Chakra ET per iteration
 * and rank; `servesim inspect --json` reads one and `servesim replay` runs the pair. Expected
 * counts come from the model, not from an earlier run: Llama-3.1-8B has 32 decoder layers, each
 * 9 compute operators (layernorm, qkv_proj, rotary_emb, attention, o_proj, layernorm,
 * gate_up_proj, act_fn, down_proj) and, with TP 2, an all-reduce after o_proj and after down_proj;
 * plus embedding before and final_layernorm, lm_head, sampler after. The first iteration is the
 * first request's 100-token prefill alone (the second request arrives 1 us later), so each
 * all-reduce carries 100 x 4096 x 2 bytes. */
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <json-glib/json-glib.h>
#include <string.h>

static int run(const char *const *argv, char **out, char **err)
{
    int status = -1;
    CU_ASSERT_FATAL(sv_test_spawn(argv, out, err, &status));
    if (status != 0)
        fprintf(stderr, "%s: %s", argv[1], *err);
    return status;
}

static void put(const char *dir, const char *name, const char *text, char **path)
{
    *path = g_build_filename(dir, name, NULL);
    CU_ASSERT_FATAL(g_file_set_contents(*path, text, -1, NULL));
}

static void test_emit_inspect_replay(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *wl = NULL, *cl = NULL, *sys = NULL, *net = NULL;
    put(dir, "wl.jsonl",
        "{\"input_toks\": 100, \"output_toks\": 4, \"arrival_time_ns\": 0}\n"
        "{\"input_toks\": 50, \"output_toks\": 5, \"arrival_time_ns\": 1000}\n",
        &wl);
    put(dir, "cluster.json",
        "{\"num_nodes\": 1, \"link_bw\": 16, \"link_latency\": 20000, \"nodes\": [{"
        "\"num_instances\": 1, \"cpu_mem\": {\"mem_size\": 512, \"mem_bw\": 256, "
        "\"mem_latency\": 0}, \"instances\": [{\"model_name\": \"meta-llama/Llama-3.1-8B\", "
        "\"hardware\": \"H100-SXM\", \"npu_mem\": {\"mem_size\": 80, \"mem_bw\": 3350, "
        "\"mem_latency\": 0, \"mem_util\": 0.9}, \"num_npus\": 2, \"tp_size\": 2, "
        "\"pd_type\": null}]}]}\n",
        &cl);
    /* ASTRA-sim's Ring_4chunks system config; a 2-NPU ring */
    put(dir, "system.json",
        "{\"scheduling-policy\": \"LIFO\", \"endpoint-delay\": 10, "
        "\"active-chunks-per-dimension\": 1, \"preferred-dataset-splits\": 4, "
        "\"all-reduce-implementation\": [\"ring\"], \"all-gather-implementation\": [\"ring\"], "
        "\"reduce-scatter-implementation\": [\"ring\"], \"all-to-all-implementation\": "
        "[\"ring\"], \"collective-optimization\": \"localBWAware\", \"local-mem-bw\": 1600, "
        "\"boost-mode\": 0, \"roofline-enabled\": 0, \"peak-perf\": 900}\n",
        &sys);
    put(dir, "net.yml",
        "topology: [ Ring ]\nnpus_count: [ 2 ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n", &net);
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    g_autofree char *et = g_build_filename(dir, "et", NULL);
    char *so = NULL, *se = NULL;
    const char *a_run[] = {SV_SERVESIM_BIN, "run",      "--cluster",    cl,  "--workload", wl,
                           "--latency",     "roofline", "--output-dir", out, "--emit-et",  et,
                           "--quiet",       NULL};
    CU_ASSERT_EQUAL_FATAL(run(a_run, &so, &se), 0);
    g_free(so);
    g_free(se);
    /* one file per iteration and rank */
    g_autofree char *f0 = g_build_filename(et, "inst0_iter0.0.et", NULL);
    g_autofree char *f1 = g_build_filename(et, "inst0_iter0.1.et", NULL);
    CU_ASSERT_FATAL(g_file_test(f0, G_FILE_TEST_IS_REGULAR));
    CU_ASSERT_FATAL(g_file_test(f1, G_FILE_TEST_IS_REGULAR));

    const char *a_insp[] = {SV_SERVESIM_BIN, "inspect", "--json", f0, NULL};
    CU_ASSERT_EQUAL_FATAL(run(a_insp, &so, &se), 0);
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, so, -1, NULL));
    JsonObject *o = json_node_get_object(json_parser_get_root(p));
    JsonObject *types = json_object_get_object_member(o, "node_types");
    const int64_t comp = 1 + 32 * 9 + 3, coll = 32 * 2;
    SV_ASSERT_EQ_I64(json_object_get_int_member(types, "COMP_NODE"), comp);
    SV_ASSERT_EQ_I64(json_object_get_int_member(types, "COMM_COLL_NODE"), coll);
    /* no METADATA node (ASTRA-sim's statistics assert on them; issue 12) */
    CU_ASSERT_FALSE(json_object_has_member(types, "METADATA_NODE"));
    const int64_t meta = 0;
    SV_ASSERT_EQ_I64(json_object_get_int_member(o, "node_count"), comp + coll + meta);
    JsonObject *comm = json_object_get_object_member(o, "comm_types");
    SV_ASSERT_EQ_I64(json_object_get_int_member(comm, "ALL_REDUCE"), coll);
    /* every node depends on the one before it, nothing dangles */
    SV_ASSERT_EQ_I64(json_object_get_int_member(o, "data_deps_total"), comp + coll + meta - 1);
    SV_ASSERT_EQ_I64(json_object_get_int_member(o, "data_deps_to_missing_nodes"), 0);
    g_free(so);
    g_free(se);

    /* Each node is written once: with two batches in flight (the vllm-0.19 engine) the DAG is
     * kept across launches, and a later iteration's file holds its own nodes only (one
     * iteration's worth, every dependency inside the file), plus at most one "wait" compute node
     * where the batch started behind the previous one (docs/chakra.md "Emitted sets"). */
    for (int k = 1; k <= 3; k++) {
        g_autofree char *fk = g_strdup_printf("%s/inst0_iter%d.0.et", et, k);
        CU_ASSERT_FATAL(g_file_test(fk, G_FILE_TEST_IS_REGULAR));
        const char *a_k[] = {SV_SERVESIM_BIN, "inspect", "--json", fk, NULL};
        CU_ASSERT_EQUAL_FATAL(run(a_k, &so, &se), 0);
        g_autoptr(JsonParser) pk = json_parser_new();
        CU_ASSERT_FATAL(json_parser_load_from_data(pk, so, -1, NULL));
        JsonObject *ok = json_node_get_object(json_parser_get_root(pk));
        JsonObject *tk = json_object_get_object_member(ok, "node_types");
        int64_t nc = json_object_get_int_member(tk, "COMP_NODE");
        CU_ASSERT(nc >= comp && nc <= comp + 1);
        SV_ASSERT_EQ_I64(json_object_get_int_member(tk, "COMM_COLL_NODE"), coll);
        CU_ASSERT_FALSE(json_object_has_member(tk, "METADATA_NODE"));
        CU_ASSERT(json_object_get_int_member(ok, "node_count") <= comp + coll + 1);
        SV_ASSERT_EQ_I64(json_object_get_int_member(ok, "data_deps_to_missing_nodes"), 0);
        g_free(so);
        g_free(se);
    }

    /* replay the pair: both ranks finish at the same time; the ring moves each all-reduce's
     * S = 100 x 4096 x 2 bytes once per rank (reduce-scatter + all-gather, (n-1)/n S each) */
    g_autofree char *prefix = g_build_filename(et, "inst0_iter0", NULL);
    g_autofree char *groups = g_build_filename(et, "inst0.groups.json", NULL);
    const char *a_rep[] = {SV_SERVESIM_BIN, "replay", "--workload",    prefix, "--system", sys,
                           "--network",     net,      "--comm-groups", groups, NULL};
    CU_ASSERT_EQUAL_FATAL(run(a_rep, &so, &se), 0);
    long long t[2] = {-1, -2};
    for (int i = 0; i < 2; i++) {
        g_autofree char *needle = g_strdup_printf("sys[%d] finished, ", i);
        const char *q = strstr(so, needle);
        CU_ASSERT_PTR_NOT_NULL_FATAL(q);
        t[i] = g_ascii_strtoll(q + strlen(needle), NULL, 10);
    }
    CU_ASSERT(t[0] > 0);
    SV_ASSERT_EQ_I64(t[0], t[1]);
    g_autofree char *bytes = g_strdup_printf("(%lld bytes)", (long long)coll * 2 * 100 * 4096 * 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(so, bytes));
    if (!strstr(so, bytes))
        fprintf(stderr, "want %s in:\n%s", bytes, so);
    g_free(so);
    g_free(se);
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"emit, inspect and replay one iteration", test_emit_inspect_replay},
        {NULL, NULL},
    };
    sv_test_add_suite("emit_et", cases);
    return sv_test_run();
}
