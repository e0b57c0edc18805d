/* Engine profiles (msg/engine.c): names, the batch defaults `vllm serve` picks per device, the
 * frontend term, and the iteration loop with async scheduling against the synchronous one.
 *
 * The loop tests drive a serving group with a latency model and check its timeline step by step:
 * each step's GPU time g comes from the latency model for the batch the step must hold (the
 * shapes are worked out by hand in the comments) and the host time h from the host model; the
 * expected commit times are sums and maxima of those, derived here from vLLM's loop
 * (EngineCore.step_with_batch_queue): synchronous, a step's tokens are committed at
 * start + g + h and the next step starts then; async, step k + 1 was scheduled when step k - 1
 * committed, runs on the GPU as soon as step k is done there, and step k commits at
 * max(GPU end of k, commit of k - 1) + h. */
#include "msg/msg.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <string.h>

static void test_names(void)
{
    sv_msg_engine_kind k = SV_MSG_ENGINE_VLLM_0_10;
    CU_ASSERT(sv_msg_engine_parse("vllm-0.19", &k, NULL) && k == SV_MSG_ENGINE_VLLM_0_19);
    CU_ASSERT(sv_msg_engine_parse("VLLM-0.10", &k, NULL) && k == SV_MSG_ENGINE_VLLM_0_10);
    CU_ASSERT(sv_msg_engine_parse("vllm", &k, NULL) && k == SV_MSG_ENGINE_VLLM_0_19);
    g_autoptr(GError) e = NULL;
    CU_ASSERT_FALSE(sv_msg_engine_parse("sglang", &k, &e));
    CU_ASSERT_PTR_NOT_NULL(e && strstr(e->message, "vllm-0.19, vllm-0.10"));
    CU_ASSERT_STRING_EQUAL(sv_msg_engine_name(SV_MSG_ENGINE_VLLM_0_10), "vllm-0.10");
    CU_ASSERT(sv_msg_engine_async(SV_MSG_ENGINE_VLLM_0_19));
    CU_ASSERT_FALSE(sv_msg_engine_async(SV_MSG_ENGINE_VLLM_0_10));
}

/* vllm/engine/arg_utils.py (OPENAI_API_SERVER column): >= 70 GiB and no "a100" in the name:
 * 8192 tokens, 1024 sequences; otherwise 2048 / 256; TPU v6e / v5e / v5p: 1024 / 512 / 256
 * tokens; max_num_seqs capped at the token budget. Memory in GiB as the planner passes it. */
static void test_batch_defaults(void)
{
    static const struct {
        const char *hw;
        double gib;
        int64_t seqs, tokens;
    } cases[] = {
        {"H100-SXM", 74.5, 1024, 8192},   /* 80 GB */
        {"H200", 131.3, 1024, 8192},      /* 141 GB */
        {"RTXPRO6000", 96.0, 1024, 8192}, /* a cluster config's 96 (GiB) */
        {"A100-80GB", 74.5, 256, 2048},   /* PR #17885's carve-out by name */
        {"a100", 80.0, 256, 2048},        {"A100-40GB", 37.3, 256, 2048},
        {"RTX4090", 24.0, 256, 2048},     {"L40S", 44.7, 256, 2048},
        {"A6000", 69.9, 256, 2048}, /* just under the threshold */
        {"TPU-v6e", 29.8, 256, 1024},     {"TPUv5e", 14.9, 256, 512},
        {"TPU-v5p", 88.5, 256, 256}, /* 1024 sequences by memory, capped at 256 tokens */
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        for (int k = 0; k < 2; k++) {
            int64_t seqs = 0, tokens = 0;
            sv_msg_engine_batch_defaults((sv_msg_engine_kind)k, cases[i].hw, cases[i].gib, &seqs,
                                         &tokens);
            SV_ASSERT_EQ_I64(seqs, cases[i].seqs);
            SV_ASSERT_EQ_I64(tokens, cases[i].tokens);
        }
    }
}

