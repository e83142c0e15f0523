/* bench_straggler.h - bench_straggler's recording and its judging (bench/
 * only).
 *
 * bench_straggler.c records a real instrumented job (ranks that mark their
 * steps with sections, collectors timing the node's test kernels, graded
 * contention and data imbalance on one rank) or loads a saved recording;
 * bench_straggler_judge.c feeds it to telem's straggler detector and to
 * NVRx's and Dragon's rules and prints the tables and FIGURE lines.
 */
#ifndef BENCH_STRAGGLER_H
#define BENCH_STRAGGLER_H

#include <stdint.h>

#define BS_MAXDEV 32
#define BS_MAXSEG 64

typedef enum { BS_LOAD = 0, BS_IMBALANCE = 1 } bs_kind_t;

/* One stretch of the schedule in which the target rank is slower. */
typedef struct {
    bs_kind_t kind;
    int start, len;            /* steps [start, start + len) */
    double level;              /* load: telem_load --duty; imbalance: the
                                * target's work over the others' */
    double slowdown;           /* measured: target step / others' median */
    double kernel;             /* measured: the target's kernel / others' */
} bs_seg_t;

/* A recording.  Every device is one rank and one collector on a node;
 * device ndev - 1 is the target. */
typedef struct {
    int ndev, per_node;        /* devices, devices a node */
    int nsteps, nrounds;       /* rank steps, collector rounds */
    double period, cperiod;    /* step period, collector round period (s) */
    int64_t epoch;             /* realtime ns of step 0's and round 0's
                                * period */
    int clean, load, gap;      /* the schedule, in steps */
    char node[BS_MAXDEV][8], gpu[BS_MAXDEV][8], rank[BS_MAXDEV][8];
    char pid[BS_MAXDEV][16];
    int64_t *ts;               /* ts[d * nsteps + k]: step k's end, 0 when
                                * missing */
    double *secs;              /* its section time, NAN when missing */
    double *kern;              /* kern[d * nrounds + j]: round j's kernel
                                * time, NAN when missing */
    bs_seg_t seg[BS_MAXSEG];
    int nseg;
    double cost_p50, cost_p99; /* section begin + end in the ranks, ns
                                * (medians over the ranks) */
    int64_t dropped;           /* section ends the ranks' queues refused */
} bs_rec_t;

/* How the recording is judged. */
typedef struct {
    double tick;               /* the watcher's period, s (telem_watch: 1) */
    double lag;                /* s a section point takes to reach telemd
                                * (libtelem's sender tick) */
    int guard;                 /* steps after a segment that are not yet
                                * clean (its windows, the detection) */
    const char *params;        /* extra straggler parameters, name=value,..
                                * (both telem rows) */
} bs_judge_opts_t;

/* Judges rec (segments' slowdowns measured first) and prints the tables
 * and, when the recording is valid (the benchmark's processes had the
 * core: few steps over their slot, few rounds lost), the FIGURE lines.
 * Returns 1 when it was valid, 0 when not. */
int bs_judge(bs_rec_t *rec, const bs_judge_opts_t *jo);

#endif
