/* Speculative decoding in a data-parallel group (msg/spec.c, msg/parallel.c; docs/speculative.md
 * "Data and expert parallelism"): the members step in waves, as vLLM's DP ranks do, so a member's
 * next speculative step starts when the slowest member's step (its draft passes + verify) ends.
 *
 * Two members of Llama-3.1-8B on one H100 each (roofline, GPU time only, EAGLE k = 3 at
 * acceptance 1); member 0 serves a request of 100 + 9 tokens, member 1 one of 1,000 + 9. With
 * P(n) the prefill chunk of n tokens and S(h) = D(h) + V(h) a verify step at history h (3 EAGLE
 * passes at KV h, h + 1, h + 2, then the 4-token chunk after h):
 *   wave 0 at 0: member 0 emits token 1 at P(100), member 1 at P(1,000);
 *   wave 1 at T1 = max(P(100), P(1,000)): tokens 2-5 at T1 + S(100) and T1 + S(1,000);
 *   wave 2 at T2 = T1 + max(S(100), S(1,000)): tokens 6-9 at T2 + S(104) and T2 + S(1,004).
 * Member 0 alone would emit its tokens 6-9 at P(100) + S(100) + S(104): the lock-step costs it
 * S(1,000) - S(100) + P(1,000) - P(100). */
#include "msg/msg.h"
#include "planner/planner.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <json-glib/json-glib.h>
#include <string.h>

#define N_TOK 16

typedef struct {
    sv_engine *eng;
    sv_msg_dp *dp;
    sv_memtier_kv_manager *kv[2];
    sv_compute_latency *lat;
    sv_msg *msg[2];
    struct sv_planner_cluster_cfg *cc;
    sv_planner_cluster_net *cn; /* the DP group's devices (parallel members need a network) */
    struct sv_compute_spec_cfg spec;
    int tokens[2];
    sv_time t[2][N_TOK];
    int done;
} fx;

static void on_token(void *ctx, uint64_t id, int32_t inst, sv_time t, sv_time gap)
{
    (void)gap;
    fx *f = ctx;
    CU_ASSERT_FATAL(id < 2 && f->tokens[id] < N_TOK && inst == (int32_t)id);
    f->t[id][f->tokens[id]++] = t;
}

static void on_done(void *ctx, const struct sv_wl_outcome *d, void *user)
{
    (void)user;
    fx *f = ctx;
    CU_ASSERT_FATAL(d->request_id < 2);
    f->done++;
}

