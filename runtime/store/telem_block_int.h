/* telem_block_int.h - PRIVATE to the block codec (runtime/store/telem_block*.c);
 * nothing else includes it.  telem_block.h is the public API and
 * docs/store.md the byte layout.
 *
 * The codec is split by responsibility, each file calling only the ones
 * below it:
 *   telem_block_writer.c  the open block: O(1) appends, snapshots, sealing
 *   telem_block_iter.c    the iterator
 *   telem_block_enc.c     encoding from arrays: planning every codec,
 *                         writing the smallest
 *   telem_block.c         the block: header, checksum, decoding
 *   telem_block_num.c     decimals, decimals with corrections, ratios
 *   telem_block_codec.c   the streams: integer residuals in chosen bit
 *                         widths, XOR floats, varints, CRC-32C
 *   telem_block_int.h     bit writer and bit reader (inline), the streams'
 *                         prototypes
 * Internal names carry the tblock_ prefix.
 *
 * Bits are written most significant first into bytes; a stream ends with
 * zero bits up to its last byte.  The reader never reads outside the
 * bytes it is given: reading past the end sets `bad` and yields zeros.
 */
#ifndef TELEM_BLOCK_INT_H
#define TELEM_BLOCK_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "telem_block.h"

/* --- bit writer -------------------------------------------------------- */

typedef struct {
    uint8_t *buf;
    size_t len;         /* whole bytes written */
    size_t cap;
    uint64_t acc;       /* pending bits, right-aligned */
    unsigned nacc;      /* how many (0..63) */
    bool fixed;         /* buf is the caller's: never grown */
    bool oom;           /* a write did not fit */
} tblock_bw_t;

/* Makes room for 8 more bytes; sets oom on failure. */
bool tblock_bw_reserve(tblock_bw_t *w, size_t more);

static inline void
tblock_bw_emit(tblock_bw_t *w, uint64_t word)
{
    if (w->cap - w->len < 8 && !tblock_bw_reserve(w, 8))
        return;
    word = __builtin_bswap64(word);
    memcpy(w->buf + w->len, &word, 8);
    w->len += 8;
}

/* Appends the low `n` bits of v (0 <= n <= 64). */
static inline void
tblock_bw_put(tblock_bw_t *w, uint64_t v, unsigned n)
{
    if (n == 0)
        return;
    if (n < 64)
        v &= (UINT64_C(1) << n) - 1;
    unsigned room = 64 - w->nacc;
    if (n < room) {
        w->acc = (w->acc << n) | v;
        w->nacc += n;
        return;
    }
    unsigned rest = n - room;
    uint64_t top = room == 64 ? v >> rest : (w->acc << room) | (v >> rest);
    tblock_bw_emit(w, top);
    w->acc = rest ? v & ((UINT64_C(1) << rest) - 1) : 0;
    w->nacc = rest;
}

/* Bits written so far. */
static inline uint64_t
tblock_bw_bits(const tblock_bw_t *w)
{
    return (uint64_t) w->len * 8 + w->nacc;
}

/* Writes the pending bits, padded with zeros to a whole byte, and leaves
 * nothing pending. */
void tblock_bw_flush(tblock_bw_t *w);

/* Appends whole bytes (the writer must hold no pending bits). */
void tblock_bw_bytes(tblock_bw_t *w, const void *p, size_t n);

/* Copies the pending bits, padded, to out (at most 8 bytes); returns how
 * many bytes.  The writer is unchanged. */
size_t tblock_bw_tail(const tblock_bw_t *w, uint8_t out[8]);

/* --- bit reader -------------------------------------------------------- */

typedef struct {
    const uint8_t *p;
    size_t nbytes;
    uint64_t pos;       /* bit position */
    uint64_t nbits;
    bool bad;           /* read past the end */
} tblock_br_t;

static inline void
tblock_br_init(tblock_br_t *r, const uint8_t *p, size_t nbytes)
{
    r->p = p;
    r->nbytes = nbytes;
    r->pos = 0;
    r->nbits = (uint64_t) nbytes * 8;
    r->bad = false;
}

/* The 64 bits starting at byte i, zero beyond the end. */
static inline uint64_t
tblock_br_word(const tblock_br_t *r, size_t i)
{
    uint64_t w = 0;
    if (i + 8 <= r->nbytes) {
        memcpy(&w, r->p + i, 8);
        return __builtin_bswap64(w);
    }
    for (size_t k = 0; k < 8; k++)
        w = (w << 8) | (i + k < r->nbytes ? r->p[i + k] : 0);
    return w;
}

