/* ddict_conn.c - the dictionary client's connections: the node file, one
 * DEALER per server (connected on first use), frames out, and map
 * discovery (dc_refresh: a HELLO to every server in the node file, the
 * first map from a server that serves wins).  Called by the handle, the
 * engine and the re-form coordinator above it; calls nothing of the
 * client's own (ddict.c lists the order of the client's files).
 *
 * Raw libzmq, sockets made by the factory's raw path (telem_sock_raw.h):
 * a program that links the client never initialises czmq, so its own
 * SIGINT and SIGTERM handling is left alone.
 *
 * The handles of a process share one libzmq context, as they shared
 * czmq's global one before: one I/O thread for all of them.  A context
 * per handle gives every handle an I/O thread of its own, and on a small
 * machine eight handles with eight I/O threads served about a fifth fewer
 * unpipelined requests (bench_dict, x8 cells).  The context is the
 * client's one piece of process state: made by the first open, ended by
 * the last close, under a mutex (dc_ctx_hold, dc_ctx_release).
 *
 * Values are copied into their frames: the caller's buffer may be freed
 * as soon as a call returns, even one that timed out while ZeroMQ still
 * held the message.
 */
#include "ddict_client_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/file.h>

#include "telem_sock_raw.h"
#include "telem_time.h"

#define S_HELLO_WAIT_MS 100

int
dc_lookup(ddict_t *self, const char *name, char *ep, size_t size)
{
    return telem_nodefile_lookup(self->nodefile, name, ep, size);
}

/* ------------------------------------------------------------- context */

static pthread_mutex_t s_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static void *s_ctx;             /* shared by the open handles */
static size_t s_ctx_users;

void *
dc_ctx_hold(void)
{
    pthread_mutex_lock(&s_ctx_lock);
    if (!s_ctx && (s_ctx = zmq_ctx_new()) != NULL)
        /* Room for every handle's sockets: one to each server while a
           map is learnt, one to each map node. */
        zmq_ctx_set(s_ctx, ZMQ_MAX_SOCKETS, 4 * DDICT_NODES_MAX + 64);
    void *ctx = s_ctx;
    if (ctx)
        s_ctx_users++;
    pthread_mutex_unlock(&s_ctx_lock);
    return ctx;
}

void
dc_ctx_release(void **ctx_p)
{
    if (!*ctx_p)
        return;
    void *end = NULL;
    pthread_mutex_lock(&s_ctx_lock);
    if (--s_ctx_users == 0) {
        end = s_ctx;
        s_ctx = NULL;
    }
    pthread_mutex_unlock(&s_ctx_lock);
    if (end)
        zmq_ctx_term(end);      /* every socket is closed, linger 0 */
    *ctx_p = NULL;
}

/* ---------------------------------------------------------------- sockets */

/* Values of up to TELEM_DICT_VALUE_MAX, each a frame of its own (the
   header frame is held to 64 MiB by the codec): a larger frame makes
   libzmq drop the connection.  Nothing dropped, nothing left behind at
   close. */
static const telem_sock_opts_t s_dealer_opts = {
    .max_msg = (int64_t) TELEM_DICT_VALUE_MAX, .sndhwm = 0, .rcvhwm = 0,
    .linger_ms = 0,
    .sndtimeo_ms = TELEM_SOCK_KEEP, .immediate = 0,
    .reconnect_ivl_max_ms = 0,
};

void *
dc_connect(ddict_t *self, const char *endpoint)
{
    telem_sock_opts_t o = s_dealer_opts;
    o.keys = self->keys;
    return telem_sock_raw_new(self->zctx, ZMQ_DEALER, &o, endpoint, NULL);
}

void
dc_close(void **sock_p)
{
    if (*sock_p)
        zmq_close(*sock_p);
    *sock_p = NULL;
}

void
dc_nodes_free(ddict_t *self)
{
    for (int i = 0; i < self->nnodes; i++)
        dc_close(&self->nodes[i].sock);
    free(self->nodes);
    self->nodes = NULL;
    self->nnodes = 0;
}

int
dc_install(ddict_t *self, const char *const *names, int n, int replicas,
           uint64_t epoch, const char (*eps)[TELEM_PATH_MAX])
{
    ddict_map_t *map = ddict_map_new(names, n, replicas, NULL);
    dc_node_t *nodes = calloc(n > 0 ? (size_t) n : 1, sizeof *nodes);
    if (!map || !nodes) {
        ddict_map_destroy(&map);
        free(nodes);
        return TELEM_ENOMEM;
    }
    dc_nodes_free(self);
    for (int i = 0; i < n; i++) {
        snprintf(nodes[i].name, sizeof nodes[i].name, "%s", names[i]);
        if (eps)
            snprintf(nodes[i].endpoint, sizeof nodes[i].endpoint, "%s",
                     eps[i]);
        else
            dc_lookup(self, nodes[i].name, nodes[i].endpoint,
                      sizeof nodes[i].endpoint);
    }
    ddict_map_destroy(&self->map);
    self->map = map;
    self->nodes = nodes;
    self->nnodes = n;
    self->epoch = epoch;
    return 0;
}

/* Installs the map of a HELLO reply. */
static int
s_install(ddict_t *self, const telem_dict_admin_rep_t *r)
{
    return dc_install(self, r->nodes, (int) r->nnodes, r->replicas, r->epoch,
                      NULL);
}

void *
dc_sock(ddict_t *self, int i)
{
    dc_node_t *n = &self->nodes[i];
    if (!n->sock && (n->endpoint[0]
                     || dc_lookup(self, n->name, n->endpoint,
                                  sizeof n->endpoint) == 0))
        n->sock = dc_connect(self, n->endpoint);
    return n->sock;
}

