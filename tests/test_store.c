/* test_store.c - unit tests for the in-memory time-series store.
 *
 * Drives telem_store_* directly (no sockets): appends and queries, tag
 * canonicalisation, filters, time ranges, retention, memory and series caps,
 * eviction, out-of-order points (against a simple sorted-array model), metas,
 * counters and invalid input.  No assertion depends on timing.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_store.h"

static int g_failures;

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,         \
                    __LINE__, #cond);                                      \
            g_failures++;                                                  \
        }                                                                  \
    } while (0)

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

static int
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

static void
s_capture_reset(capture_t *c)
{
    for (int i = 0; i < c->n; i++) {
        free(c->s[i].ts);
        free(c->s[i].values);
    }
    memset(c, 0, sizeof *c);
}

static const cap_series_t *
s_capture_find(const capture_t *c, const char *metric, const char *tags)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->s[i].metric, metric) == 0
            && strcmp(c->s[i].tags, tags) == 0)
            return &c->s[i];
    return NULL;
}

static int
s_query(telem_store_t *st, const telem_query_t *q, int64_t now, capture_t *c)
{
    s_capture_reset(c);
    return telem_store_query(st, q, now, s_capture_fn, c);
}

static void
s_check_stats(const telem_store_t *st)
{
    telem_store_stats_t s;
    telem_store_stats(st, &s);
    CHECK(s.npoints == s.appended - s.expired - s.evicted);
    CHECK(s.mem_bytes <= s.mem_cap_bytes);
}

/* A store with the defaults, except the non-zero arguments. */
static telem_store_t *
s_store(int64_t window, size_t cap, uint32_t max_series, uint32_t max_points)
{
    telem_store_config_t cfg;
    telem_store_config_default(&cfg);
    cfg.window_ns = window ? window : cfg.window_ns;
    cfg.mem_cap_bytes = cap ? cap : cfg.mem_cap_bytes;
    cfg.max_series = max_series ? max_series : cfg.max_series;
    cfg.max_points_per_series = max_points ? max_points
                                           : cfg.max_points_per_series;
    telem_store_t *st = telem_store_new(&cfg);
    if (!st) {
        fprintf(stderr, "telem_store_new failed\n");
        exit(1);
    }
    return st;
}

/* End of a test: counters consistent, everything freed. */
static void
s_done(telem_store_t **st, capture_t *c)
{
    s_check_stats(*st);
    if (c)
        s_capture_reset(c);
    telem_store_destroy(st);
    CHECK(*st == NULL);
}

/* --- tests ------------------------------------------------------------- */

static void
test_basic(void)
{
    telem_store_t *st = telem_store_new(NULL);
    CHECK(st);
    CHECK(telem_store_window(st) == 300 * SEC);
    int64_t now = 1000 * SEC;
    telem_tag_t tags[] = { { "host", "n1" } };
    CHECK(telem_store_append(st, "cpu", tags, 1, now - 3 * SEC, 1.5, now) == 0);
    CHECK(telem_store_append(st, "cpu", tags, 1, now - 2 * SEC, 2.5, now) == 0);
    CHECK(telem_store_append(st, "cpu", tags, 1, now - 1 * SEC, NAN, now) == 0);
    CHECK(telem_store_append(st, "mem", NULL, 0, now, 42, now) == 0);

    telem_store_stats_t s;
    telem_store_stats(st, &s);
    CHECK(s.nseries == 2 && s.npoints == 4 && s.appended == 4);
    CHECK(s.dropped == 0 && s.mem_bytes > 0);

    capture_t c = { 0 };
    telem_query_t q = { 0 };
    CHECK(s_query(st, &q, now, &c) == 0);
    CHECK(c.n == 2);
    const cap_series_t *cpu = s_capture_find(&c, "cpu", "host=n1");
    CHECK(cpu && cpu->npoints == 3);
    if (cpu && cpu->npoints == 3) {
        CHECK(cpu->ts[0] == now - 3 * SEC && cpu->values[0] == 1.5);
        CHECK(cpu->ts[1] == now - 2 * SEC && cpu->values[1] == 2.5);
        CHECK(isnan(cpu->values[2]));
        CHECK(cpu->type == TELEM_METRIC_GAUGE);
        CHECK(strcmp(cpu->unit, "") == 0 && strcmp(cpu->doc, "") == 0);
    }
    const cap_series_t *mem = s_capture_find(&c, "mem", "");
    CHECK(mem && mem->npoints == 1 && mem->values[0] == 42);
    s_done(&st, &c);
    CHECK(st == NULL);
    telem_store_destroy(&st);
    telem_store_destroy(NULL);
}

