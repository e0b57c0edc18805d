/* Configuration of the collectives system layer: ASTRA-sim's system JSON (Sys::initialize_sys and
 * astraccl/CollectiveImplLookup.cc at astra-sim HEAD 518bd51, CHAKRA_ET.md 3.3), communicator
 * group files (CHAKRA_ET.md 3.5) and custom collective plans. */
#include "system/system_internal.h"

#include <stdlib.h>
#include <string.h>

static const char *const type_names[SV_SYS_TYPE_COUNT] = {
    "all-reduce", "reduce",         "all-gather",           "gather",  "scatter", "broadcast",
    "all-to-all", "reduce-scatter", "reduce-scatter-block", "barrier",
};

const char *sv_sys_coll_type_name(sv_sys_coll_type type)
{
    if ((int)type < 0 || type >= SV_SYS_TYPE_COUNT)
        return "unknown";
    return type_names[type];
}

const struct sv_net_msg_label *sv_sys__coll_label(sv_sys_coll_type type)
{
    /* constant, one per type in type_names' order, and "unknown" last */
    static const struct sv_net_msg_label labels[SV_SYS_TYPE_COUNT + 1] = {
        {SV_NET_MSG_COLLECTIVE, "all-reduce"},
        {SV_NET_MSG_COLLECTIVE, "reduce"},
        {SV_NET_MSG_COLLECTIVE, "all-gather"},
        {SV_NET_MSG_COLLECTIVE, "gather"},
        {SV_NET_MSG_COLLECTIVE, "scatter"},
        {SV_NET_MSG_COLLECTIVE, "broadcast"},
        {SV_NET_MSG_COLLECTIVE, "all-to-all"},
        {SV_NET_MSG_COLLECTIVE, "reduce-scatter"},
        {SV_NET_MSG_COLLECTIVE, "reduce-scatter-block"},
        {SV_NET_MSG_COLLECTIVE, "barrier"},
        {SV_NET_MSG_COLLECTIVE, "unknown"},
    };
    G_STATIC_ASSERT(G_N_ELEMENTS(labels) == G_N_ELEMENTS(type_names) + 1);
    if ((int)type < 0 || type >= SV_SYS_TYPE_COUNT)
        return &labels[SV_SYS_TYPE_COUNT];
    return &labels[type];
}

void sv_sys_cfg_init(struct sv_sys_cfg *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    /* Sys::Sys defaults: LIFO is the value SchedulingPolicy gets from the shipped configs;
     * upstream leaves it uninitialised when the key is absent, we pick LIFO (all shipped
     * system JSONs say LIFO except custom_collective.json, which says FIFO). */
    cfg->scheduling_policy = SV_SYS_SCHED_LIFO;
    cfg->collective_optimization = SV_SYS_OPT_BASELINE;
    cfg->endpoint_delay_ns = 10;          /* Sys::Sys: communication_delay = 10 */
    cfg->active_chunks_per_dimension = 1; /* Sys::Sys */
    cfg->preferred_dataset_splits = 0;    /* must come from the file */
    cfg->local_reduction_delay = 1;       /* Sys::Sys */
    cfg->queues_per_dim = 1;              /* AstraSim_Analytical main: --num-queues-per-dim 1 */
    cfg->comm_scale = 1.0;                /* main: --comm-scale 1 */
    cfg->injection_scale = 1.0;           /* main: --injection-scale 1 */
    cfg->fast_collectives = TRUE;         /* servesim: docs/collectives.md "Closed form" */
}

void sv_sys_cfg_clear(struct sv_sys_cfg *cfg)
{
    if (cfg == NULL)
        return;
    for (int t = 0; t < SV_SYS_TYPE_COUNT; t++)
        g_clear_pointer(&cfg->custom_prefix[t], g_free);
}

