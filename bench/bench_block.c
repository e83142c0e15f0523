/* bench_block.c - bytes per sample and speed of telem's compressed blocks
 * (runtime/store/telem_block.h), side by side with Prometheus's TSDB.
 *
 * Input: fixtures of real series, as `telem_client -f json query` writes
 * them, gzip'd (bench/data/: node_metrics_grid.json.gz, level-2 node
 * metrics of a telemd at 1 s sampling, stamped on its interval grid, as
 * telemd records them; node_metrics.json.gz, the same kind recorded before
 * the grid (jittered timestamps, rates over the measured interval);
 * user_metrics.json.gz, collector timings
 * cg_dgemm_seconds[_spread] at 0.5 s rounds; docs/performance.md says how
 * they were recorded).  Each series is cut into blocks of 120 points (a
 * Prometheus chunk) and of 1,024 (the writer's default), and encoded at
 * three timestamp resolutions (exact ns; 1 us; 1 ms, what Prometheus
 * keeps) with the automatic choice and with each value codec forced.
 * Bytes per sample count whole blocks: header, both sections, checksum.
 *
 * Speed, ns per point (median of -r runs over the whole fixture): encode
 * from arrays (automatic choice), append to the open block, finish it
 * (the re-code into the closed block), decode whole blocks, iterate.
 *
 * Prometheus: when `promtool` is on PATH, the same samples are written as
 * OpenMetrics text (timestamps in ms, values %.17g) and turned into a TSDB
 * block with `promtool tsdb create-blocks-from openmetrics`; the bytes of
 * its chunks files per sample are compared with telem's at 1 ms and 120
 * points a block (the same information, the same chunk length) and at
 * its defaults.  Without promtool that column is skipped with a line.
 * Targets (issue 14): <= 1.0 B/sample on node metrics, <= 2 B on float
 * user metrics, <= 0.8x Prometheus.
 *
 * Usage: bench_block [-r RUNS] [-v] [FIXTURE.json.gz ...]
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_fixture.h"
#include "telem_block.h"

/* The fixtures' series (bench_fixture.h), under this file's names. */
typedef bench_series_t s_series_t;
typedef bench_fixture_t s_fixture_t;

/* --- sizes -------------------------------------------------------------- */

typedef struct {
    uint64_t bytes, ts_bytes, val_bytes, blocks;
    uint64_t codec_points[6];   /* points per value codec chosen */
} s_size_t;

/* Encodes series s in blocks of `bs` points; adds to *out.  Returns 0, or
 * the error of a forced codec that does not apply (DEC). */
static int
s_encode_series(const s_series_t *s, uint32_t bs, int64_t unit,
                telem_block_vcodec_t codec, s_size_t *out)
{
    telem_block_opts_t o;
    telem_block_opts_default(&o);
    o.ts_unit_ns = unit;
    o.value_codec = codec;
    for (uint32_t i = 0; i < s->n; i += bs) {
        uint32_t n = s->n - i < bs ? s->n - i : bs;
        unsigned char *buf;
        size_t len;
        int rc = telem_block_encode(s->ts + i, s->val + i, n, &o, &buf,
                                    &len);
        if (rc == TELEM_EINVAL && (codec == TELEM_BLOCK_VAL_DEC
                                   || codec == TELEM_BLOCK_VAL_RATIO)) {
            o.value_codec = TELEM_BLOCK_VAL_AUTO;      /* cannot code */
            rc = telem_block_encode(s->ts + i, s->val + i, n, &o, &buf,
                                    &len);
            o.value_codec = codec;
        }
        if (rc)
            bench_die("bench_block", "encode: %s", telem_strerror(rc));
        telem_block_info_t info;
        if (telem_block_info(buf, len, &info))
            bench_die("bench_block", "a block does not parse");
        out->bytes += len;
        out->ts_bytes += info.ts_bytes;
        out->val_bytes += info.value_bytes;
        out->blocks++;
        out->codec_points[info.value_codec % 6] += n;
        free(buf);
    }
    return 0;
}

static double
s_fixture_bps(const s_fixture_t *f, uint32_t bs, int64_t unit,
              telem_block_vcodec_t codec, s_size_t *tot)
{
    memset(tot, 0, sizeof *tot);
    for (size_t i = 0; i < f->ns; i++)
        s_encode_series(&f->s[i], bs, unit, codec, tot);
    return (double) tot->bytes / (double) f->npoints;
}

static const char *
s_unit_name(int64_t unit)
{
    return unit == 1 ? "1 ns" : unit == 1000 ? "1 us" : "1 ms";
}

