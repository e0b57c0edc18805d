/* `mpirun -n 3 servesim sweep SPEC --mpi` (docs/sweep.md, "MPI"): the task farm's sweep.csv and
 * point folders are byte-identical to a local sweep's, for a grid and for a goal search (whose
 * order depends on results). Skipped (exit 77, with the reason) when mpirun is not installed or
 * servesim was built without MPI. As CI runs as root, mpirun gets --allow-run-as-root and
 * --oversubscribe (3 ranks on 2 cores); Open MPI's own allocations are not freed at exit, so
 * LeakSanitizer is off for the ranks. */
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "tests/cli/sweep_test_util.h"

static char *tmp, *mpirun, *timeout_bin;

static int run_mpi(const char *spec, const char *out, const char *extra)
{
    const char *argv[] = {timeout_bin,
                          "120",
                          mpirun,
                          "--allow-run-as-root",
                          "--oversubscribe",
                          "-n",
                          "3",
                          SV_SERVESIM_BIN,
                          "sweep",
                          spec,
                          "-o",
                          out,
                          "-q",
                          "--mpi",
                          extra,
                          NULL};
    g_autofree char *o = NULL, *e = NULL;
    int st = -1;
    if (!sv_test_spawn(argv, &o, &e, &st))
        return -1;
    if (st != 0)
        fprintf(stderr, "\nmpirun exit %d\nstdout:\n%s\nstderr:\n%s\n", st, o, e);
    return st;
}

static const char small_run[] = "run:\n"
                                "  model: Llama-2-7B\n"
                                "  hardware: A100-80GB\n"
                                "  latency: roofline\n"
                                "  requests: 20\n"
                                "  input-len: 128\n"
                                "  output-len: 16\n";

static void test_grid(void)
{
    g_autofree char *spec = sv_sweep_test_spec(tmp, "grid.yaml", small_run,
                                               "axes:\n"
                                               "  - {name: tp, values: [1, 2]}\n"
                                               "  - {name: qps, values: [2, 4, 8]}\n");
    g_autofree char *local = g_build_filename(tmp, "local", NULL);
    g_autofree char *mpi = g_build_filename(tmp, "mpi", NULL);
    SV_ASSERT_EQ_I64(sv_sweep_test_run(spec, local, "--jobs", "2", NULL), 0);
    SV_ASSERT_EQ_I64(run_mpi(spec, mpi, NULL), 0);
    g_autoptr(GPtrArray) rows = sv_sweep_test_csv(mpi);
    CU_ASSERT_EQUAL(rows->len, 7);
    CU_ASSERT_TRUE(sv_sweep_test_same_tree(local, mpi));
}

static void test_goal(void)
{
    g_autofree char *spec = sv_sweep_test_spec(tmp, "goal.yaml", small_run,
                                               "axes:\n"
                                               "  - {name: tp, values: [1, 2]}\n"
                                               "  - {name: qps, values: [2, 4, 8]}\n"
                                               "goal: {at: 4, slo: {p99_tpot_ms: 8}}\n");
    g_autofree char *local = g_build_filename(tmp, "glocal", NULL);
    g_autofree char *mpi = g_build_filename(tmp, "gmpi", NULL);
    SV_ASSERT_EQ_I64(sv_sweep_test_run(spec, local, "--goal", NULL, NULL), 0);
    SV_ASSERT_EQ_I64(run_mpi(spec, mpi, "--goal"), 0);
    CU_ASSERT_TRUE(sv_sweep_test_same_tree(local, mpi));
}

int main(void)
{
    mpirun = g_find_program_in_path("mpirun");
    timeout_bin = g_find_program_in_path("timeout"); /* coreutils: a hung mpirun fails the test */
    g_assert(timeout_bin);
    if (!mpirun) {
        printf("SKIP: test_sweep_mpi: mpirun not found (Debian: openmpi-bin libopenmpi-dev)\n");
        return SV_TEST_SKIP_CODE;
    }
    const char *probe[] = {SV_SERVESIM_BIN, "sweep", "/nonexistent.yaml", "--mpi", NULL};
    g_autofree char *po = NULL, *pe = NULL;
    int st;
    if (sv_test_spawn(probe, &po, &pe, &st) && strstr(pe, "built without MPI")) {
        printf("SKIP: test_sweep_mpi: servesim was built without MPI (libopenmpi-dev absent at "
               "configure time)\n");
        return SV_TEST_SKIP_CODE;
    }
    /* Open MPI leaks by design; fork warnings do not apply (points start with posix_spawn). */
    g_setenv("ASAN_OPTIONS", "detect_leaks=0", TRUE);
    g_setenv("OMPI_MCA_mpi_warn_on_fork", "0", TRUE);
    tmp = sv_test_tmpdir();
    static const sv_test_case cases[] = {
        {"grid", test_grid},
        {"goal", test_goal},
        {NULL, NULL},
    };
    sv_test_add_suite("sweep_mpi", cases);
    int rc = sv_test_run();
    sv_test_rmtree(tmp);
    g_free(tmp);
    g_free(mpirun);
    g_free(timeout_bin);
    return rc;
}
