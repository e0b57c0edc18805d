/* Streaming Chakra ET reader: varint32-framed protobuf messages, optionally gzip-compressed
 * (CHAKRA_ET.md 1.2). Memory is one frame plus fixed I/O buffers; a frame's buffer grows only as
 * its bytes actually arrive, so a corrupt length cannot make us allocate gigabytes. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "core/core.h"
#include "proto/proto_internal.h"

GQuark sv_proto_error_quark(void)
{
    return g_quark_from_static_string("servesim-proto-error-quark");
}

/* File read granularity. */
#define SV_PROTO_CHUNK (64 * 1024)

/* The node ids seen (a set: sv_hash_mix64(id) -> 1). Lookup only, never iterated, so its order
 * cannot leak. */
static gboolean ids_has(const sv_u64map *ids, uint64_t id)
{
    return sv_u64map_get(ids, sv_hash_mix64(id), 0) != 0;
}

/* A reference not resolvable when it was read (parent not seen yet). */
struct pending_ref {
    uint64_t parent;
    uint64_t index;  /* message index of the referencing node */
    uint64_t offset; /* its byte offset */
    gboolean ctrl;
};

struct sv_proto_reader {
    char *path;
    FILE *fp;
    gboolean gzip;
    z_stream zs;
    int zs_state;       /* 0 no inflater, 1 inside a gzip member, 2 between members */
    gboolean src_eof;   /* no more decompressed bytes will come */
    uint64_t file_size; /* plain files: bound for frame lengths */

    uint8_t *inbuf; /* compressed input (gzip only) */

    /* Decompressed bytes [pos, end) of buf are unread; buf[0] is stream offset base. */
    uint8_t *buf;
    size_t cap, pos, end;
    uint64_t base; /* stream offset of buf[0] */

    uint64_t index;  /* of the last message returned */
    uint64_t offset; /* of the last message returned */
    uint64_t next_index;
    gboolean done;

    ChakraProtoMsg__GlobalMetadata *md;
    uint8_t *md_raw;
    size_t md_raw_len;

    sv_proto_dep_flags deps;
    sv_u64map ids;
    GArray *pending; /* struct pending_ref, in file order */
    gboolean dangling_done;
    uint64_t dangling_data, dangling_ctrl;
};

/* Field number 0 anywhere in a decoded message. Protobuf reserves it, and protobuf-c's decoder
 * refuses it only when the tag's first byte is 0x00: a tag written in two bytes (0x80 0x00) is
 * accepted and kept as an unknown field, which the encoder then writes as 0x00, so the message
 * would not read back after servesim re-encoded it (convert, a DAG's save). Such bytes are
 * refused as Chakra's protobuf reader (Google's) refuses them. */
static gboolean has_field_zero(const ProtobufCMessage *m)
{
    for (unsigned i = 0; i < m->n_unknown_fields; i++)
        if (m->unknown_fields[i].tag == 0)
            return TRUE;
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned f = 0; f < d->n_fields; f++) {
        const ProtobufCFieldDescriptor *fd = &d->fields[f];
        if (fd->type != PROTOBUF_C_TYPE_MESSAGE)
            continue;
        const char *base = (const char *)m;
        if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)(base + fd->quantifier_offset);
            ProtobufCMessage *const *v = *(ProtobufCMessage *const *const *)(base + fd->offset);
            for (size_t k = 0; k < n; k++)
                if (v[k] && has_field_zero(v[k]))
                    return TRUE;
        } else {
            if (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
                uint32_t which = *(const uint32_t *)(base + fd->quantifier_offset);
                if (which != fd->id)
                    continue;
            }
            const ProtobufCMessage *v = *(ProtobufCMessage *const *)(base + fd->offset);
            if (v && has_field_zero(v))
                return TRUE;
        }
    }
    return FALSE;
}

/* Every field of the schema at its default (unknown fields aside). */
static gboolean empty_but_unknown(ChakraProtoMsg__Node *n)
{
    unsigned nu = n->base.n_unknown_fields;
    n->base.n_unknown_fields = 0;
    gboolean empty = chakra_proto_msg__node__get_packed_size(n) == 0;
    n->base.n_unknown_fields = nu;
    return empty;
}

