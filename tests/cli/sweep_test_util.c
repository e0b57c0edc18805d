/* Helpers of the sweep tests (sweep_test_util.h). */
#include "tests/cli/sweep_test_util.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "tests/test_util.h"

char *sv_sweep_test_spec(const char *dir, const char *name, const char *run, const char *axes)
{
    char *p = g_build_filename(dir, name, NULL);
    g_autofree char *text = g_strconcat(run, axes, NULL);
    g_assert(g_file_set_contents(p, text, -1, NULL));
    return p;
}

static int run(const char *spec, const char *out_dir, const char *a1, const char *a2, char **out,
               char **err)
{
    const char *argv[] = {SV_SERVESIM_BIN, "sweep", spec, "-o", out_dir, "-q", a1, a2, NULL};
    if (!a1)
        argv[6] = NULL;
    g_autofree char *o = NULL, *e = NULL;
    int st;
    if (!sv_test_spawn(argv, &o, &e, &st))
        return -1;
    if (!err && e && *e)
        fprintf(stderr, "%s", e);
    if (out)
        *out = g_steal_pointer(&o);
    if (err)
        *err = g_steal_pointer(&e);
    return st;
}

int sv_sweep_test_run(const char *spec, const char *out_dir, const char *a1, const char *a2,
                      char **out)
{
    return run(spec, out_dir, a1, a2, out, NULL);
}

int sv_sweep_test_run_err(const char *spec, const char *out_dir, const char *a1, const char *a2,
                          char **err)
{
    return run(spec, out_dir, a1, a2, NULL, err);
}

/* One CSV line into fields (quoted fields with "" for a quote; no line breaks inside). */
static char **split_csv(const char *line)
{
    GPtrArray *f = g_ptr_array_new();
    GString *cur = g_string_new(NULL);
    gboolean quoted = FALSE;
    for (const char *c = line;; c++) {
        if (quoted) {
            if (*c == '"' && c[1] == '"') {
                g_string_append_c(cur, '"');
                c++;
            } else if (*c == '"') {
                quoted = FALSE;
            } else if (*c) {
                g_string_append_c(cur, *c);
            } else {
                break;
            }
            continue;
        }
        if (*c == '"') {
            quoted = TRUE;
        } else if (*c == ',' || !*c) {
            g_ptr_array_add(f, g_strdup(cur->str));
            g_string_truncate(cur, 0);
            if (!*c)
                break;
        } else {
            g_string_append_c(cur, *c);
        }
    }
    g_string_free(cur, TRUE);
    g_ptr_array_add(f, NULL);
    return (char **)g_ptr_array_free(f, FALSE);
}

GPtrArray *sv_sweep_test_csv(const char *out_dir)
{
    GPtrArray *rows = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
    g_autofree char *p = g_build_filename(out_dir, "sweep.csv", NULL);
    g_autofree char *text = NULL;
    if (!g_file_get_contents(p, &text, NULL, NULL))
        return rows;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i]; i++)
        if (*lines[i])
            g_ptr_array_add(rows, split_csv(lines[i]));
    return rows;
}

const char *sv_sweep_test_col(GPtrArray *rows, guint k, const char *col)
{
    if (rows->len < k + 2) {
        CU_FAIL("sweep.csv has no such row");
        return "";
    }
    char **h = rows->pdata[0], **r = rows->pdata[k + 1];
    for (guint i = 0; h[i]; i++)
        if (!strcmp(h[i], col)) {
            if (i < g_strv_length(r))
                return r[i];
            break;
        }
    fprintf(stderr, "sweep.csv: no column %s in row %u\n", col, k);
    CU_FAIL("sweep.csv column missing");
    return "";
}

char *sv_sweep_test_read(const char *out_dir, guint k, const char *file)
{
    g_autofree char *name = g_strdup_printf("%04u", k);
    g_autofree char *p = g_build_filename(out_dir, "points", name, file, NULL);
    char *text = NULL;
    if (!g_file_get_contents(p, &text, NULL, NULL))
        return g_strdup("");
    return text;
}

gboolean sv_sweep_test_point_exists(const char *out_dir, guint k)
{
    g_autofree char *name = g_strdup_printf("%04u", k);
    g_autofree char *p = g_build_filename(out_dir, "points", name, NULL);
    return g_file_test(p, G_FILE_TEST_EXISTS);
}

gboolean sv_sweep_test_same_file(const char *a, const char *b, const char *rel)
{
    g_autofree char *pa = g_build_filename(a, rel, NULL), *pb = g_build_filename(b, rel, NULL);
    g_autofree char *ta = NULL, *tb = NULL;
    gsize la = 0, lb = 0;
    if (!g_file_get_contents(pa, &ta, &la, NULL) || !g_file_get_contents(pb, &tb, &lb, NULL)) {
        fprintf(stderr, "\n%s: missing in %s or %s\n", rel, a, b);
        return FALSE;
    }
    if (la != lb || memcmp(ta, tb, la) != 0) {
        fprintf(stderr, "\n%s differs between %s and %s\n", rel, a, b);
        return FALSE;
    }
    return TRUE;
}

/* Every file under a/rel and b/rel, both ways. */
static gboolean same_dir(const char *a, const char *b, const char *rel, gboolean check)
{
    g_autofree char *pa = g_build_filename(a, rel, NULL);
    g_autoptr(GDir) d = g_dir_open(pa, 0, NULL);
    if (!d) {
        fprintf(stderr, "\ncannot open %s\n", pa);
        return FALSE;
    }
    gboolean ok = TRUE;
    for (const char *n; (n = g_dir_read_name(d));) {
        g_autofree char *r = g_build_filename(rel, n, NULL);
        g_autofree char *p = g_build_filename(a, r, NULL);
        if (g_file_test(p, G_FILE_TEST_IS_DIR))
            ok = same_dir(a, b, r, check) && ok;
        else if (check)
            ok = sv_sweep_test_same_file(a, b, r) && ok;
        else {
            g_autofree char *q = g_build_filename(b, r, NULL);
            if (!g_file_test(q, G_FILE_TEST_EXISTS)) {
                fprintf(stderr, "\n%s: only in %s\n", r, a);
                ok = FALSE;
            }
        }
    }
    return ok;
}

gboolean sv_sweep_test_same_tree_under(const char *a, const char *b, const char *sub)
{
    gboolean ab = same_dir(a, b, sub, TRUE);
    gboolean ba = same_dir(b, a, sub, FALSE);
    return ab && ba;
}

gboolean sv_sweep_test_same_tree(const char *a, const char *b)
{
    return sv_sweep_test_same_tree_under(a, b, ".");
}
