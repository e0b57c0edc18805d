/* Per-module logging on GLib's log domains: each library's G_LOG_DOMAIN is "servesim-<module>". */
#include <stdio.h>
#include <string.h>

#include "core/core.h"

static const char *level_name(GLogLevelFlags level)
{
    switch (level & G_LOG_LEVEL_MASK) {
    case G_LOG_LEVEL_ERROR:
        return "error";
    case G_LOG_LEVEL_CRITICAL:
        return "critical";
    case G_LOG_LEVEL_WARNING:
        return "warning";
    case G_LOG_LEVEL_MESSAGE:
        return "message";
    case G_LOG_LEVEL_INFO:
        return "info";
    default:
        return "debug";
    }
}

/* The list of modules with debug output, e.g. "network,dag" or "all"; owned by the handler. */
static void log_handler(const char *domain, GLogLevelFlags level, const char *message,
                        gpointer user_data)
{
    const char *debug_modules = user_data;
    const char *module = domain ? domain : "servesim";
    if (g_str_has_prefix(module, "servesim-"))
        module += strlen("servesim-");
    if ((level & (G_LOG_LEVEL_DEBUG | G_LOG_LEVEL_INFO)) != 0) {
        if (debug_modules == NULL)
            return;
        if (strcmp(debug_modules, "all") != 0) {
            g_auto(GStrv) mods = g_strsplit(debug_modules, ",", -1);
            if (!g_strv_contains((const char *const *)mods, module))
                return;
        }
    }
    fprintf(stderr, "servesim[%s] %s: %s\n", module, level_name(level), message);
}

void sv_log_init(const char *debug_modules)
{
    /* The copy is owned by the handler for the rest of the process (called once, from main). */
    char *modules = debug_modules && *debug_modules ? g_strdup(debug_modules) : NULL;
    g_log_set_default_handler(log_handler, modules);
}
