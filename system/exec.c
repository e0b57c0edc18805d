/* DAG executor handlers: what a comm or memory node of an operator DAG does on the system layer,
 * the network and the remote memory (ASTRA-sim's Workload::issue_comm / issue_send_comm /
 * issue_recv_comm / issue_remote_mem, astra-sim/workload/Workload.cc at HEAD 518bd51). Replay,
 * the serving MSGs and the PD hand-off all issue their nodes through these, so a node means the
 * same thing, with the same timing, wherever its DAG came from. */
#include "dag/dag.h"
#include "proto/proto.h"
#include "system/system_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>

/* Chakra's CollectiveCommType names (et_def.proto), numbered as sv_dag_coll_type: the words
 * ASTRA-sim's errors use. */
static const char *const comm_type_names[] = {
    "ALL_REDUCE", "REDUCE",         "ALL_GATHER",           "GATHER",  "SCATTER", "BROADCAST",
    "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "BARRIER",
};

static const char *comm_type_name(int type)
{
    if (type < 0 || type >= (int)G_N_ELEMENTS(comm_type_names))
        return NULL;
    return comm_type_names[type];
}

static int node_npu(const struct sv_sys_exec *x, const sv_dag_node *node)
{
    return x->npu >= 0 ? x->npu : node->device;
}

/* ---- errors ------------------------------------------------------------------------------- */

static void fail(struct sv_sys_exec *x, GError *error)
{
    if (x->fail != NULL) {
        x->fail(x->fail_ctx, error);
        return;
    }
    g_critical("%s", error->message);
    g_error_free(error);
}

/* An error from a lower layer, with the NPU and node appended (what first, then where). */
static void fail_at(struct sv_sys_exec *x, const sv_dag_node *node, GError *error)
{
    fail(x, g_error_new(error->domain, error->code, "%s: NPU %d: node %" G_GUINT64_FORMAT " (%s)",
                        error->message, node_npu(x, node), node->id, node->name));
    g_error_free(error);
}

G_GNUC_PRINTF(3, 4)
static void failf(struct sv_sys_exec *x, const sv_dag_node *node, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *what = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    fail(x, g_error_new(SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                        "%s: NPU %d: node %" G_GUINT64_FORMAT " (%s)", what, node_npu(x, node),
                        node->id, node->name));
}

/* ASTRA-sim's ETFeederNode getters throw "Attribute <name> not found in node <id>" for an absent
 * required attribute; we report the same words (lowercase, as our errors are). */
static gboolean need(struct sv_sys_exec *x, const sv_dag_node *node, uint32_t bit, const char *attr)
{
    if (node->p.has & bit)
        return TRUE;
    /* Present in the node's ET attributes with a value the DAG could not take: say which. */
    g_autofree char *why = NULL;
    ChakraProtoMsg__Node *et = x->ex ? sv_dag_node_to_et(sv_dag_exec_dag(x->ex), node) : NULL;
    const ChakraProtoMsg__AttributeProto *a = et ? sv_proto_attr_find(et, attr) : NULL;
    int64_t v;
    uint64_t u;
    if (a && sv_proto_attr_int(a, &v) && v < 0)
        why = g_strdup_printf("is negative (%" G_GINT64_FORMAT ")", v);
    else if (a && sv_proto_attr_int(a, &v))
        why = g_strdup_printf("is out of range (%" G_GINT64_FORMAT ")", v);
    else if (a && sv_proto_attr_uint(a, &u))
        why = g_strdup_printf("is out of range (%" G_GUINT64_FORMAT ")", u);
    else if (a)
        why = g_strdup("is not an integer of a usable kind");
    sv_proto_node_free(et);
    if (why)
        fail(x, g_error_new(SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                            "attribute %s %s in node %" G_GUINT64_FORMAT ": NPU %d (%s)", attr, why,
                            node->id, node_npu(x, node), node->name));
    else
        fail(x, g_error_new(SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                            "attribute %s not found in node %" G_GUINT64_FORMAT ": NPU %d (%s)",
                            attr, node->id, node_npu(x, node), node->name));
    return FALSE;
}

