/* Speculative decoding in the serving group (msg/spec.c, docs/speculative.md): the timeline of
 * one request step by step against times composed by hand from the latency model's passes, the
 * tokens each verify step emits at acceptance 1 and 0, vLLM's counters, determinism of the
 * per-request draws, and the prefill/decode roles it accepts.
 *
 * Each speculative step of a request with KV history h (the tokens before its last one) and s
 * drafts costs the draft passes D(h) = sv_compute_spec_draft_ns (s passes at KV h, h + 1, ...)
 * plus the target's forward over the 1 + s tokens as a chunk with history h, V(h) (the verify
 * pass, sv_compute_iter_time of that shape). The host model is off (GPU time only) and the group
 * schedules synchronously, so step j ends at the sum of the steps before it. */
#include "msg/msg.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REQ 16
#define MAX_TOK 64

typedef struct {
    sv_engine *eng;
    sv_memtier_kv_manager *kv;
    sv_compute_latency *lat;
    sv_msg *msg;
    struct sv_compute_spec_cfg spec;
    struct sv_wl_outcome done[MAX_REQ];
    int n_done;
    int tokens[MAX_REQ];
    sv_time gap[MAX_REQ][MAX_TOK];
    sv_time t[MAX_REQ][MAX_TOK];
    GArray *iters;
} fx;

static void on_done(void *ctx, const struct sv_wl_outcome *d, void *user)
{
    fx *f = ctx;
    CU_ASSERT_FATAL(d->request_id < MAX_REQ);
    f->done[d->request_id] = *d;
    f->n_done++;
}

static void on_token(void *ctx, uint64_t id, int32_t inst, sv_time t, sv_time gap)
{
    fx *f = ctx;
    CU_ASSERT_FATAL(id < MAX_REQ && f->tokens[id] < MAX_TOK);
    f->gap[id][f->tokens[id]] = gap;
    f->t[id][f->tokens[id]++] = t;
}

static void on_iter(void *ctx, const struct sv_msg_iter_done *it)
{
    fx *f = ctx;
    g_array_append_val(f->iters, *it);
}

