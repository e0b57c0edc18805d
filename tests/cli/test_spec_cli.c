/* servesim run --speculative and instances[].speculative (docs/speculative.md), end to end: the KV
 * pool with an EAGLE head's KV (hand computation below), tokens per verify step at acceptance 1
 * in summary.json's counters, byte-identical outputs for the same seed, and bad input as one
 * error naming the flag or the config path, with no outputs written. */
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <json-glib/json-glib.h>
#include <string.h>

/* `servesim run` of 4 requests (64 + 9 tokens, all at once) on the quick form's instance
 * (Llama-3.1-8B on one H100-SXM), roofline, host time off, plus `extra` (NULL-terminated). */
static int run(const char *dir, const char *const *extra, char **err)
{
    GPtrArray *a = g_ptr_array_new();
    const char *base[] = {"--requests",      "4",     "--qps",        "1000",
                          "--input-len",     "64",    "--output-len", "9",
                          "--arrival",       "fixed", "--latency",    "roofline",
                          "--host-overhead", "none",  "--output-dir", dir};
    for (size_t i = 0; i < G_N_ELEMENTS(base); i++)
        g_ptr_array_add(a, (gpointer)base[i]);
    for (int i = 0; extra && extra[i]; i++)
        g_ptr_array_add(a, (gpointer)extra[i]);
    g_ptr_array_add(a, NULL);
    g_autofree char *out = NULL;
    int status = -1;
    CU_ASSERT_FATAL(sv_test_servesim(SV_SERVESIM_BIN, "run", (const char *const *)a->pdata, &out,
                                     err, &status));
    g_ptr_array_free(a, TRUE);
    return status;
}

static JsonObject *load(JsonParser *p, const char *dir, const char *file)
{
    g_autofree char *path = g_build_filename(dir, file, NULL);
    CU_ASSERT_FATAL(json_parser_load_from_file(p, path, NULL));
    return json_node_get_object(json_parser_get_root(p));
}

static int64_t kv_blocks(const char *dir)
{
    g_autoptr(JsonParser) p = json_parser_new();
    JsonObject *o = load(p, dir, "summary.json");
    JsonObject *i0 = json_array_get_object_element(json_object_get_array_member(o, "instances"), 0);
    return json_object_get_int_member(i0, "kv_blocks");
}

/* KV pool (LLMServingSim memory_model.py): trunc(80 GiB x 0.9) = 77,309,411,328 bytes less the
 * weights, 8,030,261,248 parameters x 2 bytes = 16,060,522,496, leaves 61,248,888,832. Plain: a
 * token's KV is 32 layers x 2 (K, V) x 8 heads x 128 x 2 bytes = 131,072 bytes, a block of 16
 * tokens 2,097,152: 29,205 blocks (29,205.7). EAGLE adds its head's weights and one layer's KV
 * (docs/speculative.md): one decoder layer, q 4,096 x 4,096 + k and v 2 x 4,096 x 1,024 + o
 * 4,096 x 4,096 + MLP 3 x 4,096 x 14,336 + 2 norms x 4,096 = 218,112,000 parameters, and the fc
 * projection 2 x 4,096 x 4,096 = 33,554,432: 251,666,432 x 2 = 503,332,864 bytes, leaving
 * 60,745,555,968; a token's KV 33 x 4,096 = 135,168 bytes, 2,162,688 a block: 28,087 blocks
 * (28,087.99).
 * At acceptance 1 with k = 3 each request's 8 tokens after the first come in 2 verify steps of
 * 4: 8 drafts of 3 tokens, all accepted, mean acceptance length 1 + 24 / 8 = 4. */
