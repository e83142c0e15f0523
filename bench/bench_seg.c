/* bench_seg.c - the flush log's costs: one flush of 10,000 series' open
 * blocks (put + commit, fdatasync included), and reading an hour of
 * 10,000 series at 1 Hz back (index build, then every block as a reload
 * takes it, then one query of every series).
 *
 * The log is written as telemd writes it: every series keeps an open
 * block (telem_block_writer_t) that takes one point a second; at each
 * flush (every --flush seconds) the open block's snapshot is written, and
 * a block that reaches 1,024 points is closed and written once more.
 *
 *   bench_seg [--series N] [--minutes M] [--flush S] [--dir DIR]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telem_block.h"
#include "telem_hist.h"
#include "telem_seg.h"
#include "telem_time.h"
#include "../tests/tmpdir.h"

typedef struct {
    telem_block_writer_t *w;
    uint64_t first_seq;
    uint64_t n;
    char key[48];
    uint32_t key_len;
} ser_t;

static double
s_ms(int64_t ns)
{
    return (double) ns / 1e6;
}

static int
s_put_open(telem_seglog_t *log, ser_t *s, unsigned char *buf, size_t cap)
{
    size_t len;
    if (telem_block_writer_count(s->w) == 0 ||
        telem_block_writer_snapshot(s->w, buf, cap, &len) != 0)
        return 0;
    telem_chunk_t c = {.key = s->key, .key_len = s->key_len,
                       .metric = s->key, .first_seq = s->first_seq,
                       .block = buf, .block_len = len, .closed = 0};
    return telem_seglog_put_chunk(log, &c);
}

static int
s_close_block(telem_seglog_t *log, ser_t *s)
{
    unsigned char *out;
    size_t len;
    uint32_t n = telem_block_writer_count(s->w);
    if (telem_block_writer_finish(s->w, &out, &len) != 0)
        return -1;
    telem_chunk_t c = {.key = s->key, .key_len = s->key_len,
                       .metric = s->key, .first_seq = s->first_seq,
                       .block = out, .block_len = len, .closed = 1};
    int rc = telem_seglog_put_chunk(log, &c);
    free(out);
    s->first_seq += n;
    return rc;
}

/* Writes minutes of nser series at 1 Hz; prints the flush figures. */
static int
s_write(const char *dir, int nser, int minutes, int flush_s, int64_t t0)
{
    telem_seglog_config_t cfg;
    telem_seglog_config_default(&cfg);
    cfg.dir = dir;
    cfg.node = "bench";
    cfg.total_bytes = 0;
    telem_seglog_t *log = telem_seglog_open(&cfg, NULL);
    ser_t *ser = calloc((size_t) nser, sizeof *ser);
    unsigned char *buf = malloc(1 << 20);
    if (!log || !ser || !buf)
        return -1;
    for (int i = 0; i < nser; i++) {
        ser[i].w = telem_block_writer_new(NULL, NULL);
        char metric[16], id[16];
        snprintf(metric, sizeof metric, "metric%d", i % 50);
        snprintf(id, sizeof id, "c%d", i);
        const char *parts[] = {metric, "host", "n1", "id", id};
        uint32_t at = 0;
        for (int k = 0; k < 5; k++) {
            size_t n = strlen(parts[k]) + 1;
            memcpy(ser[i].key + at, parts[k], n);
            at += (uint32_t) n;
        }
        ser[i].key_len = at;
    }
    int64_t put_ns = 0, commit_ns = 0, worst = 0;
    int nflush = 0;
    uint64_t bytes = 0;
    for (int sec = 1; sec <= minutes * 60; sec++) {
        int64_t ts = t0 + (int64_t) sec * TELEM_NS_PER_SEC;
        for (int i = 0; i < nser; i++) {
            double v = (i % 3 == 0) ? (double) (sec * (i + 1))
                       : (i % 3 == 1) ? floor(50 + 20 * sin(sec / 30.0 + i))
                                      : (double) ((sec * 7 + i) % 100) / 4;
            if (telem_block_writer_append(ser[i].w, ts + (i % 1000) * 1000, v))
                return -1;
            if (telem_block_writer_count(ser[i].w) >= 1024 &&
                s_close_block(log, &ser[i]))
                return -1;
        }
        if (sec % flush_s)
            continue;
        int64_t a = telem_mono_ns();
        for (int i = 0; i < nser; i++)
            if (s_put_open(log, &ser[i], buf, 1 << 20))
                return -1;
        int64_t b = telem_mono_ns();
        if (telem_seglog_commit(log, ts))
            return -1;
        int64_t c = telem_mono_ns();
        put_ns += b - a;
        commit_ns += c - b;
        worst = c - a > worst ? c - a : worst;
        nflush++;
    }
    telem_seglog_stats_t st;
    telem_seglog_stats(log, &st);
    bytes = st.total_bytes;
    printf("flush of %d open blocks: put %.2f ms, commit (write + "
           "fdatasync) %.2f ms, worst flush %.2f ms (mean of %d)\n",
           nser, s_ms(put_ns / nflush), s_ms(commit_ns / nflush), s_ms(worst),
           nflush);
    printf("log: %.1f MB in %llu segments for %d min: %.2f B/point\n",
           bytes / 1e6, (unsigned long long) st.segments, minutes,
           (double) bytes / ((double) nser * minutes * 60));
    for (int i = 0; i < nser; i++)
        telem_block_writer_destroy(&ser[i].w);
    free(ser);
    free(buf);
    telem_seglog_close(&log);
    return 0;
}

