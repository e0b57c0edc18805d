/* Shared between report/'s files; not part of the API. */
#ifndef SV_REPORT_INTERNAL_H
#define SV_REPORT_INTERNAL_H

#include "report/report.h"

#include <json-glib/json-glib.h>

/* Memory tiers of timeseries.csv (docs/outputs.md "Memory tiers"), in column order. */
#define SV_REPORT_N_TIERS 4
extern const char *const sv_report__tier_cols[SV_REPORT_N_TIERS];
extern const char *const sv_report__tier_names[SV_REPORT_N_TIERS];
/* Power components of power.csv (docs/power.md), in column order. */
#define SV_REPORT_N_COMPONENTS 7
extern const char *const sv_report__components[SV_REPORT_N_COMPONENTS];

struct sv_report_run {
    char *dir;
    char *label;
    JsonNode *summary; /* summary.json's root, an object */
    char *command;     /* run.json's argv joined by spaces, NULL when absent */
    gboolean has_run_json;

    /* requests.csv: finished requests' latencies in ms, sorted ascending (tpot: those with more
     * than one output token). NULL arrays when the file is absent: requests_why says why. */
    GArray *ttft_ms, *tpot_ms, *e2e_ms; /* double */
    char *requests_why;

    /* timeseries.csv, one element per row. NULL when absent: timeseries_why says why. tier[k] is
     * NULL when the column is absent (the run used no memory tier). */
    GArray *t_s, *prompt_tps, *gen_tps, *running, *waiting, *kv_pct;
    GArray *tier_bytes[SV_REPORT_N_TIERS];
    char *timeseries_why;

    /* power.csv: power per component summed over the nodes, and total_w. NULL when absent. */
    GArray *power_t_s, *power_w[SV_REPORT_N_COMPONENTS], *total_w;
    char *power_why;
};

/* One line of a plot: n points (x, y), drawn in colour `color` (0-based series index) with line
 * style `style` (0 solid, 1 dashed, 2 dotted, 3 dash-dot). */
struct sv_report__line {
    const char *name; /* legend text */
    const double *x, *y;
    guint n;
    int color, style;
};

struct sv_report__plot {
    const char *title, *xlabel, *ylabel;
    gboolean y_from_zero;   /* the y axis starts at 0 (counts, rates) */
    gboolean y_is_fraction; /* CDFs: y from 0 to 1 */
};

/* Is PLplot's svg driver there? Without it plinit would ask for a device on stdin. Called before
 * anything is made: where PLplot finds no driver at all it exits the process itself ("No device
 * drivers found"), and then nothing is left behind. */
gboolean sv_report__plot_ready(GError **error);

/* Draw `lines` with PLplot's svg driver into a file in `tmpdir` and return the file's text (an
 * SVG document: XML prolog, DOCTYPE, then the <svg> element); the file is removed. */
char *sv_report__plot_svg(const char *tmpdir, const struct sv_report__plot *plot,
                          const struct sv_report__line *lines, guint n_lines, GError **error);

/* A line of more than SV_REPORT_MAX_POINTS points (a long run's time series: one row per second)
 * is drawn through fewer: the first and last points and, of each of SV_REPORT_MAX_POINTS / 2
 * buckets of consecutive points, its lowest and highest (in their order), so that no peak is lost
 * (min/max decimation). Writes at most SV_REPORT_MAX_POINTS + 2 points to ox, oy and returns how
 * many; n <= SV_REPORT_MAX_POINTS copies the line. */
#define SV_REPORT_MAX_POINTS 4000
guint sv_report__thin(const double *x, const double *y, guint n, double *ox, double *oy);

/* The number as the table prints it: three decimals, '.' whatever the locale. */
char *sv_report__fmt(double v);

/* The "Instances and pools" section: summary.json's `instances` and `pools` of each run as
 * tables (nothing when no run has them). */
void sv_report__put_instances(GString *o, sv_report_run *const *runs, guint n);

/* summary.json's number at a dotted path ("latency_ms.ttft.p99"); FALSE when absent. */
gboolean sv_report__summary_number(const sv_report_run *run, const char *path, double *out);

#endif
