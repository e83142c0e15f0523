/* agg_meta.c - what Grafana's editor and template variables ask about the
 * series: /api/suggest (metric names, tag keys, tag values by prefix) and
 * /api/search/lookup (the series of a metric, with tag patterns).
 *
 * Both answer from the job's catalog: one data-source call (agg_src.h)
 * listing every series of every node (no points), under the request's
 * deadline.
 * OpenTSDB 2.4's rules, from its SuggestRpc and SearchRpc:
 *   suggest  `type` metrics|tagk|tagv (required), `q` a prefix (not a
 *            substring; "" matches all), `max` (default 25); the answer is
 *            a JSON array of names in byte order.
 *   lookup   `m=METRIC{KEY=VALUE,...}`: VALUE "*" any value of KEY, KEY
 *            "*" any key holding VALUE; METRIC may be left out ("{k=v}")
 *            but not with the tags too; `limit` (default 25).  A metric or
 *            tag key no node knows is 404 "Unable to resolve one or more
 *            UIDs".  Each result's "tsuid" is telem's hash of the series'
 *            metric and tags in hexadecimal (telem has no UID table).
 * Both take their arguments from a JSON body on POST as well. */
#include "agg.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_grow.h"
#include "telem_time.h"

#define S_LIMIT_DEFAULT 25
#define S_TAGS_MAX 32

/* The catalog, or NULL after an answered error. */
static agg_rows_t *
s_catalog(agg_t *self, telem_http_req_t *req)
{
    char why[512] = "";
    agg_src_query_t q = { .flags = TELEM_QUERY_LIST };
    agg_rows_t *r = NULL;
    int rc = agg_src_vt(self)->query(agg_src(self), &q, &r, why, sizeof why);
    if (!r && rc == TELEM_ECONN) {
        telem_http_reply_error(req, 503, "no node of the job can be asked",
                               why);
        return NULL;
    }
    if (!r) {
        telem_http_reply_error(req, 500, "the catalog could not be asked for",
                               telem_strerror(rc));
        return NULL;
    }
    agg_note_missing(self, req, r);
    return r;
}

/* An argument from the query string, or from the JSON body of a POST. */
static const char *
s_arg(telem_http_req_t *req, json_t *body, const char *key, char *buf,
      size_t size)
{
    json_t *v = body ? json_object_get(body, key) : NULL;
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_integer(v)) {
        snprintf(buf, size, "%lld", (long long) json_integer_value(v));
        return buf;
    }
    return telem_http_req_arg(req, key);
}

/* The JSON body of a POST (NULL for GET); 0, or -1 after a 400. */
static int
s_body(telem_http_req_t *req, json_t **out)
{
    *out = NULL;
    size_t len = 0;
    const char *text = telem_http_req_body(req, &len);
    if (strcmp(telem_http_req_method(req), "POST") != 0 || len == 0)
        return 0;
    json_error_t e;
    *out = json_loadb(text, len, 0, &e);
    if (json_is_object(*out))
        return 0;
    json_decref(*out);
    *out = NULL;
    char details[256];
    snprintf(details, sizeof details, "%s at line %d, column %d", e.text,
             e.line, e.column);
    telem_http_reply_error(req, 400, "Unable to parse the given JSON",
                           details);
    return -1;
}

/* `s` as a positive count into *out; 0 or -1 after a 400. */
static int
s_count(telem_http_req_t *req, const char *s, const char *name, long *out)
{
    if (!s || !*s)
        return 0;
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (*end || v < 0 || v > 1000000) {
        char msg[128];
        snprintf(msg, sizeof msg, "Unable to parse '%s' as a number", name);
        telem_http_reply_error(req, 400, msg, "");
        return -1;
    }
    if (v > 0)
        *out = v;
    return 0;
}

/* ---- suggest ----------------------------------------------------------- */

static int
s_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* Adds `name` to `set` (an object used as a set) when it starts with q. */
static void
s_offer(json_t *set, const char *name, const char *q)
{
    if (name && strncmp(name, q, strlen(q)) == 0)
        json_object_set_new(set, name, json_true());
}

static json_t *
s_sorted(json_t *set, long max)
{
    size_t n = json_object_size(set), k = 0;
    const char **names = calloc(n ? n : 1, sizeof *names);
    json_t *out = json_array();
    const char *key;
    json_t *v;
    json_object_foreach(set, key, v)
        if (names)
            names[k++] = key;
    qsort(names, k, sizeof *names, s_cmp);
    for (size_t i = 0; i < k && (long) i < max; i++)
        json_array_append_new(out, json_string(names[i]));
    free(names);
    return out;
}

