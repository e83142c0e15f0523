/* watch.h - the watcher's core (internal to telem_watch, its tests and
 * benchmarks; prefix watch_).
 *
 * telem_watch pulls recent data from every node through the analysis
 * client, runs detectors on it, prints and publishes their events, and
 * acts on them.  It is split so that each part is testable on its own:
 *
 *   watch_t (watch.c)  detector instances, the queries their needs
 *       call for, one tick, and the answers to control requests.  No
 *       sockets of its own but ac's.
 *   watch_input_t (watch_input.c)  ac results turned into detector input.
 *   watch_out (watch_out.h, watch_out.c)  events as text lines and JSON
 *       (jansson; any bytes in names are escaped, invalid UTF-8 replaced),
 *       and the --exec action (posix_spawn, event in the environment and
 *       as JSON on stdin, children reaped without blocking).
 *   watch_net (watch_net.h, watch_net.c)  the PUB socket for events, the
 *       ROUTER control socket, the restart request to a launcher and its
 *       ack with a deadline, and the endpoints file in the run directory.
 *   telem_watch.c, watch_cli.c, watch_cli_ctl.c  the command line: the
 *       watcher's loop, its flags, and the `telem_watch ctl` client.
 * Calls go one way: telem_watch.c calls every part; watch_cli_ctl.c calls
 * watch_cli.c and watch_out; watch_net calls watch (watch_control) and
 * watch_out; watch calls watch_input; no part calls back up.
 *
 * Thread safety: everything here is used by the watcher's one thread.
 * Errors are telem_err_t codes.
 */
#ifndef WATCH_H
#define WATCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "ac.h"
#include "det.h"
#include "telem_proto.h"

#define WATCH_DETECTORS_MAX 32
#define WATCH_NAME_DEFAULT "telem_watch"

/* ---- the watcher core -------------------------------------------------- */

typedef struct watch watch_t;

/* Creates a watcher over `ac` (borrowed: the caller closes it after
 * watch_destroy).  ac may be NULL for a watcher that only answers control
 * requests (tests).  Returns NULL when out of memory. */
watch_t *watch_new(ac_t *ac);
void watch_destroy(watch_t **self_p);

/* Sets (or replaces) the analysis client, borrowed as for watch_new(). */
void watch_set_ac(watch_t *self, ac_t *ac);

/* Adds a detector from a command line spec "NAME[:P=V,P=V...]" or
 * "LABEL=NAME[:...]" (labels are unique; a repeated NAME without a label
 * gets NAME-2, NAME-3...).  Returns 0, TELEM_EINVAL / TELEM_ENOTFOUND /
 * TELEM_EFULL with a sentence in why, or TELEM_ENOMEM. */
int watch_add_detector(watch_t *self, const char *spec, char *why,
                       size_t why_size);

/* Sets LABEL.PARAM=VALUE (spec as written after --set).  As det_set(). */
int watch_set_spec(watch_t *self, const char *spec, char *why, size_t why_size);

size_t watch_ndetectors(const watch_t *self);
det_t *watch_detector(const watch_t *self, size_t i);
det_t *watch_find(const watch_t *self, const char *label);

/* Deadline of each query in ms (default AC_TIMEOUT_DEFAULT_MS). */
void watch_set_timeout(watch_t *self, int timeout_ms);

/* One tick: queries what the detectors need (one windowed query for the
 * union of their metrics, one LATEST query when some want it), runs every
 * detector that is not paused on the answer, and leaves their events in
 * watch_events().  Nodes that did not answer are remembered for status.
 * Returns 0 (also when nodes are missing: that is data, not an error) or
 * TELEM_ENOMEM / TELEM_EINVAL; a query refused before sending is an error. */
int watch_tick(watch_t *self, int64_t now_ns);

/* Runs the detectors on a prepared input (what watch_tick does after its
 * queries); events go to watch_events().  For tests and benchmarks. */
int watch_run(watch_t *self, const det_input_t *in);

/* Events of the last tick (owned by the watcher, valid until the next). */
const det_events_t *watch_events(const watch_t *self);

/* Nodes that did not answer the last tick (owned by the watcher). */
size_t watch_nmissing(const watch_t *self);
const char *watch_missing(const watch_t *self, size_t i);

/* Counters for status. */
typedef struct {
    uint64_t ticks;
    uint64_t events;
    uint64_t series;           /* series in the last tick's answers */
    uint64_t points;
    int64_t last_tick_ns;      /* duration of the last tick */
    int64_t last_query_ns;     /* of which waiting for the queries */
} watch_stats_t;
const watch_stats_t *watch_stats(const watch_t *self);

/* ---- one device, one event (watch_merge.c) ------------------------------ */

/* Events of different detectors that name the same device (a GPU slowgpu
 * finds slow and gpu-health finds throttling) are merged into one event
 * with both reasons: in one tick, and with the events of the last
 * WATCH_MERGE_WINDOW_S seconds (kept in a ring of WATCH_MERGE_RECENT).
 * watch_run() applies it to every tick's events. */
#define WATCH_MERGE_WINDOW_S 300
#define WATCH_MERGE_RECENT 64
typedef struct watch_merge watch_merge_t;
watch_merge_t *watch_merge_new(void);
void watch_merge_destroy(watch_merge_t **self_p);
/* Replaces *events with the merged list; 0 or TELEM_ENOMEM (then *events
 * is untouched). */
int watch_merge_apply(watch_merge_t *self, det_events_t **events,
                      int64_t now_ns);

/* ---- detector input from query results (for tests) --------------------- */

/* Holds the det_series_t views (and their tags) of query results: points
 * are not copied, so the results must outlive the input's use. */
typedef struct watch_input watch_input_t;
watch_input_t *watch_input_new(void);
void watch_input_destroy(watch_input_t **self_p);
void watch_input_clear(watch_input_t *self);
/* Appends one series sent by `node` to the windowed (latest = 0) or the
 * LATEST (latest = 1) list.  0 or TELEM_ENOMEM. */
int watch_input_add(watch_input_t *self, const char *node,
                    const telem_series_t *s,
                    int latest);
/* Fills *in from what was added (now_ns, nodes and missing from the
 * caller).  Valid until the next add or clear. */
void watch_input_fill(watch_input_t *self, det_input_t *in);

/* ---- control ----------------------------------------------------------- */

/* Answers one control request: status, thresholds, set, pause, resume.
 * Returns the reply, owned by the watcher, valid until the next call;
 * `extra` lines (key, value pairs under detector "") are appended to a
 * status reply (the watcher's endpoints and actions). */
const telem_watch_ctl_reply_t *watch_control(watch_t *self,
                                             const telem_watch_ctl_t *req,
                                             const char *const *extra,
                                             size_t nextra);

#endif
