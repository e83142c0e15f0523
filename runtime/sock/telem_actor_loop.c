/* telem_actor_loop.c - the poll loop of a telem actor (telem_actor_loop.h).
 *
 * One zpoller over the pipe and the sockets; a socket's handler is found
 * by a linear search of the few sockets an actor has.
 */
#include "telem_actor_loop.h"

#include <stdlib.h>

#include "telem_error.h"
#include "telem_grow.h"
#include "telem_limits.h"
#include "telem_time.h"

typedef struct {
    void *sock;
    telem_actor_loop_fn *fn;
    void *arg;
} s_reader_t;

struct telem_actor_loop {
    telem_actor_loop_hooks_t hooks;
    zpoller_t *poller;
    s_reader_t *readers;
    size_t n, cap;
    zsock_t *pipe;          /* in the poller, once added */
};

telem_actor_loop_t *
telem_actor_loop_new(const telem_actor_loop_hooks_t *hooks)
{
    telem_actor_loop_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->hooks = *hooks;
    if (!(self->poller = zpoller_new(NULL))) {
        free(self);
        return NULL;
    }
    /* The done hook checks zsys_interrupted itself; without this the
       poller would return at once forever after the first SIGINT/SIGTERM. */
    zpoller_set_nonstop(self->poller, true);
    return self;
}

void
telem_actor_loop_destroy(telem_actor_loop_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    telem_actor_loop_t *self = *self_p;
    zpoller_destroy(&self->poller);
    free(self->readers);
    free(self);
    *self_p = NULL;
}

int
telem_actor_loop_add(telem_actor_loop_t *self, void *sock,
                     telem_actor_loop_fn *fn, void *arg)
{
    if (telem_grow((void **) &self->readers, &self->cap, self->n + 1,
                   sizeof *self->readers, 8))
        return TELEM_ENOMEM;
    if (zpoller_add(self->poller, sock) != 0)
        return TELEM_ENOMEM;
    self->readers[self->n++] = (s_reader_t) { sock, fn, arg };
    return 0;
}

int
telem_actor_loop_add_pipe(telem_actor_loop_t *self, zsock_t *pipe)
{
    if (zpoller_add(self->poller, pipe) != 0)
        return TELEM_ENOMEM;
    self->pipe = pipe;
    return 0;
}

/* Milliseconds until `next` (monotonic ns), between 0 and cap_ms. */
static int
s_wait_ms(const telem_actor_loop_t *self, int64_t next)
{
    int64_t wait_ms = (next - telem_mono_ns()) / TELEM_NS_PER_MS;
    if (wait_ms < 0)
        wait_ms = 0;
    if (wait_ms > self->hooks.cap_ms)
        wait_ms = self->hooks.cap_ms;
    return (int) wait_ms;
}

/* 1 when the pipe said "$TERM" or closed. */
static int
s_pipe_term(zsock_t *pipe)
{
    char *cmd = zstr_recv(pipe);
    int term = !cmd || streq(cmd, "$TERM");
    zstr_free(&cmd);
    return term;
}

static void
s_dispatch(telem_actor_loop_t *self, void *which)
{
    for (size_t i = 0; i < self->n; i++)
        if (self->readers[i].sock == which) {
            self->readers[i].fn(which, self->readers[i].arg);
            return;
        }
}

int
telem_actor_loop_run(telem_actor_loop_t *self, zsock_t *pipe)
{
    if (self->pipe != pipe && telem_actor_loop_add_pipe(self, pipe) != 0)
        return TELEM_ENOMEM;
    const telem_actor_loop_hooks_t *h = &self->hooks;
    zsock_signal(pipe, 0);
    while (!h->done(h->arg)) {
        void *which = zpoller_wait(self->poller, s_wait_ms(self,
                                                           h->next(h->arg)));
        if (which == pipe) {
            if (s_pipe_term(pipe))
                return 1;
        } else if (which) {
            s_dispatch(self, which);
        } else if (h->freed_bytes) {
            telem_limits_trim(h->freed_bytes);
        }
        if (h->after)
            h->after(h->arg);
    }
    return 0;
}
