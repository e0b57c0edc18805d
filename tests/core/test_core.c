/* core: event order, cancel/reschedule, RNG streams, config getters, the YAML tree, the u64 map. */
#include <math.h>
#include <string.h>

#include "core/core.h"
#include "tests/test_util.h"

struct trace {
    GArray *seen; /* arg values in firing order */
    GArray *times;
};

static void record(sv_engine *eng, void *ctx, uint64_t arg)
{
    struct trace *t = ctx;
    g_array_append_val(t->seen, arg);
    sv_time now = sv_engine_now(eng);
    g_array_append_val(t->times, now);
}

static struct trace trace_new(void)
{
    struct trace t = {g_array_new(FALSE, FALSE, sizeof(uint64_t)),
                      g_array_new(FALSE, FALSE, sizeof(sv_time))};
    return t;
}

static void trace_clear(struct trace *t)
{
    g_array_free(t->seen, TRUE);
    g_array_free(t->times, TRUE);
}

#define SEEN(t, i) g_array_index((t).seen, uint64_t, i)
#define TIME(t, i) g_array_index((t).times, sv_time, i)

static void test_order_time_priority_sequence(void)
{
    sv_engine *eng = sv_engine_new(1);
    struct trace t = trace_new();
    /* Scheduled out of order; expected firing order: by time, then priority, then insertion. */
    sv_engine_schedule(eng, 30, 0, record, &t, 5);
    sv_engine_schedule(eng, 10, 0, record, &t, 2);
    sv_engine_schedule(eng, 10, -1, record, &t, 1);
    sv_engine_schedule(eng, 10, 0, record, &t, 3);
    sv_engine_schedule(eng, 20, 5, record, &t, 4);
    CU_ASSERT_EQUAL(sv_engine_pending(eng), 5);
    CU_ASSERT_EQUAL(sv_engine_run(eng, SV_TIME_MAX), 5);
    CU_ASSERT_EQUAL(t.seen->len, 5);
    for (guint i = 0; i < t.seen->len; i++)
        CU_ASSERT_EQUAL(SEEN(t, i), i + 1);
    SV_ASSERT_EQ_I64(TIME(t, 0), 10);
    SV_ASSERT_EQ_I64(TIME(t, 4), 30);
    SV_ASSERT_EQ_I64(sv_engine_now(eng), 30);
    trace_clear(&t);
    sv_engine_free(eng);
}

static void test_cancel_and_reschedule(void)
{
    sv_engine *eng = sv_engine_new(1);
    struct trace t = trace_new();
    sv_event_id a = sv_engine_schedule(eng, 10, 0, record, &t, 1);
    sv_event_id b = sv_engine_schedule(eng, 20, 0, record, &t, 2);
    sv_event_id c = sv_engine_schedule(eng, 30, 0, record, &t, 3);
    CU_ASSERT_TRUE(sv_engine_cancel(eng, b));
    CU_ASSERT_FALSE(sv_engine_cancel(eng, b)); /* stale */
    CU_ASSERT_TRUE(sv_engine_reschedule(eng, c, 5));
    SV_ASSERT_EQ_I64(sv_engine_event_time(eng, c), 5);
    /* a rescheduled event takes a fresh sequence: at equal time it fires after older events */
    CU_ASSERT_TRUE(sv_engine_reschedule(eng, a, 5));
    sv_engine_run(eng, SV_TIME_MAX);
    CU_ASSERT_EQUAL(t.seen->len, 2);
    CU_ASSERT_EQUAL(SEEN(t, 0), 3);
    CU_ASSERT_EQUAL(SEEN(t, 1), 1);
    CU_ASSERT_FALSE(sv_engine_pending_event(eng, a));
    CU_ASSERT_FALSE(sv_engine_reschedule(eng, a, 100));
    CU_ASSERT_FALSE(sv_engine_cancel(eng, SV_EVENT_NONE));
    trace_clear(&t);
    sv_engine_free(eng);
}

