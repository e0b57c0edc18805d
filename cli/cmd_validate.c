/* servesim validate: a simulated output directory against a measured vLLM run. */
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
    "                    of the simulated run)\n";

int sv_cli_validate(int argc, char **argv)
{
    const char *measured = NULL, *simulated = NULL, *json = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (g_strcmp0(a, "--help") == 0 || g_strcmp0(a, "-h") == 0) {
            fputs(validate_usage, stdout);
            return 0;
        }
        const char **dst = g_strcmp0(a, "--measured") == 0    ? &measured
                           : g_strcmp0(a, "--simulated") == 0 ? &simulated
                           : g_strcmp0(a, "--json") == 0      ? &json
                                                              : NULL;
        if (dst == NULL) {
            fprintf(stderr, "servesim validate: unknown argument '%s'\n\n%s", a, validate_usage);
            return 2;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "servesim validate: %s needs a value\n", a);
            return 2;
        }
        *dst = argv[++i];
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
    if (!sv_metrics_validation_write_json(&v, path, &err)) {
        fprintf(stderr, "servesim validate: %s\n", err->message);
        return 1;
    }
    return 0;
}
