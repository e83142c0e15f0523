/* telem_hist_query.c - reading history: queries with telem_store_query()'s
 * semantics over the blocks an index points at, and the chunks a
 * reloading telemd takes back.
 *
 * A query reads only the blocks whose time range meets the query's, into
 * the history's scratch arrays; blocks that do not overlap in time (the
 * usual case) are simply laid end to end, overlapping ones (late points,
 * other runs, dumps) merged by time with a stable merge of the sorted
 * runs.  Then duplicate points - equal timestamp and value bits, from two
 * different blocks - are dropped (telem_hist.h).
 */
#include <stdlib.h>
#include <string.h>

#include "telem_block.h"
#include "telem_grow.h"
#include "telem_hist_int.h"

typedef struct {
    uint32_t rank;                /* of the node's name */
    uint32_t idx;
    const char *key;
    uint32_t len;
} s_sort_t;

static int
s_sort_cmp(const void *a, const void *b)
{
    const s_sort_t *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    uint32_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->key, y->key, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static int
s_blk_cmp(const void *a, const void *b)
{
    const hist_blk_t *x = a, *y = b;
    if (x->first_seq != y->first_seq)
        return x->first_seq < y->first_seq ? -1 : 1;
    if (x->file != y->file)
        return x->file < y->file ? -1 : 1;
    return (x->offset > y->offset) - (x->offset < y->offset);
}

static int
s_node_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *) a, *(char *const *) b);
}

static int
s_orders(telem_hist_t *self)
{
    size_t nn = self->node_keys.n, ns = self->ser_keys.n;
    char **names = malloc((nn ? nn : 1) * sizeof *names);
    uint32_t *rank = malloc((nn ? nn : 1) * sizeof *rank);
    uint32_t *norder = malloc((nn ? nn : 1) * sizeof *norder);
    s_sort_t *v = malloc((ns ? ns : 1) * sizeof *v);
    uint32_t *sorder = malloc((ns ? ns : 1) * sizeof *sorder);
    int rc = names && rank && norder && v && sorder ? 0 : TELEM_ENOMEM;
    if (rc == 0) {
        for (size_t i = 0; i < nn; i++)
            names[i] = self->nodes[i].name;
        qsort(names, nn, sizeof *names, s_node_cmp);
        for (size_t i = 0; i < nn; i++) {
            long long k = seg_keys_find(&self->node_keys, names[i],
                                        strlen(names[i]) + 1);
            norder[i] = (uint32_t) k;
            rank[k] = (uint32_t) i;
        }
        for (size_t i = 0; i < ns; i++)
            v[i] = (s_sort_t){rank[self->ser[i].node], (uint32_t) i,
                              self->ser[i].key, self->ser[i].key_len};
        qsort(v, ns, sizeof *v, s_sort_cmp);
        for (size_t i = 0; i < ns; i++)
            sorder[i] = v[i].idx;
        free(self->node_order);
        free(self->ser_order);
        self->node_order = norder;
        self->ser_order = sorder;
        norder = sorder = NULL;
        self->dirty = 0;
    }
    free(names);
    free(rank);
    free(norder);
    free(v);
    free(sorder);
    return rc;
}

int
hist_prepare(telem_hist_t *self)
{
    if (self->dirty || !self->ser_order || !self->node_order) {
        int rc = s_orders(self);
        if (rc)
            return rc;
    }
    for (size_t i = 0; i < self->ser_keys.n; i++) {
        hist_ser_t *s = &self->ser[i];
        if (!s->sorted) {
            qsort(s->blk, s->nblk, sizeof *s->blk, s_blk_cmp);
            s->sorted = 1;
        }
    }
    return 0;
}

