/* telem_queue.h - libtelem internals: sample batches, and the mailbox that
 * carries them from the application's threads to the sender thread.
 *
 * A batch (telem_qbatch_t) is a fixed block: up to TELEM_Q_SAMPLES samples
 * whose strings (metric names, tag keys and values) are copied into the
 * batch's own arena, so filling one never allocates.  Each application
 * thread fills one batch at a time (telem.c); a full batch is pushed here
 * and the sender thread (telem_sender.c) takes, encodes, sends and returns
 * it to the free pool for reuse.  The same block carries a metric
 * description (kind TELEM_QB_META).
 *
 * The queue is bounded: telem_queue_push() refuses a batch when `cap`
 * batches are waiting, unless forced (partial batches collected at flush or
 * on the sender's timer, and descriptions, of which there are few).  It is
 * also where callers ask the sender for a flush and wait for its answer.
 *
 * Thread safety: every function may be called from any thread; one mutex
 * guards the queue and the pool.  Not for use outside libtelem.
 */
#ifndef TELEM_QUEUE_H
#define TELEM_QUEUE_H

#include <stdint.h>

#define TELEM_Q_SAMPLES 256      /* samples in one batch */
#define TELEM_Q_ARENA 16384      /* string bytes in one batch */
#define TELEM_Q_TAGS_MAX 8       /* tags on one sample (telem.h) */

typedef enum {
    TELEM_QB_SAMPLES = 0,
    TELEM_QB_META = 1
} telem_qbatch_kind_t;

/* One sample; strings are arena offsets.  A sample's tags are 2 * ntags
 * NUL-terminated strings, key then value, one after another from `tags`. */
typedef struct {
    int64_t ts_ns;
    double value;
    uint32_t name;
    uint32_t tags;
    uint8_t level;
    uint8_t ntags;
    uint8_t kind;                /* telem_sample_kind_t (telem_proto.h) */
} telem_qsample_t;

typedef struct telem_qbatch {
    struct telem_qbatch *next;   /* queue or pool link */
    int kind;                    /* telem_qbatch_kind_t */
    int meta_type;               /* TELEM_QB_META: telem_metric_type_t */
    uint32_t n;                  /* samples used */
    uint32_t used;               /* arena bytes used */
    uint32_t last_name;          /* arena offset of the newest metric name */
    uint32_t last_len;           /* and its length, to reuse repeated names */
    uint64_t gen;                /* new each time the pool hands it out */
    telem_qsample_t s[TELEM_Q_SAMPLES];
    char arena[TELEM_Q_ARENA];   /* TELEM_QB_META: metric, unit, doc */
} telem_qbatch_t;

typedef struct telem_queue telem_queue_t;

/* What the sender takes out of the queue in one wait. */
typedef struct {
    telem_qbatch_t *items;       /* batches in push order, now the caller's */
    uint64_t flush_seq;          /* flush request to answer, 0 = none */
    int64_t flush_deadline;      /* monotonic ns, for flush_seq */
    int stop;                    /* telem_queue_stop() was called */
} telem_queue_work_t;

/* Creates a queue holding at most `cap` batches (cap >= 1).  Returns NULL
 * when out of memory. */
telem_queue_t *telem_queue_new(uint32_t cap);

/* Frees the queue, queued batches and the pool; accepts NULL, nulls *q_p.
 * The sender thread must be gone. */
void telem_queue_destroy(telem_queue_t **q_p);

/* Returns an empty batch of kind TELEM_QB_SAMPLES from the pool, or a new
 * one, with a `gen` no batch of this process had before (never 0); NULL
 * when out of memory.  The caller owns it. */
telem_qbatch_t *telem_queue_take_free(telem_queue_t *q);

/* Returns a batch to the pool (or frees it when the pool is full); accepts
 * NULL; nulls *b_p. */
void telem_queue_give_free(telem_queue_t *q, telem_qbatch_t **b_p);

/* Appends *b_p for the sender and nulls *b_p.  Returns 0, or TELEM_EFULL
 * when `cap` batches wait and `force` is 0 (then *b_p stays the caller's).
 * Never blocks on I/O. */
int telem_queue_push(telem_queue_t *q, telem_qbatch_t **b_p, int force);

/* Takes every queued batch at once (for a flush); NULL when empty. */
telem_qbatch_t *telem_queue_take_all(telem_queue_t *q);

/* Sender side: waits until batches are queued, a flush is requested, stop
 * is set, or the monotonic time `until_ns` passes; then fills *w (taking
 * every queued batch and the newest flush request not yet taken). */
void telem_queue_wait(telem_queue_t *q, int64_t until_ns,
                      telem_queue_work_t *w);

/* Sender side: the flush requests up to `seq` are done with result `rc`. */
void telem_queue_flush_done(telem_queue_t *q, uint64_t seq, int rc);

/* Sender side: the sender thread has ended; pending and later flushes
 * return TELEM_ESTATE. */
void telem_queue_sender_gone(telem_queue_t *q);

/* Asks the sender to flush with a deadline timeout_ms from now (negative
 * counts as 0) and waits for its result, at most a little past the
 * deadline.  Returns the sender's result (0, TELEM_ETIMEDOUT, TELEM_ECONN),
 * TELEM_ETIMEDOUT when it did not answer in time, or TELEM_ESTATE when the
 * sender is gone. */
int telem_queue_flush(telem_queue_t *q, int timeout_ms);

/* Tells the sender to stop once it has seen this. */
void telem_queue_stop(telem_queue_t *q);

#endif
