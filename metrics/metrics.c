/* The output writer: requests.csv (request_id order, bounded reorder), timeseries.csv (vLLM
 * bench's per-tick rows), summary.json, and the human summary. Files are written under
 * temporary names in the output directory and renamed only when the run finished. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "metrics/metrics_internal.h"

#define NS_PER_MS 1e6
#define NS_PER_S 1e9
#define DEFAULT_TICK_NS INT64_C(1000000000) /* vLLM bench --tick-seconds default 1.0 */
#define FILE_BUFFER_BYTES (1 << 20)

struct slot {
    struct sv_wl_outcome r;
    gboolean present;
};

struct out_file {
    char *final_path;
    char *tmp_path;
    FILE *fp;
};

struct sv_metrics {
    char *dir;
    int lock_fd; /* the output directory, flock'ed (-1: none) */
    int n_instances;
    sv_time tick_ns;
    GError *deferred; /* first error met inside a void callback */
    gboolean finished_ok;

    struct out_file req, ts, sum, pwr; /* pwr: power.csv, with a power model only */
    struct out_file run;               /* run.json, when sv_metrics_set_run_json was called */
    char *run_json;
    struct sv_metrics__vllm vllm; /* vllm.c */
    sv_metrics__insts *insts;     /* instances.c */
    int power_nodes, n_power_components;
    gboolean check_conservation;
    uint64_t power_rows;
    sv_time power_last_t;
    double power_integral_j, power_last_j; /* sum of total_w x interval; the last total_j */

    /* requests.csv reorder: ring over ids [base, base + WINDOW) plus a spill file */
    struct slot *ring;
    uint64_t base;
    uint64_t seen_end; /* 1 + highest id given */
    int spill_fd;      /* -1 until needed */
    char *spill_path;
    uint64_t spill_end; /* 1 + highest id spilled */

    /* timeseries */
    int64_t next_tick; /* row t = next_tick x tick_ns covers [(next_tick-1) tick, next_tick tick) */
    gboolean reported; /* a step was reported since the last row (its tick is not quiet) */
    int64_t prompt_acc, gen_acc;
    int64_t prompt_total, gen_total; /* over every row: conservation (sv_metrics_finish) */
    int *running, *waiting;
    double *kv_pct;
    gboolean tiers; /* tier columns in requests.csv and timeseries.csv */
    gboolean pd;    /* disaggregation columns in requests.csv */
    struct sv_metrics_tier_sample tier_last;

    /* statistics */
    uint64_t records, finished;
    uint64_t rejected[SV_WL_REJECT_N]; /* by reason ([0] unused) */
    int64_t input_tokens, output_tokens, prefix_hit_tokens, preemptions;
    sv_metrics_quantile *ttft, *tpot, *itl, *e2e, *queue;
    struct sv_metrics_summary summary;
};

static gboolean io_error(GError **error, const char *what, const char *path, int err)
{
    g_set_error(error, SV_METRICS_ERROR, SV_METRICS_ERROR_IO, "cannot %s %s: %s", what, path,
                g_strerror(err));
    return FALSE;
}

static gboolean out_open(struct out_file *f, const char *dir, const char *name, GError **error)
{
    f->final_path = g_build_filename(dir, name, NULL);
    g_autofree char *tmpl = g_strdup_printf(".%s.XXXXXX", name);
    f->tmp_path = g_build_filename(dir, tmpl, NULL);
    /* 0666 less the umask, as any file a program writes: g_mkstemp's 0600 would survive the
     * rename and leave outputs only their owner can read. */
    int fd = g_mkstemp_full(f->tmp_path, O_RDWR, 0666);
    if (fd < 0) {
        int err = errno;
        g_clear_pointer(&f->tmp_path, g_free);
        return io_error(error, "create a temporary file in", dir, err);
    }
    f->fp = fdopen(fd, "w");
    if (f->fp == NULL) {
        int err = errno;
        close(fd);
        return io_error(error, "open", f->tmp_path, err);
    }
    setvbuf(f->fp, NULL, _IOFBF, FILE_BUFFER_BYTES);
    return TRUE;
}

static gboolean out_close(struct out_file *f, GError **error)
{
    if (f->fp == NULL)
        return TRUE;
    gboolean bad = ferror(f->fp) != 0;
    int err = errno;
    if (fclose(f->fp) != 0 && !bad) {
        bad = TRUE;
        err = errno;
    }
    f->fp = NULL;
    if (bad)
        return io_error(error, "write", f->tmp_path, err ? err : EIO);
    return TRUE;
}

static void out_discard(struct out_file *f)
{
    if (f->fp != NULL) {
        fclose(f->fp);
        f->fp = NULL;
    }
    if (f->tmp_path != NULL)
        g_unlink(f->tmp_path);
    g_clear_pointer(&f->tmp_path, g_free);
    g_clear_pointer(&f->final_path, g_free);
}

static gboolean out_commit(struct out_file *f, GError **error)
{
    if (f->tmp_path == NULL)
        return TRUE;
    if (g_rename(f->tmp_path, f->final_path) != 0)
        return io_error(error, "rename into place", f->final_path, errno);
    g_clear_pointer(&f->tmp_path, g_free);
    return TRUE;
}

static const char REQ_HEADER[] =
    "request_id,instance,arrival_ns,first_scheduled_ns,first_token_ns,last_token_ns,"
    "input_tokens,output_tokens,prefix_hit_tokens,preemptions,ttft_ns,tpot_ns,e2e_ns,queue_ns\n";
static const char TS_HEADER[] = "t,prompt_throughput,gen_throughput,running,waiting,kv_cache_pct\n";
/* Appended (before the newline) when the run uses a memory tier (docs/outputs.md). */
static const char REQ_TIER_COLS[] =
    ",prefix_hit_tokens_npu,prefix_hit_tokens_cpu,prefix_hit_tokens_cxl,prefix_hit_tokens_ssd,"
    "prefix_hit_tokens_remote,kv_load_bytes,swap_out_bytes,swap_in_bytes";
/* Appended last (after energy_j) for a cluster with prefill/decode instances. */
#define REQ_PD_COLS ",prefill_instance,prefill_done_ns,kv_ready_ns"
/* The last two columns of every run: finished | rejected (| unfinished), and why a request was
 * rejected (docs/outputs.md "Rejected requests"). */
