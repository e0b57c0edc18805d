/* Helpers of the sweep tests (test_sweep_cli, test_sweep_mpi, test_sweep_slurm). */
#ifndef SV_SWEEP_TEST_UTIL_H
#define SV_SWEEP_TEST_UTIL_H

#include <glib.h>

/* Write <dir>/<name> = run + axes (two YAML fragments); returns its path. */
char *sv_sweep_test_spec(const char *dir, const char *name, const char *run, const char *axes);
/* servesim sweep SPEC -o OUT [a1 [a2]] -q; returns the exit status (-1 if not started), stdout
 * into *out when out is given; stderr is printed. */
int sv_sweep_test_run(const char *spec, const char *out_dir, const char *a1, const char *a2,
                      char **out);
/* The same, stderr into *err (not printed). */
int sv_sweep_test_run_err(const char *spec, const char *out_dir, const char *a1, const char *a2,
                          char **err);
/* OUT/sweep.csv as rows of fields (GPtrArray of GStrv; row 0 the header); RFC 4180 quotes. */
GPtrArray *sv_sweep_test_csv(const char *out_dir);
/* Field `col` of point row k (k + 1 in the array); "" when absent (a test failure is recorded). */
const char *sv_sweep_test_col(GPtrArray *rows, guint k, const char *col);
/* OUT/points/<k:04>/<file>'s text (caller frees; "" if absent). */
char *sv_sweep_test_read(const char *out_dir, guint k, const char *file);
gboolean sv_sweep_test_point_exists(const char *out_dir, guint k);
/* Byte-identical: two whole trees, two subtrees, or one file; differences are printed. */
gboolean sv_sweep_test_same_tree(const char *a, const char *b);
gboolean sv_sweep_test_same_tree_under(const char *a, const char *b, const char *sub);
gboolean sv_sweep_test_same_file(const char *a, const char *b, const char *rel);

#endif
