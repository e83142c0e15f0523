/* test_sock.c - unit tests for the socket factory: the daemons' czmq path
 * (telem_sock.h) and the raw-libzmq path of the libraries
 * (telem_sock_raw.h).
 *
 * Binds on loopback with a kernel-chosen port and on ipc paths in a
 * temporary directory, checks the endpoint reported back, that every
 * option reaches the socket (and TELEM_SOCK_KEEP leaves czmq's default),
 * that a factory-made DEALER and ROUTER really talk, and the failures: a
 * malformed endpoint, a port in use, a result buffer too small.  The raw
 * path: '@' binds and '>' (or nothing) connects in the caller's context,
 * every option including immediate and the reconnect interval reaches the
 * socket, a raw pair talks, and a bad endpoint or a failed bind fails
 * with its code and leaves nothing open.
 */
#include "tmpdir.h"

#include <czmq.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "telem_error.h"
#include "telem_sock.h"
#include "telem_sock_raw.h"

static const telem_sock_opts_t s_opts = {
    .max_msg = 4096, .sndhwm = 7, .rcvhwm = 0, .linger_ms = 123,
    .sndtimeo_ms = 0,
};

static const telem_sock_opts_t s_keep = {
    .max_msg = TELEM_SOCK_KEEP, .sndhwm = TELEM_SOCK_KEEP,
    .rcvhwm = TELEM_SOCK_KEEP, .linger_ms = TELEM_SOCK_KEEP,
    .sndtimeo_ms = TELEM_SOCK_KEEP,
};

static void
test_options(void)
{
    int err = -1;
    char ep[128];
    zsock_t *s = telem_sock_new_bind(ZMQ_ROUTER, &s_opts, "tcp://127.0.0.1:0",
                                     ep, sizeof ep, &err);
    CHECK(s != NULL);
    CHECK_RC(err, 0);
    if (s) {
        CHECK_INT(zsock_maxmsgsize(s), 4096);
        CHECK_INT(zsock_sndhwm(s), 7);
        CHECK_INT(zsock_rcvhwm(s), 0);
        CHECK_INT(zsock_linger(s), 123);
        CHECK_INT(zsock_sndtimeo(s), 0);
    }
    zsock_destroy(&s);
    /* KEEP: the same values as a plain czmq socket. */
    zsock_t *plain = zsock_new(ZMQ_DEALER);
    s = telem_sock_new_connect(ZMQ_DEALER, &s_keep, "tcp://127.0.0.1:1");
    CHECK(plain != NULL && s != NULL);
    if (plain && s) {
        CHECK_INT(zsock_maxmsgsize(s), zsock_maxmsgsize(plain));
        CHECK_INT(zsock_sndhwm(s), zsock_sndhwm(plain));
        CHECK_INT(zsock_rcvhwm(s), zsock_rcvhwm(plain));
        CHECK_INT(zsock_linger(s), zsock_linger(plain));
        CHECK_INT(zsock_sndtimeo(s), zsock_sndtimeo(plain));
    }
    zsock_destroy(&s);
    zsock_destroy(&plain);
}

/* A kernel-chosen port is reported, and a connected DEALER reaches it. */
static void
test_tcp_roundtrip(void)
{
    char ep[128];
    int err = -1;
    zsock_t *router = telem_sock_new_bind(ZMQ_ROUTER, &s_opts,
                                          "tcp://127.0.0.1:0", ep, sizeof ep,
                                          &err);
    CHECK_RC(err, 0);
    CHECK(strncmp(ep, "tcp://127.0.0.1:", 16) == 0);
    CHECK(atoi(ep + 16) > 0);
    zsock_t *dealer = telem_sock_new_connect(ZMQ_DEALER, &s_opts, ep);
    CHECK(router != NULL && dealer != NULL);
    if (!router || !dealer)
        goto out;
    zsock_set_rcvtimeo(router, 10000);
    zsock_set_rcvtimeo(dealer, 10000);
    CHECK_RC(zstr_send(dealer, "ping"), 0);
    zmsg_t *msg = zmsg_recv(router);
    CHECK(msg != NULL && zmsg_size(msg) == 2);
    if (msg) {
        zframe_t *id = zmsg_pop(msg);
        char *body = zmsg_popstr(msg);
        CHECK_STR(body, "ping");
        zmsg_t *reply = zmsg_new();
        zmsg_append(reply, &id);
        zmsg_addstr(reply, "pong");
        CHECK_RC(zmsg_send(&reply, router), 0);
        zmsg_destroy(&reply);
        free(body);
        zmsg_destroy(&msg);
    }
    char *pong = zstr_recv(dealer);
    CHECK_STR(pong, "pong");
    zstr_free(&pong);
out:
    zsock_destroy(&dealer);
    zsock_destroy(&router);
}

