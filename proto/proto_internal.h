/* Helpers shared by the proto module's files (not part of the public API). */
#ifndef SV_PROTO_INTERNAL_H
#define SV_PROTO_INTERNAL_H

#include <stdio.h>

#include "core/core.h"
#include "proto/proto.h"

/* Longest protobuf varint32 (CHAKRA_ET.md 1.2: the length prefix is a varint32, <= 5 bytes). */
#define SV_PROTO_VARINT32_MAX 5

/* Encode `v` as a base-128 varint into buf (>= SV_PROTO_VARINT32_MAX bytes); returns its length. */
size_t sv_proto__varint32_encode(uint32_t v, uint8_t *buf);

/* Create a temporary file next to `path` ("<path>.tmp-XXXXXX", same directory so that rename is
 * atomic; mode 0666 less the umask, as a plain open would create `path`); returns its FILE* and
 * name. When `path` is a device or a FIFO (sv_path_is_special_file) it is opened itself and
 * *tmp_name is NULL: nothing to rename or remove. */
FILE *sv_proto__tmpfile_open(const char *path, char **tmp_name, GError **error);

/* Serialize a JSON tree the way Python's json.dump(indent=1) lays it out, with doubles in the
 * shortest form that reads back to the same value. `indent` is the current depth. */
void sv_proto__json_write(GString *out, JsonNode *node, int depth);

/* ET -> JSON conversion shared by sv_proto_file_to_json and sv_proto_convert. */
gboolean sv_proto__json_convert(const char *in, const char *out, sv_proto_dep_flags deps,
                                const volatile sig_atomic_t *interrupt,
                                struct sv_proto_convert_stats *stats, GError **error);
/* The error of a conversion stopped by its interrupt flag (SV_CORE_ERROR_INTERRUPTED). */
gboolean sv_proto__interrupted(const char *out, uint64_t nodes, GError **error);

#endif
