/* The HTML page: the runs, the side-by-side summary table, the plots (docs/report.md). */
#include "report/report_internal.h"

#include "core/core.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

char *sv_report__fmt(double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    return g_strdup(g_ascii_formatd(buf, sizeof buf, "%.3f", v));
}

static void put_escaped(GString *o, const char *s)
{
    g_autofree char *e = g_markup_escape_text(s, -1);
    g_string_append(o, e);
}

/* ---- the summary table ---------------------------------------------------------------------- */

enum better { LOWER, HIGHER, NEITHER };

struct metric {
    const char *name, *unit;
    const char *path; /* summary.json dotted path; NULL: computed (total tokens/s) */
    enum better better;
    gboolean count; /* printed as a whole number */
};

static const struct metric metrics[] = {
    {"finished requests", "", "requests.finished", NEITHER, TRUE},
    {"makespan", "s", "makespan_s", NEITHER, FALSE},
    {"request throughput", "req/s", "throughput.requests_per_s", HIGHER, FALSE},
    {"input token throughput", "tok/s", "throughput.input_tokens_per_s", HIGHER, FALSE},
    {"output token throughput", "tok/s", "throughput.output_tokens_per_s", HIGHER, FALSE},
    {"total token throughput", "tok/s", NULL, HIGHER, FALSE},
    {"request goodput", "req/s", "request_goodput", HIGHER, FALSE},
    {"TTFT mean", "ms", "latency_ms.ttft.mean", LOWER, FALSE},
    {"TTFT p50", "ms", "latency_ms.ttft.p50", LOWER, FALSE},
    {"TTFT p99", "ms", "latency_ms.ttft.p99", LOWER, FALSE},
    {"TPOT mean", "ms", "latency_ms.tpot.mean", LOWER, FALSE},
    {"TPOT p50", "ms", "latency_ms.tpot.p50", LOWER, FALSE},
    {"TPOT p99", "ms", "latency_ms.tpot.p99", LOWER, FALSE},
    {"ITL mean", "ms", "latency_ms.itl.mean", LOWER, FALSE},
    {"ITL p50", "ms", "latency_ms.itl.p50", LOWER, FALSE},
    {"ITL p99", "ms", "latency_ms.itl.p99", LOWER, FALSE},
    {"E2EL mean", "ms", "latency_ms.e2e.mean", LOWER, FALSE},
    {"E2EL p50", "ms", "latency_ms.e2e.p50", LOWER, FALSE},
    {"E2EL p99", "ms", "latency_ms.e2e.p99", LOWER, FALSE},
    {"energy per output token", "J", "energy.j_per_output_token", LOWER, FALSE},
    {"energy", "J", "energy.total_j", NEITHER, FALSE},
};

static gboolean metric_value(const sv_report_run *r, const struct metric *m, double *v)
{
    if (m->path != NULL)
        return sv_report__summary_number(r, m->path, v);
    double in, out;
    if (!sv_report__summary_number(r, "throughput.input_tokens_per_s", &in) ||
        !sv_report__summary_number(r, "throughput.output_tokens_per_s", &out))
        return FALSE;
    *v = in + out;
    return TRUE;
}

