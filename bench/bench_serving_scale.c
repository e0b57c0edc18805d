/* bench_serving_scale: how `servesim run` scales with the number of requests.
 *
 * An 8-instance cluster (one node, 8 x H100-SXM 80 GB, 3,350 GB/s HBM3 per the NVIDIA H100
 * datasheet, Llama-3.1-8B, TP 1, roofline latency, least-load router) serves synthetic workloads
 * of 10^4, 10^5 and 10^6 requests: Poisson arrivals at 200 req/s in total (25 req/s per
 * instance) with input lengths uniform in [128, 1024] and output lengths uniform in [32, 256]
 * tokens. One H100 serves about 37 req/s of 512 + 128 tokens in our roofline model (the quick
 * form at 40 req/s saturates at a 27 ms TPOT with 128 running), so 25 req/s each keeps every
 * instance busy but the queues bounded: the run is in steady state and each size simulates
 * 10x the time of the previous one.
 *
 * Each run is a child `servesim run --cluster ... --workload ... --output-dir ...` (the command's
 * own code path, outputs included), so wall time and peak RSS are the child's (wait4's
 * ru_maxrss). Prints one line per size (with the CPU time per simulated request) and the growth
 * of wall time and peak RSS per 10x requests: wall time should grow ~10x (linear), peak RSS should
 * stay nearly flat (memory must not grow with finished requests; the workload is streamed and the
 * outputs are written as requests finish).
 *
 * With --cluster pd (or both; the default is colocated) the same sizes run on a disaggregated
 * cluster: 8 nodes of 8 x H100-SXM (NVLink 900 GB/s, one 400 Gb/s = 50 GB/s NIC per GPU between
 * nodes, the DGX H100 reference architecture), 16 prefill + 16 decode instances of Llama-3.1-8B at
 * TP 2 (nodes 0-3 prefill, 4-7 decode, so every KV transfer crosses the fabric; TP all-reduces run
 * on NVLink over the same flow network). The workload is trace-shaped, drawn by the workloads
 * generator: input and output lengths from the same row of the Azure LLM inference trace 2023
 * (conv,
 * ../shared/traces/azure_llm_2023; mean 1,155 / 211 tokens) and inter-arrival gaps resampled
 * from that trace's timestamps (`trace:` arrivals), scaled to --pd-qps (default 400 req/s, 25
 * per prefill/decode pair: busy but stable in the roofline model, see docs/outputs.md).
 *
 * usage: bench_serving_scale [--sizes 10000,100000,1000000] [--qps R] [--pd-qps R]
 *                            [--cluster colocated|pd|both] [--trace CSV] [--timeout SECONDS]
 *                            [--max-mem-gb G] [--servesim PATH] [--keep]
 * --max-mem-gb caps each child's address space (default 16; 0 = none).
 * The workload and config files go to a temporary directory (removed unless --keep). */
#define _DEFAULT_SOURCE /* wait4 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "bench/child.h"
#include "workloads/workloads.h"

#define N_INSTANCES 8
#define DEFAULT_QPS 200.0
#define DEFAULT_PD_QPS 400.0
#define PD_NODES 8
#define PD_INST_PER_NODE 4 /* TP 2 on 8 GPUs */
#define DEFAULT_TRACE "../shared/traces/azure_llm_2023/AzureLLMInferenceTrace_conv.csv"
#define WORKLOAD_SEED 20240501u /* fixed: every run of the bench simulates the same requests */

struct result {
    gboolean ok;
    gboolean timed_out;
    double wall_s;
    double cpu_s; /* user + system of the child (wall time is noisy on a shared machine) */
    double rss_mb;
    double makespan_s; /* simulated, from summary.json */
};

/* LLMServingSim's cluster config (the layout of configs/cluster/ files). */
static gboolean write_cluster(const char *path, GError **error)
{
    GString *s = g_string_new("{\n  \"num_nodes\": 1,\n  \"link_bw\": 112,\n"
                              "  \"link_latency\": 0,\n  \"nodes\": [\n    {\n"
                              "      \"num_instances\": 8,\n"
                              "      \"cpu_mem\": {\"mem_size\": 512, \"mem_bw\": 256, "
                              "\"mem_latency\": 0},\n      \"instances\": [\n");
    for (int i = 0; i < N_INSTANCES; i++)
        g_string_append_printf(s,
                               "        {\"model_name\": \"meta-llama/Llama-3.1-8B\", "
                               "\"hardware\": \"H100-SXM\", \"npu_mem\": {\"mem_size\": 80, "
                               "\"mem_bw\": 3350, \"mem_latency\": 0}, \"num_npus\": 1, "
                               "\"tp_size\": 1, \"pd_type\": null}%s\n",
                               i + 1 < N_INSTANCES ? "," : "");
    g_string_append(s, "      ]\n    }\n  ]\n}\n");
    gboolean ok = g_file_set_contents(path, s->str, (gssize)s->len, error);
    g_string_free(s, TRUE);
    return ok;
}

