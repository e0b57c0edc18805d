/* DAG <-> Chakra ET (../shared/interop/CHAKRA_ET.md 1.1-1.4).
 *
 * Loading streams the file through the proto reader, one node at a time. Fields the DAG models
 * (id, name, type, deps, duration, the attributes of CHAKRA_ET.md 1.3) go into the node; everything
 * else the file holds for the node (start_time_micros, inputs, outputs and every attribute, in
 * order) is kept as one packed ChakraProtoMsg.Node in the DAG's string chunk, so that export can
 * rebuild the node with nothing lost. */
#include "dag/dag_internal.h"

#include <stdlib.h>
#include <string.h>

typedef ChakraProtoMsg__AttributeProto attr_t;

/* servesim's own attributes (SV_DAG_ATTR_KIND, SV_DAG_ATTR_DURATION_NS in dag_internal.h): the
 * DAG kind for PIM/LOGICAL, and durations that are not whole microseconds (duration_micros alone
 * truncates them). Written on save; the kind is consumed on load, the duration only with
 * sv_dag_et_opts.precise_durations (else it is kept like any other attribute, and the node runs
 * duration_micros x 1000 ns as in ASTRA-sim and Chakra). */

/* The modelled attributes, in SV_DAG_HAS_* bit order (names from CHAKRA_ET.md 1.3). */
static const char *const param_names[] = {
    "comm_type",   "comm_size", "comm_src",  "comm_dst",     "comm_tag", "comm_priority",
    "tensor_size", "num_ops",   "is_cpu_op", "involved_dim", "pg_name",
};
#define N_PARAMS ((int)G_N_ELEMENTS(param_names))

static int param_bit(const char *name)
{
    for (int i = 0; i < N_PARAMS; i++)
        if (strcmp(name, param_names[i]) == 0)
            return i;
    return -1;
}

static gboolean int32_of(const attr_t *a, int32_t *out)
{
    int64_t v;
    if (!sv_proto_attr_int(a, &v) || v < INT32_MIN || v > INT32_MAX)
        return FALSE;
    *out = (int32_t)v;
    return TRUE;
}

/* Parse attribute `a` (named param_names[bit]) into p; TRUE when it had a usable kind. */
static gboolean param_parse(const attr_t *a, int bit, struct sv_dag_params *p)
{
    int64_t v;
    gboolean b;
    switch (1u << bit) {
    case SV_DAG_HAS_COMM_TYPE:
        return int32_of(a, &p->comm_type);
    case SV_DAG_HAS_COMM_SIZE:
        return sv_proto_attr_uint(a, &p->comm_size_bytes);
    case SV_DAG_HAS_COMM_SRC:
        return int32_of(a, &p->comm_src);
    case SV_DAG_HAS_COMM_DST:
        return int32_of(a, &p->comm_dst);
    case SV_DAG_HAS_COMM_TAG:
        return int32_of(a, &p->comm_tag);
    case SV_DAG_HAS_COMM_PRIORITY:
        return int32_of(a, &p->comm_priority);
    case SV_DAG_HAS_TENSOR_SIZE:
        return sv_proto_attr_uint(a, &p->tensor_size_bytes);
    case SV_DAG_HAS_NUM_OPS:
        if (!sv_proto_attr_int(a, &v))
            return FALSE;
        p->num_ops = v;
        return TRUE;
    case SV_DAG_HAS_IS_CPU_OP:
        if (!sv_proto_attr_bool(a, &b))
            return FALSE;
        p->is_cpu_op = b;
        return TRUE;
    case SV_DAG_HAS_INVOLVED_DIMS: {
        g_autofree gboolean *vals = NULL;
        size_t n = 0;
        if (!sv_proto_attr_bool_list(a, &vals, &n) || n > SV_DAG_MAX_DIMS)
            return FALSE;
        p->involved_dims = 0;
        for (size_t i = 0; i < n; i++)
            if (vals[i])
                p->involved_dims |= 1u << i;
        p->n_involved_dims = (uint32_t)n;
        return TRUE;
    }
    case SV_DAG_HAS_PG_NAME:
        return sv_proto_attr_string(a, &p->pg_name);
    default:
        return FALSE;
    }
}

