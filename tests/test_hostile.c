/* test_hostile.c - what a hostile peer may send telemd and telem_dictd.
 *
 * Run with no argument, it is a unit test:
 *   - the largest valid request (a query naming 256 metrics of 255 bytes
 *     with 16 filters of 255-byte keys and values) fits in
 *     TELEMD_REQUEST_MAX, the request sockets' frame limit;
 *   - the largest batch libtelem sends fits in TELEM_PROTO_INGEST_MAX, the
 *     ingest socket's frame limit, with room to spare;
 *   - telemd's agent answers a batch or a metadata message on a request
 *     socket with an error of TELEM_EPROTO and stores nothing;
 *   - every refusal is counted in the status: bad_messages (malformed,
 *     wrong kind, too many frames, on either socket), denied (control over
 *     plain TCP);
 *   - the largest dict_ack fits the dictionary's peer frame limit;
 *   - a dictionary server answers a telemd batch, a reply and a frame that
 *     does not decode with a dict_rep of id 0 and an error code;
 *   - telem_peercap refuses the TCP connections past its cap (the refused
 *     peers see their connection closed) and keeps the others.
 *
 * Run as `test_hostile send ENDPOINT WHAT [TIMEOUT_MS]`, it is the helper
 * of tests/it_hostile.sh: a DEALER connects to ENDPOINT, sends WHAT and
 * prints one line saying what came back:
 *   WHAT     batch | meta | status | frames:N:SIZE (N frames of SIZE
 *            zero bytes, sent without copies)
 *   prints   "reply type=T code=C" (an error, dict_rep or control_reply),
 *            "disconnected" (the peer dropped the connection), or
 *            "timeout"; exit 0, or 2 on bad usage.
 * `test_hostile push ENDPOINT WHAT CTL [TIMEOUT_MS]` sends WHAT on a PUSH
 * to telemd's ingest socket instead, and prints "disconnected" (the
 * connection was dropped), "counted" (telemd's bad_messages, asked on its
 * control socket CTL, rose) or "timeout".
 */
#include "tmpdir.h"

#include <czmq.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "ddict_actor.h"
#include "ddict_server.h"
#include "telem.h"
#include "telem_error.h"
#include "telem_peercap.h"
#include "telem_proto.h"
#include "telem_proto_dict.h"
#include "telem_queue.h"
#include "telem_time.h"
#include "telemd_actor.h"
#include "telemd_agent.h"

/* ---------------------------------------------------------------- messages */

static char s_name[256];

/* A 255-byte name whose last characters are `i` in hex. */
static char *
s_long_name(char *buf, unsigned i)
{
    memset(buf, 'm', 255);
    snprintf(buf + 247, 9, "%08x", i);
    return buf;
}

/* Encodes the largest valid query; returns its size. */
static size_t
s_largest_query(telem_proto_encoder_t *enc)
{
    static char names[TELEM_QUERY_METRICS_MAX][256];
    static char keys[TELEM_TAGS_MAX][256], values[TELEM_TAGS_MAX][256];
    const char *metrics[TELEM_QUERY_METRICS_MAX];
    telem_tag_t filters[TELEM_TAGS_MAX];
    for (unsigned i = 0; i < TELEM_QUERY_METRICS_MAX; i++)
        metrics[i] = s_long_name(names[i], i);
    for (unsigned i = 0; i < TELEM_TAGS_MAX; i++)
        filters[i] = (telem_tag_t) { s_long_name(keys[i], i),
                                     s_long_name(values[i], i + 100) };
    telem_query_t q = {
        .id = UINT64_MAX, .metrics = metrics,
        .nmetrics = TELEM_QUERY_METRICS_MAX, .filters = filters,
        .nfilters = TELEM_TAGS_MAX, .start_ns = INT64_MIN,
        .end_ns = INT64_MAX, .max_points = UINT32_MAX, .flags = UINT32_MAX,
    };
    const void *data;
    size_t size = 0;
    if (telem_proto_encode_query(enc, &q, &data, &size) != 0)
        return 0;
    return size;
}

/* Encodes a batch of one sample of metric "hostile_batch" (or a meta for
 * it when `meta`); returns 0 or the encoder's error. */
