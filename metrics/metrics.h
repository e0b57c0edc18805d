/* Serving outputs: requests.csv, timeseries.csv, summary.json, the human summary, and the
 * comparison of a run against a measured vLLM run (`servesim validate`). docs/outputs.md
 * describes every file and column.
 *
 * The writer (sv_metrics) is fed by the run loop, in simulated-time order: one record per
 * request when it finishes (any order of request ids), per-iteration token counts, per-token
 * emission times (for inter-token latency) and per-instance state samples. Memory stays bounded
 * by the number of requests in flight, not by the number finished: see sv_metrics_request_add.
 *
 * The module depends on core and on the records of workloads only: it knows records, not the run
 * that produces them (the planner's observer, planner/metrics_observer.c, hands each request's
 * struct sv_wl_outcome here as the serving group filled it). */
#ifndef SV_METRICS_H
#define SV_METRICS_H

#include <stdint.h>
#include <stdio.h>

#include <glib.h>

#include "core/core.h"
#include "workloads/workloads.h"

G_BEGIN_DECLS

#define SV_METRICS_ERROR (sv_metrics_error_quark())
GQuark sv_metrics_error_quark(void);
typedef enum {
    SV_METRICS_ERROR_IO,     /* cannot create, write or rename an output file */
    SV_METRICS_ERROR_INPUT,  /* a record the writer cannot accept (duplicate id, bad order) */
    SV_METRICS_ERROR_FORMAT, /* validate: a measured or simulated file that does not parse */
    SV_METRICS_ERROR_BUSY,   /* another writer holds the output directory's lock */
} sv_metrics_error;

/* ------------------------------------------------------------------------------------------ */
/* Quantiles: exact for small samples, bounded relative error for large ones.                  */

/* Percentiles follow numpy's default ("linear"): for q in [0, 100] and n sorted values
 * v[0..n-1], h = (n - 1) q / 100 and P_q = v[floor h] + (h - floor h)(v[ceil h] - v[floor h]).
 * vLLM's benchmark_serving and LLMServingSim's bench validate both use np.percentile. */
double sv_metrics_percentile_sorted(const double *sorted, size_t n, double q);

/* A stream of non-negative values whose mean is exact and whose percentiles are exact up to
 * SV_METRICS_QUANTILE_EXACT values; past that, values move into a logarithmic histogram
 * (DDSketch's mapping: bucket i holds (gamma^(i-1), gamma^i] with gamma = (1 + a)/(1 - a),
 * a = SV_METRICS_QUANTILE_REL_ERR; a bucket reports 2 gamma^i / (gamma + 1), within a
 * relative error a of every value in it), so memory is bounded whatever the count. */
#define SV_METRICS_QUANTILE_EXACT 65536
#define SV_METRICS_QUANTILE_REL_ERR 0.001
typedef struct sv_metrics_quantile sv_metrics_quantile;
sv_metrics_quantile *sv_metrics_quantile_new(void);
void sv_metrics_quantile_free(sv_metrics_quantile *q);
void sv_metrics_quantile_add(sv_metrics_quantile *q, double value);
uint64_t sv_metrics_quantile_count(const sv_metrics_quantile *q);
double sv_metrics_quantile_mean(const sv_metrics_quantile *q); /* 0 when empty */
/* Population standard deviation (ddof 0, numpy's np.std default, what vLLM's benchmark reports),
 * exact whatever the count (shifted sums, not the histogram); 0 when empty. */
double sv_metrics_quantile_std(const sv_metrics_quantile *q);
double sv_metrics_quantile_get(sv_metrics_quantile *q, double p); /* p in [0,100]; 0 if empty */
gboolean sv_metrics_quantile_is_exact(const sv_metrics_quantile *q);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sv_metrics_quantile, sv_metrics_quantile_free)

/* ------------------------------------------------------------------------------------------ */
/* The output writer.                                                                          */

