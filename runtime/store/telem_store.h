/* telem_store.h - the node's in-memory time-series store.
 *
 * A series is a metric name plus a sorted set of tags; its points are
 * (int64 realtime ns, double) pairs kept in compressed blocks
 * (telem_block.h, docs/store.md): an open block that appends go to, and
 * closed blocks of block_points points laid end to end in one buffer per
 * series.  Points older than the retention window (relative to the clock
 * the caller passes in) are expired.  Memory is bounded: the store counts
 * the bytes of its blocks and series and refuses new points or new series
 * beyond its cap, counting every refused sample in `dropped`.  When one
 * series reaches max_points_per_series, its oldest closed block is dropped
 * (its points counted in `evicted`, not in `dropped`); a series whose
 * points all fit in its open block loses its oldest point instead.
 *
 * Expiry works by blocks: a closed block goes once all its points are
 * older than the window (queries never return the older points of a block
 * that stays); the open block loses its expired points one by one unless a
 * flush (telem_store_flush) wrote a version of it, in which case it is
 * closed first (a later version must never lack points an earlier one
 * had).  So `expired` and npoints lag the window by up to a block.
 *
 * What the memory cap counts (mem_bytes): every byte the store allocates
 * for data - each series' block buffer and block index (their capacity),
 * its open block (telem_block_writer_mem: struct and buffers), each
 * series' struct, tags and canonical key, each metric's entry and its meta
 * strings, and the slots of the two hash indexes.  Not counted: the
 * store's fixed context (~9 KiB with its scratch tag set) and its scratch
 * (query results, at most 16 bytes times the most points a query decoded;
 * one open block's snapshot).  An append is refused with TELEM_EFULL when
 * its open block's buffers could not double within the cap (the codec
 * grows them by doubling), or closing the full open block would pass it;
 * a new series (or meta) when its bytes would.  Expiry frees the block
 * buffers of an empty series and trims spare capacity, and frees a series
 * once it has been empty for a whole window (its newest point is older
 * than now - 2 * window), together with its metric entry unless that has
 * a meta.
 *
 * Closing a full open block copies its snapshot (the open block's own
 * encodings, ~4-8 bytes a point); telem_store_expire() re-codes closed
 * blocks in their best encodings ("seals" them, a bounded number of
 * points per call) and telem_store_flush() seals what it hands out.
 *
 * Counters: npoints == appended + loaded - expired - evicted at all times
 * (loaded is 0 in a store that never loaded a chunk).
 *
 * This is a pure data structure: no sockets, no threads, no logging, no
 * wire types (it names only the shared values of telem_types.h; telemd's
 * agent turns a decoded query request into a telem_store_query_t).
 * Not thread-safe: one owner (telemd's actor) uses it.
 */
#ifndef TELEM_STORE_H
#define TELEM_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "telem_chunk.h"
#include "telem_error.h"
#include "telem_types.h"

typedef struct telem_store telem_store_t;
typedef struct telem_store_tags telem_store_tags_t;

typedef struct {
    int64_t window_ns;               /* retention; default 300 s */
    size_t mem_cap_bytes;            /* default 256 MiB */
    uint32_t max_series;             /* default 100000 */
    uint32_t max_points_per_series;  /* default 1048576 */
    uint32_t max_counter_series;     /* default 10000; 0: none */
    uint32_t block_points;           /* points per closed block,
                                        1..65535; default 120 */
    uint32_t merge_points;           /* closed blocks already flushed are
                                        merged in memory into blocks of up
                                        to this many points (at most 65535
                                        and max_points_per_series / 4);
                                        default 960; <= block_points:
                                        never */
} telem_store_config_t;

typedef struct {
    uint64_t nseries;
    uint64_t ncounters;       /* counter series among nseries */
    uint64_t npoints;
    uint64_t mem_bytes;       /* bytes accounted against the cap */
    uint64_t mem_cap_bytes;
    uint64_t appended;        /* points accepted since creation */
    uint64_t dropped;         /* points refused: cap reached, bad input */
    uint64_t expired;         /* points removed by the retention window */
    uint64_t evicted;         /* points overwritten in a full series */
    uint64_t loaded;          /* points held from telem_store_load() */
    uint64_t stale;           /* chunks telem_store_load() skipped */
} telem_store_stats_t;

