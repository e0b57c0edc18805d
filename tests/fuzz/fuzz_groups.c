/* Fuzz target: communicator group JSON (`servesim replay --comm-groups`, {"<id>": [npu, ...]}),
 * through system/'s reader and the lookups a replay makes. One input is one JSON file. */
#include "fuzz.h"

#include "system/system.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = sv_fuzz_input_file(data, size, "groups.json");
    GError *e = NULL;
    sv_sys_groups *g = sv_sys_groups_load_json(path, &e);
    sv_fuzz_check(g != NULL, e, path);
    g_clear_error(&e);
    if (!g)
        return 0;
    for (int id = 0; id < 64; id++) {
        int n = -1;
        const int *m = sv_sys_groups_members(g, id, &n);
        for (int i = 0; m && i < n; i++) {
            if (m[i] < 0) {
                fprintf(stderr, "fuzz: group %d has member %d\n", id, m[i]);
                abort();
            }
        }
    }
    sv_sys_groups_free(g);
    return 0;
}
