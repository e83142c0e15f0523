/* test_prom.c - the Prometheus exposition (runtime/prom/telem_prom.h)
 * without sockets: snapshots built from series as the store hands them,
 * rendered in both formats.
 *
 * Covered: golden text of a small node in text 0.0.4 and OpenMetrics 1.0
 * (HELP from docs and for undescribed metrics, TYPE gauge, counter and
 * untyped/unknown, counters' "_total" added once, UNIT only where the
 * format allows it, NaN, +Inf, -Inf, values that read back exactly,
 * series sorted, families together, # EOF); timestamps in both formats,
 * before 1970 too; the name mapping of metric and label names; escaping
 * of label values and HELP text, and bytes that are not UTF-8; what is
 * left out and counted (type conflicts, a counter's sample name taken by
 * another family, equal label sets once mapped, repeated label names,
 * empty label values); series without points; an empty snapshot; hostile
 * names and values made of every byte, whose output a strict line checker
 * here accepts; blocks cut or corrupted at every byte refused or read
 * without a fault; Accept and Accept-Encoding negotiation, including
 * Prometheus's own Accept header and malformed ones; gzip read back with
 * zlib.  promtool and a real Prometheus check the same output in
 * tests/it_prometheus.sh.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "telem_error.h"
#include "telem_prom.h"

/* --- building snapshots --------------------------------------------------- */

typedef struct {
    const char *metric;
    int type;               /* 0 gauge, 1 counter, -1 undescribed */
    const char *unit, *doc;
    double value;
    int64_t ts;
    const char *tags[8];    /* key, value pairs, NULL-terminated */
} s_def_t;

static void
s_add(telem_prom_snap_t *snap, const s_def_t *d)
{
    telem_tag_t tags[4];
    uint32_t n = 0;
    while (n < 4 && d->tags[2 * n]) {
        tags[n] = (telem_tag_t) { d->tags[2 * n], d->tags[2 * n + 1] };
        n++;
    }
    int64_t ts[2] = { d->ts - 1000000000, d->ts };
    double values[2] = { -12345, d->value };   /* only the newest counts */
    telem_series_t s = {
        .metric = d->metric, .tags = tags, .ntags = n,
        .type = d->type == 1 ? TELEM_METRIC_COUNTER : TELEM_METRIC_GAUGE,
        .unit = d->unit ? d->unit : "", .doc = d->doc ? d->doc : "",
        .ts = ts, .values = values, .npoints = 2,
    };
    CHECK_RC(telem_prom_snap_add(snap, &s, d->type >= 0), 0);
}

/* Renders defs[0..n) in `format`; the caller frees the text. */
static char *
s_render(const s_def_t *defs, size_t n, telem_prom_format_t format,
         bool timestamps, telem_prom_stats_t *st)
{
    telem_prom_snap_t *snap = telem_prom_snap_new();
    REQUIRE(snap);
    for (size_t i = 0; i < n; i++)
        s_add(snap, &defs[i]);
    void *block;
    size_t len;
    REQUIRE(telem_prom_snap_take(snap, &block, &len) == 0);
    CHECK_INT(telem_prom_snap_count(snap), 0);
    telem_prom_snap_destroy(&snap);
    CHECK(snap == NULL);
    telem_prom_opts_t o = { format, timestamps };
    char *out = NULL;
    size_t out_len = 0;
    telem_prom_stats_t stats;
    CHECK_RC(telem_prom_render(block, len, &o, &out, &out_len, &stats), 0);
    REQUIRE(out);
    CHECK_INT(out_len, strlen(out));
    free(block);
    if (st)
        *st = stats;
    return out;
}

/* --- golden output -------------------------------------------------------- */

#define S_TS INT64_C(1700000000123456789)

