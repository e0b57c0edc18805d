/* Shared between the files of metrics/ only: the names of the files the writer (metrics.c)
 * produces and `servesim validate` (validate.c) reads back, so that the two cannot drift apart. */
#ifndef SV_METRICS_INTERNAL_H
#define SV_METRICS_INTERNAL_H

#include "metrics/metrics.h"

#define SV_METRICS__REQUESTS_CSV "requests.csv"
#define SV_METRICS__TIMESERIES_CSV "timeseries.csv"
#define SV_METRICS__SUMMARY_JSON "summary.json"
#define SV_METRICS__POWER_CSV "power.csv"
#define SV_METRICS__RUN_JSON "run.json"

#include <json-glib/json-glib.h>

/* The finished document of `b` as pretty JSON text, 2-space indent (the layout summary.json and
 * validation.json share); caller frees. */
char *sv_metrics__json_text(JsonBuilder *b);
/* A member `name` of the object being built: an integer, a number, a string (NULL: null). */
void sv_metrics__put_int(JsonBuilder *b, const char *name, int64_t v);
void sv_metrics__put_double(JsonBuilder *b, const char *name, double v);
void sv_metrics__put_str(JsonBuilder *b, const char *name, const char *v);
/* spec.c: summary.json "speculative_decoding" (nothing without speculative instances). */
void sv_metrics__spec_json(JsonBuilder *b, const struct sv_metrics_summary *s);
void sv_metrics__spec_print(FILE *out, const struct sv_metrics_summary *s);

/* vLLM benchmark_serving's keys (vllm.c): goodput, duration and the percentiles asked for. */
struct sv_metrics__vllm {
    gboolean goodput;
    double slo_ns[3]; /* ttft, tpot, e2el; < 0: not given */
    double *percentiles;
    int n_percentiles;
    uint64_t good;
    sv_time first_arrival_ns, last_done_ns; /* -1: no request yet */
};
void sv_metrics__vllm_init(struct sv_metrics__vllm *v, const struct sv_metrics_cfg *cfg);
void sv_metrics__vllm_clear(struct sv_metrics__vllm *v);
void sv_metrics__vllm_request(struct sv_metrics__vllm *v, const struct sv_wl_outcome *r);
/* Top-level keys, appended to the summary object being built; q: ttft, tpot, itl, e2e. */
void sv_metrics__vllm_json(JsonBuilder *b, const struct sv_metrics__vllm *v,
                           const struct sv_metrics_summary *s, sv_metrics_quantile *const q[4]);

/* Per-instance and per-pool figures (instances.c). */
typedef struct sv_metrics__insts sv_metrics__insts;
sv_metrics__insts *sv_metrics__insts_new(int n_instances, gboolean pd);
void sv_metrics__insts_free(sv_metrics__insts *s);
void sv_metrics__insts_set_info(sv_metrics__insts *s, int i,
                                const struct sv_metrics_instance_info *info);
gboolean sv_metrics__insts_get_info(const sv_metrics__insts *s, int i,
                                    struct sv_metrics_instance_info *out);
void sv_metrics__insts_sample(sv_metrics__insts *s, int i, sv_time t, int running, int waiting,
                              double kv_fraction);
void sv_metrics__insts_tokens(sv_metrics__insts *s, int i, int64_t prompt, int64_t gen);
void sv_metrics__insts_request(sv_metrics__insts *s, const struct sv_wl_outcome *r);
/* "instances" and "pools", time averages over [0, end_ns]. */
void sv_metrics__insts_json(JsonBuilder *b, sv_metrics__insts *s, sv_time end_ns);

#endif
