/* What the sweep's files share (planner/sweep.c, sweep_row.c, sweep_sched.c): the parsed spec. */
#ifndef SV_PLANNER_SWEEP_INTERNAL_H
#define SV_PLANNER_SWEEP_INTERNAL_H

#include <json-glib/json-glib.h>

#include "planner/planner.h"

typedef struct {
    char *flag;  /* run flag without "--" */
    char *value; /* NULL for a switch (`true` in the spec) */
} sv_sweep_arg;

typedef struct {
    char *name; /* its sweep.csv column */
    char *flag; /* the run flag it sets, or NULL for a path member */
    char *path; /* the cluster JSON path it patches, or NULL */
} sv_sweep_member;

typedef struct {
    char *name;
    GPtrArray *members; /* sv_sweep_member*: one, or a zip's */
    GPtrArray *values;  /* char** (NULL-terminated, one text per member) per value */
    int line;
} sv_sweep_axis;

typedef enum {
    SV_SWEEP_OBJ_NONE,
    SV_SWEEP_OBJ_GPUS,     /* minimize gpus */
    SV_SWEEP_OBJ_TPUT_GPU, /* maximize output tokens/s per GPU at the target load */
    SV_SWEEP_OBJ_LOAD_GPU, /* maximize highest passing load per GPU (Vidur's QPS per dollar) */
} sv_sweep_objective;

struct sv_sweep_spec {
    char *path;         /* as given (messages) */
    char *dir;          /* absolute folder of the spec: relative paths start there */
    GPtrArray *base;    /* sv_sweep_arg*, spec order */
    GPtrArray *axes;    /* sv_sweep_axis* */
    GPtrArray *columns; /* char*: axis columns of sweep.csv (zip members flattened) */
    guint n_points;
    char *cluster;          /* run.cluster resolved, or NULL */
    JsonNode *cluster_root; /* its JSON, for path axes */
    gboolean goodput;       /* a goodput flag is given: request_goodput column */
    gboolean has_goal;
    struct {
        char *load; /* axis name */
        int axis;
        double at; /* target load */
        gboolean has_at;
        GPtrArray *slo_names; /* sweep.csv metric names */
        GArray *slo_limits;   /* double, ms */
        sv_sweep_objective objective;
    } goal;
};

/* Point k's value index on `axis` (the last axis varies fastest). */
guint sv_planner__sweep_index(const sv_sweep_spec *s, guint k, guint axis);
/* The sweep.csv metric column `name` as an SV_SWEEP_M_* index, or -1. */
int sv_planner__sweep_metric_index(const char *name);

#endif
