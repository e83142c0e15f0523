/* tsdb_time.c - OpenTSDB times and durations (tsdb_time.h).
 *
 * Strict: the whole string must be one of the forms, amounts are whole
 * and positive, and nothing overflows int64 milliseconds.  A formatted
 * date is UTC and must exist (2013/02/30 is refused). */
#include "tsdb_time.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "telem_error.h"
#include "telem_why.h"

#define S_MS_MAX (INT64_MAX / 1000)

typedef struct {
    const char *name;
    int64_t ms;
} s_unit_t;

static const s_unit_t s_units[] = {
    { "ms", 1 },
    { "s", 1000 },
    { "m", 60 * 1000 },
    { "h", 3600 * 1000 },
    { "d", INT64_C(86400) * 1000 },
    { "w", INT64_C(7) * 86400 * 1000 },
    { "n", INT64_C(30) * 86400 * 1000 },
    { "y", INT64_C(365) * 86400 * 1000 },
};

/* The digits at s[0..len) as a non-negative int64; -1 when there are none,
 * something else is among them, or the value overflows. */
static int64_t
s_digits(const char *s, size_t len)
{
    if (len == 0)
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char) s[i]) || v > (INT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

int
tsdb_time_duration(const char *s, size_t len, int64_t *ms, char *why,
                   size_t why_size)
{
    size_t n = 0;
    while (n < len && isdigit((unsigned char) s[n]))
        n++;
    int64_t amount = s_digits(s, n);
    const char *unit = s + n;
    size_t ulen = len - n;
    for (size_t i = 0; amount > 0 && i < sizeof s_units / sizeof *s_units;
         i++) {
        if (strlen(s_units[i].name) != ulen
            || memcmp(unit, s_units[i].name, ulen) != 0)
            continue;
        if (amount > INT64_MAX / s_units[i].ms)
            break;
        *ms = amount * s_units[i].ms;
        return 0;
    }
    telem_why(why, why_size,
              "'%.*s' is not a duration (a positive whole number and one of "
              "ms, s, m, h, d, w, n, y, as in 30s or 1h)",
              (int) (len > 64 ? 64 : len), s);
    return TELEM_EINVAL;
}

/* "2013/03/27-12:42:04" and its shorter forms, UTC. */
static int
s_date(const char *s, int64_t *ms)
{
    int y, mo, d, h = 0, mi = 0, sec = 0, end = -1;
    char sep = 0;
    size_t len = strlen(s);
    if (sscanf(s, "%4d/%2d/%2d%n", &y, &mo, &d, &end) == 3
        && (size_t) end == len && len == 10)
        goto make;
    end = -1;
    if (len == 16 && sscanf(s, "%4d/%2d/%2d%c%2d:%2d%n", &y, &mo, &d, &sep,
                            &h, &mi, &end) == 6 && (size_t) end == len)
        goto check_sep;
    end = -1;
    if (len == 19 && sscanf(s, "%4d/%2d/%2d%c%2d:%2d:%2d%n", &y, &mo, &d,
                            &sep, &h, &mi, &sec, &end) == 7
        && (size_t) end == len)
        goto check_sep;
    return TELEM_EINVAL;
check_sep:
    if (sep != '-' && sep != ' ')
        return TELEM_EINVAL;
make:
    for (size_t i = 0; i < len; i++)   /* sscanf took signs and spaces */
        if (s[i] == '+' || (s[i] == ' ' && i != 10) || s[i] == '\t')
            return TELEM_EINVAL;
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23
        || mi > 59 || sec > 59 || h < 0 || mi < 0 || sec < 0)
        return TELEM_EINVAL;
    struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d,
                     .tm_hour = h, .tm_min = mi, .tm_sec = sec };
    time_t t = timegm(&tm);
    if (t == (time_t) -1 || tm.tm_mday != d || tm.tm_mon != mo - 1)
        return TELEM_EINVAL;              /* 2013/02/30 became March 2 */
    *ms = (int64_t) t * 1000;
    return 0;
}

/* Seconds or milliseconds, or seconds with up to 3 digits of fraction. */
static int
s_number(const char *s, int64_t *ms)
{
    const char *dot = strchr(s, '.');
    size_t len = strlen(s);
    if (dot) {
        size_t il = (size_t) (dot - s), fl = len - il - 1;
        int64_t sec = s_digits(s, il), frac = s_digits(dot + 1, fl);
        if (sec < 0 || frac < 0 || il > 10 || fl > 3)
            return TELEM_EINVAL;
        for (size_t i = fl; i < 3; i++)
            frac *= 10;
        *ms = sec * 1000 + frac;
        return 0;
    }
    int64_t v = s_digits(s, len);
    if (v < 0 || len > 13)
        return TELEM_EINVAL;
    *ms = len <= 10 ? v * 1000 : v;
    return 0;
}

int
tsdb_time_parse(const char *s, int64_t now_ms, int64_t *ms, char *why,
                size_t why_size)
{
    if (!s || !*s) {
        telem_why(why, why_size, "%s", "an empty time");
        return TELEM_EINVAL;
    }
    size_t len = strlen(s);
    if (strcmp(s, "now") == 0) {
        *ms = now_ms;
        return 0;
    }
    if (len > 4 && strcmp(s + len - 4, "-ago") == 0) {
        int64_t d;
        int rc = tsdb_time_duration(s, len - 4, &d, why, why_size);
        if (rc)
            return rc;
        if (d > now_ms) {
            telem_why(why, why_size, "'%.64s' is before 1970", s);
            return TELEM_EINVAL;
        }
        *ms = now_ms - d;
        return 0;
    }
    int rc = strchr(s, '/') ? s_date(s, ms) : s_number(s, ms);
    if (rc)
        telem_why(why, why_size,
                  "'%.64s' is not a time (now, 1h-ago, seconds or "
                  "milliseconds since 1970, or yyyy/MM/dd-HH:mm:ss UTC)",
                  s);
    return rc;
}

int64_t
tsdb_time_ns(int64_t ms)
{
    const int64_t ns_per_ms = 1000000;
    return ms > INT64_MAX / ns_per_ms ? INT64_MAX
           : ms < INT64_MIN / ns_per_ms ? INT64_MIN : ms * ns_per_ms;
}
