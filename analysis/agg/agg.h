/* agg.h - PRIVATE to telem_agg and telem_view: the HTTP API's handler.
 *
 * An agg_t answers the requests the HTTP front-end module (telem_http.h)
 * hands it: OpenTSDB's /api endpoints, the dashboard's files and its job
 * data, and the operational extras (put, reboot), from a data source
 * (agg_src.h).  The live source (telem_agg, the default) asks every node
 * of a job through the analysis client (ac.h) with one deadline per
 * request; a node that does not answer in time makes the answer partial
 * (header X-Telem-Missing and a rate-limited log line), never a hang.
 * The dump source (telem_view) answers from dump files.
 *
 * The node file is re-read when it changes (telem_launch rewrites it on a
 * restart), so the aggregator follows the job's active nodes without a
 * restart of its own.
 *
 * Thread safety: agg_handle() runs on the HTTP module's worker threads,
 * several at once; each call borrows one analysis client from a pool
 * (ac_t is used by one thread at a time). */
#ifndef AGG_H
#define AGG_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ac.h"
#include "agg_src.h"
#include "telem_keys.h"
#include "telem_http.h"
#include "telem_paths.h"

typedef struct agg agg_t;

typedef struct {
    const char *nodefile;      /* NULL: $TELEM_NODEFILE, else <rundir>/nodes */
    const char *rundir;        /* NULL: the default run directory */
    const char *launch_ep;     /* NULL: $TELEM_LAUNCH_ENDPOINT, else
                                  ipc://<rundir>/launch/restart.sock */
    int timeout_ms;            /* per request; <= 0: 2000 */
    unsigned pool;             /* analysis clients; 0: 4 */
    /* The data source; NULL: the live one (agg_live_vt over this
     * aggregator's own pool of analysis clients). */
    const agg_src_vt_t *src_vt;
    void *src;
    /* 1 when the HTTP server requires a token (telem_http_opts_t.token):
     * only then are /api/put and /api/reboot served; without one they
     * answer 403, since any user of the machine can reach the port. */
    int has_token;
} agg_cfg_t;

/* The live source: src is the agg_t itself (agg_live.c). */
extern const agg_src_vt_t agg_live_vt;

/* A new aggregator (connects nothing yet: clients are made on first use).
 * The live one loads the job's keys (telem_keys_find over the run
 * directory).  NULL with *err: TELEM_EINVAL (a path too long, a malformed
 * key file), TELEM_EPERM (a key file others could read), TELEM_ENOMEM. */
agg_t *agg_new(const agg_cfg_t *cfg, int *err);

/* Frees the aggregator; the HTTP server must be stopped first.  Accepts
 * NULL; nulls the pointer. */
void agg_destroy(agg_t **self_p);

/* The telem_http_fn: routes one request (arg is the agg_t). */
void agg_handle(telem_http_req_t *req, void *arg);

/* ---- shared by the agg_*.c files --------------------------------------- */

/* Borrows an analysis client connected to the node file's current nodes
 * (waits for a free one).  NULL with a sentence in why when the node file
 * cannot be used. */
ac_t *agg_ac_get(agg_t *self, char *why, size_t why_size);
void agg_ac_put(agg_t *self, ac_t *ac);

int agg_timeout_ms(const agg_t *self);
const char *agg_rundir(const agg_t *self);
const char *agg_launch_ep(const agg_t *self);
void *agg_zctx(agg_t *self);
/* The job's keys (telem_keys_find over the run directory), NULL when
 * there are none: the restart request's socket is CURVE with them. */
const telem_keys_t *agg_keys(const agg_t *self);

/* Logs (rate-limited) and sets X-Telem-Missing: "n2 (no reply within 2000
 * ms), n3 (...)" when rows `r` name missing nodes. */
void agg_note_missing(agg_t *self, telem_http_req_t *req,
                      const agg_rows_t *r);

/* The aggregator's data source and its functions' first argument. */
const agg_src_vt_t *agg_src_vt(const agg_t *self);
void *agg_src(const agg_t *self);

/* The job's own series, from the launcher's restart lines (agg_job.c):
 * telem_job_restarts and telem_job_restart_seconds{step}.  NULL when
 * `metric` is not one of them; else the series (n of them, points in
 * the whole log), freed with agg_job_series_destroy(). */
agg_job_series_t *agg_job_series(agg_t *self, const char *metric, size_t *n);
const telem_series_t *agg_job_series_get(const agg_job_series_t *js);
void agg_job_series_destroy(agg_job_series_t **js_p);

/* Global annotations: the detector events and restarts in [start, end]
 * as OpenTSDB's annotation objects (agg_job.c). */
json_t *agg_annotations(agg_t *self, int64_t start_ms, int64_t end_ms);

/* The live job data object: the run directory's files and the nodes that
 * do not answer a status request (agg_job.c). */
json_t *agg_job_data(agg_t *self);

/* --token-file for both mains: reads the token (the first line of a file
 * only its owner may read, 8 to 510 characters without spaces) into
 * token[size].  0, or 2 after saying why on stderr. */
int agg_read_token(const char *prog, const char *path, char *token,
                   size_t size);

/* The endpoints (agg_query.c, agg_meta.c, agg_job.c, agg_ops.c,
 * agg_snap.c). */
void agg_query(agg_t *self, telem_http_req_t *req);
void agg_suggest(agg_t *self, telem_http_req_t *req);
void agg_lookup(agg_t *self, telem_http_req_t *req);
void agg_put(agg_t *self, telem_http_req_t *req);
void agg_reboot(agg_t *self, telem_http_req_t *req);
void agg_job(agg_t *self, telem_http_req_t *req);
/* GET /telem/snapshot?node=N: the node's system snapshot (agg_snap.c). */
void agg_snapshot(agg_t *self, telem_http_req_t *req);

#endif
