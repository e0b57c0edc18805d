/* Chakra ET -> JSON with protobuf's canonical JSON mapping and proto field names, the layout of
 * ../shared/interop/chakra/ *.json (Python MessageToDict(preserving_proto_field_name=True) then
 * json.dump(indent=1)): 64-bit integers as strings, enums by name, proto3 defaults omitted except
 * the set member of AttributeProto.value, bytes as base64, non-finite numbers as "NaN",
 * "Infinity", "-Infinity", floats rounded to the shortest decimal that reads back to the same
 * float (protobuf python type_checkers.ToShortestFloat). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib/gstdio.h>

#include "proto/proto_internal.h"

typedef ChakraProtoMsg__AttributeProto attr_t;

static JsonNode *j_str(const char *s)
{
    JsonNode *n = json_node_new(JSON_NODE_VALUE);
    if (g_utf8_validate(s, -1, NULL)) {
        json_node_set_string(n, s);
    } else {
        char *v = g_utf8_make_valid(s, -1);
        json_node_set_string(n, v);
        g_free(v);
    }
    return n;
}

static JsonNode *j_u64(uint64_t v)
{
    char buf[24];
    g_snprintf(buf, sizeof(buf), "%" G_GUINT64_FORMAT, (guint64)v);
    return j_str(buf);
}

static JsonNode *j_i64(int64_t v)
{
    char buf[24];
    g_snprintf(buf, sizeof(buf), "%" G_GINT64_FORMAT, (gint64)v);
    return j_str(buf);
}

static JsonNode *j_int(int64_t v)
{
    JsonNode *n = json_node_new(JSON_NODE_VALUE);
    json_node_set_int(n, v);
    return n;
}

static JsonNode *j_bool(gboolean v)
{
    JsonNode *n = json_node_new(JSON_NODE_VALUE);
    json_node_set_boolean(n, v);
    return n;
}

/* Non-finite values are strings in protobuf's JSON mapping. */
static JsonNode *j_double(double v)
{
    if (isnan(v))
        return j_str("NaN");
    if (isinf(v))
        return j_str(v > 0 ? "Infinity" : "-Infinity");
    JsonNode *n = json_node_new(JSON_NODE_VALUE);
    json_node_set_double(n, v);
    return n;
}

/* protobuf python ToShortestFloat: the fewest significant digits, starting at 6, whose decimal
 * rounds back to the same float32. */
static JsonNode *j_float(float v)
{
    if (isnan(v) || isinf(v))
        return j_double((double)v);
    char buf[64];
    double d = (double)v;
    for (int p = 6; p <= 9; p++) {
        g_snprintf(buf, sizeof(buf), "%.*g", p, (double)v);
        d = g_ascii_strtod(buf, NULL);
        if ((float)d == v)
            break;
    }
    return j_double(d);
}

static JsonNode *j_bytes(ProtobufCBinaryData b)
{
    char *s = g_base64_encode(b.data, b.len);
    JsonNode *n = j_str(s);
    g_free(s);
    return n;
}

static JsonNode *j_obj(JsonObject *o)
{
    JsonNode *n = json_node_new(JSON_NODE_OBJECT);
    json_node_take_object(n, o);
    return n;
}

static JsonNode *j_arr(JsonArray *a)
{
    JsonNode *n = json_node_new(JSON_NODE_ARRAY);
    json_node_take_array(n, a);
    return n;
}

static void set_str_nonempty(JsonObject *o, const char *key, const char *s)
{
    if (s && s[0])
        json_object_set_member(o, key, j_str(s));
}

/* {"values": [...]} with `values` omitted when empty (a repeated field at its default). */
#define LIST_TO_JSON(list, conv)                                                                   \
    do {                                                                                           \
        JsonObject *lo = json_object_new();                                                        \
        if ((list) && (list)->n_values > 0) {                                                      \
            JsonArray *la = json_array_sized_new((guint)(list)->n_values);                         \
            for (size_t li = 0; li < (list)->n_values; li++)                                       \
                json_array_add_element(la, conv((list)->values[li]));                              \
            json_object_set_member(lo, "values", j_arr(la));                                       \
        }                                                                                          \
        json_object_set_member(o, key, j_obj(lo));                                                 \
    } while (0)

