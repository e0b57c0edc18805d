/* ET -> ET / JSON conversion behind `servesim convert`. */
#include "proto/proto_internal.h"

gboolean sv_proto__interrupted(const char *out, uint64_t nodes, GError **error)
{
    g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INTERRUPTED,
                "%s: interrupted after %" G_GUINT64_FORMAT " nodes; not written", out,
                (guint64)nodes);
    return FALSE;
}

static gboolean convert_et(const char *in, const char *out, const volatile sig_atomic_t *interrupt,
                           struct sv_proto_convert_stats *stats, GError **error)
{
    g_autoptr(sv_proto_reader) r = sv_proto_reader_open(in, error);
    if (!r)
        return FALSE;
    sv_proto_reader_set_dep_check(r, SV_PROTO_DEP_COUNT);
    sv_proto_writer *w = sv_proto_writer_open(out, error);
    if (!w)
        return FALSE;
    if (!sv_proto_writer_put_metadata(w, sv_proto_reader_metadata(r), error)) {
        sv_proto_writer_abort(w);
        return FALSE;
    }
    ChakraProtoMsg__Node *n;
    GError *local = NULL;
    uint64_t count = 0;
    while (!(interrupt && *interrupt) && sv_proto_reader_next(r, &n, &local)) {
        gboolean ok = sv_proto_writer_put_node(w, n, &local);
        sv_proto_node_free(n);
        if (!ok)
            break;
        count++;
    }
    if (local) {
        g_propagate_error(error, local);
        sv_proto_writer_abort(w);
        return FALSE;
    }
    if (interrupt && *interrupt) {
        sv_proto_writer_abort(w);
        return sv_proto__interrupted(out, count, error);
    }
    if (!sv_proto_writer_close(w, error))
        return FALSE;
    stats->nodes = count;
    sv_proto_reader_dangling(r, &stats->data_dangling, &stats->ctrl_dangling);
    return TRUE;
}

gboolean sv_proto_convert(const char *in, const char *out, struct sv_proto_convert_stats *stats,
                          GError **error)
{
    return sv_proto_convert_full(in, out, NULL, stats, error);
}

gboolean sv_proto_convert_full(const char *in, const char *out,
                               const volatile sig_atomic_t *interrupt,
                               struct sv_proto_convert_stats *stats, GError **error)
{
    SV_ASSERT(in != NULL && out != NULL);
    struct sv_proto_convert_stats local = {0};
    if (!stats)
        stats = &local;
    *stats = (struct sv_proto_convert_stats){0};
    if (g_str_has_suffix(out, ".json"))
        return sv_proto__json_convert(in, out, SV_PROTO_DEP_COUNT, interrupt, stats, error);
    return convert_et(in, out, interrupt, stats, error);
}
