/* ac_relay.c - the analysis client's relays: the part of a fan-out that
 * relays carry (docs/relay.md).
 *
 * A read whose selected nodes include some of a relay's group sends that
 * relay one request naming them, with the client's own request frame
 * inside; those nodes wait in state AC__VIA while the rest of the call
 * goes on directly, in the same poll loop (ac.c).  Each part of the
 * relay's merged answer is handled as it arrives: an embedded reply goes
 * through ac__handle() exactly as if it had come from the node's own
 * socket (id, type and answering node checked there), an embedded miss
 * through ac__fail() with the relay's code and sentence.  A relay whose
 * answer is not complete when its share of the deadline is up (or that
 * refuses, or sends garbage) hands its waiting nodes back to the direct
 * path for the rest of the deadline, gets a fresh socket (so its late
 * answer is never read) and is skipped for the back-off period.
 *
 * Shares: the relay asks its nodes with 5/8 of the call's deadline and
 * must have answered by 3/4 of it; the last quarter is the direct path's.
 */
#include "ac_internal.h"
#include "telem_sock_raw.h"
#include "telem_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- set-up ------------------------------------------------------------ */

static int
s_sock_open(ac_t *self, ac__relay_t *r)
{
    const telem_sock_opts_t o = {
        .max_msg = TELEM_PROTO_MAX_MSG, .sndhwm = 16,
        .rcvhwm = TELEM_SOCK_KEEP, .linger_ms = 0,
        .sndtimeo_ms = TELEM_SOCK_KEEP, .immediate = 1,
        .reconnect_ivl_max_ms = 1000, .keys = self->keys,
    };
    int rc;
    r->sock = telem_sock_raw_new(self->ctx, ZMQ_DEALER, &o, r->endpoint, &rc);
    return rc;
}

static void
s_sock_close(ac__relay_t *r)
{
    if (r->sock)
        zmq_close(r->sock);
    r->sock = NULL;
}

/* Ties entry e's group to node indexes; a name the client does not know,
 * or one already covered, is dropped. */
static int
s_bind_group(ac_t *self, ac__relay_t *r, ac__relay_entry_t *e, long ri)
{
    r->group = malloc((e->nnodes ? e->nnodes : 1) * sizeof *r->group);
    if (!r->group)
        return TELEM_ENOMEM;
    for (size_t j = 0; j < self->n; j++)
        for (size_t k = 0; k < e->nnodes; k++)
            if (self->nodes[j].relay < 0
                && strcmp(self->nodes[j].name, e->nodes[k]) == 0) {
                self->nodes[j].relay = ri;
                r->group[r->ngroup++] = j;   /* ascending: j grows */
                break;
            }
    return 0;
}

int
ac__relays_attach(ac_t *self, ac__relay_entry_t **entries_p, size_t n)
{
    if (n == 0)
        return 0;
    self->relays = calloc(n, sizeof *self->relays);
    self->renc = telem_proto_encoder_new();
    self->rdec = telem_proto_decoder_new();
    if (!self->relays || !self->renc || !self->rdec)
        return TELEM_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        ac__relay_entry_t *e = &(*entries_p)[i];
        ac__relay_t *r = &self->relays[self->nrelays];
        if (s_bind_group(self, r, e, (long) self->nrelays) != 0)
            return TELEM_ENOMEM;
        if (r->ngroup == 0) {   /* none of its nodes is ours */
            free(r->group);
            memset(r, 0, sizeof *r);
            continue;
        }
        r->name = e->name;
        r->endpoint = e->endpoint;
        e->name = e->endpoint = NULL;
        self->nrelays++;
        int rc = s_sock_open(self, r);
        if (rc)
            return rc;
    }
    return 0;
}

void
ac__relays_close(ac_t *self)
{
    for (size_t i = 0; self->relays && i < self->nrelays; i++) {
        ac__relay_t *r = &self->relays[i];
        s_sock_close(r);
        free(r->name);
        free(r->endpoint);
        free(r->group);
        free(r->req);
    }
    free(self->relays);
    self->relays = NULL;
    self->nrelays = 0;
    telem_proto_encoder_destroy(&self->renc);
    telem_proto_decoder_destroy(&self->rdec);
}

int
ac_set_relay_backoff(ac_t *self, int ms)
{
    if (!self || ms < 0)
        return TELEM_EINVAL;
    self->relay_backoff_ns = (int64_t) ms * TELEM_NS_PER_MS;
    return 0;
}

