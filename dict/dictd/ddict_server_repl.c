/* ddict_server_repl.c - the server side of replication, events and
 * re-forming.
 *
 * Pending acknowledgements live in a ring indexed by their id (ids are
 * handed out in order, so the ring holds [oldest_id, next_id) and grows by
 * doubling when full); an acknowledgement finds its slot in O(1).
 *
 * Re-forming runs in three admin phases driven by a coordinator (the
 * client's ddict_reform()): PREPARE installs the new map and epoch and
 * stops serving clients (a server whose epoch is below prev_epoch, the
 * last committed epoch, missed that map and wipes its data, which may be
 * stale; a PREPARE not above the server's epoch is refused, so a retry
 * after a failed re-form takes a higher epoch);
 * TRANSFER sends every entry of every shard this server holds to each of
 * the shard's new owners as MERGE operations (kept only where newer than
 * what the owner has) and answers when all of them were acknowledged;
 * COMMIT drops the shards this server no longer owns and serves again.
 * MERGE keys carry their namespace in front: [u8 nslen][ns][key].
 */
#include "ddict_server_int.h"

#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_time.h"

#define S_WAIT_MAX_MS (24 * 3600 * 1000ull)

/* ---------------------------------------------------------------- pending */

static int
s_pending_grow(ddict_server_t *self)
{
    size_t cap = self->cappend ? self->cappend * 2 : 256;
    ds_pending_t *p = calloc(cap, sizeof *p);
    if (!p)
        return TELEM_ENOMEM;
    for (uint64_t id = self->oldest_id; id < self->next_id; id++) {
        ds_pending_t *o = &self->pend[id % self->cappend];
        if (o->id == id)
            p[id % cap] = *o;
    }
    free(self->pend);
    self->pend = p;
    self->cappend = cap;
    return 0;
}

ds_pending_t *
ds_pending_new(ddict_server_t *self)
{
    if (self->next_id - self->oldest_id >= self->cappend
        && s_pending_grow(self) != 0)
        return NULL;
    ds_pending_t *p = &self->pend[self->next_id % self->cappend];
    memset(p, 0, sizeof *p);
    p->id = self->next_id++;
    p->deadline = telem_mono_ns() + DS_PENDING_TTL_NS;
    return p;
}

static int
s_admin_reply(ddict_server_t *self, zmq_msg_t *route, uint64_t id,
              int32_t code);

void
ds_pending_done(ddict_server_t *self, ds_pending_t *p)
{
    if (p->transfer) {
        if (p->code && !self->xfer_code)
            self->xfer_code = p->code;
        if (--self->xfer_left == 0 && self->xfer_active) {
            self->xfer_active = 0;
            s_admin_reply(self, &self->xfer_route, self->xfer_id,
                          self->xfer_code);
        }
    } else if (p->code == 0) {
        ds_undo_free(p);
        ds_hold(self, &p->reply.route, p->reply.frames, p->reply.n);
        free(p->reply.frames);
        if (p->is_event && p->ev_key)
            ds_event_wake(self, p->ev_key, p->ev_klen);
    } else {
        ds_rollback(self, p);
        ds_close_frames(p->reply.frames, p->reply.n);
        free(p->reply.frames);
        ds_reply_code(self, &p->reply.route, TELEM_MSG_DICT_REP, p->reply_id,
                      p->code);
    }
    free(p->ev_key);
    p->ev_key = NULL;
    p->id = 0;
    while (self->oldest_id < self->next_id
           && self->pend[self->oldest_id % self->cappend].id
                  != self->oldest_id)
        self->oldest_id++;
}

void
ds_pending_fail_all(ddict_server_t *self, int32_t code)
{
    for (uint64_t id = self->oldest_id; id < self->next_id; id++) {
        ds_pending_t *p = &self->pend[id % self->cappend];
        if (p->id != id)
            continue;
        p->code = code;
        p->waiting = 0;
        ds_pending_done(self, p);
    }
}

int
ds_ack(ddict_server_t *self, const telem_dict_rep_t *rep)
{
    if (!self->cappend)
        return 0;
    ds_pending_t *p = &self->pend[rep->id % self->cappend];
    if (p->id != rep->id || rep->id == 0)
        return 0;   /* late: the wait was given up already */
    if (rep->code && !p->code)
        p->code = rep->code;
    for (uint32_t i = 0; i < rep->nres && !p->code; i++)
        if (rep->res[i].code)
            p->code = rep->res[i].code;
    if (--p->waiting <= 0)
        ds_pending_done(self, p);
    return 0;
}

/* ---------------------------------------------------------- replica side */

