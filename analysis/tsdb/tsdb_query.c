/* tsdb_query.c - the parsed /api/query request (tsdb_query.h): its
 * validation as OpenTSDB's TSQuery.validateAndSetQuery() does it, its
 * accessors, and its echo as a shown query.  The two parsers are
 * tsdb_query_json.c (POST) and tsdb_query_uri.c (GET). */
#include "tsdb_query_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsdb_time.h"

tsdb_query_t *
tsdb_query__new(tsdb_error_t *err)
{
    tsdb_query_t *q = calloc(1, sizeof *q);
    if (!q)
        tsdb_error_set(err, 500, "out of memory");
    return q;
}

tsdb_subq_t *
tsdb_query__add_sub(tsdb_query_t *q, tsdb_error_t *err)
{
    tsdb_subq_t *s = realloc(q->subs, (q->nsubs + 1) * sizeof *s);
    if (!s) {
        tsdb_error_set(err, 500, "out of memory");
        return NULL;
    }
    q->subs = s;
    s = &q->subs[q->nsubs++];
    memset(s, 0, sizeof *s);
    s->counter_max = INT64_MAX;
    return s;
}

void
tsdb_query__clear_filters(tsdb_subq_t *s)
{
    for (size_t i = 0; i < s->nfilters; i++)
        tsdb_filter_destroy(&s->filters[i]);
    free(s->filters);
    s->filters = NULL;
    s->nfilters = 0;
}

int
tsdb_query__add_filter(tsdb_subq_t *s, tsdb_filter_t *f, tsdb_error_t *err)
{
    tsdb_filter_t **p = realloc(s->filters, (s->nfilters + 1) * sizeof *p);
    if (!p) {
        tsdb_filter_destroy(&f);
        tsdb_error_set(err, 500, "out of memory");
        return -1;
    }
    s->filters = p;
    p[s->nfilters++] = f;
    return 0;
}

int
tsdb_query__set_str(char **dst, const char *src, tsdb_error_t *err)
{
    char *c = NULL;
    if (src && !(c = strdup(src))) {
        tsdb_error_set(err, 500, "out of memory");
        return -1;
    }
    free(*dst);
    *dst = c;
    return 0;
}

static void
s_sub_free(tsdb_subq_t *s)
{
    tsdb_query__clear_filters(s);
    free(s->metric);
    free(s->aggregator);
    free(s->downsample);
}

void
tsdb_query_destroy(tsdb_query_t **q_p)
{
    if (!q_p || !*q_p)
        return;
    tsdb_query_t *q = *q_p;
    for (size_t i = 0; i < q->nsubs; i++)
        s_sub_free(&q->subs[i]);
    free(q->subs);
    free(q->start);
    free(q->end);
    free(q);
    *q_p = NULL;
}

static int
s_streq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Sub-queries equal as OpenTSDB's TSSubQuery.equals() sees them. */
static int
s_sub_equal(const tsdb_subq_t *a, const tsdb_subq_t *b)
{
    if (!s_streq(a->aggregator, b->aggregator)
        || !s_streq(a->metric, b->metric)
        || !s_streq(a->downsample, b->downsample) || a->rate != b->rate
        || a->explicit_tags != b->explicit_tags
        || a->has_rate_options != b->has_rate_options
        || a->nfilters != b->nfilters)
        return 0;
    if (a->has_rate_options
        && (a->counter != b->counter || a->drop_resets != b->drop_resets
            || a->counter_max != b->counter_max
            || a->reset_value != b->reset_value))
        return 0;
    for (size_t i = 0; i < a->nfilters; i++)
        if (!tsdb_filter_equal(a->filters[i], b->filters[i]))
            return 0;
    return 1;
}

/* Keeps the first of equal sub-queries, in order, and numbers them. */
static void
s_dedup(tsdb_query_t *q)
{
    size_t k = 0;
    for (size_t i = 0; i < q->nsubs; i++) {
        int dup = 0;
        for (size_t j = 0; j < k && !dup; j++)
            dup = s_sub_equal(&q->subs[j], &q->subs[i]);
        if (dup) {
            s_sub_free(&q->subs[i]);
            continue;
        }
        q->subs[k] = q->subs[i];
        q->subs[k].index = k;
        k++;
    }
    q->nsubs = k;
}

