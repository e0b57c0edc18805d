/* Seed corpora of the fuzz targets, generated (nothing is copied into the repository): small
 * valid inputs of every format, one file each, written to OUTDIR/<target>/. When the reference
 * data is there (../shared, relative to the working directory), a few of its inputs are added
 * (at most the first 8 KB of a text file, cut at a line end; ET files under 64 KB), in the build
 * folder only.
 *
 * usage: fuzz_seeds OUTDIR */
#include "proto/proto.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHARED "../shared"

static const char *out_root;

static void put(const char *target, const char *name, const void *data, size_t len)
{
    g_autofree char *dir = g_build_filename(out_root, target, NULL);
    g_autofree char *path = g_build_filename(dir, name, NULL);
    GError *e = NULL;
    if (g_mkdir_with_parents(dir, 0755) != 0 || !g_file_set_contents(path, data, (gssize)len, &e)) {
        fprintf(stderr, "fuzz_seeds: cannot write %s: %s\n", path, e ? e->message : "mkdir");
        exit(2);
    }
}

static void put_text(const char *target, const char *name, const char *text)
{
    put(target, name, text, strlen(text));
}

/* A reference file, cut to its first `max` bytes at a line end (text) or skipped when larger
 * (binary). */
static void put_shared(const char *target, const char *rel, gboolean text, size_t max)
{
    g_autofree char *path = g_build_filename(SHARED, rel, NULL);
    g_autofree char *data = NULL;
    gsize len = 0;
    if (!g_file_get_contents(path, &data, &len, NULL))
        return;
    if (len > max) {
        if (!text)
            return;
        len = max;
        while (len > 0 && data[len - 1] != '\n')
            len--;
    }
    g_autofree char *base = g_path_get_basename(rel);
    g_autofree char *name = g_strconcat("shared-", base, NULL);
    put(target, name, data, len);
}

/* ---- Chakra ET ------------------------------------------------------------------------ */

static ChakraProtoMsg__Node *comp(uint64_t id, uint64_t us)
{
    ChakraProtoMsg__Node *n = sv_proto_node_new(id, "comp", CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE);
    n->duration_micros = us;
    sv_proto_node_add_attr(n, sv_proto_attr_new_bool("is_cpu_op", FALSE));
    sv_proto_node_add_attr(n, sv_proto_attr_new_int64("num_ops", 1000000));
    sv_proto_node_add_attr(n, sv_proto_attr_new_uint64("tensor_size", 4096));
    return n;
}

static ChakraProtoMsg__Node *coll(uint64_t id, int type, int64_t bytes)
{
    ChakraProtoMsg__Node *n =
        sv_proto_node_new(id, "allreduce", CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE);
    sv_proto_node_add_attr(n, sv_proto_attr_new_bool("is_cpu_op", FALSE));
    sv_proto_node_add_attr(n, sv_proto_attr_new_int64("comm_type", type));
    sv_proto_node_add_attr(n, sv_proto_attr_new_int64("comm_size", bytes));
    gboolean dims[2] = {TRUE, FALSE};
    sv_proto_node_add_attr(n, sv_proto_attr_new_bool_list("involved_dim", dims, 2));
    sv_proto_node_add_attr(n, sv_proto_attr_new_string("pg_name", "0"));
    return n;
}

static ChakraProtoMsg__Node *p2p(uint64_t id, gboolean send, int src, int dst, int64_t bytes)
{
    ChakraProtoMsg__Node *n = sv_proto_node_new(id, send ? "send" : "recv",
                                                send ? CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE
                                                     : CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE);
    sv_proto_node_add_attr(n, sv_proto_attr_new_int32("comm_src", src));
    sv_proto_node_add_attr(n, sv_proto_attr_new_int32("comm_dst", dst));
    sv_proto_node_add_attr(n, sv_proto_attr_new_int32("comm_tag", 7));
    sv_proto_node_add_attr(n, sv_proto_attr_new_int64("comm_size", bytes));
    return n;
}

