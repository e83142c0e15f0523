/* tsdb_query_uri.c - parses GET /api/query's arguments (tsdb_query.h):
 * start=, end=, the flags, and each m= sub-query in OpenTSDB's URI
 * syntax (QueryRpc.parseMTypeSubQuery, Tags.parseWithMetricAndFilters,
 * QueryRpc.parseRateOptions):
 *   AGG:[DS:][rate[{counter[,max[,reset]]}]:][explicit_tags:]METRIC[{tags}][{filters}]
 * tags (grouped) and filters are comma-separated tagk=value pairs, value
 * as tsdb_filter_from_tag() reads it. */
#include "tsdb_query_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The n-th `sep`-separated piece of s[0..len): start and length, as
 * OpenTSDB's Tags.splitString() (empty pieces kept). */
static size_t
s_count(const char *s, size_t len, char sep)
{
    size_t n = 1;
    for (size_t i = 0; i < len; i++)
        n += s[i] == sep;
    return n;
}

static void
s_piece(const char *s, size_t len, char sep, size_t n, const char **p,
        size_t *plen)
{
    const char *end = s + len, *b = s;
    for (; n > 0; n--)
        b = memchr(b, sep, (size_t) (end - b)) + 1;
    const char *e = memchr(b, sep, (size_t) (end - b));
    *p = b;
    *plen = e ? (size_t) (e - b) : (size_t) (end - b);
}

/* "k=v" into a filter (group_by as given). */
static int
s_tag(tsdb_subq_t *s, const char *p, size_t len, int group_by,
      tsdb_error_t *err)
{
    const char *what = group_by ? "tag" : "filter";
    const char *eq = memchr(p, '=', len);
    if (!eq || eq == p || eq == p + len - 1 || s_count(p, len, '=') != 2) {
        tsdb_error_set(err, 400, "When parsing %s '%.*s': invalid tag: %.*s",
                       what, (int) len, p, (int) len, p);
        return -1;
    }
    char *k = strndup(p, (size_t) (eq - p));
    char *v = strndup(eq + 1, (size_t) (p + len - eq - 1));
    tsdb_filter_t *f = k && v ? tsdb_filter_from_tag(k, v, group_by, err)
                              : NULL;
    free(k);
    free(v);
    if (!f) {
        char inner[512];
        snprintf(inner, sizeof inner, "%s", err ? err->message : "");
        tsdb_error_set(err, 400, "When parsing %s '%.*s': %s", what,
                       (int) (len > 200 ? 200 : len), p, inner);
        return -1;
    }
    return tsdb_query__add_filter(s, f, err);
}

/* The pieces of s[0..len) between braces; stop_at_empty as OpenTSDB. */
static int
s_tags(tsdb_subq_t *s, const char *b, size_t len, int group_by,
       int stop_at_empty, tsdb_error_t *err)
{
    size_t n = s_count(b, len, ',');
    for (size_t i = 0; i < n; i++) {
        const char *p;
        size_t pl;
        s_piece(b, len, ',', i, &p, &pl);
        if (pl == 0 && stop_at_empty)
            return 0;
        if (s_tag(s, p, pl, group_by, err))
            return -1;
    }
    return 0;
}

/* METRIC[{tags}][{filters}] as Tags.parseWithMetricAndFilters(). */
static int
s_metric(tsdb_subq_t *s, const char *m, size_t len, tsdb_error_t *err)
{
    if (len == 0) {
        tsdb_error_set(err, 400, "Metric cannot be null or empty");
        return -1;
    }
    const char *curly = memchr(m, '{', len);
    size_t mlen = curly ? (size_t) (curly - m) : len;
    char *metric = strndup(m, mlen);
    int rc = tsdb_query__set_str(&s->metric, metric, err);
    free(metric);
    if (rc || !curly)
        return rc;
    if (m[len - 1] != '}') {
        tsdb_error_set(err, 400, "Missing '}' at the end of: %.*s",
                       (int) (len > 200 ? 200 : len), m);
        return -1;
    }
    if (curly == m + len - 2)
        return 0;                                       /* "foo{}" */
    const char *close = memchr(m, '}', len);
    if (close < curly) {                                /* "foo}{a=b}" */
        tsdb_error_set(err, 400, "Misplaced '}' in: %.*s",
                       (int) (len > 200 ? 200 : len), m);
        return -1;
    }
    int has_filters = close != m + len - 1;
    if (has_filters) {
        const char *fb = m + len - 1;
        while (*fb != '{')
            fb--;
        if (s_tags(s, fb + 1, (size_t) (m + len - 1 - fb - 1), 0, 1, err))
            return -1;
    }
    return s_tags(s, curly + 1, (size_t) (close - curly - 1), 1, has_filters,
                  err);
}

