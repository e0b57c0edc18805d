/* Writers of the system layer's configuration files: ASTRA-sim's system JSON and communicator
 * group JSON (CHAKRA_ET.md 3.3 and 3.5), each the exact inverse of its reader in cfg.c, so that a
 * simulated cluster can be handed to ASTRA-sim (or back to `servesim replay`) with no hand-written
 * configs. */
#include "system/system_internal.h"

#include <math.h>
#include <string.h>

/* A JSON string literal (json-glib and nlohmann read UTF-8 as it is; quotes, backslashes and
 * control characters are escaped). */
static void put_string(GString *out, const char *s)
{
    g_string_append_c(out, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        if (*p == '"' || *p == '\\')
            g_string_append_printf(out, "\\%c", *p);
        else if (*p < 0x20)
            g_string_append_printf(out, "\\u%04x", *p);
        else
            g_string_append_c(out, (char)*p);
    }
    g_string_append_c(out, '"');
}

static void put_double(GString *out, double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append(out, sv_cfg_format_double(buf, v));
}

/* Write `text` to `path` through a temporary file renamed over it. */
static gboolean write_atomically(const char *path, const GString *text, GError **error)
{
    GError *e = NULL;
    if (!g_file_set_contents(path, text->str, (gssize)text->len, &e)) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_IO, "%s: %s", path, e->message);
        g_error_free(e);
        return FALSE;
    }
    return TRUE;
}

/* ---- system JSON ---------------------------------------------------------------------------- */

/* The name sv_sys_impl_parse reads back as `im` (CollectiveImplLookup spelling). */
static gboolean put_impl(GString *out, const struct sv_sys_impl *im, const char *key, int d,
                         const char *path, GError **error)
{
    static const char *const names[] = {
        [SV_SYS_IMPL_RING] = "ring",
        [SV_SYS_IMPL_ONE_RING] = "oneRing",
        [SV_SYS_IMPL_DIRECT] = "direct",
        [SV_SYS_IMPL_ONE_DIRECT] = "oneDirect",
        [SV_SYS_IMPL_HALVING_DOUBLING] = "halvingDoubling",
        [SV_SYS_IMPL_ONE_HALVING_DOUBLING] = "oneHalvingDoubling",
        [SV_SYS_IMPL_DOUBLE_BINARY_TREE] = "doubleBinaryTree",
    };
    if ((int)im->kind < 0 || (size_t)im->kind >= G_N_ELEMENTS(names)) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "%s: %s[%d]: unknown collective implementation %d", path, key, d, im->kind);
        return FALSE;
    }
    gboolean direct = im->kind == SV_SYS_IMPL_DIRECT || im->kind == SV_SYS_IMPL_ONE_DIRECT;
    /* The window of a direct implementation: -1 (none) or what the name's digits can say; other
     * kinds have none, whatever the field holds. */
    if (direct && im->direct_window != -1 && (im->direct_window < 1 || im->direct_window > 99999)) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "%s: %s[%d]: direct window %d (expected -1 for none, or 1 to 99999)", path, key,
                    d, im->direct_window);
        return FALSE;
    }
    g_string_append_printf(out, "\"%s", names[im->kind]);
    if (direct && im->direct_window > 0)
        g_string_append_printf(out, "%d", im->direct_window);
    g_string_append_c(out, '"');
    return TRUE;
}

/* A number JSON can hold (and, with `nonneg`, the reader's range). */
static gboolean check_number(double v, gboolean nonneg, const char *key, const char *path,
                             GError **error)
{
    if (isfinite(v) && (!nonneg || v >= 0))
        return TRUE;
    g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, "%s: %s: %g is not a finite number%s",
                path, key, v, nonneg ? " >= 0" : "");
    return FALSE;
}