static const s_def_t s_node[] = {
    { "loss", 0, "", "Training loss.", 0.5, S_TS,
      { "host", "n1", "pid", "7" } },
    { "loss", 0, "", "Training loss.", 0.1, S_TS,
      { "host", "n1", "pid", "42" } },
    { "requests", 1, "", "Requests \"served\" \\ so far.", 12, S_TS,
      { "host", "n1" } },
    { "errors_total", 1, "", "Errors.", 3, S_TS, { "host", "n1" } },
    { "demo.value-2", -1, "", "", -0.0, S_TS,
      { "host", "n1", "odd key", "a\"b\\c\nd" } },
    { "mem_used_bytes", 0, "bytes", "Memory in use.\nSecond line.", 1e300,
      S_TS, { "host", "n1" } },
    { "1st", 0, "1/s", "Rate.", NAN, S_TS, { "host", "n1", "k", "" } },
    { "hot", 0, "", "Temperature.", INFINITY, S_TS, { "gpu", "0" } },
    { "hot", 0, "", "Temperature.", -INFINITY, S_TS, { "gpu", "1" } },
};
#define S_NNODE (sizeof s_node / sizeof s_node[0])

static const char s_golden_text[] =
    "# HELP _1st Rate.\n"
    "# TYPE _1st gauge\n"
    "_1st{host=\"n1\"} NaN\n"
    "# HELP demo_value_2 telem metric demo.value-2\n"
    "# TYPE demo_value_2 untyped\n"
    "demo_value_2{host=\"n1\",odd_key=\"a\\\"b\\\\c\\nd\"} -0\n"
    "# HELP errors_total Errors.\n"
    "# TYPE errors_total counter\n"
    "errors_total{host=\"n1\"} 3\n"
    "# HELP hot Temperature.\n"
    "# TYPE hot gauge\n"
    "hot{gpu=\"0\"} +Inf\n"
    "hot{gpu=\"1\"} -Inf\n"
    "# HELP loss Training loss.\n"
    "# TYPE loss gauge\n"
    "loss{host=\"n1\",pid=\"42\"} 0.10000000000000001\n"
    "loss{host=\"n1\",pid=\"7\"} 0.5\n"
    "# HELP mem_used_bytes Memory in use.\\nSecond line.\n"
    "# TYPE mem_used_bytes gauge\n"
    "mem_used_bytes{host=\"n1\"} 1.0000000000000001e+300\n"
    "# HELP requests_total Requests \"served\" \\\\ so far.\n"
    "# TYPE requests_total counter\n"
    "requests_total{host=\"n1\"} 12\n";

static const char s_golden_om[] =
    "# HELP _1st Rate.\n"
    "# TYPE _1st gauge\n"
    "_1st{host=\"n1\"} NaN\n"
    "# HELP demo_value_2 telem metric demo.value-2\n"
    "# TYPE demo_value_2 unknown\n"
    "demo_value_2{host=\"n1\",odd_key=\"a\\\"b\\\\c\\nd\"} -0\n"
    "# HELP errors Errors.\n"
    "# TYPE errors counter\n"
    "errors_total{host=\"n1\"} 3\n"
    "# HELP hot Temperature.\n"
    "# TYPE hot gauge\n"
    "hot{gpu=\"0\"} +Inf\n"
    "hot{gpu=\"1\"} -Inf\n"
    "# HELP loss Training loss.\n"
    "# TYPE loss gauge\n"
    "loss{host=\"n1\",pid=\"42\"} 0.10000000000000001\n"
    "loss{host=\"n1\",pid=\"7\"} 0.5\n"
    "# HELP mem_used_bytes Memory in use.\\nSecond line.\n"
    "# TYPE mem_used_bytes gauge\n"
    "# UNIT mem_used_bytes bytes\n"
    "mem_used_bytes{host=\"n1\"} 1.0000000000000001e+300\n"
    "# HELP requests Requests \\\"served\\\" \\\\ so far.\n"
    "# TYPE requests counter\n"
    "requests_total{host=\"n1\"} 12\n"
    "# EOF\n";