static void
s_print_sizes(const s_fixture_t *f)
{
    static const int64_t units[] = {1, 1000, 1000000};
    static const uint32_t sizes[] = {120, 1024};
    printf("bytes per sample (whole blocks); value codec: auto | each "
           "forced (dec, ratio: where they apply, else auto)\n");
    printf("| ts unit | block | auto | xor | bits | dec | decx | ratio | raw "
           "| auto: ts | values | header+crc | raw/auto |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t u = 0; u < 3; u++)
        for (size_t b = 0; b < 2; b++) {
            s_size_t a, t;
            double bps = s_fixture_bps(f, sizes[b], units[u],
                                       TELEM_BLOCK_VAL_AUTO, &a);
            printf("| %s | %u | **%.3f** |", s_unit_name(units[u]),
                   sizes[b], bps);
            static const telem_block_vcodec_t forced[] = {
                TELEM_BLOCK_VAL_XOR, TELEM_BLOCK_VAL_BITS,
                TELEM_BLOCK_VAL_DEC, TELEM_BLOCK_VAL_DECX,
                TELEM_BLOCK_VAL_RATIO, TELEM_BLOCK_VAL_RAW};
            for (size_t c = 0; c < 6; c++)
                printf(" %.3f |", s_fixture_bps(f, sizes[b], units[u],
                                                forced[c], &t));
            double np = (double) f->npoints;
            printf(" %.3f | %.3f | %.3f | %.1fx |\n",
                   (double) a.ts_bytes / np, (double) a.val_bytes / np,
                   (double) (a.bytes - a.ts_bytes - a.val_bytes) / np,
                   16.0 * np / (double) a.bytes);
        }
}

/* One line per series at the given setting. */
static void
s_print_series(const s_fixture_t *f, uint32_t bs, int64_t unit)
{
    printf("per series, %s, blocks of %u, auto:\n", s_unit_name(unit), bs);
    printf("| series | points | B/sample | ts | values | codecs "
           "(points: raw/xor/dec/bits/decx/ratio) |\n|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < f->ns; i++) {
        s_size_t t = {0};
        s_encode_series(&f->s[i], bs, unit, TELEM_BLOCK_VAL_AUTO, &t);
        double n = (double) f->s[i].n;
        printf("| %s | %u | %.3f | %.3f | %.3f | %llu/%llu/%llu/%llu/%llu/%llu "
               "|\n",
               f->s[i].name, f->s[i].n, (double) t.bytes / n,
               (double) t.ts_bytes / n, (double) t.val_bytes / n,
               (unsigned long long) t.codec_points[0],
               (unsigned long long) t.codec_points[1],
               (unsigned long long) t.codec_points[2],
               (unsigned long long) t.codec_points[3],
               (unsigned long long) t.codec_points[4],
               (unsigned long long) t.codec_points[5]);
    }
}

/* --- speed -------------------------------------------------------------- */

typedef struct {
    unsigned char **blk;
    size_t *len;
    size_t nblk;
} s_blocks_t;

/* Encodes the fixture in blocks of bs; returns the time taken. */
static int64_t
s_encode_all(const s_fixture_t *f, uint32_t bs, s_blocks_t *out)
{
    size_t cap = 0;
    for (size_t i = 0; i < f->ns; i++)
        cap += (f->s[i].n + bs - 1) / bs;
    out->blk = calloc(cap, sizeof *out->blk);
    out->len = calloc(cap, sizeof *out->len);
    out->nblk = 0;
    int64_t t0 = bench_now_ns();
    for (size_t i = 0; i < f->ns; i++)
        for (uint32_t k = 0; k < f->s[i].n; k += bs) {
            uint32_t n = f->s[i].n - k < bs ? f->s[i].n - k : bs;
            if (telem_block_encode(f->s[i].ts + k, f->s[i].val + k, n, NULL,
                                   &out->blk[out->nblk],
                                   &out->len[out->nblk]))
                bench_die("bench_block", "encode failed");
            out->nblk++;
        }
    return bench_now_ns() - t0;
}

static void
s_blocks_free(s_blocks_t *b)
{
    for (size_t i = 0; i < b->nblk; i++)
        free(b->blk[i]);
    free(b->blk);
    free(b->len);
}

/* Appends every point to open blocks of bs; *finish_ns receives the time
 * the finishes took, *open_bytes the sizes of the open blocks (their
 * snapshots) just before each finish.  Returns the time of the appends. */
static int64_t
s_append_all(const s_fixture_t *f, uint32_t bs, int64_t *finish_ns,
             uint64_t *open_bytes)
{
    telem_block_opts_t o;
    telem_block_opts_default(&o);
    o.max_points = bs;
    telem_block_writer_t *w = telem_block_writer_new(&o, NULL);
    int64_t app = 0, fin = 0;
    *open_bytes = 0;
    for (size_t i = 0; i < f->ns; i++) {
        for (uint32_t k = 0; k < f->s[i].n; k += bs) {
            uint32_t n = f->s[i].n - k < bs ? f->s[i].n - k : bs;
            int64_t t0 = bench_now_ns();
            for (uint32_t j = k; j < k + n; j++)
                if (telem_block_writer_append(w, f->s[i].ts[j],
                                              f->s[i].val[j]))
                    bench_die("bench_block", "append failed");
            int64_t t1 = bench_now_ns();
            *open_bytes += telem_block_writer_snapshot_size(w);
            unsigned char *buf;
            size_t len;
            if (telem_block_writer_finish(w, &buf, &len))
                bench_die("bench_block", "finish failed");
            fin += bench_now_ns() - t1;
            app += t1 - t0;
            free(buf);
        }
    }
    telem_block_writer_destroy(&w);
    *finish_ns = fin;
    return app;
}

static int64_t
s_decode_all(const s_blocks_t *b, int64_t *ts, double *val, double *sink)
{
    int64_t t0 = bench_now_ns();
    for (size_t i = 0; i < b->nblk; i++) {
        telem_block_info_t info;
        if (telem_block_decode(b->blk[i], b->len[i], ts, val,
                               TELEM_BLOCK_MAX_POINTS, &info))
            bench_die("bench_block", "decode failed");
        *sink += val[info.npoints - 1];
    }
    return bench_now_ns() - t0;
}

static int64_t
s_iterate_all(const s_blocks_t *b, double *sink)
{
    telem_block_iter_t *it = telem_block_iter_new();
    int64_t t0 = bench_now_ns();
    for (size_t i = 0; i < b->nblk; i++) {
        int64_t t;
        double v;
        if (telem_block_iter_reset(it, b->blk[i], b->len[i], NULL))
            bench_die("bench_block", "iterator failed");
        while (telem_block_iter_next(it, &t, &v) == 1)
            *sink += v;
    }
    int64_t dt = bench_now_ns() - t0;
    telem_block_iter_destroy(&it);
    return dt;
}

static void
s_print_speed(const s_fixture_t *f, int runs)
{
    static int64_t ts[TELEM_BLOCK_MAX_POINTS];
    static double val[TELEM_BLOCK_MAX_POINTS];
    static const uint32_t sizes[] = {120, 1024};
    double np = (double) f->npoints, sink = 0;
    printf("speed, ns per point (median of %d runs; exact timestamps, auto);"
           " open: B/sample of the open blocks (their snapshots) when full\n"
           "| block | encode | append | finish | decode | iterate | open |\n"
           "|---|---|---|---|---|---|---|\n", runs);
    for (size_t b = 0; b < 2; b++) {
        double enc[64], app[64], fin[64], dec[64], itr[64];
        uint64_t open = 0;
        for (int r = 0; r < runs; r++) {
            s_blocks_t blocks;
            enc[r] = (double) s_encode_all(f, sizes[b], &blocks) / np;
            int64_t fns;
            app[r] = (double) s_append_all(f, sizes[b], &fns, &open) / np;
            fin[r] = (double) fns / np;
            dec[r] = (double) s_decode_all(&blocks, ts, val, &sink) / np;
            itr[r] = (double) s_iterate_all(&blocks, &sink) / np;
            s_blocks_free(&blocks);
        }
        printf("| %u | %.1f | %.1f | %.1f | %.2f | %.2f | %.3f |\n", sizes[b],
               bench_median_d(enc, (size_t) runs),
               bench_median_d(app, (size_t) runs),
               bench_median_d(fin, (size_t) runs),
               bench_median_d(dec, (size_t) runs),
               bench_median_d(itr, (size_t) runs), (double) open / np);
    }
    if (sink == 42.4242)
        printf("\n");               /* keeps the decodes from being elided */
}

/* --- Prometheus ---------------------------------------------------------- */

/* Writes the fixture as OpenMetrics text (ms timestamps). */
static void
s_write_openmetrics(const s_fixture_t *f, const char *path)
{
    FILE *out = fopen(path, "w");
    if (!out)
        bench_die("bench_block", "cannot write %s", path);
    const char *prev = "";
    for (size_t i = 0; i < f->ns; i++) {
        const s_series_t *s = &f->s[i];
        if (strcmp(prev, s->metric) != 0)
            fprintf(out, "# TYPE %s gauge\n", s->metric);
        prev = s->metric;
        for (uint32_t k = 0; k < s->n; k++) {
            int64_t ms = s->ts[k] / 1000000 - (s->ts[k] % 1000000 < 0);
            fprintf(out, "%s %.17g %lld.%03lld\n", s->name, s->val[k],
                    (long long) (ms / 1000), (long long) (ms % 1000));
        }
    }
    fprintf(out, "# EOF\n");
    fclose(out);
}

/* Sums the sizes of the files under DIR/<block>/chunks/. */
static uint64_t
s_chunk_bytes(const char *dir)
{
    uint64_t total = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char cdir[4200];
        snprintf(cdir, sizeof cdir, "%s/%s/chunks", dir, e->d_name);
        DIR *c = opendir(cdir);
        struct dirent *ce;
        while (c && (ce = readdir(c)) != NULL) {
            char p[4600];
            struct stat st;
            snprintf(p, sizeof p, "%s/%s", cdir, ce->d_name);
            if (ce->d_name[0] != '.' && stat(p, &st) == 0
                && S_ISREG(st.st_mode))
                total += (uint64_t) st.st_size;
        }
        if (c)
            closedir(c);
    }
    if (d)
        closedir(d);
    return total;
}