gboolean sv_sys_cfg_save_json(const struct sv_sys_cfg *cfg, int ndims, const char *path,
                              GError **error)
{
    static const char *const policies[] = {[SV_SYS_SCHED_LIFO] = "LIFO",
                                           [SV_SYS_SCHED_FIFO] = "FIFO",
                                           [SV_SYS_SCHED_EXPLICIT] = "EXPLICIT"};
    /* ASTRA-sim's shipped configs list them in this order. */
    static const sv_sys_coll_type lists[] = {SV_SYS_ALL_REDUCE, SV_SYS_ALL_GATHER,
                                             SV_SYS_REDUCE_SCATTER, SV_SYS_ALL_TO_ALL};
    if (ndims < 1 || ndims > SV_NET_MAX_DIMS) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "%s: %d network dimensions, expected 1 to %d", path, ndims, SV_NET_MAX_DIMS);
        return FALSE;
    }
    if ((int)cfg->scheduling_policy < 0 ||
        (size_t)cfg->scheduling_policy >= G_N_ELEMENTS(policies)) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "%s: scheduling-policy: unknown policy %d", path, cfg->scheduling_policy);
        return FALSE;
    }
    if (cfg->collective_optimization != SV_SYS_OPT_BASELINE &&
        cfg->collective_optimization != SV_SYS_OPT_LOCAL_BW_AWARE) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "%s: collective-optimization: unknown value %d", path,
                    cfg->collective_optimization);
        return FALSE;
    }
    /* The ranges sv_sys_cfg_load_json accepts. */
    if (cfg->endpoint_delay_ns < 0 || cfg->active_chunks_per_dimension < 1 ||
        cfg->active_chunks_per_dimension > 1000000 || cfg->preferred_dataset_splits < 1 ||
        cfg->preferred_dataset_splits > 1000000) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, "%s: %s", path,
                    cfg->endpoint_delay_ns < 0 ? "endpoint-delay must be >= 0"
                    : cfg->preferred_dataset_splits < 1 || cfg->preferred_dataset_splits > 1000000
                        ? "preferred-dataset-splits must be 1 to 1000000"
                        : "active-chunks-per-dimension must be 1 to 1000000");
        return FALSE;
    }
    if (!check_number(cfg->local_mem_bw, TRUE, "local-mem-bw", path, error) ||
        !check_number(cfg->peak_perf_tflops, FALSE, "peak-perf", path, error) ||
        !check_number(cfg->local_reduction_delay, FALSE, "local-reduction-delay", path, error) ||
        !check_number(cfg->comm_scale, FALSE, "comm scale", path, error) ||
        !check_number(cfg->injection_scale, FALSE, "injection scale", path, error))
        return FALSE;
    if (cfg->queues_per_dim < 1) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "%s: queues per dimension %d, must be >= 1", path, cfg->queues_per_dim);
        return FALSE;
    }

    g_autoptr(GString) out = g_string_new("{\n");
    g_string_append_printf(out, "    \"scheduling-policy\": \"%s\",\n",
                           policies[cfg->scheduling_policy]);
    g_string_append_printf(out, "    \"endpoint-delay\": %" G_GINT64_FORMAT ",\n",
                           cfg->endpoint_delay_ns);
    g_string_append_printf(out, "    \"active-chunks-per-dimension\": %d,\n",
                           cfg->active_chunks_per_dimension);
    g_string_append_printf(out, "    \"preferred-dataset-splits\": %d,\n",
                           cfg->preferred_dataset_splits);
    for (size_t i = 0; i < G_N_ELEMENTS(lists); i++) {
        sv_sys_coll_type t = lists[i];
        int n = MIN(cfg->n_impl[t], ndims);
        if (n <= 0)
            continue; /* absent: no collective of the type has dimensions to run over */
        g_autofree char *key = g_strdup_printf("%s-implementation", sv_sys_coll_type_name(t));
        g_string_append_printf(out, "    \"%s\": [", key);
        for (int d = 0; d < n; d++) {
            if (d > 0)
                g_string_append(out, ", ");
            if (!put_impl(out, &cfg->impl[t][d], key, d, path, error))
                return FALSE;
        }
        g_string_append(out, "],\n");
    }
    g_string_append_printf(out, "    \"collective-optimization\": \"%s\",\n",
                           cfg->collective_optimization == SV_SYS_OPT_BASELINE ? "baseline"
                                                                               : "localBWAware");
    g_string_append(out, "    \"local-mem-bw\": ");
    put_double(out, cfg->local_mem_bw);
    /* Not read by ASTRA-sim, present in every config it ships. */
    g_string_append(out, ",\n    \"boost-mode\": 0,\n");
    g_string_append_printf(out, "    \"roofline-enabled\": %d,\n", cfg->roofline_enabled ? 1 : 0);
    g_string_append(out, "    \"peak-perf\": ");
    put_double(out, cfg->peak_perf_tflops);
    g_string_append(out, ",\n    \"local-reduction-delay\": ");
    put_double(out, cfg->local_reduction_delay);
    g_string_append_printf(out, ",\n    \"trace-enabled\": %d,\n", cfg->trace_enabled ? 1 : 0);
    g_string_append_printf(out, "    \"replay-only\": %d,\n", cfg->replay_only ? 1 : 0);
    g_string_append_printf(out, "    \"track-local-mem\": %d,\n", cfg->track_local_mem ? 1 : 0);
    g_string_append_printf(out, "    \"model-shared-bus\": %d", cfg->model_shared_bus ? 1 : 0);
    for (size_t i = 0; i < G_N_ELEMENTS(lists); i++) {
        const char *prefix = cfg->custom_prefix[lists[i]];
        if (prefix == NULL)
            continue;
        /* The reader resolved it against its JSON's folder or the working directory into a
         * path usable from here; absolute, it reads back the same wherever this file goes. */
        g_autofree char *abs = g_canonicalize_filename(prefix, NULL);
        g_string_append_printf(out, ",\n    \"%s-implementation-custom\": [",
                               sv_sys_coll_type_name(lists[i]));
        put_string(out, abs);
        g_string_append_c(out, ']');
    }
    gboolean any_group = FALSE;
    for (int t = 0; t < SV_SYS_TYPE_COUNT; t++) {
        if (cfg->group_impl[t] == SV_SYS_IMPL_RING)
            continue;
        if (cfg->group_impl[t] != SV_SYS_IMPL_DIRECT) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s: servesim-group-implementation.%s: implementation %d (a communicator "
                        "group runs ring or direct only)",
                        path, sv_sys_coll_type_name((sv_sys_coll_type)t), cfg->group_impl[t]);
            return FALSE;
        }
        g_string_append_printf(out, "%s\"%s\": \"direct\"",
                               any_group ? ", " : ",\n    \"servesim-group-implementation\": {",
                               sv_sys_coll_type_name((sv_sys_coll_type)t));
        any_group = TRUE;
    }
    if (any_group)
        g_string_append_c(out, '}');
    /* ASTRA-sim's main takes these as options (--num-queues-per-dim, --comm-scale,
     * --injection-scale); JSON has no comments, so a value other than 1 is named here. */
    if (cfg->queues_per_dim != 1 || cfg->comm_scale != 1.0 || cfg->injection_scale != 1.0) {
        char a[G_ASCII_DTOSTR_BUF_SIZE], b[G_ASCII_DTOSTR_BUF_SIZE];
        g_string_append_printf(out,
                               ",\n    \"servesim-command-line\": \"--num-queues-per-dim=%d "
                               "--comm-scale=%s --injection-scale=%s\"",
                               cfg->queues_per_dim, sv_cfg_format_double(a, cfg->comm_scale),
                               sv_cfg_format_double(b, cfg->injection_scale));
    }
    g_string_append(out, "\n}\n");
    return write_atomically(path, out, error);
}