typedef struct {
    uint64_t chunks, points;
} count_t;

static int
s_on_chunk(void *arg, const telem_chunk_t *c)
{
    count_t *k = arg;
    telem_block_info_t info;
    if (telem_block_info(c->block, c->block_len, &info))
        return -1;
    k->chunks++;
    k->points += info.npoints;
    return 0;
}

static int
s_on_series(void *arg, const char *node, const telem_series_t *s)
{
    (void) node;
    ((count_t *) arg)->points += s->npoints;
    return 0;
}

static int
s_read(const char *dir, int nser, int minutes)
{
    int64_t a = telem_mono_ns();
    telem_hist_t *h = telem_hist_new(NULL);
    if (!h || telem_hist_add_dir(h, dir, NULL))
        return -1;
    int64_t b = telem_mono_ns();
    count_t k = {0, 0};
    if (telem_hist_chunks(h, "bench", INT64_MIN, s_on_chunk, &k))
        return -1;
    int64_t c = telem_mono_ns();
    count_t q = {0, 0};
    telem_store_query_t query = {0};
    if (telem_hist_query(h, NULL, &query, s_on_series, &q))
        return -1;
    int64_t d = telem_mono_ns();
    telem_hist_stats_t st;
    telem_hist_stats(h, &st);
    printf("read back %d series x %d min: index %.1f ms (%llu blocks kept, "
           "%llu versions dropped), reload chunks %.1f ms (%llu chunks, "
           "%llu points), index + chunks %.1f ms (target <= 1000 ms)\n",
           nser, minutes, s_ms(b - a), (unsigned long long) st.blocks,
           (unsigned long long) st.versions_dropped, s_ms(c - b),
           (unsigned long long) k.chunks, (unsigned long long) k.points,
           s_ms(c - a));
    printf("query of every series, every point: %.1f ms (%llu points, "
           "%.1f M points/s)\n",
           s_ms(d - c), (unsigned long long) q.points,
           (double) q.points / ((double) (d - c) / 1e9) / 1e6);
    telem_hist_destroy(&h);
    return k.points == (uint64_t) nser * (uint64_t) minutes * 60 ? 0 : -1;
}

int
main(int argc, char **argv)
{
    int nser = 10000, minutes = 60, flush_s = 120;
    char dir[512] = "";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            printf("usage: bench_seg [--series N] [--minutes M] [--flush S] "
                   "[--dir DIR]\n");
            return 0;
        }
        if (i + 1 >= argc)
            break;
        if (!strcmp(argv[i], "--series"))
            nser = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--minutes"))
            minutes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--flush"))
            flush_s = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir"))
            snprintf(dir, sizeof dir, "%s", argv[++i]);
    }
    char tmp[256];
    if (test_tmpdir(tmp, sizeof tmp, "bench_seg")) {
        fprintf(stderr, "bench_seg: no temporary directory\n");
        return 1;
    }
    if (!*dir)
        snprintf(dir, sizeof dir, "%s/log", tmp);
    int64_t t0 = INT64_C(1700000000) * TELEM_NS_PER_SEC;
    int rc = s_write(dir, nser, minutes, flush_s, t0);
    if (rc == 0)
        rc = s_read(dir, nser, minutes);
    test_rmtree(tmp);
    if (rc)
        fprintf(stderr, "bench_seg: failed\n");
    return rc ? 1 : 0;
}