static void put_table(GString *o, sv_report_run *const *runs, guint n)
{
    g_string_append(o, "<h2>Summary</h2>\n<table class=\"summary\" id=\"summary\">\n<thead><tr>"
                       "<th>metric</th><th>unit</th>");
    for (guint i = 0; i < n; i++) {
        g_string_append(o, "<th>");
        put_escaped(o, runs[i]->label);
        g_string_append(o, "</th>");
    }
    g_string_append(o, "</tr></thead>\n<tbody>\n");
    g_autofree double *v = g_new(double, n);
    g_autofree gboolean *have = g_new(gboolean, n);
    for (guint k = 0; k < G_N_ELEMENTS(metrics); k++) {
        const struct metric *m = &metrics[k];
        guint n_have = 0;
        for (guint i = 0; i < n; i++) {
            have[i] = metric_value(runs[i], m, &v[i]) && isfinite(v[i]);
            n_have += have[i];
        }
        if (n_have == 0)
            continue; /* no run has it (no power model, no goodput SLO): no row */
        double best = m->better == LOWER ? INFINITY : -INFINITY;
        for (guint i = 0; i < n; i++) {
            if (have[i])
                best = m->better == LOWER ? MIN(best, v[i]) : MAX(best, v[i]);
        }
        g_string_append_printf(o, "<tr><th>%s</th><td class=\"unit\">%s</td>", m->name, m->unit);
        for (guint i = 0; i < n; i++) {
            if (!have[i]) {
                g_string_append(o, "<td class=\"none\">&#x2013;</td>");
                continue;
            }
            g_autofree char *s = m->count && fabs(v[i]) < 1e15
                                     ? g_strdup_printf("%" G_GINT64_FORMAT, (gint64)v[i])
                                     : sv_report__fmt(v[i]);
            /* The best of several runs (ties: each of them) is marked; one run has no best. */
            gboolean is_best = n > 1 && m->better != NEITHER && v[i] == best;
            if (is_best)
                g_string_append_printf(
                    o, "<td class=\"best\" title=\"best\">%s&#x2009;&#x2605;</td>", s);
            else
                g_string_append_printf(o, "<td>%s</td>", s);
        }
        g_string_append(o, "</tr>\n");
    }
    g_string_append(o, "</tbody>\n</table>\n");
    if (n > 1)
        g_string_append(o, "<p class=\"note\">&#x2605; best of the runs (lowest latency or "
                           "energy, highest throughput).</p>\n");
}

static void put_runs(GString *o, sv_report_run *const *runs, guint n)
{
    g_string_append(o, "<h2>Runs</h2>\n<table class=\"runs\">\n<thead><tr><th>run</th>"
                       "<th>folder</th><th>command</th></tr></thead>\n<tbody>\n");
    for (guint i = 0; i < n; i++) {
        g_string_append(o, "<tr><th>");
        put_escaped(o, runs[i]->label);
        g_string_append(o, "</th><td><code>");
        put_escaped(o, runs[i]->dir);
        g_string_append(o, "</code></td><td>");
        if (runs[i]->command != NULL) {
            g_string_append(o, "<code>");
            put_escaped(o, runs[i]->command);
            g_string_append(o, "</code>");
        } else {
            g_string_append(o, runs[i]->has_run_json
                                   ? "<span class=\"none\">run.json has no argv</span>"
                                   : "<span class=\"none\">no run.json</span>");
        }
        g_string_append(o, "</td></tr>\n");
    }
    g_string_append(o, "</tbody>\n</table>\n");
}

/* ---- the plots ---------------------------------------------------------------------------- */

struct page {
    GString *o;
    const char *tmpdir;
    sv_report_run *const *runs;
    guint n;
    GPtrArray *owned; /* strings and arrays made for the lines of the plot being drawn */
    GPtrArray *svgs;  /* NULL, or pairs of file name and SVG text of every plot drawn */
};

static const char *own_str(struct page *p, char *s)
{
    g_ptr_array_add(p->owned, s);
    return s;
}

static const double *own_arr(struct page *p, double *a)
{
    g_ptr_array_add(p->owned, a);
    return a;
}

static void put_absent(GString *o, const char *id, const char *title, const char *why)
{
    g_string_append_printf(o, "<figure class=\"plot absent\" id=\"plot-%s\"><figcaption>", id);
    put_escaped(o, title);
    g_string_append(o, "</figcaption><p class=\"why\">No plot: ");
    put_escaped(o, why);
    g_string_append(o, "</p></figure>\n");
}

/* Draw the plot and put it in a figure; `left_out` (may be empty) lists the runs missing from
 * it and why. */
static gboolean put_plot(struct page *p, const char *id, const struct sv_report__plot *plot,
                         const struct sv_report__line *lines, guint n_lines,
                         const GString *left_out, GError **error)
{
    g_autofree char *svg = sv_report__plot_svg(p->tmpdir, plot, lines, n_lines, error);
    g_ptr_array_set_size(p->owned, 0);
    if (svg == NULL)
        return FALSE;
    g_autofree char *title = g_markup_escape_text(plot->title, -1);
    /* Inline: the <svg> element, without the XML prolog and DOCTYPE of a file. PLplot names its
     * clip path "text-clipping0" in every file: ids must be unique in a page. */
    g_autofree char *clip_id = g_strdup_printf("plot-%s-text-clipping", id);
    g_auto(GStrv) parts = g_strsplit(strstr(svg, "<svg"), "text-clipping", -1);
    g_autofree char *inline_svg = g_strjoinv(clip_id, parts);
    g_string_append_printf(p->o, "<figure class=\"plot\" id=\"plot-%s\">\n%s<figcaption>%s", id,
                           inline_svg, title);
    if (p->svgs != NULL) {
        g_ptr_array_add(p->svgs, g_strdup_printf("plot-%s.svg", id));
        g_ptr_array_add(p->svgs, g_steal_pointer(&svg));
    }
    if (left_out != NULL && left_out->len > 0) {
        g_string_append(p->o, "<br><span class=\"why\">Left out: ");
        put_escaped(p->o, left_out->str);
        g_string_append(p->o, "</span>");
    }
    g_string_append(p->o, "</figcaption></figure>\n");
    return TRUE;
}