static void set_frame_error(const sv_proto_reader *r, GError **error, int code, uint64_t index,
                            uint64_t offset, const char *what)
{
    g_set_error(error, SV_PROTO_ERROR, code,
                "%s: %s: message %" G_GUINT64_FORMAT " at byte offset %" G_GUINT64_FORMAT, what,
                r->path, index, offset);
}

/* Append up to `want` decompressed bytes at buf[end]; returns bytes added (0 at EOF), -1 on
 * error. */
static gssize src_read(sv_proto_reader *r, size_t want, GError **error)
{
    uint8_t *dst = r->buf + r->end;
    if (!r->gzip) {
        size_t n = fread(dst, 1, want, r->fp);
        if (n == 0 && ferror(r->fp)) {
            g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_IO, "cannot read: %s: %s", r->path,
                        g_strerror(errno));
            return -1;
        }
        if (n == 0)
            r->src_eof = TRUE;
        return (gssize)n;
    }
    r->zs.next_out = dst;
    r->zs.avail_out = (uInt)want;
    while (r->zs.avail_out == want) {
        if (r->zs.avail_in == 0) {
            size_t n = fread(r->inbuf, 1, SV_PROTO_CHUNK, r->fp);
            if (n == 0 && ferror(r->fp)) {
                g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_IO, "cannot read: %s: %s",
                            r->path, g_strerror(errno));
                return -1;
            }
            if (n == 0) {
                /* Input ended inside a gzip member (a member end resets the stream below). */
                if (r->zs.total_in == 0 && r->zs.total_out == 0 && r->zs_state == 2) {
                    r->src_eof = TRUE; /* clean end after a complete member */
                    return 0;
                }
                char *what =
                    g_strdup_printf("truncated gzip stream (input ends after %" G_GUINT64_FORMAT
                                    " decompressed bytes)",
                                    (guint64)(r->base + r->end));
                set_frame_error(r, error, SV_PROTO_ERROR_GZIP, r->next_index, r->base + r->pos,
                                what);
                g_free(what);
                return -1;
            }
            r->zs.next_in = r->inbuf;
            r->zs.avail_in = (uInt)n;
        }
        int rc = inflate(&r->zs, Z_NO_FLUSH);
        if (rc == Z_STREAM_END) {
            /* gzip allows several concatenated members (RFC 1952 2.2): continue with the next
             * one if input remains; otherwise a clean end (zs_state 2). */
            inflateReset(&r->zs);
            r->zs_state = 2;
            continue;
        }
        if (rc != Z_OK && rc != Z_BUF_ERROR) {
            char *what = g_strdup_printf("corrupt gzip stream (%s, after %" G_GUINT64_FORMAT
                                         " decompressed bytes)",
                                         r->zs.msg ? r->zs.msg : zError(rc),
                                         (guint64)(r->base + r->end + (want - r->zs.avail_out)));
            set_frame_error(r, error, SV_PROTO_ERROR_GZIP, r->next_index, r->base + r->pos, what);
            g_free(what);
            return -1;
        }
        if (r->zs.total_in > 0)
            r->zs_state = 1; /* inside a member */
    }
    return (gssize)(want - r->zs.avail_out);
}

/* Make at least `need` unread bytes available if the stream has them. Returns the number of
 * unread bytes (< need only at EOF), or -1 on error. */
static gssize fill(sv_proto_reader *r, size_t need, GError **error)
{
    while (r->end - r->pos < need && !r->src_eof) {
        if (r->pos > 0) { /* compact: drop consumed bytes */
            memmove(r->buf, r->buf + r->pos, r->end - r->pos);
            r->base += r->pos;
            r->end -= r->pos;
            r->pos = 0;
        }
        if (r->cap - r->end < SV_PROTO_CHUNK) {
            r->cap = MAX(r->cap * 2, r->end + SV_PROTO_CHUNK);
            r->buf = g_realloc(r->buf, r->cap);
        }
        gssize n = src_read(r, r->cap - r->end, error);
        if (n < 0)
            return -1;
        r->end += (size_t)n;
    }
    return (gssize)(r->end - r->pos);
}

