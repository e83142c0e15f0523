/* ddict_actor.c - a dictionary server's sockets and loop (see ddict_actor.h).
 *
 * Messages are read with zmq_msg_recv() into a reused frame array, so a
 * value frame travels from the socket into the store without a copy.  A
 * burst ends after S_BURST messages or when nothing is waiting; then the
 * server flushes (group commit) and the loop polls again with a timeout
 * that ends at the server's next deadline (event waits, replication).
 */
#include "ddict_actor.h"

#include <czmq.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "telem_actor_loop.h"
#include "telem_error.h"
#include "telem_grow.h"
#include "telem_limits.h"
#include "telem_log.h"
#include "telem_paths.h"
#include "telem_peercap.h"
#include "telem_proto.h"
#include "telem_sock.h"
#include "telem_time.h"

#define S_BURST 256
/* The longest wait: the server's next deadline comes first when it has
   one; the cap only bounds how late an interrupt that slipped in before
   the wait is noticed (telemd waits the same). */
#define S_POLL_CAP_MS 1000
#define S_LINGER_MS 200
#define S_BIG_MSG (1u << 20)      /* a message this large counts for trim */

/* Requests and replication carry values of up to TELEM_DICT_VALUE_MAX, each
   in a frame of its own, and a server must not drop them: that is the
   ROUTER's frame limit (the header frame is held to 64 MiB by the codec),
   with unbounded queues.  The peer DEALERs receive only acknowledgements,
   one header frame each of id, epoch and code (about 30 bytes): their
   frame limit is DDICT_ACTOR_ACK_MAX.  Only the ROUTER lingers, so that
   replies sent just before a stop still leave. */
static const telem_sock_opts_t s_router_opts = {
    .max_msg = (int) TELEM_DICT_VALUE_MAX, .sndhwm = 0, .rcvhwm = 0,
    .linger_ms = S_LINGER_MS, .sndtimeo_ms = TELEM_SOCK_KEEP,
};
static const telem_sock_opts_t s_peer_opts = {
    .max_msg = (int) DDICT_ACTOR_ACK_MAX, .sndhwm = 0, .rcvhwm = 0,
    .linger_ms = 0, .sndtimeo_ms = TELEM_SOCK_KEEP,
};

typedef struct {
    char name[TELEM_NAME_MAX + 1];
    zsock_t *sock;
} s_peer_t;

struct ddict_actor {
    ddict_actor_config_t cfg;
    char node_dir[TELEM_PATH_MAX];
    char log_path[TELEM_PATH_MAX];
    char lock_path[TELEM_PATH_MAX];
    char ipc_ep[TELEM_PATH_MAX];
    char endpoint[TELEM_PATH_MAX];
    char nodefile[TELEM_PATH_MAX];
    int lock_fd;
    zsock_t *router;          /* bound to ipc and, if asked, TCP */
    telem_peercap_t *cap;     /* caps the router's TCP connections */
    size_t big_bytes;         /* large-message bytes freed since a trim */
    telem_actor_loop_t *loop; /* the actor's poll loop */
    s_peer_t *peers;
    int npeers;
    ddict_server_t *server;
    zmq_msg_t *frames;
    size_t capframes;
    zactor_t *actor;
    int64_t stats_due;        /* monotonic ns of the next on_stats call */
};

/* ---------------------------------------------------------------- peers */

static void s_on_peer(void *sock, void *arg);

static int
s_lookup(ddict_actor_t *self, const char *name, char *ep, size_t size)
{
    return telem_nodefile_lookup(self->nodefile, name, ep, size);
}

