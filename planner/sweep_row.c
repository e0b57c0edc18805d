/* servesim sweep: a point's outcome read back from its folder, and its sweep.csv row. */
#include <json-glib/json-glib.h>
#include <string.h>
#include <sys/wait.h>

#include "planner/planner.h"
#include "planner/sweep_internal.h"

static const char *const lat_names[] = {"ttft", "tpot", "itl", "e2el"};
static const char *const stat_names[] = {"mean", "median", "p99"};

/* The name of metric i, NULL for a latency one (lat_name composes those). */
static const char *fixed_name(int i)
{
    static const char *const fixed[] = {"completed", "request_throughput", "output_throughput",
                                        "total_token_throughput"};
    static const char *const tail[] = {"request_goodput",
                                       "gpus",
                                       "output_throughput_per_gpu",
                                       "total_token_throughput_per_gpu",
                                       "energy_j",
                                       "energy_per_output_token_j"};
    if (i < SV_SWEEP_M_LAT0)
        return fixed[i];
    if (i >= SV_SWEEP_M_GOODPUT)
        return tail[i - SV_SWEEP_M_GOODPUT];
    return NULL; /* latency names are composed by lat_name() */
}

static void lat_name(int i, char *buf, size_t n)
{
    int j = i - SV_SWEEP_M_LAT0;
    g_snprintf(buf, n, "%s_%s_ms", stat_names[j % 3], lat_names[j / 3]);
}

static char *metric_name(int i)
{
    const char *f = fixed_name(i);
    if (f)
        return g_strdup(f);
    char buf[32];
    lat_name(i, buf, sizeof buf);
    return g_strdup(buf);
}

int sv_planner__sweep_metric_index(const char *name)
{
    for (int i = 0; i < SV_SWEEP_N_METRICS; i++) {
        g_autofree char *n = metric_name(i);
        if (!strcmp(n, name))
            return i;
    }
    return -1;
}

void sv_planner_sweep_result_clear(struct sv_sweep_result *r)
{
    g_free(r->error);
    memset(r, 0, sizeof *r);
}

static void set(struct sv_sweep_result *r, int i, double v)
{
    r->m[i] = v;
    r->have |= G_GUINT64_CONSTANT(1) << i;
}

static gboolean have(const struct sv_sweep_result *r, int i)
{
    return (r->have >> i) & 1;
}

/* A number at a dotted path of members ("latency_ms.ttft.p99"); FALSE when absent or not a
 * number. */
static gboolean num_at(JsonObject *o, const char *path, double *out)
{
    g_auto(GStrv) parts = g_strsplit(path, ".", -1);
    JsonNode *n = NULL;
    for (guint i = 0; parts[i]; i++) {
        if (!o || !json_object_has_member(o, parts[i]))
            return FALSE;
        n = json_object_get_member(o, parts[i]);
        o = JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
    }
    if (!n || !JSON_NODE_HOLDS_VALUE(n))
        return FALSE;
    GType t = json_node_get_value_type(n);
    if (t != G_TYPE_INT64 && t != G_TYPE_DOUBLE)
        return FALSE;
    *out = json_node_get_double(n);
    return TRUE;
}

/* summary.json -> metrics. vLLM's benchmark_serving keys at the top level (issue 14, results)
 * first; the keys summary.json had before them (docs/outputs.md) when those are absent. */
