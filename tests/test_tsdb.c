/* test_tsdb.c - unit tests for OpenTSDB's times, durations and
 * downsampling (analysis/tsdb):
 *   - every time form: now, relative (each unit), seconds, milliseconds,
 *     fractional seconds, the four date forms (UTC), against values
 *     worked out by hand;
 *   - malformed times and durations (empty, signs, spaces, unknown units,
 *     zero amounts, impossible dates, too many digits, overflow) give
 *     TELEM_EINVAL and a sentence;
 *   - downsample specs: every function and fill policy, "all", and bad
 *     specs (missing parts, unknown names, calendar intervals);
 *   - aggregation across two misaligned series against values worked out
 *     by hand for every aggregator: linear interpolation inside a
 *     series' span, nothing outside it, zero for zimsum and count, only
 *     real points for mimmin and mimmax; NaN left out; "none" refused;
 *   - rates: per second from millisecond times, negative without
 *     `counter`, a counter's reset wrapped at counterMax, turned to 0
 *     above resetValue, or dropped with dropResets;
 *   - downsampling against hand-computed buckets: alignment on the
 *     interval, each function, each fill policy across gaps and at the
 *     ends of the range, "all", points outside the range skipped, and an
 *     output array too small.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "telem_error.h"
#include "tsdb_agg.h"
#include "tsdb_downsample.h"
#include "tsdb_rate.h"
#include "tsdb_time.h"

#define NOW INT64_C(1700000000000)   /* 2023-11-14T22:13:20Z */

static int64_t
s_time(const char *s, int *rc)
{
    int64_t ms = -1;
    char why[256] = "";
    *rc = tsdb_time_parse(s, NOW, &ms, why, sizeof why);
    if (*rc)
        CHECK(why[0] != 0);          /* a refusal always says why */
    return ms;
}

static void
test_times(void)
{
    int rc;
    CHECK(s_time("now", &rc) == NOW && rc == 0);
    CHECK(s_time("1h-ago", &rc) == NOW - 3600000 && rc == 0);
    CHECK(s_time("500ms-ago", &rc) == NOW - 500 && rc == 0);
    CHECK(s_time("30s-ago", &rc) == NOW - 30000 && rc == 0);
    CHECK(s_time("2m-ago", &rc) == NOW - 120000 && rc == 0);
    CHECK(s_time("1d-ago", &rc) == NOW - 86400000 && rc == 0);
    CHECK(s_time("1w-ago", &rc) == NOW - 7 * INT64_C(86400000) && rc == 0);
    CHECK(s_time("1n-ago", &rc) == NOW - 30 * INT64_C(86400000) && rc == 0);
    CHECK(s_time("1y-ago", &rc) == NOW - 365 * INT64_C(86400000) && rc == 0);
    CHECK(s_time("1364410924", &rc) == INT64_C(1364410924000) && rc == 0);
    CHECK(s_time("1364410924250", &rc) == INT64_C(1364410924250) && rc == 0);
    CHECK(s_time("1364410924.25", &rc) == INT64_C(1364410924250) && rc == 0);
    CHECK(s_time("1364410924.005", &rc) == INT64_C(1364410924005) && rc == 0);
    CHECK(s_time("0", &rc) == 0 && rc == 0);
    /* 2013-03-27 12:42:04 UTC is 1364388124 s. */
    CHECK(s_time("2013/03/27-12:42:04", &rc) == INT64_C(1364388124000)
          && rc == 0);
    CHECK(s_time("2013/03/27 12:42:04", &rc) == INT64_C(1364388124000)
          && rc == 0);
    CHECK(s_time("2013/03/27-12:42", &rc) == INT64_C(1364388120000)
          && rc == 0);
    CHECK(s_time("2013/03/27", &rc) == INT64_C(1364342400000) && rc == 0);
    CHECK(s_time("2012/02/29", &rc) == INT64_C(1330473600000) && rc == 0);

    static const char *const bad[] = {
        "", "ago", "-ago", "1-ago", "0s-ago", "1x-ago", "h-ago", "1h-ag",
        "1h", "-5", "+5", " 5", "5 ", "12345678901234", "1.2.3",
        "1364410924.2500", ".5", "5.", "1e9", "0x10", "2013/02/30",
        "2013/13/01", "2013/03/27-24:00", "2013/03/27T12:42", "2013/3/27",
        "2013/03/27-12:42:04Z", "1969/12/31", "2013/03/ 7",
        "99999999999999999999s-ago", "1000000000y-ago", "now ", "NOW",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        s_time(bad[i], &rc);
        if (rc != TELEM_EINVAL)
            fprintf(stderr, "accepted a bad time: '%s'\n", bad[i]);
        CHECK_INT(rc, TELEM_EINVAL);
    }
    /* A NULL why is allowed. */
    int64_t ms;
    CHECK_INT(tsdb_time_parse("bad", NOW, &ms, NULL, 0), TELEM_EINVAL);
    /* Times OpenTSDB's syntax allows past int64 ns: /api/query's range
     * in ns overflowed for end=9700000099 (fuzz_http under UBSan). */
    CHECK(s_time("9700000099", &rc) == INT64_C(9700000099000) && rc == 0);
    CHECK(tsdb_time_ns(INT64_C(9700000099000)) == INT64_MAX);
    CHECK(tsdb_time_ns(INT64_C(9223372036854)) == INT64_C(9223372036854000000));
    CHECK(tsdb_time_ns(INT64_C(-9300000000000)) == INT64_MIN);
    CHECK(tsdb_time_ns(INT64_C(1700000000123)) == INT64_C(1700000000123000000));
}