static void
s_test_golden(void)
{
    telem_prom_stats_t st;
    char *text = s_render(s_node, S_NNODE, TELEM_PROM_TEXT, false, &st);
    CHECK_STR(text, s_golden_text);
    CHECK_INT(st.families, 7);
    CHECK_INT(st.series, 9);
    CHECK_INT(st.skipped, 0);
    free(text);
    char *om = s_render(s_node, S_NNODE, TELEM_PROM_OPENMETRICS, false, &st);
    CHECK_STR(om, s_golden_om);
    CHECK_INT(st.series, 9);
    free(om);
    /* Every value printed reads back to the same double. */
    const double v[] = { 0.1, 1.0 / 3, 1e-310, -2.5e-7, 123456789.123456789,
                         9007199254740993.0, 5e-324, 1.7976931348623157e308 };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        s_def_t d = { "x", 0, "", "d", v[i], S_TS, { NULL } };
        char *t = s_render(&d, 1, TELEM_PROM_TEXT, false, NULL);
        const char *sp = strrchr(t, ' ');
        REQUIRE(sp);
        CHECK_EQ(strtod(sp + 1, NULL), v[i]);
        free(t);
    }
}

static void
s_test_timestamps(void)
{
    const s_def_t d[] = {
        { "a", 0, "", "A.", 1, S_TS, { NULL } },
        { "b", 1, "", "B.", 2, -1, { NULL } },
        { "c", 0, "", "C.", 3, 0, { NULL } },
    };
    char *t = s_render(d, 3, TELEM_PROM_TEXT, true, NULL);
    CHECK_STR(t, "# HELP a A.\n# TYPE a gauge\na 1 1700000000123\n"
                 "# HELP b_total B.\n# TYPE b_total counter\nb_total 2 -1\n"
                 "# HELP c C.\n# TYPE c gauge\nc 3 0\n");
    free(t);
    t = s_render(d, 3, TELEM_PROM_OPENMETRICS, true, NULL);
    CHECK_STR(t, "# HELP a A.\n# TYPE a gauge\na 1 1700000000.123\n"
                 "# HELP b B.\n# TYPE b counter\nb_total 2 -1.999\n"
                 "# HELP c C.\n# TYPE c gauge\nc 3 0.000\n# EOF\n");
    free(t);
}

/* --- names and escaping --------------------------------------------------- */

static void
s_check_name(bool label, const char *in, const char *want)
{
    char out[64];
    int rc = label ? telem_prom_label_name(in, out, sizeof out)
                   : telem_prom_metric_name(in, out, sizeof out);
    CHECK_INT(rc, (long long) strlen(want));
    CHECK_STR(out, want);
}

static void
s_test_names(void)
{
    s_check_name(false, "cpu_percent", "cpu_percent");
    s_check_name(false, "a.b-c d/e", "a_b_c_d_e");
    s_check_name(false, "rec:rule", "rec_rule");
    s_check_name(false, "9lives", "_9lives");
    s_check_name(false, "\xc3\xa9t\xc3\xa9", "__t__");
    s_check_name(false, "__name", "__name");
    s_check_name(false, "CamelCase", "CamelCase");
    s_check_name(true, "gpu", "gpu");
    s_check_name(true, "odd key", "odd_key");
    s_check_name(true, "1", "_1");
    s_check_name(true, ".x", "_x");
    s_check_name(true, "..x", "x__x");
    s_check_name(true, "__meta", "x__meta");
    s_check_name(true, "_", "_");
    char small[4];
    CHECK_RC(telem_prom_metric_name("abcd", small, sizeof small),
             TELEM_ETOOBIG);
    CHECK_STR(small, "");
    CHECK_RC(telem_prom_metric_name("abc", small, sizeof small), 3);
    CHECK_RC(telem_prom_metric_name("", small, sizeof small), TELEM_EINVAL);
    CHECK_RC(telem_prom_label_name(NULL, small, sizeof small), TELEM_EINVAL);
}