static int
s_ingest_msg(telem_proto_encoder_t *enc, int meta, const void **data,
             size_t *size)
{
    if (meta) {
        telem_meta_t m = { "hostile_batch", TELEM_METRIC_GAUGE, "B", "x" };
        return telem_proto_encode_meta(enc, &m, data, size);
    }
    telem_sample_t s = { .metric = "hostile_batch", .level = 1,
                         .ts_ns = telem_now_ns(), .value = 42 };
    telem_batch_t b = { .source = "hostile", .samples = &s, .nsamples = 1 };
    return telem_proto_encode_batch(enc, &b, data, size);
}

/* The code of an error, dict_rep or control_reply frame; -1000 if it is
 * none of them.  *type gets its type. */
static int
s_reply_code(telem_proto_decoder_t *dec, const void *data, size_t size,
             int *type)
{
    telem_msg_t m;
    *type = 0;
    if (telem_proto_decode(dec, data, size, &m) != 0)
        return -1000;
    *type = (int) m.type;
    if (m.type == TELEM_MSG_ERROR)
        return m.u.error.code;
    if ((int) m.type == TELEM_MSG_DICT_REP)
        return m.u.dict_rep.code;
    if (m.type == TELEM_MSG_CONTROL_REPLY)
        return 0;
    return -1000;
}

/* ---------------------------------------------------------------- telemd */

static void
test_request_limit(void)
{
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    size_t size = s_largest_query(enc);
    printf("largest valid query: %zu bytes (limit %u)\n", size,
           (unsigned) TELEMD_REQUEST_MAX);
    CHECK(size > 64 * 1024);           /* the query really is the largest */
    CHECK(size < TELEMD_REQUEST_MAX);
    telem_proto_encoder_destroy(&enc);
}

/* Series of metric "hostile_batch" in the agent's store. */
static uint32_t
s_stored(telemd_agent_t *agent, telem_proto_encoder_t *enc,
         telem_proto_decoder_t *dec)
{
    const char *metric = "hostile_batch";
    telem_query_t q = { .id = 9, .metrics = &metric, .nmetrics = 1 };
    const void *data, *reply;
    size_t size, rsize;
    telem_msg_t m;
    if (telem_proto_encode_query(enc, &q, &data, &size) != 0
        || telemd_agent_request(agent, data, size, TELEMD_FROM_JOB, &reply, &rsize) != 0
        || telem_proto_decode(dec, reply, rsize, &m) != 0
        || m.type != TELEM_MSG_QUERY_REPLY)
        return UINT32_MAX;
    return m.u.query_reply.nseries;
}

static void
test_agent_refuses_ingest(void)
{
    telemd_config_t cfg = { .node = "h1", .level = 4,
                            .window_ns = 60 * TELEM_NS_PER_SEC,
                            .interval_ns = TELEM_NS_PER_SEC };
    telemd_agent_t *agent = telemd_agent_new(&cfg, NULL);
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    telem_proto_decoder_t *dec = telem_proto_decoder_new();
    REQUIRE(agent && enc && dec);
    for (int meta = 0; meta <= 1; meta++) {
        const void *data, *reply = NULL;
        size_t size, rsize = 0;
        REQUIRE(s_ingest_msg(enc, meta, &data, &size) == 0);
        CHECK_RC(telemd_agent_request(agent, data, size, TELEMD_FROM_JOB, &reply, &rsize),
                 TELEM_EPROTO);
        REQUIRE(reply != NULL);
        int type;
        CHECK_RC(s_reply_code(dec, reply, rsize, &type), TELEM_EPROTO);
        CHECK_INT(type, TELEM_MSG_ERROR);
    }
    CHECK_INT(s_stored(agent, enc, dec), 0);
    /* The same batch on the ingest path is stored: the refusal is the
       socket's, not the message's. */
    const void *data;
    size_t size;
    REQUIRE(s_ingest_msg(enc, 0, &data, &size) == 0);
    CHECK_RC(telemd_agent_ingest(agent, data, size), 0);
    CHECK_INT(s_stored(agent, enc, dec), 1);
    telem_proto_decoder_destroy(&dec);
    telem_proto_encoder_destroy(&enc);
    telemd_agent_destroy(&agent);
}

/* The largest frame libtelem sends: 256 samples (a full batch) of a
 * 255-byte name, with 8 tags each that fill the batch's string arena,
 * from a process whose node (the batch's source) and rank take 255 bytes.
 * Names repeat for free in the arena but not on the wire, which makes
 * this the largest batch; it must stay under the ingest socket's frame
 * limit. */
