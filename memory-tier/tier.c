/* Memory tiers: capacity ledgers per owner, with time-weighted mean and peaks.
 *
 * A tier (HBM of an instance, a node's DRAM, a CXL device, an SSD) holds bytes for owners
 * (weights, live KV, swapped KV, prefix chunks, experts). Every change is booked at the engine's
 * current time: the integral of used bytes over time advances first (used x elapsed), so the
 * mean over [0, now] is exact for the piecewise-constant occupancy. Invariant, asserted on every
 * change: sum over owners == used <= capacity (charges), used may exceed capacity only through
 * sv_memtier_tier_set (views kept by the KV manager, sized to fit). */
#include "memory-tier/memtier_internal.h"

#include <inttypes.h>
#include <string.h>

static const char *const kind_names[SV_MEMTIER_KIND_COUNT] = {
    [SV_MEMTIER_HBM] = "npu",
    [SV_MEMTIER_DRAM] = "cpu",
    [SV_MEMTIER_CXL] = "cxl",
    [SV_MEMTIER_SSD] = "ssd",
};

static const char *const owner_names[SV_MEMTIER_OWNER_COUNT] = {
    [SV_MEMTIER_OWNER_WEIGHTS] = "weights",       [SV_MEMTIER_OWNER_LIVE_KV] = "live_kv",
    [SV_MEMTIER_OWNER_EVICTED_KV] = "evicted_kv", [SV_MEMTIER_OWNER_PREFIX] = "prefix",
    [SV_MEMTIER_OWNER_EXPERTS] = "experts",
};

const char *sv_memtier_kind_name(sv_memtier_kind kind)
{
    SV_ASSERT(kind >= 0 && kind < SV_MEMTIER_KIND_COUNT);
    return kind_names[kind];
}

gboolean sv_memtier_kind_parse(const char *name, sv_memtier_kind *out)
{
    for (int k = 0; k < SV_MEMTIER_KIND_COUNT; k++) {
        if (name != NULL && strcmp(name, kind_names[k]) == 0) {
            *out = (sv_memtier_kind)k;
            return TRUE;
        }
    }
    return FALSE;
}

const char *sv_memtier_owner_name(sv_memtier_owner owner)
{
    SV_ASSERT(owner >= 0 && owner < SV_MEMTIER_OWNER_COUNT);
    return owner_names[owner];
}

struct sv_memtier_tier {
    sv_engine *eng;
    struct sv_memtier_tier_cfg cfg;
    uint64_t used;
    uint64_t by_owner[SV_MEMTIER_OWNER_COUNT];
    uint64_t peak;
    uint64_t peak_by_owner[SV_MEMTIER_OWNER_COUNT];
    double integral; /* byte-ns of occupancy over [0, t_last] */
    sv_time t_last;
    struct sv_memtier_tier_stats counters; /* read/write bytes, prefix counters */
};

sv_memtier_tier *sv_memtier_tier_new(sv_engine *eng, const struct sv_memtier_tier_cfg *cfg)
{
    SV_ASSERT(eng != NULL && cfg != NULL);
    SV_ASSERT(cfg->kind >= 0 && cfg->kind < SV_MEMTIER_KIND_COUNT);
    SV_ASSERT(cfg->ideal || cfg->kind == SV_MEMTIER_HBM || cfg->read_gbps > 0);
    sv_memtier_tier *t = g_new0(sv_memtier_tier, 1);
    t->eng = eng;
    t->cfg = *cfg;
    t->cfg.name[sizeof t->cfg.name - 1] = '\0';
    t->t_last = sv_engine_now(eng);
    return t;
}

void sv_memtier_tier_free(sv_memtier_tier *t)
{
    g_free(t);
}

const struct sv_memtier_tier_cfg *sv_memtier_tier_get_cfg(const sv_memtier_tier *t)
{
    return &t->cfg;
}

/* Advance the occupancy integral to now (before any change). */
static void advance(sv_memtier_tier *t)
{
    sv_time now = sv_engine_now(t->eng);
    if (now > t->t_last) {
        t->integral += (double)t->used * (double)(now - t->t_last);
        t->t_last = now;
    }
}

static void check_ledger(const sv_memtier_tier *t)
{
    uint64_t sum = 0;
    for (int o = 0; o < SV_MEMTIER_OWNER_COUNT; o++)
        sum += t->by_owner[o];
    SV_ASSERT(sum == t->used);
}