struct sv_metrics_cfg {
    const char *output_dir; /* created if missing; NULL: keep statistics only, write nothing */
    int n_instances;        /* >= 1: timeseries sums running/waiting over instances */
    sv_time tick_ns;        /* timeseries row spacing; 0 means 1 s (vLLM bench --tick-seconds) */
    /* The run uses a memory tier (issue 8): requests.csv and timeseries.csv get the tier columns
     * (docs/outputs.md). FALSE keeps the files of a run without tiers unchanged. */
    gboolean tiers;
    /* The run has a power model over `power_nodes` nodes (> 0): power.csv (a row per
     * sv_metrics_power_row), requests.csv's energy_j column, summary.json's "energy". 0 keeps
     * the files of a run without one unchanged. Component names (borrowed, power.csv's header
     * node<i>_<name>_w): n_power_components of them. */
    int power_nodes;
    const char *const *power_components;
    int n_power_components;
    /* The cluster has prefill/decode instances: requests.csv ends with prefill_instance,
     * prefill_done_ns, kv_ready_ns (docs/outputs.md). FALSE keeps other runs' files unchanged. */
    gboolean pd;
    /* The caller reports every step and every power row (a run's observer): sv_metrics_finish
     * checks conservation (docs/reliability.md): with no request unfinished, the prompt and
     * output tokens of the time series equal those of the finished requests; with a power
     * model, the power rows integrate to the energy of the summary. A violation is an
     * SV_CORE_ERROR_INTERNAL error with the numbers, and nothing is written. */
    gboolean check_conservation;
    /* vLLM benchmark_serving's keys in summary.json (docs/outputs.md "vLLM benchmark keys"):
     * `--goodput` SLOs in ms (< 0 or 0 with has_goodput FALSE: not given; request_goodput only
     * when has_goodput) and `--metric-percentiles` (NULL: {99}, vLLM's default), copied. */
    gboolean has_goodput;
    double goodput_ttft_ms, goodput_tpot_ms, goodput_e2el_ms; /* < 0: that SLO not given */
    const double *metric_percentiles;
    int n_metric_percentiles;
};

/* Parse vLLM's `--goodput` value ("ttft:MS tpot:MS e2el:MS", any subset, space or comma
 * separated) into cfg's goodput fields, and `--metric-percentiles` ("50,90,99", each in
 * [0, 100]) into a new array (caller frees). Errors name the flag and the bad pair. */
gboolean sv_metrics_goodput_parse(const char *text, struct sv_metrics_cfg *cfg, GError **error);
double *sv_metrics_percentiles_parse(const char *text, int *n, GError **error);

typedef struct sv_metrics sv_metrics;

/* Opens temporary files in the output directory (names starting with '.'); nothing is visible
 * under the final names until sv_metrics_finish succeeds. The writer holds an exclusive lock on
 * the directory (flock(2) on the folder itself, no lock file) until sv_metrics_free: a second
 * writer on the same folder, in this process or another, fails with SV_METRICS_ERROR_BUSY before
 * it touches anything there (two runs would otherwise overwrite each other's outputs). */
sv_metrics *sv_metrics_new(const struct sv_metrics_cfg *cfg, GError **error);
/* Without a successful finish, removes the temporary files: an aborted run leaves no
 * requests.csv / timeseries.csv / summary.json of its own. */
void sv_metrics_free(sv_metrics *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sv_metrics, sv_metrics_free)

/* A request's outcome (workloads.h: times -1 where the event did not happen, written as an empty
 * CSV field; `finished` FALSE for a request the run ended without), once, in any id order. Rows
 * are written in request_id order: a completion that is at most SV_METRICS_REORDER_WINDOW ids
 * ahead of the oldest unwritten one waits in a ring; one further ahead goes to a fixed-size
 * binary spill file at offset id x record size and is read back when the window reaches it.
 * Memory is O(window). */
#define SV_METRICS_REORDER_WINDOW 8192
gboolean sv_metrics_request_add(sv_metrics *m, const struct sv_wl_outcome *r, GError **error);

/* Tokens produced by one iteration of `instance` that ended at time t: prompt_tokens counts
 * the whole prompt of each request whose prefill completed in the iteration (prefix hits
 * included, as vLLM's num_prompt_tokens does), gen_tokens the output tokens produced.
 * Times must not decrease across calls (of this and sv_metrics_sample). */
void sv_metrics_tokens(sv_metrics *m, int instance, sv_time t, int64_t prompt_tokens,
                       int64_t gen_tokens);