static void
test_tags_canonical(void)
{
    telem_store_t *st = s_store(0, 0, 0, 0);
    int64_t now = 1000 * SEC;
    telem_tag_t t1[] = { { "rank", "3" }, { "host", "a" }, { "gpu", "0" } };
    telem_tag_t t2[] = { { "gpu", "0" }, { "host", "a" }, { "rank", "3" } };
    telem_tag_t t3[] = { { "host", "b" }, { "gpu", "0" }, { "host", "a" },
                         { "rank", "3" } };
    CHECK(telem_store_append(st, "m", t1, 3, now - 3, 1, now) == 0);
    CHECK(telem_store_append(st, "m", t2, 3, now - 2, 2, now) == 0);
    CHECK(telem_store_append(st, "m", t3, 4, now - 1, 3, now) == 0);
    /* Same metric, different tag value: another series. */
    telem_tag_t t4[] = { { "host", "a" }, { "gpu", "1" }, { "rank", "3" } };
    CHECK(telem_store_append(st, "m", t4, 3, now, 4, now) == 0);
    /* The last of duplicated keys wins. */
    telem_tag_t t5[] = { { "x", "1" }, { "x", "2" } };
    telem_tag_t t6[] = { { "x", "2" } };
    CHECK(telem_store_append(st, "d", t5, 2, now - 1, 1, now) == 0);
    CHECK(telem_store_append(st, "d", t6, 1, now, 2, now) == 0);
    /* Empty tag values are allowed and distinct from a missing tag. */
    telem_tag_t t7[] = { { "e", "" } };
    CHECK(telem_store_append(st, "d", t7, 1, now, 3, now) == 0);
    /* A metric name equal to another's key prefix is not confused. */
    telem_tag_t t8[] = { { "a", "b" } };
    CHECK(telem_store_append(st, "d", t8, 1, now, 4, now) == 0);

    telem_store_stats_t s;
    telem_store_stats(st, &s);
    CHECK(s.nseries == 5);

    capture_t c = { 0 };
    telem_query_t q = { 0 };
    CHECK(s_query(st, &q, now, &c) == 0);
    CHECK(c.n == 5);
    const cap_series_t *m = s_capture_find(&c, "m", "gpu=0,host=a,rank=3");
    CHECK(m && m->npoints == 3);
    CHECK(s_capture_find(&c, "m", "gpu=1,host=a,rank=3"));
    const cap_series_t *d = s_capture_find(&c, "d", "x=2");
    CHECK(d && d->npoints == 2);
    CHECK(s_capture_find(&c, "d", "e="));
    CHECK(s_capture_find(&c, "d", "a=b"));
    s_done(&st, &c);
}

static void
s_fill_filters(telem_store_t *st, int64_t now)
{
    telem_tag_t a0[] = { { "host", "a" }, { "gpu", "0" } };
    telem_tag_t a1[] = { { "host", "a" }, { "gpu", "1" } };
    telem_tag_t b[] = { { "host", "b" } };
    telem_tag_t e[] = { { "host", "" } };
    CHECK(telem_store_append(st, "util", a0, 2, now, 1, now) == 0);
    CHECK(telem_store_append(st, "util", a1, 2, now, 2, now) == 0);
    CHECK(telem_store_append(st, "util", b, 1, now, 3, now) == 0);
    CHECK(telem_store_append(st, "util", e, 1, now, 4, now) == 0);
    CHECK(telem_store_append(st, "temp", a0, 2, now, 5, now) == 0);
    CHECK(telem_store_append(st, "load", b, 1, now, 6, now) == 0);
}

static void
test_filters(void)
{
    telem_store_t *st = s_store(0, 0, 0, 0);
    int64_t now = 1000 * SEC;
    s_fill_filters(st, now);
    capture_t c = { 0 };

    telem_tag_t f1[] = { { "host", "a" } };
    telem_query_t q = { .filters = f1, .nfilters = 1 };
    CHECK(s_query(st, &q, now, &c) == 0 && c.n == 3);

    telem_tag_t f2[] = { { "gpu", "*" } };
    q.filters = f2;
    CHECK(s_query(st, &q, now, &c) == 0 && c.n == 3);

    telem_tag_t f3[] = { { "host", "b" }, { "gpu", "*" } };
    q.filters = f3;
    q.nfilters = 2;
    CHECK(s_query(st, &q, now, &c) == 0 && c.n == 0);

    telem_tag_t f4[] = { { "host", "a" }, { "gpu", "1" } };
    q.filters = f4;
    CHECK(s_query(st, &q, now, &c) == 0 && c.n == 1);
    CHECK(s_capture_find(&c, "util", "gpu=1,host=a"));

    telem_tag_t f5[] = { { "host", "" } };
    q.filters = f5;
    q.nfilters = 1;
    CHECK(s_query(st, &q, now, &c) == 0 && c.n == 1);

    telem_tag_t f6[] = { { "host", "*" } };
    q.filters = f6;
    CHECK(s_query(st, &q, now, &c) == 0 && c.n == 6);

    telem_tag_t f7[] = { { "rack", "*" } };
    q.filters = f7;
    CHECK(s_query(st, &q, now, &c) == 0 && c.n == 0);
    s_done(&st, &c);
}

