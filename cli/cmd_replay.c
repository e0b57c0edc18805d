/* servesim replay: run Chakra ET files (one per NPU) on servesim's system layer with ASTRA-sim's
 * workload semantics (astra-sim/workload/Workload.cc at HEAD 518bd51, CHAKRA_ET.md 1.5).
 *
 * One DAG and one executor per NPU, all on one engine, sharing one network (sv_net), one system
 * layer (sv_coll_sys: collectives and send/recv matching) and one remote memory
 * (sv_memtier_remote). The executor applies ASTRA-sim's HardwareResource rule and issues ready
 * nodes in ascending id; the handlers below are Workload::issue_* for each node type.
 *
 * Output: per NPU, `sys[<i>] finished, <T> cycles, exposed communication <E> cycles.` with
 * E = T - (sum of replayed/roofline GPU compute time), as Workload::report prints it; then a
 * short summary. docs/replay.md describes usage, semantics and errors. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <glib.h>

#include "cli/cli.h"
#include "core/core.h"
#include "dag/dag.h"
#include "memory-tier/memtier.h"
#include "network/network.h"
#include "proto/proto.h"

struct replay;

/* One simulated NPU: ASTRA-sim's Sys + Workload. */
struct replay_npu {
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
    sv_coll_sys *coll;
    sv_memtier_remote *mem;
    struct sv_coll_sys_cfg sys_cfg;
    struct sv_net_topo_cfg topo;
    sv_net_model model;
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

/* An error from a lower layer, with the NPU and node appended (what first, then where). */
static void fail_at(struct replay_npu *n, const sv_dag_node *node, GError *error)
{
    fail(n, g_error_new(error->domain, error->code, "%s: NPU %d: node %" G_GUINT64_FORMAT " (%s)",
                        error->message, n->id, node->id, node->name));
    g_error_free(error);
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
    const struct sv_coll_sys_cfg *sc = &n->r->sys_cfg;
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

static gboolean comm_not_on_cpu(struct replay_npu *n, const sv_dag_node *node)
{
    if ((node->p.has & SV_DAG_HAS_IS_CPU_OP) && node->p.is_cpu_op) {
        failf(n, node, "comm node should not be on cpu (is_cpu_op is true)");
        return FALSE;
    }
    return TRUE;
}

/* pg_name "" or "0" is the default group (all NPUs), else a decimal id (Workload::
 * extract_comm_group). */
static gboolean parse_group(struct replay_npu *n, const sv_dag_node *node, int *group)
{
    *group = 0;
    if (!(node->p.has & SV_DAG_HAS_PG_NAME) || node->p.pg_name == NULL ||
        node->p.pg_name[0] == '\0')
        return TRUE;
    char *end = NULL;
    errno = 0;
    long v = strtol(node->p.pg_name, &end, 10);
    if (errno != 0 || end == node->p.pg_name || *end != '\0' || v < 0 || v > G_MAXINT) {
        failf(n, node, "pg_name '%s' is not a communicator group id", node->p.pg_name);
        return FALSE;
    }
    *group = (int)v;
    return TRUE;
}

static void handle_coll(sv_dag_exec *ex, sv_dag_node *node, void *ctx)
{
    struct replay_npu *n = ctx;
    if (!comm_not_on_cpu(n, node) || !need(n, node, SV_DAG_HAS_COMM_TYPE, "comm_type"))
        return;
    int type = node->p.comm_type;
    switch (type) {
    case SV_DAG_COLL_ALL_REDUCE:
    case SV_DAG_COLL_ALL_GATHER:
    case SV_DAG_COLL_REDUCE_SCATTER:
    case SV_DAG_COLL_ALL_TO_ALL:
        break;
    case SV_DAG_COLL_BROADCAST:
        /* Not simulated upstream: replayed with its duration and, unlike a compute node, not
         * counted as GPU time ("BROADCAST 1/1", shared/interop/astra-sim/README.md). */
        finish_in(n, node, node->duration_ns != 0 ? node->duration_ns : 1);
        return;
    default: {
        const char *name = sv_et_comm_type_name(type);
        failf(n, node, "unsupported collective comm type %s (%d)", name ? name : "unknown", type);
        return;
    }
    }
    if (!need(n, node, SV_DAG_HAS_COMM_SIZE, "comm_size"))
        return;
    int group = 0;
    if (!parse_group(n, node, &group))
        return;
    gboolean dims[SV_DAG_MAX_DIMS];
    const gboolean *involved = NULL;
    int ndims = 0;
    if (node->p.has & SV_DAG_HAS_INVOLVED_DIMS) {
        ndims = (int)node->p.n_involved_dims;
        for (int d = 0; d < ndims; d++)
            dims[d] = (node->p.involved_dims >> d) & 1u;
        involved = dims;
    }
    int priority = (node->p.has & SV_DAG_HAS_COMM_PRIORITY) ? node->p.comm_priority : 0;
    GError *error = NULL;
    if (!sv_coll_start(n->r->coll, n->id, (sv_coll_type)type, node->p.comm_size_bytes, involved,
                       ndims, group, priority, node_finished, n, (uint64_t)(uintptr_t)node,
                       &error)) {
        fail_at(n, node, error);
    }
}

static gboolean check_peer(struct replay_npu *n, const sv_dag_node *node, const char *attr,
                           int peer)
{
    if (peer < 0 || peer >= n->r->npus) {
        failf(n, node, "%s %d is not an NPU of the network (0..%d)", attr, peer, n->r->npus - 1);
        return FALSE;
    }
    if (peer == n->id) {
        failf(n, node, "%s %d is the node's own NPU", attr, peer);
        return FALSE;
    }
    return TRUE;
}

/* Workload::issue_send_comm: comm_src defaults to (and must be) the own rank; comm_dst,
 * comm_size and comm_tag are required, checked in that order. */
static void handle_send(sv_dag_exec *ex, sv_dag_node *node, void *ctx)
{
    struct replay_npu *n = ctx;
    if (!comm_not_on_cpu(n, node))
        return;
    if ((node->p.has & SV_DAG_HAS_COMM_SRC) && node->p.comm_src != n->id) {
        failf(n, node, "send node should be issued by the sender (comm_src %d)", node->p.comm_src);
        return;
    }
    if (!need(n, node, SV_DAG_HAS_COMM_DST, "comm_dst") ||
        !need(n, node, SV_DAG_HAS_COMM_SIZE, "comm_size") ||
        !need(n, node, SV_DAG_HAS_COMM_TAG, "comm_tag") ||
        !check_peer(n, node, "comm_dst", node->p.comm_dst))
        return;
    GError *error = NULL;
    if (!sv_coll_send(n->r->coll, n->id, node->p.comm_dst, node->p.comm_tag,
                      node->p.comm_size_bytes, node_finished, n, (uint64_t)(uintptr_t)node,
                      &error)) {
        fail_at(n, node, error);
    }
}

/* Workload::issue_recv_comm: comm_src, comm_size, comm_tag required; comm_dst defaults to (and
 * must be) the own rank. */
static void handle_recv(sv_dag_exec *ex, sv_dag_node *node, void *ctx)
{
    struct replay_npu *n = ctx;
    if (!comm_not_on_cpu(n, node) || !need(n, node, SV_DAG_HAS_COMM_SRC, "comm_src"))
        return;
    if ((node->p.has & SV_DAG_HAS_COMM_DST) && node->p.comm_dst != n->id) {
        failf(n, node, "recv node should be issued by the receiver (comm_dst %d)",
              node->p.comm_dst);
        return;
    }
    if (!need(n, node, SV_DAG_HAS_COMM_SIZE, "comm_size") ||
        !need(n, node, SV_DAG_HAS_COMM_TAG, "comm_tag") ||
        !check_peer(n, node, "comm_src", node->p.comm_src))
        return;
    GError *error = NULL;
    if (!sv_coll_recv(n->r->coll, n->id, node->p.comm_src, node->p.comm_tag,
                      node->p.comm_size_bytes, node_finished, n, (uint64_t)(uintptr_t)node,
                      &error)) {
        fail_at(n, node, error);
    }
}

/* Workload::issue_remote_mem: the remote memory model serves tensor_size bytes. */
static void handle_mem(sv_dag_exec *ex, sv_dag_node *node, void *ctx)
{
    struct replay_npu *n = ctx;
    if (!need(n, node, SV_DAG_HAS_TENSOR_SIZE, "tensor_size"))
        return;
    GError *error = NULL;
    if (!sv_memtier_remote_access(n->r->mem, n->id, node->p.tensor_size_bytes,
                                  node->kind == SV_DAG_KIND_MEM_STORE, node_finished, n,
                                  (uint64_t)(uintptr_t)node, &error)) {
        fail_at(n, node, error);
    }
}

/* For the stall diagnosis: what an issued node is waiting for. */
static void describe_issued(sv_dag_exec *ex, const sv_dag_node *node, GString *out, void *ctx)
{
    const struct sv_dag_params *p = &node->p;
    switch (node->kind) {
    case SV_DAG_KIND_COMM_RECV:
        g_string_append_printf(
            out, "recv from NPU %d tag %d (%" G_GUINT64_FORMAT " bytes) waits for a matching send",
            p->comm_src, p->comm_tag, p->comm_size_bytes);
        break;
    case SV_DAG_KIND_COMM_SEND:
        g_string_append_printf(
            out, "send to NPU %d tag %d (%" G_GUINT64_FORMAT " bytes) waits for delivery",
            p->comm_dst, p->comm_tag, p->comm_size_bytes);
        break;
    case SV_DAG_KIND_COMM_COLL:
        g_string_append_printf(
            out,
            "collective %s (%" G_GUINT64_FORMAT " bytes) waits for the other members of its group",
            sv_et_comm_type_name(p->comm_type) ? sv_et_comm_type_name(p->comm_type) : "?",
            p->comm_size_bytes);
        break;
    default:
        break;
    }
}

/* ---- custom collectives ------------------------------------------------------------------- */

/* "<coll>-implementation-custom": one ET per rank, <prefix>.<rank>.et, whose SEND / RECV / COMP
 * nodes become the rank's plan (ASTRA-sim CustomAlgorithm). */
static gboolean load_custom_plan(struct replay *r, sv_coll_type type, const char *prefix,
                                 GError **error)
{
    sv_coll_plan *plan = sv_coll_plan_new(r->npus);
    g_autoptr(GArray) parents = g_array_new(FALSE, FALSE, sizeof(sv_dag_link));
    g_autoptr(GArray) deps = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    for (int rank = 0; rank < r->npus; rank++) {
        g_autofree char *path = g_strdup_printf("%s.%d.et", prefix, rank);
        if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
            g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_IO,
                        "custom %s implementation file does not exist: %s", sv_coll_type_name(type),
                        path);
            goto fail;
        }
        g_autoptr(sv_dag) dag = sv_dag_load_et(path, NULL, error);
        if (dag == NULL)
            goto fail;
        for (size_t i = 0; i < sv_dag_node_count(dag); i++) {
            const sv_dag_node *node = sv_dag_node_at(dag, i);
            struct sv_coll_plan_op op = {.id = node->id};
            switch (node->kind) {
            case SV_DAG_KIND_COMM_SEND:
                op.kind = SV_COLL_OP_SEND;
                op.peer = node->p.comm_dst;
                break;
            case SV_DAG_KIND_COMM_RECV:
                op.kind = SV_COLL_OP_RECV;
                op.peer = node->p.comm_src;
                break;
            case SV_DAG_KIND_COMP:
                op.kind = SV_COLL_OP_COMP;
                op.duration_ns = node->duration_ns;
                break;
            default:
                g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                            "custom collective node type %s is not SEND, RECV or COMP: %s: node "
                            "%" G_GUINT64_FORMAT,
                            sv_dag_kind_name(node->kind), path, node->id);
                goto fail;
            }
            if (op.kind != SV_COLL_OP_COMP) {
                uint32_t want =
                    SV_DAG_HAS_COMM_SIZE |
                    (op.kind == SV_COLL_OP_SEND ? SV_DAG_HAS_COMM_DST : SV_DAG_HAS_COMM_SRC);
                if ((node->p.has & want) != want) {
                    g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                                "custom collective %s node lacks %s: %s: node %" G_GUINT64_FORMAT,
                                op.kind == SV_COLL_OP_SEND ? "send" : "recv",
                                !(node->p.has & SV_DAG_HAS_COMM_SIZE) ? "comm_size"
                                : op.kind == SV_COLL_OP_SEND          ? "comm_dst"
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
            if (!sv_coll_plan_add_op(plan, rank, &op, error)) {
                g_prefix_error(error, "%s: node %" G_GUINT64_FORMAT ": ", path, node->id);
                goto fail;
            }
        }
    }
    return sv_coll_sys_set_custom_plan(r->coll, type, plan, error);
fail:
    sv_coll_plan_free(plan);
    return FALSE;
}

/* ---- set-up and run ----------------------------------------------------------------------- */

struct replay_opts {
    char *workload;
    char *system;
    char *network;
    char *memory;
    char *groups;
    char *model;
    gboolean ignore_ctrl_deps;
};

static void replay_clear(struct replay *r)
{
    for (int i = 0; r->npu != NULL && i < r->npus; i++) {
        sv_dag_exec_free(r->npu[i].ex);
        sv_dag_free(r->npu[i].dag);
    }
    g_free(r->npu);
    sv_coll_sys_free(r->coll);
    sv_memtier_remote_free(r->mem);
    sv_net_free(r->net);
    sv_engine_free(r->eng);
    sv_coll_sys_cfg_clear(&r->sys_cfg);
    if (r->error != NULL)
        g_error_free(r->error);
}

static gboolean replay_setup(struct replay *r, const struct replay_opts *o, GError **error)
{
    if (!sv_net_model_parse(o->model, &r->model, error) ||
        !sv_net_topo_load_yaml(o->network, &r->topo, error))
        return FALSE;
    r->npus = sv_net_topo_npus(&r->topo);
    sv_coll_sys_cfg_init(&r->sys_cfg);
    if (!sv_coll_sys_cfg_load_json(o->system, &r->sys_cfg, error))
        return FALSE;

    /* ASTRA-sim opens <prefix>.<id>.et for every NPU of the network before running. */
    r->npu = g_new0(struct replay_npu, r->npus);
    struct sv_dag_et_opts et_opts = {.ignore_dangling_ctrl = o->ignore_ctrl_deps};
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
    sv_coll_groups *groups = NULL;
    if (o->groups != NULL && (groups = sv_coll_groups_load_json(o->groups, error)) == NULL)
        return FALSE;

    r->eng = sv_engine_new(0);
    if ((r->net = sv_net_new(r->eng, &r->topo, r->model, error)) != NULL &&
        (r->mem = sv_memtier_remote_new(r->eng, &mem_cfg, r->npus, error)) != NULL)
        r->coll = sv_coll_sys_new(r->net, &r->sys_cfg, groups, error); /* copies the groups */
    sv_coll_groups_free(groups);
    if (r->coll == NULL)
        return FALSE;
    for (int t = 0; t < SV_COLL_TYPE_COUNT; t++) {
        if (r->sys_cfg.custom_prefix[t] != NULL &&
            !load_custom_plan(r, (sv_coll_type)t, r->sys_cfg.custom_prefix[t], error))
            return FALSE;
    }

    for (int i = 0; i < r->npus; i++) {
        struct replay_npu *n = &r->npu[i];
        struct sv_dag_exec_cfg cfg = {
            .policy = SV_DAG_POLICY_ASTRA,
            .ignore_ctrl_deps = o->ignore_ctrl_deps,
            .handler_ctx = n,
            .on_all_done = on_all_done,
            .describe_issued = describe_issued,
            .cb_ctx = n,
        };
        if (r->sys_cfg.replay_only) {
            /* Workload::issue with replay-only: every node type is replayed. */
            cfg.default_handler = handle_replay;
        } else {
            cfg.handlers[SV_DAG_KIND_COMP] = handle_comp;
            cfg.handlers[SV_DAG_KIND_PIM] = handle_comp;
            cfg.handlers[SV_DAG_KIND_COMM_COLL] = handle_coll;
            cfg.handlers[SV_DAG_KIND_COMM_SEND] = handle_send;
            cfg.handlers[SV_DAG_KIND_COMM_RECV] = handle_recv;
            cfg.handlers[SV_DAG_KIND_MEM_LOAD] = handle_mem;
            cfg.handlers[SV_DAG_KIND_MEM_STORE] = handle_mem;
            /* METADATA / INVALID: Workload::skip_invalid, finished at once. */
            cfg.handlers[SV_DAG_KIND_METADATA] = handle_skip;
            cfg.handlers[SV_DAG_KIND_INVALID] = handle_skip;
            cfg.handlers[SV_DAG_KIND_LOGICAL] = handle_skip;
        }
        if ((n->ex = sv_dag_exec_new(n->dag, r->eng, &cfg, error)) == NULL)
            return FALSE;
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
    g_autoptr(GArray) p2p = sv_coll_p2p_pending(r->coll);
    for (guint k = 0; p2p != NULL && k < p2p->len && k < 16; k++) {
        const struct sv_coll_p2p_pending *p = &g_array_index(p2p, struct sv_coll_p2p_pending, k);
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

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int replay_run(struct replay *r, const struct replay_opts *o, double t0)
{
    for (int i = 0; i < r->npus; i++)
        sv_dag_exec_start(r->npu[i].ex);
    sv_engine_run(r->eng, SV_TIME_MAX);
    if (r->error == NULL && sv_engine_error(r->eng) != NULL)
        r->error = g_error_copy(sv_engine_error(r->eng));
    if (r->error != NULL) {
        fprintf(stderr, "servesim replay: %s\n", r->error->message);
        return 1;
    }
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
    sv_time makespan = 0;
    for (int k = 0; k < finished; k++) {
        const struct replay_npu *n = order[k];
        printf("sys[%d] finished, %" G_GINT64_FORMAT
               " cycles, exposed communication %" G_GINT64_FORMAT " cycles.\n",
               n->id, n->finish_ns, n->finish_ns - n->gpu_ns);
        makespan = MAX(makespan, n->finish_ns);
    }
    if (finished < r->npus) {
        fflush(stdout);
        g_autofree char *why = diagnose(r);
        fprintf(stderr,
                "servesim replay: simulation cannot finish: %d of %d NPUs have unfinished nodes "
                "and no event is pending at %" G_GINT64_FORMAT " ns:%s\n",
                r->npus - finished, r->npus, sv_engine_now(r->eng), why);
        return 1;
    }
    struct sv_net_stats ns;
    sv_net_get_stats(r->net, &ns);
    printf("replay summary: %d NPUs, network model %s, makespan %" G_GINT64_FORMAT
           " ns, %" G_GUINT64_FORMAT " events, %" G_GUINT64_FORMAT " messages (%" G_GUINT64_FORMAT
           " bytes), wall time %.3f s\n",
           r->npus, sv_net_model_name(r->model), makespan, sv_engine_events_run(r->eng),
           ns.messages, ns.bytes_sent, wall_now() - t0);
    return 0;
}

int sv_cli_replay(int argc, char **argv)
{
    double t0 = wall_now();
    struct replay_opts o = {0};
    GOptionEntry entries[] = {
        {"workload", 'w', 0, G_OPTION_ARG_FILENAME, &o.workload,
         "ET prefix: reads PREFIX.<npu>.et for every NPU", "PREFIX"},
        {"system", 's', 0, G_OPTION_ARG_FILENAME, &o.system, "ASTRA-sim system JSON", "SYS.json"},
        {"network", 'n', 0, G_OPTION_ARG_FILENAME, &o.network,
         "ASTRA-sim analytical network YAML (gives the number of NPUs)", "NET.yml"},
        {"memory", 'm', 0, G_OPTION_ARG_FILENAME, &o.memory,
         "ASTRA-sim remote memory JSON (default: NO_MEMORY_EXPANSION)", "MEM.json"},
        {"comm-groups", 'g', 0, G_OPTION_ARG_FILENAME, &o.groups,
         "communicator groups JSON {\"<id>\": [npu, ...]}", "G.json"},
        {"network-model", 0, 0, G_OPTION_ARG_STRING, &o.model,
         "analytical (ASTRA-sim congestion-unaware, default) | fifo (congestion-aware) | flow "
         "(max-min fair) | ideal",
         "MODEL"},
        {"ignore-ctrl-deps", 0, 0, G_OPTION_ARG_NONE, &o.ignore_ctrl_deps,
         "only data_deps gate a node (Chakra feeder v1); dangling ctrl_deps are dropped", NULL},
        /* ASTRA-sim's own option names, so its command lines work unchanged. */
        {"workload-configuration", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &o.workload,
         NULL, NULL},
        {"system-configuration", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &o.system, NULL,
         NULL},
        {"network-configuration", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &o.network, NULL,
         NULL},
        {"remote-memory-configuration", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &o.memory,
         NULL, NULL},
        {"comm-group-configuration", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &o.groups,
         NULL, NULL},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GOptionContext) octx = g_option_context_new("- run Chakra ET files (one per NPU) "
                                                          "with ASTRA-sim's workload semantics");
    g_option_context_add_main_entries(octx, entries, NULL);
    g_option_context_set_summary(
        octx, "Prints, per NPU, ASTRA-sim's line 'sys[<i>] finished, <T> cycles, exposed "
              "communication <E> cycles.' (1 cycle = 1 ns), then a summary.");
    GError *error = NULL;
    int status = 2;
    struct replay r = {0};
    if (!g_option_context_parse(octx, &argc, &argv, &error))
        goto out;
    if (argc > 1) {
        error =
            g_error_new(SV_CORE_ERROR, SV_CORE_ERROR_INVALID, "unexpected argument '%s'", argv[1]);
        goto out;
    }
    const char *missing = o.workload == NULL  ? "--workload"
                          : o.system == NULL  ? "--system"
                          : o.network == NULL ? "--network"
                                              : NULL;
    if (missing != NULL) {
        error = g_error_new(SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                            "missing option %s (see servesim replay --help)", missing);
        goto out;
    }
    if (o.model == NULL)
        o.model = g_strdup("analytical");
    status = 1;
    if (!replay_setup(&r, &o, &error))
        goto out;
    status = replay_run(&r, &o, t0);
out:
    if (error != NULL) {
        fprintf(stderr, "servesim replay: %s\n", error->message);
        g_error_free(error);
    }
    replay_clear(&r);
    g_free(o.workload);
    g_free(o.system);
    g_free(o.network);
    g_free(o.memory);
    g_free(o.groups);
    g_free(o.model);
    return status;
}
