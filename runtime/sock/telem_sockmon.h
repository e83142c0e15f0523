/* telem_sockmon.h - the connection events of a libzmq socket, read by its
 * owner: zmq_socket_monitor() into an inproc PAIR the owner polls.
 *
 * Events are zmq_socket_monitor()'s version 1 format: a first frame of 6
 * bytes (uint16 event, uint32 value: the descriptor for the accept and
 * disconnect events) and a second naming the endpoint (for an accepted
 * connection, the address the socket is bound to).  The PAIR has no
 * receive limit: libzmq's I/O thread sends events with a blocking send,
 * and a full pipe would stall every socket of the context until the owner
 * read it; memory stays bounded because every event stands for a
 * connection, and connections are bounded by the descriptor limit.
 *
 * Used by the TCP peer cap (telem_peercap.h) and telemd's ingest drain.
 * Not thread-safe: the owner of the monitored socket reads the events.
 */
#ifndef TELEM_SOCKMON_H
#define TELEM_SOCKMON_H

#include <czmq.h>
#include <stddef.h>
#include <stdint.h>

typedef struct telem_sockmon telem_sockmon_t;

/* Starts monitoring `events` (ZMQ_EVENT_* bits) of sock.  Returns NULL
 * with *err (NULL allowed) set to TELEM_EIO or TELEM_ENOMEM. */
telem_sockmon_t *telem_sockmon_new(zsock_t *sock, int events, int *err);

/* Stops the monitor, then closes its PAIR; accepts NULL, nulls *self_p.
 * Call before the monitored socket is destroyed. */
void telem_sockmon_destroy(telem_sockmon_t **self_p);

/* The PAIR to poll for readability. */
zsock_t *telem_sockmon_sock(telem_sockmon_t *self);

/* Reads one event without waiting: 1 with *event, *value and the
 * endpoint (cut to size - 1 bytes) in ep[size]; *event 0 for a malformed
 * event.  0 when none waits. */
int telem_sockmon_next(telem_sockmon_t *self, uint16_t *event,
                       uint32_t *value, char *ep, size_t size);

#endif
