/* telem_collector.h - one collector: a test timed in rounds on one device,
 * one sample per round into the node's telemd.
 *
 * A collector runs round k at its scheduled time epoch + k * period (plus
 * an optional phase, see below), runs the test `reps` times, and pushes
 * through the user API (telem.h) two samples stamped with the scheduled
 * time itself, epoch + k * period, exactly:
 *   <metric>          the median of the repetitions' figures
 *   <metric>_spread   their median absolute deviation (unscaled MAD)
 * with tags gpu=<device index on the node> (absent for a per-node test),
 * backend=<cpu|cuda> and group=<group name>; telem adds host and pid.
 * Because the epoch is common to a whole group, the samples of one round
 * have identical timestamps on every device and node.  The schedule is
 * absolute: a round that overruns makes the collector skip the rounds
 * whose start has passed (counted), never drift.  Waiting is a ppoll() on
 * the stop descriptor with the time left as timeout.
 *
 * Phase.  Collectors that share one core (virtual nodes on one machine)
 * are given different phases inside the period so their rounds do not run
 * at the same instant; the phase shifts when a round runs, never its
 * timestamp.
 *
 * The test is either a built-in kernel of the backend (metric
 * "cg_<kernel>_seconds", e.g. cg_dgemm_seconds) or a user function that
 * returns one figure per repetition and names its metric itself.  Figures
 * are "higher = slower" by convention (seconds per repetition).
 *
 * The collector pins the calling thread to its device before the first
 * round (cpu: its core), after starting telem's sender thread, so that
 * thread is not pinned with it.
 */
#ifndef TELEM_COLLECTOR_H
#define TELEM_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* First argument that makes a program built with cg_collector_main() (or
 * telem_collector_main()) act as a collector. */
#define TELEM_COLLECTOR_FLAG "--telem-collector"

/* A user test: one repetition on device `device` (the node's device index,
 * -1 for a per-node test); writes its figure (finite, >= 0, higher =
 * slower) to *figure and returns 0, or returns a negative code (the
 * repetition is left out of the round).  Called on the collector's pinned
 * thread only. */
typedef int (*telem_collector_test_fn)(void *arg, int device, double *figure);

typedef struct {
    const char *backend;    /* "cpu" (NULL), "cuda" */
    const char *kernel;     /* built-in kernel; NULL = the backend's first;
                               ignored when fn is set */
    const char *metric;     /* metric of a user test (required with fn) */
    telem_collector_test_fn fn;       /* NULL = the built-in kernel */
    void *fn_arg;
    int device;             /* device index on the node (tag gpu); -1 = a
                               per-node test (no gpu tag) */
    int pin;                /* this machine's device to run on; -1 = the
                               same as device (a per-node test: no pinning) */
    int64_t period_ns;      /* > 0 */
    int64_t epoch_ns;       /* realtime ns of round 0; 0 = now rounded up to
                               a multiple of the period */
    int64_t phase_ns;       /* 0 <= phase < period */
    int reps;               /* repetitions per round, 1-1000 */
    int spread;             /* 1: repetition j runs at round start + phase
                               + j x period / reps, spread over the round;
                               0: back to back */
    const char *group;      /* group tag, 1-255 bytes */
    uint64_t rounds;        /* stop after this many rounds; 0 = no limit */
    int stop_fd;            /* readable = stop now; -1 = none */
} telem_collector_config_t;

typedef struct {
    uint64_t rounds;        /* rounds completed and pushed */
    uint64_t skipped;       /* scheduled rounds missed (a round overran) */
    uint64_t failed;        /* rounds in which no repetition succeeded */
    uint64_t refused;       /* samples telem_add_data refused (queue full) */
    int64_t epoch_ns;       /* the epoch used */
    int64_t last_ts_ns;     /* timestamp of the last round pushed, or 0 */
    double last_median;     /* figures of that round */
    double last_spread;
} telem_collector_stats_t;

/* Runs the collector until `rounds` rounds are done or stop_fd becomes
 * readable.  Returns 0; or before the first round TELEM_EINVAL (a bad
 * config), TELEM_ENOTFOUND (unknown backend or kernel),
 * TELEM_EUNSUPPORTED (the backend is not present here), TELEM_EIO (cannot
 * pin, kernel failed) with a sentence in `why`.  *st (may be NULL) is
 * filled in either case.  Does not call telem_finalize().  Not
 * thread-safe with respect to other users of telem.h's global state. */
int telem_collector_run(const telem_collector_config_t *cfg,
                        telem_collector_stats_t *st, char *why,
                        size_t why_size);

/* The whole collector program (flags, signals, finalize): what the
 * telem_collector binary runs, and what a program with its own test
 * function runs when started with TELEM_COLLECTOR_FLAG as argv[1] (that
 * argument is skipped).  `metric`/`fn`/`arg` give the user test (NULL fn:
 * built-in kernels only).  Stops on SIGTERM, SIGINT or SIGHUP with
 * telem_finalize().  Returns the exit status: 0 after a clean stop, 1 on a
 * run-time error, 2 on a bad command line, 3 when the backend is not
 * present on this machine (one log line says why).  Call it from main()
 * before any other thread starts. */
int telem_collector_main(int argc, char **argv, const char *metric,
                         telem_collector_test_fn fn, void *arg);

/* Writes "cg_<kernel>_seconds" to buf.  Returns 0 or TELEM_ETOOBIG. */
int telem_collector_metric(char *buf, size_t size, const char *kernel);

#ifdef __cplusplus
}
#endif
#endif
