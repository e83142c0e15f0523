/* test_tsdb_query_bad.c - unit tests for the POST /api/query bodies that
 * analysis/tsdb must refuse: not JSON, wrong types for every field,
 * unknown fields, fields telem cannot honour, empty or missing queries,
 * bad aggregator, downsample, filter type, regex, times and end before
 * start.  Each gives a 400 with a sentence naming what was wrong.  (The
 * answers to good queries are test_tsdb_query.c's.)
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "telem_error.h"
#include "tsdb_query.h"

#define NOW INT64_C(1700000000000)     /* 2023-11-14T22:13:20Z */

static tsdb_query_t *
s_parse(const char *body, tsdb_error_t *e)
{
    return tsdb_query_parse_json(body, strlen(body), NOW, e);
}

/* The body is refused with 400 and a message holding `part`. */
static int
s_refused(const char *body, const char *part, int line)
{
    tsdb_error_t e = { 0 };
    tsdb_query_t *q = s_parse(body, &e);
    int ok = !q && e.status == 400 && strstr(e.message, part);
    if (!ok)
        fprintf(stderr, "line %d: %s -> %s %d '%s'\n", line, body,
                q ? "accepted" : "refused", e.status, e.message);
    tsdb_query_destroy(&q);
    return ok;
}
#define REFUSED(body, part) CHECK(s_refused(body, part, __LINE__))

#define T(top) "{\"start\":\"1h-ago\",\"queries\":[{\"metric\":\"m\"," \
    "\"aggregator\":\"sum\"}]," top "}"
#define SQ(sub) "{\"start\":\"1h-ago\",\"queries\":[{\"metric\":\"m\"," \
    "\"aggregator\":\"sum\"," sub "}]}"

