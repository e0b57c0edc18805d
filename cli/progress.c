/* servesim run's progress display (cli/progress.h; docs/serving.md "Progress"). The run calls
 * back after finished requests (counts only; the clock is read every CLOCK_EVERY requests) and the
 * engine ticks every TICK_EVENTS events, so the line is redrawn on time even while no request
 * finishes, and a run in which nothing moves is noticed. */
#include "cli/progress.h"

#include <string.h>

/* Engine events between two display ticks: a clock read per 4,096 events costs nothing next to
 * them (~0.4 us per event, docs/reliability.md), and a tick comes every few ms of wall time. */
#define TICK_EVENTS 4096
/* Finished requests between two clock reads in the request callback. */
#define CLOCK_EVERY 16
/* Terminal: the line appears after DELAY_US of wall time and is redrawn at most every PERIOD_US
 * (5 per second), as before issue 14. */
#define DELAY_US G_USEC_PER_SEC
#define PERIOD_US (G_USEC_PER_SEC / 5)

struct sv_cli_progress {
    struct sv_cli_progress_cfg cfg;
    FILE *out;
    gint64 start_us;     /* wall clock, for the display only: never read by the model */
    gint64 last_draw_us; /* 0: never drawn */
    int width;           /* REDRAW: length of the last line drawn, to clear it */
    uint64_t done, submitted;
    sv_time now_ns;
    gboolean tiers;                         /* memory tiers: their usage on the line */
    double tier_pct[SV_MEMTIER_KIND_COUNT]; /* used / capacity x 100 */
    /* Stall watch: wall time of the last tick at which a request had moved (an engine progress
     * mark since the tick before), the events-since-mark count seen then, and whether the current
     * stall was reported. */
    gint64 moved_us;
    uint64_t last_since;
    gboolean stall_said;
};

gboolean sv_cli_progress_stall_s(double dflt, double *out, GError **error)
{
    const char *v = g_getenv(SV_CLI_PROGRESS_STALL_ENV);
    *out = dflt;
    if (!v)
        return TRUE;
    double x;
    if (!sv_num_parse_double(v, &x) || !(x > 0) || x > 86400) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    SV_CLI_PROGRESS_STALL_ENV ": '%s' is not a period in (0, 86400] seconds", v);
        return FALSE;
    }
    *out = x;
    return TRUE;
}

sv_cli_progress *sv_cli_progress_new(const struct sv_cli_progress_cfg *cfg, FILE *out)
{
    sv_cli_progress *p = g_new0(sv_cli_progress, 1);
    p->cfg = *cfg;
    p->out = out;
    p->start_us = p->moved_us = g_get_monotonic_time();
    return p;
}

void sv_cli_progress_free(sv_cli_progress *p)
{
    g_free(p);
}

/* "simulated 12.3 s, 450/1000 requests (45.0%), 81.2 req/s wall, 18.3 simulated s per wall s,
 * ETA 6.8 s" into g. */
static void describe(const sv_cli_progress *p, gint64 t, GString *g)
{
    double wall = (double)(t - p->start_us) / G_USEC_PER_SEC;
    double sim = (double)p->now_ns / 1e9;
    g_string_append_printf(g, "simulated %.1f s, %" G_GUINT64_FORMAT, sim, p->done);
    if (p->cfg.total)
        g_string_append_printf(g, "/%" G_GUINT64_FORMAT " requests (%.1f%%)", p->cfg.total,
                               100.0 * (double)MIN(p->done, p->cfg.total) / (double)p->cfg.total);
    else
        g_string_append(g, " requests");
    if (wall > 0)
        g_string_append_printf(g, ", %.1f req/s wall, %.2f simulated s per wall s",
                               (double)p->done / wall, sim / wall);
    if (p->cfg.total && p->done > 0 && p->done < p->cfg.total)
        g_string_append_printf(g, ", ETA %.1f s",
                               wall * (double)(p->cfg.total - p->done) / (double)p->done);
    else if (p->done < p->cfg.total || !p->cfg.total)
        g_string_append(g, ", ETA unknown");
}

static void draw(sv_cli_progress *p, gint64 t)
{
    g_autoptr(GString) g = g_string_new(NULL);
    if (p->cfg.mode == SV_CLI_PROGRESS_LINES) {
        g_string_append(g, "progress: ");
        describe(p, t, g);
        fprintf(p->out, "%s\n", g->str);
        fflush(p->out);
        return;
    }
    g_string_append(g, "\r");
    describe(p, t, g);
    g_string_append_printf(g, ", %" G_GUINT64_FORMAT " in flight ",
                           p->submitted - MIN(p->submitted, p->done));
    if (p->tiers)
        g_string_append_printf(g, "| npu %.0f%% cpu %.0f%% cxl %.0f%% ssd %.0f%% ",
                               p->tier_pct[SV_MEMTIER_HBM], p->tier_pct[SV_MEMTIER_DRAM],
                               p->tier_pct[SV_MEMTIER_CXL], p->tier_pct[SV_MEMTIER_SSD]);
    int n = (int)g->len - 1;
    /* pad over a longer previous line */
    fprintf(p->out, "%s%*s", g->str, p->width > n ? p->width - n : 0, "");
    if (n > p->width)
        p->width = n;
    fflush(p->out);
}

