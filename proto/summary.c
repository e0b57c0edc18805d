/* One streaming pass over an ET file collecting what `servesim inspect` prints. */
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "proto/proto_internal.h"

/* Oneof member name of an attribute ("int64_val"), "none" when unset. */
static const char *attr_kind(const ChakraProtoMsg__AttributeProto *a)
{
    const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field(
        &chakra_proto_msg__attribute_proto__descriptor, (unsigned)a->value_case);
    return fd ? fd->name : "none";
}

static void count_attr(GHashTable *counts, const ChakraProtoMsg__AttributeProto *a)
{
    char *key = g_strdup_printf("%s:%s", a->name ? a->name : "", attr_kind(a));
    uint64_t *c = g_hash_table_lookup(counts, key);
    if (c) {
        (*c)++;
        g_free(key);
    } else {
        c = g_new(uint64_t, 1);
        *c = 1;
        g_hash_table_insert(counts, key, c);
    }
}

struct sv_proto_summary *sv_proto_summary_new(const char *path, GError **error)
{
    g_autoptr(sv_proto_reader) r = sv_proto_reader_open(path, error);
    if (!r)
        return NULL;
    /* Count dangling references without failing: inspect reports them. */
    sv_proto_reader_set_dep_check(r, SV_PROTO_DEP_COUNT);
    struct sv_proto_summary *s = g_new0(struct sv_proto_summary, 1);
    s->path = g_strdup(path);
    s->gzip = sv_proto_reader_is_gzip(r);
    const ChakraProtoMsg__GlobalMetadata *md = sv_proto_reader_metadata(r);
    s->version = g_strdup(md->version ? md->version : "");
    size_t md_len;
    const uint8_t *md_raw = sv_proto_reader_metadata_raw(r, &md_len);
    s->metadata = chakra_proto_msg__global_metadata__unpack(NULL, md_len, md_raw);
    SV_ASSERT(s->metadata != NULL); /* the reader already decoded these bytes */
    s->attr_counts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    s->ids_increasing = TRUE;

    ChakraProtoMsg__Node *n;
    GError *local = NULL;
    uint64_t prev_id = 0;
    while (sv_proto_reader_next(r, &n, &local)) {
        if ((size_t)n->type < G_N_ELEMENTS(s->nodes_by_type))
            s->nodes_by_type[n->type]++;
        else
            s->other_type_nodes++;
        if (n->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE) {
            int64_t ct;
            if (sv_proto_attr_int(sv_proto_attr_find(n, "comm_type"), &ct) && ct >= 0 &&
                (uint64_t)ct < G_N_ELEMENTS(s->comm_by_type))
                s->comm_by_type[ct]++;
            else
                s->comm_other++;
        }
        s->data_deps += n->n_data_deps;
        s->ctrl_deps += n->n_ctrl_deps;
        if (s->node_count == 0) {
            s->id_min = s->id_max = n->id;
        } else {
            s->id_min = MIN(s->id_min, n->id);
            s->id_max = MAX(s->id_max, n->id);
            if (n->id <= prev_id)
                s->ids_increasing = FALSE;
        }
        prev_id = n->id;
        if (n->duration_micros) {
            s->nodes_with_duration++;
            s->sum_duration_micros += n->duration_micros;
        }
        for (size_t i = 0; i < n->n_attr; i++)
            count_attr(s->attr_counts, n->attr[i]);
        s->node_count++;
        sv_proto_node_free(n);
    }
    if (local) {
        g_propagate_error(error, local);
        sv_proto_summary_free(s);
        return NULL;
    }
    sv_proto_reader_dangling(r, &s->data_dangling, &s->ctrl_dangling);
    s->stream_bytes = sv_proto_reader_bytes(r);
    return s;
}

void sv_proto_summary_free(struct sv_proto_summary *s)
{
    if (!s)
        return;
    g_free(s->path);
    g_free(s->version);
    if (s->metadata)
        chakra_proto_msg__global_metadata__free_unpacked(s->metadata, NULL);
    if (s->attr_counts)
        g_hash_table_unref(s->attr_counts);
    g_free(s);
}

