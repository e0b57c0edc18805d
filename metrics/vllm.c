/* summary.json's keys of vLLM's benchmark_serving result JSON, so that scripts written for vLLM
 * runs read servesim runs. Definitions: vllm-project/vllm benchmarks/benchmark_serving.py
 * (calculate_metrics and benchmark(), commit 0049e29c41fd383bda519a3f250e3227713081ef):
 *   - completed: successful requests; total_input_tokens / total_output_tokens over them;
 *   - duration: benchmark_start_time (taken just before get_request yields the first request,
 *     which is sent at once) to the gather of every request (the last completion, failed ones
 *     included): here the first arrival to the last completion, a rejected request completing
 *     at its arrival (vLLM's client gets its error at once);
 *   - request_throughput = completed / duration, output_throughput = total_output / duration,
 *     total_token_throughput = (total_input + total_output) / duration;
 *   - tpot per request = (latency - ttft) / (output_len - 1), over requests with output_len > 1;
 *     itl over every inter-token gap; e2el = request latency;
 *   - mean: np.mean, std: np.std (ddof 0), median: np.median, pN: np.percentile (linear);
 *     an empty list gives 0 (vLLM computes over `list or 0`);
 *   - request_goodput = requests meeting every given SLO / duration, an SLO met when
 *     SLO >= value (ms), a request with output_len <= 1 having tpot 0 for this test. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics_internal.h"

#define NS_PER_MS 1e6

static const char *const SLO_NAMES[3] = {"ttft", "tpot", "e2el"};

gboolean sv_metrics_goodput_parse(const char *text, struct sv_metrics_cfg *cfg, GError **error)
{
    double slo[3] = {-1, -1, -1};
    g_auto(GStrv) pairs = g_strsplit_set(text, " ,", -1);
    int given = 0;
    for (char **p = pairs; *p; p++) {
        if (!**p)
            continue;
        const char *colon = strchr(*p, ':');
        int k = -1;
        for (int j = 0; colon && j < 3; j++)
            if ((size_t)(colon - *p) == strlen(SLO_NAMES[j]) &&
                !strncmp(*p, SLO_NAMES[j], strlen(SLO_NAMES[j])))
                k = j;
        double v;
        if (k < 0 || !sv_num_parse_double(colon + 1, &v) || !(v >= 0) || !isfinite(v)) {
            g_set_error(error, SV_METRICS_ERROR, SV_METRICS_ERROR_INPUT,
                        "--goodput: '%s' is not KEY:VALUE with KEY ttft, tpot or e2el and VALUE "
                        "a non-negative number of ms (vLLM's --goodput)",
                        *p);
            return FALSE;
        }
        slo[k] = v;
        given++;
    }
    if (given == 0) {
        g_set_error(error, SV_METRICS_ERROR, SV_METRICS_ERROR_INPUT,
                    "--goodput: '%s' names no SLO (expected e.g. \"ttft:200 tpot:50\")", text);
        return FALSE;
    }
    cfg->has_goodput = TRUE;
    cfg->goodput_ttft_ms = slo[0];
    cfg->goodput_tpot_ms = slo[1];
    cfg->goodput_e2el_ms = slo[2];
    return TRUE;
}

double *sv_metrics_percentiles_parse(const char *text, int *n, GError **error)
{
    g_auto(GStrv) parts = g_strsplit(text, ",", -1);
    GArray *out = g_array_new(FALSE, FALSE, sizeof(double));
    for (char **p = parts; *p; p++) {
        g_autofree char *t = g_strstrip(g_strdup(*p));
        double v;
        if (!sv_num_parse_double(t, &v) || !(v >= 0 && v <= 100)) {
            g_set_error(error, SV_METRICS_ERROR, SV_METRICS_ERROR_INPUT,
                        "--metric-percentiles: '%s' is not a percentile in [0, 100] (expected "
                        "a comma-separated list such as 50,90,99)",
                        t);
            g_array_free(out, TRUE);
            return NULL;
        }
        gboolean seen = FALSE; /* a repeated percentile is one key (a Python dict's) */
        for (guint i = 0; i < out->len; i++)
            seen = seen || g_array_index(out, double, i) == v;
        if (!seen)
            g_array_append_val(out, v);
    }
    if (out->len == 0) {
        g_set_error(error, SV_METRICS_ERROR, SV_METRICS_ERROR_INPUT,
                    "--metric-percentiles: '%s' names no percentile (expected e.g. 50,90,99)",
                    text);
        g_array_free(out, TRUE);
        return NULL;
    }
    *n = (int)out->len;
    return (double *)g_array_free(out, FALSE);
}

