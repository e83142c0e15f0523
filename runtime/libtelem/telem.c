/* telem.c - the user metrics API (telem.h): per-thread batches in front of
 * one sender thread.
 *
 * Hot path.  telem_add_data() reads two atomics (state, level), validates,
 * takes the timestamp (vDSO) when none was given, then copies the sample
 * into the calling thread's own batch (telem_queue.h: fixed sample array +
 * string arena, a repeated metric name is stored once).  It never
 * allocates in the steady state, never does I/O and never calls ZeroMQ.
 * When the batch is full it is pushed to the bounded queue and an empty one
 * taken from the pool; when the queue is full the new sample is refused
 * with TELEM_EFULL and counted.
 *
 * Partial batches.  Each thread's buffer (s_tbuf_t) is registered in the
 * context and guarded by a small mutex that its owner takes, uncontended,
 * once per sample.  That lets the sender thread take partly filled batches
 * every TELEM_SENDER_TICK_MS and before a flush, and lets telem_finalize()
 * detach every buffer, so no sample waits for its thread to fill a batch.
 * A thread that exits hands its partial batch over in a pthread key
 * destructor and marks its buffer dead; the sender frees dead buffers.
 *
 * Lifetime.  Buffers belong to their threads and outlive contexts.  A
 * buffer points at its context only while attached; telem_finalize()
 * detaches every buffer under its mutex before it frees the context, so a
 * thread holding its buffer's mutex with a non-NULL context may use that
 * context.  Lock order: s_api.life -> ctx->reg_mu -> tbuf->mu -> queue.
 * telem_flush() holds a reference counted under s_api.life instead of the
 * lock, so a long flush blocks no one else.
 *
 * fork().  A pthread_atfork child handler abandons the inherited context
 * without touching it (its ZeroMQ context and sender thread belong to the
 * parent; the memory stays reachable through s_api.orphans), resets the
 * forking thread's buffer and returns the state to "not initialised": the
 * child's first call starts a fresh context and sender.  Samples the
 * parent had not yet sent stay the parent's.
 *
 * Exit.  Nothing is registered with atexit(): applications call
 * telem_finalize(), which sends everything and waits for telemd's
 * confirmation (the end-of-stream handshake in telem_sender.c).
 *
 * Process-wide state is kept in one struct, s_api, as the API is global.
 * The push calls are telem_push.c's, over the pieces telem_int.h names;
 * the environment is read by telem_env.c.
 */
#include "telem.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_error.h"
#include "telem_int.h"
#include "telem_paths.h"
#include "telem_promname.h"
#include "telem_proto.h"
#include "telem_queue.h"
#include "telem_sender.h"
#include "telem_time.h"

#define S_QUEUE_BATCHES 128          /* full batches waiting for the sender */
#define S_FINALIZE_MS 2000
#define S_LEVEL_MAX 4
#define S_LIKELY(x) __builtin_expect(!!(x), 1)
#define S_UNLIKELY(x) __builtin_expect(!!(x), 0)

_Static_assert(TELEM_NAME_MAX + 1
                   + 2 * TELEM_Q_TAGS_MAX * (TELEM_NAME_MAX + 1)
                   <= TELEM_Q_ARENA,
               "one sample of maximal size must fit an empty batch");
_Static_assert(3 * (TELEM_NAME_MAX + 1) + TELEM_TEXT_MAX <= TELEM_Q_ARENA,
               "a description must fit a batch");

enum { S_UNINIT = 0, S_LIVE = 1, S_FINALIZED = 2 };

typedef struct s_ctx s_ctx_t;

typedef struct s_tbuf {
    pthread_mutex_t mu;           /* owner per sample; sender to collect */
    _Atomic(s_ctx_t *) ctx;       /* written under mu; NULL = detached */
    telem_qbatch_t *batch;        /* under mu; NULL until needed */
    int dead;                     /* under mu: the owner thread has exited */
    struct s_tbuf *prev, *next;   /* registry, under ctx->reg_mu */
    _Atomic uint64_t queued;      /* counters written by the owner only */
    _Atomic uint64_t filtered;
    _Atomic uint64_t dropped;
    tapi_pcache_t pcache;         /* pushed names (telem_push.c), under mu */
    tapi_scache_t scache;         /* sections (telem_section.c), under mu */
} s_tbuf_t;

