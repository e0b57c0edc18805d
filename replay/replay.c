/* servesim replay library: run Chakra ET files (one per NPU) on servesim's system layer with
 * ASTRA-sim's workload semantics (astra-sim/workload/Workload.cc at HEAD 518bd51,
 * CHAKRA_ET.md 1.5).
 *
 * One DAG and one executor per NPU, all on one engine, sharing one network (sv_net), one system
 * layer (sv_sys: collectives and send/recv matching) and one remote memory
 * (sv_memtier_remote). The executor applies ASTRA-sim's HardwareResource rule and issues ready
 * nodes in ascending id; the handlers below are Workload::issue_* for compute nodes, the system
 * layer's (sv_sys_exec_*) those of comm and memory nodes.
 *
 * Result: per NPU, the finish time T and the exposed communication E = T - (sum of
 * replayed/roofline GPU compute time), as Workload::report computes them; cli/cmd_replay.c
 * prints them. docs/replay.md describes usage, semantics and errors. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "core/core.h"
#include "dag/dag.h"
#include "memory-tier/memtier.h"
#include "network/network.h"
#include "proto/proto.h"
#include "replay/replay.h"
#include "system/system.h"

struct replay;

/* One simulated NPU: ASTRA-sim's Sys + Workload. */
struct replay_npu {
    /* First, so that the NPU is the handler context of both its compute handlers and the system
     * layer's comm / memory handlers. */
    struct sv_sys_exec sx;
    struct replay *r;
    int id;
    sv_dag *dag;
    sv_dag_exec *ex;
    sv_time gpu_ns;    /* HardwareResource::tics_gpu_ops */
    sv_time cpu_ns;    /* HardwareResource::tics_cpu_ops */
    sv_time finish_ns; /* -1 until every node finished */
};

struct replay {
    sv_engine *eng;
    sv_net *net;
    sv_sys *coll;
    sv_memtier_remote *mem;
    struct sv_sys_cfg sys_cfg;
    struct sv_net_topo_cfg topo;
    sv_net_model model;
    gboolean precise_durations; /* sv_replay_opts.precise_durations */
    int npus;
    struct replay_npu *npu;
    GError *error; /* first error raised inside a handler; stops the engine */
};

/* ---- errors raised while running ---------------------------------------------------------- */

static void fail(struct replay_npu *n, GError *error)
{
    struct replay *r = n->r;
    if (r->error == NULL)
        r->error = error;
    else
        g_error_free(error);
    sv_engine_stop(r->eng);
}

G_GNUC_PRINTF(3, 4)
static void failf(struct replay_npu *n, const sv_dag_node *node, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *what = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    fail(n, g_error_new(SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                        "%s: NPU %d: node %" G_GUINT64_FORMAT " (%s)", what, n->id, node->id,
                        node->name));
}

/* ASTRA-sim's ETFeederNode getters throw "Attribute <name> not found in node <id>" for an absent
 * required attribute; we report the same words (lowercase, as our errors are). */
static gboolean need(struct replay_npu *n, const sv_dag_node *node, uint32_t bit, const char *attr)
{
    if (node->p.has & bit)
        return TRUE;
    fail(n, g_error_new(SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                        "attribute %s not found in node %" G_GUINT64_FORMAT ": NPU %d (%s)", attr,
                        node->id, n->id, node->name));
    return FALSE;
}

static void fail_cb(void *ctx, GError *error)
{
    fail(ctx, error);
}

/* ---- completion --------------------------------------------------------------------------- */

static void node_finished(sv_engine *eng, void *ctx, uint64_t arg)
{
    struct replay_npu *n = ctx;
    sv_dag_exec_node_done(n->ex, (sv_dag_node *)(uintptr_t)arg);
}

static void finish_in(struct replay_npu *n, sv_dag_node *node, sv_time delay)
{
    sv_engine_schedule_in(n->r->eng, delay, SV_PRIO_DEFAULT, node_finished, n,
                          (uint64_t)(uintptr_t)node);
}

static void on_all_done(sv_dag_exec *ex, void *ctx)
{
    struct replay_npu *n = ctx;
    if (n->finish_ns < 0)
        n->finish_ns = sv_engine_now(n->r->eng);
}

/* ---- handlers (Workload::issue_*) --------------------------------------------------------- */

