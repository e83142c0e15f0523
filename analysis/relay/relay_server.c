/* relay_server.c - telem_relay's ROUTER, its worker threads and the
 * bounded queue between them (relay_server.h).
 *
 * The main thread owns the ROUTER and one PAIR per worker (inproc, czmq's
 * context).  A request [identity, body] goes to a free worker as is; the
 * worker answers with [identity, part, flag] messages, flag "m" for a part
 * with more to come and "e" for the last, which the main thread passes on
 * to the ROUTER as [identity, part] and, on "e", gives the worker the next
 * queued request.  A worker is told to stop with "$TERM".
 */
#include "relay_server.h"

#include <czmq.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ac.h"
#include "relay_core.h"
#include "telem_error.h"
#include "telem_log.h"
#include "telem_peercap.h"
#include "telem_proto.h"
#include "telem_sock.h"
#include "telem_why.h"

/* A request: a routing id, perhaps an empty delimiter, the body. */
#define S_REQ_FRAMES_MAX 3
/* Largest request frame: the inner request plus every node name. */
#define S_REQ_MAX (TELEM_RELAY_INNER_MAX + TELEM_RELAY_NODES_MAX * 260 + 4096)

typedef struct {
    relay_server_t *srv;
    relay_core_t *core;
    zsock_t *pipe;          /* worker's end */
    zsock_t *main;          /* main thread's end */
    pthread_t thread;
    int started;
    int busy;
} s_worker_t;

struct relay_server {
    char name[256];
    zsock_t *router;
    char tcp[256], ipc[512];
    s_worker_t *w;
    int nworkers;
    zlist_t *queue;         /* zmsg_t *, at most max_pending */
    int max_pending;
    zpoller_t *poller;
    telem_proto_encoder_t *enc;
    telem_proto_decoder_t *dec;
    telem_peercap_t *cap;
    telem_ratelimit_t rl;
    relay_server_stats_t st;
};

/* ---- workers ----------------------------------------------------------- */

typedef struct {
    zsock_t *pipe;
    zframe_t *id;
} s_out_t;

static int
s_send_part(void *arg, const void *frame, size_t size, int more)
{
    s_out_t *o = arg;
    zmsg_t *m = zmsg_new();
    if (!m)
        return TELEM_ENOMEM;
    zmsg_append(m, &(zframe_t *) { zframe_dup(o->id) });
    zmsg_addmem(m, frame, size);
    zmsg_addstr(m, more ? "m" : "e");
    return zmsg_send(&m, o->pipe) == 0 ? 0 : TELEM_EIO;
}

static void *
s_worker_run(void *arg)
{
    s_worker_t *w = arg;
    for (;;) {
        zmsg_t *m = zmsg_recv(w->pipe);
        if (!m)
            continue;   /* interrupted: wait for $TERM */
        if (zmsg_size(m) != 2) {
            zmsg_destroy(&m);
            break;      /* $TERM */
        }
        zframe_t *id = zmsg_pop(m), *body = zmsg_pop(m);
        s_out_t o = { w->pipe, id };
        if (relay_core_serve(w->core, zframe_data(body), zframe_size(body),
                             s_send_part, &o) != 0)
            s_send_part(&o, "", 0, 0);   /* still free the worker */
        zframe_destroy(&id);
        zframe_destroy(&body);
        zmsg_destroy(&m);
    }
    return NULL;
}

static int
s_worker_start(relay_server_t *self, s_worker_t *w, int k,
               const relay_server_config_t *cfg)
{
    char ep[128];
    int err = 0;
    snprintf(ep, sizeof ep, "inproc://relay-%p-%d", (void *) self, k);
    ac_t *ac = ac_connect_nodes(cfg->names, cfg->endpoints, cfg->ngroup, 0,
                                &err);
    if (!ac)
        return err ? err : TELEM_ENOMEM;
    if (ac_set_max_reply(ac, TELEM_RELAY_FRAME_MAX) != 0) {
        ac_close(&ac);
        return TELEM_EIO;
    }
    w->srv = self;
    if (!(w->core = relay_core_new(&ac, cfg->max_reply_bytes)))
        return TELEM_ENOMEM;
    char bind[140], conn[140];
    snprintf(bind, sizeof bind, "@%s", ep);
    snprintf(conn, sizeof conn, ">%s", ep);
    if (!(w->main = zsock_new_pair(bind)) || !(w->pipe = zsock_new_pair(conn)))
        return TELEM_ENOMEM;
    if (pthread_create(&w->thread, NULL, s_worker_run, w) != 0)
        return TELEM_ENOMEM;
    w->started = 1;
    return 0;
}

