/* The event engine: a cache-aligned 4-ary min-heap of (time, priority, sequence) keys with lazy
 * cancellation, over a slab of event records.
 *
 * Handles are (generation << 32 | slot), so a stale handle is detected in O(1). Cancelling or
 * rescheduling does not touch the heap: the record remembers the sequence number of its one live
 * heap entry, and an entry whose sequence no longer matches is dropped when it reaches the top.
 * Keeping no back-pointers from records into the heap means a sift moves 16-byte entries and
 * touches nothing else, which is what the hold-model benchmark (bench/bench_engine_hold.c)
 * rewards; stale entries are compacted away when they outnumber the live ones.
 *
 * Same-time events fire in insertion order for equal priority, as ASTRA-sim's and ns-3's
 * schedulers do; a rescheduled event counts as newly inserted. */
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
    sv_time time;
    uint64_t tag;        /* priority | sequence of the live heap entry (its key without slot) */
    uint32_t generation; /* bumped when the event fires or is cancelled */
    uint32_t next_free;  /* free-list link, or SLOT_LIVE */
};

#define SLOT_NONE UINT32_MAX
#define SLOT_LIVE (UINT32_MAX - 1)
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

#if defined(__GNUC__)
#define SV_PREFETCH_4_LINES(p)                                                                     \
    do {                                                                                           \
        const char *pf_ = (const char *)(p);                                                       \
        __builtin_prefetch(pf_);                                                                   \
        __builtin_prefetch(pf_ + 64);                                                              \
        __builtin_prefetch(pf_ + 128);                                                             \
        __builtin_prefetch(pf_ + 192);                                                             \
    } while (0)
#else
#define SV_PREFETCH_4_LINES(p) ((void)(p))
#endif

static inline int entry_less(const struct heap_entry *a, const struct heap_entry *b)
{
    if (a->time != b->time)
        return a->time < b->time;
    return a->key < b->key;
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

static void sift_up(struct heap_entry *h, uint32_t pos)
{
    struct heap_entry e = h[pos];
    while (pos > 0) {
        uint32_t parent = (pos - 1) / 4;
        if (!entry_less(&e, &h[parent]))
            break;
        h[pos] = h[parent];
        pos = parent;
    }
    h[pos] = e;
}

/* Bottom-up sift-down (Wegener 1993): walk the hole to a leaf along the smallest children without
 * comparing against the moving entry, then sift the entry up from there. Entries re-inserted at the
 * root usually belong near the bottom, so this saves a comparison per level. */
static void sift_down(struct heap_entry *h, uint32_t n, uint32_t pos, struct heap_entry e)
{
    uint32_t start = pos;
    for (;;) {
        uint32_t first = pos * 4 + 1;
        if (first >= n)
            break;
        /* The next level is one of four cache lines (the children groups of these four
         * children); fetching them all before the comparison resolves takes the memory latency off
         * the critical path. A hint only: no effect on results. */
        uint32_t grand = first * 4 + 1;
        if (grand < n)
            SV_PREFETCH_4_LINES(&h[grand]);
        uint32_t best = min_child(h, first, n);
        h[pos] = h[best];
        pos = best;
    }
    while (pos > start) {
        uint32_t parent = (pos - 1) / 4;
        if (!entry_less(&e, &h[parent]))
            break;
        h[pos] = h[parent];
        pos = parent;
    }
    h[pos] = e;
}

/* The heap array is allocated 64-byte aligned and used from one entry before an aligned address,
 * i.e. heap[1] sits on a cache-line boundary, so each group of four children (4i+1 .. 4i+4) is
 * one line. */
static void heap_reserve(sv_engine *eng, uint32_t want)
{
    if (want <= eng->heap_cap)
        return;
    uint32_t cap = eng->heap_cap ? eng->heap_cap : 1024;
    while (cap < want)
        cap *= 2;
    size_t bytes = ((size_t)cap + 4) * sizeof(struct heap_entry) + 64;
    void *raw = g_malloc(bytes);
    uintptr_t aligned = ((uintptr_t)raw + 63) & ~(uintptr_t)63;
    struct heap_entry *heap = (struct heap_entry *)(aligned + 64) - 1;
    if (eng->heap_len > 0)
        memcpy(heap, eng->heap, eng->heap_len * sizeof(struct heap_entry));
    g_free(eng->heap_raw);
    eng->heap_raw = raw;
    eng->heap = heap;
    eng->heap_cap = cap;
}

static inline gboolean entry_live(const sv_engine *eng, const struct heap_entry *e)
{
    const struct event_slot *slot = &eng->slots[entry_slot(e)];
    return slot->next_free == SLOT_LIVE && slot->tag == (e->key >> SLOT_BITS);
}

/* Drop every stale entry and rebuild the heap bottom-up (Floyd): O(n), run when stale entries
 * outnumber live ones, so its cost is amortised over the cancels that made them. */
static void heap_compact(sv_engine *eng)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < eng->heap_len; i++) {
        if (entry_live(eng, &eng->heap[i]))
            eng->heap[n++] = eng->heap[i];
    }
    eng->heap_len = n;
    eng->stale = 0;
    for (uint32_t i = n / 4 + 1; i-- > 0;) {
        if (i < n)
            sift_down(eng->heap, n, i, eng->heap[i]);
    }
}

