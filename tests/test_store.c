/* test_store.c - unit tests for the in-memory time-series store: appends
 * and queries.
 *
 * Drives telem_store_* directly (no sockets): appends and queries, tag
 * canonicalisation, prepared tag sets (telem_store_append_tags) against
 * plain appends, filters, time ranges, metas, counters and invalid input.
 * Retention, caps, eviction and ordering are in test_store_retention.c.
 * No assertion depends on timing.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "store_test.h"

/* The store is a pure data structure: its headers name no wire type. */
#ifdef TELEM_PROTO_H
#error "telem_store.h pulls in the codec's header telem_proto.h"
#endif

/* --- tests ------------------------------------------------------------- */

static void
test_basic(void)
{
    int err = 1;
    telem_store_t *st = telem_store_new(NULL, &err);
    CHECK(st && err == 0);
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
    telem_store_query_t q = { 0 };
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
    telem_store_query_t q = { 0 };
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
    telem_store_query_t q = { .filters = f1, .nfilters = 1 };
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
    telem_store_query_t qm = { .metrics = names, .nmetrics = 5 };
    CHECK(s_query(st, &qm, now, &c) == 0 && c.n == 5);
    CHECK(s_capture_find(&c, "load", "host=b"));
    qm.filters = f1;
    qm.nfilters = 1;
    CHECK(s_query(st, &qm, now, &c) == 0 && c.n == 2);
    const char *none[] = { "nope" };
    telem_store_query_t qn = { .metrics = none, .nmetrics = 1 };
    CHECK(s_query(st, &qn, now, &c) == 0 && c.n == 0);

    /* The callback can stop the walk. */
    s_capture_reset(&c);
    c.stop_after = 2;
    telem_store_query_t qa = { 0 };
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
    telem_store_query_t q = { .metrics = m, .nmetrics = 1 };
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
    telem_store_query_t qo = { .metrics = o, .nmetrics = 1,
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
    telem_store_query_t ql = { .flags = TELEM_QUERY_LIST, .start_ns = now - 1,
                         .end_ns = now - 1 };
    CHECK(s_query(st, &ql, now, &c) == 0 && c.n == 2);
    CHECK(c.s[0].npoints == 0 && c.s[0].ts_null);
    CHECK(c.s[1].npoints == 0 && c.s[1].ts_null);
    /* "old" is outside the window 600 s later: not live. */
    CHECK(s_query(st, &ql, now + 600 * SEC, &c) == 0 && c.n == 1);
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
    telem_store_query_t q = { 0 };
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
    int err = 0;
    CHECK(telem_store_new(&cfg, &err) == NULL && err == TELEM_EINVAL);
    telem_store_config_default(&cfg);
    cfg.mem_cap_bytes = 0;
    err = 0;
    CHECK(telem_store_new(&cfg, &err) == NULL && err == TELEM_EINVAL);
    CHECK(telem_store_new(&cfg, NULL) == NULL);        /* err may be NULL */

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
    telem_store_query_t q = { .nmetrics = 1 };
    CHECK(telem_store_query(st, &q, now, s_capture_fn, &c) == TELEM_EINVAL);
    telem_store_query_t q2 = { .nfilters = 1 };
    CHECK(telem_store_query(st, &q2, now, s_capture_fn, &c) == TELEM_EINVAL);
    telem_tag_t f[] = { { "", "x" } };
    telem_store_query_t q3 = { .filters = f, .nfilters = 1 };
    CHECK(telem_store_query(st, &q3, now, s_capture_fn, &c) == TELEM_EINVAL);
    const char *nullname[] = { NULL };
    telem_store_query_t q4 = { .metrics = nullname, .nmetrics = 1 };
    CHECK(telem_store_query(st, &q4, now, s_capture_fn, &c) == TELEM_EINVAL);
    telem_store_query_t q5 = { 0 };
    CHECK(telem_store_query(st, &q5, now, NULL, &c) == TELEM_EINVAL);
    CHECK(c.calls == 0);
    telem_store_destroy(&st);
}

/* A million appends over a thousand series: catches quadratic behaviour
 * (no timing assertion). */
static void
test_many(void)
{
    telem_store_t *st = telem_store_new(NULL, NULL);
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
    telem_store_query_t q = { .filters = f, .nfilters = 1, .end_ns = now + SEC };
    CHECK(s_query(st, &q, now + SEC, &c) == 0 && c.n == 1);
    CHECK(c.s[0].npoints == 1000 && c.s[0].values[999] == 999007);
    s_done(&st, &c);
}

/* --- prepared tag sets ------------------------------------------------- */

/* Tags arriving unsorted, with repeated keys and empty values, prepared
 * once: the same series as plain appends of the same tags. */
static void
test_prepared_tags(void)
{
    telem_store_t *st = s_store(0, 0, 0, 0);
    telem_store_tags_t *set = telem_store_tags_new();
    CHECK(set);
    int64_t now = 1000 * SEC;
    char host[8] = "a";
    telem_tag_t t1[] = { { "rank", "3" }, { "host", host }, { "gpu", "0" },
                         { "rank", "3" } };
    CHECK(telem_store_tags_set(set, t1, 4) == 0);
    host[0] = 'z';          /* the set holds copies */
    CHECK(telem_store_append_tags(st, "m", set, now - 3, 1, now) == 0);
    CHECK(telem_store_append_tags(st, "m", set, now - 2, 2, now) == 0);
    telem_tag_t sorted[] = { { "gpu", "0" }, { "host", "a" },
                             { "rank", "3" } };
    CHECK(telem_store_append(st, "m", sorted, 3, now - 1, 3, now) == 0);
    /* The last of repeated keys wins, as in telem_store_append. */
    telem_tag_t t2[] = { { "x", "1" }, { "e", "" }, { "x", "2" } };
    CHECK(telem_store_tags_set(set, t2, 3) == 0);
    CHECK(telem_store_append_tags(st, "d", set, now, 4, now) == 0);
    /* A fresh set holds no tags. */
    telem_store_tags_t *empty = telem_store_tags_new();
    CHECK(telem_store_append_tags(st, "d", empty, now, 5, now) == 0);
    CHECK(telem_store_append(st, "d", NULL, 0, now, 6, now) == 0);

    capture_t c = { 0 };
    telem_store_query_t q = { 0 };
    CHECK(s_query(st, &q, now, &c) == 0 && c.n == 3);
    const cap_series_t *m = s_capture_find(&c, "m", "gpu=0,host=a,rank=3");
    CHECK(m && m->npoints == 3);
    if (m && m->npoints == 3)
        CHECK(m->values[0] == 1 && m->values[1] == 2 && m->values[2] == 3);
    const cap_series_t *d = s_capture_find(&c, "d", "e=,x=2");
    CHECK(d && d->npoints == 1 && d->values[0] == 4);
    d = s_capture_find(&c, "d", "");
    CHECK(d && d->npoints == 2 && d->values[0] == 5 && d->values[1] == 6);
    telem_store_tags_destroy(&empty);
    telem_store_tags_destroy(&set);
    CHECK(set == NULL);
    telem_store_tags_destroy(&set);
    telem_store_tags_destroy(NULL);
    s_done(&st, &c);
}

/* One metric with several tag sets, and several metrics with one set,
 * interleaved sample by sample: each point lands in its own series (the
 * store's last-series cache must not carry a point to the wrong one). */
static void
test_prepared_interleaved(void)
{
    telem_store_t *st = s_store(0, 0, 0, 0);
    telem_store_tags_t *a = telem_store_tags_new();
    telem_store_tags_t *b = telem_store_tags_new();
    telem_tag_t ta[] = { { "rank", "0" } };
    telem_tag_t tb[] = { { "rank", "1" } };
    CHECK(telem_store_tags_set(a, ta, 1) == 0);
    CHECK(telem_store_tags_set(b, tb, 1) == 0);
    int64_t now = 1000 * SEC;
    /* "ab" without tags and "a" with tag b=... have different keys. */
    const char *metrics[] = { "m", "m", "mm", "m", "ab", "a" };
    const telem_store_tags_t *sets[] = { a, b, a, a, a, b };
    for (int i = 0; i < 60; i++)
        CHECK(telem_store_append_tags(st, metrics[i % 6], sets[i % 6],
                                      now - 60 + i, i, now) == 0);
    telem_tag_t tab[] = { { "b", "" } };
    CHECK(telem_store_append(st, "a", tab, 1, now, -1, now) == 0);
    CHECK(telem_store_append(st, "ab", NULL, 0, now, -2, now) == 0);

    capture_t c = { 0 };
    telem_store_query_t q = { 0 };
    CHECK(s_query(st, &q, now, &c) == 0 && c.n == 7);
    const cap_series_t *s0 = s_capture_find(&c, "m", "rank=0");
    const cap_series_t *s1 = s_capture_find(&c, "m", "rank=1");
    const cap_series_t *s2 = s_capture_find(&c, "mm", "rank=0");
    CHECK(s0 && s0->npoints == 20 && s1 && s1->npoints == 10);
    CHECK(s2 && s2->npoints == 10);
    int wrong = 0;
    for (uint32_t k = 0; s0 && k < s0->npoints; k++) {
        int i = (int) s0->values[k];
        wrong += i % 6 != 0 && i % 6 != 3;
    }
    for (uint32_t k = 0; s1 && k < s1->npoints; k++)
        wrong += (int) s1->values[k] % 6 != 1;
    CHECK(wrong == 0);
    CHECK(s_capture_find(&c, "ab", "rank=0") && s_capture_find(&c, "ab", ""));
    CHECK(s_capture_find(&c, "a", "rank=1") && s_capture_find(&c, "a", "b="));
    telem_store_tags_destroy(&a);
    telem_store_tags_destroy(&b);
    s_done(&st, &c);
}

/* TELEM_TAGS_MAX + 1 tags k0..k16 = "v". */
static void
s_many_tags(telem_tag_t *many, char (*keys)[16])
{
    for (int i = 0; i <= TELEM_TAGS_MAX; i++) {
        snprintf(keys[i], 16, "k%d", i);
        many[i].key = keys[i];
        many[i].value = "v";
    }
}

/* A refused set refuses every append until it is set again. */
static void
test_prepared_invalid(void)
{
    telem_store_t *st = s_store(0, 0, 0, 0);
    telem_store_tags_t *set = telem_store_tags_new();
    int64_t now = 1000 * SEC;
    telem_tag_t many[TELEM_TAGS_MAX + 1];
    char keys[TELEM_TAGS_MAX + 1][16];
    s_many_tags(many, keys);
    telem_tag_t nullkey[] = { { NULL, "v" } };
    telem_tag_t emptykey[] = { { "", "v" } };
    telem_tag_t nullval[] = { { "k", NULL } };
    telem_tag_t ok[] = { { "k", "v" } };
    CHECK(telem_store_tags_set(NULL, ok, 1) == TELEM_EINVAL);
    int n = 0;
#define BAD_SET(tags, ntags)                                               \
    do {                                                                   \
        CHECK(telem_store_tags_set(set, tags, ntags) == TELEM_EINVAL);     \
        CHECK(telem_store_append_tags(st, "m", set, now, 1, now)           \
              == TELEM_EINVAL);                                            \
        CHECK(telem_store_append_tags(st, "m", set, now, 1, now)           \
              == TELEM_EINVAL);                                            \
        n += 2;                                                            \
    } while (0)
    BAD_SET(many, TELEM_TAGS_MAX + 1);
    BAD_SET(NULL, 1);
    BAD_SET(nullkey, 1);
    BAD_SET(emptykey, 1);
    BAD_SET(nullval, 1);
#undef BAD_SET
    CHECK(telem_store_append_tags(st, "m", NULL, now, 1, now) == TELEM_EINVAL);
    CHECK(telem_store_tags_set(set, ok, 1) == 0);
    CHECK(telem_store_append_tags(st, NULL, set, now, 1, now) == TELEM_EINVAL);
    CHECK(telem_store_append_tags(st, "", set, now, 1, now) == TELEM_EINVAL);
    CHECK(telem_store_append_tags(NULL, "m", set, now, 1, now)
          == TELEM_EINVAL);
    telem_store_stats_t s;
    telem_store_stats(st, &s);
    CHECK(s.dropped == (uint64_t) n + 3 && s.nseries == 0
          && s.appended == 0);
    telem_store_tags_destroy(&set);
    s_done(&st, NULL);
}

/* A set that was refused works once set again; TELEM_TAGS_MAX tags are
 * fine; a point late on arrival is dropped, not an error; the same through
 * telem_store_append_many(). */
static void
test_prepared_recovers(void)
{
    telem_store_t *st = s_store(0, 0, 0, 0);
    telem_store_tags_t *set = telem_store_tags_new();
    int64_t now = 1000 * SEC;
    telem_tag_t many[TELEM_TAGS_MAX + 1];
    char keys[TELEM_TAGS_MAX + 1][16];
    s_many_tags(many, keys);
    telem_store_point_t pts[] = { { "m", now, 1 }, { "", now, 2 },
                                  { "m", 0, 3 }, { "m", now, 4 } };
    CHECK(telem_store_tags_set(set, many, TELEM_TAGS_MAX + 1)
          == TELEM_EINVAL);
    CHECK(telem_store_append_tags(st, "m", set, now, 1, now) == TELEM_EINVAL);
    CHECK(telem_store_append_many(st, set, pts, 4, now) == TELEM_EINVAL);
    CHECK(telem_store_append_many(st, NULL, pts, 4, now) == TELEM_EINVAL);
    CHECK(telem_store_append_many(NULL, set, pts, 4, now) == TELEM_EINVAL);
    CHECK(telem_store_append_many(st, set, NULL, 1, now) == TELEM_EINVAL);
    CHECK(telem_store_append_many(st, set, NULL, 0, now) == 0);
    CHECK(telem_store_tags_set(set, many, TELEM_TAGS_MAX) == 0);
    CHECK(telem_store_append_tags(st, "m", set, now, 1, now) == 0);
    CHECK(telem_store_append_tags(st, "m", set, 0, 1, now) == 0);
    /* The error of the last refused point; late ones are not errors. */
    CHECK(telem_store_append_many(st, set, pts, 4, now) == TELEM_EINVAL);
    CHECK(telem_store_append_many(st, set, pts + 2, 2, now) == 0);
    telem_store_stats_t s;
    telem_store_stats(st, &s);
    CHECK(s.dropped == 13 && s.nseries == 1 && s.appended == 4);
    capture_t c = { 0 };
    telem_store_query_t q = { 0 };
    CHECK(s_query(st, &q, now, &c) == 0 && c.n == 1);
    CHECK(strncmp(c.s[0].tags, "k0=v,k1=v,k10=v,", 16) == 0);
    telem_store_tags_destroy(&set);
    s_done(&st, &c);
}

/* The same random stream into three stores: plain appends, prepared sets
 * (reused across samples, as telemd does per batch), and runs of points
 * with one set and one clock given to telem_store_append_many() (of up to
 * 40 points, so lookahead windows are crossed): same return codes,
 * counters, memory and contents.  The small window expires points on the
 * way, full series evict; with a memory cap, some series are refused. */
static const telem_tag_t s_m_t0[] = { { "host", "a" } };
static const telem_tag_t s_m_t1[] = { { "rank", "1" }, { "host", "a" } };
static const telem_tag_t s_m_t2[] = { { "host", "a" }, { "rank", "1" } };
static const telem_tag_t s_m_t3[] = { { "x", "1" }, { "x", "" } };
static const telem_tag_t s_m_t4[] = { { "", "bad" } };
static const struct {
    const telem_tag_t *tags;
    uint32_t n;
} s_m_lists[] = { { NULL, 0 }, { s_m_t0, 1 }, { s_m_t1, 2 }, { s_m_t2, 2 },
                  { s_m_t3, 2 }, { s_m_t4, 1 } };
#define S_M_LISTS (sizeof s_m_lists / sizeof s_m_lists[0])

static int
s_same_contents(telem_store_t *a, telem_store_t *b, int64_t now)
{
    static capture_t ca, cb;
    telem_store_query_t q = { 0 };
    int same = s_query(a, &q, now, &ca) == 0 && s_query(b, &q, now, &cb) == 0
               && ca.n == cb.n && ca.n < CAP_SERIES;
    for (int i = 0; same && i < ca.n; i++) {
        const cap_series_t *x = &ca.s[i];
        const cap_series_t *y = s_capture_find(&cb, x->metric, x->tags);
        same = y && y->npoints == x->npoints
               && memcmp(x->ts, y->ts, x->npoints * sizeof *x->ts) == 0
               && memcmp(x->values, y->values,
                         x->npoints * sizeof *x->values) == 0;
    }
    s_capture_reset(&ca);
    s_capture_reset(&cb);
    return same;
}

typedef struct {
    telem_store_t *st[3];          /* plain, prepared, many */
    telem_store_tags_t *sets[S_M_LISTS];
    telem_store_point_t run[40];
    uint32_t nrun;
    size_t run_list;
    int64_t run_now;
    int diff;
} s_model_t;

static void
s_model_flush(s_model_t *m)
{
    int rc = telem_store_append_many(m->st[2], m->sets[m->run_list], m->run,
                                     m->nrun, m->run_now);
    m->diff += m->nrun == 0 && rc != 0;
    m->nrun = 0;
}

static void
s_model_step(s_model_t *m, const char *metric, size_t l, int64_t ts,
             double v, int64_t now)
{
    int ra = telem_store_append(m->st[0], metric, s_m_lists[l].tags,
                                s_m_lists[l].n, ts, v, now);
    int rb = telem_store_append_tags(m->st[1], metric, m->sets[l], ts, v,
                                     now);
    m->diff += ra != rb;
    if (m->nrun == 40 || (m->nrun > 0 && (l != m->run_list
                                          || now != m->run_now)))
        s_model_flush(m);
    m->run_list = l;
    m->run_now = now;
    m->run[m->nrun++] = (telem_store_point_t) { metric, ts, v };
}

static void
s_model_run(size_t cap)
{
    s_model_t m = { .nrun = 0 };
    for (int k = 0; k < 3; k++)
        m.st[k] = s_store(24, cap, 0, 32);
    for (size_t i = 0; i < S_M_LISTS; i++) {
        m.sets[i] = telem_store_tags_new();
        telem_store_tags_set(m.sets[i], s_m_lists[i].tags, s_m_lists[i].n);
    }
    const char *metrics[] = { "cpu", "mem", "cpu.user", "", NULL };
    uint64_t seed = 99;
    int64_t now = 1000;
    size_t l = 0;
    for (int step = 0; step < 40000; step++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t r = (uint32_t) (seed >> 33);
        now += r % 64 == 0;
        l = r % 32 == 1 ? (r >> 7) % S_M_LISTS : l;
        s_model_step(&m, metrics[(r >> 3) % 5], l,
                     now - (int64_t) ((r >> 11) % 32), step, now);
        if (step % 97 == 0) {
            s_model_flush(&m);
            uint64_t e0 = telem_store_expire(m.st[0], now);
            m.diff += telem_store_expire(m.st[1], now) != e0
                      || telem_store_expire(m.st[2], now) != e0;
            m.diff += !s_same_contents(m.st[0], m.st[1], now)
                      || !s_same_contents(m.st[0], m.st[2], now);
        }
    }
    s_model_flush(&m);
    CHECK(m.diff == 0);
    telem_store_stats_t s[3];
    for (int k = 0; k < 3; k++)
        telem_store_stats(m.st[k], &s[k]);
    CHECK(memcmp(&s[0], &s[1], sizeof s[0]) == 0);
    CHECK(memcmp(&s[0], &s[2], sizeof s[0]) == 0);
    CHECK(s[0].appended > 0 && s[0].dropped > 0 && s[0].expired > 0);
    CHECK(s[0].evicted > 0);
    CHECK(cap == 0 || s[0].nseries < 12);  /* of 3 metrics x 4 tag sets */
    for (size_t i = 0; i < S_M_LISTS; i++)
        telem_store_tags_destroy(&m.sets[i]);
    for (int k = 0; k < 3; k++)
        s_done(&m.st[k], NULL);
}

static void
test_prepared_model(void)
{
    s_model_run(0);
    s_model_run(4096);
}

int
main(void)
{
    test_basic();
    test_tags_canonical();
    test_filters();
    test_metric_lists();
    test_ranges();
    test_list();
    test_metas();
    test_meta_limits();
    test_invalid();
    test_invalid_query();
    test_many();
    test_prepared_tags();
    test_prepared_interleaved();
    test_prepared_invalid();
    test_prepared_recovers();
    test_prepared_model();
    return check_report("test_store");
}
