/* bench_slots.h - benchmarks whose processes take turns on one core, each
 * in its own slot of a fixed period (bench/ only).
 *
 * bench_detect and bench_straggler emulate several devices on one core:
 * real telem_collector processes (and bench_straggler's ranks) run their
 * kernel in their own slot of every period, so that they are measured on
 * the same hardware at nearly the same instants (the two vCPUs of the
 * reference VM change speed independently, so devices on different cores
 * are not comparable), and telem_load makes one device really slower by
 * contending only inside its slots.  Collectors, ranks and loads run
 * SCHED_FIFO where allowed, so work the benchmark did not start cannot
 * preempt them and the contention measured is the load's.
 *
 * Helpers here exit through bench_die() on set-up errors, like the rest of
 * bench_common.
 */
#ifndef BENCH_SLOTS_H
#define BENCH_SLOTS_H

#include <stdint.h>
#include <sys/types.h>

#include "telem_proto.h"

/* What every spawn of one benchmark shares. */
typedef struct {
    char bindir[512];          /* where telem_collector and telem_load are */
    char log[512];             /* their stderr, appended */
    int rt;                    /* 1: SCHED_FIFO; cleared once refused */
    const char *who;           /* the benchmark, for messages */
} bench_slots_t;

/* Starts argv (envp: NULL for this process's environment) with stdin and
 * stdout on /dev/null and stderr appended to s->log; with s->rt, as
 * SCHED_FIFO of priority prio (when that is refused it says so once,
 * clears s->rt and starts it at normal priority).  Returns the pid. */
pid_t bench_slots_spawn(bench_slots_t *s, char *const argv[],
                        char *const envp[], int prio);

/* SIGTERM to pid, then waits for it. */
void bench_slots_stop(pid_t pid);

/* Sleeps until the realtime instant t (ns). */
void bench_slots_until(int64_t t);

/* A real telem_collector (cpu backend, its DGEMM) for device `gpu` of
 * `node`, pinned to `core`: rounds at epoch + k * period, `reps`
 * repetitions spread over the round, each phase_ns after its scheduled
 * time (its slot); group tag "bench".  SCHED_FIFO priority 20. */
pid_t bench_slots_collector(bench_slots_t *s, const char *rundir,
                            const char *node, const char *gpu, int core,
                            double period, int reps, int64_t epoch,
                            int64_t phase_ns);

/* telem_load on `core` with `duty` and cycles of cycle_ms, contending only
 * in the window [phase, phase + window) of every `period` seconds from
 * epoch.  SCHED_FIFO priority 30, above the collectors and ranks. */
pid_t bench_slots_load(bench_slots_t *s, int core, double duty,
                       double cycle_ms, double period, int64_t window_ns,
                       int64_t phase_ns, int64_t epoch);

/* The value of tag `key` of s, or NULL. */
const char *bench_slots_tag(const telem_series_t *s, const char *key);

/* v holds ndev series of n figures (v[d * n + k], NAN when missing);
 * device ndev - 1 is the target.  Median over k in [from, to) of the
 * target's figure over the median of the others' (NAN without any). */
double bench_slots_slowdown(const double *v, int ndev, int n, int from,
                            int to);

/* Prints the noise of [from, to): each device's figure over the median of
 * the others', every device: percentiles, and the share 8 % slower or
 * more.  `dev` and `round` name a device and a figure ("device",
 * "round"; "rank", "step"). */
void bench_slots_noise(const double *v, int ndev, int n, int from, int to,
                       const char *dev, const char *round);

/* Slowdown classes that load segments are reported in (measured target /
 * others): ~5 %, ~10 %, ~25 %, > 40 %. */
typedef struct {
    const char *name;
    double lo, hi;             /* [lo, hi) */
} bench_slots_bin_t;
#define BENCH_SLOTS_NBINS 4
extern const bench_slots_bin_t bench_slots_bins[BENCH_SLOTS_NBINS];

/* The class of slowdown x, or -1 when it is in none. */
int bench_slots_bin(double x);

#endif
