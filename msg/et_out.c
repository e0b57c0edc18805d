/* Chakra ET output of a run (--emit-et, --et-scope; docs/chakra.md "Emitted sets").
 *
 * The form is what ASTRA-sim and Chakra's tools accept (dag/et_out.c: no METADATA node, is_cpu_op,
 * duration_micros, pg_name). What the files cannot take from the DAG's edges, the run's timing,
 * they take from "wait" compute nodes of no work placed where the device's GPU is idle in the run
 * (dag/et_out.c sv_dag_et_clock: ASTRA-sim's statistics refuse CPU ops, the natural timer).
 *
 * Iteration scope. A batch's set is written when its last node has finished, so the start of
 * every root (a node with no parent in the set) is known: it is the launch, or later when the
 * device was still running the previous batch (pipeline stages, async scheduling); the clock
 * makes it start that long after the set's origin. Replayed alone, each device then finishes when
 * it did in the run, and iterations.csv says when that was.
 *
 * Run scope. One file per NPU for the run; a batch is appended at its launch, its roots waiting
 * for the device (idle: its last node and a wait until the launch; busy: the previous batch's last
 * node there) and for the KV receives that completed since the device's previous batch. A KV
 * transfer is a send on the source's file at the time it left (after a comm-slot wait) and a
 * receive on the destination's. Arrivals and the scheduler's host time are in the files only as
 * these waits. */
#include "msg/msg_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Ids of nodes written outside a DAG (waits, transfers) in run-scope files: far above any DAG's
 * (a serving group's DAGs continue each other's ids; 2^62 would be 10^9 years of batches). */
#define ET_OWN_ID_BASE (UINT64_C(1) << 62)
/* comm_tag of KV transfers: above the pipeline stages' tags (one per batch of an instance). */
#define ET_KV_TAG_BASE 0x40000000

struct et_unit {
    char *name;
    int32_t n_npus;
    int32_t pad; /* idle NPUs after n_npus, each set's file holding one idle node */
    char *note;
    uint64_t sets;
};

/* Run scope, per NPU. `clock` follows the NPU's serving nodes: `at` the latest end among those
 * finished, `last_id` that node (or the wait written after it). */
struct et_dev {
    sv_proto_writer *w;
    struct sv_dag_et_clock clock;
    uint64_t running;      /* serving nodes written and not finished */
    uint64_t last_written; /* the last serving node written (the device chain's tail) */
    GArray *received;      /* uint64_t receive ids the next batch waits for */
    uint64_t nodes;
    sv_time last_end; /* when the NPU's last written node finished in the run */
};

struct sv_msg_et_out {
    char *dir;
    sv_msg_et_scope scope;
    int32_t n_npus;
    struct et_dev *dev; /* run scope: n_npus */
    GPtrArray *units;   /* et_unit* */
    GString *rows;      /* iterations.csv */
    uint64_t sets, files, transfers;
    int32_t next_tag;
};

/* A batch waiting to be written (iteration scope): its nodes are [first, end) of `dag`. */
typedef struct {
    sv_dag *dag;
    uint32_t first, end, remaining;
    sv_time launch_ns;
    uint64_t iter;
} et_piece;

gboolean sv_msg_et_scope_parse(const char *name, sv_msg_et_scope *out, GError **error)
{
    if (strcmp(name, "iteration") == 0) {
        *out = SV_MSG_ET_ITERATION;
        return TRUE;
    }
    if (strcmp(name, "run") == 0) {
        *out = SV_MSG_ET_RUN;
        return TRUE;
    }
    g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                "--et-scope: '%s' (expected iteration or run)", name);
    return FALSE;
}

static ChakraProtoMsg__GlobalMetadata *metadata(void)
{
    /* ASTRA-sim's microbenchmark ETs carry version "0.0.4"; nothing reads it (CHAKRA_ET.md
     * 1.2). */
    return sv_proto_metadata_new("0.0.4");
}

/* An idle partner's file: one compute node of no work (ASTRA-sim's feeder refuses a file without
 * a node: "No dependancy free nodes found"); it finishes after 1 ns (duration 0, as ASTRA-sim
 * replays it). */
static gboolean write_idle(const char *path, GError **error);

