/* flood_good.h - the good requests of tests/flood_peer (flood_good.c):
 * each goes out on a flooded socket and is checked; see flood_peer.h.
 */
#ifndef TELEM_TESTS_FLOOD_GOOD_H
#define TELEM_TESTS_FLOOD_GOOD_H

#include <stddef.h>
#include <stdint.h>

#include "flood_peer.h"

#define FLOOD_GOOD_METRIC "flood_good"

/* One flooded socket. */
typedef struct {
    const char *name;           /* "ingest", "ctl", "tcp", "dict-ipc", ... */
    flood_to_t to;              /* what it takes */
    void *sock;                 /* PUSH (ingest) or DEALER */
    long bad;                   /* malformed messages sent */
    long replies;               /* refusals (id 0) read back */
    long per_kind[FLOOD_BAD_N]; /* malformed messages sent, by kind */
} flood_target_t;

/* What the good requests share. */
typedef struct {
    const char *node;           /* the node telemd must name */
    uint64_t seed;
    uint64_t next_id;
    telem_proto_encoder_t *enc;
    telem_proto_decoder_t *dec;
} flood_ctx_t;

/* Sends `size` bytes, then `extra` frames of 1-3 bytes, as one message.
 * 0, or -1 with zmq_errno(). */
int flood_send(void *sock, const void *data, size_t size, int extra);

/* A status request on t: 0 when answered with the node's status (copied
 * into *st when st is not NULL; its strings live until the next request),
 * else -1 with a line on stderr. */
int flood_good_status(flood_ctx_t *c, flood_target_t *t, telem_status_t *st);

/* A query of FLOOD_GOOD_METRIC on t for its newest `max` points (0: all):
 * 0 when it holds one series of `points` points (at most `max`), the last
 * of value `last`. */
int flood_good_query(flood_ctx_t *c, flood_target_t *t, uint32_t points,
                     double last, uint32_t max);

/* The newest value of `metric` (one series) on t: 0 with *value, 1 when
 * it has none yet, -1 when the query was not answered. */
int flood_good_latest(flood_ctx_t *c, flood_target_t *t, const char *metric,
                      double *value);

/* A batch with a fin token on the ingest socket, holding one
 * FLOOD_GOOD_METRIC sample of `value` when `sample` (else none); 0 once a
 * SYNC on ctl confirms it. */
int flood_good_ingest(flood_ctx_t *c, flood_target_t *ingest,
                      flood_target_t *ctl, double value, int sample);

/* A dictionary put of key good-ROUND on `put`, then a get of it on `get`:
 * 0 when both succeed and the value read is the value put. */
int flood_good_dict(flood_ctx_t *c, flood_target_t *put, flood_target_t *get,
                    long round);

#endif
