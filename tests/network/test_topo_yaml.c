/* sv_net_topo_save_yaml: ASTRA-sim's analytical network YAML (CHAKRA_ET.md 3.4) that
 * sv_net_topo_load_yaml reads back to the same topology, every double to the bit; the text of a
 * known topology compared with ASTRA-sim's shipped Switch2x2_2d.yml written out by hand. */
#include "network/network.h"
#include "tests/test_util.h"

#include <math.h>
#include <string.h>

static char *tmp;

static char *slurp(const char *path)
{
    char *text = NULL;
    CU_ASSERT_TRUE_FATAL(g_file_get_contents(path, &text, NULL, NULL));
    return text;
}

static void roundtrip(const struct sv_net_topo_cfg *t)
{
    g_autofree char *path = g_build_filename(tmp, "net.yml", NULL);
    GError *err = NULL;
    gboolean ok = sv_net_topo_save_yaml(t, path, &err);
    if (!ok)
        fprintf(stderr, "%s\n", err->message);
    CU_ASSERT_TRUE_FATAL(ok);
    struct sv_net_topo_cfg back;
    memset(&back, 0xab, sizeof back);
    ok = sv_net_topo_load_yaml(path, &back, &err);
    if (!ok)
        fprintf(stderr, "%s\n", err->message);
    CU_ASSERT_TRUE_FATAL(ok);
    CU_ASSERT_EQUAL_FATAL(back.ndims, t->ndims);
    for (int d = 0; d < t->ndims; d++) {
        CU_ASSERT_EQUAL(back.kind[d], t->kind[d]);
        CU_ASSERT_EQUAL(back.npus[d], t->npus[d]);
        CU_ASSERT_TRUE(memcmp(&back.bandwidth_gbps[d], &t->bandwidth_gbps[d], sizeof(double)) == 0);
        CU_ASSERT_TRUE(memcmp(&back.latency_ns[d], &t->latency_ns[d], sizeof(double)) == 0);
    }
}

/* ASTRA-sim's Switch2x2_2d.yml: the same lists, in the shipped file's spelling. */
static void test_text(void)
{
    struct sv_net_topo_cfg t = {.ndims = 2,
                                .kind = {SV_NET_TOPO_SWITCH, SV_NET_TOPO_SWITCH},
                                .npus = {2, 2},
                                .bandwidth_gbps = {100, 25},
                                .latency_ns = {500, 1000}};
    g_autofree char *path = g_build_filename(tmp, "switch.yml", NULL);
    CU_ASSERT_TRUE_FATAL(sv_net_topo_save_yaml(&t, path, NULL));
    g_autofree char *text = slurp(path);
    CU_ASSERT_STRING_EQUAL(text, "topology: [ Switch, Switch ]\n"
                                 "npus_count: [ 2, 2 ]\n"
                                 "bandwidth: [ 100.0, 25.0 ]  # GB/s\n"
                                 "latency: [ 500.0, 1000.0 ]  # ns\n");
    roundtrip(&t);
}

/* Every kind, up to the most dimensions, and doubles whose shortest text takes 17 digits, an
 * exponent or a fraction of a nanosecond. */
static void test_roundtrip(void)
{
    struct sv_net_topo_cfg t = {
        .ndims = 3,
        .kind = {SV_NET_TOPO_RING, SV_NET_TOPO_FULLY_CONNECTED, SV_NET_TOPO_SWITCH},
        .npus = {8, 3, 2},
        .bandwidth_gbps = {0.1 + 0.2, 1.0 / 3.0, 123456789.125},
        .latency_ns = {0, 1e-9, 12.25},
    };
    roundtrip(&t);
    g_autofree char *path = g_build_filename(tmp, "net.yml", NULL);
    g_autofree char *text = slurp(path);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "topology: [ Ring, FullyConnected, Switch ]\n"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(text, "bandwidth: [ 0.30000000000000004, 0.3333333333333333, 123456789.125 ]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "latency: [ 0.0, 1e-09, 12.25 ]"));

    struct sv_net_topo_cfg big = {.ndims = SV_NET_MAX_DIMS};
    for (int d = 0; d < SV_NET_MAX_DIMS; d++) {
        big.kind[d] = (sv_net_topo_kind)(d % 3);
        big.npus[d] = 2;
        big.bandwidth_gbps[d] = 50.0 * (d + 1) / 7.0;
        big.latency_ns[d] = 100.0 * d;
    }
    roundtrip(&big);
}

/* An invalid topology is an error naming the file and the field; nothing is written. */
static void test_errors(void)
{
    g_autofree char *path = g_build_filename(tmp, "bad.yml", NULL);
    CU_ASSERT_TRUE(g_file_set_contents(path, "old", -1, NULL));
    struct sv_net_topo_cfg t = {.ndims = 1,
                                .kind = {SV_NET_TOPO_RING},
                                .npus = {1},
                                .bandwidth_gbps = {50},
                                .latency_ns = {500}};
    GError *err = NULL;
    CU_ASSERT_FALSE(sv_net_topo_save_yaml(&t, path, &err));
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, "npus_count[0]: 1 npus"));
    CU_ASSERT_PTR_NOT_NULL(err && g_str_has_prefix(err->message, path));
    g_clear_error(&err);
    t.npus[0] = 4;
    t.bandwidth_gbps[0] = NAN;
    CU_ASSERT_FALSE(sv_net_topo_save_yaml(&t, path, &err));
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, "bandwidth[0]"));
    g_clear_error(&err);
    t.bandwidth_gbps[0] = 50;
    t.latency_ns[0] = -1;
    CU_ASSERT_FALSE(sv_net_topo_save_yaml(&t, path, &err));
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, "latency[0]"));
    g_clear_error(&err);
    t.latency_ns[0] = 0;
    t.ndims = 0;
    CU_ASSERT_FALSE(sv_net_topo_save_yaml(&t, path, &err));
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, "0 dimensions"));
    g_clear_error(&err);
    g_autofree char *text = slurp(path);
    CU_ASSERT_STRING_EQUAL(text, "old");
    t.ndims = 1;
    g_autofree char *nowhere = g_build_filename(tmp, "no", "dir", "x.yml", NULL);
    CU_ASSERT_FALSE(sv_net_topo_save_yaml(&t, nowhere, &err));
    CU_ASSERT_PTR_NOT_NULL(err && g_str_has_prefix(err->message, nowhere));
    g_clear_error(&err);
}

int main(void)
{
    tmp = sv_test_tmpdir();
    static const sv_test_case cases[] = {
        {"Switch2x2_2d text", test_text},
        {"round trip", test_roundtrip},
        {"errors", test_errors},
        {NULL, NULL},
    };
    sv_test_add_suite("network_yaml_save", cases);
    int rc = sv_test_run();
    sv_test_rmtree(tmp);
    g_free(tmp);
    return rc;
}
