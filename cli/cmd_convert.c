/* servesim convert IN OUT: re-encode a Chakra ET (.et, .et.gz) or decode it to JSON. */
#include <stdio.h>

#include "cli/cli.h"
#include "proto/proto.h"

static const char convert_usage[] =
    "usage: servesim convert IN OUT\n"
    "\n"
    "Read the Chakra execution trace IN (.et, gzip detected by content) and write OUT:\n"
    "  OUT ending in .json    the decoded trace, {\"global_metadata\": ..., \"nodes\": [...]}\n"
    "                         (protobuf JSON mapping with proto field names)\n"
    "  OUT ending in .gz      the trace re-encoded and gzip-compressed\n"
    "  any other name         the trace re-encoded (each message unpacked and packed again)\n"
    "\n"
    "Malformed input stops with an error naming the message index and byte offset; OUT is\n"
    "then not created. Dependencies on node ids absent from the file are reported as one\n"
    "warning but do not stop the conversion. OUT is written under a temporary name and\n"
    "renamed when complete, except a device or FIFO (/dev/null), written directly. SIGINT,\n"
    "SIGTERM or SIGHUP stop it before the next message: no OUT, exit status 128 + signal.\n";

int sv_cli_convert(int argc, char **argv)
{
    int status = sv_cli_parse_options("convert", convert_usage, NULL, &argc, &argv);
    if (status >= 0)
        return status;
    if (argc != 3) {
        fprintf(stderr, "servesim convert: %s\n\n%s",
                argc > 3 ? "too many arguments" : "expected IN and OUT", convert_usage);
        return 2;
    }
    const char *pos[2] = {argv[1], argv[2]};
    struct sv_proto_convert_stats st;
    GError *err = NULL;
    const volatile sig_atomic_t *sig = sv_cli_signals_catch();
    if (!sv_proto_convert_full(pos[0], pos[1], sig, &st, &err)) {
        /* Stopped by the flag, or failed on a read the signal interrupted (EINTR). */
        int caught = *sig;
        if (caught)
            fprintf(stderr, "servesim convert: interrupted by %s: %s\n", sv_cli_signal_name(caught),
                    err->message);
        else
            fprintf(stderr, "servesim convert: %s\n", err->message);
        g_error_free(err);
        return caught ? 128 + caught : 1;
    }
    if (st.data_dangling + st.ctrl_dangling > 0)
        fprintf(stderr,
                "servesim convert: warning: %s: %" G_GUINT64_FORMAT
                " dependencies on node ids absent from the file (%" G_GUINT64_FORMAT
                " data_deps, %" G_GUINT64_FORMAT " ctrl_deps)\n",
                pos[0], (guint64)(st.data_dangling + st.ctrl_dangling), (guint64)st.data_dangling,
                (guint64)st.ctrl_dangling);
    return 0;
}
