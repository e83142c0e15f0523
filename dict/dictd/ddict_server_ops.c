/* ddict_server_ops.c - client operations on a shard's primary, and the
 * replication they cause.
 *
 * A request is executed op by op against the store and the log; every
 * change to a shard with replicas becomes a SET or REMOVE op for each
 * replica.  Those are grouped into one replication message per replica
 * node, all under one pending id, and the client's reply (already encoded)
 * waits in that pending slot until every replica has acknowledged: an
 * acknowledged write is on every owner of its shard.  Values sent to the
 * replicas and back to readers are zmq_msg_copy()s of the stored message,
 * which share the bytes instead of copying them.  A streamed GET (arg =
 * a frame size, the only op of its request) gets its value as several
 * frames, each a view of the stored bytes (zmq_msg_init_data() with a
 * shared reference), so a large value reaches the reader in small frames
 * that its ZeroMQ can recycle, still without a copy here.
 *
 * Each write to a replicated shard also records how to undo it (the
 * previous value, shared, and its version).  When replication fails the
 * primary rolls the write back (ds_rollback) and tells the replicas, so a
 * write that was not acknowledged does not stay on the primary alone.
 */
#include "ddict_server_int.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_time.h"

typedef struct {
    int peer;                 /* node index in the map */
    telem_dict_op_t op;
    zmq_msg_t val;
} s_fwd_t;

typedef struct {
    ddict_server_t *self;
    const telem_dict_req_t *req;
    zmq_msg_t *outv;          /* reply value frames, from index 1 */
    size_t nout;
    s_fwd_t *fwd;
    size_t nfwd;
    int failed;               /* a replication message could not be sent */
    ds_undo_t *undo;          /* writes to replicated shards */
    size_t nundo;
    uint8_t *ubuf;            /* their keys */
    size_t uused;
    size_t capv;              /* value slots in outv */
} s_ctx_t;

#define S_CHUNK_MIN 4096u     /* smallest frame of a streamed value */

/* A stored value sent as several frames: each frame is a view of the
 * stored bytes; the last frame released drops this reference. */
typedef struct {
    zmq_msg_t whole;
    atomic_size_t parts;
} s_share_t;

/* Records how to undo a write of key k in shard (before it is applied). */
static void
s_undo_note(s_ctx_t *c, uint32_t shard, const ddict_key_t *k,
            ddict_entry_t *e)
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
    u->old_version = e ? ddict_entry_version(e) : 0;
    u->new_version = 0;
    zmq_msg_init(&u->old);
    if (e)
        zmq_msg_copy(&u->old, ddict_entry_value(e));
}

static void
s_forward(s_ctx_t *c, uint32_t shard, uint8_t op, const telem_dict_op_t *src,
          uint64_t version, zmq_msg_t *val)
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
        zmq_msg_init(&f->val);
        if (val)
            zmq_msg_copy(&f->val, val);
    }
}

static int32_t
s_write(s_ctx_t *c, const telem_dict_op_t *op, uint32_t shard,
        const ddict_key_t *k, zmq_msg_t *val, uint64_t *version)
{
    ddict_server_t *self = c->self;
    ddict_entry_t *e = ddict_store_find(self->store, shard, k);
    uint64_t cur = e ? ddict_entry_version(e) : 0;
    if (op->op == TELEM_DOP_CAS && cur != op->arg) {
        *version = cur;
        return DS_ECONFLICT;
    }
    if (op->op == TELEM_DOP_DEL) {
        if (!e)
            return TELEM_ENOTFOUND;
        s_undo_note(c, shard, k, e);
        ddict_store_del(self->store, shard, k);
        ds_log(self, DDICT_REC_DEL, shard, k, NULL, 0, 0);
        s_forward(c, shard, TELEM_DOP_REMOVE, op, 0, NULL);
        return 0;
    }
    *version = cur + 1;
    s_undo_note(c, shard, k, e);
    ds_log_msg(self, shard, k, val, *version);
    if (e) {
        ddict_store_replace(self->store, e, val, *version);
    } else if (ddict_store_put(self->store, shard, k, val, *version) != 0) {
        if (c->undo)
            zmq_msg_close(&c->undo[--c->nundo].old);
        return TELEM_ENOMEM;
    }
    if (c->undo)
        c->undo[c->nundo - 1].new_version = *version;
    if (ddict_map_replicas(self->map) > 1) {
        if (!e)
            e = ddict_store_find(self->store, shard, k);
        s_forward(c, shard, TELEM_DOP_SET, op, *version,
                  ddict_entry_value(e));
    }
    return 0;
}

