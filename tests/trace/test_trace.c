/* `servesim run --trace FILE.json` end to end (docs/trace.md): the file is checked against the
 * Trace Event Format by a validator written here from the format's documentation (every event
 * has name, ph, pid, tid and, except metadata, ts; X has dur >= 0; B/E match per thread; b/e
 * match per (cat, id) in order; s/f pair per (cat, id); ts never goes back on a thread, an async
 * track or a counter; counters carry numeric args; a window bounds every event), and its content
 * against numbers derived from the inputs:
 *
 * - Two requests far apart (100 + 4 tokens at 0 s, 50 + 5 at 1 s) run alone, so each decode
 *   step yields one token: with a 64-token budget request 0 takes 2 prefill chunks (64, 36) and
 *   3 decode steps, request 1 one chunk and 4: 10 iterations, each one fused "layers" slice on
 *   the single device (docs/parallelism.md; the DAG is prologue -> layers -> head).
 * - TP 2 built per operator (--per-layer-dag): Llama-3.1-8B has 32 layers of 9 compute
 *   operators and 2 all-reduces each, plus embedding, final_layernorm, lm_head and sampler:
 *   292 compute and 64 collective slices per rank and iteration; 4 + 5 iterations -> 2 x 9 x 292
 *   and 2 x 9 x 64. Without the flag each rank's iteration is one "folded iteration" slice.
 * - A prefill/decode pair: each request's KV moves once, a flow from instance 0 to 1 whose ends
 *   and the request's "kv transfer" span are requests.csv's prefill_done_ns and kv_ready_ns.
 * - Each request's span starts at its arrival and ends at its last token; queued, prefill and
 *   decode follow in order, and the prefill span's end minus the arrival is requests.csv's
 *   ttft_ns. The other outputs are byte-identical with and without --trace. */
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define MODEL "meta-llama/Llama-3.1-8B"

/* ---- the validator ------------------------------------------------------------------------- */

typedef struct {
    char *name, *cat;
    char ph;
    int64_t pid, tid;
    int64_t ts, dur; /* ns; dur -1 when absent */
    uint64_t id;
    gboolean has_id;
    int64_t arg_request, arg_bytes; /* args "request" / "bytes", -1 when absent */
    int64_t arg_message;            /* args "message" (link slices), -1 when absent */
    char *arg_kind;                 /* args "kind" (link slices), NULL when absent */
} ev;

typedef struct {
    GArray *evs; /* ev */
    int errors;
} trace_doc;

static void doc_clear(trace_doc *d)
{
    for (guint i = 0; d->evs && i < d->evs->len; i++) {
        g_free(g_array_index(d->evs, ev, i).name);
        g_free(g_array_index(d->evs, ev, i).cat);
        g_free(g_array_index(d->evs, ev, i).arg_kind);
    }
    if (d->evs)
        g_array_free(d->evs, TRUE);
}

static int bad(trace_doc *d, guint i, const char *what)
{
    if (d->errors++ < 10)
        fprintf(stderr, "trace event %u: %s\n", i, what);
    return 0;
}

static int64_t us_to_ns(double us)
{
    return (int64_t)llround(us * 1000.0);
}

/* Parse `path` and check it against the format; w0/w1 (ns) bound every event when w1 > 0. */
static gboolean load_trace(const char *path, int64_t w0, int64_t w1, trace_doc *d)
{
    memset(d, 0, sizeof *d);
    d->evs = g_array_new(FALSE, TRUE, sizeof(ev));
    g_autoptr(JsonParser) p = json_parser_new();
    g_autoptr(GError) e = NULL;
    if (!json_parser_load_from_file(p, path, &e)) {
        fprintf(stderr, "%s: %s\n", path, e->message);
        return FALSE;
    }
    JsonNode *root = json_parser_get_root(p);
    if (!JSON_NODE_HOLDS_OBJECT(root))
        return FALSE;
    JsonArray *a = json_object_get_array_member(json_node_get_object(root), "traceEvents");
    if (!a)
        return FALSE;
    /* Per thread / async track / counter: the last ts, and the open B / b names. */
    g_autoptr(GHashTable) last = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_autoptr(GHashTable) open =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)g_ptr_array_unref);
    g_autoptr(GHashTable) flows = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonObject *o = json_array_get_object_element(a, i);
        if (!o) {
            bad(d, i, "not an object");
            continue;
        }
        const char *name = json_object_get_string_member_with_default(o, "name", NULL);
        const char *ph = json_object_get_string_member_with_default(o, "ph", NULL);
        if (!name || !ph || strlen(ph) != 1 || !json_object_has_member(o, "pid") ||
            !json_object_has_member(o, "tid")) {
            bad(d, i, "name, ph, pid or tid missing");
            continue;
        }
        ev v = {.name = g_strdup(name),
                .cat = g_strdup(json_object_get_string_member_with_default(o, "cat", "")),
                .ph = ph[0],
                .pid = json_object_get_int_member(o, "pid"),
                .tid = json_object_get_int_member(o, "tid"),
                .dur = -1,
                .arg_request = -1,
                .arg_bytes = -1,
                .arg_message = -1};
        JsonObject *va = json_object_get_object_member(o, "args");
        if (va && v.ph != 'C') {
            v.arg_request = json_object_get_int_member_with_default(va, "request", -1);
            v.arg_bytes = json_object_get_int_member_with_default(va, "bytes", -1);
            v.arg_message = json_object_get_int_member_with_default(va, "message", -1);
            v.arg_kind = g_strdup(json_object_get_string_member_with_default(va, "kind", NULL));
        }
        if (v.ph != 'M') {
            if (!json_object_has_member(o, "ts")) {
                bad(d, i, "no ts");
                g_array_append_val(d->evs, v);
                continue;
            }
            v.ts = us_to_ns(json_object_get_double_member(o, "ts"));
        }
        if (json_object_has_member(o, "dur"))
            v.dur = us_to_ns(json_object_get_double_member(o, "dur"));
        if (json_object_has_member(o, "id")) {
            v.has_id = TRUE;
            v.id = (uint64_t)json_object_get_int_member(o, "id");
        }
        g_array_append_val(d->evs, v);
        if (v.ph == 'M')
            continue;
        if (w1 > 0 && (v.ts < w0 || v.ts > w1 || (v.dur > 0 && v.ts + v.dur > w1)))
            bad(d, i, "outside the window");
        g_autofree char *track = NULL;
        switch (v.ph) {
        case 'X':
            if (v.dur < 0)
                bad(d, i, "X without dur >= 0");
            /* fall through */
        case 'B':
        case 'E':
        case 'i':
        case 's':
        case 'f':
            track = g_strdup_printf("t/%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT, v.pid, v.tid);
            break;
        case 'b':
        case 'e':
        case 'n':
            if (!v.has_id)
                bad(d, i, "async event without id");
            track = g_strdup_printf("a/%s/%" G_GUINT64_FORMAT, v.cat, v.id);
            break;
        case 'C': {
            JsonObject *args = json_object_get_object_member(o, "args");
            if (!args || json_object_get_size(args) == 0)
                bad(d, i, "counter without args");
            g_autoptr(GList) ms = args ? json_object_get_members(args) : NULL;
            for (GList *l = ms; l; l = l->next) {
                JsonNode *n = json_object_get_member(args, l->data);
                GType t = JSON_NODE_HOLDS_VALUE(n) ? json_node_get_value_type(n) : G_TYPE_INVALID;
                if (t != G_TYPE_INT64 && t != G_TYPE_DOUBLE)
                    bad(d, i, "counter value not a number");
            }
            track = g_strdup_printf("c/%" G_GINT64_FORMAT "/%s", v.pid, v.name);
            break;
        }
        default:
            bad(d, i, "unknown ph");
            continue;
        }
        int64_t *lt = g_hash_table_lookup(last, track);
        if (lt && v.ts < *lt)
            bad(d, i, "ts goes back on its track");
        if (!lt) {
            lt = g_new(int64_t, 1);
            g_hash_table_insert(last, g_strdup(track), lt);
        }
        *lt = v.ts;
        if (v.ph == 'B' || v.ph == 'b' || v.ph == 'E' || v.ph == 'e') {
            GPtrArray *st = g_hash_table_lookup(open, track);
            if (!st) {
                st = g_ptr_array_new_with_free_func(g_free);
                g_hash_table_insert(open, g_strdup(track), st);
            }
            if (v.ph == 'B' || v.ph == 'b') {
                g_ptr_array_add(st, g_strdup(v.name));
            } else if (st->len == 0) {
                bad(d, i, "end without begin");
            } else {
                if (v.ph == 'e' && strcmp(g_ptr_array_index(st, st->len - 1), v.name) != 0)
                    bad(d, i, "e does not close the innermost b of its id");
                g_ptr_array_remove_index(st, st->len - 1);
            }
        }
        if (v.ph == 's' || v.ph == 'f') {
            g_autofree char *fk = g_strdup_printf("%s/%" G_GUINT64_FORMAT, v.cat, v.id);
            gpointer have = g_hash_table_lookup(flows, fk);
            if (v.ph == 's' && have)
                bad(d, i, "flow started twice");
            if (v.ph == 'f' && GPOINTER_TO_INT(have) != 1)
                bad(d, i, "flow end without start");
            g_hash_table_insert(flows, g_strdup(fk), GINT_TO_POINTER(v.ph == 's' ? 1 : 2));
        }
    }
    GHashTableIter it;
    gpointer k, val;
    g_hash_table_iter_init(&it, open);
    while (g_hash_table_iter_next(&it, &k, &val))
        if (((GPtrArray *)val)->len > 0)
            bad(d, 0, "a begin without end");
    g_hash_table_iter_init(&it, flows);
    while (g_hash_table_iter_next(&it, &k, &val))
        if (GPOINTER_TO_INT(val) != 2)
            bad(d, 0, "a flow without end");
    return TRUE;
}

