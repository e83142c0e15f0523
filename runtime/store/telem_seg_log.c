/* telem_seg_log.c - a node's flush log: a directory of segment files.
 *
 * Records are built in memory (put_*) and written by commit() with one
 * pwrite at the end of the current segment, then synced by the policy.
 * A failed write is cut back off the file and stays pending, so a full
 * disk costs the caller a retry, never a torn log or a lost flush.
 *
 * Every segment is self-contained: its first records repeat the last
 * snapshot and every meta put so far, and a series' SERIES record is
 * written the first time the series appears in it.  So the oldest whole
 * segment can always be removed, for the total bound or the history
 * bound, and what remains still reads.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "telem_grow.h"
#include "telem_paths.h"
#include "telem_seg_int.h"
#include "telem_time.h"

#define SEG_NAME_LEN 29               /* "seg-" 20 digits ".tseg" */
#define PENDING_MIN (64u << 20)

typedef struct {
    char name[SEG_NAME_LEN + 1];
    uint64_t size;
    int64_t newest_ts;                /* INT64_MIN: no point */
} s_old_t;

struct telem_seglog {
    telem_seglog_config_t cfg;
    char dir[TELEM_PATH_MAX];
    char node[TELEM_NAME_MAX + 1];
    char path[TELEM_PATH_MAX];        /* the current segment */
    int fd;
    uint64_t seg_size;                /* committed bytes of it */
    uint64_t seg_hdr;                 /* bytes of its file header */
    int64_t seg_created;
    int64_t seg_newest;               /* newest point committed to it */
    int64_t last_name_ns;             /* of the newest segment name */
    seg_buf_t pending;
    int64_t pending_newest;
    seg_keys_t keys;                  /* series in the current segment */
    seg_keys_t metas;                 /* metric names (with NUL) */
    seg_buf_t *meta_rec;              /* their last META records */
    size_t meta_cap;
    seg_buf_t snapshot;               /* the last SNAPSHOT record */
    s_old_t *old;                     /* older segments, oldest first */
    size_t nold, old_cap;
    telem_seglog_stats_t st;
};

void
telem_seglog_config_default(telem_seglog_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->segment_bytes = UINT64_C(64) << 20;
    cfg->segment_age_ns = 3600 * TELEM_NS_PER_SEC;
    cfg->total_bytes = UINT64_C(1) << 30;
    cfg->history_ns = 0;
    cfg->fsync = TELEM_SEG_FSYNC_COMMIT;
}

/* Creates dir (and parents) 0700; refuses another user's or an open one. */
static int
s_dir_prepare(const char *dir)
{
    char path[TELEM_PATH_MAX];
    struct stat st;
    if (strlen(dir) >= sizeof path)
        return TELEM_EINVAL;
    strcpy(path, dir);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            return TELEM_EIO;
        *p = '/';
    }
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return TELEM_EIO;
    if (stat(path, &st) != 0)
        return TELEM_EIO;
    if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077))
        return TELEM_EINVAL;
    return 0;
}

static void
s_sync_dir(const telem_seglog_t *self)
{
    if (self->cfg.fsync == TELEM_SEG_FSYNC_NEVER)
        return;
    int fd = open(self->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void) fsync(fd);
        close(fd);
    }
}

/* 1 if name is a segment's name; *ns its time. */
static int
s_seg_name(const char *name, int64_t *ns)
{
    if (strlen(name) != SEG_NAME_LEN || strncmp(name, "seg-", 4) != 0 ||
        strcmp(name + 24, TELEM_SEG_SUFFIX) != 0)
        return 0;
    int64_t v = 0;
    for (int i = 4; i < 24; i++) {
        if (name[i] < '0' || name[i] > '9' || v > (INT64_MAX - 9) / 10)
            return 0;
        v = v * 10 + (name[i] - '0');
    }
    *ns = v;
    return 1;
}

static int
s_old_cmp(const void *a, const void *b)
{
    return strcmp(((const s_old_t *) a)->name, ((const s_old_t *) b)->name);
}

static int
s_old_add(telem_seglog_t *self, const char *name, uint64_t size,
          int64_t newest)
{
    if (self->nold + 1 > self->old_cap &&
        telem_grow((void **) &self->old, &self->old_cap, self->nold + 1,
                   sizeof *self->old, 16))
        return TELEM_ENOMEM;
    s_old_t *o = &self->old[self->nold++];
    size_t n = strlen(name);
    if (n > SEG_NAME_LEN)
        n = SEG_NAME_LEN;
    memcpy(o->name, name, n);
    o->name[n] = '\0';
    o->size = size;
    o->newest_ts = newest;
    return 0;
}

