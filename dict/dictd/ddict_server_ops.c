/* ddict_server_ops.c - client operations on a shard's primary, and the
 * replication they cause.
 *
 * A request is executed op by op against the store and the log; every
 * change to a shard with replicas becomes a SET or REMOVE op for each
 * replica.  Those are grouped into one replication message per replica
 * node, all under one pending id, and the client's reply (already encoded)
 * waits in that pending slot until every replica has acknowledged: an
 * acknowledged write is on every owner of its shard.  Values sent to the
 * replicas and back to readers are references to the stored value
 * (ddict_val.h), which share the bytes instead of copying them: a reply's
 * values are held by result until the reply is encoded, small ones going
 * inside its header, the others out as frames that share the bytes.  A
 * streamed GET (arg = a frame size, the only op of its request) gets its
 * value as several frames, each a view of the stored bytes holding a
 * reference, so a large value reaches the reader in small frames that its
 * ZeroMQ can recycle, still without a copy here.
 *
 * Each write to a replicated shard also records how to undo it (the
 * previous value, shared, and its version).  When replication fails the
 * primary rolls the write back (ds_rollback, ddict_server_pending.c) and
 * tells the replicas, so a write that was not acknowledged does not stay
 * on the primary alone.
 *
 * Called by ddict_server.c; calls ddict_server_pending.c and
 * ddict_server_base.c below it (ddict_server.c lists the order).
 */
#include "ddict_server_int.h"

#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_time.h"

typedef struct {
    int peer;                 /* node index in the map */
    telem_dict_op_t op;
    ddict_val_t *val;         /* a reference, or NULL */
} s_fwd_t;

typedef struct {
    ddict_server_t *self;
    const telem_dict_req_t *req;
    zmq_msg_t *outv;          /* the reply: header, then value frames */
    size_t nout;              /* value frames in outv */
    s_fwd_t *fwd;
    size_t nfwd;
    int failed;               /* a replication message could not be sent */
    ds_undo_t *undo;          /* writes to replicated shards */
    size_t nundo;
    uint8_t *ubuf;            /* their keys */
    size_t uused;
} s_ctx_t;

#define S_CHUNK_MIN 4096u     /* smallest frame of a streamed value */

/* Records how to undo a write of key k in shard (before it is applied). */
static void
s_undo_note(s_ctx_t *c, uint32_t shard, const ddict_store_key_t *k,
            ddict_store_entry_t *e)
{
    if (!c->undo)
        return;
    ds_undo_t *u = &c->undo[c->nundo++];
    uint8_t *b = c->ubuf + c->uused;
    memcpy(b, k->ns, k->nslen);
    memcpy(b + k->nslen, k->key, k->klen);
    c->uused += (size_t) k->nslen + k->klen;
    u->shard = shard;
    u->nslen = k->nslen;
    u->klen = k->klen;
    u->bytes = b;
    u->had = e != NULL;
    u->old_version = e ? ddict_store_entry_version(e) : 0;
    u->new_version = 0;
    u->old = e ? ddict_val_hold(ddict_store_entry_value(e)) : NULL;
}

static void
s_forward(s_ctx_t *c, uint32_t shard, uint8_t op, const telem_dict_op_t *src,
          uint64_t version, ddict_val_t *val)
{
    int owners[DDICT_REPLICAS_MAX];
    int r = ddict_map_owners(c->self->map, shard, owners);
    for (int i = 1; i < r; i++) {
        s_fwd_t *f = &c->fwd[c->nfwd++];
        f->peer = owners[i];
        f->op = *src;
        f->op.op = op;
        f->op.shard = (uint16_t) shard;
        f->op.arg = version;
        f->op.val = val != NULL;
        f->val = val ? ddict_val_hold(val) : NULL;
    }
}

