/* ac.c - the analysis client: sockets to every node and the fan-out engine.
 *
 * One DEALER per node, all in a ZeroMQ context private to the client (its
 * socket limit is sized to the node count, and nothing process-wide such as
 * czmq's signal handling is touched in the host program).  A call encodes its
 * request once, hands it to every selected node whose connection is up
 * (ZMQ_IMMEDIATE: nothing queues for a dead node), then polls all sockets
 * against a single monotonic deadline.  Replies are matched by request id;
 * anything else is a stale reply and is dropped.  A node still owing a reply
 * at the deadline gets a new socket, so its late answer is never read.
 * Requests and replies are single frames (a leading empty delimiter frame
 * from a REQ-style peer is tolerated: the last frame is the message).
 *
 * Relays (ac_relay.c, docs/relay.md): when the client was made from a node
 * file with a relays file beside it, a read's nodes that a relay covers
 * are asked through it (state AC__VIA) and the rest directly, all in the
 * same poll loop; a relay that has not answered when its share of the
 * deadline is up hands its nodes back to the direct path.  Nodes behind a
 * relay get their own socket only when first asked directly.
 */
#include "ac_internal.h"
#include "telem_paths.h"
#include "telem_sock_raw.h"
#include "telem_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

/* ---- sockets ----------------------------------------------------------- */

static int
s_sock_open(ac_t *self, ac__node_t *nd)
{
    /* Nothing queues for a dead node (immediate), a node that comes back
       is found within a second, and a reply may be as large as the
       codec's largest message. */
    const telem_sock_opts_t o = {
        .max_msg = (int64_t) self->max_reply, .sndhwm = 16,
        .rcvhwm = TELEM_SOCK_KEEP, .linger_ms = 0,
        .sndtimeo_ms = TELEM_SOCK_KEEP, .immediate = 1,
        .reconnect_ivl_max_ms = 1000, .keys = self->keys,
    };
    int rc;
    nd->sock = telem_sock_raw_new(self->ctx, ZMQ_DEALER, &o, nd->endpoint,
                                  &rc);
    return rc;
}

static void
s_sock_close(ac__node_t *nd)
{
    if (nd->sock)
        zmq_close(nd->sock);
    nd->sock = NULL;
}

static int
s_sock_reopen(ac_t *self, ac__node_t *nd)
{
    s_sock_close(nd);
    return s_sock_open(self, nd);
}

/* ---- construction ------------------------------------------------------ */

/* The job's keys: $TELEM_KEYS, beside the node file, or in the run
   directory (telem_keys_locate). */
static int
s_keys(ac_t *self, const char *nodefile)
{
    char def[TELEM_PATH_MAX];
    if (!nodefile || !*nodefile)
        nodefile = telem_nodefile_default(def, sizeof def) == 0 ? def : NULL;
    return telem_keys_find(NULL, nodefile, &self->keys, NULL, 0);
}

/* Takes the node entries (consumed) and the relays (consumed; may be
   none), and opens a socket to every node no relay covers. */
static int
s_setup(ac_t *self, ac__node_entry_t *entries, size_t n,
        ac__relay_entry_t **relays_p, size_t nrelays)
{
    self->n = n;
    for (size_t i = 0; i < n; i++) {
        /* Take ownership of the strings. */
        self->nodes[i].name = entries[i].name;
        self->nodes[i].endpoint = entries[i].endpoint;
        self->nodes[i].relay = -1;
        entries[i].name = entries[i].endpoint = NULL;
    }
    int rc = ac__relays_attach(self, relays_p, nrelays);
    if (rc)
        return rc;
    size_t nitems = n + self->nrelays;
    self->items = calloc(nitems, sizeof *self->items);
    self->item_node = calloc(nitems, sizeof *self->item_node);
    if (!self->items || !self->item_node)
        return TELEM_ENOMEM;
    if (nitems + 64 > 1023)
        zmq_ctx_set(self->ctx, ZMQ_MAX_SOCKETS, (int) (nitems + 64));
    for (size_t i = 0; i < n; i++)
        if (self->nodes[i].relay < 0
            && (rc = s_sock_open(self, &self->nodes[i])) != 0)
            return rc;
    return 0;
}

