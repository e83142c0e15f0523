/* telemd_log.c - telemd's flush log on the segment files (telemd_log.h).
 *
 * The store hands out chunks and takes them back, the segment log writes
 * them, the history index reads them; this file copies each flush out of
 * the store into a hand-off buffer (telemd_logbuf.h) in the actor's
 * thread, writes it from a writer thread of its own (put + commit: one
 * write and an fdatasync, tens of ms that ingest must not wait for),
 * times both, keeps their figures for the status, and says in the log
 * what happened.
 *
 * Threads: `mu` guards the hand-off (busy, retry, the buffer's owner),
 * the figures and the pending snapshot; `io` is held by the writer while
 * it commits (the files change) and by the actor while it builds a
 * history index (the files are read), so an index never sees a commit
 * half done.  The segment log itself is touched only by the writer once
 * it runs.
 */
#include "telemd_log.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "telem_log.h"
#include "telem_seg.h"
#include "telem_time.h"
#include "telemd_logbuf.h"

#define S_DEFAULT_MAX (UINT64_C(1) << 30)
/* Bound on one flush's hand-off buffer (the segment log's own bound on a
 * pending flush is 64 MiB or more): what does not fit stays in the store
 * for the next flush. */
#define S_BUF_MAX ((size_t) 64 << 20)

struct telemd_log {
    char *dir;
    char *node;
    int64_t window_ns;
    telem_seglog_t *seg;
    telem_hist_t *hist;           /* for queries; NULL until one needs it */
    uint64_t hist_commits;        /* commits when it was built */
    pthread_mutex_t mu;
    pthread_cond_t wake;          /* the writer: work or quit */
    pthread_cond_t idle;          /* the actor: the writer is done */
    pthread_mutex_t io;
    pthread_t writer;
    int started, quit;
    int busy;                     /* buf is the writer's */
    int retry;                    /* buf holds chunks not put yet */
    int cut;                      /* the last walk stopped at the bound */
    int last_rc;                  /* of the writer's last flush */
    int64_t flush_now;            /* realtime of the flush handed over */
    telemd_logbuf_t buf;
    char *snap;                   /* snapshot to put at the next write */
    size_t snap_len;
    int64_t snap_ns;
    telem_seglog_stats_t seg_st;  /* copied by the writer after commits */
    telemd_log_stats_t st;
    telem_ratelimit_t err_log;
};

static void *s_writer(void *arg);

telemd_log_t *
telemd_log_open(const telemd_config_t *cfg, int *err)
{
    int rc = TELEM_ENOMEM;
    telemd_log_t *self = calloc(1, sizeof *self);
    if (!self || !(self->dir = strdup(cfg->log_dir))
        || !(self->node = strdup(cfg->node)))
        goto out;
    self->window_ns = cfg->window_ns;
    self->err_log = (telem_ratelimit_t) TELEM_RATELIMIT_INIT(60, 3);
    telem_seglog_config_t sc;
    telem_seglog_config_default(&sc);
    sc.dir = cfg->log_dir;
    sc.node = cfg->node;
    sc.total_bytes = cfg->log_max_bytes ? cfg->log_max_bytes : S_DEFAULT_MAX;
    if (sc.segment_bytes > sc.total_bytes / 4)
        sc.segment_bytes = sc.total_bytes / 4 ? sc.total_bytes / 4 : 1;
    sc.history_ns = cfg->history_ns;
    rc = TELEM_EIO;
    self->seg = telem_seglog_open(&sc, &rc);
    if (!self->seg)
        goto out;
    telem_seglog_stats(self->seg, &self->seg_st);
    self->buf.max = S_BUF_MAX;
    pthread_mutex_init(&self->mu, NULL);
    pthread_mutex_init(&self->io, NULL);
    pthread_cond_init(&self->wake, NULL);
    pthread_cond_init(&self->idle, NULL);
    rc = TELEM_ENOMEM;
    if (pthread_create(&self->writer, NULL, s_writer, self) != 0)
        goto out;
    self->started = 1;
    rc = 0;
out:
    if (rc)
        telemd_log_destroy(&self);
    if (err)
        *err = rc;
    return self;
}

