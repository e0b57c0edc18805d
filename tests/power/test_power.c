/* The power domain (power/power.h) against hand-computed energies, and the nodes[].power reader on
 * a config this test writes and on LLMServingSim's bundled one. Every expected number is worked
 * out in the comment above its test from the config's numbers, not from the program. */
#include "power/power.h"
#include "tests/test_util.h"

#include <string.h>

#define S SV_NS_PER_S
#define EPS 1e-9

/* The test's own node (all numbers exact in binary). Idle power with two devices:
 *   base 50 + npu 2 x 20 + cpu 10 + (90 - 10) x 0.25 = 30 + dram ceil(64 / 16) = 4 DIMMs x 2 = 8
 *   + link 2 x 4 = 8 + nic 1 x 12 + storage 2 x 3 = 6  =  154 W. */
static const char *const NODE_JSON =
    "{\"nodes\": [{\"cpu_mem\": {\"mem_size\": 64, \"mem_bw\": 100, \"mem_latency\": 0},"
    " \"power\": {\"base_node_power\": 50,"
    "  \"npu\": {\"X\": {\"idle_power\": 20, \"standby_power\": 100, \"active_power\": 400,"
    "                   \"standby_duration\": 2}},"
    "  \"cpu\": {\"idle_power\": 10, \"active_power\": 90, \"util\": 0.25},"
    "  \"dram\": {\"dimm_size\": 16, \"idle_power\": 2, \"energy_per_bit\": 5},"
    "  \"link\": {\"num_links\": 2, \"idle_power\": 4, \"energy_per_bit\": 4},"
    "  \"nic\": {\"num_nics\": 1, \"idle_power\": 12},"
    "  \"storage\": {\"num_devices\": 2, \"idle_power\": 3}%s}}]}";

struct warnings {
    int n;
    char last[512];
};

static void catch_warning(const char *domain, GLogLevelFlags level, const char *msg, void *data)
{
    struct warnings *w = data;
    w->n++;
    g_strlcpy(w->last, msg, sizeof w->last);
}

/* Read NODE_JSON with `extra` spliced into the power block (e.g. ", \"switch\": {...}") and
 * `edit` applied as a (from, to) substring replacement when non-NULL. */
static gboolean read_cfg(struct sv_power_node_cfg *cfg, const char *extra, const char *from,
                         const char *to, struct warnings *w, GError **error)
{
    g_autofree char *text = g_strdup_printf(NODE_JSON, extra ? extra : "");
    if (from) {
        char *at = strstr(text, from);
        SV_ASSERT(at);
        g_autofree char *head = g_strndup(text, (gsize)(at - text));
        char *edited = g_strconcat(head, to, at + strlen(from), NULL);
        g_free(text);
        text = edited;
    }
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *path = g_build_filename(dir, "cluster.json", NULL);
    SV_ASSERT(g_file_set_contents(path, text, -1, NULL));
    JsonNode *root = sv_cfg_load_json(path, NULL);
    SV_ASSERT(root);
    JsonObject *node = json_array_get_object_element(
        json_object_get_array_member(json_node_get_object(root), "nodes"), 0);
    guint h = g_log_set_handler("servesim-power", G_LOG_LEVEL_WARNING, catch_warning, w);
    gboolean ok = sv_power_node_cfg_read(cfg, node, "cluster.json: nodes[0]", error);
    g_log_remove_handler("servesim-power", h);
    json_node_unref(root);
    sv_test_rmtree(dir);
    return ok;
}

static sv_power_domain *own_domain(const char *extra)
{
    struct sv_power_node_cfg cfg;
    struct warnings w = {0};
    g_autoptr(GError) err = NULL;
    gboolean ok = read_cfg(&cfg, extra, NULL, NULL, &w, &err);
    CU_ASSERT_TRUE(ok);
    CU_ASSERT_EQUAL(w.n, 0);
    SV_ASSERT(ok);
    sv_power_domain *dom = sv_power_domain_new(&cfg, 0);
    sv_power_node_cfg_clear(&cfg);
    CU_ASSERT_EQUAL(sv_power_device_add(dom, "X", NULL), 0);
    CU_ASSERT_EQUAL(sv_power_device_add(dom, "X", NULL), 1);
    return dom;
}

