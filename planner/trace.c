/* The run's timeline (--trace; docs/trace.md): what the run does, handed as plain records to the
 * trace writer of metrics/ (metrics/trace.c writes the JSON). Nothing here feeds the model: the
 * run's observer is wrapped (every record goes on to the caller's observer unchanged), the
 * serving groups report their finished DAG nodes through sv_msg_hooks.on_op, and the PD hand-off
 * its KV transfers.
 *
 * Tracks: process = instance i (pid i); in it, thread 0 "iterations" (one slice per iteration,
 * launch -> commit), per NPU d thread 1 + 2d "npu d" (compute and PIM nodes) and 2 + 2d
 * "npu d comm" (collectives, sends, memory loads and stores), and "kv send" / "kv recv" (the
 * KV transfers of disaggregation, with a flow from one to the other); counters per instance (KV
 * cache %, running / waiting); requests as async slices under the instance that served them
 * (rejected ones under the "router" process); memory tiers and power per node as counters of
 * their own processes. */
#include "dag/dag.h"
#include "planner/planner_internal.h"

#include <string.h>

#define TID_ITER 0
#define TID_KV_SEND 90001
#define TID_KV_RECV 90002
#define PID_POWER 10000 /* + node */
#define PID_TIERS 20000
#define PID_ROUTER 30000
#define PID_NETWORK 40000 /* links: thread 1 + link id */
#define MAX_SPANS 256     /* request, queued, prefill + chunks, kv transfer, decode */

/* A prefill chunk of a request: the iteration it ran in, its tokens, the history before it. */
typedef struct {
    sv_time begin, end;
    int64_t tokens, before;
} trace_chunk;

/* A launched iteration of an instance, waiting for its commit. */
typedef struct {
    sv_time start;
    GArray *entries; /* struct sv_msg_sched_entry: the chunks among its requests */
} trace_launch;

struct sv_planner_trace {
    sv_metrics_trace *w;
    const struct sv_planner_run_observer *inner; /* the caller's observer (may be NULL) */
    struct sv_planner_run_observer obs;          /* the wrapper */
    struct sv_planner_run_cfg cfg;               /* the caller's, with obs */
    const struct sv_planner_cluster_cfg *cl;
    GQueue *launches;    /* [instance]: trace_launch*, launch order */
    GHashTable *chunks;  /* request id -> GArray of trace_chunk, until it finishes */
    GHashTable *devices; /* (instance, device) declared */
    gboolean tiers_declared, router_declared, network_declared;
    GHashTable *links; /* link ids declared (set) */
    sv_net *net;       /* the cluster network tapped (sv_planner__trace_links), or NULL */
    int *route;        /* scratch: a route's link ids */
    int route_cap;
    gboolean *nodes_declared;
    sv_time power_prev_ns;
};

static void launch_free(trace_launch *l)
{
    g_array_free(l->entries, TRUE);
    g_free(l);
}

static void chunks_free(GArray *a)
{
    g_array_free(a, TRUE);
}

/* ---- requests -------------------------------------------------------------------------------- */

static void add_span(struct sv_metrics_trace_span *s, int *n, const char *name, int depth,
                     sv_time b, sv_time e, const char *args)
{
    if (*n >= MAX_SPANS || b < 0 || e < 0)
        return;
    s[(*n)++] = (struct sv_metrics_trace_span){name, depth, b, MAX(b, e), args};
}