gboolean sv_sys_impl_parse(const char *name, struct sv_sys_impl *out, GError **error)
{
    /* CollectiveImplLookup::generate_collective_impl_from_input: exact names, and "direct" /
     * "oneDirect" optionally followed by a window (stoi of up to 5 characters). */
    out->direct_window = -1;
    if (strcmp(name, "ring") == 0) {
        out->kind = SV_SYS_IMPL_RING;
    } else if (strcmp(name, "oneRing") == 0) {
        out->kind = SV_SYS_IMPL_ONE_RING;
    } else if (strcmp(name, "doubleBinaryTree") == 0) {
        out->kind = SV_SYS_IMPL_DOUBLE_BINARY_TREE;
    } else if (strcmp(name, "halvingDoubling") == 0) {
        out->kind = SV_SYS_IMPL_HALVING_DOUBLING;
    } else if (strcmp(name, "oneHalvingDoubling") == 0) {
        out->kind = SV_SYS_IMPL_ONE_HALVING_DOUBLING;
    } else if (g_str_has_prefix(name, "direct") || g_str_has_prefix(name, "oneDirect")) {
        gboolean one = g_str_has_prefix(name, "oneDirect");
        const char *rest = name + (one ? 9 : 6);
        out->kind = one ? SV_SYS_IMPL_ONE_DIRECT : SV_SYS_IMPL_DIRECT;
        if (*rest != '\0') {
            char *end = NULL;
            long w = strtol(rest, &end, 10);
            if (end == rest || *end != '\0' || w <= 0 || w > 99999) {
                g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                            "bad window in collective implementation '%s'", name);
                return FALSE;
            }
            out->direct_window = (int)w;
        }
    } else {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "unknown collective implementation '%s' (expected ring, oneRing, direct[N], "
                    "oneDirect[N], halvingDoubling, oneHalvingDoubling, doubleBinaryTree)",
                    name);
        return FALSE;
    }
    return TRUE;
}

/* A 0/1 flag: ASTRA-sim tests `j[key] != 0`; we accept integers and booleans. */
static gboolean get_flag(JsonObject *obj, const char *key, const char *path, gboolean *out,
                         GError **error)
{
    *out = FALSE;
    if (!json_object_has_member(obj, key))
        return TRUE;
    JsonNode *n = json_object_get_member(obj, key);
    if (JSON_NODE_HOLDS_VALUE(n)) {
        GType t = json_node_get_value_type(n);
        if (t == G_TYPE_BOOLEAN) {
            *out = json_node_get_boolean(n);
            return TRUE;
        }
        if (t == G_TYPE_INT64) {
            *out = json_node_get_int(n) != 0;
            return TRUE;
        }
        if (t == G_TYPE_DOUBLE) {
            *out = json_node_get_double(n) != 0.0;
            return TRUE;
        }
    }
    g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, "%s: %s must be 0/1 or a boolean", path,
                key);
    return FALSE;
}

static gboolean get_string_list(JsonObject *obj, const char *key, const char *path, JsonArray **out,
                                GError **error)
{
    *out = NULL;
    if (!json_object_has_member(obj, key))
        return TRUE;
    JsonNode *n = json_object_get_member(obj, key);
    if (!JSON_NODE_HOLDS_ARRAY(n)) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, "%s: %s must be a list of strings",
                    path, key);
        return FALSE;
    }
    JsonArray *a = json_node_get_array(n);
    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonNode *e = json_array_get_element(a, i);
        if (!JSON_NODE_HOLDS_VALUE(e) || json_node_get_value_type(e) != G_TYPE_STRING) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, "%s: %s[%u] must be a string",
                        path, key, i);
            return FALSE;
        }
    }
    *out = a;
    return TRUE;
}

/* The collective types that have "<name>-implementation" keys. */
static const sv_sys_coll_type impl_types[] = {SV_SYS_ALL_REDUCE, SV_SYS_REDUCE_SCATTER,
                                              SV_SYS_ALL_GATHER, SV_SYS_ALL_TO_ALL};

static gboolean custom_exists(const char *prefix)
{
    g_autofree char *probe = g_strdup_printf("%s.0.et", prefix);
    return g_file_test(probe, G_FILE_TEST_EXISTS);
}

/* Where "<coll>-implementation-custom" points. ASTRA-sim opens the path relative to its working
 * directory (CustomAlgorithm.cc), and its shipped configs name paths relative to the ASTRA-sim
 * checkout ("examples/system/custom_collectives/<dir>/<prefix>"), which do not exist once the
 * JSON and the ET files are copied elsewhere. So, in order: an absolute path; the path relative
 * to the JSON file's folder; relative to the working directory; then ever shorter tails of the
 * path (leading components dropped) relative to the JSON file's folder. The first that has a
 * "<prefix>.0.et" wins; if none does, the path is kept as written and the loader reports it. */