/* A Java long from s[0..len); 0, or -1. */
static int
s_long(const char *s, size_t len, int64_t *out)
{
    char buf[32];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, s, len);
    buf[len] = 0;
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno || *end || isspace((unsigned char) buf[0]))
        return -1;
    *out = v;
    return 0;
}

/* rate{counter[,max[,reset]]} as QueryRpc.parseRateOptions(). */
static int
s_rate_options(tsdb_subq_t *s, const char *spec, size_t len,
               tsdb_error_t *err)
{
    if (len < 6 || spec[4] != '{' || spec[len - 1] != '}') {
        tsdb_error_set(err, 400, "Invalid rate options specification: %.*s",
                       (int) (len > 200 ? 200 : len), spec);
        return -1;
    }
    const char *in = spec + 5, *p;
    size_t il = len - 6, pl, n = s_count(in, il, ',');
    if (n > 3) {
        tsdb_error_set(err, 400, "Incorrect number of values in rate options "
                       "specification, must be counter[,counter max value,"
                       "reset value], recieved: %zu parts", n);
        return -1;
    }
    s_piece(in, il, ',', 0, &p, &pl);
    s->has_rate_options = 1;
    s->counter = pl >= 7 && memcmp(p + pl - 7, "counter", 7) == 0;
    s->drop_resets = pl == 11 && memcmp(p, "dropcounter", 11) == 0;
    for (size_t i = 1; i < n; i++) {
        s_piece(in, il, ',', i, &p, &pl);
        int64_t *dst = i == 1 ? &s->counter_max : &s->reset_value;
        if (pl && s_long(p, pl, dst)) {
            tsdb_error_set(err, 400, "%s value of counter was not a number, "
                           "received '%.*s'", i == 1 ? "Max" : "Reset",
                           (int) (pl > 64 ? 64 : pl), p);
            return -1;
        }
    }
    return 0;
}

static int
s_starts(const char *p, size_t len, const char *word)
{
    size_t wl = strlen(word);
    return len >= wl && strncasecmp(p, word, wl) == 0;
}

/* One middle part of m=: downsample, rate, explicit_tags, ... */
static int
s_part(tsdb_subq_t *s, const char *m, const char *p, size_t pl,
       tsdb_error_t *err)
{
    const char *no = NULL;
    if (s_starts(p, pl, "rate")) {
        s->rate = 1;
        return memchr(p, '{', pl) ? s_rate_options(s, p, pl, err) : 0;
    }
    if (pl && isdigit((unsigned char) p[0])) {
        char *ds = strndup(p, pl);
        int rc = tsdb_query__set_str(&s->downsample, ds, err);
        free(ds);
        return rc;
    }
    if (s_starts(p, pl, "explicit_tags")) {
        s->explicit_tags = 1;
        return 0;
    }
    if (s_starts(p, pl, "rollup_"))
        return 0;
    if (pl == 7 && strncasecmp(p, "pre-agg", 7) == 0)
        no = "telem keeps no pre-aggregated series";
    else if (s_starts(p, pl, "percentiles")
             || s_starts(p, pl, "show-histogram-buckets"))
        no = "telem keeps no histograms";
    if (no)
        tsdb_error_set(err, 400, "Invalid parameter m=%.200s: '%.*s' is not "
                       "supported: %s", m, (int) (pl > 64 ? 64 : pl), p, no);
    else
        tsdb_error_set(err, 400, "Invalid parameter m=%.200s: unknown part "
                       "'%.*s' (expected a downsample such as 1m-avg, rate "
                       "or rate{counter,max,reset}, or explicit_tags)", m,
                       (int) (pl > 64 ? 64 : pl), p);
    return -1;
}

/* 1 when s is UTF-8 as JSON needs it (RFC 3629: no overlong forms, no
 * surrogates, nothing past U+10FFFF). */
static int
s_utf8(const unsigned char *s)
{
    while (*s) {
        unsigned c = *s, n = c < 0x80 ? 0 : c >= 0xc2 && c < 0xe0 ? 1
                   : c >= 0xe0 && c < 0xf0 ? 2 : c >= 0xf0 && c < 0xf5 ? 3 : 9;
        if (n == 9)
            return 0;
        unsigned cp = n ? c & (0x3fu >> n) : c;
        for (unsigned i = 1; i <= n; i++) {
            if ((s[i] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i] & 0x3fu);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp < 0xe000)))
            || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return 0;
        s += n + 1;
    }
    return 1;
}

