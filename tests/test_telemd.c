/* test_telemd.c - the node agent over its real sockets, in one process.
 *
 * Starts telemd's actor on a temporary run directory and talks to it the way
 * applications and the analysis client do: batches over PUSH, queries and
 * control over DEALER (ipc and TCP).  Checks ingest, tags, level gating, the
 * end-of-stream handshake, node metrics, malformed input on every socket,
 * the one-agent-per-node lock, and shutdown.
 */
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "telem_error.h"
#include "telem_log.h"
#include "telem_proto.h"
#include "telem_time.h"
#include "telemd_actor.h"

static const char *const s_node = "n 1:ü";
static telem_proto_encoder_t *s_enc;
static telem_proto_decoder_t *s_dec;
static zframe_t *s_reply;       /* decoded replies point into the decoder */

/* Sends one request frame and decodes the reply (10 s deadline). */
static int
s_request(zsock_t *dealer, const void *data, size_t size, telem_msg_t *out)
{
    if (zsock_send(dealer, "b", data, size) != 0)
        return TELEM_EIO;
    zpoller_t *p = zpoller_new(dealer, NULL);
    void *ready = zpoller_wait(p, 10000);
    zpoller_destroy(&p);
    if (!ready)
        return TELEM_ETIMEDOUT;
    zframe_t *f = zframe_recv(dealer);
    REQUIRE(f);
    zframe_destroy(&s_reply);
    s_reply = f;
    return telem_proto_decode(s_dec, zframe_data(f), zframe_size(f), out);
}

static int
s_control(zsock_t *dealer, telem_ctl_op_t op, int64_t arg, telem_msg_t *out)
{
    static uint64_t id;
    telem_control_t c = { .id = ++id, .op = op, .arg = arg };
    const void *data;
    size_t size;
    REQUIRE(telem_proto_encode_control(s_enc, &c, &data, &size) == 0);
    return s_request(dealer, data, size, out);
}

static void
s_push_batch(zsock_t *push, const char *metric, int level, int n,
             uint64_t token)
{
    telem_sample_t *s = calloc((size_t) n + 1, sizeof *s);
    int64_t now = telem_now_ns();
    for (int i = 0; i < n; i++)
        s[i] = (telem_sample_t) { .metric = metric, .level = (uint8_t) level,
                                  .ts_ns = now - (n - i) * 1000, .value = i };
    telem_tag_t tags[] = { { "rank", "0" }, { "host", "spoofed" } };
    telem_batch_t b = { .source = "test", .tags = tags, .ntags = 2,
                        .samples = s, .nsamples = (uint32_t) n,
                        .fin_token = token };
    const void *data;
    size_t size;
    REQUIRE(telem_proto_encode_batch(s_enc, &b, &data, &size) == 0);
    REQUIRE(zsock_send(push, "b", data, size) == 0);
    free(s);
}

/* Waits until telemd confirms the token, i.e. everything before it. */
static int
s_sync(zsock_t *dealer, uint64_t token)
{
    for (int i = 0; i < 2000; i++) {
        telem_msg_t m;
        if (s_control(dealer, TELEM_CTL_SYNC, (int64_t) token, &m) != 0)
            return 0;
        if (m.type == TELEM_MSG_CONTROL_REPLY && m.u.control_reply.synced)
            return 1;
        zclock_sleep(5);
    }
    return 0;
}

/* Sends an end-of-stream marker after what was pushed and waits for it. */
static int
s_sync_after(zsock_t *push, zsock_t *dealer)
{
    static uint64_t token = 1000;
    token++;
    s_push_batch(push, "sync_marker", 1, 0, token);
    return s_sync(dealer, token);
}

static int
s_query(zsock_t *dealer, const char *metric, uint32_t flags, telem_msg_t *out)
{
    const char *metrics[] = { metric };
    telem_query_t q = { .id = 7, .metrics = metrics, .nmetrics = metric ? 1 : 0,
                        .flags = flags };
    const void *data;
    size_t size;
    REQUIRE(telem_proto_encode_query(s_enc, &q, &data, &size) == 0);
    return s_request(dealer, data, size, out);
}

static const char *
s_tag(const telem_series_t *s, const char *key)
{
    for (uint32_t i = 0; i < s->ntags; i++)
        if (strcmp(s->tags[i].key, key) == 0)
            return s->tags[i].value;
    return NULL;
}

static void
test_ingest_and_query(zsock_t *push, zsock_t *dealer)
{
    s_push_batch(push, "user_metric", 1, 100, 0);
    REQUIRE(s_sync_after(push, dealer));
    telem_msg_t m;
    REQUIRE(s_query(dealer, "user_metric", 0, &m) == 0);
    REQUIRE(m.type == TELEM_MSG_QUERY_REPLY);
    CHECK(m.u.query_reply.id == 7);
    CHECK(strcmp(m.u.query_reply.node, s_node) == 0);
    REQUIRE(m.u.query_reply.nseries == 1);
    const telem_series_t *s = &m.u.query_reply.series[0];
    CHECK(s->npoints == 100);
    for (uint32_t i = 1; i < s->npoints; i++)
        CHECK(s->ts[i] > s->ts[i - 1] && s->values[i] == (double) i);
    CHECK(s_tag(s, "host") && strcmp(s_tag(s, "host"), s_node) == 0);
    CHECK(s_tag(s, "rank") && strcmp(s_tag(s, "rank"), "0") == 0);
}

