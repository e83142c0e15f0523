/* telem_block_writer.c - the open block (telem_block.h): O(1) appends,
 * snapshots that are valid blocks, and sealing into the best encodings.
 *
 * The open block codes as it goes, in encodings that need no look-ahead:
 * timestamps as delta-of-deltas in units of the writer's ts_unit_ns with
 * fixed widths (0, 6, 14 and 64 bits), values as XOR floats.  Each append
 * costs a handful of bit writes into two growing buffers, and the two
 * streams are exactly the sections of a block: a snapshot only adds the
 * header, the timestamp parameters, the last partial bytes and the
 * checksum.  Finishing decodes the open block once and hands its points
 * to the encoder, which picks the best codings for the closed block.
 *
 * Anything that cannot be appended in place (a late point, a residual the
 * writer's unit does not divide - only at timestamps so far apart that
 * their deltas wrap around 2^64) rebuilds the open block from its points
 * into fresh buffers, swapped in only on success, so a failure leaves the
 * writer as it was.
 *
 * Calls go down only: this file uses the encoder (telem_block_enc.c),
 * telem_block.c and the streams.
 */
#include "telem_block.h"

#include <stdlib.h>

#include "telem_block_int.h"
#include "telem_crc.h"

struct telem_block_writer {
    telem_block_opts_t opts;
    uint32_t n;
    int64_t first, last;
    uint64_t step;              /* last - the point before it */
    tblock_ints_params_t tp;    /* fixed plan; tp.d1 once n >= 2 */
    tblock_bw_t tsw;            /* residual bits of timestamps 2..n-1 */
    tblock_bw_t vw;             /* XOR bits of every value */
    tblock_xor_t xs;
};

static void
s_empty(telem_block_writer_t *w, uint64_t g)
{
    w->n = 0;
    w->first = w->last = INT64_MIN;
    w->step = 0;
    tblock_ints_default(&w->tp, g);
    w->tsw.len = w->vw.len = 0;
    w->tsw.acc = w->vw.acc = 0;
    w->tsw.nacc = w->vw.nacc = 0;
    w->tsw.oom = w->vw.oom = false;
    memset(&w->xs, 0, sizeof w->xs);
}

telem_block_writer_t *
telem_block_writer_new(const telem_block_opts_t *opts, int *err)
{
    telem_block_opts_t o;
    if (opts)
        o = *opts;
    else
        telem_block_opts_default(&o);
    if (!tblock_opts_ok(&o)) {
        if (err)
            *err = TELEM_EINVAL;
        return NULL;
    }
    telem_block_writer_t *w = calloc(1, sizeof *w);
    if (!w) {
        if (err)
            *err = TELEM_ENOMEM;
        return NULL;
    }
    w->opts = o;
    s_empty(w, (uint64_t) o.ts_unit_ns);
    if (err)
        *err = 0;
    return w;
}

void
telem_block_writer_destroy(telem_block_writer_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->tsw.buf);
    free((*self_p)->vw.buf);
    free(*self_p);
    *self_p = NULL;
}

void
telem_block_writer_reset(telem_block_writer_t *self)
{
    if (self)
        s_empty(self, (uint64_t) self->opts.ts_unit_ns);
}

uint32_t
telem_block_writer_count(const telem_block_writer_t *self)
{
    return self ? self->n : 0;
}

int64_t
telem_block_writer_first(const telem_block_writer_t *self)
{
    return self && self->n ? self->first : INT64_MIN;
}

int64_t
telem_block_writer_last(const telem_block_writer_t *self)
{
    return self && self->n ? self->last : INT64_MIN;
}

size_t
telem_block_writer_mem(const telem_block_writer_t *self)
{
    return self ? sizeof *self + self->tsw.cap + self->vw.cap : 0;
}

/* Appends a rounded, in-order point that the plan can take (the caller
 * checked capacity and divisibility).  Returns 0 or TELEM_ENOMEM with the
 * writer unchanged. */
