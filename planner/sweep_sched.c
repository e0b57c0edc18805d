/* servesim sweep: which point runs next. The grid runs in point order (a shard takes k % N == I);
 * the goal search (`--goal`) is Vidur-Search's capacity search with its pruning made explicit:
 * each configuration (the values of every axis but the load) runs its loads in increasing order
 * and stops at the first load that misses the SLOs, because a configuration that misses them at
 * load q misses them at every higher load (latency does not fall as load rises). Vidur
 * (Agrawal et al., MLSys 2024; vidur/config_optimizer/config_explorer/capacity_search.py)
 * binary-searches the highest passing QPS per configuration; here the loads are the spec's list,
 * scanned upwards, so the points run are exactly those a user could have run by hand. The winner
 * is the best configuration by the objective among those that pass at the target load. */
#include <json-glib/json-glib.h>
#include <string.h>

#include "planner/planner.h"
#include "planner/sweep_internal.h"

typedef struct {
    guint base;      /* point of this configuration at load value index 0 */
    guint pos;       /* next position in load_order */
    gboolean busy;   /* a point of it is running */
    gboolean closed; /* missed, or every load run */
    int passed;      /* highest load_order position that passed, -1 none */
} cfg_state;

struct sv_sweep_sched {
    const sv_sweep_spec *s;
    gboolean goal;
    guint shard_i, shard_n, next;
    sv_sweep_status *status;
    struct sv_sweep_result *res; /* metrics of each point run (error left out) */
    gboolean *pass;
    /* goal search */
    GArray *cfgs;      /* cfg_state */
    guint *load_order; /* value indices of the load axis, ascending load */
    guint n_loads, stride, target_pos;
};

static double load_value(const sv_sweep_spec *s, guint vi)
{
    const sv_sweep_axis *ax = s->axes->pdata[s->goal.axis];
    return g_ascii_strtod(((char **)ax->values->pdata[vi])[0], NULL);
}

sv_sweep_sched *sv_planner_sweep_sched_new(const sv_sweep_spec *s, gboolean goal, guint shard_i,
                                           guint shard_n)
{
    g_assert(shard_n > 0 && shard_i < shard_n);
    g_assert(!goal || s->has_goal);
    sv_sweep_sched *q = g_new0(sv_sweep_sched, 1);
    q->s = s;
    q->goal = goal;
    q->shard_i = shard_i;
    q->shard_n = shard_n;
    q->status = g_new0(sv_sweep_status, s->n_points);
    q->res = g_new0(struct sv_sweep_result, s->n_points);
    q->pass = g_new0(gboolean, s->n_points);
    if (!goal)
        return q;
    const sv_sweep_axis *ax = s->axes->pdata[s->goal.axis];
    q->n_loads = ax->values->len;
    q->stride = 1;
    for (guint a = (guint)s->goal.axis + 1; a < s->axes->len; a++)
        q->stride *= ((sv_sweep_axis *)s->axes->pdata[a])->values->len;
    /* insertion sort by load (stable: equal loads keep spec order; lists are short) */
    q->load_order = g_new(guint, q->n_loads);
    for (guint i = 0; i < q->n_loads; i++) {
        guint j = i;
        for (; j > 0 && load_value(s, q->load_order[j - 1]) > load_value(s, i); j--)
            q->load_order[j] = q->load_order[j - 1];
        q->load_order[j] = i;
    }
    for (guint i = 0; i < q->n_loads; i++)
        if (load_value(s, q->load_order[i]) == s->goal.at) {
            q->target_pos = i;
            break;
        }
    q->cfgs = g_array_new(FALSE, TRUE, sizeof(cfg_state));
    for (guint k = 0; k < s->n_points; k++)
        if (sv_planner__sweep_index(s, k, (guint)s->goal.axis) == 0) {
            cfg_state c = {.base = k, .passed = -1};
            g_array_append_val(q->cfgs, c);
        }
    return q;
}

