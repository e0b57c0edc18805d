/* JSON-lines readers: LLMServingSim workloads (flat requests and agentic sessions) and Mooncake
 * FAST'25 traces. One JsonParser per source, reused for every line. */
#include "workloads/workloads_internal.h"

#include <math.h>
#include <string.h>

static const char *node_type_name(JsonNode *n)
{
    if (JSON_NODE_HOLDS_NULL(n))
        return "null";
    if (JSON_NODE_HOLDS_OBJECT(n))
        return "an object";
    if (JSON_NODE_HOLDS_ARRAY(n))
        return "an array";
    GType t = json_node_get_value_type(n);
    if (t == G_TYPE_STRING)
        return "a string";
    if (t == G_TYPE_BOOLEAN)
        return "a boolean";
    if (t == G_TYPE_DOUBLE)
        return "a fractional number";
    return "a number";
}

static gboolean is_int_node(JsonNode *n)
{
    return JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_INT64;
}

/* An integer member >= min. `path` prefixes the field name in messages ("sub_requests[2]."). */
static gboolean get_int(sv_wl_source *src, JsonObject *obj, const char *path, const char *key,
                        gboolean required, int64_t dflt, int64_t min, int64_t *out, GError **error)
{
    JsonNode *n = json_object_get_member(obj, key);
    if (!n) {
        if (required) {
            sv_wl__bad_line(src, error, "missing field '%s%s'", path, key);
            return FALSE;
        }
        *out = dflt;
        return TRUE;
    }
    int64_t v;
    if (!sv_cfg_node_int(n, &v)) {
        sv_wl__bad_line(src, error, "field '%s%s' must be an integer, not %s", path, key,
                        node_type_name(n));
        return FALSE;
    }
    if (v < min) {
        sv_wl__bad_line(src, error,
                        "field '%s%s' is %" G_GINT64_FORMAT ", must be >= %" G_GINT64_FORMAT, path,
                        key, v, min);
        return FALSE;
    }
    *out = v;
    return TRUE;
}

static gboolean get_opt_string(sv_wl_source *src, JsonObject *obj, const char *key, char **out,
                               GError **error)
{
    JsonNode *n = json_object_get_member(obj, key);
    if (!n)
        return TRUE;
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING) {
        sv_wl__bad_line(src, error, "field '%s' must be a string, not %s", key, node_type_name(n));
        return FALSE;
    }
    *out = g_strdup(json_node_get_string(n));
    return TRUE;
}

/* An optional array of non-negative integers <= max. Stored as uint32 or uint64 by `wide`. */
static gboolean get_id_array(sv_wl_source *src, JsonObject *obj, const char *path, const char *key,
                             gboolean wide, uint64_t max, void **out, size_t *n_out, GError **error)
{
    JsonNode *n = json_object_get_member(obj, key);
    if (!n)
        return TRUE;
    if (!JSON_NODE_HOLDS_ARRAY(n)) {
        sv_wl__bad_line(src, error, "field '%s%s' must be an array of integers, not %s", path, key,
                        node_type_name(n));
        return FALSE;
    }
    JsonArray *a = json_node_get_array(n);
    guint len = json_array_get_length(a);
    void *ids = NULL;
    if (!src->opts.drop_token_ids && len > 0)
        ids = wide ? (void *)g_new(uint64_t, len) : (void *)g_new(uint32_t, len);
    for (guint i = 0; i < len; i++) {
        JsonNode *e = json_array_get_element(a, i);
        int64_t v = 0;
        gboolean is_int = sv_cfg_node_int(e, &v);
        if (!is_int || v < 0 || (uint64_t)v > max) {
            if (is_int)
                sv_wl__bad_line(src, error,
                                "field '%s%s[%u]' is %" G_GINT64_FORMAT
                                ", out of range [0, %" G_GUINT64_FORMAT "]",
                                path, key, i, v, max);
            else
                sv_wl__bad_line(src, error, "field '%s%s[%u]' must be an integer, not %s", path,
                                key, i, node_type_name(e));
            g_free(ids);
            return FALSE;
        }
        if (ids) {
            if (wide)
                ((uint64_t *)ids)[i] = (uint64_t)v;
            else
                ((uint32_t *)ids)[i] = (uint32_t)v;
        }
    }
    *out = ids;
    *n_out = ids ? len : 0;
    return TRUE;
}

/* Parse the line into an object; errors name the line. */
static JsonObject *parse_object(sv_wl_source *src, const char *line, size_t len, GError **error)
{
    GError *perr = NULL;
    if (!json_parser_load_from_data(src->parser, line, (gssize)len, &perr)) {
        sv_wl__bad_line(src, error, "bad JSON: %s", perr->message);
        g_error_free(perr);
        return NULL;
    }
    JsonNode *root = json_parser_get_root(src->parser);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
        sv_wl__bad_line(src, error, "expected a JSON object, got %s",
                        root ? node_type_name(root) : "nothing");
        return NULL;
    }
    return json_node_get_object(root);
}

