/* telem_store.c - the node's in-memory time-series store.
 *
 * Two hash tables of the store's own (open addressing, linear probing,
 * backward-shift deletion, full 64-bit hashes kept in the slots) map a
 * series' canonical key to the series and a metric name to its metric
 * entry.  The canonical key is "metric\0k1\0v1\0k2\0v2\0..." with the tags
 * sorted by key and deduplicated.  The tag part is a telem_series.c tag set,
 * hashed on its own; a key's hash combines it with the metric name's hash,
 * and lookups compare the two parts in place, so the key is never built per
 * sample and an append to an existing series allocates nothing.  Callers
 * that append many samples with the same tags (telemd, per batch) prepare
 * the set once (telem_store_tags_t); telem_store_append() prepares it in a
 * scratch set inside the store.  The series of the last append is
 * remembered and compared first, so a run of samples of one series costs
 * no hashing; freeing that series forgets it.
 *
 * A metric entry holds the metric's meta and a list of its series; the
 * metric entries form a list too.  Expiry and unfiltered queries walk these
 * lists (which table deletions do not disturb); queries naming metrics look
 * the entries up.  A series lives in one allocation: the struct, its tags
 * (pointing into the key) and the key.  Its points are a telem_series.c ring.
 *
 * Every byte allocated for data (series, keys, rings, metric entries, metas,
 * table slots) is counted in `mem` and checked against the cap before it is
 * allocated, so the cap holds.
 */
#include "telem_store.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "telem_series.h"

#define S_DEFAULT_WINDOW_NS (INT64_C(300) * INT64_C(1000000000))
#define S_RING_MIN 16u                 /* first ring capacity, in points */

typedef struct s_metric s_metric_t;
typedef struct s_series s_series_t;

struct s_series {
    telem_series_key_t key;           /* first member: tables point here */
    s_series_t *prev, *next;/* in the metric's list */
    s_metric_t *metric;
    telem_series_ring_t ring;
    int64_t last_ts;        /* newest timestamp ever stored */
    size_t bytes;           /* this allocation, as accounted */
    uint32_t ntags;
    telem_tag_t tags[];     /* then the key bytes */
};

struct s_metric {
    telem_series_key_t key;           /* first member: the name */
    s_metric_t *prev, *next;
    s_series_t *series;
    uint32_t nseries;
    bool has_meta;
    telem_meta_t meta;
    char *meta_strings;     /* "unit\0doc\0" */
    size_t meta_bytes;
    size_t bytes;
    char name[];
};

/* The series a sample belongs to, as looked up: its name, tag set and
 * hashes (mhash of "metric\0", hash of the whole key). */
typedef struct {
    const char *metric;
    uint32_t mlen;
    uint64_t mhash;
    uint64_t hash;
    const telem_series_tags_t *tags;
} s_lookup_t;

struct telem_store_tags {
    telem_series_tags_t set;
};

struct telem_store {
    telem_store_config_t cfg;
    telem_series_index_t series_tab;
    telem_series_index_t metric_tab;
    s_metric_t *metrics;
    uint64_t nseries, npoints, mem;
    uint64_t appended, dropped, expired, evicted;
    int64_t *q_ts;          /* query scratch for ranges that wrap */
    double *q_val;
    size_t q_cap;
    s_series_t *hot;                /* series of the last append, or NULL */
    telem_series_tags_t scratch;    /* tags of telem_store_append */
};

/* --- metric entries and series -------------------------------------------- */

static s_metric_t *
s_metric_find(const telem_store_t *self, const char *name, uint32_t len,
              uint64_t hash)
{
    return (s_metric_t *) telem_series_index_find(&self->metric_tab, hash,
                                                  name, len, "", 0);
}

/* Hash of a metric name with its NUL: the first part of its series keys,
 * and the key of its metric entry. */
static uint64_t
s_metric_hash(const char *name, uint32_t len)
{
    return telem_series_hash(name, (size_t) len + 1);
}

static size_t
s_metric_bytes(uint32_t mlen)
{
    return sizeof(s_metric_t) + mlen + 1;
}

