/* Profile backends: LLMServingSim bundles (<hw>/<org>/<model>/<variant>/{meta.yaml, tp<N>/})
 * and the legacy perf_models layout. The lookup semantics follow LLMServingSim's
 * serving/core/trace_generator.py (_load_perf_db, _lookup_dense, _lookup_per_sequence,
 * _lookup_attention, _lookup_attention_with_skew, _skew_alpha, _lookup_moe): times are
 * rounded to integer ns at load, each lookup truncates to integer ns (at least 1). */
#include "compute/compute_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct kv_row {
    int64_t k[4];
    double v;
    guint seq;
};

static int kv_row_cmp(const void *a, const void *b)
{
    const struct kv_row *x = a, *y = b;
    for (int i = 0; i < 4; i++)
        if (x->k[i] != y->k[i])
            return x->k[i] < y->k[i] ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sort and drop duplicate keys, the last row of a key winning (as _build_1d_table). */
static void sort_dedupe(GArray *rows)
{
    qsort(rows->data, rows->len, sizeof(struct kv_row), kv_row_cmp);
    guint w = 0;
    for (guint i = 0; i < rows->len; i++) {
        struct kv_row *r = &g_array_index(rows, struct kv_row, i);
        if (w > 0 && !memcmp(g_array_index(rows, struct kv_row, w - 1).k, r->k, sizeof r->k))
            g_array_index(rows, struct kv_row, w - 1) = *r;
        else
            g_array_index(rows, struct kv_row, w++) = *r;
    }
    g_array_set_size(rows, w);
}

static void table1d_from(struct sv_compute_table1d *t, const struct kv_row *r, int n, int key_idx)
{
    t->n = n;
    t->keys = g_new(int64_t, n);
    t->vals = g_new(double, n);
    for (int i = 0; i < n; i++) {
        t->keys[i] = r[i].k[key_idx];
        t->vals[i] = r[i].v;
    }
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

/* rows sorted by (k0, k1): one table row per k0, keyed by k1. */
static void table2d_from(struct sv_compute_table2d *t, GArray *rows)
{
    const struct kv_row *r = (const struct kv_row *)rows->data;
    int n = (int)rows->len, nrow = 0;
    for (int i = 0; i < n; i++)
        if (i == 0 || r[i].k[0] != r[i - 1].k[0])
            nrow++;
    t->n = nrow;
    t->keys = g_new0(int64_t, nrow);
    t->rows = g_new0(struct sv_compute_table1d, nrow);
    for (int i = 0, j = -1, start = 0; i <= n; i++) {
        if (i == n || (i > 0 && r[i].k[0] != r[i - 1].k[0])) {
            j++;
            t->keys[j] = r[start].k[0];
            table1d_from(&t->rows[j], r + start, i - start, 1);
            start = i;
        }
    }
}

void sv_compute__tp_tables_clear(struct sv_compute_tp_tables *t)
{
    if (!t)
        return;
    for (int i = 0; i < SV_COMPUTE_OP_COUNT; i++)
        table1d_clear(&t->dense[i]);
    for (int i = 0; i < t->attn.n_slices; i++) {
        struct sv_compute_attn_slice *s = &t->attn.slices[i];
        for (int j = 0; j < s->n_kp; j++)
            table1d_clear(&s->rows[j]);
        g_free(s->rows);
        g_free(s->kp);
    }
    g_free(t->attn.slices);
    g_free(t->attn.pc_vals);
    g_free(t->attn.nd_vals);
    table2d_clear(&t->moe);
    memset(t, 0, sizeof *t);
}

/* Read the named numeric columns of every row into kv_rows (times converted to ns). */
static gboolean read_rows(const sv_compute_table *c, const char *const *cols, int ncols,
                          const char *tcol, gboolean time_is_us, int filter_col,
                          const char *filter_val, GArray *out, GError **error)
{
    int idx[4], ti = sv_compute__csv_col(c, tcol, error);
    if (ti < 0)
        return FALSE;
    for (int i = 0; i < ncols; i++)
        if ((idx[i] = sv_compute__csv_col(c, cols[i], error)) < 0)
            return FALSE;
    for (guint r = 0; r < c->rows->len; r++) {
        if (filter_col >= 0 && strcmp(((char **)c->rows->pdata[r])[filter_col], filter_val))
            continue;
        struct kv_row kr = {.seq = r};
        for (int i = 0; i < ncols; i++) {
            double v;
            if (!sv_compute__csv_double(c, r, idx[i], &v, error))
                return FALSE;
            kr.k[i] = (int64_t)v;
        }
        double t;
        if (!sv_compute__csv_double(c, r, ti, &t, error))
            return FALSE;
        kr.v = time_is_us ? sv_compute__us_to_ns(t) : t;
        g_array_append_val(out, kr);
    }
    return TRUE;
}

/* dense.csv / per_sequence.csv: layer,<key>,time_us. Layers we do not model are ignored. */
static gboolean load_1d_file(struct sv_compute_tp_tables *t, const char *path, const char *key,
                             GError **error)
{
    g_autoptr(sv_compute_table) c = sv_compute__csv_load(path, error);
    if (!c)
        return FALSE;
    int lc = sv_compute__csv_col(c, "layer", error);
    if (lc < 0)
        return FALSE;
    for (int op = 0; op < SV_COMPUTE_OP_COUNT; op++) {
        const char *kcols[] = {key};
        g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(struct kv_row));
        if (!read_rows(c, kcols, 1, "time_us", TRUE, lc, sv_compute_op_name(op), rows, error))
            return FALSE;
        if (rows->len == 0)
            continue;
        sort_dedupe(rows);
        table1d_clear(&t->dense[op]);
        table1d_from(&t->dense[op], (struct kv_row *)rows->data, (int)rows->len, 0);
        t->has_dense[op] = TRUE;
    }
    return TRUE;
}

static int i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorted distinct values of column k of rows. */
static int64_t *distinct(const struct kv_row *r, int n, int k, int *out_n)
{
    int64_t *v = g_new(int64_t, n);
    int m = 0;
    /* rows are sorted, so equal values come in runs: sort one value per run (~10^2, not 10^4) */
    for (int i = 0; i < n; i++)
        if (m == 0 || v[m - 1] != r[i].k[k])
            v[m++] = r[i].k[k];
    n = m;
    qsort(v, (size_t)n, sizeof *v, i64_cmp);
    int w = 0;
    for (int i = 0; i < n; i++)
        if (w == 0 || v[w - 1] != v[i])
            v[w++] = v[i];
    *out_n = w;
    return v;
}

/* rows sorted by (pc, nd, kp, kd): one slice per (pc, nd), one row per kp inside it. */
static void attn_build(struct sv_compute_attn_table *a, const struct kv_row *r, int n)
{
    a->pc_vals = distinct(r, n, 0, &a->n_pc);
    a->nd_vals = distinct(r, n, 1, &a->n_nd);
    int ns = 0;
    for (int i = 0; i < n; i++)
        if (i == 0 || r[i].k[0] != r[i - 1].k[0] || r[i].k[1] != r[i - 1].k[1])
            ns++;
    a->n_slices = ns;
    a->slices = g_new0(struct sv_compute_attn_slice, ns);
    int si = -1;
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && r[j].k[0] == r[i].k[0] && r[j].k[1] == r[i].k[1])
            j++;
        struct sv_compute_attn_slice *s = &a->slices[++si];
        s->pc = r[i].k[0];
        s->nd = r[i].k[1];
        int nkp = 0;
        for (int q = i; q < j; q++)
            if (q == i || r[q].k[2] != r[q - 1].k[2])
                nkp++;
        s->n_kp = nkp;
        s->kp = g_new(int64_t, nkp);
        s->rows = g_new0(struct sv_compute_table1d, nkp);
        int ki = -1;
        for (int q = i; q < j;) {
            int e = q;
            while (e < j && r[e].k[2] == r[q].k[2])
                e++;
            s->kp[++ki] = r[q].k[2];
            table1d_from(&s->rows[ki], r + q, e - q, 3);
            q = e;
        }
        i = j;
    }
}

