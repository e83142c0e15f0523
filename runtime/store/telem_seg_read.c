/* telem_seg_read.c - reading segment and dump files record by record.
 *
 * The file is read forward through one window (pread, at least 1 MiB at
 * a time, at most a record's bound), never mapped: a file cut short while
 * it is read gives a short read, not a SIGBUS.  A record is taken only
 * when its header checksum, its length (within TELEM_SEG_RECORD_MAX and
 * the file), its payload checksum and its payload's decoding all pass;
 * anything else is a damaged stretch that runs to the next sync marker
 * starting a record that passes them all (or to the end: a torn tail).
 * The header checksum keeps a forged length from costing a read of
 * 16 MiB per false sync marker.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "telem_crc.h"
#include "telem_grow.h"
#include "telem_seg_int.h"

#define READ_CHUNK (1u << 20)

typedef struct {
    uint64_t id;
    char *node;
    char *key;
    uint32_t key_len;
    int counter;
} s_ser_t;

typedef struct {
    int fd;
    uint64_t size;                 /* where reading stops */
    seg_buf_t win;
    uint64_t win_off;
    char *scratch;
    size_t scratch_cap;
    s_ser_t *ser;
    size_t nser, ser_cap;
    uint32_t *slots;               /* index + 1 into ser; 0 empty */
    size_t nslots;
    telem_seg_damage_t *damage;
} s_reader_t;

/* Makes file bytes [off, off + n) available: 0 with *p set, 1 when the
 * file ends before, TELEM_EIO or TELEM_ENOMEM. */
static int
s_ensure(s_reader_t *r, uint64_t off, size_t n, const unsigned char **p)
{
    if (r->win.p && off >= r->win_off && off - r->win_off <= r->win.len &&
        r->win.len - (off - r->win_off) >= n) {
        *p = r->win.p + (off - r->win_off);
        return 0;
    }
    if (off > r->size || r->size - off < n)
        return 1;
    size_t want = n > READ_CHUNK ? n : READ_CHUNK;
    if (want > r->size - off)
        want = (size_t) (r->size - off);
    r->win.len = 0;
    r->win_off = off;
    if (seg_buf_reserve(&r->win, want))
        return TELEM_ENOMEM;
    while (r->win.len < want) {
        ssize_t got = pread(r->fd, r->win.p + r->win.len, want - r->win.len,
                            (off_t) (off + r->win.len));
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return TELEM_EIO;
        if (got == 0) {             /* the file shrank */
            r->size = off + r->win.len;
            break;
        }
        r->win.len += (size_t) got;
    }
    if (r->win.len < n)
        return 1;
    *p = r->win.p;
    return 0;
}

static s_ser_t *
s_ser_find(const s_reader_t *r, uint64_t id)
{
    if (!r->nslots)
        return NULL;
    size_t mask = r->nslots - 1;
    for (size_t i = telem_hash_mix64(id) & mask;; i = (i + 1) & mask) {
        if (!r->slots[i])
            return NULL;
        if (r->ser[r->slots[i] - 1].id == id)
            return &r->ser[r->slots[i] - 1];
    }
}

static int
s_slots_grow(s_reader_t *r)
{
    size_t n = r->nslots ? r->nslots * 2 : 64;
    uint32_t *slots = calloc(n, sizeof *slots);
    if (!slots)
        return TELEM_ENOMEM;
    for (size_t k = 0; k < r->nser; k++) {
        size_t i = telem_hash_mix64(r->ser[k].id) & (n - 1);
        while (slots[i])
            i = (i + 1) & (n - 1);
        slots[i] = (uint32_t) (k + 1);
    }
    free(r->slots);
    r->slots = slots;
    r->nslots = n;
    return 0;
}

