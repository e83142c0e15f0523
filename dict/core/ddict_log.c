/* ddict_log.c - append-only, checksummed record log (see ddict_log.h).
 *
 * Replay maps the whole file read-only and walks it record by record:
 * every length is checked against the bytes left before anything is read,
 * then the CRC; the first record that fails either check ends the good
 * prefix and the file is truncated to it.  Mapping avoids a copy of large
 * values during recovery: the callback may keep pointers into the mapping
 * by holding a reference on it (ddict_log_map_hold), and the mapping is
 * unmapped when the last one is released.  The file is append-only and
 * truncated only past the good prefix, so held bytes never change.
 *
 * Appends of small records are packed into one buffer; a record whose
 * value is larger than S_DIRECT flushes the buffer and goes out with one
 * writev() of header, names and the caller's value bytes.  A large value
 * given as a shared value (ddict_val_t) is held instead: its header and
 * names go into the buffer, and the pending iovec list alternates spans
 * of the buffer with held values, so the next flush writes everything
 * appended, in order, with one writev().  The buffer is not reused until
 * that flush, so the spans stay valid.
 */
#include "ddict_log.h"

#include "telem_crc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "telem_error.h"
#include "telem_paths.h"

#define S_MAGIC 0x324c4454u        /* "TDL2" little-endian */
#define S_MAGIC_V1 0x4c444454u     /* "TDDL": zlib CRC-32, not read */
#define S_BUF (1u << 20)
#define S_DIRECT (16u << 10)
#define S_PREALLOC (8u << 20)      /* file space reserved ahead of writes */
#define S_HOLD 256u                /* held values before a forced flush */
#define S_HOLD_BYTES (1u << 20)    /* held bytes before a forced flush */

struct ddict_log {
    char path[TELEM_PATH_MAX];
    int fd;
    uint64_t snap;          /* compaction in steps: the snapshot point */
    uint64_t size;          /* bytes in the file, buffer included */
    uint64_t alloc_end;     /* file space reserved up to here */
    int dirty;              /* appended since the last sync */
    size_t used;
    uint8_t *buf;
    /* pending writev: spans of buf and held values, in file order */
    size_t seg;             /* start of the buffer span not yet in iov */
    int niov;
    size_t nheld;
    uint64_t held_bytes;
    struct iovec iov[2 * S_HOLD + 1];
    ddict_val_t *held[S_HOLD];
};

static void s_drop_pending(ddict_log_t *self);

/* ---------------------------------------------------------------- bytes */

static void
s_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t) (v >> (8 * i));
}

static void
s_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t) (v >> (8 * i));
}

static uint32_t
s_get32(const uint8_t *p)
{
    return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16
           | (uint32_t) p[3] << 24;
}

static uint64_t
s_get64(const uint8_t *p)
{
    return (uint64_t) s_get32(p) | (uint64_t) s_get32(p + 4) << 32;
}

uint32_t
ddict_log_crc(const void *data, size_t size)
{
    return telem_crc32c(0, data, size);
}

/* Fills the 32-byte header of `rec`, CRC included. */
static void
s_header(uint8_t *h, const ddict_log_rec_t *rec)
{
    s_put32(h, S_MAGIC);
    h[8] = rec->type;
    h[9] = rec->nslen;
    h[10] = (uint8_t) rec->shard;
    h[11] = (uint8_t) (rec->shard >> 8);
    s_put32(h + 12, rec->klen);
    s_put64(h + 16, rec->vlen);
    s_put64(h + 24, rec->version);
    uint32_t crc = ddict_log_crc(h + 8, DDICT_LOG_HDR - 8);
    crc = telem_crc32c(crc, rec->ns, rec->nslen);
    crc = telem_crc32c(crc, rec->key, rec->klen);
    crc = telem_crc32c(crc, rec->val, rec->vlen);
    s_put32(h + 4, crc);
}

/* ---------------------------------------------------------------- replay */

