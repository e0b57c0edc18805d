/* servesim validate: compare our output directory with a measured vLLM run in the layout of
 * LLMServingSim's `python -m bench run` (requests.jsonl, timeseries.csv), with the matched metric
 * definitions of its `bench validate` (docs/reference/bench-cli.md):
 *   TTFT = first_token - arrival, TPOT = (last - first) / (output_tokens - 1) over requests with
 *   more than one output token, latency = last_token - arrival; all in ms.
 * vLLM's requests.jsonl mixes clocks: arrival_time is epoch seconds while queued_ts ..
 * last_token_ts are engine-monotonic seconds. As bench validate does, arrival_time is the anchor
 * only when it is within 1e5 s of first/last_token_ts; otherwise queued_ts is. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <json-glib/json-glib.h>

#include "metrics/metrics_internal.h"

#define SAME_CLOCK_S 100000.0 /* bench/core/validate.py _same_time_domain */

struct lat_lists {
    GArray *ttft, *tpot, *lat; /* double ms */
};

static void lat_init(struct lat_lists *l)
{
    l->ttft = g_array_new(FALSE, FALSE, sizeof(double));
    l->tpot = g_array_new(FALSE, FALSE, sizeof(double));
    l->lat = g_array_new(FALSE, FALSE, sizeof(double));
}

static void lat_clear(struct lat_lists *l)
{
    g_array_free(l->ttft, TRUE);
    g_array_free(l->tpot, TRUE);
    g_array_free(l->lat, TRUE);
}

static gboolean fmt_error(GError **error, const char *path, int line, const char *what)
{
    g_set_error(error, SV_METRICS_ERROR, SV_METRICS_ERROR_FORMAT, "%s:%d: %s", path, line, what);
    return FALSE;
}

static gboolean get_num(JsonObject *o, const char *key, double *out)
{
    return sv_cfg_node_double(json_object_get_member(o, key), out);
}

static gboolean read_measured_requests(const char *path, struct lat_lists *l, GError **error)
{
    FILE *fp = fopen(path, "r");
    if (fp == NULL) {
        int err = errno;
        g_set_error(error, SV_METRICS_ERROR, SV_METRICS_ERROR_IO, "cannot open %s: %s", path,
                    g_strerror(err));
        return FALSE;
    }
    g_autoptr(JsonParser) parser = json_parser_new();
    char *buf = NULL;
    size_t cap = 0;
    gboolean ok = FALSE;
    for (int i = 0; getline(&buf, &cap, fp) >= 0; i++) {
        char *line = g_strstrip(buf);
        if (*line == '\0')
            continue;
        g_autoptr(GError) perr = NULL;
        /* RFC 8259 first (core.h): json-glib alone reads 0x1a as 26 */
        if (!sv_cfg_json_check(line, strlen(line), &perr) ||
            !json_parser_load_from_data(parser, line, -1, &perr)) {
            fmt_error(error, path, i + 1, perr->message);
            goto out;
        }
        JsonNode *root = json_parser_get_root(parser);
        if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
            fmt_error(error, path, i + 1, "not a JSON object");
            goto out;
        }
        JsonObject *o = json_node_get_object(root);
        double first, last, outt, arr, queued;
        if (!get_num(o, "first_token_ts", &first) || !get_num(o, "last_token_ts", &last))
            continue; /* a request that never produced a token: no latency to compare */
        if (!get_num(o, "output_toks", &outt)) {
            fmt_error(error, path, i + 1, "output_toks: missing or not a number");
            goto out;
        }
        gboolean has_arr = get_num(o, "arrival_time", &arr);
        gboolean has_q = get_num(o, "queued_ts", &queued);
        double anchor;
        if (has_arr && fabs(arr - first) < SAME_CLOCK_S && fabs(arr - last) < SAME_CLOCK_S)
            anchor = arr;
        else if (has_q)
            anchor = queued;
        else {
            fmt_error(error, path, i + 1,
                      "neither arrival_time nor queued_ts on the token timestamps' clock");
            goto out;
        }
        double ttft = (first - anchor) * 1e3, lat = (last - anchor) * 1e3;
        g_array_append_val(l->ttft, ttft);
        g_array_append_val(l->lat, lat);
        if (outt > 1) {
            double tpot = (last - first) / (outt - 1) * 1e3;
            g_array_append_val(l->tpot, tpot);
        }
    }
    ok = TRUE;
