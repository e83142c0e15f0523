/* tsdb_downsample.h - OpenTSDB's downsampling of one series:
 * "INTERVAL-FUNCTION[-FILL]" as /api/query's `downsample` gives it.
 *
 *   INTERVAL  a duration (tsdb_time.h: 30s, 1m, 1h, ...) or "all" / "0all"
 *             (one bucket over the whole query)
 *   FUNCTION  avg sum min max count dev first last, and zimsum, mimmin,
 *             mimmax (inside one series the same as sum, min, max)
 *   FILL      what an empty bucket between the query's start and end
 *             gives: none (left out, the default), nan (NaN), null
 *             (JSON null), zero (0)
 *
 * Buckets are aligned on the interval: a point at t falls in the bucket
 * that starts at t - t % interval, and the bucket's point carries that
 * start as its time (the first bucket may begin before the query's
 * start; fills cover every bucket from that one to the one holding the
 * end).  "all" has one bucket, timed at the query's start.
 * dev is the population standard deviation of the bucket's values.
 * Calendar buckets ("1dc") are refused with a sentence saying so.
 *
 * Thread-safe: the functions touch only their arguments. */
#ifndef TSDB_DOWNSAMPLE_H
#define TSDB_DOWNSAMPLE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TSDB_DS_AVG, TSDB_DS_SUM, TSDB_DS_MIN, TSDB_DS_MAX, TSDB_DS_COUNT,
    TSDB_DS_DEV, TSDB_DS_FIRST, TSDB_DS_LAST
} tsdb_ds_fn_t;

typedef enum {
    TSDB_FILL_NONE, TSDB_FILL_NAN, TSDB_FILL_NULL, TSDB_FILL_ZERO
} tsdb_fill_t;

typedef struct {
    int64_t interval_ms;       /* 0: "all", one bucket */
    tsdb_ds_fn_t fn;
    tsdb_fill_t fill;
} tsdb_downsample_t;

/* One output point: a value, or (fill null) none. */
typedef struct {
    int64_t ts_ms;
    double value;
    int is_null;               /* fill null: JSON null, value unused */
} tsdb_point_t;

/* Parses `spec` into *ds.  0 or TELEM_EINVAL with a sentence in `why`. */
int tsdb_downsample_parse(const char *spec, tsdb_downsample_t *ds,
                          char *why, size_t why_size);

/* Downsamples the n points (ts ascending, in ms) into out[], at most
 * out_cap points.  [start_ms, end_ms] is the query's range: the fill
 * policy makes the empty buckets from the one holding start_ms to the
 * one holding end_ms.  With an interval, points outside the range are
 * bucketed too, as OpenTSDB computes from a wider scan than it answers
 * (tsdb_query_scan_ms; the caller drops the buckets outside the range);
 * "all" takes only the points in the range, as OpenTSDB's does.  n + 1 +
 * tsdb_downsample_max_points() points always suffice, and
 * tsdb_downsample_max_points() alone when every point is in the range.
 * Returns the number of points written, or TELEM_ETOOBIG when out_cap is
 * too small (out holds the first out_cap). */
long tsdb_downsample_run(const tsdb_downsample_t *ds, const int64_t *ts,
                         const double *v, size_t n, int64_t start_ms,
                         int64_t end_ms, tsdb_point_t *out, size_t out_cap);

/* How many points tsdb_downsample_run() may write for [start, end]. */
size_t tsdb_downsample_max_points(const tsdb_downsample_t *ds,
                                  int64_t start_ms, int64_t end_ms);

#ifdef __cplusplus
}
#endif

#endif