static void test_run_until_and_stop(void)
{
    sv_engine *eng = sv_engine_new(1);
    struct trace t = trace_new();
    for (uint64_t i = 1; i <= 10; i++)
        sv_engine_schedule(eng, (sv_time)i * 100, 0, record, &t, i);
    CU_ASSERT_EQUAL(sv_engine_run(eng, 450), 4);
    SV_ASSERT_EQ_I64(sv_engine_now(eng), 400);
    CU_ASSERT_EQUAL(sv_engine_pending(eng), 6);
    CU_ASSERT_TRUE(sv_engine_step(eng));
    SV_ASSERT_EQ_I64(sv_engine_now(eng), 500);
    CU_ASSERT_EQUAL(sv_engine_run(eng, SV_TIME_MAX), 5);
    CU_ASSERT_FALSE(sv_engine_step(eng));
    CU_ASSERT_EQUAL(sv_engine_events_run(eng), 10);
    trace_clear(&t);
    sv_engine_free(eng);
}

static void stopper(sv_engine *eng, void *ctx, uint64_t arg)
{
    sv_engine_stop(eng);
}

static void test_stop(void)
{
    sv_engine *eng = sv_engine_new(1);
    struct trace t = trace_new();
    sv_engine_schedule(eng, 1, 0, record, &t, 1);
    sv_engine_schedule(eng, 2, 0, stopper, NULL, 0);
    sv_engine_schedule(eng, 3, 0, record, &t, 3);
    CU_ASSERT_EQUAL(sv_engine_run(eng, SV_TIME_MAX), 2);
    CU_ASSERT_EQUAL(t.seen->len, 1);
    CU_ASSERT_EQUAL(sv_engine_pending(eng), 1);
    trace_clear(&t);
    sv_engine_free(eng);
}

/* Random schedule/cancel/reschedule against a brute-force model of the pending set. */
struct ref_event {
    sv_time time;
    int prio;
    uint64_t seq;
    uint64_t tag;
    sv_event_id id;
    gboolean live;
};

static void test_heap_against_reference(void)
{
    sv_engine *eng = sv_engine_new(7);
    sv_rng *rng = sv_rng_new(42, "test/heap");
    struct trace t = trace_new();
    GArray *ref = g_array_new(FALSE, TRUE, sizeof(struct ref_event));
    uint64_t seq = 0;
    for (int i = 0; i < 5000; i++) {
        uint64_t op = sv_rng_below(rng, 10);
        if (op < 6 || ref->len == 0) {
            struct ref_event e = {.time = (sv_time)sv_rng_below(rng, 1000),
                                  .prio = (int)sv_rng_below(rng, 3) - 1,
                                  .seq = seq++,
                                  .tag = ref->len,
                                  .live = TRUE};
            e.id = sv_engine_schedule(eng, e.time, e.prio, record, &t, e.tag);
            g_array_append_val(ref, e);
        } else if (op < 8) {
            struct ref_event *e =
                &g_array_index(ref, struct ref_event, sv_rng_below(rng, ref->len));
            CU_ASSERT_EQUAL(sv_engine_cancel(eng, e->id), e->live);
            e->live = FALSE;
        } else {
            struct ref_event *e =
                &g_array_index(ref, struct ref_event, sv_rng_below(rng, ref->len));
            sv_time nt = (sv_time)sv_rng_below(rng, 1000);
            CU_ASSERT_EQUAL(sv_engine_reschedule(eng, e->id, nt), e->live);
            if (e->live) {
                e->time = nt;
                e->seq = seq++;
            }
        }
    }
    sv_engine_run(eng, SV_TIME_MAX);
    /* Expected order: live events sorted by (time, prio, seq). */
    guint live = 0;
    for (guint i = 0; i < ref->len; i++)
        live += g_array_index(ref, struct ref_event, i).live;
    CU_ASSERT_EQUAL(t.seen->len, live);
    struct ref_event prev = {0};
    for (guint i = 0; i < t.seen->len; i++) {
        struct ref_event *e = &g_array_index(ref, struct ref_event, SEEN(t, i));
        CU_ASSERT_TRUE(e->live);
        if (i > 0) {
            gboolean ordered =
                prev.time < e->time ||
                (prev.time == e->time &&
                 (prev.prio < e->prio || (prev.prio == e->prio && prev.seq < e->seq)));
            CU_ASSERT_TRUE(ordered);
        }
        prev = *e;
    }
    g_array_free(ref, TRUE);
    trace_clear(&t);
    sv_rng_free(rng);
    sv_engine_free(eng);
}

/* Cancelling most events triggers the compaction of stale entries; what is left still fires in
 * (time, priority, sequence) order, and rescheduled events count as newly inserted. */
