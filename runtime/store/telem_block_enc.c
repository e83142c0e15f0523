/* telem_block_enc.c - encoding a block from arrays (telem_block.h):
 * choosing the encodings and writing the sections.
 *
 * Encoding plans every candidate before writing anything: the timestamps
 * as residual streams (order 2, order 1 about no step and the median
 * step, order 0 about the median), the values as raw doubles, XOR floats,
 * their bit patterns as integers, decimals with corrections, and - when
 * every value qualifies - their decimal integers m, or the integers of
 * ratios a / b.  Each plan knows
 * its exact size in bits, so only the smallest is written.  XOR has no
 * cheaper way to know its size than being written, so it is written once
 * into scratch and copied if it wins.
 *
 * Calls go down only: this file uses telem_block.c (the header), the
 * numbers (telem_block_num.c) and the streams (telem_block_codec.c).
 */
#include "telem_block.h"

#include <stdlib.h>

#include "telem_block_int.h"
#include "telem_crc.h"

void
telem_block_opts_default(telem_block_opts_t *opts)
{
    opts->ts_unit_ns = 1;
    opts->max_points = 1024;
    opts->value_codec = TELEM_BLOCK_VAL_AUTO;
}

/* --- encoding ------------------------------------------------------------- */

/* Scratch of one encoding. */
typedef struct {
    int64_t *x;         /* timestamps as coded (rounded), or the m */
    int64_t *m;
    int64_t *tmp;
    int64_t *b;         /* the values' bit patterns */
    int64_t *px[2], *py[2];     /* DECX (m, c) and RATIO (a, b) */
    uint64_t *z, *zs, *zv, *zb;
    uint64_t *zx[2], *zy[2];
    tblock_bw_t xor_w;  /* XOR attempt */
} s_scratch_t;

static void
s_scratch_free(s_scratch_t *s)
{
    free(s->x);
    free(s->xor_w.buf);
}

static int
s_scratch_new(s_scratch_t *s, uint32_t n)
{
    memset(s, 0, sizeof *s);
    size_t words = (size_t) n * 16;
    s->x = malloc(words * 8);
    size_t xor_cap = (size_t) n * 10 + 16;
    s->xor_w.buf = malloc(xor_cap);
    if (!s->x || !s->xor_w.buf) {
        s_scratch_free(s);
        return TELEM_ENOMEM;
    }
    s->xor_w.cap = xor_cap;
    s->xor_w.fixed = true;
    s->m = s->x + n;
    s->tmp = s->m + n;
    s->b = s->tmp + n;
    s->px[0] = s->b + n;
    s->py[0] = s->px[0] + n;
    s->px[1] = s->py[0] + n;
    s->py[1] = s->px[1] + n;
    s->z = (uint64_t *) (s->py[1] + n);
    s->zs = s->z + n;
    s->zv = s->zs + n;
    s->zb = s->zv + n;
    s->zx[0] = s->zb + n;
    s->zy[0] = s->zx[0] + n;
    s->zx[1] = s->zy[0] + n;
    s->zy[1] = s->zx[1] + n;
    return 0;
}

int64_t
tblock_round(int64_t ts, int64_t unit)
{
    if (unit <= 1)
        return ts;
    int64_t q = ts / unit, r = ts % unit;
    if (r < 0) {
        if (q * unit < INT64_MIN + unit)
            return q * unit;            /* rounding down would overflow */
        q--;
    }
    return q * unit;
}

/* The value plan chosen: codec, and for DEC and BITS the stream (pp), for
 * DECX and RATIO the streams of x (pp) and y (pc) and their parameter. */
typedef struct {
    telem_block_vcodec_t codec;
    int k;                  /* DEC, DECX: the exponent; RATIO: the scale */
    tblock_ints_params_t pp, pc;
    uint64_t bits;
} s_vplan_t;

/* Bits of a DEC (with its exponent byte) or BITS section. */
static uint64_t
s_ints_section_bits(bool dec, int64_t x0, uint64_t stream_bits)
{
    uint8_t tmp[10];
    return (dec ? 8 + 8 * (uint64_t) tblock_uvar_put(tmp, tblock_zigzag(x0))
                : 64)
           + stream_bits;
}

