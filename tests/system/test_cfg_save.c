/* The system layer's config writers (system/cfg_save.c): sv_sys_cfg_save_json and
 * sv_sys_groups_save_json write what their readers (sv_sys_cfg_load_json,
 * sv_sys_groups_load_json) read back as the same values; the text is ASTRA-sim's spelling
 * (compared with a file written out by hand from CHAKRA_ET.md 3.3 and 3.5 and ASTRA-sim's
 * shipped Ring_4chunks.json); bad values fail with the field named and nothing written. */
#include "system/system.h"
#include "tests/test_util.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static char *tmp;

static char *tmp_path(const char *name)
{
    return g_build_filename(tmp, name, NULL);
}

static char *slurp(const char *path)
{
    char *text = NULL;
    CU_ASSERT_TRUE_FATAL(g_file_get_contents(path, &text, NULL, NULL));
    return text;
}

static void impl_set(struct sv_sys_cfg *c, sv_sys_coll_type t, int n,
                     const struct sv_sys_impl *impls)
{
    c->n_impl[t] = n;
    for (int d = 0; d < n; d++)
        c->impl[t][d] = impls[d];
}

/* Every field the JSON carries, compared one by one (doubles exactly). */
static void expect_same(const struct sv_sys_cfg *a, const struct sv_sys_cfg *b)
{
    CU_ASSERT_EQUAL(a->scheduling_policy, b->scheduling_policy);
    CU_ASSERT_EQUAL(a->collective_optimization, b->collective_optimization);
    SV_ASSERT_EQ_I64(a->endpoint_delay_ns, b->endpoint_delay_ns);
    CU_ASSERT_EQUAL(a->active_chunks_per_dimension, b->active_chunks_per_dimension);
    CU_ASSERT_EQUAL(a->preferred_dataset_splits, b->preferred_dataset_splits);
    CU_ASSERT_TRUE(memcmp(&a->local_mem_bw, &b->local_mem_bw, sizeof(double)) == 0);
    CU_ASSERT_TRUE(memcmp(&a->peak_perf_tflops, &b->peak_perf_tflops, sizeof(double)) == 0);
    CU_ASSERT_TRUE(memcmp(&a->local_reduction_delay, &b->local_reduction_delay, sizeof(double)) ==
                   0);
    CU_ASSERT_EQUAL(!a->roofline_enabled, !b->roofline_enabled);
    CU_ASSERT_EQUAL(!a->replay_only, !b->replay_only);
    CU_ASSERT_EQUAL(!a->trace_enabled, !b->trace_enabled);
    CU_ASSERT_EQUAL(!a->track_local_mem, !b->track_local_mem);
    CU_ASSERT_EQUAL(!a->model_shared_bus, !b->model_shared_bus);
    for (int t = 0; t < SV_SYS_TYPE_COUNT; t++) {
        CU_ASSERT_EQUAL(a->n_impl[t], b->n_impl[t]);
        for (int d = 0; d < a->n_impl[t] && d < b->n_impl[t]; d++) {
            CU_ASSERT_EQUAL(a->impl[t][d].kind, b->impl[t][d].kind);
            CU_ASSERT_EQUAL(a->impl[t][d].direct_window, b->impl[t][d].direct_window);
        }
        CU_ASSERT_STRING_EQUAL(a->custom_prefix[t] ? a->custom_prefix[t] : "(none)",
                               b->custom_prefix[t] ? b->custom_prefix[t] : "(none)");
        CU_ASSERT_EQUAL(a->group_impl[t], b->group_impl[t]);
    }
    CU_ASSERT_EQUAL(a->queues_per_dim, b->queues_per_dim);
    CU_ASSERT_EQUAL(a->comm_scale, b->comm_scale);
    CU_ASSERT_EQUAL(a->injection_scale, b->injection_scale);
}