/* The reader keeps the numbers as written: DIMMs = ceil(64 / 16) = 4, standby 2 s = 2e9 ns. */
static void test_read_own(void)
{
    struct sv_power_node_cfg cfg;
    struct warnings w = {0};
    CU_ASSERT_TRUE_FATAL(read_cfg(&cfg, NULL, NULL, NULL, &w, NULL));
    CU_ASSERT_STRING_EQUAL(cfg.where, "cluster.json: nodes[0].power");
    CU_ASSERT_EQUAL(cfg.n_npu, 1);
    const struct sv_power_npu_cfg *x = sv_power_node_cfg_npu(&cfg, "X");
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_DOUBLE_EQUAL(x->active_w, 400.0, 0.0);
    SV_ASSERT_EQ_I64(x->standby_ns, 2 * S);
    SV_ASSERT_EQ_I64(cfg.dram_dimms, 4);
    CU_ASSERT_DOUBLE_EQUAL(cfg.nic_pj_per_bit, 0.0, 0.0);
    SV_ASSERT_EQ_I64(cfg.num_switches, 0);
    CU_ASSERT_PTR_NULL(sv_power_node_cfg_npu(&cfg, "H100"));
    sv_power_node_cfg_clear(&cfg);
}

/* Idle only, 0 to 10 s: every component at its idle power, 154 W x 10 s = 1,540 J; per component
 * npu 40 x 10 = 400, cpu 300, dram 80, link 80, nic 120, storage 60, base 500. */
static void test_idle_only(void)
{
    sv_power_domain *dom = own_domain(NULL);
    const double want[SV_POWER_N_COMPONENTS] = {400, 300, 80, 80, 120, 60, 500};
    for (int c = 0; c < SV_POWER_N_COMPONENTS; c++)
        CU_ASSERT_DOUBLE_EQUAL(sv_power_energy_j(dom, c, 10 * S), want[c], EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_total_energy_j(dom, 10 * S), 1540.0, EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_total_power_w(dom, 3 * S), 154.0, EPS);
    CU_ASSERT_EQUAL(sv_power_device_state(dom, 0, 10 * S), SV_POWER_IDLE);
    sv_power_domain_free(dom);
}

/* Device 0 computes from 1 s to 4 s; standby 2 s (4 to 6 s), then idle to 10 s:
 * active 400 x 3 = 1,200 J, standby 100 x 2 = 200 J, idle 20 x (1 + 4) = 100 J, device 1,500 J;
 * device 1 idle 20 x 10 = 200 J. States: active at 2 s, standby at 5 s, idle at exactly 6 s.
 * Node total = 1,540 - 200 (device 0's idle-only energy) + 1,500 = 2,840 J. */
static void test_compute_standby_idle(void)
{
    sv_power_domain *dom = own_domain(NULL);
    sv_power_device_busy(dom, 0, 1 * S);
    CU_ASSERT_EQUAL(sv_power_device_state(dom, 0, 2 * S), SV_POWER_ACTIVE);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_power_w(dom, SV_POWER_NPU, 2 * S), 420.0, EPS);
    sv_power_device_idle(dom, 0, 4 * S);
    CU_ASSERT_EQUAL(sv_power_device_state(dom, 0, 5 * S), SV_POWER_STANDBY);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_power_w(dom, SV_POWER_NPU, 5 * S), 120.0, EPS);
    CU_ASSERT_EQUAL(sv_power_device_state(dom, 0, 6 * S - 1), SV_POWER_STANDBY);
    CU_ASSERT_EQUAL(sv_power_device_state(dom, 0, 6 * S), SV_POWER_IDLE);
    /* mid-standby query: 5 s gives standby 100 x 1 = 100 J so far */
    CU_ASSERT_DOUBLE_EQUAL(sv_power_device_state_energy_j(dom, 0, SV_POWER_STANDBY, 5 * S), 100.0,
                           EPS);
    sv_time t = 10 * S;
    CU_ASSERT_DOUBLE_EQUAL(sv_power_device_state_energy_j(dom, 0, SV_POWER_ACTIVE, t), 1200.0, EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_device_state_energy_j(dom, 0, SV_POWER_STANDBY, t), 200.0, EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_device_state_energy_j(dom, 0, SV_POWER_IDLE, t), 100.0, EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_device_energy_j(dom, 0, t), 1500.0, EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_device_energy_j(dom, 1, t), 200.0, EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_energy_j(dom, SV_POWER_NPU, t), 1700.0, EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_total_energy_j(dom, t), 2840.0, EPS);
    sv_power_domain_free(dom);
}

