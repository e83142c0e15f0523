/* test_tsdb_query_args.c - OpenTSDB's /api/query requests in
 * analysis/tsdb that are about the request more than the answer: the
 * fields of a POST body that are accepted and ignored, repeated
 * sub-queries kept once, the host list a query names; GET's m= syntax
 * (every part of it, each malformed form a 400 with a sentence; malformed
 * JSON bodies are test_tsdb_query_bad.c's); and the executor's bound on
 * the buckets a query may fill.  The series and helpers are
 * tests/tsdb_query_fixture.h's, shared with test_tsdb_query.c.
 */
#include "tsdb_query_fixture.h"

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
    test_parse_ok();
    test_get();
    test_exec_limits();
    return check_report("test_tsdb_query_args");
}
