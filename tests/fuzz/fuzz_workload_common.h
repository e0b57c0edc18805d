/* Fuzz targets of the trace readers (fuzz_workload.c, fuzz_azure.c): read a whole trace, once
 * failing at the first bad line and once skipping bad lines, and check what comes out. */
#ifndef SV_FUZZ_WORKLOAD_COMMON_H
#define SV_FUZZ_WORKLOAD_COMMON_H

#include "fuzz.h"

#include "workloads/workloads.h"

/* Pull every item of `path` (format AUTO: the name decides) and check each: at least one call,
 * every call with input and output tokens >= 1, arrivals nondecreasing and >= 0, request ids
 * dense; an error names the file. */
void sv_fuzz_read_trace(const char *path, gboolean skip_bad_lines);

#endif
