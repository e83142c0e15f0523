/* telem_queue.c - the bounded mailbox between application threads and
 * libtelem's sender thread (see telem_queue.h).
 *
 * A mutex and two condition variables: `work` wakes the sender (signalled
 * only when the queue goes from empty to non-empty, or for a flush or a
 * stop, so a busy producer does not pay a wake-up per batch), `done` wakes
 * threads waiting for a flush.  Waits use the monotonic clock.  Full
 * batches are a pointer swap away from reuse: the pool keeps up to `cap`
 * empty ones so the steady state allocates nothing.
 */
#include "telem_queue.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "telem_error.h"
#include "telem_time.h"

/* A flush waiter gives the sender this long past the deadline to answer. */
#define S_FLUSH_GRACE_NS (1000 * TELEM_NS_PER_MS)

struct telem_queue {
    pthread_mutex_t mu;
    pthread_cond_t work;
    pthread_cond_t done;
    telem_qbatch_t *head;
    telem_qbatch_t *tail;
    uint32_t count;
    uint32_t cap;
    _Atomic uint32_t count_hint;    /* count, readable without the lock */
    telem_qbatch_t *pool;
    uint32_t npool;
    uint64_t flush_req;             /* newest flush request */
    uint64_t flush_taken;           /* newest request the sender took */
    uint64_t flush_done;            /* newest request answered */
    int flush_rc;
    int64_t flush_deadline;
    int stop;
    int sender_gone;
};

/* Batch generations handed out, process-wide: a gen names one hand-out
 * of one batch, across queues and contexts. */
static _Atomic uint64_t s_gens;

static void
s_free_list(telem_qbatch_t *b)
{
    while (b) {
        telem_qbatch_t *next = b->next;
        free(b);
        b = next;
    }
}

static void
s_timespec(struct timespec *ts, int64_t ns)
{
    ts->tv_sec = (time_t) (ns / TELEM_NS_PER_SEC);
    ts->tv_nsec = (long) (ns % TELEM_NS_PER_SEC);
}

telem_queue_t *
telem_queue_new(uint32_t cap)
{
    telem_queue_t *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->cap = cap ? cap : 1;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->work, &attr);
    pthread_cond_init(&q->done, &attr);
    pthread_condattr_destroy(&attr);
    return q;
}

void
telem_queue_destroy(telem_queue_t **q_p)
{
    if (!q_p || !*q_p)
        return;
    telem_queue_t *q = *q_p;
    s_free_list(q->head);
    s_free_list(q->pool);
    pthread_cond_destroy(&q->work);
    pthread_cond_destroy(&q->done);
    pthread_mutex_destroy(&q->mu);
    free(q);
    *q_p = NULL;
}

telem_qbatch_t *
telem_queue_take_free(telem_queue_t *q)
{
    pthread_mutex_lock(&q->mu);
    telem_qbatch_t *b = q->pool;
    if (b) {
        q->pool = b->next;
        q->npool--;
    }
    pthread_mutex_unlock(&q->mu);
    if (!b) {
        /* Only the header needs zeroing; samples and arena are written
         * before they are read. */
        b = malloc(sizeof *b);
        if (!b)
            return NULL;
    }
    b->next = NULL;
    b->kind = TELEM_QB_SAMPLES;
    b->meta_type = 0;
    b->n = 0;
    b->used = 0;
    b->last_name = 0;
    b->last_len = 0;
    b->gen = atomic_fetch_add_explicit(&s_gens, 1, memory_order_relaxed) + 1;
    return b;
}

void
telem_queue_give_free(telem_queue_t *q, telem_qbatch_t **b_p)
{
    if (!b_p || !*b_p)
        return;
    telem_qbatch_t *b = *b_p;
    *b_p = NULL;
    pthread_mutex_lock(&q->mu);
    if (q->npool < q->cap) {
        b->next = q->pool;
        q->pool = b;
        q->npool++;
        b = NULL;
    }
    pthread_mutex_unlock(&q->mu);
    free(b);
}

