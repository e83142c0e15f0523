/* telem_proto_dict.h - the distributed dictionary's messages (types 32-63).
 *
 * Part of the one wire codec: telem_proto_decode() decodes these like every
 * other type (telem_msg_t's union has a member for each), and the encoders
 * below write them.  docs/protocol.md, section "Dictionary", is the
 * reference.
 *
 * Dictionary messages are multi-part ZeroMQ messages: the first frame is the
 * msgpack header this codec handles; each operation or result whose `val`
 * flag is set owns the next frame after it, in order, holding the raw value
 * bytes.  Large values therefore never pass through msgpack (no copy into
 * or out of a map, and a 64 MiB value is a frame of its own that ZeroMQ can
 * send without copying).  A value of at most TELEM_DICT_INLINE_MAX bytes may
 * instead travel inside the header (`ival`): a ZeroMQ frame costs more than
 * copying a small value, so a pipeline of small puts or gets is one frame,
 * not one per value.  Senders choose; receivers accept both.
 *
 * Keys are binary (msgpack bin, 0..TELEM_DICT_KEY_MAX bytes) and are copied
 * into the decoder's arena like strings; namespaces are strings of
 * 0..TELEM_NAME_MAX bytes.  Ownership and thread safety: as telem_proto.h.
 */
#ifndef TELEM_PROTO_DICT_H
#define TELEM_PROTO_DICT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TELEM_DICT_KEY_MAX 65535u   /* bytes in a key */
#define TELEM_DICT_OPS_MAX 65536u   /* operations in one request or reply */
#define TELEM_DICT_NODES_MAX 1024u  /* nodes in a map */
#define TELEM_DICT_INLINE_MAX 4096u /* bytes of a value carried in a header */
#define TELEM_DICT_VALUE_MAX (256u << 20) /* bytes in one value frame */

/* Message types (telem_msg_type_t values 32-63 are the dictionary's). */
enum {
    TELEM_MSG_DICT_REQ = 32,       /* client -> server: operations */
    TELEM_MSG_DICT_REP = 33,       /* server -> client: results */
    TELEM_MSG_DICT_REPL = 34,      /* server -> server: apply these changes */
    TELEM_MSG_DICT_ACK = 35,       /* server -> server: changes applied */
    TELEM_MSG_DICT_ADMIN = 36,     /* hello, re-form phases, status */
    TELEM_MSG_DICT_ADMIN_REP = 37  /* reply to an admin request */
};

/* Operations (telem_dict_op_t.op). */
enum {
    TELEM_DOP_GET = 1,      /* -> version, value frame; arg > 0: the value
                               streamed in frames of arg bytes (>= 4 KiB),
                               the only op of its request */
    TELEM_DOP_PUT = 2,      /* value frame -> new version */
    TELEM_DOP_DEL = 3,      /* -> 0 or TELEM_ENOTFOUND */
    TELEM_DOP_CAS = 4,      /* arg = expected version (0: absent); value */
    TELEM_DOP_KEYS = 5,     /* arg = shard -> value frame of keys */
    TELEM_DOP_LEN = 6,      /* -> version field = keys of ns on this server */
    TELEM_DOP_EVSET = 7,    /* key = event name */
    TELEM_DOP_EVWAIT = 8,   /* key = event name, arg = wait in ms */
    TELEM_DOP_CKPT = 9,     /* copy ns into namespace key, all shards held */
    TELEM_DOP_SET = 10,     /* replication: value frame, arg = version */
    TELEM_DOP_MERGE = 11,   /* re-forming: set unless newer is held */
    TELEM_DOP_REMOVE = 12,  /* replication: delete */
    TELEM_DOP_MAX = 12
};

/* Admin operations (telem_dict_admin_t.op). */
enum {
    TELEM_DADM_HELLO = 1,     /* reply: the server's map and state */
    TELEM_DADM_PREPARE = 2,   /* re-form: take epoch/nodes, stop serving */
    TELEM_DADM_TRANSFER = 3,  /* re-form: send every shard to its owners */
    TELEM_DADM_COMMIT = 4,    /* re-form: drop foreign shards, serve */
    TELEM_DADM_SHUTDOWN = 5,  /* stop after replying */
    TELEM_DADM_COMPACT = 6,   /* rewrite the log now */
    TELEM_DADM_MAX = 6
};

