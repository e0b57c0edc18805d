/* Replay at a scaled rate (docs/workloads.md, "Scaled replay"): a source that wraps another and
 * multiplies every arrival time by one factor, so that every reader (LLMServingSim and Mooncake
 * JSON lines, Azure CSV) and the generators get it alike; and the one pass over a trace that
 * finds its span, for a factor that gives the trace a chosen mean rate. */
#include "workloads/workloads_internal.h"

#include <math.h>
#include <string.h>

typedef struct {
    sv_wl_source *inner; /* owned */
    double factor;
} scale_state;

static void scale_free(void *p)
{
    scale_state *s = p;
    sv_wl_source_free(s->inner);
    g_free(s);
}

/* t x factor, rounded to the nearest ns (long double: exact for every int64 time on x86-64's
 * 64-bit mantissa); FALSE past the engine's horizon. */
static gboolean scale_time(sv_time t, double factor, sv_time *out)
{
    long double x = roundl((long double)t * (long double)factor);
    if (x > (long double)SV_ENGINE_HORIZON || x < -(long double)SV_ENGINE_HORIZON)
        return FALSE;
    *out = (sv_time)x;
    return TRUE;
}

static int scale_next(sv_wl_source *src, sv_wl_item *out, GError **error)
{
    scale_state *s = src->gen;
    int r = sv_wl_next(s->inner, out, error);
    src->bad_lines = sv_wl_source_bad_lines(s->inner);
    if (r != 1)
        return r;
    sv_time t;
    if (!scale_time(out->arrival_ns, s->factor, &t)) {
        g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_INVALID,
                    "%s:%" G_GUINT64_FORMAT ": arrival %" G_GINT64_FORMAT
                    " ns times the time scale %g is past the simulator's horizon (2^58 ns)",
                    src->path, out->line, out->arrival_ns, s->factor);
        return -1;
    }
    /* The first call of a session arrives with the item; later calls are released by the run
     * after the previous call and its tool time, which are not arrivals and stay as recorded. */
    out->arrival_ns = t;
    if (out->n_reqs > 0)
        out->reqs[0].arrival_ns = t;
    return 1;
}

sv_wl_source *sv_wl_scale_new(sv_wl_source *inner, double factor, GError **error)
{
    if (!(factor > 0) || !isfinite(factor)) {
        g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_INVALID,
                    "time scale %g: must be a finite number > 0", factor);
        sv_wl_source_free(inner);
        return NULL;
    }
    sv_wl_source *src = sv_wl__source_alloc(inner->path);
    src->format = inner->format;
    scale_state *s = g_new0(scale_state, 1);
    s->inner = inner;
    s->factor = factor;
    src->gen = s;
    src->gen_next = scale_next;
    src->gen_free = scale_free;
    return src;
}

gboolean sv_wl_scan(const char *path, const struct sv_wl_open_opts *opts, struct sv_wl_span *out,
                    GError **error)
{
    memset(out, 0, sizeof *out);
    sv_wl_source *src = sv_wl_open(path, opts, error);
    if (!src)
        return FALSE;
    sv_wl_item it = SV_WL_ITEM_INIT;
    int r;
    while ((r = sv_wl_next(src, &it, error)) == 1) {
        if (out->items == 0)
            out->first_ns = it.arrival_ns;
        out->last_ns = it.arrival_ns;
        out->items++;
        out->requests += it.n_reqs;
    }
    sv_wl_item_clear(&it);
    out->bad_lines = sv_wl_source_bad_lines(src);
    sv_wl_source_free(src);
    return r == 0;
}

gboolean sv_wl_span_rate_scale(const struct sv_wl_span *span, const char *path, double rate_per_s,
                               double *factor, GError **error)
{
    if (span->items < 2 || span->last_ns <= span->first_ns) {
        g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_INVALID,
                    "%s: a trace needs at least two arrivals at different times to be replayed "
                    "at a given rate (it has %" G_GUINT64_FORMAT " arrival%s%s)",
                    path, span->items, span->items == 1 ? "" : "s",
                    span->items >= 2 ? ", all at one time" : "");
        return FALSE;
    }
    if (!(rate_per_s > 0) || !isfinite(rate_per_s)) {
        g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_INVALID, "rate %g: must be > 0", rate_per_s);
        return FALSE;
    }
    /* The trace's mean gap is span / (items - 1); the wanted one 1 / rate. */
    double gap_ns = (double)(span->last_ns - span->first_ns) / (double)(span->items - 1);
    *factor = 1e9 / rate_per_s / gap_ns;
    return TRUE;
}
