/* telem_store_blocks.c - a series' points: an open block and closed blocks.
 *
 * A series keeps its newest points in an open block (telem_block_writer_t:
 * a few bit writes an append, delta-of-delta timestamps and XOR values,
 * ~4-8 bytes a point) and the rest in closed blocks laid end to end in one
 * growable buffer per series, with a small index (sequence numbers,
 * offsets, counts; times are read from the blocks' headers).  One buffer
 * per series instead of one allocation per block: blocks are
 * self-delimiting and are only ever added at the end and dropped at the
 * front, so the buffer is a queue of bytes.
 *
 * Closing a full open block is cheap: its snapshot (a valid block in the
 * writer's own encodings) is copied to the buffer.  Re-coding it in the
 * best encodings ("sealing": decode, plan every codec, write the
 * smallest; 100-600 ns a point) is left to telem_store_expire() (a
 * bounded number of points per call) and to flushes, off the append path.
 *
 * Late points go into the open block in time order (O(n) re-code), so
 * blocks may overlap in time; the series' `overlap` flag then makes
 * queries merge by time.  Expiry and eviction drop whole closed blocks;
 * points of an open block that was never flushed are dropped one by one
 * (re-coding the rest), while one that a flush wrote is closed first, so
 * that no later version of it lacks points an earlier version had.
 *
 * Memory: every byte of the buffers (capacity), the index and each
 * writer (telem_block_writer_mem) is counted in the store's mem, checked
 * against the cap before it is allocated; a writer's buffers grow by
 * doubling inside the codec, so an append first checks that they could
 * double within the cap.
 */
#include <stdlib.h>
#include <string.h>

#include "telem_store_int.h"

/* --- scratch --------------------------------------------------------------- */

static int
s_arrays_room(int64_t **ts, double **val, size_t *cap, size_t n)
{
    if (n <= *cap)
        return 0;
    size_t c = n < 256 ? 256 : n;
    int64_t *t = realloc(*ts, c * sizeof *t);
    if (t)
        *ts = t;
    double *v = realloc(*val, c * sizeof *v);
    if (v)
        *val = v;
    if (!t || !v)
        return TELEM_ENOMEM;
    *cap = c;
    return 0;
}

int
tstore_query_room(telem_store_t *self, size_t n)
{
    return s_arrays_room(&self->q_ts, &self->q_val, &self->q_cap, n);
}

int
tstore_scratch_room(telem_store_t *self, size_t n)
{
    return s_arrays_room(&self->o_ts, &self->o_val, &self->o_cap, n);
}

static int
s_snapshot(telem_store_t *self, const tstore_points_t *p,
           const unsigned char **buf, size_t *len)
{
    size_t size = telem_block_writer_snapshot_size(p->w);
    if (size > self->o_buf_cap) {
        unsigned char *b = realloc(self->o_buf, size);
        if (!b)
            return TELEM_ENOMEM;
        self->o_buf = b;
        self->o_buf_cap = size;
    }
    *buf = self->o_buf;
    return telem_block_writer_snapshot(p->w, self->o_buf, size, len);
}

int
tstore_open_snapshot(telem_store_t *self, const tstore_series_t *s,
                     const unsigned char **buf, size_t *len)
{
    return s_snapshot(self, &s->pts, buf, len);
}

/* Decodes the open block into the rebuild scratch; *n its points. */
static int
s_open_decode(telem_store_t *self, const tstore_points_t *p, uint32_t *n)
{
    *n = telem_block_writer_count(p->w);
    if (*n == 0)
        return 0;
    const unsigned char *buf;
    size_t len;
    int rc = s_snapshot(self, p, &buf, &len);
    if (!rc)
        rc = tstore_scratch_room(self, *n);
    if (!rc)
        rc = telem_block_decode(buf, len, self->o_ts, self->o_val, *n, NULL);
    return rc;
}

/* --- closed blocks ---------------------------------------------------------- */

static const unsigned char *
s_uvarint(const unsigned char *p, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        uint8_t b = *p++;
        x |= (uint64_t) (b & 0x7f) << shift;
        if (!(b & 0x80))
            break;
    }
    *v = x;
    return p;
}

/* The blocks in the buffer were made here or checked when loaded, so
 * their headers are read without checks. */
void
tstore_block_times(const tstore_points_t *p, uint32_t i, int64_t *first,
                   int64_t *last)
{
    const unsigned char *h = p->buf + p->blk[i].off + 2;
    uint64_t n, span;
    h = s_uvarint(h, &n);
    uint64_t f = 0;
    for (int k = 7; k >= 0; k--)
        f = f << 8 | h[k];
    s_uvarint(h + 8, &span);
    *first = (int64_t) f;
    *last = (int64_t) (f + span);
}