out:
    free(buf);
    fclose(fp);
    return ok;
}

/* Our own CSV files and vLLM bench's, through core's streaming reader (a 10^6-row requests.csv
 * is never held whole); the header must be the first line. */
static sv_csv *csv_load(const char *path, GError **error)
{
    sv_csv *c = sv_csv_open(path, error);
    if (c != NULL && sv_csv_header_line(c) != 1) {
        sv_csv_free(c);
        fmt_error(error, path, 1, "no header line");
        return NULL;
    }
    return c;
}

static int csv_col(const sv_csv *c, const char *name, const char *path, GError **error)
{
    int i = sv_csv_col(c, name);
    if (i < 0)
        g_set_error(error, SV_METRICS_ERROR, SV_METRICS_ERROR_FORMAT, "%s:1: no column '%s'", path,
                    name);
    return i;
}

/* Field `col` of a split row as a number; *empty set when the field is empty. */
static gboolean csv_num(const sv_csv *c, int col, double *out, gboolean *empty, const char *path,
                        int line, GError **error)
{
    if ((guint)col >= sv_csv_n_fields(c))
        return fmt_error(error, path, line, "too few fields");
    const char *s = sv_csv_field(c, (guint)col);
    *empty = *s == '\0';
    if (*empty)
        return TRUE;
    if (!sv_num_parse_double(s, out)) { /* decimal and finite: no "nan", "inf", "0x10" */
        g_autofree char *msg = g_strdup_printf("field %d: '%s' is not a number", col + 1, s);
        return fmt_error(error, path, line, msg);
    }
    return TRUE;
}

static gboolean read_sim_requests(const char *path, struct lat_lists *l, GError **error)
{
    g_autoptr(sv_csv) c = NULL;
    gboolean ok = FALSE;
    if ((c = csv_load(path, error)) == NULL)
        goto out;
    int c_ttft = csv_col(c, "ttft_ns", path, error);
    int c_e2e = c_ttft < 0 ? -1 : csv_col(c, "e2e_ns", path, error);
    int c_out = c_e2e < 0 ? -1 : csv_col(c, "output_tokens", path, error);
    if (c_out < 0)
        goto out;
    GError *rerr = NULL;
    while (sv_csv_next(c, &rerr)) {
        int i = (int)sv_csv_line(c) - 1;
        double ttft, e2e, outt;
        gboolean e1, e2, e3;
        if (!csv_num(c, c_ttft, &ttft, &e1, path, i + 1, error) ||
            !csv_num(c, c_e2e, &e2e, &e2, path, i + 1, error) ||
            !csv_num(c, c_out, &outt, &e3, path, i + 1, error))
            goto out;
        if (e1 || e2 || e3)
            continue; /* unfinished */
        double ttft_ms = ttft / 1e6, lat_ms = e2e / 1e6;
        g_array_append_val(l->ttft, ttft_ms);
        g_array_append_val(l->lat, lat_ms);
        if (outt > 1) {
            /* from the exact ns times, not the floored tpot_ns column */
            double tpot_ms = (e2e - ttft) / (outt - 1) / 1e6;
            g_array_append_val(l->tpot, tpot_ms);
        }
    }
    if (rerr != NULL) {
        g_propagate_error(error, rerr);
        goto out;
    }
    ok = TRUE;
out:
    return ok;
}

struct ts_row {
    int64_t t_ms;
    double v[4]; /* prompt, gen, running, waiting */
};

static const char *const TS_COLS[4] = {"prompt_throughput", "gen_throughput", "running", "waiting"};

static gboolean read_timeseries(const char *path, GArray *rows, GError **error)
{
    g_autoptr(sv_csv) c = NULL;
    gboolean ok = FALSE;
    int cols[5];
    if ((c = csv_load(path, error)) == NULL)
        goto out;
    if ((cols[0] = csv_col(c, "t", path, error)) < 0)
        goto out;
    for (int k = 0; k < 4; k++)
        if ((cols[k + 1] = csv_col(c, TS_COLS[k], path, error)) < 0)
            goto out;
    GError *rerr = NULL;
    while (sv_csv_next(c, &rerr)) {
        int i = (int)sv_csv_line(c) - 1;
        struct ts_row r;
        double t;
        gboolean empty;
        if (!csv_num(c, cols[0], &t, &empty, path, i + 1, error))
            goto out;
        if (empty) {
            fmt_error(error, path, i + 1, "empty t");
            goto out;
        }
        r.t_ms = (int64_t)llround(t * 1e3);
        for (int k = 0; k < 4; k++) {
            if (!csv_num(c, cols[k + 1], &r.v[k], &empty, path, i + 1, error))
                goto out;
            if (empty)
                r.v[k] = 0.0;
        }
        g_array_append_val(rows, r);
    }
    if (rerr != NULL) {
        g_propagate_error(error, rerr);
        goto out;
    }
    ok = TRUE;
out:
    return ok;
}

