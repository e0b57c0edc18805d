/* servesim workloads: request sources (trace readers and synthetic generators).
 *
 * Every source is pulled one item at a time, in arrival order, and never holds more than the
 * current line and the arrays of the current item: a million-line trace streams in O(1) memory.
 * See docs/workloads.md for the formats, numbering and error rules. */
#ifndef SV_WORKLOADS_H
#define SV_WORKLOADS_H

#include "core/core.h"

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

G_BEGIN_DECLS

#define SV_WL_ERROR (sv_wl_error_quark())
GQuark sv_wl_error_quark(void);
typedef enum {
    SV_WL_ERROR_IO,       /* file cannot be opened or read */
    SV_WL_ERROR_BAD_LINE, /* one line is malformed (skippable with skip_bad_lines) */
    SV_WL_ERROR_ORDER,    /* arrival earlier than the previous one (never skipped) */
    SV_WL_ERROR_INVALID,  /* bad option, spec string or generator configuration */
} sv_wl_error_code;

/* Mooncake's hash_ids each cover one block of 512 tokens (Mooncake FAST'25 README,
 * ../shared/traces/mooncake_fast25/README.md). */
#define SV_WL_MOONCAKE_BLOCK_TOKENS 512

/* ---- items ------------------------------------------------------------------------------ */

/* One LLM call: the one request record. The run passes it by pointer to the router and to the
 * serving group (msg), which read the arrays during that call only and keep none of them. Arrays
 * are g_malloc'ed and owned by the item that holds this record. */
typedef struct sv_wl_req {
    uint64_t request_id;      /* position in the workload, 0.. (sessions: see sv_wl_item) */
    sv_time arrival_ns;       /* when it enters the system: the item's arrival for a flat request
                                 and a session's first call; -1 for a later call until the run
                                 releases it (and sets it) */
    uint32_t turn;            /* position in its session, 0.. (0 for flat requests): the
                                 session's first call is request request_id - turn */
    int64_t input_tokens;     /* >= 1 */
    int64_t output_tokens;    /* >= 1 */
    sv_time tool_duration_ns; /* session call: wait after it completes before the next call is
                                 released; 0 for flat requests */
    uint32_t *input_tok_ids;  /* optional (NULL, n = 0) */
    size_t n_input_tok_ids;
    uint32_t *output_tok_ids; /* optional */
    size_t n_output_tok_ids;
    uint64_t *hash_ids; /* optional prefix-block hash ids (Mooncake) */
    size_t n_hash_ids;
    int64_t hash_block_tokens; /* tokens per hash id (512 for Mooncake), 0 without hash ids */
} sv_wl_req;

/* Why a request was answered with an error instead of being served (docs/outputs.md, "Rejected
 * requests"); NONE for every request that was served. */
typedef enum {
    SV_WL_REJECT_NONE = 0,
    SV_WL_REJECT_CONTEXT_LENGTH, /* prompt + requested output over the model's context length
                                    (vLLM's API server answers HTTP 400) */
    SV_WL_REJECT_KV_CAPACITY,    /* the whole sequence exceeds the KV cache of every instance
                                    that could serve it: it could never be scheduled */
    SV_WL_REJECT_N,
} sv_wl_reject;
/* "context_length", "kv_capacity" ("" for NONE): the requests.csv / summary.json names. */
const char *sv_wl_reject_name(sv_wl_reject r);

/* What became of one request, filled by the serving group that ran it and handed up unchanged
 * to the planner, its observers and the output writer (one requests.csv row). Times are absolute
 * simulated ns, -1 where the event did not happen. ttft = first_token - arrival, tpot = (last -
 * first) / (output_tokens - 1), e2e = last - arrival, queue = first_scheduled - arrival (vLLM's
 * metric definitions). Nothing keeps it once the request is finished and reported. */
