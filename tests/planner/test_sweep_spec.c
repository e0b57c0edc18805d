/* servesim sweep's spec and grid (planner/sweep.c, sweep_row.c, sweep_sched.c; docs/sweep.md):
 * expansions computed by hand, cluster patches, errors with file:line and key path, the sweep.csv
 * header, shard selection and the goal search's order and pruning on results made up here. */
#include "planner/planner.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <json-glib/json-glib.h>
#include <string.h>

static char *tmp;

static char *write_spec(const char *name, const char *text)
{
    char *p = g_build_filename(tmp, name, NULL);
    g_assert(g_file_set_contents(p, text, -1, NULL));
    return p;
}

static char *joined_args(const sv_sweep_spec *s, guint k, const char *cluster)
{
    g_autoptr(GPtrArray) a = sv_planner_sweep_point_args(s, k, cluster);
    g_ptr_array_add(a, NULL);
    return g_strjoinv(" ", (char **)a->pdata);
}

/* 2 x 3 x 1 points; the first axis varies slowest; a zip sets two flags; axis flags replace the
 * base's; a relative path flag starts at the spec's folder. */
static void test_expansion(void)
{
    g_autofree char *p = write_spec("grid.yaml", "run:\n"
                                                 "  workload: w.jsonl\n"
                                                 "  qps: 9\n"
                                                 "  latency: roofline\n"
                                                 "  enable-prefix-sharing: true\n"
                                                 "  strict: false\n"
                                                 "axes:\n"
                                                 "  - {name: qps, values: [1, 2]}\n"
                                                 "  - zip: [instances, tp]\n"
                                                 "    values: [[8, 1], [4, 2], [2, 4]]\n"
                                                 "  - {name: seed, values: [7]}\n");
    g_autoptr(GError) e = NULL;
    g_autoptr(sv_sweep_spec) s = sv_planner_sweep_load(p, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(sv_planner_sweep_n_points(s), 6);
    g_autofree char *w = g_build_filename(tmp, "w.jsonl", NULL);
    /* k = 4: qps index 4 / 3 = 1 (2), zip index 4 % 3 = 1 ([4, 2]), seed 7 */
    g_autofree char *a4 = joined_args(s, 4, NULL);
    g_autofree char *want4 = g_strdup_printf("--workload %s --latency roofline "
                                             "--enable-prefix-sharing --qps 2 --instances 4 --tp 2 "
                                             "--seed 7",
                                             w);
    CU_ASSERT_STRING_EQUAL(a4, want4);
    g_autofree char *a0 = joined_args(s, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL(strstr(a0, "--qps 1 --instances 8 --tp 1 --seed 7"));
    g_autofree char *name = sv_planner_sweep_point_name(s, 4);
    CU_ASSERT_STRING_EQUAL(name, "0004");
    g_autofree char *h = sv_planner_sweep_csv_header(s);
    CU_ASSERT_STRING_EQUAL(
        h, "point,qps,instances,tp,seed,status,error,completed,request_throughput,"
           "output_throughput,total_token_throughput,mean_ttft_ms,median_ttft_ms,p99_ttft_ms,"
           "mean_tpot_ms,median_tpot_ms,p99_tpot_ms,mean_itl_ms,median_itl_ms,p99_itl_ms,"
           "mean_e2el_ms,median_e2el_ms,p99_e2el_ms,gpus,output_throughput_per_gpu,"
           "total_token_throughput_per_gpu,energy_j,energy_per_output_token_j\n");
    char *json = NULL;
    CU_ASSERT_TRUE(sv_planner_sweep_point_cluster(s, 4, &json, &e));
    CU_ASSERT_PTR_NULL(json); /* no path axis: nothing patched */
}

/* A path axis patches every instance `[*]` matches; a new last member is added. */
static void test_cluster_patch(void)
{
    g_autofree char *c = g_build_filename(tmp, "c.json", NULL);
    g_assert(g_file_set_contents(c,
                                 "{\"nodes\": [{\"instances\": [{\"tp_size\": 1}, {\"tp_size\": "
                                 "1}]}, {\"instances\": [{\"tp_size\": 1}]}]}",
                                 -1, NULL));
    g_autofree char *p = write_spec("patch.yaml", "run: {cluster: c.json}\n"
                                                  "axes:\n"
                                                  "  - name: tp\n"
                                                  "    path: \"nodes[*].instances[*].tp_size\"\n"
                                                  "    values: [2, 4]\n"
                                                  "  - zip: [{name: pp, path: "
                                                  "\"nodes[0].instances[1].pp_size\"}, "
                                                  "max-num-seqs]\n"
                                                  "    values: [[3, 64]]\n");
    g_autoptr(GError) e = NULL;
    g_autoptr(sv_sweep_spec) s = sv_planner_sweep_load(p, &e);
    if (!s)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    g_autofree char *json = NULL;
    CU_ASSERT_TRUE_FATAL(sv_planner_sweep_point_cluster(s, 1, &json, &e));
    CU_ASSERT_PTR_NOT_NULL_FATAL(json);
    g_autoptr(JsonParser) jp = json_parser_new();
    CU_ASSERT_TRUE_FATAL(json_parser_load_from_data(jp, json, -1, NULL));
    JsonArray *nodes =
        json_object_get_array_member(json_node_get_object(json_parser_get_root(jp)), "nodes");
    JsonArray *i0 =
        json_object_get_array_member(json_array_get_object_element(nodes, 0), "instances");
    JsonArray *i1 =
        json_object_get_array_member(json_array_get_object_element(nodes, 1), "instances");
    CU_ASSERT_EQUAL(json_object_get_int_member(json_array_get_object_element(i0, 0), "tp_size"), 4);
    CU_ASSERT_EQUAL(json_object_get_int_member(json_array_get_object_element(i0, 1), "tp_size"), 4);
    CU_ASSERT_EQUAL(json_object_get_int_member(json_array_get_object_element(i1, 0), "tp_size"), 4);
    CU_ASSERT_EQUAL(json_object_get_int_member(json_array_get_object_element(i0, 1), "pp_size"), 3);
    CU_ASSERT_FALSE(json_object_has_member(json_array_get_object_element(i0, 0), "pp_size"));
    /* the patched copy replaces --cluster; the path axes set no flag */
    g_autofree char *a = joined_args(s, 1, "points/0001/cluster.json");
    CU_ASSERT_STRING_EQUAL(a, "--cluster points/0001/cluster.json --max-num-seqs 64");
}

/* Each bad spec names the file, the line and the key path. */
static void test_errors(void)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"run: {qps: 1}\naxes: [{name: tp, values: [1]}]\nbogus: 1\n",
         "bad.yaml:3: bogus: unknown key (run, axes, goal)"},
        {"run: {qps: 1}\naxes:\n  - {name: tp, values: [1]}\n  - {name: qps, values: []}\n",
         "bad.yaml:4: axes[1].values: expected a non-empty list"},
        {"run: {qps: 1}\naxes:\n  - {name: tp, path: \"nodes[*].tp_size\", values: [1]}\n",
         "bad.yaml:3: axes[0]: a path axis patches the base cluster config: give run.cluster"},
        {"run: {cluster: c.json}\naxes:\n  - {name: tp, path: \"nodes[*].nope.tp\", values: [1]}\n",
         "axes[0].path nodes[*].nope.tp: the cluster has no 'nope'"},
        {"run: {cluster: c.json}\naxes:\n  - {name: tp, path: \"nodes[5].tp\", values: [1]}\n",
         "index [5] of 'nodes' is not in [0, 2)"},
        {"run:\n  output-dir: x\naxes: [{name: tp, values: [1]}]\n",
         "bad.yaml:2: run.output-dir: the sweep sets it for every point"},
        {"axes:\n  - zip: [instances, tp]\n    values: [[8, 1], [4]]\n",
         "bad.yaml:3: axes[0].values[1]: expected a list of 2 values"},
        {"axes: [{name: qps, values: [1, 2]}]\ngoal:\n  slo: {p99_foo_ms: 3}\n",
         "bad.yaml:3: goal.slo.p99_foo_ms: not a latency metric"},
        {"axes: [{name: qps, values: [1, 2]}]\ngoal: {at: 3, slo: {p99_ttft_ms: 9}}\n",
         "goal.at: 3 is not a value of axis 'qps'"},
        {"axes: [{name: tp, values: [1, 2]}]\ngoal: {slo: {p99_ttft_ms: 9}}\n",
         "goal.load: no axis named 'qps'"},
        /* 1e309 overflows to inf (fuzz_sweep, regressions/sweep/extreme-goal-loads.yaml) */
        {"axes: [{name: qps, values: [1, 1e309]}]\ngoal: {slo: {p99_ttft_ms: 9}}\n",
         "bad.yaml:1: goal.load: axis 'qps' value '1e309' is not a positive number"},
        {"axes:\n  - {name: tp, values: [1]}\n  - {name: tp, values: [2]}\n",
         "bad.yaml:3: axes[1]: 'tp' is already an axis"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *p = write_spec("bad.yaml", cases[i].text);
        g_autoptr(GError) e = NULL;
        g_autoptr(sv_sweep_spec) s = sv_planner_sweep_load(p, &e);
        CU_ASSERT_PTR_NULL(s);
        CU_ASSERT_PTR_NOT_NULL_FATAL(e);
        if (!strstr(e->message, cases[i].want))
            fprintf(stderr, "\ncase %zu: got '%s', want '%s'\n", i, e->message, cases[i].want);
        CU_ASSERT_PTR_NOT_NULL(strstr(e->message, cases[i].want));
        CU_ASSERT_PTR_NOT_NULL(strstr(e->message, "bad.yaml:"));
    }
}

