/* ddict_conn.c - the dictionary client's connections: the node file, one
 * DEALER per server (connected on first use), frames out, and map
 * discovery (dc_refresh: a HELLO to every server in the node file, the
 * first map from a server that serves wins).  Called by the handle, the
 * engine and the re-form coordinator above it; calls nothing of the
 * client's own (ddict.c lists the order of the client's files).
 *
 * Values are copied into their frames: the caller's buffer may be freed
 * as soon as a call returns, even one that timed out while ZeroMQ still
 * held the message.
 */
#include "ddict_client_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

#include "telem_sock.h"
#include "telem_time.h"

#define S_HELLO_WAIT_MS 100

int
dc_lookup(ddict_t *self, const char *name, char *ep, size_t size)
{
    return telem_nodefile_lookup(self->nodefile, name, ep, size);
}

/* Values of any size, nothing dropped, nothing left behind at close. */
static const telem_sock_opts_t s_dealer_opts = {
    .max_msg = -1, .sndhwm = 0, .rcvhwm = 0, .linger_ms = 0,
    .sndtimeo_ms = TELEM_SOCK_KEEP,
};

zsock_t *
dc_connect(const char *endpoint)
{
    return telem_sock_new_connect(ZMQ_DEALER, &s_dealer_opts, endpoint);
}

void
dc_nodes_free(ddict_t *self)
{
    for (int i = 0; i < self->nnodes; i++)
        zsock_destroy(&self->nodes[i].sock);
    free(self->nodes);
    self->nodes = NULL;
    self->nnodes = 0;
}

/* Installs the map of a HELLO reply. */
static int
s_install(ddict_t *self, const telem_dict_admin_rep_t *r)
{
    ddict_map_t *map = ddict_map_new(r->nodes, (int) r->nnodes, r->replicas,
                                     NULL);
    dc_node_t *nodes = calloc(r->nnodes ? r->nnodes : 1, sizeof *nodes);
    if (!map || !nodes) {
        ddict_map_destroy(&map);
        free(nodes);
        return TELEM_ENOMEM;
    }
    dc_nodes_free(self);
    for (uint32_t i = 0; i < r->nnodes; i++) {
        snprintf(nodes[i].name, sizeof nodes[i].name, "%s", r->nodes[i]);
        dc_lookup(self, nodes[i].name, nodes[i].endpoint,
                  sizeof nodes[i].endpoint);
    }
    ddict_map_destroy(&self->map);
    self->map = map;
    self->nodes = nodes;
    self->nnodes = (int) r->nnodes;
    self->epoch = r->epoch;
    return 0;
}

zsock_t *
dc_sock(ddict_t *self, int i)
{
    dc_node_t *n = &self->nodes[i];
    if (!n->sock && (n->endpoint[0]
                     || dc_lookup(self, n->name, n->endpoint,
                                  sizeof n->endpoint) == 0))
        n->sock = dc_connect(n->endpoint);
    return n->sock;
}

int
dc_send_frame(zsock_t *s, const void *data, size_t size, int more)
{
    zmq_msg_t m;
    if (zmq_msg_init_size(&m, size) != 0)
        return TELEM_ENOMEM;
    if (size)
        memcpy(zmq_msg_data(&m), data, size);
    if (zmq_msg_send(&m, zsock_resolve(s), more ? ZMQ_SNDMORE : 0) < 0) {
        zmq_msg_close(&m);
        return TELEM_ECONN;
    }
    return 0;
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
    zpoller_t *poller = zpoller_new(NULL);
    zsock_t *socks[DDICT_NODES_MAX];
    int n = 0;
    char line[TELEM_PATH_MAX + TELEM_NAME_MAX + 8];
    while (n < DDICT_NODES_MAX && fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        if (line[0] == '#' || !tab)
            continue;
        tab[strcspn(tab, "\r\n")] = '\0';
        if ((socks[n] = dc_connect(tab + 1)) != NULL)
            zpoller_add(poller, socks[n++]);
    }
    fclose(f);
    int rc = n ? TELEM_ETIMEDOUT : TELEM_ENOTFOUND;
    while (n && rc == TELEM_ETIMEDOUT) {
        telem_dict_admin_t m = { ++self->next_id, TELEM_DADM_HELLO, 0, 0, 0,
                                 NULL, 0 };
        const void *data;
        size_t size;
        if (telem_encode_dict_admin(self->enc, &m, &data, &size) != 0)
            break;
        for (int i = 0; i < n; i++)
            dc_send_frame(socks[i], data, size, 0);
        int64_t until = telem_mono_ns() + S_HELLO_WAIT_MS * TELEM_NS_PER_MS;
        if (until > deadline)
            until = deadline;
        for (;;) {
            int64_t left = (until - telem_mono_ns()) / TELEM_NS_PER_MS;
            zsock_t *s = left > 0 ? zpoller_wait(poller, (int) left) : NULL;
            if (!s)
                break;
            zmsg_t *msg = zmsg_recv(s);
            zframe_t *fr = msg ? zmsg_first(msg) : NULL;
            telem_msg_t r;
            if (fr && telem_proto_decode(self->dec, zframe_data(fr),
                                         zframe_size(fr), &r) == 0
                && (int) r.type == TELEM_MSG_DICT_ADMIN_REP
                && r.u.dict_admin_rep.id == m.id
                && r.u.dict_admin_rep.state == 0
                && r.u.dict_admin_rep.nnodes > 0) {
                rc = s_install(self, &r.u.dict_admin_rep);
                zmsg_destroy(&msg);
                break;
            }
            zmsg_destroy(&msg);
        }
        if (telem_mono_ns() >= deadline)
            break;
    }
    zpoller_destroy(&poller);
    for (int i = 0; i < n; i++)
        zsock_destroy(&socks[i]);
    return rc;
}
