/* core's input rules (docs/reliability.md): documented numeric ranges, decimal-only numbers as
 * text, and RFC 8259's grammar before json-glib reads a JSON text. Each expected verdict is the
 * grammar's or the range's, written out by hand. */
#include "core/core.h"
#include "tests/test_util.h"

#include <math.h>
#include <string.h>

static void expect_msg(GError *e, const char *part)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    if (!strstr(e->message, part))
        fprintf(stderr, "\n  got \"%s\", wanted \"%s\"\n", e->message, part);
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, part));
}

static void test_range_check(void)
{
    GError *e = NULL;
    CU_ASSERT_TRUE(sv_range_check_double("f: k", 1e-6, SV_RANGE_BW_GBPS, NULL));
    CU_ASSERT_TRUE(sv_range_check_double("f: k", 1e9, SV_RANGE_BW_GBPS, NULL));
    CU_ASSERT_FALSE(sv_range_check_double("f: link_bw", 1e-15, SV_RANGE_BW_GBPS, &e));
    expect_msg(e, "f: link_bw: 1e-15 is below the minimum 1e-06 (range [1e-06, 1e+09] GB/s)");
    g_clear_error(&e);
    CU_ASSERT_FALSE(sv_range_check_double("f: mem_size", 1e300, SV_RANGE_GIB_POS, &e));
    expect_msg(e, "f: mem_size: 1e+300 is above the maximum 1048576 (range (0, 1048576] GiB)");
    g_clear_error(&e);
    CU_ASSERT_FALSE(sv_range_check_double("f: mem_size", 0, SV_RANGE_GIB_POS, &e));
    expect_msg(e, "0 is not positive");
    g_clear_error(&e);
    CU_ASSERT_FALSE(sv_range_check_double("f: lat", -20, SV_RANGE_LATENCY_NS, &e));
    expect_msg(e, "f: lat: -20 is negative (range [0, 1e+12] ns)");
    g_clear_error(&e);
    CU_ASSERT_FALSE(sv_range_check_double("f: x", NAN, SV_RANGE_LATENCY_NS, &e));
    expect_msg(e, "is not a finite number");
    g_clear_error(&e);
    CU_ASSERT_FALSE(sv_range_check_double("f: x", INFINITY, SV_RANGE_LATENCY_NS, NULL));
    /* zero_ok: 0 means "not given"; anything else is in the range */
    CU_ASSERT_TRUE(sv_range_check_double("f: bw", 0, SV_RANGE_BW_GBPS_OR_0, NULL));
    CU_ASSERT_FALSE(sv_range_check_double("f: bw", 1e-300, SV_RANGE_BW_GBPS_OR_0, &e));
    expect_msg(e, "(range 0 or [1e-06, 1e+09] GB/s)");
    g_clear_error(&e);
    /* 2^32 as a 32-bit count would be 0: it is out of range, not narrowed */
    CU_ASSERT_FALSE(sv_range_check_int("f: pp_size", INT64_C(4294967296), SV_RANGE_DEVICES, &e));
    expect_msg(e, "f: pp_size: 4294967296 is above the maximum 65536 (range [1, 65536])");
    g_clear_error(&e);
    CU_ASSERT_FALSE(sv_range_check_int("f: n", 0, SV_RANGE_DEVICES, &e));
    expect_msg(e, "0 is below the minimum 1");
    g_clear_error(&e);
    CU_ASSERT_TRUE(sv_range_check_int("f: t", SV_ENGINE_HORIZON, SV_RANGE_TIME_NS, NULL));
    CU_ASSERT_FALSE(sv_range_check_int("f: t", INT64_MAX, SV_RANGE_TIME_NS, NULL));
    CU_ASSERT_FALSE(sv_range_check_int("f: t", -1, SV_RANGE_TIME_NS, NULL));
}

