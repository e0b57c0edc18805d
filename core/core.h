/* servesim core: simulation time, the event engine, RNG streams, logging and config helpers.
 *
 * Everything here is model-agnostic: the engine knows time, order and callbacks only. */
#ifndef SV_CORE_H
#define SV_CORE_H

#include <glib.h>
#include <json-glib/json-glib.h>
#include <signal.h>
#include <stdint.h>

G_BEGIN_DECLS

/* ---- time ------------------------------------------------------------------------------- */

/* Simulation time in nanoseconds. */
typedef int64_t sv_time;
#define SV_TIME_MAX INT64_MAX
#define SV_NS_PER_US INT64_C(1000)
#define SV_NS_PER_MS INT64_C(1000000)
#define SV_NS_PER_S INT64_C(1000000000)

/* A time past any event the engine accepts (SV_ENGINE_HORIZON = 2^58, below): what a duration
 * too long to represent becomes. Any event at it is refused as past the horizon (an error that
 * names the time, never a wrap), and a time below the horizon plus a few such durations stays in
 * int64 (2^58 + 7 x 2^60 < 2^63), so no sum on the way to the engine overflows. */
#define SV_TIME_BEYOND (INT64_C(1) << 60)

/* The one place a real-valued duration becomes integer nanoseconds: truncation toward zero, as
 * ASTRA-sim does (C++ double -> uint64 conversion), clamped to [0, SV_TIME_BEYOND]. Inline: it is
 * on the per-message path of every network model (2% of a 1024-NPU replay as a call). */
static inline sv_time sv_time_from_ns(double ns)
{
    if (!(ns > 0.0)) /* also catches NaN */
        return 0;
    if (ns >= (double)SV_TIME_BEYOND)
        return SV_TIME_BEYOND;
    return (sv_time)ns; /* truncation toward zero, as C++ double -> integer */
}

/* Sums and multiples of non-negative durations (a layer's operators, n layers) on the way to the
 * engine, saturating at SV_TIME_BEYOND: a duration clamped there stays past the horizon, and the
 * sum never wraps. */
static inline sv_time sv_time_add_sat(sv_time a, sv_time b)
{
    if (a >= SV_TIME_BEYOND || b >= SV_TIME_BEYOND - a)
        return SV_TIME_BEYOND;
    return a + b;
}
static inline sv_time sv_time_mul_sat(sv_time a, int64_t n)
{
    if (n > 0 && a > SV_TIME_BEYOND / n)
        return SV_TIME_BEYOND;
    return a * n;
}

/* ASTRA-sim's link bandwidth unit: "GB/s" in its YAML means GiB/s per 1e9 ns, i.e. bytes per ns =
 * gbps * 2^30 / 1e9 (astra-network-analytical, CHAKRA_ET.md 3.4). */
double sv_bw_gbps_to_bytes_per_ns(double gbps);
/* Spec-sheet bandwidth: decimal GB/s (10^9 bytes/s) is exactly bytes per ns (memory tiers). */
double sv_bw_dec_gbps_to_bytes_per_ns(double gbps);

/* ---- errors ----------------------------------------------------------------------------- */

#define SV_CORE_ERROR (sv_core_error_quark())
GQuark sv_core_error_quark(void);
typedef enum {
    SV_CORE_ERROR_IO,          /* file cannot be read or written */
    SV_CORE_ERROR_PARSE,       /* syntactically bad input */
    SV_CORE_ERROR_INVALID,     /* well-formed but invalid value (field path in the message) */
    SV_CORE_ERROR_STALL,       /* simulation cannot make progress */
    SV_CORE_ERROR_HORIZON,     /* an event scheduled past SV_ENGINE_HORIZON (sv_engine_error) */
    SV_CORE_ERROR_INTERRUPTED, /* stopped by its interrupt flag (sv_engine_set_interrupt) */
    /* A conservation check at the end of a run failed (docs/reliability.md, "Conservation"): a
     * bug, not bad input; `servesim run` exits 3 on it. */
    SV_CORE_ERROR_INTERNAL,
} sv_core_error_code;

/* SV_CORE_ERROR_INTERNAL "internal error: <what> (a bug in servesim: please report it with the
 * inputs)": a conservation check that failed; returns FALSE. */
