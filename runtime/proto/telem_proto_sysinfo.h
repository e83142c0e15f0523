/* telem_proto_sysinfo.h - the system snapshot's messages (types 16-17).
 *
 * Part of the one wire codec: telem_proto_decode() decodes these like every
 * other type (telem_msg_t's union has a member for each) and the encoders
 * below write them.  docs/protocol.md, section "sysinfo", is the reference.
 *
 *   sysinfo (16)        DEALER -> telemd's ROUTER: send me your snapshot.
 *   sysinfo_reply (17)  the node's name and its one-time system snapshot,
 *                       a JSON object (schema in docs/protocol.md) of at
 *                       most TELEM_SYSINFO_MAX bytes.
 * A node that holds no snapshot answers with an error (TELEM_ENOTFOUND).
 *
 * Ownership and thread safety: as telem_proto.h.
 */
#ifndef TELEM_PROTO_SYSINFO_H
#define TELEM_PROTO_SYSINFO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    TELEM_MSG_SYSINFO = 16,
    TELEM_MSG_SYSINFO_REPLY = 17
};

/* TELEM_MSG_SYSINFO. */
typedef struct {
    uint64_t id;                /* echoed in the reply */
} telem_sysinfo_req_t;

/* TELEM_MSG_SYSINFO_REPLY. */
typedef struct {
    uint64_t id;
    const char *node;           /* the answering node */
    const char *json;           /* the snapshot, NUL-terminated; no NUL
                                   inside, at most TELEM_SYSINFO_MAX bytes */
} telem_sysinfo_rep_t;

typedef struct telem_encoder telem_proto_encoder_t;

/* Encoders, as telem_proto.h's: 0, TELEM_EINVAL (NULL arguments, an empty
 * node or json) or TELEM_ETOOBIG (json over TELEM_SYSINFO_MAX). */
int telem_proto_encode_sysinfo(telem_proto_encoder_t *e,
                               const telem_sysinfo_req_t *m,
                               const void **data, size_t *size);
int telem_proto_encode_sysinfo_reply(telem_proto_encoder_t *e,
                                     const telem_sysinfo_rep_t *m,
                                     const void **data, size_t *size);

#ifdef __cplusplus
}
#endif
#endif