static void test_num_parse(void)
{
    int64_t i = 0;
    double d = 0;
    CU_ASSERT_TRUE(sv_num_parse_int("42", &i) && i == 42);
    CU_ASSERT_TRUE(sv_num_parse_int("-7", &i) && i == -7);
    CU_ASSERT_TRUE(sv_num_parse_int("+3", &i) && i == 3);
    CU_ASSERT_TRUE(sv_num_parse_int("9223372036854775807", &i) && i == INT64_MAX);
    static const char *const bad_int[] = {
        "",      " 1",          "1 ",  "0x1a", "$1a",
        "1e3",   "1.0",         "inf", "-",    "9223372036854775808",
        "1_000", "4294967297x", NULL};
    for (int k = 0; bad_int[k]; k++)
        CU_ASSERT_FALSE(sv_num_parse_int(bad_int[k], &i));
    CU_ASSERT_TRUE(sv_num_parse_double("1e-12", &d) && d == 1e-12);
    CU_ASSERT_TRUE(sv_num_parse_double(".5", &d) && d == 0.5);
    CU_ASSERT_TRUE(sv_num_parse_double("2.", &d) && d == 2.0);
    CU_ASSERT_TRUE(sv_num_parse_double("-3E+2", &d) && d == -300.0);
    static const char *const bad_dbl[] = {"",   "0x10", "inf",  "nan", "infinity", "1e999", ".",
                                          "e5", "1e",   "1.5f", " 1",  "1,5",      "$10",   NULL};
    for (int k = 0; bad_dbl[k]; k++)
        CU_ASSERT_FALSE(sv_num_parse_double(bad_dbl[k], &d));
}

/* RFC 8259 accepts these ... */
static const char *const json_ok[] = {"{}",
                                      "[]",
                                      "0",
                                      "-0",
                                      "1.5e-3",
                                      "-1.5E+3",
                                      "\"x\\u00e9\\n\"",
                                      "{\"a\": [1, 2.0, true, "
                                      "false, null]}",
                                      "\xef\xbb\xbf{\"bom\": 1}",
                                      "  {\"a\":\n 1}\n",
                                      "9223372036854775807",
                                      "-9223372036854775808",
                                      "1e308",
                                      NULL};
/* ... and rejects these, all of which json-glib 1.6 reads (the first eight as numbers it makes
 * up: 0x1a and $1a are 26, 0777 is 511, 99999999999999999999 is -1) */
static const struct {
    const char *text, *msg;
} json_bad[] = {
    {"{\"a\": 0x1a}", "1:7: not JSON (RFC 8259): '0x1a' is not a number"},
    {"{\"a\": $1a}", "1:7: not JSON (RFC 8259): '$1a' is not a value"},
    {"{\"a\": 0777}", "'0777' is not a number"},
    {"{\"a\": 00}", "'00' is not a number"},
    {"{\"a\": .5}", "'.5' is not a value"},
    {"{\"a\": 1.}", "'1.' is not a number"},
    {"{\"a\": 0b11}", "'0b11' is not a number"},
    {"{\"a\":\n 99999999999999999999}", "2:2: not JSON (RFC 8259): integer 99999999999999999999 is "
                                        "outside the 64-bit range"},
    {"{\"a\": 1e999}", "1e999 overflows a double"},
    {"{\"a\": 's'}", "strings are in double quotes"},
    {"{\"a\": 1 /* c */}", "JSON has no comments"},
    {"{\"a\": \"x\ty\"}", "a control character (0x09) in a string must be escaped"},
    {"{\"a\": \"\\x41\"}", "'\\x' is not a JSON escape"},
    {"{\"a\": 1}{}", "text after the value ('{')"},
    {"{\"a\": 1,}", "expected a member name in double quotes"},
    {"[1,]", "']' is not a value"},
    {"{a: 1}", "expected a member name in double quotes, not 'a'"},
    {"{\"a\": NaN}", "'NaN' is not a value"},
    {"{\"a\": -Infinity}", "'-Infinity' is not a number"},
    {"{\"a\": +1}", "'+1' is not a value"},
    {"{\"a\": tRue}", "'tRue' is not a value"},
    {"{\"a\": \"x", "unterminated string"},
    {"[1 2]", "expected ',' or ']', not '2'"},
    {NULL, NULL},
};