/* sv_engine_step leaves the root empty (a "hole") while the callback runs: the common pattern of a
 * handler scheduling one follow-up event then costs one sift-down instead of a sift-down for the
 * removal plus a sift-up for the insertion. Any other heap operation fills the hole first. */
static void fill_hole(sv_engine *eng)
{
    if (!eng->root_hole)
        return;
    eng->root_hole = FALSE;
    uint32_t last = --eng->heap_len;
    if (last > 0)
        sift_down(eng->heap, last, 0, eng->heap[last]);
}

static void heap_push(sv_engine *eng, struct heap_entry e)
{
    if (eng->root_hole) {
        eng->root_hole = FALSE;
        sift_down(eng->heap, eng->heap_len, 0, e);
        return;
    }
    heap_reserve(eng, eng->heap_len + 1);
    uint32_t pos = eng->heap_len++;
    eng->heap[pos] = e;
    sift_up(eng->heap, pos);
}

static uint32_t slot_alloc(sv_engine *eng)
{
    if (eng->free_head != SLOT_NONE) {
        uint32_t s = eng->free_head;
        eng->free_head = eng->slots[s].next_free;
        return s;
    }
    if (eng->slots_len == eng->slots_cap) {
        uint32_t cap = eng->slots_cap ? eng->slots_cap * 2 : 1024;
        SV_ASSERT(cap <= MAX_SLOTS); /* 16M simultaneously pending events */
        eng->slots = g_renew(struct event_slot, eng->slots, cap);
        eng->slots_cap = cap;
    }
    uint32_t s = eng->slots_len++;
    eng->slots[s].generation = 1;
    return s;
}

static void slot_release(sv_engine *eng, uint32_t s)
{
    struct event_slot *slot = &eng->slots[s];
    slot->generation++;
    if (slot->generation == 0)
        slot->generation = 1;
    slot->next_free = eng->free_head;
    eng->free_head = s;
    eng->live--;
}

static inline sv_event_id make_id(uint32_t slot, uint32_t generation)
{
    return ((uint64_t)generation << 32) | slot;
}

/* The slot of a live event, or SLOT_NONE for a stale/invalid handle. */
static uint32_t live_slot(const sv_engine *eng, sv_event_id id)
{
    uint32_t s = (uint32_t)(id & 0xffffffffu);
    uint32_t gen = (uint32_t)(id >> 32);
    if (id == SV_EVENT_NONE || s >= eng->slots_len)
        return SLOT_NONE;
    const struct event_slot *slot = &eng->slots[s];
    if (slot->generation != gen || slot->next_free != SLOT_LIVE)
        return SLOT_NONE;
    return s;
}