static void
test_level_gating(zsock_t *push, zsock_t *dealer)
{
    telem_msg_t m;
    REQUIRE(s_control(dealer, TELEM_CTL_SET_LEVEL, 1, &m) == 0);
    REQUIRE(m.type == TELEM_MSG_CONTROL_REPLY);
    CHECK(m.u.control_reply.status.level == 1);
    uint64_t dropped = m.u.control_reply.status.dropped;
    s_push_batch(push, "gated_metric", 2, 10, 0);
    REQUIRE(s_sync_after(push, dealer));
    REQUIRE(s_query(dealer, "gated_metric", 0, &m) == 0);
    CHECK(m.type == TELEM_MSG_QUERY_REPLY && m.u.query_reply.nseries == 0);
    REQUIRE(s_control(dealer, TELEM_CTL_STATUS, 0, &m) == 0);
    CHECK(m.u.control_reply.status.dropped == dropped + 10);
    REQUIRE(s_control(dealer, TELEM_CTL_SET_LEVEL, 9, &m) == 0);
    CHECK(m.type == TELEM_MSG_ERROR && m.u.error.code == TELEM_EINVAL);
    REQUIRE(s_control(dealer, TELEM_CTL_SET_LEVEL, 2, &m) == 0);
    CHECK(m.type == TELEM_MSG_CONTROL_REPLY);
}

static void
test_bad_input(zsock_t *push, zsock_t *dealer)
{
    telem_msg_t m;
    REQUIRE(s_control(dealer, TELEM_CTL_STATUS, 0, &m) == 0);
    uint64_t bad = m.u.control_reply.status.bad_messages;
    zsock_send(push, "b", "\x81\xa1v\x01", (size_t) 4);     /* no type */
    zsock_send(push, "b", "garbage", (size_t) 7);
    zsock_send(push, "b", "", (size_t) 0);
    zsock_send(push, "bb", "a", (size_t) 1, "b", (size_t) 1); /* two frames */
    REQUIRE(s_sync_after(push, dealer));
    /* Garbage on the request socket gets an error reply, not silence. */
    REQUIRE(s_request(dealer, "\xc1\xc1", 2, &m) == 0);
    CHECK(m.type == TELEM_MSG_ERROR && m.u.error.code == TELEM_EPROTO);
    REQUIRE(s_control(dealer, TELEM_CTL_STATUS, 0, &m) == 0);
    CHECK(m.u.control_reply.status.bad_messages >= bad + 5);
}

static void
test_node_metrics(zsock_t *dealer)
{
    telem_msg_t m;
    int found = 0;
    for (int i = 0; i < 400 && !found; i++) {
        REQUIRE(s_query(dealer, "cpu_percent", 0, &m) == 0);
        found = m.type == TELEM_MSG_QUERY_REPLY && m.u.query_reply.nseries;
        if (!found)
            zclock_sleep(25);
    }
    CHECK(found);
    REQUIRE(s_query(dealer, NULL, TELEM_QUERY_LIST, &m) == 0);
    int documented = 0;
    for (uint32_t i = 0; i < m.u.query_reply.nseries; i++)
        if (strcmp(m.u.query_reply.series[i].metric, "used_ram") == 0)
            documented = m.u.query_reply.series[i].doc[0] != '\0';
    CHECK(documented);
}

static void
test_lock_and_shutdown(telemd_t **d_p, const telemd_config_t *cfg,
                       zsock_t *dealer)
{
    int err = 0;
    telemd_t *second = telemd_new(cfg, &err);
    CHECK(second == NULL && err == TELEM_ESTATE);
    telem_msg_t m;
    REQUIRE(s_control(dealer, TELEM_CTL_SHUTDOWN, 0, &m) == 0);
    CHECK(m.type == TELEM_MSG_CONTROL_REPLY);
    CHECK(telemd_wait(*d_p, 10000) == 1);
    telemd_destroy(d_p);
    CHECK(*d_p == NULL);
    /* The node is free again once the first agent is gone. */
    telemd_t *again = telemd_new(cfg, &err);
    CHECK(again != NULL);
    telemd_destroy(&again);
}

int
main(void)
{
    telem_log_init("test_telemd", TELEM_LOG_ERROR);
    char dir[] = "/tmp/telem-test-XXXXXX";
    REQUIRE(mkdtemp(dir));
    telemd_config_t cfg = {
        .node = s_node, .rundir = dir, .level = 2,
        .window_ns = 300 * TELEM_NS_PER_SEC,
        .interval_ns = 20 * TELEM_NS_PER_MS,
        .tcp_bind = "tcp://127.0.0.1:*", .job_uid = getuid(),
    };
    int err = 0;
    telemd_t *d = telemd_new(&cfg, &err);
    if (!d)
        fprintf(stderr, "telemd_new: %s\n", telem_strerror(err));
    REQUIRE(d);
    CHECK(strncmp(telemd_tcp_endpoint(d), "tcp://127.0.0.1:", 16) == 0);
    s_enc = telem_proto_encoder_new();
    s_dec = telem_proto_decoder_new();
    zsock_t *push = zsock_new_push(telemd_ingest_endpoint(d));
    zsock_t *ipc = zsock_new_dealer(telemd_ctl_endpoint(d));
    zsock_t *tcp = zsock_new_dealer(telemd_tcp_endpoint(d));
    REQUIRE(push && ipc && tcp);

    test_ingest_and_query(push, tcp);
    test_level_gating(push, ipc);
    test_bad_input(push, ipc);
    test_node_metrics(tcp);
    test_lock_and_shutdown(&d, &cfg, ipc);

    zsock_destroy(&push);
    zsock_destroy(&ipc);
    zsock_destroy(&tcp);
    telem_proto_encoder_destroy(&s_enc);
    telem_proto_decoder_destroy(&s_dec);
    zframe_destroy(&s_reply);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    return check_report("test_telemd");
}
