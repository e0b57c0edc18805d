/* Speculative decoding in the parallel configurations deployments use (docs/speculative.md
 * "Prefill/decode disaggregation", "Data and expert parallelism", "Tensor parallelism"), end to
 * end through `servesim run`:
 * - PD: a decode instance speculates, a prefill instance does not (vLLM's proxy sends it
 *   max_tokens=1); at acceptance 1 each decode step emits k + 1 tokens; TTFT is the non-
 *   speculative PD run's (the decode instance's first step recomputes the last prompt token and
 *   verifies nothing);
 * - pipeline parallelism is refused with the config path or the flag named. */
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <json-glib/json-glib.h>
#include <string.h>

#define INST(extra)                                                                                \
    "{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100-SXM\", \"npu_mem\": "      \
    "{\"mem_size\": 80, \"mem_util\": 0.9}, \"num_npus\": 1, \"tp_size\": 1" extra "}"
#define CLUSTER(insts)                                                                             \
    "{\"num_nodes\": 1, \"link_bw\": 16, \"link_latency\": 20000, \"nodes\": [{\"instances\": "    \
    "[" insts "]}]}"
#define EAGLE3                                                                                     \
    ", \"speculative\": {\"method\": \"eagle\", \"num_speculative_tokens\": 3, "                   \
    "\"acceptance_rate\": 1}"

/* `servesim run --cluster FILE` (written from `cluster`) of 4 requests of 64 + 9 tokens, 1 s
 * apart (each alone in the cluster), roofline, host time off, plus `extra` (NULL-terminated). */
static int run(const char *dir, const char *cluster, const char *const *extra, char **err)
{
    g_autofree char *cl = g_build_filename(dir, "cluster.json", NULL);
    CU_ASSERT_FATAL(g_mkdir_with_parents(dir, 0755) == 0);
    CU_ASSERT_FATAL(g_file_set_contents(cl, cluster, -1, NULL));
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    GPtrArray *a = g_ptr_array_new();
    const char *base[] = {"--cluster", cl,         "--requests",      "4",    "--qps",        "1",
                          "--arrival", "fixed",    "--input-len",     "64",   "--output-len", "9",
                          "--latency", "roofline", "--host-overhead", "none", "--output-dir", out};
    for (size_t i = 0; i < G_N_ELEMENTS(base); i++)
        g_ptr_array_add(a, (gpointer)base[i]);
    for (int i = 0; extra && extra[i]; i++)
        g_ptr_array_add(a, (gpointer)extra[i]);
    g_ptr_array_add(a, NULL);
    g_autofree char *stdout_text = NULL;
    int status = -1;
    CU_ASSERT_FATAL(sv_test_servesim(SV_SERVESIM_BIN, "run", (const char *const *)a->pdata,
                                     &stdout_text, err, &status));
    g_ptr_array_free(a, TRUE);
    return status;
}

/* requests.csv: column `col` of each of the 4 requests (by id). */
static void column(const char *dir, const char *col, int64_t out[4])
{
    g_autofree char *path = g_build_filename(dir, "out", "requests.csv", NULL);
    g_autofree char *text = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(path, &text, NULL, NULL));
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    g_auto(GStrv) head = g_strsplit(lines[0], ",", -1);
    int c = -1;
    for (int i = 0; head[i]; i++)
        if (strcmp(head[i], col) == 0)
            c = i;
    CU_ASSERT_FATAL(c >= 0);
    int n = 0;
    for (int l = 1; lines[l] && lines[l][0]; l++) {
        g_auto(GStrv) f = g_strsplit(lines[l], ",", -1);
        int64_t id = g_ascii_strtoll(f[0], NULL, 10);
        CU_ASSERT_FATAL(id >= 0 && id < 4);
        out[id] = g_ascii_strtoll(f[c], NULL, 10);
        n++;
    }
    SV_ASSERT_EQ_I64(n, 4);
}

static JsonObject *spec_summary(JsonParser *p, const char *dir)
{
    g_autofree char *path = g_build_filename(dir, "out", "summary.json", NULL);
    CU_ASSERT_FATAL(json_parser_load_from_file(p, path, NULL));
    JsonObject *o = json_node_get_object(json_parser_get_root(p));
    CU_ASSERT_FATAL(json_object_has_member(o, "speculative_decoding"));
    return json_object_get_object_member(o, "speculative_decoding");
}

