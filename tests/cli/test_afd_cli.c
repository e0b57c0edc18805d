/* servesim afd (cli/cmd_afd.c, docs/afd.md): the worked example's transfer bytes and iteration time
 * against hand formulas, and bad input as one error naming the option's path, exit 1; servesim run
 * with an afd instance (its hand-computed times are tests/parallel/test_afd_run.c's). */
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <json-glib/json-glib.h>
#include <string.h>

static char *replace_first(const char *s, const char *old, const char *new_)
{
    const char *p = strstr(s, old);
    if (!p)
        return g_strdup(s);
    return g_strdup_printf("%.*s%s%s", (int)(p - s), s, new_, p + strlen(old));
}

static int run(const char *afd, int64_t decode, char **out, char **err)
{
    g_autofree char *d = g_strdup_printf("%" G_GINT64_FORMAT, decode);
    const char *argv[] = {SV_SERVESIM_BIN,
                          "afd",
                          "--model",
                          "meta-llama/Llama-3.1-8B",
                          "--hardware",
                          "H100",
                          "--afd",
                          afd,
                          "--decode",
                          d,
                          "--kv-len",
                          "1024",
                          "--net-gbps",
                          "50",
                          "--net-latency-ns",
                          "2000",
                          NULL};
    int status = -1;
    CU_ASSERT_FATAL(sv_test_spawn(argv, out, err, &status));
    return status; /* the exit status (sv_test_spawn) */
}

/* Llama-3.1-8B: 32 layers, hidden 4096. 64 decode requests over m = 2: 32 tokens each; one
 * transfer is 32 x 4096 x 2 = 262,144 bytes, per direction 32 layers x 2 x 262,144 = 16,777,216;
 * at 50 GB/s: 5,242.88 -> 5,243 ns + 2,000 ns latency: x = 7,243 ns. With A100 FFN devices the
 * FFN side is the longer (f > a + 2x), so the FFN group runs back to back after the first dispatch:
 * iteration = a + x + 32 x 2 x f + x; serial = 64 x (a + f + 2x). */
static void test_worked_example(void)
{
    g_autofree char *out = NULL, *err = NULL;
    int rc = run("{\"ffn_hardware\": \"A100\", \"micro_batches\": 2}", 64, &out, &err);
    SV_ASSERT_EQ_I64(rc, 0);
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, out, -1, NULL));
    JsonObject *o = json_node_get_object(json_parser_get_root(p));
    SV_ASSERT_EQ_I64(json_object_get_int_member(o, "a2f_bytes"), 16777216);
    SV_ASSERT_EQ_I64(json_object_get_int_member(o, "f2a_bytes"), 16777216);
    JsonArray *mb = json_object_get_array_member(o, "micro_batches");
    CU_ASSERT_FATAL(json_array_get_length(mb) == 2);
    JsonObject *m0 = json_array_get_object_element(mb, 0);
    SV_ASSERT_EQ_I64(json_object_get_int_member(m0, "tokens"), 32);
    SV_ASSERT_EQ_I64(json_object_get_int_member(m0, "transfer_bytes_per_layer"), 262144);
    int64_t a = json_object_get_int_member(m0, "attn_ns_per_layer");
    int64_t f = json_object_get_int_member(m0, "ffn_ns_per_layer");
    int64_t x = 7243;
    CU_ASSERT_FATAL(a > 0 && f > a + 2 * x);
    SV_ASSERT_EQ_I64(json_object_get_int_member(o, "iteration_ns"), a + x + 64 * f + x);
    SV_ASSERT_EQ_I64(json_object_get_int_member(o, "serial_ns"), 64 * (a + f + 2 * x));
}

static void test_bad_input(void)
{
    static const struct {
        const char *afd;
        const char *msg;
    } bad[] = {
        {"{\"ffn_hardware\": \"A100\", \"micro_batches\": 0}",
         "--afd.micro_batches: 0 out of range"},
        {"{\"ffn_hardware\": \"B999\"}", "--afd.ffn_hardware: unknown hardware \"B999\""},
        {"[1]", "--afd: must be a JSON object"},
        {"{\"ffn_hardware\": \"A100\", \"ffn_ep\": true}",
         "--afd.ffn_ep: expert parallelism in the FFN group is modelled by servesim run only"},
        {"{\"ffn_hardware\": \"A100\", \"ffn_ep\": \"yes\"}",
         "--afd.ffn_ep: must be true or false"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *out = NULL, *err = NULL;
        SV_ASSERT_EQ_I64(run(bad[i].afd, 64, &out, &err), 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i].msg));
        CU_ASSERT_STRING_EQUAL(out, "");
    }
}

