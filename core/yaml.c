/* The one YAML reader (libyaml events): a whole document as a tree of maps, sequences and
 * scalars, each node with the line it starts on so that readers can name PATH:LINE in errors. */
#include <string.h>
#include <yaml.h>

#include "core/core.h"

void sv_yaml_free(sv_yaml_node *n)
{
    if (!n)
        return;
    g_free(n->scalar);
    if (n->keys)
        g_ptr_array_unref(n->keys);
    if (n->items)
        g_ptr_array_unref(n->items);
    g_free(n);
}

sv_yaml_node *sv_yaml_get(const sv_yaml_node *n, const char *key)
{
    if (!n || n->kind != SV_YAML_MAP)
        return NULL;
    for (guint i = 0; i < n->keys->len; i++)
        if (!strcmp(((sv_yaml_node *)n->keys->pdata[i])->scalar, key))
            return n->items->pdata[i];
    return NULL;
}

static sv_yaml_node *node_new(sv_yaml_kind kind, int line)
{
    sv_yaml_node *n = g_new0(sv_yaml_node, 1);
    n->kind = kind;
    n->line = line;
    if (kind != SV_YAML_SCALAR)
        n->items = g_ptr_array_new_with_free_func((GDestroyNotify)sv_yaml_free);
    if (kind == SV_YAML_MAP)
        n->keys = g_ptr_array_new_with_free_func((GDestroyNotify)sv_yaml_free);
    return n;
}

/* An alias stands for a copy of its anchored node, placed at the alias's line. */
static sv_yaml_node *node_copy(const sv_yaml_node *src, int line)
{
    sv_yaml_node *n = node_new(src->kind, line);
    n->scalar = g_strdup(src->scalar);
    for (guint i = 0; n->items && i < src->items->len; i++) {
        if (n->keys)
            g_ptr_array_add(n->keys, node_copy(src->keys->pdata[i], line));
        g_ptr_array_add(n->items, node_copy(src->items->pdata[i], line));
    }
    return n;
}

/* Nodes in a tree (a node and everything under it). */
static guint64 node_count(const sv_yaml_node *n)
{
    guint64 c = 1;
    for (guint i = 0; n->items && i < n->items->len; i++)
        c += node_count(n->items->pdata[i]) + (n->keys ? 1 : 0);
    return c;
}

typedef struct {
    yaml_parser_t parser;
    const char *path;
    GHashTable *anchors; /* name -> completed node (borrowed from the tree) */
    guint64 copied;      /* nodes made by aliases so far (SV_YAML_MAX_ALIAS_NODES) */
} yaml_reader;

static gboolean next_event(yaml_reader *r, yaml_event_t *ev, GError **error)
{
    if (yaml_parser_parse(&r->parser, ev))
        return TRUE;
    g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_PARSE, "%s:%zu:%zu: yaml syntax error: %s",
                r->path, r->parser.problem_mark.line + 1, r->parser.problem_mark.column + 1,
                r->parser.problem ? r->parser.problem : "unknown problem");
    return FALSE;
}

static void anchor(yaml_reader *r, const yaml_char_t *name, sv_yaml_node *n)
{
    if (name)
        g_hash_table_replace(r->anchors, g_strdup((const char *)name), n);
}

