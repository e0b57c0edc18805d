/* run.json: what a `servesim run` output folder records of its inputs (docs/outputs.md
 * "run.json"). Byte-identical for identical runs: no clock, host name or working directory. */
#ifndef SV_CLI_RUN_INFO_H
#define SV_CLI_RUN_INFO_H

#include "planner/planner.h"

struct sv_cli_run_info {
    int argc; /* the command's arguments as given, argv[0] the command ("run") */
    char *const *argv;
    uint64_t seed;
    const char *cluster_path;  /* --cluster FILE; NULL: the quick form or the built-in run */
    const char *workload_path; /* --workload FILE; NULL: the generator (its flags are in argv) */
    const struct sv_planner_cluster_cfg *cluster; /* as resolved (per-instance identity) */
    char *const *latency_sources;                 /* per instance (metrics' summary) */
    const sv_metrics *metrics; /* the resolved limits per instance (sv_metrics_get_instance) */
};

/* `git describe --always --tags --dirty` of the tree servesim was built from ("" outside git),
 * generated at every build (cli/git_describe.cmake). */
extern const char sv_cli_git_describe[];

/* The document (pretty JSON, 2-space indent, trailing newline); NULL with an error naming the
 * file when the cluster config cannot be read back. Caller frees. */
char *sv_cli_run_info_json(const struct sv_cli_run_info *ri, GError **error);

#endif