static zsock_t *
s_peer(ddict_actor_t *self, const char *name)
{
    for (int i = 0; i < self->npeers; i++)
        if (strcmp(self->peers[i].name, name) == 0)
            return self->peers[i].sock;
    char ep[TELEM_PATH_MAX];
    if (s_lookup(self, name, ep, sizeof ep) != 0)
        return NULL;
    s_peer_t *p = realloc(self->peers, (size_t) (self->npeers + 1) * sizeof *p);
    if (!p)
        return NULL;
    self->peers = p;
    telem_sock_opts_t o = s_peer_opts;
    o.keys = self->cfg.keys;
    zsock_t *s = telem_sock_new_connect(ZMQ_DEALER, &o, ep);
    if (!s)
        return NULL;
    snprintf(p[self->npeers].name, sizeof p[0].name, "%s", name);
    p[self->npeers++].sock = s;
    telem_actor_loop_add(self->loop, s, s_on_peer, self);
    return s;
}

static int
s_send(void *sock, zmq_msg_t *frames, size_t n)
{
    int rc = 0;
    size_t i = 0;
    for (; i < n; i++)
        if (zmq_msg_send(&frames[i], sock,
                         (i + 1 < n ? ZMQ_SNDMORE : 0) | ZMQ_DONTWAIT) < 0) {
            rc = TELEM_ECONN;
            break;
        }
    for (; i < n; i++)
        zmq_msg_close(&frames[i]);
    return rc;
}

