/* servesim run: simulate LLM serving of a workload on a cluster (docs/serving.md). Outputs are
 * written by metrics/metrics.c (docs/outputs.md), fed by the run loop's observer. */
#include "cli/cli.h"
#include "cli/progress.h"
#include "cli/run_info.h"
#include "cli/run_inputs.h"
#include "planner/planner.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>

/* Profile bundles come only from --profiles or this variable: never from a path relative to the
 * working directory, so that a run's results do not depend on where it is started. */
#define PROFILES_ENV "SERVESIM_PROFILES"
#define DEFAULT_OUTPUT_DIR "servesim-out"
/* The built-in default study (issue 3: one H100, Llama-3.1-8B, roofline, 1,000 ShareGPT-like
 * requests at 10 req/s). */
#define DEFAULT_MODEL "meta-llama/Llama-3.1-8B"
#define DEFAULT_HARDWARE "H100-SXM"
#define DEFAULT_REQUESTS 1000
#define DEFAULT_QPS 10.0

/* Progress (cli/progress.c): --progress prints a line every this many wall seconds; a line says
 * so when no request moved for PROGRESS_STALL_S of wall time. */
#define PROGRESS_PERIOD_S 10.0
#define PROGRESS_STALL_S 30.0

/* The files of a complete run (planner/metrics.c). */
static const char *const output_names[] = {"summary.json", "requests.csv", "timeseries.csv",
                                           "run.json"};

/* A run that failed after it opened its outputs has none; the outputs of an earlier run in the
 * same directory would read as its complete results, so they go too (summary.json, which marks a
 * complete run, first). */
static void remove_earlier_outputs(const char *dir)
{
    int removed = 0;
    for (size_t i = 0; i < G_N_ELEMENTS(output_names); i++) {
        g_autofree char *path = g_build_filename(dir, output_names[i], NULL);
        if (g_unlink(path) == 0)
            removed++;
        else if (errno != ENOENT)
            fprintf(stderr, "servesim run: cannot remove %s: %s\n", path, g_strerror(errno));
    }
    if (removed > 0)
        fprintf(stderr, "servesim run: removed the outputs of an earlier run from %s\n", dir);
}