typedef struct {
    uint8_t *p;               /* NULL: only count bytes */
    uint64_t bytes;
} s_keybuf_t;

static int
s_key_fn(void *arg, uint32_t shard, ddict_entry_t *e)
{
    (void) shard;
    s_keybuf_t *b = arg;
    ddict_key_t k = ddict_entry_key(e);
    if (b->p) {
        uint8_t *q = b->p + b->bytes;
        for (int i = 0; i < 4; i++)
            q[i] = (uint8_t) (k.klen >> (8 * i));
        memcpy(q + 4, k.key, k.klen);
    }
    b->bytes += 4 + (uint64_t) k.klen;
    return 0;
}

/* Keys of the request's namespace in `shard`, each as a little-endian u32
 * length and the key bytes, in one frame. */
static int32_t
s_keys(s_ctx_t *c, uint64_t shard, zmq_msg_t *out)
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
    if (zmq_msg_init_size(out, b.bytes) != 0)
        return TELEM_ENOMEM;
    b.p = zmq_msg_data(out);
    b.bytes = 0;
    ddict_store_foreach(self->store, (uint32_t) shard, ns, nslen, s_key_fn,
                        &b);
    return 0;
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
        ddict_key_t k = { (const char *) op->key, (uint8_t) op->klen, "", 0 };
        ds_log(self, DDICT_REC_CKPT, s, &k, src, srclen, 0);
    }
    return 0;
}

/* Called by ZeroMQ (any thread) when a frame of a streamed value is
 * released. */
static void
s_share_free(void *data, void *hint)
{
    (void) data;
    s_share_t *sh = hint;
    if (atomic_fetch_sub(&sh->parts, 1) == 1) {
        zmq_msg_close(&sh->whole);
        free(sh);
    }
}

/* Makes room for n more value frames in the reply. */
static int
s_outv_room(s_ctx_t *c, size_t n)
{
    if (c->nout + n <= c->capv)
        return 0;
    size_t cap = c->nout + n;
    zmq_msg_t *base = realloc(c->outv - 1, (cap + 1) * sizeof *base);
    if (!base)
        return TELEM_ENOMEM;
    c->outv = base + 1;       /* outv[-1] stays the header's slot */
    c->capv = cap;
    return 0;
}

/* Appends value v to the reply: one shared frame, or (chunk > 0) views
 * of at most `chunk` bytes each. */
static int32_t
s_value_out(s_ctx_t *c, zmq_msg_t *v, uint64_t chunk)
{
    size_t size = zmq_msg_size(v);
    if (chunk && chunk < S_CHUNK_MIN)
        chunk = S_CHUNK_MIN;
    size_t n = chunk && size > chunk ? (size + chunk - 1) / chunk : 1;
    s_share_t *sh = n > 1 ? malloc(sizeof *sh) : NULL;
    if ((n > 1 && !sh) || s_outv_room(c, n) != 0) {
        free(sh);
        return TELEM_ENOMEM;
    }
    zmq_msg_t *o = &c->outv[c->nout];
    if (n == 1) {
        zmq_msg_init(o);
        zmq_msg_copy(o, v);
        c->nout++;
        return 0;
    }
    zmq_msg_init(&sh->whole);
    zmq_msg_copy(&sh->whole, v);
    atomic_init(&sh->parts, n);
    uint8_t *p = zmq_msg_data(&sh->whole);
    size_t k = 0;
    for (; k < n; k++) {
        size_t len = k + 1 < n ? chunk : size - k * chunk;
        if (zmq_msg_init_data(&o[k], p + k * chunk, len, s_share_free, sh))
            break;
    }
    if (k < n) {              /* out of memory: undo the frames made */
        for (size_t j = k; j < n; j++)
            s_share_free(NULL, sh);
        ds_close_frames(o, k);
        return TELEM_ENOMEM;
    }
    c->nout += n;
    return 0;
}

