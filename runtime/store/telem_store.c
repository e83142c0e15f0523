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
 * With 1,000s of series an append is bound by memory latency (the index
 * slot, the series, the ring's tail: each a likely cache and TLB miss), not
 * by instructions.  telem_store_append_many() therefore looks up a run of
 * points in passes - hash all and prefetch their slots, find all and
 * prefetch their ring tails, then append one by one - so the misses of a
 * run overlap.  Only existing series are found ahead; creation, caps and
 * counters stay in the one-by-one pass, in order, so the result is exactly
 * that of appending the points one at a time.
 *
 * Metric entries and series are described in telem_store_int.h.  Expiry
 * and unfiltered queries walk their lists (which table deletions do not
 * disturb); queries (telem_store_query.c) naming metrics look them up.
 *
 * Every byte allocated for data (series, keys, rings, metric entries, metas,
 * table slots) is counted in `mem` and checked against the cap before it is
 * allocated, so the cap holds.
 */
#include "telem_store.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "telem_store_int.h"

#define S_DEFAULT_WINDOW_NS (INT64_C(300) * INT64_C(1000000000))
/* Points a closed block holds by default (telem_store_config_t): see
 * docs/store.md and bench_store_mem for why. */
#define S_BLOCK_POINTS 120u
#define S_MERGE_POINTS 960u
/* Points telem_store_expire() seals or merges (re-codes) at most per call:
 * a few ms of CPU (300-600 ns a point), since expiry runs on telemd's
 * ingest thread; at telemd's four calls a second, twice what a node's
 * usual rate (10,000 series at 1 Hz: 10,000 points to seal and as many to
 * merge a second) needs.  What is left waits for the next
 * call (a flush seals what it hands out in any case). */
#define S_SEAL_BUDGET 10000u

/* The series a sample belongs to, as looked up: its name, tag set and
 * hashes (mhash of "metric\0", hash of the whole key). */
typedef struct {
    const char *metric;
    uint32_t mlen;
    uint64_t mhash;
    uint64_t hash;
    const telem_series_tags_t *tags;
} s_lookup_t;

/* --- metric entries and series -------------------------------------------- */

static size_t
s_metric_bytes(uint32_t mlen)
{
    return sizeof(tstore_metric_t) + mlen + 1;
}

static int
s_metric_create(telem_store_t *self, const char *name, uint32_t mlen,
                uint64_t hash, tstore_metric_t **out)
{
    size_t bytes = s_metric_bytes(mlen);
    tstore_metric_t *m = calloc(1, bytes);
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
s_metric_free(telem_store_t *self, tstore_metric_t *m)
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
s_metric_release_if_unused(telem_store_t *self, tstore_metric_t *m)
{
    if (m && m->nseries == 0 && !m->has_meta)
        s_metric_free(self, m);
}

static void
s_series_free(telem_store_t *self, tstore_series_t *s)
{
    tstore_metric_t *m = s->metric;
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
    self->ncounters -= s->counter;
    tstore_points_release(self, s);
    self->mem -= s->bytes;
    free(s);
}

/* Bytes of a series' own allocation: struct, tags and key. */
static size_t
s_series_bytes(const s_lookup_t *l)
{
    return sizeof(tstore_series_t) + l->tags->ntags * sizeof(telem_tag_t)
           + l->mlen + 1 + l->tags->len;
}

/* Allocates the series `l` names (key "metric\0" + tag set) and links it. */
static int
s_series_alloc(telem_store_t *self, tstore_metric_t *m, const s_lookup_t *l,
               tstore_series_t **out)
{
    const telem_series_tags_t *ts = l->tags;
    size_t bytes = s_series_bytes(l);
    tstore_series_t *s = calloc(1, bytes);
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
    tstore_points_free(&s->pts);
    int rc = telem_series_index_insert(&self->series_tab, &s->key,
                                       &self->mem);
    if (rc) {
        free(s);
        return rc;
    }
    s->next = m->series;
    if (m->series)
        m->series->prev = s;
    m->series = s;
    m->nseries++;
    self->nseries++;
    self->mem += bytes;
    *out = s;
    return 0;
}

/* Creates the series `l` names, after checking the series and memory caps
 * for everything it will allocate. */
static int
s_series_create(telem_store_t *self, const s_lookup_t *l, tstore_series_t **out)
{
    if (self->nseries >= self->cfg.max_series)
        return TELEM_EFULL;
    tstore_metric_t *m = tstore_metric_find(self, l->metric, l->mlen, l->mhash);
    uint64_t need = s_series_bytes(l)
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
        rc = s_series_alloc(self, m, l, out);
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
    cfg->max_counter_series = 10000;
    cfg->block_points = S_BLOCK_POINTS;
    cfg->merge_points = S_MERGE_POINTS;
}

/* Options of the open blocks, and the bytes of an empty writer. */
static int
s_writer_setup(telem_store_t *self)
{
    telem_block_opts_default(&self->wopts);
    uint32_t max = self->cfg.block_points;
    if (max > self->cfg.max_points_per_series)
        max = self->cfg.max_points_per_series;
    self->wopts.max_points = max;
    uint32_t merge = self->cfg.merge_points;
    if (merge > self->cfg.max_points_per_series / 4)
        merge = self->cfg.max_points_per_series / 4;
    if (merge > TELEM_BLOCK_MAX_POINTS)
        merge = TELEM_BLOCK_MAX_POINTS;
    self->merge_points = merge;
    int err = 0;
    telem_block_writer_t *w = telem_block_writer_new(&self->wopts, &err);
    if (!w)
        return err;
    self->w_base = telem_block_writer_mem(w);
    telem_block_writer_destroy(&w);
    return 0;
}

telem_store_t *
telem_store_new(const telem_store_config_t *cfg, int *err)
{
    telem_store_config_t def;
    if (!cfg) {
        telem_store_config_default(&def);
        cfg = &def;
    }
    int rc = TELEM_EINVAL;
    telem_store_t *self = NULL;
    if (cfg->window_ns > 0 && cfg->mem_cap_bytes > 0 && cfg->max_series > 0
        && cfg->max_points_per_series > 0 && cfg->block_points > 0
        && cfg->block_points <= TELEM_BLOCK_MAX_POINTS) {
        rc = TELEM_ENOMEM;
        self = calloc(1, sizeof(*self));
    }
    if (self) {
        self->cfg = *cfg;
        rc = s_writer_setup(self);
        if (rc) {
            free(self);
            self = NULL;
        }
    }
    if (err)
        *err = rc;
    return self;
}

void
telem_store_destroy(telem_store_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    telem_store_t *self = *self_p;
    for (tstore_metric_t *m = self->metrics, *mnext; m; m = mnext) {
        mnext = m->next;
        for (tstore_series_t *s = m->series, *snext; s; s = snext) {
            snext = s->next;
            tstore_points_free(&s->pts);
            free(s);
        }
        free(m->meta_strings);
        free(m);
    }
    telem_series_index_release(&self->series_tab);
    telem_series_index_release(&self->metric_tab);
    free(self->q_ts);
    free(self->q_val);
    free(self->o_ts);
    free(self->o_val);
    free(self->o_buf);
    telem_block_writer_destroy(&self->o_w);
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

/* --- append and expiry ---------------------------------------------------- */

/* Finds or (max_new permitting) creates the series `l` names (l->mlen
 * set).  The series of the previous append is checked first: runs of
 * samples of one series (one metric from one process) then skip the
 * hashing and the index.  TELEM_EFULL when it would be new and max_new
 * is 0. */
static int
s_series_find(telem_store_t *self, s_lookup_t *l, int max_new,
              tstore_series_t **out)
{
    const telem_series_tags_t *tags = l->tags;
    tstore_series_t *s = self->hot;
    if (!s || !telem_series_key_is(&s->key, l->metric, l->mlen + 1,
                                   tags->bytes, tags->len)) {
        l->mhash = tstore_metric_hash(l->metric, l->mlen);
        l->hash = telem_series_hash_pair(l->mhash, tags->hash);
        s = (tstore_series_t *) telem_series_index_find(
            &self->series_tab, l->hash, l->metric, l->mlen + 1, tags->bytes,
            tags->len);
        if (!s && !max_new)
            return TELEM_EFULL;
        int rc = s ? 0 : s_series_create(self, l, &s);
        if (rc)
            return rc;
        self->hot = s;
    }
    *out = s;
    return 0;
}

static int
s_series_get(telem_store_t *self, s_lookup_t *l, tstore_series_t **out)
{
    return s_series_find(self, l, 1, out);
}

/* Appends one point to series s (expiring its old points first). */
static int
s_point(telem_store_t *self, tstore_series_t *s, int64_t ts_ns, double value,
        int64_t horizon)
{
    if (s->pts.exp_ts < horizon || s->pts.open_first < horizon)
        tstore_points_expire(self, s, horizon);
    int rc = tstore_points_put(self, s, ts_ns, value);
    if (!rc && ts_ns > s->last_ts)
        s->last_ts = ts_ns;
    return rc;
}

/* Appends one point to the series of metric and the canonical `tags`;
 * `s` is that series when the caller found it already, else NULL. */
static int
s_append_to(telem_store_t *self, const char *metric,
            const telem_series_tags_t *tags, tstore_series_t *s, int64_t ts_ns,
            double value, int64_t now_ns)
{
    s_lookup_t l = { .metric = metric, .tags = tags };
    int rc = TELEM_EINVAL;
    if (tags->rc || !telem_series_name_ok(metric, 0, &l.mlen))
        goto refused;
    int64_t horizon = tstore_horizon(self, now_ns);
    if (ts_ns < horizon) {
        self->dropped++;            /* late on arrival: not an error */
        return 0;
    }
    if (!s && (rc = s_series_get(self, &l, &s)))
        goto refused;
    return s_point(self, s, ts_ns, value, horizon);
refused:
    self->dropped++;
    return rc;
}

static int
s_append(telem_store_t *self, const char *metric,
         const telem_series_tags_t *tags, int64_t ts_ns, double value,
         int64_t now_ns)
{
    return s_append_to(self, metric, tags, NULL, ts_ns, value, now_ns);
}

#define S_AHEAD 16           /* points looked up together */

/* Finds the existing series of pts[0..n) into out[] (NULL: not found yet,
 * or invalid; the append pass sorts those out), each pass starting the
 * loads of every point before the next pass uses them. */
static void
s_find_ahead(telem_store_t *self, const telem_series_tags_t *tags,
             const telem_store_point_t *pts, uint32_t n,
             tstore_series_t **out)
{
    const telem_series_index_t *t = &self->series_tab;
    uint64_t hash[S_AHEAD];
    uint32_t mlen[S_AHEAD];
    for (uint32_t i = 0; i < n; i++) {
        out[i] = NULL;
        mlen[i] = UINT32_MAX;
        if (t->cap == 0 || tags->rc
            || !telem_series_name_ok(pts[i].metric, 0, &mlen[i])) {
            mlen[i] = UINT32_MAX;
            continue;
        }
        hash[i] = telem_series_hash_pair(
            tstore_metric_hash(pts[i].metric, mlen[i]), tags->hash);
        __builtin_prefetch(&t->slots[hash[i] & (t->cap - 1)]);
    }
    for (uint32_t i = 0; i < n; i++) {
        if (mlen[i] == UINT32_MAX)
            continue;
        tstore_series_t *s = (tstore_series_t *) telem_series_index_find(
            t, hash[i], pts[i].metric, mlen[i] + 1, tags->bytes, tags->len);
        if (s && s->pts.w)
            __builtin_prefetch(s->pts.w, 1);
        out[i] = s;
    }
}

int
telem_store_append_many(telem_store_t *self, const telem_store_tags_t *tags,
                        const telem_store_point_t *pts, uint32_t n,
                        int64_t now_ns)
{
    if (!self || (n > 0 && !pts))
        return TELEM_EINVAL;
    if (!tags) {
        self->dropped += n;
        return n > 0 ? TELEM_EINVAL : 0;
    }
    int last = 0;
    for (uint32_t at = 0; at < n; at += S_AHEAD) {
        uint32_t m = n - at < S_AHEAD ? n - at : S_AHEAD;
        tstore_series_t *found[S_AHEAD];
        s_find_ahead(self, &tags->set, pts + at, m, found);
        for (uint32_t i = 0; i < m; i++) {
            const telem_store_point_t *p = &pts[at + i];
            int rc = s_append_to(self, p->metric, &tags->set, found[i],
                                 p->ts_ns, p->value, now_ns);
            if (rc)
                last = rc;
        }
    }
    return last;
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

/* --- counter series ------------------------------------------------------ */

/* Makes metric entry m's meta say counter: a new meta without unit or
 * doc, or the type of the one it has (its strings kept). */
static void
s_counter_meta(telem_store_t *self, tstore_metric_t *m)
{
    if (m->has_meta) {
        m->meta.type = TELEM_METRIC_COUNTER;
        return;
    }
    telem_meta_t meta = { m->name, TELEM_METRIC_COUNTER, "", "" };
    telem_store_describe(self, &meta);  /* at the cap: listed as a gauge */
}

/* Makes s (not a counter yet) a counter series, its total starting at 0. */
static void
s_mark_counter(telem_store_t *self, tstore_series_t *s)
{
    s->counter = true;
    s->total = 0;
    self->ncounters++;
    s_counter_meta(self, s->metric);
}

/* Finds the series `l` names, or makes it while counter series are under
 * their cap, and marks it a counter series. */
static int
s_counter_series(telem_store_t *self, s_lookup_t *l, tstore_series_t **out)
{
    tstore_series_t *s = NULL;
    int rc = s_series_find(self, l,
                           self->ncounters < self->cfg.max_counter_series, &s);
    if (rc)
        return rc;
    if (!s->counter)
        s_mark_counter(self, s);
    *out = s;
    return 0;
}

int
tstore_series_make_counter(telem_store_t *self, tstore_series_t *s)
{
    if (s->counter)
        return 0;
    if (self->ncounters >= self->cfg.max_counter_series)
        return TELEM_EFULL;
    s_mark_counter(self, s);
    return 0;
}

int
tstore_series_get(telem_store_t *self, const char *metric, uint32_t mlen,
                  const telem_series_tags_t *tags, tstore_series_t **out)
{
    s_lookup_t l = { .metric = metric, .mlen = mlen, .tags = tags };
    return s_series_get(self, &l, out);
}

int
telem_store_counter_add(telem_store_t *self, const char *metric,
                        const telem_tag_t *tags, uint32_t ntags,
                        int64_t ts_ns, double delta, int64_t now_ns)
{
    if (!self)
        return TELEM_EINVAL;
    telem_series_tags_set(&self->scratch, tags, ntags);
    s_lookup_t l = { .metric = metric, .tags = &self->scratch };
    tstore_series_t *s;
    int rc = TELEM_EINVAL;
    if (!isfinite(delta) || delta < 0 || self->scratch.rc
        || !telem_series_name_ok(metric, 0, &l.mlen)
        || (rc = s_counter_series(self, &l, &s)) != 0) {
        self->dropped++;
        return rc;
    }
    s->total += delta;
    int64_t horizon = tstore_horizon(self, now_ns);
    int64_t ts = ts_ns > s->last_ts ? ts_ns : s->last_ts;
    return s_point(self, s, ts < horizon ? now_ns : ts, s->total, horizon);
}

uint64_t
telem_store_expire(telem_store_t *self, int64_t now_ns)
{
    int64_t horizon = tstore_horizon(self, now_ns);
    /* A series is freed once it has been empty for a whole window, i.e.
     * when its newest point fell out of the window a window ago. */
    int64_t free_before = tstore_sub_sat(horizon, self->cfg.window_ns);
    /* Counter series get their total again before it gets that old. */
    int64_t refresh_before = tstore_sub_sat(now_ns, self->cfg.window_ns / 2);
    uint64_t removed = 0, seal = S_SEAL_BUDGET;
    for (tstore_metric_t *m = self->metrics, *mnext; m; m = mnext) {
        mnext = m->next;
        for (tstore_series_t *s = m->series, *snext; s; s = snext) {
            snext = s->next;
            if (s->counter && s->last_ts < refresh_before)
                s_point(self, s, now_ns, s->total, horizon);
            removed += tstore_points_expire(self, s, horizon);
            if (s->pts.npoints == 0 && s->last_ts < free_before) {
                s_series_free(self, s);
                continue;
            }
            uint64_t done = tstore_points_seal(self, s, seal);
            seal = done < seal ? seal - done : 0;
            tstore_points_shrink(self, s);
        }
        s_metric_release_if_unused(self, m);
    }
    /* Merging (memory only) after every series was sealed (what flushes
       hand out), with what is left of the budget. */
    for (tstore_metric_t *m = self->metrics; m && seal > 0; m = m->next)
        for (tstore_series_t *s = m->series; s && seal > 0; s = s->next) {
            uint64_t done = tstore_points_merge(self, s, seal);
            seal = done < seal ? seal - done : 0;
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
    uint64_t hash = tstore_metric_hash(meta->metric, mlen);
    tstore_metric_t *m = tstore_metric_find(self, meta->metric, mlen, hash);
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
    const tstore_metric_t *m = tstore_metric_find(self, metric, mlen,
                                        tstore_metric_hash(metric, mlen));
    return m && m->has_meta ? &m->meta : NULL;
}

/* --- counters ------------------------------------------------------------- */

void
telem_store_stats(const telem_store_t *self, telem_store_stats_t *out)
{
    out->nseries = self->nseries;
    out->ncounters = self->ncounters;
    out->npoints = self->npoints;
    out->mem_bytes = self->mem;
    out->mem_cap_bytes = self->cfg.mem_cap_bytes;
    out->appended = self->appended;
    out->dropped = self->dropped;
    out->expired = self->expired;
    out->evicted = self->evicted;
    out->loaded = self->loaded;
    out->stale = self->stale;
}

void
telem_store_count_dropped(telem_store_t *self, uint64_t n)
{
    self->dropped += n;
}