static int32_t
s_apply(ddict_server_t *self, const char *ns, const telem_dict_op_t *op,
        ddict_val_t *val)
{
    ddict_store_key_t k = { ns, (uint8_t) strlen(ns), op->key, op->klen };
    if (op->op == TELEM_DOP_MERGE) {
        if (op->klen < 1 || op->key[0] + 1u > op->klen)
            return TELEM_EPROTO;
        k.ns = (const char *) op->key + 1;
        k.nslen = op->key[0];
        k.key = op->key + 1 + op->key[0];
        k.klen = op->klen - 1 - op->key[0];
    }
    uint32_t shard = ddict_hash_shard(k.key, k.klen);
    if (op->op == TELEM_DOP_REMOVE) {
        if (ddict_store_del(self->store, shard, &k) == 0)
            ds_log(self, DDICT_LOG_REC_DEL, shard, &k, NULL, 0, 0);
        return 0;
    }
    if (!val || (op->op != TELEM_DOP_SET && op->op != TELEM_DOP_MERGE))
        return TELEM_EPROTO;
    ddict_store_entry_t *e = ddict_store_find(self->store, shard, &k);
    if (op->op == TELEM_DOP_MERGE && e
        && ddict_store_entry_version(e) >= op->arg)
        return 0;
    ds_log_val(self, shard, &k, val, op->arg);
    if (e) {
        ddict_store_replace(self->store, e, val, op->arg);
        return 0;
    }
    return ddict_store_put(self->store, shard, &k, val, op->arg);
}

int
ds_repl_request(ddict_server_t *self, zmq_msg_t *route,
                const telem_dict_req_t *req, ddict_val_t **vals,
                size_t nvals)
{
    size_t want = 0;
    for (uint32_t i = 0; i < req->nops; i++)
        want += req->ops[i].val;
    if (want != nvals)
        return TELEM_EPROTO;
    if (req->epoch != self->epoch)
        return ds_reply_code(self, route, TELEM_MSG_DICT_ACK, req->id,
                             TELEM_ESTATE);
    int32_t code = 0;
    size_t v = 0;
    for (uint32_t i = 0; i < req->nops; i++) {
        ddict_val_t *val = req->ops[i].val ? vals[v++] : NULL;
        int32_t rc = s_apply(self, req->ns, &req->ops[i], val);
        if (rc && !code)
            code = rc;
    }
    return ds_reply_code(self, route, TELEM_MSG_DICT_ACK, req->id, code);
}

/* ---------------------------------------------------------------- events */

static int
s_reply_one(ddict_server_t *self, zmq_msg_t *route, uint64_t id, int32_t code)
{
    telem_dict_res_t res = { .code = code };
    telem_dict_rep_t rep = { id, self->epoch, 0, &res, 1 };
    const void *data;
    size_t size;
    zmq_msg_t f;
    if (telem_encode_dict_rep(self->enc, TELEM_MSG_DICT_REP, &rep, &data,
                              &size) != 0
        || zmq_msg_init_size(&f, size) != 0) {
        zmq_msg_close(route);
        return TELEM_ENOMEM;
    }
    memcpy(zmq_msg_data(&f), data, size);
    return ds_hold(self, route, &f, 1);
}

int
ds_event_wait(ddict_server_t *self, zmq_msg_t *route, uint64_t id,
              const telem_dict_op_t *op)
{
    ddict_store_key_t k = { DS_EV_NS, DS_EV_NSLEN, op->key, op->klen };
    uint32_t shard = ddict_hash_shard(op->key, op->klen);
    if (ddict_map_role(self->map, shard, self->self_idx) != 0)
        return s_reply_one(self, route, id, TELEM_ESTATE);
    if (ddict_store_find(self->store, shard, &k))
        return s_reply_one(self, route, id, 0);
    if (self->nwait == self->capwait) {
        size_t cap = self->capwait ? self->capwait * 2 : 16;
        ds_waiter_t *w = realloc(self->waiters, cap * sizeof *w);
        if (!w)
            return s_reply_one(self, route, id, TELEM_ENOMEM);
        self->waiters = w;
        self->capwait = cap;
    }
    ds_waiter_t *w = &self->waiters[self->nwait];
    if (!(w->key = malloc(op->klen + 1)))
        return s_reply_one(self, route, id, TELEM_ENOMEM);
    memcpy(w->key, op->key, op->klen);
    w->klen = op->klen;
    w->id = id;
    uint64_t ms = op->arg < S_WAIT_MAX_MS ? op->arg : S_WAIT_MAX_MS;
    w->deadline = telem_mono_ns() + (int64_t) ms * TELEM_NS_PER_MS;
    zmq_msg_init(&w->route);
    zmq_msg_move(&w->route, route);
    self->nwait++;
    return 0;
}

