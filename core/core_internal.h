/* Internals shared by the files of core/ only. */
#ifndef SV_CORE_INTERNAL_H
#define SV_CORE_INTERNAL_H

#include "core/core.h"

struct heap_entry;
struct event_slot;

struct sv_engine {
    sv_time now;
    uint64_t seed;
    uint64_t next_seq;
    uint64_t events_run;
    gboolean stopped;
    gboolean root_hole;      /* heap[0] is stale while a fired event's callback runs */
    struct heap_entry *heap; /* points into heap_raw, see heap_reserve */
    void *heap_raw;
    uint32_t heap_len; /* entries, live and stale (and the root hole while a callback runs) */
    uint32_t heap_cap;
    uint32_t live;  /* pending events */
    uint32_t stale; /* heap entries of cancelled or rescheduled events */
    struct event_slot *slots;
    uint32_t slots_len;
    uint32_t slots_cap;
    uint32_t free_head;
    GHashTable *rng_streams; /* name -> sv_rng*, looked up by name only (never iterated) */
};

#endif
