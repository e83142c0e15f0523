/* bench_store_mem.c - the store's memory and speed with compressed blocks,
 * on recorded series.
 *
 * Fills a store with a retention window of an hour: S series (default
 * 10,000) x 3,600 points, each series a replay of one of the recorded
 * series of a fixture (the .json.gz files of bench/data, read as bench_block reads
 * them) with its timestamps shifted to go on where the recording ends,
 * appended time-major (every series' k-th point, then the (k+1)-th) as
 * telemd's 1 Hz sampling does, with telem_store_expire() four times per
 * simulated second (as telemd's 250 ms expiry timer calls it).
 * Every 120 simulated seconds (telemd's default flush interval) the store
 * hands what is new to a flush (telem_store_flush() into a sink that counts
 * bytes, as telemd's flush log would write them), so that flushed blocks
 * get merged in memory (merge_points).  Then prints mem_bytes, bytes a
 * sample, the append rate (points/s of the appends alone), the sealing
 * cost (time in expire per point), the longest flush, the bytes the
 * flushes handed out per sample, and the p50/p99 of a 3,600-point query of
 * one series.
 *
 * With -g the timestamps are put on an exact 1 s grid (what telemd's
 * samplers give now; node_metrics_grid.json.gz was recorded that way and
 * needs no -g).
 *
 * Usage: bench_store_mem [-s SERIES] [-b BLOCK_POINTS]... [-m MERGE_POINTS]
 *                        [-g] [FIXTURE ...]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_fixture.h"
#include "telem_store.h"

#define S_POINTS 3600
#define S_SEC INT64_C(1000000000)

typedef bench_series_t s_src_t;
typedef bench_fixture_t s_fixture_t;

/* Point k of a replay of s: the recording again and again, each round
 * starting a period after the last one ended. */
static void
s_point(const s_src_t *s, uint32_t k, int grid, int64_t t0, int64_t *ts,
        double *v)
{
    uint32_t r = k / s->n, i = k % s->n;
    int64_t span = s->ts[s->n - 1] - s->ts[0] + S_SEC;
    *ts = grid ? t0 + (int64_t) k * S_SEC
               : t0 + (int64_t) r * span + (s->ts[i] - s->ts[0]);
    *v = s->val[i];
}

static int
s_sink(void *arg, const telem_chunk_t *c)
{
    *(uint64_t *) arg += c->block_len;
    return 0;
}

static int
s_count(void *arg, const telem_series_t *s)
{
    *(uint64_t *) arg += s->npoints;
    return 0;
}

