/* test_tsdb_query.c - unit tests for OpenTSDB's /api/query in
 * analysis/tsdb: tag filters, request parsing (POST JSON and GET m=) and
 * the executor, against golden JSON worked out by hand from OpenTSDB
 * 2.4's rules:
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
 *   - each malformed m= form gives a 400 with a sentence (malformed JSON
 *     bodies are test_tsdb_query_bad.c's).
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "telem_error.h"
#include "tsdb_exec.h"
#include "tsdb_filter.h"
#include "tsdb_query.h"

#define NOW INT64_C(1700000000000)     /* 2023-11-14T22:13:20Z */
#define B INT64_C(1699999200)          /* an hour boundary, seconds */
#define S(x) ((B + (x)) * INT64_C(1000000000))
#define SMS(x, ms) (S(x) + (int64_t) (ms) * 1000000)

typedef struct {
    const char *metric;
    telem_tag_t tags[2];
    uint32_t ntags;
    int64_t ts[6];
    double v[6];
    uint32_t n;
} s_data_t;

/* cpu: S_a, S_b misaligned; S_c one point; S_d lacks "gpu".  net: a
 * counter with a reset.  lat: several points in one second.  rel: around
 * an hour before NOW. */
static const s_data_t s_data[] = {
    { "cpu", { { "gpu", "0" }, { "host", "web01" } }, 2,
      { S(0), S(10), S(20) }, { 1, 2, 3 }, 3 },
    { "cpu", { { "gpu", "1" }, { "host", "web02" } }, 2,
      { S(5), S(15) }, { 10, 20 }, 2 },
    { "cpu", { { "gpu", "0" }, { "host", "Web03.net" } }, 2,
      { S(0) }, { 100 }, 1 },
    { "cpu", { { "host", "db01" } }, 1, { S(0) }, { 1000 }, 1 },
    { "mem", { { "host", "web01" } }, 1, { S(0) }, { 7 }, 1 },
    { "net", { { "host", "n1" } }, 1,
      { S(0), S(10), S(20), S(30) }, { 100, 200, 50, 150 }, 4 },
    { "lat", { { "host", "m1" } }, 1,
      { SMS(0, 100), SMS(0, 900), SMS(1, 500) + 700000 }, { 1, 2, 3 }, 3 },
    { "rel", { { "host", "r" } }, 1,
      { INT64_C(1699996399) * 1000000000, INT64_C(1699996400) * 1000000000,
        INT64_C(1700000000) * 1000000000 }, { 1, 2, 3 }, 3 },
};
#define S_NDATA (sizeof s_data / sizeof *s_data)

static telem_series_t s_series[S_NDATA];

static void
s_init_series(void)
{
    for (size_t i = 0; i < S_NDATA; i++)
        s_series[i] = (telem_series_t) {
            .metric = s_data[i].metric, .tags = s_data[i].tags,
            .ntags = s_data[i].ntags, .ts = s_data[i].ts,
            .values = s_data[i].v, .npoints = s_data[i].n };
}

/* Parses the body; NULL (and the error printed) when refused. */
static tsdb_query_t *
s_parse(const char *body, tsdb_error_t *e)
{
    return tsdb_query_parse_json(body, strlen(body), NOW, e);
}

/* The answer's text (tsdb_exec_run, tsdb_results_dump) parsed: NULL when
 * it differs from the tree (tsdb_exec_sub). */
static json_t *
s_text_as_tree(tsdb_query_t *q, json_t *tree)
{
    tsdb_results_t *res = tsdb_results_new();
    tsdb_error_t e = { 0 };
    for (size_t i = 0; q && i < tsdb_query_count(q); i++)
        if (tsdb_exec_run(q, i, s_series, S_NDATA, res, &e))
            break;
    char *text = tsdb_results_dump(res, NULL);
    json_t *got = text ? json_loads(text, 0, NULL) : NULL;
    if (!got || !json_equal(got, tree)) {
        fprintf(stderr, "exec: the text differs from the tree: %s\n",
                text ? text : "(null)");
        json_decref(got);
        got = NULL;
    }
    free(text);
    tsdb_results_destroy(&res);
    return got;
}

