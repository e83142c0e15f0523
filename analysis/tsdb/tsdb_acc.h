/* tsdb_acc.h - PRIVATE to analysis/tsdb: the running count, sum, minimum,
 * maximum, first, last, mean and sum of squared deviations (Welford) that
 * downsampling folds a bucket into and aggregation folds one time's
 * contributions into.  One pass, no allocation. */
#ifndef TSDB_ACC_H
#define TSDB_ACC_H

#include <math.h>
#include <stddef.h>

typedef struct {
    size_t n;
    double sum, min, max, first, last, mean, m2;
} tsdb_acc_t;

static inline void
tsdb_acc_add(tsdb_acc_t *a, double x)
{
    if (a->n == 0)
        a->min = a->max = a->first = x;
    a->n++;
    a->sum += x;
    a->min = x < a->min ? x : a->min;
    a->max = x > a->max ? x : a->max;
    a->last = x;
    double d = x - a->mean;
    a->mean += d / (double) a->n;
    a->m2 += d * (x - a->mean);
}

/* The population standard deviation of what was added. */
static inline double
tsdb_acc_dev(const tsdb_acc_t *a)
{
    return sqrt(a->m2 / (double) a->n);
}

#endif
