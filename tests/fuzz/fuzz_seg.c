/* fuzz_seg.c - libFuzzer target: the store's segment and dump readers
 * (runtime/store/telem_seg_read.c, telem_seg_index.c, telem_seg_payload.c)
 * and the history index over them (telem_hist*.c), which telemd reloads
 * its history with and telem_view, telem_client report --dump and
 * telem_agg read dumps with.
 *
 * Input: one flag byte, then the file.  The readers take a path, so the
 * file is written to the scratch directory first.  Unless flag bit 0 is
 * set, the target rewrites the checksums a mutation broke - the file
 * header's CRC, each record's header CRC and payload CRC (records found
 * at their sync markers, as the reader resynchronises) and the dump
 * footer's CRC - so mutations reach the payload decoders instead of
 * stopping at a checksum.  Oracles beyond the sanitizers:
 *   - every BLOCK record handed out holds a block telem_block_info()
 *     accepts, whose header matches the record's npoints and times;
 *   - damage counts add up (listed stretches at most `bad`);
 *   - every record the walk handed out reads again at its offset
 *     (telem_seg_read_at);
 *   - the history's queries walk only what the files held: points in
 *     time order within the asked range.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "telem_block.h"
#include "telem_hist.h"
#include "telem_seg.h"
#include "telem_seg_int.h"

#define S_OFFSETS 64

typedef struct {
    uint64_t off[S_OFFSETS];
    size_t n;
    size_t bytes;                 /* touched, so nothing is optimised out */
} s_walk_t;

/* ---------------------------------------------------------- CRC fix-ups */

static void
s_fix_header(uint8_t *p, size_t len)
{
    if (len < SEG_FILE_HDR_MIN || memcmp(p, SEG_MAGIC, 8) != 0)
        return;
    size_t nlen = (size_t) p[20] | (size_t) p[21] << 8;
    size_t body = SEG_FILE_HDR_MIN - 4 + nlen;
    if (nlen <= TELEM_NAME_MAX && body + 4 <= len)
        fz_crc_at(p + body, p, body);
}

/* Fixes the record at p[0..len) when one starts there; its size or 0. */
static size_t
s_fix_record(uint8_t *p, size_t len)
{
    if (len < SEG_REC_OVERHEAD || fz_get32le(p) != SEG_SYNC)
        return 0;
    uint32_t hcrc = telem_crc32c(0, p, 10);
    p[10] = (uint8_t) hcrc;
    p[11] = (uint8_t) (hcrc >> 8);
    uint32_t plen = fz_get32le(p + 4);
    if (plen > len - SEG_REC_OVERHEAD)
        return 0;
    fz_crc_at(p + SEG_REC_HDR + plen, p + SEG_REC_HDR, plen);
    return SEG_REC_OVERHEAD + plen;
}

static void
s_fix(uint8_t *p, size_t len)
{
    s_fix_header(p, len);
    for (size_t i = 0; i + SEG_REC_OVERHEAD <= len;) {
        size_t n = s_fix_record(p + i, len - i);
        i += n ? n : 1;
    }
    if (len >= SEG_FOOTER
        && memcmp(p + len - SEG_FOOTER, SEG_FOOT_MAGIC, 8) == 0)
        fz_crc_at(p + len - 4, p + len - SEG_FOOTER, 24);
}

/* ----------------------------------------------------------- the reads */

static int
s_on_record(void *arg, const telem_seg_rec_t *r)
{
    s_walk_t *w = arg;
    if (w->n < S_OFFSETS)
        w->off[w->n++] = r->offset;
    if (r->node)
        w->bytes += strlen(r->node);
    if (r->kind == TELEM_SEG_REC_SERIES || r->kind == TELEM_SEG_REC_BLOCK) {
        FZ_CHECK(r->chunk.key && r->chunk.key_len > 0
                 && r->chunk.key[r->chunk.key_len - 1] == '\0');
        w->bytes += strlen(r->chunk.metric);
    }
    if (r->kind == TELEM_SEG_REC_BLOCK) {
        telem_block_info_t bi;
        FZ_CHECK(telem_block_info(r->chunk.block, r->chunk.block_len, &bi) == 0);
        FZ_CHECK(bi.npoints == r->npoints && bi.first_ts == r->first_ts
                 && bi.last_ts == r->last_ts);
    }
    if (r->kind == TELEM_SEG_REC_META)
        w->bytes += strlen(r->meta.metric) + strlen(r->meta.unit)
                    + strlen(r->meta.doc);
    if (r->json)
        for (size_t i = 0; i < r->json_len; i++)
            w->bytes += (unsigned char) r->json[i] == 0xff;
    return 0;
}