/* The next n bits (1 <= n <= 57) without consuming them; zeros past the
 * end. */
static inline uint64_t
tblock_br_peek(const tblock_br_t *r, unsigned n)
{
    size_t byte = (size_t) (r->pos >> 3);
    unsigned off = (unsigned) (r->pos & 7);
    return (tblock_br_word(r, byte) << off) >> (64 - n);
}

/* Reads n bits (0 <= n <= 64). */
static inline uint64_t
tblock_br_get(tblock_br_t *r, unsigned n)
{
    if (n == 0)
        return 0;
    if (r->pos + n > r->nbits) {
        r->bad = true;
        r->pos = r->nbits;
        return 0;
    }
    size_t byte = (size_t) (r->pos >> 3);
    unsigned off = (unsigned) (r->pos & 7);
    uint64_t v = (tblock_br_word(r, byte) << off) >> (64 - n);
    if (off + n > 64)
        v |= (uint64_t) r->p[byte + 8] >> (8 - (off + n - 64));
    r->pos += n;
    return v;
}

/* True when the stream was read without error up to its last byte and its
 * padding bits are zero. */
bool tblock_br_done(const tblock_br_t *r);

/* --- varints and small helpers ---------------------------------------- */

static inline uint64_t
tblock_zigzag(int64_t v)
{
    return ((uint64_t) v << 1) ^ (uint64_t) (v >> 63);
}

static inline int64_t
tblock_unzigzag(uint64_t z)
{
    return (int64_t) (z >> 1) ^ -(int64_t) (z & 1);
}

/* Bits needed to hold z (0 for 0). */
static inline unsigned
tblock_bitlen(uint64_t z)
{
    return z ? 64u - (unsigned) __builtin_clzll(z) : 0u;
}

/* LEB128 unsigned varint into p (at most 10 bytes); returns the length. */
size_t tblock_uvar_put(uint8_t *p, uint64_t v);

/* Reads a varint from *p (< end), advancing *p.  Returns false when it
 * runs past end or is longer than 10 bytes or overflows 64 bits. */
bool tblock_uvar_get(const uint8_t **p, const uint8_t *end, uint64_t *v);


/* --- integer residual streams ------------------------------------------ *
 *
 * A sequence x[0..n) of int64 (timestamps, or the integers of a decimal
 * value stream), x[0] stored elsewhere, is coded as residuals of order 0
 * (r = x[i] - base), order 1 (r = x[i] - x[i-1] - base) or order 2
 * (r = d[i] - d[i-1], d[i] = x[i] - x[i-1], d[1] stored as a parameter),
 * for i >= 1 (order 2: i >= 2), all arithmetic modulo 2^64; every
 * residual divided by their greatest common divisor g; zig-zagged; and
 * written in one of 1-4 bit widths chosen for the block, each announced by
 * a prefix code ('' | '0' '1' | '0' '10' '11' | '0' '10' '110' '111').
 * Parameters, byte-aligned, before the bits:
 *   u8 (order | (nwidths - 1) << 4)   order 0, 1 or 2
 *   zigzag varint base (orders 0, 1) or d[1] (order 2, only when n >= 2)
 *   uvarint g (>= 1)
 *   nwidths x u8 width (0..64), in prefix-code order
 */

#define TBLOCK_WIDTHS_MAX 4

typedef struct {
    unsigned order;                 /* 0, 1 or 2 */
    int64_t base;                   /* orders 0 and 1 */
    int64_t d1;                     /* order 2 */
    uint64_t g;                     /* >= 1 */
    unsigned nw;                    /* 1..4 */
    uint8_t width[TBLOCK_WIDTHS_MAX];
    uint8_t pick[65];               /* bit length -> width index */
} tblock_ints_params_t;

/* Plans the residual stream of x[0..n) with the given order (0, 1 or 2)
 * and base (orders 0, 1): fills z[0..n-1) (zig-zagged residuals over g; z needs n
 * elements) and *pp, and returns the stream's size in bits, parameters
 * included. */
uint64_t tblock_ints_plan(const int64_t *x, uint32_t n, unsigned order,
                          int64_t base, uint64_t *z, tblock_ints_params_t *pp);