static void test_compaction(void)
{
    sv_engine *eng = sv_engine_new(3);
    struct trace t = trace_new();
    enum { N = 6000 };
    static sv_event_id ids[N];
    for (uint64_t i = 0; i < N; i++)
        ids[i] = sv_engine_schedule(eng, (sv_time)(i % 50), 0, record, &t, i);
    /* keep every 10th event: 600 live, 5400 cancelled (> 1024 and > live) */
    for (uint64_t i = 0; i < N; i++) {
        if (i % 10 != 0)
            CU_ASSERT_TRUE(sv_engine_cancel(eng, ids[i]));
    }
    CU_ASSERT_EQUAL(sv_engine_pending(eng), N / 10);
    /* move event 0 (time 0) behind the others at time 0 and 10: it must fire after event 10 */
    CU_ASSERT_TRUE(sv_engine_reschedule(eng, ids[0], 10));
    sv_engine_run(eng, SV_TIME_MAX);
    CU_ASSERT_EQUAL(t.seen->len, N / 10);
    for (guint i = 1; i < t.seen->len; i++) {
        sv_time a = TIME(t, i - 1), b = TIME(t, i);
        CU_ASSERT_TRUE(a <= b);
        if (a == b && SEEN(t, i - 1) != 0)
            CU_ASSERT_TRUE(SEEN(t, i - 1) < SEEN(t, i) || SEEN(t, i) == 0);
    }
    /* at time 10: events 10, 60, 110, ... (i % 50 == 10, i % 10 == 0) then the rescheduled 0 */
    guint first10 = 0;
    while (TIME(t, first10) < 10)
        first10++;
    CU_ASSERT_EQUAL(SEEN(t, first10), 10);
    guint last10 = first10;
    while (last10 + 1 < t.seen->len && TIME(t, last10 + 1) == 10)
        last10++;
    CU_ASSERT_EQUAL(SEEN(t, last10), 0);
    trace_clear(&t);
    sv_engine_free(eng);
}

/* The bucket key holds time << 5: an event 2^59 ns after another used to share its bucket and
 * fire at the earlier time. Up to the horizon (2^58 ns) scheduling works; past it the call is
 * refused, the run stops and sv_engine_error says why. */
static void test_horizon(void)
{
    SV_ASSERT_EQ_I64(SV_ENGINE_HORIZON, INT64_C(288230376151711744)); /* 2^58 */
    sv_engine *eng = sv_engine_new(1);
    struct trace t = trace_new();
    CU_ASSERT_NOT_EQUAL(sv_engine_schedule(eng, 10, 0, record, &t, 1), SV_EVENT_NONE);
    CU_ASSERT_NOT_EQUAL(sv_engine_schedule(eng, SV_ENGINE_HORIZON, 0, record, &t, 2),
                        SV_EVENT_NONE);
    CU_ASSERT_EQUAL(sv_engine_run(eng, SV_TIME_MAX), 2);
    SV_ASSERT_EQ_I64(TIME(t, 1), SV_ENGINE_HORIZON);
    CU_ASSERT_PTR_NULL(sv_engine_error(eng));
    sv_engine_free(eng);
    trace_clear(&t);

    eng = sv_engine_new(1);
    t = trace_new();
    sv_engine_schedule(eng, 10, 0, record, &t, 1);
    /* 10 + 2^59: the key that wrapped onto the event at 10 */
    CU_ASSERT_EQUAL(sv_engine_schedule(eng, 10 + (INT64_C(1) << 59), 0, record, &t, 2),
                    SV_EVENT_NONE);
    const GError *e = sv_engine_error(eng);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_TRUE(g_error_matches(e, SV_CORE_ERROR, SV_CORE_ERROR_HORIZON));
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, "at 576460752303423498 ns is past the engine's "
                                              "horizon of 288230376151711744 ns"));
    /* the run is stopped: the event at 10 does not run either */
    CU_ASSERT_EQUAL(sv_engine_run(eng, SV_TIME_MAX), 0);
    CU_ASSERT_EQUAL(t.seen->len, 0);
    sv_engine_free(eng);
    trace_clear(&t);

    /* schedule_in past the horizon (also past int64), and reschedule past it */
    eng = sv_engine_new(1);
    t = trace_new();
    sv_engine_schedule(eng, 5, 0, record, &t, 1);
    sv_engine_run(eng, SV_TIME_MAX);
    CU_ASSERT_NOT_EQUAL(sv_engine_schedule_in(eng, SV_ENGINE_HORIZON - 5, 0, record, &t, 2),
                        SV_EVENT_NONE);
    CU_ASSERT_PTR_NULL(sv_engine_error(eng));
    CU_ASSERT_EQUAL(sv_engine_schedule_in(eng, SV_TIME_MAX, 0, record, &t, 3), SV_EVENT_NONE);
    CU_ASSERT_PTR_NOT_NULL(sv_engine_error(eng));
    sv_engine_free(eng);
    eng = sv_engine_new(1);
    sv_event_id id = sv_engine_schedule(eng, 7, 0, record, &t, 4);
    CU_ASSERT_FALSE(sv_engine_reschedule(eng, id, SV_ENGINE_HORIZON + 1));
    CU_ASSERT_PTR_NOT_NULL_FATAL(sv_engine_error(eng));
    CU_ASSERT_PTR_NOT_NULL(strstr(sv_engine_error(eng)->message, "rescheduled"));
    sv_engine_free(eng);
    trace_clear(&t);
}

