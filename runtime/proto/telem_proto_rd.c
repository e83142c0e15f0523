/* telem_proto_rd.c - the bounded msgpack reader the decoder walks frames
 * with (declared in telem_proto_int.h).
 *
 * Decoding does not use msgpack_unpack(): the object unpacker allocates an
 * array as soon as it reads its header, so a 5-byte header claiming 4
 * billion elements would allocate gigabytes before the lie is noticed, and
 * a fresh zone per frame costs ~40 % on the ingest path.  This cursor reads
 * one object at a time in place, checks every length against the bytes
 * left, and lets callers check every claimed count (tp_rd_count) before
 * they allocate.  Nothing here allocates or recurses.
 */
#include "telem_proto_int.h"

#include <string.h>

/* Reads a length or count header: a fix form (first byte lo..lo+fixmax) or
 * the 8/16/32-bit forms marked m8/m16/m32 (0 = no such form).  Returns 1 if
 * the next object is of another type. */
int
tp_rd_hdr(telem_rd_t *r, int lo, int fixmax, int m8, int m16, int m32, uint32_t *n)
{
    if (r->p >= r->end)
        return tp_bad(r, TELEM_EPROTO, "is truncated");
    int b = *r->p;
    size_t w;
    if (b >= lo && b <= lo + fixmax) {
        *n = (uint32_t) (b - lo);
        r->p++;
        return 0;
    }
    if (m8 && b == m8)
        w = 1;
    else if (b == m16)
        w = 2;
    else if (b == m32)
        w = 4;
    else
        return 1;
    if (tp_left(r) < 1 + w)
        return tp_bad(r, TELEM_EPROTO, "is truncated");
    *n = (uint32_t) tp_be(r->p + 1, w);
    r->p += 1 + w;
    return 0;
}

/* A str (bin when `bin`): points *s at its bytes inside the frame. */
int
tp_rd_bytes(telem_rd_t *r, bool bin, const uint8_t **s, uint32_t *len)
{
    int rc = bin ? tp_rd_hdr(r, 0, -1, 0xc4, 0xc5, 0xc6, len)
                 : tp_rd_hdr(r, 0xa0, 31, 0xd9, 0xda, 0xdb, len);
    if (rc > 0)
        return tp_bad(r, TELEM_EPROTO, bin ? "is not a bin" : "is not a string");
    if (rc < 0)
        return rc;
    if (tp_left(r) < *len)
        return tp_bad(r, TELEM_EPROTO, "is truncated");
    *s = r->p;
    r->p += *len;
    return 0;
}

/* An array (map when `map`) header whose elements need at least `min`
 * bytes each: a count the rest of the frame cannot hold is refused here,
 * before anyone allocates for it. */
int
tp_rd_count(telem_rd_t *r, bool map, size_t min, uint32_t *n)
{
    int rc = map ? tp_rd_hdr(r, 0x80, 15, 0, 0xde, 0xdf, n)
                 : tp_rd_hdr(r, 0x90, 15, 0, 0xdc, 0xdd, n);
    if (rc > 0)
        return tp_bad(r, TELEM_EPROTO, map ? "is not a map" : "is not an array");
    if (rc < 0)
        return rc;
    if ((uint64_t) *n * min > tp_left(r))
        return tp_bad(r, TELEM_EPROTO, "claims more elements than the frame holds");
    return 0;
}

