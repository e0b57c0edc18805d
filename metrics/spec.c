/* summary.json's "speculative_decoding" (docs/speculative.md, docs/outputs.md): vLLM's spec-decode
 * counters (vllm/v1/spec_decode/metrics.py SpecDecodingLogging: num_drafts, num_draft_tokens,
 * num_accepted_tokens, mean acceptance length 1 + accepted / drafts, draft acceptance rate
 * accepted / draft tokens, and the acceptance rate per position, accepted at i / drafts), for the
 * run and per instance. */
#include "metrics/metrics_internal.h"

#include <stdio.h>
#include <string.h>

static void counters(JsonBuilder *b, const struct sv_metrics_spec *c)
{
    sv_metrics__put_int(b, "num_drafts", (int64_t)c->num_drafts);
    sv_metrics__put_int(b, "num_draft_tokens", (int64_t)c->num_draft_tokens);
    sv_metrics__put_int(b, "num_accepted_tokens", (int64_t)c->num_accepted_tokens);
    double d = (double)c->num_drafts;
    sv_metrics__put_double(b, "mean_acceptance_length",
                           d > 0 ? 1.0 + (double)c->num_accepted_tokens / d : 0.0);
    sv_metrics__put_double(b, "draft_acceptance_rate",
                           c->num_draft_tokens > 0
                               ? (double)c->num_accepted_tokens / (double)c->num_draft_tokens
                               : 0.0);
    json_builder_set_member_name(b, "acceptance_rate_per_position");
    json_builder_begin_array(b);
    for (int i = 0; i < c->k && i < SV_METRICS_SPEC_MAX_K; i++)
        json_builder_add_double_value(b, d > 0 ? (double)c->accepted_per_pos[i] / d : 0.0);
    json_builder_end_array(b);
}

static void total(const struct sv_metrics_summary *s, struct sv_metrics_spec *all)
{
    memset(all, 0, sizeof *all);
    for (int i = 0; i < s->n_spec; i++) {
        const struct sv_metrics_spec *c = &s->spec[i];
        all->k = MAX(all->k, c->k);
        all->num_drafts += c->num_drafts;
        all->num_draft_tokens += c->num_draft_tokens;
        all->num_accepted_tokens += c->num_accepted_tokens;
        for (int j = 0; j < c->k && j < SV_METRICS_SPEC_MAX_K; j++)
            all->accepted_per_pos[j] += c->accepted_per_pos[j];
    }
}

void sv_metrics__spec_print(FILE *out, const struct sv_metrics_summary *s)
{
    if (s->n_spec == 0)
        return;
    struct sv_metrics_spec all;
    total(s, &all);
    double d = (double)all.num_drafts;
    fprintf(out,
            "speculative: %" G_GUINT64_FORMAT " drafts, %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
            " draft tokens accepted (%.1f %%), mean acceptance length "
            "%.3f\n",
            (guint64)all.num_drafts, (guint64)all.num_accepted_tokens,
            (guint64)all.num_draft_tokens,
            all.num_draft_tokens
                ? 100.0 * (double)all.num_accepted_tokens / (double)all.num_draft_tokens
                : 0.0,
            d > 0 ? 1.0 + (double)all.num_accepted_tokens / d : 0.0);
}

void sv_metrics__spec_json(JsonBuilder *b, const struct sv_metrics_summary *s)
{
    if (s->n_spec == 0)
        return;
    struct sv_metrics_spec all;
    total(s, &all);
    json_builder_set_member_name(b, "speculative_decoding");
    json_builder_begin_object(b);
    counters(b, &all);
    json_builder_set_member_name(b, "instances");
    json_builder_begin_array(b);
    for (int i = 0; i < s->n_spec; i++) {
        const struct sv_metrics_spec *c = &s->spec[i];
        json_builder_begin_object(b);
        sv_metrics__put_int(b, "instance", c->instance);
        json_builder_set_member_name(b, "method");
        json_builder_add_string_value(b, c->method);
        sv_metrics__put_int(b, "num_speculative_tokens", c->k);
        counters(b, c);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
}
