/* Synthetic workloads: arrival processes and length distributions, seeded through named RNG
 * streams so that the same (seed, name) always gives the same requests. */
#include "workloads/workloads_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/sharegpt_lengths.inc"

/* vidur-sharegpt fallback moments, computed from SV_WL_VIDUR_SHAREGPT_LENGTHS (30,731 rows; Python
 * statistics.mean / pstdev over num_prefill_tokens and num_decode_tokens). The file's README
 * lists the same means (2340 / 439). */
#define VIDUR_SHAREGPT_INPUT_MEAN 2340.03
#define VIDUR_SHAREGPT_INPUT_SD 2088.82
#define VIDUR_SHAREGPT_OUTPUT_MEAN 438.71
#define VIDUR_SHAREGPT_OUTPUT_SD 265.64

#define DEFAULT_INPUT_COLUMN "num_prefill_tokens"
#define DEFAULT_OUTPUT_COLUMN "num_decode_tokens"

void sv_wl_len_clear(struct sv_wl_len *len)
{
    if (!len)
        return;
    g_free(len->path);
    g_free(len->column);
    memset(len, 0, sizeof *len);
}

void sv_wl_len_sharegpt(struct sv_wl_len *input_len, struct sv_wl_len *output_len)
{
    sv_wl_len_clear(input_len);
    sv_wl_len_clear(output_len);
    input_len->kind = output_len->kind = SV_WL_LEN_QUANTILES;
    input_len->quantiles = sv_wl_sharegpt_input_q;
    output_len->quantiles = sv_wl_sharegpt_output_q;
    input_len->n_quantiles = output_len->n_quantiles = SV_WL_SHAREGPT_N_Q;
}

void sv_wl_len_vidur_sharegpt(struct sv_wl_len *input_len, struct sv_wl_len *output_len)
{
    sv_wl_len_clear(input_len);
    sv_wl_len_clear(output_len);
    if (g_file_test(SV_WL_VIDUR_SHAREGPT_LENGTHS, G_FILE_TEST_IS_REGULAR)) {
        input_len->kind = output_len->kind = SV_WL_LEN_EMPIRICAL;
        input_len->path = g_strdup(SV_WL_VIDUR_SHAREGPT_LENGTHS);
        output_len->path = g_strdup(SV_WL_VIDUR_SHAREGPT_LENGTHS);
        return;
    }
    input_len->kind = output_len->kind = SV_WL_LEN_NORMAL;
    input_len->mean = VIDUR_SHAREGPT_INPUT_MEAN;
    input_len->sd = VIDUR_SHAREGPT_INPUT_SD;
    output_len->mean = VIDUR_SHAREGPT_OUTPUT_MEAN;
    output_len->sd = VIDUR_SHAREGPT_OUTPUT_SD;
}

/* ---- spec strings ----------------------------------------------------------------------- */

/* Spec numbers are decimal text (core's sv_num_parse_*: no "0x10", "inf" or "nan"). */
static gboolean parse_double(const char *s, double *out)
{
    return sv_num_parse_double(s, out);
}

static gboolean parse_i64(const char *s, int64_t *out)
{
    return sv_num_parse_int(s, out);
}

/* Ranges of the generator's parameters (docs/workloads.md, docs/reliability.md): a rate from one
 * request per 11.6 days to 10^9 per second; a gamma CV up to 1000 (shape 1/CV^2 >= 10^-6);
 * lengths and their normal mean and SD in tokens (SV_RANGE_TOKENS). */
#define RANGE_RATE SV_RANGE_D(1e-6, 1e9, "req/s")
#define RANGE_CV SV_RANGE_D_OPEN(0, 1000, NULL)
#define RANGE_LEN_D SV_RANGE_D(1, (double)SV_RANGE_TOKENS_MAX, "tokens")
#define RANGE_SD_D SV_RANGE_D(0, (double)SV_RANGE_TOKENS_MAX, "tokens")

/* A range error in the workloads' domain (SV_WL_ERROR_INVALID), naming `what`. */
static gboolean in_range(const char *what, double v, struct sv_range_double r, GError **error)
{
    GError *e = NULL;
    if (sv_range_check_double(what, v, r, &e))
        return TRUE;
    g_set_error_literal(error, SV_WL_ERROR, SV_WL_ERROR_INVALID, e->message);
    g_error_free(e);
    return FALSE;
}

