/* tsdb_query_json.c - parses /api/query's POST body (tsdb_query.h) with
 * jansson: each object's fields are looked up in a table of the fields
 * OpenTSDB's TSQuery, TSSubQuery, RateOptions and TagVFilter know, each
 * with the function that checks its JSON type and stores it.  The query
 * is then validated as OpenTSDB validates it (tsdb_query.c). */
#include "tsdb_query_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*s_set_fn)(void *obj, const char *path, json_t *v,
                        tsdb_error_t *err);

typedef struct {
    const char *name;
    s_set_fn set;
} s_field_t;

#define S_PARSE "Unable to parse the given JSON"

static int
s_type_error(const char *path, const char *what, tsdb_error_t *err)
{
    tsdb_error_set(err, 400, S_PARSE ": '%.200s' must be %s", path, what);
    tsdb_error_details(err, "field '%.200s'", path);
    return -1;
}

static int
s_unsupported(const char *path, const char *why, tsdb_error_t *err)
{
    tsdb_error_set(err, 400, "'%.200s' is not supported: %s", path, why);
    tsdb_error_details(err, "field '%.200s'", path);
    return -1;
}

/* Runs the table's setter for every field of o; an unknown one is a 400. */
static int
s_fields(const s_field_t *tab, size_t n, void *obj, json_t *o,
         const char *path, tsdb_error_t *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        char sub[256];
        snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", key);
        size_t i = 0;
        while (i < n && strcmp(tab[i].name, key) != 0)
            i++;
        if (i == n) {
            tsdb_error_set(err, 400, S_PARSE ": unknown field '%.200s'", sub);
            tsdb_error_details(err, "field '%.200s'", sub);
            return -1;
        }
        if (tab[i].set(obj, sub, v, err))
            return -1;
    }
    return 0;
}

/* A bool (null: false, as Jackson leaves a primitive). */
static int
s_bool(const char *path, json_t *v, int *out, tsdb_error_t *err)
{
    if (json_is_null(v)) {
        *out = 0;
        return 0;
    }
    if (!json_is_boolean(v))
        return s_type_error(path, "true or false", err);
    *out = json_is_true(v);
    return 0;
}

/* A string or null into *dst. */
static int
s_str(const char *path, json_t *v, char **dst, tsdb_error_t *err)
{
    if (!json_is_null(v) && !json_is_string(v))
        return s_type_error(path, "a string", err);
    return tsdb_query__set_str(dst, json_string_value(v), err);
}

/* A time: a string, or an integer (Jackson makes a number a string). */
static int
s_time(const char *path, json_t *v, char **dst, tsdb_error_t *err)
{
    if (json_is_integer(v)) {
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", (long long) json_integer_value(v));
        return tsdb_query__set_str(dst, buf, err);
    }
    if (!json_is_null(v) && !json_is_string(v))
        return s_type_error(path, "a time (a string or an integer)", err);
    return tsdb_query__set_str(dst, json_string_value(v), err);
}

/* A bool that telem can honour only when false. */
static int
s_false_only(const char *path, json_t *v, const char *why, tsdb_error_t *err)
{
    int on;
    if (s_bool(path, v, &on, err))
        return -1;
    return on ? s_unsupported(path, why, err) : 0;
}

/* An array that telem can honour only when empty (or null). */
static int
s_empty_only(const char *path, json_t *v, const char *why, tsdb_error_t *err)
{
    if (!json_is_null(v) && !json_is_array(v))
        return s_type_error(path, "an array", err);
    return json_array_size(v) ? s_unsupported(path, why, err) : 0;
}

/* ---- RateOptions ---- */

static int
s_r_counter(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    return s_bool(p, v, &((tsdb_subq_t *) o)->counter, e);
}

static int
s_r_drop(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    return s_bool(p, v, &((tsdb_subq_t *) o)->drop_resets, e);
}

static int
s_int64(const char *path, json_t *v, int64_t *out, tsdb_error_t *err)
{
    if (json_is_null(v))
        return 0;                          /* the default stays */
    if (!json_is_integer(v))
        return s_type_error(path, "an integer", err);
    *out = json_integer_value(v);
    return 0;
}

static int
s_r_max(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    return s_int64(p, v, &((tsdb_subq_t *) o)->counter_max, e);
}

static int
s_r_reset(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    return s_int64(p, v, &((tsdb_subq_t *) o)->reset_value, e);
}

static const s_field_t s_rate_fields[] = {
    { "counter", s_r_counter }, { "isCounter", s_r_counter },
    { "counterMax", s_r_max },  { "resetValue", s_r_reset },
    { "dropResets", s_r_drop },
};

/* ---- TagVFilter ---- */

typedef struct {
    char *type, *tagk, *filter;
    int group_by;
} s_filter_spec_t;