size_t
ac_relay_count(const ac_t *self)
{
    return self ? self->nrelays : 0;
}

const char *
ac_relay_name(const ac_t *self, size_t i)
{
    return self && i < self->nrelays ? self->relays[i].name : NULL;
}

const char *
ac_relay_endpoint(const ac_t *self, size_t i)
{
    return self && i < self->nrelays ? self->relays[i].endpoint : NULL;
}

/* ---- a call ------------------------------------------------------------ */

/* Builds relay r's request for the selected nodes of its group (marked
 * AC__VIA); 0, or an error that leaves them to the direct path. */
static int
s_request(ac_t *self, const ac__call_t *c, ac__relay_t *r, const char **names,
          size_t nnames)
{
    int share = c->timeout_ms * 5 / 8;
    const telem_relay_req_t req = {
        .id = c->id, .nodes = names, .nnodes = (uint32_t) nnames,
        .deadline_ms = (uint32_t) (share > 0 ? share : 1),
        .report_ms = (uint32_t) (c->report_ms > 0 ? c->report_ms
                                                  : c->timeout_ms),
        .max_reply = c->report_max ? c->report_max : self->max_reply,
        .inner = c->frame, .inner_size = c->size,
    };
    const void *data;
    size_t size;
    int rc = telem_proto_encode_relay(self->renc, &req, &data, &size);
    if (rc)
        return rc;
    void *copy = realloc(r->req, size);
    if (!copy)
        return TELEM_ENOMEM;
    memcpy(copy, data, size);
    r->req = copy;
    r->req_size = size;
    return 0;
}

void
ac__relay_begin(ac_t *self, const ac__call_t *c, int64_t now)
{
    if (self->nrelays == 0 || c->size > TELEM_RELAY_INNER_MAX)
        return;
    const char **names = malloc(self->n * sizeof *names);
    if (!names)
        return;   /* everything goes direct */
    int64_t due = now + (int64_t) c->timeout_ms * 3 / 4 * TELEM_NS_PER_MS;
    for (size_t ri = 0; ri < self->nrelays; ri++) {
        ac__relay_t *r = &self->relays[ri];
        r->state = AC__IDLE;
        if (now < r->skip_until_ns || !r->sock)
            continue;
        size_t k = 0;
        for (size_t j = 0; j < r->ngroup; j++)
            if (self->nodes[r->group[j]].state == AC__WANT_SEND)
                names[k++] = self->nodes[r->group[j]].name;
        if (k == 0 || s_request(self, c, r, names, k) != 0)
            continue;
        for (size_t j = 0; j < r->ngroup; j++)
            if (self->nodes[r->group[j]].state == AC__WANT_SEND)
                self->nodes[r->group[j]].state = AC__VIA;
        r->state = AC__WANT_SEND;
        r->until_ns = due;
    }
    free(names);
}

size_t
ac__relay_poll_set(ac_t *self, size_t k)
{
    for (size_t ri = 0; ri < self->nrelays; ri++) {
        ac__relay_t *r = &self->relays[ri];
        if (r->state == AC__WANT_SEND
            && zmq_send(r->sock, r->req, r->req_size, ZMQ_DONTWAIT) >= 0)
            r->state = AC__SENT;
        if (r->state != AC__WANT_SEND && r->state != AC__SENT)
            continue;
        self->items[k] = (zmq_pollitem_t) {
            .socket = r->sock,
            .events = r->state == AC__SENT ? ZMQ_POLLIN : ZMQ_POLLOUT,
        };
        self->item_node[k++] = self->n + ri;
    }
    return k;
}

int64_t
ac__relay_due(const ac_t *self)
{
    int64_t due = INT64_MAX;
    for (size_t ri = 0; ri < self->nrelays; ri++) {
        const ac__relay_t *r = &self->relays[ri];
        if ((r->state == AC__WANT_SEND || r->state == AC__SENT)
            && r->until_ns < due)
            due = r->until_ns;
    }
    return due;
}

/* Node i goes direct now (its relay did not, or could not, answer). */
static void
s_direct(ac_t *self, const ac__call_t *c, ac__tally_t *t, size_t i)
{
    self->nodes[i].state = AC__WANT_SEND;
    if (ac__node_open(self, i) != 0)
        ac__fail(self, c, t, i, TELEM_ECONN, "socket could not be created", 0);
}