int
hist_block(telem_hist_t *self, const hist_blk_t *b, const void **block,
           size_t *len)
{
    unsigned kind;
    const unsigned char *pl;
    uint32_t plen;
    char scratch[8];
    telem_seg_rec_t r;
    if (b->file >= self->nfiles)
        return TELEM_EPROTO;
    int rc = seg_read_record(self->files[b->file].fd, b->offset, b->size,
                             &self->rec, &kind, &pl, &plen);
    if (rc)
        return rc;
    memset(&r, 0, sizeof r);
    if (kind != TELEM_SEG_REC_BLOCK ||
        seg_dec_payload(kind, pl, plen, scratch, &r) != 0 ||
        r.chunk.first_seq != b->first_seq)
        return TELEM_EPROTO;
    *block = r.chunk.block;
    *len = r.chunk.block_len;
    return 0;
}

/* --- queries ------------------------------------------------------------ */

static int
s_check_query(const telem_store_query_t *q)
{
    if (!q || q->nmetrics > TELEM_QUERY_METRICS_MAX ||
        (!q->metrics && q->nmetrics) || (!q->filters && q->nfilters))
        return TELEM_EINVAL;
    for (uint32_t i = 0; i < q->nmetrics; i++)
        if (!q->metrics[i])
            return TELEM_EINVAL;
    for (uint32_t i = 0; i < q->nfilters; i++)
        if (!q->filters[i].key || !*q->filters[i].key ||
            !q->filters[i].value)
            return TELEM_EINVAL;
    return 0;
}

/* Splits a canonical key into its tags; returns their number. */
static uint32_t
s_tags(const char *key, uint32_t len, telem_tag_t *tags)
{
    uint32_t n = 0;
    size_t at = strlen(key) + 1;
    while (at < len && n < TELEM_TAGS_MAX) {
        tags[n].key = key + at;
        at += strlen(key + at) + 1;
        tags[n].value = key + at;
        at += strlen(key + at) + 1;
        n++;
    }
    return n;
}

static int
s_matches(const telem_store_query_t *q, const char *metric,
          const telem_tag_t *tags, uint32_t ntags)
{
    int ok = q->nmetrics == 0;
    for (uint32_t i = 0; !ok && i < q->nmetrics; i++)
        ok = strcmp(q->metrics[i], metric) == 0;
    for (uint32_t i = 0; ok && i < q->nfilters; i++) {
        const telem_tag_t *f = &q->filters[i];
        ok = 0;
        for (uint32_t j = 0; !ok && j < ntags; j++)
            ok = strcmp(tags[j].key, f->key) == 0 &&
                 (strcmp(f->value, "*") == 0 ||
                  strcmp(tags[j].value, f->value) == 0);
    }
    return ok;
}

static int
s_scratch(telem_hist_t *self, size_t n)
{
    size_t c1 = self->pts_cap, c2 = self->pts_cap, c3 = self->pts_cap;
    size_t d1 = self->pts2_cap, d2 = self->pts2_cap, d3 = self->pts2_cap;
    if (n <= self->pts_cap && n <= self->pts2_cap)
        return 0;
    if (telem_grow((void **) &self->ts, &c1, n, sizeof *self->ts, 1024) ||
        telem_grow((void **) &self->val, &c2, n, sizeof *self->val, 1024) ||
        telem_grow((void **) &self->src, &c3, n, sizeof *self->src, 1024) ||
        telem_grow((void **) &self->ts2, &d1, n, sizeof *self->ts2, 1024) ||
        telem_grow((void **) &self->val2, &d2, n, sizeof *self->val2, 1024) ||
        telem_grow((void **) &self->src2, &d3, n, sizeof *self->src2, 1024))
        return TELEM_ENOMEM;
    self->pts_cap = c1 < c2 ? (c1 < c3 ? c1 : c3) : (c2 < c3 ? c2 : c3);
    self->pts2_cap = d1 < d2 ? (d1 < d3 ? d1 : d3) : (d2 < d3 ? d2 : d3);
    return 0;
}

/* Merges runs [a, b) and [b, c) of the scratch arrays into the second
 * ones, stably. */