/* A compute inside the standby window restarts it, and busy/idle nest. Device 0: busy 1-4 s,
 * busy again 5-5.5 s with a nested second compute 5.1-5.2 s (still one active stretch):
 * active 400 x (3 + 0.5) = 1,400 J; standby 100 x (1 + 2) = 300 J (4-5 s, 5.5-7.5 s);
 * idle 20 x (1 + 2.5) = 70 J. */
static void test_standby_restart_and_nesting(void)
{
    sv_power_domain *dom = own_domain(NULL);
    const sv_time ms = SV_NS_PER_MS;
    sv_power_device_busy(dom, 0, 1 * S);
    sv_power_device_idle(dom, 0, 4 * S);
    sv_power_device_busy(dom, 0, 5 * S);
    sv_power_device_busy(dom, 0, 5100 * ms);
    sv_power_device_idle(dom, 0, 5200 * ms);
    CU_ASSERT_EQUAL(sv_power_device_state(dom, 0, 5300 * ms), SV_POWER_ACTIVE);
    sv_power_device_idle(dom, 0, 5500 * ms);
    sv_time t = 10 * S;
    CU_ASSERT_DOUBLE_EQUAL(sv_power_device_state_energy_j(dom, 0, SV_POWER_ACTIVE, t), 1400.0, EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_device_state_energy_j(dom, 0, SV_POWER_STANDBY, t), 300.0, EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_device_state_energy_j(dom, 0, SV_POWER_IDLE, t), 70.0, EPS);
    sv_power_domain_free(dom);
}

/* Traffic: 1e9 B over links at 4 pJ/bit = 8e9 bit x 4 pJ = 0.032 J, plus link idle 8 W x 10 s =
 * 80 J: 80.032 J. DRAM 2e9 B at 5 pJ/bit = 1.6e10 x 5 pJ = 0.08 J + 8 W x 10 s: 80.08 J. With a
 * switch (1 x 7 W idle, 10 pJ/bit) 1e9 B through it adds 8e9 x 10 pJ = 0.08 J and 7 x 10 = 70 J
 * to the link component: 80.032 + 70.08 = 150.112 J. NIC and storage have no traffic energy
 * unless configured: 12 x 10 = 120 J whatever the bytes. */
static void test_traffic(void)
{
    sv_power_domain *dom = own_domain(", \"switch\": {\"num_switches\": 1, \"idle_power\": 7,"
                                      " \"energy_per_bit\": 10}");
    sv_power_bytes(dom, SV_POWER_LINK, 1000000000u, 2 * S);
    sv_power_switch_bytes(dom, 1000000000u, 2 * S);
    sv_power_bytes(dom, SV_POWER_DRAM, 2000000000u, 3 * S);
    sv_power_bytes(dom, SV_POWER_NIC, 1000000000u, 3 * S);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_energy_j(dom, SV_POWER_LINK, 10 * S), 150.112, EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_energy_j(dom, SV_POWER_DRAM, 10 * S), 80.08, EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_energy_j(dom, SV_POWER_NIC, 10 * S), 120.0, EPS);
    /* instantaneous power is the constant part: link 8 + switch 7 = 15 W */
    CU_ASSERT_DOUBLE_EQUAL(sv_power_power_w(dom, SV_POWER_LINK, 5 * S), 15.0, EPS);
    /* An energy impulse (PIM activity): 2.5 J on DRAM at 4 s adds to its energy, not its power. */
    sv_power_add_energy_j(dom, SV_POWER_DRAM, 2.5, 4 * S);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_energy_j(dom, SV_POWER_DRAM, 10 * S), 82.58, EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_power_w(dom, SV_POWER_DRAM, 5 * S), 8.0, EPS);
    sv_power_domain_free(dom);
}

/* CPU utilisation 0.25 until 5 s, 0.75 after: 30 W x 5 s + (10 + 80 x 0.75 = 70) W x 5 s = 500 J.
 * Components sum to the total and the devices to the npu component, after mixed activity; and
 * the total equals 154 W idle x 10 s plus the extra each change added: cpu +40 W x 5 s = 200,
 * device 1 computing 2-3 s: +380 W x 1 s, standby 3-5 s: +80 W x 2 s = 540, link bytes 0.032. */
