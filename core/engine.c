/* The event engine: a 4-ary min-heap of (time, priority, sequence) keys over a slab of event
 * records. Handles are (generation << 32 | slot) so a stale handle is detected in O(1).
 *
 * A 4-ary heap does about half the levels of a binary heap and its children share a cache line
 * pair, which is what the hold-model benchmark (bench/bench_engine_hold.c) rewards. Same-time
 * events fire in insertion order for equal priority, as ASTRA-sim's and ns-3's schedulers do. */
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"

/* A heap entry is 16 bytes so that the four children of a node fill exactly one 64-byte cache
 * line (the heap base is offset so that index 1 is line-aligned: LaMarca & Ladner, "The influence
 * of caches on the performance of heaps", 1996). `key` packs the tie-breakers and the slot:
 * priority (5 bits, biased) | insertion sequence (35 bits) | slot (24 bits). */
struct heap_entry {
    sv_time time;
    uint64_t key;
};

struct event_slot {
    sv_event_fn fn;
    void *ctx;
    uint64_t arg;
    uint32_t generation;
    uint32_t heap_pos; /* index in heap, or UINT32_MAX when free */
    uint32_t next_free;
};

#define SLOT_FREE UINT32_MAX
#define SLOT_BITS 24
#define SEQ_BITS 35
#define PRIO_BIAS 16
#define SLOT_MASK ((UINT64_C(1) << SLOT_BITS) - 1)
#define SEQ_MASK ((UINT64_C(1) << SEQ_BITS) - 1)
#define MAX_SLOTS (UINT32_C(1) << SLOT_BITS)

static inline uint32_t entry_slot(const struct heap_entry *e)
{
    return (uint32_t)(e->key & SLOT_MASK);
}

static inline int entry_less(const struct heap_entry *a, const struct heap_entry *b)
{
    if (a->time != b->time)
        return a->time < b->time;
    return a->key < b->key;
}

static inline void heap_place(sv_engine *eng, uint32_t pos, struct heap_entry e)
{
    eng->heap[pos] = e;
    eng->slots[entry_slot(&e)].heap_pos = pos;
}

static void sift_up(sv_engine *eng, uint32_t pos)
{
    struct heap_entry e = eng->heap[pos];
    while (pos > 0) {
        uint32_t parent = (pos - 1) / 4;
        if (!entry_less(&e, &eng->heap[parent]))
            break;
        heap_place(eng, pos, eng->heap[parent]);
        pos = parent;
    }
    heap_place(eng, pos, e);
}

/* The smaller of two entries by index, written so the compiler emits conditional moves: in a
 * steady-state heap the outcome is a coin toss, and a mispredicted branch per comparison was the
 * largest cost measured in the hold benchmark. */
static inline uint32_t pick_min(const struct heap_entry *h, uint32_t a, uint32_t b)
{
    uint32_t b_less = (uint32_t)(h[b].time < h[a].time) |
                      ((uint32_t)(h[b].time == h[a].time) & (uint32_t)(h[b].key < h[a].key));
    return a ^ ((a ^ b) & (0u - b_less));
}

static inline uint32_t min_child(const struct heap_entry *h, uint32_t first, uint32_t n)
{
    if (first + 4 <= n) /* a tournament of independent pairs */
        return pick_min(h, pick_min(h, first, first + 1), pick_min(h, first + 2, first + 3));
    uint32_t best = first;
    for (uint32_t c = first + 1; c < n; c++)
        best = pick_min(h, best, c);
    return best;
}

/* Bottom-up sift-down (Wegener 1993): walk the hole to a leaf along the smallest children without
 * comparing against the moving entry, then sift the entry up from there. Entries re-inserted at the
 * root usually belong near the bottom, so this saves a comparison per level. */
static void sift_down(sv_engine *eng, uint32_t pos)
{
    struct heap_entry e = eng->heap[pos];
    uint32_t n = eng->heap_len;
    uint32_t start = pos;
    for (;;) {
        uint32_t first = pos * 4 + 1;
        if (first >= n)
            break;
        uint32_t best = min_child(eng->heap, first, n);
        heap_place(eng, pos, eng->heap[best]);
        pos = best;
    }
    while (pos > start) {
        uint32_t parent = (pos - 1) / 4;
        if (!entry_less(&e, &eng->heap[parent]))
            break;
        heap_place(eng, pos, eng->heap[parent]);
        pos = parent;
    }
    heap_place(eng, pos, e);
}

