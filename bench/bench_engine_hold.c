/* Hold-model microbenchmark of the event engine (Vaucher & Duval 1975; the classic priority-queue
 * benchmark): N events pending; each fired event schedules one new event at now + Exp(mean 1 us),
 * so the pending count stays N. Prints events per second for N = 10^3 .. 10^6.
 * Target (issue 2): >= 10 million events/s at N = 10^4 on one core. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/core.h"

struct hold {
    sv_rng *rng;
    double mean_ns;
};

/* Exponential increments with a precomputed table would be faster still, but the RNG cost is part
 * of what a real model pays per event, so it stays in the loop. */
static void hold_fire(sv_engine *eng, void *ctx, uint64_t arg)
{
    struct hold *h = ctx;
    sv_time delay = (sv_time)(sv_rng_exponential(h->rng, 1.0 / h->mean_ns) + 1.0);
    sv_engine_schedule_in(eng, delay, SV_PRIO_DEFAULT, hold_fire, h, arg);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    uint64_t events = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000000;
    printf("engine hold model: %llu events per size, exponential hold (mean 1 us)\n",
           (unsigned long long)events);
    printf("%10s %14s %12s\n", "pending", "events/s", "ns/event");
    double first_rate = 0;
    for (size_t n = 1000; n <= 1000000; n *= 10) {
        sv_engine *eng = sv_engine_new(1);
        struct hold h = {sv_rng_stream(eng, "bench/hold"), 1000.0};
        /* Initial times from the increment distribution, so the pending set is the hold model's
         * steady state (new events land throughout the heap, not always at its front). */
        for (size_t i = 0; i < n; i++)
            sv_engine_schedule(eng, (sv_time)sv_rng_exponential(h.rng, 1.0 / h.mean_ns), 0,
                               hold_fire, &h, i);
        /* Warm up so the heap reaches its steady-state shape before timing. */
        for (size_t i = 0; i < n; i++)
            sv_engine_step(eng);
        double t0 = now_s();
        for (uint64_t i = 0; i < events; i++)
            sv_engine_step(eng);
        double dt = now_s() - t0;
        double rate = (double)events / dt;
        if (n == 1000)
            first_rate = rate;
        printf("%10zu %14.0f %12.1f   (%.2fx of 10^3)\n", n, rate, 1e9 / rate, rate / first_rate);
        if (sv_engine_pending(eng) != n) {
            fprintf(stderr, "hold model broken: %zu pending\n", sv_engine_pending(eng));
            return 1;
        }
        sv_engine_free(eng);
    }
    return 0;
}
