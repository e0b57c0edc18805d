/* A node's power domain: exact integration of piecewise-constant power between the state changes
 * it is told about (docs/power.md). */
#include "power/power_internal.h"

static const char *const component_names[SV_POWER_N_COMPONENTS] = {
    "npu", "cpu", "dram", "link", "nic", "storage", "base",
};
static const char *const state_names[SV_POWER_N_STATES] = {"active", "standby", "idle"};

const char *sv_power_component_name(sv_power_component c)
{
    SV_ASSERT((unsigned)c < SV_POWER_N_COMPONENTS);
    return component_names[c];
}

const char *sv_power_state_name(sv_power_state s)
{
    SV_ASSERT((unsigned)s < SV_POWER_N_STATES);
    return state_names[s];
}

sv_power_domain *sv_power_domain_new(const struct sv_power_node_cfg *cfg, sv_time start)
{
    SV_ASSERT(cfg && start >= 0);
    sv_power_domain *dom = g_new0(sv_power_domain, 1);
    sv_power_node_cfg_copy(&dom->cfg, cfg);
    dom->devs = g_array_new(FALSE, TRUE, sizeof(struct sv_power__device));
    dom->t_last = start;
    dom->cpu_util = cfg->cpu_util;
    return dom;
}

void sv_power_domain_free(sv_power_domain *dom)
{
    if (!dom)
        return;
    g_array_free(dom->devs, TRUE);
    sv_power_node_cfg_clear(&dom->cfg);
    g_free(dom);
}

int sv_power_device_add(sv_power_domain *dom, const char *hardware, GError **error)
{
    SV_ASSERT(dom && hardware);
    const struct sv_power_npu_cfg *hw = sv_power_node_cfg_npu(&dom->cfg, hardware);
    if (!hw) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                    "%s.npu: no entry for hardware \"%s\"",
                    dom->cfg.where ? dom->cfg.where : "power", hardware);
        return -1;
    }
    struct sv_power__device d = {.hw = hw,
                                 .clock = 1.0,
                                 .active_w = hw->active_w,
                                 .standby_w = hw->standby_w,
                                 .busy = 0,
                                 .t_last = dom->t_last,
                                 .last_end = -1};
    g_array_append_val(dom->devs, d);
    return (int)dom->devs->len - 1;
}

double sv_power_dvfs_w(double idle_w, double p_w, double clock)
{
    SV_ASSERT(clock > 0.0 && clock <= 1.0);
    if (clock == 1.0)
        return p_w; /* exactly the configured value at the nominal clock */
    if (p_w <= idle_w)
        return p_w; /* nothing dynamic above idle to scale */
    return idle_w + (p_w - idle_w) * clock * clock * clock;
}

int sv_power_num_devices(const sv_power_domain *dom)
{
    SV_ASSERT(dom);
    return (int)dom->devs->len;
}

static struct sv_power__device *device(const sv_power_domain *dom, int dev)
{
    SV_ASSERT(dom && dev >= 0 && (guint)dev < dom->devs->len);
    return &g_array_index(dom->devs, struct sv_power__device, dev);
}

/* End of the standby window after the last compute (saturating: standby_ns may be huge). */
static sv_time standby_end(const struct sv_power__device *d)
{
    if (d->last_end < 0)
        return -1;
    if (d->hw->standby_ns > SV_TIME_MAX - d->last_end)
        return SV_TIME_MAX;
    return d->last_end + d->hw->standby_ns;
}

void sv_power__device_split(const struct sv_power__device *d, sv_time t,
                            double e_wns[SV_POWER_N_STATES])
{
    SV_ASSERT(t >= d->t_last);
    if (d->busy > 0) {
        e_wns[SV_POWER_ACTIVE] += d->active_w * (double)(t - d->t_last);
        return;
    }
    sv_time a = d->t_last;
    sv_time s_end = standby_end(d);
    if (a < s_end) {
        sv_time b = MIN(t, s_end);
        e_wns[SV_POWER_STANDBY] += d->standby_w * (double)(b - a);
        a = b;
    }
    e_wns[SV_POWER_IDLE] += d->hw->idle_w * (double)(t - a);
}

static void device_advance(struct sv_power__device *d, sv_time now)
{
    SV_ASSERT(now >= d->t_last); /* state changes come in time order */
    sv_power__device_split(d, now, d->e_wns);
    d->t_last = now;
}

