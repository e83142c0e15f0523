/* bench_dict.c - telem's distributed dictionary against a real Redis server,
 * the same workload driven from C the same way, in one run.
 *
 * Cells: SET and GET, 64 B and 64 KiB values, 1 and 8 concurrent clients
 * (one thread and one connection each), one request per round trip or
 * pipelined 64 deep.  Every cell runs for a fixed time per system, the
 * systems alternate within each repetition (Redis, telem with replication
 * off, telem with replication 2 when a second node file is given) so that
 * drift on a shared machine hits all of them alike, and the median of the
 * repetitions is reported with the ratio telem / Redis.
 *
 * telem is driven through its public client API (ddict.h): ddict_put /
 * ddict_get for single requests, ddict_batch_* for pipelines.  Redis is
 * driven through hiredis: redisCommand for single requests,
 * redisAppendCommand + redisGetReply for pipelines.  Every reply is
 * checked (status, value length); any error ends the benchmark.
 *
 * A third column is the transport's floor for telem's own message shape:
 * the same requests (one message per round: a header frame that carries
 * the values of up to TELEM_DICT_INLINE_MAX bytes, and one frame per larger
 * value) sent through raw libzmq DEALER -> ROUTER to an echo server (this
 * program with --echo-server) that answers each at once with the reply's
 * shape, doing no work.  telem / floor says how much of the gap
 * to Redis is telem and how much is libzmq's I/O threads.
 *
 * With --redis-aof, a second Redis that appends every write to its
 * append-only file before replying (appendfsync no) runs the same cells:
 * telem's dictionary always writes its log, and with --sync none it has
 * that durability; the target's ratios stay against the Redis that keeps
 * nothing.
 *
 * The servers are started by bench/dict_vs_redis.sh; this program only
 * connects to them: Redis at --redis HOST:PORT, telem through node files,
 * the echo server at --zmq ENDPOINT.
 */
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <getopt.h>

#include <zmq.h>

#include "bench_common.h"
#include "ddict.h"
#include "telem_proto_dict.h"

#define S_KEYS_SMALL 10000
#define S_KEYS_LARGE 256
#define S_DEPTH 64
#define S_MAX_CLIENTS 64
#define S_REPS_MAX 9

enum { SYS_REDIS, SYS_ZMQ, SYS_TELEM1, SYS_TELEM2, SYS_AOF, SYS_N };
static const char *const s_sys_name[SYS_N] = { "redis", "zmq floor",
                                               "telem r=1", "telem r=2",
                                               "redis aof" };

typedef struct {
    const char *redis_host;
    int redis_port;
    const char *aof_host;          /* a Redis with an append-only file */
    int aof_port;                  /* 0: none */
    const char *nodefile[SYS_N];   /* [SYS_TELEM1], [SYS_TELEM2]; for
                                      SYS_ZMQ the echo endpoint */
    double seconds;
    int reps;
    int clients_max;
    const char *only;              /* "OP:SIZE:CLIENTS:DEPTH" or NULL */
    void *zctx;                    /* libzmq context of the floor */
} s_opts_t;

typedef struct {
    int sys;
    int is_get;
    size_t vsize;
    int clients;
    int depth;
} s_cell_t;

typedef struct {
    const s_opts_t *o;
    const s_cell_t *cell;
    int tid;
    const uint8_t *val;
    pthread_barrier_t *start;
    _Atomic int64_t *t0;
    int64_t seconds_ns;
    uint64_t ops;
    int64_t t_end;
    char err[200];
} s_thread_t;

/* ---------------------------------------------------------------- keys */

static int
s_nkeys(size_t vsize)
{
    return vsize > 1024 ? S_KEYS_LARGE : S_KEYS_SMALL;
}

static int
s_key(char *buf, int tid, uint64_t i, size_t vsize)
{
    uint64_t k = ((uint64_t) tid * 7919u + i) % (uint64_t) s_nkeys(vsize);
    return snprintf(buf, 32, "b%zu:%06llu", vsize, (unsigned long long) k);
}

/* ---------------------------------------------------------------- redis */

static int
s_is_redis(int sys)
{
    return sys == SYS_REDIS || sys == SYS_AOF;
}

