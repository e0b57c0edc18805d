/* One line plot drawn with PLplot's svg driver (Debian libplplot-dev), returned as an <svg>
 * element for inlining. The driver writes a file only, so each plot goes to a file in the
 * report's temporary folder, is read back and removed. */
#include "report/report_internal.h"

#include <glib/gstdio.h>
#include <math.h>
#include <plplot.h>
#include <string.h>

/* Colour map 0: 0 background, 1 axes and text, then the series (matplotlib's "tab10" palette,
 * which stays distinguishable for the common forms of colour blindness up to ~6 lines). */
#define FIRST_SERIES_COLOR 2
static const PLINT palette_r[] = {255, 0, 31, 255, 44, 214, 148, 140, 227, 127, 188, 23};
static const PLINT palette_g[] = {255, 0, 119, 127, 160, 39, 103, 86, 119, 127, 189, 190};
static const PLINT palette_b[] = {255, 0, 180, 14, 44, 40, 189, 75, 194, 127, 34, 207};
#define N_SERIES_COLORS ((int)G_N_ELEMENTS(palette_r) - FIRST_SERIES_COLOR)

/* PLplot's line styles for sv_report__line's 0 solid, 1 dashed, 2 dotted-ish, 3 dash-dot. */
static const PLINT line_styles[] = {1, 3, 2, 4};

/* '#' starts a PLplot text escape; "##" is a literal '#'. */
static char *pl_text(const char *s)
{
    GString *o = g_string_new(NULL);
    for (; *s != '\0'; s++) {
        if (*s == '#')
            g_string_append_c(o, '#');
        g_string_append_c(o, *s);
    }
    return g_string_free(o, FALSE);
}

static void range(const struct sv_report__line *lines, guint n_lines, gboolean want_y, double *lo,
                  double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (guint l = 0; l < n_lines; l++) {
        const double *v = want_y ? lines[l].y : lines[l].x;
        for (guint i = 0; i < lines[l].n; i++) {
            if (!isfinite(v[i]))
                continue;
            *lo = MIN(*lo, v[i]);
            *hi = MAX(*hi, v[i]);
        }
    }
    if (!isfinite(*lo)) {
        *lo = 0;
        *hi = 1;
    }
}

/* Room around the data so that no line sits on the frame; a flat range gets a unit. */
static void pad(double *lo, double *hi, gboolean from_zero)
{
    if (from_zero && *lo > 0)
        *lo = 0;
    if (*hi <= *lo) {
        double m = fabs(*lo) > 0 ? fabs(*lo) * 0.1 : 1.0;
        *hi = *lo + m;
        if (!from_zero)
            *lo -= m;
    }
    double span = *hi - *lo;
    *hi += 0.05 * span;
    if (!from_zero || *lo < 0)
        *lo -= 0.05 * span;
}

guint sv_report__thin(const double *x, const double *y, guint n, double *ox, double *oy)
{
    if (n <= SV_REPORT_MAX_POINTS) {
        memcpy(ox, x, n * sizeof *x);
        memcpy(oy, y, n * sizeof *y);
        return n;
    }
    guint m = 0, last = G_MAXUINT;
    const guint buckets = SV_REPORT_MAX_POINTS / 2;
#define EMIT(i)                                                                                    \
    do {                                                                                           \
        if ((i) != last) {                                                                         \
            ox[m] = x[i];                                                                          \
            oy[m++] = y[i];                                                                        \
            last = (i);                                                                            \
        }                                                                                          \
    } while (0)
    EMIT(0);
    for (guint b = 0; b < buckets; b++) {
        guint lo = (guint)((guint64)b * n / buckets), hi = (guint)((guint64)(b + 1) * n / buckets);
        guint imin = lo, imax = lo;
        for (guint i = lo + 1; i < hi; i++) {
            if (y[i] < y[imin])
                imin = i;
            if (y[i] > y[imax])
                imax = i;
        }
        EMIT(MIN(imin, imax));
        EMIT(MAX(imin, imax));
    }
    EMIT(n - 1);
#undef EMIT
    return m;
}

gboolean sv_report__plot_ready(GError **error)
{
    const char *menu[128], *names[128];
    const char **pm = menu, **pn = names;
    int n = (int)G_N_ELEMENTS(names);
    plgDevs(&pm, &pn, &n);
    for (int i = 0; i < n; i++) {
        if (names[i] != NULL && strcmp(names[i], "svg") == 0)
            return TRUE;
    }
    g_set_error(error, SV_REPORT_ERROR, SV_REPORT_ERROR_PLOT,
                "PLplot has no svg driver (Debian: libplplot17 ships it in "
                "/usr/lib/<arch>/plplot5.15.0/drivers/svg.so; PLPLOT_DRV_DIR may point "
                "elsewhere)");
    return FALSE;
}

