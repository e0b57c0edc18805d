/* Vidur's profiling layout as a latency backend (docs/compute.md, "Vidur's profiles").
 *
 * <root>/compute/<device>/<org>/<model>/mlp.csv holds one row per (model shape, TP degree, number
 * of tokens) with time_stats.<op>.median in ms for every non-attention operator of one layer;
 * attention.csv beside it (Vidur keeps it in Git LFS) one row per measured attention shape.
 * Vidur trains sklearn models on these medians and predicts on its grid; servesim does not: it
 * interpolates linearly between the profiled points, with Vidur's keys
 * (vidur/execution_time_predictor/sklearn_execution_time_predictor.py @ 7d47513):
 *   - every mlp.csv operator keyed by the batch's tokens rounded up to a multiple of 8
 *     (Batch._total_num_tokens_rounded), rows filtered on the model's shape and the TP degree;
 *   - decode attention keyed by (decode requests, int(mean KV) rounded up to 64), x 1.1 when
 *     more than one request decodes (attention_decode_batching_overhead_fraction 0.1);
 *   - prefill attention keyed by (KV history summed, the chunks' root sum of squares), linear in
 *     the chunk squared as Vidur's feature is, x 1.1 with more than one prefill;
 *   - Vidur's block: pre_proj, post_proj, rope, attention, up_proj, act, down_proj, the two norms
 *     and one residual add. servesim's two layernorm slots each take half of input_layernorm +
 *     post_attention_layernorm + add.
 * What Vidur does not profile takes the roofline of the device: lm_head and sampler always (no
 * final_layernorm either: input_layernorm's time, the same kernel), attention when the model has
 * no attention.csv. The latency source names them. */
#include "compute/compute_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define VIDUR_MS_TO_NS 1e6
#define VIDUR_KV_GRANULARITY 64     /* kv_cache_prediction_granularity */
#define VIDUR_BATCHING_OVERHEAD 0.1 /* attention_{decode,prefill}_batching_overhead_fraction */

struct vidur_point {
    int64_t k0, k1;
    double v;
};

static int point_cmp(const void *a, const void *b)
{
    const struct vidur_point *x = a, *y = b;
    if (x->k0 != y->k0)
        return x->k0 < y->k0 ? -1 : 1;
    return (x->k1 > y->k1) - (x->k1 < y->k1);
}

static void table1d_clear(struct sv_compute_table1d *t)
{
    g_free(t->keys);
    g_free(t->vals);
    memset(t, 0, sizeof *t);
}

static void table2d_clear(struct sv_compute_table2d *t)
{
    for (int i = 0; i < t->n; i++)
        table1d_clear(&t->rows[i]);
    g_free(t->rows);
    g_free(t->keys);
    memset(t, 0, sizeof *t);
}

/* Sorted by (k0, k1); a repeated key keeps the mean of its rows (pandas drop_duplicates leaves
 * exact duplicates once; distinct medians of one shape are averaged). Rows by k0, points by k1. */