gboolean sv_internal_error(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

/* Project assert that stays on in release builds (broken invariant = bug).
 *
 * It is also the one way public functions of every module check their arguments: an argument
 * no correct caller passes (NULL where an object is required, an index out of range, a call out
 * of order) is a bug in the caller, so
 * SV_ASSERT(cond) stops there with file:line. Not g_return_val_if_fail: it logs and returns a
 * value the caller does not expect, and G_DISABLE_CHECKS removes it. Bad input (a file, a config,
 * a trace) is not a precondition: it returns FALSE/NULL with a GError. Check where a wrong
 * argument would corrupt state or crash far away, not every argument of every function. */
#define SV_ASSERT(expr)                                                                            \
    do {                                                                                           \
        if (G_UNLIKELY(!(expr)))                                                                   \
            sv_assert_fail(__FILE__, __LINE__, G_STRFUNC, #expr);                                  \
    } while (0)
G_NORETURN void sv_assert_fail(const char *file, int line, const char *func, const char *expr);

/* ---- output files ----------------------------------------------------------------------- */

/* Is `path` an existing file that is neither a regular file nor a directory (a character device
 * such as /dev/null, a FIFO, a socket; symbolic links followed)? An output is written into such a
 * file directly: the temporary file renamed over the final name, which makes a regular output
 * appear whole or not at all, would replace the device with a regular file. */
gboolean sv_path_is_special_file(const char *path);

/* ---- engine ----------------------------------------------------------------------------- */

typedef struct sv_engine sv_engine;

/* An event callback. `arg` is a free 64-bit payload so hot paths need not allocate a context. */
typedef void (*sv_event_fn)(sv_engine *eng, void *ctx, uint64_t arg);

/* Handle of a scheduled event; 0 is never a valid handle. A handle goes stale once its event has
 * fired or been cancelled; cancel/reschedule on a stale handle return FALSE. */
typedef uint64_t sv_event_id;
#define SV_EVENT_NONE ((sv_event_id)0)

/* Priorities order events at the same time (lower first); the range is SV_PRIO_MIN..SV_PRIO_MAX. */
#define SV_PRIO_DEFAULT 0
#define SV_PRIO_MIN (-16)
#define SV_PRIO_MAX 15

sv_engine *sv_engine_new(uint64_t root_seed);
void sv_engine_free(sv_engine *eng); /* accepts NULL */

sv_time sv_engine_now(const sv_engine *eng);

/* The latest time an event can be scheduled at: 2^58 ns, about 9.1 years of simulated time (the
 * engine packs time and priority into one 64-bit bucket key). Scheduling later is refused, not
 * wrapped: the call returns SV_EVENT_NONE (reschedule: FALSE), the engine stops, sv_engine_run
 * runs nothing more, and sv_engine_error() says what was scheduled when. Whoever runs the engine
 * checks sv_engine_error() after sv_engine_run and reports it as the run's error. Such a time
 * comes from an overflowed duration (a zero rate) or an absurd input, never from a sound model. */
#define SV_ENGINE_HORIZON (INT64_C(1) << 58)

/* Events are ordered by (time, priority, insertion sequence). `at` must be >= now and should be
 * <= SV_ENGINE_HORIZON (see there). */
sv_event_id sv_engine_schedule(sv_engine *eng, sv_time at, int priority, sv_event_fn fn, void *ctx,
                               uint64_t arg);
sv_event_id sv_engine_schedule_in(sv_engine *eng, sv_time delay, int priority, sv_event_fn fn,
                                  void *ctx, uint64_t arg);
gboolean sv_engine_cancel(sv_engine *eng, sv_event_id id);
/* Move a pending event to a new time (>= now). It takes a fresh insertion sequence, as if it
 * had been cancelled and scheduled again, so the id stays valid. */
gboolean sv_engine_reschedule(sv_engine *eng, sv_event_id id, sv_time at);
gboolean sv_engine_pending_event(const sv_engine *eng, sv_event_id id);
sv_time sv_engine_event_time(const sv_engine *eng, sv_event_id id); /* -1 if stale */
/* Where a pending event stands among those of its time: events of one time run in increasing
 * order of this key (priority, then insertion sequence); 0 if stale. To carry a set of pending
 * events over to another engine in the order they would have run. */
uint64_t sv_engine_event_order(const sv_engine *eng, sv_event_id id);

/* A place in the event order reserved without scheduling anything: where an event scheduled now
 * at (time, priority) would go. A model whose event would, when it fires, only clear a flag
 * (a link becoming free with nothing queued) takes a mark instead, asks whether that event would
 * have run by now (sv_core__engine_mark_passed), and schedules the real event at the mark's place
 * only if something comes to depend on it; the order of every other event is unchanged, and
 * the engine does one event less per mark never scheduled. */
typedef struct sv_event_mark {
    sv_time time;
    uint64_t tag; /* priority and insertion sequence (engine.c) */
} sv_event_mark;

/* Take a mark at (at >= now, priority), using up an insertion sequence number as scheduling
 * would. FALSE (nothing reserved) when the place is not after every event run so far (only
 * possible for at == now with a priority above the running event's); schedule a real event then. */
gboolean sv_engine_mark(sv_engine *eng, sv_time at, int priority, sv_event_mark *out);
/* TRUE when an event at the mark's place would have run already (the running event included). */
gboolean sv_core__engine_mark_passed(const sv_engine *eng, const sv_event_mark *mark);
/* Schedule an event at a mark's place, as if it had been scheduled when the mark was taken. The
 * mark must not have passed, and is used up. */
sv_event_id sv_engine_schedule_at_mark(sv_engine *eng, const sv_event_mark *mark, sv_event_fn fn,
                                       void *ctx, uint64_t arg);

/* Run one event. Returns FALSE when no event is pending. */
gboolean sv_engine_step(sv_engine *eng);
/* Run until no event is pending, sv_engine_stop() is called, or the next event is later than
 * `until` (pass SV_TIME_MAX for no limit). Returns the number of events run. */
uint64_t sv_engine_run(sv_engine *eng, sv_time until);
void sv_engine_stop(sv_engine *eng);
size_t sv_engine_pending(const sv_engine *eng);
/* NULL, or why the run was stopped: an event scheduled past SV_ENGINE_HORIZON
 * (SV_CORE_ERROR_HORIZON), the progress watchdog (SV_CORE_ERROR_STALL), or the interrupt flag
 * (SV_CORE_ERROR_INTERRUPTED). Owned by the engine. */
const GError *sv_engine_error(const sv_engine *eng);
/* An interrupt flag (NULL: none), read before every event: once *flag is nonzero the engine runs
 * no further event and sv_engine_error() says SV_CORE_ERROR_INTERRUPTED, as for a refused
 * schedule. The flag is the program's (a signal handler sets it: servesim run stops at the next
 * event on SIGINT, SIGTERM, SIGHUP); the engine only reads it. */
void sv_engine_set_interrupt(sv_engine *eng, const volatile sig_atomic_t *flag);
uint64_t sv_engine_events_run(const sv_engine *eng);
/* Progress watchdog (docs/reliability.md, "Idle time and progress"): once set, sv_engine_run
 * stops with SV_CORE_ERROR_STALL (sv_engine_error) when `max_events` events have run since the
 * last sv_engine_progress (or since this call) and another is due: the model said that such a
 * stretch cannot be anything but a loop. `diagnose` (may be NULL) returns what is stuck, a
 * g_malloc'ed string appended to the message. max_events 0 turns it off (the default). */
typedef char *(*sv_engine_diag_fn)(void *ctx);
void sv_engine_set_watchdog(sv_engine *eng, uint64_t max_events, sv_engine_diag_fn diagnose,
                            void *ctx);
/* Something moved towards the end of the run: the watchdog starts counting again. */
void sv_engine_progress(sv_engine *eng);
/* Events run since the last sv_engine_progress; *mark_ns (may be NULL) gets its simulated time. */
uint64_t sv_engine_events_since_progress(const sv_engine *eng, sv_time *mark_ns);
/* The watchdog's diagnosis of the model's state now (g_free), NULL without a diagnose function:
 * for a display that wants to say what waits before the watchdog trips. */
char *sv_engine_diagnose(const sv_engine *eng);
/* A display tick: `fn` is called every `every` events (0: off, the default), before the event,
 * with the engine to read (sv_engine_now, sv_engine_events_since_progress, sv_engine_diagnose).
 * It must not schedule, cancel or stop anything: it only reports (servesim run's progress line
 * reads the wall clock there, which the model never does). */
typedef void (*sv_engine_tick_fn)(const sv_engine *eng, void *ctx);
void sv_engine_set_tick(sv_engine *eng, uint64_t every, sv_engine_tick_fn fn, void *ctx);

/* ---- RNG streams ------------------------------------------------------------------------ */

/* A named random stream derived from the engine's root seed and a stable name
 * ("router/random"). The same name always yields the same sequence for the same root seed,
 * independent of which other streams exist. Owned by the engine. */
typedef struct sv_rng sv_rng;
sv_rng *sv_rng_stream(sv_engine *eng, const char *name);
/* A standalone stream (owned by the caller, free with sv_rng_free). */
sv_rng *sv_rng_new(uint64_t root_seed, const char *name);
void sv_rng_free(sv_rng *rng);
uint64_t sv_rng_u64(sv_rng *rng);
double sv_rng_uniform(sv_rng *rng);                  /* [0, 1) */
uint64_t sv_rng_below(sv_rng *rng, uint64_t n);      /* uniform in [0, n), unbiased; n > 0 */
double sv_rng_exponential(sv_rng *rng, double rate); /* mean 1/rate */
double sv_rng_normal(sv_rng *rng, double mean, double sd);
double sv_rng_gamma(sv_rng *rng, double shape, double scale);

/* ---- hashing ---------------------------------------------------------------------------- */

/* The one 64-bit hash of the project, in two parts that every user combines the same way:
 * FNV-1a 64 (Fowler/Noll/Vo, IETF draft-eastlake-fnv) to absorb bytes, and SplitMix64's
 * finalizer (Steele, Lea, Flood, OOPSLA 2014) to spread bits (FNV's low bits mix poorly; dense
 * or strided ids need spreading before a table masks them). Their values are part of the
 * outputs (prefix-cache block hashes, RNG stream seeds): never change them. Inline: the id maps
 * of dag/ and proto/ hash on every lookup. */
#define SV_HASH_FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define SV_HASH_FNV_PRIME UINT64_C(0x100000001b3)

/* Absorb the `nbytes` low bytes of `v`, least significant first, into FNV-1a state `h`. */
static inline uint64_t sv_hash_fnv1a(uint64_t h, uint64_t v, int nbytes)
{
    for (int i = 0; i < nbytes; i++) {
        h ^= (v >> (8 * i)) & 0xffu;
        h *= SV_HASH_FNV_PRIME;
    }
    return h;
}

/* FNV-1a 64 of a NUL-terminated string, from SV_HASH_FNV_OFFSET. */
uint64_t sv_hash_str(const char *s);

/* SplitMix64's finalizer: a bijection on 64-bit values. */
static inline uint64_t sv_hash_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* ---- uint64 -> uint64 map ---------------------------------------------------------------- */

/* The one open-addressing map of the project (core/u64map.c): uint64 keys to uint64 values (an
 * index, or a pointer through uintptr_t), linear probing, load factor at most 1/2, removal by
 * backward shift. It does not hash: the slot is the key's low bits, so callers pass spread keys,
 * mixed by a bijection so that distinct ids stay distinct (sv_hash_mix64(id); the engine uses its
 * own cheaper mix). Never iterated: layout cannot leak into outputs. Zero-filled is empty. */
struct sv_u64map_slot {
    uint64_t key; /* 0 = empty (key 0 itself lives in zero_val) */
    uint64_t val;
};
typedef struct sv_u64map {
    struct sv_u64map_slot *slots;
    size_t cap; /* 0 or a power of two */
    size_t len;
    gboolean has_zero;
    uint64_t zero_val;
} sv_u64map;

void sv_u64map_clear(sv_u64map *m); /* free the table; the map is empty and usable again */
/* Make room for n keys without growing again. */
void sv_u64map_reserve(sv_u64map *m, size_t n);
/* The value of `key`, or `missing` when absent. */
static inline uint64_t sv_u64map_get(const sv_u64map *m, uint64_t key, uint64_t missing);
/* Insert, or replace the value of a present key. */
static inline void sv_u64map_put(sv_u64map *m, uint64_t key, uint64_t val);
static inline gboolean sv_u64map_remove(sv_u64map *m, uint64_t key); /* FALSE when absent */

/* Inline, all three: the engine does a lookup, an insertion and a removal per event of a fresh
 * (time, priority) (out of line, the hold benchmark at 10^3 pending ran about 5% slower), and the
 * DAG a lookup per edge. */
static inline uint64_t sv_u64map_get(const sv_u64map *m, uint64_t key, uint64_t missing)
{
    if (G_UNLIKELY(key == 0))
        return m->has_zero ? m->zero_val : missing;
    if (m->cap == 0)
        return missing;
    size_t mask = m->cap - 1;
    for (size_t i = (size_t)key & mask;; i = (i + 1) & mask) {
        if (m->slots[i].key == key)
            return m->slots[i].val;
        if (m->slots[i].key == 0)
            return missing;
    }
}

static inline void sv_u64map_put(sv_u64map *m, uint64_t key, uint64_t val)
{
    if (G_UNLIKELY(key == 0)) {
        m->len += !m->has_zero;
        m->has_zero = TRUE;
        m->zero_val = val;
        return;
    }
    /* Grow first (also when `key` turns out present: harmless), so that one probe finds either
     * the key or the free slot it goes to. */
    if (G_UNLIKELY(2 * (m->len + 1) > m->cap))
        sv_u64map_reserve(m, m->len + 1);
    size_t mask = m->cap - 1;
    size_t i = (size_t)key & mask;
    for (; m->slots[i].key != 0; i = (i + 1) & mask) {
        if (m->slots[i].key == key) {
            m->slots[i].val = val;
            return;
        }
    }
    m->slots[i].key = key;
    m->slots[i].val = val;
    m->len++;
}

static inline gboolean sv_u64map_remove(sv_u64map *m, uint64_t key)
{
    if (G_UNLIKELY(key == 0)) {
        gboolean had = m->has_zero;
        m->len -= (size_t)had;
        m->has_zero = FALSE;
        return had;
    }
    if (m->cap == 0)
        return FALSE;
    size_t mask = m->cap - 1;
    size_t i = (size_t)key & mask;
    for (; m->slots[i].key != key; i = (i + 1) & mask)
        if (m->slots[i].key == 0)
            return FALSE;
    m->len--;
    /* Backward-shift deletion: move a later member of the probe run into the hole unless its home
     * slot lies cyclically in (hole, j], where it must stay to remain reachable. */
    for (size_t j = i;;) {
        m->slots[i].key = 0;
        size_t home;
        do {
            j = (j + 1) & mask;
            if (m->slots[j].key == 0)
                return TRUE;
            home = (size_t)m->slots[j].key & mask;
        } while (i <= j ? (i < home && home <= j) : (i < home || home <= j));
        m->slots[i] = m->slots[j];
        i = j;
    }
}

/* A folder given where a file is read: FALSE with "<path>: is a directory" (SV_CORE_ERROR_IO).
 * Readers call it before opening, so that the error is that, not a parser's or "read error" at
 * line 1 (fopen opens a folder; the first read fails). TRUE for anything else, missing included:
 * the open that follows reports those. */
gboolean sv_path_check_not_dir(const char *path, GError **error);

/* ---- CSV ------------------------------------------------------------------------------- */

/* The one CSV reader (core/csv.c): a header line, then rows, read a line at a time. Empty lines
 * are skipped; a field is the text between commas, stripped of spaces and of one pair of
 * surrounding double quotes (no quoted commas or newlines: none of the files read has them).
 * Errors name PATH:LINE. */
typedef struct sv_csv sv_csv;
/* Open `path` and read its header (the first non-empty line). A file with no non-empty line
 * opens with no columns (sv_csv_n_cols 0): the caller names that error in its own words. */
sv_csv *sv_csv_open(const char *path, GError **error);
void sv_csv_free(sv_csv *c); /* accepts NULL */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sv_csv, sv_csv_free)
uint64_t sv_csv_line(const sv_csv *c);        /* 1-based number of the line last read */
uint64_t sv_csv_header_line(const sv_csv *c); /* 0 when there is no header */
guint sv_csv_n_cols(const sv_csv *c);
const char *sv_csv_col_name(const sv_csv *c, guint i);
int sv_csv_col(const sv_csv *c, const char *name); /* -1 when no column has that name */
/* Read the next non-empty row. FALSE at the end of the file, or on a read error (set). The
 * fields stay valid until the next call; their count may differ from the header's. */
gboolean sv_csv_next(sv_csv *c, GError **error);
guint sv_csv_n_fields(const sv_csv *c);
const char *sv_csv_field(const sv_csv *c, guint i);
/* Split one line in place into at most `max` fields (the same rules); returns how many fields the
 * line has, which may exceed `max`. For readers that get their lines elsewhere (workloads/). */
guint sv_csv_split(char *line, char **fields, guint max);

/* ---- YAML ------------------------------------------------------------------------------ */

/* The one YAML reader (core/yaml.c, libyaml): the first document of a file as a tree of maps,
 * sequences and scalars. Every node has the 1-based line it starts on, so that a reader names
 * PATH:LINE when a value is wrong; an alias is a copy of its anchored node; an empty document is
 * an empty scalar. Load errors (SV_CORE_ERROR_IO, SV_CORE_ERROR_PARSE) name PATH:LINE:COLUMN.
 * Aliases may copy at most SV_YAML_MAX_ALIAS_NODES nodes in all (a file of nested aliases would
 * otherwise expand exponentially: an error "PATH:LINE: alias *NAME: aliases expand to ..."). */
#define SV_YAML_MAX_ALIAS_NODES 100000
typedef enum { SV_YAML_SCALAR, SV_YAML_MAP, SV_YAML_SEQ } sv_yaml_kind;
typedef struct sv_yaml_node sv_yaml_node;
struct sv_yaml_node {
    sv_yaml_kind kind;
    int line;
    char *scalar;     /* SCALAR: its text */
    GPtrArray *keys;  /* MAP: key nodes (scalars), in file order */
    GPtrArray *items; /* MAP: values, parallel to keys; SEQ: items (sv_yaml_node*) */
};
sv_yaml_node *sv_yaml_load(const char *path, GError **error);
void sv_yaml_free(sv_yaml_node *n); /* accepts NULL */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sv_yaml_node, sv_yaml_free)
/* The value of the first member named `key` (NULL if absent, or when n is NULL or no map). */
sv_yaml_node *sv_yaml_get(const sv_yaml_node *n, const char *key);

