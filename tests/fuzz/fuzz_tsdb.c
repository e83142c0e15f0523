/* fuzz_tsdb.c - libFuzzer target: OpenTSDB's query parsers
 * (analysis/tsdb): the /api/query JSON body, the GET query string, times,
 * durations, downsample specifications and tag filters, and the
 * executor over a parsed query (tsdb_exec.c), called directly rather than
 * through the HTTP handler (fuzz_http) so each parser gets the whole
 * input.
 *
 * Input: a mode byte, then the text:
 *   0 JSON body             tsdb_query_parse_json
 *   1 query string          k=v lines, tsdb_query_parse_args
 *   2 time                  tsdb_time_parse
 *   3 duration              tsdb_time_duration
 *   4 downsample            tsdb_downsample_parse, then run on points
 *   5 filter                type, tagk, filter lines: tsdb_filter_new
 *   6 filter from a tag     tagk, value lines: tsdb_filter_from_tag
 * A parsed query is echoed (tsdb_query_to_json), its hosts listed and
 * every sub-query run over a fixed set of series named by its metric
 * (unless it fills too many buckets to run on every input: fuzz_tsdb.h).
 * Oracles beyond the sanitizers: a refusal carries a status (400, 413 or
 * 500) and a message; results serialise to JSON that reads back; a
 * duration is positive; a downsample never writes more points than it
 * announced room for.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "fuzz_tsdb.h"
#include "telem_error.h"
#include "tsdb_downsample.h"
#include "tsdb_exec.h"
#include "tsdb_filter.h"
#include "tsdb_out.h"
#include "tsdb_query.h"
#include "tsdb_time.h"

#define S_NOW_MS INT64_C(1700000100000)
#define S_NPTS 40

static void
s_refused(const tsdb_error_t *e)
{
    FZ_CHECK(e->status == 400 || e->status == 404 || e->status == 413
             || e->status == 500);
    FZ_CHECK(e->message[0] != '\0');
}

/* Four series of `metric` on two hosts, a point every 2.5 s up to now. */
static void
s_run(const tsdb_query_t *q, size_t i)
{
    static int64_t ts[S_NPTS];
    static double v[4][S_NPTS];
    static const telem_tag_t tags[4][2] = {
        { { "host", "n1" }, { "gpu", "0" } }, { { "host", "n1" }, { "gpu", "1" } },
        { { "host", "n2" }, { "gpu", "0" } }, { { "host", "n2" }, { "rank", "3" } },
    };
    telem_series_t s[4];
    for (int k = 0; k < S_NPTS; k++) {
        ts[k] = (S_NOW_MS - 100000 + k * 2500) * 1000000;
        for (int j = 0; j < 4; j++)
            v[j][k] = j == 3 ? (double) (k * 7 % 50) : k * (j + 1) * 0.5;
    }
    for (int j = 0; j < 4; j++)
        s[j] = (telem_series_t) { .metric = tsdb_query_metric(q, i),
            .tags = tags[j], .ntags = j == 3 ? 2 : (uint32_t) 1 + (j & 1),
            .ts = ts, .values = v[j], .npoints = S_NPTS };
    tsdb_results_t *res = tsdb_results_new();
    tsdb_error_t e = { 0 };
    if (!res)
        abort();
    int rc = tsdb_exec_run(q, i, s, 4, res, &e);
    if (rc != 0) {
        s_refused(&e);
    } else {
        size_t len = 0;
        char *text = tsdb_results_dump(res, &len);
        json_t *back = text ? json_loadb(text, len, 0, NULL) : NULL;
        FZ_CHECK(json_is_array(back));
        json_decref(back);
        free(text);
    }
    tsdb_results_destroy(&res);
}

static void
s_query(tsdb_query_t *q, const tsdb_error_t *e)
{
    if (!q) {
        s_refused(e);
        return;
    }
    FZ_CHECK(tsdb_query_count(q) > 0);
    FZ_CHECK(tsdb_query_start_ms(q) <= tsdb_query_end_ms(q));
    int heavy = fz_tsdb_heavy(q);
    for (size_t i = 0; i < tsdb_query_count(q) && i < 8; i++) {
        json_t *j = tsdb_query_to_json(q, i);
        FZ_CHECK(j != NULL);
        json_decref(j);
        const char *names[8];
        long n = tsdb_query_hosts(q, i, names, 8);
        FZ_CHECK(n >= -1);
        if (!heavy)
            s_run(q, i);
    }
    tsdb_query_destroy(&q);
}

