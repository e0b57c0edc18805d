/* servesim report: one self-contained HTML file (inline SVG plots drawn with PLplot's svg
 * driver, inline CSS, no script, no external URL) from one or several `servesim run` output
 * folders (docs/report.md). Depends on core only: it reads the files a run wrote
 * (summary.json, requests.csv, timeseries.csv, power.csv, run.json), not the simulator.
 *
 * PLplot keeps its streams in library-global state and is not thread-safe: sv_report_html and
 * sv_report_write may run in one thread at a time in a process (a simulation may run beside
 * them; they touch nothing of it). */
#ifndef SV_REPORT_H
#define SV_REPORT_H

#include <glib.h>

#define SV_REPORT_ERROR (sv_report_error_quark())
GQuark sv_report_error_quark(void);
typedef enum {
    SV_REPORT_ERROR_IO,     /* a file or folder cannot be read or written */
    SV_REPORT_ERROR_FORMAT, /* a folder is not a run's output, or a file in it is malformed */
    SV_REPORT_ERROR_PLOT,   /* PLplot could not draw a plot */
} sv_report_error;

/* One run output folder, read whole. */
typedef struct sv_report_run sv_report_run;

/* Read `dir` (a `servesim run --output-dir`): summary.json is required (a folder without one, or
 * whose summary.json lacks the keys every run writes, is not a run's output: an error naming the
 * file and key); requests.csv, timeseries.csv and power.csv are optional (a missing one is
 * recorded with its reason, and the plots that need it say why they are absent); a file that is
 * there but malformed is an error naming PATH:LINE and the column. `label` names the run in
 * legends and the table (NULL: the folder's base name). */
sv_report_run *sv_report_run_load(const char *dir, const char *label, GError **error);
void sv_report_run_free(sv_report_run *run); /* accepts NULL */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sv_report_run, sv_report_run_free)
const char *sv_report_run_label(const sv_report_run *run);

struct sv_report_cfg {
    const char *title;   /* NULL: "servesim report" */
    const char *svg_dir; /* sv_report_write only: also write each plot as a standalone SVG file,
                          * <svg_dir>/<figure id>.svg (made with its parents), e.g. for a doc
                          * page; NULL: none */
};

/* The HTML page for `runs` (n >= 1), as a string (caller frees). The same runs give the same
 * bytes: no time stamp, no absolute path but those given. Plots are drawn in a temporary folder
 * (g_dir_make_tmp) that is removed before returning. */
char *sv_report_html(sv_report_run *const *runs, guint n, const struct sv_report_cfg *cfg,
                     GError **error);

/* sv_report_html written to `path`: a regular file is written under a temporary name and
 * renamed (0666 less the umask; never half a file), a device or FIFO is written in place. With
 * cfg->svg_dir the plots' SVG files are written the same way once every plot is drawn, before
 * the page. */
gboolean sv_report_write(sv_report_run *const *runs, guint n, const struct sv_report_cfg *cfg,
                         const char *path, GError **error);

#endif