struct sv_wl_outcome {
    uint64_t request_id; /* sv_wl_req.request_id; ids are dense */
    int32_t instance;    /* instance that served it (the decode one under disaggregation; -1:
                            never routed) */
    uint32_t turn;       /* sv_wl_req.turn */
    sv_time arrival_ns;
    sv_time first_scheduled_ns; /* first time a scheduler step included it */
    sv_time first_token_ns;     /* completion of the iteration producing output token 1 (the
                                   token the client receives: on the decode instance under
                                   disaggregation, docs/disaggregation.md) */
    sv_time last_token_ns;      /* completion of the iteration producing the last token */
    int64_t input_tokens;
    int64_t output_tokens;     /* tokens generated (the target count when finished) */
    int64_t prefix_hit_tokens; /* tokens found in the prefix cache at the first admission */
    uint32_t preemptions;
    gboolean finished;
    /* Memory tiers (docs/memory-tiers.md; requests.csv columns only when a run uses a tier):
     * prompt tokens found at the first admission per tier (npu = prefix_hit_tokens' NPU part; cpu,
     * cxl, ssd: the lower-tier pools; remote: another node's pool), KV bytes loaded from lower
     * tiers, and KV bytes swapped out / in by swap preemption. 0 without tiers. */
    int64_t prefix_hit_tokens_npu, prefix_hit_tokens_cpu, prefix_hit_tokens_cxl,
        prefix_hit_tokens_ssd, prefix_hit_tokens_remote;
    uint64_t kv_load_bytes, swap_out_bytes, swap_in_bytes;
    /* Energy attributed to the request (J; docs/power.md; requests.csv column only when the run
     * has a power model). 0 without. */
    double energy_j;
    /* Disaggregation (docs/disaggregation.md; requests.csv columns only for a cluster with
     * prefill/decode instances): the instance that completed the prompt, the completion of the
     * iteration that did (= first_token_ns on a combined instance), and when its KV had arrived
     * on the decode instance (-1 when it never moved). */
    int32_t prefill_instance;
    sv_time prefill_done_ns;
    sv_time kv_ready_ns;
    /* Rejected at arrival (finished FALSE, instance -1, no times but arrival_ns; input_tokens and
     * output_tokens are the request's): why. NONE for a served request. */
    sv_wl_reject reject;
};

typedef enum {
    SV_WL_ITEM_REQUEST = 1, /* a flat request: n_reqs == 1 */
    SV_WL_ITEM_SESSION,     /* an agentic session: n_reqs >= 1 chained calls */
} sv_wl_item_kind;

/* What sv_wl_next yields. Numbering: requests are numbered 0.. in workload order, a session's
 * calls taking consecutive ids in their chain order (call j of a session whose first call is
 * request r is request r + j); the next item continues after the session's last call. `index`
 * numbers items (requests and sessions alike) 0.. in workload order.
 *
 * Ownership: the item owns session_id, model, reqs and every array inside reqs. sv_wl_next
 * clears `out` (sv_wl_item_clear) before filling it, so the arrays live until the next call on
 * any source with the same `out`, or until sv_wl_item_clear. A caller that wants to keep an array
 * steals it: copy the pointer and set the field to NULL; it then frees it with g_free. Zero an
 * item (SV_WL_ITEM_INIT or memset) before its first use. */
typedef struct sv_wl_item {
    sv_wl_item_kind kind;
    uint64_t index;     /* item position, 0.. */
    sv_time arrival_ns; /* flat: the request; session: its first call */
    char *session_id;   /* session: from the line, else "session_<first request id>"; flat: NULL
                           unless the line carries one */
    char *model;        /* optional model name ("model" key / generator cfg), else NULL */
    uint64_t line;      /* 1-based source line, 0 for generated items */
    size_t n_reqs;
    sv_wl_req *reqs;
} sv_wl_item;

#define SV_WL_ITEM_INIT                                                                            \
    {                                                                                              \
        0                                                                                          \
    }

void sv_wl_item_clear(sv_wl_item *item); /* frees what the item owns and zeroes it */

/* ---- sources ---------------------------------------------------------------------------- */

typedef struct sv_wl_source sv_wl_source;

typedef enum {
    SV_WL_FORMAT_AUTO = 0,      /* .csv -> azure; otherwise JSON lines, mooncake when the first
                                   object has "input_length", else llmservingsim */
    SV_WL_FORMAT_LLMSERVINGSIM, /* flat requests and agentic sessions, may be mixed */
    SV_WL_FORMAT_MOONCAKE,      /* timestamp (ms), input_length, output_length, hash_ids */
    SV_WL_FORMAT_AZURE,         /* CSV: TIMESTAMP, ContextTokens, GeneratedTokens */
} sv_wl_format;

/* Zero-initialised = defaults. */
struct sv_wl_open_opts {
    sv_wl_format format;
    gboolean skip_bad_lines; /* skip malformed lines and count them (sv_wl_source_bad_lines)
                                instead of failing; out-of-order arrivals still fail */
    gboolean drop_token_ids; /* do not keep input/output token ids nor hash ids (saves memory
                                when prefix caching is off) */
};

