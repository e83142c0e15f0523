/* telem_sock.c - the one socket factory of telem's daemons (telem_sock.h).
 *
 * Options go on before the bind or connect, so the first peer already sees
 * the daemon's limits.  The bound endpoint is read back with ZMQ_LAST_ENDPOINT
 * (libzmq's own record, with the port the kernel chose) rather than rebuilt
 * from the request.  A failed call destroys what it made; errno is saved
 * across that so the caller can still say why the bind failed.
 */
#include "telem_sock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "telem_error.h"

static zsock_t *
s_new(int type, const telem_sock_opts_t *o)
{
    zsock_t *sock = zsock_new(type);
    if (sock && telem_sock_raw_apply(zsock_resolve(sock), o) != 0)
        zsock_destroy(&sock);
    return sock;
}

/* Destroys *sock_p, keeping errno as the failed call left it. */
static void
s_discard(zsock_t **sock_p)
{
    int saved = errno;
    zsock_destroy(sock_p);
    errno = saved;
}

int
telem_sock_bind(zsock_t *sock, const char *endpoint,
                const telem_keys_t *keys, char *bound, size_t bound_size)
{
    if (telem_sock_raw_secure(zsock_resolve(sock), endpoint, 1, keys) != 0
        || zsock_bind(sock, "%s", endpoint) < 0)
        return TELEM_EIO;
    if (!bound)
        return 0;
    char *last = zsock_last_endpoint(sock);
    int n = snprintf(bound, bound_size, "%s", last ? last : endpoint);
    free(last);
    if (n < 0 || (size_t) n >= bound_size) {
        if (bound_size)
            *bound = '\0';
        return TELEM_ETOOBIG;
    }
    return 0;
}

zsock_t *
telem_sock_new_bind(int type, const telem_sock_opts_t *opts,
                    const char *endpoint, char *bound, size_t bound_size,
                    int *err)
{
    int rc = TELEM_ENOMEM;
    zsock_t *sock = s_new(type, opts);
    if (sock && (rc = telem_sock_bind(sock, endpoint, opts->keys, bound,
                                      bound_size)))
        s_discard(&sock);
    if (err)
        *err = rc;
    return sock;
}

zsock_t *
telem_sock_new_connect(int type, const telem_sock_opts_t *opts,
                       const char *endpoint)
{
    zsock_t *sock = s_new(type, opts);
    if (sock && (telem_sock_raw_secure(zsock_resolve(sock), endpoint, 0,
                                       opts->keys) != 0
                 || zsock_connect(sock, "%s", endpoint) != 0))
        s_discard(&sock);
    return sock;
}
