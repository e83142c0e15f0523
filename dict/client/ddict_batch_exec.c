/* ddict_batch_exec.c - the request engine every operation goes through
 * (ddict_batch_exec, dc_exec).  Called by ddict_api.c above it; calls ddict_conn.c and ddict_batch.c below it
 * (ddict.c lists the order of the client's files).
 *
 * The engine takes a batch of operations, groups them by the node that
 * must execute them (the primary of the key's shard, or a named node),
 * sends one message per node and chunk, all at once, then polls the
 * sockets until every reply is in or the deadline passes.  Operations
 * answered "stale map / re-forming" (TELEM_ESTATE) are retried after the
 * map is fetched again.  A node that misses the deadline has its socket
 * replaced, so requests queued for a dead server are dropped rather than
 * delivered late.
 *
 * Results of gets keep the received ZeroMQ frame itself: the value is
 * never copied on its way from the socket to the caller.
 *
 * Gets into caller buffers (ddict_batch_get_into) take another path: each
 * is a request of its own, answered with the value in frames of
 * DC_STREAM_FRAME bytes that are copied into the buffer and released one
 * by one.  A window keeps a few of them in flight, so the server's send
 * and this side's receive overlap, and the received memory stays bounded
 * and small-grained: the allocator recycles it instead of handing the
 * kernel fresh pages to fault in and zero for every large value.
 */
#include "ddict_client_int.h"

#include <stdlib.h>
#include <string.h>

#include "telem_grow.h"
#include "telem_time.h"

typedef struct {
    uint64_t id;
    int node;
    size_t first, n;          /* range in the index list */
    int answered;
    int streamed;             /* one get into a caller buffer */
} s_req_t;

typedef struct {
    ddict_t *d;
    ddict_batch_t *b;
    const char *ns;
    s_req_t *reqs;
    size_t nreqs, capreqs;
    size_t *idx;              /* op indexes, grouped per request */
    int *node;                /* each op's node this round */
    telem_dict_op_t *tmp;     /* ops of the request being encoded */
    int retry;
    size_t snext, send;       /* streamed ops idx[snext .. send) to send */
    size_t sflight, sbytes;   /* streamed requests in flight, their caps */
} s_run_t;

static int
s_target(s_run_t *r, size_t i)
{
    ddict_batch_t *b = r->b;
    if (b->target[i] >= 0)
        return b->target[i] < r->d->nnodes ? b->target[i] : -1;
    int owners[DDICT_REPLICAS_MAX];
    uint32_t shard = b->target[i] == -2
                         ? (uint32_t) b->ops[i].arg
                         : ddict_hash_shard(b->ops[i].key, b->ops[i].klen);
    ddict_map_owners(r->d->map, shard, owners);
    return owners[0];
}

/* Sends ops idx[first .. first+n) to node as one request. */
static int
s_send(s_run_t *r, int node, size_t first, size_t n)
{
    ddict_t *d = r->d;
    ddict_batch_t *b = r->b;
    void *s = dc_sock(d, node);
    for (size_t k = 0; k < n; k++) {
        size_t i = r->idx[first + k];
        telem_dict_op_t *o = &r->tmp[k];
        *o = b->ops[i];
        if (o->val && b->vlens[i] <= TELEM_DICT_INLINE_MAX) {
            o->val = 0;           /* small: in the header, not a frame */
            o->ival = b->vals[i];
            o->ivlen = (uint32_t) b->vlens[i];
        }
    }
    telem_dict_req_t m = { ++d->next_id, d->epoch, r->ns, r->tmp,
                           (uint32_t) n };
    const void *data;
    size_t size;
    int rc = telem_proto_encode_dict_req(d->enc, TELEM_MSG_DICT_REQ, &m, &data,
                                         &size);
    if (rc || !s)
        return rc ? rc : TELEM_ECONN;
    size_t nvals = 0;
    for (size_t k = 0; k < n; k++)
        nvals += r->tmp[k].val;
    rc = dc_send_frame(s, data, size, nvals > 0);
    for (size_t k = 0; rc == 0 && k < n; k++) {
        size_t i = r->idx[first + k];
        if (r->tmp[k].val)
            rc = dc_send_frame(s, b->vals[i], b->vlens[i], --nvals > 0);
    }
    if (rc)
        return rc;
    if (r->nreqs == r->capreqs
        && telem_grow((void **) &r->reqs, &r->capreqs, r->nreqs + 1,
                      sizeof *r->reqs, 16))
        return TELEM_ENOMEM;
    s_req_t q = { m.id, node, first, n, 0, b->into[r->idx[first]] };
    r->reqs[r->nreqs++] = q;
    return 0;
}

