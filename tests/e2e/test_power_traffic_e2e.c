/* The run's traffic, the catalog's power states and DVFS in the power model (docs/power.md
 * "Traffic", "Defaults from the hardware catalog", "DVFS"), end to end on the servesim binary.
 * Every expected number is worked out by hand in the comment above its test.
 *
 * Llama-3.1-8B (hidden 4,096, 32 layers, bf16, 8 KV heads of 128): a TP all-reduce after o_proj
 * and after down_proj of every layer moves tokens x 4,096 x 2 B; a ring all-reduce over n ranks
 * sends 2 (n - 1) / n of it from each rank, 2 (n - 1) x size in all: for TP2, 2 x size. So an
 * iteration of T tokens puts 2 x 32 x 2 x (T x 8,192) = 1,048,576 x T bytes on the links, and a
 * run of requests with no preemption and no prefix hits computes sum(input + output - 1) tokens
 * (the prefill iteration produces the first output token). KV of one token: 2 x 8 x 128 x 2 x 32
 * = 131,072 B. */
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

/* A node's power block: every idle draw 0 and every energy per bit 0 except the ones a test sets
 * through the format's fields (npu block, link pJ/bit, nic pJ/bit, extra members). */
#define POWER_BLOCK                                                                                \
    "\"power\": {\"base_node_power\": 0, %s"                                                       \
    "  \"cpu\": {\"idle_power\": 0, \"active_power\": 0, \"util\": 0},"                            \
    "  \"dram\": {\"dimm_size\": 512, \"idle_power\": 0, \"energy_per_bit\": 0},"                  \
    "  \"link\": {\"num_links\": 1, \"idle_power\": 0, \"energy_per_bit\": %g},"                   \
    "  \"nic\": {\"num_nics\": 1, \"idle_power\": 0, \"energy_per_bit\": %g},"                     \
    "  \"storage\": {\"num_devices\": 1, \"idle_power\": 0}%s}"

#define H100_NPU                                                                                   \
    "\"npu\": {\"H100-SXM\": {\"idle_power\": 10, \"standby_power\": 20, \"active_power\": 110,"   \
    " \"standby_duration\": 5}},"

#define INSTANCE(hw, tp, pd)                                                                       \
    "{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"" hw "\","                      \
    " \"npu_mem\": {\"mem_size\": 80, \"mem_bw\": 3350, \"mem_latency\": 0},"                      \
    " \"num_npus\": " #tp ", \"tp_size\": " #tp ", \"pd_type\": " pd "}"

#define CPU_MEM "\"cpu_mem\": {\"mem_size\": 512, \"mem_bw\": 256, \"mem_latency\": 0}"

static const char TRACE[] = "{\"input_toks\": 100, \"output_toks\": 10, \"arrival_time_ns\": 0}\n"
                            "{\"input_toks\": 100, \"output_toks\": 10, \"arrival_time_ns\": "
                            "1000000}\n"
                            "{\"input_toks\": 100, \"output_toks\": 10, \"arrival_time_ns\": "
                            "2000000}\n";
#define TOKENS_COMPUTED (3 * (100 + 10 - 1))
#define LINK_BYTES_PER_TOKEN 1048576.0
#define KV_BYTES_PER_TOKEN 131072.0

/* Run servesim with `extra` arguments (NULL-terminated list, may be NULL); stderr returned in
 * *err_out when not NULL. Returns the exit status. */
static int run_servesim(const char *cluster, const char *trace, const char *out,
                        const char *const *extra, char **err_out)
{
    g_autofree char *bin = g_canonicalize_filename(SV_SERVESIM_BIN, NULL);
    GPtrArray *a = g_ptr_array_new();
    const char *base[] = {bin,   "run",     "--cluster",    cluster, "--workload",
                          trace, "--quiet", "--output-dir", out,     "--no-prefix-caching"};
    for (size_t i = 0; i < G_N_ELEMENTS(base); i++)
        g_ptr_array_add(a, (gpointer)base[i]);
    for (int i = 0; extra && extra[i]; i++)
        g_ptr_array_add(a, (gpointer)extra[i]);
    g_ptr_array_add(a, NULL);
    g_autofree char *so = NULL, *se = NULL;
    int status = -1;
    gboolean ok = sv_test_spawn((const char *const *)a->pdata, &so, &se, &status);
    g_ptr_array_free(a, TRUE);
    if (err_out)
        *err_out = g_strdup(se ? se : "");
    return ok ? status : -1;
}