static int
s_f_type(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    return s_str(p, v, &((s_filter_spec_t *) o)->type, e);
}

static int
s_f_tagk(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    return s_str(p, v, &((s_filter_spec_t *) o)->tagk, e);
}

static int
s_f_filter(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    return s_str(p, v, &((s_filter_spec_t *) o)->filter, e);
}

static int
s_f_group(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    return s_bool(p, v, &((s_filter_spec_t *) o)->group_by, e);
}

static const s_field_t s_filter_fields[] = {
    { "type", s_f_type },     { "tagk", s_f_tagk },
    { "filter", s_f_filter }, { "groupBy", s_f_group },
    { "group_by", s_f_group },
};

static int
s_one_filter(tsdb_subq_t *s, const char *path, json_t *v, tsdb_error_t *err)
{
    if (!json_is_object(v))
        return s_type_error(path, "an object {type, tagk, filter, groupBy}",
                            err);
    s_filter_spec_t spec = { 0 };
    int rc = s_fields(s_filter_fields, sizeof s_filter_fields
                      / sizeof *s_filter_fields, &spec, v, path, err);
    if (!rc) {
        tsdb_filter_t *f = tsdb_filter_new(spec.type, spec.tagk, spec.filter,
                                           spec.group_by, err);
        if (!f) {
            tsdb_error_details(err, "filter '%.200s'", path);
            rc = -1;
        } else
            rc = tsdb_query__add_filter(s, f, err);
    }
    free(spec.type);
    free(spec.tagk);
    free(spec.filter);
    return rc;
}

/* ---- TSSubQuery ---- */

static int
s_s_aggregator(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    return s_str(p, v, &((tsdb_subq_t *) o)->aggregator, e);
}

static int
s_s_metric(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    return s_str(p, v, &((tsdb_subq_t *) o)->metric, e);
}

static int
s_s_downsample(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    return s_str(p, v, &((tsdb_subq_t *) o)->downsample, e);
}

static int
s_s_rate(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    return s_bool(p, v, &((tsdb_subq_t *) o)->rate, e);
}

static int
s_s_explicit(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    return s_bool(p, v, &((tsdb_subq_t *) o)->explicit_tags, e);
}

