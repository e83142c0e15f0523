/* telem_proto.h - the wire codec: every message telem sends, in one module.
 *
 * Each message is one ZeroMQ frame holding one msgpack map with at least
 *   "v": protocol version (TELEM_PROTO_VERSION)   "t": message type (int)
 * docs/protocol.md describes every field.  Nothing else in telem parses wire
 * bytes: senders fill the plain structs below and call an encoder, receivers
 * call telem_proto_decode() and switch on the type.
 *
 * Decoding never trusts its input: truncated, oversized, wrong-version,
 * wrongly typed or over-limit input gives a negative telem_err_t and a short
 * reason in telem_proto_decoder_error(); it never crashes and never
 * allocates more than a bounded multiple of the input size.
 *
 * Ownership: a decoder owns everything a decoded message points to (strings
 * are copied, NUL-terminated, into the decoder's arena); those pointers stay
 * valid until the next decode on the same decoder or its destruction.  An
 * encoder owns its output buffer, valid until the next encode on it.
 *
 * Thread safety: encoders and decoders are not shared between threads; make
 * one per thread.  They are cheap to reuse and reuse is what makes them fast.
 */
#ifndef TELEM_PROTO_H
#define TELEM_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "telem_error.h"
#include "telem_proto_dict.h"
#include "telem_proto_relay.h"
#include "telem_proto_sysinfo.h"
#include "telem_proto_watch.h"
#include "telem_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TELEM_PROTO_VERSION 1
#define TELEM_PROTO_MAX_MSG (64u << 20)   /* largest frame accepted, bytes */
/* Largest frame a node's ingest socket takes (a batch or a meta): a
 * larger one makes libzmq drop the sender's connection.  libtelem's
 * largest batch (256 samples of 255-byte names with their 16 KiB of tag
 * strings, tests/test_hostile.c measures it) is about 90 KiB, a meta about
 * 5 KiB; telem_agg cuts what /api/put takes into batches under this.
 * Senders of their own must keep their batches under it too. */
#define TELEM_PROTO_INGEST_MAX (256u << 10)
#define TELEM_BATCH_MAX 65536              /* samples in one batch */
/* TELEM_NAME_MAX, TELEM_TAGS_MAX, TELEM_QUERY_METRICS_MAX and
 * TELEM_TEXT_MAX, the tag, meta, series and status types, the query flags
 * and the control operations (telem_ctl_op_t) are telem_types.h's: values
 * the store and the clients share with the wire. */

/* Message types.  Numbers are assigned in ranges, one per message family
 * (docs/protocol.md, "Message types"):
 *     1-7    this header: ingest (1-2) and request/reply (3-7)
 *     8-15   watcher: events, restart requests, control (8-12 used,
 *            telem_proto_watch.h)
 *    16-17   system snapshot: sysinfo, sysinfo_reply
 *            (telem_proto_sysinfo.h)
 *    18-23   unassigned
 *    24-25   relay: relay, relay_reply (telem_proto_relay.h)
 *    26-31   unassigned
 *    32-63   reserved: distributed-dictionary messages
 *    64-255  unassigned
 * A family's messages are declared in its own header; the decoder learns
 * them through the codec's internal registration. */
typedef enum {
    TELEM_MSG_BATCH = 1,        /* samples from a process to telemd */
    TELEM_MSG_META = 2,         /* a metric's type, unit and doc */
    TELEM_MSG_QUERY = 3,        /* query request */
    TELEM_MSG_QUERY_REPLY = 4,  /* query reply */
    TELEM_MSG_CONTROL = 5,      /* control request (status, level, ...) */
    TELEM_MSG_CONTROL_REPLY = 6,/* control reply */
    TELEM_MSG_ERROR = 7         /* error reply to any request */
} telem_msg_type_t;

/* What a sample's value means (docs/protocol.md, "batch"). */
typedef enum {
    /* A measurement of the sending process: stored as it is, with the
     * batch's tags (pid, rank) and the sample's own. */
    TELEM_SAMPLE_VALUE = 0,
    /* An increment (finite, >= 0) of a counter of the node: telemd adds it
     * to the running total of the node series named by the metric and the
     * sample's own tags only (the batch's per-process tags are not used)
     * and stores the new total. */
    TELEM_SAMPLE_COUNTER_ADD = 1
} telem_sample_kind_t;

/* One measurement.  level is the telemetry level it was recorded at (1-4).
 * kind is a telem_sample_kind_t; a decoder passes on any value 0-255 and
 * leaves refusing an unknown one to the receiver. */
typedef struct {
    const char *metric;
    const telem_tag_t *tags;   /* tags of this sample only; may be NULL */
    uint32_t ntags;
    uint8_t level;
    int64_t ts_ns;             /* realtime nanoseconds */
    double value;
    uint8_t kind;              /* 0 (TELEM_SAMPLE_VALUE) unless set */
} telem_sample_t;

/* Samples from one source.  `tags` apply to every sample (pid, rank, ...).
 * A non-zero fin_token marks the end of the sender's stream: telemd
 * remembers it and confirms it through TELEM_CTL_SYNC, which is how a
 * process that exits knows everything it sent has arrived. */
typedef struct {
    const char *source;        /* free-form sender name, may be "" */
    const telem_tag_t *tags;
    uint32_t ntags;
    const telem_sample_t *samples;
    uint32_t nsamples;
    uint64_t fin_token;
} telem_batch_t;