static void
test_metric_lists(void)
{
    telem_store_t *st = s_store(0, 0, 0, 0);
    int64_t now = 1000 * SEC;
    s_fill_filters(st, now);
    capture_t c = { 0 };
    telem_tag_t f1[] = { { "host", "a" } };

    /* Metric lists: exact names, repeats reported once, unknown ignored. */
    const char *names[] = { "util", "load", "util", "nope", "uti" };
    telem_query_t qm = { .metrics = names, .nmetrics = 5 };
    CHECK(s_query(st, &qm, now, &c) == 0 && c.n == 5);
    CHECK(s_capture_find(&c, "load", "host=b"));
    qm.filters = f1;
    qm.nfilters = 1;
    CHECK(s_query(st, &qm, now, &c) == 0 && c.n == 2);
    const char *none[] = { "nope" };
    telem_query_t qn = { .metrics = none, .nmetrics = 1 };
    CHECK(s_query(st, &qn, now, &c) == 0 && c.n == 0);

    /* The callback can stop the walk. */
    s_capture_reset(&c);
    c.stop_after = 2;
    telem_query_t qa = { 0 };
    CHECK(telem_store_query(st, &qa, now, s_capture_fn, &c) == 7);
    CHECK(c.calls == 2);
    s_done(&st, &c);
}

static void
test_ranges(void)
{
    telem_store_t *st = s_store(1000 * SEC, 0, 0, 0);
    int64_t now = 10000 * SEC;
    telem_tag_t h[] = { { "host", "a" } };
    for (int i = 1; i <= 100; i++)
        CHECK(telem_store_append(st, "m", h, 1, now - (100 - i) * SEC, i,
                                 now) == 0);
    /* m's points are at now-99s .. now, values 1..100. */
    CHECK(telem_store_append(st, "old", h, 1, now - 500 * SEC, 1, now) == 0);
    capture_t c = { 0 };
    const char *m[] = { "m" };
    telem_query_t q = { .metrics = m, .nmetrics = 1 };
    q.start_ns = now - 20 * SEC;
    q.end_ns = now - 10 * SEC;
    CHECK(s_query(st, &q, now, &c) == 0 && c.n == 1);
    CHECK(c.s[0].npoints == 11);
    CHECK(c.s[0].ts[0] == now - 20 * SEC && c.s[0].ts[10] == now - 10 * SEC);
    CHECK(c.s[0].values[0] == 80 && c.s[0].values[10] == 90);

    q.max_points = 3;
    CHECK(s_query(st, &q, now, &c) == 0 && c.s[0].npoints == 3);
    CHECK(c.s[0].values[0] == 88 && c.s[0].values[2] == 90);

    q.flags = TELEM_QUERY_LATEST;
    CHECK(s_query(st, &q, now, &c) == 0 && c.s[0].npoints == 1);
    CHECK(c.s[0].values[0] == 90);

    q.flags = 0;
    q.max_points = 0;
    q.start_ns = 0;
    q.end_ns = 0;
    CHECK(s_query(st, &q, now, &c) == 0 && c.s[0].npoints == 100);
    /* end 0 is now: a point in the future is not included. */
    CHECK(telem_store_append(st, "m", h, 1, now + SEC, 101, now) == 0);
    CHECK(s_query(st, &q, now, &c) == 0 && c.s[0].npoints == 100);
    q.end_ns = now + SEC;
    CHECK(s_query(st, &q, now, &c) == 0 && c.s[0].npoints == 101);
    /* An empty range skips the series; start > end too. */
    q.start_ns = now - 200 * SEC;
    q.end_ns = now - 150 * SEC;
    CHECK(s_query(st, &q, now, &c) == 0 && c.n == 0);
    q.start_ns = now;
    q.end_ns = now - SEC;
    CHECK(s_query(st, &q, now, &c) == 0 && c.n == 0);
    /* start before the window is clamped to the window. */
    const char *o[] = { "old" };
    telem_query_t qo = { .metrics = o, .nmetrics = 1,
                         .start_ns = now - 600 * SEC };
    CHECK(s_query(st, &qo, now, &c) == 0 && c.n == 1);
    CHECK(s_query(st, &qo, now + 600 * SEC, &c) == 0 && c.n == 0);
    s_done(&st, &c);
}

