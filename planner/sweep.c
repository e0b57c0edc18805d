/* servesim sweep: the spec (YAML) and its grid. docs/sweep.md is the reference of the keys.
 *
 *   run:   {cluster: c.json, workload: w.jsonl, latency: roofline, ...}   any `servesim run` flag
 *   axes:
 *     - {name: qps, values: [1, 2, 4]}                                     a run flag
 *     - {name: tp, path: "nodes[*].instances[*].tp_size", values: [1, 2]}  patches run.cluster
 *     - {zip: [instances, tp], values: [[8, 1], [4, 2]]}                   several flags together
 *   goal:  {load: qps, at: 4, slo: {p99_ttft_ms: 2000}, minimize: gpus}   (sweep_sched.c)
 */
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planner/planner.h"
#include "planner/sweep_internal.h"

static gboolean fail(GError **error, const sv_sweep_spec *s, int line, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);
static gboolean fail(GError **error, const sv_sweep_spec *s, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID, "%s:%d: %s", s->path, line, msg);
    return FALSE;
}

static void member_free(gpointer p)
{
    sv_sweep_member *m = p;
    g_free(m->name);
    g_free(m->flag);
    g_free(m->path);
    g_free(m);
}

static void axis_free(gpointer p)
{
    sv_sweep_axis *a = p;
    g_ptr_array_unref(a->members);
    g_ptr_array_unref(a->values);
    g_free(a->name);
    g_free(a);
}

void sv_planner_sweep_free(sv_sweep_spec *s)
{
    if (!s)
        return;
    g_free(s->path);
    g_free(s->dir);
    g_ptr_array_unref(s->base);
    g_ptr_array_unref(s->axes);
    g_ptr_array_unref(s->columns);
    g_free(s->cluster);
    if (s->cluster_root)
        json_node_unref(s->cluster_root);
    g_free(s->goal.load);
    g_ptr_array_unref(s->goal.slo_names);
    g_array_unref(s->goal.slo_limits);
    g_free(s);
}

/* Run flags whose value is a file or folder: relative ones are taken from the spec's folder. */
static gboolean is_path_flag(const char *f)
{
    static const char *const paths[] = {"cluster", "workload",      "profiles", "model-dir",
                                        "plugin",  "hardware-file", "pim-dir"};
    for (size_t i = 0; i < G_N_ELEMENTS(paths); i++)
        if (!strcmp(f, paths[i]))
            return TRUE;
    return FALSE;
}

/* Flags the sweep itself sets on every point. */
static gboolean is_reserved_flag(const char *f)
{
    return !strcmp(f, "output-dir") || !strcmp(f, "quiet") || !strcmp(f, "help");
}

static char *resolve(const sv_sweep_spec *s, const char *flag, const char *v)
{
    if (!is_path_flag(flag) || g_path_is_absolute(v))
        return g_strdup(v);
    return g_canonicalize_filename(v, s->dir);
}

static void base_add(sv_sweep_spec *s, const char *flag, const char *value)
{
    sv_sweep_arg a = {g_strdup(flag), value ? resolve(s, flag, value) : NULL};
    g_ptr_array_add(s->base, g_memdup2(&a, sizeof a));
}

static void arg_free(gpointer p)
{
    sv_sweep_arg *a = p;
    g_free(a->flag);
    g_free(a->value);
    g_free(a);
}

/* A flag name as the spec writes it: letters, digits, '-' ("max-num-seqs"), no leading "--". */
static gboolean flag_ok(const char *f)
{
    if (!*f || *f == '-')
        return FALSE;
    for (const char *c = f; *c; c++)
        if (!g_ascii_isalnum(*c) && *c != '-' && *c != '_')
            return FALSE;
    return TRUE;
}