static void trace_request(sv_planner_trace *tr, const struct sv_wl_outcome *o)
{
    g_autoptr(GArray) chunks = NULL;
    gpointer key = NULL, val = NULL;
    if (g_hash_table_steal_extended(tr->chunks, &o->request_id, &key, &val)) {
        g_free(key);
        chunks = val;
    }
    struct sv_metrics_trace_span s[MAX_SPANS];
    int n = 0;
    char name[64];
    if (o->reject != SV_WL_REJECT_NONE || o->instance < 0) {
        if (!tr->router_declared) {
            sv_metrics_trace_process(tr->w, PID_ROUTER, "router (rejected requests)");
            tr->router_declared = TRUE;
        }
        g_snprintf(name, sizeof name, "request %" G_GUINT64_FORMAT " rejected", o->request_id);
        g_autofree char *args =
            g_strdup_printf("{\"reason\":%d,\"input_tokens\":%" G_GINT64_FORMAT "}", (int)o->reject,
                            o->input_tokens);
        add_span(s, &n, name, 0, o->arrival_ns, o->arrival_ns, args);
        sv_metrics_trace_async(tr->w, PID_ROUTER, "request", o->request_id, s, n);
        return;
    }
    if (!sv_metrics_trace_overlaps(tr->w, o->arrival_ns, o->last_token_ns))
        return;
    gboolean pd = o->prefill_instance >= 0 && o->kv_ready_ns >= 0 && o->prefill_done_ns >= 0;
    sv_time prefill_end = pd ? o->prefill_done_ns : o->first_token_ns;
    sv_time decode_begin = pd ? o->kv_ready_ns : o->first_token_ns;
    g_snprintf(name, sizeof name, "request %" G_GUINT64_FORMAT, o->request_id);
    g_autofree char *args = g_strdup_printf(
        "{\"input_tokens\":%" G_GINT64_FORMAT ",\"output_tokens\":%" G_GINT64_FORMAT
        ",\"ttft_ns\":%" G_GINT64_FORMAT ",\"e2e_ns\":%" G_GINT64_FORMAT
        ",\"prefix_hit_tokens\":%" G_GINT64_FORMAT ",\"preemptions\":%u,\"prefill_instance\":%d}",
        o->input_tokens, o->output_tokens, o->first_token_ns - o->arrival_ns,
        o->last_token_ns - o->arrival_ns, o->prefix_hit_tokens, o->preemptions,
        (int)(pd ? o->prefill_instance : o->instance));
    add_span(s, &n, name, 0, o->arrival_ns, o->last_token_ns, args);
    add_span(s, &n, "queued", 1, o->arrival_ns, o->first_scheduled_ns, NULL);
    add_span(s, &n, "prefill", 1, o->first_scheduled_ns, prefill_end, NULL);
    /* Chunk args live until the track is written. */
    char chunk_args[MAX_SPANS][128];
    sv_time last = o->first_scheduled_ns;
    for (guint k = 0; chunks && k < chunks->len; k++) {
        const trace_chunk *c = &g_array_index(chunks, trace_chunk, k);
        if (c->before >= o->input_tokens || n >= MAX_SPANS - 3)
            continue; /* not the prompt: a decode step */
        /* With async scheduling the next chunk launches while the host finishes this one: a
         * chunk's span starts when the previous one ended (its launch is in its args). */
        g_snprintf(chunk_args[n], sizeof chunk_args[n],
                   "{\"tokens\":%" G_GINT64_FORMAT ",\"computed_before\":%" G_GINT64_FORMAT
                   ",\"launch_ns\":%" G_GINT64_FORMAT "}",
                   c->tokens, c->before, c->begin);
        sv_time b = MAX(c->begin, last), e = MIN(MAX(c->end, b), prefill_end);
        if (b >= prefill_end)
            continue; /* a recomputation after a preemption past the first token */
        add_span(s, &n, "prefill chunk", 2, b, e, chunk_args[n]);
        last = e;
    }
    if (pd)
        add_span(s, &n, "kv transfer", 1, o->prefill_done_ns, o->kv_ready_ns, NULL);
    add_span(s, &n, "decode", 1, decode_begin, o->last_token_ns, NULL);
    sv_metrics_trace_async(tr->w, o->instance, "request", o->request_id, s, n);
}

/* ---- iterations and counters ----------------------------------------------------------------- */

void sv_planner__trace_iter_start(sv_planner_trace *tr, int32_t instance, sv_time now,
                                  const struct sv_msg_sched_entry *e, guint n)
{
    if (!tr)
        return;
    trace_launch *l = g_new0(trace_launch, 1);
    l->start = now;
    l->entries = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_sched_entry));
    /* A chunk: more than one token, or the first step of a request (a one-token prompt). */
    for (guint k = 0; k < n; k++)
        if (e[k].num_new > 1 || !g_hash_table_contains(tr->chunks, &e[k].request_id))
            g_array_append_val(l->entries, e[k]);
    g_queue_push_tail(&tr->launches[instance], l);
}