/* The test cluster (one H100 instance) with `insert` in place of its num_npus and tp_size. */
static char *afd_cluster(const char *dir, const char *insert)
{
    g_autofree char *cl = sv_test_write_cluster(dir, "meta-llama/Llama-3.1-8B", "H100", 80);
    g_autofree char *text = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(cl, &text, NULL, NULL));
    g_autofree char *with = replace_first(text, "\"num_npus\": 1, \"tp_size\": 1,", insert);
    CU_ASSERT_FATAL(g_file_set_contents(cl, with, -1, NULL));
    return g_steal_pointer(&cl);
}

static int run_cli(const char *cl, const char *out_dir, char **err)
{
    const char *argv[] = {SV_SERVESIM_BIN,
                          "run",
                          "--cluster",
                          cl,
                          "--latency",
                          "roofline",
                          "--requests",
                          "6",
                          "--input-len",
                          "64",
                          "--output-len",
                          "8",
                          "--qps",
                          "50",
                          "--seed",
                          "3",
                          "--output-dir",
                          out_dir,
                          NULL};
    g_autofree char *out = NULL;
    int status = -1;
    CU_ASSERT_FATAL(sv_test_spawn(argv, &out, err, &status));
    return status;
}

/* servesim run serves an instance with "afd" (docs/afd.md "In servesim run"): run.json shows both
 * groups, summary.json's instance its FFN group, and the same seed gives byte-identical outputs. */
static void test_run_afd(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cl = afd_cluster(dir, "\"num_npus\": 1, \"tp_size\": 1, \"afd\": "
                                           "{\"ffn_hardware\": \"A100\", \"micro_batches\": 2},");
    g_autofree char *o1 = g_build_filename(dir, "o1", NULL);
    g_autofree char *o2 = g_build_filename(dir, "o2", NULL);
    g_autofree char *e1 = NULL, *e2 = NULL;
    SV_ASSERT_EQ_I64(run_cli(cl, o1, &e1), 0);
    SV_ASSERT_EQ_I64(run_cli(cl, o2, &e2), 0);
    static const char *const files[] = {"requests.csv", "timeseries.csv", "summary.json"};
    for (size_t k = 0; k < G_N_ELEMENTS(files); k++) {
        g_autofree char *a = sv_test_slurp(o1, files[k]), *b = sv_test_slurp(o2, files[k]);
        CU_ASSERT(strlen(a) > 0);
        CU_ASSERT_STRING_EQUAL(a, b);
    }
    g_autofree char *ri = sv_test_slurp(o1, "run.json");
    CU_ASSERT_PTR_NOT_NULL(strstr(ri, "\"afd\" : {"));
    CU_ASSERT_PTR_NOT_NULL(strstr(ri, "\"ffn_hardware\" : \"A100-80GB\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(ri, "\"attention_hardware\" : \"H100\""));
    g_autofree char *sm = sv_test_slurp(o1, "summary.json");
    CU_ASSERT_PTR_NOT_NULL(strstr(sm, "\"afd\" : {"));
    CU_ASSERT_PTR_NOT_NULL(strstr(sm, "\"ffn_hardware\" : \"A100-80GB\""));
    /* a dense model's FFN group is one TP group (docs/afd.md "ffn_ep") */
    CU_ASSERT_PTR_NOT_NULL(strstr(ri, "\"ffn_parallel\" : \"tp\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(sm, "\"ffn_parallel\" : \"tp\""));
    sv_test_rmtree(dir);
}

/* afd with pipeline stages: one error naming the config path, exit 1, no outputs. */
static void test_run_afd_pp(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cl = afd_cluster(
        dir,
        "\"num_npus\": 2, \"tp_size\": 1, \"pp_size\": 2, \"afd\": {\"ffn_hardware\": \"A100\"},");
    g_autofree char *out_dir = g_build_filename(dir, "out", NULL);
    g_autofree char *err = NULL;
    SV_ASSERT_EQ_I64(run_cli(cl, out_dir, &err), 1);
    CU_ASSERT_FALSE(g_file_test(out_dir, G_FILE_TEST_EXISTS));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(err, "nodes[0].instances[0].afd: attention/FFN disaggregation with pp_size 2"));
    sv_test_rmtree(dir);
}

/* servesim run with a MoE model (docs/afd.md "MoE: expert parallelism"): Mixtral-8x7B (8
 * experts, top-2, hidden 4,096, 32 layers) with its experts on four A100s (2 each: rank of expert
 * e = e / 2, NPUs 1-4 after the H100's NPU 0), two requests of 16 + 2 tokens, one per
 * micro-batch, balanced routing. The timeline's link messages (docs/trace.md: src_npu, dst_npu,
 * bytes per message) show the dispatch per destination as the routing says: a prefill
 * micro-batch (16 tokens x 2 = 32 pairs, 4 per expert) sends every FFN NPU 8 rows of 8,192 bytes
 * = 65,536 bytes; a decode micro-batch (1 token, 2 pairs on experts floor((2i + 1) x 8 / 4) = 2
 * and 6) sends one row of 8,192 bytes to NPUs 2 and 4 only; 32 layers x 2 micro-batches = 64 of
 * each, and as many back. Same seed: same bytes; a bad split is one error, no output. */
