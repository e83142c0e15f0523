/* agg_query.c - /api/query: OpenTSDB's query over every node of the job.
 *
 * The request (a JSON body, or the query string of a GET) is parsed by
 * analysis/tsdb into sub-queries; each sub-query's metric is fetched from
 * the data source (agg_src.h: the nodes through the analysis client, or
 * dump files) in one call (narrowed to the hosts a
 * literal host filter names), and analysis/tsdb turns the series into
 * OpenTSDB's results: filters, grouping, downsampling, rate and
 * aggregation across series.  Every call shares the request's deadline:
 * a sub-query starts with what is left of it, so a dead node costs one
 * deadline per request, not one per sub-query.
 *
 * A metric no node knows is OpenTSDB's 400 "No such name for 'metrics'"
 * (what OpenTSDB 2.4's QueryRpc answers); a known metric without points in
 * the range gives no result, as there.  With "globalAnnotations" every
 * result carries the job's detector events and restarts in the range
 * (agg_job.c), which Grafana shows as annotations. */
#include "agg.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_time.h"
#include "tsdb_exec.h"
#include "tsdb_query.h"
#include "tsdb_time.h"

#define S_HOSTS_MAX 256

static tsdb_query_t *
s_parse(telem_http_req_t *req, int64_t now_ms, tsdb_error_t *err)
{
    size_t n = telem_http_req_nargs(req);
    if (strcmp(telem_http_req_method(req), "POST") != 0) {
        const char **k = calloc(n + 1, sizeof *k), **v = calloc(n + 1,
                                                                 sizeof *v);
        tsdb_query_t *q = NULL;
        if (k && v) {
            for (size_t i = 0; i < n; i++) {
                k[i] = telem_http_req_arg_key(req, i);
                v[i] = telem_http_req_arg_value(req, i);
            }
            q = tsdb_query_parse_args(k, v, n, now_ms, err);
        } else
            tsdb_error_set(err, 500, "out of memory");
        free(k);
        free(v);
        return q;
    }
    size_t len = 0;
    const char *body = telem_http_req_body(req, &len);
    tsdb_query_t *q = tsdb_query_parse_json(body, len, now_ms, err);
    /* OpenTSDB reads `arrays` from the query string, POST or not. */
    const char *arrays = telem_http_req_arg(req, "arrays");
    if (q && arrays && strcmp(arrays, "false") != 0)
        tsdb_query_set_arrays(q, 1);
    return q;
}

/* 1 when a node that answered knows `metric` (has a series of it in its
 * retention window), 0 when none does, -1 when some node did not answer
 * (it might). */
static int
s_known(agg_t *self, const char *metric, int timeout_ms)
{
    agg_src_query_t q = { 0 };
    q.metric = metric;
    q.flags = TELEM_QUERY_LIST;
    q.timeout_ms = timeout_ms;
    agg_rows_t *r = NULL;
    char why[256];
    int rc = agg_src_vt(self)->query(agg_src(self), &q, &r, why, sizeof why);
    int known = agg_rows_count(r) > 0 ? 1 : rc == 0 && r ? 0 : -1;
    agg_rows_destroy(&r);
    return known;
}

/* A sub-query over the job's own series (agg_job.c). */
static int
s_sub_job(telem_http_req_t *req, agg_job_series_t *js, size_t n,
          const tsdb_query_t *q, size_t i, tsdb_results_t *results)
{
    tsdb_error_t err = { 0 };
    int rc = tsdb_exec_run(q, i, agg_job_series_get(js), n, results, &err);
    agg_job_series_destroy(&js);
    if (rc == 0)
        return 0;
    telem_http_reply_error(req, err.status ? err.status : 500, err.message,
                           err.details);
    return err.status ? err.status : 500;
}

/* Answers from the fetched rows: 400 for a metric no node knows, else
 * analysis/tsdb's results.  0 or the HTTP status of an answered error. */
static int
s_run(agg_t *self, telem_http_req_t *req, const tsdb_query_t *q, size_t i,
      const agg_rows_t *r, int timeout_ms, tsdb_results_t *results)
{
    const char *metric = tsdb_query_metric(q, i);
    size_t n = agg_rows_count(r);
    telem_series_t *series = calloc(n ? n : 1, sizeof *series);
    for (size_t s = 0; series && s < n; s++)
        series[s] = *agg_rows_series(r, s);
    tsdb_error_t err = { 0 };
    int status = 0;
    if (!series) {
        telem_http_reply_error(req, 500, "out of memory", "");
        status = 500;
    } else if (n == 0 && s_known(self, metric, timeout_ms) == 0) {
        char msg[TELEM_NAME_MAX + 64];
        snprintf(msg, sizeof msg, "No such name for 'metrics': '%s'", metric);
        telem_http_reply_error(req, 400, msg, msg);
        status = 400;
    } else if (tsdb_exec_run(q, i, series, n, results, &err) != 0) {
        telem_http_reply_error(req, err.status ? err.status : 500,
                               err.message, err.details);
        status = err.status ? err.status : 500;
    }
    free(series);
    return status;
}