/* One inter-token gap (ns) of some request: the time between two consecutive output tokens. */
void sv_metrics_itl(sv_metrics *m, sv_time gap_ns);

/* State of `instance` at time t: requests in its running set, arrived requests waiting, and
 * KV block usage in percent (vLLM's kv_cache_usage x 100: used blocks / total blocks, where
 * cached-but-free blocks count as free). The row for tick T (covering [T - tick, T)) uses the
 * last sample before T, as vLLM bench's stat logger takes the last record in the tick. */
void sv_metrics_sample(sv_metrics *m, int instance, sv_time t, int running, int waiting,
                       double kv_cache_pct);

/* Memory tiers (cfg.tiers), index 0..3 = npu, cpu, cxl, ssd: bytes in use summed over every tier
 * of the kind, and the cumulative prefix hit percentage of the kind (hit / looked-up tokens x 100,
 * as LLMServingSim's heartbeat prints it). A timeseries row uses the last sample before its end. */
#define SV_METRICS_TIER_KINDS 4
struct sv_metrics_tier_sample {
    uint64_t bytes[SV_METRICS_TIER_KINDS];
    double hit_pct[SV_METRICS_TIER_KINDS];
};
void sv_metrics_sample_tiers(sv_metrics *m, sv_time t, const struct sv_metrics_tier_sample *s);

/* One power.csv row at time t (cfg.power_nodes > 0; rows in time order): average W per node and
 * component over the interval since the previous row (w[node x n_power_components + c]),
 * cumulative J per node, and the totals. */
void sv_metrics_power_row(sv_metrics *m, sv_time t, const double *w, const double *node_j,
                          double total_w, double total_j);

/* End of the run at simulated time end_ns: flushes remaining timeseries rows up to the tick
 * containing end_ns and the buffered requests, writes summary.json, and renames the three
 * files into place (summary.json last: it marks a complete output). */
gboolean sv_metrics_finish(sv_metrics *m, sv_time end_ns, uint64_t arrived, GError **error);
/* arrived: requests that entered the system, rejected ones included (0: the number of records
 * given); what is neither finished nor rejected is reported as unfinished. */

/* Where errors met inside void callbacks (the planner's observer) are kept until finish (first
 * one wins). */
GError **sv_metrics_deferred_error(sv_metrics *m);

