/* telem_sender.c - libtelem's sender thread: queue -> msgpack -> ZeroMQ.
 *
 * One thread per process owns the ZeroMQ context, a PUSH socket to the
 * node's ingest endpoint and (for flushes) a DEALER to its control socket;
 * application threads only ever touch the queue.
 *
 * The PUSH socket is bounded (SNDHWM) and set ZMQ_IMMEDIATE, so nothing
 * piles up inside ZeroMQ while no telemd listens: a send that cannot go
 * out is a drop, counted.  How long a send may wait for room:
 *   normal   up to S_SEND_WAIT_MS, unless the link is known down (the last
 *            wait timed out, or telemd's control socket file is missing),
 *            then not at all until a send succeeds again;
 *   flush    until the flush deadline;
 *   stopping not at all.
 * Waiting is zmq_poll(POLLOUT) on the sender thread, never the caller's.
 *
 * A flush collects every partial batch, sends everything, sends an empty
 * batch carrying a fresh random fin_token, then repeats TELEM_CTL_SYNC for
 * that token until telemd says it has seen it.  When the control endpoint
 * is an ipc path that does not exist, no telemd runs: the flush returns
 * TELEM_ECONN at once, after dropping what was queued.
 *
 * A hand-over (docs/telemd.md) binds a new socket file at the ingest path.
 * Before a send, at most every S_MOVE_CHECK_MS, the sender compares that
 * file with the one its PUSH connected to; when it changed, it closes the
 * PUSH with a linger (what it holds still goes to the old telemd, which
 * reads its connections to their end) and opens one to the new telemd.
 * The old telemd waits for its senders to move before it ends their
 * connections itself: libzmq drops an immediate PUSH's queue when the
 * connection ends under it, and a batch queued at that instant was lost.
 */
#include "telem_sender.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "telem_error.h"
#include "telem_paths.h"
#include "telem_sock_raw.h"
#include "telem_time.h"

#define S_SNDHWM 1000              /* batches ZeroMQ may hold */
#define S_LINGER_MS 100            /* at close, after a confirmed flush */
#define S_SEND_WAIT_MS 250         /* longest wait for room, normal mode */
#define S_SYNC_RESEND_MS 100       /* resend SYNC when no answer came */
#define S_SYNC_PAUSE_MS 10         /* pause after "not yet synced" */
#define S_TAGS_MAX 4
#define S_MOVE_CHECK_MS 50         /* looks for a successor's socket */
#define S_MOVE_LINGER_MS 2000      /* a left PUSH delivers its queue */
#define S_WAIT_NONE INT64_C(-1)    /* s_push: do not wait */
#define S_WAIT_NORMAL INT64_C(0)   /* s_push: normal mode */

struct telem_sender {
    char ingest[TELEM_PATH_MAX];
    char ctl[TELEM_PATH_MAX];
    char source[TELEM_NAME_MAX + 1];
    char tag_text[S_TAGS_MAX][2][TELEM_NAME_MAX + 1];
    telem_tag_t tags[S_TAGS_MAX];
    uint32_t ntags;
    telem_queue_t *queue;
    void (*collect)(void *arg);
    void *collect_arg;
    pthread_t thread;
    int joined;
    _Atomic uint64_t sent;
    _Atomic uint64_t dropped;
    telem_keys_t *keys;        /* the job's, for a tcp:// ingest; NULL */
    /* Sender thread only. */
    void *zctx;
    void *push;
    void *dealer;
    int push_failed;           /* endpoint unusable: drop everything */
    int link_down;             /* the last normal wait timed out */
    int ever_sent;
    dev_t ingest_dev;          /* the ingest socket file the PUSH went to */
    ino_t ingest_ino;          /* (0: not known) */
    int64_t move_check_at;     /* next look for a successor's socket file */
    uint64_t req_id;
    telem_proto_encoder_t *enc;
    telem_proto_decoder_t *dec;
    telem_sample_t samples[TELEM_Q_SAMPLES];
    telem_tag_t sample_tags[TELEM_Q_SAMPLES * TELEM_Q_TAGS_MAX];
};