static char *resolve_custom(const char *json_path, const char *prefix)
{
    if (g_path_is_absolute(prefix))
        return g_strdup(prefix);
    g_autofree char *dir = g_path_get_dirname(json_path);
    g_autofree char *rel = g_build_filename(dir, prefix, NULL);
    if (custom_exists(rel))
        return g_steal_pointer(&rel);
    if (custom_exists(prefix))
        return g_strdup(prefix);
    for (const char *tail = strchr(prefix, '/'); tail != NULL; tail = strchr(tail, '/')) {
        while (*tail == '/')
            tail++;
        if (*tail == '\0')
            break;
        g_autofree char *cand = g_build_filename(dir, tail, NULL);
        if (custom_exists(cand))
            return g_steal_pointer(&cand);
    }
    return g_strdup(prefix);
}

/* servesim's "servesim-group-implementation": {"<collective>": "ring" | "direct", ...}, the
 * algorithm of a collective on a communicator group smaller than the machine (group_impl). */
static gboolean load_group_impl(JsonObject *o, const char *path, struct sv_sys_cfg *cfg,
                                GError **error)
{
    static const char key[] = "servesim-group-implementation";
    JsonNode *n = json_object_get_member(o, key);
    if (!JSON_NODE_HOLDS_OBJECT(n)) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "%s: %s must be an object {\"<collective>\": \"ring\" | \"direct\"}", path,
                    key);
        return FALSE;
    }
    JsonObject *g = json_node_get_object(n);
    g_autofree char *where = g_strdup_printf("%s: %s", path, key);
    g_autoptr(GList) members = json_object_get_members(g);
    for (GList *m = members; m != NULL; m = m->next) {
        const char *coll = m->data;
        int t = 0;
        while (t < SV_SYS_TYPE_COUNT && strcmp(coll, type_names[t]) != 0)
            t++;
        if (t == SV_SYS_TYPE_COUNT) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s.%s: unknown collective (expected all-reduce, all-gather, "
                        "reduce-scatter, all-to-all, ...)",
                        where, coll);
            return FALSE;
        }
        const char *s = NULL;
        if (!sv_cfg_get_string(g, coll, where, TRUE, NULL, &s, error))
            return FALSE;
        if (strcmp(s, "ring") == 0) {
            cfg->group_impl[t] = SV_SYS_IMPL_RING;
        } else if (strcmp(s, "direct") == 0) {
            cfg->group_impl[t] = SV_SYS_IMPL_DIRECT;
        } else {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s.%s: '%s' is not ring or direct (what a communicator group runs)", where,
                        coll, s);
            return FALSE;
        }
    }
    return TRUE;
}

