/* The per-instance and per-pool tables: summary.json's `instances` and `pools` sections
 * (docs/outputs.md, issue 14), one table per run that has them. */
#include "report/report_internal.h"

#include <math.h>

struct column {
    const char *key, *heading;
};

/* In docs/outputs.md's order; a column no row has is left out. */
static const struct column instance_cols[] = {
    {"id", "id"},
    {"role", "role"},
    {"model", "model"},
    {"hardware", "hardware"},
    {"tp", "TP"},
    {"pp", "PP"},
    {"engine", "engine"},
    {"max_num_seqs", "max seqs"},
    {"max_num_batched_tokens", "token budget"},
    {"kv_blocks", "KV blocks"},
    {"kv_tokens", "KV tokens"},
    {"kv_usage_mean_pct", "KV mean %"},
    {"kv_usage_peak_pct", "KV peak %"},
    {"running_mean", "running mean"},
    {"running_max", "running max"},
    {"waiting_mean", "waiting mean"},
    {"waiting_max", "waiting max"},
    {"queue_ms_mean", "queue mean (ms)"},
    {"requests_served", "served"},
    {"prefills", "prefills"},
    {"input_tokens", "input tokens"},
    {"output_tokens", "output tokens"},
    {"iterations", "iterations"},
};

static const struct column pool_cols[] = {
    {"role", "role"},
    {"hardware", "hardware"},
    {"model", "model"},
    {"instances", "instances"},
    {"kv_blocks", "KV blocks"},
    {"kv_tokens", "KV tokens"},
    {"kv_usage_mean_pct", "KV mean %"},
    {"kv_usage_peak_pct", "KV peak %"},
    {"running_mean", "running mean"},
    {"running_max", "running max"},
    {"waiting_mean", "waiting mean"},
    {"waiting_max", "waiting max"},
    {"queue_ms_mean", "queue mean (ms)"},
    {"requests_served", "served"},
    {"prefills", "prefills"},
    {"input_tokens", "input tokens"},
    {"output_tokens", "output tokens"},
    {"iterations", "iterations"},
};

static JsonArray *section(const sv_report_run *r, const char *name)
{
    JsonObject *o = json_node_get_object(r->summary);
    JsonNode *n = json_object_get_member(o, name);
    return n != NULL && JSON_NODE_HOLDS_ARRAY(n) ? json_node_get_array(n) : NULL;
}

/* A cell: a string as is, a whole number as an integer, another number with three decimals, an
 * array of numbers joined by commas (a pool's instance ids). */
static void put_value(GString *o, JsonNode *n)
{
    if (JSON_NODE_HOLDS_ARRAY(n)) {
        JsonArray *a = json_node_get_array(n);
        for (guint i = 0; i < json_array_get_length(a); i++) {
            if (i > 0)
                g_string_append(o, ", ");
            put_value(o, json_array_get_element(a, i));
        }
        return;
    }
    if (!JSON_NODE_HOLDS_VALUE(n))
        return;
    if (json_node_get_value_type(n) == G_TYPE_STRING) {
        g_autofree char *e = g_markup_escape_text(json_node_get_string(n), -1);
        g_string_append(o, e);
        return;
    }
    double v = json_node_get_double(n);
    if (v == floor(v) && fabs(v) < 1e15) {
        g_string_append_printf(o, "%" G_GINT64_FORMAT, (gint64)v);
    } else {
        g_autofree char *s = sv_report__fmt(v);
        g_string_append(o, s);
    }
}

static void put_section_table(GString *o, JsonArray *rows, const struct column *cols, guint n_cols,
                              const char *cls)
{
    g_autofree gboolean *shown = g_new0(gboolean, n_cols);
    for (guint c = 0; c < n_cols; c++) {
        for (guint i = 0; i < json_array_get_length(rows); i++) {
            JsonNode *row = json_array_get_element(rows, i);
            shown[c] |= JSON_NODE_HOLDS_OBJECT(row) &&
                        json_object_has_member(json_node_get_object(row), cols[c].key);
        }
    }
    g_string_append_printf(o, "<table class=\"%s\">\n<thead><tr>", cls);
    for (guint c = 0; c < n_cols; c++) {
        if (shown[c])
            g_string_append_printf(o, "<th>%s</th>", cols[c].heading);
    }
    g_string_append(o, "</tr></thead>\n<tbody>\n");
    for (guint i = 0; i < json_array_get_length(rows); i++) {
        JsonNode *row = json_array_get_element(rows, i);
        if (!JSON_NODE_HOLDS_OBJECT(row))
            continue;
        JsonObject *obj = json_node_get_object(row);
        g_string_append(o, "<tr>");
        for (guint c = 0; c < n_cols; c++) {
            if (!shown[c])
                continue;
            JsonNode *v = json_object_get_member(obj, cols[c].key);
            g_string_append(o, "<td>");
            if (v != NULL)
                put_value(o, v);
            else
                g_string_append(o, "&#x2013;");
            g_string_append(o, "</td>");
        }
        g_string_append(o, "</tr>\n");
    }
    g_string_append(o, "</tbody>\n</table>\n");
}

void sv_report__put_instances(GString *o, sv_report_run *const *runs, guint n)
{
    guint n_with = 0;
    for (guint i = 0; i < n; i++)
        n_with += section(runs[i], "instances") != NULL || section(runs[i], "pools") != NULL;
    if (n_with == 0)
        return; /* runs from before issue 14: no section, no heading */
    g_string_append(o, "<h2>Instances and pools</h2>\n");
    for (guint i = 0; i < n; i++) {
        JsonArray *inst = section(runs[i], "instances"), *pools = section(runs[i], "pools");
        g_autofree char *label = g_markup_escape_text(runs[i]->label, -1);
        g_string_append_printf(o, "<h3>%s</h3>\n", label);
        if (inst == NULL && pools == NULL) {
            g_string_append(o, "<p class=\"none\">summary.json has no instances or pools section "
                               "(a run from before issue 14)</p>\n");
            continue;
        }
        if (inst != NULL)
            put_section_table(o, inst, instance_cols, G_N_ELEMENTS(instance_cols), "instances");
        if (pools != NULL)
            put_section_table(o, pools, pool_cols, G_N_ELEMENTS(pool_cols), "pools");
    }
}