/* Answers waiter i with code and removes it. */
static void
s_waiter_end(ddict_server_t *self, size_t i, int32_t code)
{
    ds_waiter_t *w = &self->waiters[i];
    s_reply_one(self, &w->route, w->id, code);
    free(w->key);
    self->waiters[i] = self->waiters[--self->nwait];
}

void
ds_event_wake(ddict_server_t *self, const void *key, uint32_t klen)
{
    for (size_t i = 0; i < self->nwait;) {
        ds_waiter_t *w = &self->waiters[i];
        if (w->klen == klen && memcmp(w->key, key, klen) == 0)
            s_waiter_end(self, i, 0);
        else
            i++;
    }
}

void
ds_waiters_expire(ddict_server_t *self, int64_t now, int all, int32_t code)
{
    for (size_t i = 0; i < self->nwait;) {
        if (all || self->waiters[i].deadline <= now)
            s_waiter_end(self, i, code);
        else
            i++;
    }
}

/* ---------------------------------------------------------------- admin */

static int
s_admin_reply(ddict_server_t *self, zmq_msg_t *route, uint64_t id,
              int32_t code)
{
    const char *names[DDICT_NODES_MAX];
    int n = ddict_map_size(self->map);
    for (int i = 0; i < n; i++)
        names[i] = ddict_map_node(self->map, i);
    ddict_server_stats_t st;
    ddict_server_stats(self, &st);
    telem_dict_admin_rep_t m = { id, code, self->node, self->epoch,
                                 ddict_map_replicas(self->map),
                                 self->reforming, st.keys, st.bytes, names,
                                 (uint32_t) n, self->committed };
    const void *data;
    size_t size;
    zmq_msg_t f;
    if (telem_encode_dict_admin_rep(self->enc, &m, &data, &size) != 0
        || zmq_msg_init_size(&f, size) != 0) {
        zmq_msg_close(route);
        return TELEM_ENOMEM;
    }
    memcpy(zmq_msg_data(&f), data, size);
    return ds_hold(self, route, &f, 1);
}

static int32_t
s_prepare(ddict_server_t *self, const telem_dict_admin_t *m)
{
    if (!m->nnodes || m->epoch <= m->prev_epoch)
        return TELEM_EINVAL;
    if (m->epoch <= self->epoch)
        return TELEM_ESTATE;      /* a stale or repeated prepare */
    ddict_map_t *check = ddict_map_new(m->nodes, (int) m->nnodes,
                                       m->replicas, NULL);
    int member = check && ddict_map_index(check, self->node) >= 0;
    ddict_map_destroy(&check);
    if (!member)
        return TELEM_EINVAL;
    ds_pending_fail_all(self, TELEM_ESTATE);
    ds_waiters_expire(self, 0, 1, TELEM_ESTATE);
    if (self->epoch < m->prev_epoch) {
        /* Missed the last committed map (prev_epoch): what this server
           holds may be stale, and the surviving owners have everything.
           A server at prev_epoch or past it (a re-form that prepared but
           never committed) holds valid data: keep it. */
        for (uint32_t s = 0; s < DDICT_SHARDS; s++)
            if (ddict_store_size(self->store, s)) {
                ddict_store_drop(self->store, s);
                ds_log(self, DDICT_LOG_REC_DROP, s, NULL, NULL, 0, 0);
            }
    }
    self->reforming = 1;
    return ds_set_map(self, m->nodes, (int) m->nnodes, m->replicas, m->epoch,
                      1);
}

typedef struct {
    ddict_server_t *self;
    const char *peer;
    telem_dict_op_t ops[DS_XFER_OPS];
    zmq_msg_t frames[DS_XFER_OPS + 1];
    size_t nops;
    uint64_t bytes;
} s_xfer_t;

static void
s_xfer_send(s_xfer_t *x)
{
    ddict_server_t *self = x->self;
    if (x->nops == 0)
        return;
    ds_pending_t *p = ds_pending_new(self);
    telem_dict_req_t m = { p ? p->id : 0, self->epoch, "", x->ops,
                           (uint32_t) x->nops };
    const void *data;
    size_t size;
    int rc = p ? telem_encode_dict_req(self->enc, TELEM_MSG_DICT_REPL, &m,
                                       &data, &size) : TELEM_ENOMEM;
    if (rc == 0 && zmq_msg_init_size(&x->frames[0], size) == 0) {
        memcpy(zmq_msg_data(&x->frames[0]), data, size);
        rc = ds_send_peer(self, x->peer, x->frames, x->nops + 1);
    } else {
        ds_close_frames(x->frames + 1, x->nops);
        rc = rc ? rc : TELEM_ENOMEM;
    }
    for (size_t i = 0; i < x->nops; i++)
        free((void *) x->ops[i].key);
    x->nops = 0;
    x->bytes = 0;
    if (!p) {
        self->xfer_code = TELEM_ENOMEM;
        return;
    }
    p->transfer = 1;
    p->waiting = 1;
    self->xfer_left++;
    if (rc) {
        p->code = rc;
        p->waiting = 0;
        ds_pending_done(self, p);
    }
}

