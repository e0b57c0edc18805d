/* servesim sweep SPEC: run a grid of `servesim run` points (docs/sweep.md). The planner parses
 * the spec, expands the grid, reads each point back and orders the goal search; this file runs
 * the points (locally with --jobs, as a Slurm shard, or under mpirun) and writes sweep.csv. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/sweep_internal.h"

static const char usage[] =
    "usage: servesim sweep SPEC.yaml [-o DIR] [--jobs N | --mpi | --shard I/N] [--goal]\n"
    "       servesim sweep SPEC.yaml --merge -o DIR\n"
    "\n"
    "Run `servesim run` once per point of the spec's grid (docs/sweep.md) and write "
    "DIR/sweep.csv:\n"
    "one row per point in point order (the axis values, status, vLLM-named metrics, GPUs and\n"
    "tokens/s per GPU, energy when the run has a power model). Point k's outputs are in\n"
    "DIR/points/<k>/ with cmd.txt, the exact command, and stderr.txt.\n"
    "\n"
    "  -o, --output-dir DIR  output folder (default sweep-out)\n"
    "  -j, --jobs N          points run at once (default: the number of cores)\n"
    "  --goal                search the grid for the best configuration that meets the spec's\n"
    "                        goal: SLOs; loads in increasing order, a configuration stops at its\n"
    "                        first miss; writes DIR/goal.json and prints the verdict\n"
    "  --mpi                 under mpirun: rank 0 hands out points, the other ranks run them\n"
    "                        (DIR on a filesystem every rank sees)\n"
    "  --shard I/N           run the points k with k % N == I only (a Slurm array task);\n"
    "                        writes DIR/shards/I-of-N.csv\n"
    "  --merge               check that the shards hold every point and write DIR/sweep.csv\n"
    "  --dry-run             print each point's command, run nothing\n"
    "  -q, --quiet           no line per finished point\n"
    "\n"
    "Exit status: 0 when every point ran, 1 when a point failed (sweep.csv still written; its\n"
    "status and error columns say why) or on an error, 2 on bad usage.\n";

typedef struct {
    char *out, *shard;
    gint64 jobs;
    gboolean mpi, merge, goal, dry_run, quiet;
} sweep_opts;

static gboolean parse_shard(const char *text, guint *i, guint *n)
{
    char *end = NULL;
    guint64 a = g_ascii_strtoull(text, &end, 10);
    if (end == text || *end != '/')
        return FALSE;
    const char *p = end + 1;
    guint64 b = g_ascii_strtoull(p, &end, 10);
    if (end == p || *end || b == 0 || a >= b || b > 1000000)
        return FALSE;
    *i = (guint)a;
    *n = (guint)b;
    return TRUE;
}

/* Write `text` to path atomically (a temporary renamed into place), mode 0666 less the umask. */
static gboolean write_file(const char *path, const char *text, GError **error)
{
    return g_file_set_contents_full(path, text, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0666, error);
}

static char *csv_of(const sv_sweep_ctx *c, const sv_sweep_sched *q)
{
    g_autofree char *header = sv_planner_sweep_csv_header(c->spec);
    GString *g = g_string_new(header);
    for (guint k = 0; k < sv_planner_sweep_n_points(c->spec); k++) {
        if (c->rows->pdata[k]) {
            g_string_append(g, c->rows->pdata[k]);
        } else if (q && sv_planner_sweep_sched_status(q, k) == SV_SWEEP_PRUNED) {
            struct sv_sweep_result r = {.status = SV_SWEEP_PRUNED};
            g_autofree char *row = sv_planner_sweep_csv_row(c->spec, k, &r);
            g_string_append(g, row);
        }
    }
    return g_string_free(g, FALSE);
}

