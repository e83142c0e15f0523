/* flood_good.c - the good requests of tests/flood_peer, sent on the very
 * sockets the malformed messages go out on, and their checks.
 *
 * A good request on a flooded socket is answered only after every message
 * sent before it on that connection (ZeroMQ keeps a connection's order,
 * and each daemon reads one socket in order): its answer paces the flood,
 * so no daemon's queue holds more than one round of malformed messages.
 * While it waits, every other reply (the refusals of the malformed
 * messages, id 0) is read and counted.  On the ingest socket, the good
 * batch carries a fin token and a SYNC on the control socket confirms it,
 * so the batch and everything before it were read.
 */
#include "flood_good.h"

#include <stdio.h>
#include <string.h>
#include <zmq.h>

#include "telem_proto_dict.h"
#include "telem_time.h"

#define S_WAIT_NS (60 * TELEM_NS_PER_SEC)   /* longest wait for a reply */
#define S_FRAMES 4                          /* kept of one reply */

/* ---- sending and receiving ---------------------------------------------- */

int
flood_send(void *sock, const void *data, size_t size, int extra)
{
    static const char more[] = "xyz";
    if (zmq_send(sock, data, size, extra ? ZMQ_SNDMORE : 0) < 0)
        return -1;
    for (int i = 0; i < extra; i++)
        if (zmq_send(sock, more, 1 + (size_t) i % 3,
                     i + 1 < extra ? ZMQ_SNDMORE : 0) < 0)
            return -1;
    return 0;
}

/* Receives one message: its first S_FRAMES frames into f[], the rest read
 * and dropped.  Returns its frame count, 0 when none came by `deadline`. */
static int
s_recv(void *sock, zmq_msg_t *f, int64_t deadline)
{
    int64_t left = (deadline - telem_mono_ns()) / TELEM_NS_PER_MS;
    zmq_pollitem_t item = { sock, 0, ZMQ_POLLIN, 0 };
    if (left <= 0 || zmq_poll(&item, 1, (long) left) != 1)
        return 0;
    int n = 0, more = 1;
    zmq_msg_t skip;
    zmq_msg_init(&skip);
    while (more) {
        zmq_msg_t *m = n < S_FRAMES ? &f[n] : &skip;
        if (n < S_FRAMES)
            zmq_msg_init(m);
        if (zmq_msg_recv(m, sock, 0) < 0) {
            if (n < S_FRAMES)
                zmq_msg_close(m);
            break;
        }
        more = zmq_msg_more(m);
        n++;
    }
    zmq_msg_close(&skip);
    return n;
}

static void
s_close(zmq_msg_t *f, int n)
{
    for (int i = 0; i < n && i < S_FRAMES; i++)
        zmq_msg_close(&f[i]);
}

/* The id of a reply (an error, control, query or dictionary reply);
 * UINT64_MAX when it does not decode as one.  Decoded into *m. */
static uint64_t
s_reply_id(flood_ctx_t *c, zmq_msg_t *f, telem_msg_t *m)
{
    if (telem_proto_decode(c->dec, zmq_msg_data(f), zmq_msg_size(f), m))
        return UINT64_MAX;
    switch ((int) m->type) {
    case TELEM_MSG_ERROR: return m->u.error.id;
    case TELEM_MSG_CONTROL_REPLY: return m->u.control_reply.id;
    case TELEM_MSG_QUERY_REPLY: return m->u.query_reply.id;
    case TELEM_MSG_DICT_REP: return m->u.dict_rep.id;
    default: return UINT64_MAX;
    }
}

/* Sends `data` on t's socket and waits for the reply of id `id`, counting
 * the refusals (id 0) read meanwhile.  Returns the reply's frame count
 * (its frames in f[], decoded into *m), or 0 with a line on stderr. */