static ac_t *
s_new(ac__node_entry_t **entries_p, size_t n, ac__relay_entry_t **relays_p,
      size_t nrelays, const char *nodefile, int timeout_ms, int *err)
{
    int rc = TELEM_ENOMEM;
    ac_t *self = calloc(1, sizeof *self);
    if (!self)
        goto out;
    self->timeout_ms = timeout_ms > 0 ? timeout_ms : AC_TIMEOUT_DEFAULT_MS;
    self->max_reply = TELEM_PROTO_MAX_MSG;
    self->relay_backoff_ns = AC_RELAY_BACKOFF_DEFAULT_MS * TELEM_NS_PER_MS;
    self->next_id = ((uint64_t) telem_mono_ns() << 16) ^ (uint64_t) getpid();
    self->nodes = calloc(n, sizeof *self->nodes);
    self->enc = telem_proto_encoder_new();
    self->dec = telem_proto_decoder_new();
    self->ctx = zmq_ctx_new();
    if (!self->nodes || !self->enc || !self->dec || !self->ctx)
        goto out;
    if ((rc = s_keys(self, nodefile)) != 0)
        goto out;
    rc = s_setup(self, *entries_p, n, relays_p, nrelays);
out:
    ac__nodes_free(entries_p, n);
    ac__relays_free(relays_p, nrelays);
    if (rc)
        ac_close(&self);
    if (err)
        *err = rc;
    return self;
}

ac_t *
ac_connect(const char *nodefile, int timeout_ms, int *err)
{
    ac__node_entry_t *entries = NULL;
    ac__relay_entry_t *relays = NULL;
    size_t n = 0, nrelays = 0;
    int rc = ac__nodes_read(nodefile, &entries, &n, NULL, 0);
    if (rc == 0 && (rc = ac__relays_read(nodefile, &relays, &nrelays, NULL,
                                         0)) != 0)
        ac__nodes_free(&entries, n);
    if (rc) {
        if (err)
            *err = rc;
        return NULL;
    }
    return s_new(&entries, n, &relays, nrelays, nodefile, timeout_ms, err);
}

ac_t *
ac_connect_nodes(const char *const *names, const char *const *endpoints,
                 size_t n, int timeout_ms, int *err)
{
    ac__node_entry_t *entries = NULL;
    int rc = ac__nodes_copy(names, endpoints, n, &entries, NULL, 0);
    if (rc) {
        if (err)
            *err = rc;
        return NULL;
    }
    return s_new(&entries, n, NULL, 0, NULL, timeout_ms, err);
}

void
ac_close(ac_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ac_t *self = *self_p;
    for (size_t i = 0; self->nodes && i < self->n; i++) {
        s_sock_close(&self->nodes[i]);
        free(self->nodes[i].name);
        free(self->nodes[i].endpoint);
    }
    ac__relays_close(self);
    if (self->ctx)
        zmq_ctx_term(self->ctx);
    telem_proto_encoder_destroy(&self->enc);
    telem_proto_decoder_destroy(&self->dec);
    telem_keys_destroy(&self->keys);
    free(self->nodes);
    free(self->items);
    free(self->item_node);
    free(self);
    *self_p = NULL;
}

int
ac_set_max_reply(ac_t *self, size_t bytes)
{
    if (!self || bytes == 0 || bytes > (size_t) INT64_MAX)
        return TELEM_EINVAL;
    self->max_reply = bytes;
    int rc = 0;
    for (size_t i = 0; i < self->n; i++) {
        if (!self->nodes[i].sock && self->nodes[i].relay >= 0)
            continue;   /* opened on first direct use, with the new limit */
        int r = s_sock_reopen(self, &self->nodes[i]);
        if (r && !rc)
            rc = r;
    }
    return rc;
}

/* ---- nodes ------------------------------------------------------------- */

static int
s_cmp_node(const void *a, const void *b)
{
    const ac__node_t *x = *(ac__node_t *const *) a,
                     *y = *(ac__node_t *const *) b;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->endpoint, y->endpoint);
}

/* Moves the socket of the old node with e's name and endpoint, if any,
 * to nd; `by` is the old nodes sorted by s_cmp_node. */
static void
s_adopt(ac__node_t *nd, ac__node_t **by, size_t nold)
{
    ac__node_t key = { .name = nd->name, .endpoint = nd->endpoint },
               *kp = &key;
    ac__node_t **hit = nold ? bsearch(&kp, by, nold, sizeof *by,
                                      s_cmp_node) : NULL;
    if (hit) {
        nd->sock = (*hit)->sock;
        (*hit)->sock = NULL;
    }
}

