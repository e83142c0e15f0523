/* test_ac.c - the analysis client against fake nodes speaking the real codec.
 *
 * Each fake node is a thread with a real ROUTER socket on loopback TCP that
 * decodes requests with telem_proto and answers in a chosen way: normally,
 * never, with an error, late, with a stale reply first, too big, or with
 * garbage.  The checks are on behaviour (who is missing, which data came,
 * that a call returns within a generous multiple of its deadline), not on
 * tight timings.
 */
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

static int s_failures;
static int s_checks;

#define CHECK(cond)                                                          \
    do {                                                                     \
        s_checks++;                                                          \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                  \
            s_failures++;                                                    \
        }                                                                    \
    } while (0)

#define CHECK_INT(a, b)                                                      \
    do {                                                                     \
        long long a_ = (long long) (a), b_ = (long long) (b);                \
        s_checks++;                                                          \
        if (a_ != b_) {                                                      \
            fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", __FILE__,  \
                    __LINE__, #a, a_, b_);                                   \
            s_failures++;                                                    \
        }                                                                    \
    } while (0)

#define CHECK_STR(a, b)                                                      \
    do {                                                                     \
        const char *a_ = (a), *b_ = (b);                                     \
        s_checks++;                                                          \
        if (!a_ || strcmp(a_, b_) != 0) {                                    \
            fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n",        \
                    __FILE__, __LINE__, #a, a_ ? a_ : "(null)", b_);         \
            s_failures++;                                                    \
        }                                                                    \
    } while (0)

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
    telem_encoder_t *enc;
    telem_decoder_t *dec;
    pthread_mutex_t mu;       /* guards what follows */
    pthread_cond_t cond;
    int nrequests;
    int late_sent;            /* FAKE_LATE_FIRST: the late reply is out */
    int level;
    telem_query_t q;          /* last query (scalars only) */
    char filter[2][2][64];    /* last query's first two filters */
    int last_op;
    int64_t last_arg;
} fake_t;

#define NPTS 3
#define BIG_PTS 20000

static void
s_sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long) (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static void
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

static int
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
static void
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
        if (telem_encode_query_reply(f->enc, &stale, &data, &size) == 0)
            s_send(f, id, data, size);
        for (int i = 0; i < NPTS; i++)
            myvals[i] = seq * 1000 + i + 0.5;
    }
    if (telem_encode_query_reply(f->enc, &r, &data, &size) == 0)
        s_send(f, id, data, size);
}

static void
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
    if (telem_encode_control_reply(f->enc, &r, &data, &size) == 0)
        s_send(f, id, data, size);
}

static void
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

static void
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
        if (telem_encode_error(f->enc, &e, &data, &n) == 0)
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

static void *
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
        s_answer(f, &id, zmq_msg_data(&body), zmq_msg_size(&body));
    }
    zmq_msg_close(&id);
    zmq_msg_close(&body);
    return NULL;
}

static void
s_fake_start(fake_t *f, void *ctx, const char *name, fake_mode_t mode)
{
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    f->mode = mode;
    f->late_ms = 600;
    f->level = 2;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cond, NULL);
    f->enc = telem_encoder_new();
    f->dec = telem_decoder_new();
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

static void
s_fake_stop(fake_t *f)
{
    atomic_store(&f->stop, 1);
    pthread_join(f->thread, NULL);
    zmq_close(f->sock);
    telem_encoder_destroy(&f->enc);
    telem_decoder_destroy(&f->dec);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cond);
}

/* A client for fakes[0..n). */
static ac_t *
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

static int64_t
s_elapsed_ms(int64_t t0)
{
    return (telem_mono_ns() - t0) / TELEM_NS_PER_MS;
}

/* Series from node `node` in r. */
static size_t
s_count_from(const ac_result_t *r, const char *node)
{
    size_t k = 0;
    for (size_t i = 0; i < ac_result_nseries(r); i++)
        k += strcmp(ac_result_series_node(r, i), node) == 0;
    return k;
}