/* Defines (or redefines) a series of the file. */
static int
s_ser_add(s_reader_t *r, const telem_seg_rec_t *rec)
{
    char *node = strdup(rec->node);
    char *key = malloc(rec->chunk.key_len);
    if (!node || !key)
        goto nomem;
    memcpy(key, rec->chunk.key, rec->chunk.key_len);
    s_ser_t *s = s_ser_find(r, rec->series_id);
    if (s) {
        free(s->node);
        free(s->key);
    } else {
        if (r->nser >= UINT32_MAX - 1 ||
            ((r->nser + 1) * 2 > r->nslots && s_slots_grow(r)) ||
            (r->nser + 1 > r->ser_cap &&
             telem_grow((void **) &r->ser, &r->ser_cap, r->nser + 1,
                        sizeof *r->ser, 64)))
            goto nomem;
        s = &r->ser[r->nser++];
        size_t mask = r->nslots - 1;
        size_t i = telem_hash_mix64(rec->series_id) & mask;
        while (r->slots[i])
            i = (i + 1) & mask;
        r->slots[i] = (uint32_t) r->nser;
        s->id = rec->series_id;
    }
    s->node = node;
    s->key = key;
    s->key_len = rec->chunk.key_len;
    s->counter = rec->chunk.counter;
    return 0;
nomem:
    free(node);
    free(key);
    return TELEM_ENOMEM;
}

/* Tries the record at off: 0 with *rec filled (pointers into the
 * window), TELEM_EPROTO when none starts there, or a fatal error. */
static int
s_try(s_reader_t *r, uint64_t off, telem_seg_rec_t *rec)
{
    const unsigned char *p;
    unsigned kind;
    uint32_t len;
    int rc = s_ensure(r, off, SEG_REC_HDR, &p);
    if (rc)
        return rc == 1 ? TELEM_EPROTO : rc;
    if (seg_rec_header(p, &kind, &len))
        return TELEM_EPROTO;
    rc = s_ensure(r, off, SEG_REC_OVERHEAD + (size_t) len, &p);
    if (rc)
        return rc == 1 ? TELEM_EPROTO : rc;
    const unsigned char *pl = p + SEG_REC_HDR;
    if (telem_crc32c(0, pl, len) != seg_get_u32(pl + len))
        return TELEM_EPROTO;
    if ((size_t) len + 8 > r->scratch_cap &&
        telem_grow((void **) &r->scratch, &r->scratch_cap, (size_t) len + 8,
                   1, 4096))
        return TELEM_ENOMEM;
    memset(rec, 0, sizeof *rec);
    if (kind > SEG_REC_KNOWN)
        rec->kind = (telem_seg_rec_kind_t) kind;   /* later kind: skipped */
    else if (seg_dec_payload(kind, pl, len, r->scratch, rec))
        return TELEM_EPROTO;
    rec->offset = off;
    rec->size = SEG_REC_OVERHEAD + len;
    if (kind == TELEM_SEG_REC_BLOCK)
        rec->block_offset = off + (uint64_t) ((const unsigned char *)
                                              rec->chunk.block - p);
    return 0;
}

/* The offset of the next sync marker at or after off: 0 with *at set, 1
 * when there is none, or a fatal error. */
static int
s_find_sync(s_reader_t *r, uint64_t off, uint64_t *at)
{
    static const unsigned char sync[4] = {0x7e, 0xec, 0x52, 0x0a};
    while (off < r->size && r->size - off >= 4) {
        size_t n = r->size - off > 65536 ? 65536 : (size_t) (r->size - off);
        const unsigned char *p;
        int rc = s_ensure(r, off, n, &p);
        if (rc)
            return rc;
        for (size_t i = 0; i + 4 <= n; i++) {
            const unsigned char *q = memchr(p + i, sync[0], n - 3 - i);
            if (!q)
                break;
            i = (size_t) (q - p);
            if (memcmp(q, sync, 4) == 0) {
                *at = off + i;
                return 0;
            }
        }
        off += n - 3;
    }
    return 1;
}