/* Run the scheduler's points, `jobs` at a time. Returns 0, or 128 + a signal that stopped it. */
static int run_local(sv_sweep_ctx *c, sv_sweep_sched *q, guint jobs)
{
    const volatile sig_atomic_t *sig = sv_cli_signals_catch();
    pid_t *pids = g_new0(pid_t, jobs);
    guint *ks = g_new0(guint, jobs), nrun = 0;
    gboolean forwarded = FALSE;
    for (;;) {
        int k;
        while (!*sig && nrun < jobs && (k = sv_planner_sweep_sched_next(q)) >= 0) {
            g_autoptr(GError) e = NULL;
            pid_t pid = sv_cli_sweep_start(c, (guint)k, &e);
            if (pid < 0) { /* counted as a failed point */
                struct sv_sweep_result r = {.status = SV_SWEEP_FAILED,
                                            .error = g_strdup(e->message)};
                g_free(c->rows->pdata[k]);
                c->rows->pdata[k] = sv_planner_sweep_csv_row(c->spec, (guint)k, &r);
                c->failed++;
                fprintf(stderr, "servesim sweep: point %d: %s\n", k, e->message);
                sv_planner_sweep_sched_done(q, (guint)k, &r);
                sv_planner_sweep_result_clear(&r);
                continue;
            }
            for (guint j = 0; j < jobs; j++)
                if (pids[j] == 0) {
                    pids[j] = pid;
                    ks[j] = (guint)k;
                    break;
                }
            nrun++;
        }
        if (nrun == 0)
            break;
        if (*sig && !forwarded) { /* pass the signal on to the points still running */
            for (guint j = 0; j < jobs; j++)
                if (pids[j] > 0)
                    kill(pids[j], *sig);
            forwarded = TRUE;
        }
        int st;
        pid_t pid = waitpid(-1, &st, 0);
        if (pid < 0)
            continue; /* EINTR: a signal; the loop forwards it */
        for (guint j = 0; j < jobs; j++) {
            if (pids[j] != pid)
                continue;
            pids[j] = 0;
            nrun--;
            struct sv_sweep_result r = {0};
            sv_cli_sweep_finish(c, ks[j], st, &r);
            sv_planner_sweep_sched_done(q, ks[j], &r);
            sv_planner_sweep_result_clear(&r);
        }
    }
    g_free(pids);
    g_free(ks);
    return *sig ? 128 + *sig : 0;
}

/* --merge: every point's row from DIR/shards/<I>-of-<N>.csv, checked against the spec's header. */
static int merge(sv_sweep_ctx *c)
{
    g_autofree char *dir = g_build_filename(c->out, "shards", NULL);
    g_autoptr(GError) e = NULL;
    g_autoptr(GDir) d = g_dir_open(dir, 0, &e);
    if (!d) {
        fprintf(stderr, "servesim sweep: --merge: %s\n", e->message);
        return 1;
    }
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    for (const char *n; (n = g_dir_read_name(d));)
        if (g_str_has_suffix(n, ".csv") && strstr(n, "-of-"))
            g_ptr_array_add(names, g_strdup(n));
    g_ptr_array_sort(names, (GCompareFunc)g_strcmp0); /* messages in a stable order */
    g_autofree char *header = sv_planner_sweep_csv_header(c->spec);
    guint n = sv_planner_sweep_n_points(c->spec);
    for (guint f = 0; f < names->len; f++) {
        g_autofree char *path = g_build_filename(dir, names->pdata[f], NULL);
        g_autofree char *text = NULL;
        if (!g_file_get_contents(path, &text, NULL, &e)) {
            fprintf(stderr, "servesim sweep: --merge: %s\n", e->message);
            return 1;
        }
        if (!g_str_has_prefix(text, header)) {
            fprintf(stderr,
                    "servesim sweep: --merge: %s: its header is not this spec's (another spec, "
                    "or another servesim version)\n",
                    path);
            return 1;
        }
        char *line = text + strlen(header);
        int lineno = 2;
        while (*line) {
            char *nl = strchr(line, '\n');
            if (!nl) {
                fprintf(stderr, "servesim sweep: --merge: %s:%d: truncated row\n", path, lineno);
                return 1;
            }
            char *end = NULL;
            guint64 k = g_ascii_strtoull(line, &end, 10);
            if (end == line || *end != ',' || k >= n) {
                fprintf(stderr, "servesim sweep: --merge: %s:%d: not a point of this spec\n", path,
                        lineno);
                return 1;
            }
            g_autofree char *row = g_strndup(line, (gsize)(nl - line + 1));
            if (c->rows->pdata[k] && strcmp(c->rows->pdata[k], row) != 0) {
                fprintf(stderr,
                        "servesim sweep: --merge: %s:%d: point %u differs from another "
                        "shard's row\n",
                        path, lineno, (guint)k);
                return 1;
            }
            g_free(c->rows->pdata[k]);
            c->rows->pdata[k] = g_steal_pointer(&row);
            line = nl + 1;
            lineno++;
        }
    }
    GString *missing = g_string_new(NULL);
    guint nmiss = 0;
    for (guint k = 0; k < n; k++)
        if (!c->rows->pdata[k] && nmiss++ < 20)
            g_string_append_printf(missing, "%s%u", nmiss > 1 ? ", " : "", k);
    if (nmiss) {
        fprintf(stderr, "servesim sweep: --merge: %u of %u points missing from %s: %s%s\n", nmiss,
                n, dir, missing->str, nmiss > 20 ? ", ..." : "");
        g_string_free(missing, TRUE);
        return 1;
    }
    g_string_free(missing, TRUE);
    for (guint k = 0; k < n; k++) {
        if (strstr(c->rows->pdata[k], ",ok,"))
            c->ok++;
        else
            c->failed++;
    }
    return 0;
}