/* Instance `inst`'s entry of speculative_decoding.instances. */
static JsonObject *spec_instance(JsonObject *sd, int64_t inst)
{
    JsonArray *a = json_object_get_array_member(sd, "instances");
    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonObject *o = json_array_get_object_element(a, i);
        if (json_object_get_int_member(o, "instance") == inst)
            return o;
    }
    CU_FAIL_FATAL("instance missing from speculative_decoding.instances");
    return NULL;
}

/* Prefill instance 0, decode instance 1. Each request's 9 tokens: token 1 from the decode
 * instance's first step (no drafts: the request has none yet), then 8 in 2 verify steps of
 * k + 1 = 4 at acceptance 1: 2 drafts of 3 tokens per request, 8 drafts, 24 draft tokens, all
 * accepted, all on the decode instance; the prefill instance proposes none. TTFT per request
 * equals the plain PD run's (same prefill, same KV transfer, same one-token first step); the
 * decode of the 8 tokens after the first takes 2 steps instead of 8. */
static void check_pd(const char *plain, const char *spec)
{
    int64_t ttft_p[4], ttft_s[4], tpot_p[4], tpot_s[4], inst[4];
    column(plain, "ttft_ns", ttft_p);
    column(spec, "ttft_ns", ttft_s);
    column(plain, "tpot_ns", tpot_p);
    column(spec, "tpot_ns", tpot_s);
    column(spec, "instance", inst);
    for (int i = 0; i < 4; i++) {
        SV_ASSERT_EQ_I64(ttft_s[i], ttft_p[i]);
        SV_ASSERT_EQ_I64(inst[i], 1);
        /* 2 steps of (3 EAGLE passes + a 4-token verify) for 8 tokens against 8 decodes: the
         * verify costs about one decode, an EAGLE pass c = 0.085 of one (one layer + the head,
         * docs/speculative.md): TPOT ~ 2 x (1 + 3c) / 8 = 0.31 of the plain one (0.30 .. 0.35;
         * tests/msg/test_spec_engine.c times the decode group's steps exactly). */
        CU_ASSERT(tpot_s[i] * 100 > tpot_p[i] * 30 && tpot_s[i] * 100 < tpot_p[i] * 35);
    }
    g_autoptr(JsonParser) p = json_parser_new();
    JsonObject *sd = spec_summary(p, spec);
    SV_ASSERT_EQ_I64(json_object_get_int_member(sd, "num_drafts"), 8);
    SV_ASSERT_EQ_I64(json_object_get_int_member(sd, "num_draft_tokens"), 24);
    SV_ASSERT_EQ_I64(json_object_get_int_member(sd, "num_accepted_tokens"), 24);
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(sd, "mean_acceptance_length"), 4.0, 0);
    SV_ASSERT_EQ_I64(json_object_get_int_member(spec_instance(sd, 1), "num_drafts"), 8);
}

static void test_pd(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *plain = g_build_filename(tmp, "plain", NULL);
    g_autofree char *dec = g_build_filename(tmp, "decode-only", NULL);
    g_autofree char *all = g_build_filename(tmp, "flag", NULL);
    g_autofree char *err = NULL;
    SV_ASSERT_EQ_I64(
        run(plain,
            CLUSTER(INST(", \"pd_type\": \"prefill\"") "," INST(", \"pd_type\": \"decode\"")), NULL,
            &err),
        0);
    /* `speculative` on the decode instance only */
    g_clear_pointer(&err, g_free);
    SV_ASSERT_EQ_I64(run(dec,
                         CLUSTER(INST(", \"pd_type\": \"prefill\"") "," INST(
                             ", \"pd_type\": \"decode\"" EAGLE3)),
                         NULL, &err),
                     0);
    check_pd(plain, dec);
    /* --speculative on every instance: the prefill one never speculates */
    const char *flag[] = {"--speculative", "eagle:3:1", NULL};
    g_clear_pointer(&err, g_free);
    SV_ASSERT_EQ_I64(
        run(all, CLUSTER(INST(", \"pd_type\": \"prefill\"") "," INST(", \"pd_type\": \"decode\"")),
            flag, &err),
        0);
    check_pd(plain, all);
    g_autoptr(JsonParser) p = json_parser_new();
    JsonObject *sd = spec_summary(p, all);
    SV_ASSERT_EQ_I64(json_object_get_int_member(spec_instance(sd, 0), "num_drafts"), 0);
    sv_test_rmtree(tmp);
}