static gboolean comm_not_on_cpu(struct sv_sys_exec *x, const sv_dag_node *node)
{
    if ((node->p.has & SV_DAG_HAS_IS_CPU_OP) && node->p.is_cpu_op) {
        failf(x, node, "comm node should not be on cpu (is_cpu_op is true)");
        return FALSE;
    }
    return TRUE;
}

static gboolean check_peer(struct sv_sys_exec *x, const sv_dag_node *node, const char *attr,
                           int peer)
{
    int npus = x->sys->npus;
    if (peer < 0 || peer >= npus) {
        failf(x, node, "%s %d is not an NPU of the network (0..%d)", attr, peer, npus - 1);
        return FALSE;
    }
    if (peer == node_npu(x, node)) {
        failf(x, node, "%s %d is the node's own NPU", attr, peer);
        return FALSE;
    }
    return TRUE;
}

/* ---- completion --------------------------------------------------------------------------- */

/* Every operation completes its node through here: the node rides in `arg`, so an operation in
 * flight allocates nothing. */
static void node_done(sv_engine *eng, void *ctx, uint64_t arg)
{
    struct sv_sys_exec *x = ctx;
    sv_dag_exec_node_done(x->ex, (sv_dag_node *)(uintptr_t)arg);
}

/* ---- handlers ----------------------------------------------------------------------------- */

/* pg_name "" or "0" is the default group (all NPUs), else a decimal id (Workload::
 * extract_comm_group). */
static gboolean parse_group(struct sv_sys_exec *x, const sv_dag_node *node, int *group)
{
    *group = 0;
    if (x->group_in_comm_tag) {
        *group = node->p.comm_tag;
        return TRUE;
    }
    if (!(node->p.has & SV_DAG_HAS_PG_NAME) || node->p.pg_name == NULL ||
        node->p.pg_name[0] == '\0')
        return TRUE;
    char *end = NULL;
    errno = 0;
    long v = strtol(node->p.pg_name, &end, 10);
    if (errno != 0 || end == node->p.pg_name || *end != '\0' || v < 0 || v > G_MAXINT) {
        failf(x, node, "pg_name '%s' is not a communicator group id", node->p.pg_name);
        return FALSE;
    }
    *group = (int)v;
    return TRUE;
}

void sv_sys_exec_coll(sv_dag_exec *ex, sv_dag_node *node, void *ctx)
{
    struct sv_sys_exec *x = ctx;
    x->ex = ex;
    if (!comm_not_on_cpu(x, node) || !need(x, node, SV_DAG_HAS_COMM_TYPE, "comm_type"))
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
        sv_engine_schedule_in(sv_dag_exec_engine(ex),
                              node->duration_ns != 0 ? node->duration_ns : 1, SV_PRIO_DEFAULT,
                              node_done, x, (uint64_t)(uintptr_t)node);
        return;
    default: {
        const char *name = comm_type_name(type);
        failf(x, node, "unsupported collective comm type %s (%d)", name ? name : "unknown", type);
        return;
    }
    }
    if (!need(x, node, SV_DAG_HAS_COMM_SIZE, "comm_size"))
        return;
    int group = 0;
    if (!parse_group(x, node, &group))
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
    if (!sv_sys_coll_start(x->sys, node_npu(x, node), (sv_sys_coll_type)type,
                           node->p.comm_size_bytes, involved, ndims, group, priority, node_done, x,
                           (uint64_t)(uintptr_t)node, &error)) {
        fail_at(x, node, error);
    }
}

/* Workload::issue_send_comm: comm_src defaults to (and must be) the own rank; comm_dst,
 * comm_size and comm_tag are required, checked in that order. */
