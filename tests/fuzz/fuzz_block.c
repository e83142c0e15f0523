/* fuzz_block.c - libFuzzer target: the store's compressed block decoder
 * (runtime/store/telem_block*.c), which reads blocks out of segment and
 * dump files: telem_block_info(), telem_block_decode() and the iterator.
 *
 * Input: one flag byte, then the block.  Unless flag bit 0 is set the
 * target rewrites the block's CRC-32C (after the header and sections the
 * header announces), so mutations reach the codecs behind the checksum
 * instead of stopping at it.  Oracles beyond the sanitizers:
 *   - decode and the iterator agree: the same points, or both refuse
 *     (the iterator may yield points before it finds the damage);
 *   - decoded points match the header (count, first and last time) and
 *     their times never decrease;
 *   - what decodes re-encodes (telem_block_encode, and a writer's
 *     snapshot) and decodes again to the same points, bit for bit.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "telem_block.h"
#include "telem_block_int.h"

typedef struct {
    int64_t *ts;
    double *val;
    uint32_t n;
} s_pts_t;

/* Rewrites the CRC of the block at p[0..len), if its header parses. */
static void
s_fix_crc(uint8_t *p, size_t len)
{
    const uint8_t *q = p + 2, *end = p + len;
    uint64_t n, span, tsb, vb;
    if (len < 2 || !tblock_uvar_get(&q, end, &n) || end - q < 8)
        return;
    q += 8;
    if (!tblock_uvar_get(&q, end, &span) || !tblock_uvar_get(&q, end, &tsb)
        || !tblock_uvar_get(&q, end, &vb))
        return;
    size_t room = (size_t) (end - q);
    if (tsb > room || vb > room - tsb || room - tsb - vb < 4)
        return;
    size_t body = (size_t) (q - p) + (size_t) tsb + (size_t) vb;
    fz_crc_at(p + body, p, body);
}

static int
s_same(const s_pts_t *a, const int64_t *ts, const double *val, uint32_t n)
{
    if (a->n != n)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        if (a->ts[i] != ts[i] || memcmp(&a->val[i], &val[i], 8) != 0)
            return 0;
    return 1;
}

/* The iterator over buf yields exactly p's points. */
static void
s_check_iter(const uint8_t *buf, size_t len, const s_pts_t *p)
{
    static telem_block_iter_t *it;
    if (!it && !(it = telem_block_iter_new()))
        abort();
    FZ_CHECK(telem_block_iter_reset(it, buf, len, NULL) == 0);
    int64_t t;
    double v;
    uint32_t i = 0;
    int rc;
    while ((rc = telem_block_iter_next(it, &t, &v)) == 1) {
        FZ_CHECK(i < p->n && t == p->ts[i] && memcmp(&v, &p->val[i], 8) == 0);
        i++;
    }
    FZ_CHECK(rc == 0 && i == p->n);
}

/* A block decode refused: iterating it must not end cleanly either. */
static void
s_check_refused(const uint8_t *buf, size_t len)
{
    static telem_block_iter_t *it;
    if (!it && !(it = telem_block_iter_new()))
        abort();
    if (telem_block_iter_reset(it, buf, len, NULL) != 0)
        return;
    int64_t t;
    double v;
    int rc;
    while ((rc = telem_block_iter_next(it, &t, &v)) == 1)
        ;
    FZ_CHECK(rc < 0);
}

/* Decodes buf into *p (arrays of info->npoints): 0 or the decoder's code. */
static int
s_decode(const uint8_t *buf, size_t len, telem_block_info_t *info, s_pts_t *p)
{
    p->ts = malloc((info->npoints ? info->npoints : 1) * sizeof *p->ts);
    p->val = malloc((info->npoints ? info->npoints : 1) * sizeof *p->val);
    p->n = info->npoints;
    if (!p->ts || !p->val)
        abort();
    telem_block_info_t again;
    int rc = telem_block_decode(buf, len, p->ts, p->val, p->n, &again);
    if (rc == 0)
        FZ_CHECK(again.npoints == info->npoints && again.size == info->size);
    return rc;
}

/* The points re-encode, and the block written decodes to them again. */
static void
s_reencode(const s_pts_t *p)
{
    unsigned char *out = NULL;
    size_t olen = 0;
    FZ_CHECK(telem_block_encode(p->ts, p->val, p->n, NULL, &out, &olen) == 0);
    telem_block_info_t info;
    FZ_CHECK(telem_block_info(out, olen, &info) == 0 && info.size == olen);
    s_pts_t q;
    FZ_CHECK(s_decode(out, olen, &info, &q) == 0);
    FZ_CHECK(s_same(p, q.ts, q.val, q.n));
    free(out);
    free(q.ts);
    free(q.val);
}

/* A writer fed the points snapshots a block holding them. */
static void
s_writer(const s_pts_t *p)
{
    telem_block_opts_t o;
    telem_block_opts_default(&o);
    o.max_points = TELEM_BLOCK_MAX_POINTS;
    telem_block_writer_t *w = telem_block_writer_new(&o, NULL);
    if (!w)
        abort();
    for (uint32_t i = 0; i < p->n; i++)
        FZ_CHECK(telem_block_writer_append(w, p->ts[i], p->val[i]) == 0);
    size_t cap = telem_block_writer_snapshot_size(w), len = 0;
    unsigned char *buf = malloc(cap ? cap : 1);
    if (!buf)
        abort();
    FZ_CHECK(telem_block_writer_snapshot(w, buf, cap, &len) == 0);
    telem_block_info_t info;
    s_pts_t q;
    FZ_CHECK(telem_block_info(buf, len, &info) == 0);
    FZ_CHECK(s_decode(buf, len, &info, &q) == 0 && s_same(p, q.ts, q.val, q.n));
    free(q.ts);
    free(q.val);
    free(buf);
    telem_block_writer_destroy(&w);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t flags = data[0];
    size_t len = size - 1;
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        abort();
    memcpy(buf, data + 1, len);
    if (!(flags & 1))
        s_fix_crc(buf, len);
    telem_block_info_t info;
    if (telem_block_info(buf, len, &info) != 0) {
        free(buf);
        return 0;
    }
    FZ_CHECK(info.npoints >= 1 && info.size <= len);
    s_pts_t p;
    if (s_decode(buf, len, &info, &p) == 0) {
        FZ_CHECK(p.ts[0] == info.first_ts && p.ts[p.n - 1] == info.last_ts);
        for (uint32_t i = 1; i < p.n; i++)
            FZ_CHECK(p.ts[i] >= p.ts[i - 1]);
        s_check_iter(buf, len, &p);
        s_reencode(&p);
        if (flags & 2)
            s_writer(&p);
    } else {
        s_check_refused(buf, len);
    }
    free(p.ts);
    free(p.val);
    free(buf);
    return 0;
}