static int count(const trace_doc *d, char ph, const char *cat, const char *name)
{
    int n = 0;
    for (guint i = 0; i < d->evs->len; i++) {
        const ev *v = &g_array_index(d->evs, ev, i);
        n += v->ph == ph && (!cat || !strcmp(v->cat, cat)) && (!name || !strcmp(v->name, name));
    }
    return n;
}

/* The async events of request `id`, in file order. */
static GPtrArray *request_events(const trace_doc *d, uint64_t id)
{
    GPtrArray *r = g_ptr_array_new();
    for (guint i = 0; i < d->evs->len; i++) {
        ev *v = &g_array_index(d->evs, ev, i);
        if ((v->ph == 'b' || v->ph == 'e') && v->has_id && v->id == id &&
            !strcmp(v->cat, "request"))
            g_ptr_array_add(r, v);
    }
    return r;
}

static const ev *find_async(GPtrArray *r, char ph, const char *name)
{
    for (guint i = 0; i < r->len; i++) {
        const ev *v = g_ptr_array_index(r, i);
        if (v->ph == ph && !strcmp(v->name, name))
            return v;
    }
    return NULL;
}

/* ---- runs ---------------------------------------------------------------------------------- */

static char *put(const char *dir, const char *name, const char *text)
{
    char *path = g_build_filename(dir, name, NULL);
    CU_ASSERT_FATAL(g_file_set_contents(path, text, -1, NULL));
    return path;
}

/* servesim run with `extra` (NULL-terminated); returns the exit status, stderr in *err. */
static int run(const char *cl, const char *wl, const char *out, const char *const *extra,
               char **err)
{
    GPtrArray *a = g_ptr_array_new();
    const char *base[] = {
        SV_SERVESIM_BIN, "run",     "--cluster",    cl, "--workload", wl, "--latency",
        "roofline",      "--quiet", "--output-dir", out};
    for (size_t i = 0; i < G_N_ELEMENTS(base); i++)
        g_ptr_array_add(a, (gpointer)base[i]);
    for (size_t i = 0; extra && extra[i]; i++)
        g_ptr_array_add(a, (gpointer)extra[i]);
    g_ptr_array_add(a, NULL);
    char *so = NULL;
    int status = -1;
    CU_ASSERT_FATAL(sv_test_spawn((const char *const *)a->pdata, &so, err, &status));
    g_ptr_array_free(a, TRUE);
    g_free(so);
    return status;
}

static void assert_same_file(const char *a_dir, const char *b_dir, const char *name)
{
    g_autofree char *pa = g_build_filename(a_dir, name, NULL);
    g_autofree char *pb = g_build_filename(b_dir, name, NULL);
    g_autofree char *a = NULL, *b = NULL;
    gsize na = 0, nb = 0;
    CU_ASSERT_FATAL(g_file_get_contents(pa, &a, &na, NULL));
    CU_ASSERT_FATAL(g_file_get_contents(pb, &b, &nb, NULL));
    CU_ASSERT(na == nb && memcmp(a, b, na) == 0);
    if (na != nb || memcmp(a, b, na) != 0)
        fprintf(stderr, "%s differs with --trace\n", name);
}

static void assert_outputs_same(const char *a, const char *b)
{
    assert_same_file(a, b, "requests.csv");
    assert_same_file(a, b, "timeseries.csv");
    assert_same_file(a, b, "summary.json");
}

