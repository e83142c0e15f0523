/* ddict_server_int.h - PRIVATE to the dictionary server (ddict_server*.c).
 *
 * The server is split by responsibility into files that call one way,
 * each only the files below it:
 *   ddict_server.c          life cycle, log replay, dispatch, flush, tick
 *   ddict_server_repl.c     replication in, re-forming (admin)
 *   ddict_server_ops.c      client operations on the primary, replication
 *                           out
 *   ddict_server_pending.c  acknowledgement waits, rollback, event waiters
 *   ddict_server_compact.c  log compaction in bounded steps
 *   ddict_server_base.c     log appends, the map, held replies, frames and
 *                           values, counters
 * The prototypes below are grouped by the file that defines them, lowest
 * first.
 */
#ifndef DDICT_SERVER_INT_H
#define DDICT_SERVER_INT_H

#include "ddict_log.h"
#include "ddict_server.h"
#include "ddict_map.h"
#include "ddict_store.h"
#include "ddict_val.h"
#include "telem_log.h"
#include "telem_paths.h"
#include "telem_proto.h"
#include "telem_proto_dict.h"

#define DS_EV_NS "\001ev"          /* namespace of events */
#define DS_EV_NSLEN 3
#define DS_PENDING_TTL_NS (30 * INT64_C(1000000000))
#define DS_XFER_OPS 1024           /* entries per transfer message */
#define DS_XFER_BYTES (8u << 20)

/* A reply waiting for the end of the burst (route set) or a message to a
 * peer (peer set). */
typedef struct {
    zmq_msg_t route;
    zmq_msg_t *frames;
    size_t n;
} ds_out_t;

/* How to undo one write of a client request if its replication fails:
 * the key (bytes in the request's undo buffer), the value and version it
 * had before, and the version the write gave it. */
typedef struct {
    uint32_t shard;
    uint8_t nslen;
    uint32_t klen;
    const uint8_t *bytes;      /* ns then key */
    int had;                   /* the key existed before */
    ddict_val_t *old;          /* its value then (a reference), or NULL */
    uint64_t old_version;
    uint64_t new_version;      /* 0: the write was a delete */
} ds_undo_t;

/* Something waiting for acknowledgements from peers: a client write (its
 * reply is ready and held here) or a re-form transfer (an admin reply). */
typedef struct {
    uint64_t id;               /* 0: free slot */
    uint64_t reply_id;         /* the client's request id */
    int waiting;               /* acknowledgements still due */
    int32_t code;              /* first failure reported by a peer */
    int64_t deadline;
    ds_out_t reply;
    int is_event;              /* wake waiters of ev_key when done */
    char *ev_key;
    uint32_t ev_klen;
    int transfer;              /* counts towards xfer_left */
    ds_undo_t *undo;           /* client writes to roll back on failure */
    size_t nundo;
    uint8_t *undo_buf;
} ds_pending_t;

typedef struct {
    zmq_msg_t route;
    uint64_t id;
    uint64_t epoch;
    char *key;
    uint32_t klen;
    int64_t deadline;
} ds_waiter_t;

typedef struct ds_compact ds_compact_t;

struct ddict_server {
    ddict_server_config_t cfg;
    char node[TELEM_NAME_MAX + 1];
    ddict_out_fn out;
    void *out_arg;
    ddict_store_t *store;
    ddict_log_t *log;
    ddict_map_t *map;
    int self_idx;
    uint64_t epoch;
    uint64_t committed;        /* epoch of the last map served under */
    int reforming;
    int stopping;
    telem_proto_encoder_t *enc;
    telem_proto_decoder_t *dec;
    telem_ratelimit_t rl;
    /* held replies */
    ds_out_t *outbox;
    size_t nout, capout;
    /* pending acknowledgements: ring indexed by id */
    ds_pending_t *pend;
    size_t cappend;
    uint64_t next_id, oldest_id;
    /* event waiters */
    ds_waiter_t *waiters;
    size_t nwait, capwait;
    /* re-form transfer in progress */
    int xfer_left;             /* transfer messages not yet acknowledged */
    int xfer_active;
    int32_t xfer_code;         /* first failure of the transfer */
    uint64_t xfer_id;          /* the TRANSFER request's id */
    zmq_msg_t xfer_route;      /* and who asked */
    /* scratch for building messages */
    telem_dict_op_t *ops;
    telem_dict_res_t *res;
    ddict_val_t **vals;        /* a request's values, in op order */
    ddict_val_t **rvals;       /* a reply's values, by result */
    size_t capops;
    ds_compact_t *compact;     /* compaction in progress, or NULL */
    int failed_io;
    uint64_t bad_messages;
    ddict_log_stats_t replay;
};