/* 255-byte name, node and rank; the node (the batch's source) and rank
 * (a batch tag) into libtelem's environment. */
static void
s_largest_env(char *name, char *node, char *rank)
{
    memset(name, 'm', 255);
    memset(node, 'n', 255);
    memset(rank, 'r', 255);
    name[255] = node[255] = rank[255] = '\0';
    setenv("TELEM_NODE", node, 1);
    setenv("TELEM_RANK", rank, 1);
    setenv("TELEM_LEVEL", "4", 1);
    setenv("TELEM_FINALIZE_MS", "100", 1);
}

static void
test_libtelem_largest(void)
{
    char dir[64], ep[128], name[256], node[256], rank[256];
    REQUIRE(test_tmpdir(dir, sizeof dir, "test_hostile") == 0);
    void *zctx = zmq_ctx_new();
    void *pull = zmq_socket(zctx, ZMQ_PULL);
    int ms = 10000;
    zmq_setsockopt(pull, ZMQ_RCVTIMEO, &ms, sizeof ms);
    snprintf(ep, sizeof ep, "ipc://%s/ingest.sock", dir);
    REQUIRE(zmq_bind(pull, ep) == 0);
    setenv("TELEM_INGEST", ep, 1);
    /* A control socket file tells the sender a telemd is there: it then
       waits for the ingest connection instead of dropping the batch. */
    void *ctl = zmq_socket(zctx, ZMQ_ROUTER);
    snprintf(ep, sizeof ep, "ipc://%s/ctl.sock", dir);
    REQUIRE(zmq_bind(ctl, ep) == 0);
    setenv("TELEM_CTL", ep, 1);
    s_largest_env(name, node, rank);
    REQUIRE(telem_init() == 0);
    for (int i = 0; i < TELEM_Q_SAMPLES; i++)
        CHECK_RC(telem_add_data_tags(name, i, 0, 1, 8, "a", "vvvv", "b",
                                     "vvvv", "c", "vvvv", "d", "vvvv", "e",
                                     "vvvv", "f", "vvvv", "g", "vvvv", "h",
                                     "vvvv"), 0);
    zmq_msg_t f;
    zmq_msg_init(&f);
    size_t largest = 0;
    uint32_t samples = 0;
    telem_proto_decoder_t *dec = telem_proto_decoder_new();
    while (samples < TELEM_Q_SAMPLES && zmq_msg_recv(&f, pull, 0) >= 0) {
        telem_msg_t m;
        if (telem_proto_decode(dec, zmq_msg_data(&f), zmq_msg_size(&f), &m)
            == 0 && m.type == TELEM_MSG_BATCH)
            samples += m.u.batch.nsamples;
        if (zmq_msg_size(&f) > largest)
            largest = zmq_msg_size(&f);
    }
    printf("libtelem's largest batch: %zu bytes (%u samples; ingest frame "
           "limit %u)\n", largest, samples, TELEM_PROTO_INGEST_MAX);
    CHECK_INT(samples, TELEM_Q_SAMPLES);
    CHECK(largest > 80 * 1024);        /* it really is that large */
    CHECK(largest < TELEM_PROTO_INGEST_MAX / 2);
    telem_finalize();
    zmq_msg_close(&f);
    telem_proto_decoder_destroy(&dec);
    zmq_close(pull);
    zmq_close(ctl);
    zmq_ctx_term(zctx);
    test_rmtree(dir);
}

/* The agent's status, asked for as the job asks. */
static telem_status_t
s_status_of(telemd_agent_t *agent, telem_proto_encoder_t *enc,
            telem_proto_decoder_t *dec)
{
    telem_control_t c = { .id = 1, .op = TELEM_CTL_STATUS };
    const void *data, *reply;
    size_t size, rsize;
    telem_msg_t m;
    telem_status_t none = { 0 };
    if (telem_proto_encode_control(enc, &c, &data, &size) != 0
        || telemd_agent_request(agent, data, size, TELEMD_FROM_JOB, &reply,
                                &rsize) != 0
        || telem_proto_decode(dec, reply, rsize, &m) != 0
        || m.type != TELEM_MSG_CONTROL_REPLY)
        return none;
    return m.u.control_reply.status;
}

/* Every refusal is counted: a frame that does not decode, a batch on a
 * request socket, a request of too many frames, an ingest message of
 * several frames (bad_messages); control over plain TCP (denied). */