static void table2d_build(struct sv_compute_table2d *t, GArray *pts)
{
    qsort(pts->data, pts->len, sizeof(struct vidur_point), point_cmp);
    GArray *u = g_array_new(FALSE, FALSE, sizeof(struct vidur_point));
    for (guint i = 0; i < pts->len;) {
        struct vidur_point p = g_array_index(pts, struct vidur_point, i);
        double sum = 0;
        guint j = i;
        for (; j < pts->len && !point_cmp(&g_array_index(pts, struct vidur_point, j), &p); j++)
            sum += g_array_index(pts, struct vidur_point, j).v;
        p.v = sum / (double)(j - i);
        g_array_append_val(u, p);
        i = j;
    }
    const struct vidur_point *r = (const struct vidur_point *)u->data;
    int n = (int)u->len, nrow = 0;
    for (int i = 0; i < n; i++)
        nrow += i == 0 || r[i].k0 != r[i - 1].k0;
    t->n = nrow;
    t->keys = g_new0(int64_t, MAX(nrow, 1));
    t->rows = g_new0(struct sv_compute_table1d, MAX(nrow, 1));
    for (int i = 0, row = -1; i < n; i++) {
        if (i == 0 || r[i].k0 != r[i - 1].k0) {
            row++;
            t->keys[row] = r[i].k0;
            int m = 0;
            while (i + m < n && r[i + m].k0 == r[i].k0)
                m++;
            t->rows[row].n = m;
            t->rows[row].keys = g_new(int64_t, m);
            t->rows[row].vals = g_new(double, m);
        }
    }
    /* Fill the rows (a second pass keeps the first one simple). */
    for (int i = 0, row = -1, at = 0; i < n; i++) {
        if (i == 0 || r[i].k0 != r[i - 1].k0) {
            row++;
            at = 0;
        }
        t->rows[row].keys[at] = r[i].k1;
        t->rows[row].vals[at] = r[i].v;
        at++;
    }
    g_array_free(u, TRUE);
}

/* A row's value at q: linear inside, linear from the two end points outside (one point: its
 * value), never below 0. */
static double row_at(const struct sv_compute_table1d *t, double q)
{
    if (t->n == 1)
        return t->vals[0];
    int i = 1;
    while (i < t->n - 1 && (double)t->keys[i] < q)
        i++;
    double x0 = (double)t->keys[i - 1], x1 = (double)t->keys[i];
    double v = t->vals[i - 1] + (t->vals[i] - t->vals[i - 1]) * (q - x0) / (x1 - x0);
    return v > 0 ? v : 0;
}

static gboolean row_covers(const struct sv_compute_table1d *t, double q)
{
    return (double)t->keys[0] <= q && q <= (double)t->keys[t->n - 1];
}

/* The value at (q0, q1) of a table whose rows (k0) each cover a range of k1: among the rows that
 * cover q1 (all rows when none does), the nearest row at or below q0 and the nearest at or above;
 * linear between them in `scale(k0)`, linear from the two nearest on one side past the table's
 * edge. Vidur's profile grid is rectangular except where a run was cut short; this keeps each
 * estimate on measured rows that contain the point. */
static double table2d_at(const struct sv_compute_table2d *t, double q0, double q1,
                         double (*scale)(double))
{
    int lo = -1, hi = -1, lo2 = -1, hi2 = -1;
    gboolean any = FALSE;
    for (int pass = 0; pass < 2 && !any; pass++) {
        for (int i = 0; i < t->n; i++) {
            if (pass == 0 && !row_covers(&t->rows[i], q1))
                continue;
            any = TRUE;
            double k = (double)t->keys[i];
            if (k <= q0) {
                lo2 = lo;
                lo = i;
            }
            if (k >= q0 && hi < 0)
                hi = i;
            else if (k >= q0 && hi2 < 0)
                hi2 = i;
        }
    }
    if (lo >= 0 && hi >= 0 && lo != hi) {
        double x0 = scale((double)t->keys[lo]), x1 = scale((double)t->keys[hi]);
        double v0 = row_at(&t->rows[lo], q1), v1 = row_at(&t->rows[hi], q1);
        return v0 + (v1 - v0) * (scale(q0) - x0) / (x1 - x0);
    }
    int a = lo >= 0 ? lo : hi, b = lo >= 0 ? lo2 : hi2; /* one side: the two nearest rows */
    if (a < 0)
        return 0;
    if (b < 0 || lo == hi)
        return row_at(&t->rows[a], q1);
    double x0 = scale((double)t->keys[a]), x1 = scale((double)t->keys[b]);
    double v0 = row_at(&t->rows[a], q1), v1 = row_at(&t->rows[b], q1);
    double v = v0 + (v1 - v0) * (scale(q0) - x0) / (x1 - x0);
    return v > 0 ? v : 0;
}

