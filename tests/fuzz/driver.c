/* Plain test driver of a fuzz target: runs every file given, and every file in every folder given
 * (sorted by name, not recursive), through LLVMFuzzerTestOneInput once. Built without libFuzzer,
 * so ctest replays the seed corpus and the minimized crash inputs under tests/fuzz/regressions/
 * on any compiler; a crash or sanitizer report fails the test. Exit status: 0 when every input
 * ran, 2 on a usage or I/O error (a path that does not exist is one: a typo must not pass).
 *
 * usage: fuzz_<name>_run FILE|DIR... */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int run_file(const char *path)
{
    g_autofree char *data = NULL;
    gsize len = 0;
    GError *e = NULL;
    if (!g_file_get_contents(path, &data, &len, &e)) {
        fprintf(stderr, "fuzz driver: %s\n", e->message);
        g_error_free(e);
        return 2;
    }
    LLVMFuzzerTestOneInput((const uint8_t *)data, len);
    return 0;
}

static gint cmp_str(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    unsigned long n = 0;
    for (int i = 1; i < argc; i++) {
        if (!g_file_test(argv[i], G_FILE_TEST_IS_DIR)) {
            if (!g_file_test(argv[i], G_FILE_TEST_EXISTS)) {
                fprintf(stderr, "fuzz driver: %s not found\n", argv[i]);
                return 2;
            }
            if (run_file(argv[i]) != 0)
                return 2;
            n++;
            continue;
        }
        GDir *d = g_dir_open(argv[i], 0, NULL);
        GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
        for (const char *nm; d && (nm = g_dir_read_name(d)) != NULL;)
            if (nm[0] != '.')
                g_ptr_array_add(names, g_build_filename(argv[i], nm, NULL));
        if (d)
            g_dir_close(d);
        g_ptr_array_sort(names, cmp_str);
        for (guint k = 0; k < names->len; k++) {
            if (g_file_test(names->pdata[k], G_FILE_TEST_IS_DIR))
                continue;
            if (run_file(names->pdata[k]) != 0) {
                g_ptr_array_free(names, TRUE);
                return 2;
            }
            n++;
        }
        g_ptr_array_free(names, TRUE);
    }
    printf("%s: %lu input%s ran\n", argv[0], n, n == 1 ? "" : "s");
    return 0;
}