/* A length distribution's numbers within SV_RANGE_TOKENS (the normal's mean and SD too: a draw
 * is clamped into [1, max], but a mean of 1e300 says the spec is wrong). */
static gboolean check_len_range(const struct sv_wl_len *l, const char *what, GError **error)
{
    switch (l->kind) {
    case SV_WL_LEN_FIXED:
        return in_range(what, (double)l->value, RANGE_LEN_D, error);
    case SV_WL_LEN_UNIFORM:
        return in_range(what, (double)l->lo, RANGE_LEN_D, error) &&
               in_range(what, (double)l->hi, RANGE_LEN_D, error);
    case SV_WL_LEN_NORMAL:
        return in_range(
                   what, l->mean,
                   SV_RANGE_D(-(double)SV_RANGE_TOKENS_MAX, (double)SV_RANGE_TOKENS_MAX, "tokens"),
                   error) &&
               in_range(what, l->sd, RANGE_SD_D, error);
    case SV_WL_LEN_QUANTILES:
        return in_range(what, l->quantiles[l->n_quantiles - 1], RANGE_LEN_D, error);
    default:
        return TRUE;
    }
}

gboolean sv_wl_arrival_parse(const char *spec, double rate_per_s, struct sv_wl_arrival *out,
                             GError **error)
{
    memset(out, 0, sizeof *out);
    out->rate_per_s = rate_per_s;
    if (g_strcmp0(spec, "poisson") == 0) {
        out->kind = SV_WL_ARRIVAL_POISSON;
        out->cv = 1.0;
    } else if (g_strcmp0(spec, "fixed") == 0) {
        out->kind = SV_WL_ARRIVAL_FIXED;
    } else if (spec && g_str_has_prefix(spec, "trace:") && spec[6] != '\0') {
        out->kind = SV_WL_ARRIVAL_TRACE;
        out->trace_path = spec + 6;
    } else if (spec && g_str_has_prefix(spec, "gamma:")) {
        out->kind = SV_WL_ARRIVAL_GAMMA;
        if (!parse_double(spec + 6, &out->cv) || out->cv <= 0) {
            g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_INVALID,
                        "arrival '%s': the coefficient of variation must be a number > 0", spec);
            return FALSE;
        }
        g_autofree char *what = g_strdup_printf("arrival '%s': the coefficient of variation", spec);
        if (!in_range(what, out->cv, RANGE_CV, error))
            return FALSE;
    } else {
        g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_INVALID,
                    "arrival '%s': expected poisson, gamma:CV, fixed or trace:PATH",
                    spec ? spec : "(null)");
        return FALSE;
    }
    if (!(rate_per_s > 0) || !isfinite(rate_per_s)) {
        g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_INVALID,
                    "arrival '%s': rate %g req/s must be > 0", spec, rate_per_s);
        return FALSE;
    }
    g_autofree char *what = g_strdup_printf("arrival '%s': the rate", spec);
    return in_range(what, rate_per_s, RANGE_RATE, error);
}