static int32_t
s_write(s_ctx_t *c, const telem_dict_op_t *op, uint32_t shard,
        const ddict_store_key_t *k, ddict_val_t *val, uint64_t *version)
{
    ddict_server_t *self = c->self;
    ddict_store_entry_t *e = ddict_store_find(self->store, shard, k);
    uint64_t cur = e ? ddict_store_entry_version(e) : 0;
    if (op->op == TELEM_DOP_CAS && cur != op->arg) {
        *version = cur;
        return TELEM_ECONFLICT;
    }
    if (op->op == TELEM_DOP_DEL) {
        if (!e)
            return TELEM_ENOTFOUND;
        s_undo_note(c, shard, k, e);
        ddict_store_del(self->store, shard, k);
        ds_log(self, DDICT_LOG_REC_DEL, shard, k, NULL, 0, 0);
        s_forward(c, shard, TELEM_DOP_REMOVE, op, 0, NULL);
        return 0;
    }
    *version = cur + 1;
    s_undo_note(c, shard, k, e);
    ds_log_val(self, shard, k, val, *version);
    if (e) {
        ddict_store_replace(self->store, e, val, *version);
    } else if (ddict_store_put(self->store, shard, k, val, *version) != 0) {
        if (c->undo)
            ddict_val_release(&c->undo[--c->nundo].old);
        return TELEM_ENOMEM;
    }
    if (c->undo)
        c->undo[c->nundo - 1].new_version = *version;
    if (ddict_map_replicas(self->map) > 1) {
        if (!e)
            e = ddict_store_find(self->store, shard, k);
        s_forward(c, shard, TELEM_DOP_SET, op, *version,
                  ddict_store_entry_value(e));
    }
    return 0;
}

typedef struct {
    uint8_t *p;               /* NULL: only count bytes */
    uint64_t bytes;
} s_keybuf_t;

static int
s_key_fn(void *arg, uint32_t shard, ddict_store_entry_t *e)
{
    (void) shard;
    s_keybuf_t *b = arg;
    ddict_store_key_t k = ddict_store_entry_key(e);
    if (b->p) {
        uint8_t *q = b->p + b->bytes;
        for (int i = 0; i < 4; i++)
            q[i] = (uint8_t) (k.klen >> (8 * i));
        memcpy(q + 4, k.key, k.klen);
    }
    b->bytes += 4 + (uint64_t) k.klen;
    return 0;
}

static void
s_free_fn(void *data, void *hint)
{
    (void) hint;
    free(data);
}

/* Keys of the request's namespace in `shard`, each as a little-endian u32
 * length and the key bytes, in one value. */
static int32_t
s_keys(s_ctx_t *c, uint64_t shard, ddict_val_t **out)
{
    ddict_server_t *self = c->self;
    if (shard >= DDICT_SHARDS
        || ddict_map_role(self->map, (uint32_t) shard, self->self_idx) != 0)
        return TELEM_ESTATE;
    const char *ns = c->req->ns;
    int nslen = (int) strlen(ns);
    s_keybuf_t b = { NULL, 0 };
    ddict_store_foreach(self->store, (uint32_t) shard, ns, nslen, s_key_fn,
                        &b);
    size_t size = b.bytes;
    if (!(b.p = malloc(size + 1)))
        return TELEM_ENOMEM;
    b.bytes = 0;
    ddict_store_foreach(self->store, (uint32_t) shard, ns, nslen, s_key_fn,
                        &b);
    if ((*out = ddict_val_wrap(b.p, size, s_free_fn, NULL)) != NULL)
        return 0;
    free(b.p);
    return TELEM_ENOMEM;
}

static uint64_t
s_len(s_ctx_t *c)
{
    ddict_server_t *self = c->self;
    const char *ns = c->req->ns;
    uint64_t n = 0;
    for (uint32_t s = 0; s < DDICT_SHARDS; s++)
        if (ddict_map_role(self->map, s, self->self_idx) == 0)
            n += ddict_store_count(self->store, s, ns, (uint8_t) strlen(ns));
    return n;
}

/* Copies the request's namespace into the namespace named by the key, on
 * every shard this server holds. */
static int32_t
s_checkpoint(s_ctx_t *c, const telem_dict_op_t *op)
{
    ddict_server_t *self = c->self;
    const char *src = c->req->ns;
    size_t srclen = strlen(src);
    if (op->klen > DDICT_NS_MAX
        || memchr(op->key, 0, op->klen))
        return TELEM_EINVAL;
    for (uint32_t s = 0; s < DDICT_SHARDS; s++) {
        if (ddict_store_size(self->store, s) == 0)
            continue;
        int rc = ddict_store_copy_ns(self->store, s, src, (uint8_t) srclen,
                                     (const char *) op->key,
                                     (uint8_t) op->klen);
        if (rc)
            return rc;
        ddict_store_key_t k = { (const char *) op->key, (uint8_t) op->klen,
                                "", 0 };
        ds_log(self, DDICT_LOG_REC_CKPT, s, &k, src, srclen, 0);
    }
    return 0;
}