/* "axes:" then n axes of v values each: a0: [1, 2, ..., v]. */
static char *grid_text(int n, int v)
{
    GString *g = g_string_new("axes:\n");
    for (int a = 0; a < n; a++) {
        g_string_append_printf(g, "  - {name: a%d, values: [", a);
        for (int i = 1; i <= v; i++)
            g_string_append_printf(g, "%s%d", i > 1 ? ", " : "", i);
        g_string_append(g, "]}\n");
    }
    return g_string_free(g, FALSE);
}

/* Levels a0..a<levels-1> of ten: a0 ten scalars, each next level ten aliases of the one before. */
static char *laughs_text(int levels)
{
    GString *g = g_string_new("x0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n");
    for (int l = 1; l < levels; l++) {
        g_string_append_printf(g, "x%d: &a%d [", l, l);
        for (int i = 0; i < 10; i++)
            g_string_append_printf(g, "%s*a%d", i ? ", " : "", l - 1);
        g_string_append(g, "]\n");
    }
    g_string_append(g, "axes: [{name: qps, values: [1]}]\n");
    return g_string_free(g, FALSE);
}

/* The grid cap (docs/sweep.md): 10^6 points load, one more axis of two is refused at its line;
 * YAML aliases copy at most 100,000 nodes (core.h SV_YAML_MAX_ALIAS_NODES). Found by fuzz_sweep:
 * a 300-byte spec of nested aliases expanded to 10^6 nodes in 3 s, 10^10 nodes past memory. */
