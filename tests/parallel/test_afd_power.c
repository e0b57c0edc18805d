/* Attention/FFN disaggregation under the power model (planner/power.c, msg/afd_run.c;
 * docs/afd.md "Power", docs/power.md "FFN devices under afd"). Llama-3.1-8B with its attention on
 * one H100 and its MLP on one A100, two micro-batches, on the one-node network of
 * tests/parallel/test_afd_run.c (8 bytes per ns, 1,000 ns latency), two requests of 16 prompt and
 * 2 output tokens. The H100's power entry is flat (100 W in every state) so that the node's NPU
 * energy minus 100 W x the run is the A100's alone; the A100's figures are the catalog's (no entry:
 * idle 63 W, active 400 W, standby 231.5 W, standby_duration 18 s, docs/power.md) or an entry
 * under the name the instance would write ("A100"). Expected values are worked by hand from the
 * model's shape and from the operator times sv_compute gives the A100 (the roofline), never from
 * the run's own output. */
#include "planner/planner.h"
#include "tests/parallel/afd_util.h"
#include "tests/test_util.h"

#include <math.h>
#include <string.h>

#define GBPS8 (8.0 * 1e9 / 1073741824.0)
#define LAT_NS 1000
#define HIDDEN 4096
#define LAYERS 32

/* The node's power block around `npu` (its npu entries) and `extra` (more components). */
static char *cluster_json(const char *npu, const char *topo, const char *extra)
{
    return g_strdup_printf(
        "{\"link_bw\": %.17g, \"link_latency\": %d, \"engine\": \"vllm-0.10\", \"nodes\": [{%s"
        "\"cpu_mem\": {\"mem_size\": 512, \"mem_bw\": 256, \"mem_latency\": 0}, "
        "\"instances\": [{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100\", "
        "\"npu_mem\": {\"mem_size\": 80}, \"max_num_seqs\": 128, \"max_num_batched_tokens\": 2048, "
        "\"afd\": {\"ffn_hardware\": \"A100\", \"ffn_npus\": 1, \"micro_batches\": 2}}], "
        "\"power\": {\"base_node_power\": 100, \"npu\": {\"H100\": {\"idle_power\": 100, "
        "\"standby_power\": 100, \"active_power\": 100, \"standby_duration\": 18}%s}, "
        "\"cpu\": {\"idle_power\": 10, \"active_power\": 10, \"util\": 0.5}, "
        "\"dram\": {\"dimm_size\": 512, \"idle_power\": 10, \"energy_per_bit\": 1}, "
        "\"link\": {\"num_links\": 1, \"idle_power\": 10, \"energy_per_bit\": 4}, "
        "\"nic\": {\"num_nics\": 1, \"idle_power\": 10}, "
        "\"storage\": {\"num_devices\": 1, \"idle_power\": 10}%s}}]}",
        GBPS8, LAT_NS, topo, npu, extra);
}

typedef struct {
    GArray *it;       /* struct sv_msg_iter_done */
    GArray *req_j;    /* double, energy_j per finished request, in finishing order */
    double inst_j[3]; /* energy_j summed per serving instance (0, 1, 2) */
} rec;

static void on_iter(void *ctx, const struct sv_msg_iter_done *s)
{
    g_array_append_val(((rec *)ctx)->it, *s);
}

static void on_req(void *ctx, const struct sv_wl_outcome *o)
{
    g_array_append_val(((rec *)ctx)->req_j, o->energy_j);
    if (o->instance >= 0 && o->instance < 3)
        ((rec *)ctx)->inst_j[o->instance] += o->energy_j;
}

static void rec_clear(rec *r)
{
    if (r->it)
        g_array_free(r->it, TRUE);
    if (r->req_j)
        g_array_free(r->req_j, TRUE);
}

/* n requests (run: two) arriving at 0 with 16 prompt tokens and 2 output tokens: for one afd
 * instance a prefill iteration of two chunks, then a decode iteration of two decodes of KV 16,
 * two micro-batches of one each. */
static gboolean run_with(const char *json, const char *router, int n, rec *r,
                         struct sv_planner_run_result *res, GError **error)
{
    r->it = g_array_new(FALSE, FALSE, sizeof(struct sv_msg_iter_done));
    r->req_j = g_array_new(FALSE, FALSE, sizeof(double));
    struct sv_planner_run_observer obs = {.on_iteration = on_iter, .on_request = on_req, .ctx = r};
    return sv_test_afd_run(json, n, 16, NULL, router, &obs, res, error);
}

