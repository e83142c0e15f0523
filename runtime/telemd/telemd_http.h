/* telemd_http.h - telemd's HTTP face: GET /metrics for Prometheus
 * (docs/prometheus.md), served by the HTTP module (telem_http.h).
 *
 * The store belongs to telemd's actor thread, and HTTP requests run on the
 * HTTP module's threads, so a request never touches the store.  Each
 * GET /metrics asks the actor for a snapshot over an inproc socket (one
 * request frame, answered between the actor's other messages like a
 * query); the actor copies the newest point of every series into one
 * block (telemd_agent_snapshot) and sends it back as the reply's bytes,
 * without a copy; the request's thread then renders the block in the
 * format the Accept header asks for, compresses it when Accept-Encoding
 * allows gzip, and answers.  The actor is busy only for the copy; the
 * render, the compression and the network are the HTTP thread's.
 *
 * Answers: 200 with the exposition; 404 for another path; 405 (with
 * "Allow: GET, HEAD") for another method; 503 when the actor does not
 * answer within TELEMD_HTTP_SNAPSHOT_MS or has stopped; 500 when out of
 * memory.  Errors have the HTTP module's JSON shape.  The query argument
 * "timestamps=1" (or "true") adds each sample's timestamp.
 *
 * Thread safety: telemd_http_new and telemd_http_destroy belong to the
 * thread that owns the telemd; telemd_http_gone may be called from any
 * thread (the actor's, as it stops).
 */
#ifndef TELEMD_HTTP_H
#define TELEMD_HTTP_H

#include <stddef.h>

/* How long a request waits for the actor's snapshot. */
#define TELEMD_HTTP_SNAPSHOT_MS 5000

typedef struct telemd_http telemd_http_t;

/* Serves /metrics on `bind` ("127.0.0.1" when NULL; a numeric address,
 * telem_http.h) and `port` (0: ephemeral), asking the actor for snapshots
 * at the inproc endpoint `snap_ep`, where a ROUTER is bound.  `node` names
 * the server in log lines.  Returns the server, or NULL with *err set to
 * TELEM_EINVAL (bad address), TELEM_EIO (cannot bind: `why` says why) or
 * TELEM_ENOMEM. */
telemd_http_t *telemd_http_new(const char *bind, int port,
                               const char *snap_ep, int *err, char *why,
                               size_t why_size);

/* "http://ADDR:PORT/metrics" with the port bound (IPv6 in brackets). */
const char *telemd_http_url(const telemd_http_t *self);

/* Says that no snapshot will come any more (the actor stopped): waiting
 * requests answer 503 at once, later ones too. */
void telemd_http_gone(telemd_http_t *self);

/* Stops serving: closes the listening socket and the connections, waits
 * for running requests.  Accepts NULL; nulls *self_p. */
void telemd_http_destroy(telemd_http_t **self_p);

#endif