static void roundtrip(const struct sv_sys_cfg *c, int ndims, const char *name)
{
    g_autofree char *path = tmp_path(name);
    GError *err = NULL;
    gboolean ok = sv_sys_cfg_save_json(c, ndims, path, &err);
    if (!ok)
        fprintf(stderr, "%s\n", err->message);
    CU_ASSERT_TRUE_FATAL(ok);
    struct sv_sys_cfg back;
    ok = sv_sys_cfg_load_json(path, &back, &err);
    if (!ok)
        fprintf(stderr, "%s\n", err->message);
    CU_ASSERT_TRUE_FATAL(ok);
    expect_same(c, &back);
    sv_sys_cfg_clear(&back);
    /* Same input, same bytes. */
    g_autofree char *again = tmp_path("again.json");
    CU_ASSERT_TRUE(sv_sys_cfg_save_json(c, ndims, again, NULL));
    g_autofree char *x = slurp(path), *y = slurp(again);
    CU_ASSERT_STRING_EQUAL(x, y);
}

/* ASTRA-sim's Ring_4chunks.json as a struct, written in the order and spelling of the shipped
 * file, then every key sv_sys_cfg_load_json reads beyond it. */
static void test_ring4chunks_text(void)
{
    struct sv_sys_cfg c;
    sv_sys_cfg_init(&c);
    c.preferred_dataset_splits = 4;
    c.collective_optimization = SV_SYS_OPT_LOCAL_BW_AWARE;
    c.local_mem_bw = 1600;
    c.peak_perf_tflops = 900;
    const struct sv_sys_impl ring = {SV_SYS_IMPL_RING, -1};
    const sv_sys_coll_type types[] = {SV_SYS_ALL_REDUCE, SV_SYS_ALL_GATHER, SV_SYS_REDUCE_SCATTER,
                                      SV_SYS_ALL_TO_ALL};
    for (int i = 0; i < 4; i++)
        impl_set(&c, types[i], 1, &ring);
    g_autofree char *path = tmp_path("ring4chunks.json");
    CU_ASSERT_TRUE_FATAL(sv_sys_cfg_save_json(&c, 1, path, NULL));
    g_autofree char *text = slurp(path);
    static const char want[] = "{\n"
                               "    \"scheduling-policy\": \"LIFO\",\n"
                               "    \"endpoint-delay\": 10,\n"
                               "    \"active-chunks-per-dimension\": 1,\n"
                               "    \"preferred-dataset-splits\": 4,\n"
                               "    \"all-reduce-implementation\": [\"ring\"],\n"
                               "    \"all-gather-implementation\": [\"ring\"],\n"
                               "    \"reduce-scatter-implementation\": [\"ring\"],\n"
                               "    \"all-to-all-implementation\": [\"ring\"],\n"
                               "    \"collective-optimization\": \"localBWAware\",\n"
                               "    \"local-mem-bw\": 1600,\n"
                               "    \"boost-mode\": 0,\n"
                               "    \"roofline-enabled\": 0,\n"
                               "    \"peak-perf\": 900,\n"
                               "    \"local-reduction-delay\": 1,\n"
                               "    \"trace-enabled\": 0,\n"
                               "    \"replay-only\": 0,\n"
                               "    \"track-local-mem\": 0,\n"
                               "    \"model-shared-bus\": 0\n"
                               "}\n";
    CU_ASSERT_STRING_EQUAL(text, want);
    if (strcmp(text, want) != 0)
        fprintf(stderr, "\n%s", text);
    roundtrip(&c, 1, "ring4chunks_rt.json");
    sv_sys_cfg_clear(&c);
}

/* Every value a field can take that the reader distinguishes, across three dimensions: the
 * implementation names with and without windows, the "one*" ones, policies, doubles that need
 * all 17 digits, flags, a custom prefix, the group algorithm. */