/* spec_text NULL: a plain group. */
static sv_msg *fx_init(fx *f, const char *spec_text, sv_msg_role role, GError **error)
{
    memset(f, 0, sizeof *f);
    f->eng = sv_engine_new(1);
    f->kv = sv_memtier_kv_manager_new(4000, 16, FALSE);
    struct sv_compute_model_cfg mc;
    struct sv_compute_hw_cfg hw;
    CU_ASSERT_FATAL(sv_compute_model_lookup("meta-llama/Llama-3.1-8B", NULL, &mc, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100", &hw, NULL));
    f->lat = sv_compute_latency_new_roofline(&mc, &hw, 1, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->lat);
    if (spec_text)
        CU_ASSERT_FATAL(sv_compute_spec_parse_flag(spec_text, NULL, &f->spec, NULL));
    struct sv_msg_cfg c = {
        .max_num_seqs = 128,
        .max_num_batched_tokens = 2048,
        .enable_chunked_prefill = TRUE,
        .kv = f->kv,
        .lat = f->lat,
        .num_devices = 1,
        .host_model = SV_MSG_HOST_NONE,
        .role = role,
        .spec = spec_text ? &f->spec : NULL,
        .spec_seed = 7,
    };
    f->iters = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    struct sv_msg_hooks h = {
        .on_token = on_token, .on_req_done = on_done, .on_iter_done = on_iter, .ctx = f};
    f->msg = sv_msg_new(f->eng, &c, &h, error);
    return f->msg;
}

static void fx_clear(fx *f)
{
    sv_msg_free(f->msg);
    sv_memtier_kv_manager_free(f->kv);
    sv_compute_latency_free(f->lat);
    sv_engine_free(f->eng);
    g_array_free(f->iters, TRUE);
}

static void run_one(fx *f, int64_t in, int64_t out)
{
    sv_wl_req q = {.request_id = 0, .arrival_ns = 0, .input_tokens = in, .output_tokens = out};
    CU_ASSERT_FATAL(sv_msg_submit(f->msg, &q, NULL, NULL));
    sv_engine_run(f->eng, SV_TIME_MAX);
    CU_ASSERT_FATAL(f->n_done == 1 && sv_msg_error(f->msg) == NULL);
}

static sv_time shape_ns(fx *f, int64_t chunk, int64_t hist, int64_t dec_kv)
{
    struct sv_compute_batch_shape s;
    if (chunk > 0)
        sv_compute_batch_shape_init(&s, &chunk, &hist, 1, NULL, 0);
    else
        sv_compute_batch_shape_init(&s, NULL, NULL, 0, &dec_kv, 1);
    struct sv_compute_iter_time it;
    sv_compute_iter_time(f->lat, &s, 0, sv_compute_latency_model(f->lat)->num_layers, &it);
    return it.total_ns;
}

/* a = 1, k = 3, 100 + 11 tokens. The prefill yields token 1 at P = the 100-token chunk. Each
 * verify step then emits k + 1 = 4 tokens (3 accepted drafts + the bonus token): 10 tokens after
 * the first take ceil(10 / 4) = 3 steps, emitting 4, 4 and 2 (capped at the output). Step j
 * (j = 0, 1, 2) starts with history h = 100 + 4j: D(h) + V(h) with a 4-token verify chunk.
 * Within a step the first token has the gap since the previous step, the others 0. */
static void test_accept_all(void)
{
    fx f;
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx_init(&f, "eagle:3:1", SV_MSG_ROLE_BOTH, NULL));
    run_one(&f, 100, 11);
    sv_time t = shape_ns(&f, 100, 0, 0);
    SV_ASSERT_EQ_I64(f.done[0].first_token_ns, t);
    const int emitted[3] = {4, 4, 2};
    int tok = 0;
    for (int j = 0; j < 3; j++) {
        int64_t h = 100 + 4 * j;
        sv_time step = sv_compute_spec_draft_ns(&f.spec, f.lat, NULL, 1, h) + shape_ns(&f, 4, h, 0);
        t += step;
        for (int i = 0; i < emitted[j]; i++, tok++) {
            SV_ASSERT_EQ_I64(f.t[0][tok], t);
            SV_ASSERT_EQ_I64(f.gap[0][tok], i == 0 ? step : 0);
        }
    }
    SV_ASSERT_EQ_I64(f.tokens[0], 10);
    SV_ASSERT_EQ_I64(f.done[0].last_token_ns, t);
    SV_ASSERT_EQ_I64(f.iters->len, 4); /* the prefill and 3 verify steps */
    SV_ASSERT_EQ_I64(g_array_index(f.iters, struct sv_msg_iter_done, 1).scheduled_tokens, 4);
    SV_ASSERT_EQ_I64(g_array_index(f.iters, struct sv_msg_iter_done, 1).gen_tokens, 4);
    SV_ASSERT_EQ_I64(g_array_index(f.iters, struct sv_msg_iter_done, 3).gen_tokens, 2);
    struct sv_msg_spec_stats st;
    sv_msg_get_spec_stats(f.msg, &st);
    SV_ASSERT_EQ_I64(st.k, 3);
    SV_ASSERT_EQ_I64(st.num_drafts, 3);
    SV_ASSERT_EQ_I64(st.num_draft_tokens, 9);
    SV_ASSERT_EQ_I64(st.num_accepted_tokens, 9); /* the last step's 2 beyond the output too */
    for (int i = 0; i < 3; i++)
        SV_ASSERT_EQ_I64(st.accepted_per_pos[i], 3);
    SV_ASSERT_EQ_I64(sv_memtier_kv_manager_num_used_blocks(f.kv), 0); /* all freed at the end */
    fx_clear(&f);
}

/* a = 0, k = 3, 100 + 5 tokens: every draft is rejected, so each step emits the target's token
 * only and rolls the history back to one more token: 4 steps for 4 tokens, step j with history
 * 100 + j, each D(h) + V(h). Against the plain group's decode steps (one token at KV h): the
 * decode plus the draft cost, give or take the verify pass's difference from a decode (the
 * roofline times 4 tokens as a chunk with history 0.2 % below one decode token at KV 100). */
static void test_accept_none(void)
{
    fx f, g;
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx_init(&f, "eagle:3:0", SV_MSG_ROLE_BOTH, NULL));
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx_init(&g, NULL, SV_MSG_ROLE_BOTH, NULL));
    run_one(&f, 100, 5);
    run_one(&g, 100, 5);
    sv_time t = shape_ns(&f, 100, 0, 0), plain = t;
    for (int j = 0; j < 4; j++) {
        int64_t h = 100 + j;
        sv_time draft = sv_compute_spec_draft_ns(&f.spec, f.lat, NULL, 1, h);
        sv_time step = draft + shape_ns(&f, 4, h, 0);
        t += step;
        plain += shape_ns(&f, 0, 0, h);
        SV_ASSERT_EQ_I64(f.t[0][j], t);
        SV_ASSERT_EQ_I64(f.gap[0][j], step);
        /* the plain group's step j is the decode at KV h */
        SV_ASSERT_EQ_I64(g.gap[0][j], shape_ns(&f, 0, 0, h));
        /* the verify pass over 4 tokens is memory-bound like a decode: within 1 % of one */
        CU_ASSERT(llabs((long long)(step - (g.gap[0][j] + draft))) < g.gap[0][j] / 100);
    }
    SV_ASSERT_EQ_I64(f.tokens[0], 4);
    SV_ASSERT_EQ_I64(f.iters->len, 5);
    SV_ASSERT_EQ_I64(g.done[0].last_token_ns, plain);
    CU_ASSERT(f.done[0].last_token_ns > plain);
    struct sv_msg_spec_stats st;
    sv_msg_get_spec_stats(f.msg, &st);
    SV_ASSERT_EQ_I64(st.num_drafts, 4);
    SV_ASSERT_EQ_I64(st.num_draft_tokens, 12);
    SV_ASSERT_EQ_I64(st.num_accepted_tokens, 0);
    fx_clear(&f);
    fx_clear(&g);
}

