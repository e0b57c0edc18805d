/* servesim validate: a simulated output directory against a measured vLLM run. */
#include <signal.h>
#include <stdio.h>

#include "cli/cli.h"
#include "metrics/metrics.h"

static const char validate_usage[] =
    "usage: servesim validate --measured DIR --simulated DIR [--json OUT]\n"
    "\n"
    "Compare a servesim output directory (requests.csv, timeseries.csv) with a measured vLLM run\n"
    "in the layout of LLMServingSim's `bench run` (requests.jsonl, timeseries.csv). Prints mean,\n"
    "median, P90, P95 and P99 of TTFT, TPOT and end-to-end latency (ms) side by side with the\n"
    "difference in percent, then the per-tick error (MAE, MAPE) of prompt and generation\n"
    "throughput and of the running and waiting counts. docs/outputs.md has the definitions.\n"
    "\n"
    "  --measured DIR    measured run (requests.jsonl, timeseries.csv)\n"
    "  --simulated DIR   servesim run --output-dir DIR\n"
    "  --json OUT        write the comparison as JSON to OUT (default DIR/validation.json\n"
    "                    of the simulated run; a device or FIFO such as /dev/null is\n"
    "                    written directly, a file is replaced whole)\n";

int sv_cli_validate(int argc, char **argv)
{
    g_autofree char *measured = NULL, *simulated = NULL, *json = NULL;
    const GOptionEntry entries[] = {
        {"measured", 0, 0, G_OPTION_ARG_FILENAME, &measured, NULL, "DIR"},
        {"simulated", 0, 0, G_OPTION_ARG_FILENAME, &simulated, NULL, "DIR"},
        {"json", 0, 0, G_OPTION_ARG_FILENAME, &json, NULL, "OUT"},
        G_OPTION_ENTRY_NULL,
    };
    int status = sv_cli_parse_options("validate", validate_usage, entries, &argc, &argv);
    if (status >= 0)
        return status;
    if (argc > 1) {
        fprintf(stderr, "servesim validate: unexpected argument '%s'\n\n%s", argv[1],
                validate_usage);
        return 2;
    }
    if (measured == NULL || simulated == NULL) {
        fprintf(stderr, "servesim validate: --measured and --simulated are required\n\n%s",
                validate_usage);
        return 2;
    }
    struct sv_metrics_validation v;
    g_autoptr(GError) err = NULL;
    if (!sv_metrics_validate(measured, simulated, &v, &err)) {
        fprintf(stderr, "servesim validate: %s\n", err->message);
        return 1;
    }
    sv_metrics_validation_print(&v, stdout);
    g_autofree char *path =
        json != NULL ? g_strdup(json) : g_build_filename(simulated, "validation.json", NULL);
    /* The JSON goes to a temporary file renamed into place: SIGINT, SIGTERM and SIGHUP wait
     * until that is done (a few KB), so that none leaves the temporary file behind; one that
     * arrived meanwhile then ends the program as it would have. */
    sigset_t stop, old;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    sigprocmask(SIG_BLOCK, &stop, &old);
    gboolean ok = sv_metrics_validation_write_json(&v, path, &err);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (!ok) {
        fprintf(stderr, "servesim validate: %s\n", err->message);
        return 1;
    }
    return 0;
}
