/* telem_proto_relay.h - the relay's messages (types 24-25).
 *
 * Part of the one wire codec: telem_proto_decode() decodes these like every
 * other type (telem_msg_t's union has a member for each) and the encoders
 * below write them.  docs/protocol.md, section "relay", is the reference.
 *
 *   relay (24)        analysis client -> telem_relay's ROUTER: ask these
 *                     nodes this request, answer within deadline_ms.  The
 *                     inner request is one frame exactly as the client
 *                     would send it to a node (query, control, sysinfo).
 *   relay_reply (25)  the relay's merged answer: for each node asked,
 *                     either the node's raw reply frame or a code and a
 *                     sentence saying why there is none.  A merged answer
 *                     larger than one frame is sent as several parts, the
 *                     last one with more 0; each part stands alone.
 * A relay that refuses a whole request (not a read, overloaded) answers
 * with an error message (type 7) carrying the relay request's id.
 *
 * The frames a relay carries are not decoded here: they are bytes, copied
 * into the decoder's memory; whoever receives them decodes them as if they
 * came from the node itself.
 *
 * Ownership and thread safety: as telem_proto.h.
 */
#ifndef TELEM_PROTO_RELAY_H
#define TELEM_PROTO_RELAY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    TELEM_MSG_RELAY = 24,
    TELEM_MSG_RELAY_REPLY = 25
};

/* Nodes one relay request may name. */
#define TELEM_RELAY_NODES_MAX 4096
/* Largest inner request a relay request carries, bytes (a query holds at
 * most TELEM_QUERY_METRICS_MAX names and TELEM_TAGS_MAX filters). */
#define TELEM_RELAY_INNER_MAX (256u << 10)
/* Bytes a relay_reply frame spends besides its items' frames, names and
 * messages, at most; and per item.  A part of the merged answer holds
 * items while TELEM_RELAY_PART_OVERHEAD plus the sum of
 * telem_proto_relay_item_size() stays within TELEM_PROTO_MAX_MSG. */
#define TELEM_RELAY_PART_OVERHEAD 64
/* Largest node reply a relay can pass on: one item always fits a part. */
#define TELEM_RELAY_FRAME_MAX \
    (TELEM_PROTO_MAX_MSG - TELEM_RELAY_PART_OVERHEAD - 2 * 4096 - 512)

/* TELEM_MSG_RELAY. */
typedef struct {
    uint64_t id;                /* echoed in every part of the reply */
    const char *const *nodes;   /* node names to ask, 1..NODES_MAX */
    uint32_t nnodes;
    uint32_t deadline_ms;       /* the relay answers within this, > 0 */
    uint32_t report_ms;         /* the deadline missing-node sentences
                                   name (the caller's); 0: deadline_ms */
    uint64_t max_reply;         /* node replies above this count as lost
                                   (the caller's limit); 0: no limit */
    const void *inner;          /* the request frame, 1..INNER_MAX bytes */
    size_t inner_size;
} telem_relay_req_t;

/* One node's part of a relay_reply. */
typedef struct {
    const char *node;
    int32_t code;               /* 0: frame is the node's reply; else a
                                   telem_err_t saying why there is none */
    uint8_t answered;           /* code != 0: 1 when the node itself
                                   answered (an undecodable reply), 0 when
                                   it never did (no connection, no reply
                                   in time, not in the relay's group) */
    const char *message;        /* code != 0: a sentence; else "" */
    const void *frame;          /* code 0: the raw reply, as the node sent
                                   it; else NULL */
    size_t size;
} telem_relay_item_t;

/* TELEM_MSG_RELAY_REPLY. */
typedef struct {
    uint64_t id;
    uint32_t part;              /* 0, 1, ... in sending order */
    uint8_t more;               /* 1: another part follows */
    const telem_relay_item_t *items;
    uint32_t nitems;
} telem_relay_rep_t;

typedef struct telem_encoder telem_proto_encoder_t;
typedef struct telem_decoder telem_proto_decoder_t;

/* Encoders, as telem_proto.h's: 0, TELEM_EINVAL (NULL arguments, no node,
 * an empty or overlong name, deadline 0, an empty inner frame, an item
 * with code 0 and no frame or a code > 0) or TELEM_ETOOBIG (over a limit
 * above, or a frame over TELEM_PROTO_MAX_MSG). */
int telem_proto_encode_relay(telem_proto_encoder_t *e,
                             const telem_relay_req_t *m, const void **data,
                             size_t *size);
int telem_proto_encode_relay_reply(telem_proto_encoder_t *e,
                                   const telem_relay_rep_t *m,
                                   const void **data, size_t *size);

/* Bytes item `it` adds to a relay_reply frame, at most. */
size_t telem_proto_relay_item_size(const telem_relay_item_t *it);

/* What a relay may pass on: decodes `inner` (a request frame) with `d`
 * and returns 0 for a read (query, sysinfo, control STATUS or SYNC) with
 * its request id in *id; TELEM_EPERM for a control operation that changes
 * or stops a daemon (SHUTDOWN, HANDOVER, SET_LEVEL, SET_WINDOW, any
 * other), TELEM_EPROTO for anything else that is not a request, or the
 * decoder's error.  A sentence goes to why (may be NULL).  `d`'s previous
 * message is overwritten. */
int telem_proto_relay_inner_check(telem_proto_decoder_t *d, const void *inner,
                                  size_t size, uint64_t *id, char *why,
                                  size_t why_size);

#ifdef __cplusplus
}
#endif
#endif
