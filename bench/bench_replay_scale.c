/* bench_replay_scale: how `servesim replay` scales with the number of NPUs.
 *
 * One 64 MiB all-reduce per NPU (a single COMM_COLL_NODE, written by our own Chakra ET writer)
 * on a 1-D Ring and a 1-D Switch of 64, 256, 1024 and 4096 NPUs (50 GB/s, 500 ns per link),
 * system config ../shared/interop/astra-sim/configs/Ring_4chunks.json, for the network models
 * fifo (ASTRA-sim congestion-aware), flow (max-min) and analytical (congestion-unaware), with
 * the collectives in closed form ("fast", the default of `servesim replay`) and with every
 * message sent ("messages", --collectives messages): both must print the same cycles. Each run
 * calls the replay library (sv_replay_run, what `servesim replay` calls) in a forked child, so
 * wall time, CPU time and peak RSS are that run's own: the child's wait4 rusage, its peak mark
 * reset at the fork (bench/child.h), so earlier runs and the workload writing in the parent do
 * not count. Prints one line per run and the growth ratios per 4x NPUs.
 *
 * Reference: ASTRA-sim 518bd51 congestion-aware on the same workload, Ring: 64 NPUs 0.07 s /
 * 14 MB, 256 NPUs 0.65 s / 37 MB, 1024 NPUs 15.4 s / 365 MB (measured by the team, see
 * docs/replay.md).
 *
 * usage: bench_replay_scale [--max-npus N] [--models fifo,flow,analytical] [--topos Ring,Switch]
 *                           [--timeout SECONDS]
 * Run from the repository root (the system config is found at ../shared/...). */
#define _DEFAULT_SOURCE /* wait4 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "bench/child.h"
#include "core/core.h"
#include "network/network.h"
#include "proto/proto.h"
#include "replay/replay.h"

#define SYSTEM_CFG "../shared/interop/astra-sim/configs/Ring_4chunks.json"
#define COMM_BYTES (UINT64_C(64) << 20)

struct astra_ref {
    int npus;
    double wall_s;
    double rss_mb;
};

/* ASTRA-sim congestion-aware, Ring (task statement of the replay benchmark; 4096 not run). */
static const struct astra_ref astra_ring[] = {
    {64, 0.07, 14.0},
    {256, 0.65, 37.0},
    {1024, 15.4, 365.0},
};

struct result {
    gboolean ok;
    gboolean timed_out;
    double wall_s;
    double cpu_s;
    double rss_mb;
    long long cycles;   /* sys[0]'s T */
    gboolean symmetric; /* every NPU printed the same T */
};

/* <dir>/ar.<i>.et for i in 0..n-1: one all-reduce of COMM_BYTES, as ASTRA-sim's
 * microbenchmarks are written (is_cpu_op false, comm_type int64 0, comm_size int64). */
static gboolean write_workload(const char *dir, int n, GError **error)
{
    for (int i = 0; i < n; i++) {
        g_autofree char *path = g_strdup_printf("%s/ar.%d.et", dir, i);
        g_autoptr(sv_proto_writer) w = sv_proto_writer_open(path, error);
        if (w == NULL)
            return FALSE;
        g_autoptr(ChakraProtoMsg__GlobalMetadata) md = sv_proto_metadata_new("0.0.4");
        g_autoptr(ChakraProtoMsg__Node) node =
            sv_proto_node_new(0, "all_reduce_64MiB", CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE);
        sv_proto_node_add_attr(node, sv_proto_attr_new_bool("is_cpu_op", FALSE));
        sv_proto_node_add_attr(node, sv_proto_attr_new_int64("comm_type", 0));
        sv_proto_node_add_attr(node, sv_proto_attr_new_int64("comm_size", (int64_t)COMM_BYTES));
        if (!sv_proto_writer_put_metadata(w, md, error) ||
            !sv_proto_writer_put_node(w, node, error))
            return FALSE;
        if (!sv_proto_writer_close(g_steal_pointer(&w), error))
            return FALSE;
    }
    return TRUE;
}

static gboolean write_network(const char *path, const char *topo, int n, GError **error)
{
    g_autofree char *text = g_strdup_printf("topology: [ %s ]\nnpus_count: [ %d ]\n"
                                            "bandwidth: [ 50.0 ]  # GB/s\n"
                                            "latency: [ 500.0 ]  # ns\n",
                                            topo, n);
    return g_file_set_contents(path, text, -1, error);
}