void sv_planner_sweep_sched_free(sv_sweep_sched *q)
{
    if (!q)
        return;
    g_free(q->status);
    g_free(q->res);
    g_free(q->pass);
    g_free(q->load_order);
    if (q->cfgs)
        g_array_unref(q->cfgs);
    g_free(q);
}

static guint cfg_point(const sv_sweep_sched *q, const cfg_state *c, guint pos)
{
    return c->base + q->load_order[pos] * q->stride;
}

int sv_planner_sweep_sched_next(sv_sweep_sched *q)
{
    if (!q->goal) {
        while (q->next < q->s->n_points && q->next % q->shard_n != q->shard_i)
            q->next++;
        return q->next < q->s->n_points ? (int)q->next++ : SV_SWEEP_DONE;
    }
    gboolean busy = FALSE;
    for (guint i = 0; i < q->cfgs->len; i++) {
        cfg_state *c = &g_array_index(q->cfgs, cfg_state, i);
        busy = busy || c->busy;
        if (c->busy || c->closed)
            continue;
        c->busy = TRUE;
        return (int)cfg_point(q, c, c->pos);
    }
    return busy ? SV_SWEEP_WAIT : SV_SWEEP_DONE;
}

/* Every SLO met: each named metric known and at most its limit. */
static gboolean meets(const sv_sweep_spec *s, const struct sv_sweep_result *r)
{
    if (r->status != SV_SWEEP_OK)
        return FALSE;
    for (guint i = 0; i < s->goal.slo_names->len; i++) {
        int m = sv_planner__sweep_metric_index(s->goal.slo_names->pdata[i]);
        if (!((r->have >> m) & 1) || r->m[m] > g_array_index(s->goal.slo_limits, double, i))
            return FALSE;
    }
    return TRUE;
}

void sv_planner_sweep_sched_done(sv_sweep_sched *q, guint k, const struct sv_sweep_result *r)
{
    g_assert(k < q->s->n_points);
    q->status[k] = r->status;
    q->res[k] = *r;
    q->res[k].error = NULL;
    if (!q->goal)
        return;
    q->pass[k] = meets(q->s, r);
    guint vi = sv_planner__sweep_index(q->s, k, (guint)q->s->goal.axis);
    guint base = k - vi * q->stride;
    for (guint i = 0; i < q->cfgs->len; i++) {
        cfg_state *c = &g_array_index(q->cfgs, cfg_state, i);
        if (c->base != base)
            continue;
        g_assert(c->busy && cfg_point(q, c, c->pos) == k);
        c->busy = FALSE;
        if (q->pass[k]) {
            c->passed = (int)c->pos;
            c->closed = ++c->pos == q->n_loads;
        } else {
            c->closed = TRUE; /* the pruning: every higher load misses too */
            for (guint p = c->pos + 1; p < q->n_loads; p++)
                q->status[cfg_point(q, c, p)] = SV_SWEEP_PRUNED;
        }
        return;
    }
    g_assert_not_reached();
}

sv_sweep_status sv_planner_sweep_sched_status(const sv_sweep_sched *q, guint k)
{
    return q->status[k];
}

/* ---- the verdict ------------------------------------------------------------------------- */

static double metric(const sv_sweep_sched *q, guint k, int m, double dflt)
{
    return (q->res[k].have >> m) & 1 ? q->res[k].m[m] : dflt;
}

/* Whether configuration a beats b at the target load (both pass there). Ties go to the earlier
 * configuration (a is never earlier than b when called). */
