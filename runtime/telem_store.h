/* telem_store.h - the node's in-memory time-series store.
 *
 * A series is a metric name plus a sorted set of tags; its points are
 * (int64 realtime ns, double) pairs kept in a ring buffer that grows on
 * demand.  Points older than the retention window (relative to the clock the
 * caller passes in) are expired.  Memory is bounded: the store counts the
 * bytes of its rings and series and refuses new points or new series beyond
 * its cap, counting every refused sample in `dropped`.  When one series
 * reaches max_points_per_series, its oldest point is overwritten (counted in
 * `evicted`, not in `dropped`).
 *
 * This is a pure data structure: no sockets, no threads, no logging.
 * Not thread-safe: one owner (telemd's actor) uses it.
 */
#ifndef TELEM_STORE_H
#define TELEM_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "telem_proto.h"

typedef struct telem_store telem_store_t;

typedef struct {
    int64_t window_ns;               /* retention; default 300 s */
    size_t mem_cap_bytes;            /* default 256 MiB */
    uint32_t max_series;             /* default 100000 */
    uint32_t max_points_per_series;  /* default 1048576 */
} telem_store_config_t;

typedef struct {
    uint64_t nseries;
    uint64_t npoints;
    uint64_t mem_bytes;       /* bytes accounted against the cap */
    uint64_t mem_cap_bytes;
    uint64_t appended;        /* points accepted since creation */
    uint64_t dropped;         /* points refused: cap reached, bad input */
    uint64_t expired;         /* points removed by the retention window */
    uint64_t evicted;         /* points overwritten in a full series */
} telem_store_stats_t;

/* Fills *cfg with the defaults above. */
void telem_store_config_default(telem_store_config_t *cfg);

/* Returns a new empty store, or NULL (out of memory or invalid config:
 * window_ns <= 0 or a zero cap).  cfg NULL means defaults. */
telem_store_t *telem_store_new(const telem_store_config_t *cfg);

/* Frees the store; accepts NULL and nulls *self_p. */
void telem_store_destroy(telem_store_t **self_p);

/* Changes the retention window (> 0); points outside it go at the next
 * append or expire.  Returns 0 or TELEM_EINVAL. */
int telem_store_set_window(telem_store_t *self, int64_t window_ns);
int64_t telem_store_window(const telem_store_t *self);

/* Appends one point.  `tags` need not be sorted; they are copied, sorted by
 * key, and a repeated key keeps its last value.  A point whose timestamp is
 * older than the series' newest point is inserted in order (points stay
 * time-ordered).  A point older than now_ns - window is dropped as expired.
 * Returns 0, TELEM_EINVAL (empty or over-long names, too many tags, NaN
 * timestamp...), or TELEM_EFULL (memory or series cap; counted in dropped). */
int telem_store_append(telem_store_t *self, const char *metric,
                       const telem_tag_t *tags, uint32_t ntags,
                       int64_t ts_ns, double value, int64_t now_ns);

/* Records a metric's type, unit and doc for listings (replaces earlier
 * ones).  Returns 0 or TELEM_EINVAL/TELEM_ENOMEM. */
int telem_store_describe(telem_store_t *self, const telem_meta_t *meta);

/* Looks up a metric's description; NULL when none was given. */
const telem_meta_t *telem_store_meta(const telem_store_t *self,
                                     const char *metric);

/* Removes every point older than now_ns - window, and series left empty
 * for a whole window.  Returns the number of points removed. */
uint64_t telem_store_expire(telem_store_t *self, int64_t now_ns);

/* Called once per matching series, in no particular order.  `s` and what it
 * points to are valid only during the call.  Return 0 to go on, non-zero to
 * stop the walk (telem_store_query then returns that value). */
typedef int (*telem_store_series_fn)(void *arg, const telem_series_t *s);

/* Walks the series matching q (metrics, filters, time range, max_points,
 * TELEM_QUERY_LIST / TELEM_QUERY_LATEST; q->id is ignored) as of now_ns.
 * Series with no point in the range are skipped, except with
 * TELEM_QUERY_LIST, which lists every live series with npoints 0.
 * Returns 0, the callback's non-zero value, or TELEM_EINVAL. */
int telem_store_query(telem_store_t *self, const telem_query_t *q,
                      int64_t now_ns, telem_store_series_fn fn, void *arg);

void telem_store_stats(const telem_store_t *self, telem_store_stats_t *out);

/* Adds n to the dropped counter (for samples refused before the store, such
 * as those above the node's telemetry level). */
void telem_store_count_dropped(telem_store_t *self, uint64_t n);

#endif