/* Lines "k=v" (or "k") into keys and values; the text is cut in place. */
static size_t
s_kv(char *text, const char **k, const char **v, size_t cap)
{
    size_t n = 0;
    for (char *line = strtok(text, "\n"); line && n < cap;
         line = strtok(NULL, "\n")) {
        char *eq = strchr(line, '=');
        if (eq)
            *eq++ = '\0';
        k[n] = line;
        v[n++] = eq ? eq : "";
    }
    return n;
}

static void
s_downsample(const char *spec)
{
    tsdb_downsample_t ds;
    char why[256];
    if (tsdb_downsample_parse(spec, &ds, why, sizeof why) != 0) {
        FZ_CHECK(why[0] != '\0');
        return;
    }
    int64_t ts[S_NPTS];
    double v[S_NPTS];
    for (int k = 0; k < S_NPTS; k++) {
        ts[k] = S_NOW_MS - 100000 + k * 2500;
        v[k] = k % 3 ? k : -k;
    }
    int64_t start = S_NOW_MS - 90000, end = S_NOW_MS;
    size_t cap = tsdb_downsample_max_points(&ds, start, end);
    if (cap > 100000)
        return;
    cap += S_NPTS + 1;          /* points outside the range are bucketed */
    tsdb_point_t *out = calloc(cap ? cap : 1, sizeof *out);
    if (!out)
        abort();
    long n = tsdb_downsample_run(&ds, ts, v, S_NPTS, start, end, out, cap);
    FZ_CHECK(n >= 0 && (size_t) n <= cap);
    free(out);
}

static void
s_filter(char *text, int from_tag)
{
    const char *k[3] = { "", "", "" }, *v[3] = { "", "", "" };
    size_t n = s_kv(text, k, v, 3);
    (void) n;
    tsdb_error_t e = { 0 };
    tsdb_filter_t *f = from_tag ? tsdb_filter_from_tag(k[0], k[1], 1, &e)
                                : tsdb_filter_new(k[0], k[1], k[2], 0, &e);
    if (!f) {
        s_refused(&e);
        return;
    }
    static const char *const values[] = { "n1", "web01", "", "N1", "a|b" };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        tsdb_filter_match(f, values[i]);
    FZ_CHECK(tsdb_filter_match(f, NULL) == 0);
    const char *lits[4];
    tsdb_filter_literals(f, lits, 4);
    FZ_CHECK(tsdb_filter_equal(f, f));
    /* JSON holds UTF-8 only: the URI parser refuses other bytes, the
     * JSON body cannot hold them; a direct caller may pass them. */
    json_t *j = tsdb_filter_to_json(f), *t = json_string(tsdb_filter_tagk(f)),
           *s = json_string(tsdb_filter_string(f));
    FZ_CHECK(j != NULL || !t || !s);
    json_decref(j);
    json_decref(t);
    json_decref(s);
    tsdb_filter_destroy(&f);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int mode = data[0] % 7;
    char *text = fz_cstr(data + 1, size - 1);
    if (!text)
        abort();
    tsdb_error_t e = { 0 };
    const char *k[64], *v[64];
    int64_t ms = 0;
    char why[256];
    switch (mode) {
    case 0:
        s_query(tsdb_query_parse_json(text, size - 1, S_NOW_MS, &e), &e);
        break;
    case 1:
        s_query(tsdb_query_parse_args(k, v, s_kv(text, k, v, 64), S_NOW_MS,
                                      &e), &e);
        break;
    case 2:
        tsdb_time_parse(text, S_NOW_MS, &ms, why, sizeof why);
        break;
    case 3:
        if (tsdb_time_duration(text, strlen(text), &ms, why, sizeof why) == 0)
            FZ_CHECK(ms > 0);
        break;
    case 4:
        s_downsample(text);
        break;
    default:
        s_filter(text, mode == 6);
    }
    free(text);
    return 0;
}