static double linear(double x)
{
    return x;
}

static double squared(double x)
{
    return x * x;
}

void sv_compute__vidur_free(struct sv_compute_vidur_tables *v)
{
    if (!v)
        return;
    for (int i = 0; i < SV_COMPUTE_OP_COUNT; i++)
        table1d_clear(&v->op[i]);
    table1d_clear(&v->norm2);
    table1d_clear(&v->add);
    table2d_clear(&v->decode);
    table2d_clear(&v->prefill);
    table1d_clear(&v->kv_save);
    sv_compute_latency_free(v->fallback);
    g_free(v->fallback_ops);
    g_free(v);
}

/* ---- finding a model's folder -----------------------------------------------------------------
 */

/* Vidur's device SKUs (vidur/config/device_sku_config.py) and the catalog's devices they were
 * profiled on (its README: A100 80GB, H100). */
static const struct {
    const char *sku, *catalog;
} vidur_skus[] = {{"a100", "A100-80GB"}, {"h100", "H100-SXM"}};

/* Lowercase, a trailing "-hf" dropped: "meta-llama/Llama-2-7b-hf" ~ "meta-llama/Llama-2-7B". */
static char *model_key(const char *s)
{
    char *k = g_ascii_strdown(s, -1);
    size_t n = strlen(k);
    if (n > 3 && !strcmp(k + n - 3, "-hf"))
        k[n - 3] = '\0';
    return k;
}

static GPtrArray *sorted_dirs(const char *path)
{
    GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
    GDir *d = g_dir_open(path, 0, NULL);
    if (!d)
        return a;
    const char *n;
    while ((n = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(path, n, NULL);
        if (g_file_test(p, G_FILE_TEST_IS_DIR))
            g_ptr_array_add(a, g_strdup(n));
    }
    g_dir_close(d);
    return a;
}

static gint cmp_strp(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char *sv_compute_vidur_find(const char *root, const char *hw, const char *hw_canonical,
                            const char *model_name, GError **error)
{
    g_autofree char *compute = g_build_filename(root, "compute", NULL);
    if (!g_file_test(compute, G_FILE_TEST_IS_DIR)) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING,
                    "not Vidur's profiling layout: %s not found", compute);
        return NULL;
    }
    /* The device folder: the hardware name as the config writes it, else Vidur's SKU of the
     * catalog device. */
    g_autofree char *dev = NULL;
    g_autofree char *lower = g_ascii_strdown(hw, -1);
    g_autofree char *p0 = g_build_filename(compute, lower, NULL);
    if (g_file_test(p0, G_FILE_TEST_IS_DIR))
        dev = g_strdup(lower);
    for (size_t i = 0; !dev && hw_canonical && i < G_N_ELEMENTS(vidur_skus); i++)
        if (!strcmp(hw_canonical, vidur_skus[i].catalog)) {
            g_autofree char *p = g_build_filename(compute, vidur_skus[i].sku, NULL);
            if (g_file_test(p, G_FILE_TEST_IS_DIR))
                dev = g_strdup(vidur_skus[i].sku);
        }
    if (!dev) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING,
                    "no Vidur profiles for hardware %s under %s (Vidur's devices: a100 = "
                    "A100-80GB, h100 = H100-SXM, or a folder named like the hardware)",
                    hw, compute);
        return NULL;
    }
    g_autofree char *want = model_key(model_name);
    gboolean with_org = strchr(model_name, '/') != NULL;
    g_autofree char *devdir = g_build_filename(compute, dev, NULL);
    g_autoptr(GPtrArray) orgs = sorted_dirs(devdir);
    g_ptr_array_sort(orgs, cmp_strp);
    for (guint i = 0; i < orgs->len; i++) {
        g_autofree char *od = g_build_filename(devdir, orgs->pdata[i], NULL);
        g_autoptr(GPtrArray) models = sorted_dirs(od);
        g_ptr_array_sort(models, cmp_strp);
        for (guint j = 0; j < models->len; j++) {
            g_autofree char *full =
                g_strdup_printf("%s/%s", (char *)orgs->pdata[i], (char *)models->pdata[j]);
            g_autofree char *have = model_key(with_org ? full : models->pdata[j]);
            if (!strcmp(have, want)) {
                char *dir = g_build_filename(od, models->pdata[j], NULL);
                g_autofree char *mlp = g_build_filename(dir, "mlp.csv", NULL);
                if (g_file_test(mlp, G_FILE_TEST_IS_REGULAR))
                    return dir;
                g_free(dir);
            }
        }
    }
    g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING,
                "no Vidur profile for model %s on %s: no <org>/<model>/mlp.csv under %s matches "
                "(names compare case-insensitively, a trailing -hf ignored)",
                model_name, dev, devdir);
    return NULL;
}

