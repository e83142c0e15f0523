/* tsdb_downsample.c - OpenTSDB's downsampling of one series
 * (tsdb_downsample.h).
 *
 * One pass over the points: each bucket's values are folded as they come
 * (count, sum, min, max, first, last and Welford's running mean and sum
 * of squares for dev), and empty buckets between two with data, or at
 * the ends of the range, are filled as the policy says. */
#include "tsdb_downsample.h"

#include <math.h>
#include <string.h>

#include "telem_error.h"
#include "telem_why.h"
#include "tsdb_acc.h"
#include "tsdb_time.h"

static const struct {
    const char *name;
    tsdb_ds_fn_t fn;
} s_fns[] = {
    { "avg", TSDB_DS_AVG },     { "sum", TSDB_DS_SUM },
    { "min", TSDB_DS_MIN },     { "max", TSDB_DS_MAX },
    { "count", TSDB_DS_COUNT }, { "dev", TSDB_DS_DEV },
    { "first", TSDB_DS_FIRST }, { "last", TSDB_DS_LAST },
    { "zimsum", TSDB_DS_SUM },  { "mimmin", TSDB_DS_MIN },
    { "mimmax", TSDB_DS_MAX },
};

static const char *const s_fills[] = { "none", "nan", "null", "zero" };

/* The i-th '-'-separated field of spec: its start and length. */
static int
s_field(const char *spec, int i, const char **f, size_t *len)
{
    const char *p = spec;
    for (; i > 0; i--) {
        p = strchr(p, '-');
        if (!p)
            return 0;
        p++;
    }
    const char *e = strchr(p, '-');
    *f = p;
    *len = e ? (size_t) (e - p) : strlen(p);
    return 1;
}

static int
s_is(const char *f, size_t len, const char *word)
{
    return strlen(word) == len && memcmp(f, word, len) == 0;
}

int
tsdb_downsample_parse(const char *spec, tsdb_downsample_t *ds, char *why,
                      size_t why_size)
{
    const char *f;
    size_t len;
    int fields = 0;
    for (const char *p = spec; p && *p; p = strchr(p, '-'), p = p ? p + 1 : p)
        fields++;
    if (!spec || fields < 2 || fields > 3 || spec[strlen(spec) - 1] == '-') {
        telem_why(why, why_size,
                  "downsample '%.64s': expected INTERVAL-FUNCTION[-FILL], "
                  "as in 1m-avg or 30s-max-zero", spec ? spec : "");
        return TELEM_EINVAL;
    }
    memset(ds, 0, sizeof *ds);
    s_field(spec, 0, &f, &len);
    if (s_is(f, len, "all") || s_is(f, len, "0all"))
        ds->interval_ms = 0;
    else if (len > 0 && f[len - 1] == 'c') {
        telem_why(why, why_size, "downsample '%.64s': calendar intervals "
                  "are not supported", spec);
        return TELEM_EINVAL;
    } else if (tsdb_time_duration(f, len, &ds->interval_ms, why, why_size))
        return TELEM_EINVAL;
    s_field(spec, 1, &f, &len);
    size_t i = 0;
    for (; i < sizeof s_fns / sizeof *s_fns && !s_is(f, len, s_fns[i].name);
         i++)
        ;
    if (i == sizeof s_fns / sizeof *s_fns) {
        telem_why(why, why_size, "downsample '%.64s': unknown function "
                  "'%.*s' (avg, sum, min, max, count, dev, first, last, "
                  "zimsum, mimmin, mimmax)", spec, (int) (len > 32 ? 32 : len),
                  f);
        return TELEM_EINVAL;
    }
    ds->fn = s_fns[i].fn;
    ds->fill = TSDB_FILL_NONE;
    if (fields == 3) {
        s_field(spec, 2, &f, &len);
        size_t k = 0;
        for (; k < 4 && !s_is(f, len, s_fills[k]); k++)
            ;
        if (k == 4) {
            telem_why(why, why_size, "downsample '%.64s': unknown fill "
                      "policy '%.*s' (none, nan, null, zero)", spec,
                      (int) (len > 32 ? 32 : len), f);
            return TELEM_EINVAL;
        }
        ds->fill = (tsdb_fill_t) k;
    }
    return 0;
}