#define REQ_STATUS_COLS ",status,reject_reason"
static const char TS_TIER_COLS[] = ",npu_mem_bytes,cpu_mem_bytes,cxl_mem_bytes,ssd_bytes,"
                                   "prefix_hit_pct_npu,prefix_hit_pct_cpu,prefix_hit_pct_cxl,"
                                   "prefix_hit_pct_ssd";

/* A header line, with the tier columns (when `tiers`) and `extra` (may be NULL) before its
 * newline. */
static void put_header(FILE *fp, const char *h, const char *tier_cols, gboolean tiers,
                       const char *extra)
{
    if (!tiers && !extra) {
        fputs(h, fp);
        return;
    }
    fwrite(h, 1, strlen(h) - 1, fp);
    if (tiers)
        fputs(tier_cols, fp);
    if (extra)
        fputs(extra, fp);
    fputc('\n', fp);
}

/* One writer per output directory: an exclusive flock on the folder itself, held until
 * sv_metrics_free (the kernel drops it when the process dies, however it dies). A file system
 * without flock (some network mounts) runs unlocked rather than not at all. */
static gboolean lock_dir(sv_metrics *m, GError **error)
{
    m->lock_fd = open(m->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (m->lock_fd < 0)
        return io_error(error, "open the output directory", m->dir, errno);
    if (flock(m->lock_fd, LOCK_EX | LOCK_NB) == 0)
        return TRUE;
    if (errno == EWOULDBLOCK) {
        g_set_error(error, SV_METRICS_ERROR, SV_METRICS_ERROR_BUSY,
                    "output directory %s is in use by another servesim run (it holds the "
                    "folder's lock): two runs on one folder would overwrite each other's "
                    "outputs; wait for it or choose another output directory",
                    m->dir);
        return FALSE;
    }
    close(m->lock_fd); /* ENOLCK, EINVAL: no locks here */
    m->lock_fd = -1;
    return TRUE;
}

sv_metrics *sv_metrics_new(const struct sv_metrics_cfg *cfg, GError **error)
{
    SV_ASSERT(cfg != NULL && cfg->n_instances >= 1);
    g_autoptr(sv_metrics) m = g_new0(sv_metrics, 1);
    m->n_instances = cfg->n_instances;
    m->tick_ns = cfg->tick_ns > 0 ? cfg->tick_ns : DEFAULT_TICK_NS;
    m->tiers = cfg->tiers;
    m->power_nodes = cfg->power_nodes;
    m->pd = cfg->pd;
    m->n_power_components = cfg->n_power_components;
    m->check_conservation = cfg->check_conservation;
    SV_ASSERT(cfg->power_nodes == 0 ||
              (cfg->n_power_components > 0 &&
               cfg->n_power_components <= SV_METRICS_ENERGY_MAX_COMPONENTS));
    m->spill_fd = -1;
    m->lock_fd = -1;
    m->next_tick = 1;
    m->running = g_new0(int, cfg->n_instances);
    m->waiting = g_new0(int, cfg->n_instances);
    m->kv_pct = g_new0(double, cfg->n_instances);
    m->ttft = sv_metrics_quantile_new();
    m->tpot = sv_metrics_quantile_new();
    m->itl = sv_metrics_quantile_new();
    m->e2e = sv_metrics_quantile_new();
    m->queue = sv_metrics_quantile_new();
    sv_metrics__vllm_init(&m->vllm, cfg);
    m->insts = sv_metrics__insts_new(cfg->n_instances, cfg->pd);
    if (cfg->output_dir != NULL) {
        m->dir = g_strdup(cfg->output_dir);
        if (g_mkdir_with_parents(m->dir, 0777) != 0) /* less the umask, as mkdir -p */
            return io_error(error, "create the output directory", m->dir, errno), NULL;
        if (!lock_dir(m, error))
            return NULL;
        if (!out_open(&m->req, m->dir, SV_METRICS__REQUESTS_CSV, error) ||
            !out_open(&m->ts, m->dir, SV_METRICS__TIMESERIES_CSV, error) ||
            !out_open(&m->sum, m->dir, SV_METRICS__SUMMARY_JSON, error))
            return NULL;
        const char *extra =
            m->power_nodes > 0
                ? (cfg->pd ? ",energy_j" REQ_PD_COLS REQ_STATUS_COLS : ",energy_j" REQ_STATUS_COLS)
                : (cfg->pd ? REQ_PD_COLS REQ_STATUS_COLS : REQ_STATUS_COLS);
        put_header(m->req.fp, REQ_HEADER, REQ_TIER_COLS, m->tiers, extra);
        put_header(m->ts.fp, TS_HEADER, TS_TIER_COLS, m->tiers, NULL);
        if (m->power_nodes > 0) {
            if (!out_open(&m->pwr, m->dir, SV_METRICS__POWER_CSV, error))
                return NULL;
            fputs("t", m->pwr.fp);
            for (int n = 0; n < m->power_nodes; n++) {
                for (int c = 0; c < cfg->n_power_components; c++)
                    fprintf(m->pwr.fp, ",node%d_%s_w", n, cfg->power_components[c]);
                fprintf(m->pwr.fp, ",node%d_j", n);
            }
            fputs(",total_w,total_j\n", m->pwr.fp);
        }
        m->ring = g_new0(struct slot, SV_METRICS_REORDER_WINDOW);
    }
    return g_steal_pointer(&m);
}

void sv_metrics_free(sv_metrics *m)
{
    if (m == NULL)
        return;
    /* Without a successful finish every temporary file goes: nothing half-written remains. */
    out_discard(&m->req);
    out_discard(&m->ts);
    out_discard(&m->sum);
    out_discard(&m->pwr);
    out_discard(&m->run);
    g_free(m->run_json);
    sv_metrics__vllm_clear(&m->vllm);
    sv_metrics__insts_free(m->insts);
    if (m->spill_fd >= 0)
        close(m->spill_fd);
    if (m->spill_path != NULL)
        g_unlink(m->spill_path);
    if (m->lock_fd >= 0)
        close(m->lock_fd); /* last: the temporaries are gone before another writer may start */
    g_free(m->spill_path);
    g_free(m->ring);
    g_free(m->dir);
    g_free(m->running);
    g_free(m->waiting);
    g_free(m->kv_pct);
    sv_metrics_quantile_free(m->ttft);
    sv_metrics_quantile_free(m->tpot);
    sv_metrics_quantile_free(m->itl);
    sv_metrics_quantile_free(m->e2e);
    sv_metrics_quantile_free(m->queue);
    g_clear_error(&m->deferred);
    for (int i = 0; m->summary.latency_sources && i < m->n_instances; i++)
        g_free(m->summary.latency_sources[i]);
    g_free(m->summary.latency_sources);
    g_free(m->summary.spec);
    g_free(m);
}

/* ---- requests.csv --------------------------------------------------------------------------- */

/* Rows are formatted by hand into one buffer and written with one fwrite: a 10^6-request run
 * writes 1.3 x 10^7 integers, and fprintf's format parsing was most of the writer's time. The
 * text is the same as "%" G_GINT64_FORMAT. */
static char *put_u64(char *p, uint64_t u)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    while (n > 0)
        *p++ = tmp[--n];
    return p;
}