static gboolean load_run(sv_sweep_spec *s, const sv_yaml_node *run, GError **error)
{
    if (run->kind != SV_YAML_MAP)
        return fail(error, s, run->line, "run: expected a map of `servesim run` flags");
    for (guint i = 0; i < run->keys->len; i++) {
        const sv_yaml_node *k = run->keys->pdata[i], *v = run->items->pdata[i];
        const char *f = k->scalar;
        if (!flag_ok(f))
            return fail(error, s, k->line, "run.%s: not a flag name (write `max-num-seqs: 64`)", f);
        if (is_reserved_flag(f))
            return fail(error, s, k->line, "run.%s: the sweep sets it for every point", f);
        if (v->kind == SV_YAML_SEQ) { /* a repeatable flag: plugin, hardware-file */
            for (guint j = 0; j < v->items->len; j++) {
                const sv_yaml_node *e = v->items->pdata[j];
                if (e->kind != SV_YAML_SCALAR)
                    return fail(error, s, e->line, "run.%s[%u]: expected a value", f, j);
                base_add(s, f, e->scalar);
            }
        } else if (v->kind == SV_YAML_MAP) {
            return fail(error, s, v->line, "run.%s: expected a value, not a map", f);
        } else if (!strcmp(v->scalar, "true")) {
            base_add(s, f, NULL); /* a switch: --enable-prefix-sharing */
        } else if (!strcmp(v->scalar, "false")) {
            continue;
        } else if (!*v->scalar) {
            return fail(error, s, v->line, "run.%s: empty value", f);
        } else {
            base_add(s, f, v->scalar);
        }
        if (!strcmp(f, "cluster") && v->kind == SV_YAML_SCALAR) {
            g_free(s->cluster);
            s->cluster = resolve(s, f, v->scalar);
        }
    }
    return TRUE;
}

/* ---- JSON paths into the cluster config: nodes[*].instances[0].tp_size ---------------------- */

/* Apply `value` at `path` under `node`; *hits counts the members set. The last name may be new
 * (an instance without pp_size gets one); every name before it must exist. */
static gboolean patch(JsonNode *node, const char *path, const char *where, JsonNode *value,
                      int *hits, GError **error)
{
    const char *p = path;
    size_t n = strcspn(p, ".[");
    if (n == 0) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID, "%s: expected a member name",
                    where);
        return FALSE;
    }
    g_autofree char *name = g_strndup(p, n);
    p += n;
    if (!JSON_NODE_HOLDS_OBJECT(node)) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID, "%s: '%s' is not inside an object",
                    where, name);
        return FALSE;
    }
    JsonObject *o = json_node_get_object(node);
    if (!*p) {
        json_object_set_member(o, name, json_node_copy(value));
        (*hits)++;
        return TRUE;
    }
    JsonNode *child = json_object_get_member(o, name);
    if (!child) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID, "%s: the cluster has no '%s'",
                    where, name);
        return FALSE;
    }
    if (*p == '.')
        return patch(child, p + 1, where, value, hits, error);
    /* one or more [i] / [*] */
    g_assert(*p == '[');
    const char *close = strchr(p, ']');
    if (!close) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID, "%s: '[' without ']'", where);
        return FALSE;
    }
    g_autofree char *idx = g_strndup(p + 1, (gsize)(close - p - 1));
    const char *rest = close + 1;
    if (*rest == '.')
        rest++;
    else if (*rest && *rest != '[') {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID, "%s: expected '.' after ']'",
                    where);
        return FALSE;
    }
    if (!JSON_NODE_HOLDS_ARRAY(child)) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID, "%s: '%s' is not an array", where,
                    name);
        return FALSE;
    }
    if (!*rest) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                    "%s: a path ends in a member name, not in an index", where);
        return FALSE;
    }
    JsonArray *arr = json_node_get_array(child);
    guint len = json_array_get_length(arr), lo = 0, hi = len;
    if (strcmp(idx, "*") != 0) {
        char *end = NULL;
        guint64 i = g_ascii_strtoull(idx, &end, 10);
        if (!*idx || *end || i >= len) {
            g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                        "%s: index [%s] of '%s' is not in [0, %u)", where, idx, name, len);
            return FALSE;
        }
        lo = (guint)i;
        hi = lo + 1;
    }
    /* A path continuing with another index ("a[0][1]") is not a cluster config's shape. */
    if (*rest == '[') {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                    "%s: nested arrays are not supported", where);
        return FALSE;
    }
    for (guint i = lo; i < hi; i++)
        if (!patch(json_array_get_element(arr, i), rest, where, value, hits, error))
            return FALSE;
    return TRUE;
}

