/* telem_log.c - timestamped log lines on stderr, and a rate limiter. */
#include "telem_log.h"
#include "telem_time.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Process-wide settings written once by telem_log_init() before any thread
 * starts, read-only afterwards. */
static const char *s_progname = "telem";
static telem_log_level_t s_threshold = TELEM_LOG_INFO;

static const char *const s_level_names[] = { "error", "warn", "info", "debug" };

void
telem_log_init(const char *progname, telem_log_level_t threshold)
{
    if (progname) {
        const char *slash = strrchr(progname, '/');
        s_progname = slash ? slash + 1 : progname;
    }
    s_threshold = threshold;
}

/* A line longer than the stack buffer (a restart line naming many GPUs'
 * reasons) is formatted again on the heap, whole up to S_LINE_MAX. */
#define S_LINE_MAX (64 * 1024)

static void
s_vlog(telem_log_level_t level, const char *fmt, va_list ap)
{
    char stack[1024], *line = stack;
    size_t size = sizeof stack;
    int64_t now = telem_now_ns();
    time_t secs = (time_t) (now / TELEM_NS_PER_SEC);
    struct tm tm;
    gmtime_r(&secs, &tm);
    int n = (int) strftime(line, size, "%Y-%m-%dT%H:%M:%S", &tm);
    n += snprintf(line + n, size - (size_t) n, ".%03dZ %s[%d] %s: ",
                  (int) ((now % TELEM_NS_PER_SEC) / TELEM_NS_PER_MS),
                  s_progname, (int) getpid(), s_level_names[level]);
    va_list again;
    va_copy(again, ap);
    int m = vsnprintf(line + n, size - (size_t) n - 1, fmt, ap);
    if (m >= (int) (size - (size_t) n - 1)) {
        size_t want = (size_t) n + (size_t) m + 2;
        char *big = malloc(want < S_LINE_MAX ? want : S_LINE_MAX);
        if (big) {
            size = want < S_LINE_MAX ? want : S_LINE_MAX;
            memcpy(big, line, (size_t) n);
            line = big;
            m = vsnprintf(line + n, size - (size_t) n - 1, fmt, again);
        }
    }
    va_end(again);
    if (m > 0)
        n += m < (int) (size - (size_t) n - 1) ? m
                                                : (int) (size - (size_t) n - 2);
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, (size_t) n);
    (void) w;
    if (line != stack)
        free(line);
}

void
telem_log(telem_log_level_t level, const char *fmt, ...)
{
    if (level > s_threshold)
        return;
    va_list ap;
    va_start(ap, fmt);
    s_vlog(level, fmt, ap);
    va_end(ap);
}

void
telem_log_limited(telem_ratelimit_t *rl, telem_log_level_t level,
                  const char *fmt, ...)
{
    if (level > s_threshold)
        return;
    int64_t now = telem_mono_ns();
    if (now - rl->window_start >= rl->period_ns) {
        if (rl->suppressed)
            telem_log(level, "%llu similar messages suppressed",
                      (unsigned long long) rl->suppressed);
        rl->window_start = now;
        rl->emitted = 0;
        rl->suppressed = 0;
    }
    if (rl->emitted >= rl->burst) {
        rl->suppressed++;
        return;
    }
    rl->emitted++;
    va_list ap;
    va_start(ap, fmt);
    s_vlog(level, fmt, ap);
    va_end(ap);
}
