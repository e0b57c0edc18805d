/* bench_tp_cost: what tensor parallelism costs the simulator (issue 11: multi-GPU instances as
 * cheap as single-GPU ones).
 *
 * The same quick-form study (`servesim run --model M --hardware H100 --tp N --requests 1000
 * --qps 2 --input-len 256 --output-len 256`, roofline latency, Poisson arrivals) for Llama-3.1-8B
 * at TP 1, 2, 4 and 8 and Llama-3.1-70B at TP 8, each run --repeat times (default 5) as a child
 * process; prints the median CPU time (user + system, wait4), the median wall time, the peak RSS
 * and the simulated makespan of each, and the ratio of the 70B TP 8 study's CPU time to the 8B
 * TP 1 one's (the target: within 2x). A TP iteration whose ring has its links to itself is
 * folded into one node per rank (docs/parallelism.md "Folded iterations"); --per-layer N adds the
 * 70B TP 8 study with --per-layer-dag on N requests, the cost before (every all-reduce message
 * by message on the flow network).
 *
 * usage: bench_tp_cost [--requests N] [--repeat R] [--per-layer N] [--servesim PATH] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "bench/child.h"

struct study {
    const char *model;
    const char *tp;
    gboolean per_layer;
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double read_makespan(const char *out_dir)
{
    g_autofree char *path = g_build_filename(out_dir, "summary.json", NULL);
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return NAN;
    const char *p = strstr(text, "\"makespan_s\"");
    if (p == NULL || (p = strchr(p, ':')) == NULL)
        return NAN;
    return g_ascii_strtod(p + 1, NULL);
}

/* Runs one study `repeat` times; prints its row and returns the median CPU seconds (< 0: failed).
 */
static double run_study(const char *servesim, const char *root, const struct study *s,
                        long requests, int repeat)
{
    g_autofree char *n = g_strdup_printf("%ld", requests);
    g_autofree char *out = g_build_filename(root, "out", NULL);
    g_autofree char *log = g_build_filename(root, "stdout.txt", NULL);
    const char *argv[] = {servesim, "run",     "--model",      s->model,     "--hardware",
                          "H100",   "--tp",    s->tp,          "--requests", n,
                          "--qps",  "2",       "--input-len",  "256",        "--output-len",
                          "256",    "--quiet", "--output-dir", out,          NULL,
                          NULL};
    if (s->per_layer)
        argv[19] = "--per-layer-dag";
    g_autofree double *cpu = g_new(double, (size_t)repeat);
    g_autofree double *wall = g_new(double, (size_t)repeat);
    double rss = 0;
    for (int k = 0; k < repeat; k++) {
        struct sv_bench_child c;
        sv_bench_run_child(argv, log, 3600, 16.0, &c);
        if (!c.started || c.timed_out || c.exit_status != 0) {
            printf("%-14s %4s %9ld %s\n", s->model, s->tp, requests,
                   c.timed_out ? "timeout" : "failed");
            return -1;
        }
        cpu[k] = c.cpu_s;
        wall[k] = c.wall_s;
        rss = MAX(rss, c.rss_mb);
    }
    qsort(cpu, (size_t)repeat, sizeof *cpu, cmp_double);
    qsort(wall, (size_t)repeat, sizeof *wall, cmp_double);
    double med = cpu[repeat / 2];
    printf("%-14s %4s %-9s %9ld %10.3f %10.3f %10.1f %12.1f %14.1f\n", s->model, s->tp,
           s->per_layer ? "per-layer" : "default", requests, med, wall[repeat / 2], rss,
           read_makespan(out), 1e6 * med / (double)requests);
    fflush(stdout);
    return med;
}

int main(int argc, char **argv)
{
    const char *servesim = SV_SERVESIM_BIN;
    long requests = 1000, per_layer = 0;
    int repeat = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--requests") && i + 1 < argc)
            requests = atol(argv[++i]);
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
            repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--per-layer") && i + 1 < argc)
            per_layer = atol(argv[++i]);
        else if (!strcmp(argv[i], "--servesim") && i + 1 < argc)
            servesim = argv[++i];
        else {
            fprintf(stderr, "usage: bench_tp_cost [--requests N] [--repeat R] [--per-layer N] "
                            "[--servesim PATH]\n");
            return 2;
        }
    }
    if (requests <= 0 || repeat <= 0 || per_layer < 0) {
        fprintf(stderr, "bench_tp_cost: --requests and --repeat must be positive\n");
        return 2;
    }
    g_autoptr(GError) err = NULL;
    g_autofree char *root = g_dir_make_tmp("bench_tp_cost_XXXXXX", &err);
    if (root == NULL) {
        fprintf(stderr, "bench_tp_cost: %s\n", err->message);
        return 1;
    }
    printf("servesim run --model M --hardware H100 --tp N --requests %ld --qps 2 --input-len 256 "
           "--output-len 256 (roofline), median of %d\n",
           requests, repeat);
    printf("%-14s %4s %-9s %9s %10s %10s %10s %12s %14s\n", "model", "tp", "dag", "requests",
           "cpu_s", "wall_s", "rss_MB", "sim_s", "cpu_us/req");
    static const struct study studies[] = {
        {"Llama-3.1-8B", "1", FALSE}, {"Llama-3.1-8B", "2", FALSE},  {"Llama-3.1-8B", "4", FALSE},
        {"Llama-3.1-8B", "8", FALSE}, {"Llama-3.1-70B", "8", FALSE},
    };
    double tp1 = -1, tp8 = -1;
    int status = 0;
    for (size_t k = 0; k < G_N_ELEMENTS(studies) && status == 0; k++) {
        double c = run_study(servesim, root, &studies[k], requests, repeat);
        if (c < 0)
            status = 1;
        if (k == 0)
            tp1 = c;
        if (k == G_N_ELEMENTS(studies) - 1)
            tp8 = c;
    }
    if (status == 0 && per_layer > 0) {
        static const struct study before = {"Llama-3.1-70B", "8", TRUE};
        if (run_study(servesim, root, &before, per_layer, 1) < 0)
            status = 1;
    }
    if (status == 0 && tp1 > 0)
        printf("Llama-3.1-70B TP 8 / Llama-3.1-8B TP 1 CPU time: x%.2f (target: within x2)\n",
               tp8 / tp1);
    g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_tp_cost: could not remove %s\n", root);
    return status;
}
