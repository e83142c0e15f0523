/* telem_log.h - log lines for telem's daemons, with a rate limiter.
 *
 * Libraries never log on their own; daemons and tools call telem_log().
 * A telem_ratelimit_t kept in the caller's context lets a repeated failure
 * (a malformed message arriving in a loop, say) print at most `burst` lines
 * per `period_ns`, then one summary line with the count that was suppressed.
 */
#ifndef TELEM_LOG_H
#define TELEM_LOG_H

#include <stdint.h>

typedef enum {
    TELEM_LOG_ERROR = 0,
    TELEM_LOG_WARN = 1,
    TELEM_LOG_INFO = 2,
    TELEM_LOG_DEBUG = 3
} telem_log_level_t;

/* Sets the process's log threshold and the program name printed on every
 * line (the string is not copied; pass a literal or argv[0]).  Call once at
 * start-up, before threads start. */
void telem_log_init(const char *progname, telem_log_level_t threshold);

/* Writes one line "YYYY-mm-ddTHH:MM:SS.mmmZ prog[pid] level: message" to
 * stderr if `level` is at or below the threshold.  Thread-safe (one write(2)
 * per line). */
void telem_log(telem_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

typedef struct {
    int64_t period_ns;     /* window length */
    uint32_t burst;        /* lines allowed per window */
    int64_t window_start;  /* monotonic ns */
    uint32_t emitted;      /* lines in the current window */
    uint64_t suppressed;   /* lines dropped in the current window */
} telem_ratelimit_t;

/* Initialiser: at most `burst` lines every `period_s` seconds. */
#define TELEM_RATELIMIT_INIT(period_s, burst_n) \
    { (int64_t) (period_s) * 1000000000LL, (burst_n), 0, 0, 0 }

/* Like telem_log(), but subject to the limiter `rl` (not thread-safe: one
 * limiter per thread or per context). */
void telem_log_limited(telem_ratelimit_t *rl, telem_log_level_t level,
                       const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