/* requests.csv as rows of columns, with the header's column index of `col`. */
static int64_t csv_value(const char *out, uint64_t request, const char *col)
{
    g_autofree char *path = g_build_filename(out, "requests.csv", NULL);
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return INT64_MIN;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    g_auto(GStrv) head = g_strsplit(lines[0], ",", -1);
    int c = -1;
    for (int i = 0; head[i]; i++)
        if (!strcmp(head[i], col))
            c = i;
    for (int l = 1; c >= 0 && lines[l] && *lines[l]; l++) {
        g_auto(GStrv) f = g_strsplit(lines[l], ",", -1);
        if (g_ascii_strtoull(f[0], NULL, 10) == request && (int)g_strv_length(f) > c)
            return g_ascii_strtoll(f[c], NULL, 10);
    }
    return INT64_MIN;
}

static const char TWO_APART[] =
    "{\"input_toks\": 100, \"output_toks\": 4, \"arrival_time_ns\": 0}\n"
    "{\"input_toks\": 50, \"output_toks\": 5, \"arrival_time_ns\": 1000000000}\n";

/* Request id's spans in order, its times against requests.csv (ttft when `ttft`). */
static void check_request(const trace_doc *d, const char *out, uint64_t id, gboolean ttft)
{
    g_autoptr(GPtrArray) r = request_events(d, id);
    g_autofree char *rn = g_strdup_printf("request %" G_GUINT64_FORMAT, id);
    const ev *rb = find_async(r, 'b', rn), *re = find_async(r, 'e', rn);
    const ev *qb = find_async(r, 'b', "queued"), *pb = find_async(r, 'b', "prefill");
    const ev *pe = find_async(r, 'e', "prefill"), *db = find_async(r, 'b', "decode");
    const ev *de = find_async(r, 'e', "decode");
    CU_ASSERT_FATAL(rb && re && qb && pb && pe && db && de);
    SV_ASSERT_EQ_I64(rb->ts, csv_value(out, id, "arrival_ns"));
    SV_ASSERT_EQ_I64(re->ts, csv_value(out, id, "last_token_ns"));
    SV_ASSERT_EQ_I64(pb->ts, csv_value(out, id, "first_scheduled_ns"));
    CU_ASSERT(rb->ts <= qb->ts && qb->ts <= pb->ts && pb->ts <= pe->ts && pe->ts <= db->ts &&
              db->ts <= de->ts && de->ts <= re->ts);
    if (ttft)
        SV_ASSERT_EQ_I64(pe->ts - rb->ts, csv_value(out, id, "ttft_ns"));
}

static void test_single(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cl = sv_test_write_cluster(dir, MODEL, "H100-SXM", 80);
    g_autofree char *wl = put(dir, "wl.jsonl", TWO_APART);
    g_autofree char *o0 = g_build_filename(dir, "o0", NULL);
    g_autofree char *o1 = g_build_filename(dir, "o1", NULL);
    g_autofree char *o2 = g_build_filename(dir, "o2", NULL);
    g_autofree char *t1 = g_build_filename(dir, "t1.json", NULL);
    g_autofree char *t2 = g_build_filename(dir, "t2.json", NULL);
    g_autofree char *err = NULL;
    const char *budget[] = {"--max-num-batched-tokens", "64", NULL};
    const char *x1[] = {"--max-num-batched-tokens", "64", "--trace", t1, NULL};
    const char *x2[] = {"--max-num-batched-tokens", "64", "--trace", t2, NULL};
    CU_ASSERT_FATAL(run(cl, wl, o0, budget, &err) == 0);
    g_clear_pointer(&err, g_free);
    CU_ASSERT_FATAL(run(cl, wl, o1, x1, &err) == 0);
    g_clear_pointer(&err, g_free);
    CU_ASSERT_FATAL(run(cl, wl, o2, x2, &err) == 0);
    assert_outputs_same(o0, o1);
    /* Same inputs, same bytes. */
    g_autofree char *a = NULL, *b = NULL;
    gsize na = 0, nb = 0;
    CU_ASSERT_FATAL(g_file_get_contents(t1, &a, &na, NULL) &&
                    g_file_get_contents(t2, &b, &nb, NULL));
    CU_ASSERT(na == nb && memcmp(a, b, na) == 0);

    trace_doc d;
    CU_ASSERT_FATAL(load_trace(t1, 0, 0, &d));
    CU_ASSERT_EQUAL(d.errors, 0);
    /* 10 iterations (2 + 3 for request 0, 1 + 4 for request 1), one fused stack each. */
    CU_ASSERT_EQUAL(count(&d, 'X', "iteration", NULL), 10);
    CU_ASSERT_EQUAL(count(&d, 'X', "compute", "layers"), 10);
    CU_ASSERT_EQUAL(count(&d, 'C', NULL, "kv cache %"), 10);
    /* Prefill chunks: 64 + 36 for request 0, 50 for request 1. */
    g_autoptr(GPtrArray) r0 = request_events(&d, 0);
    int chunks0 = 0;
    for (guint i = 0; i < r0->len; i++)
        chunks0 += ((const ev *)g_ptr_array_index(r0, i))->ph == 'b' &&
                   !strcmp(((const ev *)g_ptr_array_index(r0, i))->name, "prefill chunk");
    CU_ASSERT_EQUAL(chunks0, 2);
    CU_ASSERT_EQUAL(count(&d, 'b', "request", "prefill chunk"), 3);
    check_request(&d, o1, 0, TRUE);
    check_request(&d, o1, 1, TRUE);
    /* Compute slices lie inside their iteration (launch -> commit). */
    for (guint i = 0; i < d.evs->len; i++) {
        const ev *v = &g_array_index(d.evs, ev, i);
        if (v->ph != 'X' || strcmp(v->cat, "compute") != 0)
            continue;
        gboolean in = FALSE;
        for (guint j = 0; j < d.evs->len && !in; j++) {
            const ev *w = &g_array_index(d.evs, ev, j);
            in = w->ph == 'X' && !strcmp(w->cat, "iteration") && w->ts <= v->ts &&
                 v->ts + v->dur <= w->ts + w->dur;
        }
        CU_ASSERT(in);
    }
    doc_clear(&d);
    sv_test_rmtree(dir);
}

static void test_window(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cl = sv_test_write_cluster(dir, MODEL, "H100-SXM", 80);
    g_autofree char *wl = put(dir, "wl.jsonl", TWO_APART);
    g_autofree char *o = g_build_filename(dir, "o", NULL);
    g_autofree char *t = g_build_filename(dir, "t.json", NULL);
    g_autofree char *err = NULL;
    /* From inside request 0's run to just after request 1 arrived: request 1's spans are cut at
     * the window's end, request 0's at its start. */
    const char *x[] = {"--trace", t, "--trace-window", "0.01:1.0005", NULL};
    CU_ASSERT_FATAL(run(cl, wl, o, x, &err) == 0);
    trace_doc d;
    CU_ASSERT_FATAL(load_trace(t, 10000000, 1000500000, &d));
    CU_ASSERT_EQUAL(d.errors, 0);
    CU_ASSERT(count(&d, 'X', "compute", NULL) > 0);
    doc_clear(&d);
    /* A bad window is a usage error naming the flag. */
    g_clear_pointer(&err, g_free);
    const char *bad_w[] = {"--trace", t, "--trace-window", "2:1", NULL};
    CU_ASSERT_EQUAL(run(cl, wl, o, bad_w, &err), 2);
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err, "--trace-window"));
    /* T0 < T1 as doubles but the same ns (1e-12 s rounds to 0 ns): an empty window, refused
     * (fuzz_flags, regressions/flags/window-sub-ns). */
    g_clear_pointer(&err, g_free);
    const char *sub_ns[] = {"--trace", t, "--trace-window", "0:1e-12", NULL};
    CU_ASSERT_EQUAL(run(cl, wl, o, sub_ns, &err), 2);
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err, "'0:1e-12' is not a window T0:T1"));
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err, "at least 1 ns apart"));
    sv_test_rmtree(dir);
}