/* The documented ranges of the attributes a replay computes with (docs/chakra.md,
 * docs/reliability.md "Numeric ranges"): byte counts up to SV_RANGE_BYTES_MAX, num_ops up to 2^62
 * and non-negative. A value outside is an error naming the node, not a wrapped time. NULL when
 * all are in range, else what is wrong (g_free). */
static char *params_out_of_range(const struct sv_dag_params *p)
{
    static const struct {
        uint32_t bit;
        const char *name;
    } sizes[] = {{SV_DAG_HAS_COMM_SIZE, "comm_size"}, {SV_DAG_HAS_TENSOR_SIZE, "tensor_size"}};
    for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
        uint64_t v =
            sizes[i].bit == SV_DAG_HAS_COMM_SIZE ? p->comm_size_bytes : p->tensor_size_bytes;
        if ((p->has & sizes[i].bit) && v > (uint64_t)SV_RANGE_BYTES_MAX)
            return g_strdup_printf("%s: %" G_GUINT64_FORMAT
                                   " is above the maximum %" G_GINT64_FORMAT
                                   " (range [0, %" G_GINT64_FORMAT "] bytes)",
                                   sizes[i].name, v, SV_RANGE_BYTES_MAX, SV_RANGE_BYTES_MAX);
    }
    GError *e = NULL;
    if ((p->has & SV_DAG_HAS_NUM_OPS) &&
        !sv_range_check_int("num_ops", p->num_ops, SV_RANGE_I(0, INT64_C(1) << 62, NULL), &e)) {
        char *why = g_strdup(e->message);
        g_error_free(e);
        return why;
    }
    return NULL;
}

struct dep_rec {
    uint64_t parent;
    uint32_t child;
    uint32_t kind;
};

/* Ignored dangling deps are no edges, but export writes them back (after the node's resolved
 * deps of the same kind), so a load -> save keeps the file's dependency lists. They are stored in
 * the node's kept-fields message. `dangling` is in file order, grouped by child. */
static void keep_dangling(sv_dag *dag, const GArray *dangling)
{
    GArray *dd = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    GArray *cd = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    for (guint i = 0; i < dangling->len;) {
        uint32_t child = g_array_index(dangling, struct dep_rec, i).child;
        g_array_set_size(dd, 0);
        g_array_set_size(cd, 0);
        for (; i < dangling->len && g_array_index(dangling, struct dep_rec, i).child == child;
             i++) {
            const struct dep_rec *d = &g_array_index(dangling, struct dep_rec, i);
            g_array_append_val(d->kind == SV_DAG_EDGE_CTRL ? cd : dd, d->parent);
        }
        struct sv_dag_nrt *r = sv_dag__nrt(dag, child);
        ChakraProtoMsg__Node *x = NULL;
        if (r->extra) {
            x = chakra_proto_msg__node__unpack(NULL, r->extra_len, r->extra);
            SV_ASSERT(x != NULL);
        }
        ChakraProtoMsg__Node y = CHAKRA_PROTO_MSG__NODE__INIT;
        if (x)
            y = *x;
        y.n_data_deps = dd->len;
        y.data_deps = (uint64_t *)(void *)dd->data;
        y.n_ctrl_deps = cd->len;
        y.ctrl_deps = (uint64_t *)(void *)cd->data;
        size_t len = chakra_proto_msg__node__get_packed_size(&y);
        g_autofree uint8_t *buf = g_malloc(len ? len : 1);
        chakra_proto_msg__node__pack(&y, buf);
        r->extra = (const uint8_t *)g_string_chunk_insert_len(dag->strings, (const gchar *)buf,
                                                              (gssize)len);
        r->extra_len = (uint32_t)len;
        if (x)
            chakra_proto_msg__node__free_unpacked(x, NULL);
    }
    g_array_unref(dd);
    g_array_unref(cd);
}

