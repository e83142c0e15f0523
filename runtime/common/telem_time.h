/* telem_time.h - telem's one time type: int64 nanoseconds.
 *
 * Sample timestamps are realtime (nanoseconds since the Unix epoch);
 * intervals and deadlines are monotonic.  Both are plain int64_t.
 */
#ifndef TELEM_TIME_H
#define TELEM_TIME_H

#include <stdint.h>
#include <time.h>

#define TELEM_NS_PER_SEC INT64_C(1000000000)
#define TELEM_NS_PER_MS INT64_C(1000000)

/* Realtime clock in nanoseconds since the epoch.  Thread-safe. */
static inline int64_t
telem_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t) ts.tv_sec * TELEM_NS_PER_SEC + ts.tv_nsec;
}

/* Monotonic clock in nanoseconds; use for intervals and deadlines. */
static inline int64_t
telem_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * TELEM_NS_PER_SEC + ts.tv_nsec;
}

#endif