/* One replay run, in the child: prints "<sys[0]'s T> <1 if every NPU finished with that T>". */
struct job {
    struct sv_replay_opts opts;
    int npus;
};

static int replay_child(void *arg)
{
    const struct job *j = arg;
    struct sv_replay_result res;
    GError *error = NULL;
    if (!sv_replay_run(&j->opts, &res, &error)) {
        fprintf(stderr, "bench: replay: %s\n", error->message);
        g_error_free(error);
        sv_replay_result_clear(&res);
        return 1;
    }
    gboolean symmetric = res.n_finished == j->npus;
    for (int k = 1; k < res.n_finished; k++)
        symmetric = symmetric && res.finished[k].finish_ns == res.finished[0].finish_ns;
    printf("%" G_GINT64_FORMAT " %d\n", res.n_finished > 0 ? res.finished[0].finish_ns : -1,
           symmetric);
    sv_replay_result_clear(&res);
    return 0;
}

static struct result run_one(const char *dir, const char *net_path, const char *model,
                             gboolean messages, int n, int timeout_s)
{
    struct result res = {0};
    g_autofree char *prefix = g_strdup_printf("%s/ar", dir);
    g_autofree char *out_path = g_strdup_printf("%s/stdout.txt", dir);
    struct job job = {
        .opts = {.workload = prefix,
                 .system = SYSTEM_CFG,
                 .network = net_path,
                 .collectives_with_messages = messages},
        .npus = n,
    };
    GError *error = NULL;
    if (!sv_net_model_parse(model, &job.opts.model, &error)) {
        fprintf(stderr, "bench: %s\n", error->message);
        g_error_free(error);
        return res;
    }
    struct sv_bench_child c;
    static gboolean warned;
    if (!sv_bench_run_fn(replay_child, &job, out_path, timeout_s, 0, &c) && !warned) {
        fprintf(stderr, "bench: cannot reset the peak RSS mark (/proc/self/clear_refs): rss_MB "
                        "includes the benchmark's own peak before the fork\n");
        warned = TRUE;
    }
    if (!c.started)
        return res;
    res.wall_s = c.wall_s;
    res.cpu_s = c.cpu_s;
    res.rss_mb = c.rss_mb;
    if (c.timed_out) {
        res.timed_out = TRUE;
        return res;
    }
    g_autofree char *out = NULL;
    long long cycles = -1;
    int symmetric = 0;
    if (c.exit_status != 0 || !g_file_get_contents(out_path, &out, NULL, NULL) ||
        sscanf(out, "%lld %d", &cycles, &symmetric) != 2) {
        fprintf(stderr, "bench: replay (%s, %d NPUs) failed, status %d\n", model, n, c.exit_status);
        return res;
    }
    res.cycles = cycles;
    res.symmetric = symmetric != 0;
    res.ok = res.cycles >= 0;
    return res;
}

static void rmtree(const char *path)
{
    GDir *d = g_dir_open(path, 0, NULL);
    if (d != NULL) {
        const char *name;
        while ((name = g_dir_read_name(d)) != NULL) {
            g_autofree char *child = g_build_filename(path, name, NULL);
            g_unlink(child);
        }
        g_dir_close(d);
    }
    g_rmdir(path);
}

