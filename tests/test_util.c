#include "tests/test_util.h"

#include <CUnit/Basic.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

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

int sv_test_run(void)
{
    ensure_registry();
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    unsigned failed_tests = CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    if (CU_get_error() != CUE_SUCCESS)
        return 2;
    (void)failed;
    return failed_tests == 0 ? 0 : 1;
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
