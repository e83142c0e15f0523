/* ddict_server.c - the dictionary server's life cycle: log replay into the
 * store, decoding and dispatch of incoming messages, the group commit of
 * the held replies, the timers.
 *
 * The top of the server's files, which call one way, downwards:
 *   ddict_server.c          life cycle, replay, dispatch, flush, tick
 *   ddict_server_repl.c     replication in, re-forming (admin)
 *   ddict_server_ops.c      client operations, replication out
 *   ddict_server_pending.c  waits for acknowledgements, rollback, events
 *   ddict_server_compact.c  log compaction
 *   ddict_server_base.c     log appends, the map, held replies, values
 *                           and frames, counters
 * No file calls a file above it in this list.
 *
 * Replay applies records in file order exactly as they were applied live
 * (puts with their versions, deletes, checkpoint copies, dropped shards,
 * map changes), so a restarted server holds what it acknowledged.  Large
 * values are not copied out of the log: they are shared values
 * (ddict_val.h) whose bytes are the log's read-only mapping (ddict_log.h),
 * which stays mapped while any of them lives.  The map is itself logged:
 * the last MAP record wins over the command line.
 */
#include "ddict_server_int.h"

#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_time.h"

#define S_SHARE_MIN (16u << 10)    /* replayed values shared from here on */

/* Parses a logged node list ("a\nb\nc") and installs it. */
static int
s_map_from_log(ddict_server_t *self, const ddict_log_rec_t *r)
{
    char *list = malloc(r->vlen + 1);
    const char **names = calloc(r->vlen / 2 + 2, sizeof *names);
    int rc = TELEM_ENOMEM;
    if (list && names) {
        memcpy(list, r->val, r->vlen);
        list[r->vlen] = '\0';
        int n = 0;
        for (char *save = NULL, *t = strtok_r(list, "\n", &save); t;
             t = strtok_r(NULL, "\n", &save))
            names[n++] = t;
        rc = ds_set_map(self, names, n, r->shard, r->version, 0);
    }
    free(names);
    free(list);
    return rc;
}

/* ---------------------------------------------------------------- replay */

static void
s_unmap_fn(void *data, void *hint)
{
    (void) data;
    ddict_log_map_release(hint);
}

/* The value of a replayed PUT: values from S_SHARE_MIN up point into the
 * log's mapping (no copy; the pages are the page cache's), smaller ones
 * are copied.  NULL: no memory. */
static ddict_val_t *
s_replay_value(const ddict_log_rec_t *r)
{
    if (r->vlen < S_SHARE_MIN)
        return ddict_val_new(r->val, r->vlen);
    ddict_log_map_t *m = ddict_log_rec_map(r);
    ddict_log_map_hold(m);
    ddict_val_t *v = ddict_val_wrap(r->val, r->vlen, s_unmap_fn, m);
    if (!v)
        ddict_log_map_release(m);
    return v;
}

static int
s_replay(void *arg, const ddict_log_rec_t *r)
{
    ddict_server_t *self = arg;
    ddict_store_key_t k = { r->ns, r->nslen, r->key, r->klen };
    uint32_t shard = r->shard % DDICT_SHARDS;
    switch (r->type) {
    case DDICT_LOG_REC_PUT: {
        ddict_val_t *v = s_replay_value(r);
        if (!v)
            return TELEM_ENOMEM;
        int rc = ddict_store_put(self->store, shard, &k, v, r->version);
        ddict_val_release(&v);
        return rc;
    }
    case DDICT_LOG_REC_DEL:
        ddict_store_del(self->store, shard, &k);
        return 0;
    case DDICT_LOG_REC_CKPT:
        return r->vlen > DDICT_NS_MAX ? TELEM_EPROTO
               : ddict_store_copy_ns(self->store, shard, r->val,
                                     (uint8_t) r->vlen, r->ns, r->nslen);
    case DDICT_LOG_REC_CLEAR:
        ddict_store_clear_ns(self->store, shard, r->ns, r->nslen);
        return 0;
    case DDICT_LOG_REC_DROP:
        ddict_store_drop(self->store, shard);
        return 0;
    case DDICT_LOG_REC_MAP:
        /* A damaged map record must not stop recovery of the data. */
        if (s_map_from_log(self, r) != 0)
            telem_log(TELEM_LOG_WARN, "log: unusable map record skipped");
        return 0;
    }
    return 0;
}

