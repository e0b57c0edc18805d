/* The power model fed by the run (docs/power.md): one sv_power domain per node, the devices of
 * every instance on it, busy from an iteration's launch to its commit; DRAM traffic per
 * iteration; network and memory-tier traffic as it completes; DVFS; per-request attribution of
 * energy; power.csv's rows.
 *
 * Attribution, exactly conserved: at every state change of a node (an iteration of one of its
 * instances starts or ends) the energy since the node's previous change goes to the iterations
 * that ran in between (none: unattributed), split by their instances' device counts and, within
 * an iteration, by the requests' shares of its scheduled tokens. An iteration's DRAM traffic (an
 * impulse at its end) goes to that iteration alone. */
#include "planner/planner.h"
#include "planner/planner_internal.h"

#include <stdio.h>
#include <string.h>

/* One iteration in flight: its requests and their tokens, and its DRAM bytes. */
typedef struct {
    int32_t instance;
    GArray *reqs; /* struct sv_msg_sched_entry */
    int64_t tokens;
    uint64_t dram_bytes;
    double pim_j; /* PIM channels' active energy above idle (docs/pim.md) */
} power_iter;

/* The FFN group of an afd instance (docs/afd.md "Power"): its devices follow the attention ones
 * in the node's domain (inst_first_dev + attn .. + ffn_npus - 1), busy while an FFN operator
 * runs (sv_msg_afd_run.on_ffn_op); its weights are read once per micro-batch. A shared FFN group
 * (owner >= 0) registers its devices once, after the owner's attention devices (ffn is 0 for the
 * other members); its weight reads come per wave (sv_msg_afd_run.on_ffn_wave). */
struct power_afd {
    int32_t attn, ffn, micro_batches; /* attention devices, FFN devices, m; 0: no afd */
    int32_t owner;                    /* a shared FFN group's owner instance, else -1 */
    uint64_t mlp_bytes;               /* the MLP / MoE weights of the whole FFN group */
};

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
    int32_t npus_per_node; /* cluster network NPU id = node x npus_per_node + device */
    int dim_dev, dim_node; /* network dimension of a node's devices / of the nodes; -1: none */
    sv_net *net;           /* watched (sv_planner_power_watch), or NULL */
    int32_t *dev_node;     /* a graph network: per device its node, -1 = the fabric's; or NULL */
    int *route;            /* room for a graph route */
    sv_memtier_fabric *fabric;
    power_node *nodes;
    int32_t *inst_node, *inst_first_dev, *inst_devs; /* per instance; devs: both afd groups */
    int32_t *inst_busy_devs; /* per instance: busy for a whole iteration (afd: attention ones) */
    uint64_t *weight_bytes, *kv_bytes_per_token; /* per instance */
    struct power_afd *afd;                       /* per instance: FFN group (docs/afd.md) */
    uint64_t *ffn_dram;                          /* per instance: its share of its waves' reads */
    double *pim_active_w;                        /* per node: PIM (peak - idle) per channel */
    GQueue *inflight;                            /* per instance: power_iter*, FIFO */
    GPtrArray *spare;                            /* recycled power_iter* */
    GHashTable *req_j;                           /* request id -> req_energy (owned) */
    double attributed_j, unattributed_j, dram_bytes;
    double link_bytes, switch_bytes, nic_bytes, storage_bytes;
    /* power.csv */
    void (*row)(void *ctx, const struct sv_planner_power_row *r);
    void *row_ctx;
    sv_time next_tick, last_row;
    sv_time last_change; /* latest time a domain was told of a change (ticks_before) */
    double *prev_j;      /* [n_nodes x components] at the last row */
    double *row_w, *row_node_j;
};

static void iter_free(power_iter *it)
{
    if (!it)
        return;
    g_array_free(it->reqs, TRUE);
    g_free(it);
}

/* Catalog defaults for a missing `npu.<hardware>` entry (docs/power.md "Defaults from the
 * hardware catalog"): idle = the catalog's idle_w, active = its tdp_w (board power at full load),
 * standby = their midpoint, standby_duration 18 s. The midpoint is servesim's rule, not a
 * measurement: LLMServingSim's two shipped configs put standby at 47% (RTXPRO6000: 300 W of
 * 35..600) and 21% (A6000, ISPASS'26 figure 6: 89 W of 33..300) of the idle-to-active span; 18 s
 * is the standby_duration both use. */