static gboolean load_attention(struct sv_compute_tp_tables *t, const char *path, GError **error)
{
    g_autoptr(sv_compute_table) c = sv_compute__csv_load(path, error);
    if (!c)
        return FALSE;
    /* A bundle with a `layer` column may hold several kernels; ours is `attention`. */
    int lc = -1;
    for (guint i = 0; i < c->header->len; i++)
        if (!strcmp(c->header->pdata[i], "layer"))
            lc = (int)i;
    static const char *const cols[] = {"prefill_chunk", "n_decode", "kv_prefill", "kv_decode"};
    g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(struct kv_row));
    if (!read_rows(c, cols, 4, "time_us", TRUE, lc, "attention", rows, error))
        return FALSE;
    if (rows->len == 0) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING, "no attention rows in %s",
                    path);
        return FALSE;
    }
    sort_dedupe(rows);
    attn_build(&t->attn, (const struct kv_row *)rows->data, (int)rows->len);
    t->has_attn = TRUE;
    return TRUE;
}

static gboolean load_moe(struct sv_compute_tp_tables *t, const char *path, GError **error)
{
    g_autoptr(sv_compute_table) c = sv_compute__csv_load(path, error);
    if (!c)
        return FALSE;
    static const char *const cols[] = {"activated_experts", "tokens"};
    g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(struct kv_row));
    if (!read_rows(c, cols, 2, "time_us", TRUE, -1, NULL, rows, error))
        return FALSE;
    if (rows->len == 0) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING, "no rows in %s", path);
        return FALSE;
    }
    sort_dedupe(rows);
    table2d_from(&t->moe, rows);
    t->has_moe = TRUE;
    return TRUE;
}

static struct sv_compute_tp_tables *load_tp(const char *root, int tp, GError **error)
{
    struct sv_compute_tp_tables *t = g_new0(struct sv_compute_tp_tables, 1);
    t->tp = tp;
    g_autofree char *dir = g_strdup_printf("%s/tp%d", root, tp);
    static const char *const files[] = {"dense.csv", "per_sequence.csv", "attention.csv",
                                        "moe.csv"};
    for (int f = 0; f < 4; f++) {
        g_autofree char *p = g_strdup_printf("%s/%s", dir, files[f]);
        if (!g_file_test(p, G_FILE_TEST_IS_REGULAR))
            continue; /* absence is reported per layer by check_coverage */
        gboolean ok = f == 0   ? load_1d_file(t, p, "tokens", error)
                      : f == 1 ? load_1d_file(t, p, "sequences", error)
                      : f == 2 ? load_attention(t, p, error)
                               : load_moe(t, p, error);
        if (!ok) {
            sv_compute__tp_tables_clear(t);
            g_free(t);
            return NULL;
        }
    }
    return t;
}

