/* The run loop's observer (planner.h) feeding the output writer. */
#include "planner/planner.h"

static void on_request(void *ctx, const struct sv_planner_req_record *rec)
{
    sv_metrics *m = ctx;
    struct sv_metrics_request r = {
        .request_id = rec->request_id,
        .instance = rec->instance,
        .arrival_ns = rec->arrival_ns,
        .first_scheduled_ns = rec->first_scheduled_ns,
        .first_token_ns = rec->first_token_ns,
        .last_token_ns = rec->last_token_ns,
        .input_tokens = rec->input_tokens,
        .output_tokens = rec->output_tokens,
        .prefix_hit_tokens = rec->prefix_hit_tokens,
        .preemptions = rec->preemptions,
        .finished = TRUE, /* the run loop reports finished requests only */
    };
    GError **slot = sv_metrics_deferred_error(m);
    if (*slot == NULL)
        sv_metrics_request_add(m, &r, slot);
}

static void on_iteration(void *ctx, const struct sv_planner_iter_sample *s)
{
    sv_metrics *m = ctx;
    sv_metrics_tokens(m, s->instance, s->end_ns, s->prompt_tokens, s->gen_tokens);
    sv_metrics_sample(m, s->instance, s->end_ns, (int)s->running, (int)s->waiting,
                      s->kv_usage * 100.0);
}

static void on_token_gap(void *ctx, uint64_t request_id, sv_time t_ns, sv_time gap_ns)
{
    sv_metrics_itl(ctx, gap_ns);
}

static void on_instance(void *ctx, int32_t instance, const char *latency_source)
{
    sv_metrics_set_latency_source(ctx, instance, latency_source);
}

void sv_planner_metrics_observer_init(sv_metrics *m, struct sv_planner_run_observer *obs)
{
    obs->on_request = on_request;
    obs->on_iteration = on_iteration;
    obs->on_token_gap = on_token_gap;
    obs->on_instance = on_instance;
    obs->ctx = m;
}
