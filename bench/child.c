#define _DEFAULT_SOURCE /* wait4 */
#include "bench/child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

double sv_bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* In the child: stdout to the file, the time limit and the address-space cap. */
static void child_setup(const char *stdout_path, int timeout_s, double max_mem_gb)
{
    int fd = open(stdout_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        _exit(126);
    dup2(fd, STDOUT_FILENO);
    close(fd);
    alarm((unsigned)timeout_s); /* SIGALRM ends a run that takes too long */
    if (max_mem_gb > 0) {
        struct rlimit rl;
        rl.rlim_cur = rl.rlim_max = (rlim_t)(max_mem_gb * 1073741824.0);
        setrlimit(RLIMIT_AS, &rl);
    }
}

/* In the parent: wait for the child and fill `out`. */
static void child_wait(pid_t pid, double t0, struct sv_bench_child *out)
{
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof(ru));
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) {
            perror("wait4");
            return;
        }
    }
    out->started = TRUE;
    out->wall_s = sv_bench_now_s() - t0;
    out->rss_mb = (double)ru.ru_maxrss / 1024.0; /* ru_maxrss is in KiB on Linux */
    out->cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
                 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
    out->timed_out = WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM;
    out->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

void sv_bench_run_child(const char *const *argv, const char *stdout_path, int timeout_s,
                        double max_mem_gb, struct sv_bench_child *out)
{
    memset(out, 0, sizeof(*out));
    double t0 = sv_bench_now_s();
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return;
    }
    if (pid == 0) {
        child_setup(stdout_path, timeout_s, max_mem_gb);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    child_wait(pid, t0, out);
}

/* Linux >= 4.0: writing 5 to /proc/self/clear_refs resets the peak RSS (VmHWM, which ru_maxrss
 * reports at exit) to the current RSS. */
static gboolean reset_peak_rss(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY);
    if (fd < 0)
        return FALSE;
    gboolean ok = write(fd, "5", 1) == 1;
    close(fd);
    return ok;
}

gboolean sv_bench_run_fn(int (*fn)(void *arg), void *arg, const char *stdout_path, int timeout_s,
                         double max_mem_gb, struct sv_bench_child *out)
{
    memset(out, 0, sizeof(*out));
    fflush(NULL); /* nothing buffered in the parent is written twice */
    /* Whether the reset works is the same in parent and child: try it here, where it can be
     * reported. */
    gboolean reset_ok = reset_peak_rss();
    double t0 = sv_bench_now_s();
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return reset_ok;
    }
    if (pid == 0) {
        child_setup(stdout_path, timeout_s, max_mem_gb);
        reset_peak_rss();
        int rc = fn(arg);
        fflush(NULL);
        _exit(rc);
    }
    child_wait(pid, t0, out);
    return reset_ok;
}
