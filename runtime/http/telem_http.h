/* telem_http.h - telem's HTTP front end: a small server over libmicrohttpd
 * that hands each complete request to one handler and sends its one reply.
 *
 * telem_agg's OpenTSDB API is its first user; telemd's /metrics and an
 * offline viewer are meant to reuse it, so it knows nothing of OpenTSDB
 * beyond the shape of its error body.  docs/http.md describes what a
 * client sees (limits, token, bind address, errors).
 *
 * What the module does before a handler runs, so no handler repeats it:
 *   - binds the address it is given (loopback by default; a numeric IPv4
 *     or IPv6 literal only, never a name) and a port (0: ephemeral);
 *   - caps open connections (`max_conns`; one more is accepted and closed
 *     at once, never queued), closes idle or slow clients after
 *     `timeout_s`, serves from a pool of `threads` threads so one stalled
 *     client never holds another's request;
 *   - checks the bearer token, when one is set, on every request
 *     (401 with "WWW-Authenticate: Bearer" otherwise);
 *   - bounds the body: a Content-Length over `max_body` is answered 413
 *     before any byte of it is read; a chunked body growing past it is
 *     answered 413 once it ends (the excess is read and dropped; past as
 *     much again as the limit, at least 64 KiB, the connection is closed
 *     without an answer);
 *   - refuses a body whose brackets ([ and {, outside JSON strings) nest
 *     deeper than TELEM_HTTP_NESTING_MAX with 400: a JSON parser recurses
 *     once a level (jansson down to its own limit of 2,048, building
 *     every level before it refuses), and the stack and heap pages that
 *     touches stay resident on each server thread;
 *   - answers OPTIONS preflights itself when `cors` is on.
 * Those early answers carry OpenTSDB's error body (telem_http_reply_error)
 * as application/json.  Malformed HTTP never reaches the module:
 * libmicrohttpd answers 400 (505 for an unknown HTTP version) itself, or
 * closes the connection when not even a request line can be read.  Every
 * response the module makes carries "Server: <name>".
 *
 * Threads: the handler runs on the server thread that serves the
 * connection, several handlers at once on different threads; everything it
 * is handed (the request and every string read from it) is valid only
 * until it returns.  While a handler runs, the other connections of its
 * thread wait: keep handlers bounded (one deadline per request) and
 * `threads` at least the number of slow requests expected at once.
 *
 * Logging (telem_log, nothing on stdout): one ERROR line when
 * telem_http_new fails; rate-limited lines (10 per 10 s, shared by the
 * server's threads) for refused requests (INFO), connections refused at
 * the cap (WARN), a handler that made no reply (ERROR) and
 * libmicrohttpd's own complaints (INFO).
 */
#ifndef TELEM_HTTP_H
#define TELEM_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "telem_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Deepest nesting of a request body's [ and { (outside JSON strings)
 * that reaches a handler; OpenTSDB's bodies nest 4 deep. */
#define TELEM_HTTP_NESTING_MAX 64

typedef struct telem_http telem_http_t;
typedef struct telem_http_req telem_http_req_t;

typedef struct {
    const char *bind;     /* address to bind; NULL: "127.0.0.1".  "0.0.0.0",
                             "::" (both families where the system allows)
                             or any IPv4/IPv6 literal ("[::1]" accepted);
                             a host name is TELEM_EINVAL */
    int port;             /* 0..65535; 0: ephemeral (telem_http_port) */
    const char *token;    /* NULL: none; else every request needs
                             "Authorization: Bearer <token>", or the
                             query argument token=<token> (a browser
                             opening a URL); compared in constant time;
                             401 otherwise.  No CR, LF or space in it,
                             not empty */
    const char *const *open_paths;  /* NULL, or a NULL-terminated list of
                             exact paths that GET and HEAD serve without
                             the token (a page's scripts and styles,
                             which a browser fetches without credentials;
                             never data).  Kept by pointer: static */
    size_t max_body;      /* 0: 1 MiB.  Request bodies above it get 413 */
    unsigned max_conns;   /* 0: 64 open connections at most */
    unsigned timeout_s;   /* 0: 10 s without progress closes a connection */
    unsigned threads;     /* 0: 4 server threads */
    const char *name;     /* NULL: "telem".  The Server header and the
                             prefix of log lines ("telem_agg") */
    bool cors;            /* false (default): no CORS header at all.  true:
                             every response carries
                             "Access-Control-Allow-Origin: *" and OPTIONS
                             preflights are answered 204 before the token
                             check (a browser sends none with them) */
} telem_http_opts_t;

/* Called once per complete request (body fully received) on one of the
 * server's threads; several calls may run at once.  It must answer with
 * exactly one telem_http_reply* call before it returns; if it does not,
 * the module answers 500 in OpenTSDB's error shape. */
