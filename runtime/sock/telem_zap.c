/* telem_zap.c - the ZAP handler of a daemon (telem_zap.h).
 *
 * A czmq actor with one REP socket bound at inproc://zeromq.zap.01 in
 * czmq's context: libzmq sends it one request per CURVE handshake on that
 * context and waits for the answer before the client may send a byte.
 * The bind happens in the actor before it signals its pipe, so
 * telem_zap_new() returns with the handler in place (zactor_new waits
 * for that signal); the result of the bind travels in the shared state.
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
#include <string.h>

#include "telem_error.h"
#include "telem_log.h"

#define S_ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define S_ZAP_FRAMES_MAX 16     /* CURVE's request has 7 */

struct telem_zap {
    zactor_t *actor;
    const telem_keys_t *keys;
    int bind_rc;                /* set by the actor before it signals */
    atomic_uint_fast64_t allowed;
    atomic_uint_fast64_t refused;
};

/* 1 when frame `f` holds exactly `text`. */
static int
s_frame_is(zframe_t *f, const char *text)
{
    size_t n = strlen(text);
    return f && zframe_size(f) == n && memcmp(zframe_data(f), text, n) == 0;
}

/* Decides a request of n frames f[]; `why` gets a refusal's reason. */
static int
s_allowed(const telem_zap_t *self, zframe_t **f, size_t n, const char **why)
{
    if (n < 6 || n > S_ZAP_FRAMES_MAX)
        return *why = "malformed ZAP request", 0;
    if (!s_frame_is(f[0], "1.0"))
        return *why = "unknown ZAP version", 0;
    if (!s_frame_is(f[2], TELEM_KEYS_ZAP_DOMAIN))
        return *why = "not telem's ZAP domain", 0;
    if (!s_frame_is(f[5], "CURVE") || n != 7)
        return *why = "not a CURVE client", 0;
    if (!telem_keys_match(self->keys, zframe_data(f[6]), zframe_size(f[6])))
        return *why = "a key that is not this job's", 0;
    return 1;
}

static void
s_reply(zsock_t *rep, zframe_t *request_id, int ok, const char *why)
{
    zmsg_t *m = zmsg_new();
    if (!m)
        return;
    zmsg_addstr(m, "1.0");
    if (request_id)
        zmsg_addmem(m, zframe_data(request_id), zframe_size(request_id));
    else
        zmsg_addmem(m, NULL, 0);
    zmsg_addstr(m, ok ? "200" : "400");
    zmsg_addstr(m, ok ? "OK" : why);
    zmsg_addstr(m, ok ? "job" : "");
    zmsg_addmem(m, NULL, 0);
    zmsg_send(&m, rep);
    zmsg_destroy(&m);
}

static void
s_answer(telem_zap_t *self, zsock_t *rep, telem_ratelimit_t *rl)
{
    zmsg_t *req = zmsg_recv(rep);
    if (!req)
        return;
    zframe_t *f[S_ZAP_FRAMES_MAX] = { 0 };
    size_t n = 0;
    for (zframe_t *fr = zmsg_first(req); fr; fr = zmsg_next(req))
        if (n < S_ZAP_FRAMES_MAX)
            f[n++] = fr;
        else
            n = S_ZAP_FRAMES_MAX + 1;
    const char *why = "";
    int ok = s_allowed(self, f, n, &why);
    s_reply(rep, n > 1 ? f[1] : NULL, ok, why);
    if (ok) {
        atomic_fetch_add(&self->allowed, 1);
    } else {
        char addr[64] = "?";
        if (n > 3 && f[3] && zframe_size(f[3]) < sizeof addr)
            snprintf(addr, sizeof addr, "%.*s", (int) zframe_size(f[3]),
                     (const char *) zframe_data(f[3]));
        uint64_t total = atomic_fetch_add(&self->refused, 1) + 1;
        telem_log_limited(rl, TELEM_LOG_WARN, "refused a connection from "
                          "%s: %s (%llu refused so far)", addr, why,
                          (unsigned long long) total);
    }
    zmsg_destroy(&req);
}

/* The actor: bind, signal, answer until $TERM.  It takes no signal of the
   process: a daemon reads its signals from a signalfd or in its main
   thread, and one landing here would only interrupt the poll. */
static void
s_actor(zsock_t *pipe, void *arg)
{
    telem_zap_t *self = arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    telem_ratelimit_t rl = TELEM_RATELIMIT_INIT(10, 5);
    zsock_t *rep = zsock_new(ZMQ_REP);
    zpoller_t *poller = NULL;
    if (!rep)
        self->bind_rc = TELEM_ENOMEM;
    else if (zsock_bind(rep, S_ZAP_ENDPOINT) != 0)
        self->bind_rc = TELEM_ESTATE;
    else if (!(poller = zpoller_new(pipe, rep, NULL)))
        self->bind_rc = TELEM_ENOMEM;
    zsock_signal(pipe, 0);
    int asked = self->bind_rc != 0, failed = 0;
    if (poller)
        zpoller_set_nonstop(poller, true);
    while (poller && !asked) {
        void *which = zpoller_wait(poller, -1);
        if (which == rep) {
            s_answer(self, rep, &rl);
        } else if (which == pipe) {
            char *cmd = zstr_recv(pipe);
            asked = !cmd || strcmp(cmd, "$TERM") == 0;
            zstr_free(&cmd);
        } else if (zpoller_terminated(poller)) {
            failed = zmq_errno();
            if (failed != EINTR)
                break;
            failed = 0;
        }
    }
    zpoller_destroy(&poller);
    zsock_destroy(&rep);
    if (!asked && failed != ETERM) {
        /* The handler failed: no CURVE client can get in from now on (the
           sockets enforce the domain); the daemon stops so that its
           supervisor starts it again.  (ETERM: the process is ending.) */
        telem_log(TELEM_LOG_ERROR, "the ZAP handler stopped (%s): no CURVE "
                  "client can connect; stopping", zmq_strerror(failed));
        raise(SIGTERM);
    }
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
        self->actor = zactor_new(s_actor, self);
        rc = !self->actor ? TELEM_ENOMEM : self->bind_rc;
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
    zactor_destroy(&(*self_p)->actor);
    free(*self_p);
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
