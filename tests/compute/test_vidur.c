/* compute: Vidur's profiling layout (compute/vidur.c). A toy tree written here with every expected
 * time computed by hand from its rows (Vidur's keys: tokens rounded up to 8, decode KV rounded up
 * to 64, x 1.1 for batched attention, prefill linear in the chunk squared), the error paths, and
 * points of the real A100 profiles in ../shared read independently from their CSV files. */
#include "compute/compute.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void put_file(const char *dir, const char *name, const char *text)
{
    g_autofree char *p = g_build_filename(dir, name, NULL);
    g_autofree char *d = g_path_get_dirname(p);
    g_mkdir_with_parents(d, 0755);
    CU_ASSERT_FATAL(g_file_set_contents(p, text, -1, NULL));
}

static const char *const ops[] = {"emb",         "input_layernorm", "attn_pre_proj",
                                  "attn_rope",   "attn_post_proj",  "post_attention_layernorm",
                                  "mlp_up_proj", "mlp_act",         "mlp_down_proj",
                                  "add"};

/* mlp.csv rows: Llama-2-7B's shape at TP 1, tokens 8 and 24; operator i takes (i + 1) x 0.01 ms
 * at 8 tokens and three times that at 24. A row of another shape (n_embd 5120) and one of TP 2
 * must be ignored. */
static char *toy_tree(gboolean with_attention)
{
    char *root = sv_test_tmpdir();
    GString *m = g_string_new(NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(ops); i++)
        g_string_append_printf(m, "time_stats.%s.median,", ops[i]);
    g_string_append(m, "n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,"
                       "num_tokens,num_tensor_parallel_workers\n");
    const struct {
        int tokens, tp, embd;
        double scale;
    } rows[] = {{8, 1, 4096, 1}, {24, 1, 4096, 3}, {8, 2, 4096, 100}, {8, 1, 5120, 100}};
    for (size_t r = 0; r < G_N_ELEMENTS(rows); r++) {
        for (size_t i = 0; i < G_N_ELEMENTS(ops); i++)
            g_string_append_printf(m, "%g,", (double)(i + 1) * 0.01 * rows[r].scale);
        g_string_append_printf(m, "32,32,%d,11008,32768,True,%d,%d\n", rows[r].embd, rows[r].tokens,
                               rows[r].tp);
    }
    put_file(root, "compute/a100/meta-llama/Llama-2-7b-hf/mlp.csv", m->str);
    g_string_free(m, TRUE);
    if (with_attention)
        put_file(root, "compute/a100/meta-llama/Llama-2-7b-hf/attention.csv",
                 "time_stats.attn_prefill.median,time_stats.attn_decode.median,n_embd,n_q_head,"
                 "n_kv_head,block_size,num_tensor_parallel_workers,batch_size,"
                 "prefill_chunk_size,kv_cache_size,is_prefill\n"
                 ",0.01,4096,32,32,16,1,1,0,64,False\n"
                 ",0.03,4096,32,32,16,1,3,0,64,False\n"
                 ",0.03,4096,32,32,16,1,1,0,192,False\n"
                 ",0.09,4096,32,32,16,1,3,0,192,False\n"
                 ",0.50,4096,32,32,16,1,5,0,320,False\n"
                 ",0.70,4096,32,32,16,1,7,0,320,False\n"
                 "0.1,,4096,32,32,16,1,1,10,0,True\n"
                 "0.2,,4096,32,32,16,1,1,10,100,True\n"
                 "0.4,,4096,32,32,16,1,1,20,0,True\n"
                 "0.5,,4096,32,32,16,1,1,20,100,True\n"
                 "9.9,,4096,32,32,32,1,1,20,100,True\n");
    return root;
}