/* Executes op i; `val` is its value (or NULL); a value the result
 * carries goes to *out (a reference). */
static int32_t
s_exec(s_ctx_t *c, const telem_dict_op_t *op, ddict_val_t *val,
       telem_dict_res_t *res, ddict_val_t **out)
{
    ddict_server_t *self = c->self;
    const char *ns = c->req->ns;
    ddict_store_key_t k = { ns, (uint8_t) strlen(ns), op->key, op->klen };
    if (op->op == TELEM_DOP_EVSET) {
        k.ns = DS_EV_NS;
        k.nslen = DS_EV_NSLEN;
    }
    uint32_t shard = ddict_hash_shard(op->key, op->klen);
    int primary = ddict_map_role(self->map, shard, self->self_idx) == 0;
    switch (op->op) {
    case TELEM_DOP_GET: {
        if (!primary)
            return TELEM_ESTATE;
        ddict_store_entry_t *e = ddict_store_find(self->store, shard, &k);
        if (!e)
            return TELEM_ENOTFOUND;
        *out = ddict_val_hold(ddict_store_entry_value(e));
        res->version = ddict_store_entry_version(e);
        res->val = 1;
        return 0;
    }
    case TELEM_DOP_PUT:
    case TELEM_DOP_CAS:
    case TELEM_DOP_DEL:
    case TELEM_DOP_EVSET: {
        if (!primary)
            return TELEM_ESTATE;
        ddict_val_t *empty = val ? NULL : ddict_val_new(NULL, 0);
        if (!val && !empty)
            return TELEM_ENOMEM;
        int32_t rc = s_write(c, op, shard, &k, val ? val : empty,
                             &res->version);
        ddict_val_release(&empty);
        return rc;
    }
    case TELEM_DOP_KEYS: {
        int32_t rc = s_keys(c, op->arg, out);
        if (rc == 0)
            res->val = 1;
        return rc;
    }
    case TELEM_DOP_LEN:
        res->version = s_len(c);
        return 0;
    case TELEM_DOP_CKPT:
        return s_checkpoint(c, op);
    }
    return TELEM_EINVAL;
}

/* Points *ival at v's bytes if they are few enough to go inside a
 * header; returns 1 if so.  The bytes are read while the header is
 * encoded, so v must be held until then. */
static int
s_inline_val(ddict_val_t *v, const uint8_t **ival, uint32_t *ivlen)
{
    size_t size = ddict_val_size(v);
    if (size > TELEM_DICT_INLINE_MAX)
        return 0;
    *ival = ddict_val_data(v);
    *ivlen = (uint32_t) size;
    return 1;
}

/* Sends one replication message per replica node; returns how many. */
static int
s_replicate(s_ctx_t *c, uint64_t id)
{
    ddict_server_t *self = c->self;
    int sent = 0;
    for (size_t i = 0; i < c->nfwd; i++) {
        int peer = c->fwd[i].peer;
        if (peer < 0)
            continue;
        size_t nops = 0, nv = 1;
        int bad = 0;
        for (size_t j = i; j < c->nfwd; j++)
            if (c->fwd[j].peer == peer)
                nops++;
        zmq_msg_t *frames = malloc((nops + 1) * sizeof *frames);
        telem_dict_op_t *ops = malloc(nops * sizeof *ops);
        size_t k = 0;
        for (size_t j = i; frames && ops && j < c->nfwd; j++) {
            if (c->fwd[j].peer != peer)
                continue;
            telem_dict_op_t *o = &ops[k++];
            *o = c->fwd[j].op;
            ddict_val_t *v = c->fwd[j].val;
            if (o->val && s_inline_val(v, &o->ival, &o->ivlen)) {
                o->val = 0;       /* v is released by the caller */
            } else if (o->val && ds_msg_from_val(&frames[nv], v, 0,
                                                 ddict_val_size(v)) == 0) {
                nv++;
            } else if (o->val) {
                bad = 1;
            }
            c->fwd[j].peer = -1;
        }
        telem_dict_req_t m = { id, self->epoch, c->req->ns, ops,
                               (uint32_t) nops };
        const void *data;
        size_t size;
        if (frames && ops && !bad
            && telem_proto_encode_dict_req(self->enc, TELEM_MSG_DICT_REPL, &m,
                                           &data, &size)
                == 0
            && zmq_msg_init_size(&frames[0], size) == 0) {
            memcpy(zmq_msg_data(&frames[0]), data, size);
            if (ds_send_peer(self, ddict_map_node(self->map, peer), frames,
                             nv) == 0)
                sent++;
            else
                c->failed = 1;
        } else {
            c->failed = 1;
            if (frames)
                ds_close_frames(frames + 1, nv - 1);
        }
        free(frames);
        free(ops);
    }
    return sent;
}

