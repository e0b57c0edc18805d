/* Shared helpers for servesim's CUnit suites. */
#ifndef SV_TEST_UTIL_H
#define SV_TEST_UTIL_H

#include <CUnit/CUnit.h>
#include <glib.h>

/* Reference data, relative to the repository root (tests run there). */
#define SV_SHARED "../shared"

typedef struct {
    const char *name;
    CU_TestFunc fn;
} sv_test_case;

/* Add a suite with a NULL-terminated array of cases. */
void sv_test_add_suite(const char *suite, const sv_test_case *cases);

/* Run every registered suite with CUnit's basic runner; returns 0 only when all tests pass
 * (CUnit's runner alone does not set the exit status). */
int sv_test_run(void);

/* Run a command line (argv, NULL-terminated); capture stdout/stderr (caller frees) and the exit
 * status. Returns FALSE if it could not be spawned. */
gboolean sv_test_spawn(const char *const *argv, char **out, char **err, int *status);

/* A fresh temporary directory (removed recursively by sv_test_rmtree). */
char *sv_test_tmpdir(void);
void sv_test_rmtree(const char *path);

#define SV_ASSERT_EQ_I64(a, b) CU_ASSERT_EQUAL((long long)(a), (long long)(b))

#endif