static int
s_metric_create(telem_store_t *self, const char *name, uint32_t mlen,
                uint64_t hash, s_metric_t **out)
{
    size_t bytes = s_metric_bytes(mlen);
    s_metric_t *m = calloc(1, bytes);
    if (!m)
        return TELEM_ENOMEM;
    memcpy(m->name, name, mlen);
    m->name[mlen] = '\0';
    m->key.bytes = m->name;
    m->key.len = mlen;
    m->key.hash = hash;
    m->bytes = bytes;
    int rc = telem_series_index_insert(&self->metric_tab, &m->key,
                                       &self->mem);
    if (rc) {
        free(m);
        return rc;
    }
    m->next = self->metrics;
    if (self->metrics)
        self->metrics->prev = m;
    self->metrics = m;
    self->mem += bytes;
    *out = m;
    return 0;
}

static void
s_metric_free(telem_store_t *self, s_metric_t *m)
{
    telem_series_index_remove(&self->metric_tab, &m->key);
    if (m->prev)
        m->prev->next = m->next;
    else
        self->metrics = m->next;
    if (m->next)
        m->next->prev = m->prev;
    self->mem -= m->bytes + m->meta_bytes;
    free(m->meta_strings);
    free(m);
}

/* Frees a metric entry that no longer serves any purpose. */
static void
s_metric_release_if_unused(telem_store_t *self, s_metric_t *m)
{
    if (m && m->nseries == 0 && !m->has_meta)
        s_metric_free(self, m);
}

static void
s_series_free(telem_store_t *self, s_series_t *s)
{
    s_metric_t *m = s->metric;
    if (self->hot == s)
        self->hot = NULL;
    telem_series_index_remove(&self->series_tab, &s->key);
    if (s->prev)
        s->prev->next = s->next;
    else
        m->series = s->next;
    if (s->next)
        s->next->prev = s->prev;
    m->nseries--;
    self->nseries--;
    self->npoints -= s->ring.count;
    self->mem -= s->bytes + (uint64_t) s->ring.cap * TELEM_SERIES_POINT_BYTES;
    telem_series_ring_release(&s->ring);
    free(s);
}

/* Bytes of a series' own allocation: struct, tags and key. */
static size_t
s_series_bytes(const s_lookup_t *l)
{
    return sizeof(s_series_t) + l->tags->ntags * sizeof(telem_tag_t)
           + l->mlen + 1 + l->tags->len;
}

/* Allocates the series `l` names (key "metric\0" + tag set) and links it. */
static int
s_series_alloc(telem_store_t *self, s_metric_t *m, const s_lookup_t *l,
               uint32_t ring_cap, s_series_t **out)
{
    const telem_series_tags_t *ts = l->tags;
    size_t bytes = s_series_bytes(l);
    s_series_t *s = calloc(1, bytes);
    if (!s)
        return TELEM_ENOMEM;
    char *kb = (char *) (s->tags + ts->ntags);
    memcpy(kb, l->metric, l->mlen + 1);
    char *tb = kb + l->mlen + 1;
    memcpy(tb, ts->bytes, ts->len);
    s->key.bytes = kb;
    s->key.len = l->mlen + 1 + ts->len;
    s->key.hash = l->hash;
    s->ntags = ts->ntags;
    for (uint32_t i = 0; i < ts->ntags; i++) {
        s->tags[i].key = tb + ts->off[i];
        s->tags[i].value = tb + ts->off[i] + ts->klen[i] + 1;
    }
    s->metric = m;
    s->last_ts = INT64_MIN;
    s->bytes = bytes;
    int rc = telem_series_ring_resize(&s->ring, ring_cap);
    if (!rc)
        rc = telem_series_index_insert(&self->series_tab, &s->key,
                                       &self->mem);
    if (rc) {
        telem_series_ring_release(&s->ring);
        free(s);
        return rc;
    }
    s->next = m->series;
    if (m->series)
        m->series->prev = s;
    m->series = s;
    m->nseries++;
    self->nseries++;
    self->mem += bytes + (uint64_t) ring_cap * TELEM_SERIES_POINT_BYTES;
    *out = s;
    return 0;
}