static int
s_put(telem_block_writer_t *w, int64_t ts, double v)
{
    /* Two words at most per stream: reserve them before touching state. */
    if (!tblock_bw_reserve(&w->tsw, 16) || !tblock_bw_reserve(&w->vw, 16)) {
        w->tsw.oom = w->vw.oom = false;
        return TELEM_ENOMEM;
    }
    uint64_t step = (uint64_t) ts - (uint64_t) w->last;
    if (w->n == 0)
        w->first = ts;
    else if (w->n == 1)
        w->tp.d1 = (int64_t) step;
    else
        tblock_ints_write_one(&w->tsw, &w->tp,
                              tblock_zigzag((int64_t) (step - w->step)
                                            / (int64_t) w->tp.g));
    if (w->n > 0)
        w->step = step;
    tblock_xor_put(&w->vw, &w->xs, v);
    w->last = ts;
    w->n++;
    return 0;
}

/* True when the plan's unit divides the residual that ts would add. */
static bool
s_divides(const telem_block_writer_t *w, int64_t ts)
{
    if (w->n < 2 || w->tp.g == 1)
        return true;
    uint64_t r = (uint64_t) ts - (uint64_t) w->last - w->step;
    return (int64_t) r % (int64_t) w->tp.g == 0;
}

/* The open block's points, decoded into malloc'd arrays with room for one
 * more.  Returns 0 or TELEM_ENOMEM. */
static int
s_points(const telem_block_writer_t *w, int64_t **ts, double **val)
{
    size_t size = telem_block_writer_snapshot_size(w);
    unsigned char *buf = malloc(size ? size : 1);
    *ts = malloc(((size_t) w->n + 1) * sizeof **ts);
    *val = malloc(((size_t) w->n + 1) * sizeof **val);
    int rc = buf && *ts && *val ? 0 : TELEM_ENOMEM;
    if (!rc && w->n) {
        size_t len;
        rc = telem_block_writer_snapshot(w, buf, size, &len);
        if (!rc)
            rc = telem_block_decode(buf, len, *ts, *val, w->n, NULL);
    }
    free(buf);
    if (rc) {
        free(*ts);
        free(*val);
        *ts = NULL;
        *val = NULL;
    }
    return rc;
}

/* g, or 1 when g does not divide every delta-of-delta of ts[0..n). */
static uint64_t
s_unit_for(const int64_t *ts, uint32_t n, uint64_t g)
{
    for (uint32_t i = 2; i < n && g > 1; i++) {
        uint64_t r = ((uint64_t) ts[i] - (uint64_t) ts[i - 1])
                     - ((uint64_t) ts[i - 1] - (uint64_t) ts[i - 2]);
        if ((int64_t) r % (int64_t) g != 0)
            g = 1;
    }
    return g;
}

/* Replaces the open block with ts[0..n), val[0..n) (in order, rounded)
 * coded in units of g (1 when g does not divide them).  The writer is
 * unchanged on failure. */
static int
s_rebuild(telem_block_writer_t *w, const int64_t *ts, const double *val,
          uint32_t n, uint64_t g)
{
    telem_block_writer_t t = {.opts = w->opts};
    s_empty(&t, s_unit_for(ts, n, g));
    int rc = 0;
    for (uint32_t i = 0; i < n && !rc; i++)
        rc = s_put(&t, ts[i], val[i]);
    if (rc) {
        free(t.tsw.buf);
        free(t.vw.buf);
        return rc;
    }
    free(w->tsw.buf);
    free(w->vw.buf);
    *w = t;
    return 0;
}

/* Rebuilds with the points and (ts, v) inserted after its equals. */
static int
s_insert_slow(telem_block_writer_t *w, int64_t ts, double v, uint64_t g)
{
    int64_t *pts;
    double *pval;
    int rc = s_points(w, &pts, &pval);
    if (rc)
        return rc;
    uint32_t pos = w->n;
    while (pos > 0 && pts[pos - 1] > ts)
        pos--;
    memmove(pts + pos + 1, pts + pos, (w->n - pos) * sizeof *pts);
    memmove(pval + pos + 1, pval + pos, (w->n - pos) * sizeof *pval);
    pts[pos] = ts;
    pval[pos] = v;
    rc = s_rebuild(w, pts, pval, w->n + 1, g);
    free(pts);
    free(pval);
    return rc;
}

