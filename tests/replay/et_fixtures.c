#include "tests/replay/et_fixtures.h"
#include "tests/test_util.h"

#include <stdio.h>

void et_write(const char *dir, const char *name, int npu, ChakraProtoMsg__Node **nodes, int n)
{
    g_autofree char *path = g_strdup_printf("%s/%s.%d.et", dir, name, npu);
    GError *error = NULL;
    sv_proto_writer *w = sv_proto_writer_open(path, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    ChakraProtoMsg__GlobalMetadata *md = sv_proto_metadata_new("0.0.4");
    CU_ASSERT_TRUE(sv_proto_writer_put_metadata(w, md, &error));
    sv_proto_metadata_free(md);
    for (int i = 0; i < n; i++) {
        CU_ASSERT_TRUE(sv_proto_writer_put_node(w, nodes[i], &error));
        sv_proto_node_free(nodes[i]);
    }
    CU_ASSERT_TRUE(sv_proto_writer_close(w, &error));
    if (error != NULL) {
        fprintf(stderr, "et_write: %s\n", error->message);
        g_error_free(error);
    }
}

ChakraProtoMsg__Node *et_comp(uint64_t id, const char *name, uint64_t dur_us)
{
    ChakraProtoMsg__Node *n = sv_proto_node_new(id, name, CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE);
    n->duration_micros = dur_us;
    sv_proto_node_add_attr(n, sv_proto_attr_new_bool("is_cpu_op", FALSE));
    return n;
}

ChakraProtoMsg__Node *et_p2p(uint64_t id, gboolean send, int src, int dst, int tag, int64_t bytes)
{
    ChakraProtoMsg__Node *n = sv_proto_node_new(id, send ? "send" : "recv",
                                                send ? CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE
                                                     : CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE);
    sv_proto_node_add_attr(n, sv_proto_attr_new_bool("is_cpu_op", FALSE));
    sv_proto_node_add_attr(n, sv_proto_attr_new_int32("comm_src", src));
    sv_proto_node_add_attr(n, sv_proto_attr_new_int32("comm_dst", dst));
    sv_proto_node_add_attr(n, sv_proto_attr_new_int32("comm_tag", tag));
    sv_proto_node_add_attr(n, sv_proto_attr_new_int64("comm_size", bytes));
    return n;
}

void et_own_configs(const char *dir, char **sys, char **net)
{
    *sys = g_build_filename(dir, "system.json", NULL);
    *net = g_build_filename(dir, "network.yml", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(
        *sys,
        "{\"scheduling-policy\": \"LIFO\", \"endpoint-delay\": 10,\n"
        " \"active-chunks-per-dimension\": 1, \"preferred-dataset-splits\": 4,\n"
        " \"all-reduce-implementation\": [\"ring\"], \"all-gather-implementation\": [\"ring\"],\n"
        " \"reduce-scatter-implementation\": [\"ring\"], \"all-to-all-implementation\": "
        "[\"ring\"],\n"
        " \"collective-optimization\": \"localBWAware\", \"local-mem-bw\": 1600,\n"
        " \"boost-mode\": 0, \"roofline-enabled\": 0, \"peak-perf\": 900}\n",
        -1, NULL));
    CU_ASSERT_FATAL(g_file_set_contents(*net,
                                        "topology: [ FullyConnected ]\nnpus_count: [ 2 ]\n"
                                        "bandwidth: [ 50.0 ]  # GB/s\nlatency: [ 500.0 ]  # ns\n",
                                        -1, NULL));
}
