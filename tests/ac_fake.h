/* ac_fake.h - fake telemd nodes for the analysis client's tests
 * (test_ac.c, test_ac_faults.c); the checks come from check.h.
 *
 * Each fake node is a thread with a real ROUTER socket on loopback TCP that
 * decodes requests with telem_proto and answers in a chosen way: normally,
 * never, with an error, late, with a stale reply first, too big, or with
 * garbage.  Everything here is static inline so that each test file uses
 * what it needs without unused-function warnings.
 */
#ifndef TELEM_TESTS_AC_FAKE_H
#define TELEM_TESTS_AC_FAKE_H

#include "check.h"
#include "ac.h"
#include "telem_proto.h"
#include "telem_time.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

/* ---- fake nodes -------------------------------------------------------- */

typedef enum {
    FAKE_OK,          /* answers every request */
    FAKE_SILENT,      /* reads requests, never answers */
    FAKE_ERROR,       /* answers TELEM_MSG_ERROR, TELEM_EINVAL */
    FAKE_NOTFOUND,    /* answers TELEM_MSG_ERROR, TELEM_ENOTFOUND */
    FAKE_LATE_FIRST,  /* answers its first request after late_ms */
    FAKE_STALE_FIRST, /* sends a reply with a wrong id before each answer */
    FAKE_BIG,         /* answers with a large reply */
    FAKE_GARBAGE      /* answers with bytes that are not a message */
} fake_mode_t;

typedef struct {
    char name[64];
    fake_mode_t mode;
    int late_ms;
    void *sock;
    char endpoint[128];
    pthread_t thread;
    atomic_int stop;
    telem_proto_encoder_t *enc;
    telem_proto_decoder_t *dec;
    pthread_mutex_t mu;       /* guards what follows */
    pthread_cond_t cond;
    int nrequests;
    int late_sent;            /* FAKE_LATE_FIRST: the late reply is out */
    int level;
    telem_query_t q;          /* last query (scalars only) */
    char filter[2][2][64];    /* last query's first two filters */
    int last_op;
    int64_t last_arg;
    unsigned char peer[32];   /* routing id of the last request's connection */
    size_t npeer;
} fake_t;

#define NPTS 3
#define BIG_PTS 20000