/* Parses the record at p (n bytes left).  Returns its total length, or 0
 * if it is torn or damaged. */
static uint64_t
s_parse(const uint8_t *p, uint64_t n, ddict_log_rec_t *rec)
{
    if (n < DDICT_LOG_HDR || s_get32(p) != S_MAGIC)
        return 0;
    rec->type = p[8];
    rec->nslen = p[9];
    rec->shard = (uint16_t) (p[10] | p[11] << 8);
    rec->klen = s_get32(p + 12);
    rec->vlen = s_get64(p + 16);
    rec->version = s_get64(p + 24);
    if (rec->type < DDICT_LOG_REC_PUT || rec->type > DDICT_LOG_REC_MAX
        || rec->klen > DDICT_KEY_MAX || rec->vlen > DDICT_VALUE_MAX)
        return 0;
    uint64_t len = DDICT_LOG_HDR + (uint64_t) rec->nslen + rec->klen
                   + rec->vlen;
    if (len > n)
        return 0;
    if (ddict_log_crc(p + 8, len - 8) != s_get32(p + 4))
        return 0;
    rec->ns = (const char *) p + DDICT_LOG_HDR;
    rec->key = p + DDICT_LOG_HDR + rec->nslen;
    rec->val = p + DDICT_LOG_HDR + rec->nslen + rec->klen;
    return len;
}

struct ddict_log_map {
    void *base;
    size_t size;
    atomic_long refs;
};

/* A record handed to the replay callback, with the mapping it lies in. */
typedef struct {
    ddict_log_rec_t rec;
    ddict_log_map_t *map;
} s_mapped_rec_t;

ddict_log_map_t *
ddict_log_rec_map(const ddict_log_rec_t *rec)
{
    return ((const s_mapped_rec_t *) (const void *) rec)->map;
}

void
ddict_log_map_hold(ddict_log_map_t *m)
{
    atomic_fetch_add(&m->refs, 1);
}

void
ddict_log_map_release(ddict_log_map_t *m)
{
    if (m && atomic_fetch_sub(&m->refs, 1) == 1) {
        munmap(m->base, m->size);
        free(m);
    }
}

static int
s_replay(int fd, uint64_t fsize, ddict_log_replay_fn fn, void *arg,
         ddict_log_stats_t *st)
{
    if (fsize == 0)
        return 0;
    ddict_log_map_t *m = malloc(sizeof *m);
    void *map = m ? mmap(NULL, fsize, PROT_READ, MAP_PRIVATE, fd, 0)
                  : MAP_FAILED;
    if (map == MAP_FAILED) {
        free(m);
        return TELEM_EIO;
    }
    m->base = map;
    m->size = fsize;
    atomic_init(&m->refs, 1);
    madvise(map, fsize, MADV_WILLNEED);
    const uint8_t *p = map;
    uint64_t off = 0;
    int rc = 0;
    while (off < fsize) {
        s_mapped_rec_t mr = { .map = m };
        uint64_t len = s_parse(p + off, fsize - off, &mr.rec);
        if (len == 0)
            break;
        if (fn && (rc = fn(arg, &mr.rec)) != 0)
            break;
        off += len;
        st->records++;
    }
    ddict_log_map_release(m);
    st->bytes = off;
    st->dropped_bytes = fsize - off;
    return rc;
}

/* 1 if the file starts with a record of the first format (zlib CRC-32). */
static int
s_old_format(int fd, uint64_t size)
{
    uint8_t m[4];
    return size >= DDICT_LOG_HDR && pread(fd, m, 4, 0) == 4
           && s_get32(m) == S_MAGIC_V1;
}

