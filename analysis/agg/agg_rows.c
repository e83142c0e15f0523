/* agg_rows.c - the rows a data source answers (agg_src.h): series, the
 * node each came from, and the nodes that did not answer.
 *
 * Over an analysis-client result the rows only point into it (it lives as
 * long as the rows); added series are copied into one allocation each
 * (struct strings, tags and points together), so freeing is one walk. */
#include "agg_src.h"

#include <stdlib.h>
#include <string.h>

#include "telem_error.h"

struct agg_rows {
    telem_series_t *s;
    const char **node;
    size_t n, cap;
    char **owned;                  /* one block per added series or name */
    size_t nowned, owned_cap;
    const char **miss, **why;
    size_t nmiss, miss_cap;
    ac_result_t *ac;               /* the wrapped result, if any */
};

agg_rows_t *
agg_rows_new(void)
{
    return calloc(1, sizeof(agg_rows_t));
}

static int
s_grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * size);
    if (!q)
        return TELEM_ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}

static int
s_own(agg_rows_t *self, char *block)
{
    if (!block || s_grow((void **) &self->owned, &self->owned_cap,
                         self->nowned + 1, sizeof *self->owned)) {
        free(block);
        return TELEM_ENOMEM;
    }
    self->owned[self->nowned++] = block;
    return 0;
}

static int
s_slot(agg_rows_t *self)
{
    size_t cap = self->cap;
    if (s_grow((void **) &self->s, &cap, self->n + 1, sizeof *self->s))
        return TELEM_ENOMEM;
    size_t cap2 = self->cap;
    if (s_grow((void **) &self->node, &cap2, self->n + 1, sizeof *self->node))
        return TELEM_ENOMEM;
    self->cap = cap < cap2 ? cap : cap2;
    return 0;
}

agg_rows_t *
agg_rows_from_ac(ac_result_t **r_p)
{
    agg_rows_t *self = agg_rows_new();
    ac_result_t *r = *r_p;
    *r_p = NULL;
    for (size_t i = 0; self && i < ac_result_nseries(r); i++) {
        if (s_slot(self)) {
            agg_rows_destroy(&self);
            break;
        }
        self->s[self->n] = *ac_result_series(r, i);
        self->node[self->n++] = ac_result_series_node(r, i);
    }
    for (size_t i = 0; self && i < ac_result_nmissing(r); i++) {
        size_t c1 = self->miss_cap, c2 = self->miss_cap;
        if (s_grow((void **) &self->miss, &c1, self->nmiss + 1,
                   sizeof *self->miss)
            || s_grow((void **) &self->why, &c2, self->nmiss + 1,
                      sizeof *self->why)) {
            agg_rows_destroy(&self);
            break;
        }
        self->miss_cap = c1 < c2 ? c1 : c2;
        self->miss[self->nmiss] = ac_result_missing(r, i);
        self->why[self->nmiss++] = ac_result_missing_message(r, i);
    }
    if (self)
        self->ac = r;
    else
        ac_result_destroy(&r);
    return self;
}

static size_t
s_len(const char *s)
{
    return s ? strlen(s) + 1 : 1;
}

static char *
s_put(char **p, const char *s)
{
    char *out = *p;
    size_t n = s_len(s);
    memcpy(out, s ? s : "", n);
    *p += n;
    return out;
}

int
agg_rows_add(agg_rows_t *self, const char *node, const telem_series_t *s)
{
    size_t strings = s_len(node) + s_len(s->metric) + s_len(s->unit)
                     + s_len(s->doc);
    for (uint32_t t = 0; t < s->ntags; t++)
        strings += s_len(s->tags[t].key) + s_len(s->tags[t].value);
    size_t points = (size_t) s->npoints * (sizeof(int64_t) + sizeof(double));
    size_t tags = (size_t) s->ntags * sizeof(telem_tag_t);
    char *block = malloc(points + tags + strings + 1);
    if (!block || s_slot(self) || s_own(self, block))
        return TELEM_ENOMEM;     /* s_own freed block when it failed */
    int64_t *ts = (int64_t *) block;
    double *v = (double *) (block + (size_t) s->npoints * sizeof(int64_t));
    telem_tag_t *tg = (telem_tag_t *) (block + points);
    char *p = block + points + tags;
    if (s->npoints) {
        memcpy(ts, s->ts, (size_t) s->npoints * sizeof *ts);
        memcpy(v, s->values, (size_t) s->npoints * sizeof *v);
    }
    telem_series_t c = *s;
    for (uint32_t t = 0; t < s->ntags; t++) {
        tg[t].key = s_put(&p, s->tags[t].key);
        tg[t].value = s_put(&p, s->tags[t].value);
    }
    self->node[self->n] = s_put(&p, node);
    c.metric = s_put(&p, s->metric);
    c.unit = s_put(&p, s->unit);
    c.doc = s_put(&p, s->doc);
    c.tags = s->ntags ? tg : NULL;
    c.ts = s->npoints ? ts : NULL;
    c.values = s->npoints ? v : NULL;
    self->s[self->n++] = c;
    return 0;
}

