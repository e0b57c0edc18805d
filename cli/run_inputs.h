/* servesim run's inputs (cli/run_inputs.c; docs/serving.md "Quick form", docs/workloads.md
 * "Scaled replay"): the flags that choose the cluster and the workload, checked together. */
#ifndef SV_CLI_RUN_INPUTS_H
#define SV_CLI_RUN_INPUTS_H

#include "planner/planner.h"

/* The flags as given (NULL / 0 = not given); borrowed. */
struct sv_cli_run_inputs {
    const char *cluster, *workload;
    const char *model, *hardware, *pd, *decode_hardware;
    const char *input_len, *output_len, *arrival;
    int64_t tp, pp, instances, decode_tp, requests;
    double qps, time_scale;
    gboolean skip_bad_lines;
};

/* --cluster FILE or the quick cluster flags (--model --hardware --tp --pp --instances --pd
 * --decode-hardware --decode-tp); --workload TRACE (with --time-scale or --qps) or the generator
 * flags (--requests --qps --input-len --output-len --arrival). 0, or exit status 2 with the
 * conflicting flags named on stderr. *builtin: nothing given (the built-in default study). */
int sv_cli_run_check_inputs(const struct sv_cli_run_inputs *in, gboolean *builtin);
/* "P:D" -> two counts in [0, SV_RANGE_DEVICES_MAX], not both 0 (the planner checks P, D >= 1). */
gboolean sv_cli_parse_pd(const char *v, int32_t *p, int32_t *d);
/* The --workload trace, rescaled by --time-scale or to --qps. A first pass over the file finds
 * its span (--qps) and, when `count` (a progress display), its request count: *total, else 0. */
sv_wl_source *sv_cli_run_trace(const struct sv_cli_run_inputs *in, gboolean count, uint64_t *total,
                               GError **error);

#endif
