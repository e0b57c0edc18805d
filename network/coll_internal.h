/* Internal records of the collectives system layer (network/collective.h). Shared between
 * coll_cfg.c (configuration, groups, plans) and coll_sys.c (the event-level model). */
#ifndef SV_NETWORK_COLL_INTERNAL_H
#define SV_NETWORK_COLL_INTERNAL_H

#include "network/network.h"

struct sv_coll_group {
    int id;
    int n;
    int *members; /* in file order: ASTRA-sim keeps the listed order for its ring */
};

struct sv_coll_groups {
    GArray *groups; /* struct sv_coll_group, sorted by id */
};

struct sv_coll_plan_node {
    uint64_t id;
    sv_coll_op_kind kind;
    int peer;
    int tag;
    uint64_t bytes;
    sv_time duration_ns;
    int ndeps;
    uint64_t *deps;
};

struct sv_coll_plan_rank {
    GArray *ops; /* struct sv_coll_plan_node, in insertion order */
};

struct sv_coll_plan {
    int ranks;
    struct sv_coll_plan_rank *rank;
};

#endif
