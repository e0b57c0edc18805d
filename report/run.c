/* Reading a run output folder (docs/outputs.md): summary.json, requests.csv, timeseries.csv,
 * power.csv, run.json. */
#include "report/report_internal.h"

#include "core/core.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>

G_DEFINE_QUARK(sv - report - error - quark, sv_report_error)

const char *const sv_report__tier_cols[SV_REPORT_N_TIERS] = {"npu_mem_bytes", "cpu_mem_bytes",
                                                             "cxl_mem_bytes", "ssd_bytes"};
const char *const sv_report__tier_names[SV_REPORT_N_TIERS] = {"NPU", "CPU DRAM", "CXL", "SSD"};
const char *const sv_report__components[SV_REPORT_N_COMPONENTS] = {"npu", "cpu",     "dram", "link",
                                                                   "nic", "storage", "base"};

static GArray *darray(void)
{
    return g_array_new(FALSE, FALSE, sizeof(double));
}

static void darray_free(GArray **a)
{
    if (*a != NULL)
        g_array_unref(*a);
    *a = NULL;
}

void sv_report_run_free(sv_report_run *r)
{
    if (r == NULL)
        return;
    g_free(r->dir);
    g_free(r->label);
    if (r->summary != NULL)
        json_node_unref(r->summary);
    g_free(r->command);
    darray_free(&r->ttft_ms);
    darray_free(&r->tpot_ms);
    darray_free(&r->e2e_ms);
    g_free(r->requests_why);
    darray_free(&r->t_s);
    darray_free(&r->prompt_tps);
    darray_free(&r->gen_tps);
    darray_free(&r->running);
    darray_free(&r->waiting);
    darray_free(&r->kv_pct);
    for (int k = 0; k < SV_REPORT_N_TIERS; k++)
        darray_free(&r->tier_bytes[k]);
    g_free(r->timeseries_why);
    darray_free(&r->power_t_s);
    for (int k = 0; k < SV_REPORT_N_COMPONENTS; k++)
        darray_free(&r->power_w[k]);
    darray_free(&r->total_w);
    g_free(r->power_why);
    g_free(r);
}

const char *sv_report_run_label(const sv_report_run *r)
{
    return r->label;
}

gboolean sv_report__summary_number(const sv_report_run *r, const char *path, double *out)
{
    JsonNode *n = r->summary;
    g_auto(GStrv) parts = g_strsplit(path, ".", -1);
    for (guint i = 0; parts[i] != NULL; i++) {
        if (!JSON_NODE_HOLDS_OBJECT(n))
            return FALSE;
        n = json_object_get_member(json_node_get_object(n), parts[i]);
        if (n == NULL)
            return FALSE;
    }
    return sv_cfg_node_double(n, out);
}

/* ---- summary.json, run.json ---------------------------------------------------------------- */

static gboolean load_summary(sv_report_run *r, GError **error)
{
    g_autofree char *path = g_build_filename(r->dir, "summary.json", NULL);
    if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
        g_set_error(error, SV_REPORT_ERROR, SV_REPORT_ERROR_FORMAT,
                    "%s: not a servesim run output folder (no summary.json)", r->dir);
        return FALSE;
    }
    if (!sv_path_check_not_dir(path, error))
        return FALSE;
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) e = NULL;
    if (!json_parser_load_from_file(parser, path, &e)) {
        g_set_error(error, SV_REPORT_ERROR, SV_REPORT_ERROR_FORMAT, "%s: %s", path, e->message);
        return FALSE;
    }
    JsonNode *root = json_parser_get_root(parser);
    if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, SV_REPORT_ERROR, SV_REPORT_ERROR_FORMAT,
                    "%s: not a servesim summary (the top level is not an object)", path);
        return FALSE;
    }
    /* The keys every run writes (docs/outputs.md "summary.json"): their absence means another
     * program's file. */
    static const char *const required[] = {"requests.finished", "makespan_s",
                                           "throughput.output_tokens_per_s",
                                           "latency_ms.ttft.mean"};
    r->summary = json_node_ref(root);
    for (guint i = 0; i < G_N_ELEMENTS(required); i++) {
        double v;
        if (!sv_report__summary_number(r, required[i], &v)) {
            g_set_error(error, SV_REPORT_ERROR, SV_REPORT_ERROR_FORMAT,
                        "%s: %s: required key is missing or not a number (not a servesim run "
                        "summary)",
                        path, required[i]);
            return FALSE;
        }
    }
    return TRUE;
}

