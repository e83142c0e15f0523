/* telem_peercap.c - a cap on the TCP connections of a listening socket
 * (telem_peercap.h).
 *
 * Events come from zmq_socket_monitor() in its version 1 format: a first
 * frame of 6 bytes (uint16 event, uint32 value: the descriptor for both
 * events used here) and a second frame naming the endpoint (for an
 * accepted connection, the address the socket is bound to).  The PAIR
 * that reads them has no receive limit: libzmq's I/O thread sends events
 * with a blocking send, and a full pipe would stall every socket of the
 * context until the owner read it.  Memory stays bounded because every
 * event stands for a connection, and connections are bounded by the
 * descriptor limit.
 */
#include "telem_peercap.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <inttypes.h>

#include "telem_error.h"
#include "telem_log.h"

#define S_EVENTS (ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED)

struct telem_peercap {
    void *watched;           /* the monitored libzmq socket */
    zsock_t *pair;           /* reads its events */
    int max;
    telem_peercap_stats_t st;
    telem_ratelimit_t log;   /* refusals, at most 10 lines a second */
};

telem_peercap_t *
telem_peercap_new(zsock_t *sock, int max_peers, int *err)
{
    int rc = TELEM_EINVAL;
    telem_peercap_t *self = NULL;
    if (!sock || max_peers < 1)
        goto out;
    rc = TELEM_ENOMEM;
    if (!(self = calloc(1, sizeof *self)))
        goto out;
    self->max = max_peers;
    self->log = (telem_ratelimit_t) TELEM_RATELIMIT_INIT(10, 1);
    self->watched = zsock_resolve(sock);
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://telem-peercap-%p", (void *) self);
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
    if (rc) {
        int saved = errno;
        telem_peercap_destroy(&self);
        errno = saved;
    }
    if (err)
        *err = rc;
    return self;
}

zsock_t *
telem_peercap_sock(telem_peercap_t *self)
{
    return self->pair;
}

int
telem_peercap_max(const telem_peercap_t *self)
{
    return self->max;
}

void
telem_peercap_stats(const telem_peercap_t *self, telem_peercap_stats_t *st)
{
    *st = self->st;
}

/* The port of a "tcp://host:port" endpoint, or -1. */
static long
s_port(const char *addr)
{
    const char *colon = strrchr(addr, ':');
    if (!colon)
        return -1;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    return *end == '\0' && port > 0 && port < 65536 ? port : -1;
}

/* Shuts the reading side of `fd` if it is still a connected TCP socket on
 * the local port of `addr` (the event may be older than the descriptor
 * number's current owner, see the header). */
static int
s_refuse(int fd, const char *addr)
{
    struct sockaddr_storage me, peer;
    socklen_t mlen = sizeof me, plen = sizeof peer;
    if (fd < 0 || getsockname(fd, (struct sockaddr *) &me, &mlen) != 0
        || getpeername(fd, (struct sockaddr *) &peer, &plen) != 0)
        return 0;
    long port = -1;
    if (me.ss_family == AF_INET)
        port = ntohs(((struct sockaddr_in *) &me)->sin_port);
    else if (me.ss_family == AF_INET6)
        port = ntohs(((struct sockaddr_in6 *) &me)->sin6_port);
    if (port < 0 || port != s_port(addr))
        return 0;
    return shutdown(fd, SHUT_RD) == 0;
}

/* Reads one event; returns 1 with *event, *value and addr set, 0 when
 * none waits. */
static int
s_next(telem_peercap_t *self, uint16_t *event, uint32_t *value, char *addr,
       size_t size)
{
    void *pair = zsock_resolve(self->pair);
    zmq_msg_t head, where;
    zmq_msg_init(&head);
    if (zmq_msg_recv(&head, pair, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&head);
        return 0;
    }
    int ok = zmq_msg_size(&head) >= 6 && zmq_msg_more(&head);
    if (ok) {
        memcpy(event, zmq_msg_data(&head), 2);
        memcpy(value, (char *) zmq_msg_data(&head) + 2, 4);
    }
    zmq_msg_close(&head);
    zmq_msg_init(&where);
    *addr = '\0';
    if (ok && zmq_msg_recv(&where, pair, 0) >= 0) {
        size_t n = zmq_msg_size(&where) < size ? zmq_msg_size(&where)
                                                : size - 1;
        memcpy(addr, zmq_msg_data(&where), n);
        addr[n] = '\0';
    }
    zmq_msg_close(&where);
    if (!ok)
        *event = 0;
    return 1;
}

int
telem_peercap_handle(telem_peercap_t *self)
{
    int refused = 0;
    uint16_t event;
    uint32_t fd;
    char addr[256];
    while (s_next(self, &event, &fd, addr, sizeof addr)) {
        if (strncmp(addr, "tcp://", 6) != 0)
            continue;            /* ipc connections are not capped */
        if (event == ZMQ_EVENT_DISCONNECTED) {
            self->st.peers--;
            continue;
        }
        if (event != ZMQ_EVENT_ACCEPTED)
            continue;
        self->st.accepted++;
        if (++self->st.peers > self->st.peak)
            self->st.peak = self->st.peers;
        if (self->st.peers > self->max && s_refuse((int) fd, addr)) {
            self->st.refused++;
            refused++;
        }
    }
    if (refused)
        telem_log_limited(&self->log, TELEM_LOG_WARN, "%" PRId64 " TCP "
                          "peers, cap %d: refused %" PRIu64 " connections "
                          "so far (--max-tcp-peers)", self->st.peers,
                          self->max, self->st.refused);
    return refused;
}

void
telem_peercap_destroy(telem_peercap_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    telem_peercap_t *self = *self_p;
    /* Stop the monitor first: its PAIR must not outlive our reader. */
    if (self->watched)
        zmq_socket_monitor(self->watched, NULL, 0);
    zsock_destroy(&self->pair);
    free(self);
    *self_p = NULL;
}