void sv_power_device_busy(sv_power_domain *dom, int dev, sv_time now)
{
    struct sv_power__device *d = device(dom, dev);
    device_advance(d, now);
    d->busy++;
}

void sv_power_device_idle(sv_power_domain *dom, int dev, sv_time now)
{
    struct sv_power__device *d = device(dom, dev);
    SV_ASSERT(d->busy > 0); /* an end without a start */
    device_advance(d, now);
    if (--d->busy == 0)
        d->last_end = now;
}

void sv_power_device_set_clock(sv_power_domain *dom, int dev, double clock, sv_time now)
{
    struct sv_power__device *d = device(dom, dev);
    SV_ASSERT(clock > 0.0 && clock <= 1.0);
    device_advance(d, now);
    d->clock = clock;
    d->active_w = sv_power_dvfs_w(d->hw->idle_w, d->hw->active_w, clock);
    d->standby_w = sv_power_dvfs_w(d->hw->idle_w, d->hw->standby_w, clock);
}

double sv_power_device_clock(const sv_power_domain *dom, int dev)
{
    return device(dom, dev)->clock;
}

/* Constant power of a non-accelerator component at CPU utilisation `util`. */
static double static_w(const struct sv_power_node_cfg *c, sv_power_component comp, double util)
{
    switch (comp) {
    case SV_POWER_CPU:
        return c->cpu_idle_w + (c->cpu_active_w - c->cpu_idle_w) * util;
    case SV_POWER_DRAM:
        return (double)c->dram_dimms * c->dram_idle_w;
    case SV_POWER_LINK:
        return (double)c->num_links * c->link_idle_w + (double)c->num_switches * c->switch_idle_w;
    case SV_POWER_NIC:
        return (double)c->num_nics * c->nic_idle_w;
    case SV_POWER_STORAGE:
        return (double)c->num_storage * c->storage_idle_w;
    case SV_POWER_BASE:
        return c->base_w;
    default:
        SV_ASSERT(!"accelerator power is per device");
        return 0.0;
    }
}

static void domain_advance(sv_power_domain *dom, sv_time now)
{
    SV_ASSERT(now >= dom->t_last); /* state changes come in time order */
    double dt = (double)(now - dom->t_last);
    for (int c = SV_POWER_CPU; c < SV_POWER_N_COMPONENTS; c++)
        dom->static_wns[c] += static_w(&dom->cfg, (sv_power_component)c, dom->cpu_util) * dt;
    dom->t_last = now;
}

void sv_power_cpu_util(sv_power_domain *dom, double util, sv_time now)
{
    SV_ASSERT(dom && util >= 0.0 && util <= 1.0);
    domain_advance(dom, now);
    dom->cpu_util = util;
}

static double pj_per_bit(const struct sv_power_node_cfg *c, sv_power_component comp)
{
    switch (comp) {
    case SV_POWER_DRAM:
        return c->dram_pj_per_bit;
    case SV_POWER_LINK:
        return c->link_pj_per_bit;
    case SV_POWER_NIC:
        return c->nic_pj_per_bit;
    case SV_POWER_STORAGE:
        return c->storage_pj_per_bit;
    default:
        SV_ASSERT(!"no traffic energy for this component");
        return 0.0;
    }
}

static void add_traffic(sv_power_domain *dom, sv_power_component comp, double pj_bit,
                        uint64_t bytes, sv_time now)
{
    domain_advance(dom, now);
    dom->traffic_wns[comp] += (double)bytes * 8.0 * pj_bit * SV_POWER__WNS_PER_PJ;
}

void sv_power_bytes(sv_power_domain *dom, sv_power_component c, uint64_t bytes, sv_time now)
{
    SV_ASSERT(dom);
    add_traffic(dom, c, pj_per_bit(&dom->cfg, c), bytes, now);
}

void sv_power_switch_bytes(sv_power_domain *dom, uint64_t bytes, sv_time now)
{
    SV_ASSERT(dom);
    add_traffic(dom, SV_POWER_LINK, dom->cfg.switch_pj_per_bit, bytes, now);
}

void sv_power_set_dram(sv_power_domain *dom, int64_t dimms, double idle_w, sv_time now)
{
    SV_ASSERT(dom && dimms >= 0 && idle_w >= 0);
    domain_advance(dom, now);
    dom->cfg.dram_dimms = dimms;
    dom->cfg.dram_idle_w = idle_w;
}

