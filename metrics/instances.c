/* summary.json's "instances" (one entry per instance, config order) and "pools" (instances
 * grouped by role under disaggregation, else by hardware and model, in order of first
 * appearance). State is O(instances): running, waiting and KV usage are integrated over time as
 * step functions (a sample holds until the instance's next one; 0 before its first), so the
 * means are time averages over the run [0, end], not averages over iterations. */
#include <string.h>

#include "metrics/metrics_internal.h"

#define NS_PER_MS 1e6

struct inst {
    char *role, *model, *hardware;
    int tp, pp;
    uint64_t kv_blocks, kv_block_size, kv_bytes;
    char *ffn_hardware; /* attention/FFN disaggregation: the FFN group (NULL = none) */
    int ffn_npus, micro_batches;
    gboolean ffn_ep;
    struct sv_metrics_instance_info limits; /* has_limits and the limits (engine owned) */
    /* step functions: the last sample and the integral up to it */
    sv_time last_t;
    int running, waiting;
    double kv;                                  /* fraction */
    double running_area, waiting_area, kv_area; /* value x ns */
    int running_max, waiting_max;
    double kv_peak;
    uint64_t iterations;
    int64_t prompt_tokens, gen_tokens;
    uint64_t served, prefills, queued; /* finished requests: output from here, prompt done here */
    double queue_ns_sum;               /* over the requests whose prompt this instance took */
};

struct sv_metrics__insts {
    int n;
    gboolean pd;
    struct inst *v;
};

sv_metrics__insts *sv_metrics__insts_new(int n_instances, gboolean pd)
{
    sv_metrics__insts *s = g_new0(sv_metrics__insts, 1);
    s->n = n_instances;
    s->pd = pd;
    s->v = g_new0(struct inst, (size_t)n_instances);
    return s;
}

void sv_metrics__insts_free(sv_metrics__insts *s)
{
    if (s == NULL)
        return;
    for (int i = 0; i < s->n; i++) {
        g_free(s->v[i].role);
        g_free(s->v[i].model);
        g_free(s->v[i].hardware);
        g_free(s->v[i].ffn_hardware);
        g_free((char *)s->v[i].limits.engine);
    }
    g_free(s->v);
    g_free(s);
}

void sv_metrics__insts_set_info(sv_metrics__insts *s, int i,
                                const struct sv_metrics_instance_info *info)
{
    SV_ASSERT(i >= 0 && i < s->n);
    struct inst *x = &s->v[i];
    g_free(x->role);
    g_free(x->model);
    g_free(x->hardware);
    x->role = g_strdup(info->role);
    x->model = g_strdup(info->model);
    x->hardware = g_strdup(info->hardware);
    x->tp = info->tp;
    x->pp = info->pp;
    x->kv_blocks = info->kv_blocks;
    x->kv_block_size = info->kv_block_size;
    x->kv_bytes = info->kv_bytes;
    g_free(x->ffn_hardware);
    x->ffn_hardware = info->ffn_npus > 0 ? g_strdup(info->ffn_hardware) : NULL;
    x->ffn_npus = info->ffn_npus;
    x->micro_batches = info->micro_batches;
    x->ffn_ep = info->ffn_ep;
    g_free((char *)x->limits.engine);
    x->limits = (struct sv_metrics_instance_info){0};
    if (info->has_limits) {
        x->limits = *info;
        x->limits.role = x->limits.model = x->limits.hardware = x->limits.ffn_hardware = NULL;
        x->limits.engine = g_strdup(info->engine);
    }
}

gboolean sv_metrics__insts_get_info(const sv_metrics__insts *s, int i,
                                    struct sv_metrics_instance_info *out)
{
    if (!s || i < 0 || i >= s->n || !s->v[i].role)
        return FALSE;
    const struct inst *x = &s->v[i];
    *out = x->limits;
    out->role = x->role;
    out->model = x->model;
    out->hardware = x->hardware;
    out->tp = x->tp;
    out->pp = x->pp;
    out->kv_blocks = x->kv_blocks;
    out->kv_block_size = x->kv_block_size;
    out->kv_bytes = x->kv_bytes;
    out->ffn_hardware = x->ffn_hardware;
    out->ffn_npus = x->ffn_npus;
    out->micro_batches = x->micro_batches;
    out->ffn_ep = x->ffn_ep;
    return TRUE;
}