int main(int argc, char **argv)
{
    static const int sizes[] = {64, 256, 1024, 4096};
    const char *models_arg = "fifo,flow,analytical";
    const char *topos_arg = "Ring,Switch";
    const char *colls_arg = "fast,messages";
    int max_npus = 4096;
    int timeout_s = 300;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--max-npus") == 0 && i + 1 < argc)
            max_npus = atoi(argv[++i]);
        else if (strcmp(argv[i], "--models") == 0 && i + 1 < argc)
            models_arg = argv[++i];
        else if (strcmp(argv[i], "--topos") == 0 && i + 1 < argc)
            topos_arg = argv[++i];
        else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
            timeout_s = atoi(argv[++i]);
        else if (strcmp(argv[i], "--collectives") == 0 && i + 1 < argc)
            colls_arg = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s [--max-npus N] [--models fifo,flow,analytical] "
                    "[--topos Ring,Switch] [--collectives fast,messages] [--timeout SECONDS]\n",
                    argv[0]);
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress shows while long runs go on */
    if (!g_file_test(SYSTEM_CFG, G_FILE_TEST_EXISTS)) {
        fprintf(stderr, "bench: %s not found (run from the repository root)\n", SYSTEM_CFG);
        return 2;
    }
    g_auto(GStrv) models = g_strsplit(models_arg, ",", -1);
    g_auto(GStrv) topos = g_strsplit(topos_arg, ",", -1);
    g_auto(GStrv) colls = g_strsplit(colls_arg, ",", -1);
    for (char **c = colls; *c != NULL; c++) {
        if (strcmp(*c, "fast") != 0 && strcmp(*c, "messages") != 0) {
            fprintf(stderr, "bench: --collectives: '%s' (expected fast and/or messages)\n", *c);
            return 2;
        }
    }

    printf("bench_replay_scale: one %llu MiB all-reduce per NPU, %s, 50 GB/s 500 ns links\n",
           (unsigned long long)(COMM_BYTES >> 20), SYSTEM_CFG);
    printf("%-7s %-11s %-9s %6s %10s %10s %10s %14s %9s\n", "topo", "model", "coll", "npus",
           "wall_s", "cpu_s", "rss_MB", "cycles", "symmetric");
    int failures = 0;
    for (char **topo = topos; *topo != NULL; topo++) {
        for (char **model = models; *model != NULL; model++) {
            for (char **coll = colls; *coll != NULL; coll++) {
                gboolean messages = strcmp(*coll, "messages") == 0;
                struct result prev = {0};
                int prev_n = 0;
                for (size_t k = 0; k < G_N_ELEMENTS(sizes); k++) {
                    int n = sizes[k];
                    if (n > max_npus)
                        break;
                    GError *error = NULL;
                    g_autofree char *dir = g_dir_make_tmp("servesim-bench-XXXXXX", &error);
                    if (dir == NULL) {
                        fprintf(stderr, "bench: %s\n", error->message);
                        g_error_free(error);
                        return 1;
                    }
                    g_autofree char *net_path = g_strdup_printf("%s/net.yml", dir);
                    if (!write_workload(dir, n, &error) ||
                        !write_network(net_path, *topo, n, &error)) {
                        fprintf(stderr, "bench: %s\n", error->message);
                        g_error_free(error);
                        rmtree(dir);
                        return 1;
                    }
                    struct result r = run_one(dir, net_path, *model, messages, n, timeout_s);
                    rmtree(dir);
                    if (r.timed_out) {
                        printf("%-7s %-11s %-9s %6d %10s %10s %10.1f %14s %9s\n", *topo, *model,
                               *coll, n, "timeout", "-", r.rss_mb, "-", "-");
                        failures++;
                        break; /* larger sizes would only take longer */
                    }
                    if (!r.ok) {
                        printf("%-7s %-11s %-9s %6d %10s\n", *topo, *model, *coll, n, "failed");
                        failures++;
                        break;
                    }
                    printf("%-7s %-11s %-9s %6d %10.3f %10.3f %10.1f %14lld %9s\n", *topo, *model,
                           *coll, n, r.wall_s, r.cpu_s, r.rss_mb, r.cycles,
                           r.symmetric ? "yes" : "NO");
                    if (!r.symmetric)
                        failures++;
                    if (prev.ok)
                        printf("%-7s %-11s %-9s %6s growth x%d NPUs: cpu x%.2f, rss x%.2f\n", "",
                               "", "", "", n / prev_n, prev.cpu_s > 0 ? r.cpu_s / prev.cpu_s : 0.0,
                               prev.rss_mb > 0 ? r.rss_mb / prev.rss_mb : 0.0);
                    prev = r;
                    prev_n = n;
                }
            }
        }
    }
    printf("\nASTRA-sim reference (congestion-aware = fifo, Ring):\n");
    for (size_t k = 0; k < G_N_ELEMENTS(astra_ring); k++) {
        printf("  %5d NPUs: %6.2f s %6.0f MB", astra_ring[k].npus, astra_ring[k].wall_s,
               astra_ring[k].rss_mb);
        if (k > 0)
            printf("   growth wall x%.2f, rss x%.2f",
                   astra_ring[k].wall_s / astra_ring[k - 1].wall_s,
                   astra_ring[k].rss_mb / astra_ring[k - 1].rss_mb);
        printf("\n");
    }
    return failures == 0 ? 0 : 1;
}
