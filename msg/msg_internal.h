/* msg internals shared by the scheduler (sched.c) and the operation mapper / scheduler (opmap.c).
 */
#ifndef SV_MSG_INTERNAL_H
#define SV_MSG_INTERNAL_H

#include "dag/dag.h"
#include "msg/msg.h"

/* A request inside a serving group: LLMServingSim's Request (serving/core/request.py). */
typedef struct msg_req {
    /* What is handed up when it finishes (hooks.on_req_done), filled as it happens: id,
     * instance, times (first_scheduled / first_token -1 until they happen), tokens, prefix hit at
     * the first admission, preemptions, finished. */
    struct sv_wl_outcome out;
    sv_time recent_end_ns; /* previous token (ITL) */
    int64_t total;         /* prompt + output tokens: the request ends when reached == total */
    int64_t num_computed;  /* vLLM num_computed_tokens (advanced at schedule time) */
    int64_t num_reached;   /* prompt + generated so far (vLLM num_tokens) */
    int64_t prefix_hit;    /* hit found at the latest admission */
    /* Prompt throughput (sv_msg_iter_done.prompt_tokens) counts each prompt token once: the
     * positions below prompt_hwm have been computed at least once, and prompt_credited tokens
     * of the prompt have been counted (the whole prompt once its prefill completed). */
    int64_t prompt_hwm, prompt_credited;
    gboolean admitted_once;
    gboolean is_init;        /* prefill not yet completed (TTFT not recorded) */
    gboolean detached;       /* held by a PD handoff, in neither waiting nor running */
    uint64_t step_mark;      /* == sv_msg.step_seq while it has a share of the step being formed */
    int32_t ph;              /* output placeholders: tokens of uncommitted steps (async) */
    uint32_t chunks_written; /* prefix chunks handed to the tier hierarchy (write-through) */
    uint64_t swap_bytes;     /* KV bytes held in the swap tier while swapped out */
    sv_memtier_kv_seq *seq;
    void *user;
    sv_rng *spec_rng; /* speculative decoding: acceptance draws (spec.c); NULL when off */
    double spec_rate; /* its acceptance rate */
} msg_req;

/* One request's share of the iteration in flight. */
typedef struct {
    msg_req *req;
    int64_t num_new;
    int64_t computed_before;
    int32_t spec; /* draft tokens scheduled after its last token (speculative decoding) */
} msg_slot;

/* A scheduled batch of the single-device path (msg.c): waiting for the GPU, running on it, or
 * done there and waiting for the host to commit it. */
typedef struct {
    GArray *slots; /* msg_slot */
    sv_time start_ns;
    gboolean launched, gpu_done;
    double pim_busy_ns; /* PIM statistics of its launch (msg/pim.c keeps the latest only) */
    uint64_t pim_xfer_bytes;
} msg_batch;

/* The batch scheduler's window on the group (sv_msg_view_*, sched.c). */
struct sv_msg_view {
    sv_msg *m;
    msg_req *head;         /* waiting head whose computed tokens were looked up, or NULL */
    int64_t head_computed; /* its prefix hit / computed history */
    int64_t head_hit;      /* the part found by the prefix lookup this step */
    int64_t head_lower;    /* of head_computed, tokens to load from lower tiers (tiers) */
    struct sv_memtier_hit head_tiers;
};

/* Memory-tier state of a group (offload.c); NULL without tiers. */
typedef struct {
    const struct sv_memtier_route *route;
    uint64_t bytes;
} msg_kv_load;
typedef struct {
    const struct sv_memtier_route *route;
    uint64_t bytes;
    int32_t dev;
    sv_dag_kind kind; /* MEM_STORE (swap-out) or MEM_LOAD (swap-in) */
} msg_swap_xfer;
struct msg_tiers {
    uint64_t token_bytes; /* KV bytes of one token, all layers and ranks */
    int64_t n_layers;
    GArray *loads;  /* msg_kv_load: prefix loads of the step being formed */
    GArray *swaps;  /* msg_swap_xfer: swap-outs / swap-ins of the step being formed */
    GQueue swapped; /* msg_req*: swapped out (vLLM v0), resumed in this order */
    struct sv_msg_tier_stats stats;
    sv_dag_node **layer_gate;      /* [layer]: per-layer prefix loads of the launch being built */
    gboolean weights_off;          /* some weight part of some rank streams (use 1) */
    gboolean kv_off;               /* some layer's live KV is off the device (use 2) */
    uint64_t kv_token_layer_bytes; /* KV of one token in one layer, one rank */
    uint64_t kv_read_bytes, kv_new_bytes; /* per layer and rank, this launch (use 2) */
    /* Expert cache (MoE expert_offload): per rank an LRU of slots x layers keyed layer·E + e. */
    sv_memtier_lru **expert_lru;
    int64_t n_experts;
    int64_t *expert_counts; /* this launch's routing, per expert */
    const struct sv_msg_expert_route_ops *rt;
    void *rt_state;
};