static void advance(struct inst *x, sv_time t)
{
    if (t <= x->last_t)
        return;
    double dt = (double)(t - x->last_t);
    x->running_area += (double)x->running * dt;
    x->waiting_area += (double)x->waiting * dt;
    x->kv_area += x->kv * dt;
    x->last_t = t;
}

void sv_metrics__insts_sample(sv_metrics__insts *s, int i, sv_time t, int running, int waiting,
                              double kv_fraction)
{
    SV_ASSERT(i >= 0 && i < s->n);
    struct inst *x = &s->v[i];
    advance(x, t);
    x->running = running;
    x->waiting = waiting;
    x->kv = kv_fraction;
    x->running_max = MAX(x->running_max, running);
    x->waiting_max = MAX(x->waiting_max, waiting);
    x->kv_peak = MAX(x->kv_peak, kv_fraction);
    x->iterations++;
}

void sv_metrics__insts_tokens(sv_metrics__insts *s, int i, int64_t prompt, int64_t gen)
{
    SV_ASSERT(i >= 0 && i < s->n);
    s->v[i].prompt_tokens += prompt;
    s->v[i].gen_tokens += gen;
}

void sv_metrics__insts_request(sv_metrics__insts *s, const struct sv_wl_outcome *r)
{
    if (!r->finished)
        return;
    if (r->instance >= 0 && r->instance < s->n)
        s->v[r->instance].served++;
    int32_t p = r->prefill_instance >= 0 ? r->prefill_instance : r->instance;
    if (p < 0 || p >= s->n)
        return;
    s->v[p].prefills++;
    if (r->first_scheduled_ns >= 0) {
        s->v[p].queued++;
        s->v[p].queue_ns_sum += (double)(r->first_scheduled_ns - r->arrival_ns);
    }
}

/* The figures an instance and a pool share; a pool's are sums (capacities, counts, tokens, the
 * time-mean running and waiting: the mean of a sum is the sum of the means), its KV usage is the
 * pool's (used blocks over the pool's blocks: the block-weighted mean of its instances'), its
 * maxima and KV peak the largest of its instances'. */
static void put_figures(JsonBuilder *b, const struct inst *x, double end_ns, gboolean capacity)
{
    if (capacity) {
        sv_metrics__put_int(b, "kv_blocks", (int64_t)x->kv_blocks);
        sv_metrics__put_int(b, "kv_block_size", (int64_t)x->kv_block_size);
        sv_metrics__put_int(b, "kv_tokens", (int64_t)(x->kv_blocks * x->kv_block_size));
        sv_metrics__put_int(b, "kv_bytes", (int64_t)x->kv_bytes);
    }
    sv_metrics__put_double(b, "kv_usage_peak_pct", x->kv_peak * 100.0);
    sv_metrics__put_double(b, "kv_usage_mean_pct", end_ns > 0 ? x->kv_area / end_ns * 100.0 : 0.0);
    sv_metrics__put_double(b, "running_mean", end_ns > 0 ? x->running_area / end_ns : 0.0);
    sv_metrics__put_int(b, "running_max", x->running_max);
    sv_metrics__put_double(b, "waiting_mean", end_ns > 0 ? x->waiting_area / end_ns : 0.0);
    sv_metrics__put_int(b, "waiting_max", x->waiting_max);
    sv_metrics__put_double(b, "queue_ms_mean",
                           x->queued ? x->queue_ns_sum / (double)x->queued / NS_PER_MS : 0);
    sv_metrics__put_int(b, "requests_served", (int64_t)x->served);
    sv_metrics__put_int(b, "prefills", (int64_t)x->prefills);
    sv_metrics__put_int(b, "input_tokens", x->prompt_tokens);
    sv_metrics__put_int(b, "output_tokens", x->gen_tokens);
    sv_metrics__put_int(b, "iterations", (int64_t)x->iterations);
}

static gboolean same_pool(const sv_metrics__insts *s, const struct inst *a, const struct inst *b)
{
    if (s->pd)
        return g_strcmp0(a->role, b->role) == 0;
    return g_strcmp0(a->hardware, b->hardware) == 0 && g_strcmp0(a->model, b->model) == 0;
}

