/* Source lifecycle, the pull loop (line reading, bad-line skipping, arrival order, numbering)
 * and format detection. */
#include "workloads/workloads_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

GQuark sv_wl_error_quark(void)
{
    return g_quark_from_static_string("servesim-workloads-error-quark");
}

const char *sv_wl_reject_name(sv_wl_reject r)
{
    static const char *const names[SV_WL_REJECT_N] = {
        [SV_WL_REJECT_NONE] = "",
        [SV_WL_REJECT_CONTEXT_LENGTH] = "context_length",
        [SV_WL_REJECT_KV_CAPACITY] = "kv_capacity",
    };
    SV_ASSERT((unsigned)r < SV_WL_REJECT_N);
    return names[r];
}

void sv_wl_item_clear(sv_wl_item *item)
{
    if (!item)
        return;
    for (size_t i = 0; i < item->n_reqs; i++) {
        g_free(item->reqs[i].input_tok_ids);
        g_free(item->reqs[i].output_tok_ids);
        g_free(item->reqs[i].hash_ids);
    }
    g_free(item->reqs);
    g_free(item->session_id);
    g_free(item->model);
    memset(item, 0, sizeof *item);
}

void sv_wl__item_alloc_reqs(sv_wl_item *out, size_t n)
{
    out->reqs = g_new0(sv_wl_req, n);
    out->n_reqs = n;
}

static const struct {
    const char *name;
    sv_wl_format format;
} format_names[] = {
    {"auto", SV_WL_FORMAT_AUTO},           {"llmservingsim", SV_WL_FORMAT_LLMSERVINGSIM},
    {"jsonl", SV_WL_FORMAT_LLMSERVINGSIM}, {"mooncake", SV_WL_FORMAT_MOONCAKE},
    {"azure", SV_WL_FORMAT_AZURE},
};

gboolean sv_wl_format_parse(const char *name, sv_wl_format *out, GError **error)
{
    for (size_t i = 0; i < G_N_ELEMENTS(format_names); i++) {
        if (name && g_ascii_strcasecmp(name, format_names[i].name) == 0) {
            *out = format_names[i].format;
            return TRUE;
        }
    }
    g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_INVALID,
                "unknown workload format '%s' (expected auto, llmservingsim, mooncake or azure)",
                name ? name : "(null)");
    return FALSE;
}

sv_wl_source *sv_wl__source_alloc(const char *path)
{
    sv_wl_source *src = g_new0(sv_wl_source, 1);
    src->path = g_strdup(path);
    return src;
}

void sv_wl__bad_line(sv_wl_source *src, GError **error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_BAD_LINE, "%s:%" G_GUINT64_FORMAT ": %s", src->path,
                src->lineno, msg);
}

static gboolean is_blank(const char *s)
{
    for (; *s; s++)
        if (!g_ascii_isspace(*s))
            return FALSE;
    return TRUE;
}

/* Auto-detect a JSON-lines flavour from the first non-blank line (cheap key probe; the real
 * parse of that line happens later and reports its errors with its line number). */
static sv_wl_format detect_jsonl(FILE *fp)
{
    char *line = NULL;
    size_t cap = 0;
    sv_wl_format f = SV_WL_FORMAT_LLMSERVINGSIM;
    while (getline(&line, &cap, fp) >= 0) {
        if (is_blank(line))
            continue;
        if (strstr(line, "\"input_length\"") || strstr(line, "\"hash_ids\""))
            f = SV_WL_FORMAT_MOONCAKE;
        break;
    }
    free(line); /* getline allocates with malloc */
    rewind(fp);
    return f;
}

sv_wl_source *sv_wl_open(const char *path, const struct sv_wl_open_opts *opts, GError **error)
{
    GError *dir_err = NULL;
    if (!sv_path_check_not_dir(path, &dir_err)) {
        g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_IO, "cannot open workload %s",
                    dir_err->message);
        g_error_free(dir_err);
        return NULL;
    }
    FILE *fp = fopen(path, "r");
    if (!fp) {
        int e = errno;
        g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_IO, "cannot open workload %s: %s", path,
                    g_strerror(e));
        return NULL;
    }
    sv_wl_source *src = sv_wl__source_alloc(path);
    src->fp = fp;
    if (opts)
        src->opts = *opts;
    sv_wl_format f = src->opts.format;
    if (f == SV_WL_FORMAT_AUTO) {
        if (g_str_has_suffix(path, ".csv") || g_str_has_suffix(path, ".CSV"))
            f = SV_WL_FORMAT_AZURE;
        else
            f = detect_jsonl(fp);
    }
    src->format = f;
    switch (f) {
    case SV_WL_FORMAT_LLMSERVINGSIM:
        src->parse_line = sv_wl__jsonl_parse_llmservingsim;
        break;
    case SV_WL_FORMAT_MOONCAKE:
        src->parse_line = sv_wl__jsonl_parse_mooncake;
        break;
    case SV_WL_FORMAT_AZURE:
        src->parse_line = sv_wl__azure_parse_line;
        break;
    case SV_WL_FORMAT_AUTO:
    default:
        SV_ASSERT(!"unreachable format");
    }
    return src;
}

