/* telem_proto_watch.h - the watcher's messages (types 8-15).
 *
 * Part of the one wire codec: telem_proto_decode() decodes these like every
 * other type (telem_msg_t's union has a member for each) and the encoders
 * below write them.  docs/protocol.md, section "Watcher", is the reference.
 *
 *   event (8)          PUB -> SUB: a detector's decision, as telem_watch
 *                      prints it.  Sent as two frames: the detector label
 *                      (a topic for SUB filtering), then this message.
 *   restart (9)        DEALER -> ROUTER: the watcher asks a launcher to
 *                      restart the job without some nodes.
 *   restart_ack (10)   ROUTER -> DEALER: accepted (code 0) or refused.
 *   watch_ctl (11)     DEALER -> ROUTER: status, thresholds, set, pause,
 *                      resume, to a running watcher.
 *   watch_ctl_reply (12)  ROUTER -> DEALER: code, message, and rows of
 *                      (detector, key, value) strings.
 *
 * Ownership and thread safety: as telem_proto.h.
 */
#ifndef TELEM_PROTO_WATCH_H
#define TELEM_PROTO_WATCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TELEM_WATCH_LIST_MAX 65536u   /* nodes, devices, evidence, rows */

enum {
    TELEM_MSG_WATCH_EVENT = 8,
    TELEM_MSG_RESTART = 9,
    TELEM_MSG_RESTART_ACK = 10,
    TELEM_MSG_WATCH_CTL = 11,
    TELEM_MSG_WATCH_CTL_REPLY = 12
};

/* Watcher control operations (telem_watch_ctl_t.op). */
enum {
    TELEM_WCTL_STATUS = 1,      /* rows: watcher and detector state */
    TELEM_WCTL_THRESHOLDS = 2,  /* rows: every detector parameter */
    TELEM_WCTL_SET = 3,         /* detector, param, value */
    TELEM_WCTL_PAUSE = 4,       /* detector */
    TELEM_WCTL_RESUME = 5,      /* detector */
    TELEM_WCTL_MAX = 5
};

typedef struct {
    const char *node;
    const char *device;         /* "" for a whole node */
} telem_watch_dev_t;

typedef struct {
    const char *name;
    double value;
} telem_watch_evidence_t;

/* TELEM_MSG_WATCH_EVENT. */
typedef struct {
    uint64_t seq;               /* the watcher's event number, from 1 */
    const char *detector;       /* instance label */
    int32_t severity;           /* 1 warn, 2 act */
    int64_t ts_ns;              /* time of the data that decided */
    double score;
    const char *text;
    const char *const *nodes;
    uint32_t nnodes;
    const telem_watch_dev_t *devices;
    uint32_t ndevices;
    const telem_watch_evidence_t *evidence;
    uint32_t nevidence;
} telem_watch_event_t;

/* TELEM_MSG_RESTART: restart the job without `exclude`. */
typedef struct {
    uint64_t id;                /* echoed in the ack */
    int64_t ts_ns;              /* when the watcher decided */
    const char *reason;         /* a sentence, e.g. the first event's text */
    const char *const *exclude; /* nodes to leave out (at least one) */
    uint32_t nexclude;
    const telem_watch_dev_t *devices;  /* the devices that were flagged */
    uint32_t ndevices;
    const char *const *detectors;      /* labels of the detectors */
    uint32_t ndetectors;
} telem_restart_t;

/* TELEM_MSG_RESTART_ACK. */
typedef struct {
    uint64_t id;
    int32_t code;               /* 0 accepted, else a telem_err_t */
    const char *message;
} telem_restart_ack_t;

/* TELEM_MSG_WATCH_CTL. */
typedef struct {
    uint64_t id;
    int32_t op;                 /* TELEM_WCTL_* */
    const char *detector;       /* label; "" when the op needs none */
    const char *param;
    const char *value;
} telem_watch_ctl_t;

typedef struct {
    const char *detector;       /* "" for the watcher itself */
    const char *key;
    const char *value;
} telem_watch_row_t;

/* TELEM_MSG_WATCH_CTL_REPLY. */
typedef struct {
    uint64_t id;
    int32_t code;               /* 0 or a telem_err_t */
    const char *message;        /* why, when code is not 0 */
    const telem_watch_row_t *rows;
    uint32_t nrows;
} telem_watch_ctl_reply_t;

typedef struct telem_encoder telem_proto_encoder_t;

/* Encoders, as in telem_proto.h: 0 with *data and *size set to the
 * encoder's buffer, or TELEM_EINVAL (NULL where a string or array is
 * needed, empty names, a restart without nodes, an unknown op or severity)
 * / TELEM_ETOOBIG (names, texts or lists over their limits). */
int telem_proto_encode_watch_event(telem_proto_encoder_t *e,
                                   const telem_watch_event_t *m,
                                   const void **data, size_t *size);
int telem_proto_encode_restart(telem_proto_encoder_t *e,
                               const telem_restart_t *m, const void **data,
                               size_t *size);
int telem_proto_encode_restart_ack(telem_proto_encoder_t *e,
                                   const telem_restart_ack_t *m,
                                   const void **data, size_t *size);
int telem_proto_encode_watch_ctl(telem_proto_encoder_t *e,
                                 const telem_watch_ctl_t *m, const void **data,
                                 size_t *size);
int telem_proto_encode_watch_ctl_reply(telem_proto_encoder_t *e,
                                       const telem_watch_ctl_reply_t *m,
                                       const void **data, size_t *size);

#ifdef __cplusplus
}
#endif
#endif