static int
s_validate_sub(tsdb_subq_t *s, tsdb_error_t *err)
{
    char why[256];
    if (!s->aggregator || !*s->aggregator) {
        tsdb_error_set(err, 400, "Missing the aggregation function");
        return -1;
    }
    if (tsdb_agg_parse(s->aggregator, &s->agg)) {
        tsdb_error_set(err, 400, "No such aggregation function: %.200s",
                       s->aggregator);
        return -1;
    }
    if (!s->metric || !*s->metric) {
        tsdb_error_set(err, 400,
                       "Missing the metric or tsuids, provide at least one");
        return -1;
    }
    if (s->downsample && !*s->downsample) {
        free(s->downsample);           /* "" is no downsampling */
        s->downsample = NULL;
    }
    if (s->downsample
        && tsdb_downsample_parse(s->downsample, &s->ds, why, sizeof why)) {
        tsdb_error_set(err, 400, "Invalid downsampling specifier: %s", why);
        return -1;
    }
    return 0;
}

int
tsdb_query__validate(tsdb_query_t *q, int64_t now_ms, tsdb_error_t *err)
{
    char why[256];
    if (!q->start || !*q->start) {
        tsdb_error_set(err, 400, "Missing start time");
        return -1;
    }
    if (tsdb_time_parse(q->start, now_ms, &q->start_ms, why, sizeof why)) {
        tsdb_error_set(err, 400, "Invalid start time: %s", why);
        return -1;
    }
    q->end_ms = now_ms;
    if (q->end && *q->end
        && tsdb_time_parse(q->end, now_ms, &q->end_ms, why, sizeof why)) {
        tsdb_error_set(err, 400, "Invalid end time: %s", why);
        return -1;
    }
    if (q->end_ms < q->start_ms) {
        tsdb_error_set(err, 400, "End time [%lld] must be greater than or "
                       "equal to the start time [%lld]",
                       (long long) q->end_ms, (long long) q->start_ms);
        return -1;
    }
    if (q->nsubs == 0) {
        tsdb_error_set(err, 400, "Missing queries");
        return -1;
    }
    for (size_t i = 0; i < q->nsubs; i++)
        if (s_validate_sub(&q->subs[i], err))
            return -1;
    s_dedup(q);
    return 0;
}

tsdb_rate_opts_t
tsdb_query__rate_opts(const tsdb_subq_t *s)
{
    tsdb_rate_opts_t o = tsdb_rate_defaults();
    o.counter = s->counter;
    o.drop_resets = s->drop_resets;
    o.counter_max = (double) s->counter_max;
    o.reset_value = (double) s->reset_value;
    return o;
}

/* OpenTSDB's scan bounds are whole seconds and its rows hold an hour. */
#define S_ROW_S 3600

void
tsdb_query_scan_ms(const tsdb_query_t *q, size_t i, int64_t *start_ms,
                   int64_t *end_ms)
{
    const tsdb_subq_t *s = i < q->nsubs ? &q->subs[i] : NULL;
    int64_t iv = s && s->downsample ? s->ds.interval_ms : 0;
    int64_t a = q->start_ms / 1000;              /* start, in seconds */
    if (iv > 0)
        a -= ((a * 1000) % iv) / 1000;
    a -= a % S_ROW_S;
    /* The end in ms becomes seconds, then one more (OpenTSDB's own
       rounding of an end given in ms, which a TSQuery's always is). */
    int64_t b = q->end_ms / 1000 + 1;
    if (iv > 0) {
        b += (iv - (b * 1000) % iv) / 1000;
        if (b % S_ROW_S)
            b += S_ROW_S - b % S_ROW_S;
    } else {
        b += S_ROW_S - b % S_ROW_S;
    }
    *start_ms = a > 0 ? a * 1000 : 0;
    *end_ms = b * 1000 - 1;
}

