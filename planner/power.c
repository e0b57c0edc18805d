/* The power model fed by the run (docs/power.md): one sv_power domain per node, the devices of
 * every instance on it, busy from an iteration's launch to its commit; DRAM traffic per
 * iteration; per-request attribution of energy; power.csv's rows.
 *
 * Attribution, exactly conserved: at every state change of a node (an iteration of one of its
 * instances starts or ends) the energy since the node's previous change goes to the iterations
 * that ran in between (none: unattributed), split by their instances' device counts and, within
 * an iteration, by the requests' shares of its scheduled tokens. An iteration's DRAM traffic (an
 * impulse at its end) goes to that iteration alone. */
#include "planner/planner.h"

#include <string.h>

/* One iteration in flight: its requests and their tokens, and its DRAM bytes. */
typedef struct {
    int32_t instance;
    GArray *reqs; /* struct sv_msg_sched_entry */
    int64_t tokens;
    uint64_t dram_bytes;
    double pim_j; /* PIM channels' active energy above idle (docs/pim.md) */
} power_iter;

typedef struct {
    uint64_t id; /* the key (g_int64_hash) */
    double j;
} req_energy;

typedef struct {
    sv_power_domain *dom;
    double acc_j;       /* energy at the last accounted change */
    GPtrArray *running; /* power_iter* running on the node, launch order */
} power_node;

struct sv_planner_power {
    int32_t n_nodes, n_inst;
    power_node *nodes;
    int32_t *inst_node, *inst_first_dev, *inst_devs; /* per instance */
    uint64_t *weight_bytes, *kv_bytes_per_token;     /* per instance */
    double *pim_active_w;                            /* per node: PIM (peak - idle) per channel */
    GQueue *inflight;                                /* per instance: power_iter*, FIFO */
    GPtrArray *spare;                                /* recycled power_iter* */
    GHashTable *req_j;                               /* request id -> req_energy (owned) */
    double attributed_j, unattributed_j, dram_bytes;
    /* power.csv */
    void (*row)(void *ctx, const struct sv_planner_power_row *r);
    void *row_ctx;
    sv_time next_tick, last_row;
    double *prev_j; /* [n_nodes x components] at the last row */
    double *row_w, *row_node_j;
};

static void iter_free(power_iter *it)
{
    if (!it)
        return;
    g_array_free(it->reqs, TRUE);
    g_free(it);
}

sv_planner_power *sv_planner_power_new(const struct sv_planner_cluster_cfg *c,
                                       void (*row)(void *ctx, const struct sv_planner_power_row *r),
                                       void *row_ctx, GError **error)
{
    SV_ASSERT(c && c->power);
    sv_planner_power *pw = g_new0(sv_planner_power, 1);
    pw->n_nodes = c->n_nodes;
    pw->n_inst = c->n_instances;
    pw->nodes = g_new0(power_node, (size_t)c->n_nodes);
    pw->inst_node = g_new0(int32_t, (size_t)c->n_instances);
    pw->inst_first_dev = g_new0(int32_t, (size_t)c->n_instances);
    pw->inst_devs = g_new0(int32_t, (size_t)c->n_instances);
    pw->weight_bytes = g_new0(uint64_t, (size_t)c->n_instances);
    pw->kv_bytes_per_token = g_new0(uint64_t, (size_t)c->n_instances);
    pw->pim_active_w = g_new0(double, (size_t)c->n_nodes);
    pw->inflight = g_new0(GQueue, (size_t)c->n_instances);
    pw->spare = g_ptr_array_new_with_free_func((GDestroyNotify)iter_free);
    pw->req_j = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, g_free);
    pw->row = row;
    pw->row_ctx = row_ctx;
    pw->next_tick = SV_PLANNER_POWER_TICK_NS;
    pw->prev_j = g_new0(double, (size_t)c->n_nodes *SV_POWER_N_COMPONENTS);
    pw->row_w = g_new0(double, (size_t)c->n_nodes *SV_POWER_N_COMPONENTS);
    pw->row_node_j = g_new0(double, (size_t)c->n_nodes);
    for (int32_t n = 0; n < c->n_nodes; n++) {
        pw->nodes[n].dom = sv_power_domain_new(&c->nodes[n].power, 0);
        pw->nodes[n].running = g_ptr_array_new();
    }
    for (int32_t i = 0; i < c->n_instances; i++) {
        const struct sv_planner_instance_cfg *ic = &c->instances[i];
        SV_ASSERT(ic->node >= 0 && ic->node < c->n_nodes);
        pw->inst_node[i] = ic->node;
        pw->inst_devs[i] = ic->num_npus;
        g_queue_init(&pw->inflight[i]);
        for (int32_t d = 0; d < ic->num_npus; d++) {
            GError *e = NULL;
            int dev = sv_power_device_add(pw->nodes[ic->node].dom, ic->hardware, &e);
            if (dev < 0) {
                g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                            "%s: nodes[%d].instances (instance %d, hardware %s): %s", c->where,
                            ic->node, i, ic->hardware, e->message);
                g_error_free(e);
                sv_planner_power_free(pw);
                return NULL;
            }
            if (d == 0)
                pw->inst_first_dev[i] = dev;
        }
    }
    return pw;
}

