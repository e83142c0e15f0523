/* telem_block_iter.c - walking a block point by point (telem_block.h).
 *
 * The iterator keeps the state of both streams (the timestamps' residual
 * decoder and one value decoder) and yields one point per call, with the
 * same checks as telem_block_decode(): checksum first, reads bounded by
 * their sections, timestamps never decreasing, the last one the header's,
 * every section used up to its padding.  A malformed block is reported
 * when the iterator reaches the fault; the points before it were yielded.
 * telem_block_decode() is the faster way to read a whole block.
 *
 * Calls go down only: this file uses telem_block.c, the numbers and the
 * streams.
 */
#include "telem_block.h"

#include <stdlib.h>

#include "telem_block_int.h"

struct telem_block_iter {
    telem_block_info_t info;
    uint32_t i;                 /* points yielded */
    bool bad;
    int64_t prev;
    const uint8_t *vsec;        /* value section */
    tblock_ints_dec_t ts;
    tblock_xor_dec_t xd;        /* XOR values */
    tblock_ints_dec_t vd;       /* DEC, BITS values; DECX, RATIO: x */
    tblock_ints_dec_t cd;       /* DECX, RATIO: y */
    double pw;                  /* DEC: 10^k; DECX, RATIO: the factor */
    int64_t m0, c0;
};

telem_block_iter_t *
telem_block_iter_new(void)
{
    telem_block_iter_t *it = calloc(1, sizeof *it);
    if (it)
        it->bad = true;         /* over no block: yields nothing */
    return it;
}

void
telem_block_iter_destroy(telem_block_iter_t **self_p)
{
    if (!self_p)
        return;
    free(*self_p);
    *self_p = NULL;
}

/* Prepares the value decoder; false when its section is malformed. */
static bool
s_values_init(telem_block_iter_t *it)
{
    const telem_block_info_t *in = &it->info;
    switch (in->value_codec) {
    case TELEM_BLOCK_VAL_RAW:
        return in->value_bytes == (size_t) in->npoints * 8;
    case TELEM_BLOCK_VAL_XOR:
        tblock_xor_dec_init(&it->xd, it->vsec, in->value_bytes);
        return true;
    case TELEM_BLOCK_VAL_DECX:
    case TELEM_BLOCK_VAL_RATIO: {
        tblock_pair_t h;
        if (!tblock_pair_head(it->vsec, in->value_bytes, in->value_codec,
                              &h))
            return false;
        it->pw = tblock_pair_factor(in->value_codec, h.param);
        it->m0 = h.x0;
        it->c0 = h.y0;
        return tblock_ints_dec_init(&it->vd, h.x, h.xlen, in->npoints, h.x0)
               && tblock_ints_dec_init(&it->cd, h.y, h.ylen, in->npoints,
                                       h.y0);
    }
    default: {
        unsigned k;
        const uint8_t *rest;
        if (!tblock_ints_head(it->vsec, in->value_bytes,
                              in->value_codec == TELEM_BLOCK_VAL_DEC, &k,
                              &it->m0, &rest))
            return false;
        it->pw = tblock_pow10(k);
        return tblock_ints_dec_init(&it->vd, rest,
                                    in->value_bytes
                                    - (size_t) (rest - it->vsec),
                                    in->npoints, it->m0);
    }
    }
}

int
telem_block_iter_reset(telem_block_iter_t *self, const void *buf, size_t len,
                       telem_block_info_t *info)
{
    if (!self)
        return TELEM_EINVAL;
    self->bad = true;
    self->i = 0;
    memset(&self->xd, 0, sizeof self->xd);
    memset(&self->vd, 0, sizeof self->vd);
    memset(&self->cd, 0, sizeof self->cd);
    int rc = telem_block_info(buf, len, &self->info);
    if (rc)
        return rc;
    const uint8_t *sec = (const uint8_t *) buf + (self->info.size
                                                  - TELEM_BLOCK_CRC_BYTES
                                                  - self->info.value_bytes
                                                  - self->info.ts_bytes);
    self->vsec = sec + self->info.ts_bytes;
    if (!tblock_ints_dec_init(&self->ts, sec, self->info.ts_bytes,
                              self->info.npoints, self->info.first_ts)
        || !s_values_init(self))
        return TELEM_EPROTO;
    self->bad = false;
    self->prev = self->info.first_ts;
    if (info)
        *info = self->info;
    return 0;
}

static double
s_value(telem_block_iter_t *it, uint32_t i)
{
    switch (it->info.value_codec) {
    case TELEM_BLOCK_VAL_RAW: {
        uint64_t b = 0;
        for (int k = 7; k >= 0; k--)
            b = (b << 8) | it->vsec[8 * i + (uint32_t) k];
        double v;
        memcpy(&v, &b, 8);
        return v;
    }
    case TELEM_BLOCK_VAL_XOR:
        return tblock_xor_dec_next(&it->xd, i == 0);
    case TELEM_BLOCK_VAL_DECX:
    case TELEM_BLOCK_VAL_RATIO:
        if (i == 0)
            return tblock_pair_join(it->info.value_codec, it->m0, it->c0,
                                    it->pw);
        else {
            int64_t x = tblock_ints_dec_next(&it->vd);
            return tblock_pair_join(it->info.value_codec, x,
                                    tblock_ints_dec_next(&it->cd), it->pw);
        }
    default: {
        int64_t m = i == 0 ? it->m0 : tblock_ints_dec_next(&it->vd);
        if (it->info.value_codec == TELEM_BLOCK_VAL_DEC)
            return (double) m / it->pw;
        double v;
        memcpy(&v, &m, 8);
        return v;
    }
    }
}

/* The checks that can only be made once every point is out. */
static bool
s_end_ok(const telem_block_iter_t *it)
{
    if (it->prev != it->info.last_ts || !tblock_br_done(&it->ts.br))
        return false;
    if (it->info.value_codec == TELEM_BLOCK_VAL_XOR)
        return tblock_br_done(&it->xd.br);
    if (it->info.value_codec == TELEM_BLOCK_VAL_RAW)
        return true;
    if ((it->info.value_codec == TELEM_BLOCK_VAL_DECX
         || it->info.value_codec == TELEM_BLOCK_VAL_RATIO)
        && !tblock_br_done(&it->cd.br))
        return false;
    return tblock_br_done(&it->vd.br);
}

int
telem_block_iter_next(telem_block_iter_t *self, int64_t *ts, double *value)
{
    if (!self || !ts || !value)
        return TELEM_EINVAL;
    if (self->bad)
        return self->i ? TELEM_EPROTO : 0;
    if (self->i == self->info.npoints) {
        if (s_end_ok(self))
            return 0;
        self->bad = true;
        return TELEM_EPROTO;
    }
    int64_t t = self->i == 0 ? self->info.first_ts
                             : tblock_ints_dec_next(&self->ts);
    double v = s_value(self, self->i);
    if (t < self->prev || self->ts.br.bad || self->xd.br.bad
        || self->vd.br.bad || self->cd.br.bad) {
        self->bad = true;
        return TELEM_EPROTO;
    }
    self->prev = t;
    *ts = t;
    *value = v;
    self->i++;
    return 1;
}
