/* spec_curve: the speed-up of speculative decoding against acceptance (docs/speculative.md), from
 * compute/specdec.c on the analytic latency model, next to Leviathan et al. 2023's closed form.
 *
 * usage: spec_curve TARGET HW SPEC [BATCH KV OUTPUT_TOKENS REQUESTS SEED]
 *   SPEC is the --speculative quick form without the acceptance: "eagle:K", "mtp:K",
 *   "draft:MODEL:K". Defaults: batch 1, KV 1024, 256 output tokens, 200 requests, seed 1.
 * Prints one markdown row per acceptance 0, 0.5, 0.7, 0.9, 1: the closed-form tokens per step,
 * the mean measured over the requests (each its own stream "spec/<i>"), the step time, and the
 * speed-up per output token over plain decode, measured and by the closed form
 * E x T_decode / (k T_draft_pass + T_verify) (Leviathan et al.'s (1 - a^(k+1)) / ((1 - a)(ck + 1))
 * with c = T_draft_pass / T_decode when T_verify = T_decode), and Leviathan et al.'s Theorem 3.8
 * itself (verify = one decode pass). */
#include "compute/compute.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr,
                "usage: spec_curve TARGET HW SPEC [BATCH KV OUTPUT_TOKENS REQUESTS SEED]\n");
        return 2;
    }
    int64_t batch = argc > 4 ? atoll(argv[4]) : 1, kv = argc > 5 ? atoll(argv[5]) : 1024;
    int64_t out_tokens = argc > 6 ? atoll(argv[6]) : 256, n_req = argc > 7 ? atoll(argv[7]) : 200;
    uint64_t seed = argc > 8 ? strtoull(argv[8], NULL, 10) : 1;
    if (batch < 1 || kv < 0 || out_tokens < 1 || n_req < 1) {
        fprintf(stderr, "spec_curve: BATCH, OUTPUT_TOKENS and REQUESTS must be >= 1, KV >= 0\n");
        return 2;
    }
    GError *e = NULL;
    struct sv_compute_model_cfg m;
    struct sv_compute_hw_cfg hw;
    struct sv_compute_spec_cfg c;
    char *flag = g_strdup_printf("%s:0", argv[3]);
    if (!sv_compute_model_lookup(argv[1], NULL, &m, &e) ||
        !sv_compute_hw_lookup(argv[2], &hw, &e) ||
        !sv_compute_spec_parse_flag(flag, NULL, &c, &e)) {
        fprintf(stderr, "spec_curve: %s\n", e->message);
        return 1;
    }
    g_free(flag);
    sv_compute_latency *lat = sv_compute_latency_new_roofline(&m, &hw, 1, NULL, &e);
    sv_compute_latency *dlat = NULL;
    if (lat && c.has_draft)
        dlat = sv_compute_latency_new_roofline(&c.draft, &hw, 1, NULL, &e);
    if (!lat || (c.has_draft && !dlat)) {
        fprintf(stderr, "spec_curve: %s\n", e->message);
        return 1;
    }
    sv_time plain = sv_compute_spec_decode_pass_ns(lat, batch, kv);
    sv_time draft = sv_compute_spec_draft_ns(&c, lat, dlat, batch, kv);
    sv_time verify = sv_compute_spec_verify_pass_ns(lat, batch, kv, c.k);
    printf("%s on %s, %s k=%d, batch %" G_GINT64_FORMAT ", KV %" G_GINT64_FORMAT
           ": decode %.1f us, draft (k passes) %.1f us, verify %.1f us\n\n",
           m.name, hw.name, sv_compute_spec_method_name(c.method), c.k, batch, kv, plain / 1e3,
           draft / 1e3, verify / 1e3);
    printf("| acceptance | E tokens/step (closed form) | measured tokens/step | step (us) | "
           "speed-up measured | closed form (T_verify) | Leviathan Thm 3.8 "
           "|\n|---|---|---|---|---|---|---|\n");
    const double as[] = {0.0, 0.5, 0.7, 0.9, 1.0};
    for (size_t j = 0; j < G_N_ELEMENTS(as); j++) {
        c.acceptance = as[j];
        int64_t steps = 0, tokens = 0;
        sv_time total = 0;
        for (int64_t i = 0; i < n_req; i++) {
            char name[40];
            g_snprintf(name, sizeof name, "spec/%" G_GINT64_FORMAT, i);
            sv_rng *rng = sv_rng_new(seed, name);
            struct sv_compute_spec_result r;
            sv_compute_spec_decode_request(&c, rng, out_tokens, draft, verify, &r);
            steps += r.steps;
            tokens += r.n_tokens;
            total += r.total_ns;
            sv_compute_spec_result_clear(&r);
            sv_rng_free(rng);
        }
        double expect = sv_compute_spec_expected_tokens(c.k, as[j]);
        double measured = (double)plain * (double)tokens / (double)total;
        double closed = expect * (double)plain / (double)(draft + verify);
        double cost = (double)draft / c.k / (double)plain; /* Leviathan's c */
        double thm = expect / (c.k * cost + 1.0);
        printf("| %.1f | %.4f | %.4f | %.1f | %.3f | %.3f | %.3f |\n", as[j], expect,
               (double)tokens / (double)steps, (draft + verify) / 1e3, measured, closed, thm);
    }
    sv_compute_latency_free(dlat);
    sv_compute_latency_free(lat);
    return 0;
}
