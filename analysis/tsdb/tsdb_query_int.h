/* tsdb_query_int.h - PRIVATE to analysis/tsdb: the parsed query's
 * layout, shared by its two parsers (tsdb_query_json.c for the POST
 * body, tsdb_query_uri.c for GET's arguments), its validation and
 * accessors (tsdb_query.c) and the executor (tsdb_exec.c). */
#ifndef TSDB_QUERY_INT_H
#define TSDB_QUERY_INT_H

#include "tsdb_query.h"

typedef struct {
    char *metric;
    char *aggregator;          /* as given; NULL when missing */
    tsdb_agg_t agg;            /* set by validation */
    char *downsample;          /* as given; NULL when none */
    tsdb_downsample_t ds;      /* set by validation when downsample */
    int rate;
    int has_rate_options;      /* echoed as null when not given */
    int counter, drop_resets;
    int64_t counter_max, reset_value;
    tsdb_filter_t **filters;
    size_t nfilters;
    int explicit_tags;
    size_t index;
} tsdb_subq_t;

struct tsdb_query {
    char *start, *end;         /* as given; end NULL when none */
    int64_t start_ms, end_ms;
    int ms_resolution, show_query, arrays;
    int global_annotations, no_annotations;
    tsdb_subq_t *subs;
    size_t nsubs;
};

/* An empty query; NULL out of memory (err filled, 500). */
tsdb_query_t *tsdb_query__new(tsdb_error_t *err);

/* Appends an empty sub-query with OpenTSDB's defaults; NULL out of
 * memory (err filled). */
tsdb_subq_t *tsdb_query__add_sub(tsdb_query_t *q, tsdb_error_t *err);

/* Frees the sub-query's filters (the "tags"/"filters" replace rule). */
void tsdb_query__clear_filters(tsdb_subq_t *s);

/* Appends f to s's filters, taking it (also on failure: then it is
 * freed).  0, or -1 out of memory with err filled. */
int tsdb_query__add_filter(tsdb_subq_t *s, tsdb_filter_t *f,
                           tsdb_error_t *err);

/* Sets a string field (*dst) to a copy of src (NULL clears).  0 or -1. */
int tsdb_query__set_str(char **dst, const char *src, tsdb_error_t *err);

/* Validates as OpenTSDB's validateAndSetQuery(): times, sub-queries,
 * aggregators, downsampling; drops repeated sub-queries and numbers the
 * rest.  0, or -1 with err filled. */
int tsdb_query__validate(tsdb_query_t *q, int64_t now_ms, tsdb_error_t *err);

/* The rate options of s for tsdb_rate_run(). */
tsdb_rate_opts_t tsdb_query__rate_opts(const tsdb_subq_t *s);

#endif
