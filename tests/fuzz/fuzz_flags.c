/* Fuzz target: the small flag parsers of issue 14 and what `servesim run` does with the value.
 * The first byte of an input picks the flag (byte % 6), the rest (up to its first NUL) is the
 * value as typed:
 *   0 --goodput             sv_metrics_goodput_parse (metrics/vllm.c)
 *   1 --metric-percentiles  sv_metrics_percentiles_parse
 *   2 --trace-window        sv_metrics_trace_window_parse (metrics/trace.c)
 *   3 --pd                  sv_cli_parse_pd (cli/run_inputs.c), then the quick-form cluster
 *                           (sv_planner_cluster_quick, Llama-3.1-8B on H100-SXM)
 *   4 --time-scale          the number and range check of cmd_run.c, then a fixed 3-request
 *                           trace replayed through sv_cli_run_trace at that scale
 *   5 --qps on a trace      the same check, sv_wl_span_rate_scale, then the scaled replay
 * The oracle: a parsed value within the documented range (checked here, independently of the
 * parser), or an error whose message names the flag (the trace's errors name the trace file);
 * scaled arrivals nondecreasing. */
#include "fuzz.h"

#include "cli/cli_internal.h"
#include "compute/compute.h"
#include "metrics/metrics.h"
#include "planner/planner.h"
#include "workloads/workloads.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char TRACE[] = "{\"input_toks\": 16, \"output_toks\": 4, \"arrival_time_ns\": 0}\n"
                            "{\"input_toks\": 8, \"output_toks\": 2, \"arrival_time_ns\": 1000}\n"
                            "{\"input_toks\": 4, \"output_toks\": 1, \"arrival_time_ns\": "
                            "9000000000000}\n";

static void fail_if(gboolean bad, const char *what, const char *text)
{
    if (bad) {
        fprintf(stderr, "fuzz: %s (value '%s')\n", what, text);
        abort();
    }
}

static void check_error(GError *e, const char *name, const char *text)
{
    fail_if(!e || !e->message || !strstr(e->message, name), "an error without the flag's name",
            text);
    g_error_free(e);
}

static void goodput(const char *text)
{
    struct sv_metrics_cfg cfg = {0};
    GError *e = NULL;
    if (!sv_metrics_goodput_parse(text, &cfg, &e))
        return check_error(e, "--goodput", text);
    const double v[3] = {cfg.goodput_ttft_ms, cfg.goodput_tpot_ms, cfg.goodput_e2el_ms};
    gboolean any = FALSE;
    for (int k = 0; k < 3; k++) {
        fail_if(!(v[k] == -1 || (v[k] >= 0 && isfinite(v[k]))), "an SLO out of range", text);
        any = any || v[k] >= 0;
    }
    fail_if(!cfg.has_goodput || !any, "goodput parsed without an SLO", text);
}

static void percentiles(const char *text)
{
    GError *e = NULL;
    int n = 0;
    g_autofree double *p = sv_metrics_percentiles_parse(text, &n, &e);
    if (!p)
        return check_error(e, "--metric-percentiles", text);
    fail_if(e != NULL || n < 1, "percentiles without one", text);
    for (int i = 0; i < n; i++) {
        fail_if(!(p[i] >= 0 && p[i] <= 100), "a percentile out of [0, 100]", text);
        for (int j = 0; j < i; j++)
            fail_if(p[i] == p[j], "a repeated percentile", text);
    }
}

static void window(const char *text)
{
    GError *e = NULL;
    sv_time a = -1, b = -1;
    if (!sv_metrics_trace_window_parse(text, "--trace-window", &a, &b, &e))
        return check_error(e, "--trace-window", text);
    fail_if(a < 0 || b <= a, "a window that is not 0 <= T0 < T1", text);
}

static void pd(const char *text)
{
    struct sv_planner_quick_cfg q = {.model = "meta-llama/Llama-3.1-8B", .hardware = "H100-SXM"};
    if (!sv_cli_parse_pd(text, &q.prefill, &q.decode))
        return; /* cmd_run.c words this error itself ("--pd: ... is not P:D") */
    fail_if(q.prefill < 0 || q.decode < 0 || q.prefill > SV_RANGE_DEVICES_MAX ||
                q.decode > SV_RANGE_DEVICES_MAX || q.prefill + q.decode == 0,
            "a P:D count out of range (0:0 is no --pd to the planner)", text);
    g_autoptr(sv_compute_hw_catalog) cat = sv_compute_hw_catalog_new();
    GError *e = NULL;
    struct sv_planner_cluster_cfg *c = sv_planner_cluster_quick(&q, cat, &e);
    if (!c)
        return check_error(e, "--pd", text);
    fail_if(c->n_instances != q.prefill + q.decode, "a cluster of another size", text);
    sv_planner_cluster_free(c);
}

/* cmd_run.c's parse_number for a double flag. */
static gboolean parse_rate(const char *name, const char *text, struct sv_range_double r, double *x)
{
    GError *e = NULL;
    if (!sv_num_parse_double(text, x))
        return FALSE;
    if (!sv_range_check_double(name, *x, r, &e)) {
        check_error(e, name, text);
        return FALSE;
    }
    fail_if(!isfinite(*x) || *x <= 0, "a rate out of range", text);
    return TRUE;
}

static void replay(const char *text, gboolean qps)
{
    struct sv_cli_run_inputs in = {0};
    double x;
    if (qps ? !parse_rate("--qps", text, SV_RANGE_D(1e-6, 1e9, "req/s"), &x)
            : !parse_rate("--time-scale", text, SV_RANGE_D_OPEN(0, 1e9, NULL), &x))
        return;
    *(qps ? &in.qps : &in.time_scale) = x;
    in.workload = sv_fuzz_aux_file("trace.jsonl", TRACE, sizeof TRACE - 1);
    GError *e = NULL;
    uint64_t total = 0;
    sv_wl_source *src = sv_cli_run_trace(&in, FALSE, &total, &e);
    sv_fuzz_check(src != NULL, e, in.workload);
    g_clear_error(&e);
    sv_time last = 0;
    sv_wl_item it = SV_WL_ITEM_INIT;
    int got;
    while (src && (got = sv_wl_next(src, &it, &e)) == 1) {
        fail_if(it.arrival_ns < last, "scaled arrivals out of order", text);
        last = it.arrival_ns;
        sv_wl_item_clear(&it);
    }
    if (src && got < 0) /* an arrival scaled past the engine's horizon */
        sv_fuzz_check(FALSE, e, in.workload);
    g_clear_error(&e);
    sv_wl_source_free(src);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    g_autofree char *text = g_strndup((const char *)data + 1, size - 1);
    g_free(sv_fuzz_tmp_path("x")); /* set up the log handlers before any parser runs */
    switch (data[0] % 6) {
    case 0:
        goodput(text);
        break;
    case 1:
        percentiles(text);
        break;
    case 2:
        window(text);
        break;
    case 3:
        pd(text);
        break;
    case 4:
        replay(text, FALSE);
        break;
    default:
        replay(text, TRUE);
        break;
    }
    return 0;
}
