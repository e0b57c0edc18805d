/* Small Chakra ET inputs that the replay tests write themselves (no ../shared needed): per-NPU ET
 * files, COMP / SEND / RECV nodes, and system + network configs with the values of ASTRA-sim's
 * configs/Ring_4chunks.json and configs/FullyConnected_2npus.yml. Used by tests/replay (library)
 * and tests/cli (the `servesim replay` command). */
#ifndef SV_TESTS_ET_FIXTURES_H
#define SV_TESTS_ET_FIXTURES_H

#include "proto/proto.h"

#include <glib.h>
#include <stdint.h>

/* Write <dir>/<name>.<npu>.et with the given nodes (taken over and freed). */
void et_write(const char *dir, const char *name, int npu, ChakraProtoMsg__Node **nodes, int n);

/* A GPU compute node replayed with its duration (us). */
ChakraProtoMsg__Node *et_comp(uint64_t id, const char *name, uint64_t dur_us);

/* A SEND (send TRUE) or RECV node with comm_src, comm_dst, comm_tag and comm_size. */
ChakraProtoMsg__Node *et_p2p(uint64_t id, gboolean send, int src, int dst, int tag, int64_t bytes);

/* <dir>/system.json and <dir>/network.yml (caller frees the paths): 2 NPUs fully connected by
 * one 50 GB/s, 500 ns link, endpoint delay 10 ns, roofline off. */
void et_own_configs(const char *dir, char **sys, char **net);

#endif
