/* telem_zap.c - the ZAP handler of a daemon (telem_zap.h).
 *
 * A thread of its own with one REP socket bound at inproc://zeromq.zap.01
 * in czmq's context: libzmq sends it one request per CURVE handshake on
 * that context and waits for the answer before the client may send a
 * byte.  The caller's thread makes and binds the sockets, so
 * telem_zap_new() returns with the handler in place or with the bind's
 * error, then hands them to the thread; telem_zap_destroy() sends one
 * byte on an inproc pair, joins the thread (a join no signal can cut
 * short) and closes the sockets.  The thread blocks every signal: a
 * daemon reads its signals in its own threads (a signalfd, czmq's
 * handler), and one landing here would be lost to them.
 *
 * A request (RFC 27): version "1.0", request id, domain, address,
 * identity, mechanism, credentials.  The answer: version, request id,
 * status code ("200" or "400"), status text, user id ("job" when allowed)
 * and an empty metadata frame.
 */
#include "telem_zap.h"

#include <czmq.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "telem_error.h"
#include "telem_log.h"

#define S_ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define S_ZAP_FRAMES_MAX 16     /* CURVE's request has 7 */

struct telem_zap {
    const telem_keys_t *keys;
    void *rep;                  /* bound at S_ZAP_ENDPOINT */
    void *stop_rx, *stop_tx;    /* the inproc pair that ends the thread */
    pthread_t thread;
    int running;
    atomic_uint_fast64_t allowed;
    atomic_uint_fast64_t refused;
};

/* One request's frames, read whole (at most S_ZAP_FRAMES_MAX kept). */
typedef struct {
    zmq_msg_t f[S_ZAP_FRAMES_MAX];
    size_t n, kept;
} s_req_t;

static int
s_recv(void *rep, s_req_t *r)
{
    int more = 1;
    r->n = r->kept = 0;
    while (more) {
        zmq_msg_t skip, *m = r->kept < S_ZAP_FRAMES_MAX ? &r->f[r->kept]
                                                         : &skip;
        zmq_msg_init(m);
        if (zmq_msg_recv(m, rep, 0) < 0) {
            zmq_msg_close(m);
            return r->n ? 0 : -1;
        }
        more = zmq_msg_more(m);
        r->n++;
        if (m == &skip)
            zmq_msg_close(m);
        else
            r->kept++;
    }
    return 0;
}

static void
s_req_close(s_req_t *r)
{
    for (size_t i = 0; i < r->kept; i++)
        zmq_msg_close(&r->f[i]);
    r->kept = r->n = 0;
}

/* 1 when frame i holds exactly `text`. */
static int
s_frame_is(s_req_t *r, size_t i, const char *text)
{
    size_t n = strlen(text);
    return i < r->kept && zmq_msg_size(&r->f[i]) == n
           && memcmp(zmq_msg_data(&r->f[i]), text, n) == 0;
}

/* Decides a request; `why` gets a refusal's reason. */
static int
s_allowed(const telem_zap_t *self, s_req_t *r, const char **why)
{
    if (r->n < 6 || r->n > S_ZAP_FRAMES_MAX)
        return *why = "malformed ZAP request", 0;
    if (!s_frame_is(r, 0, "1.0"))
        return *why = "unknown ZAP version", 0;
    if (!s_frame_is(r, 2, TELEM_KEYS_ZAP_DOMAIN))
        return *why = "not telem's ZAP domain", 0;
    if (!s_frame_is(r, 5, "CURVE") || r->n != 7)
        return *why = "not a CURVE client", 0;
    if (!telem_keys_match(self->keys, zmq_msg_data(&r->f[6]),
                          zmq_msg_size(&r->f[6])))
        return *why = "a key that is not this job's", 0;
    return 1;
}

static void
s_send(void *sock, const void *data, size_t size, int more)
{
    zmq_send(sock, data, size, more ? ZMQ_SNDMORE : 0);
}

static void
s_reply(void *rep, s_req_t *r, int ok, const char *why)
{
    const char *code = ok ? "200" : "400", *text = ok ? "OK" : why;
    const char *user = ok ? "job" : "";
    s_send(rep, "1.0", 3, 1);
    if (r->kept > 1)
        s_send(rep, zmq_msg_data(&r->f[1]), zmq_msg_size(&r->f[1]), 1);
    else
        s_send(rep, "", 0, 1);
    s_send(rep, code, 3, 1);
    s_send(rep, text, strlen(text), 1);
    s_send(rep, user, strlen(user), 1);
    s_send(rep, "", 0, 0);
}