static JsonNode *attr_to_json(const attr_t *a)
{
    JsonObject *o = json_object_new();
    set_str_nonempty(o, "name", a->name);
    set_str_nonempty(o, "doc_string", a->doc_string);
    const char *key = NULL;
    const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field(
        &chakra_proto_msg__attribute_proto__descriptor, (unsigned)a->value_case);
    if (fd)
        key = fd->name;
    switch (a->value_case) {
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE__NOT_SET:
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL:
        json_object_set_member(o, key, j_double(a->double_val));
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_LIST:
        LIST_TO_JSON(a->double_list, j_double);
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FLOAT_VAL:
        json_object_set_member(o, key, j_float(a->float_val));
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FLOAT_LIST:
        LIST_TO_JSON(a->float_list, j_float);
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL:
        json_object_set_member(o, key, j_int(a->int32_val));
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_LIST:
        LIST_TO_JSON(a->int32_list, j_int);
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL:
        json_object_set_member(o, key, j_i64(a->int64_val));
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_LIST:
        LIST_TO_JSON(a->int64_list, j_i64);
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_VAL:
        json_object_set_member(o, key, j_int(a->uint32_val));
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_LIST:
        LIST_TO_JSON(a->uint32_list, j_int);
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL:
        json_object_set_member(o, key, j_u64(a->uint64_val));
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_LIST:
        LIST_TO_JSON(a->uint64_list, j_u64);
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT32_VAL:
        json_object_set_member(o, key, j_int(a->sint32_val));
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT32_LIST:
        LIST_TO_JSON(a->sint32_list, j_int);
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT64_VAL:
        json_object_set_member(o, key, j_i64(a->sint64_val));
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT64_LIST:
        LIST_TO_JSON(a->sint64_list, j_i64);
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED32_VAL:
        json_object_set_member(o, key, j_int(a->fixed32_val));
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED32_LIST:
        LIST_TO_JSON(a->fixed32_list, j_int);
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED64_VAL:
        json_object_set_member(o, key, j_u64(a->fixed64_val));
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED64_LIST:
        LIST_TO_JSON(a->fixed64_list, j_u64);
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED32_VAL:
        json_object_set_member(o, key, j_int(a->sfixed32_val));
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED32_LIST:
        LIST_TO_JSON(a->sfixed32_list, j_int);
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED64_VAL:
        json_object_set_member(o, key, j_i64(a->sfixed64_val));
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED64_LIST:
        LIST_TO_JSON(a->sfixed64_list, j_i64);
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL:
        json_object_set_member(o, key, j_bool(a->bool_val));
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_LIST:
        LIST_TO_JSON(a->bool_list, j_bool);
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL:
        json_object_set_member(o, key, j_str(a->string_val));
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_LIST:
        LIST_TO_JSON(a->string_list, j_str);
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BYTES_VAL:
        json_object_set_member(o, key, j_bytes(a->bytes_val));
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BYTES_LIST:
        LIST_TO_JSON(a->bytes_list, j_bytes);
        break;
    default:
        /* Not reachable for decoded messages: protobuf-c only sets known oneof cases. */
        break;
    }
    return j_obj(o);
}

static void set_attrs(JsonObject *o, attr_t **attrs, size_t n)
{
    if (n == 0)
        return;
    JsonArray *a = json_array_sized_new((guint)n);
    for (size_t i = 0; i < n; i++)
        json_array_add_element(a, attr_to_json(attrs[i]));
    json_object_set_member(o, "attr", j_arr(a));
}

static void set_u64_list(JsonObject *o, const char *key, const uint64_t *v, size_t n)
{
    if (n == 0)
        return;
    JsonArray *a = json_array_sized_new((guint)n);
    for (size_t i = 0; i < n; i++)
        json_array_add_element(a, j_u64(v[i]));
    json_object_set_member(o, key, j_arr(a));
}

static JsonNode *ioinfo_to_json(const ChakraProtoMsg__IOInfo *io)
{
    JsonObject *o = json_object_new();
    set_str_nonempty(o, "values", io->values);
    set_str_nonempty(o, "shapes", io->shapes);
    set_str_nonempty(o, "types", io->types);
    return j_obj(o);
}

JsonNode *sv_proto_metadata_to_json(const ChakraProtoMsg__GlobalMetadata *md)
{
    SV_ASSERT(md != NULL);
    JsonObject *o = json_object_new();
    set_str_nonempty(o, "version", md->version);
    set_attrs(o, md->attr, md->n_attr);
    return j_obj(o);
}

JsonNode *sv_proto_node_to_json(const ChakraProtoMsg__Node *node)
{
    SV_ASSERT(node != NULL);
    JsonObject *o = json_object_new();
    if (node->id)
        json_object_set_member(o, "id", j_u64(node->id));
    set_str_nonempty(o, "name", node->name);
    if (node->type) {
        /* An enum value outside the schema prints as its number (protobuf JSON mapping). */
        const char *tn = sv_proto_node_type_name((int)node->type);
        json_object_set_member(o, "type", tn ? j_str(tn) : j_int((int64_t)node->type));
    }
    set_u64_list(o, "ctrl_deps", node->ctrl_deps, node->n_ctrl_deps);
    set_u64_list(o, "data_deps", node->data_deps, node->n_data_deps);
    if (node->start_time_micros)
        json_object_set_member(o, "start_time_micros", j_u64(node->start_time_micros));
    if (node->duration_micros)
        json_object_set_member(o, "duration_micros", j_u64(node->duration_micros));
    if (node->inputs)
        json_object_set_member(o, "inputs", ioinfo_to_json(node->inputs));
    if (node->outputs)
        json_object_set_member(o, "outputs", ioinfo_to_json(node->outputs));
    set_attrs(o, node->attr, node->n_attr);
    return j_obj(o);
}

