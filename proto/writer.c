/* Chakra ET writer: varint32 length + serialized message per frame, as Chakra's
 * ProtoOutputStream / protolib.encodeMessage write it (CHAKRA_ET.md 1.2); gzip when the output name
 * ends in ".gz" like the C++ writer. */
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "proto/proto_internal.h"

#define SV_PROTO_WCHUNK (64 * 1024)

struct sv_proto_writer {
    char *path;
    char *tmp_path;
    FILE *fp;
    gboolean gzip;
    z_stream zs;
    gboolean zs_init;
    uint8_t *zbuf;
    uint64_t count;
    gboolean failed; /* after an error only close/abort make sense */
};

size_t sv_proto__varint32_encode(uint32_t v, uint8_t *buf)
{
    size_t n = 0;
    while (v >= 0x80) {
        buf[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    buf[n++] = (uint8_t)v;
    return n;
}

FILE *sv_proto__tmpfile_open(const char *path, char **tmp_name, GError **error)
{
    if (sv_path_is_special_file(path)) {
        FILE *fp = fopen(path, "wb");
        if (!fp)
            g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_IO, "cannot open: %s: %s", path,
                        g_strerror(errno));
        *tmp_name = NULL;
        return fp;
    }
    char *tmpl = g_strdup_printf("%s.tmp-XXXXXX", path);
    /* 0666 less the umask, as a plain open would create the output: mkstemp's 0600 would survive
     * the rename. */
    int fd = g_mkstemp_full(tmpl, O_RDWR, 0666);
    if (fd < 0) {
        g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_IO, "cannot create: %s: %s", tmpl,
                    g_strerror(errno));
        g_free(tmpl);
        return NULL;
    }
    FILE *fp = fdopen(fd, "wb");
    if (!fp) {
        g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_IO, "cannot open: %s: %s", tmpl,
                    g_strerror(errno));
        close(fd);
        g_unlink(tmpl);
        g_free(tmpl);
        return NULL;
    }
    *tmp_name = tmpl;
    return fp;
}

sv_proto_writer *sv_proto_writer_open(const char *path, GError **error)
{
    SV_ASSERT(path != NULL);
    char *tmp = NULL;
    FILE *fp = sv_proto__tmpfile_open(path, &tmp, error);
    if (!fp)
        return NULL;
    sv_proto_writer *w = g_new0(sv_proto_writer, 1);
    w->path = g_strdup(path);
    w->tmp_path = tmp;
    w->fp = fp;
    w->gzip = g_str_has_suffix(path, ".gz");
    if (w->gzip) {
        /* windowBits 15 + 16 = gzip wrapper; zlib's default gzip header has mtime 0 and no name,
         * so the output depends on the content only. */
        if (deflateInit2(&w->zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                         Z_DEFAULT_STRATEGY) != Z_OK) {
            g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_IO, "cannot start deflate: %s", path);
            sv_proto_writer_abort(w);
            return NULL;
        }
        w->zs_init = TRUE;
        w->zbuf = g_malloc(SV_PROTO_WCHUNK);
    }
    return w;
}

static gboolean write_io_error(sv_proto_writer *w, GError **error)
{
    w->failed = TRUE;
    g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_IO, "cannot write: %s: %s",
                w->tmp_path ? w->tmp_path : w->path, g_strerror(errno));
    return FALSE;
}

static gboolean deflate_run(sv_proto_writer *w, int flush, GError **error)
{
    int rc;
    do {
        w->zs.next_out = w->zbuf;
        w->zs.avail_out = SV_PROTO_WCHUNK;
        rc = deflate(&w->zs, flush);
        if (rc == Z_STREAM_ERROR) {
            w->failed = TRUE;
            g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_GZIP, "deflate failed: %s", w->path);
            return FALSE;
        }
        size_t n = SV_PROTO_WCHUNK - w->zs.avail_out;
        if (n && fwrite(w->zbuf, 1, n, w->fp) != n)
            return write_io_error(w, error);
    } while (w->zs.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
    return TRUE;
}

