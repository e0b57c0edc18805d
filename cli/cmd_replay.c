/* servesim replay: option parsing and printing around the replay library (replay/replay.h).
 *
 * Output: per NPU, `sys[<i>] finished, <T> cycles, exposed communication <E> cycles.` as
 * ASTRA-sim's Workload::report prints it, then a short summary. docs/replay.md. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <glib.h>

#include "cli/cli.h"
#include "core/core.h"
#include "network/network.h"
#include "replay/replay.h"

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void print_finished(const struct sv_replay_result *res)
{
    for (int k = 0; k < res->n_finished; k++) {
        const struct sv_replay_npu_result *n = &res->finished[k];
        printf("sys[%d] finished, %" G_GINT64_FORMAT
               " cycles, exposed communication %" G_GINT64_FORMAT " cycles.\n",
               n->npu, n->finish_ns, n->exposed_comm_ns);
    }
}

struct replay_args {
    char *workload;
    char *system;
    char *network;
    char *memory;
    char *groups;
    char *model;
    char *collectives;
    gboolean ignore_ctrl_deps;
    gboolean precise_durations;
};

int sv_cli_replay(int argc, char **argv)
{
    double t0 = wall_now();
    struct replay_args o = {0};
    GOptionEntry entries[] = {
        {"workload", 'w', 0, G_OPTION_ARG_FILENAME, &o.workload,
         "ET prefix: reads PREFIX.<npu>.et for every NPU", "PREFIX"},
        {"system", 's', 0, G_OPTION_ARG_FILENAME, &o.system, "ASTRA-sim system JSON", "SYS.json"},
        {"network", 'n', 0, G_OPTION_ARG_FILENAME, &o.network,
         "ASTRA-sim analytical network YAML (gives the number of NPUs)", "NET.yml"},
        {"memory", 'm', 0, G_OPTION_ARG_FILENAME, &o.memory,
         "ASTRA-sim remote memory JSON (default: NO_MEMORY_EXPANSION)", "MEM.json"},
        {"comm-groups", 'g', 0, G_OPTION_ARG_FILENAME, &o.groups,
         "communicator groups JSON {\"<id>\": [npu, ...]}", "G.json"},
        {"network-model", 0, 0, G_OPTION_ARG_STRING, &o.model,
         "analytical (ASTRA-sim congestion-unaware, default) | fifo (congestion-aware) | flow "
         "(max-min fair) | ideal",
         "MODEL"},
        {"ignore-ctrl-deps", 0, 0, G_OPTION_ARG_NONE, &o.ignore_ctrl_deps,
         "only data_deps gate a node (Chakra feeder v1); dangling ctrl_deps are dropped", NULL},
        {"precise-durations", 0, 0, G_OPTION_ARG_NONE, &o.precise_durations,
         "COMP_NODE durations from servesim's sv_duration_ns attribute (exact nanoseconds) "
         "instead of duration_micros x 1000 ns, what ASTRA-sim and Chakra read (the default; "
         "servesim writes duration_micros truncated to whole microseconds)",
         NULL},
        {"collectives", 0, 0, G_OPTION_ARG_STRING, &o.collectives,
         "fast (default: collectives whose links carry nothing else in closed form) | messages "
         "(every message through the network; the same cycles, docs/collectives.md)",
         "MODE"},
        /* ASTRA-sim's own option names, so its command lines work unchanged. */
        {"workload-configuration", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &o.workload,
         NULL, NULL},
        {"system-configuration", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &o.system, NULL,
         NULL},
        {"network-configuration", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &o.network, NULL,
         NULL},
        {"remote-memory-configuration", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &o.memory,
         NULL, NULL},
        {"comm-group-configuration", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &o.groups,
         NULL, NULL},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GOptionContext) octx = g_option_context_new("- run Chakra ET files (one per NPU) "
                                                          "with ASTRA-sim's workload semantics");
    g_option_context_add_main_entries(octx, entries, NULL);
    g_option_context_set_summary(
        octx, "Prints, per NPU, ASTRA-sim's line 'sys[<i>] finished, <T> cycles, exposed "
              "communication <E> cycles.' (1 cycle = 1 ns), then a summary.");
    GError *error = NULL;
    int status = 2;
    struct sv_replay_result res = {0};
    if (!g_option_context_parse(octx, &argc, &argv, &error))
        goto out;
    if (argc > 1) {
        error =
            g_error_new(SV_CORE_ERROR, SV_CORE_ERROR_INVALID, "unexpected argument '%s'", argv[1]);
        goto out;
    }
    const char *missing = o.workload == NULL  ? "--workload"
                          : o.system == NULL  ? "--system"
                          : o.network == NULL ? "--network"
                                              : NULL;
    if (missing != NULL) {
        error = g_error_new(SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                            "missing option %s (see servesim replay --help)", missing);
        goto out;
    }
    status = 1;
    struct sv_replay_opts ro = {
        .workload = o.workload,
        .system = o.system,
        .network = o.network,
        .memory = o.memory,
        .comm_groups = o.groups,
        .ignore_ctrl_deps = o.ignore_ctrl_deps,
        .precise_durations = o.precise_durations,
    };
    if (!sv_net_model_parse(o.model != NULL ? o.model : "analytical", &ro.model, &error))
        goto out;
    if (o.collectives != NULL && strcmp(o.collectives, "fast") != 0 &&
        strcmp(o.collectives, "messages") != 0) {
        error = g_error_new(SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                            "--collectives: '%s' (expected fast or messages)", o.collectives);
        status = 2;
        goto out;
    }
    ro.collectives_with_messages = o.collectives != NULL && strcmp(o.collectives, "messages") == 0;
    gboolean ok = sv_replay_run(&ro, &res, &error);
    /* A run that cannot finish still reports the NPUs that did, before the diagnosis. */
    print_finished(&res);
    fflush(stdout);
    if (!ok)
        goto out;
    printf("replay summary: %d NPUs, network model %s, makespan %" G_GINT64_FORMAT
           " ns, %" G_GUINT64_FORMAT " events, %" G_GUINT64_FORMAT " messages (%" G_GUINT64_FORMAT
           " bytes), wall time %.3f s\n",
           res.npus, sv_net_model_name(res.model), res.makespan_ns, res.events, res.net.messages,
           res.net.bytes_sent, wall_now() - t0);
    status = 0;
out:
    if (error != NULL) {
        fprintf(stderr, "servesim replay: %s\n", error->message);
        g_error_free(error);
    }
    sv_replay_result_clear(&res);
    g_free(o.workload);
    g_free(o.system);
    g_free(o.network);
    g_free(o.memory);
    g_free(o.groups);
    g_free(o.model);
    g_free(o.collectives);
    return status;
}