/* ---- text output, laid out as Python's json.dump(indent=1) (ensure_ascii) --------------- */

static void write_string(GString *out, const char *s)
{
    g_string_append_c(out, '"');
    for (const char *p = s; *p;) {
        gunichar c = g_utf8_get_char(p);
        p = g_utf8_next_char(p);
        switch (c) {
        case '"':
            g_string_append(out, "\\\"");
            break;
        case '\\':
            g_string_append(out, "\\\\");
            break;
        case '\n':
            g_string_append(out, "\\n");
            break;
        case '\r':
            g_string_append(out, "\\r");
            break;
        case '\t':
            g_string_append(out, "\\t");
            break;
        case '\b':
            g_string_append(out, "\\b");
            break;
        case '\f':
            g_string_append(out, "\\f");
            break;
        default:
            if (c >= 0x20 && c < 0x7f) {
                g_string_append_c(out, (char)c);
            } else if (c < 0x10000) {
                g_string_append_printf(out, "\\u%04x", c);
            } else { /* UTF-16 surrogate pair */
                gunichar v = c - 0x10000;
                g_string_append_printf(out, "\\u%04x\\u%04x", 0xd800 + (v >> 10),
                                       0xdc00 + (v & 0x3ff));
            }
        }
    }
    g_string_append_c(out, '"');
}

/* Python repr(float): the shortest digit string that reads back to the same double, in fixed
 * notation for decimal exponents -4 <= e < 16 (with ".0" when integral), else d.ddde+XX. */
static void write_double(GString *out, double v)
{
    if (isnan(v) || isinf(v)) { /* not produced by sv_et_*_to_json; Python writes these */
        g_string_append(out, isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity");
        return;
    }
    char buf[40];
    int p;
    for (p = 1; p <= 17; p++) {
        g_snprintf(buf, sizeof(buf), "%.*e", p - 1, v);
        if (g_ascii_strtod(buf, NULL) == v)
            break;
    }
    /* buf = [-]d[.ddd]e[+-]XX: split into digits and exponent. */
    const char *q = buf;
    gboolean neg = *q == '-';
    if (neg)
        q++;
    char digits[24];
    size_t nd = 0;
    for (; *q && *q != 'e'; q++)
        if (*q != '.')
            digits[nd++] = *q;
    digits[nd] = '\0';
    int exp10 = atoi(q + 1);
    while (nd > 1 && digits[nd - 1] == '0') /* %.*e may pad; repr never does */
        digits[--nd] = '\0';
    int decpt = exp10 + 1;
    if (neg)
        g_string_append_c(out, '-');
    if (decpt <= -4 || decpt > 16) {
        g_string_append_c(out, digits[0]);
        if (nd > 1) {
            g_string_append_c(out, '.');
            g_string_append(out, digits + 1);
        }
        g_string_append_printf(out, "e%c%02d", exp10 < 0 ? '-' : '+', ABS(exp10));
    } else if (decpt <= 0) {
        g_string_append(out, "0.");
        for (int i = 0; i < -decpt; i++)
            g_string_append_c(out, '0');
        g_string_append(out, digits);
    } else if ((size_t)decpt >= nd) {
        g_string_append(out, digits);
        for (size_t i = nd; i < (size_t)decpt; i++)
            g_string_append_c(out, '0');
        g_string_append(out, ".0");
    } else {
        g_string_append_len(out, digits, decpt);
        g_string_append_c(out, '.');
        g_string_append(out, digits + decpt);
    }
}

static void newline(GString *out, int depth)
{
    g_string_append_c(out, '\n');
    for (int i = 0; i < depth; i++)
        g_string_append_c(out, ' ');
}

void sv_proto__json_write(GString *out, JsonNode *node, int depth)
{
    switch (json_node_get_node_type(node)) {
    case JSON_NODE_OBJECT: {
        JsonObject *o = json_node_get_object(node);
        GList *members = json_object_get_members(o); /* insertion order */
        if (!members) {
            g_string_append(out, "{}");
            break;
        }
        g_string_append_c(out, '{');
        for (GList *l = members; l; l = l->next) {
            newline(out, depth + 1);
            write_string(out, l->data);
            g_string_append(out, ": ");
            sv_proto__json_write(out, json_object_get_member(o, l->data), depth + 1);
            if (l->next)
                g_string_append_c(out, ',');
        }
        g_list_free(members);
        newline(out, depth);
        g_string_append_c(out, '}');
        break;
    }
    case JSON_NODE_ARRAY: {
        JsonArray *a = json_node_get_array(node);
        guint n = json_array_get_length(a);
        if (n == 0) {
            g_string_append(out, "[]");
            break;
        }
        g_string_append_c(out, '[');
        for (guint i = 0; i < n; i++) {
            newline(out, depth + 1);
            sv_proto__json_write(out, json_array_get_element(a, i), depth + 1);
            if (i + 1 < n)
                g_string_append_c(out, ',');
        }
        newline(out, depth);
        g_string_append_c(out, ']');
        break;
    }
    case JSON_NODE_NULL:
        g_string_append(out, "null");
        break;
    case JSON_NODE_VALUE: {
        GType t = json_node_get_value_type(node);
        if (t == G_TYPE_STRING)
            write_string(out, json_node_get_string(node));
        else if (t == G_TYPE_BOOLEAN)
            g_string_append(out, json_node_get_boolean(node) ? "true" : "false");
        else if (t == G_TYPE_DOUBLE)
            write_double(out, json_node_get_double(node));
        else
            g_string_append_printf(out, "%" G_GINT64_FORMAT, json_node_get_int(node));
        break;
    }
    }
}

char *sv_proto_json_to_text(JsonNode *node)
{
    SV_ASSERT(node != NULL);
    GString *out = g_string_new(NULL);
    sv_proto__json_write(out, node, 0);
    g_string_append_c(out, '\n');
    return g_string_free(out, FALSE);
}

static gboolean flush_gstring(FILE *fp, GString *s, const char *tmp, GError **error)
{
    if (s->len && fwrite(s->str, 1, s->len, fp) != s->len) {
        g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_IO, "cannot write: %s: %s", tmp,
                    g_strerror(errno));
        return FALSE;
    }
    g_string_truncate(s, 0);
    return TRUE;
}

