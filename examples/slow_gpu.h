/* slow_gpu.h - what the files of the slow_gpu example share: its options,
 * a task's state and the semicircle check (slow_gpu_law.c).  Not a
 * library: one program, split by responsibility.
 */
#ifndef SLOW_GPU_H
#define SLOW_GPU_H

#include <stddef.h>
#include <stdint.h>

#define SG_DEVICES_MAX 64

typedef struct {
    int devices;            /* worker threads on this node */
    int tasks;              /* tasks of the whole job */
    int iterations;         /* iterations per task */
    int size;               /* matrix order M */
    int bins;               /* histogram bins over [-2.5, 2.5] */
    unsigned long seed;
    double tolerance;       /* largest distance of the distribution functions */
    const char *ns;         /* dictionary namespace */
    const char *plot;       /* SVG file, or NULL */
    int64_t timeout_ms;     /* deadline of dictionary calls */
    double hold_at;         /* held runs: wait at this fraction (0: off) */
    const char *hold_event; /* ... until this event is set (NULL: <ns>/release) */
    int hold_runs;          /* runs with TELEM_RESTART_COUNT below it hold */
    int work_scale;         /* each iteration's eigenvalues computed this
                             * many times (the result is the same) */
    double pace;            /* iterations start on turns of this period,
                             * in seconds (0: at once) */
    int rank, nnodes;       /* TELEM_RANK, TELEM_NNODES */
    int restarted;          /* TELEM_RESTARTED=1 */
    int restart_count;      /* TELEM_RESTART_COUNT (restarted: at least 1) */
} sg_opts_t;

/* A task's state: iterations done and its histogram (bins, then the
 * underflow and overflow counts). */
typedef struct {
    uint64_t *counts;       /* bins + 2 */
    int done;
} sg_task_t;

/* Parses the command line and the environment.  Returns -1 to go on, or
 * the exit status (0 after --help, 2 for a bad command line). */
int sg_opts_parse(int argc, char **argv, sg_opts_t *o);

/* Text form of a task's state (malloc'd into *out), and back: 0, -1 for
 * unreadable text, -2 for a state of other parameters. */
int sg_state_format(const sg_opts_t *o, const sg_task_t *t, char **out,
                    size_t *len);
int sg_state_parse(const sg_opts_t *o, const char *text, sg_task_t *t);

/* The histogram bin of x (bins: underflow, bins + 1: overflow), and the
 * left edge of bin b (b = bins: the right end). */
int sg_bin(const sg_opts_t *o, double x);
double sg_edge(const sg_opts_t *o, int b);

/* Prints the result of the merged histogram and writes the plot; returns
 * the exit status: 0 when it matches the semicircle law. */
int sg_report(const sg_opts_t *o, const uint64_t *counts);

#endif