struct sv_msg {
    sv_engine *eng;
    struct sv_msg_cfg cfg;
    struct sv_msg_hooks hooks;
    sv_msg_et_out *et;   /* cfg.et_out (NULL = no ET output) */
    char *et_unit;       /* cfg.et_unit, owned */
    GQueue et_pieces;    /* et_out.c: batches whose set is written when they finish */
    uint64_t et_next_id; /* ET output: the first id of the next DAG (ids unique over the run) */
    GQueue waiting;      /* msg_req*, arrival order; preempted requests go to the head */
    GPtrArray *running;  /* msg_req*, admission order */
    GArray *inflight;    /* msg_slot of the iteration in flight */
    gboolean busy;       /* an iteration is in flight */
    gboolean step_pending;
    sv_time iter_start_ns;
    GArray *start_entries; /* sv_msg_sched_entry scratch for hooks.on_iter_start */
    uint64_t iterations;
    uint64_t launches; /* batches launched (ET set names) */
    uint64_t preemptions;
    uint32_t step_preempted;
    uint64_t step_seq;      /* schedule calls so far (marks requests scheduled in this one) */
    int64_t waiting_tokens; /* sum of reached - computed over the waiting queue */
    /* Batch scheduler policy (sched.c). */
    const struct sv_msg_sched_ops *sched;
    void *sched_state;
    struct sv_msg_limits limits;
    struct sv_msg_view view;
    /* Operation mapper scratch (reused every iteration: no allocation per step). */
    GArray *pf_chunk, *pf_hist, *dec_kv; /* int64_t */
    sv_dag *dag;
    sv_dag_exec *exec;
    GError *error;
    struct msg_par *par;  /* parallel path (opmap.c); NULL on the single-device path */
    GHashTable *detached; /* msg_req* held by PD handoffs (set; freed with the msg) */
    uint64_t tier_bytes;  /* bytes this group booked on the tier fabric (offload.c) */
    struct msg_tiers *tiers;
    struct msg_pim *pim; /* PIM offload / local weight loads (pim.c); NULL when neither */
    uint32_t et_first;   /* first DAG index of the launch being built (ET output) */
    /* The shape of the batch being built (ET output: num_ops and tensor_size of each operator). */
    const struct sv_compute_batch_shape *et_shape;
    /* Engine profile (msg/engine.c): batches scheduled and not yet committed, at most (vLLM's
     * max_concurrent_batches: 2 with async scheduling, else 1; pp_size with pipeline stages), and
     * whether the scheduler gives output placeholders (async scheduling without PP). */
    int32_t queue_cap;
    gboolean placeholders;
    GQueue batches;       /* msg_batch*, launch order (single-device path) */
    GQueue spare_batches; /* msg_batch* committed, for reuse (slots empty) */
    gboolean commit_due;  /* a commit event is scheduled for the head batch (single path) */
    GQueue arriving;      /* msg_req*: through the frontend, not yet at the engine */
    struct sv_msg_spec_stats spec_stats;
    /* The draft passes of the launch being built, with their TP all-reduces (spec.c). */
    struct sv_compute_spec_pass spec_pass[SV_COMPUTE_SPEC_MAX_K];
    int32_t spec_n_pass;
    sv_time spec_draft_ns; /* the draft passes of the launch being built (spec.c) */
    struct msg_afd *afd;   /* attention/FFN disaggregation (afd_run.c); NULL when off */
};

/* sched.c: the length a running request has reached for the scheduler, output placeholders
 * included (capped where no further step may be scheduled). */
int64_t sv_msg__reach(const sv_msg *m, const msg_req *r);

/* sched.c: the batch scheduler. Fills m->inflight; returns the number of requests preempted. */
uint32_t sv_msg__schedule(sv_msg *m);
/* sched.c: commit the in-flight iteration (m->inflight) at `finish` (add_done), as of each slot's
 * own step: a request a later step has scheduled again or preempted meanwhile (async scheduling,
 * pipeline stages) commits what this step computed. Returns prompt / gen tokens. */
void sv_msg__commit(sv_msg *m, sv_time finish, int64_t *prompt_t, int64_t *gen_t);
void sv_msg__req_free(msg_req *r);
/* Layers [begin, end) of pipeline stage `stage`: c->stage_layers when given, else vLLM's split
 * (msg/parallel.c). */
