/* telem_seg_rec.c - the byte layout of segment and dump files: a growing
 * buffer, little-endian integers and LEB128 varints, file headers, record
 * framing (sync marker, length, kind, header crc, payload, crc) and the
 * payloads of SERIES, BLOCK, META and SNAPSHOT records.
 *
 * Encoding and decoding live side by side so the two cannot drift; the
 * decoder treats every byte as hostile: every length is checked against
 * what is left of the payload before it is used.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_block.h"
#include "telem_crc.h"
#include "telem_grow.h"
#include "telem_paths.h"
#include "telem_seg_int.h"

/* --- buffer --------------------------------------------------------------- */

int
seg_buf_reserve(seg_buf_t *b, size_t more)
{
    if (more > SIZE_MAX - b->len)
        return TELEM_ENOMEM;
    if (b->len + more <= b->cap)
        return 0;
    return telem_grow((void **) &b->p, &b->cap, b->len + more, 1, 4096);
}

void
seg_buf_free(seg_buf_t *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

void
seg_put_u8(seg_buf_t *b, unsigned v)
{
    b->p[b->len++] = (unsigned char) v;
}

void
seg_put_u16(seg_buf_t *b, unsigned v)
{
    seg_put_u8(b, v & 0xff);
    seg_put_u8(b, (v >> 8) & 0xff);
}

void
seg_put_u32(seg_buf_t *b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        seg_put_u8(b, (v >> (8 * i)) & 0xff);
}

void
seg_put_u64(seg_buf_t *b, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        seg_put_u8(b, (unsigned) ((v >> (8 * i)) & 0xff));
}

void
seg_put_uvar(seg_buf_t *b, uint64_t v)
{
    while (v >= 0x80) {
        seg_put_u8(b, (unsigned) (v & 0x7f) | 0x80);
        v >>= 7;
    }
    seg_put_u8(b, (unsigned) v);
}

void
seg_put_bytes(seg_buf_t *b, const void *p, size_t n)
{
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
}

void
seg_put_str(seg_buf_t *b, const void *p, size_t n)
{
    seg_put_uvar(b, n);
    seg_put_bytes(b, p, n);
}

uint16_t
seg_get_u16(const unsigned char *p)
{
    return (uint16_t) (p[0] | (unsigned) p[1] << 8);
}

uint32_t
seg_get_u32(const unsigned char *p)
{
    return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
           (uint32_t) p[3] << 24;
}

uint64_t
seg_get_u64(const unsigned char *p)
{
    return (uint64_t) seg_get_u32(p) | (uint64_t) seg_get_u32(p + 4) << 32;
}

uint64_t
seg_cur_uvar(seg_cur_t *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (c->pos >= c->len) {
            c->bad = 1;
            return 0;
        }
        unsigned char x = c->p[c->pos++];
        if (shift == 63 && x > 1) {
            c->bad = 1;
            return 0;
        }
        v |= (uint64_t) (x & 0x7f) << shift;
        if (!(x & 0x80))
            return v;
    }
    c->bad = 1;
    return 0;
}

unsigned
seg_cur_u8(seg_cur_t *c)
{
    if (c->pos >= c->len) {
        c->bad = 1;
        return 0;
    }
    return c->p[c->pos++];
}

uint64_t
seg_cur_u64(seg_cur_t *c)
{
    if (c->len - c->pos < 8) {
        c->bad = 1;
        c->pos = c->len;
        return 0;
    }
    uint64_t v = seg_get_u64(c->p + c->pos);
    c->pos += 8;
    return v;
}

const unsigned char *
seg_cur_str(seg_cur_t *c, size_t max, size_t *n)
{
    uint64_t len = seg_cur_uvar(c);
    if (c->bad || len > max || len > c->len - c->pos) {
        c->bad = 1;
        *n = 0;
        return NULL;
    }
    const unsigned char *p = c->p + c->pos;
    c->pos += (size_t) len;
    *n = (size_t) len;
    return p;
}

/* --- framing -------------------------------------------------------------- */

int
seg_file_header(seg_buf_t *b, telem_seg_file_kind_t kind, int64_t created_ns,
                const char *node)
{
    size_t nlen = node ? strlen(node) : 0;
    if (nlen > TELEM_NAME_MAX || seg_buf_reserve(b, SEG_FILE_HDR_MIN + nlen))
        return nlen > TELEM_NAME_MAX ? TELEM_EINVAL : TELEM_ENOMEM;
    size_t start = b->len;
    seg_put_bytes(b, SEG_MAGIC, 8);
    seg_put_u16(b, TELEM_SEG_VERSION);
    seg_put_u8(b, (unsigned) kind);
    seg_put_u8(b, 0);
    seg_put_u64(b, (uint64_t) created_ns);
    seg_put_u16(b, (unsigned) nlen);
    seg_put_bytes(b, node, nlen);
    seg_put_u32(b, telem_crc32c(0, b->p + start, b->len - start));
    return 0;
}