static void
test_durations(void)
{
    int64_t ms = 0;
    CHECK_RC(tsdb_time_duration("1m", 2, &ms, NULL, 0), 0);
    CHECK(ms == 60000);
    CHECK_RC(tsdb_time_duration("15s-avg", 3, &ms, NULL, 0), 0);
    CHECK(ms == 15000);
    CHECK_RC(tsdb_time_duration("250ms", 5, &ms, NULL, 0), 0);
    CHECK(ms == 250);
    static const char *const bad[] = { "", "m", "0m", "1", "1M", "1mm",
                                       "1 m", "-1m", "1.5m" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK_INT(tsdb_time_duration(bad[i], strlen(bad[i]), &ms, NULL, 0),
                  TELEM_EINVAL);
}

static void
test_specs(void)
{
    tsdb_downsample_t ds;
    char why[256];
    CHECK_RC(tsdb_downsample_parse("1m-avg", &ds, why, sizeof why), 0);
    CHECK(ds.interval_ms == 60000 && ds.fn == TSDB_DS_AVG
          && ds.fill == TSDB_FILL_NONE);
    CHECK_RC(tsdb_downsample_parse("30s-max-zero", &ds, why, sizeof why), 0);
    CHECK(ds.interval_ms == 30000 && ds.fn == TSDB_DS_MAX
          && ds.fill == TSDB_FILL_ZERO);
    CHECK_RC(tsdb_downsample_parse("all-sum", &ds, why, sizeof why), 0);
    CHECK(ds.interval_ms == 0 && ds.fn == TSDB_DS_SUM);
    CHECK_RC(tsdb_downsample_parse("0all-count-nan", &ds, why, sizeof why),
             0);
    CHECK(ds.interval_ms == 0 && ds.fn == TSDB_DS_COUNT
          && ds.fill == TSDB_FILL_NAN);
    CHECK_RC(tsdb_downsample_parse("1h-zimsum-null", &ds, why, sizeof why),
             0);
    CHECK(ds.fn == TSDB_DS_SUM && ds.fill == TSDB_FILL_NULL);
    CHECK_RC(tsdb_downsample_parse("10s-mimmin", &ds, why, sizeof why), 0);
    CHECK(ds.fn == TSDB_DS_MIN);
    CHECK_RC(tsdb_downsample_parse("10s-mimmax-none", &ds, why, sizeof why),
             0);
    CHECK(ds.fn == TSDB_DS_MAX && ds.fill == TSDB_FILL_NONE);

    static const char *const bad[] = {
        "", "1m", "avg", "1m-", "-avg", "1m-avg-", "1m-average",
        "1m-avg-zeros", "1m-avg-zero-x", "1x-avg", "0m-avg", "1dc-avg",
        "m-avg", "1m--avg",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        why[0] = 0;
        int rc = tsdb_downsample_parse(bad[i], &ds, why, sizeof why);
        if (rc != TELEM_EINVAL)
            fprintf(stderr, "accepted a bad spec: '%s'\n", bad[i]);
        CHECK_INT(rc, TELEM_EINVAL);
        CHECK(why[0] != 0);
    }
    tsdb_downsample_parse("1dc-avg", &ds, why, sizeof why);
    CHECK(strstr(why, "calendar") != NULL);
}

static tsdb_point_t s_out[64];

static long
s_run(const char *spec, const int64_t *ts, const double *v, size_t n,
      int64_t start, int64_t end)
{
    tsdb_downsample_t ds;
    REQUIRE(tsdb_downsample_parse(spec, &ds, NULL, 0) == 0);
    CHECK(tsdb_downsample_max_points(&ds, start, end) <= 64);
    return tsdb_downsample_run(&ds, ts, v, n, start, end, s_out, 64);
}

static void
test_run(void)
{
    /* Points at 0.5 s .. 5.5 s; buckets of 2 s aligned on 0, 2, 4. */
    const int64_t ts[] = { 500, 1500, 2500, 3500, 4500, 5500 };
    const double v[] = { 1, 3, 10, 20, 7, 9 };
    long k = s_run("2s-avg", ts, v, 6, 0, 6000);
    CHECK_INT(k, 3);
    CHECK(s_out[0].ts_ms == 0 && s_out[0].value == 2.0);
    CHECK(s_out[1].ts_ms == 2000 && s_out[1].value == 15.0);
    CHECK(s_out[2].ts_ms == 4000 && s_out[2].value == 8.0);
    k = s_run("2s-sum", ts, v, 6, 0, 6000);
    CHECK(k == 3 && s_out[1].value == 30.0);
    k = s_run("2s-min", ts, v, 6, 0, 6000);
    CHECK(k == 3 && s_out[2].value == 7.0);
    k = s_run("2s-max", ts, v, 6, 0, 6000);
    CHECK(k == 3 && s_out[0].value == 3.0);
    k = s_run("2s-count", ts, v, 6, 0, 6000);
    CHECK(k == 3 && s_out[0].value == 2.0);
    k = s_run("2s-first", ts, v, 6, 0, 6000);
    CHECK(k == 3 && s_out[1].value == 10.0);
    k = s_run("2s-last", ts, v, 6, 0, 6000);
    CHECK(k == 3 && s_out[1].value == 20.0);
    k = s_run("2s-dev", ts, v, 6, 0, 6000);   /* population: |a-b| / 2 */
    CHECK(k == 3 && fabs(s_out[1].value - 5.0) < 1e-12
          && fabs(s_out[0].value - 1.0) < 1e-12);
    k = s_run("all-sum", ts, v, 6, 100, 6000);
    CHECK(k == 1 && s_out[0].ts_ms == 100 && s_out[0].value == 50.0);
    /* Points outside the range are left out (500 and 5500). */
    k = s_run("all-count", ts, v, 6, 1000, 5000);
    CHECK(k == 1 && s_out[0].value == 4.0);

    /* A gap: points in buckets 0 and 6 s of 0..9 s, 1 s buckets. */
    const int64_t gts[] = { 200, 6300 };
    const double gv[] = { 4, 5 };
    k = s_run("1s-avg", gts, gv, 2, 0, 8999);
    CHECK(k == 2 && s_out[0].ts_ms == 0 && s_out[1].ts_ms == 6000);
    k = s_run("1s-avg-zero", gts, gv, 2, 0, 8999);
    CHECK_INT(k, 9);                       /* buckets 0 .. 8 s */
    int ok = 1;
    for (long i = 0; i < k; i++) {
        ok &= s_out[i].ts_ms == i * 1000 && !s_out[i].is_null;
        ok &= s_out[i].value == (i == 0 ? 4.0 : i == 6 ? 5.0 : 0.0);
    }
    CHECK(ok);
    k = s_run("1s-avg-nan", gts, gv, 2, 0, 8999);
    CHECK(k == 9 && isnan(s_out[3].value) && !s_out[3].is_null
          && s_out[6].value == 5.0 && isnan(s_out[8].value));
    k = s_run("1s-avg-null", gts, gv, 2, 0, 8999);
    CHECK(k == 9 && s_out[1].is_null && !s_out[0].is_null
          && s_out[8].is_null);
    /* The range starts inside a bucket: the fill starts at its start.
       The points outside the range are bucketed too (OpenTSDB's wider
       scan; the caller answers only the range), not filled around. */
    k = s_run("1s-sum-zero", gts, gv, 2, 1500, 3200);
    CHECK(k == 5 && s_out[0].ts_ms == 0 && s_out[0].value == 4.0
          && s_out[1].ts_ms == 1000 && s_out[3].ts_ms == 3000
          && s_out[3].value == 0.0 && s_out[4].ts_ms == 6000
          && s_out[4].value == 5.0);
    /* No points at all: only fills. */
    k = s_run("2s-avg-zero", gts, gv, 0, 0, 5999);
    CHECK(k == 3 && s_out[2].ts_ms == 4000 && s_out[2].value == 0.0);
    k = s_run("2s-avg", gts, gv, 0, 0, 5999);
    CHECK_INT(k, 0);

    /* Too small an output array: TELEM_ETOOBIG, never past its end. */
    tsdb_downsample_t ds;
    tsdb_downsample_parse("1s-avg-zero", &ds, NULL, 0);
    tsdb_point_t small[4];
    memset(small, 0, sizeof small);
    CHECK_INT(tsdb_downsample_run(&ds, gts, gv, 2, 0, 8999, small, 4),
              TELEM_ETOOBIG);
    CHECK(small[0].value == 4.0 && small[3].ts_ms == 3000);
}

static void
test_agg(void)
{
    /* A: 0@0 10@10 20@20; B: 100@5 200@15.  Output times 0 5 10 15 20. */
    const int64_t ta[] = { 0, 10, 20 }, tb[] = { 5, 15 };
    const double va[] = { 0, 10, 20 }, vb[] = { 100, 200 };
    const tsdb_series_in_t in[] = { { ta, va, 3 }, { tb, vb, 2 } };
    static const struct {
        const char *name;
        double want[5];
    } cases[] = {
        { "sum", { 0, 105, 160, 215, 20 } },
        { "zimsum", { 0, 100, 10, 200, 20 } },
        { "count", { 1, 2, 2, 2, 1 } },
        { "min", { 0, 5, 10, 15, 20 } },
        { "max", { 0, 100, 150, 200, 20 } },
        { "mimmin", { 0, 100, 10, 200, 20 } },
        { "mimmax", { 0, 100, 10, 200, 20 } },
        { "avg", { 0, 52.5, 80, 107.5, 20 } },
        { "dev", { 0, 47.5, 70, 92.5, 0 } },
    };
    tsdb_point_t out[8];
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        tsdb_agg_t agg;
        REQUIRE(tsdb_agg_parse(cases[c].name, &agg) == 0);
        long k = tsdb_agg_run(agg, in, 2, out, 8);
        CHECK_INT(k, 5);
        int ok = k == 5;
        for (long i = 0; ok && i < 5; i++)
            ok = out[i].ts_ms == i * 5
                 && fabs(out[i].value - cases[c].want[i]) < 1e-9;
        if (!ok)
            fprintf(stderr, "aggregator %s gave other values\n",
                    cases[c].name);
        CHECK(ok);
    }
    tsdb_agg_t agg;
    CHECK_RC(tsdb_agg_parse("none", &agg), 0);
    CHECK_INT(tsdb_agg_run(agg, in, 2, out, 8), TELEM_EINVAL);
    CHECK_INT(tsdb_agg_parse("average", &agg), TELEM_EINVAL);
    CHECK_INT(tsdb_agg_parse(NULL, &agg), TELEM_EINVAL);
    tsdb_agg_parse("sum", &agg);
    CHECK_INT(tsdb_agg_run(agg, in, 2, out, 2), TELEM_ETOOBIG);
    CHECK_INT(tsdb_agg_run(agg, in, 0, out, 8), 0);
    /* A NaN point is left out of the aggregate. */
    const int64_t tc[] = { 5 };
    const double vc[] = { NAN };
    const tsdb_series_in_t in3[] = { { ta, va, 3 }, { tb, vb, 2 },
                                     { tc, vc, 1 } };
    CHECK_INT(tsdb_agg_run(agg, in3, 3, out, 8), 5);
    CHECK(out[1].value == 105.0);
    int n = 0;
    while (tsdb_agg_names[n])
        n++;
    CHECK_INT(n, 10);
}

