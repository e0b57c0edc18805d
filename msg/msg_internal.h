/* msg internals shared by the scheduler (sched.c) and the operation mapper / scheduler (opmap.c).
 */
#ifndef SV_MSG_INTERNAL_H
#define SV_MSG_INTERNAL_H

#include "dag/dag.h"
#include "msg/msg.h"

/* A request inside a serving group: LLMServingSim's Request (serving/core/request.py). */
typedef struct msg_req {
    uint64_t id;
    sv_time arrival_ns;
    sv_time first_sched_ns;   /* -1 until first scheduled */
    sv_time first_token_ns;   /* -1 until the prefill completes */
    sv_time recent_end_ns;    /* previous token (ITL) */
    int64_t input;            /* prompt tokens */
    int64_t total;            /* prompt + output tokens: the request ends when reached == total */
    int64_t num_computed;     /* vLLM num_computed_tokens (advanced at schedule time) */
    int64_t num_reached;      /* prompt + generated so far (vLLM num_tokens) */
    int64_t prefix_hit;       /* hit found at the latest admission */
    int64_t prefix_hit_first; /* hit found at the first admission (record) */
    gboolean admitted_once;
    gboolean is_init; /* prefill not yet completed (TTFT not recorded) */
    gboolean finished;
    uint32_t preemptions;
    sv_kv_seq *seq;
    void *user;
} msg_req;

/* One request's share of the iteration in flight. */
typedef struct {
    msg_req *req;
    int64_t num_new;
    int64_t computed_before;
} msg_slot;

struct sv_msg {
    sv_engine *eng;
    struct sv_msg_cfg cfg;
    struct sv_msg_hooks hooks;
    char *emit_et_dir;
    GQueue waiting;     /* msg_req*, arrival order; preempted requests go to the head */
    GPtrArray *running; /* msg_req*, admission order */
    GArray *inflight;   /* msg_slot of the iteration in flight */
    gboolean busy;      /* an iteration is in flight */
    gboolean step_pending;
    sv_time iter_start_ns;
    uint64_t iterations;
    uint64_t preemptions;
    uint32_t step_preempted;
    /* Operation mapper scratch (reused every iteration: no allocation per step). */
    GArray *pf_chunk, *pf_hist, *dec_kv; /* int64_t */
    sv_dag *dag;
    sv_dag_exec *exec;
    GError *error;
};

/* sched.c: the batch scheduler. Fills m->inflight; returns the number of requests preempted. */
uint32_t sv_msg__schedule(sv_msg *m);
/* sched.c: commit the in-flight iteration at `finish` (add_done). Returns prompt / gen tokens. */
void sv_msg__commit(sv_msg *m, sv_time finish, int64_t *prompt_t, int64_t *gen_t);
void sv_msg__req_free(msg_req *r);

/* opmap.c: build the iteration DAG for m->inflight and start it on the executor; calls
 * sv_msg__iter_finished(m) from an engine event when the DAG has run. FALSE + error on failure. */
gboolean sv_msg__launch(sv_msg *m, GError **error);
void sv_msg__iter_finished(sv_msg *m);

#endif