static void test_cpu_and_sum(void)
{
    sv_power_domain *dom = own_domain(NULL);
    sv_power_device_busy(dom, 1, 2 * S);
    sv_power_device_idle(dom, 1, 3 * S);
    sv_power_cpu_util(dom, 0.75, 5 * S);
    sv_power_bytes(dom, SV_POWER_LINK, 1000000000u, 7 * S);
    sv_time t = 10 * S;
    CU_ASSERT_DOUBLE_EQUAL(sv_power_energy_j(dom, SV_POWER_CPU, t), 500.0, EPS);
    double sum = 0.0;
    for (int c = 0; c < SV_POWER_N_COMPONENTS; c++)
        sum += sv_power_energy_j(dom, c, t);
    CU_ASSERT_DOUBLE_EQUAL(sum, sv_power_total_energy_j(dom, t), EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_device_energy_j(dom, 0, t) +
                               sv_power_device_energy_j(dom, 1, t),
                           sv_power_energy_j(dom, SV_POWER_NPU, t), EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_total_energy_j(dom, t), 1540.0 + 200.0 + 540.0 + 0.032, EPS);
    /* energy is the integral of power: over 8-10 s nothing changes, 2 s x total power */
    double p = sv_power_total_power_w(dom, 8 * S);
    CU_ASSERT_DOUBLE_EQUAL(p, 154.0 + 40.0, EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_total_energy_j(dom, t) - sv_power_total_energy_j(dom, 8 * S),
                           2.0 * p, EPS);
    sv_power_domain_free(dom);
}

