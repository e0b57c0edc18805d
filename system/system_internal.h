/* Internal records of the collectives system layer (system/system.h). Shared between
 * coll_cfg.c (configuration, groups, plans) and coll_sys.c (the event-level model). */
#ifndef SV_SYSTEM_INTERNAL_H
#define SV_SYSTEM_INTERNAL_H

#include "system/system.h"

struct sv_sys__group {
    int id;
    int n;
    int *members; /* in file order: ASTRA-sim keeps the listed order for its ring */
};

struct sv_sys_groups {
    GArray *groups; /* struct sv_sys__group, sorted by id */
};

struct sv_sys__plan_node {
    uint64_t id;
    sv_sys_op_kind kind;
    int peer;
    int tag;
    uint64_t bytes;
    sv_time duration_ns;
    int ndeps;
    uint64_t *deps;
};

struct sv_sys__plan_rank {
    GArray *ops; /* struct sv_sys__plan_node, in insertion order */
};

struct sv_sys_plan {
    int ranks;
    struct sv_sys__plan_rank *rank;
};

#endif