sv_dag *sv_dag_load_et(const char *path, const struct sv_dag_et_opts *opts, GError **error)
{
    struct sv_dag_et_opts o = {0};
    if (opts)
        o = *opts;
    g_autoptr(sv_proto_reader) rd = sv_proto_reader_open(path, error);
    if (!rd)
        return NULL;
    g_autoptr(sv_dag) dag = sv_dag_new();
    size_t md_len = 0;
    const uint8_t *md = sv_proto_reader_metadata_raw(rd, &md_len);
    dag->et_metadata = g_memdup2(md ? md : (const uint8_t *)"", md_len ? md_len : 1);
    dag->et_metadata_len = md_len;

    g_autoptr(GArray) deps = g_array_new(FALSE, FALSE, sizeof(struct dep_rec));
    g_autofree attr_t **kept = NULL;
    size_t kept_cap = 0;
    GByteArray *buf = g_byte_array_new();
    ChakraProtoMsg__Node *et = NULL;
    GError *err = NULL;
    gboolean ok = TRUE;
    while (ok && sv_proto_reader_next(rd, &et, &err)) {
        uint64_t msg = sv_proto_reader_index(rd);
        if ((int)et->type < 0 || et->type > CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE) {
            g_set_error(&err, SV_DAG_ERROR, SV_DAG_ERROR_INVALID,
                        "unknown node type %d: %s: node %" G_GUINT64_FORMAT
                        " (message %" G_GUINT64_FORMAT ")",
                        (int)et->type, path, et->id, msg);
            ok = FALSE;
            break;
        }
        struct sv_dag_node_cfg cfg = {
            .id = et->id,
            .name = et->name,
            .kind = (sv_dag_kind)et->type,
            .device = o.device,
        };
        /* a duration ends within the engine's horizon (docs/reliability.md) */
        if (et->duration_micros > (uint64_t)(SV_ENGINE_HORIZON / SV_NS_PER_US)) {
            g_set_error(&err, SV_DAG_ERROR, SV_DAG_ERROR_INVALID,
                        "duration_micros %" G_GUINT64_FORMAT
                        " is above the maximum %" G_GINT64_FORMAT
                        " (the engine's horizon, about 9.1 years): %s: node %" G_GUINT64_FORMAT
                        " (message %" G_GUINT64_FORMAT ")",
                        et->duration_micros, SV_ENGINE_HORIZON / SV_NS_PER_US, path, et->id, msg);
            ok = FALSE;
            break;
        }
        /* CHAKRA_ET.md 1.5: the replay runtime is duration_micros * 1000 ns (ASTRA-sim and
         * Chakra's tools read nothing finer; sv_duration_ns replaces it on request only). */
        cfg.duration_ns = (sv_time)et->duration_micros * SV_NS_PER_US;

        if (et->n_attr > kept_cap) {
            kept_cap = et->n_attr;
            g_free(kept);
            kept = g_new(attr_t *, kept_cap);
        }
        size_t n_kept = 0;
        uint32_t seen = 0;
        gboolean seen_kind = FALSE, seen_dur = FALSE;
        for (size_t i = 0; i < et->n_attr; i++) {
            attr_t *a = et->attr[i];
            const char *nm = a->name ? a->name : "";
            const char *s;
            int64_t v;
            /* First match wins (ASTRA-sim); later duplicates are kept verbatim. */
            if (!seen_kind && strcmp(nm, SV_DAG_ATTR_KIND) == 0 && sv_proto_attr_string(a, &s) &&
                (strcmp(s, "pim") == 0 || strcmp(s, "logical") == 0)) {
                seen_kind = TRUE;
                cfg.kind = s[0] == 'p' ? SV_DAG_KIND_PIM : SV_DAG_KIND_LOGICAL;
                continue;
            }
            if (o.precise_durations && !seen_dur && strcmp(nm, SV_DAG_ATTR_DURATION_NS) == 0 &&
                sv_proto_attr_int(a, &v) && v >= 0 &&
                v / SV_NS_PER_US == (int64_t)et->duration_micros) {
                seen_dur = TRUE;
                cfg.duration_ns = v;
                continue;
            }
            int bit = param_bit(nm);
            if (bit >= 0 && !(seen & (1u << bit))) {
                seen |= 1u << bit;
                if (param_parse(a, bit, &cfg.p))
                    cfg.p.has |= 1u << bit;
            }
            kept[n_kept++] = a;
        }
        char *why = cfg.p.has ? params_out_of_range(&cfg.p) : NULL;
        if (why) {
            g_set_error(&err, SV_DAG_ERROR, SV_DAG_ERROR_INVALID,
                        "%s: %s: node %" G_GUINT64_FORMAT " (message %" G_GUINT64_FORMAT ")", why,
                        path, et->id, msg);
            g_free(why);
            ok = FALSE;
            break;
        }
        sv_dag_node *node = sv_dag_node_add(dag, &cfg, &err);
        if (!node) {
            g_prefix_error(&err, "%s: message %" G_GUINT64_FORMAT ": ", path, msg);
            ok = FALSE;
            break;
        }
        struct sv_dag_nrt *r = sv_dag__nrt(dag, node->index);
        r->et_has = (uint16_t)cfg.p.has;
        if (n_kept || et->start_time_micros || et->inputs || et->outputs) {
            ChakraProtoMsg__Node x = CHAKRA_PROTO_MSG__NODE__INIT;
            x.start_time_micros = et->start_time_micros;
            x.inputs = et->inputs;
            x.outputs = et->outputs;
            x.n_attr = n_kept;
            x.attr = kept;
            size_t len = chakra_proto_msg__node__get_packed_size(&x);
            g_byte_array_set_size(buf, (guint)len);
            chakra_proto_msg__node__pack(&x, buf->data);
            r->extra = (const uint8_t *)g_string_chunk_insert_len(
                dag->strings, (const gchar *)buf->data, (gssize)len);
            r->extra_len = (uint32_t)len;
        }
        for (size_t i = 0; i < et->n_data_deps; i++) {
            struct dep_rec d = {et->data_deps[i], node->index, SV_DAG_EDGE_DATA};
            g_array_append_val(deps, d);
        }
        for (size_t i = 0; i < et->n_ctrl_deps; i++) {
            struct dep_rec d = {et->ctrl_deps[i], node->index, SV_DAG_EDGE_CTRL};
            g_array_append_val(deps, d);
        }
        sv_proto_node_free(et);
        et = NULL;
    }
    sv_proto_node_free(et);
    g_byte_array_unref(buf);
    if (err) {
        g_propagate_error(error, err);
        return NULL;
    }
    /* Parents may come after their children in the file (CHAKRA_ET.md 1.2), so edges are linked
     * once every node is known, in file order. */
    g_autoptr(GArray) dangling = g_array_new(FALSE, FALSE, sizeof(struct dep_rec));
    for (guint i = 0; i < deps->len; i++) {
        const struct dep_rec *d = &g_array_index(deps, struct dep_rec, i);
        uint32_t p = sv_dag__lookup(dag, d->parent);
        if (p == SV_DAG_NONE) {
            if ((d->kind == SV_DAG_EDGE_CTRL && o.ignore_dangling_ctrl) ||
                (d->kind == SV_DAG_EDGE_DATA && o.ignore_dangling_data)) {
                g_array_append_val(dangling, *d);
                continue;
            }
            const sv_dag_node *c = sv_dag__node(dag, d->child);
            g_set_error(error, SV_DAG_ERROR, SV_DAG_ERROR_NOT_FOUND,
                        "%s dependency on absent node %" G_GUINT64_FORMAT
                        ": %s: node %" G_GUINT64_FORMAT " \"%s\" (message %u)",
                        d->kind == SV_DAG_EDGE_CTRL ? "ctrl" : "data", d->parent, path, c->id,
                        c->name, d->child + 1);
            return NULL;
        }
        sv_dag__edge_link(dag, p, d->child, (sv_dag_edge_kind)d->kind);
    }
    keep_dangling(dag, dangling);
    return g_steal_pointer(&dag);
}