static int dry_run(const sv_sweep_spec *s)
{
    for (guint k = 0; k < sv_planner_sweep_n_points(s); k++) {
        g_autofree char *name = sv_planner_sweep_point_name(s, k);
        g_autoptr(GPtrArray) args = sv_planner_sweep_point_args(s, k, NULL);
        printf("%s: servesim run", name);
        for (guint i = 0; i < args->len; i++) {
            g_autofree char *q = sv_cli_sweep_shell_word(args->pdata[i]);
            printf(" %s", q);
        }
        printf(" --output-dir points/%s --quiet\n", name);
    }
    return 0;
}

/* sweep.csv (or the shard's file), goal.json; the closing lines. */
static int write_outputs(sv_sweep_ctx *c, const sv_sweep_sched *q, const sweep_opts *o,
                         guint shard_i, guint shard_n)
{
    g_autoptr(GError) e = NULL;
    g_autofree char *csv = csv_of(c, q);
    g_autofree char *dest = NULL;
    if (o->shard) {
        g_autofree char *dir = g_build_filename(c->out, "shards", NULL);
        g_autofree char *name = g_strdup_printf("%u-of-%u.csv", shard_i, shard_n);
        g_mkdir_with_parents(dir, 0777);
        dest = g_build_filename(dir, name, NULL);
    } else {
        dest = g_build_filename(c->out, "sweep.csv", NULL);
    }
    if (!write_file(dest, csv, &e)) {
        fprintf(stderr, "servesim sweep: %s\n", e->message);
        return 1;
    }
    if (o->goal) {
        g_autofree char *json = sv_planner_sweep_goal_json(q);
        g_autofree char *path = g_build_filename(c->out, "goal.json", NULL);
        if (!write_file(path, json, &e)) {
            fprintf(stderr, "servesim sweep: %s\n", e->message);
            return 1;
        }
        g_autofree char *line = sv_planner_sweep_goal_line(q);
        printf("servesim sweep: %s\n", line);
    }
    printf("servesim sweep: %u points: %u ok, %u failed; %s\n", c->ok + c->failed, c->ok, c->failed,
           dest);
    return c->failed ? 1 : 0;
}

/* The running binary, for the points: /proc/self/exe, else argv[0] as found on PATH. */
static char *self_exe(const char *argv0)
{
    char *p = g_file_read_link("/proc/self/exe", NULL);
    if (p)
        return p;
    if (strchr(argv0, '/'))
        return g_canonicalize_filename(argv0, NULL);
    return g_find_program_in_path(argv0);
}

