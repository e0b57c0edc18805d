/* A program that embeds servesim (docs/embedding.md): a one-instance cluster from the built-in
 * catalogs, a generated workload and one run through the public API, with an observer that sees
 * every finished request. Built against an installed servesim:
 *
 *   cc -std=c11 embed.c $(pkg-config --cflags --libs libservesim) -o embed
 *
 * The workload is chosen so that its totals follow by hand: 20 requests of exactly 128 prompt
 * and 16 output tokens, arriving every 0.2 s (fixed gaps; the first one gap after time 0), so
 * request k arrives at 0.2 x (k + 1) s and the last at 4.0 s. The program checks those numbers
 * and exits 1 when one is off, so it doubles as the install test (tests/install). */
#include <stdio.h>

#include "planner/planner.h"

#define N_REQUESTS 20
#define INPUT_TOKENS 128
#define OUTPUT_TOKENS 16
#define QPS 5.0
#define GAP_NS (SV_NS_PER_S / 5) /* 1 / QPS */

struct tally {
    uint64_t seen;
    uint64_t bad; /* requests whose record disagrees with the workload */
    sv_time last_token_ns;
};

static void on_request(void *ctx, const struct sv_wl_outcome *rec)
{
    struct tally *t = ctx;
    t->seen++;
    /* Ids are dense in arrival order, so the id gives the arrival time. The generator adds the
     * gaps up in floating-point seconds and truncates to nanoseconds (core.h sv_time_from_ns):
     * 8 x 0.2 s is 1.5999999999999999 s, so an arrival may come 1 ns early. */
    sv_time arrival = (sv_time)(rec->request_id + 1) * GAP_NS;
    if (!rec->finished || rec->input_tokens != INPUT_TOKENS ||
        rec->output_tokens != OUTPUT_TOKENS || rec->arrival_ns > arrival ||
        rec->arrival_ns < arrival - 1 || rec->first_token_ns <= rec->arrival_ns ||
        rec->last_token_ns < rec->first_token_ns) {
        fprintf(stderr,
                "request %" G_GUINT64_FORMAT ": unexpected record (arrival %" G_GINT64_FORMAT
                " ns, expected %" G_GINT64_FORMAT ")\n",
                rec->request_id, rec->arrival_ns, arrival);
        t->bad++;
    }
    if (rec->last_token_ns > t->last_token_ns)
        t->last_token_ns = rec->last_token_ns;
}

int main(void)
{
    g_autoptr(GError) err = NULL;
    int rc = 1;
    struct sv_planner_cluster_cfg *cluster =
        sv_planner_cluster_single("meta-llama/Llama-3.1-8B", "H100-SXM", 1, &err);
    sv_wl_source *src = NULL;
    if (!cluster)
        goto out;

    struct sv_wl_gen_cfg gen = {
        .seed = 0,
        .count = N_REQUESTS,
        .arrival = {.kind = SV_WL_ARRIVAL_FIXED, .rate_per_s = QPS},
        .input_len = {.kind = SV_WL_LEN_FIXED, .value = INPUT_TOKENS},
        .output_len = {.kind = SV_WL_LEN_FIXED, .value = OUTPUT_TOKENS},
    };
    src = sv_wl_generator_new(&gen, &err);
    if (!src)
        goto out;

    struct tally tally = {0};
    struct sv_planner_run_observer obs = {.on_request = on_request, .ctx = &tally};
    struct sv_planner_run_cfg cfg;
    sv_planner_run_cfg_init(&cfg); /* every option unset: vLLM's defaults */
    cfg.cluster = cluster;
    cfg.workload = src;
    cfg.latency = SV_PLANNER_RUN_LATENCY_ROOFLINE; /* no profile bundles needed */
    cfg.observer = &obs;
    struct sv_planner_run_result res;
    if (!sv_planner_run(&cfg, &res, &err))
        goto out;

    printf("finished %" G_GUINT64_FORMAT " of %d requests, %" G_GUINT64_FORMAT
           " prompt and %" G_GUINT64_FORMAT " output tokens, makespan %.3f s\n",
           res.requests, N_REQUESTS, res.prompt_tokens, res.output_tokens,
           (double)res.makespan_ns / SV_NS_PER_S);
    /* Expected: every request finished once with its exact token counts; the last token comes
     * after the last arrival (4.0 s, less the 1 ns above); the result's makespan is the observer's
     * last token. */
    if (res.requests == N_REQUESTS && tally.seen == N_REQUESTS && tally.bad == 0 &&
        res.prompt_tokens == (uint64_t)N_REQUESTS * INPUT_TOKENS &&
        res.output_tokens == (uint64_t)N_REQUESTS * OUTPUT_TOKENS &&
        res.makespan_ns == tally.last_token_ns && res.makespan_ns > N_REQUESTS * GAP_NS - 1)
        rc = 0;
    else
        fprintf(stderr, "embed: results differ from the hand-computed totals\n");
out:
    if (err)
        fprintf(stderr, "embed: %s\n", err->message);
    sv_wl_source_free(src);
    sv_planner_cluster_free(cluster);
    return rc;
}
