/* telem_block.c - a block of one series' points: header, checksum and
 * decoding (telem_block.h; layout in docs/store.md).  Encoding is in
 * telem_block_enc.c.
 *
 * Decoding checks the checksum before it looks at a payload, and is
 * bounds-checked after it all the same (a block can be forged with a good
 * checksum): every read stays inside its section, every section must be
 * used up to its padding, the timestamps must never decrease and must end
 * on the header's last timestamp.
 *
 * Calls go down only (telem_block_int.h gives the order): the writer, the
 * iterator and the encoder use this file; this file uses the numbers
 * (telem_block_num.c) and the streams (telem_block_codec.c).
 */
#include "telem_block.h"

#include <stdlib.h>

#include "telem_block_int.h"
#include "telem_crc.h"

/* --- header --------------------------------------------------------------- */

/* Writes the header into p (TELEM_BLOCK_HEADER_MAX bytes); returns its
 * length. */
size_t
tblock_header_put(uint8_t *p, const telem_block_info_t *in)
{
    size_t k = 0;
    p[k++] = TELEM_BLOCK_VERSION;
    p[k++] = (uint8_t) in->value_codec;
    k += tblock_uvar_put(p + k, in->npoints);
    uint64_t first = (uint64_t) in->first_ts;
    for (int i = 0; i < 8; i++)
        p[k++] = (uint8_t) (first >> (8 * i));
    k += tblock_uvar_put(p + k, (uint64_t) in->last_ts - first);
    k += tblock_uvar_put(p + k, in->ts_bytes);
    k += tblock_uvar_put(p + k, in->value_bytes);
    return k;
}

/* Parses the header fields after the version byte; *hlen receives the
 * header's length. */
static int
s_header_fields(const uint8_t *p, size_t len, telem_block_info_t *info,
                size_t *hlen)
{
    const uint8_t *q = p + 2, *end = p + len;
    uint64_t n, span, tsb, vb;
    if (len < 2 || (p[1] >> 4) != 0 || (p[1] & 15) > TELEM_BLOCK_VAL_RATIO)
        return TELEM_EPROTO;
    info->value_codec = (telem_block_vcodec_t) (p[1] & 15);
    if (!tblock_uvar_get(&q, end, &n) || n == 0
        || n > TELEM_BLOCK_MAX_POINTS || end - q < 8)
        return TELEM_EPROTO;
    uint64_t first = 0;
    for (int i = 0; i < 8; i++)
        first |= (uint64_t) *q++ << (8 * i);
    if (!tblock_uvar_get(&q, end, &span) || !tblock_uvar_get(&q, end, &tsb)
        || !tblock_uvar_get(&q, end, &vb))
        return TELEM_EPROTO;
    info->npoints = (uint32_t) n;
    info->first_ts = (int64_t) first;
    info->last_ts = (int64_t) (first + span);
    if (info->last_ts < info->first_ts || (n == 1 && span != 0))
        return TELEM_EPROTO;
    *hlen = (size_t) (q - p);
    size_t room = len - *hlen;
    if (tsb > room || vb > room - tsb
        || room - tsb - vb < TELEM_BLOCK_CRC_BYTES)
        return TELEM_EPROTO;
    info->ts_bytes = (size_t) tsb;
    info->value_bytes = (size_t) vb;
    info->size = *hlen + info->ts_bytes + info->value_bytes
                 + TELEM_BLOCK_CRC_BYTES;
    return 0;
}

static uint32_t
s_get32le(const uint8_t *p)
{
    return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16
           | (uint32_t) p[3] << 24;
}

