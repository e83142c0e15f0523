/* dict_net.h - test_dict_server.c's harness: dictionary servers
 * (dict/dictd/ddict_server.h) wired to each other frame by frame, without
 * sockets.  Requests are encoded here and handed to
 * ddict_server_request(); what a server sends goes through an output
 * function that queues it; s_pump() delivers queued peer messages to the
 * other servers (replication, acknowledgements) and client replies to an
 * inbox, and ends each step with ddict_server_flush() like the actor does
 * after a burst.  Everything is static (inline), as in proto_test.h.
 */
#ifndef TELEM_TESTS_DICT_NET_H
#define TELEM_TESTS_DICT_NET_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "check.h"
#include "ddict.h"
#include "ddict_server.h"
#include "ddict_map.h"
#include "telem_error.h"
#include "telem_proto.h"
#include "telem_proto_dict.h"

#define S_MAXQ 256
#define S_MAXF 16

/* A queued output: to a client (route) or to peer `to`. */
typedef struct {
    int from;
    char to[32];                  /* peer name, or "" for a route */
    char route[32];
    zmq_msg_t f[S_MAXF];
    size_t n;
} s_out_t;

typedef struct s_net s_net_t;
typedef struct {
    s_net_t *net;
    int idx;
} s_port_t;

struct s_net {
    ddict_server_t *srv[3];
    const char *name[3];
    s_port_t port[3];
    int nsrv;
    int down[3];                  /* sends to this server fail */
    s_out_t q[S_MAXQ];
    int nq;
    s_out_t inbox[S_MAXQ];        /* replies to the client */
    int nin;
    telem_proto_encoder_t *enc;
    telem_proto_decoder_t *dec;
    char dir[256];
    uint64_t compact_min;         /* for the servers started next */
};

static inline int
s_find(s_net_t *net, const char *name)
{
    for (int i = 0; i < net->nsrv; i++)
        if (strcmp(net->name[i], name) == 0)
            return i;
    return -1;
}

static inline int
s_out(void *arg, zmq_msg_t *route, const char *peer, zmq_msg_t *frames,
      size_t n)
{
    s_port_t *p = arg;
    s_net_t *net = p->net;
    int target = peer ? s_find(net, peer) : -1;
    if ((peer && (target < 0 || net->down[target])) || net->nq == S_MAXQ
        || n > S_MAXF) {
        if (route)
            zmq_msg_close(route);
        for (size_t i = 0; i < n; i++)
            zmq_msg_close(&frames[i]);
        return TELEM_ECONN;
    }
    s_out_t *o = &net->q[net->nq++];
    memset(o, 0, sizeof *o);
    o->from = p->idx;
    snprintf(o->to, sizeof o->to, "%s", peer ? peer : "");
    if (route) {
        snprintf(o->route, sizeof o->route, "%.*s", (int) zmq_msg_size(route),
                 (const char *) zmq_msg_data(route));
        zmq_msg_close(route);
    }
    for (size_t i = 0; i < n; i++) {
        zmq_msg_init(&o->f[i]);
        zmq_msg_move(&o->f[i], &frames[i]);
    }
    o->n = n;
    return 0;
}

static inline void
s_route(zmq_msg_t *m, const char *who)
{
    zmq_msg_init_size(m, strlen(who));
    memcpy(zmq_msg_data(m), who, strlen(who));
}

/* Delivers everything queued until nothing moves; flushes after each. */
static inline void
s_pump(s_net_t *net)
{
    for (int round = 0; round < 100; round++) {
        for (int i = 0; i < net->nsrv; i++)
            if (net->srv[i])
                ddict_server_flush(net->srv[i]);
        if (net->nq == 0)
            return;
        s_out_t o = net->q[0];
        memmove(net->q, net->q + 1, (size_t) --net->nq * sizeof o);
        int to = o.to[0] ? s_find(net, o.to) : -1;
        int back = o.route[0] == '@' ? s_find(net, o.route + 1) : -1;
        if (to >= 0 && net->srv[to]) {
            zmq_msg_t r;
            char who[40];
            snprintf(who, sizeof who, "@%s", net->name[o.from]);
            s_route(&r, who);
            ddict_server_request(net->srv[to], &r, o.f, o.n);
        } else if (back >= 0 && net->srv[back]) {
            ddict_server_peer_reply(net->srv[back], net->name[o.from], o.f,
                                    o.n);
        } else if (net->nin < S_MAXQ) {
            net->inbox[net->nin++] = o;
        } else {
            for (size_t i = 0; i < o.n; i++)
                zmq_msg_close(&o.f[i]);
        }
        round = 0;
    }
}

