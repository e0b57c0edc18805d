/* Speculative decoding (compute/specdec.c, docs/speculative.md): validation errors naming the
 * config path, the tokens per verify step at acceptance 1 and 0 (counted by hand), the mean over
 * many seeded steps against Leviathan et al.'s closed form (values by hand below), determinism of
 * a named stream, and the draft / verify times composed from the latency model's passes. */
#include "compute/compute.h"
#include "tests/test_util.h"

#include <math.h>
#include <string.h>

G_DEFINE_AUTOPTR_CLEANUP_FUNC(sv_rng, sv_rng_free)

static void expect_error(const char *method, const char *draft, int64_t k, double a,
                         const char *needle)
{
    struct sv_compute_spec_cfg c;
    GError *e = NULL;
    CU_ASSERT_FALSE(
        sv_compute_spec_validate("instances[0].speculative", method, draft, NULL, k, a, &c, &e));
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    if (!strstr(e->message, needle))
        fprintf(stderr, "\n  message: %s\n  wanted:  %s\n", e->message, needle);
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, needle));
    g_clear_error(&e);
}

static void test_validation(void)
{
    expect_error("eagle", NULL, 0, 0.5,
                 "instances[0].speculative.num_speculative_tokens: 0 is out of range (1 .. 64)");
    expect_error("eagle", NULL, -3, 0.5, "num_speculative_tokens: -3 is out of range");
    expect_error("mtp", NULL, 65, 0.5, "num_speculative_tokens: 65 is out of range");
    expect_error("eagle", NULL, 4, 1.5,
                 "instances[0].speculative.acceptance_rate: 1.5 is outside [0, 1]");
    expect_error("eagle", NULL, 4, -0.1, "acceptance_rate: -0.1 is outside [0, 1]");
    expect_error("eagle", NULL, 4, NAN, "acceptance_rate: nan is outside [0, 1]");
    expect_error("medusa", NULL, 4, 0.5,
                 "instances[0].speculative.method: 'medusa' is not a speculative method "
                 "(draft, draft_model, eagle, mtp)");
    expect_error(NULL, NULL, 4, 0.5, "method: '(missing)' is not");
    expect_error("draft", NULL, 4, 0.5,
                 "instances[0].speculative.draft_model: required with method \"draft\"");
    expect_error("draft", "no-such/model-1b", 4, 0.5, "instances[0].speculative.draft_model: ");
    expect_error("draft", "no-such/model-1b", 4, 0.5, "no-such/model-1b");
    expect_error("eagle", "meta-llama/Llama-3.1-8B", 4, 0.5,
                 "draft_model: only with method \"draft\"");

    struct sv_compute_spec_cfg c;
    GError *e = NULL;
    CU_ASSERT_TRUE(
        sv_compute_spec_validate("x", "draft", "meta-llama/Llama-3.1-8B", NULL, 3, 0.7, &c, &e));
    CU_ASSERT_PTR_NULL(e);
    CU_ASSERT_EQUAL(c.method, SV_COMPUTE_SPEC_DRAFT);
    CU_ASSERT_EQUAL(c.k, 3);
    CU_ASSERT_TRUE(c.has_draft);
    CU_ASSERT_EQUAL(c.draft.num_layers, 32);
    CU_ASSERT_STRING_EQUAL(sv_compute_spec_method_name(c.method), "draft");
    CU_ASSERT_TRUE(
        sv_compute_spec_validate("x", "draft_model", "Llama-3.1-8B", NULL, 1, 0, &c, NULL));
    CU_ASSERT_EQUAL(c.method, SV_COMPUTE_SPEC_DRAFT);

    CU_ASSERT_TRUE(sv_compute_spec_parse_flag("mtp:2:0.25", NULL, &c, NULL));
    CU_ASSERT_EQUAL(c.method, SV_COMPUTE_SPEC_MTP);
    CU_ASSERT_EQUAL(c.k, 2);
    CU_ASSERT_DOUBLE_EQUAL(c.acceptance, 0.25, 0);
    CU_ASSERT_TRUE(sv_compute_spec_parse_flag("draft:Llama-3.1-8B:5:0.8", NULL, &c, NULL));
    CU_ASSERT_EQUAL(c.k, 5);
    CU_ASSERT_FALSE(sv_compute_spec_parse_flag("eagle:0:0.5", NULL, &c, &e));
    CU_ASSERT_PTR_NOT_NULL(e && strstr(e->message, "--speculative.num_speculative_tokens: 0"));
    g_clear_error(&e);
    CU_ASSERT_FALSE(sv_compute_spec_parse_flag("eagle:4", NULL, &c, &e));
    CU_ASSERT_PTR_NOT_NULL(e && strstr(e->message, "is not METHOD:K:A or draft:MODEL:K:A"));
    g_clear_error(&e);
    CU_ASSERT_FALSE(sv_compute_spec_parse_flag("eagle:x:0.5", NULL, &c, &e));
    CU_ASSERT_PTR_NOT_NULL(e && strstr(e->message, "'x' is not an integer"));
    g_clear_error(&e);
}

