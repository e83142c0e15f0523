/* tsdb_exec.c - runs one /api/query sub-query over fetched series and
 * writes OpenTSDB's results (tsdb_exec.h).
 *
 * The selected series are sorted by their group (qsort_r on the group-by
 * tag values), so each group is a run of neighbours; each group's series
 * are prepared (range, downsample, rate) into their own arrays, folded by
 * tsdb_agg_run() and written out.  Memory is per group: the arrays of
 * one group's series at a time. */
#include "tsdb_exec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "tsdb_query_int.h"

typedef struct {
    int64_t *ts;
    double *v;
    size_t n;
} s_pts_t;

typedef struct {
    const tsdb_query_t *q;
    const tsdb_subq_t *s;
    size_t qi;
    const char **gb;           /* group-by tag keys, distinct, sorted */
    size_t ngb;
    const telem_series_t *series;
    int fill_null;             /* NaN is written null */
    int64_t scan0, scan1;      /* the points computed from (inclusive) */
} s_ctx_t;

static int64_t
s_ms(int64_t ns)
{
    return ns / 1000000;
}

static const char *
s_tag(const telem_series_t *se, const char *k)
{
    for (uint32_t i = 0; i < se->ntags; i++)
        if (strcmp(se->tags[i].key, k) == 0)
            return se->tags[i].value;
    return NULL;
}

static void
s_pts_free(s_pts_t *p)
{
    free(p->ts);
    free(p->v);
    *p = (s_pts_t) { 0 };
}

static int
s_pts_alloc(s_pts_t *p, size_t n)
{
    p->ts = malloc((n ? n : 1) * sizeof *p->ts);
    p->v = malloc((n ? n : 1) * sizeof *p->v);
    p->n = 0;
    if (p->ts && p->v)
        return 0;
    s_pts_free(p);
    return TELEM_ENOMEM;
}

/* explicitTags: the series' keys are exactly the filtered keys. */
static int
s_explicit_ok(const tsdb_subq_t *s, const telem_series_t *se)
{
    size_t distinct = 0;
    for (size_t i = 0; i < s->nfilters; i++) {
        const char *k = tsdb_filter_tagk(s->filters[i]);
        size_t j = 0;
        while (j < i && strcmp(tsdb_filter_tagk(s->filters[j]), k) != 0)
            j++;
        distinct += j == i;
    }
    for (uint32_t t = 0; t < se->ntags; t++) {
        size_t j = 0;
        while (j < s->nfilters
               && strcmp(tsdb_filter_tagk(s->filters[j]), se->tags[t].key))
            j++;
        if (j == s->nfilters)
            return 0;
    }
    return se->ntags == distinct;
}

static int
s_selected(const s_ctx_t *c, const telem_series_t *se)
{
    const tsdb_subq_t *s = c->s;
    if (!se->metric || strcmp(se->metric, s->metric) != 0)
        return 0;
    for (size_t i = 0; i < s->nfilters; i++)
        if (!tsdb_filter_match(s->filters[i],
                               s_tag(se, tsdb_filter_tagk(s->filters[i]))))
            return 0;
    if (s->explicit_tags && !s_explicit_ok(s, se))
        return 0;
    for (uint32_t i = 0; i < se->npoints; i++) {
        int64_t t = s_ms(se->ts[i]);
        if (t >= c->scan0 && t <= c->scan1)
            return 1;
    }
    return 0;
}

/* Orders series by group: group-by values ("none": all tags). */
static int
s_cmp(const void *a, const void *b, void *arg)
{
    const s_ctx_t *c = arg;
    size_t ia = *(const size_t *) a, ib = *(const size_t *) b;
    const telem_series_t *x = &c->series[ia], *y = &c->series[ib];
    int d = 0;
    if (c->s->agg == TSDB_AGG_NONE) {
        for (uint32_t i = 0; !d && i < x->ntags && i < y->ntags; i++) {
            d = strcmp(x->tags[i].key, y->tags[i].key);
            d = d ? d : strcmp(x->tags[i].value, y->tags[i].value);
        }
        d = d ? d : (int) x->ntags - (int) y->ntags;
    }
    for (size_t g = 0; !d && g < c->ngb; g++) {
        const char *vx = s_tag(x, c->gb[g]), *vy = s_tag(y, c->gb[g]);
        d = strcmp(vx ? vx : "", vy ? vy : "");
    }
    return d ? d : (ia > ib) - (ia < ib);
}