static void
test_agent_counts(void)
{
    telemd_config_t cfg = { .node = "h1", .level = 4,
                            .window_ns = 60 * TELEM_NS_PER_SEC,
                            .interval_ns = TELEM_NS_PER_SEC };
    telemd_agent_t *agent = telemd_agent_new(&cfg, NULL);
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    telem_proto_decoder_t *dec = telem_proto_decoder_new();
    REQUIRE(agent && enc && dec);
    const void *data, *reply;
    size_t size, rsize;
    CHECK_RC(telemd_agent_request(agent, "\x81", 1, TELEMD_FROM_JOB, &reply,
                                  &rsize), TELEM_EPROTO);
    REQUIRE(s_ingest_msg(enc, 0, &data, &size) == 0);
    CHECK_RC(telemd_agent_request(agent, data, size, TELEMD_FROM_JOB, &reply,
                                  &rsize), TELEM_EPROTO);
    CHECK_RC(telemd_agent_refuse(agent, TELEM_EPROTO, "4 frames", &reply,
                                 &rsize), TELEM_EPROTO);
    telemd_agent_reject(agent, "an ingest message of 2 frames");
    CHECK_RC(telemd_agent_ingest(agent, "\xc1", 1), TELEM_EPROTO);
    telem_control_t c = { .id = 2, .op = TELEM_CTL_SHUTDOWN };
    REQUIRE(telem_proto_encode_control(enc, &c, &data, &size) == 0);
    telemd_agent_request(agent, data, size, TELEMD_FROM_PLAIN_TCP, &reply,
                         &rsize);
    int type;
    CHECK_RC(s_reply_code(dec, reply, rsize, &type), TELEM_EPERM);
    CHECK(!telemd_agent_stopping(agent));
    telem_status_t st = s_status_of(agent, enc, dec);
    CHECK_INT(st.bad_messages, 5);
    CHECK_INT(st.denied, 1);
    CHECK_INT(st.refused_peers, 0);        /* no ZAP handler */
    telem_proto_decoder_destroy(&dec);
    telem_proto_encoder_destroy(&enc);
    telemd_agent_destroy(&agent);
}

/* The largest acknowledgement a dictionary server sends a peer fits the
 * peer sockets' frame limit. */
static void
test_dict_ack_limit(void)
{
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    telem_dict_rep_t rep = { UINT64_MAX, UINT64_MAX, INT32_MIN, NULL, 0 };
    const void *data;
    size_t size = 0;
    REQUIRE(enc && telem_proto_encode_dict_rep(enc, TELEM_MSG_DICT_ACK, &rep,
                                               &data, &size) == 0);
    printf("largest dict_ack: %zu bytes (peer frame limit %d)\n", size,
           DDICT_ACTOR_ACK_MAX);
    CHECK(size < DDICT_ACTOR_ACK_MAX / 16);
    telem_proto_encoder_destroy(&enc);
}

/* ---------------------------------------------------------------- dict */

typedef struct {
    int replies;
    int type;
    int code;
    uint64_t id;
    telem_proto_decoder_t *dec;
} s_out_t;

static int
s_out(void *arg, zmq_msg_t *route, const char *peer, zmq_msg_t *frames,
      size_t n)
{
    s_out_t *o = arg;
    (void) peer;
    telem_msg_t m;
    if (route && n && telem_proto_decode(o->dec, zmq_msg_data(&frames[0]),
                                         zmq_msg_size(&frames[0]), &m) == 0) {
        o->replies++;
        o->type = (int) m.type;
        o->code = (int) m.type == TELEM_MSG_DICT_REP ? m.u.dict_rep.code : 1;
        o->id = (int) m.type == TELEM_MSG_DICT_REP ? m.u.dict_rep.id : 1;
    }
    if (route)
        zmq_msg_close(route);
    for (size_t i = 0; i < n; i++)
        zmq_msg_close(&frames[i]);
    return 0;
}

/* Hands `data` to the server as a one-frame message from a client and
 * flushes; checks the one reply is a dict_rep of id 0 and `code`. */
