/* Attention/FFN disaggregation (MegaScale-Infer, arXiv 2504.02263, "ping-pong pipeline
 * parallelism"): attention devices hold the KV cache and run each layer's attention side (norms,
 * qkv/o projections, attention), FFN devices run the layer's dense MLP or MoE experts. A batch is
 * split into m micro-batches that ping-pong between the two groups: per layer and micro-batch the
 * activations go attention -> FFN (dispatch) and FFN -> attention (combine), tokens x hidden x 2
 * bytes each way (bf16 activations), so the attention of micro-batch i overlaps the FFN of
 * micro-batch i - 1.
 *
 * The iteration is built as an operator DAG (dag/) and run by its executor under ASTRA-sim's
 * hardware rule (one compute op and one comm op per device in flight), so the overlap is the
 * executor's, not a formula's. Devices: 0 = the attention group, 1 = the FFN group; a dispatch
 * is a COMM_SEND on device 0 (the attention side's send slot), a combine a COMM_SEND on device 1.
 * docs/afd.md describes the model, its keys and what it leaves out. */
#include "msg/msg.h"

#include "dag/dag.h"

#include <string.h>

#define AFD_ERR(error, ...) g_set_error((error), SV_MSG_ERROR, SV_MSG_ERROR_INVALID, __VA_ARGS__)

gboolean sv_msg_afd_parse(JsonObject *obj, const char *where, const sv_compute_hw_catalog *cat,
                          int32_t pp_size, struct sv_msg_afd_cfg *out, GError **error)
{
    memset(out, 0, sizeof *out);
    out->ffn_npus = 1;
    out->micro_batches = 2;
    out->ffn_ep = -1;
    GList *members = json_object_get_members(obj);
    for (GList *l = members; l; l = l->next) {
        const char *k = l->data;
        if (strcmp(k, "ffn_hardware") && strcmp(k, "ffn_npus") && strcmp(k, "micro_batches") &&
            strcmp(k, "ffn_ep") && strcmp(k, "ffn_group")) {
            AFD_ERR(error,
                    "%s.%s: unknown key (known: ffn_hardware, ffn_npus, micro_batches, ffn_ep, "
                    "ffn_group)",
                    where, k);
            g_list_free(members);
            return FALSE;
        }
    }
    g_list_free(members);
    JsonNode *hw = json_object_get_member(obj, "ffn_hardware");
    if (!hw || !JSON_NODE_HOLDS_VALUE(hw) || json_node_get_value_type(hw) != G_TYPE_STRING) {
        AFD_ERR(error, "%s.ffn_hardware: required, a hardware name (string)", where);
        return FALSE;
    }
    struct sv_compute_hw_cfg dev;
    g_autoptr(GError) e = NULL;
    if (!sv_compute_hw_catalog_lookup(cat, json_node_get_string(hw), &dev, &e)) {
        AFD_ERR(error, "%s.ffn_hardware: %s", where, e->message);
        return FALSE;
    }
    g_strlcpy(out->ffn_hardware, dev.name, sizeof out->ffn_hardware);
    static const char *const ints[] = {"ffn_npus", "micro_batches"};
    for (int i = 0; i < 2; i++) {
        JsonNode *n = json_object_get_member(obj, ints[i]);
        if (!n)
            continue;
        if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_INT64) {
            AFD_ERR(error, "%s.%s: must be an integer", where, ints[i]);
            return FALSE;
        }
        int64_t v = json_node_get_int(n);
        int64_t max = i == 0 ? 4096 : SV_MSG_AFD_MAX_MB;
        if (v < 1 || v > max) {
            AFD_ERR(error, "%s.%s: %" G_GINT64_FORMAT " out of range [1, %" G_GINT64_FORMAT "]",
                    where, ints[i], v, max);
            return FALSE;
        }
        if (i == 0)
            out->ffn_npus = (int32_t)v;
        else
            out->micro_batches = (int32_t)v;
    }
    JsonNode *ep = json_object_get_member(obj, "ffn_ep");
    if (ep) {
        if (!JSON_NODE_HOLDS_VALUE(ep) || json_node_get_value_type(ep) != G_TYPE_BOOLEAN) {
            AFD_ERR(error, "%s.ffn_ep: must be true or false", where);
            return FALSE;
        }
        out->ffn_ep = json_node_get_boolean(ep) ? 1 : 0;
    }
    JsonNode *grp = json_object_get_member(obj, "ffn_group");
    if (grp) {
        const char *g = JSON_NODE_HOLDS_VALUE(grp) && json_node_get_value_type(grp) == G_TYPE_STRING
                            ? json_node_get_string(grp)
                            : NULL;
        if (!g || !*g || strlen(g) >= sizeof out->ffn_group) {
            AFD_ERR(error, "%s.ffn_group: must be a group name (a string of 1..%d characters)",
                    where, (int)sizeof out->ffn_group - 1);
            return FALSE;
        }
        g_strlcpy(out->ffn_group, g, sizeof out->ffn_group);
    }
    if (pp_size > 1) {
        AFD_ERR(error,
                "%s: attention/FFN disaggregation with pp_size %d is not supported (pp_size 1 "
                "only)",
                where, pp_size);
        return FALSE;
    }
    return TRUE;
}

