/* telemd_drain.h - the ingest connections of telemd, for a lossless stop.
 *
 * Processes push samples to telemd's ipc PULL socket, one connection each.
 * When a PULL socket closes, libzmq drops what its connections still hold:
 * bytes in the kernel's socket buffers and messages decoded but not yet
 * read.  A drain tracker watches the PULL socket through a libzmq socket
 * monitor (ZMQ_EVENT_ACCEPTED / ZMQ_EVENT_DISCONNECTED on an inproc PAIR)
 * and knows the descriptor of every ingest connection.  At a hand-over,
 * telemd_drain_release() shuts the writing side of each (shutdown(fd,
 * SHUT_WR)): the sender's libzmq reads end-of-file, closes its end and
 * reconnects to the path, which the new telemd has bound by then, while
 * this telemd goes on reading what the old connection still carries up to
 * the sender's close.  Once telemd_drain_open() is 0 and the PULL socket
 * has nothing to read, every byte sent to this telemd has been read.
 *
 * Why shut the writing side and not close?  The descriptor is libzmq's;
 * shutdown() leaves the number to libzmq and only makes the peer see the
 * end.  A descriptor named by an event may have been closed since and its
 * number reused: only a connected (not listening) unix socket is shut.
 *
 * Not thread-safe: one owner, the thread that uses the PULL socket.
 * Destroy the tracker before the socket.  Errors: 0 or a negative TELEM_E*.
 */
#ifndef TELEMD_DRAIN_H
#define TELEMD_DRAIN_H

#include <czmq.h>

typedef struct telemd_drain telemd_drain_t;

/* Starts watching `pull` (before or after it is bound).  Returns the
 * tracker, or NULL with *err set (TELEM_ENOMEM, TELEM_EIO: the monitor was
 * refused). */
telemd_drain_t *telemd_drain_new(zsock_t *pull, int *err);
void telemd_drain_destroy(telemd_drain_t **self_p);

/* The socket that becomes readable when connection events wait; owned by
 * the tracker, for the owner's poller. */
zsock_t *telemd_drain_sock(telemd_drain_t *self);

/* Handles every event waiting, without blocking. */
void telemd_drain_handle(telemd_drain_t *self);

/* Shuts the writing side of every ingest connection open now (see above);
 * later connections are shut as they are reported.  Returns how many were
 * shut. */
int telemd_drain_release(telemd_drain_t *self);

/* Ingest connections still open (as far as events have told). */
int telemd_drain_open(const telemd_drain_t *self);

#endif