/* ---- loading ----------------------------------------------------------------------------------
 */

static int col(const sv_compute_table *c, const char *name, GError **error)
{
    return sv_compute__csv_col(c, name, error);
}

/* Does row r carry value `want` in column `ci` (a number, or "True"/"False" for a boolean)? */
static gboolean row_is(const sv_compute_table *c, guint r, int ci, double want)
{
    const char *s = ((char **)c->rows->pdata[r])[ci];
    if (!g_ascii_strcasecmp(s, "true"))
        return want == 1;
    if (!g_ascii_strcasecmp(s, "false"))
        return want == 0;
    char *end = NULL;
    double v = g_ascii_strtod(s, &end);
    return end != s && v == want;
}

/* The rows of `c` whose shape columns match the model and the TP degree; error naming the file
 * and the TP degrees it has when none does. */
static GArray *matching_rows(const sv_compute_table *c, const char *path, const char *const *cols,
                             const double *want, int ncols, const char *tp_col, int tp,
                             GError **error)
{
    int idx[8];
    for (int i = 0; i < ncols; i++)
        if ((idx[i] = col(c, cols[i], error)) < 0)
            return NULL;
    int tpi = col(c, tp_col, error);
    if (tpi < 0)
        return NULL;
    GArray *rows = g_array_new(FALSE, FALSE, sizeof(guint));
    gboolean shape_seen = FALSE;
    g_autoptr(GString) tps = g_string_new(NULL);
    for (guint r = 0; r < c->rows->len; r++) {
        gboolean ok = TRUE;
        for (int i = 0; i < ncols && ok; i++)
            ok = row_is(c, r, idx[i], want[i]);
        if (!ok)
            continue;
        shape_seen = TRUE;
        const char *t = ((char **)c->rows->pdata[r])[tpi];
        g_autofree char *needle = g_strdup_printf(" %s,", t);
        g_autofree char *hay = g_strdup_printf(" %s", tps->str);
        if (!strstr(hay, needle))
            g_string_append_printf(tps, "%s, ", t);
        if (row_is(c, r, tpi, tp))
            g_array_append_val(rows, r);
    }
    if (rows->len == 0) {
        g_autoptr(GString) shape = g_string_new(NULL);
        for (int i = 0; i < ncols; i++)
            g_string_append_printf(shape, "%s%s=%g", i ? ", " : "", cols[i], want[i]);
        if (shape_seen)
            g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING,
                        "no rows for %s=%d in %s (it has %.*s)", tp_col, tp, path,
                        (int)MAX(tps->len, 2) - 2, tps->str);
        else
            g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING,
                        "no rows for the model's shape (%s) in %s", shape->str, path);
        g_array_free(rows, TRUE);
        return NULL;
    }
    return rows;
}