void sv_metrics__insts_json(JsonBuilder *b, sv_metrics__insts *s, sv_time end_ns)
{
    for (int i = 0; i < s->n; i++)
        advance(&s->v[i], end_ns);
    double end = (double)end_ns;
    json_builder_set_member_name(b, "instances");
    json_builder_begin_array(b);
    for (int i = 0; i < s->n; i++) {
        const struct inst *x = &s->v[i];
        json_builder_begin_object(b);
        sv_metrics__put_int(b, "id", i);
        sv_metrics__put_str(b, "role", x->role);
        sv_metrics__put_str(b, "model", x->model);
        sv_metrics__put_str(b, "hardware", x->hardware);
        sv_metrics__put_int(b, "tp", x->tp);
        sv_metrics__put_int(b, "pp", x->pp);
        put_figures(b, x, end, TRUE);
        if (x->limits.has_limits) { /* resolved (struct sv_planner_instance_limits) */
            sv_metrics__put_str(b, "engine", x->limits.engine);
            sv_metrics__put_int(b, "max_num_seqs", x->limits.max_num_seqs);
            sv_metrics__put_int(b, "max_num_batched_tokens", x->limits.max_num_batched_tokens);
            sv_metrics__put_int(b, "long_prefill_token_threshold",
                                x->limits.long_prefill_token_threshold);
            sv_metrics__put_int(b, "max_model_len", x->limits.max_model_len);
            json_builder_set_member_name(b, "enable_chunked_prefill");
            json_builder_add_boolean_value(b, x->limits.enable_chunked_prefill);
            json_builder_set_member_name(b, "enable_prefix_caching");
            json_builder_add_boolean_value(b, x->limits.enable_prefix_caching);
        }
        if (x->ffn_npus > 0) { /* attention/FFN disaggregation (docs/afd.md) */
            json_builder_set_member_name(b, "afd");
            json_builder_begin_object(b);
            sv_metrics__put_str(b, "ffn_hardware", x->ffn_hardware);
            sv_metrics__put_int(b, "ffn_npus", x->ffn_npus);
            sv_metrics__put_int(b, "micro_batches", x->micro_batches);
            sv_metrics__put_str(b, "ffn_parallel", x->ffn_ep ? "ep" : "tp");
            json_builder_end_object(b);
        }
        json_builder_end_object(b);
    }
    json_builder_end_array(b);

    json_builder_set_member_name(b, "pools");
    json_builder_begin_array(b);
    gboolean *done = g_new0(gboolean, (size_t)s->n);
    for (int i = 0; i < s->n; i++) {
        if (done[i])
            continue;
        struct inst sum = {0};
        double kv_used_area = 0; /* blocks x ns */
        uint64_t kv_tokens = 0;  /* block sizes may differ between instances */
        json_builder_begin_object(b);
        if (s->pd)
            sv_metrics__put_str(b, "role", s->v[i].role);
        else {
            sv_metrics__put_str(b, "hardware", s->v[i].hardware);
            sv_metrics__put_str(b, "model", s->v[i].model);
        }
        json_builder_set_member_name(b, "instances");
        json_builder_begin_array(b);
        int count = 0;
        for (int j = i; j < s->n; j++) {
            const struct inst *x = &s->v[j];
            if (done[j] || !same_pool(s, &s->v[i], x))
                continue;
            done[j] = TRUE;
            count++;
            json_builder_add_int_value(b, j);
            sum.kv_blocks += x->kv_blocks;
            sum.kv_bytes += x->kv_bytes;
            kv_tokens += x->kv_blocks * x->kv_block_size;
            kv_used_area += x->kv_area * (double)x->kv_blocks;
            sum.kv_peak = MAX(sum.kv_peak, x->kv_peak);
            sum.running_area += x->running_area;
            sum.waiting_area += x->waiting_area;
            sum.running_max = MAX(sum.running_max, x->running_max);
            sum.waiting_max = MAX(sum.waiting_max, x->waiting_max);
            sum.queued += x->queued;
            sum.queue_ns_sum += x->queue_ns_sum;
            sum.served += x->served;
            sum.prefills += x->prefills;
            sum.prompt_tokens += x->prompt_tokens;
            sum.gen_tokens += x->gen_tokens;
            sum.iterations += x->iterations;
        }
        json_builder_end_array(b);
        sv_metrics__put_int(b, "n_instances", count);
        sum.kv_area = sum.kv_blocks ? kv_used_area / (double)sum.kv_blocks : 0;
        sv_metrics__put_int(b, "kv_blocks", (int64_t)sum.kv_blocks);
        sv_metrics__put_int(b, "kv_tokens", (int64_t)kv_tokens);
        sv_metrics__put_int(b, "kv_bytes", (int64_t)sum.kv_bytes);
        put_figures(b, &sum, end, FALSE);
        json_builder_end_object(b);
    }
    g_free(done);
    json_builder_end_array(b);
}