static sv_proto_writer *open_et(const char *path, GError **error)
{
    sv_proto_writer *w = sv_proto_writer_open(path, error);
    if (!w)
        return NULL;
    g_autoptr(ChakraProtoMsg__GlobalMetadata) md = metadata();
    if (!sv_proto_writer_put_metadata(w, md, error)) {
        sv_proto_writer_abort(w);
        return NULL;
    }
    return w;
}

static gboolean put_idle(sv_proto_writer *w, uint64_t id, GError **error)
{
    g_autoptr(ChakraProtoMsg__Node) n =
        sv_proto_node_new(id, "idle", CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE);
    sv_proto_node_add_attr(n, sv_proto_attr_new_bool("is_cpu_op", FALSE));
    sv_proto_node_add_attr(n, sv_proto_attr_new_int64("num_ops", 0));
    sv_proto_node_add_attr(n, sv_proto_attr_new_uint64("tensor_size", 0));
    return sv_proto_writer_put_node(w, n, error);
}

static gboolean write_idle(const char *path, GError **error)
{
    sv_proto_writer *w = open_et(path, error);
    if (!w)
        return FALSE;
    if (!put_idle(w, 0, error)) {
        sv_proto_writer_abort(w);
        return FALSE;
    }
    return sv_proto_writer_close(w, error);
}

sv_msg_et_out *sv_msg_et_out_new(const char *dir, sv_msg_et_scope scope, int32_t n_npus,
                                 GError **error)
{
    if (g_mkdir_with_parents(dir, 0755) != 0) {
        g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_IO, "cannot create %s: %s", dir,
                    g_strerror(errno));
        return NULL;
    }
    sv_msg_et_out *o = g_new0(sv_msg_et_out, 1);
    o->dir = g_strdup(dir);
    o->scope = scope;
    o->n_npus = MAX(n_npus, 1);
    o->units = g_ptr_array_new();
    o->rows = g_string_new("set,unit,iteration,npu,launch_ns,finish_ns,duration_ns,nodes\n");
    o->next_tag = ET_KV_TAG_BASE;
    if (scope == SV_MSG_ET_RUN) {
        o->dev = g_new0(struct et_dev, (size_t)o->n_npus);
        for (int32_t d = 0; d < o->n_npus; d++) {
            struct et_dev *x = &o->dev[d];
            sv_dag_et_clock_init(&x->clock, 0, ET_OWN_ID_BASE);
            x->last_written = SV_DAG_ET_NO_ID;
            x->received = g_array_new(FALSE, FALSE, sizeof(uint64_t));
            g_autofree char *name = g_strdup_printf("run.%d.et", d);
            g_autofree char *path = g_build_filename(dir, name, NULL);
            x->w = open_et(path, error);
            if (!x->w) {
                sv_msg_et_out_free(o);
                return NULL;
            }
        }
    }
    return o;
}

void sv_msg_et_out_free(sv_msg_et_out *o)
{
    if (!o)
        return;
    if (o->dev) {
        for (int32_t d = 0; d < o->n_npus; d++) {
            sv_proto_writer_abort(o->dev[d].w);
            if (o->dev[d].received)
                g_array_unref(o->dev[d].received);
        }
        g_free(o->dev);
    }
    for (guint i = 0; i < o->units->len; i++) {
        struct et_unit *u = g_ptr_array_index(o->units, i);
        g_free(u->name);
        g_free(u->note);
        g_free(u);
    }
    g_ptr_array_unref(o->units);
    g_string_free(o->rows, TRUE);
    g_free(o->dir);
    g_free(o);
}

const char *sv_msg_et_out_dir(const sv_msg_et_out *o)
{
    return o->dir;
}

void sv_msg_et_out_add_unit(sv_msg_et_out *o, const char *name, int32_t n_npus, const char *note)
{
    struct et_unit *u = g_new0(struct et_unit, 1);
    u->name = g_strdup(name);
    u->n_npus = n_npus;
    u->note = g_strdup(note);
    g_ptr_array_add(o->units, u);
}

static struct et_unit *unit_find(sv_msg_et_out *o, const char *name);

