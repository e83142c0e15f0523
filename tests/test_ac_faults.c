/* test_ac_faults.c - the analysis client against misbehaving fake nodes
 * (tests/ac_fake.h): a node that never answers, none that answers, late
 * and stale replies, error replies, garbage and oversized replies.  The
 * checks are on behaviour (who is missing, which data came, that a call
 * returns within a generous multiple of its deadline), not on tight
 * timings.
 */
#include "ac_fake.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* ---- tests ------------------------------------------------------------- */

/* Binds a TCP socket to a free loopback port without listening on it and
 * writes "tcp://127.0.0.1:PORT" to ep.  Returns the socket (close it when
 * done) or -1. */
static int
s_refusing_port(char *ep, size_t size)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = { .sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *) &a, sizeof a) != 0
        || getsockname(fd, (struct sockaddr *) &a, &len) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    snprintf(ep, size, "tcp://127.0.0.1:%u", (unsigned) ntohs(a.sin_port));
    return fd;
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
test_silent_node_is_partial(void *ctx)
{
    const int deadline_ms = 1000;   /* generous: n1 and n3 must answer */
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
    const int deadline_ms = 1000;
    fake_t f[1];
    s_fake_start(&f[0], ctx, "quiet", FAKE_SILENT);
    /* An endpoint where nothing listens: a port held by a TCP socket that
       is bound but not listening, so every connection is refused and no
       other program (tests run in parallel) can take the port meanwhile. */
    char dead[128];
    int hold = s_refusing_port(dead, sizeof dead);
    CHECK(hold >= 0);

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
    close(hold);
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
    ac_t *ac = s_client(f, 5, 3000);
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

int
main(void)
{
    void *ctx = zmq_ctx_new();
    test_silent_node_is_partial(ctx);
    test_nobody_answers(ctx);
    test_stale_replies(ctx);
    test_error_replies(ctx);
    zmq_ctx_term(ctx);
    return check_report("test_ac_faults");
}
