/* proto module: Chakra ET reading/writing against the interop vectors in ../shared/interop
 * (decoded independently with Chakra's Python protobuf, see interop/chakra/README.md). */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <zlib.h>

#include "proto/proto.h"
#include "tests/proto/bytes_util.h"
#include "tests/test_util.h"

#define INTEROP SV_SHARED "/interop"
#define REAL_TRACE INTEROP "/chakra/real_trace/pytorch_resnet_like.0.et.gz"
#define REAL_SUMMARY INTEROP "/chakra/real_trace/pytorch_resnet_like.0.summary.json"

/* ---- helpers ------------------------------------------------------------------------------ */

static void collect_et(const char *dir, GPtrArray *out)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    if (!d)
        return;
    const char *name;
    while ((name = g_dir_read_name(d))) {
        char *p = g_build_filename(dir, name, NULL);
        if (g_file_test(p, G_FILE_TEST_IS_DIR)) {
            collect_et(p, out);
            g_free(p);
        } else if (g_str_has_suffix(name, ".et") || g_str_has_suffix(name, ".et.gz")) {
            g_ptr_array_add(out, p);
        } else {
            g_free(p);
        }
    }
    g_dir_close(d);
}

static int cmp_str(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static GPtrArray *all_et_files(void)
{
    GPtrArray *files = g_ptr_array_new_with_free_func(g_free);
    collect_et(INTEROP, files);
    g_ptr_array_sort(files, cmp_str);
    return files;
}

/* Protobuf varint, written here independently of the module's encoder. */
static void append_varint(GByteArray *b, uint64_t v)
{
    do {
        uint8_t c = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            c |= 0x80;
        g_byte_array_append(b, &c, 1);
    } while (v);
}

static char *write_tmp(const char *dir, const char *name, const void *data, size_t len)
{
    char *p = g_build_filename(dir, name, NULL);
    g_assert(g_file_set_contents(p, data, (gssize)len, NULL));
    return p;
}

static int count_dir_entries(const char *dir)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    int n = 0;
    while (d && g_dir_read_name(d))
        n++;
    if (d)
        g_dir_close(d);
    return n;
}

/* ---- round trip of every interop file ----------------------------------------------------- */

