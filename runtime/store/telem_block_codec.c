/* telem_block_codec.c - the streams inside a block (telem_block_int.h).
 *
 * Integer residual streams: timestamps and the integers of decimal values
 * become residuals of order 0 (values minus a base), 1 (deltas minus a
 * base) or 2 (delta of deltas), divided by their greatest common divisor.  Sampled series leave
 * residuals that are mostly zero or small, and a handful of sizes: each
 * block chooses up to four bit widths, with a prefix code naming the
 * width of each residual.  The widths and their prefix lengths are chosen
 * by trying every set of at most four candidate widths (the bit lengths
 * that occur, at most 8 of them), the widths holding the most residuals
 * getting the shortest codes, costing each from a histogram: a constant step then costs no bit at all,
 * nanosecond jitter of a few microseconds ~13 bits, where fixed widths
 * would waste several.
 *
 * XOR floats follow the Gorilla paper's scheme: '0' for a repeated value,
 * '10' + the meaningful bits when they fit the previous window, '11' + 6
 * bits of leading zeros + 6 bits of length - 1 + the bits otherwise.
 *
 * CRC-32C uses the SSE4.2 instruction when the CPU has it (one lane:
 * blocks are small), else a bitwise loop with the same result.
 */
#include "telem_block_int.h"

#include <math.h>
#include <stdlib.h>

#include "telem_grow.h"

/* --- bit writer --------------------------------------------------------- */

bool
tblock_bw_reserve(tblock_bw_t *w, size_t more)
{
    if (w->cap - w->len >= more)
        return true;
    if (w->fixed || telem_grow((void **) &w->buf, &w->cap, w->len + more, 1,
                               64)) {
        w->oom = true;
        return false;
    }
    return true;
}

void
tblock_bw_flush(tblock_bw_t *w)
{
    uint8_t tail[8];
    size_t n = tblock_bw_tail(w, tail);
    w->acc = 0;
    w->nacc = 0;
    tblock_bw_bytes(w, tail, n);
}

void
tblock_bw_bytes(tblock_bw_t *w, const void *p, size_t n)
{
    if (n == 0 || !tblock_bw_reserve(w, n))
        return;
    memcpy(w->buf + w->len, p, n);
    w->len += n;
}

size_t
tblock_bw_tail(const tblock_bw_t *w, uint8_t out[8])
{
    size_t n = (w->nacc + 7) / 8;
    uint64_t v = w->nacc ? w->acc << (64 - w->nacc) : 0;
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t) (v >> (56 - 8 * i));
    return n;
}

bool
tblock_br_done(const tblock_br_t *r)
{
    if (r->bad || r->pos > r->nbits || r->nbits - r->pos >= 8)
        return false;
    unsigned rest = (unsigned) (r->nbits - r->pos);
    return rest == 0 || (r->p[r->nbytes - 1] & ((1u << rest) - 1)) == 0;
}

/* --- varints ------------------------------------------------------------ */

size_t
tblock_uvar_put(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t) (v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t) v;
    return n;
}

bool
tblock_uvar_get(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t x = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (*p >= end)
            return false;
        uint8_t b = *(*p)++;
        if (shift == 63 && b > 1)
            return false;               /* more than 64 bits */
        x |= (uint64_t) (b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return true;
        }
    }
    return false;
}

static size_t
s_uvar_len(uint64_t v)
{
    size_t n = 1;
    for (; v >= 0x80; v >>= 7)
        n++;
    return n;
}

/* --- choosing widths ---------------------------------------------------- */

#define S_CAND_MAX 8

typedef struct {
    unsigned cand[S_CAND_MAX];      /* candidate widths, ascending */
    uint64_t cnt[S_CAND_MAX];       /* residuals whose narrowest is cand[j] */
    unsigned nc;
    uint64_t best;                  /* bits of the best so far */
    unsigned bw[TBLOCK_WIDTHS_MAX]; /* its widths, ascending */
    unsigned bl[TBLOCK_WIDTHS_MAX]; /* and their code lengths */
    unsigned bn;
} s_search_t;

