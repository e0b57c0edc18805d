/* Operation mapper and operation scheduler: the iteration in flight becomes a DAG of operators on
 * the instance's devices, with durations from compute/, executed by the dag executor.
 *
 * The batch is one shape for the whole iteration (LLMServingSim trace_generator: dense layers
 * keyed by the batch's tokens, lm_head and sampler by its sequences, attention one 4-D lookup
 * with summed prefill chunks and histories and the floor of the mean decode KV; VALIDATION_NOTES
 * items 1-3). Every layer of a dense model has the same shape, so by default one node stands for
 * the decoder stack on each device (prologue -> layers -> head); with --emit-et, or on several
 * devices (TP all-reduce between operators), the DAG is built per layer and operator, the form
 * LLMServingSim hands to ASTRA-sim. Both run through the executor; their times agree to the
 * nanosecond on one device (sum of the same integer operator times). */
#include "msg/msg_internal.h"

#include <math.h>

/* Nodes after which a kept iteration DAG is replaced (bounds memory; see sv_msg__launch). */
#define MSG_DAG_RECYCLE_NODES 3000

static sv_dag_node *add_node(sv_msg *m, const char *name, sv_dag_kind kind, int32_t dev,
                             sv_time dur, sv_dag_node *parent)
{
    struct sv_dag_node_cfg nc = {
        .id = sv_dag_next_id(m->dag),
        .name = name,
        .kind = kind,
        .device = dev,
        .duration_ns = dur,
    };
    sv_dag_node *n = sv_dag_node_add(m->dag, &nc, NULL);
    SV_ASSERT(n != NULL);
    if (parent)
        SV_ASSERT(sv_dag_edge_add(m->dag, parent, n, SV_DAG_EDGE_DATA, NULL));
    return n;
}

/* Ring all-reduce of `bytes` over `n` ranks: 2(n-1) steps of bytes/n each, per-step link
 * latency (ASTRA-sim's analytical ring; VALIDATION_NOTES item 6 for the unit convention). */
static sv_time ring_allreduce_ns(const struct sv_msg_cfg *c, uint64_t bytes)
{
    int n = c->num_devices;
    if (n <= 1 || bytes == 0)
        return 0;
    double bpns = sv_bw_gbps_to_bytes_per_ns(c->link_bw_gbps > 0 ? c->link_bw_gbps : 1.0);
    double steps = 2.0 * (n - 1);
    return sv_time_from_ns(steps * ((double)bytes / n / bpns + c->link_latency_ns));
}

static sv_dag_node *add_ops(sv_msg *m, const struct sv_iter_op *ops, int n_ops, int32_t dev,
                            int layer, sv_dag_node *prev)
{
    char name[64];
    for (int i = 0; i < n_ops; i++) {
        if (layer >= 0)
            g_snprintf(name, sizeof name, "L%d.%s", layer, sv_compute_op_name(ops[i].op));
        else
            g_snprintf(name, sizeof name, "%s", sv_compute_op_name(ops[i].op));
        prev = add_node(m, name, SV_DAG_KIND_COMP, dev, ops[i].ns, prev);
        if (ops[i].allreduce_bytes > 0 && m->cfg.num_devices > 1) {
            g_strlcat(name, ".allreduce", sizeof name);
            sv_dag_node *ar = add_node(m, name, SV_DAG_KIND_COMM_COLL, dev,
                                       ring_allreduce_ns(&m->cfg, ops[i].allreduce_bytes), prev);
            ar->p.has |= SV_DAG_HAS_COMM_TYPE | SV_DAG_HAS_COMM_SIZE;
            ar->p.comm_type = SV_DAG_COLL_ALL_REDUCE;
            ar->p.comm_size_bytes = ops[i].allreduce_bytes;
            prev = ar;
        }
    }
    return prev;
}

