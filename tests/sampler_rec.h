/* sampler_rec.h - records what a telemd sampler emits, for the sampler
 * tests: every value with its metric and tags (joined "k=v,k=v" in the
 * order given), checked on the way in against the sampler's metric table
 * (described, finite, tags well formed).  Include after check.h.
 */
#ifndef TELEM_TESTS_SAMPLER_REC_H
#define TELEM_TESTS_SAMPLER_REC_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "telem_sampler.h"

typedef struct {
    char metric[64];
    char tags[256];
    double value;
} rec_entry_t;

typedef struct {
    const telem_meta_t *metas;
    rec_entry_t v[1024];
    size_t n;
} rec_t;

static const telem_meta_t *
rec_meta(const telem_meta_t *metas, const char *metric)
{
    for (; metas && metas->metric; metas++)
        if (strcmp(metas->metric, metric) == 0)
            return metas;
    return NULL;
}

static void
rec_emit(void *arg, const char *metric, const telem_tag_t *tags,
         uint32_t ntags, double value)
{
    rec_t *r = arg;
    CHECK(metric != NULL && rec_meta(r->metas, metric) != NULL);
    CHECK(isfinite(value));
    CHECK(ntags <= 3 && (ntags == 0 || tags != NULL));
    CHECK(r->n < sizeof r->v / sizeof r->v[0]);
    if (!metric || r->n >= sizeof r->v / sizeof r->v[0])
        return;
    if (!rec_meta(r->metas, metric))
        fprintf(stderr, "metric %s has no meta entry\n", metric);
    rec_entry_t *e = &r->v[r->n++];
    memset(e, 0, sizeof *e);
    snprintf(e->metric, sizeof e->metric, "%s", metric);
    size_t at = 0;
    for (uint32_t i = 0; i < ntags && tags; i++) {
        CHECK(tags[i].key && tags[i].value && *tags[i].value);
        at += (size_t) snprintf(e->tags + at, sizeof e->tags - at, "%s%s=%s",
                                i ? "," : "", tags[i].key, tags[i].value);
        if (at >= sizeof e->tags)
            break;
    }
    e->value = value;
}

static int
rec_sample(const telem_sampler_vt_t *vt, void *st, int64_t now, rec_t *r)
{
    r->metas = vt->metrics;
    r->n = 0;
    return vt->sample(st, now, rec_emit, r);
}

/* The entry for metric with exactly these tags ("" for none), or NULL. */
static const rec_entry_t *
rec_find(const rec_t *r, const char *metric, const char *tags)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->v[i].metric, metric) == 0
            && strcmp(r->v[i].tags, tags) == 0)
            return &r->v[i];
    return NULL;
}

static size_t
rec_count(const rec_t *r, const char *metric)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += strcmp(r->v[i].metric, metric) == 0;
    return n;
}

/* The value, which must be there: NAN and a failure when it is not. */
static double
rec_value(const rec_t *r, const char *metric, const char *tags)
{
    const rec_entry_t *e = rec_find(r, metric, tags);
    if (!e) {
        fprintf(stderr, "missing %s{%s}\n", metric, tags);
        s_failures++;
        return NAN;
    }
    return e->value;
}

/* vt->open() returning the code: 0 with a state; 98/99 when state and code
 * disagree. */
static int
rec_open(const telem_sampler_vt_t *vt, void **st,
         const telem_sampler_env_t *env)
{
    int rc = 1;
    *st = vt->open(env, &rc);
    if (*st)
        return rc == 0 ? 0 : 99;
    return rc != 0 ? rc : 98;
}

/* Writes (truncating in place) dir/rel. */
static void
rec_write(const char *dir, const char *rel, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
}

#endif
