/* The event engine: a bucketed priority queue.
 *
 * Events with the same (time, priority) share a bucket that keeps them in insertion order; a
 * cache-aligned 4-ary min-heap orders the buckets. The (time, priority, insertion sequence) order
 * of DESIGN.md is therefore exact, while a simulation whose components move in lock step (every
 * NPU of a ring step, every request of a batch) pops most events from a bucket in O(1) and pays a
 * heap operation only per distinct timestamp. A hash map finds the bucket of a (time, priority) on
 * insertion. Idea from a teammate's prototype for the replay benchmark, where ~2,000 pending
 * events share a handful of timestamps; calendar queues (Brown 1988) exploit the same clustering.
 *
 * Handles are (generation << 32 | slot), so a stale handle is detected in O(1). Cancelling or
 * rescheduling leaves the old node in its bucket: the record remembers the tag (priority and
 * sequence) of its one live node, and a node whose tag no longer matches is dropped when it
 * reaches the front. Stale nodes are compacted away when they outnumber live events. */
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"

#define NONE UINT32_MAX
#define SLOT_LIVE (UINT32_MAX - 1)
#define PRIO_BIAS 16
#define SEQ_BITS 40

/* 16 bytes: the four children of a node fill one 64-byte line (the heap base is offset so that
 * index 1 is line-aligned: LaMarca & Ladner, "The influence of caches on the performance of
 * heaps", 1996). key = biased priority << 32 | bucket; two buckets never share (time, priority),
 * so the bucket index never decides an order. */
struct heap_entry {
    sv_time time;
    uint64_t key;
};

struct bucket {
    uint32_t head, tail; /* node list, insertion order */
};

struct bucket_node {
    uint64_t tag;     /* the event's tag when this node was queued */
    const void *hint; /* the event's ctx, to prefetch it (sv_engine_step); never dereferenced */
    uint32_t slot;
    uint32_t next;
};

struct event_slot {
    sv_event_fn fn;
    void *ctx;
    uint64_t arg;
    sv_time time;
    uint64_t tag;        /* biased priority << SEQ_BITS | sequence of the live node */
    uint32_t generation; /* bumped when the event fires or is cancelled */
    uint32_t next_free;  /* free-list link, or SLOT_LIVE */
};

/* ---- heap of buckets ---------------------------------------------------------------------- */

#if defined(__GNUC__)
#define PREFETCH_4_LINES(p)                                                                        \
    do {                                                                                           \
        const char *pf_ = (const char *)(p);                                                       \
        __builtin_prefetch(pf_);                                                                   \
        __builtin_prefetch(pf_ + 64);                                                              \
        __builtin_prefetch(pf_ + 128);                                                             \
        __builtin_prefetch(pf_ + 192);                                                             \
    } while (0)
#else
#define PREFETCH_4_LINES(p) ((void)(p))
#endif

static inline int entry_less(const struct heap_entry *a, const struct heap_entry *b)
{
    if (a->time != b->time)
        return a->time < b->time;
    return a->key < b->key;
}

/* The smaller of two entries by index, written so the compiler emits conditional moves: in a
 * steady-state heap the outcome is a coin toss, and mispredicted branches were the largest cost
 * measured in the hold benchmark. */
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
 * comparing against the moving entry, then sift the entry up from there; the next level's four
 * candidate lines are prefetched before the comparison resolves (a hint: no effect on results). */
