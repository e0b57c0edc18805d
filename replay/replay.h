/* servesim replay: ASTRA-sim's workload layer. Runs per-NPU Chakra ET files (<prefix>.<npu>.et)
 * on the system layer (system/system.h) with ASTRA-sim's node semantics (Workload.cc at astra-sim
 * HEAD 518bd51): compute nodes replayed or timed by its roofline, comm and memory nodes through
 * the system layer's executor handlers, custom collective plans from "<coll>-implementation-
 * custom" ETs, and a diagnosis when the run cannot finish. docs/replay.md. */
#ifndef SV_REPLAY_H
#define SV_REPLAY_H

#include "core/core.h"
#include "network/network.h"

G_BEGIN_DECLS

/* What `servesim replay` takes (ASTRA-sim's --workload-configuration etc.). Paths are not
 * copied; they must outlive sv_replay_run. */
struct sv_replay_opts {
    const char *workload;      /* ET prefix: <workload>.<npu>.et for every NPU of the network */
    const char *system;        /* ASTRA-sim system JSON */
    const char *network;       /* ASTRA-sim analytical network YAML (gives the number of NPUs) */
    const char *memory;        /* remote memory JSON; NULL = NO_MEMORY_EXPANSION */
    const char *comm_groups;   /* communicator groups JSON; NULL = none */
    sv_net_model model;        /* transport timing model (ASTRA-sim: analytical) */
    gboolean ignore_ctrl_deps; /* only data_deps gate a node (Chakra feeder v1) */
    /* Durations (workload and custom collective ETs): FALSE = duration_micros x 1000 ns, what
     * ASTRA-sim and Chakra read; TRUE = servesim's exact sv_duration_ns where present
     * (sv_dag_et_opts.precise_durations). */
    gboolean precise_durations;
    /* Send every message of every collective (FALSE: phases whose links carry nothing else run
     * without them, docs/collectives.md "Closed form"; the same cycles either way). */
    gboolean collectives_with_messages;
};

/* One NPU's report (Workload::report): 1 cycle = 1 ns. */
struct sv_replay_npu_result {
    int npu;
    sv_time finish_ns;
    sv_time exposed_comm_ns; /* finish time minus GPU compute time */
};

struct sv_replay_result {
    int npus;
    /* The NPUs that finished, in report order (finish time, then NPU id). */
    int n_finished;
    struct sv_replay_npu_result *finished;
    sv_time makespan_ns;
    uint64_t events; /* engine events run */
    sv_net_model model;
    struct sv_net_stats net;
};

/* Run the replay. On success every NPU finished. Fails on bad input (what, then where), on an
 * error raised by a node, and, with SV_DAG_ERROR_STALL, when some NPUs cannot finish: then
 * `out` still lists the NPUs that did and the message is the diagnosis. Clear `out` either way. */
gboolean sv_replay_run(const struct sv_replay_opts *opts, struct sv_replay_result *out,
                       GError **error);
void sv_replay_result_clear(struct sv_replay_result *res); /* accepts NULL */

G_END_DECLS

#endif