/* Runs every sub-query of q over all series; the results array, checked
 * to be what the answer's text says too. */
static json_t *
s_exec(tsdb_query_t *q)
{
    json_t *r = json_array();
    tsdb_error_t e = { 0 };
    for (size_t i = 0; q && i < tsdb_query_count(q); i++)
        if (tsdb_exec_sub(q, i, s_series, S_NDATA, r, &e)) {
            fprintf(stderr, "exec: %d %s\n", e.status, e.message);
            json_decref(r);
            return NULL;
        }
    json_t *same = s_text_as_tree(q, r);
    json_decref(r);
    return same;
}

static int
s_same(json_t *got, const char *want, int line)
{
    json_error_t je;
    json_t *w = json_loads(want, 0, &je);
    if (!w) {
        fprintf(stderr, "line %d: bad expected JSON: %s\n", line, je.text);
        return 0;
    }
    int ok = got && json_equal(got, w);
    if (!ok) {
        char *g = got ? json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        char *x = json_dumps(w, JSON_COMPACT | JSON_SORT_KEYS);
        fprintf(stderr, "line %d:\n  got  %s\n  want %s\n", line,
                g ? g : "(null)", x);
        free(g);
        free(x);
    }
    json_decref(w);
    return ok;
}

/* The results of POST body `body` against the golden `want`. */
static int
s_golden(const char *body, int arrays, const char *want, int line)
{
    tsdb_error_t e = { 0 };
    tsdb_query_t *q = s_parse(body, &e);
    if (!q) {
        fprintf(stderr, "line %d: refused: %s\n", line, e.message);
        return 0;
    }
    tsdb_query_set_arrays(q, arrays);
    json_t *r = s_exec(q);
    int ok = s_same(r, want, line);
    json_decref(r);
    tsdb_query_destroy(&q);
    return ok;
}
#define GOLDEN(body, want) CHECK(s_golden(body, 0, want, __LINE__))
#define GOLDEN_ARRAYS(body, want) CHECK(s_golden(body, 1, want, __LINE__))

/* The hosts of the results, in order, comma-separated. */
static void
s_hosts_of(const char *body, char *out, size_t size)
{
    tsdb_error_t e = { 0 };
    tsdb_query_t *q = s_parse(body, &e);
    json_t *r = s_exec(q), *o;
    size_t i;
    out[0] = 0;
    json_array_foreach(r, i, o) {
        const char *h = json_string_value(
            json_object_get(json_object_get(o, "tags"), "host"));
        snprintf(out + strlen(out), size - strlen(out), "%s%s", i ? "," : "",
                 h ? h : "?");
    }
    if (!q)
        snprintf(out, size, "refused: %.200s", e.message);
    json_decref(r);
    tsdb_query_destroy(&q);
}

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
#define NET "[{\"metric\":\"net\",\"tags\":{\"host\":\"n1\"}," \
    "\"aggregateTags\":[],\"dps\":"

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