gboolean sv_wl_len_parse(const char *spec, gboolean is_input, struct sv_wl_len *out, GError **error)
{
    sv_wl_len_clear(out);
    if (!spec)
        spec = "";
    g_auto(GStrv) parts = g_strsplit(spec, ":", 3);
    guint n = g_strv_length(parts);
    gboolean ok = FALSE;
    if (n == 1 && parse_i64(parts[0], &out->value)) {
        out->kind = SV_WL_LEN_FIXED;
        ok = out->value >= 1;
    } else if (n == 2 && strcmp(parts[0], "fixed") == 0) {
        out->kind = SV_WL_LEN_FIXED;
        ok = parse_i64(parts[1], &out->value) && out->value >= 1;
    } else if (n == 3 && strcmp(parts[0], "uniform") == 0) {
        out->kind = SV_WL_LEN_UNIFORM;
        ok = parse_i64(parts[1], &out->lo) && parse_i64(parts[2], &out->hi) && out->lo >= 1 &&
             out->hi >= out->lo;
    } else if (n == 3 && strcmp(parts[0], "normal") == 0) {
        out->kind = SV_WL_LEN_NORMAL;
        ok = parse_double(parts[1], &out->mean) && parse_double(parts[2], &out->sd) && out->sd >= 0;
    } else if (n >= 2 && strcmp(parts[0], "empirical") == 0) {
        /* PATH[:COLUMN]: a trailing ":COLUMN" is split off only when what precedes it names a
         * .csv file, so paths containing ':' still work. */
        out->kind = SV_WL_LEN_EMPIRICAL;
        const char *rest = spec + strlen("empirical:");
        const char *colon = strrchr(rest, ':');
        if (colon && colon > rest && colon - rest >= 4 &&
            g_ascii_strncasecmp(colon - 4, ".csv", 4) == 0) {
            out->path = g_strndup(rest, (gsize)(colon - rest));
            out->column = g_strdup(colon + 1);
            ok = *out->column != '\0';
        } else {
            out->path = g_strdup(rest);
            ok = *out->path != '\0';
        }
    } else if (n == 1 &&
               (strcmp(parts[0], "sharegpt") == 0 || strcmp(parts[0], "vidur-sharegpt") == 0)) {
        struct sv_wl_len in = {0}, outl = {0};
        if (strcmp(parts[0], "sharegpt") == 0)
            sv_wl_len_sharegpt(&in, &outl);
        else
            sv_wl_len_vidur_sharegpt(&in, &outl);
        if (is_input) {
            *out = in;
            sv_wl_len_clear(&outl);
        } else {
            *out = outl;
            sv_wl_len_clear(&in);
        }
        ok = TRUE;
    }
    if (!ok) {
        sv_wl_len_clear(out);
        g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_INVALID,
                    "length '%s': expected N, fixed:N, uniform:A:B (1 <= A <= B), "
                    "normal:MEAN:SD (SD >= 0), empirical:PATH[:COLUMN], sharegpt or "
                    "vidur-sharegpt",
                    spec);
        return FALSE;
    }
    g_autofree char *what = g_strdup_printf("length '%s'", spec);
    if (!check_len_range(out, what, error)) {
        sv_wl_len_clear(out);
        return FALSE;
    }
    return TRUE;
}

/* ---- empirical files -------------------------------------------------------------------- */

/* Load up to two integer columns of a CSV file with a header row. Values must be >= 1. The
 * distribution file is sampled at random, so its values are kept (30k rows of ShareGPT = 240 KB
 * per column); the text is read line by line (core's CSV reader), never whole (a length table,
 * not a request trace, but it may be large). */
static gboolean load_columns(const char *path, const char *const *cols, int ncols, GArray **out,
                             GError **error)
{
    GError *e = NULL;
    g_autoptr(sv_csv) in = sv_csv_open(path, &e);
    if (!in) {
        g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_IO, "cannot read length file: %s", e->message);
        g_error_free(e);
        return FALSE;
    }
    if (sv_csv_n_cols(in) == 0) {
        g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_INVALID, "%s: empty length file", path);
        return FALSE;
    }
    int idx[2] = {-1, -1};
    int hdr_n = (int)sv_csv_n_cols(in);
    for (int c = 0; c < ncols; c++) {
        if ((idx[c] = sv_csv_col(in, cols[c])) < 0) {
            g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_INVALID,
                        "%s:%" G_GUINT64_FORMAT ": no column '%s' in the header", path,
                        sv_csv_header_line(in), cols[c]);
            return FALSE;
        }
    }
    for (int c = 0; c < ncols; c++)
        out[c] = g_array_new(FALSE, FALSE, sizeof(int64_t));
    while (sv_csv_next(in, &e)) {
        uint64_t ln = sv_csv_line(in);
        guint nf = sv_csv_n_fields(in);
        if ((int)nf != hdr_n) {
            g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_BAD_LINE,
                        "%s:%" G_GUINT64_FORMAT ": %u fields, the header has %d", path, ln, nf,
                        hdr_n);
            goto fail;
        }
        for (int c = 0; c < ncols; c++) {
            int64_t v;
            const char *f = sv_csv_field(in, (guint)idx[c]);
            if (!parse_i64(f, &v) || v < 1 || v > SV_RANGE_TOKENS_MAX) {
                g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_BAD_LINE,
                            "%s:%" G_GUINT64_FORMAT
                            ": column '%s' must be an integer in [1, %" G_GINT64_FORMAT
                            "] (tokens), not "
                            "'%s'",
                            path, ln, cols[c], SV_RANGE_TOKENS_MAX, f);
                goto fail;
            }
            g_array_append_val(out[c], v);
        }
    }
    if (e) {
        g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_IO, "cannot read length file: %s", e->message);
        g_error_free(e);
        goto fail;
    }
    if (out[0]->len == 0) {
        g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_INVALID, "%s: no rows", path);
        goto fail;
    }
    return TRUE;