/* Executes op i; `val` is its value frame (or NULL). */
static int32_t
s_exec(s_ctx_t *c, const telem_dict_op_t *op, zmq_msg_t *val,
       telem_dict_res_t *res)
{
    ddict_server_t *self = c->self;
    const char *ns = c->req->ns;
    ddict_key_t k = { ns, (uint8_t) strlen(ns), op->key, op->klen };
    if (op->op == TELEM_DOP_EVSET) {
        k.ns = DS_EV_NS;
        k.nslen = DS_EV_NSLEN;
    }
    uint32_t shard = ddict_shard_of(op->key, op->klen);
    int primary = ddict_map_role(self->map, shard, self->self_idx) == 0;
    switch (op->op) {
    case TELEM_DOP_GET: {
        if (!primary)
            return TELEM_ESTATE;
        ddict_entry_t *e = ddict_store_find(self->store, shard, &k);
        if (!e)
            return TELEM_ENOTFOUND;
        int32_t rc = s_value_out(c, ddict_entry_value(e), op->arg);
        if (rc == 0) {
            res->version = ddict_entry_version(e);
            res->val = 1;
        }
        return rc;
    }
    case TELEM_DOP_PUT:
    case TELEM_DOP_CAS:
    case TELEM_DOP_DEL:
    case TELEM_DOP_EVSET: {
        if (!primary)
            return TELEM_ESTATE;
        zmq_msg_t empty;
        zmq_msg_init(&empty);
        int32_t rc = s_write(c, op, shard, &k, val ? val : &empty,
                             &res->version);
        zmq_msg_close(&empty);
        return rc;
    }
    case TELEM_DOP_KEYS: {
        zmq_msg_t *o = &c->outv[c->nout];
        int32_t rc = s_keys(c, op->arg, o);
        if (rc == 0) {
            c->nout++;
            res->val = 1;
        }
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

/* Points *ival at m's bytes if they are few enough to go inside a
 * header; returns 1 if so.  The bytes are read while the header is
 * encoded, so m must stay open until then. */
static int
s_inline_msg(zmq_msg_t *m, const uint8_t **ival, uint32_t *ivlen)
{
    size_t size = zmq_msg_size(m);
    if (size > TELEM_DICT_INLINE_MAX)
        return 0;
    *ival = size ? zmq_msg_data(m) : (const uint8_t *) "";
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
            zmq_msg_t *v = &c->fwd[j].val;
            if (o->val && s_inline_msg(v, &o->ival, &o->ivlen)) {
                o->val = 0;       /* v is closed by the caller */
            } else if (o->val) {
                zmq_msg_init(&frames[nv]);
                zmq_msg_move(&frames[nv++], v);
            }
            c->fwd[j].peer = -1;
        }
        telem_dict_req_t m = { id, self->epoch, c->req->ns, ops,
                               (uint32_t) nops };
        const void *data;
        size_t size;
        if (frames && ops
            && telem_encode_dict_req(self->enc, TELEM_MSG_DICT_REPL, &m,
                                     &data, &size) == 0
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

/* Small result values go inside the reply's header: points each such
 * result at its frame's bytes.  Returns how many went inline. */
static size_t
s_inline_results(s_ctx_t *c, uint32_t nres)
{
    const telem_dict_op_t *op0 = &c->req->ops[0];
    if (c->req->nops == 1 && op0->op == TELEM_DOP_GET && op0->arg)
        return 0;             /* streamed: the frames are the point */
    size_t f = 1, n = 0;      /* otherwise one frame per value */
    for (uint32_t i = 0; i < nres; i++) {
        telem_dict_res_t *res = &c->self->res[i];
        if (res->val && s_inline_msg(&c->outv[f++], &res->ival, &res->ivlen)) {
            res->val = 0;
            n++;
        }
    }
    return n;
}

/* After encoding: closes the frames whose values went inline and moves
 * the others down over the gaps. */
static void
s_drop_inlined(s_ctx_t *c, uint32_t nres)
{
    size_t f = 1, w = 1;
    for (uint32_t i = 0; i < nres; i++) {
        const telem_dict_res_t *res = &c->self->res[i];
        if (res->ival) {
            zmq_msg_close(&c->outv[f++]);
        } else if (res->val) {
            if (w != f) {
                zmq_msg_init(&c->outv[w]);
                zmq_msg_move(&c->outv[w], &c->outv[f]);
            }
            w++;
            f++;
        }
    }
    c->nout = w - 1;
}

static int
s_finish(s_ctx_t *c, zmq_msg_t *route, uint32_t nres, int32_t whole)
{
    ddict_server_t *self = c->self;
    telem_dict_rep_t rep = { c->req->id, self->epoch, whole, self->res,
                             nres };
    const void *data;
    size_t size;
    size_t inlined = s_inline_results(c, nres);
    int rc = telem_encode_dict_rep(self->enc, TELEM_MSG_DICT_REP, &rep,
                                   &data, &size);
    if (rc || zmq_msg_init_size(&c->outv[0], size) != 0) {
        zmq_msg_close(route);
        ds_close_frames(c->outv + 1, c->nout);
        return rc ? rc : TELEM_ENOMEM;
    }
    memcpy(zmq_msg_data(&c->outv[0]), data, size);
    if (inlined)
        s_drop_inlined(c, nres);
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

void
ds_undo_free(ds_pending_t *p)
{
    for (size_t i = 0; i < p->nundo; i++)
        zmq_msg_close(&p->undo[i].old);
    free(p->undo);
    free(p->undo_buf);
    p->undo = NULL;
    p->undo_buf = NULL;
    p->nundo = 0;
}

/* Tells the replicas of u's shard the restored state; nobody waits for
 * their acknowledgement (id 0 is never pending). */
static void
s_rollback_tell(ddict_server_t *self, ds_undo_t *u, const char *ns)
{
    int owners[DDICT_REPLICAS_MAX];
    int r = ddict_map_owners(self->map, u->shard, owners);
    telem_dict_op_t op = { .op = u->had ? TELEM_DOP_SET : TELEM_DOP_REMOVE,
                           .val = (uint8_t) u->had,
                           .shard = (uint16_t) u->shard,
                           .key = u->bytes + u->nslen, .klen = u->klen,
                           .arg = u->old_version };
    telem_dict_req_t m = { 0, self->epoch, ns, &op, 1 };
    for (int i = 1; i < r; i++) {
        const void *data;
        size_t size;
        zmq_msg_t f[2];
        if (telem_encode_dict_req(self->enc, TELEM_MSG_DICT_REPL, &m, &data,
                                  &size) != 0
            || zmq_msg_init_size(&f[0], size) != 0)
            return;
        memcpy(zmq_msg_data(&f[0]), data, size);
        zmq_msg_init(&f[1]);
        if (u->had)
            zmq_msg_copy(&f[1], &u->old);
        else
            zmq_msg_close(&f[1]);
        ds_send_peer(self, ddict_map_node(self->map, owners[i]), f,
                     u->had ? 2 : 1);
    }
}

void
ds_rollback(ddict_server_t *self, ds_pending_t *p)
{
    for (size_t i = p->nundo; i-- > 0;) {
        ds_undo_t *u = &p->undo[i];
        char ns[DDICT_NS_MAX + 1];
        memcpy(ns, u->bytes, u->nslen);
        ns[u->nslen] = '\0';
        ddict_key_t k = { ns, u->nslen, u->bytes + u->nslen, u->klen };
        ddict_entry_t *e = ddict_store_find(self->store, u->shard, &k);
        if ((e ? ddict_entry_version(e) : 0) != u->new_version)
            continue;           /* written again since: leave it */
        if (u->had) {
            zmq_msg_t v;
            zmq_msg_init(&v);
            zmq_msg_copy(&v, &u->old);
            ds_log_msg(self, u->shard, &k, &v, u->old_version);
            ddict_store_put(self->store, u->shard, &k, &v, u->old_version);
            zmq_msg_close(&v);
        } else if (e) {
            ddict_store_del(self->store, u->shard, &k);
            ds_log(self, DDICT_REC_DEL, u->shard, &k, NULL, 0, 0);
        }
        s_rollback_tell(self, u, ns);
    }
    ds_undo_free(p);
}

int
ds_client_request(ddict_server_t *self, zmq_msg_t *route,
                  const telem_dict_req_t *req, zmq_msg_t *vals, size_t nvals)
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
    s_ctx_t c = { self, req, malloc((req->nops + 1) * sizeof (zmq_msg_t)),
                  0, malloc(((size_t) req->nops * (size_t) r + 1)
                            * sizeof (s_fwd_t)), 0, 0, NULL, 0, NULL, 0,
                  req->nops };
    if (r > 1 && s_undo_alloc(&c) != 0) {
        free(c.outv);
        c.outv = NULL;
    }
    if (!c.outv || !c.fwd) {
        free(c.outv);
        free(c.fwd);
        return TELEM_ENOMEM;
    }
    c.outv++;     /* outv[-1] is the header, outv[0..] values */
    size_t v = 0;
    for (uint32_t i = 0; i < req->nops; i++) {
        telem_dict_res_t *res = &self->res[i];
        memset(res, 0, sizeof *res);
        zmq_msg_t *val = req->ops[i].val ? &vals[v++] : NULL;
        res->code = s_exec(&c, &req->ops[i], val, res);
    }
    c.outv--;
    rc = s_finish(&c, route, req->nops, 0);
    for (size_t i = 0; i < c.nfwd; i++)
        zmq_msg_close(&c.fwd[i].val);
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
