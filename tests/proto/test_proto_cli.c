/* `servesim convert` and `servesim inspect` end to end, against the interop vectors and the
 * real trace's summary.json (computed independently with Chakra's Python protobuf). */
#include <glib/gstdio.h>
#include <string.h>

#include "proto/proto.h"
#include "tests/proto/bytes_util.h"
#include "tests/test_util.h"

#define CHAKRA SV_SHARED "/interop/chakra"
#define REAL_TRACE CHAKRA "/real_trace/pytorch_resnet_like.0.et.gz"
#define REAL_SUMMARY CHAKRA "/real_trace/pytorch_resnet_like.0.summary.json"
#define COMPUTE_CHAIN CHAKRA "/vectors/compute_chain/compute_chain.0.et"

static int count_lines(const char *s)
{
    int n = 0;
    for (; s && *s; s++)
        n += *s == '\n';
    return n;
}

/* Run servesim with up to 4 arguments; returns the exit status. */
static int run(char **out, char **err, const char *a1, const char *a2, const char *a3,
               const char *a4)
{
    const char *argv[] = {SV_SERVESIM_BIN, a1, a2, a3, a4, NULL};
    int status = -1;
    CU_ASSERT_FATAL(sv_test_spawn(argv, out, err, &status));
    return status;
}

static void test_convert_reencode(void)
{
    SV_REQUIRE_SHARED("interop/chakra", "the Chakra ET vectors");
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *out_et = g_build_filename(tmp, "cc.et", NULL);
    g_autofree char *out_gz = g_build_filename(tmp, "cc.et.gz", NULL);
    g_autofree char *out_js = g_build_filename(tmp, "cc.json", NULL);
    g_autoptr(GByteArray) input = sv_test_read_file_bytes(COMPUTE_CHAIN);
    CU_ASSERT_PTR_NOT_NULL_FATAL(input);

    g_autofree char *o1 = NULL, *e1 = NULL;
    CU_ASSERT_EQUAL(run(&o1, &e1, "convert", COMPUTE_CHAIN, out_et, NULL), 0);
    CU_ASSERT_STRING_EQUAL(e1, ""); /* no dangling deps in compute_chain */
    g_autoptr(GByteArray) et = sv_test_read_file_bytes(out_et);
    CU_ASSERT(sv_test_bytes_equal(et, input));

    g_autofree char *o2 = NULL, *e2 = NULL;
    CU_ASSERT_EQUAL(run(&o2, &e2, "convert", COMPUTE_CHAIN, out_gz, NULL), 0);
    g_autoptr(GByteArray) gz = sv_test_read_file_bytes(out_gz);
    CU_ASSERT(gz && gz->len > 2 && gz->data[0] == 0x1f && gz->data[1] == 0x8b);
    g_autoptr(GByteArray) unz = sv_test_read_decompressed(out_gz);
    CU_ASSERT(sv_test_bytes_equal(unz, input));

    /* gzip input (the vectors' gzip of the same file) back to plain bytes. */
    g_autofree char *o3 = NULL, *e3 = NULL;
    CU_ASSERT_EQUAL(
        run(&o3, &e3, "convert", CHAKRA "/vectors/gzip/compute_chain_gz.0.et", out_et, NULL), 0);
    g_autoptr(GByteArray) et2 = sv_test_read_file_bytes(out_et);
    CU_ASSERT(sv_test_bytes_equal(et2, input));

    /* JSON: exactly the Python-decoded expectation. */
    g_autofree char *o4 = NULL, *e4 = NULL;
    CU_ASSERT_EQUAL(run(&o4, &e4, "convert", COMPUTE_CHAIN, out_js, NULL), 0);
    g_autoptr(GByteArray) js = sv_test_read_file_bytes(out_js);
    g_autoptr(GByteArray) expected_js =
        sv_test_read_file_bytes(CHAKRA "/vectors/compute_chain/compute_chain.0.json");
    CU_ASSERT(sv_test_bytes_equal(js, expected_js));

    /* all_fields: its node references 8 ids absent from the file (4 data, 4 ctrl: only id
     * 2^64-1 exists); converted anyway with one warning line. */
    g_autofree char *o5 = NULL, *e5 = NULL;
    const char *af = CHAKRA "/vectors/all_fields/all_fields.0.et";
    CU_ASSERT_EQUAL(run(&o5, &e5, "convert", af, out_et, NULL), 0);
    CU_ASSERT_EQUAL(count_lines(e5), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(e5, "8 dependencies on node ids absent from the file"));
    CU_ASSERT_PTR_NOT_NULL(strstr(e5, "(4 data_deps, 4 ctrl_deps)"));
    g_autoptr(GByteArray) afin = sv_test_read_file_bytes(af);
    g_autoptr(GByteArray) afout = sv_test_read_file_bytes(out_et);
    CU_ASSERT(sv_test_bytes_equal(afin, afout));
    sv_test_rmtree(tmp);
}

static void test_convert_real_trace(void)
{
    SV_REQUIRE_SHARED("interop/chakra", "the Chakra ET vectors");
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *out = g_build_filename(tmp, "rt.et", NULL);
    g_autofree char *o = NULL, *e = NULL;
    CU_ASSERT_EQUAL(run(&o, &e, "convert", REAL_TRACE, out, NULL), 0);
    /* 1,277 dangling ctrl_deps (summary.json), reported once. */
    CU_ASSERT_EQUAL(count_lines(e), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(e, "(0 data_deps, 1277 ctrl_deps)"));
    g_autoptr(GByteArray) in = sv_test_read_decompressed(REAL_TRACE);
    g_autoptr(GByteArray) got = sv_test_read_file_bytes(out);
    CU_ASSERT(sv_test_bytes_equal(in, got));
    sv_test_rmtree(tmp);
}