/* Keys in byte order: output must not depend on hash-table iteration order. */
static int cmp_str_ptr(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static GPtrArray *sorted_attr_keys(const struct sv_proto_summary *s)
{
    GPtrArray *keys = g_ptr_array_new();
    GHashTableIter it;
    gpointer k;
    g_hash_table_iter_init(&it, s->attr_counts);
    while (g_hash_table_iter_next(&it, &k, NULL))
        g_ptr_array_add(keys, k);
    g_ptr_array_sort(keys, cmp_str_ptr);
    return keys;
}

/* A JSON number; a value above INT64_MAX (only node ids can be) is written as a decimal
 * string, as protobuf's JSON mapping does for every 64-bit integer. */
static JsonNode *u64_node(uint64_t v)
{
    JsonNode *n = json_node_new(JSON_NODE_VALUE);
    if (v > INT64_MAX) {
        char buf[24];
        g_snprintf(buf, sizeof(buf), "%" G_GUINT64_FORMAT, (guint64)v);
        json_node_set_string(n, buf);
    } else {
        json_node_set_int(n, (int64_t)v);
    }
    return n;
}

JsonNode *sv_proto_summary_to_json(const struct sv_proto_summary *s)
{
    JsonObject *o = json_object_new();
    json_object_set_string_member(o, "file", s->path);
    json_object_set_boolean_member(o, "gzip", s->gzip);
    json_object_set_member(o, "stream_bytes", u64_node(s->stream_bytes));
    json_object_set_member(o, "global_metadata", sv_proto_metadata_to_json(s->metadata));
    json_object_set_member(o, "node_count", u64_node(s->node_count));
    JsonObject *types = json_object_new();
    for (size_t t = 0; t < G_N_ELEMENTS(s->nodes_by_type); t++)
        if (s->nodes_by_type[t])
            json_object_set_member(types, sv_proto_node_type_name((int)t),
                                   u64_node(s->nodes_by_type[t]));
    if (s->other_type_nodes)
        json_object_set_member(types, "other", u64_node(s->other_type_nodes));
    json_object_set_object_member(o, "node_types", types);
    JsonObject *comm = json_object_new();
    for (size_t t = 0; t < G_N_ELEMENTS(s->comm_by_type); t++)
        if (s->comm_by_type[t])
            json_object_set_member(comm, sv_proto_comm_type_name((int64_t)t),
                                   u64_node(s->comm_by_type[t]));
    if (s->comm_other)
        json_object_set_member(comm, "other", u64_node(s->comm_other));
    json_object_set_object_member(o, "comm_types", comm);
    if (s->node_count) {
        json_object_set_member(o, "id_min", u64_node(s->id_min));
        json_object_set_member(o, "id_max", u64_node(s->id_max));
    }
    json_object_set_boolean_member(o, "ids_strictly_increasing_in_file", s->ids_increasing);
    json_object_set_member(o, "data_deps_total", u64_node(s->data_deps));
    json_object_set_member(o, "ctrl_deps_total", u64_node(s->ctrl_deps));
    json_object_set_member(o, "data_deps_to_missing_nodes", u64_node(s->data_dangling));
    json_object_set_member(o, "ctrl_deps_to_missing_nodes", u64_node(s->ctrl_dangling));
    json_object_set_member(o, "nodes_with_duration_micros", u64_node(s->nodes_with_duration));
    json_object_set_member(o, "sum_duration_micros", u64_node(s->sum_duration_micros));
    JsonObject *attrs = json_object_new();
    g_autoptr(GPtrArray) keys = sorted_attr_keys(s);
    for (guint i = 0; i < keys->len; i++) {
        const uint64_t *c = g_hash_table_lookup(s->attr_counts, keys->pdata[i]);
        json_object_set_member(attrs, keys->pdata[i], u64_node(*c));
    }
    json_object_set_object_member(o, "attr_name_and_value_kind_counts", attrs);
    JsonNode *n = json_node_new(JSON_NODE_OBJECT);
    json_node_take_object(n, o);
    return n;
}

static void append_avg(GString *out, const char *what, uint64_t total, uint64_t nodes)
{
    g_string_append_printf(out, "  %-10s %" G_GUINT64_FORMAT " total", what, (guint64)total);
    if (nodes)
        g_string_append_printf(out, ", %.2f per node", (double)total / (double)nodes);
    g_string_append_c(out, '\n');
}

char *sv_proto_summary_to_text(const struct sv_proto_summary *s)
{
    GString *out = g_string_new(NULL);
    g_string_append_printf(out, "file: %s%s (%" G_GUINT64_FORMAT " bytes decompressed)\n", s->path,
                           s->gzip ? " (gzip)" : "", (guint64)s->stream_bytes);
    g_string_append_printf(out, "metadata: version \"%s\", %zu attrs\n", s->version,
                           s->metadata->n_attr);
    for (size_t i = 0; i < s->metadata->n_attr; i++) {
        const ChakraProtoMsg__AttributeProto *a = s->metadata->attr[i];
        g_autoptr(JsonNode) j = sv_proto_metadata_to_json(s->metadata);
        JsonArray *arr = json_object_get_array_member(json_node_get_object(j), "attr");
        JsonObject *ao = json_array_get_object_element(arr, (guint)i);
        const char *kind = attr_kind(a);
        g_autoptr(GString) v = g_string_new(NULL);
        if (json_object_has_member(ao, kind))
            sv_proto__json_write(v, json_object_get_member(ao, kind), 0);
        /* Long values (the text converter stores its whole input) are cut for the summary. */
        if (v->len > 60) {
            g_string_truncate(v, 57);
            g_string_append(v, "...");
        }
        g_string_append_printf(out, "  %s (%s): %s\n", a->name, kind, v->str);
    }
    g_string_append_printf(out, "nodes: %" G_GUINT64_FORMAT "\n", (guint64)s->node_count);
    for (size_t t = 0; t < G_N_ELEMENTS(s->nodes_by_type); t++)
        if (s->nodes_by_type[t])
            g_string_append_printf(out, "  %-15s %" G_GUINT64_FORMAT "\n",
                                   sv_proto_node_type_name((int)t), (guint64)s->nodes_by_type[t]);
    if (s->other_type_nodes)
        g_string_append_printf(out, "  %-15s %" G_GUINT64_FORMAT "\n", "(unknown type)",
                               (guint64)s->other_type_nodes);
    if (s->node_count)
        g_string_append_printf(out, "ids: %" G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT "%s\n",
                               (guint64)s->id_min, (guint64)s->id_max,
                               s->ids_increasing ? " (strictly increasing in file)" : "");
    uint64_t ncomm = s->comm_other;
    for (size_t t = 0; t < G_N_ELEMENTS(s->comm_by_type); t++)
        ncomm += s->comm_by_type[t];
    if (ncomm) {
        g_string_append(out, "collectives (comm_type):\n");
        for (size_t t = 0; t < G_N_ELEMENTS(s->comm_by_type); t++)
            if (s->comm_by_type[t])
                g_string_append_printf(out, "  %-20s %" G_GUINT64_FORMAT "\n",
                                       sv_proto_comm_type_name((int64_t)t),
                                       (guint64)s->comm_by_type[t]);
        if (s->comm_other)
            g_string_append_printf(out, "  %-20s %" G_GUINT64_FORMAT "\n",
                                   "(comm_type absent or not an integer)", (guint64)s->comm_other);
    }
    g_string_append(out, "dependencies:\n");
    append_avg(out, "data_deps", s->data_deps, s->node_count);
    append_avg(out, "ctrl_deps", s->ctrl_deps, s->node_count);
    g_string_append_printf(out,
                           "  dangling (parent id not in file): %" G_GUINT64_FORMAT
                           " data_deps, %" G_GUINT64_FORMAT " ctrl_deps\n",
                           (guint64)s->data_dangling, (guint64)s->ctrl_dangling);
    g_string_append_printf(out,
                           "duration_micros: %" G_GUINT64_FORMAT " total over %" G_GUINT64_FORMAT
                           " nodes with a duration\n",
                           (guint64)s->sum_duration_micros, (guint64)s->nodes_with_duration);
    g_autoptr(GPtrArray) keys = sorted_attr_keys(s);
    g_string_append_printf(out, "attributes (name:kind count): %u distinct\n", keys->len);
    for (guint i = 0; i < keys->len; i++) {
        const uint64_t *c = g_hash_table_lookup(s->attr_counts, keys->pdata[i]);
        g_string_append_printf(out, "  %-32s %" G_GUINT64_FORMAT "\n", (char *)keys->pdata[i],
                               (guint64)*c);
    }
    return g_string_free(out, FALSE);
}