/* Plans the bit patterns as integers (constant and slowly moving values
 * of one sign and binade). */
static void
s_plan_bits(const double *val, uint32_t n, telem_block_vcodec_t want,
            s_scratch_t *s, s_vplan_t *vp)
{
    memcpy(s->b, val, (size_t) n * 8);
    tblock_ints_params_t pp;
    uint64_t bits = s_ints_section_bits(false, s->b[0],
                                        tblock_ints_best(s->b, n, s->zb,
                                                         s->zs, s->tmp, &pp));
    if (want == TELEM_BLOCK_VAL_BITS || bits < vp->bits) {
        vp->codec = TELEM_BLOCK_VAL_BITS;
        vp->bits = bits;
        vp->pp = pp;
    }
}

static size_t
s_uvar_len(uint64_t v)
{
    uint8_t tmp[10];
    return tblock_uvar_put(tmp, v);
}

/* Plans a two-stream codec (DECX: s->px[0], s->py[0]; RATIO: index 1)
 * with its parameter. */
static void
s_plan_pair(uint32_t n, telem_block_vcodec_t codec, int param,
            telem_block_vcodec_t want, s_scratch_t *s, s_vplan_t *vp)
{
    int i = codec == TELEM_BLOCK_VAL_RATIO;
    tblock_ints_params_t px, py;
    uint64_t xbits = tblock_ints_best(s->px[i], n, s->zx[i], s->zs, s->tmp,
                                      &px);
    uint64_t ybits = tblock_ints_best(s->py[i], n, s->zy[i], s->zs, s->tmp,
                                      &py);
    xbits = (xbits + 7) / 8 * 8;
    uint64_t bits = 8 + 8 * (s_uvar_len(tblock_zigzag(s->px[i][0]))
                             + s_uvar_len(xbits / 8)
                             + s_uvar_len(tblock_zigzag(s->py[i][0])))
                    + xbits + ybits;
    if (want == codec || bits < vp->bits) {
        vp->codec = codec;
        vp->k = param;
        vp->bits = bits;
        vp->pp = px;
        vp->pc = py;
    }
}

/* Plans the values; the XOR attempt, when made, is left in s->xor_w. */
static int
s_plan_values(const double *val, uint32_t n, telem_block_vcodec_t want,
              s_scratch_t *s, s_vplan_t *vp)
{
    vp->codec = TELEM_BLOCK_VAL_RAW;
    vp->bits = (uint64_t) n * 64;
    if (want == TELEM_BLOCK_VAL_RAW)
        return 0;
    if (want == TELEM_BLOCK_VAL_AUTO || want == TELEM_BLOCK_VAL_XOR) {
        tblock_xor_t xs = {0};
        for (uint32_t i = 0; i < n; i++)
            tblock_xor_put(&s->xor_w, &xs, val[i]);
        uint64_t bits = tblock_bw_bits(&s->xor_w);
        if (want == TELEM_BLOCK_VAL_XOR || bits < vp->bits) {
            vp->codec = TELEM_BLOCK_VAL_XOR;
            vp->bits = bits;
        }
    }
    if (want == TELEM_BLOCK_VAL_AUTO || want == TELEM_BLOCK_VAL_BITS)
        s_plan_bits(val, n, want, s, vp);
    if (want == TELEM_BLOCK_VAL_AUTO || want == TELEM_BLOCK_VAL_DECX) {
        int k = (int) tblock_decx_pick(val, n);
        tblock_decx_split(val, n, (unsigned) k, s->px[0], s->py[0]);
        s_plan_pair(n, TELEM_BLOCK_VAL_DECX, k, want, s, vp);
    }
    if (want == TELEM_BLOCK_VAL_AUTO || want == TELEM_BLOCK_VAL_RATIO) {
        int scale = tblock_ratio_split(val, n, s->px[1], s->py[1]);
        if (scale >= 0)
            s_plan_pair(n, TELEM_BLOCK_VAL_RATIO, scale, want, s, vp);
        else if (want == TELEM_BLOCK_VAL_RATIO)
            return TELEM_EINVAL;
    }
    if (want == TELEM_BLOCK_VAL_AUTO || want == TELEM_BLOCK_VAL_DEC) {
        int k = tblock_dec_find(val, n, s->m);
        if (k < 0)
            return want == TELEM_BLOCK_VAL_DEC ? TELEM_EINVAL : 0;
        tblock_ints_params_t pp;
        uint64_t bits = s_ints_section_bits(true, s->m[0],
                                   tblock_ints_best(s->m, n, s->zv, s->zs,
                                                    s->tmp, &pp));
        if (want == TELEM_BLOCK_VAL_DEC || bits < vp->bits) {
            vp->codec = TELEM_BLOCK_VAL_DEC;
            vp->k = k;
            vp->bits = bits;
            vp->pp = pp;
        }
    }
    return 0;
}


