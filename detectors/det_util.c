/* det_util.c - leave-one-out statistics and small helpers for the
 * built-in detectors (det_util.h).
 *
 * det_util_loo() is the costly step of slowgpu at large device counts.  Done
 * naively (a median and a MAD of the n-1 others, for each of n devices) it
 * costs O(n^2 log n), 1000 devices being about 4 s of sorting per round.
 * Here the values are sorted once (GSL's index sort gives every value's
 * rank), each device's peer median comes from the sorted array in O(1) by
 * skipping its own rank, and since that median takes at most three distinct
 * values, at most three arrays of absolute deviations are sorted; a
 * device's peer MAD is the median of one of them with its own deviation
 * skipped (found by binary search: any equal copy leaves the same multiset).
 */
#include "det_util.h"

#include <gsl/gsl_sort.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- leave-one-out median and MAD -------------------------------------- */

void
det_util_scratch_free(det_util_scratch_t *s)
{
    free(s->sorted);
    for (int i = 0; i < 3; i++)
        free(s->dev[i]);
    free(s->perm);
    free(s->rank);
    memset(s, 0, sizeof *s);
}

static int
s_scratch_grow(det_util_scratch_t *s, size_t n)
{
    if (n <= s->cap)
        return 0;
    det_util_scratch_free(s);
    s->sorted = malloc(n * sizeof(double));
    s->perm = malloc(n * sizeof(size_t));
    s->rank = malloc(n * sizeof(size_t));
    for (int i = 0; i < 3; i++)
        s->dev[i] = malloc(n * sizeof(double));
    if (!s->sorted || !s->perm || !s->rank || !s->dev[0] || !s->dev[1] ||
        !s->dev[2]) {
        det_util_scratch_free(s);
        return TELEM_ENOMEM;
    }
    s->cap = n;
    return 0;
}

double
det_util_median_skip(const double *sorted, size_t n, size_t skip)
{
    size_t m = skip < n ? n - 1 : n;
    if (m == 0)
        return NAN;
    size_t lo = (m - 1) / 2, hi = m / 2;
    size_t a = lo + (skip < n && lo >= skip);
    size_t b = hi + (skip < n && hi >= skip);
    return a == b ? sorted[a] : sorted[a] + (sorted[b] - sorted[a]) / 2;
}

/* Index of the first element >= v in sorted[0..n). */
static size_t
s_lower_bound(const double *sorted, size_t n, double v)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sorted[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The sorted deviation array around m: one of three cached slots. */
static const double *
s_devs_around(det_util_scratch_t *s, const double *x, size_t n, double m,
              int *used)
{
    for (int k = 0; k < *used; k++)
        if (s->dev_med[k] == m)
            return s->dev[k];
    int k = *used < 3 ? (*used)++ : 2;   /* never more than 3; be safe */
    for (size_t j = 0; j < n; j++)
        s->dev[k][j] = fabs(x[j] - m);
    gsl_sort(s->dev[k], 1, n);
    s->dev_med[k] = m;
    return s->dev[k];
}

int
det_util_loo(det_util_scratch_t *s, const double *x, size_t n, double *med,
             double *mad)
{
    if (n < 2) {
        for (size_t i = 0; i < n; i++)
            med[i] = mad[i] = NAN;
        return 0;
    }
    if (s_scratch_grow(s, n))
        return TELEM_ENOMEM;
    gsl_sort_index(s->perm, x, 1, n);
    for (size_t j = 0; j < n; j++) {
        s->sorted[j] = x[s->perm[j]];
        s->rank[s->perm[j]] = j;
    }
    int used = 0;
    for (size_t i = 0; i < n; i++) {
        med[i] = det_util_median_skip(s->sorted, n, s->rank[i]);
        const double *d = s_devs_around(s, x, n, med[i], &used);
        size_t pos = s_lower_bound(d, n, fabs(x[i] - med[i]));
        mad[i] = det_util_median_skip(d, n, pos);
    }
    return 0;
}

/* ---- tags, keys, text -------------------------------------------------- */

const char *
det_util_tag(const det_series_t *s, const char *key)
{
    for (size_t i = 0; i < s->ntags; i++)
        if (s->tags[i].key && strcmp(s->tags[i].key, key) == 0)
            return s->tags[i].value;
    return NULL;
}

char *
det_util_key(char *buf, size_t size, const char *a, const char *b,
             const char *c)
{
    int n = snprintf(buf, size, "%s\x1f%s\x1f%s", a ? a : "", b ? b : "",
                     c ? c : "");
    return n >= 0 && (size_t) n < size ? buf : NULL;
}

void
det_util_fmt_seconds(char *buf, size_t size, double s)
{
    if (fabs(s) < 1)
        snprintf(buf, size, "%.3g ms", s * 1e3);
    else
        snprintf(buf, size, "%.3g s", s);
}

/* ---- parameters ------------------------------------------------------ */

int
det_util_params_nonempty(const det_params_t *p, size_t i, const char *name,
                         char *why, size_t why_size)
{
    if (*det_params_str(p, i))
        return 0;
    snprintf(why, why_size, "%s must not be empty", name);
    return TELEM_EINVAL;
}

/* ---- events ------------------------------------------------------------- */

int
det_util_emit(det_events_t *out, const det_util_event_t *e)
{
    det_device_t dv = { e->node, e->device ? e->device : "" };
    det_event_t ev = {
        .detector = e->detector, .severity = e->severity, .ts_ns = e->ts_ns,
        .nodes = &e->node, .nnodes = 1, .devices = &dv,
        .ndevices = e->device ? 1 : 0, .score = e->score,
        .evidence = e->evidence, .nevidence = e->nevidence, .text = e->text,
    };
    return det_events_add(out, &ev);
}
