/* The flow solver as a resource: stubs (first commit; the flow.c refactor follows). */
#include "network/network_internal.h"

#include <string.h>

sv_net_solver *sv_net_solver_new(sv_engine *eng)
{
    (void)eng;
    return NULL;
}
void sv_net_solver_free(sv_net_solver *s)
{
    (void)s;
}
sv_net_solver *sv_net_get_solver(sv_net *net)
{
    (void)net;
    return NULL;
}
int sv_net_solver_link_add(sv_net_solver *s, double bytes_per_ns, double latency_ns)
{
    (void)s;
    (void)bytes_per_ns;
    (void)latency_ns;
    return -1;
}
int sv_net_solver_num_links(const sv_net_solver *s)
{
    (void)s;
    return 0;
}
void sv_net_solver_start(sv_net_solver *s, const int *links, int n, double extra_latency_ns,
                         uint64_t bytes, sv_net_done_fn done, void *ctx, uint64_t arg)
{
    (void)s;
    (void)links;
    (void)n;
    (void)extra_latency_ns;
    (void)bytes;
    (void)done;
    (void)ctx;
    (void)arg;
}
int sv_net_route_links(const sv_net *net, int src, int dst, int *links, double *lat_ns)
{
    return sv_net__geom_route(&net->geom, src, dst, links, lat_ns);
}
int sv_net_route_max_links(const sv_net *net)
{
    return net->geom.max_route_links;
}
void sv_net_solver_get_stats(const sv_net_solver *s, struct sv_net_solver_stats *out)
{
    (void)s;
    memset(out, 0, sizeof *out);
}
double sv_net_solver_link_rate_sum(const sv_net_solver *s, int link)
{
    (void)s;
    (void)link;
    return 0;
}
