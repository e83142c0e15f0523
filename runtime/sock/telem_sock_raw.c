/* telem_sock_raw.c - the socket factory with libzmq alone
 * (telem_sock_raw.h).
 *
 * Options go on before the bind or connect, so the first peer already
 * sees the socket's limits.  A failed call closes what it made; errno is
 * saved across that so the caller can still say why.
 */
#include "telem_sock_raw.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <zmq.h>

#include "telem_error.h"

static int
s_set_int(void *sock, int option, int value)
{
    return value == TELEM_SOCK_KEEP
               ? 0 : zmq_setsockopt(sock, option, &value, sizeof value);
}

int
telem_sock_raw_apply(void *sock, const telem_sock_opts_t *o)
{
    if (o->max_msg != TELEM_SOCK_KEEP) {
        if (zmq_setsockopt(sock, ZMQ_MAXMSGSIZE, &o->max_msg,
                           sizeof o->max_msg) != 0)
            return -1;
    }
    if (s_set_int(sock, ZMQ_SNDHWM, o->sndhwm)
        || s_set_int(sock, ZMQ_RCVHWM, o->rcvhwm)
        || s_set_int(sock, ZMQ_LINGER, o->linger_ms)
        || s_set_int(sock, ZMQ_SNDTIMEO, o->sndtimeo_ms))
        return -1;
    if (o->immediate && s_set_int(sock, ZMQ_IMMEDIATE, o->immediate))
        return -1;
    if (o->reconnect_ivl_max_ms
        && s_set_int(sock, ZMQ_RECONNECT_IVL_MAX, o->reconnect_ivl_max_ms))
        return -1;
    return 0;
}

int
telem_sock_raw_secure(void *sock, const char *endpoint, int bind,
                      const telem_keys_t *keys)
{
    int tcp = strncmp(endpoint, "tcp://", 6) == 0;
    if (tcp && bind && s_set_int(sock, ZMQ_BACKLOG, TELEM_SOCK_BACKLOG))
        return -1;
    if (!tcp || !keys)
        return telem_keys_plain_ok(sock);
    return bind ? telem_keys_apply_server(sock, keys)
                : telem_keys_apply_client(sock, keys);
}

void *
telem_sock_raw_new(void *zctx, int type, const telem_sock_opts_t *opts,
                   const char *endpoint, int *err)
{
    int rc = TELEM_EINVAL;
    void *sock = NULL;
    if (!zctx || !opts || !endpoint)
        goto out;
    if (!(sock = zmq_socket(zctx, type))) {
        rc = errno == ENOMEM ? TELEM_ENOMEM : TELEM_EIO;
        goto out;
    }
    rc = TELEM_EINVAL;
    if (telem_sock_raw_apply(sock, opts) != 0)
        goto out;
    int bind = *endpoint == '@';
    const char *ep = endpoint + (bind || *endpoint == '>');
    if (telem_sock_raw_secure(sock, ep, bind, opts->keys) != 0)
        goto out;
    if (bind)
        rc = zmq_bind(sock, ep) == 0 ? 0 : TELEM_EIO;
    else
        rc = zmq_connect(sock, ep) == 0 ? 0 : TELEM_EINVAL;
out:
    if (rc && sock) {
        int saved = errno;
        zmq_close(sock);
        sock = NULL;
        errno = saved;
    }
    if (err)
        *err = rc;
    return sock;
}
