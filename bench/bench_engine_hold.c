/* Hold-model microbenchmark of the event engine (Vaucher & Duval 1975; the classic priority-queue
 * benchmark): N events pending; each fired event schedules one new event at now + Exp(mean 1 us),
 * so the pending count stays N. Prints events per second for N = 10^3 .. 10^6.
 * Target (issue 2): >= 10 million events/s at N = 10^4 on one core. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/core.h"

/* Increments: drawn live from the RNG, or read from a table drawn before timing (the usual way
 * priority-queue studies keep the random-number cost out of the queue's figure). */
#define TABLE_SIZE (1u << 20)

struct hold {
    sv_rng *rng;
    double mean_ns;
    sv_time *table;
    uint32_t next;
};

static void hold_fire_live(sv_engine *eng, void *ctx, uint64_t arg)
{
    struct hold *h = ctx;
    sv_time delay = (sv_time)(sv_rng_exponential(h->rng, 1.0 / h->mean_ns) + 1.0);
    sv_engine_schedule_in(eng, delay, SV_PRIO_DEFAULT, hold_fire_live, h, arg);
}

static void hold_fire_table(sv_engine *eng, void *ctx, uint64_t arg)
{
    struct hold *h = ctx;
    sv_time delay = h->table[h->next++ & (TABLE_SIZE - 1)];
    sv_engine_schedule_in(eng, delay, SV_PRIO_DEFAULT, hold_fire_table, h, arg);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double run_size(size_t n, uint64_t events, gboolean live, sv_time *table)
{
    sv_engine *eng = sv_engine_new(1);
    struct hold h = {sv_rng_stream(eng, "bench/hold"), 1000.0, table, 0};
    sv_event_fn fire = live ? hold_fire_live : hold_fire_table;
    /* Initial times from the increment distribution, so the pending set is the hold model's
     * steady state (new events land throughout the heap, not always at its front). */
    for (size_t i = 0; i < n; i++)
        sv_engine_schedule(eng, (sv_time)sv_rng_exponential(h.rng, 1.0 / h.mean_ns), 0, fire, &h,
                           i);
    /* Warm up so the heap reaches its steady-state shape before timing. */
    for (size_t i = 0; i < n; i++)
        sv_engine_step(eng);
    double t0 = now_s();
    for (uint64_t i = 0; i < events; i++)
        sv_engine_step(eng);
    double dt = now_s() - t0;
    if (sv_engine_pending(eng) != n) {
        fprintf(stderr, "hold model broken: %zu pending\n", sv_engine_pending(eng));
        exit(1);
    }
    sv_engine_free(eng);
    return (double)events / dt;
}

int main(int argc, char **argv)
{
    uint64_t events = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000000;
    sv_time *table = g_new(sv_time, TABLE_SIZE);
    sv_rng *rng = sv_rng_new(2, "bench/hold-table");
    for (uint32_t i = 0; i < TABLE_SIZE; i++)
        table[i] = (sv_time)(sv_rng_exponential(rng, 1.0 / 1000.0) + 1.0);
    sv_rng_free(rng);
    printf("engine hold model: %llu events per size, exponential increments (mean 1 us)\n",
           (unsigned long long)events);
    printf("%10s %16s %10s %18s %10s\n", "pending", "events/s(table)", "ns/event",
           "events/s(live rng)", "ns/event");
    double first = 0;
    for (size_t n = 1000; n <= 1000000; n *= 10) {
        double rate_t = run_size(n, events, FALSE, table);
        double rate_l = run_size(n, events, TRUE, table);
        if (n == 1000)
            first = rate_t;
        printf("%10zu %16.0f %10.1f %18.0f %10.1f   (table rate %.2fx of 10^3)\n", n, rate_t,
               1e9 / rate_t, rate_l, 1e9 / rate_l, rate_t / first);
    }
    printf("target (issue 2): >= 10,000,000 events/s at 10^4 pending (table column)\n");
    g_free(table);
    return 0;
}
