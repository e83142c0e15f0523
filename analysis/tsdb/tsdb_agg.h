/* tsdb_agg.h - OpenTSDB's aggregation of several series into one, as
 * /api/query's `aggregator` asks for it.
 *
 * The result has a point at every time at which any of the series has
 * one.  At that time a series contributes when the time lies between its
 * first and its last point: its own value when it has a point there,
 * otherwise a value made up by the aggregator's interpolation:
 *   sum min max avg dev   linear interpolation between its two
 *                         neighbouring points
 *   zimsum count          zero (so count is the number of series whose
 *                         span covers the time)
 *   mimmin                +DBL_MAX (so only real points compete)
 *   mimmax                -DBL_MAX (likewise)
 * Series that have not started or have ended do not contribute.  dev is
 * the population standard deviation of the contributions; NaN values are
 * left out as OpenTSDB's aggregators leave them out (when every
 * contribution is NaN, as with a "nan" or "null" fill, the result is NaN,
 * count's 0).  "none" means no
 * aggregation: each series is returned as it is, so tsdb_agg_run() refuses
 * it.
 *
 * Thread-safe: the functions touch only their arguments. */
#ifndef TSDB_AGG_H
#define TSDB_AGG_H

#include <stddef.h>
#include <stdint.h>

#include "tsdb_downsample.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TSDB_AGG_SUM, TSDB_AGG_MIN, TSDB_AGG_MAX, TSDB_AGG_AVG, TSDB_AGG_DEV,
    TSDB_AGG_COUNT, TSDB_AGG_ZIMSUM, TSDB_AGG_MIMMIN, TSDB_AGG_MIMMAX,
    TSDB_AGG_NONE
} tsdb_agg_t;

/* One input series: n points, times in ms ascending. */
typedef struct {
    const int64_t *ts;
    const double *v;
    size_t n;
} tsdb_series_in_t;

/* `name` ("sum", ..., "none") into *agg.  0 or TELEM_EINVAL. */
int tsdb_agg_parse(const char *name, tsdb_agg_t *agg);

/* The aggregator names, as /api/aggregators lists them (NULL-ended). */
extern const char *const tsdb_agg_names[];

/* Aggregates the ns series into out[] (at most out_cap points; the sum of
 * the series' lengths always suffices).  Returns the number of points, or
 * TELEM_EINVAL for TSDB_AGG_NONE, or TELEM_ETOOBIG when out_cap is too
 * small (out holds the first out_cap).  is_null is always 0. */
long tsdb_agg_run(tsdb_agg_t agg, const tsdb_series_in_t *s, size_t ns,
                  tsdb_point_t *out, size_t out_cap);

#ifdef __cplusplus
}
#endif

#endif
