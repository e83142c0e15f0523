/* agg_src.h - PRIVATE to telem_agg and telem_view: where the HTTP front
 * end's data comes from.
 *
 * One HTTP front end (agg.c and the endpoint files) answers OpenTSDB's API
 * and the dashboard's requests; what it answers from is a data source
 * behind this small interface, with two implementations:
 *   live  (agg_live.c)  the job's nodes through the analysis client (ac.h),
 *                       one deadline per request, missing nodes named;
 *   dump  (agg_dump.c)  dump and segment files through the history index
 *                       (telem_hist.h): a finished job, nothing missing.
 * Endpoints that change the job (put, reboot) exist only where the source
 * gives them; elsewhere they answer an OpenTSDB-shaped 501.
 *
 * Rows (agg_rows_t) are what a source answers: series with the name of the
 * node each came from, in the analysis client's order (metric, tags, node),
 * and the nodes that did not answer.  A live source's rows wrap the client's
 * result without a copy; a dump source's rows own copies.
 *
 * Thread safety: a source's functions run on the HTTP module's worker
 * threads, several at once; every implementation is safe for that.  Rows
 * belong to the thread that asked for them. */
#ifndef AGG_SRC_H
#define AGG_SRC_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ac.h"
#include "telem_http.h"
#include "telem_types.h"

/* ---- rows (agg_rows.c) ------------------------------------------------- */

typedef struct agg_rows agg_rows_t;

/* Empty rows, or NULL when out of memory. */
agg_rows_t *agg_rows_new(void);

/* Rows over an analysis-client result, which they take (*r_p nulled).
 * NULL (and the result freed) when out of memory. */
agg_rows_t *agg_rows_from_ac(ac_result_t **r_p);

/* Adds a copy of series s (strings, tags, points) from node `node`.
 * 0 or TELEM_ENOMEM. */
int agg_rows_add(agg_rows_t *self, const char *node, const telem_series_t *s);

/* Names a node that did not answer, with a sentence (copied).  0 or
 * TELEM_ENOMEM. */
int agg_rows_add_missing(agg_rows_t *self, const char *node, const char *why);

/* Sorts by metric, then tags (key, value, in order), then node: the
 * analysis client's order. */
void agg_rows_sort(agg_rows_t *self);

size_t agg_rows_count(const agg_rows_t *self);
const telem_series_t *agg_rows_series(const agg_rows_t *self, size_t i);
const char *agg_rows_node(const agg_rows_t *self, size_t i);
size_t agg_rows_nmissing(const agg_rows_t *self);
const char *agg_rows_missing(const agg_rows_t *self, size_t i);
const char *agg_rows_missing_message(const agg_rows_t *self, size_t i);

/* Accepts NULL or a pointer to NULL; nulls the pointer. */
void agg_rows_destroy(agg_rows_t **self_p);

/* ---- the source -------------------------------------------------------- */

/* What a source is asked for: one metric (or every metric), some nodes (or
 * every node), an absolute range, points or only the catalog. */
typedef struct {
    const char *metric;            /* NULL: every metric */
    const char *const *nodes;      /* NULL: every node */
    size_t nnodes;
    int64_t start_ns;              /* realtime, absolute */
    int64_t end_ns;
    uint32_t flags;                /* TELEM_QUERY_LIST: no points */
    int timeout_ms;                /* what is left of the request's deadline */
} agg_src_query_t;

typedef struct agg_job_series agg_job_series_t;

typedef struct {
    const char *name;              /* "telem_agg", "telem_view" */
    /* Answers q: 0, TELEM_EPARTIAL (some nodes missing, named in the rows)
     * or TELEM_ETIMEDOUT with *out; *out NULL when nothing could be asked
     * (a sentence in why: 503 for the client). */
    int (*query)(void *src, const agg_src_query_t *q, agg_rows_t **out,
                 char *why, size_t why_size);
    /* 1 when `node` is one of the source's nodes. */
    int (*has_node)(void *src, const char *node);
    /* The job data object of analysis/web/telem_web.h, without series. */
    json_t *(*job)(void *src);
    /* OpenTSDB annotations in [start_ms, end_ms] (an array, maybe empty). */
    json_t *(*annotations)(void *src, int64_t start_ms, int64_t end_ms);
    /* The job's own series (agg.h's agg_job_series), or NULL. */
    agg_job_series_t *(*job_series)(void *src, const char *metric,
                                    size_t *n);
    /* Node `node`'s system snapshot: 0 with *json (malloc'd, NUL-ended,
     * the caller frees) and *len; TELEM_ENOTFOUND (no such node, or it has
     * no snapshot), TELEM_ETIMEDOUT / TELEM_ECONN (the node did not
     * answer) or TELEM_ENOMEM, with a sentence in why. */
    int (*snapshot)(void *src, const char *node, int timeout_ms, char **json,
                    size_t *len, char *why, size_t why_size);
    /* The endpoints that change the job; NULL where the source has none. */
    void (*put)(void *src, telem_http_req_t *req);
    void (*reboot)(void *src, telem_http_req_t *req);
} agg_src_vt_t;

/* OpenTSDB's annotation objects of the events and restarts (the arrays of
 * telem_web_job.h) in [start_ms, end_ms], events first: what both sources
 * answer (agg_job.c).  A new array (maybe empty); NULL arguments are empty
 * arrays. */
json_t *agg_annotations_of(json_t *events, json_t *restarts,
                           int64_t start_ms, int64_t end_ms);

#endif