static void note_left_out(GString *s, const sv_report_run *r, const char *why)
{
    if (s->len > 0)
        g_string_append(s, "; ");
    g_string_append_printf(s, "%s (%s)", r->label, why);
}

static const double *d(const GArray *a)
{
    return (const double *)(const void *)a->data;
}

/* Time-series plot: for each run with timeseries.csv, one line per (column, style). */
static gboolean plot_timeseries(struct page *p, const char *id, const char *title,
                                const char *ylabel, gsize n_cols, const gsize *offsets,
                                const char *const *col_names, double scale, GError **error)
{
    g_autoptr(GArray) lines = g_array_new(FALSE, TRUE, sizeof(struct sv_report__line));
    g_autoptr(GString) left = g_string_new(NULL);
    guint n_with = 0;
    for (guint i = 0; i < p->n; i++) {
        const sv_report_run *r = p->runs[i];
        if (r->t_s == NULL) {
            note_left_out(left, r, r->timeseries_why);
            continue;
        }
        n_with++;
        for (gsize c = 0; c < n_cols; c++) {
            const GArray *col = *(GArray *const *)(const void *)((const char *)r + offsets[c]);
            if (col == NULL)
                continue;
            double *y = g_new(double, MAX(col->len, 1));
            for (guint k = 0; k < col->len; k++)
                y[k] = d(col)[k] * scale;
            struct sv_report__line l = {
                .name = n_cols == 1 && p->n == 1
                            ? NULL
                            : own_str(p, n_cols == 1 ? g_strdup(r->label)
                                         : p->n == 1
                                             ? g_strdup(col_names[c])
                                             : g_strdup_printf("%s: %s", r->label, col_names[c])),
                .x = d(r->t_s),
                .y = own_arr(p, y),
                .n = col->len,
                .color = p->n == 1 && n_cols > 1 ? (int)c : (int)i,
                .style = p->n == 1 ? 0 : (int)c,
            };
            g_array_append_val(lines, l);
        }
    }
    if (n_with == 0) {
        g_ptr_array_set_size(p->owned, 0);
        put_absent(p->o, id, title, left->str);
        return TRUE;
    }
    if (lines->len == 0) {
        g_ptr_array_set_size(p->owned, 0);
        put_absent(p->o, id, title,
                   "no run used a memory tier (timeseries.csv has none of the columns "
                   "npu_mem_bytes, cpu_mem_bytes, cxl_mem_bytes, ssd_bytes; docs/outputs.md)");
        return TRUE;
    }
    struct sv_report__plot plot = {title, "simulated time (s)", ylabel, TRUE, FALSE};
    return put_plot(p, id, &plot, (const struct sv_report__line *)(const void *)lines->data,
                    lines->len, left, error);
}

/* Empirical CDF of a sorted array: every point up to 2,000 values, else 2,001 evenly spaced
 * ranks (the plot cannot show more; the table has the exact percentiles). */
#define CDF_MAX_POINTS 2000
static guint cdf_points(struct page *p, const GArray *sorted, const double **x, const double **y)
{
    guint n = sorted->len;
    guint m = n <= CDF_MAX_POINTS ? n : CDF_MAX_POINTS + 1;
    double *xs = g_new(double, MAX(m, 1)), *ys = g_new(double, MAX(m, 1));
    for (guint k = 0; k < m; k++) {
        guint idx = n <= CDF_MAX_POINTS ? k : (guint)((guint64)k * (n - 1) / CDF_MAX_POINTS);
        xs[k] = d(sorted)[idx];
        ys[k] = (double)(idx + 1) / n;
    }
    *x = own_arr(p, xs);
    *y = own_arr(p, ys);
    return m;
}