static void test_reencode_all(void)
{
    SV_REQUIRE_SHARED("interop/chakra", "the Chakra ET vectors");
    g_autoptr(GPtrArray) files = all_et_files();
    /* 120 ASTRA-sim example ETs plus chakra/ vectors, generator output and the real trace. */
    CU_ASSERT(files->len >= 150);
    g_autofree char *tmp = sv_test_tmpdir();
    uint64_t total_nodes = 0;
    for (guint f = 0; f < files->len; f++) {
        const char *path = files->pdata[f];
        g_autoptr(GByteArray) input = sv_test_read_decompressed(path);
        CU_ASSERT_PTR_NOT_NULL_FATAL(input);
        GError *err = NULL;
        sv_proto_reader *r = sv_proto_reader_open(path, &err);
        if (!r)
            fprintf(stderr, "\n%s: %s\n", path, err->message);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        g_autoptr(GByteArray) stream = g_byte_array_new();

        size_t len;
        const uint8_t *raw = sv_proto_reader_metadata_raw(r, &len);
        uint8_t *re = g_malloc(len + 1);
        size_t relen = chakra_proto_msg__global_metadata__pack(sv_proto_reader_metadata(r), re);
        CU_ASSERT(relen == len && memcmp(re, raw, len) == 0);
        append_varint(stream, relen);
        g_byte_array_append(stream, re, (guint)relen);
        g_free(re);

        gboolean frames_ok = TRUE;
        while (sv_proto_reader_next_raw(r, &raw, &len, &err)) {
            ChakraProtoMsg__Node *n = chakra_proto_msg__node__unpack(NULL, len, raw);
            CU_ASSERT_PTR_NOT_NULL_FATAL(n);
            re = g_malloc(len);
            relen = chakra_proto_msg__node__pack(n, re);
            if (relen != len || memcmp(re, raw, len) != 0)
                frames_ok = FALSE;
            append_varint(stream, relen);
            g_byte_array_append(stream, re, (guint)relen);
            g_free(re);
            sv_proto_node_free(n);
            total_nodes++;
        }
        CU_ASSERT_PTR_NULL(err);
        CU_ASSERT(frames_ok);
        CU_ASSERT(sv_proto_reader_bytes(r) == input->len);
        if (!sv_test_bytes_equal(stream, input))
            fprintf(stderr, "\nre-encode differs: %s\n", path);
        CU_ASSERT(sv_test_bytes_equal(stream, input));
        sv_proto_reader_close(r);

        /* Same through the decoding reader and the writer, keeping gzip by name. */
        g_autofree char *base = g_path_get_basename(path);
        g_autofree char *out = g_build_filename(tmp, base, NULL);
        r = sv_proto_reader_open(path, &err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        sv_proto_writer *w = sv_proto_writer_open(out, &err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(w);
        CU_ASSERT(sv_proto_writer_put_metadata(w, sv_proto_reader_metadata(r), &err));
        ChakraProtoMsg__Node *n;
        while (sv_proto_reader_next(r, &n, &err)) {
            CU_ASSERT(sv_proto_writer_put_node(w, n, &err));
            sv_proto_node_free(n);
        }
        CU_ASSERT_PTR_NULL(err);
        sv_proto_reader_close(r);
        CU_ASSERT(sv_proto_writer_close(w, &err));
        CU_ASSERT_PTR_NULL(err);
        g_autoptr(GByteArray) written = sv_test_read_decompressed(out);
        CU_ASSERT(sv_test_bytes_equal(written, input));
        g_remove(out);
    }
    /* Real trace alone has 3664 nodes. */
    CU_ASSERT(total_nodes > 3664);
    sv_test_rmtree(tmp);
}

/* ---- JSON against the Python-decoded expectations ----------------------------------------- */

static JsonNode *file_json_in_memory(const char *path)
{
    GError *err = NULL;
    g_autoptr(sv_proto_reader) r = sv_proto_reader_open(path, &err);
    if (!r)
        return NULL;
    JsonObject *o = json_object_new();
    json_object_set_member(o, "global_metadata",
                           sv_proto_metadata_to_json(sv_proto_reader_metadata(r)));
    JsonArray *nodes = json_array_new();
    ChakraProtoMsg__Node *n;
    while (sv_proto_reader_next(r, &n, &err)) {
        json_array_add_element(nodes, sv_proto_node_to_json(n));
        sv_proto_node_free(n);
    }
    g_assert_no_error(err);
    json_object_set_array_member(o, "nodes", nodes);
    JsonNode *root = json_node_new(JSON_NODE_OBJECT);
    json_node_take_object(root, o);
    return root;
}

static JsonNode *parse_json_file(const char *path)
{
    g_autoptr(JsonParser) p = json_parser_new();
    if (!json_parser_load_from_file(p, path, NULL))
        return NULL;
    return json_node_copy(json_parser_get_root(p));
}

static void test_json_vectors(void)
{
    SV_REQUIRE_SHARED("interop/chakra", "the Chakra ET vectors");
    g_autoptr(GPtrArray) files = all_et_files();
    g_autofree char *tmp = sv_test_tmpdir();
    int compared = 0;
    for (guint f = 0; f < files->len; f++) {
        const char *path = files->pdata[f];
        if (!g_str_has_suffix(path, ".et"))
            continue;
        g_autofree char *stem = g_strndup(path, strlen(path) - 3);
        g_autofree char *jpath = g_strconcat(stem, ".json", NULL);
        if (!g_file_test(jpath, G_FILE_TEST_EXISTS))
            continue;
        g_autoptr(JsonNode) expected = parse_json_file(jpath);
        CU_ASSERT_PTR_NOT_NULL_FATAL(expected);
        g_autoptr(JsonNode) got = file_json_in_memory(path);
        CU_ASSERT_PTR_NOT_NULL_FATAL(got);
        if (!json_node_equal(expected, got))
            fprintf(stderr, "\njson differs: %s\n", path);
        CU_ASSERT(json_node_equal(expected, got));

        /* The streamed file: same value, and Python's json.dump(indent=1) layout byte for
         * byte. */
        g_autofree char *out = g_build_filename(tmp, "out.json", NULL);
        GError *err = NULL;
        CU_ASSERT(sv_proto_file_to_json(path, out, &err));
        CU_ASSERT_PTR_NULL(err);
        g_autoptr(JsonNode) reparsed = parse_json_file(out);
        CU_ASSERT(reparsed && json_node_equal(expected, reparsed));
        g_autoptr(GByteArray) a = sv_test_read_file_bytes(out);
        g_autoptr(GByteArray) b = sv_test_read_file_bytes(jpath);
        if (!sv_test_bytes_equal(a, b))
            fprintf(stderr, "\njson text differs: %s\n", path);
        CU_ASSERT(sv_test_bytes_equal(a, b));
        g_remove(out);
        compared++;
    }
    /* vectors/ (20 .et with a .json, README table) + chakra_generator/ (14 workloads x 2). */
    SV_ASSERT_EQ_I64(compared, 48);
    sv_test_rmtree(tmp);
}

/* Values the vectors do not contain: non-finite and negative-zero floats, float rounding. */
static void test_json_special_floats(void)
{
    g_autoptr(ChakraProtoMsg__Node) n =
        sv_proto_node_new(1, "f", CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE);
    const double dv[] = {NAN, INFINITY, -INFINITY, -0.0, 0.1};
    const char *names[] = {"nan", "inf", "ninf", "nzero", "tenth"};
    for (size_t i = 0; i < G_N_ELEMENTS(dv); i++) {
        ChakraProtoMsg__AttributeProto *a = sv_proto_attr_new_int64(names[i], 0);
        a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FLOAT_VAL;
        a->float_val = (float)dv[i];
        sv_proto_node_add_attr(n, a);
    }
    g_autoptr(JsonNode) j = sv_proto_node_to_json(n);
    JsonArray *attrs = json_object_get_array_member(json_node_get_object(j), "attr");
    JsonObject *a0 = json_array_get_object_element(attrs, 0);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(a0, "float_val"), "NaN");
    CU_ASSERT_STRING_EQUAL(
        json_object_get_string_member(json_array_get_object_element(attrs, 1), "float_val"),
        "Infinity");
    CU_ASSERT_STRING_EQUAL(
        json_object_get_string_member(json_array_get_object_element(attrs, 2), "float_val"),
        "-Infinity");
    double nz = json_object_get_double_member(json_array_get_object_element(attrs, 3), "float_val");
    CU_ASSERT(nz == 0.0 && signbit(nz));
    /* 0.1f = 0.100000001490116..., printed by protobuf python as 0.1 (6 significant digits
     * already read back to the same float). */
    CU_ASSERT(json_object_get_double_member(json_array_get_object_element(attrs, 4), "float_val") ==
              0.1);

    /* Text form through a file: Python's repr of these doubles. */
    ChakraProtoMsg__AttributeProto *big = sv_proto_attr_new_int64("big", 0);
    big->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL;
    big->double_val = 1e16;
    sv_proto_node_add_attr(n, big);
    ChakraProtoMsg__AttributeProto *small = sv_proto_attr_new_int64("small", 0);
    small->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL;
    small->double_val = 0.0001;
    sv_proto_node_add_attr(n, small);
    ChakraProtoMsg__AttributeProto *tiny = sv_proto_attr_new_int64("tiny", 0);
    tiny->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL;
    tiny->double_val = -2.5e-05;
    sv_proto_node_add_attr(n, tiny);
    ChakraProtoMsg__AttributeProto *whole = sv_proto_attr_new_int64("whole", 0);
    whole->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL;
    whole->double_val = 1234567890123456.0;
    sv_proto_node_add_attr(n, whole);
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *et = g_build_filename(tmp, "f.et", NULL);
    g_autofree char *js = g_build_filename(tmp, "f.json", NULL);
    GError *err = NULL;
    sv_proto_writer *w = sv_proto_writer_open(et, &err);
    g_autoptr(ChakraProtoMsg__GlobalMetadata) md = sv_proto_metadata_new("0.0.4");
    CU_ASSERT(sv_proto_writer_put_metadata(w, md, &err));
    CU_ASSERT(sv_proto_writer_put_node(w, n, &err));
    CU_ASSERT(sv_proto_writer_close(w, &err));
    CU_ASSERT(sv_proto_file_to_json(et, js, &err));
    CU_ASSERT_PTR_NULL(err);
    g_autofree char *text = NULL;
    CU_ASSERT(g_file_get_contents(js, &text, NULL, NULL));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"float_val\": \"NaN\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"float_val\": -0.0\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"float_val\": 0.1\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"double_val\": 1e+16\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"double_val\": 0.0001\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"double_val\": -2.5e-05\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"double_val\": 1234567890123456.0\n"));
    sv_test_rmtree(tmp);
}