void sv_planner_power_free(sv_planner_power *pw)
{
    if (!pw)
        return;
    for (int32_t n = 0; n < pw->n_nodes; n++) {
        sv_power_domain_free(pw->nodes[n].dom);
        if (pw->nodes[n].running)
            g_ptr_array_free(pw->nodes[n].running, TRUE);
    }
    for (int32_t i = 0; i < pw->n_inst; i++) {
        power_iter *it;
        while ((it = g_queue_pop_head(&pw->inflight[i])))
            iter_free(it);
    }
    g_ptr_array_free(pw->spare, TRUE);
    g_hash_table_destroy(pw->req_j);
    g_free(pw->nodes);
    g_free(pw->inst_node);
    g_free(pw->inst_first_dev);
    g_free(pw->inst_devs);
    g_free(pw->weight_bytes);
    g_free(pw->kv_bytes_per_token);
    g_free(pw->pim_active_w);
    g_free(pw->inflight);
    g_free(pw->prev_j);
    g_free(pw->row_w);
    g_free(pw->row_node_j);
    g_free(pw);
}

void sv_planner_power_set_traffic(sv_planner_power *pw, int32_t i, uint64_t weight_bytes,
                                  uint64_t kv_bytes_per_token)
{
    pw->weight_bytes[i] = weight_bytes;
    pw->kv_bytes_per_token[i] = kv_bytes_per_token;
}

/* ---- power.csv ------------------------------------------------------------------------------ */

static void emit_row(sv_planner_power *pw, sv_time t)
{
    double dt_s = (double)(t - pw->last_row) / 1e9;
    struct sv_planner_power_row r = {
        .t_ns = t, .n_nodes = pw->n_nodes, .w = pw->row_w, .node_j = pw->row_node_j};
    for (int32_t n = 0; n < pw->n_nodes; n++) {
        pw->row_node_j[n] = 0;
        for (int c = 0; c < SV_POWER_N_COMPONENTS; c++) {
            size_t k = (size_t)n * SV_POWER_N_COMPONENTS + (size_t)c;
            double j = sv_power_energy_j(pw->nodes[n].dom, c, t);
            pw->row_w[k] = dt_s > 0 ? (j - pw->prev_j[k]) / dt_s : 0;
            pw->prev_j[k] = j;
            pw->row_node_j[n] += j;
            r.total_w += pw->row_w[k];
        }
        r.total_j += pw->row_node_j[n];
    }
    pw->last_row = t;
    if (pw->row)
        pw->row(pw->row_ctx, &r);
}

/* Rows of the ticks before `t`, before any domain changes at t (a domain answers queries at
 * times no earlier than its last change). */
static void ticks_before(sv_planner_power *pw, sv_time t)
{
    while (pw->next_tick < t) {
        emit_row(pw, pw->next_tick);
        pw->next_tick += SV_PLANNER_POWER_TICK_NS;
    }
}

/* ---- attribution ---------------------------------------------------------------------------- */

static void give(sv_planner_power *pw, const power_iter *it, double j)
{
    guint n = it->reqs->len;
    for (guint k = 0; k < n; k++) {
        const struct sv_msg_sched_entry *e = &g_array_index(it->reqs, struct sv_msg_sched_entry, k);
        double share = it->tokens > 0 ? (double)e->num_new / (double)it->tokens : 1.0 / n;
        req_energy *r = g_hash_table_lookup(pw->req_j, &e->request_id);
        if (!r) {
            r = g_new0(req_energy, 1);
            r->id = e->request_id;
            g_hash_table_insert(pw->req_j, &r->id, r);
        }
        r->j += j * share;
    }
    pw->attributed_j += j;
}

/* The energy of node n since its last change, up to `now`, to the iterations running on it. */
static void account(sv_planner_power *pw, int32_t n, sv_time now)
{
    power_node *pn = &pw->nodes[n];
    double e = sv_power_total_energy_j(pn->dom, now);
    double d = e - pn->acc_j;
    pn->acc_j = e;
    if (pn->running->len == 0) {
        pw->unattributed_j += d;
        return;
    }
    int64_t devs = 0;
    for (guint k = 0; k < pn->running->len; k++)
        devs += pw->inst_devs[((power_iter *)g_ptr_array_index(pn->running, k))->instance];
    for (guint k = 0; k < pn->running->len; k++) {
        const power_iter *it = g_ptr_array_index(pn->running, k);
        give(pw, it, d * (double)pw->inst_devs[it->instance] / (double)devs);
    }
}