static gboolean plot_cdf(struct page *p, const char *id, const char *title, const char *xlabel,
                         gsize offset, GError **error)
{
    g_autoptr(GArray) lines = g_array_new(FALSE, TRUE, sizeof(struct sv_report__line));
    g_autoptr(GString) left = g_string_new(NULL);
    for (guint i = 0; i < p->n; i++) {
        const sv_report_run *r = p->runs[i];
        const GArray *a = *(GArray *const *)(const void *)((const char *)r + offset);
        if (a == NULL) {
            note_left_out(left, r, r->requests_why);
            continue;
        }
        if (a->len == 0) {
            note_left_out(left, r, "no finished request has this metric");
            continue;
        }
        struct sv_report__line l = {.name = p->n == 1 ? NULL : r->label, .color = (int)i};
        l.n = cdf_points(p, a, &l.x, &l.y);
        g_array_append_val(lines, l);
    }
    if (lines->len == 0) {
        g_ptr_array_set_size(p->owned, 0);
        put_absent(p->o, id, title, left->str);
        return TRUE;
    }
    struct sv_report__plot plot = {title, xlabel, "fraction of requests", FALSE, TRUE};
    return put_plot(p, id, &plot, (const struct sv_report__line *)(const void *)lines->data,
                    lines->len, left, error);
}

/* ITL: requests.csv has one row per request, not per token, so the CDF is drawn through the
 * percentiles summary.json gives (p50, p90, p95, p99): exact points of it, straight between. */
static gboolean plot_itl(struct page *p, GError **error)
{
    static const char *const keys[] = {"p50", "p90", "p95", "p99"};
    static const double fractions[] = {0.50, 0.90, 0.95, 0.99};
    g_autoptr(GArray) lines = g_array_new(FALSE, TRUE, sizeof(struct sv_report__line));
    g_autoptr(GString) left = g_string_new(NULL);
    for (guint i = 0; i < p->n; i++) {
        const sv_report_run *r = p->runs[i];
        double *x = g_new(double, G_N_ELEMENTS(keys));
        own_arr(p, x);
        gboolean ok = TRUE;
        for (guint k = 0; k < G_N_ELEMENTS(keys) && ok; k++) {
            g_autofree char *path = g_strdup_printf("latency_ms.itl.%s", keys[k]);
            ok = sv_report__summary_number(r, path, &x[k]);
        }
        double count = 0;
        if (!ok || !sv_report__summary_number(r, "latency_ms.itl.count", &count) || count == 0) {
            note_left_out(left, r, "summary.json has no ITL percentiles");
            continue;
        }
        struct sv_report__line l = {.name = p->n == 1 ? NULL : r->label,
                                    .x = x,
                                    .y = fractions,
                                    .n = G_N_ELEMENTS(keys),
                                    .color = (int)i};
        g_array_append_val(lines, l);
    }
    const char *title = "ITL CDF (p50, p90, p95, p99 of summary.json)";
    if (lines->len == 0) {
        g_ptr_array_set_size(p->owned, 0);
        put_absent(p->o, "itl-cdf", title, left->str);
        return TRUE;
    }
    struct sv_report__plot plot = {title, "inter-token latency (ms)", "fraction of gaps", FALSE,
                                   TRUE};
    return put_plot(p, "itl-cdf", &plot, (const struct sv_report__line *)(const void *)lines->data,
                    lines->len, left, error);
}