ddict_log_t *
ddict_log_open(const char *path, ddict_log_replay_fn fn, void *arg,
               ddict_log_stats_t *stats, int *err)
{
    ddict_log_stats_t st = { 0, 0, 0 };
    int rc = TELEM_ENOMEM;
    ddict_log_t *self = calloc(1, sizeof *self);
    if (!self)
        goto out;
    self->fd = -1;
    if (!(self->buf = malloc(S_BUF)))
        goto out;
    rc = TELEM_ETOOBIG;
    if (snprintf(self->path, sizeof self->path, "%s", path)
        >= (int) sizeof self->path)
        goto out;
    rc = TELEM_EIO;
    self->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    struct stat sb;
    if (self->fd < 0 || fstat(self->fd, &sb) != 0)
        goto out;
    rc = TELEM_EVERSION;
    if (s_old_format(self->fd, (uint64_t) sb.st_size))
        goto out;       /* refuse rather than cut it as damaged */
    if ((rc = s_replay(self->fd, (uint64_t) sb.st_size, fn, arg, &st)) != 0)
        goto out;
    rc = TELEM_EIO;
    if (st.dropped_bytes > 0
        && (ftruncate(self->fd, (off_t) st.bytes) != 0
            || fdatasync(self->fd) != 0))
        goto out;
    if (lseek(self->fd, (off_t) st.bytes, SEEK_SET) < 0)
        goto out;
    self->size = st.bytes;
    self->alloc_end = st.bytes;
    rc = 0;
out:
    if (stats)
        *stats = st;
    if (rc)
        ddict_log_destroy(&self);
    if (err)
        *err = rc;
    return self;
}

void
ddict_log_destroy(ddict_log_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ddict_log_t *self = *self_p;
    if (self->fd >= 0) {
        ddict_log_flush(self);
        close(self->fd);
    }
    s_drop_pending(self);       /* a log whose file was taken over */
    free(self->buf);
    free(self);
    *self_p = NULL;
}

/* ---------------------------------------------------------------- append */

/* Writes all of iov, retrying short writes. */
static int
s_writev_all(int fd, struct iovec *iov, int n)
{
    while (n > 0) {
        ssize_t w = writev(fd, iov, n > IOV_MAX ? IOV_MAX : n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return TELEM_EIO;
        }
        while (n > 0 && (size_t) w >= iov->iov_len) {
            w -= (ssize_t) iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (uint8_t *) iov->iov_base + w;
            iov->iov_len -= (size_t) w;
        }
    }
    return 0;
}

/* Forgets what is buffered or held without writing it. */
static void
s_drop_pending(ddict_log_t *self)
{
    for (size_t i = 0; i < self->nheld; i++)
        ddict_val_release(&self->held[i]);
    self->nheld = 0;
    self->held_bytes = 0;
    self->niov = 0;
    self->seg = 0;
    self->used = 0;
}

/* Reserves file space past the end of what is about to be written, in
 * S_PREALLOC steps, without changing the file's size (FALLOC_FL_KEEP_SIZE:
 * replay still ends at the last byte written).  Writes into reserved
 * blocks skip ext4's per-block delayed-allocation work.  Advisory: a file
 * system without fallocate just writes as before. */
static void
s_prealloc(ddict_log_t *self)
{
    if (self->size <= self->alloc_end)
        return;
    uint64_t from = self->alloc_end;
    uint64_t end = self->size + S_PREALLOC;
    if (fallocate(self->fd, FALLOC_FL_KEEP_SIZE, (off_t) from,
                  (off_t) (end - from)) == 0)
        self->alloc_end = end;
    else if (errno == EOPNOTSUPP || errno == ENOSYS)
        self->alloc_end = UINT64_MAX;   /* not supported: stop trying */
    /* else (no space, for one): the write itself says whether it fits */
}

int
ddict_log_flush(ddict_log_t *self)
{
    if (self->used == 0 && self->niov == 0)
        return 0;
    s_prealloc(self);
    if (self->used > self->seg)
        self->iov[self->niov++] = (struct iovec) {
            self->buf + self->seg, self->used - self->seg };
    int rc = s_writev_all(self->fd, self->iov, self->niov);
    s_drop_pending(self);
    return rc;
}