/* ---- communicator groups -------------------------------------------------------------------- */

gboolean sv_sys_groups_save_json(const sv_sys_groups *groups, const int *ids, int n_ids,
                                 int npu_base, const char *path, GError **error)
{
    SV_ASSERT(ids == NULL || n_ids >= 0);
    int n = ids != NULL ? n_ids : sv_sys_groups_count(groups);
    g_autoptr(GString) out = g_string_new("{");
    for (int i = 0; i < n; i++) {
        int id = ids != NULL ? ids[i] : sv_sys_groups_id_at(groups, i);
        for (int j = 0; ids != NULL && j < i; j++) {
            if (ids[j] == id) {
                g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                            "%s: communicator group %d listed twice", path, id);
                return FALSE;
            }
        }
        int nm = 0;
        const int *m = sv_sys_groups_members(groups, id, &nm);
        if (m == NULL) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, "%s: no communicator group %d",
                        path, id);
            return FALSE;
        }
        g_string_append_printf(out, "%s\"%d\": [", i > 0 ? ", " : "", id);
        for (int k = 0; k < nm; k++) {
            if (m[k] < npu_base) {
                g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                            "%s: communicator group %d: NPU %d is below the first NPU %d of the "
                            "files",
                            path, id, m[k], npu_base);
                return FALSE;
            }
            g_string_append_printf(out, "%s%d", k > 0 ? ", " : "", m[k] - npu_base);
        }
        g_string_append_c(out, ']');
    }
    g_string_append(out, "}\n");
    return write_atomically(path, out, error);
}
