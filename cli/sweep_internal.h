/* servesim sweep: what cmd_sweep.c, sweep_exec.c and sweep_mpi.c share. */
#ifndef SV_CLI_SWEEP_INTERNAL_H
#define SV_CLI_SWEEP_INTERNAL_H

#include <sys/types.h>

#include "planner/planner.h"

typedef struct {
    const sv_sweep_spec *spec;
    const char *exe;  /* the servesim binary the points run */
    char *out;        /* the sweep's output folder, absolute */
    gboolean quiet;   /* no line per finished point */
    GPtrArray *rows;  /* char* per point: its sweep.csv row, NULL until known */
    guint ok, failed; /* points finished so far */
} sv_sweep_ctx;

/* Prepare point k's folder (OUT/points/<k>: cmd.txt, a patched cluster.json) and start its
 * `servesim run` in OUT, stderr into the folder's stderr.txt. Returns the child's pid, or -1 with
 * the reason in *error (the point then counts as failed). */
pid_t sv_cli_sweep_start(const sv_sweep_ctx *c, guint k, GError **error);
/* Point k's run ended with `wait_status`: read its outputs into r, keep its row in c->rows,
 * print a line unless quiet. */
void sv_cli_sweep_finish(sv_sweep_ctx *c, guint k, int wait_status, struct sv_sweep_result *r);
/* A word of a printed command: as it is when a shell reads it back unchanged, else quoted. */
char *sv_cli_sweep_shell_word(const char *w);
/* Run point k to its end (start, wait) and finish it. */
void sv_cli_sweep_run_one(sv_sweep_ctx *c, guint k, struct sv_sweep_result *r);

#ifdef SV_HAVE_MPI
/* The task farm under mpirun (cli/sweep_mpi.c): rank 0 hands out points and collects; the other
 * ranks run them. Returns TRUE on rank 0 (which then writes the outputs), FALSE on the others. */
gboolean sv_cli_sweep_mpi(sv_sweep_ctx *c, sv_sweep_sched *q, int *nranks);
#endif

#endif
