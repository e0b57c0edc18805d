/* Parallelism helpers of a serving group: the pipeline stage split, expert placement and
 * per-rank MoE load, the built-in expert routing policies, and data-parallel groups (waves).
 * docs/parallelism.md describes the model and its sources. */
#include "msg/msg_internal.h"

#include <math.h>
#include <string.h>

/* ---- pipeline split ------------------------------------------------------------------------ */

void sv_msg_pp_split(int64_t num_layers, int32_t pp_size, int32_t stage, int64_t *begin,
                     int64_t *end)
{
    SV_ASSERT(pp_size >= 1 && stage >= 0 && stage < pp_size && num_layers >= 0);
    /* vllm/distributed/utils.py get_pp_indices: partitions[-i] += 1 for i in 2..rem+1. */
    int64_t per = num_layers / pp_size;
    int64_t rem = num_layers % pp_size;
    int64_t b = 0;
    for (int32_t s = 0; s <= stage; s++) {
        int64_t n = per;
        /* stage s gets an extra layer when its distance from the end, pp - s, is in 2..rem+1 */
        int64_t from_end = pp_size - s;
        if (from_end >= 2 && from_end <= rem + 1)
            n++;
        if (s == stage) {
            *begin = b;
            *end = b + n;
            return;
        }
        b += n;
    }
}

void sv_msg__stage_range(const struct sv_msg_cfg *c, int64_t num_layers, int32_t stage,
                         int64_t *begin, int64_t *end)
{
    int32_t pp = c->pp_size > 1 ? c->pp_size : 1;
    if (!c->stage_layers) {
        sv_msg_pp_split(num_layers, pp, stage, begin, end);
        return;
    }
    /* An explicit split (instances[].stages[].layers), checked by the planner. */
    int64_t b = 0;
    for (int32_t s = 0; s < stage; s++)
        b += c->stage_layers[s];
    *begin = b;
    *end = b + c->stage_layers[stage];
    SV_ASSERT(*end <= num_layers);
}

/* ---- experts -------------------------------------------------------------------------------- */

int32_t sv_msg_expert_owner(int32_t expert, int32_t ep_size, int32_t n_experts)
{
    int64_t r = (int64_t)expert * ep_size / n_experts;
    return (int32_t)(r < ep_size - 1 ? r : ep_size - 1);
}

void sv_msg_moe_rank_load(const int64_t *counts, int32_t n_experts, int32_t ep_size, int32_t top_k,
                          struct sv_msg_moe_rank *out)
{
    memset(out, 0, sizeof *out * (size_t)ep_size);
    for (int32_t e = 0; e < n_experts; e++) {
        struct sv_msg_moe_rank *r = &out[sv_msg_expert_owner(e, ep_size, n_experts)];
        r->pairs += counts[e];
        if (counts[e] > 0)
            r->activated++;
    }
    int64_t k = top_k > 0 ? top_k : 1;
    for (int32_t i = 0; i < ep_size; i++)
        out[i].local_tokens = (out[i].pairs + k - 1) / k;
}

gboolean sv_msg_moe_comm_parse(const char *name, sv_msg_moe_comm *out, GError **error)
{
    if (g_ascii_strcasecmp(name, "allgather_reducescatter") == 0 ||
        g_ascii_strcasecmp(name, "agrs") == 0) {
        *out = SV_MSG_MOE_ALLGATHER_RS;
        return TRUE;
    }
    if (g_ascii_strcasecmp(name, "alltoall") == 0 || g_ascii_strcasecmp(name, "all_to_all") == 0) {
        *out = SV_MSG_MOE_ALLTOALL;
        return TRUE;
    }
    g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                "unknown MoE exchange '%s' (known: allgather_reducescatter, alltoall)", name);
    return FALSE;
}