/* Power by component, one plot per run with power.csv, then total power of all of them. */
static gboolean plot_power(struct page *p, GError **error)
{
    g_autoptr(GString) left = g_string_new(NULL);
    guint n_with = 0;
    for (guint i = 0; i < p->n; i++) {
        const sv_report_run *r = p->runs[i];
        if (r->power_t_s == NULL) {
            note_left_out(left, r, r->power_why);
            continue;
        }
        n_with++;
        struct sv_report__line lines[SV_REPORT_N_COMPONENTS + 1];
        for (int k = 0; k < SV_REPORT_N_COMPONENTS; k++)
            lines[k] = (struct sv_report__line){sv_report__components[k],
                                                d(r->power_t_s),
                                                d(r->power_w[k]),
                                                r->power_t_s->len,
                                                k,
                                                0};
        lines[SV_REPORT_N_COMPONENTS] = (struct sv_report__line){
            "total", d(r->power_t_s), d(r->total_w), r->power_t_s->len, SV_REPORT_N_COMPONENTS, 1};
        g_autofree char *title = g_strdup_printf("Power by component: %s", r->label);
        g_autofree char *id = g_strdup_printf("power-%u", i);
        struct sv_report__plot plot = {title, "simulated time (s)", "power (W, sum over nodes)",
                                       TRUE, FALSE};
        if (!put_plot(p, id, &plot, lines, G_N_ELEMENTS(lines), NULL, error))
            return FALSE;
    }
    if (n_with == 0) {
        put_absent(p->o, "power", "Power by component", left->str);
        return TRUE;
    }
    if (p->n > 1) {
        g_autoptr(GArray) lines = g_array_new(FALSE, TRUE, sizeof(struct sv_report__line));
        for (guint i = 0; i < p->n; i++) {
            const sv_report_run *r = p->runs[i];
            if (r->power_t_s == NULL)
                continue;
            struct sv_report__line l = {r->label,          d(r->power_t_s), d(r->total_w),
                                        r->power_t_s->len, (int)i,          0};
            g_array_append_val(lines, l);
        }
        struct sv_report__plot plot = {"Total power", "simulated time (s)", "power (W)", TRUE,
                                       FALSE};
        return put_plot(p, "power-total", &plot,
                        (const struct sv_report__line *)(const void *)lines->data, lines->len, left,
                        error);
    }
    return TRUE;
}

static gboolean put_plots(struct page *p, GError **error)
{
#define OFF(f) G_STRUCT_OFFSET(struct sv_report_run, f)
    static const gsize tput[] = {OFF(gen_tps), OFF(prompt_tps)};
    static const char *const tput_names[] = {"generation", "prompt"};
    static const gsize rw[] = {OFF(running), OFF(waiting)};
    static const char *const rw_names[] = {"running", "waiting"};
    static const gsize kv[] = {OFF(kv_pct)};
    static const char *const kv_names[] = {"KV cache"};
    static const gsize tiers[] = {OFF(tier_bytes[0]), OFF(tier_bytes[1]), OFF(tier_bytes[2]),
                                  OFF(tier_bytes[3])};
    g_string_append(p->o, "<h2>Plots</h2>\n<div class=\"plots\">\n");
    gboolean ok =
        plot_timeseries(p, "throughput", "Throughput over time", "tokens/s", 2, tput, tput_names,
                        1.0, error) &&
        plot_timeseries(p, "running-waiting", "Running and waiting requests", "requests", 2, rw,
                        rw_names, 1.0, error) &&
        plot_cdf(p, "ttft-cdf", "TTFT CDF", "time to first token (ms)", OFF(ttft_ms), error) &&
        plot_cdf(p, "tpot-cdf", "TPOT CDF", "time per output token (ms)", OFF(tpot_ms), error) &&
        plot_cdf(p, "e2el-cdf", "E2EL CDF", "end-to-end latency (ms)", OFF(e2e_ms), error) &&
        plot_itl(p, error) &&
        plot_timeseries(p, "kv-cache", "KV cache usage", "KV blocks used (%)", 1, kv, kv_names, 1.0,
                        error) &&
        plot_timeseries(p, "memory-tiers", "Memory tier usage", "GB used (sum over the cluster)",
                        SV_REPORT_N_TIERS, tiers, sv_report__tier_names, 1e-9, error) &&
        plot_power(p, error);
#undef OFF
    g_string_append(p->o, "</div>\n");
    return ok;
}

/* ---- the page ---------------------------------------------------------------------------- */

static const char style[] =
    "body{font-family:sans-serif;margin:1.5em;color:#222;background:#fff}\n"
    "h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.5em}\n"
    "table{border-collapse:collapse;font-size:.9em}\n"
    "th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}\n"
    "th{background:#f3f3f3}tbody th{text-align:left;font-weight:normal}\n"
    "table.runs td{text-align:left}table.instances,table.pools{margin-bottom:.8em}\n"
    "h3{font-size:1em}td.unit{color:#666;text-align:left}\n"
    "td.best{background:#e3f4e3;font-weight:bold}.none,.why,.note{color:#777}\n"
    ".plots{display:flex;flex-wrap:wrap;gap:1em}\n"
    "figure.plot{margin:0;width:560px;border:1px solid #ddd;padding:.5em}\n"
    "figure.plot svg{width:100%;height:auto;display:block}\n"
    "figure.absent{min-height:4em}figcaption{font-size:.85em;color:#444;margin-top:.3em}\n"
    "code{font-size:.85em;word-break:break-all}\n";