size_t
tstore_block_size(const tstore_points_t *p, uint32_t i)
{
    size_t end = i + 1 < p->nblk ? p->blk[i + 1].off : p->len;
    return end - p->blk[i].off;
}

static bool
s_fits(const telem_store_t *self, uint64_t more)
{
    return self->mem + more <= self->cfg.mem_cap_bytes;
}

static int
s_buf_reserve(telem_store_t *self, tstore_points_t *p, size_t more)
{
    size_t need = p->len + more;
    if (need <= p->cap)
        return 0;
    size_t cap = need + need / 16 + 64;
    if (cap > UINT32_MAX || !s_fits(self, cap - p->cap))
        return TELEM_EFULL;
    unsigned char *b = realloc(p->buf, cap);
    if (!b)
        return TELEM_ENOMEM;
    self->mem += cap - p->cap;
    p->buf = b;
    p->cap = cap;
    return 0;
}

static int
s_blk_reserve(telem_store_t *self, tstore_points_t *p)
{
    if (p->nblk < p->blk_cap)
        return 0;
    uint32_t cap = p->blk_cap + p->blk_cap / 4 + 4;
    size_t more = (size_t) (cap - p->blk_cap) * sizeof(tstore_block_t);
    if (!s_fits(self, more))
        return TELEM_EFULL;
    tstore_block_t *b = realloc(p->blk, (size_t) cap * sizeof *b);
    if (!b)
        return TELEM_ENOMEM;
    self->mem += more;
    p->blk = b;
    p->blk_cap = cap;
    return 0;
}

/* Recomputes exp_ts, max_last and overlap from the blocks and the open
 * block (after a block was replaced). */
static void
s_recompute(tstore_points_t *p)
{
    p->exp_ts = INT64_MAX;
    p->max_last = INT64_MIN;
    p->overlap = false;
    for (uint32_t i = 0; i < p->nblk; i++) {
        int64_t f, l;
        tstore_block_times(p, i, &f, &l);
        if (i == 0)
            p->exp_ts = l;
        if (f < p->max_last)
            p->overlap = true;
        if (l > p->max_last)
            p->max_last = l;
    }
    if (p->w && telem_block_writer_count(p->w) > 0
        && telem_block_writer_first(p->w) < p->max_last)
        p->overlap = true;
}

/* Adds the index entry of a block just written at the buffer's end. */
static void
s_blk_push(tstore_points_t *p, uint64_t seq, uint32_t n, bool flushed,
           bool sealed, int64_t first, int64_t last, size_t size)
{
    tstore_block_t *b = &p->blk[p->nblk++];
    b->first_seq = seq;
    b->off = (uint32_t) p->len;
    b->npoints = (uint16_t) n;
    b->flushed = flushed;
    b->sealed = sealed;
    p->len += size;
    if (p->nblk == 1)
        p->exp_ts = last;
    if (first < p->max_last)
        p->overlap = true;
    if (last > p->max_last)
        p->max_last = last;
    if (!sealed)
        p->unsealed = true;
    if (p->next_seq < seq + n)
        p->next_seq = seq + n;
}

/* Drops the k oldest closed blocks; returns their points. */
static uint64_t
s_drop_blocks(telem_store_t *self, tstore_points_t *p, uint32_t k)
{
    if (k == 0)
        return 0;
    size_t bytes = k < p->nblk ? p->blk[k].off : p->len;
    uint64_t n = 0;
    for (uint32_t i = 0; i < k; i++)
        n += p->blk[i].npoints;
    memmove(p->buf, p->buf + bytes, p->len - bytes);
    p->len -= bytes;
    memmove(p->blk, p->blk + k, (p->nblk - k) * sizeof *p->blk);
    p->nblk -= k;
    for (uint32_t i = 0; i < p->nblk; i++)
        p->blk[i].off -= (uint32_t) bytes;
    p->npoints -= n;
    self->npoints -= n;
    if (p->nblk == 0) {
        p->exp_ts = INT64_MAX;
        p->max_last = INT64_MIN;
        p->overlap = false;
    }
    else {
        int64_t f;
        tstore_block_times(p, 0, &f, &p->exp_ts);
    }
    return n;
}