/* Relay r is done with this call: its nodes still waiting go direct.
 * `failed`: it let the call down, so it backs off and its socket is
 * replaced (a late answer is never read). */
static void
s_release(ac_t *self, const ac__call_t *c, ac__tally_t *t, ac__relay_t *r,
          int failed)
{
    for (size_t j = 0; j < r->ngroup; j++)
        if (self->nodes[r->group[j]].state == AC__VIA)
            s_direct(self, c, t, r->group[j]);
    r->state = AC__DONE;
    if (!failed)
        return;
    r->skip_until_ns = telem_mono_ns() + self->relay_backoff_ns;
    s_sock_close(r);
    s_sock_open(self, r);
}

/* The node of r's group called `name`, or -1. */
static long
s_member(const ac_t *self, const ac__relay_t *r, const char *name)
{
    for (size_t j = 0; j < r->ngroup; j++)
        if (strcmp(self->nodes[r->group[j]].name, name) == 0)
            return (long) r->group[j];
    return -1;
}

/* One item of a relay_reply part. */
static void
s_item(ac_t *self, const ac__call_t *c, ac__tally_t *t, const ac__relay_t *r,
       const telem_relay_item_t *it)
{
    long i = s_member(self, r, it->node);
    if (i < 0 || self->nodes[i].state != AC__VIA)
        return;   /* not asked of this relay, or already settled */
    if (it->code == 0) {
        self->nodes[i].state = AC__SENT;
        ac__handle(self, c, t, (size_t) i, it->frame, it->size);
        if (self->nodes[i].state == AC__SENT)   /* stale: not this call's */
            self->nodes[i].state = AC__VIA;
    } else if (it->code == TELEM_ENOTFOUND && !it->answered) {
        s_direct(self, c, t, (size_t) i);       /* not in its group */
    } else {
        ac__fail(self, c, t, (size_t) i, it->code, it->message, it->answered);
    }
}

/* One message from relay r: 1 when it was this call's last part or the
 * relay failed, else 0. */
static int
s_part(ac_t *self, const ac__call_t *c, ac__tally_t *t, ac__relay_t *r,
       const void *data, size_t size)
{
    telem_msg_t m;
    if (telem_proto_decode(self->rdec, data, size, &m) != 0) {
        s_release(self, c, t, r, 1);
        return 1;
    }
    if (m.type == TELEM_MSG_ERROR && m.u.error.id == c->id) {
        s_release(self, c, t, r, 1);   /* refused, or overloaded */
        return 1;
    }
    if ((int) m.type != TELEM_MSG_RELAY_REPLY || m.u.relay_reply.id != c->id)
        return 0;   /* stale */
    const telem_relay_rep_t *p = &m.u.relay_reply;
    for (uint32_t k = 0; k < p->nitems; k++)
        s_item(self, c, t, r, &p->items[k]);
    if (p->more)
        return 0;
    s_release(self, c, t, r, 0);
    return 1;
}

void
ac__relay_drain(ac_t *self, const ac__call_t *c, ac__tally_t *t, size_t ri)
{
    ac__relay_t *r = &self->relays[ri];
    zmq_msg_t part;
    zmq_msg_init(&part);
    while (r->state == AC__SENT) {
        if (zmq_msg_recv(&part, r->sock, ZMQ_DONTWAIT) < 0)
            break;
        while (zmq_msg_more(&part))
            if (zmq_msg_recv(&part, r->sock, ZMQ_DONTWAIT) < 0)
                break;
        s_part(self, c, t, r, zmq_msg_data(&part), zmq_msg_size(&part));
    }
    zmq_msg_close(&part);
}

void
ac__relay_expire(ac_t *self, const ac__call_t *c, ac__tally_t *t, int64_t now)
{
    for (size_t ri = 0; ri < self->nrelays; ri++) {
        ac__relay_t *r = &self->relays[ri];
        if ((r->state == AC__WANT_SEND || r->state == AC__SENT)
            && now >= r->until_ns)
            s_release(self, c, t, r, 1);
    }
}

void
ac__relay_settle(ac_t *self)
{
    for (size_t ri = 0; ri < self->nrelays; ri++) {
        ac__relay_t *r = &self->relays[ri];
        if (r->state == AC__SENT || r->state == AC__WANT_SEND) {
            s_sock_close(r);
            s_sock_open(self, r);
        }
        r->state = AC__IDLE;
    }
}
