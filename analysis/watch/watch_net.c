/* watch_net.c - the watcher's sockets and its files in the run
 * directory.
 *
 * Three sockets, all czmq: a PUB that every event goes out on (topic frame
 * = detector label, then the codec's event message), a ROUTER that answers
 * control requests between ticks, and a DEALER to the launcher for restart
 * requests.  The DEALER is rebuilt whenever a request times out, the way
 * the analysis client treats a silent node: a request that was not
 * acknowledged in time must never reach the launcher later and restart a
 * job the watcher already reported as not restarted.
 *
 * <rundir>/<name>/ holds the ipc sockets, an endpoints file that
 * `telem_watch ctl` and subscribers read, and a lock file held with flock
 * for the watcher's lifetime, so two watchers never bind the same sockets.
 */
#include "watch_net.h"
#include "watch_out.h"
#include "telem_paths.h"
#include "telem_sock.h"

#include <czmq.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct watch_net {
    char dir[TELEM_PATH_MAX];
    char pub_ep[TELEM_PATH_MAX + 16];
    char ctl_ep[TELEM_PATH_MAX + 16];
    char restart_ep[TELEM_PATH_MAX + 16];
    int lock_fd;
    int wrote_endpoints;
    zsock_t *pub, *ctl, *restart;
    const telem_keys_t *keys;  /* borrowed from the options */
    telem_proto_encoder_t *enc;
    telem_proto_decoder_t *dec;
    watch_out_wire_t wire;
    uint64_t next_id;
    uint64_t bad_requests;     /* control requests refused as malformed */
};

#define S_CTL_MAX 4096         /* bytes of one control request frame */

/* ---- set-up ------------------------------------------------------------ */

/* Creates and locks the watcher's directory. */
static int
s_take_dir(watch_net_t *self, const watch_net_opts_t *o, char *why,
           size_t why_size)
{
    char rundir[TELEM_PATH_MAX];
    if (o->rundir ? telem_rundir_resolve(rundir, sizeof rundir, o->rundir)
                  : telem_rundir_default(rundir, sizeof rundir))
        return snprintf(why, why_size, "run directory path too long"),
               TELEM_EINVAL;
    const char *name = o->name ? o->name : WATCH_NAME_DEFAULT;
    if (!telem_node_valid(name) ||
        telem_node_path(self->dir, sizeof self->dir, rundir, name, ""))
        return snprintf(why, why_size, "cannot use run directory '%s' with "
                        "name '%s'", rundir, name), TELEM_EINVAL;
    int rc = telem_rundir_prepare(rundir, why, why_size);
    if (rc)
        return rc;
    self->dir[strlen(self->dir) - 1] = '\0';      /* drop the trailing / */
    if (mkdir(self->dir, 0700) != 0 && errno != EEXIST)
        return snprintf(why, why_size, "cannot create %s: %s", self->dir,
                        strerror(errno)), TELEM_EIO;
    char lock[TELEM_PATH_MAX];
    rc = telem_node_lock(lock, sizeof lock, rundir, name, "lock",
                             &self->lock_fd);
    if (rc == TELEM_ESTATE)
        return snprintf(why, why_size, "another telem_watch called '%s' "
                        "runs in %s (use --name)", name, rundir),
               TELEM_ESTATE;
    if (rc)
        return snprintf(why, why_size, "cannot lock %s: %s", lock,
                        rc == TELEM_EIO ? strerror(errno)
                                        : telem_strerror(rc)), rc;
    return 0;
}

/* Makes a socket of `type` with `o` and binds it to ep; the endpoint
 * actually bound (tcp://...:0 resolved) goes to out. */
static zsock_t *
s_bind(int type, const telem_sock_opts_t *o, const char *ep, char *out,
       size_t out_size, char *why, size_t why_size, int *rc)
{
    int err = 0;
    zsock_t *s = telem_sock_new_bind(type, o, ep, out, out_size, &err);
    *rc = s ? 0 : err ? err : TELEM_EIO;
    if (!s)
        snprintf(why, why_size, "cannot bind %s: %s", ep,
                 err == TELEM_EIO ? zmq_strerror(errno) : telem_strerror(err));
    return s;
}