gboolean sv_sys_cfg_load_json(const char *path, struct sv_sys_cfg *cfg, GError **error)
{
    sv_sys_cfg_init(cfg);
    g_autoptr(JsonNode) root = sv_cfg_load_json(path, error);
    if (root == NULL)
        return FALSE;
    if (!JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, "%s: top level must be an object",
                    path);
        return FALSE;
    }
    JsonObject *o = json_node_get_object(root);
    const char *s = NULL;

    if (!sv_cfg_get_string(o, "scheduling-policy", path, FALSE, "LIFO", &s, error))
        goto fail;
    if (strcmp(s, "LIFO") == 0) {
        cfg->scheduling_policy = SV_SYS_SCHED_LIFO;
    } else if (strcmp(s, "FIFO") == 0) {
        cfg->scheduling_policy = SV_SYS_SCHED_FIFO;
    } else if (strcmp(s, "EXPLICIT") == 0) {
        cfg->scheduling_policy = SV_SYS_SCHED_EXPLICIT;
    } else {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "%s: scheduling-policy '%s' is not LIFO, FIFO or EXPLICIT", path, s);
        goto fail;
    }
    if (!sv_cfg_get_string(o, "collective-optimization", path, FALSE, "baseline", &s, error))
        goto fail;
    if (strcmp(s, "baseline") == 0) {
        cfg->collective_optimization = SV_SYS_OPT_BASELINE;
    } else if (strcmp(s, "localBWAware") == 0) {
        cfg->collective_optimization = SV_SYS_OPT_LOCAL_BW_AWARE;
    } else {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "%s: collective-optimization '%s' is not baseline or localBWAware", path, s);
        goto fail;
    }

    /* Ranges (docs/replay.md, docs/reliability.md "Numeric ranges"): delays are latencies of one
     * step, bandwidths bytes per ns (ASTRA-sim's GB/s) with 0 for "not modelled", peak-perf in
     * TFLOP/s with 0 for "not modelled". */
    int64_t v = 0;
    if (!sv_cfg_get_int_range(o, "endpoint-delay", path, FALSE, 10,
                              SV_RANGE_I(0, (int64_t)SV_RANGE_LATENCY_NS_MAX, "ns"), &v, error))
        goto fail;
    cfg->endpoint_delay_ns = v;
    if (!sv_cfg_get_int_range(o, "active-chunks-per-dimension", path, FALSE, 1,
                              SV_RANGE_I(1, 1000000, NULL), &v, error))
        goto fail;
    cfg->active_chunks_per_dimension = (int)v;
    /* Upstream initialises the splits to 0 and divides by it (CHAKRA_ET.md 3.3): required. A
     * collective becomes that many streams, and inserting each into the ready list in priority
     * order (ASTRA-sim's, kept for the same order) makes a replay's time grow with the square of
     * the splits: bounded (docs/replay.md, "System config ranges"). */
    if (!sv_cfg_get_int(o, "preferred-dataset-splits", path, FALSE, 0, &v, error))
        goto fail;
    if (v < 1 || v > SV_SYS_MAX_DATASET_SPLITS) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "%s: preferred-dataset-splits: %" G_GINT64_FORMAT
                    " is out of range: it must be set, from 1 to %d (chunks per collective)",
                    path, v, SV_SYS_MAX_DATASET_SPLITS);
        goto fail;
    }
    cfg->preferred_dataset_splits = (int)v;

    double d = 0;
    if (!sv_cfg_get_double_range(o, "local-mem-bw", path, FALSE, 0, SV_RANGE_BW_GBPS_OR_0, &d,
                                 error))
        goto fail;
    cfg->local_mem_bw = d;
    if (!sv_cfg_get_double_range(o, "peak-perf", path, FALSE, 0,
                                 SV_RANGE_D_OR_0(1e-6, 1e9, "TFLOP/s"), &cfg->peak_perf_tflops,
                                 error) ||
        !sv_cfg_get_double_range(o, "local-reduction-delay", path, FALSE, 1, SV_RANGE_LATENCY_NS,
                                 &cfg->local_reduction_delay, error))
        goto fail;
    if (!get_flag(o, "roofline-enabled", path, &cfg->roofline_enabled, error) ||
        !get_flag(o, "trace-enabled", path, &cfg->trace_enabled, error) ||
        !get_flag(o, "replay-only", path, &cfg->replay_only, error) ||
        !get_flag(o, "track-local-mem", path, &cfg->track_local_mem, error) ||
        !get_flag(o, "model-shared-bus", path, &cfg->model_shared_bus, error))
        goto fail;

    for (size_t i = 0; i < G_N_ELEMENTS(impl_types); i++) {
        sv_sys_coll_type t = impl_types[i];
        g_autofree char *key = g_strdup_printf("%s-implementation", type_names[t]);
        JsonArray *a = NULL;
        if (!get_string_list(o, key, path, &a, error))
            goto fail;
        if (a != NULL) {
            guint n = json_array_get_length(a);
            if (n > SV_NET_MAX_DIMS) {
                g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                            "%s: %s has %u entries, at most %d dimensions are supported", path, key,
                            n, SV_NET_MAX_DIMS);
                goto fail;
            }
            for (guint k = 0; k < n; k++) {
                GError *e = NULL;
                if (!sv_sys_impl_parse(json_array_get_string_element(a, k), &cfg->impl[t][k], &e)) {
                    g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, "%s: %s[%u]: %s", path,
                                key, k, e->message);
                    g_error_free(e);
                    goto fail;
                }
            }
            cfg->n_impl[t] = (int)n;
        }
        g_autofree char *ckey = g_strdup_printf("%s-implementation-custom", type_names[t]);
        if (!get_string_list(o, ckey, path, &a, error))
            goto fail;
        if (a != NULL) {
            /* CollectiveImplLookup: "There should be 1 Chakra ET only". */
            if (json_array_get_length(a) != 1) {
                g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                            "%s: %s must list exactly one ET prefix", path, ckey);
                goto fail;
            }
            cfg->custom_prefix[t] = resolve_custom(path, json_array_get_string_element(a, 0));
        }
    }
    if (json_object_has_member(o, "servesim-group-implementation") &&
        !load_group_impl(o, path, cfg, error))
        goto fail;
    if (json_object_has_member(o, "per-node-custom-implementation")) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_UNSUPPORTED,
                    "%s: per-node-custom-implementation is not supported", path);
        goto fail;
    }
    return TRUE;
