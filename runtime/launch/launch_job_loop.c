/* launch_job_loop.c - the job's creation, its event loop and the events that
 * come from outside: signals, heartbeats, restart requests.
 *
 * Signals are blocked before any thread exists (czmq's and libzmq's
 * threads inherit the mask) and read from a signalfd in the loop: a child
 * that exits or a Ctrl-C is an ordinary event, never a handler racing the
 * loop.  The heartbeat asks every ready telemd for its status through the
 * analysis client, with one deadline for all nodes, so one hung node costs
 * one deadline per period and is named in the result; the fan-out runs in
 * an actor, off the loop.  Restart requests are read in launch_job_req.c.
 */
#include "launch_job_int.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "telem_error.h"
#include "telem_signals.h"
#include "telem_log.h"
#include "telem_sock.h"
#include "telem_time.h"

/* Bytes of one restart request frame: the most names a request may carry
   (4,096, launch_job_req.c) of 255 bytes each take 1.03 MiB; 2 MiB leaves
   room for their devices and the reason. */
#define S_REQUEST_MAX (2 << 20)

static const int s_signals[] = { SIGCHLD, SIGINT, SIGTERM, SIGHUP };

/* ---- signals ----------------------------------------------------------- */

static int
s_signals_block(launch_job_t *self)
{
    int fd = telem_signals_open(s_signals,
                                sizeof s_signals / sizeof *s_signals, 1);
    self->sigfd = fd < 0 ? -1 : fd;
    return fd < 0 ? TELEM_EIO : 0;
}

/* Hands every exited child to launch_job_on_exit(). */
static void
s_reap(launch_job_t *self)
{
    int status;
    launch_job_proc_t *p;
    while ((p = launch_job_reap(self, &status)) != NULL) {
        launch_job_on_exit(self, p, status);
        free(p);
    }
}

static int
s_on_signal(zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    (void) loop;
    (void) item;
    launch_job_t *self = arg;
    struct signalfd_siginfo si;
    while (read(self->sigfd, &si, sizeof si) == (ssize_t) sizeof si) {
        if (si.ssi_signo == SIGCHLD)
            continue;
        char why[96];
        snprintf(why, sizeof why, "%s received: stopping every node",
                 strsignal((int) si.ssi_signo));
        launch_job_end(self, 128 + (int) si.ssi_signo, why);
    }
    s_reap(self);
    return launch_job_loop_result(self);
}

/* ---- heartbeat --------------------------------------------------------- */

/* The heartbeat's status fan-out (ac_status(), one deadline for every
 * node) runs in an actor that owns the analysis client, so the loop never
 * blocks on it: a restart request or a child's exit that arrives during a
 * round is handled at once, and a round that waits out its deadline for
 * a hung node delays nothing else.  The loop sends "NODES" with the
 * generation and name/endpoint pairs when the membership changed, then
 * "PING" with the generation; the actor answers "RESULT", the generation
 * and (node, code, message) triples, or "ERROR" and a sentence.  A period
 * that comes while a round is under way starts the next round as soon as
 * that one ends. */

typedef struct {
    int timeout_ms;
    ac_t *ac;
    unsigned gen;
} s_hb_t;

/* Gives the actor's client the new node list: the client keeps the
 * connections of the nodes still listed (a restart changes one or two of
 * them; a new client made 255 CURVE connections at every restart of a
 * 256-node job), and is made anew only when it cannot. */
static void
s_hb_nodes(s_hb_t *h, zmsg_t *m, zsock_t *pipe)
{
    char *gen = zmsg_popstr(m);
    h->gen = gen ? (unsigned) strtoul(gen, NULL, 10) : 0;
    free(gen);
    size_t k = zmsg_size(m) / 2;
    if (k == 0) {
        ac_close(&h->ac);
        return;
    }
    const char **names = calloc(k, sizeof *names), **eps = calloc(k,
                                                                  sizeof *eps);
    for (size_t i = 0; names && eps && i < k; i++) {
        names[i] = zmsg_popstr(m);
        eps[i] = zmsg_popstr(m);
    }
    int err = TELEM_ENOMEM;
    if (names && eps && h->ac
        && ac_set_nodes(h->ac, names, eps, k) != 0)
        ac_close(&h->ac);
    if (names && eps && !h->ac)
        h->ac = ac_connect_nodes(names, eps, k, h->timeout_ms, &err);
    if (!h->ac)
        zsock_send(pipe, "ss", "ERROR", telem_strerror(err));
    for (size_t i = 0; names && eps && i < k; i++) {
        free((char *) names[i]);
        free((char *) eps[i]);
    }
    free(names);
    free(eps);
}

