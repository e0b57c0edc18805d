/* The report in a real browser (issue 14 item 2): headless Chromium (Debian's `chromium`) loads a
 * report of two quick-form runs, once for a screenshot and once for its DOM and console:
 *   - the screenshot is a PNG of the requested size (IHDR) that is not blank: cairo (linked in
 *     this test only) reads it back and counts the pixels of the two runs' line colours;
 *   - the DOM has the <svg> of every plot and the summary table; the console has no message.
 * A third load, of a page that logs an error on purpose, shows that the console check sees one.
 * Chromium is optional: without it every test skips (exit 77) and says why. One page load per
 * test, each bounded by `timeout 120`. Inputs are made here; nothing from ../shared is needed. */
#include "tests/test_util.h"

#include <CUnit/CUnit.h>
#include <cairo.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/wait.h>

#define WIDTH 1280
#define HEIGHT 4000

static char *tmp, *chromium, *timeout_bin, *report;

static guint count(const char *hay, const char *needle)
{
    guint n = 0;
    for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* Run chromium on file://<page> with `extra` (NULL-terminated); its profile and HOME in a
 * folder of its own under tmp. Returns the exit status (-1: could not start). */
static int browse(const char *page, const char *const *extra, char **out, char **err)
{
    static int n_profile;
    g_autofree char *home = g_strdup_printf("%s/home%d", tmp, n_profile++);
    g_mkdir_with_parents(home, 0700);
    g_autofree char *profile = g_strdup_printf("--user-data-dir=%s/profile", home);
    g_autofree char *url = g_strdup_printf("file://%s", page);
    g_autofree char *size = g_strdup_printf("--window-size=%d,%d", WIDTH, HEIGHT);
    GPtrArray *argv = g_ptr_array_new();
    const char *base[] = {timeout_bin,
                          "120",
                          chromium,
                          "--headless=new",
                          "--no-sandbox",
                          "--disable-gpu",
                          profile,
                          size,
                          "--no-first-run",
                          "--hide-scrollbars",
                          "--disable-dev-shm-usage"};
    for (guint i = 0; i < G_N_ELEMENTS(base); i++)
        g_ptr_array_add(argv, (gpointer)base[i]);
    for (guint i = 0; extra[i] != NULL; i++)
        g_ptr_array_add(argv, (gpointer)extra[i]);
    g_ptr_array_add(argv, url);
    g_ptr_array_add(argv, NULL);
    g_auto(GStrv) env = g_get_environ();
    env = g_environ_setenv(env, "HOME", home, TRUE);
    env = g_environ_setenv(env, "XDG_CONFIG_HOME", home, TRUE);
    env = g_environ_setenv(env, "XDG_CACHE_HOME", home, TRUE);
    int status = -1, wait_status = 0;
    g_autoptr(GError) e = NULL;
    if (g_spawn_sync(NULL, (char **)argv->pdata, env, G_SPAWN_DEFAULT, NULL, NULL, out, err,
                     &wait_status, &e))
        status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128;
    else
        fprintf(stderr, "spawn %s: %s\n", chromium, e->message);
    g_ptr_array_free(argv, TRUE);
    return status;
}

/* Console messages chromium logged (--enable-logging=stderr --v=0 prints them as
 * "...:CONSOLE:<line>] "<text>", source: ..."). */
static guint console_lines(const char *err)
{
    return count(err, ":CONSOLE");
}

/* Pixels within `tol` per channel of colour (r, g, b), in rows [y0, y1). */
static guint pixels_near_rows(cairo_surface_t *s, int r, int g, int b, int tol, int y0, int y1)
{
    int w = cairo_image_surface_get_width(s);
    int stride = cairo_image_surface_get_stride(s);
    const unsigned char *data = cairo_image_surface_get_data(s);
    guint n = 0;
    for (int y = y0; y < y1; y++) {
        const guint32 *row = (const guint32 *)(const void *)(data + (size_t)y * stride);
        for (int x = 0; x < w; x++) {
            int pr = (row[x] >> 16) & 0xff, pg = (row[x] >> 8) & 0xff, pb = row[x] & 0xff;
            n += ABS(pr - r) <= tol && ABS(pg - g) <= tol && ABS(pb - b) <= tol;
        }
    }
    return n;
}

static guint pixels_near(cairo_surface_t *s, int r, int g, int b, int tol)
{
    return pixels_near_rows(s, r, g, b, tol, 0, cairo_image_surface_get_height(s));
}

static guint32 be32(const unsigned char *p)
{
    return (guint32)p[0] << 24 | (guint32)p[1] << 16 | (guint32)p[2] << 8 | p[3];
}

static void test_screenshot(void)
{
    g_autofree char *png = g_build_filename(tmp, "shot.png", NULL);
    g_autofree char *opt = g_strdup_printf("--screenshot=%s", png);
    const char *extra[] = {opt, NULL};
    g_autofree char *out = NULL, *err = NULL;
    int st = browse(report, extra, &out, &err);
    CU_ASSERT_EQUAL(st, 0);
    if (st != 0)
        fprintf(stderr, "\nchromium exited %d: %s\n", st, err);
    g_autofree char *bytes = NULL;
    gsize len = 0;
    CU_ASSERT_FATAL(g_file_get_contents(png, &bytes, &len, NULL));
    /* PNG signature, then the IHDR chunk: width and height of the requested window */
    const unsigned char sig[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    CU_ASSERT_FATAL(len > 33 && memcmp(bytes, sig, 8) == 0 && memcmp(bytes + 12, "IHDR", 4) == 0);
    CU_ASSERT_EQUAL(be32((const unsigned char *)bytes + 16), WIDTH);
    CU_ASSERT_EQUAL(be32((const unsigned char *)bytes + 20), HEIGHT);
    cairo_surface_t *s = cairo_image_surface_create_from_png(png);
    CU_ASSERT_FATAL(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS);
    CU_ASSERT_EQUAL(cairo_image_surface_get_width(s), WIDTH);
    cairo_surface_flush(s);
    /* Not blank: the text and frames (near black) and both runs' lines, in the report's first
     * two series colours (tab10 blue #1F77B4, orange #FF7F0E); antialiasing blends the edges,
     * the tolerance keeps the line cores. A blank page has none of them. */
    guint dark = pixels_near(s, 0, 0, 0, 90);
    guint blue = pixels_near(s, 0x1f, 0x77, 0xb4, 40);
    guint orange = pixels_near(s, 0xff, 0x7f, 0x0e, 40);
    printf("\n  screenshot: %u dark, %u blue, %u orange pixels\n", dark, blue, orange);
    CU_ASSERT(dark > 10000);
    /* Text renders (a font was found): the page's first 60 rows hold only the <h1> title */
    guint title = pixels_near_rows(s, 0x22, 0x22, 0x22, 90, 0, 60);
    printf("  title: %u dark pixels\n", title);
    CU_ASSERT(title > 300);
    CU_ASSERT(blue > 1000);
    CU_ASSERT(orange > 1000);
    cairo_surface_destroy(s);
}

static void test_dom_and_console(void)
{
    const char *extra[] = {"--dump-dom", "--enable-logging=stderr", "--v=0", NULL};
    g_autofree char *out = NULL, *err = NULL;
    int st = browse(report, extra, &out, &err);
    CU_ASSERT_EQUAL(st, 0);
    /* 7 plots (throughput, running/waiting, TTFT, TPOT, E2EL and ITL CDFs, KV; the quick form
     * has no memory tier and no power model), each an <svg> element in the rendered DOM */
    CU_ASSERT_EQUAL(count(out, "<svg"), 7);
    CU_ASSERT_EQUAL(count(out, "<figure class=\"plot\""), 7);
    CU_ASSERT(count(out, "<polyline") > 100);
    CU_ASSERT(strstr(out, "<table class=\"summary\"") != NULL);
    CU_ASSERT(strstr(out, "<th>low</th><th>high</th>") != NULL);
    CU_ASSERT_EQUAL(console_lines(err), 0);
    if (console_lines(err) != 0)
        fprintf(stderr, "\nconsole: %s\n", err);
}

/* The console check can fail: a page that logs an error is seen. */
static void test_console_probe(void)
{
    g_autofree char *page = g_build_filename(tmp, "probe.html", NULL);
    g_file_set_contents(page,
                        "<!DOCTYPE html><html><body><p>probe</p><script>"
                        "console.error('sv-probe')</script></body></html>\n",
                        -1, NULL);
    const char *extra[] = {"--dump-dom", "--enable-logging=stderr", "--v=0", NULL};
    g_autofree char *out = NULL, *err = NULL;
    CU_ASSERT_EQUAL(browse(page, extra, &out, &err), 0);
    CU_ASSERT_EQUAL(console_lines(err), 1);
    CU_ASSERT(strstr(err, "sv-probe") != NULL);
}

static gboolean make_run(const char *dir, const char *qps)
{
    const char *argv[] = {
        SV_SERVESIM_BIN, "run", "--model",      "Llama-2-7B", "--hardware",  "A100-80GB",
        "--requests",    "60",  "--qps",        qps,          "--input-len", "256",
        "--output-len",  "32",  "--output-dir", dir,          "--quiet",     NULL};
    int st = -1;
    g_autofree char *so = NULL, *se = NULL;
    return sv_test_spawn(argv, &so, &se, &st) && st == 0;
}

int main(void)
{
    chromium = g_find_program_in_path("chromium");
    if (chromium == NULL) {
        printf("SKIP: test_report_browser: chromium not installed (Debian: apt-get install "
               "chromium); the report was not loaded in a browser\n");
        return SV_TEST_SKIP_CODE;
    }
    timeout_bin = g_find_program_in_path("timeout");
    if (timeout_bin == NULL) {
        printf("SKIP: test_report_browser: no timeout program (coreutils) to bound chromium\n");
        return SV_TEST_SKIP_CODE;
    }
    tmp = sv_test_tmpdir();
    g_autofree char *low = g_build_filename(tmp, "low", NULL);
    g_autofree char *high = g_build_filename(tmp, "high", NULL);
    report = g_build_filename(tmp, "report.html", NULL);
    const char *argv[] = {SV_SERVESIM_BIN, "report", low, high, "-o", report, NULL};
    int st = -1;
    g_autofree char *so = NULL, *se = NULL;
    if (!make_run(low, "5") || !make_run(high, "20") || !sv_test_spawn(argv, &so, &se, &st) ||
        st != 0) {
        fprintf(stderr, "cannot make the report: %s\n", se != NULL ? se : "");
        sv_test_rmtree(tmp);
        return 1;
    }
    static const sv_test_case cases[] = {
        {"screenshot: size and content", test_screenshot},
        {"DOM: plots and table; no console message", test_dom_and_console},
        {"the console check sees an error", test_console_probe},
        {NULL, NULL},
    };
    sv_test_add_suite("report in chromium", cases);
    int rc = sv_test_run();
    sv_test_rmtree(tmp);
    return rc;
}
