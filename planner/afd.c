/* Attention/FFN disaggregation of a serving instance (issue 15 item 4; docs/afd.md "In servesim
 * run"): instances[].afd read and checked, the FFN devices placed after the instance's own on its
 * node, the memory split between the groups, and the FFN side's latency model.
 *
 * Memory (MegaScale-Infer, arXiv 2504.02263: the attention modules and their KV cache on attention
 * GPUs, the FFN / expert modules on separate GPUs): an attention device holds one TP
 * rank's weights minus its MLP or MoE part (sv_compute_model_mlp_weight_bytes), so its KV pool is
 * LLMServingSim's formula (memory_model.py: trunc(mem_size x mem_util) - weights) with those
 * weights; an FFN device holds the MLP part at TP ffn_npus, which must fit its catalog memory x the
 * instance's mem_util. */
#include "planner/planner_internal.h"

#include <string.h>

int32_t sv_planner_instance_devices(const struct sv_planner_instance_cfg *ic)
{
    return ic->num_npus +
           (ic->afd.micro_batches > 0 && ic->afd_group_rank == 0 ? ic->afd.ffn_npus : 0);
}

/* A member's afd keys against its group's first member's: one FFN group has one shape. */
static gboolean afd_group_agree(const struct sv_planner_instance_cfg *ic,
                                const struct sv_planner_instance_cfg *own, GError **error)
{
    const struct sv_msg_afd_cfg *x = &ic->afd, *o = &own->afd;
    const char *key = NULL;
    g_autofree char *mine = NULL, *theirs = NULL;
    if (strcmp(x->ffn_hardware, o->ffn_hardware)) {
        key = "ffn_hardware";
        mine = g_strdup(x->ffn_hardware);
        theirs = g_strdup(o->ffn_hardware);
    } else if (x->ffn_npus != o->ffn_npus) {
        key = "ffn_npus";
        mine = g_strdup_printf("%d", x->ffn_npus);
        theirs = g_strdup_printf("%d", o->ffn_npus);
    } else if (x->micro_batches != o->micro_batches) {
        key = "micro_batches";
        mine = g_strdup_printf("%d", x->micro_batches);
        theirs = g_strdup_printf("%d", o->micro_batches);
    } else if (x->ffn_ep != o->ffn_ep) {
        key = "ffn_ep";
        static const char *const v[] = {"absent", "false", "true"};
        mine = g_strdup(v[x->ffn_ep + 1]);
        theirs = g_strdup(v[o->ffn_ep + 1]);
    } else if (strcmp(ic->model_name, own->model_name)) {
        g_autofree char *p = g_strdup_printf("%s.ffn_group", ic->afd_where);
        return sv_planner__path_error(error, p,
                                      "model %s differs from %s of the group's first member (%s): "
                                      "one FFN group serves one model",
                                      ic->model_name, own->model_name, own->afd_where);
    }
    if (!key)
        return TRUE;
    g_autofree char *p = g_strdup_printf("%s.%s", ic->afd_where, key);
    return sv_planner__path_error(error, p,
                                  "%s differs from %s of ffn_group \"%s\"'s first member (%s): "
                                  "the members of a shared FFN group must agree on ffn_hardware, "
                                  "ffn_npus, micro_batches and ffn_ep",
                                  mine, theirs, x->ffn_group, own->afd_where);
}