/* ---- logging ---------------------------------------------------------------------------- */

/* Each library sets G_LOG_DOMAIN to "servesim-<module>" (CMake), so GLib's g_debug/g_info/
 * g_warning are per module; G_MESSAGES_DEBUG=servesim-network (or "all") shows debug lines.
 * sv_log_init installs a handler that prints "servesim[<module>] <level>: msg" to stderr and
 * enables debug output for the listed modules (comma separated, "all" for every one). */
void sv_log_init(const char *debug_modules);

/* ---- numeric ranges (docs/reliability.md "Numeric ranges") ------------------------------ */

/* Every numeric input has a documented range, chosen so that what the simulation derives from it
 * stays representable: times are int64 ns below the engine's horizon (SV_ENGINE_HORIZON), sizes
 * uint64 bytes, counts fit the integer they are stored in. Each reader checks a value where it
 * reads it, with one of the ranges below or one of its own, through sv_range_check_int/_double or
 * the range-aware getters; out of range is one error (SV_CORE_ERROR_INVALID) naming the field:
 * "cluster.json: link_bw: 1e-15 is below the minimum 1e-06 (range [1e-06, 1e+09] GB/s)". */
struct sv_range_int {
    int64_t lo, hi;   /* inclusive */
    const char *unit; /* shown in messages ("ns", "tokens"), or NULL */
};
struct sv_range_double {
    double lo, hi;    /* inclusive, except lo when lo_open */
    gboolean lo_open; /* (lo, hi]: lo itself excluded ("must be positive") */
    const char *unit;
    gboolean zero_ok; /* 0 is accepted too (a key's "not given, use the default") */
};