/* ---- export ------------------------------------------------------------------------------- */

/* Store an integer in an attribute keeping its value kind when the value fits it. */
static gboolean attr_store_int(attr_t *a, gboolean neg, uint64_t mag)
{
    int64_t s = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    gboolean fits64 = neg ? mag <= (uint64_t)INT64_MAX + 1 : mag <= (uint64_t)INT64_MAX;
    gboolean fits32 = fits64 && s >= INT32_MIN && s <= INT32_MAX;
    switch (a->value_case) {
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL:
        if (!fits32)
            return FALSE;
        a->int32_val = (int32_t)s;
        return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT32_VAL:
        if (!fits32)
            return FALSE;
        a->sint32_val = (int32_t)s;
        return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED32_VAL:
        if (!fits32)
            return FALSE;
        a->sfixed32_val = (int32_t)s;
        return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL:
        if (!fits64)
            return FALSE;
        a->int64_val = s;
        return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT64_VAL:
        if (!fits64)
            return FALSE;
        a->sint64_val = s;
        return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED64_VAL:
        if (!fits64)
            return FALSE;
        a->sfixed64_val = s;
        return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_VAL:
        if (neg || mag > UINT32_MAX)
            return FALSE;
        a->uint32_val = (uint32_t)mag;
        return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED32_VAL:
        if (neg || mag > UINT32_MAX)
            return FALSE;
        a->fixed32_val = (uint32_t)mag;
        return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL:
        if (neg)
            return FALSE;
        a->uint64_val = mag;
        return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED64_VAL:
        if (neg)
            return FALSE;
        a->fixed64_val = mag;
        return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL:
        if (neg || mag > 1)
            return FALSE;
        a->bool_val = mag != 0;
        return TRUE;
    default:
        return FALSE;
    }
}

