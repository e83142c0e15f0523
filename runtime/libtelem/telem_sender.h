/* telem_sender.h - libtelem internals: the background thread that encodes
 * queued batches and pushes them to the node's telemd.
 *
 * The sender owns the process's ZeroMQ context and sockets, so application
 * threads never call ZeroMQ.  It takes batches from a telem_queue_t, wakes
 * at least every TELEM_SENDER_TICK_MS to collect partly filled per-thread
 * batches (through the `collect` callback), answers flush requests (send
 * everything, an end-of-stream batch with a fresh fin_token, then
 * TELEM_CTL_SYNC on the control socket until telemd confirms or the
 * deadline passes), and stops on telem_queue_stop().
 *
 * Thread safety: _new and _destroy are called by the thread that owns the
 * sender; the counters may be read from any thread.  Not for use outside
 * libtelem.
 */
#ifndef TELEM_SENDER_H
#define TELEM_SENDER_H

#include <stdint.h>

#include "telem_proto.h"
#include "telem_queue.h"

#define TELEM_SENDER_TICK_MS 100

typedef struct {
    const char *ingest;          /* PUSH endpoint; "" = none, drop all */
    const char *ctl;             /* control endpoint for TELEM_CTL_SYNC */
    const char *source;          /* batch source: the node name, may be "" */
    const telem_tag_t *tags;     /* batch tags (pid, rank); copied */
    uint32_t ntags;              /* at most 4 */
    telem_queue_t *queue;        /* not owned; must outlive the sender */
    /* Called on the sender thread on every tick and before a flush: pushes
     * (forced) every partly filled batch to `queue`. */
    void (*collect)(void *arg);
    void *collect_arg;
} telem_sender_config_t;

typedef struct telem_sender telem_sender_t;

/* Copies the configuration and starts the thread (with every signal
 * blocked).  Returns NULL when out of memory or the thread cannot start. */
telem_sender_t *telem_sender_new(const telem_sender_config_t *cfg);

/* Stops the thread through the queue (batches still queued are tried once
 * without waiting, the rest dropped and counted; flush first to send them),
 * joins it and closes its sockets and ZeroMQ context.  Idempotent; the
 * counters stay readable. */
void telem_sender_stop(telem_sender_t *self);

/* Stops (as above) and frees.  Accepts NULL; nulls *self_p. */
void telem_sender_destroy(telem_sender_t **self_p);

/* Samples handed to ZeroMQ, and samples the sender dropped. */
uint64_t telem_sender_sent(const telem_sender_t *self);
uint64_t telem_sender_dropped(const telem_sender_t *self);

#endif