/* Eight requests with per-request Beta(0.7 x 10, 0.3 x 10) rates: two runs with the same seed
 * give the same token times; every request's tokens are all emitted; the counters add up
 * (accepted <= draft tokens = k x drafts, the per-position counts decreasing). */
static void run_beta(fx *f, sv_time *last)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx_init(f, "mtp:4:0.7", SV_MSG_ROLE_BOTH, NULL));
    CU_ASSERT_FATAL(sv_compute_spec_set_beta("x", 0.7, 10, &f->spec, NULL));
    for (uint64_t i = 0; i < 8; i++) {
        sv_wl_req q = {.request_id = i,
                       .arrival_ns = 0,
                       .input_tokens = 50 + 10 * (int64_t)i,
                       .output_tokens = 20 + (int64_t)i};
        CU_ASSERT_FATAL(sv_msg_submit(f->msg, &q, NULL, NULL));
    }
    sv_engine_run(f->eng, SV_TIME_MAX);
    CU_ASSERT_FATAL(f->n_done == 8);
    for (int i = 0; i < 8; i++) {
        SV_ASSERT_EQ_I64(f->tokens[i], 19 + i);
        last[i] = f->done[i].last_token_ns;
    }
}

static void test_beta_deterministic(void)
{
    fx a, b;
    sv_time la[8], lb[8];
    run_beta(&a, la);
    run_beta(&b, lb);
    for (int i = 0; i < 8; i++) {
        SV_ASSERT_EQ_I64(la[i], lb[i]);
        CU_ASSERT(memcmp(a.gap[i], b.gap[i], sizeof a.gap[i]) == 0);
    }
    struct sv_msg_spec_stats sa, sb;
    sv_msg_get_spec_stats(a.msg, &sa);
    sv_msg_get_spec_stats(b.msg, &sb);
    CU_ASSERT(memcmp(&sa, &sb, sizeof sa) == 0);
    SV_ASSERT_EQ_I64(sa.num_draft_tokens, 4 * sa.num_drafts);
    CU_ASSERT(sa.num_accepted_tokens <= sa.num_draft_tokens && sa.num_accepted_tokens > 0);
    uint64_t sum = 0;
    for (int i = 0; i < 4; i++) {
        sum += sa.accepted_per_pos[i];
        if (i > 0)
            CU_ASSERT(sa.accepted_per_pos[i] <= sa.accepted_per_pos[i - 1]);
    }
    SV_ASSERT_EQ_I64(sum, sa.num_accepted_tokens);
    fx_clear(&a);
    fx_clear(&b);
}