int
telem_block_writer_append(telem_block_writer_t *self, int64_t ts,
                          double value)
{
    if (!self)
        return TELEM_EINVAL;
    ts = tblock_round(ts, self->opts.ts_unit_ns);
    if (self->n > 0 && ts < self->last)
        return TELEM_EINVAL;
    if (self->n >= self->opts.max_points)
        return TELEM_EFULL;
    if (!s_divides(self, ts))
        return s_insert_slow(self, ts, value, 1);
    return s_put(self, ts, value);
}

int
telem_block_writer_insert(telem_block_writer_t *self, int64_t ts,
                          double value)
{
    if (!self)
        return TELEM_EINVAL;
    int64_t r = tblock_round(ts, self->opts.ts_unit_ns);
    if (self->n == 0 || r >= self->last)
        return telem_block_writer_append(self, ts, value);
    if (self->n >= self->opts.max_points)
        return TELEM_EFULL;
    return s_insert_slow(self, r, value, self->tp.g);
}

/* --- snapshot and finish ------------------------------------------------ */

/* The timestamp parameters and the header as they stand; returns the
 * whole block's size. */
static size_t
s_layout(const telem_block_writer_t *w, uint8_t *params, size_t *plen,
         uint8_t *head, size_t *hlen)
{
    tblock_bw_t pw = {.buf = params, .cap = 32, .fixed = true};
    tblock_ints_write_params(&pw, &w->tp, w->n);
    *plen = pw.len;
    telem_block_info_t h = {
        .npoints = w->n, .first_ts = w->first, .last_ts = w->last,
        .value_codec = TELEM_BLOCK_VAL_XOR,
        .ts_bytes = pw.len + w->tsw.len + (w->tsw.nacc + 7) / 8,
        .value_bytes = w->vw.len + (w->vw.nacc + 7) / 8};
    *hlen = tblock_header_put(head, &h);
    return *hlen + h.ts_bytes + h.value_bytes + TELEM_BLOCK_CRC_BYTES;
}

size_t
telem_block_writer_snapshot_size(const telem_block_writer_t *self)
{
    uint8_t params[32], head[TELEM_BLOCK_HEADER_MAX];
    size_t plen, hlen;
    return self && self->n ? s_layout(self, params, &plen, head, &hlen) : 0;
}

int
telem_block_writer_snapshot(const telem_block_writer_t *self, void *buf,
                            size_t cap, size_t *len)
{
    if (!self || !buf || !len)
        return TELEM_EINVAL;
    if (self->n == 0)
        return TELEM_ESTATE;
    uint8_t params[32], head[TELEM_BLOCK_HEADER_MAX], tail[8];
    size_t plen, hlen;
    if (s_layout(self, params, &plen, head, &hlen) > cap)
        return TELEM_ETOOBIG;
    tblock_bw_t out = {.buf = buf, .cap = cap, .fixed = true};
    tblock_bw_bytes(&out, head, hlen);
    tblock_bw_bytes(&out, params, plen);
    tblock_bw_bytes(&out, self->tsw.buf, self->tsw.len);
    tblock_bw_bytes(&out, tail, tblock_bw_tail(&self->tsw, tail));
    tblock_bw_bytes(&out, self->vw.buf, self->vw.len);
    tblock_bw_bytes(&out, tail, tblock_bw_tail(&self->vw, tail));
    uint32_t crc = telem_crc32c(0, buf, out.len);
    for (int i = 0; i < 4; i++)
        tail[i] = (uint8_t) (crc >> (8 * i));
    tblock_bw_bytes(&out, tail, 4);
    *len = out.len;
    return 0;
}

int
telem_block_writer_finish(telem_block_writer_t *self, unsigned char **out,
                          size_t *out_len)
{
    if (!self || !out || !out_len)
        return TELEM_EINVAL;
    if (self->n == 0)
        return TELEM_ESTATE;
    int64_t *ts;
    double *val;
    int rc = s_points(self, &ts, &val);
    if (!rc)
        rc = telem_block_encode(ts, val, self->n, &self->opts, out, out_len);
    free(ts);
    free(val);
    if (!rc)
        telem_block_writer_reset(self);
    return rc;
}
