/* Which instances may fold their iterations (sv_msg_cfg.tp_fold; docs/parallelism.md "Folded
 * iterations"): those whose TP ring has its links to itself for the whole run.
 *
 * A folded iteration books each TP all-reduce in closed form (sv_sys_coll_alone_ns), which is
 * the message-level time only while no other message shares the ring's links. Every transfer a
 * run can make is known before it starts, by the pairs of NPUs it can join, so the check is
 * done once, on routes: an instance folds when no link of its ring (both directions, every
 * stage) lies on the route of
 *   - another instance's TP ring (a ring topology can route two rings over one link),
 *   - an EP exchange (any pair of NPUs of the instance's DP group, when ep_size > 1),
 *   - a pipeline hand-off (rank r of stage s to rank r of stage s + 1),
 *   - a PD KV transfer (prefill rank -> decode rank pairs that share KV heads, for every prefill
 *     and decode instance, every stage: sv_planner_pd_pair_bytes),
 * which is a superset of the pairs that ever carry bytes (a pair may send nothing in a run). The
 * memory tiers' network legs and the power model's per-message link energy are not listed: the
 * run does not fold when it has either (planner/run.c). Under the analytical and ideal models no
 * message slows another, so every TP ring may fold there. */
#include "planner/planner.h"

/* Mark the links of the route src -> dst with `owner` (>= 0: that instance's TP ring; -1 for
 * other traffic): a link seen by two owners, or by other traffic, becomes shared (-1). */
static void mark_route(sv_net *net, GHashTable *owner, int src, int dst, int who, int *buf)
{
    if (src == dst)
        return;
    int n = sv_net_route_links(net, src, dst, buf, NULL);
    for (int k = 0; k < n; k++) {
        gpointer key = GINT_TO_POINTER(buf[k] + 1), val;
        if (!g_hash_table_lookup_extended(owner, key, NULL, &val))
            g_hash_table_insert(owner, key, GINT_TO_POINTER(who));
        else if (GPOINTER_TO_INT(val) != who)
            g_hash_table_insert(owner, key, GINT_TO_POINTER(-1));
    }
}

/* The ring of each TP group of instance i, both directions (who = i), or as other traffic. */
static void mark_tp(sv_net *net, GHashTable *owner, const struct sv_planner_instance_cfg *ic,
                    int32_t first, int who, int *buf)
{
    int32_t tp = ic->tp_size;
    for (int32_t s = 0; tp > 1 && s < ic->pp_size; s++) {
        for (int32_t r = 0; r < tp; r++) {
            int a = first + s * tp + r, b = first + s * tp + (r + 1) % tp;
            mark_route(net, owner, a, b, who, buf);
            mark_route(net, owner, b, a, who, buf);
        }
    }
}

static gboolean ring_owned(sv_net *net, GHashTable *owner, const struct sv_planner_instance_cfg *ic,
                           int32_t first, int who, int *buf)
{
    int32_t tp = ic->tp_size;
    for (int32_t s = 0; s < ic->pp_size; s++) {
        for (int32_t r = 0; r < tp; r++) {
            for (int dir = 0; dir < 2; dir++) {
                int a = first + s * tp + r, b = first + s * tp + (r + 1) % tp;
                int n = dir == 0 ? sv_net_route_links(net, a, b, buf, NULL)
                                 : sv_net_route_links(net, b, a, buf, NULL);
                for (int k = 0; k < n; k++)
                    if (GPOINTER_TO_INT(g_hash_table_lookup(owner, GINT_TO_POINTER(buf[k] + 1))) !=
                        who)
                        return FALSE;
            }
        }
    }
    return TRUE;
}

gboolean *sv_planner_tp_fold_plan(const struct sv_planner_cluster_cfg *c,
                                  const sv_planner_cluster_net *cn)
{
    int32_t ni = c->n_instances;
    gboolean *fold = g_new0(gboolean, (size_t)MAX(ni, 1));
    sv_net *net = cn ? sv_planner_cluster_net_net(cn) : NULL;
    if (!net)
        return fold;
    sv_net_model model = sv_net_get_model(net);
    if (model == SV_NET_MODEL_ANALYTICAL || model == SV_NET_MODEL_IDEAL) {
        for (int32_t i = 0; i < ni; i++)
            fold[i] = c->instances[i].tp_size > 1;
        return fold;
    }
    g_autofree int *buf = g_new(int, (size_t)sv_net_route_max_links(net));
    GHashTable *owner = g_hash_table_new(g_direct_hash, g_direct_equal);
    for (int32_t i = 0; i < ni; i++)
        mark_tp(net, owner, &c->instances[i], sv_planner_cluster_net_first_device(cn, i), i, buf);
    for (int32_t i = 0; i < ni; i++) {
        const struct sv_planner_instance_cfg *ic = &c->instances[i];
        int32_t first = sv_planner_cluster_net_first_device(cn, i);
        /* Pipeline hand-offs. */
        for (int32_t s = 0; s + 1 < ic->pp_size; s++)
            for (int32_t r = 0; r < ic->tp_size; r++)
                mark_route(net, owner, first + s * ic->tp_size + r,
                           first + (s + 1) * ic->tp_size + r, -1, buf);
        /* EP exchanges: any two NPUs of the DP group (or of the instance). */
        if (ic->ep_size > 1) {
            int32_t d = sv_planner_cluster_net_dp_index(cn, i, NULL);
            for (int32_t j = 0; j < ni; j++) {
                if (j != i && (d < 0 || sv_planner_cluster_net_dp_index(cn, j, NULL) != d))
                    continue;
                int32_t fj = sv_planner_cluster_net_first_device(cn, j);
                for (int32_t a = 0; a < ic->num_npus; a++)
                    for (int32_t b = 0; b < c->instances[j].num_npus; b++)
                        mark_route(net, owner, first + a, fj + b, -1, buf);
            }
        }
        /* KV hand-offs from this prefill instance to every decode instance: the rank pairs that
         * share KV heads (pd.c's rule; one layer each so that every stage pair counts). */
        if (ic->role != SV_MSG_ROLE_PREFILL)
            continue;
        struct sv_planner_pd_instance p = {.tp = ic->tp_size, .pp = 1, .num_layers = 1};
        for (int32_t j = 0; j < ni; j++) {
            const struct sv_planner_instance_cfg *jc = &c->instances[j];
            if (jc->role != SV_MSG_ROLE_DECODE)
                continue;
            struct sv_planner_pd_instance d = {.tp = jc->tp_size, .pp = 1, .num_layers = 1};
            p.kv_bytes_per_token_layer = (uint64_t)p.tp * (uint64_t)d.tp;
            int32_t fj = sv_planner_cluster_net_first_device(cn, j);
            for (int32_t rp = 0; rp < p.tp; rp++)
                for (int32_t rd = 0; rd < d.tp; rd++) {
                    if (sv_planner_pd_pair_bytes(&p, rp, &d, rd, 1) == 0)
                        continue;
                    for (int32_t sp = 0; sp < ic->pp_size; sp++)
                        for (int32_t sd = 0; sd < jc->pp_size; sd++)
                            mark_route(net, owner, first + sp * p.tp + rp, fj + sd * d.tp + rd, -1,
                                       buf);
                }
        }
    }
    for (int32_t i = 0; i < ni; i++)
        fold[i] = c->instances[i].tp_size > 1 &&
                  ring_owned(net, owner, &c->instances[i],
                             sv_planner_cluster_net_first_device(cn, i), i, buf);
    g_hash_table_destroy(owner);
    return fold;
}
