/* Tests for the JSON-lines readers' scanner (workloads/json_tape.c): strict RFC 8259 syntax with
 * messages that name the column, exact integers (no wrap-around past int64), escapes, the field
 * errors of malformed token arrays, huge numbers and wrong types, and a differential check against
 * json-glib as an independent oracle on generated lines (valid ones must read the same; mutated
 * ones the scanner accepts must read the same in json-glib). */
#include "tests/test_util.h"
#include "workloads/workloads.h"
#include "workloads/workloads_internal.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static char *write_tmp(const char *dir, const char *name, const char *text)
{
    char *p = g_build_filename(dir, name, NULL);
    CU_ASSERT_FATAL(g_file_set_contents(p, text, -1, NULL));
    return p;
}

/* ---- the scanner alone ------------------------------------------------------------------- */

static gboolean tape_ok(struct sv_wl_tape *tp, const char *s)
{
    return sv_wl__tape_parse(tp, s, strlen(s));
}

/* The scan of `s` fails and its message contains `expect`. */
static void tape_bad(const char *s, const char *expect)
{
    struct sv_wl_tape tp = {0};
    gboolean ok = tape_ok(&tp, s);
    CU_ASSERT_FALSE(ok);
    if (ok || !strstr(tp.err, expect))
        fprintf(stderr, "\n%s: '%s' lacks '%s'\n", s, ok ? "(accepted)" : tp.err, expect);
    CU_ASSERT_PTR_NOT_NULL(strstr(tp.err, expect));
    sv_wl__tape_clear(&tp);
}

