#include "tests/test_util.h"

#include <CUnit/Basic.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* Names of the tests SV_REQUIRE_SHARED skipped (owned strings), for the summary. */
static GPtrArray *skipped_tests;

static void ensure_registry(void)
{
    if (CU_get_registry() == NULL && CU_initialize_registry() != CUE_SUCCESS) {
        fprintf(stderr, "cunit: cannot initialise registry\n");
        exit(2);
    }
}

void sv_test_add_suite(const char *suite, const sv_test_case *cases)
{
    ensure_registry();
    CU_pSuite s = CU_add_suite(suite, NULL, NULL);
    if (s == NULL) {
        fprintf(stderr, "cunit: cannot add suite %s\n", suite);
        exit(2);
    }
    for (const sv_test_case *c = cases; c->name != NULL; c++)
        CU_add_test(s, c->name, c->fn);
}

gboolean sv_test_shared(const char *rel, const char *why)
{
    g_autofree char *path = g_build_filename(SV_SHARED, rel, NULL);
    if (g_file_test(path, G_FILE_TEST_EXISTS))
        return TRUE;
    CU_pTest t = CU_get_current_test();
    const char *name = t != NULL && t->pName != NULL ? t->pName : "?";
    if (g_file_test(SV_SHARED, G_FILE_TEST_IS_DIR)) {
        /* The reference data is there but this file is not: it moved, and the test must say so. */
        g_autofree char *msg = g_strdup_printf("%s present but %s missing", SV_SHARED, path);
        CU_assertImplementation(CU_FALSE, __LINE__, msg, __FILE__, "", CU_FALSE);
        return FALSE;
    }
    printf("\nSKIP: %s: %s not found (%s)\n", name, path, why);
    if (skipped_tests == NULL)
        skipped_tests = g_ptr_array_new_with_free_func(g_free);
    /* One test may check several files; count it once. */
    gboolean seen = FALSE;
    for (guint i = 0; i < skipped_tests->len; i++)
        if (strcmp(g_ptr_array_index(skipped_tests, i), name) == 0)
            seen = TRUE;
    if (!seen)
        g_ptr_array_add(skipped_tests, g_strdup(name));
    return FALSE;
}

void sv_test_require_shared(const char *rel, const char *why)
{
    g_autofree char *path = g_build_filename(SV_SHARED, rel, NULL);
    if (g_file_test(SV_SHARED, G_FILE_TEST_IS_DIR) || g_file_test(path, G_FILE_TEST_EXISTS))
        return; /* present (or moved: the tests then fail and say which file) */
    printf("SKIP: %s not found (%s)\n", path, why);
    exit(SV_TEST_SKIP_CODE);
}

int sv_test_run(void)
{
    ensure_registry();
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned run = CU_get_number_of_tests_run();
    unsigned failed_tests = CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    if (CU_get_error() != CUE_SUCCESS)
        return 2;
    unsigned skipped = skipped_tests != NULL ? skipped_tests->len : 0;
    if (skipped > 0) {
        printf("\nSKIPPED %u of %u tests (%s not found):\n", skipped, run, SV_SHARED);
        for (guint i = 0; i < skipped; i++)
            printf("  %s\n", (const char *)g_ptr_array_index(skipped_tests, i));
        g_ptr_array_free(skipped_tests, TRUE);
        skipped_tests = NULL;
    }
    if (failed_tests != 0)
        return 1;
    return run > 0 && skipped == run ? SV_TEST_SKIP_CODE : 0;
}

gboolean sv_test_spawn(const char *const *argv, char **out, char **err, int *status)
{
    GError *error = NULL;
    int wait_status = 0;
    gboolean ok = g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, out, err,
                               &wait_status, &error);
    if (!ok) {
        fprintf(stderr, "spawn %s: %s\n", argv[0], error->message);
        g_error_free(error);
        return FALSE;
    }
    if (status != NULL) {
        if (WIFEXITED(wait_status))
            *status = WEXITSTATUS(wait_status);
        else
            *status = 128 + (WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0);
    }
    return TRUE;
}