void sv_msg_et_out_pad_unit(sv_msg_et_out *o, const char *name, int32_t n)
{
    struct et_unit *u = unit_find(o, name);
    if (u)
        u->pad = n;
}

static struct et_unit *unit_find(sv_msg_et_out *o, const char *name)
{
    for (guint i = 0; i < o->units->len; i++) {
        struct et_unit *u = g_ptr_array_index(o->units, i);
        if (strcmp(u->name, name) == 0)
            return u;
    }
    return NULL;
}

static gboolean dev_ok(const sv_msg_et_out *o, int32_t npu, GError **error)
{
    if (npu >= 0 && npu < o->n_npus)
        return TRUE;
    g_set_error(error, SV_MSG_ERROR, SV_MSG_ERROR_INVALID,
                "ET output: NPU %d is outside the cluster's %d", npu, o->n_npus);
    return FALSE;
}

gboolean sv_msg_et_out_transfer(sv_msg_et_out *o, int32_t src, int32_t dst, uint64_t bytes,
                                sv_time now, uint64_t *recv, GError **error)
{
    *recv = 0;
    if (o->scope != SV_MSG_ET_RUN)
        return TRUE;
    if (!dev_ok(o, src, error) || !dev_ok(o, dst, error))
        return FALSE;
    int32_t tag = o->next_tag++;
    struct et_dev *s = &o->dev[src], *d = &o->dev[dst];
    /* The send leaves at `now`: after the NPU's serving node that finished last (the batch that
     * produced the KV, or a later one), then a wait on the comm slot for the rest (the commit's
     * host time), as a BROADCAST, which ASTRA-sim replays with its duration; the GPU may be
     * running the next batch meanwhile. */
    uint64_t after = s->clock.last_id;
    if (now > s->clock.at) {
        uint64_t wid = s->clock.next_id++;
        g_autoptr(ChakraProtoMsg__Node) wn =
            sv_proto_node_new(wid, "kv.wait", CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE);
        if (after != SV_DAG_ET_NO_ID)
            sv_proto_node_add_ctrl_dep(wn, after);
        sv_time dur = now - s->clock.at;
        wn->duration_micros = (uint64_t)(dur / SV_NS_PER_US);
        sv_proto_node_add_attr(wn, sv_proto_attr_new_int64("comm_type", 5)); /* BROADCAST */
        sv_proto_node_add_attr(wn, sv_proto_attr_new_int64("comm_size", 0));
        sv_proto_node_add_attr(wn, sv_proto_attr_new_string("pg_name", "0")); /* all NPUs */
        if (dur % SV_NS_PER_US != 0)
            sv_proto_node_add_attr(wn, sv_proto_attr_new_int64("sv_duration_ns", dur));
        if (!sv_proto_writer_put_node(s->w, wn, error))
            return FALSE;
        after = wid;
        s->nodes++;
    }
    uint64_t sid = s->clock.next_id++;
    g_autoptr(ChakraProtoMsg__Node) sn =
        sv_proto_node_new(sid, "kv.send", CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE);
    if (after != SV_DAG_ET_NO_ID)
        sv_proto_node_add_ctrl_dep(sn, after);
    sv_proto_node_add_attr(sn, sv_proto_attr_new_int32("comm_src", src));
    sv_proto_node_add_attr(sn, sv_proto_attr_new_int32("comm_dst", dst));
    sv_proto_node_add_attr(sn, sv_proto_attr_new_int64("comm_size", (int64_t)bytes));
    sv_proto_node_add_attr(sn, sv_proto_attr_new_int32("comm_tag", tag));
    if (!sv_proto_writer_put_node(s->w, sn, error))
        return FALSE;
    uint64_t rid = d->clock.next_id++;
    g_autoptr(ChakraProtoMsg__Node) rn =
        sv_proto_node_new(rid, "kv.recv", CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE);
    sv_proto_node_add_attr(rn, sv_proto_attr_new_int32("comm_src", src));
    sv_proto_node_add_attr(rn, sv_proto_attr_new_int32("comm_dst", dst));
    sv_proto_node_add_attr(rn, sv_proto_attr_new_int64("comm_size", (int64_t)bytes));
    sv_proto_node_add_attr(rn, sv_proto_attr_new_int32("comm_tag", tag));
    if (!sv_proto_writer_put_node(d->w, rn, error))
        return FALSE;
    s->nodes++;
    d->nodes++;
    o->transfers++;
    *recv = rid;
    return TRUE;
}