/* The statistics after finish (also usable with output_dir NULL). */
struct sv_metrics_stat {
    uint64_t count;
    double mean, p50, p90, p95, p99; /* ms */
    double std;                      /* ms, population (ddof 0) */
};
struct sv_metrics_summary {
    uint64_t arrived, finished, unfinished;
    /* Requests answered with an error at arrival (records with a reject reason), in total and by
     * sv_wl_reject ([0] unused); unfinished = arrived - finished - rejected. */
    uint64_t rejected, rejected_by_reason[SV_WL_REJECT_N];
    double makespan_s; /* end of the run (sim time 0 = start) */
    double request_throughput, input_throughput, output_throughput; /* per second of makespan */
    /* vLLM's benchmark duration: first arrival to last completion (a rejected request completes
     * at its arrival, as vLLM's client gets its error at once); 0 without requests. Goodput:
     * finished requests meeting every given SLO (has_goodput), and their rate over duration_s. */
    double duration_s;
    gboolean has_goodput;
    uint64_t good_requests;
    double request_goodput;
    int64_t input_tokens, output_tokens, prefix_hit_tokens, preemptions; /* finished requests */
    struct sv_metrics_stat ttft, tpot, itl, e2e, queue;
    gboolean itl_exact; /* FALSE: ITL percentiles within SV_METRICS_QUANTILE_REL_ERR */
    gboolean has_pd;    /* sv_metrics_set_pd was called: "disaggregation" in summary.json */
    struct sv_metrics_pd {
        uint64_t handoffs;     /* requests whose KV moved prefill -> decode */
        uint64_t kv_bytes;     /* KV bytes moved */
        uint64_t kv_waits;     /* handoffs that waited for decode memory */
        uint64_t kv_blocks;    /* KV pool of instance 0, blocks */
        double kv_wait_ms;     /* total wait for decode memory */
        double kv_transfer_ms; /* total reservation -> KV arrived */
    } pd;
    /* Memory tiers (sv_metrics_set_tiers_summary): summary.json "memory_tiers". Owners 0..4 =
     * weights, live_kv, evicted_kv, prefix, experts. */
    gboolean has_tiers;
    struct sv_metrics_tiers {
        struct sv_metrics_tier {
            gboolean present;
            uint64_t capacity_bytes, peak_bytes, peak_by_owner[5];
            double mean_bytes;
            uint64_t read_bytes, write_bytes;
            uint64_t prefix_hit_tokens, prefix_lookup_tokens, prefix_hit_chunks, evictions,
                rejected;
        } kind[SV_METRICS_TIER_KINDS];
        uint64_t bytes_booked; /* every transfer over the tier fabric */
        /* "swap" (has_swap: --preemption-mode swap) and "expert_cache" (has_expert_cache:
         * an instance with expert_offload), summed over instances. */
        gboolean has_swap, has_expert_cache;
        uint64_t swap_outs, swap_ins, swap_out_bytes, swap_in_bytes, swap_fallbacks;
        uint64_t expert_hits, expert_misses, expert_fetch_bytes;
    } tiers;
    /* Power model (sv_metrics_set_energy): summary.json "energy"; J per output token and per
     * request are total_j over the finished requests' output tokens and count. */
    gboolean has_energy;
#define SV_METRICS_ENERGY_MAX_COMPONENTS 8
    struct sv_metrics_energy {
        int n_components;
        const char *component_names[SV_METRICS_ENERGY_MAX_COMPONENTS]; /* borrowed, static */
        double by_component_j[SV_METRICS_ENERGY_MAX_COMPONENTS];
        double npu_active_j, npu_standby_j, npu_idle_j;
        double total_j, attributed_j, unattributed_j;
        /* Traffic charged per component (bytes x traversals; planner.h sv_planner_energy). */
        double dram_bytes, link_bytes, switch_bytes, nic_bytes, storage_bytes;
    } energy;
    /* PIM attention offload (sv_metrics_set_pim): summary.json "pim", summed over instances. */
    gboolean has_pim;
    struct sv_metrics_pim {
        int64_t channels;      /* PIM channels of the offloading instances */
        uint64_t iterations;   /* iterations with PIM attention */
        uint64_t sub_batched;  /* of them, run as two interleaved sub-batches */
        uint64_t decode_attn;  /* decode sequences whose attention ran on PIM */
        double busy_channel_s; /* channel busy time, summed over channels */
        double attn_s;         /* sum of the slowest channel's time per layer */
        uint64_t xfer_bytes;   /* NPU <-> PIM */
    } pim;
    /* Speculative decoding (sv_metrics_add_spec): summary.json "speculative_decoding", one
     * entry per speculative instance in the order added (n_spec; none: the key is absent). */
    int n_spec;
    struct sv_metrics_spec *spec;
    /* Per instance (n_instances entries), what computed its operator latency ("roofline",
     * "profile:<bundle>"); NULL where sv_metrics_set_latency_source was not called. */
    char **latency_sources;
};
/* One speculative instance's counters (vLLM's SpecDecodingStats, vllm/v1/spec_decode/metrics.py:
 * a draft is one request's proposal in one step; accepted_per_pos[i] counts the drafts whose
 * position i was accepted). */
#define SV_METRICS_SPEC_MAX_K 64
struct sv_metrics_spec {
    int instance;
    char method[16];
    int k; /* num_speculative_tokens */
    uint64_t num_drafts, num_draft_tokens, num_accepted_tokens;
    uint64_t accepted_per_pos[SV_METRICS_SPEC_MAX_K];
};
const struct sv_metrics_summary *sv_metrics_get_summary(const sv_metrics *m);
/* Add one speculative instance's counters (copied; call before finish). */
void sv_metrics_add_spec(sv_metrics *m, const struct sv_metrics_spec *s);
/* Prefill/decode disaggregation figures (planner.h's struct sv_planner_run_result kv_*), reported
 * in summary.json's "disaggregation" object and in the human summary. Call before finish, only when
 * the cluster has prefill/decode instances (docs/outputs.md). */