void
agg_suggest(agg_t *self, telem_http_req_t *req)
{
    json_t *body = NULL;
    if (s_body(req, &body))
        return;
    char b1[32], b2[32], b3[32];
    const char *type = s_arg(req, body, "type", b1, sizeof b1);
    const char *q = s_arg(req, body, "q", b2, sizeof b2);
    long max = S_LIMIT_DEFAULT;
    int kind = !type ? -1 : strcmp(type, "metrics") == 0 ? 0
               : strcmp(type, "tagk") == 0 ? 1 : strcmp(type, "tagv") == 0
               ? 2 : -2;
    if (kind == -1)
        telem_http_reply_error(req, 400, "Missing 'type' parameter", "");
    else if (kind == -2) {
        char msg[TELEM_NAME_MAX + 40];
        snprintf(msg, sizeof msg, "Invalid 'type' parameter:%s", type);
        telem_http_reply_error(req, 400, msg, "");
    }
    agg_rows_t *r = NULL;
    if (kind >= 0
        && !s_count(req, s_arg(req, body, "max", b3, sizeof b3), "max", &max)
        && (r = s_catalog(self, req))) {
        json_t *set = json_object();
        for (size_t i = 0; i < agg_rows_count(r); i++) {
            const telem_series_t *s = agg_rows_series(r, i);
            if (kind == 0)
                s_offer(set, s->metric, q ? q : "");
            for (uint32_t t = 0; kind > 0 && t < s->ntags; t++)
                s_offer(set, kind == 1 ? s->tags[t].key : s->tags[t].value,
                        q ? q : "");
        }
        telem_http_reply_json(req, 200, s_sorted(set, max));
        json_decref(set);
    }
    agg_rows_destroy(&r);
    json_decref(body);
}

/* ---- lookup ------------------------------------------------------------ */

typedef struct {
    char metric[TELEM_NAME_MAX + 1];
    char key[S_TAGS_MAX][TELEM_NAME_MAX + 1];
    char value[S_TAGS_MAX][TELEM_NAME_MAX + 1];
    size_t ntags;
    long limit;
} s_lookup_t;

/* One "k=v" of `m`'s braces into slot l->ntags.  0 or -1. */
static int
s_pair(s_lookup_t *l, const char *p, size_t len)
{
    const char *eq = memchr(p, '=', len);
    if (!eq || eq == p || eq == p + len - 1 || l->ntags == S_TAGS_MAX
        || (size_t) (eq - p) > TELEM_NAME_MAX
        || (size_t) (p + len - eq - 1) > TELEM_NAME_MAX)
        return -1;
    memcpy(l->key[l->ntags], p, (size_t) (eq - p));
    l->key[l->ntags][eq - p] = '\0';
    memcpy(l->value[l->ntags], eq + 1, (size_t) (p + len - eq - 1));
    l->value[l->ntags][p + len - eq - 1] = '\0';
    l->ntags++;
    return 0;
}

/* OpenTSDB's Tags.parseWithMetric: "metric", "metric{k=v,...}" or
 * "{k=v,...}".  0 or -1. */
static int
s_parse_m(s_lookup_t *l, const char *m)
{
    const char *brace = strchr(m, '{');
    size_t mlen = brace ? (size_t) (brace - m) : strlen(m);
    if (mlen > TELEM_NAME_MAX)
        return -1;
    memcpy(l->metric, m, mlen);
    l->metric[mlen] = '\0';
    if (!brace)
        return mlen ? 0 : -1;
    size_t len = strlen(brace);
    if (len < 2 || brace[len - 1] != '}')
        return -1;
    const char *p = brace + 1, *end = brace + len - 1;
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t) (end - p));
        const char *stop = comma ? comma : end;
        if (s_pair(l, p, (size_t) (stop - p)))
            return -1;
        p = stop + 1;
    }
    return mlen || l->ntags ? 0 : -1;
}

/* The lookup from a POST body {"metric","tags":[{"key","value"}],"limit"}.
 * 0 or -1. */
static int
s_parse_body(s_lookup_t *l, json_t *body)
{
    json_t *m = json_object_get(body, "metric"), *tags =
        json_object_get(body, "tags"), *limit = json_object_get(body,
                                                                "limit");
    if ((m && !json_is_string(m)) || (tags && !json_is_array(tags))
        || (limit && !json_is_integer(limit)))
        return -1;
    if (m && snprintf(l->metric, sizeof l->metric, "%s",
                      json_string_value(m)) >= (int) sizeof l->metric)
        return -1;
    size_t i;
    json_t *t;
    json_array_foreach(tags, i, t) {
        const char *k = json_string_value(json_object_get(t, "key"));
        const char *v = json_string_value(json_object_get(t, "value"));
        char pair[2 * TELEM_NAME_MAX + 4];
        int n = snprintf(pair, sizeof pair, "%s=%s", k ? k : "*",
                         v ? v : "*");
        if (n >= (int) sizeof pair || s_pair(l, pair, (size_t) n))
            return -1;
    }
    if (limit && json_integer_value(limit) > 0)
        l->limit = (long) json_integer_value(limit);
    return *l->metric || l->ntags ? 0 : -1;
}

static int
s_tag_matches(const telem_series_t *s, const char *k, const char *v)
{
    for (uint32_t t = 0; t < s->ntags; t++)
        if ((strcmp(k, "*") == 0 || strcmp(k, s->tags[t].key) == 0)
            && (strcmp(v, "*") == 0 || strcmp(v, s->tags[t].value) == 0))
            return 1;
    return 0;
}

