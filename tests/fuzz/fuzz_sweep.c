/* Fuzz target: `servesim sweep` specs (planner/sweep.c, sweep_row.c, sweep_sched.c): the YAML
 * spec parsed, its grid expanded and its path axes applied to a base cluster config, parse and
 * expand only (nothing runs). The base config the spec may name (`run: {cluster: base.json}`) is
 * a fixed two-instance config written next to the spec.
 *
 * On a loaded spec: the point count within the documented cap (docs/sweep.md); for a few points
 * (the first, the last and some between) the folder name, the patched cluster (an error names the
 * spec), the run arguments and a sweep.csv row; and for a grid of at most 4096 points the
 * scheduler driven to the end (grid order, a shard of 3, and the goal search when the spec has a
 * goal), with made-up results whose latencies grow with the point index, and the verdict. */
#include "fuzz.h"

#include "planner/planner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_POINTS 1000000u /* docs/sweep.md: "A grid has at most 1,000,000 points." */

static const char BASE[] =
    "{\"num_nodes\": 1, \"link_bw\": 16, \"link_latency\": 0,\n"
    " \"nodes\": [{\"num_instances\": 2, \"cpu_mem\": {\"mem_size\": 512, \"mem_bw\": 256,\n"
    "   \"mem_latency\": 0},\n"
    "   \"instances\": [\n"
    "     {\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"A6000\", \"npu_mem\":\n"
    "      {\"mem_size\": 40, \"mem_bw\": 936, \"mem_latency\": 0}, \"num_npus\": 1,\n"
    "      \"tp_size\": 1, \"pd_type\": \"prefill\"},\n"
    "     {\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"A6000\", \"npu_mem\":\n"
    "      {\"mem_size\": 40, \"mem_bw\": 936, \"mem_latency\": 0}, \"num_npus\": 2,\n"
    "      \"tp_size\": 2, \"pd_type\": \"decode\"}]}]}\n";

/* A made-up outcome of point k: every metric known, latencies growing with k (so that a goal
 * search passes the low loads and misses the high ones), a failure every 7th point. */
static void fake_result(guint k, struct sv_sweep_result *r)
{
    memset(r, 0, sizeof *r);
    r->status = k % 7 == 6 ? SV_SWEEP_FAILED : SV_SWEEP_OK;
    for (int i = 0; i < SV_SWEEP_N_METRICS; i++) {
        r->m[i] = (double)(k + 1) * (i + 1) * 37.5;
        r->have |= (guint64)1 << i;
    }
}

static void check_point(const sv_sweep_spec *s, guint k, const char *path)
{
    g_autofree char *name = sv_planner_sweep_point_name(s, k);
    if (!name[0])
        abort();
    char *json = NULL;
    GError *e = NULL;
    gboolean ok = sv_planner_sweep_point_cluster(s, k, &json, &e);
    sv_fuzz_check(ok, e, path);
    g_clear_error(&e);
    g_free(json);
    g_autoptr(GPtrArray) args = sv_planner_sweep_point_args(s, k, ok ? NULL : "patched.json");
    for (guint i = 0; i < args->len; i++)
        if (!args->pdata[i])
            abort();
    struct sv_sweep_result r;
    fake_result(k, &r);
    r.error = k % 7 == 6 ? g_strdup("exit status 1: made up") : NULL;
    g_free(sv_planner_sweep_csv_row(s, k, &r));
    sv_planner_sweep_result_clear(&r);
}

static void drive(const sv_sweep_spec *s, gboolean goal, guint shard_i, guint shard_n)
{
    g_autoptr(sv_sweep_sched) q = sv_planner_sweep_sched_new(s, goal, shard_i, shard_n);
    guint n = sv_planner_sweep_n_points(s), steps = 0;
    int k;
    while ((k = sv_planner_sweep_sched_next(q)) >= 0) {
        if ((guint)k >= n || ++steps > n) {
            fprintf(stderr, "fuzz: the scheduler gave point %d (of %u) at step %u\n", k, n, steps);
            abort();
        }
        struct sv_sweep_result r;
        fake_result((guint)k, &r);
        sv_planner_sweep_sched_done(q, (guint)k, &r);
    }
    if (k != SV_SWEEP_DONE) { /* nothing is running: WAIT would wait forever */
        fprintf(stderr, "fuzz: the scheduler waits with nothing running\n");
        abort();
    }
    for (guint i = 0; i < n; i++)
        (void)sv_planner_sweep_sched_status(q, i);
    if (goal) {
        g_free(sv_planner_sweep_goal_json(q));
        g_free(sv_planner_sweep_goal_line(q));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static gboolean base_written;
    if (!base_written) {
        sv_fuzz_aux_file("base.json", BASE, sizeof BASE - 1);
        base_written = TRUE;
    }
    const char *path = sv_fuzz_input_file(data, size, "sweep.yaml");
    GError *e = NULL;
    g_autoptr(sv_sweep_spec) s = sv_planner_sweep_load(path, &e);
    sv_fuzz_check(s != NULL, e, path);
    g_clear_error(&e);
    if (!s)
        return 0;
    guint n = sv_planner_sweep_n_points(s);
    if (n < 1 || n > MAX_POINTS) {
        fprintf(stderr, "fuzz: a spec of %u points loaded (cap %u)\n", n, MAX_POINTS);
        abort();
    }
    g_free(sv_planner_sweep_csv_header(s));
    const guint picks[] = {0, 1, 2, n / 3, n / 2, n - 2, n - 1};
    for (size_t i = 0; i < G_N_ELEMENTS(picks); i++)
        if (picks[i] < n)
            check_point(s, picks[i], path);
    if (n <= 4096) {
        drive(s, FALSE, 0, 1);
        drive(s, FALSE, 2, 3);
        if (sv_planner_sweep_has_goal(s))
            drive(s, TRUE, 0, 1);
    }
    return 0;
}