static int cmp_row(const void *a, const void *b)
{
    int64_t x = ((const struct ts_row *)a)->t_ms, y = ((const struct ts_row *)b)->t_ms;
    return (x > y) - (x < y);
}

/* Per-tick error over the union of both files' ticks (a tick one side lacks counts as 0 there:
 * a simulation that ends early or late is an error, not a shorter comparison). Our file leaves
 * out the middle of a stretch of quiet ticks (docs/outputs.md, "Quiet ticks"): two consecutive
 * rows more than a tick apart enclose omitted ticks whose values are the later row's, and they
 * count as if they had been written. The tick is the first row's t (row 1 is always written). */
static void series_error(GArray *meas, GArray *sim, struct sv_metrics_validation *v)
{
    struct sv_metrics_validate_series *out[4] = {&v->prompt_throughput, &v->gen_throughput,
                                                 &v->running, &v->waiting};
    g_array_sort(meas, cmp_row);
    g_array_sort(sim, cmp_row);
    int64_t tick = sim->len ? g_array_index(sim, struct ts_row, 0).t_ms : 0;
    double abs_sum[4] = {0}, ape_sum[4] = {0};
    uint64_t n = 0, n_ape[4] = {0};
    uint64_t gap_matched = 0; /* omitted ticks of the current gap that a measured tick matched */
    guint i = 0, j = 0;
    while (i < meas->len || j < sim->len) {
        const struct ts_row *a = i < meas->len ? &g_array_index(meas, struct ts_row, i) : NULL;
        const struct ts_row *b = j < sim->len ? &g_array_index(sim, struct ts_row, j) : NULL;
        const struct ts_row *prev = j > 0 && b ? &g_array_index(sim, struct ts_row, j - 1) : NULL;
        gboolean gap = prev != NULL && tick > 0 && b->t_ms - prev->t_ms > tick;
        double mv[4] = {0}, sv[4] = {0};
        if (a != NULL && (b == NULL || a->t_ms <= b->t_ms)) {
            memcpy(mv, a->v, sizeof(mv));
            i++;
            if (gap && a->t_ms < b->t_ms && (a->t_ms - prev->t_ms) % tick == 0) {
                memcpy(sv, b->v, sizeof(sv)); /* an omitted tick of ours */
                gap_matched++;
            }
        }
        if (b != NULL && (a == NULL || b->t_ms <= a->t_ms)) {
            if (gap) {
                /* The omitted ticks no measured tick matched: 0 measured, b's values simulated. */
                uint64_t omitted = (uint64_t)((b->t_ms - prev->t_ms) / tick - 1);
                uint64_t rest = omitted - MIN(omitted, gap_matched);
                for (int k = 0; k < 4; k++)
                    abs_sum[k] += (double)rest * fabs(b->v[k]);
                n += rest;
                gap_matched = 0;
            }
            memcpy(sv, b->v, sizeof(sv));
            j++;
        }
        n++;
        for (int k = 0; k < 4; k++) {
            double d = fabs(sv[k] - mv[k]);
            abs_sum[k] += d;
            if (mv[k] != 0.0) {
                ape_sum[k] += d / fabs(mv[k]) * 100.0;
                n_ape[k]++;
            }
        }
    }
    for (int k = 0; k < 4; k++) {
        out[k]->n_ticks = n;
        out[k]->n_mape_ticks = n_ape[k];
        out[k]->mae = n ? abs_sum[k] / (double)n : 0.0;
        out[k]->mape = n_ape[k] ? ape_sum[k] / (double)n_ape[k] : 0.0;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void row_set(struct sv_metrics_validate_row *r, double m, double s)
{
    r->measured = m;
    r->simulated = s;
    r->diff_pct = m != 0.0 ? (s - m) / m * 100.0 : 0.0;
}

static void metric_compare(GArray *meas, GArray *sim, struct sv_metrics_validate_metric *out)
{
    g_array_sort(meas, cmp_double);
    g_array_sort(sim, cmp_double);
    const double *a = (const double *)meas->data, *b = (const double *)sim->data;
    double ma = 0, mb = 0;
    for (guint i = 0; i < meas->len; i++)
        ma += a[i];
    for (guint i = 0; i < sim->len; i++)
        mb += b[i];
    ma = meas->len ? ma / meas->len : 0.0;
    mb = sim->len ? mb / sim->len : 0.0;
    out->n_measured = meas->len;
    out->n_simulated = sim->len;
    row_set(&out->mean, ma, mb);
    row_set(&out->median, sv_metrics_percentile_sorted(a, meas->len, 50),
            sv_metrics_percentile_sorted(b, sim->len, 50));
    row_set(&out->p90, sv_metrics_percentile_sorted(a, meas->len, 90),
            sv_metrics_percentile_sorted(b, sim->len, 90));
    row_set(&out->p95, sv_metrics_percentile_sorted(a, meas->len, 95),
            sv_metrics_percentile_sorted(b, sim->len, 95));
    row_set(&out->p99, sv_metrics_percentile_sorted(a, meas->len, 99),
            sv_metrics_percentile_sorted(b, sim->len, 99));
}

gboolean sv_metrics_validate(const char *measured_dir, const char *simulated_dir,
                             struct sv_metrics_validation *out, GError **error)
{
    memset(out, 0, sizeof(*out));
    struct lat_lists meas, sim;
    lat_init(&meas);
    lat_init(&sim);
    GArray *ts_meas = g_array_new(FALSE, FALSE, sizeof(struct ts_row));
    GArray *ts_sim = g_array_new(FALSE, FALSE, sizeof(struct ts_row));
    g_autofree char *mreq = g_build_filename(measured_dir, "requests.jsonl", NULL);
    g_autofree char *sreq = g_build_filename(simulated_dir, SV_METRICS__REQUESTS_CSV, NULL);
    g_autofree char *mts = g_build_filename(measured_dir, SV_METRICS__TIMESERIES_CSV, NULL);
    g_autofree char *sts = g_build_filename(simulated_dir, SV_METRICS__TIMESERIES_CSV, NULL);
    gboolean ok = read_measured_requests(mreq, &meas, error) &&
                  read_sim_requests(sreq, &sim, error) && read_timeseries(mts, ts_meas, error) &&
                  read_timeseries(sts, ts_sim, error);
    if (ok && meas.ttft->len == 0) {
        g_set_error(error, SV_METRICS_ERROR, SV_METRICS_ERROR_FORMAT,
                    "%s: no request with first and last token times", mreq);
        ok = FALSE;
    }
    if (ok && sim.ttft->len == 0) {
        g_set_error(error, SV_METRICS_ERROR, SV_METRICS_ERROR_FORMAT, "%s: no finished request",
                    sreq);
        ok = FALSE;
    }
    if (ok) {
        metric_compare(meas.ttft, sim.ttft, &out->ttft);
        metric_compare(meas.tpot, sim.tpot, &out->tpot);
        metric_compare(meas.lat, sim.lat, &out->latency);
        series_error(ts_meas, ts_sim, out);
    }
    lat_clear(&meas);
    lat_clear(&sim);
    g_array_free(ts_meas, TRUE);
    g_array_free(ts_sim, TRUE);
    return ok;
}

static void print_metric(FILE *out, const char *name, const struct sv_metrics_validate_metric *m)
{
    const char *labels[] = {"Mean", "Median", "P90", "P95", "P99"};
    const struct sv_metrics_validate_row *rows[] = {&m->mean, &m->median, &m->p90, &m->p95,
                                                    &m->p99};
    for (size_t i = 0; i < G_N_ELEMENTS(labels); i++) {
        g_autofree char *label = g_strdup_printf("%s %s", name, labels[i]);
        fprintf(out, "%-25s%12.1f%12.1f%+9.1f%%\n", label, rows[i]->measured, rows[i]->simulated,
                rows[i]->diff_pct);
    }
}

void sv_metrics_validation_print(const struct sv_metrics_validation *v, FILE *out)
{
    /* The layout of LLMServingSim's bench validate summary.txt, then the time-series errors. */
    fprintf(out, "%-25s%12s%12s%10s\n", "Metric", "vLLM", "Sim", "Diff%");
    fprintf(out, "-----------------------------------------------------------\n");
    print_metric(out, "TTFT", &v->ttft);
    fputc('\n', out);
    print_metric(out, "TPOT", &v->tpot);
    fputc('\n', out);
    print_metric(out, "Latency", &v->latency);
    fprintf(out, "\n%-25s%12s%12s\n", "Time series (per tick)", "MAE", "MAPE%");
    fprintf(out, "-----------------------------------------------------------\n");
    const char *names[] = {"prompt_throughput", "gen_throughput", "running", "waiting"};
    const struct sv_metrics_validate_series *s[] = {&v->prompt_throughput, &v->gen_throughput,
                                                    &v->running, &v->waiting};
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++)
        fprintf(out, "%-25s%12.1f%12.1f\n", names[i], s[i]->mae, s[i]->mape);
    fprintf(out, "(%" G_GUINT64_FORMAT " ticks; MAPE over ticks with a nonzero measured value)\n",
            (guint64)v->gen_throughput.n_ticks);
}

static void json_metric(JsonBuilder *b, const char *name,
                        const struct sv_metrics_validate_metric *m)
{
    json_builder_set_member_name(b, name);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "n_measured");
    json_builder_add_int_value(b, (gint64)m->n_measured);
    json_builder_set_member_name(b, "n_simulated");
    json_builder_add_int_value(b, (gint64)m->n_simulated);
    const char *labels[] = {"mean", "median", "p90", "p95", "p99"};
    const struct sv_metrics_validate_row *rows[] = {&m->mean, &m->median, &m->p90, &m->p95,
                                                    &m->p99};
    for (size_t i = 0; i < G_N_ELEMENTS(labels); i++) {
        json_builder_set_member_name(b, labels[i]);
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "measured_ms");
        json_builder_add_double_value(b, rows[i]->measured);
        json_builder_set_member_name(b, "simulated_ms");
        json_builder_add_double_value(b, rows[i]->simulated);
        json_builder_set_member_name(b, "diff_pct");
        json_builder_add_double_value(b, rows[i]->diff_pct);
        json_builder_end_object(b);
    }
    json_builder_end_object(b);
}