static void test_frontend_parse(void)
{
    struct sv_msg_frontend f = {1, 1};
    CU_ASSERT(sv_msg_frontend_parse("off", &f, NULL));
    SV_ASSERT_EQ_I64(f.in_ns, 0);
    SV_ASSERT_EQ_I64(f.out_ns, 0);
    /* vLLM PR #27407: means of 2.80 / 3.40 ms inbound and 0.29 / 0.43 ms outbound. */
    CU_ASSERT(sv_msg_frontend_parse("on", &f, NULL));
    SV_ASSERT_EQ_I64(f.in_ns, 3100000);
    SV_ASSERT_EQ_I64(f.out_ns, 360000);
    CU_ASSERT(sv_msg_frontend_parse("2.5:0.125", &f, NULL));
    SV_ASSERT_EQ_I64(f.in_ns, 2500000);
    SV_ASSERT_EQ_I64(f.out_ns, 125000);
    const char *bad[] = {"", "x", "1", "1:", ":1", "-1:0", "1:-2", "1:2:3", "1:2x"};
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GError) e = NULL;
        CU_ASSERT_FALSE(sv_msg_frontend_parse(bad[i], &f, &e));
        CU_ASSERT_PTR_NOT_NULL(e);
    }
}

/* ---- the loop ------------------------------------------------------------------------------ */

#define MAX_REQ 80

typedef struct {
    sv_engine *eng;
    sv_memtier_kv_manager *kv;
    sv_compute_latency *lat;
    sv_msg *msg;
    struct sv_wl_outcome done[MAX_REQ];
    int n_done;
    int tokens[MAX_REQ]; /* output tokens after the first, per request */
    sv_time last_gap[MAX_REQ];
    GArray *iters; /* struct sv_msg_iter_done */
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
    f->tokens[id]++;
    f->last_gap[id] = gap;
}

static void on_iter(void *ctx, const struct sv_msg_iter_done *it)
{
    fx *f = ctx;
    g_array_append_val(f->iters, *it);
}

/* A small model: its steps are short enough for a step of 64 sequences to be host-bound. */
static gboolean tiny_model(struct sv_compute_model_cfg *m)
{
    const char *json = "{\"model_type\": \"llama\", \"hidden_size\": 256, "
                       "\"num_attention_heads\": 4, \"num_key_value_heads\": 4, "
                       "\"head_dim\": 64, \"num_hidden_layers\": 2, \"intermediate_size\": 512, "
                       "\"vocab_size\": 1000}";
    g_autoptr(JsonParser) p = json_parser_new();
    if (!json_parser_load_from_data(p, json, -1, NULL))
        return FALSE;
    return sv_compute_model_from_json(json_node_get_object(json_parser_get_root(p)), "test/tiny",
                                      "tiny", m, NULL);
}

static void fx_init(fx *f, sv_msg_engine_kind engine, gboolean tiny, uint32_t blocks)
{
    memset(f, 0, sizeof *f);
    f->eng = sv_engine_new(1);
    f->kv = sv_memtier_kv_manager_new(blocks, 16, FALSE);
    struct sv_compute_model_cfg mc;
    struct sv_compute_hw_cfg hw;
    gboolean ok = tiny ? tiny_model(&mc)
                       : sv_compute_model_lookup("meta-llama/Llama-3.1-8B", NULL, &mc, NULL);
    CU_ASSERT_FATAL(ok);
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100", &hw, NULL));
    f->lat = sv_compute_latency_new_roofline(&mc, &hw, 1, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->lat);
    struct sv_msg_cfg c = {
        .max_num_seqs = 128,
        .max_num_batched_tokens = 2048,
        .enable_chunked_prefill = TRUE,
        .kv = f->kv,
        .lat = f->lat,
        .num_devices = 1,
        .engine = engine,
    };
    f->iters = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    struct sv_msg_hooks h = {
        .on_token = on_token, .on_req_done = on_done, .on_iter_done = on_iter, .ctx = f};
    f->msg = sv_msg_new(f->eng, &c, &h, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->msg);
}

static void fx_clear(fx *f)
{
    sv_msg_free(f->msg);
    sv_memtier_kv_manager_free(f->kv);
    sv_compute_latency_free(f->lat);
    sv_engine_free(f->eng);
    g_array_free(f->iters, TRUE);
}

typedef struct {
    fx *f;
    sv_wl_req req;
} pending_req;