void sv_power_add_energy_j(sv_power_domain *dom, sv_power_component c, double joules, sv_time now)
{
    SV_ASSERT(dom && (unsigned)c < SV_POWER_N_COMPONENTS && joules >= 0);
    domain_advance(dom, now);
    dom->traffic_wns[c] += joules / SV_POWER__J_PER_WNS;
}

/* ---- queries ------------------------------------------------------------------------------ */

static void device_energy_wns(const struct sv_power__device *d, sv_time t,
                              double e_wns[SV_POWER_N_STATES])
{
    for (int s = 0; s < SV_POWER_N_STATES; s++)
        e_wns[s] = d->e_wns[s];
    sv_power__device_split(d, t, e_wns);
}

double sv_power_device_state_energy_j(const sv_power_domain *dom, int dev, sv_power_state s,
                                      sv_time t)
{
    SV_ASSERT((unsigned)s < SV_POWER_N_STATES);
    double e[SV_POWER_N_STATES];
    device_energy_wns(device(dom, dev), t, e);
    return e[s] * SV_POWER__J_PER_WNS;
}

double sv_power_device_energy_j(const sv_power_domain *dom, int dev, sv_time t)
{
    double e[SV_POWER_N_STATES];
    device_energy_wns(device(dom, dev), t, e);
    return (e[SV_POWER_ACTIVE] + e[SV_POWER_STANDBY] + e[SV_POWER_IDLE]) * SV_POWER__J_PER_WNS;
}

sv_power_state sv_power_device_state(const sv_power_domain *dom, int dev, sv_time t)
{
    const struct sv_power__device *d = device(dom, dev);
    SV_ASSERT(t >= d->t_last);
    if (d->busy > 0)
        return SV_POWER_ACTIVE;
    return t < standby_end(d) ? SV_POWER_STANDBY : SV_POWER_IDLE;
}

double sv_power_energy_j(const sv_power_domain *dom, sv_power_component c, sv_time t)
{
    SV_ASSERT(dom && (unsigned)c < SV_POWER_N_COMPONENTS);
    if (c == SV_POWER_NPU) {
        double sum = 0.0;
        for (int i = 0; i < (int)dom->devs->len; i++)
            sum += sv_power_device_energy_j(dom, i, t);
        return sum;
    }
    SV_ASSERT(t >= dom->t_last);
    double wns = dom->static_wns[c] + dom->traffic_wns[c] +
                 static_w(&dom->cfg, c, dom->cpu_util) * (double)(t - dom->t_last);
    return wns * SV_POWER__J_PER_WNS;
}

double sv_power_total_energy_j(const sv_power_domain *dom, sv_time t)
{
    double sum = 0.0;
    for (int c = 0; c < SV_POWER_N_COMPONENTS; c++)
        sum += sv_power_energy_j(dom, (sv_power_component)c, t);
    return sum;
}

double sv_power_power_w(const sv_power_domain *dom, sv_power_component c, sv_time t)
{
    SV_ASSERT(dom && (unsigned)c < SV_POWER_N_COMPONENTS);
    if (c != SV_POWER_NPU) {
        SV_ASSERT(t >= dom->t_last);
        return static_w(&dom->cfg, c, dom->cpu_util);
    }
    double sum = 0.0;
    for (int i = 0; i < (int)dom->devs->len; i++) {
        const struct sv_power__device *d = device(dom, i);
        switch (sv_power_device_state(dom, i, t)) {
        case SV_POWER_ACTIVE:
            sum += d->active_w;
            break;
        case SV_POWER_STANDBY:
            sum += d->standby_w;
            break;
        default:
            sum += d->hw->idle_w;
            break;
        }
    }
    return sum;
}

double sv_power_total_power_w(const sv_power_domain *dom, sv_time t)
{
    double sum = 0.0;
    for (int c = 0; c < SV_POWER_N_COMPONENTS; c++)
        sum += sv_power_power_w(dom, (sv_power_component)c, t);
    return sum;
}

sv_time sv_power_next_change(const sv_power_domain *dom, sv_time t)
{
    sv_time next = SV_TIME_MAX;
    for (int i = 0; i < (int)dom->devs->len; i++) {
        const struct sv_power__device *d = device(dom, i);
        SV_ASSERT(t >= d->t_last);
        sv_time s_end = standby_end(d);
        if (d->busy == 0 && s_end > t && s_end < next)
            next = s_end;
    }
    return next;
}