static void maybe_draw(sv_cli_progress *p, gint64 t)
{
    switch (p->cfg.mode) {
    case SV_CLI_PROGRESS_OFF:
        return;
    case SV_CLI_PROGRESS_REDRAW:
        if (t - p->start_us < DELAY_US || (p->last_draw_us && t - p->last_draw_us < PERIOD_US))
            return;
        break;
    case SV_CLI_PROGRESS_LINES:
        if (t - (p->last_draw_us ? p->last_draw_us : p->start_us) <
            (gint64)(p->cfg.period_s * G_USEC_PER_SEC))
            return;
        break;
    }
    p->last_draw_us = t;
    draw(p, t);
}

static void on_tiers(void *ctx, const struct sv_planner_tier_usage *u)
{
    sv_cli_progress *p = ctx;
    p->tiers = TRUE;
    for (int k = 0; k < SV_MEMTIER_KIND_COUNT; k++)
        p->tier_pct[k] = u->capacity[k] ? 100.0 * (double)u->used[k] / (double)u->capacity[k] : 0.0;
}

static void on_progress(void *ctx, sv_time now_ns, uint64_t done, uint64_t submitted)
{
    sv_cli_progress *p = ctx;
    p->done = done;
    p->submitted = submitted;
    p->now_ns = now_ns;
    if (done % CLOCK_EVERY == 0)
        maybe_draw(p, g_get_monotonic_time());
}

/* Nothing moved (no arrival, no first computation of a prompt token, no output token, no
 * finish: the engine's progress marks, docs/reliability.md) for stall_s of wall time while
 * events still run: say so once, with what each instance holds (the watchdog's diagnosis), which
 * the watchdog itself would only say after its 2^24 events. */
static void stall_line(sv_cli_progress *p, const sv_engine *eng, gint64 t)
{
    if (p->cfg.mode == SV_CLI_PROGRESS_REDRAW && p->width > 0) {
        fprintf(p->out, "\r%*s\r", p->width, "");
        p->width = 0;
    }
    sv_time mark = 0;
    uint64_t since = sv_engine_events_since_progress(eng, &mark);
    g_autofree char *diag = sv_engine_diagnose(eng);
    fprintf(p->out,
            "servesim run: no request has moved for %.1f s of wall time (since simulated %.3f s, "
            "now %.3f s, %" G_GUINT64_FORMAT " events since): the run may not be able to "
            "progress%s%s\n",
            (double)(t - p->moved_us) / G_USEC_PER_SEC, (double)mark / 1e9,
            (double)sv_engine_now(eng) / 1e9, since, diag ? ": " : "", diag ? diag : "");
    fflush(p->out);
}

static void on_tick(const sv_engine *eng, void *ctx)
{
    sv_cli_progress *p = ctx;
    gint64 t = g_get_monotonic_time();
    uint64_t since = sv_engine_events_since_progress(eng, NULL);
    /* TICK_EVENTS events ran since the last tick: fewer since the mark means a mark came. */
    if (since < p->last_since + TICK_EVENTS) {
        p->moved_us = t;
        p->stall_said = FALSE;
    }
    p->last_since = since;
    p->now_ns = sv_engine_now(eng);
    if (p->cfg.stall_s > 0 && !p->cfg.quiet && !p->stall_said &&
        t - p->moved_us >= (gint64)(p->cfg.stall_s * G_USEC_PER_SEC)) {
        p->stall_said = TRUE;
        stall_line(p, eng, t);
    }
    maybe_draw(p, t);
}

void sv_cli_progress_attach(sv_cli_progress *p, struct sv_planner_run_cfg *cfg)
{
    /* Counts after each finished request for the lines; the terminal line, which also shows the
     * memory tiers' usage (sampled by the run before each call), every CLOCK_EVERY. Without a
     * display only the tick runs, for the stall line. */
    if (p->cfg.mode != SV_CLI_PROGRESS_OFF) {
        cfg->progress = on_progress;
        cfg->progress_every = p->cfg.mode == SV_CLI_PROGRESS_LINES ? 1 : CLOCK_EVERY;
    }
    if (p->cfg.mode == SV_CLI_PROGRESS_REDRAW)
        cfg->progress_tiers = on_tiers;
    cfg->progress_ctx = p;
    cfg->progress_tick = on_tick;
    cfg->progress_tick_events = TICK_EVENTS;
}

void sv_cli_progress_finish(sv_cli_progress *p, gboolean complete, uint64_t done, sv_time end_ns)
{
    if (p->cfg.mode == SV_CLI_PROGRESS_REDRAW && p->width > 0)
        fprintf(p->out, "\r%*s\r", p->width, "");
    p->width = 0;
    if (p->cfg.mode == SV_CLI_PROGRESS_LINES && complete) {
        p->done = done;
        p->now_ns = end_ns;
        draw(p, g_get_monotonic_time());
    }
}