static void trace_iteration(sv_planner_trace *tr, const struct sv_msg_iter_done *it)
{
    int32_t i = it->instance;
    char args[128];
    g_snprintf(args, sizeof args,
               "{\"iteration\":%" G_GUINT64_FORMAT
               ",\"prefill\":%u,\"decode\":%u,\"scheduled_tokens\":%" G_GINT64_FORMAT "}",
               it->iteration, it->n_prefill, it->n_decode, it->scheduled_tokens);
    sv_metrics_trace_slice(tr->w, i, TID_ITER, "iteration",
                           it->n_prefill + it->n_decode == 0 ? "dummy step"
                           : it->n_prefill == 0              ? "decode step"
                           : it->n_decode == 0               ? "prefill step"
                                                             : "mixed step",
                           it->start_ns, it->end_ns, args);
    if (it->n_prefill + it->n_decode > 0 && !g_queue_is_empty(&tr->launches[i])) {
        trace_launch *l = g_queue_pop_head(&tr->launches[i]);
        for (guint k = 0; k < l->entries->len; k++) {
            const struct sv_msg_sched_entry *e =
                &g_array_index(l->entries, struct sv_msg_sched_entry, k);
            GArray *a = g_hash_table_lookup(tr->chunks, &e->request_id);
            if (!a) {
                a = g_array_new(FALSE, FALSE, sizeof(trace_chunk));
                g_hash_table_insert(tr->chunks, g_memdup2(&e->request_id, sizeof(uint64_t)), a);
            }
            trace_chunk c = {l->start, it->end_ns, e->num_new, e->computed_before};
            g_array_append_val(a, c);
        }
        launch_free(l);
    }
    static const char *const kv_key[] = {"kv_cache_pct"};
    static const char *const rq_key[] = {"running", "waiting"};
    double kv = it->kv_usage * 100.0, rq[2] = {it->running, it->waiting};
    sv_metrics_trace_counter(tr->w, i, "kv cache %", it->end_ns, 1, kv_key, &kv);
    sv_metrics_trace_counter(tr->w, i, "requests", it->end_ns, 2, rq_key, rq);
}

static void trace_tiers(sv_planner_trace *tr, sv_time t, const struct sv_planner_tier_usage *u)
{
    if (!tr->tiers_declared) {
        sv_metrics_trace_process(tr->w, PID_TIERS, "memory tiers");
        tr->tiers_declared = TRUE;
    }
    const char *keys[SV_MEMTIER_KIND_COUNT];
    double v[SV_MEMTIER_KIND_COUNT];
    int n = 0;
    for (int k = 0; k < SV_MEMTIER_KIND_COUNT; k++) {
        if (u->capacity[k] == 0)
            continue;
        keys[n] = sv_memtier_kind_name(k);
        v[n++] = (double)u->used[k] / (double)(1u << 30);
    }
    sv_metrics_trace_counter(tr->w, PID_TIERS, "used GiB", t, n, keys, v);
}

/* power.csv's row is the average over (previous row, t]: the counter takes it from the previous
 * row's time. */
static void trace_power(sv_planner_trace *tr, const struct sv_planner_power_row *r)
{
    const char *keys[SV_POWER_N_COMPONENTS];
    for (int c = 0; c < SV_POWER_N_COMPONENTS; c++)
        keys[c] = sv_power_component_name(c);
    for (int32_t node = 0; node < r->n_nodes && node < tr->cl->n_nodes; node++) {
        if (!tr->nodes_declared[node]) {
            g_autofree char *pn = g_strdup_printf("node %d power", (int)node);
            sv_metrics_trace_process(tr->w, PID_POWER + node, pn);
            tr->nodes_declared[node] = TRUE;
        }
        sv_metrics_trace_counter(tr->w, PID_POWER + node, "power W", tr->power_prev_ns,
                                 SV_POWER_N_COMPONENTS, keys,
                                 r->w + (size_t)node * SV_POWER_N_COMPONENTS);
    }
    tr->power_prev_ns = r->t_ns;
}

/* ---- the observer wrapper -------------------------------------------------------------------- */

static void w_request(void *ctx, const struct sv_wl_outcome *rec)
{
    sv_planner_trace *tr = ctx;
    if (tr->inner && tr->inner->on_request)
        tr->inner->on_request(tr->inner->ctx, rec);
    trace_request(tr, rec);
}

static void w_iteration(void *ctx, const struct sv_msg_iter_done *it)
{
    sv_planner_trace *tr = ctx;
    if (tr->inner && tr->inner->on_iteration)
        tr->inner->on_iteration(tr->inner->ctx, it);
    trace_iteration(tr, it);
}