fail:
    for (int c = 0; c < ncols; c++)
        g_clear_pointer(&out[c], g_array_unref);
    return FALSE;
}

/* ---- the generator source --------------------------------------------------------------- */

typedef struct {
    struct sv_wl_gen_cfg cfg; /* strings below are owned copies */
    char *name, *model;
    sv_rng *arr_rng, *in_rng, *out_rng, *row_rng;
    GArray *in_vals, *out_vals; /* empirical columns */
    GArray *gaps;               /* trace arrival: the trace's gaps (double s), already scaled */
    gboolean joint;             /* both from the same row */
    double t_s;                 /* arrival clock, seconds after start_ns */
    uint64_t made;
} gen_state;

static void gen_free(void *p)
{
    gen_state *g = p;
    if (!g)
        return;
    sv_wl_len_clear(&g->cfg.input_len);
    sv_wl_len_clear(&g->cfg.output_len);
    g_free(g->name);
    g_free(g->model);
    sv_rng_free(g->arr_rng);
    sv_rng_free(g->in_rng);
    sv_rng_free(g->out_rng);
    sv_rng_free(g->row_rng);
    if (g->in_vals)
        g_array_unref(g->in_vals);
    if (g->out_vals)
        g_array_unref(g->out_vals);
    if (g->gaps)
        g_array_unref(g->gaps);
    g_free(g);
}

static gboolean check_len(const struct sv_wl_len *l, const char *which, GError **error)
{
    gboolean ok = TRUE;
    switch (l->kind) {
    case SV_WL_LEN_FIXED:
        ok = l->value >= 1;
        break;
    case SV_WL_LEN_UNIFORM:
        ok = l->lo >= 1 && l->hi >= l->lo;
        break;
    case SV_WL_LEN_NORMAL:
        ok = isfinite(l->mean) && isfinite(l->sd) && l->sd >= 0;
        break;
    case SV_WL_LEN_EMPIRICAL:
        ok = l->path && *l->path;
        break;
    case SV_WL_LEN_QUANTILES:
        ok = l->quantiles && l->n_quantiles >= 2 && l->quantiles[0] >= 1;
        for (int i = 1; ok && i < l->n_quantiles; i++)
            ok = l->quantiles[i] >= l->quantiles[i - 1] && isfinite(l->quantiles[i]);
        break;
    default:
        ok = FALSE;
    }
    if (!ok)
        g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_INVALID,
                    "generator %s length: invalid parameters", which);
    return ok;
}

static int64_t draw_len(const struct sv_wl_len *l, sv_rng *rng, GArray *vals, int64_t row)
{
    int64_t v = 1;
    switch (l->kind) {
    case SV_WL_LEN_FIXED:
        v = l->value;
        break;
    case SV_WL_LEN_UNIFORM:
        v = l->lo + (int64_t)sv_rng_below(rng, (uint64_t)(l->hi - l->lo) + 1);
        break;
    case SV_WL_LEN_NORMAL: {
        double x = round(sv_rng_normal(rng, l->mean, l->sd));
        v = x < 1 ? 1 : (x > (double)SV_RANGE_TOKENS_MAX ? SV_RANGE_TOKENS_MAX : (int64_t)x);
        break;
    }
    case SV_WL_LEN_EMPIRICAL:
        if (row < 0)
            row = (int64_t)sv_rng_below(rng, vals->len);
        v = g_array_index(vals, int64_t, row);
        break;
    case SV_WL_LEN_QUANTILES: {
        /* Inverse CDF: u in [0, 1) falls between quantiles i and i + 1; linear between them. */
        double h = sv_rng_uniform(rng) * (double)(l->n_quantiles - 1);
        int i = (int)h;
        double x = l->quantiles[i] + (h - i) * (l->quantiles[i + 1] - l->quantiles[i]);
        v = (int64_t)llround(x);
        if (v < 1)
            v = 1;
        break;
    }
    }
    return v;
}