/* Sends streamed ops while the window has room. */
static int
s_stream_more(s_run_t *r)
{
    ddict_batch_t *b = r->b;
    while (r->snext < r->send
           && (r->sflight == 0 || (r->sflight < DC_STREAM_OPS
                                   && r->sbytes < DC_STREAM_BYTES))) {
        size_t at = r->snext++;
        size_t i = r->idx[at];
        int rc = s_send(r, r->node[i], at, 1);
        if (rc == TELEM_ENOMEM)
            return rc;
        if (rc == 0) {
            r->sflight++;
            r->sbytes += b->dcap[i];
        }
    }
    return 0;
}

/* Groups the undone ops by node and sends them; streamed ops go after
 * them in the index list and are sent through the window. */
static int
s_send_all(s_run_t *r)
{
    ddict_batch_t *b = r->b;
    size_t nidx = 0;
    r->nreqs = 0;
    for (size_t i = 0; i < b->n; i++)     /* hash each key once a round */
        r->node[i] = b->done[i] ? -1 : s_target(r, i);
    for (int node = 0; node < r->d->nnodes; node++) {
        size_t first = nidx;
        for (size_t i = 0; i < b->n; i++)
            if (r->node[i] == node && !b->into[i])
                r->idx[nidx++] = i;
        for (size_t at = first; at < nidx; at += DC_CHUNK_OPS) {
            size_t n = nidx - at < DC_CHUNK_OPS ? nidx - at : DC_CHUNK_OPS;
            int rc = s_send(r, node, at, n);
            if (rc == TELEM_ENOMEM)
                return rc;
        }
    }
    r->snext = nidx;
    for (size_t i = 0; i < b->n; i++)
        if (r->node[i] >= 0 && b->into[i])
            r->idx[nidx++] = i;
    r->send = nidx;
    r->sflight = r->sbytes = 0;
    return s_stream_more(r);
}

/* Receives the rest of a streamed reply into op i's buffer, releasing
 * each frame as soon as it is copied.  Returns the op's code. */
static int32_t
s_take_into(ddict_batch_t *b, size_t i, void *raw, int *more)
{
    zmq_msg_t f;
    zmq_msg_init(&f);
    size_t at = 0;
    int fits = 1;
    while (*more && zmq_msg_recv(&f, raw, 0) >= 0) {
        size_t n = zmq_msg_size(&f);
        fits = fits && n <= b->dcap[i] - at;
        if (fits && n)
            memcpy((uint8_t *) b->dst[i] + at, zmq_msg_data(&f), n);
        at += n;
        *more = zmq_msg_more(&f);
    }
    zmq_msg_close(&f);
    b->dlen[i] = at;
    return fits ? 0 : TELEM_ETOOBIG;
}

/* Keeps a value that came inside the reply's header as op i's result. */
static int32_t
s_take_inline(ddict_batch_t *b, size_t i, const telem_dict_res_t *res)
{
    if (b->into[i]) {
        b->dlen[i] = res->ivlen;
        if (res->ivlen > b->dcap[i])
            return TELEM_ETOOBIG;
        if (res->ivlen)
            memcpy(b->dst[i], res->ival, res->ivlen);
        return 0;
    }
    zmq_msg_close(&b->rvals[i]);
    if (zmq_msg_init_size(&b->rvals[i], res->ivlen) != 0) {
        zmq_msg_init(&b->rvals[i]);
        return TELEM_ENOMEM;
    }
    if (res->ivlen)
        memcpy(zmq_msg_data(&b->rvals[i]), res->ival, res->ivlen);
    return 0;
}