static void w_token_gap(void *ctx, uint64_t request_id, sv_time t_ns, sv_time gap_ns)
{
    sv_planner_trace *tr = ctx;
    if (tr->inner && tr->inner->on_token_gap)
        tr->inner->on_token_gap(tr->inner->ctx, request_id, t_ns, gap_ns);
}

static void w_instance(void *ctx, int32_t instance, const char *latency_source)
{
    sv_planner_trace *tr = ctx;
    if (tr->inner && tr->inner->on_instance)
        tr->inner->on_instance(tr->inner->ctx, instance, latency_source);
}

static void w_tiers(void *ctx, sv_time t_ns, const struct sv_planner_tier_usage *u)
{
    sv_planner_trace *tr = ctx;
    if (tr->inner && tr->inner->on_tiers)
        tr->inner->on_tiers(tr->inner->ctx, t_ns, u);
    trace_tiers(tr, t_ns, u);
}

static void w_instance_kv(void *ctx, int32_t instance, const struct sv_planner_instance_cfg *ic,
                          uint64_t blocks, uint32_t block_size, uint64_t bytes,
                          const struct sv_planner_instance_limits *limits)
{
    sv_planner_trace *tr = ctx;
    if (tr->inner && tr->inner->on_instance_kv)
        tr->inner->on_instance_kv(tr->inner->ctx, instance, ic, blocks, block_size, bytes, limits);
}

static void w_power(void *ctx, const struct sv_planner_power_row *r)
{
    sv_planner_trace *tr = ctx;
    if (tr->inner && tr->inner->on_power)
        tr->inner->on_power(tr->inner->ctx, r);
    trace_power(tr, r);
}

/* ---- operators and KV transfers ------------------------------------------------------------- */

static void on_op(void *ctx, const struct sv_msg_op *op)
{
    sv_planner_trace *tr = ctx;
    if (!sv_metrics_trace_overlaps(tr->w, op->start_ns, op->end_ns))
        return;
    gboolean compute = op->kind == SV_DAG_KIND_COMP || op->kind == SV_DAG_KIND_PIM;
    int32_t tid = 1 + 2 * op->device + (compute ? 0 : 1);
    gint64 key = ((gint64)op->instance << 32) | (gint64)(uint32_t)tid;
    if (!g_hash_table_contains(tr->devices, &key)) {
        g_hash_table_add(tr->devices, g_memdup2(&key, sizeof key));
        g_autofree char *tn = g_strdup_printf("npu %d%s", (int)op->device, compute ? "" : " comm");
        sv_metrics_trace_thread(tr->w, op->instance, tid, tn);
    }
    const char *cat = compute ? "compute"
                      : op->kind == SV_DAG_KIND_MEM_LOAD || op->kind == SV_DAG_KIND_MEM_STORE
                          ? "memory"
                          : "comm";
    char args[64];
    if (op->bytes > 0)
        g_snprintf(args, sizeof args, "{\"bytes\":%" G_GUINT64_FORMAT "}", op->bytes);
    sv_metrics_trace_slice(tr->w, op->instance, tid, cat, op->name, op->start_ns, op->end_ns,
                           op->bytes > 0 ? args : NULL);
}

void sv_planner__trace_msg_hooks(sv_planner_trace *tr, struct sv_msg_hooks *hooks)
{
    if (!tr)
        return;
    hooks->on_op = on_op;
    hooks->op_ctx = tr;
}

void sv_planner__trace_kv(sv_planner_trace *tr, uint64_t request_id, int32_t src, int32_t dst,
                          sv_time begin_ns, sv_time end_ns)
{
    if (!tr)
        return;
    char name[64];
    g_snprintf(name, sizeof name, "kv %" G_GUINT64_FORMAT " -> instance %d", request_id, (int)dst);
    int32_t t0 =
        sv_metrics_trace_slice(tr->w, src, TID_KV_SEND, "kv", name, begin_ns, end_ns, NULL);
    g_snprintf(name, sizeof name, "kv %" G_GUINT64_FORMAT " <- instance %d", request_id, (int)src);
    int32_t t1 =
        sv_metrics_trace_slice(tr->w, dst, TID_KV_RECV, "kv", name, begin_ns, end_ns, NULL);
    sv_metrics_trace_flow(tr->w, "kv", "kv transfer", request_id, src, t0, begin_ns, dst, t1,
                          end_ns);
}

