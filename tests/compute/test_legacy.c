/* compute: the legacy perf_models backend (compute/profile.c, LLMServingSim ISPASS'26 layout:
 * tp<N>/layers.csv keyed by input tokens and tp<N>/predictions/attn_{prefill,decode}_
 * predictions.csv). A tiny bundle written here, every expected latency computed by hand from its
 * rows: canonical ops sum the legacy parts (qkv = q + k + v, gate_up = gate + up), layernorm is
 * the mean of input_ and post_layernorm, values between points are linear, above the last point
 * extrapolated from the last two, then truncated to whole ns. */
#include "compute/compute.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

static void put_file(const char *dir, const char *name, const char *text)
{
    g_autofree char *p = g_build_filename(dir, name, NULL);
    g_autofree char *d = g_path_get_dirname(p);
    g_mkdir_with_parents(d, 0755);
    CU_ASSERT_FATAL(g_file_set_contents(p, text, -1, NULL));
}

/* Each part at 1 and 5 input tokens (ns). */
static const struct {
    const char *name;
    int at1, at5;
} parts[] = {
    {"embedding", 100, 300},
    {"input_layernorm", 40, 80},
    {"post_layernorm", 60, 120},
    {"q_proj", 10, 50},
    {"k_proj", 20, 20},
    {"v_proj", 30, 70},
    {"rope", 7, 7},
    {"attn", 5, 5}, /* not used: attention comes from predictions */
    {"o_proj", 1000, 3000},
    {"gate_proj", 200, 400},
    {"up_proj", 300, 500},
    {"act_fn", 11, 15},
    {"down_proj", 400, 800},
    {"final_layernorm", 9, 13},
    {"lm_head", 1000, 2000},
};

static char *legacy_bundle(void)
{
    char *dir = sv_test_tmpdir();
    GString *l = g_string_new("layer_name,input,kv_cache,tp_size,latency(ns)\n");
    /* the 5-token rows first: the loader must sort by input */
    for (size_t i = 0; i < G_N_ELEMENTS(parts); i++)
        g_string_append_printf(l, "%s,5,0,1,%d\n", parts[i].name, parts[i].at5);
    for (size_t i = 0; i < G_N_ELEMENTS(parts); i++)
        g_string_append_printf(l, "%s,1,0,1,%d\n", parts[i].name, parts[i].at1);
    put_file(dir, "tp1/layers.csv", l->str);
    g_string_free(l, TRUE);
    put_file(dir, "tp1/predictions/attn_prefill_predictions.csv",
             "kv_cache_size,prefill_chunk_size,prediction\n"
             "0,1,1000\n0,5,2000\n8,1,3000\n8,5,5000\n");
    put_file(dir, "tp1/predictions/attn_decode_predictions.csv",
             "batch_size,kv_cache_size,prediction\n"
             "1,0,100\n1,100,300\n3,0,500\n3,100,900\n");
    return dir;
}

static sv_compute_latency *load(const char *dir, const char *model, GError **err)
{
    struct sv_compute_model_cfg m;
    CU_ASSERT_FATAL(sv_compute_model_lookup(model, NULL, &m, err));
    g_autofree char *tp = g_build_filename(dir, "tp1", NULL);
    return sv_compute_latency_new_legacy(tp, &m, 1, err);
}

static struct sv_compute_batch_shape tokens_shape(int64_t tokens, int64_t seqs)
{
    struct sv_compute_batch_shape s = {0};
    s.tokens = tokens;
    s.n_seqs = seqs;
    return s;
}

static sv_time op_at(sv_compute_latency *lat, sv_compute_op_kind op, int64_t tokens, int64_t seqs)
{
    struct sv_compute_batch_shape s = tokens_shape(tokens, seqs);
    return sv_compute_op_time(lat, op, &s);
}