/* Workload::issue_replay: duration_micros x 1000 ns, 0 -> 1 ns; counted as CPU or GPU time. */
static void issue_replay(struct replay_npu *n, sv_dag_node *node)
{
    sv_time runtime = node->duration_ns != 0 ? node->duration_ns : 1;
    gboolean cpu = (node->p.has & SV_DAG_HAS_IS_CPU_OP) && node->p.is_cpu_op;
    if (cpu)
        n->cpu_ns += runtime;
    else
        n->gpu_ns += runtime;
    finish_in(n, node, runtime);
}

static void handle_replay(sv_dag_exec *ex, sv_dag_node *node, void *ctx)
{
    issue_replay(ctx, node);
}

static void handle_skip(sv_dag_exec *ex, sv_dag_node *node, void *ctx)
{
    sv_dag_exec_node_done(ex, node);
}

/* Workload::issue_comp with the roofline (astra-sim/system/Roofline.cc): performance =
 * min(local-mem-bw x 1e9 x operational intensity, peak-perf x 1e12) FLOP/s, intensity =
 * num_ops / tensor_size; runtime = (uint64)(num_ops / perf x 1e9) ns. tensor_size 0 makes the
 * node invalid: it is skipped (finishes at once, no time counted). CPU ops are replayed. */
static void handle_comp(sv_dag_exec *ex, sv_dag_node *node, void *ctx)
{
    struct replay_npu *n = ctx;
    const struct sv_sys_cfg *sc = &n->r->sys_cfg;
    gboolean cpu = (node->p.has & SV_DAG_HAS_IS_CPU_OP) && node->p.is_cpu_op;
    if (!sc->roofline_enabled || cpu) {
        issue_replay(n, node);
        return;
    }
    if (!need(n, node, SV_DAG_HAS_NUM_OPS, "num_ops") ||
        !need(n, node, SV_DAG_HAS_TENSOR_SIZE, "tensor_size"))
        return;
    double num_ops = (double)node->p.num_ops;
    double tensor = (double)node->p.tensor_size_bytes;
    if (tensor == 0.0) {
        sv_dag_exec_node_done(ex, node);
        return;
    }
    double bw = sc->local_mem_bw * 1e9;        /* GB/s -> bytes/s (Sys::initialize_sys) */
    double peak = sc->peak_perf_tflops * 1e12; /* TFLOPS -> FLOP/s */
    double perf = MIN(bw * (num_ops / tensor), peak);
    if (!(perf > 0.0)) {
        failf(n, node,
              "roofline performance is %g FLOP/s (local-mem-bw %g GB/s, peak-perf %g TFLOPS, "
              "num_ops %g): the compute time is unbounded",
              perf, sc->local_mem_bw, sc->peak_perf_tflops, num_ops);
        return;
    }
    sv_time runtime = sv_time_from_ns(num_ops / perf * 1e9);
    n->gpu_ns += runtime;
    finish_in(n, node, runtime);
}

/* ---- custom collectives ------------------------------------------------------------------- */

/* "<coll>-implementation-custom": one ET per rank, <prefix>.<rank>.et, whose SEND / RECV / COMP
 * nodes become the rank's plan (ASTRA-sim CustomAlgorithm). */