static int
s_xfer_entry(void *arg, uint32_t shard, ddict_store_entry_t *e)
{
    (void) shard;
    s_xfer_t *x = arg;
    ddict_store_key_t k = ddict_store_entry_key(e);
    uint8_t *key = malloc(1 + (size_t) k.nslen + k.klen);
    if (!key)
        return TELEM_ENOMEM;
    key[0] = k.nslen;
    memcpy(key + 1, k.ns, k.nslen);
    memcpy(key + 1 + k.nslen, k.key, k.klen);
    telem_dict_op_t *op = &x->ops[x->nops];
    memset(op, 0, sizeof *op);
    op->op = TELEM_DOP_MERGE;
    op->key = key;
    op->klen = 1 + k.nslen + k.klen;
    op->arg = ddict_store_entry_version(e);
    op->val = 1;
    ddict_val_t *v = ddict_store_entry_value(e);
    if (ds_msg_from_val(&x->frames[x->nops + 1], v, 0, ddict_val_size(v))) {
        free(key);
        return TELEM_ENOMEM;
    }
    x->nops++;
    x->bytes += ddict_val_size(v) + op->klen;
    if (x->nops == DS_XFER_OPS || x->bytes >= DS_XFER_BYTES)
        s_xfer_send(x);
    return 0;
}

/* Sends every shard this server holds to each of its other new owners. */
static int
s_transfer(ddict_server_t *self, zmq_msg_t *route, uint64_t id)
{
    s_xfer_t *x = calloc(1, sizeof *x);
    if (!x)
        return s_admin_reply(self, route, id, TELEM_ENOMEM);
    x->self = self;
    self->xfer_active = 1;
    self->xfer_code = 0;
    self->xfer_id = id;
    self->xfer_left = 1;    /* held until every message is out */
    zmq_msg_init(&self->xfer_route);
    zmq_msg_move(&self->xfer_route, route);
    for (uint32_t s = 0; s < DDICT_SHARDS; s++) {
        if (ddict_store_size(self->store, s) == 0)
            continue;
        int owners[DDICT_REPLICAS_MAX];
        int r = ddict_map_owners(self->map, s, owners);
        for (int i = 0; i < r; i++) {
            if (owners[i] == self->self_idx)
                continue;
            x->peer = ddict_map_node(self->map, owners[i]);
            if (ddict_store_foreach(self->store, s, NULL, 0, s_xfer_entry, x))
                self->xfer_code = TELEM_ENOMEM;
            s_xfer_send(x);
        }
    }
    free(x);
    if (--self->xfer_left == 0) {
        self->xfer_active = 0;
        return s_admin_reply(self, &self->xfer_route, id, self->xfer_code);
    }
    return 0;
}

static void
s_commit(ddict_server_t *self)
{
    for (uint32_t s = 0; s < DDICT_SHARDS; s++)
        if (ddict_map_role(self->map, s, self->self_idx) < 0
            && ddict_store_size(self->store, s)) {
            ddict_store_drop(self->store, s);
            ds_log(self, DDICT_LOG_REC_DROP, s, NULL, NULL, 0, 0);
        }
    self->reforming = 0;
    self->committed = self->epoch;
}

int
ds_admin(ddict_server_t *self, zmq_msg_t *route, const telem_dict_admin_t *m)
{
    int32_t code = 0;
    switch (m->op) {
    case TELEM_DADM_HELLO:
        break;
    case TELEM_DADM_PREPARE:
        code = s_prepare(self, m);
        break;
    case TELEM_DADM_TRANSFER:
        if (!self->reforming || m->epoch != self->epoch || self->xfer_active)
            code = TELEM_ESTATE;
        else
            return s_transfer(self, route, m->id);
        break;
    case TELEM_DADM_COMMIT:
        if (m->epoch != self->epoch)
            code = TELEM_ESTATE;
        else
            s_commit(self);
        break;
    case TELEM_DADM_SHUTDOWN:
        self->stopping = 1;
        break;
    case TELEM_DADM_COMPACT:
        ds_compact_abort(self);
        code = ddict_log_compact(self->log, ds_dump, self);
        break;
    default:
        code = TELEM_EINVAL;
    }
    return s_admin_reply(self, route, m->id, code);
}
