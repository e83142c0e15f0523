/* telemd_http.c - GET /metrics on telemd (telemd_http.h): the request's
 * checks, the snapshot fetched from the actor, the render and gzip.
 *
 * Runs on the HTTP module's threads.  A request makes its own DEALER to
 * the actor's inproc snapshot endpoint (a ZeroMQ socket belongs to one
 * thread; connecting over inproc costs microseconds, nothing beside a
 * scrape every few seconds) and waits for the reply in short polls, so a
 * stopped actor (telemd_http_gone) is noticed at once.  The reply's frame
 * is the snapshot itself, read in place and freed with the message.
 */
#include "telemd_http.h"

#include <czmq.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_http.h"
#include "telem_log.h"
#include "telem_prom.h"
#include "telem_sock.h"
#include "telem_time.h"

#define S_POLL_MS 50                    /* steps of a request's wait */
#define S_THREADS 2u                    /* scrapes served at once */
#define S_MAX_CONNS 32u
#define S_MAX_BODY 4096u                /* GET and HEAD carry no body */

struct telemd_http {
    telem_http_t *http;
    char snap_ep[128];
    char url[160];
    atomic_int gone;
    pthread_mutex_t log_mu;             /* guards rl */
    telem_ratelimit_t rl;
};

/* One request frame, one reply frame; nothing kept at close. */
static const telem_sock_opts_t s_dealer_opts = {
    .max_msg = -1, .sndhwm = 1, .rcvhwm = 1, .linger_ms = 0,
    .sndtimeo_ms = 0,
};

static void
s_warn(telemd_http_t *self, const char *what)
{
    pthread_mutex_lock(&self->log_mu);
    telem_log_limited(&self->rl, TELEM_LOG_WARN, "/metrics: %s", what);
    pthread_mutex_unlock(&self->log_mu);
}

/* Asks the actor for a snapshot and waits at most TELEMD_HTTP_SNAPSHOT_MS;
 * on success *msg holds the block (the caller closes it).  Returns 0,
 * TELEM_ETIMEDOUT, TELEM_ECONN (the actor stopped), TELEM_ENOMEM (the
 * actor could not make one) or TELEM_EIO. */
static int
s_fetch(telemd_http_t *self, zmq_msg_t *msg)
{
    if (atomic_load(&self->gone))
        return TELEM_ECONN;
    zsock_t *dealer = telem_sock_new_connect(ZMQ_DEALER, &s_dealer_opts,
                                             self->snap_ep);
    if (!dealer)
        return TELEM_EIO;
    void *raw = zsock_resolve(dealer);
    int rc = zmq_send(raw, "S", 1, 0) == 1 ? TELEM_ETIMEDOUT : TELEM_EIO;
    int64_t deadline = telem_mono_ns() +
                       (int64_t) TELEMD_HTTP_SNAPSHOT_MS * TELEM_NS_PER_MS;
    while (rc == TELEM_ETIMEDOUT && telem_mono_ns() < deadline) {
        if (atomic_load(&self->gone)) {
            rc = TELEM_ECONN;
            break;
        }
        zmq_pollitem_t item = { raw, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll(&item, 1, S_POLL_MS) <= 0)
            continue;
        zmq_msg_init(msg);
        if (zmq_msg_recv(msg, raw, 0) < 0) {
            zmq_msg_close(msg);
            rc = TELEM_EIO;
        } else {
            rc = zmq_msg_size(msg) ? 0 : TELEM_ENOMEM;
            if (rc)
                zmq_msg_close(msg);
        }
    }
    zsock_destroy(&dealer);
    return rc;
}

static bool
s_true_arg(const char *v)
{
    return v && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0 ||
                 strcmp(v, "") == 0);
}

