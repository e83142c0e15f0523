/* bench_drain.c - SIGTERM to exit of a real telemd whose store holds
 * nothing flushed yet, and a check that everything is in its log
 * (docs/performance.md, "Flush without stalling ingest").
 *
 * A telemd (--flush 86400: no flush before the stop) gets `--points`
 * points of each of 10,000 series (100 metrics x 100 ranks) pushed
 * through libtelem, confirmed received (telem_flush); then SIGTERM, and
 * the time to its exit is what a stop costs with that backlog of open
 * and closed unflushed blocks (target <= 2 s).  The log directory is
 * then read with the history index (telem_hist.h) and its points counted:
 * they must equal what was sent.
 *
 *   bench_drain [--series N] [--points N]
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "bench_common.h"
#include "bench_proc.h"
#include "telem.h"
#include "telem_error.h"
#include "telem_hist.h"
#include "telem_time.h"

static int
s_count(void *arg, const char *node, const telem_series_t *s)
{
    (void) node;
    *(uint64_t *) arg += s->npoints;
    return 0;
}

/* Pushes one point of every series at ts; waits when the queue is full. */
static void
s_push_round(int nseries, int64_t ts, int k)
{
    char metric[32], rank[16];
    for (int i = 0; i < nseries; i++) {
        snprintf(metric, sizeof metric, "bd_m%03d", i % 100);
        snprintf(rank, sizeof rank, "%d", i / 100);
        double v = (double) ((k * 7 + i) % 113) * 0.25;
        int rc;
        while ((rc = telem_add_data_tags(metric, v, ts, 1, 1, "rank", rank))
               == TELEM_EFULL)
            telem_flush(10000);
        if (rc != 0)
            bench_die("telem_add_data", "%s", telem_strerror(rc));
    }
}

int
main(int argc, char **argv)
{
    int nseries = 10000, points = 60;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            printf("usage: bench_drain [--series N] [--points N]\n"
                   "  SIGTERM to exit of a telemd holding N series x N "
                   "points unflushed;\n  checks every point is in its "
                   "log.\n");
            return 0;
        }
        if (i + 1 < argc && strcmp(argv[i], "--series") == 0)
            nseries = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--points") == 0)
            points = atoi(argv[++i]);
        else {
            fprintf(stderr, "bench_drain: unknown argument %s (--help)\n",
                    argv[i]);
            return 2;
        }
    }
    char dir[512], errlog[600], logdir[600];
    bench_tmpdir(dir, sizeof dir, "drain");
    snprintf(errlog, sizeof errlog, "%s/telemd.log", dir);
    snprintf(logdir, sizeof logdir, "%s/bd/log", dir);
    bench_print_machine("bench_drain");
    const char *args[] = { "--node", "bd", "--rundir", dir, "--level", "1",
                           "--flush", "86400", "--window", "3600", NULL };
    int64_t ready;
    pid_t pid = bench_proc_telemd(argv[0], args, errlog, &ready);
    setenv("TELEM_RUNDIR", dir, 1);
    setenv("TELEM_NODE", "bd", 1);
    setenv("TELEM_LEVEL", "1", 1);
    if (telem_init() != 0)
        bench_die("telem_init", "no telemd at %s", dir);
    int64_t t0 = (telem_now_ns() / 1000000000 - points - 1) * 1000000000;
    for (int k = 0; k < points; k++)
        s_push_round(nseries, t0 + (int64_t) k * 1000000000, k);
    int frc = telem_flush(30000);
    if (frc != 0)
        bench_die("telem_flush", "%s", telem_strerror(frc));
    telem_stats_t ts;
    telem_stats(&ts);
    if (ts.queued != (uint64_t) nseries * (uint64_t) points)
        bench_die("libtelem", "queued %llu, sent %llu, dropped %llu, "
                  "filtered %llu, invalid %llu",
                  (unsigned long long) ts.queued, (unsigned long long) ts.sent,
                  (unsigned long long) ts.dropped,
                  (unsigned long long) ts.filtered,
                  (unsigned long long) ts.invalid);
    if (telem_finalize() != 0)
        bench_die("telem_finalize", "telemd did not confirm the samples");
    int status = 0;
    int64_t took = bench_proc_stop(pid, SIGTERM, &status);
    telem_hist_t *h = telem_hist_new(NULL);
    uint64_t got = 0;
    telem_store_query_t q = { .start_ns = 1, .end_ns = INT64_MAX };
    if (!h || telem_hist_add_dir(h, logdir, NULL) != 0
        || telem_hist_query(h, "bd", &q, s_count, &got) < 0)
        bench_die("history", "cannot read %s", logdir);
    telem_hist_destroy(&h);
    uint64_t sent = ts.queued - ts.dropped;   /* libtelem's own losses
                                                 are not telemd's */
    int all = got >= sent && got <= ts.queued;
    int ok = took <= 2 * INT64_C(1000000000) && all
             && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    printf("%d series x %d points unflushed (%llu points received; "
           "libtelem dropped %llu)\n", nseries, points,
           (unsigned long long) sent, (unsigned long long) ts.dropped);
    printf("SIGTERM to exit: %.0f ms  [target <= 2000 ms: %s]\n", took / 1e6,
           bench_verdict(took <= 2 * INT64_C(1000000000)));
    bench_figure("SIGTERM drain, unflushed series, every point kept",
                 "<= 2 s", NULL, NULL,
                 took <= 2 * INT64_C(1000000000) && all, "%.2f s", took / 1e9);
    printf("points in the log: %llu of %llu, exit status %d  [%s]\n",
           (unsigned long long) got, (unsigned long long) sent,
           WIFEXITED(status) ? WEXITSTATUS(status) : -1,
           bench_verdict(all));
    if (ok)
        bench_rmtree(dir);
    else
        printf("kept %s\n", dir);
    return ok ? 0 : 1;
}
