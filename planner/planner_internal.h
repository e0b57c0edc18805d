/* Shared between planner's files, not part of its API (planner/planner.h). */
#ifndef SV_PLANNER_INTERNAL_H
#define SV_PLANNER_INTERNAL_H

#include "planner/planner.h"

G_BEGIN_DECLS

/* SV_PLANNER_ERROR_INVALID with "<path>: <message>" (a config path, STYLE.md); returns FALSE. */
gboolean sv_planner__path_error(GError **error, const char *path, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

G_END_DECLS

#endif