static const char *
s_tag(const telem_series_t *s, const char *key)
{
    for (uint32_t i = 0; i < s->ntags; i++)
        if (strcmp(s->tags[i].key, key) == 0)
            return s->tags[i].value;
    return NULL;
}

/* ---- tests ------------------------------------------------------------- */

static void
test_fanout_merges(void *ctx)
{
    fake_t f[3];
    s_fake_start(&f[0], ctx, "alpha", FAKE_OK);
    s_fake_start(&f[1], ctx, "beta node", FAKE_OK);
    s_fake_start(&f[2], ctx, "\xce\xb3 #3,x=y", FAKE_OK);
    ac_t *ac = s_client(f, 3, 10000);
    CHECK_INT(ac_node_count(ac), 3);
    ac_result_t *r = NULL;

    /* The catalog as a fresh client's first call (series without points). */
    CHECK_INT(ac_metrics(ac, &r), 0);
    CHECK_INT(ac_result_nseries(r), 6);
    ac_result_destroy(&r);
    CHECK_STR(ac_node_name(ac, 1), "beta node");
    CHECK_STR(ac_node_endpoint(ac, 2), f[2].endpoint);
    CHECK_INT(ac_node_find(ac, "\xce\xb3 #3,x=y"), 2);
    CHECK_INT(ac_node_find(ac, "nope"), -1);

    CHECK_INT(ac_query(ac, NULL, &r), 0);
    CHECK_INT(ac_result_nseries(r), 6);
    CHECK_INT(ac_result_nmissing(r), 0);
    for (size_t i = 0; i < ac_result_nseries(r); i++) {
        const telem_series_t *s = ac_result_series(r, i);
        CHECK_STR(s->metric, i < 3 ? "cpu" : "mem");
        CHECK_STR(s_tag(s, "host"), ac_result_series_node(r, i));
        CHECK_INT(s->npoints, NPTS);
        CHECK(s->values[2] == 2000 + 2 + 0.5);   /* request 2 */
        CHECK(s->ts[0] < s->ts[1] && s->ts[1] < s->ts[2]);
    }
    CHECK_STR(ac_result_series(r, 3)->unit, "B");
    CHECK_INT(ac_result_series(r, 3)->type, TELEM_METRIC_COUNTER);
    CHECK(ac_result_series(r, 6) == NULL);
    /* Sorted by metric, then tags: "alpha" < "beta node" < "\xce\xb3..." */
    CHECK_STR(ac_result_series_node(r, 0), "alpha");
    CHECK_STR(ac_result_series_node(r, 2), "\xce\xb3 #3,x=y");
    ac_result_destroy(&r);
    CHECK(r == NULL);

    /* A metric subset, the latest point, the catalog. */
    const char *mem[] = { "mem" };
    ac_query_t q = { .metrics = mem, .nmetrics = 1,
                     .flags = TELEM_QUERY_LATEST };
    CHECK_INT(ac_query(ac, &q, &r), 0);
    CHECK_INT(ac_result_nseries(r), 3);
    for (size_t i = 0; i < ac_result_nseries(r); i++) {
        CHECK_STR(ac_result_series(r, i)->metric, "mem");
        CHECK_INT(ac_result_series(r, i)->npoints, 1);
        CHECK(ac_result_series(r, i)->values[0] == 3000 + 2 + 0.5);
    }
    ac_result_destroy(&r);
    CHECK_INT(ac_metrics(ac, &r), 0);
    CHECK_INT(ac_result_nseries(r), 6);
    CHECK_INT(ac_result_series(r, 0)->npoints, 0);
    CHECK_STR(ac_result_series(r, 0)->doc, "cpu busy");
    ac_result_destroy(&r);

    ac_close(&ac);
    for (int i = 0; i < 3; i++)
        s_fake_stop(&f[i]);
}

