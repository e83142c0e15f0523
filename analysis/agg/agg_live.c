/* agg_live.c - the live data source (agg_src.h): the job's nodes through
 * the analysis client, what telem_agg has always answered from.
 *
 * Each call borrows one client of the aggregator's pool (agg.c), asks,
 * and hands the result over as rows without a copy.  Node names the job
 * does not have are dropped from a query (they can only be asked of this
 * job's nodes); the job data object, annotations and the job's own series
 * come from the run directory (agg_job.c); put and reboot reach the nodes
 * and the launcher (agg_ops.c). */
#include "agg.h"

#include <stdlib.h>
#include <string.h>

#include "telem_error.h"

#define S_NODES_MAX 256

static int
s_query(void *src, const agg_src_query_t *q, agg_rows_t **out, char *why,
        size_t why_size)
{
    agg_t *self = src;
    *out = NULL;
    ac_t *ac = agg_ac_get(self, why, why_size);
    if (!ac)
        return TELEM_ECONN;
    const char *names[S_NODES_MAX];
    size_t k = 0;
    for (size_t i = 0; q->nodes && i < q->nnodes && k < S_NODES_MAX; i++)
        if (ac_node_find(ac, q->nodes[i]) >= 0)
            names[k++] = q->nodes[i];
    ac_query_t aq = { 0 };
    aq.metrics = q->metric ? &q->metric : NULL;
    aq.nmetrics = q->metric ? 1 : 0;
    aq.start_ns = q->start_ns;
    aq.end_ns = q->end_ns;
    aq.flags = q->flags;
    aq.nodes = q->nodes ? names : NULL;
    aq.nnodes = q->nodes ? k : 0;
    aq.timeout_ms = q->timeout_ms;
    ac_result_t *r = NULL;
    int rc = q->nodes && k == 0 ? 0 : ac_query(ac, &aq, &r);
    agg_ac_put(self, ac);
    if (q->nodes && k == 0)
        *out = agg_rows_new();
    else if (r)
        *out = agg_rows_from_ac(&r);
    else
        snprintf(why, why_size, "the query could not be sent: %s",
                 telem_strerror(rc));
    if (!*out && !rc)
        rc = TELEM_ENOMEM;
    return rc;
}

static int
s_has_node(void *src, const char *node)
{
    agg_t *self = src;
    char why[512];
    ac_t *ac = agg_ac_get(self, why, sizeof why);
    int has = ac && ac_node_find(ac, node) >= 0;
    if (ac)
        agg_ac_put(self, ac);
    return has;
}

static json_t *
s_job(void *src)
{
    return agg_job_data(src);
}

static json_t *
s_annotations(void *src, int64_t start_ms, int64_t end_ms)
{
    return agg_annotations(src, start_ms, end_ms);
}

static agg_job_series_t *
s_job_series(void *src, const char *metric, size_t *n)
{
    return agg_job_series(src, metric, n);
}

/* The node's snapshot through ac_snapshot() (that node alone asked). */
static int
s_snapshot(void *src, const char *node, int timeout_ms, char **json,
           size_t *len, char *why, size_t why_size)
{
    agg_t *self = src;
    ac_t *ac = agg_ac_get(self, why, why_size);
    if (!ac)
        return TELEM_ECONN;
    long i = ac_node_find(ac, node);
    if (i < 0) {
        agg_ac_put(self, ac);
        snprintf(why, why_size, "%s is not in the job's node file (no "
                 "telemd of the job runs there)", node);
        return TELEM_ENOTFOUND;
    }
    ac_snapshot_result_t *r = NULL;
    int rc = ac_snapshot(ac, i, timeout_ms, &r);
    agg_ac_put(self, ac);
    size_t n = r ? ac_snapshot_result_count(r) : 0;
    const char *text = n ? ac_snapshot_result_json(r, 0, len) : NULL;
    if (text) {
        rc = (*json = strdup(text)) ? 0 : TELEM_ENOMEM;
    } else {
        if (n && ac_snapshot_result_code(r, 0))
            rc = ac_snapshot_result_code(r, 0);
        rc = rc ? rc : TELEM_ENOTFOUND;
        snprintf(why, why_size, "%s: %s", node,
                 n ? ac_snapshot_result_message(r, 0) : telem_strerror(rc));
    }
    ac_snapshot_result_destroy(&r);
    return rc;
}

static void
s_put(void *src, telem_http_req_t *req)
{
    agg_put(src, req);
}

static void
s_reboot(void *src, telem_http_req_t *req)
{
    agg_reboot(src, req);
}

const agg_src_vt_t agg_live_vt = {
    .name = "telem_agg",
    .query = s_query,
    .has_node = s_has_node,
    .job = s_job,
    .annotations = s_annotations,
    .job_series = s_job_series,
    .snapshot = s_snapshot,
    .put = s_put,
    .reboot = s_reboot,
};