/* The median of an operator by num_tokens, ms -> ns. */
static gboolean op_table(const sv_compute_table *c, const GArray *rows, const char *op,
                         struct sv_compute_table1d *out, GError **error)
{
    g_autofree char *name = g_strdup_printf("time_stats.%s.median", op);
    int vi = col(c, name, error), ti = col(c, "num_tokens", error);
    if (vi < 0 || ti < 0)
        return FALSE;
    g_autoptr(GArray) pts = g_array_new(FALSE, FALSE, sizeof(struct vidur_point));
    for (guint i = 0; i < rows->len; i++) {
        guint r = g_array_index(rows, guint, i);
        double t, v;
        if (!sv_compute__csv_double(c, r, ti, &t, error) ||
            !sv_compute__csv_double(c, r, vi, &v, error))
            return FALSE;
        struct vidur_point p = {.k0 = 0, .k1 = (int64_t)t, .v = v * VIDUR_MS_TO_NS};
        g_array_append_val(pts, p);
    }
    struct sv_compute_table2d t2 = {0};
    table2d_build(&t2, pts);
    SV_ASSERT(t2.n == 1);
    *out = t2.rows[0];
    g_free(t2.rows);
    g_free(t2.keys);
    return TRUE;
}

static gboolean load_mlp(sv_compute_latency *lat, const char *path, GError **error)
{
    struct sv_compute_vidur_tables *v = lat->vidur;
    const struct sv_compute_model_cfg *m = &lat->model;
    g_autoptr(sv_compute_table) c = sv_compute__csv_load(path, error);
    if (!c)
        return FALSE;
    /* Not vocab_size: Vidur's model configs pad it (Llama-2: 32768 for the tokenizer's 32000),
     * and no operator read here depends on it (emb is a gather of rows). */
    static const char *const cols[] = {"n_head", "n_kv_head", "n_embd", "n_expanded_embd"};
    const double want[] = {(double)m->num_heads, (double)m->num_kv_heads, (double)m->hidden_size,
                           (double)m->intermediate_size};
    g_autoptr(GArray) rows = matching_rows(c, path, cols, want, G_N_ELEMENTS(cols),
                                           "num_tensor_parallel_workers", lat->tp, error);
    if (!rows)
        return FALSE;
    static const struct {
        sv_compute_op_kind op;
        const char *vidur;
    } map[] = {
        {SV_COMPUTE_OP_EMBEDDING, "emb"},          {SV_COMPUTE_OP_LAYERNORM, "input_layernorm"},
        {SV_COMPUTE_OP_QKV_PROJ, "attn_pre_proj"}, {SV_COMPUTE_OP_ROTARY_EMB, "attn_rope"},
        {SV_COMPUTE_OP_O_PROJ, "attn_post_proj"},  {SV_COMPUTE_OP_GATE_UP_PROJ, "mlp_up_proj"},
        {SV_COMPUTE_OP_ACT_FN, "mlp_act"},         {SV_COMPUTE_OP_DOWN_PROJ, "mlp_down_proj"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(map); i++) {
        if (!op_table(c, rows, map[i].vidur, &v->op[map[i].op], error))
            return FALSE;
        v->has[map[i].op] = TRUE;
    }
    return op_table(c, rows, "post_attention_layernorm", &v->norm2, error) &&
           op_table(c, rows, "add", &v->add, error);
}

static gboolean load_attention(sv_compute_latency *lat, const char *path, GError **error)
{
    struct sv_compute_vidur_tables *v = lat->vidur;
    const struct sv_compute_model_cfg *m = &lat->model;
    g_autoptr(sv_compute_table) c = sv_compute__csv_load(path, error);
    if (!c)
        return FALSE;
    /* Vidur filters on the block size too (its scheduler's, 16 by default, as vLLM's). */
    static const char *const cols[] = {"n_embd", "n_q_head", "n_kv_head", "block_size"};
    const double want[] = {(double)m->hidden_size, (double)m->num_heads, (double)m->num_kv_heads,
                           16};
    g_autoptr(GArray) rows = matching_rows(c, path, cols, want, G_N_ELEMENTS(cols),
                                           "num_tensor_parallel_workers", lat->tp, error);
    if (!rows)
        return FALSE;
    int ip = col(c, "is_prefill", error), bs = col(c, "batch_size", error),
        pc = col(c, "prefill_chunk_size", error), kv = col(c, "kv_cache_size", error),
        tp_ = col(c, "time_stats.attn_prefill.median", error),
        td = col(c, "time_stats.attn_decode.median", error);
    if (ip < 0 || bs < 0 || pc < 0 || kv < 0 || tp_ < 0 || td < 0)
        return FALSE;
    int ts = sv_compute__csv_col(c, "time_stats.attn_kv_cache_save.median", NULL);
    g_autoptr(GArray) dec = g_array_new(FALSE, FALSE, sizeof(struct vidur_point));
    g_autoptr(GArray) pre = g_array_new(FALSE, FALSE, sizeof(struct vidur_point));
    g_autoptr(GArray) save = g_array_new(FALSE, FALSE, sizeof(struct vidur_point));
    for (guint i = 0; i < rows->len; i++) {
        guint r = g_array_index(rows, guint, i);
        double b, chunk, k, t;
        if (!sv_compute__csv_double(c, r, bs, &b, error) ||
            !sv_compute__csv_double(c, r, pc, &chunk, error) ||
            !sv_compute__csv_double(c, r, kv, &k, error))
            return FALSE;
        gboolean prefill = row_is(c, r, ip, 1);
        if (!sv_compute__csv_double(c, r, prefill ? tp_ : td, &t, error))
            return FALSE;
        struct vidur_point p = prefill ? (struct vidur_point){(int64_t)chunk, (int64_t)k, t * 1e6}
                                       : (struct vidur_point){(int64_t)k, (int64_t)b, t * 1e6};
        g_array_append_val(prefill ? pre : dec, p);
        double s;
        if (ts >= 0 && sv_compute__csv_double(c, r, ts, &s, NULL)) {
            struct vidur_point q = {0, (int64_t)MAX(chunk, b), s * 1e6};
            g_array_append_val(save, q);
        }
    }
    if (dec->len == 0 || pre->len == 0) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING,
                    "%s: no %s rows for the model at tp %d", path,
                    dec->len == 0 ? "decode (is_prefill False)" : "prefill (is_prefill True)",
                    lat->tp);
        return FALSE;
    }
    table2d_build(&v->decode, dec);
    table2d_build(&v->prefill, pre);
    if (save->len > 0) {
        struct sv_compute_table2d t2 = {0};
        table2d_build(&t2, save);
        v->kv_save = t2.rows[0];
        g_free(t2.rows);
        g_free(t2.keys);
        v->has_kv_save = TRUE;
    }
    v->has_attn = TRUE;
    return TRUE;
}

