/* compute: a reader of DRAMSim3-style INI files (the PIM device files of LLMServingSim,
 * configs/pim/<name>.ini).
 *
 * GLib's GKeyFile cannot read these files as they ship: it takes a trailing "# MT/s" as part of
 * the value ("data_rate = 3200 # MT/s" is not a number to g_key_file_get_double) and rejects a
 * section header followed by a comment ("[timing]   # *** cycles unless noted ***",
 * LPDDR5_2GB_6400_pim.ini). So this reader follows the two readers of these files instead:
 * LLMServingSim's load_flat_config() (docs/reference/pim-config.md, "INI structure": lines
 * starting with '[' or ';' are skipped, '#' starts a comment anywhere) and inih, which DRAMSim3
 * uses (';' starts a comment at the start of a line or after whitespace). Sections are kept for
 * error messages, but a key is looked up in the whole file, as load_flat_config() does. Where
 * LLMServingSim silently keeps the last of two equal keys, this reader reports both lines. */
#include "compute/compute_internal.h"

#include <math.h>
#include <string.h>

static void entry_clear(void *p)
{
    sv_compute_ini_entry *e = p;
    g_free(e->section);
    g_free(e->key);
    g_free(e->value);
}

void sv_compute__ini_free(sv_compute_ini *ini)
{
    if (!ini)
        return;
    g_free(ini->where);
    if (ini->entries)
        g_array_unref(ini->entries);
    g_free(ini);
}

/* Cut a line at its comment: '#' anywhere, ';' at the start or after whitespace (inih). */
static void strip_comment(char *s)
{
    for (char *p = s; *p; p++) {
        if (*p == '#' || (*p == ';' && (p == s || g_ascii_isspace(p[-1])))) {
            *p = '\0';
            return;
        }
    }
}

sv_compute_ini *sv_compute__ini_parse(const char *text, gssize len, const char *where,
                                      GError **error)
{
    g_autoptr(sv_compute_ini) ini = g_new0(sv_compute_ini, 1);
    ini->where = g_strdup(where);
    ini->entries = g_array_new(FALSE, TRUE, sizeof(sv_compute_ini_entry));
    g_array_set_clear_func(ini->entries, entry_clear);
    g_autofree char *copy = len < 0 ? g_strdup(text) : g_strndup(text, (gsize)len);
    g_auto(GStrv) lines = g_strsplit(copy, "\n", -1);
    g_autofree char *section = g_strdup("");
    for (int i = 0; lines[i]; i++) {
        int line = i + 1;
        char *s = lines[i];
        strip_comment(s);
        g_strstrip(s);
        if (!*s)
            continue;
        if (*s == '[') {
            char *end = strchr(s, ']');
            if (!end || end[1] != '\0') {
                g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_PARSE,
                            "%s:%d: malformed section header '%s' (expected [name])", where, line,
                            s);
                return NULL;
            }
            *end = '\0';
            g_free(section);
            section = g_strdup(g_strstrip(s + 1));
            continue;
        }
        char *eq = strchr(s, '=');
        if (!eq) {
            g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_PARSE,
                        "%s:%d: '%s' is not a key = value line", where, line, s);
            return NULL;
        }
        *eq = '\0';
        char *key = g_strstrip(s);
        char *value = g_strstrip(eq + 1);
        if (!*key) {
            g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_PARSE,
                        "%s:%d: a value '%s' with no key", where, line, value);
            return NULL;
        }
        if (!*value) {
            g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_PARSE,
                        "%s:%d: key %s has no value", where, line, key);
            return NULL;
        }
        const sv_compute_ini_entry *prev = sv_compute__ini_find(ini, key);
        if (prev) {
            g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_PARSE,
                        "%s:%d: key %s repeats line %d (keys are looked up in the whole file, "
                        "whatever their section)",
                        where, line, key, prev->line);
            return NULL;
        }
        sv_compute_ini_entry e = {g_strdup(section), g_strdup(key), g_strdup(value), line};
        g_array_append_val(ini->entries, e);
    }
    return g_steal_pointer(&ini);
}

sv_compute_ini *sv_compute__ini_load(const char *path, GError **error)
{
    g_autofree char *text = NULL;
    gsize len = 0;
    if (!sv_path_check_not_dir(path, error) || !g_file_get_contents(path, &text, &len, error))
        return NULL;
    return sv_compute__ini_parse(text, (gssize)len, path, error);
}

const sv_compute_ini_entry *sv_compute__ini_find(const sv_compute_ini *ini, const char *key)
{
    for (guint i = 0; i < ini->entries->len; i++) {
        const sv_compute_ini_entry *e = &g_array_index(ini->entries, sv_compute_ini_entry, i);
        if (strcmp(e->key, key) == 0)
            return e;
    }
    return NULL;
}

/* A required key: absent is an error naming the file, the key and the section it belongs in. */
static const sv_compute_ini_entry *require(const sv_compute_ini *ini, const char *key,
                                           const char *section, GError **error)
{
    const sv_compute_ini_entry *e = sv_compute__ini_find(ini, key);
    if (!e)
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_MISSING,
                    "%s: missing key %s (in [%s])", ini->where, key, section);
    return e;
}

gboolean sv_compute__ini_int(const sv_compute_ini *ini, const char *key, const char *section,
                             int64_t *out, GError **error)
{
    const sv_compute_ini_entry *e = require(ini, key, section, error);
    if (!e)
        return FALSE;
    int64_t v;
    if (!sv_num_parse_int(e->value, &v)) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_PARSE,
                    "%s:%d: %s: '%s' is not an integer", ini->where, e->line, key, e->value);
        return FALSE;
    }
    *out = v;
    return TRUE;
}

gboolean sv_compute__ini_double(const sv_compute_ini *ini, const char *key, const char *section,
                                double *out, GError **error)
{
    const sv_compute_ini_entry *e = require(ini, key, section, error);
    if (!e)
        return FALSE;
    double v;
    if (!sv_num_parse_double(e->value, &v)) {
        g_set_error(error, SV_COMPUTE_ERROR, SV_COMPUTE_ERROR_PARSE,
                    "%s:%d: %s: '%s' is not a number", ini->where, e->line, key, e->value);
        return FALSE;
    }
    *out = v;
    return TRUE;
}