/* An ipc endpoint reports itself, absolute or relative; one ROUTER then
   binds TCP as well and reports the TCP endpoint. */
static void
test_ipc_and_more(const char *dir)
{
    char want[512], ep[512];
    snprintf(want, sizeof want, "ipc://%s/a.sock", dir);
    int err = -1;
    zsock_t *s = telem_sock_new_bind(ZMQ_ROUTER, &s_opts, want, ep, sizeof ep,
                                     &err);
    CHECK_RC(err, 0);
    CHECK_STR(ep, want);
    CHECK_RC(telem_sock_bind(s, "tcp://127.0.0.1:0", NULL, ep, sizeof ep), 0);
    CHECK(strncmp(ep, "tcp://127.0.0.1:", 16) == 0);
    /* NULL bound: bind only. */
    CHECK_RC(telem_sock_bind(s, "tcp://127.0.0.1:0", NULL, NULL, 0), 0);
    zsock_destroy(&s);

    char cwd[512];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK_RC(chdir(dir), 0);
    s = telem_sock_new_bind(ZMQ_PULL, &s_opts, "ipc://rel.sock", ep,
                            sizeof ep, NULL);
    CHECK(s != NULL);
    CHECK_STR(ep, "ipc://rel.sock");
    zsock_destroy(&s);
    CHECK_RC(chdir(cwd), 0);
}

static void
test_failures(void)
{
    char ep[128] = "untouched";
    int err = 0;
    errno = 0;
    zsock_t *s = telem_sock_new_bind(ZMQ_ROUTER, &s_opts, "nope://x", ep,
                                     sizeof ep, &err);
    CHECK(s == NULL);
    CHECK_RC(err, TELEM_EIO);
    CHECK(errno != 0);
    CHECK_STR(ep, "untouched");

    /* A port in use: the second bind fails with EADDRINUSE. */
    zsock_t *first = telem_sock_new_bind(ZMQ_ROUTER, &s_opts,
                                         "tcp://127.0.0.1:0", ep, sizeof ep,
                                         &err);
    CHECK(first != NULL);
    errno = 0;
    s = telem_sock_new_bind(ZMQ_ROUTER, &s_opts, ep, NULL, 0, &err);
    CHECK(s == NULL);
    CHECK_RC(err, TELEM_EIO);
    CHECK_INT(errno, EADDRINUSE);
    zsock_destroy(&first);

    /* The bound endpoint does not fit: no socket, TELEM_ETOOBIG. */
    char small[12];
    s = telem_sock_new_bind(ZMQ_ROUTER, &s_opts, "tcp://127.0.0.1:0", small,
                            sizeof small, &err);
    CHECK(s == NULL);
    CHECK_RC(err, TELEM_ETOOBIG);
    CHECK_STR(small, "");
    /* On a socket already made, it stays bound and usable. */
    s = telem_sock_new_bind(ZMQ_ROUTER, &s_opts, "tcp://127.0.0.1:0", NULL, 0,
                            &err);
    CHECK_RC(telem_sock_bind(s, "tcp://127.0.0.1:0", NULL, small,
                             sizeof small),
             TELEM_ETOOBIG);
    zsock_destroy(&s);

    CHECK(telem_sock_new_connect(ZMQ_DEALER, &s_opts, "nope://x") == NULL);
}

static int
s_getint(void *sock, int option)
{
    int v = -12345;
    size_t len = sizeof v;
    zmq_getsockopt(sock, option, &v, &len);
    return v;
}