static gboolean run(const char *json, rec *r, struct sv_planner_run_result *res, GError **error)
{
    return run_with(json, NULL, 2, r, res, error);
}

/* The hand-computed times of the run: the A100's FFN operators per layer and micro-batch (the
 * prefill micro-batch is one chunk of 16 tokens, the decode one a decode of KV 16), and the time
 * the A100 first computes: the prefill iteration starts at 0, the prologue (embedding of both
 * chunks) and micro-batch 0's layer-0 attention side run on the H100, then its dispatch of
 * 16 x 4,096 x 2 bytes takes x = 1,000 + 131,072 / 8 = 17,384 ns. */
typedef struct {
    sv_time f_pf, f_dec; /* FFN side per layer and micro-batch */
    sv_time ffn_busy;    /* 32 layers x 2 micro-batches x (f_pf + f_dec) */
    sv_time first_ffn;   /* start of the A100's first operator */
} hand;

static void hand_times(hand *h)
{
    struct sv_compute_model_cfg m;
    sv_compute_latency *la, *lf;
    sv_test_afd_models("meta-llama/Llama-3.1-8B", &m, &la, &lf);
    const struct sv_compute_layer_seq *seq = sv_compute_layer_seq(m.arch);
    int64_t c1[] = {16}, h1[] = {0}, c2[] = {16, 16}, h2[] = {0, 0}, kv1[] = {16};
    struct sv_compute_batch_shape pf1, pf2, dec1;
    sv_compute_batch_shape_init(&pf1, c1, h1, 1, NULL, 0);
    sv_compute_batch_shape_init(&pf2, c2, h2, 2, NULL, 0);
    sv_compute_batch_shape_init(&dec1, NULL, NULL, 0, kv1, 1);
    struct sv_compute_iter_time fpf, fdec, apf, whole;
    sv_compute_iter_time(lf, &pf1, 0, 1, &fpf);
    sv_compute_iter_time(lf, &dec1, 0, 1, &fdec);
    sv_compute_iter_time(la, &pf1, 0, 1, &apf);
    sv_compute_iter_time(la, &pf2, 0, LAYERS, &whole);
    h->f_pf = sv_test_afd_chain_ns(fpf.layer, fpf.n_layer, seq, 1);
    h->f_dec = sv_test_afd_chain_ns(fdec.layer, fdec.n_layer, seq, 1);
    h->ffn_busy = (sv_time)LAYERS * 2 * (h->f_pf + h->f_dec);
    sv_time x = LAT_NS + 16 * HIDDEN * 2 / 8;
    SV_ASSERT_EQ_I64(x, 17384);
    h->first_ffn = sv_test_afd_chain_ns(whole.prologue, whole.n_prologue, seq, 2) +
                   sv_test_afd_chain_ns(apf.layer, apf.n_layer, seq, 0) + x;
    sv_compute_latency_free(la);
    sv_compute_latency_free(lf);
}

#define NEAR(a, b) CU_ASSERT(fabs((a) - (b)) <= 1e-9 * fmax(1.0, fabs(b)))

/* The A100 FFN device with the catalog's figures: active exactly while its FFN operators run
 * (32 layers x 2 micro-batches x 2 iterations of the DAG's MLP ops), idle (63 W) until its first
 * operator, standby (231.5 W) between and after its operators (the run is far shorter than the
 * 18 s standby window): energy = 400 x busy + 231.5 x (end - first - busy) + 63 x first. */
