/* Byte helpers shared by the proto test programs. */
#ifndef SV_TESTS_PROTO_BYTES_UTIL_H
#define SV_TESTS_PROTO_BYTES_UTIL_H

#include <glib.h>

/* Whole decompressed content through zlib's gz* API (reads plain files transparently): an
 * independent path from the reader's own inflate loop. NULL on error. */
GByteArray *sv_test_read_decompressed(const char *path);
/* The raw bytes of a file, NULL on error. */
GByteArray *sv_test_read_file_bytes(const char *path);
gboolean sv_test_bytes_equal(const GByteArray *a, const GByteArray *b);

#endif