/* Renders the block of `msg` and replies with it, gzip'd if allowed. */
static void
s_reply_metrics(telemd_http_t *self, telem_http_req_t *r, zmq_msg_t *msg)
{
    telem_prom_opts_t o = {
        .format = telem_prom_negotiate(telem_http_req_header(r, "Accept")),
        .timestamps = s_true_arg(telem_http_req_arg(r, "timestamps")),
    };
    char *text = NULL, *gz = NULL;
    size_t len = 0, gz_len = 0;
    telem_prom_stats_t st;
    int rc = telem_prom_render(zmq_msg_data(msg), zmq_msg_size(msg), &o,
                               &text, &len, &st);
    if (rc) {
        telem_http_reply_error(r, 500, "Internal Server Error",
                               telem_strerror(rc));
        return;
    }
    if (st.skipped) {
        char what[128];
        snprintf(what, sizeof what, "%zu series left out: their names "
                 "or labels collide once mapped (docs/prometheus.md)",
                 st.skipped);
        s_warn(self, what);
    }
    telem_http_req_add_header(r, "Vary", "Accept, Accept-Encoding");
    const char *type = telem_prom_content_type(o.format);
    if (telem_prom_gzip_accepted(
            telem_http_req_header(r, "Accept-Encoding")) &&
        telem_prom_gzip(text, len, &gz, &gz_len) == 0) {
        free(text);
        telem_http_req_add_header(r, "Content-Encoding", "gzip");
        telem_http_reply_take(r, 200, type, &gz, gz_len);
        return;
    }
    telem_http_reply_take(r, 200, type, &text, len);
}

static void
s_handle(telem_http_req_t *r, void *arg)
{
    telemd_http_t *self = arg;
    const char *method = telem_http_req_method(r);
    if (strcmp(telem_http_req_path(r), "/metrics") != 0) {
        telem_http_reply_error(r, 404, "Not Found",
                               "telemd serves /metrics only");
        return;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        telem_http_req_add_header(r, "Allow", "GET, HEAD");
        telem_http_reply_error(r, 405, "Method Not Allowed",
                               "/metrics takes GET and HEAD");
        return;
    }
    zmq_msg_t msg;
    int rc = s_fetch(self, &msg);
    if (rc) {
        if (rc != TELEM_ECONN)
            s_warn(self, telem_strerror(rc));
        telem_http_reply_error(r, rc == TELEM_ENOMEM ? 500 : 503,
                               rc == TELEM_ENOMEM ? "Internal Server Error"
                                                  : "Service Unavailable",
                               rc == TELEM_ECONN ? "telemd is stopping"
                               : rc == TELEM_ETIMEDOUT
                                   ? "the node agent did not answer in time"
                                   : telem_strerror(rc));
        return;
    }
    s_reply_metrics(self, r, &msg);
    zmq_msg_close(&msg);
}

static void
s_make_url(telemd_http_t *self, const char *bind)
{
    const char *host = bind ? bind : "127.0.0.1";
    int port = telem_http_port(self->http);
    bool v6 = strchr(host, ':') != NULL && host[0] != '[';
    snprintf(self->url, sizeof self->url, "http://%s%s%s:%d/metrics",
             v6 ? "[" : "", host, v6 ? "]" : "", port);
}

telemd_http_t *
telemd_http_new(const char *bind, int port, const char *snap_ep, int *err,
                char *why, size_t why_size)
{
    int rc = TELEM_ENOMEM;
    telemd_http_t *self = calloc(1, sizeof *self);
    if (!self || !snap_ep ||
        snprintf(self->snap_ep, sizeof self->snap_ep, "%s", snap_ep) >=
            (int) sizeof self->snap_ep) {
        rc = self ? TELEM_EINVAL : TELEM_ENOMEM;
        free(self);
        if (err)
            *err = rc;
        return NULL;
    }
    pthread_mutex_init(&self->log_mu, NULL);
    self->rl = (telem_ratelimit_t) TELEM_RATELIMIT_INIT(10, 5);
    telem_http_opts_t o = {
        .bind = bind, .port = port, .max_body = S_MAX_BODY,
        .max_conns = S_MAX_CONNS, .threads = S_THREADS, .name = "telemd",
    };
    self->http = telem_http_new(&o, s_handle, self, &rc, why, why_size);
    if (!self->http) {
        pthread_mutex_destroy(&self->log_mu);
        free(self);
        self = NULL;
    } else {
        s_make_url(self, bind);
    }
    if (err)
        *err = self ? 0 : rc;
    return self;
}

const char *
telemd_http_url(const telemd_http_t *self)
{
    return self->url;
}

void
telemd_http_gone(telemd_http_t *self)
{
    if (self)
        atomic_store(&self->gone, 1);
}

void
telemd_http_destroy(telemd_http_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    telemd_http_t *self = *self_p;
    telemd_http_gone(self);
    telem_http_destroy(&self->http);
    pthread_mutex_destroy(&self->log_mu);
    free(self);
    *self_p = NULL;
}