int
ac_set_nodes(ac_t *self, const char *const *names,
             const char *const *endpoints, size_t n)
{
    if (!self || self->nrelays)
        return TELEM_EINVAL;
    ac__node_entry_t *e = NULL;
    int rc = n ? ac__nodes_copy(names, endpoints, n, &e, NULL, 0) : 0;
    if (rc)
        return rc;
    ac__node_t *nodes = calloc(n ? n : 1, sizeof *nodes),
               **by = calloc(self->n ? self->n : 1, sizeof *by);
    zmq_pollitem_t *items = calloc(n ? n : 1, sizeof *items);
    size_t *item_node = calloc(n ? n : 1, sizeof *item_node);
    if (!nodes || !by || !items || !item_node) {
        ac__nodes_free(&e, n);
        free(nodes), free(by), free(items), free(item_node);
        return TELEM_ENOMEM;
    }
    for (size_t j = 0; j < self->n; j++)
        by[j] = &self->nodes[j];
    qsort(by, self->n, sizeof *by, s_cmp_node);
    for (size_t i = 0; i < n; i++) {
        nodes[i] = (ac__node_t) { e[i].name, e[i].endpoint, NULL, AC__IDLE,
                                  -1 };
        e[i].name = e[i].endpoint = NULL;
        s_adopt(&nodes[i], by, self->n);
    }
    free(by);
    ac__nodes_free(&e, n);
    for (size_t j = 0; j < self->n; j++) {
        s_sock_close(&self->nodes[j]);
        free(self->nodes[j].name);
        free(self->nodes[j].endpoint);
    }
    free(self->nodes), free(self->items), free(self->item_node);
    self->nodes = nodes;
    self->n = n;
    self->items = items;
    self->item_node = item_node;
    for (size_t i = 0; i < n; i++) {
        int r = self->nodes[i].sock ? 0 : s_sock_open(self, &self->nodes[i]);
        if (r && !rc)
            rc = r;
    }
    return rc;
}

size_t
ac_node_count(const ac_t *self)
{
    return self ? self->n : 0;
}

const char *
ac_node_name(const ac_t *self, size_t i)
{
    return self && i < self->n ? self->nodes[i].name : NULL;
}

const char *
ac_node_endpoint(const ac_t *self, size_t i)
{
    return self && i < self->n ? self->nodes[i].endpoint : NULL;
}

long
ac_node_find(const ac_t *self, const char *name)
{
    if (!self || !name)
        return -1;
    for (size_t i = 0; i < self->n; i++)
        if (strcmp(self->nodes[i].name, name) == 0)
            return (long) i;
    return -1;
}

uint64_t
ac__next_id(ac_t *self)
{
    if (++self->next_id == 0)
        ++self->next_id;
    return self->next_id;
}

telem_proto_encoder_t *
ac__encoder(ac_t *self)
{
    return self->enc;
}

int
ac__timeout(const ac_t *self, int timeout_ms)
{
    return timeout_ms > 0 ? timeout_ms : self->timeout_ms;
}

const char *
ac_strerror(int code)
{
    return telem_strerror(code);
}

/* ---- fan-out ----------------------------------------------------------- */

void
ac__fail(ac_t *self, const ac__call_t *c, ac__tally_t *t, size_t i, int code,
         const char *message, int answered)
{
    self->nodes[i].state = AC__DONE;
    if (answered) {
        t->nerr++;
        if (!t->first_err)
            t->first_err = code;
    }
    c->on_miss(c->arg, i, code, message);
}

/* The id a reply carries, 0 for a type without one. */
static uint64_t
s_reply_id(const telem_msg_t *m)
{
    switch ((int) m->type) {
    case TELEM_MSG_ERROR: return m->u.error.id;
    case TELEM_MSG_QUERY_REPLY: return m->u.query_reply.id;
    case TELEM_MSG_CONTROL_REPLY: return m->u.control_reply.id;
    case TELEM_MSG_SYSINFO_REPLY: return m->u.sysinfo_reply.id;
    default: return 0;
    }
}

