/* The timeline writer: Chrome's Trace Event Format (the JSON object form, "traceEvents"), which
 * chrome://tracing and ui.perfetto.dev open (docs/trace.md).
 *
 * Streaming: every call writes its events at once through a 1 MiB stdio buffer; what the writer
 * keeps is one record per track (the lanes' last times) and per counter (its last time), so a
 * million-request run costs file size, not memory. The file is written under a temporary name
 * beside its final one and renamed by sv_metrics_trace_finish, as the other outputs are
 * (docs/reliability.md "Output files"); a device or FIFO is written directly. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "metrics/metrics.h"

#define TRACE_BUFFER_BYTES (1 << 20)

typedef struct {
    char *name;
    int32_t pid, tid;
    int n_lanes;
    sv_time *last_begin, *last_end; /* [n_lanes] */
} trace_track;

struct sv_metrics_trace {
    char *final_path, *tmp_path; /* tmp_path NULL: written directly (a device) */
    FILE *fp;
    gboolean window;
    sv_time w0, w1;
    uint64_t events;
    GHashTable *tracks;   /* (pid, tid) key -> trace_track (lookup only, never iterated) */
    GHashTable *counters; /* "pid/name" -> sv_time* last sample (lookup only) */
    GString *line;        /* scratch */
};

static void track_free(trace_track *k)
{
    g_free(k->name);
    g_free(k->last_begin);
    g_free(k->last_end);
    g_free(k);
}

static gboolean io_error(GError **error, const char *what, const char *path, int err)
{
    g_set_error(error, SV_METRICS_ERROR, SV_METRICS_ERROR_IO, "cannot %s %s: %s", what, path,
                g_strerror(err));
    return FALSE;
}

gboolean sv_metrics_trace_window_parse(const char *text, const char *flag, sv_time *begin_ns,
                                       sv_time *end_ns, GError **error)
{
    const char *colon = text ? strchr(text, ':') : NULL;
    double a = 0, b = 0;
    char *end = NULL;
    gboolean ok = colon != NULL && colon != text;
    if (ok) {
        a = g_ascii_strtod(text, &end);
        ok = end == colon && a >= 0 && a < 1e9;
    }
    gboolean open_end = ok && colon[1] == '\0';
    if (ok && !open_end) {
        b = g_ascii_strtod(colon + 1, &end);
        ok = *end == '\0' && b > a && b < 1e9;
    }
    /* T0 < T1 in whole ns, as the window is applied: "0:1e-12" would be empty (fuzz_flags). */
    sv_time w0 = ok ? sv_time_from_ns(a * 1e9) : 0;
    sv_time w1 = ok && !open_end ? sv_time_from_ns(b * 1e9) : SV_TIME_MAX;
    if (!ok || w1 <= w0) {
        g_set_error(error, SV_METRICS_ERROR, SV_METRICS_ERROR_INPUT,
                    "%s: '%s' is not a window T0:T1 in seconds (0 <= T0 < T1, at least 1 ns "
                    "apart, or T0: for the rest of the run)",
                    flag, text ? text : "");
        return FALSE;
    }
    *begin_ns = w0;
    *end_ns = w1;
    return TRUE;
}