/* The thread of `link` in the network process, declared with its ends at first use. */
static void declare_link(sv_planner_trace *tr, const sv_net *net, int link)
{
    if (!tr->network_declared) {
        sv_metrics_trace_process(tr->w, PID_NETWORK, "network links");
        tr->network_declared = TRUE;
    }
    if (g_hash_table_contains(tr->links, GINT_TO_POINTER(link + 1)))
        return;
    g_hash_table_add(tr->links, GINT_TO_POINTER(link + 1));
    int a = 0, b = 0, dim = 0, npus = sv_net_npus(net);
    sv_net_link_ends(net, link, &a, &b, &dim);
    const struct sv_net_graph_cfg *g = sv_net_graph(net);
    char ba[32], bb[32];
    g_autofree char *tn =
        g != NULL /* an explicit fabric graph: its device names */
            ? g_strdup_printf("link %d: %s -> %s", link, sv_net_graph_cfg_name(g, a, ba, sizeof ba),
                              sv_net_graph_cfg_name(g, b, bb, sizeof bb))
            : g_strdup_printf("link %d: %s %d -> %s %d (dim %d)", link, a < npus ? "npu" : "switch",
                              a < npus ? a : a - npus, b < npus ? "npu" : "switch",
                              b < npus ? b : b - npus, dim);
    sv_metrics_trace_thread(tr->w, PID_NETWORK, 1 + link, tn);
}

void sv_planner__trace_kv_message(sv_planner_trace *tr, sv_net *net, uint64_t request_id,
                                  int32_t src, int32_t dst, uint64_t bytes, sv_time begin_ns,
                                  sv_time end_ns)
{
    if (!tr || !net || src == dst || !sv_metrics_trace_overlaps(tr->w, begin_ns, end_ns))
        return;
    int cap = sv_net_route_max_links(net);
    if (cap > tr->route_cap) {
        tr->route = g_renew(int, tr->route, cap);
        tr->route_cap = cap;
    }
    double lat = 0;
    int n = sv_net_route_links(net, src, dst, tr->route, &lat);
    char name[64], args[160];
    g_snprintf(name, sizeof name, "kv %" G_GUINT64_FORMAT, request_id);
    g_snprintf(args, sizeof args,
               "{\"kind\":\"kv transfer\",\"request\":%" G_GUINT64_FORMAT
               ",\"src_npu\":%d,\"dst_npu\":%d,\"bytes\":%" G_GUINT64_FORMAT "}",
               request_id, (int)src, (int)dst, bytes);
    for (int k = 0; k < n; k++) {
        declare_link(tr, net, tr->route[k]);
        sv_metrics_trace_slice(tr->w, PID_NETWORK, 1 + tr->route[k], "link", name, begin_ns, end_ns,
                               args);
    }
}

/* A message of the cluster network has arrived: a slice from its send to now on every link of
 * its route. One-sided transfers are the KV hand-offs, drawn above with their request. */
static void on_link_message(void *ctx, const struct sv_net_tap_msg *m, sv_time now)
{
    sv_planner_trace *tr = ctx;
    if (m->kind == SV_NET_MSG_TRANSFER || m->bytes == 0 ||
        !sv_metrics_trace_overlaps(tr->w, m->sent_ns, now))
        return;
    const char *name = m->name != NULL ? m->name : sv_net_msg_kind_name(m->kind);
    char args[192];
    g_snprintf(args, sizeof args,
               "{\"kind\":\"%s\",\"message\":%" G_GUINT64_FORMAT
               ",\"src_npu\":%d,\"dst_npu\":%d,\"bytes\":%" G_GUINT64_FORMAT "}",
               sv_net_msg_kind_name(m->kind), m->id, m->src, m->dst, m->bytes);
    for (int k = 0; k < m->nlinks; k++) {
        declare_link(tr, tr->net, m->links[k]);
        sv_metrics_trace_slice(tr->w, PID_NETWORK, 1 + m->links[k], "link", name, m->sent_ns, now,
                               args);
    }
}