static void test_tape_layout(void)
{
    struct sv_wl_tape tp = {0};
    /* tokens: 0 {, 1 "a", 2 [, 3 1, 4 {, 5 "b", 6 null, 7 -2, 8 "c", 9 "x\ny" */
    CU_ASSERT_FATAL(tape_ok(&tp, " {\"a\": [1, {\"b\": null}, -2], \"c\": \"x\\ny\"}\t"));
    SV_ASSERT_EQ_I64(tp.n, 10);
    CU_ASSERT_EQUAL(tp.tok[0].type, SV_WL_JT_OBJECT);
    SV_ASSERT_EQ_I64(tp.tok[0].v.n, 2);
    SV_ASSERT_EQ_I64(tp.tok[0].next, 10);
    CU_ASSERT_EQUAL(tp.tok[2].type, SV_WL_JT_ARRAY);
    SV_ASSERT_EQ_I64(tp.tok[2].v.n, 3);
    SV_ASSERT_EQ_I64(tp.tok[2].next, 8); /* past the nested object */
    SV_ASSERT_EQ_I64(tp.tok[4].next, 7);
    CU_ASSERT_EQUAL(tp.tok[6].type, SV_WL_JT_NULL);
    SV_ASSERT_EQ_I64(tp.tok[7].v.i, -2);
    SV_ASSERT_EQ_I64(sv_wl__tape_member(&tp, 0, "a"), 2);
    SV_ASSERT_EQ_I64(sv_wl__tape_member(&tp, 0, "c"), 9);
    SV_ASSERT_EQ_I64(sv_wl__tape_member(&tp, 0, "b"), 0); /* not a member of the root */
    SV_ASSERT_EQ_I64(sv_wl__tape_member(&tp, 4, "b"), 6);
    g_autofree char *c = sv_wl__tape_strdup(&tp, 9);
    CU_ASSERT_STRING_EQUAL(c, "x\ny");

    /* the last of repeated keys wins, as json-glib's objects did */
    CU_ASSERT_FATAL(tape_ok(&tp, "{\"k\": 1, \"j\": 2, \"k\": 3}"));
    SV_ASSERT_EQ_I64(tp.tok[sv_wl__tape_member(&tp, 0, "k")].v.i, 3);

    /* escapes in keys and strings: \u0041 = A, \u00e9 = é (2 UTF-8 bytes), a surrogate pair for
     * U+1F600 (4 bytes), \/ \" \\ \b \f \r \t */
    CU_ASSERT_FATAL(
        tape_ok(&tp, "{\"\\u0041b\": \"\\u00e9\\ud83d\\ude00\\/\\\"\\\\\\b\\f\\r\\t\"}"));
    uint32_t v = sv_wl__tape_member(&tp, 0, "Ab");
    CU_ASSERT_EQUAL_FATAL(v, 2);
    g_autofree char *s = sv_wl__tape_strdup(&tp, v);
    CU_ASSERT_STRING_EQUAL(s, "\xc3\xa9\xf0\x9f\x98\x80/\"\\\b\f\r\t");

    /* integers: exact to the ends of int64; past them BIGINT with the text kept */
    CU_ASSERT_FATAL(tape_ok(&tp, "[9223372036854775807, -9223372036854775808, "
                                 "9223372036854775808, -9223372036854775809, "
                                 "18446744073709551616, -0, 0, 1.5, 1e3, 2E-1, -0.0]"));
    CU_ASSERT_EQUAL(tp.tok[1].type, SV_WL_JT_INT);
    CU_ASSERT(tp.tok[1].v.i == INT64_MAX);
    CU_ASSERT(tp.tok[2].v.i == INT64_MIN);
    for (int i = 3; i <= 5; i++)
        CU_ASSERT_EQUAL(tp.tok[i].type, SV_WL_JT_BIGINT);
    SV_ASSERT_EQ_I64(tp.tok[5].len, 20);
    CU_ASSERT_NSTRING_EQUAL(tp.line + tp.tok[5].off, "18446744073709551616", 20);
    CU_ASSERT(tp.tok[6].type == SV_WL_JT_INT && tp.tok[6].v.i == 0);
    CU_ASSERT(tp.tok[8].type == SV_WL_JT_DOUBLE && tp.tok[8].v.d == 1.5);
    CU_ASSERT(tp.tok[9].type == SV_WL_JT_DOUBLE && tp.tok[9].v.d == 1000.0);
    CU_ASSERT(tp.tok[10].type == SV_WL_JT_DOUBLE && tp.tok[10].v.d == 0.2);
    /* 18 digits (the plain-id path's limit), 19 (the general scan), and a plain prefix that
     * turns out to be a double */
    struct sv_wl_tape t2 = {0};
    CU_ASSERT_FATAL(
        tape_ok(&t2, "{\"a\": 123456789012345678, \"b\": 1234567890123456789, \"c\": 12e1}"));
    CU_ASSERT(t2.tok[2].type == SV_WL_JT_INT && t2.tok[2].v.i == 123456789012345678);
    CU_ASSERT(t2.tok[4].type == SV_WL_JT_INT && t2.tok[4].v.i == 1234567890123456789);
    CU_ASSERT(t2.tok[6].type == SV_WL_JT_DOUBLE && t2.tok[6].v.d == 120.0);
    sv_wl__tape_clear(&t2);
    int64_t iv = -1;
    CU_ASSERT(sv_wl__tape_int(&tp.tok[9], &iv) && iv == 1000); /* integral double */
    CU_ASSERT_FALSE(sv_wl__tape_int(&tp.tok[8], &iv));
    CU_ASSERT_FALSE(sv_wl__tape_int(&tp.tok[3], &iv));
    CU_ASSERT(sv_wl__tape_int(&tp.tok[11], &iv) && iv == 0);
    sv_wl__tape_clear(&tp);
}

