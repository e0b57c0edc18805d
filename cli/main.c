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
    {"validate", sv_cli_validate, "compare a run's outputs with a measured vLLM run"},
    {"replay", sv_cli_replay, "run Chakra ET files on the system simulator (ASTRA-sim semantics)"},
    {"convert", sv_cli_convert, "re-encode a Chakra ET file (.et, .et.gz) or decode it to .json"},
    {"inspect", sv_cli_inspect, "summarise a Chakra ET file"},
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
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("servesim 0.1.0\n");
        return 0;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(commands); i++) {
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "servesim: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