gboolean sv_test_servesim(const char *bin, const char *cmd, const char *const *args, char **out,
                          char **err, int *status)
{
    GPtrArray *argv = g_ptr_array_new();
    g_autofree char *abs = g_canonicalize_filename(bin, NULL);
    g_ptr_array_add(argv, abs);
    g_ptr_array_add(argv, (char *)cmd);
    for (int i = 0; args[i]; i++)
        g_ptr_array_add(argv, (char *)args[i]);
    g_ptr_array_add(argv, NULL);
    gboolean ok = sv_test_spawn((const char *const *)argv->pdata, out, err, status);
    g_ptr_array_free(argv, TRUE);
    return ok;
}

int64_t sv_test_csv_int(const char *path, int row, const char *column)
{
    g_autofree char *csv = NULL;
    if (!g_file_get_contents(path, &csv, NULL, NULL))
        return -1;
    g_auto(GStrv) lines = g_strsplit(csv, "\n", -1);
    for (int i = 0; i <= row; i++)
        if (!lines[i] || !lines[i][0])
            return -1;
    g_auto(GStrv) head = g_strsplit(lines[0], ",", -1);
    g_auto(GStrv) cells = g_strsplit(lines[row], ",", -1);
    for (int k = 0; head[k] && cells[k]; k++)
        if (strcmp(head[k], column) == 0)
            return g_ascii_strtoll(cells[k], NULL, 10);
    return -1;
}

char *sv_test_slurp(const char *dir, const char *name)
{
    g_autofree char *p = g_build_filename(dir, name, NULL);
    char *text = NULL;
    CU_ASSERT(g_file_get_contents(p, &text, NULL, NULL));
    return text ? text : g_strdup("");
}

char *sv_test_tmpdir(void)
{
    GError *error = NULL;
    char *dir = g_dir_make_tmp("servesim-test-XXXXXX", &error);
    if (dir == NULL) {
        fprintf(stderr, "tmpdir: %s\n", error->message);
        exit(2);
    }
    return dir;
}

void sv_test_rmtree(const char *path)
{
    GDir *d = g_dir_open(path, 0, NULL);
    if (d != NULL) {
        const char *name;
        while ((name = g_dir_read_name(d)) != NULL) {
            char *child = g_build_filename(path, name, NULL);
            if (g_file_test(child, G_FILE_TEST_IS_DIR) &&
                !g_file_test(child, G_FILE_TEST_IS_SYMLINK))
                sv_test_rmtree(child);
            else
                g_unlink(child);
            g_free(child);
        }
        g_dir_close(d);
    }
    g_rmdir(path);
}

char *sv_test_write_cluster(const char *dir, const char *model, const char *hardware,
                            double mem_gib)
{
    char *path = g_build_filename(dir, "cluster.json", NULL);
    char num[G_ASCII_DTOSTR_BUF_SIZE];
    g_autofree char *text = g_strdup_printf(
        "{\"num_nodes\": 1, \"link_bw\": 16, \"link_latency\": 20000, \"nodes\": [{\n"
        "  \"num_instances\": 1,\n"
        "  \"cpu_mem\": {\"mem_size\": 512, \"mem_bw\": 256, \"mem_latency\": 0},\n"
        "  \"instances\": [{\"model_name\": \"%s\", \"hardware\": \"%s\",\n"
        "    \"npu_mem\": {\"mem_size\": %s, \"mem_bw\": 3350, \"mem_latency\": 0, "
        "\"mem_util\": 0.9},\n"
        "    \"num_npus\": 1, \"tp_size\": 1, \"pd_type\": null}]}]}\n",
        model, hardware, g_ascii_dtostr(num, sizeof num, mem_gib));
    if (!g_file_set_contents(path, text, -1, NULL)) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
    return path;
}
