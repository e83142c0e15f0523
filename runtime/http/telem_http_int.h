/* telem_http_int.h - PRIVATE to runtime/http (telem_http*.c); nothing else
 * includes it.  telem_http.h is the public API.
 *
 * The module is split by responsibility, and calls one way:
 *   telem_http.c      the server: options, the listening socket, the
 *                     libmicrohttpd daemon, the connection cap, the
 *                     token and body checks, calling the handler
 *   telem_http_req.c  one request: its body, arguments and headers, and
 *                     the reply (building the response the server queues)
 * telem_http.c calls telem_http_req.c, never the other way.  Internal
 * names carry the thttp_ prefix.
 */
#ifndef TELEM_HTTP_INT_H
#define TELEM_HTTP_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <microhttpd.h>

#include "telem_http.h"

typedef struct {
    const char *key;      /* in libmicrohttpd's memory for the connection */
    const char *value;
} thttp_arg_t;

typedef struct {
    char *name;           /* owned */
    char *value;          /* owned */
} thttp_hdr_t;

/* Per-connection request state; lives from the first call of the access
 * handler to the request's completion callback. */
struct telem_http_req {
    struct MHD_Connection *conn;
    const char *method;         /* libmicrohttpd's, valid for the request */
    const char *path;
    const char *server_name;    /* the server's, for the Server header */
    bool cors;
    char peer[64];
    char *body;                 /* NUL-terminated once complete */
    size_t body_len, body_cap;
    size_t max_body;
    size_t dropped;             /* body bytes past max_body, dropped */
    bool too_large;
    thttp_arg_t *args;
    size_t nargs, args_cap;
    bool args_failed;           /* out of memory while collecting them */
    thttp_hdr_t *hdrs;
    size_t nhdrs, hdrs_cap;
    struct MHD_Response *resp;  /* the reply, once made */
    unsigned status;
    bool replied;               /* a reply was made (resp set) */
    bool queued;                /* the server queued it */
};

/* A new request for `conn`; NULL when out of memory. */
telem_http_req_t *thttp_req_new(struct MHD_Connection *conn,
                                const char *method, const char *path,
                                const char *server_name, bool cors,
                                size_t max_body);
void thttp_req_destroy(telem_http_req_t **r_p);

/* Appends body bytes; past max_body sets too_large and counts them in
 * `dropped` instead.  0 or TELEM_ENOMEM. */
int thttp_req_append(telem_http_req_t *r, const char *data, size_t len);

/* How deep the body's [ and { nest, outside JSON strings; counting stops
 * once it reaches `stop`. */
size_t thttp_req_nesting(const telem_http_req_t *r, size_t stop);

/* Reads the query-string arguments from libmicrohttpd (before the
 * handler).  0 or TELEM_ENOMEM. */
int thttp_req_collect_args(telem_http_req_t *r);

/* Takes the reply made (the caller queues it and destroys it), or, when
 * none was made, builds a 500.  NULL only when out of memory. */
struct MHD_Response *thttp_req_take_response(telem_http_req_t *r,
                                             unsigned *status);

#endif