struct s_ctx {
    pthread_mutex_t reg_mu;
    s_tbuf_t *tbufs;              /* registered buffers */
    uint64_t gone_queued;         /* counters of buffers no longer here */
    uint64_t gone_filtered;
    uint64_t gone_dropped;
    telem_queue_t *queue;
    telem_sender_t *sender;
    int refs;                     /* telem_flush() calls, under s_api.life */
    s_ctx_t *orphan_next;         /* abandoned at fork */
};

typedef struct {
    const char *s[2 * TELEM_Q_TAGS_MAX];  /* key, value, key, value ... */
    size_t len[2 * TELEM_Q_TAGS_MAX];
    int n;                        /* pairs */
    size_t bytes;                 /* arena bytes, NULs included */
} s_tags_t;

static struct {
    pthread_mutex_t life;         /* ctx, state transitions, refs, last */
    pthread_cond_t life_cv;       /* refs reached 0 */
    s_ctx_t *ctx;
    telem_stats_t last;           /* counters at the last finalize */
    s_ctx_t *orphans;
    _Atomic int state;
    _Atomic int level;
    _Atomic uint64_t invalid;     /* calls refused with TELEM_EINVAL */
    void (*_Atomic flush_hook)(int final);  /* tapi_set_flush_hook() */
    pthread_once_t once;
    pthread_key_t key;
    int key_ok;
} s_api = {
    .life = PTHREAD_MUTEX_INITIALIZER,
    .life_cv = PTHREAD_COND_INITIALIZER,
    .level = 1,
    .once = PTHREAD_ONCE_INIT,
};

static _Thread_local s_tbuf_t *s_my __attribute__((tls_model("initial-exec")));

/* ---- thread buffers ---------------------------------------------------- */

