/* launch_job_req.c - the launcher's restart request socket: telem_watch (or
 * any client of the wire protocol) asks for a restart without some nodes.
 *
 * A ZeroMQ ROUTER at <rundir>/launch/restart.sock.  A request is one
 * frame, TELEM_MSG_RESTART (runtime/proto/telem_proto_watch.h); the answer is
 * one frame back to the same peer, TELEM_MSG_RESTART_ACK with the
 * request's id: code 0 when the restart is under way (or when only
 * reserves were named, which needs none), else the reason it was refused.
 * Any other message is answered with an error message (TELEM_EUNSUPPORTED,
 * or TELEM_EPROTO for undecodable input or a message of more frames than
 * identity, empty delimiter and request), counted and logged with a rate
 * limit: input from the socket never harms the launcher.  Frames are read
 * one at a time and none is kept past the third; each is at most 2 MiB
 * (the socket's ZMQ_MAXMSGSIZE, launch_job_loop.c).
 *
 * A request is not a failure the launcher observed itself, so it never
 * ends a job: a job without --resilient refuses it and goes on.
 */
#include "launch_job_int.h"

#include <string.h>

#include "telem_error.h"
#include "telem_log.h"
#include "telem_why.h"

#define S_EXCLUDE_MAX 4096          /* names in one request */
#define S_REQ_FRAMES 3              /* identity, empty delimiter, request */

static void
s_send(launch_job_t *self, zmsg_t *envelope, int rc, const void *data,
       size_t size)
{
    if (rc == 0 && zmsg_addmem(envelope, data, size) == 0)
        zmsg_send(&envelope, self->restart_sock);
    zmsg_destroy(&envelope);
}

static void
s_reply_error(launch_job_t *self, zmsg_t *envelope, int code, const char *text)
{
    telem_error_msg_t e = { 0, code, text };
    const void *data = NULL;
    size_t size = 0;
    int rc = telem_proto_encode_error(self->enc, &e, &data, &size);
    s_send(self, envelope, rc, data, size);
}

static void
s_reply_ack(launch_job_t *self, zmsg_t *envelope, uint64_t id, int code,
            const char *text)
{
    telem_restart_ack_t a = { id, code, text };
    const void *data = NULL;
    size_t size = 0;
    int rc = telem_proto_encode_restart_ack(self->enc, &a, &data, &size);
    s_send(self, envelope, rc, data, size);
}

/* "slowgpu" or "slowgpu+hot": the detectors as the restart's trigger,
 * whole names only ("; and N more" where they do not all fit). */
static void
s_trigger(const telem_restart_t *r, char *buf, size_t size)
{
    unsigned dropped = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < r->ndetectors; i++)
        if (r->detectors[i])
            telem_why_clause(buf, size, "+", r->detectors[i], &dropped);
    telem_why_end(buf, size, &dropped);
    if (!*buf)
        snprintf(buf, size, "request");
}

/* What the request led to, for the ack; returns its code. */
static int
s_outcome(const launch_job_t *self, long restarts_before, char *msg,
          size_t size)
{
    if (self->phase == LAUNCH_PHASE_ENDING) {
        snprintf(msg, size, "no restart is possible (%s): the job ends "
                 "with exit %d", self->exit_code == LAUNCH_EXIT_BUDGET
                 ? "restart budget spent, or a second restart downing no "
                   "node" : "too few nodes left", self->exit_code);
        return TELEM_ESTATE;
    }
    if (launch_state_restarts(self->state) == restarts_before) {
        snprintf(msg, size, "only reserve nodes were named: they are down, "
                 "the program goes on");
        return 0;
    }
    snprintf(msg, size, "restart %ld: nodes %.300s; promoted %.300s",
             self->rs.number, *self->rs.nodes ? self->rs.nodes : "none",
             *self->rs.promoted ? self->rs.promoted : "none");
    return 0;
}