sv_metrics_trace *sv_metrics_trace_open(const struct sv_metrics_trace_cfg *cfg, GError **error)
{
    sv_metrics_trace *t = g_new0(sv_metrics_trace, 1);
    t->final_path = g_strdup(cfg->path);
    t->window = cfg->window;
    t->w0 = cfg->window ? cfg->window_begin_ns : 0;
    t->w1 = cfg->window ? cfg->window_end_ns : SV_TIME_MAX;
    t->tracks =
        g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, (GDestroyNotify)track_free);
    t->counters = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    t->line = g_string_sized_new(256);
    int fd;
    if (sv_path_is_special_file(cfg->path)) {
        fd = g_open(cfg->path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
        if (fd < 0) {
            io_error(error, "open", cfg->path, errno);
            sv_metrics_trace_free(t);
            return NULL;
        }
    } else {
        g_autofree char *dir = g_path_get_dirname(cfg->path);
        g_autofree char *base = g_path_get_basename(cfg->path);
        g_autofree char *tmpl = g_strdup_printf(".%s.XXXXXX", base);
        t->tmp_path = g_build_filename(dir, tmpl, NULL);
        /* 0666 less the umask, as the run's other outputs (metrics.c out_open). */
        fd = g_mkstemp_full(t->tmp_path, O_RDWR, 0666);
        if (fd < 0) {
            int err = errno;
            g_clear_pointer(&t->tmp_path, g_free);
            io_error(error, "create a temporary file for", cfg->path, err);
            sv_metrics_trace_free(t);
            return NULL;
        }
    }
    t->fp = fdopen(fd, "w");
    if (!t->fp) {
        io_error(error, "open", cfg->path, errno);
        close(fd);
        sv_metrics_trace_free(t);
        return NULL;
    }
    setvbuf(t->fp, NULL, _IOFBF, TRACE_BUFFER_BYTES);
    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"servesim\"", t->fp);
    if (t->window)
        fprintf(t->fp,
                ",\"window_begin_ns\":%" G_GINT64_FORMAT ",\"window_end_ns\":%" G_GINT64_FORMAT,
                t->w0, t->w1 == SV_TIME_MAX ? (sv_time)-1 : t->w1);
    fputs("},\n\"traceEvents\":[\n", t->fp);
    return t;
}

gboolean sv_metrics_trace_finish(sv_metrics_trace *t, GError **error)
{
    fputs("\n]}\n", t->fp);
    gboolean bad = ferror(t->fp) != 0;
    int err = errno;
    if (fclose(t->fp) != 0 && !bad) {
        bad = TRUE;
        err = errno;
    }
    t->fp = NULL;
    if (bad)
        return io_error(error, "write", t->tmp_path ? t->tmp_path : t->final_path, err ? err : EIO);
    if (t->tmp_path) {
        if (g_rename(t->tmp_path, t->final_path) != 0)
            return io_error(error, "rename into place", t->final_path, errno);
        g_clear_pointer(&t->tmp_path, g_free);
    }
    return TRUE;
}

void sv_metrics_trace_free(sv_metrics_trace *t)
{
    if (!t)
        return;
    if (t->fp)
        fclose(t->fp);
    if (t->tmp_path)
        g_unlink(t->tmp_path);
    g_free(t->tmp_path);
    g_free(t->final_path);
    g_hash_table_destroy(t->tracks);
    g_hash_table_destroy(t->counters);
    g_string_free(t->line, TRUE);
    g_free(t);
}

uint64_t sv_metrics_trace_events(const sv_metrics_trace *t)
{
    return t->events;
}

/* ---- formatting ------------------------------------------------------------------------------ */

static void put_str(GString *g, const char *s)
{
    g_string_append_c(g, '"');
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            g_string_append_c(g, '\\'), g_string_append_c(g, (char)*p);
        else if (*p < 0x20)
            g_string_append_printf(g, "\\u%04x", *p);
        else
            g_string_append_c(g, (char)*p);
    }
    g_string_append_c(g, '"');
}

/* Microseconds with 3 decimals: exact for integer ns. */
static void put_us(GString *g, const char *key, sv_time ns)
{
    if (ns < 0)
        ns = 0;
    g_string_append_printf(g, ",\"%s\":%" G_GINT64_FORMAT ".%03d", key, ns / 1000,
                           (int)(ns % 1000));
}

static void put_num(GString *g, double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    if (!isfinite(v))
        v = 0;
    g_string_append(g, g_ascii_formatd(buf, sizeof buf, "%.10g", v));
}

/* {"name":..,"cat":..,"ph":"X" (the common head). */
static GString *head(sv_metrics_trace *t, const char *name, const char *cat, char ph)
{
    GString *g = t->line;
    g_string_truncate(g, 0);
    g_string_append(g, t->events ? ",\n{\"name\":" : "{\"name\":");
    put_str(g, name);
    if (cat) {
        g_string_append(g, ",\"cat\":");
        put_str(g, cat);
    }
    g_string_append_printf(g, ",\"ph\":\"%c\"", ph);
    return g;
}

static void emit(sv_metrics_trace *t, GString *g)
{
    g_string_append_c(g, '}');
    fwrite(g->str, 1, g->len, t->fp);
    t->events++;
}

static void put_ids(GString *g, int32_t pid, int32_t tid)
{
    g_string_append_printf(g, ",\"pid\":%d,\"tid\":%d", (int)pid, (int)tid);
}

