/* `servesim run --profiles DIR` on Vidur's profiling layout (docs/compute.md "Vidur's profiles"):
 * the peer study picks Vidur's A100 profiles for Llama-2-7B and says so on stderr and in
 * summary.json; a model Vidur did not profile is an error under --latency profile that names
 * what is missing. */
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <json-glib/json-glib.h>
#include <string.h>

#define VIDUR SV_SHARED "/reference/vidur/profiling"

static int run_servesim(const char *const *args, char **err)
{
    GPtrArray *argv = g_ptr_array_new();
    g_autofree char *bin = g_canonicalize_filename(SV_SERVESIM_BIN, NULL);
    g_ptr_array_add(argv, bin);
    g_ptr_array_add(argv, (char *)"run");
    for (int i = 0; args[i]; i++)
        g_ptr_array_add(argv, (char *)args[i]);
    g_ptr_array_add(argv, NULL);
    int status = -1;
    gboolean ok = g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL,
                               err, &status, NULL);
    g_ptr_array_free(argv, TRUE);
    if (!ok)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void test_peer_study_on_vidur(void)
{
    SV_REQUIRE_SHARED("reference/vidur/profiling/compute/a100", "Vidur's A100 profiles");
    g_autofree char *dir = sv_test_tmpdir();
    const char *args[] = {
        "--model",    "Llama-2-7B", "--hardware",   "A100-80GB", "--requests",   "60",
        "--qps",      "5",          "--input-len",  "512",       "--output-len", "128",
        "--profiles", VIDUR,        "--output-dir", dir,         "--quiet",      NULL};
    char *err = NULL;
    int rc = run_servesim(args, &err);
    if (rc != 0)
        fprintf(stderr, "%s", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT(strstr(err, "latency vidur:a100/meta-llama/Llama-2-7b-hf (roofline: attention, "
                          "lm_head, sampler) (Vidur's profiling layout)") != NULL);
    g_free(err);
    g_autofree char *sum = g_build_filename(dir, "summary.json", NULL);
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_file(p, sum, NULL));
    JsonArray *src = json_object_get_array_member(json_node_get_object(json_parser_get_root(p)),
                                                  "latency_source");
    CU_ASSERT_FATAL(src && json_array_get_length(src) == 1);
    CU_ASSERT(g_str_has_prefix(json_array_get_string_element(src, 0),
                               "vidur:a100/meta-llama/Llama-2-7b-hf"));
    sv_test_rmtree(dir);
}

static void test_unprofiled_model(void)
{
    SV_REQUIRE_SHARED("reference/vidur/profiling/compute/a100", "Vidur's A100 profiles");
    g_autofree char *dir = sv_test_tmpdir();
    const char *args[] = {
        "--model",   "Llama-3.1-8B", "--hardware",   "A100", "--requests", "5", "--profiles", VIDUR,
        "--latency", "profile",      "--output-dir", dir,    "--quiet",    NULL};
    char *err = NULL;
    CU_ASSERT_EQUAL(run_servesim(args, &err), 1);
    CU_ASSERT(err && strstr(err, "no Vidur profile for model meta-llama/Llama-3.1-8B on a100"));
    g_free(err);
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"peer_study_on_vidur", test_peer_study_on_vidur},
        {"unprofiled_model", test_unprofiled_model},
        {NULL, NULL},
    };
    sv_test_add_suite("vidur_cli", cases);
    return sv_test_run();
}