static inline void
s_count(_Atomic uint64_t *c, uint64_t n)
{
    /* Single writer: a plain load and store, no locked instruction. */
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

static void
s_tbuf_free(s_tbuf_t *tb)
{
    free(tb->batch);
    pthread_mutex_destroy(&tb->mu);
    free(tb);
}

static void
s_unlink(s_ctx_t *ctx, s_tbuf_t *tb)
{
    if (tb->prev)
        tb->prev->next = tb->next;
    else
        ctx->tbufs = tb->next;
    if (tb->next)
        tb->next->prev = tb->prev;
    tb->prev = tb->next = NULL;
}

/* Moves a buffer's counters into the context's; under reg_mu. */
static void
s_fold(s_ctx_t *ctx, s_tbuf_t *tb)
{
    ctx->gone_queued += atomic_load_explicit(&tb->queued, memory_order_relaxed);
    ctx->gone_filtered
        += atomic_load_explicit(&tb->filtered, memory_order_relaxed);
    ctx->gone_dropped
        += atomic_load_explicit(&tb->dropped, memory_order_relaxed);
}

/* Hands a buffer's batch to the queue (partial: forced) or the pool. */
static void
s_hand_over(s_ctx_t *ctx, s_tbuf_t *tb)
{
    if (tb->batch && tb->batch->n)
        telem_queue_push(ctx->queue, &tb->batch, 1);
    else
        telem_queue_give_free(ctx->queue, &tb->batch);
}

/* pthread key destructor: the owner thread is exiting. */
static void
s_thread_exit(void *arg)
{
    s_tbuf_t *tb = arg;
    if (s_my == tb)
        s_my = NULL;
    pthread_mutex_lock(&tb->mu);
    s_ctx_t *ctx = atomic_load_explicit(&tb->ctx, memory_order_relaxed);
    if (ctx) {
        s_hand_over(ctx, tb);
        tb->dead = 1;             /* the sender unlinks and frees it */
    }
    pthread_mutex_unlock(&tb->mu);
    if (!ctx)
        s_tbuf_free(tb);
}

/* Sender thread, every tick and before a flush: takes partial batches and
 * frees the buffers of threads that have exited. */
static void
s_collect(void *arg)
{
    s_ctx_t *ctx = arg;
    pthread_mutex_lock(&ctx->reg_mu);
    s_tbuf_t *tb = ctx->tbufs;
    while (tb) {
        s_tbuf_t *next = tb->next;
        pthread_mutex_lock(&tb->mu);
        int dead = tb->dead;
        if (tb->batch && tb->batch->n)
            telem_queue_push(ctx->queue, &tb->batch, 1);
        pthread_mutex_unlock(&tb->mu);
        if (dead) {
            s_unlink(ctx, tb);
            s_fold(ctx, tb);
            s_tbuf_free(tb);
        }
        tb = next;
    }
    pthread_mutex_unlock(&ctx->reg_mu);
}

/* telem_finalize(): detaches every buffer, queueing its partial batch. */
static void
s_detach_all(s_ctx_t *ctx)
{
    pthread_mutex_lock(&ctx->reg_mu);
    while (ctx->tbufs) {
        s_tbuf_t *tb = ctx->tbufs;
        s_unlink(ctx, tb);
        pthread_mutex_lock(&tb->mu);
        int dead = tb->dead;
        s_hand_over(ctx, tb);
        atomic_store_explicit(&tb->ctx, NULL, memory_order_relaxed);
        s_fold(ctx, tb);
        pthread_mutex_unlock(&tb->mu);
        if (dead)
            s_tbuf_free(tb);
    }
    pthread_mutex_unlock(&ctx->reg_mu);
}

static void
s_ctx_stats(s_ctx_t *ctx, telem_stats_t *out)
{
    pthread_mutex_lock(&ctx->reg_mu);
    out->queued = ctx->gone_queued;
    out->filtered = ctx->gone_filtered;
    out->dropped = ctx->gone_dropped;
    for (s_tbuf_t *tb = ctx->tbufs; tb; tb = tb->next) {
        out->queued += atomic_load_explicit(&tb->queued, memory_order_relaxed);
        out->filtered
            += atomic_load_explicit(&tb->filtered, memory_order_relaxed);
        out->dropped += atomic_load_explicit(&tb->dropped, memory_order_relaxed);
    }
    pthread_mutex_unlock(&ctx->reg_mu);
    out->sent = telem_sender_sent(ctx->sender);
    out->dropped += telem_sender_dropped(ctx->sender);
}

/* ---- context ------------------------------------------------------------ */

static void
s_ctx_destroy(s_ctx_t **ctx_p)
{
    if (!ctx_p || !*ctx_p)
        return;
    s_ctx_t *ctx = *ctx_p;
    telem_sender_destroy(&ctx->sender);
    telem_queue_destroy(&ctx->queue);
    pthread_mutex_destroy(&ctx->reg_mu);
    free(ctx);
    *ctx_p = NULL;
}

static s_ctx_t *
s_ctx_new(int *rc_p)
{
    char node[TELEM_NAME_MAX + 1], ingest[TELEM_PATH_MAX], ctl[TELEM_PATH_MAX];
    char pid[24];
    s_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        goto out;
    pthread_mutex_init(&ctx->reg_mu, NULL);
    ctx->queue = telem_queue_new(S_QUEUE_BATCHES);
    if (!ctx->queue)
        goto out;
    tapi_endpoints(node, ingest, ctl);
    snprintf(pid, sizeof pid, "%ld", (long) getpid());
    telem_tag_t tags[2] = { { "pid", pid }, { "rank", getenv("TELEM_RANK") } };
    uint32_t ntags = tags[1].value && *tags[1].value
                     && strlen(tags[1].value) <= TELEM_NAME_MAX ? 2 : 1;
    telem_sender_config_t cfg = { ingest, ctl, node, tags, ntags, ctx->queue,
                                  s_collect, ctx };
    ctx->sender = telem_sender_new(&cfg);
out:
    if (ctx && !ctx->sender)
        s_ctx_destroy(&ctx);
    *rc_p = ctx ? 0 : TELEM_ENOMEM;
    return ctx;
}

static void
s_atfork_child(void)
{
    pthread_mutex_init(&s_api.life, NULL);
    pthread_cond_init(&s_api.life_cv, NULL);
    if (s_api.ctx) {
        s_api.ctx->orphan_next = s_api.orphans;
        s_api.orphans = s_api.ctx;
        s_api.ctx = NULL;
    }
    if (atomic_load(&s_api.state) == S_LIVE)
        atomic_store(&s_api.state, S_UNINIT);
    s_tbuf_t *tb = s_my;
    if (tb) {
        pthread_mutex_init(&tb->mu, NULL);
        atomic_store(&tb->ctx, NULL);
        tb->prev = tb->next = NULL;
        tb->dead = 0;
        memset(&tb->pcache, 0, sizeof tb->pcache);
        memset(&tb->scache, 0, sizeof tb->scache);
        if (tb->batch)
            tb->batch->n = tb->batch->used = tb->batch->last_len = 0;
    }
}

static void
s_once(void)
{
    s_api.key_ok = pthread_key_create(&s_api.key, s_thread_exit) == 0;
    pthread_atfork(NULL, NULL, s_atfork_child);
}

int
telem_init(void)
{
    pthread_once(&s_api.once, s_once);
    int rc = 0;
    pthread_mutex_lock(&s_api.life);
    if (!s_api.ctx) {
        s_ctx_t *ctx = s_ctx_new(&rc);
        if (ctx) {
            s_api.ctx = ctx;
            memset(&s_api.last, 0, sizeof s_api.last);
            atomic_store(&s_api.invalid, 0);
            atomic_store(&s_api.level,
                         tapi_env_int("TELEM_LEVEL", 0, S_LEVEL_MAX, 1));
            atomic_store_explicit(&s_api.state, S_LIVE, memory_order_release);
        }
    }
    pthread_mutex_unlock(&s_api.life);
    return rc;
}

/* 0 when live (initialising on first use), TELEM_ESTATE after finalize. */
static inline int
s_live(void)
{
    int st = atomic_load_explicit(&s_api.state, memory_order_acquire);
    if (S_LIKELY(st == S_LIVE))
        return 0;
    return st == S_FINALIZED ? TELEM_ESTATE : telem_init();
}

/* Slow path: creates the calling thread's buffer and attaches it. */
static int
s_attach(s_tbuf_t **tb_p)
{
    s_tbuf_t *tb = s_my;
    if (!tb) {
        tb = calloc(1, sizeof *tb);
        if (!tb)
            return TELEM_ENOMEM;
        pthread_mutex_init(&tb->mu, NULL);
        s_my = tb;
        if (s_api.key_ok)
            pthread_setspecific(s_api.key, tb);
    }
    *tb_p = tb;
    int rc = 0;
    pthread_mutex_lock(&s_api.life);
    s_ctx_t *ctx = s_api.ctx;
    if (ctx) {
        pthread_mutex_lock(&ctx->reg_mu);
        pthread_mutex_lock(&tb->mu);
        if (!atomic_load_explicit(&tb->ctx, memory_order_relaxed)) {
            atomic_store_explicit(&tb->queued, 0, memory_order_relaxed);
            atomic_store_explicit(&tb->filtered, 0, memory_order_relaxed);
            atomic_store_explicit(&tb->dropped, 0, memory_order_relaxed);
            tb->prev = NULL;
            tb->next = ctx->tbufs;
            if (tb->next)
                tb->next->prev = tb;
            ctx->tbufs = tb;
            atomic_store_explicit(&tb->ctx, ctx, memory_order_relaxed);
        }
        pthread_mutex_unlock(&tb->mu);
        pthread_mutex_unlock(&ctx->reg_mu);
    } else {
        rc = TELEM_ESTATE;
    }
    pthread_mutex_unlock(&s_api.life);
    return rc;
}

static inline int
s_tbuf(s_tbuf_t **tb_p)
{
    s_tbuf_t *tb = s_my;
    if (S_LIKELY(tb && atomic_load_explicit(&tb->ctx, memory_order_relaxed))) {
        *tb_p = tb;
        return 0;
    }
    return s_attach(tb_p);
}

/* Locks the caller's buffer and returns its context, attaching again if a
 * finalize detached it meanwhile; NULL (and *rc) when there is none. */
static s_ctx_t *
s_lock(s_tbuf_t *tb, int *rc)
{
    for (int tries = 0; tries < 2; tries++) {
        pthread_mutex_lock(&tb->mu);
        s_ctx_t *ctx = atomic_load_explicit(&tb->ctx, memory_order_relaxed);
        if (S_LIKELY(ctx != NULL))
            return ctx;
        pthread_mutex_unlock(&tb->mu);
        if ((*rc = s_live()) || (*rc = s_attach(&tb)))
            return NULL;
    }
    *rc = TELEM_ESTATE;
    return NULL;
}

/* Queues the full batch and takes an empty one; under tb->mu. */
static int
s_rotate(s_ctx_t *ctx, s_tbuf_t *tb)
{
    if (tb->batch && tb->batch->n) {
        int rc = telem_queue_push(ctx->queue, &tb->batch, 0);
        if (rc)
            return rc;
    }
    if (!tb->batch && !(tb->batch = telem_queue_take_free(ctx->queue)))
        return TELEM_ENOMEM;
    return 0;
}

static inline uint32_t
s_put(telem_qbatch_t *b, const char *s, size_t len)
{
    uint32_t at = b->used;
    memcpy(b->arena + at, s, len);
    b->arena[at + len] = '\0';
    b->used += (uint32_t) len + 1;
    return at;
}

static int
s_append(s_tbuf_t *tb, const char *metric, size_t len, double value,
         int64_t ts_ns, int level, const s_tags_t *tags)
{
    int rc = 0;
    size_t need = len + 1 + (tags ? tags->bytes : 0);
    s_ctx_t *ctx = s_lock(tb, &rc);
    if (!ctx)
        return rc;
    telem_qbatch_t *b = tb->batch;
    if (S_UNLIKELY(!b || b->n == TELEM_Q_SAMPLES
                   || b->used + need > TELEM_Q_ARENA)) {
        if ((rc = s_rotate(ctx, tb)) != 0) {
            s_count(&tb->dropped, 1);
            goto out;
        }
        b = tb->batch;
    }
    telem_qsample_t *s = &b->s[b->n++];
    s->ts_ns = ts_ns;
    s->value = value;
    s->level = (uint8_t) level;
    s->kind = 0;
    if (len == b->last_len && memcmp(b->arena + b->last_name, metric, len) == 0) {
        s->name = b->last_name;
    } else {
        s->name = b->last_name = s_put(b, metric, len);
        b->last_len = (uint32_t) len;
    }
    s->ntags = 0;
    s->tags = b->used;
    if (tags) {
        s->ntags = (uint8_t) tags->n;
        for (int i = 0; i < 2 * tags->n; i++)
            s_put(b, tags->s[i], tags->len[i]);
    }
    s_count(&tb->queued, 1);
out:
    pthread_mutex_unlock(&tb->mu);
    return rc;
}

/* ---- validation and the public API -------------------------------------- */

static inline int
s_name_ok(const char *s, size_t max, size_t *len)
{
    if (!s)
        return 0;
    *len = strnlen(s, max + 1);
    return *len >= 1 && *len <= max;
}

static int
s_tags_check(s_tags_t *t)
{
    t->bytes = 0;
    if (t->n < 0)
        return TELEM_EINVAL;
    for (int i = 0; i < 2 * t->n; i++) {
        if (!s_name_ok(t->s[i], TELEM_NAME_MAX, &t->len[i]))
            return TELEM_EINVAL;
        t->bytes += t->len[i] + 1;
    }
    for (int i = 0; i < 2 * t->n; i += 2) {
        if (strcmp(t->s[i], "host") == 0 || strcmp(t->s[i], "pid") == 0)
            return TELEM_EINVAL;
        for (int j = 0; j < i; j += 2)
            if (strcmp(t->s[i], t->s[j]) == 0)
                return TELEM_EINVAL;
    }
    return 0;
}

static int
s_invalid(void)
{
    atomic_fetch_add_explicit(&s_api.invalid, 1, memory_order_relaxed);
    return TELEM_EINVAL;
}

static int
s_add(const char *metric, double value, int64_t ts_ns, int level,
      s_tags_t *tags)
{
    int rc = s_live();
    if (S_UNLIKELY(rc))
        return rc;
    int current = atomic_load_explicit(&s_api.level, memory_order_relaxed);
    if (current == 0)
        return 1;
    size_t len;
    if (level < 1 || level > S_LEVEL_MAX || !isfinite(value) || ts_ns < 0
        || !s_name_ok(metric, TELEM_NAME_MAX, &len))
        return s_invalid();
    if (tags && (rc = s_tags_check(tags)) != 0)
        return s_invalid();
    s_tbuf_t *tb;
    if (S_UNLIKELY((rc = s_tbuf(&tb)) != 0))
        return rc;
    if (level > current) {
        s_count(&tb->filtered, 1);
        return 1;
    }
    if (!ts_ns)
        ts_ns = telem_now_ns();
    return s_append(tb, metric, len, value, ts_ns, level, tags);
}

int
telem_add_data(const char *metric, double value, int64_t ts_ns, int level)
{
    return s_add(metric, value, ts_ns, level, NULL);
}

int
telem_add_data_tags(const char *metric, double value, int64_t ts_ns,
                    int level, int ntags, ...)
{
    s_tags_t tags;
    tags.n = ntags < 0 || ntags > TELEM_Q_TAGS_MAX ? -1 : ntags;
    va_list ap;
    va_start(ap, ntags);
    for (int i = 0; i < 2 * tags.n; i++)
        tags.s[i] = va_arg(ap, const char *);
    va_end(ap);
    return s_add(metric, value, ts_ns, level, ntags ? &tags : NULL);
}

int
telem_add_data_tagv(const char *metric, double value, int64_t ts_ns,
                    int level, int ntags, const char *const *kv)
{
    s_tags_t tags;
    tags.n = ntags < 0 || ntags > TELEM_Q_TAGS_MAX || (ntags && !kv) ? -1
                                                                     : ntags;
    for (int i = 0; i < 2 * tags.n; i++)
        tags.s[i] = kv[i];
    return s_add(metric, value, ts_ns, level, ntags ? &tags : NULL);
}

int
telem_describe(const char *metric, const char *type, const char *unit,
               const char *doc)
{
    int rc = s_live();
    if (rc)
        return rc;
    if (atomic_load_explicit(&s_api.level, memory_order_relaxed) == 0)
        return 1;
    size_t len, ulen = 0, dlen = 0;
    unit = unit ? unit : "";
    doc = doc ? doc : "";
    telem_promname_t pn;            /* a pushed name: its metric part */
    if (metric && strchr(metric, '{')) {
        if (telem_promname_parse(metric, 0, &pn, NULL, 0) != 0)
            return s_invalid();
        metric = pn.metric;
    }
    if (!s_name_ok(metric, TELEM_NAME_MAX, &len) || !type
        || (strcmp(type, "gauge") != 0 && strcmp(type, "counter") != 0)
        || (*unit && !s_name_ok(unit, TELEM_NAME_MAX, &ulen))
        || (*doc && !s_name_ok(doc, TELEM_TEXT_MAX, &dlen)))
        return s_invalid();
    s_tbuf_t *tb;
    if ((rc = s_tbuf(&tb)) != 0)
        return rc;
    s_ctx_t *ctx = s_lock(tb, &rc);
    if (!ctx)
        return rc;
    telem_qbatch_t *b = telem_queue_take_free(ctx->queue);
    if (b) {
        b->kind = TELEM_QB_META;
        b->meta_type = strcmp(type, "counter") == 0 ? TELEM_METRIC_COUNTER
                                                    : TELEM_METRIC_GAUGE;
        s_put(b, metric, len);
        s_put(b, unit, ulen);
        s_put(b, doc, dlen);
        if ((rc = telem_queue_push(ctx->queue, &b, 0)) != 0)
            telem_queue_give_free(ctx->queue, &b);
    } else {
        rc = TELEM_ENOMEM;
    }
    pthread_mutex_unlock(&tb->mu);
    return rc;
}

/* The flush hook, if one is set. */
static void
s_hook(int final)
{
    void (*hook)(int) = atomic_load_explicit(&s_api.flush_hook,
                                             memory_order_acquire);
    if (hook)
        hook(final);
}

int
telem_flush(int timeout_ms)
{
    s_hook(0);
    pthread_mutex_lock(&s_api.life);
    s_ctx_t *ctx = s_api.ctx;
    if (ctx)
        ctx->refs++;
    int state = atomic_load(&s_api.state);
    pthread_mutex_unlock(&s_api.life);
    if (!ctx)
        return state == S_FINALIZED ? TELEM_ESTATE : 0;
    int rc = telem_queue_flush(ctx->queue, timeout_ms);
    pthread_mutex_lock(&s_api.life);
    if (--ctx->refs == 0)
        pthread_cond_broadcast(&s_api.life_cv);
    pthread_mutex_unlock(&s_api.life);
    return rc;
}

int
telem_finalize(void)
{
    pthread_once(&s_api.once, s_once);
    s_hook(1);
    pthread_mutex_lock(&s_api.life);
    s_ctx_t *ctx = s_api.ctx;
    s_api.ctx = NULL;
    atomic_store_explicit(&s_api.state, S_FINALIZED, memory_order_release);
    pthread_mutex_unlock(&s_api.life);
    if (!ctx)
        return 0;
    s_detach_all(ctx);
    int rc = telem_queue_flush(ctx->queue,
                               tapi_env_int("TELEM_FINALIZE_MS", 0, INT32_MAX,
                                         S_FINALIZE_MS));
    telem_sender_stop(ctx->sender);
    telem_stats_t st;
    s_ctx_stats(ctx, &st);
    pthread_mutex_lock(&s_api.life);
    while (ctx->refs)
        pthread_cond_wait(&s_api.life_cv, &s_api.life);
    s_api.last = st;
    pthread_mutex_unlock(&s_api.life);
    s_ctx_destroy(&ctx);
    return rc;
}

int
telem_level(void)
{
    if (atomic_load(&s_api.state) == S_UNINIT)
        return tapi_env_int("TELEM_LEVEL", 0, S_LEVEL_MAX, 1);
    return atomic_load_explicit(&s_api.level, memory_order_relaxed);
}

int
telem_set_level(int level)
{
    if (level < 0 || level > S_LEVEL_MAX)
        return TELEM_EINVAL;
    if (atomic_load(&s_api.state) == S_UNINIT) {
        int rc = telem_init();
        if (rc)
            return rc;
    }
    atomic_store_explicit(&s_api.level, level, memory_order_relaxed);
    return 0;
}

void
telem_stats(telem_stats_t *out)
{
    if (!out)
        return;
    pthread_mutex_lock(&s_api.life);
    if (s_api.ctx)
        s_ctx_stats(s_api.ctx, out);
    else
        *out = s_api.last;
    out->invalid = atomic_load_explicit(&s_api.invalid, memory_order_relaxed);
    pthread_mutex_unlock(&s_api.life);
}

/* ---- for telem_push.c (telem_int.h) ------------------------------------- */

int
tapi_begin(int level, tapi_tbuf_t **tb)
{
    int rc = s_live();
    if (S_UNLIKELY(rc))
        return rc;
    int current = atomic_load_explicit(&s_api.level, memory_order_relaxed);
    if (current == 0)
        return 1;
    if (S_UNLIKELY((rc = s_tbuf(tb)) != 0))
        return rc;
    if (level > current) {
        s_count(&(*tb)->filtered, 1);
        return 1;
    }
    return 0;
}

int
tapi_level(void)
{
    int rc = s_live();
    if (S_UNLIKELY(rc))
        return rc;
    return atomic_load_explicit(&s_api.level, memory_order_relaxed);
}

int
tapi_lock(tapi_tbuf_t *tb)
{
    int rc = 0;
    return s_lock(tb, &rc) ? 0 : rc;
}

telem_qbatch_t *
tapi_room(tapi_tbuf_t *tb, size_t need, int *rc)
{
    return tapi_room_n(tb, 1, need, rc);
}

telem_qbatch_t *
tapi_room_n(tapi_tbuf_t *tb, uint32_t nsamples, size_t need, int *rc)
{
    telem_qbatch_t *b = tb->batch;
    s_ctx_t *ctx = atomic_load_explicit(&tb->ctx, memory_order_relaxed);
    if (!b || b->n + nsamples > TELEM_Q_SAMPLES
        || b->used + need > TELEM_Q_ARENA) {
        if ((*rc = s_rotate(ctx, tb)) != 0) {
            s_count(&tb->dropped, nsamples);
            pthread_mutex_unlock(&tb->mu);
            return NULL;
        }
    }
    return tb->batch;
}

telem_qbatch_t *
tapi_batch(tapi_tbuf_t *tb)
{
    return tb->batch;
}

void
tapi_unlock(tapi_tbuf_t *tb, int queued)
{
    if (queued)
        s_count(&tb->queued, (uint64_t) queued);
    pthread_mutex_unlock(&tb->mu);
}

void
tapi_count_filtered(tapi_tbuf_t *tb, uint64_t n)
{
    s_count(&tb->filtered, n);
}

tapi_scache_t *
tapi_scache(tapi_tbuf_t *tb)
{
    return &tb->scache;
}

tapi_pcache_t *
tapi_pcache(tapi_tbuf_t *tb)
{
    return &tb->pcache;
}

void
tapi_set_flush_hook(void (*hook)(int final))
{
    atomic_store_explicit(&s_api.flush_hook, hook, memory_order_release);
}

void
tapi_count_invalid(void)
{
    s_invalid();
}

uint32_t
tapi_put(telem_qbatch_t *b, const char *s, size_t len)
{
    return s_put(b, s, len);
}
