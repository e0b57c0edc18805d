/* Attribute access with ASTRA-sim's semantics (CHAKRA_ET.md 1.3: look up by name, first match
 * wins; any scalar integer kind incl. bool converts to an integer; float is refused) and builders
 * for nodes/metadata that allocate exactly as protobuf-c's unpacker does (malloc'd strings and
 * arrays), so *_free_unpacked frees both. */
#include <stdlib.h>
#include <string.h>

#include "proto/proto_internal.h"

typedef ChakraProtoMsg__AttributeProto attr_t;

const attr_t *sv_proto_attr_find(const ChakraProtoMsg__Node *node, const char *name)
{
    SV_ASSERT(node != NULL && name != NULL);
    for (size_t i = 0; i < node->n_attr; i++) {
        if (node->attr[i]->name && strcmp(node->attr[i]->name, name) == 0)
            return node->attr[i];
    }
    return NULL;
}

/* The attribute's integer value as a signed 128-bit-free pair: *neg tells the sign so uint64
 * values above INT64_MAX stay exact. */
static gboolean attr_integer(const attr_t *a, gboolean *neg, uint64_t *mag)
{
    int64_t s;
    uint64_t u;
    switch (a->value_case) {
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL:
        s = a->int32_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL:
        s = a->int64_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT32_VAL:
        s = a->sint32_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT64_VAL:
        s = a->sint64_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED32_VAL:
        s = a->sfixed32_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED64_VAL:
        s = a->sfixed64_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_VAL:
        u = a->uint32_val;
        goto unsigned_val;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL:
        u = a->uint64_val;
        goto unsigned_val;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED32_VAL:
        u = a->fixed32_val;
        goto unsigned_val;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED64_VAL:
        u = a->fixed64_val;
        goto unsigned_val;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL:
        u = a->bool_val ? 1 : 0;
        goto unsigned_val;
    default:
        return FALSE;
    }
    *neg = s < 0;
    *mag = s < 0 ? (uint64_t)0 - (uint64_t)s : (uint64_t)s;
    return TRUE;
unsigned_val:
    *neg = FALSE;
    *mag = u;
    return TRUE;
}

gboolean sv_proto_attr_int(const attr_t *attr, int64_t *out)
{
    gboolean neg;
    uint64_t mag;
    if (!attr || !attr_integer(attr, &neg, &mag))
        return FALSE;
    if (neg) {
        *out = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
        return TRUE;
    }
    if (mag > INT64_MAX)
        return FALSE;
    *out = (int64_t)mag;
    return TRUE;
}

gboolean sv_proto_attr_uint(const attr_t *attr, uint64_t *out)
{
    gboolean neg;
    uint64_t mag;
    if (!attr || !attr_integer(attr, &neg, &mag) || (neg && mag != 0))
        return FALSE;
    *out = mag;
    return TRUE;
}

gboolean sv_proto_attr_bool(const attr_t *attr, gboolean *out)
{
    gboolean neg;
    uint64_t mag;
    if (!attr || !attr_integer(attr, &neg, &mag))
        return FALSE;
    *out = mag != 0;
    return TRUE;
}

gboolean sv_proto_attr_string(const attr_t *attr, const char **out)
{
    if (!attr || attr->value_case != CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL)
        return FALSE;
    *out = attr->string_val;
    return TRUE;
}

gboolean sv_proto_attr_bool_list(const attr_t *attr, gboolean **vals, size_t *n)
{
    if (!attr || attr->value_case != CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_LIST ||
        !attr->bool_list)
        return FALSE;
    size_t len = attr->bool_list->n_values;
    gboolean *v = g_new(gboolean, len ? len : 1);
    for (size_t i = 0; i < len; i++)
        v[i] = attr->bool_list->values[i] ? TRUE : FALSE;
    *vals = v;
    *n = len;
    return TRUE;
}

/* ---- builders --------------------------------------------------------------------------- */

static char *xstrdup(const char *s)
{
    char *d = strdup(s ? s : "");
    if (!d)
        g_error("out of memory");
    return d;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        g_error("out of memory");
    return p;
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        g_error("out of memory");
    return p;
}

static attr_t *attr_new(const char *name, ChakraProtoMsg__AttributeProto__ValueCase c)
{
    attr_t *a = xmalloc(sizeof(*a));
    chakra_proto_msg__attribute_proto__init(a);
    a->name = xstrdup(name);
    a->value_case = c;
    return a;
}