/* Hands a valid record to fn (resolving a BLOCK's series). */
static int
s_deliver(s_reader_t *r, telem_seg_rec_t *rec, telem_seg_rec_fn fn,
          void *arg)
{
    if (rec->kind > SEG_REC_KNOWN) {
        if (r->damage)
            r->damage->unknown++;
        return 0;
    }
    if (rec->kind == TELEM_SEG_REC_SERIES) {
        int rc = s_ser_add(r, rec);
        if (rc)
            return rc;
    } else if (rec->kind == TELEM_SEG_REC_BLOCK) {
        const s_ser_t *s = s_ser_find(r, rec->series_id);
        if (!s) {
            if (r->damage)
                r->damage->orphans++;
            return 0;
        }
        rec->node = s->node;
        rec->chunk.key = s->key;
        rec->chunk.key_len = s->key_len;
        rec->chunk.metric = s->key;
        rec->chunk.counter = s->counter;
    }
    if (r->damage)
        r->damage->records++;
    return fn ? fn(arg, rec) : 0;
}

/* Skips the damaged stretch at off: *next is where reading goes on. */
static int
s_resync(s_reader_t *r, uint64_t off, uint64_t *next)
{
    uint64_t q = off + 1;
    telem_seg_rec_t rec;
    for (;;) {
        uint64_t at = 0;
        int rc = s_find_sync(r, q, &at);
        if (rc < 0)
            return rc;
        if (rc == 1) {
            seg_damage_add(r->damage, off, r->size - off);
            if (r->damage)
                r->damage->torn_tail = 1;
            *next = r->size;
            return 0;
        }
        rc = s_try(r, at, &rec);
        if (rc == 0) {
            seg_damage_add(r->damage, off, at - off);
            *next = at;
            return 0;
        }
        if (rc != TELEM_EPROTO)
            return rc;
        q = at + 1;
    }
}

static int
s_scan(s_reader_t *r, uint64_t off, telem_seg_rec_fn fn, void *arg)
{
    telem_seg_rec_t rec;
    while (off < r->size) {
        int rc = s_try(r, off, &rec);
        if (rc == 0) {
            off += rec.size;
            rc = s_deliver(r, &rec, fn, arg);
            if (rc)
                return rc;
            continue;
        }
        if (rc != TELEM_EPROTO)
            return rc;
        rc = s_resync(r, off, &off);
        if (rc)
            return rc;
    }
    return 0;
}

static void
s_reader_free(s_reader_t *r)
{
    for (size_t i = 0; i < r->nser; i++) {
        free(r->ser[i].node);
        free(r->ser[i].key);
    }
    free(r->ser);
    free(r->slots);
    free(r->scratch);
    seg_buf_free(&r->win);
    if (r->fd >= 0)
        close(r->fd);
}

/* Opens path and parses its header: 0 with r->fd, r->size, *info and
 * *hdr_len set, or an error (r->fd closed by s_reader_free()). */
static int
s_open(s_reader_t *r, const char *path, telem_seg_info_t *info,
       size_t *hdr_len)
{
    struct stat st;
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0)
        return errno == ENOENT ? TELEM_ENOTFOUND : TELEM_EIO;
    if (fstat(r->fd, &st) != 0)
        return TELEM_EIO;
    if (!S_ISREG(st.st_mode))
        return TELEM_EPROTO;
    r->size = (uint64_t) st.st_size;
    const unsigned char *p;
    size_t n = r->size < SEG_FILE_HDR_MIN + TELEM_NAME_MAX
                   ? (size_t) r->size
                   : SEG_FILE_HDR_MIN + TELEM_NAME_MAX;
    int rc = s_ensure(r, 0, n, &p);
    if (rc)
        return rc == 1 ? TELEM_EPROTO : rc;
    rc = seg_file_header_parse(p, r->win.len, info, hdr_len);
    return rc == 1 ? TELEM_EPROTO : rc;
}

int
telem_seg_info(const char *path, telem_seg_info_t *info)
{
    s_reader_t r = {.fd = -1};
    size_t hdr;
    telem_seg_info_t tmp;
    if (!path)
        return TELEM_EINVAL;
    int rc = s_open(&r, path, info ? info : &tmp, &hdr);
    s_reader_free(&r);
    return rc;
}