static inline void
s_sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long) (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static inline void
s_send(fake_t *f, zmq_msg_t *id, const void *data, size_t size)
{
    zmq_msg_t copy;
    zmq_msg_init(&copy);
    zmq_msg_copy(&copy, id);
    if (zmq_msg_send(&copy, f->sock, ZMQ_SNDMORE) < 0)
        zmq_msg_close(&copy);
    else
        zmq_send(f->sock, data, size, 0);
}

static inline int
s_wanted(const telem_query_t *q, const char *metric)
{
    if (q->nmetrics == 0)
        return 1;
    for (uint32_t i = 0; i < q->nmetrics; i++)
        if (strcmp(q->metrics[i], metric) == 0)
            return 1;
    return 0;
}

/* Series "cpu" {gpu=0, host} and "mem" {host}; values encode the request
 * number (seq * 1000 + point). */
static inline void
s_answer_query(fake_t *f, zmq_msg_t *id, const telem_query_t *q, int seq)
{
    static int64_t ts[BIG_PTS];
    static double vals[BIG_PTS];
    int64_t myts[NPTS];
    double myvals[NPTS];
    for (int i = 0; i < NPTS; i++) {
        myts[i] = INT64_C(1700000000000000000) + i;
        myvals[i] = seq * 1000 + i + 0.5;
    }
    uint32_t npts = NPTS, first = 0;
    if (q->flags & TELEM_QUERY_LIST)
        npts = 0;
    else if (q->flags & TELEM_QUERY_LATEST)
        first = NPTS - 1, npts = 1;
    telem_tag_t cpu_tags[2] = { { "gpu", "0" }, { "host", f->name } };
    telem_tag_t mem_tags[1] = { { "host", f->name } };
    telem_series_t all[2] = {
        { .metric = "cpu", .tags = cpu_tags, .ntags = 2, .unit = "%",
          .doc = "cpu busy", .ts = myts + first, .values = myvals + first,
          .npoints = npts },
        { .metric = "mem", .tags = mem_tags, .ntags = 1,
          .type = TELEM_METRIC_COUNTER, .unit = "B", .doc = "memory used",
          .ts = myts + first, .values = myvals + first, .npoints = npts },
    };
    telem_series_t out[2];
    uint32_t n = 0;
    for (int i = 0; i < 2; i++)
        if (s_wanted(q, all[i].metric))
            out[n++] = all[i];
    if (f->mode == FAKE_BIG) {
        out[0].ts = ts;
        out[0].values = vals;
        out[0].npoints = BIG_PTS;
    }
    telem_query_reply_t r = { .id = q->id, .node = f->name, .series = out,
                              .nseries = n };
    const void *data;
    size_t size;
    if (f->mode == FAKE_STALE_FIRST) {
        telem_query_reply_t stale = r;
        stale.id = q->id + 7;
        for (int i = 0; i < NPTS; i++)
            myvals[i] = -1;
        if (telem_proto_encode_query_reply(f->enc, &stale, &data, &size) == 0)
            s_send(f, id, data, size);
        for (int i = 0; i < NPTS; i++)
            myvals[i] = seq * 1000 + i + 0.5;
    }
    if (telem_proto_encode_query_reply(f->enc, &r, &data, &size) == 0)
        s_send(f, id, data, size);
}

static inline void
s_answer_control(fake_t *f, zmq_msg_t *id, const telem_control_t *c)
{
    pthread_mutex_lock(&f->mu);
    f->last_op = c->op;
    f->last_arg = c->arg;
    if (c->op == TELEM_CTL_SET_LEVEL)
        f->level = (int) c->arg;
    telem_control_reply_t r = {
        .id = c->id, .op = c->op, .synced = c->op == TELEM_CTL_SYNC,
        .status = { .node = f->name, .pid = 42, .level = f->level,
                    .nseries = 2, .npoints = 6, .mem_bytes = 4096,
                    .ingested = 6, .uptime_ns = TELEM_NS_PER_SEC },
    };
    pthread_mutex_unlock(&f->mu);
    const void *data;
    size_t size;
    if (telem_proto_encode_control_reply(f->enc, &r, &data, &size) == 0)
        s_send(f, id, data, size);
}

static inline void
s_remember(fake_t *f, const telem_msg_t *m, int *seq)
{
    pthread_mutex_lock(&f->mu);
    *seq = ++f->nrequests;
    if (m->type == TELEM_MSG_QUERY) {
        f->q = m->u.query;
        memset(f->filter, 0, sizeof f->filter);
        for (uint32_t i = 0; i < m->u.query.nfilters && i < 2; i++) {
            snprintf(f->filter[i][0], 64, "%s", m->u.query.filters[i].key);
            snprintf(f->filter[i][1], 64, "%s", m->u.query.filters[i].value);
        }
    }
    pthread_mutex_unlock(&f->mu);
}

static inline void
s_answer(fake_t *f, zmq_msg_t *id, const void *body, size_t size)
{
    telem_msg_t m;
    if (telem_proto_decode(f->dec, body, size, &m) != 0)
        return;
    int seq;
    s_remember(f, &m, &seq);
    uint64_t rid = m.type == TELEM_MSG_QUERY ? m.u.query.id : m.u.control.id;
    const void *data;
    size_t n;
    if (f->mode == FAKE_SILENT)
        return;
    if (f->mode == FAKE_GARBAGE) {
        s_send(f, id, "\xc1garbage", 8);
        return;
    }
    if (f->mode == FAKE_ERROR || f->mode == FAKE_NOTFOUND) {
        telem_error_msg_t e = {
            .id = rid, .message = "bad query",
            .code = f->mode == FAKE_ERROR ? TELEM_EINVAL : TELEM_ENOTFOUND };
        if (telem_proto_encode_error(f->enc, &e, &data, &n) == 0)
            s_send(f, id, data, n);
        return;
    }
    if (f->mode == FAKE_LATE_FIRST && seq == 1)
        s_sleep_ms(f->late_ms);
    if (m.type == TELEM_MSG_QUERY)
        s_answer_query(f, id, &m.u.query, seq);
    else if (m.type == TELEM_MSG_CONTROL)
        s_answer_control(f, id, &m.u.control);
    if (f->mode == FAKE_LATE_FIRST && seq == 1) {
        pthread_mutex_lock(&f->mu);
        f->late_sent = 1;
        pthread_cond_broadcast(&f->cond);
        pthread_mutex_unlock(&f->mu);
    }
}

static inline void *
s_fake_run(void *arg)
{
    fake_t *f = arg;
    zmq_msg_t id, body;
    zmq_msg_init(&id);
    zmq_msg_init(&body);
    while (!atomic_load(&f->stop)) {
        zmq_pollitem_t it = { .socket = f->sock, .events = ZMQ_POLLIN };
        if (zmq_poll(&it, 1, 20) <= 0)
            continue;
        if (zmq_msg_recv(&id, f->sock, 0) < 0 || !zmq_msg_more(&id))
            continue;
        if (zmq_msg_recv(&body, f->sock, 0) < 0)
            continue;
        while (zmq_msg_more(&body) && zmq_msg_recv(&body, f->sock, 0) >= 0)
            ;
        pthread_mutex_lock(&f->mu);
        f->npeer = zmq_msg_size(&id) < sizeof f->peer ? zmq_msg_size(&id) : 0;
        memcpy(f->peer, zmq_msg_data(&id), f->npeer);
        pthread_mutex_unlock(&f->mu);
        s_answer(f, &id, zmq_msg_data(&body), zmq_msg_size(&body));
    }
    zmq_msg_close(&id);
    zmq_msg_close(&body);
    return NULL;
}

static inline void
s_fake_start(fake_t *f, void *ctx, const char *name, fake_mode_t mode)
{
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    f->mode = mode;
    f->late_ms = 600;
    f->level = 2;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cond, NULL);
    f->enc = telem_proto_encoder_new();
    f->dec = telem_proto_decoder_new();
    f->sock = zmq_socket(ctx, ZMQ_ROUTER);
    int zero = 0;
    zmq_setsockopt(f->sock, ZMQ_LINGER, &zero, sizeof zero);
    if (zmq_bind(f->sock, "tcp://127.0.0.1:*") != 0) {
        fprintf(stderr, "bind: %s\n", zmq_strerror(zmq_errno()));
        exit(1);
    }
    size_t len = sizeof f->endpoint;
    zmq_getsockopt(f->sock, ZMQ_LAST_ENDPOINT, f->endpoint, &len);
    atomic_store(&f->stop, 0);
    pthread_create(&f->thread, NULL, s_fake_run, f);
}