static const char usage[] =
    "usage: servesim run CLUSTER WORKLOAD [options]\n"
    "  CLUSTER:  --cluster FILE | --model NAME --hardware NAME [--tp N] [--pp N]\n"
    "            [--instances N | --pd P:D [--decode-hardware NAME] [--decode-tp N]]\n"
    "  WORKLOAD: --workload TRACE [--time-scale X | --qps R] | --requests N --qps R\n"
    "            [--input-len SPEC] [--output-len SPEC] [--arrival SPEC]\n"
    "       servesim run [options]   (built-in default: " DEFAULT_MODEL " on one " DEFAULT_HARDWARE
    ",\n"
    "                                 roofline, 1000 ShareGPT-like requests at 10 req/s)\n"
    "\n"
    "inputs:\n"
    "  --cluster FILE            LLMServingSim cluster config (with --workload or the\n"
    "                            generator flags below; not with the quick cluster flags)\n"
    "  --workload FILE           LLMServingSim / Mooncake JSONL or Azure CSV trace (with\n"
    "                            --cluster or the quick cluster flags)\n"
    "  --time-scale X            multiply every arrival time of the trace by X > 0\n"
    "                            (0.5 = twice the rate; docs/workloads.md)\n"
    "  --qps R                   with --workload: rescale the trace's arrivals so that its\n"
    "                            mean rate is R req/s (one first pass over the file)\n"
    "  --skip-bad-lines          skip malformed workload lines and report the count\n"
    "                            (default: a bad line is an error)\n"
    "  --hardware-file FILE      add or override accelerators: YAML or JSON with\n"
    "                            compute/hardware.json's schema (repeatable, later files\n"
    "                            win; docs/compute.md)\n"
    "quick cluster (no file; docs/serving.md \"Quick form\"):\n"
    "  --model NAME              built-in model (default " DEFAULT_MODEL ")\n"
    "  --hardware NAME           catalog hardware (default " DEFAULT_HARDWARE ")\n"
    "  --tp N                    tensor-parallel degree per instance (default 1)\n"
    "  --pp N                    pipeline stages per instance (default 1)\n"
    "  --instances N             N identical instances (default 1), 8 devices per node\n"
    "  --pd P:D                  P prefill and D decode instances (disaggregated;\n"
    "                            --instances, if given, must be P + D)\n"
    "  --decode-hardware NAME    the decode instances' hardware (default --hardware)\n"
    "  --decode-tp N             the decode instances' TP degree (default --tp)\n"
    "  --dtype D                 every instance's weights: bf16 fp16 fp8 w8a8 w8a16 w4a16\n"
    "                            (over a config's dtype; docs/quantisation.md)\n"
    "  --kv-cache-dtype D        every instance's KV cache: auto bf16 fp8\n"
    "generated workload (with the quick cluster or --cluster, instead of --workload):\n"
    "  --requests N              number of requests (default 1000)\n"
    "  --qps R                   arrival rate, requests/s (default 10)\n"
    "  --input-len SPEC          N | uniform:A:B | normal:MEAN:SD | empirical:PATH[:COL] |\n"
    "                            sharegpt (vLLM's ShareGPT sampler) | vidur-sharegpt\n"
    "                            (Vidur's long-prompt table) (default sharegpt)\n"
    "  --output-len SPEC         the same (default sharegpt)\n"
    "  --arrival SPEC            poisson | gamma:CV | fixed | trace:PATH (gaps resampled\n"
    "                            from a trace, scaled to --qps; default poisson)\n"
    "latency:\n"
    "  --profiles DIR            LLMServingSim profile bundles or perf_models, or Vidur's\n"
    "                            profiling folder (default $" PROFILES_ENV ",\n"
    "                            else none: every instance uses the roofline)\n"
    "  --latency profile|roofline  (default: profile when a bundle matches, else roofline;\n"
    "                            the built-in default run uses roofline; stderr and\n"
    "                            summary.json say which each instance used)\n"
    "  --model-dir DIR           extra model configs (<org>/<name>.json; default none)\n"
    "scheduling (flags win over the cluster config's per-instance values):\n"
    "  --scheduler NAME          vllm | static | dynamic (default vllm), or a plugin's\n"
    "  --kv-eviction NAME        KV free-block eviction policy: lru (default), or a plugin's\n"
    "  --plugin FILE.so          load policies from a shared object (repeatable;\n"
    "                            docs/plugins.md)\n"
    "  --router NAME             least_load | round_robin | random | prefix_aware |\n"
    "                            slo_aware[:MS] (default least_load; docs/routing.md)\n"
    "  --slo-ttft-ms MS          TTFT target of the slo_aware router (default the config's\n"
    "                            \"slo_ttft_ms\", else none)\n"
    "  --kv-transfer MODE        prefill -> decode KV transfer: whole | per_layer\n"
    "                            (default the config's \"kv_transfer\", else whole;\n"
    "                            docs/disaggregation.md)\n"
    "  --host-overhead MODEL     host-side time per engine step: fitted | none\n"
    "                            (default fitted; docs/validation.md)\n"
    "  --engine NAME             engine profile: vllm-0.19 (async scheduling: host work\n"
    "                            overlaps the next step) | vllm-0.10 (host work in series)\n"
    "                            (default the config's \"engine\", else vllm-0.19;\n"
    "                            docs/serving.md)\n"
    "  --speculative SPEC        speculative decoding on every instance: eagle:K:A |\n"
    "                            mtp:K:A | draft:MODEL:K:A (K drafts, acceptance A;\n"
    "                            docs/speculative.md)\n"
    "  --frontend SPEC           API server, tokenisation and stream return on top of the\n"
    "                            engine's times: off | on | IN_MS:OUT_MS (default off)\n"
    "parallelism (docs/parallelism.md):\n"
    "  --network-model NAME      cluster network timing: flow | fifo | analytical | ideal\n"
    "                            (default flow, or the config's \"network_model\")\n"
    "  --collectives MODE        fast (default: a collective whose links carry nothing\n"
    "                            else runs in closed form) | messages (every message\n"
    "                            through the network); docs/collectives.md\n"
    "  --expert-routing NAME     MoE expert routing: balanced | round_robin | random |\n"
    "                            zipf:S | hist:W0,W1,... | hist:@FILE\n"
    "                            (default balanced)\n"
    "  --moe-comm MODE           MoE exchange: allgather_reducescatter | alltoall\n"
    "                            (default allgather_reducescatter)\n"
    "  --max-num-seqs N          running requests per instance (default: what vllm serve\n"
    "                            picks for the device in the quick form or with an \"engine\"\n"
    "                            key, else 128 as LLMServingSim; docs/serving.md)\n"
    "  --max-num-batched-tokens N  token budget per step (default likewise, else 2048)\n"
    "  --long-prefill-token-threshold N  cap on one request's prefill chunk per step\n"
    "                            (default 0 = none, vLLM)\n"
    "  --block-size N            KV block size in tokens (default 16, vLLM)\n"
    "  --no-prefix-caching       disable automatic prefix caching (default on, vLLM)\n"
    "  --max-model-len N         context length (default the config's max_model_len, else\n"
    "                            the model's max_position_embeddings, as vLLM)\n"
    "  --strict                  a request vLLM would reject (over the context length, or\n"
    "                            larger than every instance's KV cache) ends the run with\n"
    "                            exit 1 (default: recorded as rejected, the run goes on;\n"
    "                            docs/serving.md)\n"
    "  --seed N                  root seed of every random stream (default 0)\n"
    "memory tiers (docs/memory-tiers.md; flags win over the cluster config's keys):\n"
    "  --preemption-mode MODE    recompute | swap (to kv_evict_loc; default recompute)\n"
    "  --prefix-storage LIST     prefix cache below the NPU: none | cpu | cxl | ssd or a\n"
    "                            comma list in lookup order, cpu,cxl,ssd (default none)\n"
    "  --enable-prefix-sharing   one prefix pool per node, shared by its instances\n"
    "  --prefix-pool SCOPE       instance | node | cluster (default node with sharing,\n"
    "                            else instance)\n"
    "  --prefix-write MODE       through | back (default through)\n"
    "  --prefix-evict POLICY     lru | fifo (default lru)\n"
    "  --prefix-chunk-tokens N   chunk of the lower-tier pools (default 256, LMCache)\n"
    "  --offload-overlap MODE    weight streaming: prefetch | serial (default prefetch)\n"
    "  --kv-load-overlap MODE    lower-tier KV loads: none | layer (default none)\n"
    "  --memory-model MODEL      finite | ideal (every tier: latency only; default finite)\n"
    "PIM and weight offload (docs/pim.md; flags win over the config's per-instance keys):\n"
    "  --enable-attn-offloading  decode attention on the node's PIM (cpu_mem.pim_config)\n"
    "  --enable-sub-batch-interleaving  two sub-batches: NPU work of one beside PIM\n"
    "                            attention of the other (needs attention offload)\n"
    "  --enable-local-offloading weights read from NPU memory as timed loads per layer\n"
    "  --pim-dir DIR             folder of the PIM device files <name>.ini (default\n"
    "                            ../pim and . beside the cluster config)\n"
    "  --pim-model MODEL         linear | bandwidth (default linear where LLMServingSim\n"
    "                            has the device's fit, else bandwidth)\n"
    "  --pim-gflops X            bandwidth model: PIM compute per channel, GFLOP/s\n"
    "                            (default: not a bound)\n"
    "  --pim-placement NAME      sequences onto channels: greedy (default)\n"
    "power (docs/power.md; power.csv and energy with a power block on every node):\n"
    "  --gpu-clock F             run every accelerator at F in (0, 1] of its nominal clock\n"
    "                            (DVFS: compute-bound operators take 1/F as long, memory-bound\n"
    "                            ones keep their time; active power idle + (P - idle) x F^3;\n"
    "                            wins over the config's instances[].gpu_clock; default 1)\n"
    "  --idle-tail S             after the last request, S more seconds of idle cluster in\n"
    "                            power.csv and the energy (standby, then idle; default 0)\n"
    "outputs:\n"
    "  --output-dir DIR          requests.csv, timeseries.csv, summary.json, run.json\n"
    "                            (default ./" DEFAULT_OUTPUT_DIR ")\n"
    "  --goodput \"KEY:MS ...\"    SLOs of summary.json's request_goodput, KEY ttft, tpot or\n"
    "                            e2el (vLLM benchmark_serving's --goodput; docs/outputs.md)\n"
    "  --metric-percentiles LIST percentiles of summary.json's vLLM keys, e.g. 50,90,99\n"
    "                            (default 99, vLLM's)\n"
    "  --emit-et DIR             also write the run as Chakra ET files that ASTRA-sim and\n"
    "                            servesim replay run, with their configs (docs/chakra.md)\n"
    "  --et-scope SCOPE          iteration | run: a set of files per batch (iteration,\n"
    "                            default) or one file per NPU for the whole run, KV\n"
    "                            transfers included (run)\n"
    "  --trace FILE.json         also write a Chrome trace / Perfetto timeline: operators per\n"
    "                            NPU, KV transfers, requests, counters (docs/trace.md)\n"
    "  --trace-window T0:T1      only what overlaps simulated seconds [T0, T1] (T0: = to the end)\n"
    "  --per-layer-dag           build TP iterations per layer and operator even where they\n"
    "                            fold (same results, slower; docs/parallelism.md)\n"
    "  --quiet                   no summary on stdout, no progress line on stderr\n"
    "  --progress[=S]            a progress line on stderr every S wall seconds (default\n"
    "                            10), also when stderr is not a terminal, and a last one\n"
    "                            (simulated time, requests done, rate, ETA); without it\n"
    "                            too, a line when no request moved for 30 s of wall time\n"
    "                            ($SERVESIM_PROGRESS_STALL_S; docs/serving.md \"Progress\")\n"
    "  (one run per output folder at a time; SIGINT, SIGTERM, SIGHUP stop the run at the\n"
    "   next event, remove its temporary files and exit with 128 + the signal)\n"
    "  --help                    this text\n";

/* ---- options ----------------------------------------------------------------------------- */

/* Strings are GOption's (g_free; run_opts_clear). Numbers left unset keep the zero (or, for
 * long_prefill, -1) they start with. */