void sv_metrics__vllm_init(struct sv_metrics__vllm *v, const struct sv_metrics_cfg *cfg)
{
    memset(v, 0, sizeof *v);
    v->goodput = cfg->has_goodput;
    const double ms[3] = {cfg->goodput_ttft_ms, cfg->goodput_tpot_ms, cfg->goodput_e2el_ms};
    for (int k = 0; k < 3; k++)
        v->slo_ns[k] = cfg->has_goodput && ms[k] >= 0 ? ms[k] * NS_PER_MS : -1;
    if (cfg->n_metric_percentiles > 0) {
        v->n_percentiles = cfg->n_metric_percentiles;
        v->percentiles =
            g_memdup2(cfg->metric_percentiles, sizeof(double) * (size_t)cfg->n_metric_percentiles);
    } else {
        v->n_percentiles = 1;
        v->percentiles = g_new(double, 1);
        v->percentiles[0] = 99; /* vLLM's --metric-percentiles default */
    }
    v->first_arrival_ns = v->last_done_ns = -1;
}

void sv_metrics__vllm_clear(struct sv_metrics__vllm *v)
{
    g_clear_pointer(&v->percentiles, g_free);
}

void sv_metrics__vllm_request(struct sv_metrics__vllm *v, const struct sv_wl_outcome *r)
{
    if (r->arrival_ns >= 0 && (v->first_arrival_ns < 0 || r->arrival_ns < v->first_arrival_ns))
        v->first_arrival_ns = r->arrival_ns;
    sv_time done = r->finished ? r->last_token_ns : r->arrival_ns;
    if (done > v->last_done_ns)
        v->last_done_ns = done;
    if (!r->finished || !v->goodput)
        return;
    double ttft = (double)(r->first_token_ns - r->arrival_ns);
    double e2el = (double)(r->last_token_ns - r->arrival_ns);
    double tpot = r->output_tokens > 1 ? (e2el - ttft) / (double)(r->output_tokens - 1) : 0.0;
    const double val[3] = {ttft, tpot, e2el};
    for (int k = 0; k < 3; k++)
        if (v->slo_ns[k] >= 0 && !(v->slo_ns[k] >= val[k]))
            return;
    v->good++;
}

/* vLLM's key for percentile p: "p99" for an integral p, else Python's str(p) ("p99.9"): the
 * shortest decimal that reads back as the same double. */
static char *percentile_key(double p, const char *metric)
{
    if (p == floor(p))
        return g_strdup_printf("p%d_%s_ms", (int)p, metric);
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    for (int prec = 1; prec <= 17; prec++) {
        char fmt[8];
        g_snprintf(fmt, sizeof fmt, "%%.%dg", prec);
        g_ascii_formatd(buf, sizeof buf, fmt, p);
        if (g_ascii_strtod(buf, NULL) == p)
            break;
    }
    return g_strdup_printf("p%s_%s_ms", buf, metric);
}

void sv_metrics__vllm_json(JsonBuilder *b, const struct sv_metrics__vllm *v,
                           const struct sv_metrics_summary *s, sv_metrics_quantile *const q[4])
{
    double dur = s->duration_s;
    sv_metrics__put_double(b, "duration", dur);
    sv_metrics__put_int(b, "completed", (int64_t)s->finished);
    sv_metrics__put_int(b, "total_input_tokens", s->input_tokens);
    sv_metrics__put_int(b, "total_output_tokens", s->output_tokens);
    sv_metrics__put_double(b, "request_throughput", dur > 0 ? (double)s->finished / dur : 0);
    if (v->goodput)
        sv_metrics__put_double(b, "request_goodput", s->request_goodput);
    sv_metrics__put_double(b, "output_throughput", dur > 0 ? (double)s->output_tokens / dur : 0);
    sv_metrics__put_double(b, "total_token_throughput",
                           dur > 0 ? (double)(s->input_tokens + s->output_tokens) / dur : 0);
    static const char *const names[4] = {"ttft", "tpot", "itl", "e2el"};
    for (int k = 0; k < 4; k++) {
        g_autofree char *mean = g_strdup_printf("mean_%s_ms", names[k]);
        g_autofree char *median = g_strdup_printf("median_%s_ms", names[k]);
        g_autofree char *std = g_strdup_printf("std_%s_ms", names[k]);
        sv_metrics__put_double(b, mean, sv_metrics_quantile_mean(q[k]));
        sv_metrics__put_double(b, median, sv_metrics_quantile_get(q[k], 50));
        sv_metrics__put_double(b, std, sv_metrics_quantile_std(q[k]));
        for (int i = 0; i < v->n_percentiles; i++) {
            g_autofree char *key = percentile_key(v->percentiles[i], names[k]);
            sv_metrics__put_double(b, key, sv_metrics_quantile_get(q[k], v->percentiles[i]));
        }
    }
}