/* Fills *cfg with the defaults above. */
void telem_store_config_default(telem_store_config_t *cfg);

/* Returns a new empty store, or NULL with *err (if err is not NULL) set to
 * TELEM_EINVAL (invalid config: window_ns <= 0, a zero cap, block_points
 * 0 or over TELEM_BLOCK_MAX_POINTS) or
 * TELEM_ENOMEM.  cfg NULL means defaults. */
telem_store_t *telem_store_new(const telem_store_config_t *cfg, int *err);

/* Frees the store; accepts NULL and nulls *self_p. */
void telem_store_destroy(telem_store_t **self_p);

/* Changes the retention window (> 0); points outside it go at the next
 * append or expire.  Returns 0 or TELEM_EINVAL. */
int telem_store_set_window(telem_store_t *self, int64_t window_ns);
int64_t telem_store_window(const telem_store_t *self);

/* Appends one point.  `tags` need not be sorted; they are copied, sorted by
 * key, and a repeated key keeps its last value.  A point whose timestamp is
 * older than the series' newest point is inserted in order (points stay
 * time-ordered); an equal timestamp goes after the existing ones.  A point
 * older than now_ns - window is dropped as expired: late on arrival, it is
 * counted in `dropped` (not `expired`) and the call returns 0.  Points of
 * the series older than the window go first (lazy expiry, counted in
 * `expired`).  In a series full at max_points_per_series, a point older
 * than all the others is itself the one overwritten (still counted in
 * `appended` and `evicted`).  Any int64 timestamp is accepted; values may
 * be NaN.  Metric names, tag keys and tag values are at most TELEM_NAME_MAX
 * bytes; names and keys must be non-empty, values may be empty.
 * Returns 0, TELEM_EINVAL (NULL or empty metric, over-long names, more than
 * TELEM_TAGS_MAX tags, tags NULL with ntags > 0, a NULL or empty key, a
 * NULL value), TELEM_EFULL (memory or series cap) or TELEM_ENOMEM; every
 * failure is counted in dropped (except a NULL self). */
int telem_store_append(telem_store_t *self, const char *metric,
                       const telem_tag_t *tags, uint32_t ntags,
                       int64_t ts_ns, double value, int64_t now_ns);

/* Adds `delta` (finite, >= 0) to the running total of the counter series
 * of metric and tags (tags as for telem_store_append()) and appends the
 * new total as a point: the series' value is the sum of every increment
 * it was given since it was made.  The series is made, as a counter
 * series, by its first increment (a series already made by appends
 * becomes one, its total starting at 0 there); its metric is described
 * as a counter unless it was described otherwise, and is then made a
 * counter keeping its unit and doc.
 *
 * Time: points of a counter stay in increment order, so a point is
 * stamped max(ts_ns, the series' newest time), or now_ns when that is
 * older than the window: an increment is never dropped as late.
 * Lifetime: the total lasts as long as the store.  A counter series is
 * never freed by expiry: telem_store_expire() appends its total again at
 * now_ns once its newest point is older than half the window, so the
 * series always has points in the window (a counter is always listed).
 * Bound: at most max_counter_series counter series (and max_series
 * series of every kind, and the memory cap): an increment that would
 * make one more is refused with TELEM_EFULL.  The total is kept even
 * when its point cannot be (memory cap): the next point carries it.
 * Returns 0, TELEM_EINVAL (bad metric or tags as for
 * telem_store_append(), a negative or non-finite delta), TELEM_EFULL or
 * TELEM_ENOMEM; every refusal is counted in dropped. */
int telem_store_counter_add(telem_store_t *self, const char *metric,
                            const telem_tag_t *tags, uint32_t ntags,
                            int64_t ts_ns, double delta, int64_t now_ns);

/* A prepared tag set: tags put once into the canonical form a series key
 * uses (validated, sorted by key, a repeated key keeping its last value,
 * strings copied, hashed), for many appends that share them, such as the
 * samples of one batch.  Appending with a prepared set behaves exactly
 * like telem_store_append() with the same tags; it only skips redoing that
 * work per sample.  A set belongs to no store and may serve several.
 * About 8.5 KiB.  Not thread-safe: one owner. */