/* A run that fails leaves no trace (nor its temporary) behind. */
static void test_failed_run(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cl = sv_test_write_cluster(dir, MODEL, "H100-SXM", 80);
    g_autofree char *wl = put(dir, "wl.jsonl", TWO_APART);
    g_autofree char *o = g_build_filename(dir, "o", NULL);
    g_autofree char *tdir = g_build_filename(dir, "tr", NULL);
    CU_ASSERT_FATAL(g_mkdir(tdir, 0755) == 0);
    g_autofree char *t = g_build_filename(tdir, "t.json", NULL);
    g_autofree char *err = NULL;
    const char *x[] = {"--trace", t, "--router", "no_such_router", NULL};
    CU_ASSERT_NOT_EQUAL(run(cl, wl, o, x, &err), 0);
    g_autoptr(GDir) gd = g_dir_open(tdir, 0, NULL);
    CU_ASSERT_PTR_NULL(g_dir_read_name(gd));
    /* A trace path that cannot be written: an error naming it, before the output folder is
     * touched (an earlier run's outputs stay). */
    g_clear_pointer(&err, g_free);
    CU_ASSERT_FATAL(run(cl, wl, o, NULL, &err) == 0);
    g_autofree char *nowhere = g_build_filename(dir, "no", "such", "t.json", NULL);
    const char *y[] = {"--trace", nowhere, NULL};
    g_clear_pointer(&err, g_free);
    CU_ASSERT_EQUAL(run(cl, wl, o, y, &err), 1);
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err, nowhere));
    g_autofree char *sum = g_build_filename(o, "summary.json", NULL);
    CU_ASSERT(g_file_test(sum, G_FILE_TEST_IS_REGULAR));
    sv_test_rmtree(dir);
}

static const char CLUSTER_TP2[] =
    "{\"num_nodes\": 1, \"link_bw\": 16, \"link_latency\": 20000, \"nodes\": [{"
    "\"num_instances\": 1, \"cpu_mem\": {\"mem_size\": 512, \"mem_bw\": 256, \"mem_latency\": 0}, "
    "\"instances\": [{\"model_name\": \"" MODEL "\", \"hardware\": \"H100-SXM\", "
    "\"npu_mem\": {\"mem_size\": 80, \"mem_bw\": 3350, \"mem_latency\": 0}, "
    "\"num_npus\": 2, \"tp_size\": 2, \"pd_type\": null}]}]}\n";

static void test_tp2(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cl = put(dir, "cluster.json", CLUSTER_TP2);
    g_autofree char *wl = put(dir, "wl.jsonl", TWO_APART);
    g_autofree char *o0 = g_build_filename(dir, "o0", NULL);
    g_autofree char *o1 = g_build_filename(dir, "o1", NULL);
    g_autofree char *o2 = g_build_filename(dir, "o2", NULL);
    g_autofree char *t1 = g_build_filename(dir, "t1.json", NULL);
    g_autofree char *t2 = g_build_filename(dir, "t2.json", NULL);
    g_autofree char *err = NULL;
    const char *x1[] = {"--per-layer-dag", "--trace", t1, NULL};
    const char *x0[] = {"--per-layer-dag", NULL};
    const char *x2[] = {"--trace", t2, NULL};
    CU_ASSERT_FATAL(run(cl, wl, o0, x0, &err) == 0);
    g_clear_pointer(&err, g_free);
    CU_ASSERT_FATAL(run(cl, wl, o1, x1, &err) == 0);
    g_clear_pointer(&err, g_free);
    CU_ASSERT_FATAL(run(cl, wl, o2, x2, &err) == 0);
    assert_outputs_same(o0, o1);
    trace_doc d;
    CU_ASSERT_FATAL(load_trace(t1, 0, 0, &d));
    CU_ASSERT_EQUAL(d.errors, 0);
    /* 4 + 5 iterations, 2 ranks. */
    CU_ASSERT_EQUAL(count(&d, 'X', "iteration", NULL), 9);
    CU_ASSERT_EQUAL(count(&d, 'X', "compute", NULL), 2 * 9 * 292);
    CU_ASSERT_EQUAL(count(&d, 'X', "comm", NULL), 2 * 9 * 64);
    CU_ASSERT_EQUAL(count(&d, 'X', "compute", "L31.attention"), 2 * 9);
    /* Collectives in closed form send no message: nothing on the links. */
    CU_ASSERT_EQUAL(count(&d, 'X', "link", NULL), 0);
    check_request(&d, o1, 1, TRUE);
    doc_clear(&d);
    CU_ASSERT_FATAL(load_trace(t2, 0, 0, &d));
    CU_ASSERT_EQUAL(d.errors, 0);
    CU_ASSERT_EQUAL(count(&d, 'X', "compute", "folded iteration"), 2 * 9);
    doc_clear(&d);
    sv_test_rmtree(dir);
}

static const char CLUSTER_PD[] =
    "{\"num_nodes\": 1, \"link_bw\": 50, \"link_latency\": 500, \"nodes\": [{"
    "\"num_instances\": 2, \"cpu_mem\": {\"mem_size\": 64, \"mem_bw\": 50, \"mem_latency\": 0}, "
    "\"instances\": ["
    "{\"model_name\": \"" MODEL "\", \"hardware\": \"H100\", \"npu_mem\": {\"mem_size\": 80, "
    "\"mem_bw\": 2000, \"mem_latency\": 0, \"mem_util\": 0.9}, \"num_npus\": 1, \"tp_size\": 1, "
    "\"pd_type\": \"prefill\"}, "
    "{\"model_name\": \"" MODEL "\", \"hardware\": \"H100\", \"npu_mem\": {\"mem_size\": 80, "
    "\"mem_bw\": 2000, \"mem_latency\": 0, \"mem_util\": 0.9}, \"num_npus\": 1, \"tp_size\": 1, "
    "\"pd_type\": \"decode\"}]}]}\n";

