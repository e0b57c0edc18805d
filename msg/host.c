/* Host-side work per engine step that a per-layer GPU profile does not contain: the scheduler,
 * input preparation, sampling bookkeeping and output processing between two forward passes
 * (VALIDATION_NOTES "Where the remaining public-case error lives", last bullet).
 *
 * Model: h(n) = C0 + C1 n for a step that schedules n sequences, the same for every model and
 * device. C0 and C1 are fitted by tools/fit_host.c to the inter-batch delay measured by the
 * Sarathi-Serve OSDI'24 artifact (decode-only batches of 1..128 requests on a vLLM-derived
 * engine); msg/host_fit.csv lists the points and residuals, docs/validation.md the effect. The
 * time is charged after the GPU part of the iteration, before its tokens are committed: vLLM v1
 * stamps a token when the engine core has processed the step's model output. Whether the GPU
 * waits for it is the engine profile's (msg/engine.c): a synchronous engine's next step starts
 * after the commit; with async scheduling it was scheduled earlier and runs meanwhile. Sarathi-
 * Serve's engine is synchronous, so its inter-batch gap is the whole host work of a step: the
 * fit holds for both. */
#include "msg/msg.h"

#include "msg/host_fit.inc"

gboolean sv_msg_host_parse(const char *name, sv_msg_host_model *out, GError **error)
{
    if (g_ascii_strcasecmp(name, "fitted") == 0) {
        *out = SV_MSG_HOST_FITTED;
        return TRUE;
    }
    if (g_ascii_strcasecmp(name, "none") == 0) {
        *out = SV_MSG_HOST_NONE;
        return TRUE;
    }
    g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                "unknown host overhead model '%s' (known: fitted, none)", name);
    return FALSE;
}

sv_time sv_msg_host_step_ns(sv_msg_host_model model, uint32_t n_seqs)
{
    if (model != SV_MSG_HOST_FITTED || n_seqs == 0)
        return 0;
    return sv_time_from_ns(SV_MSG_HOST_FIT_C0_NS + SV_MSG_HOST_FIT_C1_NS * (double)n_seqs);
}