static void
s_test_escaping(void)
{
    const s_def_t d[] = {
        { "u", 0, "", "Bad \xff byte, good \xc3\xa9, \"q\".", 1, S_TS,
          { "a", "\xff", "b", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
            "c", "\xc0\xaf\xed\xa0\x80", "d", "cut \xe2\x82" } },
    };
    char *t = s_render(d, 1, TELEM_PROM_TEXT, false, NULL);
    CHECK_STR(t,
        "# HELP u Bad \xef\xbf\xbd byte, good \xc3\xa9, \"q\".\n"
        "# TYPE u gauge\n"
        "u{a=\"\xef\xbf\xbd\",b=\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\","
        "c=\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\","
        "d=\"cut \xef\xbf\xbd\xef\xbf\xbd\"} 1\n");
    free(t);
    t = s_render(d, 1, TELEM_PROM_OPENMETRICS, false, NULL);
    CHECK(strstr(t, "good \xc3\xa9, \\\"q\\\".\n") != NULL);
    free(t);
}

/* --- what is left out ----------------------------------------------------- */

static void
s_test_conflicts(void)
{
    const s_def_t d[] = {
        /* "a.b" (counter) and "a_b" (gauge) map to one family: the first
           in byte order of the original names stays. */
        { "a.b", 1, "", "AB counter.", 1, S_TS, { "host", "n1" } },
        { "a_b", 0, "", "AB gauge.", 2, S_TS, { "host", "n1" } },
        /* Gauge "x_total" is counter x's sample name: left out. */
        { "x", 1, "", "X.", 3, S_TS, { NULL } },
        { "x_total", 0, "", "X gauge.", 4, S_TS, { NULL } },
        /* Equal label sets once mapped: the second is left out. */
        { "d", 0, "", "D.", 5, S_TS, { "k.1", "v" } },
        { "d", 0, "", "D.", 6, S_TS, { "k_1", "v" } },
        /* A repeated label name keeps the first; an empty value is
           absent, which makes this series equal to the next. */
        { "r", 0, "", "R.", 7, S_TS, { "a.b", "1", "a_b", "2" } },
        { "e", 0, "", "E.", 8, S_TS, { "k", "" } },
        { "e", 0, "", "E.", 9, S_TS, { NULL } },
    };
    telem_prom_stats_t st;
    char *t = s_render(d, sizeof d / sizeof d[0], TELEM_PROM_TEXT, false,
                       &st);
    CHECK_STR(t,
        "# HELP a_b_total AB counter.\n# TYPE a_b_total counter\n"
        "a_b_total{host=\"n1\"} 1\n"
        "# HELP d D.\n# TYPE d gauge\nd{k_1=\"v\"} 5\n"
        "# HELP e E.\n# TYPE e gauge\ne 9\n"
        "# HELP r R.\n# TYPE r gauge\nr{a_b=\"1\"} 7\n"
        "# HELP x_total X.\n# TYPE x_total counter\nx_total 3\n");
    CHECK_INT(st.families, 5);
    CHECK_INT(st.series, 5);
    CHECK_INT(st.skipped, 4);
    free(t);
}

static void
s_test_snap_edges(void)
{
    telem_prom_snap_t *snap = telem_prom_snap_new();
    REQUIRE(snap);
    telem_series_t none = { .metric = "m", .unit = "", .doc = "" };
    CHECK_RC(telem_prom_snap_add(snap, &none, true), 0);       /* no point */
    CHECK_INT(telem_prom_snap_count(snap), 0);
    telem_series_t bad = { .metric = NULL, .unit = "", .doc = "" };
    CHECK_RC(telem_prom_snap_add(snap, &bad, true), TELEM_EINVAL);
    CHECK_RC(telem_prom_snap_add(NULL, &none, true), TELEM_EINVAL);
    void *block;
    size_t len;
    REQUIRE(telem_prom_snap_take(snap, &block, &len) == 0);
    char *out;
    size_t out_len;
    CHECK_RC(telem_prom_render(block, len, NULL, &out, &out_len, NULL), 0);
    CHECK_STR(out, "");
    free(out);
    telem_prom_opts_t om = { TELEM_PROM_OPENMETRICS, false };
    CHECK_RC(telem_prom_render(block, len, &om, &out, &out_len, NULL), 0);
    CHECK_STR(out, "# EOF\n");
    free(out);
    free(block);
    CHECK_RC(telem_prom_render(NULL, 0, NULL, &out, &out_len, NULL),
             TELEM_EINVAL);
    telem_prom_snap_destroy(&snap);
    telem_prom_snap_destroy(&snap);       /* NULL is fine */
}