static void write_et(const char *name, ChakraProtoMsg__Node **nodes, int n)
{
    g_autofree char *dir = g_build_filename(out_root, "et", NULL);
    g_autofree char *path = g_build_filename(dir, name, NULL);
    GError *e = NULL;
    g_mkdir_with_parents(dir, 0755);
    sv_proto_writer *w = sv_proto_writer_open(path, &e);
    ChakraProtoMsg__GlobalMetadata *md = sv_proto_metadata_new("0.0.4");
    gboolean ok = w && sv_proto_writer_put_metadata(w, md, &e);
    sv_proto_metadata_free(md);
    for (int i = 0; i < n; i++) {
        ok = ok && sv_proto_writer_put_node(w, nodes[i], &e);
        sv_proto_node_free(nodes[i]);
    }
    if (!ok || !sv_proto_writer_close(w, &e)) {
        fprintf(stderr, "fuzz_seeds: %s: %s\n", path, e ? e->message : "?");
        exit(2);
    }
}

static void et_seeds(void)
{
    ChakraProtoMsg__Node *chain[3] = {comp(1, 5), comp(2, 3), coll(3, 4, 1 << 20)};
    sv_proto_node_add_data_dep(chain[1], 1);
    sv_proto_node_add_ctrl_dep(chain[2], 2);
    write_et("chain.et", chain, 3);
    ChakraProtoMsg__Node *pp[2] = {p2p(10, TRUE, 0, 1, 65536), p2p(11, FALSE, 1, 0, 65536)};
    sv_proto_node_add_data_dep(pp[1], 10);
    write_et("sendrecv.et", pp, 2);
    ChakraProtoMsg__Node *gz[2] = {comp(1, 1), coll(2, 1, 4096)};
    sv_proto_node_add_data_dep(gz[1], 1);
    write_et("gzip.et.gz", gz, 2);
    ChakraProtoMsg__Node *mem =
        sv_proto_node_new(5, "load", CHAKRA_PROTO_MSG__NODE_TYPE__MEM_LOAD_NODE);
    sv_proto_node_add_attr(mem, sv_proto_attr_new_uint64("tensor_size", 1 << 20));
    write_et("memload.et", &mem, 1);
    write_et("metadata-only.et", NULL, 0);
#define ASTRA "interop/astra-sim/"
    static const char *const shared[] = {
        ASTRA "microbenchmarks/all_reduce/4npus_1MB/all_reduce.0.et",
        ASTRA "microbenchmarks/reduce_scatter/4npus_1MB/reduce_scatter.1.et",
        ASTRA "custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce.0.et",
        ASTRA "rt_template/inputs/workload/chakra_trace.0.et",
    };
    for (size_t i = 0; i < G_N_ELEMENTS(shared); i++)
        put_shared("et", shared[i], FALSE, 64 * 1024);
}

/* ---- text formats ----------------------------------------------------------------------- */

