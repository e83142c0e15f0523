/* tsdb_time.h - the times and durations of OpenTSDB's HTTP API, as
 * telem_agg reads them in /api/query (`start`, `end`, `downsample`).
 *
 * A time is one of
 *   now                       the query's "now"
 *   AMOUNT UNIT-ago           relative: 1h-ago, 30s-ago, 500ms-ago
 *   1364410924                absolute seconds (at most 10 digits)
 *   1364410924250             absolute milliseconds (11 to 13 digits)
 *   1364410924.250            seconds with a fraction (at most 3 digits)
 *   2013/03/27-12:42:04       a UTC date and time; also with a space for
 *   2013/03/27 12:42          the '-', without seconds, or the date alone
 * A duration (and a relative time's amount and unit) is a positive whole
 * AMOUNT and a UNIT: ms, s, m (minutes), h, d, w, n (months of 30 days),
 * y (years of 365 days).
 *
 * Times are int64 milliseconds since the epoch (OpenTSDB's resolution);
 * the functions below never read the clock: the caller passes "now".
 * On a bad string they return TELEM_EINVAL and, when `why` is given, a
 * sentence naming what was wrong.  Thread-safe: they touch only their
 * arguments. */
#ifndef TSDB_TIME_H
#define TSDB_TIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* `s` as a time, in ms since the epoch, into *ms.  0 or TELEM_EINVAL. */
int tsdb_time_parse(const char *s, int64_t now_ms, int64_t *ms, char *why,
                    size_t why_size);

/* `s` as a duration in ms ("1m" -> 60000) into *ms.  Parses `len` bytes
 * of `s` (the downsample spec "1m-avg" holds one).  0 or TELEM_EINVAL. */
int tsdb_time_duration(const char *s, size_t len, int64_t *ms, char *why,
                       size_t why_size);

/* A time in ms as telem's int64 ns, saturating: OpenTSDB's syntax reaches
 * past int64 ns (10-digit seconds run to the year 2286, ns end in 2262;
 * "200y-ago" before 1770), so a range's ends convert to INT64_MAX or
 * INT64_MIN there instead of overflowing. */
int64_t tsdb_time_ns(int64_t ms);

#ifdef __cplusplus
}
#endif

#endif