/* Returns a new set holding no tags, or NULL when out of memory. */
telem_store_tags_t *telem_store_tags_new(void);

/* Frees the set; accepts NULL and nulls *self_p. */
void telem_store_tags_destroy(telem_store_tags_t **self_p);

/* Replaces the set's content with tags[0..ntags) (copied; the caller's
 * strings may go away afterwards).  Returns 0 or TELEM_EINVAL (NULL self,
 * or the tags telem_store_append() would refuse); after a failure the set
 * stays refused: every append with it fails with TELEM_EINVAL and is
 * counted in dropped, until a successful telem_store_tags_set(). */
int telem_store_tags_set(telem_store_tags_t *self, const telem_tag_t *tags,
                         uint32_t ntags);

/* telem_store_append() with the tags in a prepared set: same checks on the
 * metric, same handling of late, out-of-order and over-cap points, same
 * counters and return values; a NULL or refused set gives TELEM_EINVAL
 * (counted in dropped unless self is NULL).  The set is only read. */
int telem_store_append_tags(telem_store_t *self, const char *metric,
                            const telem_store_tags_t *tags, int64_t ts_ns,
                            double value, int64_t now_ns);

/* One point for telem_store_append_many(). */
typedef struct {
    const char *metric;
    int64_t ts_ns;
    double value;
} telem_store_point_t;

/* Appends pts[0..n), all with the tags of the prepared set: the same as
 * telem_store_append_tags() for each point in order (same series, points,
 * counters, refusals), only faster for points of many series, whose
 * lookups are started together.  Returns 0 when every point was appended
 * (or dropped as late on arrival), else the error of the last point
 * refused (TELEM_EINVAL, TELEM_EFULL, TELEM_ENOMEM; each refused point is
 * counted in dropped); TELEM_EINVAL without counting anything for a NULL
 * self or NULL pts with n > 0.  A NULL or refused set refuses all n. */
int telem_store_append_many(telem_store_t *self,
                            const telem_store_tags_t *tags,
                            const telem_store_point_t *pts, uint32_t n,
                            int64_t now_ns);

/* Records a metric's type, unit and doc for listings (replaces earlier
 * ones).  The strings are copied; NULL unit or doc mean "".  Metas count
 * against the memory cap and outlive the metric's series.
 * Returns 0, TELEM_EINVAL (bad name, type, unit over TELEM_NAME_MAX or doc
 * over TELEM_TEXT_MAX), TELEM_EFULL (memory cap) or TELEM_ENOMEM. */
int telem_store_describe(telem_store_t *self, const telem_meta_t *meta);

/* Looks up a metric's description; NULL when none was given.  The pointer
 * stays valid until the next telem_store_describe() of the same metric or
 * the store's destruction. */
const telem_meta_t *telem_store_meta(const telem_store_t *self,
                                     const char *metric);

/* Removes the points older than now_ns - window (by blocks, as above), and
 * series left empty for a whole window; trims buffers and indexes that
 * became sparse; seals closed blocks, then merges flushed ones
 * (merge_points), up to 10,000 points re-coded a call.  Appends
 * the total of each counter series whose newest point is older than half
 * the window again, at now_ns (telem_store_counter_add()).
 * O(number of series).  Returns the number of points removed. */
uint64_t telem_store_expire(telem_store_t *self, int64_t now_ns);

/* Called once per matching series, in no particular order.  `s` and what it
 * points to are valid only during the call (ts/values may point into the
 * store itself); the callback must not modify the store.  Return 0 to go
 * on, non-zero to stop the walk (telem_store_query then returns that
 * value). */
typedef int (*telem_store_series_fn)(void *arg, const telem_series_t *s);

/* What telem_store_query() walks.  Filters are exact key=value matches; a
 * value of "*" only requires the key to be present.  start_ns/end_ns are
 * realtime; end_ns 0 means now, start_ns 0 means the whole retention
 * window.  The arrays are only read during the call. */
typedef struct {
    const char *const *metrics;  /* empty = every metric */
    uint32_t nmetrics;           /* at most TELEM_QUERY_METRICS_MAX */
    const telem_tag_t *filters;
    uint32_t nfilters;
    int64_t start_ns;
    int64_t end_ns;
    uint32_t max_points;         /* per series, newest kept; 0 = no limit */
    uint32_t flags;              /* TELEM_QUERY_LIST, TELEM_QUERY_LATEST */
} telem_store_query_t;

