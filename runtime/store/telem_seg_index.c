/* telem_seg_index.c - reading a dump's INDEX records (docs/store.md,
 * "Dump files") so that a reader learns where every block lies without
 * reading the blocks.
 *
 * The index is read twice: once to check every record and entry, then
 * once to hand the entries out, so a caller never gets part of an index
 * that turns out damaged (it falls back to scanning the file instead).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_paths.h"
#include "telem_seg_int.h"

/* Smallest bytes of one block's entry: 5 one-byte varints, u8, u64. */
#define IBLOCK_MIN 14u

int seg_dump_footer(int fd, uint64_t *index_off, uint64_t *index_len);

typedef struct {
    telem_seg_iblock_t *blocks;
    size_t cap;
    char node[TELEM_NAME_MAX + 1];
} s_iscratch_t;

static int
s_iblock(seg_cur_t *c, telem_seg_iblock_t *b)
{
    b->offset = seg_cur_uvar(c);
    uint64_t size = seg_cur_uvar(c);
    b->first_seq = seg_cur_uvar(c);
    uint64_t np = seg_cur_uvar(c);
    unsigned closed = seg_cur_u8(c);
    b->first_ts = (int64_t) seg_cur_u64(c);
    uint64_t span = seg_cur_uvar(c);
    if (c->bad || size < SEG_REC_OVERHEAD ||
        size > SEG_REC_OVERHEAD + TELEM_SEG_RECORD_MAX || np == 0 ||
        np > 65535 || closed > 1 ||
        span > (uint64_t) INT64_MAX - (uint64_t) b->first_ts)
        return TELEM_EPROTO;
    b->size = (uint32_t) size;
    b->npoints = (uint32_t) np;
    b->closed = (int) closed;
    b->last_ts = (int64_t) ((uint64_t) b->first_ts + span);
    return 0;
}

/* One series entry; fn NULL only checks. */
static int
s_iseries(seg_cur_t *c, s_iscratch_t *sc, telem_seg_index_fn fn, void *arg)
{
    size_t nlen, klen;
    const unsigned char *node = seg_cur_str(c, TELEM_NAME_MAX, &nlen);
    const unsigned char *key = seg_cur_str(c, TELEM_SEG_RECORD_MAX, &klen);
    unsigned flags = seg_cur_u8(c);
    uint64_t nb = seg_cur_uvar(c);
    if (c->bad || !node || nlen == 0 || flags > 1 ||
        !seg_key_valid((const char *) key, klen) ||
        nb > (c->len - c->pos) / IBLOCK_MIN)
        return TELEM_EPROTO;
    memcpy(sc->node, node, nlen);
    sc->node[nlen] = '\0';
    if (strlen(sc->node) != nlen || !telem_node_valid(sc->node))
        return TELEM_EPROTO;
    if (nb > sc->cap) {
        telem_seg_iblock_t *b = realloc(sc->blocks, nb * sizeof *b);
        if (!b)
            return TELEM_ENOMEM;
        sc->blocks = b;
        sc->cap = nb;
    }
    for (uint64_t i = 0; i < nb; i++)
        if (s_iblock(c, &sc->blocks[i]))
            return TELEM_EPROTO;
    if (!fn)
        return 0;
    telem_seg_iseries_t s = {sc->node, (const char *) key, (uint32_t) klen,
                             (int) flags, sc->blocks, (uint32_t) nb};
    return fn(arg, &s, 0);
}

static int
s_ipayload(const unsigned char *p, uint32_t len, s_iscratch_t *sc,
           telem_seg_index_fn fn, void *arg)
{
    seg_cur_t c = {p, len, 0, 0};
    unsigned part = seg_cur_u8(&c);
    uint64_t n = seg_cur_uvar(&c);
    if (c.bad || (part != 1 && part != 2))
        return TELEM_EPROTO;
    for (uint64_t i = 0; i < n; i++) {
        if (c.pos >= c.len)
            return TELEM_EPROTO;
        int rc;
        if (part == 1) {
            rc = s_iseries(&c, sc, fn, arg);
        } else {
            uint64_t off = seg_cur_uvar(&c);
            rc = c.bad ? TELEM_EPROTO : fn ? fn(arg, NULL, off) : 0;
        }
        if (rc)
            return rc;
    }
    return c.pos == c.len ? 0 : TELEM_EPROTO;
}

/* Walks the INDEX records of [off, end); fn NULL only checks. */
static int
s_walk(int fd, uint64_t off, uint64_t end, telem_seg_index_fn fn, void *arg)
{
    seg_buf_t buf = {0};
    s_iscratch_t sc = {0};
    int rc = 0;
    while (rc == 0 && off < end) {
        unsigned kind;
        const unsigned char *pl;
        uint32_t len;
        rc = seg_read_record(fd, off, 0, &buf, &kind, &pl, &len);
        if (rc == 0 && (kind != TELEM_SEG_REC_INDEX ||
                        end - off < SEG_REC_OVERHEAD + (uint64_t) len))
            rc = TELEM_EPROTO;
        if (rc == 0)
            rc = s_ipayload(pl, len, &sc, fn, arg);
        off += SEG_REC_OVERHEAD + (uint64_t) len;
    }
    free(sc.blocks);
    seg_buf_free(&buf);
    return rc;
}

int
telem_seg_read_index(const char *path, telem_seg_index_fn fn, void *arg)
{
    uint64_t ioff, ilen;
    if (!path || !fn)
        return TELEM_EINVAL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? TELEM_ENOTFOUND : TELEM_EIO;
    int rc = seg_dump_footer(fd, &ioff, &ilen);
    if (rc == 0) {
        rc = s_walk(fd, ioff, ioff + ilen, NULL, NULL);
        if (rc == TELEM_EPROTO)
            rc = TELEM_ENOTFOUND;
    }
    if (rc == 0)
        rc = s_walk(fd, ioff, ioff + ilen, fn, arg);
    close(fd);
    return rc;
}
