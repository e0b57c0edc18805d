/* Shared between the files of metrics/ only: the names of the files the writer (metrics.c)
 * produces and `servesim validate` (validate.c) reads back, so that the two cannot drift apart. */
#ifndef SV_METRICS_INTERNAL_H
#define SV_METRICS_INTERNAL_H

#include "metrics/metrics.h"

#define SV_METRICS__REQUESTS_CSV "requests.csv"
#define SV_METRICS__TIMESERIES_CSV "timeseries.csv"
#define SV_METRICS__SUMMARY_JSON "summary.json"
#define SV_METRICS__POWER_CSV "power.csv"

#include <json-glib/json-glib.h>

/* The finished document of `b` as pretty JSON text, 2-space indent (the layout summary.json and
 * validation.json share); caller frees. */
char *sv_metrics__json_text(JsonBuilder *b);

#endif