/* Picks the candidate widths from a histogram of bit lengths: every length
 * that occurs, or 8 of them spread by count (always 0 if present and the
 * largest). */
static void
s_candidates(s_search_t *s, const uint64_t hist[65], uint64_t total)
{
    unsigned present[65], np = 0;
    for (unsigned b = 0; b <= 64; b++)
        if (hist[b])
            present[np++] = b;
    s->nc = 0;
    if (np <= S_CAND_MAX) {
        for (unsigned i = 0; i < np; i++)
            s->cand[s->nc++] = present[i];
    }
    else {
        uint64_t cum = 0;
        unsigned next = 1;
        if (hist[0])
            s->cand[s->nc++] = 0;
        for (unsigned i = 0; i < np - 1 && s->nc < S_CAND_MAX - 1; i++) {
            cum += hist[present[i]];
            if (cum * (S_CAND_MAX - 1) >= total * next) {
                if (!s->nc || s->cand[s->nc - 1] != present[i])
                    s->cand[s->nc++] = present[i];
                while (cum * (S_CAND_MAX - 1) >= total * next)
                    next++;
            }
        }
        s->cand[s->nc++] = present[np - 1];
    }
    memset(s->cnt, 0, sizeof s->cnt);
    unsigned j = 0;
    for (unsigned b = 0; b <= 64; b++) {
        while (j < s->nc && s->cand[j] < b)
            j++;
        if (hist[b])
            s->cnt[j] += hist[b];
    }
}

/* Costs the widths w[0..k) (indexes into cand, ascending, the last one the
 * largest candidate): each residual takes the narrowest width that holds
 * it, and the widths holding the most residuals get the shortest codes
 * (lengths 0 | 1 1 | 1 2 2 | 1 2 3 3). */
static void
s_try(s_search_t *s, const unsigned *w, unsigned k)
{
    static const uint8_t lens[5][4] = {
        {0}, {0}, {1, 1}, {1, 2, 2}, {1, 2, 3, 3}};
    uint64_t cnt[TBLOCK_WIDTHS_MAX] = {0};
    for (unsigned j = 0, q = 0; j < s->nc; j++) {
        while (w[q] < j)
            q++;
        cnt[q] += s->cnt[j];
    }
    unsigned rank[TBLOCK_WIDTHS_MAX] = {0, 1, 2, 3};
    for (unsigned a = 1; a < k; a++)        /* by count, descending */
        for (unsigned b = a; b > 0 && cnt[rank[b]] > cnt[rank[b - 1]]; b--) {
            unsigned t = rank[b];
            rank[b] = rank[b - 1];
            rank[b - 1] = t;
        }
    unsigned len[TBLOCK_WIDTHS_MAX];
    uint64_t bits = 0;
    for (unsigned r = 0; r < k; r++) {
        len[rank[r]] = lens[k][r];
        bits += cnt[rank[r]] * (lens[k][r] + s->cand[w[rank[r]]]);
    }
    if (bits < s->best) {
        s->best = bits;
        s->bn = k;
        for (unsigned q = 0; q < k; q++) {
            s->bw[q] = s->cand[w[q]];
            s->bl[q] = len[q];
        }
    }
}

/* Fills pp's widths (in code order) and pick[] from the best search. */
static void
s_fill_widths(const s_search_t *s, tblock_ints_params_t *pp)
{
    unsigned order[TBLOCK_WIDTHS_MAX], n = 0;
    for (unsigned len = 0; len <= 3; len++)
        for (unsigned q = 0; q < s->bn; q++)
            if (s->bl[q] == len)
                order[n++] = q;
    pp->nw = s->bn;
    for (unsigned i = 0; i < n; i++)
        pp->width[i] = (uint8_t) s->bw[order[i]];
    /* Each bit length takes the narrowest width that holds it, as costed. */
    for (unsigned b = 0; b <= 64; b++) {
        unsigned best = 0, width = 65;
        for (unsigned i = 0; i < n; i++)
            if (pp->width[i] >= b && pp->width[i] < width) {
                width = pp->width[i];
                best = i;
            }
        pp->pick[b] = (uint8_t) best;
    }
}

