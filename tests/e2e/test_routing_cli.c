/* The routers through `servesim run`, end to end: a request goes where the policy says, with the
 * prefix hit that follows. The unit tests of the policies (tests/pd) hand them an instance view
 * they build themselves; this one checks the view the run builds (the prefix_aware router once
 * lost its KV pool there and routed as least_load, unnoticed by the unit test).
 *
 * A Mooncake trace (512 tokens per hash id) on two identical instances, roofline, no ../shared:
 *   A at 0 s: hash ids 1-4 (2,048 tokens)     -> instance 0 (both idle: the lowest index)
 *   B at 0 s: hash ids 10-13 (2,048 tokens)   -> instance 1 (instance 0 holds A)
 *   C at 5 s: hash ids 10-14 (2,560 tokens)   both idle again (A and B finished in well under 5 s)
 * least_load sends C to instance 0 (a tie: the lowest index), no prefix hit. prefix_aware sends it
 * to instance 1, which cached B's 2,048 prompt tokens: the hit is 2,048 tokens (128 blocks of 16;
 * vLLM looks up at most floor((2,560 - 1) / 16) = 159 blocks, and B's blocks are the first 128). */
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

static char *tmp;

static const char trace[] =
    "{\"timestamp\": 0, \"input_length\": 2048, \"output_length\": 8, \"hash_ids\": [1, 2, 3, 4]}\n"
    "{\"timestamp\": 0, \"input_length\": 2048, \"output_length\": 8, \"hash_ids\": [10, 11, 12, "
    "13]}\n"
    "{\"timestamp\": 5000, \"input_length\": 2560, \"output_length\": 8, \"hash_ids\": [10, 11, "
    "12, 13, 14]}\n";

/* requests.csv's instance and prefix_hit_tokens of request `id` after a run with `router`. */
static void route(const char *router, int id, int *instance, long *hit)
{
    g_autofree char *wl = g_build_filename(tmp, "trace.jsonl", NULL);
    g_assert(g_file_set_contents(wl, trace, -1, NULL));
    g_autofree char *out = g_build_filename(tmp, router, NULL);
    const char *args[] = {"--model",     "meta-llama/Llama-3.1-8B",
                          "--hardware",  "H100-SXM",
                          "--instances", "2",
                          "--latency",   "roofline",
                          "--workload",  wl,
                          "--router",    router,
                          "--quiet",     "--output-dir",
                          out,           NULL};
    g_autofree char *o = NULL, *e = NULL;
    int status = -1;
    CU_ASSERT_FATAL(sv_test_servesim(SV_SERVESIM_BIN, "run", args, &o, &e, &status));
    if (status != 0)
        fprintf(stderr, "servesim run --router %s: %s\n", router, e);
    CU_ASSERT_FATAL(status == 0);
    g_autofree char *csv_path = g_build_filename(out, "requests.csv", NULL);
    g_autofree char *csv = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(csv_path, &csv, NULL, NULL));
    g_auto(GStrv) lines = g_strsplit(csv, "\n", -1);
    /* header: request_id,instance,...,prefix_hit_tokens (docs/outputs.md); find the columns */
    g_auto(GStrv) head = g_strsplit(lines[0], ",", -1);
    int c_inst = -1, c_hit = -1;
    for (int k = 0; head[k]; k++) {
        if (!strcmp(head[k], "instance"))
            c_inst = k;
        if (!strcmp(head[k], "prefix_hit_tokens"))
            c_hit = k;
    }
    CU_ASSERT_FATAL(c_inst >= 0 && c_hit >= 0);
    *instance = -1;
    for (int l = 1; lines[l] && *lines[l]; l++) {
        g_auto(GStrv) f = g_strsplit(lines[l], ",", -1);
        if (atoi(f[0]) != id)
            continue;
        *instance = atoi(f[c_inst]);
        *hit = atol(f[c_hit]);
    }
    CU_ASSERT_FATAL(*instance >= 0);
}

static void test_least_load(void)
{
    int inst;
    long hit;
    route("least_load", 0, &inst, &hit);
    CU_ASSERT_EQUAL(inst, 0);
    route("least_load", 1, &inst, &hit);
    CU_ASSERT_EQUAL(inst, 1);
    route("least_load", 2, &inst, &hit);
    CU_ASSERT_EQUAL(inst, 0);
    CU_ASSERT_EQUAL(hit, 0);
}

static void test_prefix_aware(void)
{
    int inst;
    long hit;
    route("prefix_aware", 0, &inst, &hit);
    CU_ASSERT_EQUAL(inst, 0);
    route("prefix_aware", 1, &inst, &hit);
    CU_ASSERT_EQUAL(inst, 1);
    route("prefix_aware", 2, &inst, &hit);
    CU_ASSERT_EQUAL(inst, 1);
    CU_ASSERT_EQUAL(hit, 2048);
}

int main(void)
{
    tmp = sv_test_tmpdir();
    static const sv_test_case cases[] = {
        {"least_load", test_least_load},
        {"prefix_aware", test_prefix_aware},
        {NULL, NULL},
    };
    sv_test_add_suite("routing_cli", cases);
    int rc = sv_test_run();
    sv_test_rmtree(tmp);
    g_free(tmp);
    return rc;
}
