/* det_slowgpu.h - the slowgpu detector's state and its judging rules
 * (internal to detectors/).
 *
 * det_slowgpu.c turns series into rounds (the samples of one timestamp,
 * one per device) and keeps per-device state; det_slowgpu_rules.c judges
 * one round with the three rules (robust leave-one-out with persistence,
 * drift against the device's own history, Dragon's pooled z-score) and
 * writes the events.  Split so that each file stays readable.
 */
#ifndef DET_SLOWGPU_H
#define DET_SLOWGPU_H

#include <stdint.h>

#include "det.h"
#include "det_map.h"
#include "det_util.h"

#define SG_RING_MAX 64
#define SG_KEEP_ROUNDS 8       /* judged rounds kept for late samples */
#define SG_DRIFT_CLIP 3.0     /* largest CUSUM step, noise units */
#define SG_NOISE_DEVS 64      /* devices sampled for the noise floor */

/* Parameter indices into det_slowgpu.params. */
enum {
    SG_METRIC, SG_RULE, SG_EFFECT, SG_Z, SG_MAD_FLOOR, SG_K, SG_N,
    SG_DRIFT, SG_SLACK, SG_WARMUP, SG_DRAGON_Z, SG_DRAGON_SAMPLES,
    SG_WINDOW, SG_NOISE, SG_SETTLE, SG_LEARN, SG_NPARAMS
};

/* One device: node, device index (the gpu tag) and collector group. */
typedef struct {
    char *key;
    char *node;
    char *device;
    uint32_t group;
    int64_t last_ts;           /* newest round judged with it */
    uint64_t slow_bits;        /* bit 0: newest round, 1 = slow vs peers */
    uint32_t nbits;            /* rounds recorded in slow_bits (<= 64) */
    double ring[SG_RING_MAX];  /* newest values, for Dragon's rule */
    uint32_t nring, ring_pos;
    double warm[SG_RING_MAX];  /* first ratios to peers (drift) */
    double warm_s[SG_RING_MAX]; /* its own times in those rounds */
    uint32_t nwarm;
    double base, sigma;        /* their median and scaled MAD, once set */
    double base_s;             /* median of warm_s, once set */
    double cusum;              /* in units of sigma */
    double ratio;              /* last ratio to peers, for status */
    double lr[SG_RING_MAX];    /* newest changes of the log ratio */
    double last_lr;            /* the log ratio of the last round (NAN) */
    uint32_t nlr, lr_pos;
    uint64_t seen_run;         /* last run whose data held it */
    int peer_active, drift_active, dragon_active;
    uint64_t rounds;           /* rounds it has been in, start-up included */
} det_slowgpu_dev_t;

/* 1 once d is past its first `settle` rounds (its start-up). */
int det_slowgpu_settled(const det_slowgpu_dev_t *d, const det_params_t *p);

/* A round being judged: nall devices of one group at one timestamp, the
 * first n of them settled (past their start-up rounds), and only those
 * compared by the robust rule, each with `peers` others (n - 1; for a
 * late sample, the round's n). */
typedef struct {
    int64_t ts;
    size_t n;
    size_t nall;
    size_t peers;
    int late;                  /* judged against a stored round */
    uint32_t *dev;             /* device indices */
    double *x;                 /* their values */
    double *med, *mad;         /* leave-one-out peer median, MAD (scaled) */
    double *tmp;               /* scratch for the rules */
    double noise;              /* the group's wander, relative; 0: none */
} det_slowgpu_round_t;

/* One sample waiting to be judged. */
typedef struct {
    int64_t ts;
    uint32_t group;
    uint32_t dev;
    double val;
} det_slowgpu_ent_t;

/* A judged round, kept so a device whose sample arrives after the round
 * was judged is still compared with that round's devices. */
typedef struct {
    int64_t ts;
    uint32_t group;
    size_t n;
    double med, mad;           /* of all its devices; mad scaled */
} det_slowgpu_kept_t;

typedef struct {
    det_slowgpu_dev_t *devs;
    size_t ndevs, capdevs;
    det_map_t *map;            /* key -> index in devs */
    det_map_t *groups;         /* group tag value -> group id */
    uint32_t ngroups;
    int64_t last_ts;           /* newest round judged (INT64_MIN: none) */
    uint64_t rounds;           /* rounds judged */
    uint64_t run;              /* runs so far */
    det_slowgpu_ent_t *ents;
    size_t nents, capents;
    det_util_scratch_t scratch;
    det_slowgpu_round_t round;
    size_t round_cap;
    det_slowgpu_kept_t kept[SG_KEEP_ROUNDS];
    size_t nkept, kept_pos;
} det_slowgpu_state_t;

/* Judges round `r` (already holding LOO statistics) with the rules that
 * parameter `rule` selects, updating device state and appending events.
 * Returns 0 or TELEM_ENOMEM. */
int det_slowgpu_judge(det_slowgpu_state_t *st, const det_params_t *p,
                      det_slowgpu_round_t *r, det_events_t *out);

#endif
