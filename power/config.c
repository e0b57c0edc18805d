/* Reading LLMServingSim's `nodes[].power` block (docs/power.md; LLMServingSim
 * docs/simulator/specialized/power-model.md and docs/reference/cluster-config.md). Every key
 * LLMServingSim lists is required there, so it is required here; the only defaults are for
 * servesim's extensions, and each says where its value comes from. */
#include "power/power_internal.h"

#include <math.h>
#include <string.h>

/* standby_duration above this many seconds is taken for nanoseconds written by someone who read
 * LLMServingSim's docs: no accelerator holds its post-kernel clocks for a quarter of an hour. */
#define STANDBY_S_SUSPICIOUS 1000.0

static void warn_unknown(JsonObject *obj, const char *where, const char *const *known)
{
    GList *members = json_object_get_members(obj);
    for (GList *l = members; l; l = l->next) {
        gboolean ok = FALSE;
        for (const char *const *k = known; *k && !ok; k++)
            ok = strcmp(*k, l->data) == 0;
        if (!ok)
            g_warning("%s.%s: unknown key, ignored", where, (const char *)l->data);
    }
    g_list_free(members);
}

/* The object member `key` of obj; FALSE (error naming the path) if absent or not an object. */
static gboolean get_object(JsonObject *obj, const char *key, const char *where, JsonObject **out,
                           GError **error)
{
    JsonNode *n = json_object_get_member(obj, key);
    if (!n) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID, "%s.%s: missing", where, key);
        return FALSE;
    }
    if (!JSON_NODE_HOLDS_OBJECT(n)) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID, "%s.%s: expected an object", where,
                    key);
        return FALSE;
    }
    *out = json_node_get_object(n);
    return TRUE;
}

/* Ranges (docs/reliability.md "Numeric ranges"): a component's power up to 10 MW, an energy per
 * bit up to 10^6 pJ (a microjoule: 10^5 times a DRAM access), a count of links, NICs, devices or
 * switches up to 2^20: energy stays finite. standby_duration up to 10^12 s: one past the horizon
 * (2.9 x 10^8 s) is a standby that never ends in any run (sv_time_from_ns keeps it past every
 * event), and values written in ns are still read, with the warning below. */
#define RANGE_PJ_PER_BIT SV_RANGE_D(0, 1e6, "pJ/bit")
#define RANGE_COUNT SV_RANGE_I(0, 1 << 20, NULL)
#define RANGE_STANDBY_S SV_RANGE_D(0, 1e12, "s")
#define RANGE_DIMM_GB SV_RANGE_D(0, 1048576, "GB")

/* A number in `r`; absent is an error when `required`, else `dflt`. */
static gboolean get_num(JsonObject *obj, const char *key, const char *where, gboolean required,
                        double dflt, struct sv_range_double r, double *out, GError **error)
{
    return sv_cfg_get_double_range(obj, key, where, required, dflt, r, out, error);
}

/* A power in W. */
static gboolean get_watts(JsonObject *obj, const char *key, const char *where, gboolean required,
                          double dflt, double *out, GError **error)
{
    return get_num(obj, key, where, required, dflt, SV_RANGE_POWER_W, out, error);
}

static gboolean get_count(JsonObject *obj, const char *key, const char *where, int64_t *out,
                          GError **error)
{
    return sv_cfg_get_int_range(obj, key, where, TRUE, 0, RANGE_COUNT, out, error);
}