static int
s_m(tsdb_query_t *q, const char *m, tsdb_error_t *err)
{
    size_t len = m ? strlen(m) : 0, n = m ? s_count(m, len, ':') : 0;
    if (len == 0) {
        tsdb_error_set(err, 400, "The query string was empty");
        return -1;
    }
    /* Its metric and filters go back into JSON (showQuery, results). */
    if (!s_utf8((const unsigned char *) m)) {
        tsdb_error_set(err, 400, "Invalid parameter m: not UTF-8");
        return -1;
    }
    if (n < 2 || n > 5) {
        tsdb_error_set(err, 400, "Invalid parameter m=%.200s (%s :-separated "
                       "parts)", m, n < 2 ? "not enough" : "too many");
        return -1;
    }
    tsdb_subq_t *s = tsdb_query__add_sub(q, err);
    const char *p;
    size_t pl;
    if (!s)
        return -1;
    s_piece(m, len, ':', 0, &p, &pl);
    char *agg = strndup(p, pl);
    int rc = tsdb_query__set_str(&s->aggregator, agg, err);
    free(agg);
    s_piece(m, len, ':', n - 1, &p, &pl);
    if (rc || s_metric(s, p, pl, err))
        return -1;
    for (size_t x = 1; x + 1 < n; x++) {
        s_piece(m, len, ':', x, &p, &pl);
        if (s_part(s, m, p, pl, err))
            return -1;
    }
    return 0;
}

/* A flag: on when present, unless "false" or "0". */
static int
s_flag(const char *v)
{
    return !v || (strcasecmp(v, "false") != 0 && strcmp(v, "0") != 0);
}

static int
s_arg(tsdb_query_t *q, const char *k, const char *v, tsdb_error_t *err)
{
    if (strcmp(k, "start") == 0)
        return tsdb_query__set_str(&q->start, v, err);
    if (strcmp(k, "end") == 0)
        return tsdb_query__set_str(&q->end, v, err);
    if (strcmp(k, "m") == 0)
        return s_m(q, v, err);
    if (strcmp(k, "ms") == 0 || strcmp(k, "msResolution") == 0)
        q->ms_resolution = s_flag(v);
    else if (strcmp(k, "arrays") == 0)
        q->arrays = s_flag(v);
    else if (strcmp(k, "show_query") == 0 || strcmp(k, "showQuery") == 0)
        q->show_query = s_flag(v);
    else if (strcmp(k, "global_annotations") == 0)
        q->global_annotations = s_flag(v);
    else if (strcmp(k, "no_annotations") == 0)
        q->no_annotations = s_flag(v);
    else if (strcmp(k, "tsuid") == 0
             || (strcmp(k, "show_tsuids") == 0 && s_flag(v))) {
        tsdb_error_set(err, 400, "'%s' is not supported: telem has no "
                       "TSUIDs; query by metric and filters (m=)", k);
        return -1;
    } else if (strcmp(k, "exp") == 0) {
        tsdb_error_set(err, 400, "'exp' is not supported: telem has no "
                       "query expressions");
        return -1;
    } else if (strcmp(k, "timezone") == 0 && v && *v && strcmp(v, "UTC")
               && strcmp(v, "Etc/UTC") && strcmp(v, "GMT")) {
        tsdb_error_set(err, 400, "'timezone' is not supported: telem's "
                       "times are UTC");
        return -1;
    }
    return 0;
}

tsdb_query_t *
tsdb_query_parse_args(const char *const *keys, const char *const *vals,
                      size_t n, int64_t now_ms, tsdb_error_t *err)
{
    int has_start = 0, has_m = 0;
    for (size_t i = 0; i < n; i++) {
        has_start |= keys[i] && strcmp(keys[i], "start") == 0 && vals[i]
                     && *vals[i];
        has_m |= keys[i] && strcmp(keys[i], "m") == 0;
    }
    if (!has_start) {
        tsdb_error_set(err, 400, "Missing parameter <code>start</code>");
        return NULL;
    }
    tsdb_query_t *q = tsdb_query__new(err);
    for (size_t i = 0; q && i < n; i++)
        if (keys[i] && s_arg(q, keys[i], vals[i], err))
            tsdb_query_destroy(&q);
    if (q && !has_m) {
        tsdb_error_set(err, 400, "Missing sub queries");
        tsdb_query_destroy(&q);
    }
    if (q && tsdb_query__validate(q, now_ms, err))
        tsdb_query_destroy(&q);
    return q;
}