typedef struct {
    char *cluster, *workload, *profiles, *latency, *output_dir, *emit_et, *router, *scheduler,
        *model, *hardware, *input_len, *output_len, *arrival, *model_dir;
    char *kv_eviction;
    char *kv_transfer; /* docs/disaggregation.md */
    char *network_model, *expert_routing, *moe_comm, *host_overhead;
    char *engine, *frontend; /* msg/engine.c */
    char *collectives;       /* docs/collectives.md "Closed form" */
    char *speculative;       /* docs/speculative.md */
    char *et_scope;          /* docs/chakra.md "Emitted sets" */
    /* The timeline (docs/trace.md). */
    char *trace, *trace_window;
    /* Memory tiers (docs/memory-tiers.md): checked by sv_planner_tier_flag_check. */
    char *preemption_mode, *prefix_storage, *prefix_pool, *prefix_write, *prefix_evict,
        *offload_overlap, *kv_load_overlap, *memory_model;
    char *pim_dir, *pim_model, *pim_placement; /* docs/pim.md */
    double pim_gflops;
    double idle_tail_s; /* docs/power.md */
    gboolean enable_attn_offloading, enable_sub_batch_interleaving, enable_local_offloading;
    gboolean enable_prefix_sharing;
    int64_t prefix_chunk_tokens;
    double slo_ttft_ms;    /* docs/routing.md */
    char **plugins;        /* --plugin FILE.so, repeatable (planner/planner.h); NULL-terminated */
    char **hardware_files; /* --hardware-file FILE, repeatable (docs/compute.md) */
    int64_t seed, max_num_seqs, max_num_batched_tokens, tp, requests, long_prefill, block_size;
    int64_t max_model_len; /* docs/serving.md "Rejected requests" */
    /* Quick form (docs/serving.md "Quick form"): planner/quick.c. */
    int64_t instances, pp, decode_tp;
    char *pd, *decode_hardware;
    double time_scale; /* docs/workloads.md "Scaled replay"; 0 = unset */
    gboolean progress; /* --progress given */
    double progress_s; /* its period, s */
    /* --dtype, --kv-cache-dtype: docs/quantisation.md */
    char *dtype, *kv_cache_dtype;
    gboolean strict;
    double qps;
    double gpu_clock; /* docs/power.md "DVFS"; 0 = unset */
    gboolean skip_bad, quiet, help, no_prefix_caching;
    gboolean per_layer_dag; /* docs/parallelism.md "Folded iterations" */
    /* docs/outputs.md "vLLM benchmark keys" and "run.json" */
    char *goodput, *metric_percentiles;
    struct sv_metrics_cfg vllm; /* the goodput and percentile fields, parsed */
    int argc;
    char **argv; /* as given, before GOption removed what it parsed */
} run_opts;

static void run_opts_clear(run_opts *o)
{
    char **strs[] = {
        &o->cluster,         &o->workload,        &o->profiles,        &o->latency,
        &o->output_dir,      &o->emit_et,         &o->router,          &o->scheduler,
        &o->model,           &o->hardware,        &o->input_len,       &o->output_len,
        &o->arrival,         &o->model_dir,       &o->kv_eviction,     &o->kv_transfer,
        &o->network_model,   &o->expert_routing,  &o->moe_comm,        &o->host_overhead,
        &o->preemption_mode, &o->prefix_storage,  &o->prefix_pool,     &o->prefix_write,
        &o->prefix_evict,    &o->offload_overlap, &o->kv_load_overlap, &o->memory_model,
        &o->pim_dir,         &o->pim_model,       &o->pim_placement,   &o->engine,
        &o->frontend,        &o->collectives,     &o->et_scope,        &o->pd,
        &o->decode_hardware, &o->dtype,           &o->kv_cache_dtype};
    for (size_t i = 0; i < G_N_ELEMENTS(strs); i++)
        g_clear_pointer(strs[i], g_free);
    g_clear_pointer(&o->trace, g_free);
    g_clear_pointer(&o->trace_window, g_free);
    g_clear_pointer(&o->speculative, g_free);
    g_clear_pointer(&o->plugins, g_strfreev);
    g_clear_pointer(&o->hardware_files, g_strfreev);
    g_clear_pointer(&o->goodput, g_free);
    g_clear_pointer(&o->metric_percentiles, g_free);
    g_free((double *)o->vllm.metric_percentiles);
    g_free(o->argv);
}

static int bad_value(const char *flag, const char *value, const char *want)
{
    fprintf(stderr, "servesim run: %s: '%s' is not %s\n", flag, value, want);
    return 2;
}

/* Numbers have ranges GOption does not check: they are parsed here, through one callback, as
 * decimal text (sv_num_parse_*), each against its documented range (docs/reliability.md "Numeric
 * ranges"; the shared ones are core's). A count is never narrowed: --tp 4294967297 is an error,
 * not TP 1. */
enum num_kind { NUM_INT, NUM_DOUBLE };
struct num_def {
    const char *name; /* long name, with its dashes as GOption passes it */
    enum num_kind kind;
    size_t offset;
    struct sv_range_int ri;    /* NUM_INT */
    struct sv_range_double rd; /* NUM_DOUBLE */
};

#define INT(name_, field, range)                                                                   \
    {                                                                                              \
        .name = name_, .kind = NUM_INT, .offset = G_STRUCT_OFFSET(run_opts, field), .ri = range    \
    }
#define DBL(name_, field, range)                                                                   \
    {                                                                                              \
        .name = name_, .kind = NUM_DOUBLE, .offset = G_STRUCT_OFFSET(run_opts, field), .rd = range \
    }
static const struct num_def num_defs[] = {
    INT("--seed", seed, SV_RANGE_I(0, INT64_MAX, NULL)),
    INT("--max-num-seqs", max_num_seqs, SV_RANGE_I(1, 1 << 20, NULL)),
    INT("--max-num-batched-tokens", max_num_batched_tokens, SV_RANGE_TOKENS),
    INT("--long-prefill-token-threshold", long_prefill,
        SV_RANGE_I(0, SV_RANGE_TOKENS_MAX, "tokens")),
    INT("--block-size", block_size, SV_RANGE_I(1, 1 << 16, "tokens")),
    INT("--max-model-len", max_model_len, SV_RANGE_TOKENS),
    INT("--tp", tp, SV_RANGE_DEVICES),
    INT("--pp", pp, SV_RANGE_DEVICES),
    INT("--decode-tp", decode_tp, SV_RANGE_DEVICES),
    INT("--instances", instances, SV_RANGE_DEVICES),
    /* 10^-9 to 10^9: any trace's span stays within the engine's horizon or is refused by line */
    DBL("--time-scale", time_scale, SV_RANGE_D_OPEN(0, 1e9, NULL)),
    /* request ids and counters are 64-bit; 2^32 requests is past any run's memory anyway */
    INT("--requests", requests, SV_RANGE_I(1, INT64_C(1) << 32, NULL)),
    /* one request per 11.6 days to 10^9 per second; whether the last one arrives before the
     * horizon depends on --requests too (the generator says so) */
    DBL("--qps", qps, SV_RANGE_D(1e-6, 1e9, "req/s")),
    DBL("--slo-ttft-ms", slo_ttft_ms, SV_RANGE_D_OPEN(0, 1e9, "ms")),
    INT("--prefix-chunk-tokens", prefix_chunk_tokens, SV_RANGE_TOKENS),
    DBL("--pim-gflops", pim_gflops, SV_RANGE_D_OPEN(0, 1e9, "GFLOP/s")),
    DBL("--gpu-clock", gpu_clock, SV_RANGE_FRACTION),
    DBL("--idle-tail", idle_tail_s, SV_RANGE_D_OPEN(0, 1e6, "s")),
};
#undef INT
#undef DBL

static gboolean parse_number(const char *name, const char *v, gpointer data, GError **error)
{
    const struct num_def *d = NULL;
    for (size_t k = 0; k < G_N_ELEMENTS(num_defs) && !d; k++)
        if (!strcmp(name, num_defs[k].name))
            d = &num_defs[k];
    g_assert(d); /* every G_OPTION_ARG_CALLBACK entry is in num_defs */
    void *field = (char *)data + d->offset;
    GError *e = NULL;
    if (d->kind == NUM_INT) {
        int64_t n;
        if (!sv_num_parse_int(v, &n)) {
            g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "%s: '%s' is not %s", name,
                        v, d->ri.lo > 0 ? "a positive integer" : "a non-negative integer");
            return FALSE;
        }
        if (!sv_range_check_int(name, n, d->ri, &e))
            goto out_range;
        *(int64_t *)field = n;
        return TRUE;
    }
    double x;
    if (!sv_num_parse_double(v, &x)) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "%s: '%s' is not a number",
                    name, v);
        return FALSE;
    }
    if (!sv_range_check_double(name, x, d->rd, &e)) {
        if (d->rd.lo_open && d->rd.lo == 0 && d->rd.hi == 1) { /* the documented wording */
            g_clear_error(&e);
            g_set_error(&e, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                        "%s: '%s' is not a fraction in (0, 1]", name, v);
        }
        goto out_range;
    }
    *(double *)field = x;
    return TRUE;
