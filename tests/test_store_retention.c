/* test_store_retention.c - unit tests for how the store lets points and
 * series go: the retention window (late points, lazy and explicit expiry,
 * series freed after a whole empty window), the memory and series caps,
 * eviction in a full series, out-of-order points against a sorted-array
 * model, and the store's cache of the last series appended to, which must
 * never outlive the series it names.  No assertion depends on timing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "store_test.h"

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
    telem_store_query_t q = { 0 };
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
    telem_store_query_t q = { 0 };
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
    /* An existing series takes a point only while its open block's
     * buffers could still double within the cap (docs/store.md). */
    snprintf(v, sizeof v, "%d", 0);
    int rc0 = telem_store_append(st, "m", t, 1, now, 1, now);
    CHECK(rc0 == 0 || rc0 == TELEM_EFULL);
    /* Once every series is gone, memory is back and appends work. */
    telem_store_expire(st, now + 100 * SEC);
    telem_store_stats(st, &s);
    CHECK(s.nseries == 0 && s.mem_bytes == 0);
    snprintf(v, sizeof v, "%d", 99999);
    CHECK(telem_store_append(st, "m", t, 1, now + 100 * SEC, 1,
                             now + 100 * SEC) == 0);
    s_done(&st, NULL);

    /* One series growing its blocks until the cap refuses one.  Random
     * values: no codec compresses them below 8 bytes a point. */
    st = s_store(1000 * SEC, cap, 0, 0);
    int rc = 0;
    int i;
    uint64_t seed = 99;
    for (i = 0; i < 100000 && rc == 0; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        double x;
        uint64_t bits = seed ^ (seed >> 29);
        bits &= ~(UINT64_C(0x7ff) << 52);   /* finite: exponent < max */
        memcpy(&x, &bits, sizeof x);
        rc = telem_store_append(st, "g", NULL, 0, now + i, x, now);
    }
    CHECK(rc == TELEM_EFULL);
    telem_store_stats(st, &s);
    CHECK(s.npoints == (uint64_t) i - 1 && s.dropped == 1);
    CHECK(s.npoints >= 1024 && s.npoints < cap / 8);
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
    telem_store_query_t q = { 0 };
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
    /* Blocks longer than MAXP: every point lives in the open block, so
     * eviction takes exactly the oldest point (test_store_blocks.c has
     * the model with closed blocks). */
    telem_store_t *st = s_store_b(window, 0, 0, MAXP, 256);
    int64_t model[MAXP + 1];
    uint32_t n = 0;
    uint64_t seed = 12345;
    int64_t now = 5000;
    capture_t c = { 0 };
    telem_store_query_t q = { 0 };
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

/* The store remembers the series it appended to last.  That series freed
 * by expiry, a new one allocated (maybe at the same address) and the first
 * one's metric appended again: each point goes to its own live series
 * (under ASan a stale pointer would be a use after free). */
static void
test_hot_series_freed(void)
{
    telem_store_t *st = s_store(2 * SEC, 0, 0, 0);
    telem_store_tags_t *set = telem_store_tags_new();
    telem_tag_t t[] = { { "host", "a" } };
    CHECK(telem_store_tags_set(set, t, 1) == 0);
    telem_store_stats_t s;
    CHECK(telem_store_append_tags(st, "m", set, 100 * SEC, 1, 100 * SEC) == 0);
    /* Empty but not freed yet: appends still find it. */
    CHECK(telem_store_expire(st, 103 * SEC) == 1);
    CHECK(telem_store_append_tags(st, "m", set, 103 * SEC, 2, 103 * SEC) == 0);
    telem_store_stats(st, &s);
    CHECK(s.nseries == 1 && s.npoints == 1);
    /* Freed while it is the last series appended to. */
    CHECK(telem_store_expire(st, 107 * SEC + 1) == 1);
    telem_store_stats(st, &s);
    CHECK(s.nseries == 0 && s.mem_bytes == 0);
    CHECK(telem_store_append(st, "n", t, 1, 108 * SEC, 3, 108 * SEC) == 0);
    CHECK(telem_store_append_tags(st, "m", set, 108 * SEC, 4, 108 * SEC) == 0);
    CHECK(telem_store_append_tags(st, "m", set, 108 * SEC, 5, 108 * SEC) == 0);
    telem_store_stats(st, &s);
    CHECK(s.nseries == 2 && s.npoints == 3);
    capture_t c = { 0 };
    telem_store_query_t q = { 0 };
    CHECK(s_query(st, &q, 108 * SEC, &c) == 0 && c.n == 2);
    const cap_series_t *m = s_capture_find(&c, "m", "host=a");
    const cap_series_t *n = s_capture_find(&c, "n", "host=a");
    CHECK(m && m->npoints == 2 && m->values[0] == 4 && m->values[1] == 5);
    CHECK(n && n->npoints == 1 && n->values[0] == 3);
    /* Another series freed leaves the remembered one alone. */
    CHECK(telem_store_append_tags(st, "m", set, 111 * SEC, 6, 111 * SEC) == 0);
    CHECK(telem_store_expire(st, 112 * SEC + 1) == 1);   /* n's point */
    telem_store_stats(st, &s);
    CHECK(s.nseries == 1 && s.npoints == 1);
    CHECK(telem_store_append_tags(st, "m", set, 112 * SEC, 7, 112 * SEC) == 0);
    telem_store_stats(st, &s);
    CHECK(s.nseries == 1 && s.npoints == 2);
    telem_store_tags_destroy(&set);
    s_done(&st, &c);
}

/* Appends refused by the caps never leave a series remembered that does
 * not exist; evictions in a full remembered series are counted as usual. */
static void
test_hot_series_caps(void)
{
    telem_store_t *st = s_store(0, 0, 2, 4);
    int64_t now = 1000 * SEC;
    CHECK(telem_store_append(st, "a", NULL, 0, now, 1, now) == 0);
    CHECK(telem_store_append(st, "b", NULL, 0, now, 2, now) == 0);
    CHECK(telem_store_append(st, "c", NULL, 0, now, 3, now) == TELEM_EFULL);
    CHECK(telem_store_append(st, "c", NULL, 0, now, 3, now) == TELEM_EFULL);
    for (int i = 0; i < 10; i++)
        CHECK(telem_store_append(st, i % 3 ? "a" : "b", NULL, 0, now + i, i,
                                 now) == 0);
    telem_store_stats_t s;
    telem_store_stats(st, &s);
    CHECK(s.nseries == 2 && s.dropped == 2 && s.npoints == 8);
    CHECK(s.appended == 12 && s.evicted == 4);
    capture_t c = { 0 };
    const char *names[] = { "a" };
    telem_store_query_t q = { .metrics = names, .nmetrics = 1, .end_ns = now + 10 };
    CHECK(s_query(st, &q, now, &c) == 0 && c.n == 1);
    CHECK(c.s[0].npoints == 4 && c.s[0].values[0] == 4
          && c.s[0].values[3] == 8);
    s_done(&st, &c);
}

int
main(void)
{
    test_retention();
    test_series_freed();
    test_index_churn();
    test_mem_cap();
    test_max_series();
    test_eviction();
    test_order_model();
    test_hot_series_freed();
    test_hot_series_caps();
    return check_report("test_store_retention");
}
