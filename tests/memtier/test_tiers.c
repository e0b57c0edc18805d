/* Memory tiers: capacity ledgers, refusals, time-weighted mean and peaks (hand-computed). */
#include "memory-tier/memtier_internal.h"
#include "tests/test_util.h"

#include <string.h>

static sv_memtier_tier *cpu_tier(sv_engine *eng, uint64_t cap)
{
    struct sv_memtier_tier_cfg cfg = {
        .kind = SV_MEMTIER_DRAM, .capacity_bytes = cap, .read_gbps = 256, .latency_ns = 0};
    g_strlcpy(cfg.name, "node0/cpu", sizeof cfg.name);
    return sv_memtier_tier_new(eng, &cfg);
}

static void test_names(void)
{
    sv_memtier_kind k;
    CU_ASSERT_STRING_EQUAL(sv_memtier_kind_name(SV_MEMTIER_HBM), "npu");
    CU_ASSERT_STRING_EQUAL(sv_memtier_kind_name(SV_MEMTIER_SSD), "ssd");
    CU_ASSERT(sv_memtier_kind_parse("cxl", &k) && k == SV_MEMTIER_CXL);
    CU_ASSERT(sv_memtier_kind_parse("cpu", &k) && k == SV_MEMTIER_DRAM);
    CU_ASSERT_FALSE(sv_memtier_kind_parse("gpu", &k));
    CU_ASSERT_FALSE(sv_memtier_kind_parse(NULL, &k));
    CU_ASSERT_STRING_EQUAL(sv_memtier_owner_name(SV_MEMTIER_OWNER_EVICTED_KV), "evicted_kv");
}

/* Capacity 1,000: weights 100 then prefix 900 fits exactly (used 1,000, free 0); one more byte
 * is refused with the tier, owner and numbers named, and nothing changes. */
static void test_charge_refuse(void)
{
    sv_engine *eng = sv_engine_new(1);
    sv_memtier_tier *t = cpu_tier(eng, 1000);
    GError *err = NULL;
    CU_ASSERT(sv_memtier_tier_charge(t, SV_MEMTIER_OWNER_WEIGHTS, 100, &err));
    CU_ASSERT_FALSE(sv_memtier_tier_charge(t, SV_MEMTIER_OWNER_PREFIX, 901, &err));
    CU_ASSERT_FATAL(err != NULL);
    CU_ASSERT(g_error_matches(err, SV_MEMTIER_ERROR, SV_MEMTIER_ERROR_CAPACITY));
    CU_ASSERT_STRING_EQUAL(err->message, "node0/cpu: prefix needs 901 bytes, 900 free of 1000");
    g_clear_error(&err);
    SV_ASSERT_EQ_I64(sv_memtier_tier_used(t), 100);
    CU_ASSERT(sv_memtier_tier_charge(t, SV_MEMTIER_OWNER_PREFIX, 900, &err));
    SV_ASSERT_EQ_I64(sv_memtier_tier_used(t), 1000);
    SV_ASSERT_EQ_I64(sv_memtier_tier_free_bytes(t), 0);
    CU_ASSERT(sv_memtier_tier_charge(t, SV_MEMTIER_OWNER_PREFIX, -900, &err));
    SV_ASSERT_EQ_I64(sv_memtier_tier_used_by(t, SV_MEMTIER_OWNER_PREFIX), 0);
    SV_ASSERT_EQ_I64(sv_memtier_tier_used_by(t, SV_MEMTIER_OWNER_WEIGHTS), 100);
    /* set: the HBM view of KV, replaced as a whole */
    sv_memtier_tier_set(t, SV_MEMTIER_OWNER_LIVE_KV, 300);
    sv_memtier_tier_set(t, SV_MEMTIER_OWNER_LIVE_KV, 200);
    SV_ASSERT_EQ_I64(sv_memtier_tier_used(t), 300);
    struct sv_memtier_tier_stats st;
    sv_memtier_tier_get_stats(t, 0, &st);
    SV_ASSERT_EQ_I64(st.peak, 1000);
    SV_ASSERT_EQ_I64(st.peak_by_owner[SV_MEMTIER_OWNER_PREFIX], 900);
    SV_ASSERT_EQ_I64(st.peak_by_owner[SV_MEMTIER_OWNER_LIVE_KV], 300);
    SV_ASSERT_EQ_I64(st.capacity, 1000);
    sv_memtier_tier_free(t);
    sv_engine_free(eng);
}

struct step {
    sv_memtier_tier *t;
    sv_memtier_owner o;
    int64_t delta;
};

static void do_step(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)eng;
    (void)arg;
    struct step *s = ctx;
    CU_ASSERT(sv_memtier_tier_charge(s->t, s->o, s->delta, NULL));
}

/* Occupancy 100 on [0,10), 400 on [10,30), 100 on [30,40]: integral 100*10 + 400*20 + 100*10
 * = 10,000 byte-ns over 40 ns -> mean 250 bytes; peak 400 (prefix 300, weights 100). */
static void test_mean_peak(void)
{
    sv_engine *eng = sv_engine_new(1);
    sv_memtier_tier *t = cpu_tier(eng, 1000);
    struct step s0 = {t, SV_MEMTIER_OWNER_WEIGHTS, 100};
    struct step s1 = {t, SV_MEMTIER_OWNER_PREFIX, 300};
    struct step s2 = {t, SV_MEMTIER_OWNER_PREFIX, -300};
    sv_engine_schedule(eng, 0, SV_PRIO_DEFAULT, do_step, &s0, 0);
    sv_engine_schedule(eng, 10, SV_PRIO_DEFAULT, do_step, &s1, 0);
    sv_engine_schedule(eng, 30, SV_PRIO_DEFAULT, do_step, &s2, 0);
    sv_engine_run(eng, SV_TIME_MAX);
    struct sv_memtier_tier_stats st;
    sv_memtier_tier_get_stats(t, 40, &st);
    CU_ASSERT_DOUBLE_EQUAL(st.mean_bytes, 250.0, 1e-9);
    SV_ASSERT_EQ_I64(st.peak, 400);
    SV_ASSERT_EQ_I64(st.peak_by_owner[SV_MEMTIER_OWNER_PREFIX], 300);
    SV_ASSERT_EQ_I64(st.peak_by_owner[SV_MEMTIER_OWNER_WEIGHTS], 100);
    /* At t = 30 (the last change): 100*10 + 400*20 = 9,000 / 30 = 300. */
    sv_memtier_tier_get_stats(t, 30, &st);
    CU_ASSERT_DOUBLE_EQUAL(st.mean_bytes, 300.0, 1e-9);
    sv_memtier_tier_count_lookup(t, 512, 256, 1);
    sv_memtier_tier_get_stats(t, 40, &st);
    SV_ASSERT_EQ_I64(st.lookup_tokens, 512);
    SV_ASSERT_EQ_I64(st.hit_tokens, 256);
    SV_ASSERT_EQ_I64(st.hit_chunks, 1);
    sv_memtier_tier_free(t);
    sv_engine_free(eng);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"kind and owner names", test_names},
        {"charge, refuse, release, set", test_charge_refuse},
        {"time-weighted mean and peaks", test_mean_peak},
        {NULL, NULL},
    };
    sv_test_add_suite("memtier tiers", cases);
    return sv_test_run();
}
