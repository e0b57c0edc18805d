/* The analytical frontend's point-to-point send/recv matching (astra-sim HEAD 518bd51,
 * network_frontend/analytical/common/CommonNetworkApi.cc, CallbackTracker.cc): used by the
 * collective algorithms for every message and by sv_sys_send / sv_sys_recv. */
#include "system/system_internal.h"

#include <string.h>

guint sv_sys__p2p_key_hash(gconstpointer p)
{
    const struct p2p_key *k = p;
    guint h = (guint)k->tag * 2654435761u;
    h ^= (guint)k->src * 40503u + (guint)k->dst * 9973u;
    h ^= (guint)(k->size ^ (k->size >> 32)) * 2246822519u;
    return h;
}

gboolean sv_sys__p2p_key_equal(gconstpointer a, gconstpointer b)
{
    const struct p2p_key *x = a, *y = b;
    return x->tag == y->tag && x->src == y->src && x->dst == y->dst && x->size == y->size;
}

/* ---- send / recv with the frontend's tracker ------------------------------------------------ */

/* Frees `c` once nothing is pending on it and no stream caches it. */
static void chan_maybe_free(sv_sys *sys, struct p2p_chan *c)
{
    if (c->count != 0 || c->refs != 0)
        return;
    SV_ASSERT(c->sends == c->recvs);
    g_hash_table_remove(sys->chans, &c->key);
    guint pos = c->list_pos;
    SV_ASSERT(g_ptr_array_index(sys->chan_list, pos) == c);
    g_ptr_array_steal_index_fast(sys->chan_list, pos);
    if (pos < sys->chan_list->len) {
        struct p2p_chan *moved = g_ptr_array_index(sys->chan_list, pos);
        moved->list_pos = pos;
    }
    sv_sys__chan_free(c);
}

/* Drops a stream's cached channel reference. */
void sv_sys__chan_release(sv_sys *sys, struct p2p_chan **cache)
{
    struct p2p_chan *c = *cache;
    if (c == NULL)
        return;
    *cache = NULL;
    SV_ASSERT(c->refs > 0);
    c->refs--;
    chan_maybe_free(sys, c);
}

/* The channel of (tag, src, dst, size), created when absent. With a cache the stream keeps a
 * reference to it (dropped when the cache moves on or the stream ends); without one the caller
 * must post an entry on it before returning to the engine, or it leaks until the next use. */
static struct p2p_chan *chan_get(sv_sys *sys, int tag, int src, int dst, uint64_t size,
                                 struct p2p_chan **cache)
{
    struct p2p_key k = {tag, src, dst, size};
    if (cache != NULL && *cache != NULL && sv_sys__p2p_key_equal(&(*cache)->key, &k))
        return *cache;
    struct p2p_chan *c = g_hash_table_lookup(sys->chans, &k);
    if (c == NULL) {
        c = g_new0(struct p2p_chan, 1);
        c->key = k;
        c->cap = (int)G_N_ELEMENTS(c->inline_slot);
        c->slot = c->inline_slot;
        c->list_pos = sys->chan_list->len;
        g_ptr_array_add(sys->chan_list, c);
        g_hash_table_insert(sys->chans, &c->key, c);
    }
    if (cache != NULL) {
        /* take the new reference first: the old channel may be freed by the release */
        c->refs++;
        sv_sys__chan_release(sys, cache);
        *cache = c;
    }
    return c;
}

void sv_sys__chan_free(gpointer p)
{
    struct p2p_chan *c = p;
    for (int i = 0; i < c->count; i++)
        g_free(c->slot[(c->head + i) & (c->cap - 1)]);
    if (c->slot != c->inline_slot)
        g_free(c->slot);
    g_free(c);
}

/* The entry of chunk id `seq`, or NULL when it is not created yet (seq == base + count). */
static struct p2p_entry *entry_find(const struct p2p_chan *c, int seq)
{
    int idx = seq - c->base;
    SV_ASSERT(idx >= 0 && idx <= c->count);
    if (idx == c->count)
        return NULL;
    return c->slot[(c->head + idx) & (c->cap - 1)];
}

static struct p2p_entry *entry_create(sv_sys *sys, struct p2p_chan *c, int seq)
{
    SV_ASSERT(seq == c->base + c->count);
    if (c->count == c->cap) {
        struct p2p_entry **grown = g_new0(struct p2p_entry *, c->cap * 2);
        for (int i = 0; i < c->count; i++)
            grown[i] = c->slot[(c->head + i) & (c->cap - 1)];
        if (c->slot != c->inline_slot)
            g_free(c->slot);
        c->slot = grown;
        c->head = 0;
        c->cap *= 2;
    }
    struct p2p_entry *e = sys->entry_free;
    if (e != NULL) {
        sys->entry_free = e->next_free;
        if (e->next_free != NULL) /* as for batches (sv_sys__register_event): a hint only */
            __builtin_prefetch(e->next_free);
    } else
        e = g_new(struct p2p_entry, 1);
    memset(e, 0, sizeof *e);
    e->sys = sys;
    e->chan = c;
    e->seq = seq;
    e->order = sys->order++;
    e->posted_at = sv_engine_now(sys->eng);
    c->slot[(c->head + c->count) & (c->cap - 1)] = e;
    c->count++;
    return e;
}