static char *put_int(char *p, int64_t v)
{
    if (v < 0)
        *p++ = '-';
    return put_u64(p, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

/* A time, empty when negative (unknown), then the separator. */
static char *put_time(char *p, sv_time t, char sep)
{
    if (t >= 0)
        p = put_int(p, t);
    *p++ = sep;
    return p;
}

static char *put_diff(char *p, sv_time a, sv_time b, char sep)
{
    return put_time(p, (a >= 0 && b >= 0) ? a - b : -1, sep);
}

static void write_row(sv_metrics *m, const struct sv_wl_outcome *r)
{
    char buf[24 * 32]; /* 25 fields of at most 20 digits, a sign and a separator; energy_j;
                          status and reject_reason */
    char *p = buf;
    p = put_u64(p, r->request_id);
    *p++ = ',';
    if (r->instance >= 0) /* empty: never routed (rejected) */
        p = put_int(p, r->instance);
    *p++ = ',';
    p = put_time(p, r->arrival_ns, ',');
    p = put_time(p, r->first_scheduled_ns, ',');
    p = put_time(p, r->first_token_ns, ',');
    p = put_time(p, r->last_token_ns, ',');
    const int64_t counts[] = {r->input_tokens, r->output_tokens, r->prefix_hit_tokens,
                              r->preemptions};
    for (size_t i = 0; i < G_N_ELEMENTS(counts); i++) {
        p = put_int(p, counts[i]);
        *p++ = ',';
    }
    p = put_diff(p, r->first_token_ns, r->arrival_ns, ',');
    /* TPOT in whole ns, floor division as LLMServingSim's CSV; empty with <= 1 output token */
    sv_time tpot = -1;
    if (r->output_tokens > 1 && r->first_token_ns >= 0 && r->last_token_ns >= r->first_token_ns)
        tpot = (r->last_token_ns - r->first_token_ns) / (r->output_tokens - 1);
    p = put_time(p, tpot, ',');
    p = put_diff(p, r->last_token_ns, r->arrival_ns, ',');
    p = put_diff(p, r->first_scheduled_ns, r->arrival_ns, m->tiers ? ',' : '\n');
    if (m->tiers) {
        const int64_t tc[] = {r->prefix_hit_tokens_npu,    r->prefix_hit_tokens_cpu,
                              r->prefix_hit_tokens_cxl,    r->prefix_hit_tokens_ssd,
                              r->prefix_hit_tokens_remote, (int64_t)r->kv_load_bytes,
                              (int64_t)r->swap_out_bytes,  (int64_t)r->swap_in_bytes};
        for (size_t i = 0; i < G_N_ELEMENTS(tc); i++) {
            p = put_int(p, tc[i]);
            *p++ = i + 1 < G_N_ELEMENTS(tc) ? ',' : '\n';
        }
    }
    if (m->power_nodes > 0) {
        p[-1] = ','; /* energy_j last: J to the microjoule, locale-independent */
        g_ascii_formatd(p, 40, "%.6f", r->energy_j);
        p += strlen(p);
        *p++ = '\n';
    }
    if (m->pd) {
        p[-1] = ',';
        p = put_int(p, r->prefill_instance);
        *p++ = ',';
        p = put_time(p, r->prefill_done_ns, ',');
        p = put_time(p, r->kv_ready_ns, '\n');
    }
    const char *status = r->finished                      ? "finished"
                         : r->reject != SV_WL_REJECT_NONE ? "rejected"
                                                          : "unfinished";
    const char *why = sv_wl_reject_name(r->reject);
    p[-1] = ',';
    memcpy(p, status, strlen(status));
    p += strlen(status);
    *p++ = ',';
    memcpy(p, why, strlen(why));
    p += strlen(why);
    *p++ = '\n';
    fwrite(buf, 1, (size_t)(p - buf), m->req.fp);
}

static gboolean spill_io(sv_metrics *m, gboolean write, uint64_t id, struct slot *s, GError **error)
{
    off_t off = (off_t)(id * sizeof(struct slot));
    ssize_t n =
        write ? pwrite(m->spill_fd, s, sizeof(*s), off) : pread(m->spill_fd, s, sizeof(*s), off);
    if (n == (ssize_t)sizeof(*s))
        return TRUE;
    if (!write && n == 0) { /* past the end of a sparse file: nothing spilled there */
        memset(s, 0, sizeof(*s));
        return TRUE;
    }
    return io_error(error, write ? "write" : "read", m->spill_path, n < 0 ? errno : EIO);
}

/* The window moved to cover `id`: bring a spilled record for it into the ring. */
static gboolean pull_spilled(sv_metrics *m, uint64_t id, GError **error)
{
    if (m->spill_fd < 0 || id >= m->spill_end)
        return TRUE;
    struct slot s;
    if (!spill_io(m, FALSE, id, &s, error))
        return FALSE;
    if (s.present)
        m->ring[id % SV_METRICS_REORDER_WINDOW] = s;
    return TRUE;
}

/* Write rows from base on while they are present (all of them, holes included, when `all`). */
static gboolean drain(sv_metrics *m, gboolean all, GError **error)
{
    while (m->base < m->seen_end) {
        struct slot *s = &m->ring[m->base % SV_METRICS_REORDER_WINDOW];
        if (!s->present && !all)
            break;
        if (s->present)
            write_row(m, &s->r);
        s->present = FALSE;
        m->base++;
        if (!pull_spilled(m, m->base + SV_METRICS_REORDER_WINDOW - 1, error))
            return FALSE;
    }
    return TRUE;
}

static gboolean reorder_add(sv_metrics *m, const struct sv_wl_outcome *r, GError **error)
{
    uint64_t id = r->request_id;
    struct slot s = {.r = *r, .present = TRUE};
    if (id < m->base || (id < m->base + SV_METRICS_REORDER_WINDOW &&
                         m->ring[id % SV_METRICS_REORDER_WINDOW].present)) {
        g_set_error(error, SV_METRICS_ERROR, SV_METRICS_ERROR_INPUT,
                    "request %" G_GUINT64_FORMAT " reported twice", (guint64)id);
        return FALSE;
    }
    if (id + 1 > m->seen_end)
        m->seen_end = id + 1;
    if (id < m->base + SV_METRICS_REORDER_WINDOW) {
        m->ring[id % SV_METRICS_REORDER_WINDOW] = s;
        return drain(m, FALSE, error);
    }
    if (m->spill_fd < 0) {
        m->spill_path = g_build_filename(m->dir, ".requests.spill.XXXXXX", NULL);
        m->spill_fd = g_mkstemp(m->spill_path);
        if (m->spill_fd < 0) {
            int err = errno;
            g_clear_pointer(&m->spill_path, g_free);
            return io_error(error, "create a spill file in", m->dir, err);
        }
    }
    struct slot old;
    if (id < m->spill_end) {
        if (!spill_io(m, FALSE, id, &old, error))
            return FALSE;
        if (old.present) {
            g_set_error(error, SV_METRICS_ERROR, SV_METRICS_ERROR_INPUT,
                        "request %" G_GUINT64_FORMAT " reported twice", (guint64)id);
            return FALSE;
        }
    }
    if (id + 1 > m->spill_end)
        m->spill_end = id + 1;
    return spill_io(m, TRUE, id, &s, error);
}

gboolean sv_metrics_request_add(sv_metrics *m, const struct sv_wl_outcome *r, GError **error)
{
    if (m->dir != NULL && !reorder_add(m, r, error))
        return FALSE;
    m->records++;
    sv_metrics__vllm_request(&m->vllm, r);
    sv_metrics__insts_request(m->insts, r);
    if (r->reject != SV_WL_REJECT_NONE) {
        SV_ASSERT(!r->finished && (unsigned)r->reject < SV_WL_REJECT_N);
        m->rejected[r->reject]++;
        return TRUE;
    }
    if (!r->finished)
        return TRUE;
    m->finished++;
    m->input_tokens += r->input_tokens;
    m->output_tokens += r->output_tokens;
    m->prefix_hit_tokens += r->prefix_hit_tokens;
    m->preemptions += r->preemptions;
    sv_metrics_quantile_add(m->ttft, (double)(r->first_token_ns - r->arrival_ns) / NS_PER_MS);
    sv_metrics_quantile_add(m->e2e, (double)(r->last_token_ns - r->arrival_ns) / NS_PER_MS);
    if (r->first_scheduled_ns >= 0)
        sv_metrics_quantile_add(m->queue,
                                (double)(r->first_scheduled_ns - r->arrival_ns) / NS_PER_MS);
    if (r->output_tokens > 1)
        sv_metrics_quantile_add(m->tpot, (double)(r->last_token_ns - r->first_token_ns) /
                                             (double)(r->output_tokens - 1) / NS_PER_MS);
    return TRUE;
}

/* ---- timeseries.csv ------------------------------------------------------------------------- */

/* One row, as LLMServingSim's bench stat logger writes it: t = end of the tick, tokens of the
 * tick / tick length, running and waiting summed over instances, KV usage averaged. */
static void emit_row(sv_metrics *m)
{
    double tick_s = (double)m->tick_ns / NS_PER_S;
    if (m->ts.fp != NULL) {
        long running = 0, waiting = 0;
        double kv = 0.0;
        for (int i = 0; i < m->n_instances; i++) {
            running += m->running[i];
            waiting += m->waiting[i];
            kv += m->kv_pct[i];
        }
        fprintf(m->ts.fp, "%.3f,%.1f,%.1f,%ld,%ld,%.2f",
                (double)m->next_tick * (double)m->tick_ns / NS_PER_S,
                (double)m->prompt_acc / tick_s, (double)m->gen_acc / tick_s, running, waiting,
                kv / m->n_instances);
        if (m->tiers) {
            const struct sv_metrics_tier_sample *ts = &m->tier_last;
            for (int k = 0; k < SV_METRICS_TIER_KINDS; k++)
                fprintf(m->ts.fp, ",%" G_GUINT64_FORMAT, (guint64)ts->bytes[k]);
            for (int k = 0; k < SV_METRICS_TIER_KINDS; k++)
                fprintf(m->ts.fp, ",%.2f", ts->hit_pct[k]);
        }
        fputc('\n', m->ts.fp);
    }
    m->prompt_acc = 0;
    m->gen_acc = 0;
    m->reported = FALSE;
    m->next_tick++;
}

/* Every row up to and including row `last` (the one that ends at last x tick_ns). Idle time
 * costs nothing (docs/outputs.md, "Quiet ticks"): a tick in which no step was reported repeats
 * the row before it with zero throughput, so a stretch of three or more such rows is written
 * as its first and its last row only; the rows between are those two, but for t. */
static void rows_upto(sv_metrics *m, int64_t last)
{
    while (m->next_tick <= last) {
        if (!m->reported && last - m->next_tick >= 2) {
            emit_row(m); /* the first quiet row */
            m->next_tick = last;
            emit_row(m); /* the last one */
            return;
        }
        emit_row(m);
    }
}

/* The rows of the ticks that end at or before t: a report at exactly a tick boundary belongs to
 * the next tick (buckets are [lo, hi), as vLLM's bench stat logger buckets records). */
static void rows_before_report(sv_metrics *m, sv_time t)
{
    rows_upto(m, t / m->tick_ns);
    m->reported = TRUE;
}

void sv_metrics_tokens(sv_metrics *m, int instance, sv_time t, int64_t prompt_tokens,
                       int64_t gen_tokens)
{
    rows_before_report(m, t);
    sv_metrics__insts_tokens(m->insts, instance, prompt_tokens, gen_tokens);
    m->prompt_acc += prompt_tokens;
    m->gen_acc += gen_tokens;
    m->prompt_total += prompt_tokens;
    m->gen_total += gen_tokens;
}

void sv_metrics_itl(sv_metrics *m, sv_time gap_ns)
{
    sv_metrics_quantile_add(m->itl, (double)gap_ns / NS_PER_MS);
}

void sv_metrics_sample_tiers(sv_metrics *m, sv_time t, const struct sv_metrics_tier_sample *s)
{
    rows_before_report(m, t);
    m->tier_last = *s;
}

void sv_metrics_sample(sv_metrics *m, int instance, sv_time t, int running, int waiting,
                       double kv_cache_pct)
{
    SV_ASSERT(instance >= 0 && instance < m->n_instances);
    /* the same [lo, hi) rule as tokens: an iteration ending at exactly a tick reports its
     * tokens and its state in the next row, as vLLM's bench stat logger buckets records */
    rows_before_report(m, t);
    sv_metrics__insts_sample(m->insts, instance, t, running, waiting, kv_cache_pct / 100.0);
    m->running[instance] = running;
    m->waiting[instance] = waiting;
    m->kv_pct[instance] = kv_cache_pct;
}

/* ---- summary -------------------------------------------------------------------------------- */

static void fill_stat(struct sv_metrics_stat *st, sv_metrics_quantile *q)
{
    st->count = sv_metrics_quantile_count(q);
    st->mean = sv_metrics_quantile_mean(q);
    st->p50 = sv_metrics_quantile_get(q, 50);
    st->p90 = sv_metrics_quantile_get(q, 90);
    st->p95 = sv_metrics_quantile_get(q, 95);
    st->p99 = sv_metrics_quantile_get(q, 99);
    st->std = sv_metrics_quantile_std(q);
}

static void json_stat(JsonBuilder *b, const char *name, const struct sv_metrics_stat *st)
{
    json_builder_set_member_name(b, name);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "count");
    json_builder_add_int_value(b, (gint64)st->count);
    const char *names[] = {"mean", "p50", "p90", "p95", "p99"};
    const double vals[] = {st->mean, st->p50, st->p90, st->p95, st->p99};
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        json_builder_set_member_name(b, names[i]);
        json_builder_add_double_value(b, vals[i]);
    }
    json_builder_end_object(b);
}

