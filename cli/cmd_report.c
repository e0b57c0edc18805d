/* servesim report: option parsing for the HTML report of run folders (report/report.h). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "report/report.h"

static const char report_usage[] =
    "usage: servesim report DIR... -o report.html [--label NAME]... [--title TEXT]\n"
    "                       [--svg-dir DIR]\n"
    "\n"
    "Write one self-contained HTML file (inline SVG plots, no script, no external URL) from one\n"
    "or several `servesim run --output-dir DIR` folders: a table of the summary metrics side by\n"
    "side (the best value of several runs marked), throughput, running and waiting requests, KV\n"
    "cache and memory-tier usage and power over time, and the TTFT, TPOT, E2EL and ITL CDFs,\n"
    "one line per run. docs/report.md describes each plot.\n"
    "\n"
    "  -o, --output FILE   the HTML file to write (required; written whole or not at all)\n"
    "  --label NAME        the name of a run in legends and the table, once per DIR in order\n"
    "                      (default: each folder's base name)\n"
    "  --title TEXT        the page's title (default: servesim report)\n"
    "  --svg-dir DIR       also write each plot as DIR/plot-<name>.svg (for a doc page)\n";

int sv_cli_report(int argc, char **argv)
{
    g_autofree char *output = NULL, *title = NULL, *svg_dir = NULL;
    g_auto(GStrv) labels = NULL;
    const GOptionEntry entries[] = {
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, NULL, "FILE"},
        {"label", 0, 0, G_OPTION_ARG_STRING_ARRAY, &labels, NULL, "NAME"},
        {"title", 0, 0, G_OPTION_ARG_STRING, &title, NULL, "TEXT"},
        {"svg-dir", 0, 0, G_OPTION_ARG_FILENAME, &svg_dir, NULL, "DIR"},
        G_OPTION_ENTRY_NULL,
    };
    int status = sv_cli_parse_options("report", report_usage, entries, &argc, &argv);
    if (status >= 0)
        return status;
    if (output == NULL) {
        fprintf(stderr, "servesim report: -o FILE is required\n\n%s", report_usage);
        return 2;
    }
    if (argc < 2) {
        fprintf(stderr, "servesim report: expected at least one run folder\n\n%s", report_usage);
        return 2;
    }
    guint n = (guint)argc - 1;
    guint n_labels = labels != NULL ? g_strv_length(labels) : 0;
    if (n_labels > 0 && n_labels != n) {
        fprintf(stderr,
                "servesim report: %u --label for %u run folders (give one per folder, in "
                "order, or none)\n",
                n_labels, n);
        return 2;
    }
    /* Default labels are the folders' base names, unless two are the same (a/run, b/run): then
     * the paths as given, so that every legend names one run. */
    gboolean same_base = FALSE;
    for (guint i = 0; i < n && n_labels == 0; i++) {
        g_autofree char *bi = g_path_get_basename(argv[i + 1]);
        for (guint j = i + 1; j < n; j++) {
            g_autofree char *bj = g_path_get_basename(argv[j + 1]);
            same_base |= strcmp(bi, bj) == 0;
        }
    }
    g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func((GDestroyNotify)sv_report_run_free);
    for (guint i = 0; i < n; i++) {
        g_autoptr(GError) err = NULL;
        const char *label = n_labels > 0 ? labels[i] : same_base ? argv[i + 1] : NULL;
        sv_report_run *r = sv_report_run_load(argv[i + 1], label, &err);
        if (r == NULL) {
            fprintf(stderr, "servesim report: %s\n", err->message);
            return 1;
        }
        g_ptr_array_add(runs, r);
    }
    struct sv_report_cfg cfg = {.title = title, .svg_dir = svg_dir};
    g_autoptr(GError) err = NULL;
    if (!sv_report_write((sv_report_run *const *)runs->pdata, n, &cfg, output, &err)) {
        fprintf(stderr, "servesim report: %s\n", err->message);
        return 1;
    }
    return 0;
}