/* Read one frame. Returns 1 with the frame bytes in *data, *len (pointing into buf, consumed), 0 at
 * clean EOF, -1 on error. Sets r->index/r->offset for the frame. */
static int read_frame(sv_proto_reader *r, const uint8_t **data, size_t *len, GError **error)
{
    uint64_t index = r->next_index;
    gssize avail = fill(r, SV_PROTO_VARINT32_MAX, error);
    if (avail < 0)
        return -1;
    uint64_t offset = r->base + r->pos;
    if (avail == 0)
        return 0;
    const uint8_t *p = r->buf + r->pos;
    uint64_t value = 0;
    size_t nb = 0;
    for (;;) {
        if (nb == SV_PROTO_VARINT32_MAX) {
            set_frame_error(r, error, SV_PROTO_ERROR_BAD_VARINT, index, offset,
                            "length prefix longer than 5 bytes");
            return -1;
        }
        if ((gssize)nb >= avail) {
            set_frame_error(r, error, SV_PROTO_ERROR_TRUNCATED, index, offset,
                            "truncated length prefix (end of file inside the varint)");
            return -1;
        }
        uint8_t b = p[nb];
        value |= (uint64_t)(b & 0x7f) << (7 * nb);
        nb++;
        if (!(b & 0x80))
            break;
    }
    if (value > UINT32_MAX) {
        char *what = g_strdup_printf("length prefix %" G_GUINT64_FORMAT " overflows 32 bits",
                                     (guint64)value);
        set_frame_error(r, error, SV_PROTO_ERROR_BAD_VARINT, index, offset, what);
        g_free(what);
        return -1;
    }
    if (!r->gzip && offset + nb + value > r->file_size) {
        char *what = g_strdup_printf("frame length %" G_GUINT64_FORMAT
                                     " runs past end of file (%" G_GUINT64_FORMAT " bytes left)",
                                     (guint64)value, (guint64)(r->file_size - offset - nb));
        set_frame_error(r, error, SV_PROTO_ERROR_TRUNCATED, index, offset, what);
        g_free(what);
        return -1;
    }
    avail = fill(r, nb + (size_t)value, error);
    if (avail < 0)
        return -1;
    if ((size_t)avail < nb + value) {
        char *what = g_strdup_printf("frame length %" G_GUINT64_FORMAT
                                     " runs past end of file (%" G_GUINT64_FORMAT " bytes left)",
                                     (guint64)value, (guint64)((size_t)avail - nb));
        set_frame_error(r, error, SV_PROTO_ERROR_TRUNCATED, index, offset, what);
        g_free(what);
        return -1;
    }
    *data = r->buf + r->pos + nb;
    *len = (size_t)value;
    r->pos += nb + (size_t)value;
    r->index = index;
    r->offset = offset;
    r->next_index = index + 1;
    return 1;
}

