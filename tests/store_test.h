/* store_test.h - shared by the store's unit tests (test_store.c: appends,
 * tags, queries, metas, prepared tag sets; test_store_retention.c: expiry,
 * caps, eviction, ordering and the series cache across them): a query
 * callback that records what it sees, and store set-up and tear-down that
 * check the counters' invariants (the checks come from check.h).  Everything is static
 * (inline) so each test file takes what it needs.
 */
#ifndef TELEM_TESTS_STORE_TEST_H
#define TELEM_TESTS_STORE_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "telem_error.h"
#include "telem_store.h"

#define SEC INT64_C(1000000000)

/* --- a query callback that records what it sees ------------------------ */

#define CAP_SERIES 64

typedef struct {
    char metric[300];
    char tags[1200];        /* "k=v,k=v" */
    telem_metric_type_t type;
    char unit[300];
    char doc[300];
    uint32_t npoints;
    int ts_null;
    int64_t *ts;
    double *values;
} cap_series_t;

typedef struct {
    int calls;
    int stop_after;         /* return 7 after this many calls; 0 = never */
    int n;
    cap_series_t s[CAP_SERIES];
} capture_t;

static inline int
s_capture_fn(void *arg, const telem_series_t *s)
{
    capture_t *c = arg;
    c->calls++;
    if (c->n < CAP_SERIES) {
        cap_series_t *o = &c->s[c->n++];
        snprintf(o->metric, sizeof o->metric, "%s", s->metric);
        o->tags[0] = '\0';
        for (uint32_t i = 0; i < s->ntags; i++) {
            size_t len = strlen(o->tags);
            snprintf(o->tags + len, sizeof o->tags - len, "%s%s=%s",
                     i ? "," : "", s->tags[i].key, s->tags[i].value);
        }
        o->type = s->type;
        snprintf(o->unit, sizeof o->unit, "%s", s->unit);
        snprintf(o->doc, sizeof o->doc, "%s", s->doc);
        o->npoints = s->npoints;
        o->ts_null = s->ts == NULL && s->values == NULL;
        o->ts = calloc(s->npoints + 1, sizeof(int64_t));
        o->values = calloc(s->npoints + 1, sizeof(double));
        if (s->npoints) {
            memcpy(o->ts, s->ts, s->npoints * sizeof(int64_t));
            memcpy(o->values, s->values, s->npoints * sizeof(double));
        }
    }
    return c->stop_after && c->calls >= c->stop_after ? 7 : 0;
}

static inline void
s_capture_reset(capture_t *c)
{
    for (int i = 0; i < c->n; i++) {
        free(c->s[i].ts);
        free(c->s[i].values);
    }
    memset(c, 0, sizeof *c);
}

static inline const cap_series_t *
s_capture_find(const capture_t *c, const char *metric, const char *tags)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->s[i].metric, metric) == 0
            && strcmp(c->s[i].tags, tags) == 0)
            return &c->s[i];
    return NULL;
}

static inline int
s_query(telem_store_t *st, const telem_store_query_t *q, int64_t now, capture_t *c)
{
    s_capture_reset(c);
    return telem_store_query(st, q, now, s_capture_fn, c);
}

static inline void
s_check_stats(const telem_store_t *st)
{
    telem_store_stats_t s;
    telem_store_stats(st, &s);
    CHECK(s.npoints == s.appended + s.loaded - s.expired - s.evicted);
    CHECK(s.mem_bytes <= s.mem_cap_bytes);
}

/* A store with the defaults, except the non-zero arguments (block_points
 * too). */
static inline telem_store_t *
s_store_b(int64_t window, size_t cap, uint32_t max_series,
          uint32_t max_points, uint32_t block_points)
{
    telem_store_config_t cfg;
    telem_store_config_default(&cfg);
    cfg.block_points = block_points ? block_points : cfg.block_points;
    cfg.window_ns = window ? window : cfg.window_ns;
    cfg.mem_cap_bytes = cap ? cap : cfg.mem_cap_bytes;
    cfg.max_series = max_series ? max_series : cfg.max_series;
    cfg.max_points_per_series = max_points ? max_points
                                           : cfg.max_points_per_series;
    telem_store_t *st = telem_store_new(&cfg, NULL);
    if (!st) {
        fprintf(stderr, "telem_store_new failed\n");
        exit(1);
    }
    return st;
}

/* A store with the defaults, except the non-zero arguments. */
static inline telem_store_t *
s_store(int64_t window, size_t cap, uint32_t max_series, uint32_t max_points)
{
    return s_store_b(window, cap, max_series, max_points, 0);
}

/* End of a test: counters consistent, everything freed. */
static inline void
s_done(telem_store_t **st, capture_t *c)
{
    s_check_stats(*st);
    if (c)
        s_capture_reset(c);
    telem_store_destroy(st);
    CHECK(*st == NULL);
}

#endif