static void test_pd(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cl = put(dir, "cluster.json", CLUSTER_PD);
    g_autofree char *wl = put(dir, "wl.jsonl",
                              "{\"input_toks\": 100, \"output_toks\": 4, \"arrival_time_ns\": 0}\n"
                              "{\"input_toks\": 50, \"output_toks\": 5, \"arrival_time_ns\": "
                              "1000000}\n");
    g_autofree char *o0 = g_build_filename(dir, "o0", NULL);
    g_autofree char *o1 = g_build_filename(dir, "o1", NULL);
    g_autofree char *t = g_build_filename(dir, "t.json", NULL);
    g_autofree char *err = NULL;
    const char *x[] = {"--trace", t, NULL};
    CU_ASSERT_FATAL(run(cl, wl, o0, NULL, &err) == 0);
    g_clear_pointer(&err, g_free);
    CU_ASSERT_FATAL(run(cl, wl, o1, x, &err) == 0);
    assert_outputs_same(o0, o1);
    trace_doc d;
    CU_ASSERT_FATAL(load_trace(t, 0, 0, &d));
    CU_ASSERT_EQUAL(d.errors, 0);
    /* One KV transfer per request, from instance 0 (prefill) to 1 (decode). */
    CU_ASSERT_EQUAL(count(&d, 's', "kv", NULL), 2);
    CU_ASSERT_EQUAL(count(&d, 'f', "kv", NULL), 2);
    for (guint i = 0; i < d.evs->len; i++) {
        const ev *v = &g_array_index(d.evs, ev, i);
        if (v->ph == 's' && !strcmp(v->cat, "kv"))
            CU_ASSERT(v->pid == 0 && v->ts >= csv_value(o1, v->id, "prefill_done_ns"));
        if (v->ph == 'f' && !strcmp(v->cat, "kv")) {
            CU_ASSERT_EQUAL(v->pid, 1);
            SV_ASSERT_EQ_I64(v->ts, csv_value(o1, v->id, "kv_ready_ns"));
        }
    }
    for (uint64_t id = 0; id < 2; id++) {
        g_autoptr(GPtrArray) r = request_events(&d, id);
        const ev *kb = find_async(r, 'b', "kv transfer"), *ke = find_async(r, 'e', "kv transfer");
        CU_ASSERT_FATAL(kb && ke);
        SV_ASSERT_EQ_I64(kb->ts, csv_value(o1, id, "prefill_done_ns"));
        SV_ASSERT_EQ_I64(ke->ts, csv_value(o1, id, "kv_ready_ns"));
        check_request(&d, o1, id, FALSE);
    }
    /* Each request's KV message on every link of its route, from its send to the KV's arrival,
     * carrying 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 bytes = 131,072 bytes per prompt
     * token (Llama-3.1-8B, bf16). */
    int links[2] = {0, 0};
    for (guint i = 0; i < d.evs->len; i++) {
        const ev *v = &g_array_index(d.evs, ev, i);
        if (v->ph != 'X' || strcmp(v->cat, "link") != 0)
            continue;
        CU_ASSERT_FATAL(v->arg_request == 0 || v->arg_request == 1);
        links[v->arg_request]++;
        SV_ASSERT_EQ_I64(v->ts + v->dur, csv_value(o1, (uint64_t)v->arg_request, "kv_ready_ns"));
        SV_ASSERT_EQ_I64(v->arg_bytes, (v->arg_request == 0 ? 100 : 50) * 131072);
    }
    CU_ASSERT(links[0] >= 1 && links[0] == links[1]);
    /* Compute on both instances' NPUs. */
    int on0 = 0, on1 = 0;
    for (guint i = 0; i < d.evs->len; i++) {
        const ev *v = &g_array_index(d.evs, ev, i);
        on0 += v->ph == 'X' && !strcmp(v->cat, "compute") && v->pid == 0;
        on1 += v->ph == 'X' && !strcmp(v->cat, "compute") && v->pid == 1;
    }
    CU_ASSERT(on0 > 0 && on1 > 0);
    doc_clear(&d);
    /* Per-layer KV transfer: one message per layer, many on a link at once (lanes). */
    g_autofree char *o2 = g_build_filename(dir, "o2", NULL);
    g_autofree char *o3 = g_build_filename(dir, "o3", NULL);
    g_autofree char *t3 = g_build_filename(dir, "t3.json", NULL);
    const char *pl[] = {"--kv-transfer", "per_layer", NULL};
    const char *plt[] = {"--kv-transfer", "per_layer", "--trace", t3, NULL};
    g_clear_pointer(&err, g_free);
    CU_ASSERT_FATAL(run(cl, wl, o2, pl, &err) == 0);
    g_clear_pointer(&err, g_free);
    CU_ASSERT_FATAL(run(cl, wl, o3, plt, &err) == 0);
    assert_outputs_same(o2, o3);
    CU_ASSERT_FATAL(load_trace(t3, 0, 0, &d));
    CU_ASSERT_EQUAL(d.errors, 0);
    /* 32 layer messages per request, each on the same route. */
    CU_ASSERT(count(&d, 'X', "link", NULL) > 0 && count(&d, 'X', "link", NULL) % 64 == 0);
    doc_clear(&d);
    sv_test_rmtree(dir);
}

/* The link slices of kind `kind`: how many, how many distinct messages (by "message"; a slice
 * without one counts alone), the sum of the messages' bytes (each counted once), the number of
 * links a message crosses (the same for all, else -1) and the most slices on one link. */
typedef struct {
    int slices, messages, hops, most_on_link;
    int64_t bytes;
} link_sum;

static link_sum link_slices(const trace_doc *d, const char *kind)
{
    link_sum s = {0};
    g_autoptr(GHashTable) per_msg =
        g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    g_autoptr(GHashTable) per_link = g_hash_table_new(g_direct_hash, g_direct_equal);
    for (guint i = 0; i < d->evs->len; i++) {
        const ev *v = &g_array_index(d->evs, ev, i);
        if (v->ph != 'X' || strcmp(v->cat, "link") != 0 || !v->arg_kind ||
            strcmp(v->arg_kind, kind) != 0)
            continue;
        s.slices++;
        CU_ASSERT_FATAL(v->arg_bytes > 0);
        int64_t *key = g_new(int64_t, 1);
        *key = v->arg_message >= 0 ? v->arg_message : -1 - (int64_t)i; /* tier legs: no number */
        int n = GPOINTER_TO_INT(g_hash_table_lookup(per_msg, key));
        if (n == 0) {
            s.messages++;
            s.bytes += v->arg_bytes;
        }
        g_hash_table_replace(per_msg, key, GINT_TO_POINTER(n + 1));
        gpointer link = GINT_TO_POINTER((int)(v->tid % 100000)); /* lanes: tid + 100000 k */
        int on = GPOINTER_TO_INT(g_hash_table_lookup(per_link, link)) + 1;
        g_hash_table_replace(per_link, link, GINT_TO_POINTER(on));
        s.most_on_link = MAX(s.most_on_link, on);
    }
    GHashTableIter it;
    gpointer k, val;
    g_hash_table_iter_init(&it, per_msg);
    while (g_hash_table_iter_next(&it, &k, &val)) {
        int h = GPOINTER_TO_INT(val);
        s.hops = s.hops == 0 ? h : s.hops == h ? h : -1;
    }
    return s;
}