gboolean sv_compute__vidur_load(sv_compute_latency *lat, const char *model_dir,
                                const struct sv_compute_hw_cfg *hw, GError **error)
{
    lat->dir = g_strdup(model_dir);
    lat->vidur = g_new0(struct sv_compute_vidur_tables, 1);
    const struct sv_compute_layer_seq *q = lat->seq;
    for (int i = 0; i < q->n_pre_attn; i++)
        if (q->pre_attn[i] == SV_COMPUTE_OP_QK_NORM) {
            g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING,
                        "Vidur's profiles have no qk_norm (%s): %s", lat->model.name, model_dir);
            return FALSE;
        }
    if (q->mlp_is_moe) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING,
                    "Vidur's profiles are for dense models (%s is MoE): %s", lat->model.name,
                    model_dir);
        return FALSE;
    }
    g_autofree char *mlp = g_build_filename(model_dir, "mlp.csv", NULL);
    if (!load_mlp(lat, mlp, error))
        return FALSE;
    g_autofree char *attn = g_build_filename(model_dir, "attention.csv", NULL);
    if (g_file_test(attn, G_FILE_TEST_EXISTS) && !load_attention(lat, attn, error))
        return FALSE;
    /* The rest from the device's roofline. */
    lat->vidur->fallback = sv_compute_latency_new_roofline(&lat->model, hw, lat->tp, NULL, error);
    if (!lat->vidur->fallback) {
        g_prefix_error(error,
                       "Vidur's profiles lack lm_head and sampler, which take the roofline: ");
        return FALSE;
    }
    lat->hw = *hw;
    lat->vidur->fallback_ops =
        g_strdup(lat->vidur->has_attn ? "lm_head, sampler" : "attention, lm_head, sampler");
    return TRUE;
}