static int run_moe(const char *dir, const char *afd, const char *out_dir, const char *trace,
                   char **err)
{
    g_autofree char *cl = g_build_filename(dir, "moe.json", NULL);
    g_autofree char *wl = g_build_filename(dir, "moe.jsonl", NULL);
    g_autofree char *json = g_strdup_printf(
        "{\"link_bw\": 7.450580596923828, \"link_latency\": 1000, \"engine\": \"vllm-0.10\", "
        "\"nodes\": [{\"instances\": [{\"model_name\": \"mistralai/Mixtral-8x7B-v0.1\", "
        "\"hardware\": \"H100\", \"npu_mem\": {\"mem_size\": 80}, \"afd\": %s}]}]}",
        afd);
    CU_ASSERT_FATAL(g_file_set_contents(cl, json, -1, NULL));
    CU_ASSERT_FATAL(
        g_file_set_contents(wl,
                            "{\"input_toks\": 16, \"output_toks\": 2, \"arrival_time_ns\": 0}\n"
                            "{\"input_toks\": 16, \"output_toks\": 2, \"arrival_time_ns\": 0}\n",
                            -1, NULL));
    const char *argv[] = {SV_SERVESIM_BIN,
                          "run",
                          "--cluster",
                          cl,
                          "--workload",
                          wl,
                          "--latency",
                          "roofline",
                          "--host-overhead",
                          "none",
                          "--output-dir",
                          out_dir,
                          "--trace",
                          trace,
                          NULL};
    g_autofree char *out = NULL;
    int status = -1;
    CU_ASSERT_FATAL(sv_test_spawn(argv, &out, err, &status));
    return status;
}

/* Messages on the network links from src to dst of `bytes` each (one event per link of the
 * route: one link inside a FullyConnected node). */
static int count_msgs(JsonArray *ev, int64_t src, int64_t dst, int64_t bytes)
{
    int n = 0;
    for (guint k = 0; k < json_array_get_length(ev); k++) {
        JsonObject *e = json_array_get_object_element(ev, k);
        if (!json_object_has_member(e, "cat") ||
            g_strcmp0(json_object_get_string_member(e, "cat"), "link") != 0)
            continue;
        JsonObject *a = json_object_get_object_member(e, "args");
        if (json_object_get_int_member(a, "src_npu") == src &&
            json_object_get_int_member(a, "dst_npu") == dst &&
            json_object_get_int_member(a, "bytes") == bytes)
            n++;
    }
    return n;
}

static void test_run_afd_moe(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    const char *afd = "{\"ffn_hardware\": \"A100\", \"ffn_npus\": 4}";
    g_autofree char *o1 = g_build_filename(dir, "o1", NULL);
    g_autofree char *o2 = g_build_filename(dir, "o2", NULL);
    g_autofree char *t1 = g_build_filename(dir, "t1.json", NULL);
    g_autofree char *t2 = g_build_filename(dir, "t2.json", NULL);
    g_autofree char *e1 = NULL, *e2 = NULL, *e3 = NULL;
    SV_ASSERT_EQ_I64(run_moe(dir, afd, o1, t1, &e1), 0);
    SV_ASSERT_EQ_I64(run_moe(dir, afd, o2, t2, &e2), 0);
    static const char *const files[] = {"requests.csv", "timeseries.csv", "summary.json"};
    for (size_t k = 0; k < G_N_ELEMENTS(files); k++) {
        g_autofree char *a = sv_test_slurp(o1, files[k]), *b = sv_test_slurp(o2, files[k]);
        CU_ASSERT(strlen(a) > 0);
        CU_ASSERT_STRING_EQUAL(a, b);
    }
    /* a MoE model without "ffn_ep" shards its experts (EP), as both outputs record */
    g_autofree char *ri = sv_test_slurp(o1, "run.json"), *sm = sv_test_slurp(o1, "summary.json");
    CU_ASSERT_PTR_NOT_NULL(strstr(ri, "\"ffn_parallel\" : \"ep\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(sm, "\"ffn_parallel\" : \"ep\""));
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_file(p, t1, NULL));
    JsonArray *ev =
        json_object_get_array_member(json_node_get_object(json_parser_get_root(p)), "traceEvents");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
    for (int64_t npu = 1; npu <= 4; npu++) {
        SV_ASSERT_EQ_I64(count_msgs(ev, 0, npu, 65536), 64); /* prefill dispatch */
        SV_ASSERT_EQ_I64(count_msgs(ev, npu, 0, 65536), 64); /* prefill combine */
        int64_t dec = npu == 2 || npu == 4 ? 64 : 0;         /* experts 2 and 6 */
        SV_ASSERT_EQ_I64(count_msgs(ev, 0, npu, 8192), dec);
        SV_ASSERT_EQ_I64(count_msgs(ev, npu, 0, 8192), dec);
    }
    /* 8 experts over 16 FFN devices: one error naming the path, exit 1, no outputs. */
    g_autofree char *o3 = g_build_filename(dir, "o3", NULL);
    g_autofree char *t3 = g_build_filename(dir, "t3.json", NULL);
    SV_ASSERT_EQ_I64(run_moe(dir, "{\"ffn_hardware\": \"A100\", \"ffn_npus\": 16}", o3, t3, &e3),
                     1);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(e3, "nodes[0].instances[0].afd.ffn_npus: 16 does not divide the 8 experts"));
    CU_ASSERT_FALSE(g_file_test(o3, G_FILE_TEST_EXISTS));
    CU_ASSERT_FALSE(g_file_test(t3, G_FILE_TEST_EXISTS));
    sv_test_rmtree(dir);
}

