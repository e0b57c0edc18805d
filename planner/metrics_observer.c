/* The run loop's observer (planner.h) feeding the output writer. */
#include "planner/planner.h"

static void on_request(void *ctx, const struct sv_wl_outcome *rec)
{
    sv_metrics *m = ctx;
    GError **slot = sv_metrics_deferred_error(m);
    if (*slot == NULL)
        sv_metrics_request_add(m, rec, slot);
}

static void on_iteration(void *ctx, const struct sv_msg_iter_done *it)
{
    sv_metrics *m = ctx;
    sv_metrics_tokens(m, it->instance, it->end_ns, it->prompt_tokens, it->gen_tokens);
    sv_metrics_sample(m, it->instance, it->end_ns, (int)it->running, (int)it->waiting,
                      it->kv_usage * 100.0);
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