static void
s_worker_stop(s_worker_t *w)
{
    if (w->started) {
        zstr_send(w->main, "$TERM");
        pthread_join(w->thread, NULL);
    }
    zsock_destroy(&w->main);
    zsock_destroy(&w->pipe);
    relay_core_destroy(&w->core);
}

/* ---- dispatch ---------------------------------------------------------- */

/* Answers a request nobody will serve with one error frame. */
static void
s_refuse(relay_server_t *self, zmsg_t **msg_p, int code, const char *why)
{
    zmsg_t *m = *msg_p;
    zframe_t *id = zmsg_first(m), *body = zmsg_last(m);
    uint64_t rid = relay_core_request_id(self->dec, zframe_data(body),
                                         zframe_size(body));
    const telem_error_msg_t e = { .id = rid, .code = code, .message = why };
    const void *data;
    size_t size;
    if (telem_proto_encode_error(self->enc, &e, &data, &size) == 0) {
        zmsg_t *out = zmsg_new();
        zmsg_append(out, &(zframe_t *) { zframe_dup(id) });
        zmsg_addmem(out, data, size);
        zmsg_send(&out, self->router);
        zmsg_destroy(&out);
    }
    zmsg_destroy(msg_p);
}

/* Hands [id, body] to worker w. */
static void
s_dispatch(relay_server_t *self, s_worker_t *w, zmsg_t **msg_p)
{
    zmsg_t *m = *msg_p;
    if (zmsg_size(m) == 3) {   /* drop an empty delimiter */
        zframe_t *id = zmsg_pop(m), *delim = zmsg_pop(m);
        zframe_destroy(&delim);
        zmsg_prepend(m, &id);
    }
    (void) self;
    w->busy = 1;
    zmsg_send(msg_p, w->main);
    zmsg_destroy(msg_p);
}

static void
s_on_request(relay_server_t *self)
{
    zmsg_t *m = zmsg_recv(self->router);
    if (!m)
        return;
    self->st.requests++;
    size_t nf = zmsg_size(m);
    if (nf < 2 || nf > S_REQ_FRAMES_MAX) {
        self->st.dropped++;
        telem_log_limited(&self->rl, TELEM_LOG_WARN, "dropped a request of "
                          "%zu frames (a relay request is one)", nf - 1);
        zmsg_destroy(&m);
        return;
    }
    for (int k = 0; k < self->nworkers; k++)
        if (!self->w[k].busy) {
            s_dispatch(self, &self->w[k], &m);
            return;
        }
    if ((int) zlist_size(self->queue) < self->max_pending) {
        zlist_append(self->queue, m);
        return;
    }
    self->st.overloaded++;
    telem_log_limited(&self->rl, TELEM_LOG_WARN, "every worker busy and %d "
                      "requests queued: refusing", self->max_pending);
    s_refuse(self, &m, TELEM_EFULL, "relay overloaded: every worker busy "
             "and its queue full; ask the nodes directly");
}

static void
s_on_worker(relay_server_t *self, s_worker_t *w)
{
    zmsg_t *m = zmsg_recv(w->main);
    if (!m)
        return;
    char *flag = zmsg_size(m) == 3 ? zframe_strdup(zmsg_last(m)) : NULL;
    int end = !flag || strcmp(flag, "e") == 0;
    free(flag);
    zframe_t *last = zmsg_last(m);
    zmsg_remove(m, last);
    zframe_destroy(&last);
    if (zmsg_size(m) == 2 && zframe_size(zmsg_last(m)) > 0)
        zmsg_send(&m, self->router);
    zmsg_destroy(&m);
    if (!end)
        return;
    w->busy = 0;
    zmsg_t *next = zlist_pop(self->queue);
    if (next)
        s_dispatch(self, w, &next);
}

int
relay_server_run(relay_server_t *self)
{
    while (!zsys_interrupted) {
        void *which = zpoller_wait(self->poller, -1);
        if (!which) {
            if (zpoller_terminated(self->poller))
                break;
            continue;
        }
        if (which == self->router) {
            s_on_request(self);
            continue;
        }
        if (self->cap && which == telem_peercap_sock(self->cap)) {
            telem_peercap_handle(self->cap);
            continue;
        }
        for (int k = 0; k < self->nworkers; k++)
            if (which == self->w[k].main)
                s_on_worker(self, &self->w[k]);
    }
    return 0;
}

/* ---- construction ------------------------------------------------------ */