static void json_int(JsonBuilder *b, const char *name, int64_t v)
{
    json_builder_set_member_name(b, name);
    json_builder_add_int_value(b, v);
}

static void json_double(JsonBuilder *b, const char *name, double v)
{
    json_builder_set_member_name(b, name);
    json_builder_add_double_value(b, v);
}

static char *summary_json(sv_metrics *m, sv_time end_ns)
{
    const struct sv_metrics_summary *s = &m->summary;
    int n_instances = m->n_instances;
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "requests");
    json_builder_begin_object(b);
    json_int(b, "arrived", (int64_t)s->arrived);
    json_int(b, "finished", (int64_t)s->finished);
    json_int(b, "rejected", (int64_t)s->rejected);
    json_int(b, "unfinished", (int64_t)s->unfinished);
    json_builder_set_member_name(b, "rejected_by_reason");
    json_builder_begin_object(b);
    for (int k = 1; k < SV_WL_REJECT_N; k++)
        json_int(b, sv_wl_reject_name((sv_wl_reject)k), (int64_t)s->rejected_by_reason[k]);
    json_builder_end_object(b);
    json_builder_end_object(b);
    json_double(b, "makespan_s", s->makespan_s);
    json_builder_set_member_name(b, "throughput");
    json_builder_begin_object(b);
    json_double(b, "requests_per_s", s->request_throughput);
    json_double(b, "input_tokens_per_s", s->input_throughput);
    json_double(b, "output_tokens_per_s", s->output_throughput);
    json_builder_end_object(b);
    json_builder_set_member_name(b, "tokens");
    json_builder_begin_object(b);
    json_int(b, "input", s->input_tokens);
    json_int(b, "output", s->output_tokens);
    json_int(b, "prefix_hit", s->prefix_hit_tokens);
    json_builder_end_object(b);
    json_int(b, "preemptions", s->preemptions);
    if (s->has_tiers) {
        static const char *const kinds[] = {"npu", "cpu", "cxl", "ssd"};
        static const char *const owners[] = {"weights", "live_kv", "evicted_kv", "prefix",
                                             "experts"};
        json_builder_set_member_name(b, "memory_tiers");
        json_builder_begin_object(b);
        for (int k = 0; k < SV_METRICS_TIER_KINDS; k++) {
            const struct sv_metrics_tier *t = &s->tiers.kind[k];
            if (!t->present)
                continue;
            json_builder_set_member_name(b, kinds[k]);
            json_builder_begin_object(b);
            json_int(b, "capacity_bytes", (int64_t)t->capacity_bytes);
            json_int(b, "peak_bytes", (int64_t)t->peak_bytes);
            json_double(b, "mean_bytes", t->mean_bytes);
            json_builder_set_member_name(b, "peak_by_owner");
            json_builder_begin_object(b);
            for (int o = 0; o < 5; o++)
                json_int(b, owners[o], (int64_t)t->peak_by_owner[o]);
            json_builder_end_object(b);
            json_int(b, "read_bytes", (int64_t)t->read_bytes);
            json_int(b, "write_bytes", (int64_t)t->write_bytes);
            json_int(b, "prefix_hit_tokens", (int64_t)t->prefix_hit_tokens);
            json_int(b, "prefix_lookup_tokens", (int64_t)t->prefix_lookup_tokens);
            json_int(b, "prefix_hit_chunks", (int64_t)t->prefix_hit_chunks);
            json_int(b, "evictions", (int64_t)t->evictions);
            json_int(b, "rejected", (int64_t)t->rejected);
            json_builder_end_object(b);
        }
        json_builder_end_object(b);
        json_int(b, "tier_bytes_booked", (int64_t)s->tiers.bytes_booked);
        if (s->tiers.has_swap) {
            json_builder_set_member_name(b, "swap");
            json_builder_begin_object(b);
            json_int(b, "swap_outs", (int64_t)s->tiers.swap_outs);
            json_int(b, "swap_ins", (int64_t)s->tiers.swap_ins);
            json_int(b, "out_bytes", (int64_t)s->tiers.swap_out_bytes);
            json_int(b, "in_bytes", (int64_t)s->tiers.swap_in_bytes);
            json_int(b, "fallbacks", (int64_t)s->tiers.swap_fallbacks);
            json_builder_end_object(b);
        }
        if (s->tiers.has_expert_cache) {
            json_builder_set_member_name(b, "expert_cache");
            json_builder_begin_object(b);
            json_int(b, "hits", (int64_t)s->tiers.expert_hits);
            json_int(b, "misses", (int64_t)s->tiers.expert_misses);
            json_int(b, "fetch_bytes", (int64_t)s->tiers.expert_fetch_bytes);
            json_builder_end_object(b);
        }
    }
    if (s->has_pd) {
        const struct sv_metrics_pd *pd = &s->pd;
        json_builder_set_member_name(b, "disaggregation");
        json_builder_begin_object(b);
        json_int(b, "handoffs", (int64_t)pd->handoffs);
        json_int(b, "kv_bytes", (int64_t)pd->kv_bytes);
        json_int(b, "kv_blocks", (int64_t)pd->kv_blocks);
        json_int(b, "kv_waits", (int64_t)pd->kv_waits);
        json_double(b, "kv_wait_ms_total", pd->kv_wait_ms);
        json_double(b, "kv_wait_ms_mean", pd->kv_waits ? pd->kv_wait_ms / (double)pd->kv_waits : 0);
        json_double(b, "kv_transfer_ms_total", pd->kv_transfer_ms);
        json_double(b, "kv_transfer_ms_mean",
                    pd->handoffs ? pd->kv_transfer_ms / (double)pd->handoffs : 0);
        json_builder_end_object(b);
    }
    if (s->has_energy) {
        const struct sv_metrics_energy *e = &s->energy;
        json_builder_set_member_name(b, "energy");
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "by_component_j");
        json_builder_begin_object(b);
        for (int c = 0; c < e->n_components; c++)
            json_double(b, e->component_names[c], e->by_component_j[c]);
        json_builder_end_object(b);
        json_builder_set_member_name(b, "npu_by_state_j");
        json_builder_begin_object(b);
        json_double(b, "active", e->npu_active_j);
        json_double(b, "standby", e->npu_standby_j);
        json_double(b, "idle", e->npu_idle_j);
        json_builder_end_object(b);
        json_double(b, "total_j", e->total_j);
        json_double(b, "attributed_j", e->attributed_j);
        json_double(b, "unattributed_j", e->unattributed_j);
        json_double(b, "j_per_output_token",
                    s->output_tokens > 0 ? e->total_j / (double)s->output_tokens : 0);
        json_double(b, "j_per_request", s->finished > 0 ? e->total_j / (double)s->finished : 0);
        json_double(b, "dram_bytes", e->dram_bytes);
        json_double(b, "link_bytes", e->link_bytes);
        json_double(b, "switch_bytes", e->switch_bytes);
        json_double(b, "nic_bytes", e->nic_bytes);
        json_double(b, "storage_bytes", e->storage_bytes);
        json_builder_end_object(b);
    }
    if (s->has_pim) {
        const struct sv_metrics_pim *p = &s->pim;
        json_builder_set_member_name(b, "pim");
        json_builder_begin_object(b);
        json_int(b, "channels", p->channels);
        json_int(b, "iterations", (int64_t)p->iterations);
        json_int(b, "sub_batched_iterations", (int64_t)p->sub_batched);
        json_int(b, "decode_attention", (int64_t)p->decode_attn);
        json_double(b, "attention_s", p->attn_s);
        json_double(b, "busy_channel_s", p->busy_channel_s);
        json_int(b, "xfer_bytes", (int64_t)p->xfer_bytes);
        json_builder_end_object(b);
    }
    sv_metrics__spec_json(b, s);
    json_builder_set_member_name(b, "latency_ms");
    json_builder_begin_object(b);
    json_stat(b, "ttft", &s->ttft);
    json_stat(b, "tpot", &s->tpot);
    json_stat(b, "itl", &s->itl);
    json_stat(b, "e2e", &s->e2e);
    json_stat(b, "queue", &s->queue);
    json_builder_end_object(b);
    json_builder_set_member_name(b, "percentiles");
    json_builder_add_string_value(b, s->itl_exact ? "exact (numpy linear)"
                                                  : "exact (numpy linear); itl within 0.1%");
    if (s->latency_sources) {
        json_builder_set_member_name(b, "latency_source");
        json_builder_begin_array(b);
        for (int i = 0; i < n_instances; i++) {
            if (s->latency_sources[i])
                json_builder_add_string_value(b, s->latency_sources[i]);
            else
                json_builder_add_null_value(b);
        }
        json_builder_end_array(b);
    }
    /* Issue 14 (docs/outputs.md): vLLM benchmark_serving's keys, then the instances and pools. */
    sv_metrics_quantile *const vq[4] = {m->ttft, m->tpot, m->itl, m->e2e};
    sv_metrics__vllm_json(b, &m->vllm, s, vq);
    sv_metrics__insts_json(b, m->insts, end_ns);
    json_builder_end_object(b);
    return sv_metrics__json_text(b);
}