/* PP 2 (TP 1): the hidden states go from stage 0 (NPU 0) to stage 1 (NPU 1) once per iteration,
 * tokens x hidden 4096 x 2 bytes (Llama-3.1-8B, bf16; docs/parallelism.md "PP"). TWO_APART runs
 * 4 + 5 iterations of 100, 1, 1, 1 and 50, 1, 1, 1, 1 tokens: 9 sends, 157 x 8,192 bytes, on
 * the one link NPU 0 -> NPU 1 of the node's 2-NPU dimension, each alone on it: under the
 * analytical model a send takes trunc(20,000 ns + bytes / B), B = 16 "GB/s" = 16 x 2^30 / 10^9
 * bytes per ns (ASTRA-sim's GB/s are GiB/s; docs/network.md). */
static const char CLUSTER_PP2[] =
    "{\"num_nodes\": 1, \"link_bw\": 16, \"link_latency\": 20000, \"nodes\": [{"
    "\"num_instances\": 1, \"cpu_mem\": {\"mem_size\": 512, \"mem_bw\": 256, \"mem_latency\": 0}, "
    "\"instances\": [{\"model_name\": \"" MODEL "\", \"hardware\": \"H100-SXM\", "
    "\"npu_mem\": {\"mem_size\": 80, \"mem_bw\": 3350, \"mem_latency\": 0}, "
    "\"num_npus\": 2, \"tp_size\": 1, \"pp_size\": 2, \"pd_type\": null}]}]}\n";

static void test_pp2_links(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cl = put(dir, "cluster.json", CLUSTER_PP2);
    g_autofree char *wl = put(dir, "wl.jsonl", TWO_APART);
    g_autofree char *o0 = g_build_filename(dir, "o0", NULL);
    g_autofree char *o1 = g_build_filename(dir, "o1", NULL);
    g_autofree char *o2 = g_build_filename(dir, "o2", NULL);
    g_autofree char *t1 = g_build_filename(dir, "t1.json", NULL);
    g_autofree char *t2 = g_build_filename(dir, "t2.json", NULL);
    g_autofree char *err = NULL;
    const char *x1[] = {"--trace", t1, NULL};
    const char *x2[] = {"--trace", t2, "--trace-window", "0.5:", NULL};
    CU_ASSERT_FATAL(run(cl, wl, o0, NULL, &err) == 0);
    g_clear_pointer(&err, g_free);
    CU_ASSERT_FATAL(run(cl, wl, o1, x1, &err) == 0);
    g_clear_pointer(&err, g_free);
    CU_ASSERT_FATAL(run(cl, wl, o2, x2, &err) == 0);
    assert_outputs_same(o0, o1);
    assert_outputs_same(o0, o2);
    trace_doc d;
    CU_ASSERT_FATAL(load_trace(t1, 0, 0, &d));
    CU_ASSERT_EQUAL(d.errors, 0);
    SV_ASSERT_EQ_I64(count(&d, 'X', "iteration", NULL), 9);
    link_sum s = link_slices(&d, "send");
    SV_ASSERT_EQ_I64(s.messages, 9);
    SV_ASSERT_EQ_I64(s.bytes, 157 * 4096 * 2);
    SV_ASSERT_EQ_I64(s.hops, 1);
    SV_ASSERT_EQ_I64(s.slices, 9);
    SV_ASSERT_EQ_I64(s.most_on_link, 9);
    CU_ASSERT_EQUAL(count(&d, 'X', "link", NULL), s.slices);
    for (guint i = 0; i < d.evs->len; i++) {
        const ev *v = &g_array_index(d.evs, ev, i);
        if (v->ph == 'X' && !strcmp(v->cat, "link")) {
            int64_t want =
                (int64_t)floor(20000.0 + (double)v->arg_bytes / (16.0 * 1073741824.0 / 1e9));
            SV_ASSERT_EQ_I64(v->dur, want);
        }
    }
    /* Each send lies inside the iteration that sends it: from the first stage's end to the
     * second's start, so no send outlasts the run. */
    int64_t last_end = 0;
    for (guint i = 0; i < d.evs->len; i++) {
        const ev *v = &g_array_index(d.evs, ev, i);
        if (v->ph == 'X' && !strcmp(v->cat, "iteration"))
            last_end = MAX(last_end, v->ts + v->dur);
    }
    for (guint i = 0; i < d.evs->len; i++) {
        const ev *v = &g_array_index(d.evs, ev, i);
        if (v->ph == 'X' && !strcmp(v->cat, "link"))
            CU_ASSERT(v->dur > 0 && v->ts + v->dur <= last_end);
    }
    doc_clear(&d);
    /* The window from 0.5 s: request 1's 5 iterations (50, 1, 1, 1, 1 tokens). */
    CU_ASSERT_FATAL(load_trace(t2, 500000000, INT64_MAX, &d));
    CU_ASSERT_EQUAL(d.errors, 0);
    s = link_slices(&d, "send");
    SV_ASSERT_EQ_I64(s.messages, 5);
    SV_ASSERT_EQ_I64(s.bytes, 54 * 4096 * 2);
    doc_clear(&d);
    sv_test_rmtree(dir);
}

/* TP 2 with --collectives messages, per operator: 64 all-reduces per iteration (o_proj and
 * down_proj of 32 layers), each a ring on the 2 ranks: every rank sends 2 messages of S / 2
 * (reduce-scatter and all-gather step), S = tokens x 4096 x 2 bytes (docs/parallelism.md "TP").
 * 9 iterations: 9 x 64 x 4 messages of 64 x 2 x 157 x 8,192 bytes in all. The other outputs are
 * the same with and without --trace (they differ from fast collectives only within the bound
 * docs/collectives.md states, which this does not check). */
