/* The one open-addressing uint64 -> uint64 map (core.h): linear probing, load factor at most 1/2,
 * backward-shift deletion (no tombstones), key 0 kept beside the table (0 marks an empty slot). */
#include <string.h>

#include "core/core.h"

void sv_u64map_clear(sv_u64map *m)
{
    g_free(m->slots);
    memset(m, 0, sizeof *m);
}

/* Insert a key known to be absent and nonzero into a table with room. */
static void put_new(sv_u64map *m, uint64_t key, uint64_t val)
{
    size_t mask = m->cap - 1;
    size_t i = (size_t)key & mask;
    while (m->slots[i].key != 0)
        i = (i + 1) & mask;
    m->slots[i].key = key;
    m->slots[i].val = val;
}

void sv_u64map_reserve(sv_u64map *m, size_t n)
{
    if (2 * n <= m->cap)
        return;
    size_t cap = m->cap ? m->cap : 64;
    while (2 * n > cap)
        cap *= 2;
    struct sv_u64map_slot *old = m->slots;
    size_t old_cap = m->cap;
    m->slots = g_new0(struct sv_u64map_slot, cap);
    m->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].key != 0)
            put_new(m, old[i].key, old[i].val);
    g_free(old);
}