static void
test_list(void)
{
    telem_store_t *st = s_store(1000 * SEC, 0, 0, 0);
    int64_t now = 10000 * SEC;
    telem_tag_t h[] = { { "host", "a" } };
    capture_t c = { 0 };
    CHECK(telem_store_append(st, "m", h, 1, now + SEC, 1, now) == 0);
    CHECK(telem_store_append(st, "old", h, 1, now - 500 * SEC, 1, now) == 0);
    /* LIST: catalog only, every live series, no points. */
    telem_query_t ql = { .flags = TELEM_QUERY_LIST, .start_ns = now - 1,
                         .end_ns = now - 1 };
    CHECK(s_query(st, &ql, now, &c) == 0 && c.n == 2);
    CHECK(c.s[0].npoints == 0 && c.s[0].ts_null);
    CHECK(c.s[1].npoints == 0 && c.s[1].ts_null);
    /* "old" is outside the window 600 s later: not live. */
    CHECK(s_query(st, &ql, now + 600 * SEC, &c) == 0 && c.n == 1);
    s_done(&st, &c);
}

static void
test_retention(void)
{
    telem_store_t *st = s_store(10 * SEC, 0, 0, 0);
    int64_t now = 100 * SEC;
    telem_store_stats_t s;
    /* Late on arrival: dropped (counted), not an error. */
    CHECK(telem_store_append(st, "m", NULL, 0, 85 * SEC, 1, now) == 0);
    telem_store_stats(st, &s);
    CHECK(s.dropped == 1 && s.appended == 0 && s.nseries == 0);
    /* The window edge itself is kept. */
    CHECK(telem_store_append(st, "m", NULL, 0, 90 * SEC, 1, now) == 0);
    for (int i = 91; i <= 100; i++)
        CHECK(telem_store_append(st, "m", NULL, 0, i * SEC, i, now) == 0);
    telem_store_stats(st, &s);
    CHECK(s.npoints == 11 && s.appended == 11);
    CHECK(telem_store_expire(st, now) == 0);
    CHECK(telem_store_expire(st, 105 * SEC) == 5);
    telem_store_stats(st, &s);
    CHECK(s.npoints == 6 && s.expired == 5);

    /* Lazy expiry on append, without calling expire. */
    CHECK(telem_store_append(st, "m", NULL, 0, 108 * SEC, 108, 108 * SEC) == 0);
    telem_store_stats(st, &s);
    CHECK(s.npoints == 4 && s.expired == 8);   /* 95..97 went */

    /* A window change applies to queries at once, to points at expiry. */
    CHECK(telem_store_set_window(st, 0) == TELEM_EINVAL);
    CHECK(telem_store_set_window(st, -1) == TELEM_EINVAL);
    CHECK(telem_store_set_window(st, 2 * SEC) == 0);
    CHECK(telem_store_window(st) == 2 * SEC);
    capture_t c = { 0 };
    telem_query_t q = { 0 };
    CHECK(s_query(st, &q, 108 * SEC, &c) == 0 && c.n == 1);
    CHECK(c.s[0].npoints == 1 && c.s[0].values[0] == 108);
    CHECK(telem_store_expire(st, 108 * SEC) == 3);
    s_done(&st, &c);
}

static void
test_series_freed(void)
{
    telem_store_t *st = s_store(2 * SEC, 0, 0, 0);
    telem_store_stats_t s;
    capture_t c = { 0 };
    telem_query_t q = { 0 };
    CHECK(telem_store_append(st, "m", NULL, 0, 108 * SEC, 1, 108 * SEC) == 0);
    /* The series stays while empty for less than a window, then goes. */
    CHECK(telem_store_expire(st, 111 * SEC) == 1);
    telem_store_stats(st, &s);
    CHECK(s.npoints == 0 && s.nseries == 1);
    CHECK(telem_store_expire(st, 112 * SEC) == 0);
    telem_store_stats(st, &s);
    CHECK(s.nseries == 1);
    CHECK(telem_store_expire(st, 112 * SEC + 1) == 0);
    telem_store_stats(st, &s);
    CHECK(s.nseries == 0 && s.npoints == 0);
    CHECK(s.mem_bytes == 0);     /* everything given back */
    CHECK(s_query(st, &q, 113 * SEC, &c) == 0 && c.n == 0);
    /* An empty series that gets a point again is reused. */
    CHECK(telem_store_append(st, "m", NULL, 0, 200 * SEC, 1, 200 * SEC) == 0);
    CHECK(telem_store_expire(st, 203 * SEC) == 1);
    CHECK(telem_store_append(st, "m", NULL, 0, 204 * SEC, 2, 204 * SEC) == 0);
    telem_store_stats(st, &s);
    CHECK(s.nseries == 1 && s.npoints == 1);
    s_done(&st, &c);
}

/* Many series, half of them freed by expiry: the rest must still be found
 * (exercises deletion from the hash index). */
