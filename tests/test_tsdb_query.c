/* test_tsdb_query.c - unit tests for OpenTSDB's /api/query in
 * analysis/tsdb: tag filters and the executor, against golden JSON worked
 * out by hand from OpenTSDB 2.4's rules (request parsing, GET m= and the
 * executor's limits are test_tsdb_query_args.c's; the series both run
 * over are tests/tsdb_query_fixture.h's):
 *   - every filter type on its own (which series match, case folding,
 *     OpenTSDB's wildcard quirks, a missing tag key never matching),
 *     groupBy and the older "tags" form ("*", "a|b");
 *   - each aggregator across two misaligned series (linear
 *     interpolation inside a span, zero for zimsum/count, only real
 *     points for mimmin/mimmax), "none" giving each series alone;
 *   - downsampling with each fill policy (none, nan as "NaN", null as
 *     null, zero), a first bucket before the start dropped, downsample
 *     before rate;
 *   - OpenTSDB's scan of the hours around the range: a rate's first
 *     point, interpolation at the start and the bucket holding the end
 *     use points outside the range, which the answer leaves out;
 *   - rates of a counter with resets: plain, counterMax, resetValue,
 *     dropResets, in JSON and in m= syntax;
 *   - arrays, msResolution on and off (several points in one second:
 *     the last one in the object form, every one in arrays), ns times
 *     truncated to ms, a relative start with a fixed now, showQuery's
 *     echo, tags and aggregateTags, explicitTags, empty results;
 */
#include "tsdb_query_fixture.h"

#define Q_CPU(filter) "{\"start\":\"1699999200\",\"end\":\"1699999260\"," \
    "\"queries\":[{\"metric\":\"cpu\",\"aggregator\":\"none\","        \
    "\"filters\":[" filter "]}]}"
#define F(type, tagk, f) "{\"type\":\"" type "\",\"tagk\":\"" tagk     \
    "\",\"filter\":\"" f "\",\"groupBy\":false}"

