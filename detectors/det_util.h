/* det_util.h - helpers shared by the built-in detectors (internal).
 *
 * Leave-one-out median and MAD in O(n log n) for a whole round of devices,
 * tag lookup on a series, keys, a duration for sentences and a parameter
 * check.  No detector state lives here; every function works on what the
 * caller passes.  (The string map is det_map.h, the entity tables
 * det_ents.h.)
 */
#ifndef DET_UTIL_H
#define DET_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "det.h"

/* MAD -> sigma for normal data. */
#define DET_UTIL_MAD_SCALE 1.482602218505602

/* Reusable buffers for det_util_loo(); zero-initialise, free with
 * det_util_scratch_free(). */
typedef struct {
    double *sorted;
    double *dev[3];
    double dev_med[3];
    size_t *perm;
    size_t *rank;
    size_t cap;
} det_util_scratch_t;

void det_util_scratch_free(det_util_scratch_t *s);

/* Median of sorted[0..n) with element `skip` left out (skip >= n: none
 * left out).  NAN when nothing is left. */
double det_util_median_skip(const double *sorted, size_t n, size_t skip);

/* For each i in x[0..n): med[i] = median of the other n-1 values, mad[i] =
 * their median absolute deviation around med[i] (unscaled).  Exact, in
 * O(n log n): removing one value shifts the middle of the sorted array by
 * at most one place, so med[] takes at most three distinct values and each
 * needs one sorted array of deviations.  n < 2 gives NAN.  Returns 0 or
 * TELEM_ENOMEM. */
int det_util_loo(det_util_scratch_t *s, const double *x, size_t n, double *med,
                 double *mad);

/* Value of tag `key` on a series, or NULL. */
const char *det_util_tag(const det_series_t *s, const char *key);

/* A check for a string parameter that must be set: 0, or TELEM_EINVAL with
 * "NAME must not be empty" in why. */
int det_util_params_nonempty(const det_params_t *p, size_t i, const char *name,
                             char *why, size_t why_size);

/* Writes "a\x1fb\x1fc" (parts joined by the unit separator, which no name
 * holds) into buf.  Returns buf, or NULL if it does not fit. */
char *det_util_key(char *buf, size_t size, const char *a, const char *b,
                   const char *c);

/* Formats a duration in seconds for sentences: "850 ms", "12.5 s". */
void det_util_fmt_seconds(char *buf, size_t size, double s);

/* One decision about one node and, where `device` is not NULL, one device
 * of it (a GPU, a collector's device; "" for a per-node collector): the
 * shape of every event slowgpu and gpu-health make. */
typedef struct {
    const char *detector;
    det_severity_t severity;
    int64_t ts_ns;
    const char *node;
    const char *device;        /* NULL: the event names no device */
    double score;
    const det_evidence_t *evidence;
    size_t nevidence;
    const char *text;
} det_util_event_t;

/* Adds e to out (det_events_add() copies every string).  Returns 0 or a
 * negative code. */
int det_util_emit(det_events_t *out, const det_util_event_t *e);

#endif
