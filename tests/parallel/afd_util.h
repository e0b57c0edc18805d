/* Helpers shared by the attention/FFN disaggregation tests (test_afd_*.c). */
#ifndef SV_TESTS_PARALLEL_AFD_UTIL_H
#define SV_TESTS_PARALLEL_AFD_UTIL_H

#include "planner/planner.h"

/* A cluster config from JSON text, named "t.json" in errors (NULL and *e set on a bad config). */
struct sv_planner_cluster_cfg *sv_test_afd_parse(const char *json, GError **e);

/* Run `json` on n requests arriving at 0 with `in` prompt tokens and 2 output tokens each: the
 * roofline, no host time, seed 7, vLLM's defaults for the rest; `expert_routing` and `router` may
 * be NULL (the defaults). `obs` receives the run's records. */
gboolean sv_test_afd_run(const char *json, int n, int in, const char *expert_routing,
                         const char *router, const struct sv_planner_run_observer *obs,
                         struct sv_planner_run_result *res, GError **error);

/* `model` (catalog) and the roofline latency models of the tests' two sides at TP 1 with the
 * CUDA-graph sizes their configs give (max_num_seqs 128, max_num_batched_tokens 2,048): *la on an
 * H100 (the attention side), *lf on an A100 (the FFN side). The caller frees both. */
void sv_test_afd_models(const char *model, struct sv_compute_model_cfg *m, sv_compute_latency **la,
                        sv_compute_latency **lf);

/* A chain of operators as the executor runs it (a zero-time node still takes 1 ns, ASTRA-sim).
 * side: 0 the attention side (every op but the layer sequence's MLP / MoE ones), 1 the FFN side
 * (those), 2 all. */
sv_time sv_test_afd_chain_ns(const struct sv_compute_iter_op *ops, int n,
                             const struct sv_compute_layer_seq *seq, int side);

#endif
