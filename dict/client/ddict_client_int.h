/* ddict_client_int.h - PRIVATE to the dictionary client (ddict*.c).
 *
 * The files call one way, each only the files below it:
 *   ddict.c             the handle (open, close)
 *   ddict_api.c         the operations of ddict.h built on the engine
 *   ddict_reform.c      the re-form coordinator
 *   ddict_batch_exec.c  the request engine (dc_exec, ddict_batch_exec)
 *   ddict_conn.c        node file, sockets, frames out, map discovery
 *   ddict_batch.c       the batch container
 */
#ifndef DDICT_CLIENT_INT_H
#define DDICT_CLIENT_INT_H

#include <zmq.h>

#include "ddict.h"
#include "telem_keys.h"
#include "ddict_map.h"
#include "telem_paths.h"
#include "telem_proto.h"
#include "telem_proto_dict.h"

#define DC_CHUNK_OPS 4096          /* operations per request message */
/* Gets into caller buffers are streamed: one request each, the value in
 * frames of DC_STREAM_FRAME bytes, at most DC_STREAM_OPS requests or
 * DC_STREAM_BYTES of buffer in flight. */
#define DC_STREAM_FRAME (64u << 10)
#define DC_STREAM_OPS 64
#define DC_STREAM_BYTES (16u << 20)

typedef struct {
    char name[TELEM_NAME_MAX + 1];
    char endpoint[TELEM_PATH_MAX];
    void *sock;                    /* DEALER, connected lazily */
} dc_node_t;

struct ddict {
    char nodefile[TELEM_PATH_MAX];
    char ns[DDICT_NS_LIMIT + 8];
    int64_t timeout_ms;
    void *zctx;                    /* the process's shared libzmq context
                                      (dc_ctx_hold) */
    telem_keys_t *keys;            /* the job's keys: CURVE to servers on
                                      TCP (telem_keys_find); NULL: none */
    ddict_map_t *map;
    uint64_t epoch;
    dc_node_t *nodes;              /* in map order */
    int nnodes;
    dc_node_t *rf;                 /* the re-form coordinator's sockets,
                                      kept for the next re-form */
    int nrf;
    telem_proto_encoder_t *enc;
    telem_proto_decoder_t *dec;
    uint64_t next_id;
    ddict_batch_t *one;            /* scratch batch for single calls */
};

struct ddict_batch {
    telem_dict_op_t *ops;
    const void **vals;             /* borrowed value bytes of puts */
    size_t *vlens;
    int *target;                   /* node index, -1: primary of the key */
    int32_t *codes;
    uint64_t *versions;
    zmq_msg_t *rvals;              /* values of gets (zero-length if none) */
    uint8_t *into;                 /* 1: a get into a caller buffer */
    void **dst;                    /* that buffer (NULL if dcap is 0) */
    size_t *dcap;                  /* its capacity */
    size_t *dlen;                  /* the value's length */
    uint8_t *done;
    size_t n, cap;
};

/* ddict_batch.c: adds an operation; val (vlen bytes) goes in a value frame when non-NULL. */
int dc_batch_add(ddict_batch_t *b, uint8_t op, const void *key, size_t klen,
                 uint64_t arg, const void *val, size_t vlen, int target);

/* Adds a streamed get whose value goes into dst (cap bytes). */
int dc_batch_add_into(ddict_batch_t *b, const void *key, size_t klen,
                      void *dst, size_t cap);

/* ddict_batch_exec.c: executes the batch against the handle's namespace
 * `ns` (NULL: the handle's), retrying what meets a re-forming or stale
 * map until the deadline.  0 or TELEM_ETIMEDOUT / TELEM_ENOMEM. */
int dc_exec(ddict_t *self, ddict_batch_t *b, const char *ns);

/* ddict_reform.c: closes the sockets the re-form coordinator kept. */
void dc_reform_forget(ddict_t *self);

/* ddict_conn.c: asks servers for the current map and installs it. */
int dc_refresh(ddict_t *self, int64_t deadline);

/* Installs the map of names[0..n) with `replicas` (0: default) at
 * `epoch`, the node endpoints from eps (NULL: looked up in the node
 * file, one read per node).  0 or TELEM_ENOMEM / TELEM_EINVAL. */
int dc_install(ddict_t *self, const char *const *names, int n, int replicas,
               uint64_t epoch, const char (*eps)[TELEM_PATH_MAX]);

/* Sends HELLO on the n open sockets (again every little while) and
 * installs the map of the first server that serves; the same results as
 * dc_refresh, on sockets the caller holds. */
int dc_hello_first(ddict_t *self, void **socks, int n, int64_t deadline);

/* The libzmq context the open handles share, with one more user; NULL:
 * no memory.  Thread-safe. */
void *dc_ctx_hold(void);
/* Drops a user of the shared context (*ctx_p, may hold NULL) and nulls
 * it; the last user ends the context.  The caller's sockets must be
 * closed.  Thread-safe. */
void dc_ctx_release(void **ctx_p);
/* Closes the handle's node sockets and forgets the node list. */
void dc_nodes_free(ddict_t *self);
/* A DEALER in the handle's context connected to endpoint (linger 0, no
 * size limits), or NULL. */
void *dc_connect(ddict_t *self, const char *endpoint);
/* Closes *sock_p (may hold NULL) and nulls it. */
void dc_close(void **sock_p);
/* The socket of map node i, connected on first use; NULL if unknown. */
void *dc_sock(ddict_t *self, int i);
/* Sends one frame (a copy of data); more: ZMQ_SNDMORE. */
int dc_send_frame(void *sock, const void *data, size_t size, int more);
/* Waits until one of socks[0..n) (NULL entries skipped) has a message or
 * the monotonic time `until` (ns) passes; returns that socket's index, or
 * -1.  items is scratch room for n poll items. */
int dc_poll(void *const *socks, int n, zmq_pollitem_t *items,
            int64_t until);
/* 1 if sock has a message waiting. */
int dc_has_input(void *sock);
/* Receives a waiting message: its first frame into head (initialised by
 * the caller), the rest dropped.  0, or -1 if none was waiting. */
int dc_recv_head(void *sock, zmq_msg_t *head);

/* Endpoint of `name` from the node file, or TELEM_ENOTFOUND. */
int dc_lookup(ddict_t *self, const char *name, char *ep, size_t size);

#endif