static void test_roundtrip_all(void)
{
    struct sv_sys_cfg c;
    sv_sys_cfg_init(&c);
    c.scheduling_policy = SV_SYS_SCHED_EXPLICIT;
    c.endpoint_delay_ns = 17;
    c.active_chunks_per_dimension = 3;
    c.preferred_dataset_splits = 64;
    c.local_mem_bw = 0.1;
    c.peak_perf_tflops = 0.1 + 0.2; /* 0.30000000000000004: 17 digits */
    c.local_reduction_delay = 2.5e-7;
    c.roofline_enabled = TRUE;
    c.track_local_mem = TRUE;
    c.replay_only = TRUE;
    c.trace_enabled = TRUE;
    const struct sv_sys_impl ar[] = {{SV_SYS_IMPL_DIRECT, 8},
                                     {SV_SYS_IMPL_HALVING_DOUBLING, -1},
                                     {SV_SYS_IMPL_DOUBLE_BINARY_TREE, -1}};
    const struct sv_sys_impl ag[] = {{SV_SYS_IMPL_ONE_DIRECT, 99999}};
    const struct sv_sys_impl rs[] = {{SV_SYS_IMPL_RING, -1},
                                     {SV_SYS_IMPL_ONE_HALVING_DOUBLING, -1}};
    const struct sv_sys_impl a2a[] = {
        {SV_SYS_IMPL_DIRECT, -1}, {SV_SYS_IMPL_ONE_RING, -1}, {SV_SYS_IMPL_ONE_DIRECT, -1}};
    impl_set(&c, SV_SYS_ALL_REDUCE, 3, ar);
    impl_set(&c, SV_SYS_ALL_GATHER, 1, ag);
    impl_set(&c, SV_SYS_REDUCE_SCATTER, 2, rs);
    impl_set(&c, SV_SYS_ALL_TO_ALL, 3, a2a);
    c.group_impl[SV_SYS_ALL_TO_ALL] = SV_SYS_IMPL_DIRECT;
    c.group_impl[SV_SYS_ALL_GATHER] = SV_SYS_IMPL_DIRECT;
    /* an absolute prefix reads back as it is (the reader probes <prefix>.0.et only for relative
     * ones) */
    c.custom_prefix[SV_SYS_REDUCE_SCATTER] = g_build_filename(tmp, "plans", "rs", NULL);
    roundtrip(&c, 3, "all.json");

    g_autofree char *path = tmp_path("all.json");
    g_autofree char *text = slurp(path);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"scheduling-policy\": \"EXPLICIT\""));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(text, "\"all-reduce-implementation\": [\"direct8\", \"halvingDoubling\", "
                     "\"doubleBinaryTree\"]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"all-gather-implementation\": [\"oneDirect99999\"]"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(text, "\"reduce-scatter-implementation\": [\"ring\", \"oneHalvingDoubling\"]"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(text, "\"all-to-all-implementation\": [\"direct\", \"oneRing\", \"oneDirect\"]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"local-mem-bw\": 0.1,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"peak-perf\": 0.30000000000000004,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"local-reduction-delay\": 2.5e-07,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"collective-optimization\": \"baseline\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(
        text, "\"servesim-group-implementation\": {\"all-gather\": \"direct\", \"all-to-all\": "
              "\"direct\"}"));
    CU_ASSERT_PTR_NULL(strstr(text, "servesim-command-line"));

    /* The same on one dimension: each list cut to its first entry. */
    g_autofree char *one = tmp_path("one.json");
    CU_ASSERT_TRUE_FATAL(sv_sys_cfg_save_json(&c, 1, one, NULL));
    struct sv_sys_cfg back;
    CU_ASSERT_TRUE_FATAL(sv_sys_cfg_load_json(one, &back, NULL));
    for (int t = 0; t < SV_SYS_TYPE_COUNT; t++) {
        CU_ASSERT_EQUAL(back.n_impl[t], c.n_impl[t] > 0 ? 1 : 0);
        if (c.n_impl[t] > 0) {
            CU_ASSERT_EQUAL(back.impl[t][0].kind, c.impl[t][0].kind);
            CU_ASSERT_EQUAL(back.impl[t][0].direct_window, c.impl[t][0].direct_window);
        }
    }
    sv_sys_cfg_clear(&back);
    sv_sys_cfg_clear(&c);
}

/* What is not a JSON key: ASTRA-sim's command-line knobs other than 1 are named, not read
 * back; fast_collectives is not written; the window field of an implementation other than
 * direct is no part of its name. A custom prefix relative to the working directory (what the
 * reader keeps when it resolved it there) comes back absolute, so the file reads the same from
 * any folder. */
