/* Fuzz target: the report's run-folder readers (report/run.c) and the page drawn from what they
 * read (report/html.c, plot.c: PLplot's svg driver).
 *
 * The first byte of an input picks which file of a run folder the rest is: byte % 5 = 0
 * summary.json, 1 requests.csv, 2 timeseries.csv, 3 power.csv, 4 run.json; the other four files
 * are small valid ones written beside it. The folder is loaded with sv_report_run_load (an error
 * must name the fuzzed file); by (byte / 5) % 3, a loaded run is then not drawn (0), drawn into
 * a page alone (1), or twice, as a comparison of two runs (2). The page must come back, or an
 * error with a message: the finite numbers that parse (+-1.8e308, 4.9e-324, -0; the CSV readers
 * refuse inf and nan, JSON has none) reach the axes and the tables.
 *
 * The same folder is also read as a sweep point's (sv_planner_sweep_read, planner/sweep_row.c:
 * `servesim sweep` and `--merge` read summary.json and, for the GPU count, run.json's instances
 * or nodes) and its sweep.csv row made, for a fixed spec of two points. */
#include "fuzz.h"

#include "planner/planner.h"
#include "report/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const NAMES[5] = {"summary.json", "requests.csv", "timeseries.csv", "power.csv",
                                     "run.json"};

static const char *const FIXED[5] = {
    "{\"requests\": {\"finished\": 2, \"total\": 2},\n"
    " \"makespan_s\": 2.5,\n"
    " \"throughput\": {\"requests_per_s\": 0.8, \"input_tokens_per_s\": 40,\n"
    "                \"output_tokens_per_s\": 20},\n"
    " \"latency_ms\": {\"ttft\": {\"mean\": 1.5, \"p50\": 1.5, \"p99\": 2},\n"
    "                \"tpot\": {\"mean\": 0.2, \"p50\": 0.2, \"p99\": 0.2},\n"
    "                \"itl\": {\"mean\": 0.2, \"p50\": 0.2, \"p99\": 0.2, \"count\": 3},\n"
    "                \"e2e\": {\"mean\": 3.5, \"p50\": 3.5, \"p99\": 4}},\n"
    " \"energy\": {\"total_j\": 500, \"j_per_output_token\": 10},\n"
    " \"instances\": [{\"id\": 0, \"role\": \"prefill\", \"model\": \"m\", \"hardware\": "
    "\"A6000\",\n"
    "                 \"tp\": 1, \"pp\": 1, \"kv_blocks\": 100, \"requests_served\": 2}],\n"
    " \"pools\": [{\"role\": \"prefill\", \"hardware\": \"A6000\", \"instances\": 1}]}\n",
    "id,status,ttft_ns,tpot_ns,e2e_ns\n0,finished,1000000,200000,3000000\n"
    "1,finished,2000000,,4000000\n2,aborted,,,\n",
    "t,prompt_throughput,gen_throughput,running,waiting,kv_cache_pct,npu_mem_bytes\n"
    "0,10,20,1,0,5.5,1000\n1,0,30,2,1,7.5,2000\n2,0,10,1,0,2.5,500\n",
    "t,node0_npu_w,node0_base_w,node1_npu_w,total_w\n0,100,50,100,250\n1,200,50,150,400\n",
    "{\"argv\": [\"servesim\", \"run\", \"--qps\", \"2\"]}\n",
};

/* The sweep's reading of a point folder; the spec is loaded once. */
static void sweep_point(const char *dir)
{
    static sv_sweep_spec *spec;
    if (!spec) {
        static const char text[] = "axes: [{name: qps, values: [1, 2]}]\n";
        GError *e = NULL;
        spec = sv_planner_sweep_load(sv_fuzz_aux_file("spec.yaml", text, sizeof text - 1), &e);
        if (!spec) {
            fprintf(stderr, "fuzz: the fixed spec: %s\n", e->message);
            abort();
        }
    }
    struct sv_sweep_result r = {0};
    sv_planner_sweep_read(spec, 1, dir, 0, "servesim run: latency note\nwhat went wrong\n", &r);
    if (r.status != SV_SWEEP_OK && r.status != SV_SWEEP_FAILED)
        abort();
    g_free(sv_planner_sweep_csv_row(spec, 1, &r));
    sv_planner_sweep_result_clear(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int which = data[0] % 5;
    int draw = (data[0] / 5) % 3;
    const char *path = sv_fuzz_input_file(data + 1, size - 1, NAMES[which]);
    for (int i = 0; i < 5; i++)
        if (i != which)
            sv_fuzz_aux_file(NAMES[i], FIXED[i], strlen(FIXED[i]));
    g_autofree char *dir = g_path_get_dirname(path);
    if (which == 0 || which == 4)
        sweep_point(dir);
    GError *e = NULL;
    g_autoptr(sv_report_run) run = sv_report_run_load(dir, "fuzz", &e);
    sv_fuzz_check(run != NULL, e, path);
    g_clear_error(&e);
    if (!run || draw == 0)
        return 0;
    sv_report_run *runs[2] = {run, run};
    struct sv_report_cfg cfg = {.title = "fuzz"};
    char *html = sv_report_html(runs, (guint)draw, &cfg, &e);
    if (!html && (!e || !e->message || !e->message[0])) {
        fprintf(stderr, "fuzz: no page and no error\n");
        abort();
    }
    if (html && (e || !strstr(html, "</html>"))) {
        fprintf(stderr, "fuzz: a page with an error set, or cut short\n");
        abort();
    }
    g_clear_error(&e);
    g_free(html);
    return 0;
}
