/* ddict_actor.h - a dictionary server's sockets and event loop (czmq actor).
 *
 * ddict_actor_new() prepares the node directory, binds the server's ROUTER
 * (ipc in the node directory, and TCP when asked), registers the endpoint
 * in the dictionary node file, opens the server (replaying its log) and
 * runs the loop in an actor thread.  The loop drains the ROUTER and the
 * peer sockets in bursts and ends each burst with ddict_server_flush()
 * (one log sync per burst, then the replies).  Peer sockets (DEALERs to
 * the other servers, for replication and re-forming) are made on first
 * use from the node file.
 */
#ifndef DDICT_ACTOR_H
#define DDICT_ACTOR_H

#include "ddict_server.h"
#include "telem_keys.h"
#include "telem_proto_dict.h"

typedef struct {
    const char *node;
    const char *rundir;
    const char *nodefile;       /* dictionary node file to register in */
    const char *tcp;            /* "tcp://127.0.0.1:0" or NULL for ipc only */
    const telem_keys_t *keys;   /* the job's keys: the TCP endpoint and the
                                   peer connections are CURVE (the
                                   process's ZAP handler, telem_zap.h, must
                                   run); NULL: plain TCP.  Kept by pointer:
                                   they outlive the actor */
    int max_tcp_peers;          /* TCP connections held at once; more are
                                   refused (telem_peercap.h); 0 = the
                                   default, TELEM_TCP_PEERS_DEFAULT */
    ddict_server_config_t server;  /* node and log_path are filled in */
    /* When set, called in the actor's thread every stats_period_ns (and
       once at start) with the server's counters; how telem_dictd records
       them as metrics of its node.  It must not block. */
    void (*on_stats)(const ddict_server_stats_t *st, void *arg);
    void *stats_arg;
    int64_t stats_period_ns;
} ddict_actor_config_t;

/* Frames of one message the server's ROUTER takes: the header and one
 * frame per operation with a value.  A message of more is refused with a
 * dict_rep of code TELEM_ETOOBIG; its frames past this are closed as they
 * are read.  Each frame is at most DDICT_VALUE_LIMIT bytes (libzmq drops
 * a connection that sends a larger one). */
#define DDICT_ACTOR_FRAMES_MAX (1 + TELEM_DICT_OPS_MAX)

/* Largest frame the server's peer sockets take: they receive only
 * acknowledgements (dict_ack), one frame of id, epoch and code, about 30
 * bytes (tests/test_hostile.c measures the largest).  A larger frame makes
 * libzmq drop the connection; a reply of more than one frame is refused
 * and counted. */
#define DDICT_ACTOR_ACK_MAX 4096

typedef struct ddict_actor ddict_actor_t;

/* Starts the server.  Returns NULL and sets *err on failure (TELEM_ESTATE:
 * another server holds this node's lock). */
ddict_actor_t *ddict_actor_new(const ddict_actor_config_t *cfg, int *err);

/* Stops the loop, syncs the log, closes everything; accepts NULL. */
void ddict_actor_destroy(ddict_actor_t **self_p);

/* The endpoint clients and peers use (TCP if bound, else ipc). */
const char *ddict_actor_endpoint(const ddict_actor_t *self);

/* The actor's pipe: it sends "DONE" when the loop ended on its own
 * (shutdown request or interrupt). */
void *ddict_actor_pipe(ddict_actor_t *self);

#endif