/* Parse a format name: "auto", "llmservingsim" (or "jsonl"), "mooncake", "azure". */
gboolean sv_wl_format_parse(const char *name, sv_wl_format *out, GError **error);

/* Open a trace file. `opts` may be NULL. Fails (SV_WL_ERROR_IO) when the file cannot be read or
 * the format cannot be detected; line errors surface from sv_wl_next. */
sv_wl_source *sv_wl_open(const char *path, const struct sv_wl_open_opts *opts, GError **error);

/* Pull the next item: 1 = *out filled, 0 = end of workload, -1 = error (the error names
 * FILE:LINE for trace lines). After 0 or -1, further calls return the same. */
int sv_wl_next(sv_wl_source *src, sv_wl_item *out, GError **error);

void sv_wl_source_free(sv_wl_source *src); /* accepts NULL */

/* Lines skipped as bad (skip_bad_lines); report it at the end of a run. */
uint64_t sv_wl_source_bad_lines(const sv_wl_source *src);
/* Requests and items yielded so far. */
uint64_t sv_wl_source_requests(const sv_wl_source *src);
uint64_t sv_wl_source_items(const sv_wl_source *src);
/* The format actually read (after AUTO detection); generators report SV_WL_FORMAT_AUTO. */
sv_wl_format sv_wl_source_format(const sv_wl_source *src);

/* ---- replay at a scaled rate (workloads/scale.c, docs/workloads.md "Scaled replay") -------- */

/* A source yielding `inner`'s items with every item's arrival time multiplied by `factor` (> 0,
 * finite; 0.5 = twice the rate), rounded to the nearest ns. Session calls after the first keep
 * their tool times (they are released by the run, not arrivals). Takes `inner` (freed with the
 * wrapper, also on failure). Numbering, lines and bad-line counts are `inner`'s. An arrival scaled
 * past SV_ENGINE_HORIZON is an error naming its line. */
sv_wl_source *sv_wl_scale_new(sv_wl_source *inner, double factor, GError **error);

/* What one pass over a trace finds: items (arrivals: flat requests and sessions' first calls),
 * requests (every call), first and last arrival, lines skipped as bad. */
struct sv_wl_span {
    uint64_t items, requests, bad_lines;
    sv_time first_ns, last_ns;
};
/* Read the whole trace once (O(1) memory, as a run streams it) with the same options the run will
 * use. FALSE with the error the run would meet at that line. */
gboolean sv_wl_scan(const char *path, const struct sv_wl_open_opts *opts, struct sv_wl_span *out,
                    GError **error);
/* The time scale that gives the trace's arrivals a mean rate of `rate_per_s`: the trace's mean
 * rate is (items - 1) / (last - first), one over the mean gap between consecutive arrivals, so
 * the factor is (items - 1) / ((last - first) x rate). Fails (naming `path`) with fewer than two
 * arrivals or all at one time. */
gboolean sv_wl_span_rate_scale(const struct sv_wl_span *span, const char *path, double rate_per_s,
                               double *factor, GError **error);

/* ---- generators ------------------------------------------------------------------------- */

typedef enum {
    SV_WL_ARRIVAL_POISSON = 0, /* exponential gaps, mean 1/rate */
    SV_WL_ARRIVAL_GAMMA,       /* gamma gaps, mean 1/rate, coefficient of variation cv */
    SV_WL_ARRIVAL_FIXED,       /* every 1/rate seconds */
    SV_WL_ARRIVAL_TRACE,       /* gaps resampled from a trace's inter-arrival times, scaled to
                                  mean 1/rate (docs/workloads.md) */
} sv_wl_arrival_kind;

struct sv_wl_arrival {
    sv_wl_arrival_kind kind;
    double rate_per_s; /* > 0 */
    double cv;         /* gamma only, > 0; cv = 1 is Poisson */
    /* trace only: a workload file any sv_wl_open format reads (Azure CSV, JSON lines); its
     * consecutive arrival gaps are drawn uniformly (i.i.d.) and multiplied by one factor so their
     * mean is 1/rate, keeping the trace's burstiness (CV, tail). Borrowed: it must outlive
     * sv_wl_generator_new, which reads the file. */
    const char *trace_path;
};