static inline ddict_server_t *
s_start(s_net_t *net, int i, const char *const *nodes, int n, int replicas)
{
    char log[300];
    snprintf(log, sizeof log, "%s/%s.log", net->dir, net->name[i]);
    ddict_server_config_t cfg = { net->name[i], log, nodes, n, replicas,
                                  DDICT_SYNC_NONE, net->compact_min };
    net->port[i].net = net;
    net->port[i].idx = i;
    int err = 0;
    net->srv[i] = ddict_server_new(&cfg, s_out, &net->port[i], &err);
    CHECK(net->srv[i] != NULL && err == 0);
    return net->srv[i];
}

static inline void
s_inbox_clear(s_net_t *net)
{
    for (int k = 0; k < net->nin; k++)
        for (size_t i = 0; i < net->inbox[k].n; i++)
            zmq_msg_close(&net->inbox[k].f[i]);
    net->nin = 0;
}

/* Sends one request op to server `to` as client "c"; values in vals. */
static inline void
s_request(s_net_t *net, int to, uint64_t id, uint64_t epoch, const char *ns,
          const telem_dict_op_t *ops, uint32_t nops, const char *const *vals)
{
    const void *data;
    size_t size;
    telem_dict_req_t m = { id, epoch, ns, ops, nops };
    CHECK(telem_proto_encode_dict_req(net->enc, TELEM_MSG_DICT_REQ, &m, &data,
                                      &size)
          == 0);
    zmq_msg_t f[S_MAXF], route;
    size_t n = 1;
    zmq_msg_init_size(&f[0], size);
    memcpy(zmq_msg_data(&f[0]), data, size);
    for (uint32_t i = 0; i < nops && vals; i++)
        if (ops[i].val)
            s_route(&f[n++], vals[i]);
    s_route(&route, "client");
    ddict_server_request(net->srv[to], &route, f, n);
}

/* The reply with id `id` in the inbox, decoded into *m; NULL if none. */
static inline s_out_t *
s_reply(s_net_t *net, uint64_t id, telem_msg_t *m)
{
    for (int k = 0; k < net->nin; k++) {
        s_out_t *o = &net->inbox[k];
        if (telem_proto_decode(net->dec, zmq_msg_data(&o->f[0]),
                               zmq_msg_size(&o->f[0]), m) == 0
            && (int) m->type == TELEM_MSG_DICT_REP && m->u.dict_rep.id == id)
            return o;
    }
    return NULL;
}

/* The reply with id `id` in the inbox: result i's code, version, value. */
static inline int
s_result(s_net_t *net, uint64_t id, uint32_t i, uint64_t *version,
         char *val, size_t size)
{
    telem_msg_t m;
    s_out_t *o = s_reply(net, id, &m);
    if (!o)
        return 1;    /* no such reply */
    const telem_dict_rep_t *r = &m.u.dict_rep;
    if (r->code || i >= r->nres)
        return r->code ? r->code : 1;
    size_t frame = 1;
    for (uint32_t j = 0; j < i; j++)
        frame += r->res[j].val;
    if (version)
        *version = r->res[i].version;
    const void *bytes = NULL;
    size_t len = 0;
    if (r->res[i].ival) {                 /* small: in the header */
        bytes = r->res[i].ival;
        len = r->res[i].ivlen;
    } else if (r->res[i].val && frame < o->n) {
        bytes = zmq_msg_data(&o->f[frame]);
        len = zmq_msg_size(&o->f[frame]);
    }
    if (val && bytes) {
        len = len < size ? len : size - 1;
        memcpy(val, bytes, len);
        val[len] = '\0';
    }
    return r->res[i].code;
}

static inline telem_dict_op_t
s_op(uint8_t op, const char *key, uint64_t arg)
{
    telem_dict_op_t o = { .op = op,
                          .val = op == TELEM_DOP_PUT || op == TELEM_DOP_CAS,
                          .key = (const uint8_t *) key,
                          .klen = (uint32_t) strlen(key), .arg = arg };
    return o;
}

/* One op to server `to`, pumped; returns its result code. */
static inline int
s_one(s_net_t *net, int to, uint64_t id, uint8_t op, const char *key,
      const char *val, uint64_t arg, uint64_t *version, char *out, size_t size)
{
    telem_dict_op_t o = s_op(op, key, arg);
    const char *vals[1] = { val };
    s_inbox_clear(net);
    s_request(net, to, id, 0, "ns", &o, 1, vals);
    s_pump(net);
    return s_result(net, id, 0, version, out, size);
}