static int gen_next(sv_wl_source *src, sv_wl_item *out, GError **error)
{
    gen_state *g = src->gen;
    if (g->made >= g->cfg.count)
        return 0;
    double rate = g->cfg.arrival.rate_per_s;
    double gap;
    switch (g->cfg.arrival.kind) {
    case SV_WL_ARRIVAL_GAMMA: {
        /* Mean 1/rate and CV c: shape k = 1/c^2, scale = 1/(rate k) (CV of gamma = 1/sqrt(k)). */
        double k = 1.0 / (g->cfg.arrival.cv * g->cfg.arrival.cv);
        gap = sv_rng_gamma(g->arr_rng, k, 1.0 / (rate * k));
        break;
    }
    case SV_WL_ARRIVAL_FIXED:
        gap = 1.0 / rate;
        break;
    case SV_WL_ARRIVAL_TRACE:
        gap = g_array_index(g->gaps, double, sv_rng_below(g->arr_rng, g->gaps->len));
        break;
    case SV_WL_ARRIVAL_POISSON:
    default:
        gap = sv_rng_exponential(g->arr_rng, rate);
        break;
    }
    /* Accumulate in double seconds and convert once, so rounding does not drift. */
    g->t_s += gap;
    /* An arrival past the engine's horizon cannot be simulated: say which request and why,
     * rather than let the engine refuse an event (docs/workloads.md). */
    double at_ns = (double)g->cfg.start_ns + g->t_s * 1e9;
    if (!(at_ns <= (double)SV_ENGINE_HORIZON)) {
        g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_INVALID,
                    "generated request %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                    " would arrive at %.4g s, past the engine's horizon of %.4g s (about 9.1 "
                    "years): the rate %g req/s is too low for this many requests",
                    g->made, g->cfg.count, at_ns * 1e-9, (double)SV_ENGINE_HORIZON * 1e-9, rate);
        return -1;
    }
    out->kind = SV_WL_ITEM_REQUEST;
    out->arrival_ns = g->cfg.start_ns + sv_time_from_ns(g->t_s * 1e9);
    out->model = g_strdup(g->model);
    sv_wl__item_alloc_reqs(out, 1);
    sv_wl_req *r = &out->reqs[0];
    int64_t row = g->joint ? (int64_t)sv_rng_below(g->row_rng, g->in_vals->len) : -1;
    r->input_tokens = draw_len(&g->cfg.input_len, g->in_rng, g->in_vals, row);
    r->output_tokens = draw_len(&g->cfg.output_len, g->out_rng, g->out_vals, row);
    if (g->cfg.max_input_tokens > 0 && r->input_tokens > g->cfg.max_input_tokens)
        r->input_tokens = g->cfg.max_input_tokens;
    if (g->cfg.max_output_tokens > 0 && r->output_tokens > g->cfg.max_output_tokens)
        r->output_tokens = g->cfg.max_output_tokens;
    g->made++;
    return 1;
}

/* The inter-arrival gaps of a trace (any sv_wl_open format), in seconds, scaled so that their
 * mean is 1 / rate_per_s. The trace is streamed; only the gaps are kept (8 bytes a request). */
static GArray *load_gaps(const char *path, double rate_per_s, GError **error)
{
    struct sv_wl_open_opts opts = {.drop_token_ids = TRUE};
    sv_wl_source *src = sv_wl_open(path, &opts, error);
    if (!src)
        return NULL;
    GArray *gaps = g_array_new(FALSE, FALSE, sizeof(double));
    sv_wl_item it = SV_WL_ITEM_INIT;
    sv_time prev = 0;
    uint64_t n = 0;
    int rc;
    while ((rc = sv_wl_next(src, &it, error)) == 1) {
        if (n++ > 0) {
            double gap = (double)(it.arrival_ns - prev) * 1e-9;
            g_array_append_val(gaps, gap);
        }
        prev = it.arrival_ns;
    }
    sv_wl_item_clear(&it);
    sv_wl_source_free(src);
    if (rc < 0) {
        g_array_unref(gaps);
        return NULL;
    }
    double sum = 0;
    for (guint i = 0; i < gaps->len; i++)
        sum += g_array_index(gaps, double, i);
    if (gaps->len == 0 || !(sum > 0)) {
        g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_INVALID,
                    "arrival trace %s: needs at least two arrivals spanning a positive time", path);
        g_array_unref(gaps);
        return NULL;
    }
    /* One factor for every gap: the shape (CV, tail, bursts) stays the trace's. */
    double scale = (1.0 / rate_per_s) / (sum / (double)gaps->len);
    for (guint i = 0; i < gaps->len; i++)
        g_array_index(gaps, double, i) *= scale;
    return gaps;
}

static sv_rng *stream(const char *prefix, const char *what, uint64_t seed)
{
    g_autofree char *n = g_strdup_printf("%s/%s", prefix, what);
    return sv_rng_new(seed, n);
}

