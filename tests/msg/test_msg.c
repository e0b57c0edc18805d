/* Batch scheduler rules (msg/sched.c), driven by hand: each step is scheduled, checked against
 * the vLLM v1 rule it exercises (numbers worked out by hand in the comments), then committed. */
#include "msg/msg.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>

typedef struct {
    sv_engine *eng;
    sv_memtier_kv_manager *kv;
    sv_msg *msg;
    GArray *out;
    struct sv_msg_req_done done[8];
    int n_done;
    int n_gaps;
} fx;

static void on_done(void *ctx, const struct sv_msg_req_done *d)
{
    fx *f = ctx;
    if (f->n_done < 8)
        f->done[f->n_done++] = *d;
}

static void on_token(void *ctx, uint64_t id, int32_t inst, sv_time t, sv_time gap)
{
    fx *f = ctx;
    f->n_gaps++;
}

static void fx_init(fx *f, uint32_t blocks, int64_t budget, int64_t max_seqs, int64_t threshold,
                    gboolean reserve, sv_msg_sched_kind kind)
{
    memset(f, 0, sizeof *f);
    f->eng = sv_engine_new(1);
    f->kv = sv_memtier_kv_manager_new(blocks, 16, FALSE);
    struct sv_msg_cfg c = {
        .scheduler = kind,
        .max_num_seqs = max_seqs,
        .max_num_batched_tokens = budget,
        .long_prefill_token_threshold = threshold,
        .enable_chunked_prefill = TRUE,
        .reserve_full_isl = reserve,
        .kv = f->kv,
        .num_devices = 1,
        .manual = TRUE,
    };
    struct sv_msg_hooks h = {.on_token = on_token, .on_req_done = on_done, .ctx = f};
    f->msg = sv_msg_new(f->eng, &c, &h, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->msg);
    f->out = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_sched_entry));
}

static void fx_clear(fx *f)
{
    sv_msg_free(f->msg);
    sv_memtier_kv_manager_free(f->kv);
    sv_engine_free(f->eng);
    g_array_free(f->out, TRUE);
}

static void submit(fx *f, uint64_t id, int64_t in, int64_t out)
{
    struct sv_msg_req_cfg r = {.request_id = id, .input_tokens = in, .output_tokens = out};
    CU_ASSERT_FATAL(sv_msg_submit(f->msg, &r, NULL));
}

static uint32_t step(fx *f)
{
    g_array_set_size(f->out, 0);
    return sv_msg_schedule_step(f->msg, f->out);
}

static const struct sv_msg_sched_entry *E(fx *f, guint i)
{
    CU_ASSERT_FATAL(i < f->out->len);
    return &g_array_index(f->out, struct sv_msg_sched_entry, i);
}

/* Budget 100: A (150-token prompt) takes all of step 1 as a chunk; B waits. Step 2 serves the
 * running A first (its remaining 50), then admits B with the 50 left (B's 30). */
static void test_budget_running_first_chunking(void)
{
    fx f;
    fx_init(&f, 100, 100, 128, 0, TRUE, SV_MSG_SCHED_VLLM);
    submit(&f, 0, 150, 4);
    submit(&f, 1, 30, 4);
    CU_ASSERT_EQUAL(step(&f), 0);
    CU_ASSERT_EQUAL(f.out->len, 1);
    CU_ASSERT_EQUAL(E(&f, 0)->num_new, 100);
    sv_msg_commit(f.msg, 10);
    CU_ASSERT_EQUAL(f.n_done, 0);
    step(&f);
    CU_ASSERT_EQUAL(f.out->len, 2);
    CU_ASSERT_EQUAL(E(&f, 0)->request_id, 0);
    CU_ASSERT_EQUAL(E(&f, 0)->num_new, 50);
    CU_ASSERT_EQUAL(E(&f, 0)->computed_before, 100);
    CU_ASSERT_EQUAL(E(&f, 1)->request_id, 1);
    CU_ASSERT_EQUAL(E(&f, 1)->num_new, 30);
    sv_msg_commit(f.msg, 20);
    /* Both prompts complete at t=20: first tokens; step 3 is two decodes of one token. */
    step(&f);
    CU_ASSERT_EQUAL(f.out->len, 2);
    CU_ASSERT_EQUAL(E(&f, 0)->num_new, 1);
    CU_ASSERT_EQUAL(E(&f, 0)->computed_before, 150);
    CU_ASSERT_EQUAL(E(&f, 1)->computed_before, 30);
    fx_clear(&f);
}