/* run.json (written by newer servesim runs): its argv, shown under the run's name. Optional; a
 * file that is not what is expected is ignored, it adds nothing the plots need. */
static void load_run_json(sv_report_run *r)
{
    g_autofree char *path = g_build_filename(r->dir, "run.json", NULL);
    if (!g_file_test(path, G_FILE_TEST_IS_REGULAR))
        return;
    r->has_run_json = TRUE;
    g_autoptr(JsonParser) parser = json_parser_new();
    if (!json_parser_load_from_file(parser, path, NULL))
        return;
    JsonNode *root = json_parser_get_root(parser);
    if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root))
        return;
    JsonNode *argv = json_object_get_member(json_node_get_object(root), "argv");
    if (argv == NULL)
        return;
    if (JSON_NODE_HOLDS_VALUE(argv) && json_node_get_value_type(argv) == G_TYPE_STRING) {
        r->command = g_strdup(json_node_get_string(argv));
    } else if (JSON_NODE_HOLDS_ARRAY(argv)) {
        JsonArray *a = json_node_get_array(argv);
        GString *s = g_string_new(NULL);
        for (guint i = 0; i < json_array_get_length(a); i++) {
            JsonNode *e = json_array_get_element(a, i);
            if (!JSON_NODE_HOLDS_VALUE(e) || json_node_get_value_type(e) != G_TYPE_STRING)
                continue;
            if (s->len > 0)
                g_string_append_c(s, ' ');
            g_string_append(s, json_node_get_string(e));
        }
        r->command = g_string_free(s, FALSE);
    }
}

/* ---- CSV files ---------------------------------------------------------------------------- */

/* Open DIR/name. Absent: NULL with *why set and no error (the plots say why); present but
 * unreadable: NULL with the error. */
static sv_csv *open_optional(const sv_report_run *r, const char *name, char **why, GError **error)
{
    g_autofree char *path = g_build_filename(r->dir, name, NULL);
    if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
        *why = g_strdup_printf("%s has no %s", r->dir, name);
        return NULL;
    }
    if (!sv_path_check_not_dir(path, error))
        return NULL;
    sv_csv *c = sv_csv_open(path, error);
    if (c != NULL && sv_csv_n_cols(c) == 0) {
        *why = g_strdup_printf("%s is empty", path);
        sv_csv_free(c);
        return NULL;
    }
    return c;
}

static int need_col(sv_csv *c, const char *path, const char *name, GError **error)
{
    int i = sv_csv_col(c, name);
    if (i < 0)
        g_set_error(error, SV_REPORT_ERROR, SV_REPORT_ERROR_FORMAT,
                    "%s: column %s is missing (not a servesim output)", path, name);
    return i;
}

/* Field `col` of the current row as a number; empty gives *present FALSE when `present` is not
 * NULL, and is an error otherwise. */
static gboolean field_num(sv_csv *c, const char *path, int col, gboolean *present, double *out,
                          GError **error)
{
    const char *s = (guint)col < sv_csv_n_fields(c) ? sv_csv_field(c, (guint)col) : "";
    if (present != NULL)
        *present = s[0] != '\0';
    if (s[0] == '\0' && present != NULL)
        return TRUE;
    if (!sv_num_parse_double(s, out)) {
        g_set_error(error, SV_REPORT_ERROR, SV_REPORT_ERROR_FORMAT,
                    "%s:%" G_GUINT64_FORMAT ": %s: '%s' is not a number", path, sv_csv_line(c),
                    sv_csv_col_name(c, (guint)col), s);
        return FALSE;
    }
    return TRUE;
}