fail:
    sv_sys_cfg_clear(cfg);
    return FALSE;
}

/* ---- communicator groups ---------------------------------------------------------------- */

sv_sys_groups *sv_sys_groups_new(void)
{
    sv_sys_groups *g = g_new0(sv_sys_groups, 1);
    g->groups = g_array_new(FALSE, TRUE, sizeof(struct sv_sys__group));
    return g;
}

void sv_sys_groups_free(sv_sys_groups *groups)
{
    if (groups == NULL)
        return;
    for (guint i = 0; i < groups->groups->len; i++)
        g_free(g_array_index(groups->groups, struct sv_sys__group, i).members);
    g_array_free(groups->groups, TRUE);
    g_free(groups);
}

gboolean sv_sys_groups_add(sv_sys_groups *groups, int id, const int *npus, int n, GError **error)
{
    if (id <= 0) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "communicator group id %d must be > 0", id);
        return FALSE;
    }
    if (n < 1) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, "communicator group %d is empty", id);
        return FALSE;
    }
    guint pos = 0;
    for (; pos < groups->groups->len; pos++) {
        int gid = g_array_index(groups->groups, struct sv_sys__group, pos).id;
        if (gid == id) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "communicator group %d defined twice", id);
            return FALSE;
        }
        if (gid > id)
            break;
    }
    for (int i = 0; i < n; i++) {
        if (npus[i] < 0) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "communicator group %d: member %d is negative", id, npus[i]);
            return FALSE;
        }
        for (int j = 0; j < i; j++) {
            if (npus[j] == npus[i]) {
                g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                            "communicator group %d: NPU %d listed twice", id, npus[i]);
                return FALSE;
            }
        }
    }
    struct sv_sys__group grp = {.id = id, .n = n, .members = g_memdup2(npus, sizeof(int) * n)};
    g_array_insert_val(groups->groups, pos, grp);
    return TRUE;
}

sv_sys_groups *sv_sys_groups_load_json(const char *path, GError **error)
{
    g_autoptr(JsonNode) root = sv_cfg_load_json(path, error);
    if (root == NULL)
        return NULL;
    if (!JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, "%s: top level must be an object",
                    path);
        return NULL;
    }
    JsonObject *o = json_node_get_object(root);
    sv_sys_groups *g = sv_sys_groups_new();
    /* Member order of the JSON object (json-glib keeps it); groups are kept sorted by id. */
    g_autoptr(GList) keys = json_object_get_members(o);
    for (GList *k = keys; k != NULL; k = k->next) {
        const char *key = k->data;
        char *end = NULL;
        long id = strtol(key, &end, 10);
        if (end == key || *end != '\0' || id <= 0 || id > G_MAXINT / 1000000) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s: group id '%s' must be a decimal integer > 0", path, key);
            goto fail;
        }
        JsonNode *n = json_object_get_member(o, key);
        if (!JSON_NODE_HOLDS_ARRAY(n)) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "%s: group \"%s\" must be a list of NPU ids", path, key);
            goto fail;
        }
        JsonArray *a = json_node_get_array(n);
        guint len = json_array_get_length(a);
        g_autofree int *m = g_new0(int, len > 0 ? len : 1);
        for (guint i = 0; i < len; i++) {
            JsonNode *e = json_array_get_element(a, i);
            int64_t v;
            if (!sv_cfg_node_int(e, &v) || v < 0 || v > G_MAXINT) {
                g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                            "%s: group \"%s\"[%u] must be an NPU id >= 0", path, key, i);
                goto fail;
            }
            m[i] = (int)v;
        }
        GError *e = NULL;
        if (!sv_sys_groups_add(g, (int)id, m, (int)len, &e)) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG, "%s: %s", path, e->message);
            g_error_free(e);
            goto fail;
        }
    }
    return g;
