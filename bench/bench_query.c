/* bench_query.c - latency of ac_query() for one series of an hour at 1 Hz.
 *
 * A real (in-process) telemd is filled through its ingest socket with 3,600
 * points of one series (1 s apart, the last hour; confirmed with a fin
 * token), then the analysis client asks for the whole series 1,000 times
 * over TCP loopback, one query at a time; each call is timed.  In the same
 * run a raw libzmq DEALER/ROUTER pair on TCP loopback exchanges a request
 * and a reply of exactly the sizes telem's query and reply encode to: that
 * is the transport's floor for this round trip.  To show where the rest
 * goes, the agent's own handling (store walk, copy, encode) and the
 * client's decode of the reply are timed alone without sockets.
 * Target (issue): p99 <= 10 ms.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "ac.h"
#include "bench_common.h"
#include "telem_error.h"
#include "telem_time.h"
#include "telemd_agent.h"

#define S_POINTS 3600
#define S_QUERIES 1000
#define S_WARMUP 50
#define S_BLOCK 50                  /* divides S_QUERIES */
#define S_NODE "benchnode"
#define S_METRIC "bench.query"
#define S_WINDOW_S 7200

typedef bench_lat_t s_lat_t;

/* Encoded batches holding the series' 3,600 points, 64 per batch. */
typedef struct {
    char *frames[S_POINTS / 64 + 1];
    size_t sizes[S_POINTS / 64 + 1];
    int n;
} s_fill_t;

static void
s_fill_make(s_fill_t *f, int64_t now)
{
    static const telem_tag_t tags[2] = { { "pid", "4242" }, { "rank", "0" } };
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    telem_sample_t s[64];
    f->n = 0;
    for (int i = 0; i < S_POINTS; i += 64) {
        uint32_t k = 0;
        for (; k < 64 && i + (int) k < S_POINTS; k++) {
            int p = i + (int) k;
            s[k] = (telem_sample_t) { .metric = S_METRIC, .level = 1,
                .ts_ns = now - (S_POINTS - p) * TELEM_NS_PER_SEC,
                .value = p * 0.25 };
        }
        telem_batch_t b = { .source = "bench", .tags = tags, .ntags = 2,
                            .samples = s, .nsamples = k };
        const void *data;
        size_t size;
        if (telem_proto_encode_batch(enc, &b, &data, &size) != 0)
            bench_die("encode", "batch");
        f->frames[f->n] = malloc(size);
        memcpy(f->frames[f->n], data, size);
        f->sizes[f->n++] = size;
    }
    telem_proto_encoder_destroy(&enc);
}

static void
s_fill_free(s_fill_t *f)
{
    for (int i = 0; i < f->n; i++)
        free(f->frames[i]);
}

static void
s_fill_telemd(telemd_t *td, const s_fill_t *f)
{
    bench_fill_telemd(td, f->frames, f->sizes, f->n, 77, 10000);
}

static ac_query_t
s_query(void)
{
    static const char *const metrics[] = { S_METRIC };
    return (ac_query_t) { .metrics = metrics, .nmetrics = 1,
                          .start_ns = -S_WINDOW_S * TELEM_NS_PER_SEC,
                          .timeout_ms = 2000 };
}

static ac_t *
s_ac_open(const char *endpoint)
{
    const char *names[] = { S_NODE };
    const char *eps[] = { endpoint };
    int err = 0;
    ac_t *ac = ac_connect_nodes(names, eps, 1, 2000, &err);
    if (!ac)
        bench_die("ac_connect_nodes", "%s", telem_strerror(err));
    return ac;
}

/* One timed ac_query(); checks the answer.  If reply_size is not NULL, sets
 * it to the encoded size of the reply (re-encoding what came back). */