/* --- a strict reader of the output ---------------------------------------- */

static bool
s_valid_utf8(const unsigned char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        size_t len = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2
                     : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4
                     ? 4 : 0;
        if (!len || i + len > n)
            return false;
        for (size_t k = 1; k < len; k++)
            if ((p[i + k] & 0xc0) != 0x80)
                return false;
        i += len;
    }
    return true;
}

static const char *
s_name_end(const char *p)
{
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_'))
        return NULL;
    while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
           (*p >= '0' && *p <= '9') || *p == '_')
        p++;
    return p;
}

/* One sample line: name{label="value",...} value; returns false when it
 * breaks the grammar. */
static bool
s_sample_ok(const char *p)
{
    if (!(p = s_name_end(p)))
        return false;
    if (*p == '{') {
        p++;
        while (*p != '}') {
            if (!(p = s_name_end(p)) || p[0] != '=' || p[1] != '"')
                return false;
            for (p += 2; *p != '"'; p++) {
                if (!*p || *p == '\n')
                    return false;
                if (*p == '\\' && !strchr("\\\"n", *++p))
                    return false;
            }
            p++;
            if (*p == ',')
                p++;
            else if (*p != '}')
                return false;
        }
        p++;
    }
    /* " value", then at most " timestamp" */
    if (*p != ' ' || !p[1] || p[1] == ' ')
        return false;
    const char *ts = strchr(p + 1, ' ');
    return !ts || (ts[1] && !strchr(ts + 1, ' '));
}

static bool
s_output_ok(const char *text)
{
    if (!s_valid_utf8((const unsigned char *) text, strlen(text)))
        return false;
    char *copy = strdup(text);
    bool ok = copy != NULL;
    for (char *save = NULL, *line = strtok_r(copy, "\n", &save);
         ok && line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "# HELP ", 7) == 0 ||
            strncmp(line, "# TYPE ", 7) == 0)
            ok = s_name_end(line + 7) && *s_name_end(line + 7) == ' ';
        else if (strcmp(line, "# EOF") != 0)
            ok = s_sample_ok(line);
    }
    free(copy);
    return ok;
}

/* Names and values made of every byte from 1 to 255, in many mixes. */
static void
s_test_hostile(void)
{
    char names[64][40], values[64][40];
    uint32_t seed = 12345;
    for (int i = 0; i < 64; i++) {
        for (int k = 0; k < 39; k++) {
            seed = seed * 1103515245u + 12345u;
            names[i][k] = (char) (1 + (seed >> 16) % 255);
            seed = seed * 1103515245u + 12345u;
            values[i][k] = (char) (1 + (seed >> 16) % 255);
        }
        names[i][1 + i % 38] = '\0';
        values[i][i % 39] = '\0';
    }
    telem_prom_snap_t *snap = telem_prom_snap_new();
    REQUIRE(snap);
    for (int i = 0; i < 64; i++) {
        telem_tag_t tags[2] = { { names[(i + 1) % 64], values[i] },
                                { names[(i + 7) % 64], values[(i + 3) % 64] } };
        int64_t ts = S_TS;
        double v = i;
        telem_series_t s = { .metric = names[i], .tags = tags, .ntags = 2,
                             .type = (telem_metric_type_t) (i % 2),
                             .unit = values[(i + 5) % 64],
                             .doc = values[(i + 9) % 64], .ts = &ts,
                             .values = &v, .npoints = 1 };
        CHECK_RC(telem_prom_snap_add(snap, &s, i % 3 != 0), 0);
    }
    void *block;
    size_t len;
    REQUIRE(telem_prom_snap_take(snap, &block, &len) == 0);
    telem_prom_snap_destroy(&snap);
    for (int f = 0; f < 2; f++) {
        telem_prom_opts_t o = { (telem_prom_format_t) f, f == 1 };
        char *out;
        size_t out_len;
        telem_prom_stats_t st;
        CHECK_RC(telem_prom_render(block, len, &o, &out, &out_len, &st), 0);
        CHECK(s_output_ok(out));
        CHECK_INT(st.series + st.skipped, 64);
        free(out);
    }
    free(block);
}