static gboolean read_npu(struct sv_power_npu_cfg *npu, JsonObject *obj, const char *where,
                         GError **error)
{
    static const char *const known[] = {"idle_power", "standby_power", "active_power",
                                        "standby_duration", NULL};
    warn_unknown(obj, where, known);
    double standby_s;
    if (!get_watts(obj, "idle_power", where, TRUE, 0, &npu->idle_w, error) ||
        !get_watts(obj, "standby_power", where, TRUE, 0, &npu->standby_w, error) ||
        !get_watts(obj, "active_power", where, TRUE, 0, &npu->active_w, error) ||
        !get_num(obj, "standby_duration", where, TRUE, 0, RANGE_STANDBY_S, &standby_s, error))
        return FALSE;
    /* LLMServingSim's docs say ns; its power_model.py compares the value with times in seconds.
     * servesim follows the code, which is what the bundled configs (18, the A6000 figure-6 runs)
     * were written against: 18 ns of standby would be invisible next to any kernel. */
    if (standby_s > STANDBY_S_SUSPICIOUS)
        g_warning("%s.standby_duration: %g is read in seconds (as LLMServingSim's code does) and "
                  "looks like nanoseconds (as its docs say); write %g for that",
                  where, standby_s, standby_s * 1e-9);
    npu->standby_ns = sv_time_from_ns(standby_s * 1e9);
    return TRUE;
}

static gboolean read_npus(struct sv_power_node_cfg *cfg, JsonObject *obj, const char *where,
                          GError **error)
{
    GList *members = json_object_get_members(obj); /* the config's order */
    guint n = g_list_length(members);
    cfg->npu = g_new0(struct sv_power_npu_cfg, n);
    gboolean ok = TRUE;
    for (GList *l = members; l && ok; l = l->next) {
        const char *hw = l->data;
        g_autofree char *w = g_strdup_printf("%s.%s", where, hw);
        JsonObject *o;
        ok = get_object(obj, hw, where, &o, error);
        if (ok) {
            struct sv_power_npu_cfg *npu = &cfg->npu[cfg->n_npu++];
            npu->hardware = g_strdup(hw);
            ok = read_npu(npu, o, w, error);
        }
    }
    g_list_free(members);
    return ok;
}

/* DIMMs: ceil(cpu_mem.mem_size / dram.dimm_size), both in GB; a partly filled DIMM slot still
 * draws its idle power. */
static gboolean read_dram(struct sv_power_node_cfg *cfg, JsonObject *node, JsonObject *dram,
                          const char *node_where, const char *where, GError **error)
{
    static const char *const known[] = {"dimm_size", "idle_power", "energy_per_bit", NULL};
    warn_unknown(dram, where, known);
    /* A node with a PIM device may leave the DIMMs out: attention offload takes them from the
     * PIM config (LLMServingSim config_builder.py; the run checks that it does, docs/pim.md). */
    JsonObject *mem0 = NULL;
    JsonNode *mn = json_object_get_member(node, "cpu_mem");
    if (mn && JSON_NODE_HOLDS_OBJECT(mn))
        mem0 = json_node_get_object(mn);
    gboolean pim = mem0 && json_object_has_member(mem0, "pim_config");
    gboolean has_dimms =
        json_object_has_member(dram, "dimm_size") || json_object_has_member(dram, "idle_power");
    if (pim && !has_dimms) {
        cfg->dram_from_pim = TRUE;
        cfg->dram_dimms = 0;
        return get_num(dram, "energy_per_bit", where, TRUE, 0, RANGE_PJ_PER_BIT,
                       &cfg->dram_pj_per_bit, error);
    }
    if (!get_num(dram, "dimm_size", where, TRUE, 0, RANGE_DIMM_GB, &cfg->dram_dimm_gb, error) ||
        !get_watts(dram, "idle_power", where, TRUE, 0, &cfg->dram_idle_w, error) ||
        !get_num(dram, "energy_per_bit", where, TRUE, 0, RANGE_PJ_PER_BIT, &cfg->dram_pj_per_bit,
                 error))
        return FALSE;
    if (!(cfg->dram_dimm_gb > 0.0)) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                    "%s.dimm_size: must be > 0 GB (it divides cpu_mem.mem_size)", where);
        return FALSE;
    }
    JsonObject *mem;
    double mem_gb;
    if (!get_object(node, "cpu_mem", node_where, &mem, error))
        return FALSE;
    g_autofree char *mw = g_strdup_printf("%s.cpu_mem", node_where);
    if (!get_num(mem, "mem_size", mw, TRUE, 0, SV_RANGE_GIB, &mem_gb, error))
        return FALSE;
    cfg->dram_dimms = (int64_t)ceil(mem_gb / cfg->dram_dimm_gb);
    return TRUE;
}

