/* servesim msg: one model serving group (an instance): request queue, batch scheduler, KV block
 * manager binding, operation mapper and operation scheduler.
 *
 * Each engine step the batch scheduler picks the requests and token counts of the next iteration
 * (vLLM v1 semantics as LLMServingSim's serving/core/scheduler.py implements them, or
 * TokenSim-style static / dynamic batching); the operation mapper turns the batch into an iteration
 * DAG whose node durations come from compute/ (one latency lookup per operator for the whole batch,
 * VALIDATION_NOTES items 1-3); the DAG runs on the dag executor in process, and when it finishes
 * the scheduler commits the iteration (first tokens, decode tokens, finished requests:
 * LLMServingSim's Scheduler.add_done). docs/serving.md describes the model. */
#ifndef SV_MSG_H
#define SV_MSG_H

#include "compute/compute.h"
#include "core/core.h"
#include "memory-tier/kvcache.h"

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

#define SV_MSG_ERROR (sv_msg_error_quark())
GQuark sv_msg_error_quark(void);
typedef enum {
    SV_MSG_ERROR_INVALID, /* bad configuration value */
    SV_MSG_ERROR_NOFIT,   /* a request can never fit in the KV pool (the run cannot finish) */
    SV_MSG_ERROR_IO,      /* --emit-et output cannot be written */
} sv_msg_error_code;

typedef enum {
    SV_MSG_SCHED_VLLM = 0, /* vLLM v1 continuous batching with chunked prefill */
    SV_MSG_SCHED_STATIC,   /* static batching: a batch runs to completion before the next forms */
    SV_MSG_SCHED_DYNAMIC,  /* dynamic (iteration-level) batching, whole prompts, no chunking */
} sv_msg_sched_kind;

/* "vllm", "static", "dynamic". */
gboolean sv_msg_sched_parse(const char *name, sv_msg_sched_kind *out, GError **error);
const char *sv_msg_sched_name(sv_msg_sched_kind kind);

/* vLLM v1 engine defaults (vllm/config/scheduler.py, v0.19.0; LLMServingSim's CLI defaults). */
#define SV_MSG_DEFAULT_MAX_NUM_SEQS 128
#define SV_MSG_DEFAULT_MAX_NUM_BATCHED_TOKENS 2048
#define SV_MSG_DEFAULT_BLOCK_SIZE 16

struct sv_msg_cfg {
    int32_t instance; /* instance index (records, ET file names) */
    sv_msg_sched_kind scheduler;
    int64_t max_num_seqs;                 /* > 0 */
    int64_t max_num_batched_tokens;       /* > 0 */
    int64_t long_prefill_token_threshold; /* 0 = no per-request chunk cap */
    gboolean enable_chunked_prefill;
    gboolean reserve_full_isl; /* admit only when the whole sequence fits (vLLM default on) */
    /* Borrowed, must outlive the msg. */
    sv_kv_manager *kv;
    sv_latency *lat;
    int32_t first_device; /* device id of rank 0 (DAG nodes, ET files) */
    int32_t num_devices;  /* TP ranks of this instance (>= 1) */
    /* TP all-reduce after o_proj / down_proj when num_devices > 1: a ring over this link
     * (ASTRA-sim units: GB/s = 2^30 B per 1e9 ns; latency per hop in ns). VALIDATION_NOTES 6. */
    double link_bw_gbps;
    double link_latency_ns;
    /* When set, each iteration DAG is also written as Chakra ET:
     * <emit_et_dir>/inst<I>_iter<N>.<device>.et. The DAG is then built per layer and operator. */
    const char *emit_et_dir;
    /* Tests: never start iterations from the engine; drive with sv_msg_schedule_step/commit. */
    gboolean manual;
};

