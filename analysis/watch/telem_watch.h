/* telem_watch.h - the watcher's parts (internal to telem_watch and its
 * tests).
 *
 * telem_watch pulls recent data from every node through the analysis
 * client, runs detectors on it, prints and publishes their events, and
 * acts on them.  It is split so that each part is testable on its own:
 *
 *   tw_t (telem_watch_core.c)  detector instances, the queries their needs
 *       call for, ac results turned into detector input, one tick, and the
 *       answers to control requests.  No sockets of its own but ac's.
 *   tw_out (telem_watch_out.c)  events as text lines and JSON (jansson;
 *       any bytes in names are escaped, invalid UTF-8 replaced), and the
 *       --exec action (posix_spawn, event in the environment and as JSON
 *       on stdin, children reaped without blocking).
 *   tw_net (telem_watch_net.c)  the PUB socket for events, the ROUTER
 *       control socket, the restart request to a launcher and its ack with
 *       a deadline, and the endpoints file in the run directory.
 *   telem_watch.c / telem_watch_ctl.c  the command line: the watcher's
 *       loop, and the `telem_watch ctl` client.
 *
 * Thread safety: everything here is used by the watcher's one thread.
 * Errors are telem_err_t codes.
 */
#ifndef TELEM_WATCH_H
#define TELEM_WATCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "ac.h"
#include "det.h"
#include "telem_proto.h"

#define TW_DETECTORS_MAX 32
#define TW_NAME_DEFAULT "telem_watch"

/* ---- the watcher core -------------------------------------------------- */

typedef struct tw tw_t;

/* Creates a watcher over `ac` (borrowed: the caller closes it after
 * tw_destroy).  ac may be NULL for a watcher that only answers control
 * requests (tests).  Returns NULL when out of memory. */
tw_t *tw_new(ac_t *ac);
void tw_destroy(tw_t **self_p);

/* Sets (or replaces) the analysis client, borrowed as for tw_new(). */
void tw_set_ac(tw_t *self, ac_t *ac);

/* Adds a detector from a command line spec "NAME[:P=V,P=V...]" or
 * "LABEL=NAME[:...]" (labels are unique; a repeated NAME without a label
 * gets NAME-2, NAME-3...).  Returns 0, TELEM_EINVAL / TELEM_ENOTFOUND /
 * TELEM_EFULL with a sentence in why, or TELEM_ENOMEM. */
int tw_add_detector(tw_t *self, const char *spec, char *why, size_t why_size);

/* Sets LABEL.PARAM=VALUE (spec as written after --set).  As det_set(). */
int tw_set_spec(tw_t *self, const char *spec, char *why, size_t why_size);

size_t tw_ndetectors(const tw_t *self);
det_t *tw_detector(const tw_t *self, size_t i);
det_t *tw_find(const tw_t *self, const char *label);

/* Deadline of each query in ms (default AC_TIMEOUT_DEFAULT_MS). */
void tw_set_timeout(tw_t *self, int timeout_ms);

/* One tick: queries what the detectors need (one windowed query for the
 * union of their metrics, one LATEST query when some want it), runs every
 * detector that is not paused on the answer, and leaves their events in
 * tw_events().  Nodes that did not answer are remembered for status.
 * Returns 0 (also when nodes are missing: that is data, not an error) or
 * TELEM_ENOMEM / TELEM_EINVAL; a query refused before sending is an error. */
int tw_tick(tw_t *self, int64_t now_ns);

/* Runs the detectors on a prepared input (what tw_tick does after its
 * queries); events go to tw_events().  For tests and benchmarks. */
int tw_run(tw_t *self, const det_input_t *in);

/* Events of the last tick (owned by the watcher, valid until the next). */
const det_events_t *tw_events(const tw_t *self);

/* Nodes that did not answer the last tick (owned by the watcher). */
size_t tw_nmissing(const tw_t *self);
const char *tw_missing(const tw_t *self, size_t i);

/* Counters for status. */
typedef struct {
    uint64_t ticks;
    uint64_t events;
    uint64_t series;           /* series in the last tick's answers */
    uint64_t points;
    int64_t last_tick_ns;      /* duration of the last tick */
    int64_t last_query_ns;     /* of which waiting for the queries */
} tw_stats_t;
const tw_stats_t *tw_stats(const tw_t *self);

/* ---- detector input from query results (for tests) --------------------- */

/* Holds the det_series_t views (and their tags) of query results: points
 * are not copied, so the results must outlive the input's use. */
typedef struct tw_input tw_input_t;
tw_input_t *tw_input_new(void);
void tw_input_destroy(tw_input_t **self_p);
void tw_input_clear(tw_input_t *self);
/* Appends one series sent by `node` to the windowed (latest = 0) or the
 * LATEST (latest = 1) list.  0 or TELEM_ENOMEM. */
int tw_input_add(tw_input_t *self, const char *node, const telem_series_t *s,
                 int latest);
/* Fills *in from what was added (now_ns, nodes and missing from the
 * caller).  Valid until the next add or clear. */
void tw_input_fill(tw_input_t *self, det_input_t *in);

/* ---- control ----------------------------------------------------------- */

