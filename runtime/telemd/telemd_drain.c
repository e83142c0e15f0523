/* telemd_drain.c - telemd's ingest connections, shut one side at a time
 * so that a hand-over loses nothing (telemd_drain.h says why).
 *
 * A small set of descriptors fed by the PULL socket's monitor events; the
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

#define S_EVENTS (ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED)

struct telemd_drain {
    void *watched;           /* the monitored PULL socket */
    zsock_t *pair;           /* reads its events */
    int *fds;                /* open ingest connections */
    size_t nfds, cap;
    int released;            /* 1: shut new connections as they come */
};

telemd_drain_t *
telemd_drain_new(zsock_t *pull, int *err)
{
    int rc = TELEM_ENOMEM;
    telemd_drain_t *self = calloc(1, sizeof *self);
    if (!self)
        goto out;
    self->watched = zsock_resolve(pull);
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://telemd-drain-%p", (void *) self);
    rc = TELEM_EIO;
    if (zmq_socket_monitor(self->watched, ep, S_EVENTS) != 0) {
        self->watched = NULL;
        goto out;
    }
    rc = TELEM_ENOMEM;
    if (!(self->pair = zsock_new(ZMQ_PAIR)))
        goto out;
    zsock_set_rcvhwm(self->pair, 0);
    rc = zsock_connect(self->pair, "%s", ep) == 0 ? 0 : TELEM_EIO;
out:
    if (rc)
        telemd_drain_destroy(&self);
    if (err)
        *err = rc;
    return self;
}

void
telemd_drain_destroy(telemd_drain_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    telemd_drain_t *self = *self_p;
    if (self->watched)
        zmq_socket_monitor(self->watched, NULL, 0);
    zsock_destroy(&self->pair);
    free(self->fds);
    free(self);
    *self_p = NULL;
}

zsock_t *
telemd_drain_sock(telemd_drain_t *self)
{
    return self->pair;
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
    void *pair = zsock_resolve(self->pair);
    for (;;) {
        zmq_msg_t head, where;
        zmq_msg_init(&head);
        if (zmq_msg_recv(&head, pair, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&head);
            return;
        }
        uint16_t event = 0;
        uint32_t value = 0;
        int ok = zmq_msg_size(&head) >= 6 && zmq_msg_more(&head);
        if (ok) {
            memcpy(&event, zmq_msg_data(&head), 2);
            memcpy(&value, (char *) zmq_msg_data(&head) + 2, 4);
        }
        zmq_msg_close(&head);
        zmq_msg_init(&where);
        if (ok && zmq_msg_recv(&where, pair, 0) >= 0
            && zmq_msg_size(&where) >= 6
            && memcmp(zmq_msg_data(&where), "ipc://", 6) == 0)
            s_event(self, event, (int) value);
        zmq_msg_close(&where);
    }
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