static void
test_index_churn(void)
{
    telem_store_t *st = s_store(10 * SEC, 0, 0, 0);
    char v[32];
    telem_tag_t t[] = { { "id", v } };
    telem_store_stats_t s;
    int bad = 0;
    for (int i = 0; i < 5000; i++) {
        snprintf(v, sizeof v, "%d", i);
        bad += telem_store_append(st, i % 3 ? "a" : "b", t, 1, 100 * SEC, i,
                                  100 * SEC) != 0;
    }
    /* Refresh the odd ones only; their old point goes lazily. */
    for (int i = 1; i < 5000; i += 2) {
        snprintf(v, sizeof v, "%d", i);
        bad += telem_store_append(st, i % 3 ? "a" : "b", t, 1, 115 * SEC, i,
                                  115 * SEC) != 0;
    }
    telem_store_stats(st, &s);
    CHECK(s.nseries == 5000 && s.npoints == 5000 && s.expired == 2500);
    /* The even ones have been empty for a window: freed. */
    CHECK(telem_store_expire(st, 131 * SEC) == 5000);
    telem_store_stats(st, &s);
    CHECK(s.nseries == 2500 && s.npoints == 0);
    /* Every odd one is still found (no new series), then the even ones
     * come back as new series. */
    for (int i = 1; i < 5000; i += 2) {
        snprintf(v, sizeof v, "%d", i);
        bad += telem_store_append(st, i % 3 ? "a" : "b", t, 1, 131 * SEC, i,
                                  131 * SEC) != 0;
    }
    telem_store_stats(st, &s);
    CHECK(s.nseries == 2500 && s.npoints == 2500);
    for (int i = 0; i < 5000; i += 2) {
        snprintf(v, sizeof v, "%d", i);
        bad += telem_store_append(st, i % 3 ? "a" : "b", t, 1, 131 * SEC, i,
                                  131 * SEC) != 0;
    }
    telem_store_stats(st, &s);
    CHECK(s.nseries == 5000 && s.npoints == 5000);
    CHECK(bad == 0);
    s_done(&st, NULL);
}

static void
test_mem_cap(void)
{
    const size_t cap = 64 * 1024;
    telem_store_t *st = s_store(10 * SEC, cap, 0, 0);
    char v[32];
    telem_tag_t t[] = { { "id", v } };
    int64_t now = 100 * SEC;
    int ok = 0, full = 0;
    for (int i = 0; i < 10000 && full < 10; i++) {
        snprintf(v, sizeof v, "%d", i);
        int rc = telem_store_append(st, "m", t, 1, now, i, now);
        CHECK(rc == 0 || rc == TELEM_EFULL);
        ok += rc == 0;
        full += rc == TELEM_EFULL;
    }
    telem_store_stats_t s;
    telem_store_stats(st, &s);
    CHECK(full == 10 && ok > 10);
    CHECK(s.dropped == 10 && s.nseries == (uint64_t) ok);
    CHECK(s.mem_bytes <= cap && s.mem_cap_bytes == cap);
    /* Existing series still take points while their rings have room. */
    snprintf(v, sizeof v, "%d", 0);
    CHECK(telem_store_append(st, "m", t, 1, now, 1, now) == 0);
    /* Once every series is gone, memory is back and appends work. */
    telem_store_expire(st, now + 100 * SEC);
    telem_store_stats(st, &s);
    CHECK(s.nseries == 0 && s.mem_bytes == 0);
    snprintf(v, sizeof v, "%d", 99999);
    CHECK(telem_store_append(st, "m", t, 1, now + 100 * SEC, 1,
                             now + 100 * SEC) == 0);
    s_done(&st, NULL);

    /* One series growing its ring until the cap refuses a doubling. */
    st = s_store(1000 * SEC, cap, 0, 0);
    int rc = 0;
    int i;
    for (i = 0; i < 100000 && rc == 0; i++)
        rc = telem_store_append(st, "g", NULL, 0, now + i, i, now);
    CHECK(rc == TELEM_EFULL);
    telem_store_stats(st, &s);
    CHECK(s.npoints == (uint64_t) i - 1 && s.dropped == 1);
    CHECK(s.npoints >= 1024 && s.npoints < cap / 16);
    CHECK(s.mem_bytes <= cap);
    /* After most points expire the ring shrinks and takes points again. */
    telem_store_expire(st, now + 1000 * SEC + (int64_t) s.npoints - 10);
    CHECK(telem_store_append(st, "g", NULL, 0, now + 1000 * SEC + i, 1,
                             now + 1000 * SEC + i) == 0);
    s_done(&st, NULL);
}