#define CATALOG_STANDBY_S 18

static gboolean catalog_npu(const sv_compute_hw_catalog *cat, const struct sv_power_node_cfg *pc,
                            const char *hardware, struct sv_power_npu_cfg *out, GError **error)
{
    struct sv_compute_hw_cfg hw;
    if (!sv_compute_hw_catalog_lookup(cat, hardware, &hw, NULL) || !(hw.tdp_w > 0) ||
        !(hw.idle_w > 0)) {
        g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                    "%s.npu.%s: missing, and the hardware catalog has no power figures for %s "
                    "(give idle_power, standby_power, active_power and standby_duration)",
                    pc->where ? pc->where : "power", hardware, hardware);
        return FALSE;
    }
    *out = (struct sv_power_npu_cfg){
        .hardware = (char *)hardware,
        .idle_w = hw.idle_w,
        .active_w = hw.tdp_w,
        .standby_w = (hw.idle_w + hw.tdp_w) / 2,
        .standby_ns = (sv_time)CATALOG_STANDBY_S * SV_NS_PER_S,
    };
    g_message("%s.npu.%s: not given: the hardware catalog's %s is used: idle %g W, active %g W "
              "(TDP), standby %g W (midpoint), standby_duration %d s (docs/power.md)",
              pc->where ? pc->where : "power", hardware, hw.name, out->idle_w, out->active_w,
              out->standby_w, CATALOG_STANDBY_S);
    return TRUE;
}

/* The entry of an afd instance's FFN hardware (its canonical catalog name, msg/afd.c) in a node's
 * power block, resolved as an instance's hardware is: the entry of that name, else the first entry
 * (in the block's order) whose name the catalog resolves to the same device (a block that writes
 * `npu.A100` for `"ffn_hardware": "A100"`, stored as A100-80GB, or for an instance's "hardware":
 * "A100" next to it: heterogeneous NPUs of one node each take their own hardware's entry), else
 * the catalog's figures (catalog_npu). */
static gboolean ffn_npu_resolved(const struct sv_planner_cluster_cfg *c,
                                 struct sv_power_node_cfg *out, const char *hardware,
                                 GError **error)
{
    if (sv_power_node_cfg_npu(out, hardware))
        return TRUE;
    for (guint k = 0; k < out->n_npu; k++) {
        struct sv_compute_hw_cfg hw;
        if (sv_compute_hw_catalog_lookup(c->hw_catalog, out->npu[k].hardware, &hw, NULL) &&
            strcmp(hw.name, hardware) == 0) {
            struct sv_power_npu_cfg npu = out->npu[k];
            npu.hardware = (char *)hardware;
            sv_power_node_cfg_add_npu(out, &npu);
            return TRUE;
        }
    }
    struct sv_power_npu_cfg npu;
    if (!catalog_npu(c->hw_catalog, out, hardware, &npu, error))
        return FALSE;
    sv_power_node_cfg_add_npu(out, &npu);
    return TRUE;
}