static void
s_hb_ping(s_hb_t *h, zsock_t *pipe)
{
    zmsg_t *out = zmsg_new();
    zmsg_addstr(out, "RESULT");
    zmsg_addstrf(out, "%u", h->gen);
    ac_status_result_t *r = NULL;
    if (h->ac)
        ac_status(h->ac, &r);
    for (size_t j = 0; r && j < ac_status_result_count(r); j++) {
        zmsg_addstr(out, ac_status_result_node(r, j));
        zmsg_addstrf(out, "%d", ac_status_result_code(r, j));
        zmsg_addstr(out, ac_status_result_message(r, j));
    }
    ac_status_result_destroy(&r);
    zmsg_send(&out, pipe);
}

static void
s_hb_actor(zsock_t *pipe, void *arg)
{
    s_hb_t h = { *(const int *) arg, NULL, 0 };
    zsock_signal(pipe, 0);
    for (zmsg_t *m; (m = zmsg_recv(pipe)) != NULL; zmsg_destroy(&m)) {
        char *cmd = zmsg_popstr(m);
        int term = !cmd || strcmp(cmd, "$TERM") == 0;
        if (!term && strcmp(cmd, "NODES") == 0)
            s_hb_nodes(&h, m, pipe);
        else if (!term && strcmp(cmd, "PING") == 0)
            s_hb_ping(&h, pipe);
        free(cmd);
        if (term) {
            zmsg_destroy(&m);
            break;
        }
    }
    ac_close(&h.ac);
}

/* Gives the actor the nodes whose telemd is ready. */
static void
s_heartbeat_nodes(launch_job_t *self)
{
    zmsg_t *m = zmsg_new();
    self->hb_gen++;
    zmsg_addstr(m, "NODES");
    zmsg_addstrf(m, "%u", self->hb_gen);
    for (size_t i = 0; i < self->n; i++)
        if (launch_state_node(self->state, i) != LAUNCH_NODE_DOWN
            && self->nodes[i].ready && self->nodes[i].telemd
            && *self->nodes[i].endpoint) {
            zmsg_addstr(m, launch_state_name(self->state, i));
            zmsg_addstr(m, self->nodes[i].endpoint);
        }
    zmsg_send(&m, self->hb);
    self->ac_stale = 0;
    self->hb_sent = 1;
    self->hb_fresh = 1;
}

/* Starts a status round, or notes that one is due when one is under way
 * (it then starts as soon as that one ends, as the blocking heartbeat's
 * overdue timer did: a hung node's misses come one deadline apart). */
static void
s_heartbeat_round(launch_job_t *self)
{
    /* While the nodes start, every ready line marks the node list stale
       and a round would remake a CURVE connection to every ready node;
       the start has its own deadline (--start-timeout), and a daemon that
       dies is a child that exits. */
    if (self->phase == LAUNCH_PHASE_ENDING
        || self->phase == LAUNCH_PHASE_STARTING)
        return;
    if (self->hb_busy) {
        self->hb_due = 1;
        return;
    }
    if (self->ac_stale || !self->hb_sent)
        s_heartbeat_nodes(self);
    self->hb_busy = 1;
    self->hb_due = 0;
    zsock_send(self->hb, "s", "PING");
}

static int
s_on_heartbeat(zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    launch_job_t *self = arg;
    s_heartbeat_round(self);
    return launch_job_loop_result(self);
}