static void test_caps(void)
{
    g_autofree char *t6 = grid_text(6, 10);
    g_autofree char *p6 = write_spec("cap.yaml", t6);
    g_autoptr(GError) e = NULL;
    g_autoptr(sv_sweep_spec) s6 = sv_planner_sweep_load(p6, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s6);
    CU_ASSERT_EQUAL(sv_planner_sweep_n_points(s6), 1000000);
    g_autofree char *t7 = g_strconcat(t6, "  - {name: a6, values: [1, 2]}\n", NULL);
    g_autofree char *p7 = write_spec("cap.yaml", t7);
    g_autoptr(sv_sweep_spec) s7 = sv_planner_sweep_load(p7, &e);
    CU_ASSERT_PTR_NULL(s7);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, "cap.yaml:8: axes: more than 1,000,000 points"));
    g_clear_error(&e);
    /* Four levels copy 10 x 11 + 10 x 111 + 10 x 1111 = 12,330 nodes: the YAML loads (and the
     * sweep refuses its first key, the anchors' holder). Five: the fifth
     * line's aliases copy 11,111 nodes each, the 8th passes 100,000 (12,330 + 8 x 11,111). */
    g_autofree char *l4 = laughs_text(4);
    g_autofree char *pl4 = write_spec("laughs.yaml", l4);
    g_autoptr(sv_sweep_spec) sl4 = sv_planner_sweep_load(pl4, &e);
    CU_ASSERT_PTR_NULL(sl4); /* the YAML loads; the spec has no key x0 */
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, "laughs.yaml:1: x0: unknown key"));
    g_clear_error(&e);
    g_autofree char *l9 = laughs_text(9);
    g_autofree char *pl9 = write_spec("laughs.yaml", l9);
    g_autoptr(sv_sweep_spec) sl9 = sv_planner_sweep_load(pl9, &e);
    CU_ASSERT_PTR_NULL(sl9);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(e->message, "laughs.yaml:5: alias *a3: aliases expand to more than 100000 nodes"));
}