/* Walks the series matching q (metrics, filters, time range, max_points,
 * TELEM_QUERY_LIST / TELEM_QUERY_LATEST) as of now_ns.
 * Metric names match exactly (a name listed twice is walked once); the
 * range [start_ns, end_ns] is inclusive and never reaches before
 * now_ns - window; max_points keeps the newest points of the range and
 * TELEM_QUERY_LATEST only the newest one.  Each series carries its meta's
 * type/unit/doc (gauge, "", "" without one) and its points in time order.
 * Series with no point in the range are skipped, except with
 * TELEM_QUERY_LIST, which ignores the time range and lists every live
 * series (one with a point inside the window) with npoints 0 and
 * ts/values NULL.
 * Returns 0, the callback's non-zero value, TELEM_EINVAL (NULL q or fn,
 * more than TELEM_QUERY_METRICS_MAX metrics, NULL arrays with non-zero
 * counts, a NULL metric name, a NULL or empty filter key or NULL filter
 * value) or TELEM_ENOMEM (query scratch). */
int telem_store_query(telem_store_t *self, const telem_store_query_t *q,
                      int64_t now_ns, telem_store_series_fn fn, void *arg);

void telem_store_stats(const telem_store_t *self, telem_store_stats_t *out);

/* --- the flush log (telem_chunk.h's rules) ------------------------------ */

typedef int (*telem_store_chunk_fn)(void *arg, const telem_chunk_t *c);

/* Hands fn every block holding points not yet handed to a flush, series
 * by series: its closed blocks not yet flushed (closed = 1, sealed first:
 * what the log gets is what memory keeps), then its open block when it
 * has points not yet flushed or changed since (closed = 0, a snapshot).
 * Chunks carry key, key_len, metric, tags, ntags, counter; c and what it
 * points to are valid only during the call, which must not modify the
 * store.  What fn got while returning 0 counts as flushed; a non-zero
 * return stops the walk and is returned.  Also TELEM_EINVAL (NULL self or
 * fn) or TELEM_ENOMEM (scratch; what was handed out so far counts). */
int telem_store_flush(telem_store_t *self, telem_store_chunk_fn fn, void *arg);

/* Takes a chunk read back from the log (only key/key_len, counter,
 * first_seq, block/block_len and closed are read; the block's bytes are
 * copied) as telem_chunk.h's rules say:
 * - a closed block is kept as it is (no re-encoding), after the series'
 *   closed blocks; a version of a closed block held replaces it;
 * - an open one becomes the series' open block (replacing an open block
 *   with the same first_seq: a version), or, when it holds more than
 *   block_points points, a closed block;
 * - a chunk whose first_seq is below the start of the series' newest
 *   block and is no version of a block held is stale: skipped, counted in
 *   `stale`, and 0 returned;
 * - a block whose points are all older than now_ns - window is not kept
 *   (its sequence numbers and a counter's total are);
 * - a counter's total goes on from the last value of its newest block;
 * - the series is made if needed (caps as for appends); loaded chunks
 *   count as flushed and their points in `loaded`.
 * Returns 0, TELEM_EINVAL (NULL self or c), TELEM_EPROTO (a key that is
 * not canonical: no NUL at its end, an empty or over-long name, an odd
 * number of tag strings, tags not sorted or repeated, over TELEM_TAGS_MAX;
 * a block that does not check: telem_block_info), TELEM_EVERSION,
 * TELEM_EFULL or TELEM_ENOMEM.  Nothing changes on an error. */
int telem_store_load(telem_store_t *self, const telem_chunk_t *c,
                     int64_t now_ns);

/* Calls fn for every metric meta (telem_store_describe(), and counters'
 * own), in no particular order; a non-zero return stops the walk and is
 * returned.  m is valid only during the call. */
int telem_store_meta_walk(const telem_store_t *self,
                          int (*fn)(void *arg, const telem_meta_t *m),
                          void *arg);

/* Adds n to the dropped counter (for samples refused before the store, such
 * as those above the node's telemetry level). */
void telem_store_count_dropped(telem_store_t *self, uint64_t n);

#endif
