/* Example plugin: a batch scheduler "fcfs_no_chunk". First-come-first-served admission with whole
 * prompts and no preemption: each step every running request computes what it is missing (a
 * decode token, or a whole recomputation); then waiting requests are admitted in queue order, each
 * with its whole prompt, while the token budget, max_num_seqs and the KV pool allow. A running
 * request whose slots do not fit waits for a later step instead of preempting anyone. It uses
 * only the scheduler view (sv_msg_view_*, msg/msg.h). */
#include "planner/plugin.h"

static void schedule(void *state, sv_msg_view *v)
{
    const struct sv_msg_limits *lim = sv_msg_view_limits(v);
    int64_t budget = lim->max_num_batched_tokens;
    for (uint32_t i = 0; i < sv_msg_view_num_running(v); i++) {
        struct sv_msg_req_info r;
        sv_msg_view_running(v, i, &r);
        int64_t need = r.num_reached - r.num_computed;
        if (need <= 0 || need > budget)
            continue;
        if (sv_msg_view_schedule_running(v, i, need))
            budget -= need;
    }
    while (sv_msg_view_num_waiting(v) > 0 &&
           (int64_t)sv_msg_view_num_running(v) < lim->max_num_seqs) {
        struct sv_msg_req_info r;
        sv_msg_view_waiting(v, 0, &r);
        int64_t need = r.num_reached - sv_msg_view_waiting_computed(v);
        /* A prompt larger than the whole budget runs alone, or it never could. */
        if (need > budget &&
            !(sv_msg_view_num_scheduled(v) == 0 && budget == lim->max_num_batched_tokens))
            break;
        if (!sv_msg_view_admit_waiting(v, need))
            break;
        budget -= need;
    }
}

static const struct sv_msg_sched_ops ops = {
    .api_version = SV_REGISTRY_API_VERSION,
    .schedule = schedule,
};

G_MODULE_EXPORT gboolean sv_plugin_register(sv_registry *r, unsigned api_version, GError **error);

G_MODULE_EXPORT gboolean sv_plugin_register(sv_registry *r, unsigned api_version, GError **error)
{
    if (!sv_planner_plugin_check_version(api_version, error))
        return FALSE;
    return sv_registry_add(r, SV_REGISTRY_SCHED, "fcfs_no_chunk", &ops,
                           "examples/plugins/fcfs_no_chunk_sched.c", error);
}
