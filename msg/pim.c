/* PIM attention offload, interleaved sub-batches and local weight loads (docs/pim.md).
 *
 * With cfg.pim the decode attention of every layer leaves the NPU: the batch shape is flagged
 * (attn_decode_off) so the NPU's attention operator keeps the prefill part, and a PIM node follows
 * it in every layer of every rank. Its duration is the NPU -> PIM transfer, the slowest channel's
 * attention (compute/pim.c: each decode sequence's heads cut into `split` pieces packed on the
 * channels, LLMServingSim's _attn_load_balancer and channel_split) and the PIM -> NPU transfer.
 *
 * Sub-batch interleaving (NeuPIMs, Heo et al., ASPLOS 2024; LLMServingSim
 * _synthesize_interleaved_trace): the batch is cut in two by LLMServingSim's _make_sub_batch rule
 * (requests by tokens this step, largest first, each to the lighter half) and each rank gets two
 * chains emitted in LLMServingSim's order: A's prologue and first pre-attention part, B's, then
 * per layer A's post-attention + next pre-attention, B's, and the heads. The executor books one
 * GPU op and one PIM op per device at a time (dag ASTRA policy), issuing ready nodes in id order,
 * so B's dense work runs on the NPU while A's attention runs on PIM and the other way round.
 *
 * Local weight loads (enable_local_offloading): a MEM_LOAD of the part's weights on one rank
 * (bytes / npu_mem bandwidth + latency) before its compute, serial with it. */
#include "msg/msg_internal.h"

#include <string.h>

struct msg_pim {
    int n_sub; /* this launch: 1, or 2 when interleaved */
    struct sv_compute_iter_time it[2];
    sv_time layer_ns[2];  /* PIM node per layer, per sub-batch (0: none) */
    GArray *kv;           /* int64_t: decode KV lengths of one sub-batch (scratch) */
    GArray *chunk, *hist; /* int64_t: prefill chunks / histories (scratch) */
    int *channel_of;      /* [cap] */
    double *ch_ns;        /* [n_channels] */
    int cap;
    sv_time load_ns[3]; /* local weight load: prologue, one layer, head (0: off) */
    uint64_t load_bytes[3];
    double busy_ns;      /* this launch */
    uint64_t xfer_bytes; /* this launch */
    struct sv_msg_pim_stats stats;
};

static int32_t rank_tp(const sv_msg *m)
{
    int32_t pp = m->cfg.pp_size > 1 ? m->cfg.pp_size : 1;
    return m->cfg.num_devices / pp;
}

gboolean sv_msg__pim_init(sv_msg *m, GError **error)
{
    const struct sv_msg_cfg *c = &m->cfg;
    gboolean pim = c->pim.dev != NULL, local = c->local_load_bytes_per_ns > 0;
    if (!pim && !local)
        return TRUE;
    const struct sv_compute_model_cfg *mc = sv_compute_latency_model(c->lat);
    if (pim) {
        if (c->pim.n_channels < 1 || c->pim.split < 1 || !c->pim.pack ||
            !(c->pim.xfer_bytes_per_ns > 0) || c->pim.xfer_latency_ns < 0) {
            g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                        "PIM offload needs channels, a split, a placement policy and a link");
            return FALSE;
        }
        if (c->pp_size > 1) {
            g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                        "PIM attention offload with pipeline parallelism (pp_size %d) is not "
                        "supported",
                        c->pp_size);
            return FALSE;
        }
        if (c->pim.sub_batch && c->ep_size > 1) {
            g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                        "sub-batch interleaving with expert parallelism (ep_size %d) is not "
                        "supported",
                        c->ep_size);
            return FALSE;
        }
    }
    if (local && sv_msg__streams(m)) {
        g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                    "enable_local_offloading cannot be combined with weights placed on a lower "
                    "memory tier");
        return FALSE;
    }
    struct msg_pim *p = g_new0(struct msg_pim, 1);
    p->kv = g_array_new(FALSE, FALSE, sizeof(int64_t));
    p->chunk = g_array_new(FALSE, FALSE, sizeof(int64_t));
    p->hist = g_array_new(FALSE, FALSE, sizeof(int64_t));
    if (pim)
        p->ch_ns = g_new0(double, (size_t)c->pim.n_channels);
    if (local) {
        int tp = rank_tp(m);
        p->load_bytes[0] = sv_compute_model_embedding_bytes(mc, tp);
        p->load_bytes[1] = sv_compute_model_layer_weight_bytes(mc, tp);
        p->load_bytes[2] =
            sv_compute_model_head_bytes(mc, tp) + sv_compute_model_final_norm_bytes(mc);
        for (int k = 0; k < 3; k++)
            p->load_ns[k] = sv_time_from_ns((double)p->load_bytes[k] / c->local_load_bytes_per_ns +
                                            c->local_load_latency_ns);
    }
    m->pim = p;
    return TRUE;
}