void sv_metrics__put_int(JsonBuilder *b, const char *name, int64_t v)
{
    json_builder_set_member_name(b, name);
    json_builder_add_int_value(b, v);
}

void sv_metrics__put_double(JsonBuilder *b, const char *name, double v)
{
    json_builder_set_member_name(b, name);
    json_builder_add_double_value(b, v);
}

void sv_metrics__put_str(JsonBuilder *b, const char *name, const char *v)
{
    json_builder_set_member_name(b, name);
    if (v)
        json_builder_add_string_value(b, v);
    else
        json_builder_add_null_value(b);
}

char *sv_metrics__json_text(JsonBuilder *b)
{
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    json_generator_set_root(gen, root);
    json_generator_set_pretty(gen, TRUE);
    json_generator_set_indent(gen, 2);
    return json_generator_to_data(gen, NULL);
}

/* Relative agreement of the integrated rows with the summary's energy. A row's power is a
 * difference of cumulative energies over its interval, whose rounding grows with the energy
 * accumulated: after 2.9e8 s (the engine's horizon) of 1 s rows it is ~3e-8 of the total.
 * Anything lost or counted twice (a row, an interval, a stretch of left-out rows) is far larger. */
#define ENERGY_REL_TOL 1e-6

/* docs/reliability.md, "Conservation": tokens of the time series against the finished requests
 * (when every request finished), power rows against the summary's energy. */