static void read_summary(JsonObject *o, struct sv_sweep_result *r)
{
    static const struct {
        int m;
        const char *vllm, *old;
    } fixed[] = {
        {SV_SWEEP_M_COMPLETED, "completed", "requests.finished"},
        {SV_SWEEP_M_REQ_TPUT, "request_throughput", "throughput.requests_per_s"},
        {SV_SWEEP_M_OUT_TPUT, "output_throughput", "throughput.output_tokens_per_s"},
        {SV_SWEEP_M_TOTAL_TPUT, "total_token_throughput", NULL},
        {SV_SWEEP_M_GOODPUT, "request_goodput", NULL},
    };
    double v, in;
    for (size_t i = 0; i < G_N_ELEMENTS(fixed); i++) {
        if (num_at(o, fixed[i].vllm, &v) || (fixed[i].old && num_at(o, fixed[i].old, &v)))
            set(r, fixed[i].m, v);
    }
    if (!have(r, SV_SWEEP_M_TOTAL_TPUT) && num_at(o, "throughput.input_tokens_per_s", &in) &&
        num_at(o, "throughput.output_tokens_per_s", &v))
        set(r, SV_SWEEP_M_TOTAL_TPUT, in + v);
    static const char *const old_lat[] = {"ttft", "tpot", "itl", "e2e"};
    static const char *const old_stat[] = {"mean", "p50", "p99"};
    for (int j = 0; j < 12; j++) {
        char name[32];
        lat_name(SV_SWEEP_M_LAT0 + j, name, sizeof name);
        g_autofree char *old = g_strdup_printf("latency_ms.%s.%s", old_lat[j / 3], old_stat[j % 3]);
        if (num_at(o, name, &v) || num_at(o, old, &v))
            set(r, SV_SWEEP_M_LAT0 + j, v);
    }
    if (num_at(o, "energy.total_j", &v)) {
        set(r, SV_SWEEP_M_ENERGY_J, v);
        double out;
        if ((num_at(o, "total_output_tokens", &out) || num_at(o, "tokens.output", &out)) && out > 0)
            set(r, SV_SWEEP_M_ENERGY_J_TOKEN, v / out);
    }
}

/* Member `name` of o when it is an array, else NULL. */
static JsonArray *array_member(JsonObject *o, const char *name)
{
    JsonNode *n = o ? json_object_get_member(o, name) : NULL;
    return n && JSON_NODE_HOLDS_ARRAY(n) ? json_node_get_array(n) : NULL;
}

/* Accelerators of run.json's instances: num_npus, else tp x pp; plus the FFN devices of an
 * instance under attention/FFN disaggregation (its "afd" object, docs/afd.md). */
static gboolean count_instances(JsonArray *inst, double *gpus)
{
    double n = 0;
    for (guint j = 0; inst && j < json_array_get_length(inst); j++) {
        JsonNode *in = json_array_get_element(inst, j);
        if (!JSON_NODE_HOLDS_OBJECT(in))
            return FALSE;
        JsonObject *ic = json_node_get_object(in);
        double npus = 0, tp = 1, pp = 1;
        if (!num_at(ic, "num_npus", &npus)) {
            num_at(ic, "tp", &tp);
            num_at(ic, "pp", &pp);
            npus = tp * pp;
        }
        /* A shared FFN group's devices count once, at its owner (afd.ffn_owner). */
        double ffn = 0, owner = -1;
        if (num_at(ic, "afd.ffn_npus", &ffn) &&
            (!num_at(ic, "afd.ffn_owner", &owner) || owner == (double)j))
            npus += ffn;
        n += npus;
    }
    *gpus = n;
    return n > 0;
}

static JsonNode *load_json(const char *path)
{
    g_autoptr(JsonParser) p = json_parser_new();
    if (!json_parser_load_from_file(p, path, NULL) || !json_parser_get_root(p))
        return NULL;
    return json_node_copy(json_parser_get_root(p));
}

/* GPUs of point k: summary.json's `gpus` when it has one, else run.json's resolved `instances`
 * (every `servesim run` writes it beside summary.json): the planner's own count, not one derived
 * again here from the cluster file or the quick-form flags. */
static gboolean point_gpus(const char *dir, JsonObject *summary, double *gpus)
{
    if (num_at(summary, "gpus", gpus))
        return TRUE;
    g_autofree char *run_json = g_build_filename(dir, "run.json", NULL);
    g_autoptr(JsonNode) run = load_json(run_json);
    return run && JSON_NODE_HOLDS_OBJECT(run) &&
           count_instances(array_member(json_node_get_object(run), "instances"), gpus);
}