typedef enum {
    SV_WL_LEN_FIXED = 0,
    SV_WL_LEN_UNIFORM,   /* integer uniform on [lo, hi], both inclusive */
    SV_WL_LEN_NORMAL,    /* rounded to the nearest integer, clamped to >= 1 */
    SV_WL_LEN_EMPIRICAL, /* a column of a CSV file, each row equally likely */
    SV_WL_LEN_QUANTILES, /* inverse CDF, linear between equally spaced quantiles; rounded */
} sv_wl_len_kind;

/* A length distribution. `path` and `column` are owned (g_free; sv_wl_len_clear). */
struct sv_wl_len {
    sv_wl_len_kind kind;
    int64_t value;   /* fixed */
    int64_t lo, hi;  /* uniform */
    double mean, sd; /* normal */
    char *path;      /* empirical: CSV file with a header row */
    char *column;    /* empirical: column name; NULL = num_prefill_tokens for the input length,
                        num_decode_tokens for the output length (length_distributions/) */
    /* quantiles: q[0..n_quantiles-1] at probabilities i / (n_quantiles - 1), nondecreasing,
     * q[0] >= 1; borrowed (a static table), not freed */
    const double *quantiles;
    int n_quantiles;
};
void sv_wl_len_clear(struct sv_wl_len *len);

/* `sharegpt` (docs/workloads.md): lengths as vLLM's and SGLang's ShareGPT samplers draw them
 * (first human turn and its reply, vLLM's is_valid_sequence filter), from a percentile table
 * built into the program (workloads/sharegpt_lengths.inc, made by tools/sharegpt_lengths.c from
 * real ShareGPT requests, Llama-3.1 tokenizer: prompt mean 131, output mean 280 tokens). Input
 * and output are drawn independently. Fills both (previous contents are cleared). */
void sv_wl_len_sharegpt(struct sv_wl_len *input_len, struct sv_wl_len *output_len);

/* The ShareGPT length file of Vidur and Sarathi-Serve in the reference data (30,731 rows, whole
 * conversations as prompts: mean 2,340 in, 439 out; length_distributions/README). */
#define SV_WL_VIDUR_SHAREGPT_LENGTHS                                                               \
    "../shared/traces/length_distributions/sharegpt_8k_filtered_stats_llama2_tokenizer.csv"

/* `vidur-sharegpt`: empirical from SV_WL_VIDUR_SHAREGPT_LENGTHS when that file exists (both
 * sides sample the same row), else normal distributions with that file's moments (see the
 * constants in generator.c). Fills both (previous contents are cleared). */
void sv_wl_len_vidur_sharegpt(struct sv_wl_len *input_len, struct sv_wl_len *output_len);

struct sv_wl_gen_cfg {
    uint64_t seed;    /* root seed of the run */
    const char *name; /* stream name prefix, NULL = "workloads/gen"; streams are
                         "<name>/arrival", "<name>/input_len", "<name>/output_len", and
                         "<name>/rows" for a joint empirical draw */
    uint64_t count;   /* number of requests */
    sv_time start_ns; /* the first arrival is one gap after this */
    struct sv_wl_arrival arrival;
    struct sv_wl_len input_len;
    struct sv_wl_len output_len;
    int64_t max_input_tokens;  /* clamp, 0 = none */
    int64_t max_output_tokens; /* clamp, 0 = none */
    const char *model;         /* copied into every item, may be NULL */
};

/* A synthetic source of `count` flat requests. The config is copied (strings too). Input and
 * output lengths drawn from the same empirical file (same path) come from the same row. */
sv_wl_source *sv_wl_generator_new(const struct sv_wl_gen_cfg *cfg, GError **error);

/* CLI spec strings. Arrival: "poisson" | "gamma:CV" | "fixed" | "trace:PATH" (the rate is
 * separate: `rate`; trace_path then points into `spec`).
 * Length: "N" | "fixed:N" | "uniform:A:B" | "normal:MEAN:SD" | "empirical:PATH[:COLUMN]" |
 * "sharegpt" | "vidur-sharegpt" (is_input picks the prompt or the output side). `out` is
 * cleared first. */
gboolean sv_wl_arrival_parse(const char *spec, double rate_per_s, struct sv_wl_arrival *out,
                             GError **error);
gboolean sv_wl_len_parse(const char *spec, gboolean is_input, struct sv_wl_len *out,
                         GError **error);

G_END_DECLS

#endif