gboolean sv_metrics_validation_write_json(const struct sv_metrics_validation *v, const char *path,
                                          GError **error)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_metric(b, "ttft", &v->ttft);
    json_metric(b, "tpot", &v->tpot);
    json_metric(b, "latency", &v->latency);
    json_builder_set_member_name(b, "timeseries");
    json_builder_begin_object(b);
    const char *names[] = {"prompt_throughput", "gen_throughput", "running", "waiting"};
    const struct sv_metrics_validate_series *s[] = {&v->prompt_throughput, &v->gen_throughput,
                                                    &v->running, &v->waiting};
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        json_builder_set_member_name(b, names[i]);
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "mae");
        json_builder_add_double_value(b, s[i]->mae);
        json_builder_set_member_name(b, "mape_pct");
        json_builder_add_double_value(b, s[i]->mape);
        json_builder_set_member_name(b, "ticks");
        json_builder_add_int_value(b, (gint64)s[i]->n_ticks);
        json_builder_set_member_name(b, "mape_ticks");
        json_builder_add_int_value(b, (gint64)s[i]->n_mape_ticks);
        json_builder_end_object(b);
    }
    json_builder_end_object(b);
    json_builder_end_object(b);
    g_autofree char *text = sv_metrics__json_text(b);
    if (sv_path_is_special_file(path)) {
        /* A device or a FIFO (/dev/null) is written in place: a rename would replace it. */
        FILE *fp = fopen(path, "w");
        if (fp == NULL) {
            g_set_error(error, SV_METRICS_ERROR, SV_METRICS_ERROR_IO, "cannot open %s: %s", path,
                        g_strerror(errno));
            return FALSE;
        }
        gboolean bad = fputs(text, fp) < 0;
        bad |= fclose(fp) != 0;
        if (bad)
            g_set_error(error, SV_METRICS_ERROR, SV_METRICS_ERROR_IO, "cannot write %s: %s", path,
                        g_strerror(errno));
        return !bad;
    }
    /* g_file_set_contents writes a temporary file (0666 less the umask) and renames it: never
     * half a file */
    return g_file_set_contents(path, text, -1, error);
}