static void
test_query_arguments(void *ctx)
{
    fake_t f[2];
    s_fake_start(&f[0], ctx, "alpha", FAKE_OK);
    s_fake_start(&f[1], ctx, "beta node", FAKE_OK);
    ac_t *ac = s_client(f, 2, 10000);
    ac_result_t *r = NULL;

    /* A node subset; an unknown node is refused before sending. */
    const char *only[] = { "beta node", "beta node" };
    ac_query_t qn = { .nodes = only, .nnodes = 2 };
    CHECK_INT(ac_query(ac, &qn, &r), 0);
    CHECK_INT(ac_result_nseries(r), 2);
    CHECK_INT(s_count_from(r, "beta node"), 2);
    ac_result_destroy(&r);
    const char *bad[] = { "gamma" };
    ac_query_t qb = { .nodes = bad, .nnodes = 1 };
    CHECK_INT(ac_query(ac, &qb, &r), TELEM_ENOTFOUND);
    CHECK(r == NULL);

    /* What goes on the wire: relative and default times, filters. */
    telem_tag_t tags[2] = { { "gpu", "0" }, { "rank", "*" } };
    ac_query_t qt = { .start_ns = -60 * TELEM_NS_PER_SEC, .max_points = 7,
                      .tags = tags, .ntags = 2 };
    int64_t now = telem_now_ns();
    CHECK_INT(ac_query(ac, &qt, &r), 0);
    ac_result_destroy(&r);
    pthread_mutex_lock(&f[0].mu);
    CHECK(llabs(f[0].q.start_ns - (now - 60 * TELEM_NS_PER_SEC))
          < 10 * TELEM_NS_PER_SEC);
    CHECK_INT(f[0].q.end_ns, 0);
    CHECK_INT(f[0].q.max_points, 7);
    CHECK_INT(f[0].q.nfilters, 2);
    CHECK_STR(f[0].filter[1][0], "rank");
    CHECK_STR(f[0].filter[1][1], "*");
    pthread_mutex_unlock(&f[0].mu);
    ac_query_t qd = { 0 };
    now = telem_now_ns();
    CHECK_INT(ac_query(ac, &qd, &r), 0);
    ac_result_destroy(&r);
    pthread_mutex_lock(&f[1].mu);
    CHECK(llabs(f[1].q.start_ns - (now - AC_WINDOW_DEFAULT_NS))
          < 10 * TELEM_NS_PER_SEC);
    pthread_mutex_unlock(&f[1].mu);
    ac_query_t qbad = { .start_ns = 20, .end_ns = 10 };
    CHECK_INT(ac_query(ac, &qbad, &r), TELEM_EINVAL);
    CHECK(r == NULL);

    /* A result outlives its client. */
    CHECK_INT(ac_query(ac, NULL, &r), 0);
    ac_close(&ac);
    CHECK(ac == NULL);
    CHECK_STR(ac_result_series(r, 3)->metric, "mem");
    ac_result_destroy(&r);
    for (int i = 0; i < 2; i++)
        s_fake_stop(&f[i]);
}

static void
test_silent_node_is_partial(void *ctx)
{
    const int deadline_ms = 300;
    fake_t f[3];
    s_fake_start(&f[0], ctx, "n1", FAKE_OK);
    s_fake_start(&f[1], ctx, "n2", FAKE_SILENT);
    s_fake_start(&f[2], ctx, "n3", FAKE_OK);
    ac_t *ac = s_client(f, 3, deadline_ms);
    for (int round = 0; round < 2; round++) {
        ac_result_t *r = NULL;
        int64_t t0 = telem_mono_ns();
        CHECK_INT(ac_query(ac, NULL, &r), TELEM_EPARTIAL);
        int64_t ms = s_elapsed_ms(t0);
        CHECK(ms < 5 * deadline_ms);
        CHECK_INT(ac_result_nseries(r), 4);
        CHECK_INT(ac_result_nmissing(r), 1);
        CHECK_STR(ac_result_missing(r, 0), "n2");
        CHECK_INT(ac_result_missing_code(r, 0), TELEM_ETIMEDOUT);
        CHECK(strlen(ac_result_missing_message(r, 0)) > 0);
        CHECK_INT(s_count_from(r, "n2"), 0);
        ac_result_destroy(&r);
    }
    /* Asking only the answering nodes is complete. */
    const char *two[] = { "n3", "n1" };
    ac_query_t q = { .nodes = two, .nnodes = 2 };
    ac_result_t *r = NULL;
    CHECK_INT(ac_query(ac, &q, &r), 0);
    CHECK_INT(ac_result_nseries(r), 4);
    ac_result_destroy(&r);
    ac_close(&ac);
    for (int i = 0; i < 3; i++)
        s_fake_stop(&f[i]);
}