static void heap_remove_at(sv_engine *eng, uint32_t pos)
{
    uint32_t last = --eng->heap_len;
    if (pos == last)
        return;
    struct heap_entry moved = eng->heap[last];
    heap_place(eng, pos, moved);
    if (pos > 0 && entry_less(&moved, &eng->heap[(pos - 1) / 4]))
        sift_up(eng, pos);
    else
        sift_down(eng, pos);
}

/* sv_engine_step leaves the root empty (a "hole") while the callback runs: the common pattern of a
 * handler scheduling one follow-up event then costs one sift-down instead of a sift-down for the
 * removal plus a sift-up for the insertion. Any other heap operation fills the hole first. */
static void fill_hole(sv_engine *eng)
{
    if (!eng->root_hole)
        return;
    eng->root_hole = FALSE;
    heap_remove_at(eng, 0);
}

/* The heap array is allocated 64-byte aligned and used from one entry past an aligned address
 * minus one, i.e. heap[1] sits on a cache-line boundary, so each group of four children
 * (4i+1 .. 4i+4) is one line. */
static void heap_grow(sv_engine *eng, uint32_t cap)
{
    size_t bytes = ((size_t)cap + 4) * sizeof(struct heap_entry) + 64;
    void *raw = g_malloc(bytes);
    uintptr_t aligned = ((uintptr_t)raw + 63) & ~(uintptr_t)63;
    struct heap_entry *heap = (struct heap_entry *)(aligned + 64) - 1;
    if (eng->heap_len > 0)
        memcpy(heap, eng->heap, eng->heap_len * sizeof(struct heap_entry));
    g_free(eng->heap_raw);
    eng->heap_raw = raw;
    eng->heap = heap;
}

static uint32_t slot_alloc(sv_engine *eng)
{
    if (eng->free_head != SLOT_FREE) {
        uint32_t s = eng->free_head;
        eng->free_head = eng->slots[s].next_free;
        return s;
    }
    if (eng->slots_len == eng->slots_cap) {
        uint32_t cap = eng->slots_cap ? eng->slots_cap * 2 : 1024;
        SV_ASSERT(cap <= MAX_SLOTS); /* 16M simultaneously pending events */
        eng->slots = g_renew(struct event_slot, eng->slots, cap);
        heap_grow(eng, cap);
        eng->slots_cap = cap;
    }
    uint32_t s = eng->slots_len++;
    eng->slots[s].generation = 1;
    return s;
}

static void slot_release(sv_engine *eng, uint32_t s)
{
    struct event_slot *slot = &eng->slots[s];
    slot->heap_pos = SLOT_FREE;
    slot->generation++;
    if (slot->generation == 0)
        slot->generation = 1;
    slot->next_free = eng->free_head;
    eng->free_head = s;
}

static inline sv_event_id make_id(uint32_t slot, uint32_t generation)
{
    return ((uint64_t)generation << 32) | slot;
}

/* The slot of a live event, or SLOT_FREE for a stale/invalid handle. */
static uint32_t live_slot(const sv_engine *eng, sv_event_id id)
{
    uint32_t s = (uint32_t)(id & 0xffffffffu);
    uint32_t gen = (uint32_t)(id >> 32);
    if (id == SV_EVENT_NONE || s >= eng->slots_len)
        return SLOT_FREE;
    const struct event_slot *slot = &eng->slots[s];
    if (slot->generation != gen || slot->heap_pos == SLOT_FREE)
        return SLOT_FREE;
    return s;
}

static inline uint64_t make_key(sv_engine *eng, int priority, uint32_t slot)
{
    SV_ASSERT(priority >= SV_PRIO_MIN && priority <= SV_PRIO_MAX);
    uint64_t seq = eng->next_seq++;
    SV_ASSERT(seq <= SEQ_MASK); /* 3.4e10 events per run */
    return ((uint64_t)(priority + PRIO_BIAS) << (SEQ_BITS + SLOT_BITS)) | (seq << SLOT_BITS) | slot;
}

sv_engine *sv_engine_new(uint64_t root_seed)
{
    sv_engine *eng = g_new0(sv_engine, 1);
    eng->seed = root_seed;
    eng->free_head = SLOT_FREE;
    eng->rng_streams =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)sv_rng_free);
    return eng;
}

void sv_engine_free(sv_engine *eng)
{
    if (eng == NULL)
        return;
    g_free(eng->slots);
    g_free(eng->heap_raw);
    g_hash_table_destroy(eng->rng_streams);
    g_free(eng);
}

