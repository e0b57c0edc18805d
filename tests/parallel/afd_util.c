#include "tests/parallel/afd_util.h"

#include "tests/test_util.h"

struct sv_planner_cluster_cfg *sv_test_afd_parse(const char *json, GError **e)
{
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_data(p, json, -1, NULL));
    return sv_planner_cluster_from_json(json_parser_get_root(p), "t.json", e);
}

gboolean sv_test_afd_run(const char *json, int n, int in, const char *expert_routing,
                         const char *router, const struct sv_planner_run_observer *obs,
                         struct sv_planner_run_result *res, GError **error)
{
    struct sv_planner_cluster_cfg *c = sv_test_afd_parse(json, error);
    if (!c)
        return FALSE;
    g_autofree char *dir = sv_test_tmpdir();
    g_autoptr(GString) s = g_string_new(NULL);
    for (int i = 0; i < n; i++)
        g_string_append_printf(
            s, "{\"input_toks\": %d, \"output_toks\": 2, \"arrival_time_ns\": 0}\n", in);
    g_autofree char *path = g_build_filename(dir, "trace.jsonl", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(path, s->str, -1, NULL));
    sv_wl_source *src = sv_wl_open(path, NULL, error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(src);
    struct sv_planner_run_cfg cfg = {0};
    cfg.cluster = c;
    cfg.workload = src;
    cfg.latency = SV_PLANNER_RUN_LATENCY_ROOFLINE;
    cfg.host_model = SV_MSG_HOST_NONE;
    cfg.enable_prefix_caching = -1;
    cfg.enable_chunked_prefill = -1;
    cfg.reserve_full_isl = -1;
    cfg.expert_routing = expert_routing;
    cfg.router_name = router;
    cfg.seed = 7;
    cfg.observer = obs;
    gboolean ok = sv_planner_run(&cfg, res, error);
    sv_wl_source_free(src);
    sv_planner_cluster_free(c);
    sv_test_rmtree(dir);
    return ok;
}

void sv_test_afd_models(const char *model, struct sv_compute_model_cfg *m, sv_compute_latency **la,
                        sv_compute_latency **lf)
{
    struct sv_compute_hw_cfg h100, a100;
    CU_ASSERT_FATAL(sv_compute_model_lookup(model, NULL, m, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("H100", &h100, NULL));
    CU_ASSERT_FATAL(sv_compute_hw_lookup("A100", &a100, NULL));
    *la = sv_compute_latency_new_roofline(m, &h100, 1, NULL, NULL);
    *lf = sv_compute_latency_new_roofline(m, &a100, 1, NULL, NULL);
    CU_ASSERT_FATAL(*la && *lf);
    sv_compute_latency_set_cudagraph(*la, 128, 2048);
    sv_compute_latency_set_cudagraph(*lf, 128, 2048);
}

sv_time sv_test_afd_chain_ns(const struct sv_compute_iter_op *ops, int n,
                             const struct sv_compute_layer_seq *seq, int side)
{
    sv_time t = 0;
    for (int k = 0; k < n; k++) {
        gboolean mlp = FALSE;
        for (int j = 0; j < seq->n_mlp; j++)
            mlp = mlp || seq->mlp[j] == ops[k].op;
        if (side == 2 || (side == 1) == mlp)
            t += ops[k].ns > 0 ? ops[k].ns : 1;
    }
    return t;
}
