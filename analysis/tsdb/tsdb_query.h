/* tsdb_query.h - OpenTSDB 2.4's /api/query request: the POST body (a
 * TSQuery in JSON) or the GET query string (start=, end=, m=...), parsed
 * and validated into one query of one or more sub-queries.
 *
 * JSON body, top level (OpenTSDB's TSQuery):
 *   start             required: a time (tsdb_time.h), string or integer
 *   end               optional, default the query's "now"
 *   queries           required, non-empty array of sub-queries
 *   msResolution      bool: times in ms (else seconds)
 *   showQuery         bool: each result echoes its sub-query
 *   globalAnnotations, noAnnotations   bool, kept for the caller
 *   padding, showSummary, showStats    bool, accepted and ignored
 *   timezone          accepted only as UTC ("UTC", "Etc/UTC", "GMT", "Z")
 *   options           object, accepted and ignored
 *   delete, useCalendar, showTSUIDs    accepted only when false: telem
 *                     cannot delete, has no calendar downsampling and no
 *                     TSUIDs, so true is a 400 naming the field
 * A sub-query (TSSubQuery):
 *   metric, aggregator   required strings (tsdb_agg.h names)
 *   downsample           "1m-avg[-fill]" (tsdb_downsample.h), or null
 *   rate                 bool
 *   rateOptions          {counter (or isCounter), counterMax, resetValue,
 *                         dropResets}
 *   filters              [{type, tagk, filter, groupBy (or group_by)}]
 *   tags                 {tagk: value}, the older form: grouped filters
 *                        (tsdb_filter_from_tag()); "filters" and "tags"
 *                        each replace what the other set, so the later
 *                        one in the body wins, as in OpenTSDB
 *   explicitTags         bool: a series must carry exactly the filtered
 *                        tag keys, no others
 *   index, useFuzzyFilter, useMultiGets, rollupUsage   accepted, ignored
 *   tsuids, percentiles  accepted only empty or null;
 *   preAggregate, showHistogramBuckets   only false
 *
 * Differences from OpenTSDB, chosen: an unknown field anywhere is a 400
 * "Unable to parse the given JSON: unknown field ..." (OpenTSDB silently
 * ignores unknown fields of a query and sub-query), and a field of the
 * wrong JSON type is a 400 naming it (Jackson coerces some, e.g. the
 * string "true" for a bool).  Sub-queries equal as OpenTSDB compares them
 * (aggregator, metric, downsample, rate, rate options, filters, explicit
 * tags) are kept once, as OpenTSDB does; indexes count the kept ones.
 *
 * Errors carry OpenTSDB's sentences where it has one ("Missing start
 * time", "Missing queries", "No such aggregation function: x", "End time
 * [e] must be greater than or equal to the start time [s]", ...), status
 * 400 (500 when out of memory).
 *
 * A parsed query is immutable: reading it from several threads is safe. */
#ifndef TSDB_QUERY_H
#define TSDB_QUERY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "tsdb_agg.h"
#include "tsdb_downsample.h"
#include "tsdb_error.h"
#include "tsdb_filter.h"
#include "tsdb_rate.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsdb_query tsdb_query_t;

/* Parses the POST /api/query body (JSON text, len bytes; need not be
 * NUL-terminated).  now_ms is the query's "now" (relative times, the
 * default end).  Returns the query (owned by the caller, free with
 * tsdb_query_destroy()), or NULL with err filled: an empty body is 400
 * "Missing message content", text that is not JSON or a structure
 * OpenTSDB would not map is 400 "Unable to parse the given JSON..." with
 * the reason in the message and the position in details, a query that
 * maps but does not validate is 400 with OpenTSDB's sentence. */
tsdb_query_t *tsdb_query_parse_json(const char *body, size_t len,
                                    int64_t now_ms, tsdb_error_t *err);

/* Parses GET /api/query's arguments: keys/vals are the URL-decoded query
 * arguments in order, n of them (a key may repeat: several m=).
 *   start (required), end, m (one or more:
 *   AGG:[DS:][rate[{counter[,max[,reset]]}]:][explicit_tags:]METRIC[{tags}][{filters}]
 *   where "dropcounter" for counter also drops resets), ms or
 *   msResolution, arrays, show_query or showQuery, global_annotations,
 *   no_annotations, padding, show_stats, show_summary, timezone.
 * A flag is on when present (as in OpenTSDB) unless its value is "false"
 * or "0".  tsuid=, exp=, show_tsuids and m= parts for percentiles,
 * histograms or pre-aggregates are refused (400); other unknown
 * arguments are ignored, as OpenTSDB does; an unknown m= part is a 400.
 * No m= is 400 "Missing sub queries".  Returns as
 * tsdb_query_parse_json(). */
tsdb_query_t *tsdb_query_parse_args(const char *const *keys,
                                    const char *const *vals, size_t n,
                                    int64_t now_ms, tsdb_error_t *err);

/* Frees *q_p (NULL accepted) and sets it NULL. */
void tsdb_query_destroy(tsdb_query_t **q_p);

int64_t tsdb_query_start_ms(const tsdb_query_t *q);
int64_t tsdb_query_end_ms(const tsdb_query_t *q);    /* now_ms when none */

/* The points sub-query i is computed from, as OpenTSDB 2.4 scans them
 * (TsdbQuery's getScanStartTimeSeconds and getScanEndTimeSeconds): from
 * the start, aligned down to the downsample interval and then to the
 * hour, up to (not including) the second after the end, aligned up to
 * the next interval and then to the next hour.  Points in this window
 * but outside [start, end] take part in downsampling, rates and the
 * interpolation between series; the answer holds only points in
 * [start, end] (OpenTSDB's serializer drops the others, so a bucket
 * timed before the start is not answered).  Sets *start_ms and *end_ms
 * (inclusive). */
void tsdb_query_scan_ms(const tsdb_query_t *q, size_t i, int64_t *start_ms,
                        int64_t *end_ms);
size_t tsdb_query_count(const tsdb_query_t *q);       /* sub-queries */
const char *tsdb_query_metric(const tsdb_query_t *q, size_t i);
int tsdb_query_arrays(const tsdb_query_t *q);
int tsdb_query_global_annotations(const tsdb_query_t *q);
int tsdb_query_no_annotations(const tsdb_query_t *q);
int tsdb_query_ms_resolution(const tsdb_query_t *q);
int tsdb_query_show_query(const tsdb_query_t *q);

/* OpenTSDB reads "arrays" from the URL even for a POST: the HTTP side
 * sets it from there (and may set the others likewise). */
void tsdb_query_set_arrays(tsdb_query_t *q, int on);
void tsdb_query_set_ms_resolution(tsdb_query_t *q, int on);
void tsdb_query_set_show_query(tsdb_query_t *q, int on);

/* Sub-query i's host names, when its filters narrow the nodes to ask: a
 * case-sensitive literal_or filter on "host" (the first one, as every
 * filter must match).  Fills its distinct names into names[] (pointers
 * owned by q) and returns their number; -1 when the nodes cannot be
 * narrowed (no such filter) or the names are more than cap. */
long tsdb_query_hosts(const tsdb_query_t *q, size_t i, const char **names,
                      size_t cap);

/* Sub-query i as OpenTSDB echoes it with showQuery: aggregator, metric,
 * tsuids, downsample, rate, rateOptions, filters, tags (grouped filters
 * as "type(filter)"), explicitTags, percentiles, index and the flags a
 * 2.4 TSD adds.  New reference, NULL when out of memory. */
json_t *tsdb_query_to_json(const tsdb_query_t *q, size_t i);

#ifdef __cplusplus
}
#endif

#endif