static void test_legacy_ops(void)
{
    g_autofree char *dir = legacy_bundle();
    GError *err = NULL;
    g_autoptr(sv_compute_latency) lat = load(dir, "meta-llama/Llama-3.1-8B", &err);
    if (err)
        fprintf(stderr, "%s\n", err->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lat);
    /* at the points */
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_EMBEDDING, 1, 1), 100);
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_QKV_PROJ, 1, 1), 10 + 20 + 30);
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_QKV_PROJ, 5, 1), 50 + 20 + 70);
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_LAYERNORM, 1, 1), (40 + 60) / 2);
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_GATE_UP_PROJ, 5, 1), 400 + 500);
    /* between: 2 tokens is a quarter of the way; layernorm 50 + 12.5 truncates to 62 */
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_EMBEDDING, 2, 1), 150);
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_LAYERNORM, 2, 1), 62);
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_O_PROJ, 3, 1), 2000);
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_ROTARY_EMB, 3, 1), 7);
    /* above the last point: extrapolated, 300 + (7 - 5) / 4 x 200 = 400 */
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_EMBEDDING, 7, 1), 400);
    /* 0 tokens reads the 1-token row */
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_DOWN_PROJ, 0, 1), 400);
    /* lm_head is keyed by sequences, not tokens: 3 sequences = 1000 + 2/4 x 1000 */
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_LM_HEAD, 100, 3), 1500);
    /* no sampler in the legacy layout */
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_SAMPLER, 4, 3), 0);

    /* attention: prefill (kv rows, chunk columns) plus decode (batch rows, kv columns).
     * Prefill chunk 2 after 4 tokens of history: kv 0 -> 1000 + 1/4 x 1000 = 1250, kv 8 ->
     * 3000 + 1/4 x 2000 = 3500, at kv 4 -> 2375. Decode of 2 requests with KV 30 and 71, mean
     * floor(101 / 2) = 50: batch 1 -> 200, batch 3 -> 700, batch 2 -> 450. Sum 2825. */
    int64_t chunk[] = {2}, hist[] = {4}, dkv[] = {30, 71};
    struct sv_compute_batch_shape s;
    sv_compute_batch_shape_init(&s, chunk, hist, 1, dkv, 2);
    SV_ASSERT_EQ_I64(s.tokens, 4);
    SV_ASSERT_EQ_I64(s.n_seqs, 3);
    SV_ASSERT_EQ_I64(sv_compute_op_time(lat, SV_COMPUTE_OP_ATTENTION, &s), 2825);
    struct sv_compute_batch_shape p;
    sv_compute_batch_shape_init(&p, chunk, hist, 1, NULL, 0);
    SV_ASSERT_EQ_I64(sv_compute_op_time(lat, SV_COMPUTE_OP_ATTENTION, &p), 2375);

    /* The whole iteration of that batch (4 tokens: three quarters of the way from 1 to 5):
     * prologue embedding 250; a layer = layernorm 87 (87.5) + qkv 120 + rope 7 + attention 2825
     * + o_proj 2500 + layernorm 87 + gate_up 800 + act_fn 14 + down_proj 700 = 7140; head =
     * final_layernorm 12 + lm_head 1500 (3 sequences) + sampler 0. 32 layers: 250 + 32 x 7140
     * + 1512 = 230242. */
    struct sv_compute_iter_time it;
    sv_compute_iter_time(lat, &s, 0, 32, &it);
    SV_ASSERT_EQ_I64(it.prologue_ns, 250);
    SV_ASSERT_EQ_I64(it.layer_ns, 7140);
    SV_ASSERT_EQ_I64(it.head_ns, 1512);
    SV_ASSERT_EQ_I64(it.total_ns, 230242);
    sv_test_rmtree(dir);
}

static void test_legacy_errors(void)
{
    g_autofree char *dir = legacy_bundle();
    GError *err = NULL;
    /* A MoE model needs its gate and expert rows; qk_norm models have no legacy layers. */
    CU_ASSERT_PTR_NULL(load(dir, "Mixtral-8x7B", &err));
    CU_ASSERT(err && strstr(err->message, "no rows for layer_name gate"));
    g_clear_error(&err);
    CU_ASSERT_PTR_NULL(load(dir, "Qwen3-32B", &err));
    CU_ASSERT(err && strstr(err->message, "qk_norm"));
    g_clear_error(&err);
    /* a part with a different number of points than its partners */
    g_autofree char *layers = g_build_filename(dir, "tp1", "layers.csv", NULL);
    g_autofree char *text = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(layers, &text, NULL, NULL));
    g_autofree char *more = g_strconcat(text, "k_proj,9,0,1,20\n", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(layers, more, -1, NULL));
    CU_ASSERT_PTR_NULL(load(dir, "Llama-3.1-8B", &err));
    CU_ASSERT(err && strstr(err->message, "k_proj") && strstr(err->message, "q_proj"));
    g_clear_error(&err);
    CU_ASSERT_FATAL(g_file_set_contents(layers, text, -1, NULL));
    /* a missing predictions file is named */
    g_autofree char *dp =
        g_build_filename(dir, "tp1", "predictions", "attn_decode_predictions.csv", NULL);
    CU_ASSERT_FATAL(g_unlink(dp) == 0);
    CU_ASSERT_PTR_NULL(load(dir, "Llama-3.1-8B", &err));
    CU_ASSERT(err && strstr(err->message, "attn_decode_predictions.csv"));
    g_clear_error(&err);
    sv_test_rmtree(dir);
}