/* Chooses widths for the residuals z[0..nz); returns their bits. */
static uint64_t
s_widths_choose(const uint64_t *z, uint32_t nz, tblock_ints_params_t *pp)
{
    uint64_t hist[65] = {0};
    for (uint32_t i = 0; i < nz; i++)
        hist[tblock_bitlen(z[i])]++;
    s_search_t s;
    s_candidates(&s, hist, nz);
    s.best = UINT64_MAX;
    s.bn = 0;
    unsigned top = s.nc ? s.nc - 1 : 0;
    if (s.nc == 0) {                /* no residual */
        s.cand[0] = 0;
        s.nc = 1;
        s.cnt[0] = 0;
    }
    unsigned w[4] = {top, 0, 0, 0};
    s_try(&s, w, 1);
    for (unsigned a = 0; a < top; a++) {
        unsigned w2[2] = {a, top};
        s_try(&s, w2, 2);
        for (unsigned b = a + 1; b < top; b++) {
            unsigned w3[3] = {a, b, top};
            s_try(&s, w3, 3);
            for (unsigned c = b + 1; c < top; c++) {
                unsigned w4[4] = {a, b, c, top};
                s_try(&s, w4, 4);
            }
        }
    }
    s_fill_widths(&s, pp);
    return s.best;
}

/* --- integer residual streams ------------------------------------------- */

static uint64_t
s_gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static uint64_t
s_params_bits(const tblock_ints_params_t *pp, uint32_t n)
{
    size_t bytes = 1 + s_uvar_len(pp->g) + pp->nw;
    if (pp->order < 2)
        bytes += s_uvar_len(tblock_zigzag(pp->base));
    else if (n >= 2)
        bytes += s_uvar_len(tblock_zigzag(pp->d1));
    return (uint64_t) bytes * 8;
}

uint64_t
tblock_ints_plan(const int64_t *x, uint32_t n, unsigned order, int64_t base,
                 uint64_t *z, tblock_ints_params_t *pp)
{
    memset(pp, 0, sizeof *pp);
    pp->order = order;
    pp->base = order < 2 ? base : 0;
    uint32_t first = order < 2 ? 1 : 2, nz = 0;
    uint64_t g = 0;
    if (order == 2 && n >= 2)
        pp->d1 = (int64_t) ((uint64_t) x[1] - (uint64_t) x[0]);
    for (uint32_t i = first; i < n; i++) {
        uint64_t d = order == 0 ? (uint64_t) x[i]
                                : (uint64_t) x[i] - (uint64_t) x[i - 1];
        uint64_t r = order < 2
                     ? d - (uint64_t) base
                     : d - ((uint64_t) x[i - 1] - (uint64_t) x[i - 2]);
        z[nz++] = r;
        if (g != 1)
            g = s_gcd(g, (int64_t) r < 0 ? -r : r);
    }
    pp->g = g == 0 || g > (uint64_t) INT64_MAX ? 1 : g;
    if (pp->g == 1)
        for (uint32_t i = 0; i < nz; i++)
            z[i] = tblock_zigzag((int64_t) z[i]);
    else
        for (uint32_t i = 0; i < nz; i++)
            z[i] = tblock_zigzag((int64_t) z[i] / (int64_t) pp->g);
    uint64_t bits = s_widths_choose(z, nz, pp);
    return bits + s_params_bits(pp, n);
}

/* The median (the element of rank (n - 1) / 2) of v[0..n), n >= 1, by
 * selection in O(n) on average; reorders v. */
static int64_t
s_median(int64_t *v, uint32_t n)
{
    uint32_t lo = 0, hi = n - 1, k = (n - 1) / 2;
    while (lo < hi) {
        int64_t a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi];
        int64_t pivot = a < b ? (b < c ? b : a < c ? c : a)
                              : (a < c ? a : b < c ? c : b);
        uint32_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                int64_t t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            break;
    }
    return v[k];
}