/* ---------------------------------------------------------------- life */

static int
s_init(ddict_server_t *self, const ddict_server_config_t *cfg)
{
    if (!cfg->node || !telem_node_valid(cfg->node) || !cfg->log_path)
        return TELEM_EINVAL;
    snprintf(self->node, sizeof self->node, "%s", cfg->node);
    self->cfg = *cfg;
    self->cfg.node = self->node;
    self->cfg.nodes = NULL;
    telem_ratelimit_t rl = TELEM_RATELIMIT_INIT(10, 5);
    self->rl = rl;
    self->next_id = self->oldest_id = 1;
    self->self_idx = -1;
    if (!(self->store = ddict_store_new())
        || !(self->enc = telem_proto_encoder_new())
        || !(self->dec = telem_proto_decoder_new()) || ds_reserve(self, 64))
        return TELEM_ENOMEM;
    int rc;
    self->log = ddict_log_open(cfg->log_path, s_replay, self, &self->replay,
                               &rc);
    if (!self->log)
        return rc;
    if (!self->map) {
        const char *me[1] = { self->node };
        const char *const *nodes = cfg->nodes && cfg->nnodes ? cfg->nodes : me;
        int n = cfg->nodes && cfg->nnodes ? cfg->nnodes : 1;
        if ((rc = ds_set_map(self, nodes, n, cfg->replicas, 1, 1)) != 0)
            return rc;
        ddict_log_sync(self->log);
    }
    self->committed = self->epoch;
    return 0;
}

ddict_server_t *
ddict_server_new(const ddict_server_config_t *cfg, ddict_out_fn out,
                 void *out_arg, int *err)
{
    ddict_server_t *self = calloc(1, sizeof *self);
    int rc = self ? 0 : TELEM_ENOMEM;
    if (self) {
        self->out = out;
        self->out_arg = out_arg;
        rc = s_init(self, cfg);
    }
    if (err)
        *err = rc;
    if (rc)
        ddict_server_destroy(&self);
    return self;
}

void
ddict_server_destroy(ddict_server_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ddict_server_t *self = *self_p;
    ds_pending_fail_all(self, TELEM_ECONN);
    ds_waiters_expire(self, 0, 1, TELEM_ECONN);
    ds_compact_abort(self);
    if (self->log && self->nout)
        ddict_server_flush(self);
    for (size_t i = 0; i < self->nout; i++) {
        zmq_msg_close(&self->outbox[i].route);
        ds_close_frames(self->outbox[i].frames, self->outbox[i].n);
        free(self->outbox[i].frames);
    }
    if (self->xfer_active)
        zmq_msg_close(&self->xfer_route);
    if (self->log)
        ddict_log_sync(self->log);
    ddict_log_destroy(&self->log);
    ddict_store_destroy(&self->store);
    ddict_map_destroy(&self->map);
    telem_proto_encoder_destroy(&self->enc);
    telem_proto_decoder_destroy(&self->dec);
    free(self->outbox);
    free(self->pend);
    free(self->waiters);
    free(self->ops);
    free(self->res);
    free(self->vals);
    free(self->rvals);
    free(self);
    *self_p = NULL;
}

int
ddict_server_flush(ddict_server_t *self)
{
    int rc = self->cfg.sync == DDICT_SYNC_BATCH ? ddict_log_sync(self->log)
                                                : ddict_log_flush(self->log);
    if (rc || self->failed_io) {
        /* Nothing is acknowledged that may not be on disk. */
        telem_log_limited(&self->rl, TELEM_LOG_ERROR,
                          "log write failed: replies withheld");
        self->failed_io = 0;
        rc = TELEM_EIO;
    }
    size_t n = self->nout;
    self->nout = 0;
    for (size_t i = 0; i < n; i++) {
        ds_out_t *o = &self->outbox[i];
        if (rc == 0) {
            self->out(self->out_arg, &o->route, NULL, o->frames, o->n);
        } else {
            zmq_msg_close(&o->route);
            ds_close_frames(o->frames, o->n);
        }
        free(o->frames);
    }
    if (rc == 0)
        ds_compact_step(self);
    return rc;
}