static char *write_in(const char *dir, const char *name, const char *text)
{
    char *p = g_build_filename(dir, name, NULL);
    CU_ASSERT_FATAL(g_file_set_contents(p, text, -1, NULL));
    return p;
}

static JsonObject *load_summary(const char *dir, JsonParser **parser)
{
    g_autofree char *p = g_build_filename(dir, "summary.json", NULL);
    *parser = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_file(*parser, p, NULL));
    return json_node_get_object(json_parser_get_root(*parser));
}

/* A column of requests.csv summed (or, with `row` >= 1, one row's value). */
static double requests_col(const char *out, const char *name, int row)
{
    g_autofree char *p = g_build_filename(out, "requests.csv", NULL);
    g_autofree char *text = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(p, &text, NULL, NULL));
    g_auto(GStrv) lines = g_strsplit(g_strchomp(text), "\n", -1);
    g_auto(GStrv) head = g_strsplit(lines[0], ",", -1);
    int c = -1;
    for (int i = 0; head[i]; i++)
        if (strcmp(head[i], name) == 0)
            c = i;
    CU_ASSERT_FATAL(c >= 0);
    double sum = 0;
    for (int i = 1; lines[i]; i++) {
        g_auto(GStrv) f = g_strsplit(lines[i], ",", -1);
        if (row < 0 || row == i)
            sum += g_ascii_strtod(f[c], NULL);
    }
    return sum;
}

/* requests' energy_j + unattributed_j = total_j (energy_j printed to 1e-6 J each). */
static void check_conservation(const char *out, JsonObject *e)
{
    double req = requests_col(out, "energy_j", -1);
    CU_ASSERT_DOUBLE_EQUAL(req + json_object_get_double_member(e, "unattributed_j"),
                           json_object_get_double_member(e, "total_j"), 1e-5);
}

static double component_j(JsonObject *e, const char *name)
{
    return json_object_get_double_member(json_object_get_object_member(e, "by_component_j"), name);
}

/* TP2 on one node, link 4 pJ/bit (idle 0): link_bytes = 1,048,576 x 327 = 342,884,352 B and
 * the link's energy 342,884,352 x 8 x 4e-12 = 0.010972299 J. The same behind an NVSwitch
 * ("topology": nvlink, a switch block of 2 pJ/bit): every message crosses 2 links and 1 switch:
 * link_bytes twice that, switch_bytes once, energy (2 x 4 + 2) x 8e-12 x 342,884,352 B. */
static void test_tp2_link_energy(void)
{
    for (int sw = 0; sw < 2; sw++) {
        g_autofree char *dir = sv_test_tmpdir();
        g_autofree char *power = g_strdup_printf(
            POWER_BLOCK, H100_NPU, 4.0, 0.0,
            sw ? ", \"switch\": {\"num_switches\": 1, \"idle_power\": 0, \"energy_per_bit\": 2}"
               : "");
        g_autofree char *json = g_strdup_printf(
            "{\"num_nodes\": 1, \"link_bw\": 450, \"link_latency\": 500, \"nodes\": [{%s"
            " " CPU_MEM ", \"instances\": [" INSTANCE("H100-SXM", 2, "null") "], %s}]}",
            sw ? "\"topology\": {\"kind\": \"nvlink\"}," : "", power);
        g_autofree char *cluster = write_in(dir, "cluster.json", json);
        g_autofree char *trace = write_in(dir, "trace.jsonl", TRACE);
        g_autofree char *out = g_build_filename(dir, "out", NULL);
        g_autofree char *err = NULL;
        CU_ASSERT_EQUAL_FATAL(run_servesim(cluster, trace, out, NULL, &err), 0);
        CU_ASSERT_DOUBLE_EQUAL(requests_col(out, "preemptions", -1), 0, 0);
        CU_ASSERT_DOUBLE_EQUAL(requests_col(out, "prefix_hit_tokens", -1), 0, 0);
        JsonParser *jp = NULL;
        JsonObject *e = json_object_get_object_member(load_summary(out, &jp), "energy");
        double bytes = LINK_BYTES_PER_TOKEN * TOKENS_COMPUTED;
        CU_ASSERT_DOUBLE_EQUAL(bytes, 342884352.0, 0);
        CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(e, "link_bytes"), (sw ? 2 : 1) * bytes,
                               0);
        CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(e, "switch_bytes"), sw ? bytes : 0, 0);
        CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(e, "nic_bytes"), 0, 0);
        double want = sw ? (2 * 4 + 2) * 8e-12 * bytes : 0.010972299264;
        CU_ASSERT_DOUBLE_EQUAL(component_j(e, "link"), want, 1e-12);
        CU_ASSERT_DOUBLE_EQUAL(component_j(e, "nic"), 0, 0);
        check_conservation(out, e);
        g_object_unref(jp);
        sv_test_rmtree(dir);
    }
}