/* The disaggregated cluster: nodes 0-3 hold the prefill instances, 4-7 the decode ones. link_bw
 * per dimension: NVLink 4 (900 GB/s per H100) in a node, 50 GB/s (400 Gb/s ConnectX-7 per GPU)
 * between nodes; latencies 0 as LLMServingSim's configs set. */
static gboolean write_pd_cluster(const char *path, GError **error)
{
    GString *s = g_string_new(NULL);
    g_string_append_printf(s,
                           "{\n  \"num_nodes\": %d,\n  \"link_bw\": [900, 50],\n"
                           "  \"link_latency\": 0,\n  \"nodes\": [\n",
                           PD_NODES);
    for (int n = 0; n < PD_NODES; n++) {
        g_string_append_printf(s,
                               "    {\"num_instances\": %d, \"cpu_mem\": {\"mem_size\": 512, "
                               "\"mem_bw\": 256, \"mem_latency\": 0},\n     \"instances\": [\n",
                               PD_INST_PER_NODE);
        for (int i = 0; i < PD_INST_PER_NODE; i++)
            g_string_append_printf(
                s,
                "      {\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100-SXM\", "
                "\"npu_mem\": {\"mem_size\": 80, \"mem_bw\": 3350, \"mem_latency\": 0}, "
                "\"num_npus\": 2, \"tp_size\": 2, \"pd_type\": \"%s\"}%s\n",
                n < PD_NODES / 2 ? "prefill" : "decode", i + 1 < PD_INST_PER_NODE ? "," : "");
        g_string_append_printf(s, "     ]}%s\n", n + 1 < PD_NODES ? "," : "");
    }
    g_string_append(s, "  ]\n}\n");
    gboolean ok = g_file_set_contents(path, s->str, (gssize)s->len, error);
    g_string_free(s, TRUE);
    return ok;
}

/* The trace-shaped workload of the disaggregated cluster, from the workloads generator (joint
 * empirical lengths from the trace's rows, `trace:` arrivals), written as LLMServingSim JSONL. */
static gboolean write_trace_workload(const char *path, long n, double qps, const char *trace,
                                     GError **error)
{
    struct sv_wl_gen_cfg g = {.seed = WORKLOAD_SEED, .name = "bench/pd", .count = (uint64_t)n};
    g.arrival = (struct sv_wl_arrival){SV_WL_ARRIVAL_TRACE, qps, 0, trace};
    g.input_len = (struct sv_wl_len){
        .kind = SV_WL_LEN_EMPIRICAL, .path = (char *)trace, .column = (char *)"ContextTokens"};
    g.output_len = (struct sv_wl_len){
        .kind = SV_WL_LEN_EMPIRICAL, .path = (char *)trace, .column = (char *)"GeneratedTokens"};
    sv_wl_source *src = sv_wl_generator_new(&g, error); /* copies the strings */
    if (!src)
        return FALSE;
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno), "cannot write %s: %s",
                    path, g_strerror(errno));
        sv_wl_source_free(src);
        return FALSE;
    }
    sv_wl_item it = SV_WL_ITEM_INIT;
    int rc;
    while ((rc = sv_wl_next(src, &it, error)) == 1)
        fprintf(f,
                "{\"input_toks\":%" G_GINT64_FORMAT ",\"output_toks\":%" G_GINT64_FORMAT
                ",\"arrival_time_ns\":%" G_GINT64_FORMAT "}\n",
                it.reqs[0].input_tokens, it.reqs[0].output_tokens, (gint64)it.arrival_ns);
    sv_wl_item_clear(&it);
    sv_wl_source_free(src);
    if (fclose(f) != 0 && rc == 0) {
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno), "cannot write %s: %s",
                    path, g_strerror(errno));
        return FALSE;
    }
    return rc == 0;
}

/* LLMServingSim flat JSONL requests (workloads/README.md): input_toks, output_toks,
 * arrival_time_ns. Poisson arrivals: exponential gaps with mean 1/qps. */
