/* Fuzz target: Azure LLM inference traces (CSV: TIMESTAMP, ContextTokens, GeneratedTokens). One
 * input is one .csv file. */
#include "fuzz_workload_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = sv_fuzz_input_file(data, size, "trace.csv");
    sv_fuzz_read_trace(path, FALSE);
    sv_fuzz_read_trace(path, TRUE);
    return 0;
}
