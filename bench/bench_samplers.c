/* bench_samplers.c - what each of telemd's node samplers costs on this
 * machine: CPU per sample() call and the series each call emits.
 *
 * Opens every sampler telemd runs at levels 2 and 3 (the level 4 self
 * sampler reads telemd's own counters and is left out) on /proc and /sys
 * as telemd does, with this process's user as the job's user, primes it
 * with one call (rates start on the second), then times blocks of calls
 * GAP ms apart (a call within one clock tick of the one before would find
 * the CPU counters unchanged and leave out the CPU series; telemd calls
 * once a second), the CPU of each call alone.  The CPU is the process's
 * (CLOCK_PROCESS_CPUTIME_ID), so
 * work a sampler does on a thread of its own (the fs sampler's statvfs
 * worker) is counted; a loaded machine moves it less than wall time.
 * The proc and job samplers share one walk of /proc a round in telemd
 * (telem_procwalk.h); here too, and the walk is timed apart (row "walk"):
 * before each timed call of a sampler the round's walk is done, untimed.
 * Prints, per sampler, the median over the blocks of CPU us per call, the
 * CPU seconds an hour that costs at 1 s sampling, the series per call and
 * the CPU per series, then the totals by level.  bench_overhead.sh runs it
 * beside telemd and its peers (docs/performance.md, "Cost beside collectd
 * and node_exporter").
 *
 * Usage: bench_samplers [-n CALLS] [-b BLOCKS] [-g GAP]
 *   -n  calls per block (default 20), -b  blocks (default 5),
 *   -g  ms between calls (default 20)
 * Exit 0, or 2 on bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "telem_sampler.h"

#define S_BLOCKS_MAX 64

static void
s_count(void *arg, const char *metric, const telem_tag_t *tags,
        uint32_t ntags, double value)
{
    (void) metric, (void) tags, (void) ntags, (void) value;
    (*(size_t *) arg)++;
}

static double
s_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

/* Times vt (NULL: the shared walk alone): median CPU us per call over
 * `blocks` blocks of `calls`, gap_ms apart; *series gets the series of the
 * last call.  Returns -1 when vt is not available here (*why set). */
static double
s_time(const telem_sampler_vt_t *vt, telem_procwalk_t *walk, int calls,
       int blocks, int gap_ms, size_t *series, int *why)
{
    const struct timespec gap = { gap_ms / 1000, (gap_ms % 1000) * 1000000L };
    telem_sampler_env_t env = { .node = "bench", .job_uid = getuid(),
                                .procwalk = walk };
    telem_procwalk_counts_t c;
    void *st = vt ? vt->open(&env, why) : NULL;
    if (vt && !st)
        return -1;
    size_t n = 0;
    int64_t t = bench_now_ns();
    if (vt)
        vt->sample(st, t, s_count, &n);
    double per[S_BLOCKS_MAX];
    for (int b = 0; b < blocks; b++) {
        double us = 0;
        for (int i = 0; i < calls; i++) {
            nanosleep(&gap, NULL);
            n = 0;
            t = bench_now_ns();
            if (vt)
                telem_procwalk_counts(walk, t, &c);     /* untimed */
            double c0 = s_cpu_us();
            if (vt)
                vt->sample(st, t, s_count, &n);
            else
                telem_procwalk_counts(walk, 0, &c);
            us += s_cpu_us() - c0;
        }
        per[b] = us / calls;
    }
    if (vt)
        vt->close(&st);
    *series = n;
    return bench_median_d(per, (size_t) blocks);
}

int
main(int argc, char **argv)
{
    int calls = 20, blocks = 5, gap_ms = 20, opt;
    while ((opt = getopt(argc, argv, "n:b:g:h")) != -1) {
        switch (opt) {
        case 'n': calls = atoi(optarg); break;
        case 'b': blocks = atoi(optarg); break;
        case 'g': gap_ms = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: bench_samplers [-n CALLS] [-b BLOCKS] "
                    "[-g GAP]\n");
            return 2;
        }
    }
    if (calls < 1 || blocks < 1 || blocks > S_BLOCKS_MAX || gap_ms < 0) {
        fprintf(stderr, "bench_samplers: -n >= 1, 1 <= -b <= %d, -g >= 0\n",
                S_BLOCKS_MAX);
        return 2;
    }
    /* telemd's order (telemd_agent.c), less the self sampler. */
    const telem_sampler_vt_t *const vts[] = {
        &telem_sampler_proc, &telem_sampler_nvml, &telem_sampler_psi,
        &telem_sampler_vmstat, &telem_sampler_numa, &telem_sampler_cpufreq,
        &telem_sampler_fs, &telem_sampler_ib, &telem_sampler_hw,
        &telem_sampler_nfs, &telem_sampler_lustre, &telem_sampler_job,
        &telem_sampler_rsmi, &telem_sampler_ze,
    };
    printf("  sampler  level  series  cpu_us/call  cpu_s/h@1Hz  cpu_ms/h/series"
           "  (median of %d blocks of %d calls %d ms apart, job user uid %u)\n",
           blocks, calls, gap_ms, (unsigned) getuid());
    double total_us[5] = {0};
    size_t total_series[5] = {0};
    int why = 0;
    telem_procwalk_t *walk = telem_procwalk_new(NULL, getuid(), &why);
    if (!walk)
        bench_die("telem_procwalk_new", "%s", telem_strerror(why));
    for (size_t i = 0; i <= sizeof vts / sizeof vts[0]; i++) {
        const telem_sampler_vt_t *vt = i ? vts[i - 1] : NULL;
        const char *name = vt ? vt->name : "walk";
        int level = vt ? vt->min_level : 2;
        size_t series = 0;
        double us = s_time(vt, walk, calls, blocks, gap_ms, &series, &why);
        if (us < 0) {
            printf("  %-8s %5d  not available here: %s\n", name, level,
                   telem_strerror(why));
            continue;
        }
        printf("  %-8s %5d  %6zu  %11.1f  %11.3f  %15.2f\n", name, level,
               series, us, us * 3600 / 1e6,
               series ? us * 3600 / 1e3 / (double) series : 0.0);
        for (int l = level; l < 5; l++) {
            total_us[l] += us;
            total_series[l] += series;
        }
    }
    for (int l = 2; l <= 3; l++)
        printf("  level %d  total  %6zu  %11.1f  %11.3f  %15.2f\n", l,
               total_series[l], total_us[l], total_us[l] * 3600 / 1e6,
               total_series[l] ? total_us[l] * 3600 / 1e3
                                     / (double) total_series[l] : 0.0);
    telem_procwalk_destroy(&walk);
    return 0;
}