void sv_msg_et_out_received(sv_msg_et_out *o, int32_t dst, uint64_t recv)
{
    if (o->scope != SV_MSG_ET_RUN || dst < 0 || dst >= o->n_npus)
        return;
    g_array_append_val(o->dev[dst].received, recv);
}

/* ---- the serving groups' side ------------------------------------------------------------- */

static const char *unit_name(const sv_msg *m, char *buf, size_t size)
{
    if (m->cfg.et_unit)
        return m->cfg.et_unit;
    g_snprintf(buf, size, "inst%d", m->cfg.instance);
    return buf;
}

/* Run scope: the batch just built, appended to its devices' files. Its first nodes wait for the
 * device: when the device is idle in the run, for its last node and a wait until now; when it is
 * still running the previous batch, for that batch's last node (the device's chain). */
static gboolean put_run(sv_msg *m, uint32_t first, sv_time now, GError **error)
{
    sv_msg_et_out *o = m->cfg.et_out;
    uint32_t end = (uint32_t)sv_dag_node_count(m->dag);
    for (int32_t r = 0; r < m->cfg.num_devices; r++) {
        int32_t dev = m->cfg.first_device + r;
        if (!dev_ok(o, dev, error))
            return FALSE;
        struct et_dev *x = &o->dev[dev];
        uint64_t gate = x->last_written;
        if (x->running == 0 && !sv_dag_et_clock_at(&x->clock, x->w, now, &gate, error) && error &&
            *error)
            return FALSE;
        if (gate != SV_DAG_ET_NO_ID)
            g_array_append_val(x->received, gate);
        struct sv_dag_et_put p = {
            .device = dev,
            .first_index = first,
            .end_index = end,
            .prior_deps = TRUE,
            .pg_from_tag = TRUE,
            .root_deps = (const uint64_t *)(void *)x->received->data,
            .n_root_deps = x->received->len,
        };
        if (!sv_dag_et_put(m->dag, x->w, &p, error))
            return FALSE;
        g_array_set_size(x->received, 0);
        for (uint32_t i = first; i < end; i++) {
            const sv_dag_node *n = sv_dag_node_at(m->dag, i);
            if (n->device != dev || n->kind == SV_DAG_KIND_LOGICAL)
                continue;
            x->nodes++;
            if (sv_dag_node_get_state(m->dag, n) != SV_DAG_NODE_DONE)
                x->running++;
            x->last_written = n->id;
        }
    }
    return TRUE;
}

static sv_time issue_time(void *ctx, const sv_dag_node *n)
{
    const sv_dag *dag = ctx;
    return sv_dag_node_start_ns(dag, n);
}