/* The server's output function. */
static int
s_out(void *arg, zmq_msg_t *route, const char *peer, zmq_msg_t *frames,
      size_t n)
{
    ddict_actor_t *self = arg;
    if (route) {
        /* One ROUTER serves the ipc and the TCP endpoint. */
        void *r = zsock_resolve(self->router);
        if (zmq_msg_send(route, r, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(route);
            for (size_t i = 0; i < n; i++)
                zmq_msg_close(&frames[i]);
            return TELEM_ECONN;
        }
        return s_send(r, frames, n);
    }
    zsock_t *s = s_peer(self, peer);
    if (!s) {
        for (size_t i = 0; i < n; i++)
            zmq_msg_close(&frames[i]);
        return TELEM_ECONN;
    }
    return s_send(zsock_resolve(s), frames, n);
}

/* ---------------------------------------------------------------- loop */

/* Receives the rest of a multi-part message into self->frames, at most
 * DDICT_ACTOR_FRAMES_MAX of them; *over is set when there were more (they
 * are closed as they are read, so the loop never holds them).  Adds the
 * message's size to *bytes. */
static size_t
s_recv_rest(ddict_actor_t *self, void *sock, int more, int *over,
            size_t *bytes)
{
    size_t n = 0;
    *over = 0;
    while (more && n < DDICT_ACTOR_FRAMES_MAX) {
        if (telem_grow((void **) &self->frames, &self->capframes, n + 1,
                       sizeof *self->frames, 64))
            break;
        zmq_msg_init(&self->frames[n]);
        if (zmq_msg_recv(&self->frames[n], sock, 0) < 0) {
            zmq_msg_close(&self->frames[n]);
            break;
        }
        *bytes += zmq_msg_size(&self->frames[n]);
        more = zmq_msg_more(&self->frames[n++]);
    }
    /* Too many frames, or out of memory mid-message: drop the rest. */
    *over = more;
    zmq_msg_t skip;
    zmq_msg_init(&skip);
    while (more && zmq_msg_recv(&skip, sock, 0) >= 0) {
        *bytes += zmq_msg_size(&skip);
        more = zmq_msg_more(&skip);
    }
    zmq_msg_close(&skip);
    return n;
}

/* Handles up to S_BURST messages waiting on the ROUTER. */
static void
s_drain_router(ddict_actor_t *self)
{
    void *sock = zsock_resolve(self->router);
    for (int k = 0; k < S_BURST; k++) {
        zmq_msg_t route;
        zmq_msg_init(&route);
        if (zmq_msg_recv(&route, sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&route);
            break;
        }
        int over;
        size_t bytes = 0;
        size_t n = s_recv_rest(self, sock, zmq_msg_more(&route), &over,
                               &bytes);
        if (over)
            ddict_server_refuse(self->server, &route, self->frames, n,
                                TELEM_ETOOBIG);
        else
            ddict_server_request(self->server, &route, self->frames, n);
        if (bytes >= S_BIG_MSG)
            self->big_bytes += bytes;
    }
}

/* Handles up to S_BURST replies waiting on a peer's DEALER.  An
 * acknowledgement is one frame: a message of more is refused and counted,
 * its frames read and freed one at a time. */
static void
s_drain_peer(ddict_actor_t *self, zsock_t *s)
{
    const char *name = "?";
    for (int i = 0; i < self->npeers; i++)
        if (self->peers[i].sock == s)
            name = self->peers[i].name;
    void *sock = zsock_resolve(s);
    for (int k = 0; k < S_BURST; k++) {
        zmq_msg_t head;
        zmq_msg_init(&head);
        if (zmq_msg_recv(&head, sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&head);
            break;
        }
        if (!zmq_msg_more(&head)) {
            ddict_server_peer_reply(self->server, name, &head, 1);
            continue;
        }
        size_t n = 1;
        while (zmq_msg_more(&head) && zmq_msg_recv(&head, sock, 0) >= 0)
            n++;
        zmq_msg_close(&head);
        ddict_server_peer_refuse(self->server, name, n);
    }
}

/* The loop's hooks and handlers (telem_actor_loop.h): polled in the order
   router, peer cap, pipe, then the peers as they are first reached; every
   wake-up but $TERM ends with a flush of the server's output. */
static int
s_done(void *arg)
{
    ddict_actor_t *self = arg;
    return zsys_interrupted || ddict_server_stopping(self->server);
}

static int64_t
s_next(void *arg)
{
    ddict_actor_t *self = arg;
    int64_t now = telem_mono_ns();
    int64_t next = ddict_server_tick(self->server, now);
    if (!self->cfg.on_stats || self->cfg.stats_period_ns <= 0)
        return next;
    if (now >= self->stats_due) {
        ddict_server_stats_t st;
        ddict_server_stats(self->server, &st);
        self->cfg.on_stats(&st, self->cfg.stats_arg);
        self->stats_due = now + self->cfg.stats_period_ns;
    }
    return next < self->stats_due ? next : self->stats_due;
}

static void
s_after(void *arg)
{
    ddict_actor_t *self = arg;
    ddict_server_flush(self->server);
}

static void
s_on_router(void *sock, void *arg)
{
    (void) sock;
    s_drain_router(arg);
}

static void
s_on_peer(void *sock, void *arg)
{
    s_drain_peer(arg, sock);
}

static void
s_on_peercap(void *sock, void *arg)
{
    (void) sock;
    telem_peercap_handle(arg);
}

static void
s_actor(zsock_t *pipe, void *arg)
{
    ddict_actor_t *self = arg;
    int by_pipe = telem_actor_loop_run(self->loop, pipe);
    if (by_pipe < 0)
        zsock_signal(pipe, 0);
    ddict_server_flush(self->server);
    if (by_pipe != 1)
        zstr_send(pipe, "DONE");
}

/* ---------------------------------------------------------------- life */

/* Creates a directory of the node (telem_rundir_prepare), logging why it
 * could not. */
static int
s_prepare(const char *dir)
{
    char why[TELEM_PATH_MAX + 200];
    int rc = telem_rundir_prepare(dir, why, sizeof why);
    if (rc)
        telem_log(TELEM_LOG_ERROR, "%s", why);
    return rc;
}

static int
s_lock(ddict_actor_t *self)
{
    return telem_node_lock(self->lock_path, sizeof self->lock_path,
                           self->cfg.rundir, self->cfg.node, "dict.lock",
                           &self->lock_fd);
}

static int
s_bind(ddict_actor_t *self)
{
    int rc = 0;
    if (telem_node_endpoint(self->ipc_ep, sizeof self->ipc_ep,
                            self->cfg.rundir, self->cfg.node, "dict.sock"))
        return TELEM_ETOOBIG;
    self->router = telem_sock_new_bind(ZMQ_ROUTER, &s_router_opts,
                                       self->ipc_ep, self->endpoint,
                                       sizeof self->endpoint, &rc);
    if (rc || !self->cfg.tcp)
        return rc;
    if ((rc = telem_sock_bind(self->router, self->cfg.tcp, self->cfg.keys,
                              self->endpoint, sizeof self->endpoint)) != 0)
        return rc;
    int max = self->cfg.max_tcp_peers > 0 ? self->cfg.max_tcp_peers
                                          : TELEM_TCP_PEERS_DEFAULT;
    self->cap = telem_peercap_new(self->router, max, &rc);
    return rc;
}

static int
s_start(ddict_actor_t *self)
{
    int rc;
    if ((rc = telem_node_path(self->node_dir, sizeof self->node_dir,
                              self->cfg.rundir, self->cfg.node, "")) != 0
        || (rc = s_prepare(self->cfg.rundir)) != 0
        || (rc = s_prepare(self->node_dir)) != 0
        || (rc = s_lock(self)) != 0)
        return rc;
    if ((rc = telem_node_path(self->log_path, sizeof self->log_path,
                              self->cfg.rundir, self->cfg.node, "dict.log")))
        return rc;
    self->cfg.server.node = self->cfg.node;
    self->cfg.server.log_path = self->log_path;
    telem_actor_loop_hooks_t hooks = {
        .done = s_done, .next = s_next, .after = s_after, .arg = self,
        .cap_ms = S_POLL_CAP_MS, .freed_bytes = &self->big_bytes,
    };
    if (!(self->loop = telem_actor_loop_new(&hooks)))
        return TELEM_ENOMEM;
    self->server = ddict_server_new(&self->cfg.server, s_out, self, &rc);
    if (!self->server)
        return rc;
    if ((rc = s_bind(self)) != 0)
        return rc;
    if (telem_actor_loop_add(self->loop, self->router, s_on_router, self)
        || (self->cap
            && telem_actor_loop_add(self->loop, telem_peercap_sock(self->cap),
                                    s_on_peercap, self->cap)))
        return TELEM_ENOMEM;
    if ((rc = telem_nodefile_register(self->nodefile, self->cfg.node,
                                      self->endpoint)) != 0)
        return rc;
    self->actor = zactor_new(s_actor, self);
    return self->actor ? 0 : TELEM_ENOMEM;
}

ddict_actor_t *
ddict_actor_new(const ddict_actor_config_t *cfg, int *err)
{
    ddict_actor_t *self = calloc(1, sizeof *self);
    int rc = TELEM_ENOMEM;
    if (self) {
        self->cfg = *cfg;
        self->lock_fd = -1;
        snprintf(self->nodefile, sizeof self->nodefile, "%s", cfg->nodefile);
        self->cfg.nodefile = self->nodefile;
        rc = s_start(self);
    }
    if (err)
        *err = rc;
    if (rc)
        ddict_actor_destroy(&self);
    return self;
}

void
ddict_actor_destroy(ddict_actor_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ddict_actor_t *self = *self_p;
    zactor_destroy(&self->actor);
    ddict_server_destroy(&self->server);
    telem_actor_loop_destroy(&self->loop);
    for (int i = 0; i < self->npeers; i++)
        zsock_destroy(&self->peers[i].sock);
    free(self->peers);
    telem_peercap_destroy(&self->cap);
    zsock_destroy(&self->router);
    free(self->frames);
    if (self->lock_fd >= 0)
        close(self->lock_fd);
    free(self);
    *self_p = NULL;
}

const char *
ddict_actor_endpoint(const ddict_actor_t *self)
{
    return self->endpoint;
}

void *
ddict_actor_pipe(ddict_actor_t *self)
{
    return self->actor;
}