/* ---- skew fit ------------------------------------------------------------------------------ */

static void axis_clear(struct sv_compute_skew_axis *a)
{
    g_free(a->bins);
    for (int i = 0; i < a->n; i++)
        g_free(a->labels[i]);
    g_free(a->labels);
    memset(a, 0, sizeof *a);
}

void sv_compute__skew_fit_clear(struct sv_compute_skew_fit *f)
{
    axis_clear(&f->n_ax);
    axis_clear(&f->sr_ax);
    axis_clear(&f->kvb_ax);
    axis_clear(&f->kp_ax);
    if (f->alpha)
        g_hash_table_unref(f->alpha);
    memset(f, 0, sizeof *f);
}

/* Module defaults for bundles written before bucket_axes was recorded
 * (trace_generator._DEFAULT_SKEW_AXES). */
static void axis_set(struct sv_compute_skew_axis *a, int n, const double *bins,
                     const char *const *lab)
{
    axis_clear(a);
    a->n = n;
    a->bins = g_memdup2(bins, sizeof(double) * (size_t)(n + 1));
    a->labels = g_new(char *, n);
    for (int i = 0; i < n; i++)
        a->labels[i] = g_strdup(lab[i]);
}

static void axes_default(struct sv_compute_skew_fit *f)
{
    static const double nb[] = {0, 2, 4, 8, 16, 32, 64, 128, 1000000};
    static const char *const nl[] = {"n<=2",  "n<=4",  "n<=8",   "n<=16",
                                     "n<=32", "n<=64", "n<=128", "n>128"};
    static const double kb[] = {0, 1024, 4096, 16384, 1000000000};
    static const char *const kl[] = {"kvB<=1k", "kvB<=4k", "kvB<=16k", "kvB>16k"};
    static const double sb[] = {-0.01, 0.05, 0.15, 0.40, 0.70, 1.01};
    static const char *const sl[] = {"sr<=5%", "sr<=15%", "sr<=40%", "sr<=70%", "sr>70%"};
    static const double pb[] = {-1, 0, 2048, 1000000000};
    static const char *const pl[] = {"kp=0", "kp<=2k", "kp>2k"};
    axis_set(&f->n_ax, 8, nb, nl);
    axis_set(&f->kvb_ax, 4, kb, kl);
    axis_set(&f->sr_ax, 5, sb, sl);
    axis_set(&f->kp_ax, 3, pb, pl);
}

static gboolean axis_from_yaml(struct sv_compute_skew_axis *a, sv_yaml_node *axes,
                               const char *bins_key, const char *labels_key, const char *where,
                               GError **error)
{
    sv_yaml_node *b = sv_yaml_get(axes, bins_key);
    sv_yaml_node *l = sv_yaml_get(axes, labels_key);
    if (!b || !l || b->kind != SV_YAML_SEQ || l->kind != SV_YAML_SEQ ||
        b->items->len != l->items->len + 1 || l->items->len == 0) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                    "bucket axis needs %s (n+1 edges) and %s (n labels): %s", bins_key, labels_key,
                    where);
        return FALSE;
    }
    axis_clear(a);
    a->n = (int)l->items->len;
    a->bins = g_new(double, a->n + 1);
    a->labels = g_new(char *, a->n);
    for (guint i = 0; i < b->items->len; i++) {
        sv_yaml_node *x = b->items->pdata[i];
        /* decimal text (no "inf", "0x10"); a bin edge that is not a number is an error, not 0 */
        if (!x->scalar || !sv_num_parse_double(x->scalar, &a->bins[i])) {
            g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                        "%s.%s[%u]: '%s' is not a number (line %d)", where, bins_key, i,
                        x->scalar ? x->scalar : "", x->line);
            return FALSE;
        }
    }
    for (int i = 0; i < a->n; i++) {
        sv_yaml_node *x = l->items->pdata[i];
        a->labels[i] = g_strdup(x->scalar ? x->scalar : "");
    }
    return TRUE;
}

/* alpha_default: absent is 0; present, a decimal number (the file's line in the error). */
static gboolean alpha_of(const sv_yaml_node *n, const char *where, double *out, GError **error)
{
    *out = 0;
    if (!n || !n->scalar)
        return TRUE;
    if (sv_num_parse_double(n->scalar, out))
        return TRUE;
    g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                "%s.alpha_default: '%s' is not a number (line %d)", where, n->scalar, n->line);
    return FALSE;
}

