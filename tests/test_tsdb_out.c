/* test_tsdb_out.c - unit tests for analysis/tsdb's answer writer
 * (tsdb_out.h):
 *   - tsdb_fmt_double: the exact text of whole numbers, short decimals,
 *     negative zero, the edges of each form (1e15, 9e6, nine decimal
 *     places and ten), and for a million random doubles of every kind
 *     (random bits, values with 0..12 decimal places, times in whole ns)
 *     text that strtod reads back as the very same double and that has a
 *     '.' or an exponent;
 *   - tsdb_results_dump against tsdb_results_json of the same results:
 *     both forms of dps, NaN as "NaN" or null, infinities, equal keys (the
 *     caller's), empty dps, a head with strings to escape, and an empty
 *     answer; the text parses, and equals the tree exactly.
 */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "telem_error.h"
#include "tsdb_out.h"

static int
s_text_is(double v, const char *want)
{
    char buf[TSDB_FMT_DOUBLE_MAX];
    size_t n = tsdb_fmt_double(buf, v);
    int ok = strcmp(buf, want) == 0 && n == strlen(want);
    if (!ok)
        fprintf(stderr, "  %.17g written \"%s\" (%zu), expected \"%s\"\n", v,
                buf, n, want);
    return ok;
}

/* v written and read back: the same bits, and a real's syntax. */
static int
s_round_trips(double v)
{
    char buf[TSDB_FMT_DOUBLE_MAX];
    size_t n = tsdb_fmt_double(buf, v);
    char *end = NULL;
    double back = strtod(buf, &end);
    int ok = n > 0 && n < TSDB_FMT_DOUBLE_MAX && end == buf + n
             && memcmp(&back, &v, sizeof v) == 0 && strpbrk(buf, ".e");
    if (!ok)
        fprintf(stderr, "  %a written \"%s\", read back %a\n", v, buf, back);
    return ok;
}

static uint64_t
s_next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void
test_fmt_exact(void)
{
    CHECK(s_text_is(0.0, "0.0"));
    CHECK(s_text_is(-0.0, "-0.0"));
    CHECK(s_text_is(5.0, "5.0"));
    CHECK(s_text_is(-12345.0, "-12345.0"));
    CHECK(s_text_is(0.1, "0.1"));
    CHECK(s_text_is(37.25, "37.25"));
    CHECK(s_text_is(-0.5, "-0.5"));
    CHECK(s_text_is(0.001234567, "0.001234567"));
    CHECK(s_text_is(1e-9, "0.000000001"));
    CHECK(s_text_is(8999999.125, "8999999.125"));
    CHECK(s_round_trips(8999999.999999999));
    CHECK(s_text_is(999999999999999.0, "999999999999999.0"));
    /* Beyond each form: printf's %.17g, made a real. */
    CHECK(s_text_is(1e15, "1000000000000000.0"));
    CHECK(s_text_is(1e20, "1e+20"));
    CHECK(s_text_is(0.1 + 0.2, "0.30000000000000004"));
    CHECK(s_text_is(1e-10, "1e-10"));
    CHECK(s_text_is(9000000.5, "9000000.5"));
    CHECK(s_text_is(9000000.25, "9000000.25"));
}

static void
test_fmt_random(void)
{
    uint64_t x = 0x9e3779b97f4a7c15u;
    int bad = 0;
    for (int i = 0; i < 1000000 && bad < 10; i++) {
        uint64_t r = s_next(&x);
        double v;
        switch (i % 4) {
        case 0:                                /* any finite double */
            memcpy(&v, &r, sizeof v);
            if (!isfinite(v))
                continue;
            break;
        case 1: {                              /* 0..12 decimal places */
            int k = (int) (r % 13);
            v = (double) (int64_t) (s_next(&x) % 20000000000u - 10000000000)
                / pow(10, k);
            break;
        }
        case 2:                                /* a time in whole ns */
            v = (double) (r % 100000000000u) / 1e9;
            break;
        default:                               /* a fraction of a unit */
            v = (double) (r >> 11) * 0x1p-53 * 100.0;
            break;
        }
        if (!s_round_trips(v))
            bad++;
    }
    CHECK_INT(bad, 0);
}

static json_t *
s_head(const char *metric)
{
    return json_pack("{s:s, s:{s:s}, s:[s]}", "metric", metric, "tags",
                     "host", "n\"1\\", "aggregateTags", "gpu");
}