/* a = 1: every step emits k + 1 (k accepted drafts and the bonus token); 10 output tokens at
 * k = 3 take ceil(10 / 4) = 3 steps, emitted 4, 4, 2, each group at its step's end. a = 0: one
 * token per step, 10 steps. Step = draft 300 + verify 1000 ns. */
static void test_extremes(void)
{
    struct sv_compute_spec_cfg c = {.method = SV_COMPUTE_SPEC_EAGLE, .k = 3, .acceptance = 1.0};
    g_autoptr(sv_rng) rng = sv_rng_new(1, "spec/0");
    for (int i = 0; i < 100; i++)
        CU_ASSERT_EQUAL(sv_compute_spec_sample(rng, 3, 1.0), 4);
    struct sv_compute_spec_result r;
    CU_ASSERT_TRUE_FATAL(sv_compute_spec_decode_request(&c, rng, 10, 300, 1000, &r));
    CU_ASSERT_EQUAL(r.steps, 3);
    CU_ASSERT_EQUAL(r.n_tokens, 10);
    CU_ASSERT_EQUAL(r.total_ns, 3900);
    const sv_time want[10] = {1300, 1300, 1300, 1300, 2600, 2600, 2600, 2600, 3900, 3900};
    for (int i = 0; i < 10; i++)
        CU_ASSERT_EQUAL(r.token_ns[i], want[i]);
    sv_compute_spec_result_clear(&r);

    c.acceptance = 0.0;
    for (int i = 0; i < 100; i++)
        CU_ASSERT_EQUAL(sv_compute_spec_sample(rng, 3, 0.0), 1);
    CU_ASSERT_TRUE_FATAL(sv_compute_spec_decode_request(&c, rng, 10, 300, 1000, &r));
    CU_ASSERT_EQUAL(r.steps, 10);
    CU_ASSERT_EQUAL(r.total_ns, 13000);
    for (int i = 0; i < 10; i++)
        CU_ASSERT_EQUAL(r.token_ns[i], 1300 * (i + 1));
    sv_compute_spec_result_clear(&r);
    CU_ASSERT_FALSE(sv_compute_spec_decode_request(&c, rng, 0, 300, 1000, &r));
}

/* Closed form by hand, k = 4: a = 0.5: (1 - 1/32) / 0.5 = 1.9375; a = 0.7: (1 - 0.16807) / 0.3
 * = 2.7731; a = 0.9: (1 - 0.59049) / 0.1 = 4.0951. The sample mean of 40,000 steps (standard
 * deviation of one step at most sqrt(k^2/4) = 2, so the mean's is 0.01) within 0.04. */