static int
s_same_group(const s_ctx_t *c, size_t ia, size_t ib)
{
    if (c->s->agg == TSDB_AGG_NONE)
        return 0;
    for (size_t g = 0; g < c->ngb; g++) {
        const char *vx = s_tag(&c->series[ia], c->gb[g]);
        const char *vy = s_tag(&c->series[ib], c->gb[g]);
        if (strcmp(vx ? vx : "", vy ? vy : "") != 0)
            return 0;
    }
    return 1;
}

static int
s_strcmp_p(const void *a, const void *b)
{
    return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* The distinct group-by tag keys, sorted. */
static int
s_group_keys(s_ctx_t *c)
{
    const tsdb_subq_t *s = c->s;
    c->gb = malloc((s->nfilters ? s->nfilters : 1) * sizeof *c->gb);
    if (!c->gb)
        return TELEM_ENOMEM;
    for (size_t i = 0; i < s->nfilters; i++) {
        if (!tsdb_filter_group_by(s->filters[i]))
            continue;
        const char *k = tsdb_filter_tagk(s->filters[i]);
        size_t j = 0;
        while (j < c->ngb && strcmp(c->gb[j], k) != 0)
            j++;
        if (j == c->ngb)
            c->gb[c->ngb++] = k;
    }
    qsort(c->gb, c->ngb, sizeof *c->gb, s_strcmp_p);
    return 0;
}

/* The series' points in the scan window in ms (tsdb_query_scan_ms: the
 * answer keeps those in [start, end]), the last of equal times. */
static int
s_prepare(const s_ctx_t *c, const telem_series_t *se, s_pts_t *p)
{
    if (s_pts_alloc(p, se->npoints))
        return TELEM_ENOMEM;
    for (uint32_t i = 0; i < se->npoints; i++) {
        int64_t t = s_ms(se->ts[i]);
        if (t < c->scan0 || t > c->scan1)
            continue;
        if (p->n && p->ts[p->n - 1] == t)
            p->n--;
        p->ts[p->n] = t;
        p->v[p->n++] = se->values[i];
    }
    return 0;
}

/* Replaces p with its points made into s_pts_t arrays. */
static int
s_from_points(const tsdb_point_t *pt, size_t k, s_pts_t *p)
{
    s_pts_t o;
    if (s_pts_alloc(&o, k))
        return TELEM_ENOMEM;
    for (size_t i = 0; i < k; i++) {
        o.ts[i] = pt[i].ts_ms;
        o.v[i] = pt[i].is_null ? NAN : pt[i].value;
    }
    o.n = k;
    s_pts_free(p);
    *p = o;
    return 0;
}

static int
s_downsample(const s_ctx_t *c, s_pts_t *p, tsdb_error_t *err)
{
    const tsdb_downsample_t *ds = &c->s->ds;
    if (!c->s->downsample)
        return 0;
    size_t asked = tsdb_downsample_max_points(ds, c->q->start_ms,
                                              c->q->end_ms);
    if (ds->fill != TSDB_FILL_NONE && asked > TSDB_EXEC_MAX_POINTS) {
        tsdb_error_set(err, 413, "Sorry, the downsample '%.64s' would give "
                       "%zu points per series over this range, more than "
                       "%d; use a longer interval or a shorter range",
                       c->s->downsample, asked, TSDB_EXEC_MAX_POINTS);
        return TELEM_ETOOBIG;
    }
    /* Buckets of the scan window outside [start, end] are computed too
       (the answer drops them); only those in the range are filled. */
    size_t cap = p->n + 1 + (ds->fill == TSDB_FILL_NONE ? 0 : asked);
    tsdb_point_t *pt = malloc(cap * sizeof *pt);
    if (!pt)
        return TELEM_ENOMEM;
    long k = tsdb_downsample_run(ds, p->ts, p->v, p->n, c->q->start_ms,
                                 c->q->end_ms, pt, cap);
    int rc = k < 0 ? (int) k : s_from_points(pt, (size_t) k, p);
    free(pt);
    if (rc == TELEM_ETOOBIG)
        tsdb_error_set(err, 500, "downsampling overflowed its buffer");
    return rc;
}

static int
s_rate(const s_ctx_t *c, s_pts_t *p)
{
    if (!c->s->rate)
        return 0;
    s_pts_t o;
    if (s_pts_alloc(&o, p->n))
        return TELEM_ENOMEM;
    tsdb_rate_opts_t opts = tsdb_query__rate_opts(c->s);
    o.n = tsdb_rate_run(&opts, p->ts, p->v, p->n, o.ts, o.v);
    s_pts_free(p);
    *p = o;
    return 0;
}

/* Folds the k prepared series into out. */
static int
s_aggregate(const s_ctx_t *c, const s_pts_t *pts, size_t k, s_pts_t *out)
{
    size_t cap = 1;
    tsdb_series_in_t *in = malloc(k * sizeof *in);
    if (!in)
        return TELEM_ENOMEM;
    for (size_t i = 0; i < k; i++) {
        in[i] = (tsdb_series_in_t) { pts[i].ts, pts[i].v, pts[i].n };
        cap += pts[i].n;
    }
    tsdb_point_t *pt = malloc(cap * sizeof *pt);
    long m = pt ? tsdb_agg_run(c->s->agg, in, k, pt, cap) : TELEM_ENOMEM;
    int rc = m < 0 ? (int) m : s_from_points(pt, (size_t) m, out);
    free(pt);
    free(in);
    return rc;
}

/* ---- writing ---- */

/* The points to write, kept in p's own arrays, which the result takes
 * over: those in [start, end], in the answer's unit; in the object form,
 * of several points with one key the last (a JSON parser would keep the
 * last of equal keys).  Appends the result. */
static int
s_add(const s_ctx_t *c, s_pts_t *p, json_t **head_p, tsdb_results_t *res)
{
    int arrays = c->q->arrays, ms = c->q->ms_resolution;
    size_t n = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (p->ts[i] < c->q->start_ms || p->ts[i] > c->q->end_ms)
            continue;
        int64_t t = ms ? p->ts[i] : p->ts[i] / 1000;
        if (!arrays && n > 0 && p->ts[n - 1] == t)
            n--;                                    /* last one wins */
        p->ts[n] = t;
        p->v[n++] = p->v[i];
    }
    int flags = (arrays ? TSDB_OUT_ARRAYS : 0)
                | (c->fill_null ? TSDB_OUT_NAN_NULL : 0);
    p->n = 0;
    return tsdb_results_add(res, head_p, &p->ts, &p->v, n, flags);
}

