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

/* Conservation checks of a run's end (planner/conserve.c; docs/reliability.md): FALSE with
 * SV_CORE_ERROR_INTERNAL and the numbers when counts kept in different places disagree.
 * Requests: arrived = finished + rejected + held (held: still in an instance or between two,
 * sv_msg_num_held and the PD queue), whether the run finished or stalled. Bytes, once nothing is
 * in flight: the network's sent = delivered, the tier fabric's booked = moved (either may be
 * NULL). */
struct sv_planner__requests {
    uint64_t arrived, finished, rejected, held;
};
gboolean sv_planner__check_requests(const struct sv_planner__requests *r, GError **error);
gboolean sv_planner__check_bytes(const sv_net *net, const sv_memtier_fabric *fabric,
                                 GError **error);

G_END_DECLS

#endif