/* Bytes per sample of Prometheus's chunks, or -1 without promtool. */
static double
s_prometheus(const s_fixture_t *f)
{
    if (system("command -v promtool > /dev/null 2>&1") != 0)
        return -1;
    char dir[256], om[512], out[512], cmd[2048];
    bench_tmpdir(dir, sizeof dir, "block");
    snprintf(om, sizeof om, "%s/samples.om", dir);
    snprintf(out, sizeof out, "%s/tsdb", dir);
    s_write_openmetrics(f, om);
    snprintf(cmd, sizeof cmd, "promtool tsdb create-blocks-from openmetrics "
             "'%s' '%s' > '%s/promtool.log' 2>&1", om, out, dir);
    if (system(cmd) != 0)
        bench_die("bench_block", "promtool failed (see %s/promtool.log)",
                  dir);
    uint64_t bytes = s_chunk_bytes(out);
    bench_rmtree(dir);
    return (double) bytes / (double) f->npoints;
}

static void
s_print_prometheus(const s_fixture_t *f, double target)
{
    s_size_t t;
    double ms120 = s_fixture_bps(f, 120, 1000000, TELEM_BLOCK_VAL_AUTO, &t);
    double ms1k = s_fixture_bps(f, 1024, 1000000, TELEM_BLOCK_VAL_AUTO, &t);
    double ns1k = s_fixture_bps(f, 1024, 1, TELEM_BLOCK_VAL_AUTO, &t);
    double prom = s_prometheus(f);
    if (prom < 0) {
        printf("Prometheus: skipped, promtool is not installed "
               "(apt-get install prometheus)\n");
        printf("telem: %.3f B/sample (1 ms, 1,024 a block), target <= %.1f:"
               " %s\n", ms1k, target, bench_verdict(ms1k <= target));
        return;
    }
    printf("| same samples | B/sample | telem/Prometheus |\n|---|---|---|\n");
    printf("| Prometheus TSDB chunks (promtool, ms, 120 a chunk) | %.3f | "
           "1.00x |\n", prom);
    printf("| telem, 1 ms, 120 a block | %.3f | %.2fx |\n", ms120,
           ms120 / prom);
    printf("| telem, 1 ms, 1,024 a block | %.3f | %.2fx |\n", ms1k,
           ms1k / prom);
    printf("| telem, exact ns, 1,024 a block | %.3f | %.2fx |\n", ns1k,
           ns1k / prom);
    printf("target <= 0.8x Prometheus (1 ms, 120): %s;  <= %.1f B/sample "
           "(1 ms, 1,024): %s\n", bench_verdict(ms120 / prom <= 0.8),
           target, bench_verdict(ms1k <= target));
    char tgt[32], peer[64], r[32];
    snprintf(peer, sizeof peer, "Prometheus chunks %.3f B/sample", prom);
    snprintf(r, sizeof r, "%.2fx", ms120 / prom);
    bench_figure("compressed blocks, 1 ms, 120 a block", "<= 0.8x Prometheus",
                 peer, r, ms120 / prom <= 0.8, "%.3f B/sample", ms120);
    snprintf(tgt, sizeof tgt, "<= %.1f B/sample", target);
    snprintf(r, sizeof r, "%.2fx", ms1k / prom);
    bench_figure("compressed blocks, 1 ms, 1,024 a block", tgt, peer, r,
                 ms1k <= target, "%.3f B/sample", ms1k);
}