int
seg_file_header_parse(const unsigned char *p, size_t len,
                      telem_seg_info_t *info, size_t *hdr_len)
{
    if (len < 12)
        return len >= 8 && memcmp(p, SEG_MAGIC, 8) != 0 ? TELEM_EPROTO : 1;
    if (memcmp(p, SEG_MAGIC, 8) != 0)
        return TELEM_EPROTO;
    uint16_t version = seg_get_u16(p + 8);
    if (version > TELEM_SEG_VERSION)
        return TELEM_EVERSION;
    if (version == 0)
        return TELEM_EPROTO;
    if (len < SEG_FILE_HDR_MIN)
        return 1;
    size_t nlen = seg_get_u16(p + 20);
    if (nlen > TELEM_NAME_MAX)
        return TELEM_EPROTO;
    if (len < SEG_FILE_HDR_MIN + nlen)
        return 1;
    size_t body = SEG_FILE_HDR_MIN - 4 + nlen;
    if (telem_crc32c(0, p, body) != seg_get_u32(p + body))
        return TELEM_EPROTO;
    unsigned kind = p[10];
    if ((kind != TELEM_SEG_FILE_SEGMENT && kind != TELEM_SEG_FILE_DUMP) ||
        p[11] != 0 || memchr(p + 22, '\0', nlen))
        return TELEM_EPROTO;
    memset(info, 0, sizeof *info);
    info->version = version;
    info->kind = (telem_seg_file_kind_t) kind;
    info->created_ns = (int64_t) seg_get_u64(p + 12);
    memcpy(info->node, p + 22, nlen);
    info->node[nlen] = '\0';
    *hdr_len = body + 4;
    return 0;
}

long long
seg_rec_begin(seg_buf_t *b, telem_seg_rec_kind_t kind, size_t payload_max)
{
    if (seg_buf_reserve(b, SEG_REC_OVERHEAD + payload_max))
        return TELEM_ENOMEM;
    long long start = (long long) b->len;
    seg_put_u32(b, SEG_SYNC);
    seg_put_u32(b, 0);
    seg_put_u8(b, (unsigned) kind);
    seg_put_u8(b, 0);
    seg_put_u16(b, 0);
    return start;
}

void
seg_rec_end(seg_buf_t *b, long long start)
{
    unsigned char *h = b->p + start;
    uint32_t len = (uint32_t) (b->len - (size_t) start - SEG_REC_HDR);
    for (int i = 0; i < 4; i++)
        h[4 + i] = (unsigned char) (len >> (8 * i));
    uint32_t hcrc = telem_crc32c(0, h, 10);
    h[10] = (unsigned char) (hcrc & 0xff);
    h[11] = (unsigned char) ((hcrc >> 8) & 0xff);
    seg_put_u32(b, telem_crc32c(0, h + SEG_REC_HDR, len));
}

int
seg_rec_header(const unsigned char *p, unsigned *kind, uint32_t *len)
{
    if (seg_get_u32(p) != SEG_SYNC)
        return TELEM_EPROTO;
    uint32_t hcrc = telem_crc32c(0, p, 10);
    if (seg_get_u16(p + 10) != (hcrc & 0xffff) || p[9] != 0)
        return TELEM_EPROTO;
    *len = seg_get_u32(p + 4);
    *kind = p[8];
    if (*len > TELEM_SEG_RECORD_MAX || *kind < TELEM_SEG_REC_SERIES)
        return TELEM_EPROTO;
    return 0;
}

int
seg_footer(seg_buf_t *b, uint64_t index_off, uint64_t index_len)
{
    if (seg_buf_reserve(b, SEG_FOOTER))
        return TELEM_ENOMEM;
    size_t start = b->len;
    seg_put_bytes(b, SEG_FOOT_MAGIC, 8);
    seg_put_u64(b, index_off);
    seg_put_u64(b, index_len);
    seg_put_u32(b, telem_crc32c(0, b->p + start, 24));
    return 0;
}

void
seg_damage_add(telem_seg_damage_t *d, uint64_t offset, uint64_t bytes)
{
    if (!d)
        return;
    d->bad++;
    d->bytes_skipped += bytes;
    if (d->nlist < TELEM_SEG_DAMAGE_LIST) {
        d->list[d->nlist].offset = offset;
        d->list[d->nlist].bytes = bytes;
        d->nlist++;
    }
}

int
seg_read_record(int fd, uint64_t offset, uint32_t size, seg_buf_t *buf,
                unsigned *kind, const unsigned char **payload, uint32_t *len)
{
    buf->len = 0;
    if (seg_buf_reserve(buf, SEG_REC_HDR))
        return TELEM_ENOMEM;
    ssize_t n = pread(fd, buf->p, SEG_REC_HDR, (off_t) offset);
    if (n < 0)
        return TELEM_EIO;
    if (n < (ssize_t) SEG_REC_HDR || seg_rec_header(buf->p, kind, len))
        return TELEM_EPROTO;
    size_t total = SEG_REC_OVERHEAD + (size_t) *len;
    if (size && size != total)
        return TELEM_EPROTO;
    if (seg_buf_reserve(buf, total))
        return TELEM_ENOMEM;
    n = pread(fd, buf->p, total, (off_t) offset);
    if (n < 0)
        return TELEM_EIO;
    const unsigned char *p = buf->p + SEG_REC_HDR;
    if ((size_t) n < total ||
        telem_crc32c(0, p, *len) != seg_get_u32(p + *len))
        return TELEM_EPROTO;
    *payload = p;
    return 0;
}
