/* ddict_server.c - the dictionary server's life cycle: log replay into the
 * store, the shard map, decoding and dispatch of incoming messages, the
 * held-reply outbox with its group commit (compaction is in
 * ddict_server_compact.c).
 *
 * Replay applies records in file order exactly as they were applied live
 * (puts with their versions, deletes, checkpoint copies, dropped shards,
 * map changes), so a restarted server holds what it acknowledged.  Large
 * values are not copied out of the log: they are shared values
 * (ddict_val.h) whose bytes are the log's read-only mapping (ddict_log.h),
 * which stays mapped while any of them lives.  The map is itself logged:
 * the last MAP record wins over the command line.
 *
 * Values cross between ZeroMQ frames and the data structures here: a
 * received frame is wrapped, not copied (the value keeps the message and
 * closes it with its last reference), and a stored value goes out as a
 * frame that shares its bytes (zmq_msg_init_data with a release hook that
 * drops one reference; libzmq calls it from its I/O thread, which is why
 * the count is atomic).  Values up to S_COPY_MAX bytes are copied both
 * ways instead: one small allocation costs less than sharing.
 */
#include "ddict_server_int.h"

#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_time.h"

#define S_SHARE_MIN (16u << 10)    /* replayed values shared from here on */
#define S_COPY_MAX 256u            /* frames copied, not shared, up to here */


/* ---------------------------------------------------------------- helpers */

void
ds_close_frames(zmq_msg_t *frames, size_t n)
{
    for (size_t i = 0; i < n; i++)
        zmq_msg_close(&frames[i]);
}

int
ds_log(ddict_server_t *self, uint8_t type, uint32_t shard,
       const ddict_store_key_t *k, const void *val, uint64_t vlen,
       uint64_t version)
{
    ddict_log_rec_t r = { type, (uint16_t) shard, k ? k->ns : "",
                      k ? k->nslen : 0, k ? k->key : "", k ? k->klen : 0,
                      val, vlen, version };
    int rc = ddict_log_append(self->log, &r);
    if (rc)
        self->failed_io = 1;
    return rc;
}

/* A PUT record of a shared value: a large one is held by the log and
 * written with the rest of the burst, without a copy. */
int
ds_log_val(ddict_server_t *self, uint32_t shard, const ddict_store_key_t *k,
           ddict_val_t *val, uint64_t version)
{
    ddict_log_rec_t r = { DDICT_LOG_REC_PUT, (uint16_t) shard, k->ns, k->nslen,
                      k->key, k->klen, NULL, 0, version };
    int rc = ddict_log_append_val(self->log, &r, val);
    if (rc)
        self->failed_io = 1;
    return rc;
}

/* ------------------------------------------------------ values and frames */

/* Release hook of a value wrapping a received message. */
static void
s_msg_free(void *data, void *hint)
{
    (void) data;
    zmq_msg_close(hint);
    free(hint);
}

ddict_val_t *
ds_val_from_msg(zmq_msg_t *msg)
{
    size_t size = zmq_msg_size(msg);
    ddict_val_t *v = NULL;
    zmq_msg_t *keep = NULL;
    if (size <= S_COPY_MAX) {
        v = ddict_val_new(zmq_msg_data(msg), size);
    } else if ((keep = malloc(sizeof *keep)) != NULL) {
        zmq_msg_init(keep);
        zmq_msg_move(keep, msg);          /* a large message's bytes stay */
        v = ddict_val_wrap(zmq_msg_data(keep), size, s_msg_free, keep);
        if (!v) {
            zmq_msg_close(keep);
            free(keep);
        }
    }
    zmq_msg_close(msg);
    zmq_msg_init(msg);
    return v;
}

/* Called by ZeroMQ (any thread) when a frame sharing a value is freed. */
static void
s_val_free(void *data, void *hint)
{
    (void) data;
    ddict_val_t *v = hint;
    ddict_val_release(&v);
}

int
ds_msg_from_val(zmq_msg_t *out, ddict_val_t *val, size_t off, size_t len)
{
    const uint8_t *p = (const uint8_t *) ddict_val_data(val) + off;
    if (len <= S_COPY_MAX) {
        if (zmq_msg_init_size(out, len) != 0)
            return TELEM_ENOMEM;
        if (len)
            memcpy(zmq_msg_data(out), p, len);
        return 0;
    }
    ddict_val_hold(val);
    if (zmq_msg_init_data(out, (void *) p, len, s_val_free, val) == 0)
        return 0;
    ddict_val_release(&val);
    return TELEM_ENOMEM;
}

void
ds_release_vals(ddict_val_t **vals, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ddict_val_release(&vals[i]);
}

