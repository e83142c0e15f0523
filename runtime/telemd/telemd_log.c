/* telemd_log.c - telemd's flush log on the segment files (telemd_log.h).
 *
 * A thin layer: the store hands out chunks and takes them back, the
 * segment log writes them, the history index reads them; this file times
 * the flushes, keeps their figures for the status, and says in the log
 * what happened.
 */
#include "telemd_log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "telem_log.h"
#include "telem_seg.h"
#include "telem_time.h"

#define S_DEFAULT_MAX (UINT64_C(1) << 30)

struct telemd_log {
    char *dir;
    char *node;
    int64_t window_ns;
    telem_seglog_t *seg;
    telem_hist_t *hist;           /* for queries; NULL until one needs it */
    uint64_t hist_commits;        /* commits when it was built */
    telemd_log_stats_t st;
    telem_ratelimit_t err_log;
};

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
    if (self->seg)
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
    telem_seglog_close(&self->seg);
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
    self->st.reloaded_chunks = r.loaded;
    self->st.reload_ns = telem_mono_ns() - t0;
    s_report_damage(self, &damage);
    telem_log(TELEM_LOG_INFO, "flush log %s: reloaded %" PRIu64 " blocks "
              "(%" PRIu64 " refused) in %.1f ms", self->dir, r.loaded,
              r.refused, self->st.reload_ns / 1e6);
    return rc;
}

static int
s_put_chunk(void *arg, const telem_chunk_t *c)
{
    telemd_log_t *self = arg;
    int rc = telem_seglog_put_chunk(self->seg, c);
    if (rc == TELEM_EFULL && telem_seglog_commit(self->seg,
                                                 telem_now_ns()) == 0)
        rc = telem_seglog_put_chunk(self->seg, c);
    self->st.chunks += rc == 0;
    return rc;
}

static int
s_put_meta(void *arg, const telem_meta_t *m)
{
    telemd_log_t *self = arg;
    return telem_seglog_put_meta(self->seg, m);
}

int
telemd_log_snapshot(telemd_log_t *self, const char *json, size_t len,
                    int64_t created_ns)
{
    return telem_seglog_put_snapshot(self->seg, json, len, created_ns);
}

int
telemd_log_flush(telemd_log_t *self, telem_store_t *store, int64_t now_ns)
{
    int64_t t0 = telem_mono_ns();
    int rc = telem_store_flush(store, s_put_chunk, self);
    int64_t pause = telem_mono_ns() - t0;
    if (rc == 0)
        rc = telem_store_meta_walk(store, s_put_meta, self);
    if (rc == 0)
        rc = telem_seglog_commit(self->seg, now_ns);
    self->st.last_pause_ns = pause;
    if (pause > self->st.max_pause_ns)
        self->st.max_pause_ns = pause;
    if (rc) {
        self->st.flush_errors++;
        telem_log_limited(&self->err_log, TELEM_LOG_ERROR, "flush log %s: "
                          "flush failed: %s (retried at the next flush)",
                          self->dir, telem_strerror(rc));
        return rc;
    }
    self->st.flushes++;
    self->st.last_flush_ns = now_ns;
    return 0;
}

telem_hist_t *
telemd_log_hist(telemd_log_t *self)
{
    telem_seglog_stats_t ss;
    telem_seglog_stats(self->seg, &ss);
    if (self->hist && self->hist_commits == ss.commits)
        return self->hist;
    telem_hist_destroy(&self->hist);
    self->hist = telem_hist_new(NULL);
    if (self->hist && telem_hist_add_dir(self->hist, self->dir, NULL) != 0)
        telem_hist_destroy(&self->hist);
    self->hist_commits = ss.commits;
    return self->hist;
}

void
telemd_log_stats(const telemd_log_t *self, telemd_log_stats_t *out)
{
    *out = self->st;
    telem_seglog_stats_t ss;
    telem_seglog_stats(self->seg, &ss);
    out->bytes = ss.total_bytes;
    out->segments = ss.segments;
}

