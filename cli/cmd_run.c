/* servesim run: simulate LLM serving of a workload on a cluster (docs/serving.md). */
#include "cli/cli.h"
#include "planner/planner.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_PROFILES "../shared/reference/llmservingsim/profiles"

static const char usage[] =
    "usage: servesim run --cluster FILE --workload FILE [options]\n"
    "       servesim run --model NAME --hardware NAME [--tp N] --requests N --qps R\n"
    "                    [--input-len SPEC] [--output-len SPEC] [--arrival poisson|gamma:CV]\n"
    "       servesim run            (built-in default: Llama-3.1-8B on one H100, roofline,\n"
    "                                1000 ShareGPT-like requests at 10 req/s)\n"
    "options:\n"
    "  --profiles DIR            LLMServingSim profile bundles (default " DEFAULT_PROFILES ")\n"
    "  --latency profile|roofline  operator latency source (default: profile when one matches)\n"
    "  --output-dir DIR          write requests.csv, timeseries.csv, summary.json\n"
    "  --seed N                  root seed (default 0)\n"
    "  --emit-et DIR             also write each iteration DAG as Chakra ET\n"
    "  --router NAME             least_load (default), round_robin, random\n"
    "  --scheduler NAME          vllm (default), static, dynamic\n"
    "  --max-num-seqs N, --max-num-batched-tokens N   override the config\n"
    "  --model-dir DIR           extra model configs (<org>/<name>.json)\n"
    "  --skip-bad-lines          skip malformed workload lines and report the count\n"
    "  --quiet                   no summary on stdout\n";

/* ---- a small built-in writer ------------------------------------------------------------- */

typedef struct {
    FILE *req;
    GArray *ttft, *tpot, *e2e; /* double, ms */
    double itl_sum_ms;
    uint64_t itl_n;
    GArray *ticks; /* per 1 s tick: prompt, gen (double pairs) and last running/waiting/kv */
    GArray *tick_state;
} writer;

typedef struct {
    double prompt, gen;
} tick_tok;
typedef struct {
    uint32_t running, waiting;
    double kv;
    gboolean set;
} tick_st;

static void w_request(void *ctx, const struct sv_req_record *r)
{
    writer *w = ctx;
    sv_time ttft = r->first_token_ns - r->arrival_ns;
    sv_time e2e = r->last_token_ns - r->arrival_ns;
    sv_time tpot =
        r->output_tokens > 1 ? (r->last_token_ns - r->first_token_ns) / (r->output_tokens - 1) : 0;
    double v;
    v = ttft / 1e6;
    g_array_append_val(w->ttft, v);
    v = e2e / 1e6;
    g_array_append_val(w->e2e, v);
    if (r->output_tokens > 1) {
        v = tpot / 1e6;
        g_array_append_val(w->tpot, v);
    }
    if (w->req)
        fprintf(w->req,
                "%" G_GUINT64_FORMAT ",%d,%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                ",%" G_GINT64_FORMAT ",%u,%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT "\n",
                r->request_id, r->instance, r->arrival_ns, r->first_scheduled_ns, r->first_token_ns,
                r->last_token_ns, r->input_tokens, r->output_tokens, r->prefix_hit_tokens,
                r->preemptions, ttft, tpot, e2e, r->first_scheduled_ns - r->arrival_ns);
}

static void w_iter(void *ctx, const struct sv_iter_sample *s)
{
    writer *w = ctx;
    /* Tokens count in the tick where the iteration ends (vLLM logs at step end). */
    guint tick = (guint)(s->end_ns / SV_NS_PER_S);
    if (tick >= w->ticks->len) {
        g_array_set_size(w->ticks, tick + 1);
        g_array_set_size(w->tick_state, tick + 1);
    }
    tick_tok *t = &g_array_index(w->ticks, tick_tok, tick);
    t->prompt += (double)s->prompt_tokens;
    t->gen += (double)s->gen_tokens;
    tick_st *st = &g_array_index(w->tick_state, tick_st, tick);
    st->running = s->running;
    st->waiting = s->waiting;
    st->kv = s->kv_usage;
    st->set = TRUE;
}

