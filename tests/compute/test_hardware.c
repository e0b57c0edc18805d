/* compute: the hardware catalog (compute/hardware.json) and hardware files
 * (sv_compute_hw_catalog_load). Catalog numbers that cite ../shared/traces/hardware/
 * hardware_specs.csv are checked against that file, read independently; derived power figures
 * against their stated rule; hardware files against hand-written YAML and JSON, including every
 * error path (file and field named, catalog unchanged). */
#include "compute/compute_internal.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *put_file(const char *dir, const char *name, const char *text)
{
    char *p = g_build_filename(dir, name, NULL);
    CU_ASSERT_FATAL(g_file_set_contents(p, text, -1, NULL));
    return p;
}

/* Every device the issue names is built in, with every field read and every number sourced. */
static void test_builtin_complete(void)
{
    static const char *const want[] = {
        "A100-80GB", "A100-40GB", "H100-SXM",  "H200",     "B200",         "L40S",    "MI300X",
        "TPU-v5e",   "TPU-v6e",   "RTX-A6000", "RTX-4090", "RTX-PRO-6000", "RTX-3090"};
    g_autoptr(sv_compute_hw_catalog) cat = sv_compute_hw_catalog_new();
    SV_ASSERT_EQ_I64(sv_compute_hw_catalog_size(cat), G_N_ELEMENTS(want));
    for (size_t i = 0; i < G_N_ELEMENTS(want); i++) {
        struct sv_compute_hw_cfg hw;
        GError *err = NULL;
        CU_ASSERT_FATAL(sv_compute_hw_catalog_lookup(cat, want[i], &hw, &err));
        CU_ASSERT_STRING_EQUAL(hw.name, want[i]);
        CU_ASSERT(hw.bf16_tflops > 0 && hw.mem_gib > 0 && hw.mem_bw_gbps > 0);
        CU_ASSERT(hw.compute_units > 0);
        CU_ASSERT(hw.link_bw_gbps > 0 && hw.link_latency_ns > 0);
        CU_ASSERT(hw.interconnect[0] != '\0');
        CU_ASSERT(strlen(hw.source) > 40 && strlen(hw.latency_source) > 40 &&
                  strlen(hw.power_source) > 40);
        /* Sources are not cut short by the struct (every string ends in what it cites). */
        CU_ASSERT(strlen(hw.source) < sizeof hw.source - 1);
        CU_ASSERT(strlen(hw.latency_source) < sizeof hw.latency_source - 1);
        CU_ASSERT(strlen(hw.power_source) < sizeof hw.power_source - 1);
        /* GPUs launch kernels; a TPU step is one XLA program (launch 0, stated). */
        CU_ASSERT(g_str_has_prefix(hw.name, "TPU") ? hw.launch_ns == 0 : hw.launch_ns > 0);
        /* Dense FP8 and INT8, where published, are at least the BF16 rate. */
        CU_ASSERT(hw.fp8_tflops == 0 || hw.fp8_tflops >= hw.bf16_tflops);
        CU_ASSERT(hw.int8_tops == 0 || hw.int8_tops >= hw.bf16_tflops);
        CU_ASSERT(sv_compute_hw_mem_bytes(&hw) == (uint64_t)(hw.mem_gib * 1073741824.0));
    }
    /* Aliases, case, '-', '_' and ' ' do not matter. */
    struct sv_compute_hw_cfg hw;
    CU_ASSERT_FATAL(sv_compute_hw_lookup("a100 40gb", &hw, NULL));
    CU_ASSERT_STRING_EQUAL(hw.name, "A100-40GB");
    CU_ASSERT_FATAL(sv_compute_hw_lookup("tpu_v5e", &hw, NULL));
    CU_ASSERT_STRING_EQUAL(hw.name, "TPU-v5e");
    CU_ASSERT_FATAL(sv_compute_hw_lookup("HGX-B200", &hw, NULL));
    CU_ASSERT_STRING_EQUAL(hw.name, "B200");
}

