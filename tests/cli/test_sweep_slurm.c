/* scripts/sweep.sbatch on a real Slurm (docs/sweep.md, "Slurm"): the test starts a single-node
 * cluster of its own (Debian's slurm-wlm: slurmctld and slurmd as root, auth/none so that no munge
 * daemon is needed, state, spool, logs and free ports in a temporary folder), submits a 3-task
 * array with `sbatch --wait` (bounded by `timeout 120`), merges the shards and compares sweep.csv
 * and every point folder with a local sweep's, byte for byte; then it shuts the cluster down.
 * Skipped (exit 77) with the reason when Slurm is not installed, the test is not root, or the
 * daemons do not bring the node up (their logs are printed). */
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/cli/sweep_test_util.h"

static char *tmp, *conf, *timeout_bin;

/* A TCP port nobody listens on now (the kernel's pick for port 0). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* Run a program found on PATH; its stdout (caller frees) or NULL; *status its exit status. */
static char *run_prog(const char *const *argv, int *status)
{
    g_autofree char *path = g_find_program_in_path(argv[0]);
    if (!path)
        return NULL;
    const char *av[16];
    av[0] = path;
    for (int i = 1; i < 15 && (av[i] = argv[i]); i++)
        ;
    av[15] = NULL;
    char *out = NULL;
    g_autofree char *err = NULL;
    int st = -1;
    if (!sv_test_spawn(av, &out, &err, &st))
        return NULL;
    if (status)
        *status = st;
    if (err && *err)
        fprintf(stderr, "%s: %s", argv[0], err);
    return out;
}

static void print_file(const char *name)
{
    g_autofree char *p = g_build_filename(tmp, name, NULL);
    g_autofree char *text = NULL;
    if (g_file_get_contents(p, &text, NULL, NULL))
        printf("---- %s ----\n%s\n", name, text);
    else
        printf("---- %s: absent ----\n", name);
}

/* Start both daemons and wait (20 s at most) until the node is idle. */
static gboolean start_slurm(void)
{
    char host[256] = {0};
    if (gethostname(host, sizeof host - 1) != 0)
        return FALSE;
    host[strcspn(host, ".")] = '\0';
    int ctld_port = free_port(), d_port = free_port();
    if (ctld_port < 0 || d_port < 0 || ctld_port == d_port)
        return FALSE;
    g_autofree char *text =
        g_strdup_printf("ClusterName=servesimtest\n"
                        "SlurmctldHost=%s\n"
                        "SlurmctldPort=%d\n"
                        "SlurmdPort=%d\n"
                        "AuthType=auth/none\n"
                        "CredType=cred/none\n"
                        "SlurmUser=root\n"
                        "SlurmdUser=root\n"
                        "StateSaveLocation=%s/state\n"
                        "SlurmdSpoolDir=%s/spool\n"
                        "SlurmctldPidFile=%s/slurmctld.pid\n"
                        "SlurmdPidFile=%s/slurmd.pid\n"
                        "SlurmctldLogFile=%s/slurmctld.log\n"
                        "SlurmdLogFile=%s/slurmd.log\n"
                        "ProctrackType=proctrack/linuxproc\n"
                        "TaskPlugin=task/none\n"
                        "SchedulerType=sched/builtin\n"
                        "SelectType=select/cons_tres\n"
                        "SelectTypeParameters=CR_Core\n"
                        "ReturnToService=2\n"
                        "MpiDefault=none\n"
                        "JobCompType=jobcomp/none\n"
                        "AccountingStorageType=accounting_storage/none\n"
                        "JobAcctGatherType=jobacct_gather/none\n"
                        "NodeName=%s CPUs=1 RealMemory=100 State=UNKNOWN\n"
                        "PartitionName=test Nodes=%s Default=YES MaxTime=INFINITE State=UP\n",
                        host, ctld_port, d_port, tmp, tmp, tmp, tmp, tmp, tmp, host, host);
    conf = g_build_filename(tmp, "slurm.conf", NULL);
    g_autofree char *state = g_build_filename(tmp, "state", NULL);
    g_autofree char *spool = g_build_filename(tmp, "spool", NULL);
    g_mkdir_with_parents(state, 0700);
    g_mkdir_with_parents(spool, 0700);
    g_assert(g_file_set_contents(conf, text, -1, NULL));
    g_setenv("SLURM_CONF", conf, TRUE);
    int st = -1;
    g_free(run_prog((const char *[]){"slurmctld", "-f", conf, NULL}, &st));
    if (st != 0)
        return FALSE;
    g_free(run_prog((const char *[]){"slurmd", "-f", conf, NULL}, &st));
    if (st != 0)
        return FALSE;
    for (int i = 0; i < 40; i++) {
        g_autofree char *s = run_prog((const char *[]){"sinfo", "-h", "-o", "%t", NULL}, &st);
        if (s && g_str_has_prefix(s, "idle"))
            return TRUE;
        g_usleep(500000);
    }
    return FALSE;
}

