/* The one CSV reader: a header line, then rows of comma-separated fields, read one line at a time
 * so that a 10^6-row file is never held whole. The files it reads (our own outputs, vLLM bench's,
 * LLMServingSim profiles, Azure traces, length tables) have no quoted commas or newlines inside
 * fields, so a field is the text between commas, stripped of spaces and of one pair of
 * surrounding double quotes; a full RFC 4180 parser (libcsv) would be more code than it replaces.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

struct sv_csv {
    char *path;
    FILE *fp;
    char *buf; /* getline's buffer (malloc) */
    size_t cap;
    uint64_t line;        /* 1-based number of the line last read */
    uint64_t header_line; /* 0 when the file has no non-empty line */
    char *header_text;
    char **cols;
    guint n_cols;
    char **fields; /* into buf */
    guint n_fields;
    guint fields_cap;
};

/* Trim ASCII white space (g_ascii_isspace, as g_strstrip) off [s, *e) in place, without the
 * memmove g_strstrip does (the profile tables have ~10^5 fields); *e becomes the new end. */
static char *trim(char *s, char **e)
{
    char *t = *e;
    while (s < t && g_ascii_isspace(*s))
        s++;
    while (t > s && g_ascii_isspace(t[-1]))
        t--;
    *t = '\0';
    *e = t;
    return s;
}

guint sv_csv_split(char *line, char **fields, guint max)
{
    guint n = 0;
    for (char *p = line;;) {
        char *comma = strchr(p, ',');
        char *end = comma ? comma : p + strlen(p);
        if (n < max) {
            char *f = trim(p, &end);
            size_t fl = (size_t)(end - f);
            if (fl >= 2 && f[0] == '"' && f[fl - 1] == '"') {
                f[fl - 1] = '\0';
                f++;
            }
            fields[n] = f;
        } else {
            *end = '\0';
        }
        n++;
        if (!comma)
            break;
        p = comma + 1;
    }
    return n;
}

/* The next non-empty line, stripped, or NULL at the end of the file or on a read error. */
static char *next_line(sv_csv *c, GError **error)
{
    while (getline(&c->buf, &c->cap, c->fp) >= 0) {
        c->line++;
        char *e = c->buf + strlen(c->buf);
        char *l = trim(c->buf, &e);
        if (*l)
            return l;
    }
    if (ferror(c->fp))
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_IO,
                    "%s:%" G_GUINT64_FORMAT ": read error: %s", c->path, c->line + 1,
                    g_strerror(errno));
    return NULL;
}

/* Fields in a line: one more than its commas. */
static guint count_fields(const char *l)
{
    guint n = 1;
    for (; (l = strchr(l, ',')) != NULL; l++)
        n++;
    return n;
}

sv_csv *sv_csv_open(const char *path, GError **error)
{
    if (!sv_path_check_not_dir(path, error))
        return NULL;
    FILE *fp = fopen(path, "r");
    if (fp == NULL) {
        int err = errno;
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_IO, "cannot open %s: %s", path,
                    g_strerror(err));
        return NULL;
    }
    sv_csv *c = g_new0(sv_csv, 1);
    c->path = g_strdup(path);
    c->fp = fp;
    char *h = next_line(c, error);
    if (h == NULL) {
        if (error && *error) {
            sv_csv_free(c);
            return NULL;
        }
        c->cols = g_new0(char *, 1);
        return c; /* no header: n_cols is 0, the caller names the error */
    }
    c->header_line = c->line;
    c->header_text = g_strdup(h);
    guint n = count_fields(h);
    c->cols = g_new0(char *, n + 1);
    c->n_cols = sv_csv_split(c->header_text, c->cols, n);
    return c;
}

void sv_csv_free(sv_csv *c)
{
    if (c == NULL)
        return;
    if (c->fp)
        fclose(c->fp);
    free(c->buf);
    g_free(c->path);
    g_free(c->header_text);
    g_free(c->cols);
    g_free(c->fields);
    g_free(c);
}

gboolean sv_csv_next(sv_csv *c, GError **error)
{
    char *l = next_line(c, error);
    if (l == NULL)
        return FALSE;
    guint n = count_fields(l);
    if (n > c->fields_cap) {
        c->fields_cap = MAX(n, 2 * c->fields_cap);
        c->fields = g_renew(char *, c->fields, c->fields_cap);
    }
    sv_csv_split(l, c->fields, n);
    c->n_fields = n;
    return TRUE;
}

uint64_t sv_csv_line(const sv_csv *c)
{
    return c->line;
}

uint64_t sv_csv_header_line(const sv_csv *c)
{
    return c->header_line;
}

guint sv_csv_n_cols(const sv_csv *c)
{
    return c->n_cols;
}

const char *sv_csv_col_name(const sv_csv *c, guint i)
{
    SV_ASSERT(i < c->n_cols);
    return c->cols[i];
}

int sv_csv_col(const sv_csv *c, const char *name)
{
    for (guint i = 0; i < c->n_cols; i++)
        if (strcmp(c->cols[i], name) == 0)
            return (int)i;
    return -1;
}

guint sv_csv_n_fields(const sv_csv *c)
{
    return c->n_fields;
}

const char *sv_csv_field(const sv_csv *c, guint i)
{
    SV_ASSERT(i < c->n_fields);
    return c->fields[i];
}
