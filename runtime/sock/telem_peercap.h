/* telem_peercap.h - a cap on the TCP connections of a listening socket.
 *
 * libzmq has no per-socket connection limit: a bound TCP socket accepts
 * every connection it is offered, one descriptor each, until the process
 * runs out (and libzmq 4.3.4 then aborts at the next ipc accept, see
 * telem_limits.h).  A peer cap watches the socket through a libzmq socket
 * monitor (ZMQ_EVENT_ACCEPTED / ZMQ_EVENT_DISCONNECTED on an inproc PAIR)
 * and counts the TCP connections.  A connection accepted past the cap is
 * refused by shutting down its reading side (shutdown(fd, SHUT_RD)): libzmq
 * reads end-of-file, closes it and reports it disconnected, and the peer
 * sees the connection closed; the connections already accepted stay.
 *
 * Why not unbind the endpoint at the cap and bind it again below?  In
 * libzmq every accepted connection belongs to its listener: zmq_unbind()
 * closes them all, legitimate peers included.  Why shutdown and not
 * close?  The descriptor belongs to libzmq; closing it under libzmq would
 * let the number be reused behind its back.  shutdown() leaves the number
 * to libzmq and only makes its next read see the end.  Because events
 * arrive after the fact, a descriptor reported in an event may already
 * have been closed and its number reused; the cap only shuts a descriptor
 * that is still a TCP connection on the port the event names, so an ipc
 * connection or a file is never touched.
 *
 * A connection is accepted before the cap can refuse it, so for a moment a
 * flood holds more than the cap: the descriptors libzmq accepts before the
 * owner's loop handles the events.  telem_limits_tcp_peers() keeps half
 * the descriptor limit for that and for everything else.
 *
 * The owner polls telem_peercap_sock() with the monitored socket and calls
 * telem_peercap_handle() when it is readable.  Not thread-safe: one owner,
 * the thread that uses the monitored socket.  Destroy the cap before the
 * socket it watches.  Error convention: 0 or a negative TELEM_E* code.
 */
#ifndef TELEM_PEERCAP_H
#define TELEM_PEERCAP_H

#include <czmq.h>
#include <stdint.h>

typedef struct telem_peercap telem_peercap_t;

typedef struct {
    int64_t peers;        /* TCP connections open now */
    int64_t peak;         /* most open at once, refused ones included */
    uint64_t accepted;    /* TCP connections accepted since start */
    uint64_t refused;     /* of which were shut down past the cap */
} telem_peercap_stats_t;

/* Starts watching `sock` (bound or not yet bound; only TCP connections
 * count) with a cap of `max_peers` (>= 1).  Returns the cap, or NULL with
 * *err (when err is not NULL) set to TELEM_EINVAL or TELEM_ENOMEM, or
 * TELEM_EIO when libzmq refused the monitor (errno says why). */
telem_peercap_t *telem_peercap_new(zsock_t *sock, int max_peers, int *err);

/* The socket that becomes readable when connection events wait; owned by
 * the cap, for the owner's poller. */
zsock_t *telem_peercap_sock(telem_peercap_t *self);

/* Handles every event waiting, without blocking: counts connections and
 * refuses those past the cap, logging refusals (rate-limited, at most 10
 * lines a second).  Returns the number of connections refused by this call
 * (0 or more). */
int telem_peercap_handle(telem_peercap_t *self);

/* The cap and its counters. */
int telem_peercap_max(const telem_peercap_t *self);
void telem_peercap_stats(const telem_peercap_t *self,
                         telem_peercap_stats_t *st);

/* Stops the monitor and frees the cap; accepts NULL, nulls *self_p. */
void telem_peercap_destroy(telem_peercap_t **self_p);

#endif