void
telemd_log_destroy(telemd_log_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    telemd_log_t *self = *self_p;
    if (self->seg) {                  /* the sync objects were made */
        pthread_mutex_lock(&self->mu);
        self->quit = 1;
        pthread_cond_signal(&self->wake);
        pthread_mutex_unlock(&self->mu);
        if (self->started)
            pthread_join(self->writer, NULL);
        pthread_mutex_destroy(&self->mu);
        pthread_mutex_destroy(&self->io);
        pthread_cond_destroy(&self->wake);
        pthread_cond_destroy(&self->idle);
    }
    telem_seglog_close(&self->seg);
    telemd_logbuf_free(&self->buf);
    free(self->snap);
    telem_hist_destroy(&self->hist);
    free(self->dir);
    free(self->node);
    free(self);
    *self_p = NULL;
}

typedef struct {
    telem_store_t *store;
    int64_t now_ns;
    uint64_t loaded, refused;
} s_reload_t;

static int
s_load(void *arg, const telem_chunk_t *c)
{
    s_reload_t *r = arg;
    int rc = telem_store_load(r->store, c, r->now_ns);
    if (rc == TELEM_ENOMEM)
        return rc;
    if (rc)
        r->refused++;
    else
        r->loaded++;
    return 0;
}

static void
s_report_damage(const telemd_log_t *self, const telem_seg_damage_t *d)
{
    if (!d->bad)
        return;
    telem_log(TELEM_LOG_WARN, "flush log %s: %" PRIu64 " damaged stretch%s "
              "skipped (%" PRIu64 " bytes, first at offset %" PRIu64 "%s); "
              "the rest was reloaded", self->dir, d->bad,
              d->bad == 1 ? "" : "es", d->bytes_skipped,
              d->nlist ? d->list[0].offset : 0,
              d->torn_tail ? ", a torn tail" : "");
}

int
telemd_log_reload(telemd_log_t *self, telem_store_t *store, int64_t now_ns)
{
    int64_t t0 = telem_mono_ns();
    int rc = 0;
    telem_hist_t *h = telem_hist_new(&rc);
    if (!h)
        return rc;
    telem_seg_damage_t damage;
    memset(&damage, 0, sizeof damage);
    rc = telem_hist_add_dir(h, self->dir, &damage);
    s_reload_t r = { .store = store, .now_ns = now_ns };
    if (rc == 0)
        rc = telem_hist_chunks(h, self->node, now_ns - self->window_ns,
                               s_load, &r);
    if (rc == TELEM_ENOTFOUND)
        rc = 0;                   /* nothing of this node yet */
    telem_hist_destroy(&h);
    pthread_mutex_lock(&self->mu);
    self->st.reloaded_chunks = r.loaded;
    self->st.reload_ns = telem_mono_ns() - t0;
    pthread_mutex_unlock(&self->mu);
    s_report_damage(self, &damage);
    telem_log(TELEM_LOG_INFO, "flush log %s: reloaded %" PRIu64 " blocks "
              "(%" PRIu64 " refused) in %.1f ms", self->dir, r.loaded,
              r.refused, self->st.reload_ns / 1e6);
    return rc;
}

/* ---- the writer thread ---------------------------------------------- */

/* Commits with the files locked against index builds. */
static int
s_commit(telemd_log_t *self, int64_t now_ns)
{
    pthread_mutex_lock(&self->io);
    int rc = telem_seglog_commit(self->seg, now_ns);
    pthread_mutex_unlock(&self->io);
    return rc;
}

/* Puts chunk i; after TELEM_EFULL commits what is pending and tries once
 * more. */
static int
s_put_chunk(telemd_log_t *self, size_t i, int64_t now_ns)
{
    telem_chunk_t c = telemd_logbuf_chunk(&self->buf, i);
    int rc = telem_seglog_put_chunk(self->seg, &c);
    if (rc == TELEM_EFULL && s_commit(self, now_ns) == 0)
        rc = telem_seglog_put_chunk(self->seg, &c);
    return rc;
}

/* Takes the snapshot waiting to be put, if any (under mu). */
static void
s_put_snapshot(telemd_log_t *self)
{
    pthread_mutex_lock(&self->mu);
    char *json = self->snap;
    size_t len = self->snap_len;
    int64_t ns = self->snap_ns;
    self->snap = NULL;
    pthread_mutex_unlock(&self->mu);
    if (json && telem_seglog_put_snapshot(self->seg, json, len, ns) != 0)
        telem_log(TELEM_LOG_WARN, "flush log %s: the system snapshot was "
                  "not written", self->dir);
    free(json);
}