int
tp_rd_num(telem_rd_t *r, tp_num_t *v)
{
    if (r->p >= r->end)
        return tp_bad(r, TELEM_EPROTO, "is truncated");
    int b = *r->p;
    size_t w = b >= 0xcc && b <= 0xd3 ? (size_t) 1 << ((b - 0xcc) & 3)
             : b == 0xca ? 4 : b == 0xcb ? 8 : 0;
    if (tp_left(r) < 1 + w)
        return tp_bad(r, TELEM_EPROTO, "is truncated");
    uint64_t x = tp_be(r->p + 1, w);
    v->kind = TP_N_UINT;
    if (b <= 0x7f) {
        v->u = (uint64_t) b;
    } else if (b >= 0xe0) {
        v->kind = TP_N_INT, v->i = b - 256;
    } else if (b == 0xc2 || b == 0xc3) {
        v->kind = TP_N_BOOL, v->u = (uint64_t) (b == 0xc3);
    } else if (b >= 0xcc && b <= 0xcf) {
        v->u = x;
    } else if (b >= 0xd0 && b <= 0xd3) {
        int64_t s = w == 1 ? (int8_t) x : w == 2 ? (int16_t) x
                  : w == 4 ? (int32_t) x : (int64_t) x;
        if (s < 0)
            v->kind = TP_N_INT, v->i = s;
        else
            v->u = (uint64_t) s;
    } else if (b == 0xca) {
        uint32_t bits = (uint32_t) x;
        float f;
        memcpy(&f, &bits, 4);
        v->kind = TP_N_FLOAT, v->f = f;
    } else if (b == 0xcb) {
        memcpy(&v->f, &x, 8);
        v->kind = TP_N_FLOAT;
    } else {
        return tp_bad(r, TELEM_EPROTO, "is not a number");
    }
    r->p += 1 + w;
    return 0;
}

/* Skips one object of any type, nested ones included, without recursion:
 * `pending` counts objects still to skip and can never exceed the bytes
 * left plus one container's worth. */
int
tp_rd_skip(telem_rd_t *r)
{
    uint64_t pending = 1;
    while (pending > 0) {
        if (pending > tp_left(r))
            return tp_bad(r, TELEM_EPROTO, "is truncated");
        pending--;
        int b = *r->p++;
        uint64_t n = 0;   /* bytes to jump */
        if (b <= 0x7f || b >= 0xe0 || (b >= 0xc0 && b <= 0xc3 && b != 0xc1))
            continue;
        if (b <= 0x8f || (b >= 0xde && b <= 0xdf)) {
            size_t w = b <= 0x8f ? 0 : b == 0xde ? 2 : 4;
            if (tp_left(r) < w)
                return tp_bad(r, TELEM_EPROTO, "is truncated");
            pending += 2 * (w ? tp_be(r->p, w) : (uint64_t) (b & 0x0f));
            r->p += w;
            continue;
        }
        if (b <= 0x9f || b == 0xdc || b == 0xdd) {
            size_t w = b <= 0x9f ? 0 : b == 0xdc ? 2 : 4;
            if (tp_left(r) < w)
                return tp_bad(r, TELEM_EPROTO, "is truncated");
            pending += w ? tp_be(r->p, w) : (uint64_t) (b & 0x0f);
            r->p += w;
            continue;
        }
        if (b <= 0xbf) {
            n = (uint64_t) (b & 0x1f);
        } else if (b == 0xc1) {
            return tp_bad(r, TELEM_EPROTO, "holds the reserved byte 0xc1");
        } else if ((b >= 0xc4 && b <= 0xc9) || (b >= 0xd9 && b <= 0xdb)) {
            /* bin 8/16/32, ext 8/16/32, str 8/16/32 */
            size_t w = b >= 0xd9 ? (size_t) 1 << (b - 0xd9)
                     : (size_t) 1 << ((b - 0xc4) % 3);
            if (tp_left(r) < w)
                return tp_bad(r, TELEM_EPROTO, "is truncated");
            n = tp_be(r->p, w) + w + (b >= 0xc7 && b <= 0xc9);
        } else if (b >= 0xca && b <= 0xd3) {
            n = b == 0xca ? 4 : b == 0xcb ? 8 : (uint64_t) 1 << ((b - 0xcc) & 3);
        } else {   /* fixext 1/2/4/8/16: 0xd4-0xd8, the only bytes left */
            n = 1 + ((uint64_t) 1 << ((b - 0xd4) & 7));
        }
        if (tp_left(r) < n)
            return tp_bad(r, TELEM_EPROTO, "is truncated");
        r->p += n;
    }
    return 0;
}