static void test_capacity_and_counters(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *plain = g_build_filename(tmp, "plain", NULL);
    g_autofree char *spec = g_build_filename(tmp, "spec", NULL);
    g_autofree char *err = NULL;
    SV_ASSERT_EQ_I64(run(plain, NULL, &err), 0);
    const char *flag[] = {"--speculative", "eagle:3:1", NULL};
    g_clear_pointer(&err, g_free);
    SV_ASSERT_EQ_I64(run(spec, flag, &err), 0);
    SV_ASSERT_EQ_I64(kv_blocks(plain), 29205);
    SV_ASSERT_EQ_I64(kv_blocks(spec), 28087);
    g_autoptr(JsonParser) p = json_parser_new();
    JsonObject *o = load(p, spec, "summary.json");
    CU_ASSERT_FATAL(json_object_has_member(o, "speculative_decoding"));
    JsonObject *sd = json_object_get_object_member(o, "speculative_decoding");
    SV_ASSERT_EQ_I64(json_object_get_int_member(sd, "num_drafts"), 8);
    SV_ASSERT_EQ_I64(json_object_get_int_member(sd, "num_draft_tokens"), 24);
    SV_ASSERT_EQ_I64(json_object_get_int_member(sd, "num_accepted_tokens"), 24);
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(sd, "mean_acceptance_length"), 4.0, 0);
    JsonArray *pos = json_object_get_array_member(sd, "acceptance_rate_per_position");
    SV_ASSERT_EQ_I64(json_array_get_length(pos), 3);
    CU_ASSERT_DOUBLE_EQUAL(json_array_get_double_element(pos, 2), 1.0, 0);
    JsonObject *i0 =
        json_array_get_object_element(json_object_get_array_member(sd, "instances"), 0);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(i0, "method"), "eagle");
    SV_ASSERT_EQ_I64(json_object_get_int_member(i0, "num_speculative_tokens"), 3);
    g_autoptr(JsonParser) q = json_parser_new();
    CU_ASSERT_FALSE(json_object_has_member(load(q, plain, "summary.json"), "speculative_decoding"));
    sv_test_rmtree(tmp);
}

static char *slurp(const char *dir, const char *file)
{
    g_autofree char *path = g_build_filename(dir, file, NULL);
    char *text = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(path, &text, NULL, NULL));
    return text;
}

/* The same seed, the same bytes; another seed, other draws (acceptance 0.6 per token). */
static void test_deterministic(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    const char *dirs[3] = {"a", "b", "c"};
    const char *seeds[3] = {"5", "5", "6"};
    char *req[3], *sum[3];
    for (int i = 0; i < 3; i++) {
        g_autofree char *d = g_build_filename(tmp, dirs[i], NULL);
        const char *flag[] = {"--speculative", "mtp:4:0.6", "--seed", seeds[i], NULL};
        g_autofree char *err = NULL;
        SV_ASSERT_EQ_I64(run(d, flag, &err), 0);
        req[i] = slurp(d, "requests.csv");
        sum[i] = slurp(d, "summary.json");
    }
    CU_ASSERT_STRING_EQUAL(req[0], req[1]);
    CU_ASSERT_STRING_EQUAL(sum[0], sum[1]);
    CU_ASSERT(strcmp(req[0], req[2]) != 0);
    for (int i = 0; i < 3; i++) {
        g_free(req[i]);
        g_free(sum[i]);
    }
    sv_test_rmtree(tmp);
}

#define CLUSTER(spec)                                                                              \
    "{\"num_nodes\":1,\"link_bw\":16,\"link_latency\":0,\"nodes\":[{\"num_instances\":1,"          \
    "\"cpu_mem\":{\"mem_size\":1,\"mem_bw\":1,\"mem_latency\":0},\"instances\":["                  \
    "{\"model_name\":\"meta-llama/Llama-3.1-8B\",\"hardware\":\"H100\",\"npu_mem\":{"              \
    "\"mem_size\":80,\"mem_bw\":3350,\"mem_latency\":0,\"mem_util\":0.9},\"speculative\":" spec    \
    "}]}]}"