static gboolean check_conservation(const sv_metrics *m, GError **error)
{
    const struct sv_metrics_summary *s = &m->summary;
    if (s->unfinished == 0 && m->prompt_total != m->input_tokens)
        return sv_internal_error(
            error,
            "prompt tokens are not conserved: the time series credits %" G_GINT64_FORMAT
            ", the %" G_GUINT64_FORMAT " finished requests have %" G_GINT64_FORMAT,
            m->prompt_total, m->finished, m->input_tokens);
    if (s->unfinished == 0 && m->gen_total != m->output_tokens)
        return sv_internal_error(
            error,
            "output tokens are not conserved: the steps produced %" G_GINT64_FORMAT
            ", the %" G_GUINT64_FORMAT " finished requests asked for %" G_GINT64_FORMAT,
            m->gen_total, m->finished, m->output_tokens);
    if (s->has_energy && m->power_nodes > 0) {
        double total = s->energy.total_j, tol = ENERGY_REL_TOL * MAX(1.0, fabs(total));
        if (fabs(m->power_integral_j - total) > tol ||
            (m->power_rows > 0 && fabs(m->power_last_j - total) > tol))
            return sv_internal_error(
                error,
                "energy is not conserved: the summary has %.9g J, the %" G_GUINT64_FORMAT
                " power rows integrate to %.9g J and end at %.9g J",
                total, m->power_rows, m->power_integral_j, m->power_last_j);
    }
    return TRUE;
}