static double
s_value(tsdb_ds_fn_t fn, const tsdb_acc_t *b)
{
    switch (fn) {
    case TSDB_DS_AVG: return b->sum / (double) b->n;
    case TSDB_DS_SUM: return b->sum;
    case TSDB_DS_MIN: return b->min;
    case TSDB_DS_MAX: return b->max;
    case TSDB_DS_COUNT: return (double) b->n;
    case TSDB_DS_DEV: return tsdb_acc_dev(b);
    case TSDB_DS_FIRST: return b->first;
    case TSDB_DS_LAST: return b->last;
    }
    return NAN;
}

static int64_t
s_align(const tsdb_downsample_t *ds, int64_t t, int64_t start)
{
    if (ds->interval_ms == 0)
        return start;
    int64_t r = t % ds->interval_ms;
    return t - (r < 0 ? r + ds->interval_ms : r);
}

size_t
tsdb_downsample_max_points(const tsdb_downsample_t *ds, int64_t start_ms,
                           int64_t end_ms)
{
    if (ds->interval_ms == 0 || end_ms < start_ms)
        return 1;
    return (size_t) ((end_ms - start_ms) / ds->interval_ms) + 2;
}

/* Appends one point; 0, or TELEM_ETOOBIG when out is full. */
static int
s_emit(tsdb_point_t *out, size_t cap, size_t *k, int64_t ts, double v,
       int is_null)
{
    if (*k >= cap)
        return TELEM_ETOOBIG;
    out[*k] = (tsdb_point_t) { ts, v, is_null };
    (*k)++;
    return 0;
}

/* Fills the empty buckets from `from` up to (not including) `to`. */
static int
s_fill(const tsdb_downsample_t *ds, int64_t from, int64_t to,
       tsdb_point_t *out, size_t cap, size_t *k)
{
    if (ds->fill == TSDB_FILL_NONE || ds->interval_ms == 0)
        return 0;
    for (int64_t t = from; t < to; t += ds->interval_ms) {
        double v = ds->fill == TSDB_FILL_ZERO ? 0.0 : NAN;
        if (s_emit(out, cap, k, t, v, ds->fill == TSDB_FILL_NULL))
            return TELEM_ETOOBIG;
    }
    return 0;
}

long
tsdb_downsample_run(const tsdb_downsample_t *ds, const int64_t *ts,
                    const double *v, size_t n, int64_t start_ms,
                    int64_t end_ms, tsdb_point_t *out, size_t out_cap)
{
    size_t k = 0;
    /* The first bucket filled is the one holding start: it may begin
       before it, as a point in it is timed at the bucket's start. */
    int64_t first = s_align(ds, start_ms, start_ms);
    int64_t next = first;                            /* first unfilled */
    tsdb_acc_t b = { 0 };
    int64_t cur = 0;
    for (size_t i = 0; i <= n; i++) {
        int in = i < n && (ds->interval_ms
                           || (ts[i] >= start_ms && ts[i] <= end_ms));
        if (i < n && !in)
            continue;
        int64_t t = i < n ? s_align(ds, ts[i], start_ms) : 0;
        if (b.n && (i == n || t != cur)) {
            if (s_fill(ds, next, cur < end_ms + 1 ? cur : end_ms + 1, out,
                       out_cap, &k)
                || s_emit(out, out_cap, &k, cur, s_value(ds->fn, &b), 0))
                return TELEM_ETOOBIG;
            next = cur + (ds->interval_ms ? ds->interval_ms : 1);
            next = next < first ? first : next;
            b = (tsdb_acc_t) { 0 };
        }
        if (i < n) {
            cur = t;
            tsdb_acc_add(&b, v[i]);
        }
    }
    if (ds->interval_ms && s_fill(ds, next, end_ms + 1, out, out_cap, &k))
        return TELEM_ETOOBIG;
    return (long) k;
}