/* Answers one control request: status, thresholds, set, pause, resume.
 * Returns the reply, owned by the watcher, valid until the next call;
 * `extra` lines (key, value pairs under detector "") are appended to a
 * status reply (the watcher's endpoints and actions). */
const telem_watch_ctl_reply_t *tw_control(tw_t *self,
                                          const telem_watch_ctl_t *req,
                                          const char *const *extra,
                                          size_t nextra);

/* ---- output and the exec action (telem_watch_out.c) --------------------- */

/* One event as a JSON object string (caller frees), with "type":"event",
 * seq, detector, severity, ts_ns, time (ISO 8601 UTC), nodes, devices
 * ([{"node","device"}]), score, evidence ({name: value}) and text.
 * NULL when out of memory. */
char *tw_event_json(const det_event_t *e, uint64_t seq);

/* One event as a line of text (no newline), control bytes escaped as
 * \xNN.  Returns the length written (truncated to fit, always
 * NUL-terminated). */
size_t tw_event_text(const det_event_t *e, uint64_t seq, char *buf,
                     size_t size);

/* A JSON string of any bytes: invalid UTF-8 is replaced by U+FFFD.
 * Caller owns the json_t (opaque here to keep jansson out of the header).
 * Returns NULL only when out of memory. */
void *tw_json_string(const char *s);

/* Runs `cmd` with /bin/sh -c for an event: environment TELEM_EVENT_SEQ,
 * _DETECTOR, _SEVERITY, _NODES (names separated by newlines), _DEVICES
 * ("node<TAB>device" lines), _SCORE, _TS_NS, _TEXT and _JSON, and the JSON
 * on its stdin.  Does not wait.  Returns 0 with *pid set, or TELEM_EIO with
 * a sentence in why. */
int tw_exec(const char *cmd, const det_event_t *e, uint64_t seq, pid_t *pid,
            char *why, size_t why_size);

/* ---- events on the wire ------------------------------------------------ */

/* Fills a wire event from a detector event; arrays point into `buf`, which
 * must stay alive while m is used.  Returns 0 or TELEM_ENOMEM. */
typedef struct {
    telem_watch_dev_t *devs;
    telem_watch_evidence_t *ev;
    size_t cap_devs, cap_ev;
} tw_wire_buf_t;
int tw_event_to_wire(const det_event_t *e, uint64_t seq, tw_wire_buf_t *buf,
                     telem_watch_event_t *m);
void tw_wire_buf_free(tw_wire_buf_t *buf);

/* ---- sockets and files (telem_watch_net.c) ----------------------------- */

typedef struct tw_net tw_net_t;

typedef struct {
    const char *rundir;        /* NULL: telem_rundir_default() */
    const char *name;          /* NULL: TW_NAME_DEFAULT */
    const char *pub_ep;        /* NULL: ipc://<rundir>/<name>/pub.sock */
    const char *ctl_ep;        /* NULL: ipc://<rundir>/<name>/ctl.sock */
    const char *restart_ep;    /* NULL: no restart action */
} tw_net_opts_t;

/* Takes <rundir>/<name>/ (created 0700, locked with flock so a second
 * watcher of the same name is refused), binds PUB and ROUTER, connects the
 * restart DEALER, and writes <rundir>/<name>/endpoints ("pub EP", "ctl
 * EP", "pid N" lines).  Returns NULL with a sentence in why. */
tw_net_t *tw_net_new(const tw_net_opts_t *o, char *why, size_t why_size);

/* Closes the sockets, removes the endpoints file and the ipc socket files
 * it created, releases the lock; accepts NULL; nulls the pointer. */
void tw_net_destroy(tw_net_t **self_p);

const char *tw_net_pub_endpoint(const tw_net_t *self);
const char *tw_net_ctl_endpoint(const tw_net_t *self);
const char *tw_net_dir(const tw_net_t *self);

/* Sockets to poll: control requests, restart acks (NULL without one). */
void *tw_net_ctl_sock(const tw_net_t *self);
void *tw_net_restart_sock(const tw_net_t *self);

/* Publishes an event: frame 1 the detector label, frame 2 the message.
 * Never blocks (a slow subscriber loses events, as PUB does).  Returns 0
 * or an encoding error. */
int tw_net_publish(tw_net_t *self, const det_event_t *e, uint64_t seq);

/* Reads one control request from the ROUTER, answers it through
 * tw_control() (undecodable requests get an error reply).  Returns 0, or
 * TELEM_EPROTO after answering a bad request (the caller may log it). */
int tw_net_serve(tw_net_t *self, tw_t *tw, const char *const *extra,
                 size_t nextra);

/* Sends a restart request (m->id is set here).  Returns 0, or an encoding
 * error / TELEM_ECONN (the socket refused it). */
int tw_net_restart_send(tw_net_t *self, telem_restart_t *m);

/* Reads one frame from the restart socket into *ack, without waiting
 * (strings valid until the next call).  Returns 0, TELEM_EPROTO for a
 * frame that is not a restart_ack, or TELEM_ETIMEDOUT when nothing is
 * there. */
int tw_net_restart_recv(tw_net_t *self, telem_restart_ack_t *ack);

/* Drops the restart connection and makes a fresh one, so a request that
 * timed out is never delivered late.  0 or TELEM_EIO. */
int tw_net_restart_reset(tw_net_t *self);

#endif