void sv_msg__stage_range(const struct sv_msg_cfg *c, int64_t num_layers, int32_t stage,
                         int64_t *begin, int64_t *end);
/* msg.c: a PREFILL group's request whose prompt completed leaves the running list. */
void sv_msg__pd_detach(sv_msg *m, msg_req *r);
/* msg.c: call hooks.on_prefill_launch for the prompts the launched iteration completes. */
void sv_msg__pd_launched(sv_msg *m);
/* msg.c: free the KV blocks held by queued (transferred) requests; TRUE when any were. */
gboolean sv_msg__pd_unpin_waiting(sv_msg *m);

/* opmap.c: append a node of `kind` on `dev` lasting `dur` to the DAG being built, with a data
 * edge from `parent` (NULL: none). */
sv_dag_node *sv_msg__add_node(sv_msg *m, const char *name, sv_dag_kind kind, int32_t dev,
                              sv_time dur, sv_dag_node *parent);
/* opmap.c: build the iteration DAG for m->inflight and start it on the executor; calls
 * sv_msg__iter_finished(m) from an engine event when the DAG has run. FALSE + error on failure. */
gboolean sv_msg__launch(sv_msg *m, GError **error);
void sv_msg__iter_finished(sv_msg *m);

/* et_out.c: ET output of the serving group (docs/chakra.md "Emitted sets"). launched: the batch
 * [first, node count) of m->dag was just built at launch_ns (run scope writes it now, iteration
 * scope when its nodes are done); node_done: a node of `dag` (m->dag or one retiring) finished;
 * dag_retire: `dag` is about to be freed (writes what is pending of it). */
gboolean sv_msg__et_launched(sv_msg *m, uint32_t first, sv_time launch_ns, GError **error);
void sv_msg__et_node_done(sv_msg *m, const sv_dag *dag, const sv_dag_node *n);
gboolean sv_msg__et_dag_retire(sv_msg *m, const sv_dag *dag, GError **error);
void sv_msg__et_free(sv_msg *m);

/* msg.c: stop the run with `err` (taken); start a step now if the group is idle; schedule the
 * commit event `delay` from now. */
void sv_msg__fail(sv_msg *m, GError *err);
/* msg.c: sv_msg_commit with the PIM statistics of the committed batch's own launch. */
void sv_msg__commit_iter(sv_msg *m, sv_time finish_ns, double pim_busy_ns, uint64_t pim_xfer_bytes);
void sv_msg__kick(sv_msg *m);
void sv_msg__schedule_commit(sv_msg *m, sv_time delay);

/* opmap.c: the parallel path (cluster network, PP, EP, DP; docs/parallelism.md). par_init
 * decides whether the msg takes it (m->par stays NULL otherwise). par_commit commits the oldest
 * finished batch (from the commit event). */
gboolean sv_msg__par_init(sv_msg *m, GError **error);
void sv_msg__par_free(sv_msg *m);
void sv_msg__par_commit(sv_msg *m);
void sv_msg__par_set_comm_tokens(sv_msg *m, int64_t tokens);
uint32_t sv_msg__par_in_flight(const sv_msg *m); /* batches launched and not yet committed */

/* offload.c: memory tiers (docs/memory-tiers.md). */
gboolean sv_msg__tiers_on(const sv_msg *m); /* cfg.tiers.fabric set */
gboolean sv_msg__streams(const sv_msg *m);  /* some weight part of some rank is off-device */
/* Book a transfer on the fabric (or cfg.tiers.xfer); counted in tier_bytes. */
void sv_msg__xfer(sv_msg *m, const struct sv_memtier_route *r, uint64_t bytes, sv_net_done_fn done,
                  void *ctx, uint64_t arg);
/* Executor handler of MEM_LOAD / MEM_STORE nodes built by sv_msg__mem_node (ctx = the msg). */
void sv_msg__mem_handler(sv_dag_exec *ex, sv_dag_node *n, void *ctx);
sv_dag_node *sv_msg__mem_node(sv_msg *m, sv_dag_kind kind, int32_t dev,
                              const struct sv_memtier_route *route, uint64_t bytes,
                              sv_dag_node *parent);
/* Weight streaming of one rank's chain. Parts: 0..L-1 the decoder layers, L the embedding, L+1
 * the head. Before a part's compute nodes are appended after *prev: stream_pre adds its load
 * (NULL when the part is on the NPU; serial: the load joins the chain); after them,
 * stream_post gates the part's first compute node on the load (prefetch). */