char *sv_report__plot_svg(const char *tmpdir, const struct sv_report__plot *plot,
                          const struct sv_report__line *lines, guint n_lines, GError **error)
{
    g_autofree char *file = g_build_filename(tmpdir, "plot.svg", NULL);
    double x0, x1, y0, y1;
    range(lines, n_lines, FALSE, &x0, &x1);
    range(lines, n_lines, TRUE, &y0, &y1);
    gboolean x_nonneg = x0 >= 0;
    pad(&x0, &x1, FALSE);
    if (x_nonneg && x0 < 0)
        x0 = 0; /* times and latencies: the axis starts at 0, not before */
    if (plot->y_is_fraction) {
        y0 = 0;
        y1 = 1.02;
    } else {
        pad(&y0, &y1, plot->y_from_zero);
    }

    /* A stream of its own, ended before returning: nothing stays set in PLplot between plots. */
    PLINT stream;
    plmkstrm(&stream);
    plsdev("svg");
    plsfnam(file);
    plspage(0, 0, 640, 400, 0, 0);
    plscmap0(palette_r, palette_g, palette_b, (PLINT)G_N_ELEMENTS(palette_r));
    plinit();
    pladv(0);
    plschr(0, 0.9);
    gboolean legend = n_lines > 1 || (n_lines == 1 && lines[0].name != NULL);
    plvpor(0.11, legend ? 0.66 : 0.95, 0.14, 0.90);
    plwind(x0, x1, y0, y1);
    plcol0(1);
    plwidth(1.0);
    plbox("bcnst", 0, 0, "bcnstv", 0, 0);
    g_autofree char *xl = pl_text(plot->xlabel), *yl = pl_text(plot->ylabel),
                    *tl = pl_text(plot->title);
    pllab(xl, yl, tl);
    plwidth(1.5);
    for (guint l = 0; l < n_lines; l++) {
        if (lines[l].n == 0)
            continue;
        plcol0(FIRST_SERIES_COLOR + lines[l].color % N_SERIES_COLORS);
        pllsty(line_styles[lines[l].style % G_N_ELEMENTS(line_styles)]);
        if (lines[l].n == 1) {
            plstring(1, lines[l].x, lines[l].y, "#(728)"); /* a lone point: a dot */
            continue;
        }
        guint cap = MIN(lines[l].n, SV_REPORT_MAX_POINTS + 2);
        g_autofree double *x = g_new(double, cap), *y = g_new(double, cap);
        guint m = sv_report__thin(lines[l].x, lines[l].y, lines[l].n, x, y);
        plline((PLINT)m, x, y);
    }
    pllsty(1);
    if (legend) {
        g_autofree PLINT *opts = g_new(PLINT, n_lines), *colors = g_new(PLINT, n_lines),
                         *styles = g_new(PLINT, n_lines), *text_colors = g_new(PLINT, n_lines);
        g_autofree PLFLT *widths = g_new(PLFLT, n_lines);
        g_autofree char **texts = g_new0(char *, n_lines + 1);
        for (guint l = 0; l < n_lines; l++) {
            opts[l] = PL_LEGEND_LINE;
            colors[l] = FIRST_SERIES_COLOR + lines[l].color % N_SERIES_COLORS;
            styles[l] = line_styles[lines[l].style % G_N_ELEMENTS(line_styles)];
            text_colors[l] = 1;
            widths[l] = 1.5;
            texts[l] = pl_text(lines[l].name != NULL ? lines[l].name : "");
        }
        PLFLT w, h;
        pllegend(&w, &h, 0, PL_POSITION_RIGHT | PL_POSITION_OUTSIDE | PL_POSITION_VIEWPORT, 0.02,
                 0.0, 0.08, 0, 1, 1, 0, 0, (PLINT)n_lines, opts, 0.6, 0.8, 2.0, 0.0, text_colors,
                 (const char *const *)texts, NULL, NULL, NULL, NULL, colors, styles, widths, NULL,
                 NULL, NULL, NULL);
        for (guint l = 0; l < n_lines; l++)
            g_free(texts[l]);
    }
    plend1();

    g_autofree char *svg = NULL;
    gsize len = 0;
    gboolean ok = g_file_get_contents(file, &svg, &len, error);
    g_unlink(file);
    if (!ok)
        return NULL;
    if (strstr(svg, "<svg") == NULL) {
        g_set_error(error, SV_REPORT_ERROR, SV_REPORT_ERROR_PLOT,
                    "PLplot's svg driver wrote no <svg> element for plot '%s'", plot->title);
        return NULL;
    }
    return g_steal_pointer(&svg);
}
