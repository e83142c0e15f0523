/* det_straggler.h - the straggler detector's state and its judging rules
 * (internal to detectors/).
 *
 * det_straggler.c turns the job's section series (telem_section_seconds
 * and telem_section_step, written together by every end of a section)
 * into steps per rank and lines the ranks up by step in windows;
 * det_straggler_rules.c scores one window, keeps each node's persistence,
 * tells the hardware from the rest (the node's test kernels and health
 * fields) and writes the events.  Split so that each file stays readable.
 */
#ifndef DET_STRAGGLER_H
#define DET_STRAGGLER_H

#include <stdint.h>

#include "det.h"
#include "det_map.h"

#define ST_RING 256            /* steps kept per rank */
#define ST_KERNELS_MAX 4       /* kernel metrics named by `kernels` */

/* Parameter indices into det_straggler.params. */
enum {
    ST_SECTION, ST_STEPS, ST_STRIDE, ST_RELATIVE, ST_INDIVIDUAL, ST_K, ST_N,
    ST_SETTLE, ST_STALE, ST_WINDOW, ST_NODATA, ST_KERNELS, ST_HW_EFFECT,
    ST_HEALTH, ST_HW_WINDOW, ST_NPARAMS
};

/* One step of one rank: its aligned step number and its time. */
typedef struct {
    int64_t step;
    double secs;
} det_straggler_pt_t;

/* One rank of one section (one process: section, node, rank). */
typedef struct {
    char *key;                 /* "section\x1fnode\x1frank\0node\0rank" */
    const char *node, *rank;
    uint32_t section;
    uint32_t nodeix;           /* index of its node entry */
    int64_t last_ts;           /* newest point taken */
    int64_t last_raw;          /* newest raw step (-1: none) */
    int64_t offset;            /* raw step + offset = aligned step */
    uint64_t since_start;      /* steps since it (re)started */
    uint32_t restarts;         /* step counter went back */
    det_straggler_pt_t ring[ST_RING];
    uint32_t nring, pos;
    double best;               /* its own best window median (0: none) */
    double med;                /* its median in the window judged last */
    double rel, ind;           /* its scores there (NAN: not judged) */
    uint64_t mark;             /* that window (its section's count) */
} det_straggler_rank_t;

/* One node of one section: persistence and the report state. */
typedef struct {
    char *key;                 /* "section\x1fnode\0node" */
    const char *node;
    uint32_t section;
    uint64_t bits;             /* bit 0: newest window, 1 = slow */
    uint32_t nbits;
    int active;                /* reported, not yet cleared */
    int hw;                    /* reported as the hardware (acted) */
    uint64_t mark;             /* the window that last judged it */
    int slow;                  /* slow in that window */
    long worst;                /* its slowest rank in that window */
    int pending;               /* a straggler whose report waits for its
                                * attribution's data (test kernels that
                                * cover hw_window) */
    int64_t pend_end;          /* ... the window that made it one */
    double pend_best;          /* ... that window's fastest median */
    double pend_ind_med;       /* ... its median individual score */
    int pend_slow;             /* ... slow windows of the last n */
} det_straggler_node_t;

/* One section name: its windows. */
typedef struct {
    char *name;
    int64_t end;               /* last step of the next window (INT64_MIN:
                                * not started) */
    uint64_t windows;          /* windows judged */
} det_straggler_sec_t;

typedef struct {
    det_straggler_rank_t *ranks;
    size_t nranks, capranks;
    det_straggler_node_t *nodes;
    size_t nnodes, capnodes;
    det_straggler_sec_t *secs;
    size_t nsecs, capsecs;
    det_map_t *rank_map, *node_map, *sec_map;
    det_map_t *pair_map;       /* this run's step series, by rank key */
    int64_t first_run_ns;      /* INT64_MIN until the first run */
    int64_t seen_ns;           /* newest section point seen (INT64_MIN) */
    int nodata_told;           /* the missing-sections warning was given */
    double *tmp;               /* scratch: medians */
    long *idx;                 /* scratch: ranks of a window */
    size_t captmp;
} det_straggler_state_t;

/* What the rules need to score a window: the ranks that took part (their
 * med set) and the window's last step. */
typedef struct {
    uint32_t section;
    int64_t end;
    const long *ranks;
    size_t n;
} det_straggler_window_t;

/* Scores window `w`, updates every node's persistence and appends events
 * (attributed with the input's kernel and health series).  Returns 0 or
 * TELEM_ENOMEM. */
int det_straggler_judge(det_straggler_state_t *st, const det_params_t *p,
                        const det_input_t *in,
                        const det_straggler_window_t *w, det_events_t *out);

/* Reports the stragglers whose report waited for their attribution's
 * data, where that data is there now (at every run: a job whose ranks
 * have stopped stepping judges no new window).  Returns 0 or
 * TELEM_ENOMEM. */
int det_straggler_pending(det_straggler_state_t *st, const det_params_t *p,
                          const det_input_t *in, det_events_t *out);

/* Median of x[0..n) (reorders x); NAN for n 0. */
double det_straggler_median(double *x, size_t n);

#endif
