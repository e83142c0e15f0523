/* telem_sock.h - the one socket factory of telem's daemons (czmq).
 *
 * A daemon socket is made in one call: a czmq socket of a ZMQ type, with
 * the limits that daemon wants (largest message, queue bounds, linger, send
 * timeout) applied before it binds or connects, so no message can arrive
 * under the defaults.  A bind reports the endpoint actually bound: for
 * "tcp://HOST:0" (or ":*") the kernel picks the port, and the daemon writes
 * the real address to its endpoints or node file for clients to find; an
 * ipc endpoint reports itself.
 *
 * Built on czmq's zsock (STYLE.md: one socket factory) and kept in its own
 * small library, telem_sock, so that telemd and the dictionary server share
 * it without the dictionary linking the node agent, and telem_core stays
 * free of czmq.  Libraries that end up in user programs make their
 * sockets with the same options through the raw-libzmq path instead
 * (telem_sock_raw.h), which never initialises czmq.
 *
 * Error convention: 0 or a negative TELEM_E* code (telem_error.h).  When a
 * bind or connect fails, errno holds libzmq's reason (for strerror() or
 * zmq_strerror()).  Nothing here logs.
 *
 * Thread safety: the functions touch only their arguments; a socket they
 * return belongs to the caller and, like every ZMQ socket, is used by one
 * thread at a time (it may be handed to an actor thread).
 */
#ifndef TELEM_SOCK_H
#define TELEM_SOCK_H

#include <czmq.h>

#include "telem_sock_raw.h"
#include <limits.h>
#include <stddef.h>

/* Options (telem_sock_opts_t, TELEM_SOCK_KEEP) are those of the raw path,
 * telem_sock_raw.h, and mean the same here. */

/* Creates a socket of ZMQ `type` (ZMQ_ROUTER, ZMQ_PULL, ...) with `opts`
 * applied and binds it to `endpoint` ("ipc:///path", "tcp://127.0.0.1:0",
 * "tcp://0.0.0.0:5555"; no czmq '@'/'>' prefix).  When `bound` is not
 * NULL the endpoint actually bound is written there (see
 * telem_sock_bind()).  Returns the socket, owned by the caller
 * (zsock_destroy()), or NULL with *err (when err is not NULL) set to
 * TELEM_ENOMEM (no socket), TELEM_EIO (the bind failed; errno says why) or
 * TELEM_ETOOBIG (the bound endpoint does not fit in `bound_size` bytes).
 * *err is 0 on success. */
zsock_t *telem_sock_new_bind(int type, const telem_sock_opts_t *opts,
                             const char *endpoint, char *bound,
                             size_t bound_size, int *err);

/* Binds `sock` to one more endpoint, as telem_sock_new_bind() (one ROUTER
 * may serve an ipc and a TCP endpoint), CURVE with `keys` when it is a
 * TCP endpoint and keys is not NULL (telem_sock_raw.h, opts.keys; plain
 * endpoints are bound before CURVE ones).  When `bound` is not NULL, writes
 * the endpoint actually bound there: the kernel's port for a TCP port 0 or
 * '*', else `endpoint` as libzmq reports it.  Returns 0, TELEM_EIO (the
 * bind failed; errno says why; `bound` is untouched) or TELEM_ETOOBIG (the
 * socket is bound but the endpoint did not fit in `bound`; it is left
 * holding an empty string). */
int telem_sock_bind(zsock_t *sock, const char *endpoint,
                    const telem_keys_t *keys, char *bound,
                    size_t bound_size);

/* Creates a socket of ZMQ `type` with `opts` applied and connects it to
 * `endpoint` (libzmq connects in the background: a peer that is not there
 * yet is not an error).  Returns the socket, owned by the caller, or NULL
 * when no socket could be made or the endpoint is malformed (errno then
 * says why). */
zsock_t *telem_sock_new_connect(int type, const telem_sock_opts_t *opts,
                                const char *endpoint);

#endif