static gboolean load_skew(struct sv_compute_skew_fit *f, sv_yaml_node *meta, const char *root,
                          int tp, GError **error)
{
    memset(f, 0, sizeof *f);
    f->alpha = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    axes_default(f);
    sv_yaml_node *fit = sv_yaml_get(meta, "skew_fit");
    sv_yaml_node *en = sv_yaml_get(fit, "enabled");
    f->enabled =
        en && en->scalar && (!g_ascii_strcasecmp(en->scalar, "true") || !strcmp(en->scalar, "1"));
    if (!f->enabled)
        return TRUE;
    g_autofree char *where = g_strdup_printf("%s/meta.yaml: skew_fit", root);
    sv_yaml_node *top_def = sv_yaml_get(fit, "alpha_default");
    g_autofree char *tpkey = g_strdup_printf("%d", tp);
    sv_yaml_node *entry = sv_yaml_get(sv_yaml_get(fit, "per_tp"), tpkey);
    if (!entry || entry->kind != SV_YAML_MAP) {
        f->have_entry = FALSE;
        return alpha_of(top_def, where, &f->alpha_default, error);
    }
    f->have_entry = TRUE;
    if (!alpha_of(sv_yaml_get(entry, "alpha_default"), where, &f->alpha_default, error))
        return FALSE;
    sv_yaml_node *axes = sv_yaml_get(entry, "bucket_axes");
    if (!axes)
        axes = sv_yaml_get(fit, "bucket_axes");
    if (axes &&
        (!axis_from_yaml(&f->n_ax, axes, "n_bins", "n_labels", where, error) ||
         !axis_from_yaml(&f->sr_ax, axes, "skew_rate_bins", "skew_rate_labels", where, error) ||
         !axis_from_yaml(&f->kvb_ax, axes, "kv_big_bins", "kv_big_labels", where, error) ||
         !axis_from_yaml(&f->kp_ax, axes, "kp_bins", "kp_labels", where, error)))
        return FALSE;
    sv_yaml_node *bt = sv_yaml_get(entry, "bucket_table");
    if (!bt || !bt->scalar)
        return TRUE; /* no table: every bucket takes alpha_default */
    /* LLMServingSim only warns when the table is missing; a bundle that names a table it does
     * not ship is broken, so this is an error here. */
    g_autofree char *path = g_strdup_printf("%s/%s", root, bt->scalar);
    g_autoptr(sv_compute_table) c = sv_compute__csv_load(path, error);
    if (!c)
        return FALSE;
    int lc = -1;
    for (guint i = 0; i < c->header->len; i++)
        if (!strcmp(c->header->pdata[i], "layer"))
            lc = (int)i;
    int pc = sv_compute__csv_col(c, "pc", error), nl, sl, kl, pl, al;
    if (pc < 0 || (nl = sv_compute__csv_col(c, "n_label", error)) < 0 ||
        (sl = sv_compute__csv_col(c, "skew_rate_label", error)) < 0 ||
        (kl = sv_compute__csv_col(c, "kv_big_label", error)) < 0 ||
        (pl = sv_compute__csv_col(c, "kp_label", error)) < 0 ||
        (al = sv_compute__csv_col(c, "alpha", error)) < 0)
        return FALSE;
    for (guint r = 0; r < c->rows->len; r++) {
        char **cell = c->rows->pdata[r];
        double pcv, a;
        if (!sv_compute__csv_double(c, r, pc, &pcv, error) ||
            !sv_compute__csv_double(c, r, al, &a, error))
            return FALSE;
        char *key = g_strdup_printf("%s%spc=%" G_GINT64_FORMAT "|%s|%s|%s|%s",
                                    lc >= 0 ? cell[lc] : "", lc >= 0 ? "|" : "", (int64_t)pcv,
                                    cell[nl], cell[sl], cell[kl], cell[pl]);
        g_hash_table_replace(f->alpha, key, g_memdup2(&a, sizeof a));
    }
    return TRUE;
}

/* _bucket_label: buckets are (bins[i], bins[i+1]]; above the last edge, the last label. */
static const char *bucket_label(const struct sv_compute_skew_axis *a, double v)
{
    for (int i = 0; i < a->n; i++)
        if (v <= a->bins[i + 1])
            return a->labels[i];
    return a->labels[a->n - 1];
}

double sv_compute_skew_alpha(sv_compute_latency *lat, const struct sv_compute_batch_shape *s)
{
    const struct sv_compute_skew_fit *f = &lat->skew;
    if (lat->backend != SV_COMPUTE_LATENCY_PROFILE || !f->enabled)
        return 0;
    if (!f->have_entry)
        return f->alpha_default;
    int64_t gap = s->decode_kv_max - s->decode_kv_min;
    double sr = gap > 0 ? (double)(s->decode_kv_mean - s->decode_kv_min) / (double)gap : 0.5;
    sr = sr < 0 ? 0 : sr > 1 ? 1 : sr;
    char bucket[256];
    g_snprintf(bucket, sizeof bucket, "pc=%" G_GINT64_FORMAT "|%s|%s|%s|%s", s->n_prefill_tokens,
               bucket_label(&f->n_ax, (double)s->n_decode), bucket_label(&f->sr_ax, sr),
               bucket_label(&f->kvb_ax, (double)s->decode_kv_max),
               bucket_label(&f->kp_ax, (double)s->prefill_kv));
    char key[300];
    g_snprintf(key, sizeof key, "attention|%s", bucket);
    const double *a = g_hash_table_lookup(f->alpha, key);
    if (!a)
        a = g_hash_table_lookup(f->alpha, bucket);
    return a ? *a : f->alpha_default;
}

/* ---- bundle ---------------------------------------------------------------------------------- */

