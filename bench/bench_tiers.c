/* bench_tiers: what the memory tiers cost the simulator (issue 8, issue 8 tests "Benchmark").
 *
 * The Mooncake FAST'25 conversation trace
 * (../shared/traces/mooncake_fast25/conversation_trace.jsonl: 12,031 requests over 3,537 s, prompts
 * of 12,035 tokens on average, hash_ids per 512-token block; README there) on 8 instances: 2 nodes
 * x 4 H100-SXM 80 GB (3,350 GB/s HBM3, NVIDIA H100 datasheet), Llama-3.1-8B TP 1, roofline latency,
 * least-load router, flow network. Each node has 512 GiB of host DRAM at 256 GB/s, one CXL device
 * of 256 GiB (60 GB/s, 250 ns: LLMServingSim's single_node_cxl_instance cxl_mem) and an SSD with
 * servesim's defaults (Samsung PM9A3: 6.9 GB/s read, 4.1 GB/s write, planner/config.c). Two runs
 * per size, same cluster and trace: plain:  no tier (the NPU prefix cache only); tiers:
 * --prefix-storage cpu,cxl,ssd --prefix-pool cluster (Mooncake store: chunks sharded over both
 * nodes' DRAM; planner/tiers.c builds the cluster pool on the cpu tiers). Sizes: 10^4 requests and
 * the whole trace (--requests caps the trace). Each run is a child `servesim run ...`
 * (bench/child.c): wall time and peak RSS (wait4's ru_maxrss) are the child's. Prints both and the
 * ratios; exits 1 when a run fails or the tiers run is more than 2x slower than the plain one at
 * some size in both wall and CPU time (wall time alone is noisy on a shared machine).
 *
 * usage: bench_tiers [--trace JSONL] [--sizes 10000,0] [--timeout S] [--max-mem-gb G]
 *                    [--servesim PATH] [--keep]       (size 0 = the whole trace) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "bench/child.h"

#define DEFAULT_TRACE "../shared/traces/mooncake_fast25/conversation_trace.jsonl"
#define N_NODES 2
#define INST_PER_NODE 4
#define MAX_RATIO 2.0

static gboolean write_cluster(const char *path, GError **error)
{
    GString *s =
        g_string_new("{\n  \"num_nodes\": 2,\n  \"link_bw\": 50,\n  \"link_latency\": 0,\n"
                     "  \"network_model\": \"flow\",\n"
                     "  \"cxl_mem\": {\"mem_size\": 256, \"mem_bw\": 60, \"mem_latency\": 250, "
                     "\"num_devices\": 1},\n  \"nodes\": [\n");
    for (int n = 0; n < N_NODES; n++) {
        g_string_append_printf(s,
                               "    {\n      \"num_instances\": %d,\n"
                               "      \"cpu_mem\": {\"mem_size\": 512, \"mem_bw\": 256, "
                               "\"mem_latency\": 0},\n"
                               "      \"storage\": {\"mem_size\": 3576},\n"
                               "      \"instances\": [\n",
                               INST_PER_NODE);
        for (int i = 0; i < INST_PER_NODE; i++)
            g_string_append_printf(s,
                                   "        {\"model_name\": \"meta-llama/Llama-3.1-8B\", "
                                   "\"hardware\": \"H100-SXM\", \"npu_mem\": {\"mem_size\": 80, "
                                   "\"mem_bw\": 3350, \"mem_latency\": 0}, \"num_npus\": 1, "
                                   "\"tp_size\": 1}%s\n",
                                   i + 1 < INST_PER_NODE ? "," : "");
        g_string_append_printf(s, "      ]\n    }%s\n", n + 1 < N_NODES ? "," : "");
    }
    g_string_append(s, "  ]\n}\n");
    gboolean ok = g_file_set_contents(path, s->str, (gssize)s->len, error);
    g_string_free(s, TRUE);
    return ok;
}

/* Copy the first n lines of src (all when n <= 0) to dst. */
static gboolean head_lines(const char *src, const char *dst, int64_t n, GError **error)
{
    g_autofree char *text = NULL;
    gsize len = 0;
    if (!g_file_get_contents(src, &text, &len, error))
        return FALSE;
    gsize end = len;
    if (n > 0) {
        int64_t seen = 0;
        for (gsize i = 0; i < len; i++)
            if (text[i] == '\n' && ++seen == n) {
                end = i + 1;
                break;
            }
    }
    return g_file_set_contents(dst, text, (gssize)end, error);
}

struct result {
    struct sv_bench_child c;
    int64_t finished; /* requests in summary.json ("requests"."finished"), -1 unknown */
};

static void one_run(const char *servesim, const char *cluster, const char *trace, gboolean tiers,
                    const char *dir, int timeout_s, double max_mem_gb, struct result *r)
{
    g_autofree char *out = g_build_filename(dir, tiers ? "out-tiers" : "out-plain", NULL);
    g_autofree char *log = g_build_filename(dir, "stdout.txt", NULL);
    const char *argv[24];
    int k = 0;
    argv[k++] = servesim;
    argv[k++] = "run";
    argv[k++] = "--cluster";
    argv[k++] = cluster;
    argv[k++] = "--workload";
    argv[k++] = trace;
    argv[k++] = "--latency";
    argv[k++] = "roofline";
    argv[k++] = "--router";
    argv[k++] = "least_load";
    argv[k++] = "--output-dir";
    argv[k++] = out;
    argv[k++] = "--quiet";
    if (tiers) {
        argv[k++] = "--prefix-storage";
        argv[k++] = "cpu,cxl,ssd";
        argv[k++] = "--prefix-pool";
        argv[k++] = "cluster";
    }
    argv[k] = NULL;
    sv_bench_run_child(argv, log, timeout_s, max_mem_gb, &r->c);
    r->finished = -1;
    g_autofree char *sum_path = g_build_filename(out, "summary.json", NULL);
    g_autofree char *sum = NULL;
    if (r->c.exit_status == 0 && g_file_get_contents(sum_path, &sum, NULL, NULL)) {
        const char *p = strstr(sum, "\"finished\"");
        if (p && (p = strchr(p, ':')))
            r->finished = g_ascii_strtoll(p + 1, NULL, 10);
    }
    if (r->c.exit_status != 0) {
        g_autofree char *err = NULL;
        if (g_file_get_contents(log, &err, NULL, NULL))
            fprintf(stderr, "%s", err);
    }
}