sv_proto_reader *sv_proto_reader_open(const char *path, GError **error)
{
    SV_ASSERT(path != NULL);
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_IO, "cannot open: %s: %s", path,
                    g_strerror(errno));
        return NULL;
    }
    sv_proto_reader *r = g_new0(sv_proto_reader, 1);
    r->path = g_strdup(path);
    r->fp = fp;
    r->pending = g_array_new(FALSE, FALSE, sizeof(struct pending_ref));
    struct stat st;
    if (fstat(fileno(fp), &st) == 0)
        r->file_size = (uint64_t)st.st_size;

    /* gzip is recognised by its magic 1f 8b (RFC 1952), as Chakra's ProtoInputStream does. */
    uint8_t magic[2];
    size_t nm = fread(magic, 1, 2, fp);
    if (nm == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
        r->gzip = TRUE;
        r->inbuf = g_malloc(SV_PROTO_CHUNK);
        memcpy(r->inbuf, magic, 2);
        r->zs.next_in = r->inbuf;
        r->zs.avail_in = 2;
        if (inflateInit2(&r->zs, 15 + 16) != Z_OK) { /* 15 + 16: zlib's "gzip only" mode */
            g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_GZIP, "cannot start inflate: %s",
                        path);
            sv_proto_reader_close(r);
            return NULL;
        }
        r->zs_state = 1;
    } else if (fseek(fp, 0, SEEK_SET) != 0) {
        g_set_error(error, SV_PROTO_ERROR, SV_PROTO_ERROR_IO, "cannot seek: %s: %s", path,
                    g_strerror(errno));
        sv_proto_reader_close(r);
        return NULL;
    }

    const uint8_t *data = NULL;
    size_t len = 0;
    int rc = read_frame(r, &data, &len, error);
    if (rc == 0) {
        set_frame_error(r, error, SV_PROTO_ERROR_TRUNCATED, 0, 0, "empty file (no GlobalMetadata)");
        rc = -1;
    }
    if (rc < 0) {
        sv_proto_reader_close(r);
        return NULL;
    }
    r->md = chakra_proto_msg__global_metadata__unpack(NULL, len, data);
    if (!r->md || has_field_zero(&r->md->base)) {
        char *what = g_strdup_printf("undecodable GlobalMetadata protobuf (%zu bytes%s)", len,
                                     r->md ? ", field number 0" : "");
        set_frame_error(r, error, SV_PROTO_ERROR_BAD_MESSAGE, 0, 0, what);
        g_free(what);
        sv_proto_reader_close(r);
        return NULL;
    }
    r->md_raw = g_malloc(len ? len : 1); /* never NULL, even for an empty GlobalMetadata */
    if (len)
        memcpy(r->md_raw, data, len);
    r->md_raw_len = len;
    return r;
}

void sv_proto_reader_close(sv_proto_reader *r)
{
    if (!r)
        return;
    if (r->fp)
        fclose(r->fp);
    if (r->zs_state)
        inflateEnd(&r->zs);
    if (r->md)
        chakra_proto_msg__global_metadata__free_unpacked(r->md, NULL);
    g_free(r->md_raw);
    g_free(r->inbuf);
    g_free(r->buf);
    g_free(r->path);
    sv_u64map_clear(&r->ids);
    g_array_unref(r->pending);
    g_free(r);
}

void sv_proto_reader_set_dep_check(sv_proto_reader *r, sv_proto_dep_flags flags)
{
    SV_ASSERT(r != NULL && r->next_index <= 1);
    r->deps = flags;
}

gboolean sv_proto_reader_is_gzip(const sv_proto_reader *r)
{
    return r->gzip;
}

const ChakraProtoMsg__GlobalMetadata *sv_proto_reader_metadata(const sv_proto_reader *r)
{
    return r->md;
}

const uint8_t *sv_proto_reader_metadata_raw(const sv_proto_reader *r, size_t *len)
{
    *len = r->md_raw_len;
    return r->md_raw;
}

uint64_t sv_proto_reader_index(const sv_proto_reader *r)
{
    return r->index;
}

uint64_t sv_proto_reader_offset(const sv_proto_reader *r)
{
    return r->offset;
}

uint64_t sv_proto_reader_bytes(const sv_proto_reader *r)
{
    return r->base + r->pos;
}

static void track_refs(sv_proto_reader *r, const uint64_t *ids, size_t n, gboolean ctrl)
{
    for (size_t i = 0; i < n; i++) {
        if (ids_has(&r->ids, ids[i]))
            continue;
        struct pending_ref p = {ids[i], r->index, r->offset, ctrl};
        g_array_append_val(r->pending, p);
    }
}