static gboolean load_custom_plan(struct replay *r, sv_sys_coll_type type, const char *prefix,
                                 GError **error)
{
    sv_sys_plan *plan = sv_sys_plan_new(r->npus);
    g_autoptr(GArray) parents = g_array_new(FALSE, FALSE, sizeof(sv_dag_link));
    g_autoptr(GArray) deps = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    /* COMP durations are read as the workload's are (--precise-durations). */
    const struct sv_dag_et_opts copts = {.precise_durations = r->precise_durations};
    for (int rank = 0; rank < r->npus; rank++) {
        g_autofree char *path = g_strdup_printf("%s.%d.et", prefix, rank);
        if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
            g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_IO,
                        "custom %s implementation file does not exist: %s",
                        sv_sys_coll_type_name(type), path);
            goto fail;
        }
        g_autoptr(sv_dag) dag = sv_dag_load_et(path, &copts, error);
        if (dag == NULL)
            goto fail;
        for (size_t i = 0; i < sv_dag_node_count(dag); i++) {
            const sv_dag_node *node = sv_dag_node_at(dag, i);
            struct sv_sys_plan_op op = {.id = node->id};
            switch (node->kind) {
            case SV_DAG_KIND_COMM_SEND:
                op.kind = SV_SYS_OP_SEND;
                op.peer = node->p.comm_dst;
                break;
            case SV_DAG_KIND_COMM_RECV:
                op.kind = SV_SYS_OP_RECV;
                op.peer = node->p.comm_src;
                break;
            case SV_DAG_KIND_COMP:
                op.kind = SV_SYS_OP_COMP;
                op.duration_ns = node->duration_ns;
                break;
            default:
                g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                            "custom collective node type %s is not SEND, RECV or COMP: %s: node "
                            "%" G_GUINT64_FORMAT,
                            sv_dag_kind_name(node->kind), path, node->id);
                goto fail;
            }
            if (op.kind != SV_SYS_OP_COMP) {
                uint32_t want =
                    SV_DAG_HAS_COMM_SIZE |
                    (op.kind == SV_SYS_OP_SEND ? SV_DAG_HAS_COMM_DST : SV_DAG_HAS_COMM_SRC);
                if ((node->p.has & want) != want) {
                    g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                                "custom collective %s node lacks %s: %s: node %" G_GUINT64_FORMAT,
                                op.kind == SV_SYS_OP_SEND ? "send" : "recv",
                                !(node->p.has & SV_DAG_HAS_COMM_SIZE) ? "comm_size"
                                : op.kind == SV_SYS_OP_SEND           ? "comm_dst"
                                                                      : "comm_src",
                                path, node->id);
                    goto fail;
                }
                op.tag = (node->p.has & SV_DAG_HAS_COMM_TAG) ? node->p.comm_tag : 0;
                op.bytes = node->p.comm_size_bytes;
            }
            g_array_set_size(parents, 0);
            g_array_set_size(deps, 0);
            sv_dag_node_parents(dag, node, parents);
            for (guint k = 0; k < parents->len; k++)
                g_array_append_val(deps, g_array_index(parents, sv_dag_link, k).node->id);
            op.ndeps = (int)deps->len;
            op.deps = (const uint64_t *)(void *)deps->data;
            if (!sv_sys_plan_add_op(plan, rank, &op, error)) {
                g_prefix_error(error, "%s: node %" G_GUINT64_FORMAT ": ", path, node->id);
                goto fail;
            }
        }
    }
    return sv_sys_set_custom_plan(r->coll, type, plan, error);
fail:
    sv_sys_plan_free(plan);
    return FALSE;
}

/* ---- set-up and run ----------------------------------------------------------------------- */

static void replay_clear(struct replay *r)
{
    for (int i = 0; r->npu != NULL && i < r->npus; i++) {
        sv_dag_exec_free(r->npu[i].ex);
        sv_dag_free(r->npu[i].dag);
    }
    g_free(r->npu);
    sv_sys_free(r->coll);
    sv_memtier_remote_free(r->mem);
    sv_net_free(r->net);
    sv_engine_free(r->eng);
    sv_sys_cfg_clear(&r->sys_cfg);
    if (r->error != NULL)
        g_error_free(r->error);
}

