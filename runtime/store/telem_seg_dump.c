/* telem_seg_dump.c - writing dump files: the segment records of any number
 * of nodes, then INDEX records and a fixed footer (docs/store.md, "Dump
 * files").
 *
 * Records go through a 4 MiB buffer; what the index needs (per node+key
 * series, per block its record's offset and size, first_seq, count and
 * time range) stays in memory until close, then is written as INDEX
 * records of about 1 MiB each (a series with many blocks is cut into
 * several entries) and the footer points at the first of them.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_grow.h"
#include "telem_paths.h"
#include "telem_seg_int.h"
#include "telem_time.h"

#define DUMP_BUF (4u << 20)

typedef struct {
    telem_seg_iblock_t *blocks;
    size_t n, cap;
    int counter;
    size_t node_len;              /* the key set holds node \0 key */
} s_dser_t;

struct telem_dump {
    int fd;
    int err;                      /* first write error, sticky */
    seg_buf_t buf;
    uint64_t off;                 /* file offset of buf.p[0] */
    seg_keys_t keys;
    s_dser_t *ser;
    size_t ser_cap;
    uint64_t *other;              /* META, SNAPSHOT, ANNOTATION offsets */
    size_t nother, other_cap;
};

telem_dump_t *
telem_dump_open(const char *path, int *err)
{
    int rc = TELEM_EINVAL;
    telem_dump_t *self = NULL;
    if (!path || !*path)
        goto fail;
    rc = TELEM_ENOMEM;
    if (!(self = calloc(1, sizeof *self)))
        goto fail;
    self->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    rc = TELEM_EIO;
    if (self->fd < 0)
        goto fail;
    rc = seg_file_header(&self->buf, TELEM_SEG_FILE_DUMP, telem_now_ns(),
                         NULL);
    if (rc == 0)
        return self;
fail:
    if (self && self->fd >= 0) {
        int e = errno;
        close(self->fd);
        unlink(path);
        errno = e;
    }
    free(self);
    if (err)
        *err = rc;
    return NULL;
}

/* Writes the buffer out when it is past its size (or always). */
static int
s_drain(telem_dump_t *self, int always)
{
    if (self->err)
        return self->err;
    if (!always && self->buf.len < DUMP_BUF)
        return 0;
    if (seg_write_all(self->fd, self->buf.p, self->buf.len)) {
        self->err = TELEM_EIO;
        return self->err;
    }
    self->off += self->buf.len;
    self->buf.len = 0;
    return 0;
}

/* The series of node+key, made (with its SERIES record) if new. */
static long long
s_series(telem_dump_t *self, const char *node, const telem_chunk_t *c)
{
    size_t nlen = strlen(node);
    char stack[512];
    size_t klen = nlen + 1 + c->key_len;
    char *k = klen <= sizeof stack ? stack : malloc(klen);
    if (!k)
        return TELEM_ENOMEM;
    memcpy(k, node, nlen + 1);
    memcpy(k + nlen + 1, c->key, c->key_len);
    long long id = seg_keys_find(&self->keys, k, klen);
    if (id < 0) {
        if (self->keys.n + 1 > self->ser_cap &&
            telem_grow((void **) &self->ser, &self->ser_cap,
                       self->keys.n + 1, sizeof *self->ser, 64))
            id = TELEM_ENOMEM;
        else if (seg_buf_reserve(&self->buf, SEG_REC_OVERHEAD + 31 + klen))
            id = TELEM_ENOMEM;
        else if ((id = seg_keys_add(&self->keys, k, klen)) >= 0) {
            /* room was made above: the record cannot fail now */
            memset(&self->ser[id], 0, sizeof self->ser[id]);
            self->ser[id].counter = c->counter ? 1 : 0;
            self->ser[id].node_len = nlen;
            (void) seg_enc_series(&self->buf, (uint64_t) id, node, c->key,
                                  c->key_len, c->counter);
        }
    }
    if (k != stack)
        free(k);
    return id;
}

int
telem_dump_put_chunk(telem_dump_t *self, const char *node,
                     const telem_chunk_t *c)
{
    if (!self || !node || !telem_node_valid(node) || seg_check_chunk(c))
        return TELEM_EINVAL;
    if (self->err)
        return self->err;
    long long id = s_series(self, node, c);
    if (id < 0)
        return (int) id;
    s_dser_t *s = &self->ser[id];
    if (s->n + 1 > s->cap &&
        telem_grow((void **) &s->blocks, &s->cap, s->n + 1, sizeof *s->blocks,
                   4))
        return TELEM_ENOMEM;
    telem_seg_iblock_t *b = &s->blocks[s->n];
    size_t at = self->buf.len;
    int rc = seg_enc_block(&self->buf, (uint64_t) id, c, &b->first_ts,
                           &b->last_ts, &b->npoints);
    if (rc)
        return rc;
    b->offset = self->off + at;
    b->size = (uint32_t) (self->buf.len - at);
    b->first_seq = c->first_seq;
    b->closed = c->closed ? 1 : 0;
    s->n++;
    return s_drain(self, 0);
}

static int
s_other(telem_dump_t *self, size_t at)
{
    if (self->nother + 1 > self->other_cap &&
        telem_grow((void **) &self->other, &self->other_cap,
                   self->nother + 1, sizeof *self->other, 16)) {
        self->buf.len = at;              /* the record goes too */
        return TELEM_ENOMEM;
    }
    self->other[self->nother++] = self->off + at;
    return s_drain(self, 0);
}