typedef void (*telem_http_fn)(telem_http_req_t *req, void *arg);

/* Starts listening and serving.  `o` NULL means all defaults; its strings
 * are copied.  `fn` (required) and `arg` are kept until destroy.  Returns
 * the server, or NULL with *err (NULL allowed) set to TELEM_EINVAL (a bad
 * option or address), TELEM_EIO (cannot bind or listen: port in use, an
 * address this host lacks) or TELEM_ENOMEM, and a sentence in `why`
 * (telem_why(): NULL or size 0 for none); one log line says the same. */
telem_http_t *telem_http_new(const telem_http_opts_t *o, telem_http_fn fn,
                             void *arg, int *err, char *why,
                             size_t why_size);

/* The port the server listens on (the ephemeral one when 0 was asked). */
int telem_http_port(const telem_http_t *self);

/* Stops listening, closes every connection, waits for running handlers to
 * return, frees the server.  Accepts NULL; nulls *self_p.  Never call it
 * from a handler. */
void telem_http_destroy(telem_http_t **self_p);

/* --- the request, valid only inside the handler --------------------------
 * The getters are safe on one request from the one thread that runs its
 * handler.  Returned strings belong to the request. */

/* "GET", "POST", "HEAD", ... as the client sent it. */
const char *telem_http_req_method(const telem_http_req_t *r);
/* The path, percent-decoded, without the query string ("/api/query").  A
 * "%00" ends it there. */
const char *telem_http_req_path(const telem_http_req_t *r);
/* The query-string arguments in the order sent, duplicates kept, keys and
 * values percent-decoded ('+' is a space).  A key without '=' has the value
 * "".  An index out of range gives NULL. */
size_t telem_http_req_nargs(const telem_http_req_t *r);
const char *telem_http_req_arg_key(const telem_http_req_t *r, size_t i);
const char *telem_http_req_arg_value(const telem_http_req_t *r, size_t i);
/* The first value given for `key`, or NULL when there is none. */
const char *telem_http_req_arg(const telem_http_req_t *r, const char *key);
/* A request header by name, case-insensitive; NULL when absent.  With a
 * repeated header, the first. */
const char *telem_http_req_header(const telem_http_req_t *r,
                                  const char *name);
/* The body, NUL-terminated ("" when none); *len (NULL allowed) receives
 * its length, which may include NUL bytes. */
const char *telem_http_req_body(const telem_http_req_t *r, size_t *len);
/* The client's address as text ("127.0.0.1", "::1"); "" when unknown. */
const char *telem_http_req_peer(const telem_http_req_t *r);

/* --- the reply ---------------------------------------------------------- */

/* Adds a header to the coming reply (name and value are copied).  Returns
 * 0, TELEM_EINVAL (an empty name, a name that is not an HTTP token, a CR,
 * LF or other control byte in the value, or a header the library sets
 * itself: Content-Length, Transfer-Encoding, Connection, Date, Server),
 * TELEM_ESTATE (the reply was sent) or TELEM_ENOMEM. */
int telem_http_req_add_header(telem_http_req_t *r, const char *name,
                              const char *value);

/* Replies with `status` (100..599) and a copy of body[0..len) (body NULL
 * with len 0 for none).  content_type ("application/json") may be NULL
 * for no Content-Type; it is checked as a header value.  Returns 0,
 * TELEM_EINVAL (bad status or content type; no reply is made), TELEM_ESTATE
 * (a reply was already made) or TELEM_ENOMEM. */
int telem_http_reply(telem_http_req_t *r, int status,
                     const char *content_type, const void *body,
                     size_t len);

/* As telem_http_reply, but the body is *body_p[0..len) itself, a malloc'd
 * block that the reply frees once sent: takes ownership of *body_p and
 * nulls it, whatever happens (no copy of a large answer). */
int telem_http_reply_take(telem_http_req_t *r, int status,
                          const char *content_type, char **body_p,
                          size_t len);

/* Replies with compact JSON (json_dumps JSON_COMPACT) as
 * "application/json".  Takes ownership of `json` and decrefs it whatever
 * happens.  Returns as telem_http_reply, TELEM_EINVAL for json NULL. */
int telem_http_reply_json(telem_http_req_t *r, int status, json_t *json);

/* Replies with OpenTSDB's error shape,
 * {"error":{"code":status,"message":message,"details":details}}, "details"
 * only when details is neither NULL nor "".  message NULL means "". */
int telem_http_reply_error(telem_http_req_t *r, int status,
                           const char *message, const char *details);

#ifdef __cplusplus
}
#endif
#endif