static void fx_init(fx *f, int n_members)
{
    memset(f, 0, sizeof *f);
    f->eng = sv_engine_new(1);
    struct sv_compute_model_cfg mc;
    struct sv_compute_hw_cfg hw;
    CU_ASSERT_FATAL(sv_compute_model_lookup("meta-llama/Llama-3.1-8B", NULL, &mc, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100", &hw, NULL));
    f->lat = sv_compute_latency_new_roofline(&mc, &hw, 1, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->lat);
    CU_ASSERT_FATAL(sv_compute_spec_parse_flag("eagle:3:1", NULL, &f->spec, NULL));
    f->dp = n_members > 1 ? sv_msg_dp_new(n_members) : NULL;
    if (f->dp) {
        g_autoptr(JsonParser) jp = json_parser_new();
#define MEMBER                                                                                     \
    "{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100\", \"npu_mem\": "          \
    "{\"mem_size\": 80, \"mem_bw\": 3350}, \"num_npus\": 1, \"dp_group\": \"A\"}"
        CU_ASSERT_FATAL(json_parser_load_from_data(
            jp,
            "{\"link_bw\": 16, \"link_latency\": 20000, \"nodes\": [{\"instances\": [" MEMBER
            "," MEMBER "]}]}",
            -1, NULL));
#undef MEMBER
        f->cc = sv_planner_cluster_from_json(json_parser_get_root(jp), "t.json", NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f->cc);
        f->cn = sv_planner_cluster_net_new(f->eng, f->cc, SV_NET_MODEL_FLOW, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f->cn);
    }
    struct sv_msg_hooks h = {.on_token = on_token, .on_req_done = on_done, .ctx = f};
    for (int i = 0; i < n_members; i++) {
        f->kv[i] = sv_memtier_kv_manager_new(4000, 16, FALSE);
        struct sv_msg_cfg c = {
            .instance = i,
            .first_device = f->cn ? sv_planner_cluster_net_first_device(f->cn, i) : 0,
            .coll = f->cn ? sv_planner_cluster_net_coll(f->cn) : NULL,
            .tp_group_base = f->cn ? sv_planner_cluster_net_tp_group(f->cn, i, 0) : 0,
            .max_num_seqs = 128,
            .max_num_batched_tokens = 2048,
            .enable_chunked_prefill = TRUE,
            .kv = f->kv[i],
            .lat = f->lat,
            .num_devices = 1,
            .host_model = SV_MSG_HOST_NONE,
            .spec = &f->spec,
            .spec_seed = 7,
            .dp = f->dp,
            .dp_rank = i,
        };
        GError *e = NULL;
        f->msg[i] = sv_msg_new(f->eng, &c, &h, &e);
        if (e)
            fprintf(stderr, "\n  %s\n", e->message);
        g_clear_error(&e);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f->msg[i]);
    }
}

static void fx_clear(fx *f)
{
    for (int i = 0; i < 2; i++) {
        sv_msg_free(f->msg[i]);
        sv_memtier_kv_manager_free(f->kv[i]);
    }
    sv_msg_dp_free(f->dp);
    sv_planner_cluster_net_free(f->cn);
    sv_planner_cluster_free(f->cc);
    sv_compute_latency_free(f->lat);
    sv_engine_free(f->eng);
}

static sv_time prefill(fx *f, int64_t n)
{
    struct sv_compute_batch_shape s;
    int64_t hist = 0;
    sv_compute_batch_shape_init(&s, &n, &hist, 1, NULL, 0);
    struct sv_compute_iter_time it;
    sv_compute_iter_time(f->lat, &s, 0, sv_compute_latency_model(f->lat)->num_layers, &it);
    return it.total_ns;
}

/* A verify step at history h: the draft passes, then the 4-token chunk after h. */
static sv_time step(fx *f, int64_t h)
{
    int64_t chunk = 4;
    struct sv_compute_batch_shape s;
    sv_compute_batch_shape_init(&s, &chunk, &h, 1, NULL, 0);
    struct sv_compute_iter_time it;
    sv_compute_iter_time(f->lat, &s, 0, sv_compute_latency_model(f->lat)->num_layers, &it);
    return sv_compute_spec_draft_ns(&f->spec, f->lat, NULL, 1, h) + it.total_ns;
}

static void submit(fx *f, int member, uint64_t id, int64_t in)
{
    sv_wl_req q = {.request_id = id, .arrival_ns = 0, .input_tokens = in, .output_tokens = 9};
    CU_ASSERT_FATAL(sv_msg_submit(f->msg[member], &q, NULL, NULL));
}

static void test_lock_step(void)
{
    fx f;
    fx_init(&f, 2);
    submit(&f, 0, 0, 100);
    submit(&f, 1, 1, 1000);
    sv_engine_run(f.eng, SV_TIME_MAX);
    CU_ASSERT_FATAL(f.done == 2 && !sv_msg_error(f.msg[0]) && !sv_msg_error(f.msg[1]));
    SV_ASSERT_EQ_I64(f.tokens[0], 8);
    SV_ASSERT_EQ_I64(f.tokens[1], 8);
    sv_time p0 = prefill(&f, 100), p1 = prefill(&f, 1000);
    CU_ASSERT_FATAL(p1 > p0);
    sv_time t1 = p1;
    sv_time s0 = step(&f, 100), s1 = step(&f, 1000);
    CU_ASSERT_FATAL(s1 > s0);
    sv_time t2 = t1 + s1;
    for (int i = 0; i < 4; i++) { /* tokens 2-5, then 6-9: k + 1 = 4 per verify step */
        SV_ASSERT_EQ_I64(f.t[0][i], t1 + s0);
        SV_ASSERT_EQ_I64(f.t[1][i], t1 + s1);
        SV_ASSERT_EQ_I64(f.t[0][4 + i], t2 + step(&f, 104));
        SV_ASSERT_EQ_I64(f.t[1][4 + i], t2 + step(&f, 1004));
    }
    struct sv_msg_spec_stats st;
    for (int i = 0; i < 2; i++) {
        sv_msg_get_spec_stats(f.msg[i], &st);
        SV_ASSERT_EQ_I64(st.num_drafts, 2);
        SV_ASSERT_EQ_I64(st.num_accepted_tokens, 6);
    }
    fx_clear(&f);

    /* Member 0's request alone (no DP group): its own steps back to back. */
    fx g;
    fx_init(&g, 1);
    submit(&g, 0, 0, 100);
    sv_engine_run(g.eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(g.t[0][7], p0 + s0 + step(&g, 104));
    fx_clear(&g);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"DP members speculate in lock-step waves", test_lock_step},
        {NULL, NULL},
    };
    sv_test_add_suite("spec_dp", cases);
    return sv_test_run();
}