static void test_tp2_message_links(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cl = put(dir, "cluster.json", CLUSTER_TP2);
    g_autofree char *wl = put(dir, "wl.jsonl", TWO_APART);
    g_autofree char *o0 = g_build_filename(dir, "o0", NULL);
    g_autofree char *o1 = g_build_filename(dir, "o1", NULL);
    g_autofree char *t1 = g_build_filename(dir, "t1.json", NULL);
    g_autofree char *err = NULL;
    const char *x0[] = {"--per-layer-dag", "--collectives", "messages", NULL};
    const char *x1[] = {"--per-layer-dag", "--collectives", "messages", "--trace", t1, NULL};
    CU_ASSERT_FATAL(run(cl, wl, o0, x0, &err) == 0);
    g_clear_pointer(&err, g_free);
    CU_ASSERT_FATAL(run(cl, wl, o1, x1, &err) == 0);
    assert_outputs_same(o0, o1);
    trace_doc d;
    CU_ASSERT_FATAL(load_trace(t1, 0, 0, &d));
    CU_ASSERT_EQUAL(d.errors, 0);
    link_sum s = link_slices(&d, "collective");
    SV_ASSERT_EQ_I64(s.messages, 9 * 64 * 4);
    SV_ASSERT_EQ_I64(s.bytes, (int64_t)64 * 2 * 157 * 4096 * 2);
    CU_ASSERT(s.hops >= 1);
    SV_ASSERT_EQ_I64(s.slices, 9 * 64 * 4 * s.hops);
    /* both directions carry half: each link of a route 2 messages per rank and all-reduce */
    SV_ASSERT_EQ_I64(s.most_on_link, 9 * 64 * 2);
    CU_ASSERT_EQUAL(count(&d, 'X', "link", NULL), s.slices);
    doc_clear(&d);
    sv_test_rmtree(dir);
}

/* Memory-tier legs over the cluster network: the cluster pool (--prefix-pool cluster) on 2 nodes
 * x 1 H100, flow network at 50 GB/s, latency 0 (tests/e2e/test_tiers_e2e.c "cluster_pool"): two
 * 1,025-token prompts with the same tokens, 10 s apart, round robin. Request 0 (node 0) writes
 * its 4 chunks of 256 tokens x 131,072 B = 33,554,432 B through to the store, sharded by key % 2:
 * 3 go to node 1's DRAM, three legs at once over the one link NPU 0 -> NPU 1, sharing it:
 * 3 x 2^25 B / (50 x 2^30 / 10^9 B/ns) = 1,875,000 ns each. Request 1 (node 1) reads the chunk
 * on node 0 back: one leg of 625,000 ns on that link, the MEM_LOAD slice's interval. */
static void test_tier_links(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    GString *cs = g_string_new("{\"num_nodes\":2,\"link_bw\":50,\"link_latency\":0,"
                               "\"network_model\":\"flow\",\"nodes\":[");
    for (int n = 0; n < 2; n++)
        g_string_append_printf(
            cs,
            "%s{\"num_instances\":1,\"cpu_mem\":{\"mem_size\":128,\"mem_bw\":256,"
            "\"mem_latency\":0},\"pcie\":{\"bw_gbps\":64},\"instances\":[{\"model_name\":"
            "\"" MODEL "\",\"hardware\":\"H100\",\"npu_mem\":{\"mem_size\":80,"
            "\"mem_bw\":3350,\"mem_latency\":0}}]}",
            n ? "," : "");
    g_string_append(cs, "]}");
    g_autofree char *cl = put(dir, "cluster.json", cs->str);
    g_string_free(cs, TRUE);
    GString *ws = g_string_new(NULL);
    for (int r = 0; r < 2; r++) {
        g_string_append_printf(
            ws,
            "{\"input_toks\":1025,\"output_toks\":1,\"arrival_time_ns\":%" G_GINT64_FORMAT
            ",\"input_tok_ids\":[",
            (gint64)r * G_GINT64_CONSTANT(10000000000));
        for (int t = 1; t <= 1025; t++)
            g_string_append_printf(ws, "%s%d", t > 1 ? "," : "", t);
        g_string_append(ws, "]}\n");
    }
    g_autofree char *wl = put(dir, "wl.jsonl", ws->str);
    g_string_free(ws, TRUE);
    g_autofree char *o0 = g_build_filename(dir, "o0", NULL);
    g_autofree char *o1 = g_build_filename(dir, "o1", NULL);
    g_autofree char *t = g_build_filename(dir, "t.json", NULL);
    g_autofree char *err = NULL;
    const char *x0[] = {"--prefix-storage", "cpu", "--prefix-pool", "cluster", "--router",
                        "round_robin",      NULL};
    const char *x1[] = {"--prefix-storage", "cpu",      "--prefix-pool",
                        "cluster",          "--router", "round_robin",
                        "--trace",          t,          NULL};
    CU_ASSERT_FATAL(run(cl, wl, o0, x0, &err) == 0);
    g_clear_pointer(&err, g_free);
    CU_ASSERT_FATAL(run(cl, wl, o1, x1, &err) == 0);
    assert_outputs_same(o0, o1);
    SV_ASSERT_EQ_I64(csv_value(o1, 1, "prefix_hit_tokens_remote"), 256);
    trace_doc d;
    CU_ASSERT_FATAL(load_trace(t, 0, 0, &d));
    CU_ASSERT_EQUAL(d.errors, 0);
    link_sum s = link_slices(&d, "memory tier");
    SV_ASSERT_EQ_I64(s.slices, 4);
    SV_ASSERT_EQ_I64(count(&d, 'X', "link", "tier leg"), 4);
    int writes = 0, reads = 0;
    const ev *load = NULL;
    for (guint i = 0; i < d.evs->len; i++) {
        const ev *v = &g_array_index(d.evs, ev, i);
        if (v->ph == 'X' && !strcmp(v->name, "MEM_LOAD") && v->ts >= 10000000000)
            load = v;
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(load);
    for (guint i = 0; i < d.evs->len; i++) {
        const ev *v = &g_array_index(d.evs, ev, i);
        if (v->ph != 'X' || strcmp(v->name, "tier leg") != 0)
            continue;
        SV_ASSERT_EQ_I64(v->arg_bytes, 33554432);
        CU_ASSERT_EQUAL(v->tid % 100000, 1); /* link 0: NPU 0 -> NPU 1 */
        if (v->ts < 10000000000) {
            writes++;
            SV_ASSERT_EQ_I64(v->dur, 1875000);
        } else {
            reads++;
            SV_ASSERT_EQ_I64(v->dur, 625000);
            SV_ASSERT_EQ_I64(v->ts, load->ts);
            SV_ASSERT_EQ_I64(v->dur, load->dur);
        }
    }
    CU_ASSERT_EQUAL(writes, 3);
    CU_ASSERT_EQUAL(reads, 1);
    doc_clear(&d);
    sv_test_rmtree(dir);
}

/* Power per component as counters: the test's power block (tests/e2e/test_power_e2e.c's round
 * numbers) gives 150 W besides the accelerator, which is in standby (20 W) from the end of request
 * 0 (~0.05 s) for 5 s: the sample starting at 1 s is npu 20 W, base 100 W. Rows at 1, 2, 3 s and
 * the run's end (request 1 at 3 s): 4 samples. */
static const char CLUSTER_POWER[] =
    "{\"num_nodes\": 1, \"link_bw\": 16, \"link_latency\": 20000, \"nodes\": [{"
    "\"num_instances\": 1, \"cpu_mem\": {\"mem_size\": 512, \"mem_bw\": 256, \"mem_latency\": 0}, "
    "\"instances\": [{\"model_name\": \"" MODEL "\", \"hardware\": \"H100-SXM\", "
    "\"npu_mem\": {\"mem_size\": 80, \"mem_bw\": 3350, \"mem_latency\": 0}, "
    "\"num_npus\": 1, \"tp_size\": 1, \"pd_type\": null}], "
    "\"power\": {\"base_node_power\": 100, "
    "\"npu\": {\"H100-SXM\": {\"idle_power\": 10, \"standby_power\": 20, \"active_power\": 110, "
    "\"standby_duration\": 5}}, "
    "\"cpu\": {\"idle_power\": 10, \"active_power\": 10, \"util\": 0.5}, "
    "\"dram\": {\"dimm_size\": 512, \"idle_power\": 10, \"energy_per_bit\": 0}, "
    "\"link\": {\"num_links\": 1, \"idle_power\": 10, \"energy_per_bit\": 0}, "
    "\"nic\": {\"num_nics\": 1, \"idle_power\": 10}, "
    "\"storage\": {\"num_devices\": 1, \"idle_power\": 10}}}]}\n";

static void test_power(void)
{
    g_autofree char *dir = sv_test_tmpdir();
    g_autofree char *cl = put(dir, "cluster.json", CLUSTER_POWER);
    g_autofree char *wl = put(dir, "wl.jsonl",
                              "{\"input_toks\": 64, \"output_toks\": 8, \"arrival_time_ns\": 0}\n"
                              "{\"input_toks\": 64, \"output_toks\": 8, \"arrival_time_ns\": "
                              "3000000000}\n");
    g_autofree char *o0 = g_build_filename(dir, "o0", NULL);
    g_autofree char *o1 = g_build_filename(dir, "o1", NULL);
    g_autofree char *t = g_build_filename(dir, "t.json", NULL);
    g_autofree char *err = NULL;
    const char *x[] = {"--trace", t, NULL};
    CU_ASSERT_FATAL(run(cl, wl, o0, NULL, &err) == 0);
    g_clear_pointer(&err, g_free);
    CU_ASSERT_FATAL(run(cl, wl, o1, x, &err) == 0);
    assert_outputs_same(o0, o1);
    assert_same_file(o0, o1, "power.csv");
    trace_doc d;
    CU_ASSERT_FATAL(load_trace(t, 0, 0, &d));
    CU_ASSERT_EQUAL(d.errors, 0);
    CU_ASSERT_EQUAL(count(&d, 'C', NULL, "power W"), 4);
    doc_clear(&d);
    /* The sample from 1 s: read its args. */
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_FATAL(json_parser_load_from_file(p, t, NULL));
    JsonArray *a =
        json_object_get_array_member(json_node_get_object(json_parser_get_root(p)), "traceEvents");
    gboolean seen = FALSE;
    for (guint i = 0; i < json_array_get_length(a); i++) {
        JsonObject *o = json_array_get_object_element(a, i);
        if (strcmp(json_object_get_string_member(o, "name"), "power W") != 0 ||
            us_to_ns(json_object_get_double_member(o, "ts")) != 1000000000)
            continue;
        JsonObject *args = json_object_get_object_member(o, "args");
        CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(args, "npu"), 20.0, 1e-9);
        CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(args, "base"), 100.0, 1e-9);
        seen = TRUE;
    }
    CU_ASSERT(seen);
    sv_test_rmtree(dir);
}