/* Frames a result value needs: one, or for a streamed GET (arg = frame
 * size) one per `chunk` bytes. */
static size_t
s_nframes(size_t size, uint64_t chunk)
{
    return chunk && size > chunk ? (size + chunk - 1) / chunk : 1;
}

/* Puts the values of the results in the reply: small ones inside the
 * header (their bytes are held in rvals until it is encoded), the others
 * as frames sharing the stored bytes, after outv[0].  A value that cannot
 * be framed fails its result with TELEM_ENOMEM. */
static int
s_values_out(s_ctx_t *c, uint32_t nres)
{
    ddict_server_t *self = c->self;
    const telem_dict_op_t *op0 = &c->req->ops[0];
    uint64_t chunk = c->req->nops == 1 && op0->op == TELEM_DOP_GET
                     ? op0->arg : 0;    /* streamed: the frames are the point */
    if (chunk && chunk < S_CHUNK_MIN)
        chunk = S_CHUNK_MIN;
    size_t frames = 1;
    for (uint32_t i = 0; i < nres; i++) {
        telem_dict_res_t *res = &self->res[i];
        ddict_val_t *v = self->rvals[i];
        if (!res->val)
            continue;
        if (!chunk && s_inline_val(v, &res->ival, &res->ivlen))
            res->val = 0;
        else
            frames += s_nframes(ddict_val_size(v), chunk);
    }
    if (!(c->outv = malloc(frames * sizeof *c->outv)))
        return TELEM_ENOMEM;
    for (uint32_t i = 0; i < nres; i++) {
        telem_dict_res_t *res = &self->res[i];
        ddict_val_t *v = self->rvals[i];
        if (!res->val)
            continue;
        size_t size = ddict_val_size(v), n = s_nframes(size, chunk), k = 0;
        zmq_msg_t *o = &c->outv[1 + c->nout];
        for (; k < n; k++)
            if (ds_msg_from_val(&o[k], v, k * chunk, k + 1 < n
                                ? chunk : size - k * chunk) != 0)
                break;
        if (k < n) {
            ds_close_frames(o, k);
            res->val = 0;
            res->code = TELEM_ENOMEM;
            continue;
        }
        c->nout += n;
    }
    return 0;
}

static int
s_finish(s_ctx_t *c, zmq_msg_t *route, uint32_t nres, int32_t whole)
{
    ddict_server_t *self = c->self;
    telem_dict_rep_t rep = { c->req->id, self->epoch, whole, self->res,
                             nres };
    const void *data;
    size_t size;
    int rc = s_values_out(c, nres);
    if (rc == 0)
        rc = telem_proto_encode_dict_rep(self->enc, TELEM_MSG_DICT_REP, &rep,
                                         &data, &size);
    ds_release_vals(self->rvals, nres);  /* inline bytes are encoded now */
    if (rc || zmq_msg_init_size(&c->outv[0], size) != 0) {
        zmq_msg_close(route);
        if (c->outv)
            ds_close_frames(c->outv + 1, c->nout);
        return rc ? rc : TELEM_ENOMEM;
    }
    memcpy(zmq_msg_data(&c->outv[0]), data, size);
    if (c->nfwd == 0)
        return ds_hold(self, route, c->outv, c->nout + 1);
    ds_pending_t *p = ds_pending_new(self);
    if (!p) {
        zmq_msg_close(route);
        ds_close_frames(c->outv, c->nout + 1);
        return TELEM_ENOMEM;
    }
    p->reply_id = c->req->id;
    zmq_msg_init(&p->reply.route);
    zmq_msg_move(&p->reply.route, route);
    p->reply.frames = c->outv;
    p->reply.n = c->nout + 1;
    c->outv = NULL;
    p->undo = c->undo;
    p->nundo = c->nundo;
    p->undo_buf = c->ubuf;
    c->undo = NULL;
    c->nundo = 0;
    c->ubuf = NULL;
    if (c->req->nops == 1 && c->req->ops[0].op == TELEM_DOP_EVSET)
        p->is_event = 1;
    p->waiting = s_replicate(c, p->id);
    if (c->failed)
        p->code = TELEM_ECONN;
    if (p->is_event && (p->ev_key = malloc(c->req->ops[0].klen + 1))) {
        memcpy(p->ev_key, c->req->ops[0].key, c->req->ops[0].klen);
        p->ev_klen = c->req->ops[0].klen;
    }
    if (p->waiting == 0)
        ds_pending_done(self, p);
    return 0;
}