typedef struct {
    uint8_t op;             /* TELEM_DOP_* */
    uint8_t val;            /* 1: a value frame belongs to this op */
    uint16_t shard;         /* REPL only: the key's shard */
    const uint8_t *key;
    uint32_t klen;
    uint64_t arg;
    const uint8_t *ival;    /* non-NULL: the value, ivlen bytes (at most
                               TELEM_DICT_INLINE_MAX), in the header; val
                               is then 0 */
    uint32_t ivlen;
} telem_dict_op_t;

/* TELEM_MSG_DICT_REQ and TELEM_MSG_DICT_REPL. */
typedef struct {
    uint64_t id;            /* echoed in the reply */
    uint64_t epoch;         /* sender's map epoch; 0 = do not check */
    const char *ns;         /* namespace, "" allowed */
    const telem_dict_op_t *ops;
    uint32_t nops;
} telem_dict_req_t;

typedef struct {
    int32_t code;           /* 0 or a telem_err_t */
    uint8_t val;            /* 1: a value frame belongs to this result */
    uint64_t version;       /* GET/PUT/CAS: key version; LEN: count */
    const uint8_t *ival;    /* non-NULL: the value in the header (as in
                               telem_dict_op_t); val is then 0 */
    uint32_t ivlen;
} telem_dict_res_t;

/* TELEM_MSG_DICT_REP and TELEM_MSG_DICT_ACK: one result per operation,
 * or none and a non-zero `code` when the whole request was refused
 * (TELEM_ESTATE: stale epoch or re-forming; refresh the map and retry). */
typedef struct {
    uint64_t id;
    uint64_t epoch;         /* the server's epoch */
    int32_t code;
    const telem_dict_res_t *res;
    uint32_t nres;
} telem_dict_rep_t;

/* TELEM_MSG_DICT_ADMIN. */
typedef struct {
    uint64_t id;
    int32_t op;             /* TELEM_DADM_* */
    uint64_t epoch;         /* PREPARE: the new epoch; others: must match */
    uint64_t prev_epoch;    /* PREPARE: epoch of the map being replaced */
    int32_t replicas;       /* PREPARE: replication factor */
    const char *const *nodes; /* PREPARE: the new node list */
    uint32_t nnodes;
} telem_dict_admin_t;

/* TELEM_MSG_DICT_ADMIN_REP. */
typedef struct {
    uint64_t id;
    int32_t code;
    const char *node;       /* the answering server */
    uint64_t epoch;
    int32_t replicas;
    int32_t state;          /* 0 serving, 1 re-forming */
    uint64_t keys;          /* entries held, all namespaces */
    uint64_t bytes;         /* bytes of keys and values held */
    const char *const *nodes; /* the server's current node list */
    uint32_t nnodes;
    uint64_t committed;     /* epoch of the last map it served under (a
                               re-form that never committed leaves epoch
                               ahead of it); 0: unknown */
} telem_dict_admin_rep_t;

typedef struct telem_encoder telem_proto_encoder_t;

/* Encoders, as in telem_proto.h: 0 with *data and *size set to the encoder's
 * buffer, or TELEM_EINVAL / TELEM_ETOOBIG for what the decoder would
 * refuse (unknown op, key or namespace too long, too many ops or nodes). */
int telem_proto_encode_dict_req(telem_proto_encoder_t *e, int type,
                                const telem_dict_req_t *m, const void **data,
                                size_t *size);
int telem_proto_encode_dict_rep(telem_proto_encoder_t *e, int type,
                                const telem_dict_rep_t *m, const void **data,
                                size_t *size);
int telem_proto_encode_dict_admin(telem_proto_encoder_t *e,
                                  const telem_dict_admin_t *m,
                                  const void **data, size_t *size);
int telem_proto_encode_dict_admin_rep(telem_proto_encoder_t *e,
                                      const telem_dict_admin_rep_t *m,
                                      const void **data, size_t *size);

#ifdef __cplusplus
}
#endif
#endif