static void
test_max_series(void)
{
    telem_store_t *st = s_store(0, 0, 3, 0);
    int64_t now = 100 * SEC;
    CHECK(telem_store_append(st, "a", NULL, 0, now, 1, now) == 0);
    CHECK(telem_store_append(st, "b", NULL, 0, now, 1, now) == 0);
    CHECK(telem_store_append(st, "c", NULL, 0, now, 1, now) == 0);
    CHECK(telem_store_append(st, "d", NULL, 0, now, 1, now) == TELEM_EFULL);
    CHECK(telem_store_append(st, "a", NULL, 0, now, 2, now) == 0);
    telem_store_stats_t s;
    telem_store_stats(st, &s);
    CHECK(s.nseries == 3 && s.dropped == 1 && s.npoints == 4);
    s_done(&st, NULL);
}

static void
test_eviction(void)
{
    telem_store_t *st = s_store(0, 0, 0, 10);
    int64_t now = 1000 * SEC;
    for (int i = 0; i < 25; i++)
        CHECK(telem_store_append(st, "m", NULL, 0, now - 100 + i, i, now) == 0);
    telem_store_stats_t s;
    telem_store_stats(st, &s);
    CHECK(s.npoints == 10 && s.evicted == 15 && s.dropped == 0);
    capture_t c = { 0 };
    telem_query_t q = { 0 };
    CHECK(s_query(st, &q, now, &c) == 0 && c.n == 1 && c.s[0].npoints == 10);
    for (uint32_t k = 0; k < c.s[0].npoints; k++)
        CHECK(c.s[0].values[k] == 15 + k && c.s[0].ts[k] == now - 85 + k);
    /* Older than everything in a full series: overwritten at once. */
    CHECK(telem_store_append(st, "m", NULL, 0, now - 100, -1, now) == 0);
    /* In the middle: the oldest goes, the new point is kept in order. */
    CHECK(telem_store_append(st, "m", NULL, 0, now - 80, -2, now) == 0);
    telem_store_stats(st, &s);
    CHECK(s.npoints == 10 && s.evicted == 17);
    CHECK(s_query(st, &q, now, &c) == 0 && c.s[0].npoints == 10);
    CHECK(c.s[0].ts[0] == now - 84 && c.s[0].ts[4] == now - 80);
    CHECK(c.s[0].values[4] == 20 && c.s[0].values[5] == -2);
    for (uint32_t k = 1; k < c.s[0].npoints; k++)
        CHECK(c.s[0].ts[k - 1] <= c.s[0].ts[k]);
    s_done(&st, &c);
}

/* Out-of-order and equal timestamps against a sorted-array model, with
 * expiry and eviction, so the ring wraps and shifts both ways. */
static int
s_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
    return (x > y) - (x < y);
}

static void
test_order_model(void)
{
    enum { MAXP = 200 };
    const int64_t window = 1000;
    telem_store_t *st = s_store(window, 0, 0, MAXP);
    int64_t model[MAXP + 1];
    uint32_t n = 0;
    uint64_t seed = 12345;
    int64_t now = 5000;
    capture_t c = { 0 };
    telem_query_t q = { 0 };
    int mismatches = 0;
    for (int step = 0; step < 20000; step++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t r = (uint32_t) (seed >> 33);
        now += r % 3;
        int64_t ts = r % 10 < 7 ? now : now - (int64_t) (r % 997);
        CHECK(telem_store_append(st, "m", NULL, 0, ts, (double) ts, now) == 0);
        /* The model: drop expired, keep the newest MAXP, sorted. */
        uint32_t keep = 0;
        for (uint32_t k = 0; k < n; k++)
            if (model[k] >= now - window)
                model[keep++] = model[k];
        n = keep;
        if (ts >= now - window) {
            model[n++] = ts;
            qsort(model, n, sizeof model[0], s_cmp_i64);
            if (n > MAXP)
                memmove(model, model + 1, --n * sizeof model[0]);
        }
        if (step % 7 == 0)
            telem_store_expire(st, now);
        if (s_query(st, &q, now, &c) != 0 || c.n != 1
            || c.s[0].npoints != n)
            mismatches++;
        else
            for (uint32_t k = 0; k < n; k++)
                if (c.s[0].ts[k] != model[k] || c.s[0].values[k] != model[k]) {
                    mismatches++;
                    break;
                }
    }
    CHECK(mismatches == 0);
    s_done(&st, &c);
}