static void cluster_seeds(void)
{
    put_text("cluster", "single.json",
             "{\"num_nodes\": 1, \"link_bw\": 112, \"link_latency\": 0,\n"
             " \"nodes\": [{\"num_instances\": 1,\n"
             "  \"cpu_mem\": {\"mem_size\": 512, \"mem_bw\": 256, \"mem_latency\": 0},\n"
             "  \"instances\": [{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": "
             "\"H100\",\n"
             "   \"npu_mem\": {\"mem_size\": 80, \"mem_bw\": 3352, \"mem_latency\": 0},\n"
             "   \"num_npus\": 1, \"tp_size\": 1, \"pd_type\": null}]}]}\n");
    put_text("cluster", "pd-tp.json",
             "{\"num_nodes\": 1, \"link_bw\": [112, 25], \"link_latency\": [0, 500],\n"
             " \"kv_transfer\": \"per_layer\", \"slo_ttft_ms\": 200, \"engine\": \"vllm-0.19\",\n"
             " \"nodes\": [{\"num_instances\": 2, \"topology\": {\"type\": \"ring\"},\n"
             "  \"instances\": [\n"
             "   {\"model_name\": \"meta-llama/Llama-2-7B\", \"hardware\": \"A100-80GB\",\n"
             "    \"npu_mem\": {\"mem_size\": 80, \"mem_bw\": 2039, \"mem_util\": 0.9},\n"
             "    \"num_npus\": 2, \"tp_size\": 2, \"pp_size\": 1, \"pd_type\": \"prefill\",\n"
             "    \"max_num_seqs\": 64, \"max_num_batched_tokens\": 4096, \"block_size\": 16},\n"
             "   {\"model_name\": \"meta-llama/Llama-2-7B\", \"hardware\": \"A100-80GB\",\n"
             "    \"npu_mem\": {\"mem_size\": 80, \"mem_bw\": 2039},\n"
             "    \"num_npus\": 1, \"tp_size\": 1, \"pd_type\": \"decode\",\n"
             "    \"enable_prefix_caching\": true, \"enable_chunked_prefill\": true}]}]}\n");
    put_text("cluster", "tiers.json",
             "{\"num_nodes\": 1, \"link_bw\": 16, \"link_latency\": 20000,\n"
             " \"prefix_storage\": \"cpu\", \"preemption_mode\": \"swap\",\n"
             " \"nodes\": [{\"num_instances\": 1,\n"
             "  \"cpu_mem\": {\"mem_size\": 512, \"mem_bw\": 256, \"mem_latency\": 0},\n"
             "  \"pcie\": {\"bw_gbps\": 64},\n"
             "  \"storage\": {\"mem_size\": 1024, \"mem_bw\": 7, \"mem_latency\": 20000},\n"
             "  \"instances\": [{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": "
             "\"H100\",\n"
             "   \"npu_mem\": {\"mem_size\": 80, \"mem_bw\": 3350, \"mem_latency\": 0},\n"
             "   \"tp_size\": 1,\n"
             "   \"placement\": {\"default\": {\"weights\": \"npu\", \"kv_loc\": \"npu\", "
             "\"kv_evict_loc\": \"cpu\"},\n"
             "    \"blocks\": [{\"blocks\": \"28-31\", \"weights\": \"cpu\"}]}}]}]}\n");
    put_text(
        "cluster", "moe-dp.json",
        "{\"num_nodes\": 2, \"link_bw\": 112, \"link_latency\": 0,\n"
        " \"cxl_mem\": {\"mem_size\": 256, \"mem_bw\": 64, \"mem_latency\": 250, "
        "\"num_devices\": 2},\n"
        " \"nodes\": [{\"num_instances\": 1, \"power\": {\"base_w\": 100},\n"
        "  \"instances\": [{\"model_name\": \"Qwen/Qwen3-30B-A3B-Instruct-2507\", "
        "\"hardware\": \"H100\",\n"
        "   \"npu_mem\": {\"mem_size\": 80}, \"num_npus\": 2, \"tp_size\": 1, \"ep_size\": 2,\n"
        "   \"dp_group\": \"g\"}]},\n"
        "  {\"num_instances\": 1,\n"
        "  \"instances\": [{\"model_name\": \"Qwen/Qwen3-30B-A3B-Instruct-2507\", "
        "\"hardware\": \"H100\",\n"
        "   \"npu_mem\": {\"mem_size\": 80}, \"num_npus\": 2, \"tp_size\": 1, \"ep_size\": 2,\n"
        "   \"dp_group\": \"g\", \"gpu_clock\": 0.8}]}]}\n");
    /* Issue 15's keys: a fabric graph (mixed node kinds, a NIC, a spine, ECMP), an attention/FFN
     * instance, a speculating instance with a per-request Beta acceptance. */
    put_text(
        "cluster", "graph.json",
        "{\"num_nodes\": 2, \"link_bw\": 50, \"link_latency\": 2000,\n"
        " \"fabric\": {\"graph\": {\"routing\": \"ecmp\",\n"
        "  \"switches\": [{\"name\": \"node0.nic\"}, {\"name\": \"spine0\"}, "
        "{\"name\": \"spine1\"}],\n"
        "  \"links\": [{\"a\": \"node0.switch\", \"b\": \"node0.nic\", \"bw_gbps\": 16, "
        "\"latency_ns\": 500},\n"
        "   {\"a\": \"node0.nic\", \"b\": \"spine0\", \"bw_gbps\": 50, \"latency_ns\": 1000},\n"
        "   {\"a\": \"node0.nic\", \"b\": \"spine1\", \"bw_gbps\": 50, \"latency_ns\": 1000},\n"
        "   {\"a\": \"node1.npu0\", \"b\": \"spine0\", \"bw_gbps\": 25, \"latency_ns\": 1000, "
        "\"directed\": false},\n"
        "   {\"a\": \"spine1\", \"b\": \"node1.npu1\", \"bw_gbps\": 25, \"latency_ns\": 1000}]}},\n"
        " \"nodes\": [{\"topology\": {\"kind\": \"nvlink\", \"bw_gbps\": 450},\n"
        "  \"instances\": [{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": "
        "\"H100\", \"npu_mem\": {\"mem_size\": 80},\n"
        "   \"num_npus\": 2, \"tp_size\": 2, \"pd_type\": \"decode\"}]},\n"
        "  {\"topology\": {\"kind\": \"ring\", \"bw_gbps\": 16, \"latency_ns\": 2500},\n"
        "  \"instances\": [{\"model_name\": \"meta-llama/Llama-3.1-8B\", \"hardware\": "
        "\"A100\", \"npu_mem\": {\"mem_size\": 80},\n"
        "   \"num_npus\": 2, \"tp_size\": 2, \"pd_type\": \"prefill\"}]}]}\n");
    put_text(
        "cluster", "afd.json",
        "{\"num_nodes\": 1, \"link_bw\": 450, \"link_latency\": 500,\n"
        " \"nodes\": [{\"instances\": [{\"model_name\": \"meta-llama/Llama-3.1-8B\", "
        "\"hardware\": \"H100\",\n"
        "   \"npu_mem\": {\"mem_size\": 80}, \"num_npus\": 1, \"tp_size\": 1,\n"
        "   \"afd\": {\"ffn_hardware\": \"A100\", \"ffn_npus\": 2, \"micro_batches\": 2}}]}]}\n");
    put_text("cluster", "spec.json",
             "{\"num_nodes\": 1, \"link_bw\": 450, \"link_latency\": 500,\n"
             " \"nodes\": [{\"instances\": [{\"model_name\": \"meta-llama/Llama-3.1-8B\", "
             "\"hardware\": \"H100\",\n"
             "   \"npu_mem\": {\"mem_size\": 80}, \"num_npus\": 2, \"tp_size\": 2,\n"
             "   \"speculative\": {\"method\": \"eagle\", \"num_speculative_tokens\": 4,\n"
             "    \"acceptance\": {\"distribution\": \"beta\", \"mean\": 0.7, "
             "\"concentration\": 10}}}]}]}\n");
    static const char *const shared[] = {
        "reference/llmservingsim/configs/cluster/single_node_single_instance.json",
        "reference/llmservingsim/configs/cluster/single_node_pd_instance.json",
        "reference/llmservingsim/configs/cluster/single_node_cxl_instance.json",
        "reference/llmservingsim/configs/cluster/single_node_power_instance.json",
        "reference/llmservingsim/configs/cluster/single_node_pim_instance.json",
        "reference/llmservingsim/configs/cluster/single_node_memory_instance.json",
        "reference/llmservingsim/configs/cluster/dual_node_moe_dp_ep_intra_inter_instance.json",
        "reference/llmservingsim/configs/cluster/single_node_heterogeneous.json",
    };
    for (size_t i = 0; i < G_N_ELEMENTS(shared); i++)
        put_shared("cluster", shared[i], TRUE, 8192);
}

