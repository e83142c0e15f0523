/* bench_flush.c - how long telemd's flush holds up ingest, and how long
 * its writer thread takes to write a flush (docs/performance.md, "Flush
 * without stalling ingest").
 *
 * telemd's own store and flush log (telemd_log.h), driven as telemd's
 * actor drives them: 10,000 series (100 metrics x 100 ranks, tagged as
 * telemd tags them) get one point a second each, and every --flush
 * seconds of that data the ingest thread calls telemd_log_flush(), the
 * same call telemd's tick makes; telem_store_expire() runs four times
 * per second of data, as telemd's tick runs it every 250 ms (it seals closed
 * blocks, which a flush would otherwise do; its longest run is printed
 * too, as it is also ingest's time).  Time is simulated (points carry the
 * times of a 1 Hz feed), so the bench runs in seconds: the store holds
 * exactly what 120 s at 1 Hz leave unflushed.  Measured per flush: the
 * ingest pause (the flush call on the ingest thread: store walk + copy
 * into the hand-off buffer) and the writer's put + commit (one write +
 * fdatasync), taken from the log's figures once the writer is idle.  For
 * comparison, the last rounds also time the synchronous flush (walk,
 * put and commit all on the ingest thread, as before the writer thread:
 * telemd_log_sync()).
 *
 *   bench_flush [--series N] [--flushes N] [--flush S] [--dir DIR]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"
#include "telem_error.h"
#include "telem_store.h"
#include "telem_time.h"
#include "telemd_log.h"

#define S_PAUSE_TARGET_NS (10 * INT64_C(1000000))

typedef struct {
    int series, flushes, flush_s;
    const char *dir;
} s_opts_t;

static void
s_usage(FILE *f)
{
    fprintf(f, "usage: bench_flush [--series N] [--flushes N] [--flush S] "
               "[--dir DIR]\n"
               "  10,000 series at 1 Hz (simulated time) into telemd's store;"
               " a flush every\n  S s of data (default 120); prints the "
               "ingest pause and the write time.\n"
               "  --dir: where the log goes (default a fresh temporary "
               "directory, removed)\n");
}

static void
s_parse(int argc, char **argv, s_opts_t *o)
{
    *o = (s_opts_t) { 10000, 5, 120, NULL };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            s_usage(stdout);
            exit(0);
        }
        if (!v) {
            s_usage(stderr);
            exit(2);
        }
        if (strcmp(a, "--series") == 0)
            o->series = atoi(v);
        else if (strcmp(a, "--flushes") == 0)
            o->flushes = atoi(v);
        else if (strcmp(a, "--flush") == 0)
            o->flush_s = atoi(v);
        else if (strcmp(a, "--dir") == 0)
            o->dir = v;
        else {
            s_usage(stderr);
            exit(2);
        }
        i++;
    }
    if (o->series < 100 || o->flushes < 2 || o->flush_s < 1) {
        fprintf(stderr, "bench_flush: --series >= 100, --flushes >= 2, "
                        "--flush >= 1\n");
        exit(2);
    }
}

/* One second of the feed: a point for every series at ts. */
static void
s_second(telem_store_t *st, int nseries, int64_t ts, int64_t k)
{
    char metric[32], rank[16];
    for (int i = 0; i < nseries; i++) {
        snprintf(metric, sizeof metric, "bf_m%03d", i % 100);
        snprintf(rank, sizeof rank, "%d", i / 100);
        telem_tag_t tags[2] = { { "host", "bn" }, { "rank", rank } };
        double v = (double) ((k * 7 + i) % 113) * 0.25 + (double) (i % 5);
        telem_store_append(st, metric, tags, 2, ts, v, ts);
    }
}

static void
s_wait_idle(telemd_log_t *log, telemd_log_stats_t *ls)
{
    for (;;) {
        telemd_log_stats(log, ls);
        if (!ls->writing)
            return;
        usleep(1000);
    }
}