static void expect_bad(const char *const *extra, const char *cluster_json, const char *needle)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *out = g_build_filename(tmp, "out", NULL);
    g_autofree char *cl = g_build_filename(tmp, "cluster.json", NULL);
    const char *args[8] = {NULL};
    int n = 0;
    for (int i = 0; extra && extra[i]; i++)
        args[n++] = extra[i];
    if (cluster_json) {
        CU_ASSERT_FATAL(g_file_set_contents(cl, cluster_json, -1, NULL));
        args[n++] = "--cluster";
        args[n++] = cl;
    }
    g_autofree char *err = NULL;
    int rc = run(out, args, &err);
    CU_ASSERT(rc != 0);
    if (!err || !strstr(err, needle))
        fprintf(stderr, "\n  stderr: %s\n  wanted: %s\n", err ? err : "(none)", needle);
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err, needle));
    g_autofree char *sum = g_build_filename(out, "summary.json", NULL);
    CU_ASSERT_FALSE(g_file_test(sum, G_FILE_TEST_EXISTS));
    sv_test_rmtree(tmp);
}

static void test_bad_input(void)
{
    const char *k0[] = {"--speculative", "eagle:0:0.5", NULL};
    expect_bad(k0, NULL, "--speculative.num_speculative_tokens: 0 is out of range (1 .. 64)");
    const char *a2[] = {"--speculative", "mtp:2:1.5", NULL};
    expect_bad(a2, NULL, "--speculative.acceptance_rate: 1.5 is outside [0, 1]");
    const char *dm[] = {"--speculative", "draft:nobody/tiny:2:0.5", NULL};
    expect_bad(dm, NULL, "--speculative.draft_model: ");
    const char *form[] = {"--speculative", "eagle:3", NULL};
    expect_bad(form, NULL, "--speculative: 'eagle:3' is not METHOD:K:A or draft:MODEL:K:A");
    const char *pp[] = {"--speculative", "eagle:3:0.5", "--pp", "2", NULL};
    expect_bad(pp, NULL, "speculative decoding is not combined with pipeline");
    expect_bad(NULL,
               CLUSTER("{\"method\":\"eagle\",\"num_speculative_tokens\":3,\"acceptance\":{"
                       "\"distribution\":\"beta\",\"mean\":0.7,\"concentration\":10,\"sd\":1}}"),
               "nodes[0].instances[0].speculative.acceptance: unknown key 'sd'");
    expect_bad(NULL,
               CLUSTER("{\"method\":\"eagle\",\"num_speculative_tokens\":0,"
                       "\"acceptance_rate\":0.5}"),
               "nodes[0].instances[0].speculative.num_speculative_tokens: 0 is out of range");
}

/* A config's Beta acceptance runs (the per-request rates are drawn, every token is emitted). */
static void test_config_beta(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *out = g_build_filename(tmp, "out", NULL);
    g_autofree char *cl = g_build_filename(tmp, "cluster.json", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(
        cl,
        CLUSTER("{\"method\":\"eagle\",\"num_speculative_tokens\":3,\"acceptance\":{"
                "\"distribution\":\"beta\",\"mean\":0.7,\"concentration\":10}}"),
        -1, NULL));
    const char *args[] = {"--cluster", cl, NULL};
    g_autofree char *err = NULL;
    SV_ASSERT_EQ_I64(run(out, args, &err), 0);
    g_autoptr(JsonParser) p = json_parser_new();
    JsonObject *o = load(p, out, "summary.json");
    JsonObject *sd = json_object_get_object_member(o, "speculative_decoding");
    CU_ASSERT_PTR_NOT_NULL_FATAL(sd);
    int64_t drafts = json_object_get_int_member(sd, "num_drafts");
    SV_ASSERT_EQ_I64(json_object_get_int_member(sd, "num_draft_tokens"), 3 * drafts);
    /* 4 x 8 tokens after the first, each draft yielding 1 + accepted (capped at the output) */
    CU_ASSERT(drafts >= 8 && drafts <= 32);
    sv_test_rmtree(tmp);
}