int
ds_reserve(ddict_server_t *self, size_t n)
{
    if (n <= self->capops)
        return 0;
    size_t cap = self->capops ? self->capops : 64;
    while (cap < n)
        cap *= 2;
    telem_dict_op_t *ops = realloc(self->ops, cap * sizeof *ops);
    if (ops)
        self->ops = ops;
    telem_dict_res_t *res = realloc(self->res, cap * sizeof *res);
    if (res)
        self->res = res;
    ddict_val_t **vals = realloc(self->vals, cap * sizeof *vals);
    if (vals)
        self->vals = vals;
    ddict_val_t **rvals = realloc(self->rvals, cap * sizeof *rvals);
    if (rvals)
        self->rvals = rvals;
    if (!ops || !res || !vals || !rvals)
        return TELEM_ENOMEM;
    self->capops = cap;
    return 0;
}

int
ds_set_map(ddict_server_t *self, const char *const *nodes, int n,
           int replicas, uint64_t epoch, int log_it)
{
    ddict_map_t *map = ddict_map_new(nodes, n, replicas, NULL);
    if (!map)
        return TELEM_EINVAL;
    if (log_it) {
        size_t len = 0;
        for (int i = 0; i < n; i++)
            len += strlen(nodes[i]) + 1;
        char *list = malloc(len + 1);
        if (!list) {
            ddict_map_destroy(&map);
            return TELEM_ENOMEM;
        }
        size_t off = 0;
        for (int i = 0; i < n; i++)
            off += (size_t) sprintf(list + off, "%s%s", i ? "\n" : "",
                                    nodes[i]);
        ds_log(self, DDICT_LOG_REC_MAP, (uint32_t) ddict_map_replicas(map),
               NULL, list, off, epoch);
        free(list);
    }
    ddict_map_destroy(&self->map);
    self->map = map;
    self->epoch = epoch;
    self->self_idx = ddict_map_index(map, self->node);
    return 0;
}

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
    if (!(self->store = ddict_store_new()) || !(self->enc = telem_encoder_new())
        || !(self->dec = telem_decoder_new()) || ds_reserve(self, 64))
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
    telem_encoder_destroy(&self->enc);
    telem_decoder_destroy(&self->dec);
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

/* ---------------------------------------------------------------- output */

int
ds_hold(ddict_server_t *self, zmq_msg_t *route, zmq_msg_t *frames, size_t n)
{
    if (self->nout == self->capout) {
        size_t cap = self->capout ? self->capout * 2 : 64;
        ds_out_t *o = realloc(self->outbox, cap * sizeof *o);
        if (!o)
            goto fail;
        self->outbox = o;
        self->capout = cap;
    }
    ds_out_t *o = &self->outbox[self->nout];
    if (!(o->frames = malloc(n * sizeof *frames)))
        goto fail;
    zmq_msg_init(&o->route);
    zmq_msg_move(&o->route, route);
    for (size_t i = 0; i < n; i++) {
        zmq_msg_init(&o->frames[i]);
        zmq_msg_move(&o->frames[i], &frames[i]);
    }
    o->n = n;
    self->nout++;
    return 0;
fail:
    zmq_msg_close(route);
    ds_close_frames(frames, n);
    return TELEM_ENOMEM;
}

int
ds_send_peer(ddict_server_t *self, const char *peer, zmq_msg_t *frames,
             size_t n)
{
    return self->out(self->out_arg, NULL, peer, frames, n);
}

/* Encodes a reply with no results and a whole-request code, and holds it. */
int
ds_reply_code(ddict_server_t *self, zmq_msg_t *route, int type, uint64_t id,
              int32_t code)
{
    telem_dict_rep_t rep = { id, self->epoch, code, NULL, 0 };
    const void *data;
    size_t size;
    zmq_msg_t f;
    if (telem_encode_dict_rep(self->enc, type, &rep, &data, &size) != 0
        || zmq_msg_init_size(&f, size) != 0) {
        zmq_msg_close(route);
        return TELEM_ENOMEM;
    }
    memcpy(zmq_msg_data(&f), data, size);
    return ds_hold(self, route, &f, 1);
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
                          telem_strerror(rc), n ? telem_decoder_error(self->dec)
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
        telem_log_limited(&self->rl, TELEM_LOG_WARN, "refused %s message "
                          "(type %d)", telem_msg_type_name((int) m.type),
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
    /* A compaction in progress advances at every flush: no idle wait. */
    int64_t next = self->compact ? now : now + 100 * TELEM_NS_PER_MS;
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

void
ddict_server_stats(const ddict_server_t *self, ddict_server_stats_t *st)
{
    memset(st, 0, sizeof *st);
    st->epoch = self->epoch;
    st->reforming = self->reforming;
    for (uint32_t s = 0; s < DDICT_SHARDS; s++)
        st->keys += ddict_store_size(self->store, s);
    st->bytes = ddict_store_bytes(self->store);
    st->log_bytes = ddict_log_size(self->log);
    st->bad_messages = self->bad_messages;
    st->replayed = self->replay.records;
    st->dropped_bytes = self->replay.dropped_bytes;
}
