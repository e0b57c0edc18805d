/* A generic least-recently-used order of uint64 keys with a fixed number of slots (prefix pools,
 * expert caches). A doubly linked list threaded through a node array (head = least recent, next
 * evicted; tail = most recent) and an sv_u64map from key to node: lookup, touch, insert, remove
 * and eviction are O(1), and nothing iterates a hash table, so the order is deterministic.
 *
 * "fifo" mode keeps insertion order: a hit does not move the key (LLMServingSim's storage pool
 * drops the least recently written chunk). The block free queue of the KV manager has its own,
 * specialised ring (memtier_internal.h): its keys are block ids with slots in the block records. */
#include "memory-tier/memtier_internal.h"

#define NIL UINT32_MAX

struct node {
    uint64_t key;
    uint32_t prev, next; /* in the order, or next = free list */
};

struct sv_memtier_lru {
    uint32_t slots; /* maximum keys */
    uint32_t len;
    gboolean fifo;
    uint32_t head, tail; /* least / most recent */
    uint32_t free_head;
    struct node *nodes; /* grown on demand up to `slots` */
    uint32_t cap;
    sv_u64map map; /* sv_hash_mix64(key) -> node index */
};

sv_memtier_lru *sv_memtier_lru_new(uint32_t slots, gboolean fifo)
{
    SV_ASSERT(slots > 0);
    sv_memtier_lru *l = g_new0(sv_memtier_lru, 1);
    l->slots = slots;
    l->fifo = fifo;
    l->head = l->tail = l->free_head = NIL;
    return l;
}

void sv_memtier_lru_free(sv_memtier_lru *l)
{
    if (l == NULL)
        return;
    sv_u64map_clear(&l->map);
    g_free(l->nodes);
    g_free(l);
}

uint32_t sv_memtier_lru_len(const sv_memtier_lru *l)
{
    return l->len;
}

uint32_t sv_memtier_lru_slots(const sv_memtier_lru *l)
{
    return l->slots;
}

static uint32_t find(const sv_memtier_lru *l, uint64_t key)
{
    return (uint32_t)sv_u64map_get(&l->map, sv_hash_mix64(key), NIL);
}

gboolean sv_memtier_lru_contains(const sv_memtier_lru *l, uint64_t key)
{
    return find(l, key) != NIL;
}

static void unlink_node(sv_memtier_lru *l, uint32_t i)
{
    struct node *n = &l->nodes[i];
    if (n->prev != NIL)
        l->nodes[n->prev].next = n->next;
    else
        l->head = n->next;
    if (n->next != NIL)
        l->nodes[n->next].prev = n->prev;
    else
        l->tail = n->prev;
}

static void append_node(sv_memtier_lru *l, uint32_t i)
{
    struct node *n = &l->nodes[i];
    n->prev = l->tail;
    n->next = NIL;
    if (l->tail != NIL)
        l->nodes[l->tail].next = i;
    else
        l->head = i;
    l->tail = i;
}

gboolean sv_memtier_lru_touch(sv_memtier_lru *l, uint64_t key)
{
    uint32_t i = find(l, key);
    if (i == NIL)
        return FALSE;
    if (!l->fifo && l->tail != i) {
        unlink_node(l, i);
        append_node(l, i);
    }
    return TRUE;
}

static void drop(sv_memtier_lru *l, uint32_t i)
{
    unlink_node(l, i);
    sv_u64map_remove(&l->map, sv_hash_mix64(l->nodes[i].key));
    l->nodes[i].next = l->free_head;
    l->free_head = i;
    l->len--;
}

gboolean sv_memtier_lru_pop(sv_memtier_lru *l, uint64_t *key)
{
    if (l->head == NIL)
        return FALSE;
    uint32_t i = l->head;
    if (key != NULL)
        *key = l->nodes[i].key;
    drop(l, i);
    return TRUE;
}

gboolean sv_memtier_lru_remove(sv_memtier_lru *l, uint64_t key)
{
    uint32_t i = find(l, key);
    if (i == NIL)
        return FALSE;
    drop(l, i);
    return TRUE;
}

gboolean sv_memtier_lru_insert(sv_memtier_lru *l, uint64_t key, uint64_t *evicted)
{
    SV_ASSERT(find(l, key) == NIL);
    gboolean ev = FALSE;
    if (l->len == l->slots) {
        uint64_t k = 0;
        sv_memtier_lru_pop(l, &k);
        if (evicted != NULL)
            *evicted = k;
        ev = TRUE;
    }
    uint32_t i = l->free_head;
    if (i != NIL) {
        l->free_head = l->nodes[i].next;
    } else {
        if (l->len == l->cap) {
            uint32_t cap = l->cap > 0 ? l->cap * 2 : 16;
            if (cap > l->slots || cap < l->cap)
                cap = l->slots;
            l->nodes = g_renew(struct node, l->nodes, cap);
            l->cap = cap;
        }
        i = l->len; /* no free node: every node below len is in use */
    }
    l->nodes[i].key = key;
    append_node(l, i);
    sv_u64map_put(&l->map, sv_hash_mix64(key), i);
    l->len++;
    return ev;
}

uint32_t sv_memtier_lru_order(const sv_memtier_lru *l, uint64_t *keys, uint32_t max)
{
    uint32_t n = 0;
    for (uint32_t i = l->head; i != NIL && n < max; i = l->nodes[i].next)
        keys[n++] = l->nodes[i].key;
    return n;
}