/* One node's answer in a round: 1 when it counts against the node (a
 * miss that reached the limit: appended to why), 2 when telemd said its
 * node is lost (appended to lost_why), else 0.  A round on new sockets
 * (judge 0) counts no miss. */
static int
s_heartbeat_one(launch_job_t *self, size_t i, int code, int judge,
                const char *node, const char *msg, char *why,
                char *lost_why, size_t size)
{
    launch_job_node_t *nd = &self->nodes[i];
    if (code == 0) {
        nd->misses = 0;
        return 0;
    }
    if (!judge)
        return 0;
    if (code == TELEM_ESTATE) {
        /* telemd's own word that its node is lost (its slurmd is gone):
           no need to wait for more misses. */
        size_t len = strlen(lost_why);
        snprintf(lost_why + len, size - len, "%s%s: %s", len ? "; " : "",
                 node, msg);
        return 2;
    }
    if (++nd->misses < self->cfg.heartbeat_misses)
        return 0;
    size_t len = strlen(why);
    snprintf(why + len, size - len, "%s%s: telemd missed %d status requests "
             "in a row (deadline %.3f s): %s", len ? "; " : "", node,
             nd->misses, (double) self->cfg.heartbeat_timeout_ns / 1e9, msg);
    return 1;
}

/* The actor's answer: a round's results, or why it could not connect. */
static int
s_on_heartbeat_result(zloop_t *loop, zsock_t *sock, void *arg)
{
    (void) loop;
    launch_job_t *self = arg;
    zmsg_t *m = zmsg_recv(sock);
    char *kind = m ? zmsg_popstr(m) : NULL, *gen = m ? zmsg_popstr(m) : NULL;
    if (kind && strcmp(kind, "ERROR") == 0)
        telem_log(TELEM_LOG_ERROR, "heartbeat: cannot connect: %s",
                  gen ? gen : "?");
    int current = kind && strcmp(kind, "RESULT") == 0 && gen
                  && strtoul(gen, NULL, 10) == self->hb_gen;
    if (kind && strcmp(kind, "RESULT") == 0)
        self->hb_busy = 0;
    /* The first round on new sockets waits for their CURVE handshakes as
       well as the answers: on a busy machine hundreds of them take longer
       than the deadline (256 namespaced nodes at load 30-90: every node
       missed it, and three such rounds took 245 healthy nodes out of the
       job).  Such a round counts no miss. */
    int judge = !(current && self->hb_fresh);
    if (current)
        self->hb_fresh = 0;
    size_t failed[self->n ? self->n : 1], nf = 0;
    size_t lost[self->n ? self->n : 1], nl = 0;
    char why[1024] = "", lost_why[1024] = "";
    while (current && self->phase != LAUNCH_PHASE_ENDING
           && zmsg_size(m) >= 3) {
        char *node = zmsg_popstr(m), *code = zmsg_popstr(m);
        char *msg = zmsg_popstr(m);
        long i = launch_state_find(self->state, node);
        int v = i < 0 || launch_state_node(self->state, (size_t) i)
                         == LAUNCH_NODE_DOWN ? 0
                : s_heartbeat_one(self, (size_t) i, atoi(code), judge, node,
                                  msg, why, lost_why, sizeof why);
        if (v == 1)
            failed[nf++] = (size_t) i;
        else if (v == 2)
            lost[nl++] = (size_t) i;
        free(node);
        free(code);
        free(msg);
    }
    free(kind);
    free(gen);
    zmsg_destroy(&m);
    if (nl)
        launch_job_nodes_failed(self, lost, nl, "slurmd", lost_why);
    else if (nf)
        launch_job_nodes_failed(self, failed, nf, "heartbeat", why);
    if (self->hb_due && !self->hb_busy)
        s_heartbeat_round(self);
    return launch_job_loop_result(self);
}

/* ---- creation ---------------------------------------------------------- */