/* Query request.  Filters are exact key=value matches; a value of "*" only
 * requires the key to be present.  start_ns/end_ns are realtime; end_ns 0
 * means now, start_ns 0 means the whole retention window. */
typedef struct {
    uint64_t id;               /* echoed in the reply */
    const char *const *metrics;/* empty = every metric */
    uint32_t nmetrics;
    const telem_tag_t *filters;
    uint32_t nfilters;
    int64_t start_ns;
    int64_t end_ns;
    uint32_t max_points;       /* per series, newest kept; 0 = no limit */
    uint32_t flags;            /* TELEM_QUERY_* */
} telem_query_t;

typedef struct {
    uint64_t id;
    const char *node;          /* the answering node */
    const telem_series_t *series;
    uint32_t nseries;
    uint8_t truncated;         /* reply was cut to the size limit */
} telem_query_reply_t;

typedef struct {
    uint64_t id;
    telem_ctl_op_t op;
    int64_t arg;
} telem_control_t;

typedef struct {
    uint64_t id;
    telem_ctl_op_t op;
    int32_t synced;            /* TELEM_CTL_SYNC: 1 if the token was seen */
    telem_status_t status;     /* filled for every op */
} telem_control_reply_t;

typedef struct {
    uint64_t id;
    int32_t code;              /* telem_err_t */
    const char *message;
} telem_error_msg_t;

/* A decoded message: `type` says which member of the union is valid. */
typedef struct {
    telem_msg_type_t type;
    union {
        telem_batch_t batch;
        telem_meta_t meta;
        telem_query_t query;
        telem_query_reply_t query_reply;
        telem_control_t control;
        telem_control_reply_t control_reply;
        telem_error_msg_t error;
        telem_dict_req_t dict_req;          /* dict_req, dict_repl */
        telem_dict_rep_t dict_rep;          /* dict_rep, dict_ack */
        telem_dict_admin_t dict_admin;
        telem_dict_admin_rep_t dict_admin_rep;
        telem_watch_event_t watch_event;
        telem_restart_t restart;
        telem_restart_ack_t restart_ack;
        telem_watch_ctl_t watch_ctl;
        telem_watch_ctl_reply_t watch_ctl_reply;
        telem_sysinfo_req_t sysinfo;
        telem_sysinfo_rep_t sysinfo_reply;
        telem_relay_req_t relay;
        telem_relay_rep_t relay_reply;
    } u;
} telem_msg_t;

typedef struct telem_encoder telem_proto_encoder_t;
typedef struct telem_decoder telem_proto_decoder_t;

/* Create/destroy.  _new returns NULL when out of memory; _destroy accepts
 * NULL or a pointer to NULL and nulls the caller's pointer. */
telem_proto_encoder_t *telem_proto_encoder_new(void);
void telem_proto_encoder_destroy(telem_proto_encoder_t **self_p);
telem_proto_decoder_t *telem_proto_decoder_new(void);
void telem_proto_decoder_destroy(telem_proto_decoder_t **self_p);

/* Encoders: on success return 0 and set *data and *size to the encoded frame,
 * owned by the encoder and valid until its next call.  They validate what
 * they send (names non-empty and within TELEM_NAME_MAX, counts within the
 * limits above) and return TELEM_EINVAL or TELEM_ETOOBIG otherwise. */
int telem_proto_encode_batch(telem_proto_encoder_t *e, const telem_batch_t *m,
                             const void **data, size_t *size);
int telem_proto_encode_meta(telem_proto_encoder_t *e, const telem_meta_t *m,
                            const void **data, size_t *size);
int telem_proto_encode_query(telem_proto_encoder_t *e, const telem_query_t *m,
                             const void **data, size_t *size);
int telem_proto_encode_query_reply(telem_proto_encoder_t *e,
                                   const telem_query_reply_t *m,
                                   const void **data, size_t *size);
int telem_proto_encode_control(telem_proto_encoder_t *e,
                               const telem_control_t *m, const void **data,
                               size_t *size);
int telem_proto_encode_control_reply(telem_proto_encoder_t *e,
                                     const telem_control_reply_t *m,
                                     const void **data, size_t *size);
int telem_proto_encode_error(telem_proto_encoder_t *e,
                             const telem_error_msg_t *m, const void **data,
                             size_t *size);

/* Decodes one frame into *out.  Returns 0, or TELEM_EPROTO (malformed,
 * truncated, trailing bytes, wrong field types, embedded NUL in a string),
 * TELEM_EVERSION (wrong "v"), TELEM_ETOOBIG (frame or a count over its
 * limit) or TELEM_ENOMEM.  On failure *out is unspecified and
 * telem_proto_decoder_error() names the problem. */
int telem_proto_decode(telem_proto_decoder_t *d, const void *data, size_t size,
                       telem_msg_t *out);

/* Reason for the last failed decode, e.g. "batch: sample 3: value is not a
 * number".  Owned by the decoder. */
const char *telem_proto_decoder_error(const telem_proto_decoder_t *d);

/* Name of a message type ("batch", "query", ...) or "unknown". */
const char *telem_proto_msg_type_name(int type);

#ifdef __cplusplus
}
#endif
#endif
