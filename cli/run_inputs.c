/* servesim run's inputs (cli/run_inputs.h): which cluster and which workload, and a trace replayed
 * at a scaled rate. */
#include "cli/run_inputs.h"

#include <stdio.h>
#include <string.h>

/* "--a, --b and --c" of the flags given (NULL-terminated pairs: name, given). */
static char *given_flags(const char *const *names, const gboolean *given, size_t n)
{
    GString *g = g_string_new(NULL);
    size_t k = 0, count = 0;
    for (size_t i = 0; i < n; i++)
        count += given[i] != 0;
    for (size_t i = 0; i < n; i++) {
        if (!given[i])
            continue;
        k++;
        g_string_append_printf(g, "%s%s", k == 1 ? "" : k == count ? " and " : ", ", names[i]);
    }
    return g_string_free(g, FALSE);
}

/* Which cluster and which workload (docs/serving.md "Quick form"): --cluster FILE or the quick
 * cluster flags; --workload TRACE (rescaled by --time-scale or --qps) or the generator flags.
 * 0, or exit status 2 with the conflict named. *builtin: nothing given at all (the built-in
 * default study). */
int sv_cli_run_check_inputs(const struct sv_cli_run_inputs *o, gboolean *builtin)
{
    static const char *const shape_names[] = {
        "--model", "--hardware",        "--tp",       "--pp", "--instances",
        "--pd",    "--decode-hardware", "--decode-tp"};
    const gboolean shape[] = {o->model != NULL,
                              o->hardware != NULL,
                              o->tp != 0,
                              o->pp != 0,
                              o->instances != 0,
                              o->pd != NULL,
                              o->decode_hardware != NULL,
                              o->decode_tp != 0};
    static const char *const gen_names[] = {"--requests", "--input-len", "--output-len",
                                            "--arrival"};
    const gboolean gen[] = {o->requests != 0, o->input_len != NULL, o->output_len != NULL,
                            o->arrival != NULL};
    g_autofree char *shape_given = given_flags(shape_names, shape, G_N_ELEMENTS(shape));
    g_autofree char *gen_given = given_flags(gen_names, gen, G_N_ELEMENTS(gen));
    if (o->cluster && *shape_given) {
        fprintf(stderr,
                "servesim run: --cluster cannot be mixed with %s: the cluster file gives the "
                "shape (use one or the other)\n",
                shape_given);
        return 2;
    }
    if (o->workload && *gen_given) {
        fprintf(stderr,
                "servesim run: --workload cannot be mixed with %s: the trace gives the requests "
                "(--time-scale or --qps rescale its arrivals)\n",
                gen_given);
        return 2;
    }
    if (o->time_scale > 0 && !o->workload) {
        fprintf(stderr, "servesim run: --time-scale needs --workload TRACE (generated arrivals "
                        "take --qps)\n");
        return 2;
    }
    if (o->time_scale > 0 && o->qps > 0) {
        fprintf(stderr, "servesim run: --time-scale and --qps both set the trace's rate: give "
                        "one\n");
        return 2;
    }
    if (o->workload && !o->cluster && !*shape_given) {
        fprintf(stderr, "servesim run: --workload needs a cluster: --cluster FILE, or --model "
                        "and --hardware (the quick form)\n");
        return 2;
    }
    gboolean generated = *gen_given || o->qps > 0;
    if (o->cluster && !o->workload && !generated) {
        fprintf(stderr, "servesim run: --cluster needs a workload: --workload FILE, or the "
                        "generator flags (--requests, --qps, --input-len, --output-len, "
                        "--arrival)\n");
        return 2;
    }
    *builtin = !o->cluster && !o->workload && !*shape_given && !generated;
    return 0;
}

/* "P:D" -> two counts (their range is the planner's to check, with its message). 0:0 is refused
 * here: the planner reads it as "no --pd" and would build one combined instance. */
gboolean sv_cli_parse_pd(const char *v, int32_t *p, int32_t *d)
{
    g_auto(GStrv) parts = g_strsplit(v, ":", -1);
    int64_t a, b;
    if (g_strv_length(parts) != 2 || !sv_num_parse_int(parts[0], &a) ||
        !sv_num_parse_int(parts[1], &b) || a < 0 || b < 0 || a > SV_RANGE_DEVICES_MAX ||
        b > SV_RANGE_DEVICES_MAX || (a == 0 && b == 0))
        return FALSE;
    *p = (int32_t)a;
    *d = (int32_t)b;
    return TRUE;
}

/* The --workload trace, rescaled by --time-scale or to --qps (docs/workloads.md "Scaled
 * replay"). A first pass over the file finds the span (--qps) and, for the progress display
 * (`count`), the number of requests: *total, else 0 (unknown). */
sv_wl_source *sv_cli_run_trace(const struct sv_cli_run_inputs *o, gboolean count, uint64_t *total,
                               GError **error)
{
    struct sv_wl_open_opts wo = {.skip_bad_lines = o->skip_bad_lines};
    double factor = o->time_scale;
    *total = 0;
    if (o->qps > 0 || count) {
        struct sv_wl_span span;
        if (!sv_wl_scan(o->workload, &wo, &span, error))
            return NULL;
        *total = span.requests;
        if (o->qps > 0 && !sv_wl_span_rate_scale(&span, o->workload, o->qps, &factor, error)) {
            g_prefix_error(error, "--qps: ");
            return NULL;
        }
        if (o->qps > 0)
            fprintf(stderr,
                    "servesim run: --qps %g: the trace's %" G_GUINT64_FORMAT
                    " arrivals over %.3f s (mean %.4g req/s) replayed at time scale %.6g\n",
                    o->qps, span.items, (double)(span.last_ns - span.first_ns) / 1e9,
                    (double)(span.items - 1) * 1e9 / (double)(span.last_ns - span.first_ns),
                    factor);
    }
    sv_wl_source *src = sv_wl_open(o->workload, &wo, error);
    if (src && factor > 0)
        src = sv_wl_scale_new(src, factor, error);
    return src;
}
