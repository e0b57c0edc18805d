/* JSON-lines readers: LLMServingSim workloads (flat requests and agentic sessions) and Mooncake
 * FAST'25 traces. Each line is scanned onto the source's token tape (json_tape.c), reused for
 * every line; the fields are then checked in a fixed order, so that a line with several faults
 * reports the same one whatever the order of its keys. */
#include "workloads/workloads_internal.h"

#include <math.h>
#include <string.h>

#define TOK(src, i) (&(src)->tape.tok[i])

/* An integer member in `r` (docs/workloads.md gives each field's range). `path` prefixes the field
 * name in messages ("sub_requests[2]."). */
static gboolean get_int(sv_wl_source *src, uint32_t obj, const char *path, const char *key,
                        gboolean required, int64_t dflt, struct sv_range_int r, int64_t *out,
                        GError **error)
{
    int64_t min = r.lo;
    uint32_t i = sv_wl__tape_member(&src->tape, obj, key);
    if (!i) {
        if (required) {
            sv_wl__bad_line(src, error, "missing field '%s%s'", path, key);
            return FALSE;
        }
        *out = dflt;
        return TRUE;
    }
    const struct sv_wl_jtok *t = TOK(src, i);
    if (t->type == SV_WL_JT_BIGINT) {
        /* json-glib wrapped these around (2^64 - 1 read as -1); name the number as written */
        const char *text = src->tape.line + t->off;
        if (text[0] == '-')
            sv_wl__bad_line(src, error, "field '%s%s' is %.*s, must be >= %" G_GINT64_FORMAT, path,
                            key, (int)t->len, text, min);
        else
            sv_wl__bad_line(src, error, "field '%s%s' is %.*s, more than %" G_GINT64_FORMAT, path,
                            key, (int)t->len, text, INT64_MAX);
        return FALSE;
    }
    int64_t v;
    if (!sv_wl__tape_int(t, &v)) {
        sv_wl__bad_line(src, error, "field '%s%s' must be an integer, not %s", path, key,
                        sv_wl__tape_type_name(t));
        return FALSE;
    }
    if (v < min) {
        sv_wl__bad_line(src, error,
                        "field '%s%s' is %" G_GINT64_FORMAT ", must be >= %" G_GINT64_FORMAT, path,
                        key, v, min);
        return FALSE;
    }
    g_autofree char *field = g_strdup_printf("field '%s%s'", path, key);
    GError *e = NULL;
    if (!sv_range_check_int(field, v, r, &e)) {
        sv_wl__bad_line(src, error, "%s", e->message);
        g_error_free(e);
        return FALSE;
    }
    *out = v;
    return TRUE;
}

static gboolean get_opt_string(sv_wl_source *src, uint32_t obj, const char *key, char **out,
                               GError **error)
{
    uint32_t i = sv_wl__tape_member(&src->tape, obj, key);
    if (!i)
        return TRUE;
    if (TOK(src, i)->type != SV_WL_JT_STRING) {
        sv_wl__bad_line(src, error, "field '%s' must be a string, not %s", key,
                        sv_wl__tape_type_name(TOK(src, i)));
        return FALSE;
    }
    *out = sv_wl__tape_strdup(&src->tape, i);
    return TRUE;
}