gboolean sv_planner__afd_groups(struct sv_planner_cluster_cfg *c, GError **error)
{
    for (int32_t i = 0; i < c->n_instances; i++) {
        struct sv_planner_instance_cfg *ic = &c->instances[i];
        ic->afd_group_size = ic->afd_group_rank = 0;
        ic->afd_group_owner = -1;
        if (ic->afd.micro_batches <= 0 || !ic->afd.ffn_group[0])
            continue;
        int32_t own = i, rank = 0, size = 0;
        for (int32_t j = 0; j < c->n_instances; j++) {
            const struct sv_planner_instance_cfg *jc = &c->instances[j];
            if (jc->afd.micro_batches <= 0 || strcmp(jc->afd.ffn_group, ic->afd.ffn_group))
                continue;
            if (size == 0)
                own = j;
            if (j < i)
                rank++;
            size++;
        }
        if (size < 2) {
            g_autoptr(GString) known = g_string_new(NULL);
            for (int32_t j = 0; j < c->n_instances; j++) {
                const char *gj = c->instances[j].afd.ffn_group;
                gboolean seen = j == i || !gj[0] || c->instances[j].afd.micro_batches <= 0;
                for (int32_t q = 0; q < j && !seen; q++)
                    seen = !strcmp(c->instances[q].afd.ffn_group, gj);
                if (!seen)
                    g_string_append_printf(known, "%s\"%s\"", known->len ? ", " : "", gj);
            }
            g_autofree char *p = g_strdup_printf("%s.ffn_group", ic->afd_where);
            return sv_planner__path_error(
                error, p,
                "\"%s\" names no other instance: a shared FFN group needs at least two attention "
                "instances (other groups: %s; remove ffn_group for an instance's own FFN group)",
                ic->afd.ffn_group, known->len ? known->str : "none");
        }
        if (!afd_group_agree(ic, &c->instances[own], error))
            return FALSE;
        ic->afd_group_size = size;
        ic->afd_group_rank = rank;
        ic->afd_group_owner = own;
    }
    return TRUE;
}

gboolean sv_planner__afd_parse(JsonObject *o, const char *where, struct sv_planner_instance_cfg *ic,
                               GError **error)
{
    memset(&ic->afd, 0, sizeof ic->afd);
    g_snprintf(ic->afd_where, sizeof ic->afd_where, "%s.afd", where);
    JsonNode *n = json_object_get_member(o, "afd");
    if (!n || JSON_NODE_HOLDS_NULL(n))
        return TRUE;
    const char *path = ic->afd_where;
    if (!JSON_NODE_HOLDS_OBJECT(n))
        return sv_planner__path_error(
            error, path, "must be an object ({\"ffn_hardware\": ..., \"micro_batches\": ...})");
    GError *e = NULL;
    /* Keys, ranges, the hardware name (built-in catalog) and pp_size 1 (msg/afd.c). */
    if (!sv_msg_afd_parse(json_node_get_object(n), path, NULL, ic->pp_size, &ic->afd, &e)) {
        g_set_error_literal(error, SV_PLANNER_ERROR, SV_PLANNER_ERROR_INVALID, e->message);
        g_error_free(e);
        memset(&ic->afd, 0, sizeof ic->afd);
        return FALSE;
    }
    /* What the ping-pong iteration does not combine with (docs/afd.md "Left out"). */
    const char *why = NULL;
    if (ic->num_npus != ic->tp_size)
        why = "needs num_npus = tp_size (the attention devices are the instance's TP ranks)";
    else if (ic->ep_size > 1)
        why = "with ep_size > 1 is not supported (the FFN group is one TP group)";
    else if (ic->dp_group[0])
        why = "with a dp_group is not supported";
    else if (ic->n_stages > 0)
        why = "with stages is not supported (pp_size 1 only)";
    else if (ic->enable_attn_offloading == 1 || ic->enable_local_offloading == 1)
        why = "with PIM attention offload or local weight loads is not supported";
    else if (ic->placement.n_rules > 0 || ic->expert_offload)
        why = "with placement or expert_offload (memory tiers) is not supported";
    else if (json_object_has_member(o, "speculative"))
        why = "with speculative decoding is not supported";
    if (why) {
        memset(&ic->afd, 0, sizeof ic->afd);
        return sv_planner__path_error(error, path, "%s", why);
    }
    return TRUE;
}

gboolean sv_planner__afd_any(const struct sv_planner_cluster_cfg *c)
{
    for (int32_t i = 0; i < c->n_instances; i++)
        if (c->instances[i].afd.micro_batches > 0)
            return TRUE;
    return FALSE;
}

/* What expert parallelism in the FFN group needs: a MoE model whose experts split evenly over
 * the FFN devices. */