static void
test_parse_ok(void)
{
    tsdb_error_t e;
    /* Harmless fields are accepted; repeated sub-queries kept once. */
    tsdb_query_t *q = s_parse(
        "{\"start\":\"1h-ago\",\"end\":\"now\",\"padding\":true,"
        "\"showSummary\":true,\"showStats\":true,\"timezone\":\"UTC\","
        "\"options\":{},\"useCalendar\":false,\"delete\":false,"
        "\"showTSUIDs\":false,\"noAnnotations\":true,"
        "\"globalAnnotations\":true,\"queries\":["
        "{\"metric\":\"cpu\",\"aggregator\":\"sum\",\"tsuids\":[],"
        "\"percentiles\":null,\"index\":5,\"useFuzzyFilter\":false,"
        "\"useMultiGets\":false,\"rollupUsage\":\"ROLLUP_RAW\","
        "\"preAggregate\":false,\"showHistogramBuckets\":false,"
        "\"explicitTags\":false,\"downsample\":null,\"rateOptions\":null},"
        "{\"metric\":\"cpu\",\"aggregator\":\"sum\"},"
        "{\"metric\":\"cpu\",\"aggregator\":\"avg\",\"filters\":["
        "{\"type\":\"literal_or\",\"tagk\":\"host\",\"filter\":\"a|b\","
        "\"group_by\":true},{\"type\":\"wildcard\",\"tagk\":\"host\","
        "\"filter\":\"*\"}]}]}", &e);
    REQUIRE(q);
    CHECK_INT(tsdb_query_count(q), 2);
    CHECK_STR(tsdb_query_metric(q, 1), "cpu");
    CHECK(tsdb_query_metric(q, 2) == NULL);
    CHECK(tsdb_query_global_annotations(q) && tsdb_query_no_annotations(q));
    CHECK(!tsdb_query_ms_resolution(q) && !tsdb_query_arrays(q));
    const char *names[4];
    CHECK_INT(tsdb_query_hosts(q, 0, names, 4), -1);
    CHECK_INT(tsdb_query_hosts(q, 1, names, 4), 2);
    CHECK_STR(names[0], "a");
    CHECK_STR(names[1], "b");
    CHECK_INT(tsdb_query_hosts(q, 1, names, 1), -1);
    CHECK_INT(tsdb_query_hosts(q, 9, names, 4), -1);
    json_t *j = tsdb_query_to_json(q, 1);
    CHECK(json_integer_value(json_object_get(j, "index")) == 1);
    json_decref(j);
    CHECK(tsdb_query_to_json(q, 2) == NULL);
    tsdb_query_destroy(&q);
    CHECK(q == NULL);
    tsdb_query_destroy(&q);
}

/* GET: arguments as "k=v" strings; the query or NULL with e. */
static tsdb_query_t *
s_get(tsdb_error_t *e, size_t n, const char *const *kv)
{
    const char *keys[16], *vals[16];
    char buf[16][256];
    for (size_t i = 0; i < n; i++) {
        snprintf(buf[i], sizeof buf[i], "%s", kv[i]);
        char *eq = strchr(buf[i], '=');
        keys[i] = buf[i];
        vals[i] = eq ? eq + 1 : NULL;
        if (eq)
            *eq = 0;
    }
    *e = (tsdb_error_t) { 0 };
    return tsdb_query_parse_args(keys, vals, n, NOW, e);
}
#define GET(e, ...) s_get(e, sizeof (const char *[]) { __VA_ARGS__ }    \
                          / sizeof (const char *),                      \
                          (const char *const[]) { __VA_ARGS__ })

static int
s_get_golden(tsdb_query_t *q, const char *want, int line)
{
    json_t *r = s_exec(q);
    int ok = q && s_same(r, want, line);
    json_decref(r);
    return ok;
}