/* The validator rejects what the format forbids (so that the checks above can fail). */
static void test_validator(void)
{
    static const char *const broken[] = {
        /* ts goes back on a thread */
        "{\"traceEvents\":[{\"name\":\"a\",\"ph\":\"X\",\"ts\":2,\"dur\":1,\"pid\":0,"
        "\"tid\":1},{\"name\":\"b\",\"ph\":\"X\",\"ts\":1,\"dur\":1,\"pid\":0,\"tid\":1}]}",
        /* b without e */
        "{\"traceEvents\":[{\"name\":\"q\",\"cat\":\"r\",\"ph\":\"b\",\"ts\":1,\"pid\":0,"
        "\"tid\":0,\"id\":3}]}",
        /* e closing another name */
        "{\"traceEvents\":[{\"name\":\"q\",\"cat\":\"r\",\"ph\":\"b\",\"ts\":1,\"pid\":0,"
        "\"tid\":0,\"id\":3},{\"name\":\"p\",\"cat\":\"r\",\"ph\":\"e\",\"ts\":2,\"pid\":0,"
        "\"tid\":0,\"id\":3}]}",
        /* flow end without start; X without dur; counter with a string; no ts */
        "{\"traceEvents\":[{\"name\":\"k\",\"cat\":\"kv\",\"ph\":\"f\",\"ts\":1,\"pid\":0,"
        "\"tid\":0,\"id\":1}]}",
        "{\"traceEvents\":[{\"name\":\"x\",\"ph\":\"X\",\"ts\":1,\"pid\":0,\"tid\":0}]}",
        "{\"traceEvents\":[{\"name\":\"c\",\"ph\":\"C\",\"ts\":1,\"pid\":0,\"tid\":0,"
        "\"args\":{\"v\":\"1\"}}]}",
        "{\"traceEvents\":[{\"name\":\"x\",\"ph\":\"X\",\"dur\":1,\"pid\":0,\"tid\":0}]}",
    };
    g_autofree char *dir = sv_test_tmpdir();
    for (size_t i = 0; i < G_N_ELEMENTS(broken); i++) {
        g_autofree char *p = put(dir, "bad.json", broken[i]);
        trace_doc d;
        CU_ASSERT_FATAL(load_trace(p, 0, 0, &d));
        CU_ASSERT(d.errors > 0);
        doc_clear(&d);
    }
    /* Outside a window. */
    g_autofree char *p = put(dir, "w.json",
                             "{\"traceEvents\":[{\"name\":\"x\",\"ph\":\"X\",\"ts\":1,"
                             "\"dur\":5,\"pid\":0,\"tid\":0}]}");
    trace_doc d;
    CU_ASSERT_FATAL(load_trace(p, 0, 3000, &d));
    CU_ASSERT(d.errors > 0);
    doc_clear(&d);
    sv_test_rmtree(dir);
}

int main(void)
{
    static const sv_test_case cases[] = {{"validator", test_validator},
                                         {"single", test_single},
                                         {"window", test_window},
                                         {"failed_run", test_failed_run},
                                         {"tp2", test_tp2},
                                         {"pd", test_pd},
                                         {"pp2_links", test_pp2_links},
                                         {"tp2_message_links", test_tp2_message_links},
                                         {"tier_links", test_tier_links},
                                         {"power", test_power},
                                         {NULL, NULL}};
    sv_test_add_suite("trace", cases);
    return sv_test_run();
}