static void test_not_keys(void)
{
    struct sv_sys_cfg c;
    sv_sys_cfg_init(&c);
    c.preferred_dataset_splits = 1;
    c.queues_per_dim = 2;
    c.comm_scale = 0.5;
    c.fast_collectives = FALSE;
    const struct sv_sys_impl ring0 = {SV_SYS_IMPL_RING, 0}; /* zero-initialised by a caller */
    impl_set(&c, SV_SYS_ALL_REDUCE, 1, &ring0);
    g_autofree char *old_cwd = g_get_current_dir();
    CU_ASSERT_EQUAL_FATAL(g_chdir(tmp), 0);
    g_autofree char *here = g_get_current_dir();
    CU_ASSERT_EQUAL(g_mkdir_with_parents("rel", 0755), 0);
    CU_ASSERT_TRUE(g_file_set_contents("rel/ar.0.et", "", 0, NULL));
    c.custom_prefix[SV_SYS_ALL_REDUCE] = g_strdup("rel/ar");
    gboolean saved = sv_sys_cfg_save_json(&c, 1, "notkeys.json", NULL);
    CU_ASSERT_EQUAL(g_chdir(old_cwd), 0);
    CU_ASSERT_TRUE_FATAL(saved);
    g_autofree char *path = tmp_path("notkeys.json");
    g_autofree char *text = slurp(path);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"servesim-command-line\": \"--num-queues-per-dim=2 "
                                        "--comm-scale=0.5 --injection-scale=1\""));
    CU_ASSERT_PTR_NULL(strstr(text, "fast"));
    CU_ASSERT_PTR_NULL(strstr(text, "servesim-group-implementation"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"all-reduce-implementation\": [\"ring\"]"));
    g_autofree char *abs = g_build_filename(here, "rel", "ar", NULL);
    g_autofree char *want = g_strdup_printf("\"all-reduce-implementation-custom\": [\"%s\"]", abs);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
    struct sv_sys_cfg back;
    CU_ASSERT_TRUE_FATAL(sv_sys_cfg_load_json(path, &back, NULL));
    CU_ASSERT_EQUAL(back.queues_per_dim, 1);
    CU_ASSERT_EQUAL(back.comm_scale, 1.0);
    CU_ASSERT_TRUE(back.fast_collectives);
    CU_ASSERT_EQUAL(back.impl[SV_SYS_ALL_REDUCE][0].kind, SV_SYS_IMPL_RING);
    CU_ASSERT_EQUAL(back.impl[SV_SYS_ALL_REDUCE][0].direct_window, -1);
    CU_ASSERT_STRING_EQUAL(back.custom_prefix[SV_SYS_ALL_REDUCE], abs);
    sv_sys_cfg_clear(&back);
    sv_sys_cfg_clear(&c);
}

/* A value the reader would refuse is an error naming the file and the field, and nothing is
 * written (an earlier file at the path stays as it was). */