static void
test_rate(void)
{
    /* 0@0 10@1000 25@2500 5@3000 15@4000 (ms). */
    const int64_t ts[] = { 0, 1000, 2500, 3000, 4000, 4000 };
    const double v[] = { 0, 10, 25, 5, 15, 99 };
    int64_t ot[8];
    double ov[8];
    tsdb_rate_opts_t o = tsdb_rate_defaults();
    CHECK(o.counter == 0 && o.counter_max == TSDB_RATE_COUNTER_MAX);
    size_t k = tsdb_rate_run(&o, ts, v, 6, ot, ov);   /* 4000 twice: skip */
    CHECK_INT(k, 4);
    CHECK(ot[0] == 1000 && ov[0] == 10.0);
    CHECK(ot[1] == 2500 && ov[1] == 10.0);
    CHECK(ot[2] == 3000 && ov[2] == -40.0);
    CHECK(ot[3] == 4000 && ov[3] == 10.0);
    o.counter = 1;
    o.counter_max = 100;                /* wraps: (100 - 25 + 5) / 0.5 s */
    k = tsdb_rate_run(&o, ts, v, 6, ot, ov);
    CHECK(k == 4 && ov[2] == 160.0);
    o.reset_value = 100;                /* 160 > 100: a reset, rate 0 */
    k = tsdb_rate_run(&o, ts, v, 6, ot, ov);
    CHECK(k == 4 && ov[2] == 0.0 && ov[3] == 10.0);
    o.drop_resets = 1;                  /* the point at 3000 goes */
    k = tsdb_rate_run(&o, ts, v, 6, ot, ov);
    CHECK(k == 3 && ot[2] == 4000 && ov[2] == 10.0);
    CHECK_INT(tsdb_rate_run(&o, ts, v, 1, ot, ov), 0);
    CHECK_INT(tsdb_rate_run(&o, ts, v, 0, ot, ov), 0);
}

int
main(void)
{
    test_rate();
    test_agg();
    test_times();
    test_durations();
    test_specs();
    test_run();
    return check_report("test_tsdb");
}