static void build_dag(sv_msg *m, const struct sv_iter_time *it)
{
    gboolean detailed = m->emit_et_dir != NULL || m->cfg.num_devices > 1;
    for (int32_t r = 0; r < m->cfg.num_devices; r++) {
        int32_t dev = m->cfg.first_device + r;
        sv_dag_node *prev = NULL;
        if (detailed) {
            prev = add_ops(m, it->prologue, it->n_prologue, dev, -1, prev);
            for (int64_t l = 0; l < it->n_layers; l++)
                prev = add_ops(m, it->layer, it->n_layer, dev, (int)l, prev);
            prev = add_ops(m, it->head, it->n_head, dev, -1, prev);
        } else {
            /* Zero-time nodes are left out: ASTRA-sim's replay charges them 1 ns. */
            if (it->prologue_ns > 0)
                prev = add_node(m, "prologue", SV_DAG_KIND_COMP, dev, it->prologue_ns, prev);
            if (it->layer_ns > 0 && it->n_layers > 0)
                prev =
                    add_node(m, "layers", SV_DAG_KIND_COMP, dev, it->layer_ns * it->n_layers, prev);
            if (it->head_ns > 0 || prev == NULL)
                prev = add_node(m, "head", SV_DAG_KIND_COMP, dev, it->head_ns, prev);
        }
    }
}

static void on_all_done(sv_dag_exec *ex, void *ctx)
{
    sv_msg *m = ctx;
    sv_msg__iter_finished(m);
}

static gboolean emit_et(sv_msg *m, GError **error)
{
    for (int32_t r = 0; r < m->cfg.num_devices; r++) {
        int32_t dev = m->cfg.first_device + r;
        g_autofree char *name = g_strdup_printf("inst%d_iter%" G_GUINT64_FORMAT ".%d.et",
                                                m->cfg.instance, m->iterations, dev);
        g_autofree char *path = g_build_filename(m->emit_et_dir, name, NULL);
        if (!sv_dag_save_et_device(m->dag, dev, path, error))
            return FALSE;
    }
    return TRUE;
}

gboolean sv_msg__launch(sv_msg *m, GError **error)
{
    g_array_set_size(m->pf_chunk, 0);
    g_array_set_size(m->pf_hist, 0);
    g_array_set_size(m->dec_kv, 0);
    for (guint i = 0; i < m->inflight->len; i++) {
        const msg_slot *s = &g_array_index(m->inflight, msg_slot, i);
        /* Classified by the scheduled count, as LLMServingSim's _build_batch: more than one
         * token is a chunk (also a resumed request's recomputation), exactly one a decode. */
        if (s->num_new > 1) {
            g_array_append_val(m->pf_chunk, s->num_new);
            g_array_append_val(m->pf_hist, s->computed_before);
        } else {
            g_array_append_val(m->dec_kv, s->computed_before);
        }
    }
    struct sv_batch_shape shape;
    sv_compute_batch_shape_init(&shape, (const int64_t *)(void *)m->pf_chunk->data,
                                (const int64_t *)(void *)m->pf_hist->data, m->pf_chunk->len,
                                (const int64_t *)(void *)m->dec_kv->data, m->dec_kv->len);
    struct sv_iter_time it;
    const struct sv_model_cfg *mc = sv_compute_latency_model(m->cfg.lat);
    sv_compute_iter_time(m->cfg.lat, &shape, 0, mc->num_layers, &it);

    /* Without ET output the DAG and its executor are kept across iterations and recycled every
     * MSG_DAG_RECYCLE_NODES nodes: a fresh DAG per step would cost more than the step itself
     * (page allocation), and memory stays bounded. The executor picks up the appended nodes. */
    if (m->dag && (m->emit_et_dir || sv_dag_node_count(m->dag) >= MSG_DAG_RECYCLE_NODES)) {
        g_clear_pointer(&m->exec, sv_dag_exec_free);
        g_clear_pointer(&m->dag, sv_dag_free);
    }
    gboolean fresh = m->dag == NULL;
    if (fresh)
        m->dag = sv_dag_new();
    build_dag(m, &it);
    if (m->emit_et_dir && !emit_et(m, error)) {
        g_clear_pointer(&m->dag, sv_dag_free);
        return FALSE;
    }
    if (!fresh)
        return TRUE; /* appended nodes are issued by the running executor */
    struct sv_dag_exec_cfg ec = {
        .policy = SV_DAG_POLICY_ASTRA,
        .on_all_done = on_all_done,
        .cb_ctx = m,
    };
    m->exec = sv_dag_exec_new(m->dag, m->eng, &ec, error);
    if (!m->exec) {
        g_clear_pointer(&m->dag, sv_dag_free);
        return FALSE;
    }
    sv_dag_exec_start(m->exec);
    return TRUE;
}
