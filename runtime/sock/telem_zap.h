/* telem_zap.h - the ZAP handler of a daemon: who may connect to its CURVE
 * sockets.
 *
 * libzmq asks a process's ZAP handler (RFC 27, a socket bound at
 * inproc://zeromq.zap.01 in the socket's context) whether a CURVE client
 * may in.  telem_zap_new() binds one in czmq's context (zsys), before the
 * daemon binds its first CURVE socket, and answers yes only to a client on
 * telem's domain ("telem") that proved it holds the job's key
 * (telem_keys.h); every other request (another key, another domain,
 * another mechanism, a malformed request) is refused, counted and logged
 * with a rate limit.
 *
 * Failing closed: libzmq 4.3 lets any CURVE client in when no handler is
 * bound, unless the server socket enforces its ZAP domain, which every
 * CURVE server of telem does (telem_keys_apply_server).  So a handler that
 * is gone refuses everyone.  A handler that stops on an error it cannot
 * get past logs one line and sends its process SIGTERM: the daemon stops
 * cleanly and its supervisor starts it again.
 *
 * Thread safety: one handler per process; telem_zap_counts() may be
 * called from any thread.
 */
#ifndef TELEM_ZAP_H
#define TELEM_ZAP_H

#include <stdint.h>

#include "telem_keys.h"

typedef struct telem_zap telem_zap_t;

/* Starts the handler for `keys` (kept by pointer: they must outlive the
 * handler).  Returns it once it is bound, or NULL with *err (NULL
 * allowed) set to TELEM_EINVAL (no keys), TELEM_ESTATE (another handler
 * is bound in this process) or TELEM_ENOMEM. */
telem_zap_t *telem_zap_new(const telem_keys_t *keys, int *err);

/* Stops the handler and frees it; from then on no CURVE client gets in.
 * Accepts NULL or a pointer to NULL; nulls the caller's pointer. */
void telem_zap_destroy(telem_zap_t **self_p);

/* Requests allowed and refused so far. */
void telem_zap_counts(const telem_zap_t *self, uint64_t *allowed,
                      uint64_t *refused);

#endif