static void
test_nobody_answers(void *ctx)
{
    const int deadline_ms = 300;
    fake_t f[1];
    s_fake_start(&f[0], ctx, "quiet", FAKE_SILENT);
    /* An endpoint where nothing listens: bind, note it, close. */
    void *tmp = zmq_socket(ctx, ZMQ_ROUTER);
    int zero = 0;
    zmq_setsockopt(tmp, ZMQ_LINGER, &zero, sizeof zero);
    zmq_bind(tmp, "tcp://127.0.0.1:*");
    char dead[128];
    size_t len = sizeof dead;
    zmq_getsockopt(tmp, ZMQ_LAST_ENDPOINT, dead, &len);
    zmq_close(tmp);

    const char *names[] = { "quiet", "dead" };
    const char *eps[] = { f[0].endpoint, dead };
    int err;
    ac_t *ac = ac_connect_nodes(names, eps, 2, deadline_ms, &err);
    CHECK(ac != NULL);
    ac_result_t *r = NULL;
    int64_t t0 = telem_mono_ns();
    CHECK_INT(ac_query(ac, NULL, &r), TELEM_ETIMEDOUT);
    CHECK(s_elapsed_ms(t0) < 5 * deadline_ms);
    CHECK(r != NULL);
    CHECK_INT(ac_result_nseries(r), 0);
    CHECK_INT(ac_result_nmissing(r), 2);
    CHECK_STR(ac_result_missing(r, 0), "quiet");
    CHECK_INT(ac_result_missing_code(r, 0), TELEM_ETIMEDOUT);
    CHECK_STR(ac_result_missing(r, 1), "dead");
    CHECK_INT(ac_result_missing_code(r, 1), TELEM_ECONN);
    ac_result_destroy(&r);

    ac_status_result_t *st = NULL;
    t0 = telem_mono_ns();
    CHECK_INT(ac_status(ac, &st), TELEM_ETIMEDOUT);
    CHECK(s_elapsed_ms(t0) < 5 * deadline_ms);
    CHECK_INT(ac_status_result_nmissing(st), 2);
    ac_status_result_destroy(&st);
    ac_close(&ac);
    s_fake_stop(&f[0]);
}

/* Waits (bounded) until the late node has sent its late reply. */
static int
s_wait_late(fake_t *f)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&f->mu);
    int rc = 0;
    while (!f->late_sent && rc == 0)
        rc = pthread_cond_timedwait(&f->cond, &f->mu, &until);
    int sent = f->late_sent;
    pthread_mutex_unlock(&f->mu);
    return sent;
}

static void
test_stale_replies(void *ctx)
{
    fake_t f[3];
    s_fake_start(&f[0], ctx, "ok", FAKE_OK);
    s_fake_start(&f[1], ctx, "late", FAKE_LATE_FIRST);
    s_fake_start(&f[2], ctx, "stale", FAKE_STALE_FIRST);
    ac_t *ac = s_client(f, 3, 10000);
    ac_result_t *r = NULL;

    /* First call gives up on "late"; its answer comes after the deadline. */
    ac_query_t q1 = { .timeout_ms = 200 };
    CHECK_INT(ac_query(ac, &q1, &r), TELEM_EPARTIAL);
    CHECK_INT(ac_result_nmissing(r), 1);
    CHECK_STR(ac_result_missing(r, 0), "late");
    /* "stale" sent a wrong-id reply first: dropped, the right one kept. */
    CHECK_INT(s_count_from(r, "stale"), 2);
    for (size_t i = 0; i < ac_result_nseries(r); i++)
        CHECK(ac_result_series(r, i)->values[0] >= 0);
    ac_result_destroy(&r);
    CHECK(s_wait_late(&f[1]));

    /* The next call sees the answers to its own request only. */
    CHECK_INT(ac_query(ac, NULL, &r), 0);
    CHECK_INT(ac_result_nmissing(r), 0);
    CHECK_INT(s_count_from(r, "late"), 2);
    CHECK_INT(s_count_from(r, "stale"), 2);
    for (size_t i = 0; i < ac_result_nseries(r); i++) {
        const telem_series_t *s = ac_result_series(r, i);
        if (strcmp(ac_result_series_node(r, i), "late") == 0)
            CHECK(s->values[0] == 2000 + 0.5);   /* its 2nd request */
        CHECK(s->values[0] >= 0);
    }
    ac_result_destroy(&r);
    ac_close(&ac);
    for (int i = 0; i < 3; i++)
        s_fake_stop(&f[i]);
}

