/* Engine profiles: which vLLM release a serving group behaves like (docs/serving.md "Engine
 * profiles").
 *
 * Async scheduling. vLLM's engine core (vllm/v1/engine/core.py, EngineCore.step_with_batch_queue)
 * keeps a queue of max_concurrent_batches scheduled batches: 2 with async scheduling (1 without;
 * pp_size with pipeline parallelism). Each turn of its busy loop polls new requests, schedules a
 * batch and hands it to the workers without waiting; only when the queue is full does it block on
 * the oldest batch, then processes that batch's output (update_from_output, which stamps the
 * tokens). So the CPU work of step n (output processing, then polling and scheduling step n + 2)
 * runs while the GPU executes step n + 1, and a request that arrives while the engine is busy is
 * first seen when step n's output has been processed: it runs in step n + 2, one step later than in
 * a synchronous engine. Running requests do not lose a step: the AsyncScheduler
 * (vllm/v1/core/sched/async_scheduler.py) gives a request whose step will sample a token an output
 * placeholder, so the next batch already decodes it, and it stops scheduling a request once its
 * placeholders reach max_tokens. vllm/config/vllm.py turns async scheduling on when the user does
 * not set it (the default since vLLM 0.14.0, Jan 2026: PR #27614, tracking issue #27679), except
 * for pooling models and some speculative-decoding setups.
 *
 * Batch defaults. When neither --max-num-seqs nor --max-num-batched-tokens is given, vLLM's
 * EngineArgs picks them by usage context and device (vllm/engine/arg_utils.py, _set_default_args /
 * get_batch_defaults): a device with at least 70 GiB whose name does not contain "a100" gets
 * max_num_batched_tokens 8192 for the OpenAI API server (`vllm serve`; 16384 for the offline LLM
 * class) and max_num_seqs 1024; any other GPU 2048 (8192) and 256 ("setting large
 * max_num_batched_tokens for A100 reduces throughput", PR #17885); TPU v6e / v5e / v5p 1024 / 512 /
 * 256 tokens for the API server. max_num_seqs is then capped at max_num_batched_tokens. The table
 * is the same in the v0.11 source read for this and in v0.19.0 (its get_batch_defaults; vLLM's
 * tests/engine/test_arg_utils.py, test_defaults_with_usage_context, checks it); servesim applies
 * the API server's column, for both profiles. */
#include "msg/msg.h"

#include <string.h>

static const struct {
    const char *name;
    gboolean async_scheduling;
} engines[] = {
    [SV_MSG_ENGINE_VLLM_0_19] = {"vllm-0.19", TRUE},
    [SV_MSG_ENGINE_VLLM_0_10] = {"vllm-0.10", FALSE},
};

gboolean sv_msg_engine_parse(const char *name, sv_msg_engine_kind *out, GError **error)
{
    for (int i = 0; i < (int)G_N_ELEMENTS(engines); i++) {
        if (g_ascii_strcasecmp(name, engines[i].name) == 0) {
            *out = (sv_msg_engine_kind)i;
            return TRUE;
        }
    }
    if (g_ascii_strcasecmp(name, "vllm") == 0) {
        *out = SV_MSG_ENGINE_VLLM_0_19;
        return TRUE;
    }
    g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                "unknown engine '%s' (known: vllm-0.19, vllm-0.10)", name);
    return FALSE;
}

const char *sv_msg_engine_name(sv_msg_engine_kind kind)
{
    return (unsigned)kind < G_N_ELEMENTS(engines) ? engines[kind].name : "?";
}

gboolean sv_msg_engine_async(sv_msg_engine_kind kind)
{
    return (unsigned)kind < G_N_ELEMENTS(engines) && engines[kind].async_scheduling;
}

/* Case-insensitive substring test, as vLLM's `"a100" not in device_name.lower()`. */
static gboolean name_has(const char *name, const char *needle)
{
    g_autofree char *low = g_ascii_strdown(name ? name : "", -1);
    return strstr(low, needle) != NULL;
}

void sv_msg_engine_batch_defaults(sv_msg_engine_kind kind, const char *hardware, double mem_gib,
                                  int64_t *max_num_seqs, int64_t *max_num_batched_tokens)
{
    (void)kind; /* the same table in every profile (see above) */
    int64_t seqs = 256, tokens = 2048;
    if (mem_gib >= 70.0 && !name_has(hardware, "a100")) {
        seqs = 1024;
        tokens = 8192;
    }
    if (name_has(hardware, "tpu")) {
        if (name_has(hardware, "v6e"))
            tokens = 1024;
        else if (name_has(hardware, "v5e"))
            tokens = 512;
        else if (name_has(hardware, "v5p"))
            tokens = 256;
    }
    *max_num_batched_tokens = tokens;
    *max_num_seqs = MIN(seqs, tokens);
}

/* The frontend's defaults when switched on: vLLM PR #27407 (Oct 2025) timed the OpenAI API server
 * per request on two hosts (Ryzen 9800X3D + RTX 4090; Xeon Platinum 8575C + H20). Inbound, from
 * the request's arrival to its hand-off to the engine (handler entry, model and request checks,
 * _preprocess with tokenisation): 2.80 and 3.40 ms, mean 3.10 ms. Outbound, building and
 * returning the response: 0.29 and 0.43 ms, mean 0.36 ms, taken here as the cost of one streamed
 * token's detokenisation and SSE chunk. The request timed there is an embedding request: the
 * inbound path is the one a completion takes; the outbound figure stands in for a stream chunk. */
#define FRONTEND_IN_NS 3100000
#define FRONTEND_OUT_NS 360000

gboolean sv_msg_frontend_parse(const char *spec, struct sv_msg_frontend *out, GError **error)
{
    if (g_ascii_strcasecmp(spec, "off") == 0) {
        *out = (struct sv_msg_frontend){0, 0};
        return TRUE;
    }
    if (g_ascii_strcasecmp(spec, "on") == 0) {
        *out = (struct sv_msg_frontend){FRONTEND_IN_NS, FRONTEND_OUT_NS};
        return TRUE;
    }
    const char *colon = strchr(spec, ':');
    if (colon) {
        /* decimal text (sv_num_parse_double), each in [0, 10^6] ms */
        g_autofree char *in_text = g_strndup(spec, (gsize)(colon - spec));
        double in_ms = -1, out_ms = -1;
        gboolean ok = sv_num_parse_double(in_text, &in_ms) && in_ms >= 0 && in_ms <= 1e6;
        if (ok && sv_num_parse_double(colon + 1, &out_ms) && out_ms >= 0 && out_ms <= 1e6) {
            *out = (struct sv_msg_frontend){sv_time_from_ns(in_ms * 1e6),
                                            sv_time_from_ns(out_ms * 1e6)};
            return TRUE;
        }
    }
    g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                "frontend '%s' is not off, on or IN_MS:OUT_MS (two numbers >= 0)", spec);
    return FALSE;
}