/* [lo, hi], (lo, hi] and [lo, hi] or 0, with a unit (or NULL). */
#define SV_RANGE_I(lo_, hi_, unit_)                                                                \
    ((struct sv_range_int){.lo = (lo_), .hi = (hi_), .unit = (unit_)})
#define SV_RANGE_D(lo_, hi_, unit_)                                                                \
    ((struct sv_range_double){.lo = (lo_), .hi = (hi_), .unit = (unit_)})
#define SV_RANGE_D_OPEN(lo_, hi_, unit_)                                                           \
    ((struct sv_range_double){.lo = (lo_), .hi = (hi_), .lo_open = TRUE, .unit = (unit_)})
#define SV_RANGE_D_OR_0(lo_, hi_, unit_)                                                           \
    ((struct sv_range_double){.lo = (lo_), .hi = (hi_), .unit = (unit_), .zero_ok = TRUE})

/* The ranges shared by several readers, with why each bound is where it is. */
/* A latency or fixed delay of one step (a link hop, a memory access, an endpoint delay): up to
 * 10^12 ns (1,000 s), so that 2^18 such steps in series stay under the horizon. */
#define SV_RANGE_LATENCY_NS_MAX 1e12
#define SV_RANGE_LATENCY_NS SV_RANGE_D(0, SV_RANGE_LATENCY_NS_MAX, "ns")
/* A bandwidth in GB/s (either unit): from 10^-6 (1 kB/s: a GiB moves in 12.4 days, 2^14 times
 * under the horizon) to 10^9 (1 EB/s: a sum over 2^20 links stays finite and a byte still takes
 * a representable 10^-9 ns). */