static void
s_add(_Atomic uint64_t *counter, uint64_t n)
{
    atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

static int
s_ms_until(int64_t end_ns)
{
    int64_t left = end_ns - telem_mono_ns();
    if (left <= 0)
        return 0;
    return (int) ((left + TELEM_NS_PER_MS - 1) / TELEM_NS_PER_MS);
}

static void *
s_socket(telem_sender_t *self, int type, const char *endpoint, int linger)
{
    if (!self->zctx && !(self->zctx = zmq_ctx_new()))
        return NULL;
    if (!*endpoint)
        return NULL;
    /* The ingest PUSH queues only to a connected telemd (immediate). */
    const telem_sock_opts_t o = {
        .max_msg = TELEM_SOCK_KEEP, .sndhwm = S_SNDHWM,
        .rcvhwm = TELEM_SOCK_KEEP, .linger_ms = linger,
        .sndtimeo_ms = TELEM_SOCK_KEEP, .immediate = type == ZMQ_PUSH,
        .reconnect_ivl_max_ms = TELEM_SOCK_KEEP, .keys = self->keys,
    };
    return telem_sock_raw_new(self->zctx, type, &o, endpoint, NULL);
}

/* 1 when `endpoint` is an ipc path in the file system (not abstract). */
static int
s_ipc_path(const char *endpoint)
{
    return strncmp(endpoint, "ipc://", 6) == 0 && endpoint[6] != '@';
}

/* 1 with *st filled when the ipc path of `endpoint` names a socket file. */
static int
s_socket_file(const char *endpoint, struct stat *st)
{
    return stat(endpoint + 6, st) == 0 && S_ISSOCK(st->st_mode);
}

/* 1 unless the control endpoint is an ipc path that does not exist. */
static int
s_ctl_present(const telem_sender_t *self)
{
    struct stat st;
    if (!*self->ctl)
        return 0;
    return !s_ipc_path(self->ctl) || s_socket_file(self->ctl, &st);
}

/* 1 with *st filled when the ingest endpoint is an ipc path that names a
 * socket file now. */
static int
s_ingest_file(const telem_sender_t *self, struct stat *st)
{
    return s_ipc_path(self->ingest) && s_socket_file(self->ingest, st);
}

static void
s_open_push(telem_sender_t *self)
{
    struct stat st;
    int known = s_ingest_file(self, &st);
    self->ingest_dev = known ? st.st_dev : 0;
    self->ingest_ino = known ? st.st_ino : 0;
    self->push = s_socket(self, ZMQ_PUSH, self->ingest, S_LINGER_MS);
    self->push_failed = !self->push;
}

/* Moves the PUSH to a successor's socket file (see the top of this file). */
static void
s_follow_handover(telem_sender_t *self)
{
    int64_t now = telem_mono_ns();
    if (!self->push || now < self->move_check_at)
        return;
    self->move_check_at = now + S_MOVE_CHECK_MS * TELEM_NS_PER_MS;
    struct stat st;
    if (!s_ingest_file(self, &st))
        return;
    if (!self->ingest_ino) {           /* telemd came after the PUSH */
        self->ingest_dev = st.st_dev;
        self->ingest_ino = st.st_ino;
        return;
    }
    if (st.st_ino == self->ingest_ino && st.st_dev == self->ingest_dev)
        return;
    int linger = S_MOVE_LINGER_MS;
    zmq_setsockopt(self->push, ZMQ_LINGER, &linger, sizeof linger);
    zmq_close(self->push);
    self->push = NULL;
    s_open_push(self);
}

/* Sends one frame on PUSH; `until` is S_WAIT_NONE, S_WAIT_NORMAL or a
 * monotonic deadline (flush).  Returns 0 or a negative code. */
static int
s_push(telem_sender_t *self, const void *data, size_t size, int64_t until)
{
    /* Stopping (no wait) stays on the PUSH it has: a new one would not
     * be connected yet, and the old telemd reads the old one to its end. */
    if (!self->push && !self->push_failed)
        s_open_push(self);
    else if (until != S_WAIT_NONE)
        s_follow_handover(self);
    if (!self->push)
        return TELEM_ECONN;
    int64_t end = 0;
    for (;;) {
        if (zmq_send(self->push, data, size, ZMQ_DONTWAIT) >= 0) {
            self->link_down = 0;
            self->ever_sent = 1;
            return 0;
        }
        if (zmq_errno() != EAGAIN && zmq_errno() != EINTR)
            return TELEM_EIO;
        if (until == S_WAIT_NONE || (until == S_WAIT_NORMAL && self->link_down))
            return TELEM_EFULL;
        if (until == S_WAIT_NORMAL && !end && !s_ctl_present(self)) {
            self->link_down = 1;          /* no telemd: do not wait */
            return TELEM_ECONN;
        }
        if (!end)
            end = until == S_WAIT_NORMAL
                      ? telem_mono_ns() + S_SEND_WAIT_MS * TELEM_NS_PER_MS
                      : until;
        int ms = s_ms_until(end);
        zmq_pollitem_t item = { self->push, 0, ZMQ_POLLOUT, 0 };
        int rc = ms > 0 ? zmq_poll(&item, 1, ms) : 0;
        if (rc < 0 && zmq_errno() != EINTR)
            return TELEM_EIO;
        if (rc == 0 && s_ms_until(end) == 0) {
            if (until == S_WAIT_NORMAL)
                self->link_down = 1;
            return TELEM_ETIMEDOUT;
        }
    }
}

/* Encodes batch `b`, or with b NULL an empty one carrying fin_token. */
static int
s_encode_samples(telem_sender_t *self, const telem_qbatch_t *b,
                 uint64_t fin_token, const void **data, size_t *size)
{
    uint32_t nt = 0, n = b ? b->n : 0;
    for (uint32_t i = 0; i < n; i++) {
        const telem_qsample_t *q = &b->s[i];
        telem_sample_t *s = &self->samples[i];
        s->metric = b->arena + q->name;
        s->level = q->level;
        s->kind = q->kind;
        s->ts_ns = q->ts_ns;
        s->value = q->value;
        s->ntags = q->ntags;
        s->tags = q->ntags ? &self->sample_tags[nt] : NULL;
        const char *p = b->arena + q->tags;
        for (uint32_t k = 0; k < q->ntags; k++) {
            telem_tag_t *t = &self->sample_tags[nt++];
            t->key = p;
            p += strlen(p) + 1;
            t->value = p;
            p += strlen(p) + 1;
        }
    }
    telem_batch_t m = { self->source, self->tags, self->ntags,
                        self->samples, n, fin_token };
    return telem_proto_encode_batch(self->enc, &m, data, size);
}

static int
s_encode_meta(telem_sender_t *self, const telem_qbatch_t *b,
              const void **data, size_t *size)
{
    telem_meta_t m;
    m.metric = b->arena;
    m.unit = m.metric + strlen(m.metric) + 1;
    m.doc = m.unit + strlen(m.unit) + 1;
    m.type = (telem_metric_type_t) b->meta_type;
    return telem_proto_encode_meta(self->enc, &m, data, size);
}

/* Encodes and sends every batch of the list, then recycles them. */
static void
s_send_list(telem_sender_t *self, telem_qbatch_t *b, int64_t until)
{
    while (b) {
        telem_qbatch_t *next = b->next;
        const void *data = NULL;
        size_t size = 0;
        int rc = b->kind == TELEM_QB_META
                     ? s_encode_meta(self, b, &data, &size)
                     : s_encode_samples(self, b, 0, &data, &size);
        if (!rc)
            rc = s_push(self, data, size, until);
        s_add(rc ? &self->dropped : &self->sent,
              b->kind == TELEM_QB_META ? 0 : b->n);
        telem_queue_give_free(self->queue, &b);
        b = next;
    }
}

/* A random token in 1 .. INT64_MAX (it travels as the int64 SYNC arg). */
static uint64_t
s_token(telem_sender_t *self)
{
    uint64_t t = 0;
    if (getrandom(&t, sizeof t, GRND_NONBLOCK) != (ssize_t) sizeof t)
        t = (uint64_t) telem_mono_ns() * UINT64_C(0x9e3779b97f4a7c15)
            ^ ((uint64_t) getpid() << 32) ^ (uint64_t) (uintptr_t) self;
    t &= (uint64_t) INT64_MAX;
    return t ? t : 1;
}

/* Receives one message from the DEALER; returns its last frame's decode
 * result in *out (0 on success). */
static int
s_recv_reply(telem_sender_t *self, zmq_msg_t *frame, telem_msg_t *out)
{
    do {
        if (zmq_msg_recv(frame, self->dealer, ZMQ_DONTWAIT) < 0)
            return TELEM_EIO;
    } while (zmq_msg_more(frame));
    return telem_proto_decode(self->dec, zmq_msg_data(frame),
                              zmq_msg_size(frame), out);
}

/* Waits until `end` for an answer to a SYNC with id >= first.  Returns 1
 * when synced, 0 for "not yet", -1 when nothing came. */
static int
s_await_sync(telem_sender_t *self, uint64_t first, int64_t end, int *answered)
{
    zmq_msg_t frame;
    zmq_msg_init(&frame);
    int result = -1;
    for (;;) {
        zmq_pollitem_t item = { self->dealer, 0, ZMQ_POLLIN, 0 };
        int rc = zmq_poll(&item, 1, s_ms_until(end));
        if (rc < 0 && zmq_errno() == EINTR)
            continue;
        if (rc <= 0)
            break;
        telem_msg_t m;
        if (s_recv_reply(self, &frame, &m) != 0)
            continue;
        uint64_t id = m.type == TELEM_MSG_CONTROL_REPLY ? m.u.control_reply.id
                      : m.type == TELEM_MSG_ERROR ? m.u.error.id : 0;
        if (id < first || id > self->req_id)
            continue;                     /* an answer to an older flush */
        *answered = 1;
        result = m.type == TELEM_MSG_CONTROL_REPLY
                 && m.u.control_reply.synced ? 1 : 0;
        break;
    }
    zmq_msg_close(&frame);
    return result;
}

/* Asks telemd whether it has seen `token` until it has or `deadline`. */
static int
s_sync(telem_sender_t *self, uint64_t token, int64_t deadline)
{
    if (!self->dealer)
        self->dealer = s_socket(self, ZMQ_DEALER, self->ctl, 0);
    if (!self->dealer)
        return TELEM_ECONN;
    uint64_t first = self->req_id + 1;
    int answered = 0;
    while (telem_mono_ns() < deadline) {
        telem_control_t c = { ++self->req_id, TELEM_CTL_SYNC, (int64_t) token };
        const void *data;
        size_t size;
        if (telem_proto_encode_control(self->enc, &c, &data, &size) != 0)
            return TELEM_EPROTO;
        zmq_send(self->dealer, data, size, ZMQ_DONTWAIT);
        int64_t end = telem_mono_ns() + S_SYNC_RESEND_MS * TELEM_NS_PER_MS;
        int r = s_await_sync(self, first, end < deadline ? end : deadline,
                             &answered);
        if (r == 0) {
            /* Not there yet: telemd is still draining.  Wait a moment (a
             * late answer to an earlier request may still say yes). */
            end = telem_mono_ns() + S_SYNC_PAUSE_MS * TELEM_NS_PER_MS;
            r = s_await_sync(self, first, end < deadline ? end : deadline,
                             &answered);
        }
        if (r == 1)
            return 0;
    }
    return answered ? TELEM_ETIMEDOUT : TELEM_ECONN;
}

static int
s_flush(telem_sender_t *self, int64_t deadline)
{
    self->collect(self->collect_arg);
    telem_qbatch_t *items = telem_queue_take_all(self->queue);
    if (!s_ctl_present(self)) {
        self->link_down = 1;              /* no telemd: do not wait */
        s_send_list(self, items, S_WAIT_NORMAL);
        return TELEM_ECONN;
    }
    self->link_down = 0;
    s_send_list(self, items, deadline);
    uint64_t token = s_token(self);
    const void *data;
    size_t size;
    int rc = s_encode_samples(self, NULL, token, &data, &size);
    if (rc)
        return rc;
    rc = s_push(self, data, size, deadline);
    if (rc)
        return self->ever_sent ? TELEM_ETIMEDOUT : TELEM_ECONN;
    return s_sync(self, token, deadline);
}

static void
s_close(telem_sender_t *self)
{
    if (self->push)
        zmq_close(self->push);
    if (self->dealer)
        zmq_close(self->dealer);
    self->push = self->dealer = NULL;
    if (self->zctx)
        zmq_ctx_term(self->zctx);
    self->zctx = NULL;
}

static void *
s_run(void *arg)
{
    telem_sender_t *self = arg;
    int64_t next_tick = telem_mono_ns() + TELEM_SENDER_TICK_MS * TELEM_NS_PER_MS;
    for (;;) {
        telem_queue_work_t w;
        telem_queue_wait(self->queue, next_tick, &w);
        if (w.stop) {
            s_send_list(self, w.items, S_WAIT_NONE);
            break;
        }
        s_send_list(self, w.items, S_WAIT_NORMAL);
        if (w.flush_seq)
            telem_queue_flush_done(self->queue, w.flush_seq,
                                   s_flush(self, w.flush_deadline));
        int64_t now = telem_mono_ns();
        if (now >= next_tick) {
            self->collect(self->collect_arg);
            next_tick = now + TELEM_SENDER_TICK_MS * TELEM_NS_PER_MS;
        }
    }
    s_close(self);
    telem_queue_sender_gone(self->queue);
    return NULL;
}

static int
s_copy(char *dst, size_t size, const char *src)
{
    int n = snprintf(dst, size, "%s", src ? src : "");
    return n < 0 || (size_t) n >= size ? TELEM_ETOOBIG : 0;
}

static int
s_configure(telem_sender_t *self, const telem_sender_config_t *cfg)
{
    if (!cfg->queue || !cfg->collect || cfg->ntags > S_TAGS_MAX)
        return TELEM_EINVAL;
    if (s_copy(self->ingest, sizeof self->ingest, cfg->ingest)
        || s_copy(self->ctl, sizeof self->ctl, cfg->ctl)
        || s_copy(self->source, sizeof self->source, cfg->source))
        return TELEM_ETOOBIG;
    for (uint32_t i = 0; i < cfg->ntags; i++) {
        if (s_copy(self->tag_text[i][0], TELEM_NAME_MAX + 1, cfg->tags[i].key)
            || s_copy(self->tag_text[i][1], TELEM_NAME_MAX + 1,
                      cfg->tags[i].value))
            return TELEM_ETOOBIG;
        self->tags[i].key = self->tag_text[i][0];
        self->tags[i].value = self->tag_text[i][1];
    }
    self->ntags = cfg->ntags;
    self->queue = cfg->queue;
    self->collect = cfg->collect;
    self->collect_arg = cfg->collect_arg;
    self->enc = telem_proto_encoder_new();
    self->dec = telem_proto_decoder_new();
    /* A TCP ingest (TELEM_INGEST=tcp://...) is CURVE with the job's key
       where one is found; a key that cannot be read leaves it plain, and
       a CURVE receiver then takes nothing (counted as dropped): the
       application is never stopped for it. */
    if (strncmp(self->ingest, "tcp://", 6) == 0)
        telem_keys_find(NULL, NULL, &self->keys, NULL, 0);
    return self->enc && self->dec ? 0 : TELEM_ENOMEM;
}

telem_sender_t *
telem_sender_new(const telem_sender_config_t *cfg)
{
    telem_sender_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    int rc = s_configure(self, cfg);
    if (rc)
        goto out;
    /* The thread (and ZeroMQ's I/O thread it starts) never takes the
     * application's signals. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&self->thread, NULL, s_run, self) ? TELEM_ENOMEM : 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!rc)
        pthread_setname_np(self->thread, "telem-sender");
out:
    if (rc) {
        telem_proto_encoder_destroy(&self->enc);
        telem_proto_decoder_destroy(&self->dec);
        telem_keys_destroy(&self->keys);
        free(self);
        self = NULL;
    }
    return self;
}

void
telem_sender_stop(telem_sender_t *self)
{
    if (!self || self->joined)
        return;
    telem_queue_stop(self->queue);
    pthread_join(self->thread, NULL);
    self->joined = 1;
}

void
telem_sender_destroy(telem_sender_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    telem_sender_t *self = *self_p;
    telem_sender_stop(self);
    telem_proto_encoder_destroy(&self->enc);
    telem_proto_decoder_destroy(&self->dec);
    telem_keys_destroy(&self->keys);
    free(self);
    *self_p = NULL;
}

uint64_t
telem_sender_sent(const telem_sender_t *self)
{
    return atomic_load_explicit(&self->sent, memory_order_relaxed);
}

uint64_t
telem_sender_dropped(const telem_sender_t *self)
{
    return atomic_load_explicit(&self->dropped, memory_order_relaxed);
}