/* Best plan among order 2, order 1 (base 0 and the median step) and
 * order 0 (base the median); z and zs are scratch of n elements each, the
 * best residuals end in z; scratch holds n int64.  Returns its size in
 * bits. */
uint64_t tblock_ints_best(const int64_t *x, uint32_t n, uint64_t *z,
                          uint64_t *zs, int64_t *scratch,
                          tblock_ints_params_t *pp);

/* The fixed plan of an open block's timestamps: order 2 in units of g,
 * widths 0, 6, 14, 64. */
void tblock_ints_default(tblock_ints_params_t *pp, uint64_t g);

/* Writes the parameters (d1 only when n >= 2) then the n - 1 residuals
 * z[0..n-1) (bits only; the caller flushes). */
void tblock_ints_write_params(tblock_bw_t *w, const tblock_ints_params_t *pp,
                              uint32_t n);
void tblock_ints_write_one(tblock_bw_t *w, const tblock_ints_params_t *pp,
                           uint64_t z);

/* Decoder state of one residual stream. */
typedef struct {
    tblock_ints_params_t pp;
    tblock_br_t br;
    uint64_t prev;                  /* x[i-1] */
    uint64_t step;                  /* d[i-1] (order 2) */
    bool first2;                    /* order 2: x[1] = x[0] + d1 is next */
    uint8_t code[8];                /* 3 peeked bits -> index | len << 4 */
} tblock_ints_dec_t;

/* Reads the parameters from p[0..len) and prepares to yield x[1..n) from
 * x0.  Returns false on malformed parameters. */
bool tblock_ints_dec_init(tblock_ints_dec_t *d, const uint8_t *p, size_t len,
                          uint32_t n, int64_t x0);

static inline int64_t
tblock_ints_dec_next(tblock_ints_dec_t *d)
{
    if (d->first2) {
        d->first2 = false;
        d->step = (uint64_t) d->pp.d1;
        d->prev += d->step;
        return (int64_t) d->prev;
    }
    unsigned idx = 0;
    if (d->pp.nw > 1) {
        uint8_t c = d->code[tblock_br_peek(&d->br, 3)];
        idx = c & 15;
        d->br.pos += c >> 4;
        if (d->br.pos > d->br.nbits)
            d->br.bad = true;
    }
    uint64_t r = (uint64_t) tblock_unzigzag(tblock_br_get(&d->br,
                                                          d->pp.width[idx]))
                 * d->pp.g;
    if (d->pp.order == 2)
        d->step += r;
    else if (d->pp.order == 1)
        d->step = r + (uint64_t) d->pp.base;
    else
        d->step = r + (uint64_t) d->pp.base - d->prev;
    d->prev += d->step;
    return (int64_t) d->prev;
}

/* --- XOR float stream --------------------------------------------------- */

/* Encoder state: the previous value's bits and window. */
typedef struct {
    uint64_t prev;
    unsigned lead, trail;       /* window; lead + trail < 64 when valid */
    bool have;                  /* a value was written */
    bool window;                /* the window is valid */
} tblock_xor_t;

void tblock_xor_put(tblock_bw_t *w, tblock_xor_t *s, double v);

typedef struct {
    tblock_br_t br;
    uint64_t prev;
    unsigned lead, trail;
    bool window;
} tblock_xor_dec_t;

/* Prepares to decode; the first call of next yields the first value. */
void tblock_xor_dec_init(tblock_xor_dec_t *d, const uint8_t *p, size_t len);
double tblock_xor_dec_next(tblock_xor_dec_t *d, bool first);

/* --- decimal detection -------------------------------------------------- */

#define TBLOCK_DEC_MAX 15           /* largest decimal exponent tried */

/* 10^k as a double, exact for k <= 22. */
double tblock_pow10(unsigned k);

/* Finds the smallest k <= TBLOCK_DEC_MAX with every v[i] == m[i] / 10^k
 * exactly (m[i] int64; -0.0, NaN and infinities never qualify), filling
 * m[0..n).  Returns k, or -1. */
int tblock_dec_find(const double *v, uint32_t n, int64_t *m);

