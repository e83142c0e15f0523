/* bench_reload.c - how long telemd takes to start when its flush log holds
 * an hour of history to reload (target: 'ready' within 1 s).
 *
 * Writes a node's log directory with the segment writer as telemd's flush
 * log writes it: S series (default 10,000) at 1 Hz for an hour ending now,
 * handed over in closed blocks of 120 points (one flush of every series
 * each 120 s, one commit each), the values a replay of the recorded node
 * metrics of bench/data/node_metrics_grid.json.gz (series j replays
 * recorded series j mod their count).  Then starts the real telemd (the
 * one built beside this program) on that directory with --window 3600 and
 * times it from fork to its 'ready' line, which it prints after the
 * reload; asks it with telem_client for one series' points to check the
 * hour was reloaded; and stops it.  The log is read from the page cache
 * (written just before): a cold disk adds its read time.
 *
 * Usage: bench_reload [-s SERIES] [-r RUNS] [FIXTURE]
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_fixture.h"
#include "bench_proc.h"
#include "telem_block.h"
#include "telem_seg.h"
#include "telem_time.h"

#define S_SEC INT64_C(1000000000)
#define S_HOUR 3600u
#define S_BLOCK 120u
#define S_NODE "n1"
#define S_METRIC "reload_value"
#define S_TARGET_NS (1 * S_SEC)

typedef bench_fixture_t s_fixture_t;

/* One flush: block number b (points b*120 .. b*120+119) of every series,
 * put and committed. */
static uint64_t
s_flush(telem_seglog_t *log, const s_fixture_t *f, uint32_t nseries,
        uint32_t b, int64_t t0)
{
    int64_t ts[S_BLOCK];
    double val[S_BLOCK];
    uint64_t bytes = 0;
    for (uint32_t j = 0; j < nseries; j++) {
        size_t src = j % f->ns;
        for (uint32_t i = 0; i < S_BLOCK; i++) {
            uint32_t k = b * S_BLOCK + i;
            ts[i] = t0 + (int64_t) k * S_SEC;
            val[i] = f->s[src].val[k % (f->s[src].n ? f->s[src].n : 1)];
        }
        unsigned char *blk = NULL;
        size_t len = 0;
        if (telem_block_encode(ts, val, S_BLOCK, NULL, &blk, &len) != 0)
            bench_die("telem_block_encode", "failed");
        char key[64];
        int kl = snprintf(key, sizeof key, "%s%chost%c%s%cid%c%u", S_METRIC,
                          0, 0, S_NODE, 0, 0, j);
        telem_chunk_t c = { .key = key, .key_len = (uint32_t) kl + 1,
                            .metric = S_METRIC, .first_seq = b * S_BLOCK,
                            .block = blk, .block_len = len, .closed = 1 };
        if (telem_seglog_put_chunk(log, &c) != 0)
            bench_die("telem_seglog_put_chunk", "failed");
        bytes += len;
        free(blk);
    }
    if (telem_seglog_commit(log, ts[S_BLOCK - 1]) != 0)
        bench_die("telem_seglog_commit", "failed");
    return bytes;
}

/* Writes the hour; returns the log's bytes. */
static uint64_t
s_write_log(const char *dir, const s_fixture_t *f, uint32_t nseries,
            int64_t t0)
{
    telem_seglog_config_t cfg;
    telem_seglog_config_default(&cfg);
    cfg.dir = dir;
    cfg.node = S_NODE;
    cfg.segment_bytes = 256u << 20;   /* telemd's: a quarter of 1 GiB */
    cfg.segment_age_ns = 2 * 3600 * S_SEC;
    cfg.fsync = TELEM_SEG_FSYNC_ROTATE;
    int err = 0;
    telem_seglog_t *log = telem_seglog_open(&cfg, &err);
    if (!log)
        bench_die("telem_seglog_open", "%s: error %d", dir, err);
    uint64_t blocks = 0;
    for (uint32_t b = 0; b < S_HOUR / S_BLOCK; b++)
        blocks += s_flush(log, f, nseries, b, t0);
    telem_seglog_stats_t st;
    telem_seglog_stats(log, &st);
    telem_seglog_close(&log);
    printf("log: %u series x %u points, %.1f MB in %llu segment(s) "
           "(%.2f bytes a point in blocks)\n", nseries, S_HOUR,
           (double) st.total_bytes / 1e6, (unsigned long long) st.segments,
           (double) blocks / ((double) nseries * S_HOUR));
    return st.total_bytes;
}

