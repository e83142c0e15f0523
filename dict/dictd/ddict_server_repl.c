/* ddict_server_repl.c - the replica side of replication, and re-forming.
 * Called by ddict_server.c; calls the operations' helpers below it only
 * through ddict_server_pending.c, ddict_server_compact.c and
 * ddict_server_base.c (ddict_server.c lists the order of the files).
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

/* ---------------------------------------------------------------- admin */

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
    int rc = p ? telem_proto_encode_dict_req(self->enc, TELEM_MSG_DICT_REPL, &m,
                                             &data, &size)
               : TELEM_ENOMEM;
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
        return ds_admin_reply(self, route, id, TELEM_ENOMEM);
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
        return ds_admin_reply(self, &self->xfer_route, id, self->xfer_code);
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
    return ds_admin_reply(self, route, m->id, code);
}