static void
test_filter_types(void)
{
    static const struct {
        const char *filter, *hosts;
    } cases[] = {
        /* "none" orders series by their tags: gpu=0 (Web03.net, web01),
           gpu=1 (web02), then db01 without gpu. */
        { "", "Web03.net,web01,web02,db01" },
        { F("literal_or", "host", "web01|web02"), "web01,web02" },
        { F("literal_or", "host", "WEB01"), "" },
        { F("iliteral_or", "host", "WEB01|web03.NET"), "Web03.net,web01" },
        { F("not_literal_or", "host", "web01"), "Web03.net,web02,db01" },
        { F("not_iliteral_or", "host", "WEB01|DB01"), "Web03.net,web02" },
        { F("wildcard", "host", "web*"), "web01,web02" },
        { F("iwildcard", "host", "web*"), "Web03.net,web01,web02" },
        { F("wildcard", "host", "*.net"), "Web03.net" },
        { F("wildcard", "host", "*"), "Web03.net,web01,web02,db01" },
        { F("regexp", "host", "^web0[12]$"), "web01,web02" },
        { F("regexp", "host", "0[13]"), "Web03.net,web01,db01" },
        /* A series without the key never matches, even not_literal_or. */
        { F("not_literal_or", "gpu", "1"), "Web03.net,web01" },
        { F("wildcard", "gpu", "*"), "Web03.net,web01,web02" },
        /* Every filter must match. */
        { F("wildcard", "host", "web*") "," F("literal_or", "gpu", "1"),
          "web02" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char body[1024], got[256];
        snprintf(body, sizeof body, Q_CPU("%s"), cases[i].filter);
        s_hosts_of(body, got, sizeof got);
        if (strcmp(got, cases[i].hosts) != 0)
            fprintf(stderr, "filter %s\n", cases[i].filter);
        CHECK_STR(got, cases[i].hosts);
    }
}

static void
test_filter_direct(void)
{
    tsdb_error_t e;
    tsdb_filter_t *f = tsdb_filter_new("wildcard", "host", "web*net", 0, &e);
    REQUIRE(f);
    /* OpenTSDB's quirk: neither end is checked when '*' is inside only,
       and parts are looked for from the sum of earlier parts' lengths. */
    CHECK(tsdb_filter_match(f, "webXnet"));
    CHECK(tsdb_filter_match(f, "xwebnetx"));
    CHECK(tsdb_filter_match(f, "netweb") == 0);
    CHECK(tsdb_filter_match(f, NULL) == 0);
    CHECK_STR(tsdb_filter_type_name(f), "wildcard");
    CHECK_STR(tsdb_filter_tagk(f), "host");
    CHECK_INT(tsdb_filter_type(f), TSDB_FILTER_WILDCARD);
    tsdb_filter_destroy(&f);
    CHECK(f == NULL);
    tsdb_filter_destroy(&f);
    f = tsdb_filter_new("wildcard", "host", "*01", 1, &e);
    CHECK(tsdb_filter_match(f, "web01") && !tsdb_filter_match(f, "web011"));
    CHECK(tsdb_filter_group_by(f) == 1);
    tsdb_filter_destroy(&f);
    f = tsdb_filter_new("not_literal_or", "host", "a|b", 0, &e);
    CHECK(tsdb_filter_match(f, "c") && !tsdb_filter_match(f, "a")
          && !tsdb_filter_match(f, NULL));
    const char *names[4];
    CHECK_INT(tsdb_filter_literals(f, names, 4), -1);
    tsdb_filter_destroy(&f);
    f = tsdb_filter_new("literal_or", "host", "a|b|a|", 0, &e);
    CHECK_INT(tsdb_filter_literals(f, names, 4), 2);
    CHECK_STR(names[0], "a");
    CHECK_STR(names[1], "b");
    tsdb_filter_destroy(&f);
    /* The older tags form. */
    f = tsdb_filter_from_tag("host", "WEB*", 1, &e);
    CHECK(f && tsdb_filter_match(f, "web1")); /* case-insensitive shortcut */
    CHECK_STR(tsdb_filter_type_name(f), "wildcard");
    tsdb_filter_destroy(&f);
    f = tsdb_filter_from_tag("host", "Regexp(^a)", 0, &e);
    CHECK(f && tsdb_filter_type(f) == TSDB_FILTER_REGEXP
          && tsdb_filter_match(f, "ab") && !tsdb_filter_match(f, "ba"));
    tsdb_filter_destroy(&f);

    static const char *const bad[][3] = {
        { "nope", "host", "a" },   { "literal_or", "", "a" },
        { "literal_or", "host", "" }, { "literal_or", "host", "|" },
        { "wildcard", "host", "web" }, { "regexp", "host", "(a" },
        { "regexp", "host", "a{1" }, { "", "host", "a" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        e = (tsdb_error_t) { 0 };
        f = tsdb_filter_new(bad[i][0], bad[i][1], bad[i][2], 0, &e);
        CHECK(f == NULL && e.status == 400 && e.message[0]);
        tsdb_filter_destroy(&f);
    }
    f = tsdb_filter_from_tag("host", "literal_or(a", 0, &e);
    CHECK(f == NULL && strstr(e.message, "')'"));
    f = tsdb_filter_from_tag("host", "bogus(a)", 0, &e);
    CHECK(f == NULL && strstr(e.message, "type: bogus"));

    json_t *c = tsdb_filter_config_json();
    CHECK_INT(json_object_size(c), 7);
    static const char *const types[] = {
        "literal_or", "iliteral_or", "not_literal_or", "not_iliteral_or",
        "wildcard", "iwildcard", "regexp" };
    for (size_t i = 0; i < 7; i++) {
        json_t *t = json_object_get(c, types[i]);
        CHECK(json_is_string(json_object_get(t, "examples"))
              && json_is_string(json_object_get(t, "description")));
    }
    CHECK(strncmp(json_string_value(json_object_get(
              json_object_get(c, "literal_or"), "description")),
              "Accepts one or more exact values", 32) == 0);
    json_decref(c);
}

#define Q(sub) "{\"start\":\"1699999200\",\"end\":\"1699999260\"," \
    "\"queries\":[" sub "]}"

static void
test_group_by(void)
{
    /* gpu=0: web01 (0:1 10:2 20:3) + Web03.net (0:100, ends at 0). */
    static const char *const want =
        "[{\"metric\":\"cpu\",\"tags\":{\"gpu\":\"0\"},"
        "\"aggregateTags\":[\"host\"],\"dps\":{\"1699999200\":101.0,"
        "\"1699999210\":2.0,\"1699999220\":3.0}},"
        "{\"metric\":\"cpu\",\"tags\":{\"gpu\":\"1\",\"host\":\"web02\"},"
        "\"aggregateTags\":[],\"dps\":{\"1699999205\":10.0,"
        "\"1699999215\":20.0}}]";
    GOLDEN(Q("{\"metric\":\"cpu\",\"aggregator\":\"sum\",\"filters\":"
             "[{\"type\":\"wildcard\",\"tagk\":\"gpu\",\"filter\":\"*\","
             "\"groupBy\":true}]}"), want);
    /* The older form: "*" groups the same way. */
    GOLDEN(Q("{\"metric\":\"cpu\",\"aggregator\":\"sum\","
             "\"tags\":{\"gpu\":\"*\"}}"), want);
    /* "a|b" is a grouped literal_or. */
    GOLDEN(Q("{\"metric\":\"cpu\",\"aggregator\":\"sum\","
             "\"tags\":{\"host\":\"web01|web02\"}}"),
           "[{\"metric\":\"cpu\",\"tags\":{\"gpu\":\"0\",\"host\":\"web01\"},"
           "\"aggregateTags\":[],\"dps\":{\"1699999200\":1.0,"
           "\"1699999210\":2.0,\"1699999220\":3.0}},"
           "{\"metric\":\"cpu\",\"tags\":{\"gpu\":\"1\",\"host\":\"web02\"},"
           "\"aggregateTags\":[],\"dps\":{\"1699999205\":10.0,"
           "\"1699999215\":20.0}}]");
    /* No group-by: one group of all four cpu series (mem is skipped).
       0: 1+100+1000; 5: 1.5+10; 10: 2+15; 15: 2.5+20; 20: 3. */
    GOLDEN(Q("{\"metric\":\"cpu\",\"aggregator\":\"sum\"}"),
           "[{\"metric\":\"cpu\",\"tags\":{},"
           "\"aggregateTags\":[\"gpu\",\"host\"],\"dps\":{"
           "\"1699999200\":1101.0,\"1699999205\":11.5,\"1699999210\":17.0,"
           "\"1699999215\":22.5,\"1699999220\":3.0}}]");
    /* A key only some series carry, agreed by them, stays a tag. */
    GOLDEN(Q("{\"metric\":\"cpu\",\"aggregator\":\"max\",\"filters\":["
             F("literal_or", "host", "web02|db01") "]}"),
           "[{\"metric\":\"cpu\",\"tags\":{\"gpu\":\"1\"},"
           "\"aggregateTags\":[\"host\"],\"dps\":{\"1699999200\":1000.0,"
           "\"1699999205\":10.0,\"1699999215\":20.0}}]");
    /* explicitTags: only series with exactly the filtered keys. */
    GOLDEN(Q("{\"metric\":\"cpu\",\"aggregator\":\"sum\",\"explicitTags\":"
             "true,\"filters\":[" F("wildcard", "host", "*") "]}"),
           "[{\"metric\":\"cpu\",\"tags\":{\"host\":\"db01\"},"
           "\"aggregateTags\":[],\"dps\":{\"1699999200\":1000.0}}]");
    /* Nothing in the scanned hours: no result at all. */
    GOLDEN("{\"start\":\"1700002900\",\"end\":\"1700003000\",\"queries\":"
           "[{\"metric\":\"cpu\",\"aggregator\":\"sum\"}]}", "[]");
    /* Nothing in range but points in its hour, which OpenTSDB scans: a
       result with empty dps, as OpenTSDB answers (its issue 672). */
    GOLDEN("{\"start\":\"1699999300\",\"end\":\"1699999400\",\"queries\":"
           "[{\"metric\":\"cpu\",\"aggregator\":\"sum\"}]}",
           "[{\"metric\":\"cpu\",\"tags\":{},\"aggregateTags\":[\"gpu\","
           "\"host\"],\"dps\":{}}]");
    /* In range but no rate: a result with empty dps. */
    GOLDEN(Q("{\"metric\":\"cpu\",\"aggregator\":\"sum\",\"rate\":true,"
             "\"filters\":[" F("literal_or", "host", "db01") "]}"),
           "[{\"metric\":\"cpu\",\"tags\":{\"host\":\"db01\"},"
           "\"aggregateTags\":[],\"dps\":{}}]");
    /* "filters" and "tags": the later one wins, as in OpenTSDB. */
    GOLDEN(Q("{\"metric\":\"cpu\",\"aggregator\":\"sum\",\"filters\":["
             F("literal_or", "host", "nothing") "],\"tags\":"
             "{\"host\":\"db01\"}}"),
           "[{\"metric\":\"cpu\",\"tags\":{\"host\":\"db01\"},"
           "\"aggregateTags\":[],\"dps\":{\"1699999200\":1000.0}}]");
}

static void
test_aggregators(void)
{
    /* web01 0:1 10:2 20:3 and web02 5:10 15:20.  Interpolated: web01 at 5
       is 1.5, at 15 2.5; web02 at 10 is 15; web02 is outside its span at
       0 and 20. */
    static const struct {
        const char *agg;
        double v[5];           /* at 0, 5, 10, 15, 20 */
    } cases[] = {
        { "sum", { 1, 11.5, 17, 22.5, 3 } },
        { "min", { 1, 1.5, 2, 2.5, 3 } },
        { "max", { 1, 10, 15, 20, 3 } },
        { "avg", { 1, 5.75, 8.5, 11.25, 3 } },
        { "dev", { 0, 4.25, 6.5, 8.75, 0 } },
        { "count", { 1, 2, 2, 2, 1 } },
        { "zimsum", { 1, 10, 2, 20, 3 } },
        { "mimmin", { 1, 10, 2, 20, 3 } },
        { "mimmax", { 1, 10, 2, 20, 3 } },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char body[512], want[512], dps[256] = "";
        snprintf(body, sizeof body, Q("{\"metric\":\"cpu\",\"aggregator\":"
                 "\"%s\",\"filters\":[" F("literal_or", "host", "web01|web02")
                 "]}"), cases[i].agg);
        for (int k = 0; k < 5; k++) {   /* reals: 2.0, not 2 */
            double v = cases[i].v[k];
            snprintf(dps + strlen(dps), sizeof dps - strlen(dps),
                     v == (double) (long long) v ? "%s\"%lld\":%.1f"
                                                 : "%s\"%lld\":%.17g",
                     k ? "," : "", (long long) (B + 5 * k), v);
        }
        snprintf(want, sizeof want, "[{\"metric\":\"cpu\",\"tags\":{},"
                 "\"aggregateTags\":[\"gpu\",\"host\"],\"dps\":{%s}}]", dps);
        if (!s_golden(body, 0, want, __LINE__)) {
            fprintf(stderr, "aggregator %s\n", cases[i].agg);
            CHECK(0);
        }
    }
    /* "none": each series alone, with its own tags. */
    GOLDEN(Q("{\"metric\":\"cpu\",\"aggregator\":\"none\",\"filters\":["
             F("literal_or", "host", "web01|web02") "]}"),
           "[{\"metric\":\"cpu\",\"tags\":{\"gpu\":\"0\",\"host\":\"web01\"},"
           "\"aggregateTags\":[],\"dps\":{\"1699999200\":1.0,"
           "\"1699999210\":2.0,\"1699999220\":3.0}},"
           "{\"metric\":\"cpu\",\"tags\":{\"gpu\":\"1\",\"host\":\"web02\"},"
           "\"aggregateTags\":[],\"dps\":{\"1699999205\":10.0,"
           "\"1699999215\":20.0}}]");
}

#define Q_WEB02(ds, start) "{\"start\":\"" start "\",\"end\":\"1699999240\"," \
    "\"queries\":[{\"metric\":\"cpu\",\"aggregator\":\"sum\",\"downsample\":" \
    "\"" ds "\",\"filters\":[" F("literal_or", "host", "web02") "]}]}"
#define WEB02 "{\"metric\":\"cpu\",\"tags\":{\"gpu\":\"1\",\"host\":\"web02\"}," \
    "\"aggregateTags\":[],\"dps\":"

static void
test_downsample(void)
{
    /* web02 5:10 15:20 in 10 s buckets over [0, 40]. */
    GOLDEN(Q_WEB02("10s-sum", "1699999200"),
           "[" WEB02 "{\"1699999200\":10.0,\"1699999210\":20.0}}]");
    GOLDEN(Q_WEB02("10s-sum-none", "1699999200"),
           "[" WEB02 "{\"1699999200\":10.0,\"1699999210\":20.0}}]");
    GOLDEN(Q_WEB02("10s-sum-nan", "1699999200"),
           "[" WEB02 "{\"1699999200\":10.0,\"1699999210\":20.0,"
           "\"1699999220\":\"NaN\",\"1699999230\":\"NaN\","
           "\"1699999240\":\"NaN\"}}]");
    GOLDEN(Q_WEB02("10s-sum-null", "1699999200"),
           "[" WEB02 "{\"1699999200\":10.0,\"1699999210\":20.0,"
           "\"1699999220\":null,\"1699999230\":null,\"1699999240\":null}}]");
    GOLDEN(Q_WEB02("10s-avg-zero", "1699999200"),
           "[" WEB02 "{\"1699999200\":10.0,\"1699999210\":20.0,"
           "\"1699999220\":0.0,\"1699999230\":0.0,\"1699999240\":0.0}}]");
    GOLDEN_ARRAYS(Q_WEB02("10s-sum-null", "1699999200"),
                  "[" WEB02 "[[1699999200,10.0],[1699999210,20.0],"
                  "[1699999220,null],[1699999230,null],"
                  "[1699999240,null]]}]");
    /* A start inside a bucket: the bucket (timed before the start) is
       dropped from the answer, as OpenTSDB's serializer drops every
       point before the start (HttpJsonSerializer.formatQueryAsyncV1). */
    GOLDEN(Q_WEB02("10s-sum", "1699999203"),
           "[" WEB02 "{\"1699999210\":20.0}}]");
    /* Across series: web01 1 2 3 and web02 10 20 in 10 s buckets. */
    GOLDEN(Q("{\"metric\":\"cpu\",\"aggregator\":\"sum\",\"downsample\":"
             "\"10s-max\",\"filters\":[" F("literal_or", "host",
             "web01|web02") "]}"),
           "[{\"metric\":\"cpu\",\"tags\":{},\"aggregateTags\":[\"gpu\","
           "\"host\"],\"dps\":{\"1699999200\":11.0,\"1699999210\":22.0,"
           "\"1699999220\":3.0}}]");
    /* "all": one bucket at the start. */
    GOLDEN(Q_WEB02("0all-count", "1699999200"),
           "[" WEB02 "{\"1699999200\":2.0}}]");
}

#define Q_NET(rate) Q("{\"metric\":\"net\",\"aggregator\":\"sum\"," rate "}")

static void
test_rate(void)
{
    /* net: 0:100 10:200 20:50 (a reset) 30:150. */
    GOLDEN(Q_NET("\"rate\":true"),
           NET "{\"1699999210\":10.0,\"1699999220\":-15.0,"
           "\"1699999230\":10.0}}]");
    GOLDEN(Q_NET("\"rate\":true,\"rateOptions\":{\"counter\":true,"
                 "\"counterMax\":1000}"),
           NET "{\"1699999210\":10.0,\"1699999220\":85.0,"
           "\"1699999230\":10.0}}]");
    GOLDEN(Q_NET("\"rate\":true,\"rateOptions\":{\"counter\":true,"
                 "\"counterMax\":1000,\"resetValue\":50}"),
           NET "{\"1699999210\":10.0,\"1699999220\":0.0,"
           "\"1699999230\":10.0}}]");
    GOLDEN(Q_NET("\"rate\":true,\"rateOptions\":{\"counter\":true,"
                 "\"dropResets\":true}"),
           NET "{\"1699999210\":10.0,\"1699999230\":10.0}}]");
    /* rateOptions without rate: no rate. */
    GOLDEN(Q_NET("\"rateOptions\":{\"counter\":true}"),
           NET "{\"1699999200\":100.0,\"1699999210\":200.0,"
           "\"1699999220\":50.0,\"1699999230\":150.0}}]");
    /* Downsample first (20 s max: 0:200, 20:150), then rate: -2.5. */
    GOLDEN(Q_NET("\"rate\":true,\"downsample\":\"20s-max\""),
           NET "{\"1699999220\":-2.5}}]");
}

/* OpenTSDB computes from the hours around the range (its scan) and answers
 * only the range: tsdb_query_scan_ms(). */
static void
test_scan(void)
{
    /* Its window: the start aligned to the interval, then to the hour;
       the end's next second aligned up to the interval, then the hour. */
    tsdb_error_t e = { 0 };
    tsdb_query_t *q = s_parse("{\"start\":\"1699999205\",\"end\":"
                              "\"1699999260\",\"queries\":[{\"metric\":"
                              "\"cpu\",\"aggregator\":\"sum\"},{\"metric\":"
                              "\"cpu\",\"aggregator\":\"sum\",\"downsample\":"
                              "\"1d-avg\"}]}", &e);
    CHECK(q != NULL);
    int64_t a = 0, b = 0;
    if (q) {
        tsdb_query_scan_ms(q, 0, &a, &b);
        CHECK(a == B * 1000 && b == (B + 3600) * 1000 - 1);
        tsdb_query_scan_ms(q, 1, &a, &b);   /* a day: 1699920000 */
        CHECK(a == INT64_C(1699920000) * 1000
              && b == INT64_C(1700006400) * 1000 - 1);
    }
    tsdb_query_destroy(&q);
    /* A rate's first point in range uses the point before the start. */
    GOLDEN("{\"start\":\"1699999205\",\"end\":\"1699999260\",\"queries\":"
           "[{\"metric\":\"net\",\"aggregator\":\"sum\",\"rate\":true}]}",
           NET "{\"1699999210\":10.0,\"1699999220\":-15.0,"
           "\"1699999230\":10.0}}]");
    /* Interpolation at the first time in range uses the point before
       the start: at 5 web01 is 1.5 (between 0:1 and 10:2) + web02 10. */
    GOLDEN("{\"start\":\"1699999203\",\"end\":\"1699999260\",\"queries\":"
           "[{\"metric\":\"cpu\",\"aggregator\":\"sum\",\"filters\":["
           F("literal_or", "host", "web01|web02") "]}]}",
           "[{\"metric\":\"cpu\",\"tags\":{},\"aggregateTags\":[\"gpu\","
           "\"host\"],\"dps\":{\"1699999205\":11.5,\"1699999210\":17.0,"
           "\"1699999215\":22.5,\"1699999220\":3.0}}]");
    /* The bucket holding the end takes the points after it: web01's
       0:1 and 10:2 in the 20 s bucket of an end at 5 s. */
    GOLDEN("{\"start\":\"1699999200\",\"end\":\"1699999205\",\"queries\":"
           "[{\"metric\":\"cpu\",\"aggregator\":\"sum\",\"downsample\":"
           "\"20s-avg\",\"filters\":[" F("literal_or", "host", "web01") "]}]}",
           "[{\"metric\":\"cpu\",\"tags\":{\"gpu\":\"0\",\"host\":\"web01\"},"
           "\"aggregateTags\":[],\"dps\":{\"1699999200\":1.5}}]");
    /* The case: 20s-avg from 1 s before web01's point at 10 s.
       Its bucket (0 s: 0:1 and 10:2) is timed before the start and is
       not answered; the next one is, with 20:3. */
    GOLDEN("{\"start\":\"1699999209\",\"end\":\"1699999260\",\"queries\":"
           "[{\"metric\":\"cpu\",\"aggregator\":\"sum\",\"downsample\":"
           "\"20s-avg\",\"filters\":[" F("literal_or", "host", "web01") "]}]}",
           "[{\"metric\":\"cpu\",\"tags\":{\"gpu\":\"0\",\"host\":\"web01\"},"
           "\"aggregateTags\":[],\"dps\":{\"1699999220\":3.0}}]");
}

static void
test_resolution(void)
{
    /* lat: 0.100:1 0.900:2 1.5007:3 (ns truncated to 1.500 ms). */
    const char *body = Q("{\"metric\":\"lat\",\"aggregator\":\"sum\"}");
    GOLDEN(body, "[{\"metric\":\"lat\",\"tags\":{\"host\":\"m1\"},"
           "\"aggregateTags\":[],\"dps\":{\"1699999200\":2.0,"
           "\"1699999201\":3.0}}]");
    GOLDEN_ARRAYS(body, "[{\"metric\":\"lat\",\"tags\":{\"host\":\"m1\"},"
                  "\"aggregateTags\":[],\"dps\":[[1699999200,1.0],"
                  "[1699999200,2.0],[1699999201,3.0]]}]");
    GOLDEN("{\"start\":\"1699999200\",\"end\":\"1699999260\","
           "\"msResolution\":true,\"queries\":[{\"metric\":\"lat\","
           "\"aggregator\":\"sum\"}]}",
           "[{\"metric\":\"lat\",\"tags\":{\"host\":\"m1\"},"
           "\"aggregateTags\":[],\"dps\":{\"1699999200100\":1.0,"
           "\"1699999200900\":2.0,\"1699999201500\":3.0}}]");
    /* A relative start with the fixed now, no end (now). */
    const char *rel = "{\"start\":\"1h-ago\",\"queries\":[{\"metric\":"
                      "\"rel\",\"aggregator\":\"sum\"}]}";
    tsdb_error_t e;
    tsdb_query_t *q = s_parse(rel, &e);
    REQUIRE(q);
    CHECK_INT(tsdb_query_start_ms(q), NOW - 3600000);
    CHECK_INT(tsdb_query_end_ms(q), NOW);
    tsdb_query_destroy(&q);
    GOLDEN(rel, "[{\"metric\":\"rel\",\"tags\":{\"host\":\"r\"},"
           "\"aggregateTags\":[],\"dps\":{\"1699996400\":2.0,"
           "\"1700000000\":3.0}}]");
    /* Times as JSON integers (Grafana sends ms). */
    GOLDEN("{\"start\":1699996400000,\"end\":1700000000,\"queries\":"
           "[{\"metric\":\"rel\",\"aggregator\":\"sum\"}]}",
           "[{\"metric\":\"rel\",\"tags\":{\"host\":\"r\"},"
           "\"aggregateTags\":[],\"dps\":{\"1699996400\":2.0,"
           "\"1700000000\":3.0}}]");
}

static void
test_show_query(void)
{
    GOLDEN("{\"start\":\"1699999200\",\"end\":\"1699999260\",\"showQuery\":"
           "true,\"queries\":[{\"metric\":\"mem\",\"aggregator\":\"sum\"},"
           "{\"metric\":\"net\",\"aggregator\":\"max\",\"downsample\":"
           "\"20s-max\",\"rate\":true,\"rateOptions\":{\"counter\":true,"
           "\"counterMax\":1000},\"tags\":{\"host\":\"n1|n2\"}}]}",
           /* net: 20 s max 0:200 20:150, a counter reset wrapped at
              1000: (1000 - 200 + 150) / 20. */
           "[{\"metric\":\"mem\",\"tags\":{\"host\":\"web01\"},"
           "\"aggregateTags\":[],\"query\":{\"aggregator\":\"sum\","
           "\"metric\":\"mem\",\"tsuids\":null,\"downsample\":null,"
           "\"rate\":false,\"rateOptions\":null,\"explicitTags\":false,"
           "\"percentiles\":null,\"index\":0,\"useMultiGets\":true,"
           "\"useFuzzyFilter\":true,\"preAggregate\":false,"
           "\"rollupUsage\":null,\"rollupTable\":\"raw\",\"filters\":[],"
           "\"tags\":{}},\"dps\":{\"1699999200\":7.0}},"
           "{\"metric\":\"net\",\"tags\":{\"host\":\"n1\"},"
           "\"aggregateTags\":[],\"query\":{\"aggregator\":\"max\","
           "\"metric\":\"net\",\"tsuids\":null,\"downsample\":\"20s-max\","
           "\"rate\":true,\"rateOptions\":{\"counter\":true,"
           "\"counterMax\":1000,\"resetValue\":0,\"dropResets\":false},"
           "\"explicitTags\":false,\"percentiles\":null,\"index\":1,"
           "\"useMultiGets\":true,\"useFuzzyFilter\":true,"
           "\"preAggregate\":false,\"rollupUsage\":null,"
           "\"rollupTable\":\"raw\",\"filters\":[{\"tagk\":\"host\","
           "\"filter\":\"n1|n2\",\"group_by\":true,\"type\":"
           "\"literal_or\"}],\"tags\":{\"host\":\"literal_or(n1|n2)\"}},"
           "\"dps\":{\"1699999220\":47.5}}]");
}

int
main(void)
{
    s_init_series();
    test_filter_types();
    test_filter_direct();
    test_group_by();
    test_aggregators();
    test_downsample();
    test_rate();
    test_scan();
    test_resolution();
    test_show_query();
    return check_report("test_tsdb_query");
}