/* Lists the segments already in the directory. */
static int
s_list(telem_seglog_t *self)
{
    DIR *d = opendir(self->dir);
    if (!d)
        return TELEM_EIO;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d))) {
        int64_t ns;
        struct stat st;
        char p[TELEM_PATH_MAX];
        if (!s_seg_name(e->d_name, &ns) ||
            snprintf(p, sizeof p, "%s/%s", self->dir, e->d_name) >=
                (int) sizeof p ||
            stat(p, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        int64_t mtime = (int64_t) st.st_mtim.tv_sec * TELEM_NS_PER_SEC +
                        st.st_mtim.tv_nsec;
        rc = s_old_add(self, e->d_name, (uint64_t) st.st_size, mtime);
        if (ns > self->last_name_ns)
            self->last_name_ns = ns;
    }
    closedir(d);
    if (rc == 0 && self->nold > 1)
        qsort(self->old, self->nold, sizeof *self->old, s_old_cmp);
    return rc;
}

/* Puts the records every segment starts with into pending. */
static int
s_preamble(telem_seglog_t *self)
{
    size_t need = self->snapshot.len;
    for (size_t i = 0; i < self->metas.n; i++)
        need += self->meta_rec[i].len;
    if (seg_buf_reserve(&self->pending, need))
        return TELEM_ENOMEM;
    seg_put_bytes(&self->pending, self->snapshot.p, self->snapshot.len);
    for (size_t i = 0; i < self->metas.n; i++)
        seg_put_bytes(&self->pending, self->meta_rec[i].p,
                      self->meta_rec[i].len);
    return 0;
}

/* Starts a new segment created at now_ns (its header written). */
static int
s_segment_new(telem_seglog_t *self, int64_t now_ns)
{
    seg_buf_t hdr = {0};
    int64_t ns = now_ns > self->last_name_ns ? now_ns : self->last_name_ns + 1;
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 1000; tries++, ns++) {
        if (snprintf(self->path, sizeof self->path, "%s/seg-%020lld%s",
                     self->dir, (long long) ns, TELEM_SEG_SUFFIX) >=
            (int) sizeof self->path)
            return TELEM_EINVAL;
        fd = open(self->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST)
            return TELEM_EIO;
    }
    if (fd < 0)
        return TELEM_EIO;
    int rc = seg_file_header(&hdr, TELEM_SEG_FILE_SEGMENT, now_ns, self->node);
    if (rc == 0)
        rc = seg_write_all(fd, hdr.p, hdr.len);
    if (rc) {
        close(fd);
        unlink(self->path);
        seg_buf_free(&hdr);
        return rc;
    }
    self->last_name_ns = ns - 1;
    self->fd = fd;
    self->seg_size = hdr.len;
    self->seg_hdr = hdr.len;
    self->seg_created = now_ns;
    self->seg_newest = INT64_MIN;
    seg_buf_free(&hdr);
    seg_keys_clear(&self->keys);
    self->pending.len = 0;
    self->pending_newest = INT64_MIN;
    s_sync_dir(self);
    return s_preamble(self);
}

static int
s_config_check(const telem_seglog_config_t *cfg)
{
    if (!cfg || !cfg->dir || !*cfg->dir || !cfg->node ||
        !telem_node_valid(cfg->node) || cfg->segment_bytes == 0 ||
        cfg->segment_age_ns <= 0 || cfg->history_ns < 0 ||
        (cfg->fsync != TELEM_SEG_FSYNC_COMMIT &&
         cfg->fsync != TELEM_SEG_FSYNC_ROTATE &&
         cfg->fsync != TELEM_SEG_FSYNC_NEVER) ||
        strlen(cfg->dir) + SEG_NAME_LEN + 2 > TELEM_PATH_MAX)
        return TELEM_EINVAL;
    return 0;
}

telem_seglog_t *
telem_seglog_open(const telem_seglog_config_t *cfg, int *err)
{
    telem_seglog_t *self = NULL;
    int rc = s_config_check(cfg);
    if (rc == 0 && !(self = calloc(1, sizeof *self)))
        rc = TELEM_ENOMEM;
    if (rc == 0) {
        self->cfg = *cfg;
        self->fd = -1;
        snprintf(self->dir, sizeof self->dir, "%s", cfg->dir);
        snprintf(self->node, sizeof self->node, "%s", cfg->node);
        self->cfg.dir = self->dir;
        self->cfg.node = self->node;
        rc = s_dir_prepare(self->dir);
    }
    if (rc == 0)
        rc = s_list(self);
    if (rc == 0)
        rc = s_segment_new(self, telem_now_ns());
    if (rc == 0)
        return self;
    telem_seglog_close(&self);
    if (err)
        *err = rc;
    return NULL;
}