static int
s_on_again(void *arg, const telem_seg_rec_t *r)
{
    (void) arg;
    (void) r;
    return 0;
}

static int
s_on_index(void *arg, const telem_seg_iseries_t *s, uint64_t other)
{
    s_walk_t *w = arg;
    (void) other;
    if (!s)                   /* a META, SNAPSHOT or ANNOTATION offset */
        return 0;
    if (s->key)
        w->bytes += strlen(s->node) + s->key_len;
    for (uint32_t i = 0; i < s->nblocks; i++)
        FZ_CHECK(s->blocks[i].first_ts <= s->blocks[i].last_ts);
    return 0;
}

/* The walk, then every record it handed out read again by offset. */
static void
s_read(const char *path)
{
    s_walk_t w = { .n = 0 };
    telem_seg_damage_t dmg;
    telem_seg_info_t info;
    if (telem_seg_read(path, s_on_record, &w, &info, &dmg) != 0)
        return;
    FZ_CHECK(dmg.nlist <= TELEM_SEG_DAMAGE_LIST && dmg.nlist <= dmg.bad);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    for (size_t i = 0; fd >= 0 && i < w.n; i++)
        FZ_CHECK(telem_seg_read_at(fd, w.off[i], s_on_again, NULL) == 0);
    if (fd >= 0)
        close(fd);
    telem_seg_read_index(path, s_on_index, &w);
}

/* ------------------------------------------------------------- history */

typedef struct {
    int64_t start, end;
    size_t points;
} s_q_t;

static int
s_on_series(void *arg, const char *node, const telem_series_t *s)
{
    s_q_t *q = arg;
    FZ_CHECK(node && s->metric);
    for (uint32_t i = 0; i < s->npoints; i++) {
        FZ_CHECK(i == 0 || s->ts[i] >= s->ts[i - 1]);
        FZ_CHECK(!q->start || s->ts[i] >= q->start);
        FZ_CHECK(!q->end || s->ts[i] <= q->end);
    }
    q->points += s->npoints;
    return 0;
}

static int
s_on_chunk(void *arg, const telem_chunk_t *c)
{
    telem_block_info_t bi;
    (void) arg;
    FZ_CHECK(telem_block_info(c->block, c->block_len, &bi) == 0);
    return 0;
}

static int
s_on_meta(void *arg, const char *node, const telem_meta_t *m)
{
    size_t *n = arg;
    *n += strlen(node) + strlen(m->metric);
    return 0;
}

static void
s_queries(telem_hist_t *h, const char *node, uint8_t flags)
{
    telem_store_query_t q = { .flags = TELEM_QUERY_LIST };
    s_q_t got = { 0, 0, 0 };
    telem_hist_query(h, node, &q, s_on_series, &got);
    q.flags = flags & 4 ? TELEM_QUERY_LATEST : 0;
    q.max_points = flags & 8 ? 3 : 0;
    telem_hist_query(h, node, &q, s_on_series, &got);
    telem_hist_stats_t st;
    telem_hist_stats(h, &st);
    if (st.first_ts <= st.last_ts && st.last_ts - st.first_ts > 2) {
        got.start = q.start_ns = st.first_ts + 1;
        got.end = q.end_ns = st.last_ts - 1;
        telem_hist_query(h, node, &q, s_on_series, &got);
    }
    if (node)
        telem_hist_chunks(h, node, INT64_MIN, s_on_chunk, NULL);
}

static void
s_history(const char *path, uint8_t flags)
{
    telem_hist_t *h = telem_hist_new(NULL);
    if (!h)
        abort();
    if (telem_hist_add_file(h, path, NULL) == 0) {
        size_t bytes = 0;
        for (uint32_t i = 0; i < telem_hist_nnodes(h) && i < 4; i++) {
            const char *node = telem_hist_node(h, i), *json;
            size_t len;
            if (telem_hist_snapshot(h, node, &json, &len, NULL) == 0)
                bytes += len;
            s_queries(h, node, flags);
        }
        s_queries(h, NULL, flags);
        telem_hist_meta_walk(h, NULL, s_on_meta, &bytes);
        for (uint32_t i = 0; i < telem_hist_nnotes(h); i++)
            bytes += strlen(telem_hist_note(h, i)->json);
    }
    telem_hist_destroy(&h);
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
        s_fix(buf, len);
    char path[FZ_PATH_MAX];
    snprintf(path, sizeof path, "%s/f%s", fz_scratch(),
             flags & 2 ? TELEM_DUMP_SUFFIX : TELEM_SEG_SUFFIX);
    if (fz_write(path, buf, len) != 0)
        abort();
    free(buf);
    s_read(path);
    s_history(path, flags);
    unlink(path);
    return 0;
}