/* --- what if ------------------------------------------------------------ */

/* A copy of the node fixture as telemd could record it: each sample
 * stamped on its sampler's 1 s grid (as collectors stamp their rounds),
 * and each rate (*_per_s) given as the counter increment per nominal
 * second, recovered exactly from the recording (rate x actual interval;
 * every sample after the first of a series checks out exactly, the first
 * is rounded).  Not telem's data today: it shows what the sampling design
 * costs. */
static void
s_whatif(const s_fixture_t *f, s_fixture_t *out, uint64_t *inexact)
{
    *out = *f;
    out->s = calloc(f->ns, sizeof *out->s);
    *inexact = 0;
    for (size_t i = 0; i < f->ns; i++) {
        const s_series_t *in = &f->s[i];
        s_series_t *o = &out->s[i];
        *o = *in;
        o->ts = malloc(in->n * sizeof *o->ts);
        o->val = malloc(in->n * sizeof *o->val);
        int rate = strstr(in->metric, "_per_s") != NULL;
        for (uint32_t k = 0; k < in->n; k++) {
            int64_t off = in->ts[k] - in->ts[0];
            o->ts[k] = in->ts[0] + (off + 500000000) / 1000000000
                                   * 1000000000;
            o->val[k] = in->val[k];
            if (!rate)
                continue;
            double dt = k ? (double) (in->ts[k] - in->ts[k - 1]) / 1e9 : 1.0;
            double m = nearbyint(in->val[k] * dt);
            *inexact += m / dt != in->val[k];
            o->val[k] = m;
        }
    }
}