/* Sorted keys of o as a JSON array, or (as_object) o re-made sorted. */
static json_t *
s_sorted(json_t *o, int as_object)
{
    size_t n = json_object_size(o), k = 0;
    const char **keys = malloc((n ? n : 1) * sizeof *keys);
    json_t *r = as_object ? json_object() : json_array();
    const char *key;
    json_t *v;
    if (!keys || !r) {
        free(keys);
        json_decref(r);
        return NULL;
    }
    json_object_foreach(o, key, v)
        keys[k++] = key;
    qsort(keys, n, sizeof *keys, s_strcmp_p);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++)
        rc = as_object ? json_object_set(r, keys[i], json_object_get(o, keys[i]))
                       : json_array_append_new(r, json_string(keys[i]));
    free(keys);
    if (rc)
        json_decref(r);
    return rc ? NULL : r;
}

/* OpenTSDB's computeTags over the group: agreed pairs, differing keys. */
static int
s_tags(const s_ctx_t *c, const size_t *idx, size_t k, json_t *res)
{
    json_t *set = json_object(), *agg = json_object();
    int rc = !set || !agg;
    for (size_t i = 0; !rc && i < k; i++) {
        const telem_series_t *se = &c->series[idx[i]];
        for (uint32_t t = 0; !rc && t < se->ntags; t++) {
            const char *key = se->tags[t].key, *val = se->tags[t].value;
            json_t *had = json_object_get(set, key);
            if (json_object_get(agg, key))
                continue;
            if (!had)
                rc = json_object_set_new(set, key, json_string(val));
            else if (strcmp(json_string_value(had), val) != 0)
                rc = json_object_del(set, key)
                     || json_object_set_new(agg, key, json_null());
        }
    }
    rc = rc || json_object_set_new(res, "tags", s_sorted(set, 1))
         || json_object_set_new(res, "aggregateTags", s_sorted(agg, 0));
    json_decref(set);
    json_decref(agg);
    return rc ? TELEM_ENOMEM : 0;
}

static int
s_emit(const s_ctx_t *c, const size_t *idx, size_t k, s_pts_t *p,
       tsdb_results_t *res)
{
    json_t *r = json_pack("{s:s}", "metric", c->s->metric);
    int rc = !r || s_tags(c, idx, k, r)
             || (c->q->show_query
                 && json_object_set_new(r, "query",
                                        tsdb_query_to_json(c->q, c->qi)));
    if (rc) {
        json_decref(r);
        return TELEM_ENOMEM;
    }
    return s_add(c, p, &r, res);
}