out_range:
    g_set_error_literal(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, e->message);
    g_error_free(e);
    return FALSE;
}

/* --progress[=S]: the period, (0, 86400] s; none given: PROGRESS_PERIOD_S. */
static gboolean parse_progress(const char *name, const char *v, gpointer data, GError **error)
{
    run_opts *o = data;
    o->progress = TRUE;
    o->progress_s = PROGRESS_PERIOD_S;
    if (!v)
        return TRUE;
    g_autoptr(GError) e = NULL;
    double x;
    if (!sv_num_parse_double(v, &x) ||
        !sv_range_check_double(name, x, SV_RANGE_D_OPEN(0, 86400, "s"), &e)) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "%s: '%s' is not a period in (0, 86400] seconds", name, v);
        return FALSE;
    }
    o->progress_s = x;
    return TRUE;
}

#define STR(name, field, arg)                                                                      \
    {                                                                                              \
        name, 0, 0, G_OPTION_ARG_STRING, &o->field, NULL, arg                                      \
    }
#define PATH(name, field, arg)                                                                     \
    {                                                                                              \
        name, 0, 0, G_OPTION_ARG_FILENAME, &o->field, NULL, arg                                    \
    }
#define FLAG(name, short, field)                                                                   \
    {                                                                                              \
        name, short, 0, G_OPTION_ARG_NONE, &o->field, NULL, NULL                                   \
    }
#define NUMBER(name, arg)                                                                          \
    {                                                                                              \
        name, 0, 0, G_OPTION_ARG_CALLBACK, (gpointer)parse_number, NULL, arg                       \
    }

/* 0 when parsed, else the exit status (2: usage error, the message printed). GLib's own --help is
 * off: the usage text above is the documented one (as servesim validate does). */
static int parse_args(int argc, char **argv, run_opts *o)
{
    GOptionEntry entries[] = {
        FLAG("help", 'h', help),
        FLAG("quiet", 0, quiet),
        FLAG("skip-bad-lines", 0, skip_bad),
        FLAG("no-prefix-caching", 0, no_prefix_caching),
        FLAG("strict", 0, strict),
        PATH("cluster", cluster, "FILE"),
        PATH("workload", workload, "FILE"),
        PATH("profiles", profiles, "DIR"),
        STR("latency", latency, "profile|roofline"),
        PATH("output-dir", output_dir, "DIR"),
        STR("goodput", goodput, "\"KEY:MS ...\""),
        STR("metric-percentiles", metric_percentiles, "LIST"),
        PATH("emit-et", emit_et, "DIR"),
        STR("et-scope", et_scope, "iteration|run"),
        PATH("trace", trace, "FILE.json"),
        STR("trace-window", trace_window, "T0:T1"),
        FLAG("per-layer-dag", 0, per_layer_dag),
        STR("router", router, "NAME"),
        STR("scheduler", scheduler, "NAME"),
        STR("kv-eviction", kv_eviction, "NAME"),
        STR("kv-transfer", kv_transfer, "MODE"),
        STR("network-model", network_model, "NAME"),
        STR("collectives", collectives, "MODE"),
        STR("expert-routing", expert_routing, "NAME"),
        STR("moe-comm", moe_comm, "MODE"),
        STR("host-overhead", host_overhead, "MODEL"),
        STR("engine", engine, "NAME"),
        STR("frontend", frontend, "SPEC"),
        STR("speculative", speculative, "SPEC"),
        STR("model", model, "NAME"),
        STR("hardware", hardware, "NAME"),
        STR("input-len", input_len, "SPEC"),
        STR("output-len", output_len, "SPEC"),
        STR("arrival", arrival, "SPEC"),
        PATH("model-dir", model_dir, "DIR"),
        {"plugin", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o->plugins, NULL, "FILE.so"},
        {"hardware-file", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o->hardware_files, NULL, "FILE"},
        STR("preemption-mode", preemption_mode, "recompute|swap"),
        STR("prefix-storage", prefix_storage, "none|cpu|cxl|ssd|LIST"),
        FLAG("enable-prefix-sharing", 0, enable_prefix_sharing),
        STR("prefix-pool", prefix_pool, "instance|node|cluster"),
        STR("prefix-write", prefix_write, "through|back"),
        STR("prefix-evict", prefix_evict, "lru|fifo"),
        STR("offload-overlap", offload_overlap, "prefetch|serial"),
        STR("kv-load-overlap", kv_load_overlap, "none|layer"),
        STR("memory-model", memory_model, "finite|ideal"),
        NUMBER("prefix-chunk-tokens", "N"),
        FLAG("enable-attn-offloading", 0, enable_attn_offloading),
        FLAG("enable-sub-batch-interleaving", 0, enable_sub_batch_interleaving),
        FLAG("enable-local-offloading", 0, enable_local_offloading),
        PATH("pim-dir", pim_dir, "DIR"),
        STR("pim-model", pim_model, "linear|bandwidth"),
        STR("pim-placement", pim_placement, "NAME"),
        NUMBER("pim-gflops", "X"),
        NUMBER("idle-tail", "S"),
        NUMBER("slo-ttft-ms", "MS"),
        NUMBER("seed", "N"),
        NUMBER("max-num-seqs", "N"),
        NUMBER("max-num-batched-tokens", "N"),
        NUMBER("long-prefill-token-threshold", "N"),
        NUMBER("block-size", "N"),
        NUMBER("max-model-len", "N"),
        NUMBER("tp", "N"),
        NUMBER("pp", "N"),
        NUMBER("decode-tp", "N"),
        NUMBER("instances", "N"),
        NUMBER("time-scale", "X"),
        STR("pd", pd, "P:D"),
        STR("decode-hardware", decode_hardware, "NAME"),
        STR("dtype", dtype, "D"),
        STR("kv-cache-dtype", kv_cache_dtype, "D"),
        {"progress", 0, G_OPTION_FLAG_OPTIONAL_ARG, G_OPTION_ARG_CALLBACK, (gpointer)parse_progress,
         NULL, "S"},
        NUMBER("requests", "N"),
        NUMBER("qps", "R"),
        NUMBER("gpu-clock", "F"),
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new(NULL);
    g_option_context_set_help_enabled(ctx, FALSE);
    /* The callback finds the options record as its group's data. */
    GOptionGroup *main_group = g_option_group_new(NULL, NULL, NULL, o, NULL);
    g_option_group_add_entries(main_group, entries);
    g_option_context_set_main_group(ctx, main_group);
    g_autoptr(GError) err = NULL;
    if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
        /* GLib names the option: "Unknown option --x", "Missing argument for --seed"; the
         * number callback says "--seed: 'x' is not ...". */
        fprintf(stderr, "servesim run: %s (see servesim run --help)\n", err->message);
        return 2;
    }
    if (argc > 1) {
        fprintf(stderr, "servesim run: unexpected argument '%s' (see servesim run --help)\n",
                argv[1]);
        return 2;
    }
    /* An empty value names nothing: an error, as a missing one is. */
    for (const GOptionEntry *e = entries; e->long_name; e++) {
        if (e->arg != G_OPTION_ARG_STRING && e->arg != G_OPTION_ARG_FILENAME)
            continue;
        const char *v = *(char **)e->arg_data;
        if (v && !*v) {
            g_autofree char *flag = g_strconcat("--", e->long_name, NULL);
            return bad_value(flag, v, "a non-empty value");
        }
    }
    g_autoptr(GError) verr = NULL;
    if ((o->goodput && !sv_metrics_goodput_parse(o->goodput, &o->vllm, &verr)) ||
        (o->metric_percentiles &&
         !(o->vllm.metric_percentiles = sv_metrics_percentiles_parse(
               o->metric_percentiles, &o->vllm.n_metric_percentiles, &verr)))) {
        fprintf(stderr, "servesim run: %s\n", verr->message);
        return 2;
    }
    /* Memory-tier flags: the values the cluster config's keys of the same name take. */
    const struct {
        const char *flag, *key, *value;
    } tier[] = {
        {"--preemption-mode", "preemption_mode", o->preemption_mode},
        {"--prefix-storage", "prefix_storage", o->prefix_storage},
        {"--prefix-pool", "prefix_pool", o->prefix_pool},
        {"--prefix-write", "prefix_write", o->prefix_write},
        {"--prefix-evict", "prefix_evict", o->prefix_evict},
        {"--offload-overlap", "offload_overlap", o->offload_overlap},
        {"--kv-load-overlap", "kv_load_overlap", o->kv_load_overlap},
        {"--memory-model", "memory_model", o->memory_model},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(tier); i++) {
        g_autoptr(GError) te = NULL;
        if (tier[i].value &&
            !sv_planner_tier_flag_check(tier[i].key, tier[i].value, tier[i].flag, &te)) {
            fprintf(stderr, "servesim run: %s (see servesim run --help)\n", te->message);
            return 2;
        }
    }
    if (o->et_scope) {
        g_autoptr(GError) se = NULL;
        sv_msg_et_scope scope;
        if (!sv_msg_et_scope_parse(o->et_scope, &scope, &se)) {
            fprintf(stderr, "servesim run: %s (see servesim run --help)\n", se->message);
            return 2;
        }
        if (!o->emit_et) {
            fprintf(stderr, "servesim run: --et-scope needs --emit-et DIR\n");
            return 2;
        }
    }
    sv_time tw0, tw1;
    g_autoptr(GError) twe = NULL;
    if (o->trace_window &&
        (!o->trace ||
         !sv_metrics_trace_window_parse(o->trace_window, "--trace-window", &tw0, &tw1, &twe))) {
        fprintf(stderr, "servesim run: %s\n", twe ? twe->message : "--trace-window needs --trace");
        return 2;
    }
    for (char **p = o->plugins; p && *p; p++) {
        if (!**p) {
            fprintf(stderr, "servesim run: --plugin needs a shared object path\n");
            return 2;
        }
    }
    return 0;
}
#undef STR
#undef PATH
#undef FLAG
#undef NUMBER