/* Iteration scope: write a finished batch's set. */
static gboolean put_set(sv_msg *m, const et_piece *pc, GError **error)
{
    sv_msg_et_out *o = m->cfg.et_out;
    char ub[32];
    const char *unit = unit_name(m, ub, sizeof ub);
    struct et_unit *u = unit_find(o, unit);
    g_autofree char *set = g_strdup_printf("%s_iter%" G_GUINT64_FORMAT, unit, pc->iter);
    for (int32_t r = 0; r < m->cfg.num_devices; r++) {
        int32_t dev = m->cfg.first_device + r;
        int32_t local = dev - m->cfg.et_npu_base;
        g_autofree char *name = g_strdup_printf("%s.%d.et", set, local);
        g_autofree char *path = g_build_filename(o->dir, name, NULL);
        sv_proto_writer *w = open_et(path, error);
        if (!w)
            return FALSE;
        struct sv_dag_et_clock clock;
        sv_dag_et_clock_init(&clock, pc->launch_ns, sv_dag_next_id(pc->dag));
        struct sv_dag_et_put p = {
            .device = dev,
            .first_index = pc->first,
            .end_index = pc->end,
            .npu_base = m->cfg.et_npu_base,
            .pg_from_tag = TRUE,
            .root_time = issue_time,
            .root_ctx = pc->dag,
            .clock = &clock,
        };
        if (!sv_dag_et_put(pc->dag, w, &p, error)) {
            sv_proto_writer_abort(w);
            g_prefix_error(error, "%s: ", path);
            return FALSE;
        }
        if (!sv_proto_writer_close(w, error))
            return FALSE;
        sv_time fin = pc->launch_ns;
        uint64_t nodes = 0;
        for (uint32_t i = pc->first; i < pc->end; i++) {
            const sv_dag_node *n = sv_dag_node_at(pc->dag, i);
            if (n->device != dev || n->kind == SV_DAG_KIND_LOGICAL)
                continue;
            nodes++;
            fin = MAX(fin, sv_dag_node_end_ns(pc->dag, n));
        }
        g_string_append_printf(o->rows,
                               "%s,%s,%" G_GUINT64_FORMAT ",%d,%" G_GINT64_FORMAT
                               ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GUINT64_FORMAT "\n",
                               set, unit, pc->iter, local, pc->launch_ns, fin, fin - pc->launch_ns,
                               nodes);
        o->files++;
    }
    if (m->cfg.first_device == m->cfg.et_npu_base) { /* a DP group's set: counted once */
        for (int32_t k = 0; u && k < u->pad; k++) {  /* idle partners: no node */
            g_autofree char *name = g_strdup_printf("%s.%d.et", set, u->n_npus + k);
            g_autofree char *path = g_build_filename(o->dir, name, NULL);
            if (!write_idle(path, error))
                return FALSE;
            o->files++;
        }
        o->sets++;
        if (u)
            u->sets++;
    }
    return TRUE;
}

gboolean sv_msg__et_launched(sv_msg *m, uint32_t first, sv_time launch_ns, GError **error)
{
    sv_msg_et_out *o = m->cfg.et_out;
    uint64_t iter = m->launches++;
    if (o->scope == SV_MSG_ET_RUN)
        return put_run(m, first, launch_ns, error);
    et_piece *pc = g_new0(et_piece, 1);
    pc->dag = m->dag;
    pc->first = first;
    pc->end = (uint32_t)sv_dag_node_count(m->dag);
    pc->launch_ns = launch_ns;
    pc->iter = iter;
    for (uint32_t i = first; i < pc->end; i++)
        if (sv_dag_node_get_state(m->dag, sv_dag_node_at(m->dag, i)) != SV_DAG_NODE_DONE)
            pc->remaining++;
    g_queue_push_tail(&m->et_pieces, pc);
    if (pc->remaining == 0) { /* nothing to run (cannot happen: every batch has nodes) */
        g_queue_remove(&m->et_pieces, pc);
        gboolean ok = put_set(m, pc, error);
        g_free(pc);
        return ok;
    }
    return TRUE;
}

void sv_msg_et_out_note_end(sv_msg_et_out *o, int32_t npu, sv_time t)
{
    if (o->scope == SV_MSG_ET_RUN && npu >= 0 && npu < o->n_npus)
        o->dev[npu].last_end = MAX(o->dev[npu].last_end, t);
}

void sv_msg__et_node_done(sv_msg *m, const sv_dag *dag, const sv_dag_node *n)
{
    if (!m->cfg.et_out)
        return;
    if (m->cfg.et_out->scope == SV_MSG_ET_RUN) {
        sv_msg_et_out *o = m->cfg.et_out;
        if (n->kind == SV_DAG_KIND_LOGICAL || n->device < 0 || n->device >= o->n_npus)
            return;
        sv_time now = sv_engine_now(m->eng);
        struct et_dev *x = &o->dev[n->device];
        sv_msg_et_out_note_end(o, n->device, now);
        if (x->running > 0)
            x->running--;
        if (now >= x->clock.at) {
            x->clock.at = now;
            x->clock.last_id = n->id;
        }
        return;
    }
    for (GList *l = m->et_pieces.head; l; l = l->next) {
        et_piece *pc = l->data;
        if (pc->dag != dag || n->index < pc->first || n->index >= pc->end)
            continue;
        if (--pc->remaining == 0) {
            g_queue_delete_link(&m->et_pieces, l);
            GError *err = NULL;
            if (!put_set(m, pc, &err))
                sv_msg__fail(m, err);
            g_free(pc);
        }
        return;
    }
}