/* Header and checksum; *ts_sec receives where the timestamps start. */
static int
s_parse(const void *buf, size_t len, telem_block_info_t *info,
        const uint8_t **ts_sec)
{
    const uint8_t *p = buf;
    if (!buf || !info)
        return TELEM_EINVAL;
    if (len < 1)
        return TELEM_EPROTO;
    if (p[0] != TELEM_BLOCK_VERSION)
        return TELEM_EVERSION;
    size_t hlen;
    int rc = s_header_fields(p, len, info, &hlen);
    if (rc)
        return rc;
    size_t body = info->size - TELEM_BLOCK_CRC_BYTES;
    if (telem_crc32c(0, p, body) != s_get32le(p + body))
        return TELEM_EPROTO;
    *ts_sec = p + hlen;
    return 0;
}

int
telem_block_info(const void *buf, size_t len, telem_block_info_t *info)
{
    const uint8_t *ts_sec;
    return s_parse(buf, len, info, &ts_sec);
}

/* --- decoding ------------------------------------------------------------- */

static int
s_decode_ts(const uint8_t *sec, const telem_block_info_t *info, int64_t *ts)
{
    tblock_ints_dec_t d;
    uint32_t n = info->npoints;
    if (!tblock_ints_dec_init(&d, sec, info->ts_bytes, n, info->first_ts))
        return TELEM_EPROTO;
    ts[0] = info->first_ts;
    int64_t prev = ts[0];
    bool ok = true;
    for (uint32_t i = 1; i < n; i++) {
        int64_t t = tblock_ints_dec_next(&d);
        ok &= t >= prev;
        ts[i] = prev = t;
    }
    return ok && prev == info->last_ts && tblock_br_done(&d.br)
           ? 0 : TELEM_EPROTO;
}

static int
s_decode_raw(const uint8_t *sec, const telem_block_info_t *info, double *val)
{
    if (info->value_bytes != (size_t) info->npoints * 8)
        return TELEM_EPROTO;
    for (uint32_t i = 0; i < info->npoints; i++) {
        uint64_t b = 0;
        for (int k = 7; k >= 0; k--)
            b = (b << 8) | sec[8 * i + (uint32_t) k];
        memcpy(&val[i], &b, 8);
    }
    return 0;
}

static int
s_decode_xor(const uint8_t *sec, const telem_block_info_t *info, double *val)
{
    tblock_xor_dec_t d;
    tblock_xor_dec_init(&d, sec, info->value_bytes);
    for (uint32_t i = 0; i < info->npoints; i++)
        val[i] = tblock_xor_dec_next(&d, i == 0);
    return tblock_br_done(&d.br) ? 0 : TELEM_EPROTO;
}

/* Reads a DEC section's exponent (dec) and first integer, or a BITS
 * section's first pattern; *rest points after. */
bool
tblock_ints_head(const uint8_t *sec, size_t len, bool dec, unsigned *k,
                 int64_t *m0, const uint8_t **rest)
{
    const uint8_t *p = sec, *end = sec + len;
    uint64_t z;
    *k = 0;
    if (!dec) {
        if (len < 8)
            return false;
        for (z = 0; p < sec + 8; p++)
            z |= (uint64_t) *p << (8 * (p - sec));
        *m0 = (int64_t) z;
        *rest = p;
        return true;
    }
    if (len < 1 || *p > TBLOCK_DEC_MAX)
        return false;
    *k = *p++;
    if (!tblock_uvar_get(&p, end, &z))
        return false;
    *m0 = tblock_unzigzag(z);
    *rest = p;
    return true;
}

static int
s_decode_ints(const uint8_t *sec, const telem_block_info_t *info, double *val)
{
    unsigned k;
    int64_t m0;
    const uint8_t *p;
    tblock_ints_dec_t d;
    bool dec = info->value_codec == TELEM_BLOCK_VAL_DEC;
    if (!tblock_ints_head(sec, info->value_bytes, dec, &k, &m0, &p)
        || !tblock_ints_dec_init(&d, p,
                                 info->value_bytes - (size_t) (p - sec),
                                 info->npoints, m0))
        return TELEM_EPROTO;
    if (dec) {
        double pw = tblock_pow10(k);
        val[0] = (double) m0 / pw;
        for (uint32_t i = 1; i < info->npoints; i++)
            val[i] = (double) tblock_ints_dec_next(&d) / pw;
    }
    else {
        memcpy(&val[0], &m0, 8);
        for (uint32_t i = 1; i < info->npoints; i++) {
            int64_t b = tblock_ints_dec_next(&d);
            memcpy(&val[i], &b, 8);
        }
    }
    return tblock_br_done(&d.br) ? 0 : TELEM_EPROTO;
}

