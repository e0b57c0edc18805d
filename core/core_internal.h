/* Internals shared by the files of core/ only. */
#ifndef SV_CORE_INTERNAL_H
#define SV_CORE_INTERNAL_H

#include "core/core.h"

struct heap_entry;
struct event_slot;
struct bucket;
struct bucket_node;

struct sv_engine {
    sv_time now;
    uint64_t seed;
    uint64_t next_seq;
    uint64_t events_run;
    gboolean stopped;
    const volatile sig_atomic_t *interrupt; /* sv_engine_set_interrupt; never NULL */
    /* The largest (time, tag) run so far: an event's place has passed iff it is not after it
     * (sv_core__engine_mark_passed). */
    sv_time front_time;
    uint64_t front_tag;
    gboolean root_hole; /* heap[0] is a removed bucket's entry, to be refilled (engine.c) */
    /* 4-ary heap of buckets, one per distinct (time, priority); points into heap_raw. */
    struct heap_entry *heap;
    void *heap_raw;
    uint32_t heap_len; /* entries, including the root hole */
    uint32_t heap_cap;
    /* Buckets and their FIFO lists of event nodes (pools with free lists). */
    struct bucket *buckets;
    uint32_t buckets_cap;
    uint32_t bucket_free;
    struct bucket_node *nodes;
    uint32_t nodes_cap;
    uint32_t node_free;
    /* map_key(time, priority) -> bucket. */
    sv_u64map bucket_map;
    /* The bucket of the last insertion and its map key (0 = none): consecutive insertions often
     * share a (time, priority), and this skips the map probe. */
    uint64_t last_key;
    uint32_t last_bucket;
    /* Event records. */
    struct event_slot *slots;
    uint32_t slots_len;
    uint32_t slots_cap;
    uint32_t free_head;
    uint32_t live;  /* pending events */
    uint32_t stale; /* nodes of cancelled or rescheduled events still in buckets */
    GError *error;  /* why the run stopped: past SV_ENGINE_HORIZON, or the watchdog */
    /* Progress watchdog (sv_engine_set_watchdog): the run stops before the event that would
     * make events_run exceed watchdog_at; UINT64_MAX when off. */
    uint64_t watchdog_max, watchdog_at;
    sv_time progress_time; /* now at the last sv_engine_progress */
    sv_engine_diag_fn watchdog_diag;
    void *watchdog_ctx;
    uint64_t progress_events; /* events_run at the last sv_engine_progress */
    /* Display tick (sv_engine_set_tick): called before the event that makes events_run reach
     * tick_at; UINT64_MAX when off. */
    uint64_t tick_every, tick_at;
    sv_engine_tick_fn tick_fn;
    void *tick_ctx;
    GHashTable *rng_streams; /* name -> sv_rng*, looked up by name only (never iterated) */
};

#endif
