/* Fuzz target: ASTRA-sim system JSON (`servesim replay --system`), through system/'s reader and
 * the system layer built from it on a 2x2 ring network (the implementation lists checked against
 * the dimensions, as a replay does). One input is one JSON file. */
#include "fuzz.h"

#include "core/core.h"
#include "network/network.h"
#include "system/system.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = sv_fuzz_input_file(data, size, "system.json");
    GError *e = NULL;
    struct sv_sys_cfg cfg;
    gboolean ok = sv_sys_cfg_load_json(path, &cfg, &e);
    sv_fuzz_check(ok, e, path);
    g_clear_error(&e);
    if (ok) {
        struct sv_net_topo_cfg topo = {.ndims = 2,
                                       .kind = {SV_NET_TOPO_RING, SV_NET_TOPO_RING},
                                       .npus = {2, 2},
                                       .bandwidth_gbps = {50, 50},
                                       .latency_ns = {500, 500}};
        sv_engine *eng = sv_engine_new(1);
        sv_net *net = sv_net_new(eng, &topo, SV_NET_MODEL_ANALYTICAL, &e);
        g_assert_no_error(e);
        sv_sys *sys = sv_sys_new(net, &cfg, NULL, &e);
        g_clear_error(&e);
        if (sys)
            sv_sys_free(sys);
        sv_net_free(net);
        sv_engine_free(eng);
    }
    sv_sys_cfg_clear(&cfg);
    return 0;
}
