/* sharegpt_lengths: derive the `sharegpt` length distributions (workloads/generator.c) as vLLM's
 * ShareGPT sampler would draw them, from the ShareGPT requests in the reference data.
 *
 * What vLLM's benchmark samples (vllm/benchmarks/datasets ShareGPTDataset.sample, formerly
 * benchmarks/benchmark_dataset.py; SGLang's bench_serving sample_sharegpt_requests does the same):
 * of each conversation only the first two turns, prompt = the first human message, expected
 * output = the first reply, both counted with `tokenizer(text).input_ids` (special tokens on: the
 * Llama-3 tokenizer adds one <|begin_of_text|> to each), and a pair is kept when
 * is_valid_sequence(prompt_len, output_len) holds: both >= 4, prompt <= 1024, sum <= 2048.
 *
 * Source: the ShareGPT request files of LLMServingSim's ISPASS'26 artifact
 * (../shared/reference/llmservingsim-ispass26/dataset/, MIT licence; made by its
 * dataset/sharegpt_parser.py from the Hugging Face dataset shibing624/sharegpt_gpt4 with the
 * meta-llama/Llama-3.1-8B tokenizer, add_special_tokens=False). That parser draws turns of random
 * conversations, a later turn carrying the whole conversation before it as its prompt; the first
 * turns are recovered here: a row whose prompt ids start with an earlier row's prompt ids (all
 * but the last, where the tokenizer may merge across the join) and that is at least as long as
 * that row's prompt and reply together is a later turn and dropped. The two Llama files
 * (100 and 300 requests) are pooled and exact duplicates (same prompt and reply ids) kept once;
 * each count gets + 1 for the <|begin_of_text|> vLLM's tokenizer call adds.
 *
 * Writes workloads/sharegpt_lengths.inc: the pooled sample's size, means, and its 0th..100th
 * percentiles (numpy's default, linear) of prompt and output tokens, which the generator samples
 * by inverse CDF. The sample is small (a few hundred pairs); docs/workloads.md compares it with
 * public vLLM runs on ShareGPT_V3.
 *
 * usage: sharegpt_lengths [--data DIR] [--out FILE]
 * (defaults: ../shared/reference/llmservingsim-ispass26/dataset, workloads/sharegpt_lengths.inc;
 * run from the repository root) */
#include <glib.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_Q 101 /* percentiles 0..100 */

static const char *const FILES[] = {"sharegpt_req300_rate10_llama.jsonl",
                                    "sharegpt_req100_rate10_llama.jsonl"};

typedef struct {
    GArray *in, *out; /* uint32 token ids */
} row;

static void row_clear(row *r)
{
    g_array_free(r->in, TRUE);
    g_array_free(r->out, TRUE);
}

static GArray *ids(JsonObject *o, const char *member, const char *path, int line, GError **error)
{
    JsonNode *n = json_object_get_member(o, member);
    if (!n || !JSON_NODE_HOLDS_ARRAY(n)) {
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s:%d: no array '%s'", path, line,
                    member);
        return NULL;
    }
    JsonArray *a = json_node_get_array(n);
    GArray *v = g_array_sized_new(FALSE, FALSE, sizeof(guint32), json_array_get_length(a));
    for (guint i = 0; i < json_array_get_length(a); i++) {
        guint32 t = (guint32)json_array_get_int_element(a, i);
        g_array_append_val(v, t);
    }
    return v;
}

static gboolean read_rows(const char *path, GArray *rows, GError **error)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, error))
        return FALSE;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    g_autoptr(JsonParser) p = json_parser_new();
    for (int i = 0; lines[i]; i++) {
        if (!*g_strstrip(lines[i]))
            continue;
        if (!json_parser_load_from_data(p, lines[i], -1, error)) {
            g_prefix_error(error, "%s:%d: ", path, i + 1);
            return FALSE;
        }
        JsonObject *o = json_node_get_object(json_parser_get_root(p));
        row r = {ids(o, "input_tok_ids", path, i + 1, error), NULL};
        if (r.in)
            r.out = ids(o, "output_tok_ids", path, i + 1, error);
        if (!r.out) {
            if (r.in)
                g_array_free(r.in, TRUE);
            return FALSE;
        }
        g_array_append_val(rows, r);
    }
    return TRUE;
}