static gboolean check_coverage(sv_compute_latency *lat, GError **error)
{
    const struct sv_compute_layer_seq *q = lat->seq;
    const sv_compute_op_kind *lists[4] = {q->prologue, q->pre_attn, q->post_attn, q->mlp};
    int counts[4] = {q->n_prologue, q->n_pre_attn, q->n_post_attn, q->n_mlp};
    for (int l = 0; l < 5; l++) {
        const sv_compute_op_kind *ops = l < 4 ? lists[l] : q->head;
        int n = l < 4 ? counts[l] : q->n_head;
        for (int i = 0; i < n; i++) {
            sv_compute_op_kind op = ops[i];
            sv_compute_op_category_kind cat = sv_compute_op_category(op);
            const struct sv_compute_tp_tables *t = q->tp_stable[op] ? lat->t_1 : lat->t_tp;
            const char *file = NULL;
            if (cat == SV_COMPUTE_OP_CAT_DENSE && !t->has_dense[op])
                file = "dense.csv";
            else if (cat == SV_COMPUTE_OP_CAT_PER_SEQUENCE && !t->has_dense[op])
                file = "per_sequence.csv";
            else if (cat == SV_COMPUTE_OP_CAT_ATTENTION && !lat->t_tp->has_attn)
                file = "attention.csv", t = lat->t_tp;
            else if (cat == SV_COMPUTE_OP_CAT_MOE && !lat->t_1->has_moe)
                file = "moe.csv", t = lat->t_1;
            if (file) {
                g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING,
                            "no profile for layer %s (needed by %s): %s/tp%d/%s",
                            sv_compute_op_name(op), lat->model.name, lat->dir, t->tp, file);
                return FALSE;
            }
        }
    }
    return TRUE;
}

gboolean sv_compute__profile_load(sv_compute_latency *lat, const char *variant_dir, GError **error)
{
    lat->dir = g_strdup(variant_dir);
    if (!g_file_test(variant_dir, G_FILE_TEST_IS_DIR)) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING,
                    "profile variant folder not found: %s", variant_dir);
        return FALSE;
    }
    g_autofree char *meta_path = g_strdup_printf("%s/meta.yaml", variant_dir);
    if (!g_file_test(meta_path, G_FILE_TEST_IS_REGULAR)) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING, "meta.yaml missing: %s",
                    meta_path);
        return FALSE;
    }
    GError *e = NULL;
    g_autoptr(sv_yaml_node) meta = sv_yaml_load(meta_path, &e);
    if (!meta) {
        g_set_error_literal(error, SV_COMPUTE_ERROR,
                            g_error_matches(e, SV_CORE_ERROR, SV_CORE_ERROR_IO)
                                ? SV_COMPUTE_ERROR_MISSING
                                : SV_COMPUTE_ERROR_PARSE,
                            e->message);
        g_error_free(e);
        return FALSE;
    }
    g_autofree char *tp_dir = g_strdup_printf("%s/tp%d", variant_dir, lat->tp);
    if (!g_file_test(tp_dir, G_FILE_TEST_IS_DIR)) {
        GString *avail = g_string_new(NULL);
        for (int t = 1; t <= 1024; t++) {
            g_autofree char *d = g_strdup_printf("%s/tp%d", variant_dir, t);
            if (g_file_test(d, G_FILE_TEST_IS_DIR))
                g_string_append_printf(avail, "%stp%d", avail->len ? ", " : "", t);
        }
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING,
                    "no profile for tp=%d: %s missing (available: %s)", lat->tp, tp_dir,
                    avail->len ? avail->str : "none");
        g_string_free(avail, TRUE);
        return FALSE;
    }
    if (!(lat->t_tp = load_tp(variant_dir, lat->tp, error)))
        return FALSE;
    lat->t_1 = lat->t_tp;
    g_autofree char *tp1 = g_strdup_printf("%s/tp1", variant_dir);
    /* tp_stable layers and MoE are read from tp1 when it exists (_effective_tp, _lookup_moe). */
    if (lat->tp != 1 && g_file_test(tp1, G_FILE_TEST_IS_DIR))
        if (!(lat->t_1 = load_tp(variant_dir, 1, error)))
            return FALSE;
    if (!load_skew(&lat->skew, meta, variant_dir, lat->tp, error))
        return FALSE;
    return check_coverage(lat, error);
}

static double lookup_attention_skew(sv_compute_latency *lat, const struct sv_compute_batch_shape *s)
{
    const struct sv_compute_attn_table *a = &lat->t_tp->attn;
    double t_mean = sv_compute__attn_lookup(a, s->n_prefill_tokens, s->prefill_kv, s->n_decode,
                                            s->decode_kv_mean);
    if (s->n_decode <= 1 || s->decode_kv_max == s->decode_kv_mean)
        return t_mean;
    double alpha = sv_compute_skew_alpha(lat, s);
    if (alpha == 0)
        return t_mean;
    double t_max = sv_compute__attn_lookup(a, s->n_prefill_tokens, s->prefill_kv, s->n_decode,
                                           s->decode_kv_max);
    if (t_max <= t_mean)
        return t_mean;
    double v = nearbyint(t_mean + alpha * (t_max - t_mean)); /* Python round(): half to even */
    return v < 1 ? 1 : v;
}