/* A YAML scalar as a JSON value: a number, true/false/null, else a string. */
static JsonNode *scalar_json(const char *v)
{
    JsonNode *n = json_node_new(JSON_NODE_VALUE);
    char *end = NULL;
    if (!strcmp(v, "true") || !strcmp(v, "false")) {
        json_node_set_boolean(n, !strcmp(v, "true"));
        return n;
    }
    if (!strcmp(v, "null")) {
        json_node_free(n);
        return json_node_new(JSON_NODE_NULL);
    }
    gint64 i = g_ascii_strtoll(v, &end, 10);
    if (*v && !*end) {
        json_node_set_int(n, i);
        return n;
    }
    double d = g_ascii_strtod(v, &end);
    if (*v && !*end) {
        json_node_set_double(n, d);
        return n;
    }
    json_node_set_string(n, v);
    return n;
}

static gboolean apply_path(JsonNode *root, const char *path, const char *value, const char *where,
                           GError **error)
{
    g_autoptr(JsonNode) v = scalar_json(value);
    int hits = 0;
    if (!patch(root, path, where, v, &hits, error))
        return FALSE;
    if (hits == 0) { /* nodes[*] over an empty array */
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID, "%s: matches nothing", where);
        return FALSE;
    }
    return TRUE;
}

/* ---- axes -------------------------------------------------------------------------------- */

static sv_sweep_member *member_new(const char *name, const char *flag, const char *path)
{
    sv_sweep_member *m = g_new0(sv_sweep_member, 1);
    m->name = g_strdup(name);
    m->flag = g_strdup(flag);
    m->path = g_strdup(path);
    return m;
}

/* A zip member: a flag name, or {name: N, path: P}. */
static gboolean load_member(sv_sweep_spec *s, sv_sweep_axis *a, const sv_yaml_node *n,
                            const char *where, GError **error)
{
    if (n->kind == SV_YAML_SCALAR) {
        if (!flag_ok(n->scalar))
            return fail(error, s, n->line, "%s: '%s' is not a flag name", where, n->scalar);
        g_ptr_array_add(a->members, member_new(n->scalar, n->scalar, NULL));
        return TRUE;
    }
    const sv_yaml_node *name = sv_yaml_get(n, "name"), *path = sv_yaml_get(n, "path");
    if (n->kind != SV_YAML_MAP || !name || !path || name->kind != SV_YAML_SCALAR ||
        path->kind != SV_YAML_SCALAR)
        return fail(error, s, n->line, "%s: expected a flag name or {name: N, path: P}", where);
    g_ptr_array_add(a->members, member_new(name->scalar, NULL, path->scalar));
    return TRUE;
}