#define SV_RANGE_BW_GBPS SV_RANGE_D(1e-6, 1e9, "GB/s")
#define SV_RANGE_BW_GBPS_OR_0 SV_RANGE_D_OR_0(1e-6, 1e9, "GB/s")
/* A capacity in GiB: up to 2^20 (1 PiB per device), so that bytes (GiB x 2^30 = 2^50) summed over
 * 2^13 devices stay in int64. */
#define SV_RANGE_GIB_MAX 1048576.0
#define SV_RANGE_GIB SV_RANGE_D(0, SV_RANGE_GIB_MAX, "GiB")
#define SV_RANGE_GIB_POS SV_RANGE_D_OPEN(0, SV_RANGE_GIB_MAX, "GiB")
/* A byte count of one message, tensor or transfer: up to 2^50 (1 PiB), so that 2^13 of them
 * summed stay in int64. */
#define SV_RANGE_BYTES_MAX (INT64_C(1) << 50)
#define SV_RANGE_BYTES SV_RANGE_I(0, SV_RANGE_BYTES_MAX, "bytes")
/* A fraction in (0, 1]. */
#define SV_RANGE_FRACTION SV_RANGE_D_OPEN(0, 1, NULL)
/* A point in simulated time (an arrival) or a wait that ends at one (a tool call): the engine's
 * horizon, 2^58 ns (about 9.1 years). */
