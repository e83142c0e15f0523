/* telemd_history.c - the log's points before the store's, per series
 * (telemd_history.h).
 *
 * The log is walked first and its matching series copied (one allocation
 * each: tags, strings, points); then the store's walk hands each of its
 * series merged with the log's copy of the same series, and the copies no
 * store series claimed follow.  Series are matched by metric and tags
 * (both sides keep tags sorted by key).
 */
#include "telemd_history.h"

#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_grow.h"
#include "telemd_reply.h"

typedef struct {
    telem_series_t s;
    void *mem;
    int used;
} s_copy_t;

typedef struct {
    s_copy_t *items;
    size_t n, cap;
    uint32_t max_points;
    telem_store_series_fn fn;
    void *arg;
    int64_t *ts;                  /* merge scratch */
    double *vals;
    size_t scratch;
} s_walk_t;

int
telemd_history_reaches(const telem_store_query_t *q, int64_t now_ns,
                       int64_t window_ns)
{
    if (q->flags & (TELEM_QUERY_LIST | TELEM_QUERY_LATEST))
        return 0;
    return q->start_ns != 0 && q->start_ns < now_ns - window_ns;
}

static int
s_collect(void *arg, const char *node, const telem_series_t *s)
{
    (void) node;
    s_walk_t *w = arg;
    if (telem_grow((void **) &w->items, &w->cap, w->n + 1, sizeof *w->items,
                   16))
        return TELEM_ENOMEM;
    w->items[w->n].used = 0;
    int rc = telemd_series_copy(s, &w->items[w->n].s, &w->items[w->n].mem);
    w->n += rc == 0;
    return rc;
}

static int
s_same(const telem_series_t *a, const telem_series_t *b)
{
    if (a->ntags != b->ntags || strcmp(a->metric, b->metric) != 0)
        return 0;
    for (uint32_t i = 0; i < a->ntags; i++)
        if (strcmp(a->tags[i].key, b->tags[i].key) != 0
            || strcmp(a->tags[i].value, b->tags[i].value) != 0)
            return 0;
    return 1;
}

/* Hands `s` to fn keeping only its newest max_points points. */
static int
s_emit(s_walk_t *w, telem_series_t s)
{
    if (w->max_points && s.npoints > w->max_points) {
        uint32_t skip = s.npoints - w->max_points;
        s.ts += skip;
        s.values += skip;
        s.npoints = w->max_points;
    }
    return w->fn(w->arg, &s);
}

/* A store series: the log's older points first. */
static int
s_merge(void *arg, const telem_series_t *s)
{
    s_walk_t *w = arg;
    s_copy_t *h = NULL;
    for (size_t i = 0; i < w->n && !h; i++)
        if (!w->items[i].used && s_same(&w->items[i].s, s))
            h = &w->items[i];
    if (!h)
        return s_emit(w, *s);
    h->used = 1;
    int64_t first = s->npoints ? s->ts[0] : INT64_MAX;
    uint32_t older = 0;
    while (older < h->s.npoints && h->s.ts[older] < first)
        older++;
    size_t n = (size_t) older + s->npoints;
    if (n > w->scratch) {
        int64_t *ts = realloc(w->ts, n * sizeof *ts);
        if (ts)
            w->ts = ts;
        double *v = ts ? realloc(w->vals, n * sizeof *v) : NULL;
        if (!v)
            return TELEM_ENOMEM;
        w->vals = v;
        w->scratch = n;
    }
    memcpy(w->ts, h->s.ts, older * sizeof *w->ts);
    memcpy(w->vals, h->s.values, older * sizeof *w->vals);
    if (s->npoints) {
        memcpy(w->ts + older, s->ts, s->npoints * sizeof *w->ts);
        memcpy(w->vals + older, s->values, s->npoints * sizeof *w->vals);
    }
    telem_series_t m = *s;
    m.ts = w->ts;
    m.values = w->vals;
    m.npoints = (uint32_t) n;
    return s_emit(w, m);
}

int
telemd_history_query(telem_store_t *store, telem_hist_t *hist,
                     const char *node, const telem_store_query_t *q,
                     int64_t now_ns, int64_t history_ns,
                     telem_store_series_fn fn, void *arg)
{
    s_walk_t w = { .max_points = q->max_points, .fn = fn, .arg = arg };
    telem_store_query_t hq = *q;
    hq.max_points = 0;
    if (history_ns > 0 && hq.start_ns < now_ns - history_ns)
        hq.start_ns = now_ns - history_ns;
    if (!hq.end_ns)
        hq.end_ns = now_ns;
    int rc = telem_hist_query(hist, node, &hq, s_collect, &w);
    telem_store_query_t sq = *q;
    sq.max_points = 0;
    if (rc == 0)
        rc = telem_store_query(store, &sq, now_ns, s_merge, &w);
    for (size_t i = 0; rc == 0 && i < w.n; i++)
        if (!w.items[i].used && w.items[i].s.npoints)
            rc = s_emit(&w, w.items[i].s);
    for (size_t i = 0; i < w.n; i++)
        free(w.items[i].mem);
    free(w.items);
    free(w.ts);
    free(w.vals);
    return rc;
}