static void w_gap(void *ctx, uint64_t id, sv_time t, sv_time gap)
{
    writer *w = ctx;
    w->itl_sum_ms += gap / 1e6;
    w->itl_n++;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* numpy's default percentile (linear interpolation between closest ranks). */
static double pct(GArray *a, double p)
{
    if (a->len == 0)
        return 0;
    const double *v = (const double *)(void *)a->data;
    double pos = p / 100.0 * (a->len - 1);
    guint lo = (guint)floor(pos);
    guint hi = lo + 1 < a->len ? lo + 1 : lo;
    return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

static double mean(GArray *a)
{
    double s = 0;
    for (guint i = 0; i < a->len; i++)
        s += g_array_index(a, double, i);
    return a->len ? s / a->len : 0;
}

static void stat_json(GString *js, const char *name, GArray *a, gboolean last)
{
    qsort(a->data, a->len, sizeof(double), cmp_double);
    g_string_append_printf(js,
                           "  \"%s_ms\": {\"mean\": %.3f, \"p50\": %.3f, \"p90\": %.3f, "
                           "\"p95\": %.3f, \"p99\": %.3f}%s\n",
                           name, mean(a), pct(a, 50), pct(a, 90), pct(a, 95), pct(a, 99),
                           last ? "" : ",");
}

/* ---- options ----------------------------------------------------------------------------- */

typedef struct {
    const char *cluster, *workload, *profiles, *latency, *output_dir, *emit_et, *router, *scheduler,
        *model, *hardware, *input_len, *output_len, *arrival, *model_dir;
    int64_t seed, max_num_seqs, max_num_batched_tokens, tp, requests;
    double qps;
    gboolean skip_bad, quiet, help;
} run_opts;

static gboolean parse_int(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || end == s)
        return FALSE;
    *out = v;
    return TRUE;
}

static int parse_args(int argc, char **argv, run_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **sv = NULL;
        int64_t *iv = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            o->help = TRUE;
            continue;
        } else if (!strcmp(a, "--skip-bad-lines")) {
            o->skip_bad = TRUE;
            continue;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = TRUE;
            continue;
        }
#define S(flag, field) else if (!strcmp(a, flag)) sv = &o->field;
#define I(flag, field) else if (!strcmp(a, flag)) iv = &o->field;
        if (0) {
        }
        S("--cluster", cluster)
        S("--workload", workload)
        S("--profiles", profiles) S("--latency", latency) S("--output-dir", output_dir)
            S("--emit-et", emit_et) S("--router", router) S("--scheduler", scheduler)
                S("--model", model) S("--hardware", hardware) S("--input-len", input_len)
                    S("--output-len", output_len) S("--arrival", arrival)
                        S("--model-dir", model_dir) I("--seed", seed)
                            I("--max-num-seqs", max_num_seqs)
                                I("--max-num-batched-tokens", max_num_batched_tokens) I("--tp", tp)
                                    I("--requests", requests) else if (!strcmp(a, "--qps"))
        {
            if (i + 1 >= argc) {
                fprintf(stderr, "servesim run: --qps needs a value\n");
                return 2;
            }
            char *end;
            o->qps = strtod(argv[++i], &end);
            if (*end || !(o->qps > 0)) {
                fprintf(stderr, "servesim run: --qps: '%s' is not a positive number\n", argv[i]);
                return 2;
            }
            continue;
        }
        else
        {
            fprintf(stderr, "servesim run: unknown option '%s'\n%s", a, usage);
            return 2;
        }
#undef S
#undef I
        if (i + 1 >= argc) {
            fprintf(stderr, "servesim run: %s needs a value\n", a);
            return 2;
        }
        if (sv) {
            *sv = argv[++i];
        } else if (!parse_int(argv[++i], iv) || *iv < 0) {
            fprintf(stderr, "servesim run: %s: '%s' is not a non-negative integer\n", a, argv[i]);
            return 2;
        }
    }
    return 0;
}

typedef struct {
    gboolean tty;
    gint64 start_us;
} progress_ctx;

static void progress(void *ctx, sv_time now, uint64_t done, uint64_t submitted)
{
    progress_ctx *p = ctx;
    /* Wall clock only for the display, never for the model. */
    if (g_get_monotonic_time() - p->start_us < G_USEC_PER_SEC)
        return;
    fprintf(stderr, "\rsimulated %.1f s, %" G_GUINT64_FORMAT " requests done", now / 1e9, done);
}

static FILE *open_tmp(const char *dir, const char *name, char **tmp_path, GError **error)
{
    *tmp_path = g_strdup_printf("%s/.%s.tmp", dir, name);
    FILE *f = fopen(*tmp_path, "w");
    if (!f)
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_IO, "cannot write %s: %s", *tmp_path,
                    g_strerror(errno));
    return f;
}