/* --- decimal with corrections --------------------------------------------
 *
 * Any value v is m / 10^k plus a correction: m = llrint(v * 10^k) (0 when
 * that is not finite or leaves int64) and c = bits(v) - bits(m / 10^k) as
 * int64, so v = from_bits(bits((double) m / 10^k) + c) exactly.  Values
 * computed from decimals (differences of timings in seconds) leave small
 * corrections.  */

int64_t tblock_decx_m(double v, unsigned k);

/* m[0..n) and c[0..n) of v[0..n) at exponent k. */
void tblock_decx_split(const double *v, uint32_t n, unsigned k, int64_t *m,
                       int64_t *c);

/* The exponent whose m deltas and corrections take the fewest bits on the
 * first 64 values. */
unsigned tblock_decx_pick(const double *v, uint32_t n);

static inline double
tblock_decx_join(int64_t m, int64_t c, double p10)
{
    double a = (double) m / p10;
    uint64_t b;
    memcpy(&b, &a, 8);
    b += (uint64_t) c;
    memcpy(&a, &b, 8);
    return a;
}

/* --- ratios -------------------------------------------------------------
 *
 * A value computed as a ratio of integers, optionally in percent, is
 * v = (double) a / (double) b * s with s 1 or 100: a fraction a / b is
 * found from v by continued fractions (denominators up to 2^25) and kept
 * only when that expression gives v back exactly. */

#define TBLOCK_RATIO_BMAX (INT64_C(1) << 25)

/* Fills a[0..n) and b[0..n) for v[0..n) and returns the scale code (0 for
 * 1, 1 for 100), or -1 when some value is not such a ratio. */
int tblock_ratio_split(const double *v, uint32_t n, int64_t *a, int64_t *b);

/* --- shared by the block's files (telem_block.c) ------------------------ */

/* Writes a header into p (TELEM_BLOCK_HEADER_MAX bytes); returns its
 * length.  Uses npoints, first_ts, last_ts, value_codec, ts_bytes and
 * value_bytes. */
size_t tblock_header_put(uint8_t *p, const telem_block_info_t *in);

/* ts rounded down to a multiple of unit (up when down would overflow). */
int64_t tblock_round(int64_t ts, int64_t unit);

/* Writes a timestamp section: parameters, residuals z, padding. */
void tblock_write_ts(tblock_bw_t *w, const tblock_ints_params_t *pp,
                     const uint64_t *z, uint32_t n);

/* Builds a block from a header (sizes taken from the two sections) and the
 * two sections into a malloc'd buffer.  Returns 0 or TELEM_ENOMEM. */
int tblock_assemble(const telem_block_info_t *hdr, const tblock_bw_t *tsw,
                    const tblock_bw_t *vw, unsigned char **out,
                    size_t *out_len);

bool tblock_opts_ok(const telem_block_opts_t *o);

/* Reads a DEC value section's exponent k and first integer m0 (dec), or
 * a BITS section's first bit pattern (k = 0); *rest receives where its
 * residual stream starts.  False when malformed. */
bool tblock_ints_head(const uint8_t *sec, size_t len, bool dec, unsigned *k,
                      int64_t *m0, const uint8_t **rest);

/* A value section of two residual streams (DECX: m and corrections c;
 * RATIO: numerators a and denominators b): u8 param | zigzag x[0] |
 * uvarint xlen | x stream (xlen bytes) | zigzag y[0] | y stream (the
 * rest).  The parameter is k (DECX, 0..15) or the scale (RATIO: 0 for 1,
 * 1 for 100). */
typedef struct {
    unsigned param;
    int64_t x0, y0;
    const uint8_t *x, *y;
    size_t xlen, ylen;
} tblock_pair_t;

/* Splits a two-stream section of the given codec; false when malformed. */
bool tblock_pair_head(const uint8_t *sec, size_t len,
                      telem_block_vcodec_t codec, tblock_pair_t *h);

/* A value from its two integers: DECX or RATIO with the section's
 * parameter turned into `f` by tblock_pair_factor(). */
static inline double
tblock_pair_join(telem_block_vcodec_t codec, int64_t x, int64_t y, double f)
{
    return codec == TELEM_BLOCK_VAL_DECX ? tblock_decx_join(x, y, f)
                                         : (double) x / (double) y * f;
}

static inline double
tblock_pair_factor(telem_block_vcodec_t codec, unsigned param)
{
    return codec == TELEM_BLOCK_VAL_DECX ? tblock_pow10(param)
                                         : param ? 100.0 : 1.0;
}

#endif