static void
s_print_whatif(const s_fixture_t *f)
{
    s_fixture_t w;
    uint64_t inexact;
    s_whatif(f, &w, &inexact);
    s_size_t t;
    printf("what if telemd stamped node samples on its 1 s grid and "
           "recorded rates as increments per nominal second (the same "
           "recording, transformed; %llu of %llu samples inexact):\n",
           (unsigned long long) inexact, (unsigned long long) w.npoints);
    printf("| block | B/sample, exact ns | 1 ms |\n|---|---|---|\n");
    for (uint32_t bs = 120; bs <= 1024; bs = bs == 120 ? 1024 : 2048)
        printf("| %u | %.3f | %.3f |\n", bs,
               s_fixture_bps(&w, bs, 1, TELEM_BLOCK_VAL_AUTO, &t),
               s_fixture_bps(&w, bs, 1000000, TELEM_BLOCK_VAL_AUTO, &t));
    for (size_t i = 0; i < w.ns; i++) {
        free(w.s[i].ts);
        free(w.s[i].val);
    }
    free(w.s);
}

/* --- main ---------------------------------------------------------------- */

int
main(int argc, char **argv)
{
    int runs = 5, verbose = 0, opt;
    while ((opt = getopt(argc, argv, "r:vh")) != -1) {
        if (opt == 'r')
            runs = atoi(optarg);
        else if (opt == 'v')
            verbose = 1;
        else {
            fprintf(stderr, "usage: bench_block [-r RUNS] [-v] "
                    "[FIXTURE.json.gz ...]\n");
            return 2;
        }
    }
    if (runs < 1 || runs > 64)
        bench_die("bench_block", "-r takes 1..64");
    const char *defaults[] = {BENCH_DATA_DIR "/node_metrics_grid.json.gz",
                              BENCH_DATA_DIR "/node_metrics.json.gz",
                              BENCH_DATA_DIR "/user_metrics.json.gz"};
    int nf = argc - optind;
    char **files = argv + optind;
    if (nf == 0) {
        nf = 3;
        files = (char **) defaults;
    }
    bench_print_machine("bench_block");
    for (int i = 0; i < nf; i++) {
        s_fixture_t f;
        bench_fixture_load(&f, files[i]);
        const char *base = strrchr(files[i], '/');
        base = base ? base + 1 : files[i];
        int node = strstr(base, "node") != NULL;
        printf("\n-- %s: %zu series, %llu samples (raw: 16 B/sample)\n",
               base, f.ns, (unsigned long long) f.npoints);
        s_print_sizes(&f);
        if (verbose) {
            s_print_series(&f, 1024, 1);
            s_print_series(&f, 1024, 1000000);
        }
        s_print_speed(&f, runs);
        s_print_prometheus(&f, node ? 1.0 : 2.0);
        if (node)
            s_print_whatif(&f);
        bench_fixture_free(&f);
    }
    return 0;
}