static void
s_merge(telem_hist_t *self, size_t a, size_t b, size_t c)
{
    size_t i = a, j = b, k = a;
    while (i < b || j < c) {
        size_t from = (j >= c || (i < b && self->ts[i] <= self->ts[j])) ? i++
                                                                        : j++;
        self->ts2[k] = self->ts[from];
        self->val2[k] = self->val[from];
        self->src2[k] = self->src[from];
        k++;
    }
}

/* Sorts the n points made of runs (starts in run[0..nrun)) by time. */
static void
s_sort_runs(telem_hist_t *self, size_t n, size_t *run, size_t nrun)
{
    while (nrun > 1) {
        size_t out = 0;
        for (size_t r = 0; r < nrun; r += 2) {
            size_t a = run[r], b = r + 1 < nrun ? run[r + 1] : n;
            size_t c = r + 2 < nrun ? run[r + 2] : n;
            s_merge(self, a, b, r + 1 < nrun ? c : b);
            run[out++] = a;
        }
        nrun = out;
        int64_t *t = self->ts;
        double *v = self->val;
        uint32_t *s = self->src;
        self->ts = self->ts2, self->ts2 = t;
        self->val = self->val2, self->val2 = v;
        self->src = self->src2, self->src2 = s;
    }
}

/* Drops points equal (time, value bits) to one of another block. */
static size_t
s_dedupe(telem_hist_t *self, size_t n)
{
    size_t out = 0, g = 0;
    for (size_t i = 0; i < n; i++) {
        if (out > 0 && self->ts[out - 1] != self->ts[i])
            g = out;
        int dup = 0;
        for (size_t j = g; !dup && j < out; j++)
            dup = self->src[j] != self->src[i] &&
                  memcmp(&self->val[j], &self->val[i], sizeof(double)) == 0;
        if (dup)
            continue;
        self->ts[out] = self->ts[i];
        self->val[out] = self->val[i];
        self->src[out] = self->src[i];
        out++;
    }
    return out;
}

static int
s_blk_ts_cmp(const void *a, const void *b)
{
    const hist_blk_t *x = *(const hist_blk_t *const *) a;
    const hist_blk_t *y = *(const hist_blk_t *const *) b;
    if (x->first_ts != y->first_ts)
        return x->first_ts < y->first_ts ? -1 : 1;
    return s_blk_cmp(x, y);
}

/* Decodes the series' blocks meeting [lo, hi] in time order, duplicates
 * dropped: *n points in self->ts/val. */
static int
s_points(telem_hist_t *self, const hist_ser_t *s, int64_t lo, int64_t hi,
         size_t *n)
{
    const hist_blk_t **sel = malloc((s->nblk ? s->nblk : 1) * sizeof *sel);
    size_t *run = malloc((s->nblk ? s->nblk : 1) * sizeof *run);
    size_t nsel = 0, total = 0, nrun = 0, at = 0;
    int rc = sel && run ? 0 : TELEM_ENOMEM;
    for (uint32_t i = 0; rc == 0 && i < s->nblk; i++)
        if (s->blk[i].last_ts >= lo && s->blk[i].first_ts <= hi) {
            sel[nsel++] = &s->blk[i];
            total += s->blk[i].npoints;
        }
    if (rc == 0 && nsel > 1)
        qsort(sel, nsel, sizeof *sel, s_blk_ts_cmp);
    if (rc == 0)
        rc = s_scratch(self, total);
    int64_t prev_last = INT64_MIN;
    for (size_t i = 0; rc == 0 && i < nsel; i++) {
        const void *blk;
        size_t len;
        telem_block_info_t info;
        if (hist_block(self, sel[i], &blk, &len) != 0 ||
            telem_block_decode(blk, len, self->ts + at, self->val + at,
                               (uint32_t) (total - at), &info) != 0) {
            self->st.bad++;
            continue;
        }
        if (nrun == 0 || info.first_ts < prev_last)
            run[nrun++] = at;
        if (info.last_ts > prev_last)
            prev_last = info.last_ts;
        for (uint32_t k = 0; k < info.npoints; k++)
            self->src[at + k] = (uint32_t) i;
        at += info.npoints;
    }
    if (rc == 0) {
        s_sort_runs(self, at, run, nrun);
        *n = nsel > 1 ? s_dedupe(self, at) : at;
    }
    free(sel);
    free(run);
    return rc;
}