static void workload_seeds(void)
{
    put_text("workload", "flat.jsonl",
             "{\"input_toks\": 133, \"output_toks\": 42, \"arrival_time_ns\": 0}\n"
             "{\"input_toks\": 7, \"output_toks\": 1, \"arrival_time_ns\": 1000000, "
             "\"input_tok_ids\": [1, 2, 3, 4, 5, 6, 7], \"model\": \"meta-llama/Llama-3.1-8B\"}\n"
             "\n"
             "{\"input_toks\": 12, \"output_toks\": 3, \"arrival_time_ns\": 1000000, "
             "\"output_tok_ids\": [9, 9, 9]}\n");
    put_text("workload", "sessions.jsonl",
             "{\"session_id\": \"s0\", \"arrival_time_ns\": 5, \"sub_requests\": [\n"
             "  {\"input_toks\": 10, \"output_toks\": 4, \"tool_duration_ns\": 2000},\n"
             "  {\"input_toks\": 30, \"output_toks\": 4}]}\n"
             "{\"arrival_time_ns\": 10, \"sub_requests\": []}\n"
             "{\"input_toks\": 1, \"output_toks\": 1, \"arrival_time_ns\": 20}\n");
    put_text("workload", "mooncake.jsonl",
             "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 12, \"hash_ids\": [0, "
             "1]}\n"
             "{\"timestamp\": 2.5, \"input_length\": 600, \"output_length\": 3, \"hash_ids\": [0, "
             "2]}\n"
             "{\"timestamp\": 40, \"input_length\": 10, \"output_length\": 1}\n");
    put_shared("workload", "traces/mooncake_fast25/conversation_trace.jsonl", TRUE, 8192);
    put_shared("workload",
               "reference/llmservingsim/workloads/sharegpt-llama-3.1-8b-300-sps10.jsonl", TRUE,
               8192);

    put_text("azure", "conv.csv",
             "TIMESTAMP,ContextTokens,GeneratedTokens\n"
             "2023-11-16 18:15:46.6805900,374,44\n"
             "2023-11-16 18:15:50.9951690,396,109\n"
             "2023-11-16T18:15:50.995169001,1,1\n");
    put_text("azure", "reordered.csv",
             "GeneratedTokens,TIMESTAMP,ContextTokens\n"
             "10,2023-11-16 00:00:00,20\n"
             "11,2023-11-16 00:00:01.5,21\n");
    put_shared("azure", "traces/azure_llm_2023/AzureLLMInferenceTrace_code.csv", TRUE, 8192);

    put_text("lengths", "lengths.csv",
             "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n"
             "74,918,992,0.0806100217864923\n"
             "290,905,1195,0.3204419889502762\n"
             "1,1,2,1.0\n");
    put_shared("lengths",
               "traces/length_distributions/sharegpt_8k_filtered_stats_llama2_tokenizer.csv", TRUE,
               8192);
}