static void note_peaks(sv_memtier_tier *t, sv_memtier_owner o)
{
    if (t->used > t->peak)
        t->peak = t->used;
    if (t->by_owner[o] > t->peak_by_owner[o])
        t->peak_by_owner[o] = t->by_owner[o];
}

gboolean sv_memtier_tier_charge(sv_memtier_tier *t, sv_memtier_owner o, int64_t delta,
                                GError **error)
{
    SV_ASSERT(t != NULL && o >= 0 && o < SV_MEMTIER_OWNER_COUNT);
    if (delta < 0) {
        uint64_t rel = (uint64_t)(-(delta + 1)) + 1; /* |delta| without overflow */
        SV_ASSERT(rel <= t->by_owner[o]);            /* releasing more than held is a bug */
        advance(t);
        t->by_owner[o] -= rel;
        t->used -= rel;
        check_ledger(t);
        return TRUE;
    }
    uint64_t add = (uint64_t)delta;
    uint64_t free_bytes = sv_memtier_tier_free_bytes(t);
    if (add > free_bytes) {
        g_set_error(error, SV_MEMTIER_ERROR, SV_MEMTIER_ERROR_CAPACITY,
                    "%s: %s needs %" PRIu64 " bytes, %" PRIu64 " free of %" PRIu64, t->cfg.name,
                    owner_names[o], add, free_bytes, t->cfg.capacity_bytes);
        return FALSE;
    }
    advance(t);
    t->by_owner[o] += add;
    t->used += add;
    note_peaks(t, o);
    check_ledger(t);
    SV_ASSERT(t->used <= t->cfg.capacity_bytes || add == 0);
    return TRUE;
}

void sv_memtier_tier_set(sv_memtier_tier *t, sv_memtier_owner o, uint64_t bytes)
{
    SV_ASSERT(t != NULL && o >= 0 && o < SV_MEMTIER_OWNER_COUNT);
    if (t->by_owner[o] == bytes)
        return;
    advance(t);
    t->used = t->used - t->by_owner[o] + bytes;
    t->by_owner[o] = bytes;
    note_peaks(t, o);
    check_ledger(t);
}

uint64_t sv_memtier_tier_capacity(const sv_memtier_tier *t)
{
    return t->cfg.capacity_bytes;
}

uint64_t sv_memtier_tier_used(const sv_memtier_tier *t)
{
    return t->used;
}

uint64_t sv_memtier_tier_used_by(const sv_memtier_tier *t, sv_memtier_owner o)
{
    SV_ASSERT(o >= 0 && o < SV_MEMTIER_OWNER_COUNT);
    return t->by_owner[o];
}

uint64_t sv_memtier_tier_free_bytes(const sv_memtier_tier *t)
{
    return t->used >= t->cfg.capacity_bytes ? 0 : t->cfg.capacity_bytes - t->used;
}

void sv_memtier_tier_count_lookup(sv_memtier_tier *t, uint64_t lookup_tokens, uint64_t hit_tokens,
                                  uint64_t hit_chunks)
{
    t->counters.lookup_tokens += lookup_tokens;
    t->counters.hit_tokens += hit_tokens;
    t->counters.hit_chunks += hit_chunks;
}

void sv_memtier__tier_count_io(sv_memtier_tier *t, uint64_t read_bytes, uint64_t write_bytes)
{
    t->counters.read_bytes += read_bytes;
    t->counters.write_bytes += write_bytes;
}

void sv_memtier__tier_count_pool(sv_memtier_tier *t, uint64_t evictions, uint64_t rejected)
{
    t->counters.evictions += evictions;
    t->counters.rejected += rejected;
}

void sv_memtier_tier_get_stats(const sv_memtier_tier *t, sv_time now,
                               struct sv_memtier_tier_stats *out)
{
    *out = t->counters;
    out->capacity = t->cfg.capacity_bytes;
    out->peak = t->peak;
    memcpy(out->peak_by_owner, t->peak_by_owner, sizeof out->peak_by_owner);
    double integral = t->integral;
    if (now > t->t_last)
        integral += (double)t->used * (double)(now - t->t_last);
    out->mean_bytes = now > 0 ? integral / (double)now : (double)t->used;
}