void
telem_seglog_close(telem_seglog_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    telem_seglog_t *self = *self_p;
    *self_p = NULL;
    if (self->fd >= 0) {
        if (self->seg_size == self->seg_hdr)
            unlink(self->path);        /* nothing was written to it */
        else if (self->cfg.fsync != TELEM_SEG_FSYNC_NEVER)
            (void) fsync(self->fd);
        close(self->fd);
    }
    seg_buf_free(&self->pending);
    seg_buf_free(&self->snapshot);
    seg_keys_clear(&self->keys);
    for (size_t i = 0; i < self->metas.n; i++)
        seg_buf_free(&self->meta_rec[i]);
    free(self->meta_rec);
    seg_keys_clear(&self->metas);
    free(self->old);
    free(self);
}

static size_t
s_pending_max(const telem_seglog_t *self)
{
    uint64_t m = self->cfg.segment_bytes * 2;
    if (m < self->cfg.segment_bytes || m < PENDING_MIN)
        m = PENDING_MIN;
    return m > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t) m;
}

int
telem_seglog_put_chunk(telem_seglog_t *self, const telem_chunk_t *c)
{
    if (!self || seg_check_chunk(c))
        return TELEM_EINVAL;
    size_t room = SEG_REC_OVERHEAD * 2 + 64 + strlen(self->node) +
                  c->key_len + c->block_len;
    if (self->pending.len + room > s_pending_max(self))
        return TELEM_EFULL;
    if (seg_buf_reserve(&self->pending, room))
        return TELEM_ENOMEM;
    size_t undo = self->pending.len;
    long long id = seg_keys_find(&self->keys, c->key, c->key_len);
    if (id < 0) {
        id = seg_keys_add(&self->keys, c->key, c->key_len);
        if (id < 0)
            return (int) id;
        (void) seg_enc_series(&self->pending, (uint64_t) id, self->node,
                              c->key, c->key_len, c->counter);
    }
    int64_t first, last;
    int rc = seg_enc_block(&self->pending, (uint64_t) id, c, &first, &last,
                           NULL);
    if (rc) {
        self->pending.len = undo;   /* a SERIES record alone may stay */
        return rc;
    }
    if (last > self->pending_newest)
        self->pending_newest = last;
    return 0;
}

int
telem_seglog_put_meta(telem_seglog_t *self, const telem_meta_t *m)
{
    if (!self || seg_check_meta(m))
        return TELEM_EINVAL;
    seg_buf_t rec = {0};
    size_t mlen = strlen(m->metric) + 1;
    int rc = seg_enc_meta(&rec, self->node, m);
    if (rc == 0 && self->pending.len + rec.len > s_pending_max(self))
        rc = TELEM_EFULL;
    if (rc == 0)
        rc = seg_buf_reserve(&self->pending, rec.len);
    long long i = rc ? -1 : seg_keys_find(&self->metas, m->metric, mlen);
    if (rc == 0 && i < 0) {
        if (self->metas.n + 1 > self->meta_cap &&
            telem_grow((void **) &self->meta_rec, &self->meta_cap,
                       self->metas.n + 1, sizeof *self->meta_rec, 16))
            rc = TELEM_ENOMEM;
        else if ((i = seg_keys_add(&self->metas, m->metric, mlen)) < 0)
            rc = (int) i;
        else
            memset(&self->meta_rec[i], 0, sizeof self->meta_rec[i]);
    }
    if (rc == 0) {
        seg_put_bytes(&self->pending, rec.p, rec.len);
        seg_buf_free(&self->meta_rec[i]);
        self->meta_rec[i] = rec;        /* kept for the next segments */
        return 0;
    }
    seg_buf_free(&rec);
    return rc;
}

int
telem_seglog_put_snapshot(telem_seglog_t *self, const char *json, size_t len,
                          int64_t created_ns)
{
    if (!self || (!json && len) || len > TELEM_SEG_SNAPSHOT_MAX)
        return TELEM_EINVAL;
    seg_buf_t rec = {0};
    int rc = seg_enc_snapshot(&rec, self->node, json, len, created_ns);
    if (rc == 0 && self->pending.len + rec.len > s_pending_max(self))
        rc = TELEM_EFULL;
    if (rc == 0)
        rc = seg_buf_reserve(&self->pending, rec.len);
    if (rc) {
        seg_buf_free(&rec);
        return rc;
    }
    seg_put_bytes(&self->pending, rec.p, rec.len);
    seg_buf_free(&self->snapshot);
    self->snapshot = rec;
    return 0;
}