/* input_toks, output_toks and the optional id arrays of one call. */
static gboolean parse_call(sv_wl_source *src, JsonObject *o, const char *path, sv_wl_req *r,
                           GError **error)
{
    if (!get_int(src, o, path, "input_toks", TRUE, 0, 1, &r->input_tokens, error) ||
        !get_int(src, o, path, "output_toks", TRUE, 0, 1, &r->output_tokens, error))
        return FALSE;
    return get_id_array(src, o, path, "input_tok_ids", FALSE, UINT32_MAX,
                        (void **)&r->input_tok_ids, &r->n_input_tok_ids, error) &&
           get_id_array(src, o, path, "output_tok_ids", FALSE, UINT32_MAX,
                        (void **)&r->output_tok_ids, &r->n_output_tok_ids, error);
}

int sv_wl__jsonl_parse_llmservingsim(sv_wl_source *src, char *line, size_t len, sv_wl_item *out,
                                     GError **error)
{
    JsonObject *o = parse_object(src, line, len, error);
    if (!o)
        return -1;
    out->line = src->lineno;
    int64_t arrival;
    /* LLMServingSim accepts negative arrivals and sorts them first (docs/workloads/
     * jsonl-format.md); we replay in file order, so a negative time is an error. */
    if (!get_int(src, o, "", "arrival_time_ns", TRUE, 0, 0, &arrival, error) ||
        !get_opt_string(src, o, "model", &out->model, error) ||
        !get_opt_string(src, o, "session_id", &out->session_id, error))
        return -1;
    out->arrival_ns = arrival;

    JsonNode *subs = json_object_get_member(o, "sub_requests");
    if (!subs) {
        /* Flat request: the loader dispatches on the presence of sub_requests. */
        out->kind = SV_WL_ITEM_REQUEST;
        sv_wl__item_alloc_reqs(out, 1);
        return parse_call(src, o, "", &out->reqs[0], error) ? 1 : -1;
    }
    if (!JSON_NODE_HOLDS_ARRAY(subs)) {
        sv_wl__bad_line(src, error, "field 'sub_requests' must be an array, not %s",
                        node_type_name(subs));
        return -1;
    }
    JsonArray *a = json_node_get_array(subs);
    guint n = json_array_get_length(a);
    if (n == 0)
        return 0; /* LLMServingSim skips an empty session silently (jsonl-format.md) */
    out->kind = SV_WL_ITEM_SESSION;
    sv_wl__item_alloc_reqs(out, n);
    for (guint i = 0; i < n; i++) {
        JsonNode *e = json_array_get_element(a, i);
        char path[48];
        g_snprintf(path, sizeof path, "sub_requests[%u].", i);
        if (!JSON_NODE_HOLDS_OBJECT(e)) {
            sv_wl__bad_line(src, error, "field 'sub_requests[%u]' must be an object, not %s", i,
                            node_type_name(e));
            return -1;
        }
        JsonObject *so = json_node_get_object(e);
        sv_wl_req *r = &out->reqs[i];
        /* tool_duration_ns defaults to 0, as LLMServingSim reads it with .get(..., 0). */
        if (!parse_call(src, so, path, r, error) ||
            !get_int(src, so, path, "tool_duration_ns", FALSE, 0, 0, &r->tool_duration_ns, error))
            return -1;
    }
    return 1;
}

int sv_wl__jsonl_parse_mooncake(sv_wl_source *src, char *line, size_t len, sv_wl_item *out,
                                GError **error)
{
    JsonObject *o = parse_object(src, line, len, error);
    if (!o)
        return -1;
    out->line = src->lineno;
    out->kind = SV_WL_ITEM_REQUEST;
    JsonNode *ts = json_object_get_member(o, "timestamp");
    if (!ts) {
        sv_wl__bad_line(src, error, "missing field 'timestamp'");
        return -1;
    }
    /* timestamp is in milliseconds (Mooncake README); integral in the published traces, but a
     * fractional value is accepted and converted once through sv_time_from_ns. */
    if (is_int_node(ts)) {
        int64_t ms = json_node_get_int(ts);
        if (ms < 0 || ms > SV_TIME_MAX / SV_NS_PER_MS) {
            sv_wl__bad_line(src, error,
                            "field 'timestamp' is %" G_GINT64_FORMAT " ms, out of range", ms);
            return -1;
        }
        out->arrival_ns = ms * SV_NS_PER_MS;
    } else if (JSON_NODE_HOLDS_VALUE(ts) && json_node_get_value_type(ts) == G_TYPE_DOUBLE) {
        double ms = json_node_get_double(ts);
        if (!(ms >= 0) || !isfinite(ms)) {
            sv_wl__bad_line(src, error, "field 'timestamp' is %g ms, must be >= 0", ms);
            return -1;
        }
        out->arrival_ns = sv_time_from_ns(ms * 1e6);
    } else {
        sv_wl__bad_line(src, error, "field 'timestamp' must be a number, not %s",
                        node_type_name(ts));
        return -1;
    }
    sv_wl__item_alloc_reqs(out, 1);
    sv_wl_req *r = &out->reqs[0];
    if (!get_int(src, o, "", "input_length", TRUE, 0, 1, &r->input_tokens, error) ||
        !get_int(src, o, "", "output_length", TRUE, 0, 1, &r->output_tokens, error) ||
        !get_id_array(src, o, "", "hash_ids", TRUE, (uint64_t)INT64_MAX, (void **)&r->hash_ids,
                      &r->n_hash_ids, error) ||
        !get_opt_string(src, o, "model", &out->model, error))
        return -1;
    if (r->hash_ids)
        r->hash_block_tokens = SV_WL_MOONCAKE_BLOCK_TOKENS;
    return 1;
}