static void
test_get(void)
{
    tsdb_error_t e;
    tsdb_query_t *q = GET(&e, "start=1699999200", "end=1699999260",
                          "m=sum:rate{counter,1000,50}:net", "arrays");
    REQUIRE(q);
    CHECK(tsdb_query_arrays(q));
    CHECK(s_get_golden(q, NET "[[1699999210,10.0],[1699999220,0.0],"
                       "[1699999230,10.0]]}]", __LINE__));
    tsdb_query_destroy(&q);
    q = GET(&e, "start=1699999200", "end=1699999260",
            "m=sum:rate{dropcounter}:net", "arrays=false");
    CHECK(q && !tsdb_query_arrays(q));
    CHECK(s_get_golden(q, NET "{\"1699999210\":10.0,\"1699999230\":10.0}}]",
                       __LINE__));
    tsdb_query_destroy(&q);
    /* Grouped tags in the first braces, plain filters in the second;
       host=web* is OpenTSDB's case-insensitive shortcut, so Web03.net
       joins web01 in gpu=0. */
    q = GET(&e, "start=1699999200", "end=1699999260",
            "m=sum:cpu{gpu=*}{host=web*}");
    CHECK(s_get_golden(q, "[{\"metric\":\"cpu\",\"tags\":{\"gpu\":\"0\"},"
                       "\"aggregateTags\":[\"host\"],\"dps\":{"
                       "\"1699999200\":101.0,\"1699999210\":2.0,"
                       "\"1699999220\":3.0}},{\"metric\":\"cpu\",\"tags\":"
                       "{\"gpu\":\"1\",\"host\":\"web02\"},\"aggregateTags\":"
                       "[],\"dps\":{\"1699999205\":10.0,\"1699999215\":20.0"
                       "}}]", __LINE__));
    json_t *j = tsdb_query_to_json(q, 0);
    CHECK(s_same(json_object_get(j, "filters"),
                 "[{\"tagk\":\"host\",\"filter\":\"web*\",\"group_by\":false,"
                 "\"type\":\"wildcard\"},{\"tagk\":\"gpu\",\"filter\":\"*\","
                 "\"group_by\":true,\"type\":\"wildcard\"}]", __LINE__));
    json_decref(j);
    tsdb_query_destroy(&q);
    /* Downsample, explicit_tags, show_query and ms, two m=. */
    q = GET(&e, "start=1699999200", "end=1699999260", "ms", "show_query=1",
            "m=max:10s-sum:explicit_tags:cpu{}{host=regexp(db)}",
            "m=avg:lat{host=literal_or(m1|m2)}", "m=avg:lat{host=m1|m2}",
            "unknown=ignored");
    REQUIRE(q);
    CHECK_INT(tsdb_query_count(q), 2);   /* the third equals the second */
    CHECK(tsdb_query_ms_resolution(q) && tsdb_query_show_query(q));
    j = tsdb_query_to_json(q, 0);
    CHECK(s_same(j, "{\"aggregator\":\"max\",\"metric\":\"cpu\","
                 "\"tsuids\":null,\"downsample\":\"10s-sum\",\"rate\":false,"
                 "\"rateOptions\":null,\"explicitTags\":true,"
                 "\"percentiles\":null,\"index\":0,\"useMultiGets\":true,"
                 "\"useFuzzyFilter\":true,\"preAggregate\":false,"
                 "\"rollupUsage\":null,\"rollupTable\":\"raw\",\"filters\":"
                 "[{\"tagk\":\"host\",\"filter\":\"db\",\"group_by\":false,"
                 "\"type\":\"regexp\"}],\"tags\":{}}", __LINE__));
    json_decref(j);
    const char *names[4];
    CHECK_INT(tsdb_query_hosts(q, 1, names, 4), 2);
    CHECK_INT(tsdb_query_hosts(q, 0, names, 4), -1);
    tsdb_query_destroy(&q);

    static const char *const bad[][2] = {
        { "m=sum:cpu", "Missing parameter <code>start</code>" },
        { "m=cpu", "not enough :-separated parts" },
        { "m=a:b:c:d:e:cpu", "too many :-separated parts" },
        { "m=", "The query string was empty" },
        { "m=sum:cpu{host=web01", "Missing '}' at the end of" },
        /* a '}' before the first '{': the tags were read from the
         * brace on to that '}', backwards (found by fuzz_http) */
        { "m=sum:cpu}{host=web01}", "Misplaced '}'" },
        { "m=sum:cpu{host=a}}{b=c}", NULL },
        /* bytes that are not UTF-8 cannot go back into JSON: echoing the
         * query failed and was answered as out of memory (fuzz_tsdb) */
        { "m=sum:cpu{host=\xe9t\xe9}", "not UTF-8" },
        { "m=sum:cpu{host=\xc3\xa9t\xc3\xa9}", NULL },
        { "m=sum:c\xed\xa0\x80", "not UTF-8" },
        { "m=sum:cpu{host}", "invalid tag: host" },
        { "m=sum:cpu{host=}", "invalid tag" },
        { "m=sum:cpu{=a}", "invalid tag" },
        { "m=sum:cpu{host=foo(x)}", "type: foo" },
        { "m=sum:cpu{}{host=regexp((a)}", "Invalid regular expression" },
        { "m=sum:rate{counter,abc}:cpu", "Max value of counter was not a "
          "number, received 'abc'" },
        { "m=sum:rate{counter,1,x}:cpu", "Reset value of counter" },
        { "m=sum:rate{a,b,c,d}:cpu", "Incorrect number of values" },
        { "m=sum:rate{:cpu", "Invalid rate options specification" },
        { "m=sum:rate{}:cpu", NULL },    /* as OpenTSDB: no options */
        { "m=sum:bogus:cpu", "unknown part 'bogus'" },
        { "m=sum::cpu", "unknown part ''" },
        { "m=sum:pre-agg:cpu", "not supported" },
        { "m=sum:percentiles[99]:cpu", "not supported" },
        { "m=median:cpu", "No such aggregation function: median" },
        { "m=sum:1m-foo:cpu", "Invalid downsampling" },
        { "m=sum:cpu{host=web*}", NULL },    /* fine: not refused */
        { "tsuid=sum:000001", "not supported" },
        { "exp=a", "not supported" },
        { "timezone=Europe/Paris", "not supported" },
        { "show_tsuids", "not supported" },
        { "end=1000000000", "End time" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int no_start = strstr(bad[i][1] ? bad[i][1] : "", "<code>") != NULL;
        int has_m = strncmp(bad[i][0], "m=", 2) == 0;
        q = no_start ? GET(&e, bad[i][0])
            : has_m ? GET(&e, "start=1h-ago", bad[i][0])
                    : GET(&e, "start=1h-ago", bad[i][0], "m=sum:cpu");
        int ok = bad[i][1] ? !q && e.status == 400
                                 && strstr(e.message, bad[i][1])
                           : q != NULL;
        if (!ok)
            fprintf(stderr, "GET %s -> %d '%s'\n", bad[i][0], e.status,
                    e.message);
        CHECK(ok);
        tsdb_query_destroy(&q);
    }
    q = GET(&e, "start=1h-ago");
    CHECK(!q && strcmp(e.message, "Missing sub queries") == 0);
}

static void
test_exec_limits(void)
{
    tsdb_error_t e = { 0 };
    tsdb_query_t *q = s_parse("{\"start\":\"1y-ago\",\"queries\":[{"
                              "\"metric\":\"cpu\",\"aggregator\":\"sum\","
                              "\"downsample\":\"1ms-sum-zero\"}]}", &e);
    REQUIRE(q);
    json_t *r = json_array();
    CHECK_INT(tsdb_exec_sub(q, 0, s_series, S_NDATA, r, &e), TELEM_ETOOBIG);
    CHECK_INT(e.status, 413);
    CHECK_INT(tsdb_exec_sub(q, 1, s_series, S_NDATA, r, &e), TELEM_EINVAL);
    tsdb_query_destroy(&q);
    /* The bound holds for the sub-query's series together: 2.6 M buckets
     * each for the four cpu series (one series alone would pass) were
     * filled and aggregated, ~1.5 GB for four series (fuzz_tsdb's
     * out-of-memory report) and without bound for more. */
    q = s_parse("{\"start\":\"30d-ago\",\"queries\":[{\"metric\":\"cpu\","
                "\"aggregator\":\"sum\",\"downsample\":\"1s-sum-zero\"}]}",
                &e);
    REQUIRE(q);
    CHECK_INT(tsdb_exec_sub(q, 0, s_series, S_NDATA, r, &e), TELEM_ETOOBIG);
    CHECK(e.status == 413 && strstr(e.message, "for 4 series"));
    /* No series at all: no result. */
    CHECK_INT(tsdb_exec_sub(q, 0, NULL, 0, r, &e), 0);
    CHECK_INT(json_array_size(r), 0);
    json_decref(r);
    tsdb_query_destroy(&q);
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
    test_parse_ok();
    test_get();
    test_exec_limits();
    return check_report("test_tsdb_query");
}