static void entry_remove(sv_sys *sys, struct p2p_entry *e)
{
    struct p2p_chan *c = e->chan;
    int mask = c->cap - 1;
    c->slot[(c->head + (e->seq - c->base)) & mask] = NULL;
    while (c->count > 0 && c->slot[c->head] == NULL) {
        c->head = (c->head + 1) & mask;
        c->base++;
        c->count--;
    }
    e->next_free = sys->entry_free;
    sys->entry_free = e;
    chan_maybe_free(sys, c);
}

static void on_arrival(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)arg;
    struct p2p_entry *e = ctx;
    /* CommonNetworkApi::process_chunk_arrival: the sender is told at arrival; the receiver too
     * if its recv is posted, otherwise the transfer is marked finished for a later recv. The
     * entry stays in place meanwhile: only this arrival or a recv after it removes it. */
    if (e->has_recv) {
        if (e->send_fn != NULL)
            e->send_fn(eng, e->send_ctx, e->send_arg);
        if (e->recv_fn != NULL)
            e->recv_fn(eng, e->recv_ctx, e->recv_arg);
        entry_remove(e->sys, e);
    } else {
        if (e->send_fn != NULL)
            e->send_fn(eng, e->send_ctx, e->send_arg);
        e->finished = TRUE;
    }
}

void sv_sys__net_send(sv_sys *sys, int src, int dst, int tag, uint64_t bytes,
                      const struct sv_net_msg_label *label, sv_event_fn fn, void *ctx, uint64_t arg,
                      struct p2p_chan **cache)
{
    static const struct sv_net_msg_label p2p_label = {SV_NET_MSG_SEND, "send"};
    struct p2p_chan *c = chan_get(sys, tag, src, dst, bytes, cache);
    int seq = c->sends++;
    struct p2p_entry *e = entry_find(c, seq);
    if (e == NULL)
        e = entry_create(sys, c, seq);
    e->has_send = TRUE;
    e->send_fn = fn;
    e->send_ctx = ctx;
    e->send_arg = arg;
    sv_net_send_labeled(sys->net, src, dst, bytes, label != NULL ? label : &p2p_label, on_arrival,
                        e, 0);
}

void sv_sys__net_recv(sv_sys *sys, int self, int src, int tag, uint64_t bytes, sv_event_fn fn,
                      void *ctx, uint64_t arg, struct p2p_chan **cache)
{
    struct p2p_chan *c = chan_get(sys, tag, src, self, bytes, cache);
    int seq = c->recvs++;
    struct p2p_entry *e = entry_find(c, seq);
    if (e != NULL && e->finished) {
        /* CommonNetworkApi::sim_recv: transfer over, run the callback after 0 ns. */
        entry_remove(sys, e);
        if (fn != NULL)
            sv_engine_schedule(sys->eng, sv_engine_now(sys->eng), SV_PRIO_DEFAULT, fn, ctx, arg);
        return;
    }
    if (e == NULL)
        e = entry_create(sys, c, seq);
    e->has_recv = TRUE;
    e->recv_fn = fn;
    e->recv_ctx = ctx;
    e->recv_arg = arg;
}

/* ---- point-to-point ------------------------------------------------------------------------- */

/* The one rule for a send's and a recv's arguments, `a` and `b` the two NPUs. */
static gboolean p2p_args_ok(const sv_sys *sys, int a, int b, int tag, uint64_t bytes)
{
    return a >= 0 && a < sys->npus && b >= 0 && b < sys->npus && a != b && tag >= 0 && bytes > 0;
}
#define P2P_ARGS_RULE "NPUs must differ and be in [0, %d), tag >= 0, size > 0"

gboolean sv_sys_send(sv_sys *sys, int src, int dst, int tag, uint64_t bytes, sv_sys_done_fn done,
                     void *ctx, uint64_t arg, GError **error)
{
    if (!p2p_args_ok(sys, src, dst, tag, bytes)) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "bad send %d -> %d (tag %d, %" G_GUINT64_FORMAT " bytes): " P2P_ARGS_RULE, src,
                    dst, tag, bytes, sys->npus);
        return FALSE;
    }
    sv_sys__net_send(sys, src, dst, tag, bytes, NULL, done, ctx, arg, NULL);
    return TRUE;
}

gboolean sv_sys_recv(sv_sys *sys, int self, int src, int tag, uint64_t bytes, sv_sys_done_fn done,
                     void *ctx, uint64_t arg, GError **error)
{
    if (!p2p_args_ok(sys, self, src, tag, bytes)) {
        g_set_error(error, SV_NET_ERROR, SV_NET_ERROR_CONFIG,
                    "bad recv on %d from %d (tag %d, %" G_GUINT64_FORMAT " bytes): " P2P_ARGS_RULE,
                    self, src, tag, bytes, sys->npus);
        return FALSE;
    }
    sv_sys__net_recv(sys, self, src, tag, bytes, done, ctx, arg, NULL);
    return TRUE;
}