int sv_cli_sweep(int argc, char **argv)
{
    sweep_opts o = {.jobs = 0};
    const GOptionEntry entries[] = {
        {"output-dir", 'o', 0, G_OPTION_ARG_FILENAME, &o.out, NULL, "DIR"},
        {"jobs", 'j', 0, G_OPTION_ARG_INT64, &o.jobs, NULL, "N"},
        {"mpi", 0, 0, G_OPTION_ARG_NONE, &o.mpi, NULL, NULL},
        {"shard", 0, 0, G_OPTION_ARG_STRING, &o.shard, NULL, "I/N"},
        {"merge", 0, 0, G_OPTION_ARG_NONE, &o.merge, NULL, NULL},
        {"goal", 0, 0, G_OPTION_ARG_NONE, &o.goal, NULL, NULL},
        {"dry-run", 0, 0, G_OPTION_ARG_NONE, &o.dry_run, NULL, NULL},
        {"quiet", 'q', 0, G_OPTION_ARG_NONE, &o.quiet, NULL, NULL},
        G_OPTION_ENTRY_NULL,
    };
    const char *argv0 = argv[0];
    int rc = sv_cli_parse_options("sweep", usage, entries, &argc, &argv);
    g_autofree char *out_opt = o.out, *shard_opt = o.shard;
    if (rc >= 0)
        return rc;
    if (argc != 2) {
        fprintf(stderr, "servesim sweep: expected one SPEC.yaml\n\n%s", usage);
        return 2;
    }
    guint shard_i = 0, shard_n = 1;
    if (o.shard && !parse_shard(o.shard, &shard_i, &shard_n)) {
        fprintf(stderr, "servesim sweep: --shard: '%s' is not I/N with 0 <= I < N\n", o.shard);
        return 2;
    }
    if ((o.mpi + (o.shard != NULL) + o.merge) > 1 || (o.jobs && (o.mpi || o.merge))) {
        fprintf(stderr, "servesim sweep: --jobs, --mpi, --shard and --merge exclude each other "
                        "(--jobs goes with --shard)\n");
        return 2;
    }
    if (o.goal && (o.shard || o.merge)) {
        fprintf(stderr, "servesim sweep: --goal decides which point runs next from the results "
                        "so far: run it locally or with --mpi, not as shards\n");
        return 2;
    }
    if (o.jobs < 0 || o.jobs > 4096) {
        fprintf(stderr, "servesim sweep: --jobs: %" G_GINT64_FORMAT " is not in [1, 4096]\n",
                o.jobs);
        return 2;
    }
#ifndef SV_HAVE_MPI
    if (o.mpi) {
        fprintf(stderr, "servesim sweep: --mpi: this servesim was built without MPI (install "
                        "libopenmpi-dev and reconfigure; docs/sweep.md)\n");
        return 2;
    }
#endif
    g_autoptr(GError) e = NULL;
    g_autoptr(sv_sweep_spec) spec = sv_planner_sweep_load(argv[1], &e);
    if (!spec) {
        fprintf(stderr, "servesim sweep: %s\n", e->message);
        return 1;
    }
    if (o.goal && !sv_planner_sweep_has_goal(spec)) {
        fprintf(stderr, "servesim sweep: --goal: %s has no goal: section\n", argv[1]);
        return 2;
    }
    if (o.dry_run)
        return dry_run(spec);
    g_autofree char *cwd = g_get_current_dir();
    guint n = sv_planner_sweep_n_points(spec);
    g_autofree char *exe = self_exe(argv0);
    sv_sweep_ctx c = {
        .spec = spec,
        .exe = exe,
        .out = g_canonicalize_filename(o.out ? o.out : "sweep-out", cwd),
        .quiet = o.quiet,
        .rows = g_ptr_array_new_full(n, g_free),
    };
    g_ptr_array_set_size(c.rows, (gint)n);
    g_autoptr(sv_sweep_sched) q = NULL;
    int status = 0;
    if (!exe) {
        fprintf(stderr, "servesim sweep: cannot find the servesim binary (%s)\n", argv0);
        status = 1;
        goto out;
    }
    if (g_mkdir_with_parents(c.out, 0777) != 0) {
        fprintf(stderr, "servesim sweep: %s: %s\n", c.out, g_strerror(errno));
        status = 1;
        goto out;
    }
    if (o.merge) {
        if ((status = merge(&c)) != 0)
            goto out;
    } else {
        q = sv_planner_sweep_sched_new(spec, o.goal, shard_i, shard_n);
#ifdef SV_HAVE_MPI
        if (o.mpi) {
            int nranks = 0;
            if (!sv_cli_sweep_mpi(&c, q, &nranks))
                goto out; /* a worker rank: rank 0 writes the outputs */
        } else
#endif
        {
            guint jobs = o.jobs ? (guint)o.jobs : MAX(g_get_num_processors(), 1);
            if ((status = run_local(&c, q, jobs)) != 0) {
                fprintf(stderr, "servesim sweep: stopped by %s; no sweep.csv written\n",
                        sv_cli_signal_name(status - 128));
                goto out;
            }
        }
    }
    status = write_outputs(&c, q, &o, shard_i, shard_n);
out:
    g_free(c.out);
    g_ptr_array_unref(c.rows);
    return status;
}