/* Errors say what and where. */
static void expect_error(const char *from, const char *to, const char *msg_part)
{
    struct sv_power_node_cfg cfg;
    struct warnings w = {0};
    g_autoptr(GError) err = NULL;
    CU_ASSERT_FALSE(read_cfg(&cfg, NULL, from, to, &w, &err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    if (!strstr(err->message, msg_part))
        fprintf(stderr, "\n  got \"%s\", wanted \"%s\"\n", err->message, msg_part);
    CU_ASSERT_PTR_NOT_NULL(strstr(err->message, msg_part));
}

static void test_errors(void)
{
    expect_error("\"util\": 0.25", "\"utilisation\": 0.25",
                 "cluster.json: nodes[0].power.cpu.util: required key is missing");
    expect_error("\"util\": 0.25", "\"util\": 1.5", "cluster.json: nodes[0].power.cpu.util: 1.5");
    expect_error("\"idle_power\": 20", "\"idle_power\": -20",
                 "cluster.json: nodes[0].power.npu.X.idle_power: -20 is negative");
    expect_error("\"num_links\": 2", "\"num_links\": 2.5",
                 "cluster.json: nodes[0].power.link.num_links: expected an integer");
    expect_error("\"mem_size\": 64", "\"size\": 64",
                 "cluster.json: nodes[0].cpu_mem.mem_size: required key is missing");
    expect_error("\"dimm_size\": 16", "\"dimm_size\": 0",
                 "cluster.json: nodes[0].power.dram.dimm_size: must be > 0");
    expect_error("\"power\"", "\"powr\"", "cluster.json: nodes[0].power: missing");

    g_autoptr(sv_power_domain) dom = own_domain(NULL);
    g_autoptr(GError) err = NULL;
    CU_ASSERT_EQUAL(sv_power_device_add(dom, "H100", &err), -1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT_STRING_EQUAL(err->message,
                           "cluster.json: nodes[0].power.npu: no entry for hardware \"H100\"");
}

/* standby_duration is read in seconds; 18e9 (18 s written in ns) warns and names the key; an
 * unknown key warns too. */
static void test_warnings(void)
{
    struct sv_power_node_cfg cfg;
    struct warnings w = {0};
    CU_ASSERT_TRUE_FATAL(read_cfg(&cfg, NULL, "\"standby_duration\": 2",
                                  "\"standby_duration\": 18000000000", &w, NULL));
    CU_ASSERT_EQUAL(w.n, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(w.last, "nodes[0].power.npu.X.standby_duration"));
    CU_ASSERT_PTR_NOT_NULL(strstr(w.last, "nanoseconds"));
    sv_power_node_cfg_clear(&cfg);

    w.n = 0;
    CU_ASSERT_TRUE_FATAL(read_cfg(&cfg, ", \"gpu\": {}", NULL, NULL, &w, NULL));
    CU_ASSERT_EQUAL(w.n, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(w.last, "cluster.json: nodes[0].power.gpu: unknown key"));
    sv_power_node_cfg_clear(&cfg);
}

/* LLMServingSim's bundled single_node_power_instance.json. One RTXPRO6000, idle power:
 *   base 60 + npu 35 + cpu 10 + (200 - 10) x 0.15 = 38.5 + dram ceil(512 / 32) = 16 DIMMs x 2.0
 *   = 32 + link 1 x 5 + nic 1 x 20 + storage 2 x 5 = 10  =  200.5 W; 100 s idle: 20,050 J.
 * One 1 s compute at t = 0 on it then 99 s of rest: active 600 J, standby 300 W x 18 s = 5,400 J,
 * idle 35 W x 81 s = 2,835 J (standby_duration 18 read as seconds); node 25,385 J. */
static void test_reference_config(void)
{
    SV_REQUIRE_SHARED("reference/llmservingsim/configs/cluster/single_node_power_instance.json",
                      "LLMServingSim's bundled power config");
    g_autoptr(GError) err = NULL;
    JsonNode *root = sv_cfg_load_json(
        SV_SHARED "/reference/llmservingsim/configs/cluster/single_node_power_instance.json", &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    JsonObject *node = json_array_get_object_element(
        json_object_get_array_member(json_node_get_object(root), "nodes"), 0);
    struct sv_power_node_cfg cfg;
    CU_ASSERT_TRUE_FATAL(
        sv_power_node_cfg_read(&cfg, node, "single_node_power_instance.json: nodes[0]", &err));
    json_node_unref(root);
    SV_ASSERT_EQ_I64(cfg.dram_dimms, 16);
    const struct sv_power_npu_cfg *hw = sv_power_node_cfg_npu(&cfg, "RTXPRO6000");
    CU_ASSERT_PTR_NOT_NULL_FATAL(hw);
    SV_ASSERT_EQ_I64(hw->standby_ns, 18 * S);

    sv_power_domain *idle = sv_power_domain_new(&cfg, 0);
    CU_ASSERT_EQUAL(sv_power_device_add(idle, "RTXPRO6000", NULL), 0);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_total_power_w(idle, 0), 200.5, EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_total_energy_j(idle, 100 * S), 20050.0, 1e-6);
    sv_power_domain_free(idle);

    sv_power_domain *dom = sv_power_domain_new(&cfg, 0);
    CU_ASSERT_EQUAL(sv_power_device_add(dom, "RTXPRO6000", NULL), 0);
    sv_power_device_busy(dom, 0, 0);
    sv_power_device_idle(dom, 0, 1 * S);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_device_state_energy_j(dom, 0, SV_POWER_ACTIVE, 100 * S), 600.0,
                           EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_device_state_energy_j(dom, 0, SV_POWER_STANDBY, 100 * S),
                           5400.0, EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_device_state_energy_j(dom, 0, SV_POWER_IDLE, 100 * S), 2835.0,
                           EPS);
    /* docs/power.md's worked example: 20,050 - 3,500 + 8,835 = 25,385 J; 1 GB on the link adds
     * 8e9 bit x 4 pJ = 0.032 J */
    CU_ASSERT_DOUBLE_EQUAL(sv_power_total_energy_j(dom, 100 * S), 25385.0, 1e-6);
    sv_power_bytes(dom, SV_POWER_LINK, 1000000000u, 50 * S);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_total_energy_j(dom, 100 * S), 25385.032, 1e-6);
    sv_power_domain_free(dom);
    sv_power_node_cfg_clear(&cfg);
}

/* DVFS (sv_power_dvfs_w: idle + (P - idle) x f^3). Node X: idle 20, standby 100, active 400 W.
 * Device 0 at clock 0.5 from t = 0: active 20 + 380 / 8 = 67.5 W, standby 20 + 80 / 8 = 30 W;
 * busy 1-4 s: active 67.5 x 3 = 202.5 J, standby 30 x 2 = 60 J (4-6 s), idle 20 x 5 = 100 J.
 * Device 1 busy 1-3 s, clock 0.5 from 2 s: active 400 x 1 + 67.5 x 1 = 467.5 J. */
static void test_dvfs(void)
{
    CU_ASSERT_DOUBLE_EQUAL(sv_power_dvfs_w(20, 400, 1.0), 400.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_dvfs_w(20, 400, 0.5), 67.5, EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_dvfs_w(20, 400, 0.7), 20 + 380 * 0.343, EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_dvfs_w(20, 10, 0.5), 10.0, 0); /* nothing above idle */
    sv_power_domain *dom = own_domain(NULL);
    sv_power_device_set_clock(dom, 0, 0.5, 0);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_device_clock(dom, 0), 0.5, 0);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_device_clock(dom, 1), 1.0, 0);
    sv_power_device_busy(dom, 0, 1 * S);
    sv_power_device_busy(dom, 1, 1 * S);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_power_w(dom, SV_POWER_NPU, 1 * S), 67.5 + 400, EPS);
    sv_power_device_set_clock(dom, 1, 0.5, 2 * S);
    sv_power_device_idle(dom, 1, 3 * S);
    sv_power_device_idle(dom, 0, 4 * S);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_power_w(dom, SV_POWER_NPU, 4 * S), 30.0 + 30.0, EPS);
    sv_time t = 10 * S;
    CU_ASSERT_DOUBLE_EQUAL(sv_power_device_state_energy_j(dom, 0, SV_POWER_ACTIVE, t), 202.5, EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_device_state_energy_j(dom, 0, SV_POWER_STANDBY, t), 60.0, EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_device_state_energy_j(dom, 0, SV_POWER_IDLE, t), 100.0, EPS);
    CU_ASSERT_DOUBLE_EQUAL(sv_power_device_state_energy_j(dom, 1, SV_POWER_ACTIVE, t), 467.5, EPS);
    sv_power_domain_free(dom);
}