int
telem_dump_put_meta(telem_dump_t *self, const char *node,
                    const telem_meta_t *m)
{
    if (!self || !node || !telem_node_valid(node) || seg_check_meta(m))
        return TELEM_EINVAL;
    if (self->err)
        return self->err;
    size_t at = self->buf.len;
    int rc = seg_enc_meta(&self->buf, node, m);
    return rc ? rc : s_other(self, at);
}

int
telem_dump_put_snapshot(telem_dump_t *self, const char *node,
                        const char *json, size_t len, int64_t created_ns)
{
    if (!self || !node || !telem_node_valid(node) || (!json && len) ||
        len > TELEM_SEG_SNAPSHOT_MAX)
        return TELEM_EINVAL;
    if (self->err)
        return self->err;
    size_t at = self->buf.len;
    int rc = seg_enc_snapshot(&self->buf, node, json, len, created_ns);
    return rc ? rc : s_other(self, at);
}

int
telem_dump_put_annotation(telem_dump_t *self, telem_seg_note_t type,
                          int64_t time_ms, const char *json, size_t len)
{
    if (!self || !json || len > TELEM_SEG_NOTE_MAX ||
        (type != TELEM_SEG_NOTE_EVENT && type != TELEM_SEG_NOTE_RESTART))
        return TELEM_EINVAL;
    if (self->err)
        return self->err;
    size_t at = self->buf.len;
    int rc = seg_enc_note(&self->buf, type, time_ms, json, len);
    return rc ? rc : s_other(self, at);
}

/* Ends the INDEX record being built in part (entries counted in n). */
static int
s_index_flush(telem_dump_t *self, seg_buf_t *part, unsigned kind,
              uint64_t *n)
{
    if (*n == 0)
        return 0;
    long long at = seg_rec_begin(&self->buf, TELEM_SEG_REC_INDEX,
                                 11 + part->len);
    if (at < 0)
        return (int) at;
    seg_put_u8(&self->buf, kind);
    seg_put_uvar(&self->buf, *n);
    seg_put_bytes(&self->buf, part->p, part->len);
    seg_rec_end(&self->buf, at);
    part->len = 0;
    *n = 0;
    return s_drain(self, 0);
}

static void
s_put_iblock(seg_buf_t *b, const telem_seg_iblock_t *ib)
{
    seg_put_uvar(b, ib->offset);
    seg_put_uvar(b, ib->size);
    seg_put_uvar(b, ib->first_seq);
    seg_put_uvar(b, ib->npoints);
    seg_put_u8(b, ib->closed ? 1 : 0);
    seg_put_u64(b, (uint64_t) ib->first_ts);
    seg_put_uvar(b, (uint64_t) ib->last_ts - (uint64_t) ib->first_ts);
}

/* One series' entries (cut so that a record stays near its size). */
static int
s_index_series(telem_dump_t *self, size_t i, seg_buf_t *part, uint64_t *n)
{
    const s_dser_t *s = &self->ser[i];
    const char *k = self->keys.keys[i];
    size_t klen = self->keys.lens[i] - s->node_len - 1;
    size_t done = 0;
    do {
        size_t room = SEG_INDEX_REC_BYTES > part->len + 64 + klen
                          ? SEG_INDEX_REC_BYTES - part->len - 64 - klen
                          : 0;
        size_t nb = s->n - done;
        if (nb > room / 59)
            nb = room / 59;
        if (nb == 0 && s->n > 0) {
            int rc = s_index_flush(self, part, 1, n);
            if (rc)
                return rc;
            continue;
        }
        if (seg_buf_reserve(part, 3 * 10 + 1 + s->node_len + klen + nb * 59))
            return TELEM_ENOMEM;
        seg_put_str(part, k, s->node_len);
        seg_put_str(part, k + s->node_len + 1, klen);
        seg_put_u8(part, (unsigned) s->counter);
        seg_put_uvar(part, nb);
        for (size_t j = 0; j < nb; j++)
            s_put_iblock(part, &s->blocks[done + j]);
        done += nb;
        (*n)++;
    } while (done < s->n);
    return 0;
}

static int
s_index(telem_dump_t *self)
{
    seg_buf_t part = {0};
    uint64_t n = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < self->keys.n; i++)
        rc = s_index_series(self, i, &part, &n);
    if (rc == 0)
        rc = s_index_flush(self, &part, 1, &n);
    for (size_t i = 0; rc == 0 && i < self->nother; i++) {
        if (part.len + 10 > SEG_INDEX_REC_BYTES)
            rc = s_index_flush(self, &part, 2, &n);
        if (rc == 0 && (rc = seg_buf_reserve(&part, 10)) == 0) {
            seg_put_uvar(&part, self->other[i]);
            n++;
        }
    }
    if (rc == 0)
        rc = s_index_flush(self, &part, 2, &n);
    seg_buf_free(&part);
    return rc;
}

int
telem_dump_close(telem_dump_t **self_p)
{
    if (!self_p || !*self_p)
        return 0;
    telem_dump_t *self = *self_p;
    *self_p = NULL;
    int rc = s_drain(self, 1);
    uint64_t index_off = self->off;
    if (rc == 0)
        rc = s_index(self);
    if (rc == 0)
        rc = seg_footer(&self->buf, index_off,
                        self->off + self->buf.len - index_off);
    if (rc == 0)
        rc = s_drain(self, 1);
    if (rc == 0 && fsync(self->fd) != 0)
        rc = TELEM_EIO;
    if (close(self->fd) != 0 && rc == 0)
        rc = TELEM_EIO;
    for (size_t i = 0; i < self->keys.n; i++)
        free(self->ser[i].blocks);
    free(self->ser);
    free(self->other);
    seg_keys_clear(&self->keys);
    seg_buf_free(&self->buf);
    free(self);
    return rc;
}
