/* test_store_counter.c - the store's counter series
 * (telem_store_counter_add()): the summing behind the push gateway.
 *
 * Checks: the total is the exact sum of the increments, from many
 * "processes" interleaved, each label set its own series, tags in any
 * order one series; the metric becomes a counter (an existing description
 * keeps its unit and doc); points stay in increment order whatever the
 * timestamps, and a late increment is never dropped; refused increments
 * (negative, NaN, infinite, bad names and tags) change nothing and are
 * counted; the counter-series cap and the series cap hold, a flood of
 * label sets leaves the store bounded and the existing counters working;
 * expiry keeps counters alive (their total appended again) and never
 * frees them, while plain series expire as before; a plain series that
 * becomes a counter starts its total at 0.
 */
#include <math.h>

#include "store_test.h"

static const telem_tag_t s_host[] = { { "host", "n1" } };

static int
s_add(telem_store_t *st, const char *m, const char *k, const char *v,
      int64_t ts, double d, int64_t now)
{
    telem_tag_t tags[2] = { { "host", "n1" }, { k, v } };
    return telem_store_counter_add(st, m, tags, k ? 2 : 1, ts, d, now);
}

/* The newest value of metric's series with tags "k=v,..." (NAN: none). */
static double
s_total(telem_store_t *st, const char *m, const char *tags, int64_t now,
        capture_t *c, uint32_t *npoints)
{
    const char *ms[] = { m };
    telem_store_query_t q = { .metrics = ms, .nmetrics = 1 };
    CHECK_RC(s_query(st, &q, now, c), 0);
    const cap_series_t *s = s_capture_find(c, m, tags);
    if (npoints)
        *npoints = s ? s->npoints : 0;
    return s && s->npoints ? s->values[s->npoints - 1] : NAN;
}

static void
s_test_sum(void)
{
    telem_store_t *st = s_store(0, 0, 0, 0);
    capture_t c = { 0 };
    int64_t now = 1000 * SEC;
    double want_r = 0, want_w = 0;
    for (int i = 0; i < 10000; i++) {
        /* 16 processes' increments interleaved; timestamps out of order */
        int64_t ts = now - (i % 16) * 1000;
        CHECK_RC(s_add(st, "hits_total", "scall", "read", ts, i % 7, now), 0);
        CHECK_RC(s_add(st, "hits_total", "scall", "write", ts, 0.5, now), 0);
        want_r += i % 7;
        want_w += 0.5;
    }
    uint32_t np;
    CHECK_EQ(s_total(st, "hits_total", "host=n1,scall=read", now, &c, &np),
             want_r);
    CHECK_INT(np, 10000);
    /* points never go back in time, nor down in value */
    const cap_series_t *s = s_capture_find(&c, "hits_total",
                                           "host=n1,scall=read");
    int ordered = 1;
    for (uint32_t i = 1; s && i < s->npoints; i++)
        ordered &= s->ts[i] >= s->ts[i - 1] && s->values[i] >= s->values[i - 1];
    CHECK(ordered);
    CHECK_EQ(s_total(st, "hits_total", "host=n1,scall=write", now, &c, NULL),
             want_w);
    /* tags in another order: the same series */
    telem_tag_t rev[2] = { { "scall", "read" }, { "host", "n1" } };
    CHECK_RC(telem_store_counter_add(st, "hits_total", rev, 2, now, 1, now),
             0);
    CHECK_EQ(s_total(st, "hits_total", "host=n1,scall=read", now, &c, NULL),
             want_r + 1);
    const telem_meta_t *m = telem_store_meta(st, "hits_total");
    CHECK(m && m->type == TELEM_METRIC_COUNTER && strcmp(m->doc, "") == 0);
    telem_store_stats_t ss;
    telem_store_stats(st, &ss);
    CHECK_INT(ss.ncounters, 2);
    CHECK_INT(ss.dropped, 0);
    s_done(&st, &c);
}

static void
s_test_meta_and_refusals(void)
{
    telem_store_t *st = s_store(0, 0, 0, 0);
    capture_t c = { 0 };
    int64_t now = 1000 * SEC;
    telem_meta_t desc = { "b_total", TELEM_METRIC_GAUGE, "bytes", "Bytes." };
    CHECK_RC(telem_store_describe(st, &desc), 0);
    CHECK_RC(s_add(st, "b_total", NULL, NULL, now, 10, now), 0);
    const telem_meta_t *m = telem_store_meta(st, "b_total");
    CHECK(m && m->type == TELEM_METRIC_COUNTER);
    CHECK(m && strcmp(m->unit, "bytes") == 0 && strcmp(m->doc, "Bytes.") == 0);
    CHECK_RC(s_add(st, "b_total", NULL, NULL, now, -1, now), TELEM_EINVAL);
    CHECK_RC(s_add(st, "b_total", NULL, NULL, now, NAN, now), TELEM_EINVAL);
    CHECK_RC(s_add(st, "b_total", NULL, NULL, now, INFINITY, now),
             TELEM_EINVAL);
    CHECK_RC(s_add(st, "", NULL, NULL, now, 1, now), TELEM_EINVAL);
    CHECK_RC(s_add(st, "b_total", "", "v", now, 1, now), TELEM_EINVAL);
    CHECK_RC(telem_store_counter_add(st, "b_total", NULL, 1, now, 1, now),
             TELEM_EINVAL);
    CHECK_RC(telem_store_counter_add(NULL, "b_total", s_host, 1, now, 1, now),
             TELEM_EINVAL);
    telem_store_stats_t ss;
    telem_store_stats(st, &ss);
    CHECK_INT(ss.dropped, 6);
    CHECK_EQ(s_total(st, "b_total", "host=n1", now, &c, NULL), 10);
    /* A plain series becomes a counter: its total starts at 0 there. */
    CHECK_RC(telem_store_append(st, "p", s_host, 1, now, 100, now), 0);
    CHECK_RC(telem_store_counter_add(st, "p", s_host, 1, now, 2, now), 0);
    CHECK_EQ(s_total(st, "p", "host=n1", now, &c, NULL), 2);
    s_done(&st, &c);
}