/* A DECODE group (prefill/decode disaggregation), a = 1, k = 3: a request of 100 + 11 tokens
 * arrives with its prompt's KV at t = 0. As vLLM's scheduler after a remote prefill, the group
 * recomputes the last prompt token first: one token against 99 of KV (a decode at KV 99) yields
 * output token 1 (the client's first), as on a plain DECODE group (TTFT unchanged). Then each
 * verify step emits k + 1 = 4 tokens: 4, 4, 2 in 3 steps at history h = 100, 104, 108, each D(h) +
 * V(h). */
static void decode_one(fx *f)
{
    struct sv_wl_outcome o = {.request_id = 0,
                              .instance = 0,
                              .first_scheduled_ns = 0,
                              .first_token_ns = -1,
                              .last_token_ns = -1,
                              .input_tokens = 100,
                              .output_tokens = 11,
                              .prefill_instance = 0,
                              .prefill_done_ns = 0,
                              .kv_ready_ns = 0};
    sv_msg_handoff *h = sv_msg_pd_reserve(f->msg, &o, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    sv_msg_pd_admit(f->msg, h, NULL);
    sv_engine_run(f->eng, SV_TIME_MAX);
    CU_ASSERT_FATAL(f->n_done == 1 && sv_msg_error(f->msg) == NULL);
}

static void test_decode_role(void)
{
    fx f, g;
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx_init(&f, "eagle:3:1", SV_MSG_ROLE_DECODE, NULL));
    CU_ASSERT_PTR_NOT_NULL_FATAL(fx_init(&g, NULL, SV_MSG_ROLE_DECODE, NULL));
    decode_one(&f);
    decode_one(&g);
    sv_time t = shape_ns(&f, 0, 0, 99);
    SV_ASSERT_EQ_I64(f.done[0].first_token_ns, t);
    SV_ASSERT_EQ_I64(g.done[0].first_token_ns, t);
    const int emitted[3] = {4, 4, 2};
    int tok = 0;
    for (int j = 0; j < 3; j++) {
        int64_t h = 100 + 4 * j;
        sv_time step = sv_compute_spec_draft_ns(&f.spec, f.lat, NULL, 1, h) + shape_ns(&f, 4, h, 0);
        t += step;
        for (int i = 0; i < emitted[j]; i++, tok++) {
            SV_ASSERT_EQ_I64(f.t[0][tok], t);
            SV_ASSERT_EQ_I64(f.gap[0][tok], i == 0 ? step : 0);
        }
    }
    SV_ASSERT_EQ_I64(f.tokens[0], 10);
    SV_ASSERT_EQ_I64(f.done[0].last_token_ns, t);
    struct sv_msg_spec_stats st;
    sv_msg_get_spec_stats(f.msg, &st);
    SV_ASSERT_EQ_I64(st.num_drafts, 3);
    SV_ASSERT_EQ_I64(st.num_accepted_tokens, 9);
    fx_clear(&f);
    fx_clear(&g);
}

/* Prefill/decode roles are accepted (a prefill group never speculates: its requests leave at
 * their first token; a decode group speculates as any other). */
static void test_pd_roles(void)
{
    const sv_msg_role roles[2] = {SV_MSG_ROLE_PREFILL, SV_MSG_ROLE_DECODE};
    for (int i = 0; i < 2; i++) {
        fx f;
        GError *e = NULL;
        CU_ASSERT_PTR_NOT_NULL(fx_init(&f, "eagle:3:0.5", roles[i], &e));
        CU_ASSERT_PTR_NULL(e);
        g_clear_error(&e);
        fx_clear(&f);
    }
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"acceptance 1: k + 1 tokens per verify step, gaps 0 within it", test_accept_all},
        {"acceptance 0: one token per step, plain decode + draft cost", test_accept_none},
        {"per-request Beta rates: same seed, same tokens", test_beta_deterministic},
        {"prefill and decode roles are accepted", test_pd_roles},
        {"a decode group: first token as without, then k + 1 per step", test_decode_role},
        {NULL, NULL},
    };
    sv_test_add_suite("spec_engine", cases);
    return sv_test_run();
}