/* Every cut and every single-byte change of a valid block: refused, or
 * read without a fault (the sanitizer build checks the reads). */
static void
s_test_bad_blocks(void)
{
    telem_prom_snap_t *snap = telem_prom_snap_new();
    REQUIRE(snap);
    for (size_t i = 0; i < S_NNODE; i++)
        s_add(snap, &s_node[i]);
    void *block;
    size_t len;
    REQUIRE(telem_prom_snap_take(snap, &block, &len) == 0);
    telem_prom_snap_destroy(&snap);
    unsigned char *copy = malloc(len);
    REQUIRE(copy);
    char *out;
    size_t out_len;
    int refused = 0;
    for (size_t cut = 0; cut < len; cut++) {
        memcpy(copy, block, cut);
        int rc = telem_prom_render(copy, cut, NULL, &out, &out_len, NULL);
        refused += rc == TELEM_EINVAL;
        CHECK(rc == TELEM_EINVAL && out == NULL);
    }
    CHECK_INT(refused, len);
    static const unsigned char flips[] = { 0x01, 0x80, 0xff };
    for (size_t at = 0; at < len; at++) {
        for (size_t f = 0; f < sizeof flips; f++) {
            memcpy(copy, block, len);
            copy[at] ^= flips[f];
            int rc = telem_prom_render(copy, len, NULL, &out, &out_len, NULL);
            CHECK(rc == 0 || rc == TELEM_EINVAL);
            if (rc == 0)
                CHECK(s_output_ok(out));
            free(out);
        }
    }
    free(copy);
    free(block);
}

/* --- HTTP ----------------------------------------------------------------- */

static void
s_test_negotiate(void)
{
    static const struct {
        const char *accept;
        telem_prom_format_t want;
    } cases[] = {
        /* What Prometheus 2.42 sends. */
        { "application/openmetrics-text;version=1.0.0,application/"
          "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;"
          "q=0.5,*/*;q=0.1", TELEM_PROM_OPENMETRICS },
        { "application/openmetrics-text", TELEM_PROM_OPENMETRICS },
        { "Application/OpenMetrics-Text; version=\"1.0.0\"",
          TELEM_PROM_OPENMETRICS },
        { "text/plain;q=0.2, application/openmetrics-text;q=0.3",
          TELEM_PROM_OPENMETRICS },
        { "application/openmetrics-text, text/plain", TELEM_PROM_OPENMETRICS },
        { NULL, TELEM_PROM_TEXT },
        { "", TELEM_PROM_TEXT },
        { "*/*", TELEM_PROM_TEXT },
        { "text/plain", TELEM_PROM_TEXT },
        { "text/html,application/xhtml+xml,*/*;q=0.8", TELEM_PROM_TEXT },
        { "application/openmetrics-text;version=2.0.0", TELEM_PROM_TEXT },
        { "application/openmetrics-text;q=0", TELEM_PROM_TEXT },
        { "application/openmetrics-text;q=0.5, text/plain", TELEM_PROM_TEXT },
        { "application/openmetrics-text;q=abc", TELEM_PROM_TEXT },
        { "application/openmetrics-text;q=1.5", TELEM_PROM_TEXT },
        { ";;;,,,=,;q=,application/openmetrics-text;;q",
          TELEM_PROM_OPENMETRICS },
        { ",,,,;;;;====\"\"\"", TELEM_PROM_TEXT },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        telem_prom_format_t got = telem_prom_negotiate(cases[i].accept);
        if (got != cases[i].want)
            fprintf(stderr, "Accept: %s\n", cases[i].accept);
        CHECK_INT(got, cases[i].want);
    }
    static const struct {
        const char *enc;
        bool want;
    } enc[] = {
        { "gzip", true }, { "GZIP", true }, { "x-gzip", true },
        { "deflate, gzip;q=1.0, br", true }, { "*", true },
        { "gzip;q=0", false }, { "*;q=0", false }, { "gzip;q=0, *", false },
        { "identity", false }, { NULL, false }, { "", false },
        { "deflate", false }, { "gzip;q=0.001", true }, { "gzipx", false },
    };
    for (size_t i = 0; i < sizeof enc / sizeof enc[0]; i++)
        CHECK_INT(telem_prom_gzip_accepted(enc[i].enc), enc[i].want);
    CHECK_STR(telem_prom_content_type(TELEM_PROM_TEXT),
              "text/plain; version=0.0.4; charset=utf-8");
    CHECK_STR(telem_prom_content_type(TELEM_PROM_OPENMETRICS),
              "application/openmetrics-text; version=1.0.0; charset=utf-8");
}

