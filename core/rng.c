/* Named random streams: xoshiro256** (Blackman & Vigna, 2018) seeded by SplitMix64 from the root
 * seed mixed with a 64-bit FNV-1a hash of the stream's name. A stream's sequence depends only on
 * (root seed, name), never on creation order or on other streams. */
#include <math.h>

#include "core/core_internal.h"

struct sv_rng {
    uint64_t s[4];
    gboolean has_spare;
    double spare; /* second normal deviate of the Box-Muller pair */
};

/* SplitMix64: a Weyl sequence through the project's finalizer (core.h). */
static uint64_t splitmix64(uint64_t *state)
{
    return sv_hash_mix64(*state += UINT64_C(0x9e3779b97f4a7c15));
}

uint64_t sv_hash_str(const char *s)
{
    uint64_t h = SV_HASH_FNV_OFFSET;
    for (; *s; s++)
        h = sv_hash_fnv1a(h, (unsigned char)*s, 1);
    return h;
}

sv_rng *sv_rng_new(uint64_t root_seed, const char *name)
{
    sv_rng *rng = g_new0(sv_rng, 1);
    uint64_t st = root_seed ^ sv_hash_str(name ? name : "");
    for (int i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&st);
    return rng;
}

void sv_rng_free(sv_rng *rng)
{
    g_free(rng);
}

sv_rng *sv_rng_stream(sv_engine *eng, const char *name)
{
    sv_rng *rng = g_hash_table_lookup(eng->rng_streams, name);
    if (rng == NULL) {
        rng = sv_rng_new(eng->seed, name);
        g_hash_table_insert(eng->rng_streams, g_strdup(name), rng);
    }
    return rng;
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t sv_rng_u64(sv_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double sv_rng_uniform(sv_rng *rng)
{
    /* 53 random bits -> [0, 1) */
    return (double)(sv_rng_u64(rng) >> 11) * 0x1.0p-53;
}

uint64_t sv_rng_below(sv_rng *rng, uint64_t n)
{
    SV_ASSERT(n > 0);
    /* Rejection sampling on the top of the range keeps the result unbiased. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do {
        x = sv_rng_u64(rng);
    } while (x >= limit);
    return x % n;
}

double sv_rng_exponential(sv_rng *rng, double rate)
{
    SV_ASSERT(rate > 0);
    return -log1p(-sv_rng_uniform(rng)) / rate;
}

double sv_rng_normal(sv_rng *rng, double mean, double sd)
{
    if (rng->has_spare) {
        rng->has_spare = FALSE;
        return mean + sd * rng->spare;
    }
    double u1, u2;
    do {
        u1 = sv_rng_uniform(rng);
    } while (u1 <= 0.0);
    u2 = sv_rng_uniform(rng);
    double r = sqrt(-2.0 * log(u1));
    rng->spare = r * sin(2.0 * G_PI * u2);
    rng->has_spare = TRUE;
    return mean + sd * r * cos(2.0 * G_PI * u2);
}

double sv_rng_gamma(sv_rng *rng, double shape, double scale)
{
    SV_ASSERT(shape > 0 && scale > 0);
    /* Marsaglia & Tsang (2000); shape < 1 boosted by U^(1/shape). */
    if (shape < 1.0) {
        double u;
        do {
            u = sv_rng_uniform(rng);
        } while (u <= 0.0);
        return sv_rng_gamma(rng, shape + 1.0, scale) * pow(u, 1.0 / shape);
    }
    double d = shape - 1.0 / 3.0;
    double c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x, v;
        do {
            x = sv_rng_normal(rng, 0.0, 1.0);
            v = 1.0 + c * x;
        } while (v <= 0.0);
        v = v * v * v;
        double u = sv_rng_uniform(rng);
        if (u < 1.0 - 0.0331 * x * x * x * x)
            return d * v * scale;
        if (log(u) < 0.5 * x * x + d * (1.0 - v + log(v)))
            return d * v * scale;
    }
}