sv_wl_source *sv_wl_generator_new(const struct sv_wl_gen_cfg *cfg, GError **error)
{
    const struct sv_wl_arrival *a = &cfg->arrival;
    if (!(a->rate_per_s > 0) || !isfinite(a->rate_per_s) ||
        (a->kind == SV_WL_ARRIVAL_GAMMA && !(a->cv > 0 && isfinite(a->cv)))) {
        g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_INVALID,
                    "generator arrival: rate %g req/s must be > 0 (and gamma cv %g > 0)",
                    a->rate_per_s, a->cv);
        return NULL;
    }
    if (cfg->start_ns < 0 || cfg->max_input_tokens < 0 || cfg->max_output_tokens < 0) {
        g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_INVALID,
                    "generator: start_ns and length clamps must be >= 0");
        return NULL;
    }
    if (!check_len(&cfg->input_len, "input", error) ||
        !check_len(&cfg->output_len, "output", error) ||
        !check_len_range(&cfg->input_len, "generator input length", error) ||
        !check_len_range(&cfg->output_len, "generator output length", error) ||
        !in_range("generator arrival: the rate", a->rate_per_s, RANGE_RATE, error) ||
        (a->kind == SV_WL_ARRIVAL_GAMMA &&
         !in_range("generator arrival: the gamma CV", a->cv, RANGE_CV, error)) ||
        !in_range("generator start_ns", (double)cfg->start_ns,
                  SV_RANGE_D(0, (double)SV_ENGINE_HORIZON, "ns"), error))
        return NULL;

    gen_state *g = g_new0(gen_state, 1);
    g->cfg = *cfg;
    g->cfg.input_len.path = g_strdup(cfg->input_len.path);
    g->cfg.input_len.column = g_strdup(cfg->input_len.column);
    g->cfg.output_len.path = g_strdup(cfg->output_len.path);
    g->cfg.output_len.column = g_strdup(cfg->output_len.column);
    g->name = g_strdup(cfg->name ? cfg->name : "workloads/gen");
    g->model = g_strdup(cfg->model);
    g->cfg.name = g->name;
    g->cfg.model = g->model;

    const struct sv_wl_len *il = &g->cfg.input_len, *ol = &g->cfg.output_len;
    const char *icol = il->column ? il->column : DEFAULT_INPUT_COLUMN;
    const char *ocol = ol->column ? ol->column : DEFAULT_OUTPUT_COLUMN;
    gboolean ok = TRUE;
    if (il->kind == SV_WL_LEN_EMPIRICAL && ol->kind == SV_WL_LEN_EMPIRICAL &&
        strcmp(il->path, ol->path) == 0) {
        /* Same file: draw one row for both so input and output stay correlated as recorded. */
        const char *cols[2] = {icol, ocol};
        GArray *v[2] = {NULL, NULL};
        ok = load_columns(il->path, cols, 2, v, error);
        g->in_vals = v[0];
        g->out_vals = v[1];
        g->joint = ok;
    } else {
        if (il->kind == SV_WL_LEN_EMPIRICAL) {
            const char *cols[1] = {icol};
            ok = load_columns(il->path, cols, 1, &g->in_vals, error);
        }
        if (ok && ol->kind == SV_WL_LEN_EMPIRICAL) {
            const char *cols[1] = {ocol};
            ok = load_columns(ol->path, cols, 1, &g->out_vals, error);
        }
    }
    if (ok && a->kind == SV_WL_ARRIVAL_TRACE) {
        if (!a->trace_path || !*a->trace_path) {
            g_set_error(error, SV_WL_ERROR, SV_WL_ERROR_INVALID,
                        "generator arrival: trace needs a trace_path");
            ok = FALSE;
        } else {
            g->gaps = load_gaps(a->trace_path, a->rate_per_s, error);
            ok = g->gaps != NULL;
        }
        g->cfg.arrival.trace_path = NULL; /* borrowed; the gaps are all we keep */
    }
    if (!ok) {
        gen_free(g);
        return NULL;
    }
    g->arr_rng = stream(g->name, "arrival", cfg->seed);
    g->in_rng = stream(g->name, "input_len", cfg->seed);
    g->out_rng = stream(g->name, "output_len", cfg->seed);
    g->row_rng = stream(g->name, "rows", cfg->seed);

    sv_wl_source *src = sv_wl__source_alloc(g->name);
    src->format = SV_WL_FORMAT_AUTO;
    src->gen = g;
    src->gen_next = gen_next;
    src->gen_free = gen_free;
    return src;
}