void sv_msg__pim_free(sv_msg *m)
{
    struct msg_pim *p = m->pim;
    if (!p)
        return;
    g_array_free(p->kv, TRUE);
    g_array_free(p->chunk, TRUE);
    g_array_free(p->hist, TRUE);
    g_free(p->channel_of);
    g_free(p->ch_ns);
    g_free(p);
    m->pim = NULL;
}

gboolean sv_msg__pim_active(const sv_msg *m)
{
    return m->pim != NULL;
}

/* One sub-batch's PIM node per layer, from its slots sub[0..n): transfers + slowest channel. */
static sv_time pim_layer_ns(sv_msg *m, const msg_slot *const *sub, guint n)
{
    const struct sv_msg_pim_cfg *pc = &m->cfg.pim;
    struct msg_pim *p = m->pim;
    const struct sv_compute_model_cfg *mc = sv_compute_latency_model(m->cfg.lat);
    int tp = rank_tp(m);
    g_array_set_size(p->kv, 0);
    int64_t pf_tokens = 0, pf_hist = 0;
    for (guint i = 0; i < n; i++) {
        if (sub[i]->num_new > 1) {
            pf_tokens += sub[i]->num_new;
            pf_hist += sub[i]->computed_before;
        } else {
            /* The decode's query attends to its history and its own new K, V. */
            int64_t L = sub[i]->computed_before + 1;
            g_array_append_val(p->kv, L);
        }
    }
    int n_dec = (int)p->kv->len;
    int items = n_dec * pc->split;
    if (items > p->cap) {
        p->cap = MAX(items, 2 * p->cap);
        p->channel_of = g_renew(int, p->channel_of, (size_t)p->cap);
    }
    /* The channels hold every rank's heads: the model's whole attention (tp 1) over them. */
    sv_time attn = sv_compute_pim_iter_time(
        pc->dev, &pc->attn, mc, 1, (const int64_t *)(void *)p->kv->data, n_dec, pc->split,
        pc->n_channels, pc->pack, pc->pack_user, p->channel_of, p->ch_ns, NULL);
    double busy = 0;
    for (int c = 0; c < pc->n_channels && n_dec > 0; c++)
        busy += p->ch_ns[c];
    /* Bytes of one rank per layer (bf16 activations at the model's dtype). NPU -> PIM: the
     * decodes' Q, K and V; the prefill chunks' new K and V (the KV lives in PIM memory) and their
     * history, read back for the NPU's prefill attention. PIM -> NPU: the decodes' outputs. */
    uint64_t d = (uint64_t)mc->dtype_bytes, hd = (uint64_t)mc->head_dim;
    uint64_t kvt = sv_compute_model_kv_bytes_per_token_layer(mc, 1);
    uint64_t in = ((uint64_t)n_dec * (uint64_t)(mc->num_heads + 2 * mc->num_kv_heads) * hd * d +
                   (uint64_t)pf_tokens * kvt + (uint64_t)pf_hist * kvt) /
                  (uint64_t)tp;
    uint64_t out = (uint64_t)n_dec * (uint64_t)mc->num_heads * hd * d / (uint64_t)tp;
    double t = (double)attn;
    if (in > 0)
        t += pc->xfer_latency_ns + (double)in / pc->xfer_bytes_per_ns;
    if (out > 0)
        t += pc->xfer_latency_ns + (double)out / pc->xfer_bytes_per_ns;
    p->busy_ns += busy * (double)mc->num_layers;
    p->stats.slowest_ns += (double)attn * (double)mc->num_layers;
    p->stats.decode_tokens += (uint64_t)n_dec;
    p->xfer_bytes += (in + out) * (uint64_t)tp * (uint64_t)mc->num_layers;
    return sv_time_from_ns(t);
}

static void sub_shape(sv_msg *m, const msg_slot *const *sub, guint n,
                      struct sv_compute_batch_shape *s)
{
    struct msg_pim *p = m->pim;
    g_array_set_size(p->chunk, 0);
    g_array_set_size(p->hist, 0);
    g_array_set_size(p->kv, 0);
    for (guint i = 0; i < n; i++) {
        if (sub[i]->num_new > 1) {
            g_array_append_val(p->chunk, sub[i]->num_new);
            g_array_append_val(p->hist, sub[i]->computed_before);
        } else {
            g_array_append_val(p->kv, sub[i]->computed_before);
        }
    }
    sv_compute_batch_shape_init(s, (const int64_t *)(void *)p->chunk->data,
                                (const int64_t *)(void *)p->hist->data, p->chunk->len,
                                (const int64_t *)(void *)p->kv->data, p->kv->len);
}

typedef struct {
    const msg_slot *slot;
    guint index;
} sub_item;