void sv_metrics_set_pd(sv_metrics *m, const struct sv_metrics_pd *pd);
/* Memory-tier figures at the end of the run ("memory_tiers" in summary.json). Call before
 * finish, only when the run uses a tier. */
void sv_metrics_set_tiers_summary(sv_metrics *m, const struct sv_metrics_tiers *t);

/* The run's energy (summary.json "energy"). Call before finish, only with a power model. */
void sv_metrics_set_energy(sv_metrics *m, const struct sv_metrics_energy *e);
/* PIM offload figures ("pim" in summary.json). Call before finish, only when an instance
 * offloads attention to PIM (docs/pim.md). */
void sv_metrics_set_pim(sv_metrics *m, const struct sv_metrics_pim *p);

/* Which latency model `instance` used (copied), reported in summary.json's "latency_source"
 * array (docs/outputs.md), one entry per instance once any is set: outputs computed from
 * measured profiles and from the roofline must not be mistaken for one another. */
void sv_metrics_set_latency_source(sv_metrics *m, int instance, const char *source);

/* What an instance is (summary.json "instances" and "pools"): strings are copied. */
struct sv_metrics_instance_info {
    const char *role; /* "both", "prefill", "decode" */
    const char *model, *hardware;
    int tp, pp;
    uint64_t kv_blocks, kv_block_size, kv_bytes; /* KV pool (kv_blocks x kv_block_size tokens) */
    /* The limits it runs with, when has_limits (struct sv_planner_instance_limits): vLLM's
     * names in summary.json; engine copied. */
    gboolean has_limits;
    const char *engine;
    int64_t max_num_seqs, max_num_batched_tokens, long_prefill_token_threshold, max_model_len;
    gboolean enable_chunked_prefill, enable_prefix_caching;
    /* Attention/FFN disaggregation (docs/afd.md): the FFN group; ffn_npus 0 = none (the instance's
     * own devices are its attention group). */
    const char *ffn_hardware;
    int ffn_npus, micro_batches;
    gboolean ffn_ep; /* the FFN group shards the experts (docs/afd.md "ffn_ep"); FALSE: TP */
};
void sv_metrics_set_instance(sv_metrics *m, int instance, const struct sv_metrics_instance_info *i);
/* What sv_metrics_set_instance recorded for `instance` (strings owned by m; FALSE when it never
 * was, or out of range): run.json's resolved limits. */
gboolean sv_metrics_get_instance(const sv_metrics *m, int instance,
                                 struct sv_metrics_instance_info *out);

/* The run's inputs (run.json beside summary.json, docs/outputs.md): `json` is the whole document
 * (copied); written under a temporary name and renamed with the other outputs at finish. */
void sv_metrics_set_run_json(sv_metrics *m, const char *json);

/* A short human summary of a finished run (what `servesim run` prints). */
void sv_metrics_print_summary(const sv_metrics *m, FILE *out);

/* ------------------------------------------------------------------------------------------ */
/* servesim validate: a simulated output dir against a measured vLLM bench run.               */

struct sv_metrics_validate_row {
    double measured, simulated, diff_pct; /* ms; diff = (sim - measured) / measured x 100 */
};
struct sv_metrics_validate_metric {
    struct sv_metrics_validate_row mean, median, p90, p95, p99;
    uint64_t n_measured, n_simulated;
};
struct sv_metrics_validate_series {
    double mae, mape; /* mape in percent, over ticks where the measured value is not 0 */
    uint64_t n_ticks, n_mape_ticks;
};
struct sv_metrics_validation {
    struct sv_metrics_validate_metric ttft, tpot, latency;
    struct sv_metrics_validate_series prompt_throughput, gen_throughput, running, waiting;
};

/* Reads <measured>/requests.jsonl (+ timeseries.csv) in the layout of LLMServingSim's
 * `bench run` and <simulated>/requests.csv (+ timeseries.csv) as written by sv_metrics. */
gboolean sv_metrics_validate(const char *measured_dir, const char *simulated_dir,
                             struct sv_metrics_validation *out, GError **error);
void sv_metrics_validation_print(const struct sv_metrics_validation *v, FILE *out);
gboolean sv_metrics_validation_write_json(const struct sv_metrics_validation *v, const char *path,
                                          GError **error);