void sv_sys_exec_send(sv_dag_exec *ex, sv_dag_node *node, void *ctx)
{
    struct sv_sys_exec *x = ctx;
    x->ex = ex;
    int self = node_npu(x, node);
    if (!comm_not_on_cpu(x, node))
        return;
    if ((node->p.has & SV_DAG_HAS_COMM_SRC) && node->p.comm_src != self) {
        failf(x, node, "send node should be issued by the sender (comm_src %d)", node->p.comm_src);
        return;
    }
    if (!need(x, node, SV_DAG_HAS_COMM_DST, "comm_dst") ||
        !need(x, node, SV_DAG_HAS_COMM_SIZE, "comm_size") ||
        !need(x, node, SV_DAG_HAS_COMM_TAG, "comm_tag") ||
        !check_peer(x, node, "comm_dst", node->p.comm_dst))
        return;
    GError *error = NULL;
    if (!sv_sys_send(x->sys, self, node->p.comm_dst, node->p.comm_tag, node->p.comm_size_bytes,
                     node_done, x, (uint64_t)(uintptr_t)node, &error)) {
        fail_at(x, node, error);
    }
}

/* Workload::issue_recv_comm: comm_src, comm_size, comm_tag required; comm_dst defaults to (and
 * must be) the own rank. */
void sv_sys_exec_recv(sv_dag_exec *ex, sv_dag_node *node, void *ctx)
{
    struct sv_sys_exec *x = ctx;
    x->ex = ex;
    int self = node_npu(x, node);
    if (!comm_not_on_cpu(x, node) || !need(x, node, SV_DAG_HAS_COMM_SRC, "comm_src"))
        return;
    if ((node->p.has & SV_DAG_HAS_COMM_DST) && node->p.comm_dst != self) {
        failf(x, node, "recv node should be issued by the receiver (comm_dst %d)",
              node->p.comm_dst);
        return;
    }
    if (!need(x, node, SV_DAG_HAS_COMM_SIZE, "comm_size") ||
        !need(x, node, SV_DAG_HAS_COMM_TAG, "comm_tag") ||
        !check_peer(x, node, "comm_src", node->p.comm_src))
        return;
    GError *error = NULL;
    if (!sv_sys_recv(x->sys, self, node->p.comm_src, node->p.comm_tag, node->p.comm_size_bytes,
                     node_done, x, (uint64_t)(uintptr_t)node, &error)) {
        fail_at(x, node, error);
    }
}

void sv_sys_exec_transfer(sv_dag_exec *ex, sv_dag_node *node, void *ctx)
{
    struct sv_sys_exec *x = ctx;
    x->ex = ex;
    static const struct sv_net_msg_label transfer = {SV_NET_MSG_TRANSFER, "transfer"};
    sv_net_send_labeled(x->net, node->p.comm_src, node->p.comm_dst, node->p.comm_size_bytes,
                        &transfer, node_done, x, (uint64_t)(uintptr_t)node);
}

/* Workload::issue_remote_mem: the remote memory model serves tensor_size bytes. */
void sv_sys_exec_mem(sv_dag_exec *ex, sv_dag_node *node, void *ctx)
{
    struct sv_sys_exec *x = ctx;
    x->ex = ex;
    if (!need(x, node, SV_DAG_HAS_TENSOR_SIZE, "tensor_size"))
        return;
    GError *error = NULL;
    if (!sv_memtier_remote_access(x->mem, node_npu(x, node), node->p.tensor_size_bytes,
                                  node->kind == SV_DAG_KIND_MEM_STORE, node_done, x,
                                  (uint64_t)(uintptr_t)node, &error)) {
        fail_at(x, node, error);
    }
}

void sv_sys_exec_describe(sv_dag_exec *ex, const sv_dag_node *node, GString *out, void *ctx)
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
            comm_type_name(p->comm_type) ? comm_type_name(p->comm_type) : "?", p->comm_size_bytes);
        break;
    default:
        break;
    }
}