static int by_tokens_desc(const void *pa, const void *pb)
{
    const sub_item *a = pa, *b = pb;
    if (a->slot->num_new != b->slot->num_new)
        return a->slot->num_new > b->slot->num_new ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index); /* stable, as Python's sorted */
}

void sv_msg__pim_launch(sv_msg *m, struct sv_compute_batch_shape *shape)
{
    struct msg_pim *p = m->pim;
    if (!p)
        return;
    const struct sv_compute_model_cfg *mc = sv_compute_latency_model(m->cfg.lat);
    gboolean pim = m->cfg.pim.dev != NULL;
    guint n = m->inflight->len;
    p->busy_ns = 0;
    p->xfer_bytes = 0;
    p->n_sub = 1;
    p->layer_ns[0] = p->layer_ns[1] = 0;
    if (pim)
        shape->attn_decode_off = TRUE;
    /* Scratch on the heap: a step may hold thousands of requests (no limit on max_num_seqs). */
    g_autofree const msg_slot **all = g_new0(const msg_slot *, n + 1);
    for (guint i = 0; i < n; i++)
        all[i] = &g_array_index(m->inflight, msg_slot, i);
    if (pim && m->cfg.pim.sub_batch && n > 1) {
        /* LLMServingSim _make_sub_batch: largest per-step tokens first, to the lighter half
         * (ties to the first); each half keeps the batch order. */
        g_autofree sub_item *it = g_new(sub_item, n);
        for (guint i = 0; i < n; i++)
            it[i] = (sub_item){all[i], i};
        qsort(it, n, sizeof *it, by_tokens_desc);
        g_autofree gboolean *second = g_new(gboolean, n);
        int64_t load[2] = {0, 0};
        for (guint k = 0; k < n; k++) {
            int side = load[0] <= load[1] ? 0 : 1;
            load[side] += it[k].slot->num_new;
            second[it[k].index] = side == 1;
        }
        g_autofree const msg_slot **a = g_new(const msg_slot *, n);
        g_autofree const msg_slot **b = g_new(const msg_slot *, n);
        guint na = 0, nb = 0;
        for (guint i = 0; i < n; i++) {
            if (second[i])
                b[nb++] = all[i];
            else
                a[na++] = all[i];
        }
        struct sv_compute_batch_shape sa, sb;
        sub_shape(m, a, na, &sa);
        sub_shape(m, b, nb, &sb);
        sa.attn_decode_off = sb.attn_decode_off = TRUE;
        sv_compute_iter_time(m->cfg.lat, &sa, 0, mc->num_layers, &p->it[0]);
        sv_compute_iter_time(m->cfg.lat, &sb, 0, mc->num_layers, &p->it[1]);
        p->layer_ns[0] = pim_layer_ns(m, a, na);
        p->layer_ns[1] = pim_layer_ns(m, b, nb);
        p->n_sub = 2;
        p->stats.sub_batched++;
    } else {
        sv_compute_iter_time(m->cfg.lat, shape, 0, mc->num_layers, &p->it[0]);
        if (pim)
            p->layer_ns[0] = pim_layer_ns(m, all, n);
    }
    if (pim && n > 0) { /* a DP member's dummy step (no request) is not counted */
        p->stats.iterations++;
        p->stats.busy_ns += p->busy_ns;
        p->stats.xfer_bytes += p->xfer_bytes;
    }
}

void sv_msg__pim_iter_stats(const sv_msg *m, double *busy_ns, uint64_t *xfer_bytes)
{
    *busy_ns = m->pim ? m->pim->busy_ns : 0;
    *xfer_bytes = m->pim ? m->pim->xfer_bytes : 0;
}

void sv_msg_pim_stats(const sv_msg *m, struct sv_msg_pim_stats *out)
{
    if (m->pim)
        *out = m->pim->stats;
    else
        memset(out, 0, sizeof *out);
}

/* ---- the chains ------------------------------------------------------------------------------ */

static const char *name_of(const sv_msg *m, char *buf, size_t size, int layer, const char *what,
                           int sub, int n_sub)
{
    if (!m->et)
        return NULL;
    const char *tag = n_sub > 1 ? (sub == 0 ? ".b1" : ".b2") : "";
    if (layer >= 0)
        g_snprintf(buf, size, "L%d.%s%s", layer, what, tag);
    else
        g_snprintf(buf, size, "%s%s", what, tag);
    return buf;
}