static void test_errors(void)
{
    g_autofree char *path = tmp_path("bad.json");
    CU_ASSERT_TRUE(g_file_set_contents(path, "old", -1, NULL));
    struct {
        const char *needle;
        int ndims;
        void (*spoil)(struct sv_sys_cfg *c);
    } cases[] = {
        {"9 network dimensions", 9, NULL},
        {"preferred-dataset-splits", 1, NULL},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        struct sv_sys_cfg c;
        sv_sys_cfg_init(&c);
        if (i == 0)
            c.preferred_dataset_splits = 1;
        GError *err = NULL;
        CU_ASSERT_FALSE(sv_sys_cfg_save_json(&c, cases[i].ndims, path, &err));
        CU_ASSERT_PTR_NOT_NULL_FATAL(err);
        CU_ASSERT_PTR_NOT_NULL(strstr(err->message, cases[i].needle));
        CU_ASSERT_TRUE(g_str_has_prefix(err->message, path));
        g_clear_error(&err);
    }
    struct sv_sys_cfg c;
    sv_sys_cfg_init(&c);
    c.preferred_dataset_splits = 1;
    GError *err = NULL;
    c.local_mem_bw = NAN;
    CU_ASSERT_FALSE(sv_sys_cfg_save_json(&c, 1, path, &err));
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, "local-mem-bw: nan is not a finite"));
    g_clear_error(&err);
    c.local_mem_bw = -1;
    CU_ASSERT_FALSE(sv_sys_cfg_save_json(&c, 1, path, &err));
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, "local-mem-bw: -1 is not a finite "
                                                       "number >= 0"));
    g_clear_error(&err);
    c.local_mem_bw = 0;
    c.group_impl[SV_SYS_ALL_REDUCE] = SV_SYS_IMPL_HALVING_DOUBLING;
    CU_ASSERT_FALSE(sv_sys_cfg_save_json(&c, 1, path, &err));
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, "servesim-group-implementation.all-reduce"));
    g_clear_error(&err);
    c.group_impl[SV_SYS_ALL_REDUCE] = SV_SYS_IMPL_RING;
    const struct sv_sys_impl bad = {SV_SYS_IMPL_DIRECT, 0};
    impl_set(&c, SV_SYS_ALL_TO_ALL, 1, &bad);
    CU_ASSERT_FALSE(sv_sys_cfg_save_json(&c, 1, path, &err));
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, "all-to-all-implementation[0]: direct "
                                                       "window 0"));
    g_clear_error(&err);
    g_autofree char *text = slurp(path);
    CU_ASSERT_STRING_EQUAL(text, "old");
    /* An unwritable place names the file. */
    g_autofree char *nowhere = tmp_path("no/such/dir/x.json");
    impl_set(&c, SV_SYS_ALL_TO_ALL, 0, NULL);
    CU_ASSERT_FALSE(sv_sys_cfg_save_json(&c, 1, nowhere, &err));
    CU_ASSERT_PTR_NOT_NULL(err && g_str_has_prefix(err->message, nowhere));
    g_clear_error(&err);
    sv_sys_cfg_clear(&c);
}

/* The reader of "servesim-group-implementation": ring and direct per collective; anything else
 * is an error naming the key. */
static void test_group_impl_key(void)
{
    g_autofree char *path = tmp_path("group.json");
    const struct {
        const char *json;
        const char *needle; /* NULL: loads */
    } cases[] = {
        {"{\"preferred-dataset-splits\": 1, \"servesim-group-implementation\": "
         "{\"all-to-all\": \"direct\", \"all-reduce\": \"ring\"}}",
         NULL},
        {"{\"preferred-dataset-splits\": 1, \"servesim-group-implementation\": [\"direct\"]}",
         "servesim-group-implementation must be an object"},
        {"{\"preferred-dataset-splits\": 1, \"servesim-group-implementation\": {\"all-to-one\": "
         "\"direct\"}}",
         "servesim-group-implementation.all-to-one: unknown collective"},
        {"{\"preferred-dataset-splits\": 1, \"servesim-group-implementation\": {\"all-to-all\": "
         "\"halvingDoubling\"}}",
         "servesim-group-implementation.all-to-all: 'halvingDoubling' is not ring or direct"},
        {"{\"preferred-dataset-splits\": 1, \"servesim-group-implementation\": {\"all-to-all\": "
         "1}}",
         "servesim-group-implementation.all-to-all: expected a string"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        CU_ASSERT_TRUE(g_file_set_contents(path, cases[i].json, -1, NULL));
        struct sv_sys_cfg c;
        GError *err = NULL;
        gboolean ok = sv_sys_cfg_load_json(path, &c, &err);
        CU_ASSERT_EQUAL(ok, cases[i].needle == NULL);
        if (ok) {
            CU_ASSERT_EQUAL(c.group_impl[SV_SYS_ALL_TO_ALL], SV_SYS_IMPL_DIRECT);
            CU_ASSERT_EQUAL(c.group_impl[SV_SYS_ALL_REDUCE], SV_SYS_IMPL_RING);
            CU_ASSERT_EQUAL(c.group_impl[SV_SYS_ALL_GATHER], SV_SYS_IMPL_RING);
            sv_sys_cfg_clear(&c);
        } else {
            CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, cases[i].needle));
            if (err && !strstr(err->message, cases[i].needle))
                fprintf(stderr, "\n%s\n", err->message);
            CU_ASSERT_PTR_NOT_NULL(err && g_str_has_prefix(err->message, path));
            g_clear_error(&err);
        }
    }
}

/* ---- communicator groups -------------------------------------------------------------------- */