sv_time sv_engine_now(const sv_engine *eng)
{
    return eng->now;
}

uint64_t sv_engine_seed(const sv_engine *eng)
{
    return eng->seed;
}

sv_event_id sv_engine_schedule(sv_engine *eng, sv_time at, int priority, sv_event_fn fn, void *ctx,
                               uint64_t arg)
{
    SV_ASSERT(fn != NULL);
    SV_ASSERT(at >= eng->now);
    uint32_t s = slot_alloc(eng);
    struct event_slot *slot = &eng->slots[s];
    slot->fn = fn;
    slot->ctx = ctx;
    slot->arg = arg;
    struct heap_entry e = {.time = at, .key = make_key(eng, priority, s)};
    if (eng->root_hole) {
        eng->root_hole = FALSE;
        heap_place(eng, 0, e);
        sift_down(eng, 0);
    } else {
        uint32_t pos = eng->heap_len++;
        heap_place(eng, pos, e);
        sift_up(eng, pos);
    }
    return make_id(s, slot->generation);
}

sv_event_id sv_engine_schedule_in(sv_engine *eng, sv_time delay, int priority, sv_event_fn fn,
                                  void *ctx, uint64_t arg)
{
    SV_ASSERT(delay >= 0 && delay <= SV_TIME_MAX - eng->now);
    return sv_engine_schedule(eng, eng->now + delay, priority, fn, ctx, arg);
}

gboolean sv_engine_cancel(sv_engine *eng, sv_event_id id)
{
    uint32_t s = live_slot(eng, id);
    if (s == SLOT_FREE)
        return FALSE;
    fill_hole(eng);
    heap_remove_at(eng, eng->slots[s].heap_pos);
    slot_release(eng, s);
    return TRUE;
}

gboolean sv_engine_reschedule(sv_engine *eng, sv_event_id id, sv_time at)
{
    uint32_t s = live_slot(eng, id);
    if (s == SLOT_FREE)
        return FALSE;
    SV_ASSERT(at >= eng->now);
    fill_hole(eng);
    uint32_t pos = eng->slots[s].heap_pos;
    struct heap_entry *e = &eng->heap[pos];
    int priority = (int)(e->key >> (SEQ_BITS + SLOT_BITS)) - PRIO_BIAS;
    e->time = at;
    e->key = make_key(eng, priority, s);
    /* A fresh sequence number only ever increases the key at equal time, so direction is decided
     * by comparing with the parent. */
    if (pos > 0 && entry_less(e, &eng->heap[(pos - 1) / 4]))
        sift_up(eng, pos);
    else
        sift_down(eng, pos);
    return TRUE;
}

gboolean sv_engine_pending_event(const sv_engine *eng, sv_event_id id)
{
    return live_slot(eng, id) != SLOT_FREE;
}

sv_time sv_engine_event_time(const sv_engine *eng, sv_event_id id)
{
    uint32_t s = live_slot(eng, id);
    if (s == SLOT_FREE)
        return -1;
    /* The hole only ever sits at the root, which no live event then occupies. */
    return eng->heap[eng->slots[s].heap_pos].time;
}

gboolean sv_engine_step(sv_engine *eng)
{
    fill_hole(eng); /* a step nested inside a callback */
    if (eng->heap_len == 0)
        return FALSE;
    struct heap_entry top = eng->heap[0];
    uint32_t top_slot = entry_slot(&top);
    struct event_slot *slot = &eng->slots[top_slot];
    sv_event_fn fn = slot->fn;
    void *ctx = slot->ctx;
    uint64_t arg = slot->arg;
    slot_release(eng, top_slot);
    if (eng->heap_len == 1) {
        eng->heap_len = 0;
    } else {
        eng->root_hole = TRUE;
    }
    eng->now = top.time;
    eng->events_run++;
    fn(eng, ctx, arg);
    fill_hole(eng);
    return TRUE;
}

uint64_t sv_engine_run(sv_engine *eng, sv_time until)
{
    uint64_t before = eng->events_run;
    eng->stopped = FALSE;
    while (!eng->stopped && eng->heap_len > 0 && eng->heap[0].time <= until)
        sv_engine_step(eng);
    return eng->events_run - before;
}

void sv_engine_stop(sv_engine *eng)
{
    eng->stopped = TRUE;
}

size_t sv_engine_pending(const sv_engine *eng)
{
    return eng->heap_len - (eng->root_hole ? 1 : 0);
}

uint64_t sv_engine_events_run(const sv_engine *eng)
{
    return eng->events_run;
}