/* The first number of a CSV cell ("624 (INT8)" -> 624); FALSE when the cell has none. */
static gboolean leading_number(const char *s, double *out)
{
    char *end = NULL;
    double v = g_ascii_strtod(s, &end);
    if (end == s)
        return FALSE;
    *out = v;
    return TRUE;
}

/* One CSV line split on commas outside double quotes (quotes dropped). */
static char **split_quoted(const char *line)
{
    GPtrArray *f = g_ptr_array_new();
    GString *cur = g_string_new(NULL);
    gboolean q = FALSE;
    for (const char *c = line; *c && *c != '\r'; c++) {
        if (*c == '"')
            q = !q;
        else if (*c == ',' && !q) {
            g_ptr_array_add(f, g_string_free(cur, FALSE));
            cur = g_string_new(NULL);
        } else
            g_string_append_c(cur, *c);
    }
    g_ptr_array_add(f, g_string_free(cur, FALSE));
    g_ptr_array_add(f, NULL);
    return (char **)g_ptr_array_free(f, FALSE);
}

static int col(char **head, const char *name)
{
    for (int i = 0; head[i]; i++)
        if (!strcmp(head[i], name))
            return i;
    return -1;
}

/* Catalog rows that cite hardware_specs.csv hold its numbers: memory (GB there, read as GiB
 * here), bandwidth, dense BF16, the interconnect (bidirectional there, per direction here) and the
 * TDP, wherever the CSV has them. */
static void test_builtin_matches_specs_csv(void)
{
    SV_REQUIRE_SHARED("traces/hardware/hardware_specs.csv", "the compiled hardware spec sheet");
    static const struct {
        const char *catalog, *csv;
    } rows[] = {
        {"A100-80GB", "A100-SXM4-80GB"}, {"A100-40GB", "A100-SXM4-40GB"},
        {"H100-SXM", "H100-SXM5-80GB"},  {"H200", "H200-SXM-141GB"},
        {"RTX-A6000", "RTX-A6000"},      {"TPU-v6e", "TPU-v6e (Trillium)"},
        {"TPU-v5e", "TPU-v5e"},          {"MI300X", "MI300X"},
        {"RTX-4090", "RTX-4090"},        {"RTX-PRO-6000", "RTX-PRO-6000 (Blackwell)"},
    };
    /* The file quotes its notes (commas inside): split each line by hand, quote-aware. */
    g_autofree char *text = NULL;
    CU_ASSERT_FATAL(
        g_file_get_contents(SV_SHARED "/traces/hardware/hardware_specs.csv", &text, NULL, NULL));
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    g_autoptr(GPtrArray) t = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
    for (int l = 0; lines[l]; l++)
        if (*lines[l])
            g_ptr_array_add(t, split_quoted(lines[l]));
    char **head = t->pdata[0];
    int c_dev = col(head, "device"), c_mem = col(head, "mem_GB"), c_bw = col(head, "mem_bw_GBps"),
        c_bf16 = col(head, "bf16_dense_TFLOPS"), c_link = col(head, "scaleup_link_bw_GBps_bidir"),
        c_tdp = col(head, "tdp_W");
    CU_ASSERT_FATAL(c_dev >= 0 && c_mem >= 0 && c_bw >= 0 && c_bf16 >= 0 && c_link >= 0 &&
                    c_tdp >= 0);
    for (size_t r = 0; r < G_N_ELEMENTS(rows); r++) {
        struct sv_compute_hw_cfg hw;
        CU_ASSERT_FATAL(sv_compute_hw_lookup(rows[r].catalog, &hw, NULL));
        guint row;
        for (row = 1; row < t->len; row++)
            if (!strcmp(((char **)t->pdata[row])[c_dev], rows[r].csv))
                break;
        CU_ASSERT_FATAL(row < t->len);
        char **f = t->pdata[row];
        double v;
        CU_ASSERT_FATAL(leading_number(f[c_mem], &v));
        CU_ASSERT_DOUBLE_EQUAL(hw.mem_gib, v, 1e-9);
        CU_ASSERT_FATAL(leading_number(f[c_bw], &v));
        CU_ASSERT_DOUBLE_EQUAL(hw.mem_bw_gbps, v, 1e-9);
        if (leading_number(f[c_bf16], &v))
            CU_ASSERT_DOUBLE_EQUAL(hw.bf16_tflops, v, 1e-9);
        if (leading_number(f[c_link], &v))
            CU_ASSERT_DOUBLE_EQUAL(hw.link_bw_gbps, v / 2, 1e-9);
        if (leading_number(f[c_tdp], &v))
            CU_ASSERT_DOUBLE_EQUAL(hw.tdp_w, v, 1e-9);
        CU_ASSERT(strstr(hw.source, rows[r].csv) != NULL ||
                  strstr(hw.source, "hardware_specs.csv") != NULL);
    }
}