/* ---- malformed input ---------------------------------------------------------------------- */

/* GlobalMetadata{version "0.0.4"} frame = 7 bytes + 1 prefix (CHAKRA_ET.md 1.2 example). */
static const uint8_t MD[] = {0x07, 0x0a, 0x05, '0', '.', '0', '.', '4'};

struct bad_case {
    const char *name;
    const uint8_t *tail; /* bytes after MD (or the whole file when no_md) */
    size_t tail_len;
    gboolean no_md;
    int code;
    const char *where; /* expected "message I at byte offset O" */
};

static void check_bad_file(const char *path, sv_proto_dep_flags deps, int code, const char *where)
{
    GError *err = NULL;
    sv_proto_reader *r = sv_proto_reader_open(path, &err);
    if (r) {
        sv_proto_reader_set_dep_check(r, deps);
        ChakraProtoMsg__Node *n;
        int guard = 0;
        while (sv_proto_reader_next(r, &n, &err) && guard++ < 100)
            sv_proto_node_free(n);
        sv_proto_reader_close(r);
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    if (err->code != code || !strstr(err->message, where) || !strstr(err->message, path))
        fprintf(stderr, "\nunexpected error (code %d): %s\n", err->code, err->message);
    CU_ASSERT_EQUAL(err->domain, SV_PROTO_ERROR);
    CU_ASSERT_EQUAL(err->code, code);
    CU_ASSERT_PTR_NOT_NULL(strstr(err->message, where));
    CU_ASSERT_PTR_NOT_NULL(strstr(err->message, path));
    g_error_free(err);
}

static void test_malformed(void)
{
    static const uint8_t trunc_frame[] = {0x0a, 0x08, 0x01, 0x12}; /* says 10, has 3 */
    static const uint8_t long_varint[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    static const uint8_t big_varint[] = {0xff, 0xff, 0xff, 0xff, 0x1f}; /* 2^35-1 */
    static const uint8_t trunc_varint[] = {0x80};
    static const uint8_t past_eof[] = {0x7f, 0x08, 0x01};
    static const uint8_t bad_wire[] = {0x02, 0x0e, 0x00}; /* field 1, wire type 6 */
    static const uint8_t wrong_wire[] = {0x05, 0x0d, 0x01, 0x00, 0x00, 0x00}; /* id as fixed32 */
    static const uint8_t bad_string[] = {0x04, 0x12, 0x05, 'a', 'b'}; /* name len past message */
    static const uint8_t empty_node[] = {0x02, 0x08, 0x01, 0x00};     /* node{id 1}, then len 0 */
    static const uint8_t bad_md[] = {0x02, 0x0a, 0x07};               /* version len past msg */
    /* Second node is good; the malformed one is message 2 at offset 8 + 3. */
    static const uint8_t second_bad[] = {0x02, 0x08, 0x01, 0x02, 0x08, 0x80};
    /* Fuzzing finds (issue 13): an attribute with field number 0 written as a two-byte tag
     * (protobuf-c takes it, then re-encodes it as a one-byte 0 it refuses); a node of defaults
     * only ("id: 0" written out) and one whose only field is unknown: both read as the empty
     * node, which no writer can put back in a file. */
    static const uint8_t field_zero[] = {0x0a, 0x08, 0x01, 0x52, 0x06, 0x0a,
                                         0x01, 'x',  0x80, 0x00, 0x00};
    static const uint8_t default_node[] = {0x02, 0x08, 0x00};
    static const uint8_t unknown_only[] = {0x0a, 0xa9, 0x01, 1, 2, 3, 4, 5, 6, 7, 8};
    const struct bad_case cases[] = {
        {"trunc_frame", trunc_frame, sizeof(trunc_frame), FALSE, SV_PROTO_ERROR_TRUNCATED,
         "message 1 at byte offset 8"},
        {"long_varint", long_varint, sizeof(long_varint), FALSE, SV_PROTO_ERROR_BAD_VARINT,
         "message 1 at byte offset 8"},
        {"big_varint", big_varint, sizeof(big_varint), FALSE, SV_PROTO_ERROR_BAD_VARINT,
         "message 1 at byte offset 8"},
        {"trunc_varint", trunc_varint, sizeof(trunc_varint), FALSE, SV_PROTO_ERROR_TRUNCATED,
         "message 1 at byte offset 8"},
        {"past_eof", past_eof, sizeof(past_eof), FALSE, SV_PROTO_ERROR_TRUNCATED,
         "message 1 at byte offset 8"},
        {"bad_wire", bad_wire, sizeof(bad_wire), FALSE, SV_PROTO_ERROR_BAD_MESSAGE,
         "message 1 at byte offset 8"},
        {"wrong_wire", wrong_wire, sizeof(wrong_wire), FALSE, SV_PROTO_ERROR_BAD_MESSAGE,
         "message 1 at byte offset 8"},
        {"bad_string", bad_string, sizeof(bad_string), FALSE, SV_PROTO_ERROR_BAD_MESSAGE,
         "message 1 at byte offset 8"},
        {"empty_node", empty_node, sizeof(empty_node), FALSE, SV_PROTO_ERROR_EMPTY_NODE,
         "message 2 at byte offset 11"},
        {"second_bad", second_bad, sizeof(second_bad), FALSE, SV_PROTO_ERROR_BAD_MESSAGE,
         "message 2 at byte offset 11"},
        {"field_zero", field_zero, sizeof(field_zero), FALSE, SV_PROTO_ERROR_BAD_MESSAGE,
         "field number 0"},
        {"default_node", default_node, sizeof(default_node), FALSE, SV_PROTO_ERROR_EMPTY_NODE,
         "message 1 at byte offset 8"},
        {"unknown_only", unknown_only, sizeof(unknown_only), FALSE, SV_PROTO_ERROR_EMPTY_NODE,
         "message 1 at byte offset 8"},
        {"bad_md", bad_md, sizeof(bad_md), TRUE, SV_PROTO_ERROR_BAD_MESSAGE,
         "message 0 at byte offset 0"},
        {"empty_file", (const uint8_t *)"", 0, TRUE, SV_PROTO_ERROR_TRUNCATED,
         "message 0 at byte offset 0"},
        {"md_varint", long_varint, sizeof(long_varint), TRUE, SV_PROTO_ERROR_BAD_VARINT,
         "message 0 at byte offset 0"},
    };
    g_autofree char *tmp = sv_test_tmpdir();
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GByteArray) b = g_byte_array_new();
        if (!cases[i].no_md)
            g_byte_array_append(b, MD, sizeof(MD));
        g_byte_array_append(b, cases[i].tail, (guint)cases[i].tail_len);
        g_autofree char *p = write_tmp(tmp, cases[i].name, b->data, b->len);
        check_bad_file(p, SV_PROTO_DEP_NONE, cases[i].code, cases[i].where);
    }
    g_autofree char *missing = g_build_filename(tmp, "does-not-exist.et", NULL);
    GError *err = NULL;
    CU_ASSERT_PTR_NULL(sv_proto_reader_open(missing, &err));
    CU_ASSERT(err && err->code == SV_PROTO_ERROR_IO && strstr(err->message, missing));
    g_clear_error(&err);
    sv_test_rmtree(tmp);
}