static gboolean load_axis(sv_sweep_spec *s, const sv_yaml_node *n, guint ai, GError **error)
{
    g_autofree char *where = g_strdup_printf("axes[%u]", ai);
    if (n->kind != SV_YAML_MAP)
        return fail(error, s, n->line, "%s: expected a map (name and values, or zip and values)",
                    where);
    static const char *const known[] = {"name", "values", "path", "zip"};
    for (guint i = 0; i < n->keys->len; i++) {
        const sv_yaml_node *k = n->keys->pdata[i];
        gboolean ok = FALSE;
        for (size_t j = 0; j < G_N_ELEMENTS(known); j++)
            ok = ok || !strcmp(k->scalar, known[j]);
        if (!ok)
            return fail(error, s, k->line, "%s.%s: unknown key (name, values, path, zip)", where,
                        k->scalar);
    }
    sv_yaml_node *name = sv_yaml_get(n, "name"), *values = sv_yaml_get(n, "values");
    sv_yaml_node *path = sv_yaml_get(n, "path"), *zip = sv_yaml_get(n, "zip");
    sv_sweep_axis *a = g_new0(sv_sweep_axis, 1);
    a->members = g_ptr_array_new_with_free_func(member_free);
    a->values = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
    a->line = n->line;
    g_ptr_array_add(s->axes, a);
    if (zip) {
        if (path)
            return fail(error, s, path->line, "%s: a zip axis names its paths per member", where);
        if (zip->kind != SV_YAML_SEQ || zip->items->len < 1)
            return fail(error, s, zip->line, "%s.zip: expected a list of flags", where);
        for (guint i = 0; i < zip->items->len; i++) {
            g_autofree char *w = g_strdup_printf("%s.zip[%u]", where, i);
            if (!load_member(s, a, zip->items->pdata[i], w, error))
                return FALSE;
        }
        GString *nm = g_string_new(NULL);
        for (guint i = 0; i < a->members->len; i++)
            g_string_append_printf(nm, "%s%s", i ? "x" : "",
                                   ((sv_sweep_member *)a->members->pdata[i])->name);
        a->name = name && name->kind == SV_YAML_SCALAR ? g_strdup(name->scalar)
                                                       : g_string_free(nm, FALSE);
        if (name)
            g_string_free(nm, TRUE);
    } else {
        if (!name || name->kind != SV_YAML_SCALAR || !*name->scalar)
            return fail(error, s, n->line, "%s.name: missing", where);
        if (path && path->kind != SV_YAML_SCALAR)
            return fail(error, s, path->line, "%s.path: expected a JSON path", where);
        if (!path && !flag_ok(name->scalar))
            return fail(error, s, name->line, "%s.name: '%s' is not a flag name", where,
                        name->scalar);
        a->name = g_strdup(name->scalar);
        g_ptr_array_add(a->members, member_new(name->scalar, path ? NULL : name->scalar,
                                               path ? path->scalar : NULL));
    }
    for (guint i = 0; i < a->members->len; i++) {
        const sv_sweep_member *m = a->members->pdata[i];
        if (m->flag && is_reserved_flag(m->flag))
            return fail(error, s, n->line, "%s: %s: the sweep sets it for every point", where,
                        m->flag);
        if (m->path && !s->cluster)
            return fail(error, s, n->line,
                        "%s: a path axis patches the base cluster config: give run.cluster", where);
    }
    if (!values || values->kind != SV_YAML_SEQ || values->items->len == 0)
        return fail(error, s, values ? values->line : n->line,
                    "%s.values: expected a non-empty list", where);
    guint nm = a->members->len;
    for (guint i = 0; i < values->items->len; i++) {
        const sv_yaml_node *v = values->items->pdata[i];
        char **tuple = g_new0(char *, nm + 1);
        g_ptr_array_add(a->values, tuple);
        if (zip) {
            if (v->kind != SV_YAML_SEQ || v->items->len != nm)
                return fail(error, s, v->line, "%s.values[%u]: expected a list of %u values", where,
                            i, nm);
            for (guint j = 0; j < nm; j++) {
                const sv_yaml_node *e = v->items->pdata[j];
                if (e->kind != SV_YAML_SCALAR || !*e->scalar)
                    return fail(error, s, e->line, "%s.values[%u][%u]: expected a value", where, i,
                                j);
                tuple[j] = g_strdup(e->scalar);
            }
        } else {
            if (v->kind != SV_YAML_SCALAR || !*v->scalar)
                return fail(error, s, v->line, "%s.values[%u]: expected a value", where, i);
            tuple[0] = g_strdup(v->scalar);
        }
        /* A path value is checked against the base config now, not at point k's run. */
        for (guint j = 0; j < nm; j++) {
            const sv_sweep_member *m = a->members->pdata[j];
            if (!m->path)
                continue;
            g_autoptr(JsonNode) copy = json_node_copy(s->cluster_root);
            g_autofree char *w =
                g_strdup_printf("%s:%d: %s.path %s", s->path, v->line, where, m->path);
            if (!apply_path(copy, m->path, tuple[j], w, error))
                return FALSE;
        }
    }
    return TRUE;
}