/* Figures derived by a stated rule (docs/power.md): idle of an SXM part = TDP x 75/700, of a PCIe
 * card = TDP x 35/600; the parts sharing a die share its measured launch cost. */
static void test_builtin_rules(void)
{
    struct sv_compute_hw_cfg b200, l40s, h100, h200, a80, a40, r4090;
    CU_ASSERT_FATAL(
        sv_compute_hw_lookup("B200", &b200, NULL) && sv_compute_hw_lookup("L40S", &l40s, NULL) &&
        sv_compute_hw_lookup("H100", &h100, NULL) && sv_compute_hw_lookup("H200", &h200, NULL) &&
        sv_compute_hw_lookup("A100-80GB", &a80, NULL) &&
        sv_compute_hw_lookup("A100-40GB", &a40, NULL) &&
        sv_compute_hw_lookup("RTX4090", &r4090, NULL));
    CU_ASSERT_DOUBLE_EQUAL(b200.idle_w, b200.tdp_w * 75 / 700, 0.05);
    CU_ASSERT_DOUBLE_EQUAL(l40s.idle_w, l40s.tdp_w * 35 / 600, 0.05);
    CU_ASSERT_DOUBLE_EQUAL(h200.launch_ns, h100.launch_ns, 0);
    CU_ASSERT_DOUBLE_EQUAL(a40.launch_ns, a80.launch_ns, 0);
    CU_ASSERT_DOUBLE_EQUAL(l40s.launch_ns, r4090.launch_ns, 0);
    /* NCCL's model: a PCIe ring step is slower than an NVLink one (2.5 vs 1.9 us, LL128). */
    CU_ASSERT_DOUBLE_EQUAL(h100.link_latency_ns, 1900, 0);
    CU_ASSERT_DOUBLE_EQUAL(l40s.link_latency_ns, 2500, 0);
    /* B200: NVLink5 at 1.8 TB/s both ways, twice the H100's NVLink4. */
    CU_ASSERT_DOUBLE_EQUAL(b200.link_bw_gbps, 2 * h100.link_bw_gbps, 0);
}

/* The measured launch costs are the profiles' smallest one-token operators, re-read here. */
static void test_builtin_launch_measured(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim/profiles/RTX4090", "the RTX 4090 bundle");
    GError *err = NULL;
    g_autoptr(sv_compute_table) t = sv_compute__csv_load(
        SV_SHARED "/reference/llmservingsim/profiles/RTX4090/meta-llama/Llama-3.1-8B/bf16/tp1/"
                  "dense.csv",
        &err);
    CU_ASSERT_FATAL(t != NULL);
    int ct = sv_compute__csv_col(t, "tokens", NULL), cu = sv_compute__csv_col(t, "time_us", NULL);
    CU_ASSERT_FATAL(ct >= 0 && cu >= 0);
    double best = G_MAXDOUBLE;
    for (guint r = 0; r < t->rows->len; r++) {
        char **f = t->rows->pdata[r];
        if (!strcmp(f[ct], "1"))
            best = MIN(best, g_ascii_strtod(f[cu], NULL));
    }
    struct sv_compute_hw_cfg hw;
    CU_ASSERT_FATAL(sv_compute_hw_lookup("RTX4090", &hw, NULL));
    CU_ASSERT_DOUBLE_EQUAL(hw.launch_ns, round(best * 1000), 0.5);
}