static void submit_event(sv_engine *eng, void *ctx, uint64_t arg)
{
    pending_req *p = ctx;
    CU_ASSERT(sv_msg_submit(p->f->msg, &p->req, NULL, NULL));
}

/* Submit at `at` (before the group's events of that instant, as the planner's arrivals). */
static void submit_at(fx *f, pending_req *p, uint64_t id, sv_time at, int64_t in, int64_t out)
{
    p->f = f;
    p->req =
        (sv_wl_req){.request_id = id, .arrival_ns = at, .input_tokens = in, .output_tokens = out};
    sv_engine_schedule(f->eng, at, -1, submit_event, p, 0);
}

/* GPU time of a step: prefill chunks (chunk, history) and decodes (KV length), as opmap.c. */
static sv_time gpu(fx *f, int n_pf, const int64_t *chunk, const int64_t *hist, int n_dec,
                   const int64_t *kv)
{
    struct sv_compute_batch_shape s;
    sv_compute_batch_shape_init(&s, chunk, hist, (size_t)n_pf, kv, (size_t)n_dec);
    struct sv_compute_iter_time it;
    sv_compute_iter_time(f->lat, &s, 0, sv_compute_latency_model(f->lat)->num_layers, &it);
    return it.total_ns;
}

static sv_time host(uint32_t n)
{
    return sv_msg_host_step_ns(SV_MSG_HOST_FITTED, n);
}

/* One request of 100 + 4 tokens. Steps: the prefill (100, history 0), then decodes at KV 100,
 * 101, 102. Sync: token j at the sum of (g_i + h) up to step j. Async: steps 1 and 2 are
 * scheduled at t = 0 (2 on a placeholder), step 3 when step 1 commits, and so on; the GPU runs
 * them back to back (g > h here), so token j comes at g_1 + ... + g_j + h: the decode gaps are
 * g alone. Four steps either way: no extra step past the last token. */
static void test_single_request_timeline(void)
{
    for (int k = 0; k < 2; k++) {
        sv_msg_engine_kind engine = k ? SV_MSG_ENGINE_VLLM_0_19 : SV_MSG_ENGINE_VLLM_0_10;
        fx f;
        fx_init(&f, engine, FALSE, 1000);
        pending_req p;
        submit_at(&f, &p, 0, 0, 100, 4);
        sv_engine_run(f.eng, SV_TIME_MAX);
        CU_ASSERT_FATAL(f.n_done == 1 && sv_msg_error(f.msg) == NULL);
        int64_t c100 = 100, h0 = 0;
        sv_time g[4];
        g[0] = gpu(&f, 1, &c100, &h0, 0, NULL);
        for (int j = 1; j < 4; j++) {
            int64_t kv = 99 + j;
            g[j] = gpu(&f, 0, NULL, NULL, 1, &kv);
        }
        sv_time h = host(1);
        CU_ASSERT(g[1] > h); /* GPU-bound: the async gaps are g */
        sv_time t_first = g[0] + h, t_last;
        if (engine == SV_MSG_ENGINE_VLLM_0_10)
            t_last = g[0] + g[1] + g[2] + g[3] + 4 * h;
        else
            t_last = g[0] + g[1] + g[2] + g[3] + h;
        SV_ASSERT_EQ_I64(f.done[0].first_token_ns, t_first);
        SV_ASSERT_EQ_I64(f.done[0].last_token_ns, t_last);
        SV_ASSERT_EQ_I64(f.tokens[0], 3);
        SV_ASSERT_EQ_I64(f.last_gap[0], engine == SV_MSG_ENGINE_VLLM_0_10 ? g[3] + h : g[3]);
        SV_ASSERT_EQ_I64(f.iters->len, 4);
        fx_clear(&f);
    }
}

/* Admission lags one step under async scheduling. A (100 + 20) runs alone; B (50 + 2) arrives
 * during A's third step on the GPU. Sync: steps run one after the other, C_j = C_(j-1) + g + h;
 * B is seen when the third step commits (C3) and joins the fourth, which starts then: B's first
 * token at C3 + g(B's 50-token prefill + A's decode at KV 102) + h(2). Async: A's steps run back
 * to back on the GPU (ends G_j) and commit at C_j = G_j + h; when B arrives (after C2), step 4 was
 * already scheduled at C2: B is seen at C3 and joins step 5, which starts when step 4 ends: first
 * token at G4 + g(50 + A's decode at KV 103) + h(2), one step later. */