/* ---------------------------------------------------------------- input */

/* Turns the values of req into shared values, in op order, in
 * self->vals: value frames are wrapped (taken over), values carried
 * inline in the header are copied.  When some op has an inline value the
 * ops are copied to self->ops with `val` set for each, and req points
 * there.  Returns 0 with *nvals set, TELEM_EPROTO when the frames do not
 * match the ops, or TELEM_ENOMEM.  The frames stay the caller's to close
 * (those taken are left empty). */
static int
s_unpack(ddict_server_t *self, telem_dict_req_t *req, zmq_msg_t *frames,
         size_t nframes, size_t *nvals)
{
    int rc = ds_reserve(self, req->nops > nframes ? req->nops : nframes);
    if (rc)
        return rc;
    int copy_ops = 0;
    for (uint32_t i = 0; i < req->nops && !copy_ops; i++)
        copy_ops = req->ops[i].ival != NULL;
    size_t f = 0, v = 0;
    for (uint32_t i = 0; i < req->nops && rc == 0; i++) {
        const telem_dict_op_t *op = &req->ops[i];
        if (copy_ops)
            self->ops[i] = *op;
        if (op->val && f == nframes)
            rc = TELEM_EPROTO;
        else if (op->val && !(self->vals[v++] = ds_val_from_msg(&frames[f++])))
            rc = TELEM_ENOMEM;
        else if (op->ival && !(self->vals[v++] = ddict_val_new(op->ival,
                                                               op->ivlen)))
            rc = TELEM_ENOMEM;
        else if (op->ival) {
            self->ops[i].val = 1;
            self->ops[i].ival = NULL;
            self->ops[i].ivlen = 0;
        }
    }
    if (rc == 0 && f != nframes)
        rc = TELEM_EPROTO;
    if (rc) {
        ds_release_vals(self->vals, v);
        return rc;
    }
    if (copy_ops)
        req->ops = self->ops;
    *nvals = v;
    return 0;
}

/* A client request or a replication request, values unpacked. */
static int
s_ops_request(ddict_server_t *self, zmq_msg_t *route, int type,
              telem_dict_req_t *req, zmq_msg_t *frames, size_t n)
{
    size_t nvals = 0;
    int rc = s_unpack(self, req, frames, n, &nvals);
    if (rc)
        return rc;
    rc = type == TELEM_MSG_DICT_REQ
             ? ds_client_request(self, route, req, self->vals, nvals)
             : ds_repl_request(self, route, req, self->vals, nvals);
    ds_release_vals(self->vals, nvals);
    return rc;
}

int
ddict_server_request(ddict_server_t *self, zmq_msg_t *route,
                     zmq_msg_t *frames, size_t n)
{
    telem_msg_t m;
    int rc = n ? telem_proto_decode(self->dec, zmq_msg_data(&frames[0]),
                                    zmq_msg_size(&frames[0]), &m)
               : TELEM_EPROTO;
    if (rc) {
        /* Not a message at all: say so, so that a sender is not left
           waiting (its id could not be read: 0). */
        telem_log_limited(&self->rl, TELEM_LOG_WARN, "bad request: %s (%s)",
                          telem_strerror(rc),
                          n ? telem_proto_decoder_error(self->dec)
                            : "no frame");
        return ddict_server_refuse(self, route, frames, n, rc);
    }
    switch ((int) m.type) {
    case TELEM_MSG_DICT_REQ:
    case TELEM_MSG_DICT_REPL:
        rc = s_ops_request(self, route, (int) m.type, &m.u.dict_req,
                           frames + 1, n - 1);
        break;
    case TELEM_MSG_DICT_ADMIN:
        rc = ds_admin(self, route, &m.u.dict_admin);
        break;
    default:
        /* A reply, or another family's message (a telemd batch, say):
           nothing a server takes on this socket. */
        telem_log_limited(&self->rl, TELEM_LOG_WARN,
                          "refused %s message "
                          "(type %d)",
                          telem_proto_msg_type_name((int) m.type),
                          (int) m.type);
        return ddict_server_refuse(self, route, frames, n, TELEM_EPROTO);
    }
    if (rc == 0) {
        ds_close_frames(frames, n);
        return 0;
    }
    self->bad_messages++;
    telem_log_limited(&self->rl, TELEM_LOG_WARN, "bad request: %s",
                      telem_strerror(rc));
    zmq_msg_close(route);
    ds_close_frames(frames, n);
    return rc;
}