static void
s_dict_refused(ddict_server_t *srv, s_out_t *o, const void *data,
               size_t size, int code)
{
    zmq_msg_t route, frame;
    zmq_msg_init_size(&route, 5);
    memcpy(zmq_msg_data(&route), "\0abcd", 5);
    zmq_msg_init_size(&frame, size);
    memcpy(zmq_msg_data(&frame), data, size);
    o->replies = 0;
    CHECK_RC(ddict_server_request(srv, &route, &frame, 1), code);
    ddict_server_flush(srv);
    CHECK_INT(o->replies, 1);
    CHECK_INT(o->type, TELEM_MSG_DICT_REP);
    CHECK_INT(o->code, code);
    CHECK_INT(o->id, 0);
}

static void
test_dict_refuses_foreign(void)
{
    char dir[64], log[128];
    REQUIRE(test_tmpdir(dir, sizeof dir, "test_hostile") == 0);
    snprintf(log, sizeof log, "%s/dict.log", dir);
    s_out_t o = {.dec = telem_proto_decoder_new()};
    ddict_server_config_t cfg = { .node = "d1", .log_path = log,
                                  .sync = DDICT_SYNC_NONE };
    int err = 0;
    ddict_server_t *srv = ddict_server_new(&cfg, s_out, &o, &err);
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    REQUIRE(srv && enc && o.dec);
    const void *data;
    size_t size;
    REQUIRE(s_ingest_msg(enc, 0, &data, &size) == 0);
    s_dict_refused(srv, &o, data, size, TELEM_EPROTO);
    telem_dict_rep_t rep = { 7, 1, 0, NULL, 0 };
    REQUIRE(
        telem_proto_encode_dict_rep(enc, TELEM_MSG_DICT_ACK, &rep, &data, &size)
        == 0);
    s_dict_refused(srv, &o, data, size, TELEM_EPROTO);
    s_dict_refused(srv, &o, "\x01\x02\x03", 3, TELEM_EPROTO);
    ddict_server_stats_t st;
    ddict_server_stats(srv, &st);
    CHECK_INT(st.bad_messages, 3);
    CHECK_INT(st.keys, 0);
    telem_proto_encoder_destroy(&enc);
    ddict_server_destroy(&srv);
    telem_proto_decoder_destroy(&o.dec);
    test_rmtree(dir);
}

/* ---------------------------------------------------------------- peercap */

#define S_CAP 3
#define S_CONNS 8

