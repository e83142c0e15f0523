/* tsdb_rate.h - OpenTSDB's rate of one series, /api/query's `rate` with
 * its `rateOptions`.
 *
 * Between two neighbouring points (t0, v0) and (t1, v1) the rate, timed
 * at t1, is (v1 - v0) per second: (v1 - v0) / ((t1 - t0) / 1000).  The
 * first point gives none.  For a counter (`counter`), a value that went
 * down is a reset:
 *   dropResets    the point is left out (the next rate counts from it);
 *   otherwise     the counter is taken to have wrapped at counterMax
 *                 (default 2^63 - 1): (counterMax - v0 + v1) per second,
 *                 and when resetValue is above 0 and that rate is above
 *                 it, the rate is 0 instead.
 * Without `counter` a value that went down gives a negative rate.  A point
 * not later than the one before it is skipped.
 *
 * Thread-safe: the functions touch only their arguments. */
#ifndef TSDB_RATE_H
#define TSDB_RATE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int counter;
    double counter_max;        /* TSDB_RATE_COUNTER_MAX by default */
    double reset_value;        /* 0: never */
    int drop_resets;
} tsdb_rate_opts_t;

#define TSDB_RATE_COUNTER_MAX 9223372036854775807.0

/* The defaults: not a counter, counterMax 2^63 - 1, no reset value. */
tsdb_rate_opts_t tsdb_rate_defaults(void);

/* The rates of the n points (ts in ms, ascending) into out_ts/out_v, at
 * most n - 1 of them.  Returns how many were written. */
size_t tsdb_rate_run(const tsdb_rate_opts_t *o, const int64_t *ts,
                     const double *v, size_t n, int64_t *out_ts,
                     double *out_v);

#ifdef __cplusplus
}
#endif

#endif