static int
s_s_rate_options(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    tsdb_subq_t *s = o;
    if (json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return s_type_error(p, "an object {counter, counterMax, "
                            "resetValue, dropResets}", e);
    s->has_rate_options = 1;
    return s_fields(s_rate_fields, sizeof s_rate_fields
                    / sizeof *s_rate_fields, s, v, p, e);
}

static int
s_s_filters(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    tsdb_subq_t *s = o;
    tsdb_query__clear_filters(s);           /* replaces "tags" */
    if (json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return s_type_error(p, "an array of filters", e);
    size_t i;
    json_t *f;
    json_array_foreach(v, i, f) {
        char sub[256];
        snprintf(sub, sizeof sub, "%s[%zu]", p, i);
        if (s_one_filter(s, sub, f, e))
            return -1;
    }
    return 0;
}

static int
s_s_tags(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    tsdb_subq_t *s = o;
    tsdb_query__clear_filters(s);           /* replaces "filters" */
    if (json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return s_type_error(p, "an object {tagk: value}", e);
    const char *k;
    json_t *t;
    json_object_foreach(v, k, t) {
        char sub[256];
        snprintf(sub, sizeof sub, "%s.%s", p, k);
        if (!json_is_string(t))
            return s_type_error(sub, "a string", e);
        tsdb_filter_t *f = tsdb_filter_from_tag(k, json_string_value(t), 1,
                                                e);
        if (!f) {
            tsdb_error_details(e, "tag '%.200s'", sub);
            return -1;
        }
        if (tsdb_query__add_filter(s, f, e))
            return -1;
    }
    return 0;
}

static int
s_s_tsuids(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    (void) o;
    return s_empty_only(p, v, "telem has no TSUIDs; query by metric and "
                        "filters", e);
}

static int
s_s_percentiles(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    (void) o;
    return s_empty_only(p, v, "telem keeps no histograms", e);
}

static int
s_s_histogram(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    (void) o;
    return s_false_only(p, v, "telem keeps no histograms", e);
}

static int
s_s_preagg(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    (void) o;
    return s_false_only(p, v, "telem keeps no pre-aggregated series", e);
}

static int
s_ignored_bool(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    int on;
    (void) o;
    return s_bool(p, v, &on, e);
}

static int
s_ignored_str(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    (void) o;
    if (!json_is_null(v) && !json_is_string(v))
        return s_type_error(p, "a string", e);
    return 0;
}

static int
s_s_index(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    (void) o;
    if (!json_is_null(v) && !json_is_integer(v))
        return s_type_error(p, "an integer", e);
    return 0;
}

static const s_field_t s_sub_fields[] = {
    { "aggregator", s_s_aggregator },  { "metric", s_s_metric },
    { "downsample", s_s_downsample },  { "rate", s_s_rate },
    { "rateOptions", s_s_rate_options }, { "filters", s_s_filters },
    { "tags", s_s_tags },              { "explicitTags", s_s_explicit },
    { "tsuids", s_s_tsuids },          { "percentiles", s_s_percentiles },
    { "showHistogramBuckets", s_s_histogram },
    { "preAggregate", s_s_preagg },    { "index", s_s_index },
    { "useFuzzyFilter", s_ignored_bool },
    { "useMultiGets", s_ignored_bool }, { "rollupUsage", s_ignored_str },
};

/* ---- TSQuery ---- */

static int
s_q_start(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    return s_time(p, v, &((tsdb_query_t *) o)->start, e);
}

static int
s_q_end(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    return s_time(p, v, &((tsdb_query_t *) o)->end, e);
}

static int
s_q_queries(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    tsdb_query_t *q = o;
    if (json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return s_type_error(p, "an array of sub-queries", e);
    size_t i;
    json_t *sq;
    json_array_foreach(v, i, sq) {
        char sub[64];
        snprintf(sub, sizeof sub, "%s[%zu]", p, i);
        if (!json_is_object(sq))
            return s_type_error(sub, "an object", e);
        tsdb_subq_t *s = tsdb_query__add_sub(q, e);
        if (!s || s_fields(s_sub_fields, sizeof s_sub_fields
                           / sizeof *s_sub_fields, s, sq, sub, e))
            return -1;
    }
    return 0;
}

static int
s_q_ms(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    return s_bool(p, v, &((tsdb_query_t *) o)->ms_resolution, e);
}

static int
s_q_show_query(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    return s_bool(p, v, &((tsdb_query_t *) o)->show_query, e);
}

static int
s_q_global(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    return s_bool(p, v, &((tsdb_query_t *) o)->global_annotations, e);
}

static int
s_q_no_ann(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    return s_bool(p, v, &((tsdb_query_t *) o)->no_annotations, e);
}

static int
s_q_delete(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    (void) o;
    return s_false_only(p, v, "telem does not delete data", e);
}

static int
s_q_calendar(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    (void) o;
    return s_false_only(p, v, "telem has no calendar downsampling", e);
}

static int
s_q_tsuids(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    (void) o;
    return s_false_only(p, v, "telem has no TSUIDs", e);
}

static int
s_q_timezone(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    (void) o;
    if (json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return s_type_error(p, "a string", e);
    static const char *const utc[] = { "", "UTC", "Etc/UTC", "GMT", "Z" };
    for (size_t i = 0; i < sizeof utc / sizeof *utc; i++)
        if (strcmp(json_string_value(v), utc[i]) == 0)
            return 0;
    return s_unsupported(p, "telem's times are UTC", e);
}

static int
s_q_options(void *o, const char *p, json_t *v, tsdb_error_t *e)
{
    (void) o;
    if (!json_is_null(v) && !json_is_object(v))
        return s_type_error(p, "an object", e);
    return 0;
}

static const s_field_t s_query_fields[] = {
    { "start", s_q_start },            { "end", s_q_end },
    { "queries", s_q_queries },        { "msResolution", s_q_ms },
    { "showQuery", s_q_show_query },   { "globalAnnotations", s_q_global },
    { "noAnnotations", s_q_no_ann },   { "padding", s_ignored_bool },
    { "showSummary", s_ignored_bool }, { "showStats", s_ignored_bool },
    { "showTSUIDs", s_q_tsuids },      { "delete", s_q_delete },
    { "useCalendar", s_q_calendar },   { "timezone", s_q_timezone },
    { "options", s_q_options },
};

tsdb_query_t *
tsdb_query_parse_json(const char *body, size_t len, int64_t now_ms,
                      tsdb_error_t *err)
{
    if (!body || len == 0) {
        tsdb_error_set(err, 400, "Missing message content");
        tsdb_error_details(err, "Supply valid JSON formatted data in the "
                           "body of your request");
        return NULL;
    }
    json_error_t je;
    json_t *root = json_loadb(body, len, 0, &je);
    if (!root) {
        tsdb_error_set(err, 400, S_PARSE ": %s", je.text);
        tsdb_error_details(err, "line %d, column %d", je.line, je.column);
        return NULL;
    }
    tsdb_query_t *q = NULL;
    if (!json_is_object(root))
        s_type_error("(the body)", "a JSON object", err);
    else if ((q = tsdb_query__new(err))
             && (s_fields(s_query_fields, sizeof s_query_fields
                          / sizeof *s_query_fields, q, root, "", err)
                 || tsdb_query__validate(q, now_ms, err)))
        tsdb_query_destroy(&q);
    json_decref(root);
    return q;
}
