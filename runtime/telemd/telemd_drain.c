/* telemd_drain.c - telemd's ingest connections, shut one side at a time
 * so that a hand-over loses nothing (telemd_drain.h says why).
 *
 * A small set of descriptors fed by the PULL socket's connection events
 * (telem_sockmon.h); the
 * set is bounded by the process's descriptor limit, as the connections
 * themselves are.
 */
#include "telemd_drain.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "telem_error.h"
#include "telem_grow.h"
#include "telem_sockmon.h"

#define S_EVENTS (ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED)

struct telemd_drain {
    telem_sockmon_t *mon;    /* the PULL socket's connection events */
    int *fds;                /* open ingest connections */
    size_t nfds, cap;
    int released;            /* 1: shut new connections as they come */
};

telemd_drain_t *
telemd_drain_new(zsock_t *pull, int *err)
{
    int rc = TELEM_ENOMEM;
    telemd_drain_t *self = calloc(1, sizeof *self);
    if (self && !(self->mon = telem_sockmon_new(pull, S_EVENTS, &rc)))
        telemd_drain_destroy(&self);
    if (err)
        *err = self ? 0 : rc;
    return self;
}

void
telemd_drain_destroy(telemd_drain_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    telemd_drain_t *self = *self_p;
    telem_sockmon_destroy(&self->mon);
    free(self->fds);
    free(self);
    *self_p = NULL;
}

zsock_t *
telemd_drain_sock(telemd_drain_t *self)
{
    return telem_sockmon_sock(self->mon);
}

/* Shuts the writing side of `fd` if it is still a connected unix socket
 * (the event may be older than the number's current owner). */
static int
s_shut(int fd)
{
    struct sockaddr_storage me;
    socklen_t len = sizeof me;
    int listening = 0;
    socklen_t ilen = sizeof listening;
    if (fd < 0 || getsockname(fd, (struct sockaddr *) &me, &len) != 0
        || me.ss_family != AF_UNIX
        || getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ilen) != 0
        || listening)
        return 0;
    return shutdown(fd, SHUT_WR) == 0;
}

static void
s_forget(telemd_drain_t *self, int fd)
{
    for (size_t i = 0; i < self->nfds; i++)
        if (self->fds[i] == fd) {
            self->fds[i] = self->fds[--self->nfds];
            return;
        }
}

static void
s_event(telemd_drain_t *self, uint16_t event, int fd)
{
    if (event == ZMQ_EVENT_DISCONNECTED) {
        s_forget(self, fd);
        return;
    }
    if (event != ZMQ_EVENT_ACCEPTED)
        return;
    if (telem_grow((void **) &self->fds, &self->cap, self->nfds + 1,
                   sizeof *self->fds, 16) == 0)
        self->fds[self->nfds++] = fd;
    if (self->released)
        s_shut(fd);
}

void
telemd_drain_handle(telemd_drain_t *self)
{
    uint16_t event;
    uint32_t fd;
    char ep[64];
    while (telem_sockmon_next(self->mon, &event, &fd, ep, sizeof ep))
        if (strncmp(ep, "ipc://", 6) == 0)
            s_event(self, event, (int) fd);
}

int
telemd_drain_release(telemd_drain_t *self)
{
    int n = 0;
    self->released = 1;
    for (size_t i = 0; i < self->nfds; i++)
        n += s_shut(self->fds[i]);
    return n;
}

int
telemd_drain_open(const telemd_drain_t *self)
{
    return (int) self->nfds;
}