int
telem_queue_push(telem_queue_t *q, telem_qbatch_t **b_p, int force)
{
    /* Under overload, refuse without touching the lock. */
    if (!force && atomic_load_explicit(&q->count_hint, memory_order_relaxed)
                      >= q->cap)
        return TELEM_EFULL;
    telem_qbatch_t *b = *b_p;
    pthread_mutex_lock(&q->mu);
    if (!force && q->count >= q->cap) {
        pthread_mutex_unlock(&q->mu);
        return TELEM_EFULL;
    }
    b->next = NULL;
    if (q->tail)
        q->tail->next = b;
    else
        q->head = b;
    q->tail = b;
    q->count++;
    atomic_store_explicit(&q->count_hint, q->count, memory_order_relaxed);
    if (q->count == 1)
        pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->mu);
    *b_p = NULL;
    return 0;
}

/* Detaches the whole queue; the caller holds the lock. */
static telem_qbatch_t *
s_take_all_locked(telem_queue_t *q)
{
    telem_qbatch_t *items = q->head;
    q->head = q->tail = NULL;
    q->count = 0;
    atomic_store_explicit(&q->count_hint, 0, memory_order_relaxed);
    return items;
}

telem_qbatch_t *
telem_queue_take_all(telem_queue_t *q)
{
    pthread_mutex_lock(&q->mu);
    telem_qbatch_t *items = s_take_all_locked(q);
    pthread_mutex_unlock(&q->mu);
    return items;
}

void
telem_queue_wait(telem_queue_t *q, int64_t until_ns, telem_queue_work_t *w)
{
    struct timespec ts;
    s_timespec(&ts, until_ns);
    pthread_mutex_lock(&q->mu);
    while (!q->head && q->flush_req == q->flush_taken && !q->stop
           && telem_mono_ns() < until_ns) {
        if (pthread_cond_timedwait(&q->work, &q->mu, &ts) != 0)
            break;
    }
    w->items = s_take_all_locked(q);
    w->flush_seq = 0;
    if (q->flush_req != q->flush_taken) {
        w->flush_seq = q->flush_taken = q->flush_req;
        w->flush_deadline = q->flush_deadline;
    }
    w->stop = q->stop;
    pthread_mutex_unlock(&q->mu);
}

void
telem_queue_flush_done(telem_queue_t *q, uint64_t seq, int rc)
{
    pthread_mutex_lock(&q->mu);
    if (seq > q->flush_done) {
        q->flush_done = seq;
        q->flush_rc = rc;
    }
    pthread_cond_broadcast(&q->done);
    pthread_mutex_unlock(&q->mu);
}

void
telem_queue_sender_gone(telem_queue_t *q)
{
    pthread_mutex_lock(&q->mu);
    q->sender_gone = 1;
    pthread_cond_broadcast(&q->done);
    pthread_mutex_unlock(&q->mu);
}

int
telem_queue_flush(telem_queue_t *q, int timeout_ms)
{
    int64_t deadline = telem_mono_ns()
                       + (int64_t) (timeout_ms > 0 ? timeout_ms : 0)
                             * TELEM_NS_PER_MS;
    struct timespec ts;
    s_timespec(&ts, deadline + S_FLUSH_GRACE_NS);
    pthread_mutex_lock(&q->mu);
    int rc = TELEM_ESTATE;
    if (q->sender_gone || q->stop)
        goto out;
    uint64_t seq = ++q->flush_req;
    q->flush_deadline = deadline;
    pthread_cond_signal(&q->work);
    while (q->flush_done < seq && !q->sender_gone) {
        if (pthread_cond_timedwait(&q->done, &q->mu, &ts) != 0)
            break;
    }
    if (q->flush_done >= seq)
        rc = q->flush_rc;
    else
        rc = q->sender_gone ? TELEM_ESTATE : TELEM_ETIMEDOUT;
out:
    pthread_mutex_unlock(&q->mu);
    return rc;
}

void
telem_queue_stop(telem_queue_t *q)
{
    pthread_mutex_lock(&q->mu);
    q->stop = 1;
    pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->mu);
}