/* ------------------------------------------------------------------------------------------ */
/* Timeline: a Chrome Trace Event Format / Perfetto JSON file (metrics/trace.c; docs/trace.md).  */

/* A streaming writer: each call writes its events at once (nothing of the trace is kept but one
 * record per track), under a temporary name beside `path`, renamed into place by
 * sv_metrics_trace_finish; sv_metrics_trace_free without it removes the temporary. Times are
 * simulated ns, written as microseconds with 3 decimals (exact). The writer keeps each track's
 * timestamps in order: a slice that would overlap the previous one of its track goes to a
 * further lane of that track ("<thread name> #2", tid + SV_METRICS_TRACE_LANE x lane), and a
 * counter sample older than the track's last is written at that last time. With a window only
 * what overlaps [window_begin_ns, window_end_ns] is written, clipped to it (counters: samples
 * inside it). */
#define SV_METRICS_TRACE_LANE 100000
struct sv_metrics_trace_cfg {
    const char *path;
    gboolean window;
    sv_time window_begin_ns, window_end_ns;
};
typedef struct sv_metrics_trace sv_metrics_trace;
sv_metrics_trace *sv_metrics_trace_open(const struct sv_metrics_trace_cfg *cfg, GError **error);
/* Write the end of the document and rename it into place. */
gboolean sv_metrics_trace_finish(sv_metrics_trace *t, GError **error);
void sv_metrics_trace_free(sv_metrics_trace *t); /* accepts NULL; removes an unfinished file */
/* "T0:T1" in seconds of simulated time (T0 < T1, both >= 0; "T0:" = to the end). Errors name
 * `flag`. */
gboolean sv_metrics_trace_window_parse(const char *text, const char *flag, sv_time *begin_ns,
                                       sv_time *end_ns, GError **error);

/* Metadata (ph M): a process's and a thread's name (and the thread's sort index = tid). */
void sv_metrics_trace_process(sv_metrics_trace *t, int32_t pid, const char *name);
void sv_metrics_trace_thread(sv_metrics_trace *t, int32_t pid, int32_t tid, const char *name);
/* A complete slice (ph X) on thread (pid, tid); `args_json` is a JSON object's text or NULL.
 * Returns the tid it was written on (a lane), or -1 when outside the window. */
int32_t sv_metrics_trace_slice(sv_metrics_trace *t, int32_t pid, int32_t tid, const char *cat,
                               const char *name, sv_time begin_ns, sv_time end_ns,
                               const char *args_json);
/* A flow (ph s on (pid0, tid0) at t0, ph f with "bp":"e" on (pid1, tid1) at t1), written only
 * when both ends are inside the window; each end should lie in a slice of its thread. */
void sv_metrics_trace_flow(sv_metrics_trace *t, const char *cat, const char *name, uint64_t id,
                           int32_t pid0, int32_t tid0, sv_time t0_ns, int32_t pid1, int32_t tid1,
                           sv_time t1_ns);
/* A counter sample (ph C) named `name` on process `pid`: n series keys[i] = values[i]. */
void sv_metrics_trace_counter(sv_metrics_trace *t, int32_t pid, const char *name, sv_time t_ns,
                              int n, const char *const *keys, const double *values);
/* One async track (ph b / e, cat `cat`, id `id`) of nested spans: pre-order (a parent before
 * its children, siblings in time order, each inside its parent), depth 0 the outermost. Written
 * with matched b / e in time order; spans outside the window are left out, the others clipped. */
struct sv_metrics_trace_span {
    const char *name;
    int depth;
    sv_time begin_ns, end_ns;
    const char *args_json; /* NULL or a JSON object's text (on the b event) */
};
void sv_metrics_trace_async(sv_metrics_trace *t, int32_t pid, const char *cat, uint64_t id,
                            const struct sv_metrics_trace_span *spans, int n);
uint64_t sv_metrics_trace_events(const sv_metrics_trace *t); /* written so far */
/* Does [begin_ns, end_ns] overlap the window (always without one)? Lets a caller skip building
 * what would not be written. */
gboolean sv_metrics_trace_overlaps(const sv_metrics_trace *t, sv_time begin_ns, sv_time end_ns);

G_END_DECLS

#endif
