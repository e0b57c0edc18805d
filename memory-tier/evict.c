/* Built-in KV eviction policies (struct sv_memtier_kv_evict_ops, kvcache.h).
 *
 * "lru" is vLLM v1's FreeKVCacheBlockQueue (vllm/v1/core/kv_cache_utils.py, v0.19.0; LLMServingSim
 * serving/core/block_pool.py): a doubly linked list over block ids, freed blocks appended at the
 * tail, allocation from the head, and O(1) removal from the middle when a prefix hit pins a free
 * block. Links live in two arrays indexed by block id plus a sentinel at index num_blocks, so no
 * operation allocates. The KV manager recognises this table and runs the same order built in
 * (kvcache.c, "free queue": a ring that lets it prefetch block records); these callbacks are the
 * reference form, and what the policy looks like to a plugin author. */
#include "memory-tier/kvcache.h"

typedef struct {
    uint32_t n;    /* sentinel index = number of blocks */
    int32_t *prev; /* n + 1 entries; -1 when not queued */
    int32_t *next;
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
    s->prev = g_new(int32_t, (gsize)num_blocks + 1);
    s->next = g_new(int32_t, (gsize)num_blocks + 1);
    for (uint32_t i = 0; i < num_blocks; i++)
        s->prev[i] = s->next[i] = -1;
    s->prev[num_blocks] = s->next[num_blocks] = (int32_t)num_blocks;
    return s;
}

static void lru_destroy(void *state)
{
    lru_state *s = state;
    g_free(s->prev);
    g_free(s->next);
    g_free(s);
}

static void lru_push(void *state, uint32_t id)
{
    lru_state *s = state;
    SV_ASSERT(id < s->n && s->prev[id] == -1);
    int32_t last = s->prev[s->n];
    s->prev[id] = last;
    s->next[id] = (int32_t)s->n;
    s->next[last] = (int32_t)id;
    s->prev[s->n] = (int32_t)id;
}

static void lru_remove(void *state, uint32_t id)
{
    lru_state *s = state;
    SV_ASSERT(id < s->n && s->prev[id] != -1);
    s->next[s->prev[id]] = s->next[id];
    s->prev[s->next[id]] = s->prev[id];
    s->prev[id] = s->next[id] = -1;
}

static uint32_t lru_pop(void *state)
{
    lru_state *s = state;
    int32_t head = s->next[s->n];
    SV_ASSERT(head != (int32_t)s->n);
    lru_remove(s, (uint32_t)head);
    return (uint32_t)head;
}

static uint32_t lru_order(void *state, uint32_t *ids, uint32_t max)
{
    lru_state *s = state;
    uint32_t k = 0;
    for (int32_t cur = s->next[s->n]; cur != (int32_t)s->n && k < max; cur = s->next[cur])
        ids[k++] = (uint32_t)cur;
    return k;
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