static gboolean load_goal(sv_sweep_spec *s, const sv_yaml_node *g, GError **error)
{
    if (g->kind != SV_YAML_MAP)
        return fail(error, s, g->line, "goal: expected a map (load, at, slo, minimize|maximize)");
    s->has_goal = TRUE;
    for (guint i = 0; i < g->keys->len; i++) {
        const sv_yaml_node *k = g->keys->pdata[i], *v = g->items->pdata[i];
        const char *key = k->scalar;
        if (!strcmp(key, "load")) {
            if (v->kind != SV_YAML_SCALAR)
                return fail(error, s, v->line, "goal.load: expected an axis name");
            g_free(s->goal.load);
            s->goal.load = g_strdup(v->scalar);
        } else if (!strcmp(key, "at")) {
            char *end = NULL;
            if (v->kind != SV_YAML_SCALAR ||
                !((s->goal.at = g_ascii_strtod(v->scalar, &end)) > 0) || *end)
                return fail(error, s, v->line, "goal.at: expected a positive load");
            s->goal.has_at = TRUE;
        } else if (!strcmp(key, "slo")) {
            if (v->kind != SV_YAML_MAP || v->keys->len == 0)
                return fail(error, s, v->line,
                            "goal.slo: expected a map such as {p99_ttft_ms: "
                            "2000}");
            for (guint j = 0; j < v->keys->len; j++) {
                const sv_yaml_node *sk = v->keys->pdata[j], *sv = v->items->pdata[j];
                int col = sv_planner__sweep_metric_index(sk->scalar);
                if (col < SV_SWEEP_M_LAT0 || col >= SV_SWEEP_M_LAT0 + 12)
                    return fail(error, s, sk->line,
                                "goal.slo.%s: not a latency metric (mean_, median_ or p99_ of "
                                "ttft_ms, tpot_ms, itl_ms, e2el_ms)",
                                sk->scalar);
                char *end = NULL;
                double lim = sv->kind == SV_YAML_SCALAR ? g_ascii_strtod(sv->scalar, &end) : -1;
                if (sv->kind != SV_YAML_SCALAR || *end || !(lim > 0))
                    return fail(error, s, sv->line, "goal.slo.%s: expected a positive number (ms)",
                                sk->scalar);
                g_ptr_array_add(s->goal.slo_names, g_strdup(sk->scalar));
                g_array_append_val(s->goal.slo_limits, lim);
            }
        } else if (!strcmp(key, "minimize") || !strcmp(key, "maximize")) {
            if (s->goal.objective != SV_SWEEP_OBJ_NONE)
                return fail(error, s, k->line, "goal.%s: one objective only", key);
            const char *o = v->kind == SV_YAML_SCALAR ? v->scalar : "";
            if (!strcmp(key, "minimize") && !strcmp(o, "gpus"))
                s->goal.objective = SV_SWEEP_OBJ_GPUS;
            else if (!strcmp(key, "maximize") && !strcmp(o, "tokens_per_s_per_gpu"))
                s->goal.objective = SV_SWEEP_OBJ_TPUT_GPU;
            else if (!strcmp(key, "maximize") && !strcmp(o, "load_per_gpu"))
                s->goal.objective = SV_SWEEP_OBJ_LOAD_GPU;
            else
                return fail(error, s, v->line,
                            "goal.%s: '%s' is not an objective (minimize: gpus, maximize: "
                            "tokens_per_s_per_gpu, maximize: load_per_gpu)",
                            key, o);
        } else {
            return fail(error, s, k->line,
                        "goal.%s: unknown key (load, at, slo, minimize, maximize)", key);
        }
    }
    if (s->goal.slo_names->len == 0)
        return fail(error, s, g->line, "goal.slo: missing");
    if (s->goal.objective == SV_SWEEP_OBJ_NONE)
        s->goal.objective = SV_SWEEP_OBJ_GPUS;
    if (!s->goal.load)
        s->goal.load = g_strdup("qps");
    return TRUE;
}

/* The load axis: a plain one, numeric values; its value order sorted ascending. */
static gboolean resolve_goal(sv_sweep_spec *s, GError **error)
{
    s->goal.axis = -1;
    for (guint a = 0; a < s->axes->len; a++) {
        const sv_sweep_axis *ax = s->axes->pdata[a];
        if (!strcmp(ax->name, s->goal.load))
            s->goal.axis = (int)a;
    }
    if (s->goal.axis < 0)
        return fail(error, s, 1, "goal.load: no axis named '%s'", s->goal.load);
    const sv_sweep_axis *ax = s->axes->pdata[s->goal.axis];
    if (ax->members->len != 1 || !((sv_sweep_member *)ax->members->pdata[0])->flag)
        return fail(error, s, ax->line, "goal.load: axis '%s' must be a plain flag axis", ax->name);
    for (guint i = 0; i < ax->values->len; i++) {
        const char *v = ((char **)ax->values->pdata[i])[0];
        char *end = NULL;
        double x = g_ascii_strtod(v, &end);
        if (*end || !(x > 0) || !isfinite(x)) /* 1e309 reads as inf: no run takes it */
            return fail(error, s, ax->line,
                        "goal.load: axis '%s' value '%s' is not a positive "
                        "number",
                        ax->name, v);
    }
    if (!s->goal.has_at) { /* the highest load */
        for (guint i = 0; i < ax->values->len; i++)
            s->goal.at = MAX(s->goal.at, g_ascii_strtod(((char **)ax->values->pdata[i])[0], NULL));
    }
    gboolean found = FALSE;
    for (guint i = 0; i < ax->values->len; i++)
        found = found || g_ascii_strtod(((char **)ax->values->pdata[i])[0], NULL) == s->goal.at;
    if (!found)
        return fail(error, s, ax->line, "goal.at: %g is not a value of axis '%s'", s->goal.at,
                    ax->name);
    return TRUE;
}

