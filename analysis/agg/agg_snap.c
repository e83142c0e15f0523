/* agg_snap.c - GET /telem/snapshot?node=N: a node's system snapshot (the
 * JSON document its telemd took at start) from the data source: the live
 * node through ac_snapshot() in telem_agg, the files' newest SNAPSHOT
 * record in telem_view.  The dashboard shows a summary of it per node.
 *
 * Answers: 200 with the document as stored (application/json); 400
 * without a valid node name; 404 for a node the source does not have or
 * one without a snapshot; 503 when the node does not answer in time;
 * errors in OpenTSDB's error shape, as every endpoint. */
#include "agg.h"

#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_paths.h"

void
agg_snapshot(agg_t *self, telem_http_req_t *req)
{
    const char *node = telem_http_req_arg(req, "node");
    if (!node || !telem_node_valid(node)) {
        telem_http_reply_error(req, 400, "Missing or bad node", "GET "
                               "/telem/snapshot?node=NAME names one node of "
                               "the job");
        return;
    }
    const agg_src_vt_t *vt = agg_src_vt(self);
    char why[512] = "", *json = NULL;
    size_t len = 0;
    int rc = vt->snapshot ? vt->snapshot(agg_src(self), node,
                                         agg_timeout_ms(self), &json, &len,
                                         why, sizeof why)
                          : TELEM_ENOTFOUND;
    if (rc == 0) {
        telem_http_reply_take(req, 200, "application/json", &json, len);
        free(json);
        return;
    }
    free(json);
    int status = rc == TELEM_ENOTFOUND ? 404 : rc == TELEM_ENOMEM ? 500
                                                                  : 503;
    telem_http_reply_error(req, status, status == 404 ? "No snapshot"
                           : "Snapshot not available", why);
}