static int
s_matches(const s_lookup_t *l, const telem_series_t *s)
{
    if (*l->metric && strcmp(l->metric, s->metric) != 0)
        return 0;
    for (size_t i = 0; i < l->ntags; i++)
        if (!s_tag_matches(s, l->key[i], l->value[i]))
            return 0;
    return 1;
}

/* A name of the lookup no node knows (NULL when all are known). */
static const char *
s_unknown(const s_lookup_t *l, const agg_rows_t *r)
{
    int metric = !*l->metric;
    int keys[S_TAGS_MAX] = { 0 };
    for (size_t i = 0; i < agg_rows_count(r); i++) {
        const telem_series_t *s = agg_rows_series(r, i);
        metric |= strcmp(s->metric, l->metric) == 0;
        for (size_t k = 0; k < l->ntags; k++)
            for (uint32_t t = 0; t < s->ntags; t++)
                keys[k] |= strcmp(l->key[k], "*") == 0
                           || strcmp(l->key[k], s->tags[t].key) == 0;
    }
    if (!metric)
        return l->metric;
    for (size_t k = 0; k < l->ntags; k++)
        if (!keys[k])
            return l->key[k];
    return NULL;
}

static json_t *
s_result(const telem_series_t *s)
{
    json_t *tags = json_object();
    uint64_t h = telem_hash_mix64(0);
    for (const char *p = s->metric; *p; p++)
        h = telem_hash_mix64(h ^ (unsigned char) *p);
    for (uint32_t t = 0; t < s->ntags; t++) {
        json_object_set_new(tags, s->tags[t].key,
                            json_string(s->tags[t].value));
        for (const char *p = s->tags[t].key; *p; p++)
            h = telem_hash_mix64(h ^ (unsigned char) *p);
        for (const char *p = s->tags[t].value; *p; p++)
            h = telem_hash_mix64(h ^ (unsigned char) *p ^ 0x100);
    }
    char tsuid[24];
    snprintf(tsuid, sizeof tsuid, "%016llX", (unsigned long long) h);
    return json_pack("{s:s, s:s, s:o}", "tsuid", tsuid, "metric", s->metric,
                     "tags", tags);
}

static json_t *
s_lookup_answer(const s_lookup_t *l, const agg_rows_t *r, int64_t t0)
{
    json_t *results = json_array(), *tags = json_array();
    size_t total = 0;
    for (size_t i = 0; i < agg_rows_count(r); i++) {
        const telem_series_t *s = agg_rows_series(r, i);
        if (!s_matches(l, s))
            continue;
        if ((long) total++ < l->limit)
            json_array_append_new(results, s_result(s));
    }
    for (size_t k = 0; k < l->ntags; k++)
        json_array_append_new(tags, json_pack("{s:s, s:s}", "key", l->key[k],
                                              "value", l->value[k]));
    json_t *o = json_pack("{s:s}", "type", "LOOKUP");
    if (*l->metric)
        json_object_set_new(o, "metric", json_string(l->metric));
    json_object_set_new(o, "tags", tags);
    json_object_set_new(o, "limit", json_integer(l->limit));
    json_object_set_new(o, "time", json_real((double) (telem_mono_ns() - t0)
                                             / 1e6));
    json_object_set_new(o, "results", results);
    json_object_set_new(o, "startIndex", json_integer(0));
    json_object_set_new(o, "totalResults", json_integer((json_int_t) total));
    json_object_set_new(o, "useMeta", json_false());
    return o;
}

void
agg_lookup(agg_t *self, telem_http_req_t *req)
{
    int64_t t0 = telem_mono_ns();
    json_t *body = NULL;
    if (s_body(req, &body))
        return;
    s_lookup_t *l = calloc(1, sizeof *l);
    agg_rows_t *r = NULL;
    const char *m = telem_http_req_arg(req, "m");
    if (!l) {
        telem_http_reply_error(req, 500, "out of memory", "");
        goto out;
    }
    l->limit = S_LIMIT_DEFAULT;
    if (body ? s_parse_body(l, body) : !m ? -2 : s_parse_m(l, m)) {
        telem_http_reply_error(req, 400, body || m ? "Unable to parse query"
                               : "Missing parameter <code>m</code>", m ? m
                               : "");
        goto out;
    }
    if (!body && s_count(req, telem_http_req_arg(req, "limit"), "limit",
                         &l->limit))
        goto out;
    if (!(r = s_catalog(self, req)))
        goto out;
    const char *unknown = s_unknown(l, r);
    if (unknown && agg_rows_nmissing(r) == 0) {
        char details[TELEM_NAME_MAX + 64];
        snprintf(details, sizeof details, "No such name for '%s': '%s'",
                 unknown == l->metric ? "metrics" : "tagk", unknown);
        telem_http_reply_error(req, 404, "Unable to resolve one or more UIDs",
                               details);
        goto out;
    }
    telem_http_reply_json(req, 200, s_lookup_answer(l, r, t0));
out:
    agg_rows_destroy(&r);
    free(l);
    json_decref(body);
}