static void
test_parse_malformed(void)
{
    tsdb_error_t e = { 0 };
    CHECK(tsdb_query_parse_json("", 0, NOW, &e) == NULL && e.status == 400
          && strcmp(e.message, "Missing message content") == 0);
    REFUSED("not json", "Unable to parse the given JSON");
    REFUSED("{", "Unable to parse the given JSON");
    REFUSED("{\"start\":\"1h-ago\"} x", "Unable to parse the given JSON");
    REFUSED("[]", "must be a JSON object");
    REFUSED("\"x\"", "Unable to parse the given JSON");
    /* Wrong types, one per field. */
    static const char *const wrong[] = {
        "{\"start\":true,\"queries\":[]}", "{\"start\":{}}",
        "{\"start\":1.5}", T("\"end\":[]"), "{\"start\":\"1h-ago\","
        "\"queries\":{}}", "{\"start\":\"1h-ago\",\"queries\":\"x\"}",
        "{\"start\":\"1h-ago\",\"queries\":[1]}",
        T("\"msResolution\":\"yes\""), T("\"showQuery\":1"),
        T("\"globalAnnotations\":\"true\""), T("\"noAnnotations\":0"),
        T("\"padding\":\"x\""), T("\"showSummary\":[]"),
        T("\"showStats\":{}"), T("\"showTSUIDs\":1"), T("\"delete\":\"no\""),
        T("\"useCalendar\":2"), T("\"timezone\":5"), T("\"options\":[]"),
        SQ("\"aggregator\":1"), SQ("\"metric\":[]"), SQ("\"downsample\":5"),
        SQ("\"rate\":\"true\""), SQ("\"rateOptions\":\"x\""),
        SQ("\"rateOptions\":{\"counter\":\"yes\"}"),
        SQ("\"rateOptions\":{\"counterMax\":\"1\"}"),
        SQ("\"rateOptions\":{\"resetValue\":1.5}"),
        SQ("\"rateOptions\":{\"dropResets\":0}"), SQ("\"filters\":{}"),
        SQ("\"filters\":[\"x\"]"),
        SQ("\"filters\":[{\"type\":1,\"tagk\":\"h\",\"filter\":\"a\"}]"),
        SQ("\"filters\":[{\"type\":\"literal_or\",\"tagk\":1,"
           "\"filter\":\"a\"}]"),
        SQ("\"filters\":[{\"type\":\"literal_or\",\"tagk\":\"h\","
           "\"filter\":1}]"),
        SQ("\"filters\":[{\"type\":\"literal_or\",\"tagk\":\"h\","
           "\"filter\":\"a\",\"groupBy\":\"true\"}]"),
        SQ("\"tags\":[]"), SQ("\"tags\":{\"host\":1}"),
        SQ("\"explicitTags\":\"x\""), SQ("\"tsuids\":\"x\""),
        SQ("\"percentiles\":5"), SQ("\"index\":\"0\""),
        SQ("\"useFuzzyFilter\":\"x\""), SQ("\"useMultiGets\":1"),
        SQ("\"rollupUsage\":1"), SQ("\"showHistogramBuckets\":\"x\""),
        SQ("\"preAggregate\":1"),
    };
    for (size_t i = 0; i < sizeof wrong / sizeof *wrong; i++)
        REFUSED(wrong[i], "must be");
    /* Unknown fields at every level. */
    REFUSED(T("\"bogus\":1"), "unknown field 'bogus'");
    REFUSED(SQ("\"alias\":\"x\""), "unknown field 'queries[0].alias'");
    REFUSED(SQ("\"filters\":[{\"type\":\"literal_or\",\"tagk\":\"h\","
               "\"filter\":\"a\",\"x\":1}]"), "unknown field");
    REFUSED(SQ("\"rateOptions\":{\"counterMaximum\":1}"), "unknown field");
    /* Fields telem cannot honour. */
    REFUSED(T("\"delete\":true"), "'delete' is not supported");
    REFUSED(T("\"useCalendar\":true"), "'useCalendar' is not supported");
    REFUSED(T("\"showTSUIDs\":true"), "'showTSUIDs' is not supported");
    REFUSED(T("\"timezone\":\"America/New_York\""), "'timezone' is not");
    REFUSED(SQ("\"tsuids\":[\"000001000001000001\"]"), "'queries[0].tsuids'");
    REFUSED(SQ("\"percentiles\":[99]"), "'queries[0].percentiles'");
    REFUSED(SQ("\"preAggregate\":true"), "not supported");
    REFUSED(SQ("\"showHistogramBuckets\":true"), "not supported");
    /* What OpenTSDB's validation refuses. */
    REFUSED("{\"queries\":[{\"metric\":\"m\",\"aggregator\":\"sum\"}]}",
            "Missing start time");
    REFUSED("{\"start\":\"\",\"queries\":[{\"metric\":\"m\","
            "\"aggregator\":\"sum\"}]}", "Missing start time");
    REFUSED("{\"start\":\"1h-ago\"}", "Missing queries");
    REFUSED("{\"start\":\"1h-ago\",\"queries\":[]}", "Missing queries");
    REFUSED("{\"start\":\"1h-ago\",\"queries\":null}", "Missing queries");
    REFUSED("{\"start\":\"yesterday\",\"queries\":[{\"metric\":\"m\","
            "\"aggregator\":\"sum\"}]}", "Invalid start time");
    REFUSED(T("\"end\":\"soon\""), "Invalid end time");
    REFUSED("{\"start\":\"1h-ago\",\"end\":\"2h-ago\",\"queries\":"
            "[{\"metric\":\"m\",\"aggregator\":\"sum\"}]}",
            "End time [1699992800000] must be greater than or equal to the "
            "start time [1699996400000]");
    REFUSED("{\"start\":\"1h-ago\",\"queries\":[{\"metric\":\"m\"}]}",
            "Missing the aggregation function");
    REFUSED("{\"start\":\"1h-ago\",\"queries\":[{\"metric\":\"m\","
            "\"aggregator\":\"median\"}]}",
            "No such aggregation function: median");
    REFUSED("{\"start\":\"1h-ago\",\"queries\":[{\"aggregator\":\"sum\"}]}",
            "Missing the metric");
    REFUSED(SQ("\"downsample\":\"1m-foo\""), "Invalid downsampling");
    REFUSED(SQ("\"downsample\":\"1dc-sum\""), "calendar");
    REFUSED(SQ("\"downsample\":\"avg\""), "Invalid downsampling");
    REFUSED(SQ("\"filters\":[{\"type\":\"glob\",\"tagk\":\"h\","
               "\"filter\":\"a\"}]"),
            "Could not find a tag value filter of the type: glob");
    REFUSED(SQ("\"filters\":[{\"tagk\":\"h\",\"filter\":\"a\"}]"),
            "The filter type cannot be null or empty");
    REFUSED(SQ("\"filters\":[{\"type\":\"regexp\",\"tagk\":\"h\","
               "\"filter\":\"(a\"}]"), "Invalid regular expression");
    REFUSED(SQ("\"filters\":[{\"type\":\"wildcard\",\"tagk\":\"h\","
               "\"filter\":\"a\"}]"), "asterisk");
    REFUSED(SQ("\"filters\":[{\"type\":\"literal_or\",\"tagk\":\"h\"}]"),
            "Filter cannot be null or empty");
    REFUSED(SQ("\"tags\":{\"host\":\"\"}"), "Filter cannot be null");
    REFUSED(SQ("\"tags\":{\"host\":\"nope(x)\"}"), "type: nope");
}

int
main(void)
{
    test_parse_malformed();
    return check_report("test_tsdb_query_bad");
}