void sv_planner_power_iter_start(sv_planner_power *pw, int32_t i, sv_time now,
                                 const struct sv_msg_sched_entry *e, guint n)
{
    int32_t node = pw->inst_node[i];
    ticks_before(pw, now);
    account(pw, node, now);
    power_iter *it =
        pw->spare->len ? g_ptr_array_steal_index_fast(pw->spare, pw->spare->len - 1) : NULL;
    if (!it) {
        it = g_new0(power_iter, 1);
        it->reqs = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_sched_entry));
    }
    it->instance = i;
    g_array_set_size(it->reqs, 0);
    g_array_append_vals(it->reqs, e, n);
    it->tokens = 0;
    uint64_t kv_tokens = 0;
    for (guint k = 0; k < n; k++) {
        it->tokens += e[k].num_new;
        kv_tokens += (uint64_t)(e[k].computed_before + e[k].num_new);
    }
    it->dram_bytes = pw->weight_bytes[i] + pw->kv_bytes_per_token[i] * kv_tokens;
    it->pim_j = 0;
    g_queue_push_tail(&pw->inflight[i], it);
    g_ptr_array_add(pw->nodes[node].running, it);
    for (int32_t d = 0; d < pw->inst_devs[i]; d++)
        sv_power_device_busy(pw->nodes[node].dom, pw->inst_first_dev[i] + d, now);
}

void sv_planner_power_iter_done(sv_planner_power *pw, int32_t i, sv_time now)
{
    power_iter *it = g_queue_pop_head(&pw->inflight[i]);
    SV_ASSERT(it != NULL); /* every reported launch commits (msg.h on_iter_start) */
    int32_t node = pw->inst_node[i];
    power_node *pn = &pw->nodes[node];
    ticks_before(pw, now);
    account(pw, node, now);
    /* The iteration's DRAM traffic: an impulse at its end, its own. */
    sv_power_bytes(pn->dom, SV_POWER_DRAM, it->dram_bytes, now);
    pw->dram_bytes += (double)it->dram_bytes;
    if (it->pim_j > 0)
        sv_power_add_energy_j(pn->dom, SV_POWER_DRAM, it->pim_j, now);
    double e = sv_power_total_energy_j(pn->dom, now);
    give(pw, it, e - pn->acc_j);
    pn->acc_j = e;
    g_ptr_array_remove(pn->running, it); /* keeps the others' order */
    for (int32_t d = 0; d < pw->inst_devs[i]; d++)
        sv_power_device_idle(pn->dom, pw->inst_first_dev[i] + d, now);
    g_ptr_array_add(pw->spare, it);
}

void sv_planner_power_set_pim(sv_planner_power *pw, int32_t node, int64_t channels, double idle_w,
                              double active_w)
{
    SV_ASSERT(node >= 0 && node < pw->n_nodes);
    sv_power_set_dram(pw->nodes[node].dom, channels, idle_w, 0);
    pw->pim_active_w[node] = active_w > idle_w ? active_w - idle_w : 0;
}

void sv_planner_power_iter_pim(sv_planner_power *pw, int32_t i, double busy_ns)
{
    power_iter *it = g_queue_peek_head(&pw->inflight[i]);
    SV_ASSERT(it != NULL);
    it->pim_j += pw->pim_active_w[pw->inst_node[i]] * busy_ns * 1e-9;
}

double sv_planner_power_request_take(sv_planner_power *pw, uint64_t request_id)
{
    req_energy *r = g_hash_table_lookup(pw->req_j, &request_id);
    if (!r)
        return 0;
    double j = r->j;
    g_hash_table_remove(pw->req_j, &request_id);
    return j;
}

void sv_planner_power_finish(sv_planner_power *pw, sv_time end_ns, struct sv_planner_energy *out)
{
    memset(out, 0, sizeof *out);
    ticks_before(pw, end_ns + 1); /* every tick up to and including end_ns */
    if (pw->last_row < end_ns)
        emit_row(pw, end_ns); /* the part of a tick before the end */
    for (int32_t n = 0; n < pw->n_nodes; n++) {
        account(pw, n, end_ns);
        const sv_power_domain *dom = pw->nodes[n].dom;
        for (int c = 0; c < SV_POWER_N_COMPONENTS; c++)
            out->by_component_j[c] += sv_power_energy_j(dom, c, end_ns);
        for (int d = 0; d < sv_power_num_devices(dom); d++)
            for (int s = 0; s < SV_POWER_N_STATES; s++)
                out->npu_state_j[s] += sv_power_device_state_energy_j(dom, d, s, end_ns);
        out->total_j += sv_power_total_energy_j(dom, end_ns);
    }
    out->attributed_j = pw->attributed_j;
    out->unattributed_j = pw->unattributed_j;
    out->dram_bytes = pw->dram_bytes;
}