/* Node n's power config with a catalog entry for every instance hardware it lacks. */
static gboolean node_cfg_resolved(const struct sv_planner_cluster_cfg *c, int32_t n,
                                  struct sv_power_node_cfg *out, GError **error)
{
    sv_power_node_cfg_copy(out, &c->nodes[n].power);
    for (int32_t i = 0; i < c->n_instances; i++) {
        const struct sv_planner_instance_cfg *ic = &c->instances[i];
        if (ic->node != n || sv_power_node_cfg_npu(out, ic->hardware))
            continue;
        struct sv_power_npu_cfg npu;
        if (!catalog_npu(c->hw_catalog, out, ic->hardware, &npu, error)) {
            sv_power_node_cfg_clear(out);
            return FALSE;
        }
        sv_power_node_cfg_add_npu(out, &npu);
    }
    for (int32_t i = 0; i < c->n_instances; i++)
        if (c->instances[i].node == n && c->instances[i].afd.micro_batches > 0 &&
            !ffn_npu_resolved(c, out, c->instances[i].afd.ffn_hardware, error)) {
            sv_power_node_cfg_clear(out);
            return FALSE;
        }
    return TRUE;
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
    pw->inst_busy_devs = g_new0(int32_t, (size_t)c->n_instances);
    pw->afd = g_new0(struct power_afd, (size_t)c->n_instances);
    pw->ffn_dram = g_new0(uint64_t, (size_t)c->n_instances);
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
    for (int32_t n = 0; n < c->n_nodes; n++)
        pw->nodes[n].running = g_ptr_array_new();
    for (int32_t n = 0; n < c->n_nodes; n++) {
        struct sv_power_node_cfg nc;
        if (!node_cfg_resolved(c, n, &nc, error)) {
            sv_planner_power_free(pw);
            return NULL;
        }
        pw->nodes[n].dom = sv_power_domain_new(&nc, 0);
        sv_power_node_cfg_clear(&nc);
    }
    /* The cluster network's layout (planner/cluster_net.c): dim 0 the devices of a node when a
     * node has more than one, then the nodes when there are several. */
    struct sv_net_topo_cfg topo;
    int32_t ppn = 1;
    if (!sv_planner_cluster_topo(c, &topo, &ppn, NULL))
        ppn = 1; /* no network can be built either: the run fails on it, not here */
    pw->npus_per_node = MAX(ppn, 1);
    pw->dim_dev = ppn > 1 ? 0 : -1;
    pw->dim_node = c->n_nodes > 1 ? (ppn > 1 ? 1 : 0) : -1;
    for (int32_t i = 0; i < c->n_instances; i++) {
        const struct sv_planner_instance_cfg *ic = &c->instances[i];
        SV_ASSERT(ic->node >= 0 && ic->node < c->n_nodes);
        pw->inst_node[i] = ic->node;
        pw->inst_busy_devs[i] = ic->num_npus;
        /* An afd instance's FFN devices right after its attention devices, with the FFN
         * hardware's entry (node_cfg_resolved); they count in its device share (account). A
         * shared FFN group's once, after its owner's attention devices, as the cluster places
         * them (sv_planner_instance_devices), shared by the members in its waves (account). */
        int32_t own = ic->afd_group_size > 0 ? ic->afd_group_owner : -1;
        if (own >= 0 && c->instances[own].node != ic->node) {
            g_autofree char *path = g_strdup_printf("%s.ffn_group", ic->afd_where);
            sv_planner__path_error(
                error, path,
                "\"%s\": under the power model the members of a shared FFN group must be on "
                "the node of its first member (nodes[%d], which holds the FFN devices): their "
                "draw is split over the members on that node (docs/afd.md \"Power\")",
                ic->afd.ffn_group, c->instances[own].node);
            sv_planner_power_free(pw);
            return NULL;
        }
        int32_t ffn = ic->afd.micro_batches > 0 && (own < 0 || own == i) ? ic->afd.ffn_npus : 0;
        pw->inst_devs[i] = ic->num_npus + ffn;
        pw->afd[i] = (struct power_afd){.attn = ic->num_npus,
                                        .ffn = ffn,
                                        .micro_batches =
                                            ic->afd.micro_batches > 0 ? ic->afd.micro_batches : 0,
                                        .owner = own};
        g_queue_init(&pw->inflight[i]);
        for (int32_t d = 0; d < ic->num_npus + ffn; d++) {
            GError *e = NULL;
            const char *hw = d < ic->num_npus ? ic->hardware : ic->afd.ffn_hardware;
            int dev = sv_power_device_add(pw->nodes[ic->node].dom, hw, &e);
            if (dev < 0) {
                g_set_error(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID,
                            "%s: nodes[%d].instances (instance %d, hardware %s): %s", c->where,
                            ic->node, i, hw, e->message);
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
    if (pw->net)
        sv_net_set_observer(pw->net, NULL, NULL);
    g_free(pw->dev_node);
    g_free(pw->route);
    if (pw->fabric)
        sv_memtier_fabric_set_observer(pw->fabric, NULL, NULL);
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
    g_free(pw->inst_busy_devs);
    g_free(pw->afd);
    g_free(pw->ffn_dram);
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

/* The earliest time after t at which some node's draw changes by itself (a standby window
 * ends). */
static sv_time next_change(const sv_planner_power *pw, sv_time t)
{
    sv_time next = SV_TIME_MAX;
    for (int32_t n = 0; n < pw->n_nodes; n++)
        next = MIN(next, sv_power_next_change(pw->nodes[n].dom, t));
    return next;
}

/* Rows of the ticks before `t`, before any domain changes at t (a domain answers queries at
 * times no earlier than its last change). Idle time costs nothing (docs/outputs.md, "Quiet
 * ticks"): when the power of every node is constant from the start of a row's interval to a
 * later row's end (no change reported, no standby window ending), the rows between are left
 * out; the later row is computed over its own interval, exactly as if every row had been
 * written, so the rows left out have the power of both. */
static void ticks_before(sv_planner_power *pw, sv_time t)
{
    const sv_time tick = SV_PLANNER_POWER_TICK_NS;
    while (pw->next_tick < t) {
        sv_time first = pw->next_tick;
        if (pw->last_change <= first - tick) {
            sv_time until = MIN(t - 1, next_change(pw, first - tick));
            sv_time last = until / tick * tick; /* the last row inside the constant stretch */
            if (last >= first + 2 * tick) {
                emit_row(pw, first);
                for (int32_t n = 0; n < pw->n_nodes; n++)
                    for (int c = 0; c < SV_POWER_N_COMPONENTS; c++)
                        pw->prev_j[(size_t)n * SV_POWER_N_COMPONENTS + (size_t)c] =
                            sv_power_energy_j(pw->nodes[n].dom, c, last - tick);
                pw->last_row = last - tick;
                emit_row(pw, last);
                pw->next_tick = last + tick;
                continue;
            }
        }
        emit_row(pw, first);
        pw->next_tick += tick;
    }
    pw->last_change = MAX(pw->last_change, t);
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

/* The devices an iteration counts in its node's split (docs/power.md "Attribution to requests"):
 * its instance's own devices, and for a member of a shared FFN group its attention devices plus
 * ffn_npus / k of the group's FFN devices, k the members with an iteration running on the node
 * (every member is on the owner's node: sv_planner_power_new). */
static double dev_share(const sv_planner_power *pw, const power_node *pn, const power_iter *it)
{
    const struct power_afd *a = &pw->afd[it->instance];
    if (a->owner < 0)
        return (double)pw->inst_devs[it->instance];
    int32_t k = 0;
    for (guint q = 0; q < pn->running->len; q++)
        k += pw->afd[((const power_iter *)g_ptr_array_index(pn->running, q))->instance].owner ==
             a->owner;
    return (double)a->attn + (double)pw->afd[a->owner].ffn / (double)k;
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
    double devs = 0;
    for (guint k = 0; k < pn->running->len; k++)
        devs += dev_share(pw, pn, g_ptr_array_index(pn->running, k));
    for (guint k = 0; k < pn->running->len; k++) {
        const power_iter *it = g_ptr_array_index(pn->running, k);
        give(pw, it, d * dev_share(pw, pn, it) / devs);
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
    /* The FFN group reads its weights once per micro-batch (a shared one: on_ffn_wave). */
    if (pw->afd[i].micro_batches > 0 && pw->afd[i].owner < 0)
        it->dram_bytes += pw->afd[i].mlp_bytes * (uint64_t)MIN((guint)pw->afd[i].micro_batches, n);
    it->pim_j = 0;
    g_queue_push_tail(&pw->inflight[i], it);
    g_ptr_array_add(pw->nodes[node].running, it);
    for (int32_t d = 0; d < pw->inst_busy_devs[i]; d++)
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
    /* The iteration's DRAM traffic: an impulse at its end, its own (a shared FFN group member:
     * with its share of its wave's weight reads). */
    it->dram_bytes += pw->ffn_dram[i];
    pw->ffn_dram[i] = 0;
    sv_power_bytes(pn->dom, SV_POWER_DRAM, it->dram_bytes, now);
    pw->dram_bytes += (double)it->dram_bytes;
    if (it->pim_j > 0)
        sv_power_add_energy_j(pn->dom, SV_POWER_DRAM, it->pim_j, now);
    double e = sv_power_total_energy_j(pn->dom, now);
    give(pw, it, e - pn->acc_j);
    pn->acc_j = e;
    g_ptr_array_remove(pn->running, it); /* keeps the others' order */
    for (int32_t d = 0; d < pw->inst_busy_devs[i]; d++)
        sv_power_device_idle(pn->dom, pw->inst_first_dev[i] + d, now);
    g_ptr_array_add(pw->spare, it);
}

/* An FFN rank of an afd instance starts or ends an operator (msg/afd_run.c): its device is active
 * while one runs, then standby and idle as any device after its last compute (power/). The
 * iteration it belongs to is running on the node, so its draw goes to that iteration's requests
 * at the next accounted change (account). */
static void on_ffn_op(void *ctx, int32_t i, int32_t rank, gboolean busy, sv_time now)
{
    sv_planner_power *pw = ctx;
    SV_ASSERT(i >= 0 && i < pw->n_inst && rank >= 0 && rank < pw->afd[i].ffn);
    sv_power_domain *dom = pw->nodes[pw->inst_node[i]].dom;
    int dev = pw->inst_first_dev[i] + pw->afd[i].attn + rank;
    ticks_before(pw, now);
    if (busy)
        sv_power_device_busy(dom, dev, now);
    else
        sv_power_device_idle(dom, dev, now);
}

/* A wave of a shared FFN group starts (msg/afd_group.c): its FFN ranks read the group's MLP / MoE
 * weights once per micro-batch, `passes` in all, split evenly over the members in the wave (the
 * remainder bytes to the first ones), each member's share charged at its iteration's end. */
static void on_ffn_wave(void *ctx, const int32_t *members, int32_t n, int32_t passes, sv_time now)
{
    sv_planner_power *pw = ctx;
    (void)now;
    SV_ASSERT(n >= 1 && passes >= 1);
    const struct power_afd *a = &pw->afd[members[0]];
    SV_ASSERT(a->owner >= 0);
    uint64_t total = pw->afd[a->owner].mlp_bytes * (uint64_t)passes;
    for (int32_t k = 0; k < n; k++)
        pw->ffn_dram[members[k]] += total / (uint64_t)n + ((uint64_t)k < total % (uint64_t)n);
}

void sv_planner_power_afd(sv_planner_power *pw, int32_t i, const struct sv_compute_model_cfg *m,
                          struct sv_msg_afd_run *afd)
{
    SV_ASSERT(i >= 0 && i < pw->n_inst);
    struct power_afd *a = &pw->afd[i];
    if (a->micro_batches <= 0 || afd->micro_batches <= 0)
        return;
    SV_ASSERT(afd->ffn_npus == a->ffn || (a->owner >= 0 && a->owner != i && a->ffn == 0));
    /* DRAM per iteration (docs/power.md): the attention ranks read their weights once, the FFN
     * group its MLP / MoE weights once per micro-batch (sv_planner_power_iter_start). */
    uint64_t mlp_attn = sv_compute_model_mlp_weight_bytes(m, a->attn) * (uint64_t)a->attn;
    SV_ASSERT(pw->weight_bytes[i] >= mlp_attn); /* set_traffic first: every weight at tp */
    pw->weight_bytes[i] -= mlp_attn;
    a->mlp_bytes = sv_compute_model_mlp_weight_bytes(m, afd->ffn_npus) * (uint64_t)afd->ffn_npus;
    afd->on_ffn_op = on_ffn_op;
    afd->ffn_op_ctx = pw;
    if (a->owner >= 0)
        afd->on_ffn_wave = on_ffn_wave;
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

/* ---- traffic from the run (docs/power.md "Traffic") ------------------------------------------
 *
 * Impulses at the time the bytes arrive, in the domain of the node they cross. Like the power
 * draw, they go to the iterations running on that node at the next accounted change (none:
 * unattributed). */

/* A network message: inside a node, bytes x links crossed on the node's link component and
 * bytes x switches crossed on its switches; dimension-ordered routes cross a node's devices
 * first, so those hops are on the sending NPU's node. Between nodes, the NIC of each end. The
 * inter-node fabric's own links and switches belong to no node's power block: not charged. */
static void on_graph_delivery(sv_planner_power *pw, const struct sv_net_delivery *d);

static void on_net_delivery(void *ctx, const struct sv_net_delivery *d)
{
    sv_planner_power *pw = ctx;
    if (pw->dev_node != NULL) {
        on_graph_delivery(pw, d);
        return;
    }
    int links[SV_NET_MAX_DIMS], sws[SV_NET_MAX_DIMS];
    sv_net_route_dims(pw->net, d->src, d->dst, links, sws);
    int32_t sn = d->src / pw->npus_per_node, dn = d->dst / pw->npus_per_node;
    SV_ASSERT(sn < pw->n_nodes && dn < pw->n_nodes);
    ticks_before(pw, d->now);
    if (pw->dim_dev >= 0 && links[pw->dim_dev] > 0) {
        uint64_t lb = d->bytes * (uint64_t)links[pw->dim_dev];
        sv_power_bytes(pw->nodes[sn].dom, SV_POWER_LINK, lb, d->now);
        pw->link_bytes += (double)lb;
        if (sws[pw->dim_dev] > 0) {
            uint64_t sb = d->bytes * (uint64_t)sws[pw->dim_dev];
            sv_power_switch_bytes(pw->nodes[sn].dom, sb, d->now);
            pw->switch_bytes += (double)sb;
        }
    }
    if (pw->dim_node >= 0 && links[pw->dim_node] > 0) {
        sv_power_bytes(pw->nodes[sn].dom, SV_POWER_NIC, d->bytes, d->now);
        sv_power_bytes(pw->nodes[dn].dom, SV_POWER_NIC, d->bytes, d->now);
        pw->nic_bytes += 2.0 * (double)d->bytes;
    }
}

/* On an explicit fabric graph (docs/cluster-network.md "An explicit fabric graph"), the same
 * rules link by link: a link whose two ends are one node's devices (its NPUs, its node switch)
 * is charged to that node's `link`, each of that node's switches crossed to its `switch`; links
 * and switches of the fabric (the graph's own switches: NICs, spines) belong to no node's power
 * block, as the fabric level's do; a message between nodes adds bytes at both nodes' `nic`. */
static void on_graph_delivery(sv_planner_power *pw, const struct sv_net_delivery *d)
{
    int n = sv_net_route_links(pw->net, d->src, d->dst, pw->route, NULL);
    int32_t sn = d->src / pw->npus_per_node, dn = d->dst / pw->npus_per_node;
    ticks_before(pw, d->now);
    for (int h = 0; h < n; h++) {
        int a, b;
        sv_net_link_ends(pw->net, pw->route[h], &a, &b, NULL);
        int32_t na = pw->dev_node[a], nb = pw->dev_node[b];
        if (na >= 0 && na == nb) {
            sv_power_bytes(pw->nodes[na].dom, SV_POWER_LINK, d->bytes, d->now);
            pw->link_bytes += (double)d->bytes;
        }
        if (h + 1 < n && b >= sv_net_npus(pw->net) && nb >= 0) {
            sv_power_switch_bytes(pw->nodes[nb].dom, d->bytes, d->now);
            pw->switch_bytes += (double)d->bytes;
        }
    }
    if (sn != dn) {
        sv_power_bytes(pw->nodes[sn].dom, SV_POWER_NIC, d->bytes, d->now);
        sv_power_bytes(pw->nodes[dn].dom, SV_POWER_NIC, d->bytes, d->now);
        pw->nic_bytes += 2.0 * (double)d->bytes;
    }
}

/* One end of a memory-tier leg: host DRAM and CXL on the node's dram, SSD on its storage; the
 * HBM end is the iteration estimate's business (not charged twice). A cluster-scope CXL device
 * (node -1) is charged to the node at the other end, whose port the bytes cross. */
static void tier_end(sv_planner_power *pw, const struct sv_memtier_loc *loc, int32_t node,
                     int32_t other_node, uint64_t bytes, sv_time now)
{
    if (node < 0)
        node = other_node;
    if (node < 0 || node >= pw->n_nodes)
        return;
    switch (loc->kind) {
    case SV_MEMTIER_DRAM:
    case SV_MEMTIER_CXL:
        sv_power_bytes(pw->nodes[node].dom, SV_POWER_DRAM, bytes, now);
        pw->dram_bytes += (double)bytes;
        break;
    case SV_MEMTIER_SSD:
        sv_power_bytes(pw->nodes[node].dom, SV_POWER_STORAGE, bytes, now);
        pw->storage_bytes += (double)bytes;
        break;
    default:
        break;
    }
}

/* A fabric leg: its two ends, and the NICs of both nodes when it crosses between nodes (a remote
 * host-DRAM hit of the cluster prefix pool travels over the network). */
static void on_tier_leg(void *ctx, const struct sv_memtier_xfer_report *r)
{
    sv_planner_power *pw = ctx;
    ticks_before(pw, r->now);
    tier_end(pw, &r->src, r->src_node, r->dst_node, r->bytes, r->now);
    tier_end(pw, &r->dst, r->dst_node, r->src_node, r->bytes, r->now);
    if (r->src_node >= 0 && r->dst_node >= 0 && r->src_node != r->dst_node &&
        r->src_node < pw->n_nodes && r->dst_node < pw->n_nodes) {
        sv_power_bytes(pw->nodes[r->src_node].dom, SV_POWER_NIC, r->bytes, r->now);
        sv_power_bytes(pw->nodes[r->dst_node].dom, SV_POWER_NIC, r->bytes, r->now);
        pw->nic_bytes += 2.0 * (double)r->bytes;
    }
}

void sv_planner_power_watch(sv_planner_power *pw, sv_net *net, sv_memtier_fabric *fabric)
{
    SV_ASSERT(pw->net == NULL && pw->fabric == NULL);
    pw->net = net;
    pw->fabric = fabric;
    if (net) {
        SV_ASSERT(sv_net_npus(net) <= pw->n_nodes * pw->npus_per_node);
        const struct sv_net_graph_cfg *g = sv_net_graph(net);
        if (g != NULL) {
            /* NPUs by their id; a switch is node n's when planner/fabric_graph.c named it
             * node<n>.switch (the graph's own switches are the fabric's) */
            int nd = g->npus + g->nswitches;
            pw->dev_node = g_new(int32_t, (size_t)nd);
            for (int v = 0; v < nd; v++) {
                int node = -1, end = 0;
                if (v < g->npus)
                    node = v / pw->npus_per_node;
                else if (g->names != NULL && g->names[v] != NULL &&
                         sscanf(g->names[v], "node%d.switch%n", &node, &end) == 1 &&
                         g->names[v][end] == '\0' && node >= 0 && node < pw->n_nodes) {
                    /* node set */
                } else {
                    node = -1;
                }
                pw->dev_node[v] = node;
            }
            pw->route = g_new(int, (size_t)MAX(1, sv_net_route_max_links(net)));
        }
        sv_net_set_observer(net, on_net_delivery, pw);
    }
    if (fabric)
        sv_memtier_fabric_set_observer(fabric, on_tier_leg, pw);
}

/* ---- DVFS (docs/power.md "DVFS") ------------------------------------------------------------ */

void sv_planner_power_set_clock(sv_planner_power *pw, int32_t i, double clock)
{
    SV_ASSERT(i >= 0 && i < pw->n_inst);
    sv_power_domain *dom = pw->nodes[pw->inst_node[i]].dom;
    for (int32_t d = 0; d < pw->inst_devs[i]; d++)
        sv_power_device_set_clock(dom, pw->inst_first_dev[i] + d, clock, 0);
}

double sv_planner_apply_gpu_clock(const struct sv_planner_run_cfg *cfg,
                                  const struct sv_planner_instance_cfg *ic, sv_compute_latency *lat)
{
    double clock = cfg->gpu_clock > 0 ? cfg->gpu_clock : ic->gpu_clock > 0 ? ic->gpu_clock : 1.0;
    SV_ASSERT(clock > 0 && clock <= 1.0); /* checked where it is read */
    if (clock == 1.0)
        return clock;
    struct sv_compute_hw_cfg hw;
    gboolean known =
        sv_compute_hw_catalog_lookup(cfg->cluster->hw_catalog, ic->hardware, &hw, NULL);
    if (!known)
        g_message("instance %d (%s): hardware not in the catalog: at gpu_clock %g every operator "
                  "takes 1/%g as long (no roofline split into compute and memory; docs/power.md)",
                  ic->index, ic->hardware, clock, clock);
    sv_compute_latency_set_clock(lat, clock, known ? &hw : NULL);
    return clock;
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
    out->link_bytes = pw->link_bytes;
    out->switch_bytes = pw->switch_bytes;
    out->nic_bytes = pw->nic_bytes;
    out->storage_bytes = pw->storage_bytes;
}
