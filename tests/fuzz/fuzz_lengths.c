/* Fuzz target: length distribution files (`--input-len empirical:FILE[:COLUMN]`, a CSV with a
 * header row, Vidur's and Sarathi's length_distributions/ layout). One input is one CSV file,
 * read for both sides (joint rows) and drawn from by a generator of a few requests. */
#include "fuzz_workload_common.h"

#include <stdio.h>
#include <stdlib.h>

static void generate(const char *spec_in, const char *spec_out, const char *path)
{
    GError *e = NULL;
    struct sv_wl_gen_cfg g = {.seed = 1, .count = 16};
    if (!sv_wl_arrival_parse("poisson", 10.0, &g.arrival, &e) ||
        !sv_wl_len_parse(spec_in, TRUE, &g.input_len, &e) ||
        !sv_wl_len_parse(spec_out, FALSE, &g.output_len, &e)) {
        fprintf(stderr, "fuzz: spec: %s\n", e->message);
        abort();
    }
    sv_wl_source *src = sv_wl_generator_new(&g, &e);
    sv_wl_len_clear(&g.input_len);
    sv_wl_len_clear(&g.output_len);
    sv_fuzz_check(src != NULL, e, path);
    g_clear_error(&e);
    if (!src)
        return;
    sv_wl_item it = SV_WL_ITEM_INIT;
    uint64_t n = 0;
    int r;
    while ((r = sv_wl_next(src, &it, &e)) == 1) {
        if (it.reqs[0].input_tokens < 1 || it.reqs[0].output_tokens < 1) {
            fprintf(stderr, "fuzz: drew %" G_GINT64_FORMAT " input, %" G_GINT64_FORMAT " output\n",
                    it.reqs[0].input_tokens, it.reqs[0].output_tokens);
            abort();
        }
        n++;
    }
    if (r != 0 || n != 16) {
        fprintf(stderr, "fuzz: a generator of 16 requests gave %" G_GUINT64_FORMAT ": %s\n", n,
                e ? e->message : "");
        abort();
    }
    sv_wl_item_clear(&it);
    sv_wl_source_free(src);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = sv_fuzz_input_file(data, size, "lengths.csv");
    g_autofree char *in = g_strconcat("empirical:", path, NULL);
    g_autofree char *in_col = g_strconcat("empirical:", path, ":num_prefill_tokens", NULL);
    g_autofree char *out_col = g_strconcat("empirical:", path, ":num_decode_tokens", NULL);
    generate(in, in, path);          /* default columns, one row for both sides */
    generate(in_col, out_col, path); /* named columns (two files as far as the spec goes) */
    return 0;
}
