/* Built-in expert routing policies (struct sv_msg_expert_route_ops, msg.h): how one MoE layer's
 * tokens spread over its experts. The skewed policy follows the usual Zipf load model of expert
 * popularity (expert of rank r chosen with weight r^-S); S = 0 is uniform. */
#include "msg/msg.h"

#include <math.h>

typedef struct {
    sv_rng *rng;
    uint64_t cursor; /* round_robin: next expert */
    double s;        /* zipf exponent */
    int32_t n;       /* size of the scratch arrays below */
    int32_t *perm;   /* random: partial Fisher-Yates scratch */
    double *cdf;     /* zipf: cumulative weights */
    gboolean *taken;
} er_state;

static er_state *state_new(sv_rng *rng)
{
    er_state *st = g_new0(er_state, 1);
    st->rng = rng;
    return st;
}

static void state_size(er_state *st, int32_t n)
{
    if (st->n == n)
        return;
    st->n = n;
    st->perm = g_renew(int32_t, st->perm, n);
    st->cdf = g_renew(double, st->cdf, n);
    st->taken = g_renew(gboolean, st->taken, n);
    for (int32_t e = 0; e < n; e++) {
        st->perm[e] = e;
        st->cdf[e] = (e ? st->cdf[e - 1] : 0.0) + pow((double)(e + 1), -st->s);
        st->taken[e] = FALSE;
    }
}

static void er_destroy(void *state)
{
    er_state *st = state;
    g_free(st->perm);
    g_free(st->cdf);
    g_free(st->taken);
    g_free(st);
}

static gboolean no_param(const char *name, const char *param, GError **error)
{
    if (param && *param) {
        g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                    "expert routing '%s' takes no parameter (got '%s')", name, param);
        return FALSE;
    }
    return TRUE;
}

static void check_req(const struct sv_msg_expert_route_req *q)
{
    SV_ASSERT(q->n_experts >= 1 && q->top_k >= 1 && q->top_k <= q->n_experts && q->tokens >= 0);
}

/* balanced: every expert gets floor(tokens x top_k / n) token-expert pairs; the rem remaining
 * pairs go one each to the experts at the midpoints of rem equal slices of the expert range,
 * e_i = floor((2i + 1) n / (2 rem)), i < rem (distinct, as n / rem > 1). EP ranks own contiguous
 * ranges (sv_msg_expert_owner), so a rank owning n_r experts gets rem x n_r / n of them within
 * one, whatever the EP degree (equal counts within one when ep divides n): at small batches the
 * activated experts spread over the ranks as under a load-balanced learned gate, instead of all
 * falling on the lowest experts, i.e. on EP rank 0. Deterministic; a token's top_k pairs land on
 * distinct experts whenever a count is at most the token count, which holds. */
static void *balanced_create(const char *param, sv_rng *rng, GError **error)
{
    return no_param("balanced", param, error) ? state_new(rng) : NULL;
}

static void balanced_route(void *state, const struct sv_msg_expert_route_req *q, int64_t *counts)
{
    check_req(q);
    int64_t total = q->tokens * q->top_k, n = q->n_experts;
    int64_t rem = total % n;
    for (int64_t e = 0; e < n; e++)
        counts[e] = total / n;
    for (int64_t i = 0; i < rem; i++)
        counts[(2 * i + 1) * n / (2 * rem)]++;
}

/* round_robin: the k-th choice of the call goes to expert (cursor + k) mod n; a token's top_k
 * choices are consecutive, hence distinct. The cursor carries over to the next call. */
static void *rr_create(const char *param, sv_rng *rng, GError **error)
{
    return no_param("round_robin", param, error) ? state_new(rng) : NULL;
}

static void rr_route(void *state, const struct sv_msg_expert_route_req *q, int64_t *counts)
{
    check_req(q);
    er_state *st = state;
    int64_t n = q->n_experts, total = q->tokens * q->top_k;
    int64_t start = (int64_t)(st->cursor % (uint64_t)n);
    for (int64_t e = 0; e < n; e++) {
        int64_t off = (e - start + n) % n; /* position of expert e after the cursor */
        counts[e] = total / n + (off < total % n ? 1 : 0);
    }
    st->cursor = (uint64_t)((start + total % n) % n);
}

