/* Shared helpers of the fuzz targets (fuzz.h). */
#include "fuzz.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *tmp_dir;
static char *tmp_path;
static GPtrArray *aux_paths; /* sv_fuzz_aux_file's, removed at exit */

static void log_handler(const gchar *domain, GLogLevelFlags level, const gchar *message,
                        gpointer user)
{
    if (level & (G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_ERROR)) {
        fprintf(stderr, "fuzz: %s %s: %s\n", domain ? domain : "",
                (level & G_LOG_LEVEL_ERROR) ? "error" : "critical", message);
        abort();
    }
}

static GLogWriterOutput log_writer(GLogLevelFlags level, const GLogField *fields, gsize n_fields,
                                   gpointer user)
{
    if (level & (G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_ERROR)) {
        for (gsize i = 0; i < n_fields; i++)
            if (strcmp(fields[i].key, "MESSAGE") == 0 && fields[i].length < 0)
                fprintf(stderr, "fuzz: critical: %s\n", (const char *)fields[i].value);
        abort();
    }
    return G_LOG_WRITER_HANDLED;
}

static void cleanup(void)
{
    if (tmp_path)
        g_unlink(tmp_path);
    for (guint i = 0; aux_paths && i < aux_paths->len; i++)
        g_unlink(aux_paths->pdata[i]);
    if (aux_paths)
        g_ptr_array_unref(aux_paths);
    if (tmp_dir)
        g_rmdir(tmp_dir);
    g_free(tmp_path);
    g_free(tmp_dir);
}

static void setup(void)
{
    g_log_set_default_handler(log_handler, NULL);
    g_log_set_writer_func(log_writer, NULL, NULL);
    g_log_set_always_fatal(G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_ERROR);
    GError *e = NULL;
    tmp_dir = g_dir_make_tmp("sv-fuzz-XXXXXX", &e);
    if (!tmp_dir) {
        fprintf(stderr, "fuzz: cannot make a temporary folder: %s\n", e->message);
        exit(2);
    }
    atexit(cleanup);
}

const char *sv_fuzz_input_file(const uint8_t *data, size_t size, const char *name)
{
    if (!tmp_dir)
        setup();
    if (tmp_path)
        g_unlink(tmp_path);
    g_free(tmp_path);
    tmp_path = g_build_filename(tmp_dir, name, NULL);
    FILE *fp = fopen(tmp_path, "wb");
    if (!fp || (size && fwrite(data, 1, size, fp) != size) || fclose(fp) != 0) {
        fprintf(stderr, "fuzz: cannot write %s\n", tmp_path);
        exit(2);
    }
    return tmp_path;
}

const char *sv_fuzz_aux_file(const char *name, const void *data, size_t size)
{
    if (!tmp_dir)
        setup();
    if (!aux_paths)
        aux_paths = g_ptr_array_new_with_free_func(g_free);
    char *path = NULL;
    for (guint i = 0; i < aux_paths->len && !path; i++) {
        g_autofree char *base = g_path_get_basename(aux_paths->pdata[i]);
        if (!strcmp(base, name))
            path = aux_paths->pdata[i];
    }
    if (!path) {
        path = g_build_filename(tmp_dir, name, NULL);
        g_ptr_array_add(aux_paths, path);
    }
    GError *e = NULL;
    if (!g_file_set_contents(path, data, (gssize)size, &e)) {
        fprintf(stderr, "fuzz: cannot write %s: %s\n", path, e->message);
        exit(2);
    }
    return path;
}

char *sv_fuzz_tmp_path(const char *name)
{
    if (!tmp_dir)
        setup();
    return g_build_filename(tmp_dir, name, NULL);
}

void sv_fuzz_check(gboolean ok, const GError *error, const char *path)
{
    if (g_getenv("SV_FUZZ_VERBOSE")) /* what each input ends in, when writing seeds */
        fprintf(stderr, "fuzz: %s\n", ok ? "ok" : error && error->message ? error->message : "?");
    if (ok) {
        if (error) {
            fprintf(stderr, "fuzz: success with an error set: %s\n", error->message);
            abort();
        }
        return;
    }
    if (!error || !error->message || !error->message[0]) {
        fprintf(stderr, "fuzz: failure without an error message (%s)\n", path);
        abort();
    }
    g_autofree char *base = g_path_get_basename(path);
    if (!strstr(error->message, base)) {
        fprintf(stderr, "fuzz: the error does not name the file %s: %s\n", base, error->message);
        abort();
    }
}