static gboolean prefix_of(const GArray *a, guint n, const GArray *b)
{
    return n <= b->len && (n == 0 || memcmp(a->data, b->data, n * sizeof(guint32)) == 0);
}

/* Row i continues the conversation of an earlier row j of the same file. */
static gboolean later_turn(const GArray *rows, guint i)
{
    const row *x = &g_array_index(rows, row, i);
    for (guint j = 0; j < i; j++) {
        const row *y = &g_array_index(rows, row, j);
        if (y->in->len >= 2 && x->in->len + 2 >= y->in->len + y->out->len &&
            prefix_of(y->in, y->in->len - 1, x->in))
            return TRUE;
    }
    return FALSE;
}

static gboolean same(const row *a, const row *b)
{
    return a->in->len == b->in->len && a->out->len == b->out->len &&
           prefix_of(a->in, a->in->len, b->in) && prefix_of(a->out, a->out->len, b->out);
}

/* vLLM's is_valid_sequence with its defaults. */
static gboolean valid(int64_t prompt, int64_t output)
{
    return prompt >= 4 && output >= 4 && prompt <= 1024 && prompt + output <= 2048;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* numpy.percentile(v, p) with method="linear" over sorted v. */
static double percentile(const int64_t *v, guint n, double p)
{
    double h = (double)(n - 1) * p / 100.0;
    guint lo = (guint)h;
    if (lo + 1 >= n)
        return (double)v[n - 1];
    return (double)v[lo] + (h - (double)lo) * (double)(v[lo + 1] - v[lo]);
}

static void put_table(FILE *f, const char *name, const int64_t *v, guint n)
{
    fprintf(f, "static const double %s[SV_WL_SHAREGPT_N_Q] = {\n", name);
    for (int q = 0; q < N_Q; q++)
        fprintf(f, "%s%.2f,%s", q % 8 == 0 ? "    " : " ", percentile(v, n, q),
                q % 8 == 7 || q == N_Q - 1 ? "\n" : "");
    fputs("};\n", f);
}

int main(int argc, char **argv)
{
    const char *data = "../shared/reference/llmservingsim-ispass26/dataset";
    const char *out = "workloads/sharegpt_lengths.inc";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--data") && i + 1 < argc)
            data = argv[++i];
        else if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out = argv[++i];
        else {
            fprintf(stderr, "usage: sharegpt_lengths [--data DIR] [--out FILE]\n");
            return 2;
        }
    }
    GArray *kept = g_array_new(FALSE, FALSE, sizeof(row));
    guint n_rows = 0, n_later = 0, n_dup = 0;
    for (guint f = 0; f < G_N_ELEMENTS(FILES); f++) {
        g_autofree char *path = g_build_filename(data, FILES[f], NULL);
        GArray *rows = g_array_new(FALSE, FALSE, sizeof(row));
        GError *err = NULL;
        if (!read_rows(path, rows, &err)) {
            fprintf(stderr, "sharegpt_lengths: %s\n", err->message);
            return 1;
        }
        n_rows += rows->len;
        for (guint i = 0; i < rows->len; i++) {
            row *r = &g_array_index(rows, row, i);
            gboolean drop = later_turn(rows, i);
            n_later += drop;
            for (guint k = 0; !drop && k < kept->len; k++)
                if (same(&g_array_index(kept, row, k), r))
                    drop = TRUE, n_dup++;
            if (drop)
                continue;
            /* A copy: the file's array is freed below. */
            row c = {g_array_copy(r->in), g_array_copy(r->out)};
            g_array_append_val(kept, c);
        }
        for (guint i = 0; i < rows->len; i++)
            row_clear(&g_array_index(rows, row, i));
        g_array_free(rows, TRUE);
    }
    int64_t *in = g_new(int64_t, kept->len), *op = g_new(int64_t, kept->len);
    guint n = 0, n_invalid = 0;
    double sum_in = 0, sum_out = 0;
    for (guint k = 0; k < kept->len; k++) {
        const row *r = &g_array_index(kept, row, k);
        int64_t p = (int64_t)r->in->len + 1, o = (int64_t)r->out->len + 1; /* + <|begin_of_text|> */
        if (!valid(p, o)) {
            n_invalid++;
            continue;
        }
        in[n] = p;
        op[n] = o;
        sum_in += (double)p;
        sum_out += (double)o;
        n++;
    }
    if (n < 2) {
        fprintf(stderr, "sharegpt_lengths: only %u valid pairs\n", n);
        return 1;
    }
    /* Pearson correlation of the pairs (printed: the generator draws the two independently). */
    double mi = sum_in / n, mo = sum_out / n, sxy = 0, sxx = 0, syy = 0;
    for (guint k = 0; k < n; k++) {
        sxy += ((double)in[k] - mi) * ((double)op[k] - mo);
        sxx += ((double)in[k] - mi) * ((double)in[k] - mi);
        syy += ((double)op[k] - mo) * ((double)op[k] - mo);
    }
    double corr = sxy / sqrt(sxx * syy);
    qsort(in, n, sizeof *in, cmp_i64);
    qsort(op, n, sizeof *op, cmp_i64);
    FILE *f = fopen(out, "w");
    if (!f) {
        fprintf(stderr, "sharegpt_lengths: cannot write %s\n", out);
        return 1;
    }
    fprintf(
        f,
        "/* Generated by tools/sharegpt_lengths.c from the ShareGPT requests of LLMServingSim's\n"
        " * ISPASS'26 artifact (dataset/sharegpt_req{300,100}_rate10_llama.jsonl, MIT licence;\n"
        " * HF shibing624/sharegpt_gpt4, Llama-3.1-8B tokenizer): %u rows, %u later turns and\n"
        " * %u duplicates dropped, %u pairs outside vLLM's is_valid_sequence dropped, %u first\n"
        " * turns kept, each count + 1 for <|begin_of_text|> as vLLM's ShareGPT sampler counts\n"
        " * them. Percentiles 0..100 (numpy linear) of prompt and output tokens. Do not edit:\n"
        " * rerun sharegpt_lengths. */\n",
        n_rows, n_later, n_dup, n_invalid, n);
    fprintf(f, "#define SV_WL_SHAREGPT_N_Q %d\n#define SV_WL_SHAREGPT_SAMPLE %u\n", N_Q, n);
    fprintf(f, "#define SV_WL_SHAREGPT_SAMPLE_INPUT_MEAN %.2f\n", sum_in / n);
    fprintf(f, "#define SV_WL_SHAREGPT_SAMPLE_OUTPUT_MEAN %.2f\n", sum_out / n);
    put_table(f, "sv_wl_sharegpt_input_q", in, n);
    put_table(f, "sv_wl_sharegpt_output_q", op, n);
    if (fclose(f) != 0) {
        fprintf(stderr, "sharegpt_lengths: cannot write %s\n", out);
        return 1;
    }
    printf("%u rows, %u later turns, %u duplicates, %u invalid: %u first turns; prompt mean %.1f "
           "p50 %.0f p90 %.0f, output mean %.1f p50 %.0f p90 %.0f, correlation %.3f -> %s\n",
           n_rows, n_later, n_dup, n_invalid, n, sum_in / n, percentile(in, n, 50),
           percentile(in, n, 90), sum_out / n, percentile(op, n, 50), percentile(op, n, 90), corr,
           out);
    for (guint k = 0; k < kept->len; k++)
        row_clear(&g_array_index(kept, row, k));
    g_array_free(kept, TRUE);
    g_free(in);
    g_free(op);
    return 0;
}