/* At EOF: resolve pending references; error for the first dangling one of a checked kind. */
static gboolean finish_deps(sv_proto_reader *r, GError **error)
{
    if (r->dangling_done)
        return TRUE;
    r->dangling_done = TRUE;
    const struct pending_ref *first = NULL;
    for (guint i = 0; i < r->pending->len; i++) {
        const struct pending_ref *p = &g_array_index(r->pending, struct pending_ref, i);
        if (ids_has(&r->ids, p->parent))
            continue;
        if (p->ctrl)
            r->dangling_ctrl++;
        else
            r->dangling_data++;
        sv_proto_dep_flags kind = p->ctrl ? SV_PROTO_DEP_CHECK_CTRL : SV_PROTO_DEP_CHECK_DATA;
        if (!first && (r->deps & kind))
            first = p;
    }
    if (first) {
        char *what = g_strdup_printf(
            "%s dependency on node id %" G_GUINT64_FORMAT " which is not in the file "
            "(%" G_GUINT64_FORMAT " dangling data_deps, %" G_GUINT64_FORMAT " dangling ctrl_deps)",
            first->ctrl ? "ctrl_deps" : "data_deps", (guint64)first->parent,
            (guint64)r->dangling_data, (guint64)r->dangling_ctrl);
        set_frame_error(r, error, SV_PROTO_ERROR_DANGLING_DEP, first->index, first->offset, what);
        g_free(what);
        return FALSE;
    }
    return TRUE;
}

gboolean sv_proto_reader_next_raw(sv_proto_reader *r, const uint8_t **data, size_t *len,
                                  GError **error)
{
    SV_ASSERT(r != NULL && data != NULL && len != NULL);
    if (r->done)
        return FALSE;
    int rc = read_frame(r, data, len, error);
    if (rc <= 0) {
        r->done = TRUE;
        if (rc == 0 && r->deps)
            finish_deps(r, error); /* sets the error for a dangling dependency */
        return FALSE;
    }
    if (*len == 0) {
        r->done = TRUE;
        set_frame_error(r, error, SV_PROTO_ERROR_EMPTY_NODE, r->index, r->offset,
                        "zero-length node frame (Chakra's readers treat it as end of file)");
        return FALSE;
    }
    return TRUE;
}

gboolean sv_proto_reader_next(sv_proto_reader *r, ChakraProtoMsg__Node **node, GError **error)
{
    SV_ASSERT(node != NULL);
    *node = NULL;
    const uint8_t *data;
    size_t len;
    if (!sv_proto_reader_next_raw(r, &data, &len, error))
        return FALSE;
    ChakraProtoMsg__Node *n = chakra_proto_msg__node__unpack(NULL, len, data);
    if (!n || has_field_zero(&n->base)) {
        r->done = TRUE;
        char *what = g_strdup_printf("undecodable Node protobuf (%zu bytes%s)", len,
                                     n ? ", field number 0" : "");
        sv_proto_node_free(n);
        set_frame_error(r, error, SV_PROTO_ERROR_BAD_MESSAGE, r->index, r->offset, what);
        g_free(what);
        return FALSE;
    }
    if (n->id == 0 && empty_but_unknown(n)) {
        /* Only default values ("id: 0" written out, fields of a later schema): the empty node,
         * which servesim cannot write back (the DAG keeps known fields only; the empty node
         * encodes to a zero-length frame, the end for Chakra's readers). */
        r->done = TRUE;
        sv_proto_node_free(n);
        set_frame_error(r, error, SV_PROTO_ERROR_EMPTY_NODE, r->index, r->offset,
                        "node with every known field at its default (it encodes as a "
                        "zero-length frame, which Chakra's readers treat as end of file)");
        return FALSE;
    }
    if (r->deps) {
        sv_u64map_put(&r->ids, sv_hash_mix64(n->id), 1);
        track_refs(r, n->data_deps, n->n_data_deps, FALSE);
        track_refs(r, n->ctrl_deps, n->n_ctrl_deps, TRUE);
    }
    *node = n;
    return TRUE;
}

gboolean sv_proto_reader_dangling(const sv_proto_reader *r, uint64_t *data_refs,
                                  uint64_t *ctrl_refs)
{
    if (!r->deps || !r->dangling_done)
        return FALSE;
    if (data_refs)
        *data_refs = r->dangling_data;
    if (ctrl_refs)
        *ctrl_refs = r->dangling_ctrl;
    return TRUE;
}