bool
tblock_pair_head(const uint8_t *sec, size_t len, telem_block_vcodec_t codec,
                 tblock_pair_t *h)
{
    const uint8_t *p = sec, *end = sec + len;
    uint64_t x0, xlen, y0;
    unsigned max = codec == TELEM_BLOCK_VAL_DECX ? TBLOCK_DEC_MAX : 1;
    if (len < 1 || *p > max)
        return false;
    h->param = *p++;
    if (!tblock_uvar_get(&p, end, &x0) || !tblock_uvar_get(&p, end, &xlen)
        || xlen > (uint64_t) (end - p))
        return false;
    h->x0 = tblock_unzigzag(x0);
    h->x = p;
    h->xlen = (size_t) xlen;
    p += xlen;
    if (!tblock_uvar_get(&p, end, &y0))
        return false;
    h->y0 = tblock_unzigzag(y0);
    h->y = p;
    h->ylen = (size_t) (end - p);
    return true;
}

static int
s_decode_pair(const uint8_t *sec, const telem_block_info_t *info,
              double *val)
{
    tblock_pair_t h;
    tblock_ints_dec_t dx, dy;
    uint32_t n = info->npoints;
    telem_block_vcodec_t codec = info->value_codec;
    if (!tblock_pair_head(sec, info->value_bytes, codec, &h)
        || !tblock_ints_dec_init(&dx, h.x, h.xlen, n, h.x0)
        || !tblock_ints_dec_init(&dy, h.y, h.ylen, n, h.y0))
        return TELEM_EPROTO;
    double f = tblock_pair_factor(codec, h.param);
    val[0] = tblock_pair_join(codec, h.x0, h.y0, f);
    if (codec == TELEM_BLOCK_VAL_DECX)
        for (uint32_t i = 1; i < n; i++) {
            int64_t x = tblock_ints_dec_next(&dx);
            val[i] = tblock_decx_join(x, tblock_ints_dec_next(&dy), f);
        }
    else
        for (uint32_t i = 1; i < n; i++) {
            int64_t x = tblock_ints_dec_next(&dx);
            val[i] = (double) x / (double) tblock_ints_dec_next(&dy) * f;
        }
    return tblock_br_done(&dx.br) && tblock_br_done(&dy.br) ? 0
                                                           : TELEM_EPROTO;
}

int
telem_block_decode(const void *buf, size_t len, int64_t *ts, double *val,
                   uint32_t cap, telem_block_info_t *info)
{
    telem_block_info_t tmp;
    telem_block_info_t *in = info ? info : &tmp;
    const uint8_t *ts_sec;
    int rc = s_parse(buf, len, in, &ts_sec);
    if (rc)
        return rc;
    if (!ts || !val)
        return TELEM_EINVAL;
    if (in->npoints > cap)
        return TELEM_ETOOBIG;
    rc = s_decode_ts(ts_sec, in, ts);
    if (rc)
        return rc;
    const uint8_t *vs = ts_sec + in->ts_bytes;
    switch (in->value_codec) {
    case TELEM_BLOCK_VAL_RAW:
        return s_decode_raw(vs, in, val);
    case TELEM_BLOCK_VAL_XOR:
        return s_decode_xor(vs, in, val);
    case TELEM_BLOCK_VAL_DECX:
    case TELEM_BLOCK_VAL_RATIO:
        return s_decode_pair(vs, in, val);
    default:
        return s_decode_ints(vs, in, val);
    }
}
