/* Shared helpers for servesim's CUnit suites. */
#ifndef SV_TEST_UTIL_H
#define SV_TEST_UTIL_H

#include <CUnit/CUnit.h>
#include <glib.h>

/* Reference data, relative to the repository root (tests run there). */
#define SV_SHARED "../shared"

/* ctest's SKIP_RETURN_CODE: a program whose every test needed absent reference data exits with it.
 */
#define SV_TEST_SKIP_CODE 77

/* Reference data a test needs: TRUE when SV_SHARED/<rel> exists. When ../shared is absent it prints
 * "SKIP: <test>: ../shared/<rel> not found (<why>)", counts the running test as skipped and returns
 * FALSE; when ../shared is there but <rel> is not, that is a failure of the running test (the
 * reference data moved), not a skip. */
gboolean sv_test_shared(const char *rel, const char *why);

/* First statement of a test that needs SV_SHARED/<rel>: returns from the test when it is skipped.
 */
#define SV_REQUIRE_SHARED(rel, why)                                                                \
    do {                                                                                           \
        if (!sv_test_shared((rel), (why)))                                                         \
            return;                                                                                \
    } while (0)

/* For a program every test of which needs SV_SHARED/<rel> (call it first in main): when ../shared
 * is absent prints "SKIP: ../shared/<rel> not found (<why>)" and exits SV_TEST_SKIP_CODE. */
void sv_test_require_shared(const char *rel, const char *why);

typedef struct {
    const char *name;
    CU_TestFunc fn;
} sv_test_case;

/* Add a suite with a NULL-terminated array of cases. */
void sv_test_add_suite(const char *suite, const sv_test_case *cases);

/* Run every registered suite with CUnit's basic runner; returns 0 only when all tests pass
 * (CUnit's runner alone does not set the exit status), SV_TEST_SKIP_CODE when every test that ran
 * was skipped by SV_REQUIRE_SHARED. Skipped tests are listed again at the end. */
int sv_test_run(void);

/* Run a command line (argv, NULL-terminated); capture stdout/stderr (caller frees) and the exit
 * status. Returns FALSE if it could not be spawned. */
gboolean sv_test_spawn(const char *const *argv, char **out, char **err, int *status);

/* `bin cmd args...` (args NULL-terminated) through sv_test_spawn: a servesim command as the CLI
 * tests run it (bin: their SV_SERVESIM_BIN). */
gboolean sv_test_servesim(const char *bin, const char *cmd, const char *const *args, char **out,
                          char **err, int *status);

/* The integer in column `column` of data row `row` (1 = the first after the header) of the CSV
 * file `path` (requests.csv, timeseries.csv: no quoted commas); -1 when the file, the row or the
 * column is missing. */
int64_t sv_test_csv_int(const char *path, int row, const char *column);

/* The text of <dir>/<name> (caller frees); a failed read is a test failure and gives "". */
char *sv_test_slurp(const char *dir, const char *name);

/* A fresh temporary directory (removed recursively by sv_test_rmtree). */
char *sv_test_tmpdir(void);
void sv_test_rmtree(const char *path);

/* A one-instance LLMServingSim cluster config written as <dir>/cluster.json (caller frees the
 * path): `model` on one `hardware` NPU of `mem_gib` GiB at mem_util 0.9, tp 1, no PD split. Tests
 * run it with --latency roofline so that nothing from ../shared is needed. */
char *sv_test_write_cluster(const char *dir, const char *model, const char *hardware,
                            double mem_gib);

#define SV_ASSERT_EQ_I64(a, b) CU_ASSERT_EQUAL((long long)(a), (long long)(b))

#endif