/* Recursive descent; `ev` is the node's first event, consumed here. */
static sv_yaml_node *read_node(yaml_reader *r, yaml_event_t *ev, GError **error)
{
    int line = (int)ev->start_mark.line + 1;
    sv_yaml_node *n = NULL;
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        n = node_new(SV_YAML_SCALAR, line);
        n->scalar = g_strndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
        anchor(r, ev->data.scalar.anchor, n);
        yaml_event_delete(ev);
        return n;
    case YAML_ALIAS_EVENT: {
        const sv_yaml_node *src =
            g_hash_table_lookup(r->anchors, (const char *)ev->data.alias.anchor);
        if (!src) /* also an alias inside its own anchor's node: trees have no cycles */
            g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_PARSE, "%s:%d: undefined alias *%s",
                        r->path, line, (const char *)ev->data.alias.anchor);
        /* Copies nest (an anchor's node made of aliases): ten lines of ten aliases each would
         * make 10^10 nodes from 300 bytes (a "billion laughs"). */
        else if ((r->copied += node_count(src)) > SV_YAML_MAX_ALIAS_NODES) {
            g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_PARSE,
                        "%s:%d: alias *%s: aliases expand to more than %d nodes", r->path, line,
                        (const char *)ev->data.alias.anchor, SV_YAML_MAX_ALIAS_NODES);
            src = NULL;
        }
        yaml_event_delete(ev);
        return src ? node_copy(src, line) : NULL;
    }
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT:
        break;
    default:
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_PARSE, "%s:%d: unexpected yaml event",
                    r->path, line);
        yaml_event_delete(ev);
        return NULL;
    }
    gboolean is_map = ev->type == YAML_MAPPING_START_EVENT;
    char *anchor_name = g_strdup(
        (const char *)(is_map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor));
    yaml_event_delete(ev);
    n = node_new(is_map ? SV_YAML_MAP : SV_YAML_SEQ, line);
    for (;;) {
        yaml_event_t e;
        if (!next_event(r, &e, error))
            goto fail;
        if (e.type == YAML_MAPPING_END_EVENT || e.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&e);
            anchor(r, (const yaml_char_t *)anchor_name, n);
            g_free(anchor_name);
            return n;
        }
        if (is_map) {
            sv_yaml_node *key = read_node(r, &e, error);
            if (!key)
                goto fail;
            g_ptr_array_add(n->keys, key);
            if (key->kind != SV_YAML_SCALAR) {
                g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_PARSE,
                            "%s:%d: non-scalar mapping key", r->path, key->line);
                goto fail;
            }
            if (!next_event(r, &e, error))
                goto fail;
        }
        sv_yaml_node *child = read_node(r, &e, error);
        if (!child)
            goto fail;
        g_ptr_array_add(n->items, child);
    }
fail:
    g_free(anchor_name);
    sv_yaml_free(n);
    return NULL;
}

sv_yaml_node *sv_yaml_load(const char *path, GError **error)
{
    g_autofree char *text = NULL;
    gsize len = 0;
    GError *e = NULL;
    if (!sv_path_check_not_dir(path, error))
        return NULL;
    if (!g_file_get_contents(path, &text, &len, &e)) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_IO, "cannot read %s: %s", path, e->message);
        g_error_free(e);
        return NULL;
    }
    yaml_reader r = {.path = path,
                     .anchors = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL)};
    yaml_parser_initialize(&r.parser);
    yaml_parser_set_input_string(&r.parser, (const unsigned char *)text, len);
    sv_yaml_node *root = NULL;
    gboolean failed = FALSE;
    /* The first document's root; later documents are not read. */
    while (!root && !failed) {
        yaml_event_t ev;
        if (!next_event(&r, &ev, error)) {
            failed = TRUE;
        } else if (ev.type == YAML_STREAM_END_EVENT || ev.type == YAML_DOCUMENT_END_EVENT) {
            yaml_event_delete(&ev);
            root = node_new(SV_YAML_SCALAR, 1); /* an empty document is a null scalar */
            root->scalar = g_strdup("");
        } else if (ev.type == YAML_MAPPING_START_EVENT || ev.type == YAML_SEQUENCE_START_EVENT ||
                   ev.type == YAML_SCALAR_EVENT || ev.type == YAML_ALIAS_EVENT) {
            root = read_node(&r, &ev, error);
            failed = root == NULL;
        } else {
            yaml_event_delete(&ev);
        }
    }
    yaml_parser_delete(&r.parser);
    g_hash_table_unref(r.anchors);
    return root;
}