static int
s_cmp_d(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static void
s_query_times(telem_store_t *st, int64_t now, double *p50, double *p99)
{
    enum { N = 500 };
    static double us[N];
    char id[16] = "0";
    telem_tag_t f[] = { { "id", id } };
    telem_store_query_t q = { .filters = f, .nfilters = 1 };
    for (int i = 0; i < N; i++) {
        snprintf(id, sizeof id, "%d", i % 97);
        uint64_t got = 0;
        int64_t t = bench_now_ns();
        telem_store_query(st, &q, now, s_count, &got);
        us[i] = (double) (bench_now_ns() - t) / 1e3;
        if (got < S_POINTS - 200)
            bench_die("query", "%llu points", (unsigned long long) got);
    }
    qsort(us, N, sizeof us[0], s_cmp_d);
    *p50 = us[N / 2];
    *p99 = us[N * 99 / 100];
}

static void
s_run(const s_fixture_t *f, const char *name, uint32_t nseries,
      uint32_t block, uint32_t merge, int grid)
{
    telem_store_config_t cfg;
    telem_store_config_default(&cfg);
    cfg.window_ns = 3601 * S_SEC;
    cfg.mem_cap_bytes = (size_t) 4 << 30;
    cfg.max_series = nseries + 10;
    cfg.block_points = block;
    if (merge)
        cfg.merge_points = merge;
    telem_store_t *st = telem_store_new(&cfg, NULL);
    telem_store_tags_t **tags = calloc(nseries, sizeof *tags);
    for (uint32_t j = 0; j < nseries; j++) {
        char id[16];
        snprintf(id, sizeof id, "%u", j);
        telem_tag_t t[] = { { "host", "n1" }, { "id", id } };
        tags[j] = telem_store_tags_new();
        telem_store_tags_set(tags[j], t, 2);
    }
    const int64_t t0 = INT64_C(1764000000) * S_SEC;
    int64_t append_ns = 0, expire_ns = 0, flush_max = 0, now = t0;
    uint64_t flushed = 0;
    for (uint32_t k = 0; k < S_POINTS; k++) {
        int64_t a = bench_now_ns();
        for (uint32_t j = 0; j < nseries; j++) {
            const s_src_t *s = &f->s[j % f->ns];
            int64_t ts;
            double v;
            s_point(s, k, grid, t0, &ts, &v);
            if (ts > now)
                now = ts;
            if (telem_store_append_tags(st, "m", tags[j], ts, v, now) != 0)
                bench_die("append", "failed");
        }
        int64_t b = bench_now_ns();
        append_ns += b - a;
        for (int q = 1; q <= 4; q++)      /* telemd: every 250 ms */
            telem_store_expire(st, now + q * (S_SEC / 4));
        expire_ns += bench_now_ns() - b;
        if (k % 120 == 119) {
            int64_t c = bench_now_ns();
            telem_store_flush(st, s_sink, &flushed);
            int64_t d = bench_now_ns() - c;
            flush_max = d > flush_max ? d : flush_max;
        }
    }
    while (1) {          /* seal what is left, as later ticks would */
        int64_t b = bench_now_ns();
        telem_store_expire(st, now);
        expire_ns += bench_now_ns() - b;
        telem_store_stats_t s;
        telem_store_stats(st, &s);
        uint64_t before = s.mem_bytes;
        telem_store_expire(st, now);
        telem_store_stats(st, &s);
        if (s.mem_bytes == before)
            break;
    }
    telem_store_stats_t s;
    telem_store_stats(st, &s);
    double p50, p99;
    s_query_times(st, now, &p50, &p99);
    double flush_ms = (double) flush_max / 1e6;
    double pts = (double) nseries * S_POINTS;
    printf("| %s%s | %u | %u / %u | %llu | %.2f MB | %.3f | %.1f | %.1f | %.1f "
           "| %.0f / %.0f | %.3f |\n", name, grid ? " (1 s grid)" : "",
           nseries, block, merge ? merge : cfg.merge_points,
           (unsigned long long) s.npoints,
           (double) s.mem_bytes / 1e6, (double) s.mem_bytes / pts,
           (double) append_ns / pts, (double) expire_ns / pts, flush_ms,
           p50, p99, (double) flushed / pts);
    fflush(stdout);
    for (uint32_t j = 0; j < nseries; j++)
        telem_store_tags_destroy(&tags[j]);
    free(tags);
    telem_store_destroy(&st);
}

int
main(int argc, char **argv)
{
    uint32_t nseries = 10000, blocks[8] = { 120 }, nb = 0, merge = 0;
    int grid = 0, opt;
    while ((opt = getopt(argc, argv, "s:b:m:gh")) != -1) {
        if (opt == 's')
            nseries = (uint32_t) atoi(optarg);
        else if (opt == 'b' && nb < 8)
            blocks[nb++] = (uint32_t) atoi(optarg);
        else if (opt == 'm')
            merge = (uint32_t) atoi(optarg);
        else if (opt == 'g')
            grid = 1;
        else {
            printf("usage: bench_store_mem [-s SERIES] [-b BLOCK_POINTS]... "
                   "[-m MERGE_POINTS] [-g] [FIXTURE.json.gz ...]\n  fills a store with SERIES "
                   "x 3600 points replayed from recorded series\n  (default "
                   "10000, block 120, the fixtures in bench/data); -g puts "
                   "timestamps on a 1 s grid\n");
            return opt == 'h' ? 0 : 2;
        }
    }
    if (nb == 0)
        nb = 1;
    bench_print_machine("bench_store_mem");
    const char *def[] = { BENCH_DATA_DIR "/node_metrics_grid.json.gz",
                          BENCH_DATA_DIR "/node_metrics.json.gz",
                          BENCH_DATA_DIR "/user_metrics.json.gz" };
    int nf = optind < argc ? argc - optind : 3;
    printf("| fixture | series | block / merge | points | mem_bytes | B/sample "
           "| append ns/pt | seal ns/pt | longest flush ms | query 3600 us "
           "p50 / p99 | flushed B/sample |\n|---|---|---|---|---|---|---|"
           "---|---|---|---|\n");
    for (int i = 0; i < nf; i++) {
        const char *path = optind < argc ? argv[optind + i] : def[i];
        s_fixture_t f;
        bench_fixture_load(&f, path);
        const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        for (uint32_t b = 0; b < nb; b++)
            s_run(&f, name, nseries, blocks[b], merge, grid);
        bench_fixture_free(&f);
    }
    return 0;
}