static void test_tape_strict(void)
{
    /* json-glib accepted every one of these (it is a GScanner underneath) */
    tape_bad("{\"a\": 01}", "column 8: unexpected '1', expected ',' or '}'");
    tape_bad("{\"a\": 0x10}", "column 8: unexpected 'x'");
    tape_bad("{\"a\": $1a}", "column 7: unexpected '$', expected a value"); /* 26 to json-glib */
    tape_bad("{'a': 1}", "column 2: unexpected ''', expected a string key or '}'");
    tape_bad("/*c*/{\"a\": 1}", "column 1: unexpected '/', expected a value");
    tape_bad("{\"a\": 1} {}", "column 10: unexpected '{' after the value");
    tape_bad("{\"a\": .5}", "column 7: unexpected '.', expected a value");
    tape_bad("{\"a\": 1.}", "column 7: invalid number (a digit must follow '.')");
    tape_bad("{\"a\": 1e}", "invalid number (a digit must follow the exponent)");
    tape_bad("{\"a\": -}", "column 7: invalid number");
    tape_bad("{\"a\": +1}", "unexpected '+', expected a value");
    tape_bad("{\"a\": \"x\ty\"}", "column 9: control character (byte 0x09) in a string");
    /* and these it rejected too */
    tape_bad("{\"a\": 1,}", "column 9: unexpected '}', expected a string key");
    tape_bad("[1, 2,]", "column 7: unexpected ']', expected a value");
    tape_bad("[1 2]", "column 4: unexpected '2', expected ',' or ']'");
    tape_bad("{\"a\" 1}", "column 6: unexpected '1', expected ':'");
    tape_bad("{\"a\": [1, 2", "column 12: unexpected end of line, expected ',' or ']'");
    tape_bad("{\"a\": \"abc", "column 7: unterminated string");
    tape_bad("{\"a\": \"\\x\"}", "column 8: invalid escape in a string");
    tape_bad("{\"a\": \"\\u12g4\"}", "invalid \\u escape (4 hex digits expected)");
    tape_bad("{\"a\": \"\\udc00\"}", "a low surrogate without a high one");
    tape_bad("{\"a\": \"\\ud800x\"}", "a high surrogate without a low one");
    tape_bad("{\"a\": \"\\u0000\"}", "\\u0000 is not allowed in a string");
    tape_bad("{\"a\": \"\xc3\x28\"}", "column 7: invalid UTF-8 in a string");
    tape_bad("{\"a\": tru}", "unexpected 't', expected a value");
    tape_bad("{\"a\": truex}", "unexpected 't', expected a value");
    tape_bad("{\"a\": NaN}", "unexpected 'N', expected a value");
    tape_bad("{\"a\": \x01}", "unexpected byte 0x01, expected a value");
    tape_bad("{} \xef\xbb\xbf", "column 4: unexpected byte 0xef after the value");
    struct sv_wl_tape tp = {0};
    CU_ASSERT(tape_ok(&tp, "\xef\xbb\xbf {}")); /* a byte-order mark first is skipped */
    sv_wl__tape_clear(&tp);
    /* nesting is bounded (the scanner recurses) */
    GString *deep = g_string_new(NULL);
    for (int i = 0; i < 600; i++)
        g_string_append_c(deep, '[');
    tape_bad(deep->str, "column 513: nesting deeper than 512 levels");
    g_string_free(deep, TRUE);
}

/* ---- field errors through the reader ------------------------------------------------------- */