/* Carries out one decoded restart request; fills the ack's text. */
static int
s_restart(launch_job_t *self, const telem_restart_t *r, char *msg, size_t size)
{
    if (!self->cfg.resilient) {
        snprintf(msg, size, "this job is not --resilient: it is not "
                 "restarted on request");
        return TELEM_ESTATE;
    }
    if (r->nexclude > S_EXCLUDE_MAX) {
        snprintf(msg, size, "%u nodes named, at most %d", r->nexclude,
                 S_EXCLUDE_MAX);
        return TELEM_EINVAL;
    }
    char trigger[sizeof self->rs.trigger];
    s_trigger(r, trigger, sizeof trigger);
    const char *why = r->reason && *r->reason ? r->reason
                                              : "restart requested";
    long before = launch_state_restarts(self->state);
    int rc = launch_job_request_restart(self, r->exclude, r->nexclude, trigger,
                                        why);
    if (rc == TELEM_ENOTFOUND)
        snprintf(msg, size, "a named node is not a node of this job; "
                 "nothing was done");
    else if (rc == TELEM_ESTATE)
        snprintf(msg, size, "the job is ending");
    else if (rc == 0)
        rc = s_outcome(self, before, msg, size);
    return rc;
}

/* Reads one message frame by frame: the peer's identity and an optional
 * empty delimiter into *envelope, the request into *payload.  Frames past
 * S_REQ_FRAMES are read and freed one at a time, never kept (libzmq has
 * queued the message whole; this bounds what the launcher holds of it).
 * Returns the message's frame count; *envelope and *payload are NULL
 * unless it has the shape of a request. */
static size_t
s_recv(zsock_t *sock, zmsg_t **envelope, zframe_t **payload)
{
    zframe_t *f[S_REQ_FRAMES] = { NULL };
    size_t n = 0;
    do {
        zframe_t *fr = zframe_recv(sock);
        if (!fr)
            break;
        if (n < S_REQ_FRAMES)
            f[n] = fr;
        else
            zframe_destroy(&fr);
        n++;
    } while (zsock_rcvmore(sock));
    *envelope = NULL;
    *payload = NULL;
    if (n == 2 || (n == 3 && zframe_size(f[1]) == 0)) {
        *envelope = zmsg_new();
        for (size_t i = 0; i + 1 < n; i++)
            zmsg_append(*envelope, &f[i]);
        *payload = f[n - 1];
        f[n - 1] = NULL;
    } else if (n > 1 && f[0]) {
        *envelope = zmsg_new();       /* the refusal's address */
        zmsg_append(*envelope, &f[0]);
    }
    for (size_t i = 0; i < S_REQ_FRAMES; i++)
        zframe_destroy(&f[i]);
    return n;
}

int
launch_job_on_request(zloop_t *loop, zsock_t *sock, void *arg)
{
    (void) loop;
    launch_job_t *self = arg;
    zmsg_t *m = NULL;
    zframe_t *payload = NULL;
    size_t n = s_recv(sock, &m, &payload);
    if (!payload) {
        self->bad_requests++;
        telem_log_limited(&self->rl, TELEM_LOG_WARN, "restart socket: a "
                          "message of %zu frames refused (%llu so far): a "
                          "request is one frame after an optional empty "
                          "delimiter", n,
                          (unsigned long long) self->bad_requests);
        if (m)
            s_reply_error(self, m, TELEM_EPROTO, "a request is one frame "
                          "after an optional empty delimiter");
        return 0;
    }
    telem_msg_t msg;
    char text[1024] = "";
    int rc = telem_proto_decode(self->dec, zframe_data(payload),
                                zframe_size(payload), &msg);
    if (rc) {
        snprintf(text, sizeof text, "%s", telem_proto_decoder_error(self->dec));
    } else if ((int) msg.type != TELEM_MSG_RESTART) {
        rc = TELEM_EUNSUPPORTED;
        snprintf(text, sizeof text, "message type %d is not a restart "
                 "request", (int) msg.type);
    }
    if (rc) {
        self->bad_requests++;
        telem_log_limited(&self->rl, TELEM_LOG_WARN, "restart socket: %s: %s "
                          "(%llu refused so far)", telem_strerror(rc), text,
                          (unsigned long long) self->bad_requests);
        s_reply_error(self, m, rc, text);
    } else {
        uint64_t id = msg.u.restart.id;
        rc = s_restart(self, &msg.u.restart, text, sizeof text);
        telem_log(rc ? TELEM_LOG_WARN : TELEM_LOG_INFO, "restart request "
                  "%llu %s: %s", (unsigned long long) id,
                  rc ? "refused" : "accepted", text);
        s_reply_ack(self, m, id, rc, text);
    }
    zframe_destroy(&payload);    /* msg's strings pointed into it */
    return launch_job_loop_result(self);
}