static int
s_ask(flood_ctx_t *c, flood_target_t *t, const void *data, size_t size,
      uint64_t id, zmq_msg_t *f, telem_msg_t *m)
{
    if (flood_send(t->sock, data, size, 0) != 0) {
        fprintf(stderr, "flood: %s: send failed: %s\n", t->name,
                zmq_strerror(zmq_errno()));
        return 0;
    }
    int64_t deadline = telem_mono_ns() + S_WAIT_NS;
    for (;;) {
        int n = s_recv(t->sock, f, deadline);
        if (n == 0) {
            fprintf(stderr, "flood: %s: no reply to request %llu\n",
                    t->name, (unsigned long long) id);
            return 0;
        }
        uint64_t got = s_reply_id(c, &f[0], m);
        if (got == id)
            return n;
        if (got == 0)
            t->replies++;
        else
            fprintf(stderr, "flood: %s: unexpected reply (id %llu)\n",
                    t->name, (unsigned long long) got);
        s_close(f, n);
    }
}

/* ---- telemd ------------------------------------------------------------- */

int
flood_good_status(flood_ctx_t *c, flood_target_t *t, telem_status_t *st)
{
    telem_control_t q = { .id = ++c->next_id, .op = TELEM_CTL_STATUS };
    const void *data;
    size_t size;
    zmq_msg_t f[S_FRAMES];
    telem_msg_t m;
    if (telem_proto_encode_control(c->enc, &q, &data, &size) != 0)
        return -1;
    int n = s_ask(c, t, data, size, q.id, f, &m);
    int ok = n > 0 && m.type == TELEM_MSG_CONTROL_REPLY
             && strcmp(m.u.control_reply.status.node, c->node) == 0;
    if (ok && st)
        *st = m.u.control_reply.status;
    if (n && !ok)
        fprintf(stderr, "flood: %s: a wrong answer to a status request\n",
                t->name);
    s_close(f, n);
    return ok ? 0 : -1;
}

/* Checks a query reply: one series of `points` points, the last `last`. */
static int
s_points_ok(const telem_msg_t *m, uint32_t points, double last)
{
    if (m->type != TELEM_MSG_QUERY_REPLY || m->u.query_reply.nseries != 1)
        return 0;
    const telem_series_t *s = &m->u.query_reply.series[0];
    return s->npoints == points && s->values[points - 1] == last;
}

int
flood_good_query(flood_ctx_t *c, flood_target_t *t, uint32_t points,
                 double last, uint32_t max)
{
    const char *metric = FLOOD_GOOD_METRIC;
    telem_query_t q = { .id = ++c->next_id, .metrics = &metric,
                        .nmetrics = 1, .max_points = max };
    if (max && points > max)
        points = max;
    const void *data;
    size_t size;
    zmq_msg_t f[S_FRAMES];
    telem_msg_t m;
    if (telem_proto_encode_query(c->enc, &q, &data, &size) != 0)
        return -1;
    int n = s_ask(c, t, data, size, q.id, f, &m);
    int ok = n > 0 && s_points_ok(&m, points, last);
    if (n && !ok)
        fprintf(stderr, "flood: %s: query of %s: not %u points ending with "
                "%g\n", t->name, metric, points, last);
    s_close(f, n);
    return ok ? 0 : -1;
}

int
flood_good_latest(flood_ctx_t *c, flood_target_t *t, const char *metric,
                  double *value)
{
    telem_query_t q = { .id = ++c->next_id, .metrics = &metric,
                        .nmetrics = 1, .flags = TELEM_QUERY_LATEST };
    const void *data;
    size_t size;
    zmq_msg_t f[S_FRAMES];
    telem_msg_t m;
    if (telem_proto_encode_query(c->enc, &q, &data, &size) != 0)
        return -1;
    int n = s_ask(c, t, data, size, q.id, f, &m);
    int rc = n && m.type == TELEM_MSG_QUERY_REPLY ? 1 : -1;
    if (rc == 1 && m.u.query_reply.nseries == 1
        && m.u.query_reply.series[0].npoints == 1) {
        *value = m.u.query_reply.series[0].values[0];
        rc = 0;
    }
    s_close(f, n);
    return rc;
}

/* One batch with a fin token on the ingest socket, holding one sample of
 * FLOOD_GOOD_METRIC (value `value`) when `sample`, then SYNC on `ctl`
 * until telemd has it. */