static gboolean replay_setup(struct replay *r, const struct sv_replay_opts *o, GError **error)
{
    r->model = o->model;
    r->precise_durations = o->precise_durations;
    if (!sv_net_topo_load_yaml(o->network, &r->topo, error))
        return FALSE;
    r->npus = sv_net_topo_npus(&r->topo);
    sv_sys_cfg_init(&r->sys_cfg);
    if (!sv_sys_cfg_load_json(o->system, &r->sys_cfg, error))
        return FALSE;
    r->sys_cfg.fast_collectives = !o->collectives_with_messages;

    /* ASTRA-sim opens <prefix>.<id>.et for every NPU of the network before running. */
    r->npu = g_new0(struct replay_npu, r->npus);
    struct sv_dag_et_opts et_opts = {.ignore_dangling_ctrl = o->ignore_ctrl_deps,
                                     .precise_durations = o->precise_durations};
    for (int i = 0; i < r->npus; i++) {
        struct replay_npu *n = &r->npu[i];
        n->r = r;
        n->id = i;
        n->finish_ns = -1;
        g_autofree char *path = g_strdup_printf("%s.%d.et", o->workload, i);
        if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
            g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_IO,
                        "workload file does not exist: %s (the network has %d NPUs)", path,
                        r->npus);
            return FALSE;
        }
        et_opts.device = i;
        n->dag = sv_dag_load_et(path, &et_opts, error);
        if (n->dag == NULL)
            return FALSE;
    }

    struct sv_memtier_remote_cfg mem_cfg = {.type = SV_MEMTIER_REMOTE_NONE};
    if (o->memory != NULL && !sv_memtier_remote_cfg_load_json(o->memory, &mem_cfg, error))
        return FALSE;
    sv_sys_groups *groups = NULL;
    if (o->comm_groups != NULL && (groups = sv_sys_groups_load_json(o->comm_groups, error)) == NULL)
        return FALSE;

    r->eng = sv_engine_new(0);
    if ((r->net = sv_net_new(r->eng, &r->topo, r->model, error)) != NULL &&
        (r->mem = sv_memtier_remote_new(r->eng, &mem_cfg, r->npus, error)) != NULL)
        r->coll = sv_sys_new(r->net, &r->sys_cfg, groups, error); /* copies the groups */
    sv_sys_groups_free(groups);
    if (r->coll == NULL)
        return FALSE;
    for (int t = 0; t < SV_SYS_TYPE_COUNT; t++) {
        if (r->sys_cfg.custom_prefix[t] != NULL &&
            !load_custom_plan(r, (sv_sys_coll_type)t, r->sys_cfg.custom_prefix[t], error))
            return FALSE;
    }

    for (int i = 0; i < r->npus; i++) {
        struct replay_npu *n = &r->npu[i];
        struct sv_dag_exec_cfg cfg = {
            .policy = SV_DAG_POLICY_ASTRA,
            .ignore_ctrl_deps = o->ignore_ctrl_deps,
            .handler_ctx = n,
            .on_all_done = on_all_done,
            .describe_issued = sv_sys_exec_describe,
            .cb_ctx = n,
        };
        if (r->sys_cfg.replay_only) {
            /* Workload::issue with replay-only: every node type is replayed. */
            cfg.default_handler = handle_replay;
        } else {
            cfg.handlers[SV_DAG_KIND_COMP] = handle_comp;
            cfg.handlers[SV_DAG_KIND_PIM] = handle_comp;
            cfg.handlers[SV_DAG_KIND_COMM_COLL] = sv_sys_exec_coll;
            cfg.handlers[SV_DAG_KIND_COMM_SEND] = sv_sys_exec_send;
            cfg.handlers[SV_DAG_KIND_COMM_RECV] = sv_sys_exec_recv;
            cfg.handlers[SV_DAG_KIND_MEM_LOAD] = sv_sys_exec_mem;
            cfg.handlers[SV_DAG_KIND_MEM_STORE] = sv_sys_exec_mem;
            /* METADATA / INVALID: Workload::skip_invalid, finished at once. */
            cfg.handlers[SV_DAG_KIND_METADATA] = handle_skip;
            cfg.handlers[SV_DAG_KIND_INVALID] = handle_skip;
            cfg.handlers[SV_DAG_KIND_LOGICAL] = handle_skip;
        }
        if ((n->ex = sv_dag_exec_new(n->dag, r->eng, &cfg, error)) == NULL)
            return FALSE;
        n->sx = (struct sv_sys_exec){
            .sys = r->coll,
            .net = r->net,
            .mem = r->mem,
            .npu = i,
            .fail = fail_cb,
            .fail_ctx = n,
            .ex = n->ex,
        };
    }
    return TRUE;
}

static int cmp_finish(const void *a, const void *b)
{
    const struct replay_npu *x = *(const struct replay_npu *const *)a;
    const struct replay_npu *y = *(const struct replay_npu *const *)b;
    if (x->finish_ns != y->finish_ns)
        return x->finish_ns < y->finish_ns ? -1 : 1;
    return x->id - y->id;
}

/* What keeps unfinished NPUs from finishing: the executors' diagnoses and the system layer's
 * unmatched point-to-point operations. */