static void test_rng_streams(void)
{
    sv_engine *a = sv_engine_new(123);
    sv_engine *b = sv_engine_new(123);
    /* Same (seed, name) -> same sequence, regardless of other streams created first. */
    sv_rng_u64(sv_rng_stream(b, "other"));
    sv_rng *ra = sv_rng_stream(a, "router/random");
    sv_rng *rb = sv_rng_stream(b, "router/random");
    CU_ASSERT_PTR_EQUAL(ra, sv_rng_stream(a, "router/random"));
    for (int i = 0; i < 100; i++)
        CU_ASSERT_EQUAL(sv_rng_u64(ra), sv_rng_u64(rb));
    sv_rng *rc = sv_rng_stream(a, "router/other");
    sv_rng *rd = sv_rng_new(124, "router/random");
    int same_c = 0, same_d = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t x = sv_rng_u64(rb);
        same_c += sv_rng_u64(rc) == x;
        same_d += sv_rng_u64(rd) == x;
    }
    CU_ASSERT_TRUE(same_c < 2);
    CU_ASSERT_TRUE(same_d < 2);
    sv_rng_free(rd);
    sv_engine_free(a);
    sv_engine_free(b);
}

static void test_rng_distributions(void)
{
    sv_rng *r = sv_rng_new(9, "dist");
    const int n = 200000;
    double sum_u = 0, sum_e = 0, sum_n = 0, sum_n2 = 0, sum_g = 0;
    uint64_t hist[7] = {0};
    for (int i = 0; i < n; i++) {
        double u = sv_rng_uniform(r);
        CU_ASSERT_TRUE(u >= 0.0 && u < 1.0);
        sum_u += u;
        sum_e += sv_rng_exponential(r, 4.0); /* mean 0.25 */
        double x = sv_rng_normal(r, 3.0, 2.0);
        sum_n += x;
        sum_n2 += (x - 3.0) * (x - 3.0);
        sum_g += sv_rng_gamma(r, 0.5, 2.0); /* mean shape*scale = 1 */
        hist[sv_rng_below(r, 7)]++;
    }
    /* Tolerances: > 5 standard errors of the mean for n = 2e5. */
    CU_ASSERT_DOUBLE_EQUAL(sum_u / n, 0.5, 0.004);
    CU_ASSERT_DOUBLE_EQUAL(sum_e / n, 0.25, 0.003);
    CU_ASSERT_DOUBLE_EQUAL(sum_n / n, 3.0, 0.025);
    CU_ASSERT_DOUBLE_EQUAL(sqrt(sum_n2 / n), 2.0, 0.02);
    CU_ASSERT_DOUBLE_EQUAL(sum_g / n, 1.0, 0.02);
    for (int k = 0; k < 7; k++)
        CU_ASSERT_DOUBLE_EQUAL((double)hist[k] / n, 1.0 / 7.0, 0.005);
    sv_rng_free(r);
}