int
flood_good_ingest(flood_ctx_t *c, flood_target_t *ingest,
                  flood_target_t *ctl, double value, int sample)
{
    uint64_t token = ((uint64_t) telem_now_ns() & (UINT64_MAX >> 1)) | 1;
    telem_sample_t s = { .metric = FLOOD_GOOD_METRIC, .level = 1,
                         .ts_ns = telem_now_ns(), .value = value };
    telem_batch_t b = { .source = "flood", .samples = &s,
                        .nsamples = sample ? 1 : 0, .fin_token = token };
    const void *data;
    size_t size;
    if (telem_proto_encode_batch(c->enc, &b, &data, &size) != 0
        || flood_send(ingest->sock, data, size, 0) != 0)
        return -1;
    int64_t deadline = telem_mono_ns() + S_WAIT_NS;
    while (telem_mono_ns() < deadline) {
        telem_control_t q = { .id = ++c->next_id, .op = TELEM_CTL_SYNC,
                              .arg = (int64_t) token };
        zmq_msg_t f[S_FRAMES];
        telem_msg_t m;
        if (telem_proto_encode_control(c->enc, &q, &data, &size) != 0)
            return -1;
        int n = s_ask(c, ctl, data, size, q.id, f, &m);
        int synced = n > 0 && m.type == TELEM_MSG_CONTROL_REPLY
                     && m.u.control_reply.synced;
        s_close(f, n);
        if (!n)
            return -1;
        if (synced)
            return 0;
    }
    fprintf(stderr, "flood: %s: a good batch was never confirmed\n",
            ingest->name);
    return -1;
}

/* ---- the dictionary ----------------------------------------------------- */

/* One op on key `key` (a PUT of `value` when it is not NULL, else a GET);
 * checks the result, and for a GET that the value is `expect`. */
static int
s_dict_op(flood_ctx_t *c, flood_target_t *t, const char *key,
          const char *value, const char *expect)
{
    telem_dict_op_t op = { .op = value ? TELEM_DOP_PUT : TELEM_DOP_GET,
                           .key = (const uint8_t *) key,
                           .klen = (uint32_t) strlen(key),
                           .ival = (const uint8_t *) value,
                           .ivlen = value ? (uint32_t) strlen(value) : 0 };
    telem_dict_req_t r = { .id = ++c->next_id, .ns = "flood", .ops = &op,
                           .nops = 1 };
    const void *data;
    size_t size;
    zmq_msg_t f[S_FRAMES];
    telem_msg_t m;
    if (telem_proto_encode_dict_req(c->enc, TELEM_MSG_DICT_REQ, &r, &data,
                                    &size) != 0)
        return -1;
    int n = s_ask(c, t, data, size, r.id, f, &m);
    const telem_dict_rep_t *rep = &m.u.dict_rep;
    int ok = n > 0 && (int) m.type == TELEM_MSG_DICT_REP && rep->code == 0
             && rep->nres == 1 && rep->res[0].code == 0;
    if (ok && expect) {
        size_t len = strlen(expect);
        const void *got = rep->res[0].ival;
        size_t glen = rep->res[0].ivlen;
        if (rep->res[0].val && n > 1) {
            got = zmq_msg_data(&f[1]);
            glen = zmq_msg_size(&f[1]);
        }
        ok = got && glen == len && memcmp(got, expect, len) == 0;
    }
    if (n && !ok)
        fprintf(stderr, "flood: %s: dictionary %s of %s: a wrong answer\n",
                t->name, value ? "put" : "get", key);
    s_close(f, n);
    return ok ? 0 : -1;
}

int
flood_good_dict(flood_ctx_t *c, flood_target_t *put, flood_target_t *get,
                long round)
{
    char key[64], value[96];
    snprintf(key, sizeof key, "good-%ld", round);
    snprintf(value, sizeof value, "value of round %ld, seed %llu", round,
             (unsigned long long) c->seed);
    if (s_dict_op(c, put, key, value, NULL) != 0
        || s_dict_op(c, get, key, NULL, value) != 0)
        return -1;
    return 0;
}
