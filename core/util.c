/* Time conversions, the core error domain and the project assert. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/core.h"

G_DEFINE_QUARK(servesim - core - error - quark, sv_core_error)

sv_time sv_time_from_ns(double ns)
{
    if (!(ns > 0.0)) /* also catches NaN */
        return 0;
    if (ns >= (double)SV_TIME_MAX)
        return SV_TIME_MAX;
    return (sv_time)ns; /* truncation toward zero, as C++ double -> integer */
}

double sv_bw_gbps_to_bytes_per_ns(double gbps)
{
    /* astra-network-analytical: bandwidth "GB/s" * 2^30 / 10^9 bytes per ns. */
    return gbps * 1073741824.0 / 1e9;
}

void sv_assert_fail(const char *file, int line, const char *func, const char *expr)
{
    fprintf(stderr, "servesim: internal error: %s:%d: %s: assertion failed: %s\n", file, line, func,
            expr);
    fflush(stderr);
    abort();
}
