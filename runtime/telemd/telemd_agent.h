/* telemd_agent.h - the node agent's state and message handling, no sockets.
 *
 * The agent is everything telemd does to a message once it has the bytes:
 * decode, gate by level, tag with host, append to the store, answer queries
 * and control requests, run samplers.  Keeping it free of sockets lets tests
 * drive it frame by frame; telemd_actor.c moves bytes between ZeroMQ and it.
 * Not thread-safe: one owner.
 */
#ifndef TELEMD_AGENT_H
#define TELEMD_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include "telemd_actor.h"

typedef struct telemd_agent telemd_agent_t;

/* Creates the agent, its store and opens the samplers (one log line for each
 * sampler not available here).  Returns the agent, or NULL with *err (if
 * err is not NULL) set to TELEM_EINVAL (bad config: no node, a level
 * outside 0-4, a window or interval <= 0) or TELEM_ENOMEM. */
telemd_agent_t *telemd_agent_new(const telemd_config_t *cfg, int *err);
void telemd_agent_destroy(telemd_agent_t **self_p);

/* Handles one frame from the ingest socket (batch or meta).  Malformed
 * input is counted and logged with a rate limit.  Returns 0 or the decode
 * error. */
int telemd_agent_ingest(telemd_agent_t *self, const void *data, size_t size);

/* Where a request came from.  Control that changes or stops telemd
 * (shutdown, hand-over, level, window) comes from the job's own
 * processes only: over ipc in the run directory or over CURVE with the
 * job's key; from plain TCP it is refused with TELEM_EPERM. */
typedef enum {
    TELEMD_FROM_JOB = 0,
    TELEMD_FROM_PLAIN_TCP = 1
} telemd_from_t;

/* Handles one request frame: a query, a control request or a request
 * for the system snapshot (sysinfo), which came `from` there.  Any other
 * message (a batch or metadata, meant for the ingest socket; a reply) is
 * refused with an error reply of code TELEM_EPROTO and counted, and nothing
 * is stored.  Sets *reply and *reply_size to the reply frame, owned by the
 * agent and valid until the next call (NULL only when no reply could be
 * encoded).  Returns 0, or a negative code when the request was refused
 * (an error reply is still set). */
int telemd_agent_request(telemd_agent_t *self, const void *data, size_t size,
                         telemd_from_t from, const void **reply,
                         size_t *reply_size);

/* Refuses a request the actor could not hand over whole (too many frames):
 * counts it as a bad message, logs `why` (rate-limited) and sets *reply to
 * an error reply of `code` and `why`, with id 0, owned as by
 * telemd_agent_request().  Returns `code`. */
int telemd_agent_refuse(telemd_agent_t *self, int code, const char *why,
                        const void **reply, size_t *reply_size);

/* Counts input the actor refused without handing it over (an ingest
 * message of several frames) as a bad message and logs `why`, with the
 * rate limit of every refusal. */
void telemd_agent_reject(telemd_agent_t *self, const char *why);

/* Copies the newest point of every series in the retention window, with
 * its metric's type, unit and doc, into one snapshot block for
 * telem_prom_render() (telem_prom.h): *block_p is malloc'd and the
 * caller's, *len its size.  Returns 0 or TELEM_ENOMEM (nothing handed
 * over). */
int telemd_agent_snapshot(telemd_agent_t *self, void **block_p, size_t *len);

/* The node's one-time system snapshot, taken by telemd_agent_new(): a
 * NUL-terminated JSON object (telem_sysinfo.h, docs/protocol.md
 * "sysinfo") of *len bytes (len may be NULL), owned by the agent and
 * unchanged until telemd_agent_destroy(); NULL (and *len 0) when it could
 * not be taken.  Requests of type sysinfo are answered with it.  For the
 * flush log's SNAPSHOT record.  Same thread as the agent's other calls. */
const char *telemd_agent_sysinfo(const telemd_agent_t *self, size_t *len);

/* Runs the samplers due at now (realtime) and expires old points.  Returns
 * the monotonic time at which it wants to run next. */
int64_t telemd_agent_tick(telemd_agent_t *self);

/* 1 once a shutdown or hand-over request was answered. */
int telemd_agent_stopping(const telemd_agent_t *self);

/* 1 once a hand-over request (TELEM_CTL_HANDOVER) was answered. */
int telemd_agent_handing_over(const telemd_agent_t *self);

/* The last work before exit: flushes everything the store holds to the
 * log (no-op without a log), and logs what it did. */
void telemd_agent_finish(telemd_agent_t *self);

/* Number of messages waiting on the ingest socket, reported at level 4. */
void telemd_agent_set_queue_depth(telemd_agent_t *self, uint64_t depth);

#endif