static int
s_valid(ddict_server_t *self, const telem_dict_req_t *req, size_t nvals)
{
    size_t want = 0;
    for (uint32_t i = 0; i < req->nops; i++) {
        uint8_t op = req->ops[i].op;
        want += req->ops[i].val;
        if (op > TELEM_DOP_CKPT)
            return TELEM_EPROTO;
        if ((op == TELEM_DOP_EVWAIT || op == TELEM_DOP_EVSET)
            && req->nops != 1)
            return TELEM_EPROTO;
        if (req->ops[i].val && op != TELEM_DOP_PUT && op != TELEM_DOP_CAS)
            return TELEM_EPROTO;
        /* A streamed GET's frames are all the reply's: it stands alone. */
        if (op == TELEM_DOP_GET && req->ops[i].arg && req->nops != 1)
            return TELEM_EPROTO;
    }
    (void) self;
    return want == nvals && strlen(req->ns) <= DDICT_NS_MAX ? 0
                                                            : TELEM_EPROTO;
}

/* One undo slot per op and one buffer for their keys. */
static int
s_undo_alloc(s_ctx_t *c)
{
    size_t bytes = 1;
    for (uint32_t i = 0; i < c->req->nops; i++)
        bytes += DS_EV_NSLEN + strlen(c->req->ns) + c->req->ops[i].klen;
    c->undo = malloc(c->req->nops * sizeof *c->undo + 1);
    c->ubuf = malloc(bytes);
    if (c->undo && c->ubuf)
        return 0;
    free(c->undo);
    free(c->ubuf);
    c->undo = NULL;
    c->ubuf = NULL;
    return TELEM_ENOMEM;
}

int
ds_client_request(ddict_server_t *self, zmq_msg_t *route,
                  const telem_dict_req_t *req, ddict_val_t **vals,
                  size_t nvals)
{
    int rc = s_valid(self, req, nvals);
    if (rc)
        return rc;
    if ((req->epoch && req->epoch != self->epoch) || self->reforming
        || self->self_idx < 0)
        return ds_reply_code(self, route, TELEM_MSG_DICT_REP, req->id,
                             TELEM_ESTATE);
    if (req->nops == 1 && req->ops[0].op == TELEM_DOP_EVWAIT)
        return ds_event_wait(self, route, req->id, &req->ops[0]);
    int r = ddict_map_replicas(self->map);
    if ((rc = ds_reserve(self, req->nops)) != 0)
        return rc;
    s_ctx_t c = { self, req, NULL, 0,
                  malloc(((size_t) req->nops * (size_t) r + 1)
                         * sizeof (s_fwd_t)), 0, 0, NULL, 0, NULL, 0 };
    if (!c.fwd || (r > 1 && s_undo_alloc(&c) != 0)) {
        free(c.fwd);
        return TELEM_ENOMEM;
    }
    size_t v = 0;
    for (uint32_t i = 0; i < req->nops; i++) {
        telem_dict_res_t *res = &self->res[i];
        memset(res, 0, sizeof *res);
        self->rvals[i] = NULL;
        ddict_val_t *val = req->ops[i].val ? vals[v++] : NULL;
        res->code = s_exec(&c, &req->ops[i], val, res, &self->rvals[i]);
    }
    rc = s_finish(&c, route, req->nops, 0);
    for (size_t i = 0; i < c.nfwd; i++)
        ddict_val_release(&c.fwd[i].val);
    free(c.fwd);
    free(c.outv);
    ds_pending_t rest = { .undo = c.undo, .nundo = c.nundo,
                          .undo_buf = c.ubuf };
    ds_undo_free(&rest);      /* nothing to wait for: nothing to undo */
    if (req->nops == 1 && req->ops[0].op == TELEM_DOP_EVSET && c.nfwd == 0
        && self->res[0].code == 0)
        ds_event_wake(self, req->ops[0].key, req->ops[0].klen);
    return rc;
}