/* ---- metadata -------------------------------------------------------------------------------- */

static void thread_meta(sv_metrics_trace *t, int32_t pid, int32_t tid, const char *name)
{
    GString *g = head(t, "thread_name", NULL, 'M');
    put_ids(g, pid, tid);
    g_string_append(g, ",\"args\":{\"name\":");
    put_str(g, name);
    g_string_append_c(g, '}');
    emit(t, g);
    g = head(t, "thread_sort_index", NULL, 'M');
    put_ids(g, pid, tid);
    g_string_append_printf(g, ",\"args\":{\"sort_index\":%d}", (int)tid);
    emit(t, g);
}

static trace_track *track_get(sv_metrics_trace *t, int32_t pid, int32_t tid)
{
    gint64 key = ((gint64)pid << 32) | (gint64)(uint32_t)tid;
    trace_track *k = g_hash_table_lookup(t->tracks, &key);
    if (!k) {
        k = g_new0(trace_track, 1);
        k->pid = pid;
        k->tid = tid;
        k->name = g_strdup_printf("thread %d", (int)tid);
        gint64 *kk = g_new(gint64, 1);
        *kk = key;
        g_hash_table_insert(t->tracks, kk, k);
    }
    return k;
}

void sv_metrics_trace_process(sv_metrics_trace *t, int32_t pid, const char *name)
{
    GString *g = head(t, "process_name", NULL, 'M');
    put_ids(g, pid, 0);
    g_string_append(g, ",\"args\":{\"name\":");
    put_str(g, name);
    g_string_append_c(g, '}');
    emit(t, g);
    g = head(t, "process_sort_index", NULL, 'M');
    put_ids(g, pid, 0);
    g_string_append_printf(g, ",\"args\":{\"sort_index\":%d}", (int)pid);
    emit(t, g);
}

void sv_metrics_trace_thread(sv_metrics_trace *t, int32_t pid, int32_t tid, const char *name)
{
    trace_track *k = track_get(t, pid, tid);
    g_free(k->name);
    k->name = g_strdup(name);
    thread_meta(t, pid, tid, name);
}

/* ---- events ---------------------------------------------------------------------------------- */

static gboolean clip(const sv_metrics_trace *t, sv_time *b, sv_time *e)
{
    if (*e < *b)
        *e = *b;
    if (*e < t->w0 || *b > t->w1)
        return FALSE;
    *b = MAX(*b, t->w0);
    *e = MIN(*e, t->w1);
    return TRUE;
}

gboolean sv_metrics_trace_overlaps(const sv_metrics_trace *t, sv_time begin_ns, sv_time end_ns)
{
    return end_ns >= t->w0 && begin_ns <= t->w1;
}

static gboolean inside(const sv_metrics_trace *t, sv_time at)
{
    return at >= t->w0 && at <= t->w1;
}

int32_t sv_metrics_trace_slice(sv_metrics_trace *t, int32_t pid, int32_t tid, const char *cat,
                               const char *name, sv_time begin_ns, sv_time end_ns,
                               const char *args_json)
{
    if (!clip(t, &begin_ns, &end_ns))
        return -1;
    trace_track *k = track_get(t, pid, tid);
    /* The first lane free at begin_ns: slices of a lane neither overlap nor go back in time. */
    int lane = 0;
    while (lane < k->n_lanes && k->last_end[lane] > begin_ns)
        lane++;
    if (lane == k->n_lanes) {
        k->n_lanes++;
        k->last_begin = g_renew(sv_time, k->last_begin, k->n_lanes);
        k->last_end = g_renew(sv_time, k->last_end, k->n_lanes);
        if (lane > 0) {
            g_autofree char *ln = g_strdup_printf("%s #%d", k->name, lane + 1);
            thread_meta(t, pid, tid + SV_METRICS_TRACE_LANE * lane, ln);
        }
    }
    k->last_begin[lane] = begin_ns;
    k->last_end[lane] = end_ns;
    int32_t on = tid + SV_METRICS_TRACE_LANE * lane;
    GString *g = head(t, name, cat, 'X');
    put_us(g, "ts", begin_ns);
    put_us(g, "dur", end_ns - begin_ns);
    put_ids(g, pid, on);
    if (args_json) {
        g_string_append(g, ",\"args\":");
        g_string_append(g, args_json);
    }
    emit(t, g);
    return on;
}