gboolean sv_proto_file_to_json(const char *in, const char *out, GError **error)
{
    return sv_proto__json_convert(in, out, SV_PROTO_DEP_NONE, NULL, NULL, error);
}

gboolean sv_proto__json_convert(const char *in, const char *out, sv_proto_dep_flags deps,
                                const volatile sig_atomic_t *interrupt,
                                struct sv_proto_convert_stats *stats, GError **error)
{
    g_autoptr(sv_proto_reader) r = sv_proto_reader_open(in, error);
    if (!r)
        return FALSE;
    sv_proto_reader_set_dep_check(r, deps);
    g_autofree char *tmp = NULL;
    FILE *fp = sv_proto__tmpfile_open(out, &tmp, error);
    if (!fp)
        return FALSE;
    const char *wpath = tmp ? tmp : out; /* NULL tmp: a device written in place */
    g_autoptr(GString) buf = g_string_new("{\n \"global_metadata\": ");
    JsonNode *md = sv_proto_metadata_to_json(sv_proto_reader_metadata(r));
    sv_proto__json_write(buf, md, 1);
    json_node_unref(md);
    g_string_append(buf, ",\n \"nodes\": [");
    gboolean ok = TRUE;
    uint64_t count = 0;
    ChakraProtoMsg__Node *node;
    GError *local = NULL;
    while (ok && !(interrupt && *interrupt) && sv_proto_reader_next(r, &node, &local)) {
        g_string_append(buf, count ? ",\n  " : "\n  ");
        JsonNode *jn = sv_proto_node_to_json(node);
        sv_proto__json_write(buf, jn, 2);
        json_node_unref(jn);
        sv_proto_node_free(node);
        count++;
        if (buf->len > 64 * 1024)
            ok = flush_gstring(fp, buf, wpath, error);
    }
    if (local) {
        g_propagate_error(error, local);
        ok = FALSE;
    }
    if (ok && interrupt && *interrupt)
        ok = sv_proto__interrupted(out, count, error);
    if (ok) {
        g_string_append(buf, count ? "\n ]\n}\n" : "]\n}\n");
        ok = flush_gstring(fp, buf, wpath, error);
    }
    int flush_rc = fflush(fp);
    int close_rc = fclose(fp);
    if (ok && (flush_rc != 0 || close_rc != 0)) {
        g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_IO, "cannot write: %s: %s", wpath,
                    g_strerror(errno));
        ok = FALSE;
    }
    if (ok && tmp && g_rename(tmp, out) != 0) {
        g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_IO, "cannot rename %s to %s: %s", tmp,
                    out, g_strerror(errno));
        ok = FALSE;
    }
    if (!ok && tmp)
        g_unlink(tmp);
    if (ok && stats) {
        stats->nodes = count;
        sv_proto_reader_dangling(r, &stats->data_dangling, &stats->ctrl_dangling);
    }
    return ok;
}