/* random: top_k distinct experts per token, uniformly (partial Fisher-Yates). */
static void *random_create(const char *param, sv_rng *rng, GError **error)
{
    if (!no_param("random", param, error))
        return NULL;
    SV_ASSERT(rng);
    return state_new(rng);
}

static void random_route(void *state, const struct sv_msg_expert_route_req *q, int64_t *counts)
{
    check_req(q);
    er_state *st = state;
    state_size(st, q->n_experts);
    for (int32_t e = 0; e < q->n_experts; e++)
        counts[e] = 0;
    for (int64_t t = 0; t < q->tokens; t++) {
        for (int32_t k = 0; k < q->top_k; k++) {
            int32_t j = k + (int32_t)sv_rng_below(st->rng, (uint64_t)(q->n_experts - k));
            int32_t tmp = st->perm[k];
            st->perm[k] = st->perm[j];
            st->perm[j] = tmp;
            counts[st->perm[k]]++;
        }
    }
}

/* zipf:S: top_k distinct experts per token, expert e (rank e + 1) drawn with weight (e+1)^-S,
 * without replacement (a draw that hits a chosen expert is repeated). */
static void *zipf_create(const char *param, sv_rng *rng, GError **error)
{
    char *end = NULL;
    double s = param ? g_ascii_strtod(param, &end) : NAN;
    if (!param || end == param || *end || !(s >= 0) || !isfinite(s)) {
        g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                    "expert routing 'zipf' needs a non-negative exponent, as zipf:1.2 (got '%s')",
                    param ? param : "");
        return NULL;
    }
    SV_ASSERT(rng);
    er_state *st = state_new(rng);
    st->s = s;
    return st;
}

static int32_t zipf_draw(er_state *st)
{
    double u = sv_rng_uniform(st->rng) * st->cdf[st->n - 1];
    int32_t lo = 0, hi = st->n - 1; /* first e with cdf[e] > u */
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (st->cdf[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static void zipf_route(void *state, const struct sv_msg_expert_route_req *q, int64_t *counts)
{
    check_req(q);
    er_state *st = state;
    state_size(st, q->n_experts);
    for (int32_t e = 0; e < q->n_experts; e++)
        counts[e] = 0;
    for (int64_t t = 0; t < q->tokens; t++) {
        if (q->top_k == q->n_experts) {
            for (int32_t e = 0; e < q->n_experts; e++)
                counts[e]++;
            continue;
        }
        int32_t *chosen = st->perm; /* scratch: zipf does not use the permutation */
        for (int32_t k = 0; k < q->top_k; k++) {
            int32_t e;
            do
                e = zipf_draw(st);
            while (st->taken[e]);
            st->taken[e] = TRUE;
            chosen[k] = e;
            counts[e]++;
        }
        for (int32_t k = 0; k < q->top_k; k++)
            st->taken[chosen[k]] = FALSE;
    }
}

static const struct sv_msg_expert_route_ops builtin[] = {
    {SV_REGISTRY_API_VERSION, balanced_create, er_destroy, balanced_route},
    {SV_REGISTRY_API_VERSION, rr_create, er_destroy, rr_route},
    {SV_REGISTRY_API_VERSION, random_create, er_destroy, random_route},
    {SV_REGISTRY_API_VERSION, zipf_create, er_destroy, zipf_route},
};
static const char *const builtin_names[] = {"balanced", "round_robin", "random", "zipf"};

gboolean sv_msg_expert_route_register_builtins(sv_registry *reg, GError **error)
{
    for (size_t i = 0; i < G_N_ELEMENTS(builtin); i++) {
        if (!sv_registry_add(reg, SV_REGISTRY_EXPERT_ROUTE, builtin_names[i], &builtin[i],
                             "built-in", error))
            return FALSE;
    }
    return TRUE;
}
