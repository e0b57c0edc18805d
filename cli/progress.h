/* servesim run's progress display (cli/progress.c; docs/serving.md "Progress"): a line redrawn in
 * place on a terminal, or (--progress) full lines every period on any stderr; and a line when no
 * request moves for a long wall time. Display only: it reads the wall clock, which the model never
 * does, and nothing it prints goes into an output file. */
#ifndef SV_CLI_PROGRESS_H
#define SV_CLI_PROGRESS_H

#include "planner/planner.h"

#include <stdio.h>

typedef enum {
    SV_CLI_PROGRESS_OFF = 0, /* nothing but the stall line */
    SV_CLI_PROGRESS_REDRAW,  /* a terminal: one line redrawn in place, cleared at the end */
    SV_CLI_PROGRESS_LINES,   /* --progress: a full line every period, and a last one */
} sv_cli_progress_mode;

struct sv_cli_progress_cfg {
    sv_cli_progress_mode mode;
    double period_s; /* LINES: wall seconds between lines (> 0) */
    uint64_t total;  /* requests in the workload, 0 = unknown */
    double stall_s;  /* wall seconds without a request moving before saying so; 0 = never */
    gboolean quiet;  /* --quiet: no stall line either */
};

/* The stall line's wall time: $SERVESIM_PROGRESS_STALL_S when set (seconds in (0, 86400]; for
 * tests, and for machines where 30 s is not long), else `dflt`. FALSE with the message when the
 * variable is not such a number. */
#define SV_CLI_PROGRESS_STALL_ENV "SERVESIM_PROGRESS_STALL_S"
gboolean sv_cli_progress_stall_s(double dflt, double *out, GError **error);

typedef struct sv_cli_progress sv_cli_progress;
sv_cli_progress *sv_cli_progress_new(const struct sv_cli_progress_cfg *cfg, FILE *out);
void sv_cli_progress_free(sv_cli_progress *p); /* accepts NULL */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sv_cli_progress, sv_cli_progress_free)
/* Install the run's progress callbacks and display tick into `cfg`. */
void sv_cli_progress_attach(sv_cli_progress *p, struct sv_planner_run_cfg *cfg);
/* After the run: REDRAW clears its line; LINES, when `complete`, prints the last line with the
 * final counts (`done` settled requests: finished or rejected, at simulated `end_ns`). */
void sv_cli_progress_finish(sv_cli_progress *p, gboolean complete, uint64_t done, sv_time end_ns);

#endif