static gboolean better(const sv_sweep_sched *q, const cfg_state *a, const cfg_state *b)
{
    guint ka = cfg_point(q, a, q->target_pos), kb = cfg_point(q, b, q->target_pos);
    double ga = metric(q, ka, SV_SWEEP_M_GPUS, G_MAXDOUBLE);
    double gb = metric(q, kb, SV_SWEEP_M_GPUS, G_MAXDOUBLE);
    double ta = metric(q, ka, SV_SWEEP_M_OUT_TPUT_GPU, 0);
    double tb = metric(q, kb, SV_SWEEP_M_OUT_TPUT_GPU, 0);
    double la = load_value(q->s, q->load_order[a->passed]) / ga;
    double lb = load_value(q->s, q->load_order[b->passed]) / gb;
    switch (q->s->goal.objective) {
    case SV_SWEEP_OBJ_GPUS:
        return ga < gb || (ga == gb && ta > tb);
    case SV_SWEEP_OBJ_TPUT_GPU:
        return ta > tb || (ta == tb && ga < gb);
    case SV_SWEEP_OBJ_LOAD_GPU:
        return la > lb || (la == lb && ga < gb);
    case SV_SWEEP_OBJ_NONE:
        break;
    }
    g_assert_not_reached();
}

static const cfg_state *winner(const sv_sweep_sched *q)
{
    const cfg_state *best = NULL;
    for (guint i = 0; i < q->cfgs->len; i++) {
        const cfg_state *c = &g_array_index(q->cfgs, cfg_state, i);
        if (c->passed < (int)q->target_pos)
            continue;
        if (!best || better(q, c, best))
            best = c;
    }
    return best;
}

/* "tp=2 pd=1:3" : the configuration's non-load axis values. */
static char *cfg_label(const sv_sweep_sched *q, const cfg_state *c)
{
    GString *g = g_string_new(NULL);
    const sv_sweep_spec *s = q->s;
    for (guint a = 0; a < s->axes->len; a++) {
        if ((int)a == s->goal.axis)
            continue;
        const sv_sweep_axis *ax = s->axes->pdata[a];
        char **t = ax->values->pdata[sv_planner__sweep_index(s, c->base, a)];
        for (guint j = 0; j < ax->members->len; j++)
            g_string_append_printf(g, "%s%s=%s", g->len ? " " : "",
                                   ((sv_sweep_member *)ax->members->pdata[j])->name, t[j]);
    }
    if (!g->len)
        g_string_append(g, "(the base)");
    return g_string_free(g, FALSE);
}

static const char *objective_text(sv_sweep_objective o)
{
    return o == SV_SWEEP_OBJ_GPUS       ? "minimize gpus"
           : o == SV_SWEEP_OBJ_TPUT_GPU ? "maximize tokens_per_s_per_gpu"
                                        : "maximize load_per_gpu";
}

static guint count_status(const sv_sweep_sched *q, sv_sweep_status st)
{
    guint n = 0;
    for (guint k = 0; k < q->s->n_points; k++)
        n += q->status[k] == st;
    return n;
}

char *sv_planner_sweep_goal_line(const sv_sweep_sched *q)
{
    const sv_sweep_spec *s = q->s;
    const cfg_state *w = winner(q);
    guint pass = 0;
    for (guint i = 0; i < q->cfgs->len; i++)
        pass += g_array_index(q->cfgs, cfg_state, i).passed >= (int)q->target_pos;
    guint run = s->n_points - count_status(q, SV_SWEEP_PRUNED) - count_status(q, SV_SWEEP_NOT_RUN);
    g_autofree char *counts = g_strdup_printf(
        "%u of %u configurations meet the SLOs at %s %g; %u points run, %u pruned", pass,
        q->cfgs->len, s->goal.load, s->goal.at, run, count_status(q, SV_SWEEP_PRUNED));
    if (!w)
        return g_strdup_printf("goal: no configuration meets the SLOs (%s)", counts);
    g_autofree char *label = cfg_label(q, w);
    guint k = cfg_point(q, w, q->target_pos);
    return g_strdup_printf("goal: %s (point %u): %g GPUs, %.1f output tokens/s per GPU at %s %g, "
                           "highest passing %s %g; %s (%s)",
                           label, k, metric(q, k, SV_SWEEP_M_GPUS, 0),
                           metric(q, k, SV_SWEEP_M_OUT_TPUT_GPU, 0), s->goal.load, s->goal.at,
                           s->goal.load, load_value(s, q->load_order[w->passed]),
                           objective_text(s->goal.objective), counts);
}

