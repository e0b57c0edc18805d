/* RFC 8259's grammar, checked before json-glib reads a text (core.h, sv_cfg_json_check). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "core/core.h"

/* Deeper nesting than any config or trace line has; a bound keeps the recursion finite. */
#define MAX_DEPTH 512

struct jc {
    const char *s, *end;
    const char *line_start;
    uint64_t line;
    GError **error;
};

static gboolean fail(struct jc *c, const char *at, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static gboolean fail(struct jc *c, const char *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(c->error, SV_CORE_ERROR, SV_CORE_ERROR_PARSE,
                "%" G_GUINT64_FORMAT ":%ld: not JSON (RFC 8259): %s", c->line,
                (long)(at - c->line_start) + 1, msg);
    return FALSE;
}

static void skip_ws(struct jc *c)
{
    while (c->s < c->end) {
        char ch = *c->s;
        if (ch == '\n') {
            c->line++;
            c->line_start = c->s + 1;
        } else if (ch != ' ' && ch != '\t' && ch != '\r') {
            return;
        }
        c->s++;
    }
}

/* The token at `p` as written, for messages: up to the next delimiter, at most 24 bytes. */
static char *token_text(const struct jc *c, const char *p)
{
    const char *q = p;
    while (q < c->end && q - p < 24 && !strchr(" \t\r\n,:]}[{\"", *q))
        q++;
    if (q == p)
        q = MIN(p + 1, c->end);
    return g_strndup(p, (gsize)(q - p));
}

static gboolean is_digit(const struct jc *c, const char *p)
{
    return p < c->end && *p >= '0' && *p <= '9';
}

static gboolean number(struct jc *c)
{
    const char *start = c->s, *p = start;
    if (p < c->end && *p == '-')
        p++;
    gboolean ok = TRUE;
    if (is_digit(c, p) && *p == '0') {
        p++;
        ok = !is_digit(c, p); /* no leading zeros ("0777" is octal to json-glib) */
    } else if (is_digit(c, p)) {
        while (is_digit(c, p))
            p++;
    } else {
        ok = FALSE;
    }
    gboolean integer = TRUE;
    if (ok && p < c->end && *p == '.') {
        p++;
        integer = FALSE;
        ok = is_digit(c, p);
        while (is_digit(c, p))
            p++;
    }
    if (ok && p < c->end && (*p == 'e' || *p == 'E')) {
        p++;
        integer = FALSE;
        if (p < c->end && (*p == '+' || *p == '-'))
            p++;
        ok = is_digit(c, p);
        while (is_digit(c, p))
            p++;
    }
    /* what follows a number must end it: "0x1a", "1.5f", "1_000" are not numbers */
    if (ok && p < c->end && !strchr(" \t\r\n,]}", *p))
        ok = FALSE;
    if (!ok) {
        g_autofree char *t = token_text(c, start);
        return fail(c, start,
                    "'%s' is not a number (a number is -?digits[.digits][e[+-]digits], "
                    "decimal only)",
                    t);
    }
    g_autofree char *text = g_strndup(start, (gsize)(p - start));
    if (integer) {
        errno = 0;
        (void)g_ascii_strtoll(text, NULL, 10);
        if (errno == ERANGE)
            return fail(c, start,
                        "integer %s is outside the 64-bit range (write it as a real number, "
                        "with an exponent, if that is meant)",
                        text);
    } else if (!isfinite(g_ascii_strtod(text, NULL))) {
        return fail(c, start, "%s overflows a double", text);
    }
    c->s = p;
    return TRUE;
}

static gboolean string(struct jc *c)
{
    const char *start = c->s;
    c->s++; /* the opening quote */
    while (c->s < c->end) {
        unsigned char ch = (unsigned char)*c->s;
        if (ch == '"') {
            c->s++;
            return TRUE;
        }
        if (ch < 0x20)
            return fail(c, c->s, "a control character (0x%02x) in a string must be escaped", ch);
        if (ch == '\\') {
            const char *e = c->s + 1;
            if (e >= c->end)
                break;
            if (*e == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (e + i >= c->end || !g_ascii_isxdigit(e[i]))
                        return fail(c, c->s, "\\u must be followed by 4 hexadecimal digits");
                c->s = e + 5;
                continue;
            }
            if (!strchr("\"\\/bfnrt", *e) || *e == '\0')
                return fail(c, c->s, "'\\%c' is not a JSON escape", *e);
            c->s = e + 1;
            continue;
        }
        c->s++;
    }
    return fail(c, start, "unterminated string");
}

static gboolean value(struct jc *c, int depth);

static gboolean container(struct jc *c, int depth, char close)
{
    if (depth >= MAX_DEPTH)
        return fail(c, c->s, "nesting deeper than %d levels", MAX_DEPTH);
    c->s++;
    skip_ws(c);
    if (c->s < c->end && *c->s == close) {
        c->s++;
        return TRUE;
    }
    for (;;) {
        if (close == '}') {
            if (c->s >= c->end || *c->s != '"') {
                g_autofree char *t = c->s < c->end ? token_text(c, c->s) : g_strdup("end of text");
                return fail(c, c->s, "expected a member name in double quotes, not '%s'", t);
            }
            if (!string(c))
                return FALSE;
            skip_ws(c);
            if (c->s >= c->end || *c->s != ':')
                return fail(c, c->s, "expected ':' after a member name");
            c->s++;
            skip_ws(c);
        }
        if (!value(c, depth + 1))
            return FALSE;
        skip_ws(c);
        if (c->s < c->end && *c->s == ',') {
            c->s++;
            skip_ws(c);
            continue;
        }
        if (c->s < c->end && *c->s == close) {
            c->s++;
            return TRUE;
        }
        if (c->s < c->end && *c->s == '/')
            return fail(c, c->s, "JSON has no comments");
        g_autofree char *t = c->s < c->end ? token_text(c, c->s) : g_strdup("end of text");
        return fail(c, c->s, "expected ',' or '%c', not '%s'", close, t);
    }
}

static gboolean literal(struct jc *c, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(c->end - c->s) >= n && memcmp(c->s, word, n) == 0 &&
        (c->s + n == c->end || strchr(" \t\r\n,]}", c->s[n]))) {
        c->s += n;
        return TRUE;
    }
    g_autofree char *t = token_text(c, c->s);
    return fail(c, c->s, "'%s' is not a value", t);
}