void sv_planner_sweep_read(const sv_sweep_spec *s, guint k, const char *dir, int wait_status,
                           const char *stderr_text, struct sv_sweep_result *r)
{
    sv_planner_sweep_result_clear(r);
    g_autofree char *line = NULL;
    if (stderr_text) { /* the first line that is not the per-instance latency note */
        g_auto(GStrv) lines = g_strsplit(stderr_text, "\n", -1);
        for (guint i = 0; lines[i] && !line; i++)
            if (*lines[i] && !strstr(lines[i], ": latency "))
                line = g_strdup(lines[i]);
    }
    if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
        r->status = SV_SWEEP_FAILED;
        g_autofree char *how = WIFEXITED(wait_status)
                                   ? g_strdup_printf("exit %d", WEXITSTATUS(wait_status))
                                   : g_strdup_printf("signal %d", WTERMSIG(wait_status));
        r->error = line ? g_strdup_printf("%s: %s", how, line) : g_steal_pointer(&how);
        return;
    }
    g_autofree char *path = g_build_filename(dir, "summary.json", NULL);
    g_autoptr(JsonNode) root = load_json(path);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
        r->status = SV_SWEEP_FAILED;
        r->error = g_strdup("no readable summary.json");
        return;
    }
    r->status = SV_SWEEP_OK;
    JsonObject *o = json_node_get_object(root);
    read_summary(o, r);
    double gpus;
    if (point_gpus(dir, o, &gpus)) {
        set(r, SV_SWEEP_M_GPUS, gpus);
        if (have(r, SV_SWEEP_M_OUT_TPUT))
            set(r, SV_SWEEP_M_OUT_TPUT_GPU, r->m[SV_SWEEP_M_OUT_TPUT] / gpus);
        if (have(r, SV_SWEEP_M_TOTAL_TPUT))
            set(r, SV_SWEEP_M_TOTAL_TPUT_GPU, r->m[SV_SWEEP_M_TOTAL_TPUT] / gpus);
    }
}

/* A CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180). */
static void csv_field(GString *g, const char *v)
{
    if (!strpbrk(v, ",\"\r\n")) {
        g_string_append(g, v);
        return;
    }
    g_string_append_c(g, '"');
    for (const char *c = v; *c; c++) {
        if (*c == '"')
            g_string_append_c(g, '"');
        g_string_append_c(g, *c);
    }
    g_string_append_c(g, '"');
}

char *sv_planner_sweep_csv_header(const sv_sweep_spec *s)
{
    GString *g = g_string_new("point");
    for (guint c = 0; c < s->columns->len; c++) {
        g_string_append_c(g, ',');
        csv_field(g, s->columns->pdata[c]);
    }
    g_string_append(g, ",status,error");
    for (int i = 0; i < SV_SWEEP_N_METRICS; i++) {
        if (i == SV_SWEEP_M_GOODPUT && !s->goodput)
            continue;
        g_autofree char *n = metric_name(i);
        g_string_append_printf(g, ",%s", n);
    }
    g_string_append_c(g, '\n');
    return g_string_free(g, FALSE);
}

char *sv_planner_sweep_csv_row(const sv_sweep_spec *s, guint k, const struct sv_sweep_result *r)
{
    GString *g = g_string_new(NULL);
    g_string_append_printf(g, "%u", k);
    for (guint a = 0; a < s->axes->len; a++) {
        const sv_sweep_axis *ax = s->axes->pdata[a];
        char **tuple = ax->values->pdata[sv_planner__sweep_index(s, k, a)];
        for (guint j = 0; j < ax->members->len; j++) {
            g_string_append_c(g, ',');
            csv_field(g, tuple[j]);
        }
    }
    static const char *const st[] = {"not_run", "ok", "failed", "pruned"};
    g_string_append_printf(g, ",%s,", st[r->status]);
    if (r->error)
        csv_field(g, r->error);
    for (int i = 0; i < SV_SWEEP_N_METRICS; i++) {
        if (i == SV_SWEEP_M_GOODPUT && !s->goodput)
            continue;
        g_string_append_c(g, ',');
        if (!have(r, i))
            continue;
        char buf[G_ASCII_DTOSTR_BUF_SIZE];
        const char *fmt = i == SV_SWEEP_M_COMPLETED || i == SV_SWEEP_M_GPUS ? "%.0f"
                          : i == SV_SWEEP_M_ENERGY_J_TOKEN                  ? "%.6f"
                                                                            : "%.4f";
        g_string_append(g, g_ascii_formatd(buf, sizeof buf, fmt, r->m[i]));
    }
    g_string_append_c(g, '\n');
    return g_string_free(g, FALSE);
}