static gboolean put_bytes(sv_proto_writer *w, const uint8_t *data, size_t len, GError **error)
{
    if (!w->gzip) {
        if (len && fwrite(data, 1, len, w->fp) != len)
            return write_io_error(w, error);
        return TRUE;
    }
    while (len > 0) {
        size_t n = MIN(len, (size_t)UINT32_MAX);
        w->zs.next_in = (Bytef *)data;
        w->zs.avail_in = (uInt)n;
        if (!deflate_run(w, Z_NO_FLUSH, error))
            return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}

static gboolean put_frame(sv_proto_writer *w, const uint8_t *data, size_t len, GError **error)
{
    SV_ASSERT(w != NULL);
    if (w->failed) {
        g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_INVALID,
                    "writer used after an earlier error: %s", w->path);
        return FALSE;
    }
    if (len > UINT32_MAX) {
        w->failed = TRUE;
        g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_INVALID,
                    "message of %zu bytes exceeds the varint32 length limit: %s: message "
                    "%" G_GUINT64_FORMAT,
                    len, w->path, (guint64)w->count);
        return FALSE;
    }
    if (len == 0 && w->count > 0) {
        w->failed = TRUE;
        g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_EMPTY_NODE,
                    "node serializes to zero bytes (Chakra's readers would stop there): %s: "
                    "message %" G_GUINT64_FORMAT,
                    w->path, (guint64)w->count);
        return FALSE;
    }
    uint8_t prefix[SV_PROTO_VARINT32_MAX];
    size_t np = sv_proto__varint32_encode((uint32_t)len, prefix);
    if (!put_bytes(w, prefix, np, error) || !put_bytes(w, data, len, error))
        return FALSE;
    w->count++;
    return TRUE;
}

gboolean sv_proto_writer_put_raw(sv_proto_writer *w, const uint8_t *data, size_t len,
                                 GError **error)
{
    return put_frame(w, data, len, error);
}

gboolean sv_proto_writer_put_metadata(sv_proto_writer *w, const ChakraProtoMsg__GlobalMetadata *md,
                                      GError **error)
{
    SV_ASSERT(w != NULL && md != NULL);
    if (w->count != 0) {
        g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_INVALID,
                    "GlobalMetadata must be the first message: %s", w->path);
        return FALSE;
    }
    size_t len = chakra_proto_msg__global_metadata__get_packed_size(md);
    uint8_t *buf = g_malloc(len ? len : 1);
    chakra_proto_msg__global_metadata__pack(md, buf);
    gboolean ok = put_frame(w, buf, len, error);
    g_free(buf);
    return ok;
}

gboolean sv_proto_writer_put_node(sv_proto_writer *w, const ChakraProtoMsg__Node *node,
                                  GError **error)
{
    SV_ASSERT(w != NULL && node != NULL);
    if (w->count == 0) {
        g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_INVALID,
                    "node written before the GlobalMetadata: %s", w->path);
        return FALSE;
    }
    size_t len = chakra_proto_msg__node__get_packed_size(node);
    uint8_t stackbuf[512];
    uint8_t *buf = len <= sizeof(stackbuf) ? stackbuf : g_malloc(len);
    chakra_proto_msg__node__pack(node, buf);
    gboolean ok = put_frame(w, buf, len, error);
    if (buf != stackbuf)
        g_free(buf);
    return ok;
}

static void writer_free(sv_proto_writer *w)
{
    if (w->zs_init)
        deflateEnd(&w->zs);
    g_free(w->zbuf);
    g_free(w->tmp_path);
    g_free(w->path);
    g_free(w);
}

void sv_proto_writer_abort(sv_proto_writer *w)
{
    if (!w)
        return;
    if (w->fp)
        fclose(w->fp);
    if (w->tmp_path) /* NULL: a device written in place, never removed */
        g_unlink(w->tmp_path);
    writer_free(w);
}

gboolean sv_proto_writer_close(sv_proto_writer *w, GError **error)
{
    SV_ASSERT(w != NULL);
    if (w->failed) {
        g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_INVALID,
                    "writer closed after an earlier error: %s", w->path);
        sv_proto_writer_abort(w);
        return FALSE;
    }
    if (w->count == 0) {
        g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_INVALID, "no GlobalMetadata written: %s",
                    w->path);
        sv_proto_writer_abort(w);
        return FALSE;
    }
    if (w->gzip) {
        w->zs.next_in = NULL;
        w->zs.avail_in = 0;
        if (!deflate_run(w, Z_FINISH, error)) {
            sv_proto_writer_abort(w);
            return FALSE;
        }
    }
    FILE *fp = w->fp;
    w->fp = NULL;
    int flush_rc = fflush(fp);
    int close_rc = fclose(fp);
    if (flush_rc != 0 || close_rc != 0) {
        g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_IO, "cannot write: %s: %s",
                    w->tmp_path ? w->tmp_path : w->path, g_strerror(errno));
        sv_proto_writer_abort(w);
        return FALSE;
    }
    if (w->tmp_path && g_rename(w->tmp_path, w->path) != 0) {
        g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_IO, "cannot rename %s to %s: %s",
                    w->tmp_path, w->path, g_strerror(errno));
        sv_proto_writer_abort(w);
        return FALSE;
    }
    writer_free(w);
    return TRUE;
}