static void
s_test_gzip(void)
{
    char *text = s_render(s_node, S_NNODE, TELEM_PROM_TEXT, false, NULL);
    size_t len = strlen(text);
    char *gz;
    size_t gz_len;
    REQUIRE(telem_prom_gzip(text, len, &gz, &gz_len) == 0);
    CHECK((unsigned char) gz[0] == 0x1f && (unsigned char) gz[1] == 0x8b);
    char back[4096];
    z_stream z = { 0 };
    REQUIRE(inflateInit2(&z, 15 + 16) == Z_OK);
    z.next_in = (Bytef *) gz;
    z.avail_in = (uInt) gz_len;
    z.next_out = (Bytef *) back;
    z.avail_out = sizeof back;
    CHECK_INT(inflate(&z, Z_FINISH), Z_STREAM_END);
    CHECK_INT(z.total_out, len);
    CHECK(memcmp(back, text, len) == 0);
    inflateEnd(&z);
    free(gz);
    REQUIRE(telem_prom_gzip("", 0, &gz, &gz_len) == 0);
    CHECK(gz_len >= 20);
    free(gz);
    CHECK_RC(telem_prom_gzip(NULL, 0, &gz, &gz_len), TELEM_EINVAL);
    free(text);
}

/* 10,000 series of 100 metrics: every one written, families together. */
static void
s_test_many(void)
{
    telem_prom_snap_t *snap = telem_prom_snap_new();
    REQUIRE(snap);
    char metric[32], pid[16];
    for (int i = 0; i < 10000; i++) {
        snprintf(metric, sizeof metric, "metric.%d", i % 100);
        snprintf(pid, sizeof pid, "%d", i);
        telem_tag_t tags[2] = { { "host", "n1" }, { "pid", pid } };
        int64_t ts = S_TS;
        double v = i;
        telem_series_t s = { .metric = metric, .tags = tags, .ntags = 2,
                             .unit = "", .doc = "Doc.", .ts = &ts,
                             .values = &v, .npoints = 1 };
        CHECK_RC(telem_prom_snap_add(snap, &s, true), 0);
    }
    void *block;
    size_t len;
    REQUIRE(telem_prom_snap_take(snap, &block, &len) == 0);
    telem_prom_snap_destroy(&snap);
    char *out;
    size_t out_len;
    telem_prom_stats_t st;
    CHECK_RC(telem_prom_render(block, len, NULL, &out, &out_len, &st), 0);
    CHECK_INT(st.families, 100);
    CHECK_INT(st.series, 10000);
    size_t help = 0;
    for (const char *p = out; (p = strstr(p, "# HELP ")); p++)
        help++;
    CHECK_INT(help, 100);
    CHECK(s_output_ok(out));
    free(out);
    free(block);
}

int
main(void)
{
    s_test_golden();
    s_test_timestamps();
    s_test_names();
    s_test_escaping();
    s_test_conflicts();
    s_test_snap_edges();
    s_test_hostile();
    s_test_bad_blocks();
    s_test_negotiate();
    s_test_gzip();
    s_test_many();
    return check_report("test_prom");
}