static void test_time_helpers(void)
{
    SV_ASSERT_EQ_I64(sv_time_from_ns(20031.25), 20031);
    SV_ASSERT_EQ_I64(sv_time_from_ns(0.999), 0);
    SV_ASSERT_EQ_I64(sv_time_from_ns(-5.0), 0);
    SV_ASSERT_EQ_I64(sv_time_from_ns(NAN), 0);
    /* too long: past the horizon, yet a few of them added to a time stay in int64 */
    SV_ASSERT_EQ_I64(sv_time_from_ns(1e300), SV_TIME_BEYOND);
    CU_ASSERT(SV_TIME_BEYOND > SV_ENGINE_HORIZON);
    /* saturating sums and multiples of durations stop at SV_TIME_BEYOND, never wrap */
    SV_ASSERT_EQ_I64(sv_time_add_sat(3, 4), 7);
    SV_ASSERT_EQ_I64(sv_time_add_sat(SV_TIME_BEYOND, SV_TIME_BEYOND), SV_TIME_BEYOND);
    SV_ASSERT_EQ_I64(sv_time_add_sat(SV_TIME_BEYOND - 1, 1), SV_TIME_BEYOND);
    SV_ASSERT_EQ_I64(sv_time_add_sat(SV_TIME_BEYOND - 2, 1), SV_TIME_BEYOND - 1);
    SV_ASSERT_EQ_I64(sv_time_mul_sat(SV_TIME_BEYOND, 32), SV_TIME_BEYOND);
    SV_ASSERT_EQ_I64(sv_time_mul_sat(5, 0), 0);
    SV_ASSERT_EQ_I64(sv_time_mul_sat(1000, 1000), 1000000);
    /* 50 GB/s in ASTRA-sim units: 50 * 2^30 / 1e9 = 53.6870912 bytes/ns */
    CU_ASSERT_DOUBLE_EQUAL(sv_bw_gbps_to_bytes_per_ns(50.0), 53.6870912, 1e-9);
}

