/* relay_server.h - telem_relay's sockets and workers (docs/relay.md).
 *
 * One ROUTER takes relay requests from the job's clients: on ipc in the
 * run directory (mode 0700: the user's boundary) and on TCP, CURVE with
 * the job's key when the server has keys (the caller binds its ZAP handler
 * first).  A fixed set of worker threads, each with its own analysis-client
 * connection set to the group (relay_core.h), serve requests side by side,
 * so a watcher's round never waits behind a large query; requests beyond
 * the workers wait in a bounded queue, and past it are refused with
 * TELEM_EFULL at once.  Requests of more frames than a relay request has,
 * or larger than one can be, are dropped and counted; logs are
 * rate-limited.
 *
 * Thread safety: one thread makes, runs and destroys a server; the
 * workers are its own.
 */
#ifndef RELAY_SERVER_H
#define RELAY_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "telem_keys.h"

typedef struct relay_server relay_server_t;

typedef struct {
    const char *name;               /* the relay's name, for logs */
    const char *const *names;       /* the group's nodes ... */
    const char *const *endpoints;   /* ... and their query endpoints */
    size_t ngroup;
    const char *ipc_bind;           /* "ipc://..." or NULL */
    const char *tcp_bind;           /* "tcp://HOST:PORT" or NULL */
    const telem_keys_t *keys;       /* CURVE on TCP; NULL: plain */
    int workers;                    /* > 0 */
    int max_pending;                /* queued beyond the workers, >= 0 */
    size_t max_reply_bytes;         /* replies held per request; 0: 256 MiB */
    int max_tcp_peers;              /* TCP connections held; 0: no cap */
} relay_server_config_t;

typedef struct {
    uint64_t requests;      /* taken from the ROUTER */
    uint64_t overloaded;    /* refused: every worker busy, queue full */
    uint64_t dropped;       /* malformed envelopes, dropped */
    uint64_t served, refused, bad, parts;
} relay_server_stats_t;

/* Starts the workers and binds.  Returns the server, or NULL with *err
 * (TELEM_EINVAL, TELEM_ENOMEM, TELEM_EIO: a bind failed) and a sentence in
 * why. */
relay_server_t *relay_server_new(const relay_server_config_t *cfg, int *err,
                                 char *why, size_t why_size);

/* Endpoints actually bound ("" when none). */
const char *relay_server_tcp_endpoint(const relay_server_t *self);
const char *relay_server_ipc_endpoint(const relay_server_t *self);

/* Serves until SIGINT or SIGTERM (czmq's handler).  Returns 0. */
int relay_server_run(relay_server_t *self);

/* Stops the workers (each finishes its request first, within that
 * request's deadline) and frees everything; accepts NULL or a pointer to
 * NULL. */
void relay_server_destroy(relay_server_t **self_p);

void relay_server_stats(const relay_server_t *self,
                        relay_server_stats_t *out);

#endif