int
tstore_points_add_block(telem_store_t *self, tstore_series_t *s,
                        const void *block, size_t len,
                        const telem_block_info_t *info, uint64_t first_seq,
                        bool flushed, bool sealed)
{
    tstore_points_t *p = &s->pts;
    int rc = s_buf_reserve(self, p, len);
    if (!rc)
        rc = s_blk_reserve(self, p);
    if (rc)
        return rc;
    memcpy(p->buf + p->len, block, len);
    s_blk_push(p, first_seq, info->npoints, flushed, sealed, info->first_ts,
               info->last_ts, len);
    p->npoints += info->npoints;
    self->npoints += info->npoints;
    if (!p->w || telem_block_writer_count(p->w) == 0)
        p->open_seq = p->next_seq;
    return 0;
}

int
tstore_points_replace_block(telem_store_t *self, tstore_series_t *s,
                            uint32_t i, const void *block, size_t len,
                            const telem_block_info_t *info)
{
    tstore_points_t *p = &s->pts;
    size_t old = tstore_block_size(p, i);
    if (len > old) {
        int rc = s_buf_reserve(self, p, len - old);
        if (rc)
            return rc;
    }
    size_t off = p->blk[i].off;
    memmove(p->buf + off + len, p->buf + off + old, p->len - off - old);
    memcpy(p->buf + off, block, len);
    p->len = p->len - old + len;
    for (uint32_t j = i + 1; j < p->nblk; j++)
        p->blk[j].off = (uint32_t) (p->blk[j].off - old + len);
    p->npoints = p->npoints - p->blk[i].npoints + info->npoints;
    self->npoints = self->npoints - p->blk[i].npoints + info->npoints;
    p->blk[i].npoints = (uint16_t) info->npoints;
    p->blk[i].flushed = p->blk[i].sealed = 1;
    if (p->next_seq < p->blk[i].first_seq + info->npoints)
        p->next_seq = p->blk[i].first_seq + info->npoints;
    s_recompute(p);
    return 0;
}

/* --- the open block ---------------------------------------------------------- */

static void
s_w_sync(telem_store_t *self, tstore_points_t *p)
{
    size_t m = telem_block_writer_mem(p->w);
    self->mem = self->mem + m - p->w_mem;
    p->w_mem = m;
}

/* Room, within the cap, for the writer's buffers to double once. */
static bool
s_w_fits(const telem_store_t *self, const tstore_points_t *p)
{
    uint64_t worst = p->w ? p->w_mem - self->w_base + 128
                          : self->w_base + 128;
    return s_fits(self, worst);
}

static int
s_w_make(telem_store_t *self, tstore_points_t *p)
{
    if (p->w)
        return 0;
    if (!s_w_fits(self, p))
        return TELEM_EFULL;
    p->w = telem_block_writer_new(&self->wopts, NULL);
    if (!p->w)
        return TELEM_ENOMEM;
    p->w_mem = 0;
    s_w_sync(self, p);
    p->open_first = INT64_MAX;
    return 0;
}

static int
s_close(telem_store_t *self, tstore_points_t *p)
{
    uint32_t n = telem_block_writer_count(p->w);
    if (n == 0)
        return 0;
    size_t size = telem_block_writer_snapshot_size(p->w), got = 0;
    int rc = s_buf_reserve(self, p, size);
    if (!rc)
        rc = s_blk_reserve(self, p);
    if (!rc)
        rc = telem_block_writer_snapshot(p->w, p->buf + p->len, size, &got);
    if (rc)
        return rc;
    s_blk_push(p, p->open_seq, n, false, false,
               telem_block_writer_first(p->w), telem_block_writer_last(p->w),
               got);
    telem_block_writer_reset(p->w);
    p->open_first = INT64_MAX;
    p->open_flushed = false;
    p->open_dirty = false;
    p->open_seq = p->next_seq;
    return 0;
}

int
tstore_points_close(telem_store_t *self, tstore_series_t *s)
{
    return s_close(self, &s->pts);
}

/* Puts ts[0..n) into the emptied open block (in order; a subset of what
 * it held, or loaded points). */
static int
s_open_fill(telem_store_t *self, tstore_points_t *p, const int64_t *ts,
            const double *val, uint32_t n)
{
    telem_block_writer_reset(p->w);
    p->open_first = INT64_MAX;
    int rc = 0;
    for (uint32_t i = 0; i < n && !rc; i++)
        rc = telem_block_writer_insert(p->w, ts[i], val[i]);
    s_w_sync(self, p);
    if (rc) {
        telem_block_writer_reset(p->w);
        return rc;
    }
    if (n > 0) {
        p->open_first = telem_block_writer_first(p->w);
        if (p->open_first < p->max_last)
            p->overlap = true;
    }
    return 0;
}