void sv_msg_afd_split(int64_t tokens, int32_t m, int64_t *mb_tokens)
{
    for (int32_t i = 0; i < m; i++)
        mb_tokens[i] = tokens / m + (i < tokens % m ? 1 : 0);
}

/* latency + bytes / bandwidth, rounded up to the next ns (GB/s = bytes per ns). */
static sv_time afd_xfer_ns(const struct sv_msg_afd_iter_req *q, uint64_t bytes)
{
    double t = (double)bytes / q->net_gbps;
    sv_time ns = (sv_time)t;
    if ((double)ns < t)
        ns++;
    return q->net_latency_ns + ns;
}

static sv_dag_node *afd_node(sv_dag *dag, uint64_t id, const char *name, sv_dag_kind kind,
                             int32_t device, sv_time ns, uint64_t bytes, GError **error)
{
    struct sv_dag_node_cfg c = {
        .id = id, .name = name, .kind = kind, .device = device, .duration_ns = ns};
    if (kind == SV_DAG_KIND_COMM_SEND) {
        c.p.has = SV_DAG_HAS_COMM_SIZE | SV_DAG_HAS_COMM_SRC | SV_DAG_HAS_COMM_DST;
        c.p.comm_size_bytes = bytes;
        c.p.comm_src = device;
        c.p.comm_dst = 1 - device;
    }
    return sv_dag_node_add(dag, &c, error);
}

