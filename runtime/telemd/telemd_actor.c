/* telemd_actor.c - telemd's sockets and event loop, as a czmq actor.
 *
 * telemd_new() prepares the node directory, takes the node's lock file (so
 * two agents never share a node's sockets), binds PULL (ingest) and ROUTER
 * (control, ipc and TCP), writes the endpoints file, and hands the sockets
 * to an actor thread.  The loop polls the sockets with a timeout that ends
 * at the next sampling tick; ingest is drained in bounded bursts so control
 * requests are answered promptly under load.  Everything a frame means is
 * decided in telemd_agent.c.  With an HTTP port, telemd_http.c serves
 * /metrics on its own threads and asks this loop for snapshots of the
 * store on an inproc ROUTER, the only way those threads reach the store.
 */
#include "telemd_actor.h"

#include <czmq.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "telem_actor_loop.h"
#include "telem_error.h"
#include "telem_limits.h"
#include "telem_log.h"
#include "telem_paths.h"
#include "telem_peercap.h"
#include "telem_proto.h"
#include "telem_sock.h"
#include "telem_time.h"
#include "telemd_agent.h"
#include "telemd_drain.h"
#include "telemd_handover.h"
#include "telemd_http.h"

#define S_INGEST_BURST 512        /* frames per wake before polling again */
/* Longest sleep of the loop: it notices an interrupt (zsys_interrupted)
   that no message woke it for.  telemd's main thread takes SIGINT and
   SIGTERM and wakes the loop at once (telemd_wait), so this only bounds an
   in-process agent's reaction; it was 250 ms, 4 wake-ups a second of an
   idle agent on top of its ticks. */
#define S_POLL_CAP_MS 1000
#define S_DRAIN_CHECK_MS 250      /* a stop's drain checks its early end */
#define S_RCVHWM 10000
#define S_REPLY_LINGER_MS 200     /* drain after a stop, and linger */
#define S_REQ_FRAMES 3            /* identity, empty delimiter, request */
#define S_BIG_MSG (1u << 20)      /* a message this large counts for trim */
#define S_HANDOVER_MOVE_MS 500    /* longest wait for senders to move */
#define S_HANDOVER_DRAIN_MS 1500  /* longest wait for released senders */
#define S_LAST_READS 100000       /* frames read after the loop, at most */

struct telemd {
    telemd_config_t cfg;
    char node_dir[TELEM_PATH_MAX];
    char lock_path[TELEM_PATH_MAX];
    char ingest_ep[TELEM_PATH_MAX];
    char ctl_ep[TELEM_PATH_MAX];
    char tcp_ep[128];
    int lock_fd;
    int locked;
    telemd_agent_t *agent;
    zsock_t *pull;
    zsock_t *ctl;
    zsock_t *tcp;
    zsock_t *snap;                /* inproc ROUTER: /metrics snapshots */
    char snap_ep[64];
    telemd_http_t *http;          /* NULL without an HTTP port */
    telem_peercap_t *cap;         /* caps self->tcp's connections */
    size_t big_bytes;             /* large-message bytes freed since a trim */
    int64_t stop_at;              /* end of the drain after a stop; 0: none */
    int64_t linger_at;            /* earliest end of a hand-over drain */
    int64_t release_at;           /* when the senders still here are shut;
                                     0 once they have been */
    int handing_over;             /* a successor takes the node */
    int open_at_handover;         /* ingest connections when it began */
    telemd_drain_t *drain;        /* the ingest connections */
    ino_t ingest_ino, ctl_ino;    /* our socket files (0: unknown) */
    zactor_t *actor;
    int ended;
};

/* Ingest: frames up to the largest batch a sender makes
   (TELEM_PROTO_INGEST_MAX), a bounded receive queue, nothing kept at
   close. */
static const telem_sock_opts_t s_ingest_opts = {
    .max_msg = (int) TELEM_PROTO_INGEST_MAX, .sndhwm = TELEM_SOCK_KEEP,
    .rcvhwm = S_RCVHWM, .linger_ms = 0, .sndtimeo_ms = TELEM_SOCK_KEEP,
};

/* Control (the ipc and TCP ROUTERs): frames no larger than the largest
   request (TELEMD_REQUEST_MAX), a short linger so that the reply to a
   shutdown request still leaves after the loop has ended, and a send that
   never blocks the loop. */