static gboolean value(struct jc *c, int depth)
{
    if (c->s >= c->end)
        return fail(c, c->s, "expected a value, not the end of the text");
    switch (*c->s) {
    case '{':
        return container(c, depth, '}');
    case '[':
        return container(c, depth, ']');
    case '"':
        return string(c);
    case 't':
        return literal(c, "true");
    case 'f':
        return literal(c, "false");
    case 'n':
        return literal(c, "null");
    default:
        if (*c->s == '-' || (*c->s >= '0' && *c->s <= '9'))
            return number(c);
        if (*c->s == '\'')
            return fail(c, c->s, "strings are in double quotes");
        if (*c->s == '/')
            return fail(c, c->s, "JSON has no comments");
        g_autofree char *t = token_text(c, c->s);
        return fail(c, c->s, "'%s' is not a value", t);
    }
}

gboolean sv_cfg_json_check(const char *text, size_t len, GError **error)
{
    struct jc c = {.s = text, .end = text + len, .line_start = text, .line = 1, .error = error};
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
        c.s = c.line_start = text + 3;
    skip_ws(&c);
    if (!value(&c, 0))
        return FALSE;
    skip_ws(&c);
    if (c.s < c.end && *c.s == '/')
        return fail(&c, c.s, "JSON has no comments");
    if (c.s < c.end) {
        g_autofree char *t = token_text(&c, c.s);
        return fail(&c, c.s, "text after the value ('%s')", t);
    }
    return TRUE;
}