/* A YAML file adds a device: YAML scalars are numbers where the schema wants numbers, fields
 * not given are 0 (not published), the catalog grows by one, aliases work. */
static void test_file_adds_yaml(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *path = put_file(dir, "npu.yaml",
                                     "hardware:\n"
                                     "  - name: MyNPU-1\n"
                                     "    aliases: [mynpu, \"4242\"]\n"
                                     "    bf16_tflops: 400\n"
                                     "    mem_gib: 64\n"
                                     "    mem_bw_gbps: 2000.5\n"
                                     "    compute_units: 96\n"
                                     "    link_latency_ns: 3000\n"
                                     "    source: vendor sheet rev 2\n");
    g_autoptr(sv_compute_hw_catalog) cat = sv_compute_hw_catalog_new();
    guint n0 = sv_compute_hw_catalog_size(cat);
    GError *err = NULL;
    CU_ASSERT_FATAL(sv_compute_hw_catalog_load(cat, path, &err));
    SV_ASSERT_EQ_I64(sv_compute_hw_catalog_size(cat), n0 + 1);
    struct sv_compute_hw_cfg hw;
    CU_ASSERT_FATAL(sv_compute_hw_catalog_lookup(cat, "MYNPU", &hw, &err));
    CU_ASSERT_STRING_EQUAL(hw.name, "MyNPU-1");
    CU_ASSERT_DOUBLE_EQUAL(hw.bf16_tflops, 400, 0);
    CU_ASSERT_DOUBLE_EQUAL(hw.mem_gib, 64, 0);
    CU_ASSERT_DOUBLE_EQUAL(hw.mem_bw_gbps, 2000.5, 0);
    SV_ASSERT_EQ_I64(hw.compute_units, 96);
    CU_ASSERT_DOUBLE_EQUAL(hw.link_latency_ns, 3000, 0);
    CU_ASSERT_DOUBLE_EQUAL(hw.fp8_tflops, 0, 0);
    CU_ASSERT_DOUBLE_EQUAL(hw.tdp_w, 0, 0);
    CU_ASSERT_STRING_EQUAL(hw.source, "vendor sheet rev 2");
    CU_ASSERT_FATAL(sv_compute_hw_catalog_lookup(cat, "4242", &hw, &err));
    CU_ASSERT_STRING_EQUAL(hw.name, "MyNPU-1");
    CU_ASSERT_STRING_EQUAL(sv_compute_hw_catalog_get(cat, n0)->name, "MyNPU-1");
    /* The built-in catalog (and another catalog) does not know it: no global state. */
    CU_ASSERT(!sv_compute_hw_lookup("MyNPU-1", &hw, &err));
    CU_ASSERT(err && strstr(err->message, "MyNPU-1") && strstr(err->message, "--hardware-file"));
    g_clear_error(&err);
    sv_test_rmtree(dir);
}

/* A JSON entry naming a device (by an alias) overrides the fields it gives and keeps the rest;
 * without a source of its own the device's source says what the file changed. */