static void
test_error_replies(void *ctx)
{
    fake_t f[5];
    s_fake_start(&f[0], ctx, "good", FAKE_OK);
    s_fake_start(&f[1], ctx, "err", FAKE_ERROR);
    s_fake_start(&f[2], ctx, "empty", FAKE_NOTFOUND);
    s_fake_start(&f[3], ctx, "junk", FAKE_GARBAGE);
    s_fake_start(&f[4], ctx, "huge", FAKE_BIG);
    ac_t *ac = s_client(f, 5, 500);
    CHECK_INT(ac_set_max_reply(ac, 16384), 0);
    CHECK_INT(ac_set_max_reply(ac, 0), TELEM_EINVAL);
    ac_result_t *r = NULL;
    CHECK_INT(ac_query(ac, NULL, &r), TELEM_EPARTIAL);
    CHECK_INT(ac_result_nseries(r), 2);
    CHECK_INT(s_count_from(r, "good"), 2);
    CHECK_INT(ac_result_nmissing(r), 3);   /* "empty" counts as answered */
    CHECK_STR(ac_result_missing(r, 0), "err");
    CHECK_INT(ac_result_missing_code(r, 0), TELEM_EINVAL);
    CHECK_STR(ac_result_missing_message(r, 0), "bad query");
    CHECK_STR(ac_result_missing(r, 1), "junk");
    CHECK_INT(ac_result_missing_code(r, 1), TELEM_EPROTO);
    CHECK_STR(ac_result_missing(r, 2), "huge");
    CHECK(ac_result_missing(r, 3) == NULL);
    ac_result_destroy(&r);

    /* Only errors: the node's code comes back, with a result. */
    const char *e[] = { "err" };
    ac_query_t q = { .nodes = e, .nnodes = 1 };
    CHECK_INT(ac_query(ac, &q, &r), TELEM_EINVAL);
    CHECK(r != NULL);
    CHECK_INT(ac_result_nmissing(r), 1);
    ac_result_destroy(&r);

    /* With the default limit the big reply is fine. */
    CHECK_INT(ac_set_max_reply(ac, TELEM_PROTO_MAX_MSG), 0);
    const char *h[] = { "huge" };
    ac_query_t qh = { .nodes = h, .nnodes = 1, .timeout_ms = 10000 };
    CHECK_INT(ac_query(ac, &qh, &r), 0);
    CHECK_INT(ac_result_nseries(r), 2);
    CHECK_INT(ac_result_series(r, 0)->npoints, BIG_PTS);
    ac_result_destroy(&r);
    ac_close(&ac);
    for (int i = 0; i < 5; i++)
        s_fake_stop(&f[i]);
}

