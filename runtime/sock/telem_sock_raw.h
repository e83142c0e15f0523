/* telem_sock_raw.h - the socket factory's raw-libzmq path, for libraries
 * that must not touch czmq.
 *
 * The same one call as telem_sock.h (a socket of a ZMQ type, with its
 * limits applied before it binds or connects, so no message arrives
 * under the defaults), made with libzmq alone in a context the caller
 * owns.  Libraries linked into user programs (libtelem's sender, the
 * analysis client libtelem_ac, the dictionary client libtelem_dict) use
 * this path: czmq initialises itself on its first socket and then
 * installs SIGINT and SIGTERM handlers in the host program, which is not
 * a library's business.  This file is its own library, telem_sock_raw,
 * so that linking it pulls in no czmq code; the installed libtelem and
 * libtelem_ac build its one source in, so their users link them as
 * before.
 *
 * Endpoints follow the factory's prefix convention: "@tcp://..." binds,
 * ">tcp://..." connects; an endpoint without a prefix connects (every raw
 * socket of telem is a client's).
 *
 * Error convention: 0 or a negative TELEM_E* code (telem_error.h).  When
 * a bind or connect fails, errno holds libzmq's reason.  Nothing here
 * logs.
 *
 * Thread safety: the functions touch only their arguments; a socket they
 * return belongs to the caller and, like every ZMQ socket, is used by one
 * thread at a time.
 */
#ifndef TELEM_SOCK_RAW_H
#define TELEM_SOCK_RAW_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "telem_keys.h"

/* A field set to TELEM_SOCK_KEEP is left at libzmq's (or czmq's)
 * default. */
#define TELEM_SOCK_KEEP INT_MIN

/* Socket options, applied in this order before the bind or connect.  Name
 * every field (a zeroed struct would mean "no message may hold a byte"):
 *   max_msg      ZMQ_MAXMSGSIZE, bytes; -1 no limit (larger messages make
 *                libzmq drop the connection); the czmq path takes values
 *                that fit an int
 *   sndhwm       ZMQ_SNDHWM, messages queued per peer; 0 no limit
 *   rcvhwm       ZMQ_RCVHWM, likewise for receiving
 *   linger_ms    ZMQ_LINGER: how long unsent messages outlive close; 0
 *                drops them, -1 waits forever
 *   sndtimeo_ms  ZMQ_SNDTIMEO: 0 a full queue fails the send at once
 *                (a ROUTER then drops the reply), -1 blocks
 *   immediate    ZMQ_IMMEDIATE when 1: queue only to completed
 *                connections (nothing waits for a dead peer); 0 (or
 *                KEEP) leaves the default, off
 *   reconnect_ivl_max_ms  ZMQ_RECONNECT_IVL_MAX: the longest wait between
 *                reconnection attempts; 0 (or KEEP) leaves the default
 *   keys         the job's keys (telem_keys.h): a tcp:// endpoint is then
 *                CURVE, the server side for a bind (only clients holding
 *                the keys get in, through the process's ZAP handler,
 *                telem_zap.h; without one nobody does) and the client
 *                side for a connect; ipc and inproc endpoints stay plain
 *                (the run directory, mode 0700, guards them).  NULL: plain
 *                everywhere.  Kept by pointer only during the call.
 * Every TCP bind also gets a listen backlog of TELEM_SOCK_BACKLOG, so a
 * storm of connecting clients is queued by the kernel, not refused and
 * retried at the reconnect interval. */
typedef struct {
    int64_t max_msg;
    int sndhwm;
    int rcvhwm;
    int linger_ms;
    int sndtimeo_ms;
    int immediate;
    int reconnect_ivl_max_ms;
    const telem_keys_t *keys;
} telem_sock_opts_t;

/* The listen backlog of every TCP bind (libzmq's default is 100). */
#define TELEM_SOCK_BACKLOG 1024

/* Sets the options of `opts` on a libzmq socket, before its bind or
 * connect: fields at TELEM_SOCK_KEEP, and immediate and
 * reconnect_ivl_max_ms at 0, are left alone.  Both halves of the factory
 * use it (telem_sock.c on the socket under a zsock_t).  0, or -1 with
 * errno set by libzmq. */
int telem_sock_raw_apply(void *sock, const telem_sock_opts_t *opts);

/* Puts the security of `keys` for `endpoint` on a libzmq socket, just
 * before it binds (bind 1) or connects (bind 0) there: CURVE for a tcp://
 * endpoint when keys is not NULL, with the backlog above for a TCP bind;
 * the NULL mechanism otherwise (libzmq takes a socket's options anew at
 * every bind and connect, so one ROUTER may serve ipc plainly and TCP
 * with CURVE; its plain endpoints are bound first, since a ZAP domain
 * cannot be taken back: a plain bind after a CURVE one is EINVAL).  0, or
 * -1 with errno set. */
int telem_sock_raw_secure(void *sock, const char *endpoint, int bind,
                          const telem_keys_t *keys);

/* Creates a socket of ZMQ `type` in the libzmq context `zctx` with `opts`
 * applied, then binds it ("@" prefix) or connects it (">" or no prefix)
 * to `endpoint`.  Returns the socket, owned by the caller (zmq_close()),
 * or NULL with *err (when err is not NULL) set to TELEM_ENOMEM (no
 * socket: out of memory), TELEM_EIO (no socket for another reason, such
 * as the context's socket limit, or the bind failed; errno says why) or
 * TELEM_EINVAL (an option was refused or the endpoint is malformed).
 * *err is 0 on success. */
void *telem_sock_raw_new(void *zctx, int type, const telem_sock_opts_t *opts,
                         const char *endpoint, int *err);

#endif