static void test_ffn_device_energy(void)
{
    g_autofree char *json = cluster_json("", "", "");
    rec r = {0};
    struct sv_planner_run_result res;
    g_autoptr(GError) e = NULL;
    gboolean ok = run(json, &r, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    CU_ASSERT_FATAL(res.has_power);
    CU_ASSERT_EQUAL_FATAL(r.it->len, 2);
    hand h;
    hand_times(&h);
    const struct sv_planner_energy *en = &res.energy;
    double end_s = (double)res.end_ns * 1e-9;
    double busy_s = (double)h.ffn_busy * 1e-9, first_s = (double)h.first_ffn * 1e-9;
    double ffn_j = 400 * busy_s + 231.5 * (end_s - first_s - busy_s) + 63 * first_s;
    /* The H100 draws 100 W whatever its state: the rest of the NPU energy is the A100's. */
    NEAR(en->by_component_j[SV_POWER_NPU] - 100 * end_s, ffn_j);
    /* By state: idle is the A100's wait for its first operator (the H100 is busy from t = 0);
     * active is the A100's FFN time and the H100's iterations, launch to commit. */
    const struct sv_msg_iter_done *i0 = &g_array_index(r.it, struct sv_msg_iter_done, 0);
    const struct sv_msg_iter_done *i1 = &g_array_index(r.it, struct sv_msg_iter_done, 1);
    SV_ASSERT_EQ_I64(i0->start_ns, 0);
    double attn_s = (double)(i0->end_ns - i0->start_ns + i1->end_ns - i1->start_ns) * 1e-9;
    NEAR(en->npu_state_j[SV_POWER_IDLE], 63 * first_s);
    NEAR(en->npu_state_j[SV_POWER_ACTIVE], 100 * attn_s + 400 * busy_s);
    NEAR(en->npu_state_j[SV_POWER_ACTIVE] + en->npu_state_j[SV_POWER_STANDBY] +
             en->npu_state_j[SV_POWER_IDLE],
         en->by_component_j[SV_POWER_NPU]);

    /* The activation transfers on the node's link (FullyConnected: one link per message): 32
     * layers x 2 directions x (2 x 16 + 2 x 1) tokens x 4,096 x 2 bytes, 4 pJ/bit, beside the
     * link's idle 10 W; no switch, no NIC (one node). */
    double link_b = (double)LAYERS * 2 * 34 * HIDDEN * 2;
    CU_ASSERT_EQUAL(link_b, 17825792.0);
    CU_ASSERT_EQUAL(en->link_bytes, link_b);
    CU_ASSERT_EQUAL(en->switch_bytes, 0);
    CU_ASSERT_EQUAL(en->nic_bytes, 0);
    NEAR(en->by_component_j[SV_POWER_LINK], 10 * end_s + link_b * 8 * 4e-12);
    /* DRAM: per iteration the attention side's weights once (embedding, lm_head, final norm and
     * per layer q, o 4,096^2, k, v 4,096 x 1,024, two norms: 2,393,116,672 params, bf16), the
     * MLP's (3 x 4,096 x 14,336 x 32 = 5,637,144,576 params) once per micro-batch, and 131,072 B
     * of KV per token (8 KV heads x 128 x 2 (K, V) x 2 B x 32 layers) over 32 then 34 tokens:
     * 2 x (4,786,233,344 + 2 x 11,274,289,152) + 131,072 x 66, at 1 pJ/bit beside one DIMM of
     * 10 W (512 GiB / 512 GiB). */
    double dram_b = 2.0 * (4786233344.0 + 2 * 11274289152.0) + 131072.0 * 66;
    CU_ASSERT_EQUAL(dram_b, 54678274048.0);
    CU_ASSERT_EQUAL(en->dram_bytes, dram_b);
    NEAR(en->by_component_j[SV_POWER_DRAM], 10 * end_s + dram_b * 8 * 1e-12);

    /* Conservation: the total is the sum of the components, and the requests' energy and the
     * unattributed rest add up to it (here nothing is unattributed: the run ends at the last
     * commit, and an iteration runs from t = 0 on). */
    double sum = 0;
    for (int c = 0; c < SV_POWER_N_COMPONENTS; c++)
        sum += en->by_component_j[c];
    NEAR(en->total_j, sum);
    NEAR(en->attributed_j + en->unattributed_j, en->total_j);
    CU_ASSERT_EQUAL_FATAL(r.req_j->len, 2);
    double req_sum = g_array_index(r.req_j, double, 0) + g_array_index(r.req_j, double, 1);
    CU_ASSERT(fabs(req_sum - en->attributed_j) <= 2e-6); /* energy_j: 1e-6 J */
    rec_clear(&r);
}

/* The FFN hardware's own entry, written as an instance would write it ("A100", which the catalog
 * resolves to the FFN group's A100-80GB): idle = standby = 50 W, active 300 W, so the A100 draws
 * 300 x busy + 50 x the rest. Behind an NVSwitch (topology nvlink, a switch block of 2 pJ/bit)
 * every activation message crosses two links and one switch. */
static void test_entry_and_switch(void)
{
    g_autofree char *json = cluster_json(", \"A100\": {\"idle_power\": 50, \"standby_power\": 50, "
                                         "\"active_power\": 300, \"standby_duration\": 18}",
                                         "\"topology\": {\"kind\": \"nvlink\"}, ",
                                         ", \"switch\": {\"num_switches\": 1, \"idle_power\": 20, "
                                         "\"energy_per_bit\": 2}");
    rec r = {0};
    struct sv_planner_run_result res;
    g_autoptr(GError) e = NULL;
    gboolean ok = run(json, &r, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    hand h;
    hand_times(&h);
    double end_s = (double)res.end_ns * 1e-9, busy_s = (double)h.ffn_busy * 1e-9;
    const struct sv_planner_energy *en = &res.energy;
    NEAR(en->by_component_j[SV_POWER_NPU] - 100 * end_s, 300 * busy_s + 50 * (end_s - busy_s));
    double msg_b = (double)LAYERS * 2 * 34 * HIDDEN * 2;
    CU_ASSERT_EQUAL(en->link_bytes, 2 * msg_b);
    CU_ASSERT_EQUAL(en->switch_bytes, msg_b);
    NEAR(en->by_component_j[SV_POWER_LINK],
         10 * end_s + 20 * end_s + 2 * msg_b * 8 * 4e-12 + msg_b * 8 * 2e-12);
    rec_clear(&r);
}

/* Same inputs and seed: the same energies, bit for bit. */
static void test_same_seed(void)
{
    g_autofree char *json = cluster_json("", "", "");
    rec a = {0}, b = {0};
    struct sv_planner_run_result ra, rb;
    g_autoptr(GError) e = NULL;
    CU_ASSERT_FATAL(run(json, &a, &ra, &e));
    CU_ASSERT_FATAL(run(json, &b, &rb, &e));
    CU_ASSERT(memcmp(&ra.energy, &rb.energy, sizeof ra.energy) == 0);
    CU_ASSERT_EQUAL_FATAL(a.req_j->len, b.req_j->len);
    for (guint k = 0; k < a.req_j->len; k++)
        CU_ASSERT(g_array_index(a.req_j, double, k) == g_array_index(b.req_j, double, k));
    rec_clear(&a);
    rec_clear(&b);
}

/* An FFN hardware with no power figures (TPU-v6e: no entry, and the catalog publishes none) is
 * one error naming the node's power block and the device, before the run. */
static void test_no_figures(void)
{
    g_autofree char *json0 = cluster_json("", "", "");
    g_autofree char *json = NULL;
    {
        GString *s = g_string_new(json0);
        const char *at = strstr(s->str, "\"ffn_hardware\": \"A100\"");
        CU_ASSERT_PTR_NOT_NULL_FATAL(at);
        gsize pos = (gsize)(at - s->str);
        g_string_erase(s, (gssize)pos, (gssize)strlen("\"ffn_hardware\": \"A100\""));
        g_string_insert(s, (gssize)pos, "\"ffn_hardware\": \"TPU-v6e\"");
        json = g_string_free(s, FALSE);
    }
    rec r = {0};
    struct sv_planner_run_result res;
    g_autoptr(GError) e = NULL;
    CU_ASSERT_FALSE(run(json, &r, &res, &e));
    CU_ASSERT(e && strstr(e->message, "nodes[0].power.npu.TPU-v6e: missing, and the hardware "
                                      "catalog has no power figures for TPU-v6e"));
    if (e && !strstr(e->message, "TPU-v6e"))
        fprintf(stderr, "%s\n", e->message);
    rec_clear(&r);
}

static gint cmp_time(gconstpointer a, gconstpointer b)
{
    sv_time x = *(const sv_time *)a, y = *(const sv_time *)b;
    return x < y ? -1 : x > y;
}

/* Attribution across both groups: the afd instance (H100 + A100 FFN) and a plain H100 instance
 * on one node, one request each (round robin), every component drawing a constant power (each
 * NPU 100 W in every state, no traffic energy): the node draws 450 W (base 100, three NPUs, cpu,
 * one DIMM, link, NIC, storage 10 W each) throughout, and while both instances run an iteration
 * the afd one takes 2/3 of it (two devices) and the plain one 1/3 (docs/power.md "Attribution
 * to requests"). Expected energies per instance from its iterations' launch and commit times
 * (the run's records) by that rule. */
static void test_attribution_share(void)
{
    const char *json =
        "{\"link_bw\": 100, \"link_latency\": 1000, \"engine\": \"vllm-0.10\", \"nodes\": [{"
        "\"cpu_mem\": {\"mem_size\": 512, \"mem_bw\": 256, \"mem_latency\": 0}, \"instances\": ["
        "{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100\", \"npu_mem\": "
        "{\"mem_size\": 80}, \"afd\": {\"ffn_hardware\": \"A100\"}}, "
        "{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100\", \"npu_mem\": "
        "{\"mem_size\": 80}}], "
        "\"power\": {\"base_node_power\": 100, \"npu\": {"
        "\"H100\": {\"idle_power\": 100, \"standby_power\": 100, \"active_power\": 100, "
        "\"standby_duration\": 18}, \"A100\": {\"idle_power\": 100, \"standby_power\": 100, "
        "\"active_power\": 100, \"standby_duration\": 18}}, "
        "\"cpu\": {\"idle_power\": 10, \"active_power\": 10, \"util\": 0.5}, "
        "\"dram\": {\"dimm_size\": 512, \"idle_power\": 10, \"energy_per_bit\": 0}, "
        "\"link\": {\"num_links\": 1, \"idle_power\": 10, \"energy_per_bit\": 0}, "
        "\"nic\": {\"num_nics\": 1, \"idle_power\": 10}, "
        "\"storage\": {\"num_devices\": 1, \"idle_power\": 10}}}]}";
    rec r = {0};
    struct sv_planner_run_result res;
    g_autoptr(GError) e = NULL;
    gboolean ok = run_with(json, "round_robin", 2, &r, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    CU_ASSERT_EQUAL_FATAL(r.req_j->len, 2);
    NEAR(res.energy.total_j, 450 * (double)res.end_ns * 1e-9);
    /* Elementary intervals between every launch and commit; in each, the running instances'
     * shares by device count (afd 2, plain 1). */
    GArray *t = g_array_new(FALSE, FALSE, sizeof(sv_time));
    gboolean ran[2] = {FALSE, FALSE};
    for (guint k = 0; k < r.it->len; k++) {
        const struct sv_msg_iter_done *it = &g_array_index(r.it, struct sv_msg_iter_done, k);
        g_array_append_val(t, it->start_ns);
        g_array_append_val(t, it->end_ns);
        if (it->instance >= 0 && it->instance < 2)
            ran[it->instance] = TRUE;
    }
    CU_ASSERT_FATAL(ran[0] && ran[1]);
    g_array_sort(t, cmp_time);
    double want[2] = {0, 0}, overlap = 0;
    for (guint k = 0; k + 1 < t->len; k++) {
        sv_time a = g_array_index(t, sv_time, k), b = g_array_index(t, sv_time, k + 1);
        if (b <= a)
            continue;
        gboolean on[2] = {FALSE, FALSE};
        for (guint q = 0; q < r.it->len; q++) {
            const struct sv_msg_iter_done *it = &g_array_index(r.it, struct sv_msg_iter_done, q);
            if (it->start_ns <= a && it->end_ns >= b)
                on[it->instance] = TRUE;
        }
        double devs = (on[0] ? 2 : 0) + (on[1] ? 1 : 0), j = 450 * (double)(b - a) * 1e-9;
        if (on[0] && on[1])
            overlap += (double)(b - a);
        for (int i = 0; i < 2; i++)
            if (on[i])
                want[i] += j * (i == 0 ? 2 : 1) / devs;
    }
    CU_ASSERT(overlap > 0); /* the two instances did run side by side */
    CU_ASSERT(fabs(r.inst_j[0] - want[0]) <= 1e-9 * want[0]);
    CU_ASSERT(fabs(r.inst_j[1] - want[1]) <= 1e-9 * want[1]);
    g_array_free(t, TRUE);
    rec_clear(&r);
}

/* ---- a shared FFN group (docs/afd.md "Power", "Several attention instances sharing an FFN
 * group") ---- */

/* Two attention instances (an H100 each) sharing one A100 (ffn_group "g", micro_batches 2), and
 * `plain` more H100 instances without afd, on one node with the power block of cluster_json
 * (`npu` more npu entries, energy_per_bit `bits` for DRAM and link). */
static char *group_json(const char *npu, int plain, int bits)
{
    GString *inst = g_string_new(NULL);
    for (int k = 0; k < 2 + plain; k++)
        g_string_append_printf(
            inst,
            "%s{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100\", \"npu_mem\": "
            "{\"mem_size\": 80}, \"max_num_seqs\": 128, \"max_num_batched_tokens\": 2048%s}",
            k ? ", " : "",
            k < 2 ? ", \"afd\": {\"ffn_hardware\": \"A100\", \"micro_batches\": 2, "
                    "\"ffn_group\": \"g\"}"
                  : "");
    char *j = g_strdup_printf(
        "{\"link_bw\": %.17g, \"link_latency\": %d, \"engine\": \"vllm-0.10\", \"nodes\": [{"
        "\"cpu_mem\": {\"mem_size\": 512, \"mem_bw\": 256, \"mem_latency\": 0}, "
        "\"instances\": [%s], "
        "\"power\": {\"base_node_power\": 100, \"npu\": {\"H100\": {\"idle_power\": 100, "
        "\"standby_power\": 100, \"active_power\": 100, \"standby_duration\": 18}%s}, "
        "\"cpu\": {\"idle_power\": 10, \"active_power\": 10, \"util\": 0.5}, "
        "\"dram\": {\"dimm_size\": 512, \"idle_power\": 10, \"energy_per_bit\": %d}, "
        "\"link\": {\"num_links\": 1, \"idle_power\": 10, \"energy_per_bit\": %d}, "
        "\"nic\": {\"num_nics\": 1, \"idle_power\": 10}, "
        "\"storage\": {\"num_devices\": 1, \"idle_power\": 10}}}]}",
        GBPS8, LAT_NS, inst->str, npu, bits, 4 * bits);
    g_string_free(inst, TRUE);
    return j;
}

/* The shared A100 with the catalog's figures, two requests (one per member: one micro-batch per
 * wave). The wave's DAG runs the A100's MLP ops once per layer for both members' tokens: the
 * prefill wave at two 16-token chunks (f_pf), the decode wave at two decodes of KV 16 (f_dec),
 * so its active time is 32 x (f_pf + f_dec) (op times from compute/ directly). Its first op
 * starts once both members' dispatches have arrived: each member's prologue and layer-0
 * attention side for its own 16-token chunk, then its dispatch of 16 x 4,096 x 2 bytes on its own
 * link, x = 17,384 ns (both at once). Three NPUs in the node's domain (two H100s, one A100: the
 * group's FFN device once), so the NPU energy is 2 x 100 W x the run plus the A100's 400 x busy
 * + 231.5 x standby + 63 x idle. DRAM: each member iteration's attention-side weights
 * (4,786,233,344 bytes, 4 iterations), the MLP weights (11,274,289,152 bytes) once per wave and
 * micro-batch (2 waves x 1, not once per member), and 131,072 bytes of KV per token over 16 then
 * 17 tokens per member. Link: 32 layers x 2 directions x 2 members x (16 + 1) tokens x 8,192. */
static void test_group_ffn_energy(void)
{
    g_autofree char *json = group_json("", 0, 1);
    rec r = {0};
    struct sv_planner_run_result res;
    g_autoptr(GError) e = NULL;
    gboolean ok = run(json, &r, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    CU_ASSERT_FATAL(res.has_power);
    CU_ASSERT_EQUAL_FATAL(r.it->len, 4); /* two waves of two members */

    struct sv_compute_model_cfg m;
    sv_compute_latency *la, *lf;
    sv_test_afd_models("meta-llama/Llama-3.1-8B", &m, &la, &lf);
    const struct sv_compute_layer_seq *seq = sv_compute_layer_seq(m.arch);
    int64_t c1[] = {16}, h1[] = {0}, c2[] = {16, 16}, h2[] = {0, 0}, kv2[] = {16, 16};
    struct sv_compute_batch_shape pf1, pf2, dec2;
    sv_compute_batch_shape_init(&pf1, c1, h1, 1, NULL, 0);
    sv_compute_batch_shape_init(&pf2, c2, h2, 2, NULL, 0);
    sv_compute_batch_shape_init(&dec2, NULL, NULL, 0, kv2, 2);
    struct sv_compute_iter_time fpf, fdec, apf, whole;
    sv_compute_iter_time(lf, &pf2, 0, 1, &fpf);
    sv_compute_iter_time(lf, &dec2, 0, 1, &fdec);
    sv_compute_iter_time(la, &pf1, 0, 1, &apf);
    sv_compute_iter_time(la, &pf1, 0, LAYERS, &whole);
    sv_time busy = (sv_time)LAYERS * (sv_test_afd_chain_ns(fpf.layer, fpf.n_layer, seq, 1) +
                                      sv_test_afd_chain_ns(fdec.layer, fdec.n_layer, seq, 1));
    sv_time first = sv_test_afd_chain_ns(whole.prologue, whole.n_prologue, seq, 2) +
                    sv_test_afd_chain_ns(apf.layer, apf.n_layer, seq, 0) + LAT_NS +
                    16 * HIDDEN * 2 / 8;
    sv_compute_latency_free(la);
    sv_compute_latency_free(lf);

    const struct sv_planner_energy *en = &res.energy;
    double end_s = (double)res.end_ns * 1e-9;
    double busy_s = (double)busy * 1e-9, first_s = (double)first * 1e-9;
    double ffn_j = 400 * busy_s + 231.5 * (end_s - first_s - busy_s) + 63 * first_s;
    NEAR(en->by_component_j[SV_POWER_NPU] - 2 * 100 * end_s, ffn_j);
    NEAR(en->npu_state_j[SV_POWER_IDLE], 63 * first_s);
    /* Active: the A100's FFN ops and each H100 from its member's launch to its commit. */
    double attn_s = 0;
    for (guint k = 0; k < r.it->len; k++) {
        const struct sv_msg_iter_done *d = &g_array_index(r.it, struct sv_msg_iter_done, k);
        attn_s += (double)(d->end_ns - d->start_ns) * 1e-9;
    }
    NEAR(en->npu_state_j[SV_POWER_ACTIVE], 100 * attn_s + 400 * busy_s);
    NEAR(en->npu_state_j[SV_POWER_ACTIVE] + en->npu_state_j[SV_POWER_STANDBY] +
             en->npu_state_j[SV_POWER_IDLE],
         en->by_component_j[SV_POWER_NPU]);
    double dram_b = 4 * 4786233344.0 + 2 * 11274289152.0 + 131072.0 * 2 * (16 + 17);
    CU_ASSERT_EQUAL(dram_b, 41702162432.0);
    CU_ASSERT_EQUAL(en->dram_bytes, dram_b);
    NEAR(en->by_component_j[SV_POWER_DRAM], 10 * end_s + dram_b * 8 * 1e-12);
    double link_b = (double)LAYERS * 2 * 2 * 17 * HIDDEN * 2;
    CU_ASSERT_EQUAL(en->link_bytes, link_b);
    NEAR(en->by_component_j[SV_POWER_LINK], 10 * end_s + link_b * 8 * 4e-12);
    double sum = 0;
    for (int c = 0; c < SV_POWER_N_COMPONENTS; c++)
        sum += en->by_component_j[c];
    NEAR(en->total_j, sum);
    NEAR(en->attributed_j + en->unattributed_j, en->total_j);
    CU_ASSERT_EQUAL_FATAL(r.req_j->len, 2);
    double req_sum = g_array_index(r.req_j, double, 0) + g_array_index(r.req_j, double, 1);
    CU_ASSERT(fabs(req_sum - en->attributed_j) <= 2e-6); /* energy_j: 1e-6 J */

    /* Same inputs and seed: the same energies, bit for bit. */
    rec r2 = {0};
    struct sv_planner_run_result res2;
    CU_ASSERT_FATAL(run(json, &r2, &res2, &e));
    CU_ASSERT(memcmp(&res.energy, &res2.energy, sizeof res.energy) == 0);
    for (guint k = 0; k < r.req_j->len; k++)
        CU_ASSERT(g_array_index(r.req_j, double, k) == g_array_index(r2.req_j, double, k));
    rec_clear(&r);
    rec_clear(&r2);
}

/* Attribution with a shared FFN group: the two members and a plain H100 instance on one node, one
 * request each (three requests, round robin), every component at a constant power (each NPU 100 W
 * in every state, no traffic energy): four NPUs (three H100s, the group's one A100), 550 W in all.
 * In each interval between launches and commits the running iterations split it by devices: the
 * plain instance 1, a member 1 (its H100) + 1 / k (the A100 over the k members running), so a
 * member alone with the plain instance takes 2/3, both members 3/8 each and the plain one 1/4. */
static void test_group_attribution(void)
{
    g_autofree char *json = group_json(", \"A100\": {\"idle_power\": 100, \"standby_power\": 100, "
                                       "\"active_power\": 100, \"standby_duration\": 18}",
                                       1, 0);
    rec r = {0};
    struct sv_planner_run_result res;
    g_autoptr(GError) e = NULL;
    gboolean ok = run_with(json, "round_robin", 3, &r, &res, &e);
    if (!ok)
        fprintf(stderr, "%s\n", e->message);
    CU_ASSERT_FATAL(ok);
    NEAR(res.energy.by_component_j[SV_POWER_NPU], 4 * 100 * (double)res.end_ns * 1e-9);
    NEAR(res.energy.total_j, 550 * (double)res.end_ns * 1e-9);
    GArray *t = g_array_new(FALSE, FALSE, sizeof(sv_time));
    for (guint k = 0; k < r.it->len; k++) {
        const struct sv_msg_iter_done *it = &g_array_index(r.it, struct sv_msg_iter_done, k);
        g_array_append_val(t, it->start_ns);
        g_array_append_val(t, it->end_ns);
    }
    g_array_sort(t, cmp_time);
    double want[3] = {0, 0, 0}, all3 = 0;
    for (guint k = 0; k + 1 < t->len; k++) {
        sv_time a = g_array_index(t, sv_time, k), b = g_array_index(t, sv_time, k + 1);
        if (b <= a)
            continue;
        gboolean on[3] = {FALSE, FALSE, FALSE};
        for (guint q = 0; q < r.it->len; q++) {
            const struct sv_msg_iter_done *it = &g_array_index(r.it, struct sv_msg_iter_done, q);
            if (it->start_ns <= a && it->end_ns >= b && it->instance >= 0 && it->instance < 3)
                on[it->instance] = TRUE;
        }
        int members = on[0] + on[1];
        double w[3] = {on[0] ? 1 + 1.0 / members : 0, on[1] ? 1 + 1.0 / members : 0, on[2]};
        double devs = w[0] + w[1] + w[2], j = 550 * (double)(b - a) * 1e-9;
        if (on[0] && on[1] && on[2])
            all3 += (double)(b - a);
        for (int i = 0; i < 3 && devs > 0; i++)
            want[i] += j * w[i] / devs;
    }
    CU_ASSERT(all3 > 0); /* all three ran side by side */
    for (int i = 0; i < 3; i++) {
        CU_ASSERT(fabs(r.inst_j[i] - want[i]) <= 1e-9 * want[i]);
        if (fabs(r.inst_j[i] - want[i]) > 1e-9 * want[i])
            fprintf(stderr, "instance %d: %.9f J, want %.9f\n", i, r.inst_j[i], want[i]);
    }
    g_array_free(t, TRUE);
    rec_clear(&r);
}

/* Members of a shared FFN group on two nodes under the power model: one error naming the second
 * member's ffn_group (the FFN devices' draw is split over members on the owner's node), before
 * anything runs. */
static void test_group_across_nodes(void)
{
    const char *inst = "{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": \"H100\", "
                       "\"npu_mem\": {\"mem_size\": 80}, \"afd\": {\"ffn_hardware\": \"A100\", "
                       "\"ffn_group\": \"g\"}}";
    const char *power =
        "\"power\": {\"base_node_power\": 100, \"npu\": {\"H100\": {\"idle_power\": 100, "
        "\"standby_power\": 100, \"active_power\": 100, \"standby_duration\": 18}}, "
        "\"cpu\": {\"idle_power\": 10, \"active_power\": 10, \"util\": 0.5}, "
        "\"dram\": {\"dimm_size\": 512, \"idle_power\": 10, \"energy_per_bit\": 1}, "
        "\"link\": {\"num_links\": 1, \"idle_power\": 10, \"energy_per_bit\": 4}, "
        "\"nic\": {\"num_nics\": 1, \"idle_power\": 10}, "
        "\"storage\": {\"num_devices\": 1, \"idle_power\": 10}}";
    g_autofree char *json = g_strdup_printf(
        "{\"link_bw\": %.17g, \"link_latency\": %d, \"engine\": \"vllm-0.10\", \"nodes\": ["
        "{\"cpu_mem\": {\"mem_size\": 512, \"mem_bw\": 256, \"mem_latency\": 0}, \"instances\": "
        "[%s], %s}, "
        "{\"cpu_mem\": {\"mem_size\": 512, \"mem_bw\": 256, \"mem_latency\": 0}, \"instances\": "
        "[%s], %s}]}",
        GBPS8, LAT_NS, inst, power, inst, power);
    rec r = {0};
    struct sv_planner_run_result res;
    g_autoptr(GError) e = NULL;
    CU_ASSERT_FALSE(run(json, &r, &res, &e));
    CU_ASSERT_EQUAL(r.it ? r.it->len : 0, 0);
    const char *want = "t.json: nodes[1].instances[0].afd.ffn_group: \"g\": under the power model "
                       "the members of a shared FFN group must be on the node of its first member "
                       "(nodes[0]";
    CU_ASSERT(e && strstr(e->message, want));
    if (e && !strstr(e->message, want))
        fprintf(stderr, "%s\n", e->message);
    rec_clear(&r);
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"ffn_device_energy", test_ffn_device_energy},
        {"entry_and_switch", test_entry_and_switch},
        {"same_seed", test_same_seed},
        {"no_figures", test_no_figures},
        {"attribution_share", test_attribution_share},
        {"group_ffn_energy", test_group_ffn_energy},
        {"group_attribution", test_group_attribution},
        {"group_across_nodes", test_group_across_nodes},
        {NULL, NULL},
    };
    sv_test_add_suite("afd_power", cases);
    return sv_test_run();
}