static void test_file_overrides_json(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *path = put_file(dir, "site.json",
                                     "{\"about\": \"our H100s run at a lower memory clock\",\n"
                                     " \"hardware\": [{\"name\": \"h100\", \"mem_bw_gbps\": 3000,\n"
                                     "                \"aliases\": [\"lab-gpu\"]}]}\n");
    g_autoptr(sv_compute_hw_catalog) cat = sv_compute_hw_catalog_new();
    guint n0 = sv_compute_hw_catalog_size(cat);
    GError *err = NULL;
    CU_ASSERT_FATAL(sv_compute_hw_catalog_load(cat, path, &err));
    SV_ASSERT_EQ_I64(sv_compute_hw_catalog_size(cat), n0);
    struct sv_compute_hw_cfg hw, orig;
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100-SXM", &orig, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_catalog_lookup(cat, "lab-gpu", &hw, &err));
    CU_ASSERT_STRING_EQUAL(hw.name, "H100-SXM");
    CU_ASSERT_DOUBLE_EQUAL(hw.mem_bw_gbps, 3000, 0);
    CU_ASSERT_DOUBLE_EQUAL(hw.bf16_tflops, orig.bf16_tflops, 0);
    CU_ASSERT_DOUBLE_EQUAL(hw.mem_gib, orig.mem_gib, 0);
    CU_ASSERT(g_str_has_prefix(hw.source, "site.json: hardware[0]: mem_bw_gbps (hardware file); "));
    CU_ASSERT(strstr(hw.source, "hardware_specs.csv") != NULL);
    /* A second file may override again: later files win. */
    g_autofree char *p2 = put_file(dir, "more.json",
                                   "{\"hardware\": [{\"name\": \"lab-gpu\", \"mem_bw_gbps\": 2500,"
                                   " \"source\": \"measured\"}]}");
    CU_ASSERT_FATAL(sv_compute_hw_catalog_load(cat, p2, &err));
    CU_ASSERT_FATAL(sv_compute_hw_catalog_lookup(cat, "H100", &hw, &err));
    CU_ASSERT_DOUBLE_EQUAL(hw.mem_bw_gbps, 2500, 0);
    CU_ASSERT_STRING_EQUAL(hw.source, "measured");
    sv_test_rmtree(dir);
}

/* Bad files: the error names the file and the field path, and the catalog is unchanged (an
 * earlier valid entry of the same file is not applied). */
static void test_file_errors(void)
{
    static const struct {
        const char *name, *text, *want;
    } bad[] = {
        {"a.yaml", "hardware:\n  - name: X1\n    bf16_tflop: 1\n",
         "a.yaml: hardware[0].bf16_tflop"},
        {"b.yaml", "hardware:\n  - name: X1\n    mem_gb: 80\n", "b.yaml: hardware[0].mem_gb: capa"},
        {"c.yaml",
         "hardware:\n  - name: X1\n    bf16_tflops: 1\n    mem_gib: 1\n"
         "    mem_bw_gbps: 1\n",
         "c.yaml: hardware[0].source: missing"},
        {"d.yaml", "hardware:\n  - name: X1\n    bf16_tflops: 1\n    source: s\n",
         "d.yaml: hardware[0].mem_gib: missing"},
        {"e.yaml", "hardware:\n  - name: H100\n    tdp_w: -5\n",
         "e.yaml: hardware[0].tdp_w: must not"},
        {"f.yaml", "hardware:\n  - name: H100\n    mem_bw_gbps: fast\n",
         "f.yaml: hardware[0].mem_bw_gbps: expected a number"},
        {"g.yaml", "hardware:\n  - name: H100\n    tdp_w: 1\n  - name: H100-SXM\n    tdp_w: 2\n",
         "g.yaml: hardware[1]: H100-SXM is already given by hardware[0]"},
        {"h.yaml", "hardware:\n  - name: H100\n    aliases: [A100]\n",
         "h.yaml: hardware[0]: its name and aliases name two devices"},
        {"i.json",
         "{\"hardware\": [{\"name\": \"H100\", \"mem_bw_gbps\": 1},"
         " {\"name\": \"H200\", \"mem_gib\": 0}]}",
         "i.json: hardware[1].mem_gib: must be positive"},
        {"j.json", "{\"devices\": []}", "j.json.devices: unknown key"},
        {"k.yaml", "hardware:\n  - name: H100\n    compute_units: 1.5\n",
         "k.yaml: hardware[0].compute_units: expected a whole number"},
        {"l.json", "{\"hardware\": [{\"name\": \"H100\", \"bf16_tflops\": \"1\"}]}",
         "l.json: hardware[0].bf16_tflops: expected a number"},
    };
    g_autofree char *dir = sv_test_tmpdir();
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *path = put_file(dir, bad[i].name, bad[i].text);
        g_autoptr(sv_compute_hw_catalog) cat = sv_compute_hw_catalog_new();
        guint n0 = sv_compute_hw_catalog_size(cat);
        GError *err = NULL;
        CU_ASSERT(!sv_compute_hw_catalog_load(cat, path, &err));
        if (!err || !strstr(err->message, bad[i].want))
            fprintf(stderr, "\n%s: got \"%s\", want \"%s\"\n", bad[i].name,
                    err ? err->message : "(no error)", bad[i].want);
        CU_ASSERT(err && strstr(err->message, bad[i].want));
        g_clear_error(&err);
        SV_ASSERT_EQ_I64(sv_compute_hw_catalog_size(cat), n0);
        struct sv_compute_hw_cfg hw;
        CU_ASSERT_FATAL(sv_compute_hw_catalog_lookup(cat, "H100", &hw, NULL));
        CU_ASSERT_DOUBLE_EQUAL(hw.mem_bw_gbps, 3350, 0); /* i.json's entry 0 not applied */
    }
    g_autoptr(sv_compute_hw_catalog) cat = sv_compute_hw_catalog_new();
    GError *err = NULL;
    CU_ASSERT(!sv_compute_hw_catalog_load(cat, "/nonexistent/hw.yaml", &err));
    CU_ASSERT(err && strstr(err->message, "/nonexistent/hw.yaml"));
    g_clear_error(&err);
    sv_test_rmtree(dir);
}