struct sv_msg__stream {
    const struct sv_memtier_route *const *routes;          /* [part], NULL = nothing streams */
    sv_dag_node *kv_gate;                                  /* the part's per-layer prefix load */
    const struct sv_memtier_route *const *kv_routes;       /* [layer] live KV tier -> NPU */
    const struct sv_memtier_route *const *kv_store_routes; /* [layer] NPU -> live KV tier */
    sv_dag_node *kv_read;                                  /* this layer's live KV read */
    const struct sv_memtier_route *kv_store;               /* this layer's store route */
    int32_t rank;
    gboolean serial;
    sv_dag_node *last_load; /* previous streamed load */
    sv_dag_node *c1, *c2;   /* compute ends of the previous two streamed parts */
    uint64_t first_id;      /* id of the part's first compute node */
};
void sv_msg__stream_begin(sv_msg *m, struct sv_msg__stream *st, int32_t rank);
void sv_msg__kv_live_bytes(sv_msg *m); /* at launch, from m->inflight */
/* Expert cache: the parallel path's routing of this launch (EP), else the cache routes itself
 * at launch. */
void sv_msg__expert_counts(sv_msg *m, const int64_t *counts);
sv_dag_node *sv_msg__stream_pre(sv_msg *m, struct sv_msg__stream *st, int64_t part, int32_t dev,
                                sv_dag_node **prev);
void sv_msg__stream_post(sv_msg *m, struct sv_msg__stream *st, sv_dag_node *load,
                         sv_dag_node **prev);

/* pim.c: PIM attention offload, sub-batch interleaving, local weight loads (docs/pim.md).
 * pim_launch (at every launch, before the DAG is built) flags the shape's decode attention as
 * off the NPU, splits the batch into sub-batches and prices the PIM nodes; when pim_active, each
 * rank's chain is built by pim_chain with `emit` adding an operator run (add_ops / par_ops). */
gboolean sv_msg__pim_init(sv_msg *m, GError **error);
void sv_msg__pim_free(sv_msg *m);
void sv_msg__pim_launch(sv_msg *m, struct sv_compute_batch_shape *shape);
gboolean sv_msg__pim_active(const sv_msg *m);
void sv_msg__pim_iter_stats(const sv_msg *m, double *busy_ns, uint64_t *xfer_bytes);
typedef sv_dag_node *(*sv_msg__emit_fn)(sv_msg *m, const struct sv_compute_iter_op *ops, int n_ops,
                                        int32_t dev, int layer, void *user, sv_dag_node *prev);
struct sv_msg__chain {
    int32_t dev;
    int64_t layer_begin, layer_end;
    sv_msg__emit_fn emit;
    void *user;
};
sv_dag_node *sv_msg__pim_chain(sv_msg *m, const struct sv_msg__chain *c, sv_dag_node *prev);

gboolean sv_msg__tiers_init(sv_msg *m, GError **error);
void sv_msg__tiers_free(sv_msg *m);
/* Lower-tier prefix lookup after the NPU hit of `npu_hit` tokens (sched.c): returns the end of
 * the hit (>= npu_hit) and its split in `out`. */
int64_t sv_msg__hier_match(sv_msg *m, msg_req *r, int64_t npu_hit, gboolean commit,
                           struct sv_memtier_hit *out);
/* Admission of a request with a lower-tier hit: records it on the request and queues its loads
 * for the next launch. */
void sv_msg__hier_admitted(sv_msg *m, msg_req *r, int64_t npu_hit, int64_t lower,
                           const struct sv_memtier_hit *hit);
/* A chunk or decode step completed up to r->num_computed: write-through of newly full chunks. */
void sv_msg__hier_computed(sv_msg *m, msg_req *r);
/* Swap preemption (vLLM v0; docs/memory-tiers.md use 3). try_swap_out: swap running request r out
 * (already removed from the running list) when the swap tier can hold its blocks: TRUE, it joined
 * the swapped queue; FALSE: recompute it (counted as a fallback when swap mode is on). */
gboolean sv_msg__swap_out(sv_msg *m, msg_req *r);
/* Swap the head of the swapped queue back in with `num_new` tokens scheduled after it: FALSE,
 * nothing changed, when the pool lacks the blocks. */
gboolean sv_msg__swap_in_head(sv_msg *m, int64_t num_new);
/* At launch: the step's prefix loads as DAG nodes. Mode none: returns a LOGICAL join the first
 * node of every stage-0 chain waits for (NULL when no load); mode layer: fills
 * tiers->layer_gate and returns NULL. */
