/* Running a benchmark's child process: `servesim` with a time limit (and optionally an address-
 * space cap), its stdout to a file, and what wait4 reports of it. Shared by the scale benchmarks.
 */
#ifndef SV_BENCH_CHILD_H
#define SV_BENCH_CHILD_H

#include <glib.h>

struct sv_bench_child {
    gboolean started;   /* fork/wait4 worked */
    gboolean timed_out; /* ended by the time limit (SIGALRM) */
    int exit_status;    /* exit code, or -signal */
    double wall_s;
    double cpu_s;  /* user + system */
    double rss_mb; /* peak resident set (ru_maxrss) */
};

/* Monotonic wall clock, seconds (benchmark timing only: never used inside a model). */
double sv_bench_now_s(void);

/* Run argv (argv[0] is the program path) with stdout to `stdout_path`, killed after `timeout_s`
 * seconds; `max_mem_gb` > 0 caps its address space so a run whose memory grows fails instead of
 * pushing the machine into swap. */
void sv_bench_run_child(const char *const *argv, const char *stdout_path, int timeout_s,
                        double max_mem_gb, struct sv_bench_child *out);

/* The same for a function called in a forked child: its return value is the exit status. The
 * child's peak-RSS mark is reset when it starts (/proc/self/clear_refs), so rss_mb is the run's
 * peak on top of the pages it shares with the parent at fork (the benchmark's own code and
 * libraries, as an exec'd program would have its own), not the parent's earlier peak. Returns
 * FALSE where that reset is not possible (rss_mb then includes the parent's peak). */
gboolean sv_bench_run_fn(int (*fn)(void *arg), void *arg, const char *stdout_path, int timeout_s,
                         double max_mem_gb, struct sv_bench_child *out);

#endif