/* Points telemd returns for series id=0 (telem_client query, JSON). */
static long
s_points(const char *argv0, const char *rundir)
{
    char client[1024], cmd[4096];
    bench_proc_path(client, sizeof client, argv0, "telem_client");
    snprintf(cmd, sizeof cmd, "'%s' -u '%s/%s' --timeout 10000 -f json "
             "query %s --tag id=0 --start -3600s", client, rundir, S_NODE, S_METRIC);
    FILE *p = popen(cmd, "r");
    if (!p)
        bench_die("telem_client", "cannot run");
    long points = 0;
    int c, prev = 0;
    while ((c = fgetc(p)) != EOF) {
        points += prev == '[' && c >= '0' && c <= '9';   /* "[<time>, v]" */
        prev = c;
    }
    return pclose(p) == 0 ? points : -1;
}

/* One start: telemd on the log, timed to 'ready'; its reload line and the
 * points of series id=0; stopped.  Returns the time to 'ready'. */
static int64_t
s_start(const char *argv0, const char *rundir, const char *logdir,
        long *points)
{
    char errlog[1100];
    snprintf(errlog, sizeof errlog, "%s/telemd.log", rundir);
    const char *args[] = { "--node", S_NODE, "--rundir", rundir,
                           "--log-dir", logdir, "--window", "3600",
                           "--mem-cap", "1024", "--bind", "none",
                           "--log-level", "info", NULL };
    int64_t ready_ns = 0;
    pid_t pid = bench_proc_telemd(argv0, args, errlog, &ready_ns);
    *points = s_points(argv0, rundir);
    int status = 0;
    bench_proc_stop(pid, SIGTERM, &status);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "grep -h 'reloaded' '%s' | sed 's/^/  telemd: /'",
             errlog);
    if (system(cmd) != 0)
        printf("  telemd: no reload line in %s\n", errlog);
    return ready_ns;
}

int
main(int argc, char **argv)
{
    uint32_t nseries = 10000;
    int runs = 3, opt;
    while ((opt = getopt(argc, argv, "s:r:h")) != -1) {
        if (opt == 's')
            nseries = (uint32_t) strtoul(optarg, NULL, 10);
        else if (opt == 'r')
            runs = atoi(optarg);
        else {
            fprintf(stderr, "usage: bench_reload [-s SERIES] [-r RUNS] "
                    "[FIXTURE]\n");
            return opt == 'h' ? 0 : 2;
        }
    }
    if (nseries == 0 || runs < 1 || runs > 20)
        bench_die("bench_reload", "-s: at least 1 series; -r: 1 to 20 runs");
    s_fixture_t f;
    bench_fixture_load(&f, optind < argc ? argv[optind]
                   : BENCH_DATA_DIR "/node_metrics_grid.json.gz");
    bench_print_machine("bench_reload");
    char rundir[512], logdir[600];
    bench_tmpdir(rundir, sizeof rundir, "reload");
    snprintf(logdir, sizeof logdir, "%s/%s/log", rundir, S_NODE);
    int64_t now = telem_now_ns() / S_SEC * S_SEC;
    int64_t t0 = now - (int64_t) (S_HOUR - 1) * S_SEC;
    int64_t w = bench_now_ns();
    s_write_log(logdir, &f, nseries, t0);
    printf("written in %.2f s\n", (double) (bench_now_ns() - w) / 1e9);
    int64_t best = INT64_MAX, worst = 0;
    long points = 0;
    for (int r = 0; r < runs; r++) {
        int64_t ns = s_start(argv[0], rundir, logdir, &points);
        printf("start %d: ready in %.3f s; series id=0 answers %ld points\n",
               r + 1, (double) ns / 1e9, points);
        best = ns < best ? ns : best;
        worst = ns > worst ? ns : worst;
        if (points < (long) S_HOUR - 120)   /* the window moved on a little */
            bench_die("bench_reload", "only %ld of %u points reloaded",
                      points, S_HOUR);
    }
    printf("telemd start with an hour of %u series to reload: best %.3f s, "
           "worst %.3f s; target <= 1 s: %.2fx the target (%s)\n", nseries,
           (double) best / 1e9, (double) worst / 1e9,
           (double) worst / (double) S_TARGET_NS,
           bench_verdict(worst <= S_TARGET_NS));
    bench_figure("telemd start with an hour of log to reload, worst",
                 "<= 1 s", NULL, NULL, worst <= S_TARGET_NS, "%.3f s",
                 (double) worst / 1e9);
    bench_rmtree(rundir);
    return 0;
}