/* Creates the series `l` names, after checking the series and memory caps
 * for everything it will allocate. */
static int
s_series_create(telem_store_t *self, const s_lookup_t *l, s_series_t **out)
{
    if (self->nseries >= self->cfg.max_series)
        return TELEM_EFULL;
    s_metric_t *m = s_metric_find(self, l->metric, l->mlen, l->mhash);
    uint32_t ring_cap = self->cfg.max_points_per_series < S_RING_MIN
                        ? self->cfg.max_points_per_series : S_RING_MIN;
    uint64_t need = s_series_bytes(l)
                    + (uint64_t) ring_cap * TELEM_SERIES_POINT_BYTES
                    + telem_series_index_growth(&self->series_tab);
    if (!m)
        need += s_metric_bytes(l->mlen)
                + telem_series_index_growth(&self->metric_tab);
    if (self->mem + need > self->cfg.mem_cap_bytes)
        return TELEM_EFULL;
    int rc = 0;
    if (!m)
        rc = s_metric_create(self, l->metric, l->mlen, l->mhash, &m);
    if (!rc)
        rc = s_series_alloc(self, m, l, ring_cap, out);
    if (rc)
        s_metric_release_if_unused(self, m);
    return rc;
}

/* --- life cycle ----------------------------------------------------------- */

void
telem_store_config_default(telem_store_config_t *cfg)
{
    cfg->window_ns = S_DEFAULT_WINDOW_NS;
    cfg->mem_cap_bytes = (size_t) 256 << 20;
    cfg->max_series = 100000;
    cfg->max_points_per_series = 1048576;
}

telem_store_t *
telem_store_new(const telem_store_config_t *cfg)
{
    telem_store_config_t def;
    if (!cfg) {
        telem_store_config_default(&def);
        cfg = &def;
    }
    if (cfg->window_ns <= 0 || cfg->mem_cap_bytes == 0 || cfg->max_series == 0
        || cfg->max_points_per_series == 0)
        return NULL;
    telem_store_t *self = calloc(1, sizeof(*self));
    if (self)
        self->cfg = *cfg;
    return self;
}

void
telem_store_destroy(telem_store_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    telem_store_t *self = *self_p;
    for (s_metric_t *m = self->metrics, *mnext; m; m = mnext) {
        mnext = m->next;
        for (s_series_t *s = m->series, *snext; s; s = snext) {
            snext = s->next;
            telem_series_ring_release(&s->ring);
            free(s);
        }
        free(m->meta_strings);
        free(m);
    }
    telem_series_index_release(&self->series_tab);
    telem_series_index_release(&self->metric_tab);
    free(self->q_ts);
    free(self->q_val);
    free(self);
    *self_p = NULL;
}

int
telem_store_set_window(telem_store_t *self, int64_t window_ns)
{
    if (!self || window_ns <= 0)
        return TELEM_EINVAL;
    self->cfg.window_ns = window_ns;
    return 0;
}

int64_t
telem_store_window(const telem_store_t *self)
{
    return self->cfg.window_ns;
}

/* a - b without overflow, for b > 0. */
static int64_t
s_sub_sat(int64_t a, int64_t b)
{
    return a < INT64_MIN + b ? INT64_MIN : a - b;
}

static int64_t
s_horizon(const telem_store_t *self, int64_t now_ns)
{
    return s_sub_sat(now_ns, self->cfg.window_ns);
}

/* --- append and expiry ---------------------------------------------------- */

/* Drops the points of s older than horizon; returns how many. */
static uint32_t
s_series_expire(telem_store_t *self, s_series_t *s, int64_t horizon)
{
    telem_series_ring_t *r = &s->ring;
    if (r->count == 0 || telem_series_ring_oldest(r) >= horizon)
        return 0;
    uint32_t n = telem_series_ring_lower(r, horizon);
    telem_series_ring_drop_oldest(r, n);
    self->npoints -= n;
    self->expired += n;
    return n;
}

