/* telem_peercap.c - a cap on the TCP connections of a listening socket
 * (telem_peercap.h).
 *
 * Accepted and closed connections come from the socket's monitor
 * (telem_sockmon.h): the descriptor and the bound address of each.
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
#include "telem_sockmon.h"

#define S_EVENTS (ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED)

struct telem_peercap {
    telem_sockmon_t *mon;    /* the socket's connection events */
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
    self->mon = telem_sockmon_new(sock, S_EVENTS, &rc);
    if (!self->mon)
        goto out;
    rc = 0;
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
    return telem_sockmon_sock(self->mon);
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

int
telem_peercap_handle(telem_peercap_t *self)
{
    int refused = 0;
    uint16_t event;
    uint32_t fd;
    char addr[256];
    while (telem_sockmon_next(self->mon, &event, &fd, addr, sizeof addr)) {
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
    telem_sockmon_destroy(&self->mon);
    free(self);
    *self_p = NULL;
}