static void test_groups(void)
{
    g_autoptr(GError) err = NULL;
    sv_sys_groups *g = sv_sys_groups_new();
    const int a[] = {5, 4}, b[] = {8, 6, 7}, c[] = {2, 3};
    CU_ASSERT_TRUE(sv_sys_groups_add(g, 3, b, 3, NULL));
    CU_ASSERT_TRUE(sv_sys_groups_add(g, 1, a, 2, NULL));
    CU_ASSERT_TRUE(sv_sys_groups_add(g, 7, c, 2, NULL));
    CU_ASSERT_EQUAL(sv_sys_groups_count(g), 3);
    CU_ASSERT_EQUAL(sv_sys_groups_id_at(g, 0), 1);
    CU_ASSERT_EQUAL(sv_sys_groups_id_at(g, 2), 7);
    g_autofree char *path = tmp_path("groups.json");

    /* all groups, id order, members in their order, base 0: the same groups come back */
    CU_ASSERT_TRUE_FATAL(sv_sys_groups_save_json(g, NULL, 0, 0, path, &err));
    g_autofree char *text = slurp(path);
    CU_ASSERT_STRING_EQUAL(text, "{\"1\": [5, 4], \"3\": [8, 6, 7], \"7\": [2, 3]}\n");
    sv_sys_groups *back = sv_sys_groups_load_json(path, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    CU_ASSERT_EQUAL(sv_sys_groups_count(back), 3);
    for (int i = 0; i < 3; i++) {
        int id = sv_sys_groups_id_at(g, i), n1 = 0, n2 = 0;
        CU_ASSERT_EQUAL(sv_sys_groups_id_at(back, i), id);
        const int *m1 = sv_sys_groups_members(g, id, &n1);
        const int *m2 = sv_sys_groups_members(back, id, &n2);
        CU_ASSERT_EQUAL_FATAL(n1, n2);
        CU_ASSERT_TRUE(memcmp(m1, m2, sizeof(int) * n1) == 0);
    }
    sv_sys_groups_free(back);

    /* chosen groups of one instance whose NPUs start at 4: local ids, in the order listed */
    const int ids[] = {3, 1};
    CU_ASSERT_TRUE_FATAL(sv_sys_groups_save_json(g, ids, 2, 4, path, &err));
    g_free(text);
    text = slurp(path);
    CU_ASSERT_STRING_EQUAL(text, "{\"3\": [4, 2, 3], \"1\": [1, 0]}\n");
    back = sv_sys_groups_load_json(path, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    int n = 0;
    const int *m = sv_sys_groups_members(back, 3, &n);
    CU_ASSERT_EQUAL_FATAL(n, 3);
    CU_ASSERT_TRUE(m[0] == 4 && m[1] == 2 && m[2] == 3);
    sv_sys_groups_free(back);

    /* no groups: an empty object, which reads back as none */
    CU_ASSERT_TRUE_FATAL(sv_sys_groups_save_json(NULL, NULL, 0, 0, path, &err));
    back = sv_sys_groups_load_json(path, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    CU_ASSERT_EQUAL(sv_sys_groups_count(back), 0);
    sv_sys_groups_free(back);

    /* errors: nothing written */
    CU_ASSERT_TRUE(g_file_set_contents(path, "old", -1, NULL));
    const int absent[] = {1, 2}, twice[] = {7, 7}, low[] = {3};
    CU_ASSERT_FALSE(sv_sys_groups_save_json(g, absent, 2, 0, path, &err));
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, "no communicator group 2"));
    g_clear_error(&err);
    CU_ASSERT_FALSE(sv_sys_groups_save_json(g, twice, 2, 0, path, &err));
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, "communicator group 7 listed twice"));
    g_clear_error(&err);
    CU_ASSERT_FALSE(sv_sys_groups_save_json(g, low, 1, 7, path, &err));
    CU_ASSERT_PTR_NOT_NULL(err && strstr(err->message, "group 3: NPU 6 is below the first NPU 7"));
    CU_ASSERT_PTR_NOT_NULL(err && g_str_has_prefix(err->message, path));
    g_clear_error(&err);
    g_free(text);
    text = slurp(path);
    CU_ASSERT_STRING_EQUAL(text, "old");
    sv_sys_groups_free(g);
}

