/* power/ internals shared between its files (not part of the API). */
#ifndef SV_POWER_INTERNAL_H
#define SV_POWER_INTERNAL_H

#include "power/power.h"

/* 1 pJ = 1e-12 J = 1e-3 W x ns: traffic energy in the domain's unit. */
#define SV_POWER__WNS_PER_PJ 1e-3
#define SV_POWER__J_PER_WNS 1e-9

struct sv_power__device {
    const struct sv_power_npu_cfg *hw; /* into the domain's copy of the config */
    double clock;                      /* DVFS: fraction of the nominal clock, (0, 1] */
    double active_w, standby_w;        /* hw's at `clock` (sv_power_dvfs_w) */
    int busy;                          /* computes started and not yet ended */
    sv_time t_last;                    /* energy below is integrated up to here */
    sv_time last_end;                  /* when busy last fell to 0; -1: never */
    double e_wns[SV_POWER_N_STATES];
};

struct sv_power_domain {
    struct sv_power_node_cfg cfg; /* deep copy */
    GArray *devs;                 /* struct sv_power__device, by index */
    sv_time t_last;               /* non-accelerator energy is integrated up to here */
    double cpu_util;
    double static_wns[SV_POWER_N_COMPONENTS];  /* piecewise-constant power x time */
    double traffic_wns[SV_POWER_N_COMPONENTS]; /* energy per bit x bits */
};

/* Energy per state a device adds between its t_last and t (>= t_last), added to e_wns[]. */
void sv_power__device_split(const struct sv_power__device *d, sv_time t,
                            double e_wns[SV_POWER_N_STATES]);

#endif