/* long_prefill_token_threshold 40 caps each step's chunk of a 150-token prompt. */
static void test_threshold(void)
{
    fx f;
    fx_init(&f, 100, 2048, 128, 40, TRUE, SV_MSG_SCHED_VLLM);
    submit(&f, 0, 150, 2);
    step(&f);
    CU_ASSERT_EQUAL(E(&f, 0)->num_new, 40);
    sv_msg_commit(f.msg, 1);
    step(&f);
    CU_ASSERT_EQUAL(E(&f, 0)->num_new, 40);
    CU_ASSERT_EQUAL(E(&f, 0)->computed_before, 40);
    fx_clear(&f);
}

/* max_num_seqs 2: the third request waits although budget and blocks remain. */
static void test_max_num_seqs(void)
{
    fx f;
    fx_init(&f, 100, 2048, 2, 0, TRUE, SV_MSG_SCHED_VLLM);
    for (int i = 0; i < 3; i++)
        submit(&f, (uint64_t)i, 10, 5);
    step(&f);
    CU_ASSERT_EQUAL(f.out->len, 2);
    CU_ASSERT_EQUAL(sv_msg_num_waiting(f.msg), 1);
    fx_clear(&f);
}

/* 8 blocks of 16: A and B (64-token prompts) take 4 blocks each. In step 2 A's 65th token needs
 * a 5th block: the tail B is preempted (recompute: computed reset, back at the head of waiting),
 * A proceeds, and C (16 tokens, would fit in B's freed blocks) is not admitted in that step. */
static void test_preempt_tail_no_admission(void)
{
    fx f;
    fx_init(&f, 8, 2048, 128, 0, FALSE, SV_MSG_SCHED_VLLM);
    submit(&f, 0, 64, 20);
    submit(&f, 1, 64, 20);
    step(&f);
    CU_ASSERT_EQUAL(f.out->len, 2);
    sv_msg_commit(f.msg, 10);
    submit(&f, 2, 15, 2);
    CU_ASSERT_EQUAL(step(&f), 1);
    CU_ASSERT_EQUAL(f.out->len, 1);
    CU_ASSERT_EQUAL(E(&f, 0)->request_id, 0);
    CU_ASSERT_EQUAL(sv_msg_num_running(f.msg), 1);
    CU_ASSERT_EQUAL(sv_msg_num_waiting(f.msg), 2);
    CU_ASSERT_EQUAL(sv_msg_num_preemptions(f.msg), 1);
    sv_msg_commit(f.msg, 20);
    /* Next step admits again, FCFS from the head: B first. B resumes with its whole reached
     * length (65 tokens = 5 blocks) recomputed as one chunk, but only 3 blocks are free (A holds
     * 5): B does not fit, so admission stops and C behind it waits too. */
    CU_ASSERT_EQUAL(step(&f), 0);
    CU_ASSERT_EQUAL(f.out->len, 1);
    CU_ASSERT_EQUAL(sv_msg_num_waiting(f.msg), 2);
    fx_clear(&f);
}

/* Reserve of the full sequence: 8 blocks, threshold 32. A (100 tokens) is admitted with a
 * 32-token chunk (2 blocks). B (120 tokens = 8 blocks) would get a first chunk of 32 within the
 * budget, but its whole prompt does not fit in the 6 free blocks: not admitted with the reserve,
 * admitted without it. */
static void test_reserve_full_isl(void)
{
    for (int reserve = 0; reserve <= 1; reserve++) {
        fx f;
        fx_init(&f, 8, 2048, 128, 32, reserve, SV_MSG_SCHED_VLLM);
        submit(&f, 0, 100, 2);
        submit(&f, 1, 120, 2);
        step(&f);
        CU_ASSERT_EQUAL(f.out->len, reserve ? 1 : 2);
        fx_clear(&f);
    }
}

/* Token accounting: prompt of 20 in step 1 (first token at its end), then one token per step;
 * 3 output tokens end at the third commit; two inter-token gaps. */