static uint32_t
s_nres(const tblock_ints_params_t *pp, uint32_t n)
{
    uint32_t skip = pp->order == 2 ? 2 : 1;
    return n > skip ? n - skip : 0;
}

/* Writes one residual stream: parameters, residuals, padding. */
static void
s_write_stream(tblock_bw_t *w, const tblock_ints_params_t *pp,
               const uint64_t *z, uint32_t n)
{
    tblock_ints_write_params(w, pp, n);
    for (uint32_t i = 0, nz = s_nres(pp, n); i < nz; i++)
        tblock_ints_write_one(w, pp, z[i]);
    tblock_bw_flush(w);
}

/* u8 param | zigzag x[0] | uvarint bytes of the x stream | x stream |
 * zigzag y[0] | y stream. */
static void
s_write_pair(tblock_bw_t *w, uint32_t n, const s_vplan_t *vp,
             const s_scratch_t *s)
{
    int i = vp->codec == TELEM_BLOCK_VAL_RATIO;
    uint8_t head[32];
    size_t k = 0;
    tblock_bw_t xw = {0};
    s_write_stream(&xw, &vp->pp, s->zx[i], n);
    head[k++] = (uint8_t) vp->k;
    k += tblock_uvar_put(head + k, tblock_zigzag(s->px[i][0]));
    k += tblock_uvar_put(head + k, xw.len);
    tblock_bw_bytes(w, head, k);
    tblock_bw_bytes(w, xw.buf, xw.len);
    w->oom |= xw.oom;
    free(xw.buf);
    k = tblock_uvar_put(head, tblock_zigzag(s->py[i][0]));
    tblock_bw_bytes(w, head, k);
    s_write_stream(w, &vp->pc, s->zy[i], n);
}

/* Writes the value section into w. */
static void
s_write_values(tblock_bw_t *w, const double *val, uint32_t n,
               const s_vplan_t *vp, const s_scratch_t *s)
{
    if (vp->codec == TELEM_BLOCK_VAL_RAW) {
        for (uint32_t i = 0; i < n; i++) {
            uint64_t b;
            uint8_t le[8];
            memcpy(&b, &val[i], 8);
            for (int k = 0; k < 8; k++)
                le[k] = (uint8_t) (b >> (8 * k));
            tblock_bw_bytes(w, le, 8);
        }
        return;
    }
    if (vp->codec == TELEM_BLOCK_VAL_XOR) {
        tblock_bw_bytes(w, s->xor_w.buf, s->xor_w.len);
        uint8_t tail[8];
        tblock_bw_bytes(w, tail, tblock_bw_tail(&s->xor_w, tail));
        return;
    }
    if (vp->codec == TELEM_BLOCK_VAL_DECX
        || vp->codec == TELEM_BLOCK_VAL_RATIO) {
        s_write_pair(w, n, vp, s);
        return;
    }
    bool dec = vp->codec == TELEM_BLOCK_VAL_DEC;
    const uint64_t *z = dec ? s->zv : s->zb;
    uint8_t head[11];
    size_t k = 0;
    if (dec) {
        head[k++] = (uint8_t) vp->k;
        k += tblock_uvar_put(head + k, tblock_zigzag(s->m[0]));
    }
    else {
        for (; k < 8; k++)
            head[k] = (uint8_t) ((uint64_t) s->b[0] >> (8 * k));
    }
    tblock_bw_bytes(w, head, k);
    tblock_ints_write_params(w, &vp->pp, n);
    for (uint32_t i = 0, nz = s_nres(&vp->pp, n); i < nz; i++)
        tblock_ints_write_one(w, &vp->pp, z[i]);
    tblock_bw_flush(w);
}