static void
test_status_and_control(void *ctx)
{
    fake_t f[3];
    s_fake_start(&f[0], ctx, "a", FAKE_OK);
    s_fake_start(&f[1], ctx, "b", FAKE_SILENT);
    s_fake_start(&f[2], ctx, "c", FAKE_ERROR);
    ac_t *ac = s_client(f, 3, 300);
    ac_status_result_t *r = NULL;
    CHECK_INT(ac_status(ac, &r), TELEM_EPARTIAL);
    CHECK_INT(ac_status_result_count(r), 3);
    CHECK_INT(ac_status_result_nmissing(r), 2);
    CHECK_STR(ac_status_result_node(r, 0), "a");
    const telem_status_t *st = ac_status_result_status(r, 0);
    CHECK(st != NULL);
    if (st) {
        CHECK_STR(st->node, "a");
        CHECK_INT(st->level, 2);
        CHECK_INT(st->nseries, 2);
        CHECK_INT(st->pid, 42);
    }
    CHECK_INT(ac_status_result_code(r, 0), 0);
    CHECK(ac_status_result_status(r, 1) == NULL);
    CHECK_INT(ac_status_result_code(r, 1), TELEM_ETIMEDOUT);
    CHECK_INT(ac_status_result_code(r, 2), TELEM_EINVAL);
    CHECK_STR(ac_status_result_message(r, 2), "bad query");
    ac_status_result_destroy(&r);
    CHECK(r == NULL);

    /* One node only. */
    CHECK_INT(ac_control(ac, 0, TELEM_CTL_SET_LEVEL, 3, 0, &r), 0);
    CHECK_INT(ac_status_result_count(r), 1);
    CHECK_STR(ac_status_result_node(r, 0), "a");
    CHECK_INT(ac_status_result_status(r, 0)->level, 3);
    ac_status_result_destroy(&r);
    pthread_mutex_lock(&f[0].mu);
    CHECK_INT(f[0].last_op, TELEM_CTL_SET_LEVEL);
    CHECK_INT(f[0].last_arg, 3);
    pthread_mutex_unlock(&f[0].mu);
    CHECK_INT(ac_control(ac, 0, TELEM_CTL_SYNC, 99, 0, &r), 0);
    CHECK_INT(ac_status_result_synced(r, 0), 1);
    ac_status_result_destroy(&r);
    CHECK_INT(ac_control(ac, 3, TELEM_CTL_STATUS, 0, 0, &r), TELEM_EINVAL);
    CHECK(r == NULL);
    ac_close(&ac);
    for (int i = 0; i < 3; i++)
        s_fake_stop(&f[i]);
}

/* ---- node files -------------------------------------------------------- */

static void
s_write(const char *path, const char *text, size_t len)
{
    FILE *fp = fopen(path, "w");
    if (!fp || fwrite(text, 1, len, fp) != len) {
        perror(path);
        exit(1);
    }
    fclose(fp);
}

static int
s_check_text(const char *dir, const char *text, size_t len, char *why,
             size_t *n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/nodes", dir);
    s_write(path, text, len);
    return ac_nodefile_check(path, n, why, 256);
}

#define TEXT(s) s, sizeof(s) - 1

static void
test_nodefile(void *ctx)
{
    char dir[] = "/tmp/test_ac.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    char why[256], path[512];
    size_t n = 0;
    snprintf(path, sizeof path, "%s/nodes", dir);
    CHECK_INT(s_check_text(dir, TEXT(
        "# the job's nodes\n"
        "\n"
        "alpha\ttcp://127.0.0.1:5555\n"
        "beta node\t ipc:///tmp/x.sock \r\n"
        "   \n"
        "#x\ty\n"
        "\xce\xb3:odd,name=1 #\ttcp://127.0.0.1:6000"), why, &n), 0);
    CHECK_INT(n, 3);
    int err = 1;
    ac_t *ac = ac_connect(path, 0, &err);
    CHECK_INT(err, 0);
    CHECK_INT(ac_node_count(ac), 3);
    CHECK_STR(ac_node_name(ac, 1), "beta node");
    CHECK_STR(ac_node_endpoint(ac, 1), "ipc:///tmp/x.sock");
    CHECK_STR(ac_node_name(ac, 2), "\xce\xb3:odd,name=1 #");
    ac_close(&ac);
    /* The default path comes from $TELEM_NODEFILE. */
    setenv("TELEM_NODEFILE", path, 1);
    ac = ac_connect(NULL, 0, &err);
    CHECK_INT(ac_node_count(ac), 3);
    ac_close(&ac);
    unsetenv("TELEM_NODEFILE");

    /* A node file that points at live nodes. */
    fake_t f;
    s_fake_start(&f, ctx, "live one", FAKE_OK);
    char text[512];
    int len = snprintf(text, sizeof text, "# test\nlive one\t%s\n", f.endpoint);
    s_write(path, text, (size_t) len);
    ac = ac_connect(path, 10000, &err);
    ac_result_t *r = NULL;
    CHECK_INT(ac_query(ac, NULL, &r), 0);
    CHECK_INT(s_count_from(r, "live one"), 2);
    ac_result_destroy(&r);
    ac_close(&ac);
    s_fake_stop(&f);
    unlink(path);
    rmdir(dir);
}

