/* planner/quick.c: the quick form's cluster. Node packing, roles, hardware and link rates are
 * derived by hand from the flags, the catalog's cited figures (compute/hardware.json) and the
 * scale-out rates planner/quick.c cites. */
#include "planner/planner.h"
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <string.h>

#define M "meta-llama/Llama-3.1-8B"

static double astra(double gbps)
{
    return gbps * 1e9 / 1073741824.0;
}

/* 5 instances of TP 2 fill 4 per 8-GPU node: instances 0-3 on node 0, 4 on node 1. */
static void test_instances(void)
{
    g_autoptr(GError) e = NULL;
    struct sv_planner_quick_cfg q = {.model = M, .hardware = "H100", .tp = 2, .instances = 5};
    struct sv_planner_cluster_cfg *c = sv_planner_cluster_quick(&q, NULL, &e);
    CU_ASSERT_FATAL(c != NULL);
    SV_ASSERT_EQ_I64(c->n_instances, 5);
    SV_ASSERT_EQ_I64(c->n_nodes, 2);
    for (int i = 0; i < 5; i++) {
        SV_ASSERT_EQ_I64(c->instances[i].node, i < 4 ? 0 : 1);
        SV_ASSERT_EQ_I64(c->instances[i].index, i);
        SV_ASSERT_EQ_I64(c->instances[i].num_npus, 2);
        SV_ASSERT_EQ_I64(c->instances[i].tp_size, 2);
        CU_ASSERT_EQUAL(c->instances[i].role, SV_MSG_ROLE_BOTH);
        CU_ASSERT_STRING_EQUAL(c->instances[i].hardware, "H100-SXM");
        CU_ASSERT_DOUBLE_EQUAL(c->instances[i].npu_mem_gib, 80, 0);
    }
    /* NVLink4 450 GB/s inside a node, a 400 Gb/s NIC per GPU between nodes. */
    SV_ASSERT_EQ_I64(c->n_link_bw, 2);
    CU_ASSERT_DOUBLE_EQUAL(c->link_bw_dims[0], astra(450), 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(c->link_bw_dims[1], astra(50), 1e-9);
    CU_ASSERT(c->vllm_batch_defaults);
    sv_planner_cluster_free(c);
    /* TP 3 x PP 2 = 6 devices: one per node; TP 16 gets a node of its own. */
    q = (struct sv_planner_quick_cfg){
        .model = M, .hardware = "H100", .tp = 3, .pp = 2, .instances = 2};
    c = sv_planner_cluster_quick(&q, NULL, &e);
    CU_ASSERT_FATAL(c != NULL);
    SV_ASSERT_EQ_I64(c->n_nodes, 2);
    SV_ASSERT_EQ_I64(c->instances[1].node, 1);
    SV_ASSERT_EQ_I64(c->instances[1].num_npus, 6);
    SV_ASSERT_EQ_I64(c->instances[1].pp_size, 2);
    sv_planner_cluster_free(c);
    /* One instance: one node, the scalar link of the one-instance form, no second dimension. */
    q = (struct sv_planner_quick_cfg){.model = M, .hardware = "H100", .tp = 8};
    c = sv_planner_cluster_quick(&q, NULL, &e);
    CU_ASSERT_FATAL(c != NULL);
    SV_ASSERT_EQ_I64(c->n_nodes, 1);
    SV_ASSERT_EQ_I64(c->n_link_bw, 0);
    CU_ASSERT_DOUBLE_EQUAL(c->link_bw_gbps, astra(450), 1e-9);
    sv_planner_cluster_free(c);
}

/* --pd 3:2 --tp 4 --decode-hardware A100 --decode-tp 2: prefill 0, 1 fill node 0, prefill 2
 * opens node 1; the decode instances on other hardware open node 2 and share it. Links: the
 * slower NVLink (A100's NVLink3, 300 GB/s) and the slower NIC (DGX A100's 200 Gb/s = 25 GB/s). */
static void test_pd(void)
{
    g_autoptr(GError) e = NULL;
    struct sv_planner_quick_cfg q = {.model = M,
                                     .hardware = "H100",
                                     .tp = 4,
                                     .prefill = 3,
                                     .decode = 2,
                                     .decode_hardware = "A100",
                                     .decode_tp = 2};
    struct sv_planner_cluster_cfg *c = sv_planner_cluster_quick(&q, NULL, &e);
    CU_ASSERT_FATAL(c != NULL);
    SV_ASSERT_EQ_I64(c->n_instances, 5);
    SV_ASSERT_EQ_I64(c->n_nodes, 3);
    const int node[] = {0, 0, 1, 2, 2}, tp[] = {4, 4, 4, 2, 2};
    for (int i = 0; i < 5; i++) {
        SV_ASSERT_EQ_I64(c->instances[i].node, node[i]);
        SV_ASSERT_EQ_I64(c->instances[i].tp_size, tp[i]);
        CU_ASSERT_EQUAL(c->instances[i].role, i < 3 ? SV_MSG_ROLE_PREFILL : SV_MSG_ROLE_DECODE);
        CU_ASSERT_STRING_EQUAL(c->instances[i].hardware, i < 3 ? "H100-SXM" : "A100-80GB");
    }
    CU_ASSERT(sv_planner_cluster_is_disaggregated(c));
    CU_ASSERT_DOUBLE_EQUAL(c->link_bw_dims[0], astra(300), 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(c->link_bw_dims[1], astra(25), 1e-9);
    sv_planner_cluster_free(c);
    /* Same hardware: prefill and decode share node 0 (1 + 1 devices). */
    q = (struct sv_planner_quick_cfg){
        .model = M, .hardware = "H100", .prefill = 1, .decode = 1, .instances = 2};
    c = sv_planner_cluster_quick(&q, NULL, &e);
    CU_ASSERT_FATAL(c != NULL);
    SV_ASSERT_EQ_I64(c->n_nodes, 1);
    SV_ASSERT_EQ_I64(c->instances[1].node, 0);
    sv_planner_cluster_free(c);
}

static void expect(const struct sv_planner_quick_cfg *q, const char *msg)
{
    g_autoptr(GError) e = NULL;
    CU_ASSERT(sv_planner_cluster_quick(q, NULL, &e) == NULL);
    CU_ASSERT(e && strstr(e->message, msg));
    if (e && !strstr(e->message, msg))
        fprintf(stderr, "got: %s\n", e->message);
}

static void test_errors(void)
{
    expect(&(struct sv_planner_quick_cfg){.model = M, .hardware = "H100", .prefill = 2},
           "--pd 2:0: needs at least one prefill and one decode instance");
    expect(
        &(struct sv_planner_quick_cfg){
            .model = M, .hardware = "H100", .prefill = 1, .decode = 2, .instances = 4},
        "--instances 4 does not match --pd 1:2 (P + D = 3");
    expect(&(struct sv_planner_quick_cfg){.model = M, .hardware = "Z9"},
           "--hardware: unknown hardware \"Z9\" (known: ");
    expect(&(struct sv_planner_quick_cfg){.model = M, .hardware = "H100", .decode_tp = 2},
           "--decode-tp needs --pd P:D");
    /* TP 65,536 x PP 2 is past the device range (core's SV_RANGE_DEVICES_MAX). */
    expect(&(struct sv_planner_quick_cfg){.model = M, .hardware = "H100", .tp = 65536, .pp = 2},
           "--tp 65536 x --pp 2: 131072 devices per instance, above 65536");
}

int main(void)
{
    static const sv_test_case cases[] = {
        {"instances onto nodes", test_instances},
        {"prefill and decode pools", test_pd},
        {"errors", test_errors},
        {NULL, NULL},
    };
    sv_test_add_suite("quick", cases);
    return sv_test_run();
}
