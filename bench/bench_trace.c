/* bench_trace: what `servesim run --trace` costs (docs/trace.md): wall time, peak RSS and trace
 * size per request, with and without the timeline, and with a window.
 *
 * The quick form (one H100-SXM, Llama-3.1-8B, roofline) serves N Poisson requests at 20 req/s of
 * 512 + 128 tokens (below the ~37 req/s one H100 serves in the roofline model: bounded queues).
 * Each run is a child `servesim run` (the command's own code path); one line per case.
 * The trace's size grows with requests and iterations; the peak RSS must not (the writer
 * streams: it keeps one record per track).
 *
 * usage: bench_trace [--sizes 1000,10000] [--servesim PATH] [--timeout SECONDS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "bench/child.h"

static void one(const char *bin, const char *dir, long n, const char *trace_args, int timeout)
{
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    g_autofree char *tr = g_build_filename(dir, "t.json", NULL);
    g_autofree char *reqs = g_strdup_printf("%ld", n);
    g_autofree char *so = g_build_filename(dir, "stdout", NULL);
    g_unlink(tr);
    GPtrArray *a = g_ptr_array_new();
    const char *base[] = {bin,
                          "run",
                          "--model",
                          "meta-llama/Llama-3.1-8B",
                          "--hardware",
                          "H100-SXM",
                          "--requests",
                          reqs,
                          "--qps",
                          "20",
                          "--input-len",
                          "512",
                          "--output-len",
                          "128",
                          "--output-dir",
                          out,
                          "--quiet"};
    for (size_t i = 0; i < G_N_ELEMENTS(base); i++)
        g_ptr_array_add(a, (gpointer)base[i]);
    g_auto(GStrv) extra = trace_args ? g_strsplit(trace_args, " ", -1) : NULL;
    for (int i = 0; extra && extra[i]; i++)
        g_ptr_array_add(a, strcmp(extra[i], "T") == 0 ? tr : extra[i]);
    g_ptr_array_add(a, NULL);
    struct sv_bench_child c;
    sv_bench_run_child((const char *const *)a->pdata, so, timeout, 16, &c);
    g_ptr_array_free(a, TRUE);
    GStatBuf st;
    double mb = trace_args && g_stat(tr, &st) == 0 ? (double)st.st_size / 1e6 : 0;
    printf("%8ld requests  %-28s wall %7.2f s  peak RSS %7.1f MB  trace %8.1f MB (%6.1f KB/request)"
           "%s\n",
           n, trace_args ? trace_args : "(no trace)", c.wall_s, c.rss_mb, mb, mb * 1e3 / (double)n,
           c.exit_status == 0 && !c.timed_out ? "" : "  FAILED");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *sizes = "1000,10000", *bin = SV_SERVESIM_BIN;
    int timeout = 600;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--sizes"))
            sizes = argv[i + 1];
        else if (!strcmp(argv[i], "--servesim"))
            bin = argv[i + 1];
        else if (!strcmp(argv[i], "--timeout"))
            timeout = atoi(argv[i + 1]);
    }
    g_autofree char *dir = g_dir_make_tmp("bench-trace-XXXXXX", NULL);
    if (!dir)
        return 1;
    g_auto(GStrv) ns = g_strsplit(sizes, ",", -1);
    for (int k = 0; ns[k]; k++) {
        long n = atol(ns[k]);
        one(bin, dir, n, NULL, timeout);
        one(bin, dir, n, "--trace T", timeout);
        one(bin, dir, n, "--trace T --trace-window 10:20", timeout);
    }
    g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}