/* Shut the daemons down (scontrol), then signal any that is still there by its pid file. */
static void stop_slurm(void)
{
    g_free(run_prog((const char *[]){"scontrol", "shutdown", NULL}, NULL));
    static const char *const pids[] = {"slurmd.pid", "slurmctld.pid"};
    for (size_t i = 0; i < G_N_ELEMENTS(pids); i++) {
        g_autofree char *p = g_build_filename(tmp, pids[i], NULL);
        for (int t = 0; t < 20 && g_file_test(p, G_FILE_TEST_EXISTS); t++)
            g_usleep(250000);
        g_autofree char *text = NULL;
        if (g_file_get_contents(p, &text, NULL, NULL)) {
            long pid = strtol(text, NULL, 10);
            if (pid > 1)
                kill((pid_t)pid, SIGTERM);
        }
    }
}

static void test_array(void)
{
    g_autofree char *spec = sv_sweep_test_spec(tmp, "grid.yaml",
                                               "run:\n"
                                               "  model: Llama-2-7B\n"
                                               "  hardware: A100-80GB\n"
                                               "  latency: roofline\n"
                                               "  requests: 20\n"
                                               "  input-len: 128\n"
                                               "  output-len: 16\n",
                                               "axes:\n"
                                               "  - {name: tp, values: [1, 2]}\n"
                                               "  - {name: qps, values: [2, 4, 8]}\n");
    g_autofree char *local = g_build_filename(tmp, "local", NULL);
    g_autofree char *slurm = g_build_filename(tmp, "slurm", NULL);
    SV_ASSERT_EQ_I64(sv_sweep_test_run(spec, local, "--jobs", "2", NULL), 0);
    g_autofree char *cwd = g_get_current_dir();
    g_autofree char *script = g_build_filename(cwd, "scripts", "sweep.sbatch", NULL);
    g_autofree char *job_out = g_build_filename(tmp, "job-%A_%a.out", NULL);
    g_autofree char *sbatch = g_find_program_in_path("sbatch");
    g_setenv("SERVESIM", SV_SERVESIM_BIN, TRUE);
    const char *argv[] = {timeout_bin, "120",  sbatch, "--wait", "--array=0-2", "-o",
                          job_out,     script, spec,   slurm,    NULL};
    g_autofree char *o = NULL, *e = NULL;
    int st = -1;
    CU_ASSERT_TRUE_FATAL(sv_test_spawn(argv, &o, &e, &st));
    if (st != 0) {
        printf("\nsbatch exit %d\n%s%s", st, o, e);
        g_autofree char *q = run_prog((const char *[]){"squeue", "-a", NULL}, NULL);
        g_autofree char *a = run_prog((const char *[]){"sacct", "-a", NULL}, NULL);
        printf("squeue:\n%s\nsacct:\n%s\n", q ? q : "", a ? a : "");
        print_file("slurmctld.log");
        print_file("slurmd.log");
    }
    SV_ASSERT_EQ_I64(st, 0);
    g_autofree char *shard1 = g_build_filename(slurm, "shards", "1-of-3.csv", NULL);
    CU_ASSERT_TRUE(g_file_test(shard1, G_FILE_TEST_EXISTS));
    SV_ASSERT_EQ_I64(sv_sweep_test_run(spec, slurm, "--merge", NULL, NULL), 0);
    CU_ASSERT_TRUE(sv_sweep_test_same_file(local, slurm, "sweep.csv"));
    CU_ASSERT_TRUE(sv_sweep_test_same_tree_under(local, slurm, "points"));
}

int main(void)
{
    static const char *const progs[] = {"slurmctld", "slurmd", "sbatch", "sinfo", "scontrol"};
    for (size_t i = 0; i < G_N_ELEMENTS(progs); i++) {
        g_autofree char *p = g_find_program_in_path(progs[i]);
        if (!p) {
            printf("SKIP: test_sweep_slurm: %s not found (Debian: slurm-wlm)\n", progs[i]);
            return SV_TEST_SKIP_CODE;
        }
    }
    if (getuid() != 0) {
        printf("SKIP: test_sweep_slurm: starts slurmctld and slurmd of its own, which needs "
               "root\n");
        return SV_TEST_SKIP_CODE;
    }
    timeout_bin = g_find_program_in_path("timeout");
    g_assert(timeout_bin);
    tmp = sv_test_tmpdir();
    if (!start_slurm()) {
        printf("SKIP: test_sweep_slurm: the single-node Slurm did not come up (its logs "
               "follow)\n");
        print_file("slurm.conf");
        print_file("slurmctld.log");
        print_file("slurmd.log");
        stop_slurm();
        sv_test_rmtree(tmp);
        return SV_TEST_SKIP_CODE;
    }
    static const sv_test_case cases[] = {
        {"array_merge_equals_local", test_array},
        {NULL, NULL},
    };
    sv_test_add_suite("sweep_slurm", cases);
    int rc = sv_test_run();
    stop_slurm();
    sv_test_rmtree(tmp);
    g_free(tmp);
    g_free(conf);
    g_free(timeout_bin);
    return rc;
}