/* PD on two nodes (prefill TP1 on node 0, decode TP1 on node 1), NIC 1 pJ/bit on node 0 and
 * 3 pJ/bit on node 1: the only traffic between nodes is the KV handed off, 3 x 100 x 131,072 =
 * 39,321,600 B, out of node 0's NIC and into node 1's: nic_bytes 2 x 39,321,600 and NIC energy
 * 39,321,600 x 8 x (1 + 3) pJ = 0.0012582912 J. */
static void test_pd_nic_energy(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *p0 = g_strdup_printf(POWER_BLOCK, H100_NPU, 0.0, 1.0, "");
    g_autofree char *p1 = g_strdup_printf(POWER_BLOCK, H100_NPU, 0.0, 3.0, "");
    g_autofree char *json = g_strdup_printf(
        "{\"num_nodes\": 2, \"link_bw\": 50, \"link_latency\": 2000, \"nodes\": ["
        "{" CPU_MEM ", \"instances\": [" INSTANCE(
            "H100-SXM", 1, "\"prefill\"") "], %s},"
                                          "{" CPU_MEM ", \"instances\": [" INSTANCE(
                                              "H100-SXM", 1, "\"decode\"") "], %s}]}",
        p0, p1);
    g_autofree char *cluster = write_in(dir, "cluster.json", json);
    g_autofree char *trace = write_in(dir, "trace.jsonl", TRACE);
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    g_autofree char *err = NULL;
    CU_ASSERT_EQUAL_FATAL(run_servesim(cluster, trace, out, NULL, &err), 0);
    JsonParser *jp = NULL;
    JsonObject *root = load_summary(out, &jp);
    JsonObject *e = json_object_get_object_member(root, "energy");
    double kv = (double)json_object_get_int_member(
        json_object_get_object_member(root, "disaggregation"), "kv_bytes");
    CU_ASSERT_DOUBLE_EQUAL(kv, 3 * 100 * KV_BYTES_PER_TOKEN, 0);
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(e, "nic_bytes"), 2 * kv, 0);
    CU_ASSERT_DOUBLE_EQUAL(component_j(e, "nic"), 0.0012582912, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(e, "link_bytes"), 0, 0);
    check_conservation(out, e);
    g_object_unref(jp);
    sv_test_rmtree(dir);
}

/* No npu entry for the instance's H100-SXM: the catalog's power states, with a note: idle 75 W
 * and active 700 W (TDP), standby 387.5 W, 18 s. One request alone (arrival 0): the device is
 * active from its first scheduled step to its last token, B = last - first_scheduled: active
 * energy 700 x B. A TPU-v6e, whose catalog entry publishes no power, stays an error naming the
 * missing key's path. */
