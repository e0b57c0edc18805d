/* See fuzz_workload_common.h. */
#include "fuzz_workload_common.h"

#include <stdio.h>
#include <stdlib.h>

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "fuzz: " __VA_ARGS__);                                                     \
        fputc('\n', stderr);                                                                       \
        abort();                                                                                   \
    } while (0)

void sv_fuzz_read_trace(const char *path, gboolean skip_bad_lines)
{
    GError *e = NULL;
    struct sv_wl_open_opts o = {.skip_bad_lines = skip_bad_lines};
    sv_wl_source *src = sv_wl_open(path, &o, &e);
    sv_fuzz_check(src != NULL, e, path);
    g_clear_error(&e);
    if (!src)
        return;
    sv_wl_item it = SV_WL_ITEM_INIT;
    sv_time last = 0;
    uint64_t next_id = 0;
    int r;
    while ((r = sv_wl_next(src, &it, &e)) == 1) {
        if (it.n_reqs < 1)
            FAIL("item %" G_GUINT64_FORMAT " has no call", it.index);
        if (it.arrival_ns < last)
            FAIL("item %" G_GUINT64_FORMAT " arrives at %" G_GINT64_FORMAT
                 " ns, before %" G_GINT64_FORMAT,
                 it.index, it.arrival_ns, last);
        last = it.arrival_ns;
        for (size_t k = 0; k < it.n_reqs; k++) {
            const sv_wl_req *q = &it.reqs[k];
            if (q->input_tokens < 1 || q->output_tokens < 1)
                FAIL("request %" G_GUINT64_FORMAT ": %" G_GINT64_FORMAT " input, %" G_GINT64_FORMAT
                     " output tokens",
                     q->request_id, q->input_tokens, q->output_tokens);
            if (q->request_id != next_id)
                FAIL("request id %" G_GUINT64_FORMAT ", expected %" G_GUINT64_FORMAT, q->request_id,
                     next_id);
            if (q->tool_duration_ns < 0)
                FAIL("request %" G_GUINT64_FORMAT ": tool duration %" G_GINT64_FORMAT " ns",
                     q->request_id, q->tool_duration_ns);
            next_id++;
        }
        if (it.reqs[0].arrival_ns != it.arrival_ns)
            FAIL("item %" G_GUINT64_FORMAT ": first call arrives at %" G_GINT64_FORMAT
                 ", the item at %" G_GINT64_FORMAT,
                 it.index, it.reqs[0].arrival_ns, it.arrival_ns);
    }
    sv_fuzz_check(r == 0, e, path);
    g_clear_error(&e);
    if (sv_wl_next(src, &it, &e) != r)
        FAIL("a second call after the end does not return %d", r);
    g_clear_error(&e);
    sv_wl_item_clear(&it);
    sv_wl_source_free(src);
}