/* The real ISPASS'26 layout (H100 Llama-3.1-70B tp4): a row read independently from layers.csv
 * (q_proj + k_proj + v_proj at 1 input token) equals the loaded qkv_proj time. */
static void test_legacy_real(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim-ispass26/perf_models/H100",
                      "LLMServingSim ISPASS'26 perf_models");
    const char *tp4 =
        SV_SHARED "/reference/llmservingsim-ispass26/perf_models/H100/meta-llama/Llama-3.1-70B/tp4";
    g_autofree char *path = g_build_filename(tp4, "layers.csv", NULL);
    g_autofree char *text = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(path, &text, NULL, NULL));
    long sum = 0;
    const char *names[] = {"\nq_proj,1,", "\nk_proj,1,", "\nv_proj,1,"};
    for (int i = 0; i < 3; i++) {
        const char *p = strstr(text, names[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        p = strchr(p + strlen(names[i]), ','); /* kv_cache */
        p = strchr(p + 1, ',');                /* tp_size */
        sum += strtol(p + 1, NULL, 10);
    }
    struct sv_compute_model_cfg m;
    GError *err = NULL;
    CU_ASSERT_FATAL(sv_compute_model_lookup("meta-llama/Llama-3.1-70B", NULL, &m, &err));
    g_autoptr(sv_compute_latency) lat = sv_compute_latency_new_legacy(tp4, &m, 4, &err);
    if (err)
        fprintf(stderr, "%s\n", err->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lat);
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_QKV_PROJ, 1, 1), sum);
}

/* A legacy bundle at <root>/<hw>/<org>/<model>/tp<tp> with `rows` (after the header) and the toy
 * predictions. */
static char *bundle_at(const char *root, const char *hw, const char *model, int tp,
                       const char *rows)
{
    char *tp_dir = g_strdup_printf("%s/%s/%s/tp%d", root, hw, model, tp);
    g_autofree char *l = g_strconcat("layer_name,input,kv_cache,tp_size,latency(ns)\n", rows, NULL);
    put_file(tp_dir, "layers.csv", l);
    put_file(tp_dir, "predictions/attn_prefill_predictions.csv",
             "kv_cache_size,prefill_chunk_size,prediction\n0,1,1000\n0,5,2000\n");
    put_file(tp_dir, "predictions/attn_decode_predictions.csv",
             "batch_size,kv_cache_size,prediction\n1,0,100\n1,100,300\n");
    return tp_dir;
}

static GString *dense_rows(void)
{
    GString *l = g_string_new(NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(parts); i++)
        g_string_append_printf(l, "%s,1,0,1,%d\n%s,5,0,1,%d\n", parts[i].name, parts[i].at1,
                               parts[i].name, parts[i].at5);
    return l;
}

/* MoE (LLMServingSim 1.0's layout: `gate` and `expert.w1/w2/w3` rows). Mixtral: 8 experts, top 2.
 * gate 1000 / 2000 at 1 / 5 tokens; w1 + w2 + w3 = W(1) 60, W(5) 180, linear between, so
 * W(n) = 60 + 30 (n - 1). Round robin sends token t to experts t and t+1 mod 8.
 * 2 tokens, tp 1: counts 1, 2, 1, 0 x 5 -> 7 W(1) + W(2) = 510; gate(2) = 1250; 1760.
 * 2 tokens, tp 4 (experts e, e+4 on rank e): rank 1 has W(2) + W(1) = 150, the slowest; 1400.
 * 9 tokens, tp 1: one full cycle (2 each) and token 8 on experts 0, 1: 2 W(3) + 6 W(2) = 780;
 * gate(9) extrapolated = 3000; 3780. */
