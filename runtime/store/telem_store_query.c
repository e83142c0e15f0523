/* telem_store_query.c - walking the store's series that match a query.
 *
 * A query naming metrics looks their entries up; one naming none walks the
 * list of metric entries.  Within a metric, each series is tested against
 * the tag filters, and the blocks holding points in [start, end] (closed
 * blocks by their headers' times, then the open block's snapshot) are
 * decoded into a scratch kept in the store, so a query allocates at most
 * that scratch.  When the series' blocks do not overlap in time they are
 * decoded newest first, filling the scratch from its end, and only until
 * the points a LATEST or max_points query keeps are there; otherwise all
 * are decoded and merged by time (a stable merge: equal times keep the
 * order they were accepted in, as the blocks' sequence numbers say).
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

/* One source of points: closed block i, or the open block (i == nblk). */
static int
s_src_times(const tstore_points_t *p, uint32_t i, int64_t *f, int64_t *l)
{
    if (i < p->nblk) {
        tstore_block_times(p, i, f, l);
        return p->blk[i].npoints;
    }
    uint32_t n = p->w ? telem_block_writer_count(p->w) : 0;
    *f = p->open_first;
    *l = n ? telem_block_writer_last(p->w) : INT64_MIN;
    return (int) n;
}

/* Decodes source i into ts/val (room for its points). */
static int
s_src_decode(telem_store_t *self, const tstore_series_t *s, uint32_t i,
             int64_t *ts, double *val, uint32_t n)
{
    const tstore_points_t *p = &s->pts;
    if (i < p->nblk)
        return telem_block_decode(p->buf + p->blk[i].off,
                                  tstore_block_size(p, i), ts, val, n, NULL);
    const unsigned char *buf;
    size_t len;
    int rc = tstore_open_snapshot(self, s, &buf, &len);
    return rc ? rc : telem_block_decode(buf, len, ts, val, n, NULL);
}

/* Index of the first of ts[0..n) >= t (upper: > t). */
static uint32_t
s_bound(const int64_t *ts, uint32_t n, int64_t t, bool upper)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ts[mid] < t || (upper && ts[mid] == t))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Stable merge sort of ts/val[0..n) by time, through the store's rebuild
 * scratch. */
static int
s_merge_sort(telem_store_t *self, int64_t *ts, double *val, uint32_t n)
{
    int rc = tstore_scratch_room(self, n);
    if (rc)
        return rc;
    int64_t *ta = ts, *tb = self->o_ts;
    double *va = val, *vb = self->o_val;
    for (uint32_t w = 1; w < n; w *= 2) {
        for (uint32_t lo = 0; lo < n; lo += 2 * w) {
            uint32_t mid = lo + w < n ? lo + w : n;
            uint32_t hi = lo + 2 * w < n ? lo + 2 * w : n;
            uint32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                bool left = ta[i] <= ta[j];
                tb[k] = left ? ta[i] : ta[j];
                vb[k++] = left ? va[i++] : va[j++];
            }
            for (; i < mid; i++, k++) {
                tb[k] = ta[i];
                vb[k] = va[i];
            }
            for (; j < hi; j++, k++) {
                tb[k] = ta[j];
                vb[k] = va[j];
            }
        }
        int64_t *tt = ta;
        ta = tb;
        tb = tt;
        double *vv = va;
        va = vb;
        vb = vv;
    }
    if (ta != ts) {
        memcpy(ts, ta, n * sizeof *ts);
        memcpy(val, va, n * sizeof *val);
    }
    return 0;
}

/* Decodes the points of s that may lie in [start, end] into the query
 * scratch, in time order: *lo_out..*hi_out of q_ts/q_val.  `need` > 0
 * lets decoding stop once that many points in the range are there
 * (blocks that do not overlap are decoded newest first). */
static int
s_collect(telem_store_t *self, const tstore_series_t *s, int64_t start,
          int64_t end, uint32_t need, uint32_t *lo_out, uint32_t *hi_out)
{
    const tstore_points_t *p = &s->pts;
    uint64_t total = 0;
    int64_t f, l;
    for (uint32_t i = 0; i <= p->nblk; i++) {
        int n = s_src_times(p, i, &f, &l);
        if (n > 0 && l >= start && f <= end)
            total += (uint32_t) n;
    }
    int rc = tstore_query_room(self, total);
    if (rc || total == 0) {
        *lo_out = *hi_out = 0;
        return rc;
    }
    uint32_t pos = p->overlap ? 0 : (uint32_t) total, got = 0;
    for (uint32_t k = 0; k <= p->nblk && !rc; k++) {
        uint32_t i = p->overlap ? k : p->nblk - k;
        int n = s_src_times(p, i, &f, &l);
        if (n <= 0 || l < start || f > end)
            continue;
        if (!p->overlap)
            pos -= (uint32_t) n;
        rc = s_src_decode(self, s, i, self->q_ts + pos, self->q_val + pos,
                          (uint32_t) n);
        if (p->overlap) {
            pos += (uint32_t) n;
            continue;
        }
        got += s_bound(self->q_ts + pos, (uint32_t) n, end, true)
               - s_bound(self->q_ts + pos, (uint32_t) n, start, false);
        if (need && got >= need)
            break;
    }
    uint32_t from = p->overlap ? 0 : pos, to = (uint32_t) total;
    if (!rc && p->overlap)
        rc = s_merge_sort(self, self->q_ts, self->q_val, to);
    *lo_out = from + s_bound(self->q_ts + from, to - from, start, false);
    *hi_out = from + s_bound(self->q_ts + from, to - from, end, true);
    return rc;
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
    if (c->q->flags & TELEM_QUERY_LIST) {
        if (s->pts.npoints == 0 || s->last_ts < c->horizon)
            return 0;
        return c->fn(c->arg, &out);
    }
    if (c->start > c->end || s->pts.npoints == 0)
        return 0;
    uint32_t need = c->q->flags & TELEM_QUERY_LATEST ? 1 : c->q->max_points;
    uint32_t lo, hi;
    int rc = s_collect(self, s, c->start, c->end, need, &lo, &hi);
    if (rc || lo >= hi)
        return rc;
    if (need > 0 && hi - lo > need)
        lo = hi - need;
    out.ts = self->q_ts + lo;
    out.values = self->q_val + lo;
    out.npoints = hi - lo;
    return c->fn(c->arg, &out);
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