static void int_parts(int64_t v, gboolean *neg, uint64_t *mag)
{
    *neg = v < 0;
    *mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

/* A fresh attribute for parameter `bit` with the kind CHAKRA_ET.md 1.3 recommends. */
static attr_t *param_new(int bit, const struct sv_dag_params *p)
{
    const char *nm = param_names[bit];
    switch (1u << bit) {
    case SV_DAG_HAS_COMM_TYPE:
        return sv_proto_attr_new_int64(nm, p->comm_type);
    case SV_DAG_HAS_COMM_SIZE:
        return p->comm_size_bytes > (uint64_t)INT64_MAX
                   ? sv_proto_attr_new_uint64(nm, p->comm_size_bytes)
                   : sv_proto_attr_new_int64(nm, (int64_t)p->comm_size_bytes);
    case SV_DAG_HAS_COMM_SRC:
        return sv_proto_attr_new_int32(nm, p->comm_src);
    case SV_DAG_HAS_COMM_DST:
        return sv_proto_attr_new_int32(nm, p->comm_dst);
    case SV_DAG_HAS_COMM_TAG:
        return sv_proto_attr_new_int32(nm, p->comm_tag);
    case SV_DAG_HAS_COMM_PRIORITY:
        return sv_proto_attr_new_int32(nm, p->comm_priority);
    case SV_DAG_HAS_TENSOR_SIZE:
        return sv_proto_attr_new_uint64(nm, p->tensor_size_bytes);
    case SV_DAG_HAS_NUM_OPS:
        return sv_proto_attr_new_int64(nm, p->num_ops);
    case SV_DAG_HAS_IS_CPU_OP:
        return sv_proto_attr_new_bool(nm, p->is_cpu_op);
    case SV_DAG_HAS_INVOLVED_DIMS: {
        gboolean vals[SV_DAG_MAX_DIMS];
        uint32_t n = MIN(p->n_involved_dims, (uint32_t)SV_DAG_MAX_DIMS);
        for (uint32_t i = 0; i < n; i++)
            vals[i] = (p->involved_dims >> i) & 1u;
        return sv_proto_attr_new_bool_list(nm, vals, n);
    }
    case SV_DAG_HAS_PG_NAME:
        return sv_proto_attr_new_string(nm, p->pg_name ? p->pg_name : "");
    default:
        g_assert_not_reached();
    }
}

ChakraProtoMsg__AttributeProto *sv_dag__et_param_new(int bit, const struct sv_dag_params *p)
{
    return param_new(bit, p);
}

/* Bring original attribute `a` (the first named param_names[bit]) to the node's current value:
 * unchanged values keep the attribute byte for byte; a changed integer keeps its value kind when it
 * fits; anything else is replaced by a fresh attribute. Returns the attribute to emit. */
static attr_t *param_update(attr_t *a, int bit, const struct sv_dag_params *cur)
{
    struct sv_dag_params old = {0};
    gboolean parsed = param_parse(a, bit, &old);
    gboolean neg;
    uint64_t mag;
    switch (1u << bit) {
    case SV_DAG_HAS_COMM_TYPE:
    case SV_DAG_HAS_COMM_SRC:
    case SV_DAG_HAS_COMM_DST:
    case SV_DAG_HAS_COMM_TAG:
    case SV_DAG_HAS_COMM_PRIORITY: {
        const int32_t *o, *c;
        switch (1u << bit) {
        case SV_DAG_HAS_COMM_TYPE:
            o = &old.comm_type, c = &cur->comm_type;
            break;
        case SV_DAG_HAS_COMM_SRC:
            o = &old.comm_src, c = &cur->comm_src;
            break;
        case SV_DAG_HAS_COMM_DST:
            o = &old.comm_dst, c = &cur->comm_dst;
            break;
        case SV_DAG_HAS_COMM_TAG:
            o = &old.comm_tag, c = &cur->comm_tag;
            break;
        default:
            o = &old.comm_priority, c = &cur->comm_priority;
            break;
        }
        if (parsed && *o == *c)
            return a;
        int_parts(*c, &neg, &mag);
        break;
    }
    case SV_DAG_HAS_COMM_SIZE:
        if (parsed && old.comm_size_bytes == cur->comm_size_bytes)
            return a;
        neg = FALSE, mag = cur->comm_size_bytes;
        break;
    case SV_DAG_HAS_TENSOR_SIZE:
        if (parsed && old.tensor_size_bytes == cur->tensor_size_bytes)
            return a;
        neg = FALSE, mag = cur->tensor_size_bytes;
        break;
    case SV_DAG_HAS_NUM_OPS:
        if (parsed && old.num_ops == cur->num_ops)
            return a;
        int_parts(cur->num_ops, &neg, &mag);
        break;
    case SV_DAG_HAS_IS_CPU_OP:
        if (parsed && !old.is_cpu_op == !cur->is_cpu_op)
            return a;
        neg = FALSE, mag = cur->is_cpu_op ? 1 : 0;
        break;
    case SV_DAG_HAS_INVOLVED_DIMS:
        if (parsed && old.involved_dims == cur->involved_dims &&
            old.n_involved_dims == cur->n_involved_dims)
            return a;
        sv_proto_attr_free(a);
        return param_new(bit, cur);
    default: /* pg_name */
        if (parsed && g_strcmp0(old.pg_name, cur->pg_name) == 0)
            return a;
        sv_proto_attr_free(a);
        return param_new(bit, cur);
    }
    if (parsed && attr_store_int(a, neg, mag))
        return a;
    sv_proto_attr_free(a);
    return param_new(bit, cur);
}

static const sv_dag_node *et_parent_filter_dev(const sv_dag *dag, const struct sv_dag_edge *ed,
                                               int32_t only_device)
{
    const sv_dag_node *p = sv_dag__node(dag, ed->parent);
    return only_device < 0 || p->device == only_device ? p : NULL;
}

static ChakraProtoMsg__Node *node_to_et(const sv_dag *dag, const sv_dag_node *node,
                                        int32_t only_device)
{
    ChakraProtoMsg__NodeType type;
    switch (node->kind) {
    case SV_DAG_KIND_PIM:
        type = CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE;
        break;
    case SV_DAG_KIND_LOGICAL:
        type = CHAKRA_PROTO_MSG__NODE_TYPE__METADATA_NODE;
        break;
    default:
        type = (ChakraProtoMsg__NodeType)node->kind;
        break;
    }
    ChakraProtoMsg__Node *et = sv_proto_node_new(node->id, node->name, type);
    const struct sv_dag_nrt *r = sv_dag__nrt(dag, node->index);
    for (int k = 0; k < 2; k++) {
        for (uint32_t e = r->in_head; e != SV_DAG_NONE; e = sv_dag__edge(dag, e)->next_in) {
            const struct sv_dag_edge *ed = sv_dag__edge(dag, e);
            if (ed->kind != k)
                continue;
            const sv_dag_node *p = et_parent_filter_dev(dag, ed, only_device);
            if (!p)
                continue;
            if (k == SV_DAG_EDGE_DATA)
                sv_proto_node_add_data_dep(et, p->id);
            else
                sv_proto_node_add_ctrl_dep(et, p->id);
        }
    }
    et->duration_micros = (uint64_t)(node->duration_ns / SV_NS_PER_US);

    uint32_t seen = 0;
    /* The first kept sv_duration_ns (loaded without precise_durations) that agrees with the
     * node's whole microseconds: written back where the writer puts it, after sv_kind, so that
     * load -> save keeps servesim's own files byte for byte, unless the node now lasts a
     * fraction of a microsecond, whose exact value replaces it (a precise reader takes the
     * first agreeing attribute, so a stale one must not stay in front). */
    attr_t *kept_dur = NULL;
    if (r->extra) {
        ChakraProtoMsg__Node *x = chakra_proto_msg__node__unpack(NULL, r->extra_len, r->extra);
        SV_ASSERT(x != NULL); /* we packed it ourselves */
        for (size_t i = 0; i < x->n_data_deps; i++)
            sv_proto_node_add_data_dep(et, x->data_deps[i]);
        for (size_t i = 0; i < x->n_ctrl_deps; i++)
            sv_proto_node_add_ctrl_dep(et, x->ctrl_deps[i]);
        et->start_time_micros = x->start_time_micros;
        et->inputs = g_steal_pointer(&x->inputs);
        et->outputs = g_steal_pointer(&x->outputs);
        for (size_t i = 0; i < x->n_attr; i++) {
            attr_t *a = g_steal_pointer(&x->attr[i]);
            int64_t v;
            if (!kept_dur && a->name && strcmp(a->name, SV_DAG_ATTR_DURATION_NS) == 0 &&
                sv_proto_attr_int(a, &v) && v >= 0 &&
                v / SV_NS_PER_US == node->duration_ns / SV_NS_PER_US) {
                kept_dur = a;
                continue;
            }
            int bit = param_bit(a->name ? a->name : "");
            if (bit >= 0 && !(seen & (1u << bit))) {
                seen |= 1u << bit;
                if (node->p.has & (1u << bit)) {
                    a = param_update(a, bit, &node->p);
                } else if (r->et_has & (1u << bit)) {
                    sv_proto_attr_free(a); /* cleared since loading */
                    continue;
                }
            }
            sv_proto_node_add_attr(et, a);
        }
        chakra_proto_msg__node__free_unpacked(x, NULL);
    }
    for (int bit = 0; bit < N_PARAMS; bit++)
        if ((node->p.has & (1u << bit)) && !(seen & (1u << bit)))
            sv_proto_node_add_attr(et, param_new(bit, &node->p));
    if (node->kind == SV_DAG_KIND_PIM || node->kind == SV_DAG_KIND_LOGICAL)
        sv_proto_node_add_attr(
            et, sv_proto_attr_new_string(SV_DAG_ATTR_KIND,
                                         node->kind == SV_DAG_KIND_PIM ? "pim" : "logical"));
    if (node->duration_ns % SV_NS_PER_US != 0) {
        sv_proto_attr_free(kept_dur);
        sv_proto_node_add_attr(et,
                               sv_proto_attr_new_int64(SV_DAG_ATTR_DURATION_NS, node->duration_ns));
    } else if (kept_dur) {
        sv_proto_node_add_attr(et, kept_dur);
    }
    return et;
}

ChakraProtoMsg__Node *sv_dag_node_to_et(const sv_dag *dag, const sv_dag_node *node)
{
    return node_to_et(dag, node, -1);
}

static gboolean save(const sv_dag *dag, int32_t device, const char *path, GError **error)
{
    sv_proto_writer *w = sv_proto_writer_open(path, error);
    if (!w)
        return FALSE;
    gboolean ok;
    if (dag->et_metadata) {
        ok = sv_proto_writer_put_raw(w, dag->et_metadata, dag->et_metadata_len, error);
    } else {
        /* ASTRA-sim's microbenchmark ETs carry version "0.0.4"; nothing reads it (CHAKRA_ET.md
         * 1.2). */
        g_autoptr(ChakraProtoMsg__GlobalMetadata) md = sv_proto_metadata_new("0.0.4");
        ok = sv_proto_writer_put_metadata(w, md, error);
    }
    for (size_t i = 0; ok && i < dag->n_nodes; i++) {
        const sv_dag_node *n = sv_dag__node(dag, (uint32_t)i);
        if (device >= 0 && n->device != device)
            continue;
        g_autoptr(ChakraProtoMsg__Node) et = node_to_et(dag, n, device);
        ok = sv_proto_writer_put_node(w, et, error);
        if (!ok)
            g_prefix_error(error, "node %" G_GUINT64_FORMAT ": ", n->id);
    }
    if (!ok) {
        sv_proto_writer_abort(w);
        return FALSE;
    }
    return sv_proto_writer_close(w, error);
}

gboolean sv_dag_save_et(const sv_dag *dag, const char *path, GError **error)
{
    return save(dag, -1, path, error);
}

gboolean sv_dag_save_et_device(const sv_dag *dag, int32_t device, const char *path, GError **error)
{
    SV_ASSERT(device >= 0);
    return save(dag, device, path, error);
}