#define SV_RANGE_TIME_NS SV_RANGE_I(0, SV_ENGINE_HORIZON, "ns")
/* Tokens of one request (a prompt, an output) or of one step's budget: up to 2^24 (16.8 M,
 * above every published context length), so that tokens x KV bytes per token x layers (at most
 * 2^23 x 2^10 by the model's ranges) stay in uint64. */
#define SV_RANGE_TOKENS_MAX (INT64_C(1) << 24)
#define SV_RANGE_TOKENS SV_RANGE_I(1, SV_RANGE_TOKENS_MAX, "tokens")
/* Devices of one parallel group (tp, pp, ep, NPUs of an instance): up to 2^16, stored in int32
 * and multiplied together (tp x pp <= 2^32 in int64). */
#define SV_RANGE_DEVICES_MAX 65536
#define SV_RANGE_DEVICES SV_RANGE_I(1, SV_RANGE_DEVICES_MAX, NULL)
/* A power in W (a component's draw): up to 10^7 (10 MW); energy integrates to J in double. */
#define SV_RANGE_POWER_W SV_RANGE_D(0, 1e7, "W")

/* TRUE when v is in r; else FALSE with SV_CORE_ERROR_INVALID "<path>: <v> is ..." (path names
 * the file and the field). The double version also rejects NaN and infinities. */