static void replay_cfg_seeds(void)
{
    put_text("system", "ring.json",
             "{\"scheduling-policy\": \"LIFO\", \"endpoint-delay\": 10,\n"
             " \"active-chunks-per-dimension\": 1, \"preferred-dataset-splits\": 4,\n"
             " \"all-reduce-implementation\": [\"ring\", \"ring\"],\n"
             " \"all-gather-implementation\": [\"ring\", \"direct\"],\n"
             " \"reduce-scatter-implementation\": [\"ring\", \"ring\"],\n"
             " \"all-to-all-implementation\": [\"direct\", \"ring\"],\n"
             " \"collective-optimization\": \"localBWAware\", \"local-mem-bw\": 1600,\n"
             " \"boost-mode\": 0, \"roofline-enabled\": 1, \"peak-perf\": 900}\n");
    put_text("system", "explicit.json",
             "{\"scheduling-policy\": \"EXPLICIT\", \"preferred-dataset-splits\": 1,\n"
             " \"all-reduce-implementation\": [\"halvingDoubling\", \"doubleBinaryTree\"],\n"
             " \"all-reduce-implementation-custom\": \"custom_allreduce\",\n"
             " \"local-reduction-delay\": 2, \"trace-enabled\": 0, \"replay-only\": 1,\n"
             " \"track-local-mem\": 0, \"model-shared-bus\": 0}\n");
    put_shared("system", "interop/astra-sim/configs/Ring_4chunks.json", TRUE, 8192);
    put_shared("system", "interop/astra-sim/configs/HGX-H100-validated.json", TRUE, 8192);
    put_shared("system", "interop/astra-sim/custom_collectives/custom_collective.json", TRUE, 8192);

    put_text("network", "ring.yml",
             "topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50.0 ]  # GB/s\n"
             "latency: [ 500.0 ]  # ns\n");
    put_text("network", "switch2d.yml",
             "topology: [ Switch, FullyConnected ]\nnpus_count: [ 2, 4 ]\n"
             "bandwidth: [ 100.0, 25.0 ]\nlatency: [ 500.0, 1000.0 ]\n");
    put_text("network", "block.yml",
             "topology:\n  - Ring\n  - Switch\n  - FullyConnected\nnpus_count:\n  - 2\n  - 2\n"
             "  - 2\nbandwidth: [ 1, 2, 3 ]\nlatency: [ 0, 0, 0 ]\n");
    put_shared("network", "interop/astra-sim/configs/HGX-H100-validated.yml", TRUE, 8192);
    put_shared("network", "interop/astra-sim/rt_template/inputs/network_cfg.yml", TRUE, 8192);

    put_text("memory", "per-npu.json",
             "{\"memory-type\": \"PER_NPU_MEMORY_EXPANSION\", \"remote-mem-latency\": 1000,\n"
             " \"remote-mem-bw\": 50}\n");
    put_text("memory", "per-node.json",
             "{\"memory-type\": \"PER_NODE_MEMORY_EXPANSION\", \"remote-mem-latency\": 10,\n"
             " \"remote-mem-bw\": 100, \"num-nodes\": 2, \"num-npus-per-node\": 4}\n");
    put_text("memory", "none.json", "{\"memory-type\": \"NO_MEMORY_EXPANSION\"}\n");
    put_text(
        "memory", "pool.json",
        "{\"memory-type\": \"MEMORY_POOL\", \"remote-mem-latency\": 0, \"remote-mem-bw\": 1}\n");
    put_shared("memory", "interop/astra-sim/rt_template/inputs/remote_memory_cfg.json", TRUE, 8192);

    put_text("groups", "two.json", "{\"1\": [0, 1], \"2\": [2, 3]}\n");
    put_text("groups", "one.json", "{\"7\": [3, 0, 2]}\n");
    put_text("groups", "empty.json", "{}\n");
}

