/* servesim: discrete-event simulator of LLM serving clusters. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/core.h"

struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
#ifdef SV_HAVE_RUN
    {"run", sv_cli_run, "simulate LLM serving (no arguments: a built-in default study)"},
#endif
    {"report", sv_cli_report, "write an HTML report with plots of one or several run folders"},
    {"sweep", sv_cli_sweep, "run a grid of runs, or search it for the cheapest that meets SLOs"},
    {"validate", sv_cli_validate, "compare a run's outputs with a measured vLLM run"},
    {"replay", sv_cli_replay, "run Chakra ET files on the system simulator (ASTRA-sim semantics)"},
    {"convert", sv_cli_convert, "re-encode a Chakra ET file (.et, .et.gz) or decode it to .json"},
    {"inspect", sv_cli_inspect, "summarise a Chakra ET file"},
    {"afd", sv_cli_afd, "time one decode iteration under attention/FFN disaggregation"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: servesim <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < G_N_ELEMENTS(commands); i++)
        fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'servesim <command> --help' describes a command's options.\n"
                 "Environment: SERVESIM_DEBUG=<module,...|all> prints debug logs.\n");
}

int main(int argc, char **argv)
{
    sv_log_init(g_getenv("SERVESIM_DEBUG"));
    if (argc < 2) {
#ifdef SV_HAVE_RUN
        return sv_cli_run(argc, argv);
#else
        usage(stdout);
        return 0;
#endif
    }
    gboolean help = FALSE, version = FALSE;
    const GOptionEntry entries[] = {
        {"help", 'h', 0, G_OPTION_ARG_NONE, &help, NULL, NULL},
        {"version", 0, 0, G_OPTION_ARG_NONE, &version, NULL, NULL},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new(NULL);
    g_option_context_set_help_enabled(ctx, FALSE); /* usage() is the documented text */
    /* Stop at the command: what follows it is the command's to parse. */
    g_option_context_set_strict_posix(ctx, TRUE);
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) err = NULL;
    if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
        fprintf(stderr, "servesim: %s\n\n", err->message);
        usage(stderr);
        return 2;
    }
    if (help || (argc >= 2 && strcmp(argv[1], "help") == 0)) {
        usage(stdout);
        return 0;
    }
    if (version) {
        printf("servesim %s\n", SV_VERSION); /* the project's VERSION (CMakeLists.txt) */
        return 0;
    }
    if (argc < 2) {
        fprintf(stderr, "servesim: expected a command\n\n");
        usage(stderr);
        return 2;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(commands); i++) {
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "servesim: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