/* A power block without `npu` reads (the entries come from the hardware catalog, added by the
 * caller with sv_power_node_cfg_add_npu); a device of a hardware still missing is an error. */
static void test_npu_absent(void)
{
    struct sv_power_node_cfg cfg;
    struct warnings w = {0};
    g_autoptr(GError) err = NULL;
    const char *npu = "\"npu\": {\"X\": {\"idle_power\": 20, \"standby_power\": 100, "
                      "\"active_power\": 400,                   \"standby_duration\": 2}},";
    CU_ASSERT_TRUE_FATAL(read_cfg(&cfg, NULL, npu, "", &w, &err));
    CU_ASSERT_EQUAL(cfg.n_npu, 0);
    struct sv_power_npu_cfg y = {
        .hardware = "Y", .idle_w = 5, .standby_w = 7, .active_w = 9, .standby_ns = 3 * S};
    sv_power_node_cfg_add_npu(&cfg, &y);
    const struct sv_power_npu_cfg *got = sv_power_node_cfg_npu(&cfg, "Y");
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    CU_ASSERT(got->hardware != y.hardware && got->active_w == 9 && got->standby_ns == 3 * S);
    sv_power_domain *dom = sv_power_domain_new(&cfg, 0);
    CU_ASSERT_EQUAL(sv_power_device_add(dom, "Y", NULL), 0);
    CU_ASSERT_EQUAL(sv_power_device_add(dom, "X", &err), -1);
    sv_power_domain_free(dom);
    sv_power_node_cfg_clear(&cfg);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"own config read as written (4 DIMMs, standby 2 s)", test_read_own},
        {"idle only: 154 W x 10 s = 1,540 J, per component", test_idle_only},
        {"one compute: active 1,200 + standby 200 + idle 100 J", test_compute_standby_idle},
        {"compute in standby restarts it; busy/idle nest", test_standby_restart_and_nesting},
        {"traffic: bytes x 8 x pJ/bit + idle x time", test_traffic},
        {"cpu utilisation change; components sum to the total", test_cpu_and_sum},
        {"errors name the config path", test_errors},
        {"warnings: standby_duration in ns, unknown key", test_warnings},
        {"LLMServingSim single_node_power_instance.json: 200.5 W idle", test_reference_config},
        {"DVFS: idle + (P - idle) x f^3, set mid-run", test_dvfs},
        {"npu block absent; entries added by the caller", test_npu_absent},
        {NULL, NULL},
    };
    sv_test_add_suite("power", cases);
    return sv_test_run();
}