void sv_metrics_trace_flow(sv_metrics_trace *t, const char *cat, const char *name, uint64_t id,
                           int32_t pid0, int32_t tid0, sv_time t0_ns, int32_t pid1, int32_t tid1,
                           sv_time t1_ns)
{
    if (!inside(t, t0_ns) || !inside(t, t1_ns) || tid0 < 0 || tid1 < 0)
        return;
    GString *g = head(t, name, cat, 's');
    put_us(g, "ts", t0_ns);
    put_ids(g, pid0, tid0);
    g_string_append_printf(g, ",\"id\":%" G_GUINT64_FORMAT, id);
    emit(t, g);
    g = head(t, name, cat, 'f');
    g_string_append(g, ",\"bp\":\"e\"");
    put_us(g, "ts", t1_ns);
    put_ids(g, pid1, tid1);
    g_string_append_printf(g, ",\"id\":%" G_GUINT64_FORMAT, id);
    emit(t, g);
}

void sv_metrics_trace_counter(sv_metrics_trace *t, int32_t pid, const char *name, sv_time t_ns,
                              int n, const char *const *keys, const double *values)
{
    if (!inside(t, t_ns) || n <= 0)
        return;
    g_autofree char *key = g_strdup_printf("%d/%s", (int)pid, name);
    sv_time *last = g_hash_table_lookup(t->counters, key);
    if (!last) {
        last = g_new(sv_time, 1);
        *last = t_ns;
        g_hash_table_insert(t->counters, g_steal_pointer(&key), last);
    }
    if (t_ns < *last)
        t_ns = *last; /* a sample older than the track's last: at that time (see metrics.h) */
    *last = t_ns;
    GString *g = head(t, name, NULL, 'C');
    put_us(g, "ts", t_ns);
    put_ids(g, pid, 0);
    g_string_append(g, ",\"args\":{");
    for (int i = 0; i < n; i++) {
        if (i)
            g_string_append_c(g, ',');
        put_str(g, keys[i]);
        g_string_append_c(g, ':');
        put_num(g, values[i]);
    }
    g_string_append_c(g, '}');
    emit(t, g);
}

static void async_event(sv_metrics_trace *t, int32_t pid, const char *cat, uint64_t id,
                        const char *name, char ph, sv_time at, const char *args)
{
    GString *g = head(t, name, cat, ph);
    put_us(g, "ts", at);
    put_ids(g, pid, 0);
    g_string_append_printf(g, ",\"id\":%" G_GUINT64_FORMAT, id);
    if (args) {
        g_string_append(g, ",\"args\":");
        g_string_append(g, args);
    }
    emit(t, g);
}

#define ASYNC_MAX_DEPTH 8

void sv_metrics_trace_async(sv_metrics_trace *t, int32_t pid, const char *cat, uint64_t id,
                            const struct sv_metrics_trace_span *spans, int n)
{
    /* Open spans, outermost first; the time of the last event keeps the track in order. */
    struct {
        const char *name;
        int depth;
        sv_time end;
    } open[ASYNC_MAX_DEPTH];
    int n_open = 0;
    sv_time last = 0;
    for (int i = 0; i <= n; i++) {
        int depth = i < n ? spans[i].depth : -1;
        while (n_open > 0 && open[n_open - 1].depth >= depth) {
            n_open--;
            last = MAX(last, open[n_open].end);
            async_event(t, pid, cat, id, open[n_open].name, 'e', last, NULL);
        }
        if (i == n)
            break;
        /* Its parent was left out (outside the window): so is it. */
        if (depth != (n_open > 0 ? open[n_open - 1].depth + 1 : 0) || n_open >= ASYNC_MAX_DEPTH)
            continue;
        sv_time b = spans[i].begin_ns, e = spans[i].end_ns;
        if (n_open > 0) /* inside its parent */
            e = MIN(e, open[n_open - 1].end);
        if (!clip(t, &b, &e))
            continue;
        b = MAX(b, last);
        e = MAX(e, b);
        last = b;
        async_event(t, pid, cat, id, spans[i].name, 'b', b, spans[i].args_json);
        open[n_open].name = spans[i].name;
        open[n_open].depth = depth;
        open[n_open].end = e;
        n_open++;
    }
}