/* ddict_server_base.c */
void ds_close_frames(zmq_msg_t *frames, size_t n);
int ds_log(ddict_server_t *self, uint8_t type, uint32_t shard,
           const ddict_store_key_t *k, const void *val, uint64_t vlen,
           uint64_t version);
int ds_log_val(ddict_server_t *self, uint32_t shard,
               const ddict_store_key_t *k, ddict_val_t *val,
               uint64_t version);
/* A received frame as a value: small ones are copied, larger ones are
 * moved inside the value, shared without a copy.  *msg is left an empty
 * message either way (the caller still closes it).  NULL: no memory. */
ddict_val_t *ds_val_from_msg(zmq_msg_t *msg);
/* Initialises *out as a frame of val's bytes [off, off + len): small
 * frames are copies, larger ones share the bytes, holding a reference to
 * val that ZeroMQ drops (from its I/O thread) when the frame is sent or
 * closed.  0 or TELEM_ENOMEM (then *out is not initialised). */
int ds_msg_from_val(zmq_msg_t *out, ddict_val_t *val, size_t off,
                    size_t len);
/* Releases vals[0 .. n). */
void ds_release_vals(ddict_val_t **vals, size_t n);
int ds_reserve(ddict_server_t *self, size_t n);
int ds_set_map(ddict_server_t *self, const char *const *nodes, int n,
               int replicas, uint64_t epoch, int log_it);
int ds_hold(ddict_server_t *self, zmq_msg_t *route, zmq_msg_t *frames,
            size_t n);
int ds_send_peer(ddict_server_t *self, const char *peer, zmq_msg_t *frames,
                 size_t n);
int ds_reply_code(ddict_server_t *self, zmq_msg_t *route, int type,
                  uint64_t id, int32_t code);

/* ddict_server_compact.c */
int ds_dump(void *arg, ddict_log_t *out);
/* Advances a compaction in progress by one bounded step, or starts one
 * when the log has grown past its threshold.  Called after each flush. */
void ds_compact_step(ddict_server_t *self);
/* Drops a compaction in progress (the live log is untouched). */
void ds_compact_abort(ddict_server_t *self);

/* ddict_server_pending.c */
ds_pending_t *ds_pending_new(ddict_server_t *self);
void ds_pending_done(ddict_server_t *self, ds_pending_t *p);
void ds_pending_fail_all(ddict_server_t *self, int32_t code);
int ds_ack(ddict_server_t *self, const telem_dict_rep_t *rep);
/* Rolls back the writes of a pending whose replication failed (those no
 * later write changed), logs that, tells the replicas (unacknowledged),
 * and frees the undo list. */
void ds_rollback(ddict_server_t *self, ds_pending_t *p);
/* Frees an undo list without applying it. */
void ds_undo_free(ds_pending_t *p);
int ds_event_wait(ddict_server_t *self, zmq_msg_t *route, uint64_t id,
                  const telem_dict_op_t *op);
void ds_event_wake(ddict_server_t *self, const void *key, uint32_t klen);
void ds_waiters_expire(ddict_server_t *self, int64_t now, int all,
                       int32_t code);
/* Holds an admin reply (this server's state) with `code` for route. */
int ds_admin_reply(ddict_server_t *self, zmq_msg_t *route, uint64_t id,
                   int32_t code);

/* ddict_server_ops.c */
int ds_client_request(ddict_server_t *self, zmq_msg_t *route,
                      const telem_dict_req_t *req, ddict_val_t **vals,
                      size_t nvals);

/* ddict_server_repl.c */
int ds_repl_request(ddict_server_t *self, zmq_msg_t *route,
                    const telem_dict_req_t *req, ddict_val_t **vals,
                    size_t nvals);
int ds_admin(ddict_server_t *self, zmq_msg_t *route,
             const telem_dict_admin_t *m);

#endif