int main(int argc, char **argv)
{
    const char *trace = DEFAULT_TRACE, *servesim = SV_SERVESIM_BIN, *sizes_s = "10000,0";
    int timeout_s = 1800;
    double max_mem_gb = 16;
    gboolean keep = FALSE;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--trace") == 0 && i + 1 < argc)
            trace = argv[++i];
        else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc)
            sizes_s = argv[++i];
        else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
            timeout_s = atoi(argv[++i]);
        else if (strcmp(argv[i], "--max-mem-gb") == 0 && i + 1 < argc)
            max_mem_gb = g_ascii_strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "--servesim") == 0 && i + 1 < argc)
            servesim = argv[++i];
        else if (strcmp(argv[i], "--keep") == 0)
            keep = TRUE;
        else {
            fprintf(stderr, "usage: bench_tiers [--trace JSONL] [--sizes 10000,0] [--timeout S] "
                            "[--max-mem-gb G] [--servesim PATH] [--keep]\n");
            return 2;
        }
    }
    if (!g_file_test(trace, G_FILE_TEST_EXISTS)) {
        printf("SKIP: %s not found (run from the repository root)\n", trace);
        return 0;
    }
    GError *e = NULL;
    g_autofree char *dir = g_dir_make_tmp("bench_tiers-XXXXXX", &e);
    g_autofree char *cluster = dir ? g_build_filename(dir, "cluster.json", NULL) : NULL;
    if (!dir || !write_cluster(cluster, &e)) {
        fprintf(stderr, "bench_tiers: %s\n", e->message);
        return 2;
    }
    printf("Mooncake conversation trace, 2 nodes x 4 H100, Llama-3.1-8B TP1; tiers = "
           "--prefix-storage cpu,cxl,ssd --prefix-pool cluster\n");
    printf("%9s %9s | %9s %9s %9s | %9s %9s %9s | %7s %7s %7s\n", "requests", "finished", "plain_s",
           "plain_cpu", "plain_MB", "tiers_s", "tiers_cpu", "tiers_MB", "wall_x", "cpu_x", "rss_x");
    int rc = 0;
    g_auto(GStrv) sizes = g_strsplit(sizes_s, ",", -1);
    for (char **sz = sizes; *sz; sz++) {
        int64_t size = g_ascii_strtoll(*sz, NULL, 10);
        struct result plain, tiers;
        /* The first `size` lines of the trace (servesim run has no request cap with a
         * --workload file). */
        g_autofree char *part = g_build_filename(dir, "trace.jsonl", NULL);
        if (!head_lines(trace, part, size, &e)) {
            fprintf(stderr, "bench_tiers: %s\n", e->message);
            return 2;
        }
        one_run(servesim, cluster, part, FALSE, dir, timeout_s, max_mem_gb, &plain);
        one_run(servesim, cluster, part, TRUE, dir, timeout_s, max_mem_gb, &tiers);
        gboolean ok = plain.c.exit_status == 0 && tiers.c.exit_status == 0;
        double wx = ok ? tiers.c.wall_s / plain.c.wall_s : 0;
        double cx = ok ? tiers.c.cpu_s / plain.c.cpu_s : 0;
        double rx = ok ? tiers.c.rss_mb / plain.c.rss_mb : 0;
        printf("%9s %9" G_GINT64_FORMAT " | %9.2f %9.2f %9.1f | %9.2f %9.2f %9.1f | %7.2f %7.2f "
               "%7.2f%s\n",
               size > 0 ? *sz : "all", tiers.finished, plain.c.wall_s, plain.c.cpu_s,
               plain.c.rss_mb, tiers.c.wall_s, tiers.c.cpu_s, tiers.c.rss_mb, wx, cx, rx,
               ok ? "" : "  (a run failed)");
        fflush(stdout);
        /* Wall time is noisy on a shared machine: the budget is on CPU time as well. */
        if (!ok || (wx > MAX_RATIO && cx > MAX_RATIO))
            rc = 1;
    }
    if (!keep) {
        const char *const sub[] = {"out-plain", "out-tiers", NULL};
        for (int i = 0; sub[i]; i++) {
            g_autofree char *d = g_build_filename(dir, sub[i], NULL);
            GDir *gd = g_dir_open(d, 0, NULL);
            const char *name;
            while (gd && (name = g_dir_read_name(gd))) {
                g_autofree char *f = g_build_filename(d, name, NULL);
                g_unlink(f);
            }
            if (gd)
                g_dir_close(gd);
            g_rmdir(d);
        }
        g_autofree char *f1 = g_build_filename(dir, "stdout.txt", NULL);
        g_autofree char *f2 = g_build_filename(dir, "trace.jsonl", NULL);
        g_unlink(f1);
        g_unlink(f2);
        g_unlink(cluster);
        g_rmdir(dir);
    } else {
        printf("kept %s\n", dir);
    }
    printf("%s (budget: tiers no slower than %.1fx)\n", rc ? "FAIL" : "ok", MAX_RATIO);
    return rc;
}