static void
test_metas(void)
{
    telem_store_t *st = s_store(10 * SEC, 0, 0, 0);
    int64_t now = 100 * SEC;
    CHECK(telem_store_meta(st, "m") == NULL);
    telem_meta_t m = { "m", TELEM_METRIC_COUNTER, "bytes", "bytes sent" };
    CHECK(telem_store_describe(st, &m) == 0);
    const telem_meta_t *got = telem_store_meta(st, "m");
    CHECK(got && strcmp(got->metric, "m") == 0);
    CHECK(got && got->type == TELEM_METRIC_COUNTER);
    CHECK(got && strcmp(got->unit, "bytes") == 0);
    CHECK(got && strcmp(got->doc, "bytes sent") == 0);
    CHECK(telem_store_append(st, "m", NULL, 0, now, 1, now) == 0);
    CHECK(telem_store_append(st, "n", NULL, 0, now, 1, now) == 0);
    capture_t c = { 0 };
    telem_query_t q = { 0 };
    CHECK(s_query(st, &q, now, &c) == 0 && c.n == 2);
    const cap_series_t *sm = s_capture_find(&c, "m", "");
    CHECK(sm && sm->type == TELEM_METRIC_COUNTER);
    CHECK(sm && strcmp(sm->unit, "bytes") == 0);
    CHECK(sm && strcmp(sm->doc, "bytes sent") == 0);
    const cap_series_t *sn = s_capture_find(&c, "n", "");
    CHECK(sn && sn->type == TELEM_METRIC_GAUGE && sn->unit[0] == '\0');

    /* Replacing, and NULL unit/doc mean "". */
    telem_meta_t m2 = { "m", TELEM_METRIC_GAUGE, NULL, NULL };
    CHECK(telem_store_describe(st, &m2) == 0);
    got = telem_store_meta(st, "m");
    CHECK(got && got->type == TELEM_METRIC_GAUGE);
    CHECK(got && got->unit[0] == '\0' && got->doc[0] == '\0');
    /* A meta outlives its series; a series' metric entry does not. */
    telem_store_expire(st, now + 100 * SEC);
    telem_store_stats_t s;
    telem_store_stats(st, &s);
    CHECK(s.nseries == 0 && s.mem_bytes > 0);
    CHECK(telem_store_meta(st, "m") != NULL);
    CHECK(telem_store_meta(st, "n") == NULL);
    s_done(&st, &c);
}

static void
test_meta_limits(void)
{
    telem_store_t *st = s_store(0, 0, 0, 0);
    telem_meta_t bad = { "", TELEM_METRIC_GAUGE, "", "" };
    CHECK(telem_store_describe(st, &bad) == TELEM_EINVAL);
    bad.metric = NULL;
    CHECK(telem_store_describe(st, &bad) == TELEM_EINVAL);
    bad.metric = "x";
    bad.type = (telem_metric_type_t) 9;
    CHECK(telem_store_describe(st, &bad) == TELEM_EINVAL);
    CHECK(telem_store_describe(st, NULL) == TELEM_EINVAL);
    static char longdoc[TELEM_TEXT_MAX + 2];
    memset(longdoc, 'd', sizeof longdoc - 1);
    telem_meta_t m3 = { "x", TELEM_METRIC_GAUGE, "", longdoc };
    CHECK(telem_store_describe(st, &m3) == TELEM_EINVAL);
    longdoc[TELEM_TEXT_MAX] = '\0';
    CHECK(telem_store_describe(st, &m3) == 0);
    const telem_meta_t *got = telem_store_meta(st, "x");
    CHECK(got && strlen(got->doc) == TELEM_TEXT_MAX);
    telem_store_destroy(&st);

    /* Metas count against the memory cap. */
    st = s_store(0, 4096, 0, 0);
    CHECK(telem_store_describe(st, &m3) == TELEM_EFULL);
    telem_meta_t m = { "m", TELEM_METRIC_COUNTER, "bytes", "bytes sent" };
    CHECK(telem_store_describe(st, &m) == 0);
    telem_store_destroy(&st);
}