uint64_t
tblock_ints_best(const int64_t *x, uint32_t n, uint64_t *z, uint64_t *zs,
                 int64_t *scratch, tblock_ints_params_t *pp)
{
    tblock_ints_params_t p2;
    uint64_t best = tblock_ints_plan(x, n, 2, 0, z, pp);
    if (n < 3)
        return best;
    /* Candidates: order 1 about no step and the median step (counters,
     * irregular times), order 0 about the median (noisy gauges). */
    for (uint32_t i = 1; i < n; i++)
        scratch[i - 1] = (int64_t) ((uint64_t) x[i] - (uint64_t) x[i - 1]);
    int64_t step = s_median(scratch, n - 1);
    memcpy(scratch, x + 1, (size_t) (n - 1) * sizeof *x);
    int64_t level = s_median(scratch, n - 1);
    const struct { unsigned order; int64_t base; } cand[3] = {
        {1, 0}, {1, step}, {0, level}};
    for (int k = 0; k < 3; k++) {
        if (k == 1 && step == 0)
            continue;
        uint64_t bits = tblock_ints_plan(x, n, cand[k].order, cand[k].base,
                                         zs, &p2);
        if (bits < best) {
            best = bits;
            *pp = p2;
            memcpy(z, zs, (size_t) (n - 1) * sizeof *z);
        }
    }
    return best;
}

void
tblock_ints_default(tblock_ints_params_t *pp, uint64_t g)
{
    static const uint8_t widths[4] = {0, 6, 14, 64};
    memset(pp, 0, sizeof *pp);
    pp->order = 2;
    pp->g = g;
    pp->nw = 4;
    memcpy(pp->width, widths, sizeof widths);
    for (unsigned b = 0; b <= 64; b++)
        pp->pick[b] = b == 0 ? 0 : b <= 6 ? 1 : b <= 14 ? 2 : 3;
}

void
tblock_ints_write_params(tblock_bw_t *w, const tblock_ints_params_t *pp,
                         uint32_t n)
{
    uint8_t buf[32];
    size_t k = 0;
    buf[k++] = (uint8_t) (pp->order | (pp->nw - 1) << 4);
    if (pp->order < 2)
        k += tblock_uvar_put(buf + k, tblock_zigzag(pp->base));
    else if (n >= 2)
        k += tblock_uvar_put(buf + k, tblock_zigzag(pp->d1));
    k += tblock_uvar_put(buf + k, pp->g);
    memcpy(buf + k, pp->width, pp->nw);
    k += pp->nw;
    tblock_bw_bytes(w, buf, k);
}

/* Code of width index i among nw: '' | '0' '1' | '0' '10' '11' |
 * '0' '10' '110' '111'. */
void
tblock_ints_write_one(tblock_bw_t *w, const tblock_ints_params_t *pp,
                      uint64_t z)
{
    unsigned i = pp->pick[tblock_bitlen(z)];
    static const uint8_t code[5][4] = {
        {0}, {0}, {0, 1}, {0, 2, 3}, {0, 2, 6, 7}};
    static const uint8_t clen[5][4] = {
        {0}, {0}, {1, 1}, {1, 2, 2}, {1, 2, 3, 3}};
    uint64_t v = code[pp->nw][i];
    unsigned len = clen[pp->nw][i];
    unsigned width = pp->width[i];
    if (len + width <= 64 && width < 64) {
        tblock_bw_put(w, (v << width) | z, len + width);
        return;
    }
    tblock_bw_put(w, v, len);
    tblock_bw_put(w, z, width);
}