static int64_t
s_ac_once(ac_t *ac, size_t *reply_size)
{
    ac_query_t q = s_query();
    ac_result_t *r = NULL;
    int64_t t0 = bench_now_ns();
    int rc = ac_query(ac, &q, &r);
    int64_t dt = bench_now_ns() - t0;
    const telem_series_t *s = r ? ac_result_series(r, 0) : NULL;
    if (rc || !s || ac_result_nseries(r) != 1 || s->npoints != S_POINTS)
        bench_die("ac_query", "rc %s, %zu series, %u points",
                  telem_strerror(rc), r ? ac_result_nseries(r) : 0,
                  s ? s->npoints : 0);
    if (reply_size) {
        telem_proto_encoder_t *enc = telem_proto_encoder_new();
        telem_query_reply_t rep = { .id = UINT64_MAX / 3, .node = S_NODE,
                                    .series = s, .nseries = 1 };
        const void *data;
        if (telem_proto_encode_query_reply(enc, &rep, &data, reply_size) != 0)
            bench_die("encode", "reply");
        telem_proto_encoder_destroy(&enc);
    }
    ac_result_destroy(&r);
    return dt;
}

static size_t
s_request_size(void)
{
    static const char *const metrics[] = { S_METRIC };
    telem_query_t q = { .id = UINT64_MAX / 3, .metrics = metrics,
                        .nmetrics = 1,
                        .start_ns = telem_now_ns() - S_WINDOW_S
                                    * TELEM_NS_PER_SEC,
                        .end_ns = telem_now_ns() };
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    const void *data;
    size_t size = 0;
    if (telem_proto_encode_query(enc, &q, &data, &size) != 0)
        bench_die("encode", "query");
    telem_proto_encoder_destroy(&enc);
    return size;
}

/* ---- raw DEALER/ROUTER peer ---------------------------------------------- */

typedef struct {
    void *sctx, *cctx;
    void *router, *dealer;
    size_t req_size, reply_size;
    char *req;
    zmq_msg_t msg;
    pthread_t thread;
} s_raw_t;

/* The server: answers every request with reply_size bytes, until a request
 * of one byte. */
static void *
s_echo(void *arg)
{
    s_raw_t *e = arg;
    char *reply = calloc(1, e->reply_size);
    zmq_msg_t id, body;
    zmq_msg_init(&id);
    zmq_msg_init(&body);
    for (;;) {
        if (zmq_msg_recv(&id, e->router, 0) < 0
            || zmq_msg_recv(&body, e->router, 0) < 0
            || zmq_msg_size(&body) == 1)
            break;
        zmq_msg_send(&id, e->router, ZMQ_SNDMORE);
        zmq_send(e->router, reply, e->reply_size, 0);
    }
    zmq_msg_close(&id);
    zmq_msg_close(&body);
    free(reply);
    return NULL;
}