/* ---- the MoE exchange ------------------------------------------------------------------------
 *
 * vLLM 0.19 with --enable-expert-parallel (docs/parallelism.md "The MoE exchange"):
 * - Without data parallelism (ParallelConfig.use_all2all is false) nothing is dispatched: every
 *   TP rank holds the batch, runs it through its own experts and the MoE output is all-reduced
 *   over the TP group (FusedMoE reduce_results), T x hidden x bytes.
 * - With DP, vLLM's default `allgather_reducescatter` backend (AgRsAll2AllManager): dispatch =
 *   all_gatherv of the hidden states and the router logits (dispatch_router_logits, both in the
 *   model dtype: (hidden + experts) x bytes per token), combine = reduce_scatterv of the expert
 *   outputs (hidden x bytes per token). In ASTRA-sim's terms the all-gather's comm_size is the
 *   rank's own chunk and the reduce-scatter's the whole gathered buffer, n x chunk: each rank
 *   receives and sends (n - 1) chunks in both, as the physical exchange does. (LLMServingSim's
 *   trace_generator passes the member's token count as the total of both, which under-sizes
 *   each by n; it calibrates its link_bw with that.)
 * - With DP and TP > 1 the MoE input is sequence parallel (ParallelConfig
 *   .use_sequence_parallel_moe): each of a member's epm ranks in the EP group dispatches
 *   ceil(T / epm) tokens (sequence_parallel_chunk pads to a multiple), and after the combine the
 *   TP group all-gathers those chunks back (tensor_model_parallel_all_gather). Where one EP rank
 *   spans k = tp / epm TP ranks (its experts sharded over them: LLMServingSim's EP on the DP
 *   dimension, not a vLLM layout), their partial sums are all-reduced over the TP group instead,
 *   T x hidden x bytes (exact for epm = 1; an upper bound otherwise).
 * - The `alltoall` exchange (DeepEP-style dispatch): each token goes once to every EP rank that
 *   holds one of its top-k experts, so a rank sends each peer its tokens x P(hit), with
 *   P(hit) = 1 - (1 - 1/n)^k for routing spread evenly over the ranks (LLMServingSim
 *   gate_function _balanced_route_ep); the combine returns the same rows. The closed form, not
 *   this step's routing, so that every member issues the same size (members route with their
 *   own streams). */
void sv_msg_moe_xchg_plan(const struct sv_msg_moe_xchg_req *q, struct sv_msg_moe_xchg *out)
{
    SV_ASSERT(q->tokens >= 1 && q->dp_size >= 1 && q->tp_size >= 1 && q->ep_size >= 1 &&
              q->ep_size % q->dp_size == 0 && q->top_k >= 1);
    memset(out, 0, sizeof *out);
    uint64_t b = (uint64_t)q->dtype_bytes, h = (uint64_t)q->hidden_size;
    uint64_t full = (uint64_t)q->tokens * h * b;
    out->tp_type = SV_SYS_ALL_REDUCE;
    if (q->dp_size == 1 || q->ep_size == 1) {
        if (q->tp_size > 1)
            out->tp_bytes = full;
        return;
    }
    int64_t epm = q->ep_size / q->dp_size; /* EP-group ranks of one member */
    SV_ASSERT(q->tp_size % epm == 0);
    int64_t k = q->tp_size / epm; /* TP ranks per EP rank */
    int64_t ts = (q->tokens + epm - 1) / epm;
    uint64_t n = (uint64_t)q->ep_size;
    out->src_tokens = ts;
    if (q->comm == SV_MSG_MOE_ALLTOALL) {
        double hit = 1.0 - pow(1.0 - 1.0 / (double)n, (double)q->top_k);
        uint64_t per_peer = (uint64_t)ceil((double)ts * hit - 1e-9);
        if (per_peer < 1)
            per_peer = 1;
        out->dispatch_type = out->combine_type = SV_SYS_ALL_TO_ALL;
        out->dispatch_bytes = out->combine_bytes = n * per_peer * h * b;
    } else {
        out->dispatch_type = SV_SYS_ALL_GATHER;
        out->dispatch_bytes = (uint64_t)ts * (h + (uint64_t)q->num_experts) * b;
        out->combine_type = SV_SYS_REDUCE_SCATTER;
        out->combine_bytes = n * (uint64_t)ts * h * b;
    }
    if (q->tp_size > 1) {
        if (k == 1) {
            out->tp_type = SV_SYS_ALL_GATHER;
            out->tp_bytes = (uint64_t)ts * h * b;
        } else {
            out->tp_bytes = full;
        }
    }
}

/* ---- expert routing: per-expert weights ("hist") ------------------------------------------
 *
 * balanced, round_robin, random and zipf are msg/expert.c's registry built-ins; this adds a
 * policy drawing each token's top_k distinct experts by given weights (an expert-load histogram
 * measured on a trace, e.g. vLLM's expert-load statistics), sequentially without replacement as
 * torch.topk selects distinct experts. */

typedef struct {
    sv_rng *rng;
    GArray *weights; /* double per expert (repeated cyclically when shorter) */
    GArray *tmp;     /* double, per call */
} hist_state;

static void hist_destroy(void *p)
{
    hist_state *st = p;
    if (!st)
        return;
    g_array_free(st->weights, TRUE);
    g_array_free(st->tmp, TRUE);
    g_free(st);
}

