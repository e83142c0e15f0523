/* det_gpu_health.h - the gpu-health detector's state and rules (internal
 * to detectors/).
 *
 * det_gpu_health.c keeps what is remembered of every series (its newest
 * point, the first value seen, a bit history) and of every condition (a
 * node, a device, what is wrong, whether it was reported), and turns the
 * input into calls of the rules; det_gpu_health_rules.c holds the rules,
 * the table of fatal XIDs and the sentences.  Split so each file stays
 * readable.
 */
#ifndef DET_GPU_HEALTH_H
#define DET_GPU_HEALTH_H

#include <stdint.h>

#include "det.h"
#include "det_map.h"

/* Parameter indices into det_gpu_health.params. */
enum {
    GH_XID, GH_ECC_UNCORRECTED, GH_REMAP_FAILURE, GH_RECOVERY, GH_LOST,
    GH_SILENT, GH_THROTTLE_K, GH_THROTTLE_N, GH_THROTTLE_REASONS,
    GH_ECC_CORRECTED_RATE, GH_REPLAY_RATE, GH_IB_ERRORS, GH_IB_FLAPS,
    GH_WINDOW, GH_NPARAMS
};

#define GH_FLAPS_MAX 16        /* state changes remembered per IB port */

/* One series: node, metric and tags, and what was seen of it. */
typedef struct {
    char *key;
    int64_t last_ts;           /* newest point taken (INT64_MIN: none) */
    double last_val;           /* its value */
    double base;               /* the first value seen */
    double reported;           /* highest value reported (growth rules) */
    uint64_t bits;             /* bit 0: newest point held (throttle) */
    uint32_t nbits;
    int64_t flaps[GH_FLAPS_MAX];   /* times its value changed (IB state) */
    uint32_t nflaps, flap_pos;
    int was_up;                /* an IB port seen up once */
    uint64_t seen_run;
} gh_track_t;

/* One condition: (node, device, what); reported once while it holds. */
typedef struct {
    char *key;
    uint64_t seen_run;         /* last run that judged it */
    uint64_t hold_run;         /* last run whose newest data held it */
    int active;
    int act;                   /* its severity was act */
    char *node, *device, *what;
} gh_alert_t;

/* A GPU's newest data against its node's (for silence). */
typedef struct {
    char *key;
    char *node, *gpu;
    int64_t newest;
} gh_gpu_t;

typedef struct {
    gh_track_t *tracks;
    size_t ntracks, captracks;
    det_map_t *track_map;
    gh_alert_t *alerts;
    size_t nalerts, capalerts;
    det_map_t *alert_map;
    gh_gpu_t *gpus;
    size_t ngpus, capgpus;
    det_map_t *gpu_map;
    uint64_t run;
} gh_state_t;

/* What a rule looks at: one series of the input, its node and device (the
 * gpu tag, or "device/port" for InfiniBand; "" for none), its track, and
 * the index of its first point not seen before (n: none new; the track's
 * last_val is the value just before it, NAN when there is none). */
typedef struct {
    const det_series_t *s;
    const char *node;
    const char *device;
    gh_track_t *t;
    size_t first_new;
    int64_t now_ns;
} gh_obs_t;

/* The alert (node, device, what), created if new; NULL when out of memory.
 * Marks it seen in this run. */
gh_alert_t *gh_alert(gh_state_t *st, const char *node, const char *device,
                     const char *what);

/* The alert (node, device, what) if it exists (not marked seen), else
 * NULL. */
gh_alert_t *gh_alert_find(gh_state_t *st, const char *node,
                          const char *device, const char *what);

/* The GPU (node, gpu), created with newest INT64_MIN if new; NULL when out
 * of memory. */
gh_gpu_t *gh_gpu(gh_state_t *st, const char *node, const char *gpu);

/* The track of series (node, metric, tags "k=v;k=v" without host) if
 * seen, else NULL. */
gh_track_t *gh_track_find(gh_state_t *st, const char *node,
                          const char *metric, const char *tags);

/* Judges one observation with the rule of its metric; appends events.
 * Returns 0 or TELEM_ENOMEM. */
int gh_rules_series(gh_state_t *st, const det_params_t *p,
                    const gh_obs_t *o, det_events_t *out);

/* The GPUs whose series stopped while their node's others went on. */
int gh_rules_silence(gh_state_t *st, const det_params_t *p,
                     const det_input_t *in, det_events_t *out);

/* Checks the xid and throttle_reasons parameters: 0, or TELEM_EINVAL
 * with a sentence. */
int gh_rules_check(const det_params_t *p, char *why, size_t why_size);

/* The meaning of an XID code ("" when the table lacks it) and whether the
 * xid parameter makes it fatal (1), fatal only with a failed row
 * remapping (2), or not (0). */
const char *gh_xid_meaning(unsigned code);
int gh_xid_fatal(const det_params_t *p, unsigned code);

/* The metrics the rules read (NULL-terminated). */
extern const char *const gh_metrics[];

#endif