/* Issue 14's inputs: sweep specs (the base cluster base.json is the target's own), report run
 * files (first byte: which file, fuzz_report.c) and flag values (first byte: which flag,
 * fuzz_flags.c). */
static void put_sel(const char *target, const char *name, char sel, const char *text)
{
    size_t n = strlen(text);
    g_autofree char *buf = g_malloc(n + 1);
    buf[0] = sel;
    memcpy(buf + 1, text, n);
    put(target, name, buf, n + 1);
}

static void study_seeds(void)
{
    put_text("sweep", "grid.yaml",
             "run: {cluster: base.json, requests: 8, latency: roofline, seed: 1}\n"
             "axes:\n  - {name: qps, values: [1, 2, 4]}\n"
             "  - {name: max-num-seqs, values: [16, 64]}\n");
    put_text("sweep", "path.yaml",
             "run:\n  cluster: base.json\n  enable-prefix-caching: true\n  plugin: [a.so, b.so]\n"
             "axes:\n  - name: tp\n    path: \"nodes[*].instances[*].tp_size\"\n"
             "    values: [1, 2]\n"
             "  - {name: npus, path: \"nodes[0].instances[1].num_npus\", values: [2, 4]}\n");
    put_text("sweep", "zip.yaml",
             "run: {cluster: base.json, model: meta-llama/Llama-3.1-8B, requests: 16}\n"
             "axes:\n  - zip: [instances, tp]\n    values: [[8, 1], [4, 2], [2, 4]]\n"
             "  - {zip: [{name: bw, path: link_bw}, pd], values: [[16, \"1:1\"]]}\n"
             "  - {name: enable-chunked-prefill, values: [true, false]}\n");
    put_text("sweep", "goal.yaml",
             "run: {cluster: base.json, requests: 8, goodput: \"ttft:200\"}\n"
             "axes:\n  - {name: instances, values: [1, 2, 4]}\n"
             "  - {name: qps, values: [4, 1, 2, 8]}\n"
             "goal: {load: qps, at: 2, slo: {p99_ttft_ms: 2000, mean_tpot_ms: 50},\n"
             "       minimize: gpus}\n");
    put_text("sweep", "goal-max.yaml",
             "run: {requests: 4}\naxes:\n  - &q {name: qps, values: [1, 2]}\n"
             "  - {name: seed, values: [1, 2, 3]}\n"
             "goal: {slo: {median_e2el_ms: 100}, maximize: load_per_gpu}\n");

    put_sel("report", "summary.json", 5,
            "{\"requests\": {\"finished\": 2}, \"makespan_s\": 1e308,\n"
            " \"throughput\": {\"output_tokens_per_s\": 0, \"requests_per_s\": -1},\n"
            " \"latency_ms\": {\"ttft\": {\"mean\": 1, \"p99\": 1e-320},\n"
            "   \"itl\": {\"mean\": 2, \"count\": 0}},\n"
            " \"instances\": [{\"id\": 0, \"tp\": 1e300, \"role\": \"<b>\"}, 7],\n"
            " \"pools\": {}}\n");
    put_sel("report", "requests.csv", 6,
            "id,status,ttft_ns,tpot_ns,e2e_ns\n0,finished,1e308,0,-5\n1,finished,,,1\n"
            "2,finished,3,4,5\n");
    put_sel("report", "requests-cmp.csv", 11, "ttft_ns,tpot_ns,e2e_ns\n1,1,1\n1,1,1\n");
    put_sel("report", "timeseries.csv", 7,
            "t,prompt_throughput,gen_throughput,running,waiting,kv_cache_pct,cpu_mem_bytes\n"
            "0,0,0,0,0,0,0\n1e300,1,-1e300,2,3,100,1e19\n1e300,1,1,1,1,1,1\n");
    put_sel("report", "power.csv", 13,
            "t,node0_npu_w,node12_storage_w,node0_x_w,total_w\n0,1,2,3,4\n1,-1e308,1e308,0,0\n");
    put_sel("report", "run.json", 9, "{\"argv\": \"servesim run --qps 2 <&>\"}\n");
    put_sel("report", "run-array.json", 4, "{\"argv\": [\"a\", 1, null, \"b\"]}\n");
    put_sel("report", "run-instances.json", 4,
            "{\"argv\": [\"servesim\"], \"instances\": [{\"num_npus\": 2}, {\"tp\": 4, \"pp\": "
            "2}, {\"npu_num\": 1e308, \"npu_group\": -1}]}\n");
    put_sel("report", "run-nodes.json", 4,
            "{\"cluster\": {\"nodes\": [{\"instances\": [{\"tp_size\": 2, \"pp_size\": 2}]}, "
            "7, {\"instances\": [[]]}]}}\n");
    put_sel("report", "summary-gpus.json", 0,
            "{\"requests\": {\"finished\": 1}, \"makespan_s\": 1, \"gpus\": 0,\n"
            " \"throughput\": {\"output_tokens_per_s\": 5, \"total_tokens_per_s\": 9},\n"
            " \"latency_ms\": {\"ttft\": {\"mean\": 1}}, \"request_goodput\": 0.5}\n");

    put_sel("flags", "goodput", 0, "ttft:200 tpot:50,e2el:1e3");
    put_sel("flags", "percentiles", 1, "50, 90,99,99.9,0,100");
    put_sel("flags", "window", 2, "0.5:2.25");
    put_sel("flags", "window-open", 8, "3:");
    put_sel("flags", "pd", 3, "2:6");
    put_sel("flags", "time-scale", 4, "0.5");
    put_sel("flags", "qps", 5, "2.5");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
        return 2;
    }
    out_root = argv[1];
    et_seeds();
    cluster_seeds();
    workload_seeds();
    replay_cfg_seeds();
    study_seeds();
    printf("fuzz_seeds: seed corpora in %s\n", out_root);
    return 0;
}