static const telem_sock_opts_t s_ctl_opts = {
    .max_msg = (int) TELEMD_REQUEST_MAX, .sndhwm = TELEM_SOCK_KEEP,
    .rcvhwm = S_RCVHWM, .linger_ms = S_REPLY_LINGER_MS, .sndtimeo_ms = 0,
};

/* Reads one message into part[0..S_REQ_FRAMES) frame by frame; frames
 * past those are closed as they are read, so the loop never holds more
 * than S_REQ_FRAMES of them.  Returns the message's frame count (0: none
 * waited); *bytes gets its size. */
static size_t
s_recv_request(void *raw, zmq_msg_t *part, size_t *bytes)
{
    size_t n = 0;
    int more = 1;
    *bytes = 0;
    zmq_msg_t skip;
    zmq_msg_init(&skip);
    while (more) {
        zmq_msg_t *f = n < S_REQ_FRAMES ? &part[n] : &skip;
        if (n < S_REQ_FRAMES)
            zmq_msg_init(f);
        if (zmq_msg_recv(f, raw, n ? 0 : ZMQ_DONTWAIT) < 0) {
            if (n < S_REQ_FRAMES)
                zmq_msg_close(f);
            break;
        }
        *bytes += zmq_msg_size(f);
        more = zmq_msg_more(f);
        n++;
    }
    zmq_msg_close(&skip);
    return n;
}

/* Sends `reply` to the peer `id`, after an empty delimiter when the
 * request had one; never blocks (a peer that does not read loses it). */