static gboolean read_block(struct sv_power_node_cfg *cfg, JsonObject *node, const char *where,
                           GError **error)
{
    const char *pw = cfg->where;
    JsonObject *p, *o;
    if (!get_object(node, "power", where, &p, error))
        return FALSE;
    static const char *const known[] = {"base_node_power", "npu",    "cpu", "dram", "link", "nic",
                                        "storage",         "switch", NULL};
    warn_unknown(p, pw, known);
    if (!get_watts(p, "base_node_power", pw, TRUE, 0, &cfg->base_w, error))
        return FALSE;

    /* npu: one entry per instance `hardware`; an absent block or entry is filled from the
     * hardware catalog by whoever adds the devices (planner/power.c, docs/power.md). */
    g_autofree char *w_npu = g_strdup_printf("%s.npu", pw);
    if (json_object_has_member(p, "npu") &&
        (!get_object(p, "npu", pw, &o, error) || !read_npus(cfg, o, w_npu, error)))
        return FALSE;

    static const char *const k_cpu[] = {"idle_power", "active_power", "util", NULL};
    g_autofree char *w_cpu = g_strdup_printf("%s.cpu", pw);
    if (!get_object(p, "cpu", pw, &o, error))
        return FALSE;
    warn_unknown(o, w_cpu, k_cpu);
    if (!get_watts(o, "idle_power", w_cpu, TRUE, 0, &cfg->cpu_idle_w, error) ||
        !get_watts(o, "active_power", w_cpu, TRUE, 0, &cfg->cpu_active_w, error) ||
        !get_num(o, "util", w_cpu, TRUE, 0, SV_RANGE_D(0, 1, NULL), &cfg->cpu_util, error))
        return FALSE;

    g_autofree char *w_dram = g_strdup_printf("%s.dram", pw);
    if (!get_object(p, "dram", pw, &o, error) || !read_dram(cfg, node, o, where, w_dram, error))
        return FALSE;

    static const char *const k_link[] = {"num_links", "idle_power", "energy_per_bit", NULL};
    g_autofree char *w_link = g_strdup_printf("%s.link", pw);
    if (!get_object(p, "link", pw, &o, error))
        return FALSE;
    warn_unknown(o, w_link, k_link);
    if (!get_count(o, "num_links", w_link, &cfg->num_links, error) ||
        !get_watts(o, "idle_power", w_link, TRUE, 0, &cfg->link_idle_w, error) ||
        !get_num(o, "energy_per_bit", w_link, TRUE, 0, RANGE_PJ_PER_BIT, &cfg->link_pj_per_bit,
                 error))
        return FALSE;

    /* nic and storage: LLMServingSim models them idle only (power-model.md: "Always (idle
     * baseline)"), so their `energy_per_bit`, a servesim extension, defaults to 0 pJ/bit. */
    static const char *const k_nic[] = {"num_nics", "idle_power", "energy_per_bit", NULL};
    g_autofree char *w_nic = g_strdup_printf("%s.nic", pw);
    if (!get_object(p, "nic", pw, &o, error))
        return FALSE;
    warn_unknown(o, w_nic, k_nic);
    if (!get_count(o, "num_nics", w_nic, &cfg->num_nics, error) ||
        !get_watts(o, "idle_power", w_nic, TRUE, 0, &cfg->nic_idle_w, error) ||
        !get_num(o, "energy_per_bit", w_nic, FALSE, 0.0, RANGE_PJ_PER_BIT, &cfg->nic_pj_per_bit,
                 error))
        return FALSE;

    static const char *const k_sto[] = {"num_devices", "idle_power", "energy_per_bit", NULL};
    g_autofree char *w_sto = g_strdup_printf("%s.storage", pw);
    if (!get_object(p, "storage", pw, &o, error))
        return FALSE;
    warn_unknown(o, w_sto, k_sto);
    if (!get_count(o, "num_devices", w_sto, &cfg->num_storage, error) ||
        !get_watts(o, "idle_power", w_sto, TRUE, 0, &cfg->storage_idle_w, error) ||
        !get_num(o, "energy_per_bit", w_sto, FALSE, 0.0, RANGE_PJ_PER_BIT, &cfg->storage_pj_per_bit,
                 error))
        return FALSE;

    /* switch: a servesim extension (LLMServingSim has no switch power); absent = no switch. */
    if (json_object_has_member(p, "switch")) {
        static const char *const k_sw[] = {"num_switches", "idle_power", "energy_per_bit", NULL};
        g_autofree char *w_sw = g_strdup_printf("%s.switch", pw);
        if (!get_object(p, "switch", pw, &o, error))
            return FALSE;
        warn_unknown(o, w_sw, k_sw);
        if (!get_count(o, "num_switches", w_sw, &cfg->num_switches, error) ||
            !get_watts(o, "idle_power", w_sw, TRUE, 0, &cfg->switch_idle_w, error) ||
            !get_num(o, "energy_per_bit", w_sw, TRUE, 0, RANGE_PJ_PER_BIT, &cfg->switch_pj_per_bit,
                     error))
            return FALSE;
    }
    return TRUE;
}