int64_t tsdb_query_start_ms(const tsdb_query_t *q) { return q->start_ms; }
int64_t tsdb_query_end_ms(const tsdb_query_t *q) { return q->end_ms; }
size_t tsdb_query_count(const tsdb_query_t *q) { return q->nsubs; }
int tsdb_query_arrays(const tsdb_query_t *q) { return q->arrays; }
int tsdb_query_ms_resolution(const tsdb_query_t *q)
{
    return q->ms_resolution;
}
int tsdb_query_show_query(const tsdb_query_t *q) { return q->show_query; }
int tsdb_query_global_annotations(const tsdb_query_t *q)
{
    return q->global_annotations;
}
int tsdb_query_no_annotations(const tsdb_query_t *q)
{
    return q->no_annotations;
}
void tsdb_query_set_arrays(tsdb_query_t *q, int on) { q->arrays = !!on; }
void tsdb_query_set_ms_resolution(tsdb_query_t *q, int on)
{
    q->ms_resolution = !!on;
}
void tsdb_query_set_show_query(tsdb_query_t *q, int on)
{
    q->show_query = !!on;
}

const char *
tsdb_query_metric(const tsdb_query_t *q, size_t i)
{
    return i < q->nsubs ? q->subs[i].metric : NULL;
}

long
tsdb_query_hosts(const tsdb_query_t *q, size_t i, const char **names,
                 size_t cap)
{
    if (i >= q->nsubs)
        return -1;
    const tsdb_subq_t *s = &q->subs[i];
    for (size_t k = 0; k < s->nfilters; k++) {
        if (strcmp(tsdb_filter_tagk(s->filters[k]), "host") != 0)
            continue;
        long n = tsdb_filter_literals(s->filters[k], names, cap);
        if (n >= 0)
            return (size_t) n > cap ? -1 : n;
    }
    return -1;
}

static json_t *
s_rate_options_json(const tsdb_subq_t *s)
{
    if (!s->has_rate_options)
        return json_null();
    return json_pack("{s:b, s:I, s:I, s:b}", "counter", s->counter,
                     "counterMax", (json_int_t) s->counter_max, "resetValue",
                     (json_int_t) s->reset_value, "dropResets",
                     s->drop_resets);
}

/* "filters" and "tags" (grouped filters as "type(filter)"). */
static int
s_filters_json(const tsdb_subq_t *s, json_t *o)
{
    json_t *fs = json_array(), *tags = json_object();
    int rc = !fs || !tags || json_object_set(o, "filters", fs)
             || json_object_set(o, "tags", tags);
    for (size_t i = 0; !rc && i < s->nfilters; i++) {
        const tsdb_filter_t *f = s->filters[i];
        rc = json_array_append_new(fs, tsdb_filter_to_json(f));
        if (!rc && tsdb_filter_group_by(f)) {
            char *v = NULL;
            rc = asprintf(&v, "%s(%s)", tsdb_filter_type_name(f),
                          tsdb_filter_string(f)) < 0
                 || json_object_set_new(tags, tsdb_filter_tagk(f),
                                        json_string(v));
            free(v);
        }
    }
    json_decref(fs);
    json_decref(tags);
    return rc ? -1 : 0;
}

json_t *
tsdb_query_to_json(const tsdb_query_t *q, size_t i)
{
    if (i >= q->nsubs)
        return NULL;
    const tsdb_subq_t *s = &q->subs[i];
    json_t *o = json_pack(
        "{s:s?, s:s?, s:n, s:s?, s:b, s:o, s:b, s:n, s:I, s:b, s:b, s:b,"
        " s:n, s:s}",
        "aggregator", s->aggregator, "metric", s->metric, "tsuids",
        "downsample", s->downsample, "rate", s->rate, "rateOptions",
        s_rate_options_json(s), "explicitTags", s->explicit_tags,
        "percentiles", "index", (json_int_t) s->index, "useMultiGets", 1,
        "useFuzzyFilter", 1, "preAggregate", 0, "rollupUsage",
        "rollupTable", "raw");
    if (o && s_filters_json(s, o)) {
        json_decref(o);
        return NULL;
    }
    return o;
}
