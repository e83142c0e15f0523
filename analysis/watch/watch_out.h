/* watch_out.h - how the watcher shows and hands over an event: a text
 * line, JSON, the --exec action, and the wire message (watch_out.c).
 *
 * Thread safety: the watcher's one thread.  Errors are telem_err_t codes.
 */
#ifndef WATCH_OUT_H
#define WATCH_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "det.h"
#include "telem_proto.h"

/* One event as a JSON object string (caller frees), with "type":"event",
 * seq, detector, severity, ts_ns, time (ISO 8601 UTC), time_ms (ts_ns in
 * milliseconds), nodes, devices
 * ([{"node","device"}]), score, evidence ({name: value}) and text.
 * NULL when out of memory. */
char *watch_out_event_json(const det_event_t *e, uint64_t seq);

/* One event as a line of text (no newline), control bytes escaped as
 * \xNN.  Returns the length written (truncated to fit, always
 * NUL-terminated). */
size_t watch_out_event_text(const det_event_t *e, uint64_t seq, char *buf,
                            size_t size);

/* A JSON string of any bytes: invalid UTF-8 is replaced by U+FFFD.
 * Caller owns the json_t (opaque here to keep jansson out of the header).
 * Returns NULL only when out of memory. */
void *watch_out_json_string(const char *s);

/* Runs `cmd` with /bin/sh -c for an event: environment TELEM_EVENT_SEQ,
 * _DETECTOR, _SEVERITY, _NODES (names separated by newlines), _DEVICES
 * ("node<TAB>device" lines), _SCORE, _TS_NS, _TEXT and _JSON, and the JSON
 * on its stdin.  Does not wait.  Returns 0 with *pid set, or TELEM_EIO with
 * a sentence in why. */
int watch_out_exec(const char *cmd, const det_event_t *e, uint64_t seq,
                   pid_t *pid,
                   char *why, size_t why_size);

/* ---- the events file -------------------------------------------------- */

/* The events file (<rundir>/<name>/events.jsonl) holds every event as the
 * JSON line above, for telem_agg's dashboard and `telem_client report`.
 * Past WATCH_OUT_LOG_MAX bytes it is renamed to events.jsonl.1 (replacing
 * an older one) and started afresh, so it stays bounded. */
#define WATCH_OUT_LOG_MAX (4L << 20)

/* Opens `path` for appending (created 0600).  0, or TELEM_EIO with a
 * sentence in why. */
int watch_out_log_open(const char *path, FILE **f_p, char *why,
                       size_t why_size);

/* Appends event e as one line and flushes, rotating first when the file
 * is past its bound.  *f_p may be NULL (nothing is written) and is NULL
 * after a failed rotation.  Returns 0, TELEM_ENOMEM or TELEM_EIO. */
int watch_out_log_event(FILE **f_p, const char *path, const det_event_t *e,
                        uint64_t seq);

/* ---- events on the wire ------------------------------------------------ */

/* Fills a wire event from a detector event; arrays point into `buf`, which
 * must stay alive while m is used.  Returns 0 or TELEM_ENOMEM. */
typedef struct {
    telem_watch_dev_t *devs;
    telem_watch_evidence_t *ev;
    size_t cap_devs, cap_ev;
} watch_out_wire_t;
int watch_out_event_to_wire(const det_event_t *e, uint64_t seq,
                            watch_out_wire_t *buf,
                            telem_watch_event_t *m);
void watch_out_wire_free(watch_out_wire_t *buf);

#endif
