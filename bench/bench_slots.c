/* bench_slots.c - processes that take turns on one core; see
 * bench_slots.h. */
#include "bench_slots.h"
#include "bench_common.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

const bench_slots_bin_t bench_slots_bins[BENCH_SLOTS_NBINS] = {
    { "~5 %", 1.03, 1.07 }, { "~10 %", 1.07, 1.15 }, { "~25 %", 1.15, 1.40 },
    { ">40 %", 1.40, 1e9 },
};

int
bench_slots_bin(double x)
{
    for (int i = 0; i < BENCH_SLOTS_NBINS; i++)
        if (x >= bench_slots_bins[i].lo && x < bench_slots_bins[i].hi)
            return i;
    return -1;
}

pid_t
bench_slots_spawn(bench_slots_t *s, char *const argv[], char *const envp[],
                  int prio)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, s->log,
                                     O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    if (s->rt) {
        struct sched_param sp = { .sched_priority = prio };
        posix_spawnattr_setschedpolicy(&at, SCHED_FIFO);
        posix_spawnattr_setschedparam(&at, &sp);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSCHEDULER);
    }
    char *const *env = envp ? envp : environ;
    pid_t pid;
    int err = posix_spawn(&pid, argv[0], &fa, &at, argv, env);
    if (err == EPERM && s->rt) {
        fprintf(stderr, "%s: real-time scheduling refused; running at "
                "normal priority\n", s->who);
        s->rt = 0;
        posix_spawnattr_setflags(&at, 0);
        err = posix_spawn(&pid, argv[0], &fa, &at, argv, env);
    }
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    if (err)
        bench_die("posix_spawn", "%s: %s", argv[0], strerror(err));
    return pid;
}

void
bench_slots_stop(pid_t pid)
{
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

void
bench_slots_until(int64_t t)
{
    struct timespec ts = { (time_t) (t / 1000000000), (long) (t % 1000000000) };
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

pid_t
bench_slots_collector(bench_slots_t *s, const char *rundir, const char *node,
                      const char *gpu, int core, double period, int reps,
                      int64_t epoch, int64_t phase_ns)
{
    char exe[600], pin[16], per[32], ep[32], ph[32], rp[16];
    snprintf(exe, sizeof exe, "%s/telem_collector", s->bindir);
    snprintf(rp, sizeof rp, "%d", reps);
    snprintf(pin, sizeof pin, "%d", core);
    snprintf(per, sizeof per, "%.6f", period);
    snprintf(ep, sizeof ep, "%lld", (long long) epoch);
    snprintf(ph, sizeof ph, "%lld", (long long) phase_ns);
    char *argv[] = { exe, "--node", (char *) node, "--rundir", (char *) rundir,
                     "--device", (char *) gpu, "--pin", pin, "--period",
                     per, "--reps", rp, "--spread", "--epoch", ep,
                     "--phase", ph,
                     "--group", "bench", "--log-level", "warn", NULL };
    return bench_slots_spawn(s, argv, NULL, 20);
}

pid_t
bench_slots_load(bench_slots_t *s, int core, double duty, double cycle_ms,
                 double period, int64_t window_ns, int64_t phase_ns,
                 int64_t epoch)
{
    char exe[600], dev[16], d[32], cyc[32], per[32], win[32], ph[32], ep[32];
    snprintf(exe, sizeof exe, "%s/telem_load", s->bindir);
    snprintf(dev, sizeof dev, "%d", core);
    snprintf(d, sizeof d, "%g", duty);
    snprintf(cyc, sizeof cyc, "%g", cycle_ms);
    snprintf(per, sizeof per, "%.9f", period);
    snprintf(win, sizeof win, "%.9f", (double) window_ns / 1e9);
    snprintf(ph, sizeof ph, "%.9f", (double) phase_ns / 1e9);
    snprintf(ep, sizeof ep, "%lld", (long long) epoch);
    char *argv[] = { exe, "--device", dev, "--duty", d, "--cycle-ms", cyc,
                     "--period", per, "--window", win, "--phase", ph,
                     "--epoch", ep, "--log-level", "warn", NULL };
    return bench_slots_spawn(s, argv, NULL, 30);
}

const char *
bench_slots_tag(const telem_series_t *s, const char *key)
{
    for (uint32_t i = 0; i < s->ntags; i++)
        if (strcmp(s->tags[i].key, key) == 0)
            return s->tags[i].value;
    return NULL;
}

#define V(d, k) (v[(size_t) (d) * (size_t) n + (size_t) (k)])

double
bench_slots_slowdown(const double *v, int ndev, int n, int from, int to)
{
    double *r = malloc((size_t) (to > from ? to - from : 1) * sizeof *r);
    double *h = malloc((size_t) ndev * sizeof *h);
    if (!r || !h)
        bench_die("bench_slots", "out of memory");
    size_t nr = 0;
    for (int k = from; k < to; k++) {
        size_t nh = 0;
        for (int d = 0; d < ndev - 1; d++)
            if (!isnan(V(d, k)))
                h[nh++] = V(d, k);
        double t = V(ndev - 1, k);
        if (nh && !isnan(t))
            r[nr++] = t / bench_median_d(h, nh);
    }
    bench_sort_d(r, nr);
    double out = nr ? r[nr / 2] : NAN;
    free(r);
    free(h);
    return out;
}

void
bench_slots_noise(const double *v, int ndev, int n, int from, int to,
                  const char *dev, const char *round)
{
    size_t cap = (size_t) ndev * (size_t) (to > from ? to - from : 1);
    double *r = malloc(cap * sizeof *r), *o = malloc((size_t) ndev * sizeof *o);
    if (!r || !o)
        bench_die("bench_slots", "out of memory");
    size_t nv = 0, over = 0;
    for (int k = from; k < to; k++)
        for (int d = 0; d < ndev; d++) {
            size_t no = 0;
            for (int e = 0; e < ndev; e++)
                if (e != d && !isnan(V(e, k)))
                    o[no++] = V(e, k);
            if (no == 0 || isnan(V(d, k)))
                continue;
            r[nv] = V(d, k) / bench_median_d(o, no);
            over += r[nv++] >= 1.08;
        }
    if (nv) {
        bench_sort_d(r, nv);
        printf("  noise of the clean stretch, %s / median of the others over "
               "%zu %s-%ss: p1 %.3f p50 %.3f p90 %.3f p99 %.3f max %.2f; "
               "%.2f %% of them 8 %% slower or more\n", dev, nv, dev, round,
               r[nv / 100], r[nv / 2], r[nv * 9 / 10], r[nv * 99 / 100],
               r[nv - 1], 100.0 * (double) over / (double) nv);
    }
    free(r);
    free(o);
}