static int cmp_double(gconstpointer a, gconstpointer b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static gboolean load_requests(sv_report_run *r, GError **error)
{
    g_autoptr(sv_csv) c = open_optional(r, "requests.csv", &r->requests_why, error);
    if (c == NULL)
        return r->requests_why != NULL;
    g_autofree char *path = g_build_filename(r->dir, "requests.csv", NULL);
    int ttft = need_col(c, path, "ttft_ns", error);
    int tpot = ttft < 0 ? -1 : need_col(c, path, "tpot_ns", error);
    int e2e = tpot < 0 ? -1 : need_col(c, path, "e2e_ns", error);
    if (e2e < 0)
        return FALSE;
    int status = sv_csv_col(c, "status"); /* absent before issue 13: every row finished */
    r->ttft_ms = darray();
    r->tpot_ms = darray();
    r->e2e_ms = darray();
    GError *e = NULL;
    while (sv_csv_next(c, &e)) {
        if (status >= 0 && (guint)status < sv_csv_n_fields(c) &&
            strcmp(sv_csv_field(c, (guint)status), "finished") != 0)
            continue;
        const int cols[3] = {ttft, tpot, e2e};
        GArray *dst[3] = {r->ttft_ms, r->tpot_ms, r->e2e_ms};
        for (int k = 0; k < 3; k++) {
            gboolean present;
            double v;
            if (!field_num(c, path, cols[k], &present, &v, error))
                return FALSE;
            if (present) {
                v /= 1e6; /* ns -> ms */
                g_array_append_val(dst[k], v);
            }
        }
    }
    if (e != NULL) {
        g_propagate_error(error, e);
        return FALSE;
    }
    g_array_sort(r->ttft_ms, cmp_double);
    g_array_sort(r->tpot_ms, cmp_double);
    g_array_sort(r->e2e_ms, cmp_double);
    return TRUE;
}

static gboolean load_timeseries(sv_report_run *r, GError **error)
{
    g_autoptr(sv_csv) c = open_optional(r, "timeseries.csv", &r->timeseries_why, error);
    if (c == NULL)
        return r->timeseries_why != NULL;
    g_autofree char *path = g_build_filename(r->dir, "timeseries.csv", NULL);
    static const char *const names[] = {"t",       "prompt_throughput", "gen_throughput",
                                        "running", "waiting",           "kv_cache_pct"};
    GArray **dst[] = {&r->t_s, &r->prompt_tps, &r->gen_tps, &r->running, &r->waiting, &r->kv_pct};
    int cols[G_N_ELEMENTS(names)];
    for (guint k = 0; k < G_N_ELEMENTS(names); k++) {
        if ((cols[k] = need_col(c, path, names[k], error)) < 0)
            return FALSE;
        *dst[k] = darray();
    }
    int tier_cols[SV_REPORT_N_TIERS];
    for (int k = 0; k < SV_REPORT_N_TIERS; k++) {
        tier_cols[k] = sv_csv_col(c, sv_report__tier_cols[k]);
        if (tier_cols[k] >= 0)
            r->tier_bytes[k] = darray();
    }
    GError *e = NULL;
    while (sv_csv_next(c, &e)) {
        double v;
        for (guint k = 0; k < G_N_ELEMENTS(names); k++) {
            if (!field_num(c, path, cols[k], NULL, &v, error))
                return FALSE;
            g_array_append_val(*dst[k], v);
        }
        for (int k = 0; k < SV_REPORT_N_TIERS; k++) {
            if (tier_cols[k] < 0)
                continue;
            if (!field_num(c, path, tier_cols[k], NULL, &v, error))
                return FALSE;
            g_array_append_val(r->tier_bytes[k], v);
        }
    }
    if (e != NULL) {
        g_propagate_error(error, e);
        return FALSE;
    }
    return TRUE;
}

/* power.csv: node<i>_<component>_w summed over i per component, and total_w. */
static gboolean load_power(sv_report_run *r, GError **error)
{
    g_autoptr(sv_csv) c = open_optional(r, "power.csv", &r->power_why, error);
    if (c == NULL) {
        if (r->power_why != NULL) {
            g_free(r->power_why);
            r->power_why = g_strdup_printf("%s has no power.csv (the cluster config has no power "
                                           "block: docs/power.md)",
                                           r->dir);
            return TRUE;
        }
        return FALSE;
    }
    g_autofree char *path = g_build_filename(r->dir, "power.csv", NULL);
    int t = need_col(c, path, "t", error);
    int total = t < 0 ? -1 : need_col(c, path, "total_w", error);
    if (total < 0)
        return FALSE;
    /* Which component each column belongs to (-1: none). */
    guint nc = sv_csv_n_cols(c);
    g_autofree int *comp_of = g_new(int, nc);
    guint n_node_cols = 0;
    for (guint i = 0; i < nc; i++) {
        const char *name = sv_csv_col_name(c, i);
        comp_of[i] = -1;
        if (!g_str_has_prefix(name, "node") || !g_str_has_suffix(name, "_w"))
            continue;
        const char *us = strchr(name + 4, '_');
        if (us == NULL)
            continue;
        for (int k = 0; k < SV_REPORT_N_COMPONENTS; k++) {
            size_t len = strlen(sv_report__components[k]);
            if (strncmp(us + 1, sv_report__components[k], len) == 0 &&
                strcmp(us + 1 + len, "_w") == 0) {
                comp_of[i] = k;
                n_node_cols++;
            }
        }
    }
    if (n_node_cols == 0) {
        g_set_error(error, SV_REPORT_ERROR, SV_REPORT_ERROR_FORMAT,
                    "%s: no node<i>_<component>_w column (not a servesim power.csv)", path);
        return FALSE;
    }
    r->power_t_s = darray();
    r->total_w = darray();
    for (int k = 0; k < SV_REPORT_N_COMPONENTS; k++)
        r->power_w[k] = darray();
    GError *e = NULL;
    while (sv_csv_next(c, &e)) {
        double v, sum[SV_REPORT_N_COMPONENTS] = {0};
        if (!field_num(c, path, t, NULL, &v, error))
            return FALSE;
        g_array_append_val(r->power_t_s, v);
        if (!field_num(c, path, total, NULL, &v, error))
            return FALSE;
        g_array_append_val(r->total_w, v);
        for (guint i = 0; i < nc; i++) {
            if (comp_of[i] < 0)
                continue;
            if (!field_num(c, path, (int)i, NULL, &v, error))
                return FALSE;
            sum[comp_of[i]] += v;
        }
        for (int k = 0; k < SV_REPORT_N_COMPONENTS; k++)
            g_array_append_val(r->power_w[k], sum[k]);
    }
    if (e != NULL) {
        g_propagate_error(error, e);
        return FALSE;
    }
    return TRUE;
}

sv_report_run *sv_report_run_load(const char *dir, const char *label, GError **error)
{
    if (!g_file_test(dir, G_FILE_TEST_EXISTS)) {
        g_set_error(error, SV_REPORT_ERROR, SV_REPORT_ERROR_IO, "%s: no such folder", dir);
        return NULL;
    }
    if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
        g_set_error(error, SV_REPORT_ERROR, SV_REPORT_ERROR_FORMAT,
                    "%s: not a folder (a run output folder is expected)", dir);
        return NULL;
    }
    g_autoptr(sv_report_run) r = g_new0(sv_report_run, 1);
    r->dir = g_strdup(dir);
    if (label != NULL) {
        r->label = g_strdup(label);
    } else {
        g_autofree char *canon = g_canonicalize_filename(dir, NULL);
        r->label = g_path_get_basename(canon);
    }
    if (!load_summary(r, error) || !load_requests(r, error) || !load_timeseries(r, error) ||
        !load_power(r, error))
        return NULL;
    load_run_json(r);
    return g_steal_pointer(&r);
}