void sv_wl_source_free(sv_wl_source *src)
{
    if (!src)
        return;
    if (src->fp)
        fclose(src->fp);
    free(src->buf); /* getline buffer (malloc) */
    sv_wl__tape_clear(&src->tape);
    if (src->gen_free)
        src->gen_free(src->gen);
    g_clear_error(&src->sticky);
    g_free(src->path);
    g_free(src);
}

uint64_t sv_wl_source_bad_lines(const sv_wl_source *src)
{
    return src->bad_lines;
}

uint64_t sv_wl_source_requests(const sv_wl_source *src)
{
    return src->next_request_id;
}

uint64_t sv_wl_source_items(const sv_wl_source *src)
{
    return src->items;
}

sv_wl_format sv_wl_source_format(const sv_wl_source *src)
{
    return src->format;
}

static int fail(sv_wl_source *src, GError *err, GError **error)
{
    src->done = -1;
    src->sticky = g_error_copy(err);
    g_propagate_error(error, err);
    return -1;
}

/* One raw item from the file or generator: 1 / 0 (end) / -1. */
static int pull_raw(sv_wl_source *src, sv_wl_item *out, GError **error)
{
    if (src->gen_next)
        return src->gen_next(src, out, error);
    for (;;) {
        errno = 0;
        ssize_t n = getline(&src->buf, &src->buf_cap, src->fp);
        if (n < 0) {
            if (ferror(src->fp)) {
                g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_IO,
                            "%s:%" G_GUINT64_FORMAT ": read error: %s", src->path, src->lineno + 1,
                            g_strerror(errno));
                return -1;
            }
            return 0;
        }
        src->lineno++;
        size_t len = (size_t)n;
        while (len > 0 && (src->buf[len - 1] == '\n' || src->buf[len - 1] == '\r'))
            src->buf[--len] = '\0';
        if (strlen(src->buf) != len) {
            sv_wl__bad_line(src, error, "line contains a NUL byte");
            return -1;
        }
        if (is_blank(src->buf))
            continue;
        int r = src->parse_line(src, src->buf, len, out, error);
        if (r == 0) {
            sv_wl_item_clear(out);
            continue;
        }
        return r;
    }
}

int sv_wl_next(sv_wl_source *src, sv_wl_item *out, GError **error)
{
    if (src->done == 1)
        return 0;
    if (src->done == -1) {
        if (error)
            *error = g_error_copy(src->sticky);
        return -1;
    }
    sv_wl_item_clear(out);
    for (;;) {
        GError *err = NULL;
        int r = pull_raw(src, out, &err);
        if (r == 0) {
            src->done = 1;
            return 0;
        }
        if (r < 0) {
            sv_wl_item_clear(out);
            if (src->opts.skip_bad_lines &&
                g_error_matches(err, SV_WL_ERROR, SV_WL_ERROR_BAD_LINE)) {
                g_debug("skipped: %s", err->message);
                g_error_free(err);
                src->bad_lines++;
                continue;
            }
            return fail(src, err, error);
        }
        /* Traces are replayed as recorded: a file out of order is a broken trace, and sorting
         * it would need the whole file in memory, so it is an error (never skipped). */
        if (src->have_prev && out->arrival_ns < src->prev_arrival) {
            GError *e = NULL;
            g_set_error(&e, SV_WL_ERROR, SV_WL_ERROR_ORDER,
                        "%s:%" G_GUINT64_FORMAT ": arrival %" G_GINT64_FORMAT
                        " ns is earlier than the previous arrival %" G_GINT64_FORMAT
                        " ns (line %" G_GUINT64_FORMAT "); traces must be sorted by arrival",
                        src->path, out->line, out->arrival_ns, src->prev_arrival, src->prev_line);
            sv_wl_item_clear(out);
            return fail(src, e, error);
        }
        src->have_prev = TRUE;
        src->prev_arrival = out->arrival_ns;
        src->prev_line = out->line;
        out->index = src->items++;
        uint64_t first = src->next_request_id;
        for (size_t j = 0; j < out->n_reqs; j++) {
            out->reqs[j].request_id = src->next_request_id++;
            out->reqs[j].turn = (uint32_t)j;
            out->reqs[j].arrival_ns = j == 0 ? out->arrival_ns : -1;
        }
        if (out->kind == SV_WL_ITEM_SESSION && !out->session_id)
            out->session_id = g_strdup_printf("session_%" G_GUINT64_FORMAT, first);
        return 1;
    }
}