gboolean sv_power_node_cfg_read(struct sv_power_node_cfg *cfg, JsonObject *node, const char *where,
                                GError **error)
{
    SV_ASSERT(cfg && node && where);
    memset(cfg, 0, sizeof *cfg);
    cfg->where = g_strdup_printf("%s.power", where);
    if (read_block(cfg, node, where, error))
        return TRUE;
    sv_power_node_cfg_clear(cfg);
    return FALSE;
}

void sv_power_node_cfg_clear(struct sv_power_node_cfg *cfg)
{
    if (!cfg)
        return;
    for (guint i = 0; i < cfg->n_npu; i++)
        g_free(cfg->npu[i].hardware);
    g_free(cfg->npu);
    g_free(cfg->where);
    memset(cfg, 0, sizeof *cfg);
}

void sv_power_node_cfg_copy(struct sv_power_node_cfg *dst, const struct sv_power_node_cfg *src)
{
    *dst = *src;
    dst->where = g_strdup(src->where);
    dst->npu = g_new0(struct sv_power_npu_cfg, MAX(src->n_npu, 1));
    for (guint i = 0; i < src->n_npu; i++) {
        dst->npu[i] = src->npu[i];
        dst->npu[i].hardware = g_strdup(src->npu[i].hardware);
    }
}

void sv_power_node_cfg_add_npu(struct sv_power_node_cfg *cfg, const struct sv_power_npu_cfg *npu)
{
    SV_ASSERT(cfg && npu && npu->hardware && !sv_power_node_cfg_npu(cfg, npu->hardware));
    cfg->npu = g_renew(struct sv_power_npu_cfg, cfg->npu, cfg->n_npu + 1);
    cfg->npu[cfg->n_npu] = *npu;
    cfg->npu[cfg->n_npu].hardware = g_strdup(npu->hardware);
    cfg->n_npu++;
}

const struct sv_power_npu_cfg *sv_power_node_cfg_npu(const struct sv_power_node_cfg *cfg,
                                                     const char *hardware)
{
    SV_ASSERT(cfg && hardware);
    for (guint i = 0; i < cfg->n_npu; i++)
        if (strcmp(cfg->npu[i].hardware, hardware) == 0)
            return &cfg->npu[i];
    return NULL;
}
