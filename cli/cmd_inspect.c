/* servesim inspect FILE: summary of a Chakra ET file. */
#include <stdio.h>

#include "cli/cli.h"
#include "proto/proto.h"

static const char inspect_usage[] =
    "usage: servesim inspect [--json] FILE\n"
    "\n"
    "Stream the Chakra execution trace FILE (.et, gzip detected by content) once and print:\n"
    "GlobalMetadata (version, attributes), node count by type, collective types, data/ctrl\n"
    "dependency totals and averages, dependencies on node ids absent from the file, attribute\n"
    "name:kind counts, node id range and total duration_micros.\n"
    "\n"
    "  --json   machine-readable output (one JSON object)\n";

int sv_cli_inspect(int argc, char **argv)
{
    gboolean as_json = FALSE;
    const GOptionEntry entries[] = {
        {"json", 0, 0, G_OPTION_ARG_NONE, &as_json, NULL, NULL},
        G_OPTION_ENTRY_NULL,
    };
    int status = sv_cli_parse_options("inspect", inspect_usage, entries, &argc, &argv);
    if (status >= 0)
        return status;
    if (argc != 2) {
        fprintf(stderr, "servesim inspect: %s\n\n%s",
                argc > 2 ? "too many arguments" : "expected FILE", inspect_usage);
        return 2;
    }
    const char *path = argv[1];
    GError *err = NULL;
    struct sv_proto_summary *s = sv_proto_summary_new(path, &err);
    if (!s) {
        fprintf(stderr, "servesim inspect: %s\n", err->message);
        g_error_free(err);
        return 1;
    }
    if (as_json) {
        g_autoptr(JsonNode) j = sv_proto_summary_to_json(s);
        g_autofree char *text = sv_proto_json_to_text(j);
        fputs(text, stdout);
    } else {
        g_autofree char *text = sv_proto_summary_to_text(s);
        fputs(text, stdout);
    }
    sv_proto_summary_free(s);
    return 0;
}