/* "hist:W0,W1,..." or "hist:@FILE": a file of per-expert loads (an expert-load histogram exported
 * from a routing trace) separated by commas, spaces or newlines; '#' starts a comment line. */
static void *hist_create(const char *param, sv_rng *rng, GError **error)
{
    g_autofree char *text = NULL;
    if (param && param[0] == '@') {
        GError *local = NULL;
        if (!g_file_get_contents(param + 1, &text, NULL, &local)) {
            g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                        "expert routing hist: cannot read %s: %s", param + 1, local->message);
            g_error_free(local);
            return NULL;
        }
        g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
        for (int i = 0; lines[i]; i++) {
            if (g_str_has_prefix(g_strstrip(lines[i]), "#"))
                lines[i][0] = '\0';
        }
        g_free(text);
        text = g_strjoinv(",", lines);
        g_strdelimit(text, " \t\r", ',');
        /* collapse empty fields left by blank lines and repeated separators */
        char *dst = text;
        for (char *src = text; *src; src++) {
            if (*src == ',' && (dst == text || dst[-1] == ','))
                continue;
            *dst++ = *src;
        }
        if (dst > text && dst[-1] == ',')
            dst--;
        *dst = '\0';
        param = text;
    }
    g_auto(GStrv) parts = g_strsplit(param ? param : "", ",", -1);
    GArray *w = g_array_new(FALSE, FALSE, sizeof(double));
    double sum = 0;
    for (int i = 0; parts[i]; i++) {
        /* decimal text in [0, 10^15]: a sum over 2^12 experts stays finite and exact enough */
        double v = -1;
        if (!sv_num_parse_double(parts[i], &v) || v < 0 || v > 1e15) {
            g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                        "expert routing hist: weight %d '%s' is not a number in [0, 1e15]", i,
                        parts[i]);
            g_array_free(w, TRUE);
            return NULL;
        }
        sum += v;
        g_array_append_val(w, v);
    }
    if (w->len == 0 || sum <= 0 || rng == NULL) {
        g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                    "expert routing hist: give per-expert weights with a positive sum "
                    "(hist:5,1,1,1)");
        g_array_free(w, TRUE);
        return NULL;
    }
    hist_state *st = g_new0(hist_state, 1);
    st->rng = rng;
    st->weights = w;
    st->tmp = g_array_new(FALSE, FALSE, sizeof(double));
    return st;
}

static void hist_route(void *p, const struct sv_msg_expert_route_req *req, int64_t *counts)
{
    hist_state *st = p;
    int32_t n = req->n_experts, k = req->top_k;
    memset(counts, 0, sizeof *counts * (size_t)n);
    g_array_set_size(st->tmp, (guint)n);
    double *tmp = (double *)(void *)st->tmp->data;
    for (int64_t t = 0; t < req->tokens; t++) {
        double total = 0;
        for (int32_t e = 0; e < n; e++) {
            tmp[e] = g_array_index(st->weights, double, (guint)e % st->weights->len);
            total += tmp[e];
        }
        for (int32_t j = 0; j < k && total > 0; j++) {
            double u = sv_rng_uniform(st->rng) * total;
            int32_t e = 0;
            double acc = 0;
            for (e = 0; e < n - 1; e++) {
                acc += tmp[e];
                if (u < acc && tmp[e] > 0)
                    break;
            }
            while (tmp[e] <= 0 && e > 0) /* rounding landed on an exhausted tail */
                e--;
            counts[e]++;
            total -= tmp[e];
            tmp[e] = 0;
        }
    }
}

static const struct sv_msg_expert_route_ops route_hist = {SV_REGISTRY_API_VERSION, hist_create,
                                                          hist_destroy, hist_route};

const struct sv_msg_expert_route_ops *sv_msg_expert_route_hist(void)
{
    return &route_hist;
}

const struct sv_msg_expert_route_ops *sv_msg_expert_route_balanced(void)
{
    /* msg/expert.c's table (static storage: valid after the registry is gone). */
    g_autoptr(sv_registry) reg = sv_registry_new();
    if (!sv_msg_expert_route_register_builtins(reg, NULL))
        return NULL;
    return sv_registry_lookup(reg, SV_REGISTRY_EXPERT_ROUTE, "balanced", NULL);
}

/* ---- data-parallel groups ------------------------------------------------------------------- */

