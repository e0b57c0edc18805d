/* DoubleBinaryTreeAllReduce over BinaryTree topologies (DoubleBinaryTreeAllReduce.cc,
 * astra-sim HEAD 518bd51). */
#include "system/system_internal.h"

#include <math.h>
#include <string.h>

/* ---- DoubleBinaryTreeAllReduce (DoubleBinaryTreeAllReduce.cc) ------------------------------ */

static void dbt_received(sv_engine *eng, void *ctx, uint64_t arg)
{
    (void)eng;
    (void)arg;
    sv_sys__dbt_run(ctx, DBT_EV_RECEIVED);
}

static void dbt_send(coll_stream *s, int dst)
{
    sv_sys__net_send(s->owner->sys, s->owner->id, dst, s->stream_id, s->cur.initial_size,
                     sv_sys__coll_label(s->cur.comm_type), NULL, NULL, 0, &s->send_chan);
}

static void dbt_recv(coll_stream *s, int src)
{
    sv_sys__net_recv(s->owner->sys, s->owner->id, src, s->stream_id, s->cur.initial_size,
                     dbt_received, s, 0, &s->recv_chan);
}

/* The state machine of upstream's run(), branch for branch (leaf.1-5, int.1-6, root.1-2).
 * Every message carries the whole phase size; each reduction costs the MemBus delay plus
 * 3 memory accesses of that size. */
void sv_sys__dbt_run(coll_stream *s, enum dbt_event ev)
{
    struct dbt_state *t = &s->dbt;
    const struct coll_phase *ph = &s->cur;
    uint64_t size = ph->initial_size;
    if (ev == DBT_EV_INIT) {
        memset(t, 0, sizeof *t);
        t->state = DBT_BEGIN;
        if (ph->dbt_parent < 0)
            t->type = DBT_ROOT;
        else if (ph->dbt_left < 0 && ph->dbt_right < 0)
            t->type = DBT_LEAF;
        else
            t->type = DBT_INTERMEDIATE;
    }
    switch (t->type) {
    case DBT_LEAF:
        if (t->state == DBT_BEGIN) { /* leaf.1 */
            sv_sys__bundle_release(s, FALSE, size);
            t->state = DBT_SENDING_TO_PARENT;
        } else if (t->state == DBT_SENDING_TO_PARENT) { /* leaf.3 */
            dbt_send(s, ph->dbt_parent);
            t->state = DBT_WAITING_FROM_PARENT; /* set before the recv, which may complete */
            dbt_recv(s, ph->dbt_parent);
        } else if (t->state == DBT_WAITING_FROM_PARENT) { /* leaf.4 */
            sv_sys__bundle_release(s, FALSE, size);
            t->state = DBT_END;
        } else if (t->state == DBT_END) { /* leaf.5 */
            sv_sys__proceed_to_next_vnet(s->owner, s);
        }
        return;
    case DBT_INTERMEDIATE:
        if (t->state == DBT_BEGIN) { /* int.1 */
            t->state = DBT_WAITING_TWO_CHILDREN;
            dbt_recv(s, ph->dbt_left);
            dbt_recv(s, ph->dbt_right);
        } else if (t->state == DBT_WAITING_TWO_CHILDREN && ev == DBT_EV_RECEIVED) { /* int.2 */
            sv_sys__bundle_release(s, TRUE, size);
            t->state = DBT_WAITING_ONE_CHILD;
        } else if (t->state == DBT_WAITING_ONE_CHILD && ev == DBT_EV_RECEIVED) { /* int.3 */
            sv_sys__bundle_release(s, TRUE, size);
            t->state = DBT_SENDING_TO_PARENT;
        } else if (t->reductions < 1 && ev == DBT_EV_GENERAL) { /* int.4 */
            t->reductions++;
        } else if (t->state == DBT_SENDING_TO_PARENT) { /* int.5 */
            t->state = DBT_WAITING_FROM_PARENT;
            dbt_send(s, ph->dbt_parent);
            dbt_recv(s, ph->dbt_parent);
        } else if (t->state == DBT_WAITING_FROM_PARENT && ev == DBT_EV_RECEIVED) { /* int.6 */
            sv_sys__bundle_release(s, TRUE, size);
            t->state = DBT_SENDING_TO_CHILDREN;
        } else if (t->state == DBT_SENDING_TO_CHILDREN) {
            dbt_send(s, ph->dbt_left);
            dbt_send(s, ph->dbt_right);
            sv_sys__proceed_to_next_vnet(s->owner, s);
        }
        return;
    case DBT_ROOT: {
        int child = ph->dbt_left >= 0 ? ph->dbt_left : ph->dbt_right;
        if (t->state == DBT_BEGIN) { /* root.1 */
            t->state = DBT_WAITING_ONE_CHILD;
            dbt_recv(s, child);
        } else if (t->state == DBT_WAITING_ONE_CHILD) { /* root.2 */
            sv_sys__bundle_release(s, TRUE, size);
            t->state = DBT_SENDING_TO_CHILDREN;
        } else if (t->state == DBT_SENDING_TO_CHILDREN) {
            dbt_send(s, child);
            sv_sys__proceed_to_next_vnet(s->owner, s);
        }
        return;
    }
    }
}

/* BinaryTree: a dummy root over a complete tree of floor(log2 n) levels, ids given in order
 * (in-order walk); RootMax puts the root last, RootMin first. Fills parent / left / right by
 * ring index (n must be a power of two: checked by sv_sys_new). */
static int dbt_build_sub(int levels, int *next, int *par, int *lc, int *rc)
{
    int l = -1, r = -1;
    if (levels > 1)
        l = dbt_build_sub(levels - 1, next, par, lc, rc);
    int me = (*next)++;
    if (levels > 1)
        r = dbt_build_sub(levels - 1, next, par, lc, rc);
    lc[me] = l;
    rc[me] = r;
    if (l >= 0)
        par[l] = me;
    if (r >= 0)
        par[r] = me;
    return me;
}

void sv_sys__dbt_tree(int n, gboolean root_min, int index, int *parent, int *left, int *right)
{
    g_autofree int *par = g_new(int, n);
    g_autofree int *lc = g_new(int, n);
    g_autofree int *rc = g_new(int, n);
    int levels = sv_sys__hd_log2(n);
    int next = 0;
    int root, sub;
    if (root_min) {
        root = next++;
        sub = dbt_build_sub(levels, &next, par, lc, rc);
        lc[root] = -1;
        rc[root] = sub;
    } else {
        sub = dbt_build_sub(levels, &next, par, lc, rc);
        root = next++;
        lc[root] = sub;
        rc[root] = -1;
    }
    SV_ASSERT(next == n);
    par[root] = -1;
    par[sub] = root;
    *parent = par[index];
    *left = lc[index];
    *right = rc[index];
}