static int
s_check(const ddict_log_rec_t *rec)
{
    if (rec->type < DDICT_LOG_REC_PUT || rec->type > DDICT_LOG_REC_MAX
        || rec->klen > DDICT_KEY_MAX || rec->vlen > DDICT_VALUE_MAX
        || (rec->nslen && !rec->ns) || (rec->klen && !rec->key)
        || (rec->vlen && !rec->val))
        return TELEM_EINVAL;
    return 0;
}

int
ddict_log_append_val(ddict_log_t *self, const ddict_log_rec_t *rec,
                     ddict_val_t *val)
{
    ddict_log_rec_t r = *rec;
    r.val = ddict_val_data(val);
    r.vlen = ddict_val_size(val);
    if (r.vlen <= S_DIRECT)
        return ddict_log_append(self, &r);
    if (s_check(&r) != 0)
        return TELEM_EINVAL;
    size_t head = DDICT_LOG_HDR + (size_t) r.nslen + r.klen;
    if (self->used + head > S_BUF && ddict_log_flush(self) != 0)
        return TELEM_EIO;
    self->held[self->nheld++] = ddict_val_hold(val);
    uint8_t *p = self->buf + self->used;
    s_header(p, &r);
    if (r.nslen)
        memcpy(p + DDICT_LOG_HDR, r.ns, r.nslen);
    if (r.klen)
        memcpy(p + DDICT_LOG_HDR + r.nslen, r.key, r.klen);
    self->used += head;
    self->iov[self->niov++] = (struct iovec) {
        self->buf + self->seg, self->used - self->seg };
    self->seg = self->used;
    self->iov[self->niov++] = (struct iovec) { (void *) r.val, r.vlen };
    self->held_bytes += r.vlen;
    self->size += head + r.vlen;
    self->dirty = 1;
    if (self->nheld == S_HOLD || self->held_bytes >= S_HOLD_BYTES)
        return ddict_log_flush(self);
    return 0;
}

int
ddict_log_append(ddict_log_t *self, const ddict_log_rec_t *rec)
{
    if (s_check(rec) != 0)
        return TELEM_EINVAL;
    uint8_t h[DDICT_LOG_HDR];
    s_header(h, rec);
    size_t names = (size_t) rec->nslen + rec->klen;
    uint64_t len = DDICT_LOG_HDR + names + rec->vlen;
    self->dirty = 1;
    self->size += len;
    if (rec->vlen <= S_DIRECT) {
        if (self->used + len > S_BUF && ddict_log_flush(self) != 0)
            return TELEM_EIO;
        uint8_t *p = self->buf + self->used;
        memcpy(p, h, DDICT_LOG_HDR);
        if (rec->nslen)
            memcpy(p + DDICT_LOG_HDR, rec->ns, rec->nslen);
        if (rec->klen)
            memcpy(p + DDICT_LOG_HDR + rec->nslen, rec->key, rec->klen);
        if (rec->vlen)
            memcpy(p + DDICT_LOG_HDR + names, rec->val, rec->vlen);
        self->used += (size_t) len;
        return 0;
    }
    if (ddict_log_flush(self) != 0)
        return TELEM_EIO;
    s_prealloc(self);
    struct iovec iov[4] = {
        { h, DDICT_LOG_HDR }, { (void *) rec->ns, rec->nslen },
        { (void *) rec->key, rec->klen }, { (void *) rec->val, rec->vlen } };
    return s_writev_all(self->fd, iov, 4);
}

int
ddict_log_sync(ddict_log_t *self)
{
    if (ddict_log_flush(self) != 0)
        return TELEM_EIO;
    if (!self->dirty)
        return 0;
    self->dirty = 0;
    return fdatasync(self->fd) == 0 ? 0 : TELEM_EIO;
}

uint64_t
ddict_log_size(const ddict_log_t *self)
{
    return self->size;
}

/* ---------------------------------------------------------------- compact */