static void test_catalog_defaults(void)
{
    static const char one[] = "{\"input_toks\": 64, \"output_toks\": 8, \"arrival_time_ns\": 0}\n";
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *power = g_strdup_printf(POWER_BLOCK, "", 0.0, 0.0, "");
    g_autofree char *json =
        g_strdup_printf("{\"num_nodes\": 1, \"nodes\": [{" CPU_MEM
                        ", \"instances\": [" INSTANCE("H100-SXM", 1, "null") "], %s}]}",
                        power);
    g_autofree char *cluster = write_in(dir, "cluster.json", json);
    g_autofree char *trace = write_in(dir, "trace.jsonl", one);
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    g_autofree char *err = NULL;
    CU_ASSERT_EQUAL_FATAL(run_servesim(cluster, trace, out, NULL, &err), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "cluster.json: nodes[0].power.npu.H100-SXM: not given"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "idle 75 W, active 700 W"));
    double b =
        (requests_col(out, "last_token_ns", 1) - requests_col(out, "first_scheduled_ns", 1)) / 1e9;
    JsonParser *jp = NULL;
    JsonObject *e = json_object_get_object_member(load_summary(out, &jp), "energy");
    JsonObject *st = json_object_get_object_member(e, "npu_by_state_j");
    CU_ASSERT(b > 0);
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(st, "active"), 700 * b, 1e-6);
    g_object_unref(jp);

    g_autofree char *tpu = g_strdup_printf(
        "{\"num_nodes\": 1, \"nodes\": [{" CPU_MEM ", \"instances\": [{\"model_name\": "
        "\"meta-llama/Llama-3.1-8B\", \"hardware\": \"TPU-v6e\", \"npu_mem\": {\"mem_size\": 32},"
        " \"num_npus\": 1}], %s}]}",
        power);
    g_autofree char *c2 = write_in(dir, "tpu.json", tpu);
    g_autofree char *err2 = NULL;
    CU_ASSERT_EQUAL(run_servesim(c2, trace, out, NULL, &err2), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err2, "tpu.json: nodes[0].power.npu.TPU-v6e: missing"));
    sv_test_rmtree(dir);
}

/* A profile bundle of a hardware the catalog does not know ("TOYGPU"): every operator takes
 * 10 us (dense, lm_head, sampler) or 50 us (attention) whatever the shape. At --gpu-clock 0.5
 * (no roofline split without catalog figures) every operator takes 20 or 100 us, an exact
 * doubling, so a lone prefill-only request (one iteration, --host-overhead none: the device is
 * busy from its first scheduled step to its token) is computed in exactly twice the time B. Its
 * active energy follows the DVFS law: 110 W x B at the nominal clock, (10 + (110 - 10) x 0.5^3)
 * = 22.5 W x 2B at 0.5. */
static void put(const char *dir, const char *rel, const char *text)
{
    g_autofree char *p = g_build_filename(dir, rel, NULL);
    g_autofree char *d = g_path_get_dirname(p);
    CU_ASSERT_FATAL(g_mkdir_with_parents(d, 0755) == 0);
    CU_ASSERT_FATAL(g_file_set_contents(p, text, -1, NULL));
}