static void test_admission_lag(void)
{
    for (int k = 0; k < 2; k++) {
        sv_msg_engine_kind engine = k ? SV_MSG_ENGINE_VLLM_0_19 : SV_MSG_ENGINE_VLLM_0_10;
        fx f;
        fx_init(&f, engine, FALSE, 1000);
        int64_t c100 = 100, c50 = 50, h0 = 0;
        sv_time g1 = gpu(&f, 1, &c100, &h0, 0, NULL);
        sv_time gd[8];
        for (int j = 0; j < 8; j++) {
            int64_t kv = 100 + j;
            gd[j] = gpu(&f, 0, NULL, NULL, 1, &kv); /* A's decode at KV 100 + j */
        }
        sv_time h1 = host(1), h2 = host(2);
        /* Step ends of A alone. Sync: C1 = g1 + h, C_j = C_{j-1} + gd + h. Async: G1 = g1,
         * G_j = G_{j-1} + gd[j-2], C_j = G_j + h. */
        sv_time t_b, want_sched, want_first;
        if (engine == SV_MSG_ENGINE_VLLM_0_10) {
            sv_time c2 = g1 + h1 + gd[0] + h1, c3 = c2 + gd[1] + h1;
            t_b = c2 + gd[1] / 2;
            int64_t kv = 102;
            want_sched = c3;
            want_first = c3 + gpu(&f, 1, &c50, &h0, 1, &kv) + h2;
        } else {
            sv_time G2 = g1 + gd[0], G3 = G2 + gd[1], G4 = G3 + gd[2];
            t_b = G3 - gd[1] / 2; /* during step 3 on the GPU, after C2 = G2 + h */
            CU_ASSERT(t_b > G2 + h1);
            int64_t kv = 103;
            want_sched = G3 + h1; /* C3 */
            want_first = G4 + gpu(&f, 1, &c50, &h0, 1, &kv) + h2;
        }
        pending_req pa, pb;
        submit_at(&f, &pa, 0, 0, 100, 20);
        submit_at(&f, &pb, 1, t_b, 50, 2);
        sv_engine_run(f.eng, SV_TIME_MAX);
        CU_ASSERT_FATAL(f.n_done == 2 && sv_msg_error(f.msg) == NULL);
        SV_ASSERT_EQ_I64(f.done[1].first_scheduled_ns, want_sched);
        SV_ASSERT_EQ_I64(f.done[1].first_token_ns, want_first);
        SV_ASSERT_EQ_I64(f.tokens[0], 19);
        SV_ASSERT_EQ_I64(f.tokens[1], 1);
        fx_clear(&f);
    }
}

/* Host-bound: 64 requests of 16 + 12 tokens on a small model, where a step of 64 decodes takes
 * less GPU time than its host part h(64) = C0 + 64 C1. Async: the host commits every h, the GPU
 * waits for it: every decode gap is h(64) exactly. Sync: g + h. */
static void test_host_bound(void)
{
    for (int k = 0; k < 2; k++) {
        sv_msg_engine_kind engine = k ? SV_MSG_ENGINE_VLLM_0_19 : SV_MSG_ENGINE_VLLM_0_10;
        fx f;
        fx_init(&f, engine, TRUE, 1000);
        pending_req p[64];
        for (int i = 0; i < 64; i++)
            submit_at(&f, &p[i], (uint64_t)i, 0, 16, 12);
        sv_engine_run(f.eng, SV_TIME_MAX);
        CU_ASSERT_FATAL(f.n_done == 64 && sv_msg_error(f.msg) == NULL);
        int64_t kv[64];
        for (int i = 0; i < 64; i++)
            kv[i] = 26; /* the last decode: tokens 16 + 10 computed before it */
        sv_time g = gpu(&f, 0, NULL, NULL, 64, kv), h = host(64);
        CU_ASSERT(g < h); /* precondition: the step is host-bound */
        for (int i = 0; i < 64; i++) {
            SV_ASSERT_EQ_I64(f.tokens[i], 11);
            SV_ASSERT_EQ_I64(f.last_gap[i], engine == SV_MSG_ENGINE_VLLM_0_10 ? g + h : h);
        }
        SV_ASSERT_EQ_I64(f.iters->len, 12); /* one prefill step, eleven decode steps */
        fx_clear(&f);
    }
}