static void test_tokens_and_record(void)
{
    fx f;
    fx_init(&f, 100, 2048, 128, 0, TRUE, SV_MSG_SCHED_VLLM);
    submit(&f, 7, 20, 3);
    step(&f);
    sv_msg_commit(f.msg, 10);
    step(&f);
    sv_msg_commit(f.msg, 25);
    CU_ASSERT_EQUAL(f.n_done, 0);
    step(&f);
    sv_msg_commit(f.msg, 45);
    CU_ASSERT_EQUAL_FATAL(f.n_done, 1);
    CU_ASSERT_EQUAL(f.done[0].request_id, 7);
    CU_ASSERT_EQUAL(f.done[0].first_token_ns, 10);
    CU_ASSERT_EQUAL(f.done[0].last_token_ns, 45);
    CU_ASSERT_EQUAL(f.done[0].output_tokens, 3);
    CU_ASSERT_EQUAL(f.n_gaps, 2);
    CU_ASSERT_TRUE(sv_msg_idle(f.msg));
    CU_ASSERT_EQUAL(sv_memtier_kv_manager_num_used_blocks(f.kv), 0);
    fx_clear(&f);
}

/* Static batching: A and B form a batch; C, arriving later, waits until both have finished. */
static void test_static(void)
{
    fx f;
    fx_init(&f, 100, 2048, 128, 0, TRUE, SV_MSG_SCHED_STATIC);
    submit(&f, 0, 10, 2);
    submit(&f, 1, 10, 3);
    step(&f);
    CU_ASSERT_EQUAL(f.out->len, 2);
    sv_msg_commit(f.msg, 1);
    submit(&f, 2, 10, 2);
    step(&f); /* A's 2nd token ends A; B continues */
    CU_ASSERT_EQUAL(f.out->len, 2);
    sv_msg_commit(f.msg, 2);
    step(&f);
    CU_ASSERT_EQUAL(f.out->len, 1); /* B alone: C not admitted while B runs */
    CU_ASSERT_EQUAL(E(&f, 0)->request_id, 1);
    sv_msg_commit(f.msg, 3);
    step(&f);
    CU_ASSERT_EQUAL(f.out->len, 1);
    CU_ASSERT_EQUAL(E(&f, 0)->request_id, 2);
    fx_clear(&f);
}

/* Dynamic batching: prompts are never split. A 150-token prompt with budget 100 runs whole and
 * alone; B (30) joins in the next step. */
static void test_dynamic(void)
{
    fx f;
    fx_init(&f, 100, 100, 128, 0, TRUE, SV_MSG_SCHED_DYNAMIC);
    submit(&f, 0, 150, 3);
    submit(&f, 1, 30, 3);
    step(&f);
    CU_ASSERT_EQUAL(f.out->len, 1);
    CU_ASSERT_EQUAL(E(&f, 0)->num_new, 150);
    sv_msg_commit(f.msg, 1);
    step(&f);
    CU_ASSERT_EQUAL(f.out->len, 2);
    CU_ASSERT_EQUAL(E(&f, 1)->num_new, 30);
    fx_clear(&f);
}

static void test_sched_names(void)
{
    sv_msg_sched_kind k;
    CU_ASSERT_TRUE(sv_msg_sched_parse("dynamic", &k, NULL) && k == SV_MSG_SCHED_DYNAMIC);
    GError *e = NULL;
    CU_ASSERT_FALSE(sv_msg_sched_parse("fifo", &k, &e));
    CU_ASSERT_PTR_NOT_NULL(e && strstr(e->message, "fifo"));
    g_clear_error(&e);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"budget, running first, chunked prefill", test_budget_running_first_chunking},
        {"long prefill threshold", test_threshold},
        {"max_num_seqs", test_max_num_seqs},
        {"preempt tail, no admission", test_preempt_tail_no_admission},
        {"reserve full isl", test_reserve_full_isl},
        {"token accounting", test_tokens_and_record},
        {"static batching", test_static},
        {"dynamic batching", test_dynamic},
        {"scheduler names", test_sched_names},
        {NULL, NULL},
    };
    sv_test_add_suite("msg", cases);
    return sv_test_run();
}