/* Puts the buffer's chunks from buf.done on, its metas, and commits.  A
 * chunk the log refuses as invalid is dropped (logged; it can never be
 * written); any other failure leaves buf.done at the chunk not put, for
 * the next flush to try again.  A failed commit keeps what was put
 * pending in the segment log, which writes it at its next commit.
 * Returns 0 or the first error. */
static int
s_write(telemd_log_t *self, int64_t now_ns, uint64_t *chunks)
{
    s_put_snapshot(self);
    telemd_logbuf_t *b = &self->buf;
    int rc = 0;
    for (; b->done < b->nchunks; b->done++) {
        rc = s_put_chunk(self, b->done, now_ns);
        if (rc == TELEM_EINVAL) {
            telem_log_limited(&self->err_log, TELEM_LOG_ERROR, "flush log "
                              "%s: a block refused as invalid was dropped",
                              self->dir);
            rc = 0;
            continue;
        }
        if (rc)
            break;
        (*chunks)++;
    }
    for (size_t i = 0; rc == 0 && i < b->nmetas; i++) {
        telem_meta_t m = telemd_logbuf_meta(b, i);
        (void) telem_seglog_put_meta(self->seg, &m);  /* again next time */
    }
    int crc = s_commit(self, now_ns);
    return rc ? rc : crc;
}

/* What a finished write changes, under mu. */
static void
s_written(telemd_log_t *self, int rc, int64_t took, uint64_t chunks)
{
    telemd_log_stats_t *st = &self->st;
    st->chunks += chunks;
    st->last_write_ns = took;
    if (took > st->max_write_ns)
        st->max_write_ns = took;
    telem_seglog_stats(self->seg, &self->seg_st);
    self->retry = self->buf.done < self->buf.nchunks;
    self->last_rc = rc;
    if (rc) {
        st->flush_errors++;
        telem_log_limited(&self->err_log, TELEM_LOG_ERROR, "flush log %s: "
                          "flush failed: %s (retried at the next flush)",
                          self->dir, telem_strerror(rc));
    } else {
        st->flushes++;
        st->last_flush_ns = self->flush_now;
    }
    self->busy = 0;
    pthread_cond_broadcast(&self->idle);
}

static void *
s_writer(void *arg)
{
    telemd_log_t *self = arg;
    pthread_mutex_lock(&self->mu);
    for (;;) {
        while (!self->busy && !self->quit)
            pthread_cond_wait(&self->wake, &self->mu);
        if (!self->busy)
            break;                    /* quit, nothing handed over */
        int64_t now = self->flush_now;
        pthread_mutex_unlock(&self->mu);
        int64_t t0 = telem_mono_ns();
        uint64_t chunks = 0;
        int rc = s_write(self, now, &chunks);
        int64_t took = telem_mono_ns() - t0;
        pthread_mutex_lock(&self->mu);
        s_written(self, rc, took, chunks);
    }
    pthread_mutex_unlock(&self->mu);
    return NULL;
}

/* ---- the actor's side --------------------------------------------------- */

static int
s_copy_chunk(void *arg, const telem_chunk_t *c)
{
    telemd_log_t *self = arg;
    int rc = telemd_logbuf_add_chunk(&self->buf, c);
    if (rc == TELEM_EFULL)
        self->cut = 1;
    return rc;
}

static int
s_copy_meta(void *arg, const telem_meta_t *m)
{
    telemd_log_t *self = arg;
    return telemd_logbuf_add_meta(&self->buf, m);
}

int
telemd_log_snapshot(telemd_log_t *self, const char *json, size_t len,
                    int64_t created_ns)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return TELEM_ENOMEM;
    memcpy(copy, json, len);
    copy[len] = '\0';
    pthread_mutex_lock(&self->mu);
    free(self->snap);
    self->snap = copy;
    self->snap_len = len;
    self->snap_ns = created_ns;
    pthread_mutex_unlock(&self->mu);
    return 0;
}

/* Hands the buffer to the writer (under mu). */
static void
s_hand_over(telemd_log_t *self, int64_t now_ns)
{
    self->busy = 1;
    self->flush_now = now_ns;
    pthread_cond_signal(&self->wake);
}