static void
s_raw_open(s_raw_t *e, size_t req_size, size_t reply_size)
{
    memset(e, 0, sizeof *e);
    e->req_size = req_size > 1 ? req_size : 2;
    e->reply_size = reply_size;
    e->req = calloc(1, e->req_size);
    e->sctx = zmq_ctx_new();
    e->cctx = zmq_ctx_new();
    e->router = zmq_socket(e->sctx, ZMQ_ROUTER);
    if (zmq_bind(e->router, "tcp://127.0.0.1:*") != 0)
        bench_die("raw bind", "%s", zmq_strerror(zmq_errno()));
    char ep[128];
    size_t eplen = sizeof ep;
    zmq_getsockopt(e->router, ZMQ_LAST_ENDPOINT, ep, &eplen);
    e->dealer = zmq_socket(e->cctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(e->dealer, ZMQ_LINGER, &zero, sizeof zero);
    zmq_connect(e->dealer, ep);
    zmq_msg_init(&e->msg);
    pthread_create(&e->thread, NULL, s_echo, e);
}

static int64_t
s_raw_once(s_raw_t *e)
{
    int64_t t0 = bench_now_ns();
    zmq_send(e->dealer, e->req, e->req_size, 0);
    int n = zmq_msg_recv(&e->msg, e->dealer, 0);
    int64_t dt = bench_now_ns() - t0;
    if (n != (int) e->reply_size)
        bench_die("raw", "reply of %d bytes", n);
    return dt;
}

static void
s_raw_close(s_raw_t *e)
{
    zmq_send(e->dealer, "", 1, 0);
    pthread_join(e->thread, NULL);
    zmq_msg_close(&e->msg);
    zmq_close(e->dealer);
    zmq_close(e->router);
    zmq_ctx_term(e->cctx);
    zmq_ctx_term(e->sctx);
    free(e->req);
}

/* Runs the three round trips (TCP, ipc, raw TCP) in alternating blocks of
 * S_BLOCK: each path stays warm within a block, and noise from the rest of
 * the machine falls on all three alike. */
static void
s_bench_round_trips(telemd_t *td, size_t *req_size, size_t *reply_size,
                    s_lat_t *tcp, s_lat_t *ipc, s_lat_t *raw)
{
    int64_t *lat[3];
    for (int k = 0; k < 3; k++)
        if (!(lat[k] = malloc(S_QUERIES * sizeof *lat[k])))
            bench_die("bench_query", "out of memory");
    ac_t *ac_tcp = s_ac_open(telemd_tcp_endpoint(td));
    ac_t *ac_ipc = s_ac_open(telemd_ctl_endpoint(td));
    s_ac_once(ac_tcp, reply_size);
    *req_size = s_request_size();
    s_raw_t e;
    s_raw_open(&e, *req_size, *reply_size);
    for (int i = 0; i < S_WARMUP; i++) {
        s_ac_once(ac_tcp, NULL);
        s_ac_once(ac_ipc, NULL);
        s_raw_once(&e);
    }
    for (int b = 0; b < S_QUERIES; b += S_BLOCK) {
        for (int i = b; i < b + S_BLOCK; i++)
            lat[0][i] = s_ac_once(ac_tcp, NULL);
        for (int i = b; i < b + S_BLOCK; i++)
            lat[1][i] = s_ac_once(ac_ipc, NULL);
        for (int i = b; i < b + S_BLOCK; i++)
            lat[2][i] = s_raw_once(&e);
    }
    s_raw_close(&e);
    ac_close(&ac_tcp);
    ac_close(&ac_ipc);
    bench_summarise(lat[0], S_QUERIES, tcp);
    bench_summarise(lat[1], S_QUERIES, ipc);
    bench_summarise(lat[2], S_QUERIES, raw);
    for (int k = 0; k < 3; k++)
        free(lat[k]);
}

/* ---- the two ends alone ---------------------------------------------------- */

static void
s_bench_parts(const s_fill_t *f, const char *dir, int64_t *lat,
              s_lat_t *agent_out, s_lat_t *decode_out)
{
    telemd_config_t cfg = { .node = S_NODE, .rundir = dir, .level = 1,
                            .window_ns = S_WINDOW_S * TELEM_NS_PER_SEC,
                            .interval_ns = TELEM_NS_PER_SEC };
    telemd_agent_t *a = telemd_agent_new(&cfg, NULL);
    if (!a)
        bench_die("telemd_agent_new", "failed");
    for (int i = 0; i < f->n; i++)
        telemd_agent_ingest(a, f->frames[i], f->sizes[i]);
    static const char *const metrics[] = { S_METRIC };
    telem_query_t q = { .id = 9, .metrics = metrics, .nmetrics = 1,
                        .start_ns = telem_now_ns() - S_WINDOW_S
                                    * TELEM_NS_PER_SEC };
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    const void *qdata, *reply = NULL;
    size_t qsize, rsize = 0;
    telem_proto_encode_query(enc, &q, &qdata, &qsize);
    for (int i = 0; i < S_QUERIES; i++) {
        int64_t t0 = bench_now_ns();
        telemd_agent_request(a, qdata, qsize, TELEMD_FROM_JOB, &reply, &rsize);
        lat[i] = bench_now_ns() - t0;
    }
    bench_summarise(lat, S_QUERIES, agent_out);
    char *copy = malloc(rsize);
    memcpy(copy, reply, rsize);
    telem_proto_decoder_t *dec = telem_proto_decoder_new();
    telem_msg_t m;
    for (int i = 0; i < S_QUERIES; i++) {
        int64_t t0 = bench_now_ns();
        int rc = telem_proto_decode(dec, copy, rsize, &m);
        lat[i] = bench_now_ns() - t0;
        if (rc || m.type != TELEM_MSG_QUERY_REPLY || m.u.query_reply.nseries != 1
            || m.u.query_reply.series[0].npoints != S_POINTS)
            bench_die("agent query", "unexpected reply (%s)",
                      telem_strerror(rc));
    }
    bench_summarise(lat, S_QUERIES, decode_out);
    telem_proto_decoder_destroy(&dec);
    free(copy);
    telem_proto_encoder_destroy(&enc);
    telemd_agent_destroy(&a);
}

static void
s_row(const char *what, const s_lat_t *l)
{
    printf("  %-52s %9.1f %9.1f %9.1f %9.1f\n", what, (double) l->p50 / 1e3,
           (double) l->p99 / 1e3, l->mean / 1e3, (double) l->max / 1e3);
}

int
main(void)
{
    bench_print_machine("bench_query");
    int64_t *lat = malloc(S_QUERIES * sizeof *lat);
    char dir[256];
    bench_tmpdir(dir, sizeof dir, "query");
    s_fill_t fill;
    s_fill_make(&fill, telem_now_ns());
    telemd_t *td = bench_telemd_start(dir, S_NODE, 1, S_WINDOW_S, 0, 1);
    s_fill_telemd(td, &fill);

    s_lat_t tcp, ipc, raw, agent, decode;
    size_t reply_size = 0, req_size = 0;
    s_bench_round_trips(td, &req_size, &reply_size, &tcp, &ipc, &raw);
    telemd_destroy(&td);
    s_bench_parts(&fill, dir, lat, &agent, &decode);

    printf("\n%d sequential queries of one series of %d points "
           "(request %zu B, reply %zu B)\n", S_QUERIES, S_POINTS, req_size,
           reply_size);
    printf("  %-52s %9s %9s %9s %9s\n", "case (microseconds)", "p50", "p99",
           "mean", "max");
    s_row("ac_query, TCP loopback", &tcp);
    s_row("ac_query, ipc (same node)", &ipc);
    s_row("raw DEALER/ROUTER round trip, same sizes, TCP", &raw);
    s_row("telemd_agent_request alone (walk, copy, encode)", &agent);
    s_row("telem_proto_decode of the reply alone", &decode);
    printf("  %-52s %9.2f %9.2f\n", "ratio ac_query TCP / raw round trip",
           (double) tcp.p50 / (double) raw.p50,
           (double) tcp.p99 / (double) raw.p99);

    printf("\ntargets\n");
    printf("  ac_query p99 <= 10 ms (TCP)  %9.3f ms  %s\n",
           (double) tcp.p99 / 1e6, bench_verdict(tcp.p99 <= 10000000));
    char peer[64], r[32];
    snprintf(peer, sizeof peer, "raw DEALER-ROUTER p50 %.3f ms",
             (double) raw.p50 / 1e6);
    snprintf(r, sizeof r, "%.2f (p50)", (double) tcp.p50 / (double) raw.p50);
    bench_figure("ac_query of 3,600 points over TCP, p99", "<= 10 ms", peer, r,
                 tcp.p99 <= 10000000, "%.3f ms", (double) tcp.p99 / 1e6);

    s_fill_free(&fill);
    bench_rmtree(dir);
    free(lat);
    return 0;
}