void
tblock_write_ts(tblock_bw_t *w, const tblock_ints_params_t *pp,
                const uint64_t *z, uint32_t n)
{
    tblock_ints_write_params(w, pp, n);
    for (uint32_t i = 0, nz = s_nres(pp, n); i < nz; i++)
        tblock_ints_write_one(w, pp, z[i]);
    tblock_bw_flush(w);
}

int
tblock_assemble(const telem_block_info_t *hdr, const tblock_bw_t *tsw,
                const tblock_bw_t *vw, unsigned char **out, size_t *out_len)
{
    telem_block_info_t h = *hdr;
    h.ts_bytes = tsw->len;
    h.value_bytes = vw->len;
    uint8_t head[TELEM_BLOCK_HEADER_MAX];
    size_t hl = tblock_header_put(head, &h);
    size_t total = hl + h.ts_bytes + h.value_bytes + TELEM_BLOCK_CRC_BYTES;
    unsigned char *p = malloc(total);
    if (!p)
        return TELEM_ENOMEM;
    memcpy(p, head, hl);
    memcpy(p + hl, tsw->buf, h.ts_bytes);
    memcpy(p + hl + h.ts_bytes, vw->buf, h.value_bytes);
    uint32_t crc = telem_crc32c(0, p, total - TELEM_BLOCK_CRC_BYTES);
    for (int i = 0; i < 4; i++)
        p[total - 4 + i] = (uint8_t) (crc >> (8 * i));
    *out = p;
    *out_len = total;
    return 0;
}

static bool
s_opts_ok(const telem_block_opts_t *o)
{
    return o->ts_unit_ns >= 1 && o->max_points >= 1
           && o->max_points <= TELEM_BLOCK_MAX_POINTS
           && (o->value_codec <= TELEM_BLOCK_VAL_RATIO
               || o->value_codec == TELEM_BLOCK_VAL_AUTO);
}

bool
tblock_opts_ok(const telem_block_opts_t *o)
{
    return s_opts_ok(o);
}

/* Encodes with scratch already allocated. */
static int
s_encode(const int64_t *ts, const double *val, uint32_t n,
         const telem_block_opts_t *o, s_scratch_t *s, unsigned char **out,
         size_t *out_len)
{
    for (uint32_t i = 0; i < n; i++) {
        s->x[i] = tblock_round(ts[i], o->ts_unit_ns);
        if (i > 0 && s->x[i] < s->x[i - 1])
            return TELEM_EINVAL;
    }
    tblock_ints_params_t tp;
    tblock_ints_best(s->x, n, s->z, s->zs, s->tmp, &tp);
    s_vplan_t vp;
    int rc = s_plan_values(val, n, o->value_codec, s, &vp);
    if (rc)
        return rc;
    tblock_bw_t tsw = {0}, vw = {0};
    tblock_write_ts(&tsw, &tp, s->z, n);
    s_write_values(&vw, val, n, &vp, s);
    telem_block_info_t h = {.npoints = n, .first_ts = s->x[0],
                            .last_ts = s->x[n - 1], .value_codec = vp.codec};
    rc = tsw.oom || vw.oom ? TELEM_ENOMEM
                           : tblock_assemble(&h, &tsw, &vw, out, out_len);
    free(tsw.buf);
    free(vw.buf);
    return rc;
}

int
telem_block_encode(const int64_t *ts, const double *val, uint32_t n,
                   const telem_block_opts_t *opts, unsigned char **out,
                   size_t *out_len)
{
    telem_block_opts_t o;
    if (opts)
        o = *opts;
    else
        telem_block_opts_default(&o);
    if (!ts || !val || !out || !out_len || n == 0
        || n > TELEM_BLOCK_MAX_POINTS || !s_opts_ok(&o))
        return TELEM_EINVAL;
    s_scratch_t s;
    if (s_scratch_new(&s, n))
        return TELEM_ENOMEM;
    int rc = s_encode(ts, val, n, &o, &s, out, out_len);
    s_scratch_free(&s);
    return rc;
}