static GByteArray *gzip_bytes(const uint8_t *data, size_t len)
{
    z_stream zs = {0};
    g_assert(deflateInit2(&zs, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    GByteArray *out = g_byte_array_sized_new((guint)len + 64);
    g_byte_array_set_size(out, (guint)deflateBound(&zs, len));
    zs.next_in = (Bytef *)data;
    zs.avail_in = (uInt)len;
    zs.next_out = out->data;
    zs.avail_out = out->len;
    g_assert(deflate(&zs, Z_FINISH) == Z_STREAM_END);
    g_byte_array_set_size(out, (guint)zs.total_out);
    deflateEnd(&zs);
    return out;
}

static void test_bad_gzip(void)
{
    SV_REQUIRE_SHARED("interop/chakra", "the Chakra ET vectors");
    /* compute_chain.0.et has 3 nodes; its gzip, cut short or with a corrupted body/CRC. */
    g_autoptr(GByteArray) plain =
        sv_test_read_file_bytes(INTEROP "/chakra/vectors/compute_chain/compute_chain.0.et");
    CU_ASSERT_PTR_NOT_NULL_FATAL(plain);
    g_autoptr(GByteArray) gz = gzip_bytes(plain->data, plain->len);
    g_autofree char *tmp = sv_test_tmpdir();
    /* Missing the 8-byte trailer (CRC32 + ISIZE, RFC 1952): all frames decode, then the stream
     * ends inside the member. */
    g_autofree char *cut = write_tmp(tmp, "cut.et.gz", gz->data, gz->len - 4);
    check_bad_file(cut, SV_PROTO_DEP_NONE, SV_PROTO_ERROR_GZIP, "truncated gzip stream");
    /* ... located at the frame being read: message 4 (after metadata + 3 nodes), at the end of
     * the intact decompressed bytes. */
    g_autofree char *where = g_strdup_printf("message 4 at byte offset %u", plain->len);
    check_bad_file(cut, SV_PROTO_DEP_NONE, SV_PROTO_ERROR_GZIP, where);
    g_autofree char *half = write_tmp(tmp, "half.et.gz", gz->data, gz->len / 2);
    check_bad_file(half, SV_PROTO_DEP_NONE, SV_PROTO_ERROR_GZIP, "truncated gzip stream");
    /* Flip a CRC bit: zlib reports "incorrect data check". */
    g_autoptr(GByteArray) crc = g_byte_array_new();
    g_byte_array_append(crc, gz->data, gz->len);
    crc->data[crc->len - 8] ^= 0x01;
    g_autofree char *badcrc = write_tmp(tmp, "crc.et.gz", crc->data, crc->len);
    check_bad_file(badcrc, SV_PROTO_DEP_NONE, SV_PROTO_ERROR_GZIP, "corrupt gzip stream");
    /* Garbage after the 10-byte header: an invalid deflate block type (binary 11). */
    g_autoptr(GByteArray) body = g_byte_array_new();
    g_byte_array_append(body, gz->data, 10);
    static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    g_byte_array_append(body, junk, sizeof(junk));
    g_autofree char *badbody = write_tmp(tmp, "body.et.gz", body->data, body->len);
    check_bad_file(badbody, SV_PROTO_DEP_NONE, SV_PROTO_ERROR_GZIP, "corrupt gzip stream");
    /* The intact stream reads back the 3 nodes. */
    g_autofree char *good = write_tmp(tmp, "good.et.gz", gz->data, gz->len);
    GError *err = NULL;
    g_autoptr(sv_proto_reader) r = sv_proto_reader_open(good, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT(sv_proto_reader_is_gzip(r));
    ChakraProtoMsg__Node *n;
    int count = 0;
    while (sv_proto_reader_next(r, &n, &err)) {
        sv_proto_node_free(n);
        count++;
    }
    CU_ASSERT_PTR_NULL(err);
    CU_ASSERT_EQUAL(count, 3);
    sv_test_rmtree(tmp);
}

static void test_dangling(void)
{
    /* node{id 1, data_deps [5]} = 08 01 2a 01 05; node{id 2, ctrl_deps [1]} = 08 02 22 01 01;
     * node{id 3, data_deps [4]} (forward reference) = 08 03 2a 01 04; node{id 4} = 08 04. */
    static const uint8_t nodes[] = {0x05, 0x08, 0x01, 0x2a, 0x01, 0x05, 0x05,
                                    0x08, 0x02, 0x22, 0x01, 0x01, 0x05, 0x08,
                                    0x03, 0x2a, 0x01, 0x04, 0x02, 0x08, 0x04};
    g_autoptr(GByteArray) b = g_byte_array_new();
    g_byte_array_append(b, MD, sizeof(MD));
    g_byte_array_append(b, nodes, sizeof(nodes));
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *p = write_tmp(tmp, "dangling.et", b->data, b->len);
    check_bad_file(p, SV_PROTO_DEP_CHECK_DATA, SV_PROTO_ERROR_DANGLING_DEP,
                   "message 1 at byte offset 8");
    check_bad_file(p, SV_PROTO_DEP_CHECK_ALL, SV_PROTO_ERROR_DANGLING_DEP, "node id 5");

    /* ctrl-only checking: node 2's ctrl dep on 1 exists, node 3's forward data dep resolves;
     * only the data dep on 5 dangles, which is counted, not an error. */
    GError *err = NULL;
    g_autoptr(sv_proto_reader) r = sv_proto_reader_open(p, &err);
    sv_proto_reader_set_dep_check(r, SV_PROTO_DEP_CHECK_CTRL);
    ChakraProtoMsg__Node *n;
    int count = 0;
    while (sv_proto_reader_next(r, &n, &err)) {
        sv_proto_node_free(n);
        count++;
    }
    CU_ASSERT_PTR_NULL(err);
    CU_ASSERT_EQUAL(count, 4);
    uint64_t dd = 99, cd = 99;
    CU_ASSERT(sv_proto_reader_dangling(r, &dd, &cd));
    SV_ASSERT_EQ_I64(dd, 1);
    SV_ASSERT_EQ_I64(cd, 0);
    sv_test_rmtree(tmp);
}

/* ---- writer -------------------------------------------------------------------------------- */

/* all_reduce.0.et (ASTRA-sim microbenchmark, 81 bytes, byte layout in CHAKRA_ET.md 1.2) rebuilt
 * with the builders. */
static void write_all_reduce(sv_proto_writer *w)
{
    GError *err = NULL;
    g_autoptr(ChakraProtoMsg__GlobalMetadata) md = sv_proto_metadata_new("0.0.4");
    CU_ASSERT(sv_proto_writer_put_metadata(w, md, &err));
    g_autoptr(ChakraProtoMsg__Node) n =
        sv_proto_node_new(0, "all_reduce_8npus_1MB", CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE);
    sv_proto_node_add_attr(n, sv_proto_attr_new_bool("is_cpu_op", FALSE));
    sv_proto_node_add_attr(n, sv_proto_attr_new_int64("comm_type", 0));
    sv_proto_node_add_attr(n, sv_proto_attr_new_int64("comm_size", 1048576));
    CU_ASSERT(sv_proto_writer_put_node(w, n, &err));
    CU_ASSERT_PTR_NULL(err);
}

static void test_writer_bytes_and_gzip(void)
{
    SV_REQUIRE_SHARED("interop/chakra", "the Chakra ET vectors");
    const char *ref = INTEROP "/astra-sim/microbenchmarks/all_reduce/8npus_1MB/all_reduce.0.et";
    g_autoptr(GByteArray) expected = sv_test_read_file_bytes(ref);
    CU_ASSERT_PTR_NOT_NULL_FATAL(expected);
    CU_ASSERT_EQUAL(expected->len, 81);
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *plain = g_build_filename(tmp, "ar.0.et", NULL);
    g_autofree char *gzp = g_build_filename(tmp, "ar.0.et.gz", NULL);
    GError *err = NULL;
    sv_proto_writer *w = sv_proto_writer_open(plain, &err);
    write_all_reduce(w);
    CU_ASSERT(sv_proto_writer_close(w, &err));
    g_autoptr(GByteArray) got = sv_test_read_file_bytes(plain);
    CU_ASSERT(sv_test_bytes_equal(got, expected));

    w = sv_proto_writer_open(gzp, &err);
    write_all_reduce(w);
    CU_ASSERT(sv_proto_writer_close(w, &err));
    g_autoptr(GByteArray) gz = sv_test_read_file_bytes(gzp);
    /* RFC 1952 header: magic 1f 8b, CM 8, then MTIME (bytes 4..7) = 0 for determinism. */
    CU_ASSERT_FATAL(gz && gz->len > 18);
    CU_ASSERT(gz->data[0] == 0x1f && gz->data[1] == 0x8b && gz->data[2] == 8);
    CU_ASSERT(gz->data[4] == 0 && gz->data[5] == 0 && gz->data[6] == 0 && gz->data[7] == 0);
    g_autoptr(GByteArray) unz = sv_test_read_decompressed(gzp);
    CU_ASSERT(sv_test_bytes_equal(unz, expected));

    /* Read back through the reader: attribute helpers with ASTRA-sim's conversions. */
    g_autoptr(sv_proto_reader) r = sv_proto_reader_open(gzp, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT(sv_proto_reader_is_gzip(r));
    CU_ASSERT_STRING_EQUAL(sv_proto_reader_metadata(r)->version, "0.0.4");
    ChakraProtoMsg__Node *n = NULL;
    CU_ASSERT_FATAL(sv_proto_reader_next(r, &n, &err));
    SV_ASSERT_EQ_I64(sv_proto_reader_index(r), 1);
    SV_ASSERT_EQ_I64(sv_proto_reader_offset(r), 8);
    CU_ASSERT_STRING_EQUAL(n->name, "all_reduce_8npus_1MB");
    int64_t v = -1;
    CU_ASSERT(sv_proto_attr_int(sv_proto_attr_find(n, "comm_size"), &v));
    SV_ASSERT_EQ_I64(v, 1048576);
    gboolean bv = TRUE;
    CU_ASSERT(sv_proto_attr_bool(sv_proto_attr_find(n, "is_cpu_op"), &bv));
    CU_ASSERT_FALSE(bv);
    CU_ASSERT_PTR_NULL(sv_proto_attr_find(n, "comm_src"));
    sv_proto_node_free(n);
    CU_ASSERT_FALSE(sv_proto_reader_next(r, &n, &err));
    CU_ASSERT_PTR_NULL(err);
    sv_test_rmtree(tmp);
}

static void test_attr_semantics(void)
{
    SV_REQUIRE_SHARED("interop/chakra", "the Chakra ET vectors");
    g_autoptr(ChakraProtoMsg__Node) n =
        sv_proto_node_new(7, "x", CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE);
    sv_proto_node_add_attr(n, sv_proto_attr_new_int32("comm_src", -3));
    sv_proto_node_add_attr(n, sv_proto_attr_new_int32("comm_src", 5)); /* shadowed: first wins */
    sv_proto_node_add_attr(n, sv_proto_attr_new_bool("flag", TRUE));
    sv_proto_node_add_attr(n, sv_proto_attr_new_uint64("big", UINT64_MAX));
    sv_proto_node_add_attr(n, sv_proto_attr_new_string("pg_name", "2"));
    const gboolean dims[] = {TRUE, FALSE, TRUE};
    sv_proto_node_add_attr(n, sv_proto_attr_new_bool_list("involved_dim", dims, 3));
    ChakraProtoMsg__AttributeProto *f = sv_proto_attr_new_int64("num_ops", 0);
    f->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FLOAT_VAL;
    f->float_val = 3.0f;
    sv_proto_node_add_attr(n, f);

    int64_t v;
    CU_ASSERT(sv_proto_attr_int(sv_proto_attr_find(n, "comm_src"), &v));
    SV_ASSERT_EQ_I64(v, -3);
    CU_ASSERT(sv_proto_attr_int(sv_proto_attr_find(n, "flag"), &v)); /* bool -> 1 */
    SV_ASSERT_EQ_I64(v, 1);
    CU_ASSERT_FALSE(sv_proto_attr_int(sv_proto_attr_find(n, "big"), &v)); /* > INT64_MAX */
    uint64_t u;
    CU_ASSERT(sv_proto_attr_uint(sv_proto_attr_find(n, "big"), &u));
    CU_ASSERT(u == UINT64_MAX);
    CU_ASSERT_FALSE(sv_proto_attr_uint(sv_proto_attr_find(n, "comm_src"), &u)); /* negative */
    CU_ASSERT_FALSE(sv_proto_attr_int(sv_proto_attr_find(n, "num_ops"), &v));   /* float refused */
    CU_ASSERT_FALSE(sv_proto_attr_int(sv_proto_attr_find(n, "pg_name"), &v));
    const char *s = NULL;
    CU_ASSERT(sv_proto_attr_string(sv_proto_attr_find(n, "pg_name"), &s));
    CU_ASSERT_STRING_EQUAL(s, "2");
    CU_ASSERT_FALSE(sv_proto_attr_string(sv_proto_attr_find(n, "flag"), &s));
    gboolean *vals = NULL;
    size_t nv = 0;
    CU_ASSERT(sv_proto_attr_bool_list(sv_proto_attr_find(n, "involved_dim"), &vals, &nv));
    CU_ASSERT(nv == 3 && vals[0] && !vals[1] && vals[2]);
    g_free(vals);
    CU_ASSERT_FALSE(sv_proto_attr_bool_list(sv_proto_attr_find(n, "flag"), &vals, &nv));

    /* Attribute kinds of the all_fields vector: sint64 and fixed32 convert, double does not. */
    GError *err = NULL;
    g_autoptr(sv_proto_reader) r =
        sv_proto_reader_open(INTEROP "/chakra/vectors/all_fields/all_fields.0.et", &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    ChakraProtoMsg__Node *af = NULL;
    CU_ASSERT_FATAL(sv_proto_reader_next(r, &af, &err));
    CU_ASSERT(af->id == UINT64_MAX);
    CU_ASSERT(sv_proto_attr_int(sv_proto_attr_find(af, "sint64"), &v) && v == -9876543210LL);
    CU_ASSERT(sv_proto_attr_int(sv_proto_attr_find(af, "fixed32"), &v) && v == 12345);
    CU_ASSERT(sv_proto_attr_int(sv_proto_attr_find(af, "uint32"), &v) && v == 4294967295LL);
    CU_ASSERT(sv_proto_attr_int(sv_proto_attr_find(af, "sfixed64"), &v) && v == -9876543210LL);
    CU_ASSERT(sv_proto_attr_int(sv_proto_attr_find(af, "int64_zero"), &v) && v == 0);
    CU_ASSERT_FALSE(sv_proto_attr_int(sv_proto_attr_find(af, "double"), &v));
    CU_ASSERT_FALSE(sv_proto_attr_int(sv_proto_attr_find(af, "no_value"), &v));
    sv_proto_node_free(af);
}

static void test_writer_abort_and_failure(void)
{
    g_autofree char *tmp = sv_test_tmpdir();
    g_autofree char *out = g_build_filename(tmp, "partial.et", NULL);
    GError *err = NULL;
    sv_proto_writer *w = sv_proto_writer_open(out, &err);
    write_all_reduce(w);
    CU_ASSERT_EQUAL(count_dir_entries(tmp), 1); /* the temporary file */
    CU_ASSERT_FALSE(g_file_test(out, G_FILE_TEST_EXISTS));
    sv_proto_writer_abort(w);
    CU_ASSERT_EQUAL(count_dir_entries(tmp), 0);

    /* A node that packs to zero bytes is refused, and close then fails leaving nothing. */
    w = sv_proto_writer_open(out, &err);
    write_all_reduce(w);
    g_autoptr(ChakraProtoMsg__Node) empty =
        sv_proto_node_new(0, "", CHAKRA_PROTO_MSG__NODE_TYPE__INVALID_NODE);
    CU_ASSERT_FALSE(sv_proto_writer_put_node(w, empty, &err));
    CU_ASSERT(err && err->code == SV_PROTO_ERROR_EMPTY_NODE);
    g_clear_error(&err);
    CU_ASSERT_FALSE(sv_proto_writer_close(w, &err));
    g_clear_error(&err);
    CU_ASSERT_EQUAL(count_dir_entries(tmp), 0);

    /* Node before metadata is refused. */
    w = sv_proto_writer_open(out, &err);
    g_autoptr(ChakraProtoMsg__Node) n =
        sv_proto_node_new(1, "a", CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE);
    CU_ASSERT_FALSE(sv_proto_writer_put_node(w, n, &err));
    CU_ASSERT(err && err->code == SV_PROTO_ERROR_INVALID);
    g_clear_error(&err);
    sv_proto_writer_abort(w);

    /* Unwritable location: error names the path, nothing created. */
    g_autofree char *bad = g_build_filename(tmp, "no-such-dir", "x.et", NULL);
    CU_ASSERT_PTR_NULL(sv_proto_writer_open(bad, &err));
    CU_ASSERT(err && err->code == SV_PROTO_ERROR_IO && strstr(err->message, "no-such-dir"));
    g_clear_error(&err);

    /* JSON conversion of a malformed file leaves no output either. */
    static const uint8_t trunc[] = {0x0a, 0x08, 0x01};
    g_autoptr(GByteArray) b = g_byte_array_new();
    g_byte_array_append(b, MD, sizeof(MD));
    g_byte_array_append(b, trunc, sizeof(trunc));
    g_autofree char *in = write_tmp(tmp, "bad.et", b->data, b->len);
    g_autofree char *js = g_build_filename(tmp, "bad.json", NULL);
    CU_ASSERT_FALSE(sv_proto_file_to_json(in, js, &err));
    CU_ASSERT(err && err->code == SV_PROTO_ERROR_TRUNCATED);
    g_clear_error(&err);
    CU_ASSERT_EQUAL(count_dir_entries(tmp), 1); /* only bad.et */
    sv_test_rmtree(tmp);
}

/* ---- the real PyTorch trace ---------------------------------------------------------------- */

static int64_t jint(JsonObject *o, const char *k)
{
    return json_object_get_int_member(o, k);
}

static void test_real_trace(void)
{
    SV_REQUIRE_SHARED("interop/chakra", "the Chakra ET vectors");
    g_autoptr(JsonNode) sj = parse_json_file(REAL_SUMMARY);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sj);
    JsonObject *exp = json_node_get_object(sj);
    GError *err = NULL;
    struct sv_proto_summary *s = sv_proto_summary_new(REAL_TRACE, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT(s->gzip);
    SV_ASSERT_EQ_I64(s->stream_bytes, jint(exp, "raw_bytes"));
    SV_ASSERT_EQ_I64(s->node_count, jint(exp, "node_count"));
    JsonObject *types = json_object_get_object_member(exp, "node_types");
    SV_ASSERT_EQ_I64(s->nodes_by_type[CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE],
                     jint(types, "COMP_NODE"));
    SV_ASSERT_EQ_I64(s->nodes_by_type[CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE],
                     jint(types, "COMM_COLL_NODE"));
    SV_ASSERT_EQ_I64(s->id_min, jint(exp, "id_min"));
    SV_ASSERT_EQ_I64(s->id_max, jint(exp, "id_max"));
    CU_ASSERT_EQUAL(s->ids_increasing,
                    json_object_get_boolean_member(exp, "ids_strictly_increasing_in_file"));
    SV_ASSERT_EQ_I64(s->data_deps, jint(exp, "data_deps_total"));
    SV_ASSERT_EQ_I64(s->ctrl_deps, jint(exp, "ctrl_deps_total"));
    SV_ASSERT_EQ_I64(s->data_dangling, jint(exp, "data_deps_to_missing_nodes"));
    SV_ASSERT_EQ_I64(s->ctrl_dangling, jint(exp, "ctrl_deps_to_missing_nodes"));
    SV_ASSERT_EQ_I64(s->nodes_with_duration, jint(exp, "nodes_with_duration_micros"));
    SV_ASSERT_EQ_I64(s->sum_duration_micros, jint(exp, "sum_duration_micros"));
    g_autoptr(JsonNode) sjson = sv_proto_summary_to_json(s);
    JsonObject *so = json_node_get_object(sjson);
    CU_ASSERT(json_node_equal(json_object_get_member(so, "attr_name_and_value_kind_counts"),
                              json_object_get_member(exp, "attr_name_and_value_kind_counts")));
    CU_ASSERT(json_node_equal(json_object_get_member(so, "global_metadata"),
                              json_object_get_member(exp, "global_metadata")));
    sv_proto_summary_free(s);

    /* The decompressed stream is the one the summary hashed. */
    g_autoptr(GByteArray) raw = sv_test_read_decompressed(REAL_TRACE);
    CU_ASSERT_PTR_NOT_NULL_FATAL(raw);
    g_autofree char *sha = g_compute_checksum_for_data(G_CHECKSUM_SHA256, raw->data, raw->len);
    CU_ASSERT_STRING_EQUAL(sha, json_object_get_string_member(exp, "raw_sha256"));

    /* ASTRA-sim's policy (ctrl deps checked) rejects the file; the missing id is one of the
     * summary's missing targets and the message names where the reference is. */
    g_autoptr(sv_proto_reader) r = sv_proto_reader_open(REAL_TRACE, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    sv_proto_reader_set_dep_check(r, SV_PROTO_DEP_CHECK_ALL);
    ChakraProtoMsg__Node *n;
    uint64_t count = 0;
    while (sv_proto_reader_next(r, &n, &err)) {
        sv_proto_node_free(n);
        count++;
    }
    SV_ASSERT_EQ_I64(count, 3664);
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT_EQUAL(err->code, SV_PROTO_ERROR_DANGLING_DEP);
    CU_ASSERT_PTR_NOT_NULL(strstr(err->message, "ctrl_deps dependency on node id "));
    CU_ASSERT_PTR_NOT_NULL(strstr(err->message, "message 1 at byte offset "));
    CU_ASSERT_PTR_NOT_NULL(strstr(err->message, "1277 dangling ctrl_deps"));
    const char *idp = strstr(err->message, "node id ");
    uint64_t missing = idp ? g_ascii_strtoull(idp + 8, NULL, 10) : 0;
    JsonArray *targets = json_object_get_array_member(exp, "distinct_missing_dep_targets");
    gboolean listed = FALSE;
    for (guint i = 0; i < json_array_get_length(targets); i++)
        if ((uint64_t)json_array_get_int_element(targets, i) == missing)
            listed = TRUE;
    CU_ASSERT(listed);
    g_clear_error(&err);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"reencode every interop ET byte-identically", test_reencode_all},
        {"JSON equals the Python-decoded vectors", test_json_vectors},
        {"JSON of non-finite / -0 / rounded floats", test_json_special_floats},
        {"malformed frames give located errors", test_malformed},
        {"truncated / corrupt gzip", test_bad_gzip},
        {"dangling dependency checking", test_dangling},
        {"writer bytes match all_reduce.0.et, gzip mtime 0", test_writer_bytes_and_gzip},
        {"attribute helpers (ASTRA-sim conversions)", test_attr_semantics},
        {"writer abort/failure leaves no file", test_writer_abort_and_failure},
        {"real PyTorch trace matches its summary", test_real_trace},
        {NULL, NULL},
    };
    sv_test_add_suite("proto", cases);
    return sv_test_run();
}