/* The page; with `svgs`, also the plots' files (name, text pairs). */
static char *page_html(sv_report_run *const *runs, guint n, const struct sv_report_cfg *cfg,
                       GPtrArray *svgs, GError **error)
{
    g_return_val_if_fail(n >= 1, NULL);
    const char *title = cfg != NULL && cfg->title != NULL ? cfg->title : "servesim report";
    if (!sv_report__plot_ready(error))
        return NULL;
    g_autoptr(GError) e = NULL;
    g_autofree char *tmpdir = g_dir_make_tmp("servesim-report-XXXXXX", &e);
    if (tmpdir == NULL) {
        g_set_error(error, SV_REPORT_ERROR, SV_REPORT_ERROR_IO,
                    "cannot make a temporary folder for the plots: %s", e->message);
        return NULL;
    }
    g_autoptr(GString) o = g_string_new(NULL);
    g_string_append(o, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                       "<link rel=\"icon\" href=\"data:,\">\n<title>");
    put_escaped(o, title);
    g_string_append_printf(o, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>", style);
    put_escaped(o, title);
    g_string_append(o, "</h1>\n");
    put_runs(o, runs, n);
    put_table(o, runs, n);
    sv_report__put_instances(o, runs, n);
    g_autoptr(GPtrArray) owned = g_ptr_array_new_with_free_func(g_free);
    struct page p = {o, tmpdir, runs, n, owned, svgs};
    gboolean ok = put_plots(&p, error);
    g_rmdir(tmpdir);
    if (!ok)
        return NULL;
    g_string_append(o, "<p class=\"note\">Made by servesim report (docs/report.md). Times are "
                       "simulated; plots drawn with PLplot.</p>\n</body>\n</html>\n");
    return g_string_free(g_steal_pointer(&o), FALSE);
}

char *sv_report_html(sv_report_run *const *runs, guint n, const struct sv_report_cfg *cfg,
                     GError **error)
{
    return page_html(runs, n, cfg, NULL, error);
}

static gboolean write_file(const char *path, const char *text, GError **error)
{
    if (sv_path_is_special_file(path)) {
        /* A device or a FIFO (/dev/null) is written in place: a rename would replace it. */
        FILE *fp = fopen(path, "w");
        if (fp == NULL) {
            g_set_error(error, SV_REPORT_ERROR, SV_REPORT_ERROR_IO, "cannot open %s: %s", path,
                        g_strerror(errno));
            return FALSE;
        }
        gboolean bad = fputs(text, fp) < 0;
        bad |= fclose(fp) != 0;
        if (bad)
            g_set_error(error, SV_REPORT_ERROR, SV_REPORT_ERROR_IO, "cannot write %s: %s", path,
                        g_strerror(errno));
        return !bad;
    }
    /* g_file_set_contents writes a temporary file (0666 less the umask) and renames it */
    return g_file_set_contents(path, text, -1, error);
}

gboolean sv_report_write(sv_report_run *const *runs, guint n, const struct sv_report_cfg *cfg,
                         const char *path, GError **error)
{
    const char *svg_dir = cfg != NULL ? cfg->svg_dir : NULL;
    g_autoptr(GPtrArray) svgs = g_ptr_array_new_with_free_func(g_free);
    g_autofree char *text = page_html(runs, n, cfg, svg_dir != NULL ? svgs : NULL, error);
    if (text == NULL)
        return FALSE;
    if (svg_dir != NULL) {
        if (g_mkdir_with_parents(svg_dir, 0777) != 0) {
            g_set_error(error, SV_REPORT_ERROR, SV_REPORT_ERROR_IO, "cannot make %s: %s", svg_dir,
                        g_strerror(errno));
            return FALSE;
        }
        for (guint i = 0; i + 1 < svgs->len; i += 2) {
            g_autofree char *file = g_build_filename(svg_dir, svgs->pdata[i], NULL);
            if (!write_file(file, svgs->pdata[i + 1], error))
                return FALSE;
        }
    }
    return write_file(path, text, error);
}