/* DP 2 x EP 2 (Qwen3-30B-A3B, 128 experts top-8, one H100-SXM per member, MTP k = 3 at
 * acceptance 1 in each instance's config): the requests come 1 s apart, so one member serves
 * while the other runs the group's dummy steps (its EP ranks join every dispatch and combine).
 * Each request's 9 tokens: 1 from its prefill, then 2 verify steps of k + 1 = 4: 2 drafts of 3,
 * all accepted, on the instance that serves it (requests.csv's `instance`). */
static void test_dp_ep(void)
{
#define MOE                                                                                        \
    "{\"model_name\": \"Qwen/Qwen3-30B-A3B\", \"hardware\": \"H100-SXM\", \"npu_mem\": "           \
    "{\"mem_size\": 80, \"mem_util\": 0.9}, \"num_npus\": 1, \"tp_size\": 1, \"ep_size\": 2, "     \
    "\"dp_group\": \"A\", \"speculative\": {\"method\": \"mtp\", \"num_speculative_tokens\": 3, "  \
    "\"acceptance_rate\": 1}}"
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *err = NULL;
    SV_ASSERT_EQ_I64(run(tmp, CLUSTER(MOE "," MOE), NULL, &err), 0);
#undef MOE
    int64_t inst[4], out[4];
    column(tmp, "instance", inst);
    column(tmp, "output_tokens", out);
    int64_t served[2] = {0, 0};
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_FATAL(inst[i] == 0 || inst[i] == 1);
        SV_ASSERT_EQ_I64(out[i], 9);
        served[inst[i]]++;
    }
    g_autoptr(JsonParser) p = json_parser_new();
    JsonObject *sd = spec_summary(p, tmp);
    SV_ASSERT_EQ_I64(json_object_get_int_member(sd, "num_drafts"), 8);
    SV_ASSERT_EQ_I64(json_object_get_int_member(sd, "num_accepted_tokens"), 24);
    for (int i = 0; i < 2; i++) {
        JsonObject *o = spec_instance(sd, i);
        CU_ASSERT_STRING_EQUAL(json_object_get_string_member(o, "method"), "mtp");
        SV_ASSERT_EQ_I64(json_object_get_int_member(o, "num_drafts"), 2 * served[i]);
        SV_ASSERT_EQ_I64(json_object_get_int_member(o, "num_accepted_tokens"), 6 * served[i]);
    }
    sv_test_rmtree(tmp);
}

static void expect_bad(const char *cluster, const char *const *extra, const char *needle)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *err = NULL;
    CU_ASSERT(run(tmp, cluster, extra, &err) != 0);
    if (!err || !strstr(err, needle))
        fprintf(stderr, "\n  stderr: %s\n  wanted: %s\n", err ? err : "(none)", needle);
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err, needle));
    g_autofree char *sum = g_build_filename(tmp, "out", "summary.json", NULL);
    CU_ASSERT_FALSE(g_file_test(sum, G_FILE_TEST_EXISTS));
    sv_test_rmtree(tmp);
}

/* Pipeline parallelism stays refused, as vLLM refuses it: the config path, or the flag. */
static void test_pp_refused(void)
{
#define PP2                                                                                        \
    "{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100-SXM\", \"npu_mem\": "      \
    "{\"mem_size\": 80, \"mem_util\": 0.9}, \"num_npus\": 2, \"tp_size\": 1, \"pp_size\": 2"
    expect_bad(CLUSTER(PP2 EAGLE3 "}"), NULL,
               "nodes[0].instances[0].speculative: speculative decoding is not combined with "
               "pipeline parallelism (pp_size 2): vLLM refuses it");
    const char *flag[] = {"--speculative", "mtp:2:0.5", NULL};
    expect_bad(CLUSTER(PP2 "}"), flag,
               "--speculative: speculative decoding is not combined with pipeline parallelism "
               "(pp_size 2)");
#undef PP2
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"PD: the decode instance speculates, TTFT unchanged", test_pd},
        {"DP x EP MoE members: k + 1 tokens per step on each", test_dp_ep},
        {"pipeline parallelism refused with its path", test_pp_refused},
        {NULL, NULL},
    };
    sv_test_add_suite("spec_par_cli", cases);
    return sv_test_run();
}