sv_sweep_spec *sv_planner_sweep_load(const char *path, GError **error)
{
    g_autoptr(sv_yaml_node) root = sv_yaml_load(path, error);
    if (!root)
        return NULL;
    g_autoptr(sv_sweep_spec) s = g_new0(sv_sweep_spec, 1);
    s->path = g_strdup(path);
    g_autofree char *d = g_path_get_dirname(path);
    g_autofree char *cwd = g_get_current_dir();
    s->dir = g_canonicalize_filename(d, cwd);
    s->base = g_ptr_array_new_with_free_func(arg_free);
    s->axes = g_ptr_array_new_with_free_func(axis_free);
    s->columns = g_ptr_array_new_with_free_func(g_free);
    s->goal.slo_names = g_ptr_array_new_with_free_func(g_free);
    s->goal.slo_limits = g_array_new(FALSE, FALSE, sizeof(double));
    if (root->kind != SV_YAML_MAP) {
        fail(error, s, root->line, "expected a map with run and axes");
        return NULL;
    }
    for (guint i = 0; i < root->keys->len; i++) {
        const char *k = ((sv_yaml_node *)root->keys->pdata[i])->scalar;
        if (strcmp(k, "run") && strcmp(k, "axes") && strcmp(k, "goal")) {
            fail(error, s, ((sv_yaml_node *)root->keys->pdata[i])->line,
                 "%s: unknown key (run, axes, goal)", k);
            return NULL;
        }
    }
    const sv_yaml_node *run = sv_yaml_get(root, "run"), *axes = sv_yaml_get(root, "axes");
    const sv_yaml_node *goal = sv_yaml_get(root, "goal");
    if (run && !load_run(s, run, error))
        return NULL;
    if (s->cluster) {
        g_autoptr(JsonParser) jp = json_parser_new();
        GError *e = NULL;
        if (!json_parser_load_from_file(jp, s->cluster, &e)) {
            g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID, "%s: run.cluster: %s: %s",
                        s->path, s->cluster, e->message);
            g_error_free(e);
            return NULL;
        }
        s->cluster_root = json_node_copy(json_parser_get_root(jp));
    }
    if (!axes || axes->kind != SV_YAML_SEQ || axes->items->len == 0) {
        fail(error, s, axes ? axes->line : root->line, "axes: expected a non-empty list");
        return NULL;
    }
    s->n_points = 1;
    for (guint i = 0; i < axes->items->len; i++) {
        if (!load_axis(s, axes->items->pdata[i], i, error))
            return NULL;
        const sv_sweep_axis *a = s->axes->pdata[i];
        if (s->n_points > 1000000 / a->values->len) {
            fail(error, s, a->line, "axes: more than 1,000,000 points");
            return NULL;
        }
        s->n_points *= a->values->len;
        for (guint j = 0; j < a->members->len; j++) {
            const sv_sweep_member *m = a->members->pdata[j];
            for (guint c = 0; c < s->columns->len; c++)
                if (!strcmp(s->columns->pdata[c], m->name)) {
                    fail(error, s, a->line, "axes[%u]: '%s' is already an axis", i, m->name);
                    return NULL;
                }
            g_ptr_array_add(s->columns, g_strdup(m->name));
        }
    }
    for (guint i = 0; i < s->base->len; i++)
        if (!strcmp(((sv_sweep_arg *)s->base->pdata[i])->flag, "goodput"))
            s->goodput = TRUE;
    for (guint c = 0; c < s->columns->len; c++)
        s->goodput = s->goodput || !strcmp(s->columns->pdata[c], "goodput");
    if (goal && (!load_goal(s, goal, error) || !resolve_goal(s, error)))
        return NULL;
    return g_steal_pointer(&s);
}

