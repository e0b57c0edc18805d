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
#include "system/system.h"
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

/* n_members > 1: a DP group of one-device members; tp > 1: one instance of tp devices. Either
 * sits on a cluster network (the parallel path); otherwise a single device. */
static void fx_init(fx *f, int n_members, int tp)
{
    memset(f, 0, sizeof *f);
    f->eng = sv_engine_new(1);
    struct sv_compute_model_cfg mc;
    struct sv_compute_hw_cfg hw;
    CU_ASSERT_FATAL(sv_compute_model_lookup("meta-llama/Llama-3.1-8B", NULL, &mc, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100", &hw, NULL));
    f->lat = sv_compute_latency_new_roofline(&mc, &hw, tp, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->lat);
    CU_ASSERT_FATAL(sv_compute_spec_parse_flag("eagle:3:1", NULL, &f->spec, NULL));
    f->dp = n_members > 1 ? sv_msg_dp_new(n_members) : NULL;
    if (f->dp || tp > 1) {
        g_autoptr(JsonParser) jp = json_parser_new();
#define MEMBER                                                                                     \
    "{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100\", \"npu_mem\": "          \
    "{\"mem_size\": 80, \"mem_bw\": 3350}, \"num_npus\": 1, \"dp_group\": \"A\"}"
#define TP2                                                                                        \
    "{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100\", \"npu_mem\": "          \
    "{\"mem_size\": 80, \"mem_bw\": 3350}, \"num_npus\": 2, \"tp_size\": 2}"
        CU_ASSERT_FATAL(tp == 1 || tp == 2);
        CU_ASSERT_FATAL(json_parser_load_from_data(
            jp,
            tp > 1
                ? "{\"link_bw\": 16, \"link_latency\": 20000, \"nodes\": [{\"instances\": [" TP2
                  "]}]}"
                : "{\"link_bw\": 16, \"link_latency\": 20000, \"nodes\": [{\"instances\": [" MEMBER
                  "," MEMBER "]}]}",
            -1, NULL));
#undef MEMBER
#undef TP2
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
            .num_devices = tp,
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
    fx_init(&f, 2, 1);
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
    fx_init(&g, 1, 1);
    submit(&g, 0, 0, 100);
    sv_engine_run(g.eng, SV_TIME_MAX);
    SV_ASSERT_EQ_I64(g.t[0][7], p0 + s0 + step(&g, 104));
    fx_clear(&g);
}

/* Under TP 2 (Llama-3.1-8B on two H100 of one node, the cluster network's flow model), each
 * draft pass is followed by the all-reduces of its decoder layer, as the target's layers issue
 * theirs: an EAGLE pass is one layer of the target (2 all-reduces, after o_proj and down_proj,
 * of tokens x hidden x 2 bytes = 1 x 4,096 x 2 = 8,192 bytes for one request) plus the head.
 * A rank's chain, as the executor runs it: every operator node its time (a zero-time node 1 ns,
 * dag/exec.c), every all-reduce the system layer's closed form for the TP ring with its links
 * to itself (sv_sys_coll_alone_ns, as docs/parallelism.md "Folded iterations" checks against the
 * messages). A request of 100 + 9 tokens at acceptance 1, k = 3: token 1 after the prefill
 * chain F(chunk 100); tokens 2-5 after 3 x (pass + 2 AR(8,192)) + F(chunk 4 after 100); tokens
 * 6-9 likewise after 104. */
static sv_time ar_ns(fx *f, uint64_t bytes)
{
    sv_time t = -1;
    CU_ASSERT_FATAL(sv_sys_coll_alone_ns(sv_planner_cluster_net_coll(f->cn), SV_SYS_ALL_REDUCE,
                                         bytes, sv_planner_cluster_net_tp_group(f->cn, 0, 0), &t));
    return t;
}

static sv_time ops_ns(fx *f, const struct sv_compute_iter_op *ops, int n)
{
    sv_time t = 0;
    for (int i = 0; i < n; i++)
        t += (ops[i].ns > 0 ? ops[i].ns : 1) +
             (ops[i].allreduce_bytes > 0 ? ar_ns(f, ops[i].allreduce_bytes) : 0);
    return t;
}

/* The target's forward over a chunk after `hist` on one TP rank, all-reduces included. */
static sv_time forward(fx *f, int64_t chunk, int64_t hist)
{
    struct sv_compute_batch_shape s;
    sv_compute_batch_shape_init(&s, &chunk, &hist, 1, NULL, 0);
    struct sv_compute_iter_time it;
    sv_compute_iter_time(f->lat, &s, 0, sv_compute_latency_model(f->lat)->num_layers, &it);
    uint64_t ar = 0; /* o_proj's and down_proj's: 2 x tokens x 4,096 x 2 bytes */
    for (int i = 0; i < it.n_layer; i++)
        ar += it.layer[i].allreduce_bytes;
    SV_ASSERT_EQ_I64(ar, 2 * (uint64_t)chunk * 4096 * 2);
    return ops_ns(f, it.prologue, it.n_prologue) + it.n_layers * ops_ns(f, it.layer, it.n_layer) +
           ops_ns(f, it.head, it.n_head);
}

static void test_tp_draft_allreduces(void)
{
    fx f;
    fx_init(&f, 1, 2);
    submit(&f, 0, 0, 100);
    sv_engine_run(f.eng, SV_TIME_MAX);
    CU_ASSERT_FATAL(f.done == 1 && !sv_msg_error(f.msg[0]));
    SV_ASSERT_EQ_I64(f.tokens[0], 8);
    sv_time ar1 = ar_ns(&f, 8192);
    CU_ASSERT_FATAL(ar1 > 20000); /* at least the link latency */
    sv_time t = forward(&f, 100, 0);
    for (int j = 0; j < 2; j++) {
        int64_t h = 100 + 4 * j;
        struct sv_compute_spec_pass p[SV_COMPUTE_SPEC_MAX_K];
        int64_t kv = h;
        int32_t ns = 3;
        SV_ASSERT_EQ_I64(sv_compute_spec_draft_passes(&f.spec, f.lat, NULL, &kv, &ns, 1, p), 3);
        sv_time draft = 0;
        for (int i = 0; i < 3; i++) {
            SV_ASSERT_EQ_I64(p[i].n_allreduce, 2);
            SV_ASSERT_EQ_I64(p[i].allreduce_bytes, 8192);
            draft += p[i].ns + 2 * ar1;
        }
        t += draft + forward(&f, 4, h);
        for (int i = 0; i < 4; i++)
            SV_ASSERT_EQ_I64(f.t[0][4 * j + i], t);
    }
    fx_clear(&f);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"DP members speculate in lock-step waves", test_lock_step},
        {"TP 2: each draft pass all-reduces as the target's layers do", test_tp_draft_allreduces},
        {NULL, NULL},
    };
    sv_test_add_suite("spec_par", cases);
    return sv_test_run();
}