/* A matched reply of the expected type: checks who sent it and keeps it. */
static void
s_keep(ac_t *self, const ac__call_t *c, ac__tally_t *t, size_t i,
       const telem_msg_t *m)
{
    ac__node_t *nd = &self->nodes[i];
    char why[320];
    /* Ephemeral ports are reused: the endpoint of a dead node may now
       belong to another agent, whose answer must not pass for this node. */
    const char *who = m->type == TELEM_MSG_QUERY_REPLY ? m->u.query_reply.node
                    : (int) m->type == TELEM_MSG_SYSINFO_REPLY
                    ? m->u.sysinfo_reply.node
                    : m->u.control_reply.status.node;
    if (who && *who && strcmp(who, nd->name) != 0) {
        snprintf(why, sizeof why, "endpoint now belongs to node '%.200s'",
                 who);
        ac__fail(self, c, t, i, TELEM_ECONN, why, 1);
        return;
    }
    int rc = c->on_reply(c->arg, i, m);
    if (rc != 0) {
        snprintf(why, sizeof why, "reply could not be kept: %s",
                 telem_strerror(rc));
        ac__fail(self, c, t, i, rc, why, 1);
        return;
    }
    nd->state = AC__DONE;
    t->nok++;
}

void
ac__handle(ac_t *self, const ac__call_t *c, ac__tally_t *t, size_t i,
           const void *data, size_t size)
{
    ac__node_t *nd = &self->nodes[i];
    char why[320];
    telem_msg_t m;
    int rc = telem_proto_decode(self->dec, data, size, &m);
    if (rc) {
        snprintf(why, sizeof why, "undecodable reply: %s",
                 telem_proto_decoder_error(self->dec));
        ac__fail(self, c, t, i, TELEM_EPROTO, why, 1);
        return;
    }
    uint64_t id = s_reply_id(&m);
    /* A node that could not even decode our request answers with id 0. */
    if (id != c->id && !(m.type == TELEM_MSG_ERROR && id == 0))
        return;  /* stale reply to an earlier call */
    if (c->on_raw) {
        c->on_raw(c->arg, i, data, size);
        nd->state = AC__DONE;
        t->nok++;
        return;
    }
    if (m.type == TELEM_MSG_ERROR) {
        int code = m.u.error.code < 0 ? m.u.error.code : TELEM_EPROTO;
        if (code == TELEM_ENOTFOUND && c->notfound_is_empty && id != 0) {
            nd->state = AC__DONE;
            t->nok++;
            return;
        }
        ac__fail(self, c, t, i, code,
                 m.u.error.message ? m.u.error.message : "", 1);
        return;
    }
    if (m.type != c->expect) {
        snprintf(why, sizeof why, "unexpected %s reply",
                 telem_proto_msg_type_name(m.type));
        ac__fail(self, c, t, i, TELEM_EPROTO, why, 1);
        return;
    }
    s_keep(self, c, t, i, &m);
}

/* Reads every message waiting on node i's socket, keeping each one's last
 * frame. */
static void
s_drain(ac_t *self, const ac__call_t *c, ac__tally_t *t, size_t i)
{
    ac__node_t *nd = &self->nodes[i];
    zmq_msg_t part;
    zmq_msg_init(&part);
    while (nd->state == AC__SENT) {
        if (zmq_msg_recv(&part, nd->sock, ZMQ_DONTWAIT) < 0)
            break;
        /* The rest of a multipart message is already here. */
        while (zmq_msg_more(&part))
            if (zmq_msg_recv(&part, nd->sock, ZMQ_DONTWAIT) < 0)
                break;
        ac__handle(self, c, t, i, zmq_msg_data(&part), zmq_msg_size(&part));
    }
    zmq_msg_close(&part);
}

/* Tries to hand the request to node i; leaves it AC__WANT_SEND if its
 * connection is not up yet. */
static void
s_try_send(ac_t *self, const ac__call_t *c, ac__tally_t *t, size_t i)
{
    ac__node_t *nd = &self->nodes[i];
    if (zmq_send(nd->sock, c->frame, c->size, ZMQ_DONTWAIT) >= 0) {
        nd->state = AC__SENT;
        return;
    }
    if (errno != EAGAIN) {
        char why[128];
        snprintf(why, sizeof why, "send failed: %s", zmq_strerror(errno));
        ac__fail(self, c, t, i, TELEM_ECONN, why, 0);
    }
}

/* Fills the poll set with every node and relay still in play; returns its
 * size. */