static void sift_down(struct heap_entry *h, uint32_t n, uint32_t pos, struct heap_entry e)
{
    uint32_t start = pos;
    for (;;) {
        uint32_t first = pos * 4 + 1;
        if (first >= n)
            break;
        uint32_t grand = first * 4 + 1;
        if (grand < n)
            PREFETCH_4_LINES(&h[grand]);
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

/* Allocated 64-byte aligned and used from one entry before an aligned address, so heap[1] sits
 * on a line boundary and each group of four children (4i+1 .. 4i+4) is one line. */
static void heap_reserve(sv_engine *eng, uint32_t want)
{
    if (want <= eng->heap_cap)
        return;
    uint32_t cap = eng->heap_cap ? eng->heap_cap : 256;
    while (cap < want)
        cap *= 2;
    void *raw = g_malloc(((size_t)cap + 4) * sizeof(struct heap_entry) + 64);
    uintptr_t aligned = ((uintptr_t)raw + 63) & ~(uintptr_t)63;
    struct heap_entry *heap = (struct heap_entry *)(aligned + 64) - 1;
    if (eng->heap_len > 0)
        memcpy(heap, eng->heap, eng->heap_len * sizeof(struct heap_entry));
    g_free(eng->heap_raw);
    eng->heap_raw = raw;
    eng->heap = heap;
    eng->heap_cap = cap;
}

/* A bucket that empties is always the top one; removing it leaves a hole at the root that the
 * next new bucket fills with one sift-down (the common case: the callback that ran schedules a
 * follow-up at a new time), or that any other heap access fills first. */
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

/* ---- (time, priority) -> bucket map ------------------------------------------------------- */

static inline uint64_t map_key(sv_time t, uint32_t biased_prio)
{
    /* time <= SV_ENGINE_HORIZON = 2^58 ns, so t << 5 does not wrap (the scheduling calls refuse
     * later times); +1 keeps the key nonzero, the map's cheap case */
    uint64_t k = (((uint64_t)t << 5) | biased_prio) + 1;
    /* MurmurHash3 fmix64's first half spreads it for the map (which takes low bits as the slot):
     * a bijection, so keys stay distinct and nonzero; cheaper than sv_hash_mix64 per event. */
    k ^= k >> 33;
    k *= UINT64_C(0xff51afd7ed558ccd);
    k ^= k >> 33;
    return k;
}

/* ---- buckets, nodes, slots ---------------------------------------------------------------- */

static uint32_t node_alloc(sv_engine *eng)
{
    if (eng->node_free == NONE) {
        uint32_t old = eng->nodes_cap;
        eng->nodes_cap = old ? old * 2 : 1024;
        eng->nodes = g_renew(struct bucket_node, eng->nodes, eng->nodes_cap);
        for (uint32_t i = old; i < eng->nodes_cap; i++)
            eng->nodes[i].next = i + 1 < eng->nodes_cap ? i + 1 : NONE;
        eng->node_free = old;
    }
    uint32_t n = eng->node_free;
    eng->node_free = eng->nodes[n].next;
    return n;
}

static inline void node_release(sv_engine *eng, uint32_t n)
{
    eng->nodes[n].next = eng->node_free;
    eng->node_free = n;
}

static uint32_t bucket_alloc(sv_engine *eng)
{
    if (eng->bucket_free == NONE) {
        uint32_t old = eng->buckets_cap;
        eng->buckets_cap = old ? old * 2 : 256;
        eng->buckets = g_renew(struct bucket, eng->buckets, eng->buckets_cap);
        for (uint32_t i = old; i < eng->buckets_cap; i++)
            eng->buckets[i].head = i + 1 < eng->buckets_cap ? i + 1 : NONE;
        eng->bucket_free = old;
    }
    uint32_t b = eng->bucket_free;
    eng->bucket_free = eng->buckets[b].head;
    eng->buckets[b].head = eng->buckets[b].tail = NONE;
    return b;
}

/* Remove the (empty) top bucket. */
static void drop_top_bucket(sv_engine *eng)
{
    struct heap_entry top = eng->heap[0];
    uint32_t b = (uint32_t)top.key;
    sv_u64map_remove(&eng->bucket_map, map_key(top.time, (uint32_t)(top.key >> 32)));
    if (eng->last_bucket == b)
        eng->last_key = 0;
    eng->buckets[b].head = eng->bucket_free;
    eng->bucket_free = b;
    eng->root_hole = TRUE;
}

static uint32_t slot_alloc(sv_engine *eng)
{
    if (eng->free_head != NONE) {
        uint32_t s = eng->free_head;
        eng->free_head = eng->slots[s].next_free;
        return s;
    }
    if (eng->slots_len == eng->slots_cap) {
        uint32_t cap = eng->slots_cap ? eng->slots_cap * 2 : 1024;
        SV_ASSERT(cap > eng->slots_cap); /* 2^32 simultaneously pending events */
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

/* The slot of a live event, or NONE for a stale/invalid handle. */
static uint32_t live_slot(const sv_engine *eng, sv_event_id id)
{
    uint32_t s = (uint32_t)(id & 0xffffffffu);
    uint32_t gen = (uint32_t)(id >> 32);
    if (id == SV_EVENT_NONE || s >= eng->slots_len)
        return NONE;
    const struct event_slot *slot = &eng->slots[s];
    if (slot->generation != gen || slot->next_free != SLOT_LIVE)
        return NONE;
    return s;
}

static inline gboolean node_live(const sv_engine *eng, const struct bucket_node *nd)
{
    const struct event_slot *slot = &eng->slots[nd->slot];
    return slot->next_free == SLOT_LIVE && slot->tag == nd->tag;
}

/* The tag of the next insertion at `priority` (uses up a sequence number). */
static inline uint64_t next_tag(sv_engine *eng, int priority)
{
    SV_ASSERT(priority >= SV_PRIO_MIN && priority <= SV_PRIO_MAX);
    uint64_t seq = eng->next_seq++;
    SV_ASSERT(seq < (UINT64_C(1) << SEQ_BITS));
    return ((uint64_t)(priority + PRIO_BIAS) << SEQ_BITS) | seq;
}

/* Queue slot `s` at (at, tag) in its bucket. A bucket's nodes are in tag order; a fresh tag is
 * the largest, so it goes last; an older one (sv_engine_schedule_at_mark) is inserted in place. */
static void enqueue_tag(sv_engine *eng, sv_time at, uint64_t tag, uint32_t s)
{
    uint32_t prio = (uint32_t)(tag >> SEQ_BITS);
    eng->slots[s].tag = tag;
    eng->slots[s].time = at;

    uint64_t k = map_key(at, prio);
    uint32_t b;
    if (k == eng->last_key) {
        b = eng->last_bucket;
    } else {
        b = (uint32_t)sv_u64map_get(&eng->bucket_map, k, NONE);
        if (b == NONE) {
            b = bucket_alloc(eng);
            sv_u64map_put(&eng->bucket_map, k, b);
            heap_push(eng, (struct heap_entry){.time = at, .key = ((uint64_t)prio << 32) | b});
        }
        eng->last_key = k;
        eng->last_bucket = b;
    }
    uint32_t n = node_alloc(eng);
    eng->nodes[n] =
        (struct bucket_node){.tag = tag, .hint = eng->slots[s].ctx, .slot = s, .next = NONE};
    struct bucket *bk = &eng->buckets[b];
    if (bk->tail == NONE) {
        bk->head = n;
        bk->tail = n;
    } else if (eng->nodes[bk->tail].tag < tag) {
        eng->nodes[bk->tail].next = n;
        bk->tail = n;
    } else if (tag < eng->nodes[bk->head].tag) {
        eng->nodes[n].next = bk->head;
        bk->head = n;
    } else {
        uint32_t prev = bk->head;
        while (eng->nodes[eng->nodes[prev].next].tag < tag)
            prev = eng->nodes[prev].next;
        eng->nodes[n].next = eng->nodes[prev].next;
        eng->nodes[prev].next = n;
    }
}

/* Queue slot `s` at (at, priority) behind every event already there. */
static inline void enqueue(sv_engine *eng, sv_time at, int priority, uint32_t s)
{
    enqueue_tag(eng, at, next_tag(eng, priority), s);
}

/* Drop every stale node; drop buckets left empty and rebuild the heap bottom-up (Floyd). O(n),
 * run when stale nodes outnumber live events, so amortised over the cancels that made them. */
static void compact(sv_engine *eng)
{
    fill_hole(eng);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < eng->heap_len; i++) {
        struct heap_entry e = eng->heap[i];
        struct bucket *bk = &eng->buckets[(uint32_t)e.key];
        uint32_t prev = NONE;
        for (uint32_t n = bk->head; n != NONE;) {
            uint32_t next = eng->nodes[n].next;
            if (node_live(eng, &eng->nodes[n])) {
                if (prev == NONE)
                    bk->head = n;
                else
                    eng->nodes[prev].next = n;
                prev = n;
            } else {
                node_release(eng, n);
            }
            n = next;
        }
        if (prev == NONE) {
            sv_u64map_remove(&eng->bucket_map, map_key(e.time, (uint32_t)(e.key >> 32)));
            if (eng->last_bucket == (uint32_t)e.key)
                eng->last_key = 0;
            bk->head = eng->bucket_free;
            eng->bucket_free = (uint32_t)e.key;
            continue;
        }
        eng->nodes[prev].next = NONE;
        bk->tail = prev;
        eng->heap[kept++] = e;
    }
    eng->heap_len = kept;
    eng->stale = 0;
    for (uint32_t i = kept / 4 + 1; i-- > 0;) {
        if (i < kept)
            sift_down(eng->heap, kept, i, eng->heap[i]);
    }
}

static void note_stale(sv_engine *eng)
{
    if (++eng->stale > 1024 && eng->stale > eng->live)
        compact(eng);
}

/* Make the front node of the top bucket a live event; FALSE when nothing is pending. */
static gboolean settle_top(sv_engine *eng)
{
    fill_hole(eng);
    while (eng->heap_len > 0) {
        struct bucket *bk = &eng->buckets[(uint32_t)eng->heap[0].key];
        while (bk->head != NONE) {
            if (node_live(eng, &eng->nodes[bk->head]))
                return TRUE;
            uint32_t next = eng->nodes[bk->head].next;
            node_release(eng, bk->head);
            bk->head = next;
            eng->stale--;
        }
        drop_top_bucket(eng);
        fill_hole(eng);
    }
    return FALSE;
}

/* ---- public API --------------------------------------------------------------------------- */

/* The flag of an engine without one: never set (one load per event instead of a NULL test). */
static const volatile sig_atomic_t no_interrupt = 0;

sv_engine *sv_engine_new(uint64_t root_seed)
{
    sv_engine *eng = g_new0(sv_engine, 1);
    eng->seed = root_seed;
    eng->free_head = NONE;
    eng->bucket_free = NONE;
    eng->node_free = NONE;
    eng->front_time = -1; /* before every place */
    eng->interrupt = &no_interrupt;
    eng->watchdog_at = UINT64_MAX;
    eng->tick_at = UINT64_MAX;
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
    g_free(eng->buckets);
    g_free(eng->nodes);
    sv_u64map_clear(&eng->bucket_map);
    g_clear_error(&eng->error);
    g_hash_table_destroy(eng->rng_streams);
    g_free(eng);
}

sv_time sv_engine_now(const sv_engine *eng)
{
    return eng->now;
}

/* A time past the horizon would wrap the bucket key and fire early: refuse it, keep the first
 * such refusal as the engine's error and stop the run (sv_engine_error). FALSE when refused. */
static gboolean within_horizon(sv_engine *eng, sv_time at, const char *what)
{
    if (G_LIKELY(at <= SV_ENGINE_HORIZON))
        return TRUE;
    if (eng->error == NULL)
        g_set_error(&eng->error, SV_CORE_ERROR, SV_CORE_ERROR_HORIZON,
                    "%s at %" G_GINT64_FORMAT
                    " ns is past the engine's horizon of %" G_GINT64_FORMAT
                    " ns (about 9.1 years of simulated time), at simulated time %" G_GINT64_FORMAT
                    " ns: a duration overflowed (a zero rate?) or an input is out of range",
                    what, at, SV_ENGINE_HORIZON, eng->now);
    eng->stopped = TRUE;
    return FALSE;
}

/* The watchdog's verdict: the run stops with what the model says is stuck. */
static void watchdog_trip(sv_engine *eng)
{
    if (eng->error == NULL) {
        g_autofree char *diag = eng->watchdog_diag ? eng->watchdog_diag(eng->watchdog_ctx) : NULL;
        g_set_error(&eng->error, SV_CORE_ERROR, SV_CORE_ERROR_STALL,
                    "the simulation makes no progress: %" G_GUINT64_FORMAT
                    " events ran since the last one that moved a request (at simulated %.9f s; "
                    "now %.9f s)%s%s",
                    eng->watchdog_max, (double)eng->progress_time / 1e9, (double)eng->now / 1e9,
                    diag ? ": " : "", diag ? diag : "");
    }
    eng->stopped = TRUE;
}

const GError *sv_engine_error(const sv_engine *eng)
{
    return eng->error;
}

sv_event_id sv_engine_schedule(sv_engine *eng, sv_time at, int priority, sv_event_fn fn, void *ctx,
                               uint64_t arg)
{
    SV_ASSERT(fn != NULL);
    SV_ASSERT(at >= eng->now);
    if (!within_horizon(eng, at, "an event scheduled"))
        return SV_EVENT_NONE;
    uint32_t s = slot_alloc(eng);
    struct event_slot *slot = &eng->slots[s];
    slot->fn = fn;
    slot->ctx = ctx;
    slot->arg = arg;
    slot->next_free = SLOT_LIVE;
    eng->live++;
    enqueue(eng, at, priority, s);
    return make_id(s, slot->generation);
}

sv_event_id sv_engine_schedule_in(sv_engine *eng, sv_time delay, int priority, sv_event_fn fn,
                                  void *ctx, uint64_t arg)
{
    SV_ASSERT(delay >= 0);
    /* now + delay may overflow int64 itself: compare the delay with the room left */
    if (delay > SV_ENGINE_HORIZON - eng->now) {
        within_horizon(eng, delay > SV_TIME_MAX - eng->now ? SV_TIME_MAX : eng->now + delay,
                       "an event scheduled");
        return SV_EVENT_NONE;
    }
    return sv_engine_schedule(eng, eng->now + delay, priority, fn, ctx, arg);
}

/* Why a mark works: a mark taken after the front F (largest place run so far) stands for an
 * event E that would have been queued from then on; every place run while E was pending is
 * before E's (it was the minimum), every place run earlier is at most F. So E has run iff its
 * place is at most the front, and leaving it out changes no other event's order as long as its
 * callback would have had no effect (the caller's contract). */
static inline gboolean after_front(const sv_engine *eng, sv_time at, uint64_t tag)
{
    return at > eng->front_time || (at == eng->front_time && tag > eng->front_tag);
}

gboolean sv_engine_mark(sv_engine *eng, sv_time at, int priority, sv_event_mark *out)
{
    SV_ASSERT(at >= eng->now);
    if (at > SV_ENGINE_HORIZON)
        return FALSE; /* the caller schedules a real event, which reports the error */
    uint64_t tag = ((uint64_t)(priority + PRIO_BIAS) << SEQ_BITS) | eng->next_seq;
    if (!after_front(eng, at, tag))
        return FALSE;
    out->time = at;
    out->tag = next_tag(eng, priority);
    return TRUE;
}

gboolean sv_core__engine_mark_passed(const sv_engine *eng, const sv_event_mark *mark)
{
    return !after_front(eng, mark->time, mark->tag);
}

sv_event_id sv_engine_schedule_at_mark(sv_engine *eng, const sv_event_mark *mark, sv_event_fn fn,
                                       void *ctx, uint64_t arg)
{
    SV_ASSERT(fn != NULL);
    SV_ASSERT(after_front(eng, mark->time, mark->tag));
    uint32_t s = slot_alloc(eng);
    struct event_slot *slot = &eng->slots[s];
    slot->fn = fn;
    slot->ctx = ctx;
    slot->arg = arg;
    slot->next_free = SLOT_LIVE;
    eng->live++;
    enqueue_tag(eng, mark->time, mark->tag, s);
    return make_id(s, slot->generation);
}

gboolean sv_engine_cancel(sv_engine *eng, sv_event_id id)
{
    uint32_t s = live_slot(eng, id);
    if (s == NONE)
        return FALSE;
    slot_release(eng, s);
    note_stale(eng);
    return TRUE;
}

gboolean sv_engine_reschedule(sv_engine *eng, sv_event_id id, sv_time at)
{
    uint32_t s = live_slot(eng, id);
    if (s == NONE)
        return FALSE;
    SV_ASSERT(at >= eng->now);
    if (!within_horizon(eng, at, "an event rescheduled"))
        return FALSE;
    int priority = (int)(eng->slots[s].tag >> SEQ_BITS) - PRIO_BIAS;
    enqueue(eng, at, priority, s);
    note_stale(eng);
    return TRUE;
}

gboolean sv_engine_pending_event(const sv_engine *eng, sv_event_id id)
{
    return live_slot(eng, id) != NONE;
}

sv_time sv_engine_event_time(const sv_engine *eng, sv_event_id id)
{
    uint32_t s = live_slot(eng, id);
    return s == NONE ? -1 : eng->slots[s].time;
}

uint64_t sv_engine_event_order(const sv_engine *eng, sv_event_id id)
{
    uint32_t s = live_slot(eng, id);
    return s == NONE ? 0 : eng->slots[s].tag;
}

/* Run the front event; the top bucket must be settled (settle_top returned TRUE). */
static inline void step_settled(sv_engine *eng)
{
    struct heap_entry top = eng->heap[0];
    struct bucket *bk = &eng->buckets[(uint32_t)top.key];
    uint32_t n = bk->head;
    uint32_t s = eng->nodes[n].slot;
    bk->head = eng->nodes[n].next;
    node_release(eng, n);
#if defined(__GNUC__)
    /* The next event of this bucket runs next unless the callback queues one before it (only
     * at `now` with a lower priority): fetch its record and context while this one runs (a
     * hint only). Lock-step models touch thousands of records per timestamp, so each is a miss. */
    if (bk->head != NONE) { /* before drop_top_bucket reuses `head` as a free-list link */
        const struct bucket_node *nd = &eng->nodes[bk->head]; /* prefetched one step ago */
        __builtin_prefetch(nd->hint);
        __builtin_prefetch(&eng->slots[nd->slot]);
        if (nd->next != NONE)
            __builtin_prefetch(&eng->nodes[nd->next]);
    }
#endif
    if (bk->head == NONE)
        drop_top_bucket(eng);
    struct event_slot *slot = &eng->slots[s];
    sv_event_fn fn = slot->fn;
    void *ctx = slot->ctx;
    uint64_t arg = slot->arg;
    slot_release(eng, s);
    eng->now = top.time;
    /* pops are in (time, tag) order except after an insertion at `now` with a lower priority
     * than the running event's: keep the maximum */
    if (top.time > eng->front_time || slot->tag > eng->front_tag) {
        eng->front_time = top.time;
        eng->front_tag = slot->tag;
    }
    eng->events_run++;
    fn(eng, ctx, arg);
}

gboolean sv_engine_step(sv_engine *eng)
{
    if (!settle_top(eng))
        return FALSE;
    step_settled(eng);
    return TRUE;
}

uint64_t sv_engine_run(sv_engine *eng, sv_time until)
{
    uint64_t before = eng->events_run;
    if (eng->error != NULL)
        return 0; /* a refused schedule ended the run; the model's state is incomplete */
    eng->stopped = FALSE;
    while (!eng->stopped && !*eng->interrupt && settle_top(eng) && eng->heap[0].time <= until) {
        if (G_UNLIKELY(eng->events_run >= eng->watchdog_at)) {
            watchdog_trip(eng);
            break;
        }
        if (G_UNLIKELY(eng->events_run >= eng->tick_at)) {
            eng->tick_at = eng->events_run + eng->tick_every;
            eng->tick_fn(eng, eng->tick_ctx);
        }
        step_settled(eng);
    }
    if (*eng->interrupt && eng->error == NULL)
        g_set_error(&eng->error, SV_CORE_ERROR, SV_CORE_ERROR_INTERRUPTED,
                    "interrupted at simulated time %" G_GINT64_FORMAT " ns", eng->now);
    fill_hole(eng);
    return eng->events_run - before;
}

void sv_engine_set_interrupt(sv_engine *eng, const volatile sig_atomic_t *flag)
{
    eng->interrupt = flag ? flag : &no_interrupt;
}

void sv_engine_set_watchdog(sv_engine *eng, uint64_t max_events, sv_engine_diag_fn diagnose,
                            void *ctx)
{
    eng->watchdog_max = max_events;
    eng->watchdog_diag = diagnose;
    eng->watchdog_ctx = ctx;
    sv_engine_progress(eng);
}

void sv_engine_progress(sv_engine *eng)
{
    eng->progress_time = eng->now;
    eng->progress_events = eng->events_run;
    eng->watchdog_at = eng->watchdog_max == 0 || eng->watchdog_max > UINT64_MAX - eng->events_run
                           ? UINT64_MAX
                           : eng->events_run + eng->watchdog_max;
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

uint64_t sv_engine_events_since_progress(const sv_engine *eng, sv_time *mark_ns)
{
    if (mark_ns)
        *mark_ns = eng->progress_time;
    return eng->events_run - eng->progress_events;
}

char *sv_engine_diagnose(const sv_engine *eng)
{
    return eng->watchdog_diag ? eng->watchdog_diag(eng->watchdog_ctx) : NULL;
}

void sv_engine_set_tick(sv_engine *eng, uint64_t every, sv_engine_tick_fn fn, void *ctx)
{
    eng->tick_every = fn ? every : 0;
    eng->tick_fn = fn;
    eng->tick_ctx = ctx;
    eng->tick_at = eng->tick_every == 0 || eng->tick_every > UINT64_MAX - eng->events_run
                       ? UINT64_MAX
                       : eng->events_run + eng->tick_every;
}