static void
test_nodefile_errors(void)
{
    char dir[] = "/tmp/test_ac.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    char why[256], path[512];
    size_t n = 0;
    int err = 0;
    snprintf(path, sizeof path, "%s/nodes", dir);
    ac_t *ac;

    CHECK_INT(s_check_text(dir, TEXT("a\ttcp://h:1\nb tcp://h:2\n"), why, &n),
              TELEM_EINVAL);
    CHECK(strstr(why, ":2:") && strstr(why, "tab"));
    CHECK_INT(s_check_text(dir, TEXT("a/b\ttcp://h:1\n"), why, &n),
              TELEM_EINVAL);
    CHECK_INT(s_check_text(dir, TEXT("..\ttcp://h:1\n"), why, &n),
              TELEM_EINVAL);
    CHECK_INT(s_check_text(dir, TEXT("a\ttcp://h:1\na\ttcp://h:2\n"), why, &n),
              TELEM_EINVAL);
    CHECK(strstr(why, "duplicate") != NULL);
    CHECK_INT(s_check_text(dir, TEXT("a\th:1\n"), why, &n), TELEM_EINVAL);
    CHECK_INT(s_check_text(dir, TEXT("a\t\n"), why, &n), TELEM_EINVAL);
    CHECK_INT(s_check_text(dir, TEXT("\ttcp://h:1\n"), why, &n), TELEM_EINVAL);
    CHECK_INT(s_check_text(dir, TEXT("a\ttcp://h:1 x\n"), why, &n),
              TELEM_EINVAL);
    CHECK_INT(s_check_text(dir, TEXT("a\0b\ttcp://h:1\n"), why, &n),
              TELEM_EINVAL);
    CHECK_INT(s_check_text(dir, TEXT("# nothing\n\n"), why, &n),
              TELEM_ENOTFOUND);
    ac = ac_connect(path, 0, &err);
    CHECK(ac == NULL);
    CHECK_INT(err, TELEM_ENOTFOUND);
    unlink(path);
    CHECK_INT(ac_nodefile_check(path, &n, why, sizeof why), TELEM_ENOTFOUND);
    CHECK(strstr(why, path) != NULL);
    ac = ac_connect(path, 0, &err);
    CHECK(ac == NULL);
    CHECK_INT(err, TELEM_ENOTFOUND);

    /* Same rules for a list given in code. */
    const char *names[] = { "x", "x/y" };
    const char *eps[] = { "tcp://h:1", "tcp://h:2" };
    CHECK(ac_connect_nodes(names, eps, 2, 0, &err) == NULL);
    CHECK_INT(err, TELEM_EINVAL);
    CHECK(ac_connect_nodes(names, eps, 0, 0, &err) == NULL);
    CHECK_INT(err, TELEM_ENOTFOUND);

    unlink(path);
    rmdir(dir);
}

int
main(void)
{
    void *ctx = zmq_ctx_new();
    test_fanout_merges(ctx);
    test_query_arguments(ctx);
    test_silent_node_is_partial(ctx);
    test_nobody_answers(ctx);
    test_stale_replies(ctx);
    test_error_replies(ctx);
    test_status_and_control(ctx);
    test_nodefile(ctx);
    test_nodefile_errors();
    zmq_ctx_term(ctx);
    printf("test_ac: %d checks, %d failed\n", s_checks, s_failures);
    return s_failures ? 1 : 0;
}