static inline struct heap_entry make_entry(sv_engine *eng, sv_time at, int priority, uint32_t s)
{
    SV_ASSERT(priority >= SV_PRIO_MIN && priority <= SV_PRIO_MAX);
    uint64_t seq = eng->next_seq++;
    SV_ASSERT(seq <= SEQ_MASK); /* 3.4e10 events per run */
    uint64_t tag = ((uint64_t)(priority + PRIO_BIAS) << SEQ_BITS) | seq;
    eng->slots[s].tag = tag;
    eng->slots[s].time = at;
    struct heap_entry e = {.time = at, .key = (tag << SLOT_BITS) | s};
    return e;
}

sv_engine *sv_engine_new(uint64_t root_seed)
{
    sv_engine *eng = g_new0(sv_engine, 1);
    eng->seed = root_seed;
    eng->free_head = SLOT_NONE;
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
    slot->next_free = SLOT_LIVE;
    eng->live++;
    heap_push(eng, make_entry(eng, at, priority, s));
    return make_id(s, slot->generation);
}

sv_event_id sv_engine_schedule_in(sv_engine *eng, sv_time delay, int priority, sv_event_fn fn,
                                  void *ctx, uint64_t arg)
{
    SV_ASSERT(delay >= 0 && delay <= SV_TIME_MAX - eng->now);
    return sv_engine_schedule(eng, eng->now + delay, priority, fn, ctx, arg);
}

static void note_stale(sv_engine *eng)
{
    eng->stale++;
    if (eng->stale > 1024 && eng->stale > eng->live) {
        fill_hole(eng);
        heap_compact(eng);
    }
}

gboolean sv_engine_cancel(sv_engine *eng, sv_event_id id)
{
    uint32_t s = live_slot(eng, id);
    if (s == SLOT_NONE)
        return FALSE;
    slot_release(eng, s);
    note_stale(eng);
    return TRUE;
}

gboolean sv_engine_reschedule(sv_engine *eng, sv_event_id id, sv_time at)
{
    uint32_t s = live_slot(eng, id);
    if (s == SLOT_NONE)
        return FALSE;
    SV_ASSERT(at >= eng->now);
    int priority = (int)(eng->slots[s].tag >> SEQ_BITS) - PRIO_BIAS;
    heap_push(eng, make_entry(eng, at, priority, s));
    note_stale(eng);
    return TRUE;
}

gboolean sv_engine_pending_event(const sv_engine *eng, sv_event_id id)
{
    return live_slot(eng, id) != SLOT_NONE;
}

sv_time sv_engine_event_time(const sv_engine *eng, sv_event_id id)
{
    uint32_t s = live_slot(eng, id);
    return s == SLOT_NONE ? -1 : eng->slots[s].time;
}

/* Remove stale entries from the top; TRUE when a live event is at the top. */
static gboolean settle_top(sv_engine *eng)
{
    fill_hole(eng);
    while (eng->heap_len > 0 && !entry_live(eng, &eng->heap[0])) {
        eng->stale--;
        eng->root_hole = TRUE;
        fill_hole(eng);
    }
    return eng->heap_len > 0;
}

gboolean sv_engine_step(sv_engine *eng)
{
    if (!settle_top(eng))
        return FALSE;
    struct heap_entry top = eng->heap[0];
    uint32_t s = entry_slot(&top);
    struct event_slot *slot = &eng->slots[s];
    sv_event_fn fn = slot->fn;
    void *ctx = slot->ctx;
    uint64_t arg = slot->arg;
    slot_release(eng, s);
    eng->root_hole = TRUE;
    eng->now = top.time;
    eng->events_run++;
    fn(eng, ctx, arg);
    return TRUE;
}

uint64_t sv_engine_run(sv_engine *eng, sv_time until)
{
    uint64_t before = eng->events_run;
    eng->stopped = FALSE;
    while (!eng->stopped && settle_top(eng) && eng->heap[0].time <= until)
        sv_engine_step(eng);
    fill_hole(eng);
    return eng->events_run - before;
}

void sv_engine_stop(sv_engine *eng)
{
    eng->stopped = TRUE;
}

size_t sv_engine_pending(const sv_engine *eng)
{
    return eng->live;
}

uint64_t sv_engine_events_run(const sv_engine *eng)
{
    return eng->events_run;
}
