/* tsdb_agg.c - OpenTSDB's aggregation across series (tsdb_agg.h).
 *
 * A merge over the series: one cursor per series at its first point not
 * yet passed; the next output time is the smallest time under a cursor.
 * O(k) per output point for k series, no allocation beyond the cursors. */
#include "tsdb_agg.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "tsdb_acc.h"

const char *const tsdb_agg_names[] = {
    "sum", "min", "max", "avg", "dev", "count", "zimsum", "mimmin",
    "mimmax", "none", NULL,
};

int
tsdb_agg_parse(const char *name, tsdb_agg_t *agg)
{
    for (int i = 0; name && tsdb_agg_names[i]; i++)
        if (strcmp(name, tsdb_agg_names[i]) == 0) {
            *agg = (tsdb_agg_t) i;
            return 0;
        }
    return TELEM_EINVAL;
}

static double
s_result(tsdb_agg_t agg, const tsdb_acc_t *a)
{
    switch (agg) {
    case TSDB_AGG_SUM:
    case TSDB_AGG_ZIMSUM: return a->n ? a->sum : NAN;  /* all NaN: NaN */
    case TSDB_AGG_MIN:
    case TSDB_AGG_MIMMIN: return a->n ? a->min : NAN;
    case TSDB_AGG_MAX:
    case TSDB_AGG_MIMMAX: return a->n ? a->max : NAN;
    case TSDB_AGG_AVG: return a->n ? a->sum / (double) a->n : NAN;
    case TSDB_AGG_DEV: return a->n ? tsdb_acc_dev(a) : NAN;
    case TSDB_AGG_COUNT: return (double) a->n;
    case TSDB_AGG_NONE: break;
    }
    return NAN;
}

/* What series s gives at time x, its cursor at c (ts[c] > x, or c == n,
 * the points at x passed): 1 and *v when it contributes, 0 when x is
 * outside its span. */
static int
s_between(tsdb_agg_t agg, const tsdb_series_in_t *s, size_t c, int64_t x,
          double *v)
{
    if (c == 0 || c >= s->n)
        return 0;                   /* not started yet, or ended */
    switch (agg) {
    case TSDB_AGG_ZIMSUM:
    case TSDB_AGG_COUNT: *v = 0; break;
    case TSDB_AGG_MIMMIN: *v = DBL_MAX; break;
    case TSDB_AGG_MIMMAX: *v = -DBL_MAX; break;
    default: {
        double x0 = (double) s->ts[c - 1], x1 = (double) s->ts[c];
        double y0 = s->v[c - 1], y1 = s->v[c];
        *v = y0 + ((double) x - x0) * (y1 - y0) / (x1 - x0);
    }
    }
    return 1;
}

/* Adds v: the running mean and its squares (a division each) only for
 * dev, which alone needs them. */
static inline void
s_acc(tsdb_agg_t agg, tsdb_acc_t *a, double v)
{
    if (agg == TSDB_AGG_DEV) {
        tsdb_acc_add(a, v);
        return;
    }
    if (a->n++ == 0)
        a->min = a->max = v;
    a->sum += v;
    a->min = v < a->min ? v : a->min;
    a->max = v > a->max ? v : a->max;
}

long
tsdb_agg_run(tsdb_agg_t agg, const tsdb_series_in_t *s, size_t ns,
             tsdb_point_t *out, size_t out_cap)
{
    if (agg == TSDB_AGG_NONE || (size_t) agg >= TSDB_AGG_NONE)
        return TELEM_EINVAL;
    size_t *cur = calloc(ns ? ns : 1, sizeof *cur);
    if (!cur)
        return TELEM_ENOMEM;
    int64_t x = INT64_MAX;
    for (size_t i = 0; i < ns; i++)
        if (s[i].n > 0 && s[i].ts[0] < x)
            x = s[i].ts[0];
    long k = 0;
    /* One pass per output time: each series gives its point at x (the
     * first of several at x; the cursor moves past them all) or its value
     * between its neighbours, and tells the next time under its cursor. */
    for (int any = x != INT64_MAX; any;) {
        tsdb_acc_t a = { 0 };
        int64_t next = INT64_MAX;
        for (size_t i = 0; i < ns; i++) {
            const tsdb_series_in_t *si = &s[i];
            size_t c = cur[i];
            double v;
            if (c < si->n && si->ts[c] == x) {
                v = si->v[c];
                while (++c < si->n && si->ts[c] == x)
                    ;
                cur[i] = c;
                if (!isnan(v))          /* NaN left out, as OpenTSDB */
                    s_acc(agg, &a, v);
            } else if (s_between(agg, si, c, x, &v) && !isnan(v))
                s_acc(agg, &a, v);
            if (c < si->n && si->ts[c] < next)
                next = si->ts[c];
        }
        if ((size_t) k >= out_cap) {
            free(cur);
            return TELEM_ETOOBIG;
        }
        out[k++] = (tsdb_point_t) { x, s_result(agg, &a), 0 };
        any = next != INT64_MAX;
        x = next;
    }
    free(cur);
    return k;
}