/* A request as the serving group sees it. Token ids are read during sv_msg_submit only. */
struct sv_msg_req_cfg {
    uint64_t request_id;
    sv_time arrival_ns;
    int64_t input_tokens;
    int64_t output_tokens;
    const uint32_t *input_tok_ids;
    size_t n_input_tok_ids;
    const uint32_t *output_tok_ids;
    size_t n_output_tok_ids;
    const uint64_t *hash_ids;
    size_t n_hash_ids;
    uint32_t hash_block_tokens;
    void *user; /* caller's tag, returned in the record */
};

/* What is known about a request when it finishes (times in ns of simulated time). */
struct sv_msg_req_done {
    uint64_t request_id;
    int32_t instance;
    sv_time arrival_ns;
    sv_time first_scheduled_ns;
    sv_time first_token_ns;
    sv_time last_token_ns;
    int64_t input_tokens;
    int64_t output_tokens;
    int64_t prefix_hit_tokens; /* tokens found in the prefix cache at first admission */
    uint32_t preemptions;
    void *user;
};

/* One committed iteration. */
struct sv_msg_iter_done {
    int32_t instance;
    uint64_t iteration;
    sv_time start_ns;
    sv_time end_ns;
    int64_t prompt_tokens; /* prompt tokens completed (incl. prefix hits at prefill completion) */
    int64_t gen_tokens;    /* output tokens produced */
    int64_t scheduled_tokens;
    uint32_t n_prefill;
    uint32_t n_decode;
    uint32_t running; /* after the commit */
    uint32_t waiting;
    double kv_usage; /* used blocks / blocks, after the commit */
};

/* Callbacks (any may be NULL). on_token is called for each output token after the first, with
 * the gap since the previous one (ITL); on_req_done after a request's last token. */
struct sv_msg_hooks {
    void (*on_token)(void *ctx, uint64_t request_id, int32_t instance, sv_time t_ns,
                     sv_time gap_ns);
    void (*on_req_done)(void *ctx, const struct sv_msg_req_done *done);
    void (*on_iter_done)(void *ctx, const struct sv_msg_iter_done *it);
    void *ctx;
};

typedef struct sv_msg sv_msg;

sv_msg *sv_msg_new(sv_engine *eng, const struct sv_msg_cfg *cfg, const struct sv_msg_hooks *hooks,
                   GError **error);
void sv_msg_free(sv_msg *msg); /* accepts NULL */

/* Queue an arrived request (arrival_ns <= now). The group starts an iteration at the current time
 * if it is idle (after every event already scheduled for this instant at lower priority, so
 * simultaneous arrivals join the same step). Fails when the request can never fit in the pool. */
gboolean sv_msg_submit(sv_msg *msg, const struct sv_msg_req_cfg *req, GError **error);

uint32_t sv_msg_num_running(const sv_msg *msg);
uint32_t sv_msg_num_waiting(const sv_msg *msg);
gboolean sv_msg_idle(const sv_msg *msg); /* no request queued, running, or in flight */
uint64_t sv_msg_num_iterations(const sv_msg *msg);
uint64_t sv_msg_num_preemptions(const sv_msg *msg);
sv_kv_manager *sv_msg_kv(const sv_msg *msg);
/* Error raised inside an event (ET write failure); NULL when none. Owned by the msg. */
const GError *sv_msg_error(const sv_msg *msg);

/* ---- scheduler core, exposed for unit tests and the operation mapper ---------------------- */

/* One request's share of a scheduled iteration. */
struct sv_msg_sched_entry {
    uint64_t request_id;
    int64_t num_new;         /* tokens computed this step */
    int64_t computed_before; /* KV history before the step */
};

/* Run the batch scheduler once at the current time without executing the iteration: fills
 * `out` (caller-allocated GArray of sv_msg_sched_entry) and returns how many requests were
 * preempted in this step. The iteration is left in flight; sv_msg_commit() completes it at
 * `finish_ns` as if it had taken that long. For tests only: never mixed with the engine-driven
 * loop on one msg (set cfg.manual). */
uint32_t sv_msg_schedule_step(sv_msg *msg, GArray *out);
void sv_msg_commit(sv_msg *msg, sv_time finish_ns);

G_END_DECLS

#endif