double sv_compute_attention_lookup(sv_compute_latency *lat, int64_t prefill_chunk,
                                   int64_t kv_prefill, int64_t n_decode, int64_t kv_decode)
{
    SV_ASSERT(lat->backend == SV_COMPUTE_LATENCY_PROFILE);
    return sv_compute__attn_lookup(&lat->t_tp->attn, prefill_chunk, kv_prefill, n_decode,
                                   kv_decode);
}

static double trunc_at_least_1(double v)
{
    v = trunc(v);
    return v < 1 ? 1 : v;
}

double sv_compute__profile_op_ns(sv_compute_latency *lat, sv_compute_op_kind op,
                                 const struct sv_compute_batch_shape *s)
{
    const struct sv_compute_tp_tables *t = lat->seq->tp_stable[op] ? lat->t_1 : lat->t_tp;
    switch (sv_compute_op_category(op)) {
    case SV_COMPUTE_OP_CAT_DENSE:
        return trunc_at_least_1(
            sv_compute__lookup_1d(&t->dense[op], (double)(s->tokens > 1 ? s->tokens : 1)));
    case SV_COMPUTE_OP_CAT_PER_SEQUENCE:
        return trunc_at_least_1(
            sv_compute__lookup_1d(&t->dense[op], (double)(s->n_seqs > 1 ? s->n_seqs : 1)));
    case SV_COMPUTE_OP_CAT_ATTENTION:
        if (s->n_prefill_tokens == 0 && s->n_decode == 0)
            return 0; /* _emit_npu_attention emits nothing */
        return lookup_attention_skew(lat, s);
    case SV_COMPUTE_OP_CAT_MOE: {
        int64_t tok = s->moe_local_tokens, ae = s->moe_activated_experts;
        if (tok <= 0)
            tok = s->tokens;
        if (tok <= 0)
            return 0; /* a rank with no tokens emits no expert node */
        if (ae <= 0) {
            ae = tok * lat->model.experts_per_tok;
            if (ae > lat->model.num_experts)
                ae = lat->model.num_experts;
        }
        return trunc_at_least_1(
            sv_compute__lookup_2d(&lat->t_1->moe, (double)(ae > 1 ? ae : 1), (double)tok));
    }
    }
    return 0;
}

/* ---- legacy perf_models ------------------------------------------------------------------------
 * layers.csv (layer_name,input,kv_cache,tp_size,latency(ns)) by input tokens; attention from
 * predictions/attn_prefill_predictions.csv (kv_cache_size,prefill_chunk_size,prediction) and
 * attn_decode_predictions.csv (batch_size,kv_cache_size,prediction), in ns. Canonical ops are
 * sums of the legacy parts (qkv_proj = q_proj + k_proj + v_proj, gate_up_proj = gate_proj +
 * up_proj); layernorm is the mean of input_layernorm and post_layernorm, so the two layernorm
 * slots of a layer add up to both. The legacy layout has no sampler (it costs 0).
 *
 * As LLMServingSim's ISPASS'26 trace_generator reads the same files (_synthesize_trace,
 * _get_perf_row): MoE models have `gate` (the router) and `expert.w1/w2/w3` rows instead of
 * gate/up/down_proj and no act_fn in their MoE block; a hardware folder whose name contains
 * "TPU" takes the nearest profiled input of each layer (its profile misses inputs), a layer
 * without rows costs 1 ns (the TPU profile has no k_proj or v_proj), and rotary embedding is
 * part of its attention. Only the layers of the model's sequence are read. */

void sv_compute__legacy_free(struct sv_compute_legacy_tables *l)
{
    if (!l)
        return;
    for (int i = 0; i < SV_COMPUTE_OP_COUNT; i++) {
        table1d_clear(&l->layer[i]);
        for (int p = 0; p < SV_COMPUTE_LEGACY_MAX_PARTS; p++)
            table1d_clear(&l->part[i][p]);
    }
    table2d_clear(&l->prefill);
    table2d_clear(&l->decode);
    table1d_clear(&l->gate);
    table1d_clear(&l->expert);
    g_free(l);
}

/* The rows of one legacy part (layer_name == part), sorted by input. */
static gboolean legacy_rows(const sv_compute_table *c, int nc, const char *part, GArray *rows,
                            GError **error)
{
    static const char *const kcols[] = {"input"};
    if (!read_rows(c, kcols, 1, "latency(ns)", FALSE, nc, part, rows, error))
        return FALSE;
    if (rows->len > 0)
        sort_dedupe(rows);
    return TRUE;
}

static gboolean legacy_parts(const sv_compute_table *c, const char *path, const char *const *parts,
                             double scale, struct sv_compute_table1d *out, GError **error)
{
    int nc = sv_compute__csv_col(c, "layer_name", error);
    if (nc < 0)
        return FALSE;
    g_autoptr(GArray) sum = NULL;
    for (int p = 0; parts[p]; p++) {
        g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(struct kv_row));
        if (!legacy_rows(c, nc, parts[p], rows, error))
            return FALSE;
        if (rows->len == 0) {
            g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING,
                        "no rows for layer_name %s in %s", parts[p], path);
            return FALSE;
        }
        if (!sum) {
            sum = g_steal_pointer(&rows);
            continue;
        }
        if (rows->len != sum->len) {
            g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_INVALID,
                        "layer_name %s has %u input points, %s has %u: %s", parts[p], rows->len,
                        parts[0], sum->len, path);
            return FALSE;
        }
        for (guint i = 0; i < sum->len; i++)
            g_array_index(sum, struct kv_row, i).v += g_array_index(rows, struct kv_row, i).v;
    }
    for (guint i = 0; i < sum->len; i++)
        g_array_index(sum, struct kv_row, i).v *= scale;
    table1d_from(out, (struct kv_row *)sum->data, (int)sum->len, 0);
    return TRUE;
}