/* A local weight load of part k (0 prologue, 1 a layer, 2 head) before the part's compute. */
static sv_dag_node *local_load(sv_msg *m, int k, int32_t dev, int layer, int sub, sv_dag_node *prev)
{
    struct msg_pim *p = m->pim;
    if (p->load_ns[k] <= 0)
        return prev;
    char name[80];
    sv_dag_node *n =
        sv_msg__add_node(m, name_of(m, name, sizeof name, layer, "weights.load", sub, p->n_sub),
                         SV_DAG_KIND_MEM_LOAD, dev, p->load_ns[k], prev);
    n->p.has |= SV_DAG_HAS_TENSOR_SIZE;
    n->p.tensor_size_bytes = p->load_bytes[k];
    return n;
}

/* The attention operator's index in a layer's ops (the last of the pre-attention part). */
static int attn_index(const struct sv_compute_iter_time *it)
{
    for (int i = 0; i < it->n_layer; i++)
        if (it->layer[i].op == SV_COMPUTE_OP_ATTENTION)
            return i;
    return -1;
}

/* Layer l's part up to and including attention (with its PIM node) of sub-batch k. */
static sv_dag_node *pre_part(sv_msg *m, const struct sv_msg__chain *c, int k, int64_t l,
                             sv_dag_node *prev)
{
    struct msg_pim *p = m->pim;
    const struct sv_compute_iter_time *it = &p->it[k];
    int a = attn_index(it);
    prev = local_load(m, 1, c->dev, (int)l, k, prev);
    if (a < 0) /* no attention operator: nothing to offload in this layer */
        return c->emit(m, it->layer, it->n_layer, c->dev, (int)l, c->user, prev);
    prev = c->emit(m, it->layer, a, c->dev, (int)l, c->user, prev);
    /* The NPU's attention is the prefill part: none in a decode-only step, and a zero-time node
     * would cost 1 ns in the executor (ASTRA-sim's replay rule). */
    if (it->layer[a].ns > 0)
        prev = c->emit(m, it->layer + a, 1, c->dev, (int)l, c->user, prev);
    if (p->layer_ns[k] > 0) {
        char name[80];
        prev =
            sv_msg__add_node(m, name_of(m, name, sizeof name, (int)l, "attention.pim", k, p->n_sub),
                             SV_DAG_KIND_PIM, c->dev, p->layer_ns[k], prev);
    }
    return prev;
}

static sv_dag_node *post_part(sv_msg *m, const struct sv_msg__chain *c, int k, int64_t l,
                              sv_dag_node *prev)
{
    const struct sv_compute_iter_time *it = &m->pim->it[k];
    int a = attn_index(it);
    if (a < 0)
        return prev;
    return c->emit(m, it->layer + a + 1, it->n_layer - a - 1, c->dev, (int)l, c->user, prev);
}

static sv_dag_node *prologue(sv_msg *m, const struct sv_msg__chain *c, int k, sv_dag_node *prev)
{
    const struct sv_compute_iter_time *it = &m->pim->it[k];
    prev = local_load(m, 0, c->dev, -1, k, prev);
    return c->emit(m, it->prologue, it->n_prologue, c->dev, -1, c->user, prev);
}

static sv_dag_node *head(sv_msg *m, const struct sv_msg__chain *c, int k, sv_dag_node *prev)
{
    const struct sv_compute_iter_time *it = &m->pim->it[k];
    prev = local_load(m, 2, c->dev, -1, k, prev);
    return c->emit(m, it->head, it->n_head, c->dev, -1, c->user, prev);
}

sv_dag_node *sv_msg__pim_chain(sv_msg *m, const struct sv_msg__chain *c, sv_dag_node *prev)
{
    struct msg_pim *p = m->pim;
    int64_t lb = c->layer_begin, le = c->layer_end;
    int64_t L = sv_compute_latency_model(m->cfg.lat)->num_layers;
    if (p->n_sub == 1) {
        if (lb == 0)
            prev = prologue(m, c, 0, prev);
        for (int64_t l = lb; l < le; l++)
            prev = post_part(m, c, 0, l, pre_part(m, c, 0, l, prev));
        if (le == L)
            prev = head(m, c, 0, prev);
        return prev;
    }
    /* Two sub-batches (pp 1: the whole model), in LLMServingSim's emission order. */
    sv_dag_node *e[2];
    for (int k = 0; k < 2; k++)
        e[k] = pre_part(m, c, k, 0, prologue(m, c, k, prev));
    for (int64_t l = 0; l + 1 < L; l++)
        for (int k = 0; k < 2; k++)
            e[k] = pre_part(m, c, k, l + 1, post_part(m, c, k, l, e[k]));
    for (int k = 0; k < 2; k++)
        e[k] = head(m, c, k, post_part(m, c, k, L - 1, e[k]));
    sv_dag_node *join =
        sv_msg__add_node(m, m->et ? "subbatch.join" : NULL, SV_DAG_KIND_LOGICAL, c->dev, 0, e[0]);
    SV_ASSERT(sv_dag_edge_add(m->dag, e[1], join, SV_DAG_EDGE_DATA, NULL));
    return join;
}