static void test_convert_errors(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    /* GlobalMetadata{"0.0.4"} then a frame announcing 10 bytes with 3 present. */
    static const uint8_t bad[] = {0x07, 0x0a, 0x05, '0',  '.',  '0',
                                  '.',  '4',  0x0a, 0x08, 0x01, 0x12};
    g_autofree char *in = g_build_filename(tmp, "bad.et", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(in, (const char *)bad, sizeof(bad), NULL));
    const char *outs[] = {"out.et", "out.et.gz", "out.json"};
    for (size_t i = 0; i < G_N_ELEMENTS(outs); i++) {
        g_autofree char *out = g_build_filename(tmp, outs[i], NULL);
        g_autofree char *o = NULL, *e = NULL;
        int st = run(&o, &e, "convert", in, out, NULL);
        CU_ASSERT_NOT_EQUAL(st, 0);
        CU_ASSERT(g_str_has_prefix(e, "servesim convert: "));
        CU_ASSERT_PTR_NOT_NULL(strstr(e, "message 1 at byte offset 8"));
        CU_ASSERT_FALSE(g_file_test(out, G_FILE_TEST_EXISTS));
    }
    /* Nothing but the input is left in the directory (no temporary files either). */
    GDir *d = g_dir_open(tmp, 0, NULL);
    int n = 0;
    while (g_dir_read_name(d))
        n++;
    g_dir_close(d);
    CU_ASSERT_EQUAL(n, 1);

    g_autofree char *o = NULL, *e = NULL;
    CU_ASSERT_EQUAL(run(&o, &e, "convert", in, NULL, NULL), 2);
    g_autofree char *o2 = NULL, *e2 = NULL;
    CU_ASSERT_EQUAL(run(&o2, &e2, "convert", "--help", NULL, NULL), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(o2, "usage: servesim convert"));
    g_autofree char *o3 = NULL, *e3 = NULL;
    CU_ASSERT_NOT_EQUAL(run(&o3, &e3, "inspect", in, NULL, NULL), 0);
    CU_ASSERT(g_str_has_prefix(e3, "servesim inspect: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(e3, "message 1 at byte offset 8"));
    sv_test_rmtree(tmp);
}

static void test_inspect(void)
{
    SV_REQUIRE_SHARED("interop/chakra", "the Chakra ET vectors");
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_file(p, REAL_SUMMARY, NULL));
    JsonObject *exp = json_node_get_object(json_parser_get_root(p));

    g_autofree char *o = NULL, *e = NULL;
    CU_ASSERT_EQUAL(run(&o, &e, "inspect", "--json", REAL_TRACE, NULL), 0);
    g_autoptr(JsonParser) q = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(q, o, -1, NULL));
    JsonObject *got = json_node_get_object(json_parser_get_root(q));
    const char *keys[] = {"node_count",
                          "id_min",
                          "id_max",
                          "data_deps_total",
                          "ctrl_deps_total",
                          "data_deps_to_missing_nodes",
                          "ctrl_deps_to_missing_nodes",
                          "nodes_with_duration_micros",
                          "sum_duration_micros",
                          "node_types",
                          "attr_name_and_value_kind_counts",
                          "global_metadata",
                          "ids_strictly_increasing_in_file"};
    for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
        JsonNode *a = json_object_get_member(exp, keys[i]);
        JsonNode *b = json_object_get_member(got, keys[i]);
        if (!b || !json_node_equal(a, b))
            fprintf(stderr, "\ninspect --json differs at %s\n", keys[i]);
        CU_ASSERT(b && json_node_equal(a, b));
    }
    SV_ASSERT_EQ_I64(json_object_get_int_member(got, "stream_bytes"),
                     json_object_get_int_member(exp, "raw_bytes"));

    g_autofree char *o2 = NULL, *e2 = NULL;
    CU_ASSERT_EQUAL(run(&o2, &e2, "inspect", REAL_TRACE, NULL, NULL), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(o2, "nodes: 3664\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(o2, "COMM_COLL_NODE  21\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(o2, "ids: 216..7022"));
    CU_ASSERT_PTR_NOT_NULL(strstr(o2, "0 data_deps, 1277 ctrl_deps"));
    CU_ASSERT_PTR_NOT_NULL(strstr(o2, "duration_micros: 381795 total"));
    CU_ASSERT_PTR_NOT_NULL(strstr(o2, "is_cpu_op:bool_val"));

    /* A collective vector: comm types counted by name (4 distinct, README table). */
    g_autofree char *o3 = NULL, *e3 = NULL;
    CU_ASSERT_EQUAL(
        run(&o3, &e3, "inspect", "--json", CHAKRA "/vectors/collectives/collectives.0.et", NULL),
        0);
    g_autoptr(JsonParser) c = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(c, o3, -1, NULL));
    JsonObject *ct =
        json_object_get_object_member(json_node_get_object(json_parser_get_root(c)), "comm_types");
    CU_ASSERT(ct && json_object_get_size(ct) == 4);
    CU_ASSERT(ct && json_object_get_int_member(ct, "ALL_REDUCE") == 1 &&
              json_object_get_int_member(ct, "ALL_GATHER") == 1 &&
              json_object_get_int_member(ct, "REDUCE_SCATTER") == 1 &&
              json_object_get_int_member(ct, "ALL_TO_ALL") == 1);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"convert re-encodes .et/.et.gz/.json", test_convert_reencode},
        {"convert the real trace with one warning", test_convert_real_trace},
        {"convert/inspect errors leave no output", test_convert_errors},
        {"inspect matches the real trace's summary", test_inspect},
        {NULL, NULL},
    };
    sv_test_add_suite("proto-cli", cases);
    return sv_test_run();
}