/* TPU rules: each part on its own (an absent part is an empty table: 1 ns). */
static gboolean legacy_parts_tpu(const sv_compute_table *c, const char *const *parts,
                                 struct sv_compute_legacy_tables *l, sv_compute_op_kind op,
                                 double scale, GError **error)
{
    int nc = sv_compute__csv_col(c, "layer_name", error);
    if (nc < 0)
        return FALSE;
    for (int p = 0; parts[p]; p++) {
        g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(struct kv_row));
        if (!legacy_rows(c, nc, parts[p], rows, error))
            return FALSE;
        table1d_from(&l->part[op][p], (struct kv_row *)rows->data, (int)rows->len, 0);
        l->n_parts[op] = p + 1;
    }
    l->part_scale[op] = scale;
    return TRUE;
}

/* LLMServingSim's TPU fallback: the row of the nearest input (the lower one on a tie: its files
 * are in ascending input order, and the first row wins); 1 ns for a layer without rows. */
static double nearest_1d(const struct sv_compute_table1d *t, double q)
{
    if (t->n == 0)
        return 1;
    int best = 0;
    for (int i = 1; i < t->n; i++)
        if (fabs((double)t->keys[i] - q) < fabs((double)t->keys[best] - q))
            best = i;
    return t->vals[best];
}

static gboolean legacy_2d(const char *path, const char *c0, const char *c1,
                          struct sv_compute_table2d *out, GError **error)
{
    g_autoptr(sv_compute_table) c = sv_compute__csv_load(path, error);
    if (!c)
        return FALSE;
    const char *cols[] = {c0, c1};
    g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(struct kv_row));
    if (!read_rows(c, cols, 2, "prediction", FALSE, -1, NULL, rows, error))
        return FALSE;
    if (rows->len == 0) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING, "no rows in %s", path);
        return FALSE;
    }
    sort_dedupe(rows);
    table2d_from(out, rows);
    return TRUE;
}

/* LLMServingSim keys its TPU rules on the hardware name: the folder <hw> of
 * <perf_models>/<hw>/<org>/<model>/tp<N>. */
static gboolean legacy_is_tpu(const char *tp_dir)
{
    g_autofree char *d1 = g_path_get_dirname(tp_dir);
    g_autofree char *d2 = g_path_get_dirname(d1);
    g_autofree char *d3 = g_path_get_dirname(d2);
    g_autofree char *hw = g_path_get_basename(d3);
    g_autofree char *up = g_ascii_strup(hw, -1);
    return strstr(up, "TPU") != NULL;
}

static const struct legacy_map {
    sv_compute_op_kind op;
    const char *parts[SV_COMPUTE_LEGACY_MAX_PARTS + 1];
    double scale;
} legacy_map[] = {
    {SV_COMPUTE_OP_EMBEDDING, {"embedding"}, 1},
    {SV_COMPUTE_OP_LAYERNORM, {"input_layernorm", "post_layernorm"}, 0.5},
    {SV_COMPUTE_OP_QKV_PROJ, {"q_proj", "k_proj", "v_proj"}, 1},
    {SV_COMPUTE_OP_ROTARY_EMB, {"rope"}, 1},
    {SV_COMPUTE_OP_O_PROJ, {"o_proj"}, 1},
    {SV_COMPUTE_OP_GATE_UP_PROJ, {"gate_proj", "up_proj"}, 1},
    {SV_COMPUTE_OP_ACT_FN, {"act_fn"}, 1},
    {SV_COMPUTE_OP_DOWN_PROJ, {"down_proj"}, 1},
    {SV_COMPUTE_OP_FINAL_LAYERNORM, {"final_layernorm"}, 1},
    {SV_COMPUTE_OP_LM_HEAD, {"lm_head"}, 1},
};

static gboolean seq_uses(const struct sv_compute_layer_seq *q, sv_compute_op_kind op)
{
    const sv_compute_op_kind *lists[] = {q->prologue, q->pre_attn, q->post_attn, q->mlp, q->head};
    const int ns[] = {q->n_prologue, q->n_pre_attn, q->n_post_attn, q->n_mlp, q->n_head};
    for (int l = 0; l < 5; l++)
        for (int i = 0; i < ns[l]; i++)
            if (lists[l][i] == op)
                return TRUE;
    return FALSE;
}