static void add_cfg(JsonBuilder *b, const sv_sweep_sched *q, const cfg_state *c)
{
    const sv_sweep_spec *s = q->s;
    json_builder_set_member_name(b, "config");
    json_builder_begin_object(b);
    for (guint a = 0; a < s->axes->len; a++) {
        if ((int)a == s->goal.axis)
            continue;
        const sv_sweep_axis *ax = s->axes->pdata[a];
        char **t = ax->values->pdata[sv_planner__sweep_index(s, c->base, a)];
        for (guint j = 0; j < ax->members->len; j++) {
            json_builder_set_member_name(b, ((sv_sweep_member *)ax->members->pdata[j])->name);
            json_builder_add_string_value(b, t[j]);
        }
    }
    json_builder_end_object(b);
    json_builder_set_member_name(b, "max_load");
    if (c->passed >= 0)
        json_builder_add_double_value(b, load_value(s, q->load_order[c->passed]));
    else
        json_builder_add_null_value(b);
    json_builder_set_member_name(b, "meets_slo_at_target");
    json_builder_add_boolean_value(b, c->passed >= (int)q->target_pos);
    guint k = cfg_point(q, c, q->target_pos);
    json_builder_set_member_name(b, "point_at_target");
    json_builder_add_int_value(b, k);
    json_builder_set_member_name(b, "status_at_target");
    static const char *const st[] = {"not_run", "ok", "failed", "pruned"};
    json_builder_add_string_value(b, st[q->status[k]]);
    static const int ms[] = {SV_SWEEP_M_GPUS, SV_SWEEP_M_OUT_TPUT_GPU};
    static const char *const names[] = {"gpus", "output_throughput_per_gpu"};
    for (size_t i = 0; i < G_N_ELEMENTS(ms); i++) {
        json_builder_set_member_name(b, names[i]);
        if ((q->res[k].have >> ms[i]) & 1)
            json_builder_add_double_value(b, q->res[k].m[ms[i]]);
        else
            json_builder_add_null_value(b);
    }
}

char *sv_planner_sweep_goal_json(const sv_sweep_sched *q)
{
    const sv_sweep_spec *s = q->s;
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "load_axis");
    json_builder_add_string_value(b, s->goal.load);
    json_builder_set_member_name(b, "target_load");
    json_builder_add_double_value(b, s->goal.at);
    json_builder_set_member_name(b, "slo");
    json_builder_begin_object(b);
    for (guint i = 0; i < s->goal.slo_names->len; i++) {
        json_builder_set_member_name(b, s->goal.slo_names->pdata[i]);
        json_builder_add_double_value(b, g_array_index(s->goal.slo_limits, double, i));
    }
    json_builder_end_object(b);
    json_builder_set_member_name(b, "objective");
    json_builder_add_string_value(b, objective_text(s->goal.objective));
    json_builder_set_member_name(b, "points_pruned");
    json_builder_add_int_value(b, count_status(q, SV_SWEEP_PRUNED));
    json_builder_set_member_name(b, "configurations");
    json_builder_begin_array(b);
    for (guint i = 0; i < q->cfgs->len; i++) {
        json_builder_begin_object(b);
        add_cfg(b, q, &g_array_index(q->cfgs, cfg_state, i));
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    const cfg_state *w = winner(q);
    json_builder_set_member_name(b, "winner");
    if (w) {
        json_builder_begin_object(b);
        add_cfg(b, q, w);
        json_builder_end_object(b);
    } else {
        json_builder_add_null_value(b);
    }
    json_builder_set_member_name(b, "verdict");
    g_autofree char *line = sv_planner_sweep_goal_line(q);
    json_builder_add_string_value(b, line);
    json_builder_end_object(b);
    g_autoptr(JsonGenerator) gen = json_generator_new();
    json_generator_set_pretty(gen, TRUE);
    json_generator_set_indent(gen, 2);
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    json_generator_set_root(gen, root);
    char *text = json_generator_to_data(gen, NULL);
    char *out = g_strconcat(text, "\n", NULL);
    g_free(text);
    return out;
}
