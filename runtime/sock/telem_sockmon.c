/* telem_sockmon.c - a libzmq socket's connection events (telem_sockmon.h). */
#include "telem_sockmon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telem_error.h"

struct telem_sockmon {
    void *watched;           /* the monitored libzmq socket */
    zsock_t *pair;           /* reads its events */
};

telem_sockmon_t *
telem_sockmon_new(zsock_t *sock, int events, int *err)
{
    int rc = TELEM_ENOMEM;
    telem_sockmon_t *self = calloc(1, sizeof *self);
    if (!self)
        goto out;
    self->watched = zsock_resolve(sock);
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://telem-sockmon-%p", (void *) self);
    rc = TELEM_EIO;
    if (zmq_socket_monitor(self->watched, ep, events) != 0) {
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
        telem_sockmon_destroy(&self);
    if (err)
        *err = rc;
    return self;
}

void
telem_sockmon_destroy(telem_sockmon_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    telem_sockmon_t *self = *self_p;
    /* Stop the monitor first: its PAIR must not outlive our reader. */
    if (self->watched)
        zmq_socket_monitor(self->watched, NULL, 0);
    zsock_destroy(&self->pair);
    free(self);
    *self_p = NULL;
}

zsock_t *
telem_sockmon_sock(telem_sockmon_t *self)
{
    return self->pair;
}

int
telem_sockmon_next(telem_sockmon_t *self, uint16_t *event, uint32_t *value,
                   char *ep, size_t size)
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
    *ep = '\0';
    if (ok && zmq_msg_recv(&where, pair, 0) >= 0) {
        size_t n = zmq_msg_size(&where) < size ? zmq_msg_size(&where)
                                                : size - 1;
        memcpy(ep, zmq_msg_data(&where), n);
        ep[n] = '\0';
    }
    zmq_msg_close(&where);
    if (!ok)
        *event = 0;
    return 1;
}