static void test_mean(void)
{
    const double a[3] = {0.5, 0.7, 0.9}, want[3] = {1.9375, 2.7731, 4.0951};
    for (int j = 0; j < 3; j++) {
        CU_ASSERT_DOUBLE_EQUAL(sv_compute_spec_expected_tokens(4, a[j]), want[j], 1e-4);
        g_autoptr(sv_rng) rng = sv_rng_new(42, "spec/1");
        int64_t sum = 0;
        for (int i = 0; i < 40000; i++)
            sum += sv_compute_spec_sample(rng, 4, a[j]);
        CU_ASSERT_DOUBLE_EQUAL(sum / 40000.0, want[j], 0.04);
    }
    CU_ASSERT_DOUBLE_EQUAL(sv_compute_spec_expected_tokens(4, 1.0), 5.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(sv_compute_spec_expected_tokens(4, 0.0), 1.0, 0);
}

static void test_determinism(void)
{
    g_autoptr(sv_rng) a = sv_rng_new(7, "spec/12");
    g_autoptr(sv_rng) b = sv_rng_new(7, "spec/12");
    g_autoptr(sv_rng) other = sv_rng_new(7, "spec/13");
    int same = 1, differ = 0;
    for (int i = 0; i < 200; i++) {
        int32_t x = sv_compute_spec_sample(a, 5, 0.6), y = sv_compute_spec_sample(b, 5, 0.6);
        int32_t z = sv_compute_spec_sample(other, 5, 0.6);
        same &= x == y;
        differ |= x != z;
        CU_ASSERT(x >= 1 && x <= 6);
    }
    CU_ASSERT_TRUE(same);
    CU_ASSERT_TRUE(differ);
}

/* Times: a decode pass P = prologue + L x layer + head, so an EAGLE/MTP draft token (one layer
 * plus the head, at the same KV) costs (P - prologue - head) / L + head; the test sums the
 * prologue and head operators itself. A draft model identical to the target at k = 1 costs one
 * decode pass; at k = 2 the passes at KV and KV + 1. At acceptance 0 a step is the draft cost
 * plus the verify pass, against one plain decode pass P without speculation. */
static void test_times(void)
{
    struct sv_compute_model_cfg m;
    struct sv_compute_hw_cfg hw;
    CU_ASSERT_FATAL(sv_compute_model_lookup("meta-llama/Llama-3.1-8B", NULL, &m, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100", &hw, NULL));
    g_autoptr(sv_compute_latency) lat = sv_compute_latency_new_roofline(&m, &hw, 1, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lat);
    const int64_t n = 8, kv = 1000;
    sv_time p = sv_compute_spec_decode_pass_ns(lat, n, kv);
    int64_t kvs[8];
    for (int i = 0; i < 8; i++)
        kvs[i] = kv;
    struct sv_compute_batch_shape s;
    sv_compute_batch_shape_init(&s, NULL, NULL, 0, kvs, n);
    const struct sv_compute_layer_seq *q = sv_compute_layer_seq(m.arch);
    sv_time pro = 0, head = 0;
    for (int i = 0; i < q->n_prologue; i++)
        pro += sv_compute_op_time(lat, q->prologue[i], &s);
    for (int i = 0; i < q->n_head; i++)
        head += sv_compute_op_time(lat, q->head[i], &s);
    CU_ASSERT_EQUAL((p - pro - head) % m.num_layers, 0);
    sv_time eagle1 = (p - pro - head) / m.num_layers + head;
    struct sv_compute_spec_cfg c = {.method = SV_COMPUTE_SPEC_EAGLE, .k = 1};
    CU_ASSERT_EQUAL(sv_compute_spec_draft_ns(&c, lat, NULL, n, kv), eagle1);
    CU_ASSERT(eagle1 > 0 && eagle1 < p / 4);

    c.method = SV_COMPUTE_SPEC_DRAFT;
    CU_ASSERT_EQUAL(sv_compute_spec_draft_ns(&c, lat, lat, n, kv), p);
    c.k = 2;
    CU_ASSERT_EQUAL(sv_compute_spec_draft_ns(&c, lat, lat, n, kv),
                    p + sv_compute_spec_decode_pass_ns(lat, n, kv + 1));

    /* The verify pass reads the same weights as a decode pass and computes k + 1 tokens per
     * request: no faster than the plain decode, and (memory bound at 8 x 5 = 40 tokens) well
     * under k + 1 decode passes. */
    sv_time v = sv_compute_spec_verify_pass_ns(lat, n, kv, 4);
    CU_ASSERT(v >= p);
    CU_ASSERT(v < 2 * p);
    struct sv_compute_spec_result r;
    g_autoptr(sv_rng) rng = sv_rng_new(3, "spec/0");
    c = (struct sv_compute_spec_cfg){.method = SV_COMPUTE_SPEC_EAGLE, .k = 4, .acceptance = 0};
    sv_time d = sv_compute_spec_draft_ns(&c, lat, NULL, n, kv);
    CU_ASSERT_TRUE_FATAL(sv_compute_spec_decode_request(&c, rng, 5, d, v, &r));
    CU_ASSERT_EQUAL(r.steps, 5);
    CU_ASSERT_EQUAL(r.total_ns, 5 * (d + v));
    CU_ASSERT(r.total_ns > 5 * p); /* slower than plain decode when nothing is accepted */
    sv_compute_spec_result_clear(&r);
}

/* Per-request rates from Beta(m c, (1 - m) c): mean m and variance m (1 - m) / (c + 1) (the Beta
 * distribution's moments). m = 0.7, c = 10: variance 0.21 / 11 = 0.019091; m = 0.2, c = 2 (shape
 * 0.4 < 1, the other branch of the gamma sampler): variance 0.16 / 3 = 0.053333. 40,000 draws:
 * the mean's standard error is under 0.0012, so 0.006 is five of them. */
static void test_beta(void)
{
    const double m[2] = {0.7, 0.2}, c[2] = {10, 2}, var[2] = {0.019091, 0.053333};
    for (int k = 0; k < 2; k++) {
        struct sv_compute_spec_cfg cfg;
        CU_ASSERT_FATAL(sv_compute_spec_parse_flag("eagle:4:0.5", NULL, &cfg, NULL));
        CU_ASSERT_FATAL(sv_compute_spec_set_beta("x", m[k], c[k], &cfg, NULL));
        g_autoptr(sv_rng) rng = sv_rng_new(3, "spec/rate");
        double sum = 0, sum2 = 0;
        const int n = 40000;
        for (int i = 0; i < n; i++) {
            double r = sv_compute_spec_request_rate(&cfg, rng);
            CU_ASSERT_FATAL(r >= 0 && r <= 1);
            sum += r;
            sum2 += r * r;
        }
        double mean = sum / n, v = sum2 / n - mean * mean;
        CU_ASSERT_DOUBLE_EQUAL(mean, m[k], 0.006);
        CU_ASSERT_DOUBLE_EQUAL(v, var[k], 0.1 * var[k]);
    }
    /* Same stream name and seed: the same rate; the fixed rate draws nothing. */
    struct sv_compute_spec_cfg cfg;
    CU_ASSERT_FATAL(sv_compute_spec_parse_flag("mtp:2:0.5", NULL, &cfg, NULL));
    CU_ASSERT_DOUBLE_EQUAL(sv_compute_spec_request_rate(&cfg, NULL), 0.5, 0);
    CU_ASSERT_FATAL(sv_compute_spec_set_beta("x", 0.6, 5, &cfg, NULL));
    g_autoptr(sv_rng) a = sv_rng_new(9, "spec/rate/12");
    g_autoptr(sv_rng) b = sv_rng_new(9, "spec/rate/12");
    CU_ASSERT_EQUAL(sv_compute_spec_request_rate(&cfg, a), sv_compute_spec_request_rate(&cfg, b));
    GError *e = NULL;
    CU_ASSERT_FALSE(sv_compute_spec_set_beta("p.acceptance", 0, 5, &cfg, &e));
    CU_ASSERT_PTR_NOT_NULL(e && strstr(e->message, "p.acceptance.mean: 0 is outside (0, 1)"));
    g_clear_error(&e);
    CU_ASSERT_FALSE(sv_compute_spec_set_beta("p.acceptance", 0.5, -1, &cfg, &e));
    CU_ASSERT_PTR_NOT_NULL(e && strstr(e->message, "p.acceptance.concentration: -1 is outside"));
    g_clear_error(&e);
}

/* Draft passes over a batch with mixed draft counts: pass i covers the requests proposing more
 * than i tokens. Two requests at KV 100 and 300 with 2 and 1 drafts: pass 0 is both (KV 100,
 * 300), pass 1 the first alone (KV 101), each one EAGLE layer plus the head, decode-shaped. And
 * the KV a speculator adds per token: Llama-3.1-8B, one layer's K and V, 2 x 8 heads x 128 x 2
 * bytes = 4,096 bytes at TP 1, 2,048 at TP 2. */
static void test_batch_draft(void)
{
    struct sv_compute_model_cfg mc;
    struct sv_compute_hw_cfg hw;
    CU_ASSERT_FATAL(sv_compute_model_lookup("meta-llama/Llama-3.1-8B", NULL, &mc, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100", &hw, NULL));
    sv_compute_latency *lat = sv_compute_latency_new_roofline(&mc, &hw, 1, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lat);
    struct sv_compute_spec_cfg c;
    CU_ASSERT_FATAL(sv_compute_spec_parse_flag("eagle:2:0.5", NULL, &c, NULL));
    const int64_t kv[2] = {100, 300};
    const int32_t ns[2] = {2, 1};
    sv_time got = sv_compute_spec_draft_batch_ns(&c, lat, NULL, kv, ns, 2);
    /* by hand: sum the layer's and head's operators over the two pass shapes */
    const struct sv_compute_layer_seq *q = sv_compute_layer_seq(mc.arch);
    sv_time want = 0;
    for (int pass = 0; pass < 2; pass++) {
        int64_t kvs[2] = {pass == 0 ? 100 : 101, 300};
        struct sv_compute_batch_shape s;
        sv_compute_batch_shape_init(&s, NULL, NULL, 0, kvs, pass == 0 ? 2 : 1);
        for (int i = 0; i < q->n_pre_attn; i++)
            want += sv_compute_op_time(lat, q->pre_attn[i], &s);
        for (int i = 0; i < q->n_post_attn; i++)
            want += sv_compute_op_time(lat, q->post_attn[i], &s);
        for (int i = 0; i < q->n_mlp; i++)
            want += sv_compute_op_time(lat, q->mlp[i], &s);
        for (int i = 0; i < q->n_head; i++)
            want += sv_compute_op_time(lat, q->head[i], &s);
    }
    SV_ASSERT_EQ_I64(got, want);
    SV_ASSERT_EQ_I64(sv_compute_spec_kv_bytes_per_token(&c, &mc, 1), 4096);
    SV_ASSERT_EQ_I64(sv_compute_spec_kv_bytes_per_token(&c, &mc, 2), 2048);
    sv_compute_latency_free(lat);
}

/* Per pass under TP (docs/speculative.md "Tensor parallelism"): a draft model's passes carry 2
 * all-reduces per layer, an EAGLE head's 2 (its one decoder layer), each of the pass's tokens x
 * hidden x 2 bytes; none at TP 1. Draft = Llama-3.1-8B itself (32 layers, hidden 4,096): pass 0
 * of 2 requests 2 x 32 = 64 all-reduces of 2 x 4,096 x 2 = 16,384 bytes, pass 1 of 1 request
 * 8,192 bytes. And the heads' weights on a rank: one layer of Llama-3.1-8B, 218,112,000
 * parameters (q, o 4,096^2 each; k, v 4,096 x 1,024 each; MLP 3 x 4,096 x 14,336, sharded; 2
 * norms of 4,096, replicated): 436,224,000 bytes at TP 1, 218,103,808 + 16,384 at TP 2; plus the
 * replicated fc, 2 x 4,096 x 4,096 x 2 = 67,108,864 bytes, on every rank. */
static void test_tp_passes(void)
{
    struct sv_compute_model_cfg mc;
    struct sv_compute_hw_cfg hw;
    CU_ASSERT_FATAL(sv_compute_model_lookup("meta-llama/Llama-3.1-8B", NULL, &mc, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100", &hw, NULL));
    struct sv_compute_spec_cfg eagle, draft;
    CU_ASSERT_FATAL(sv_compute_spec_parse_flag("eagle:2:0.5", NULL, &eagle, NULL));
    CU_ASSERT_FATAL(
        sv_compute_spec_parse_flag("draft:meta-llama/Llama-3.1-8B:2:0.5", NULL, &draft, NULL));
    const int64_t kv[2] = {100, 300};
    const int32_t ns[2] = {2, 1};
    for (int tp = 1; tp <= 2; tp++) {
        sv_compute_latency *lat = sv_compute_latency_new_roofline(&mc, &hw, tp, NULL, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(lat);
        struct sv_compute_spec_pass p[SV_COMPUTE_SPEC_MAX_K];
        SV_ASSERT_EQ_I64(sv_compute_spec_draft_passes(&draft, lat, lat, kv, ns, 2, p), 2);
        SV_ASSERT_EQ_I64(p[0].n_allreduce * (tp > 1), tp > 1 ? 64 : 0);
        SV_ASSERT_EQ_I64(p[0].allreduce_bytes, tp > 1 ? 16384 : 0);
        SV_ASSERT_EQ_I64(p[1].allreduce_bytes, tp > 1 ? 8192 : 0);
        /* a draft identical to the target: its pass is the target's decode pass */
        SV_ASSERT_EQ_I64(p[1].ns, sv_compute_spec_decode_pass_ns(lat, 1, 101));
        SV_ASSERT_EQ_I64(sv_compute_spec_draft_passes(&eagle, lat, NULL, kv, ns, 2, p), 2);
        SV_ASSERT_EQ_I64(p[0].n_allreduce * (tp > 1), tp > 1 ? 2 : 0);
        SV_ASSERT_EQ_I64(p[1].allreduce_bytes, tp > 1 ? 8192 : 0);
        SV_ASSERT_EQ_I64(sv_compute_spec_draft_weight_bytes(&eagle, &mc, tp),
                         (436224000 - 16384) / tp + 16384 + 67108864);
        sv_compute_latency_free(lat);
    }
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"validation errors name the config path", test_validation},
        {"acceptance 1 and 0: tokens and times by hand", test_extremes},
        {"mean tokens per step vs Leviathan et al.", test_mean},
        {"seeded streams are deterministic", test_determinism},
        {"draft and verify times from the latency model", test_times},
        {"per-request Beta rates: moments by hand, seeded", test_beta},
        {"draft passes over a mixed batch; the speculator's KV", test_batch_draft},
        {"TP all-reduces per draft pass; the heads' weights", test_tp_passes},
        {NULL, NULL},
    };
    sv_test_add_suite("specdec", cases);
    return sv_test_run();
}
