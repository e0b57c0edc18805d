/* Time conversions (sv_time_from_ns is inline in core.h), the core error domain, the project
 * assert and the output-file test. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "core/core.h"

/* Error quarks are written out with a string literal in every module, not G_DEFINE_QUARK(a-b-c,
 * ...): clang-format reads that first argument as an expression and spaces out its dashes, which
 * turned the names into "servesim - core - error - quark". */
GQuark sv_core_error_quark(void)
{
    return g_quark_from_static_string("servesim-core-error-quark");
}

double sv_bw_gbps_to_bytes_per_ns(double gbps)
{
    /* astra-network-analytical: bandwidth "GB/s" * 2^30 / 10^9 bytes per ns. */
    return gbps * 1073741824.0 / 1e9;
}

double sv_bw_dec_gbps_to_bytes_per_ns(double gbps)
{
    /* 1 GB/s = 10^9 bytes / 10^9 ns. */
    return gbps;
}

gboolean sv_path_check_not_dir(const char *path, GError **error)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_IO, "%s: is a directory", path);
        return FALSE;
    }
    return TRUE;
}

void sv_assert_fail(const char *file, int line, const char *func, const char *expr)
{
    fprintf(stderr, "servesim: internal error: %s:%d: %s: assertion failed: %s\n", file, line, func,
            expr);
    fflush(stderr);
    abort();
}

gboolean sv_path_is_special_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

gboolean sv_internal_error(GError **error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *what = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, SV_CORE_ERROR, SV_CORE_ERROR_INTERNAL,
                "internal error: %s (a bug in servesim: please report it with the inputs)", what);
    return FALSE;
}
