/* Shared between planner's files, not part of its API (planner/planner.h). */
#ifndef SV_PLANNER_INTERNAL_H
#define SV_PLANNER_INTERNAL_H

#include "planner/planner.h"

G_BEGIN_DECLS

/* SV_PLANNER_ERROR_INVALID with "<path>: <message>" (a config path, STYLE.md); returns FALSE. */
gboolean sv_planner__path_error(GError **error, const char *path, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

/* An instance's host link (PCIe) per direction, decimal GB/s: its node's `pcie.bw_gbps`, else the
 * hardware catalog's `pcie_gbps` (0: not published; the caller decides whether that is an
 * error). FALSE only when the hardware is not in the catalog. */
gboolean sv_planner__pcie_gbps(const struct sv_planner_cluster_cfg *c,
                               const struct sv_planner_instance_cfg *ic, double *out,
                               GError **error);

/* PIM attention offload and local weight loads of a run (planner/pim.c; docs/pim.md). new:
 * NULL when no instance offloads (error unset) or on an error (set). instance: fills the msg's
 * pim / local-load fields and, with attention offload, replaces *blocks by the KV blocks its PIM
 * channels hold. power: the PIM nodes' DRAM power. */
typedef struct sv_planner_pim sv_planner_pim;
sv_planner_pim *sv_planner_pim_new(const struct sv_planner_run_cfg *cfg, GError **error);
void sv_planner_pim_free(sv_planner_pim *p);
gboolean sv_planner_pim_instance(sv_planner_pim *p, int32_t i, const struct sv_compute_model_cfg *m,
                                 uint32_t block_size, uint64_t *blocks, struct sv_msg_cfg *mc,
                                 GError **error);
void sv_planner_pim_power(const sv_planner_pim *p, sv_planner_power *pw);
int64_t sv_planner_pim_channels(const sv_planner_pim *p, int32_t node); /* 0: no PIM */

/* The run's Chakra ET output (planner/et.c; docs/chakra.md "Emitted sets"): new creates the
 * output and writes each replay unit's system JSON, network YAML, remote-memory JSON and
 * comm-group JSON (`tiers`: the run has memory tiers, noted as not expressible); instance sets a
 * msg's ET fields; finish writes iterations.csv and manifest.json. */
typedef struct sv_planner_et sv_planner_et;
sv_planner_et *sv_planner_et_new(const struct sv_planner_run_cfg *cfg,
                                 const sv_planner_cluster_net *cn, gboolean tiers, GError **error);
void sv_planner_et_free(sv_planner_et *e);
sv_msg_et_out *sv_planner_et_out(const sv_planner_et *e);
void sv_planner_et_instance(const sv_planner_et *e, int32_t i, struct sv_msg_cfg *mc);
gboolean sv_planner_et_finish(sv_planner_et *e, GError **error);

G_END_DECLS

#endif