/* ---- what a system layer runs with ---------------------------------------------------------- */

/* sv_sys_get_cfg / sv_sys_get_groups give the system layer's copies: the values it was built
 * with (the caller's cfg and groups may be gone), and saved they read back the same. */
static void test_accessors(void)
{
    struct sv_net_topo_cfg t = {.ndims = 2,
                                .kind = {SV_NET_TOPO_FULLY_CONNECTED, SV_NET_TOPO_SWITCH},
                                .npus = {2, 2},
                                .bandwidth_gbps = {100, 25},
                                .latency_ns = {500, 1000}};
    sv_engine *eng = sv_engine_new(1);
    GError *err = NULL;
    sv_net *net = sv_net_new(eng, &t, SV_NET_MODEL_ANALYTICAL, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(net);
    struct sv_sys_cfg c;
    sv_sys_cfg_init(&c);
    c.preferred_dataset_splits = 2;
    c.endpoint_delay_ns = 33;
    const struct sv_sys_impl rings[] = {{SV_SYS_IMPL_RING, -1}, {SV_SYS_IMPL_DIRECT, -1}};
    impl_set(&c, SV_SYS_ALL_REDUCE, 2, rings);
    c.group_impl[SV_SYS_ALL_TO_ALL] = SV_SYS_IMPL_DIRECT;
    sv_sys_groups *g = sv_sys_groups_new();
    const int m[] = {1, 3};
    CU_ASSERT_TRUE(sv_sys_groups_add(g, 4, m, 2, NULL));
    sv_sys *sys = sv_sys_new(net, &c, g, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sys);
    sv_sys_groups_free(g);
    struct sv_sys_cfg want = c; /* for the comparison; the prefixes are NULL */
    const struct sv_sys_cfg *got = sv_sys_get_cfg(sys);
    expect_same(&want, got);
    const sv_sys_groups *sg = sv_sys_get_groups(sys);
    CU_ASSERT_EQUAL(sv_sys_groups_count(sg), 1);
    g_autofree char *sp = tmp_path("sys.json"), *gp = tmp_path("sys_groups.json");
    CU_ASSERT_TRUE_FATAL(sv_sys_cfg_save_json(got, sv_net_topo(net)->ndims, sp, &err));
    CU_ASSERT_TRUE_FATAL(sv_sys_groups_save_json(sg, NULL, 0, 0, gp, &err));
    struct sv_sys_cfg back;
    CU_ASSERT_TRUE_FATAL(sv_sys_cfg_load_json(sp, &back, &err));
    expect_same(got, &back);
    sv_sys_cfg_clear(&back);
    g_autofree char *gt = slurp(gp);
    CU_ASSERT_STRING_EQUAL(gt, "{\"4\": [1, 3]}\n");
    sv_sys_free(sys);
    sv_net_free(net);
    sv_engine_free(eng);

    /* without groups: an empty set, never NULL */
    eng = sv_engine_new(1);
    net = sv_net_new(eng, &t, SV_NET_MODEL_ANALYTICAL, &err);
    sys = sv_sys_new(net, &c, NULL, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sys);
    CU_ASSERT_PTR_NOT_NULL(sv_sys_get_groups(sys));
    CU_ASSERT_EQUAL(sv_sys_groups_count(sv_sys_get_groups(sys)), 0);
    sv_sys_free(sys);
    sv_net_free(net);
    sv_engine_free(eng);
    sv_sys_cfg_clear(&c);
}

int main(void)
{
    tmp = sv_test_tmpdir();
    static const sv_test_case cases[] = {
        {"Ring_4chunks text", test_ring4chunks_text},
        {"round trip of every field", test_roundtrip_all},
        {"what is not a key", test_not_keys},
        {"errors", test_errors},
        {"servesim-group-implementation", test_group_impl_key},
        {"communicator groups", test_groups},
        {"accessors", test_accessors},
        {NULL, NULL},
    };
    sv_test_add_suite("system_cfg_save", cases);
    int rc = sv_test_run();
    sv_test_rmtree(tmp);
    g_free(tmp);
    return rc;
}