/* Reads one parameter byte string; false when malformed. */
static bool
s_params_read(tblock_ints_params_t *pp, const uint8_t **p, const uint8_t *end,
              uint32_t n)
{
    if (*p >= end)
        return false;
    uint8_t b = *(*p)++;
    pp->order = b & 15;
    pp->nw = (unsigned) (b >> 4) + 1;
    if (pp->order > 2 || pp->nw > TBLOCK_WIDTHS_MAX)
        return false;
    uint64_t v;
    if (pp->order < 2 || n >= 2) {
        if (!tblock_uvar_get(p, end, &v))
            return false;
        if (pp->order < 2)
            pp->base = tblock_unzigzag(v);
        else
            pp->d1 = tblock_unzigzag(v);
    }
    if (!tblock_uvar_get(p, end, &pp->g) || pp->g == 0
        || pp->g > (uint64_t) INT64_MAX || (size_t) (end - *p) < pp->nw)
        return false;
    for (unsigned i = 0; i < pp->nw; i++) {
        pp->width[i] = *(*p)++;
        if (pp->width[i] > 64)
            return false;
    }
    return true;
}

bool
tblock_ints_dec_init(tblock_ints_dec_t *d, const uint8_t *p, size_t len,
                     uint32_t n, int64_t x0)
{
    const uint8_t *end = p + len;
    memset(d, 0, sizeof *d);
    if (!s_params_read(&d->pp, &p, end, n))
        return false;
    static const uint8_t codes[5][8] = {
        {0},
        {0},
        {0x10, 0x10, 0x10, 0x10, 0x11, 0x11, 0x11, 0x11},
        {0x10, 0x10, 0x10, 0x10, 0x21, 0x21, 0x22, 0x22},
        {0x10, 0x10, 0x10, 0x10, 0x21, 0x21, 0x32, 0x33}};
    memcpy(d->code, codes[d->pp.nw], 8);
    tblock_br_init(&d->br, p, (size_t) (end - p));
    d->prev = (uint64_t) x0;
    d->step = 0;
    d->first2 = d->pp.order == 2;
    return true;
}

/* --- XOR floats ---------------------------------------------------------- */

static inline uint64_t
s_bits(double v)
{
    uint64_t b;
    memcpy(&b, &v, 8);
    return b;
}

void
tblock_xor_put(tblock_bw_t *w, tblock_xor_t *s, double v)
{
    uint64_t bits = s_bits(v);
    if (!s->have) {
        tblock_bw_put(w, bits, 64);
        s->have = true;
        s->prev = bits;
        return;
    }
    uint64_t x = bits ^ s->prev;
    s->prev = bits;
    if (x == 0) {
        tblock_bw_put(w, 0, 1);
        return;
    }
    unsigned lead = (unsigned) __builtin_clzll(x);
    unsigned trail = (unsigned) __builtin_ctzll(x);
    if (s->window && lead >= s->lead && trail >= s->trail) {
        tblock_bw_put(w, 2, 2);
        tblock_bw_put(w, x >> s->trail, 64 - s->lead - s->trail);
        return;
    }
    unsigned sig = 64 - lead - trail;
    tblock_bw_put(w, (UINT64_C(3) << 12) | (uint64_t) lead << 6 | (sig - 1),
                  14);
    tblock_bw_put(w, x >> trail, sig);
    s->lead = lead;
    s->trail = trail;
    s->window = true;
}

void
tblock_xor_dec_init(tblock_xor_dec_t *d, const uint8_t *p, size_t len)
{
    memset(d, 0, sizeof *d);
    tblock_br_init(&d->br, p, len);
}

double
tblock_xor_dec_next(tblock_xor_dec_t *d, bool first)
{
    double v;
    if (first) {
        d->prev = tblock_br_get(&d->br, 64);
    }
    else if (tblock_br_get(&d->br, 1)) {
        uint64_t x;
        if (tblock_br_get(&d->br, 1)) {
            uint64_t h = tblock_br_get(&d->br, 12);
            unsigned lead = (unsigned) (h >> 6), sig = (unsigned) (h & 63) + 1;
            if (lead + sig > 64) {
                d->br.bad = true;
                return 0.0;
            }
            d->lead = lead;
            d->trail = 64 - lead - sig;
            d->window = true;
        }
        else if (!d->window) {
            d->br.bad = true;
            return 0.0;
        }
        x = tblock_br_get(&d->br, 64 - d->lead - d->trail) << d->trail;
        d->prev ^= x;
    }
    memcpy(&v, &d->prev, 8);
    return v;
}