static gboolean afd_ep_check(const struct sv_planner_instance_cfg *ic,
                             const struct sv_compute_model_cfg *m, GError **error)
{
    const char *path = ic->afd_where;
    if (!sv_compute_model_is_moe(m)) {
        g_autofree char *p = g_strdup_printf("%s.ffn_ep", path);
        return sv_planner__path_error(error, p,
                                      "%s has no experts (a dense MLP): expert parallelism needs a "
                                      "MoE model; remove ffn_ep for the TP FFN group",
                                      ic->model_name);
    }
    if (m->num_experts % ic->afd.ffn_npus != 0) {
        g_autofree char *p = g_strdup_printf("%s.ffn_npus", path);
        return sv_planner__path_error(
            error, p,
            "%d does not divide the %" G_GINT64_FORMAT " experts of %s (expert parallelism in "
            "the FFN group: num_experts / ffn_npus experts per FFN device; or \"ffn_ep\": false "
            "for a TP FFN group)",
            ic->afd.ffn_npus, m->num_experts, ic->model_name);
    }
    return TRUE;
}

gboolean sv_planner__afd_check(const struct sv_planner_run_cfg *cfg, GError **error)
{
    for (int32_t i = 0; cfg->cluster && i < cfg->cluster->n_instances; i++) {
        const struct sv_planner_instance_cfg *ic = &cfg->cluster->instances[i];
        if (ic->afd.micro_batches <= 0)
            continue;
        if (cfg->emit_et_dir)
            return sv_planner__path_error(error, ic->afd_where,
                                          "--emit-et is not supported with afd");
        /* The FFN group's expert parallelism, before any output is opened (a model that does
         * not load is reported where the instance is built, as without afd). */
        struct sv_compute_model_cfg m;
        if (ic->afd.ffn_ep != 0 &&
            sv_compute_model_lookup(ic->model_name, cfg->model_dir, &m, NULL) &&
            (ic->afd.ffn_ep == 1 || sv_compute_model_is_moe(&m)) && !afd_ep_check(ic, &m, error))
            return FALSE;
    }
    return TRUE;
}

struct sv_planner__afd {
    int32_t n;
    sv_compute_latency **ffn_lat; /* per instance, NULL without afd */
    sv_msg_afd_group **group;     /* per instance: the shared FFN group it owns (member 0) */
};

sv_planner__afd *sv_planner__afd_new(int32_t n_inst)
{
    sv_planner__afd *a = g_new0(sv_planner__afd, 1);
    a->n = n_inst;
    a->ffn_lat = g_new0(sv_compute_latency *, (size_t)MAX(n_inst, 1));
    a->group = g_new0(sv_msg_afd_group *, (size_t)MAX(n_inst, 1));
    return a;
}

void sv_planner__afd_free(sv_planner__afd *a)
{
    if (!a)
        return;
    for (int32_t i = 0; i < a->n; i++) {
        sv_compute_latency_free(a->ffn_lat[i]);
        sv_msg_afd_group_free(a->group[i]); /* after the msgs (run.c frees them first) */
    }
    g_free(a->ffn_lat);
    g_free(a->group);
    g_free(a);
}