int sv_cli_run(int argc, char **argv)
{
    run_opts o = {0};
    o.tp = 1;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc;
    if (o.help) {
        fputs(usage, stdout);
        return 0;
    }
    g_autoptr(GError) err = NULL;
    struct sv_cluster_cfg *cluster = NULL;
    sv_wl_source *src = NULL;
    gboolean quick = o.model || o.hardware || o.requests || o.qps > 0;
    gboolean builtin = !quick && !o.cluster && !o.workload;
    struct sv_run_cfg cfg = {0};
    cfg.seed = (uint64_t)o.seed;
    cfg.enable_prefix_caching = cfg.enable_chunked_prefill = cfg.reserve_full_isl = -1;
    cfg.force_max_num_seqs = o.max_num_seqs;
    cfg.force_max_num_batched_tokens = o.max_num_batched_tokens;
    cfg.emit_et_dir = o.emit_et;
    cfg.model_dir = o.model_dir;
    cfg.profiles_root =
        o.profiles ? o.profiles
                   : (g_file_test(DEFAULT_PROFILES, G_FILE_TEST_IS_DIR) ? DEFAULT_PROFILES : NULL);
    writer w = {0};
    char *tmp_req = NULL;
    int status = 1;
    if (o.latency) {
        if (!strcmp(o.latency, "profile"))
            cfg.latency = SV_RUN_LATENCY_PROFILE;
        else if (!strcmp(o.latency, "roofline"))
            cfg.latency = SV_RUN_LATENCY_ROOFLINE;
        else {
            fprintf(stderr, "servesim run: --latency must be profile or roofline, not '%s'\n",
                    o.latency);
            return 2;
        }
    }
    if ((o.router && !sv_planner_router_parse(o.router, &cfg.router, &err)) ||
        (o.scheduler && !sv_msg_sched_parse(o.scheduler, &cfg.scheduler, &err)))
        goto fail;
    if (quick || builtin) {
        if (o.cluster || o.workload) {
            fprintf(stderr, "servesim run: --cluster/--workload cannot be mixed with --model, "
                            "--hardware, --requests or --qps\n");
            return 2;
        }
        const char *model = o.model ? o.model : "meta-llama/Llama-3.1-8B";
        const char *hw = o.hardware ? o.hardware : "H100-SXM";
        if (builtin)
            cfg.latency = SV_RUN_LATENCY_ROOFLINE;
        cluster = sv_planner_cluster_single(model, hw, (int)o.tp, &err);
        if (!cluster)
            goto fail;
        struct sv_wl_gen_cfg g = {0};
        g.seed = (uint64_t)o.seed;
        g.count = o.requests ? (uint64_t)o.requests : 1000;
        double qps = o.qps > 0 ? o.qps : 10.0;
        if (!sv_wl_arrival_parse(o.arrival ? o.arrival : "poisson", qps, &g.arrival, &err))
            goto fail;
        if (o.input_len || o.output_len || !builtin) {
            if (!sv_wl_len_parse(o.input_len ? o.input_len : "sharegpt", TRUE, &g.input_len,
                                 &err) ||
                !sv_wl_len_parse(o.output_len ? o.output_len : "sharegpt", FALSE, &g.output_len,
                                 &err))
                goto fail;
        } else {
            sv_wl_len_sharegpt(&g.input_len, &g.output_len);
        }
        src = sv_wl_generator_new(&g, &err);
        sv_wl_len_clear(&g.input_len);
        sv_wl_len_clear(&g.output_len);
        if (!src)
            goto fail;
    } else {
        if (!o.cluster || !o.workload) {
            fprintf(stderr, "servesim run: --cluster and --workload go together\n%s", usage);
            return 2;
        }
        cluster = sv_planner_cluster_load(o.cluster, &err);
        if (!cluster)
            goto fail;
        struct sv_wl_open_opts wo = {.skip_bad_lines = o.skip_bad};
        src = sv_wl_open(o.workload, &wo, &err);
        if (!src)
            goto fail;
    }
    cfg.cluster = cluster;
    cfg.workload = src;

    w.ttft = g_array_new(FALSE, FALSE, sizeof(double));
    w.tpot = g_array_new(FALSE, FALSE, sizeof(double));
    w.e2e = g_array_new(FALSE, FALSE, sizeof(double));
    w.ticks = g_array_new(FALSE, TRUE, sizeof(tick_tok));
    w.tick_state = g_array_new(FALSE, TRUE, sizeof(tick_st));
    if (o.output_dir) {
        if (g_mkdir_with_parents(o.output_dir, 0755) != 0) {
            g_set_error(&err, SV_PLANNER_ERROR, SV_PLANNER_ERROR_IO, "cannot create %s: %s",
                        o.output_dir, g_strerror(errno));
            goto fail;
        }
        w.req = open_tmp(o.output_dir, "requests.csv", &tmp_req, &err);
        if (!w.req)
            goto fail;
        fputs("request_id,instance,arrival_ns,first_scheduled_ns,first_token_ns,last_token_ns,"
              "input_tokens,output_tokens,prefix_hit_tokens,preemptions,ttft_ns,tpot_ns,e2e_ns,"
              "queue_ns\n",
              w.req);
    }
    struct sv_run_observer obs = {w_request, w_iter, w_gap, &w};
    cfg.observer = &obs;
    progress_ctx pc = {isatty(fileno(stderr)), g_get_monotonic_time()};
    if (pc.tty && !o.quiet) {
        cfg.progress = progress;
        cfg.progress_every = 100;
        cfg.progress_ctx = &pc;
    }
    struct sv_run_result res;
    gboolean ok = sv_planner_run(&cfg, &res, &err);
    if (cfg.progress && g_get_monotonic_time() - pc.start_us >= G_USEC_PER_SEC)
        fputc('\n', stderr);
    if (!ok)
        goto fail;

    GString *js = g_string_new("{\n");
    g_string_append_printf(js, "  \"requests\": %" G_GUINT64_FORMAT ",\n", res.requests);
    g_string_append_printf(js, "  \"makespan_s\": %.6f,\n", res.makespan_ns / 1e9);
    double span = res.makespan_ns > 0 ? res.makespan_ns / 1e9 : 1;
    g_string_append_printf(js, "  \"request_throughput\": %.6f,\n", res.requests / span);
    g_string_append_printf(js, "  \"output_throughput\": %.6f,\n", res.output_tokens / span);
    g_string_append_printf(js, "  \"prefix_hit_tokens\": %" G_GUINT64_FORMAT ",\n",
                           res.prefix_hit_tokens);
    g_string_append_printf(js, "  \"preemptions\": %" G_GUINT64_FORMAT ",\n", res.preemptions);
    g_string_append_printf(js, "  \"itl_ms\": {\"mean\": %.3f},\n",
                           w.itl_n ? w.itl_sum_ms / w.itl_n : 0);
    stat_json(js, "ttft", w.ttft, FALSE);
    stat_json(js, "tpot", w.tpot, FALSE);
    stat_json(js, "e2e", w.e2e, TRUE);
    g_string_append(js, "}\n");
    if (o.output_dir) {
        fclose(w.req);
        w.req = NULL;
        g_autofree char *final_req = g_build_filename(o.output_dir, "requests.csv", NULL);
        g_autofree char *ts_path = g_build_filename(o.output_dir, "timeseries.csv", NULL);
        g_autofree char *sum_path = g_build_filename(o.output_dir, "summary.json", NULL);
        GString *ts = g_string_new("t,prompt_throughput,gen_throughput,running,waiting,"
                                   "kv_cache_pct\n");
        tick_st last = {0};
        for (guint i = 1; i < w.ticks->len + 1; i++) {
            /* Tick i covers [i-1, i) s, as vLLM's 1 s logging interval. */
            tick_tok t = g_array_index(w.ticks, tick_tok, i - 1);
            tick_st s = g_array_index(w.tick_state, tick_st, i - 1);
            if (s.set)
                last = s;
            g_string_append_printf(ts, "%u.0,%.1f,%.1f,%u,%u,%.1f\n", i, t.prompt, t.gen,
                                   last.running, last.waiting, last.kv * 100.0);
        }
        if (!g_file_set_contents(ts_path, ts->str, (gssize)ts->len, &err) ||
            !g_file_set_contents(sum_path, js->str, (gssize)js->len, &err) ||
            rename(tmp_req, final_req) != 0) {
            g_string_free(ts, TRUE);
            g_string_free(js, TRUE);
            goto fail;
        }
        g_string_free(ts, TRUE);
    }
    if (!o.quiet) {
        printf("requests %" G_GUINT64_FORMAT ", makespan %.2f s, latency %s\n", res.requests,
               res.makespan_ns / 1e9, res.latency_source);
        printf("TTFT mean %.1f ms p99 %.1f | TPOT mean %.2f ms p99 %.2f | latency mean %.1f ms "
               "p99 %.1f\n",
               mean(w.ttft), pct(w.ttft, 99), mean(w.tpot), pct(w.tpot, 99), mean(w.e2e),
               pct(w.e2e, 99));
        printf("prefix cache hit %" G_GUINT64_FORMAT " / %" G_GUINT64_FORMAT
               " tokens, preemptions %" G_GUINT64_FORMAT ", iterations %" G_GUINT64_FORMAT "\n",
               res.prefix_hit_tokens, res.prefix_requested_tokens, res.preemptions, res.iterations);
        if (res.bad_lines)
            printf("skipped %" G_GUINT64_FORMAT " bad workload lines\n", res.bad_lines);
    }
    g_string_free(js, TRUE);
    status = 0;
    goto out;
fail:
    fprintf(stderr, "servesim run: %s\n", err ? err->message : "failed");
    if (w.req) {
        fclose(w.req);
        w.req = NULL;
    }
    if (tmp_req)
        unlink(tmp_req);
out:
    g_free(tmp_req);
    if (w.ttft) {
        g_array_free(w.ttft, TRUE);
        g_array_free(w.tpot, TRUE);
        g_array_free(w.e2e, TRUE);
        g_array_free(w.ticks, TRUE);
        g_array_free(w.tick_state, TRUE);
    }
    sv_wl_source_free(src);
    sv_planner_cluster_free(cluster);
    return status;
}