static void test_legacy_moe(void)
{
    g_autofree char *root = sv_test_tmpdir();
    GString *l = dense_rows();
    g_string_append(l, "gate,1,0,1,1000\ngate,5,0,1,2000\n"
                       "expert.w1,1,0,1,10\nexpert.w1,5,0,1,50\nexpert.w2,1,0,1,20\n"
                       "expert.w2,5,0,1,60\nexpert.w3,1,0,1,30\nexpert.w3,5,0,1,70\n");
    struct sv_compute_model_cfg m;
    CU_ASSERT_FATAL(sv_compute_model_lookup("Mixtral-8x7B", NULL, &m, NULL));
    GError *err = NULL;
    for (int tp = 1; tp <= 4; tp += 3) {
        g_autofree char *dir = bundle_at(root, "H100", "mistralai/Mixtral-8x7B-v0.1", tp, l->str);
        g_autoptr(sv_compute_latency) lat = sv_compute_latency_new_legacy(dir, &m, tp, &err);
        if (err)
            fprintf(stderr, "%s\n", err->message);
        CU_ASSERT_PTR_NOT_NULL_FATAL(lat);
        SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_MOE, 2, 2), tp == 1 ? 1760 : 1400);
        if (tp == 1)
            SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_MOE, 9, 9), 3780);
        SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_MOE, 0, 0), 0);
        /* The dense layers of the MoE model's sequence as before. */
        SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_QKV_PROJ, 1, 1), 10 + 20 + 30);
        struct sv_compute_iter_time it;
        struct sv_compute_batch_shape s = tokens_shape(2, 2);
        sv_compute_iter_time(lat, &s, 0, m.num_layers, &it);
        /* A layer: layernorm 62 + qkv 20 + 20 + 40 + rope 7 + attention 0 (no prefill, no decode
         * here)
         * + o_proj 1500 + layernorm 62 + moe. */
        SV_ASSERT_EQ_I64(it.layer_ns, 62 + 80 + 7 + 1500 + 62 + (tp == 1 ? 1760 : 1400));
    }
    g_string_free(l, TRUE);
    sv_test_rmtree(root);
}

/* LLMServingSim's TPU rules (hardware folder TPU*): no k_proj / v_proj rows (1 ns each), the
 * nearest profiled input of each part (the lower on a tie), no rotary_emb. q_proj 10 / 50 at
 * 1 / 5; up_proj only at 5 (500); act_fn only at 1 (11). */
static void test_legacy_tpu(void)
{
    g_autofree char *root = sv_test_tmpdir();
    GString *l = g_string_new(NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(parts); i++) {
        const char *n = parts[i].name;
        if (!strcmp(n, "k_proj") || !strcmp(n, "v_proj"))
            continue;
        if (strcmp(n, "up_proj"))
            g_string_append_printf(l, "%s,1,0,1,%d\n", n, parts[i].at1);
        if (strcmp(n, "act_fn"))
            g_string_append_printf(l, "%s,5,0,1,%d\n", n, parts[i].at5);
    }
    g_autofree char *dir = bundle_at(root, "TPU-v9-1", "meta-llama/Llama-3.1-8B", 1, l->str);
    g_string_free(l, TRUE);
    struct sv_compute_model_cfg m;
    CU_ASSERT_FATAL(sv_compute_model_lookup("Llama-3.1-8B", NULL, &m, NULL));
    GError *err = NULL;
    g_autoptr(sv_compute_latency) lat = sv_compute_latency_new_legacy(dir, &m, 1, &err);
    if (err)
        fprintf(stderr, "%s\n", err->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lat);
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_QKV_PROJ, 2, 1), 10 + 1 + 1);
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_QKV_PROJ, 3, 1), 10 + 1 + 1); /* tie: the lower */
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_QKV_PROJ, 4, 1), 50 + 1 + 1);
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_GATE_UP_PROJ, 2, 1), 200 + 500);
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_ACT_FN, 5, 1), 11);
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_ROTARY_EMB, 5, 1), 0);
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_LAYERNORM, 4, 1), (80 + 120) / 2);
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_EMBEDDING, 100, 1), 300); /* no extrapolation */
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_LM_HEAD, 100, 3), 1000);  /* 3 seqs: a tie, 1 */
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_LM_HEAD, 100, 4), 2000);
    sv_test_rmtree(root);
}