/* Two attention instances sharing one FFN group (docs/afd.md "Several attention instances sharing
 * an FFN group"): run.json names the group and the instance whose entry places its devices, the
 * same seed gives byte-identical outputs, and a group of one exits 1 before any output. */
static void test_run_afd_group(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    const char *inst = "{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100\", "
                       "\"npu_mem\": {\"mem_size\": 80}, \"afd\": {\"ffn_hardware\": \"A100\", "
                       "\"ffn_group\": \"%s\"}}";
    g_autofree char *i0 = g_strdup_printf(inst, "g"), *i1 = g_strdup_printf(inst, "g");
    g_autofree char *i2 = g_strdup_printf(inst, "h");
    g_autofree char *text = g_strdup_printf(
        "{\"link_bw\": 50, \"link_latency\": 1000, \"nodes\": [{\"instances\": [%s, %s]}]}", i0,
        i1);
    g_autofree char *bad = g_strdup_printf(
        "{\"link_bw\": 50, \"link_latency\": 1000, \"nodes\": [{\"instances\": [%s, %s]}]}", i0,
        i2);
    g_autofree char *cl = g_build_filename(dir, "c.json", NULL);
    g_autofree char *cb = g_build_filename(dir, "bad.json", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(cl, text, -1, NULL));
    CU_ASSERT_FATAL(g_file_set_contents(cb, bad, -1, NULL));
    g_autofree char *o1 = g_build_filename(dir, "o1", NULL);
    g_autofree char *o2 = g_build_filename(dir, "o2", NULL);
    g_autofree char *o3 = g_build_filename(dir, "o3", NULL);
    g_autofree char *e1 = NULL, *e2 = NULL, *e3 = NULL;
    SV_ASSERT_EQ_I64(run_cli(cl, o1, &e1), 0);
    SV_ASSERT_EQ_I64(run_cli(cl, o2, &e2), 0);
    static const char *const files[] = {"requests.csv", "timeseries.csv", "summary.json"};
    for (size_t k = 0; k < G_N_ELEMENTS(files); k++) {
        g_autofree char *a = sv_test_slurp(o1, files[k]), *b = sv_test_slurp(o2, files[k]);
        CU_ASSERT(strlen(a) > 0);
        CU_ASSERT_STRING_EQUAL(a, b);
    }
    g_autofree char *ri = sv_test_slurp(o1, "run.json");
    CU_ASSERT_PTR_NOT_NULL(strstr(ri, "\"ffn_group\" : \"g\",\n        \"ffn_owner\" : 0"));
    /* both instances served requests: the router spreads them, the wave runs both */
    g_autofree char *rq = sv_test_slurp(o1, "requests.csv");
    CU_ASSERT_PTR_NOT_NULL(strstr(rq, "\n0,0,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(rq, "\n1,1,"));
    SV_ASSERT_EQ_I64(run_cli(cb, o3, &e3), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(e3, "bad.json: nodes[0].instances[0].afd.ffn_group: \"g\" names "
                                      "no other instance"));
    CU_ASSERT_FALSE(g_file_test(o3, G_FILE_TEST_EXISTS));
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"worked example: bytes and ping-pong makespan", test_worked_example},
        {"bad afd object", test_bad_input},
        {"servesim run with afd: run.json, same seed same bytes", test_run_afd},
        {"servesim run: afd with pp_size 2", test_run_afd_pp},
        {"servesim run: afd MoE dispatch per destination, same seed, bad split", test_run_afd_moe},
        {"servesim run: a shared FFN group, same seed, a group of one", test_run_afd_group},
        {NULL, NULL},
    };
    sv_test_add_suite("afd cli", cases);
    return sv_test_run();
}