static inline void
s_fake_stop(fake_t *f)
{
    atomic_store(&f->stop, 1);
    pthread_join(f->thread, NULL);
    zmq_close(f->sock);
    telem_proto_encoder_destroy(&f->enc);
    telem_proto_decoder_destroy(&f->dec);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cond);
}

/* A client for fakes[0..n). */
static inline ac_t *
s_client(fake_t *fakes, size_t n, int timeout_ms)
{
    const char *names[8], *eps[8];
    for (size_t i = 0; i < n; i++) {
        names[i] = fakes[i].name;
        eps[i] = fakes[i].endpoint;
    }
    int err = 1;
    ac_t *ac = ac_connect_nodes(names, eps, n, timeout_ms, &err);
    CHECK(ac != NULL);
    CHECK_INT(err, 0);
    if (!ac)
        exit(1);
    return ac;
}

static inline int64_t
s_elapsed_ms(int64_t t0)
{
    return (telem_mono_ns() - t0) / TELEM_NS_PER_MS;
}

/* Series from node `node` in r. */
static inline size_t
s_count_from(const ac_result_t *r, const char *node)
{
    size_t k = 0;
    for (size_t i = 0; i < ac_result_nseries(r); i++)
        k += strcmp(ac_result_series_node(r, i), node) == 0;
    return k;
}

static inline const char *
s_tag(const telem_series_t *s, const char *key)
{
    for (uint32_t i = 0; i < s->ntags; i++)
        if (strcmp(s->tags[i].key, key) == 0)
            return s->tags[i].value;
    return NULL;
}

#endif