struct sv_msg_dp {
    int32_t size;
    sv_msg **members; /* by dp_rank; NULL until joined */
    gboolean *ready;  /* scheduled for the next wave, waiting for the others */
    int64_t *tokens;  /* its scheduled tokens */
    int32_t n_ready;
};

sv_msg_dp *sv_msg_dp_new(int32_t size)
{
    SV_ASSERT(size >= 1);
    sv_msg_dp *dp = g_new0(sv_msg_dp, 1);
    dp->size = size;
    dp->members = g_new0(sv_msg *, (size_t)size);
    dp->ready = g_new0(gboolean, (size_t)size);
    dp->tokens = g_new0(int64_t, (size_t)size);
    return dp;
}

void sv_msg_dp_free(sv_msg_dp *dp)
{
    if (!dp)
        return;
    g_free(dp->members);
    g_free(dp->ready);
    g_free(dp->tokens);
    g_free(dp);
}

int32_t sv_msg_dp_size(const sv_msg_dp *dp)
{
    return dp->size;
}

gboolean sv_msg__dp_join(sv_msg *m, GError **error)
{
    sv_msg_dp *dp = m->cfg.dp;
    if (m->cfg.dp_rank < 0 || m->cfg.dp_rank >= dp->size || dp->members[m->cfg.dp_rank]) {
        g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                    "instance %d: data-parallel rank %d is out of range or taken", m->cfg.instance,
                    m->cfg.dp_rank);
        return FALSE;
    }
    dp->members[m->cfg.dp_rank] = m;
    return TRUE;
}

void sv_msg__dp_leave(sv_msg *m)
{
    if (m->cfg.dp && m->cfg.dp_rank >= 0 && m->cfg.dp_rank < m->cfg.dp->size &&
        m->cfg.dp->members[m->cfg.dp_rank] == m)
        m->cfg.dp->members[m->cfg.dp_rank] = NULL;
}

gboolean sv_msg__wave_join(sv_msg *m, int32_t me, int32_t size, sv_msg **members, gboolean *ready,
                           int32_t *n_ready, int64_t *tokens)
{
    int64_t tok = 0;
    for (guint i = 0; i < m->inflight->len; i++)
        tok += g_array_index(m->inflight, msg_slot, i).num_new;
    if (tok == 0 && !g_queue_is_empty(&m->waiting) && m->running->len == 0) {
        /* A request that can never run in an empty engine would leave the group spinning on
         * dummy steps: report it as the single-instance path does. */
        msg_req *r = g_queue_peek_head(&m->waiting);
        sv_msg__fail(m, g_error_new(SV_MSG_ERROR, SV_MSG_ERROR_NOFIT,
                                    "instance %d: request %" G_GUINT64_FORMAT
                                    " cannot be scheduled in an empty engine",
                                    m->cfg.instance, r->out.request_id));
        return FALSE;
    }
    if (!ready[me]) {
        ready[me] = TRUE;
        (*n_ready)++;
    }
    tokens[me] = tok;
    /* Hold the scheduled batch: no other step may run on this member until the wave starts. */
    m->busy = TRUE;
    if (*n_ready < size) {
        /* Idle members join the wave (vLLM DP: an idle engine runs dummy forwards while any
         * member has work; LLMServingSim's dp_pending synthesizes a dummy batch). */
        for (int32_t j = 0; j < size; j++)
            if (!ready[j] && members[j])
                sv_msg__kick(members[j]);
        return FALSE;
    }
    return TRUE;
}

void sv_msg__dp_step(sv_msg *m)
{
    sv_msg_dp *dp = m->cfg.dp;
    if (!sv_msg__wave_join(m, m->cfg.dp_rank, dp->size, dp->members, dp->ready, &dp->n_ready,
                           dp->tokens))
        return;
    int64_t max_tok = 0;
    for (int32_t j = 0; j < dp->size; j++)
        max_tok = MAX(max_tok, dp->tokens[j]);
    for (int32_t j = 0; j < dp->size; j++) {
        dp->ready[j] = FALSE;
        dp->members[j]->busy = FALSE;
    }
    dp->n_ready = 0;
    if (max_tok == 0)
        return; /* nobody has work: the group goes idle */
    for (int32_t j = 0; j < dp->size; j++) {
        sv_msg *x = dp->members[j];
        if (x->error)
            continue;
        sv_msg__par_set_comm_tokens(x, max_tok);
        x->busy = TRUE;
        x->iter_start_ns = sv_engine_now(x->eng);
        GError *err = NULL;
        if (!sv_msg__launch(x, &err))
            sv_msg__fail(x, err);
    }
}