/* ---- lookups ----------------------------------------------------------------------------------
 */

static double attention_ns(const struct sv_compute_vidur_tables *v,
                           const struct sv_compute_batch_shape *s)
{
    double t = 0;
    if (s->n_decode > 0) {
        int64_t kv = (s->decode_kv_mean + VIDUR_KV_GRANULARITY - 1) / VIDUR_KV_GRANULARITY *
                     VIDUR_KV_GRANULARITY;
        t += table2d_at(&v->decode, (double)kv, (double)s->n_decode, linear) *
             (1 + VIDUR_BATCHING_OVERHEAD * (s->n_decode > 1));
    }
    if (s->n_prefill_tokens > 0) {
        /* Vidur: sqrt(sum of chunk^2), rounded; the shape has the sum of chunks only, so the
         * chunks are taken as equal: sqrt(n x (P / n)^2) = P / sqrt(n). */
        double n = (double)MAX(s->n_prefill_seqs, (int64_t)1);
        double chunk = round((double)s->n_prefill_tokens / sqrt(n));
        t += table2d_at(&v->prefill, chunk, (double)s->prefill_kv, squared) *
             (1 + VIDUR_BATCHING_OVERHEAD * (s->n_prefill_seqs > 1));
    }
    if (v->has_kv_save)
        t += sv_compute__lookup_1d(&v->kv_save, (double)MAX(s->tokens, (int64_t)1));
    return t;
}

double sv_compute__vidur_op_ns(sv_compute_latency *lat, sv_compute_op_kind op,
                               const struct sv_compute_batch_shape *s)
{
    const struct sv_compute_vidur_tables *v = lat->vidur;
    if (op == SV_COMPUTE_OP_ATTENTION) {
        if (s->n_prefill_tokens == 0 && s->n_decode == 0)
            return 0;
        if (v->has_attn)
            return attention_ns(v, s);
    }
    if (op == SV_COMPUTE_OP_ATTENTION || op == SV_COMPUTE_OP_LM_HEAD || op == SV_COMPUTE_OP_SAMPLER)
        return (double)sv_compute_op_time(v->fallback, op, s);
    /* Batch._total_num_tokens_rounded: tokens up to a multiple of 8. */
    double tok = (double)((MAX(s->tokens, (int64_t)1) + 7) / 8 * 8);
    if (op == SV_COMPUTE_OP_LAYERNORM)
        return (sv_compute__lookup_1d(&v->op[op], tok) + sv_compute__lookup_1d(&v->norm2, tok) +
                sv_compute__lookup_1d(&v->add, tok)) /
               2;
    if (op == SV_COMPUTE_OP_FINAL_LAYERNORM) /* input_layernorm's: the same RMSNorm kernel */
        return sv_compute__lookup_1d(&v->op[SV_COMPUTE_OP_LAYERNORM], tok);
    SV_ASSERT(v->has[op]);
    return sv_compute__lookup_1d(&v->op[op], tok);
}

const char *sv_compute_latency_fallback_ops(const sv_compute_latency *lat)
{
    return lat->backend == SV_COMPUTE_LATENCY_VIDUR ? lat->vidur->fallback_ops : NULL;
}
