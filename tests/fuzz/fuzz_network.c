/* Fuzz target: ASTRA-sim analytical network YAML (`servesim replay --network`), through
 * network/'s reader and, for a network of at most 256 NPUs, one 1 MiB message from the first to
 * the last NPU under each timing model, as a replay would send it (no input may reach an
 * assertion on the engine's path: an arrival beyond the time horizon is an error, not an abort).
 * One input is one YAML file. */
#include "fuzz.h"

#include "core/core.h"
#include "network/network.h"

static void arrived(sv_engine *eng, void *ctx, uint64_t arg)
{
    (*(int *)ctx)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = sv_fuzz_input_file(data, size, "network.yml");
    GError *e = NULL;
    struct sv_net_topo_cfg cfg;
    gboolean ok = sv_net_topo_load_yaml(path, &cfg, &e);
    sv_fuzz_check(ok, e, path);
    g_clear_error(&e);
    if (!ok)
        return 0;
    int n = sv_net_topo_npus(&cfg);
    if (n < 2 || n > 256)
        return 0;
    static const sv_net_model models[] = {SV_NET_MODEL_ANALYTICAL, SV_NET_MODEL_FIFO,
                                          SV_NET_MODEL_FLOW, SV_NET_MODEL_IDEAL};
    for (size_t k = 0; k < G_N_ELEMENTS(models); k++) {
        sv_engine *eng = sv_engine_new(1);
        sv_net *net = sv_net_new(eng, &cfg, models[k], &e);
        sv_fuzz_check(net != NULL, e, path);
        g_clear_error(&e);
        int done = 0;
        if (net) {
            sv_net_send(net, 0, n - 1, 1u << 20, arrived, &done, 0);
            sv_engine_run(eng, SV_TIME_MAX);
        }
        sv_net_free(net);
        sv_engine_free(eng);
    }
    return 0;
}