/* KV pressure under async scheduling: a request preempted while its step is still in flight
 * keeps that step's token (vLLM's update_from_output), is recomputed later, and every request
 * still produces exactly its tokens. 3 requests of 32 + 40 tokens in 9 blocks of 16: each grows
 * to 5 blocks; the third preemption-free point is 64 tokens, so preemptions must happen. */
static void test_preempt_in_flight(void)
{
    for (int k = 0; k < 2; k++) {
        sv_msg_engine_kind engine = k ? SV_MSG_ENGINE_VLLM_0_19 : SV_MSG_ENGINE_VLLM_0_10;
        fx f;
        fx_init(&f, engine, FALSE, 9);
        pending_req p[3];
        for (int i = 0; i < 3; i++)
            submit_at(&f, &p[i], (uint64_t)i, 0, 32, 40);
        sv_engine_run(f.eng, SV_TIME_MAX);
        CU_ASSERT_FATAL(f.n_done == 3 && sv_msg_error(f.msg) == NULL);
        CU_ASSERT(sv_msg_num_preemptions(f.msg) > 0);
        for (int i = 0; i < 3; i++) {
            CU_ASSERT(f.done[i].finished);
            SV_ASSERT_EQ_I64(f.tokens[i], 39);
            CU_ASSERT(f.done[i].first_token_ns > 0 &&
                      f.done[i].last_token_ns > f.done[i].first_token_ns);
        }
        CU_ASSERT(sv_msg_idle(f.msg));
        SV_ASSERT_EQ_I64(sv_memtier_kv_manager_usage(f.kv) * 1e6, 0);
        fx_clear(&f);
    }
}

/* The frontend: the request reaches the engine in_ns late and its tokens reach the client out_ns
 * late; the engine's timeline is the same, shifted by in_ns, and TPOT is unchanged. */
static void test_frontend_shift(void)
{
    sv_time first[2], last[2];
    for (int k = 0; k < 2; k++) {
        fx f;
        memset(&f, 0, sizeof f);
        fx_init(&f, SV_MSG_ENGINE_VLLM_0_19, FALSE, 1000);
        if (k) {
            /* Rebuild the group with the frontend on. */
            sv_msg_free(f.msg);
            struct sv_msg_cfg c = {
                .max_num_seqs = 128,
                .max_num_batched_tokens = 2048,
                .enable_chunked_prefill = TRUE,
                .kv = f.kv,
                .lat = f.lat,
                .num_devices = 1,
                .frontend = {3000000, 400000},
            };
            struct sv_msg_hooks h = {.on_token = on_token, .on_req_done = on_done, .ctx = &f};
            f.msg = sv_msg_new(f.eng, &c, &h, NULL);
            CU_ASSERT_PTR_NOT_NULL_FATAL(f.msg);
        }
        pending_req p;
        submit_at(&f, &p, 0, 1000, 100, 5);
        sv_engine_run(f.eng, SV_TIME_MAX);
        CU_ASSERT_FATAL(f.n_done == 1);
        SV_ASSERT_EQ_I64(f.done[0].arrival_ns, 1000);
        first[k] = f.done[0].first_token_ns;
        last[k] = f.done[0].last_token_ns;
        fx_clear(&f);
    }
    SV_ASSERT_EQ_I64(first[1] - first[0], 3000000 + 400000);
    SV_ASSERT_EQ_I64(last[1] - last[0], 3000000 + 400000);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"engine names", test_names},
        {"vllm serve batch defaults per device", test_batch_defaults},
        {"frontend parse", test_frontend_parse},
        {"single request: sync vs async timeline", test_single_request_timeline},
        {"admission one step later with async scheduling", test_admission_lag},
        {"host-bound steps: the period is the host time", test_host_bound},
        {"preemption of a request in flight", test_preempt_in_flight},
        {"frontend term shifts TTFT and E2E", test_frontend_shift},
        {NULL, NULL},
    };
    sv_test_add_suite("engine", cases);
    return sv_test_run();
}
