#include "tests/proto/bytes_util.h"

#include <stdint.h>
#include <string.h>
#include <zlib.h>

GByteArray *sv_test_read_decompressed(const char *path)
{
    gzFile gz = gzopen(path, "rb");
    if (!gz)
        return NULL;
    GByteArray *b = g_byte_array_new();
    uint8_t buf[65536];
    int n;
    while ((n = gzread(gz, buf, sizeof(buf))) > 0)
        g_byte_array_append(b, buf, (guint)n);
    int errnum;
    gzerror(gz, &errnum);
    gzclose(gz);
    if (n < 0 || errnum != Z_OK) {
        g_byte_array_unref(b);
        return NULL;
    }
    return b;
}

GByteArray *sv_test_read_file_bytes(const char *path)
{
    char *data;
    gsize len;
    if (!g_file_get_contents(path, &data, &len, NULL))
        return NULL;
    return g_byte_array_new_take((guint8 *)data, len);
}

gboolean sv_test_bytes_equal(const GByteArray *a, const GByteArray *b)
{
    return a && b && a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}
