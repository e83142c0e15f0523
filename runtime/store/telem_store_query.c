/* telem_store_query.c - walking the store's series that match a query.
 *
 * A query naming metrics looks their entries up; one naming none walks the
 * list of metric entries.  Within a metric, each series is tested against
 * the tag filters and its points in [start, end] are found by binary
 * search in its ring.  The points are handed to the callback in place
 * when the range does not wrap around the ring, else copied once into a
 * scratch kept in the store, so a query allocates at most that scratch.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "telem_store_int.h"

typedef struct {
    const telem_store_query_t *q;
    int64_t horizon;
    int64_t start;
    int64_t end;
    telem_store_series_fn fn;
    void *arg;
} s_query_t;

static int
s_query_check(const telem_store_query_t *q)
{
    if (!q || q->nmetrics > TELEM_QUERY_METRICS_MAX
        || (q->nmetrics > 0 && !q->metrics) || (q->nfilters > 0 && !q->filters))
        return TELEM_EINVAL;
    for (uint32_t i = 0; i < q->nmetrics; i++)
        if (!q->metrics[i])
            return TELEM_EINVAL;
    for (uint32_t i = 0; i < q->nfilters; i++)
        if (!q->filters[i].key || !q->filters[i].key[0] || !q->filters[i].value)
            return TELEM_EINVAL;
    return 0;
}

static bool
s_filters_match(const tstore_series_t *s, const telem_store_query_t *q)
{
    for (uint32_t i = 0; i < q->nfilters; i++) {
        const telem_tag_t *f = &q->filters[i];
        const telem_tag_t *t = NULL;
        for (uint32_t j = 0; j < s->ntags && !t; j++)
            if (strcmp(s->tags[j].key, f->key) == 0)
                t = &s->tags[j];
        if (!t)
            return false;
        if (strcmp(f->value, "*") != 0 && strcmp(f->value, t->value) != 0)
            return false;
    }
    return true;
}

/* Points [lo, lo + n) as two contiguous arrays: the ring's own memory when
 * the range does not wrap, else a copy in the query scratch. */
static int
s_view(telem_store_t *self, const telem_series_ring_t *r, uint32_t lo,
       uint32_t n, telem_series_t *out)
{
    out->npoints = n;
    if (telem_series_ring_contiguous(r, lo, n)) {
        uint32_t p = telem_series_ring_phys(r, lo);
        out->ts = r->ts + p;
        out->values = r->val + p;
        return 0;
    }
    if (n > self->q_cap) {
        int64_t *ts = realloc(self->q_ts, n * sizeof(int64_t));
        if (ts)
            self->q_ts = ts;
        double *val = realloc(self->q_val, n * sizeof(double));
        if (val)
            self->q_val = val;
        if (!ts || !val)
            return TELEM_ENOMEM;
        self->q_cap = n;
    }
    telem_series_ring_copy(r, lo, n, self->q_ts, self->q_val);
    out->ts = self->q_ts;
    out->values = self->q_val;
    return 0;
}

static int
s_query_series(telem_store_t *self, const s_query_t *c,
               const tstore_metric_t *m, const tstore_series_t *s)
{
    telem_series_t out = { m->name, s->tags, s->ntags, TELEM_METRIC_GAUGE,
                           "", "", NULL, NULL, 0 };
    if (m->has_meta) {
        out.type = m->meta.type;
        out.unit = m->meta.unit;
        out.doc = m->meta.doc;
    }
    const telem_series_ring_t *r = &s->ring;
    if (c->q->flags & TELEM_QUERY_LIST) {
        if (r->count == 0 || telem_series_ring_newest(r) < c->horizon)
            return 0;
        return c->fn(c->arg, &out);
    }
    if (c->start > c->end)
        return 0;
    uint32_t lo = telem_series_ring_lower(r, c->start);
    uint32_t hi = telem_series_ring_upper(r, c->end);
    if (lo >= hi)
        return 0;
    if (c->q->flags & TELEM_QUERY_LATEST)
        lo = hi - 1;
    else if (c->q->max_points > 0 && hi - lo > c->q->max_points)
        lo = hi - c->q->max_points;
    int rc = s_view(self, r, lo, hi - lo, &out);
    return rc ? rc : c->fn(c->arg, &out);
}

static int
s_query_metric(telem_store_t *self, const s_query_t *c,
               const tstore_metric_t *m)
{
    for (const tstore_series_t *s = m->series; s; s = s->next) {
        if (!s_filters_match(s, c->q))
            continue;
        int rc = s_query_series(self, c, m, s);
        if (rc)
            return rc;
    }
    return 0;
}

/* Looks up the i-th metric of the query, skipping names listed before. */
static const tstore_metric_t *
s_query_lookup(const telem_store_t *self, const telem_store_query_t *q, uint32_t i)
{
    const char *name = q->metrics[i];
    for (uint32_t j = 0; j < i; j++)
        if (strcmp(q->metrics[j], name) == 0)
            return NULL;
    uint32_t len;
    if (!telem_series_name_ok(name, 0, &len))
        return NULL;
    return tstore_metric_find(self, name, len, tstore_metric_hash(name, len));
}

int
telem_store_query(telem_store_t *self, const telem_store_query_t *q,
                  int64_t now_ns, telem_store_series_fn fn, void *arg)
{
    if (!self || !fn || s_query_check(q))
        return TELEM_EINVAL;
    s_query_t c = { q, tstore_horizon(self, now_ns), 0, 0, fn, arg };
    c.start = q->start_ns != 0 && q->start_ns > c.horizon ? q->start_ns
                                                          : c.horizon;
    c.end = q->end_ns == 0 ? now_ns : q->end_ns;
    int rc = 0;
    if (q->nmetrics > 0) {
        for (uint32_t i = 0; i < q->nmetrics && !rc; i++) {
            const tstore_metric_t *m = s_query_lookup(self, q, i);
            if (m)
                rc = s_query_metric(self, &c, m);
        }
    }
    else {
        for (const tstore_metric_t *m = self->metrics; m && !rc; m = m->next)
            rc = s_query_metric(self, &c, m);
    }
    return rc;
}