static int
s_paths(launch_job_t *self, char *why, size_t why_size)
{
    const launch_job_config_t *c = &self->cfg;
    int rc = 0;
    if (c->rundir)
        rc = telem_rundir_resolve(self->rundir, sizeof self->rundir,
                                  c->rundir);
    else
        rc = telem_rundir_default(self->rundir, sizeof self->rundir);
    if (!rc && c->nodefile)
        rc = snprintf(self->nodefile, sizeof self->nodefile, "%s",
                      c->nodefile) >= (int) sizeof self->nodefile
                 ? TELEM_ETOOBIG : 0;
    else if (!rc && getenv("TELEM_NODEFILE"))
        rc = telem_nodefile_default(self->nodefile, sizeof self->nodefile);
    else if (!rc)
        rc = snprintf(self->nodefile, sizeof self->nodefile, "%s/nodes",
                      self->rundir) >= (int) sizeof self->nodefile
                 ? TELEM_ETOOBIG : 0;
    if (rc) {
        snprintf(why, why_size, "run directory or node file path too long");
        return TELEM_EINVAL;
    }
    if ((rc = telem_rundir_prepare(self->rundir, why, why_size)) != 0)
        return rc;
    snprintf(self->launch_dir, sizeof self->launch_dir, "%.*s/launch",
             (int) sizeof self->launch_dir - 8, self->rundir);
    snprintf(self->restart_ipc, sizeof self->restart_ipc,
             "ipc://%.*s/restart.sock", TELEM_PATH_MAX - 1, self->launch_dir);
    snprintf(self->restart_ep, sizeof self->restart_ep, "%s",
             self->restart_ipc);
    const char *bin = c->bindir ? c->bindir : ".";
    snprintf(self->bin_telemd, TELEM_PATH_MAX, "%.400s/telemd", bin);
    snprintf(self->bin_dictd, TELEM_PATH_MAX, "%.400s/telem_dictd", bin);
    snprintf(self->bin_collect, TELEM_PATH_MAX, "%.400s/telem_collect", bin);
    snprintf(self->bin_watch, TELEM_PATH_MAX, "%.400s/telem_watch", bin);
    snprintf(self->bin_agg, TELEM_PATH_MAX, "%.400s/telem_agg", bin);
    snprintf(self->bin_step, TELEM_PATH_MAX, "%.400s/telem_step", bin);
    const char *dnf = getenv("TELEM_DICT_NODEFILE");
    if ((dnf && *dnf ? snprintf(self->dict_nodefile, TELEM_PATH_MAX, "%s",
                                dnf)
                     : snprintf(self->dict_nodefile, TELEM_PATH_MAX,
                                "%s/dict_nodes", self->rundir))
        >= TELEM_PATH_MAX) {
        snprintf(why, why_size, "dictionary node file path too long");
        return TELEM_EINVAL;
    }
    return 0;
}

/* Checks the binaries the job needs where they can be checked (on this
 * machine: the local source; elsewhere they must be at the same path). */
static int
s_binaries(launch_job_t *self, char *why, size_t why_size)
{
    int local = launch_source_kind(self->source) == LAUNCH_SOURCE_LOCAL;
    if (local && access(self->bin_telemd, X_OK) != 0) {
        snprintf(why, why_size, "%s: %s", self->bin_telemd, strerror(errno));
        return TELEM_ENOTFOUND;
    }
    if (local && self->cfg.collect && access(self->bin_collect, X_OK) != 0) {
        snprintf(why, why_size, "collectors asked for, but %s: %s",
                 self->bin_collect, strerror(errno));
        return TELEM_ENOTFOUND;
    }
    /* The dictionary is part of every job where it is built. */
    self->dict = access(self->bin_dictd, X_OK) == 0;
    /* Under Slurm one kind on many nodes is one step, through telem_step
       (launch_job_step.c); without it each node's process is an srun of
       its own. */
    if (launch_source_kind(self->source) == LAUNCH_SOURCE_SLURM
        && access(self->bin_step, X_OK) != 0) {
        telem_log(TELEM_LOG_WARN, "%s: %s: every node's daemons and program "
                  "are started by an srun of their own", self->bin_step,
                  strerror(errno));
        self->bin_step[0] = '\0';
    }
    if (self->cfg.ndetectors && access(self->bin_watch, X_OK) != 0)
        telem_log(TELEM_LOG_WARN, "%s is not available: --detector has no "
                  "effect", self->bin_watch);
    return 0;
}