/* Answers q for one series. */
static int
s_query_one(telem_hist_t *self, const hist_ser_t *s,
            const telem_store_query_t *q, telem_hist_series_fn fn, void *arg)
{
    telem_tag_t tags[TELEM_TAGS_MAX];
    telem_series_t out;
    memset(&out, 0, sizeof out);
    out.metric = s->key;
    out.ntags = s_tags(s->key, s->key_len, tags);
    if (!s_matches(q, out.metric, tags, out.ntags))
        return 0;
    out.tags = out.ntags ? tags : NULL;
    const telem_meta_t *m = hist_meta(self, s->node, out.metric);
    out.type = m ? m->type : TELEM_METRIC_GAUGE;
    out.unit = m ? m->unit : "";
    out.doc = m ? m->doc : "";
    const char *node = self->nodes[s->node].name;
    if (q->flags & TELEM_QUERY_LIST)
        return fn(arg, node, &out);
    int64_t lo = q->start_ns ? q->start_ns : INT64_MIN;
    int64_t hi = q->end_ns ? q->end_ns : INT64_MAX;
    size_t n;
    int rc = s_points(self, s, lo, hi, &n);
    if (rc)
        return rc;
    size_t a = 0, b = n;
    while (a < b && self->ts[a] < lo)
        a++;
    while (b > a && self->ts[b - 1] > hi)
        b--;
    if (a == b)
        return 0;
    if (q->flags & TELEM_QUERY_LATEST)
        a = b - 1;
    else if (q->max_points && b - a > q->max_points)
        a = b - q->max_points;
    out.ts = self->ts + a;
    out.values = self->val + a;
    out.npoints = (uint32_t) (b - a);
    return fn(arg, node, &out);
}

int
telem_hist_query(telem_hist_t *self, const char *node,
                 const telem_store_query_t *q, telem_hist_series_fn fn,
                 void *arg)
{
    if (!self || !fn || s_check_query(q))
        return TELEM_EINVAL;
    long long nd = -1;
    if (node &&
        (nd = seg_keys_find(&self->node_keys, node, strlen(node) + 1)) < 0)
        return 0;
    int rc = hist_prepare(self);
    for (size_t i = 0; rc == 0 && i < self->ser_keys.n; i++) {
        const hist_ser_t *s = &self->ser[self->ser_order[i]];
        if (nd >= 0 && s->node != (uint32_t) nd)
            continue;
        rc = s_query_one(self, s, q, fn, arg);
    }
    return rc;
}

int
telem_hist_chunks(telem_hist_t *self, const char *node, int64_t since_ns,
                  int (*fn)(void *arg, const telem_chunk_t *c), void *arg)
{
    if (!self || !node || !fn)
        return TELEM_EINVAL;
    long long nd = seg_keys_find(&self->node_keys, node, strlen(node) + 1);
    if (nd < 0)
        return TELEM_ENOTFOUND;
    int rc = hist_prepare(self);
    for (size_t i = 0; rc == 0 && i < self->ser_keys.n; i++) {
        const hist_ser_t *s = &self->ser[self->ser_order[i]];
        if (s->node != (uint32_t) nd)
            continue;
        for (uint32_t j = 0; rc == 0 && j < s->nblk; j++) {
            const hist_blk_t *b = &s->blk[j];
            telem_chunk_t c;
            if (b->last_ts < since_ns)
                continue;
            memset(&c, 0, sizeof c);
            if (hist_block(self, b, &c.block, &c.block_len) != 0) {
                self->st.bad++;
                continue;
            }
            c.key = s->key;
            c.key_len = s->key_len;
            c.metric = s->key;
            c.counter = s->counter;
            c.first_seq = b->first_seq;
            c.closed = (int) b->closed;
            rc = fn(arg, &c);
        }
    }
    return rc;
}
