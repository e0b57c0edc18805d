/* servesim power: a power domain per node with the seven components of issue 9 (accelerators,
 * CPU, DRAM, links and switches, NIC, storage, base), integrated exactly at the state changes and
 * byte counts it is told about: no ticks. A resource model: it knows watts, states and bytes,
 * never requests or models (docs/power.md).
 *
 * Accelerators have three states (LLMServingSim's power-model.md): active while at least one
 * compute runs on the device, standby for `standby_ns` after the last compute ends, idle after
 * that. Every other component draws a constant power between calls (the CPU's changes with
 * sv_power_cpu_util) plus, for DRAM, links, switches, NIC and storage, an energy per bit of the
 * traffic reported with sv_power_bytes. Energy is kept in W x ns and only turned into joules on
 * a query, so an interval of constant power contributes exactly P x dt.
 *
 * Fed by `servesim run` through planner/power.c when every node has a power block (docs/power.md).
 */
#ifndef SV_POWER_H
#define SV_POWER_H

#include "core/core.h"

G_BEGIN_DECLS

/* The seven components of a node, in the order power.csv will list them. */
typedef enum {
    SV_POWER_NPU = 0, /* accelerators (sum over the node's devices) */
    SV_POWER_CPU,
    SV_POWER_DRAM,
    SV_POWER_LINK, /* links and switches */
    SV_POWER_NIC,
    SV_POWER_STORAGE,
    SV_POWER_BASE, /* the rest of the platform: always on */
    SV_POWER_N_COMPONENTS,
} sv_power_component;

/* "npu", "cpu", "dram", "link", "nic", "storage", "base". */
const char *sv_power_component_name(sv_power_component c);

typedef enum {
    SV_POWER_ACTIVE = 0,
    SV_POWER_STANDBY,
    SV_POWER_IDLE,
    SV_POWER_N_STATES,
} sv_power_state;

/* "active", "standby", "idle". */
const char *sv_power_state_name(sv_power_state s);

/* One `nodes[].power.npu.<hardware>` entry. */
struct sv_power_npu_cfg {
    char *hardware;
    double idle_w, standby_w, active_w;
    sv_time standby_ns; /* `standby_duration`, read in seconds (docs/power.md) */
};

/* A node's `power` block, as plain numbers (all powers per unit: per device, per DIMM, per
 * link...). Fill it with sv_power_node_cfg_read or by hand (zero it first); release it with
 * sv_power_node_cfg_clear. */
struct sv_power_node_cfg {
    char *where; /* path for messages ("cluster.json: nodes[0].power"); may be NULL */
    double base_w;
    struct sv_power_npu_cfg *npu; /* n_npu entries, in the config's order */
    guint n_npu;
    double cpu_idle_w, cpu_active_w, cpu_util;
    int64_t dram_dimms; /* ceil(cpu_mem.mem_size / dram.dimm_size) */
    /* dram.dimm_size and idle_power absent on a node with cpu_mem.pim_config: its DIMMs are the
     * PIM channels, set by the run (sv_power_set_dram) when an instance offloads attention. */
    gboolean dram_from_pim;
    double dram_dimm_gb, dram_idle_w, dram_pj_per_bit;
    int64_t num_links;
    double link_idle_w, link_pj_per_bit;
    int64_t num_switches; /* servesim extension: `switch` block */
    double switch_idle_w, switch_pj_per_bit;
    int64_t num_nics;
    double nic_idle_w, nic_pj_per_bit;
    int64_t num_storage;
    double storage_idle_w, storage_pj_per_bit;
};

/* Read `node.power` (and `node.cpu_mem.mem_size` for the DIMM count) of one node object of an
 * LLMServingSim cluster config. `where` names the node in messages ("cluster.json: nodes[0]").
 * FALSE with SV_CORE_ERROR_INVALID naming the key on a missing or bad value; a `power` block that
 * is absent is an error too (test json_object_has_member first). Unknown keys and a
 * `standby_duration` that looks like nanoseconds are g_warning'ed with their path. */
gboolean sv_power_node_cfg_read(struct sv_power_node_cfg *cfg, JsonObject *node, const char *where,
                                GError **error);
void sv_power_node_cfg_clear(struct sv_power_node_cfg *cfg);
/* Deep copy (dst is overwritten, not cleared first; clear it with sv_power_node_cfg_clear). */
void sv_power_node_cfg_copy(struct sv_power_node_cfg *dst, const struct sv_power_node_cfg *src);
/* The npu entry for `hardware`, NULL if none. */
const struct sv_power_npu_cfg *sv_power_node_cfg_npu(const struct sv_power_node_cfg *cfg,
                                                     const char *hardware);