static void
test_invalid(void)
{
    telem_store_config_t cfg;
    telem_store_config_default(&cfg);
    cfg.window_ns = 0;
    CHECK(telem_store_new(&cfg) == NULL);
    telem_store_config_default(&cfg);
    cfg.mem_cap_bytes = 0;
    CHECK(telem_store_new(&cfg) == NULL);

    telem_store_t *st = s_store(0, 0, 0, 0);
    int64_t now = 100 * SEC;
    char longname[TELEM_NAME_MAX + 2];
    memset(longname, 'x', sizeof longname - 1);
    longname[TELEM_NAME_MAX + 1] = '\0';
    telem_tag_t many[TELEM_TAGS_MAX + 1];
    char keys[TELEM_TAGS_MAX + 1][16];
    for (int i = 0; i <= TELEM_TAGS_MAX; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        many[i].key = keys[i];
        many[i].value = "v";
    }
    telem_tag_t nullkey[] = { { NULL, "v" } };
    telem_tag_t emptykey[] = { { "", "v" } };
    telem_tag_t nullval[] = { { "k", NULL } };
    telem_tag_t longval[] = { { "k", longname } };
    int n = 0;
#define BAD(expr) do { CHECK((expr) == TELEM_EINVAL); n++; } while (0)
    BAD(telem_store_append(st, NULL, NULL, 0, now, 1, now));
    BAD(telem_store_append(st, "", NULL, 0, now, 1, now));
    BAD(telem_store_append(st, longname, NULL, 0, now, 1, now));
    BAD(telem_store_append(st, "m", many, TELEM_TAGS_MAX + 1, now, 1, now));
    BAD(telem_store_append(st, "m", NULL, 1, now, 1, now));
    BAD(telem_store_append(st, "m", nullkey, 1, now, 1, now));
    BAD(telem_store_append(st, "m", emptykey, 1, now, 1, now));
    BAD(telem_store_append(st, "m", nullval, 1, now, 1, now));
    BAD(telem_store_append(st, "m", longval, 1, now, 1, now));
#undef BAD
    telem_store_stats_t s;
    telem_store_stats(st, &s);
    CHECK(s.dropped == (uint64_t) n && s.nseries == 0 && s.appended == 0);
    /* The limits themselves are fine. */
    longname[TELEM_NAME_MAX] = '\0';
    longval[0].value = longname;
    CHECK(telem_store_append(st, longname, many, TELEM_TAGS_MAX, now, 1,
                             now) == 0);
    CHECK(telem_store_append(st, "m", longval, 1, now, 1, now) == 0);
    CHECK(telem_store_append(NULL, "m", NULL, 0, now, 1, now) == TELEM_EINVAL);
    telem_store_count_dropped(st, 5);
    telem_store_stats(st, &s);
    CHECK(s.dropped == (uint64_t) n + 5);
    s_done(&st, NULL);
}

static void
test_invalid_query(void)
{
    telem_store_t *st = s_store(0, 0, 0, 0);
    int64_t now = 100 * SEC;
    CHECK(telem_store_append(st, "m", NULL, 0, now, 1, now) == 0);
    capture_t c = { 0 };
    CHECK(telem_store_query(st, NULL, now, s_capture_fn, &c) == TELEM_EINVAL);
    telem_query_t q = { .nmetrics = 1 };
    CHECK(telem_store_query(st, &q, now, s_capture_fn, &c) == TELEM_EINVAL);
    telem_query_t q2 = { .nfilters = 1 };
    CHECK(telem_store_query(st, &q2, now, s_capture_fn, &c) == TELEM_EINVAL);
    telem_tag_t f[] = { { "", "x" } };
    telem_query_t q3 = { .filters = f, .nfilters = 1 };
    CHECK(telem_store_query(st, &q3, now, s_capture_fn, &c) == TELEM_EINVAL);
    const char *nullname[] = { NULL };
    telem_query_t q4 = { .metrics = nullname, .nmetrics = 1 };
    CHECK(telem_store_query(st, &q4, now, s_capture_fn, &c) == TELEM_EINVAL);
    telem_query_t q5 = { 0 };
    CHECK(telem_store_query(st, &q5, now, NULL, &c) == TELEM_EINVAL);
    CHECK(c.calls == 0);
    telem_store_destroy(&st);
}

/* A million appends over a thousand series: catches quadratic behaviour
 * (no timing assertion). */
static void
test_many(void)
{
    telem_store_t *st = telem_store_new(NULL);
    char v[16];
    telem_tag_t t[] = { { "host", "n1" }, { "id", v } };
    int64_t now = 1000 * SEC;
    int bad = 0;
    for (int i = 0; i < 1000000; i++) {
        snprintf(v, sizeof v, "%d", i % 1000);
        bad += telem_store_append(st, "load", t, 2, now + i, i, now + i) != 0;
    }
    CHECK(bad == 0);
    telem_store_stats_t s;
    telem_store_stats(st, &s);
    CHECK(s.nseries == 1000 && s.npoints == 1000000 && s.appended == 1000000);
    capture_t c = { 0 };
    telem_tag_t f[] = { { "id", "7" } };
    telem_query_t q = { .filters = f, .nfilters = 1, .end_ns = now + SEC };
    CHECK(s_query(st, &q, now + SEC, &c) == 0 && c.n == 1);
    CHECK(c.s[0].npoints == 1000 && c.s[0].values[999] == 999007);
    s_done(&st, &c);
}

int
main(void)
{
    test_basic();
    test_tags_canonical();
    test_filters();
    test_metric_lists();
    test_list();
    test_ranges();
    test_retention();
    test_series_freed();
    test_index_churn();
    test_mem_cap();
    test_max_series();
    test_eviction();
    test_order_model();
    test_metas();
    test_meta_limits();
    test_invalid();
    test_invalid_query();
    test_many();
    if (g_failures) {
        fprintf(stderr, "test_store: %d check(s) failed\n", g_failures);
        return 1;
    }
    printf("test_store: ok\n");
    return 0;
}