/* A draft model from --model-dir: Llama-3.2-1B's config.json (16 layers, hidden 2048, 8 KV heads
 * of 64, tied embeddings). Its weights: embedding 128,256 x 2,048 = 262,668,288; a layer q 2,048
 * x 2,048 + k and v 2 x 2,048 x 512 + o 2,048 x 2,048 + MLP 3 x 2,048 x 8,192 + 2 norms x 2,048 =
 * 60,821,504, x 16 = 973,144,064; final norm 2,048: 1,235,814,400 parameters, 2,471,628,800
 * bytes. The pool: 61,248,888,832 - 2,471,628,800 = 58,777,260,032 bytes over blocks of 16 x
 * (131,072 + 16 layers x 2 x 8 x 64 x 2 = 32,768) = 2,621,440 bytes: 22,421 blocks (22,421.7). */
static void test_draft_model(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *mdir = g_build_filename(tmp, "models", "meta-llama", NULL);
    CU_ASSERT_FATAL(g_mkdir_with_parents(mdir, 0755) == 0);
    g_autofree char *mfile = g_build_filename(mdir, "Llama-3.2-1B.json", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(
        mfile,
        "{\"model_type\": \"llama\", \"hidden_size\": 2048, \"num_attention_heads\": 32, "
        "\"num_key_value_heads\": 8, \"head_dim\": 64, \"num_hidden_layers\": 16, "
        "\"intermediate_size\": 8192, \"vocab_size\": 128256, \"tie_word_embeddings\": true, "
        "\"max_position_embeddings\": 131072}",
        -1, NULL));
    g_autofree char *models = g_build_filename(tmp, "models", NULL);
    g_autofree char *out = g_build_filename(tmp, "out", NULL);
    const char *flag[] = {"--model-dir", models, "--speculative",
                          "draft:meta-llama/Llama-3.2-1B:4:1", NULL};
    g_autofree char *err = NULL;
    SV_ASSERT_EQ_I64(run(out, flag, &err), 0);
    SV_ASSERT_EQ_I64(kv_blocks(out), 22421);
    /* acceptance 1, k = 4: 8 tokens after the first in 2 steps (5, then 3 of 5) per request */
    g_autoptr(JsonParser) p = json_parser_new();
    JsonObject *sd =
        json_object_get_object_member(load(p, out, "summary.json"), "speculative_decoding");
    CU_ASSERT_PTR_NOT_NULL_FATAL(sd);
    SV_ASSERT_EQ_I64(json_object_get_int_member(sd, "num_drafts"), 8);
    SV_ASSERT_EQ_I64(json_object_get_int_member(sd, "num_accepted_tokens"), 32);
    sv_test_rmtree(tmp);
}

/* Tensor parallelism (TP 2 over the node's links): the same tokens per step as TP 1. */
static void test_tp(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *out = g_build_filename(tmp, "out", NULL);
    const char *flag[] = {"--tp", "2", "--speculative", "eagle:3:1", NULL};
    g_autofree char *err = NULL;
    SV_ASSERT_EQ_I64(run(out, flag, &err), 0);
    g_autoptr(JsonParser) p = json_parser_new();
    JsonObject *sd =
        json_object_get_object_member(load(p, out, "summary.json"), "speculative_decoding");
    CU_ASSERT_PTR_NOT_NULL_FATAL(sd);
    SV_ASSERT_EQ_I64(json_object_get_int_member(sd, "num_drafts"), 8);
    SV_ASSERT_EQ_I64(json_object_get_int_member(sd, "num_accepted_tokens"), 24);
    sv_test_rmtree(tmp);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"KV pool with the head's KV; counters at acceptance 1", test_capacity_and_counters},
        {"same seed, same bytes", test_deterministic},
        {"bad input: one error naming the flag or config path", test_bad_input},
        {"a per-request Beta acceptance from the config", test_config_beta},
        {"a draft model from --model-dir: its weights and KV in the pool", test_draft_model},
        {"tensor parallelism", test_tp},
        {NULL, NULL},
    };
    sv_test_add_suite("spec_cli", cases);
    return sv_test_run();
}