gboolean sv_metrics_finish(sv_metrics *m, sv_time end_ns, uint64_t arrived, GError **error)
{
    if (m->deferred != NULL) {
        g_propagate_error(error, g_steal_pointer(&m->deferred));
        return FALSE;
    }
    /* the last row is the tick that contains end_ns (vLLM bench: while idx x tick <= end) */
    rows_upto(m, end_ns / m->tick_ns + 1);

    struct sv_metrics_summary *s = &m->summary;
    s->arrived = arrived ? arrived : m->records;
    s->finished = m->finished;
    s->rejected = 0;
    for (int k = 1; k < SV_WL_REJECT_N; k++) {
        s->rejected_by_reason[k] = m->rejected[k];
        s->rejected += m->rejected[k];
    }
    s->unfinished =
        s->arrived > m->finished + s->rejected ? s->arrived - m->finished - s->rejected : 0;
    s->makespan_s = (double)end_ns / NS_PER_S;
    if (s->makespan_s > 0) {
        s->request_throughput = (double)m->finished / s->makespan_s;
        s->input_throughput = (double)m->input_tokens / s->makespan_s;
        s->output_throughput = (double)m->output_tokens / s->makespan_s;
    }
    s->input_tokens = m->input_tokens;
    s->output_tokens = m->output_tokens;
    s->prefix_hit_tokens = m->prefix_hit_tokens;
    s->preemptions = m->preemptions;
    fill_stat(&s->ttft, m->ttft);
    fill_stat(&s->tpot, m->tpot);
    fill_stat(&s->itl, m->itl);
    fill_stat(&s->e2e, m->e2e);
    fill_stat(&s->queue, m->queue);
    s->itl_exact = sv_metrics_quantile_is_exact(m->itl);
    if (m->vllm.first_arrival_ns >= 0 && m->vllm.last_done_ns > m->vllm.first_arrival_ns)
        s->duration_s = (double)(m->vllm.last_done_ns - m->vllm.first_arrival_ns) / NS_PER_S;
    s->has_goodput = m->vllm.goodput;
    s->good_requests = m->vllm.good;
    s->request_goodput = s->duration_s > 0 ? (double)m->vllm.good / s->duration_s : 0;
    if (m->check_conservation && !check_conservation(m, error))
        return FALSE;

    if (m->dir == NULL) {
        m->finished_ok = TRUE;
        return TRUE;
    }
    if (!drain(m, TRUE, error))
        return FALSE;
    g_autofree char *json = summary_json(m, end_ns);
    fputs(json, m->sum.fp);
    fputc('\n', m->sum.fp);
    if (m->run_json) {
        if (!out_open(&m->run, m->dir, SV_METRICS__RUN_JSON, error))
            return FALSE;
        fputs(m->run_json, m->run.fp);
    }
    if (!out_close(&m->req, error) || !out_close(&m->ts, error) || !out_close(&m->sum, error) ||
        (m->pwr.fp && !out_close(&m->pwr, error)) || (m->run.fp && !out_close(&m->run, error)))
        return FALSE;
    /* An older summary.json next to new CSVs would look like a complete run: remove it first,
     * and rename the new one last. */
    if (g_unlink(m->sum.final_path) != 0 && errno != ENOENT)
        return io_error(error, "remove", m->sum.final_path, errno);
    if (!out_commit(&m->req, error) || !out_commit(&m->ts, error) || !out_commit(&m->pwr, error) ||
        !out_commit(&m->run, error) || !out_commit(&m->sum, error))
        return FALSE;
    m->finished_ok = TRUE;
    return TRUE;
}

GError **sv_metrics_deferred_error(sv_metrics *m)
{
    return &m->deferred;
}

void sv_metrics_set_tiers_summary(sv_metrics *m, const struct sv_metrics_tiers *t)
{
    m->summary.has_tiers = TRUE;
    m->summary.tiers = *t;
}

void sv_metrics_power_row(sv_metrics *m, sv_time t, const double *w, const double *node_j,
                          double total_w, double total_j)
{
    /* A row's power is its interval's average, and a row after left-out quiet rows has the
     * power of those (docs/outputs.md): the interval since the previous row is its own. */
    m->power_integral_j += total_w * (double)(t - m->power_last_t) / NS_PER_S;
    m->power_last_t = t;
    m->power_last_j = total_j;
    m->power_rows++;
    if (m->pwr.fp == NULL)
        return;
    fprintf(m->pwr.fp, "%.3f", (double)t / NS_PER_S);
    for (int n = 0; n < m->power_nodes; n++) {
        for (int c = 0; c < m->n_power_components; c++)
            fprintf(m->pwr.fp, ",%.3f", w[n * m->n_power_components + c]);
        fprintf(m->pwr.fp, ",%.3f", node_j[n]);
    }
    fprintf(m->pwr.fp, ",%.3f,%.3f\n", total_w, total_j);
}

