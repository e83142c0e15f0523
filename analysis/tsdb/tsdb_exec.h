/* tsdb_exec.h - runs one /api/query sub-query over the series telem_agg
 * fetched for it and writes OpenTSDB 2.4's results (HttpJsonSerializer
 * formatQueryAsyncV1), one JSON object per group:
 *   {"metric": M, "tags": {..}, "aggregateTags": [..],
 *    "query": {..} (showQuery only), "dps": {..} or [[t, v], ..]}
 *
 * The steps, in OpenTSDB's order:
 *   1. select: a series of another metric is skipped; every filter must
 *      match (a series lacking a filtered tag key never matches); with
 *      explicitTags the series' tag keys must be exactly the filtered
 *      ones; a series without a point in [start, end] is left out (for
 *      OpenTSDB it is not found);
 *   2. group: aggregator "none": every series is its own group;
 *      otherwise by the values of the group-by tag keys (filters with
 *      groupBy, the older "tags"), or one group of everything;
 *   3. per series: points outside [start, end] dropped (times are taken
 *      from ns to ms, truncating; of several points in one ms the last is
 *      kept); downsample (tsdb_downsample.h; its first bucket may start
 *      before `start`); then rate (tsdb_rate.h);
 *   4. aggregate the group's series (tsdb_agg.h, with its interpolation);
 *   5. write the points whose times lie in [start, end] (so a bucket
 *      starting before `start` is dropped, as OpenTSDB's serializer
 *      does).
 * "tags" are the tag pairs on which every series of the group that
 * carries the key agrees (OpenTSDB's SpanGroup.computeTags: a key that
 * only some series carry, with one value, stays a tag); "aggregateTags"
 * are the keys whose values differ, sorted.
 *
 * Times: seconds, or ms with msResolution.  Without msResolution several
 * points in one second would be several equal keys in OpenTSDB's object,
 * of which a JSON parser keeps the last: the object here holds that last
 * value only, once; the arrays form (arrays) keeps every point, as
 * OpenTSDB does.
 * Values: JSON numbers (always reals, e.g. 5.0); NaN is the JSON string
 * "NaN" (Jackson's default for a non-finite double; infinities
 * "Infinity" and "-Infinity"), except with the "null" fill policy, where
 * a NaN is JSON null.
 * Results are appended ordered by the group-by tag values (for "none" by
 * the series' tags), so the answer does not depend on the order the
 * nodes answered in.
 *
 * Thread-safe: touches only its arguments (several threads may run
 * sub-queries of one query, each with its own results array). */
#ifndef TSDB_EXEC_H
#define TSDB_EXEC_H

#include <jansson.h>
#include <stddef.h>

#include "telem_types.h"
#include "tsdb_error.h"
#include "tsdb_out.h"
#include "tsdb_query.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most points the series of one sub-query may hold in all after
 * downsampling with a fill policy (the buckets of the range, for every
 * series selected); beyond it the sub-query is refused with 413. */
#define TSDB_EXEC_MAX_POINTS 10000000

/* Runs sub-query i over series[0..n) (ts in realtime ns, tags including
 * "host") and appends one result per group to `res` (tsdb_out.h, whose
 * tsdb_results_dump writes the answer's text).  Returns 0; TELEM_ETOOBIG
 * with err 413 when its series would need more than TSDB_EXEC_MAX_POINTS
 * points in all; TELEM_ENOMEM with err 500; TELEM_EINVAL with err 400 for a bad
 * i.  On failure `res` may hold the groups written before. */
int tsdb_exec_run(const tsdb_query_t *q, size_t i,
                  const telem_series_t *series, size_t n,
                  tsdb_results_t *res, tsdb_error_t *err);

/* The same, appending one JSON object per group to `results` (a JSON
 * array) instead; on failure `results` is as it was. */
int tsdb_exec_sub(const tsdb_query_t *q, size_t i,
                  const telem_series_t *series, size_t n, json_t *results,
                  tsdb_error_t *err);

#ifdef __cplusplus
}
#endif

#endif
