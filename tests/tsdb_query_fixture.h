/* tsdb_query_fixture.h - what test_tsdb_query.c and test_tsdb_query_args.c
 * share: the series every query runs over (worked out by hand from
 * OpenTSDB 2.4's rules, see those files), and the helpers that parse a
 * request, run it over them and compare the answer with golden JSON (the
 * answer's text checked to say the same as its tree).  Each test file
 * includes it once; nothing here is used elsewhere.
 */
#ifndef TSDB_QUERY_FIXTURE_H
#define TSDB_QUERY_FIXTURE_H

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

static inline void
s_init_series(void)
{
    for (size_t i = 0; i < S_NDATA; i++)
        s_series[i] = (telem_series_t) {
            .metric = s_data[i].metric, .tags = s_data[i].tags,
            .ntags = s_data[i].ntags, .ts = s_data[i].ts,
            .values = s_data[i].v, .npoints = s_data[i].n };
}

/* Parses the body; NULL (and the error printed) when refused. */
static inline tsdb_query_t *
s_parse(const char *body, tsdb_error_t *e)
{
    return tsdb_query_parse_json(body, strlen(body), NOW, e);
}

/* The answer's text (tsdb_exec_run, tsdb_results_dump) parsed: NULL when
 * it differs from the tree (tsdb_exec_sub). */
static inline json_t *
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
static inline json_t *
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

static inline int
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
static inline int
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
static inline void
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

/* The start of the answer for the counter "net" of host n1. */
#define NET "[{\"metric\":\"net\",\"tags\":{\"host\":\"n1\"}," \
    "\"aggregateTags\":[],\"dps\":"

#endif