static void
s_test_time(void)
{
    int64_t win = 10 * SEC;
    telem_store_t *st = s_store(win, 0, 0, 0);
    capture_t c = { 0 };
    int64_t now = 1000 * SEC;
    CHECK_RC(s_add(st, "t_total", NULL, NULL, now, 1, now), 0);
    /* older than the newest point: stamped at the newest */
    CHECK_RC(s_add(st, "t_total", NULL, NULL, now - SEC, 1, now), 0);
    /* older than the window: counted anyway, stamped at the newest */
    CHECK_RC(s_add(st, "t_total", NULL, NULL, 1, 1, now + 5 * SEC), 0);
    uint32_t np;
    CHECK_EQ(s_total(st, "t_total", "host=n1", now + 5 * SEC, &c, &np), 3);
    CHECK_INT(np, 3);
    const cap_series_t *s = s_capture_find(&c, "t_total", "host=n1");
    CHECK(s && s->ts[1] == now && s->ts[2] == now);
    /* ... or at now, when that is also out of the window */
    CHECK_RC(s_add(st, "late_total", NULL, NULL, 1, 1, now), 0);
    CHECK_EQ(s_total(st, "late_total", "host=n1", now, &c, &np), 1);
    s = s_capture_find(&c, "late_total", "host=n1");
    CHECK(s && s->ts[0] == now);
    telem_store_stats_t ss;
    telem_store_stats(st, &ss);
    CHECK_INT(ss.dropped, 0);
    /* Silence: the total is appended again, the series never freed,
     * while a plain series of the same age goes. */
    CHECK_RC(telem_store_append(st, "plain", s_host, 1, now, 1, now), 0);
    int64_t t = now + 5 * SEC;
    for (int i = 0; i < 40; i++) {
        t += SEC;
        telem_store_expire(st, t);
        CHECK_EQ(s_total(st, "t_total", "host=n1", t, &c, &np), 3);
        CHECK(np >= 1);
    }
    CHECK(isnan(s_total(st, "plain", "host=n1", t, &c, NULL)));
    telem_store_stats(st, &ss);
    CHECK_INT(ss.nseries, 2);
    CHECK_INT(ss.ncounters, 2);
    /* listed, as every live series */
    telem_store_query_t q = { .flags = TELEM_QUERY_LIST };
    CHECK_RC(s_query(st, &q, t, &c), 0);
    CHECK_INT(c.n, 2);
    CHECK_RC(s_add(st, "t_total", NULL, NULL, t, 4, t), 0);
    CHECK_EQ(s_total(st, "t_total", "host=n1", t, &c, NULL), 7);
    s_done(&st, &c);
}

static void
s_test_caps(void)
{
    telem_store_config_t cfg;
    telem_store_config_default(&cfg);
    cfg.max_series = 50;
    cfg.max_counter_series = 20;
    telem_store_t *st = telem_store_new(&cfg, NULL);
    REQUIRE(st);
    capture_t c = { 0 };
    int64_t now = 1000 * SEC;
    CHECK_RC(s_add(st, "keep_total", NULL, NULL, now, 1, now), 0);
    int refused = 0;
    for (int i = 0; i < 10000; i++) {
        char v[16];
        snprintf(v, sizeof v, "%d", i);
        int rc = s_add(st, "flood_total", "id", v, now, 1, now);
        CHECK(rc == 0 || rc == TELEM_EFULL);
        refused += rc == TELEM_EFULL;
    }
    CHECK_INT(refused, 10000 - 19);
    telem_store_stats_t ss;
    telem_store_stats(st, &ss);
    CHECK_INT(ss.ncounters, 20);
    CHECK_INT(ss.nseries, 20);
    CHECK_INT(ss.dropped, refused);
    /* the existing counters go on, plain series still have room */
    CHECK_RC(s_add(st, "keep_total", NULL, NULL, now, 1, now), 0);
    CHECK_RC(s_add(st, "flood_total", "id", "3", now, 1, now), 0);
    CHECK_EQ(s_total(st, "keep_total", "host=n1", now, &c, NULL), 2);
    for (int i = 0; i < 30; i++) {
        char v[16];
        snprintf(v, sizeof v, "%d", i);
        telem_tag_t tg[2] = { { "host", "n1" }, { "g", v } };
        CHECK_RC(telem_store_append(st, "g", tg, 2, now, 1, now), 0);
    }
    /* the store's series cap covers counters too */
    CHECK_RC(telem_store_append(st, "g", s_host, 1, now, 1, now), TELEM_EFULL);
    cfg.max_counter_series = 100;
    telem_store_t *st2 = telem_store_new(&cfg, NULL);
    REQUIRE(st2);
    for (int i = 0; i < 60; i++) {
        char v[16];
        snprintf(v, sizeof v, "%d", i);
        int rc = s_add(st2, "f_total", "id", v, now, 1, now);
        CHECK_RC(rc, i < 50 ? 0 : TELEM_EFULL);
    }
    s_done(&st2, NULL);
    s_done(&st, &c);
}

int
main(void)
{
    s_test_sum();
    s_test_meta_and_refusals();
    s_test_time();
    s_test_caps();
    return check_report("test_store_counter");
}