sv_dag_node *sv_msg__kv_loads(sv_msg *m);
gboolean sv_msg__kv_per_layer(const sv_msg *m); /* layer gates set for this launch */
void sv_msg__kv_loads_done(sv_msg *m);          /* after the launch was built */
/* A LOGICAL node on `dev` after a and b (either may be NULL). */
sv_dag_node *sv_msg__join(sv_msg *m, int32_t dev, sv_dag_node *a, sv_dag_node *b);
/* A finished node of an iteration's DAG to the timeline hook (sv_msg_hooks.on_op; nothing for
 * logical, metadata and receive nodes, or without the hook). opmap.c; afd_run.c and afd_group.c
 * report theirs through it too. */
void sv_msg__report_op(sv_msg *m, const sv_dag *dag, const sv_dag_node *n);

/* spec.c: speculative decoding (docs/speculative.md). check: refuse what the group cannot
 * combine with it; req_init: the request's streams and rate (at submit); draft_node: the launch's
 * draft passes as a node on `dev` after `parent` (returns `parent` when the batch drafts nothing);
 * accept: a committed slot with s->spec > 0 draws its accepted drafts, rolls back the rejected
 * ones (num_computed) and returns the tokens it emits (accepted + 1, capped at the output left). */
gboolean sv_msg__spec_check(const sv_msg *m, GError **error);
void sv_msg__spec_req_init(sv_msg *m, msg_req *r);
sv_dag_node *sv_msg__spec_draft_node(sv_msg *m, int32_t dev, sv_dag_node *parent);
int64_t sv_msg__spec_accept(sv_msg *m, msg_req *r, const msg_slot *s);
/* The lookahead the scheduler sees for a decoding request (0 when off or not caught up). */
int64_t sv_msg__spec_lookahead(const sv_msg *m, const msg_req *r);
/* afd_run.c: attention/FFN disaggregation (docs/afd.md "In servesim run"). init validates
 * cfg.afd and sets m->afd (nothing when micro_batches is 0); launch builds the ping-pong DAG of
 * m->inflight (shape: the whole batch's) and runs it as the single-device path runs its DAG. */
gboolean sv_msg__afd_init(sv_msg *m, GError **error);
void sv_msg__afd_free(sv_msg *m);
gboolean sv_msg__afd_launch(sv_msg *m, const struct sv_compute_batch_shape *shape, GError **error);

/* parallel.c: data-parallel groups. */
/* Member `me` of a lock-step group (a DP group; a shared FFN group, afd_group.c) has scheduled
 * m->inflight: mark it ready with its tokens and hold its batch (m->busy), waking the members
 * that are not ready (they join with dummy or empty steps). TRUE when every member is ready and
 * the wave can start; FALSE while some are not, or when m failed (a request that can never be
 * scheduled in an empty engine). */
gboolean sv_msg__wave_join(sv_msg *m, int32_t me, int32_t size, sv_msg **members, gboolean *ready,
                           int32_t *n_ready, int64_t *tokens);
/* afd_group.c: a shared FFN group (docs/afd.md "Several attention instances sharing an FFN
 * group"). join/leave at sv_msg_new / free; step replaces the single path's launch for a member:
 * the wave starts once every member has scheduled, and single_launch (msg.c) queues and launches
 * the scheduled batch of one member whose part of the wave's DAG is built. */
gboolean sv_msg__afd_group_join(sv_msg *m, GError **error);
void sv_msg__afd_group_leave(sv_msg *m);
void sv_msg__afd_group_step(sv_msg *m);
void sv_msg__single_launch(sv_msg *m);
/* afd_run.c's builders, shared with afd_group.c: operators of one side after prev (their TP
 * all-reduce on `group` when tp > 1, each after the device's previous collective *coll), a
 * collective n sequenced after *last (a control edge; docs/afd.md "Collective order"), and a
 * send/recv pair. */
sv_dag_node *sv_msg__afd_ops(sv_msg *m, const struct sv_compute_iter_op *ops, int n, gboolean mlp,
                             gboolean all, int32_t dev, int32_t tp, int32_t group, const char *name,
                             sv_dag_node *prev, sv_dag_node **coll);
void sv_msg__afd_coll_seq(sv_msg *m, sv_dag_node **last, sv_dag_node *n);
sv_dag_node *sv_msg__afd_xfer(sv_msg *m, const char *name, int32_t src, int32_t dst, uint64_t bytes,
                              int32_t tag, sv_dag_node *parent, sv_dag_node *rparent);
void sv_msg__afd_ep_route_member(sv_msg *m, int64_t tokens, int64_t *pairs, int64_t *total);
gboolean sv_msg__dp_join(sv_msg *m, GError **error);
void sv_msg__dp_leave(sv_msg *m);
void sv_msg__dp_step(sv_msg *m);

#endif