static void
test_raw(const char *dir)
{
    void *ctx = zmq_ctx_new();
    CHECK(ctx != NULL);
    const telem_sock_opts_t o = {
        .max_msg = 5000000000LL, .sndhwm = 9, .rcvhwm = 11, .linger_ms = 0,
        .sndtimeo_ms = 5, .immediate = 1, .reconnect_ivl_max_ms = 1000,
    };
    char ep[128];
    snprintf(ep, sizeof ep, "@ipc://%s/raw.sock", dir);
    int err = -1;
    void *srv = telem_sock_raw_new(ctx, ZMQ_ROUTER, &s_keep, ep, &err);
    CHECK(srv != NULL && err == 0);
    ep[0] = '>';
    void *cli = telem_sock_raw_new(ctx, ZMQ_DEALER, &o, ep, &err);
    CHECK(cli != NULL && err == 0);
    if (cli) {
        int64_t max = 0;
        size_t len = sizeof max;
        zmq_getsockopt(cli, ZMQ_MAXMSGSIZE, &max, &len);
        CHECK(max == 5000000000LL);
        CHECK_INT(s_getint(cli, ZMQ_SNDHWM), 9);
        CHECK_INT(s_getint(cli, ZMQ_RCVHWM), 11);
        CHECK_INT(s_getint(cli, ZMQ_LINGER), 0);
        CHECK_INT(s_getint(cli, ZMQ_SNDTIMEO), 5);
        CHECK_INT(s_getint(cli, ZMQ_IMMEDIATE), 1);
        CHECK_INT(s_getint(cli, ZMQ_RECONNECT_IVL_MAX), 1000);
    }
    if (srv) {           /* KEEP and 0 leave libzmq's defaults */
        CHECK_INT(s_getint(srv, ZMQ_SNDHWM), 1000);
        CHECK_INT(s_getint(srv, ZMQ_IMMEDIATE), 0);
        CHECK_INT(s_getint(srv, ZMQ_RECONNECT_IVL_MAX), 0);
    }
    /* A raw pair talks: DEALER to ROUTER and back. */
    if (srv && cli) {
        int t = 2000;
        zmq_setsockopt(srv, ZMQ_RCVTIMEO, &t, sizeof t);
        zmq_setsockopt(cli, ZMQ_RCVTIMEO, &t, sizeof t);
        CHECK(zmq_send(cli, "ping", 4, 0) == 4);
        char id[256], buf[16];
        int idlen = zmq_recv(srv, id, sizeof id, 0);
        CHECK(idlen > 0 && zmq_recv(srv, buf, sizeof buf, 0) == 4
              && memcmp(buf, "ping", 4) == 0);
        CHECK(idlen > 0 && zmq_send(srv, id, (size_t) idlen, ZMQ_SNDMORE)
                               == idlen
              && zmq_send(srv, "pong", 4, 0) == 4);
        CHECK(zmq_recv(cli, buf, sizeof buf, 0) == 4
              && memcmp(buf, "pong", 4) == 0);
    }
    /* No prefix connects. */
    void *plain = telem_sock_raw_new(ctx, ZMQ_DEALER, &o, ep + 1, &err);
    CHECK(plain != NULL && err == 0);
    /* Failures: a malformed endpoint, a bind that fails, no context;
       NULL err is allowed. */
    CHECK(telem_sock_raw_new(ctx, ZMQ_DEALER, &o, ">nope://x", &err) == NULL
          && err == TELEM_EINVAL);
    void *bad = telem_sock_raw_new(ctx, ZMQ_ROUTER, &o,
                                   "@tcp://no-such-interface-here:1", &err);
    CHECK(bad == NULL && err == TELEM_EIO);
    if (bad)
        zmq_close(bad);
    CHECK(telem_sock_raw_new(NULL, ZMQ_DEALER, &o, ep, NULL) == NULL);
    if (plain)
        zmq_close(plain);
    if (cli)
        zmq_close(cli);
    if (srv)
        zmq_close(srv);
    zmq_ctx_term(ctx);   /* returns: every socket is closed */
}

int
main(void)
{
    char dir[64];
    if (test_tmpdir(dir, sizeof dir, "test_sock") != 0) {
        perror("mkdtemp");
        return 1;
    }
    test_options();
    test_tcp_roundtrip();
    test_ipc_and_more(dir);
    test_failures();
    test_raw(dir);
    CHECK(test_rmtree(dir) == 0);
    return check_report("test_sock");
}