void sv_metrics_set_energy(sv_metrics *m, const struct sv_metrics_energy *e)
{
    m->summary.has_energy = TRUE;
    m->summary.energy = *e;
}

void sv_metrics_set_pim(sv_metrics *m, const struct sv_metrics_pim *p)
{
    m->summary.has_pim = TRUE;
    m->summary.pim = *p;
}

void sv_metrics_add_spec(sv_metrics *m, const struct sv_metrics_spec *sp)
{
    struct sv_metrics_summary *s = &m->summary;
    s->spec = g_renew(struct sv_metrics_spec, s->spec, (gsize)s->n_spec + 1);
    s->spec[s->n_spec++] = *sp;
}

void sv_metrics_set_pd(sv_metrics *m, const struct sv_metrics_pd *pd)
{
    m->summary.has_pd = TRUE;
    m->summary.pd = *pd;
}

void sv_metrics_set_latency_source(sv_metrics *m, int instance, const char *source)
{
    SV_ASSERT(instance >= 0 && instance < m->n_instances);
    if (!m->summary.latency_sources)
        m->summary.latency_sources = g_new0(char *, (size_t)m->n_instances);
    g_free(m->summary.latency_sources[instance]);
    m->summary.latency_sources[instance] = g_strdup(source);
}

void sv_metrics_set_instance(sv_metrics *m, int instance, const struct sv_metrics_instance_info *i)
{
    sv_metrics__insts_set_info(m->insts, instance, i);
}

gboolean sv_metrics_get_instance(const sv_metrics *m, int instance,
                                 struct sv_metrics_instance_info *out)
{
    return sv_metrics__insts_get_info(m->insts, instance, out);
}

void sv_metrics_set_run_json(sv_metrics *m, const char *json)
{
    g_free(m->run_json);
    m->run_json = g_strdup(json);
}

const struct sv_metrics_summary *sv_metrics_get_summary(const sv_metrics *m)
{
    return &m->summary;
}

static void print_stat(FILE *out, const char *name, const struct sv_metrics_stat *st)
{
    fprintf(out, "  %-5s ms  mean %10.2f  p50 %10.2f  p90 %10.2f  p99 %10.2f\n", name, st->mean,
            st->p50, st->p90, st->p99);
}

void sv_metrics_print_summary(const sv_metrics *m, FILE *out)
{
    const struct sv_metrics_summary *s = &m->summary;
    char rejected[48] = "";
    if (s->rejected > 0)
        g_snprintf(rejected, sizeof rejected, ", %" G_GUINT64_FORMAT " rejected",
                   (guint64)s->rejected);
    fprintf(out,
            "requests: %" G_GUINT64_FORMAT " finished%s, %" G_GUINT64_FORMAT
            " unfinished; makespan %.3f s (simulated)\n",
            (guint64)s->finished, rejected, (guint64)s->unfinished, s->makespan_s);
    fprintf(out, "throughput: %.2f req/s, %.1f input tok/s, %.1f output tok/s\n",
            s->request_throughput, s->input_throughput, s->output_throughput);
    if (s->prefix_hit_tokens > 0 || s->preemptions > 0)
        fprintf(out,
                "prefix hits: %" G_GINT64_FORMAT " tokens (%.2f %%); preemptions: %" G_GINT64_FORMAT
                "\n",
                (gint64)s->prefix_hit_tokens,
                s->input_tokens ? 100.0 * (double)s->prefix_hit_tokens / (double)s->input_tokens
                                : 0.0,
                (gint64)s->preemptions);
    print_stat(out, "TTFT", &s->ttft);
    print_stat(out, "TPOT", &s->tpot);
    print_stat(out, "ITL", &s->itl);
    print_stat(out, "E2E", &s->e2e);
    if (s->has_goodput)
        fprintf(out,
                "goodput: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                " requests met the SLOs, %.2f req/s over %.3f s (vLLM's request_goodput)\n",
                (guint64)s->good_requests, (guint64)s->finished, s->request_goodput, s->duration_s);
    if (s->has_pd)
        fprintf(out,
                "disaggregation: %" G_GUINT64_FORMAT " KV handoffs, %.3f GB moved, mean transfer "
                "%.3f ms; %" G_GUINT64_FORMAT " waited for decode memory (mean %.3f ms)\n",
                (guint64)s->pd.handoffs, (double)s->pd.kv_bytes / 1e9,
                s->pd.handoffs ? s->pd.kv_transfer_ms / (double)s->pd.handoffs : 0.0,
                (guint64)s->pd.kv_waits,
                s->pd.kv_waits ? s->pd.kv_wait_ms / (double)s->pd.kv_waits : 0.0);
    if (s->has_pim)
        fprintf(out,
                "pim: %" G_GINT64_FORMAT " channels; %" G_GUINT64_FORMAT
                " iterations (%" G_GUINT64_FORMAT
                " in sub-batches); attention %.3f s, channels busy %.3f s; %.3f GB NPU<->PIM\n",
                (gint64)s->pim.channels, (guint64)s->pim.iterations, (guint64)s->pim.sub_batched,
                s->pim.attn_s, s->pim.busy_channel_s, (double)s->pim.xfer_bytes / 1e9);
    sv_metrics__spec_print(out, s); /* "speculative:" when an instance speculates */
    if (s->has_energy)
        fprintf(out,
                "energy: %.1f J (%.3f J/output token, %.1f J/request; %.1f J unattributed idle)\n",
                s->energy.total_j,
                s->output_tokens > 0 ? s->energy.total_j / (double)s->output_tokens : 0.0,
                s->finished > 0 ? s->energy.total_j / (double)s->finished : 0.0,
                s->energy.unattributed_j);
    if (m->dir != NULL)
        fprintf(out, "outputs: %s/{requests.csv,timeseries.csv,summary.json%s%s}\n", m->dir,
                m->power_nodes > 0 ? ",power.csv" : "", m->run_json ? ",run.json" : "");
}