/* ---------------------------------------------------------------- frames */

int
dc_send_frame(void *sock, const void *data, size_t size, int more)
{
    zmq_msg_t m;
    if (zmq_msg_init_size(&m, size) != 0)
        return TELEM_ENOMEM;
    if (size)
        memcpy(zmq_msg_data(&m), data, size);
    if (zmq_msg_send(&m, sock, more ? ZMQ_SNDMORE : 0) < 0) {
        zmq_msg_close(&m);
        return TELEM_ECONN;
    }
    return 0;
}

int
dc_poll(void *const *socks, int n, zmq_pollitem_t *items, int64_t until)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (socks[i])
            items[k++] = (zmq_pollitem_t) { socks[i], 0, ZMQ_POLLIN, 0 };
    for (;;) {
        int64_t ms = (until - telem_mono_ns()) / TELEM_NS_PER_MS;
        if (ms <= 0)
            return -1;
        int rc = zmq_poll(items, k, ms > INT32_MAX ? INT32_MAX : (long) ms);
        if (rc < 0 && zmq_errno() == EINTR)
            continue;
        if (rc <= 0)
            return -1;
        for (int j = 0; j < k; j++)
            if (items[j].revents & ZMQ_POLLIN)
                for (int i = 0; i < n; i++)
                    if (socks[i] == items[j].socket)
                        return i;
        return -1;
    }
}

int
dc_has_input(void *sock)
{
    int events = 0;
    size_t len = sizeof events;
    return zmq_getsockopt(sock, ZMQ_EVENTS, &events, &len) == 0
           && (events & ZMQ_POLLIN);
}

int
dc_recv_head(void *sock, zmq_msg_t *head)
{
    if (zmq_msg_recv(head, sock, ZMQ_DONTWAIT) < 0)
        return -1;
    if (zmq_msg_more(head)) {
        zmq_msg_t rest;
        zmq_msg_init(&rest);
        int more = 1;
        while (more && zmq_msg_recv(&rest, sock, 0) >= 0)
            more = zmq_msg_more(&rest);
        zmq_msg_close(&rest);
    }
    return 0;
}

/* ---------------------------------------------------------------- map */

/* Takes one reply off sock: 1 and the map installed (*rc its result) if
 * it is the HELLO answer `id` of a server that serves, else 0. */
static int
s_hello_reply(ddict_t *self, void *sock, uint64_t id, int *rc)
{
    zmq_msg_t head;
    zmq_msg_init(&head);
    telem_msg_t r;
    int ok = dc_recv_head(sock, &head) == 0
             && telem_proto_decode(self->dec, zmq_msg_data(&head),
                                   zmq_msg_size(&head), &r) == 0
             && (int) r.type == TELEM_MSG_DICT_ADMIN_REP
             && r.u.dict_admin_rep.id == id
             && r.u.dict_admin_rep.state == 0
             && r.u.dict_admin_rep.nnodes > 0;
    if (ok)
        *rc = s_install(self, &r.u.dict_admin_rep);
    zmq_msg_close(&head);
    return ok;
}

/* Connects to every server of the node file; returns how many. */
static int
s_connect_all(ddict_t *self, FILE *f, void **socks)
{
    int n = 0;
    char line[TELEM_PATH_MAX + TELEM_NAME_MAX + 8];
    while (n < DDICT_NODES_MAX && fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        if (line[0] == '#' || !tab)
            continue;
        tab[strcspn(tab, "\r\n")] = '\0';
        if ((socks[n] = dc_connect(self, tab + 1)) != NULL)
            n++;
    }
    return n;
}

int
dc_hello_first(ddict_t *self, void **socks, int n, int64_t deadline)
{
    zmq_pollitem_t *items = calloc(n > 0 ? (size_t) n : 1, sizeof *items);
    int rc = !items ? TELEM_ENOMEM : n ? TELEM_ETIMEDOUT : TELEM_ENOTFOUND;
    while (n && rc == TELEM_ETIMEDOUT) {
        telem_dict_admin_t m = { ++self->next_id, TELEM_DADM_HELLO, 0, 0, 0,
                                 NULL, 0 };
        const void *data;
        size_t size;
        if (telem_proto_encode_dict_admin(self->enc, &m, &data, &size) != 0)
            break;
        for (int i = 0; i < n; i++)
            dc_send_frame(socks[i], data, size, 0);
        int64_t until = telem_mono_ns() + S_HELLO_WAIT_MS * TELEM_NS_PER_MS;
        if (until > deadline)
            until = deadline;
        for (int i; (i = dc_poll(socks, n, items, until)) >= 0;)
            if (s_hello_reply(self, socks[i], m.id, &rc))
                break;
        if (telem_mono_ns() >= deadline)
            break;
    }
    free(items);
    return rc;
}

int
dc_refresh(ddict_t *self, int64_t deadline)
{
    /* Ask every server in the node file; install the first map from a
       server that is not re-forming. */
    FILE *f = fopen(self->nodefile, "r");
    if (!f)
        return TELEM_ENOTFOUND;
    flock(fileno(f), LOCK_SH);
    void **socks = calloc(DDICT_NODES_MAX, sizeof *socks);
    int n = socks ? s_connect_all(self, f, socks) : 0;
    fclose(f);
    int rc = !socks ? TELEM_ENOMEM : dc_hello_first(self, socks, n, deadline);
    for (int i = 0; i < n; i++)
        dc_close(&socks[i]);
    free(socks);
    return rc;
}