static gint pending_cmp(gconstpointer a, gconstpointer b)
{
    const struct p2p_entry *x = *(struct p2p_entry *const *)a;
    const struct p2p_entry *y = *(struct p2p_entry *const *)b;
    return x->order < y->order ? -1 : x->order > y->order ? 1 : 0;
}

GArray *sv_sys_p2p_pending(const sv_sys *sys)
{
    GArray *out = g_array_new(FALSE, TRUE, sizeof(struct sv_sys_p2p_pending));
    g_autoptr(GPtrArray) all = g_ptr_array_new();
    for (guint i = 0; i < sys->chan_list->len; i++) {
        const struct p2p_chan *c = g_ptr_array_index(sys->chan_list, i);
        for (int k = 0; k < c->count; k++) {
            struct p2p_entry *e = c->slot[(c->head + k) & (c->cap - 1)];
            if (e != NULL)
                g_ptr_array_add(all, e);
        }
    }
    g_ptr_array_sort(all, pending_cmp); /* report in posting order */
    for (guint i = 0; i < all->len; i++) {
        const struct p2p_entry *e = g_ptr_array_index(all, i);
        struct sv_sys_p2p_pending p = {
            .is_send = e->has_send,
            .arrived = e->finished,
            .src = e->chan->key.src,
            .dst = e->chan->key.dst,
            .tag = e->chan->key.tag,
            .bytes = e->chan->key.size,
            .posted_at = e->posted_at,
        };
        g_array_append_val(out, p);
    }
    return out;
}

guint sv_sys_live_channels(const sv_sys *sys)
{
    return sys->chan_list->len;
}

uint64_t sv_sys_coll_active(const sv_sys *sys)
{
    uint64_t n = 0;
    for (int i = 0; i < sys->npus; i++)
        n += sys->npu[i].active_collectives;
    return n;
}

/* ---- moving a shadow's transfers in (virtual.c) --------------------------------------------- */

static gint entry_order_cmp(gconstpointer a, gconstpointer b)
{
    const struct p2p_entry *x = *(struct p2p_entry *const *)a;
    const struct p2p_entry *y = *(struct p2p_entry *const *)b;
    return x->order < y->order ? -1 : x->order > y->order ? 1 : 0;
}

/* Entries of a channel are created in chunk-id order and complete in that order on each side,
 * so a shadow channel's unfinished entries are a run of consecutive ids whose sends, and whose
 * recvs, were posted in order: posting them here in the shadow's posting order gives them
 * consecutive ids on both sides of a channel that has no unfinished entry (sends == recvs),
 * and the k-th send still meets the k-th recv. */
void sv_sys__p2p_adopt(sv_sys *sys, const sv_sys *shadow, sv_time shift, GHashTable *stream_map,
                       GHashTable *entry_map)
{
    g_autoptr(GPtrArray) all = g_ptr_array_new();
    for (guint i = 0; i < shadow->chan_list->len; i++) {
        const struct p2p_chan *c = g_ptr_array_index(shadow->chan_list, i);
        for (int k = 0; k < c->count; k++) {
            struct p2p_entry *e = c->slot[(c->head + k) & (c->cap - 1)];
            if (e != NULL)
                g_ptr_array_add(all, e);
        }
    }
    g_ptr_array_sort(all, entry_order_cmp);
    for (guint i = 0; i < all->len; i++) {
        const struct p2p_entry *o = g_ptr_array_index(all, i);
        const struct p2p_key *k = &o->chan->key;
        struct p2p_chan *c = chan_get(sys, k->tag, k->src, k->dst, k->size, NULL);
        int seq = -1;
        if (o->has_send)
            seq = c->sends++;
        if (o->has_recv) {
            int r = c->recvs++;
            SV_ASSERT(seq < 0 || seq == r);
            seq = r;
        }
        struct p2p_entry *e = entry_find(c, seq);
        if (e == NULL)
            e = entry_create(sys, c, seq);
        e->has_send = o->has_send;
        e->has_recv = o->has_recv;
        e->finished = o->finished;
        e->send_fn = o->send_fn;
        e->send_ctx = o->send_ctx != NULL ? g_hash_table_lookup(stream_map, o->send_ctx) : NULL;
        e->send_arg = o->send_arg;
        e->recv_fn = o->recv_fn;
        e->recv_ctx = o->recv_ctx != NULL ? g_hash_table_lookup(stream_map, o->recv_ctx) : NULL;
        e->recv_arg = o->recv_arg;
        e->posted_at = o->posted_at + shift;
        SV_ASSERT((o->send_ctx == NULL) == (e->send_ctx == NULL) &&
                  (o->recv_ctx == NULL) == (e->recv_ctx == NULL));
        g_hash_table_insert(entry_map, (gpointer)o, e);
    }
}
