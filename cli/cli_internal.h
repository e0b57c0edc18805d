/* cli's internal headers gathered for white-box tests (scripts/check-layout.sh lets tests include
 * a module's <module>_internal.h, not its other headers): the fuzz target of the run flags
 * (tests/fuzz/fuzz_flags.c) calls sv_cli_parse_pd and sv_cli_run_trace. */
#ifndef SV_CLI_INTERNAL_H
#define SV_CLI_INTERNAL_H

#include "cli/run_inputs.h"

#endif
