/* relay_core.h - what one telem_relay worker does with one relay request,
 * without sockets of its own (docs/relay.md).
 *
 * A worker owns an analysis-client connection set to the relay's group (an
 * ac_t, made with ac_connect_nodes(), so it never goes through relays
 * itself).  relay_core_serve() takes one relay request frame, checks it
 * (decodable, a read only: telem_proto_relay_inner_check()), asks the named
 * nodes with ac_forward() within the request's deadline, and hands back the
 * merged answer as one or more relay_reply frames through a callback, each
 * within TELEM_PROTO_MAX_MSG.  A request it cannot serve is answered with
 * one error frame carrying the request's id (or 0 when even that could not
 * be read).
 *
 * Bounds: replies held for one request are capped at max_bytes (a node
 * whose reply would pass the cap is reported missing with TELEM_ETOOBIG);
 * the node names of one request at TELEM_RELAY_NODES_MAX.
 *
 * Thread safety: a worker is used by one thread at a time; workers are
 * independent (each has its own ac_t, and so its own ZeroMQ context).
 */
#ifndef RELAY_CORE_H
#define RELAY_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "ac.h"
#include "telem_proto.h"

typedef struct relay_core relay_core_t;

/* Receives one frame of the answer; `more` 1 when another follows.
 * Returns 0, or an error that stops the answer there. */
typedef int (relay_core_send_fn)(void *arg, const void *frame, size_t size,
                                 int more);

/* Counters of one worker. */
typedef struct {
    uint64_t served;        /* requests answered with a relay_reply */
    uint64_t refused;       /* requests refused: not a read */
    uint64_t bad;           /* requests that could not be decoded */
    uint64_t parts;         /* relay_reply frames sent */
    uint64_t nodes_asked;
    uint64_t nodes_missing;
} relay_core_stats_t;

/* Makes a worker over `*ac_p` (taken: nulled on success and on failure),
 * holding at most max_bytes of replies per request (0: 256 MiB).  Returns
 * the worker or NULL (out of memory). */
relay_core_t *relay_core_new(ac_t **ac_p, size_t max_bytes);

/* Frees the worker and its ac_t; accepts NULL or a pointer to NULL. */
void relay_core_destroy(relay_core_t **self_p);

/* Serves one request frame; answers through send.  The relay's own
 * deadline is the request's deadline_ms.  Returns 0 (answered, perhaps
 * with an error frame), or send's error. */
int relay_core_serve(relay_core_t *self, const void *req, size_t size,
                     relay_core_send_fn *send, void *arg);

/* Sends one error frame with `id`, `code` and `message` through send (for
 * a caller that refuses a request before it reaches a worker; `enc` is
 * the caller's encoder). */
int relay_core_refuse(telem_proto_encoder_t *enc, uint64_t id, int code,
                      const char *message, relay_core_send_fn *send,
                      void *arg);

/* Reads the id of a relay request without checking the rest (0 when the
 * frame is not one). */
uint64_t relay_core_request_id(telem_proto_decoder_t *dec, const void *req,
                               size_t size);

void relay_core_stats(const relay_core_t *self, relay_core_stats_t *out);

#endif