static char *diagnose(struct replay *r)
{
    GString *s = g_string_new(NULL);
    int stuck = 0;
    for (int i = 0; i < r->npus; i++) {
        struct replay_npu *n = &r->npu[i];
        if (n->finish_ns >= 0)
            continue;
        if (stuck++ >= 8) /* cap: a broken trace on 1024 NPUs must not print megabytes */
            continue;
        GString *d = g_string_new(NULL);
        size_t left = sv_dag_exec_diagnose(n->ex, d);
        g_string_append_printf(s, "\n  NPU %d: %zu of %zu nodes unfinished", i, left,
                               sv_dag_node_count(n->dag));
        g_auto(GStrv) lines = g_strsplit(d->str, "\n", -1);
        for (char **l = lines; *l != NULL; l++) {
            if (**l != '\0')
                g_string_append_printf(s, "\n    %s", *l);
        }
        g_string_free(d, TRUE);
    }
    if (stuck > 8)
        g_string_append_printf(s, "\n  ... and %d more NPUs", stuck - 8);
    g_autoptr(GArray) p2p = sv_sys_p2p_pending(r->coll);
    for (guint k = 0; p2p != NULL && k < p2p->len && k < 16; k++) {
        const struct sv_sys_p2p_pending *p = &g_array_index(p2p, struct sv_sys_p2p_pending, k);
        if (p->is_send)
            g_string_append_printf(s,
                                   "\n  unmatched send: NPU %d -> NPU %d tag %d, %" G_GUINT64_FORMAT
                                   " bytes, posted at %" G_GINT64_FORMAT " ns%s",
                                   p->src, p->dst, p->tag, p->bytes, p->posted_at,
                                   p->arrived ? " (arrived, no matching recv)" : "");
        else
            g_string_append_printf(s,
                                   "\n  unmatched recv: NPU %d <- NPU %d tag %d, %" G_GUINT64_FORMAT
                                   " bytes, posted at %" G_GINT64_FORMAT " ns (no matching send)",
                                   p->dst, p->src, p->tag, p->bytes, p->posted_at);
    }
    if (p2p != NULL && p2p->len > 16)
        g_string_append_printf(s, "\n  ... and %u more unmatched send/recv", p2p->len - 16);
    return g_string_free(s, FALSE);
}

static void fill_result(struct replay *r, struct sv_replay_result *out)
{
    /* An executor with no node finishes without a completion. */
    for (int i = 0; i < r->npus; i++) {
        struct replay_npu *n = &r->npu[i];
        if (n->finish_ns < 0 && sv_dag_exec_finished(n->ex))
            n->finish_ns = MAX(sv_dag_exec_finish_ns(n->ex), 0);
    }
    /* Each NPU reports when its workload ends (Workload::report), i.e. in finish-time order;
     * NPUs finishing at the same tick are listed by id. */
    g_autofree struct replay_npu **order = g_new(struct replay_npu *, r->npus);
    int finished = 0;
    for (int i = 0; i < r->npus; i++) {
        if (r->npu[i].finish_ns >= 0)
            order[finished++] = &r->npu[i];
    }
    qsort(order, (size_t)finished, sizeof(*order), cmp_finish);
    out->npus = r->npus;
    out->n_finished = finished;
    out->finished = g_new0(struct sv_replay_npu_result, finished > 0 ? finished : 1);
    for (int k = 0; k < finished; k++) {
        const struct replay_npu *n = order[k];
        out->finished[k].npu = n->id;
        out->finished[k].finish_ns = n->finish_ns;
        out->finished[k].exposed_comm_ns = n->finish_ns - n->gpu_ns;
        out->makespan_ns = MAX(out->makespan_ns, n->finish_ns);
    }
    out->model = r->model;
    out->events = sv_engine_events_run(r->eng);
    sv_net_get_stats(r->net, &out->net);
}

void sv_replay_result_clear(struct sv_replay_result *res)
{
    if (res == NULL)
        return;
    g_free(res->finished);
    memset(res, 0, sizeof *res);
}

gboolean sv_replay_run(const struct sv_replay_opts *o, struct sv_replay_result *out, GError **error)
{
    memset(out, 0, sizeof *out);
    struct replay r = {0};
    gboolean ok = FALSE;
    if (!replay_setup(&r, o, error))
        goto out;
    for (int i = 0; i < r.npus; i++)
        sv_dag_exec_start(r.npu[i].ex);
    sv_engine_run(r.eng, SV_TIME_MAX);
    if (r.error == NULL && sv_engine_error(r.eng) != NULL)
        r.error = g_error_copy(sv_engine_error(r.eng));
    if (r.error != NULL) {
        g_propagate_error(error, r.error);
        r.error = NULL;
        goto out;
    }
    fill_result(&r, out);
    if (out->n_finished < r.npus) {
        sv_sys_settle(r.coll); /* collective phases still waiting show what they posted */
        g_autofree char *why = diagnose(&r);
        g_set_error(error, SV_DAG_ERROR, SV_DAG_ERROR_STALL,
                    "simulation cannot finish: %d of %d NPUs have unfinished nodes and no event "
                    "is pending at %" G_GINT64_FORMAT " ns:%s",
                    r.npus - out->n_finished, r.npus, sv_engine_now(r.eng), why);
        goto out;
    }
    ok = TRUE;
out:
    replay_clear(&r);
    return ok;
}