static void
s_answer(telem_zap_t *self, telem_ratelimit_t *rl)
{
    s_req_t r;
    if (s_recv(self->rep, &r) != 0)
        return;
    const char *why = "";
    int ok = s_allowed(self, &r, &why);
    s_reply(self->rep, &r, ok, why);
    if (ok) {
        atomic_fetch_add(&self->allowed, 1);
    } else {
        char addr[64] = "?";
        if (r.kept > 3 && zmq_msg_size(&r.f[3]) < sizeof addr)
            snprintf(addr, sizeof addr, "%.*s", (int) zmq_msg_size(&r.f[3]),
                     (const char *) zmq_msg_data(&r.f[3]));
        uint64_t total = atomic_fetch_add(&self->refused, 1) + 1;
        telem_log_limited(rl, TELEM_LOG_WARN, "refused a connection from "
                          "%s: %s (%llu refused so far)", addr, why,
                          (unsigned long long) total);
    }
    s_req_close(&r);
}

/* The thread: answer until the stop byte. */
static void *
s_run(void *arg)
{
    telem_zap_t *self = arg;
    telem_ratelimit_t rl = TELEM_RATELIMIT_INIT(10, 5);
    zmq_pollitem_t items[2] = { { self->rep, 0, ZMQ_POLLIN, 0 },
                                { self->stop_rx, 0, ZMQ_POLLIN, 0 } };
    for (;;) {
        if (zmq_poll(items, 2, -1) < 0) {
            if (zmq_errno() == EINTR)
                continue;
            if (zmq_errno() != ETERM) {
                /* No CURVE client can get in from now on (the sockets
                   enforce the domain); the daemon stops so that its
                   supervisor starts it again. */
                telem_log(TELEM_LOG_ERROR, "the ZAP handler stopped (%s): "
                          "no CURVE client can connect; stopping",
                          zmq_strerror(zmq_errno()));
                raise(SIGTERM);
            }
            return NULL;
        }
        if (items[1].revents & ZMQ_POLLIN)
            return NULL;
        if (items[0].revents & ZMQ_POLLIN)
            s_answer(self, &rl);
    }
}

static int
s_sockets(telem_zap_t *self)
{
    void *ctx = zsys_init();
    char ep[64];
    int zero = 0;
    snprintf(ep, sizeof ep, "inproc://telem-zap-stop-%p", (void *) self);
    if (!ctx || !(self->rep = zmq_socket(ctx, ZMQ_REP))
        || !(self->stop_rx = zmq_socket(ctx, ZMQ_PAIR))
        || !(self->stop_tx = zmq_socket(ctx, ZMQ_PAIR)))
        return TELEM_ENOMEM;
    zmq_setsockopt(self->rep, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(self->stop_rx, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(self->stop_tx, ZMQ_LINGER, &zero, sizeof zero);
    if (zmq_bind(self->rep, S_ZAP_ENDPOINT) != 0)
        return TELEM_ESTATE;
    if (zmq_bind(self->stop_rx, ep) != 0 || zmq_connect(self->stop_tx, ep))
        return TELEM_EIO;
    return 0;
}

telem_zap_t *
telem_zap_new(const telem_keys_t *keys, int *err)
{
    int rc = TELEM_EINVAL;
    telem_zap_t *self = NULL;
    if (keys && (rc = TELEM_ENOMEM, self = calloc(1, sizeof *self))) {
        self->keys = keys;
        atomic_init(&self->allowed, 0);
        atomic_init(&self->refused, 0);
        rc = s_sockets(self);
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        if (!rc && pthread_create(&self->thread, NULL, s_run, self) != 0)
            rc = TELEM_ENOMEM;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        self->running = rc == 0;
        if (rc)
            telem_zap_destroy(&self);
    }
    if (err)
        *err = rc;
    return self;
}

void
telem_zap_destroy(telem_zap_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    telem_zap_t *self = *self_p;
    if (self->running) {
        while (zmq_send(self->stop_tx, "", 0, 0) < 0 && zmq_errno() == EINTR)
            ;
        pthread_join(self->thread, NULL);
    }
    if (self->rep)
        zmq_close(self->rep);
    if (self->stop_rx)
        zmq_close(self->stop_rx);
    if (self->stop_tx)
        zmq_close(self->stop_tx);
    free(self);
    *self_p = NULL;
}

void
telem_zap_counts(const telem_zap_t *self, uint64_t *allowed,
                 uint64_t *refused)
{
    if (allowed)
        *allowed = atomic_load(&((telem_zap_t *) self)->allowed);
    if (refused)
        *refused = atomic_load(&((telem_zap_t *) self)->refused);
}