/* Makes a rename durable by syncing the directory that holds `path`. */
static int
s_sync_dir(const char *path)
{
    char dir[TELEM_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return TELEM_EIO;
    int rc = fsync(fd) == 0 ? 0 : TELEM_EIO;
    close(fd);
    return rc;
}

int
ddict_log_compact(ddict_log_t *self, ddict_log_dump_fn dump, void *arg)
{
    char tmp[TELEM_PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", self->path);
    unlink(tmp);
    int rc;
    ddict_log_t *fresh = ddict_log_open(tmp, NULL, NULL, NULL, &rc);
    if (!fresh)
        return rc;
    if ((rc = dump(arg, fresh)) != 0 || (rc = ddict_log_sync(fresh)) != 0)
        goto fail;
    rc = TELEM_EIO;
    if (rename(tmp, self->path) != 0 || s_sync_dir(self->path) != 0)
        goto fail;
    /* The fresh file is the log now: take over its descriptor.  Records
       still buffered for the old file are in the dump already. */
    s_drop_pending(self);
    close(self->fd);
    self->fd = fresh->fd;
    self->size = fresh->size;
    self->alloc_end = fresh->alloc_end;
    self->dirty = 0;
    fresh->fd = -1;
    ddict_log_destroy(&fresh);
    return 0;
fail:
    ddict_log_destroy(&fresh);
    unlink(tmp);
    return rc;
}

/* ---------------------------------------------------------- in steps */

int
ddict_log_compact_begin(ddict_log_t *self, ddict_log_t **fresh)
{
    char tmp[TELEM_PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", self->path);
    *fresh = NULL;
    if (ddict_log_flush(self) != 0)
        return TELEM_EIO;
    unlink(tmp);
    int rc;
    *fresh = ddict_log_open(tmp, NULL, NULL, NULL, &rc);
    if (rc == 0)
        self->snap = self->size;
    return rc;
}

int
ddict_log_pace(ddict_log_t *self)
{
    if (ddict_log_flush(self) != 0)
        return TELEM_EIO;
    sync_file_range(self->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
    return 0;
}

/* Appends bytes [from, to) of this log's file to `out`'s file. */
static int
s_copy_tail(ddict_log_t *self, ddict_log_t *out, uint64_t from, uint64_t to)
{
    if (ddict_log_flush(out) != 0)
        return TELEM_EIO;
    while (from < to) {
        size_t n = to - from > S_BUF ? S_BUF : (size_t) (to - from);
        ssize_t r = pread(self->fd, out->buf, n, (off_t) from);
        if (r <= 0)
            return TELEM_EIO;
        struct iovec iov = { out->buf, (size_t) r };
        if (s_writev_all(out->fd, &iov, 1) != 0)
            return TELEM_EIO;
        from += (uint64_t) r;
        out->size += (uint64_t) r;
    }
    return 0;
}

int
ddict_log_compact_finish(ddict_log_t *self, ddict_log_t **fresh)
{
    ddict_log_t *f = *fresh;
    int rc = TELEM_EIO;
    if (ddict_log_flush(self) != 0 || s_copy_tail(self, f, self->snap,
                                                   self->size) != 0)
        goto fail;
    f->dirty = 1;
    if ((rc = ddict_log_sync(f)) != 0)
        goto fail;
    rc = TELEM_EIO;
    if (rename(f->path, self->path) != 0 || s_sync_dir(self->path) != 0)
        goto fail;
    close(self->fd);
    self->fd = f->fd;
    self->size = f->size;
    self->alloc_end = f->alloc_end;
    self->dirty = 0;
    f->fd = -1;
    ddict_log_destroy(fresh);
    return 0;
fail:
    ddict_log_compact_abort(self, fresh);
    return rc;
}

void
ddict_log_compact_abort(ddict_log_t *self, ddict_log_t **fresh)
{
    (void) self;
    if (!*fresh)
        return;
    char tmp[TELEM_PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", (*fresh)->path);
    ddict_log_destroy(fresh);
    unlink(tmp);
}