int
ddict_server_refuse(ddict_server_t *self, zmq_msg_t *route,
                    zmq_msg_t *frames, size_t n, int code)
{
    self->bad_messages++;
    ds_close_frames(frames, n);
    ds_reply_code(self, route, TELEM_MSG_DICT_REP, 0, code);
    return code;
}

int
ddict_server_peer_reply(ddict_server_t *self, const char *peer,
                        zmq_msg_t *frames, size_t n)
{
    telem_msg_t m;
    int rc = n ? telem_proto_decode(self->dec, zmq_msg_data(&frames[0]),
                                    zmq_msg_size(&frames[0]), &m)
               : TELEM_EPROTO;
    if (rc == 0 && (int) m.type == TELEM_MSG_DICT_ACK)
        rc = ds_ack(self, &m.u.dict_rep);
    else if (rc == 0)
        rc = TELEM_EPROTO;
    if (rc) {
        self->bad_messages++;
        telem_log_limited(&self->rl, TELEM_LOG_WARN, "bad reply from %s: %s",
                          peer, telem_strerror(rc));
    }
    ds_close_frames(frames, n);
    return rc;
}

int
ddict_server_peer_refuse(ddict_server_t *self, const char *peer,
                         size_t nframes)
{
    self->bad_messages++;
    telem_log_limited(&self->rl, TELEM_LOG_WARN, "bad reply from %s: %zu "
                      "frames (an acknowledgement is one)", peer, nframes);
    return TELEM_EPROTO;
}

int64_t
ddict_server_tick(ddict_server_t *self, int64_t now)
{
    ds_waiters_expire(self, now, 0, TELEM_ETIMEDOUT);
    while (self->oldest_id < self->next_id) {
        ds_pending_t *p = &self->pend[self->oldest_id % self->cappend];
        if (p->id == self->oldest_id && p->deadline > now)
            break;
        if (p->id == self->oldest_id) {
            p->code = TELEM_ETIMEDOUT;
            p->waiting = 0;
            ds_pending_done(self, p);
        } else {
            self->oldest_id++;
        }
    }
    /* A compaction in progress advances at every flush: no idle wait.
       Otherwise the next wake-up is the earliest deadline there is: the
       oldest pending replication (every one lives DS_PENDING_TTL_NS, so
       the oldest expires first) or a waiter.  An idle server has none and
       sleeps until its actor's cap; it woke every 100 ms before, which
       was most of an idle telem_dictd's CPU (0.12 % of a core here, 256
       of them a third of a core on one machine). */
    int64_t next = self->compact ? now : INT64_MAX;
    if (self->oldest_id < self->next_id) {
        const ds_pending_t *p = &self->pend[self->oldest_id % self->cappend];
        if (p->id == self->oldest_id && p->deadline < next)
            next = p->deadline;     /* the loop above left no gap first */
    }
    for (size_t i = 0; i < self->nwait; i++)
        if (self->waiters[i].deadline < next)
            next = self->waiters[i].deadline;
    return next;
}

int
ddict_server_stopping(const ddict_server_t *self)
{
    return self->stopping;
}