static int
s_bind(relay_server_t *self, const relay_server_config_t *cfg, char *why,
       size_t why_size)
{
    const telem_sock_opts_t o = {
        .max_msg = S_REQ_MAX, .sndhwm = 1000, .rcvhwm = 1000,
        .linger_ms = 0, .sndtimeo_ms = 0, .immediate = 0,
        .reconnect_ivl_max_ms = 0, .keys = cfg->keys,
    };
    int err = 0;
    const char *first = cfg->ipc_bind ? cfg->ipc_bind : cfg->tcp_bind;
    char *out = cfg->ipc_bind ? self->ipc : self->tcp;
    size_t outsz = cfg->ipc_bind ? sizeof self->ipc : sizeof self->tcp;
    /* Plain (ipc) endpoints are bound before CURVE ones (telem_sock.h). */
    self->router = telem_sock_new_bind(ZMQ_ROUTER, &o, first, out, outsz,
                                       &err);
    if (!self->router) {
        telem_why(why, why_size, "cannot bind %s: %s", first,
                  zmq_strerror(errno));
        return err ? err : TELEM_EIO;
    }
    if (cfg->ipc_bind && cfg->tcp_bind
        && telem_sock_bind(self->router, cfg->tcp_bind, cfg->keys, self->tcp,
                           sizeof self->tcp) != 0) {
        telem_why(why, why_size, "cannot bind %s: %s", cfg->tcp_bind,
                  zmq_strerror(errno));
        return TELEM_EIO;
    }
    if (cfg->tcp_bind && cfg->max_tcp_peers > 0
        && !(self->cap = telem_peercap_new(self->router, cfg->max_tcp_peers,
                                           &err))) {
        telem_why(why, why_size, "cannot watch TCP peers: %s",
                  telem_strerror(err));
        return err;
    }
    return 0;
}

static int
s_setup(relay_server_t *self, const relay_server_config_t *cfg, char *why,
        size_t why_size)
{
    snprintf(self->name, sizeof self->name, "%s", cfg->name);
    self->max_pending = cfg->max_pending;
    self->rl = (telem_ratelimit_t) TELEM_RATELIMIT_INIT(10, 5);
    self->queue = zlist_new();
    self->enc = telem_proto_encoder_new();
    self->dec = telem_proto_decoder_new();
    self->w = calloc((size_t) cfg->workers, sizeof *self->w);
    if (!self->queue || !self->enc || !self->dec || !self->w)
        return TELEM_ENOMEM;
    int rc = s_bind(self, cfg, why, why_size);
    if (rc)
        return rc;
    self->poller = zpoller_new(self->router, NULL);
    if (!self->poller)
        return TELEM_ENOMEM;
    if (self->cap)
        zpoller_add(self->poller, telem_peercap_sock(self->cap));
    for (int k = 0; k < cfg->workers; k++) {
        self->nworkers = k + 1;
        if ((rc = s_worker_start(self, &self->w[k], k, cfg)) != 0) {
            telem_why(why, why_size, "cannot start worker %d: %s", k,
                      telem_strerror(rc));
            return rc;
        }
        zpoller_add(self->poller, self->w[k].main);
    }
    return 0;
}

relay_server_t *
relay_server_new(const relay_server_config_t *cfg, int *err, char *why,
                 size_t why_size)
{
    int rc = TELEM_EINVAL;
    relay_server_t *self = NULL;
    if (!cfg || !cfg->name || cfg->ngroup == 0 || cfg->workers <= 0
        || cfg->max_pending < 0 || (!cfg->ipc_bind && !cfg->tcp_bind)) {
        telem_why(why, why_size, "invalid relay configuration");
        goto out;
    }
    rc = TELEM_ENOMEM;
    if (!(self = calloc(1, sizeof *self)))
        goto out;
    rc = s_setup(self, cfg, why, why_size);
    if (rc)
        relay_server_destroy(&self);
out:
    if (err)
        *err = rc;
    return self;
}

const char *
relay_server_tcp_endpoint(const relay_server_t *self)
{
    return self->tcp;
}

const char *
relay_server_ipc_endpoint(const relay_server_t *self)
{
    return self->ipc;
}

void
relay_server_stats(const relay_server_t *self, relay_server_stats_t *out)
{
    *out = self->st;
    for (int k = 0; k < self->nworkers; k++) {
        relay_core_stats_t c;
        if (!self->w[k].core)
            continue;
        relay_core_stats(self->w[k].core, &c);
        out->served += c.served;
        out->refused += c.refused;
        out->bad += c.bad;
        out->parts += c.parts;
    }
}

void
relay_server_destroy(relay_server_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    relay_server_t *self = *self_p;
    for (int k = 0; k < self->nworkers; k++)
        s_worker_stop(&self->w[k]);
    zpoller_destroy(&self->poller);
    telem_peercap_destroy(&self->cap);
    zsock_destroy(&self->router);
    for (zmsg_t *m; self->queue && (m = zlist_pop(self->queue));)
        zmsg_destroy(&m);
    zlist_destroy(&self->queue);
    telem_proto_encoder_destroy(&self->enc);
    telem_proto_decoder_destroy(&self->dec);
    free(self->w);
    free(self);
    *self_p = NULL;
}