/* Takes one reply message off socket s and applies it. */
static void
s_take(s_run_t *r, void *raw)
{
    zmq_msg_t head;
    zmq_msg_init(&head);
    if (zmq_msg_recv(&head, raw, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&head);
        return;
    }
    int more = zmq_msg_more(&head);
    telem_msg_t m;
    s_req_t *q = NULL;
    if (telem_proto_decode(r->d->dec, zmq_msg_data(&head),
                           zmq_msg_size(&head), &m) == 0
        && (int) m.type == TELEM_MSG_DICT_REP)
        for (size_t k = 0; k < r->nreqs && !q; k++)
            if (r->reqs[k].id == m.u.dict_rep.id && !r->reqs[k].answered)
                q = &r->reqs[k];
    ddict_batch_t *b = r->b;
    const telem_dict_rep_t *rep = q ? &m.u.dict_rep : NULL;
    if (q && !rep->code && rep->nres != q->n)
        q = NULL;
    for (size_t k = 0; q && k < q->n; k++) {
        size_t i = r->idx[q->first + k];
        int32_t code = rep->code ? rep->code : rep->res[k].code;
        if (code == TELEM_ESTATE) {
            r->retry = 1;
            continue;
        }
        b->codes[i] = code;
        b->done[i] = 1;
        if (!rep->code) {
            b->versions[i] = rep->res[k].version;
            if (rep->res[k].ival) {
                int32_t rc = s_take_inline(b, i, &rep->res[k]);
                if (code == 0)
                    b->codes[i] = rc;
            } else if (rep->res[k].val && more && b->into[i]) {
                int32_t rc = s_take_into(b, i, raw, &more);
                if (code == 0)
                    b->codes[i] = rc;
            } else if (rep->res[k].val && more) {
                zmq_msg_recv(&b->rvals[i], raw, 0);
                more = zmq_msg_more(&b->rvals[i]);
            }
        }
    }
    int streamed = q && q->streamed;
    if (q)
        q->answered = 1;
    while (more) {
        zmq_msg_recv(&head, raw, 0);
        more = zmq_msg_more(&head);
    }
    zmq_msg_close(&head);
    if (streamed) {
        r->sflight--;
        r->sbytes -= b->dcap[r->idx[q->first]];
        s_stream_more(r);     /* may move r->reqs: q is not used after */
    }
}

/* Polls until every request of this round is answered or the deadline.
 * The node sockets are listed again before each wait: a streamed get
 * sent from s_take may have connected one more. */
static int
s_wait(s_run_t *r, int64_t deadline)
{
    int n = r->d->nnodes;
    void **socks = malloc(((size_t) n + 1) * sizeof *socks);
    zmq_pollitem_t *items = malloc(((size_t) n + 1) * sizeof *items);
    int rc = socks && items ? 0 : TELEM_ENOMEM;
    while (rc == 0) {
        size_t open = 0;
        for (size_t k = 0; k < r->nreqs; k++)
            open += !r->reqs[k].answered;
        if (!open)
            break;
        for (int i = 0; i < n; i++)
            socks[i] = r->d->nodes[i].sock;
        int i = dc_poll(socks, n, items, deadline);
        if (i < 0) {
            rc = TELEM_ETIMEDOUT;
            break;
        }
        while (dc_has_input(socks[i]))
            s_take(r, socks[i]);
    }
    free(socks);
    free(items);
    return rc;
}

/* Replaces the sockets of nodes that did not answer, dropping what is
 * still queued for them. */
static void
s_reset_silent(s_run_t *r)
{
    for (size_t k = 0; k < r->nreqs; k++)
        if (!r->reqs[k].answered)
            dc_close(&r->d->nodes[r->reqs[k].node].sock);
}

int
dc_exec(ddict_t *self, ddict_batch_t *b, const char *ns)
{
    int64_t deadline = telem_mono_ns() + self->timeout_ms * TELEM_NS_PER_MS;
    s_run_t r = { self, b, ns ? ns : self->ns, NULL, 0, 0,
                  malloc((b->n + 1) * sizeof (size_t)),
                  malloc((b->n + 1) * sizeof (int)),
                  malloc((b->n < DC_CHUNK_OPS ? b->n + 1 : DC_CHUNK_OPS)
                         * sizeof (telem_dict_op_t)), 0, 0, 0, 0, 0 };
    int rc = r.idx && r.node && r.tmp ? 0 : TELEM_ENOMEM;
    for (size_t i = 0; i < b->n; i++) {
        b->done[i] = 0;
        b->codes[i] = TELEM_ETIMEDOUT;
        b->versions[i] = 0;
        b->dlen[i] = 0;
        zmq_msg_close(&b->rvals[i]);
        zmq_msg_init(&b->rvals[i]);
    }
    while (rc == 0) {
        r.retry = 0;
        if ((rc = s_send_all(&r)) != 0)
            break;
        rc = s_wait(&r, deadline);
        if (rc) {
            s_reset_silent(&r);
            break;
        }
        if (!r.retry)
            break;
        /* Stale map or re-forming: learn the map again (from a server
           that serves) and retry. */
        rc = dc_refresh(self, deadline);
        if (rc == 0 && telem_mono_ns() >= deadline)
            rc = TELEM_ETIMEDOUT;
    }
    free(r.idx);
    free(r.node);
    free(r.tmp);
    free(r.reqs);
    return rc;
}

int
ddict_batch_exec(ddict_t *self, ddict_batch_t *b)
{
    return dc_exec(self, b, NULL);
}
