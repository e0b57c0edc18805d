/* Built-in expert routing policies (struct sv_msg_expert_route_ops, msg.h): how one MoE layer's
 * tokens spread over its experts. The skewed policy follows the usual Zipf load model of expert
 * popularity (expert of rank r chosen with weight r^-S); S = 0 is uniform. */
#include "msg/msg.h"

#include <math.h>

typedef struct {
    sv_rng *rng;
    uint64_t cursor;              /* round_robin: next expert */
    double s;                     /* zipf exponent */
    int32_t n;                    /* size of the scratch arrays below */
    int32_t *perm;                /* random: partial Fisher-Yates scratch */
    double *cdf;                  /* zipf: cumulative weights */
    double *w;                    /* zipf: weights (e + 1)^-s */
    double *lsuf;                 /* zipf: log of the suffix sums of the weights, n + 1 entries */
    int32_t *sorted;              /* zipf: scratch, the experts a token took, in order */
    int32_t *range_lo, *range_hi; /* zipf: scratch, the ranges between them, n + 1 each */
    double *range_mass;
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
    st->w = g_renew(double, st->w, n);
    st->lsuf = g_renew(double, st->lsuf, n + 1);
    st->sorted = g_renew(int32_t, st->sorted, n);
    st->range_lo = g_renew(int32_t, st->range_lo, n + 1);
    st->range_hi = g_renew(int32_t, st->range_hi, n + 1);
    st->range_mass = g_renew(double, st->range_mass, n + 1);
    st->taken = g_renew(gboolean, st->taken, n);
    for (int32_t e = 0; e < n; e++) {
        st->perm[e] = e;
        st->w[e] = pow((double)(e + 1), -st->s);
        st->cdf[e] = (e ? st->cdf[e - 1] : 0.0) + st->w[e];
        st->taken[e] = FALSE;
    }
    /* Summed from the tail in log space: log sum_{j >= e} (j + 1)^-s stays finite for every s,
     * where the weights themselves underflow (s ln n > 708) and 1 + w absorbs a small w. */
    st->lsuf[n] = -INFINITY;
    for (int32_t e = n - 1; e >= 0; e--) {
        double lw = -st->s * log((double)(e + 1)), rest = st->lsuf[e + 1];
        st->lsuf[e] = rest > lw ? rest + log1p(exp(lw - rest)) : lw + log1p(exp(rest - lw));
    }
}

static void er_destroy(void *state)
{
    er_state *st = state;
    g_free(st->perm);
    g_free(st->cdf);
    g_free(st->w);
    g_free(st->lsuf);
    g_free(st->sorted);
    g_free(st->range_lo);
    g_free(st->range_hi);
    g_free(st->range_mass);
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
 * without replacement: each draw is from the experts the token has not taken yet, with
 * probability proportional to their weights (torch.topk's distinct experts). */
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

/* One expert from all of them by the weights (inverse CDF). */
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

/* log of the weight of the experts [a, b): log(suf(a) - suf(b)), -inf when it is nothing next
 * to suf(b) in double precision. */
static double range_log_mass(const er_state *st, int32_t a, int32_t b)
{
    return st->lsuf[a] + log(-expm1(st->lsuf[b] - st->lsuf[a]));
}

/* One expert from those not among `taken` (n_taken < n of them), with probability proportional
 * to its weight: the inverse CDF over the untaken ones. They form at most n_taken + 1 ranges
 * between taken experts; a range is picked by its mass, then the expert inside it by a binary
 * search on the suffix sums, all in log space, so that no weight is too small to be drawn.
 * O(n_taken^2 + n_taken log n). */
static int32_t zipf_draw_untaken(er_state *st, const int32_t *taken, int32_t n_taken)
{
    int32_t *sorted = st->sorted;
    for (int32_t i = 0; i < n_taken; i++) { /* insertion sort: top_k is small */
        int32_t v = taken[i], j = i;
        for (; j > 0 && sorted[j - 1] > v; j--)
            sorted[j] = sorted[j - 1];
        sorted[j] = v;
    }
    /* Range r is [lo[r], hi[r]), the experts between two taken ones; mass[r] its log mass. */
    int32_t *lo = st->range_lo, *hi = st->range_hi, nr = 0;
    double *mass = st->range_mass, mx = -INFINITY;
    for (int32_t r = 0, a = 0; r <= n_taken; r++) {
        int32_t b = r < n_taken ? sorted[r] : st->n;
        if (b > a) {
            lo[nr] = a;
            hi[nr] = b;
            mass[nr] = range_log_mass(st, a, b);
            mx = MAX(mx, mass[nr]);
            nr++;
        }
        a = b + 1;
    }
    SV_ASSERT(nr > 0); /* top_k < n: an expert is left */
    if (mx == -INFINITY)
        return lo[0]; /* nothing measurable left beyond the first untaken one */
    double total = 0;
    for (int32_t r = 0; r < nr; r++) {
        mass[r] = exp(mass[r] - mx); /* relative to the largest range */
        total += mass[r];
    }
    double u = sv_rng_uniform(st->rng) * total;
    int32_t r = 0;
    while (r + 1 < nr && u >= mass[r]) /* the last range takes what rounding leaves */
        u -= mass[r++];
    /* the first e in [a, b) whose share of the range's mass up to e exceeds u / mass */
    int32_t a = lo[r], e = lo[r], last = hi[r] - 1;
    double f = MIN(u / mass[r], 1.0), den = -expm1(st->lsuf[hi[r]] - st->lsuf[a]);
    while (e < last) {
        int32_t mid = e + (last - e) / 2;
        if (-expm1(st->lsuf[mid + 1] - st->lsuf[a]) / den > f)
            last = mid;
        else
            e = mid + 1;
    }
    return e;
}

/* A draw from all experts that lands on a taken one is repeated while the taken ones hold at
 * most half the weight (so that a repeat is rare); past that, or after REPEATS repeats, the draw
 * is made among the untaken experts directly. Either way the expert is distributed as the
 * weights restricted to the untaken ones, so the mix is exact, and bounded: with a large
 * exponent expert 0 holds nearly all the weight and a repeated draw would never leave it
 * (issue 13: zipf:100 never returned). */
#define ZIPF_REPEATS 16

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
        double taken_w = 0;
        for (int32_t k = 0; k < q->top_k; k++) {
            int32_t e = -1;
            if (taken_w <= 0.5 * st->cdf[st->n - 1]) {
                for (int r = 0; r < ZIPF_REPEATS && e < 0; r++) {
                    int32_t d = zipf_draw(st);
                    if (!st->taken[d])
                        e = d;
                }
            }
            if (e < 0)
                e = zipf_draw_untaken(st, chosen, k);
            st->taken[e] = TRUE;
            taken_w += st->w[e];
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
