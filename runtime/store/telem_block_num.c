/* telem_block_num.c - what the value codecs know about numbers
 * (telem_block_int.h): decimals, decimals with corrections, ratios.
 *
 * Decimal detection: a value qualifies for exponent k when some int64 m
 * gives exactly it as (double) m / 10^k, the correctly rounded quotient,
 * which is what parsing m's decimal text gives.  A block takes the
 * smallest k that suits all its values.
 *
 * Decimals with corrections take, for every value, the nearest m at the
 * block's k and the difference of bit patterns that remains; k is chosen
 * on the first 64 values by the bits the m deltas and the corrections
 * need.
 *
 * Ratios: the fraction behind v = a / b * s is a convergent of the
 * continued fraction of |v| / s (the rounding error of v is far below the
 * gap between fractions of denominators up to 2^25), tried from the
 * smallest denominator up and kept only when it gives v back exactly.
 *
 * Nothing here writes bits; telem_block_enc.c turns the integers found
 * into residual streams.
 */
#include "telem_block_int.h"

#include <math.h>

static inline uint64_t
s_bits(double v)
{
    uint64_t b;
    memcpy(&b, &v, 8);
    return b;
}

/* --- decimal detection --------------------------------------------------- */

double
tblock_pow10(unsigned k)
{
    static const double p[TBLOCK_DEC_MAX + 1] = {
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7,
        1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    return p[k];
}

/* m with (double) m / 10^k == v, if there is one. */
static bool
s_dec_one(double v, unsigned k, int64_t *m)
{
    double p = tblock_pow10(k);
    double s = v * p;
    if (!(fabs(s) < 9.0e18))
        return false;
    int64_t c = llrint(s);
    for (int64_t d = 0; d <= 2; d++) {
        int64_t t = d == 0 ? c : d == 1 ? c - 1 : c + 1;
        if ((double) t / p == v) {
            *m = t;
            return true;
        }
    }
    return false;
}

int
tblock_dec_find(const double *v, uint32_t n, int64_t *m)
{
    unsigned k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!isfinite(v[i]) || (v[i] == 0.0 && signbit(v[i])))
            return -1;
        while (!s_dec_one(v[i], k, &m[i]))
            if (++k > TBLOCK_DEC_MAX)
                return -1;
    }
    /* Values found at a smaller k are checked again at the block's. */
    for (uint32_t i = 0; i < n; i++)
        if (!s_dec_one(v[i], k, &m[i]))
            return -1;
    return (int) k;
}

/* --- decimal with corrections ----------------------------------------- */

int64_t
tblock_decx_m(double v, unsigned k)
{
    double s = v * tblock_pow10(k);
    return fabs(s) < 9.0e18 ? llrint(s) : 0;    /* NaN fails the test */
}

void
tblock_decx_split(const double *v, uint32_t n, unsigned k, int64_t *m,
                  int64_t *c)
{
    double p = tblock_pow10(k);
    for (uint32_t i = 0; i < n; i++) {
        m[i] = tblock_decx_m(v[i], k);
        c[i] = (int64_t) (s_bits(v[i]) - s_bits((double) m[i] / p));
    }
}

unsigned
tblock_decx_pick(const double *v, uint32_t n)
{
    uint32_t probe = n < 64 ? n : 64;
    unsigned best = 0;
    uint64_t best_bits = UINT64_MAX;
    for (unsigned k = 0; k <= TBLOCK_DEC_MAX; k++) {
        double p = tblock_pow10(k);
        uint64_t bits = 0;
        int64_t prev = 0;
        for (uint32_t i = 0; i < probe; i++) {
            int64_t m = tblock_decx_m(v[i], k);
            uint64_t c = s_bits(v[i]) - s_bits((double) m / p);
            bits += tblock_bitlen(tblock_zigzag((int64_t) c))
                    + (i ? tblock_bitlen(tblock_zigzag((int64_t) (
                                 (uint64_t) m - (uint64_t) prev))) : 0);
            prev = m;
        }
        if (bits < best_bits) {
            best_bits = bits;
            best = k;
        }
    }
    return best;
}

/* --- ratios ---------------------------------------------------------------- */

/* The fraction a / b (0 < b <= TBLOCK_RATIO_BMAX) with the smallest b among
 * the convergents of v / s that gives v back as a / b * s. */
static bool
s_ratio_one(double v, double s, int64_t *a, int64_t *b)
{
    if (!isfinite(v) || (v == 0.0 && signbit(v)))
        return false;
    double x = fabs(v) / s, r = x;
    int64_t h0 = 0, h1 = 1, k0 = 1, k1 = 0;     /* convergents h/k */
    for (int it = 0; it < 64; it++) {
        if (!(r < 9.0e18))
            return false;
        int64_t q = (int64_t) floor(r);
        if (q > 0 && (h1 > (INT64_C(1) << 53) / q
                      || k1 > TBLOCK_RATIO_BMAX / q))
            return false;           /* the next convergent is too large */
        int64_t h = q * h1 + h0, k = q * k1 + k0;
        if (k > TBLOCK_RATIO_BMAX || h > (INT64_C(1) << 53))
            return false;
        h0 = h1;
        h1 = h;
        k0 = k1;
        k1 = k;
        int64_t sh = v < 0 ? -h : h;
        if ((double) sh / (double) k * s == v) {
            *a = sh;
            *b = k;
            return true;
        }
        double f = r - (double) q;
        if (f <= 0.0)
            return false;
        r = 1.0 / f;
    }
    return false;
}

int
tblock_ratio_split(const double *v, uint32_t n, int64_t *a, int64_t *b)
{
    for (int code = 1; code >= 0; code--) {
        double s = code ? 100.0 : 1.0;
        uint32_t i = 0;
        while (i < n && s_ratio_one(v[i], s, &a[i], &b[i]))
            i++;
        if (i == n)
            return code;
    }
    return -1;
}