/* Nodes elsewhere cannot reach an ipc socket of this host: on other
 * sources than local the restart socket also listens on TCP, on this
 * host's address on the route to the nodes, and that endpoint is the one
 * the nodes are given.  Where no such address is known it stays ipc-only,
 * which is right when this host is one of the nodes. */
static void
s_restart_tcp(launch_job_t *self)
{
    char addr[64], ep[96], bound[sizeof self->restart_ep];
    if (launch_source_kind(self->source) == LAUNCH_SOURCE_LOCAL)
        return;
    if (launch_source_route_addr(self->source, addr, sizeof addr) != 0) {
        telem_log(TELEM_LOG_WARN, "no route to the nodes' addresses is "
                  "known: restart requests only at %s (reachable from this "
                  "host only)", self->restart_ipc);
        return;
    }
    snprintf(ep, sizeof ep, strchr(addr, ':') ? "tcp://[%s]:0"
             : "tcp://%s:0", addr);
    if (telem_sock_bind(self->restart_sock, ep, self->keys, bound,
                        sizeof bound) == 0)
        snprintf(self->restart_ep, sizeof self->restart_ep, "%s", bound);
    else
        telem_log(TELEM_LOG_WARN, "cannot bind %s for restart requests: %s",
                  ep, zmq_strerror(errno));
}

static int
s_sockets(launch_job_t *self, char *why, size_t why_size)
{
    self->enc = telem_proto_encoder_new();
    self->dec = telem_proto_decoder_new();
    self->loop = zloop_new();
    if (!self->enc || !self->dec || !self->loop) {
        snprintf(why, why_size, "out of memory");
        return TELEM_ENOMEM;
    }
    const telem_sock_opts_t o = {
        .max_msg = S_REQUEST_MAX, .sndhwm = TELEM_SOCK_KEEP,
        .rcvhwm = TELEM_SOCK_KEEP, .linger_ms = 0, .sndtimeo_ms = 0,
    };
    int err = 0;
    self->restart_sock = telem_sock_new_bind(ZMQ_ROUTER, &o,
                                             self->restart_ipc, NULL, 0, &err);
    if (!self->restart_sock) {
        if (err == TELEM_ENOMEM)
            snprintf(why, why_size, "out of memory");
        else
            snprintf(why, why_size, "cannot bind %s: %s", self->restart_ipc,
                     zmq_strerror(errno));
        return err ? err : TELEM_EIO;
    }
    s_restart_tcp(self);
    return 0;
}

static int
s_setup(launch_job_t *self, char *why, size_t why_size)
{
    size_t alloc = launch_source_count(self->source);
    int rc = launch_state_config_check(&self->cfg.nodes, alloc, why, why_size);
    if (rc)
        return rc;
    self->state = launch_state_new(launch_source_names(self->source), alloc,
                                   &self->cfg.nodes, &rc);
    if (!self->state)
        return rc;
    self->n = launch_state_size(self->state);
    if (!(self->nodes = calloc(self->n, sizeof *self->nodes)))
        return TELEM_ENOMEM;
    launch_job_sup_init(self);
    if ((rc = s_paths(self, why, why_size)) != 0
        || (rc = s_binaries(self, why, why_size)) != 0
        || (rc = launch_job_files_open(self, why, why_size)) != 0
        || (rc = launch_job_keys_open(self, why, why_size)) != 0)
        return rc;
    zsys_handler_set(NULL);     /* signals are read from the signalfd */
    if ((rc = s_signals_block(self)) != 0) {
        snprintf(why, why_size, "cannot set up signals: %s", strerror(errno));
        return rc;
    }
    if ((rc = s_sockets(self, why, why_size)) != 0)
        return rc;
    /* After the signals are blocked: the actor's thread inherits the mask. */
    int ms = (int) (self->cfg.heartbeat_timeout_ns / TELEM_NS_PER_MS);
    ms = ms > 0 ? ms : 1;
    if (self->cfg.heartbeat_ns > 0 && !(self->hb = zactor_new(s_hb_actor,
                                                              &ms))) {
        snprintf(why, why_size, "%s", "cannot start the heartbeat's thread");
        return TELEM_ENOMEM;
    }
    return 0;
}

