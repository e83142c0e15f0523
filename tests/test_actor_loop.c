/* test_actor_loop.c - unit tests for telem_actor_loop.h, the poll loop of
 * telemd's and the dictionary's actors, in a real czmq actor:
 *   - every message on an added socket reaches its handler, in order;
 *   - the timer hook runs again and again while nothing arrives, and
 *     after() runs after every wake-up;
 *   - "$TERM" on the pipe (zactor_destroy) ends the loop, which returns 1;
 *   - done() returning 1 ends the loop, which returns 0, and the actor
 *     then says DONE on its pipe;
 *   - other commands on the pipe are dropped without ending the loop.
 * Waits are for behaviour (a bounded number of polls), never a duration.
 */
#include <czmq.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "telem_actor_loop.h"
#include "telem_error.h"
#include "telem_time.h"

typedef struct {
    const char *endpoint;    /* the PAIR the test talks to */
    atomic_int msgs;         /* messages handled */
    atomic_int order_ok;     /* 1 while they came in order */
    atomic_int ticks;        /* next() calls */
    atomic_int afters;       /* after() calls */
    atomic_int stop;         /* done() says 1 once this is set */
    atomic_int result;       /* what telem_actor_loop_run returned */
} s_state_t;

static void
s_on_sock(void *sock, void *arg)
{
    s_state_t *st = arg;
    char *s = zstr_recv(sock);
    if (!s)
        return;
    int want = atomic_load(&st->msgs);
    if (atoi(s) != want)
        atomic_store(&st->order_ok, 0);
    atomic_fetch_add(&st->msgs, 1);
    zstr_free(&s);
}

static int
s_done(void *arg)
{
    return atomic_load(&((s_state_t *) arg)->stop);
}

static int64_t
s_next(void *arg)
{
    atomic_fetch_add(&((s_state_t *) arg)->ticks, 1);
    return telem_mono_ns() + TELEM_NS_PER_MS;   /* wake in 1 ms */
}

static void
s_after(void *arg)
{
    atomic_fetch_add(&((s_state_t *) arg)->afters, 1);
}

static void
s_actor(zsock_t *pipe, void *args)
{
    s_state_t *st = args;
    zsock_t *pair = zsock_new_pair(st->endpoint);   /* '@' binds */
    telem_actor_loop_hooks_t hooks = {
        .done = s_done, .next = s_next, .after = s_after, .arg = st,
        .cap_ms = 50, .freed_bytes = NULL,
    };
    telem_actor_loop_t *loop = telem_actor_loop_new(&hooks);
    int rc = TELEM_ENOMEM;
    if (pair && loop && telem_actor_loop_add(loop, pair, s_on_sock, st) == 0)
        rc = telem_actor_loop_run(loop, pipe);
    else
        zsock_signal(pipe, 0);
    atomic_store(&st->result, rc);
    telem_actor_loop_destroy(&loop);
    zsock_destroy(&pair);
    if (rc == 0)
        zstr_send(pipe, "DONE");
}

/* Polls `cond` up to 2,000 times, 10 ms apart at most (20 s). */
#define S_WAIT_FOR(cond)                                                     \
    do {                                                                     \
        for (int i_ = 0; i_ < 2000 && !(cond); i_++)                         \
            zclock_sleep(10);                                                \
    } while (0)

static void
test_messages_and_term(void)
{
    s_state_t st = { .endpoint = "@inproc://loop-term" };
    atomic_store(&st.order_ok, 1);
    zactor_t *a = zactor_new(s_actor, &st);
    REQUIRE(a);
    zsock_t *peer = zsock_new_pair(">inproc://loop-term");
    REQUIRE(peer);
    for (int i = 0; i < 100; i++)
        zstr_sendf(peer, "%d", i);
    S_WAIT_FOR(atomic_load(&st.msgs) == 100);
    CHECK_INT(atomic_load(&st.msgs), 100);
    CHECK(atomic_load(&st.order_ok));

    /* Nothing arrives: the timer hook keeps running, after() with it. */
    int t0 = atomic_load(&st.ticks), a0 = atomic_load(&st.afters);
    S_WAIT_FOR(atomic_load(&st.ticks) >= t0 + 5
               && atomic_load(&st.afters) >= a0 + 5);
    CHECK(atomic_load(&st.ticks) >= t0 + 5);
    CHECK(atomic_load(&st.afters) >= a0 + 5);

    /* A command other than $TERM is dropped: the loop goes on. */
    zstr_send(a, "HELLO");
    zstr_sendf(peer, "%d", 100);
    S_WAIT_FOR(atomic_load(&st.msgs) == 101);
    CHECK_INT(atomic_load(&st.msgs), 101);

    zactor_destroy(&a);                      /* sends $TERM and waits */
    CHECK_INT(atomic_load(&st.result), 1);
    zsock_destroy(&peer);
}

static void
test_done_ends_loop(void)
{
    s_state_t st = { .endpoint = "@inproc://loop-done" };
    zactor_t *a = zactor_new(s_actor, &st);
    REQUIRE(a);
    atomic_store(&st.stop, 1);
    char *s = zstr_recv(a);                   /* the actor's DONE */
    CHECK(s && strcmp(s, "DONE") == 0);
    zstr_free(&s);
    CHECK_INT(atomic_load(&st.result), 0);
    zactor_destroy(&a);
}

int
main(void)
{
    zsys_handler_set(NULL);
    test_messages_and_term();
    test_done_ends_loop();
    return check_report("test_actor_loop");
}