guint sv_planner_sweep_n_points(const sv_sweep_spec *s)
{
    return s->n_points;
}

gboolean sv_planner_sweep_has_goal(const sv_sweep_spec *s)
{
    return s->has_goal;
}

guint sv_planner__sweep_index(const sv_sweep_spec *s, guint k, guint axis)
{
    for (guint a = s->axes->len; a-- > axis + 1;)
        k /= ((sv_sweep_axis *)s->axes->pdata[a])->values->len;
    return k % ((sv_sweep_axis *)s->axes->pdata[axis])->values->len;
}

char *sv_planner_sweep_point_name(const sv_sweep_spec *s, guint k)
{
    int w = 4;
    for (guint n = s->n_points - 1; n >= 10000; n /= 10)
        w++;
    return g_strdup_printf("%0*u", w, k);
}

gboolean sv_planner_sweep_point_cluster(const sv_sweep_spec *s, guint k, char **json,
                                        GError **error)
{
    *json = NULL;
    g_autoptr(JsonNode) root = NULL;
    for (guint a = 0; a < s->axes->len; a++) {
        const sv_sweep_axis *ax = s->axes->pdata[a];
        char **tuple = ax->values->pdata[sv_planner__sweep_index(s, k, a)];
        for (guint j = 0; j < ax->members->len; j++) {
            const sv_sweep_member *m = ax->members->pdata[j];
            if (!m->path)
                continue;
            if (!root)
                root = json_node_copy(s->cluster_root);
            g_autofree char *w = g_strdup_printf("%s: axes[%u] %s", s->path, a, m->path);
            if (!apply_path(root, m->path, tuple[j], w, error))
                return FALSE;
        }
    }
    if (root) {
        g_autoptr(JsonGenerator) gen = json_generator_new();
        json_generator_set_pretty(gen, TRUE);
        json_generator_set_indent(gen, 2);
        json_generator_set_root(gen, root);
        char *text = json_generator_to_data(gen, NULL);
        *json = g_strconcat(text, "\n", NULL);
        g_free(text);
    }
    return TRUE;
}

/* Whether an axis sets run flag f (then the base's value is left out). */
static gboolean axis_sets(const sv_sweep_spec *s, const char *f)
{
    for (guint a = 0; a < s->axes->len; a++) {
        const sv_sweep_axis *ax = s->axes->pdata[a];
        for (guint j = 0; j < ax->members->len; j++) {
            const sv_sweep_member *m = ax->members->pdata[j];
            if (m->flag && !strcmp(m->flag, f))
                return TRUE;
        }
    }
    return FALSE;
}

GPtrArray *sv_planner_sweep_point_args(const sv_sweep_spec *s, guint k, const char *cluster)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < s->base->len; i++) {
        const sv_sweep_arg *b = s->base->pdata[i];
        if (axis_sets(s, b->flag))
            continue;
        g_ptr_array_add(out, g_strconcat("--", b->flag, NULL));
        if (b->value)
            g_ptr_array_add(out,
                            g_strdup(!strcmp(b->flag, "cluster") && cluster ? cluster : b->value));
    }
    for (guint a = 0; a < s->axes->len; a++) {
        const sv_sweep_axis *ax = s->axes->pdata[a];
        char **tuple = ax->values->pdata[sv_planner__sweep_index(s, k, a)];
        for (guint j = 0; j < ax->members->len; j++) {
            const sv_sweep_member *m = ax->members->pdata[j];
            if (!m->flag)
                continue;
            if (!strcmp(tuple[j], "false")) /* a switch left off */
                continue;
            g_ptr_array_add(out, g_strconcat("--", m->flag, NULL));
            if (strcmp(tuple[j], "true") != 0)
                g_ptr_array_add(out, resolve(s, m->flag, tuple[j]));
        }
    }
    return out;
}