gboolean sv_range_check_int(const char *path, int64_t v, struct sv_range_int r, GError **error);
gboolean sv_range_check_double(const char *path, double v, struct sv_range_double r,
                               GError **error);

/* Numbers written as text (command-line flags, YAML scalars, CSV fields, INI values, spec
 * strings): decimal only. An integer is [+-]digits within int64; a number is [+-]digits[.digits]
 * or [+-].digits, with an optional exponent, finite. No hexadecimal ("0x1a"), no "inf" or "nan",
 * no leading or trailing spaces (strtod and strtoll take all of those). FALSE on anything else;
 * the caller words the message. */
gboolean sv_num_parse_int(const char *s, int64_t *out);
gboolean sv_num_parse_double(const char *s, double *out);

/* ---- config helpers (json-glib) --------------------------------------------------------- */

/* Parse a JSON file (RFC 8259: sv_cfg_json_check). Errors name the file (and line:column for
 * syntax errors). */
JsonNode *sv_cfg_load_json(const char *path, GError **error);

/* The one rule for numbers in every JSON input (configs, traces, ET JSON views): an integer is an
 * integer literal or a number with a zero fractional part within int64 (`2.0` is 2; `2.5`, a
 * string or a boolean is not an integer); a number is any finite integer or real. These two
 * return FALSE without an error so that each reader words its message with the field's path. */
gboolean sv_cfg_node_int(JsonNode *n, int64_t *out);
gboolean sv_cfg_node_double(JsonNode *n, double *out);

/* Typed getters on a JSON object member (sv_cfg_get_int also takes true/false as 1/0). `where` is
 * the path shown in errors
 * ("system.json: endpoint-delay"). Absent member: *out = dflt and TRUE unless `required`.
 * Wrong type or out-of-range: FALSE with SV_CORE_ERROR_INVALID naming `where`.`key`. */
gboolean sv_cfg_get_int(JsonObject *obj, const char *key, const char *where, gboolean required,
                        int64_t dflt, int64_t *out, GError **error);
gboolean sv_cfg_get_double(JsonObject *obj, const char *key, const char *where, gboolean required,
                           double dflt, double *out, GError **error);
gboolean sv_cfg_get_string(JsonObject *obj, const char *key, const char *where, gboolean required,
                           const char *dflt, const char **out, GError **error);
/* The same with a range (sv_range_check_*): a present value outside it is an error naming
 * `where`.`key`; the default is not checked. */
gboolean sv_cfg_get_int_range(JsonObject *obj, const char *key, const char *where,
                              gboolean required, int64_t dflt, struct sv_range_int r, int64_t *out,
                              GError **error);