/* Opens a plain TCP connection to 127.0.0.1:port; -1 on failure. */
static int
s_tcp_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET,
                             .sin_port = htons((uint16_t) port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    if (fd >= 0 && connect(fd, (struct sockaddr *) &a, sizeof a) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* 1 once `fd` has seen its end (EOF or reset) within timeout_ms. */
static int
s_closed_within(int fd, int timeout_ms)
{
    char buf[256];
    int64_t end = telem_mono_ns() + (int64_t) timeout_ms * TELEM_NS_PER_MS;
    while (telem_mono_ns() < end) {
        struct pollfd p = { fd, POLLIN, 0 };
        if (poll(&p, 1, 50) <= 0)
            continue;
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            return 1;
    }
    return 0;
}

/* Handles the cap's events until `done` holds for its stats or 20 s. */
static void
s_cap_until(telem_peercap_t *cap, telem_peercap_stats_t *st, int accepted,
            int peers)
{
    zpoller_t *poller = zpoller_new(telem_peercap_sock(cap), NULL);
    int64_t end = telem_mono_ns() + 20 * TELEM_NS_PER_SEC;
    do {
        if (zpoller_wait(poller, 50))
            telem_peercap_handle(cap);
        telem_peercap_stats(cap, st);
    } while ((st->accepted < (uint64_t) accepted || st->peers != peers)
             && telem_mono_ns() < end);
    zpoller_destroy(&poller);
}

static void
test_peercap(void)
{
    char ep[128];
    int err;
    zsock_t *router = zsock_new(ZMQ_ROUTER);
    REQUIRE(router && zsock_bind(router, "tcp://127.0.0.1:0") >= 0);
    char *last = zsock_last_endpoint(router);
    snprintf(ep, sizeof ep, "%s", last);
    free(last);
    int port = atoi(strrchr(ep, ':') + 1);
    telem_peercap_t *cap = telem_peercap_new(router, S_CAP, &err);
    REQUIRE(cap);
    CHECK(!telem_peercap_new(router, 0, &err) && err == TELEM_EINVAL);
    int fds[S_CONNS];
    for (int i = 0; i < S_CONNS; i++)
        REQUIRE((fds[i] = s_tcp_connect(port)) >= 0);
    telem_peercap_stats_t st;
    s_cap_until(cap, &st, S_CONNS, S_CAP);
    CHECK_INT(st.accepted, S_CONNS);
    CHECK_INT(st.peers, S_CAP);
    CHECK_INT(st.refused, S_CONNS - S_CAP);
    /* The first S_CAP were accepted first and stay open; the rest were
       shut. */
    int closed = 0;
    for (int i = 0; i < S_CONNS; i++)
        closed += s_closed_within(fds[i], i < S_CAP ? 200 : 20000);
    CHECK_INT(closed, S_CONNS - S_CAP);
    for (int i = 0; i < S_CONNS; i++)
        close(fds[i]);
    s_cap_until(cap, &st, S_CONNS, 0);
    CHECK_INT(st.peers, 0);
    telem_peercap_destroy(&cap);
    CHECK(cap == NULL);
    zsock_destroy(&router);
}

/* ---------------------------------------------------------------- helper */

static void
s_nofree(void *data, void *hint)
{
    (void) data;
    (void) hint;
}

/* Sends N frames of SIZE zero bytes, all views of one buffer. */
static int
s_send_frames(void *sock, const char *spec)
{
    unsigned long n, size;
    if (sscanf(spec, "frames:%lu:%lu", &n, &size) != 2 || n == 0)
        return -1;
    static void *zeros;
    if (!zeros && !(zeros = calloc(1, size ? size : 1)))
        return -1;
    for (unsigned long i = 0; i < n; i++) {
        zmq_msg_t f;
        zmq_msg_init_data(&f, zeros, size, s_nofree, NULL);
        if (zmq_msg_send(&f, sock, i + 1 < n ? ZMQ_SNDMORE : 0) < 0) {
            zmq_msg_close(&f);
            return -1;
        }
    }
    return 0;
}

static int
s_send_what(void *sock, const char *what)
{
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    const void *data = NULL;
    size_t size = 0;
    int rc = -1;
    if (!strcmp(what, "batch") || !strcmp(what, "meta")) {
        rc = s_ingest_msg(enc, !strcmp(what, "meta"), &data, &size);
    } else if (!strcmp(what, "status")) {
        telem_control_t c = { .id = 5, .op = TELEM_CTL_STATUS };
        rc = telem_proto_encode_control(enc, &c, &data, &size);
    } else if (!strncmp(what, "frames:", 7)) {
        telem_proto_encoder_destroy(&enc);
        return s_send_frames(sock, what);
    }
    if (rc == 0)
        rc = zmq_send(sock, data, size, 0) < 0 ? -1 : 0;
    telem_proto_encoder_destroy(&enc);
    return rc;
}

/* Waits for a reply or a disconnect; prints what came. */
static void
s_await(zsock_t *dealer, zsock_t *mon, int timeout_ms)
{
    telem_proto_decoder_t *dec = telem_proto_decoder_new();
    zpoller_t *poller = zpoller_new(dealer, mon, NULL);
    int64_t end = telem_mono_ns() + (int64_t) timeout_ms * TELEM_NS_PER_MS;
    const char *said = "timeout";
    while (telem_mono_ns() < end && !strcmp(said, "timeout")) {
        void *which = zpoller_wait(poller, 100);
        if (which == dealer) {
            zframe_t *f = zframe_recv(dealer);
            int type, code = s_reply_code(dec, zframe_data(f),
                                          zframe_size(f), &type);
            printf("reply type=%d code=%d\n", type, code);
            zframe_destroy(&f);
            said = "reply";
        } else if (which == mon) {
            zmsg_t *ev = zmsg_recv(mon);
            said = "disconnected";
            zmsg_destroy(&ev);
        }
    }
    if (strcmp(said, "reply"))
        printf("%s\n", said);
    zpoller_destroy(&poller);
    telem_proto_decoder_destroy(&dec);
}

/* The node's bad_messages from a status request on `ctl`; -1 when no
 * reply came within 10 s. */
static int64_t
s_bad_count(const char *ctl)
{
    zsock_t *d = zsock_new(ZMQ_DEALER);
    telem_proto_encoder_t *enc = telem_proto_encoder_new();
    telem_proto_decoder_t *dec = telem_proto_decoder_new();
    telem_control_t c = { .id = 6, .op = TELEM_CTL_STATUS };
    const void *data;
    size_t size;
    int64_t bad = -1;
    zsock_set_linger(d, 0);
    zsock_set_rcvtimeo(d, 10000);
    if (zsock_connect(d, "%s", ctl) == 0
        && telem_proto_encode_control(enc, &c, &data, &size) == 0
        && zmq_send(zsock_resolve(d), data, size, 0) >= 0) {
        zframe_t *f = zframe_recv(d);
        telem_msg_t m;
        if (f && telem_proto_decode(dec, zframe_data(f), zframe_size(f), &m)
                     == 0 && m.type == TELEM_MSG_CONTROL_REPLY)
            bad = (int64_t) m.u.control_reply.status.bad_messages;
        zframe_destroy(&f);
    }
    telem_proto_decoder_destroy(&dec);
    telem_proto_encoder_destroy(&enc);
    zsock_destroy(&d);
    return bad;
}

/* `push ENDPOINT WHAT CTL`: sends WHAT on a PUSH and waits until the
 * connection is dropped ("disconnected") or the node counted one more bad
 * message ("counted"), asking CTL for its status. */
static int
s_push(const char *ep, const char *what, const char *ctl, int timeout_ms)
{
    int64_t before = s_bad_count(ctl);
    zsock_t *push = zsock_new(ZMQ_PUSH);
    zsock_set_linger(push, timeout_ms);
    zmq_socket_monitor(zsock_resolve(push), "inproc://hostile-pmon",
                       ZMQ_EVENT_DISCONNECTED);
    zsock_t *mon = zsock_new_pair(">inproc://hostile-pmon");
    if (before < 0 || !mon || zsock_connect(push, "%s", ep) != 0
        || s_send_what(zsock_resolve(push), what) != 0) {
        fprintf(stderr, "test_hostile: cannot push %s to %s\n", what, ep);
        return 2;
    }
    zpoller_t *poller = zpoller_new(mon, NULL);
    int64_t end = telem_mono_ns() + (int64_t) timeout_ms * TELEM_NS_PER_MS;
    const char *said = "timeout";
    while (!strcmp(said, "timeout") && telem_mono_ns() < end) {
        if (zpoller_wait(poller, 100))
            said = "disconnected";
        else if (s_bad_count(ctl) > before)
            said = "counted";
    }
    printf("%s\n", said);
    zpoller_destroy(&poller);
    zmq_socket_monitor(zsock_resolve(push), NULL, 0);
    zsock_destroy(&mon);
    zsock_destroy(&push);
    return 0;
}

static int
s_helper(int argc, char **argv)
{
    if (argc >= 5 && !strcmp(argv[1], "push"))
        return s_push(argv[2], argv[3], argv[4],
                      argc > 5 ? atoi(argv[5]) : 20000);
    if (argc < 4 || strcmp(argv[1], "send")) {
        fprintf(stderr, "usage: test_hostile [send ENDPOINT WHAT "
                "[TIMEOUT_MS] | push ENDPOINT WHAT CTL [TIMEOUT_MS]]\n");
        return 2;
    }
    int timeout_ms = argc > 4 ? atoi(argv[4]) : 20000;
    zsock_t *dealer = zsock_new(ZMQ_DEALER);
    zsock_set_linger(dealer, 0);
    snprintf(s_name, sizeof s_name, "inproc://hostile-mon");
    zmq_socket_monitor(zsock_resolve(dealer), s_name, ZMQ_EVENT_DISCONNECTED);
    zsock_t *mon = zsock_new_pair(">inproc://hostile-mon");
    if (!dealer || !mon || zsock_connect(dealer, "%s", argv[2]) != 0
        || s_send_what(zsock_resolve(dealer), argv[3]) != 0) {
        fprintf(stderr, "test_hostile: cannot send %s to %s\n", argv[3],
                argv[2]);
        return 2;
    }
    s_await(dealer, mon, timeout_ms);
    zmq_socket_monitor(zsock_resolve(dealer), NULL, 0);
    zsock_destroy(&mon);
    zsock_destroy(&dealer);
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc > 1)
        return s_helper(argc, argv);
    test_request_limit();
    test_libtelem_largest();
    test_agent_refuses_ingest();
    test_agent_counts();
    test_dict_ack_limit();
    test_dict_refuses_foreign();
    test_peercap();
    return check_report("test_hostile");
}