int
main(int argc, char **argv)
{
    s_opts_t o;
    s_parse(argc, argv, &o);
    char tmp[512];
    if (o.dir)
        snprintf(tmp, sizeof tmp, "%s", o.dir);
    else
        bench_tmpdir(tmp, sizeof tmp, "flush");
    char logdir[600];
    snprintf(logdir, sizeof logdir, "%s/log", tmp);
    bench_print_machine("bench_flush");
    telem_store_config_t sc;
    telem_store_config_default(&sc);
    sc.window_ns = 3600 * INT64_C(1000000000);
    int err = 0;
    telem_store_t *st = telem_store_new(&sc, &err);
    telemd_config_t cfg = { .node = "bn", .log_dir = logdir,
                            .window_ns = sc.window_ns };
    telemd_log_t *log = st ? telemd_log_open(&cfg, &err) : NULL;
    if (!log)
        bench_die("open", "%s", telem_strerror(err));
    int64_t t0 = (telem_now_ns() / 1000000000 - 3600) * 1000000000;
    int64_t k = 0, worst = 0, worst_write = 0, sync_worst = 0;
    int64_t worst_expire = 0;
    telemd_log_stats_t ls;
    memset(&ls, 0, sizeof ls);
    printf("%d series at 1 Hz, a flush every %d s of data\n", o.series,
           o.flush_s);
    printf("%-6s %12s %12s %12s %10s\n", "flush", "pause_ms", "write_ms",
           "chunks", "log_MiB");
    for (int f = 0; f < o.flushes + 1; f++) {
        for (int s = 0; s < o.flush_s; s++, k++) {
            s_second(st, o.series, t0 + k * 1000000000, k);
            for (int q = 1; q <= 4; q++) {   /* telemd: every 250 ms */
                int64_t e = bench_now_ns();
                telem_store_expire(st, t0 + k * 1000000000 + q * 250000000);
                e = bench_now_ns() - e;
                if (e > worst_expire)
                    worst_expire = e;
            }
        }
        int64_t now = t0 + k * 1000000000;
        int sync = f == o.flushes;     /* the last: synchronous, compared */
        int64_t a = bench_now_ns();
        int rc = sync ? telemd_log_sync(log, st, now)
                      : telemd_log_flush(log, st, now);
        int64_t pause = bench_now_ns() - a;
        if (rc)
            bench_die("flush", "%s", telem_strerror(rc));
        uint64_t before = ls.chunks;
        s_wait_idle(log, &ls);
        if (sync)
            sync_worst = pause;
        else if (f > 0 && pause > worst)   /* the first has no blocks yet */
            worst = pause;
        if (!sync && ls.last_write_ns > worst_write)
            worst_write = ls.last_write_ns;
        printf("%-6s %12.2f %12.2f %12" PRIu64 " %10.1f\n",
               sync ? "sync" : f == 0 ? "first" : "async", pause / 1e6,
               ls.last_write_ns / 1e6, ls.chunks - before,
               ls.bytes / 1048576.0);
    }
    printf("\ningest pause, longest (async flush): %.2f ms  [target <= 10 ms:"
           " %s]\n", worst / 1e6, bench_verdict(worst <= S_PAUSE_TARGET_NS));
    bench_figure("flush: ingest pause, longest", "<= 10 ms", NULL, NULL,
                 worst <= S_PAUSE_TARGET_NS, "%.2f ms", worst / 1e6);
    printf("writer's put + commit, longest:      %.2f ms (off the ingest "
           "thread)\n", worst_write / 1e6);
    printf("synchronous flush on the ingest thread: %.2f ms = %.1fx the "
           "async pause\n", sync_worst / 1e6,
           worst ? (double) sync_worst / (double) worst : 0.0);
    printf("telem_store_expire (every 250 ms), longest: %.2f ms\n",
           worst_expire / 1e6);
    printf("flushes %" PRIu64 ", skipped %" PRIu64 ", errors %" PRIu64 "\n",
           ls.flushes, ls.skipped, ls.flush_errors);
    telemd_log_destroy(&log);
    telem_store_destroy(&st);
    if (!o.dir)
        bench_rmtree(tmp);
    return worst <= S_PAUSE_TARGET_NS ? 0 : 1;
}
