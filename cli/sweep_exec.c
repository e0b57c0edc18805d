/* servesim sweep: one point as a child `servesim run`. posix_spawn rather than fork: Open MPI
 * warns about fork() in an MPI process (and a forked copy of a large address space costs more). */
#define _GNU_SOURCE /* posix_spawn_file_actions_addchdir_np (glibc 2.29), environ */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/sweep_internal.h"

static char *point_rel(const sv_sweep_ctx *c, guint k)
{
    g_autofree char *name = sv_planner_sweep_point_name(c->spec, k);
    return g_build_filename("points", name, NULL);
}

/* A word of cmd.txt: as it is when the shell would read it back unchanged, else quoted. */
char *sv_cli_sweep_shell_word(const char *w)
{
    gboolean plain = *w != '\0';
    for (const char *p = w; *p && plain; p++)
        plain = g_ascii_isalnum(*p) || strchr("_-./:=,+@%", *p);
    return plain ? g_strdup(w) : g_shell_quote(w);
}

pid_t sv_cli_sweep_start(const sv_sweep_ctx *c, guint k, GError **error)
{
    g_autofree char *rel = point_rel(c, k);
    g_autofree char *dir = g_build_filename(c->out, rel, NULL);
    if (g_mkdir_with_parents(dir, 0777) != 0) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_IO, "%s: %s", dir, g_strerror(errno));
        return -1;
    }
    g_autofree char *json = NULL;
    if (!sv_planner_sweep_point_cluster(c->spec, k, &json, error))
        return -1;
    g_autofree char *cluster = NULL;
    if (json) {
        cluster = g_build_filename(rel, "cluster.json", NULL);
        g_autofree char *abs = g_build_filename(c->out, cluster, NULL);
        if (!g_file_set_contents(abs, json, -1, error))
            return -1;
    }
    /* The run's paths are relative to OUT (its working directory), so that the point's files
     * (cmd.txt, run.json) do not depend on where OUT is: a local, an MPI and a Slurm sweep of one
     * spec give the same bytes. */
    g_autoptr(GPtrArray) args = sv_planner_sweep_point_args(c->spec, k, cluster);
    g_ptr_array_insert(args, 0, g_strdup("run"));
    g_ptr_array_insert(args, 0, g_strdup(c->exe));
    g_ptr_array_add(args, g_strdup("--output-dir"));
    g_ptr_array_add(args, g_strdup(rel));
    g_ptr_array_add(args, g_strdup("--quiet"));
    GString *cmd = g_string_new(NULL);
    for (guint i = 0; i < args->len; i++) {
        g_autofree char *q = sv_cli_sweep_shell_word(args->pdata[i]);
        g_string_append_printf(cmd, "%s%s", i ? " " : "", q);
    }
    g_string_append_c(cmd, '\n');
    g_autofree char *cmd_path = g_build_filename(dir, "cmd.txt", NULL);
    gboolean ok = g_file_set_contents(cmd_path, cmd->str, (gssize)cmd->len, error);
    g_string_free(cmd, TRUE);
    if (!ok)
        return -1;
    g_ptr_array_add(args, NULL);
    g_autofree char *err_path = g_build_filename(dir, "stderr.txt", NULL);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    posix_spawn_file_actions_addchdir_np(&fa, c->out);
    pid_t pid;
    int rc = posix_spawn(&pid, c->exe, &fa, NULL, (char **)args->pdata, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_IO, "cannot start %s: %s", c->exe,
                    g_strerror(rc));
        return -1;
    }
    return pid;
}

void sv_cli_sweep_finish(sv_sweep_ctx *c, guint k, int wait_status, struct sv_sweep_result *r)
{
    g_autofree char *rel = point_rel(c, k);
    g_autofree char *dir = g_build_filename(c->out, rel, NULL);
    g_autofree char *err_path = g_build_filename(dir, "stderr.txt", NULL);
    g_autofree char *err_text = NULL;
    g_file_get_contents(err_path, &err_text, NULL, NULL);
    sv_planner_sweep_read(c->spec, k, dir, wait_status, err_text, r);
    g_free(c->rows->pdata[k]);
    c->rows->pdata[k] = sv_planner_sweep_csv_row(c->spec, k, r);
    if (r->status == SV_SWEEP_OK)
        c->ok++;
    else
        c->failed++;
    if (!c->quiet)
        fprintf(stderr, "servesim sweep: point %u of %u %s%s%s\n", k,
                sv_planner_sweep_n_points(c->spec), r->status == SV_SWEEP_OK ? "ok" : "failed",
                r->error ? ": " : "", r->error ? r->error : "");
}

void sv_cli_sweep_run_one(sv_sweep_ctx *c, guint k, struct sv_sweep_result *r)
{
    GError *e = NULL;
    pid_t pid = sv_cli_sweep_start(c, k, &e);
    int st = 0;
    if (pid < 0) {
        sv_planner_sweep_result_clear(r);
        r->status = SV_SWEEP_FAILED;
        r->error = g_strdup(e->message);
        g_error_free(e);
        g_free(c->rows->pdata[k]);
        c->rows->pdata[k] = sv_planner_sweep_csv_row(c->spec, k, r);
        c->failed++;
        return;
    }
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    sv_cli_sweep_finish(c, k, st, r);
}