static int
s_write_endpoints(watch_net_t *self, char *why, size_t why_size)
{
    char path[TELEM_PATH_MAX + 16], tmp[TELEM_PATH_MAX + 24];
    snprintf(path, sizeof path, "%s/endpoints", self->dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return snprintf(why, why_size, "cannot write %s: %s", tmp,
                        strerror(errno)), TELEM_EIO;
    fprintf(f, "pub %s\nctl %s\npid %ld\n", self->pub_ep, self->ctl_ep,
            (long) getpid());
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        return snprintf(why, why_size, "cannot write %s: %s", path,
                        strerror(errno)), TELEM_EIO;
    self->wrote_endpoints = 1;
    return 0;
}

static zsock_t *
s_dealer(const char *ep, const telem_keys_t *keys)
{
    const telem_sock_opts_t o = {
        .max_msg = 1 << 20, .sndhwm = 16, .rcvhwm = TELEM_SOCK_KEEP,
        .linger_ms = 0, .sndtimeo_ms = TELEM_SOCK_KEEP, .keys = keys,
    };
    return telem_sock_new_connect(ZMQ_DEALER, &o, ep);
}

/* Plain TCP reaches anyone on the network (on loopback, every user of the
   machine): events may be read there only on loopback, control never,
   unless the user said the network is theirs. */
static int
s_tcp_allowed(const watch_net_opts_t *o, const char *ep, int control,
              char *why, size_t why_size)
{
    if (o->keys || o->insecure || !ep || strncmp(ep, "tcp://", 6) != 0
        || (!control && telem_keys_loopback(ep)))
        return 0;
    snprintf(why, why_size, "%s %s on plain TCP: %s; the job's keys "
             "($TELEM_KEYS, or <rundir>/keys) make it CURVE, or "
             "--insecure on a network only you use",
             control ? "--ctl" : "--pub", ep,
             control ? "anyone who reaches it could change the detectors"
                     : "anyone who reaches it could read the events");
    return TELEM_EPERM;
}

static int
s_sockets(watch_net_t *self, const watch_net_opts_t *o, char *why,
          size_t why_size)
{
    char def[TELEM_PATH_MAX + 16];
    const telem_sock_opts_t pub = {
        .max_msg = TELEM_SOCK_KEEP, .sndhwm = 10000,
        .rcvhwm = TELEM_SOCK_KEEP, .linger_ms = 0,
        .sndtimeo_ms = TELEM_SOCK_KEEP, .keys = o->keys,
    };
    /* A watch_ctl request holds three strings of at most 255 bytes
       (about 800 bytes encoded): frames past S_CTL_MAX are dropped with
       their connection. */
    const telem_sock_opts_t ctl = {
        .max_msg = S_CTL_MAX, .sndhwm = TELEM_SOCK_KEEP,
        .rcvhwm = TELEM_SOCK_KEEP, .linger_ms = 0,
        .sndtimeo_ms = TELEM_SOCK_KEEP, .keys = o->keys,
    };
    int rc;
    if ((rc = s_tcp_allowed(o, o->pub_ep, 0, why, why_size))
        || (rc = s_tcp_allowed(o, o->ctl_ep, 1, why, why_size)))
        return rc;
    snprintf(def, sizeof def, "ipc://%s/pub.sock", self->dir);
    if (!(self->pub = s_bind(ZMQ_PUB, &pub, o->pub_ep ? o->pub_ep : def,
                             self->pub_ep, sizeof self->pub_ep, why,
                             why_size, &rc)))
        return rc;
    snprintf(def, sizeof def, "ipc://%s/ctl.sock", self->dir);
    if (!(self->ctl = s_bind(ZMQ_ROUTER, &ctl, o->ctl_ep ? o->ctl_ep : def,
                             self->ctl_ep, sizeof self->ctl_ep, why,
                             why_size, &rc)))
        return rc;
    if (!o->restart_ep)
        return 0;
    snprintf(self->restart_ep, sizeof self->restart_ep, "%s", o->restart_ep);
    self->keys = o->keys;
    if (!(self->restart = s_dealer(o->restart_ep, self->keys)))
        return snprintf(why, why_size, "cannot connect to %s: %s",
                        o->restart_ep, zmq_strerror(zmq_errno())),
               TELEM_ECONN;
    return 0;
}

watch_net_t *
watch_net_new(const watch_net_opts_t *o, char *why, size_t why_size,
              int *err)
{
    int rc = TELEM_ENOMEM;
    watch_net_t *self = calloc(1, sizeof *self);
    if (!self) {
        snprintf(why, why_size, "out of memory");
        goto out;
    }
    self->lock_fd = -1;
    self->next_id = ((uint64_t) getpid() << 32) | 1;
    if ((rc = s_take_dir(self, o, why, why_size)) ||
        (rc = s_sockets(self, o, why, why_size)) ||
        (rc = s_write_endpoints(self, why, why_size)))
        goto out;
    self->enc = telem_proto_encoder_new();
    self->dec = telem_proto_decoder_new();
    rc = self->enc && self->dec ? 0 : TELEM_ENOMEM;
    if (rc)
        snprintf(why, why_size, "out of memory");
out:
    if (rc)
        watch_net_destroy(&self);
    if (err)
        *err = rc;
    return self;
}

/* Removes the ipc socket file behind ep if it lies in our directory. */
static void
s_unlink_ipc(const watch_net_t *self, const char *ep)
{
    size_t n = strlen(self->dir);
    if (strncmp(ep, "ipc://", 6) == 0 && strncmp(ep + 6, self->dir, n) == 0)
        unlink(ep + 6);
}

void
watch_net_destroy(watch_net_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    watch_net_t *self = *self_p;
    zsock_destroy(&self->pub);
    zsock_destroy(&self->ctl);
    zsock_destroy(&self->restart);
    if (self->wrote_endpoints) {
        char path[TELEM_PATH_MAX + 16];
        snprintf(path, sizeof path, "%s/endpoints", self->dir);
        unlink(path);
        s_unlink_ipc(self, self->pub_ep);
        s_unlink_ipc(self, self->ctl_ep);
    }
    if (self->lock_fd >= 0)
        close(self->lock_fd);               /* releases the flock */
    telem_proto_encoder_destroy(&self->enc);
    telem_proto_decoder_destroy(&self->dec);
    watch_out_wire_free(&self->wire);
    free(self);
    *self_p = NULL;
}

const char *
watch_net_pub_endpoint(const watch_net_t *self) { return self->pub_ep; }
const char *
watch_net_ctl_endpoint(const watch_net_t *self) { return self->ctl_ep; }
const char *watch_net_dir(const watch_net_t *self) { return self->dir; }
void *watch_net_ctl_sock(const watch_net_t *self) { return self->ctl; }
void *watch_net_restart_sock(const watch_net_t *self) { return self->restart; }

/* ---- events ------------------------------------------------------------ */

int
watch_net_publish(watch_net_t *self, const det_event_t *e, uint64_t seq)
{
    telem_watch_event_t m;
    const void *data;
    size_t size;
    int rc = watch_out_event_to_wire(e, seq, &self->wire, &m);
    if (rc
        || (rc = telem_proto_encode_watch_event(self->enc, &m, &data, &size)))
        return rc;
    void *raw = zsock_resolve(self->pub);
    if (zmq_send(raw, e->detector, strlen(e->detector),
                 ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
        return 0;                         /* HWM: dropped, as PUB does */
    zmq_send(raw, data, size, ZMQ_DONTWAIT);
    return 0;
}

/* ---- control ----------------------------------------------------------- */

/* Sends r to the peer `*id_p` (the frame is consumed). */
static void
s_reply(watch_net_t *self, zframe_t **id_p, const telem_watch_ctl_reply_t *r)
{
    const void *data;
    size_t size;
    telem_watch_ctl_reply_t small = { r->id, r->code, r->message, NULL, 0 };
    if (telem_proto_encode_watch_ctl_reply(self->enc, r, &data, &size) != 0) {
        small.code = TELEM_ETOOBIG;
        small.message = "reply could not be encoded";
        if (telem_proto_encode_watch_ctl_reply(self->enc, &small, &data, &size))
            return;
    }
    zmsg_t *msg = zmsg_new();
    zmsg_append(msg, id_p);
    zmsg_addmem(msg, data, size);
    zmsg_send(&msg, self->ctl);
}

/* Reads and frees the rest of a message frame by frame; returns how
 * many frames that was. */
static size_t
s_skip_rest(zsock_t *sock)
{
    size_t n = 0;
    while (zsock_rcvmore(sock)) {
        zframe_t *f = zframe_recv(sock);
        if (!f)
            break;
        zframe_destroy(&f);
        n++;
    }
    return n;
}

int
watch_net_serve(watch_net_t *self, watch_t *watch, const char *const *extra,
                size_t nextra)
{
    /* [identity, request]: read one frame at a time, nothing kept past
       those two. */
    zframe_t *id = zframe_recv(self->ctl);
    if (!id)
        return TELEM_EIO;
    zframe_t *body = zsock_rcvmore(self->ctl) ? zframe_recv(self->ctl) : NULL;
    size_t more = s_skip_rest(self->ctl);
    int rc = 0;
    telem_msg_t m;
    if (!body || more ||
        telem_proto_decode(self->dec, zframe_data(body), zframe_size(body),
                           &m) != 0 ||
        (int) m.type != TELEM_MSG_WATCH_CTL) {
        telem_watch_ctl_reply_t bad = { 0, TELEM_EPROTO,
            "not a watch_ctl message", NULL, 0 };
        s_reply(self, &id, &bad);
        self->bad_requests++;
        rc = TELEM_EPROTO;
    } else {
        s_reply(self, &id, watch_control(watch, &m.u.watch_ctl, extra, nextra));
    }
    zframe_destroy(&id);
    zframe_destroy(&body);
    return rc;
}

uint64_t
watch_net_bad_requests(const watch_net_t *self)
{
    return self->bad_requests;
}

/* ---- restart ----------------------------------------------------------- */

int
watch_net_restart_send(watch_net_t *self, telem_restart_t *m)
{
    if (!self->restart)
        return TELEM_ESTATE;
    const void *data;
    size_t size;
    m->id = self->next_id++;
    int rc = telem_proto_encode_restart(self->enc, m, &data, &size);
    if (rc)
        return rc;
    if (zmq_send(zsock_resolve(self->restart), data, size, ZMQ_DONTWAIT) < 0)
        return TELEM_ECONN;
    return 0;
}

int
watch_net_restart_recv(watch_net_t *self, telem_restart_ack_t *ack)
{
    zframe_t *f = zframe_recv_nowait(self->restart);
    if (!f)
        return TELEM_ETIMEDOUT;
    telem_msg_t m;
    int rc = telem_proto_decode(self->dec, zframe_data(f), zframe_size(f), &m);
    if (rc == 0 && (int) m.type != TELEM_MSG_RESTART_ACK)
        rc = TELEM_EPROTO;
    if (rc == 0)
        *ack = m.u.restart_ack;
    zframe_destroy(&f);
    return rc;
}

int
watch_net_restart_reset(watch_net_t *self)
{
    if (!self->restart)
        return 0;
    zsock_destroy(&self->restart);
    self->restart = s_dealer(self->restart_ep, self->keys);
    return self->restart ? 0 : TELEM_EIO;
}