static size_t
s_poll_set(ac_t *self, const ac__call_t *c, ac__tally_t *t)
{
    size_t k = 0;
    for (size_t j = 0; j < c->nsel; j++) {
        size_t i = c->sel[j];
        ac__node_t *nd = &self->nodes[i];
        if (nd->state == AC__WANT_SEND)
            s_try_send(self, c, t, i);
        if (nd->state != AC__WANT_SEND && nd->state != AC__SENT)
            continue;
        self->items[k] = (zmq_pollitem_t) {
            .socket = nd->sock,
            .events = nd->state == AC__SENT ? ZMQ_POLLIN : ZMQ_POLLOUT,
        };
        self->item_node[k++] = i;
    }
    return ac__relay_poll_set(self, k);
}

/* Polls until every node is done or the deadline passes; relays whose
 * share is up hand their nodes to the direct path on the way. */
static int
s_wait(ac_t *self, const ac__call_t *c, ac__tally_t *t, int64_t deadline)
{
    for (;;) {
        int64_t now = telem_mono_ns();
        ac__relay_expire(self, c, t, now);
        size_t k = s_poll_set(self, c, t);
        int64_t due = ac__relay_due(self);
        int64_t left = (due < deadline ? due : deadline) - now;
        if (k == 0 || deadline - now <= 0)
            return 0;
        if (left < 0)
            left = 0;
        long ms = (long) ((left + TELEM_NS_PER_MS - 1) / TELEM_NS_PER_MS);
        int rc = zmq_poll(self->items, (int) k, ms);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0)
            return TELEM_EIO;
        for (size_t j = 0; j < k; j++) {
            if (!(self->items[j].revents & ZMQ_POLLIN))
                continue;
            if (self->item_node[j] < self->n)
                s_drain(self, c, t, self->item_node[j]);
            else
                ac__relay_drain(self, c, t, self->item_node[j] - self->n);
        }
    }
}

/* Reports the nodes still owing something and resets every state. */
static void
s_settle(ac_t *self, const ac__call_t *c)
{
    char why[256];
    int ms = c->report_ms > 0 ? c->report_ms : c->timeout_ms;
    size_t max = c->report_max ? c->report_max : self->max_reply;
    for (size_t j = 0; j < c->nsel; j++) {
        size_t i = c->sel[j];
        ac__node_t *nd = &self->nodes[i];
        if (nd->state == AC__WANT_SEND) {
            snprintf(why, sizeof why,
                     "no connection to %s within %d ms (node down or not "
                     "responding)", nd->endpoint, ms);
            c->on_miss(c->arg, i, TELEM_ECONN, why);
        } else if (nd->state == AC__SENT || nd->state == AC__VIA) {
            snprintf(why, sizeof why,
                     "no reply within %d ms (node down or busy, or its reply "
                     "was over the %zu-byte limit)", ms, max);
            c->on_miss(c->arg, i, TELEM_ETIMEDOUT, why);
            /* Never read its late reply: start over with a new socket. */
            if (nd->state == AC__SENT)
                s_sock_reopen(self, nd);
        }
        nd->state = AC__IDLE;
    }
    ac__relay_settle(self);
}

int
ac__node_open(ac_t *self, size_t i)
{
    ac__node_t *nd = &self->nodes[i];
    return nd->sock ? 0 : s_sock_open(self, nd);
}

int
ac__fanout(ac_t *self, const ac__call_t *c)
{
    ac__tally_t t = { 0, 0, 0 };
    int64_t now = telem_mono_ns();
    int64_t deadline = now + (int64_t) c->timeout_ms * TELEM_NS_PER_MS;
    for (size_t j = 0; j < c->nsel; j++)
        self->nodes[c->sel[j]].state = AC__WANT_SEND;
    if (c->relay)
        ac__relay_begin(self, c, now);
    for (size_t j = 0; j < c->nsel; j++) {
        size_t i = c->sel[j];
        if (self->nodes[i].state == AC__WANT_SEND
            && ac__node_open(self, i) != 0)
            ac__fail(self, c, &t, i, TELEM_ECONN,
                     "socket could not be created", 0);
    }
    int rc = s_wait(self, c, &t, deadline);
    s_settle(self, c);
    if (rc)
        return rc;
    if (t.nok == c->nsel)
        return 0;
    if (t.nok > 0)
        return TELEM_EPARTIAL;
    return t.nerr > 0 ? t.first_err : TELEM_ETIMEDOUT;
}