/* ---- run ------------------------------------------------------------------------------------- */

/* On stderr, --quiet or not, which latency source each instance uses: a run on the roofline must
 * never pass for one on measured profiles (docs/serving.md). Consecutive instances with the same
 * model, hardware and source share one line ("instances 0-7"), so a large cluster stays legible. */
static void report_latency_sources(const struct sv_planner_run_cfg *cfg, gboolean builtin,
                                   char *const *sources)
{
    int32_t n = 0;
    while (sources && n < cfg->cluster->n_instances && sources[n])
        n++;
    for (int32_t i = 0, j; i < n; i = j + 1) {
        const struct sv_planner_instance_cfg *ic = &cfg->cluster->instances[i];
        const char *src = sources[i];
        for (j = i; j + 1 < n; j++) {
            const struct sv_planner_instance_cfg *nx = &cfg->cluster->instances[j + 1];
            if (strcmp(sources[j + 1], src) || strcmp(nx->model_name, ic->model_name) ||
                strcmp(nx->hardware, ic->hardware))
                break;
        }
        g_autofree char *who =
            j > i ? g_strdup_printf("instances %d-%d", i, j) : g_strdup_printf("instance %d", i);
        g_autofree char *why = NULL;
        if (g_str_has_prefix(src, "profile:"))
            why = g_strdup("");
        else if (g_str_has_prefix(src, "legacy:"))
            why = g_strdup(" (LLMServingSim's perf_models layout)");
        else if (g_str_has_prefix(src, "vidur:"))
            why = g_strdup(" (Vidur's profiling layout)");
        else if (cfg->latency == SV_PLANNER_RUN_LATENCY_ROOFLINE)
            why = g_strdup(builtin ? " (the built-in default run)" : " (--latency roofline)");
        else if (!cfg->profiles_root)
            why = g_strdup(" (no profiles: neither --profiles DIR nor " PROFILES_ENV ")");
        else
            why = g_strdup_printf(" (no profile bundle under %s)", cfg->profiles_root);
        fprintf(stderr, "servesim run: %s (%s on %s): latency %s%s\n", who, ic->model_name,
                ic->hardware, src, why);
    }
}

/* A bad --arrival / --input-len / --output-len sets *usage (exit status 2). */
static sv_wl_source *quick_workload(const run_opts *o, gboolean builtin, gboolean *usage_error,
                                    GError **error)
{
    *usage_error = TRUE;
    struct sv_wl_gen_cfg g = {0};
    g.seed = (uint64_t)o->seed;
    g.count = o->requests ? (uint64_t)o->requests : DEFAULT_REQUESTS;
    double qps = o->qps > 0 ? o->qps : DEFAULT_QPS;
    if (!sv_wl_arrival_parse(o->arrival ? o->arrival : "poisson", qps, &g.arrival, error)) {
        g_prefix_error(error, "--arrival: ");
        return NULL;
    }
    if (o->input_len || o->output_len || !builtin) {
        if (!sv_wl_len_parse(o->input_len ? o->input_len : "sharegpt", TRUE, &g.input_len, error)) {
            g_prefix_error(error, "--input-len: ");
            return NULL;
        }
        if (!sv_wl_len_parse(o->output_len ? o->output_len : "sharegpt", FALSE, &g.output_len,
                             error)) {
            sv_wl_len_clear(&g.input_len);
            g_prefix_error(error, "--output-len: ");
            return NULL;
        }
    } else {
        sv_wl_len_sharegpt(&g.input_len, &g.output_len);
    }
    *usage_error = FALSE;
    sv_wl_source *src = sv_wl_generator_new(&g, error);
    sv_wl_len_clear(&g.input_len);
    sv_wl_len_clear(&g.output_len);
    return src;
}