gboolean sv_msg__et_dag_retire(sv_msg *m, const sv_dag *dag, GError **error)
{
    gboolean ok = TRUE;
    for (GList *l = m->et_pieces.head; l;) {
        GList *next = l->next;
        et_piece *pc = l->data;
        if (pc->dag == dag) {
            if (ok) /* side nodes still running: what has run */
                ok = put_set(m, pc, error);
            g_queue_delete_link(&m->et_pieces, l);
            g_free(pc);
        }
        l = next;
    }
    m->et_next_id = MAX(m->et_next_id, sv_dag_next_id(dag));
    return ok;
}

void sv_msg__et_free(sv_msg *m)
{
    et_piece *pc;
    while ((pc = g_queue_pop_head(&m->et_pieces)))
        g_free(pc);
}

/* ---- finish ------------------------------------------------------------------------------- */

static gboolean write_atomic(const char *dir, const char *name, const char *text, GError **error)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);
    if (!g_file_set_contents(path, text, -1, error)) {
        g_prefix_error(error, "ET output: ");
        return FALSE;
    }
    return TRUE;
}

gboolean sv_msg_et_out_finish(sv_msg_et_out *o, const char *replay_model, GError **error)
{
    if (o->dev) {
        for (int32_t d = 0; d < o->n_npus; d++) {
            /* An NPU of the network no instance uses: an idle node (write_idle) */
            if (o->dev[d].nodes == 0 && o->dev[d].clock.next_id == ET_OWN_ID_BASE) {
                if (!put_idle(o->dev[d].w, 0, error))
                    return FALSE;
                o->dev[d].last_end = 1; /* the idle node's 1 ns */
            }
            sv_proto_writer *w = g_steal_pointer(&o->dev[d].w);
            if (!sv_proto_writer_close(w, error))
                return FALSE;
            o->files++;
            g_string_append_printf(o->rows,
                                   "run,run,0,%d,0,%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                                   ",%" G_GUINT64_FORMAT "\n",
                                   d, o->dev[d].last_end, o->dev[d].last_end, o->dev[d].nodes);
        }
    }
    if (!write_atomic(o->dir, "iterations.csv", o->rows->str, error))
        return FALSE;
    g_autoptr(GString) j = g_string_new("{\n");
    g_string_append_printf(j, "  \"scope\": \"%s\",\n",
                           o->scope == SV_MSG_ET_RUN ? "run" : "iteration");
    g_string_append_printf(j,
                           "  \"complete\": true,\n  \"sets\": %" G_GUINT64_FORMAT
                           ",\n  \"files\": %" G_GUINT64_FORMAT
                           ",\n  \"kv_transfers\": %" G_GUINT64_FORMAT ",\n",
                           o->scope == SV_MSG_ET_RUN ? 1 : o->sets, o->files, o->transfers);
    g_string_append_printf(j, "  \"network_model\": \"%s\",\n  \"units\": [", replay_model);
    for (guint i = 0; i < o->units->len; i++) {
        const struct et_unit *u = g_ptr_array_index(o->units, i);
        g_autofree char *wl =
            o->scope == SV_MSG_ET_RUN ? g_strdup("run") : g_strdup_printf("%s_iter<N>", u->name);
        g_string_append_printf(
            j,
            "%s\n    {\"name\": \"%s\", \"npus\": %d, \"idle_npus\": %d, \"sets\": "
            "%" G_GUINT64_FORMAT
            ", \"workload\": \"%s\", \"system\": \"%s.system.json\", \"network\": "
            "\"%s.network.yml\", \"memory\": \"%s.memory.json\", \"comm_groups\": "
            "\"%s.groups.json\"",
            i ? "," : "", u->name, u->n_npus, u->pad, o->scope == SV_MSG_ET_RUN ? 1 : u->sets, wl,
            u->name, u->name, u->name, u->name);
        if (u->note)
            g_string_append_printf(j, ", \"note\": \"%s\"", u->note);
        g_string_append(j, "}");
    }
    g_string_append(j, "\n  ]\n}\n");
    return write_atomic(o->dir, "manifest.json", j->str, error);
}