static inline void
s_net_init(s_net_t *net)
{
    memset(net, 0, sizeof *net);
    net->enc = telem_proto_encoder_new();
    net->dec = telem_proto_decoder_new();
    snprintf(net->dir, sizeof net->dir, "/tmp/test_dict_server.XXXXXX");
    CHECK(mkdtemp(net->dir) != NULL);
    net->name[0] = "n1";
    net->name[1] = "n2";
    net->name[2] = "n3";
    net->nsrv = 3;
}

/* The two names of a replicated pair, n1 and n2. */
static const char *const s_pair[2] = { "n1", "n2" };

/* A net of two servers, n1 and n2, replication 2; compact_min 0 keeps
 * the default compaction threshold. */
static inline void
s_net_two(s_net_t *net, size_t compact_min)
{
    s_net_init(net);
    net->nsrv = 2;
    if (compact_min)
        net->compact_min = compact_min;
    s_start(net, 0, s_pair, 2, 2);
    s_start(net, 1, s_pair, 2, 2);
}

static inline void
s_net_fini(s_net_t *net)
{
    s_inbox_clear(net);
    for (int k = 0; k < net->nq; k++)
        for (size_t i = 0; i < net->q[k].n; i++)
            zmq_msg_close(&net->q[k].f[i]);
    for (int i = 0; i < net->nsrv; i++) {
        ddict_server_destroy(&net->srv[i]);
        char log[300];
        snprintf(log, sizeof log, "%s/%s.log", net->dir, net->name[i]);
        unlink(log);
    }
    rmdir(net->dir);
    telem_proto_encoder_destroy(&net->enc);
    telem_proto_decoder_destroy(&net->dec);
}

/* An admin request to server `to`; returns the reply's code, *rep (may
 * be NULL) gets the reply (strings point into the decoder). */
static inline int
s_admin(s_net_t *net, int to, uint64_t id, int op, uint64_t epoch,
        uint64_t prev, const char *const *nodes, int n,
        telem_dict_admin_rep_t *rep)
{
    telem_dict_admin_t m = { id, op, epoch, prev, 2, nodes, (uint32_t) n };
    const void *data;
    size_t size;
    CHECK(telem_proto_encode_dict_admin(net->enc, &m, &data, &size) == 0);
    zmq_msg_t f, route;
    zmq_msg_init_size(&f, size);
    memcpy(zmq_msg_data(&f), data, size);
    s_route(&route, "client");
    s_inbox_clear(net);
    ddict_server_request(net->srv[to], &route, &f, 1);
    s_pump(net);
    for (int k = 0; k < net->nin; k++) {
        telem_msg_t r;
        if (telem_proto_decode(net->dec, zmq_msg_data(&net->inbox[k].f[0]),
                               zmq_msg_size(&net->inbox[k].f[0]), &r) == 0
            && (int) r.type == TELEM_MSG_DICT_ADMIN_REP
            && r.u.dict_admin_rep.id == id) {
            if (rep)
                *rep = r.u.dict_admin_rep;
            return r.u.dict_admin_rep.code;
        }
    }
    return 1;
}

/* A key whose primary under nodes[0..n) with 2 replicas is nodes[want]. */
static inline void
s_key_on(const char *const *nodes, int n, int want, const char *prefix,
         char *key, size_t size)
{
    ddict_map_t *map = ddict_map_new(nodes, n, n > 1 ? 2 : 1, NULL);
    for (int i = 0;; i++) {
        snprintf(key, size, "%s%d", prefix, i);
        int owners[DDICT_REPLICAS_MAX];
        ddict_map_owners(map, ddict_hash_shard(key, strlen(key)), owners);
        if (owners[0] == want)
            break;
    }
    ddict_map_destroy(&map);
}

/* The frames after the header of the reply with id `id`: their count,
 * sizes (at most S_MAXF) and the bytes joined into out (size bytes). */
static inline int
s_frames(s_net_t *net, uint64_t id, size_t *sizes, char *out, size_t size)
{
    telem_msg_t m;
    s_out_t *o = s_reply(net, id, &m);
    if (!o)
        return -1;
    size_t at = 0;
    for (size_t i = 1; i < o->n; i++) {
        size_t n = zmq_msg_size(&o->f[i]);
        sizes[i - 1] = n;
        if (at + n < size)
            memcpy(out + at, zmq_msg_data(&o->f[i]), n);
        at += n;
    }
    out[at < size ? at : size - 1] = '\0';
    return (int) o->n - 1;
}

#endif
