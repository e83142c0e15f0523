/* telem_web.h - the browser side of telem_agg: the embedded dashboard files
 * and the self-contained HTML job report.
 *
 * The dashboard is one page (www/index.html, www/telem.js, www/telem.css)
 * over the vendored uPlot chart library; the build embeds all of them in
 * this library, so telem_agg serves them from memory and a report inlines
 * them.  The same script renders both: live, it fetches the job data object
 * below from its server every few seconds; in a report it reads it from the
 * page and fetches nothing.
 *
 * The job data object (GET /telem/job returns it; a report embeds it):
 *
 *   {
 *     "version": 1,
 *     "generated_ms": 1764000000000,          when it was put together
 *     "job": {
 *       "rundir": "/path/of/the/run/directory",
 *       "launcher_pid": 123,                   0 when there is no launcher
 *       "restarts": 1,
 *       "nodes": [ {"name": "n1", "state": "active", "rank": 0},
 *                  {"name": "n2", "state": "down", "rank": -1} ]
 *     },                                       state: active, idle, down
 *     "missing":  [ {"node": "n2", "why": "no reply within 1000 ms"} ],
 *     "restarts": [ {"time_ms": 1764000000000,
 *                    "line": "restart 1 (of at most 10): trigger ..."} ],
 *     "events":   [ {"time_ms": 1764000000000, "detector": "slowgpu",
 *                    "severity": "act", "nodes": ["n2"],
 *                    "devices": [{"node": "n2", "device": "0"}],
 *                    "text": "device 0 on node 'n2' is 76.9 % slower ..."} ],
 *     "series":   [ {"metric": "cg_dgemm_seconds",
 *                    "tags": {"host": "n1", "gpu": "0"},
 *                    "aggregateTags": [],
 *                    "dps": [[1764000000000, 0.0123], ...]} ],
 *     "snapshots": {"n1": {...}}             optional: each node's system
 *                                            snapshot (GET /telem/snapshot)
 *   }
 *
 * "series" holds OpenTSDB /api/query result objects with millisecond times
 * and dps as [ms, value] pairs (msResolution and arrays).  The live page
 * gets the job object from GET /telem/job (its "series" may be empty) and
 * its series from POST /api/query?arrays=true; the report's object carries
 * them.  Every list may be empty; a reader ignores keys it does not know.
 *
 * Thread safety: the assets are constant data, readable from any thread;
 * telem_web_report_write() touches only its arguments.
 */
#ifndef TELEM_WEB_H
#define TELEM_WEB_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

/* One embedded file. */
typedef struct {
    const char *path;            /* URL path, e.g. "/telem.js" */
    const char *type;            /* Content-Type, charset included for text */
    const unsigned char *data;   /* the bytes, followed by one NUL */
    size_t len;                  /* bytes, the NUL not counted */
} telem_web_asset_t;

/* The embedded file served at URL path `path` (without query string):
 * "/" and "/index.html" (the page), "/telem.js", "/telem.css",
 * "/uPlot.min.js", "/uPlot.min.css" ("/" gives the "/index.html" entry).
 * Exact match only: any other path, "/../x" and NULL included, gives NULL.
 * The page loads the other four by relative URL without credentials, so a
 * server answers them without asking for any.  The result is static;
 * never freed. */
const telem_web_asset_t *telem_web_asset(const char *path);

/* The paths a server gives without its token (telem_http_opts_t
 * open_paths): the page's scripts and styles, which the browser fetches
 * without credentials; static, NULL-terminated. */
const char *const *telem_web_open_paths(void);

/* Writes one self-contained HTML report to f: the page with its CSS, its
 * script and uPlot inlined, and `data` (the job data object above) as JSON
 * in a <script type="application/json" id="telem-data"> element.  Every
 * '<' of the JSON is written as \u003c, so no string in the data can close
 * that element or open a comment; the title is HTML-escaped (NULL: "telem
 * job report").  The page fetches nothing when opened.  Does not take
 * ownership of data; does not close f.  Returns 0, TELEM_EINVAL (f or data
 * NULL) or TELEM_EIO (a write failed). */
int telem_web_report_write(FILE *f, const json_t *data, const char *title);

#endif