/* Makes room for one more point: grows the ring (if the caps allow) or,
 * at max_points_per_series, overwrites the oldest point.  Sets *discard
 * when the new point is itself older than everything in a full series. */
static int
s_series_room(telem_store_t *self, s_series_t *s, int64_t ts, bool *discard)
{
    telem_series_ring_t *r = &s->ring;
    *discard = false;
    if (r->count < r->cap)
        return 0;
    uint32_t max = self->cfg.max_points_per_series;
    if (r->cap >= max) {
        self->evicted++;
        if (ts < telem_series_ring_oldest(r)) {
            *discard = true;
            return 0;
        }
        telem_series_ring_drop_oldest(r, 1);
        self->npoints--;
        return 0;
    }
    uint64_t cap = r->cap ? (uint64_t) r->cap * 2 : S_RING_MIN;
    if (cap > max)
        cap = max;
    uint64_t delta = (cap - r->cap) * TELEM_SERIES_POINT_BYTES;
    if (self->mem + delta > self->cfg.mem_cap_bytes)
        return TELEM_EFULL;
    int rc = telem_series_ring_resize(r, (uint32_t) cap);
    if (!rc)
        self->mem += delta;
    return rc;
}

/* Finds or creates the series `l` names (l->mlen set).  The series of the
 * previous append is checked first: runs of samples of one series (one
 * metric from one process) then skip the hashing and the index. */
static int
s_series_get(telem_store_t *self, s_lookup_t *l, s_series_t **out)
{
    const telem_series_tags_t *tags = l->tags;
    s_series_t *s = self->hot;
    if (!s || !telem_series_key_is(&s->key, l->metric, l->mlen + 1,
                                   tags->bytes, tags->len)) {
        l->mhash = s_metric_hash(l->metric, l->mlen);
        l->hash = telem_series_hash_pair(l->mhash, tags->hash);
        s = (s_series_t *) telem_series_index_find(
            &self->series_tab, l->hash, l->metric, l->mlen + 1, tags->bytes,
            tags->len);
        int rc = s ? 0 : s_series_create(self, l, &s);
        if (rc)
            return rc;
        self->hot = s;
    }
    *out = s;
    return 0;
}

/* Appends one point to the series of metric and the canonical `tags`. */
static int
s_append(telem_store_t *self, const char *metric,
         const telem_series_tags_t *tags, int64_t ts_ns, double value,
         int64_t now_ns)
{
    s_lookup_t l = { .metric = metric, .tags = tags };
    int rc = TELEM_EINVAL;
    if (tags->rc || !telem_series_name_ok(metric, 0, &l.mlen))
        goto refused;
    int64_t horizon = s_horizon(self, now_ns);
    if (ts_ns < horizon) {
        self->dropped++;            /* late on arrival: not an error */
        return 0;
    }
    s_series_t *s;
    if ((rc = s_series_get(self, &l, &s)))
        goto refused;
    s_series_expire(self, s, horizon);
    bool discard;
    if ((rc = s_series_room(self, s, ts_ns, &discard)))
        goto refused;
    self->appended++;
    if (discard)
        return 0;
    telem_series_ring_add(&s->ring, ts_ns, value);
    self->npoints++;
    if (ts_ns > s->last_ts)
        s->last_ts = ts_ns;
    return 0;
refused:
    self->dropped++;
    return rc;
}

int
telem_store_append(telem_store_t *self, const char *metric,
                   const telem_tag_t *tags, uint32_t ntags,
                   int64_t ts_ns, double value, int64_t now_ns)
{
    if (!self)
        return TELEM_EINVAL;
    telem_series_tags_set(&self->scratch, tags, ntags);
    return s_append(self, metric, &self->scratch, ts_ns, value, now_ns);
}

telem_store_tags_t *
telem_store_tags_new(void)
{
    telem_store_tags_t *self = malloc(sizeof *self);
    if (self)
        telem_series_tags_set(&self->set, NULL, 0);
    return self;
}

void
telem_store_tags_destroy(telem_store_tags_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free(*self_p);
    *self_p = NULL;
}

