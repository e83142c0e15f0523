/* ddict_server_base.c - the bottom of the dictionary server: what every
 * other part of it uses, calling none of them (ddict_server.c lists the
 * order of the files).
 *
 * Log appends (a failed one marks the burst, whose replies are then
 * withheld), installing a shard map (logged as a MAP record), the outbox
 * of replies held until the burst's flush, messages to peers, the
 * counters, and the crossing between ZeroMQ frames and shared values.
 *
 * Values cross between frames and the data structures here: a received
 * frame is wrapped, not copied (the value keeps the message and closes it
 * with its last reference), and a stored value goes out as a frame that
 * shares its bytes (zmq_msg_init_data with a release hook that drops one
 * reference; libzmq calls it from its I/O thread, which is why the count
 * is atomic).  Values up to S_COPY_MAX bytes are copied both ways
 * instead: one small allocation costs less than sharing.
 */
#include "ddict_server_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_error.h"
#include "telem_grow.h"

#define S_COPY_MAX 256u            /* frames copied, not shared, up to here */

/* ---------------------------------------------------------------- log */

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
    /* Four arrays of one capacity: each grows from the shared one, and
       the shared one moves only when all did. */
    size_t c1 = self->capops, c2 = c1, c3 = c1, c4 = c1;
    if (telem_grow((void **) &self->ops, &c1, n, sizeof *self->ops, 64)
        || telem_grow((void **) &self->res, &c2, n, sizeof *self->res, 64)
        || telem_grow((void **) &self->vals, &c3, n, sizeof *self->vals, 64)
        || telem_grow((void **) &self->rvals, &c4, n, sizeof *self->rvals,
                      64))
        return TELEM_ENOMEM;
    self->capops = c1;
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

int
ds_hold(ddict_server_t *self, zmq_msg_t *route, zmq_msg_t *frames, size_t n)
{
    if (self->nout == self->capout
        && telem_grow((void **) &self->outbox, &self->capout, self->nout + 1,
                      sizeof *self->outbox, 64))
        goto fail;
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
    if (telem_proto_encode_dict_rep(self->enc, type, &rep, &data, &size) != 0
        || zmq_msg_init_size(&f, size) != 0) {
        zmq_msg_close(route);
        return TELEM_ENOMEM;
    }
    memcpy(zmq_msg_data(&f), data, size);
    return ds_hold(self, route, &f, 1);
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