/* The real MoE and TPU perf models of the ISPASS'26 artifact load, and a point read
 * independently from each layers.csv equals the loaded time. */
static long csv_ns(const char *text, const char *layer, int input)
{
    g_autofree char *key = g_strdup_printf("\n%s,%d,", layer, input);
    const char *p = strstr(text, key);
    if (!p)
        return -1;
    p = strchr(p + strlen(key), ','); /* kv_cache */
    p = strchr(p + 1, ',');           /* tp_size */
    return strtol(p + 1, NULL, 10);
}

static void test_legacy_real_moe_tpu(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim-ispass26/perf_models",
                      "LLMServingSim ISPASS'26 perf_models");
    const char *root = SV_SHARED "/reference/llmservingsim-ispass26/perf_models";
    GError *err = NULL;
    struct sv_compute_model_cfg m;
    /* Mixtral on H100, tp 4: one token goes to experts 0 and 1, on ranks 0 and 1: each rank
     * runs two experts, one with the token and one without (one token at least). */
    CU_ASSERT_FATAL(sv_compute_model_lookup("mistralai/Mixtral-8x7B-v0.1", NULL, &m, &err));
    g_autofree char *mx = sv_compute_legacy_find(root, "H100", m.name, 4, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mx);
    g_autofree char *p1 = g_build_filename(mx, "layers.csv", NULL);
    g_autofree char *t1 = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(p1, &t1, NULL, NULL));
    long w1 = csv_ns(t1, "expert.w1", 1) + csv_ns(t1, "expert.w2", 1) + csv_ns(t1, "expert.w3", 1);
    g_autoptr(sv_compute_latency) lm = sv_compute_latency_new_legacy(mx, &m, 4, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lm);
    SV_ASSERT_EQ_I64(op_at(lm, SV_COMPUTE_OP_MOE, 1, 1), csv_ns(t1, "gate", 1) + 2 * w1);
    /* Phi-mini-MoE on A6000 loads (16 experts, top 2, tp 1). */
    CU_ASSERT_FATAL(sv_compute_model_lookup("microsoft/Phi-mini-MoE-instruct", NULL, &m, &err));
    g_autofree char *ph = sv_compute_legacy_find(root, "A6000", m.name, 1, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ph);
    g_autoptr(sv_compute_latency) lp = sv_compute_latency_new_legacy(ph, &m, 1, &err);
    if (err)
        fprintf(stderr, "%s\n", err->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lp);
    /* TPU v6e Llama-3.1-8B: qkv = q_proj + 1 + 1 (no k_proj, v_proj rows). */
    CU_ASSERT_FATAL(sv_compute_model_lookup("meta-llama/Llama-3.1-8B", NULL, &m, &err));
    g_autofree char *tpu = sv_compute_legacy_find(root, "TPU-v6e-1", m.name, 1, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(tpu);
    g_autofree char *p2 = g_build_filename(tpu, "layers.csv", NULL);
    g_autofree char *t2 = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(p2, &t2, NULL, NULL));
    CU_ASSERT(csv_ns(t2, "k_proj", 1) < 0);
    g_autoptr(sv_compute_latency) lt = sv_compute_latency_new_legacy(tpu, &m, 1, &err);
    if (err)
        fprintf(stderr, "%s\n", err->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lt);
    SV_ASSERT_EQ_I64(op_at(lt, SV_COMPUTE_OP_QKV_PROJ, 16, 1), csv_ns(t2, "q_proj", 16) + 2);
    SV_ASSERT_EQ_I64(op_at(lt, SV_COMPUTE_OP_ROTARY_EMB, 16, 1), 0);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"ops and iteration", test_legacy_ops},
        {"errors", test_legacy_errors},
        {"real layout", test_legacy_real},
        {"moe", test_legacy_moe},
        {"tpu", test_legacy_tpu},
        {"real moe and tpu", test_legacy_real_moe_tpu},
        {NULL, NULL},
    };
    sv_test_add_suite("compute_legacy", cases);
    return sv_test_run();
}