static void test_json_check(void)
{
    for (int k = 0; json_ok[k]; k++) {
        GError *e = NULL;
        gboolean ok = sv_cfg_json_check(json_ok[k], strlen(json_ok[k]), &e);
        if (!ok)
            fprintf(stderr, "\n  %s: %s\n", json_ok[k], e->message);
        CU_ASSERT_TRUE(ok);
        g_clear_error(&e);
    }
    for (int k = 0; json_bad[k].text; k++) {
        GError *e = NULL;
        CU_ASSERT_FALSE(sv_cfg_json_check(json_bad[k].text, strlen(json_bad[k].text), &e));
        if (e)
            expect_msg(e, json_bad[k].msg);
        else
            fprintf(stderr, "\n  accepted: %s\n", json_bad[k].text);
        g_clear_error(&e);
    }
    /* nesting is bounded, not a stack overflow */
    GString *deep = g_string_new(NULL);
    for (int k = 0; k < 100000; k++)
        g_string_append_c(deep, '[');
    GError *e = NULL;
    CU_ASSERT_FALSE(sv_cfg_json_check(deep->str, deep->len, &e));
    expect_msg(e, "nesting deeper than");
    g_clear_error(&e);
    g_string_free(deep, TRUE);
}

/* The one loader of JSON files applies the grammar and names the file, line and column. */
static void test_load_json_grammar(void)
{
    char *dir = sv_test_tmpdir();
    char *path = g_build_filename(dir, "c.json", NULL);
    g_file_set_contents(path, "{\"link_bw\": 16,\n \"link_latency\": 0x10}", -1, NULL);
    GError *e = NULL;
    JsonNode *n = sv_cfg_load_json(path, &e);
    CU_ASSERT_PTR_NULL(n);
    CU_ASSERT_TRUE(g_error_matches(e, SV_CORE_ERROR, SV_CORE_ERROR_PARSE));
    g_autofree char *want = g_strdup_printf("%s:2:18: not JSON (RFC 8259): '0x10'", path);
    expect_msg(e, want);
    g_clear_error(&e);
    g_file_set_contents(path, "{\"a\": 26}", -1, NULL);
    n = sv_cfg_load_json(path, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(n);
    int64_t v = 0;
    CU_ASSERT_TRUE(sv_cfg_get_int_range(json_node_get_object(n), "a", "c.json", TRUE, 0,
                                        SV_RANGE_I(1, 26, NULL), &v, NULL));
    CU_ASSERT_EQUAL(v, 26);
    CU_ASSERT_FALSE(sv_cfg_get_int_range(json_node_get_object(n), "a", "c.json", TRUE, 0,
                                         SV_RANGE_I(1, 25, NULL), &v, &e));
    expect_msg(e, "c.json.a: 26 is above the maximum 25");
    g_clear_error(&e);
    double d = 0;
    /* absent: the default, unchecked */
    CU_ASSERT_TRUE(sv_cfg_get_double_range(json_node_get_object(n), "b", "c.json", FALSE, -1,
                                           SV_RANGE_LATENCY_NS, &d, NULL));
    CU_ASSERT_EQUAL(d, -1);
    json_node_unref(n);
    sv_test_rmtree(dir);
    g_free(path);
    g_free(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"range checks and their messages", test_range_check},
        {"numbers as text: decimal only", test_num_parse},
        {"RFC 8259 grammar", test_json_check},
        {"JSON files: grammar and range getters", test_load_json_grammar},
        {NULL, NULL}};
    sv_test_add_suite("ranges", cases);
    return sv_test_run();
}