/* Writes pending at the end of the segment; cut back on failure. */
static int
s_write_pending(telem_seglog_t *self)
{
    const unsigned char *p = self->pending.p;
    size_t left = self->pending.len;
    uint64_t at = self->seg_size;
    while (left > 0) {
        ssize_t w = pwrite(self->fd, p, left, (off_t) at);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            (void) ftruncate(self->fd, (off_t) self->seg_size);
            errno = e ? e : EIO;
            return TELEM_EIO;
        }
        p += w;
        at += (uint64_t) w;
        left -= (size_t) w;
    }
    if (self->cfg.fsync == TELEM_SEG_FSYNC_COMMIT &&
        fdatasync(self->fd) != 0) {
        int e = errno;
        (void) ftruncate(self->fd, (off_t) self->seg_size);
        errno = e;
        return TELEM_EIO;
    }
    self->seg_size = at;
    return 0;
}

/* Closes the current segment for size or age and starts the next. */
static void
s_rotate(telem_seglog_t *self, int64_t now_ns)
{
    char name[SEG_NAME_LEN + 1];
    const char *slash = strrchr(self->path, '/');
    const char *base = slash ? slash + 1 : self->path;
    if (strlen(base) != SEG_NAME_LEN)
        return;
    memcpy(name, base, SEG_NAME_LEN + 1);
    if (s_old_add(self, name, self->seg_size, self->seg_newest))
        return;                     /* no memory: rotate next time */
    int fd = self->fd;
    char path[TELEM_PATH_MAX];
    memcpy(path, self->path, sizeof path);
    if (s_segment_new(self, now_ns) != 0) {
        self->nold--;               /* keep writing the old one */
        memcpy(self->path, path, sizeof path);
        self->fd = fd;
        self->st.write_errors++;
        return;
    }
    if (self->cfg.fsync == TELEM_SEG_FSYNC_ROTATE)
        (void) fsync(fd);
    close(fd);
    self->st.rotations++;
}

static void
s_remove_old(telem_seglog_t *self, size_t i)
{
    char p[TELEM_PATH_MAX];
    if (snprintf(p, sizeof p, "%s/%s", self->dir, self->old[i].name) >=
            (int) sizeof p ||
        (unlink(p) != 0 && errno != ENOENT)) {
        self->st.write_errors++;
        return;
    }
    memmove(&self->old[i], &self->old[i + 1],
            (self->nold - i - 1) * sizeof *self->old);
    self->nold--;
    self->st.removed++;
}

/* Applies the history bound, then the total bound, oldest first. */
static void
s_bounds(telem_seglog_t *self, int64_t now_ns)
{
    size_t before = self->nold;
    if (self->cfg.history_ns > 0) {
        int64_t limit = now_ns - self->cfg.history_ns;
        for (size_t i = 0; i < self->nold;) {
            size_t n = self->nold;
            if (self->old[i].newest_ts < limit)
                s_remove_old(self, i);
            if (n == self->nold)
                i++;
        }
    }
    if (self->cfg.total_bytes > 0) {
        uint64_t total = self->seg_size;
        for (size_t i = 0; i < self->nold; i++)
            total += self->old[i].size;
        while (self->nold > 0 && total > self->cfg.total_bytes) {
            uint64_t size = self->old[0].size;
            size_t n = self->nold;
            s_remove_old(self, 0);
            if (n == self->nold)
                break;
            total -= size;
        }
    }
    if (self->nold != before)
        s_sync_dir(self);
}

int
telem_seglog_commit(telem_seglog_t *self, int64_t now_ns)
{
    if (!self)
        return TELEM_EINVAL;
    if (self->pending.len > 0) {
        if (s_write_pending(self) != 0) {
            self->st.write_errors++;
            return TELEM_EIO;
        }
        self->st.commits++;
        self->st.bytes_written += self->pending.len;
        if (self->pending_newest > self->seg_newest)
            self->seg_newest = self->pending_newest;
        self->pending.len = 0;
        self->pending_newest = INT64_MIN;
    }
    if (self->seg_size >= self->cfg.segment_bytes ||
        now_ns - self->seg_created >= self->cfg.segment_age_ns)
        s_rotate(self, now_ns);
    s_bounds(self, now_ns);
    return 0;
}

void
telem_seglog_discard(telem_seglog_t *self)
{
    if (!self)
        return;
    /* Series first defined in what is dropped must be defined again. */
    seg_keys_clear(&self->keys);
    self->pending.len = 0;
    self->pending_newest = INT64_MIN;
    if (self->seg_size > 0)
        s_rotate(self, telem_now_ns());
}

const char *
telem_seglog_path(const telem_seglog_t *self)
{
    return self ? self->path : NULL;
}

void
telem_seglog_stats(const telem_seglog_t *self, telem_seglog_stats_t *out)
{
    if (!self || !out)
        return;
    *out = self->st;
    out->segments = self->nold + 1;
    out->total_bytes = self->seg_size;
    for (size_t i = 0; i < self->nold; i++)
        out->total_bytes += self->old[i].size;
    out->pending_bytes = self->pending.len;
}