/* The one line `line` (with `name`'s format) fails with BAD_LINE "<path>:1: <expect>". */
static void line_bad(const char *name, const char *line, const char *expect)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *text = g_strdup_printf("%s\n", line);
    g_autofree char *p = write_tmp(dir, name, text);
    g_autoptr(GError) err = NULL;
    sv_wl_source *src = sv_wl_open(p, NULL, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(src);
    sv_wl_item it = SV_WL_ITEM_INIT;
    CU_ASSERT_EQUAL(sv_wl_next(src, &it, &err), -1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT(g_error_matches(err, SV_WL_ERROR, SV_WL_ERROR_BAD_LINE));
    g_autofree char *full = g_strdup_printf("%s:1: %s", p, expect);
    if (strcmp(err->message, full))
        fprintf(stderr, "\nmessage '%s' is not '%s'\n", err->message, full);
    CU_ASSERT_STRING_EQUAL(err->message, full);
    sv_wl_item_clear(&it);
    sv_wl_source_free(src);
    sv_test_rmtree(dir);
}

#define REQ "\"arrival_time_ns\": 5, \"input_toks\": 4, \"output_toks\": 2"
#define MC "\"timestamp\": 5, \"input_length\": 4, \"output_length\": 2"

static void test_field_errors(void)
{
    /* malformed token arrays */
    line_bad("a.jsonl", "{" REQ ", \"input_tok_ids\": [1, 2,]}",
             "bad JSON: column 82: unexpected ']', expected a value");
    line_bad("a.jsonl", "{" REQ ", \"input_tok_ids\": [1 2]}",
             "bad JSON: column 79: unexpected '2', expected ',' or ']'");
    line_bad("a.jsonl", "{" REQ ", \"input_tok_ids\": [1, 2",
             "bad JSON: column 81: unexpected end of line, expected ',' or ']'");
    line_bad("a.jsonl", "{" REQ ", \"input_tok_ids\": [1, \"2\"]}",
             "field 'input_tok_ids[1]' must be an integer, not a string");
    line_bad("a.jsonl", "{" REQ ", \"output_tok_ids\": [1, [2]]}",
             "field 'output_tok_ids[1]' must be an integer, not an array");
    line_bad("a.jsonl", "{" REQ ", \"input_tok_ids\": [0, 2.5]}",
             "field 'input_tok_ids[1]' must be an integer, not a fractional number");
    line_bad("a.jsonl", "{" REQ ", \"input_tok_ids\": [null]}",
             "field 'input_tok_ids[0]' must be an integer, not null");
    line_bad("a.jsonl", "{" REQ ", \"input_tok_ids\": 7}",
             "field 'input_tok_ids' must be an array of integers, not a number");
    line_bad("a.jsonl", "{" REQ ", \"input_tok_ids\": {\"0\": 1}}",
             "field 'input_tok_ids' must be an array of integers, not an object");
    line_bad("a.jsonl", "{" REQ ", \"input_tok_ids\": [4294967295, 4294967296]}",
             "field 'input_tok_ids[1]' is 4294967296, out of range [0, 4294967295]");
    /* huge numbers: named as written (json-glib read 2^64 as -1 and 2^63 as -2^63) */
    line_bad("a.jsonl", "{" REQ ", \"input_tok_ids\": [18446744073709551616]}",
             "field 'input_tok_ids[0]' is 18446744073709551616, out of range [0, 4294967295]");
    line_bad("a.jsonl", "{\"arrival_time_ns\": 5, \"input_toks\": 99999999999999999999}",
             "field 'input_toks' is 99999999999999999999, more than 9223372036854775807");
    line_bad("a.jsonl", "{\"arrival_time_ns\": -9223372036854775809, \"input_toks\": 1}",
             "field 'arrival_time_ns' is -9223372036854775809, must be >= 0");
    line_bad("a.jsonl", "{" REQ ", \"output_toks\": 1e30}",
             "field 'output_toks' must be an integer, not a fractional number");
    line_bad("m.jsonl", "{\"timestamp\": 18446744073709551616, \"input_length\": 1}",
             "field 'timestamp' is 18446744073709551616 ms, out of range");
    /* documented ranges (docs/workloads.md): arrivals within the engine's horizon, 2^58 ns, so
     * that no time derived from them wraps; token counts up to 2^24 */
    line_bad("m.jsonl", "{\"timestamp\": 9223372036854775807, \"input_length\": 1}",
             "field 'timestamp': 9223372036854775807 is above the maximum 288230376151 (range [0, "
             "288230376151] ms)");
    line_bad("m.jsonl", "{\"timestamp\": 288230376151.8, \"input_length\": 1}",
             "field 'timestamp': 288230376151.8 is above the maximum 288230376151 (range [0, "
             "288230376151] ms)");
    line_bad("a.jsonl", "{\"arrival_time_ns\": 9223372036854775807, \"input_toks\": 1}",
             "field 'arrival_time_ns': 9223372036854775807 is above the maximum "
             "288230376151711744 (range [0, 288230376151711744] ns)");
    line_bad("a.jsonl", "{\"arrival_time_ns\": 288230376151711745, \"input_toks\": 1}",
             "field 'arrival_time_ns': 288230376151711745 is above the maximum "
             "288230376151711744 (range [0, 288230376151711744] ns)");
    line_bad("a.jsonl", "{\"arrival_time_ns\": 1, \"input_toks\": 16777217}",
             "field 'input_toks': 16777217 is above the maximum 16777216 (range [1, 16777216] "
             "tokens)");
    line_bad("a.jsonl",
             "{\"arrival_time_ns\": 1, \"sub_requests\": [{\"input_toks\": 1, \"output_toks\": 1, "
             "\"tool_duration_ns\": 9223372036854775807}]}",
             "field 'sub_requests[0].tool_duration_ns': 9223372036854775807 is above the maximum "
             "288230376151711744 (range [0, 288230376151711744] ns)");
    line_bad("m.jsonl", "{\"timestamp\": 1e400, \"input_length\": 1}",
             "field 'timestamp' is inf ms, must be >= 0");
    line_bad("m.jsonl", "{" MC ", \"hash_ids\": [1, 9223372036854775808]}",
             "field 'hash_ids[1]' is 9223372036854775808, out of range [0, 9223372036854775807]");
    line_bad("m.jsonl", "{" MC ", \"hash_ids\": [1, -1]}",
             "field 'hash_ids[1]' is -1, out of range [0, 9223372036854775807]");
    /* wrong types */
    line_bad("a.jsonl", "{\"arrival_time_ns\": true}",
             "field 'arrival_time_ns' must be an integer, not a boolean");
    line_bad("a.jsonl", "{\"arrival_time_ns\": 1, \"input_toks\": null}",
             "field 'input_toks' must be an integer, not null");
    line_bad("a.jsonl", "{\"arrival_time_ns\": 1, \"input_toks\": {}}",
             "field 'input_toks' must be an integer, not an object");
    line_bad("a.jsonl", "{" REQ ", \"model\": 5}", "field 'model' must be a string, not a number");
    line_bad("a.jsonl", "{\"arrival_time_ns\": 1, \"session_id\": [\"s\"]}",
             "field 'session_id' must be a string, not an array");
    line_bad("a.jsonl", "{\"arrival_time_ns\": 1, \"sub_requests\": {}}",
             "field 'sub_requests' must be an array, not an object");
    line_bad("a.jsonl",
             "{\"arrival_time_ns\": 1, \"sub_requests\": [{\"input_toks\": 1, "
             "\"output_toks\": 1}, 3]}",
             "field 'sub_requests[1]' must be an object, not a number");
    line_bad("a.jsonl",
             "{\"arrival_time_ns\": 1, \"sub_requests\": [{\"input_toks\": 1, \"output_toks\": 1, "
             "\"output_tok_ids\": [1, \"x\"]}]}",
             "field 'sub_requests[0].output_tok_ids[1]' must be an integer, not a string");
    line_bad("m.jsonl", "{\"timestamp\": \"5\", \"input_length\": 1}",
             "field 'timestamp' must be a number, not a string");
    line_bad("a.jsonl", "\"text\"", "expected a JSON object, got a string");
    line_bad("a.jsonl", "17", "expected a JSON object, got a number");
    /* a syntax error anywhere wins over field errors, as json-glib parsed the whole line first */
    line_bad("a.jsonl", "{\"arrival_time_ns\": -1, \"x\": [}",
             "bad JSON: column 31: unexpected '}', expected a value");
    /* field errors come in a fixed order, whatever the order of the keys */
    line_bad("a.jsonl", "{\"output_toks\": 0, \"input_toks\": 0, \"arrival_time_ns\": 1}",
             "field 'input_toks' is 0, must be >= 1");
}

static void test_values_read(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *p = write_tmp(
        dir, "v.jsonl",
        /* escapes decoded, keys with escapes matched, unknown members of every kind skipped,
         * repeated keys: the last wins, integral doubles read as integers */
        "{\"x\": {\"y\": [1, {\"z\": null}], \"w\": \"}\"}, \"arrival_time_ns\": 1.0e1, "
        "\"in\\u0070ut_toks\": 3, \"output_toks\": 1, \"output_toks\": 2, \"model\": "
        "\"m\\u00e9\\\"\", \"input_tok_ids\": [ 0 ,4294967295,\t7 ], \"t\": true, \"f\": false}\n"
        "\r\n"
        "  {\"arrival_time_ns\": 288230376151711744, \"input_toks\": 16777216, "
        "\"output_toks\": 1, \"input_tok_ids\": []}  \r\n");
    g_autoptr(GError) err = NULL;
    sv_wl_source *src = sv_wl_open(p, NULL, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(src);
    sv_wl_item it = SV_WL_ITEM_INIT;
    CU_ASSERT_EQUAL_FATAL(sv_wl_next(src, &it, &err), 1);
    SV_ASSERT_EQ_I64(it.arrival_ns, 10);
    SV_ASSERT_EQ_I64(it.reqs[0].input_tokens, 3);
    SV_ASSERT_EQ_I64(it.reqs[0].output_tokens, 2);
    CU_ASSERT_STRING_EQUAL(it.model, "m\xc3\xa9\"");
    CU_ASSERT_EQUAL_FATAL(it.reqs[0].n_input_tok_ids, 3);
    CU_ASSERT(it.reqs[0].input_tok_ids[1] == UINT32_MAX);
    SV_ASSERT_EQ_I64(it.reqs[0].input_tok_ids[2], 7);
    CU_ASSERT_PTR_NULL(it.reqs[0].output_tok_ids);
    CU_ASSERT_EQUAL_FATAL(sv_wl_next(src, &it, &err), 1);
    SV_ASSERT_EQ_I64(it.line, 3);
    /* the top of each range is accepted: the horizon and 2^24 tokens */
    CU_ASSERT(it.arrival_ns == SV_ENGINE_HORIZON);
    CU_ASSERT(it.reqs[0].input_tokens == SV_RANGE_TOKENS_MAX);
    SV_ASSERT_EQ_I64(it.reqs[0].n_input_tok_ids, 0);
    CU_ASSERT_EQUAL(sv_wl_next(src, &it, &err), 0);
    sv_wl_item_clear(&it);
    sv_wl_source_free(src);
    sv_test_rmtree(dir);
}

/* ---- differential check against json-glib -------------------------------------------------- */

/* A random JSON value for an unknown member (depth-limited), in any legal spelling. */
static void rand_value(GRand *r, GString *s, int depth)
{
    static const char *const ws[] = {"", " ", "\t", "  ", " \t "};
    int k = g_rand_int_range(r, 0, depth > 2 ? 5 : 7);
    switch (k) {
    case 0: {
        int64_t v = g_rand_int(r);
        g_string_append_printf(s, "%" G_GINT64_FORMAT, g_rand_boolean(r) ? v : -v);
        break;
    }
    case 1:
        /* one draw per statement: argument evaluation order is unspecified in C */
        int a = g_rand_int_range(r, -99, 99);
        int b = g_rand_int_range(r, 0, 999);
        const char *sign = g_rand_boolean(r) ? "-" : "+";
        g_string_append_printf(s, "%d.%de%s%d", a, b, sign, g_rand_int_range(r, 0, 30));
        break;
    case 2:
        g_string_append(s, g_rand_boolean(r) ? "\"a\\u00e9\\\\ \\/ \\ud834\\udd1e\"" : "\"\"");
        break;
    case 3:
        g_string_append(s, g_rand_boolean(r) ? "true" : g_rand_boolean(r) ? "false" : "null");
        break;
    case 4:
        g_string_append(s, "\"\xe2\x82\xac}]\\\"{\"");
        break;
    case 5:
    case 6: {
        gboolean obj = k == 5;
        int n = g_rand_int_range(r, 0, 4);
        g_string_append_c(s, obj ? '{' : '[');
        for (int i = 0; i < n; i++) {
            g_string_append(s, ws[g_rand_int_range(r, 0, 5)]);
            if (obj)
                g_string_append_printf(s, "\"k%d\"%s:", i, ws[g_rand_int_range(r, 0, 5)]);
            rand_value(r, s, depth + 1);
            g_string_append(s, ws[g_rand_int_range(r, 0, 5)]);
            if (i + 1 < n)
                g_string_append_c(s, ',');
        }
        g_string_append_c(s, obj ? '}' : ']');
        break;
    }
    }
}

static void rand_ids(GRand *r, GString *s)
{
    int n = g_rand_int_range(r, 0, 40);
    g_string_append_c(s, '[');
    for (int i = 0; i < n; i++) {
        const char *sep = i ? (g_rand_boolean(r) ? ", " : ",") : "";
        guint32 v = g_rand_int(r);
        g_string_append_printf(s, "%s%u", sep, v >> g_rand_int_range(r, 0, 32));
    }
    g_string_append_c(s, ']');
}

/* One random valid LLMServingSim line with arrival `arr`: members in random order, unknown
 * members, sometimes a repeated key, sometimes a session. */
static char *rand_line(GRand *r, int64_t arr)
{
    GString *m[12];
    int n = 0;
    m[n] = g_string_new(NULL);
    g_string_append_printf(m[n++], "\"arrival_time_ns\": %" G_GINT64_FORMAT, arr);
    if (g_rand_boolean(r)) {
        m[n] = g_string_new("\"model\": \"llama\\u002d3 \\\"x\\\"\"");
        n++;
    }
    gboolean session = g_rand_int_range(r, 0, 4) == 0;
    if (session) {
        m[n] = g_string_new("\"sub_requests\": [");
        int ns = g_rand_int_range(r, 1, 4);
        for (int i = 0; i < ns; i++) {
            int ot = g_rand_int_range(r, 1, 100), it = g_rand_int_range(r, 1, 100);
            g_string_append_printf(m[n], "%s{\"output_toks\": %d, \"input_toks\": %d", i ? "," : "",
                                   ot, it);
            if (g_rand_boolean(r))
                g_string_append_printf(m[n], ", \"tool_duration_ns\": %d",
                                       g_rand_int_range(r, 0, 9));
            if (g_rand_boolean(r)) {
                g_string_append(m[n], ", \"input_tok_ids\": ");
                rand_ids(r, m[n]);
            }
            g_string_append_c(m[n], '}');
        }
        g_string_append_c(m[n++], ']');
        m[n] = g_string_new("\"session_id\": \"s\\u00e9\"");
        n++;
    } else {
        m[n] = g_string_new(NULL);
        g_string_append_printf(m[n++], "\"input_toks\": %d", g_rand_int_range(r, 1, 5000));
        m[n] = g_string_new(NULL);
        /* an integral double is an integer too */
        gboolean dbl = g_rand_boolean(r);
        g_string_append_printf(m[n++], "\"output_toks\": %d%s", g_rand_int_range(r, 1, 5000),
                               dbl ? ".0" : "");
        m[n] = g_string_new("\"input_tok_ids\": ");
        rand_ids(r, m[n++]);
        if (g_rand_boolean(r)) {
            m[n] = g_string_new("\"output_tok_ids\": ");
            rand_ids(r, m[n++]);
        }
        if (g_rand_boolean(r)) {
            m[n] = g_string_new(NULL);
            g_string_append_printf(m[n++], "\"input_toks\": %d", g_rand_int_range(r, 1, 50));
        }
    }
    for (int u = g_rand_int_range(r, 0, 3); u > 0; u--) {
        m[n] = g_string_new(NULL);
        g_string_append_printf(m[n], "\"extra%d\": ", u);
        rand_value(r, m[n++], 0);
    }
    for (int i = n - 1; i > 0; i--) { /* shuffle */
        int j = g_rand_int_range(r, 0, i + 1);
        GString *t = m[i];
        m[i] = m[j];
        m[j] = t;
    }
    GString *line = g_string_new("{");
    for (int i = 0; i < n; i++) {
        g_string_append_printf(line, "%s%s", i ? (g_rand_boolean(r) ? ", " : ",") : "", m[i]->str);
        g_string_free(m[i], TRUE);
    }
    g_string_append_c(line, '}');
    return g_string_free(line, FALSE);
}

static int64_t oracle_int(JsonObject *o, const char *key, int64_t dflt)
{
    JsonNode *n = json_object_get_member(o, key);
    int64_t v = dflt;
    if (n)
        CU_ASSERT_FATAL(sv_cfg_node_int(n, &v));
    return v;
}

static void oracle_ids(JsonObject *o, const char *key, const uint32_t *ids, size_t n_ids)
{
    JsonNode *n = json_object_get_member(o, key);
    JsonArray *a = n ? json_node_get_array(n) : NULL;
    size_t len = a ? json_array_get_length(a) : 0;
    CU_ASSERT_EQUAL_FATAL(n_ids, len);
    for (size_t i = 0; i < len; i++)
        CU_ASSERT_EQUAL_FATAL(ids[i], (uint32_t)json_array_get_int_element(a, (guint)i));
}

static void oracle_call(JsonObject *o, const sv_wl_req *q)
{
    SV_ASSERT_EQ_I64(q->input_tokens, oracle_int(o, "input_toks", -1));
    SV_ASSERT_EQ_I64(q->output_tokens, oracle_int(o, "output_toks", -1));
    SV_ASSERT_EQ_I64(q->tool_duration_ns, oracle_int(o, "tool_duration_ns", 0));
    oracle_ids(o, "input_tok_ids", q->input_tok_ids, q->n_input_tok_ids);
    oracle_ids(o, "output_tok_ids", q->output_tok_ids, q->n_output_tok_ids);
}

/* json-glib's reading of `line` equals the item the reader made of it. */
static void oracle_check(JsonParser *jp, const char *line, const sv_wl_item *it)
{
    GError *e = NULL;
    gboolean ok = json_parser_load_from_data(jp, line, -1, &e);
    if (!ok)
        fprintf(stderr, "\njson-glib rejects a line the reader took: %s\n%s\n", e->message, line);
    g_clear_error(&e);
    CU_ASSERT_FATAL(ok);
    JsonObject *o = json_node_get_object(json_parser_get_root(jp));
    SV_ASSERT_EQ_I64(it->arrival_ns, oracle_int(o, "arrival_time_ns", -1));
    const char *model = json_object_get_string_member_with_default(o, "model", NULL);
    CU_ASSERT((model == NULL) == (it->model == NULL));
    if (model && it->model)
        CU_ASSERT_STRING_EQUAL(model, it->model);
    JsonNode *subs = json_object_get_member(o, "sub_requests");
    if (!subs) {
        CU_ASSERT_EQUAL_FATAL(it->n_reqs, 1);
        oracle_call(o, &it->reqs[0]);
        return;
    }
    JsonArray *a = json_node_get_array(subs);
    CU_ASSERT_EQUAL_FATAL(it->n_reqs, json_array_get_length(a));
    for (guint i = 0; i < it->n_reqs; i++)
        oracle_call(json_array_get_object_element(a, i), &it->reqs[i]);
    const char *sid = json_object_get_string_member_with_default(o, "session_id", NULL);
    if (sid)
        CU_ASSERT_STRING_EQUAL(sid, it->session_id);
}

static void test_differential(void)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(20251201);
    g_autoptr(JsonParser) jp = json_parser_new();
    g_autofree char *dir = sv_test_tmpdir();
    /* 2,000 valid lines in one file: every one read, each as json-glib reads it */
    enum { N = 2000 };
    char **lines = g_new0(char *, N + 1);
    for (int i = 0; i < N; i++)
        lines[i] = rand_line(r, (int64_t)i * 1000);
    g_autofree char *joined = g_strjoinv("\n", lines);
    g_autofree char *p = write_tmp(dir, "d.jsonl", joined);
    g_autoptr(GError) err = NULL;
    sv_wl_source *src = sv_wl_open(p, NULL, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(src);
    sv_wl_item it = SV_WL_ITEM_INIT;
    int i = 0, rc;
    while ((rc = sv_wl_next(src, &it, &err)) == 1) {
        CU_ASSERT_EQUAL_FATAL(it.line, (uint64_t)i + 1);
        oracle_check(jp, lines[i], &it);
        i++;
    }
    if (rc < 0)
        fprintf(stderr, "\n%s\n", err->message);
    CU_ASSERT_EQUAL(rc, 0);
    SV_ASSERT_EQ_I64(i, N);
    sv_wl_source_free(src);

    /* mutated lines (a byte deleted, inserted or changed): the reader either rejects the line
     * with a BAD_LINE error naming it, or reads it as json-glib does */
    static const char alphabet[] = "{}[],:\"\\0123456789-+.eEu \tx\x01\xc3";
    int accepted = 0;
    GString *m = g_string_new(NULL);
    for (int k = 0; k < 3000; k++) {
        g_string_assign(m, lines[k % N]);
        int edits = g_rand_int_range(r, 1, 3);
        for (int e = 0; e < edits; e++) {
            guint at = (guint)g_rand_int_range(r, 0, (gint32)m->len);
            char c = alphabet[g_rand_int_range(r, 0, (gint32)sizeof alphabet - 1)];
            switch (g_rand_int_range(r, 0, 3)) {
            case 0:
                g_string_erase(m, at, 1);
                break;
            case 1:
                g_string_insert_c(m, at, c);
                break;
            default:
                m->str[at] = c;
            }
        }
        if (!m->len || strchr(m->str, '\n') || strchr(m->str, '\r'))
            continue;
        g_autofree char *q = write_tmp(dir, "m.jsonl", m->str);
        g_autoptr(GError) e2 = NULL;
        src = sv_wl_open(q, &(struct sv_wl_open_opts){.format = SV_WL_FORMAT_LLMSERVINGSIM}, &e2);
        CU_ASSERT_PTR_NOT_NULL_FATAL(src);
        rc = sv_wl_next(src, &it, &e2);
        if (rc == 1) {
            accepted++;
            oracle_check(jp, m->str, &it);
        } else if (rc < 0) {
            CU_ASSERT(g_error_matches(e2, SV_WL_ERROR, SV_WL_ERROR_BAD_LINE));
            g_autofree char *prefix = g_strdup_printf("%s:1: ", q);
            CU_ASSERT(g_str_has_prefix(e2->message, prefix));
        }
        sv_wl_source_free(src);
    }
    /* enough of both outcomes to mean something (961 of 3,000 are accepted with this seed) */
    CU_ASSERT(accepted > 300 && accepted < 2700);
    g_string_free(m, TRUE);
    sv_wl_item_clear(&it);
    g_strfreev(lines);
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"tape layout, escapes, exact integers", test_tape_layout},
        {"strict syntax with columns", test_tape_strict},
        {"field errors: token arrays, huge numbers, types", test_field_errors},
        {"values read", test_values_read},
        {"differential vs json-glib", test_differential},
        {NULL, NULL},
    };
    sv_test_add_suite("jsonl", cases);
    return sv_test_run();
}
