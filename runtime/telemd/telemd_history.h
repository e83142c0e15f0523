/* telemd_history.h - a query that reaches before the retention window,
 * answered from the flush log and the store together.
 *
 * Per series: the log's points older than the store's oldest point of the
 * series, then the store's points; series only the log holds come after
 * those the store holds.  The log's range starts no earlier than
 * now - history_ns (when history_ns > 0).  max_points keeps the newest
 * points of the merged series.  Memory: the log's matching series are
 * copied for the length of the call (bounded by the query's range and the
 * reply budget of the caller, which stops the walk).
 *
 * Not thread-safe: the caller owns the store and the history.
 */
#ifndef TELEMD_HISTORY_H
#define TELEMD_HISTORY_H

#include <stdint.h>

#include "telem_hist.h"
#include "telem_store.h"

/* 1 when q should be answered with the log: a range query (not LATEST or
 * LIST) whose start lies before now_ns - window_ns. */
int telemd_history_reaches(const telem_store_query_t *q, int64_t now_ns,
                           int64_t window_ns);

/* Walks the merged series as telem_store_query() would, calling fn.
 * Returns 0, fn's non-zero value, TELEM_EINVAL or TELEM_ENOMEM. */
int telemd_history_query(telem_store_t *store, telem_hist_t *hist,
                         const char *node, const telem_store_query_t *q,
                         int64_t now_ns, int64_t history_ns,
                         telem_store_series_fn fn, void *arg);

#endif