fail:
    sv_sys_groups_free(g);
    return NULL;
}

int sv_sys_groups_count(const sv_sys_groups *groups)
{
    return groups == NULL ? 0 : (int)groups->groups->len;
}

int sv_sys_groups_id_at(const sv_sys_groups *groups, int i)
{
    SV_ASSERT(groups != NULL && i >= 0 && (guint)i < groups->groups->len);
    return g_array_index(groups->groups, struct sv_sys__group, i).id;
}

const int *sv_sys_groups_members(const sv_sys_groups *groups, int id, int *n)
{
    if (groups != NULL) {
        for (guint i = 0; i < groups->groups->len; i++) {
            const struct sv_sys__group *g = &g_array_index(groups->groups, struct sv_sys__group, i);
            if (g->id == id) {
                if (n != NULL)
                    *n = g->n;
                return g->members;
            }
        }
    }
    if (n != NULL)
        *n = 0;
    return NULL;
}

/* ---- custom collective plans -------------------------------------------------------------- */

sv_sys_plan *sv_sys_plan_new(int ranks)
{
    SV_ASSERT(ranks > 0);
    sv_sys_plan *p = g_new0(sv_sys_plan, 1);
    p->ranks = ranks;
    p->rank = g_new0(struct sv_sys__plan_rank, ranks);
    for (int r = 0; r < ranks; r++)
        p->rank[r].ops = g_array_new(FALSE, TRUE, sizeof(struct sv_sys__plan_node));
    return p;
}

void sv_sys_plan_free(sv_sys_plan *plan)
{
    if (plan == NULL)
        return;
    for (int r = 0; r < plan->ranks; r++) {
        GArray *ops = plan->rank[r].ops;
        for (guint i = 0; i < ops->len; i++)
            g_free(g_array_index(ops, struct sv_sys__plan_node, i).deps);
        g_array_free(ops, TRUE);
    }
    g_free(plan->rank);
    g_free(plan);
}

gboolean sv_sys_plan_add_op(sv_sys_plan *plan, int rank, const struct sv_sys_plan_op *op,
                            GError **error)
{
    if (rank < 0 || rank >= plan->ranks) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "custom collective plan: rank %d out of range [0, %d)", rank, plan->ranks);
        return FALSE;
    }
    GArray *ops = plan->rank[rank].ops;
    for (guint i = 0; i < ops->len; i++) {
        if (g_array_index(ops, struct sv_sys__plan_node, i).id == op->id) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "custom collective plan: rank %d: node id %" G_GUINT64_FORMAT
                        " defined twice",
                        rank, op->id);
            return FALSE;
        }
    }
    if (op->kind != SV_SYS_OP_COMP) {
        if (op->peer < 0 || op->peer >= plan->ranks || op->peer == rank) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "custom collective plan: rank %d node %" G_GUINT64_FORMAT
                        ": peer %d is not another rank of the plan",
                        rank, op->id, op->peer);
            return FALSE;
        }
        if (op->bytes == 0 || op->tag < 0) {
            g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                        "custom collective plan: rank %d node %" G_GUINT64_FORMAT
                        ": comm_size must be > 0 and comm_tag >= 0",
                        rank, op->id);
            return FALSE;
        }
    } else if (op->duration_ns < 0) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "custom collective plan: rank %d node %" G_GUINT64_FORMAT ": negative duration",
                    rank, op->id);
        return FALSE;
    }
    if (op->ndeps < 0 || (op->ndeps > 0 && op->deps == NULL)) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "custom collective plan: rank %d node %" G_GUINT64_FORMAT ": bad deps", rank,
                    op->id);
        return FALSE;
    }
    struct sv_sys__plan_node n = {
        .id = op->id,
        .kind = op->kind,
        .peer = op->peer,
        .tag = op->tag,
        .bytes = op->bytes,
        .duration_ns = op->duration_ns,
        .ndeps = op->ndeps,
        .deps = op->ndeps > 0 ? g_memdup2(op->deps, sizeof(uint64_t) * op->ndeps) : NULL,
    };
    g_array_append_val(ops, n);
    return TRUE;
}