static redisContext *
s_redis_connect(const s_opts_t *o, int sys, char *err, size_t size)
{
    struct timeval tv = { 10, 0 };
    redisContext *c = sys == SYS_AOF
        ? redisConnectWithTimeout(o->aof_host, o->aof_port, tv)
        : redisConnectWithTimeout(o->redis_host, o->redis_port, tv);
    if (!c || c->err) {
        snprintf(err, size, "redis connect: %s", c ? c->errstr : "no memory");
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    return c;
}

/* Checks one reply of a SET (status OK) or GET (string of vsize bytes). */
static int
s_redis_check(redisReply *r, const s_cell_t *cell, char *err, size_t size)
{
    int ok = r && (cell->is_get ? r->type == REDIS_REPLY_STRING
                                      && r->len == cell->vsize
                                : r->type == REDIS_REPLY_STATUS);
    if (!ok)
        snprintf(err, size, "redis: unexpected reply (%s)",
                 r && r->type == REDIS_REPLY_ERROR ? r->str : "type/size");
    freeReplyObject(r);
    return ok ? 0 : -1;
}

/* One round: `depth` requests, then their replies. */
static int
s_redis_round(redisContext *c, s_thread_t *t, uint64_t *i)
{
    const s_cell_t *cell = t->cell;
    char key[32];
    for (int d = 0; d < cell->depth; d++) {
        int kl = s_key(key, t->tid, (*i)++, cell->vsize);
        int rc = cell->is_get
                     ? redisAppendCommand(c, "GET %b", key, (size_t) kl)
                     : redisAppendCommand(c, "SET %b %b", key, (size_t) kl,
                                          t->val, cell->vsize);
        if (rc != REDIS_OK) {
            snprintf(t->err, sizeof t->err, "redis append: %s", c->errstr);
            return -1;
        }
    }
    for (int d = 0; d < cell->depth; d++) {
        void *r = NULL;
        if (redisGetReply(c, &r) != REDIS_OK) {
            snprintf(t->err, sizeof t->err, "redis: %s", c->errstr);
            return -1;
        }
        if (s_redis_check(r, cell, t->err, sizeof t->err))
            return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- floor */

/* The header frame of a floor request: op, ops in the round, value size. */
typedef struct {
    uint8_t is_get;
    uint32_t n;
    uint32_t vsize;
} s_floor_hdr_t;

static void *
s_zmq_connect(const s_opts_t *o, char *err, size_t size)
{
    void *z = zmq_socket(o->zctx, ZMQ_DEALER);
    int zero = 0;
    if (z)
        zmq_setsockopt(z, ZMQ_LINGER, &zero, sizeof zero);
    if (!z || zmq_connect(z, o->nodefile[SYS_ZMQ]) != 0) {
        snprintf(err, size, "zmq connect %s: %s", o->nodefile[SYS_ZMQ],
                 zmq_strerror(zmq_errno()));
        if (z)
            zmq_close(z);
        return NULL;
    }
    return z;
}

/* Values that telem carries inside its header frames. */
static int
s_inline(size_t vsize)
{
    return vsize <= TELEM_DICT_INLINE_MAX;
}

/* Like telem's client: a header frame (with the keys, here their count
 * stands in, and the small values of puts), a copied value frame per
 * larger put; waits for the whole reply. */
static int
s_zmq_round(void *z, s_thread_t *t, uint64_t *i)
{
    const s_cell_t *cell = t->cell;
    s_floor_hdr_t h = { (uint8_t) cell->is_get, (uint32_t) cell->depth,
                        (uint32_t) cell->vsize };
    int small = s_inline(cell->vsize);
    int framed = !cell->is_get && !small;
    zmq_msg_t hm;
    size_t hsize = sizeof h + (!cell->is_get && small
                               ? (size_t) cell->depth * cell->vsize : 0);
    int rc = zmq_msg_init_size(&hm, hsize) != 0;
    if (rc == 0) {
        memcpy(zmq_msg_data(&hm), &h, sizeof h);
        for (size_t k = 0; hsize > sizeof h && k < (size_t) cell->depth; k++)
            memcpy((uint8_t *) zmq_msg_data(&hm) + sizeof h
                   + k * cell->vsize, t->val, cell->vsize);
        rc = zmq_msg_send(&hm, z, framed ? ZMQ_SNDMORE : 0) < 0;
    }
    for (int k = 0; rc == 0 && framed && k < cell->depth; k++)
        rc = zmq_send(z, t->val, cell->vsize,
                      k + 1 < cell->depth ? ZMQ_SNDMORE : 0) < 0;
    zmq_msg_t m;
    zmq_msg_init(&m);
    size_t frames = 0;
    do {
        rc = rc ? rc : zmq_msg_recv(&m, z, 0) < 0;
        frames++;
    } while (rc == 0 && zmq_msg_more(&m));
    zmq_msg_close(&m);
    if (rc || frames != (cell->is_get && !small ? (size_t) cell->depth + 1
                                                : 1)) {
        snprintf(t->err, sizeof t->err, "zmq floor: %s",
                 rc ? zmq_strerror(zmq_errno()) : "bad reply");
        return -1;
    }
    *i += (uint64_t) cell->depth;
    return 0;
}

/* ---------------------------------------------------------------- telem */

static int
s_telem_single(ddict_t *d, s_thread_t *t, uint64_t *i)
{
    const s_cell_t *cell = t->cell;
    char key[32];
    int kl = s_key(key, t->tid, (*i)++, cell->vsize);
    int rc;
    if (cell->is_get) {
        void *v = NULL;
        size_t vl = 0;
        rc = ddict_get(d, key, (size_t) kl, &v, &vl, NULL);
        if (rc == 0 && vl != cell->vsize)
            rc = TELEM_EPROTO;
        free(v);
    } else {
        rc = ddict_put(d, key, (size_t) kl, t->val, cell->vsize, NULL);
    }
    if (rc)
        snprintf(t->err, sizeof t->err, "telem: %s", telem_strerror(rc));
    return rc;
}

static int
s_telem_round(ddict_t *d, ddict_batch_t *b, s_thread_t *t, uint64_t *i)
{
    const s_cell_t *cell = t->cell;
    if (cell->depth == 1)
        return s_telem_single(d, t, i);
    char keys[S_DEPTH][32];
    ddict_batch_clear(b);
    for (int k = 0; k < cell->depth; k++) {
        int kl = s_key(keys[k], t->tid, (*i)++, cell->vsize);
        if (cell->is_get)
            ddict_batch_get(b, keys[k], (size_t) kl);
        else
            ddict_batch_put(b, keys[k], (size_t) kl, t->val, cell->vsize);
    }
    int rc = ddict_batch_exec(d, b);
    for (int k = 0; rc == 0 && k < cell->depth; k++) {
        size_t vl = 0;
        rc = ddict_batch_result(b, (size_t) k, NULL, &vl, NULL);
        if (rc == 0 && cell->is_get && vl != cell->vsize)
            rc = TELEM_EPROTO;
    }
    if (rc)
        snprintf(t->err, sizeof t->err, "telem batch: %s",
                 telem_strerror(rc));
    return rc;
}

/* ---------------------------------------------------------------- cells */

/* One round on whichever connection the thread has. */
static int
s_round(s_thread_t *t, redisContext *rc, void *z, ddict_t *d,
        ddict_batch_t *b, uint64_t *i)
{
    if (rc)
        return s_redis_round(rc, t, i);
    if (z)
        return s_zmq_round(z, t, i);
    return s_telem_round(d, b, t, i);
}

/* Runs rounds until the shared clock passes seconds_ns; 0 or -1. */
static int
s_loop(s_thread_t *t, redisContext *rc, void *z, ddict_t *d,
       ddict_batch_t *b)
{
    pthread_barrier_wait(t->start);
    int64_t expect = 0;
    int64_t now = bench_now_ns();
    atomic_compare_exchange_strong(t->t0, &expect, now);
    int64_t stop = atomic_load(t->t0) + t->seconds_ns;
    uint64_t i = 0;
    int r = 0;
    while (r == 0 && bench_now_ns() < stop) {
        r = s_round(t, rc, z, d, b, &i);
        if (r == 0)
            t->ops += (uint64_t) t->cell->depth;
    }
    t->t_end = bench_now_ns();
    return r;
}

static void *
s_thread(void *arg)
{
    s_thread_t *t = arg;
    redisContext *rc = NULL;
    void *z = NULL;
    ddict_t *d = NULL;
    ddict_batch_t *b = ddict_batch_new();
    int err = 0;
    if (s_is_redis(t->cell->sys))
        rc = s_redis_connect(t->o, t->cell->sys, t->err, sizeof t->err);
    else if (t->cell->sys == SYS_ZMQ)
        z = s_zmq_connect(t->o, t->err, sizeof t->err);
    else if (!(d = ddict_open(t->o->nodefile[t->cell->sys], "bench", 10000,
                              &err)))
        snprintf(t->err, sizeof t->err, "ddict_open: %s",
                 telem_strerror(err));
    if (rc || z || d)
        s_loop(t, rc, z, d, b);
    else
        pthread_barrier_wait(t->start);   /* the error is in t->err */
    if (z)
        zmq_close(z);
    redisFree(rc);
    ddict_close(&d);
    ddict_batch_destroy(&b);
    return NULL;
}

/* Runs one cell once; returns ops/s.  Exits on any error. */
static double
s_run_cell(const s_opts_t *o, const s_cell_t *cell, const uint8_t *val)
{
    s_thread_t t[S_MAX_CLIENTS];
    pthread_t th[S_MAX_CLIENTS];
    pthread_barrier_t start;
    _Atomic int64_t t0 = 0;
    pthread_barrier_init(&start, NULL, (unsigned) cell->clients);
    for (int k = 0; k < cell->clients; k++) {
        memset(&t[k], 0, sizeof t[k]);
        t[k].o = o;
        t[k].cell = cell;
        t[k].tid = k;
        t[k].val = val;
        t[k].start = &start;
        t[k].t0 = &t0;
        t[k].seconds_ns = (int64_t) (o->seconds * 1e9);
        pthread_create(&th[k], NULL, s_thread, &t[k]);
    }
    uint64_t ops = 0;
    int64_t end = 0;
    for (int k = 0; k < cell->clients; k++) {
        pthread_join(th[k], NULL);
        if (t[k].err[0])
            bench_die("bench_dict", "%s, client %d: %s",
                      s_sys_name[cell->sys], k, t[k].err);
        ops += t[k].ops;
        if (t[k].t_end > end)
            end = t[k].t_end;
    }
    pthread_barrier_destroy(&start);
    return (double) ops / ((double) (end - t0) / 1e9);
}

static int
s_on(const s_opts_t *o, int sys)
{
    if (sys == SYS_AOF)
        return o->aof_port > 0;
    return sys == SYS_REDIS || o->nodefile[sys] != NULL;
}

/* Writes every key a GET cell reads, on one system; exits on error. */
static void
s_fill_one(const s_opts_t *o, int sys, size_t vsize, const uint8_t *val)
{
    s_cell_t cell = { sys, 0, vsize, 1, S_DEPTH };
    s_thread_t t;
    memset(&t, 0, sizeof t);
    t.o = o;
    t.cell = &cell;
    t.val = val;
    int err = 0;
    redisContext *rc = NULL;
    ddict_t *d = NULL;
    if (s_is_redis(sys))
        rc = s_redis_connect(o, sys, t.err, sizeof t.err);
    else
        d = ddict_open(o->nodefile[sys], "bench", 10000, &err);
    ddict_batch_t *b = ddict_batch_new();
    uint64_t i = 0;
    int r = rc || d ? 0 : -1;
    while (r == 0 && i < (uint64_t) s_nkeys(vsize))
        r = rc ? s_redis_round(rc, &t, &i) : s_telem_round(d, b, &t, &i);
    if (r)
        bench_die("bench_dict", "fill %s: %s", s_sys_name[sys],
                  t.err[0] ? t.err : telem_strerror(err));
    redisFree(rc);
    ddict_close(&d);
    ddict_batch_destroy(&b);
}

static void
s_fill(const s_opts_t *o, size_t vsize, const uint8_t *val)
{
    for (int sys = 0; sys < SYS_N; sys++)
        if (sys != SYS_ZMQ && s_on(o, sys))
            s_fill_one(o, sys, vsize, val);
}

/* ---------------------------------------------------------------- report */

static void
s_print_row(const s_opts_t *o, const s_cell_t *cell, double med[SYS_N])
{
    printf("%-4s %6s %3d %3d %9.0f", cell->is_get ? "GET" : "SET",
           cell->vsize > 1024 ? "64KiB" : "64B", cell->clients, cell->depth,
           med[SYS_REDIS]);
    if (s_on(o, SYS_ZMQ))
        printf(" %9.0f", med[SYS_ZMQ]);
    else
        printf(" %9s", "-");
    for (int sys = SYS_TELEM1; sys <= SYS_TELEM2; sys++) {
        if (!s_on(o, sys)) {
            printf(" %9s %5s %4s", "-", "-", "-");
            continue;
        }
        double ratio = med[sys] / med[SYS_REDIS];
        double target = sys == SYS_TELEM1 ? 1.0 : 0.5;
        printf(" %9.0f %5.2f %4s", med[sys], ratio,
               ratio >= target ? "met" : "MISS");
    }
    if (s_on(o, SYS_ZMQ))
        printf(" %6.2f", med[SYS_TELEM1] / med[SYS_ZMQ]);
    else
        printf(" %6s", "-");
    if (s_on(o, SYS_AOF))
        printf(" %9.0f %6.2f", med[SYS_AOF], med[SYS_TELEM1] / med[SYS_AOF]);
    printf("\n");
    for (int sys = SYS_TELEM1; sys <= SYS_TELEM2; sys++) {
        if (!s_on(o, sys))
            continue;
        double ratio = med[sys] / med[SYS_REDIS];
        double target = sys == SYS_TELEM1 ? 1.0 : 0.5;
        char name[128], tgt[32], peer[48], r[32];
        snprintf(name, sizeof name, "dictionary %s %s, %d clients x %d deep, "
                 "replication %s", cell->is_get ? "GET" : "SET",
                 cell->vsize > 1024 ? "64 KiB" : "64 B", cell->clients,
                 cell->depth, sys == SYS_TELEM1 ? "off" : "2");
        snprintf(tgt, sizeof tgt, ">= %.1fx Redis", target);
        snprintf(peer, sizeof peer, "Redis %.0f/s", med[SYS_REDIS]);
        snprintf(r, sizeof r, "%.2f", ratio);
        bench_figure(name, tgt, peer, r, ratio >= target, "%.0f/s", med[sys]);
    }
    fflush(stdout);
}

static void
s_cell_all(const s_opts_t *o, s_cell_t *cell, const uint8_t *val)
{
    double v[SYS_N][S_REPS_MAX];
    double med[SYS_N] = { 0 };
    for (int rep = 0; rep < o->reps; rep++)
        for (int sys = 0; sys < SYS_N; sys++) {
            if (!s_on(o, sys))
                continue;
            cell->sys = sys;
            v[sys][rep] = s_run_cell(o, cell, val);
        }
    for (int sys = 0; sys < SYS_N; sys++)
        if (s_on(o, sys))
            med[sys] = bench_median_d(v[sys], (size_t) o->reps);
    s_print_row(o, cell, med);
}

/* 1 if the cell passes --only (e.g. "SET:65536:1:64", "*" any field). */
static int
s_selected(const s_opts_t *o, const s_cell_t *cell)
{
    if (!o->only)
        return 1;
    char want[4][32] = { "*", "*", "*", "*" };
    sscanf(o->only, "%31[^:]:%31[^:]:%31[^:]:%31s", want[0], want[1],
           want[2], want[3]);
    char have[4][32];
    snprintf(have[0], 32, "%s", cell->is_get ? "GET" : "SET");
    snprintf(have[1], 32, "%zu", cell->vsize);
    snprintf(have[2], 32, "%d", cell->clients);
    snprintf(have[3], 32, "%d", cell->depth);
    for (int i = 0; i < 4; i++)
        if (strcmp(want[i], "*") != 0 && strcmp(want[i], have[i]) != 0)
            return 0;
    return 1;
}

static void
s_run_all(const s_opts_t *o)
{
    static const size_t sizes[2] = { 64, 65536 };
    const int clients[2] = { 1, o->clients_max };
    static const int depths[2] = { 1, S_DEPTH };
    printf("%-4s %6s %3s %3s %9s %9s %9s %5s %4s %9s %5s %4s %6s", "op",
           "value", "cli", "dep", "redis/s", "zmqfloor", "telem r=1",
           "/red", "1.0?", "telem r=2", "/red", "0.5?", "t1/flr");
    if (s_on(o, SYS_AOF))
        printf(" %9s %6s", "aof/s", "t1/aof");
    printf("\n");
    for (int s = 0; s < 2; s++) {
        uint8_t *val = malloc(sizes[s]);
        if (!val)
            bench_die("bench_dict", "out of memory");
        for (size_t k = 0; k < sizes[s]; k++)
            val[k] = (uint8_t) (k * 131u + 7u);
        s_fill(o, sizes[s], val);
        for (int g = 0; g < 2; g++)
            for (int c = 0; c < 2; c++)
                for (int dp = 0; dp < 2; dp++) {
                    s_cell_t cell = { 0, g, sizes[s], clients[c], depths[dp] };
                    if (s_selected(o, &cell))
                        s_cell_all(o, &cell, val);
                }
        free(val);
    }
}

/* ---------------------------------------------------------------- echo */

/* The floor's server: answers every request at once with the shape of
 * telem's reply: a header frame, which for gets of small values holds
 * them (copied, as telem copies them into its header), and for gets of
 * larger ones one value frame per op sent from one shared buffer without
 * a copy, as telem sends stored values. */
static int
s_echo_server(void)
{
    void *ctx = zmq_ctx_new();
    void *r = zmq_socket(ctx, ZMQ_ROUTER);
    char ep[256];
    size_t len = sizeof ep;
    static uint8_t vals[65536];
    if (!r || zmq_bind(r, "tcp://127.0.0.1:*") != 0
        || zmq_getsockopt(r, ZMQ_LAST_ENDPOINT, ep, &len) != 0)
        bench_die("bench_dict --echo-server", "%s",
                  zmq_strerror(zmq_errno()));
    printf("endpoint\t%s\n", ep);
    fflush(stdout);
    for (;;) {
        zmq_msg_t id, m;
        zmq_msg_init(&id);
        zmq_msg_init(&m);
        if (zmq_msg_recv(&id, r, 0) < 0 || zmq_msg_recv(&m, r, 0) < 0)
            break;
        s_floor_hdr_t h = { 0, 0, 0 };
        if (zmq_msg_size(&m) == sizeof h)
            memcpy(&h, zmq_msg_data(&m), sizeof h);
        while (zmq_msg_more(&m) && zmq_msg_recv(&m, r, 0) >= 0)
            ;
        uint32_t n = h.is_get ? h.n : 0;
        size_t vsize = h.vsize <= sizeof vals ? h.vsize : sizeof vals;
        zmq_msg_send(&id, r, ZMQ_SNDMORE);
        size_t hsize = 14 + (s_inline(vsize) ? n * vsize : 0);
        zmq_msg_t hm;
        if (zmq_msg_init_size(&hm, hsize) != 0)
            break;
        memcpy(zmq_msg_data(&hm), "hdr-of-a-reply", 14);
        for (size_t k = 0; hsize > 14 && k < n; k++)
            memcpy((uint8_t *) zmq_msg_data(&hm) + 14 + k * vsize, vals,
                   vsize);
        if (s_inline(vsize))
            n = 0;
        zmq_msg_send(&hm, r, n ? ZMQ_SNDMORE : 0);
        for (uint32_t k = 0; k < n; k++) {
            zmq_msg_t v;
            zmq_msg_init_data(&v, vals, vsize, NULL, NULL);
            zmq_msg_send(&v, r, k + 1 < n ? ZMQ_SNDMORE : 0);
        }
        zmq_msg_close(&m);
    }
    return 0;
}

/* ---------------------------------------------------------------- main */

static const char s_usage[] =
"Usage: bench_dict --redis HOST:PORT --nodefile FILE [--nodefile2 FILE]\n"
"                  [--redis-aof HOST:PORT] [--zmq ENDPOINT]\n"
"                  [--seconds S] [--reps N] [--clients N] [--only CELLS]\n"
"Compares telem's dictionary with Redis, same workload, same run.\n"
"  --redis HOST:PORT  a running redis-server (the target's reference)\n"
"  --redis-aof HOST:PORT  a second redis-server that writes an append-only\n"
"                     file (appendfsync no, like telem_dictd --sync none):\n"
"                     the same durability as telem; extra columns\n"
"  --nodefile FILE    node file of a telem dictionary with replication off\n"
"  --nodefile2 FILE   node file of one with replication 2 (optional)\n"
"  --zmq ENDPOINT     a bench_dict --echo-server, for the floor column\n"
"  --seconds S        time per cell and system (default 1.0)\n"
"  --reps N           repetitions, the median is reported (default 3)\n"
"  --clients N        concurrent clients of the wide cells (default 8)\n"
"  --only OP:SIZE:CLIENTS:DEPTH  run only matching cells (* matches any),\n"
"                     e.g. SET:65536:*:64\n"
"       bench_dict --echo-server\n"
"  binds a raw libzmq echo server on tcp://127.0.0.1:*, prints\n"
"  'endpoint<TAB>EP' and serves until killed.\n"
"Normally started by bench/dict_vs_redis.sh, which starts the servers.\n";

static int
s_parse(int argc, char **argv, s_opts_t *o)
{
    static const struct option longs[] = {
        { "redis", 1, 0, 'r' }, { "nodefile", 1, 0, 'n' },
        { "nodefile2", 1, 0, 'm' }, { "seconds", 1, 0, 's' },
        { "reps", 1, 0, 'k' }, { "clients", 1, 0, 'c' },
        { "only", 1, 0, 'o' }, { "zmq", 1, 0, 'z' },
        { "redis-aof", 1, 0, 'a' },
        { "help", 0, 0, 'h' }, { 0, 0, 0, 0 } };
    static char host[2][256];
    int c;
    while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        char *colon;
        int k = c == 'a';
        switch (c) {
        case 'r':
        case 'a':
            colon = strrchr(optarg, ':');
            if (!colon || colon - optarg >= (long) sizeof host[k])
                return 2;
            snprintf(host[k], sizeof host[k], "%.*s", (int) (colon - optarg),
                     optarg);
            if (k) {
                o->aof_host = host[k];
                o->aof_port = atoi(colon + 1);
                if (o->aof_port <= 0 || o->aof_port > 65535)
                    return 2;
            } else {
                o->redis_host = host[k];
                o->redis_port = atoi(colon + 1);
            }
            break;
        case 'n': o->nodefile[SYS_TELEM1] = optarg; break;
        case 'm': o->nodefile[SYS_TELEM2] = optarg; break;
        case 's': o->seconds = atof(optarg); break;
        case 'k': o->reps = atoi(optarg); break;
        case 'c': o->clients_max = atoi(optarg); break;
        case 'o': o->only = optarg; break;
        case 'z': o->nodefile[SYS_ZMQ] = optarg; break;
        case 'h': fputs(s_usage, stdout); exit(0);
        default: return 2;
        }
    }
    if (optind != argc || !o->redis_host || o->redis_port <= 0
        || o->redis_port > 65535 || !o->nodefile[SYS_TELEM1]
        || o->seconds <= 0 || o->seconds > 60 || o->reps < 1
        || o->reps > S_REPS_MAX || o->clients_max < 1
        || o->clients_max > S_MAX_CLIENTS)
        return 2;
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--echo-server") == 0)
        return s_echo_server();
    s_opts_t o = { .seconds = 1.0, .reps = 3, .clients_max = 8 };
    if (s_parse(argc, argv, &o) != 0) {
        fprintf(stderr, "bench_dict: bad command line\n%s", s_usage);
        return 2;
    }
    if (o.nodefile[SYS_ZMQ] && !(o.zctx = zmq_ctx_new()))
        bench_die("bench_dict", "zmq_ctx_new failed");
    bench_print_machine("bench_dict (telem dictionary vs Redis)");
    printf("# %.1f s per cell and system, median of %d, pipeline depth %d,"
           " keys %d (64 B) / %d (64 KiB)\n", o.seconds, o.reps, S_DEPTH,
           S_KEYS_SMALL, S_KEYS_LARGE);
    s_run_all(&o);
    if (o.zctx)
        zmq_ctx_term(o.zctx);
    return 0;
}
