/* JSON configuration helpers: parse a file, read typed members with errors that name the path. */
#include <math.h>

#include "core/core.h"

JsonNode *sv_cfg_load_json(const char *path, GError **error)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    GError *local = NULL;
    g_autofree char *text = NULL;
    gsize len = 0;
    if (!g_file_get_contents(path, &text, &len, &local)) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_IO, "%s: %s", path, local->message);
        g_error_free(local);
        return NULL;
    }
    /* RFC 8259 first: json-glib alone reads "0x1a" as 26 (core.h). An empty text is left to the
     * message below. */
    gboolean blank = TRUE;
    for (gsize i = 0; i < len && blank; i++)
        blank = g_ascii_isspace(text[i]);
    if (!blank && !sv_cfg_json_check(text, len, &local)) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_PARSE, "%s:%s", path, local->message);
        g_error_free(local);
        return NULL;
    }
    if (!json_parser_load_from_data(parser, text, (gssize)len, &local)) {
        /* json-glib's message already carries "<line>:<col>: ..." for syntax errors. */
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_PARSE, "%s: %s", path, local->message);
        g_error_free(local);
        return NULL;
    }
    JsonNode *root = json_parser_get_root(parser);
    if (root == NULL) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_PARSE, "%s: empty JSON document", path);
        return NULL;
    }
    return json_node_copy(root);
}

static JsonNode *member(JsonObject *obj, const char *key, const char *where, gboolean required,
                        gboolean *absent, GError **error)
{
    JsonNode *n = obj ? json_object_get_member(obj, key) : NULL;
    *absent = (n == NULL || JSON_NODE_HOLDS_NULL(n));
    if (*absent && required) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID, "%s.%s: required key is missing",
                    where, key);
    }
    return n;
}

gboolean sv_cfg_node_int(JsonNode *n, int64_t *out)
{
    if (n == NULL || !JSON_NODE_HOLDS_VALUE(n))
        return FALSE;
    GType t = json_node_get_value_type(n);
    if (t == G_TYPE_INT64) {
        *out = json_node_get_int(n);
        return TRUE;
    }
    if (t == G_TYPE_DOUBLE) {
        double d = json_node_get_double(n);
        /* 2^63 is the first double past INT64_MAX */
        if (d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
            *out = (int64_t)d;
            return TRUE;
        }
    }
    return FALSE;
}

gboolean sv_cfg_node_double(JsonNode *n, double *out)
{
    if (n == NULL || !JSON_NODE_HOLDS_VALUE(n))
        return FALSE;
    GType t = json_node_get_value_type(n);
    if (t != G_TYPE_INT64 && t != G_TYPE_DOUBLE)
        return FALSE;
    double d = json_node_get_double(n);
    if (!isfinite(d))
        return FALSE;
    *out = d;
    return TRUE;
}

gboolean sv_cfg_get_int(JsonObject *obj, const char *key, const char *where, gboolean required,
                        int64_t dflt, int64_t *out, GError **error)
{
    gboolean absent;
    JsonNode *n = member(obj, key, where, required, &absent, error);
    if (absent) {
        *out = dflt;
        return !required;
    }
    if (sv_cfg_node_int(n, out))
        return TRUE;
    /* ASTRA-sim's system files write 0/1 flags as booleans too */
    if (JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_BOOLEAN) {
        *out = json_node_get_boolean(n) ? 1 : 0;
        return TRUE;
    }
    g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID, "%s.%s: expected an integer", where,
                key);
    return FALSE;
}

gboolean sv_cfg_get_double(JsonObject *obj, const char *key, const char *where, gboolean required,
                           double dflt, double *out, GError **error)
{
    gboolean absent;
    JsonNode *n = member(obj, key, where, required, &absent, error);
    if (absent) {
        *out = dflt;
        return !required;
    }
    if (sv_cfg_node_double(n, out))
        return TRUE;
    g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID, "%s.%s: expected a number", where,
                key);
    return FALSE;
}

gboolean sv_cfg_get_string(JsonObject *obj, const char *key, const char *where, gboolean required,
                           const char *dflt, const char **out, GError **error)
{
    gboolean absent;
    JsonNode *n = member(obj, key, where, required, &absent, error);
    if (absent) {
        *out = dflt;
        return !required;
    }
    if (JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING) {
        *out = json_node_get_string(n);
        return TRUE;
    }
    g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID, "%s.%s: expected a string", where,
                key);
    return FALSE;
}

char *sv_cfg_format_double(char *buf, double v)
{
    /* Integers as integers ("1600", not "1.6e+03"), below 1e15 where every one is exact. */
    if (isfinite(v) && v == floor(v) && fabs(v) < 1e15) {
        g_ascii_formatd(buf, G_ASCII_DTOSTR_BUF_SIZE, "%.0f", v);
        return buf;
    }
    /* 17 significant digits always read back; fewer often do, and read better. */
    for (int digits = 1; digits <= 17; digits++) {
        char fmt[8];
        g_snprintf(fmt, sizeof fmt, "%%.%dg", digits);
        g_ascii_formatd(buf, G_ASCII_DTOSTR_BUF_SIZE, fmt, v);
        if (g_ascii_strtod(buf, NULL) == v)
            break;
    }
    return buf;
}

gboolean sv_cfg_get_int_range(JsonObject *obj, const char *key, const char *where,
                              gboolean required, int64_t dflt, struct sv_range_int r, int64_t *out,
                              GError **error)
{
    gboolean absent;
    (void)member(obj, key, where, FALSE, &absent, NULL);
    if (!sv_cfg_get_int(obj, key, where, required, dflt, out, error))
        return FALSE;
    if (absent)
        return TRUE;
    g_autofree char *path = g_strdup_printf("%s.%s", where, key);
    return sv_range_check_int(path, *out, r, error);
}

gboolean sv_cfg_get_double_range(JsonObject *obj, const char *key, const char *where,
                                 gboolean required, double dflt, struct sv_range_double r,
                                 double *out, GError **error)
{
    gboolean absent;
    (void)member(obj, key, where, FALSE, &absent, NULL);
    if (!sv_cfg_get_double(obj, key, where, required, dflt, out, error))
        return FALSE;
    if (absent)
        return TRUE;
    g_autofree char *path = g_strdup_printf("%s.%s", where, key);
    return sv_range_check_double(path, *out, r, error);
}
