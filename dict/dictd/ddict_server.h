/* ddict_server.h - what a dictionary server does with a message, no sockets.
 *
 * The server owns the shard store, the log and the shard map.  The actor
 * (ddict_actor.c) hands it every message it receives, as ZeroMQ frames,
 * and gives it an output function through which the server sends frames
 * to a client (by its ROUTER identity) or to a peer server (by node name).
 * Keeping the sockets out lets tests drive a server, or several wired
 * together, frame by frame.
 *
 * Replies are held until ddict_server_flush(), which the actor calls after
 * each burst of messages: it syncs the log once for the whole burst (group
 * commit) and then releases the replies, so a reply always follows the
 * durability of what it acknowledges.  A write that has replicas is
 * answered only when every replica has acknowledged it.
 *
 * Not thread-safe: one owner.
 */
#ifndef DDICT_SERVER_H
#define DDICT_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

typedef struct ddict_server ddict_server_t;

typedef enum {
    DDICT_SYNC_NONE = 0,    /* write the log, never fdatasync */
    DDICT_SYNC_BATCH = 1    /* fdatasync once per burst, before replies */
} ddict_sync_t;

typedef struct {
    const char *node;           /* this server's node name */
    const char *log_path;       /* its log file */
    const char *const *nodes;   /* initial node list (used when the log has
                                   no map); may be NULL: just this node */
    int nnodes;
    int replicas;               /* 0: default (2 with >= 2 nodes) */
    ddict_sync_t sync;
    uint64_t compact_min;       /* compact when the log passes this and
                                   twice the live data (0: 64 MiB) */
} ddict_server_config_t;

/* Sends frames[0..n) to a client (route = its ROUTER identity frame) or,
 * when route is NULL, to the peer server `peer`.  Ownership of the frames
 * (and of route) passes to the function, which closes them.  Returns 0 or
 * a negative code (the server then treats the message as lost). */
typedef int (*ddict_out_fn)(void *arg, zmq_msg_t *route, const char *peer,
                            zmq_msg_t *frames, size_t n);

/* Opens the log (replaying it) and builds the map.  Returns NULL and sets
 * *err on a bad config, an unreadable log or no memory. */
ddict_server_t *ddict_server_new(const ddict_server_config_t *cfg,
                                 ddict_out_fn out, void *out_arg, int *err);
/* Syncs the log and frees everything; accepts NULL, nulls the pointer. */
void ddict_server_destroy(ddict_server_t **self_p);

/* Handles a message that arrived on the server's ROUTER: route is the
 * sender's identity, frames the rest.  Both are taken over (closed here).
 * The ROUTER takes dict_req, dict_repl and dict_admin only.  A message
 * that does not decode, or of any other type (replies, telemd's batches
 * and queries), is counted and answered, at the next flush, with a
 * dict_rep of id 0 whose code is the decode error or TELEM_EPROTO.  A
 * request refused for its content is counted (and answered as the
 * operation says).  Returns 0 or the error. */
int ddict_server_request(ddict_server_t *self, zmq_msg_t *route,
                         zmq_msg_t *frames, size_t n);

/* Refuses a message without looking at it (the actor found too many
 * frames): counts it, closes `frames` and holds a dict_rep of id 0 and
 * `code` for `route` (taken over) until the next flush.  Returns code. */
int ddict_server_refuse(ddict_server_t *self, zmq_msg_t *route,
                        zmq_msg_t *frames, size_t n, int code);

/* Handles a reply that arrived from peer `peer` (acknowledgements of
 * replication and transfers).  Frames are taken over. */
int ddict_server_peer_reply(ddict_server_t *self, const char *peer,
                            zmq_msg_t *frames, size_t n);

/* Counts a reply from peer `peer` that the actor refused unread (it had
 * `nframes` frames; an acknowledgement has one) and logs it with the rate
 * limit of every refusal.  Returns TELEM_EPROTO. */
int ddict_server_peer_refuse(ddict_server_t *self, const char *peer,
                             size_t nframes);

/* Ends a burst: syncs the log if anything was written, releases the held
 * replies, compacts the log if it grew past its threshold.  Returns 0 or
 * TELEM_EIO (the held replies then carry the error). */
int ddict_server_flush(ddict_server_t *self);

/* Expires event waiters and replication waits that passed their deadline
 * (monotonic ns).  Returns the next monotonic time it wants to run:
 * the earliest such deadline, `now` while a compaction is under way, or
 * INT64_MAX when nothing waits (an idle server). */
int64_t ddict_server_tick(ddict_server_t *self, int64_t now);

/* 1 once a shutdown request was answered. */
int ddict_server_stopping(const ddict_server_t *self);

/* Counters for status and tests. */
typedef struct {
    uint64_t epoch;
    int reforming;
    uint64_t keys;
    uint64_t bytes;
    uint64_t log_bytes;
    uint64_t bad_messages;
    uint64_t replayed;          /* records replayed at start */
    uint64_t dropped_bytes;     /* torn tail dropped at start */
} ddict_server_stats_t;
void ddict_server_stats(const ddict_server_t *self, ddict_server_stats_t *st);

#endif