static void test_gpu_clock(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *prof = g_build_filename(dir, "profiles", NULL);
    const char *b = "TOYGPU/meta-llama/Llama-3.1-8B/bf16/";
    g_autofree char *meta = g_strconcat(b, "meta.yaml", NULL);
    put(prof, meta, "hardware: TOYGPU\n");
    GString *dense = g_string_new("layer,tokens,time_us\n");
    const char *ops[] = {"embedding",    "layernorm", "qkv_proj",  "rotary_emb",      "o_proj",
                         "gate_up_proj", "act_fn",    "down_proj", "final_layernorm", NULL};
    for (int i = 0; ops[i]; i++)
        g_string_append_printf(dense, "%s,1,10.0\n%s,4096,10.0\n", ops[i], ops[i]);
    g_autofree char *f_dense = g_strconcat(b, "tp1/dense.csv", NULL);
    put(prof, f_dense, dense->str);
    g_string_free(dense, TRUE);
    g_autofree char *f_seq = g_strconcat(b, "tp1/per_sequence.csv", NULL);
    put(prof, f_seq,
        "layer,sequences,time_us\nlm_head,1,10\nlm_head,256,10\nsampler,1,10\nsampler,256,10\n");
    g_autofree char *f_att = g_strconcat(b, "tp1/attention.csv", NULL);
    put(prof, f_att,
        "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n"
        "0,0,1,16,50\n0,0,1,4096,50\n0,0,256,16,50\n0,0,256,4096,50\n"
        "16,0,0,0,50\n16,4096,0,0,50\n4096,0,0,0,50\n4096,4096,0,0,50\n");
    g_autofree char *power = g_strdup_printf(
        POWER_BLOCK,
        "\"npu\": {\"TOYGPU\": {\"idle_power\": 10, \"standby_power\": 20, \"active_power\": 110,"
        " \"standby_duration\": 5}},",
        0.0, 0.0, "");
    g_autofree char *json =
        g_strdup_printf("{\"num_nodes\": 1, \"nodes\": [{" CPU_MEM
                        ", \"instances\": [" INSTANCE("TOYGPU", 1, "null") "], %s}]}",
                        power);
    g_autofree char *cluster = write_in(dir, "cluster.json", json);
    g_autofree char *trace = write_in(
        dir, "trace.jsonl", "{\"input_toks\": 200, \"output_toks\": 1, \"arrival_time_ns\": 0}\n");
    double busy[2], active[2];
    for (int k = 0; k < 2; k++) {
        g_autofree char *out = g_strdup_printf("%s/out%d", dir, k);
        const char *extra[] = {
            "--profiles", prof, "--host-overhead", "none", k ? "--gpu-clock" : NULL, "0.5", NULL};
        g_autofree char *err = NULL;
        CU_ASSERT_EQUAL_FATAL(run_servesim(cluster, trace, out, extra, &err), 0);
        busy[k] =
            requests_col(out, "last_token_ns", 1) - requests_col(out, "first_scheduled_ns", 1);
        JsonParser *jp = NULL;
        JsonObject *e = json_object_get_object_member(load_summary(out, &jp), "energy");
        active[k] = json_object_get_double_member(
            json_object_get_object_member(e, "npu_by_state_j"), "active");
        g_object_unref(jp);
    }
    CU_ASSERT(busy[0] > 0);
    CU_ASSERT_DOUBLE_EQUAL(busy[1], 2 * busy[0], 0);
    CU_ASSERT_DOUBLE_EQUAL(active[0], 110 * busy[0] / 1e9, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(active[1], (10 + 100 * 0.125) * busy[1] / 1e9, 1e-9);

    /* Bad values name the flag or the config path. */
    g_autofree char *out = g_build_filename(dir, "bad", NULL);
    const char *extra[] = {"--profiles", prof, "--gpu-clock", "1.5", NULL};
    g_autofree char *err = NULL;
    CU_ASSERT_EQUAL(run_servesim(cluster, trace, out, extra, &err), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "--gpu-clock: '1.5' is not a fraction in (0, 1]"));
    g_autofree char *bad_json = g_strdup_printf(
        "{\"num_nodes\": 1, \"nodes\": [{" CPU_MEM ", \"instances\": [{\"model_name\": "
        "\"meta-llama/Llama-3.1-8B\", \"hardware\": \"TOYGPU\", \"npu_mem\": {\"mem_size\": 80},"
        " \"num_npus\": 1, \"gpu_clock\": 2}], %s}]}",
        power);
    g_autofree char *bad = write_in(dir, "bad.json", bad_json);
    g_autofree char *err2 = NULL;
    CU_ASSERT_EQUAL(run_servesim(bad, trace, out, NULL, &err2), 1);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(err2, "bad.json: nodes[0].instances[0].gpu_clock: 2 is above the maximum 1"));
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"TP2 link and switch energy = bytes x 8 x pJ/bit", test_tp2_link_energy},
        {"PD: NIC bytes = the KV handed off, at both ends", test_pd_nic_energy},
        {"catalog power states for a missing npu entry", test_catalog_defaults},
        {"--gpu-clock 0.5: twice the time, idle + (P - idle) / 8", test_gpu_clock},
        {NULL, NULL},
    };
    sv_test_add_suite("power_traffic_e2e", cases);
    return sv_test_run();
}