/* An optional array of non-negative integers <= max. Stored as uint32 or uint64 by `wide`. */
static gboolean get_id_array(sv_wl_source *src, uint32_t obj, const char *path, const char *key,
                             gboolean wide, uint64_t max, void **out, size_t *n_out, GError **error)
{
    uint32_t ai = sv_wl__tape_member(&src->tape, obj, key);
    if (!ai)
        return TRUE;
    const struct sv_wl_jtok *a = TOK(src, ai);
    if (a->type != SV_WL_JT_ARRAY) {
        sv_wl__bad_line(src, error, "field '%s%s' must be an array of integers, not %s", path, key,
                        sv_wl__tape_type_name(a));
        return FALSE;
    }
    uint32_t len = a->v.n;
    void *ids = NULL;
    if (!src->opts.drop_token_ids && len > 0)
        ids = wide ? (void *)g_new(uint64_t, len) : (void *)g_new(uint32_t, len);
    uint32_t e = ai + 1;
    for (uint32_t i = 0; i < len; i++, e = TOK(src, e)->next) {
        const struct sv_wl_jtok *t = TOK(src, e);
        int64_t v = 0;
        gboolean is_int = t->type == SV_WL_JT_INT ? (v = t->v.i, TRUE) : sv_wl__tape_int(t, &v);
        if (!is_int || v < 0 || (uint64_t)v > max) {
            if (is_int)
                sv_wl__bad_line(src, error,
                                "field '%s%s[%u]' is %" G_GINT64_FORMAT
                                ", out of range [0, %" G_GUINT64_FORMAT "]",
                                path, key, i, v, max);
            else if (t->type == SV_WL_JT_BIGINT)
                sv_wl__bad_line(src, error,
                                "field '%s%s[%u]' is %.*s, out of range [0, %" G_GUINT64_FORMAT "]",
                                path, key, i, (int)t->len, src->tape.line + t->off, max);
            else
                sv_wl__bad_line(src, error, "field '%s%s[%u]' must be an integer, not %s", path,
                                key, i, sv_wl__tape_type_name(t));
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

/* Parse the line; the root must be an object (token 0). Errors name the line. */
static gboolean parse_object(sv_wl_source *src, const char *line, size_t len, GError **error)
{
    if (!sv_wl__tape_parse(&src->tape, line, len)) {
        sv_wl__bad_line(src, error, "bad JSON: %s", src->tape.err);
        return FALSE;
    }
    if (TOK(src, 0)->type != SV_WL_JT_OBJECT) {
        sv_wl__bad_line(src, error, "expected a JSON object, got %s",
                        sv_wl__tape_type_name(TOK(src, 0)));
        return FALSE;
    }
    return TRUE;
}

/* input_toks, output_toks and the optional id arrays of one call. */
static gboolean parse_call(sv_wl_source *src, uint32_t o, const char *path, sv_wl_req *r,
                           GError **error)
{
    if (!get_int(src, o, path, "input_toks", TRUE, 0, SV_RANGE_TOKENS, &r->input_tokens, error) ||
        !get_int(src, o, path, "output_toks", TRUE, 0, SV_RANGE_TOKENS, &r->output_tokens, error))
        return FALSE;
    return get_id_array(src, o, path, "input_tok_ids", FALSE, UINT32_MAX,
                        (void **)&r->input_tok_ids, &r->n_input_tok_ids, error) &&
           get_id_array(src, o, path, "output_tok_ids", FALSE, UINT32_MAX,
                        (void **)&r->output_tok_ids, &r->n_output_tok_ids, error);
}

int sv_wl__jsonl_parse_llmservingsim(sv_wl_source *src, char *line, size_t len, sv_wl_item *out,
                                     GError **error)
{
    if (!parse_object(src, line, len, error))
        return -1;
    const uint32_t o = 0;
    out->line = src->lineno;
    int64_t arrival;
    /* LLMServingSim accepts negative arrivals and sorts them first (docs/workloads/
     * jsonl-format.md); we replay in file order, so a negative time is an error. */
    if (!get_int(src, o, "", "arrival_time_ns", TRUE, 0, SV_RANGE_TIME_NS, &arrival, error) ||
        !get_opt_string(src, o, "model", &out->model, error) ||
        !get_opt_string(src, o, "session_id", &out->session_id, error))
        return -1;
    out->arrival_ns = arrival;

    uint32_t subs = sv_wl__tape_member(&src->tape, o, "sub_requests");
    if (!subs) {
        /* Flat request: the loader dispatches on the presence of sub_requests. */
        out->kind = SV_WL_ITEM_REQUEST;
        sv_wl__item_alloc_reqs(out, 1);
        return parse_call(src, o, "", &out->reqs[0], error) ? 1 : -1;
    }
    if (TOK(src, subs)->type != SV_WL_JT_ARRAY) {
        sv_wl__bad_line(src, error, "field 'sub_requests' must be an array, not %s",
                        sv_wl__tape_type_name(TOK(src, subs)));
        return -1;
    }
    uint32_t n = TOK(src, subs)->v.n;
    if (n == 0)
        return 0; /* LLMServingSim skips an empty session silently (jsonl-format.md) */
    out->kind = SV_WL_ITEM_SESSION;
    sv_wl__item_alloc_reqs(out, n);
    uint32_t e = subs + 1;
    for (uint32_t i = 0; i < n; i++, e = TOK(src, e)->next) {
        char path[48];
        g_snprintf(path, sizeof path, "sub_requests[%u].", i);
        if (TOK(src, e)->type != SV_WL_JT_OBJECT) {
            sv_wl__bad_line(src, error, "field 'sub_requests[%u]' must be an object, not %s", i,
                            sv_wl__tape_type_name(TOK(src, e)));
            return -1;
        }
        sv_wl_req *r = &out->reqs[i];
        /* tool_duration_ns defaults to 0, as LLMServingSim reads it with .get(..., 0). */
        if (!parse_call(src, e, path, r, error) ||
            !get_int(src, e, path, "tool_duration_ns", FALSE, 0, SV_RANGE_TIME_NS,
                     &r->tool_duration_ns, error))
            return -1;
    }
    return 1;
}

int sv_wl__jsonl_parse_mooncake(sv_wl_source *src, char *line, size_t len, sv_wl_item *out,
                                GError **error)
{
    if (!parse_object(src, line, len, error))
        return -1;
    const uint32_t o = 0;
    out->line = src->lineno;
    out->kind = SV_WL_ITEM_REQUEST;
    uint32_t tsi = sv_wl__tape_member(&src->tape, o, "timestamp");
    if (!tsi) {
        sv_wl__bad_line(src, error, "missing field 'timestamp'");
        return -1;
    }
    const struct sv_wl_jtok *ts = TOK(src, tsi);
    /* timestamp is in milliseconds (Mooncake README); integral in the published traces, but a
     * fractional value is accepted and converted once through sv_time_from_ns. */
    /* The range is the engine's horizon in ms (docs/workloads.md). */
    const struct sv_range_int ms_range = SV_RANGE_I(0, SV_ENGINE_HORIZON / SV_NS_PER_MS, "ms");
    GError *e = NULL;
    if (ts->type == SV_WL_JT_INT) {
        int64_t ms = ts->v.i;
        if (!sv_range_check_int("field 'timestamp'", ms, ms_range, &e)) {
            sv_wl__bad_line(src, error, "%s", e->message);
            g_error_free(e);
            return -1;
        }
        out->arrival_ns = ms * SV_NS_PER_MS;
    } else if (ts->type == SV_WL_JT_BIGINT) {
        sv_wl__bad_line(src, error, "field 'timestamp' is %.*s ms, out of range", (int)ts->len,
                        src->tape.line + ts->off);
        return -1;
    } else if (ts->type == SV_WL_JT_DOUBLE) {
        double ms = ts->v.d;
        if (!(ms >= 0) || !isfinite(ms)) {
            sv_wl__bad_line(src, error, "field 'timestamp' is %g ms, must be >= 0", ms);
            return -1;
        }
        if (!sv_range_check_double("field 'timestamp'", ms,
                                   SV_RANGE_D(0, (double)ms_range.hi, "ms"), &e)) {
            sv_wl__bad_line(src, error, "%s", e->message);
            g_error_free(e);
            return -1;
        }
        out->arrival_ns = sv_time_from_ns(ms * 1e6);
    } else {
        sv_wl__bad_line(src, error, "field 'timestamp' must be a number, not %s",
                        sv_wl__tape_type_name(ts));
        return -1;
    }
    sv_wl__item_alloc_reqs(out, 1);
    sv_wl_req *r = &out->reqs[0];
    if (!get_int(src, o, "", "input_length", TRUE, 0, SV_RANGE_TOKENS, &r->input_tokens, error) ||
        !get_int(src, o, "", "output_length", TRUE, 0, SV_RANGE_TOKENS, &r->output_tokens, error) ||
        !get_id_array(src, o, "", "hash_ids", TRUE, (uint64_t)INT64_MAX, (void **)&r->hash_ids,
                      &r->n_hash_ids, error) ||
        !get_opt_string(src, o, "model", &out->model, error))
        return -1;
    if (r->hash_ids)
        r->hash_block_tokens = SV_WL_MOONCAKE_BLOCK_TOKENS;
    return 1;
}
