/* servesim sweep --mpi: a task farm over MPI ranks (Open MPI from Debian). Rank 0 owns the
 * scheduler: it hands a point index to each idle worker rank, receives the run's wait status back
 * and reads the point's outputs itself (the output folder is on a filesystem every rank sees, as
 * for a Slurm array), so that sweep.csv and the goal search come out of one process exactly as a
 * local sweep's do. Ranks 1..K-1 run one point at a time; with a single rank, rank 0 runs the
 * points itself, one at a time. Rank 0 does not run points next to coordinating: a blocking
 * MPI_Recv keeps it simple, and a sweep's runs dwarf one rank. */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <sys/wait.h>

#include "cli/sweep_internal.h"

enum { TAG_WORK = 1, TAG_DONE = 2, TAG_STOP = 3 };

static void worker(sv_sweep_ctx *c)
{
    for (;;) {
        int k;
        MPI_Status st;
        MPI_Recv(&k, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        if (st.MPI_TAG == TAG_STOP)
            return;
        g_autoptr(GError) e = NULL;
        pid_t pid = sv_cli_sweep_start(c, (guint)k, &e);
        int msg[2] = {k, -1}; /* -1: could not start (rank 0 records it as a failed point) */
        if (pid > 0) {
            while (waitpid(pid, &msg[1], 0) < 0 && errno == EINTR)
                ;
        } else {
            fprintf(stderr, "servesim sweep: point %d: %s\n", k, e->message);
        }
        MPI_Send(msg, 2, MPI_INT, 0, TAG_DONE, MPI_COMM_WORLD);
    }
}

static void finish(sv_sweep_ctx *c, sv_sweep_sched *q, int k, int wait_status)
{
    struct sv_sweep_result r = {0};
    if (wait_status == -1) {
        r.status = SV_SWEEP_FAILED;
        r.error = g_strdup("the point's run could not be started (see that rank's stderr)");
        g_free(c->rows->pdata[k]);
        c->rows->pdata[k] = sv_planner_sweep_csv_row(c->spec, (guint)k, &r);
        c->failed++;
    } else {
        sv_cli_sweep_finish(c, (guint)k, wait_status, &r);
    }
    sv_planner_sweep_sched_done(q, (guint)k, &r);
    sv_planner_sweep_result_clear(&r);
}

gboolean sv_cli_sweep_mpi(sv_sweep_ctx *c, sv_sweep_sched *q, int *nranks)
{
    int rank, size;
    MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    *nranks = size;
    if (rank != 0) {
        c->quiet = TRUE;
        worker(c);
        MPI_Finalize();
        return FALSE;
    }
    if (size == 1) {
        int k;
        while ((k = sv_planner_sweep_sched_next(q)) >= 0) {
            struct sv_sweep_result r = {0};
            sv_cli_sweep_run_one(c, (guint)k, &r);
            sv_planner_sweep_sched_done(q, (guint)k, &r);
            sv_planner_sweep_result_clear(&r);
        }
        MPI_Finalize();
        return TRUE;
    }
    gboolean *busy = g_new0(gboolean, size);
    int nbusy = 0;
    for (;;) {
        for (int w = 1; w < size; w++) {
            if (busy[w])
                continue;
            int k = sv_planner_sweep_sched_next(q);
            if (k < 0)
                break;
            MPI_Send(&k, 1, MPI_INT, w, TAG_WORK, MPI_COMM_WORLD);
            busy[w] = TRUE;
            nbusy++;
        }
        if (nbusy == 0)
            break;
        int msg[2];
        MPI_Status st;
        MPI_Recv(msg, 2, MPI_INT, MPI_ANY_SOURCE, TAG_DONE, MPI_COMM_WORLD, &st);
        busy[st.MPI_SOURCE] = FALSE;
        nbusy--;
        finish(c, q, msg[0], msg[1]);
    }
    for (int w = 1; w < size; w++) {
        int none = -1;
        MPI_Send(&none, 1, MPI_INT, w, TAG_STOP, MPI_COMM_WORLD);
    }
    g_free(busy);
    MPI_Finalize();
    return TRUE;
}