/* --shard 1/3 of 7 points: 1 and 4 (k % 3 == 1), then nothing. */
static void test_shard(void)
{
    g_autofree char *p =
        write_spec("shard.yaml", "axes: [{name: seed, values: [1,2,3,4,5,6,7]}]\n");
    g_autoptr(sv_sweep_spec) s = sv_planner_sweep_load(p, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    g_autoptr(sv_sweep_sched) q = sv_planner_sweep_sched_new(s, FALSE, 1, 3);
    CU_ASSERT_EQUAL(sv_planner_sweep_sched_next(q), 1);
    CU_ASSERT_EQUAL(sv_planner_sweep_sched_next(q), 4);
    CU_ASSERT_EQUAL(sv_planner_sweep_sched_next(q), SV_SWEEP_DONE);
}

static void result(struct sv_sweep_result *r, double p99_ttft, double gpus, double tput_gpu)
{
    memset(r, 0, sizeof *r);
    r->status = SV_SWEEP_OK;
    r->m[SV_SWEEP_M_LAT0 + 2] = p99_ttft; /* p99_ttft_ms: mean, median, p99 of ttft first */
    r->m[SV_SWEEP_M_GPUS] = gpus;
    r->m[SV_SWEEP_M_OUT_TPUT_GPU] = tput_gpu;
    r->have = (G_GUINT64_CONSTANT(1) << (SV_SWEEP_M_LAT0 + 2)) |
              (G_GUINT64_CONSTANT(1) << SV_SWEEP_M_GPUS) |
              (G_GUINT64_CONSTANT(1) << SV_SWEEP_M_OUT_TPUT_GPU);
}

/* Two configurations (tp 1, 2) x loads listed [4, 1, 2]: point k = tp index x 3 + load index.
 * Loads run 1, 2, 4 (ascending). tp 1 passes at 1 and misses at 2: its load 4 (point 0) is
 * pruned, never handed out. tp 2 passes everywhere. At the target 2 only tp 2 passes. */
static void test_goal_pruning(void)
{
    g_autofree char *p = write_spec("goal.yaml", "axes:\n"
                                                 "  - {name: tp, values: [1, 2]}\n"
                                                 "  - {name: qps, values: [4, 1, 2]}\n"
                                                 "goal: {at: 2, slo: {p99_ttft_ms: 100}}\n");
    g_autoptr(GError) e = NULL;
    g_autoptr(sv_sweep_spec) s = sv_planner_sweep_load(p, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    g_autoptr(sv_sweep_sched) q = sv_planner_sweep_sched_new(s, TRUE, 0, 1);
    struct sv_sweep_result r;
    /* both configurations start at their lowest load (value index 1) */
    CU_ASSERT_EQUAL(sv_planner_sweep_sched_next(q), 1);
    CU_ASSERT_EQUAL(sv_planner_sweep_sched_next(q), 4);
    CU_ASSERT_EQUAL(sv_planner_sweep_sched_next(q), SV_SWEEP_WAIT);
    result(&r, 50, 1, 10);
    sv_planner_sweep_sched_done(q, 1, &r);
    CU_ASSERT_EQUAL(sv_planner_sweep_sched_next(q), 2); /* tp 1 at qps 2 */
    result(&r, 150, 1, 20);                             /* misses */
    sv_planner_sweep_sched_done(q, 2, &r);
    CU_ASSERT_EQUAL(sv_planner_sweep_sched_status(q, 0), SV_SWEEP_PRUNED);
    CU_ASSERT_EQUAL(sv_planner_sweep_sched_next(q), SV_SWEEP_WAIT); /* tp 2's point 4 runs */
    result(&r, 20, 2, 5);
    sv_planner_sweep_sched_done(q, 4, &r);
    CU_ASSERT_EQUAL(sv_planner_sweep_sched_next(q), 5);
    result(&r, 30, 2, 8);
    sv_planner_sweep_sched_done(q, 5, &r);
    CU_ASSERT_EQUAL(sv_planner_sweep_sched_next(q), 3);
    result(&r, 99, 2, 9);
    sv_planner_sweep_sched_done(q, 3, &r);
    CU_ASSERT_EQUAL(sv_planner_sweep_sched_next(q), SV_SWEEP_DONE);
    g_autofree char *line = sv_planner_sweep_goal_line(q);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "goal: tp=2 (point 5): 2 GPUs"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "highest passing qps 4"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "1 of 2 configurations meet the SLOs at qps 2; 5 points "
                                        "run, 1 pruned"));
}