/* One group: idx[0..k) its series. */
static int
s_group(const s_ctx_t *c, const size_t *idx, size_t k, tsdb_results_t *res,
        tsdb_error_t *err)
{
    s_pts_t *pts = calloc(k, sizeof *pts), out = { 0 };
    int rc = pts ? 0 : TELEM_ENOMEM;
    for (size_t i = 0; !rc && i < k; i++) {
        rc = s_prepare(c, &c->series[idx[i]], &pts[i]);
        rc = rc ? rc : s_downsample(c, &pts[i], err);
        rc = rc ? rc : s_rate(c, &pts[i]);
    }
    if (!rc && c->s->agg == TSDB_AGG_NONE)
        rc = s_emit(c, idx, k, &pts[0], res);
    else if (!rc) {
        rc = s_aggregate(c, pts, k, &out);
        rc = rc ? rc : s_emit(c, idx, k, &out, res);
    }
    for (size_t i = 0; pts && i < k; i++)
        s_pts_free(&pts[i]);
    s_pts_free(&out);
    free(pts);
    return rc;
}

/* A fill policy makes points of nothing, one per bucket for every series
 * selected: refuses (413) a sub-query whose k series would hold more than
 * TSDB_EXEC_MAX_POINTS in all.  1 when refused. */
static int
s_fill_too_big(const s_ctx_t *c, size_t k, tsdb_error_t *err)
{
    const tsdb_downsample_t *ds = &c->s->ds;
    if (!c->s->downsample || ds->fill == TSDB_FILL_NONE || k == 0)
        return 0;
    size_t cap = tsdb_downsample_max_points(ds, c->q->start_ms, c->q->end_ms);
    if (cap <= TSDB_EXEC_MAX_POINTS / k)
        return 0;
    tsdb_error_set(err, 413, "Sorry, the downsample '%.64s' would give "
                   "%zu points per series over this range for %zu series, "
                   "more than %d in all; use a longer interval, a shorter "
                   "range or fewer series", c->s->downsample, cap, k,
                   TSDB_EXEC_MAX_POINTS);
    return 1;
}

int
tsdb_exec_run(const tsdb_query_t *q, size_t i, const telem_series_t *series,
              size_t n, tsdb_results_t *res, tsdb_error_t *err)
{
    if (!q || i >= q->nsubs || !res) {
        tsdb_error_set(err, 400, "no sub-query %zu", i);
        return TELEM_EINVAL;
    }
    s_ctx_t c = { .q = q, .s = &q->subs[i], .qi = i, .series = series };
    tsdb_query_scan_ms(q, i, &c.scan0, &c.scan1);
    c.fill_null = c.s->downsample && c.s->ds.fill == TSDB_FILL_NULL;
    size_t *idx = malloc((n ? n : 1) * sizeof *idx), k = 0;
    int rc = idx ? s_group_keys(&c) : TELEM_ENOMEM;
    for (size_t j = 0; !rc && j < n; j++)
        if (s_selected(&c, &series[j]))
            idx[k++] = j;
    if (!rc && s_fill_too_big(&c, k, err))
        rc = TELEM_ETOOBIG;
    if (!rc)
        qsort_r(idx, k, sizeof *idx, s_cmp, &c);
    for (size_t a = 0, b; !rc && a < k; a = b) {
        for (b = a + 1; b < k && s_same_group(&c, idx[a], idx[b]); b++)
            ;
        rc = s_group(&c, idx + a, b - a, res, err);
    }
    if (rc == TELEM_ENOMEM)
        tsdb_error_set(err, 500, "out of memory");
    free(c.gb);
    free(idx);
    return rc;
}

int
tsdb_exec_sub(const tsdb_query_t *q, size_t i, const telem_series_t *series,
              size_t n, json_t *results, tsdb_error_t *err)
{
    if (!json_is_array(results)) {
        tsdb_error_set(err, 400, "no results array");
        return TELEM_EINVAL;
    }
    tsdb_results_t *res = tsdb_results_new();
    int rc = res ? tsdb_exec_run(q, i, series, n, res, err) : TELEM_ENOMEM;
    json_t *a = rc == 0 ? tsdb_results_json(res) : NULL;
    if (rc == 0 && (!a || json_array_extend(results, a)))
        rc = TELEM_ENOMEM;
    if (rc == TELEM_ENOMEM)
        tsdb_error_set(err, 500, "out of memory");
    json_decref(a);
    tsdb_results_destroy(&res);
    return rc;
}