launch_job_t *
launch_job_new(const launch_job_config_t *cfg, launch_source_t **source_p,
               char *why,
               size_t why_size, int *err)
{
    int err_ignored;
    if (!err)
        err = &err_ignored;
    int dummy;
    err = err ? err : &dummy;
    launch_source_t *source = source_p ? *source_p : NULL;
    if (source_p)
        *source_p = NULL;
    launch_job_t *self = calloc(1, sizeof *self);
    if (!self || !source || !cfg || !cfg->program || !cfg->program[0]) {
        *err = self ? TELEM_EINVAL : TELEM_ENOMEM;
        snprintf(why, why_size, "%s", self ? "no program to run" : "no memory");
        launch_source_destroy(&source);
        free(self);
        return NULL;
    }
    self->cfg = *cfg;
    if (cfg->prometheus_config && cfg->metrics_port < 0)
        self->cfg.metrics_port = 0;     /* Prometheus needs /metrics */
    self->source = source;
    self->timer = -1;
    self->on_line = launch_job_on_line;
    self->on_exit = launch_job_on_exit;
    self->on_node_lost = launch_job_node_failed;
    self->sigfd = self->lock_fd = -1;
    self->rl = (telem_ratelimit_t) TELEM_RATELIMIT_INIT(10, 5);
    if ((*err = s_setup(self, why, why_size)) != 0)
        launch_job_destroy(&self);
    return self;
}

int
launch_job_run(launch_job_t *self)
{
    zmq_pollitem_t item = { NULL, self->sigfd, ZMQ_POLLIN, 0 };
    zloop_poller(self->loop, &item, s_on_signal, self);
    zloop_reader(self->loop, self->restart_sock, launch_job_on_request, self);
    if (self->cfg.heartbeat_ns > 0)
        zloop_reader(self->loop, zactor_sock(self->hb),
                     s_on_heartbeat_result, self);
    if (self->cfg.heartbeat_ns > 0)
        zloop_timer(self->loop,
                    (size_t) (self->cfg.heartbeat_ns / TELEM_NS_PER_MS) + 1, 0,
                    s_on_heartbeat, self);
    telem_log(TELEM_LOG_INFO, "job of %zu %s node(s): %zu active, %zu in "
              "reserve; restart requests at %s", self->n,
              launch_source_kind_name(self->source),
              launch_state_count(self->state, LAUNCH_NODE_ACTIVE),
              launch_state_count(self->state, LAUNCH_NODE_IDLE),
              self->restart_ep);
    launch_job_begin(self);
    zloop_start(self->loop);
    s_reap(self);
    launch_job_relays_close(self);
    launch_job_files_close(self);
    return self->exit_code;
}

void
launch_job_destroy(launch_job_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    launch_job_t *self = *self_p;
    for (size_t i = 0; i < self->nprocs; i++) {
        launch_proc_signal_group(self->procs[i]->pid, SIGKILL);
        if (self->procs[i]->out_fd >= 0)
            close(self->procs[i]->out_fd);
        free(self->procs[i]);
    }
    free(self->procs);
    launch_job_step_close_all(self);
    launch_job_relays_close(self);
    launch_job_files_close(self);
    launch_job_dict_close(self);
    zactor_destroy(&self->hb);
    zloop_destroy(&self->loop);
    zsock_destroy(&self->restart_sock);
    launch_job_keys_close(self);
    telem_proto_encoder_destroy(&self->enc);
    telem_proto_decoder_destroy(&self->dec);
    if (self->sigfd >= 0)
        close(self->sigfd);
    launch_state_destroy(&self->state);
    launch_source_destroy(&self->source);
    free(self->nodes);
    free(self);
    *self_p = NULL;
}