static gboolean write_workload(const char *path, long n, double qps, GError **error)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno), "cannot write %s: %s",
                    path, g_strerror(errno));
        return FALSE;
    }
    GRand *rng = g_rand_new_with_seed(WORKLOAD_SEED);
    double t_ns = 0.0;
    for (long i = 0; i < n; i++) {
        double u = g_rand_double(rng); /* [0, 1) */
        t_ns += -log(1.0 - u) / qps * 1e9;
        int in = g_rand_int_range(rng, 128, 1025);
        int out = g_rand_int_range(rng, 32, 257);
        fprintf(f, "{\"input_toks\":%d,\"output_toks\":%d,\"arrival_time_ns\":%.0f}\n", in, out,
                t_ns);
    }
    g_rand_free(rng);
    if (fclose(f) != 0) {
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno), "cannot write %s: %s",
                    path, g_strerror(errno));
        return FALSE;
    }
    return TRUE;
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

/* `max_mem_gb` caps the child's address space (--max-mem-gb): a run whose memory grows without
 * bound fails instead of pushing the shared machine into swap. 0 = none. */
static struct result run_one(const char *servesim, const char *dir, const char *cluster,
                             const char *workload, int timeout_s, double max_mem_gb)
{
    struct result res = {0};
    g_autofree char *out_dir = g_build_filename(dir, "out", NULL);
    g_autofree char *log_path = g_build_filename(dir, "stdout.txt", NULL);
    const char *argv[] = {servesim,    "run",      "--cluster",    cluster, "--workload", workload,
                          "--latency", "roofline", "--output-dir", out_dir, NULL};
    struct sv_bench_child c;
    sv_bench_run_child(argv, log_path, timeout_s, max_mem_gb, &c);
    if (!c.started)
        return res;
    res.wall_s = c.wall_s;
    res.rss_mb = c.rss_mb;
    res.cpu_s = c.cpu_s;
    res.timed_out = c.timed_out;
    res.ok = !c.timed_out && c.exit_status == 0;
    if (!res.ok && !res.timed_out)
        fprintf(stderr, "servesim exited with status %d (see %s)\n", c.exit_status, log_path);
    res.makespan_s = res.ok ? read_makespan(out_dir) : NAN;
    return res;
}

