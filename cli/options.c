/* Option parsing shared by the subcommands that document their options in a usage text of their
 * own (GOptionContext with GLib's --help turned off). */
#include <stdio.h>

#include "cli/cli.h"

int sv_cli_parse_options(const char *cmd, const char *usage, const GOptionEntry *entries, int *argc,
                         char ***argv)
{
    gboolean help = FALSE;
    const GOptionEntry help_entries[] = {
        {"help", 'h', 0, G_OPTION_ARG_NONE, &help, NULL, NULL},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new(NULL);
    g_option_context_set_help_enabled(ctx, FALSE);
    if (entries)
        g_option_context_add_main_entries(ctx, entries, NULL);
    g_option_context_add_main_entries(ctx, help_entries, NULL);
    g_autoptr(GError) err = NULL;
    if (!g_option_context_parse(ctx, argc, argv, &err)) {
        /* GLib names the option: "Unknown option --x", "Missing argument for --json". */
        fprintf(stderr, "servesim %s: %s\n\n%s", cmd, err->message, usage);
        return 2;
    }
    if (help) {
        fputs(usage, stdout);
        return 0;
    }
    return -1;
}