gboolean sv_planner__afd_instance(sv_planner__afd *a, const struct sv_planner_run_cfg *cfg,
                                  int32_t i, const struct sv_compute_model_cfg *m,
                                  sv_planner_cluster_net *cn, gboolean power, uint32_t block_size,
                                  uint64_t *blocks, struct sv_msg_cfg *mc, GError **error)
{
    const struct sv_planner_instance_cfg *ic = &cfg->cluster->instances[i];
    if (ic->afd.micro_batches <= 0)
        return TRUE;
    const char *path = ic->afd_where;
    (void)power;          /* the FFN devices' power: planner/power.c (sv_planner_power_afd) */
    if (cfg->emit_et_dir) /* sv_planner__afd_check refused it before the run */
        return sv_planner__path_error(error, path, "--emit-et with afd");
    if (!cn || !sv_planner_cluster_net_coll(cn))
        return sv_planner__path_error(error, path, "needs the cluster network");
    struct sv_compute_hw_cfg hw;
    GError *e = NULL;
    if (!sv_compute_hw_catalog_lookup(cfg->cluster->hw_catalog, ic->afd.ffn_hardware, &hw, &e)) {
        sv_planner__path_error(error, path, "ffn_hardware: %s", e->message);
        g_error_free(e);
        return FALSE;
    }
    /* Expert parallelism in the FFN group: the default for a MoE model (MegaScale-Infer shards
     * the experts over the expert nodes), never for a dense one (docs/afd.md). */
    gboolean moe = sv_compute_model_is_moe(m);
    gboolean ep = ic->afd.ffn_ep == 1 || (ic->afd.ffn_ep < 0 && moe);
    if (ep && !afd_ep_check(ic, m, error))
        return FALSE;
    /* The FFN side's weights must fit its devices (the same bytes per rank under EP when
     * ffn_npus divides the experts: E / ffn_npus whole experts instead of 1 / ffn_npus of each). */
    uint64_t ffn_w = sv_compute_model_mlp_weight_bytes(m, ic->afd.ffn_npus);
    double ffn_cap = hw.mem_gib * 1073741824.0 * ic->mem_util;
    if ((double)ffn_w > ffn_cap) {
        g_autofree char *p = g_strdup_printf("%s.ffn_npus", path);
        return sv_planner__path_error(
            error, p,
            "%d x %s: the MLP weights need %.2f GiB per FFN device, more than its %.2f GiB x "
            "mem_util %.2f (more ffn_npus or a larger ffn_hardware)",
            ic->afd.ffn_npus, hw.name, (double)ffn_w / 1073741824.0, hw.mem_gib, ic->mem_util);
    }
    /* The attention devices: the KV pool after the attention-side weights. */
    uint64_t all_w = sv_compute_model_weight_bytes(m, ic->tp_size);
    uint64_t mlp_w = sv_compute_model_mlp_weight_bytes(m, ic->tp_size);
    uint64_t attn_w = all_w > mlp_w ? all_w - mlp_w : 0;
    uint64_t kv_tok =
        sv_compute_model_kv_bytes_per_token_layer(m, ic->tp_size) * (uint64_t)m->num_layers;
    if (!sv_memtier_kv_capacity_blocks((uint64_t)(ic->npu_mem_gib * 1073741824.0), ic->mem_util,
                                       attn_w, kv_tok, block_size, blocks, &e)) {
        sv_planner__path_error(error, path, "attention devices (%s): %s", ic->hardware, e->message);
        g_error_free(e);
        return FALSE;
    }
    /* The FFN side's latency model: the instance's, on ffn_hardware at TP ffn_npus. */
    struct sv_planner_instance_cfg fic = *ic;
    g_strlcpy(fic.hardware, hw.name, sizeof fic.hardware);
    fic.tp_size = fic.num_npus = ep ? 1 : ic->afd.ffn_npus;
    fic.npu_mem_gib = hw.mem_gib;
    fic.npu_mem_bw_gbps = 0; /* the catalog's */
    fic.n_stages = 0;
    fic.stages = NULL;
    g_autofree char *src = NULL;
    a->ffn_lat[i] = sv_planner__make_latency(cfg, &fic, m, &src, error);
    if (!a->ffn_lat[i]) {
        g_prefix_error(error, "%s.ffn_hardware: ", path);
        return FALSE;
    }
    sv_planner_apply_gpu_clock(cfg, &fic, a->ffn_lat[i]);
    /* A shared FFN group's devices are its first member's (docs/afd.md "Several attention
     * instances sharing an FFN group"); the group object is made once, by whichever member is
     * built first. */
    int32_t own = ic->afd_group_size > 0 ? ic->afd_group_owner : i;
    const struct sv_planner_instance_cfg *oc = &cfg->cluster->instances[own];
    if (ic->afd_group_size > 0 && !a->group[own])
        a->group[own] = sv_msg_afd_group_new(ic->afd_group_size);
    mc->afd = (struct sv_msg_afd_run){
        .micro_batches = ic->afd.micro_batches,
        .ffn_first_device = sv_planner_cluster_net_first_device(cn, own) + oc->num_npus,
        .ffn_npus = ic->afd.ffn_npus,
        .ffn_tp_group = sv_planner_cluster_net_ffn_group(cn, own),
        .ffn_lat = a->ffn_lat[i],
        .ffn_ep = ep,
        .group = ic->afd_group_size > 0 ? a->group[own] : NULL,
        .group_rank = ic->afd_group_rank,
    };
    return TRUE;
}

void sv_planner__afd_cudagraph(sv_planner__afd *a, int32_t i, int64_t max_num_seqs,
                               int64_t max_num_batched_tokens)
{
    if (a->ffn_lat[i])
        sv_compute_latency_set_cudagraph(a->ffn_lat[i], max_num_seqs, max_num_batched_tokens);
}
