/* The latency model of an instance (or of one of its pipeline stages, planner/stages.c). */
#include "planner/planner_internal.h"

#include <string.h>

/* `kind:` and `dir` relative to the profiles root: summary.json must not depend on where the
 * bundles are installed. */
static char *source_name(const char *kind, const char *root, const char *dir)
{
    size_t n = strlen(root);
    const char *rel = strncmp(dir, root, n) == 0 && dir[n] == '/' ? dir + n + 1 : dir;
    return g_strconcat(kind, rel, NULL);
}

/* The latency model of one instance: the profile bundle when profiles are given and one
 * matches (unless roofline is asked for), else the roofline. *source says which (struct
 * sv_planner_run_observer.on_instance), so that outputs and stderr can say it. */
sv_compute_latency *sv_planner__make_latency(const struct sv_planner_run_cfg *cfg,
                                             const struct sv_planner_instance_cfg *ic,
                                             const struct sv_compute_model_cfg *m, char **source,
                                             GError **error)
{
    GError *e = NULL;
    const char *variant = sv_planner__profile_variant(ic); /* NULL: bf16; legacy, Vidur too */
    if (cfg->latency != SV_PLANNER_RUN_LATENCY_ROOFLINE && cfg->profiles_root) {
        g_autofree char *dir =
            sv_compute_profile_find(cfg->profiles_root, ic->hardware, ic->model_name, variant, &e);
        if (dir) {
            sv_compute_latency *lat = sv_compute_latency_new_profile(dir, m, ic->tp_size, error);
            if (!lat) {
                g_prefix_error(error, "instance %d (%s on %s): ", ic->index, ic->model_name,
                               ic->hardware);
                return NULL;
            }
            *source = source_name("profile:", cfg->profiles_root, dir);
            return lat;
        }
        /* LLMServingSim's older perf_models layout (<hw>/<org>/<model>/tp<N>/layers.csv: the
         * ISPASS'26 artifact's), when no bundle matches. */
        g_autofree char *tp_dir = variant
                                      ? NULL
                                      : sv_compute_legacy_find(cfg->profiles_root, ic->hardware,
                                                               ic->model_name, ic->tp_size, NULL);
        if (tp_dir) {
            g_clear_error(&e);
            sv_compute_latency *lat = sv_compute_latency_new_legacy(tp_dir, m, ic->tp_size, error);
            if (!lat) {
                g_prefix_error(error, "instance %d (%s on %s): ", ic->index, ic->model_name,
                               ic->hardware);
                return NULL;
            }
            *source = source_name("legacy:", cfg->profiles_root, tp_dir);
            return lat;
        }
        /* Vidur's profiling layout (<root>/compute/<device>/<org>/<model>/mlp.csv), when the
         * root is one: its error replaces the bundle's. */
        g_autofree char *vroot = g_build_filename(cfg->profiles_root, "compute", NULL);
        if (!variant && g_file_test(vroot, G_FILE_TEST_IS_DIR)) {
            struct sv_compute_hw_cfg vhw;
            gboolean known =
                sv_compute_hw_catalog_lookup(cfg->cluster->hw_catalog, ic->hardware, &vhw, NULL);
            g_clear_error(&e);
            g_autofree char *vdir = sv_compute_vidur_find(cfg->profiles_root, ic->hardware,
                                                          known ? vhw.name : NULL, m->name, &e);
            if (vdir && !known)
                g_set_error(&e, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                            "Vidur's profiles need the hardware in the catalog (lm_head and "
                            "sampler take its roofline): --hardware-file can add %s",
                            ic->hardware);
            if (vdir && known) {
                sv_compute_latency *lat =
                    sv_compute_latency_new_vidur(vdir, m, ic->tp_size, &vhw, error);
                if (!lat) {
                    g_prefix_error(error, "instance %d (%s on %s): ", ic->index, ic->model_name,
                                   ic->hardware);
                    return NULL;
                }
                *source = g_strdup_printf("vidur:%s (roofline: %s)", vdir + strlen(vroot) + 1,
                                          sv_compute_latency_fallback_ops(lat));
                return lat;
            }
        }
    }
    if (cfg->latency == SV_PLANNER_RUN_LATENCY_PROFILE) {
        if (e)
            g_propagate_prefixed_error(error, e,
                                       "instance %d (%s on %s): --latency profile: ", ic->index,
                                       ic->model_name, ic->hardware);
        else
            g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                        "instance %d (%s on %s): --latency profile: no profiles folder given "
                        "(--profiles DIR or SERVESIM_PROFILES)",
                        ic->index, ic->model_name, ic->hardware);
        return NULL;
    }
    g_clear_error(&e);
    struct sv_compute_hw_cfg hw;
    if (!sv_compute_hw_catalog_lookup(cfg->cluster->hw_catalog, ic->hardware, &hw, error))
        return NULL;
    if (ic->npu_mem_bw_gbps > 0)
        hw.mem_bw_gbps = ic->npu_mem_bw_gbps; /* the config's npu_mem.mem_bw wins */
    sv_compute_latency *lat = sv_compute_latency_new_roofline(m, &hw, ic->tp_size, NULL, error);
    if (lat)
        *source = g_strdup("roofline");
    return lat;
}