/* Overrides of single fields through the API (the schema's numeric keys). */
static void test_apply_overrides(void)
{
    struct sv_compute_hw_cfg hw;
    GError *err = NULL;
    CU_ASSERT_FATAL(sv_compute_hw_lookup("h100", &hw, &err));
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, "{\"mem_gb\": 80}", -1, NULL));
    CU_ASSERT(!sv_compute_hw_apply_overrides(&hw, json_node_get_object(json_parser_get_root(p)),
                                             "cluster.json: hardware", &err));
    CU_ASSERT(err && strstr(err->message, "cluster.json: hardware.mem_gb") &&
              strstr(err->message, "mem_gib"));
    g_clear_error(&err);
    CU_ASSERT_FATAL(json_parser_load_from_data(
        p, "{\"link_latency_ns\": 700, \"compute_units\": 66, \"mem_bw_gbps\": -1}", -1, NULL));
    CU_ASSERT(!sv_compute_hw_apply_overrides(&hw, json_node_get_object(json_parser_get_root(p)),
                                             "x", &err));
    g_clear_error(&err);
    CU_ASSERT_DOUBLE_EQUAL(hw.link_latency_ns, 1900, 0); /* nothing applied */
    CU_ASSERT_FATAL(json_parser_load_from_data(
        p, "{\"link_latency_ns\": 700, \"compute_units\": 66}", -1, NULL));
    CU_ASSERT(sv_compute_hw_apply_overrides(&hw, json_node_get_object(json_parser_get_root(p)), "x",
                                            &err));
    CU_ASSERT_DOUBLE_EQUAL(hw.link_latency_ns, 700, 0);
    SV_ASSERT_EQ_I64(hw.compute_units, 66);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"builtin_complete", test_builtin_complete},
        {"builtin_matches_specs_csv", test_builtin_matches_specs_csv},
        {"builtin_rules", test_builtin_rules},
        {"builtin_launch_measured", test_builtin_launch_measured},
        {"file_adds_yaml", test_file_adds_yaml},
        {"file_overrides_json", test_file_overrides_json},
        {"file_errors", test_file_errors},
        {"apply_overrides", test_apply_overrides},
        {NULL, NULL},
    };
    sv_test_add_suite("hardware", cases);
    return sv_test_run();
}
