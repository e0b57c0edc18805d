/* Tests for the profile tables' CSV reading (compute/util.c): every number a cell holds reads to
 * the same double g_ascii_strtod gives (bit for bit: the fast decimal path must not change a
 * profile's times), bad cells are errors naming file, line and column, and fields are trimmed
 * as before (spaces, one pair of quotes). */
#include "compute/compute_internal.h"
#include "tests/test_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void test_numbers_exact(void)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(11);
    GString *csv = g_string_new("layer,value\n");
    GPtrArray *texts = g_ptr_array_new_with_free_func(g_free);
    /* hand-picked: halfway and near-halfway cases, 15 and 16 digits, signs, forms strtod takes
     * that the fast path leaves to it */
    static const char *const fixed[] = {
        "0",
        "-0",
        "0.0",
        "-0.0",
        "1.",
        ".5",
        "-.25",
        "8.35233",
        "714.006",
        "0.1",
        "0.3",
        "2.675",
        "1.005",
        "999999999999999",
        "9999999999999999",
        "123456789012345.6",
        "0.000000000000001",
        "0.0000000000000001",
        "9007199254740993",
        "1e3",
        "2.5E-3",
        "+7",
        "00012.500",
    };
    for (size_t i = 0; i < G_N_ELEMENTS(fixed); i++)
        g_ptr_array_add(texts, g_strdup(fixed[i]));
    for (int i = 0; i < 20000; i++) {
        int nd = g_rand_int_range(r, 1, 18), nf = g_rand_int_range(r, 0, nd + 1);
        GString *t = g_string_new(g_rand_int_range(r, 0, 4) == 0 ? "-" : "");
        for (int d = 0; d < nd; d++) {
            if (d == nd - nf && nf > 0)
                g_string_append_c(t, '.');
            g_string_append_c(t, (char)('0' + g_rand_int_range(r, 0, 10)));
        }
        g_ptr_array_add(texts, g_string_free(t, FALSE));
    }
    for (guint i = 0; i < texts->len; i++)
        g_string_append_printf(csv, "x, %s \n", (char *)texts->pdata[i]);
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *p = g_build_filename(dir, "n.csv", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(p, csv->str, -1, NULL));
    g_string_free(csv, TRUE);

    g_autoptr(GError) err = NULL;
    g_autoptr(sv_compute_table) c = sv_compute__csv_load(p, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL_FATAL(c->rows->len, texts->len);
    int mismatches = 0;
    for (guint i = 0; i < texts->len; i++) {
        double v = -1, want = g_ascii_strtod(texts->pdata[i], NULL);
        CU_ASSERT_FATAL(sv_compute__csv_double(c, i, 1, &v, &err));
        if (memcmp(&v, &want, sizeof v) != 0 && mismatches++ < 5)
            fprintf(stderr, "\n'%s': %.17g, strtod %.17g\n", (char *)texts->pdata[i], v, want);
    }
    CU_ASSERT_EQUAL(mismatches, 0);
    g_ptr_array_unref(texts);
    sv_test_rmtree(dir);
}

static void test_cells_and_errors(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *p = g_build_filename(dir, "t.csv", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(p,
                                        "  layer , tokens,time_us\r\n"
                                        "\n"
                                        "\"qkv_proj\",  16 ,\t1.5\n"
                                        "o_proj,32,1.2.3\n"
                                        "o_proj,,7\n",
                                        -1, NULL));
    g_autoptr(GError) err = NULL;
    g_autoptr(sv_compute_table) c = sv_compute__csv_load(p, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL_FATAL(c->header->len, 3);
    CU_ASSERT_STRING_EQUAL(c->header->pdata[0], "layer");
    CU_ASSERT_EQUAL_FATAL(c->rows->len, 3);
    char **row0 = c->rows->pdata[0];
    CU_ASSERT_STRING_EQUAL(row0[0], "qkv_proj");
    CU_ASSERT_STRING_EQUAL(row0[1], "16");
    CU_ASSERT_STRING_EQUAL(row0[2], "1.5");
    CU_ASSERT_PTR_NULL(row0[3]);
    double v = 0;
    CU_ASSERT(sv_compute__csv_double(c, 0, 1, &v, &err) && v == 16);
    CU_ASSERT(sv_compute__csv_double(c, 0, 2, &v, &err) && v == 1.5);
    CU_ASSERT_FALSE(sv_compute__csv_double(c, 1, 2, &v, &err));
    g_autofree char *want = g_strdup_printf("%s:4: not a number \"1.2.3\" in column time_us", p);
    CU_ASSERT_STRING_EQUAL(err ? err->message : "", want);
    g_clear_error(&err);
    CU_ASSERT_FALSE(sv_compute__csv_double(c, 2, 1, &v, &err));
    g_autofree char *want2 = g_strdup_printf("%s:5: not a number \"\" in column tokens", p);
    CU_ASSERT_STRING_EQUAL(err ? err->message : "", want2);
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"numbers read as strtod reads them", test_numbers_exact},
        {"cells trimmed, errors name file, line, column", test_cells_and_errors},
        {NULL, NULL},
    };
    sv_test_add_suite("profile_csv", cases);
    return sv_test_run();
}