static void
s_send_reply(void *raw, zmq_msg_t *id, int delimited, const void *reply,
             size_t size)
{
    if (zmq_msg_send(id, raw, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
        return;
    if (delimited)
        zmq_send(raw, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT);
    zmq_send(raw, reply, size, ZMQ_DONTWAIT);
}

/* Receives a request as [identity, (empty,) payload] and answers it; a
 * message of any other shape gets an error reply. */
static void
s_serve_request(telemd_t *self, zsock_t *sock)
{
    void *raw = zsock_resolve(sock);
    zmq_msg_t part[S_REQ_FRAMES];
    size_t bytes;
    size_t n = s_recv_request(raw, part, &bytes);
    if (n == 0)
        return;
    size_t held = n < S_REQ_FRAMES ? n : S_REQ_FRAMES;
    int delimited = n == 3 && zmq_msg_size(&part[1]) == 0;
    const void *reply = NULL;
    size_t reply_size = 0;
    if (n == 2 || delimited) {
        zmq_msg_t *body = &part[n - 1];
        /* Plain TCP reaches anyone on the network (or, on loopback,
           every user of the machine): it may read, not steer. */
        telemd_from_t from = sock == self->tcp && !self->cfg.keys
                                 ? TELEMD_FROM_PLAIN_TCP : TELEMD_FROM_JOB;
        telemd_agent_request(self->agent, zmq_msg_data(body),
                             zmq_msg_size(body), from, &reply, &reply_size);
    } else {
        char why[128];
        snprintf(why, sizeof why, "a request is one frame after an "
                 "optional empty delimiter; got %zu frames", n - 1);
        telemd_agent_refuse(self->agent, TELEM_EPROTO, why, &reply,
                            &reply_size);
    }
    if (reply)
        s_send_reply(raw, &part[0], delimited, reply, reply_size);
    for (size_t i = 0; i < held; i++)
        zmq_msg_close(&part[i]);
    if (bytes >= S_BIG_MSG)
        self->big_bytes += bytes;
}

static void
s_free_block(void *data, void *hint)
{
    (void) hint;
    free(data);
}

/* A snapshot request from telemd_http.c ([identity, one frame]): the
 * reply is the block itself, handed to ZeroMQ without a copy and freed
 * with the message (also when the requester has gone and it is dropped);
 * an empty frame when no snapshot could be made. */
static void
s_serve_snapshot(telemd_t *self)
{
    void *raw = zsock_resolve(self->snap);
    zmq_msg_t part[S_REQ_FRAMES], reply;
    size_t bytes;
    size_t n = s_recv_request(raw, part, &bytes);
    if (n == 2) {
        void *block = NULL;
        size_t len = 0;
        if (telemd_agent_snapshot(self->agent, &block, &len) != 0 ||
            zmq_msg_init_data(&reply, block, len, s_free_block, NULL) != 0) {
            free(block);
            zmq_msg_init(&reply);
        }
        if (zmq_msg_send(&part[0], raw, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
            zmq_msg_send(&reply, raw, ZMQ_DONTWAIT) < 0)
            zmq_msg_close(&reply);
        self->big_bytes += len;
    }
    for (size_t i = 0; i < n && i < S_REQ_FRAMES; i++)
        zmq_msg_close(&part[i]);
}

/* Drains up to S_INGEST_BURST frames without blocking. */
static void
s_drain_ingest(telemd_t *self)
{
    void *raw = zsock_resolve(self->pull);
    zmq_msg_t frame;
    zmq_msg_init(&frame);
    for (int i = 0; i < S_INGEST_BURST; i++) {
        if (zmq_msg_recv(&frame, raw, ZMQ_DONTWAIT) < 0)
            break;
        if (zmq_msg_more(&frame)) {
            /* Ingest messages are one frame; the rest of this one is read
               and freed frame by frame, never kept. */
            size_t n = 1;
            while (zmq_msg_more(&frame)
                   && zmq_msg_recv(&frame, raw, ZMQ_DONTWAIT) >= 0)
                n++;
            char why[96];
            snprintf(why, sizeof why, "an ingest message of %zu frames "
                     "(one is taken)", n);
            telemd_agent_reject(self->agent, why);
            continue;
        }
        telemd_agent_ingest(self->agent, zmq_msg_data(&frame),
                            zmq_msg_size(&frame));
        if (zmq_msg_size(&frame) >= S_BIG_MSG)
            self->big_bytes += zmq_msg_size(&frame);
    }
    zmq_msg_close(&frame);
}

/* 1 when the PULL socket has a message to read. */
static int
s_ingest_waiting(telemd_t *self)
{
    return (zsock_events(self->pull) & ZMQ_POLLIN) != 0;
}

/* Starts the stop.  A hand-over first waits, up to S_HANDOVER_MOVE_MS, for
   libtelem's senders to move to the successor's socket file by themselves
   (they close their connection here once what it holds is sent), then lets
   the connections still open go (telemd_drain.h) and waits, up to
   S_HANDOVER_DRAIN_MS more, until each has been read to its end. */
static void
s_stop_begin(telemd_t *self, int64_t now)
{
    int64_t linger = S_REPLY_LINGER_MS * TELEM_NS_PER_MS;
    self->linger_at = now + linger;
    self->stop_at = now + linger;
    if (!telemd_agent_handing_over(self->agent) || !self->drain)
        return;
    self->handing_over = 1;
    self->open_at_handover = telemd_drain_open(self->drain);
    self->release_at = now + S_HANDOVER_MOVE_MS * TELEM_NS_PER_MS;
    self->stop_at = self->release_at + S_HANDOVER_DRAIN_MS * TELEM_NS_PER_MS;
}

/* Lets the ingest connections still open go, once they have had their
   time to move or none is left. */
static void
s_release_due(telemd_t *self, int64_t now)
{
    int open = telemd_drain_open(self->drain);
    if (!self->release_at || (now < self->release_at && open > 0))
        return;
    self->release_at = 0;
    int n = telemd_drain_release(self->drain);
    int moved = self->open_at_handover - open;
    telem_log(TELEM_LOG_INFO, "hand-over: %d of %d ingest connections "
              "moved to the successor or ended by themselves; released %d; "
              "reading what they still carry", moved > 0 ? moved : 0,
              self->open_at_handover, n);
}

/* True once the agent should close its sockets.  A stop (signal or
   shutdown request) first opens a short drain: the loop keeps serving so
   that the reply to the shutdown request leaves through a live socket,
   since over ipc a reply left only to ZMQ_LINGER is sometimes lost.  A
   hand-over ends early once every connection has ended and nothing waits
   to be read. */
static int
s_stop_due(telemd_t *self, int64_t *stop_at)
{
    int64_t now = telem_mono_ns();
    if (!*stop_at && (zsys_interrupted || telemd_agent_stopping(self->agent)))
        s_stop_begin(self, now);
    if (!*stop_at)
        return 0;
    if (self->handing_over)
        s_release_due(self, now);
    if (self->handing_over && !self->release_at && now >= self->linger_at
        && telemd_drain_open(self->drain) == 0 && !s_ingest_waiting(self))
        return 1;
    return now >= *stop_at;
}

static int
s_done(void *arg)
{
    telemd_t *self = arg;
    return s_stop_due(self, &self->stop_at);
}

static int64_t
s_next(void *arg)
{
    telemd_t *self = arg;
    if (!self->stop_at)
        return telemd_agent_tick(self->agent);
    int64_t next = self->release_at ? self->release_at : self->stop_at;
    int64_t check = telem_mono_ns() + S_DRAIN_CHECK_MS * TELEM_NS_PER_MS;
    return check < next ? check : next;   /* s_stop_due may end it early */
}

static void
s_on_ingest(void *sock, void *arg)
{
    (void) sock;
    s_drain_ingest(arg);
}

static void
s_on_request(void *sock, void *arg)
{
    s_serve_request(arg, sock);
}

static void
s_on_snapshot(void *sock, void *arg)
{
    (void) sock;
    s_serve_snapshot(arg);
}

static void
s_on_drain(void *sock, void *arg)
{
    (void) sock;
    telemd_drain_handle(arg);
}

static void
s_on_peercap(void *sock, void *arg)
{
    (void) sock;
    telem_peercap_handle(arg);
}

/* Polled in this order: pipe, ingest, control, TCP queries, snapshots,
 * peer cap. */
static int
s_loop_add(telemd_t *self, telem_actor_loop_t *loop, zsock_t *pipe)
{
    int rc = telem_actor_loop_add_pipe(loop, pipe);
    if (!rc)
        rc = telem_actor_loop_add(loop, self->pull, s_on_ingest, self);
    if (!rc)
        rc = telem_actor_loop_add(loop, self->ctl, s_on_request, self);
    if (!rc && self->tcp)
        rc = telem_actor_loop_add(loop, self->tcp, s_on_request, self);
    if (!rc && self->snap)
        rc = telem_actor_loop_add(loop, self->snap, s_on_snapshot, self);
    if (!rc && self->cap)
        rc = telem_actor_loop_add(loop, telem_peercap_sock(self->cap),
                                  s_on_peercap, self->cap);
    if (!rc && self->drain)
        rc = telem_actor_loop_add(loop, telemd_drain_sock(self->drain),
                                  s_on_drain, self->drain);
    return rc;
}

/* After the loop: reads what the ingest socket still holds, so that all
   telemd received is in the store (and the final flush) before it closes. */
static void
s_last_reads(telemd_t *self)
{
    for (int i = 0; i < S_LAST_READS / S_INGEST_BURST && s_ingest_waiting(self);
         i++)
        s_drain_ingest(self);
}

static void
s_actor(zsock_t *pipe, void *arg)
{
    telemd_t *self = arg;
    telem_actor_loop_hooks_t hooks = {
        .done = s_done, .next = s_next, .arg = self,
        .cap_ms = S_POLL_CAP_MS, .freed_bytes = &self->big_bytes,
    };
    telem_actor_loop_t *loop = telem_actor_loop_new(&hooks);
    int by_pipe = 0;
    self->stop_at = 0;
    if (loop && s_loop_add(self, loop, pipe) == 0)
        by_pipe = telem_actor_loop_run(loop, pipe) == 1;
    else
        zsock_signal(pipe, 0);
    telem_actor_loop_destroy(&loop);
    s_last_reads(self);
    telemd_agent_finish(self->agent);
    telemd_http_gone(self->http);     /* no snapshot after this */
    telem_peercap_destroy(&self->cap);
    telemd_drain_destroy(&self->drain);
    zsock_destroy(&self->pull);
    zsock_destroy(&self->ctl);
    zsock_destroy(&self->tcp);
    zsock_destroy(&self->snap);
    if (!by_pipe)
        zstr_send(pipe, "DONE");
}

/* The inode of the ipc socket file of `ep` ("ipc:///path"), 0 if none. */
static ino_t
s_sock_ino(const char *ep)
{
    struct stat st;
    if (strncmp(ep, "ipc://", 6) != 0 || stat(ep + 6, &st) != 0)
        return 0;
    return st.st_ino;
}

static int
s_bind_ingest(telemd_t *self)
{
    char ep[TELEM_PATH_MAX];
    int rc = 0;
    if (telem_node_endpoint(ep, sizeof ep, self->cfg.rundir, self->cfg.node,
                            "ingest.sock"))
        return TELEM_ETOOBIG;
    self->pull = telem_sock_new_bind(ZMQ_PULL, &s_ingest_opts, ep,
                                     self->ingest_ep, sizeof self->ingest_ep,
                                     &rc);
    if (rc)
        return rc;
    self->ingest_ino = s_sock_ino(self->ingest_ep);
    self->drain = telemd_drain_new(self->pull, &rc);
    return rc;
}

/* Takes the node's lock; when another telemd holds it and hand-over is
   on, binds the ingest socket first (senders the old telemd lets go
   reconnect to it) and takes the node over (telemd_handover.h). */
static int
s_lock_node(telemd_t *self)
{
    if (telem_node_path(self->lock_path, sizeof self->lock_path,
                        self->cfg.rundir, self->cfg.node, "telemd.lock"))
        return TELEM_ETOOBIG;
    int rc = telemd_lock_try(self->lock_path, &self->lock_fd);
    if (rc == TELEM_ESTATE && self->cfg.handover) {
        rc = s_bind_ingest(self);
        if (!rc) {
            telemd_handover_config_t hc = self->cfg.handover_cfg;
            hc.ask_ns = hc.ask_ns ? hc.ask_ns : TELEMD_HANDOVER_ASK_NS;
            hc.term_ns = hc.term_ns ? hc.term_ns : TELEMD_HANDOVER_TERM_NS;
            hc.kill_ns = hc.kill_ns ? hc.kill_ns : TELEMD_HANDOVER_KILL_NS;
            rc = telemd_handover(self->cfg.rundir, self->cfg.node,
                                 self->lock_path, &hc, &self->lock_fd);
        }
    }
    self->locked = rc == 0;
    return rc;
}

static int
s_write_endpoints(telemd_t *self)
{
    char path[TELEM_PATH_MAX], tmp[TELEM_PATH_MAX + 8];
    if (telem_node_path(path, sizeof path, self->cfg.rundir, self->cfg.node,
                        "endpoints"))
        return TELEM_ETOOBIG;
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return TELEM_EIO;
    fprintf(f, "node\t%s\npid\t%d\ningest\t%s\nctl\t%s\n", self->cfg.node,
            (int) getpid(), self->ingest_ep, self->ctl_ep);
    if (*self->tcp_ep)
        fprintf(f, "query\t%s\n", self->tcp_ep);
    if (self->http)
        fprintf(f, "metrics\t%s\n", telemd_http_url(self->http));
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0)
        return TELEM_EIO;
    return 0;
}

/* The inproc ROUTER telemd_http.c asks for snapshots on (one name per
 * telemd of the process), and the HTTP server. */
static int
s_bind_snapshots(telemd_t *self)
{
    int rc = 0;
    snprintf(self->snap_ep, sizeof self->snap_ep, "inproc://telemd-snap-%p",
             (void *) self);
    self->snap = telem_sock_new_bind(ZMQ_ROUTER, &s_ctl_opts, self->snap_ep,
                                     NULL, 0, &rc);
    if (rc)
        return rc;
    self->http = telemd_http_new(self->cfg.http_bind, self->cfg.http_port,
                                 self->snap_ep, &rc, NULL, 0);
    return rc;
}

static int
s_bind_all(telemd_t *self)
{
    char ep[TELEM_PATH_MAX];
    int rc = self->pull ? 0 : s_bind_ingest(self);
    if (rc)
        return rc;
    if (telem_node_endpoint(ep, sizeof ep, self->cfg.rundir, self->cfg.node,
                            "ctl.sock"))
        return TELEM_ETOOBIG;
    self->ctl = telem_sock_new_bind(ZMQ_ROUTER, &s_ctl_opts, ep, self->ctl_ep,
                                    sizeof self->ctl_ep, &rc);
    self->ctl_ino = rc ? 0 : s_sock_ino(self->ctl_ep);
    if (!rc && self->cfg.http_bind)
        rc = s_bind_snapshots(self);
    if (rc || !self->cfg.tcp_bind || !*self->cfg.tcp_bind)
        return rc;
    telem_sock_opts_t tcp_opts = s_ctl_opts;
    tcp_opts.keys = self->cfg.keys;
    self->tcp = telem_sock_new_bind(ZMQ_ROUTER, &tcp_opts,
                                    self->cfg.tcp_bind, self->tcp_ep,
                                    sizeof self->tcp_ep, &rc);
    if (rc)
        return rc;
    int max = self->cfg.max_tcp_peers > 0 ? self->cfg.max_tcp_peers
                                          : TELEM_TCP_PEERS_DEFAULT;
    self->cap = telem_peercap_new(self->tcp, max, &rc);
    return rc;
}

static int
s_setup(telemd_t *self)
{
    if (telem_node_path(self->node_dir, sizeof self->node_dir,
                        self->cfg.rundir, self->cfg.node, ""))
        return TELEM_ETOOBIG;
    int rc = telem_rundir_prepare(self->node_dir, NULL, 0);
    if (!rc)
        rc = s_lock_node(self);
    if (!rc)
        rc = s_bind_all(self);
    if (!rc)
        rc = s_write_endpoints(self);
    if (!rc) {
        self->agent = telemd_agent_new(&self->cfg, &rc);
    }
    return rc;
}

telemd_t *
telemd_new(const telemd_config_t *cfg, int *err)
{
    int rc = TELEM_EINVAL;
    telemd_t *self = NULL;
    if (!cfg || !telem_node_valid(cfg->node) || !cfg->rundir)
        goto out;
    rc = TELEM_ENOMEM;
    self = calloc(1, sizeof *self);
    if (!self)
        goto out;
    self->cfg = *cfg;
    self->lock_fd = -1;
    rc = s_setup(self);
    if (rc)
        goto out;
    self->actor = zactor_new(s_actor, self);
    rc = self->actor ? 0 : TELEM_ENOMEM;
out:
    if (rc) {
        int saved = errno;    /* why a bind failed, past the cleanup */
        telemd_destroy(&self);
        errno = saved;
    }
    if (err)
        *err = rc;
    return self;
}

const char *
telemd_ingest_endpoint(const telemd_t *self)
{
    return self->ingest_ep;
}

const char *
telemd_ctl_endpoint(const telemd_t *self)
{
    return self->ctl_ep;
}

const char *
telemd_tcp_endpoint(const telemd_t *self)
{
    return self->tcp_ep;
}

const char *
telemd_metrics_url(const telemd_t *self)
{
    return self->http ? telemd_http_url(self->http) : "";
}

int
telemd_wait(telemd_t *self, int timeout_ms)
{
    if (self->ended)
        return 1;
    int64_t deadline = telem_mono_ns() + (int64_t) timeout_ms * TELEM_NS_PER_MS;
    zpoller_t *poller = zpoller_new(self->actor, NULL);
    zpoller_set_nonstop(poller, true);
    int told = 0;
    while (!self->ended) {
        /* A signal taken by this thread ends the wait with EINTR: wake
           the loop so that it sees zsys_interrupted now. */
        if (zsys_interrupted && !told)
            told = zstr_send(self->actor, "INTERRUPTED") == 0;
        int64_t left = timeout_ms < 0 ? -1
                       : (deadline - telem_mono_ns()) / TELEM_NS_PER_MS;
        if (left <= 0 && timeout_ms >= 0)
            break;
        if (zpoller_wait(poller, (int) (left > S_POLL_CAP_MS ? S_POLL_CAP_MS
                                                             : left))) {
            char *msg = zstr_recv(self->actor);
            self->ended = msg && streq(msg, "DONE");
            zstr_free(&msg);
        }
    }
    zpoller_destroy(&poller);
    return self->ended;
}

/* Removes what this agent created in its node directory: libzmq leaves
   ipc socket files behind, and a stale endpoints file would point clients
   at a dead agent.  Called only by the agent that holds the node lock.
   When a successor has bound the ingest socket already (a hand-over), it
   removes nothing: the successor replaces the files as it binds them, and
   until then senders must still find a control socket file (libtelem
   waits for a reconnect only while one exists). */
static void
s_remove_node_files(telemd_t *self)
{
    if (self->ingest_ino && s_sock_ino(self->ingest_ep) != self->ingest_ino)
        return;
    char path[TELEM_PATH_MAX];
    if (!telem_node_path(path, sizeof path, self->cfg.rundir, self->cfg.node,
                         "endpoints"))
        unlink(path);
    if (self->ingest_ino)
        unlink(self->ingest_ep + 6);
    if (self->ctl_ino && s_sock_ino(self->ctl_ep) == self->ctl_ino)
        unlink(self->ctl_ep + 6);
    unlink(self->lock_path);
}

void
telemd_destroy(telemd_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    telemd_t *self = *self_p;
    /* HTTP first: its requests are answered by a live actor, then it
       takes none that would wait for one. */
    telemd_http_destroy(&self->http);
    if (self->actor)
        zactor_destroy(&self->actor);
    telem_peercap_destroy(&self->cap);
    telemd_drain_destroy(&self->drain);
    zsock_destroy(&self->pull);
    zsock_destroy(&self->ctl);
    zsock_destroy(&self->tcp);
    zsock_destroy(&self->snap);
    telemd_agent_destroy(&self->agent);
    if (self->locked)
        s_remove_node_files(self);
    if (self->lock_fd >= 0)
        close(self->lock_fd);
    free(self);
    *self_p = NULL;
}