/* Among configurations that pass at the target, `minimize: gpus` takes the fewest GPUs,
 * `maximize: tokens_per_s_per_gpu` the highest output tokens/s per GPU and
 * `maximize: load_per_gpu` the highest passing load per GPU. */
static void test_goal_objectives(void)
{
    static const char *const objectives[] = {"minimize: gpus", "maximize: tokens_per_s_per_gpu",
                                             "maximize: load_per_gpu"};
    /* load_per_gpu: both pass at the one load 3: 3 / 2 GPUs beats 3 / 4 */
    static const char *const winners[] = {"goal: tp=2 (point 1)", "goal: tp=4 (point 2)",
                                          "goal: tp=2 (point 1)"};
    for (int o = 0; o < 3; o++) {
        g_autofree char *text = g_strdup_printf("axes:\n"
                                                "  - {name: tp, values: [1, 2, 4]}\n"
                                                "  - {name: qps, values: [3]}\n"
                                                "goal: {slo: {p99_ttft_ms: 100}, %s}\n",
                                                objectives[o]);
        g_autofree char *p = write_spec("obj.yaml", text);
        g_autoptr(sv_sweep_spec) s = sv_planner_sweep_load(p, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        g_autoptr(sv_sweep_sched) q = sv_planner_sweep_sched_new(s, TRUE, 0, 1);
        static const double ttft[] = {500, 80, 60}, gpus[] = {1, 2, 4}, tput[] = {50, 30, 40};
        for (int k = 0; k < 3; k++) {
            CU_ASSERT_EQUAL(sv_planner_sweep_sched_next(q), k);
            struct sv_sweep_result r;
            result(&r, ttft[k], gpus[k], tput[k]);
            sv_planner_sweep_sched_done(q, (guint)k, &r);
        }
        CU_ASSERT_EQUAL(sv_planner_sweep_sched_next(q), SV_SWEEP_DONE);
        g_autofree char *line = sv_planner_sweep_goal_line(q);
        CU_ASSERT_PTR_NOT_NULL(strstr(line, winners[o]));
    }
}

/* A row: axis values, status, the numbers in their formats; a failure's error quoted (RFC 4180).
 */
static void test_row(void)
{
    g_autofree char *p = write_spec("row.yaml", "axes: [{name: qps, values: [1, 2]}]\n");
    g_autoptr(sv_sweep_spec) s = sv_planner_sweep_load(p, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    struct sv_sweep_result r;
    result(&r, 12.5, 2, 7.25);
    g_autofree char *row = sv_planner_sweep_csv_row(s, 1, &r);
    CU_ASSERT_STRING_EQUAL(row, "1,2,ok,,,,,,,,12.5000,,,,,,,,,,2,7.2500,,,\n");
    struct sv_sweep_result f = {.status = SV_SWEEP_FAILED, .error = "exit 1: bad \"x\", y"};
    g_autofree char *frow = sv_planner_sweep_csv_row(s, 0, &f);
    CU_ASSERT_STRING_EQUAL(frow, "0,1,failed,\"exit 1: bad \"\"x\"\", y\",,,,,,,,,,,,,,,,,,,,,\n");
}

static void put(const char *dir, const char *name, const char *text)
{
    g_autofree char *p = g_build_filename(dir, name, NULL);
    g_assert(g_file_set_contents(p, text, -1, NULL));
}

/* A point read back: summary.json's keys of before issue 14 (the fallback), vLLM's keys when they
 * are there (they win), GPUs from run.json's instances, energy per output token, and a failure's
 * first stderr line that is not the latency note. */
static void test_read_point(void)
{
    g_autofree char *p = write_spec("read.yaml", "axes: [{name: qps, values: [1]}]\n");
    g_autoptr(sv_sweep_spec) s = sv_planner_sweep_load(p, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    g_autofree char *dir = g_build_filename(tmp, "pt", NULL);
    g_mkdir_with_parents(dir, 0777);
    put(dir, "summary.json",
        "{\"requests\": {\"finished\": 10}, \"tokens\": {\"output\": 400},\n"
        " \"throughput\": {\"requests_per_s\": 2.0, \"input_tokens_per_s\": 100.0,\n"
        "                \"output_tokens_per_s\": 50.0},\n"
        " \"latency_ms\": {\"ttft\": {\"mean\": 1, \"p50\": 2, \"p99\": 3},\n"
        "                \"e2e\": {\"mean\": 7, \"p50\": 8, \"p99\": 9}},\n"
        " \"energy\": {\"total_j\": 200.0}}\n");
    put(dir, "run.json", "{\"instances\": [{\"num_npus\": 2}, {\"tp\": 2, \"pp\": 2}]}\n");
    struct sv_sweep_result r = {0};
    sv_planner_sweep_read(s, 0, dir, 0, "", &r);
    CU_ASSERT_EQUAL(r.status, SV_SWEEP_OK);
    g_autofree char *row = sv_planner_sweep_csv_row(s, 0, &r);
    /* completed 10; 2 req/s; 50 out tok/s; 100 + 50 total; ttft 1/2/3; tpot, itl empty; e2el
     * 7/8/9; gpus 2 + 2 x 2 = 6; 50 / 6 and 150 / 6 per GPU; 200 J, 200 / 400 J per token */
    CU_ASSERT_STRING_EQUAL(row, "0,1,ok,,10,2.0000,50.0000,150.0000,1.0000,2.0000,3.0000,,,,,,,"
                                "7.0000,8.0000,9.0000,6,8.3333,25.0000,200.0000,0.500000\n");
    put(dir, "summary.json",
        "{\"completed\": 9, \"request_throughput\": 3.0, \"output_throughput\": 60.0,\n"
        " \"total_token_throughput\": 90.0, \"median_ttft_ms\": 5.5,\n"
        " \"requests\": {\"finished\": 10}, \"gpus\": 3,\n"
        " \"latency_ms\": {\"ttft\": {\"mean\": 1, \"p50\": 2, \"p99\": 3}}}\n");
    sv_planner_sweep_read(s, 0, dir, 0, "", &r);
    g_autofree char *row2 = sv_planner_sweep_csv_row(s, 0, &r);
    CU_ASSERT_STRING_EQUAL(row2, "0,1,ok,,9,3.0000,60.0000,90.0000,1.0000,5.5000,3.0000,,,,,,,,,,"
                                 "3,20.0000,30.0000,,\n");
    sv_planner_sweep_read(s, 0, dir, 1 << 8 /* exit 1 */,
                          "servesim run: instance 0 (m on h): latency roofline (x)\n"
                          "servesim run: boom\nmore\n",
                          &r);
    CU_ASSERT_EQUAL(r.status, SV_SWEEP_FAILED);
    CU_ASSERT_STRING_EQUAL(r.error, "exit 1: servesim run: boom");
    sv_planner_sweep_result_clear(&r);
}

int main(void)
{
    tmp = sv_test_tmpdir();
    g_autofree char *c = g_build_filename(tmp, "c.json", NULL);
    g_assert(g_file_set_contents(c, "{\"nodes\": [{\"instances\": []}, {\"instances\": []}]}", -1,
                                 NULL));
    static const sv_test_case cases[] = {
        {"expansion", test_expansion},
        {"errors", test_errors},
        {"caps", test_caps},
        {"cluster_patch", test_cluster_patch},
        {"shard", test_shard},
        {"goal_pruning", test_goal_pruning},
        {"goal_objectives", test_goal_objectives},
        {"row", test_row},
        {"read_point", test_read_point},
        {NULL, NULL},
    };
    sv_test_add_suite("sweep_spec", cases);
    int rc = sv_test_run();
    sv_test_rmtree(tmp);
    g_free(tmp);
    return rc;
}