/* A memory-tier leg over topology links (a cluster pool's remote read) has ended. */
static void on_tier_leg(void *ctx, const struct sv_memtier_leg_tap *leg, sv_time now)
{
    sv_planner_trace *tr = ctx;
    if (!tr->net || !sv_metrics_trace_overlaps(tr->w, leg->start_ns, now))
        return;
    char args[192];
    g_snprintf(args, sizeof args,
               "{\"kind\":\"memory tier\",\"src\":\"%s\",\"src_node\":%d,\"src_device\":%d,"
               "\"dst\":\"%s\",\"dst_node\":%d,\"dst_device\":%d,\"bytes\":%" G_GUINT64_FORMAT "}",
               sv_memtier_kind_name(leg->src.kind), (int)leg->src.node, (int)leg->src.device,
               sv_memtier_kind_name(leg->dst.kind), (int)leg->dst.node, (int)leg->dst.device,
               leg->bytes);
    for (int k = 0; k < leg->n_net_links; k++) {
        declare_link(tr, tr->net, leg->net_links[k]);
        sv_metrics_trace_slice(tr->w, PID_NETWORK, 1 + leg->net_links[k], "link", "tier leg",
                               leg->start_ns, now, args);
    }
}

void sv_planner__trace_links(sv_planner_trace *tr, const sv_planner_cluster_net *cn,
                             sv_memtier_fabric *fabric)
{
    sv_net *net = tr && cn ? sv_planner_cluster_net_net(cn) : NULL;
    if (!net)
        return;
    tr->net = net;
    sv_net_tap_add(net, &(struct sv_net_tap){.on_delivery = on_link_message, .ctx = tr});
    if (fabric)
        sv_memtier_fabric_set_tap(fabric, on_tier_leg, tr);
}

/* ---- life cycle ------------------------------------------------------------------------------ */

sv_planner_trace *sv_planner__trace_new(const struct sv_planner_run_cfg *cfg)
{
    if (!cfg->trace)
        return NULL;
    sv_planner_trace *tr = g_new0(sv_planner_trace, 1);
    tr->w = cfg->trace;
    tr->inner = cfg->observer;
    tr->cl = cfg->cluster;
    tr->obs = (struct sv_planner_run_observer){.on_request = w_request,
                                               .on_iteration = w_iteration,
                                               .on_token_gap = w_token_gap,
                                               .on_instance = w_instance,
                                               .on_tiers = w_tiers,
                                               .on_power = w_power,
                                               .on_instance_kv = w_instance_kv,
                                               .ctx = tr};
    tr->cfg = *cfg;
    tr->cfg.observer = &tr->obs;
    int32_t n = tr->cl->n_instances;
    tr->launches = g_new0(GQueue, (size_t)n);
    tr->chunks =
        g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, (GDestroyNotify)chunks_free);
    tr->devices = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    tr->links = g_hash_table_new(g_direct_hash, g_direct_equal);
    tr->nodes_declared = g_new0(gboolean, (size_t)MAX(1, tr->cl->n_nodes));
    for (int32_t i = 0; i < n; i++) {
        const struct sv_planner_instance_cfg *ic = &tr->cl->instances[i];
        const char *role = ic->role == SV_MSG_ROLE_PREFILL  ? " (prefill)"
                           : ic->role == SV_MSG_ROLE_DECODE ? " (decode)"
                                                            : "";
        g_autofree char *pn = g_strdup_printf("instance %d: %s on %s, tp %d%s", (int)i,
                                              ic->model_name, ic->hardware, (int)ic->tp_size, role);
        sv_metrics_trace_process(tr->w, i, pn);
        sv_metrics_trace_thread(tr->w, i, TID_ITER, "iterations");
        if (ic->role == SV_MSG_ROLE_PREFILL)
            sv_metrics_trace_thread(tr->w, i, TID_KV_SEND, "kv send");
        if (ic->role == SV_MSG_ROLE_DECODE)
            sv_metrics_trace_thread(tr->w, i, TID_KV_RECV, "kv recv");
    }
    return tr;
}

const struct sv_planner_run_cfg *sv_planner__trace_cfg(sv_planner_trace *tr,
                                                       const struct sv_planner_run_cfg *cfg)
{
    return tr ? &tr->cfg : cfg;
}

void sv_planner__trace_free(sv_planner_trace *tr)
{
    if (!tr)
        return;
    for (int32_t i = 0; i < tr->cl->n_instances; i++)
        g_queue_clear_full(&tr->launches[i], (GDestroyNotify)launch_free);
    g_free(tr->launches);
    g_hash_table_destroy(tr->chunks);
    g_hash_table_destroy(tr->devices);
    g_hash_table_destroy(tr->links);
    g_free(tr->route);
    g_free(tr->nodes_declared);
    g_free(tr);
}