/* Append a copy of `npu` (its hardware must have no entry yet): defaults a caller resolved, e.g.
 * from the hardware catalog for a node whose block lacks `npu.<hardware>`. */
void sv_power_node_cfg_add_npu(struct sv_power_node_cfg *cfg, const struct sv_power_npu_cfg *npu);

/* ---- a node's power domain ---------------------------------------------------------------- */

typedef struct sv_power_domain sv_power_domain;

/* A domain that starts integrating at `start` (every device idle); copies cfg. */
sv_power_domain *sv_power_domain_new(const struct sv_power_node_cfg *cfg, sv_time start);
void sv_power_domain_free(sv_power_domain *dom);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sv_power_domain, sv_power_domain_free)

/* Add an accelerator of `hardware`; returns its index (0, 1, ...) or -1 with
 * SV_CORE_ERROR_INVALID when the power block has no npu entry for it. */
int sv_power_device_add(sv_power_domain *dom, const char *hardware, GError **error);
int sv_power_num_devices(const sv_power_domain *dom);

/* State changes, in non-decreasing time (an earlier `now` is a bug). Busy/idle nest: a device is
 * active while more computes have started than ended; standby starts when the count returns to 0.
 */
void sv_power_device_busy(sv_power_domain *dom, int dev, sv_time now);
void sv_power_device_idle(sv_power_domain *dom, int dev, sv_time now);
/* DVFS: device `dev` runs at `clock` in (0, 1] of its nominal clock from `now` on (1 until the
 * first call). Its active and standby power become sv_power_dvfs_w of the configured ones; idle
 * power is unchanged (an idle device sits in its lowest power state whatever the clock cap). */
void sv_power_device_set_clock(sv_power_domain *dom, int dev, double clock, sv_time now);
double sv_power_device_clock(const sv_power_domain *dom, int dev);
/* The DVFS law: the power above idle is dynamic CMOS power, alpha C V^2 f, and the voltage
 * follows the frequency in the DVFS range (V ~ f), so it scales as f^3 (Weste & Harris, "CMOS
 * VLSI Design", 4th ed., section 5.1; docs/power.md "DVFS"):
 *   P(clock) = idle + (P - idle) x clock^3,
 * exactly P at clock 1, and P itself when P <= idle. */
double sv_power_dvfs_w(double idle_w, double p_w, double clock);
/* CPU utilisation in [0, 1] from `now` on (the config's `cpu.util` until the first call). */
void sv_power_cpu_util(sv_power_domain *dom, double util, sv_time now);
/* `bytes` moved at `now` through DRAM, LINK, NIC or STORAGE: bytes x 8 x that component's pJ/bit
 * (for LINK the link's; switches have their own call). Traffic energy is an impulse at `now`. */
void sv_power_bytes(sv_power_domain *dom, sv_power_component c, uint64_t bytes, sv_time now);
/* `bytes` through the node's switches (per switch traversal), counted under SV_POWER_LINK. */
void sv_power_switch_bytes(sv_power_domain *dom, uint64_t bytes, sv_time now);
/* From `now` on the node's DRAM is `dimms` DIMMs of `idle_w` each (PIM channels replacing the
 * power block's DIMMs; docs/pim.md). */
void sv_power_set_dram(sv_power_domain *dom, int64_t dimms, double idle_w, sv_time now);
/* An energy impulse of `joules` (>= 0) charged to component `c` at `now`: work whose energy the
 * caller computed (PIM channel activity: (peak - idle) W x busy time; docs/pim.md). */
void sv_power_add_energy_j(sv_power_domain *dom, sv_power_component c, double joules, sv_time now);

/* Queries at time t, no earlier than the last state change; they change nothing. */
double sv_power_energy_j(const sv_power_domain *dom, sv_power_component c, sv_time t);
double sv_power_total_energy_j(const sv_power_domain *dom, sv_time t);
double sv_power_device_energy_j(const sv_power_domain *dom, int dev, sv_time t);
double sv_power_device_state_energy_j(const sv_power_domain *dom, int dev, sv_power_state s,
                                      sv_time t);
sv_power_state sv_power_device_state(const sv_power_domain *dom, int dev, sv_time t);
/* Instantaneous power at t: the piecewise-constant part (traffic impulses are not in it; an
 * interval's average is the energy difference over the interval). */
double sv_power_power_w(const sv_power_domain *dom, sv_power_component c, sv_time t);
double sv_power_total_power_w(const sv_power_domain *dom, sv_time t);
/* The first time after t (t no earlier than the last state change) at which the domain's draw
 * changes with no call: the end of a device's standby window; SV_TIME_MAX when none is due.
 * Until then, without calls, every component's power is constant (power.csv's quiet rows). */
sv_time sv_power_next_change(const sv_power_domain *dom, sv_time t);

G_END_DECLS

#endif