/* Fetches sub-query i and appends its results.  0 or the HTTP status of
 * an error already answered. */
static int
s_sub(agg_t *self, telem_http_req_t *req, const tsdb_query_t *q, size_t i,
      int64_t deadline_ns, tsdb_results_t *results)
{
    const agg_src_vt_t *vt = agg_src_vt(self);
    const char *metric = tsdb_query_metric(q, i);
    size_t njob = 0;
    agg_job_series_t *js = vt->job_series ? vt->job_series(agg_src(self),
                                                           metric, &njob)
                                          : NULL;
    if (js)
        return s_sub_job(req, js, njob, q, i, results);
    const char *hosts[S_HOSTS_MAX];
    long nh = tsdb_query_hosts(q, i, hosts, S_HOSTS_MAX);
    agg_src_query_t aq = { 0 };
    aq.metric = metric;
    /* OpenTSDB computes from a wider window than it answers (a rate's
       first point, a bucket's points after the end, interpolation). */
    int64_t scan0 = 0, scan1 = 0;
    tsdb_query_scan_ms(q, i, &scan0, &scan1);
    aq.start_ns = tsdb_time_ns(scan0);
    aq.end_ns = tsdb_time_ns(scan1);
    /* Only nodes of this job can be asked: unknown names are dropped. */
    size_t k = 0;
    for (long h = 0; h < nh; h++)
        if (vt->has_node(agg_src(self), hosts[h]))
            hosts[k++] = hosts[h];
    if (nh >= 0 && k == 0)
        return 0;                          /* no node of the job matches */
    aq.nodes = nh >= 0 ? hosts : NULL;
    aq.nnodes = nh >= 0 ? k : 0;
    int64_t left_ms = (deadline_ns - telem_mono_ns()) / TELEM_NS_PER_MS;
    aq.timeout_ms = left_ms > 1 ? (int) left_ms : 1;
    agg_rows_t *r = NULL;
    char why[512] = "";
    int rc = vt->query(agg_src(self), &aq, &r, why, sizeof why);
    if (!r) {
        int status = rc == TELEM_ECONN ? 503 : 500;
        telem_http_reply_error(req, status, status == 503
                               ? "no node of the job can be asked"
                               : "the query could not be sent", why);
        return status;
    }
    agg_note_missing(self, req, r);
    int status = s_run(self, req, q, i, r, aq.timeout_ms, results);
    agg_rows_destroy(&r);
    return status;
}

static int
s_annotate(agg_t *self, const tsdb_query_t *q, tsdb_results_t *results)
{
    json_t *notes = agg_src_vt(self)->annotations(agg_src(self),
                                                  tsdb_query_start_ms(q),
                                                  tsdb_query_end_ms(q));
    int rc = notes ? tsdb_results_set(results, "globalAnnotations", notes)
                   : TELEM_ENOMEM;
    json_decref(notes);
    return rc;
}

/* The answer's text, handed to the HTTP module without a copy. */
static void
s_answer(telem_http_req_t *req, const tsdb_results_t *results)
{
    size_t len = 0;
    char *text = tsdb_results_dump(results, &len);
    if (!text)
        telem_http_reply_error(req, 500, "out of memory", "");
    else
        telem_http_reply_take(req, 200, "application/json", &text, len);
}

void
agg_query(agg_t *self, telem_http_req_t *req)
{
    int64_t deadline_ns = telem_mono_ns()
                          + (int64_t) agg_timeout_ms(self) * TELEM_NS_PER_MS;
    tsdb_error_t err = { 0 };
    tsdb_query_t *q = s_parse(req, telem_now_ns() / TELEM_NS_PER_MS, &err);
    if (!q) {
        telem_http_reply_error(req, err.status ? err.status : 400,
                               err.message, err.details);
        return;
    }
    tsdb_results_t *results = tsdb_results_new();
    int status = 0;
    if (!results) {
        telem_http_reply_error(req, 500, "out of memory", "");
        status = 500;
    }
    for (size_t i = 0; status == 0 && i < tsdb_query_count(q); i++)
        status = s_sub(self, req, q, i, deadline_ns, results);
    if (status == 0 && tsdb_query_global_annotations(q)
        && s_annotate(self, q, results) != 0) {
        telem_http_reply_error(req, 500, "out of memory", "");
        status = 500;
    }
    if (status == 0)
        s_answer(req, results);
    tsdb_results_destroy(&results);
    tsdb_query_destroy(&q);
}