static int
s_add(tsdb_results_t *r, const char *metric, const int64_t *ts,
      const double *v, size_t n, int flags)
{
    json_t *head = s_head(metric);
    int64_t *t = malloc((n ? n : 1) * sizeof *t);
    double *d = malloc((n ? n : 1) * sizeof *d);
    if (n) {
        memcpy(t, ts, n * sizeof *t);
        memcpy(d, v, n * sizeof *d);
    }
    return tsdb_results_add(r, &head, &t, &d, n, flags);
}

/* The text parses and equals the tree. */
static int
s_text_matches_tree(const tsdb_results_t *r)
{
    size_t len = 0;
    char *text = tsdb_results_dump(r, &len);
    json_t *tree = tsdb_results_json(r);
    json_error_t je;
    json_t *parsed = text ? json_loadb(text, len, 0, &je) : NULL;
    int ok = text && tree && parsed && strlen(text) == len
             && json_equal(parsed, tree);
    if (!ok) {
        char *t = tree ? json_dumps(tree, JSON_COMPACT) : NULL;
        fprintf(stderr, "  text %s\n  tree %s\n", text ? text : "(null)",
                t ? t : "(null)");
        free(t);
    }
    free(text);
    json_decref(tree);
    json_decref(parsed);
    return ok;
}

static void
test_dump(void)
{
    tsdb_results_t *r = tsdb_results_new();
    CHECK(r);
    size_t len = 0;
    char *text = tsdb_results_dump(r, &len);
    CHECK(text && strcmp(text, "[]") == 0 && len == 2);
    free(text);
    CHECK(s_text_matches_tree(r));

    const int64_t ts[] = { 1700000000, 1700000001, 1700000002, 1700000003,
                           1700000004 };
    const double v[] = { 1.5, NAN, INFINITY, -INFINITY, 0.1 + 0.2 };
    CHECK_INT(s_add(r, "cpu", ts, v, 5, 0), 0);
    CHECK_INT(s_add(r, "cpu", ts, v, 5, TSDB_OUT_ARRAYS), 0);
    CHECK_INT(s_add(r, "cpu", ts, v, 5, TSDB_OUT_NAN_NULL), 0);
    CHECK_INT(s_add(r, "mem", ts, v, 0, 0), 0);
    CHECK_INT(s_add(r, "mem", ts, v, 0, TSDB_OUT_ARRAYS), 0);
    const int64_t neg[] = { -5, 0, 1700000000123 };
    CHECK_INT(s_add(r, "ms", neg, v, 3, TSDB_OUT_ARRAYS), 0);
    CHECK_INT(tsdb_results_count(r), 6);
    CHECK(s_text_matches_tree(r));

    text = tsdb_results_dump(r, &len);
    CHECK(text && strstr(text, "{\"metric\":\"cpu\",\"tags\":{\"host\":"
                               "\"n\\\"1\\\\\"},\"aggregateTags\":[\"gpu\"],"
                               "\"dps\":{\"1700000000\":1.5,"
                               "\"1700000001\":\"NaN\","
                               "\"1700000002\":\"Infinity\","
                               "\"1700000003\":\"-Infinity\","
                               "\"1700000004\":0.30000000000000004}}"));
    CHECK(text && strstr(text, "\"dps\":[[1700000000,1.5],"
                               "[1700000001,\"NaN\"]"));
    CHECK(text && strstr(text, "\"1700000001\":null"));
    CHECK(text && strstr(text, "\"dps\":{}}"));
    CHECK(text && strstr(text, "\"dps\":[]}"));
    CHECK(text && strstr(text, "[[-5,1.5],[0,\"NaN\"],[1700000000123,"));
    free(text);

    json_t *notes = json_pack("[{s:s}]", "description", "restart");
    CHECK_INT(tsdb_results_set(r, "globalAnnotations", notes), 0);
    json_decref(notes);
    CHECK(s_text_matches_tree(r));
    text = tsdb_results_dump(r, NULL);
    CHECK(text && strstr(text, "\"globalAnnotations\":[{\"description\":"
                               "\"restart\"}],\"dps\":"));
    free(text);
    tsdb_results_destroy(&r);
    CHECK(r == NULL);
    tsdb_results_destroy(&r);
    tsdb_results_destroy(NULL);
}

int
main(void)
{
    test_fmt_exact();
    test_fmt_random();
    test_dump();
    return check_report("test_tsdb_out");
}