/* 0 with *index_off, *index_len when the dump ends in a valid footer. */
static int
s_footer(s_reader_t *r, size_t hdr_len, uint64_t *index_off,
         uint64_t *index_len)
{
    const unsigned char *p;
    if (r->size < hdr_len + SEG_FOOTER ||
        s_ensure(r, r->size - SEG_FOOTER, SEG_FOOTER, &p) != 0)
        return TELEM_ENOTFOUND;
    if (memcmp(p, SEG_FOOT_MAGIC, 8) != 0 ||
        telem_crc32c(0, p, 24) != seg_get_u32(p + 24))
        return TELEM_ENOTFOUND;
    *index_off = seg_get_u64(p + 8);
    *index_len = seg_get_u64(p + 16);
    uint64_t end = r->size - SEG_FOOTER;
    if (*index_off < hdr_len || *index_off > end ||
        *index_len != end - *index_off)
        return TELEM_ENOTFOUND;
    return 0;
}

int
telem_seg_read(const char *path, telem_seg_rec_fn fn, void *arg,
               telem_seg_info_t *info, telem_seg_damage_t *damage)
{
    s_reader_t r = {.fd = -1, .damage = damage};
    telem_seg_info_t tmp;
    size_t hdr;
    if (damage)
        memset(damage, 0, sizeof *damage);
    if (!path)
        return TELEM_EINVAL;
    if (!info)
        info = &tmp;
    int rc = s_open(&r, path, info, &hdr);
    if (rc == 0 && info->kind == TELEM_SEG_FILE_DUMP) {
        uint64_t ioff, ilen;
        if (s_footer(&r, hdr, &ioff, &ilen) == 0)
            r.size -= SEG_FOOTER;
        else if (damage)
            damage->no_index = 1;
    }
    if (rc == 0)
        rc = s_scan(&r, hdr, fn, arg);
    s_reader_free(&r);
    return rc;
}

int
telem_seg_read_at(int fd, uint64_t offset, telem_seg_rec_fn fn, void *arg)
{
    seg_buf_t buf = {0};
    unsigned kind;
    const unsigned char *pl;
    uint32_t len;
    char *scratch = NULL;
    telem_seg_rec_t rec;
    int rc = seg_read_record(fd, offset, 0, &buf, &kind, &pl, &len);
    if (rc == 0 && !(scratch = malloc((size_t) len + 8)))
        rc = TELEM_ENOMEM;
    if (rc == 0) {
        memset(&rec, 0, sizeof rec);
        rc = seg_dec_payload(kind, pl, len, scratch, &rec) ? TELEM_EPROTO : 0;
    }
    if (rc == 0) {
        rec.offset = offset;
        rec.size = SEG_REC_OVERHEAD + len;
        if (kind == TELEM_SEG_REC_BLOCK) {
            rec.block_offset = offset + (uint64_t) ((const unsigned char *)
                                                    rec.chunk.block - buf.p);
            rec.chunk.key = NULL;
            rec.chunk.key_len = 0;
            rec.chunk.metric = NULL;
        }
        rc = fn ? fn(arg, &rec) : 0;
    }
    free(scratch);
    seg_buf_free(&buf);
    return rc;
}

/* For telem_seg_index.c: the footer of the dump open as fd. */
int seg_dump_footer(int fd, uint64_t *index_off, uint64_t *index_len);

int
seg_dump_footer(int fd, uint64_t *index_off, uint64_t *index_len)
{
    s_reader_t r = {.fd = fd};
    struct stat st;
    telem_seg_info_t info;
    size_t hdr;
    const unsigned char *p;
    int rc = TELEM_EIO;
    if (fstat(fd, &st) != 0)
        goto out;
    r.size = (uint64_t) st.st_size;
    size_t n = r.size < SEG_FILE_HDR_MIN + TELEM_NAME_MAX
                   ? (size_t) r.size
                   : SEG_FILE_HDR_MIN + TELEM_NAME_MAX;
    rc = s_ensure(&r, 0, n, &p);
    if (rc == 0)
        rc = seg_file_header_parse(p, r.win.len, &info, &hdr);
    if (rc == 1)
        rc = TELEM_EPROTO;
    if (rc == 0 && info.kind != TELEM_SEG_FILE_DUMP)
        rc = TELEM_ENOTFOUND;
    if (rc == 0)
        rc = s_footer(&r, hdr, index_off, index_len);
out:
    r.fd = -1;
    s_reader_free(&r);
    return rc;
}