static void test_config_getters(void)
{
    char *dir = sv_test_tmpdir();
    char *path = g_build_filename(dir, "c.json", NULL);
    g_file_set_contents(path, "{\"a\": 3, \"b\": 2.5, \"s\": \"x\", \"f\": 4.0, \"bad\": \"no\"}",
                        -1, NULL);
    GError *err = NULL;
    JsonNode *root = sv_cfg_load_json(path, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    JsonObject *o = json_node_get_object(root);
    int64_t i;
    double d;
    const char *s;
    CU_ASSERT_TRUE(sv_cfg_get_int(o, "a", "c.json", TRUE, 0, &i, &err));
    SV_ASSERT_EQ_I64(i, 3);
    CU_ASSERT_TRUE(sv_cfg_get_int(o, "f", "c.json", TRUE, 0, &i, &err));
    SV_ASSERT_EQ_I64(i, 4);
    CU_ASSERT_TRUE(sv_cfg_get_int(o, "missing", "c.json", FALSE, 17, &i, &err));
    SV_ASSERT_EQ_I64(i, 17);
    CU_ASSERT_TRUE(sv_cfg_get_double(o, "b", "c.json", TRUE, 0, &d, &err));
    CU_ASSERT_DOUBLE_EQUAL(d, 2.5, 0);
    CU_ASSERT_TRUE(sv_cfg_get_string(o, "s", "c.json", TRUE, NULL, &s, &err));
    CU_ASSERT_STRING_EQUAL(s, "x");
    CU_ASSERT_FALSE(sv_cfg_get_int(o, "b", "c.json", TRUE, 0, &i, &err));
    CU_ASSERT_PTR_NOT_NULL(err);
    if (err)
        CU_ASSERT_PTR_NOT_NULL(strstr(err->message, "c.json.b"));
    g_clear_error(&err);
    CU_ASSERT_FALSE(sv_cfg_get_double(o, "bad", "c.json", TRUE, 0, &d, &err));
    g_clear_error(&err);
    CU_ASSERT_FALSE(sv_cfg_get_int(o, "missing", "c.json", TRUE, 0, &i, &err));
    CU_ASSERT_PTR_NOT_NULL(err);
    if (err)
        CU_ASSERT_PTR_NOT_NULL(strstr(err->message, "missing"));
    g_clear_error(&err);
    json_node_unref(root);

    /* the one integer rule: 2.0 is 2; 2.5, "2", true and 2^63 are not integers */
    static const struct {
        const char *json;
        gboolean ok;
        int64_t v;
    } ints[] = {{"2", TRUE, 2},       {"2.0", TRUE, 2},
                {"-3.0", TRUE, -3},   {"2.5", FALSE, 0},
                {"\"2\"", FALSE, 0},  {"true", FALSE, 0},
                {"9.3e18", FALSE, 0}, {"9.0e18", TRUE, INT64_C(9000000000000000000)}};
    for (size_t k = 0; k < G_N_ELEMENTS(ints); k++) {
        JsonNode *n = json_from_string(ints[k].json, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(n);
        int64_t v = -1;
        CU_ASSERT_EQUAL(sv_cfg_node_int(n, &v), ints[k].ok);
        if (ints[k].ok)
            SV_ASSERT_EQ_I64(v, ints[k].v);
        json_node_unref(n);
    }

    g_file_set_contents(path, "{\"a\": 3,\n \"b\": }", -1, NULL);
    CU_ASSERT_PTR_NULL(sv_cfg_load_json(path, &err));
    CU_ASSERT_PTR_NOT_NULL(err);
    if (err)
        CU_ASSERT_PTR_NOT_NULL(strstr(err->message, path));
    g_clear_error(&err);
    g_free(path);
    sv_test_rmtree(dir);
    g_free(dir);
}

/* The YAML tree: kinds, file order, the line of every node, aliases, errors naming PATH:LINE. */
/* sv_cfg_format_double: the shortest text that reads back to the same double (Python's repr
 * digits for these values), integers without an exponent below 1e15. */
static void test_format_double(void)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    const struct {
        double v;
        const char *text;
    } cases[] = {
        {1600, "1600"},
        {0, "0"},
        {-3, "-3"},
        {0.1, "0.1"},
        {0.1 + 0.2, "0.30000000000000004"},
        {1.0 / 3.0, "0.3333333333333333"},
        {2.5e-7, "2.5e-07"},
        {4.5e17, "4.5e+17"},
        {123456.789, "123456.789"},
        {999999999999999, "999999999999999"},
        {1e15, "1e+15"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
        CU_ASSERT_STRING_EQUAL(sv_cfg_format_double(buf, cases[i].v), cases[i].text);
    /* Any double reads back to itself. */
    sv_rng *rng = sv_rng_new(7, "format_double");
    for (int i = 0; i < 10000; i++) {
        uint64_t bits = sv_rng_u64(rng);
        double v;
        memcpy(&v, &bits, sizeof v);
        if (!isfinite(v))
            continue;
        sv_cfg_format_double(buf, v);
        double back = g_ascii_strtod(buf, NULL);
        CU_ASSERT_TRUE(memcmp(&back, &v, sizeof v) == 0 || (v == 0 && back == 0));
    }
    sv_rng_free(rng);
}

static void test_yaml(void)
{
    char *dir = sv_test_tmpdir();
    char *path = g_build_filename(dir, "y.yml", NULL);
    g_file_set_contents(path,
                        "# comment\n"
                        "a: 1\n"
                        "list:\n"
                        "  - &x two\n"
                        "  - [3, 4]\n"
                        "m: {k: *x}\n",
                        -1, NULL);
    GError *err = NULL;
    sv_yaml_node *y = sv_yaml_load(path, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(y);
    CU_ASSERT_EQUAL(y->kind, SV_YAML_MAP);
    CU_ASSERT_EQUAL(y->keys->len, 3);
    CU_ASSERT_STRING_EQUAL(((sv_yaml_node *)y->keys->pdata[1])->scalar, "list");
    CU_ASSERT_EQUAL(((sv_yaml_node *)y->keys->pdata[1])->line, 3);
    sv_yaml_node *a = sv_yaml_get(y, "a");
    CU_ASSERT_FATAL(a && a->kind == SV_YAML_SCALAR);
    CU_ASSERT_STRING_EQUAL(a->scalar, "1");
    CU_ASSERT_EQUAL(a->line, 2);
    sv_yaml_node *l = sv_yaml_get(y, "list");
    CU_ASSERT_FATAL(l && l->kind == SV_YAML_SEQ && l->items->len == 2);
    CU_ASSERT_EQUAL(((sv_yaml_node *)l->items->pdata[1])->line, 5);
    CU_ASSERT_EQUAL(((sv_yaml_node *)l->items->pdata[1])->kind, SV_YAML_SEQ);
    sv_yaml_node *k = sv_yaml_get(sv_yaml_get(y, "m"), "k");
    CU_ASSERT_FATAL(k != NULL);
    CU_ASSERT_STRING_EQUAL(k->scalar, "two");
    CU_ASSERT_EQUAL(k->line, 6);
    CU_ASSERT_PTR_NULL(sv_yaml_get(y, "absent"));
    CU_ASSERT_PTR_NULL(sv_yaml_get(a, "a"));
    sv_yaml_free(y);

    g_file_set_contents(path, "", -1, NULL);
    y = sv_yaml_load(path, &err);
    CU_ASSERT_FATAL(y && y->kind == SV_YAML_SCALAR);
    CU_ASSERT_STRING_EQUAL(y->scalar, "");
    sv_yaml_free(y);

    g_file_set_contents(path, "a: 1\nb: [2,\n", -1, NULL);
    CU_ASSERT_PTR_NULL(sv_yaml_load(path, &err));
    CU_ASSERT_FATAL(err != NULL);
    CU_ASSERT(g_error_matches(err, SV_CORE_ERROR, SV_CORE_ERROR_PARSE));
    g_autofree char *where = g_strdup_printf("%s:3:", path);
    CU_ASSERT_PTR_NOT_NULL(strstr(err->message, where));
    g_clear_error(&err);
    g_file_set_contents(path, "a: *nowhere\n", -1, NULL);
    CU_ASSERT_PTR_NULL(sv_yaml_load(path, &err));
    CU_ASSERT(err && strstr(err->message, ":1: undefined alias"));
    g_clear_error(&err);
    CU_ASSERT_PTR_NULL(sv_yaml_load("/nonexistent/y.yml", &err));
    CU_ASSERT(g_error_matches(err, SV_CORE_ERROR, SV_CORE_ERROR_IO));
    g_clear_error(&err);
    g_free(path);
    sv_test_rmtree(dir);
    g_free(dir);
}

/* The u64 map against GHashTable as the reference: random puts, replaces and removes on a small
 * key range (long probe runs, wrap-around, backward shifts), key 0 included. */
static void test_u64map(void)
{
    sv_u64map m = {0};
    GHashTable *ref = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
    sv_rng *rng = sv_rng_new(7, "test/u64map");
    for (int step = 0; step < 200000; step++) {
        /* keys with few distinct low bits collide in the table on purpose */
        uint64_t key = sv_rng_below(rng, 600) << (step % 3 == 0 ? 40 : 0);
        uint64_t op = sv_rng_below(rng, 3);
        gint64 k64 = (gint64)key;
        if (op < 2) {
            uint64_t val = sv_rng_u64(rng);
            sv_u64map_put(&m, key, val);
            g_hash_table_replace(ref, g_memdup2(&k64, sizeof k64), g_memdup2(&val, sizeof val));
        } else {
            gboolean had = g_hash_table_remove(ref, &k64);
            CU_ASSERT_EQUAL(sv_u64map_remove(&m, key), had);
        }
        uint64_t probe = sv_rng_below(rng, 600) << (step % 2 ? 40 : 0);
        gint64 p64 = (gint64)probe;
        const uint64_t *want = g_hash_table_lookup(ref, &p64);
        uint64_t got = sv_u64map_get(&m, probe, 12345);
        CU_ASSERT_EQUAL(got, want ? *want : 12345);
        CU_ASSERT_EQUAL(m.len, g_hash_table_size(ref));
    }
    sv_u64map_clear(&m);
    CU_ASSERT_EQUAL(sv_u64map_get(&m, 3, 9), 9);
    sv_rng_free(rng);
    g_hash_table_destroy(ref);
}

int main(void)
{
    static const sv_test_case engine[] = {
        {"order by time, priority, sequence", test_order_time_priority_sequence},
        {"cancel and reschedule", test_cancel_and_reschedule},
        {"run until and step", test_run_until_and_stop},
        {"stop", test_stop},
        {"heap against reference model", test_heap_against_reference},
        {"compaction of cancelled events", test_compaction},
        {"time horizon", test_horizon},
        {NULL, NULL}};
    static const sv_test_case misc[] = {{"rng streams", test_rng_streams},
                                        {"rng distributions", test_rng_distributions},
                                        {"time helpers", test_time_helpers},
                                        {"config getters", test_config_getters},
                                        {"format double", test_format_double},
                                        {"yaml tree", test_yaml},
                                        {"u64 map", test_u64map},
                                        {NULL, NULL}};
    sv_test_add_suite("engine", engine);
    sv_test_add_suite("core", misc);
    return sv_test_run();
}