/* Run every size on one cluster; prints a table. `pd` picks the trace-shaped workload. */
static int run_sizes(const char *servesim, const char *root, const char *tag, const char *cluster,
                     gboolean pd, GStrv sizes, double qps, const char *trace, int timeout_s,
                     double max_mem_gb, gboolean keep)
{
    printf("%10s %10s %10s %12s %14s %10s %12s\n", "requests", "wall_s", "cpu_s", "sim_s",
           "requests/s", "rss_MB", "cpu_us/req");
    struct result prev = {0};
    long prev_n = 0;
    for (int k = 0; sizes[k] != NULL; k++) {
        g_autoptr(GError) err = NULL;
        long n = atol(sizes[k]);
        if (n <= 0) {
            fprintf(stderr, "bench_serving_scale: bad size '%s'\n", sizes[k]);
            return 2;
        }
        g_autofree char *sub = g_strdup_printf("%s/%s%ld", root, tag, n);
        g_mkdir_with_parents(sub, 0755);
        g_autofree char *wl = g_build_filename(sub, "workload.jsonl", NULL);
        gboolean ok =
            pd ? write_trace_workload(wl, n, qps, trace, &err) : write_workload(wl, n, qps, &err);
        if (!ok) {
            fprintf(stderr, "bench_serving_scale: %s\n", err->message);
            return 1;
        }
        struct result r = run_one(servesim, sub, cluster, wl, timeout_s, max_mem_gb);
        if (!r.ok) {
            printf("%10ld %10s\n", n, r.timed_out ? "timeout" : "failed");
            return 1;
        }
        printf("%10ld %10.3f %10.3f %12.1f %14.0f %10.1f %12.1f", n, r.wall_s, r.cpu_s,
               r.makespan_s, (double)n / r.wall_s, r.rss_mb, 1e6 * r.cpu_s / (double)n);
        if (prev.ok)
            printf("   x%.1f requests: wall x%.2f, cpu x%.2f, rss x%.2f",
                   (double)n / (double)prev_n, r.wall_s / prev.wall_s, r.cpu_s / prev.cpu_s,
                   r.rss_mb / prev.rss_mb);
        putchar('\n');
        fflush(stdout);
        if (!keep) /* the 10^6 workload is ~60 MB: drop it once run */
            g_unlink(wl);
        prev = r;
        prev_n = n;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *servesim = SV_SERVESIM_BIN;
    const char *sizes_arg = "10000,100000,1000000";
    /* colocated by default (bench/run stays short); --cluster pd is issue 11's disaggregated
     * target (docs/outputs.md). */
    const char *which = "colocated";
    const char *trace = DEFAULT_TRACE;
    double qps = DEFAULT_QPS, pd_qps = DEFAULT_PD_QPS;
    int timeout_s = 600;
    double max_mem_gb = 16.0;
    gboolean keep = FALSE;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
            sizes_arg = argv[++i];
        else if (!strcmp(argv[i], "--qps") && i + 1 < argc)
            qps = atof(argv[++i]);
        else if (!strcmp(argv[i], "--pd-qps") && i + 1 < argc)
            pd_qps = atof(argv[++i]);
        else if (!strcmp(argv[i], "--cluster") && i + 1 < argc)
            which = argv[++i];
        else if (!strcmp(argv[i], "--trace") && i + 1 < argc)
            trace = argv[++i];
        else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
            timeout_s = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-mem-gb") && i + 1 < argc)
            max_mem_gb = atof(argv[++i]);
        else if (!strcmp(argv[i], "--servesim") && i + 1 < argc)
            servesim = argv[++i];
        else if (!strcmp(argv[i], "--keep"))
            keep = TRUE;
        else {
            fprintf(
                stderr,
                "usage: bench_serving_scale [--sizes N,N,...] [--qps R] [--pd-qps R] "
                "[--cluster colocated|pd|both] [--trace CSV] [--timeout SECONDS] [--max-mem-gb G] "
                "[--servesim PATH] [--keep]\n");
            return 2;
        }
    }
    gboolean colo = !strcmp(which, "colocated") || !strcmp(which, "both");
    gboolean pd = !strcmp(which, "pd") || !strcmp(which, "both");
    if (!(qps > 0) || !(pd_qps > 0) || timeout_s <= 0 || (!colo && !pd)) {
        fprintf(stderr, "bench_serving_scale: --qps, --pd-qps and --timeout must be positive, "
                        "--cluster colocated, pd or both\n");
        return 2;
    }
    g_auto(GStrv) sizes = g_strsplit(sizes_arg, ",", -1);
    g_autoptr(GError) err = NULL;
    g_autofree char *root = g_dir_make_tmp("bench_serving_scale_XXXXXX", &err);
    if (root == NULL) {
        fprintf(stderr, "bench_serving_scale: %s\n", err->message);
        return 1;
    }
    int status = 0;
    if (colo) {
        g_autofree char *cluster = g_build_filename(root, "cluster.json", NULL);
        if (!write_cluster(cluster, &err)) {
            fprintf(stderr, "bench_serving_scale: %s\n", err->message);
            return 1;
        }
        printf("servesim run: %d x H100-SXM, Llama-3.1-8B, roofline, Poisson %.0f req/s, "
               "input U[128,1024], output U[32,256]\n",
               N_INSTANCES, qps);
        status = run_sizes(servesim, root, "n", cluster, FALSE, sizes, qps, NULL, timeout_s,
                           max_mem_gb, keep);
    }
    if (pd && status == 0) {
        g_autofree char *cluster = g_build_filename(root, "cluster_pd.json", NULL);
        if (!write_pd_cluster(cluster, &err)) {
            fprintf(stderr, "bench_serving_scale: %s\n", err->message);
            return 1;
        }
        printf("%sservesim run: disaggregated, %d prefill + %d decode x (2 x H100-SXM, TP 2), "
               "Llama-3.1-8B, roofline, KV whole over a 50 GB/s fabric;\n  trace-shaped: Azure "
               "2023 conv lengths and gaps (%s), %.0f req/s\n",
               colo ? "\n" : "", PD_NODES * PD_INST_PER_NODE / 2, PD_NODES * PD_INST_PER_NODE / 2,
               trace, pd_qps);
        status = run_sizes(servesim, root, "pd", cluster, TRUE, sizes, pd_qps, trace, timeout_s,
                           max_mem_gb, keep);
    }
    if (keep) {
        printf("files kept in %s\n", root);
    } else {
        g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", root);
        if (system(cmd) != 0)
            fprintf(stderr, "bench_serving_scale: could not remove %s\n", root);
    }
    return status;
}
