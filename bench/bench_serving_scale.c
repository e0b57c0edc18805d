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
 * ru_maxrss). Prints one line per size and the growth of wall time and peak RSS per 10x
 * requests: wall time should grow ~10x (linear), peak RSS should stay nearly flat (memory must
 * not grow with finished requests; the workload is streamed and the outputs are written as
 * requests finish).
 *
 * usage: bench_serving_scale [--sizes 10000,100000,1000000] [--qps R] [--timeout SECONDS]
 *                            [--servesim PATH] [--keep]
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

#define N_INSTANCES 8
#define DEFAULT_QPS 200.0
#define WORKLOAD_SEED 20240501u /* fixed: every run of the bench simulates the same requests */

struct result {
    gboolean ok;
    gboolean timed_out;
    double wall_s;
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

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
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

static struct result run_one(const char *servesim, const char *dir, const char *cluster,
                             const char *workload, int timeout_s)
{
    struct result res = {0};
    g_autofree char *out_dir = g_build_filename(dir, "out", NULL);
    g_autofree char *log_path = g_build_filename(dir, "stdout.txt", NULL);
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return res;
    }
    if (pid == 0) {
        int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            _exit(126);
        dup2(fd, STDOUT_FILENO);
        close(fd);
        alarm((unsigned)timeout_s); /* SIGALRM ends a run that takes too long */
        execl(servesim, servesim, "run", "--cluster", cluster, "--workload", workload, "--latency",
              "roofline", "--output-dir", out_dir, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof(ru));
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) {
            perror("wait4");
            return res;
        }
    }
    res.wall_s = now_s() - t0;
    res.rss_mb = (double)ru.ru_maxrss / 1024.0; /* Linux: KiB */
    res.timed_out = WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM;
    res.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!res.ok && !res.timed_out)
        fprintf(stderr, "servesim exited with status %d (see %s)\n",
                WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status), log_path);
    res.makespan_s = res.ok ? read_makespan(out_dir) : NAN;
    return res;
}

int main(int argc, char **argv)
{
    const char *servesim = SV_SERVESIM_BIN;
    const char *sizes_arg = "10000,100000,1000000";
    double qps = DEFAULT_QPS;
    int timeout_s = 600;
    gboolean keep = FALSE;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
            sizes_arg = argv[++i];
        else if (!strcmp(argv[i], "--qps") && i + 1 < argc)
            qps = atof(argv[++i]);
        else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
            timeout_s = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--servesim") && i + 1 < argc)
            servesim = argv[++i];
        else if (!strcmp(argv[i], "--keep"))
            keep = TRUE;
        else {
            fprintf(stderr,
                    "usage: bench_serving_scale [--sizes N,N,...] [--qps R] [--timeout SECONDS] "
                    "[--servesim PATH] [--keep]\n");
            return 2;
        }
    }
    if (!(qps > 0) || timeout_s <= 0) {
        fprintf(stderr, "bench_serving_scale: --qps and --timeout must be positive\n");
        return 2;
    }
    g_auto(GStrv) sizes = g_strsplit(sizes_arg, ",", -1);
    g_autoptr(GError) err = NULL;
    g_autofree char *root = g_dir_make_tmp("bench_serving_scale_XXXXXX", &err);
    if (root == NULL) {
        fprintf(stderr, "bench_serving_scale: %s\n", err->message);
        return 1;
    }
    g_autofree char *cluster = g_build_filename(root, "cluster.json", NULL);
    if (!write_cluster(cluster, &err)) {
        fprintf(stderr, "bench_serving_scale: %s\n", err->message);
        return 1;
    }
    printf("servesim run: %d x H100-SXM, Llama-3.1-8B, roofline, Poisson %.0f req/s, "
           "input U[128,1024], output U[32,256]\n",
           N_INSTANCES, qps);
    printf("%10s %10s %12s %14s %10s\n", "requests", "wall_s", "sim_s", "requests/s", "rss_MB");
    struct result prev = {0};
    long prev_n = 0;
    int status = 0;
    for (int k = 0; sizes[k] != NULL; k++) {
        long n = atol(sizes[k]);
        if (n <= 0) {
            fprintf(stderr, "bench_serving_scale: bad size '%s'\n", sizes[k]);
            return 2;
        }
        g_autofree char *sub = g_strdup_printf("%s/n%ld", root, n);
        g_mkdir_with_parents(sub, 0755);
        g_autofree char *wl = g_build_filename(sub, "workload.jsonl", NULL);
        if (!write_workload(wl, n, qps, &err)) {
            fprintf(stderr, "bench_serving_scale: %s\n", err->message);
            return 1;
        }
        struct result r = run_one(servesim, sub, cluster, wl, timeout_s);
        if (!r.ok) {
            printf("%10ld %10s\n", n, r.timed_out ? "timeout" : "failed");
            status = 1;
            break;
        }
        printf("%10ld %10.3f %12.1f %14.0f %10.1f", n, r.wall_s, r.makespan_s, (double)n / r.wall_s,
               r.rss_mb);
        if (prev.ok)
            printf("   x%.1f requests: wall x%.2f, rss x%.2f", (double)n / (double)prev_n,
                   r.wall_s / prev.wall_s, r.rss_mb / prev.rss_mb);
        putchar('\n');
        fflush(stdout);
        if (!keep) /* the 10^6 workload is ~60 MB: drop it once run */
            g_unlink(wl);
        prev = r;
        prev_n = n;
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