/* Copies the store's unflushed chunks and the metas into the buffer (the
 * writer is idle: the buffer is the actor's).  Returns 0 or the walk's
 * error (TELEM_EFULL at the bound is not one: the rest waits). */
static int
s_fill(telemd_log_t *self, telem_store_t *store)
{
    int64_t t0 = telem_mono_ns();
    telemd_logbuf_reset(&self->buf);
    self->cut = 0;
    int rc = telem_store_flush(store, s_copy_chunk, self);
    if (rc == TELEM_EFULL && self->cut)
        rc = 0;
    if (rc == 0)
        (void) telem_store_meta_walk(store, s_copy_meta, self);
    int64_t pause = telem_mono_ns() - t0;
    pthread_mutex_lock(&self->mu);
    self->st.last_pause_ns = pause;
    if (pause > self->st.max_pause_ns)
        self->st.max_pause_ns = pause;
    if (rc)
        self->st.flush_errors++;
    pthread_mutex_unlock(&self->mu);
    return rc;
}

int
telemd_log_flush(telemd_log_t *self, telem_store_t *store, int64_t now_ns)
{
    pthread_mutex_lock(&self->mu);
    if (self->busy) {
        self->st.skipped++;
        pthread_mutex_unlock(&self->mu);
        return TELEM_ESTATE;
    }
    if (self->retry) {               /* the rest of the last one first */
        self->st.skipped++;
        s_hand_over(self, now_ns);
        pthread_mutex_unlock(&self->mu);
        return 0;
    }
    pthread_mutex_unlock(&self->mu);
    int rc = s_fill(self, store);    /* chunks copied are written below */
    pthread_mutex_lock(&self->mu);
    s_hand_over(self, now_ns);
    pthread_mutex_unlock(&self->mu);
    if (rc)
        telem_log_limited(&self->err_log, TELEM_LOG_ERROR, "flush log %s: "
                          "the store's walk failed: %s", self->dir,
                          telem_strerror(rc));
    return rc;
}

/* Waits until the writer is idle; returns its last flush's result. */
static int
s_wait_idle(telemd_log_t *self)
{
    pthread_mutex_lock(&self->mu);
    while (self->busy)
        pthread_cond_wait(&self->idle, &self->mu);
    int rc = self->last_rc;
    pthread_mutex_unlock(&self->mu);
    return rc;
}

int
telemd_log_sync(telemd_log_t *self, telem_store_t *store, int64_t now_ns)
{
    s_wait_idle(self);
    int rc = 0;
    for (int round = 0; round < 64; round++) {
        pthread_mutex_lock(&self->mu);
        int retry = self->retry;
        pthread_mutex_unlock(&self->mu);
        rc = telemd_log_flush(self, store, now_ns);
        int wrc = s_wait_idle(self);
        rc = rc ? rc : wrc;
        if (rc || (!retry && !self->cut))
            break;                     /* done, or failing: give up */
    }
    return rc;
}

telem_hist_t *
telemd_log_hist(telemd_log_t *self)
{
    pthread_mutex_lock(&self->mu);
    uint64_t commits = self->seg_st.commits;
    pthread_mutex_unlock(&self->mu);
    if (self->hist && self->hist_commits == commits)
        return self->hist;
    /* A commit in progress: the index built before it still answers (it
       holds its files open); without one, wait for the commit. */
    if (self->hist && pthread_mutex_trylock(&self->io) != 0)
        return self->hist;
    if (!self->hist)
        pthread_mutex_lock(&self->io);
    pthread_mutex_lock(&self->mu);
    commits = self->seg_st.commits;
    pthread_mutex_unlock(&self->mu);
    telem_hist_destroy(&self->hist);
    self->hist = telem_hist_new(NULL);
    if (self->hist && telem_hist_add_dir(self->hist, self->dir, NULL) != 0)
        telem_hist_destroy(&self->hist);
    pthread_mutex_unlock(&self->io);
    self->hist_commits = commits;
    return self->hist;
}

void
telemd_log_stats(telemd_log_t *self, telemd_log_stats_t *out)
{
    pthread_mutex_lock(&self->mu);
    *out = self->st;
    out->bytes = self->seg_st.total_bytes;
    out->segments = self->seg_st.segments;
    out->writing = self->busy;
    pthread_mutex_unlock(&self->mu);
}