gboolean sv_msg_afd_iter_run(const struct sv_msg_afd_iter_req *q, struct sv_msg_afd_iter *out,
                             GError **error)
{
    memset(out, 0, sizeof *out);
    int32_t m = q->micro_batches;
    if (m < 1 || m > SV_MSG_AFD_MAX_MB || q->n_layers < 1 || q->tokens < m || q->hidden_size < 1 ||
        !(q->net_gbps > 0) || q->net_latency_ns < 0) {
        AFD_ERR(error,
                "afd iteration: need 1 <= micro_batches <= %d, micro_batches <= tokens, layers, "
                "hidden and network bandwidth > 0 (got m %d, tokens %" G_GINT64_FORMAT ")",
                SV_MSG_AFD_MAX_MB, m, q->tokens);
        return FALSE;
    }
    for (int32_t i = 0; i < m; i++) {
        if (q->attn_ns[i] < 0 || q->ffn_ns[i] < 0) {
            AFD_ERR(error, "afd iteration: micro-batch %d: negative operator time", i);
            return FALSE;
        }
    }
    sv_msg_afd_split(q->tokens, m, out->mb_tokens);
    g_autoptr(GError) e = NULL;
    sv_dag *dag = sv_dag_new();
    /* Ids layer-major, micro-batch-minor, four nodes per (layer, micro-batch): the executor issues
     * ready nodes in ascending id, so micro-batch 0 goes first on a free device. */
    sv_dag_node **prev = g_new0(sv_dag_node *, m); /* each micro-batch's last combine */
    char name[64];
    gboolean ok = TRUE;
    for (int64_t l = 0; ok && l < q->n_layers; l++) {
        for (int32_t i = 0; ok && i < m; i++) {
            uint64_t bytes = (uint64_t)out->mb_tokens[i] * (uint64_t)q->hidden_size * 2u;
            sv_time x = afd_xfer_ns(q, bytes);
            uint64_t id = ((uint64_t)l * (uint64_t)m + (uint64_t)i) * 4u;
            g_snprintf(name, sizeof name, "attn.l%" G_GINT64_FORMAT ".mb%d", l, i);
            sv_dag_node *a = afd_node(dag, id, name, SV_DAG_KIND_COMP, 0, q->attn_ns[i], 0, &e);
            g_snprintf(name, sizeof name, "dispatch.l%" G_GINT64_FORMAT ".mb%d", l, i);
            sv_dag_node *d =
                a ? afd_node(dag, id + 1, name, SV_DAG_KIND_COMM_SEND, 0, x, bytes, &e) : NULL;
            g_snprintf(name, sizeof name, "ffn.l%" G_GINT64_FORMAT ".mb%d", l, i);
            sv_dag_node *f =
                d ? afd_node(dag, id + 2, name, SV_DAG_KIND_COMP, 1, q->ffn_ns[i], 0, &e) : NULL;
            g_snprintf(name, sizeof name, "combine.l%" G_GINT64_FORMAT ".mb%d", l, i);
            sv_dag_node *c =
                f ? afd_node(dag, id + 3, name, SV_DAG_KIND_COMM_SEND, 1, x, bytes, &e) : NULL;
            ok = c && (!prev[i] || sv_dag_edge_add(dag, prev[i], a, SV_DAG_EDGE_DATA, &e)) &&
                 sv_dag_edge_add(dag, a, d, SV_DAG_EDGE_DATA, &e) &&
                 sv_dag_edge_add(dag, d, f, SV_DAG_EDGE_DATA, &e) &&
                 sv_dag_edge_add(dag, f, c, SV_DAG_EDGE_DATA, &e);
            prev[i] = c;
            out->a2f_bytes += bytes;
            out->f2a_bytes += bytes;
            out->n_transfers += 2;
            out->serial_ns += q->attn_ns[i] + q->ffn_ns[i] + 2 * x;
        }
    }
    g_free(prev);
    sv_engine *eng = ok ? sv_engine_new(1) : NULL;
    sv_dag_exec *ex = ok ? sv_dag_exec_new(dag, eng, NULL, &e) : NULL;
    ok = ex && sv_dag_exec_run(ex, &e);
    if (ok)
        out->end_ns = sv_dag_exec_finish_ns(ex);
    sv_dag_exec_free(ex);
    sv_engine_free(eng);
    sv_dag_free(dag);
    if (!ok) {
        g_propagate_prefixed_error(error, g_steal_pointer(&e), "afd iteration: ");
        return FALSE;
    }
    return TRUE;
}

void sv_msg_afd_op_times(sv_compute_latency *attn_lat, sv_compute_latency *ffn_lat,
                         const struct sv_compute_batch_shape *s, sv_time *attn_ns, sv_time *ffn_ns)
{
    const struct sv_compute_layer_seq *seq =
        sv_compute_layer_seq(sv_compute_latency_model(attn_lat)->arch);
    struct sv_compute_iter_time a, f;
    sv_compute_iter_time(attn_lat, s, 0, 1, &a);
    sv_compute_iter_time(ffn_lat, s, 0, 1, &f);
    *attn_ns = 0;
    *ffn_ns = 0;
    for (int k = 0; k < a.n_layer; k++) {
        gboolean mlp = FALSE;
        for (int j = 0; j < seq->n_mlp; j++)
            mlp = mlp || seq->mlp[j] == a.layer[k].op;
        if (mlp)
            *ffn_ns += f.layer[k].ns; /* same op sequence: same model, same architecture */
        else
            *attn_ns += a.layer[k].ns;
    }
}
