/* tools/fit_analytic: the measured operator points every profile in ../shared gives, shared by
 * the loader (fit_analytic_data.c) and the fit (fit_analytic.c). */
#ifndef SV_FIT_ANALYTIC_H
#define SV_FIT_ANALYTIC_H

#include "compute/compute_internal.h"

/* Operator classes of the analytic model (what is fitted and reported). */
enum { FA_GEMM, FA_ATTN, FA_EW, FA_SAMPLER, FA_N_CLS };
/* Finer rows of the report. */
enum { FA_SUB_NONE, FA_SUB_PREFILL, FA_SUB_DECODE, FA_SUB_MIXED, FA_SUB_MOE, FA_N_SUB };
/* How a point is evaluated: a servesim operator of a model (the runtime's own mapping), a bare
 * GEMM, or bare elementwise bytes. */
enum { FA_PT_OP, FA_PT_GEMM, FA_PT_EW };

struct fa_point {
    uint8_t type, cls, sub;
    /* FA_PT_OP: launches the measurement has beyond servesim's operator (-1: the Vidur layout's
     * attention has no KV-cache write); FA_PT_GEMM, FA_PT_EW: its launches */
    int8_t kernels;
    int16_t dev, src;
    int16_t model; /* FA_PT_OP: index into fa_data.models */
    int16_t tp;
    int16_t op; /* FA_PT_OP */
    double meas_ns;
    struct sv_compute_batch_shape s; /* FA_PT_OP */
    double g[5];                     /* FA_PT_GEMM: groups, m, n, k, b; FA_PT_EW: bytes */
};

/* The devices with profiles, by catalog name; the last is the TPU (its own calibration). */
#define FA_N_DEV 7
#define FA_TPU (FA_N_DEV - 1)
extern const char *const fa_devices[FA_N_DEV];

struct fa_data {
    GArray *pts;        /* struct fa_point */
    GPtrArray *sources; /* char *: "<device>: <file>" (relative to the shared folder) */
    GArray *models;     /* struct sv_compute_model_cfg */
    struct sv_compute_hw_cfg hw[FA_N_DEV];
};

/* Every profile under `shared` (the ../shared folder); `cap` bounds the points taken from one
 * sweep (one operator of one file), evenly spaced. */
gboolean fa_load(struct fa_data *d, const char *shared, int cap, GError **error);
void fa_data_clear(struct fa_data *d);

#endif