attr_t *sv_proto_attr_new_int64(const char *name, int64_t v)
{
    attr_t *a = attr_new(name, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL);
    a->int64_val = v;
    return a;
}

attr_t *sv_proto_attr_new_uint64(const char *name, uint64_t v)
{
    attr_t *a = attr_new(name, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL);
    a->uint64_val = v;
    return a;
}

attr_t *sv_proto_attr_new_int32(const char *name, int32_t v)
{
    attr_t *a = attr_new(name, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL);
    a->int32_val = v;
    return a;
}

attr_t *sv_proto_attr_new_bool(const char *name, gboolean v)
{
    attr_t *a = attr_new(name, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL);
    a->bool_val = v ? 1 : 0;
    return a;
}

attr_t *sv_proto_attr_new_string(const char *name, const char *v)
{
    attr_t *a = attr_new(name, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL);
    a->string_val = xstrdup(v);
    return a;
}

attr_t *sv_proto_attr_new_bool_list(const char *name, const gboolean *vals, size_t n)
{
    attr_t *a = attr_new(name, CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_LIST);
    ChakraProtoMsg__BoolList *l = xmalloc(sizeof(*l));
    chakra_proto_msg__bool_list__init(l);
    l->n_values = n;
    l->values = n ? xmalloc(n * sizeof(*l->values)) : NULL;
    for (size_t i = 0; i < n; i++)
        l->values[i] = vals[i] ? 1 : 0;
    a->bool_list = l;
    return a;
}

void sv_proto_attr_free(attr_t *attr)
{
    if (attr)
        chakra_proto_msg__attribute_proto__free_unpacked(attr, NULL);
}

ChakraProtoMsg__Node *sv_proto_node_new(uint64_t id, const char *name,
                                        ChakraProtoMsg__NodeType type)
{
    ChakraProtoMsg__Node *n = xmalloc(sizeof(*n));
    chakra_proto_msg__node__init(n);
    n->id = id;
    n->name = xstrdup(name);
    n->type = type;
    return n;
}

static void append_u64(uint64_t **arr, size_t *n, uint64_t v)
{
    *arr = xrealloc(*arr, (*n + 1) * sizeof(**arr));
    (*arr)[(*n)++] = v;
}

void sv_proto_node_add_data_dep(ChakraProtoMsg__Node *node, uint64_t parent_id)
{
    append_u64(&node->data_deps, &node->n_data_deps, parent_id);
}

void sv_proto_node_add_ctrl_dep(ChakraProtoMsg__Node *node, uint64_t parent_id)
{
    append_u64(&node->ctrl_deps, &node->n_ctrl_deps, parent_id);
}

void sv_proto_node_add_attr(ChakraProtoMsg__Node *node, attr_t *attr)
{
    node->attr = xrealloc(node->attr, (node->n_attr + 1) * sizeof(*node->attr));
    node->attr[node->n_attr++] = attr;
}

void sv_proto_node_free(ChakraProtoMsg__Node *node)
{
    if (node)
        chakra_proto_msg__node__free_unpacked(node, NULL);
}

ChakraProtoMsg__GlobalMetadata *sv_proto_metadata_new(const char *version)
{
    ChakraProtoMsg__GlobalMetadata *md = xmalloc(sizeof(*md));
    chakra_proto_msg__global_metadata__init(md);
    md->version = xstrdup(version);
    return md;
}

void sv_proto_metadata_free(ChakraProtoMsg__GlobalMetadata *md)
{
    if (md)
        chakra_proto_msg__global_metadata__free_unpacked(md, NULL);
}

static const char *const node_type_names[] = {
    "INVALID_NODE", "METADATA_NODE",  "MEM_LOAD_NODE",  "MEM_STORE_NODE",
    "COMP_NODE",    "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE",
};

static const char *const comm_type_names[] = {
    "ALL_REDUCE", "REDUCE",         "ALL_GATHER",           "GATHER",  "SCATTER", "BROADCAST",
    "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "BARRIER",
};

const char *sv_proto_node_type_name(int type)
{
    if (type < 0 || (size_t)type >= G_N_ELEMENTS(node_type_names))
        return NULL;
    return node_type_names[type];
}

const char *sv_proto_comm_type_name(int64_t comm_type)
{
    if (comm_type < 0 || (uint64_t)comm_type >= G_N_ELEMENTS(comm_type_names))
        return NULL;
    return comm_type_names[comm_type];
}