/* Drops the k oldest points of an open block never flushed. */
static int
s_open_drop(telem_store_t *self, tstore_points_t *p, uint32_t k)
{
    uint32_t n;
    int rc = s_open_decode(self, p, &n);
    if (rc)
        return rc;
    if (k > n)
        k = n;
    rc = s_open_fill(self, p, self->o_ts + k, self->o_val + k, n - k);
    uint32_t left = telem_block_writer_count(p->w);
    p->npoints -= n - left;
    self->npoints -= n - left;
    p->open_seq = p->next_seq - left;
    p->open_dirty = true;
    return rc;
}

int
tstore_points_set_open(telem_store_t *self, tstore_series_t *s,
                       const int64_t *ts, const double *val, uint32_t n,
                       uint64_t first_seq)
{
    tstore_points_t *p = &s->pts;
    int rc = s_w_make(self, p);
    if (rc)
        return rc;
    uint32_t had = telem_block_writer_count(p->w);
    p->npoints -= had;
    self->npoints -= had;
    rc = s_open_fill(self, p, ts, val, n);
    uint32_t now = telem_block_writer_count(p->w);
    p->npoints += now;
    self->npoints += now;
    p->open_seq = first_seq;
    if (p->next_seq < first_seq + now)
        p->next_seq = first_seq + now;
    p->open_flushed = true;
    p->open_dirty = false;
    return rc;
}

/* --- adding, evicting, expiring ---------------------------------------------- */

/* Oldest time of the series' points (npoints > 0). */
static int64_t
s_min_ts(const tstore_points_t *p)
{
    int64_t min = p->open_first;
    for (uint32_t i = 0; i < p->nblk; i++) {
        int64_t f, l;
        tstore_block_times(p, i, &f, &l);
        if (f < min)
            min = f;
        if (!p->overlap)
            break;
    }
    return min;
}

/* The series is at max_points_per_series: drops its oldest block (or,
 * with only an unflushed open block, its oldest point), or sets *discard
 * when ts is older than everything. */
static int
s_evict(telem_store_t *self, tstore_points_t *p, int64_t ts, bool *discard)
{
    if (ts < s_min_ts(p)) {
        self->evicted++;
        *discard = true;
        return 0;
    }
    if (p->nblk == 0 && !p->open_flushed) {
        int rc = s_open_drop(self, p, 1);
        if (!rc)
            self->evicted++;
        return rc;
    }
    if (p->nblk == 0) {
        int rc = s_close(self, p);
        if (rc)
            return rc;
    }
    self->evicted += s_drop_blocks(self, p, 1);
    return 0;
}

/* Adds the point to the open block, closing it first when it is full. */
static int
s_add(telem_store_t *self, tstore_series_t *s, int64_t ts, double value)
{
    tstore_points_t *p = &s->pts;
    int rc = s_w_make(self, p);
    if (rc)
        return rc;
    uint32_t n = telem_block_writer_count(p->w);
    if (n >= self->wopts.max_points) {
        if ((rc = s_close(self, p)) != 0)
            return rc;
        n = 0;
    }
    if (!s_w_fits(self, p))
        return TELEM_EFULL;
    if (n == 0)
        p->open_seq = p->next_seq;
    rc = n > 0 && ts < telem_block_writer_last(p->w)
         ? telem_block_writer_insert(p->w, ts, value)
         : telem_block_writer_append(p->w, ts, value);
    s_w_sync(self, p);
    if (rc)
        return rc;
    if (ts < p->open_first)
        p->open_first = ts;
    if (ts < p->max_last)
        p->overlap = true;
    p->next_seq++;
    p->npoints++;
    self->npoints++;
    p->open_dirty = true;
    return 0;
}

int
tstore_points_put(telem_store_t *self, tstore_series_t *s, int64_t ts,
                  double value)
{
    tstore_points_t *p = &s->pts;
    bool discard = false;
    int rc = 0;
    if (p->npoints >= self->cfg.max_points_per_series)
        rc = s_evict(self, p, ts, &discard);
    if (!rc && !discard)
        rc = s_add(self, s, ts, value);
    if (rc) {
        self->dropped++;
        return rc;
    }
    self->appended++;
    return 0;
}