gboolean sv_cfg_get_double_range(JsonObject *obj, const char *key, const char *where,
                                 gboolean required, double dflt, struct sv_range_double r,
                                 double *out, GError **error);

/* RFC 8259's grammar, checked on a whole JSON text before json-glib reads it: json-glib's
 * scanner (GScanner) also takes hexadecimal and octal numbers ("0x1a", "$1a", "0777"), '.5',
 * '1.', single-quoted strings, C comments, raw control characters in strings and text after the
 * value, and wraps integers past int64 (99999999999999999999 reads as -1). Rejected here as well:
 * an integer literal outside int64 and a number that overflows a double (1e999), which json-glib
 * would misread. A UTF-8 byte-order mark at the start is ignored (RFC 8259 section 8.1). FALSE
 * with SV_CORE_ERROR_PARSE "LINE:COLUMN: what" (the caller prefixes the file). */
gboolean sv_cfg_json_check(const char *text, size_t len, GError **error);

/* For config writers: the shortest decimal text of a finite double that reads back
 * (g_ascii_strtod, json-glib, yaml-cpp, nlohmann) to the same double, with '.' whatever the
 * locale ("0.1", "1600", "1e+20"). `buf` holds G_ASCII_DTOSTR_BUF_SIZE bytes; returns it. */
char *sv_cfg_format_double(char *buf, double v);

/* ---- policy registry -------------------------------------------------------------------- */

/* Policies (router, batch scheduler, KV eviction, expert routing, PIM placement) are chosen by
 * name. Each module
 * defines the callback table of its kind in its own public header (struct sv_planner_router_ops in
 * planner/planner.h, struct sv_msg_sched_ops and struct sv_msg_expert_route_ops in msg/msg.h,
 * struct sv_memtier_kv_evict_ops in memory-tier/memtier.h); the registry only maps (kind, name) to
 * a table and never looks inside. Built-ins and plugins (planner/planner.h) register the same way.
 * Every table starts with `unsigned api_version`, which must equal SV_REGISTRY_API_VERSION. */
#define SV_REGISTRY_API_VERSION 2u

typedef enum {
    SV_REGISTRY_ROUTER = 0,
    SV_REGISTRY_SCHED,
    SV_REGISTRY_KV_EVICT,
    SV_REGISTRY_EXPERT_ROUTE,
    SV_REGISTRY_PIM_PLACE, /* struct sv_compute_pim_place_ops (compute/compute.h) */
    SV_REGISTRY_N_KINDS,
} sv_registry_kind;

typedef struct sv_registry sv_registry;

sv_registry *sv_registry_new(void);
/* Accepts NULL. Runs the cleanups (sv_registry_add_cleanup) last, in reverse order, after every
 * entry is gone: a plugin's shared object outlives the tables it registered. */
void sv_registry_free(sv_registry *reg);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sv_registry, sv_registry_free)

/* "router", "scheduler", "kv_eviction", "expert_routing", "pim_placement". */
const char *sv_registry_kind_name(sv_registry_kind kind);

/* Register `ops` (borrowed: must outlive the registry; its first member is the table's
 * api_version) under `name` ([A-Za-z0-9_.:-]+, compared case-insensitively). `origin` says where
 * it came from ("built-in", a plugin's path) for messages. Fails on a duplicate name (naming both
 * origins), a bad name, or an api_version other than SV_REGISTRY_API_VERSION. */
gboolean sv_registry_add(sv_registry *reg, sv_registry_kind kind, const char *name, const void *ops,
                         const char *origin, GError **error);
/* The table registered under `name`, or NULL with SV_CORE_ERROR_INVALID listing the registered
 * names of that kind. A name may carry a parameter after a colon ("zipf:1.2"): the lookup uses
 * the part before it; sv_registry_param() returns the rest (NULL when none). */
const void *sv_registry_lookup(const sv_registry *reg, sv_registry_kind kind, const char *name,
                               GError **error);
const char *sv_registry_param(const char *name);
/* Names of one kind in registration order (NULL-terminated; g_strfreev). */
char **sv_registry_names(const sv_registry *reg, sv_registry_kind kind);
/* Origin of a registered name (NULL when unknown). */
const char *sv_registry_origin(const sv_registry *reg, sv_registry_kind kind, const char *name);
/* Run `fn(data)` when the registry is freed (a plugin loader keeps its module handle open). */
void sv_registry_add_cleanup(sv_registry *reg, GDestroyNotify fn, gpointer data);

G_END_DECLS

#endif
