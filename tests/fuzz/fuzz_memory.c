/* Fuzz target: ASTRA-sim remote memory JSON (`servesim replay --memory`), through memory-tier/'s
 * reader and, for a valid one, a remote memory for 8 NPUs that serves one 1 MiB access from NPU
 * 0 (the runtime arithmetic a replay does; nothing may abort). One input is one JSON file. */
#include "fuzz.h"

#include "core/core.h"
#include "memory-tier/memtier.h"

static void served(sv_engine *eng, void *ctx, uint64_t arg)
{
    (*(int *)ctx)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = sv_fuzz_input_file(data, size, "memory.json");
    GError *e = NULL;
    struct sv_memtier_remote_cfg cfg;
    gboolean ok = sv_memtier_remote_cfg_load_json(path, &cfg, &e);
    sv_fuzz_check(ok, e, path);
    g_clear_error(&e);
    if (!ok)
        return 0;
    sv_engine *eng = sv_engine_new(1);
    sv_memtier_remote *mem = sv_memtier_remote_new(eng, &cfg, 8, &e);
    g_clear_error(&e);
    int done = 0;
    if (mem) {
        if (sv_memtier_remote_access(mem, 0, 1u << 20, FALSE, served, &done, 0, &e)) {
            (void)sv_memtier_remote_runtime(mem, 1u << 20); /* what the access was scheduled with */
            sv_engine_run(eng, SV_TIME_MAX);
        }
        g_clear_error(&e);
    }
    sv_memtier_remote_free(mem);
    sv_engine_free(eng);
    return 0;
}
