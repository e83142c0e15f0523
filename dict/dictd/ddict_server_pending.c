/* ddict_server_pending.c - what waits in a dictionary server: writes
 * waiting for their replicas' acknowledgements (and their rollback when
 * replication fails), and event waiters.  Called by the operations, the
 * replication and admin parts and the life cycle above it; calls only
 * ddict_server_base.c (ddict_server.c lists the order of the files).
 *
 * Pending acknowledgements live in a ring indexed by their id (ids are
 * handed out in order, so the ring holds [oldest_id, next_id) and grows by
 * doubling when full); an acknowledgement finds its slot in O(1).  A
 * finished client write releases its held reply; a failed one is rolled
 * back first (ds_rollback: every key gets its previous value and version
 * again unless a later write changed it, logged, and the replicas told).
 * A finished transfer of a re-form answers the coordinator when it was
 * the last one.
 */
#include "ddict_server_int.h"

#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_grow.h"
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

void
ds_pending_done(ddict_server_t *self, ds_pending_t *p)
{
    if (p->transfer) {
        if (p->code && !self->xfer_code)
            self->xfer_code = p->code;
        if (--self->xfer_left == 0 && self->xfer_active) {
            self->xfer_active = 0;
            ds_admin_reply(self, &self->xfer_route, self->xfer_id,
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

/* ------------------------------------------------------------- rollback */

void
ds_undo_free(ds_pending_t *p)
{
    for (size_t i = 0; i < p->nundo; i++)
        ddict_val_release(&p->undo[i].old);
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
        if (telem_proto_encode_dict_req(self->enc, TELEM_MSG_DICT_REPL, &m,
                                        &data, &size)
                != 0
            || zmq_msg_init_size(&f[0], size) != 0)
            return;
        memcpy(zmq_msg_data(&f[0]), data, size);
        if (u->had && ds_msg_from_val(&f[1], u->old, 0,
                                      ddict_val_size(u->old)) != 0) {
            zmq_msg_close(&f[0]);
            return;
        }
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
        ddict_store_key_t k = { ns, u->nslen, u->bytes + u->nslen, u->klen };
        ddict_store_entry_t *e = ddict_store_find(self->store, u->shard, &k);
        if ((e ? ddict_store_entry_version(e) : 0) != u->new_version)
            continue;           /* written again since: leave it */
        if (u->had) {
            ds_log_val(self, u->shard, &k, u->old, u->old_version);
            ddict_store_put(self->store, u->shard, &k, u->old,
                            u->old_version);
        } else if (e) {
            ddict_store_del(self->store, u->shard, &k);
            ds_log(self, DDICT_LOG_REC_DEL, u->shard, &k, NULL, 0, 0);
        }
        s_rollback_tell(self, u, ns);
    }
    ds_undo_free(p);
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
    if (telem_proto_encode_dict_rep(self->enc, TELEM_MSG_DICT_REP, &rep, &data,
                                    &size)
            != 0
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
    if (self->nwait == self->capwait
        && telem_grow((void **) &self->waiters, &self->capwait,
                      self->nwait + 1, sizeof *self->waiters, 16))
        return s_reply_one(self, route, id, TELEM_ENOMEM);
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

/* ---------------------------------------------------------- admin reply */

int
ds_admin_reply(ddict_server_t *self, zmq_msg_t *route, uint64_t id,
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
    if (telem_proto_encode_dict_admin_rep(self->enc, &m, &data, &size) != 0
        || zmq_msg_init_size(&f, size) != 0) {
        zmq_msg_close(route);
        return TELEM_ENOMEM;
    }
    memcpy(zmq_msg_data(&f), data, size);
    return ds_hold(self, route, &f, 1);
}