gboolean sv_compute__legacy_load(sv_compute_latency *lat, const char *tp_dir, GError **error)
{
    lat->dir = g_strdup(tp_dir);
    struct sv_compute_legacy_tables *l = lat->legacy = g_new0(struct sv_compute_legacy_tables, 1);
    g_autofree char *lp = g_strdup_printf("%s/layers.csv", tp_dir);
    const struct sv_compute_layer_seq *q = lat->seq;
    if (seq_uses(q, SV_COMPUTE_OP_QK_NORM)) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING,
                    "no legacy profile for layer qk_norm (%s): %s", lat->model.name, lp);
        return FALSE;
    }
    g_autoptr(sv_compute_table) c = sv_compute__csv_load(lp, error);
    if (!c)
        return FALSE;
    l->tpu = legacy_is_tpu(tp_dir);
    for (size_t i = 0; i < G_N_ELEMENTS(legacy_map); i++) {
        const struct legacy_map *e = &legacy_map[i];
        if (!seq_uses(q, e->op))
            continue;
        l->has_layer[e->op] = TRUE;
        if (l->tpu) {
            if (e->op != SV_COMPUTE_OP_ROTARY_EMB &&
                !legacy_parts_tpu(c, e->parts, l, e->op, e->scale, error))
                return FALSE;
            continue;
        }
        if (!legacy_parts(c, lp, e->parts, e->scale, &l->layer[e->op], error))
            return FALSE;
    }
    if (q->n_mlp && q->mlp_is_moe) {
        static const char *const gate[] = {"gate", NULL};
        static const char *const expert[] = {"expert.w1", "expert.w2", "expert.w3", NULL};
        if (!legacy_parts(c, lp, gate, 1, &l->gate, error) ||
            !legacy_parts(c, lp, expert, 1, &l->expert, error))
            return FALSE;
        l->moe = TRUE;
    }
    g_autofree char *pp = g_strdup_printf("%s/predictions/attn_prefill_predictions.csv", tp_dir);
    g_autofree char *dp = g_strdup_printf("%s/predictions/attn_decode_predictions.csv", tp_dir);
    if (!legacy_2d(pp, "kv_cache_size", "prefill_chunk_size", &l->prefill, error) ||
        !legacy_2d(dp, "batch_size", "kv_cache_size", &l->decode, error))
        return FALSE;
    return TRUE;
}

/* The MoE block as LLMServingSim's legacy trace_generator times it: the router on the batch's
 * tokens, then the experts split over the TP group (expert e on rank e mod tp, unsharded: the
 * legacy expert rows do not change with tp), tokens assigned by its default "RR" routing (token
 * t to experts t, t+1, ..., t+k-1 mod E), each rank running its experts one after another on the
 * tokens each got, one token at least (an expert without tokens still runs); the block waits for
 * the slowest rank. counts[e] = #{t < tokens : (e - t) mod E < k}, in closed form. */
static double legacy_moe_ns(const sv_compute_latency *lat, const struct sv_compute_batch_shape *s)
{
    const struct sv_compute_legacy_tables *l = lat->legacy;
    int64_t tok = s->tokens;
    if (tok <= 0)
        return 0;
    int64_t E = MAX(lat->model.num_experts, (int64_t)1);
    int64_t k = MIN(MAX(lat->model.experts_per_tok, (int64_t)1), E);
    int64_t tp = MAX((int64_t)lat->tp, (int64_t)1);
    int64_t cycles = tok / E, rest = tok % E;
    double slowest = 0;
    for (int64_t r = 0; r < tp; r++) {
        double t = 0;
        for (int64_t e = r; e < E; e += tp) {
            int64_t n = cycles * k;
            for (int64_t j = 0; j < k; j++)
                n += ((e - j) % E + E) % E < rest;
            t += sv_compute__lookup_1d(&l->expert, (double)MAX(n, (int64_t)1));
        }
        slowest = MAX(slowest, t);
    }
    return sv_compute__lookup_1d(&l->gate, (double)tok) + slowest;
}

double sv_compute__legacy_op_ns(sv_compute_latency *lat, sv_compute_op_kind op,
                                const struct sv_compute_batch_shape *s)
{
    const struct sv_compute_legacy_tables *l = lat->legacy;
    if (op == SV_COMPUTE_OP_SAMPLER)
        return 0;
    if (op == SV_COMPUTE_OP_ATTENTION) {
        double v = 0;
        if (s->n_prefill_tokens > 0)
            v += sv_compute__lookup_2d(&l->prefill, (double)s->prefill_kv,
                                       (double)s->n_prefill_tokens);
        if (s->n_decode > 0)
            v += sv_compute__lookup_2d(&l->decode, (double)s->n_decode, (double)s->decode_kv_mean);
        return trunc(v);
    }
    if (op == SV_COMPUTE_OP_MOE) {
        SV_ASSERT(l->moe);
        return trunc(legacy_moe_ns(lat, s));
    }
    SV_ASSERT(l->has_layer[op]);
    double key = (double)(op == SV_COMPUTE_OP_LM_HEAD ? s->n_seqs : s->tokens);
    if (key < 1)
        key = 1;
    if (l->tpu) {
        if (op == SV_COMPUTE_OP_ROTARY_EMB)
            return 0; /* inside the TPU profile's attention */
        double v = 0;
        for (int p = 0; p < l->n_parts[op]; p++)
            v += nearest_1d(&l->part[op][p], key);
        return trunc_at_least_1(v * l->part_scale[op]);
    }
    return trunc_at_least_1(sv_compute__lookup_1d(&l->layer[op], key));
}
