/* Fuzz target: JSON-lines traces (LLMServingSim flat requests and agentic sessions, Mooncake;
 * the first object decides, as `servesim run --workload` does). One input is one trace file. */
#include "fuzz_workload_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = sv_fuzz_input_file(data, size, "trace.jsonl");
    sv_fuzz_read_trace(path, FALSE);
    sv_fuzz_read_trace(path, TRUE);
    return 0;
}