/* The run itself, once the options are parsed. */
static int run(const run_opts *o)
{
    if (o->help) {
        fputs(usage, stdout);
        return 0;
    }
    struct sv_planner_run_cfg cfg = {0};
    if (o->latency) {
        if (!strcmp(o->latency, "profile"))
            cfg.latency = SV_PLANNER_RUN_LATENCY_PROFILE;
        else if (!strcmp(o->latency, "roofline"))
            cfg.latency = SV_PLANNER_RUN_LATENCY_ROOFLINE;
        else
            return bad_value("--latency", o->latency, "profile or roofline");
    }
    if (o->dtype && !sv_compute_quant_canonical(o->dtype, NULL))
        return bad_value("--dtype", o->dtype, "auto, bf16, fp16, fp8, w8a8, w8a16 or w4a16");
    if (o->kv_cache_dtype && !sv_compute_quant_kv_canonical(o->kv_cache_dtype, NULL))
        return bad_value("--kv-cache-dtype", o->kv_cache_dtype, "auto, bf16, fp16 or fp8");
    if (o->host_overhead && !sv_msg_host_parse(o->host_overhead, &cfg.host_model, NULL))
        return bad_value("--host-overhead", o->host_overhead, "fitted or none");
    sv_msg_engine_kind engine;
    if (o->engine && !sv_msg_engine_parse(o->engine, &engine, NULL))
        return bad_value("--engine", o->engine, "vllm-0.19 or vllm-0.10");
    cfg.engine = o->engine;
    cfg.speculative = o->speculative; /* checked by sv_planner_run_check */
    if (o->frontend && !sv_msg_frontend_parse(o->frontend, &cfg.frontend, NULL))
        return bad_value("--frontend", o->frontend, "off, on or IN_MS:OUT_MS");
    if (o->network_model) {
        sv_net_model m;
        if (!sv_net_model_parse(o->network_model, &m, NULL))
            return bad_value("--network-model", o->network_model,
                             "flow, fifo, analytical or ideal");
    }
    if (o->collectives && strcmp(o->collectives, "fast") != 0 &&
        strcmp(o->collectives, "messages") != 0)
        return bad_value("--collectives", o->collectives, "fast or messages");
    sv_msg_moe_comm moe_comm;
    if (o->moe_comm && !sv_msg_moe_comm_parse(o->moe_comm, &moe_comm, NULL))
        return bad_value("--moe-comm", o->moe_comm, "allgather_reducescatter or alltoall");
    /* Checked whatever the cluster: a run without prefill/decode instances would never read it
     * and a typo would pass unseen. */
    sv_planner_pd_kv_mode kv_mode;
    if (o->kv_transfer && !sv_planner_pd_kv_mode_parse(o->kv_transfer, &kv_mode, NULL))
        return bad_value("--kv-transfer", o->kv_transfer, "whole or per_layer");
    g_autoptr(GError) err = NULL;
    /* Policies by name from the registry: the built-ins plus what --plugin files register. */
    g_autoptr(sv_registry) reg = sv_planner_registry_new(&err);
    for (char **p = o->plugins; reg && p && *p; p++) {
        if (!sv_planner_plugin_load(reg, *p, &err))
            break;
    }
    if (err) {
        fprintf(stderr, "servesim run: --plugin: %s\n", err->message);
        return 2;
    }
    static const struct {
        const char *flag;
        sv_registry_kind kind;
        size_t offset;
    } named[] = {
        {"--router", SV_REGISTRY_ROUTER, G_STRUCT_OFFSET(run_opts, router)},
        {"--scheduler", SV_REGISTRY_SCHED, G_STRUCT_OFFSET(run_opts, scheduler)},
        {"--kv-eviction", SV_REGISTRY_KV_EVICT, G_STRUCT_OFFSET(run_opts, kv_eviction)},
    };
    for (size_t k = 0; k < G_N_ELEMENTS(named); k++) {
        const char *v = *(const char *const *)((const char *)o + named[k].offset);
        if (v && !sv_registry_lookup(reg, named[k].kind, v, &err)) {
            fprintf(stderr, "servesim run: %s: %s\n", named[k].flag, err->message);
            return 2;
        }
    }
    /* Expert routing: a registry name (hist:... is built in, not registered), checked here
     * rather than when the first MoE instance is built. */
    const char *er = o->expert_routing;
    if (er && !(g_ascii_strncasecmp(er, "hist", 4) == 0 && (er[4] == ':' || er[4] == '\0')) &&
        !sv_registry_lookup(reg, SV_REGISTRY_EXPERT_ROUTE, er, &err)) {
        fprintf(stderr, "servesim run: --expert-routing: %s\n", err->message);
        return 2;
    }
    /* The hardware catalog of this run: the built-ins plus --hardware-file devices. */
    g_autoptr(sv_compute_hw_catalog) hw_cat = sv_compute_hw_catalog_new();
    for (char **p = o->hardware_files; p && *p; p++) {
        if (!sv_compute_hw_catalog_load(hw_cat, *p, &err)) {
            fprintf(stderr, "servesim run: --hardware-file: %s\n", err->message);
            return 2;
        }
    }
    cfg.registry = reg;
    cfg.router_name = o->router;
    cfg.scheduler_name = o->scheduler;
    cfg.kv_eviction = o->kv_eviction;
    cfg.kv_transfer = o->kv_transfer;
    cfg.network_model = o->network_model;
    cfg.collectives_with_messages = o->collectives && strcmp(o->collectives, "messages") == 0;
    cfg.gpu_clock = o->gpu_clock;
    cfg.expert_routing = o->expert_routing;
    cfg.moe_comm = o->moe_comm;
    cfg.slo_ttft_ms = o->slo_ttft_ms;
    const struct sv_cli_run_inputs in = {.cluster = o->cluster,
                                         .workload = o->workload,
                                         .model = o->model,
                                         .hardware = o->hardware,
                                         .pd = o->pd,
                                         .decode_hardware = o->decode_hardware,
                                         .input_len = o->input_len,
                                         .output_len = o->output_len,
                                         .arrival = o->arrival,
                                         .tp = o->tp,
                                         .pp = o->pp,
                                         .instances = o->instances,
                                         .decode_tp = o->decode_tp,
                                         .requests = o->requests,
                                         .qps = o->qps,
                                         .time_scale = o->time_scale,
                                         .skip_bad_lines = o->skip_bad};
    gboolean builtin = FALSE;
    int mode_status = sv_cli_run_check_inputs(&in, &builtin);
    if (mode_status)
        return mode_status;
    double stall_s;
    if (!sv_cli_progress_stall_s(PROGRESS_STALL_S, &stall_s, &err)) {
        fprintf(stderr, "servesim run: %s\n", err->message);
        return 2;
    }

    struct sv_planner_cluster_cfg *cluster = NULL;
    sv_wl_source *src = NULL;
    g_autoptr(sv_metrics) m = NULL;
    g_autofree char *run_json = NULL;
    sv_metrics_trace *trace = NULL; /* --trace (docs/trace.md) */
    const char *out_dir = NULL;
    gboolean outputs_written = FALSE;
    uint64_t total = 0; /* requests in the workload, 0 = unknown (progress only) */
    sv_cli_progress_mode pmode = o->progress                           ? SV_CLI_PROGRESS_LINES
                                 : !o->quiet && isatty(fileno(stderr)) ? SV_CLI_PROGRESS_REDRAW
                                                                       : SV_CLI_PROGRESS_OFF;
    g_autoptr(sv_cli_progress) prog = NULL;
    int status = 1; /* until the run succeeded */
    cfg.seed = (uint64_t)o->seed;
    /* Scheduling flags; the planner resolves them against the config (planner.h). */
    cfg.max_num_seqs = o->max_num_seqs;
    cfg.max_num_batched_tokens = o->max_num_batched_tokens;
    cfg.block_size = o->block_size;
    cfg.max_model_len = o->max_model_len;
    cfg.strict = o->strict;
    cfg.long_prefill_token_threshold = o->long_prefill > 0    ? o->long_prefill
                                       : o->long_prefill == 0 ? -1 /* explicit: no cap */
                                                              : 0;
    cfg.enable_prefix_caching = o->no_prefix_caching ? 0 : -1;
    cfg.enable_chunked_prefill = cfg.reserve_full_isl = -1;
    cfg.emit_et_dir = o->emit_et;
    cfg.et_scope = o->et_scope;
    cfg.per_layer_dag = o->per_layer_dag;
    cfg.enable_attn_offloading = o->enable_attn_offloading ? 1 : -1;
    cfg.enable_sub_batch_interleaving = o->enable_sub_batch_interleaving ? 1 : -1;
    cfg.enable_local_offloading = o->enable_local_offloading ? 1 : -1;
    cfg.pim_model = o->pim_model;
    cfg.pim_placement = o->pim_placement;
    cfg.pim_flops = o->pim_gflops * 1e9;
    /* --idle-tail's range is SV_PLANNER_MAX_IDLE_TAIL_NS (num_defs) */
    cfg.idle_tail_ns = sv_time_from_ns(o->idle_tail_s * 1e9);
    /* PIM device files: --pim-dir, else LLMServingSim's layout beside the cluster config
     * (configs/cluster/x.json -> configs/pim/<name>.ini), then the config's own folder. */
    g_autofree char *cluster_dir = o->cluster ? g_path_get_dirname(o->cluster) : NULL;
    g_autofree char *pim_up = cluster_dir ? g_build_filename(cluster_dir, "..", "pim", NULL) : NULL;
    const char *pim_dirs[3] = {NULL, NULL, NULL};
    if (o->pim_dir) {
        pim_dirs[0] = o->pim_dir;
    } else if (cluster_dir) {
        pim_dirs[0] = pim_up;
        pim_dirs[1] = cluster_dir;
    }
    cfg.pim_dirs = pim_dirs;
    struct sv_planner_tier_flags tier_flags;
    sv_planner_tier_flags_init(&tier_flags);
    {
        const struct {
            const char *v;
            char *dst;
            size_t size;
        } strs[] = {
            {o->preemption_mode, tier_flags.preemption_mode, sizeof tier_flags.preemption_mode},
            {o->prefix_storage, tier_flags.prefix_storage, sizeof tier_flags.prefix_storage},
            {o->prefix_pool, tier_flags.prefix_pool, sizeof tier_flags.prefix_pool},
            {o->prefix_write, tier_flags.prefix_write, sizeof tier_flags.prefix_write},
            {o->prefix_evict, tier_flags.prefix_evict, sizeof tier_flags.prefix_evict},
            {o->offload_overlap, tier_flags.offload_overlap, sizeof tier_flags.offload_overlap},
            {o->kv_load_overlap, tier_flags.kv_load_overlap, sizeof tier_flags.kv_load_overlap},
            {o->memory_model, tier_flags.memory_model, sizeof tier_flags.memory_model},
        };
        for (size_t i = 0; i < G_N_ELEMENTS(strs); i++)
            if (strs[i].v)
                g_strlcpy(strs[i].dst, strs[i].v, strs[i].size);
    }
    if (o->enable_prefix_sharing)
        tier_flags.enable_prefix_sharing = 1;
    if (o->prefix_chunk_tokens > 0)
        tier_flags.prefix_chunk_tokens = o->prefix_chunk_tokens;
    cfg.tier_flags = &tier_flags;
    cfg.model_dir = o->model_dir;
    const char *env_profiles = g_getenv(PROFILES_ENV);
    cfg.profiles_root = o->profiles                     ? o->profiles
                        : env_profiles && *env_profiles ? env_profiles
                                                        : NULL;
    if (builtin && !o->latency)
        cfg.latency = SV_PLANNER_RUN_LATENCY_ROOFLINE;
    if (o->cluster) {
        cluster = sv_planner_cluster_load(o->cluster, &err);
        if (!cluster)
            goto fail;
        cluster->hw_catalog = hw_cat;
        /* Memory-tier / power / PIM keys the run ignores (docs/reference-configs.md). */
        for (char **u = cluster->unsupported; u && *u; u++)
            g_printerr("servesim run: %s\n", *u);
    } else {
        struct sv_planner_quick_cfg q = {.model = o->model ? o->model : DEFAULT_MODEL,
                                         .hardware = o->hardware ? o->hardware : DEFAULT_HARDWARE,
                                         .tp = (int32_t)o->tp,
                                         .pp = (int32_t)o->pp,
                                         .instances = (int32_t)o->instances,
                                         .decode_hardware = o->decode_hardware,
                                         .decode_tp = (int32_t)o->decode_tp};
        if (o->pd && !sv_cli_parse_pd(o->pd, &q.prefill, &q.decode)) {
            status = bad_value("--pd", o->pd, "P:D (prefill and decode instance counts, e.g. 1:3)");
            goto out;
        }
        cluster = sv_planner_cluster_quick(&q, hw_cat, &err);
        if (!cluster)
            goto fail;
    }
    for (int32_t i = 0; i < cluster->n_instances; i++) { /* --dtype, --kv-cache-dtype */
        struct sv_planner_instance_cfg *ic = &cluster->instances[i];
        if (o->dtype)
            g_strlcpy(ic->dtype, sv_compute_quant_canonical(o->dtype, NULL), sizeof ic->dtype);
        if (o->kv_cache_dtype)
            g_strlcpy(ic->kv_cache_dtype, sv_compute_quant_kv_canonical(o->kv_cache_dtype, NULL),
                      sizeof ic->kv_cache_dtype);
    }
    if (o->workload) {
        src = sv_cli_run_trace(&in, pmode != SV_CLI_PROGRESS_OFF, &total, &err);
        if (!src)
            goto fail;
    } else {
        gboolean usage_error = FALSE;
        src = quick_workload(o, builtin, &usage_error, &err);
        if (!src) {
            status = usage_error ? 2 : 1;
            goto fail;
        }
        total = o->requests ? (uint64_t)o->requests : DEFAULT_REQUESTS;
    }
    cfg.cluster = cluster;
    cfg.workload = src;

    /* Refusals come before the outputs are opened (no empty output directory). */
    if (!sv_planner_run_check(&cfg, &err))
        goto fail;
    out_dir = o->output_dir ? o->output_dir : DEFAULT_OUTPUT_DIR;
    /* Tier columns only when the run uses a memory tier (docs/outputs.md). */
    const char *power_names[SV_POWER_N_COMPONENTS];
    for (int c = 0; c < SV_POWER_N_COMPONENTS; c++)
        power_names[c] = sv_power_component_name(c);
    /* power.csv, energy_j and summary "energy" only with a power model (docs/power.md). */
    struct sv_metrics_cfg mc = {.output_dir = out_dir,
                                .n_instances = cluster->n_instances,
                                .tiers = sv_planner_run_uses_tiers(&cfg),
                                .power_nodes = cluster->power ? cluster->n_nodes : 0,
                                .power_components = power_names,
                                .n_power_components = SV_POWER_N_COMPONENTS,
                                .pd = sv_planner_cluster_is_disaggregated(cluster),
                                .check_conservation = TRUE,
                                .has_goodput = o->vllm.has_goodput,
                                .goodput_ttft_ms = o->vllm.goodput_ttft_ms,
                                .goodput_tpot_ms = o->vllm.goodput_tpot_ms,
                                .goodput_e2el_ms = o->vllm.goodput_e2el_ms,
                                .metric_percentiles = o->vllm.metric_percentiles,
                                .n_metric_percentiles = o->vllm.n_metric_percentiles};
    /* From the first temporary file on, a signal stops the run at its next event and the error
     * path below removes them (before, nothing needs cleaning: the default action is right). */
    const volatile sig_atomic_t *sig = sv_cli_signals_catch();
    cfg.interrupt = sig;
    /* The timeline first: a trace path it cannot write fails before the output folder is
     * touched (docs/trace.md). */
    struct sv_metrics_trace_cfg tc = {.path = o->trace, .window = o->trace_window != NULL};
    if (o->trace_window)
        sv_metrics_trace_window_parse(o->trace_window, "", &tc.window_begin_ns, &tc.window_end_ns,
                                      NULL); /* checked in parse_args */
    if (o->trace && !(trace = cfg.trace = sv_metrics_trace_open(&tc, &err)))
        goto fail;
    m = sv_metrics_new(&mc, &err);
    if (!m)
        goto fail;
    struct sv_planner_run_observer obs;
    sv_planner_metrics_observer_init(m, &obs);
    cfg.observer = &obs;

    struct sv_cli_progress_cfg pcfg = {.mode = pmode,
                                       .period_s = o->progress_s,
                                       .total = total,
                                       .stall_s = stall_s,
                                       .quiet = o->quiet};
    prog = sv_cli_progress_new(&pcfg, stderr);
    sv_cli_progress_attach(prog, &cfg);

    struct sv_planner_run_result res;
    gboolean ok = sv_planner_run(&cfg, &res, &err);
    sv_cli_progress_finish(prog, ok && !*sig, res.requests + res.rejected, res.end_ns);
    report_latency_sources(&cfg, builtin && !o->latency,
                           sv_metrics_get_summary(m)->latency_sources);
    if (res.bad_lines)
        fprintf(stderr, "servesim run: skipped %" G_GUINT64_FORMAT " bad workload line%s\n",
                res.bad_lines, res.bad_lines == 1 ? "" : "s");
    if (res.rejected > 0 && !o->strict)
        fprintf(stderr,
                "servesim run: %" G_GUINT64_FORMAT " request%s rejected (%" G_GUINT64_FORMAT
                " over the context length, %" G_GUINT64_FORMAT
                " larger than any KV cache; requests.csv status, summary.json), the first: %s\n",
                res.rejected, res.rejected == 1 ? "" : "s",
                res.rejected_by_reason[SV_WL_REJECT_CONTEXT_LENGTH],
                res.rejected_by_reason[SV_WL_REJECT_KV_CAPACITY], res.first_rejection);
    if (ok && *sig) { /* the signal came after the last event */
        ok = FALSE;
        err = g_error_new(SV_CORE_ERROR, SV_CORE_ERROR_INTERRUPTED,
                          "interrupted after the last event");
    }
    if (!ok && *sig) { /* stopped by the flag, or failed on a read the signal interrupted */
        fprintf(stderr,
                "servesim run: interrupted by %s at simulated %.3f s: %" G_GUINT64_FORMAT
                " of %" G_GUINT64_FORMAT " arrived requests finished; no outputs written\n",
                sv_cli_signal_name(*sig), (double)res.end_ns / 1e9, res.requests, res.arrived);
        status = 128 + *sig;
        goto out;
    }
    if (!ok && g_error_matches(err, SV_CORE_ERROR, SV_CORE_ERROR_INTERNAL))
        goto fail; /* a conservation check: the results are wrong, exit 3 */
    if (!ok && !res.started) {
        /* The cluster could not be built: a configuration error, nothing ran (no "cannot finish"
         * line). It names the config file unless the message does already. As for the config
         * errors found before the outputs were opened, an earlier run's outputs stay. */
        g_autofree char *base = o->cluster ? g_path_get_basename(o->cluster) : NULL;
        if (base && !strstr(err->message, base))
            fprintf(stderr, "servesim run: %s: %s\n", o->cluster, err->message);
        else
            fprintf(stderr, "servesim run: %s\n", err->message);
        g_clear_pointer(&m, sv_metrics_free); /* removes its temporaries only */
        status = 1;
        goto out;
    }
    if (!ok) {
        /* Arrived counts the requests refused at arrival (rejected, or under --strict the one
         * that ended the run) as well as those handed to an instance. */
        uint64_t arrived = res.arrived;
        fprintf(stderr, "servesim run: %s\n", err->message);
        fprintf(stderr,
                "servesim run: the run cannot finish: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                " arrived requests finished, %" G_GUINT64_FORMAT
                " unfinished, at simulated %.3f s; no outputs written\n",
                res.requests, arrived, arrived - MIN(arrived, res.requests),
                (double)res.end_ns / 1e9);
        status = 1;
        goto out;
    }
    if (res.arrived == 0) /* a valid run of nothing: say so rather than print zeros alone */
        fprintf(stderr,
                "servesim run: warning: workload %s has no requests; the outputs are empty\n",
                o->workload ? o->workload : "(generated)");
    for (int32_t i = 0; i < cluster->n_instances; i++) {
        if (cluster->instances[i].role == SV_MSG_ROLE_BOTH)
            continue;
        /* A cluster with prefill/decode instances reports its KV handoffs (docs/outputs.md). */
        struct sv_metrics_pd pd = {.handoffs = res.kv_handoffs,
                                   .kv_bytes = res.kv_bytes,
                                   .kv_waits = res.kv_waits,
                                   .kv_blocks = res.kv_blocks,
                                   .kv_wait_ms = (double)res.kv_wait_ns / 1e6,
                                   .kv_transfer_ms = (double)res.kv_transfer_ns / 1e6};
        sv_metrics_set_pd(m, &pd);
        break;
    }
    if (res.has_tiers) {
        struct sv_metrics_tiers mt;
        sv_planner_tier_stats_to_metrics(&res.tiers, &mt);
        sv_metrics_set_tiers_summary(m, &mt);
    }
    if (res.has_pim) {
        struct sv_metrics_pim mp = {.channels = res.pim_channels,
                                    .iterations = res.pim.iterations,
                                    .sub_batched = res.pim.sub_batched,
                                    .decode_attn = res.pim.decode_tokens,
                                    .busy_channel_s = res.pim.busy_ns * 1e-9,
                                    .attn_s = res.pim.slowest_ns * 1e-9,
                                    .xfer_bytes = res.pim.xfer_bytes};
        sv_metrics_set_pim(m, &mp);
    }
    if (res.has_power) {
        struct sv_metrics_energy me = {.n_components = SV_POWER_N_COMPONENTS,
                                       .npu_active_j = res.energy.npu_state_j[SV_POWER_ACTIVE],
                                       .npu_standby_j = res.energy.npu_state_j[SV_POWER_STANDBY],
                                       .npu_idle_j = res.energy.npu_state_j[SV_POWER_IDLE],
                                       .total_j = res.energy.total_j,
                                       .attributed_j = res.energy.attributed_j,
                                       .unattributed_j = res.energy.unattributed_j,
                                       .dram_bytes = res.energy.dram_bytes,
                                       .link_bytes = res.energy.link_bytes,
                                       .switch_bytes = res.energy.switch_bytes,
                                       .nic_bytes = res.energy.nic_bytes,
                                       .storage_bytes = res.energy.storage_bytes};
        for (int c = 0; c < SV_POWER_N_COMPONENTS; c++) {
            me.component_names[c] = power_names[c];
            me.by_component_j[c] = res.energy.by_component_j[c];
        }
        sv_metrics_set_energy(m, &me);
    }
    struct sv_cli_run_info ri = {.argc = o->argc,
                                 .argv = o->argv,
                                 .seed = (uint64_t)o->seed,
                                 .cluster_path = o->cluster,
                                 .workload_path = o->workload,
                                 .cluster = cluster,
                                 .latency_sources = sv_metrics_get_summary(m)->latency_sources,
                                 .metrics = m};
    run_json = sv_cli_run_info_json(&ri, &err);
    if (!run_json)
        goto fail;
    sv_metrics_set_run_json(m, run_json); /* run.json, committed with the other outputs */
    if (!sv_metrics_finish(m, res.makespan_ns, res.submitted + res.rejected, &err))
        goto fail;
    outputs_written = TRUE;
    if (trace && !sv_metrics_trace_finish(trace, &err))
        goto fail;
    if (*sig) { /* while the outputs were written: they are complete, and stay */
        fprintf(stderr,
                "servesim run: %s arrived while the outputs were written; they are complete\n",
                sv_cli_signal_name(*sig));
        status = 128 + *sig;
        goto out;
    }
    const struct sv_metrics_summary *sum = sv_metrics_get_summary(m);
    if (!o->quiet) {
        printf("latency: %s; %" G_GUINT64_FORMAT " iterations\n", sum->latency_sources[0],
               res.iterations);
        sv_metrics_print_summary(m, stdout);
    }
    if (sum->unfinished > 0) {
        fprintf(stderr,
                "servesim run: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                " arrived requests did not finish\n",
                sum->unfinished, sum->arrived);
        status = 1;
        goto out;
    }
    status = 0;
    goto out;
fail:
    fprintf(stderr, "servesim run: %s\n", err ? err->message : "failed");
    if (g_error_matches(err, SV_CORE_ERROR, SV_CORE_ERROR_INTERNAL))
        status = 3; /* docs/reliability.md: a bug, not bad input */
out:
    if (m != NULL && !outputs_written)
        remove_earlier_outputs(out_dir);
    g_clear_pointer(&m, sv_metrics_free); /* before a failed run's exit: removes temporaries */
    sv_metrics_trace_free(trace);         /* an unfinished timeline's temporary */
    sv_wl_source_free(src);
    sv_planner_cluster_free(cluster);
    return status;
}

int sv_cli_run(int argc, char **argv)
{
    run_opts o = {0};
    o.long_prefill = -1;
    o.argc = argc; /* run.json: argv as given (parse_args reorders it) */
    o.argv = g_memdup2(argv, sizeof(char *) * (size_t)MAX(argc, 0));
    int status = parse_args(argc, argv, &o);
    if (status == 0)
        status = run(&o);
    run_opts_clear(&o);
    return status;
}