uint64_t
tstore_points_expire(telem_store_t *self, tstore_series_t *s, int64_t horizon)
{
    tstore_points_t *p = &s->pts;
    uint64_t before = p->npoints;
    if (p->open_first < horizon) {
        if (p->open_flushed) {
            (void) s_close(self, p);   /* at the cap: kept */
        }
        else if (s_open_decode(self, p, &(uint32_t) { 0 }) == 0) {
            uint32_t n = telem_block_writer_count(p->w), k = 0;
            while (k < n && self->o_ts[k] < horizon)
                k++;
            (void) s_open_drop(self, p, k);
        }
    }
    if (p->exp_ts < horizon) {
        uint32_t k = 0;
        for (; k < p->nblk; k++) {
            int64_t f, l;
            tstore_block_times(p, k, &f, &l);
            if (l >= horizon)
                break;
        }
        s_drop_blocks(self, p, k);
    }
    uint64_t n = before - p->npoints;
    self->expired += n;
    return n;
}

/* --- sealing ----------------------------------------------------------------- */

/* Re-codes closed block i in its best encodings (kept as it is when that
 * is not smaller). */
static int
s_seal_one(telem_store_t *self, tstore_points_t *p, uint32_t i)
{
    tstore_block_t *b = &p->blk[i];
    size_t old = tstore_block_size(p, i);
    int rc = tstore_scratch_room(self, b->npoints);
    if (!rc)
        rc = telem_block_decode(p->buf + b->off, old, self->o_ts, self->o_val,
                                b->npoints, NULL);
    unsigned char *out = NULL;
    size_t len = 0;
    if (!rc)
        rc = telem_block_encode(self->o_ts, self->o_val, b->npoints,
                                &self->wopts, &out, &len);
    if (rc)
        return rc;
    if (len < old) {
        size_t off = b->off;
        memcpy(p->buf + off, out, len);
        memmove(p->buf + off + len, p->buf + off + old, p->len - off - old);
        p->len -= old - len;
        for (uint32_t j = i + 1; j < p->nblk; j++)
            p->blk[j].off -= (uint32_t) (old - len);
    }
    free(out);
    b->sealed = 1;
    return 0;
}

uint64_t
tstore_points_seal(telem_store_t *self, tstore_series_t *s, uint64_t budget)
{
    tstore_points_t *p = &s->pts;
    if (!p->unsealed)
        return 0;
    uint64_t done = 0;
    bool left = false;
    for (uint32_t i = 0; i < p->nblk; i++) {
        if (p->blk[i].sealed)
            continue;
        if (done >= budget || s_seal_one(self, p, i) != 0) {
            left = true;
            continue;
        }
        done += p->blk[i].npoints;
    }
    p->unsealed = left;
    return done;
}

/* --- memory ------------------------------------------------------------------ */

void
tstore_points_shrink(telem_store_t *self, tstore_series_t *s)
{
    tstore_points_t *p = &s->pts;
    if (p->cap > p->len + p->len / 8 + 256) {
        size_t cap = p->len ? p->len + p->len / 16 + 64 : 0;
        unsigned char *b = cap ? realloc(p->buf, cap) : NULL;
        if (b || cap == 0) {
            if (cap == 0)
                free(p->buf);
            self->mem -= p->cap - cap;
            p->buf = b;
            p->cap = cap;
        }
    }
    if (p->blk_cap > p->nblk * 2 + 8 || (p->nblk == 0 && p->blk_cap)) {
        uint32_t cap = p->nblk ? p->nblk + p->nblk / 4 + 4 : 0;
        tstore_block_t *b = cap ? realloc(p->blk, cap * sizeof *b) : NULL;
        if (b || cap == 0) {
            if (cap == 0)
                free(p->blk);
            self->mem -= (uint64_t) (p->blk_cap - cap) * sizeof *b;
            p->blk = b;
            p->blk_cap = cap;
        }
    }
    if (p->w && p->npoints == 0) {
        self->mem -= p->w_mem;
        telem_block_writer_destroy(&p->w);
        p->w_mem = 0;
        p->open_flushed = p->open_dirty = false;
    }
}

void
tstore_points_free(tstore_points_t *p)
{
    free(p->buf);
    free(p->blk);
    telem_block_writer_destroy(&p->w);
    memset(p, 0, sizeof *p);
    p->exp_ts = INT64_MAX;
    p->max_last = INT64_MIN;
    p->open_first = INT64_MAX;
}

void
tstore_points_release(telem_store_t *self, tstore_series_t *s)
{
    tstore_points_t *p = &s->pts;
    self->npoints -= p->npoints;
    self->mem -= p->cap + (uint64_t) p->blk_cap * sizeof(tstore_block_t)
                 + p->w_mem;
    tstore_points_free(p);
}