static sv_compute_latency *open_toy(const char *root, int tp, GError **err)
{
    struct sv_compute_model_cfg m;
    struct sv_compute_hw_cfg hw;
    CU_ASSERT_FATAL(sv_compute_model_lookup("Llama-2-7B", NULL, &m, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("A100", &hw, NULL));
    g_autofree char *dir = sv_compute_vidur_find(root, "A100", hw.name, m.name, err);
    if (!dir)
        return NULL;
    return sv_compute_latency_new_vidur(dir, &m, tp, &hw, err);
}

static sv_time op_at(sv_compute_latency *lat, sv_compute_op_kind op, int64_t tokens)
{
    struct sv_compute_batch_shape s = {0};
    s.tokens = tokens;
    s.n_seqs = 1;
    return sv_compute_op_time(lat, op, &s);
}

static void test_vidur_mlp(void)
{
    g_autofree char *root = toy_tree(FALSE);
    GError *err = NULL;
    g_autoptr(sv_compute_latency) lat = open_toy(root, 1, &err);
    if (err)
        fprintf(stderr, "%s\n", err->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lat);
    /* 5 tokens round up to 8: the 8-token row. attn_pre_proj is operator 3: 0.03 ms. */
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_QKV_PROJ, 5), 30000);
    /* 12 tokens round up to 16: halfway from 8 to 24, 0.03 -> 0.09: 0.06 ms. */
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_QKV_PROJ, 12), 60000);
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_EMBEDDING, 8), 10000);
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_ROTARY_EMB, 8), 40000);
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_O_PROJ, 8), 50000);
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_GATE_UP_PROJ, 8), 70000);
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_ACT_FN, 8), 80000);
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_DOWN_PROJ, 8), 90000);
    /* Each layernorm slot: half of input_layernorm 0.02 + post 0.06 + add 0.10 = 0.09 ms. */
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_LAYERNORM, 8), 90000);
    /* final_layernorm: input_layernorm's time. */
    SV_ASSERT_EQ_I64(op_at(lat, SV_COMPUTE_OP_FINAL_LAYERNORM, 8), 20000);
    /* Not profiled by Vidur: the device's roofline, as a roofline latency gives it. */
    struct sv_compute_model_cfg m;
    struct sv_compute_hw_cfg hw;
    CU_ASSERT_FATAL(sv_compute_model_lookup("Llama-2-7B", NULL, &m, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("A100", &hw, NULL));
    g_autoptr(sv_compute_latency) roof = sv_compute_latency_new_roofline(&m, &hw, 1, NULL, NULL);
    struct sv_compute_batch_shape s = {0};
    int64_t kv[] = {100};
    sv_compute_batch_shape_init(&s, NULL, NULL, 0, kv, 1);
    SV_ASSERT_EQ_I64(sv_compute_op_time(lat, SV_COMPUTE_OP_LM_HEAD, &s),
                     sv_compute_op_time(roof, SV_COMPUTE_OP_LM_HEAD, &s));
    SV_ASSERT_EQ_I64(sv_compute_op_time(lat, SV_COMPUTE_OP_ATTENTION, &s),
                     sv_compute_op_time(roof, SV_COMPUTE_OP_ATTENTION, &s));
    CU_ASSERT_STRING_EQUAL(sv_compute_latency_fallback_ops(lat), "attention, lm_head, sampler");
    CU_ASSERT_PTR_NULL(sv_compute_latency_fallback_ops(roof));
    /* TP 2 reads its own rows (x 100). */
    g_autoptr(sv_compute_latency) tp2 = open_toy(root, 2, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(tp2);
    SV_ASSERT_EQ_I64(op_at(tp2, SV_COMPUTE_OP_QKV_PROJ, 8), 3000000);
    sv_test_rmtree(root);
}

static sv_time attn(sv_compute_latency *lat, const int64_t *chunk, const int64_t *hist, int64_t np,
                    const int64_t *dkv, int64_t nd)
{
    struct sv_compute_batch_shape s;
    sv_compute_batch_shape_init(&s, chunk, hist, np, dkv, nd);
    return sv_compute_op_time(lat, SV_COMPUTE_OP_ATTENTION, &s);
}

static void test_vidur_attention(void)
{
    g_autofree char *root = toy_tree(TRUE);
    GError *err = NULL;
    g_autoptr(sv_compute_latency) lat = open_toy(root, 1, &err);
    if (err)
        fprintf(stderr, "%s\n", err->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lat);
    CU_ASSERT_STRING_EQUAL(sv_compute_latency_fallback_ops(lat), "lm_head, sampler");
    /* One decode at KV 10: rounds up to 64, batch 1: 0.01 ms, no batching overhead. */
    int64_t d1[] = {10};
    SV_ASSERT_EQ_I64(attn(lat, NULL, NULL, 0, d1, 1), 10000);
    /* Two decodes, KV 90 and 110: mean 100 rounds up to 128, halfway between the KV 64 row
     * (batch 2: 0.02) and the KV 192 row (batch 2: 0.06): 0.04 ms x 1.1. */
    int64_t d2[] = {90, 110};
    SV_ASSERT_EQ_I64(attn(lat, NULL, NULL, 0, d2, 2), 44000);
    /* KV 320 at batch 2: the KV 320 row covers batches 5-7 only, so the rows that cover batch 2
     * (64, 192) extrapolate: 0.06 + (0.06 - 0.02) = 0.10 ms x 1.1. */
    int64_t d3[] = {300, 340};
    SV_ASSERT_EQ_I64(attn(lat, NULL, NULL, 0, d3, 2), 110000);
    /* One prefill, chunk 15 after 50 tokens: between chunks 10 and 20 in chunk^2,
     * (225 - 100) / 300; at KV 50: 0.15 and 0.45 -> 0.15 + 0.3 x 125 / 300 = 0.275 ms. The
     * block-size-32 row is not the model's. */
    int64_t c1[] = {15}, h1[] = {50};
    SV_ASSERT_EQ_I64(attn(lat, c1, h1, 1, NULL, 0), 275000);
    /* Two prefills of 10 from empty: sqrt(10^2 + 10^2) = 14.14 -> 14, 196: 0.1 + 0.3 x 96 / 300
     * = 0.196 ms x 1.1; plus a decode at KV 10 (0.01 ms). */
    int64_t c2[] = {10, 10}, h2[] = {0, 0};
    SV_ASSERT_EQ_I64(attn(lat, c2, h2, 2, d1, 1), 215600 + 10000);
    SV_ASSERT_EQ_I64(attn(lat, NULL, NULL, 0, NULL, 0), 0);
    sv_test_rmtree(root);
}

static void test_vidur_errors(void)
{
    g_autofree char *root = toy_tree(FALSE);
    GError *err = NULL;
    struct sv_compute_model_cfg m;
    struct sv_compute_hw_cfg hw;
    CU_ASSERT_FATAL(sv_compute_model_lookup("Llama-2-7B", NULL, &m, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("A100", &hw, NULL));
    /* TP 4 is not profiled: the file and the TP degrees it has are named. */
    CU_ASSERT_PTR_NULL(open_toy(root, 4, &err));
    CU_ASSERT(err && strstr(err->message, "num_tensor_parallel_workers=4") &&
              strstr(err->message, "mlp.csv") && strstr(err->message, "it has 1, 2"));
    g_clear_error(&err);
    /* An H100 has no folder here; a model without a folder; not the layout at all. */
    CU_ASSERT_PTR_NULL(sv_compute_vidur_find(root, "H100", "H100-SXM", m.name, &err));
    CU_ASSERT(err && strstr(err->message, "H100"));
    g_clear_error(&err);
    CU_ASSERT_PTR_NULL(
        sv_compute_vidur_find(root, "A100", hw.name, "meta-llama/Llama-3.1-8B", &err));
    CU_ASSERT(err && strstr(err->message, "Llama-3.1-8B") && strstr(err->message, "a100"));
    g_clear_error(&err);
    g_autofree char *sub = g_build_filename(root, "compute", NULL);
    CU_ASSERT_PTR_NULL(sv_compute_vidur_find(sub, "A100", hw.name, m.name, &err));
    CU_ASSERT(err && strstr(err->message, "not Vidur's profiling layout"));
    g_clear_error(&err);
    /* A model name without its org matches the folder by name. */
    g_autofree char *dir = sv_compute_vidur_find(root, "a100", NULL, "LLAMA-2-7B", &err);
    CU_ASSERT(dir && g_str_has_suffix(dir, "Llama-2-7b-hf"));
    /* MoE models: Vidur's profiles are dense. */
    struct sv_compute_model_cfg moe;
    CU_ASSERT_FATAL(sv_compute_model_lookup("Mixtral-8x7B", NULL, &moe, NULL));
    CU_ASSERT_PTR_NULL(sv_compute_latency_new_vidur(dir, &moe, 1, &hw, &err));
    CU_ASSERT(err && strstr(err->message, "MoE"));
    g_clear_error(&err);
    sv_test_rmtree(root);
}

/* A median read from a Vidur CSV by hand: the row with `key`=`val` (and TP 1), column `col`. */
static double csv_ms(const char *path, const char *col, const char *key, const char *val,
                     const char *key2, const char *val2)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return -1;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    g_auto(GStrv) head = g_strsplit(lines[0], ",", -1);
    int ci = -1, ki = -1, k2 = -1, ti = -1;
    for (int i = 0; head[i]; i++) {
        if (!strcmp(head[i], col))
            ci = i;
        if (!strcmp(head[i], key))
            ki = i;
        if (key2 && !strcmp(head[i], key2))
            k2 = i;
        if (!strcmp(head[i], "num_tensor_parallel_workers"))
            ti = i;
    }
    for (int l = 1; lines[l] && *lines[l]; l++) {
        g_auto(GStrv) f = g_strsplit(lines[l], ",", -1);
        if (!strcmp(f[ki], val) && (k2 < 0 || !strcmp(f[k2], val2)) && !strcmp(f[ti], "1"))
            return g_ascii_strtod(f[ci], NULL);
    }
    return -1;
}

static void test_vidur_real(void)
{
    SV_REQUIRE_SHARED("reference/vidur/profiling/compute/a100", "Vidur's A100 profiles");
    const char *mlp =
        SV_SHARED "/reference/vidur/profiling/compute/a100/meta-llama/Llama-2-7b-hf/mlp.csv";
    const char *sub =
        SV_SHARED "/reference/vidur/attention_subsample/a100_llama2_7b_tp1_attention_subsample.csv";
    struct sv_compute_model_cfg m;
    struct sv_compute_hw_cfg hw;
    CU_ASSERT_FATAL(sv_compute_model_lookup("Llama-2-7B", NULL, &m, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("A100-80GB", &hw, NULL));
    GError *err = NULL;
    g_autofree char *dir = sv_compute_vidur_find(SV_SHARED "/reference/vidur/profiling",
                                                 "A100-80GB", hw.name, m.name, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    g_autoptr(sv_compute_latency) lat = sv_compute_latency_new_vidur(dir, &m, 1, &hw, &err);
    if (err)
        fprintf(stderr, "%s\n", err->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lat);
    /* 512 tokens is a profiled point (a multiple of 8): the medians themselves. */
    double pre = csv_ms(mlp, "time_stats.attn_pre_proj.median", "num_tokens", "512", NULL, NULL);
    double up = csv_ms(mlp, "time_stats.mlp_up_proj.median", "num_tokens", "512", NULL, NULL);
    CU_ASSERT_FATAL(pre > 0 && up > 0);
    CU_ASSERT(llabs(op_at(lat, SV_COMPUTE_OP_QKV_PROJ, 512) - (sv_time)round(pre * 1e6)) <= 1);
    CU_ASSERT(llabs(op_at(lat, SV_COMPUTE_OP_GATE_UP_PROJ, 512) - (sv_time)round(up * 1e6)) <= 1);

    /* With the attention subsample beside it (a tree of links in a temporary folder: Vidur's
     * layout, nothing copied), points the subsample measured come back. */
    g_autofree char *root = sv_test_tmpdir();
    g_autofree char *md = g_build_filename(root, "compute/a100/meta-llama/Llama-2-7b-hf", NULL);
    g_mkdir_with_parents(md, 0755);
    g_autofree char *cwd = g_get_current_dir();
    g_autofree char *mlp_abs = g_build_filename(cwd, mlp, NULL);
    g_autofree char *sub_abs = g_build_filename(cwd, sub, NULL);
    g_autofree char *l1 = g_build_filename(md, "mlp.csv", NULL);
    g_autofree char *l2 = g_build_filename(md, "attention.csv", NULL);
    CU_ASSERT_FATAL(symlink(mlp_abs, l1) == 0 && symlink(sub_abs, l2) == 0);
    g_autoptr(sv_compute_latency) la = sv_compute_latency_new_vidur(md, &m, 1, &hw, &err);
    if (err)
        fprintf(stderr, "%s\n", err->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(la);
    double d1 =
        csv_ms(sub, "time_stats.attn_decode.median", "kv_cache_size", "2048", "batch_size", "1");
    double d64 =
        csv_ms(sub, "time_stats.attn_decode.median", "kv_cache_size", "2048", "batch_size", "64");
    double p0 = csv_ms(sub, "time_stats.attn_prefill.median", "prefill_chunk_size", "1984",
                       "kv_cache_size", "0");
    CU_ASSERT_FATAL(d1 > 0 && d64 > 0 && p0 > 0);
    int64_t kv1[] = {2048};
    CU_ASSERT(llabs(attn(la, NULL, NULL, 0, kv1, 1) - (sv_time)round(d1 * 1e6)) <= 1);
    int64_t kv64[64];
    for (int i = 0; i < 64; i++)
        kv64[i] = 2048;
    CU_ASSERT(llabs(attn(la, NULL, NULL, 0, kv64, 64) - (sv_time)round(d64 * 1.1e6)) <= 1);
    int64_t c[] = {1984}, h[] = {0};
    CU_ASSERT(llabs(attn(la, c, h, 1, NULL, 0) - (sv_time)round(p0 * 1e6)) <= 1);
    sv_test_rmtree(root);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"mlp", test_vidur_mlp},
        {"attention", test_vidur_attention},
        {"errors", test_vidur_errors},
        {"real", test_vidur_real},
        {NULL, NULL},
    };
    sv_test_add_suite("compute_vidur", cases);
    return sv_test_run();
}