int
telem_store_tags_set(telem_store_tags_t *self, const telem_tag_t *tags,
                     uint32_t ntags)
{
    if (!self)
        return TELEM_EINVAL;
    return telem_series_tags_set(&self->set, tags, ntags);
}

int
telem_store_append_tags(telem_store_t *self, const char *metric,
                        const telem_store_tags_t *tags, int64_t ts_ns,
                        double value, int64_t now_ns)
{
    if (!self)
        return TELEM_EINVAL;
    if (!tags) {
        self->dropped++;
        return TELEM_EINVAL;
    }
    return s_append(self, metric, &tags->set, ts_ns, value, now_ns);
}

/* After expiry: frees an empty ring, or halves a mostly empty one. */
static void
s_series_shrink(telem_store_t *self, s_series_t *s)
{
    telem_series_ring_t *r = &s->ring;
    uint32_t cap = r->cap;
    if (r->count == 0)
        cap = 0;
    else
        while (cap / 2 >= S_RING_MIN && (uint64_t) r->count * 4 <= cap)
            cap /= 2;
    if (cap == r->cap)
        return;
    uint64_t delta = (uint64_t) (r->cap - cap) * TELEM_SERIES_POINT_BYTES;
    if (telem_series_ring_resize(r, cap) == 0)
        self->mem -= delta;
}

uint64_t
telem_store_expire(telem_store_t *self, int64_t now_ns)
{
    int64_t horizon = s_horizon(self, now_ns);
    /* A series is freed once it has been empty for a whole window, i.e.
     * when its newest point fell out of the window a window ago. */
    int64_t free_before = s_sub_sat(horizon, self->cfg.window_ns);
    uint64_t removed = 0;
    for (s_metric_t *m = self->metrics, *mnext; m; m = mnext) {
        mnext = m->next;
        for (s_series_t *s = m->series, *snext; s; s = snext) {
            snext = s->next;
            removed += s_series_expire(self, s, horizon);
            if (s->ring.count == 0 && s->last_ts < free_before)
                s_series_free(self, s);
            else
                s_series_shrink(self, s);
        }
        s_metric_release_if_unused(self, m);
    }
    telem_series_index_shrink(&self->series_tab, &self->mem);
    telem_series_index_shrink(&self->metric_tab, &self->mem);
    return removed;
}

/* --- metas ---------------------------------------------------------------- */

static int
s_meta_check(const telem_meta_t *meta, uint32_t *mlen, size_t *ulen,
             size_t *dlen)
{
    if (!meta || !telem_series_name_ok(meta->metric, 0, mlen)
        || (meta->type != TELEM_METRIC_GAUGE
            && meta->type != TELEM_METRIC_COUNTER))
        return TELEM_EINVAL;
    *ulen = meta->unit ? strnlen(meta->unit, TELEM_NAME_MAX + 1) : 0;
    *dlen = meta->doc ? strnlen(meta->doc, TELEM_TEXT_MAX + 1) : 0;
    if (*ulen > TELEM_NAME_MAX || *dlen > TELEM_TEXT_MAX)
        return TELEM_EINVAL;
    return 0;
}

int
telem_store_describe(telem_store_t *self, const telem_meta_t *meta)
{
    uint32_t mlen;
    size_t ulen, dlen;
    if (!self || s_meta_check(meta, &mlen, &ulen, &dlen))
        return TELEM_EINVAL;
    uint64_t hash = s_metric_hash(meta->metric, mlen);
    s_metric_t *m = s_metric_find(self, meta->metric, mlen, hash);
    size_t sbytes = ulen + dlen + 2;
    uint64_t need = sbytes;
    if (!m)
        need += s_metric_bytes(mlen)
                + telem_series_index_growth(&self->metric_tab);
    uint64_t old = m ? m->meta_bytes : 0;
    if (self->mem - old + need > self->cfg.mem_cap_bytes)
        return TELEM_EFULL;
    char *strings = malloc(sbytes);
    if (!strings)
        return TELEM_ENOMEM;
    int rc = m ? 0 : s_metric_create(self, meta->metric, mlen, hash, &m);
    if (rc) {
        free(strings);
        return rc;
    }
    memcpy(strings, meta->unit ? meta->unit : "", ulen);
    strings[ulen] = '\0';
    memcpy(strings + ulen + 1, meta->doc ? meta->doc : "", dlen);
    strings[ulen + 1 + dlen] = '\0';
    free(m->meta_strings);
    self->mem = self->mem - m->meta_bytes + sbytes;
    m->meta_strings = strings;
    m->meta_bytes = sbytes;
    m->has_meta = true;
    m->meta.metric = m->name;
    m->meta.type = meta->type;
    m->meta.unit = strings;
    m->meta.doc = strings + ulen + 1;
    return 0;
}

