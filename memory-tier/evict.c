/* Built-in KV eviction policies (struct sv_memtier_kv_evict_ops, memtier.h).
 *
 * "lru" is vLLM v1's FreeKVCacheBlockQueue (vllm/v1/core/kv_cache_utils.py, v0.19.0; LLMServingSim
 * serving/core/block_pool.py), kept in the ring of memtier_internal.h, whose functions are here
 * too. The KV manager recognises this table and runs the same ring inline (kvcache.c, "free
 * queue"); these callbacks are the form a plugin author sees, and what the manager calls for a
 * copy of the table under another name. */
#include "memory-tier/memtier_internal.h"

#include <string.h>

/* ---- the lru ring (memtier_internal.h) ---------------------------------------------------- */

void sv_memtier__lru_init(sv_memtier__lru *q, uint32_t num_blocks, uint32_t *pos_base,
                          size_t pos_stride)
{
    uint64_t cap = 2;
    while (cap < 2 * (uint64_t)num_blocks)
        cap *= 2;
    memset(q, 0, sizeof *q);
    /* Slots not yet written read as holes (only sv_memtier__lru_ahead looks past the tail). */
    q->ring = g_new(uint32_t, cap);
    memset(q->ring, 0xff, cap * sizeof(uint32_t));
    q->mask = (uint32_t)(cap - 1);
    q->pos_base = (char *)pos_base;
    q->pos_stride = pos_stride;
}

void sv_memtier__lru_clear(sv_memtier__lru *q)
{
    g_free(q->ring);
    memset(q, 0, sizeof *q);
}

void sv_memtier__lru_compact(sv_memtier__lru *q)
{
    uint32_t *tmp = g_new(uint32_t, q->len ? q->len : 1);
    uint32_t k = sv_memtier__lru_order(q, tmp, q->len);
    SV_ASSERT(k == q->len);
    for (uint32_t i = 0; i < k; i++) {
        q->ring[i] = tmp[i];
        *sv_memtier__lru_pos(q, tmp[i]) = i;
    }
    q->head = 0;
    q->tail = k;
    g_free(tmp);
}

uint32_t sv_memtier__lru_order(const sv_memtier__lru *q, uint32_t *ids, uint32_t max)
{
    uint32_t k = 0;
    for (uint64_t p = q->head; p < q->tail && k < max; p++) {
        uint32_t id = q->ring[p & q->mask];
        if (id != SV_MEMTIER_KV_LRU_HOLE)
            ids[k++] = id;
    }
    return k;
}

/* ---- the "lru" table ---------------------------------------------------------------------- */

#define NOT_QUEUED UINT32_MAX

typedef struct {
    uint32_t n;
    uint32_t *pos; /* ring slot of each queued block, NOT_QUEUED otherwise */
    sv_memtier__lru q;
} lru_state;

static void *lru_create(uint32_t num_blocks, const char *param, GError **error)
{
    if (param && *param) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INVALID,
                    "kv eviction 'lru' takes no parameter (got '%s')", param);
        return NULL;
    }
    lru_state *s = g_new0(lru_state, 1);
    s->n = num_blocks;
    s->pos = g_new(uint32_t, num_blocks ? num_blocks : 1);
    memset(s->pos, 0xff, (gsize)num_blocks * sizeof(uint32_t));
    sv_memtier__lru_init(&s->q, num_blocks, s->pos, sizeof(uint32_t));
    return s;
}

static void lru_destroy(void *state)
{
    lru_state *s = state;
    sv_memtier__lru_clear(&s->q);
    g_free(s->pos);
    g_free(s);
}

static void lru_push(void *state, uint32_t id)
{
    lru_state *s = state;
    SV_ASSERT(id < s->n && s->pos[id] == NOT_QUEUED);
    sv_memtier__lru_push(&s->q, id);
}

static void lru_remove(void *state, uint32_t id)
{
    lru_state *s = state;
    SV_ASSERT(id < s->n && s->pos[id] != NOT_QUEUED);
    sv_memtier__lru_remove(&s->q, id);
    s->pos[id] = NOT_QUEUED;
}

static uint32_t lru_pop(void *state)
{
    lru_state *s = state;
    SV_ASSERT(s->q.len > 0);
    uint32_t id = sv_memtier__lru_pop(&s->q);
    s->pos[id] = NOT_QUEUED;
    return id;
}

static uint32_t lru_order(void *state, uint32_t *ids, uint32_t max)
{
    lru_state *s = state;
    return sv_memtier__lru_order(&s->q, ids, max);
}

static const struct sv_memtier_kv_evict_ops lru_ops = {
    .api_version = SV_REGISTRY_API_VERSION,
    .create = lru_create,
    .destroy = lru_destroy,
    .push = lru_push,
    .remove = lru_remove,
    .pop = lru_pop,
    .order = lru_order,
};

const struct sv_memtier_kv_evict_ops *sv_memtier_kv_evict_lru(void)
{
    return &lru_ops;
}

gboolean sv_memtier_kv_evict_register_builtins(sv_registry *reg, GError **error)
{
    return sv_registry_add(reg, SV_REGISTRY_KV_EVICT, "lru", &lru_ops, "built-in", error);
}