int
agg_rows_add_missing(agg_rows_t *self, const char *node, const char *why)
{
    size_t c1 = self->miss_cap, c2 = self->miss_cap;
    if (s_grow((void **) &self->miss, &c1, self->nmiss + 1, sizeof *self->miss)
        || s_grow((void **) &self->why, &c2, self->nmiss + 1,
                  sizeof *self->why))
        return TELEM_ENOMEM;
    self->miss_cap = c1 < c2 ? c1 : c2;
    char *block = malloc(s_len(node) + s_len(why));
    if (s_own(self, block))
        return TELEM_ENOMEM;
    char *p = block;
    self->miss[self->nmiss] = s_put(&p, node);
    self->why[self->nmiss++] = s_put(&p, why);
    return 0;
}

/* ---- order ------------------------------------------------------------- */

typedef struct {
    telem_series_t s;
    const char *node;
} s_pair_t;

static int
s_cmp(const void *pa, const void *pb)
{
    const s_pair_t *a = pa, *b = pb;
    int c = strcmp(a->s.metric, b->s.metric);
    uint32_t n = a->s.ntags < b->s.ntags ? a->s.ntags : b->s.ntags;
    for (uint32_t i = 0; !c && i < n; i++) {
        c = strcmp(a->s.tags[i].key, b->s.tags[i].key);
        if (!c)
            c = strcmp(a->s.tags[i].value, b->s.tags[i].value);
    }
    if (!c)
        c = (a->s.ntags > b->s.ntags) - (a->s.ntags < b->s.ntags);
    return c ? c : strcmp(a->node, b->node);
}

void
agg_rows_sort(agg_rows_t *self)
{
    s_pair_t *p = malloc((self->n ? self->n : 1) * sizeof *p);
    if (!p)
        return;                    /* unsorted, still valid */
    for (size_t i = 0; i < self->n; i++)
        p[i] = (s_pair_t) { self->s[i], self->node[i] };
    qsort(p, self->n, sizeof *p, s_cmp);
    for (size_t i = 0; i < self->n; i++) {
        self->s[i] = p[i].s;
        self->node[i] = p[i].node;
    }
    free(p);
}

/* ---- reading ----------------------------------------------------------- */

size_t agg_rows_count(const agg_rows_t *self) { return self ? self->n : 0; }
size_t agg_rows_nmissing(const agg_rows_t *self)
{
    return self ? self->nmiss : 0;
}

const telem_series_t *
agg_rows_series(const agg_rows_t *self, size_t i)
{
    return self && i < self->n ? &self->s[i] : NULL;
}

const char *
agg_rows_node(const agg_rows_t *self, size_t i)
{
    return self && i < self->n ? self->node[i] : NULL;
}

const char *
agg_rows_missing(const agg_rows_t *self, size_t i)
{
    return self && i < self->nmiss ? self->miss[i] : NULL;
}

const char *
agg_rows_missing_message(const agg_rows_t *self, size_t i)
{
    return self && i < self->nmiss ? self->why[i] : NULL;
}

void
agg_rows_destroy(agg_rows_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    agg_rows_t *self = *self_p;
    for (size_t i = 0; i < self->nowned; i++)
        free(self->owned[i]);
    free(self->owned);
    free(self->s);
    free(self->node);
    free(self->miss);
    free(self->why);
    ac_result_destroy(&self->ac);
    free(self);
    *self_p = NULL;
}