const telem_meta_t *
telem_store_meta(const telem_store_t *self, const char *metric)
{
    uint32_t mlen;
    if (!self || !telem_series_name_ok(metric, 0, &mlen))
        return NULL;
    const s_metric_t *m = s_metric_find(self, metric, mlen,
                                        s_metric_hash(metric, mlen));
    return m && m->has_meta ? &m->meta : NULL;
}

/* --- queries -------------------------------------------------------------- */

typedef struct {
    const telem_query_t *q;
    int64_t horizon;
    int64_t start;
    int64_t end;
    telem_store_series_fn fn;
    void *arg;
} s_query_t;

static int
s_query_check(const telem_query_t *q)
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
s_filters_match(const s_series_t *s, const telem_query_t *q)
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
s_query_series(telem_store_t *self, const s_query_t *c, const s_metric_t *m,
               const s_series_t *s)
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
s_query_metric(telem_store_t *self, const s_query_t *c, const s_metric_t *m)
{
    for (const s_series_t *s = m->series; s; s = s->next) {
        if (!s_filters_match(s, c->q))
            continue;
        int rc = s_query_series(self, c, m, s);
        if (rc)
            return rc;
    }
    return 0;
}

/* Looks up the i-th metric of the query, skipping names listed before. */
static const s_metric_t *
s_query_lookup(const telem_store_t *self, const telem_query_t *q, uint32_t i)
{
    const char *name = q->metrics[i];
    for (uint32_t j = 0; j < i; j++)
        if (strcmp(q->metrics[j], name) == 0)
            return NULL;
    uint32_t len;
    if (!telem_series_name_ok(name, 0, &len))
        return NULL;
    return s_metric_find(self, name, len, s_metric_hash(name, len));
}

int
telem_store_query(telem_store_t *self, const telem_query_t *q,
                  int64_t now_ns, telem_store_series_fn fn, void *arg)
{
    if (!self || !fn || s_query_check(q))
        return TELEM_EINVAL;
    s_query_t c = { q, s_horizon(self, now_ns), 0, 0, fn, arg };
    c.start = q->start_ns != 0 && q->start_ns > c.horizon ? q->start_ns
                                                          : c.horizon;
    c.end = q->end_ns == 0 ? now_ns : q->end_ns;
    int rc = 0;
    if (q->nmetrics > 0) {
        for (uint32_t i = 0; i < q->nmetrics && !rc; i++) {
            const s_metric_t *m = s_query_lookup(self, q, i);
            if (m)
                rc = s_query_metric(self, &c, m);
        }
    }
    else {
        for (const s_metric_t *m = self->metrics; m && !rc; m = m->next)
            rc = s_query_metric(self, &c, m);
    }
    return rc;
}

/* --- counters ------------------------------------------------------------- */

void
telem_store_stats(const telem_store_t *self, telem_store_stats_t *out)
{
    out->nseries = self->nseries;
    out->npoints = self->npoints;
    out->mem_bytes = self->mem;
    out->mem_cap_bytes = self->cfg.mem_cap_bytes;
    out->appended = self->appended;
    out->dropped = self->dropped;
    out->expired = self->expired;
    out->evicted = self->evicted;
}

void
telem_store_count_dropped(telem_store_t *self, uint64_t n)
{
    self->dropped += n;
}
